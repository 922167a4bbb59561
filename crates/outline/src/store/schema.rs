//! The database schema and its versioned migrations.
//!
//! `PRAGMA user_version` holds the number of migrations applied. Opening a database applies
//! the missing ones in one `BEGIN IMMEDIATE` transaction, so two processes opening a fresh
//! file at once serialize and the second finds nothing left to do; a failed migration
//! leaves the file at its old version. A file at a version newer than this build knows is
//! refused ([`StoreError::NewerSchema`]) rather than used or downgraded.
//!
//! `PRAGMA application_id` marks the file as outline's, so that pointing `--db` at some
//! other SQLite database is an error instead of a migration of someone else's data.
//!
//! Migrations are append-only: a released one is never edited, a change is a new entry.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::error::StoreError;

/// `PRAGMA application_id` of an outline database: "outl" in ASCII.
pub const APPLICATION_ID: i64 = 0x6f75_746c;

/// The BM25 weights of the indexed columns, in index order: title, body, tags.
pub(crate) const BM25_WEIGHTS: (f64, f64, f64) = (10.0, 1.0, 5.0);

/// One schema step: the SQL that takes the database from version `n - 1` to `n`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// What the step does, for error messages.
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration, in order; the schema version is the number applied.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "documents, tags, full-text index, change log, idempotency records",
        sql: r#"
CREATE TABLE documents (
    -- The insertion sequence: the list order key. AUTOINCREMENT so that it is never reused,
    -- not even after the newest document is deleted.
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT    NOT NULL UNIQUE CHECK (length(id) = 30 AND id GLOB 'doc_*'),
    title      TEXT    NOT NULL CHECK (length(trim(title)) > 0),
    body       TEXT    NOT NULL,
    -- Space-separated, as the full-text index reads it; document_tags is the queryable form.
    tags       TEXT    NOT NULL DEFAULT '',
    collection TEXT    NOT NULL DEFAULT 'inbox' CHECK (length(collection) > 0),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version    INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1)
);
CREATE INDEX documents_by_collection ON documents (collection, seq);

-- doc is documents.seq. No foreign key: the store writes and deletes tag rows with the
-- document (a key would need an index on doc, one more b-tree insert per tag on import);
-- `doctor` checks that the two agree.
CREATE TABLE document_tags (
    tag TEXT    NOT NULL,
    doc INTEGER NOT NULL,
    PRIMARY KEY (tag, doc)
) WITHOUT ROWID;

-- External content: the index stores no second copy of the text. The store writes it in
-- the same transaction as each change to documents, with its own statements rather than
-- triggers: a trigger on documents would run FTS5 inside a statement savepoint, which makes
-- FTS5 flush its pending index to disk once per document and imports 2-3x slower.
CREATE VIRTUAL TABLE documents_fts USING fts5 (
    title, body, tags,
    content = 'documents',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- Append-only; AUTOINCREMENT so that positions are never reused.
CREATE TABLE changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('created', 'updated', 'deleted', 'moved', 'copied')),
    doc_id     TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    collection TEXT    NOT NULL,
    -- moved: the collection left; copied: the id of the original.
    origin     TEXT
);

CREATE TABLE idempotency (
    key          TEXT    PRIMARY KEY,
    request_hash TEXT    NOT NULL,
    record       TEXT    NOT NULL,
    saved_at     INTEGER NOT NULL
) WITHOUT ROWID;

-- Facts about this database file; `instance` tells two databases at the same path apart.
CREATE TABLE outline_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO outline_meta (key, value) VALUES ('instance', lower(hex(randomblob(16))));
"#,
    },
    Migration {
        name: "a 64 MiB full-text pending-terms buffer",
        sql: r#"
-- FTS5 keeps the terms of a transaction's new rows in memory and writes them out as an index
-- segment whenever the buffer fills (1 MiB by default). A 100k-document import in one
-- transaction then writes about a hundred small segments and merges them over and over;
-- with 64 MiB it writes a few large ones and imports 1.4x faster. Small transactions are
-- unaffected: the buffer is flushed at every commit, whatever its size.
INSERT INTO documents_fts (documents_fts, rank) VALUES ('hashsize', 67108864);
"#,
    },
];

