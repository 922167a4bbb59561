//! Full-text search: BM25-ranked hits with highlighted snippets, paged over result snapshots.
//!
//! # Why snapshots
//!
//! BM25 scores depend on corpus statistics (the number of documents, how many contain each
//! term, the average length), so inserting *any* document, matching or not, changes the
//! scores, and can change the relative order, of documents already ranked. Key-set paging on
//! `(score, seq)` recomputed per page would then skip or repeat hits whenever the corpus
//! changed between pages, and a search cannot be given the statistics of an earlier moment.
//!
//! So the order is computed once. When a first page is cut, the whole ranking (document
//! sequence number and score, in order) is written to a result snapshot, and the position
//! handed back names the snapshot and the last rank returned. Following pages read the
//! snapshot by rank with a primary-key seek, so each costs the same at any depth.
//!
//! # Cost
//!
//! A first page costs a count of the matches and, BM25 being a score over all of them, a
//! ranking of every match: O(matches), plus writing the snapshot when the result does not
//! fit one page. Following pages read the snapshot: their cost does not grow with depth.
//! Measured in `bench/README.md` (outline, "Search cost by matches").
//!
//! # The guarantee
//!
//! Following [`SearchPage::next`] from a first page visits, in the BM25 order of the moment
//! the first page was computed, **every document that matched then, exactly once**, except
//! those deleted, or changed so that they no longer match the query and filter, before
//! their page is read (they are skipped; ranks keep their numbers, so there are gaps).
//! Documents inserted, or changed to match, after the first page are not part of that result:
//! a new search sees them. A hit shows the document's current title, tags, version and
//! snippet, and the score and rank of the snapshot.
//!
//! # Where snapshots live
//!
//! In a cache database beside the store (`<db>-search`), attached to the connection, not in
//! the store itself: writing a snapshot takes the cache's write lock only, so a search never
//! waits for an import that holds the store's, and a store opened by a read-only user still
//! searches (the cache falls back to memory, and positions then last as long as the
//! process). The cache holds at most [`MAX_SNAPSHOTS`] snapshots, none older than
//! [`SNAPSHOT_TTL_MS`]; a position into an evicted one is [`StoreError::PositionExpired`].
//! Deleting the cache file loses nothing but open positions. A search whose results fit in
//! one page writes nothing.

use std::ops::Range;
use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use super::documents::version_from_row;
use super::error::StoreError;
use super::model::{invalid, now_ms, split_tags, IdSource, ListFilter};
use super::schema::BM25_WEIGHTS;

/// How long a result snapshot (and so a search position) lasts: one hour.
pub const SNAPSHOT_TTL_MS: i64 = 60 * 60 * 1000;
/// The error for a position into a snapshot that is gone.
fn expired() -> StoreError {
    StoreError::PositionExpired {
        kept_minutes: SNAPSHOT_TTL_MS / 60_000,
    }
}

/// How many result snapshots the cache keeps; creating one more evicts the oldest.
pub const MAX_SNAPSHOTS: i64 = 64;
/// How many tokens a snippet holds at most.
const SNIPPET_TOKENS: i32 = 16;

/// The schema name the cache is attached under.
const CACHE: &str = "search_cache";
/// The cache's tables; a change of layout is a new version suffix, so two builds never
/// fight over one table and no migration is needed for a cache.
const CACHE_TABLES: &str = "
CREATE TABLE IF NOT EXISTS search_cache.snapshots_v1 (
    made       INTEGER PRIMARY KEY, -- creation order, for eviction (clocks tie within a ms)
    id         INTEGER NOT NULL UNIQUE, -- random: a position never names a later snapshot
    created_at INTEGER NOT NULL,
    instance   TEXT    NOT NULL,
    query      TEXT    NOT NULL,
    collection TEXT,
    tag        TEXT,
    total      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS search_cache.snapshot_hits_v1 (
    snapshot INTEGER NOT NULL,
    pos      INTEGER NOT NULL,
    doc      INTEGER NOT NULL,
    score    REAL    NOT NULL,
    PRIMARY KEY (snapshot, pos)
) WITHOUT ROWID;
";

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The document's id.
    pub id: String,
    /// Its current title.
    pub title: String,
    /// Its current collection.
    pub collection: String,
    /// Its current tags.
    pub tags: Vec<String>,
    /// When it was created, in ms since the epoch.
    pub created_at: i64,
    /// When it last changed, in ms since the epoch.
    pub updated_at: i64,
    /// Its current version.
    pub version: u64,
    /// 1-based position in the whole result, in ranking order.
    pub rank: u64,
    /// The BM25 relevance (higher is better; title matches weigh 10×, tags 5×, body 1×).
    pub score: f64,
    /// The best-matching fragment of the document, with the matched terms marked.
    pub snippet: Snippet,
}

