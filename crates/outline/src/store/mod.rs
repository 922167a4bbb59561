//! The document store: documents, tags, full-text search and a change log in one SQLite file.
//!
//! Each operation is a typed call that says which part of the spec it serves; the command
//! layer turns results into domain events and [`StoreError`]s into `aoi:error`s.
//!
//! # The file
//!
//! [`Store::open`] creates the file (and its directory) on first use, in WAL journal mode
//! (readers never wait for the writer), `synchronous=NORMAL` (a commit survives a crash of
//! the process; a power loss may lose the last commits but never corrupts the file),
//! `foreign_keys=ON` and a busy timeout of [`BUSY_TIMEOUT`]. Schema migrations are versioned
//! in `PRAGMA user_version` (see [`schema`]).
//!
//! The tags table and the full-text index are derived from the documents table and written
//! by this module's own statements in the same transaction, not by triggers or foreign keys
//! (both cost an import more than half its speed; the schema says why).
//! [`Store::integrity_problems`] checks that they agree.
//!
//! # Writes
//!
//! Every write runs in one `BEGIN IMMEDIATE` transaction that takes the database's write
//! lock up front, so writers from any number of processes are serialized, and a
//! read-check-write such as `update --if-match` cannot interleave with another. A document
//! row, its tags, its full-text entry and its change-log entry commit together. Several
//! writes can share a transaction through [`Store::transaction`]; this is how the command
//! layer makes an idempotency record commit with the effect it records (§14.4).
//!
//! # Reads and pagination (§15)
//!
//! [`Store::list`] orders documents by insertion sequence, an integer assigned when a
//! document is created that never changes and is never reused, and pages key-set style
//! (`WHERE seq > ?`, no `OFFSET`), each page through an index seek:
//!
//! - following [`ListPage::next`] visits every document that exists throughout the walk
//!   **exactly once**, in creation order, whatever other processes insert, update or delete
//!   meanwhile;
//! - documents created during the walk are visited too (exactly once), since a new document
//!   always sorts after every existing one: SQLite has one writer at a time, so sequence
//!   order is commit order;
//! - a document deleted before the walk reaches it is not visited; updates never move a
//!   document; under a collection filter, a document moved into the collection behind the
//!   walk's position is not visited, one moved out ahead of it is not either.
//!
//! [`Store::search`] pages over a snapshot of the ranking instead, because BM25 scores move
//! whenever the corpus changes; see the [`search` module](self::search) for why, and for its
//! guarantee.
//!
//! [`Store::watch_changes`] reads the change log by position, which is also commit order, so
//! a watcher that always asks for what follows the last position it saw misses nothing.

pub mod schema;
pub mod search;
pub mod sync;

mod documents;
mod error;
mod idempotency;
mod model;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

pub use error::StoreError;
pub use model::{
    Change, ChangeKind, Document, ListFilter, ListPage, ListPosition, NewDocument, Patch, Status,
    DEFAULT_COLLECTION, ID_PREFIX, MAX_COLLECTION_LEN, MAX_TAG_LEN, SHORT_ID_MIN,
};
pub use search::{plain_query, Hit, SearchPage, SearchPosition, Snippet};

use model::IdSource;

/// How long a call waits for another connection's lock before failing with a busy error
/// ([`StoreError::is_busy`]).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many statements each connection keeps prepared.
const STATEMENT_CACHE: usize = 64;

/// An open outline database.
///
/// One `Store` is one SQLite connection: use it from one thread at a time (it is `Send`),
/// and open another `Store` on the same file for another thread or process.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: Option<PathBuf>,
    /// A random id of this database file, telling search snapshots of two files apart.
    instance: String,
    ids: IdSource,
    search_cache_attached: bool,
    /// Opened read-only ([`Store::open_for_reading`] on a file this process may not write):
    /// the search snapshots are kept in memory.
    read_only: bool,
}

