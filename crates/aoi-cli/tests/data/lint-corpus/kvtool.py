"""kvtool: a key-value store with a Machine Mode (AOI-CLI v1.0-alpha) interface, written by hand
in plain Python 3.9+ (standard library only, no aoi SDK), for aoi lint's held-out corpus.

A record's key is given as `--name K` and reported as the event field `key`: a property named
`key` would be a secret by docs/discovery.md's default (§11's list), and there is no x-aoi here.

The store is `kvstore.json` in the current directory; `login` keeps its credential in
`kvtool-credentials.json` beside it. Human output by default; `--output jsonl` (or
`--format jsonl`) selects the AOI event stream.

Compatibility rules: the machine output is governed by the event schema `io.example.kvtool.events`
(`kvtool schema`). Two versions are served: 2.0.0 (the default) and 1.0.0, chosen with
`--schema-version`. 2.0.0 replaced 1.0.0's `modified` (Unix seconds) by `updated_at` (RFC 3339),
a breaking change, hence the major. Adding an event type or an optional field is a minor change;
renaming or removing one, or changing a field's type or meaning, is a major change. Error codes
never change once published.

`main(fault)` runs the tool with one fault switched on (each wrapper `py-kv-<name>.py` names
one); "clean", "replayed" and "natural-key" are conforming:

- clean: conforming.
- replayed: conforming; a replay marks its domain events "replayed": true (declared in the schema).
- natural-key: conforming; resources are identified by their key (a documented natural key,
  §14.4), so mutation events carry `key` and no separate id.
- ro-writes-on-cursor: `list --cursor` writes a resume file (check 1, read_only).
- ghost-command: capabilities lists `export`, which the tool does not have (check 1).
- flag-differs: `--capabilities`, the flag form of `capabilities` (§3), lists one command fewer
  than the subcommand (check 1). The clean tool answers both flags with the subcommands'
  documents.
- closed-events: conforming, but the schema closes the record events (`entry`, `created`,
  `updated`) with `additionalProperties: false` (§10.3 SHOULD: advice, no failure).
- file-id: the event schema's `$id` is a `file://` URI and the schema does not say it is
  local-only (§10.2, check 1).
- remote-ref: the schema has a `$ref` to a remote document (check 1; check 4 cannot run).
- prose-stdout: `put` prints a coloured confirmation line on stdout in machine mode (check 2).
- exit0-not-ok: `get` exits 0 with aoi:summary ok:false (check 3).
- schema-violation: `list`'s summary carries `properties.store_keys` as a string, where the
  schema says integer (check 4).
- confirm-no-retryable: the refusal of `delete` without --confirm has no `retryable` (check 5).
- bulk-no-confirm: `delete --prefix` deletes without --confirm (check 6).
- dry-run-writes: `put --dry-run` creates the store file (check 6).
- replay-doubles: a repeat of `put` with the same --idempotency-key applies it again (check 7).
- unstable-ids: `get` reports a new id on every read, not the one `put` reported (check 8).
- token-in-userinfo / token-in-query: `login` echoes the token inside the URL it reports (check 9).
- token-base64: `login` echoes the token base64-encoded in a Basic authorization value (check 9).
- pipe-trace: a closed stdout is not handled: Python prints a traceback (check 10).
- sigint-no-cancel: `watch` exits on SIGINT without a cancelled summary (check 10).
- default-page-untruncated: `list` without --limit cuts its page but says truncated:false (check 11).
- cursor-repeats: `list --cursor` starts at the last item of the previous page (check 11).
- fail-fast-writes: `import` writes the records before a malformed line, though it declares
  whole-input fail-fast (check 12).
- continue-stops: `import --continue-on-error` stops at the first malformed line (check 12).
- schema-version-label: `--schema-version 1.0.0` changes aoi:meta's label but not the events
  (check 13).
- two-meta: `list` emits aoi:meta twice (check 14).
- seq-gap: `list` skips an aoi.seq number (check 15).
- relay-forwards-summary: `relay` passes the upstream aoi:summary through as its own (check 16).
- relay-ok-without-summary: `relay` reports ok:true when the upstream ended without its
  aoi:summary (check 16).
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

TOOL = "kvtool"
TOOL_VERSION = "0.3.0"
AOI_VERSION = "1.0-alpha"
SCHEMA_NAME = "io.example.kvtool.events"
VERSIONS = ["1.0.0", "2.0.0"]
DEFAULT_VERSION = "2.0.0"
STORE = "kvstore.json"
CREDENTIALS = "kvtool-credentials.json"

LIST_DEFAULT_LIMIT = 3
LIST_MAX_LIMIT = 1000
KEY_MAX = 256
VALUE_MAX = 65536
IDEMPOTENCY_KEY_MAX = 200
WATCH_DEFAULT_INTERVAL_MS = 250
HEARTBEAT_EVERY_MS = 500

FAULT = "clean"

CATEGORIES = [
    "usage", "validation", "config", "authn", "authz", "not_found", "conflict",
    "precondition_failed", "unsupported", "rate_limited", "unavailable", "timeout",
    "cancelled", "io", "internal",
]
RETRYABLE = {"rate_limited", "unavailable", "timeout"}
EXIT_FOR = {"usage": 64, "validation": 65, "config": 78, "authn": 77, "authz": 77,
            "unavailable": 69, "internal": 70, "io": 74, "rate_limited": 75, "timeout": 124,
            "cancelled": 130}
CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")


# --------------------------------------------------------------------------------------------
# Errors and control flow


class AoiError(Exception):
    """A failure reported as one aoi:error (§9)."""

    def __init__(self, category, code, message, retryable=None, exit_code=None, reason="failed",
                 **fields):
        super().__init__(message)
        self.category = category
        self.code = code
        self.message = message
        self.retryable = category in RETRYABLE if retryable is None else retryable
        self.exit_code = EXIT_FOR.get(category, 1) if exit_code is None else exit_code
        self.reason = reason
        self.fields = {k: v for k, v in fields.items() if v is not None}

    def event(self, scope="process"):
        ev = {"scope": scope, "category": self.category, "code": self.code, "domain": TOOL,
              "message": self.message, "retryable": self.retryable}
        ev.update(self.fields)
        return ev


def usage(code, message, **fields):
    return AoiError("usage", code, message, hint="kvtool --help", **fields)


class Cancelled(BaseException):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class PipeClosed(BaseException):
    pass


_deferred = 0
_pending = None


def _on_signal(signum, _frame):
    global _pending
    if _deferred:
        _pending = signum
        return
    raise Cancelled(signum)


@contextlib.contextmanager
def deferred_signals():
    """Holds SIGINT/SIGTERM while a write and the events that report it go out."""
    global _deferred
    _deferred += 1
    try:
        yield
    finally:
        _deferred -= 1
    if not _deferred and _pending is not None:
        raise Cancelled(_pending)


def set_signals(handler):
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


# --------------------------------------------------------------------------------------------
# The stream


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid():
    n = ((int(time.time() * 1000) & ((1 << 48) - 1)) << 80) | int.from_bytes(os.urandom(10), "big")
    out = []
    for _ in range(26):
        out.append(_CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(out))


def write_line(text):
    data = (text + "\n").encode("utf-8")
    if FAULT == "pipe-trace":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise PipeClosed()


class Machine:
    """The AOI JSONL stream of one run."""

    machine = True

    def __init__(self, command, version):
        self.command = command
        self.version = version
        self.run = ulid()
        self.seq = 0
        self.count = 0
        self.warnings = 0
        self.errors = 0
        self.t0 = time.monotonic()
        self.started = False
        self.finished = False

    def identity(self):
        return {"tool": TOOL, "tool_version": TOOL_VERSION, "aoi_version": AOI_VERSION,
                "schema_name": SCHEMA_NAME, "schema_version": self.version}

    def _emit(self, etype, fields):
        event = {"type": etype, "aoi": {"seq": self.seq, "run": self.run}}
        event.update(fields)
        write_line(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
        self.seq += 1

    def meta(self, force=False):
        if self.started and not force:
            return
        fields = self.identity()
        if self.command:
            fields["command"] = self.command
        self.started = True
        self._emit("aoi:meta", fields)

    def domain(self, etype, fields):
        self.meta()
        self._emit(etype, fields)
        self.count += 1

    def plan(self, action, target, detail):
        self.meta()
        self._emit("aoi:plan", {"action": action, "target": target, "detail": detail})

    def heartbeat(self):
        self.meta()
        self._emit("aoi:heartbeat", {})

    def error(self, err, scope="process"):
        self.meta()
        fields = err.event(scope)
        if FAULT == "confirm-no-retryable" and err.code == "CONFIRM_REQUIRED":
            del fields["retryable"]
        self._emit("aoi:error", fields)
        self.errors += 1

    def forward(self, etype, fields):
        """An upstream aoi:error or aoi:warning, tagged with its origin (§13.1)."""
        self.meta()
        self._emit(etype, fields)
        if etype == "aoi:error":
            self.errors += 1
        else:
            self.warnings += 1

    def skip_seq(self):
        self.seq += 1

    def summary(self, ok, reason=None, **extra):
        if self.finished:
            return
        self.meta()
        fields = {"ok": ok}
        if reason is not None:
            fields["reason"] = reason
        fields.update({"event_count": self.seq + 1, "count": self.count,
                       "warning_count": self.warnings, "error_count": self.errors,
                       "partial": extra.pop("partial", False),
                       "truncated": extra.pop("truncated", False)})
        for k, v in extra.items():
            if v is not None or k == "next_cursor":
                fields[k] = v
        fields["elapsed_ms"] = int((time.monotonic() - self.t0) * 1000)
        fields.update(self.identity())
        self.finished = True
        self._emit("aoi:summary", fields)

    def passthrough_summary(self, upstream_summary):
        """relay-forwards-summary: the upstream's summary, re-enveloped, as this run's own."""
        fields = {k: v for k, v in upstream_summary.items() if k not in ("type", "aoi")}
        fields["event_count"] = self.seq + 1
        self.finished = True
        self._emit("aoi:summary", fields)


def _say(stream, text):
    try:
        stream.write(text + "\n")
        stream.flush()
    except BrokenPipeError:
        if stream is sys.stdout:
            raise PipeClosed()


def _clean(s):
    return CONTROL_RE.sub("?", str(s))


class Human:
    """Plain text for a person: results on stdout, diagnostics on stderr."""

    machine = False

    def __init__(self, command, version):
        self.command = command
        self.version = version
        self.count = 0
        self.warnings = 0
        self.errors = 0
        self.finished = False

    def meta(self, force=False):
        pass

    def domain(self, etype, f):
        self.count += 1
        name = f.get("key", "")
        if etype == "entry":
            _say(sys.stdout, "%s = %s" % (_clean(name), _clean(f.get("value", ""))))
        elif etype in ("created", "updated", "deleted"):
            _say(sys.stdout, "%s %s" % (etype, _clean(name)))
        elif etype == "credential_saved":
            _say(sys.stdout, "saved the credential for %s in %s" % (_clean(f["url"]), f["path"]))
        elif etype == "changed":
            _say(sys.stdout, "%s %s" % (_clean(f.get("change")), _clean(name)))
        elif etype == "relayed":
            _say(sys.stdout, "%s from upstream line %s" % (_clean(f.get("upstream_type")),
                                                           f.get("line_number")))

    def plan(self, action, target, detail):
        _say(sys.stdout, "would %s %s: %s" % (action, _clean(target), _clean(detail)))

    def heartbeat(self):
        pass

    def error(self, err, scope="process"):
        self.errors += 1
        where = ""
        if err.fields.get("line_number"):
            where = " (input line %d)" % err.fields["line_number"]
        _say(sys.stderr, "kvtool: error%s: %s" % (where, err.message))

    def forward(self, etype, f):
        if etype == "aoi:error":
            self.errors += 1
        else:
            self.warnings += 1
        _say(sys.stderr, "kvtool: upstream %s from %s: %s" % (
            etype[4:], _clean(f.get("origin")), _clean(f.get("message", ""))))

    def skip_seq(self):
        pass

    def summary(self, ok, reason=None, **extra):
        if self.finished:
            return
        self.finished = True
        if extra.get("truncated") and extra.get("next_cursor"):
            _say(sys.stdout, "(more: kvtool list --cursor %s)" % extra["next_cursor"])
        if reason == "cancelled":
            _say(sys.stderr, "kvtool: cancelled")

    def passthrough_summary(self, upstream_summary):
        self.finished = True


# --------------------------------------------------------------------------------------------
# The store


def empty_store():
    return {"format": "kvtool/1", "records": {}, "idempotency": {}}


def load_store(create=False):
    try:
        with open(STORE, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        data = empty_store()
        if create:
            save_store(data)
        return data
    except OSError as e:
        raise AoiError("io", "STORE_UNREADABLE", "The store cannot be read: %s." % e.strerror,
                       target=STORE)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AoiError("io", "STORE_CORRUPT", "The store is not valid JSON.", target=STORE)
    if not (isinstance(data, dict) and data.get("format") == "kvtool/1"
            and isinstance(data.get("records"), dict) and isinstance(data.get("idempotency"), dict)):
        raise AoiError("io", "STORE_CORRUPT", "The store is not a kvtool/1 document.", target=STORE)
    return data


def save_store(data):
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".kvstore.", suffix=".tmp", dir=".")
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8"))
            f.write(b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, STORE)
        tmp = None
    except OSError as e:
        raise AoiError("io", "STORE_WRITE_FAILED", "The store cannot be written: %s."
                       % (e.strerror or type(e).__name__), target=STORE, exit_code=73)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def store_lock():
    """An advisory lock on the current directory, so that no lock file is left behind."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(".", os.O_RDONLY)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AoiError("unavailable", "STORE_BUSY", "Another process holds the store.",
                                   retry_after_ms=1000)
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def new_id():
    return "kv_" + os.urandom(8).hex()


