//! Reading and writing documents, their tags and the change log, on any connection or
//! transaction.
//!
//! Every write here runs inside a transaction opened by
//! [`Store::transaction`](super::Store::transaction) (`BEGIN IMMEDIATE`): the row, its tags,
//! its full-text entry and its change-log entry commit together or not at all. The tag rows
//! and the full-text index are written here rather than by triggers and foreign keys (see
//! the schema for why), so every change to a document goes through this module. Each write
//! validates its input before its first statement, and the first statement is the only one
//! a caller's input can make fail, so a refused item leaves the transaction as it was.

use std::collections::HashMap;

use rusqlite::types::Value;
use rusqlite::{params, CachedStatement, Connection, OptionalExtension, Row};

use super::error::StoreError;
use super::model::{
    canonical_id, check_collection, check_title, id_ending, invalid, join_tags, normalize_tags,
    now_ms, split_tags, Change, ChangeKind, Document, IdSource, ListFilter, ListPage, ListPosition,
    NewDocument, Patch, DEFAULT_COLLECTION, SHORT_ID_MIN,
};

/// The columns [`document_from_row`] reads, in order, from `documents d`.
pub(super) const DOCUMENT_COLUMNS: &str =
    "d.seq, d.id, d.title, d.body, d.tags, d.collection, d.created_at, d.updated_at, d.version";

/// A [`Document`] from the [`DOCUMENT_COLUMNS`] of a row.
pub(super) fn document_from_row(row: &Row<'_>) -> rusqlite::Result<Document> {
    let tags: String = row.get(4)?;
    Ok(Document {
        seq: row.get(0)?,
        id: row.get(1)?,
        title: row.get(2)?,
        body: row.get(3)?,
        tags: split_tags(&tags),
        collection: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        version: version_from_row(row, 8)?,
    })
}

pub(super) fn version_from_row(row: &Row<'_>, index: usize) -> rusqlite::Result<u64> {
    let version: i64 = row.get(index)?;
    u64::try_from(version).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(index, version))
}

/// Versions go to SQLite as i64; a version beyond i64 cannot match any stored one.
fn version_param(version: u64) -> i64 {
    i64::try_from(version).unwrap_or(-1)
}

fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Looks a document up by its id (any case) or by the end of its id ([`id_ending`]), which
/// must name one document only ([`StoreError::Ambiguous`]); anything else is simply not
/// found.
pub(super) fn get(conn: &Connection, id: &str) -> Result<Document, StoreError> {
    let not_found = || StoreError::NotFound { id: id.to_owned() };
    if let Ok(canonical) = canonical_id(id) {
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {DOCUMENT_COLUMNS} FROM documents d WHERE d.id = ?1"
            ))
            .map_err(StoreError::with("preparing a document lookup"))?;
        return stmt
            .query_row([&canonical], document_from_row)
            .optional()
            .map_err(StoreError::with("reading a document"))?
            .ok_or_else(not_found);
    }
    let Some(ending) = id_ending(id) else {
        return Err(not_found());
    };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {DOCUMENT_COLUMNS} FROM documents d WHERE substr(d.id, -?2) = ?1 \
             ORDER BY d.seq LIMIT 3"
        ))
        .map_err(StoreError::with("preparing a document lookup"))?;
    let mut found = stmt
        .query_map(params![ending, ending.len() as i64], document_from_row)
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<Document>>>())
        .map_err(StoreError::with("reading a document"))?;
    match found.len() {
        0 => Err(not_found()),
        1 => Ok(found.remove(0)),
        _ => Err(StoreError::Ambiguous {
            reference: id.to_owned(),
            ids: found.into_iter().map(|d| d.id).collect(),
        }),
    }
}

