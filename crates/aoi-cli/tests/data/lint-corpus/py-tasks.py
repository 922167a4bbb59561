#!/usr/bin/env python3
"""py-tasks: a small task tracker with an AOI-CLI v1.0-alpha machine mode.

Human mode (plain text) is the default. `--output jsonl` (or `--format jsonl`), before or after the command,
selects machine mode: stdout is only UTF-8 JSONL events, aoi:meta first, aoi:summary last, every line with
aoi.seq (0.., no gaps) and aoi.run (a ULID). Discovery commands print one JSON document (`--output json`).
Nothing prompts; --verbose adds diagnostics on stderr only.

  create TITLE [--due DATE] [--tag TAG]... [--dry-run] [--idempotency-key KEY]
      py-tasks create "Write report" --due 2026-08-01 --tag work --output jsonl
  show ID                         py-tasks show t-0001 --output jsonl
  list [--status open|done] [--limit N (default 20)] [--cursor C]
      py-tasks list --status open --limit 2 --output jsonl
  done ID...                      py-tasks done t-0001 t-0002 --output jsonl
  purge [--status done|open (default done)] [--older-than DAYS] (--confirm [--confirm-count N] | --dry-run)
      py-tasks purge --confirm --confirm-count 1 --output jsonl
  tail [--continue-on-error]      py-tasks list --output jsonl | py-tasks tail --output jsonl
  schema [--schema-version 1]     py-tasks schema --output json
  capabilities                    py-tasks capabilities --output json
  input-schema [--command tail]   py-tasks input-schema --command tail --output json

Seed a store with three tasks (one of them done):
  export XDG_DATA_HOME=/tmp/py-tasks-demo
  py-tasks create "Write report" --due 2026-08-01 --tag work
  py-tasks create "Buy milk" --tag home --tag errand
  py-tasks create "Book dentist" --due 2026-09-15
  py-tasks done t-0002

Store: $XDG_DATA_HOME/py-tasks/tasks.json (else ~/.local/share/...), replaced atomically under a lock; reads
never create it. Events: see `schema` (com.example.py-tasks.events 1.0.0). Within a schema major, event types
and fields are only added, never renamed, removed or retyped; consumers ignore unknown fields and unknown
unprefixed types. create --idempotency-key replays the prior `created` (replayed:true) for the same input,
else conflict. done is idempotent by id. purge deletes nothing without --confirm, or when --confirm-count
differs from the number matched (done_at/created_at older than DAYS).

tail is finite: it reads AOI JSONL on stdin to EOF, wraps upstream domain events as upstream_event and ends
with its own aoi:summary. Upstream aoi:meta/aoi:summary are not forwarded; aoi:error/aoi:warning are, with
`origin`; aoi:plan/check/progress/heartbeat are dropped; other aoi:* types fail the run. Malformed lines fail
fast; with --continue-on-error they are item errors (the run still fails) and upstream failures are data.
Otherwise an upstream error or ok:false fails the run, with caused_by from the most severe upstream error.
EOF without an upstream aoi:summary, an unterminated last line or an aoi.seq/event_count gap is an io error.

Exit: 0 ok; 64 usage/unsupported; 65 validation, not_found, conflict, precondition_failed; 69 unavailable;
70 internal; 73/74 io; 75 rate_limited, timeout, store locked; 77 authn/authz; 78 config; 130 SIGINT;
143 SIGTERM; 141 closed stdout; tail failing on upstream errors uses caused_by's category code, else 1.
A signal ends the run with reason "cancelled" unless a mutation was committed (it then completes); a second
one kills. In machine mode --help/--version print to stderr; the stream is aoi:meta + aoi:summary
{ok:true, reason:"skipped"}.
"""
import argparse, base64, datetime as dt, fcntl, hashlib, json, os, re, secrets, signal, sys, tempfile, time
import traceback

TOOL, TOOL_VERSION, AOI_VERSION = "py-tasks", "1.0.0", "1.0-alpha"
SCHEMA_NAME, SCHEMA_VERSION = "com.example.py-tasks.events", "1.0.0"
SCHEMA_BASE = "https://schemas.example.com/py-tasks"
DEFAULT_LIMIT = 20
ID_RE, CODE_RE = re.compile(r"^t-[0-9]{4,}$"), re.compile(r"^[A-Z][A-Z0-9_]*$")
CATEGORIES = ("usage", "validation", "config", "authn", "authz", "not_found", "conflict", "precondition_failed",
              "unsupported", "rate_limited", "unavailable", "timeout", "cancelled", "io", "internal")
EXIT = {"usage": 64, "unsupported": 64, "validation": 65, "not_found": 65, "conflict": 65,
        "precondition_failed": 65, "unavailable": 69, "internal": 70, "io": 74, "rate_limited": 75,
        "timeout": 75, "authn": 77, "authz": 77, "config": 78, "cancelled": 130}
