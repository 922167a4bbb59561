//! The domain events of `outline`'s machine mode, as published by `outline schema`.

use aoi::DomainEvent;
use schemars::JsonSchema;
use serde::Serialize;

use outline::store::{Document, Hit};

/// One document (`get`, `list`); `list` leaves the body out.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    /// Stable id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Collection.
    pub collection: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Last update time, milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// Version (ETag), raised by one on every change.
    pub version: u64,
    /// The body (`get` only), cut at `--max-bytes` on a character boundary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body's full length in bytes (`get` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<u64>,
    /// True when the body was cut at `--max-bytes` (`get` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_truncated: Option<bool>,
}

impl Entry {
    /// The entry of `doc` without its body.
    pub fn header(doc: &Document) -> Entry {
        Entry {
            id: doc.id.clone(),
            title: doc.title.clone(),
            collection: doc.collection.clone(),
            tags: doc.tags.clone(),
            created_at: doc.created_at,
            updated_at: doc.updated_at,
            version: doc.version,
            body: None,
            body_bytes: None,
            body_truncated: None,
        }
    }
}

impl DomainEvent for Entry {
    // Named where `import` reads entries back.
    const TYPE: &'static str = outline::import_record::ENTRY_TYPE;
}

/// One search result, best first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HitEvent {
    /// Position in the ranking, from 1, continuing across pages.
    pub rank: u64,
    /// BM25 score (higher is better).
    pub score: f64,
    /// Stable id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Collection.
    pub collection: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Version (ETag).
    pub version: u64,
    /// A short excerpt around the matches.
    pub snippet: String,
    /// Byte ranges of `snippet` that matched, as `[start, end)` pairs.
    pub highlights: Vec<[usize; 2]>,
}

impl HitEvent {
    /// The event for a store hit.
    pub fn from_hit(hit: Hit) -> HitEvent {
        HitEvent {
            rank: hit.rank,
            score: hit.score,
            id: hit.id,
            title: hit.title,
            collection: hit.collection,
            tags: hit.tags,
            version: hit.version,
            highlights: hit
                .snippet
                .highlights
                .iter()
                .map(|r| [r.start, r.end])
                .collect(),
            snippet: hit.snippet.text,
        }
    }
}

impl DomainEvent for HitEvent {
    const TYPE: &'static str = "hit";
}

/// Audit event (§14.5): a document was created.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Created {
    /// Stable id of the new document.
    pub id: String,
    /// Its version (ETag).
    pub version: u64,
    /// Its title.
    pub title: String,
    /// Its collection.
    pub collection: String,
}

impl DomainEvent for Created {
    const TYPE: &'static str = "created";
}

/// Audit event (§14.5): a document was updated.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Updated {
    /// Stable id.
    pub id: String,
    /// Its version (ETag) after the update.
    pub version: u64,
}

impl DomainEvent for Updated {
    const TYPE: &'static str = "updated";
}

/// Audit event (§14.5): a document was deleted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    /// Stable id of the deleted document.
    pub id: String,
    /// The version it was at when deleted.
    pub version: u64,
    /// Its title.
    pub title: String,
    /// Its collection.
    pub collection: String,
}

impl DomainEvent for Deleted {
    const TYPE: &'static str = "deleted";
}

/// Facts about the database (`status`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusEvent {
    /// The database file.
    pub db_path: String,
    /// False when no database has been created there yet (it reads as empty).
    pub exists: bool,
    /// How many documents there are.
    pub documents: u64,
    /// How many distinct collections hold them.
    pub collections: u64,
    /// How many distinct tags are in use.
    pub tags: u64,
    /// Pages in use times the page size, in bytes.
    pub size_bytes: u64,
    /// The schema version the file is at.
    pub schema_version: i64,
    /// Whether the database is in WAL journal mode.
    pub wal: bool,
    /// The newest change-log position (0 for none).
    pub last_change: i64,
}

impl DomainEvent for StatusEvent {
    const TYPE: &'static str = "status";
}

/// Audit event (§14.5): a document was moved to another collection (and possibly retitled).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Moved {
    /// Stable id.
    pub id: String,
    /// The collection it left.
    pub from: String,
    /// The collection it is now in.
    pub to: String,
    /// Its title after the move.
    pub title: String,
    /// Its version (ETag) after the move.
    pub version: u64,
}