def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def render(rec, key, version, **extra):
    """A record's event fields in the schema version asked for."""
    fields = {}
    if FAULT != "natural-key":
        fields["id"] = rec["id"]
    fields.update({"key": key, "value": rec["value"], "revision": rec["revision"]})
    if version.startswith("1.") and FAULT != "schema-version-label":
        fields["modified"] = rec["updated"]
    else:
        fields["updated_at"] = iso(rec["updated"])
    fields.update(extra)
    return fields


def render_deleted(rec, key):
    fields = {}
    if FAULT != "natural-key":
        fields["id"] = rec["id"]
    fields.update({"key": key, "revision": rec["revision"]})
    return fields


def fingerprint(obj):
    text = json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def check_key(key, field="key"):
    if not isinstance(key, str) or not key or len(key) > KEY_MAX or CONTROL_RE.search(key):
        raise AoiError("validation", "INVALID_KEY",
                       "A key is 1 to %d printable characters." % KEY_MAX, field=field)


def check_value(value, field="value"):
    if not isinstance(value, str) or len(value) > VALUE_MAX:
        raise AoiError("validation", "INVALID_VALUE",
                       "A value is a string of at most %d characters." % VALUE_MAX, field=field)


def check_idempotency_key(key):
    if not key or len(key) > IDEMPOTENCY_KEY_MAX or CONTROL_RE.search(key):
        raise AoiError("validation", "INVALID_IDEMPOTENCY_KEY",
                       "The idempotency key is 1 to %d printable characters." % IDEMPOTENCY_KEY_MAX,
                       field="idempotency_key")


def prior_result(data, key, command, fp):
    """The stored outcome of an earlier run with this idempotency key (§14.4), or None."""
    if key is None:
        return None
    prior = data["idempotency"].get(key)
    if prior is None:
        return None
    if prior.get("command") != command or prior.get("fingerprint") != fp:
        raise AoiError("conflict", "IDEMPOTENCY_KEY_REUSED",
                       "This idempotency key was already used for a different request.",
                       field="idempotency_key")
    return prior["effects"]


def emit_effects(out, effects, replayed):
    """Writes the events of recorded effects: [{"type", "key", "record"}]."""
    extra = {"replayed": True} if replayed and FAULT == "replayed" else {}
    for e in effects:
        if e["type"] == "deleted":
            fields = render_deleted(e["record"], e["key"])
            fields.update(extra)
        else:
            fields = render(e["record"], e["key"], out.version, **extra)
        out.domain(e["type"], fields)