STREAM_CMDS = ("create", "show", "list", "done", "purge", "tail")
DISCOVERY_CMDS = ("schema", "capabilities", "input-schema")
SIG = {"pending": None, "interruptible": False, "committed": False}

class Cancelled(BaseException):  # args[0]: the signal number
    pass

class Fail(Exception):  # a typed failure: one aoi:error, then a failing aoi:summary
    def __init__(self, category, code, message, exit_code=None, reason="failed", **fields):
        super().__init__(message)
        self.category, self.code, self.message, self.reason = category, code, message, reason
        self.exit_code, self.fields = exit_code or EXIT.get(category, 1), fields

class UsageError(Exception):  # args: (parser, message)
    pass

class InfoExit(Exception):  # --help / --version were handled
    pass

def on_signal(signum, _frame):
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second signal kills at once
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    SIG["pending"] = signum
    if SIG["interruptible"]:
        raise Cancelled(signum)

def checkpoint():
    """Safe cancellation point; once a mutation is committed the run completes."""
    if SIG["pending"] and not SIG["committed"]:
        raise Cancelled(SIG["pending"])

def ulid():
    n = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    return "".join("0123456789ABCDEFGHJKMNPQRSTVWXYZ"[(n >> (5 * i)) & 31] for i in range(25, -1, -1))

def one_line(text):
    return " ".join(str(text).split())

def is_text(value):  # non-empty, single line, valid Unicode (argv bytes that are not UTF-8 are refused)
    return bool(value) and not any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in value)

def now_iso():
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

class Run:
    """One invocation: owns the event stream (machine mode) or plain output (human mode)."""
    def __init__(self, machine, command, verbose=False):
        self.machine, self.command, self.verbose, self.props, self.tally = machine, command, verbose, None, None
        self.run, self.seq, self.count, self.errors = ulid(), 0, 0, 0
        self.t0, self.started, self.finished = time.monotonic(), False, False
    def debug(self, msg):
        if self.verbose:
            sys.stderr.write(f"{TOOL}: verbose: {one_line(msg)}\n")
    def _write(self, type_, fields):
        obj = {"type": type_, "aoi": {"seq": self.seq, "run": self.run}, **fields}
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
        sys.stdout.buffer.write(line.encode("utf-8", "backslashreplace"))  # stray surrogates become \u escapes
        sys.stdout.buffer.flush()
        self.seq += 1
    @staticmethod
    def identity():
        return {"tool": TOOL, "tool_version": TOOL_VERSION, "aoi_version": AOI_VERSION,
                "schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION}
    def start(self, check=True):
        if not self.started:
            self.started = True
            self.debug(f"run {self.run} command={self.command or '-'}")
            if self.machine:
                self._write("aoi:meta", {**self.identity(), **({"command": self.command} if self.command else {}),
                                         **({"properties": self.props} if self.props else {})})
        if check:
            checkpoint()
    def emit(self, type_, fields=None, check=True, **kw):
        self.start(check=False)
        if self.machine:
            self._write(type_, {**(fields or {}), **kw})
        self.count += not type_.startswith("aoi:")  # `count` is domain events only
        if check:
            checkpoint()
    def say(self, text=""):
        if not self.machine:
            print(text)
    def error(self, category, code, message, retryable=None, **fields):
        self.errors += 1
        retryable = category in ("rate_limited", "unavailable", "timeout") if retryable is None else retryable
        if not retryable:
            fields.pop("retry_after_ms", None)
        if self.machine:
            self.emit("aoi:error", {"category": category, "code": code, "message": one_line(message),
                                    "retryable": retryable, **fields}, check=False)
        else:
            sys.stderr.write(f"{TOOL}: error: {one_line(message)} [{category}/{code}]\n")
            if fields.get("hint"):
                sys.stderr.write(f"{TOOL}: hint: {fields['hint']}\n")
    def summary(self, ok, reason=None, **extra):
        done, self.finished = self.finished, True
        if done or not self.machine:
            return
        self.start(check=False)
        s = {"ok": ok, **({"reason": reason} if reason else {}), "count": self.count, "warning_count": 0,
             "error_count": self.errors, "truncated": False, **(self.tally() if self.tally else {}), **extra}
        s.setdefault("partial", s["count"] > 0 and s["error_count"] > 0)
        s.update(event_count=self.seq + 1, elapsed_ms=int((time.monotonic() - self.t0) * 1000), **self.identity())
        self._write("aoi:summary", s)

def store_path():
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "py-tasks", "tasks.json")

