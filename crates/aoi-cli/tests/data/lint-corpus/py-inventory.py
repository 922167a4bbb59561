#!/usr/bin/env python3
"""py-inventory: a small inventory store keyed by SKU, with an AOI-CLI v1.0-alpha machine mode.

An item has a SKU (the natural key you choose, e.g. ABC-123: 1-64 letters, digits, '.', '_'
or '-'; case-insensitive, stored upper-case), a name and a quantity >= 0. State lives in
SQLite at $XDG_DATA_HOME/py-inventory/inventory.db (default ~/.local/share/py-inventory/),
created by the first write; reads (get, list, any --dry-run) never create it.

Commands, one sample each:
  add SKU NAME [--qty N]         py-inventory add ABC-1 Widget --qty 5
  get SKU                        py-inventory get ABC-1
  list [--limit N] [--cursor C]  py-inventory list --limit 2
  adjust SKU --by N              py-inventory adjust ABC-1 --by -2
  remove SKU... --confirm        py-inventory remove ABC-2 XYZ-9 --confirm --confirm-count 2
  import  (JSON Lines on stdin)  printf '{"sku":"D-4","name":"Dial","qty":3}\\n' | py-inventory import
  schema                         py-inventory schema --output json
  input-schema                   py-inventory input-schema --command import --output json
  capabilities                   py-inventory capabilities --output json

Seed a store with three items:
  py-inventory add ABC-1 Widget --qty 5
  py-inventory add ABC-2 "Gadget, large" --qty 12
  py-inventory add XYZ-9 Sprocket

add, adjust, remove, import: --dry-run emits aoi:plan events and changes nothing;
--idempotency-key KEY makes a retry with the same request return the first result unchanged
(the same key with another request is a conflict; keys last as long as the store). remove is
destructive and all or nothing: --confirm, plus --confirm-count N for more than one SKU.
import reads one object per line, {"sku": "...", "name": "...", "qty": N} (unknown fields are
rejected), or another tool's AOI stream, whose "entry" events count as records
(`py-inventory list --output jsonl | py-inventory import` copies a store). Bad input is
fail-fast by default: nothing is written and the first bad line is reported;
--continue-on-error imports the good lines, reports each bad one, ends ok:false partial:true.
Global: --output jsonl|text (alias --format; json = jsonl), --schema-version 1, --no-color,
-h/--help, --version.

Machine mode (--output jsonl): stdout is only JSON Lines, aoi:meta first, aoi:summary last,
aoi.seq/aoi.run on each; nothing prompts. schema, input-schema and capabilities print one
JSON document and need no store, network or credentials. Compatibility: within schema major
1 (org.example.py-inventory.events) types and fields may be added, never renamed, removed or
retyped; ignore unknown fields and unprefixed types; breaking changes bump the major. A
locked store is "unavailable": retryable for reads, and for writes only with --idempotency-key.
Exit codes: 0 ok; 1 not_found, conflict, precondition_failed, failed upstream; 64 usage
(also a missing --confirm) or unsupported; 65 validation; 70 internal; 73 cannot create the
store; 74 I/O or truncated upstream; 75 store locked; 130 SIGINT; 141 stdout closed; 143 SIGTERM.
"""
import base64, contextlib, hashlib, json, os, re, signal, sqlite3, sys, time  # noqa: E401
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