/// A fragment of a document around the matched terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snippet {
    /// The fragment; `…` marks text left out at either end.
    pub text: String,
    /// Byte ranges of `text` that matched the query, in order, not overlapping.
    pub highlights: Vec<Range<usize>>,
}

impl Snippet {
    /// The text with each highlight wrapped in `open` and `close` (e.g. `**`, or terminal
    /// colour codes).
    pub fn marked(&self, open: &str, close: &str) -> String {
        let mut out = String::with_capacity(self.text.len() + self.highlights.len() * 8);
        let mut at = 0;
        for range in &self.highlights {
            out.push_str(&self.text[at..range.start]);
            out.push_str(open);
            out.push_str(&self.text[range.clone()]);
            out.push_str(close);
            at = range.end;
        }
        out.push_str(&self.text[at..]);
        out
    }

    /// Parses FTS5 `snippet()` output whose highlights are wrapped in `\u{1}` and `\u{2}`.
    fn parse(marked: &str) -> Snippet {
        let mut text = String::with_capacity(marked.len());
        let mut highlights = Vec::new();
        let mut open: Option<usize> = None;
        for c in marked.chars() {
            match c {
                '\u{1}' => open = Some(text.len()),
                '\u{2}' => {
                    if let Some(start) = open.take() {
                        if start < text.len() {
                            highlights.push(start..text.len());
                        }
                    }
                }
                c => text.push(c),
            }
        }
        Snippet { text, highlights }
    }
}

/// One page of a [`search`](super::Store::search).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    /// At most `limit` hits, in rank order.
    pub hits: Vec<Hit>,
    /// Where the next page starts; `None` when this page reached the end.
    pub next: Option<SearchPosition>,
    /// How many documents matched when the result was computed (its first page).
    pub total: u64,
    /// The start of this page's snapshot, when it has one: with
    /// [`SearchPosition::after_rank`], where to continue when only part of the page reached
    /// the caller. A first page that holds every match has a snapshot only when asked for
    /// ([`crate::store::Store::search_resumable`]).
    pub resume: Option<SearchPosition>,
}

/// Where a search continues: a result snapshot and the last rank returned from it.
///
/// Serializable so that the command layer can wrap it in an opaque cursor
/// ([`aoi::surface::cursor::CursorCodec`]); its content is not part of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchPosition {
    snapshot: i64,
    after: u64,
}

impl SearchPosition {
    /// The position just after `rank` in the same result snapshot: where to continue when
    /// only part of a page reached the caller (e.g. output cut at `--max-bytes`). `rank`
    /// should be a rank of a hit of the page this position came from.
    pub fn after_rank(self, rank: u64) -> SearchPosition {
        SearchPosition {
            snapshot: self.snapshot,
            after: rank,
        }
    }
}

/// Turns free text into an FTS5 query that matches documents containing every word, so
/// that user input with punctuation (`e-mail`, `C++`, `"quoted`) is never a syntax error.
///
/// Each whitespace-separated word becomes a quoted phrase. Use the text as given instead to
/// offer the FTS5 syntax: `AND`/`OR`/`NOT`, `"phrases"`, `prefix*`, `title: word`,
/// `NEAR(a b, 5)`.
///
/// ```
/// assert_eq!(outline::store::plain_query(r#"e-mail "quoted"#), r#""e-mail" """quoted""#);
/// ```
pub fn plain_query(text: &str) -> String {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect();
    words.join(" ")
}

/// Attaches the snapshot cache for a store at `path` (in memory for an in-memory store, or
/// when the file cannot be used).
pub(super) fn attach_cache(conn: &Connection, path: Option<&Path>) -> Result<(), StoreError> {
    let file = path.and_then(|p| {
        let mut name = p.as_os_str().to_owned();
        name.push("-search");
        name.into_string().ok()
    });
    if let Some(file) = file {
        if try_attach(conn, &file).is_ok() {
            return Ok(());
        }
    }
    try_attach(conn, ":memory:")
}

fn try_attach(conn: &Connection, target: &str) -> Result<(), StoreError> {
    conn.execute(&format!("ATTACH DATABASE ?1 AS {CACHE}"), [target])
        .map_err(StoreError::with("attaching the search cache"))?;
    let setup = (|| {
        let _mode: String =
            conn.pragma_update_and_check(Some(CACHE), "journal_mode", "WAL", |r| r.get(0))?;
        conn.pragma_update(Some(CACHE), "synchronous", "OFF")?;
        conn.execute_batch(CACHE_TABLES)
    })();
    if let Err(e) = setup {
        let _ = conn.execute(&format!("DETACH DATABASE {CACHE}"), []);
        return Err(StoreError::sqlite("preparing the search cache", e));
    }
    Ok(())
}