def load(path, run):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        run.debug(f"store {path} does not exist (reads do not create it)")
        return {"version": 1, "next_id": 1, "tasks": [], "idempotency": {}}
    except (ValueError, UnicodeDecodeError) as e:
        raise Fail("precondition_failed", "STORE_CORRUPT", f"task store is not valid JSON: {e}", target=path)
    except OSError as e:
        raise Fail("io", "STORE_READ_FAILED", f"cannot read task store: {e.strerror}", target=path)
    if not (isinstance(data, dict) and isinstance(data.get("tasks"), list) and isinstance(data.get("next_id"), int)
            and all(isinstance(t, dict) and ID_RE.match(str(t.get("id"))) and t.get("status") in ("open", "done")
                    for t in data["tasks"])):
        raise Fail("precondition_failed", "STORE_CORRUPT", "task store has an unexpected shape", target=path)
    data.setdefault("idempotency", {})
    run.debug(f"loaded {len(data['tasks'])} task(s) from {path}")
    return data

def save(path, data, run):
    """Commit atomically (temp file + rename). From here on a signal no longer cancels the run."""
    checkpoint()
    SIG["committed"], tmp = True, None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tasks.", suffix=".tmp", dir=os.path.dirname(path))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        run.debug(f"wrote {path} atomically")
    except OSError as e:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        raise Fail("io", "STORE_WRITE_FAILED", f"cannot write task store: {e.strerror}", 73, target=path)

def transact(run, change, create=False):
    """Fresh read under an exclusive lock; commit if change(data) is true. Only `create` makes a new store."""
    path = store_path()
    if not create and not os.path.exists(path):
        return change(load(path, run))
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise Fail("io", "STORE_WRITE_FAILED", f"cannot prepare task store: {e.strerror}", 73, target=path)
    try:
        for _ in range(100):  # wait up to ~5 s for a concurrent writer
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                checkpoint()
                time.sleep(0.05)
        else:
            raise Fail("unavailable", "STORE_LOCKED", "task store is locked by another process; nothing was "
                       "changed", 75, retryable=True, retry_after_ms=1000, target=path)
        data = load(path, run)
        if change(data):
            save(path, data, run)
    finally:
        os.close(fd)

def task_num(t):
    return int(t["id"][2:])

def find(data, tid):
    return next((t for t in data["tasks"] if t["id"] == tid), None)

def cmd_create(a, run):
    title, due, tags = a.title.strip(), None, list(dict.fromkeys(a.tag or []))
    key = None if a.idempotency_key is None else "sha256:" + hashlib.sha256(a.idempotency_key.encode()).hexdigest()
    if not is_text(title):
        raise Fail("validation", "INVALID_TITLE", "title must be non-empty single-line text", field="title")
    if a.due is not None:
        try:
            due = dt.date.fromisoformat(a.due).isoformat()
        except ValueError:
            raise Fail("validation", "INVALID_DATE", f"--due '{a.due}' is not a date (YYYY-MM-DD)", field="due")
    if not all(map(is_text, tags)):
        raise Fail("validation", "INVALID_TAG", "tags must be non-empty single-line text", field="tag")
    spec = {"title": title, "due": due, "tags": tags}
    fingerprint, out = json.dumps(spec, sort_keys=True), {}
    run.start()
    def prior(data):
        rec = data["idempotency"].get(key) if key else None
        if rec and rec.get("fingerprint") != fingerprint:
            raise Fail("conflict", "IDEMPOTENCY_KEY_REUSED", "this --idempotency-key was already used with "
                       "different input", field="idempotency_key")
        return rec
    if a.dry_run:
        rec = prior(load(store_path(), run))
        plan = {"action": "replay", "target": rec["task"]["id"]} if rec else {"action": "create", "task": spec}
        run.emit("aoi:plan", properties=plan)
        run.say(f"Would replay {rec['task']['id']}" if rec else f"Would create: {title}" + (f" (due {due})" if due
                else "") + (f" [{', '.join(tags)}]" if tags else ""))
        run.summary(True, properties={"dry_run": True})
        return 0
    def change(data):
        rec = prior(data)
        if rec:
            out.update(task=rec["task"], replayed=True)
            return False
        task = {"id": f"t-{data['next_id']:04d}", **spec, "status": "open", "created_at": now_iso(), "done_at": None}
        data["next_id"] += 1
        data["tasks"].append(task)
        if key:
            data["idempotency"][key] = {"fingerprint": fingerprint, "task": dict(task)}
        out.update(task=task, replayed=False)
        return True
    transact(run, change, create=True)
    run.emit("created", {**out["task"], "replayed": out["replayed"]})
    run.say(f"{'Already created' if out['replayed'] else 'Created'} {out['task']['id']}: {title}")
    run.summary(True)
    return 0

def cmd_show(a, run):
    if not ID_RE.match(a.id):
        raise Fail("validation", "INVALID_ID", f"'{a.id}' is not a task id (t-NNNN)", field="id", target=a.id)
    run.start()
    task = find(load(store_path(), run), a.id)
    if task is None:
        raise Fail("not_found", "TASK_NOT_FOUND", f"no task {a.id}", target=a.id)
    run.emit("entry", task)
    for key in ("id", "title", "status", "due", "tags", "created_at", "done_at"):
        run.say(f"{key + ':':12}{(', '.join(task[key]) if key == 'tags' else task.get(key)) or '-'}")
    run.summary(True)
    return 0