/// For each of `ids`, the shortest end of it (at least [`SHORT_ID_MIN`] characters) that
/// no other stored id shares, which [`get`] takes in its place; an id whose every shorter
/// end is shared stays whole.
pub(super) fn short_ids(conn: &Connection, ids: &[&str]) -> Result<Vec<String>, StoreError> {
    let mut short: Vec<Option<String>> = vec![None; ids.len()];
    // One pass over the ids per length, counting the stored ids that end like one of ours
    // (at most a few lengths: 6 characters are shared by about 5 pairs in 100,000 ids).
    let mut stmt = conn
        .prepare_cached(
            "SELECT substr(id, -?2) AS ending FROM documents \
             WHERE ending IN (SELECT value FROM json_each(?1))",
        )
        .map_err(StoreError::with("preparing a look at id endings"))?;
    for len in SHORT_ID_MIN..ulid::ULID_LEN {
        let pending: Vec<(usize, &str)> = ids
            .iter()
            .enumerate()
            .filter(|(i, id)| {
                short[*i].is_none() && id.len() > len && id.is_char_boundary(id.len() - len)
            })
            .map(|(i, id)| (i, &id[id.len() - len..]))
            .collect();
        if pending.is_empty() {
            break;
        }
        let endings: Vec<&str> = pending.iter().map(|(_, end)| *end).collect();
        let endings = serde_json::to_string(&endings).unwrap_or_default();
        let mut stored: HashMap<String, usize> = HashMap::new();
        let rows = stmt
            .query_map(params![endings, len as i64], |row| row.get::<_, String>(0))
            .map_err(StoreError::with("reading id endings"))?;
        for ending in rows {
            *stored
                .entry(ending.map_err(StoreError::with("reading id endings"))?)
                .or_default() += 1;
        }
        for (i, end) in pending {
            if stored.get(end).copied().unwrap_or(0) <= 1 {
                short[i] = Some(end.to_owned());
            }
        }
    }
    Ok(ids
        .iter()
        .zip(short)
        .map(|(id, short)| short.unwrap_or_else(|| (*id).to_owned()))
        .collect())
}

/// The `FROM ... WHERE` of a filtered listing, ordered by the sequence column it returns
/// (`key`), with `?1` the position to start after and the filter values from `?2` on.
pub(super) fn filtered_source(filter: &ListFilter) -> (String, &'static str, Vec<Value>) {
    let mut values = Vec::new();
    let (source, key) = match (&filter.collection, &filter.tag) {
        (None, None) => ("documents d WHERE d.seq > ?1".to_owned(), "d.seq"),
        (Some(collection), None) => {
            values.push(Value::Text(collection.clone()));
            (
                // documents_by_collection (collection, seq) serves both the filter and the order.
                "documents d WHERE d.collection = ?2 AND d.seq > ?1".to_owned(),
                "d.seq",
            )
        }
        (None, Some(tag)) => {
            values.push(Value::Text(tag.clone()));
            (
                // The primary key (tag, doc) serves both the filter and the order.
                "document_tags t JOIN documents d ON d.seq = t.doc WHERE t.tag = ?2 AND t.doc > ?1"
                    .to_owned(),
                "t.doc",
            )
        }
        (Some(collection), Some(tag)) => {
            values.push(Value::Text(tag.clone()));
            values.push(Value::Text(collection.clone()));
            (
                "document_tags t JOIN documents d ON d.seq = t.doc \
                 WHERE t.tag = ?2 AND t.doc > ?1 AND d.collection = ?3"
                    .to_owned(),
                "t.doc",
            )
        }
    };
    (source, key, values)
}

