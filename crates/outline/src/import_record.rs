//! The record `outline import` reads, and how a record becomes a [`NewDocument`].
//!
//! It lives in the library, not in the binary's command layer, so that the fuzz target
//! `import_record` (`fuzz/`) feeds the very parser the command uses; it is not part of the
//! library's documented API.

use aoi::surface::input::Record;
use aoi::{Category, Code, ErrorEvent};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::store::{NewDocument, MAX_COLLECTION_LEN, MAX_TAG_LEN};

/// The `type` of an `outline export` document event, which `import` takes back.
pub const ENTRY_TYPE: &str = "entry";

/// Control characters (Unicode `Cc`, Rust's `char::is_control`), as a regex class body.
macro_rules! control {
    () => {
        r"\u0000-\u001f\u007f-\u009f"
    };
}

/// Whitespace (Unicode `White_Space`, Rust's `char::is_whitespace`) that is not also a control
/// character, as a regex class body.
macro_rules! space {
    () => {
        r"\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
    };
}

// The record's schema is what `input-schema --command import` publishes as `$defs.record` and
// what every record is validated against, so the store's rules a schema can state
// (`check_title`, `check_collection`, `normalize_tags`, `canonical_id`) are stated here as well.
// They are written as `not` of an unanchored pattern (of a string, for a field that may be
// `null`), so that a `$` that also matches before a final newline (Python's) cannot let a
// forbidden character through. Lengths are the store's byte limits counted in characters
// (never more than bytes), so a record the store takes always validates; a longer UTF-8 tag or
// collection name is still the store's to refuse, as are `updated_at` before `created_at` and
// a cut body.

/// A document to create, or an `entry` of an `outline export` stream.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRecord {
    /// `entry` on an event of an `outline export` stream (the reader takes it off).
    #[serde(default, rename = "type")]
    #[schemars(schema_with = "entry_type_schema")]
    _type: Option<String>,
    /// One line, not blank.
    #[schemars(extend("not" = {"pattern": concat!("[", control!(), "]|^[", space!(), "]*$")}))]
    title: String,
    /// The body text.
    body: Option<String>,
    /// Tags, each 1 to 64 bytes without whitespace.
    #[serde(default)]
    #[schemars(schema_with = "tags_schema")]
    tags: Option<Vec<String>>,
    /// The collection (default: inbox), 1 to 128 bytes without surrounding whitespace.
    #[schemars(length(min = 1, max = MAX_COLLECTION_LEN))]
    #[schemars(extend("not" = {"type": "string", "pattern": concat!("[", control!(), "]|^[", space!(), "]|[", space!(), "]$")}))]
    collection: Option<String>,
    /// An id to keep (from an export): `doc_` and a ULID.
    #[schemars(length(min = 30, max = 30))]
    #[schemars(regex(pattern = r"^doc_[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$"))]
    id: Option<String>,
    /// Creation time to keep (from an export), ms since the epoch.
    created_at: Option<i64>,
    /// Update time to keep (from an export), ms since the epoch.
    updated_at: Option<i64>,
    /// From an export; ignored.
    #[serde(rename = "version")]
    _version: Option<u64>,
    /// From an export; ignored.
    #[serde(rename = "body_bytes")]
    _body_bytes: Option<u64>,
    /// True when an export cut the body: refused.
    body_truncated: Option<bool>,
}

/// `type`: `entry` or nothing. A record whose `type` is a string never gets here with it; one
/// whose `type` is `null` does, and is a plain record.
fn entry_type_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": [ENTRY_TYPE, null]})
}

/// `tags`: a list (or `null`) of tags as `normalize_tags` takes them.
fn tags_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["array", "null"],
        "items": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TAG_LEN,
            "not": {"pattern": concat!("[", control!(), space!(), "]")}
        }
    })
}

/// Where a record was in the input, for messages: `input line 3`, or `input item 2` for an
/// `--input-json` array.
pub fn position(line_number: Option<u64>, item_index: u64) -> String {
    match line_number {
        Some(l) => format!("input line {l}"),
        None => format!("input item {item_index}"),
    }
}

/// The document a valid record describes, or why it cannot be one.
pub fn to_document(record: &Record) -> Result<NewDocument, ErrorEvent> {
    let at = position(record.line_number, record.item_index);
    if let Some(ty) = record.ty.as_deref().filter(|t| *t != ENTRY_TYPE) {
        return Err(ErrorEvent::new(
            Category::Validation,
            Code::from_static("INPUT_RECORD_INVALID"),
            format!("{at} is an upstream `{ty}` event, not a document entry"),
        )
        .field("type"));
    }
    // Deserialized from the record's map in place: no copy of its strings.
    let r = ImportRecord::deserialize(&record.fields).map_err(|e: serde_json::Error| {
        ErrorEvent::new(
            Category::Validation,
            Code::from_static("INPUT_RECORD_INVALID"),
            format!("{at} is invalid: {e}"),
        )
    })?;
    if r.body_truncated == Some(true) {
        return Err(ErrorEvent::new(
            Category::Validation,
            Code::from_static("INPUT_BODY_TRUNCATED"),
            format!("{at} carries a body that was cut upstream; importing it would lose text"),
        )
        .field("body_truncated")
        .hint("export without --max-bytes"));
    }
    Ok(NewDocument {
        id: r.id,
        title: r.title,
        body: r.body.unwrap_or_default(),
        tags: r.tags.unwrap_or_default(),
        collection: r.collection,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}