def encode_cursor(after, status):
    raw = json.dumps({"v": 1, "after": after, "status": status}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

def decode_cursor(token, status):
    try:
        c = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        assert isinstance(c, dict) and c.get("v") == 1 and type(c.get("after")) is int and c.get("status") == status
        return c["after"]
    except Exception:
        raise Fail("validation", "INVALID_CURSOR", "--cursor was not issued by list with this --status", field="cursor")

def cmd_list(a, run):
    after = decode_cursor(a.cursor, a.status) if a.cursor is not None else 0
    run.start()
    tasks = sorted(load(store_path(), run)["tasks"], key=task_num)
    matching = [t for t in tasks if task_num(t) > after and a.status in (None, t["status"])]
    page, more = matching[:a.limit], len(matching) > a.limit
    for t in page:
        run.emit("entry", t)
    next_cursor = encode_cursor(task_num(page[-1]), a.status) if more else None
    if not run.machine:
        rows = [("ID", "STATUS", "DUE", "TITLE", "TAGS")] + [
            (t["id"], t["status"], t.get("due") or "-", t["title"], ",".join(t["tags"]) or "-") for t in page]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows if page else [("No tasks.",)]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if more:
            print(f"(more: --cursor {next_cursor})")
    run.summary(True, truncated=more, next_cursor=next_cursor)
    return 0

def cmd_done(a, run):
    run.start()
    results = []
    def change(data):
        for tid in a.ids:
            task = find(data, tid) if ID_RE.match(tid) else None
            did = task is not None and task["status"] != "done"
            if did:
                task["status"], task["done_at"] = "done", now_iso()
            results.append((tid, task, did))
        return any(did for _, _, did in results)
    transact(run, change)
    for index, (tid, task, did) in enumerate(results):
        if task is not None:
            run.emit("completed", id=tid, status="done", changed=did, done_at=task["done_at"])
            run.say(f"{tid} {'marked done' if did else 'already done'}")
        elif not ID_RE.match(tid):
            run.error("validation", "INVALID_ID", f"'{tid}' is not a task id (t-NNNN)", scope="item",
                      item_index=index, target=tid, field="ids")
        else:
            run.error("not_found", "TASK_NOT_FOUND", f"no task {tid}", scope="item", item_index=index, target=tid)
    run.summary(run.errors == 0, "failed" if run.errors else None)
    return 65 if run.errors else 0

def purge_matches(data, a):
    cutoff = None if a.older_than is None else (dt.datetime.now(dt.timezone.utc) - dt.timedelta(
        days=a.older_than)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [t for t in sorted(data["tasks"], key=task_num) if t["status"] == a.status
            and (cutoff is None or (t.get("done_at") or t["created_at"]) < cutoff)]

def cmd_purge(a, run):
    run.start()
    matches = purge_matches(load(store_path(), run), a)
    run.debug(f"{len(matches)} task(s) match status={a.status} older_than={a.older_than}")
    if a.dry_run:
        for t in matches:
            run.emit("aoi:plan", properties={"action": "delete", "target": t["id"], "title": t["title"]})
            run.say(f"Would delete {t['id']}  {t['title']}")
        run.say(f"{len(matches)} task(s) would be deleted.")
        run.summary(True, properties={"dry_run": True, "matched": len(matches)})
        return 0
    if not a.confirm:
        raise Fail("usage", "CONFIRMATION_REQUIRED", f"purge would delete {len(matches)} task(s) and needs "
                   "--confirm; nothing was deleted", reason="denied",
                   hint=f"preview with --dry-run, then add --confirm --confirm-count {len(matches)}")
    def change(data):
        matches[:] = purge_matches(data, a)  # re-evaluated under the lock
        if a.confirm_count is not None and a.confirm_count != len(matches):
            raise Fail("conflict", "CONFIRM_COUNT_MISMATCH", f"--confirm-count {a.confirm_count} but "
                       f"{len(matches)} task(s) match; nothing was deleted", reason="denied",
                       details={"expected": a.confirm_count, "actual": len(matches)})
        gone = {t["id"] for t in matches}
        data["tasks"] = [t for t in data["tasks"] if t["id"] not in gone]
        return bool(gone)
    transact(run, change)
    for t in matches:
        run.emit("deleted", id=t["id"], title=t["title"], status=t["status"])
        run.say(f"Deleted {t['id']}  {t['title']}")
    run.say(f"{len(matches)} task(s) deleted.")
    run.summary(True)
    return 0

def forward(ev, origin, is_error):
    """An upstream aoi:error/aoi:warning tagged with `origin` (an existing one is kept: it names the tool
    that raised it), and for errors made valid against our schema."""
    e = {k: v for k, v in ev.items() if k not in ("type", "aoi")}
    e["origin"] = e["origin"] if isinstance(e.get("origin"), str) else origin
    if not is_error:
        return e
    if e.get("category") not in CATEGORIES:  # an unknown category is routed as internal (AOI 9.4)
        details = e["details"] if isinstance(e.get("details"), dict) else {}
        e["details"], e["category"] = {**details, "upstream_category": e.get("category")}, "internal"
    e["code"] = e["code"] if CODE_RE.match(str(e.get("code"))) else "UPSTREAM_ERROR"
    e["message"] = one_line(e.get("message") or "upstream error")
    e["retryable"] = e.get("retryable") is True  # undeterminable -> not retryable
    if not e["retryable"] or type(e.get("retry_after_ms")) is not int or e["retry_after_ms"] < 0:
        e.pop("retry_after_ms", None)
    return e

def cmd_tail(a, run):
    if run.machine and sys.stdin.isatty():
        raise Fail("usage", "STDIN_IS_TERMINAL", "tail reads AOI JSONL on stdin, which is a terminal; machine "
                   "mode does not wait for typed input", hint="some-tool --output jsonl | py-tasks tail --output jsonl")
    st = {"meta": {}, "summary": None, "line": 0, "events": 0, "expect": 0, "inputs": 0, "up_errors": [],
          "warnings": 0, "exit": None, "lost": False}
    def tally():
        up = {k: v for k, v in st["meta"].items()
              if k in ("tool", "tool_version", "schema_name", "schema_version") and isinstance(v, str)}
        return {"input_count": st["inputs"], "error_count": run.errors + len(st["up_errors"]),
                "warning_count": st["warnings"], **({"upstream": up} if up else {})}
    def local(category, code, message, exit_code, scope="item", line=True):
        run.error(category, code, message, scope=scope, **({"line_number": st["line"]} if line else {}))
        st["exit"] = st["exit"] or exit_code
    def lost(message):
        if not st["lost"]:
            st["lost"] = True
            local("io", "UPSTREAM_EVENTS_LOST", message, 74)
    run.tally = tally
    run.start()
    while True:
        SIG["interruptible"] = True
        try:
            checkpoint()
            raw = sys.stdin.buffer.readline()
        finally:
            SIG["interruptible"] = False
        if not raw:
            break
        st["line"] = n = st["line"] + 1
        if not raw.endswith(b"\n"):
            local("io", "UPSTREAM_TRUNCATED", f"input line {n} has no line terminator: the stream is truncated", 74,
                  "process")
            break
        if not raw.strip():
            continue
        try:
            ev = json.loads(raw.decode("utf-8"))
            if not isinstance(ev, dict) or not isinstance(ev.get("type"), str) or not ev["type"]:
                raise ValueError("not a JSON object with a string 'type'")
        except (ValueError, UnicodeDecodeError) as e:
            local("validation", "INPUT_JSONL_PARSE_ERROR", f"invalid AOI event on input line {n}: {e}", 65,
                  "item" if a.continue_on_error else "process")
            if a.continue_on_error:
                continue
            break
        st["events"] += 1
        kind, env = ev["type"], ev["aoi"] if isinstance(ev.get("aoi"), dict) else {}
        if type(env.get("seq")) is int:
            if env["seq"] != st["expect"]:
                lost(f"upstream aoi.seq jumps from {st['expect']} to {env['seq']} at input line {n}")
            st["expect"] = env["seq"] + 1
        if st["summary"] is not None:
            local("validation", "UPSTREAM_PROTOCOL_VIOLATION", f"input line {n} follows the upstream aoi:summary", 65)
            if not a.continue_on_error:
                break
        if kind == "aoi:meta" and st["events"] != 1:
            local("validation", "UPSTREAM_PROTOCOL_VIOLATION", f"upstream aoi:meta on line {n} is not first", 65)
        elif kind == "aoi:meta":
            st["meta"] = ev
            if str(ev.get("aoi_version", "1")).split("-")[0].split(".")[0] != "1":
                raise Fail("unsupported", "UPSTREAM_AOI_VERSION", f"upstream aoi_version {ev.get('aoi_version')} "
                           "is not major 1", 65)
            run.debug(f"upstream is {ev.get('tool')} {ev.get('tool_version')}")
        elif kind == "aoi:summary":
            st["summary"] = ev
            if type(ev.get("event_count")) is int and ev["event_count"] != st["events"]:
                lost(f"upstream event_count is {ev['event_count']} but {st['events']} event(s) arrived")
        elif kind in ("aoi:error", "aoi:warning"):
            e = forward(ev, st["meta"].get("tool") or ev.get("domain") or "unknown", kind == "aoi:error")
            if kind == "aoi:error":
                st["up_errors"].append(e)
            else:
                st["warnings"] += 1
            run.emit(kind, e)
            if not run.machine:
                sys.stderr.write(f"{TOOL}: upstream {kind[4:]} from {e['origin']}: {one_line(e.get('message', ''))}\n")
        elif kind in ("aoi:plan", "aoi:check", "aoi:progress", "aoi:heartbeat"):
            run.debug(f"not relaying upstream {kind} (line {n})")
        elif kind.startswith("aoi:"):
            local("unsupported", "UNKNOWN_FRAMEWORK_EVENT", f"upstream event type {kind} (line {n}) is unknown", 65)
        else:
            st["inputs"] += 1
            run.emit("upstream_event", line_number=n, event=ev)
            run.say(f"{kind}: " + json.dumps({k: v for k, v in ev.items() if k not in ("type", "aoi")},
                                             ensure_ascii=False))
    if st["exit"] is None and st["summary"] is None:
        local("io", "UPSTREAM_TRUNCATED", "input ended without an upstream aoi:summary", 74, "process", line=False)
    up, tolerate = st["summary"], a.continue_on_error
    up_ok = up is not None and up.get("ok") is True
    up_failed = not tolerate and (bool(st["up_errors"]) or (up is not None and not up_ok))
    ok, extra, code = st["exit"] is None and not up_failed, {}, st["exit"] or (1 if up_failed else 0)
    if up is not None and not up_ok:
        extra["properties"] = {"upstream_ok": up.get("ok"), "upstream_reason": up.get("reason")}
    if st["up_errors"] and not tolerate:  # most severe: process scope, then non-retryable, then longest wait
        worst = max(st["up_errors"], key=lambda e: (e.get("scope", "process") == "process", not e["retryable"],
                                                    e.get("retry_after_ms", 0)))
        extra["caused_by"] = {k: worst[k] for k in ("origin", "category", "code", "retryable", "retry_after_ms")
                              if k in worst}
        code = st["exit"] or EXIT.get(worst["category"], 1)
    run.say(f"tail: relayed {st['inputs']} event(s) from {st['meta'].get('tool') or 'upstream'}; "
            f"upstream {'ok' if up_ok else 'failed or incomplete'}")
    run.summary(ok, None if ok else "failed", **extra)
    return code

TASK = {"id": {"type": "string", "pattern": "^t-[0-9]{4,}$"}, "title": {"type": "string", "minLength": 1},
        "status": {"enum": ["open", "done"]}, "due": {"type": ["string", "null"], "format": "date"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "created_at": {"type": "string", "format": "date-time"},
        "done_at": {"type": ["string", "null"], "format": "date-time"}}

def event_schema():
    def ev(required, props, **kw):
        return {"type": "object", "required": ["type", "aoi", *required], "properties": props, **kw}
    ident = {k: {"type": "string"} for k in Run.identity()}
    n, s, b, obj = {"type": "integer", "minimum": 0}, {"type": "string"}, {"type": "boolean"}, {"type": "object"}
    defs = {
        "envelope": {"type": "object", "required": ["seq", "run"], "properties": {"seq": n, "run": s, "t": n}},
        "aoi_meta": ev(list(ident), {**ident, "command": s, "properties": obj}),
        "aoi_summary": ev(["ok", "event_count", *ident], {
            **ident, "ok": b, "reason": {"enum": ["failed", "cancelled", "timeout", "denied", "skipped"]},
            "count": n, "input_count": n, "warning_count": n, "error_count": n, "elapsed_ms": n,
            "event_count": {"type": "integer", "minimum": 1}, "partial": b, "truncated": b,
            "next_cursor": {"type": ["string", "null"]}, "properties": obj,
            "caused_by": {"type": "object", "required": ["origin", "category", "code", "retryable"]},
            "upstream": {"type": "object", "properties": {k: s for k in ident if k != "aoi_version"}}},
            allOf=[{"if": {"properties": {"ok": {"const": False}}, "required": ["ok"]}, "then": {"required": ["reason"],
                    "properties": {"reason": {"enum": ["failed", "cancelled", "timeout", "denied"]}}}}]),
        "aoi_error": ev(["category", "code", "message", "retryable"], {
            "category": {"enum": list(CATEGORIES)}, "code": {"type": "string", "pattern": CODE_RE.pattern},
            "message": s, "retryable": b, "retry_after_ms": n, "scope": {"enum": ["process", "item"]},
            "domain": s, "origin": s, "target": s, "field": s, "item_index": n, "line_number": n, "hint": s,
            "details": obj},
            allOf=[{"if": {"properties": {"retryable": {"const": False}}, "required": ["retryable"]},
                    "then": {"not": {"required": ["retry_after_ms"]}}}]),
        "aoi_warning": ev([], {"code": s, "message": s, "origin": s}),
        "aoi_plan": ev(["properties"], {"properties": {"type": "object", "required": ["action"], "properties": {
            "action": {"enum": ["create", "replay", "delete"]}, "target": s, "title": s, "task": obj}}}),
        "entry": ev(list(TASK), TASK),
        "created": ev([*TASK, "replayed"], {**TASK, "replayed": b}),
        "completed": ev(["id", "status", "changed"], {**TASK, "status": {"const": "done"}, "changed": b}),
        "deleted": ev(["id"], TASK),
        "upstream_event": ev(["line_number", "event"], {"line_number": {"type": "integer", "minimum": 1},
                                                        "event": {"type": "object", "required": ["type"]}}),
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA_BASE}/events/{SCHEMA_VERSION}/schema.json", "title": f"{SCHEMA_NAME} {SCHEMA_VERSION}",
            "description": f"One JSONL event emitted by {TOOL} in machine mode (AOI {AOI_VERSION}). Discriminated "
                           "by `type`; unknown fields are allowed for forward compatibility.",
            "type": "object", "required": ["type", "aoi"],
            "properties": {"type": {"type": "string", "minLength": 1}, "aoi": {"$ref": "#/$defs/envelope"}},
            "allOf": [{"if": {"properties": {"type": {"const": d.replace("aoi_", "aoi:")}}, "required": ["type"]},
                       "then": {"$ref": f"#/$defs/{d}"}} for d in defs if d != "envelope"],
            "$defs": defs}

def input_schema():
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA_BASE}/input/tail/{SCHEMA_VERSION}/schema.json", "title": f"{TOOL} tail input line",
            "description": "One line of AOI JSONL read by `tail` on stdin. Unknown fields are allowed: upstream "
                           "domain schemas belong to the upstream tool.",
            "type": "object", "required": ["type"],
            "properties": {"type": {"type": "string", "minLength": 1}, "aoi": {"type": "object", "properties": {
                "seq": {"type": "integer", "minimum": 0}, "run": {"type": "string"}}}}}