TOOL, TOOL_VERSION, AOI_VERSION = "py-inventory", "1.0.0", "1.0-alpha"
SCHEMA_NAME, SCHEMA_VERSION = "org.example.py-inventory.events", "1.0.0"
SCHEMA_BASE = "https://py-inventory.example.org/schemas"
IDENTITY = {"tool": TOOL, "tool_version": TOOL_VERSION, "aoi_version": AOI_VERSION,
            "schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION}
DEFAULT_LIMIT, MAX_LIMIT, MAX_QTY, MAX_NAME = 50, 1000, 10**9, 200
SKU_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
CATEGORIES = ["usage", "validation", "config", "authn", "authz", "not_found", "conflict",
              "precondition_failed", "unsupported", "rate_limited", "unavailable", "timeout",
              "cancelled", "io", "internal"]
RETRYABLE_BY_DEFAULT = {"rate_limited", "unavailable", "timeout"}
EXIT_CODES = {"usage": 64, "unsupported": 64, "validation": 65, "internal": 70, "io": 74,
              "unavailable": 75, "rate_limited": 75, "authn": 77, "authz": 77, "config": 78,
              "timeout": 124, "cancelled": 130}          # every other category: 1
DDL = """CREATE TABLE IF NOT EXISTS items (sku TEXT PRIMARY KEY, name TEXT NOT NULL,
  qty INTEGER NOT NULL CHECK (qty >= 0), created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
  result TEXT NOT NULL, created_at TEXT NOT NULL);"""
MUTATING = {"dry-run": "flag", "idempotency-key": "str"}
GLOBAL_OPTS = {"output": "str", "format": "str", "schema-version": "str", "no-color": "flag",
               "help": "flag", "version": "flag"}
COMMANDS = {  # name: (usage, description, operands, option kinds)
    "add": ("add SKU NAME [--qty N] [--dry-run] [--idempotency-key KEY]", "Create an item; conflict if "
            "the SKU exists.", ["sku", "name"], {"qty": "int", **MUTATING}),
    "get": ("get SKU", "Show one item.", ["sku"], {}),
    "list": ("list [--limit N] [--cursor C]", f"List items in SKU order, {DEFAULT_LIMIT} per page by default "
             f"(at most {MAX_LIMIT}).", [], {"limit": "int", "cursor": "str"}),
    "adjust": ("adjust SKU --by N [--dry-run] [--idempotency-key KEY]", "Add N (negative to take away) to an "
               "item's quantity, which may not go below 0.", ["sku"], {"by": "int", **MUTATING}),
    "remove": ("remove SKU... --confirm [--confirm-count N] [--dry-run] [--idempotency-key KEY]", "Delete "
               "items, all or nothing; needs --confirm, and --confirm-count N (distinct SKUs) for more "
               "than one.", ["skus..."], {"confirm": "flag", "confirm-count": "int", **MUTATING}),
    "import": ("import [--input-jsonl -] [--fail-fast|--continue-on-error] [--dry-run] [--idempotency-key "
               "KEY]", "Create items from JSON Lines on stdin; fail-fast unless --continue-on-error.", [],
               {"input-jsonl": "str", "fail-fast": "flag", "continue-on-error": "flag", **MUTATING}),
    "schema": ("schema [--name NAME]", "Print the JSON Schema of the events.", [], {"name": "str"}),
    "input-schema": ("input-schema [--command import]", "Print the JSON Schema of one line of import's "
                     "input.", [], {"command": "str"}),
    "capabilities": ("capabilities", "Print the capability manifest.", [], {}),
}
DISCOVERY = ("schema", "input-schema", "capabilities")
HUMAN = {
    "entry": lambda p: f"{p['sku']:<16} {p['qty']:>9}  {p['name']}",
    "created": lambda p: f"added {p['sku']} ({p['name']}), qty {p['qty']}",
    "updated": lambda p: f"{p['sku']}: qty {p['previous_qty']} -> {p['qty']} ({p['by']:+d})",
    "deleted": lambda p: f"removed {p['sku']} ({p['name']}, qty {p['qty']})",
}
OUT, STATE = None, {"write": False, "keyed": False}

class Usage(Exception): pass                             # noqa: E701
class PipeClosed(Exception): pass                        # noqa: E701  args[0]: exit code

class Fail(Exception):
    """Ends the run with one aoi:error and a failed aoi:summary."""
    def __init__(self, category, code, message, reason="failed", exit_code=None, summary=None, **fields):
        super().__init__(message)
        self.category, self.code, self.reason = category, code, reason
        self.exit_code, self.summary, self.fields = exit_code, summary or {}, fields

class Cancelled(BaseException):         # args[0] is the signal number
    pass

def shown(value):
    """User input quoted for a one-line message: bounded and escaped, never raw."""
    value = str(value)
    return json.dumps(value if len(value) <= 64 else value[:64] + "...")

def ulid():
    n = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join("0123456789ABCDEFGHJKMNPQRSTVWXYZ"[(n >> s) & 31] for s in range(125, -1, -5))

def utcnow():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

class Out:
    """One run's output: AOI JSONL in machine mode, plain text otherwise."""
    def __init__(self, machine, command):
        self.machine, self.command = machine, command
        self.run, self.t0, self.seq, self.count, self.errors = ulid(), time.monotonic(), 0, 0, 0
        self.first_category, self.pending = None, None
        self.meta_sent = self.done = self.ok = self.in_write = False

    def _put(self, text):
        self.in_write = True             # a signal arriving now waits until the line is whole
        try:
            sys.stdout.buffer.write(text.encode("utf-8", "replace"))
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            raise PipeClosed(141) from None
        except (AttributeError, ValueError, OSError):      # stdout closed or failing: nowhere to report
            raise PipeClosed(74) from None
        finally:
            self.in_write = False
        if self.pending:
            signum, self.pending = self.pending, None
            raise Cancelled(signum)

    def _line(self, obj):
        obj = {"type": obj.pop("type"), "aoi": {"seq": self.seq, "run": self.run}, **obj}
        self.seq += 1
        self._put(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")

    def say(self, text, err=False):
        if text is None: return
        if not err: return self._put(text + "\n")
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def meta(self, props=None):
        self.meta_sent = True
        if self.machine:
            self._line({"type": "aoi:meta", **IDENTITY, **({"command": self.command} if self.command else {}),
                        "args_redacted": True, **({"properties": props} if props else {})})

    def event(self, etype, payload, text=None):
        self.count += 1
        if self.machine: self._line({"type": etype, **payload})
        else: self.say(text if text is not None else HUMAN[etype](payload))

    def plan(self, props, text):
        if self.machine: self._line({"type": "aoi:plan", "properties": props})
        else: self.say("would " + text)

    def error(self, category, code, message, **fields):
        self.errors += 1
        self.first_category = self.first_category or category
        retryable = bool(fields.pop("retryable", category in RETRYABLE_BY_DEFAULT))
        if not retryable: fields.pop("retry_after_ms", None)
        if self.machine:
            self._line({"type": "aoi:error", "category": category, "code": code, "message": message,
                        "retryable": retryable, "domain": TOOL, "scope": fields.pop("scope", "process"), **fields})
        else:
            self.say(f"{TOOL}: error: {message}", err=True)
            self.say(fields.get("hint") and f"  try: {fields['hint']}", err=True)

    def summary(self, ok, reason=None, text=None, upstream_errors=0, upstream_warnings=0, **fields):
        self.done, self.ok = True, ok
        if not self.machine: return self.say(text)
        self._line({"type": "aoi:summary", "ok": ok, **({"reason": reason} if reason else {}), **IDENTITY,
                    "event_count": self.seq + 1, "count": self.count, "warning_count": upstream_warnings,
                    "error_count": self.errors + upstream_errors, "partial": self.count > 0 and self.errors > 0,
                    "elapsed_ms": int((time.monotonic() - self.t0) * 1000), **fields})

def db_path():
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):          # the XDG spec says to ignore relative values
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, TOOL, "inventory.db")