# --------------------------------------------------------------------------------------------
# The command line


GLOBAL = {"--output": ("output", "str"), "--format": ("output", "str"),
          "--schema-version": ("schema_version", "str"), "--no-color": ("no_color", "bool"),
          "--help": ("help", "bool"), "-h": ("help", "bool"), "--version": ("version", "bool"),
          "--schema": ("schema_flag", "bool"), "--capabilities": ("capabilities_flag", "bool")}
FLAGS = {
    "list": {"--limit": ("limit", "int"), "--cursor": ("cursor", "str")},
    "get": {"--name": ("name", "str")},
    "put": {"--name": ("name", "str"), "--value": ("value", "str"), "--dry-run": ("dry_run", "bool"),
            "--idempotency-key": ("idempotency_key", "str")},
    "delete": {"--name": ("name", "str"), "--prefix": ("prefix", "str"),
               "--confirm": ("confirm", "bool"), "--confirm-count": ("confirm_count", "int"),
               "--dry-run": ("dry_run", "bool")},
    "import": {"--input-jsonl": ("input_jsonl", "str"),
               "--continue-on-error": ("continue_on_error", "bool"),
               "--fail-fast": ("fail_fast", "bool")},
    "login": {"--url": ("url", "str"), "--token": ("token", "str")},
    "relay": {"--input-jsonl": ("input_jsonl", "str"),
              "--continue-on-error": ("continue_on_error", "bool"),
              "--fail-fast": ("fail_fast", "bool")},
    "watch": {"--interval-ms": ("interval_ms", "int")},
    "schema": {},
    "capabilities": {},
    "input-schema": {"--command": ("command", "str")},
}
COMMANDS = ["list", "get", "put", "delete", "import", "login", "relay", "watch"]
DISCOVERY = ["schema", "capabilities", "input-schema"]

HELP = {
    None: """kvtool - a key-value store (Machine Mode, AOI-CLI v1.0-alpha)

Usage: kvtool [--output human|jsonl|json] COMMAND [OPTIONS]

Commands:
  list          List keys in order, bounded: --limit N (default %d), --cursor TOKEN
  get           Show one value: --name K
  put           Set a value: --name K --value V [--idempotency-key ID] [--dry-run]
  delete        Delete: --name K or --prefix P, with --confirm [--confirm-count N] [--dry-run]
  import        Set values from JSONL on stdin: --input-jsonl - [--continue-on-error]
  login         Save the remote's credential: --url URL --token TOKEN
  relay         Read an upstream AOI stream on stdin and relay it: --input-jsonl -
  watch         Report changes to the store until interrupted (unbounded)
  schema        Print the event schema (JSON Schema 2020-12)
  capabilities  Print the capability manifest
  input-schema  Print a command's input schema: --command NAME

Global options:
  --output jsonl        Machine mode: AOI JSONL events on stdout (alias --format jsonl)
  --schema-version V    Event schema version: 2.0.0 (default) or 1.0.0
  --no-color            Accepted; kvtool never uses colour
  -h, --help            This help; COMMAND --help for one command
  --version             Print the version

Store: ./kvstore.json. Exit status: 0 ok; 1 not found, conflict, unsupported or an upstream
failure; 64 usage (also delete without --confirm); 65 invalid input; 70 internal; 73 cannot
write the store; 74 I/O (also an upstream stream that ended without its summary); 75 an upstream
failure a retry may fix; 130/143 interrupted; 141 stdout closed. In machine mode the
aoi:summary, not the exit status, is the outcome.""" % LIST_DEFAULT_LIMIT,
    "list": """Usage: kvtool list [--limit N] [--cursor TOKEN]

Lists records in key order, at most N (default %d, at most %d). When more remain,
aoi:summary.truncated is true and aoi:summary.next_cursor continues the listing.
Events: entry {id, key, value, revision, updated_at}.""" % (LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT),
    "get": """Usage: kvtool get --name K

Shows the record whose key is K as an entry event. An unknown key is a not_found error (exit 1).""",
    "put": """Usage: kvtool put --name K --value V [--idempotency-key ID] [--dry-run]

Sets the value under key K to V and reports the record's stable id in a created or updated event (the id is given
when the key is first created and kept until it is deleted). With --idempotency-key, a repeat of
the same request returns the first result and changes nothing; the same key with another request
is a conflict. --dry-run emits aoi:plan and writes nothing.""",
    "delete": """Usage: kvtool delete (--name K | --prefix P) --confirm [--confirm-count N] [--dry-run]

Deletes one record, or every record whose key starts with P. Destructive: without --confirm it
refuses (usage error CONFIRM_REQUIRED, exit 64) and changes nothing. --confirm-count N refuses
unless exactly N records match. --dry-run emits aoi:plan and needs no --confirm.""",
    "import": """Usage: kvtool import --input-jsonl - [--continue-on-error | --fail-fast]

Reads JSONL on stdin: records {"key": K, "value": V} (no other fields), or the AOI stream of
another tool, whose domain events with a string key and value are imported.

Default: whole-input fail-fast. The input is read and checked in full before anything is
written: a malformed line aborts with a validation error naming it (exit 65) and the store is
unchanged. --continue-on-error: a malformed line is an item-scope aoi:error, every other record
is written, and the run ends ok:false, partial:true.

Upstream AOI events: aoi:meta and aoi:summary are not forwarded (the upstream's identity goes to
aoi:summary.upstream); aoi:error and aoi:warning are forwarded with origin and counted. An
upstream error fails the import (nothing written, aoi:summary.caused_by) unless
--continue-on-error. An upstream stream that ends without its aoi:summary is an io error and
nothing is written.""",
    "login": """Usage: kvtool login --url URL --token TOKEN

Saves the credential for the remote at URL in ./kvtool-credentials.json (mode 0600). No network
is used. The token is never shown, in any form.""",
    "relay": """Usage: kvtool relay --input-jsonl - [--continue-on-error | --fail-fast]

Reads the AOI stream of another tool on stdin and relays it: each upstream domain event becomes
a relayed event; upstream aoi:error and aoi:warning are forwarded with origin; upstream aoi:meta
and aoi:summary are never forwarded (the upstream's identity goes to aoi:summary.upstream).
An upstream error makes the run ok:false with aoi:summary.caused_by, unless --continue-on-error.
An upstream that ends without its aoi:summary is a failure (io error UPSTREAM_INCOMPLETE).

Default: fail-fast. A malformed line ends the run with a validation error naming it (events
relayed before it stay relayed). --continue-on-error: a malformed line is an item-scope
aoi:error and relaying goes on.""",
    "watch": """Usage: kvtool watch [--interval-ms N]

Unbounded: polls the store every N ms (default %d) and emits a changed event for every record
put or deleted since, and aoi:heartbeat about every %d ms. Runs until SIGINT or SIGTERM, then
ends with aoi:summary ok:false reason:cancelled (exit 130 or 143).""" % (
        WATCH_DEFAULT_INTERVAL_MS, HEARTBEAT_EVERY_MS),
    "schema": "Usage: kvtool schema [--output json|jsonl] [--schema-version V]\n\nPrints the event schema.",
    "capabilities": "Usage: kvtool capabilities [--output json|jsonl]\n\nPrints the capability manifest.",
    "input-schema": "Usage: kvtool input-schema --command NAME [--output json|jsonl]\n\nPrints NAME's input schema.",
}


class Args:
    def __init__(self):
        self.command = None
        self.values = {}

    def get(self, name, default=None):
        return self.values.get(name, default)


def prescan(argv):
    """The --output value and the command, found before parsing so usage errors honour them."""
    output, command = None, None
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            break
        if tok in ("--output", "--format") and i + 1 < len(argv):
            output = argv[i + 1]
            i += 2
            continue
        for flag in ("--output=", "--format="):
            if tok.startswith(flag):
                output = tok[len(flag):]
        if command is None and tok in FLAGS:
            command = tok
        i += 1
    return output, command