impl DomainEvent for Moved {
    const TYPE: &'static str = "moved";
}

/// Audit event (§14.5): a document was copied into a new document with a new stable id.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Copied {
    /// Stable id of the new copy.
    pub id: String,
    /// Stable id of the original.
    pub source_id: String,
    /// The copy's collection.
    pub collection: String,
    /// The copy's title.
    pub title: String,
    /// The copy's version (ETag).
    pub version: u64,
}

impl DomainEvent for Copied {
    const TYPE: &'static str = "copied";
}

/// One change to the database, as `watch` sees it in the change log (§4.2).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Changed {
    /// The change-log position; pass it to `watch --since` to resume after this change.
    pub seq: i64,
    /// When, in milliseconds since the Unix epoch.
    pub at: i64,
    /// What happened: `created`, `updated`, `deleted`, `moved` or `copied`.
    pub kind: String,
    /// Stable id of the document (for `copied`, the new copy).
    pub id: String,
    /// The document's version after the change (for `deleted`, the version deleted).
    pub version: u64,
    /// The document's collection after the change.
    pub collection: String,
    /// For `moved`, the collection it left; for `copied`, the id of the original.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

impl Changed {
    /// The event for a change-log entry.
    pub fn from_change(change: outline::store::Change) -> Changed {
        Changed {
            seq: change.seq,
            at: change.at,
            kind: change.kind.as_str().to_owned(),
            id: change.id,
            version: change.version,
            collection: change.collection,
            from: change.from,
        }
    }
}

impl DomainEvent for Changed {
    const TYPE: &'static str = "changed";
}

/// Where `auth` commands find a token, and what they did with the credential file. Never the
/// token itself.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CredentialEvent {
    /// `login`, `logout` or `status`.
    pub action: String,
    /// Where a token comes from: `env` (OUTLINE_TOKEN), `file`, or `none`.
    pub source: String,
    /// The credential file, when it is the one concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// True when the file was written (`login`) or removed (`logout`).
    pub changed: bool,
}

impl DomainEvent for CredentialEvent {
    const TYPE: &'static str = "credential";
}

/// Whether a database asks a sync for a token (`auth protect`, `auth unprotect`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProtectionEvent {
    /// The database file.
    pub path: String,
    /// True when a sync with it now needs the token.
    pub protected: bool,
    /// False when it already was as asked.
    pub changed: bool,
    /// Where the token came from: `env` (OUTLINE_TOKEN) or `file`.
    pub token_source: String,
}

impl DomainEvent for ProtectionEvent {
    const TYPE: &'static str = "protection";
}

/// What a sync compared and what it changes (§16.3: direction and planned changes stated),
/// before its `synced` events.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SyncPlanned {
    /// The remote database.
    pub remote: String,
    /// `push` (this database to the remote), `pull` (the remote to this one) or `both`.
    pub direction: String,
    /// True under `--dry-run`: the changes are `aoi:plan` events and nothing is written.
    pub dry_run: bool,
    /// Documents to create on the remote.
    pub push_create: u64,
    /// Documents on the remote to update from this database.
    pub push_update: u64,
    /// Documents to create in this database.
    pub pull_create: u64,
    /// Documents in this database to update from the remote.
    pub pull_update: u64,
    /// Documents that are the same on both sides.
    pub unchanged: u64,
    /// Differences the direction does not carry (e.g. newer remote documents on a push).
    pub held_back: u64,
    /// Documents changed at the same time to the same version on both sides: left alone.
    pub conflicts: u64,
}

impl DomainEvent for SyncPlanned {
    const TYPE: &'static str = "sync";
}

/// Audit event (§14.5): a sync created or updated a document on one side.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Synced {
    /// Stable id, the same on both sides.
    pub id: String,
    /// `create` or `update`.
    pub action: String,
    /// The side written: `local` or `remote`.
    pub to: String,
    /// The document's title.
    pub title: String,
    /// Its version (ETag) on the side written, after the change.
    pub version: u64,
}

impl DomainEvent for Synced {
    const TYPE: &'static str = "synced";
}