def open_store(write):
    """Read: None when there is no store yet (never creates one). Write: created on demand."""
    path = db_path()
    if not write:
        if not os.path.isfile(path): return None
        conn = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True, timeout=2, isolation_level=None)
    else:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as e:
            raise Fail("io", "STORE_CREATE_FAILED", f"cannot create the store directory: {e.strerror}",
                       exit_code=73) from None
        conn = sqlite3.connect(path, timeout=2, isolation_level=None)
        conn.executescript(DDL)
    conn.row_factory = sqlite3.Row
    return conn

def fetch(conn, sku):
    return conn.execute("SELECT * FROM items WHERE sku = ?", (sku,)).fetchone() if conn else None

def as_item(row):
    return {k: row[k] for k in ("sku", "name", "qty", "created_at", "updated_at")}

def clean_sku(sku):
    if not isinstance(sku, str) or not SKU_RE.fullmatch(sku):
        raise Fail("validation", "INVALID_SKU", f"invalid SKU {shown(sku)}: use 1-64 letters, digits, "
                   "'.', '_' or '-', starting with a letter or digit", field="sku")
    return sku.upper()

def clean_item(sku, name, qty):
    sku = clean_sku(sku)
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME \
            or any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in name):
        raise Fail("validation", "INVALID_NAME", f"name must be 1-{MAX_NAME} printable characters",
                   field="name", target=sku)
    if isinstance(qty, bool) or not isinstance(qty, int) or not 0 <= qty <= MAX_QTY:
        raise Fail("validation", "INVALID_QTY", f"qty must be an integer from 0 to {MAX_QTY}",
                   field="qty", target=sku)
    return {"sku": sku, "name": name.strip(), "qty": qty}

def plan(action, text, **props):
    return {"type": "aoi:plan", "properties": {"action": action, **props}, "text": text}

def finish(out, items, extra, props=None, text=None):
    """Emit buffered items (domain events, plans, errors), then the summary."""
    for it in map(dict, items):
        kind = it.pop("type")
        if kind == "aoi:error": out.error(it.pop("category"), it.pop("code"), it.pop("message"), **it)
        elif kind == "aoi:plan": out.plan(it["properties"], it["text"])
        else: out.event(kind, it)
    extra = dict(extra, **({"properties": props} if props else {}))
    ok = extra.pop("ok", True) and out.errors == 0
    out.summary(ok, None if ok else "failed", text=text(out) if text else None, **extra)

def mutation(out, p, request, body, text=None):
    """Run body(conn, dry) -> (items, summary_extra) in one transaction, honouring --dry-run
    (read-only; never creates the store) and --idempotency-key; then emit everything."""
    dry, key, replayed = p.opts.get("dry-run", False), p.opts.get("idempotency-key"), False
    if key is not None and not re.fullmatch(r"[!-~]{1,128}", key):
        raise Fail("validation", "INVALID_IDEMPOTENCY_KEY", "--idempotency-key must be 1-128 printable "
                   "ASCII characters without spaces", field="idempotency-key")
    if dry:
        items, extra = body(open_store(False), True)
    else:
        STATE.update(write=True, keyed=key is not None)
        fingerprint = hashlib.sha256(json.dumps([p.command, request], sort_keys=True).encode()).hexdigest()
        conn = open_store(True)
        try:
            conn.execute("BEGIN IMMEDIATE")
            prior = key and conn.execute("SELECT * FROM idempotency WHERE key = ?", (key,)).fetchone()
            if prior and prior["fingerprint"] != fingerprint:
                raise Fail("conflict", "IDEMPOTENCY_KEY_REUSED", "this --idempotency-key was already used "
                           "for a different request", field="idempotency-key")
            if prior:
                (items, extra), replayed = json.loads(prior["result"]), True
            else:
                items, extra = body(conn, False)
                if key and any(not i["type"].startswith("aoi:") for i in items):
                    conn.execute("INSERT INTO idempotency VALUES (?, ?, ?, ?)",
                                 (key, fingerprint, json.dumps([items, extra]), utcnow()))
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction: conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()
    note = "(dry run: nothing was changed)" if dry else \
        "(idempotent replay: same result as the first run; nothing was changed)" if replayed else None
    finish(out, items, extra, {"dry_run": True} if dry else {"idempotent_replay": True} if replayed else None,
           lambda o: "\n".join(t for t in (text and text(o), note) if t) or None)