/// One page of documents after `after` in insertion order; fetches one extra row to know
/// whether another page exists.
pub(super) fn list(
    conn: &Connection,
    filter: &ListFilter,
    after: Option<ListPosition>,
    limit: usize,
) -> Result<ListPage, StoreError> {
    if limit == 0 {
        return Err(invalid("limit", "must be at least 1"));
    }
    let (source, key, filter_values) = filtered_source(filter);
    let limit_index = filter_values.len() + 2;
    let sql =
        format!("SELECT {DOCUMENT_COLUMNS} FROM {source} ORDER BY {key} LIMIT ?{limit_index}");
    let mut values = Vec::with_capacity(filter_values.len() + 2);
    values.push(Value::Integer(after.map_or(0, ListPosition::after)));
    values.extend(filter_values);
    values.push(Value::Integer(limit_param(limit).saturating_add(1)));
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(StoreError::with("preparing a listing"))?;
    let mut documents = stmt
        .query_map(rusqlite::params_from_iter(values), document_from_row)
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(StoreError::with("listing documents"))?;
    let next = if documents.len() > limit {
        documents.truncate(limit);
        documents.last().map(Document::list_position)
    } else {
        None
    };
    Ok(ListPage { documents, next })
}

/// How many documents pass `filter`.
pub(super) fn count(conn: &Connection, filter: &ListFilter) -> Result<u64, StoreError> {
    let (source, _, filter_values) = filtered_source(filter);
    let mut values = vec![Value::Integer(0)];
    values.extend(filter_values);
    let n: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM {source}"))
        .and_then(|mut stmt| stmt.query_row(rusqlite::params_from_iter(values), |r| r.get(0)))
        .map_err(StoreError::with("counting documents"))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The ids of every document passing `filter`, in insertion order.
pub(super) fn ids(conn: &Connection, filter: &ListFilter) -> Result<Vec<String>, StoreError> {
    let (source, key, filter_values) = filtered_source(filter);
    let mut values = vec![Value::Integer(0)];
    values.extend(filter_values);
    let mut stmt = conn
        .prepare_cached(&format!("SELECT d.id FROM {source} ORDER BY {key}"))
        .map_err(StoreError::with("preparing an id listing"))?;
    stmt.query_map(rusqlite::params_from_iter(values), |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(StoreError::with("listing document ids"))
}

/// The statements that insert documents, prepared once for a whole import.
pub(super) struct Inserter<'c> {
    conn: &'c Connection,
    document: CachedStatement<'c>,
    text: CachedStatement<'c>,
    tag: CachedStatement<'c>,
    change: CachedStatement<'c>,
}

impl<'c> Inserter<'c> {
    pub(super) fn new(conn: &'c Connection) -> Result<Inserter<'c>, StoreError> {
        let prepare = |sql: &str| {
            conn.prepare_cached(sql)
                .map_err(StoreError::with("preparing a document insert"))
        };
        Ok(Inserter {
            conn,
            document: prepare(
                "INSERT INTO documents (id, title, body, tags, collection, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            text: prepare(INDEX_TEXT)?,
            tag: prepare(INSERT_TAG)?,
            change: prepare(LOG_CHANGE)?,
        })
    }

    /// Inserts a new document with its full-text entry, its tags and its change-log entry.
    pub(super) fn insert(
        &mut self,
        ids: &mut IdSource,
        new: NewDocument,
        kind: ChangeKind,
        origin: Option<&str>,
    ) -> Result<Document, StoreError> {
        check_title(&new.title)?;
        let collection = new
            .collection
            .unwrap_or_else(|| DEFAULT_COLLECTION.to_owned());
        check_collection(&collection)?;
        let tags = normalize_tags(new.tags)?;
        let now = now_ms();
        let created_at = new.created_at.unwrap_or(now);
        let updated_at = new.updated_at.unwrap_or(created_at);
        if updated_at < created_at {
            return Err(invalid("updated_at", "is earlier than created_at"));
        }
        let id = match new.id {
            Some(id) => canonical_id(&id)?,
            None => ids.next_id(created_at)?,
        };
        let tag_text = join_tags(&tags);
        // The one statement that input can make fail; everything after it cannot.
        if let Err(e) = self.document.execute(params![
            id, new.title, new.body, tag_text, collection, created_at, updated_at
        ]) {
            return Err(if is_unique_violation(&e) {
                StoreError::Duplicate { id }
            } else {
                StoreError::sqlite("inserting a document", e)
            });
        }
        let seq = self.conn.last_insert_rowid();
        self.text
            .execute(params![seq, new.title, new.body, tag_text])
            .map_err(StoreError::with("indexing a document"))?;
        for tag in &tags {
            self.tag
                .execute(params![tag, seq])
                .map_err(StoreError::with("inserting a tag"))?;
        }
        let document = Document {
            id,
            title: new.title,
            body: new.body,
            tags,
            collection,
            created_at,
            updated_at,
            version: 1,
            seq,
        };
        execute_change(&mut self.change, kind, &document, origin, now)
            .map_err(StoreError::with("writing the change log"))?;
        Ok(document)
    }
}

/// Inserts one document (see [`Inserter::insert`]).
pub(super) fn insert(
    conn: &Connection,
    ids: &mut IdSource,
    new: NewDocument,
    kind: ChangeKind,
    origin: Option<&str>,
) -> Result<Document, StoreError> {
    Inserter::new(conn)?.insert(ids, new, kind, origin)
}

const INDEX_TEXT: &str =
    "INSERT INTO documents_fts (rowid, title, body, tags) VALUES (?1, ?2, ?3, ?4)";
const UNINDEX_TEXT: &str = "INSERT INTO documents_fts (documents_fts, rowid, title, body, tags) \
     VALUES ('delete', ?1, ?2, ?3, ?4)";
const INSERT_TAG: &str = "INSERT INTO document_tags (tag, doc) VALUES (?1, ?2)";
const DELETE_TAG: &str = "DELETE FROM document_tags WHERE tag = ?1 AND doc = ?2";
const LOG_CHANGE: &str = "INSERT INTO changes (at, kind, doc_id, version, collection, origin) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(err, _)
            if err.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || err.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    )
}

/// Adds a document's text to the full-text index.
fn index_text(conn: &Connection, document: &Document) -> Result<(), StoreError> {
    text_statement(conn, INDEX_TEXT, document).map_err(StoreError::with("indexing a document"))
}

/// Removes a document's text from the full-text index; FTS5 needs the exact text that was
/// indexed, which is what `document` holds as read before the change.
fn unindex_text(conn: &Connection, document: &Document) -> Result<(), StoreError> {
    text_statement(conn, UNINDEX_TEXT, document).map_err(StoreError::with("unindexing a document"))
}

fn text_statement(conn: &Connection, sql: &str, document: &Document) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute(params![
        document.seq,
        document.title,
        document.body,
        join_tags(&document.tags)
    ])?;
    Ok(())
}