/// `path` for an SQLite `file:` URI: every byte but unreserved ones and `/` percent-encoded.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Store {
    /// Opens the database at `path`, creating it and its parent directories if needed, and
    /// brings its schema up to date.
    ///
    /// Fails with [`StoreError::NewerSchema`] for a file written by a newer outline, and
    /// [`StoreError::NotOutline`] for a file that is some other database or not one at all.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                action: "creating the directory",
                path: parent.to_owned(),
                source,
            })?;
        }
        let conn = Connection::open(path)
            .map_err(|e| StoreError::sqlite(format!("opening {}", path.display()), e))?;
        Store::setup(conn, path, true)
    }

    /// Opens the existing database at `path` for a command that only reads. A file this
    /// process may write is opened as [`Store::open`] opens it (nothing of it is written by a
    /// read, and the search snapshots stay in `<db>-search` for the next page). A file it may
    /// only read is opened read-only, so reading it works: its schema must be current, and its
    /// search snapshots live in memory, for this run only.
    pub fn open_for_reading(path: &Path) -> Result<Store, StoreError> {
        // Opening for writing without truncating changes nothing; it only asks.
        if std::fs::OpenOptions::new().write(true).open(path).is_ok() {
            return Store::open(path);
        }
        // Read-only by the URI's `mode=ro`, for this file only: the connection itself may
        // still write its in-memory search cache.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let open = |immutable: bool| {
            let uri = format!(
                "file:{}?mode=ro{}",
                uri_path(path),
                if immutable { "&immutable=1" } else { "" }
            );
            Connection::open_with_flags(uri, flags)
                .map_err(|e| StoreError::sqlite(format!("opening {}", path.display()), e))
        };
        let mut conn = open(false)?;
        // A WAL database needs its `-shm` index: where this user cannot create it (a directory
        // it may not write), the file is read as immutable, as it is to this user.
        if let Err(StoreError::Sqlite { .. }) = schema::is_current(&conn, path) {
            conn = open(true)?;
        }
        if !schema::is_current(&conn, path)? {
            return Err(StoreError::Io {
                action: "upgrading the schema of a database this user may not write",
                path: path.to_owned(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            });
        }
        let mut store = Store::setup(conn, path, false)?;
        store.path = Some(path.to_owned());
        store.read_only = true;
        Ok(store)
    }

    /// A fresh database in memory, for tests.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory()
            .map_err(StoreError::with("opening an in-memory database"))?;
        Store::setup(conn, Path::new(":memory:"), false)
    }

    fn setup(mut conn: Connection, path: &Path, on_disk: bool) -> Result<Store, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(StoreError::with("setting the busy timeout"))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // First: it refuses a file that is not outline's before anything about it changes.
        schema::migrate(&mut conn, path, schema::MIGRATIONS)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .and_then(|()| conn.pragma_update(None, "foreign_keys", true))
            .map_err(StoreError::with("configuring the connection"))?;
        if on_disk {
            // Persistent in the file; a no-op once set. A read-only file that is not in WAL
            // mode stays as it is (it can still be read; `status` reports `wal: false`).
            let switched = conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0));
            match switched {
                Ok(_) => {}
                Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly) => {}
                Err(e) => return Err(StoreError::sqlite("switching to WAL journal mode", e)),
            }
        }
        let instance: String = conn
            .query_row(
                "SELECT value FROM outline_meta WHERE key = 'instance'",
                [],
                |r| r.get(0),
            )
            .map_err(StoreError::with("reading the database instance id"))?;
        Ok(Store {
            conn,
            path: on_disk.then(|| path.to_owned()),
            instance,
            ids: IdSource::new(),
            search_cache_attached: false,
            read_only: false,
        })
    }

    /// This database's random instance id: a cursor bound to it is refused by another
    /// database (a copy shares it, which is harmless: it holds the same documents).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The database file; `None` for an in-memory store.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Changes how long calls wait for another connection's lock (default [`BUSY_TIMEOUT`]).
    pub fn set_busy_timeout(&self, timeout: Duration) -> Result<(), StoreError> {
        self.conn
            .busy_timeout(timeout)
            .map_err(StoreError::with("setting the busy timeout"))
    }

    /// Runs `f` in one write transaction: everything it does commits together when it
    /// returns `Ok`, and nothing is written when it returns `Err` (or panics).
    ///
    /// The transaction is `BEGIN IMMEDIATE`: it holds the database's write lock from the
    /// start (waiting up to the busy timeout for it), so what `f` reads stays true until it
    /// commits. `E` is the caller's error type, so `f` can fail with its own errors too.
    ///
    /// This is the door for writes that must be atomic with something else. The command layer
    /// runs a command under `--idempotency-key` like this, with the record saved in the same
    /// transaction as the effect (`Tx` implements [`IdempotencyStore`]):
    ///
    /// ```no_run
    /// use aoi::surface::cursor::request_hash;
    /// use aoi::surface::safety::{begin, Recorded, Replay};
    /// use outline::store::{NewDocument, Store, StoreError};
    ///
    /// # #[derive(serde::Serialize)] struct Created { id: String, version: u64 }
    /// # impl aoi::DomainEvent for Created { const TYPE: &'static str = "created"; }
    /// /// What can end a command: the store failed, or the SDK refused something.
    /// enum RunError { Store(StoreError), Refused(aoi::ErrorEvent) }
    /// impl From<StoreError> for RunError { fn from(e: StoreError) -> Self { RunError::Store(e) } }
    /// impl From<aoi::ErrorEvent> for RunError { fn from(e: aoi::ErrorEvent) -> Self { RunError::Refused(e) } }
    ///
    /// fn create(store: &mut Store, key: &str, new: NewDocument) -> Result<Recorded, RunError> {
    ///     let hash = request_hash("create", &serde_json::json!({"title": new.title, "body": new.body}));
    ///     store.transaction(|tx| match begin(tx, key, &hash)? {
    ///         Replay::Replayed(recorded) => Ok(recorded),
    ///         Replay::Fresh(mut recorder) => {
    ///             let doc = tx.create(new)?;
    ///             recorder.record(&Created { id: doc.id, version: doc.version })?;
    ///             Ok(recorder.finish(tx, true)?)
    ///         }
    ///     })
    ///     // Committed (or rolled back as a whole). Now emit the recorded events, e.g. with
    ///     // aoi::surface::safety::replay, marking a replay as such.
    /// }
    /// ```
    ///
    /// Record events inside the transaction and emit them after it commits: a stream that
    /// said `created` for a transaction that then failed to commit would be a lie.
    ///
    /// [`IdempotencyStore`]: aoi::surface::safety::IdempotencyStore
    pub fn transaction<R, E>(&mut self, f: impl FnOnce(&mut Tx<'_>) -> Result<R, E>) -> Result<R, E>
    where
        E: From<StoreError>,
    {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| StoreError::sqlite("taking the write lock", e))?;
        let mut tx = Tx {
            tx,
            ids: &mut self.ids,
        };
        let out = f(&mut tx)?;
        tx.tx
            .commit()
            .map_err(|e| StoreError::sqlite("committing", e))?;
        Ok(out)
    }

    /// Creates a document (`outline create`, §16.3; the result carries its stable id, §14.5).
    pub fn create(&mut self, new: NewDocument) -> Result<Document, StoreError> {
        self.transaction(|tx| tx.create(new))
    }

    /// The document with this id (`outline get`, §16.3; ids are matched in any case), or
    /// whose id is the only one to end with `id` (at least [`SHORT_ID_MIN`] characters, as
    /// [`short_ids`](Self::short_ids) gives them); every command that takes an id looks it
    /// up so.
    pub fn get(&self, id: &str) -> Result<Document, StoreError> {
        documents::get(&self.conn, id)
    }

    /// For each of `ids`, the shortest end of it (at least [`SHORT_ID_MIN`] characters) that
    /// no other document's id shares, for a table to show: [`get`](Self::get) takes it in
    /// place of the id while it stays unshared.
    pub fn short_ids(&self, ids: &[&str]) -> Result<Vec<String>, StoreError> {
        documents::short_ids(&self.conn, ids)
    }

    /// Replaces the fields that `patch` gives (`outline update`, §16.3).
    ///
    /// With `if_match`, the update applies only if the document is at that version, else
    /// [`StoreError::Conflict`] (`update --if-match`, optimistic concurrency): of two
    /// processes updating from the same version, exactly one succeeds. The version goes up
    /// by one.
    pub fn update(
        &mut self,
        id: &str,
        patch: Patch,
        if_match: Option<u64>,
    ) -> Result<Document, StoreError> {
        self.transaction(|tx| tx.update(id, patch, if_match))
    }

    /// Deletes these documents, all or none (`outline delete`, §16.3; the caller confirms
    /// first, §14.3). Repeated ids count once; a missing one is [`StoreError::NotFound`] and
    /// nothing is deleted. Returns the documents as they were.
    pub fn delete(&mut self, ids: &[String]) -> Result<Vec<Document>, StoreError> {
        self.transaction(|tx| tx.delete(ids))
    }

    /// Moves a document to `collection`, retitling it when `new_title` is given (`outline
    /// move`, §16.3); `if_match` as for [`update`](Self::update).
    pub fn move_to(
        &mut self,
        id: &str,
        collection: &str,
        new_title: Option<String>,
        if_match: Option<u64>,
    ) -> Result<Document, StoreError> {
        self.transaction(|tx| tx.move_to(id, collection, new_title, if_match))
    }

    /// Copies a document into `collection` as a new document with a new id (`outline copy`,
    /// §16.3).
    pub fn copy(&mut self, id: &str, collection: &str) -> Result<Document, StoreError> {
        self.transaction(|tx| tx.copy(id, collection))
    }

    /// Imports documents in one transaction: all of them, or, if any is refused, none
    /// (`outline import`, fail-fast, §12). The error is [`StoreError::ImportItem`] with the
    /// item's position. For `--continue-on-error`, use [`Tx::create`] per item in a
    /// [`transaction`](Self::transaction) and skip [item errors](StoreError::is_item_error).
    pub fn import(
        &mut self,
        docs: impl IntoIterator<Item = NewDocument>,
    ) -> Result<Vec<Document>, StoreError> {
        self.transaction(|tx| tx.import(docs))
    }

    /// One page of documents in insertion order (`outline list`, §15, §16.3); `limit` ≥ 1.
    ///
    /// Pass the previous page's [`next`](ListPage::next) as `after` to continue; see the
    /// [module docs](self) for what a walk is guaranteed to visit. Each page costs an index
    /// seek and `limit` rows, whatever its depth (with both a collection and a tag filter,
    /// the walk follows the tag and skips other collections' documents).
    pub fn list(
        &self,
        filter: &ListFilter,
        after: Option<ListPosition>,
        limit: usize,
    ) -> Result<ListPage, StoreError> {
        documents::list(&self.conn, filter, after, limit)
    }

    /// Every document in list order, read in one consistent snapshot (`outline export`).
    ///
    /// The iterator holds a read transaction until it is dropped: what it yields is the
    /// database as of its first batch, whatever is written meanwhile.
    pub fn iter_all(&self) -> Result<AllDocuments<'_>, StoreError> {
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(StoreError::with("starting an export"))?;
        Ok(AllDocuments {
            tx,
            after: None,
            batch: VecDeque::new(),
            done: false,
        })
    }

    /// How many documents pass `filter` (the `count` of a listing).
    pub fn count(&self, filter: &ListFilter) -> Result<u64, StoreError> {
        documents::count(&self.conn, filter)
    }

    /// One page of hits for an FTS5 `query`, best first (`outline search`, §15, §16.3).
    ///
    /// Ranking is BM25 with title matches weighted above tags, and tags above body. The
    /// query is FTS5 syntax; a syntax error is [`StoreError::InvalidQuery`] (use
    /// [`plain_query`] for free text). Pass the previous page's
    /// [`next`](SearchPage::next) as `after`, with the same query and filter, to continue;
    /// see the [`search` module](self::search) for the paging guarantee.
    pub fn search(
        &mut self,
        query: &str,
        filter: &ListFilter,
        after: Option<SearchPosition>,
        limit: usize,
    ) -> Result<SearchPage, StoreError> {
        self.search_in(query, filter, after, limit, false)
    }

    /// Like [`Store::search`], and the page always has a snapshot to resume from
    /// ([`SearchPage::resume`]), even when it holds every match: for a caller that may show
    /// only part of it (`--max-bytes`).
    pub fn search_resumable(
        &mut self,
        query: &str,
        filter: &ListFilter,
        after: Option<SearchPosition>,
        limit: usize,
    ) -> Result<SearchPage, StoreError> {
        self.search_in(query, filter, after, limit, true)
    }

    fn search_in(
        &mut self,
        query: &str,
        filter: &ListFilter,
        after: Option<SearchPosition>,
        limit: usize,
        resumable: bool,
    ) -> Result<SearchPage, StoreError> {
        if !self.search_cache_attached {
            let cache = self.path.as_deref().filter(|_| !self.read_only);
            search::attach_cache(&self.conn, cache)?;
            self.search_cache_attached = true;
        }
        let cx = search::SearchContext {
            conn: &mut self.conn,
            ids: &mut self.ids,
            instance: &self.instance,
        };
        search::search(cx, query, filter, after, limit, resumable)
    }

    /// How many documents match an FTS5 `query` and pass `filter`.
    pub fn count_query(&self, query: &str, filter: &ListFilter) -> Result<u64, StoreError> {
        search::count_matches(&self.conn, query, filter)
    }

    /// Change-log entries after position `since` (0 for all), oldest first, at most
    /// `limit` (`outline watch`, §4.2, §16.3). Start from [`last_change`](Self::last_change) to see
    /// only what happens from now on.
    pub fn watch_changes(&self, since: i64, limit: usize) -> Result<Vec<Change>, StoreError> {
        documents::changes_since(&self.conn, since, limit)
    }

    /// The newest change-log position (0 for an empty log).
    pub fn last_change(&self) -> Result<i64, StoreError> {
        documents::last_change(&self.conn)
    }

    /// Counts and facts about the database (`outline status`, §16.3).
    pub fn status(&self) -> Result<Status, StoreError> {
        let read = |sql: &str| -> Result<i64, StoreError> {
            self.conn
                .query_row(sql, [], |r| r.get(0))
                .map_err(|e| StoreError::sqlite("reading status", e))
        };
        let count = |sql: &str| read(sql).map(|n| u64::try_from(n).unwrap_or(0));
        let journal: String = self
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .map_err(StoreError::with("reading the journal mode"))?;
        Ok(Status {
            documents: count("SELECT count(*) FROM documents")?,
            collections: count("SELECT count(DISTINCT collection) FROM documents")?,
            tags: count("SELECT count(DISTINCT tag) FROM document_tags")?,
            db_path: self.path.clone(),
            size_bytes: count(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            )?,
            schema_version: read("PRAGMA user_version")?,
            wal: journal.eq_ignore_ascii_case("wal"),
            last_change: documents::last_change(&self.conn)?,
        })
    }

    /// True when [`integrity_problems`](Self::integrity_problems) finds none.
    pub fn integrity_check(&mut self) -> Result<bool, StoreError> {
        Ok(self.integrity_problems()?.is_empty())
    }

    /// Everything wrong with the database file (`outline doctor`, §16.2): SQLite's
    /// `integrity_check` of the b-trees, `foreign_key_check`, FTS5's own check that the
    /// full-text index matches the documents, and a check that the tag rows match the
    /// documents' tags. Empty when all is well; each problem is one line.
    ///
    /// The FTS5 check is a command written as an `INSERT`, so this takes the write lock
    /// briefly (it writes nothing).
    pub fn integrity_problems(&mut self) -> Result<Vec<String>, StoreError> {
        let mut problems: Vec<String> = self
            .conn
            .prepare("PRAGMA main.integrity_check")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(StoreError::with("running integrity_check"))?
            .into_iter()
            .filter(|line| line != "ok")
            .collect();
        let orphans: Vec<String> = self
            .conn
            .prepare("PRAGMA main.foreign_key_check")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| {
                    Ok(format!(
                        "foreign key violation in {} row {}",
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<i64>>(1)?.unwrap_or_default()
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(StoreError::with("running foreign_key_check"))?;
        problems.extend(orphans);
        let (orphan_tags, mismatched): (i64, i64) = self
            .conn
            .query_row(
                "SELECT \
                 (SELECT count(*) FROM document_tags t \
                  WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.seq = t.doc)), \
                 (SELECT count(*) FROM documents d \
                  LEFT JOIN (SELECT doc, count(*) AS n FROM document_tags GROUP BY doc) t \
                  ON t.doc = d.seq \
                  WHERE coalesce(t.n, 0) != CASE WHEN d.tags = '' THEN 0 \
                  ELSE length(d.tags) - length(replace(d.tags, ' ', '')) + 1 END)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(StoreError::with("checking the tag index"))?;
        if orphan_tags > 0 {
            problems.push(format!("{orphan_tags} tag rows belong to no document"));
        }
        if mismatched > 0 {
            problems.push(format!(
                "{mismatched} documents have tags that the tag index does not list"
            ));
        }
        let fts = self.conn.execute(
            "INSERT INTO documents_fts (documents_fts, rank) VALUES ('integrity-check', 1)",
            [],
        );
        match fts {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(err, message))
                if err.code == rusqlite::ErrorCode::DatabaseCorrupt =>
            {
                problems.push(format!(
                    "the full-text index does not match the documents: {}",
                    message.unwrap_or_else(|| err.to_string())
                ));
            }
            Err(e) => return Err(StoreError::sqlite("checking the full-text index", e)),
        }
        Ok(problems)
    }
}

/// A write transaction, from [`Store::transaction`]: the same writes as [`Store`], all
/// committing together.
///
/// An [item error](StoreError::is_item_error) from a call leaves the transaction as it was
/// before the call, so the caller may go on with other items; any other error means the
/// transaction should be abandoned (return the error from the closure).
#[derive(Debug)]
pub struct Tx<'s> {
    tx: rusqlite::Transaction<'s>,
    ids: &'s mut IdSource,
}

impl Tx<'_> {
    /// Creates a document (see [`Store::create`]).
    pub fn create(&mut self, new: NewDocument) -> Result<Document, StoreError> {
        documents::insert(&self.tx, self.ids, new, ChangeKind::Created, None)
    }

    /// Imports documents (see [`Store::import`]); on a refused item, the transaction must be
    /// abandoned, since the items before it were written.
    pub fn import(
        &mut self,
        docs: impl IntoIterator<Item = NewDocument>,
    ) -> Result<Vec<Document>, StoreError> {
        let docs = docs.into_iter();
        let mut imported = Vec::with_capacity(docs.size_hint().0);
        let mut inserter = documents::Inserter::new(&self.tx)?;
        for (index, new) in docs.enumerate() {
            let doc = inserter
                .insert(self.ids, new, ChangeKind::Created, None)
                .map_err(|e| StoreError::ImportItem {
                    index,
                    source: Box::new(e),
                })?;
            imported.push(doc);
        }
        Ok(imported)
    }

    /// An importer that inserts documents one at a time with prepared statements, for a
    /// caller that streams its input into this transaction (`outline import`).
    pub fn importer(&mut self) -> Result<Importer<'_>, StoreError> {
        Ok(Importer {
            inserter: documents::Inserter::new(&self.tx)?,
            ids: self.ids,
        })
    }

    /// The document with this id, as this transaction sees it.
    pub fn get(&self, id: &str) -> Result<Document, StoreError> {
        documents::get(&self.tx, id)
    }

    /// The ids of all documents passing `filter`, in list order (for a bulk delete: count
    /// them, check `--confirm-count`, and delete them in the same transaction).
    pub fn ids(&self, filter: &ListFilter) -> Result<Vec<String>, StoreError> {
        documents::ids(&self.tx, filter)
    }

    /// The ids of all documents matching an FTS5 `query` and passing `filter`, best first.
    pub fn ids_matching(
        &self,
        query: &str,
        filter: &ListFilter,
    ) -> Result<Vec<String>, StoreError> {
        search::all_ids(&self.tx, query, filter)
    }

    /// Replaces fields of a document (see [`Store::update`]).
    pub fn update(
        &mut self,
        id: &str,
        patch: Patch,
        if_match: Option<u64>,
    ) -> Result<Document, StoreError> {
        documents::update(&self.tx, id, patch, if_match)
    }

    /// Deletes documents (see [`Store::delete`]); on [`StoreError::NotFound`] the
    /// transaction must be abandoned if earlier ids were deleted.
    pub fn delete(&mut self, ids: &[String]) -> Result<Vec<Document>, StoreError> {
        documents::delete(&self.tx, ids)
    }

    /// Moves a document (see [`Store::move_to`]).
    pub fn move_to(
        &mut self,
        id: &str,
        collection: &str,
        new_title: Option<String>,
        if_match: Option<u64>,
    ) -> Result<Document, StoreError> {
        documents::move_to(&self.tx, id, collection, new_title, if_match)
    }

    /// Copies a document (see [`Store::copy`]).
    pub fn copy(&mut self, id: &str, collection: &str) -> Result<Document, StoreError> {
        documents::copy(&self.tx, self.ids, id, collection)
    }
}