def cmd_get(out, p):
    sku = clean_sku(p.pos[0])
    row = fetch(open_store(False), sku)
    if not row: raise Fail("not_found", "SKU_NOT_FOUND", f"no item with SKU {sku}", target=sku)
    out.event("entry", as_item(row), f"{row['sku']}  {row['name']}\n  qty:     {row['qty']}\n"
              f"  created: {row['created_at']}\n  updated: {row['updated_at']}")
    out.summary(True)

def encode_cursor(sku):
    raw = json.dumps({"v": 1, "after": sku}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")

def decode_cursor(cursor):
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if data.get("v") == 1 and isinstance(data.get("after"), str): return data["after"]
    except (ValueError, AttributeError, TypeError):
        pass                             # fall through: not one of ours
    raise Fail("validation", "INVALID_CURSOR", "--cursor is not a cursor issued by this tool", field="cursor")

def cmd_list(out, p):
    limit = p.opts.get("limit", DEFAULT_LIMIT)
    if not 1 <= limit <= MAX_LIMIT:
        raise Fail("validation", "LIMIT_OUT_OF_RANGE", f"--limit must be from 1 to {MAX_LIMIT}", field="limit")
    after, conn = decode_cursor(p.opts["cursor"]) if "cursor" in p.opts else "", open_store(False)
    rows = conn.execute("SELECT * FROM items WHERE sku > ? ORDER BY sku LIMIT ?",
                        (after, limit + 1)).fetchall() if conn else []
    more, rows = len(rows) > limit, rows[:limit]
    if rows and not out.machine: out.say(f"{'SKU':<16} {'QTY':>9}  NAME")
    for row in rows:
        out.event("entry", as_item(row))
    nxt = encode_cursor(rows[-1]["sku"]) if more else None
    again = f"{TOOL} list{f' --limit {limit}' if limit != DEFAULT_LIMIT else ''} --cursor {nxt}"
    out.summary(True, text=(f"{len(rows)} item(s)" if rows else "no items") + (f"; more with: {again}" if nxt else ""),
                truncated=more, next_cursor=nxt)

def cmd_add(out, p):
    rec = clean_item(p.pos[0], p.pos[1], p.opts.get("qty", 0))
    sku = rec["sku"]
    def body(conn, dry):
        if fetch(conn, sku):
            raise Fail("conflict", "SKU_EXISTS", f"an item with SKU {sku} already exists", target=sku,
                       hint=f"{TOOL} adjust {sku} --by N")
        if dry: return [plan("create", f"add {sku} ({rec['name']}), qty {rec['qty']}", **rec)], {}
        ts = utcnow()
        conn.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?)", (sku, rec["name"], rec["qty"], ts, ts))
        return [{"type": "created", **rec, "created_at": ts}], {}
    mutation(out, p, rec, body)

def cmd_adjust(out, p):
    sku, by = clean_sku(p.pos[0]), p.opts.get("by")
    if by is None: raise Fail("usage", "MISSING_OPTION", "adjust needs --by N", hint=f"{TOOL} adjust {sku} --by 1")
    def body(conn, dry):
        row = fetch(conn, sku)
        if not row: raise Fail("not_found", "SKU_NOT_FOUND", f"no item with SKU {sku}", target=sku)
        new = row["qty"] + by
        if new < 0:
            raise Fail("precondition_failed", "INSUFFICIENT_QUANTITY",
                       f"{sku} has qty {row['qty']}; cannot take away {-by}", target=sku)
        if new > MAX_QTY:
            raise Fail("validation", "INVALID_QTY", f"qty would exceed {MAX_QTY}", field="by", target=sku)
        change = {"sku": sku, "name": row["name"], "qty": new, "previous_qty": row["qty"], "by": by}
        if dry: return [plan("update", f"set {sku} qty {row['qty']} -> {new} ({by:+d})", **change)], {}
        ts = utcnow()
        conn.execute("UPDATE items SET qty = ?, updated_at = ? WHERE sku = ?", (new, ts, sku))
        return [{"type": "updated", **change, "updated_at": ts}], {}
    mutation(out, p, {"sku": sku, "by": by}, body)

def cmd_remove(out, p):
    skus = list(dict.fromkeys(clean_sku(s) for s in p.pos))
    dry, count, n = p.opts.get("dry-run", False), p.opts.get("confirm-count"), len(skus)
    hint = f"{TOOL} remove {' '.join(skus)} --confirm" + (f" --confirm-count {n}" if n > 1 else "")
    if not dry and not p.opts.get("confirm"):
        raise Fail("usage", "CONFIRMATION_REQUIRED", "remove is destructive: pass --confirm (or --dry-run "
                   "to preview)", reason="denied", hint=hint)
    if not dry and n > 1 and count is None:
        raise Fail("usage", "CONFIRM_COUNT_REQUIRED", f"removing {n} items also needs --confirm-count {n}",
                   reason="denied", hint=hint)
    if count is not None and count != n:
        raise Fail("validation", "CONFIRM_COUNT_MISMATCH", f"--confirm-count is {count} but {n} distinct "
                   "SKU(s) would be removed; nothing was removed", reason="denied", field="confirm-count",
                   details={"expected": count, "actual": n})
    def body(conn, dry):
        rows = [fetch(conn, s) for s in skus]
        missing = [{"type": "aoi:error", "category": "not_found", "code": "SKU_NOT_FOUND", "message":
                    f"no item with SKU {s}; nothing was removed", "scope": "item", "target": s,
                    "item_index": i} for i, (s, r) in enumerate(zip(skus, rows)) if not r]
        if missing: return missing, {}
        gone = [{"sku": r["sku"], "name": r["name"], "qty": r["qty"]} for r in rows]
        if dry: return [plan("delete", f"remove {g['sku']} ({g['name']}, qty {g['qty']})", **g) for g in gone], {}
        conn.executemany("DELETE FROM items WHERE sku = ?", [(s,) for s in skus])
        return [{"type": "deleted", **g} for g in gone], {}
    mutation(out, p, {"skus": skus}, body)