def _flag_name(name):
    # An unknown flag is named, never its value.
    return name if re.match(r"^--?[A-Za-z0-9][A-Za-z0-9-]{0,40}$", name) else "(unrecognised)"


def parse(argv):
    args = Args()
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "--":
            if i < len(argv):
                raise usage("UNEXPECTED_OPERAND", "kvtool takes no operands.")
            break
        if not tok.startswith("-") or tok == "-":
            if args.command is None:
                if tok not in FLAGS:
                    raise usage("UNKNOWN_COMMAND", "Unknown command; expected one of: %s."
                                % ", ".join(COMMANDS + DISCOVERY))
                args.command = tok
                continue
            raise usage("UNEXPECTED_OPERAND", "%s takes no operands; give values with flags."
                        % args.command)
        name, eq, inline = tok.partition("=")
        spec = GLOBAL.get(name) or FLAGS.get(args.command or "", {}).get(name)
        if spec is None:
            raise usage("UNKNOWN_OPTION", "Unknown option %s%s." % (
                _flag_name(name), " for " + args.command if args.command else ""))
        dest, kind = spec
        if kind == "bool":
            if eq:
                raise usage("UNEXPECTED_VALUE", "Option %s takes no value." % name)
            args.values[dest] = True
            continue
        if eq:
            value = inline
        elif i < len(argv):
            value = argv[i]
            i += 1
        else:
            raise usage("MISSING_VALUE", "Option %s needs a value." % name)
        if kind == "int":
            if not re.match(r"^[0-9]{1,9}$", value):
                raise usage("INVALID_NUMBER", "Option %s takes a non-negative integer." % name,
                            field=dest)
            value = int(value)
        args.values[dest] = value  # a repeated option: the last one wins
    return args


def negotiated_version(args):
    asked = args.get("schema_version")
    if asked is None:
        return DEFAULT_VERSION
    for v in VERSIONS:
        if asked in (v, v.split(".")[0], v.rsplit(".", 1)[0]):
            return v
    raise AoiError("unsupported", "SCHEMA_VERSION_UNSUPPORTED",
                   "This tool serves event schema versions %s." % " and ".join(VERSIONS),
                   field="schema_version")


# --------------------------------------------------------------------------------------------
# Commands