/// An FTS5 error caused by the query text (SQLite's generic `SQLITE_ERROR` while running a
/// statement whose only variable part is the bound query) is the caller's mistake.
fn query_error(context: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| match &e {
        rusqlite::Error::SqliteFailure(err, message)
            if err.code == rusqlite::ErrorCode::Unknown =>
        {
            StoreError::InvalidQuery {
                reason: message.clone().unwrap_or_else(|| err.to_string()),
            }
        }
        _ => StoreError::sqlite(context, e),
    }
}

fn check_query(query: &str) -> Result<(), StoreError> {
    if query.trim().is_empty() {
        return Err(StoreError::InvalidQuery {
            reason: "the query is empty".to_owned(),
        });
    }
    Ok(())
}

/// `FROM ... WHERE` over the matches of `?1` passing the filter (values from `?first` on).
///
/// The matching document's sequence number is `documents_fts.rowid`. `documents d` is joined
/// only when `with_documents` or a collection filter needs its columns: a ranking over many
/// matches would otherwise read every matching row, bodies included, for nothing.
fn match_source(filter: &ListFilter, first: usize, with_documents: bool) -> (String, Vec<Value>) {
    let mut sql = if with_documents || filter.collection.is_some() {
        "documents_fts JOIN documents d ON d.seq = documents_fts.rowid \
         WHERE documents_fts MATCH ?1"
    } else {
        "documents_fts WHERE documents_fts MATCH ?1"
    }
    .to_owned();
    let mut values = Vec::new();
    if let Some(collection) = &filter.collection {
        values.push(Value::Text(collection.clone()));
        sql.push_str(&format!(
            " AND d.collection = ?{}",
            first + values.len() - 1
        ));
    }
    if let Some(tag) = &filter.tag {
        values.push(Value::Text(tag.clone()));
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM document_tags t \
             WHERE t.tag = ?{} AND t.doc = documents_fts.rowid)",
            first + values.len() - 1
        ));
    }
    (sql, values)
}

fn score_expr() -> String {
    let (title, body, tags) = BM25_WEIGHTS;
    format!("-bm25(documents_fts, {title:.1}, {body:.1}, {tags:.1})")
}