def capabilities():
    def cmd(name, events, **kw):
        return {"name": name, "read_only": True, "destructive": False, "input_modes": ["argv"],
                "event_types": ["aoi:meta", *events, "aoi:error", "aoi:summary"], **kw}
    return {
        "tool": TOOL, "tool_version": TOOL_VERSION, "aoi_versions": [AOI_VERSION], "outputs": ["jsonl"],
        "schemas": [{"name": SCHEMA_NAME, "versions": [SCHEMA_VERSION], "default": SCHEMA_VERSION}],
        "auth": {"required": False},
        "commands": [
            cmd("create", ["created", "aoi:plan"], read_only=False, supports_dry_run=True,
                supports_idempotency_key=True),
            cmd("show", ["entry"]),
            cmd("list", ["entry"], bounded=True, default_limit=DEFAULT_LIMIT, supports_cursor=True),
            cmd("done", ["completed"], read_only=False, idempotent=True),
            cmd("purge", ["deleted", "aoi:plan"], read_only=False, destructive=True, requires_confirm=True,
                supports_confirm_count=True, supports_dry_run=True),
            cmd("tail", ["upstream_event", "aoi:warning"], input_modes=["jsonl"], malformed_input="configurable",
                malformed_input_default="fail-fast"),
            *({"name": c, "read_only": True, "destructive": False, "output": "json"} for c in DISCOVERY_CMDS)]}