def read_input(p, machine):
    if p.opts.get("input-jsonl", "-") != "-":
        raise Fail("unsupported", "INPUT_MODE_UNSUPPORTED", "only --input-jsonl - (stdin) is supported")
    if sys.stdin is None: return b""
    if machine and sys.stdin.isatty():
        raise Fail("usage", "INPUT_REQUIRED", "import reads JSON Lines from stdin, which is a terminal; "
                   "pipe the records in")
    return sys.stdin.buffer.read()

def scan_input(data, fail_fast):
    """Parse all input before any side effect: records, item problems and upstream AOI state."""
    st = {"records": [], "problems": [], "upstream": None, "summary": None, "up_errors": [],
          "up_warnings": 0, "inputs": 0, "truncated": False, "aoi": False, "first": True}
    lines = data.split(b"\n")
    tail = lines.pop()                   # b"" when the input ends with a newline
    def problem(n, category, code, message, **f):
        st["problems"].append({"type": "aoi:error", "category": category, "code": code,
                               "message": message, "scope": "item", "line_number": n, **f})
        return not fail_fast
    def record(n, obj):
        try:
            st["records"].append((n, clean_item(obj.get("sku"), obj.get("name"), obj.get("qty", 0))))
        except Fail as e:
            return problem(n, e.category, e.code, f"input line {n}: {e}", **e.fields)
        return True
    def take(n, raw):
        if not raw.strip(): return True
        try:
            obj = json.loads(raw)
        except ValueError:
            return problem(n, "validation", "INPUT_JSONL_PARSE_ERROR", f"invalid JSON on input line {n}")
        first, st["first"] = st["first"], False
        kind = obj.get("type") if isinstance(obj, dict) else 0
        if kind is not None and not isinstance(kind, str):
            return problem(n, "validation", "INPUT_NOT_RECORD", f"input line {n}: expected a JSON object "
                           "whose \"type\", if present, is a string")
        if kind is None:
            st["inputs"] += 1
            unknown = sorted(set(obj) - {"sku", "name", "qty"})
            return problem(n, "validation", "UNKNOWN_FIELD", f"input line {n}: unknown field "
                           f"{shown(unknown[0])}", field=unknown[0]) if unknown else record(n, obj)
        if kind == "aoi:meta" and first:
            st["aoi"], st["upstream"] = True, {k: obj[k] for k in ("tool", "tool_version", "schema_name",
                                                                   "schema_version") if isinstance(obj.get(k), str)}
        elif kind == "aoi:summary":
            st["summary"] = obj
        elif kind == "aoi:error":
            st["up_errors"].append(obj)
            return not fail_fast
        elif kind == "aoi:warning":
            st["up_warnings"] += 1
        elif kind.startswith("aoi:") and kind not in ("aoi:meta", "aoi:plan", "aoi:progress", "aoi:heartbeat",
                                                      "aoi:check"):
            return problem(n, "unsupported", "UNKNOWN_FRAMEWORK_EVENT",
                           f"input line {n}: unrecognised framework event {shown(kind)}")
        elif not kind.startswith("aoi:"):
            st["inputs"] += 1            # "entry" is imported; other domain events are safe to ignore
            if kind == "entry": return record(n, obj)
        return True

    for n, raw in enumerate(lines, 1):
        if not take(n, raw): return st
    if tail.strip() and not st["aoi"] and not take(len(lines) + 1, tail): return st
    # an AOI stream whose last line lacks its newline, or that has no aoi:summary, was cut short
    st["truncated"] = st["aoi"] and (bool(tail.strip()) or st["summary"] is None)
    return st

def caused_by(errors, upstream):
    err = min(errors, key=lambda e: (e.get("scope", "process") != "process", e.get("retryable") is True))
    cause = {"origin": err.get("origin") or (upstream or {}).get("tool") or "upstream",
             "category": err.get("category", "internal"), "retryable": err.get("retryable") is True}
    if "code" in err: cause["code"] = err["code"]
    if cause["retryable"] and isinstance(err.get("retry_after_ms"), int):
        cause["retry_after_ms"] = err["retry_after_ms"]
    return cause