/// How many documents match `query` and pass `filter`.
pub(super) fn count_matches(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
) -> Result<u64, StoreError> {
    check_query(query)?;
    let (source, filter_values) = match_source(filter, 2, false);
    let mut values = vec![Value::Text(query.to_owned())];
    values.extend(filter_values);
    let n: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM {source}"))
        .map_err(query_error("preparing a match count"))?
        .query_row(rusqlite::params_from_iter(values), |r| r.get(0))
        .map_err(query_error("counting matches"))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The whole ranking, best first: (document sequence number, score).
fn rank_all(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let (source, filter_values) = match_source(filter, 2, false);
    let mut values = vec![Value::Text(query.to_owned())];
    values.extend(filter_values);
    let sql = format!(
        "SELECT documents_fts.rowid AS seq, {} AS score FROM {source} ORDER BY score DESC, seq",
        score_expr()
    );
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(query_error("preparing a ranking"))?;
    let ranked = stmt
        .query_map(rusqlite::params_from_iter(values), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(query_error("ranking matches"))?;
    Ok(ranked)
}

/// The ids of every match, best first.
pub(super) fn all_ids(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
) -> Result<Vec<String>, StoreError> {
    check_query(query)?;
    let (source, filter_values) = match_source(filter, 2, true);
    let mut values = vec![Value::Text(query.to_owned())];
    values.extend(filter_values);
    let sql = format!(
        "SELECT d.id, {} AS score FROM {source} ORDER BY score DESC, d.seq",
        score_expr()
    );
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(query_error("preparing a match listing"))?;
    let ids = stmt
        .query_map(rusqlite::params_from_iter(values), |r| r.get(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(query_error("listing matches"))?;
    Ok(ids)
}

/// The current state of document `seq` as a hit, or `None` if it was deleted or no longer
/// matches the query and filter.
fn hydrate(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
    seq: i64,
    rank: u64,
    score: f64,
) -> Result<Option<Hit>, StoreError> {
    let (source, filter_values) = match_source(filter, 3, true);
    let mut values = vec![Value::Text(query.to_owned()), Value::Integer(seq)];
    values.extend(filter_values);
    let sql = format!(
        "SELECT d.id, d.title, d.collection, d.tags, d.created_at, d.updated_at, d.version, \
         snippet(documents_fts, -1, char(1), char(2), '…', {SNIPPET_TOKENS}) \
         FROM {source} AND documents_fts.rowid = ?2"
    );
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(query_error("preparing a hit lookup"))?;
    stmt.query_row(rusqlite::params_from_iter(values), |r| {
        let tags: String = r.get(3)?;
        let snippet: String = r.get(7)?;
        Ok(Hit {
            id: r.get(0)?,
            title: r.get(1)?,
            collection: r.get(2)?,
            tags: split_tags(&tags),
            created_at: r.get(4)?,
            updated_at: r.get(5)?,
            version: version_from_row(r, 6)?,
            rank,
            score,
            snippet: Snippet::parse(&snippet),
        })
    })
    .optional()
    .map_err(query_error("reading a hit"))
}

/// What a search needs from the store.
pub(super) struct SearchContext<'a> {
    pub(super) conn: &'a mut Connection,
    pub(super) ids: &'a mut IdSource,
    pub(super) instance: &'a str,
}

/// One page of hits for `query`; see the [module docs](self) for the paging guarantee.
pub(super) fn search(
    cx: SearchContext<'_>,
    query: &str,
    filter: &ListFilter,
    after: Option<SearchPosition>,
    limit: usize,
    resumable: bool,
) -> Result<SearchPage, StoreError> {
    check_query(query)?;
    if limit == 0 {
        return Err(invalid("limit", "must be at least 1"));
    }
    // One read transaction: the count, the ranking and the hits all see the same data.
    let tx = cx
        .conn
        .transaction_with_behavior(TransactionBehavior::Deferred)
        .map_err(StoreError::with("starting a search"))?;
    let page = match after {
        None => {
            let total = count_matches(&tx, query, filter)?;
            if total <= limit as u64 && !resumable {
                let mut hits = Vec::new();
                for (index, (seq, score)) in rank_all(&tx, query, filter)?.into_iter().enumerate() {
                    let rank = index as u64 + 1;
                    hits.extend(hydrate(&tx, query, filter, seq, rank, score)?);
                }
                SearchPage {
                    hits,
                    next: None,
                    total,
                    resume: None,
                }
            } else {
                let snapshot = create_snapshot(&tx, cx.ids, cx.instance, query, filter)?;
                let (hits, next) = read_snapshot(&tx, query, filter, snapshot.0, 0, limit)?;
                SearchPage {
                    hits,
                    next,
                    total: snapshot.1,
                    resume: Some(SearchPosition {
                        snapshot: snapshot.0,
                        after: 0,
                    }),
                }
            }
        }
        Some(position) => {
            let total = check_snapshot(&tx, cx.instance, query, filter, position.snapshot)?;
            let (hits, next) =
                read_snapshot(&tx, query, filter, position.snapshot, position.after, limit)?;
            SearchPage {
                hits,
                next,
                total,
                resume: Some(position),
            }
        }
    };
    tx.commit()
        .map_err(StoreError::with("finishing a search"))?;
    Ok(page)
}

/// Writes the full ranking as a new snapshot, evicting old ones first. Returns its id and
/// how many hits it holds.
fn create_snapshot(
    conn: &Connection,
    ids: &mut IdSource,
    instance: &str,
    query: &str,
    filter: &ListFilter,
) -> Result<(i64, u64), StoreError> {
    let now = now_ms();
    // The first statement on the cache in this transaction is a write, so taking the cache's
    // write lock waits (busy timeout) instead of failing on a stale read snapshot.
    let stale = format!(
        "SELECT id FROM {CACHE}.snapshots_v1 WHERE created_at < ?1 OR id NOT IN \
         (SELECT id FROM {CACHE}.snapshots_v1 ORDER BY made DESC LIMIT ?2)"
    );
    let keep = MAX_SNAPSHOTS - 1;
    conn.execute(
        &format!("DELETE FROM {CACHE}.snapshot_hits_v1 WHERE snapshot IN ({stale})"),
        params![now - SNAPSHOT_TTL_MS, keep],
    )
    .and_then(|_| {
        conn.execute(
            &format!("DELETE FROM {CACHE}.snapshots_v1 WHERE id IN ({stale})"),
            params![now - SNAPSHOT_TTL_MS, keep],
        )
    })
    .map_err(StoreError::with("evicting old search snapshots"))?;

    let id = ids.next_i64()?;
    let (source, filter_values) = match_source(filter, 3, false);
    let mut values = vec![Value::Text(query.to_owned()), Value::Integer(id)];
    values.extend(filter_values);
    let inserted = conn
        .execute(
            &format!(
                "INSERT INTO {CACHE}.snapshot_hits_v1 (snapshot, pos, doc, score) \
                 SELECT ?2, row_number() OVER (ORDER BY score DESC, seq), seq, score FROM \
                 (SELECT documents_fts.rowid AS seq, {} AS score FROM {source})",
                score_expr()
            ),
            rusqlite::params_from_iter(values),
        )
        .map_err(query_error("writing a search snapshot"))?;
    let total = inserted as u64;
    conn.execute(
        &format!(
            "INSERT INTO {CACHE}.snapshots_v1 (id, created_at, instance, query, collection, tag, total) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        ),
        params![
            id,
            now,
            instance,
            query,
            filter.collection,
            filter.tag,
            i64::try_from(total).unwrap_or(i64::MAX)
        ],
    )
    .map_err(StoreError::with("writing a search snapshot"))?;
    Ok((id, total))
}

/// Checks that `snapshot` exists, is fresh, and was made by this query on this database;
/// returns its total.
fn check_snapshot(
    conn: &Connection,
    instance: &str,
    query: &str,
    filter: &ListFilter,
    snapshot: i64,
) -> Result<u64, StoreError> {
    type Header = (i64, String, String, Option<String>, Option<String>, i64);
    let header: Option<Header> = conn
        .prepare_cached(&format!(
            "SELECT created_at, instance, query, collection, tag, total \
             FROM {CACHE}.snapshots_v1 WHERE id = ?1"
        ))
        .and_then(|mut stmt| {
            stmt.query_row([snapshot], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .optional()
        })
        .map_err(StoreError::with("reading a search snapshot"))?;
    let Some((created_at, made_on, made_for, collection, tag, total)) = header else {
        return Err(expired());
    };
    if made_on != instance || created_at < now_ms() - SNAPSHOT_TTL_MS {
        return Err(expired());
    }
    if made_for != query || collection != filter.collection || tag != filter.tag {
        return Err(StoreError::PositionMismatch);
    }
    Ok(u64::try_from(total).unwrap_or(0))
}

/// Up to `limit` live hits of `snapshot` after rank `after`, and the position after the
/// last one if more live hits follow.
fn read_snapshot(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
    snapshot: i64,
    after: u64,
    limit: usize,
) -> Result<(Vec<Hit>, Option<SearchPosition>), StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT pos, doc, score FROM {CACHE}.snapshot_hits_v1 \
             WHERE snapshot = ?1 AND pos > ?2 ORDER BY pos"
        ))
        .map_err(StoreError::with("preparing a snapshot read"))?;
    let mut rows = stmt
        .query(params![snapshot, i64::try_from(after).unwrap_or(i64::MAX)])
        .map_err(StoreError::with("reading a search snapshot"))?;
    let mut hits = Vec::with_capacity(limit.min(1024));
    let mut more = false;
    while let Some(row) = rows
        .next()
        .map_err(StoreError::with("reading a search snapshot"))?
    {
        let (pos, seq, score): (i64, i64, f64) = (|| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))()
            .map_err(StoreError::with("reading a search snapshot"))?;
        let rank = u64::try_from(pos).unwrap_or(0);
        if let Some(hit) = hydrate(conn, query, filter, seq, rank, score)? {
            if hits.len() == limit {
                more = true;
                break;
            }
            hits.push(hit);
        }
    }
    let next = if more {
        hits.last().map(|last| SearchPosition {
            snapshot,
            after: last.rank,
        })
    } else {
        None
    };
    Ok((hits, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_parse_into_text_and_ranges() {
        let s = Snippet::parse("…the \u{1}agent\u{2} reads \u{1}tools\u{2}…");
        assert_eq!(s.text, "…the agent reads tools…");
        assert_eq!(&s.text[s.highlights[0].clone()], "agent");
        assert_eq!(&s.text[s.highlights[1].clone()], "tools");
        assert_eq!(s.marked("[", "]"), "…the [agent] reads [tools]…");
        // Unbalanced or empty markers never produce a bad range.
        let s = Snippet::parse("\u{2}a\u{1}\u{2}b\u{1}c");
        assert_eq!(s.text, "abc");
        assert!(s.highlights.is_empty());
        assert_eq!(s.marked("<", ">"), "abc");
    }

    #[test]
    fn plain_queries_quote_every_word() {
        assert_eq!(plain_query("  agent   tools "), "\"agent\" \"tools\"");
        assert_eq!(plain_query("say \"hi\""), "\"say\" \"\"\"hi\"\"\"");
        assert_eq!(plain_query(""), "");
    }
}
