#!/usr/bin/env python3
"""notes: a tiny note store with a Machine Mode (AOI-CLI v1.0-alpha) interface.

Plain Python 3.9+, standard library only. Human output by default; `--output jsonl`
(or `--format jsonl`) selects the AOI JSONL event stream. See README.md beside this file.

Store: a JSON file at $NOTES_DB, else $XDG_DATA_HOME/notes/notes.json, else
~/.local/share/notes/notes.json. A missing store reads as an empty one; the first write
creates it (temp file + os.replace, under an advisory lock).

Compatibility rules (AOI-CLI 1.1): the machine output is governed by the event schema
`io.machinemode.examples.notes.events`, printed by `notes schema`. Adding an event type or an
optional field is a minor change of `schema_version`; renaming or removing an event type or a
field, or changing a field's type or meaning, is a major change. Error `code`s never change once
published.
"""

import base64
import contextlib
import hashlib
import json
import os
import re
import signal
import sys
import tempfile
import time

TOOL = "notes"
TOOL_VERSION = "0.1.0"
AOI_VERSION = "1.0-alpha"
SCHEMA_NAME = "io.machinemode.examples.notes.events"
SCHEMA_VERSION = "1.0.0"
SCHEMA_ID = "https://schemas.example.com/notes/events/1.0.0/schema.json"

LIMIT_DEFAULT = 20
LIMIT_MAX = 1000
TITLE_MAX = 500
BODY_MAX = 65536
KEY_MAX = 200
LOCK_WAIT_S = 10.0

CATEGORIES = [
    "usage", "validation", "config", "authn", "authz", "not_found", "conflict",
    "precondition_failed", "unsupported", "rate_limited", "unavailable", "timeout",
    "cancelled", "io", "internal",
]
RETRYABLE_DEFAULT = {"rate_limited", "unavailable", "timeout"}
# AOI-CLI §6. Categories the table does not name exit 1 ("process failed").
EXIT_FOR_CATEGORY = {
    "usage": 64, "validation": 65, "config": 78, "authn": 77, "authz": 77,
    "unavailable": 69, "internal": 70, "io": 74, "rate_limited": 75,
    "timeout": 124, "cancelled": 130,
}
EXIT_BROKEN_PIPE = 141

ID_RE = re.compile(r"^n[1-9][0-9]{0,17}$")
CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")
BODY_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# --------------------------------------------------------------------------------------------
# Errors and control flow


class AoiError(Exception):
    """A failure reported as one `aoi:error` (§9)."""

    def __init__(self, category, code, message, retryable=None, exit_code=None,
                 reason="failed", **fields):
        super().__init__(message)
        self.category = category
        self.code = code
        self.message = message
        self.retryable = (category in RETRYABLE_DEFAULT) if retryable is None else retryable
        self.exit_code = exit_code if exit_code is not None else EXIT_FOR_CATEGORY.get(category, 1)
        self.reason = reason
        self.fields = fields  # target, field, hint, line_number, item_index, details, ...

    def event_fields(self, scope="process"):
        out = {"scope": scope, "category": self.category, "code": self.code, "domain": TOOL,
               "message": self.message, "retryable": self.retryable}
        for k, v in self.fields.items():
            if v is not None:
                out[k] = v
        return out


class UsageError(AoiError):
    def __init__(self, code, message, **fields):
        fields.setdefault("hint", "notes --help")
        super().__init__("usage", code, message, **fields)


class Cancelled(BaseException):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class PipeClosed(BaseException):
    pass


class StdoutFailed(BaseException):
    pass


_critical = 0
_pending_signal = None


def _on_signal(signum, _frame):
    global _pending_signal
    if _critical:
        _pending_signal = signum
        return
    raise Cancelled(signum)


@contextlib.contextmanager
def critical():
    """Defer SIGINT/SIGTERM while a commit and its audit events are written."""
    global _critical
    _critical += 1
    try:
        yield
    finally:
        _critical -= 1
    if not _critical and _pending_signal is not None:
        raise Cancelled(_pending_signal)


def install_signal_handlers():
    for name in ("SIGINT", "SIGTERM"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, _on_signal)


def ignore_signals():
    for name in ("SIGINT", "SIGTERM"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_IGN)


def exit_status_for_signal(signum):
    return 128 + int(signum)


# --------------------------------------------------------------------------------------------
# Small helpers


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_ulid():
    n = ((int(time.time() * 1000) & ((1 << 48) - 1)) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(chars))


def is_text(s):
    """A str that is valid Unicode (no lone surrogates from undecodable argv or JSON)."""
    if not isinstance(s, str):
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def fingerprint(obj):
    data = json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(data.encode("ascii")).hexdigest()


def id_number(note_id):
    return int(note_id[1:])


def encode_cursor(after):
    raw = ("notes-cursor:1:%d" % after).encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(token):
    bad = AoiError("validation", "INVALID_CURSOR",
                   "The cursor is not one this tool issued; pass aoi:summary.next_cursor unchanged.",
                   field="cursor")
    if not re.match(r"^[A-Za-z0-9_-]{1,200}$", token):
        raise bad
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        raise bad
    m = re.match(r"^notes-cursor:1:(0|[1-9][0-9]{0,17})$", raw)
    if not m:
        raise bad
    return int(m.group(1))


def check_title(title, field="title"):
    if not is_text(title) or not title.strip():
        raise AoiError("validation", "INVALID_TITLE", "The title must be non-empty text.", field=field)
    if CONTROL_RE.search(title):
        raise AoiError("validation", "INVALID_TITLE",
                       "The title must be one line without control characters.", field=field)
    if len(title) > TITLE_MAX:
        raise AoiError("validation", "INVALID_TITLE",
                       "The title is longer than %d characters." % TITLE_MAX, field=field)


def check_body(body, field="body"):
    if not is_text(body):
        raise AoiError("validation", "INVALID_BODY", "The body must be text.", field=field)
    if BODY_CONTROL_RE.search(body):
        raise AoiError("validation", "INVALID_BODY",
                       "The body must not contain control characters other than tab and newline.",
                       field=field)
    if len(body) > BODY_MAX:
        raise AoiError("validation", "INVALID_BODY",
                       "The body is longer than %d characters." % BODY_MAX, field=field)


def check_id(note_id):
    if not is_text(note_id) or not ID_RE.match(note_id):
        raise AoiError("validation", "INVALID_ID",
                       "A note id is n followed by a number, e.g. n1.", field="id")


def check_key(key):
    if not is_text(key) or not key or len(key) > KEY_MAX or CONTROL_RE.search(key):
        raise AoiError("validation", "INVALID_IDEMPOTENCY_KEY",
                       "The idempotency key must be 1 to %d printable characters." % KEY_MAX,
                       field="idempotency_key")


# --------------------------------------------------------------------------------------------
# The store


def store_path():
    path = os.environ.get("NOTES_DB")
    if path:
        return path
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "notes", "notes.json")
    home = os.path.expanduser("~")
    if not home or home == "~" or not os.path.isabs(home):
        raise AoiError("config", "NO_STORE_LOCATION",
                       "Cannot place the store: set NOTES_DB, XDG_DATA_HOME or HOME.")
    return os.path.join(home, ".local", "share", "notes", "notes.json")


def empty_store():
    return {"format": "notes/1", "next_id": 1, "notes": [], "idempotency": {}}