def encode_cursor(after):
    raw = json.dumps({"v": 1, "after": after}, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(token):
    bad = AoiError("validation", "INVALID_CURSOR",
                   "The cursor is not one kvtool issued; pass aoi:summary.next_cursor unchanged.",
                   field="cursor")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise bad
    if not isinstance(obj, dict) or obj.get("v") != 1 or not isinstance(obj.get("after"), str):
        raise bad
    return obj["after"]


def cmd_list(args, out):
    limit = args.get("limit")
    given = limit is not None
    if limit is None:
        limit = LIST_DEFAULT_LIMIT
    if limit < 1 or limit > LIST_MAX_LIMIT:
        raise usage("INVALID_LIMIT", "--limit takes 1 to %d." % LIST_MAX_LIMIT, field="limit")
    cursor = args.get("cursor")
    after = decode_cursor(cursor) if cursor is not None else None
    if cursor is not None and FAULT == "ro-writes-on-cursor":
        with open(".kvtool-resume", "w") as f:
            f.write(cursor + "\n")
    data = load_store()
    keys = sorted(data["records"])
    if after is not None:
        if FAULT == "cursor-repeats":
            keys = [k for k in keys if k >= after]
        else:
            keys = [k for k in keys if k > after]
    page = keys[:limit]
    if FAULT == "two-meta":
        out.meta(force=True)
    for n, key in enumerate(page):
        out.domain("entry", render(data["records"][key], key, out.version))
        if FAULT == "seq-gap" and n == 0:
            out.skip_seq()
    truncated = len(keys) > len(page)
    next_cursor = encode_cursor(page[-1]) if truncated else None
    if FAULT == "default-page-untruncated" and not given:
        truncated, next_cursor = False, None
    store_keys = len(data["records"])
    props = {"store_keys": str(store_keys) if FAULT == "schema-violation" else store_keys}
    return {"ok": True, "truncated": truncated, "next_cursor": next_cursor, "properties": props}


def cmd_get(args, out):
    key = args.get("name")
    if key is None:
        raise usage("MISSING_OPTION", "get needs --name.")
    check_key(key)
    rec = load_store()["records"].get(key)
    if rec is None:
        raise AoiError("not_found", "KEY_NOT_FOUND", "No record has this key.", target=key)
    if FAULT == "unstable-ids":
        rec = dict(rec, id=new_id())
    out.domain("entry", render(rec, key, out.version))
    if FAULT == "exit0-not-ok":
        return {"ok": False, "reason": "failed", "exit": 0}
    return {"ok": True}


def cmd_put(args, out):
    key, value = args.get("name"), args.get("value")
    if key is None or value is None:
        raise usage("MISSING_OPTION", "put needs --name and --value.")
    check_key(key, field="name")
    check_value(value)
    ikey = args.get("idempotency_key")
    if ikey is not None:
        check_idempotency_key(ikey)
    fp = fingerprint({"key": key, "value": value})
    if args.get("dry_run"):
        data = load_store(create=FAULT == "dry-run-writes")
        if prior_result(data, ikey, "put", fp) is not None:
            out.plan("none", key, "idempotency key already used: a real run replays its result")
        else:
            action = "update" if key in data["records"] else "create"
            out.plan(action, key, "%s %s (%d characters)" % (action, key, len(value)))
        return {"ok": True, "properties": {"dry_run": True}}
    if FAULT != "replay-doubles":
        # Decided before the lock: a replay reads the store and writes nothing.
        prior = prior_result(load_store(), ikey, "put", fp)
        if prior is not None:
            emit_effects(out, prior, replayed=True)
            return {"ok": True, "properties": {"replayed": True}}
    with store_lock():
        data = load_store()
        if FAULT != "replay-doubles":
            prior = prior_result(data, ikey, "put", fp)
            if prior is not None:
                emit_effects(out, prior, replayed=True)
                return {"ok": True, "properties": {"replayed": True}}
        old = data["records"].get(key)
        if old is None:
            rec = {"id": new_id(), "value": value, "revision": 1, "updated": int(time.time())}
            kind = "created"
        else:
            rec = dict(old, value=value, revision=old["revision"] + 1, updated=int(time.time()))
            kind = "updated"
        data["records"][key] = rec
        effects = [{"type": kind, "key": key, "record": rec}]
        if ikey is not None:
            data["idempotency"][ikey] = {"command": "put", "fingerprint": fp, "effects": effects}
        with deferred_signals():
            save_store(data)
            emit_effects(out, effects, replayed=False)
            if FAULT == "prose-stdout" and out.machine:
                write_line("\x1b[32m\u2713\x1b[0m saved %s" % key)
    return {"ok": True}


def cmd_delete(args, out):
    key, prefix = args.get("name"), args.get("prefix")
    if (key is None) == (prefix is None):
        raise usage("SELECTOR_REQUIRED", "delete needs exactly one of --name and --prefix.")
    if key is not None:
        check_key(key, field="name")
    else:
        check_key(prefix, field="prefix")
    dry = bool(args.get("dry_run"))
    confirm_needed = not (FAULT == "bulk-no-confirm" and prefix is not None)
    if not dry and not args.get("confirm") and confirm_needed:
        raise AoiError("usage", "CONFIRM_REQUIRED",
                       "delete is destructive and needs --confirm (or --dry-run to see the plan).",
                       reason="denied", hint="kvtool delete ... --confirm")
    data = load_store()
    if key is not None:
        if key not in data["records"]:
            raise AoiError("not_found", "KEY_NOT_FOUND", "No record has this key.", target=key)
        matched = [key]
    else:
        matched = sorted(k for k in data["records"] if k.startswith(prefix))
    want = args.get("confirm_count")
    if want is not None and want != len(matched):
        raise AoiError("precondition_failed", "CONFIRM_COUNT_MISMATCH",
                       "--confirm-count is %d but %d record(s) match; nothing was deleted."
                       % (want, len(matched)), details={"matched": len(matched)})
    if dry:
        for k in matched:
            out.plan("delete", k, "delete %s (revision %d)" % (k, data["records"][k]["revision"]))
        return {"ok": True, "properties": {"dry_run": True}}
    if not matched:
        return {"ok": True}
    with store_lock():
        data = load_store()
        effects = []
        for k in matched:
            rec = data["records"].pop(k, None)
            if rec is not None:
                effects.append({"type": "deleted", "key": k, "record": rec})
        with deferred_signals():
            save_store(data)
            emit_effects(out, effects, replayed=False)
    return {"ok": True}


# ---- upstream input (import, relay)


FRAMEWORK = {"aoi:meta", "aoi:summary", "aoi:error", "aoi:warning", "aoi:plan", "aoi:progress",
             "aoi:heartbeat", "aoi:check"}
REASON_CATEGORY = {"cancelled": "cancelled", "timeout": "timeout", "denied": "authz"}


def _no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError("duplicate key")
        obj[k] = v
    return obj


def _reject_constant(_name):
    raise ValueError("not JSON")


def bad_line(code, message, ln, field=None):
    return AoiError("validation", code, message, line_number=ln, field=field)


class Upstream:
    """What the input said about itself, as its lines are read one by one (§13, §13.1)."""

    def __init__(self):
        self.aoi = False
        self.identity = None
        self.summary = None
        self.lines = 0
        self.integrity = None
        self.errors = []

    def broken(self, code, message, ln=None):
        if self.integrity is None:
            self.integrity = AoiError("io", code, message, line_number=ln, target="-")

    def classify(self, ln, raw):
        """One line: ("record"|"event"|"forward"|"unknown"|"bad", payload), or None (consumed)."""
        self.lines += 1
        if self.summary is not None:
            self.broken("UPSTREAM_AFTER_SUMMARY", "The upstream stream goes on after its aoi:summary.", ln)
        try:
            obj = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates,
                             parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return ("bad", bad_line("INPUT_JSONL_PARSE_ERROR", "Invalid JSON on input line %d." % ln, ln))
        if not isinstance(obj, dict):
            return ("bad", bad_line("INPUT_RECORD_INVALID", "Input line %d is not a JSON object." % ln, ln))
        etype = obj.get("type")
        if "type" in obj and not isinstance(etype, str):
            return ("bad", bad_line("INPUT_RECORD_INVALID", "Input line %d has a non-string type." % ln,
                                    ln, "type"))
        if etype is None:
            return ("record", obj)
        if not etype.startswith("aoi:"):
            return ("event", obj)
        self.aoi = True
        if etype == "aoi:meta":
            if self.identity is not None or self.lines != 1:
                self.broken("UPSTREAM_META_MISPLACED", "The upstream aoi:meta is not its first event.", ln)
            self.identity = {k: obj[k] for k in ("tool", "tool_version", "schema_name", "schema_version")
                             if isinstance(obj.get(k), str)}
            return None
        if etype == "aoi:summary":
            self.summary = obj
            return None
        if etype in ("aoi:error", "aoi:warning"):
            fields = {k: v for k, v in obj.items() if k not in ("type", "aoi")}
            if not isinstance(fields.get("origin"), str):
                fields = dict([("origin", self.origin())] + list(fields.items()))
            if etype == "aoi:error":
                self.errors.append(fields)
            return ("forward", (etype, fields))
        if etype not in FRAMEWORK:
            return ("unknown", bad_line("INPUT_RECORD_INVALID", "Input line %d is a framework event "
                                        "this version cannot interpret." % ln, ln))
        return None  # aoi:plan, aoi:progress, aoi:heartbeat, aoi:check: the upstream's own business

    def origin(self):
        return (self.identity or {}).get("tool") or "upstream"

    def finish(self, cut, require_summary):
        """At EOF: `cut` is the last line's bytes when it had no line feed."""
        if cut.strip():
            if self.aoi or b'"aoi:' in cut:
                self.broken("UPSTREAM_TRUNCATED", "The upstream stream's last line has no line feed.")
                return None
        if (self.aoi or require_summary) and self.summary is None:
            if FAULT != "relay-ok-without-summary":
                self.broken("UPSTREAM_INCOMPLETE", "The upstream stream ended without its aoi:summary.")
        elif self.summary is not None:
            ec = self.summary.get("event_count")
            if isinstance(ec, int) and not isinstance(ec, bool) and ec != self.lines:
                self.broken("UPSTREAM_INCOMPLETE", "The upstream stream has %d line(s) but its "
                            "aoi:summary counts %d." % (self.lines, ec))
        return cut if cut.strip() else None

    def failure(self):
        """caused_by for an upstream failure (§13.1), or None when the upstream succeeded."""
        if self.errors:
            worst = next((e for e in self.errors if not e.get("retryable")), self.errors[0])
            return caused_by(worst, self.origin())
        s = self.summary
        if s is not None and s.get("ok") is False:
            cb = s.get("caused_by")
            if isinstance(cb, dict):
                return caused_by(cb, self.origin())
            reason = s.get("reason")
            return {"origin": self.origin(), "category": REASON_CATEGORY.get(reason, "internal"),
                    "code": "UPSTREAM_FAILED", "retryable": reason == "timeout"}
        return None


def caused_by(err, origin):
    cb = {"origin": err["origin"] if isinstance(err.get("origin"), str) else origin,
          "category": err["category"] if isinstance(err.get("category"), str) else "internal",
          "code": err["code"] if isinstance(err.get("code"), str) and CODE_RE.match(err["code"])
          else "UPSTREAM_ERROR",
          "retryable": err["retryable"] if isinstance(err.get("retryable"), bool) else False}
    ra = err.get("retry_after_ms")
    if cb["retryable"] and isinstance(ra, int) and not isinstance(ra, bool) and ra >= 0:
        cb["retry_after_ms"] = ra
    return cb


def upstream_failed(cb, up, input_count):
    return {"ok": False, "reason": "failed", "caused_by": cb, "input_count": input_count,
            "upstream": up.identity or None, "exit": 75 if cb["retryable"] else 1}


def input_mode(args, command):
    if args.get("input_jsonl") is None:
        raise usage("MISSING_OPTION", "%s needs --input-jsonl - (JSONL on standard input)." % command)
    if args.get("input_jsonl") != "-":
        raise usage("INVALID_INPUT", "--input-jsonl takes - (standard input) only.", field="input_jsonl")
    if args.get("fail_fast") and args.get("continue_on_error"):
        raise usage("CONFLICTING_OPTIONS", "Give --fail-fast or --continue-on-error, not both.")
    return bool(args.get("continue_on_error"))


def stdin_bytes():
    if sys.stdin is None:
        return b""
    try:
        return sys.stdin.buffer.read()
    except OSError as e:
        if e.errno == 9:  # stdin closed
            return b""
        raise AoiError("io", "STDIN_READ_FAILED", "Standard input cannot be read.", target="-")


def record_of(kind, ln, obj):
    """(key, value) from an input record or an upstream domain event; None to ignore; or an error."""
    if kind == "event":
        key, value = obj.get("key"), obj.get("value")
        if not (isinstance(key, str) and isinstance(value, str)):
            return None  # not a record: an upstream event that is safe to ignore (§13)
    else:
        extra = sorted(k for k in obj if k not in ("key", "value"))
        if extra:
            return bad_line("INPUT_RECORD_INVALID", "Input line %d has an unknown field." % ln, ln,
                            extra[0] if re.match(r"^[A-Za-z0-9_]{1,64}$", extra[0]) else None)
        key, value = obj.get("key"), obj.get("value")
        if not isinstance(key, str):
            return bad_line("INPUT_RECORD_INVALID", "Input line %d has no string key." % ln, ln, "key")
        if not isinstance(value, str):
            return bad_line("INPUT_RECORD_INVALID", "Input line %d has no string value." % ln, ln, "value")
    try:
        check_key(key)
        check_value(value)
    except AoiError as e:
        e.message = "Input line %d: %s" % (ln, e.message)
        e.fields["line_number"] = ln
        return e
    return (key, value)


def apply_records(out, records):
    """Writes `records` [(key, value)] in one commit and reports each."""
    if not records:
        return
    with store_lock():
        data = load_store()
        effects = []
        now = int(time.time())
        for key, value in records:
            old = data["records"].get(key)
            if old is None:
                rec = {"id": new_id(), "value": value, "revision": 1, "updated": now}
                kind = "created"
            else:
                rec = dict(old, value=value, revision=old["revision"] + 1, updated=now)
                kind = "updated"
            data["records"][key] = rec
            effects.append({"type": kind, "key": key, "record": rec})
        with deferred_signals():
            save_store(data)
            emit_effects(out, effects, replayed=False)


def cmd_import(args, out):
    cont = input_mode(args, "import")
    raw = stdin_bytes()
    up = Upstream()
    lines = raw.split(b"\n")
    cut = lines.pop()  # b"" when the input ends in a line feed
    items = []
    for idx, line in enumerate(lines):
        if line.strip():
            item = up.classify(idx + 1, line)
            if item is not None:
                items.append((idx + 1,) + item)
    last = up.finish(cut, require_summary=False)
    if last is not None:
        item = up.classify(len(lines) + 1, last)
        if item is not None:
            items.append((len(lines) + 1,) + item)
    if up.integrity is not None:
        raise up.integrity  # a cut or incomplete upstream: nothing is written
    input_count = sum(1 for it in items if it[1] in ("record", "event", "bad"))
    records, failures = [], 0
    for ln, kind, payload in items:
        if kind == "forward":
            out.forward(*payload)
            continue
        rec = payload if kind in ("bad", "unknown") else record_of(kind, ln, payload)
        if rec is None:
            continue
        if isinstance(rec, AoiError):
            if not cont:
                raise rec  # whole-input fail-fast: nothing has been written
            out.error(rec, scope="item")
            failures += 1
            if FAULT == "continue-stops":
                break
            continue
        if FAULT == "fail-fast-writes" and not cont:
            apply_records(out, [rec])  # written as read: the lines before a bad one stay written
            continue
        records.append(rec)
    cb = up.failure()
    if cb is not None and not cont:
        return upstream_failed(cb, up, input_count)
    apply_records(out, records)
    res = {"ok": failures == 0, "input_count": input_count, "upstream": up.identity or None}
    if failures:
        res.update(reason="failed", partial=out.count > 0, exit=65)
    return res


def cmd_relay(args, out):
    cont = input_mode(args, "relay")
    up = Upstream()
    input_count = 0
    failures = 0
    stream = sys.stdin.buffer if sys.stdin is not None else None
    ln = 0
    cut = b""
    while stream is not None:
        try:
            line = stream.readline()
        except OSError:
            break
        if not line:
            break
        if not line.endswith(b"\n"):
            cut = line
            break
        ln += 1
        line = line[:-1]
        if not line.strip():
            continue
        item = up.classify(ln, line)
        if item is None:
            continue
        kind, payload = item
        if kind in ("record", "event", "bad"):
            input_count += 1
        if kind == "forward":
            out.forward(*payload)
        elif kind == "event":
            fields = {k: v for k, v in payload.items() if k not in ("type", "aoi")}
            out.domain("relayed", {"upstream_type": payload["type"], "line_number": ln,
                                   "payload": fields})
        else:
            err = payload if kind in ("bad", "unknown") else bad_line(
                "INPUT_RECORD_INVALID", "Input line %d is not an AOI event (no type)." % ln, ln, "type")
            if not cont:
                raise err
            out.error(err, scope="item")
            failures += 1
    up.finish(cut, require_summary=True)
    if up.integrity is not None:
        out.error(up.integrity)
        return {"ok": False, "reason": "failed", "input_count": input_count,
                "upstream": up.identity or None, "exit": 74}
    if FAULT == "relay-forwards-summary" and up.summary is not None:
        return {"passthrough": up.summary}
    cb = up.failure()
    if cb is not None and not cont:
        return upstream_failed(cb, up, input_count)
    res = {"ok": failures == 0, "input_count": input_count, "upstream": up.identity or None}
    if failures:
        res.update(reason="failed", partial=out.count > 0, exit=65)
    return res


def public_url(url):
    """The remote's address as it may be shown: no userinfo, no query, no fragment (§11)."""
    m = re.match(r"^(https?)://(?:[^@/?#]*@)?([^/?#]+)([^?#]*)", url)
    return "%s://%s%s" % (m.group(1), m.group(2), m.group(3)) if m else None


def cmd_login(args, out):
    url, token = args.get("url"), args.get("token")
    if url is None or token is None:
        raise usage("MISSING_OPTION", "login needs --url and --token.")
    shown = public_url(url)
    if shown is None or CONTROL_RE.search(url):
        raise AoiError("validation", "INVALID_URL", "--url takes an http or https URL.", field="url")
    if not token or CONTROL_RE.search(token):
        raise AoiError("validation", "INVALID_TOKEN", "--token must be printable text.", field="token")
    fields = {"path": CREDENTIALS, "url": shown}
    if FAULT == "token-in-userinfo":
        fields["url"] = shown.replace("://", "://kvtool:%s@" % token, 1)
    elif FAULT == "token-in-query":
        fields["url"] = shown + "?token=" + token
    elif FAULT == "token-base64":
        basic = base64.b64encode(("kvtool:" + token).encode("utf-8")).decode("ascii")
        fields["authorization"] = "Basic " + basic
    doc = json.dumps({"url": shown, "token": token}) + "\n"
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".kvtool-credentials.", dir=".")
        with os.fdopen(fd, "w") as f:
            f.write(doc)
        os.chmod(tmp, 0o600)
        with deferred_signals():
            os.replace(tmp, CREDENTIALS)
            tmp = None
            out.domain("credential_saved", fields)
    except OSError as e:
        raise AoiError("io", "CREDENTIALS_WRITE_FAILED", "The credential cannot be saved: %s."
                       % (e.strerror or type(e).__name__), target=CREDENTIALS, exit_code=73)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return {"ok": True}


