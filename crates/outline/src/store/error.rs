//! The one error type of the store, with the context each failure needs to be acted on.

use std::path::PathBuf;

use rusqlite::ErrorCode;

/// Why a store operation failed.
///
/// Item-level failures ([`is_item_error`](Self::is_item_error)) leave the store, and any
/// transaction they happened in, exactly as before the call; the others mean the operation
/// (and a surrounding transaction) must be abandoned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No document has this id.
    #[error("no document with id {id}")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The end of an id was given, and more than one document's id ends so.
    #[error("{reference:?} is the end of more than one document id ({}); give more of the id", ids.join(", "))]
    Ambiguous {
        /// What was given.
        reference: String,
        /// Some of the ids it could mean (up to three).
        ids: Vec<String>,
    },
    /// `if_match` named a version the document is no longer (or not yet) at.
    #[error("document {id} is at version {actual}, not {expected}")]
    Conflict {
        /// The document.
        id: String,
        /// The version the caller expected (`--if-match`).
        expected: u64,
        /// The version the document is at.
        actual: u64,
    },
    /// A document with this id already exists (an import carrying ids).
    #[error("a document with id {id} already exists")]
    Duplicate {
        /// The id that is taken.
        id: String,
    },
    /// A field of a new document or patch breaks a rule of the data model.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field, as named in [`NewDocument`](super::NewDocument) or
        /// [`Patch`](super::Patch).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The full-text query is not valid FTS5 syntax (or is empty).
    #[error("invalid search query: {reason}")]
    InvalidQuery {
        /// SQLite's explanation, e.g. `fts5: syntax error near "AND"`.
        reason: String,
    },
    /// One item of an import failed; nothing of that import was written.
    #[error("item {index} of the import: {source}")]
    ImportItem {
        /// The 0-based position of the item in the input sequence.
        index: usize,
        /// Why the item was refused.
        #[source]
        source: Box<StoreError>,
    },
    /// A search position refers to a result snapshot that no longer exists.
    #[error(
        "the search position has expired (result snapshots are kept for {kept_minutes} minutes)"
    )]
    PositionExpired {
        /// How long snapshots are kept (the search module's policy).
        kept_minutes: i64,
    },
    /// A search position belongs to a different query or filter.
    #[error("the search position was made by a different query or filter")]
    PositionMismatch,
    /// The database was written by a newer outline, whose schema this one does not know.
    #[error("{}: schema version {found} is newer than this outline supports ({supported}); upgrade outline", path.display())]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA user_version` of the file.
        found: i64,
        /// The newest schema version this build knows.
        supported: i64,
    },
    /// The file is not an outline database (another SQLite database, or not SQLite at all).
    #[error("{} is not an outline database: {reason}", path.display())]
    NotOutline {
        /// The file.
        path: PathBuf,
        /// What gave it away.
        reason: String,
    },
    /// A file-system operation around the database failed (creating its directory).
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. `creating the directory`.
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("{context}: {source}")]
    Sqlite {
        /// What the store was doing, e.g. `inserting a document`.
        context: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A stored value could not be decoded (the database was edited by something else).
    #[error("stored {what} is unreadable: {reason}")]
    Corrupt {
        /// What was being read, e.g. `idempotency record "k1"`.
        what: String,
        /// Why it could not be decoded.
        reason: String,
    },
    /// The operating system gave no randomness for a new id.
    #[error("no randomness for a new id: {reason}")]
    Entropy {
        /// The system's explanation.
        reason: String,
    },
}

impl StoreError {
    /// An SQLite error with what the store was doing.
    pub(crate) fn sqlite(context: impl Into<String>, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            context: context.into(),
            source,
        }
    }

    /// A closure for `map_err` that wraps an SQLite error with `context`.
    pub(crate) fn with(context: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
        move |source| StoreError::sqlite(context, source)
    }

    /// True when the failure concerns one document or one input item and left nothing
    /// half-written: the caller may report it and go on (e.g. `import --continue-on-error`
    /// inside one [`Store::transaction`](super::Store::transaction)).
    pub fn is_item_error(&self) -> bool {
        matches!(
            self,
            StoreError::NotFound { .. }
                | StoreError::Ambiguous { .. }
                | StoreError::Conflict { .. }
                | StoreError::Duplicate { .. }
                | StoreError::Invalid { .. }
                | StoreError::ImportItem { .. }
        )
    }

    /// True when another connection held the database lock for longer than the busy timeout:
    /// nothing was changed and the same call may succeed later.
    pub fn is_busy(&self) -> bool {
        match self {
            StoreError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
            ),
            StoreError::ImportItem { source, .. } => source.is_busy(),
            _ => false,
        }
    }
}