/// Adds (`INSERT_TAG`) or removes (`DELETE_TAG`) the tag rows of a document. There is no
/// foreign key from tags to documents: the store keeps them in step itself, and an index on
/// `doc` for the key would cost every import a b-tree insert per tag.
fn write_tags(conn: &Connection, sql: &str, seq: i64, tags: &[String]) -> Result<(), StoreError> {
    if tags.is_empty() {
        return Ok(());
    }
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(StoreError::with("preparing a tag change"))?;
    for tag in tags {
        stmt.execute(params![tag, seq])
            .map_err(StoreError::with("changing tags"))?;
    }
    Ok(())
}

fn check_version(document: &Document, if_match: Option<u64>) -> Result<(), StoreError> {
    match if_match {
        Some(expected) if expected != document.version => Err(StoreError::Conflict {
            id: document.id.clone(),
            expected,
            actual: document.version,
        }),
        _ => Ok(()),
    }
}

/// Bumps the version of `current` with `UPDATE ... WHERE seq = ? AND version = ?`: the guard
/// that makes a lost update impossible even if a caller ran this outside a write lock.
fn bump(
    conn: &Connection,
    current: &Document,
    sets: &str,
    values: Vec<Value>,
) -> Result<(u64, i64), StoreError> {
    let updated_at = now_ms().max(current.updated_at);
    let first = values.len() + 1;
    let sql = format!(
        "UPDATE documents SET {sets}, updated_at = ?{first}, version = version + 1 \
         WHERE seq = ?{} AND version = ?{}",
        first + 1,
        first + 2
    );
    let mut all = values;
    all.push(Value::Integer(updated_at));
    all.push(Value::Integer(current.seq));
    all.push(Value::Integer(version_param(current.version)));
    let changed = conn
        .prepare_cached(&sql)
        .and_then(|mut stmt| stmt.execute(rusqlite::params_from_iter(all)))
        .map_err(StoreError::with("updating a document"))?;
    if changed != 1 {
        let now = get(conn, &current.id)?;
        return Err(StoreError::Conflict {
            id: current.id.clone(),
            expected: current.version,
            actual: now.version,
        });
    }
    Ok((current.version + 1, updated_at))
}