def _store_state():
    try:
        return load_store()["records"]
    except AoiError:
        return None


def cmd_watch(args, out):
    interval = args.get("interval_ms", WATCH_DEFAULT_INTERVAL_MS)
    if interval < 10 or interval > 60000:
        raise usage("INVALID_INTERVAL", "--interval-ms takes 10 to 60000.", field="interval_ms")
    if FAULT == "sigint-no-cancel":
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    out.meta()
    seen = _store_state() or {}
    last_beat = time.monotonic()
    while True:
        time.sleep(interval / 1000.0)
        now = _store_state()
        if now is not None:
            for key in sorted(set(seen) | set(now)):
                old, new = seen.get(key), now.get(key)
                if new is not None and (old is None or old["revision"] != new["revision"]
                                        or old["id"] != new["id"]):
                    out.domain("changed", render(new, key, out.version, change="put"))
                elif new is None:
                    out.domain("changed", dict(render_deleted(old, key), change="deleted"))
            seen = now
        if (time.monotonic() - last_beat) * 1000 >= HEARTBEAT_EVERY_MS:
            out.heartbeat()
            last_beat = time.monotonic()


HANDLERS = {"list": cmd_list, "get": cmd_get, "put": cmd_put, "delete": cmd_delete,
            "import": cmd_import, "login": cmd_login, "relay": cmd_relay, "watch": cmd_watch}


# --------------------------------------------------------------------------------------------
# Discovery