/// Inserts documents into a transaction one at a time, from [`Tx::importer`].
pub struct Importer<'t> {
    inserter: documents::Inserter<'t>,
    ids: &'t mut IdSource,
}

impl std::fmt::Debug for Importer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Importer").finish_non_exhaustive()
    }
}

impl Importer<'_> {
    /// Creates a document (see [`Store::create`]). An [item
    /// error](StoreError::is_item_error) leaves the transaction as it was before the call.
    pub fn insert(&mut self, new: NewDocument) -> Result<Document, StoreError> {
        self.inserter
            .insert(self.ids, new, ChangeKind::Created, None)
    }
}

/// The documents of a store in list order, from [`Store::iter_all`].
#[derive(Debug)]
pub struct AllDocuments<'s> {
    tx: rusqlite::Transaction<'s>,
    after: Option<ListPosition>,
    batch: VecDeque<Document>,
    done: bool,
}

impl AllDocuments<'_> {
    const BATCH: usize = 512;
}

impl Iterator for AllDocuments<'_> {
    type Item = Result<Document, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.batch.is_empty() && !self.done {
            match documents::list(&self.tx, &ListFilter::default(), self.after, Self::BATCH) {
                Ok(page) => {
                    self.after = page.next;
                    self.done = page.next.is_none();
                    self.batch = page.documents.into();
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        self.batch.pop_front().map(Ok)
    }
}
