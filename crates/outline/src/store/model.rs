//! The data model: documents, what creates and changes them, and the rules their fields obey.
//!
//! The rules are checked here, in Rust, before anything is written, so that a refused item
//! never leaves half a write behind (see [`StoreError::is_item_error`]).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::error::StoreError;

/// The collection a document lands in when none is given.
pub const DEFAULT_COLLECTION: &str = "inbox";
/// The longest collection name, in bytes.
pub const MAX_COLLECTION_LEN: usize = 128;
/// The longest tag, in bytes.
pub const MAX_TAG_LEN: usize = 64;
/// The prefix of every document id.
pub const ID_PREFIX: &str = "doc_";
/// The fewest characters of the end of an id that stand for it: tables show each id's
/// shortest end that no other id shares, at least this long, and every command that takes
/// an id takes such an end (the last 16 characters of an id are random, so 6 of them tell
/// a document from about a billion others).
pub const SHORT_ID_MIN: usize = 6;

/// A stored document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The stable id: `doc_` and a lowercase ULID. Never changes, never reused.
    pub id: String,
    /// One line of text, never blank.
    pub title: String,
    /// Any text.
    pub body: String,
    /// Distinct tags in the order they were given; each 1 to [`MAX_TAG_LEN`] bytes without
    /// whitespace or control characters.
    pub tags: Vec<String>,
    /// The collection, [`DEFAULT_COLLECTION`] unless one was given.
    pub collection: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Milliseconds since the Unix epoch; never earlier than the previous value.
    pub updated_at: i64,
    /// 1 when created, +1 per change: the ETag for `update --if-match`.
    pub version: u64,
    /// The insertion sequence number: the list order key (never changes, never reused).
    pub(crate) seq: i64,
}

impl Document {
    /// The position just after this document in [`Store::list`](super::Store::list) order:
    /// pass it as `after` to continue a listing.
    pub fn list_position(&self) -> ListPosition {
        ListPosition { after: self.seq }
    }
}

/// What [`Store::create`](super::Store::create) and [`Store::import`](super::Store::import)
/// take.
///
/// Only `title` is required. `id`, `created_at` and `updated_at` are for imports that
/// preserve another outline's documents (e.g. `outline export | outline import`); a new
/// document gets a fresh id and the current time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewDocument {
    /// An id to keep (`doc_` and a ULID, any case); a fresh one when `None`.
    pub id: Option<String>,
    /// The title: not blank, no control characters.
    pub title: String,
    /// The body.
    pub body: String,
    /// Tags; duplicates are dropped, the first occurrence keeps its place.
    pub tags: Vec<String>,
    /// The collection; [`DEFAULT_COLLECTION`] when `None`.
    pub collection: Option<String>,
    /// Creation time in ms since the epoch; now when `None`.
    pub created_at: Option<i64>,
    /// Last update time in ms since the epoch; `created_at` when `None`.
    pub updated_at: Option<i64>,
}

impl NewDocument {
    /// A document with this title and body, in the default collection, without tags.
    pub fn new(title: impl Into<String>, body: impl Into<String>) -> NewDocument {
        NewDocument {
            title: title.into(),
            body: body.into(),
            ..NewDocument::default()
        }
    }

    /// With these tags.
    pub fn tags<I, S>(mut self, tags: I) -> NewDocument
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// In this collection.
    pub fn collection(mut self, collection: impl Into<String>) -> NewDocument {
        self.collection = Some(collection.into());
        self
    }
}

/// The fields an [`update`](super::Store::update) replaces; `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    /// A new title.
    pub title: Option<String>,
    /// A new body.
    pub body: Option<String>,
    /// A new tag set (replacing all tags; `Some(vec![])` removes them).
    pub tags: Option<Vec<String>>,
    /// A new collection.
    pub collection: Option<String>,
}

impl Patch {
    /// True when the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.body.is_none()
            && self.tags.is_none()
            && self.collection.is_none()
    }
}