def check_schema_version(a):
    if a.schema_version not in (None, "1", "1.0", "1.0.0"):
        raise Fail("unsupported", "SCHEMA_VERSION_UNSUPPORTED",
                   f"schema version {a.schema_version} is not supported; this build speaks {SCHEMA_VERSION}")

def cmd_discovery(a, run):
    doc = {"schema": event_schema, "capabilities": capabilities, "input-schema": input_schema}[a.command]()
    if a.output == "text":
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        sys.stdout.buffer.write((json.dumps(doc, separators=(",", ":")) + "\n").encode())
    run.finished = True
    return 0

class Parser(argparse.ArgumentParser):
    machine = False
    def error(self, message):
        # §11: an argument this tool does not know may carry a secret (`--api-key=...`), so a
        # usage error names the unknown flags and never repeats a value.
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            words = message[len(prefix):].split()
            flags = [w.split("=", 1)[0] for w in words if w.startswith("-")]
            values = len(words) - len(flags) + sum("=" in w for w in words if w.startswith("-"))
            message = prefix + " ".join(flags) + (f" (and {values} value(s), not repeated)" if values else "")
        raise UsageError(self, message)
    def exit(self, status=0, message=None):
        raise InfoExit()
    def _print_message(self, message, file=None):
        if message:  # help/version text never reaches stdout in machine mode
            (sys.stderr if Parser.machine else (file or sys.stderr)).write(message)