def cmd_import(out, p):
    cont = bool(p.opts.get("continue-on-error"))
    if cont and p.opts.get("fail-fast"):
        raise Fail("usage", "CONFLICTING_OPTIONS", "--fail-fast and --continue-on-error exclude each other")
    data = read_input(p, out.machine)
    st = scan_input(data, not cont)
    up_failed = bool(st["up_errors"]) or (st["summary"] is not None and st["summary"].get("ok") is not True)
    extra = {"input_count": st["inputs"], "upstream_errors": len(st["up_errors"]),
             "upstream_warnings": st["up_warnings"], **({"upstream": st["upstream"]} if st["upstream"] else {})}
    if up_failed and not cont:
        extra["ok"] = False
        if st["up_errors"]: extra["caused_by"] = caused_by(st["up_errors"], st["upstream"])
    tail = [{"type": "aoi:error", "category": "io", "code": "UPSTREAM_TRUNCATED", "message":
             "the upstream stream ended without a complete aoi:summary"}] if st["truncated"] else []
    if not cont and (st["problems"] or tail or up_failed):
        return finish(out, st["problems"] + tail, extra)   # fail fast: before any side effect
    def body(conn, dry):
        items, seen = [(e["line_number"], e) for e in st["problems"]], set()
        for n, rec in st["records"]:
            sku = rec["sku"]
            if sku in seen or fetch(conn, sku):
                err = {"category": "conflict", "code": "SKU_EXISTS", "message": f"input line {n}: SKU "
                       f"{sku} already exists", "scope": "item", "line_number": n, "target": sku}
                if not cont: raise Fail(summary=extra, **err)
                items.append((n, {"type": "aoi:error", **err}))
            elif dry:
                seen.add(sku)
                items.append((n, plan("create", f"add {sku} ({rec['name']}), qty {rec['qty']}", **rec)))
            else:
                seen.add(sku)
                ts = utcnow()
                conn.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?)", (sku, rec["name"], rec["qty"], ts, ts))
                items.append((n, {"type": "created", **rec, "created_at": ts}))
        items.sort(key=lambda pair: pair[0])
        return [it for _, it in items] + tail, extra
    mutation(out, p, {"input": hashlib.sha256(data).hexdigest(), "continue": cont}, body,
             lambda o: f"{'would import' if p.opts.get('dry-run') else 'imported'} {o.count} item(s)"
             + (f"; {o.errors} error(s)" if o.errors else ""))

def event_schema():
    s, b, i = {"type": "string"}, {"type": "boolean"}, {"type": "integer", "minimum": 0}
    sku, ts = {"type": "string", "pattern": "^[A-Z0-9][A-Z0-9._-]{0,63}$"}, {"type": "string", "format": "date-time"}
    item, ident = {"sku": sku, "name": s, "qty": i}, {k: s for k in IDENTITY}
    def obj(required, props, **more):
        return {"type": "object", "required": required, "properties": props, **more}
    defs = {
        "aoi:meta": obj(list(IDENTITY), {**ident, "command": s, "args_redacted": b, "properties": {"type": "object"}}),
        "aoi:summary": obj(["ok", *IDENTITY, "event_count", "count", "warning_count", "error_count", "partial"], {
            "ok": b, **ident, "reason": {"enum": ["failed", "cancelled", "timeout", "denied", "skipped"]},
            "event_count": {"type": "integer", "minimum": 1}, "count": i, "input_count": i, "warning_count": i,
            "error_count": i, "partial": b, "truncated": b, "next_cursor": {"type": ["string", "null"]},
            "elapsed_ms": i, "caused_by": obj(["origin", "category", "retryable"], {
                "origin": s, "category": s, "code": s, "retryable": b, "retry_after_ms": i}),
            "upstream": obj([], {k: s for k in ("tool", "tool_version", "schema_name", "schema_version")}),
            "properties": {"type": "object"}},
            **{"if": {"properties": {"ok": {"const": False}}}, "then": {"required": ["reason"]}}),
        "aoi:error": obj(["category", "code", "message", "retryable"], {
            "category": {"enum": CATEGORIES}, "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
            "message": s, "retryable": b, "retry_after_ms": i, "domain": s, "origin": s,
            "scope": {"enum": ["process", "item"]}, "target": s, "item_index": i,
            "line_number": {"type": "integer", "minimum": 1}, "field": s, "hint": s, "details": {"type": "object"}},
            **{"if": {"properties": {"retryable": {"const": False}}},
               "then": {"not": {"required": ["retry_after_ms"]}}}),
        "aoi:plan": obj(["properties"], {"properties": obj(["action", "sku"], {
            "action": {"enum": ["create", "update", "delete"]}, "sku": sku})}),
        "entry": obj(["sku", "name", "qty", "created_at", "updated_at"], {**item, "created_at": ts, "updated_at": ts}),
        "created": obj(["sku", "name", "qty", "created_at"], {**item, "created_at": ts}),
        "updated": obj(["sku", "name", "qty", "previous_qty", "by", "updated_at"],
                       {**item, "previous_qty": i, "by": {"type": "integer"}, "updated_at": ts}),
        "deleted": obj(["sku", "name", "qty"], item),
        "help": obj(["text"], {"command": s, "text": s}),
        "version": obj(["tool", "tool_version"], {"tool": s, "tool_version": s}),
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA_BASE}/events/{SCHEMA_VERSION}/schema.json", "title": f"{SCHEMA_NAME} {SCHEMA_VERSION}",
            "description": "One line of py-inventory machine-mode output (AOI-CLI 1.0-alpha). Ignore unknown "
                           "fields and unknown unprefixed event types.",
            "type": "object", "required": ["type", "aoi"], "properties": {"type": s, "aoi": {"$ref": "#/$defs/envelope"}},
            "allOf": [{"if": {"properties": {"type": {"const": t}}, "required": ["type"]},
                       "then": {"$ref": f"#/$defs/{t.replace(':', '-')}"}} for t in defs],
            "$defs": {"envelope": obj(["seq", "run"], {"seq": i, "run": {"type": "string", "minLength": 1},
                                                       "t": i, "trace_id": s}),
                      **{t.replace(":", "-"): d for t, d in defs.items()}}}