/// Which documents a [`list`](super::Store::list), [`count`](super::Store::count) or
/// [`search`](super::Store::search) considers; `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ListFilter {
    /// Only documents in this collection.
    pub collection: Option<String>,
    /// Only documents with this tag.
    pub tag: Option<String>,
}

impl ListFilter {
    /// Documents in `collection`.
    pub fn collection(collection: impl Into<String>) -> ListFilter {
        ListFilter {
            collection: Some(collection.into()),
            tag: None,
        }
    }

    /// Documents tagged `tag`.
    pub fn tag(tag: impl Into<String>) -> ListFilter {
        ListFilter {
            collection: None,
            tag: Some(tag.into()),
        }
    }
}

/// Where a listing continues: just after one document, in insertion order.
///
/// Serializable so that the command layer can wrap it in an opaque cursor
/// ([`aoi::surface::cursor::CursorCodec`]); its content is not part of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPosition {
    after: i64,
}

impl ListPosition {
    pub(crate) fn after(self) -> i64 {
        self.after
    }
}

/// One page of a [`list`](super::Store::list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// At most `limit` documents, in insertion order.
    pub documents: Vec<Document>,
    /// Where the next page starts; `None` when this page reached the end.
    pub next: Option<ListPosition>,
}

/// What a logged mutation did to a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// The document was created (also by an import).
    Created,
    /// Its title, body, tags or collection were replaced by an update.
    Updated,
    /// It was deleted.
    Deleted,
    /// It was moved to a collection (and possibly retitled).
    Moved,
    /// It was created as a copy of another document.
    Copied,
}

impl ChangeKind {
    /// The name used in the change log and in `outline watch` events.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Updated => "updated",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Moved => "moved",
            ChangeKind::Copied => "copied",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<ChangeKind> {
        Some(match name {
            "created" => ChangeKind::Created,
            "updated" => ChangeKind::Updated,
            "deleted" => ChangeKind::Deleted,
            "moved" => ChangeKind::Moved,
            "copied" => ChangeKind::Copied,
            _ => return None,
        })
    }
}

/// One entry of the change log, written in the same transaction as the mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The log position: strictly increasing in commit order, never reused.
    pub seq: i64,
    /// When, in ms since the epoch.
    pub at: i64,
    /// What happened.
    pub kind: ChangeKind,
    /// The document (for [`ChangeKind::Copied`], the new copy).
    pub id: String,
    /// The document's version after the change (for a deletion: the version deleted).
    pub version: u64,
    /// The document's collection after the change.
    pub collection: String,
    /// For [`ChangeKind::Moved`], the collection it left; for [`ChangeKind::Copied`], the id
    /// of the original.
    pub from: Option<String>,
}

/// What `outline status` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// How many documents there are.
    pub documents: u64,
    /// How many distinct collections hold them.
    pub collections: u64,
    /// How many distinct tags are in use.
    pub tags: u64,
    /// The database file; `None` for an in-memory store.
    pub db_path: Option<std::path::PathBuf>,
    /// The database size: pages in use times the page size, WAL content included.
    pub size_bytes: u64,
    /// `PRAGMA user_version`: the schema the file is at.
    pub schema_version: i64,
    /// Whether the database is in WAL journal mode.
    pub wal: bool,
    /// The newest change-log position (0 for none): where `outline watch` starts.
    pub last_change: i64,
}

// ---------------------------------------------------------------------------------------------
// Rules

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub(crate) fn check_title(title: &str) -> Result<(), StoreError> {
    if title.trim().is_empty() {
        return Err(invalid("title", "must not be blank"));
    }
    if title.chars().any(char::is_control) {
        return Err(invalid(
            "title",
            "must be one line without control characters",
        ));
    }
    Ok(())
}