/// Replaces the fields `patch` gives, if the document is at `if_match` (when given).
pub(super) fn update(
    conn: &Connection,
    id: &str,
    patch: Patch,
    if_match: Option<u64>,
) -> Result<Document, StoreError> {
    if patch.is_empty() {
        return Err(invalid(
            "patch",
            "changes nothing; give a title, body, tags or collection",
        ));
    }
    if let Some(title) = &patch.title {
        check_title(title)?;
    }
    if let Some(collection) = &patch.collection {
        check_collection(collection)?;
    }
    let tags = patch.tags.map(normalize_tags).transpose()?;
    let mut document = get(conn, id)?;
    check_version(&document, if_match)?;

    let mut sets = Vec::new();
    let mut values = Vec::new();
    let mut set = |column: &str, value: String| {
        values.push(Value::Text(value));
        sets.push(format!("{column} = ?{}", values.len()));
    };
    if let Some(title) = &patch.title {
        set("title", title.clone());
    }
    if let Some(body) = &patch.body {
        set("body", body.clone());
    }
    if let Some(tags) = &tags {
        set("tags", join_tags(tags));
    }
    if let Some(collection) = &patch.collection {
        set("collection", collection.clone());
    }
    let (version, updated_at) = bump(conn, &document, &sets.join(", "), values)?;
    let reindex = patch.title.is_some() || patch.body.is_some() || tags.is_some();
    if reindex {
        unindex_text(conn, &document)?;
    }
    if let Some(tags) = tags {
        write_tags(conn, DELETE_TAG, document.seq, &document.tags)?;
        write_tags(conn, INSERT_TAG, document.seq, &tags)?;
        document.tags = tags;
    }
    if let Some(title) = patch.title {
        document.title = title;
    }
    if let Some(body) = patch.body {
        document.body = body;
    }
    if let Some(collection) = patch.collection {
        document.collection = collection;
    }
    document.version = version;
    document.updated_at = updated_at;
    if reindex {
        index_text(conn, &document)?;
    }
    log_change(conn, ChangeKind::Updated, &document, None, updated_at)?;
    Ok(document)
}

/// Moves a document to `collection`, retitling it when `new_title` is given.
pub(super) fn move_to(
    conn: &Connection,
    id: &str,
    collection: &str,
    new_title: Option<String>,
    if_match: Option<u64>,
) -> Result<Document, StoreError> {
    check_collection(collection)?;
    if let Some(title) = &new_title {
        check_title(title)?;
    }
    let mut document = get(conn, id)?;
    check_version(&document, if_match)?;
    let mut values = vec![Value::Text(collection.to_owned())];
    let mut sets = "collection = ?1".to_owned();
    if let Some(title) = &new_title {
        values.push(Value::Text(title.clone()));
        sets.push_str(", title = ?2");
    }
    let (version, updated_at) = bump(conn, &document, &sets, values)?;
    let left = std::mem::replace(&mut document.collection, collection.to_owned());
    if let Some(title) = new_title {
        unindex_text(conn, &document)?;
        document.title = title;
        index_text(conn, &document)?;
    }
    document.version = version;
    document.updated_at = updated_at;
    log_change(conn, ChangeKind::Moved, &document, Some(&left), updated_at)?;
    Ok(document)
}