def int_at_least(low):
    def parse(text):
        if not text.isdigit() or int(text) < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got '{text}'")
        return int(text)
    return parse

def common(p, top):
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument("--output", "--format", dest="output", choices=["text", "json", "jsonl"], default=d("text"),
                   help="jsonl = AOI machine mode; json for discovery commands")
    p.add_argument("--schema-version", default=d(None), metavar="V", help=f"event schema (only {SCHEMA_VERSION})")
    p.add_argument("--verbose", action="store_true", default=d(False), help="diagnostics on stderr")
    p.add_argument("--no-color", action="store_true", default=d(False), help="accepted; output is never colored")

def build_parser():
    p = Parser(prog=TOOL, description=__doc__, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"{TOOL} {TOOL_VERSION}")
    common(p, True)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    def add(name, help_):
        s = sub.add_parser(name, help=help_, description=help_, allow_abbrev=False)
        common(s, False)
        return s
    s = add("create", "create a task (mutation)")
    s.add_argument("title")
    s.add_argument("--due", metavar="DATE", help="YYYY-MM-DD")
    s.add_argument("--tag", action="append", metavar="TAG", help="repeatable")
    s.add_argument("--dry-run", action="store_true", help="emit aoi:plan, change nothing")
    s.add_argument("--idempotency-key", metavar="KEY", help="replay-safe retries")
    add("show", "show one task (read-only)").add_argument("id")
    s = add("list", "list tasks (read-only, bounded)")
    s.add_argument("--status", choices=["open", "done"])
    s.add_argument("--limit", type=int_at_least(1), default=DEFAULT_LIMIT, help=f"page size (default {DEFAULT_LIMIT})")
    s.add_argument("--cursor", metavar="C", help="next_cursor of a previous page")
    add("done", "mark tasks done (mutation, idempotent)").add_argument("ids", nargs="+", metavar="ID")
    s = add("purge", "delete the tasks matching a filter (destructive)")
    s.add_argument("--status", choices=["open", "done"], default="done")
    s.add_argument("--older-than", type=int_at_least(0), metavar="DAYS")
    s.add_argument("--confirm", action="store_true", help="required to delete")
    s.add_argument("--confirm-count", type=int_at_least(0), metavar="N", help="refuse unless exactly N tasks match")
    s.add_argument("--dry-run", action="store_true", help="emit aoi:plan, delete nothing")
    s = add("tail", "relay another tool's AOI JSONL from stdin as upstream_event")
    s.add_argument("--input-jsonl", choices=["-"], default="-", help="stdin, the only input (default)")
    s.add_argument("--continue-on-error", action="store_true", help="malformed lines and upstream errors are data")
    add("schema", "print the JSON Schema of the events (offline)")
    add("capabilities", "print the capability manifest (offline)")
    add("input-schema", "print the JSON Schema of tail's JSONL input (offline)").add_argument(
        "--command", dest="for_command", choices=["tail"], default="tail")
    return p