pub(crate) fn check_collection(collection: &str) -> Result<(), StoreError> {
    if collection.trim().is_empty() {
        return Err(invalid("collection", "must not be blank"));
    }
    if collection.len() > MAX_COLLECTION_LEN {
        return Err(invalid(
            "collection",
            format!(
                "is {} bytes; at most {MAX_COLLECTION_LEN} are allowed",
                collection.len()
            ),
        ));
    }
    if collection.trim() != collection || collection.chars().any(char::is_control) {
        return Err(invalid(
            "collection",
            "must not have surrounding whitespace or control characters",
        ));
    }
    Ok(())
}

/// Checks each tag and drops repeats, keeping first occurrences in order.
pub(crate) fn normalize_tags(tags: Vec<String>) -> Result<Vec<String>, StoreError> {
    let mut kept: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        if tag.is_empty() || tag.len() > MAX_TAG_LEN {
            return Err(invalid(
                "tags",
                format!("{tag:?} must be 1 to {MAX_TAG_LEN} bytes long"),
            ));
        }
        if tag.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(
                "tags",
                format!("{tag:?} must not contain whitespace or control characters"),
            ));
        }
        if !kept.contains(&tag) {
            kept.push(tag);
        }
    }
    Ok(kept)
}

/// The stored form of a tag list: space-separated (tags never contain whitespace), which is
/// also what the full-text index reads.
pub(crate) fn join_tags(tags: &[String]) -> String {
    tags.join(" ")
}

pub(crate) fn split_tags(stored: &str) -> Vec<String> {
    stored.split_whitespace().map(str::to_owned).collect()
}

/// Checks an id given by the caller and returns its canonical (lowercase) form.
///
/// The ULID must be canonical text in either case: Crockford's aliases (`I`, `L`, `O`) and
/// values beyond 128 bits are refused, so that one document never has two spellings.
pub(crate) fn canonical_id(id: &str) -> Result<String, StoreError> {
    let canonical = id
        .strip_prefix(ID_PREFIX)
        .filter(|rest| rest.len() == ulid::ULID_LEN)
        .and_then(|rest| {
            let canonical = format_id(ulid::Ulid::from_string(rest).ok()?);
            canonical[ID_PREFIX.len()..]
                .eq_ignore_ascii_case(rest)
                .then_some(canonical)
        });
    canonical.ok_or_else(|| invalid("id", format!("{id:?} is not `{ID_PREFIX}` and a ULID")))
}

/// The lowercased end of an id that `reference` is, when it can be one: [`SHORT_ID_MIN`]
/// to 25 characters of Crockford's base32, in any case.
pub(crate) fn id_ending(reference: &str) -> Option<String> {
    let base32 = |b: u8| {
        b.is_ascii_digit()
            || (b.is_ascii_alphabetic()
                && !matches!(b.to_ascii_lowercase(), b'i' | b'l' | b'o' | b'u'))
    };
    ((SHORT_ID_MIN..ulid::ULID_LEN).contains(&reference.len()) && reference.bytes().all(base32))
        .then(|| reference.to_ascii_lowercase())
}

pub(crate) fn format_id(ulid: ulid::Ulid) -> String {
    let mut buf = [0u8; ulid::ULID_LEN];
    let text = ulid.array_to_str(&mut buf);
    text.make_ascii_lowercase();
    let mut id = String::with_capacity(ID_PREFIX.len() + ulid::ULID_LEN);
    id.push_str(ID_PREFIX);
    id.push_str(text);
    id
}

pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// Randomness for ids, fetched from the OS in blocks so that an import of many documents
/// makes few system calls.
#[derive(Debug)]
pub(crate) struct IdSource {
    pool: [u8; 640],
    used: usize,
}

impl IdSource {
    const PER_ID: usize = 10;

    pub(crate) fn new() -> IdSource {
        IdSource {
            pool: [0; 640],
            used: 640,
        }
    }