def input_schema():
    sku = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"}
    name = {"type": "string", "minLength": 1, "maxLength": MAX_NAME, "pattern": "\\S"}
    qty = {"type": "integer", "minimum": 0, "maximum": MAX_QTY}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA_BASE}/input/import/{SCHEMA_VERSION}/schema.json",
            "title": "py-inventory import: one line of JSON Lines input", "description":
            "A line without \"type\" is a record (unknown fields rejected). A line with \"type\" is an "
            "upstream AOI event: \"entry\" is imported like a record, aoi:* events are interpreted, other "
            "types are ignored. Malformed lines: fail-fast (nothing written) unless --continue-on-error.",
            "type": "object", "if": {"required": ["type"]},
            "then": {"properties": {"type": {"type": "string"}},
                     "if": {"properties": {"type": {"const": "entry"}}},
                     "then": {"required": ["sku", "name"], "properties": {"sku": sku, "name": name, "qty": qty}}},
            "else": {"$ref": "#/$defs/record"},
            "$defs": {"record": {"type": "object", "additionalProperties": False, "required": ["sku", "name"],
                                 "properties": {"sku": sku, "name": name, "qty": {**qty, "default": 0}}}}}

def capabilities():
    mut = {"read_only": False, "supports_dry_run": True, "supports_idempotency_key": True}
    def c(name, events=(), input_modes=("args",), **kw):
        return {"name": name, "usage": f"{TOOL} {COMMANDS[name][0]}", "read_only": True, **kw,
                "input_modes": list(input_modes),
                **({"event_types": ["aoi:meta", *events, "aoi:error", "aoi:summary"]} if events else {"output": "json"})}
    return {"tool": TOOL, "tool_version": TOOL_VERSION, "aoi_versions": [AOI_VERSION], "outputs": ["jsonl"],
            "schemas": [{"name": SCHEMA_NAME, "versions": [SCHEMA_VERSION], "default": SCHEMA_VERSION}],
            "auth": {"required": False},
            "commands": [
                c("add", ["created", "aoi:plan"], **mut), c("get", ["entry"]),
                c("list", ["entry"], bounded=True, supports_cursor=True, default_limit=DEFAULT_LIMIT,
                  max_limit=MAX_LIMIT),
                c("adjust", ["updated", "aoi:plan"], **mut),
                c("remove", ["deleted", "aoi:plan"], **mut, destructive=True, requires_confirm=True,
                  supports_confirm_count=True),
                c("import", ["created", "aoi:plan"], ["jsonl"], **mut, input_schema=True,
                  malformed_input="fail-fast", supports_continue_on_error=True),
                c("schema"), c("input-schema"), c("capabilities")]}

def discovery(p):
    """The JSON document to print; raises Fail."""
    if p.command == "schema":
        if p.opts.get("name", SCHEMA_NAME) != SCHEMA_NAME:
            raise Fail("not_found", "UNKNOWN_SCHEMA", f"unknown schema name; this tool has {SCHEMA_NAME}")
        return event_schema()
    if p.command == "input-schema":
        command = p.opts.get("command", "import")
        if command not in COMMANDS:
            raise Fail("usage", "UNKNOWN_COMMAND", f"unknown command {shown(command)}", field="command")
        if command != "import":
            raise Fail("unsupported", "NO_STRUCTURED_INPUT", f"{command} reads no structured input; its "
                       "operands and options are in its usage line (see capabilities)", field="command")
        return input_schema()
    return capabilities()

def output_mode(argv):
    mode = "text"
    for i, a in enumerate(argv):
        if a == "--": break
        name, eq, val = a.partition("=")
        if name in ("--output", "--format"):
            mode = val if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if mode not in ("text", "jsonl", "json"): raise Usage(f"{name} must be jsonl or text")
    return mode

def parse(argv, p):
    i, only_pos = 0, False
    while i < len(argv):
        a, i = argv[i], i + 1
        if only_pos or a == "-" or not a.startswith("-"):
            if p.command is None and a not in COMMANDS: raise Usage(f"unknown command {shown(a)}")
            if p.command is None: p.command = a
            else: p.pos.append(a)
            continue
        if a == "--":
            only_pos = True
            continue
        a = "--help" if a == "-h" else a
        name, has_value, value = a[2:].partition("=")      # an option's value is never echoed
        kind = GLOBAL_OPTS.get(name) or (COMMANDS[p.command][3].get(name) if p.command else None)
        if not a.startswith("--") or kind is None:
            raise Usage(f"unknown option {shown(a.partition('=')[0])}"
                        + ("" if p.command else " (command options go after the command)"))
        target = p.g if name in GLOBAL_OPTS else p.opts
        if kind == "flag" and has_value: raise Usage(f"--{name} takes no value")
        if kind == "flag":
            target[name] = True
            continue
        if not has_value and i >= len(argv): raise Usage(f"--{name} needs a value")
        if not has_value: value, i = argv[i], i + 1
        if kind == "int" and not re.fullmatch(r"[+-]?[0-9]{1,12}", value):
            raise Usage(f"--{name} needs a whole number")
        target[name] = int(value) if kind == "int" else value