def event_schema(version):
    v1 = version.startswith("1.")
    ident = {k: {"type": "string"} for k in ("tool", "tool_version", "aoi_version", "schema_name",
                                             "schema_version")}
    ident_req = sorted(ident)
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
    }
    stamp = ({"modified": {"type": "integer", "minimum": 0, "description": "Unix seconds"}} if v1
             else {"updated_at": {"type": "string", "format": "date-time"}})
    replayed = {"replayed": {"const": True, "description": "Present on the events of a replay"}} \
        if FAULT == "replayed" else {}
    rec_req = ["key", "value", "revision"] + ([] if FAULT == "natural-key" else ["id"])
    record = {"type": "object", "required": rec_req + sorted(stamp), "properties": dict(
        {"id": {"type": "string", "pattern": "^kv_[0-9a-f]{16}$",
                "description": "Stable id, given when the key is created, kept until it is deleted"},
         "key": {"type": "string", "minLength": 1,
                 "description": "The record's key" + (": its natural identifier (§14.4)"
                                                       if FAULT == "natural-key" else "")},
         "value": {"type": "string"}, "revision": {"type": "integer", "minimum": 1}},
        **stamp, **replayed)}
    if FAULT == "closed-events":
        record["properties"].update({"type": {"type": "string"}, "aoi": {"type": "object"}})
        record["additionalProperties"] = False
    deleted = {"type": "object", "required": rec_req[:1] + rec_req[2:],
               "properties": dict({"id": record["properties"]["id"],
                                   "key": record["properties"]["key"],
                                   "revision": record["properties"]["revision"]}, **replayed)}
    defs = {
        "envelope": {"type": "object", "required": ["seq", "run"], "properties": {
            "seq": {"type": "integer", "minimum": 0}, "run": {"type": "string", "minLength": 1},
            "t": {"type": "number", "minimum": 0}, "trace_id": {"type": "string"}}},
        "meta": {"type": "object", "required": ident_req, "properties": dict(
            ident, command={"enum": COMMANDS}, properties={"type": "object"})},
        "summary": {"type": "object",
                    "required": ["ok", "event_count", "count", "warning_count", "error_count"] + ident_req,
                    "properties": dict(ident, **{
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
                                      "properties": {k: diag[k] for k in (
                                          "origin", "category", "code", "retryable", "retry_after_ms")}},
                        "upstream": {"type": "object", "properties": {k: {"type": "string"} for k in (
                            "tool", "tool_version", "schema_name", "schema_version")}},
                        "properties": {"type": "object", "properties": {
                            "store_keys": {"type": "integer", "minimum": 0},
                            "dry_run": {"type": "boolean"}, "replayed": {"type": "boolean"}}},
                    }),
                    "allOf": [{"if": {"properties": {"ok": {"const": False}}, "required": ["ok"]},
                               "then": {"required": ["reason"]}}]},
        "error": {"type": "object", "required": ["category", "code", "message", "retryable"],
                  "properties": diag,
                  "allOf": [{"if": {"not": {"required": ["origin"]}},
                             "then": {"properties": {"category": {"enum": CATEGORIES}}}},
                            {"if": {"properties": {"retryable": {"const": False}},
                                    "required": ["retryable"]},
                             "then": {"not": {"required": ["retry_after_ms"]}}}]},
        "warning": {"type": "object", "required": ["code", "message"], "properties": diag},
        "plan": {"type": "object", "required": ["action", "target"], "properties": {
            "action": {"enum": ["create", "update", "delete", "none"]},
            "target": {"type": "string"}, "detail": {"type": "string"}}},
        "heartbeat": {"type": "object"},
        "record": record,
        "deleted": deleted,
        "changed": {"type": "object", "required": ["key", "change"], "properties": dict(
            record["properties"], change={"enum": ["put", "deleted"]})},
        "credential_saved": {"type": "object", "required": ["path", "url"], "properties": {
            "path": {"type": "string", "description": "Where the credential was saved"},
            "url": {"type": "string", "format": "uri", "description": "The remote, without credentials"}}},
        "relayed": {"type": "object", "required": ["upstream_type", "line_number", "payload"],
                    "properties": {"upstream_type": {"type": "string"},
                                   "line_number": {"type": "integer", "minimum": 1},
                                   "payload": {"type": "object"}}},
    }
    by_type = [("aoi:meta", "meta"), ("aoi:summary", "summary"), ("aoi:error", "error"),
               ("aoi:warning", "warning"), ("aoi:plan", "plan"), ("aoi:heartbeat", "heartbeat"),
               ("entry", "record"), ("created", "record"), ("updated", "record"),
               ("deleted", "deleted"), ("changed", "changed"),
               ("credential_saved", "credential_saved"), ("relayed", "relayed")]
    all_of = [{"type": "object", "required": ["type", "aoi"],
               "properties": {"type": {"type": "string"}, "aoi": {"$ref": "#/$defs/envelope"}}}]
    if FAULT == "remote-ref":
        all_of.append({"$ref": "https://schemas.example.com/kvtool/common/1.0.0/event.json"})
    for etype, ref in by_type:
        all_of.append({"if": {"properties": {"type": {"const": etype}}, "required": ["type"]},
                       "then": {"$ref": "#/$defs/" + ref}})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": ("file:///usr/share/kvtool/events-%s.json" if FAULT == "file-id"
                else "https://schemas.example.com/kvtool/events/%s/schema.json") % version,
        "title": "kvtool events %s" % version,
        "description": "Every event kvtool emits in machine mode. entry: one record (list, get); "
                       "created / updated / deleted: the audit of a mutation; changed: a change "
                       "seen by watch; credential_saved: login; relayed: an upstream domain event.",
        "type": "object",
        "allOf": all_of,
        "$defs": defs,
    }


def _prop(kind, description, **kw):
    p = {"type": kind, "description": description}
    p.update(kw)
    return p


def input_schema(command):
    dry = _prop("boolean", "Emit aoi:plan and change nothing", default=False)
    version = {"type": "string", "enum": VERSIONS + ["1", "2"], "default": DEFAULT_VERSION,
               "description": "Event schema version to emit"}
    jsonl = {"const": "-", "description": "Read JSONL from standard input"}
    cont = _prop("boolean", "A malformed line is an item error; go on", default=False)
    fast = _prop("boolean", "The default: a malformed line aborts", default=True)
    props, required = {}, []
    if command == "list":
        props = {"limit": _prop("integer", "At most this many records", minimum=1,
                                maximum=LIST_MAX_LIMIT, default=LIST_DEFAULT_LIMIT),
                 "cursor": _prop("string", "aoi:summary.next_cursor of the previous page")}
    elif command == "get":
        props, required = {"name": _prop("string", "The record's key", minLength=1)}, ["name"]
    elif command == "put":
        props = {"name": _prop("string", "The record's key", minLength=1, maxLength=KEY_MAX),
                 "value": _prop("string", "The value to store", maxLength=VALUE_MAX),
                 "dry_run": dry,
                 "idempotency_key": _prop("string", "A repeat with the same key returns the first "
                                          "result", minLength=1, maxLength=IDEMPOTENCY_KEY_MAX)}
        required = ["name", "value"]
    elif command == "delete":
        props = {"name": _prop("string", "Delete the record with this key (or give prefix)", minLength=1),
                 "prefix": _prop("string", "Delete every record whose key starts with this",
                                 minLength=1),
                 "confirm": _prop("boolean", "Required: delete is destructive", default=False),
                 "confirm_count": _prop("integer", "Refuse unless exactly this many match", minimum=0),
                 "dry_run": dry}
    elif command == "import":
        props, required = {"input_jsonl": jsonl, "continue_on_error": cont, "fail_fast": fast}, \
            ["input_jsonl"]
    elif command == "login":
        props = {"url": _prop("string", "The remote's address", format="uri"),
                 "token": _prop("string", "The remote's access token", writeOnly=True)}
        required = ["url", "token"]
    elif command == "relay":
        props, required = {"input_jsonl": jsonl, "continue_on_error": cont, "fail_fast": fast}, \
            ["input_jsonl"]
    elif command == "watch":
        props = {"interval_ms": _prop("integer", "Poll interval in milliseconds", minimum=10,
                                      maximum=60000, default=WATCH_DEFAULT_INTERVAL_MS)}
    props["schema_version"] = version
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "kvtool " + command,
            "description": HELP[command].split("\n\n", 1)[-1].replace("\n", " "),
            "type": "object", "additionalProperties": False,
            "properties": props, "required": required}


SEED = [{"args": ["import", "--input-jsonl", "-"],
         "stdin": "".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in [
             ("color.blue", "#0000ff"), ("color.green", "#00ff00"), ("color.red", "#ff0000"),
             ("size.large", "xl"), ("size.small", "s")])}]