/// A new document with the title, body and tags of `id`, in `collection`.
pub(super) fn copy(
    conn: &Connection,
    ids: &mut IdSource,
    id: &str,
    collection: &str,
) -> Result<Document, StoreError> {
    check_collection(collection)?;
    let original = get(conn, id)?;
    let copy = NewDocument {
        title: original.title,
        body: original.body,
        tags: original.tags,
        collection: Some(collection.to_owned()),
        ..NewDocument::default()
    };
    insert(conn, ids, copy, ChangeKind::Copied, Some(&original.id))
}

/// Deletes every document in `ids` (repeats ignored), or none if any is missing.
pub(super) fn delete(conn: &Connection, ids: &[String]) -> Result<Vec<Document>, StoreError> {
    let mut deleted: Vec<Document> = Vec::with_capacity(ids.len());
    for id in ids {
        let document = match get(conn, id) {
            Ok(document) => document,
            // Already deleted by an earlier repeat of the same id in this call.
            Err(StoreError::NotFound { .. })
                if canonical_id(id)
                    .is_ok_and(|canonical| deleted.iter().any(|d| d.id == canonical)) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        unindex_text(conn, &document)?;
        write_tags(conn, DELETE_TAG, document.seq, &document.tags)?;
        conn.prepare_cached("DELETE FROM documents WHERE seq = ?1")
            .and_then(|mut stmt| stmt.execute([document.seq]))
            .map_err(StoreError::with("deleting a document"))?;
        log_change(conn, ChangeKind::Deleted, &document, None, now_ms())?;
        deleted.push(document);
    }
    Ok(deleted)
}

fn log_change(
    conn: &Connection,
    kind: ChangeKind,
    document: &Document,
    origin: Option<&str>,
    at: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(LOG_CHANGE)
        .and_then(|mut stmt| execute_change(&mut stmt, kind, document, origin, at))
        .map_err(StoreError::with("writing the change log"))?;
    Ok(())
}

fn execute_change(
    stmt: &mut rusqlite::Statement<'_>,
    kind: ChangeKind,
    document: &Document,
    origin: Option<&str>,
    at: i64,
) -> rusqlite::Result<usize> {
    stmt.execute(params![
        at,
        kind.as_str(),
        document.id,
        version_param(document.version),
        document.collection,
        origin
    ])
}

/// Change-log entries after position `since`, oldest first, at most `limit`.
pub(super) fn changes_since(
    conn: &Connection,
    since: i64,
    limit: usize,
) -> Result<Vec<Change>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, at, kind, doc_id, version, collection, origin FROM changes \
             WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )
        .map_err(StoreError::with("preparing a change-log read"))?;
    let rows = stmt
        .query_map(params![since, limit_param(limit)], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                version_from_row(row, 4)?,
                row.get::<_, String>(5)?,
                row.get::<_, Option<String>>(6)?,
            ))
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(StoreError::with("reading the change log"))?;
    rows.into_iter()
        .map(|(seq, at, kind, id, version, collection, from)| {
            let kind = ChangeKind::parse(&kind).ok_or_else(|| StoreError::Corrupt {
                what: format!("change {seq}"),
                reason: format!("unknown kind {kind:?}"),
            })?;
            Ok(Change {
                seq,
                at,
                kind,
                id,
                version,
                collection,
                from,
            })
        })
        .collect()
}

/// The newest change-log position, 0 when the log is empty.
pub(super) fn last_change(conn: &Connection) -> Result<i64, StoreError> {
    conn.query_row("SELECT coalesce(max(seq), 0) FROM changes", [], |r| {
        r.get(0)
    })
    .map_err(StoreError::with("reading the change log"))
}