def prescan(argv):
    """Output mode and command, known before argparse can fail."""
    output, command, i = "text", None, 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] in ("--output", "--format") and i + 1 < len(argv):
            output, i = argv[i + 1], i + 1
        elif argv[i].startswith(("--output=", "--format=")):
            output = argv[i].split("=", 1)[1]
        elif command is None and argv[i] in STREAM_CMDS + DISCOVERY_CMDS:
            command = argv[i]
        i += 1
    return output in ("json", "jsonl"), command, "--verbose" in argv

def main(argv):
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    sys.stdout.reconfigure(errors="backslashreplace")
    machine, command, verbose = prescan(argv)
    Parser.machine = machine
    run = Run(machine, command, verbose)
    try:
        try:
            try:
                a = build_parser().parse_args(argv)
            except UsageError as e:
                parser, message = e.args
                if not machine:
                    parser.print_usage(sys.stderr)
                raise Fail("usage", "USAGE_ERROR", f"{parser.prog}: {message}", hint=f"{parser.prog} --help")
            except InfoExit:
                run.summary(True, "skipped")
                return 0
            if a.command in STREAM_CMDS and a.output == "json":
                raise Fail("usage", "USAGE_ERROR", f"{a.command} streams events: use --output jsonl (json is for "
                           "discovery commands)")
            run.command = a.command
            run.props = ({"input_mode": "jsonl", "continue_on_error": a.continue_on_error} if a.command == "tail"
                         else {"dry_run": True} if getattr(a, "dry_run", False) else None)
            check_schema_version(a)
            return cmd_discovery(a, run) if a.command in DISCOVERY_CMDS else globals()["cmd_" + a.command](a, run)
        except Fail as f:
            run.error(f.category, f.code, f.message, **f.fields)
            run.summary(False, f.reason)
            return f.exit_code
        except BrokenPipeError:
            raise
        except Exception as e:  # a bug: one typed line, never a traceback on stdout
            if verbose:
                traceback.print_exc()
            run.error("internal", "INTERNAL_ERROR", f"{type(e).__name__}: {e}")
            run.summary(False, "failed")
            return 70
    except Cancelled as c:
        run.debug(f"cancelled by signal {c.args[0]}")
        if machine and run.started:
            run.summary(False, "cancelled")
        elif not machine:
            sys.stderr.write(f"{TOOL}: cancelled\n")
        return 128 + c.args[0]

if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:  # downstream closed the pipe: quiet exit, no traceback
        code = 141
    except Cancelled as c:  # a signal while the final summary was being written
        code = 128 + c.args[0]
    if code == 141:  # nothing more may reach the closed pipe, not even at interpreter exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)