RELAY_RUN = "01JZQ7X4TQ9V6H0ZT7K8F2W3C1"
RELAY_STDIN = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in [
    {"type": "aoi:meta", "aoi": {"seq": 0, "run": RELAY_RUN}, "tool": "kv-source",
     "tool_version": "1.0.0", "aoi_version": AOI_VERSION, "schema_name": "io.example.kv-source.events",
     "schema_version": "1.0.0", "command": "list"},
    {"type": "entry", "aoi": {"seq": 1, "run": RELAY_RUN}, "id": "src-1", "key": "alpha", "value": "1"},
    {"type": "aoi:warning", "aoi": {"seq": 2, "run": RELAY_RUN}, "code": "SOURCE_STALE",
     "message": "The source's cache is a minute old."},
    {"type": "aoi:summary", "aoi": {"seq": 3, "run": RELAY_RUN}, "ok": True, "event_count": 4,
     "count": 1, "warning_count": 1, "error_count": 0, "tool": "kv-source", "tool_version": "1.0.0",
     "aoi_version": AOI_VERSION, "schema_name": "io.example.kv-source.events", "schema_version": "1.0.0"},
])


def capabilities():
    fw = ["aoi:meta", "aoi:error", "aoi:summary"]

    def cmd(name, summary, read_only, events, examples, **kw):
        c = {"name": name, "summary": summary, "read_only": read_only,
             "destructive": kw.pop("destructive", False),
             "requires_confirm": kw.pop("requires_confirm", False),
             "supports_dry_run": kw.pop("supports_dry_run", False),
             "supports_idempotency_key": kw.pop("supports_idempotency_key", False),
             "bounded": kw.pop("bounded", False), "supports_cursor": kw.pop("supports_cursor", False),
             "unbounded": kw.pop("unbounded", False),
             "event_types": fw[:1] + events + fw[1:],
             "input_modes": kw.pop("input_modes", ["args"]), "examples": examples}
        c.update(kw)
        return c

    commands = [
        cmd("list", "List records in key order, bounded", True, ["entry"],
            [["list"], ["list", "--limit", "2"]], bounded=True, supports_cursor=True, setup=SEED),
        cmd("get", "Show one record", True, ["entry"], [["get", "--name", "color.red"]], setup=SEED),
        cmd("put", "Set a value; reports the record's stable id", False,
            ["created", "updated", "aoi:plan"],
            [["put", "--name", "color.red", "--value", "#ff0000"],
             ["put", "--name", "color.red", "--value", "#ee0000", "--idempotency-key", "paint-1"],
             ["put", "--name", "color.red", "--value", "#ff0000", "--dry-run"]],
            supports_dry_run=True, supports_idempotency_key=True),
        cmd("delete", "Delete one record or a prefix (destructive: needs --confirm)", False,
            ["deleted", "aoi:plan"],
            [["delete", "--prefix", "color.", "--confirm"],
             ["delete", "--name", "size.small", "--confirm"],
             ["delete", "--prefix", "size.", "--dry-run"]],
            destructive=True, requires_confirm=True, supports_dry_run=True, setup=SEED),
        cmd("import", "Set values from JSONL records or an upstream AOI stream on stdin", False,
            ["created", "updated", "aoi:warning"], [["import", "--input-jsonl", "-"],
                                                    ["import", "--input-jsonl", "-", "--continue-on-error"]],
            input_modes=["jsonl"], input_default="fail_fast",
            stdin='{"key": "fruit.apple", "value": "red"}\n{"key": "fruit.kiwi", "value": "green"}\n'),
        cmd("login", "Save the remote's credential (no network)", False, ["credential_saved"],
            [["login", "--url", "https://kv.example.com", "--token", "example-token"]]),
        cmd("relay", "Relay an upstream AOI stream, accounting for its outcome", True,
            ["relayed", "aoi:warning"], [["relay", "--input-jsonl", "-"]],
            input_modes=["jsonl"], input_default="fail_fast", stdin=RELAY_STDIN),
        cmd("watch", "Report changes to the store until interrupted", True,
            ["changed", "aoi:heartbeat"], [["watch"]], unbounded=True, setup=SEED),
    ]
    if FAULT == "ghost-command":
        commands.append(cmd("export", "Write the store as JSONL", True, ["entry"], [["export"]]))
    return {
        "tool": TOOL, "tool_version": TOOL_VERSION, "aoi_versions": [AOI_VERSION],
        "outputs": ["human", "jsonl"], "machine_flag": ["--output", "jsonl"],
        "schemas": [{"name": SCHEMA_NAME, "versions": VERSIONS, "default": DEFAULT_VERSION}],
        "auth": "none for the store; login saves a remote's token in ./kvtool-credentials.json",
        "commands": commands,
    }


def print_document(doc, compact):
    text = json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=2)
    write_line(text)


# --------------------------------------------------------------------------------------------
# Main


def run(argv):
    output, command = prescan(argv)
    machine = output in ("jsonl", "json")
    out = None
    version = DEFAULT_VERSION
    try:
        if output is not None and output not in ("jsonl", "json", "human"):
            machine = False
            raise usage("INVALID_OUTPUT", "--output takes human, jsonl or json.")
        args = parse(argv)
        if args.get("help"):
            _say(sys.stdout, HELP.get(args.command, HELP[None]))
            return 0
        if args.get("version"):
            _say(sys.stdout, "kvtool %s (AOI-CLI %s)" % (TOOL_VERSION, AOI_VERSION))
            return 0
        if args.command is None and args.get("schema_flag"):
            print_document(event_schema(negotiated_version(args)), compact=False)
            return 0
        if args.command is None and args.get("capabilities_flag"):
            doc = capabilities()
            if FAULT == "flag-differs":
                doc = dict(doc, commands=doc["commands"][:-1])
            print_document(doc, compact=False)
            return 0
        if args.command is None:
            raise usage("MISSING_COMMAND", "No command given.")
        version = negotiated_version(args)
        if args.command in DISCOVERY:
            if args.command == "schema":
                doc = event_schema(version)
            elif args.command == "capabilities":
                doc = capabilities()
            else:
                name = args.get("command")
                if name not in COMMANDS:
                    raise usage("UNKNOWN_COMMAND", "input-schema --command takes one of: %s."
                                % ", ".join(COMMANDS), field="command")
                doc = input_schema(name)
            print_document(doc, compact=output == "jsonl")
            return 0
        if args.command == "watch" and not machine:
            raise usage("MACHINE_ONLY", "watch speaks machine mode only: add --output jsonl.")
        out = (Machine if machine else Human)(args.command, version)
        out.meta()
        res = HANDLERS[args.command](args, out)
        set_signals(signal.SIG_IGN)
        if "passthrough" in res:
            out.passthrough_summary(res["passthrough"])
            return 0
        code = res.pop("exit", 0)
        out.summary(**res)
        return code
    except AoiError as e:
        set_signals(signal.SIG_IGN)
        if out is None:
            out = (Machine if machine else Human)(command, version)
        if e.category == "usage" and not out.machine:
            _say(sys.stderr, "kvtool: usage error: %s" % e.message)
            _say(sys.stderr, "Try 'kvtool --help'.")
        else:
            out.error(e)
        out.summary(ok=False, reason=e.reason)
        return e.exit_code
    except Cancelled as c:
        set_signals(signal.SIG_IGN)
        if out is None and machine:
            out = Machine(command, version)
        if out is not None:
            out.summary(ok=False, reason="cancelled")
        return 128 + int(c.signum)
    except Exception as e:  # a bug: an internal error, never a traceback on stdout
        set_signals(signal.SIG_IGN)
        err = AoiError("internal", "INTERNAL_ERROR", "Unexpected %s." % type(e).__name__)
        if machine:
            if out is None:
                out = Machine(command, version)
            out.error(err)
            out.summary(ok=False, reason="failed")
        else:
            _say(sys.stderr, "kvtool: internal error: %s" % type(e).__name__)
        return 70


def _quiet(code):
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    return code


def main(fault):
    """Runs kvtool with `fault` switched on and returns its exit status."""
    global FAULT
    FAULT = fault
    set_signals(_on_signal)
    try:
        code = run(sys.argv[1:])
        if FAULT != "pipe-trace":
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                return _quiet(141)
        return code
    except PipeClosed:
        return _quiet(141)
    except Cancelled as c:  # a second signal while the outcome was being written
        return _quiet(128 + int(c.signum))
