"""bookmarks: a bookmark store on SQLite, with a Machine Mode (AOI-CLI v1.0-alpha) interface.

Built on the machinemode SDK: every flag, error, discovery document and byte of the JSONL
stream comes from it. Database: ``--db PATH``, else ``$XDG_DATA_HOME/bookmarks/bookmarks.db``,
else ``~/.local/share/bookmarks/bookmarks.db``.

Compatibility rules: the machine output is governed by the event schema
``io.machinemode.examples.bookmarks.events`` (``bookmarks schema``). Adding an event type or an
optional field is a minor change of ``schema_version``; renaming or removing one, or changing a
field's type or meaning, is a major one. Error codes never change once published.

Each command declares its arguments in an ``@cmd.arguments`` function, which the SDK calls
when that command's parser is first needed: discovery (``schema``, ``capabilities``) and a run
of one command build no other command's parser.

``watch`` is unbounded (§4.2): it streams bookmarks added after it starts, with heartbeats,
until SIGINT/SIGTERM, which end it with ``ok:false``, ``reason:"cancelled"``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any, Dict, List, Optional, Tuple

try:
    import machinemode
except ImportError:  # run from a checkout: the SDK beside this example
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "src"))
    import machinemode


from machinemode import errors, event
from machinemode.cli import (
    CONFIRM,
    DRY_RUN,
    IDEMPOTENCY,
    INPUT_JSON,
    INPUT_JSONL,
    PAGING,
    TIMEOUT,
    Command,
    Context,
    Tool,
    path,
)
from machinemode.harness import Outcome
from machinemode.schemas import event_type_of

if TYPE_CHECKING:  # imported by the commands that use them: discovery never loads these
    import sqlite3

    from machinemode.cursor import CursorCodec
    from machinemode.idempotency import IdempotencyRecord

ID_PATTERN = "^b[1-9][0-9]{0,17}$"
URL_PATTERN = "^https?://[^\\s]+$"
Url = Annotated[str, {"pattern": URL_PATTERN, "maxLength": 2048,
                      "description": "An http(s) URL"}]
Title = Annotated[str, {"maxLength": 500}]
Tag = Annotated[str, {"pattern": "^[A-Za-z0-9_.-]{1,40}$"}]


@event("bookmark")
@dataclasses.dataclass
class Bookmark:
    """One bookmark (get, list, watch)."""

    id: Annotated[str, {"pattern": ID_PATTERN, "description": "The stable identifier"}]
    url: str
    title: str
    tags: List[str]
    created_at: str


@event("hit")
@dataclasses.dataclass
class Hit:
    """One search result, best first."""

    rank: int
    id: str
    url: str
    title: str


@event("created")
@dataclasses.dataclass
class Created:
    """A bookmark was added (add, import)."""

    id: str
    url: str
    title: str
    tags: List[str]
    created_at: str


@event("updated")
@dataclasses.dataclass
class Updated:
    """A bookmark was changed."""

    id: str
    url: str
    title: str
    tags: List[str]


@event("deleted")
@dataclasses.dataclass
class Deleted:
    """A bookmark was removed."""

    id: str
    url: str


@dataclasses.dataclass
class ImportRecord:
    """One line of import --input-jsonl."""

    url: Url
    title: Title = ""
    tags: List[Tag] = dataclasses.field(default_factory=list)


tool = Tool("bookmarks", "0.1.0", description="A bookmark store on SQLite (Machine Mode)",
            schema_name="io.machinemode.examples.bookmarks.events", schema_versions=["1.0.0"],
            schema_id="https://schemas.machinemode.io/examples/bookmarks/{version}/schema.json",
            auth="none: a local SQLite file (--db, else $XDG_DATA_HOME/bookmarks/bookmarks.db)")

SEED = [["add", "https://example.com/one", "--title", "One example", "--tag", "demo"],
        ["add", "https://example.org/two", "--title", "Two example"],
        ["add", "https://example.net/three", "--title", "Three"]]


def _db_arg(cmd: Command) -> None:
    cmd.argument("--db", type=path, metavar="PATH", help="The database file")


# -- the store ------------------------------------------------------------------------------


def db_path(args: Any) -> str:
    if getattr(args, "db", None):
        return str(args.db)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "bookmarks", "bookmarks.db")


def connect(ctx: Context, create: bool) -> Optional[sqlite3.Connection]:
    """The database, or None when it does not exist and ``create`` is false (reads of a
    store never written are empty, and change nothing)."""
    import sqlite3

    p = db_path(ctx.args)
    if not create and not os.path.exists(p):
        return None
    try:
        if create:
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
        timeout = getattr(ctx.args, "timeout", None)
        con = sqlite3.connect(p, timeout=5.0 if timeout is None else timeout,
                              isolation_level=None)
        if create:
            con.executescript("""
                CREATE TABLE IF NOT EXISTS bookmark (
                    n INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, title TEXT NOT NULL,
                    tags TEXT NOT NULL, created_at TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS idempotency (
                    key TEXT PRIMARY KEY, record TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS secret (
                    id INTEGER PRIMARY KEY CHECK (id = 1), cursor_key BLOB NOT NULL);""")
            # The key that signs this database's cursors: a cursor of another store is refused.
            con.execute("INSERT OR IGNORE INTO secret VALUES (1, ?)", (os.urandom(32),))
        return con
    except (sqlite3.Error, OSError) as e:
        raise errors.io("DB_UNAVAILABLE", f"The database cannot be opened: {type(e).__name__}.",
                        target=p) from None


def rows(con: Optional[sqlite3.Connection], sql: str, params: Tuple[Any, ...] = ()
         ) -> List[Tuple[Any, ...]]:
    if con is None:
        return []
    import sqlite3

    try:
        return list(con.execute(sql, params))
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        if "locked" in str(e):
            raise errors.unavailable("DB_BUSY", "The database is locked.",
                                     retry_after_ms=500) from None
        raise errors.io("DB_ERROR", "The database cannot be read.") from None


def bookmark(row: Tuple[Any, ...]) -> Bookmark:
    n, url, title, tags, created = row
    return Bookmark(f"b{n}", url, title, json.loads(tags), created)


def parse_id(value: str) -> int:
    if not re.match(ID_PATTERN, value):
        raise errors.validation("INVALID_ID", "A bookmark id is b followed by a number, e.g. b1.",
                                field="id")
    return int(value[1:])


# A pattern string, not a compiled one: re compiles (and caches) it on the first URL checked.
_SECRET_QUERY = (r"[?&](token|sig|signature|access_token|code|key|api_key|secret|"
                 r"password|auth)=")


def check_url(url: str) -> str:
    """An http(s) URL without credentials: a bookmark store keeps no secrets (§11), so a URL
    with a user:password or a token-like query key is refused, and never echoed."""
    if not re.match(URL_PATTERN, url) or len(url) > 2048:
        raise errors.validation("INVALID_URL", "The URL must be http(s) without spaces.",
                                field="url")
    authority = url.split("://", 1)[1].split("/", 1)[0]
    if "@" in authority or re.search(_SECRET_QUERY, url, re.IGNORECASE):
        raise errors.validation("URL_HAS_CREDENTIALS",
                                "The URL carries credentials or a token; remove them first.",
                                field="url")
    return url


def check_tags(tags: List[str]) -> List[str]:
    for t in tags:
        if not re.match("^[A-Za-z0-9_.-]{1,40}$", t):
            raise errors.validation("INVALID_TAG", "A tag is 1-40 letters, digits, _ . -.",
                                    field="tag")
    return sorted(set(tags))


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class SqliteIdempotencyStore:
    """machinemode's idempotency store protocol on the bookmark database, so that a record is
    committed in the same transaction as the effect it records (§14.4)."""

    def __init__(self, con: Optional[sqlite3.Connection], *, dry_run: bool = False) -> None:
        self.con = con
        self.dry_run = dry_run  # a dry run forgets nothing, not even an expired record

    def get(self, key: str) -> Optional[IdempotencyRecord]:
        from machinemode.idempotency import IdempotencyRecord

        found = rows(self.con, "SELECT record FROM idempotency WHERE key = ?", (key,))
        return IdempotencyRecord.from_json(json.loads(found[0][0])) if found else None

    def put(self, record: IdempotencyRecord) -> None:
        assert self.con is not None
        self.con.execute("INSERT OR REPLACE INTO idempotency VALUES (?, ?)",
                         (record.key, json.dumps(record.to_json())))

    def delete(self, key: str) -> None:
        if self.con is not None and not self.dry_run:
            self.con.execute("DELETE FROM idempotency WHERE key = ?", (key,))


def prior_run(ctx: Context, command: str, request: Dict[str, Any]) -> Optional[IdempotencyRecord]:
    """The earlier run with this ``--idempotency-key`` and the same request, to replay, or
    None; the key reused for another request is a ``conflict``."""
    key = getattr(ctx.args, "idempotency_key", None)
    if key is None:
        return None
    from machinemode.idempotency import Idempotency, check_key, request_hash

    store = SqliteIdempotencyStore(connect(ctx, False), dry_run=bool(ctx.args.dry_run))
    return Idempotency(store).lookup(check_key(key), request_hash(command, request))


def remember(ctx: Context, con: sqlite3.Connection, command: str, request: Dict[str, Any],
             events: List[Any]) -> None:
    """Records a successful run under its key, inside the effect's transaction."""
    key = getattr(ctx.args, "idempotency_key", None)
    if key is not None:
        from machinemode.idempotency import Idempotency, request_hash

        recorded = [{"type": event_type_of(e), **dataclasses.asdict(e)} for e in events]
        Idempotency(SqliteIdempotencyStore(con)).record(key, request_hash(command, request),
                                                        recorded, {"ok": True})


def replayed(ctx: Context, record: IdempotencyRecord, **fields: Any) -> Outcome:
    """Emits the recorded run's events again; the summary says it was a replay."""
    from machinemode.idempotency import Idempotency

    for ev in Idempotency.replay_events(record):
        ctx.out.emit(ev.pop("type"), ev)
    return ctx.done(properties=Idempotency.replay_properties(record), **fields)


def cursors(con: Optional[sqlite3.Connection]) -> CursorCodec:
    """The codec of this database's cursors (no database: no cursor of ours can exist)."""
    from machinemode.cursor import CursorCodec

    found = rows(con, "SELECT cursor_key FROM secret WHERE id = 1")
    return CursorCodec(bytes(found[0][0]) if found else os.urandom(32))


# -- commands -------------------------------------------------------------------------------

add = tool.command("add", summary="Add a bookmark; reports its stable id", read_only=False,
                   additive=True, groups=[DRY_RUN, IDEMPOTENCY, TIMEOUT], events=[Created],
                   examples=[["add", "https://example.com/", "--title", "Example"],
                             ["add", "https://example.com/k", "--idempotency-key", "k-1"],
                             ["add", "https://example.com/d", "--dry-run"]])


@add.arguments
def add_arguments(cmd: Command) -> None:
    cmd.argument("url", help="The URL to keep", schema={"pattern": URL_PATTERN})
    cmd.argument("--title", default="", help="A title")
    cmd.argument("--tag", action="append", default=[], help="A tag (repeat for several)")
    _db_arg(cmd)


@add.handler
def run_add(ctx: Context) -> Outcome:
    a = ctx.args
    url, tags = check_url(a.url), check_tags(a.tag)
    title = errors.clean_message(a.title) if a.title else ""
    request = {"url": url, "title": title, "tags": tags}
    prior = prior_run(ctx, "add", request)
    if a.dry_run:
        ctx.out.plan("none" if prior is not None else "create", url,
                     "replays the earlier result" if prior is not None else "add a bookmark")
        return Outcome.success(properties={"dry_run": True})
    if prior is not None:
        return replayed(ctx, prior)
    con = connect(ctx, True)
    assert con is not None
    with machinemode.critical():
        con.execute("BEGIN IMMEDIATE")
        stamp = now()
        cur = con.execute("INSERT INTO bookmark (url, title, tags, created_at) VALUES (?,?,?,?)",
                          (url, title, json.dumps(tags), stamp))
        ev = Created(f"b{cur.lastrowid}", url, title, tags, stamp)
        remember(ctx, con, "add", request, [ev])
        con.execute("COMMIT")
        ctx.out.emit(ev)
    return Outcome.success()


get = tool.command("get", summary="Show one bookmark by id", read_only=True, events=[Bookmark],
                   examples=[["get", "b1"]], setup=SEED[:1])


@get.arguments
def get_arguments(cmd: Command) -> None:
    cmd.argument("id", help="The bookmark's id, e.g. b1", schema={"pattern": ID_PATTERN})
    _db_arg(cmd)


@get.handler
def run_get(ctx: Context) -> Outcome:
    n = parse_id(ctx.args.id)
    found = rows(connect(ctx, False), "SELECT * FROM bookmark WHERE n = ?", (n,))
    if not found:
        raise errors.not_found("BOOKMARK_NOT_FOUND", "No bookmark has this id.",
                               target=ctx.args.id)
    ctx.out.emit(bookmark(found[0]))
    return Outcome.success()


lst = tool.command("list", summary="List bookmarks, oldest first (bounded)", read_only=True,
                   groups=[PAGING], events=[Bookmark],
                   examples=[["list"], ["list", "--limit", "2"]], setup=SEED)


@lst.arguments
def list_arguments(cmd: Command) -> None:
    cmd.argument("--tag", help="Only bookmarks with this tag")
    _db_arg(cmd)


@lst.handler
def run_list(ctx: Context) -> Outcome:
    con = connect(ctx, False)
    codec, query = cursors(con), {"tag": ctx.args.tag}
    after = ctx.after(query=query, codec=codec) or 0
    if not isinstance(after, int) or isinstance(after, bool):
        raise errors.validation("CURSOR_INVALID", "The cursor is not one this tool issued.",
                                field="cursor")
    found = (r for r in rows(con, "SELECT * FROM bookmark WHERE n > ? ORDER BY n", (after,))
             if ctx.args.tag is None or ctx.args.tag in json.loads(r[3]))
    return ctx.page(found, position=lambda r: r[0], event=bookmark, query=query, codec=codec)


search = tool.command("search", summary="Search titles and URLs (bounded)", read_only=True,
                      groups=[PAGING], events=[Hit],
                      examples=[["search", "example"], ["search", "example", "--limit", "1"]],
                      setup=SEED)


@search.arguments
def search_arguments(cmd: Command) -> None:
    cmd.argument("query", help="Text to look for in titles and URLs")
    _db_arg(cmd)


@search.handler
def run_search(ctx: Context) -> Outcome:
    q = ctx.args.query.lower()
    con = connect(ctx, False)
    codec, query = cursors(con), {"query": ctx.args.query}
    after = ctx.after(query=query, codec=codec) or 0
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise errors.validation("CURSOR_INVALID", "The cursor is not one this tool issued.",
                                field="cursor")
    found = [r for r in rows(con, "SELECT * FROM bookmark ORDER BY n")
             if q in r[1].lower() or q in r[2].lower()]
    ranked = list(enumerate(found, 1))[after:]
    return ctx.page(ranked, position=lambda h: h[0], query=query, codec=codec,
                    event=lambda h: Hit(h[0], f"b{h[1][0]}", h[1][1], h[1][2]))


update = tool.command("update", summary="Change a bookmark's title, URL or tags",
                      read_only=False, groups=[DRY_RUN, IDEMPOTENCY], events=[Updated],
                      examples=[["update", "b1", "--title", "Renamed"],
                                ["update", "b1", "--title", "Planned", "--dry-run"]],
                      setup=SEED[:1])


@update.arguments
def update_arguments(cmd: Command) -> None:
    cmd.argument("id", help="The bookmark's id", schema={"pattern": ID_PATTERN})
    cmd.argument("--title", help="The new title")
    cmd.argument("--url", help="The new URL", schema={"pattern": URL_PATTERN})
    cmd.argument("--tag", action="append", help="The new tags (replace the old ones)")
    _db_arg(cmd)


@update.handler
def run_update(ctx: Context) -> Outcome:
    a = ctx.args
    n = parse_id(a.id)
    request = {"id": n, "title": a.title, "url": a.url, "tags": a.tag}
    prior = prior_run(ctx, "update", request)
    if prior is not None:
        if a.dry_run:
            ctx.out.plan("none", a.id, "replays the earlier result")
            return Outcome.success(properties={"dry_run": True})
        return replayed(ctx, prior)
    found = rows(connect(ctx, False), "SELECT * FROM bookmark WHERE n = ?", (n,))
    if not found:
        raise errors.not_found("BOOKMARK_NOT_FOUND", "No bookmark has this id.", target=a.id)
    old = bookmark(found[0])
    new = Updated(old.id, check_url(a.url) if a.url is not None else old.url,
                  errors.clean_message(a.title) if a.title is not None else old.title,
                  check_tags(a.tag) if a.tag is not None else old.tags)
    if a.dry_run:
        ctx.out.plan("update", old.id, f"set title, url and tags of {old.id}")
        return Outcome.success(properties={"dry_run": True})
    con = connect(ctx, True)
    assert con is not None
    with machinemode.critical():
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE bookmark SET url = ?, title = ?, tags = ? WHERE n = ?",
                    (new.url, new.title, json.dumps(new.tags), n))
        remember(ctx, con, "update", request, [new])
        con.execute("COMMIT")
        ctx.out.emit(new)
    return Outcome.success()


delete = tool.command(
    "delete", summary="Delete bookmarks by id or by query (destructive: needs --confirm)",
    read_only=False, destructive=True, groups=[DRY_RUN, CONFIRM, IDEMPOTENCY], events=[Deleted],
    examples=[["delete", "b1", "--confirm"], ["delete", "b1", "--dry-run"],
              ["delete", "--query", "example", "--confirm", "--confirm-count", "2"]],
    setup=SEED)


@delete.arguments
def delete_arguments(cmd: Command) -> None:
    cmd.argument("id", nargs="?", help="The bookmark's id", schema={"pattern": ID_PATTERN})
    cmd.argument("--query", help="Delete every bookmark whose title or URL contains this")
    _db_arg(cmd)


@delete.handler
def run_delete(ctx: Context) -> Outcome:
    a = ctx.args
    if (a.id is None) == (a.query is None):
        raise errors.usage("ID_OR_QUERY", "Give a bookmark id or --query, one of them.")
    if not a.dry_run:
        ctx.require_confirm(target=a.id)
    request = {"id": a.id, "query": a.query}
    prior = prior_run(ctx, "delete", request)
    if prior is not None:
        if a.dry_run:
            ctx.out.plan("none", a.id or "bookmarks", "replays the earlier result")
            return Outcome.success(properties={"dry_run": True})
        return replayed(ctx, prior)
    everything = rows(connect(ctx, False), "SELECT * FROM bookmark ORDER BY n")
    if a.id is not None:
        n = parse_id(a.id)
        victims = [r for r in everything if r[0] == n]
        if not victims:
            raise errors.not_found("BOOKMARK_NOT_FOUND", "No bookmark has this id.", target=a.id)
    else:
        q = a.query.lower()
        victims = [r for r in everything if q in r[1].lower() or q in r[2].lower()]
        if not a.dry_run:
            # A delete by query names no item: its count is the guard (§14.3).
            ctx.require_confirm(count=len(victims), count_required=True)
    if a.dry_run:
        for r in victims:
            ctx.out.plan("delete", f"b{r[0]}", f"delete {r[1]}")
        return Outcome.success(properties={"dry_run": True})
    con = connect(ctx, True)
    assert con is not None
    events = [Deleted(f"b{r[0]}", r[1]) for r in victims]
    with machinemode.critical():
        con.execute("BEGIN IMMEDIATE")
        for r in victims:
            con.execute("DELETE FROM bookmark WHERE n = ?", (r[0],))
        remember(ctx, con, "delete", request, events)
        con.execute("COMMIT")
        for e in events:
            ctx.out.emit(e)
    return Outcome.success()


imp = tool.command(
    "import", summary="Add bookmarks from JSONL or JSON records (or an upstream AOI stream)",
    read_only=False, additive=True, groups=[INPUT_JSONL, INPUT_JSON, DRY_RUN, IDEMPOTENCY],
    events=[Created], record=ImportRecord, input_default="fail_fast",
    examples=[["import", "--input-jsonl", "-"],
              ["import", "--input-jsonl", "-", "--continue-on-error"]],
    stdin='{"url": "https://example.com/imported", "title": "Imported", "tags": ["x"]}\n',
    description="Reads JSONL records {url, title?, tags?} (--input-jsonl), or one JSON record or "
                "array of records (--input-json). Default fail-fast: a malformed line "
                "aborts before anything is written (exit 65). --continue-on-error: a malformed "
                "line is an item-scope aoi:error, the rest is imported, ok:false, partial:true.")


@imp.arguments
def import_arguments(cmd: Command) -> None:
    _db_arg(cmd)


@imp.handler
def run_import(ctx: Context) -> Outcome:
    jsonl = ctx.args.input_json is None
    ctx.out.meta(properties={"input_mode": "jsonl" if jsonl else "json",
                             "continue_on_error": ctx.continue_on_error})
    batch = ctx.read_records(ImportRecord)
    where = "input line" if jsonl else "input item"
    recs = []
    for ln, r in batch.records:
        try:
            recs.append((ln, check_url(r.url), errors.clean_message(r.title) if r.title else "",
                         check_tags(r.tags)))
        except errors.AoiError as bad:  # a record the store refuses is the input at fault
            if jsonl:
                bad.line_number = ln
            else:
                bad.item_index = ln
            if not ctx.continue_on_error:
                raise  # fail fast (§12.2): nothing has been written
            ctx.out.error(bad, scope="item")
            batch.item_errors += 1
    request = {"records": [[u, t, g] for _, u, t, g in recs]}
    prior = prior_run(ctx, "import", request)
    if ctx.args.dry_run:
        for ln, url, _t, _g in recs:
            ctx.out.plan("none" if prior is not None else "create", url,
                         f"add the bookmark of {where} {ln}")
        return ctx.done(properties={"dry_run": True})
    if prior is not None:
        return replayed(ctx, prior)
    if recs:
        con = connect(ctx, True)
        assert con is not None
        with machinemode.critical():
            con.execute("BEGIN IMMEDIATE")
            stamp = now()
            events = []
            for _ln, url, title, tags in recs:
                cur = con.execute(
                    "INSERT INTO bookmark (url, title, tags, created_at) VALUES (?,?,?,?)",
                    (url, title, json.dumps(tags), stamp))
                events.append(Created(f"b{cur.lastrowid}", url, title, tags, stamp))
            remember(ctx, con, "import", request, events)
            con.execute("COMMIT")
            for e in events:
                ctx.out.emit(e)
    return ctx.done()


watch = tool.command("watch", summary="Stream bookmarks as they are added (unbounded)",
                     read_only=True, unbounded=True, events=[Bookmark],
                     examples=[["watch", "--interval", "0.2"]])


@watch.arguments
def watch_arguments(cmd: Command) -> None:
    cmd.argument("--interval", type=float, default=1.0, metavar="SECONDS",
                 help="How often to look for new bookmarks", schema={"minimum": 0.05})
    _db_arg(cmd)


@watch.handler
def run_watch(ctx: Context) -> Outcome:
    interval = max(0.05, ctx.args.interval)
    known = rows(connect(ctx, False), "SELECT max(n) FROM bookmark")
    after = known[0][0] or 0 if known else 0
    ctx.out.meta()
    ctx.out.flush()
    while True:
        for r in rows(connect(ctx, False), "SELECT * FROM bookmark WHERE n > ? ORDER BY n",
                      (after,)):
            ctx.out.emit(bookmark(r))
            after = r[0]
        ctx.out.heartbeat(int(interval * 1000))
        time.sleep(interval)