def help_text(command):
    if command is None: return __doc__.strip()
    usage, desc, _, _ = COMMANDS[command]
    return (f"usage: {TOOL} {usage}\n\n{desc}\n\nGlobal options: --output jsonl|text (alias --format), "
            "--schema-version 1, --no-color, -h/--help, --version")

def check_args(p):
    """Whatever is wrong with the invocation as a whole, as a Fail (or None)."""
    if p.command is None: return Fail("usage", "USAGE", "missing command", hint=f"{TOOL} --help")
    operands = COMMANDS[p.command][2]
    variadic = operands and operands[-1].endswith("...")
    if len(p.pos) < len(operands) or (not variadic and len(p.pos) > len(operands)):
        return Fail("usage", "USAGE", f"wrong number of arguments; usage: {TOOL} {COMMANDS[p.command][0]}",
                    hint=f"{TOOL} {p.command} --help")
    v = p.g.get("schema-version")
    if v is not None and not re.fullmatch(r"1(\.0(\.0)?)?", v):
        return Fail("unsupported", "SCHEMA_VERSION_UNSUPPORTED", f"schema version {shown(v)} is not "
                    f"supported; this build speaks {SCHEMA_VERSION}", details={"supported": [SCHEMA_VERSION]})
    return None

def run_command(out, p):
    try:
        {"get": cmd_get, "list": cmd_list, "add": cmd_add, "adjust": cmd_adjust, "remove": cmd_remove,
         "import": cmd_import}[p.command](out, p)
    except (Fail, PipeClosed):
        raise
    except sqlite3.OperationalError as e:
        if "locked" not in str(e) and "busy" not in str(e):
            raise Fail("io", "STORE_ERROR", f"inventory store error: {e}") from None
        raise Fail("unavailable", "STORE_BUSY", "the inventory store is locked by another process; try "
                   "again shortly", retryable=not STATE["write"] or STATE["keyed"]) from None
    except sqlite3.Error as e:
        raise Fail("io", "STORE_ERROR", f"inventory store error: {e}") from None
    except Exception as e:
        raise Fail("internal", "INTERNAL_ERROR", f"unexpected {type(e).__name__}; this is a bug") from None
    return 0 if out.ok else EXIT_CODES.get(out.first_category, 1)

def _main(argv):
    global OUT
    try:
        machine = output_mode(argv) != "text"
    except Usage as e:
        sys.stderr.write(f"{TOOL}: error: {e}\n")
        return 64
    p, failure = SimpleNamespace(command=None, pos=[], opts={}, g={}), None
    try:
        parse(argv, p)
    except Usage as e:
        failure = Fail("usage", "USAGE", str(e), hint=" ".join(filter(None, (TOOL, p.command, "--help"))))
    pseudo = "help" if p.g.get("help") else "version" if p.g.get("version") else None
    failure = failure or (None if pseudo else check_args(p))
    if not failure and not pseudo and p.command in DISCOVERY:
        try:
            doc = discovery(p)
            OUT = Out(machine, p.command)
            OUT.say(json.dumps(doc, ensure_ascii=False, **({"separators": (",", ":")} if machine else {"indent": 2})))
            return 0
        except Fail as e:
            failure = e
    out = OUT = Out(machine, pseudo or p.command)
    try:
        props = {"dry_run": True} if p.opts.get("dry-run") else {}
        if p.command == "import" and not failure and not pseudo:
            props.update(input_mode="jsonl", continue_on_error=bool(p.opts.get("continue-on-error")))
        out.meta(props)
        if failure: raise failure
        if not pseudo: return run_command(out, p)
        if pseudo == "help":
            out.event("help", {"command": p.command or TOOL, "text": help_text(p.command)}, help_text(p.command))
        else:
            out.event("version", {"tool": TOOL, "tool_version": TOOL_VERSION}, f"{TOOL} {TOOL_VERSION}")
        out.summary(True)
        return 0
    except Fail as e:
        out.error(e.category, e.code, str(e), **e.fields)
        out.summary(False, e.reason, **e.summary)
        return e.exit_code or EXIT_CODES.get(e.category, 1)

def main(argv):
    def on_signal(signum, frame):
        if OUT is not None and OUT.in_write: OUT.pending = signum   # finish the line being written first
        else: raise Cancelled(signum)
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN: signal.signal(sig, on_signal)
    try:
        return _main(argv)
    except Cancelled as c:
        for sig in (signal.SIGINT, signal.SIGTERM):    # a second signal ends the process at once
            signal.signal(sig, signal.SIG_DFL)
        if OUT is not None and OUT.machine and OUT.meta_sent and not OUT.done:
            with contextlib.suppress(PipeClosed, Cancelled):
                OUT.summary(False, "cancelled")
        elif OUT is not None and not OUT.machine:
            OUT.say(f"{TOOL}: interrupted", err=True)
        return 128 + c.args[0]
    except PipeClosed as e:
        with contextlib.suppress(OSError):   # stdout is gone: nothing more to say, and no traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        return e.args[0]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