def load_store(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return empty_store()
    except IsADirectoryError:
        raise AoiError("io", "STORE_UNREADABLE", "The store path is a directory.", target=path)
    except PermissionError:
        raise AoiError("io", "STORE_UNREADABLE", "The store cannot be read: permission denied.",
                       target=path)
    except OSError as e:
        raise AoiError("io", "STORE_UNREADABLE", "The store cannot be read: %s." % e.strerror,
                       target=path, retryable=False)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AoiError("io", "STORE_CORRUPT", "The store is not valid JSON.", target=path)
    ok = (isinstance(data, dict) and data.get("format") == "notes/1"
          and isinstance(data.get("notes"), list) and isinstance(data.get("next_id"), int)
          and isinstance(data.get("idempotency", {}), dict))
    if ok:
        for n in data["notes"]:
            if not (isinstance(n, dict) and isinstance(n.get("id"), str) and ID_RE.match(n["id"])
                    and isinstance(n.get("title"), str)):
                ok = False
                break
    if not ok:
        raise AoiError("io", "STORE_CORRUPT", "The store is not a notes/1 document.", target=path)
    data.setdefault("idempotency", {})
    return data


def save_store(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".notes.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8") + b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise AoiError("io", "STORE_WRITE_FAILED",
                       "The store cannot be written: %s." % (e.strerror or type(e).__name__),
                       target=path, exit_code=73)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def store_lock(path):
    """An advisory lock beside the store (POSIX only; elsewhere writes are unlocked)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise AoiError("io", "STORE_WRITE_FAILED",
                       "The store's lock cannot be created: %s." % (e.strerror or type(e).__name__),
                       target=path, exit_code=73)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AoiError("unavailable", "STORE_BUSY",
                                   "Another process holds the store's lock.", target=path,
                                   retry_after_ms=1000)
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def find_note(data, note_id):
    for n in data["notes"]:
        if n["id"] == note_id:
            return n
    return None


def note_fields(n):
    return {"id": n["id"], "title": n["title"], "body": n.get("body", ""),
            "created_at": n.get("created_at")}


def replay(data, key, command, fp):
    """The stored outcome of an earlier call with this idempotency key, or None (§14.4)."""
    if key is None:
        return None
    prior = data["idempotency"].get(key)
    if prior is None:
        return None
    if prior.get("command") != command or prior.get("fingerprint") != fp:
        raise AoiError("conflict", "IDEMPOTENCY_KEY_REUSED",
                       "This idempotency key was already used for a different request.",
                       field="idempotency_key")
    return prior.get("events", [])


def remember(data, key, command, fp, events):
    if key is not None:
        data["idempotency"][key] = {"command": command, "fingerprint": fp, "events": events,
                                    "at": now_iso()}


# --------------------------------------------------------------------------------------------
# Output: the AOI stream (machine mode) and plain text (human mode)


class Machine:
    def __init__(self, command):
        self.command = command
        self.run = new_ulid()
        self.seq = 0
        self.count = 0
        self.warnings = 0
        self.errors = 0
        self.t0 = time.monotonic()
        self.meta_done = False
        self.summary_done = False

    def _write(self, etype, fields):
        event = {"type": etype, "aoi": {"seq": self.seq, "run": self.run}}
        event.update(fields)
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            out = sys.stdout.buffer
            out.write(line.encode("utf-8"))
            out.flush()
        except BrokenPipeError:
            raise PipeClosed()
        except (OSError, ValueError, AttributeError):
            raise StdoutFailed()
        self.seq += 1

    def identity(self):
        return {"tool": TOOL, "tool_version": TOOL_VERSION, "aoi_version": AOI_VERSION,
                "schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION}

    def meta(self, properties=None):
        if self.meta_done:
            return
        fields = self.identity()
        if self.command:
            fields["command"] = self.command
        if properties:
            fields["properties"] = properties
        self._write("aoi:meta", fields)
        self.meta_done = True

    def domain(self, etype, fields):
        self.meta()
        self._write(etype, fields)
        self.count += 1

    def plan(self, action, target, detail):
        self.meta()
        self._write("aoi:plan", {"action": action, "target": target, "detail": detail})

    def error(self, err, scope="process"):
        self.meta()
        self._write("aoi:error", err.event_fields(scope))
        self.errors += 1

    def forward(self, etype, fields):
        """An upstream aoi:error / aoi:warning, re-enveloped, tagged with origin (§13.1)."""
        self.meta()
        self._write(etype, fields)
        if etype == "aoi:error":
            self.errors += 1
        else:
            self.warnings += 1

    def summary(self, ok, reason=None, partial=False, truncated=False, properties=None, **extra):
        if self.summary_done:
            return
        self.meta()
        fields = {"ok": ok}
        if reason is not None:
            fields["reason"] = reason
        fields.update({"event_count": self.seq + 1, "count": self.count,
                       "warning_count": self.warnings, "error_count": self.errors,
                       "partial": partial, "truncated": truncated})
        for k, v in extra.items():
            if v is not None or k == "next_cursor":
                fields[k] = v
        fields["elapsed_ms"] = int((time.monotonic() - self.t0) * 1000)
        fields.update(self.identity())
        if properties:
            fields["properties"] = properties
        self.summary_done = True
        self._write("aoi:summary", fields)


def _clean(s, keep_newlines=False):
    rx = BODY_CONTROL_RE if keep_newlines else CONTROL_RE
    return rx.sub("?", s.encode("utf-8", "replace").decode("utf-8"))


def _say(stream, text):
    try:
        stream.write(text + "\n")
        stream.flush()
    except BrokenPipeError:
        raise PipeClosed()
    except (OSError, ValueError, AttributeError):
        if stream is sys.stdout:
            raise StdoutFailed()


class Human:
    def __init__(self, command):
        self.command = command
        self.count = 0
        self.warnings = 0
        self.errors = 0
        self.summary_done = False

    def meta(self, properties=None):
        pass

    def domain(self, etype, f):
        self.count += 1
        if etype == "entry":
            _say(sys.stdout, "%-6s %s" % (f["id"], _clean(f["title"])))
        elif etype == "note":
            _say(sys.stdout, "%s  %s\ncreated %s\n" % (f["id"], _clean(f["title"]), f.get("created_at")))
            if f.get("body"):
                _say(sys.stdout, _clean(f["body"], keep_newlines=True))
        elif etype == "created":
            _say(sys.stdout, "created %s: %s" % (f["id"], _clean(f["title"])))
        elif etype == "deleted":
            _say(sys.stdout, "deleted %s: %s" % (f["id"], _clean(f["title"])))

    def plan(self, action, target, detail):
        _say(sys.stdout, "would %s %s: %s" % (action, target, _clean(detail)))

    def error(self, err, scope="process"):
        self.errors += 1
        where = " (input line %s)" % err.fields["line_number"] if err.fields.get("line_number") else ""
        _say(sys.stderr, "notes: error%s: %s" % (where, err.message))
        if err.fields.get("hint") and err.category != "usage":
            _say(sys.stderr, "hint: %s" % err.fields["hint"])

    def forward(self, etype, f):
        kind = "error" if etype == "aoi:error" else "warning"
        if kind == "error":
            self.errors += 1
        else:
            self.warnings += 1
        msg = f.get("message") if isinstance(f.get("message"), str) else "(no message)"
        _say(sys.stderr, "notes: upstream %s from %s: %s" % (kind, _clean(str(f.get("origin"))), _clean(msg)))

    def summary(self, ok, reason=None, partial=False, truncated=False, properties=None, **extra):
        if self.summary_done:
            return
        self.summary_done = True
        if self.command == "list":
            if self.count == 0 and not truncated:
                _say(sys.stdout, "No notes.")
            if truncated and extra.get("next_cursor"):
                _say(sys.stdout, "(more: notes list --cursor %s)" % extra["next_cursor"])
        elif self.command == "import":
            _say(sys.stdout, "%s %d note(s), %d error(s)." % (
                "imported" if ok or self.count else "import failed:", self.count, self.errors))
        if properties and properties.get("replayed"):
            _say(sys.stdout, "(replayed the earlier result of this idempotency key; nothing changed)")
        if reason == "cancelled":
            _say(sys.stderr, "notes: cancelled")


# --------------------------------------------------------------------------------------------
# Command line


GLOBAL_FLAGS = {
    "--output": ("output", "str"),
    "--format": ("output", "str"),
    "--schema-version": ("schema_version", "str"),
    "--no-color": ("no_color", "bool"),
    "--help": ("help", "bool"),
    "-h": ("help", "bool"),
    "--version": ("version", "bool"),
}

COMMAND_FLAGS = {
    "list": {"--limit": ("limit", "int"), "--cursor": ("cursor", "str")},
    "get": {"--id": ("id", "str")},
    "add": {"--title": ("title", "str"), "--body": ("body", "str"),
            "--idempotency-key": ("idempotency_key", "str"), "--dry-run": ("dry_run", "bool")},
    "delete": {"--id": ("id", "str"), "--confirm": ("confirm", "bool"),
               "--dry-run": ("dry_run", "bool"), "--idempotency-key": ("idempotency_key", "str")},
    "import": {"--input-jsonl": ("input_jsonl", "str"),
               "--continue-on-error": ("continue_on_error", "bool"),
               "--fail-fast": ("fail_fast", "bool"), "--dry-run": ("dry_run", "bool"),
               "--idempotency-key": ("idempotency_key", "str")},
    "schema": {},
    "capabilities": {},
    "input-schema": {"--command": ("command", "str")},
}
OPERANDS = {"get": ["id"], "delete": ["id"]}
RESOURCE_COMMANDS = ["list", "get", "add", "delete", "import"]
DISCOVERY_COMMANDS = ["schema", "capabilities", "input-schema"]

HELP = {
    None: """notes - a tiny note store (Machine Mode / AOI-CLI v1.0-alpha)

Usage: notes [--output human|jsonl|json] COMMAND [OPTIONS]

Commands:
  list            List notes (bounded: --limit N, default 20; --cursor TOKEN)
  get ID          Show one note
  add             Add a note: --title T [--body B] [--idempotency-key K] [--dry-run]
  delete ID       Delete a note: needs --confirm; --dry-run shows the plan
  import          Add notes from JSONL on stdin: --input-jsonl - [--continue-on-error]
  schema          Print the event schema (JSON Schema 2020-12)
  capabilities    Print the capability manifest
  input-schema    Print a command's input schema: --command NAME

Global options:
  --output jsonl  Machine mode: AOI JSONL events on stdout (alias: --format jsonl)
  --schema-version V   Select the event schema version (supported: 1, i.e. 1.0.0)
  --no-color      Accepted; notes never uses colour
  -h, --help      This help; COMMAND --help for one command
  --version       Print the version

Store: $NOTES_DB, else $XDG_DATA_HOME/notes/notes.json, else ~/.local/share/notes/notes.json.

Exit status: 0 ok; 1 not found, conflict, unsupported, or an upstream failure that a retry
will not fix; 64 usage (also: delete without --confirm); 65 invalid data; 69 store busy;
70 internal; 73 cannot write the store; 74 I/O (also: a cut upstream stream); 75 an upstream
failure that a retry may fix; 78 configuration; 130/143 interrupted (SIGINT/SIGTERM);
141 stdout closed. In machine mode the aoi:summary, not the exit status, is the outcome.""",
    "list": """Usage: notes list [--limit N] [--cursor TOKEN] [--output jsonl]

Lists notes in creation order, at most N (default 20, at most 1000). When more remain,
aoi:summary.truncated is true and aoi:summary.next_cursor continues: notes list --cursor TOKEN.
A store that does not exist yet lists as empty.""",
    "get": """Usage: notes get ID [--output jsonl]      (or: notes get --id ID)

Shows one note. An unknown ID is a not_found error (exit 1).""",
    "add": """Usage: notes add --title T [--body B] [--idempotency-key K] [--dry-run] [--output jsonl]

Adds a note and reports its stable id in a `created` event. With --idempotency-key, a repeat
of the same request returns the first result and adds nothing; the same key with a different
request is a conflict. --dry-run emits aoi:plan and writes nothing.""",
    "delete": """Usage: notes delete ID --confirm [--dry-run] [--idempotency-key K] [--output jsonl]
       (or: notes delete --id ID ...)

Deletes a note. Destructive: without --confirm it refuses (usage error CONFIRM_REQUIRED,
exit 64) and changes nothing. --dry-run emits aoi:plan and needs no --confirm.""",
    "import": """Usage: notes import --input-jsonl - [--continue-on-error | --fail-fast] [--dry-run]
                    [--idempotency-key K] [--output jsonl]

Reads JSONL on stdin: records {"title": T, "body": B} (body optional, no other keys), or the
AOI stream of another tool, whose domain events with a string `title` are imported (`body`,
else `snippet`, else `text` becomes the body).

Default: fail fast. Any malformed line aborts before anything is written (exit 65).
--continue-on-error: a malformed line is an item-scope aoi:error; the rest is imported and the
run ends ok:false, partial:true.

Upstream AOI events: aoi:meta and aoi:summary are not forwarded (the upstream identity goes to
aoi:summary.upstream); aoi:error and aoi:warning are forwarded with `origin` and counted. An
upstream error (or an upstream ok:false summary) fails the import with aoi:summary.caused_by,
unless --continue-on-error. An upstream stream that ends without its aoi:summary, or is cut,
is an io error and nothing is written.""",
    "schema": "Usage: notes schema [--output json|jsonl] [--schema-version V]\n\nPrints the event schema.",
    "capabilities": "Usage: notes capabilities [--output json|jsonl]\n\nPrints the capability manifest.",
    "input-schema": ("Usage: notes input-schema --command NAME [--output json|jsonl]\n\n"
                     "Prints the strict input schema of NAME (list, get, add, delete, import)."),
}


class Args:
    def __init__(self):
        self.values = {}
        self.command = None
        self.operands = []

    def get(self, name, default=None):
        return self.values.get(name, default)


def prescan_output(argv):
    """The --output/--format value, found before full parsing so usage errors honour it."""
    value = None
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            break
        if tok in ("--output", "--format") and i + 1 < len(argv):
            value = argv[i + 1]
            i += 2
            continue
        for flag in ("--output=", "--format="):
            if tok.startswith(flag):
                value = tok[len(flag):]
        i += 1
    return value


def prescan_command(argv):
    """The first token naming a known command, for aoi:meta.command on a usage error."""
    for tok in argv:
        if tok == "--":
            break
        if tok in COMMAND_FLAGS:
            return tok
    return None


def parse(argv):
    args = Args()
    i = 0
    only_operands = False
    while i < len(argv):
        tok = argv[i]
        i += 1
        if not is_text(tok):
            raise UsageError("INVALID_ARGUMENT", "An argument is not valid UTF-8 text.")
        if only_operands or tok == "-" or not tok.startswith("-"):
            if tok == "--" and not only_operands:
                only_operands = True
                continue
            if args.command is None and not only_operands:
                if tok not in COMMAND_FLAGS:
                    raise UsageError("UNKNOWN_COMMAND",
                                     "Unknown command; expected one of: %s." % ", ".join(COMMAND_FLAGS))
                args.command = tok
            else:
                args.operands.append(tok)
            continue
        if tok == "--":
            only_operands = True
            continue
        name, eq, inline = tok.partition("=")
        spec = GLOBAL_FLAGS.get(name) or COMMAND_FLAGS.get(args.command or "", {}).get(name)
        if spec is None:
            if args.command is None:
                raise UsageError("UNKNOWN_OPTION", "Unknown option %s (give the command first)." % _flag_name(name))
            raise UsageError("UNKNOWN_OPTION", "Unknown option %s for %s." % (_flag_name(name), args.command))
        dest, kind = spec
        if kind == "bool":
            if eq:
                raise UsageError("UNEXPECTED_VALUE", "Option %s takes no value." % name)
            args.values[dest] = True
            continue
        if eq:
            value = inline
        elif i < len(argv):
            value = argv[i]
            i += 1
        else:
            raise UsageError("MISSING_VALUE", "Option %s needs a value." % name)
        if not is_text(value):
            raise UsageError("INVALID_ARGUMENT", "The value of %s is not valid UTF-8 text." % name)
        if kind == "int":
            if not re.match(r"^[0-9]{1,9}$", value):
                raise UsageError("INVALID_VALUE", "Option %s needs a non-negative integer." % name,
                                 field=dest)
            value = int(value)
        args.values[dest] = value
    return args


def _flag_name(name):
    # An unknown flag's name is shown, never a value; a name that is not a plain flag is not shown.
    return name if re.match(r"^--?[A-Za-z0-9][A-Za-z0-9-]{0,40}$", name) else "(unrecognised)"


def bind_operands(args):
    """Operands → values. Every operand also has a flag (--id), since a consumer of the input
    schema without x-aoi passes every property as a flag."""
    names = OPERANDS.get(args.command, [])
    if len(args.operands) > len(names):
        raise UsageError("UNEXPECTED_OPERAND",
                         "%s takes %s." % (args.command, "no operands" if not names else
                                           "one operand (%s)" % names[0].upper()))
    for name, value in zip(names, args.operands):
        if name in args.values and args.values[name] != value:
            raise UsageError("CONFLICTING_ARGUMENTS", "Give the %s once: as operand or as --%s."
                             % (name.upper(), name))
        args.values[name] = value


def check_schema_version(args):
    v = args.get("schema_version")
    if v is None:
        return
    if not re.match(r"^1(\.0(\.0)?)?$", v):
        raise AoiError("unsupported", "SCHEMA_VERSION_UNSUPPORTED",
                       "This tool serves schema version 1.0.0 only (--schema-version 1).",
                       field="schema_version")


# --------------------------------------------------------------------------------------------
# Commands


def cmd_list(args, out):
    limit = args.get("limit", LIMIT_DEFAULT)
    if limit > LIMIT_MAX:
        raise UsageError("INVALID_VALUE", "--limit is at most %d." % LIMIT_MAX, field="limit")
    after = decode_cursor(args.get("cursor")) if args.get("cursor") is not None else 0
    data = load_store(store_path())
    rest = sorted((n for n in data["notes"] if id_number(n["id"]) > after),
                  key=lambda n: id_number(n["id"]))
    page = rest[:limit]
    for n in page:
        out.domain("entry", note_fields(n))
    truncated = len(rest) > len(page)
    cursor = None
    if truncated:
        cursor = encode_cursor(id_number(page[-1]["id"]) if page else after)
    return {"ok": True, "truncated": truncated, "next_cursor": cursor}


def cmd_get(args, out):
    note_id = args.get("id")
    if note_id is None:
        raise UsageError("MISSING_OPERAND", "get needs the note's ID (get ID, or get --id ID).")
    check_id(note_id)
    n = find_note(load_store(store_path()), note_id)
    if n is None:
        raise AoiError("not_found", "NOTE_NOT_FOUND", "No note has this id.", target=note_id)
    out.domain("note", note_fields(n))
    return {"ok": True}


def cmd_add(args, out):
    title = args.get("title")
    if title is None:
        raise UsageError("MISSING_OPTION", "add needs --title.")
    body = args.get("body", "")
    key = args.get("idempotency_key")
    check_title(title)
    check_body(body)
    if key is not None:
        check_key(key)
    fp = fingerprint({"title": title, "body": body})
    path = store_path()
    if args.get("dry_run"):
        data = load_store(path)
        prior = replay(data, key, "add", fp)
        if prior is not None:
            out.plan("none", prior[0]["fields"]["id"] if prior else "notes",
                     "idempotency key already used: a real run replays the earlier result")
        else:
            out.plan("create", "notes", "add note %s with title %s (%d characters of body)"
                     % ("n%d" % data["next_id"], json.dumps(title, ensure_ascii=False), len(body)))
        return {"ok": True, "properties": {"dry_run": True}}
    if key is not None:  # a replay reads the store and touches nothing on disk
        prior = replay(load_store(path), key, "add", fp)
        if prior is not None:
            for ev in prior:
                out.domain(ev["type"], ev["fields"])
            return {"ok": True, "properties": {"replayed": True}}
    with store_lock(path):
        data = load_store(path)
        prior = replay(data, key, "add", fp)
        if prior is not None:
            for ev in prior:
                out.domain(ev["type"], ev["fields"])
            return {"ok": True, "properties": {"replayed": True}}
        note = {"id": "n%d" % data["next_id"], "title": title, "body": body, "created_at": now_iso()}
        data["next_id"] += 1
        data["notes"].append(note)
        events = [{"type": "created", "fields": note_fields(note)}]
        remember(data, key, "add", fp, events)
        with critical():
            save_store(path, data)
            out.domain("created", note_fields(note))
    return {"ok": True}


def cmd_delete(args, out):
    note_id = args.get("id")
    if note_id is None:
        raise UsageError("MISSING_OPERAND", "delete needs the note's ID (delete ID, or delete --id ID).")
    dry = args.get("dry_run", False)
    if not dry and not args.get("confirm"):
        shown = note_id if is_text(note_id) and ID_RE.match(note_id) else None
        raise AoiError("usage", "CONFIRM_REQUIRED",
                       "delete is destructive and needs --confirm (or --dry-run to see the plan).",
                       reason="denied", target=shown,
                       hint="notes delete %s --confirm" % (shown or "ID"))
    check_id(note_id)
    key = args.get("idempotency_key")
    if key is not None:
        check_key(key)
    fp = fingerprint({"id": note_id})
    path = store_path()
    if dry:
        data = load_store(path)
        prior = replay(data, key, "delete", fp)
        if prior is not None:
            out.plan("none", note_id, "idempotency key already used: a real run replays the earlier result")
            return {"ok": True, "properties": {"dry_run": True}}
        n = find_note(data, note_id)
        if n is None:
            raise AoiError("not_found", "NOTE_NOT_FOUND", "No note has this id.", target=note_id)
        out.plan("delete", note_id, "delete note %s titled %s" % (note_id, json.dumps(n["title"], ensure_ascii=False)))
        return {"ok": True, "properties": {"dry_run": True}}
    # Decide without the lock first: a replay or a missing note touches nothing on disk.
    for locked in (False, True):
        with (store_lock(path) if locked else contextlib.nullcontext()):
            data = load_store(path)
            prior = replay(data, key, "delete", fp)
            if prior is not None:
                for ev in prior:
                    out.domain(ev["type"], ev["fields"])
                return {"ok": True, "properties": {"replayed": True}}
            n = find_note(data, note_id)
            if n is None:
                raise AoiError("not_found", "NOTE_NOT_FOUND", "No note has this id.", target=note_id)
            if not locked:
                continue
            data["notes"].remove(n)
            fields = {"id": n["id"], "title": n["title"]}
            remember(data, key, "delete", fp, [{"type": "deleted", "fields": fields}])
            with critical():
                save_store(path, data)
                out.domain("deleted", fields)
    return {"ok": True}


# ---- import


FRAMEWORK_TYPES = {"aoi:meta", "aoi:summary", "aoi:error", "aoi:warning", "aoi:plan",
                   "aoi:progress", "aoi:heartbeat", "aoi:check"}


def _no_dupes(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError("duplicate key")
        obj[k] = v
    return obj


def _reject_constant(_name):
    raise ValueError("not JSON")


def _all_text(v):
    if isinstance(v, str):
        return is_text(v)
    if isinstance(v, dict):
        return all(is_text(k) and _all_text(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_all_text(x) for x in v)
    return True


def _bad_line(code, message, line_number, field=None):
    return AoiError("validation", code, message, line_number=line_number, field=field)


def _caused_by(err, origin):
    cb = {"origin": err.get("origin") if isinstance(err.get("origin"), str) else origin,
          "category": err.get("category") if isinstance(err.get("category"), str) else "internal",
          "code": err.get("code") if isinstance(err.get("code"), str) and CODE_RE.match(err["code"]) else "UPSTREAM_ERROR",
          "retryable": err.get("retryable") if isinstance(err.get("retryable"), bool) else False}
    ra = err.get("retry_after_ms")
    if cb["retryable"] and isinstance(ra, int) and not isinstance(ra, bool) and ra >= 0:
        cb["retry_after_ms"] = ra
    return cb


REASON_TO_CATEGORY = {"cancelled": "cancelled", "timeout": "timeout", "denied": "authz"}


def read_stdin():
    if sys.stdin is None:
        return b""
    try:
        stream = sys.stdin.buffer
        if stream.isatty():
            raise AoiError("usage", "STDIN_IS_TERMINAL",
                           "import --input-jsonl - reads standard input, which is a terminal; pipe JSONL into it.",
                           hint="producer --output jsonl | notes import --input-jsonl - --output jsonl")
        return stream.read()
    except (OSError, ValueError) as e:
        if isinstance(e, OSError) and e.errno == 9:  # EBADF: stdin closed
            return b""
        raise AoiError("io", "STDIN_READ_FAILED", "Standard input cannot be read.", target="-")


def scan_input(raw):
    """Classify every line of the input: (items, what the upstream stream said about itself).

    An AOI stream (one with any aoi: event) must end in a line feed and an aoi:summary whose
    event_count matches its lines; a plain JSONL file may omit the last line feed (JSON Lines)."""
    items = []  # (kind, line_number, payload)
    up = {"aoi": False, "identity": None, "summary": None, "lines": 0, "integrity": None}

    def integrity(code, message, ln=None):
        if up["integrity"] is None:
            up["integrity"] = AoiError("io", code, message, line_number=ln, target="-")

    def classify(ln, bline):
        try:
            obj = json.loads(bline.decode("utf-8"), object_pairs_hook=_no_dupes,
                             parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return ("bad", ln, _bad_line("INPUT_JSONL_PARSE_ERROR", "Invalid JSON on input line %d." % ln, ln))
        if not isinstance(obj, dict):
            return ("bad", ln, _bad_line("INPUT_RECORD_INVALID", "Input line %d is not a JSON object." % ln, ln))
        if not _all_text(obj):
            return ("bad", ln, _bad_line("INPUT_RECORD_INVALID",
                                         "Input line %d holds a string that is not valid Unicode." % ln, ln))
        etype = obj.get("type")
        if "type" in obj and not isinstance(etype, str):
            return ("bad", ln, _bad_line("INPUT_RECORD_INVALID",
                                         "Input line %d has a type that is not a string." % ln, ln, "type"))
        if etype is None:
            return ("record", ln, obj)
        if not etype.startswith("aoi:"):
            return ("event", ln, obj)  # an upstream domain event: data when it has a title (§13)
        up["aoi"] = True
        if etype == "aoi:meta":
            if up["identity"] is not None or up["lines"] != 1:
                integrity("UPSTREAM_META_MISPLACED",
                          "The upstream stream has an aoi:meta that is not its first event.", ln)
            up["identity"] = {k: obj[k] for k in ("tool", "tool_version", "schema_name", "schema_version")
                              if isinstance(obj.get(k), str)}
            return None
        if etype == "aoi:summary":
            up["summary"] = obj
            return None
        if etype in ("aoi:error", "aoi:warning"):
            return ("forward", ln, obj)
        if etype not in FRAMEWORK_TYPES:
            return ("unknown", ln, obj)
        return None  # aoi:plan, aoi:progress, aoi:heartbeat, aoi:check: the upstream's business

    lines = raw.split(b"\n")
    cut = lines.pop()  # b"" when the input ends in a line feed
    for idx, bline in enumerate(lines):
        if not bline.strip():
            continue
        up["lines"] += 1
        if up["summary"] is not None:
            integrity("UPSTREAM_AFTER_SUMMARY", "The upstream stream continues after its aoi:summary.", idx + 1)
        item = classify(idx + 1, bline)
        if item is not None:
            items.append(item)
    if cut.strip():
        ln = len(lines) + 1
        if up["aoi"] or b'"aoi:' in cut:
            up["aoi"] = True
            integrity("UPSTREAM_TRUNCATED", "The upstream stream's last line has no line feed: it was cut.", ln)
        else:
            item = classify(ln, cut)
            if item is not None:
                items.append(item)
    if up["aoi"]:
        if up["summary"] is None:
            integrity("UPSTREAM_INCOMPLETE", "The upstream stream ended without its aoi:summary.")
        else:
            ec = up["summary"].get("event_count")
            if isinstance(ec, int) and not isinstance(ec, bool) and ec != up["lines"]:
                integrity("UPSTREAM_INCOMPLETE", "The upstream stream has %d lines but its aoi:summary counts %d."
                          % (up["lines"], ec))
    return items, up


def record_from(kind, ln, obj):
    """A (title, body) pair, or an AoiError for a bad record, or None for an event to ignore."""
    if kind == "event":
        title = obj.get("title")
        if not isinstance(title, str):
            return None
        body = ""
        for k in ("body", "snippet", "text"):
            if isinstance(obj.get(k), str):
                body = obj[k]
                break
    else:
        extra = sorted(k for k in obj if k not in ("title", "body"))
        if extra:
            return _bad_line("INPUT_RECORD_INVALID", "Input line %d has an unknown field." % ln,
                             ln, extra[0] if re.match(r"^[A-Za-z0-9_]{1,64}$", extra[0]) else None)
        title = obj.get("title")
        if title is None:
            return _bad_line("INPUT_RECORD_INVALID", "Input line %d has no title." % ln, ln, "title")
        if not isinstance(title, str):
            return _bad_line("INPUT_RECORD_INVALID", "Input line %d: title is not a string." % ln, ln, "title")
        body = obj.get("body", "")
        if not isinstance(body, str):
            return _bad_line("INPUT_RECORD_INVALID", "Input line %d: body is not a string." % ln, ln, "body")
    try:
        check_title(title)
        check_body(body)
    except AoiError as e:
        e.message = "Input line %d: %s" % (ln, e.message[0].lower() + e.message[1:])
        e.fields["line_number"] = ln
        return e
    return (title, body)


def cmd_import(args, out):
    if args.get("input_jsonl") is None:
        raise UsageError("MISSING_OPTION", "import needs --input-jsonl - (JSONL on standard input).")
    if args.get("input_jsonl") != "-":
        raise UsageError("INVALID_VALUE", "--input-jsonl takes - (standard input) only.",
                         field="input_jsonl")
    if args.get("fail_fast") and args.get("continue_on_error"):
        raise UsageError("CONFLICTING_ARGUMENTS", "Give --fail-fast or --continue-on-error, not both.")
    cont = bool(args.get("continue_on_error"))
    dry = bool(args.get("dry_run"))
    key = args.get("idempotency_key")
    if key is not None:
        check_key(key)
    path = store_path()
    out.meta({"input_mode": "jsonl", "continue_on_error": cont})

    items, up = scan_input(read_stdin())
    if up["integrity"] is not None:
        raise up["integrity"]  # a cut or incomplete upstream: write nothing, in either mode
    origin = (up["identity"] or {}).get("tool") or "upstream"
    upstream = up["identity"] or None
    input_count = sum(1 for k, _, _ in items if k in ("record", "event", "bad"))

    records = []         # (line_number, title, body)
    upstream_errors = []
    local_failures = 0
    unknown_framework = False
    for kind, ln, payload in items:
        if kind == "forward":
            fields = {k: v for k, v in payload.items() if k not in ("type", "aoi")}
            if not isinstance(fields.get("origin"), str):
                fields = dict([("origin", origin)] + list(fields.items()))
            out.forward(payload["type"], fields)
            if payload["type"] == "aoi:error":
                upstream_errors.append(fields)
                if not cont:
                    return _upstream_failure(fields, origin, upstream, input_count)
            continue
        if kind == "unknown":
            unknown_framework = True
            err = AoiError("unsupported", "UNKNOWN_UPSTREAM_EVENT",
                           "Input line %d is a framework event this version cannot interpret." % ln,
                           line_number=ln)
            if not cont:
                raise err
            out.error(err, scope="item")
            local_failures += 1
            continue
        rec = payload if kind == "bad" else record_from(kind, ln, payload)
        if rec is None:
            continue  # a domain event with no title: not a note, safe to ignore (§13)
        if isinstance(rec, AoiError):
            if not cont:
                raise rec  # fail fast: nothing has been written
            out.error(rec, scope="item")
            local_failures += 1
            continue
        records.append((ln,) + rec)

    summ = up["summary"]
    if summ is not None and summ.get("ok") is False and not upstream_errors and not cont:
        cb = summ.get("caused_by")
        if not isinstance(cb, dict):
            reason = summ.get("reason")
            cb = {"category": REASON_TO_CATEGORY.get(reason, "internal"), "code": "UPSTREAM_FAILED",
                  "retryable": reason == "timeout"}
        return _upstream_failure(cb, origin, upstream, input_count)

    fp = fingerprint({"records": [[t, b] for _, t, b in records], "continue_on_error": cont})
    extra = {"input_count": input_count, "upstream": upstream}
    if dry:
        data = load_store(path)
        prior = replay(data, key, "import", fp)
        if prior is not None:
            out.plan("none", "notes", "idempotency key already used: a real run replays the earlier result")
        else:
            for ln, title, body in records:
                out.plan("create", "notes", "add note from input line %d with title %s"
                         % (ln, json.dumps(title, ensure_ascii=False)))
        return _import_result(out, local_failures, unknown_framework, extra, {"dry_run": True})
    if key is not None:  # a replay reads the store and touches nothing on disk
        prior = replay(load_store(path), key, "import", fp)
        if prior is not None:
            for ev in prior:
                out.domain(ev["type"], ev["fields"])
            return _import_result(out, local_failures, unknown_framework, extra, {"replayed": True})
    if records:  # nothing to add: nothing is written, not even the key
        with store_lock(path):
            data = load_store(path)
            prior = replay(data, key, "import", fp)
            if prior is not None:
                for ev in prior:
                    out.domain(ev["type"], ev["fields"])
                return _import_result(out, local_failures, unknown_framework, extra, {"replayed": True})
            events = []
            stamp = now_iso()
            for ln, title, body in records:
                note = {"id": "n%d" % data["next_id"], "title": title, "body": body, "created_at": stamp}
                data["next_id"] += 1
                data["notes"].append(note)
                events.append({"type": "created", "fields": note_fields(note)})
            remember(data, key, "import", fp, events)
            with critical():
                save_store(path, data)
                for ev in events:
                    out.domain(ev["type"], ev["fields"])
    return _import_result(out, local_failures, unknown_framework, extra, None)


def _import_result(out, local_failures, unknown_framework, extra, properties):
    failed = local_failures > 0 or unknown_framework
    res = {"ok": not failed, "partial": failed and out.count > 0, "properties": properties}
    res.update(extra)
    if failed:
        res["reason"] = "failed"
        res["exit"] = 65
    return res


def _upstream_failure(err, origin, upstream, input_count):
    cb = _caused_by(err, origin)
    return {"ok": False, "reason": "failed", "caused_by": cb, "input_count": input_count,
            "upstream": upstream, "exit": 75 if cb["retryable"] else 1}


HANDLERS = {"list": cmd_list, "get": cmd_get, "add": cmd_add, "delete": cmd_delete,
            "import": cmd_import}


# --------------------------------------------------------------------------------------------
# Discovery documents


def _domain_note(required):
    return {"type": "object", "required": required, "properties": {
        "id": {"type": "string", "pattern": ID_RE.pattern, "description": "Stable note id"},
        "title": {"type": "string"},
        "body": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
    }}


EVENT_TYPES = ["aoi:meta", "aoi:summary", "aoi:error", "aoi:warning", "aoi:plan",
               "entry", "note", "created", "deleted"]


def event_schema():
    identity = {
        "tool": {"type": "string"}, "tool_version": {"type": "string"},
        "aoi_version": {"type": "string"}, "schema_name": {"type": "string"},
        "schema_version": {"type": "string"},
    }
    ident_req = ["tool", "tool_version", "aoi_version", "schema_name", "schema_version"]
    diag = {
        "category": {"type": "string"},
        "code": {"type": "string", "pattern": CODE_RE.pattern},
        "message": {"type": "string", "pattern": "^[^\\n\\r]*$"},
        "retryable": {"type": "boolean"},
        "retry_after_ms": {"type": "integer", "minimum": 0},
        "domain": {"type": "string"}, "origin": {"type": "string"},
        "scope": {"enum": ["process", "item"]}, "target": {"type": "string"},
        "item_index": {"type": "integer", "minimum": 0},
        "line_number": {"type": "integer", "minimum": 0},
        "field": {"type": "string"}, "hint": {"type": "string"}, "docs": {"type": "string"},
        "details": {"type": "object"}, "properties": {"type": "object"},
        "wrapped": {"type": "object", "required": ["protocol"],
                    "properties": {"protocol": {"enum": ["http", "grpc", "exit"]}}},
    }
    defs = {
        "envelope": {"type": "object", "required": ["seq", "run"], "properties": {
            "seq": {"type": "integer", "minimum": 0}, "run": {"type": "string", "minLength": 1},
            "t": {"type": "number", "minimum": 0}, "trace_id": {"type": "string"}}},
        "meta": {"type": "object", "required": ["type"] + ident_req,
                 "properties": dict(identity, command={"type": "string"},
                                    args_redacted={"type": "boolean"},
                                    input_fingerprint={"type": "string"},
                                    properties={"type": "object"})},
        "summary": {
            "type": "object",
            "required": ["ok", "event_count", "count", "warning_count", "error_count",
                         "partial", "truncated"] + ident_req,
            "properties": dict(identity, **{
                "ok": {"type": "boolean"},
                "reason": {"enum": ["failed", "cancelled", "timeout", "denied", "skipped"]},
                "event_count": {"type": "integer", "minimum": 1},
                "count": {"type": "integer", "minimum": 0},
                "input_count": {"type": "integer", "minimum": 0},
                "warning_count": {"type": "integer", "minimum": 0},
                "error_count": {"type": "integer", "minimum": 0},
                "partial": {"type": "boolean"}, "truncated": {"type": "boolean"},
                "next_cursor": {"type": ["string", "null"]},
                "elapsed_ms": {"type": "integer", "minimum": 0},
                "caused_by": {"type": "object", "required": ["category", "code", "retryable"],
                              "properties": {k: diag[k] for k in ("origin", "category", "code",
                                                                   "retryable", "retry_after_ms")}},
                "upstream": {"type": "object", "properties": {
                    k: {"type": "string"} for k in ("tool", "tool_version", "schema_name", "schema_version")}},
                "properties": {"type": "object"},
            }),
            "allOf": [
                {"if": {"properties": {"ok": {"const": False}}, "required": ["ok"]},
                 "then": {"required": ["reason"],
                          "properties": {"reason": {"enum": ["failed", "cancelled", "timeout", "denied"]}}}},
                {"if": {"properties": {"ok": {"const": True}}, "required": ["ok"]},
                 "then": {"properties": {"reason": {"const": "skipped"}}}},
            ],
        },
        "error": {
            "type": "object", "required": ["category", "code", "message", "retryable"],
            "properties": diag,
            "allOf": [
                {"if": {"not": {"required": ["origin"]}},
                 "then": {"properties": {"category": {"enum": CATEGORIES}}}},
                {"if": {"properties": {"retryable": {"const": False}}, "required": ["retryable"]},
                 "then": {"not": {"required": ["retry_after_ms"]}}},
            ],
        },
        "warning": {"type": "object", "properties": diag},
        "plan": {"type": "object", "required": ["action", "target"], "properties": {
            "action": {"enum": ["create", "delete", "none"]},
            "target": {"type": "string"}, "detail": {"type": "string"}}},
        "entry": _domain_note(["id", "title", "body", "created_at"]),
        "note": _domain_note(["id", "title", "body", "created_at"]),
        "created": _domain_note(["id", "title", "body", "created_at"]),
        "deleted": {"type": "object", "required": ["id", "title"], "properties": {
            "id": {"type": "string", "pattern": ID_RE.pattern}, "title": {"type": "string"}}},
    }
    by_type = {"aoi:meta": "meta", "aoi:summary": "summary", "aoi:error": "error",
               "aoi:warning": "warning", "aoi:plan": "plan", "entry": "entry", "note": "note",
               "created": "created", "deleted": "deleted"}
    all_of = [{"type": "object", "required": ["type", "aoi"], "properties": {
        "type": {"type": "string"}, "aoi": {"$ref": "#/$defs/envelope"}}}]
    for etype in EVENT_TYPES:
        all_of.append({"if": {"properties": {"type": {"const": etype}}, "required": ["type"]},
                       "then": {"$ref": "#/$defs/" + by_type[etype]}})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "notes events",
        "description": ("Every event notes emits in machine mode (--output jsonl). entry: one note "
                        "in a list; note: the note get shows; created / deleted: the audit of a "
                        "mutation, with the note's stable id."),
        "type": "object",
        "allOf": all_of,
        "$defs": defs,
        "x-aoi": {"schema_name": SCHEMA_NAME, "schema_version": SCHEMA_VERSION,
                  "aoi_version": AOI_VERSION, "event_types": EVENT_TYPES},
    }


def _id_property():
    return {"type": "string", "pattern": ID_RE.pattern,
            "description": "The note's id, e.g. n1 (also accepted as the operand: COMMAND ID)"}


def _key_property():
    return {"type": "string", "minLength": 1, "maxLength": KEY_MAX,
            "description": "Replay protection: a repeat with the same key returns the first result"}


def input_schema(command):
    dry = {"type": "boolean", "default": False, "description": "Emit aoi:plan and change nothing"}
    props, required, desc = {}, [], HELP[command].split("\n\n", 1)[-1].replace("\n", " ")
    defs = None
    if command == "list":
        props = {"limit": {"type": "integer", "minimum": 0, "maximum": LIMIT_MAX,
                           "default": LIMIT_DEFAULT, "description": "At most this many notes"},
                 "cursor": {"type": "string", "description": "aoi:summary.next_cursor of the previous page"}}
    elif command == "get":
        props, required = {"id": _id_property()}, ["id"]
    elif command == "add":
        props = {"title": {"type": "string", "minLength": 1, "maxLength": TITLE_MAX},
                 "body": {"type": "string", "maxLength": BODY_MAX, "default": ""},
                 "idempotency_key": _key_property(), "dry_run": dry}
        required = ["title"]
    elif command == "delete":
        props = {"id": _id_property(),
                 "confirm": {"type": "boolean", "default": False,
                             "description": "Required to delete (destructive)"},
                 "dry_run": dry, "idempotency_key": _key_property()}
        required = ["id"]
    elif command == "import":
        props = {"input_jsonl": {"const": "-", "description": "Read JSONL records from standard input"},
                 "continue_on_error": {"type": "boolean", "default": False,
                                       "description": "A malformed line is an item error; import the rest"},
                 "fail_fast": {"type": "boolean", "default": True,
                               "description": "The default: a malformed line aborts before any write"},
                 "dry_run": dry, "idempotency_key": _key_property()}
        required = ["input_jsonl"]
        defs = {"record": {"title": "notes import record (one JSONL line)", "type": "object",
                           "additionalProperties": False, "required": ["title"],
                           "properties": {"title": {"type": "string", "minLength": 1, "maxLength": TITLE_MAX},
                                          "body": {"type": "string", "maxLength": BODY_MAX}}}}
    props["schema_version"] = {"type": "string", "enum": ["1", "1.0", "1.0.0"],
                               "description": "Event schema version to emit (only 1.0.0 is served)"}
    doc = {"$schema": "https://json-schema.org/draft/2020-12/schema",
           "$id": "https://schemas.example.com/notes/input/%s/1.0.0/schema.json" % command,
           "title": "notes " + command, "description": desc, "type": "object",
           "additionalProperties": False, "properties": props, "required": required}
    if defs:
        doc["$defs"] = defs
    return doc


def capabilities():
    def cmd(name, summary, read_only, event_types, examples, **kw):
        c = {"name": name, "summary": summary, "read_only": read_only,
             "destructive": kw.get("destructive", False),
             "requires_confirm": kw.get("requires_confirm", False),
             "supports_dry_run": kw.get("supports_dry_run", False),
             "supports_idempotency_key": kw.get("supports_idempotency_key", False),
             "bounded": kw.get("bounded", False), "supports_cursor": kw.get("supports_cursor", False),
             "unbounded": False, "event_types": event_types,
             "input_modes": kw.get("input_modes", ["args"]), "examples": examples}
        for key in ("additive", "input_default", "setup", "stdin"):
            if key in kw:
                c[key] = kw[key]
        return c

    # The examples run in a fresh, empty store (docs/discovery.md `setup`): the first note
    # added there is always n1.
    seed = [["add", "--title", "Seed note", "--body", "for the examples"]]

    fw = ["aoi:meta", "aoi:error", "aoi:summary"]
    return {
        "tool": TOOL, "tool_version": TOOL_VERSION, "aoi_versions": [AOI_VERSION],
        "outputs": ["jsonl"], "machine_flag": ["--output", "jsonl"],
        "schemas": [{"name": SCHEMA_NAME, "versions": [SCHEMA_VERSION], "default": SCHEMA_VERSION}],
        "auth": "none: a local file ($NOTES_DB, else $XDG_DATA_HOME/notes/notes.json)",
        "commands": [
            cmd("list", "List notes, bounded (--limit, --cursor)", True, fw[:1] + ["entry"] + fw[1:],
                [["list"], ["list", "--limit", "2"]], bounded=True, supports_cursor=True,
                setup=seed + [["add", "--title", "Second note"], ["add", "--title", "Third note"]]),
            cmd("get", "Show one note by id", True, fw[:1] + ["note"] + fw[1:], [["get", "--id", "n1"]],
                setup=seed),
            cmd("add", "Add a note; reports its stable id", False,
                fw[:1] + ["created", "aoi:plan"] + fw[1:],
                [["add", "--title", "Buy milk", "--body", "Two litres"],
                 ["add", "--title", "Call the plumber", "--idempotency-key", "call-plumber-1"],
                 ["add", "--title", "Draft", "--dry-run"]],
                supports_dry_run=True, supports_idempotency_key=True, additive=True),
            cmd("delete", "Delete a note (destructive: needs --confirm)", False,
                fw[:1] + ["deleted", "aoi:plan"] + fw[1:],
                [["delete", "--id", "n1", "--confirm"], ["delete", "--id", "n1", "--dry-run"]],
                destructive=True, requires_confirm=True, supports_dry_run=True,
                supports_idempotency_key=True, setup=seed),
            cmd("import", "Add notes from JSONL records or an upstream AOI stream on stdin", False,
                ["aoi:meta", "created", "aoi:plan", "aoi:warning", "aoi:error", "aoi:summary"],
                [["import", "--input-jsonl", "-"], ["import", "--input-jsonl", "-", "--continue-on-error"]],
                supports_dry_run=True, supports_idempotency_key=True, additive=True,
                input_modes=["args", "jsonl"], input_default="fail_fast",
                stdin='{"title": "Imported note", "body": "from stdin"}\n'),
        ],
    }


def print_document(doc, output):
    if output == "jsonl":
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(doc, ensure_ascii=False, indent=2)
    try:
        sys.stdout.buffer.write((text + "\n").encode("utf-8"))
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise PipeClosed()
    except (OSError, ValueError, AttributeError):
        raise StdoutFailed()


# --------------------------------------------------------------------------------------------
# Main


def _quiet_exit(code):
    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    os._exit(code)


def main(argv):
    install_signal_handlers()
    output = prescan_output(argv)
    machine = output in ("jsonl", "json")
    out = None
    try:
        if output is not None and output not in ("jsonl", "json", "human", "text"):
            machine = False
            raise UsageError("INVALID_OUTPUT", "--output takes human, jsonl or json.")
        args = parse(argv)
        if args.get("help"):
            _say(sys.stdout, HELP.get(args.command, HELP[None]))
            return 0
        if args.get("version"):
            _say(sys.stdout, "%s %s (AOI-CLI %s, schema %s %s)" % (
                TOOL, TOOL_VERSION, AOI_VERSION, SCHEMA_NAME, SCHEMA_VERSION))
            return 0
        if args.command is None:
            raise UsageError("MISSING_COMMAND", "No command given.")
        bind_operands(args)
        check_schema_version(args)
        if args.command in DISCOVERY_COMMANDS:
            print_document(discovery_document(args), "jsonl" if output == "jsonl" else "json")
            return 0
        out = Machine(args.command) if machine else Human(args.command)
        if args.command != "import":  # import's aoi:meta carries its input mode
            out.meta()
        res = HANDLERS[args.command](args, out)
        code = res.pop("exit", 0)
        ignore_signals()
        out.summary(**res)
        return code
    except AoiError as e:
        if out is None:
            command = prescan_command(argv) if machine else None
            out = Machine(command) if machine else Human(command)
        if not machine and e.category == "usage":
            _say(sys.stderr, "notes: usage error: %s" % e.message)
            _say(sys.stderr, "Try 'notes --help'.")
        else:
            out.error(e)
        ignore_signals()
        out.summary(ok=False, reason=e.reason)
        return e.exit_code
    except Cancelled as c:
        ignore_signals()
        if out is None and machine:
            out = Machine(prescan_command(argv))
        if out is not None:
            out.summary(ok=False, reason="cancelled")
        else:
            _say(sys.stderr, "notes: cancelled")
        return exit_status_for_signal(c.signum)
    except Exception as e:  # a bug: a structured internal error, never a traceback on stdout
        ignore_signals()
        err = AoiError("internal", "INTERNAL_ERROR", "Unexpected %s." % type(e).__name__)
        if os.environ.get("NOTES_DEBUG"):
            import traceback
            traceback.print_exc()
        if machine:
            if out is None:
                out = Machine(prescan_command(argv))
            out.error(err)
            out.summary(ok=False, reason="failed")
        else:
            _say(sys.stderr, "notes: internal error: %s" % type(e).__name__)
        return 70


def discovery_document(args):
    if args.command == "schema":
        return event_schema()
    if args.command == "capabilities":
        return capabilities()
    name = args.get("command")
    if name is None:
        raise UsageError("MISSING_OPTION", "input-schema needs --command NAME.")
    if name not in RESOURCE_COMMANDS:
        raise UsageError("UNKNOWN_COMMAND", "input-schema knows: %s." % ", ".join(RESOURCE_COMMANDS),
                         field="command")
    return input_schema(name)


def run():
    try:
        code = main(sys.argv[1:])
        sys.stdout.flush()
    except PipeClosed:
        _quiet_exit(EXIT_BROKEN_PIPE)
    except BrokenPipeError:
        _quiet_exit(EXIT_BROKEN_PIPE)
    except StdoutFailed:
        with contextlib.suppress(Exception):
            sys.stderr.write("notes: error: standard output cannot be written\n")
            sys.stderr.flush()
        _quiet_exit(74)
    except Cancelled as c:  # a second signal while reporting the outcome
        _quiet_exit(exit_status_for_signal(c.signum))
    except BaseException:  # never a traceback
        _quiet_exit(70)
    sys.exit(code)


if __name__ == "__main__":
    run()
