//! How the command layer fails: store errors and refusals, mapped to `aoi:error`s (§9).

use aoi::{Category, Code, ErrorEvent, Failure};
use outline::store::StoreError;

/// What ends a command.
#[derive(Debug)]
pub enum RunError {
    /// The store failed.
    Store(StoreError),
    /// A failure the SDK or the command decided (validation, idempotency, the stream, ...).
    Failed(Failure),
    /// A refusal of a destructive run (missing `--confirm`, wrong `--confirm-count`).
    Denied(Box<ErrorEvent>),
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> RunError {
        RunError::Store(e)
    }
}

impl From<ErrorEvent> for RunError {
    fn from(e: ErrorEvent) -> RunError {
        RunError::Failed(e.into())
    }
}

impl From<aoi::EmitError> for RunError {
    fn from(e: aoi::EmitError) -> RunError {
        RunError::Failed(e.into())
    }
}

impl From<Failure> for RunError {
    fn from(e: Failure) -> RunError {
        RunError::Failed(e)
    }
}

impl RunError {
    /// The error event to report.
    pub fn event(self) -> ErrorEvent {
        match self {
            RunError::Store(e) => store_error(&e),
            RunError::Failed(f) => f.into_event(),
            RunError::Denied(e) => *e,
        }
    }

    /// True for a refusal, which exits 77 in both modes.
    pub fn is_denied(&self) -> bool {
        matches!(self, RunError::Denied(_))
    }
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Failure {
        match e {
            RunError::Denied(e) => Failure::denied(*e),
            RunError::Failed(f) => f,
            RunError::Store(e) => Failure::from(store_error(&e)),
        }
    }
}

/// The `aoi:error` for a store failure, with the §9 category a consumer can act on.
pub fn store_error(e: &StoreError) -> ErrorEvent {
    let message = e.to_string();
    match e {
        StoreError::NotFound { id } => ErrorEvent::new(
            Category::NotFound,
            Code::from_static("DOCUMENT_NOT_FOUND"),
            message,
        )
        .target(id.clone())
        .hint("run `outline list` or `outline search QUERY` to find document ids"),
        StoreError::Ambiguous { reference, ids } => ErrorEvent::new(
            Category::Validation,
            Code::from_static("AMBIGUOUS_ID"),
            message,
        )
        .target(reference.clone())
        .hint(format!(
            "give more of the id, or all of it (it could be {})",
            ids.join(" or ")
        )),
        StoreError::Conflict { id, .. } => ErrorEvent::new(
            Category::Conflict,
            Code::from_static("VERSION_MISMATCH"),
            message,
        )
        .target(id.clone())
        .hint("run `outline get ID` for the current version"),
        StoreError::Duplicate { id } => ErrorEvent::new(
            Category::Conflict,
            Code::from_static("DUPLICATE_ID"),
            message,
        )
        .target(id.clone()),
        StoreError::Invalid { field, .. } => ErrorEvent::new(
            Category::Validation,
            Code::from_static("INVALID_FIELD"),
            message,
        )
        .field(*field),
        StoreError::InvalidQuery { .. } => ErrorEvent::new(
            Category::Validation,
            Code::from_static("INVALID_QUERY"),
            message,
        )
        .field("query"),
        StoreError::ImportItem { source, .. } => store_error(source),
        StoreError::PositionExpired { .. } => ErrorEvent::new(
            Category::Validation,
            Code::from_static("CURSOR_EXPIRED"),
            message,
        )
        .field("cursor")
        .hint("drop --cursor to start the search again"),
        StoreError::PositionMismatch => ErrorEvent::new(
            Category::Validation,
            Code::from_static("CURSOR_MISMATCH"),
            message,
        )
        .field("cursor"),
        StoreError::NewerSchema { path, .. } => ErrorEvent::new(
            Category::Unsupported,
            Code::from_static("DATABASE_TOO_NEW"),
            message,
        )
        .target(path.display().to_string()),
        StoreError::NotOutline { path, .. } => ErrorEvent::new(
            Category::Config,
            Code::from_static("NOT_AN_OUTLINE_DATABASE"),
            message,
        )
        .target(path.display().to_string())
        .hint("pass --db PATH (or set OUTLINE_DB) to an outline database"),
        StoreError::Io { path, .. } => {
            ErrorEvent::new(Category::Io, Code::from_static("DATABASE_IO"), message)
                .target(path.display().to_string())
        }
        e if e.is_busy() => ErrorEvent::new(
            Category::Unavailable,
            Code::from_static("DATABASE_BUSY"),
            message,
        )
        .retryable(true),
        StoreError::Sqlite { .. } => {
            ErrorEvent::new(Category::Io, Code::from_static("DATABASE_ERROR"), message)
        }
        StoreError::Corrupt { .. } => {
            ErrorEvent::new(Category::Io, Code::from_static("DATABASE_CORRUPT"), message)
        }
        _ => ErrorEvent::new(Category::Internal, Code::from_static("INTERNAL"), message),
    }
}

/// A named database that does not exist, for a command that only reads (never an empty
/// store: that would be a success nobody earned).
pub fn database_not_found(path: &std::path::Path) -> ErrorEvent {
    let shown = path.display().to_string();
    ErrorEvent::new(
        Category::NotFound,
        Code::from_static("DATABASE_NOT_FOUND"),
        format!("there is no database at {shown}"),
    )
    .field("db")
    .target(shown.clone())
    .hint(format!(
        "check the path; a write creates it, e.g. `outline --db {} import --input-jsonl FILE`",
        aoi::surface::term::shell_word(&shown)
    ))
}

/// A named database whose directory `missing` does not exist, for a write: the directory is
/// created only when asked.
pub fn directory_not_found(path: &std::path::Path, missing: &std::path::Path) -> ErrorEvent {
    let shown = path.display().to_string();
    ErrorEvent::new(
        Category::NotFound,
        Code::from_static("DATABASE_DIRECTORY_NOT_FOUND"),
        format!(
            "the directory {} of the database {shown} does not exist",
            missing.display()
        ),
    )
    .field("db")
    .target(shown)
    .hint("check the path, or pass --create-dirs to create the missing directories")
}