    /// A fresh `doc_<ulid>` for a document created at `ms`.
    pub(crate) fn next_id(&mut self, ms: i64) -> Result<String, StoreError> {
        let random = self.random_bytes()?;
        let mut wide = [0u8; 16];
        wide[..Self::PER_ID].copy_from_slice(&random);
        let ms = u64::try_from(ms).unwrap_or(0);
        Ok(format_id(ulid::Ulid::from_parts(
            ms,
            u128::from_le_bytes(wide),
        )))
    }

    /// 8 random bytes as a non-negative i64 (for search snapshot ids).
    pub(crate) fn next_i64(&mut self) -> Result<i64, StoreError> {
        let random = self.random_bytes()?;
        let mut eight = [0u8; 8];
        eight.copy_from_slice(&random[..8]);
        Ok(i64::from_le_bytes(eight) & i64::MAX)
    }

    fn random_bytes(&mut self) -> Result<[u8; Self::PER_ID], StoreError> {
        if self.used + Self::PER_ID > self.pool.len() {
            getrandom::fill(&mut self.pool).map_err(|e| StoreError::Entropy {
                reason: e.to_string(),
            })?;
            self.used = 0;
        }
        let mut out = [0u8; Self::PER_ID];
        out.copy_from_slice(&self.pool[self.used..self.used + Self::PER_ID]);
        self.used += Self::PER_ID;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_lowercase_ulids_and_distinct() {
        let mut ids = IdSource::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let id = ids.next_id(1_700_000_000_000).unwrap();
            assert_eq!(id.len(), 4 + 26);
            assert!(id.starts_with("doc_"));
            assert_eq!(id, id.to_ascii_lowercase());
            assert_eq!(canonical_id(&id).unwrap(), id);
            assert!(seen.insert(id));
        }
    }

    #[test]
    fn given_ids_are_canonicalized_or_refused() {
        let upper = "doc_01HZX3T7Q8W9E2R4T6Y8V0J1J3".to_owned();
        assert_eq!(canonical_id(&upper).unwrap(), upper.to_ascii_lowercase());
        for bad in [
            "",
            "doc_",
            "01HZX3T7Q8W9E2R4T6Y8V0J1J3",
            "doc_01HZX3T7Q8W9E2R4T6Y8V0J1J",
            "doc_01HZX3T7Q8W9E2R4T6Y8V0J1J3X",
            "doc_81HZX3T7Q8W9E2R4T6Y8V0J1J3",
            "doc_01HZX3T7Q8W9E2R4T6Y8V0J1J!",
            "doc_01HZX3T7Q8W9E2R4T6Y8V0J1JI",
            "doc_01HZX3T7Q8W9E2R4T6Y8V0J1JO",
            "doc_01HZX3T7Q8W9E2R4T6Y8U0J1J3",
        ] {
            assert!(
                matches!(
                    canonical_id(bad),
                    Err(StoreError::Invalid { field: "id", .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn tags_are_checked_and_deduplicated_in_order() {
        let tags = normalize_tags(vec!["b".into(), "a".into(), "b".into(), "c".into()]).unwrap();
        assert_eq!(tags, ["b", "a", "c"]);
        assert_eq!(split_tags(&join_tags(&tags)), tags);
        for bad in ["", "two words", "tab\there", &"x".repeat(MAX_TAG_LEN + 1)] {
            assert!(normalize_tags(vec![bad.to_owned()]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn titles_and_collections_follow_the_rules() {
        assert!(check_title("A title").is_ok());
        for bad in ["", "  ", "two\nlines", "bell\u{7}"] {
            assert!(check_title(bad).is_err(), "{bad:?}");
        }
        assert!(check_collection("inbox").is_ok());
        assert!(check_collection("work notes").is_ok());
        for bad in [
            "",
            " inbox",
            "inbox ",
            "a\tb",
            &"c".repeat(MAX_COLLECTION_LEN + 1),
        ] {
            assert!(check_collection(bad).is_err(), "{bad:?}");
        }
    }
}