/// The schema version this build writes, and the newest it opens.
pub fn supported_version() -> i64 {
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

/// Checks that `conn` is an outline database (or an empty file) and brings its schema up to
/// date with `migrations`. Returns the schema version.
pub(crate) fn migrate(
    conn: &mut Connection,
    path: &Path,
    migrations: &[Migration],
) -> Result<i64, StoreError> {
    let supported = i64::try_from(migrations.len()).unwrap_or(i64::MAX);
    // A plain read first: an up-to-date database is opened without taking the write lock.
    let found = version_at_most(conn, path, supported)?;
    if found == supported {
        return Ok(found);
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(StoreError::with("locking the database to migrate it"))?;
    // Another process may have migrated between the read and the lock.
    let found = version_at_most(&tx, path, supported)?;
    let start = usize::try_from(found).unwrap_or(0);
    for (index, migration) in migrations.iter().enumerate().skip(start) {
        tx.execute_batch(migration.sql).map_err(|e| {
            StoreError::sqlite(
                format!(
                    "applying schema migration {} ({})",
                    index + 1,
                    migration.name
                ),
                e,
            )
        })?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(StoreError::with("marking the database as outline's"))?;
    tx.pragma_update(None, "user_version", supported)
        .map_err(StoreError::with("recording the schema version"))?;
    tx.commit()
        .map_err(StoreError::with("committing the schema migration"))?;
    Ok(supported)
}

/// True when the database on `conn` is outline's at the schema this build writes (a read can
/// use it as it is); an error for a newer one or a file that is not outline's.
pub(crate) fn is_current(conn: &Connection, path: &Path) -> Result<bool, StoreError> {
    let supported = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    Ok(version_at_most(conn, path, supported)? == supported)
}

/// The schema version of the outline database on `conn`, refused when it is newer than
/// `supported` (or the file is not outline's).
fn version_at_most(conn: &Connection, path: &Path, supported: i64) -> Result<i64, StoreError> {
    let found = check_identity(conn, path)?;
    if found > supported {
        return Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found,
            supported,
        });
    }
    Ok(found)
}

/// Reads `user_version`, refusing files that belong to something else.
fn check_identity(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let not_outline = |reason: String| StoreError::NotOutline {
        path: path.to_owned(),
        reason,
    };
    let read = |pragma: &str| -> Result<i64, StoreError> {
        conn.pragma_query_value(None, pragma, |row| row.get(0))
            .map_err(|e| match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::NotADatabase) => {
                    not_outline("it is not an SQLite database".to_owned())
                }
                _ => StoreError::sqlite(format!("reading PRAGMA {pragma}"), e),
            })
    };
    let application_id = read("application_id")?;
    let version = read("user_version")?;
    if application_id == APPLICATION_ID {
        return Ok(version);
    }
    if application_id != 0 {
        return Err(not_outline(format!(
            "its application_id is {application_id:#x}, not outline's {APPLICATION_ID:#x}"
        )));
    }
    let other_table: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' LIMIT 1",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(StoreError::with("reading the schema"))?;
    match other_table {
        None if version == 0 => Ok(0),
        None => Err(not_outline(format!(
            "it is empty but says it is at schema version {version}"
        ))),
        Some(table) => Err(not_outline(format!(
            "it already holds other data (table {table:?})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user_version(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    }

    const STEPS: &[Migration] = &[
        Migration {
            name: "one",
            sql: "CREATE TABLE one (x INTEGER);",
        },
        Migration {
            name: "two",
            sql: "CREATE TABLE two (y INTEGER); INSERT INTO one VALUES (1);",
        },
    ];

    #[test]
    fn migrations_apply_in_order_once() {
        let path = Path::new(":memory:");
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn, path, &STEPS[..1]).unwrap(), 1);
        assert_eq!(user_version(&conn), 1);
        assert_eq!(migrate(&mut conn, path, STEPS).unwrap(), 2);
        assert_eq!(migrate(&mut conn, path, STEPS).unwrap(), 2);
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM one", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1, "step two ran exactly once");
        let app: i64 = conn
            .pragma_query_value(None, "application_id", |r| r.get(0))
            .unwrap();
        assert_eq!(app, APPLICATION_ID);
    }

    #[test]
    fn a_failing_migration_changes_nothing() {
        let path = Path::new(":memory:");
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, path, &STEPS[..1]).unwrap();
        let broken = [
            STEPS[0],
            Migration {
                name: "broken",
                sql: "CREATE TABLE three (z INTEGER); INSERT INTO nowhere VALUES (1);",
            },
        ];
        let err = migrate(&mut conn, path, &broken).unwrap_err();
        assert!(err.to_string().contains("migration 2 (broken)"), "{err}");
        assert_eq!(user_version(&conn), 1);
        let three: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'three'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(three, 0, "the failed step was rolled back");
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let path = Path::new("x.db");
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, path, STEPS).unwrap();
        let err = migrate(&mut conn, path, &STEPS[..1]).unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::NewerSchema {
                    found: 2,
                    supported: 1,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(user_version(&conn), 2);
    }

    #[test]
    fn foreign_databases_are_refused() {
        let path = Path::new("other.db");
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE accounts (id INTEGER);")
            .unwrap();
        let err = migrate(&mut conn, path, MIGRATIONS).unwrap_err();
        assert!(matches!(err, StoreError::NotOutline { .. }), "{err}");
        assert!(err.to_string().contains("accounts"), "{err}");

        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "application_id", 42).unwrap();
        let err = migrate(&mut conn, path, MIGRATIONS).unwrap_err();
        assert!(err.to_string().contains("application_id is 0x2a"), "{err}");
    }
}
