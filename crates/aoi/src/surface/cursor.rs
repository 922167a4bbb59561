//! Opaque pagination cursors bound to the query that minted them (spec §15).
//!
//! A cursor is only meaningful for the query it continues: fed to a different command, or to
//! the same command with a different query, filter or sort, it would silently skip or repeat
//! records. So every cursor carries a short binding to [`request_hash`] of the command and
//! its shaping arguments, and a checksum, and [`CursorCodec::decode`] tells the three ways a
//! cursor can be wrong apart: not a cursor at all or altered (`CURSOR_INVALID`), or a valid
//! cursor for another query (`CURSOR_MISMATCH`). Both are `validation` errors about the
//! `cursor` flag, with a hint naming what to do.
//!
//! [`take_page`] cuts a result set at `--limit` and mints the `next_cursor` that
//! `aoi:summary` carries when output is truncated.
//!
//! ```
//! use aoi::surface::cursor::{take_page, CursorCodec};
//!
//! #[derive(serde::Serialize)]
//! struct Shaping<'a> { query: &'a str }
//!
//! let codec = CursorCodec::new("search", &Shaping { query: "agent" });
//! let limit = 3;
//! // The first page: fetch up to limit + 1 rows after no position, in a stable order.
//! let page = take_page(&codec, (1u64..=limit as u64 + 1), limit, |id| *id);
//! assert_eq!(page.items, vec![1, 2, 3]);
//! let cursor = page.next_cursor.clone().expect("more to come");
//! // The next invocation passes `--cursor <cursor>`; the tool resumes after id 3.
//! let after: u64 = codec.decode(&cursor).unwrap();
//! assert_eq!(after, 3);
//! // The same cursor with another query is refused, not silently misapplied.
//! let other = CursorCodec::new("search", &Shaping { query: "tools" });
//! assert_eq!(other.decode::<u64>(&cursor).unwrap_err().code.as_str(), "CURSOR_MISMATCH");
//! ```

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use std::io::Write;

use crate::emit::{EmitError, Emitter, Failure, Outcome};
use crate::wire::{Category, Code, ErrorEvent};
use crate::DomainEvent;

/// The cursor payload format written by this version.
const CURSOR_VERSION: u8 = 1;
/// Bytes of the query binding in a cursor.
const BINDING_LEN: usize = 8;
/// Bytes of the checksum at the end of a cursor.
const CHECKSUM_LEN: usize = 8;
/// The smallest payload: version, binding, an empty position, checksum.
const MIN_PAYLOAD: usize = 1 + BINDING_LEN + CHECKSUM_LEN;
/// Domain separation for the request hash, so the same bytes hashed elsewhere never collide.
const REQUEST_HASH_DOMAIN: &str = "aoi.request.v1";

/// `validation`: the cursor is not one this tool issued, or was altered.
pub const CURSOR_INVALID: Code = Code::from_static("CURSOR_INVALID");
/// `validation`: a valid cursor, minted for a different command or shaping arguments.
pub const CURSOR_MISMATCH: Code = Code::from_static("CURSOR_MISMATCH");
/// `usage`: `--limit 0` asks for nothing and cannot make progress.
pub const LIMIT_INVALID: Code = Code::from_static("LIMIT_INVALID");
/// `internal`: the tool's shaping arguments or cursor position did not serialize as JSON.
pub const REQUEST_NOT_SERIALIZABLE: Code = Code::from_static("REQUEST_NOT_SERIALIZABLE");

/// A stable `"sha256:<hex>"` digest of a command and the arguments that shape its result set.
///
/// Pass only the **shaping** arguments: the query, filters, sort order, scope: whatever
/// decides *which* records exist and in what order. Never pass `--limit` (a continuation may
/// ask for a different page size), `--cursor` (it changes on every page), output format,
/// timeouts or the idempotency key itself. The same value is used by
/// [`safety::begin`](super::safety::begin) to tell a retried request from a different one
/// under the same idempotency key, where the whole request (not only its shape) should be
/// passed.
///
/// The encoding is canonical: `shaping` goes through `serde_json::Value` and objects are
/// written with their keys sorted, so a `HashMap` hashes the same whatever its iteration
/// order, and struct field order does not matter either.
///
/// A value that cannot be represented as JSON (a map with non-string keys, a failing custom
/// `Serialize`) is a bug in the tool; it gets a hash derived from a fresh random run id, so
/// it matches nothing, and cursors and idempotency keys fail closed rather than match a
/// different request. Use [`try_request_hash`] to see the error instead.
///
/// ```
/// use aoi::surface::cursor::request_hash;
/// let a = request_hash("search", &serde_json::json!({"query": "x", "sort": "rank"}));
/// let b = request_hash("search", &serde_json::json!({"sort": "rank", "query": "x"}));
/// assert_eq!(a, b);
/// assert!(a.starts_with("sha256:") && a.len() == 7 + 64);
/// assert_ne!(a, request_hash("list", &serde_json::json!({"query": "x", "sort": "rank"})));
/// ```
pub fn request_hash<T: Serialize + ?Sized>(command: &str, shaping: &T) -> String {
    match try_request_hash(command, shaping) {
        Ok(hash) => hash,
        Err(_) => {
            let unique = crate::emit::new_run_id();
            sha256_tagged(&[b"aoi.request.unserializable\0", unique.as_bytes()])
        }
    }
}

/// Like [`request_hash`], but reports a value that does not serialize as JSON as an
/// `internal` `REQUEST_NOT_SERIALIZABLE` error.
pub fn try_request_hash<T: Serialize + ?Sized>(
    command: &str,
    shaping: &T,
) -> Result<String, ErrorEvent> {
    let value = serde_json::to_value(shaping).map_err(not_serializable)?;
    let mut canonical = Vec::with_capacity(128);
    let framed = Value::Array(vec![
        Value::from(REQUEST_HASH_DOMAIN),
        Value::from(command),
        value,
    ]);
    write_canonical(&mut canonical, &framed).map_err(not_serializable)?;
    Ok(sha256_tagged(&[&canonical]))
}

fn not_serializable(e: serde_json::Error) -> ErrorEvent {
    ErrorEvent::new(
        Category::Internal,
        REQUEST_NOT_SERIALIZABLE,
        format!("the request could not be encoded as JSON: {e}"),
    )
}

/// `"sha256:"` and the lowercase hex SHA-256 of the concatenated parts.
fn sha256_tagged(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    let digest = hasher.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest.iter() {
        push_hex(&mut out, *byte);
    }
    out
}

fn push_hex(out: &mut String, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(char::from(HEX[usize::from(byte >> 4)]));
    out.push(char::from(HEX[usize::from(byte & 0x0f)]));
}

/// Writes `value` as compact JSON with object keys sorted, whatever `serde_json`'s map order.
fn write_canonical(out: &mut Vec<u8>, value: &Value) -> Result<(), serde_json::Error> {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, key)?;
                out.push(b':');
                write_canonical(out, item)?;
            }
            out.push(b'}');
        }
        scalar => serde_json::to_writer(&mut *out, scalar)?,
    }
    Ok(())
}

/// Mints and checks the cursors of one query: a command and its shaping arguments.
///
/// A cursor is the URL-safe base64 (no padding) of a compact payload: a format version, an
/// 8-byte binding derived from [`request_hash`], the position as JSON, and an 8-byte SHA-256
/// checksum over the rest. It is opaque to callers but not secret: the position can be read
/// by anyone who decodes it, and the checksum detects accidents (a truncated copy, a stray
/// edit) and casual tampering but is not a MAC: anyone who reads this code can mint a
/// cursor. A tool whose positions must not be forged has to authorize each page on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorCodec {
    request_hash: String,
    binding: [u8; BINDING_LEN],
}

impl CursorCodec {
    /// The codec for `command` with these shaping arguments (see [`request_hash`] for which
    /// arguments to pass: never `--limit` or `--cursor`).
    pub fn new<T: Serialize + ?Sized>(command: &str, shaping: &T) -> CursorCodec {
        let request_hash = request_hash(command, shaping);
        let digest = Sha256::new()
            .chain_update(b"aoi.cursor.binding\0")
            .chain_update(request_hash.as_bytes())
            .finalize();
        let mut binding = [0u8; BINDING_LEN];
        binding.copy_from_slice(&digest[..BINDING_LEN]);
        CursorCodec {
            request_hash,
            binding,
        }
    }

    /// The [`request_hash`] this codec binds its cursors to.
    pub fn request_hash(&self) -> &str {
        &self.request_hash
    }

    /// Mints the cursor that resumes after `position`.
    ///
    /// A position that does not serialize as JSON is a bug in the tool; it is written as
    /// `null`, which [`decode`](Self::decode) into the real position type reports as
    /// `CURSOR_INVALID`. Use [`try_encode`](Self::try_encode) to see the error instead.
    pub fn encode<P: Serialize + ?Sized>(&self, position: &P) -> String {
        self.try_encode(position)
            .unwrap_or_else(|_| self.seal(b"null"))
    }

    /// Like [`encode`](Self::encode), but reports a position that does not serialize as an
    /// `internal` `REQUEST_NOT_SERIALIZABLE` error.
    pub fn try_encode<P: Serialize + ?Sized>(&self, position: &P) -> Result<String, ErrorEvent> {
        let json = serde_json::to_vec(position).map_err(not_serializable)?;
        Ok(self.seal(&json))
    }

    fn seal(&self, position: &[u8]) -> String {
        let mut payload = Vec::with_capacity(MIN_PAYLOAD + position.len());
        payload.push(CURSOR_VERSION);
        payload.extend_from_slice(&self.binding);
        payload.extend_from_slice(position);
        let checksum = checksum(&payload);
        payload.extend_from_slice(&checksum);
        URL_SAFE_NO_PAD.encode(payload)
    }

    /// Reads the position back from a cursor this codec minted.
    ///
    /// Surrounding whitespace is ignored (a copied line often keeps its newline). Anything
    /// that is not a cursor, or was altered, is a `validation` `CURSOR_INVALID`; a cursor
    /// minted for another command or other shaping arguments is a `validation`
    /// `CURSOR_MISMATCH`. Both set `field: "cursor"` and a hint. Never panics, whatever the
    /// input.
    pub fn decode<P: DeserializeOwned>(&self, cursor: &str) -> Result<P, ErrorEvent> {
        let cursor = cursor.trim();
        if cursor.is_empty() {
            return Err(invalid("the cursor is empty"));
        }
        let payload = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| invalid("the cursor is not valid URL-safe base64"))?;
        if payload.len() < MIN_PAYLOAD {
            return Err(invalid(
                "the cursor is too short to be one this tool issued",
            ));
        }
        let (body, sum) = payload.split_at(payload.len() - CHECKSUM_LEN);
        if checksum(body) != sum {
            return Err(invalid(
                "the cursor's checksum does not match: it was altered or cut short",
            ));
        }
        let (version, rest) = body.split_at(1);
        if version != [CURSOR_VERSION] {
            return Err(invalid(&format!(
                "cursor format version {} is not supported by this tool version",
                version.first().copied().unwrap_or(0)
            )));
        }
        let (binding, position) = rest.split_at(BINDING_LEN);
        if binding != self.binding {
            return Err(ErrorEvent::new(
                Category::Validation,
                CURSOR_MISMATCH,
                "the cursor belongs to a different query (another command, query, filter or sort)",
            )
            .field("cursor")
            .hint("drop --cursor to start over, or repeat the original arguments with it"));
        }
        serde_json::from_slice(position)
            .map_err(|_| invalid("the cursor's position is not one this tool version understands"))
    }
}

fn checksum(body: &[u8]) -> [u8; CHECKSUM_LEN] {
    let digest = Sha256::new()
        .chain_update(b"aoi.cursor.checksum\0")
        .chain_update(body)
        .finalize();
    let mut out = [0u8; CHECKSUM_LEN];
    out.copy_from_slice(&digest[..CHECKSUM_LEN]);
    out
}

fn invalid(message: &str) -> ErrorEvent {
    ErrorEvent::new(Category::Validation, CURSOR_INVALID, message)
        .field("cursor")
        .hint("pass a next_cursor from an earlier aoi:summary unchanged, or drop --cursor to start from the beginning")
}

/// Checks a `--limit`: zero is a `usage` error `LIMIT_INVALID` (a page of nothing cannot make
/// progress, and a cursor after it would point nowhere); any other value is returned as is.
///
/// Upper bounds are the tool's policy, not this function's.
pub fn check_limit(limit: usize) -> Result<usize, ErrorEvent> {
    if limit == 0 {
        return Err(
            ErrorEvent::new(Category::Usage, LIMIT_INVALID, "--limit must be at least 1")
                .field("limit")
                .hint("pass --limit 1 or more, or omit it for the default"),
        );
    }
    Ok(limit)
}

/// One page of a result set and, when it was cut, the cursor to continue from (§15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items of this page, at most `limit`, in the order they were fetched.
    pub items: Vec<T>,
    /// The cursor after the last item, present only when more items exist.
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// True when the page was cut at the limit and more items exist.
    pub fn truncated(&self) -> bool {
        self.next_cursor.is_some()
    }

    /// Marks `outcome` truncated with this page's `next_cursor` when the page was cut, so
    /// `aoi:summary` says `truncated: true` and carries the cursor (§15); otherwise returns
    /// `outcome` unchanged.
    pub fn outcome(&self, outcome: Outcome) -> Outcome {
        match &self.next_cursor {
            Some(cursor) => outcome.truncated(Some(cursor.clone())),
            None => outcome,
        }
    }
}

/// Cuts `items` at `limit` and mints the cursor to continue from.
///
/// The caller fetches up to `limit + 1` items in a stable order (for SQL: `ORDER BY` a unique
/// key, `WHERE key > <decoded cursor>`, `LIMIT limit + 1`); the extra item only proves that
/// more exist. At most `limit + 1` items are drawn from the iterator. When more than `limit`
/// arrive, the page keeps the first `limit` and `next_cursor` is `position` of the last kept
/// item, encoded by `codec`; otherwise the page is everything and `next_cursor` is `None`.
///
/// Check the limit with [`check_limit`] first: with a limit of 0 this returns an empty page
/// without a cursor, since there is no kept item to continue after.
pub fn take_page<T, P: Serialize>(
    codec: &CursorCodec,
    items: impl IntoIterator<Item = T>,
    limit: usize,
    position: impl Fn(&T) -> P,
) -> Page<T> {
    let mut kept: Vec<T> = items.into_iter().take(limit.saturating_add(1)).collect();
    let next_cursor = if kept.len() > limit {
        kept.truncate(limit);
        kept.last().map(|last| codec.encode(&position(last)))
    } else {
        None
    };
    Page {
        items: kept,
        next_cursor,
    }
}

/// A bounded read done for the command: `--limit` checked, `--cursor` decoded and bound to the
/// query, the page cut and emitted, `--max-bytes` honoured, and the outcome marked
/// `truncated` with the `next_cursor` to continue from (§15). Made by
/// [`PageArgs::pager`](crate::surface::flags::PageArgs::pager).
///
/// ```
/// use aoi::prelude::*;
/// # #[derive(serde::Serialize)] struct Item { n: u64 }
/// # impl DomainEvent for Item { const TYPE: &'static str = "item"; }
/// # fn list(out: &mut Emitter<Vec<u8>>, page: &PageArgs, prefix: &str) -> RunResult {
/// let pager = page.pager(out, &prefix)?;
/// let after: u64 = pager.after()?.unwrap_or(0);
/// // Fetch in a stable order, after the cursor's position (a keyed query): at most
/// // `pager.fetch()` items are drawn.
/// let items = (after + 1..=100).map(|n| Item { n });
/// Ok(pager.emit(out, items, |item| item.n)?)
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Pager {
    codec: CursorCodec,
    limit: usize,
    cursor: Option<String>,
}

impl Pager {
    /// A pager for `command` and the arguments that shape its results (`shaping`: the query,
    /// filters and sort a cursor must not outlive), at `limit` (refused when 0), resuming
    /// after `cursor`.
    pub fn new<S: Serialize + ?Sized>(
        command: &str,
        shaping: &S,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<Pager, ErrorEvent> {
        Ok(Pager {
            codec: CursorCodec::new(command, shaping),
            limit: check_limit(limit)?,
            cursor,
        })
    }

    /// The position `--cursor` resumes after (refused when another query minted it), or
    /// `None` on the first page.
    pub fn after<P: DeserializeOwned>(&self) -> Result<Option<P>, ErrorEvent> {
        self.cursor
            .as_deref()
            .map(|c| self.codec.decode(c))
            .transpose()
    }

    /// The page size.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How many items to fetch: one more than the page, which only proves that more exist.
    pub fn fetch(&self) -> usize {
        self.limit.saturating_add(1)
    }

    /// Emits the page: `items` are those after [`Pager::after`], in the query's stable order
    /// (at most [`Pager::fetch`] are drawn); `position` is what a cursor resumes after. Under
    /// `--max-bytes` the page stops at the last item that fit. Returns the outcome to finish
    /// with: success, `truncated` with the `next_cursor` when more exist.
    pub fn emit<W: Write, T: DomainEvent, P: Serialize>(
        &self,
        out: &mut Emitter<W>,
        items: impl IntoIterator<Item = T>,
        position: impl Fn(&T) -> P,
    ) -> Result<Outcome, Failure> {
        let page = take_page(&self.codec, items, self.limit, &position);
        let mut last: Option<P> = None;
        for item in &page.items {
            match out.emit(item) {
                Err(EmitError::ByteLimit) => {
                    // The first item always goes out, so there is a last one to resume after.
                    let next = last.as_ref().map(|p| self.codec.encode(p));
                    return Ok(Outcome::success().truncated(next));
                }
                other => other?,
            }
            last = Some(position(item));
        }
        Ok(page.outcome(Outcome::success()))
    }

    /// [`Pager::emit`] for items that are not fetched after the cursor (an in-memory list,
    /// a directory read): those up to and including the cursor's position are skipped here.
    pub fn emit_all<W: Write, T: DomainEvent, P: Serialize + DeserializeOwned + PartialEq>(
        &self,
        out: &mut Emitter<W>,
        items: impl IntoIterator<Item = T>,
        position: impl Fn(&T) -> P,
    ) -> Result<Outcome, Failure> {
        let after: Option<P> = self.after()?;
        let mut items = items.into_iter();
        if let Some(after) = after {
            // Skip through the item the cursor names; a cursor naming nothing left skips all.
            for item in items.by_ref() {
                if position(&item) == after {
                    break;
                }
            }
        }
        self.emit(out, items, position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::HashMap;

    #[derive(Serialize)]
    struct Numbered {
        n: u64,
    }

    impl crate::DomainEvent for Numbered {
        const TYPE: &'static str = "numbered";
    }

    /// The `n` of every event and the summary of a page of `1..=total` emitted by `pager`
    /// (`emit_all` when `all`), with `--max-bytes` `max_bytes`.
    fn page_of(pager: &Pager, total: u64, all: bool, max_bytes: Option<u64>) -> (Vec<u64>, Value) {
        let identity = crate::Identity::new("t", "1", "s", "1.0.0");
        let mut out = crate::Emitter::builder(identity)
            .max_bytes(max_bytes)
            .start(Vec::new())
            .unwrap();
        let after: u64 = pager.after().unwrap().unwrap_or(0);
        let outcome = if all {
            pager.emit_all(&mut out, (1..=total).map(|n| Numbered { n }), |i| i.n)
        } else {
            pager.emit(&mut out, (after + 1..=total).map(|n| Numbered { n }), |i| {
                i.n
            })
        }
        .unwrap();
        out.finish(outcome).unwrap();
        let lines: Vec<Value> = String::from_utf8(out.into_writer())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ns = lines.iter().filter_map(|e| e["n"].as_u64()).collect();
        (ns, lines.last().unwrap().clone())
    }

    #[test]
    fn a_pager_walks_every_item_once_by_its_cursors_and_only_for_its_own_query() {
        for all in [false, true] {
            let mut seen = Vec::new();
            let mut cursor = None;
            loop {
                let pager = Pager::new("list", &"q", 3, cursor.clone()).unwrap();
                let (ns, summary) = page_of(&pager, 7, all, None);
                seen.extend(ns);
                match summary["next_cursor"].as_str() {
                    Some(next) => {
                        assert_eq!(summary["truncated"], true);
                        cursor = Some(next.to_owned());
                    }
                    None => break,
                }
            }
            assert_eq!(seen, (1..=7).collect::<Vec<_>>(), "all: {all}");
            // A cursor of this query is refused by another.
            let first = Pager::new("list", &"q", 3, None).unwrap();
            let (_, summary) = page_of(&first, 7, all, None);
            let next = summary["next_cursor"].as_str().unwrap().to_owned();
            let other = Pager::new("list", &"other", 3, Some(next)).unwrap();
            assert!(other.after::<u64>().is_err());
        }
        assert!(
            Pager::new("list", &"q", 0, None).is_err(),
            "--limit 0 is refused"
        );
    }

    #[test]
    fn under_max_bytes_the_page_stops_at_the_last_item_that_fit_and_resumes_after_it() {
        let pager = Pager::new("list", &"q", 10, None).unwrap();
        let (ns, summary) = page_of(&pager, 10, false, Some(120));
        assert!(!ns.is_empty() && ns.len() < 10, "{ns:?}");
        assert_eq!(summary["truncated"], true);
        let next = Pager::new(
            "list",
            &"q",
            10,
            summary["next_cursor"].as_str().map(str::to_owned),
        )
        .unwrap();
        assert_eq!(next.after::<u64>().unwrap(), ns.last().copied());
    }

    #[derive(Serialize)]
    struct Shaping<'a> {
        query: &'a str,
        sort: &'a str,
    }

    fn codec() -> CursorCodec {
        CursorCodec::new(
            "search",
            &Shaping {
                query: "agent",
                sort: "rank",
            },
        )
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Keyset {
        score: f64,
        id: String,
    }

    #[test]
    fn request_hash_is_canonical_and_discriminating() {
        let mut a = HashMap::new();
        let mut b = HashMap::new();
        for i in 0..50 {
            a.insert(format!("k{i}"), i);
        }
        for i in (0..50).rev() {
            b.insert(format!("k{i}"), i);
        }
        assert_eq!(request_hash("list", &a), request_hash("list", &b));
        let hash = request_hash("list", &a);
        assert!(hash.starts_with("sha256:"));
        assert_eq!(hash.len(), 71);
        assert!(hash[7..]
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
        // The command is framed, not concatenated: moving text between the two changes it.
        assert_ne!(request_hash("ab", "c"), request_hash("a", "bc"));
        assert_ne!(request_hash("list", &a), request_hash("search", &a));
        b.insert("k0".to_owned(), 1);
        assert_ne!(request_hash("list", &a), request_hash("list", &b));
    }

    #[test]
    fn unserializable_shaping_fails_closed() {
        let mut bad: HashMap<(u8, u8), u8> = HashMap::new();
        bad.insert((1, 2), 3);
        let err = try_request_hash("list", &bad).unwrap_err();
        assert_eq!(err.code, REQUEST_NOT_SERIALIZABLE);
        assert_eq!(err.category, Category::Internal);
        // Two hashes of the same unserializable value never match each other.
        assert_ne!(request_hash("list", &bad), request_hash("list", &bad));
    }

    #[test]
    fn positions_of_several_types_round_trip() {
        let c = codec();
        assert_eq!(c.decode::<u64>(&c.encode(&42u64)).unwrap(), 42);
        assert_eq!(c.decode::<i64>(&c.encode(&-7i64)).unwrap(), -7);
        let s = "doc/ü/\"quoted\"\n".to_owned();
        assert_eq!(c.decode::<String>(&c.encode(&s)).unwrap(), s);
        let t = (3u32, "b".to_owned());
        assert_eq!(c.decode::<(u32, String)>(&c.encode(&t)).unwrap(), t);
        let k = Keyset {
            score: 0.125,
            id: "doc_9".into(),
        };
        assert_eq!(c.decode::<Keyset>(&c.encode(&k)).unwrap(), k);
        assert_eq!(
            c.decode::<Option<u8>>(&c.encode(&None::<u8>)).unwrap(),
            None
        );
    }

    #[test]
    fn cursors_are_url_safe_and_unpadded() {
        let c = codec();
        for position in [0u64, 1, 255, u64::MAX] {
            let cursor = c.encode(&position);
            assert!(cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        }
    }

    #[test]
    fn surrounding_whitespace_is_ignored() {
        let c = codec();
        let cursor = format!(" {}\n", c.encode(&5u32));
        assert_eq!(c.decode::<u32>(&cursor).unwrap(), 5);
    }

    #[test]
    fn every_single_character_edit_is_invalid() {
        let c = codec();
        let cursor = c.encode(&Keyset {
            score: 1.5,
            id: "doc_1".into(),
        });
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for i in 0..cursor.len() {
            let mut bytes = cursor.clone().into_bytes();
            let original = bytes[i];
            bytes[i] = alphabet
                .iter()
                .copied()
                .find(|&b| b != original)
                .unwrap_or(b'A');
            let edited = String::from_utf8(bytes).unwrap();
            let err = c.decode::<Keyset>(&edited).unwrap_err();
            assert_eq!(err.code, CURSOR_INVALID, "edit at {i}");
            assert_eq!(err.category, Category::Validation);
            assert_eq!(err.field.as_deref(), Some("cursor"));
            assert!(err.hint.as_deref().unwrap().contains("--cursor"));
        }
        // Dropping the last character is also caught.
        let err = c.decode::<Keyset>(&cursor[..cursor.len() - 1]).unwrap_err();
        assert_eq!(err.code, CURSOR_INVALID);
    }

    #[test]
    fn a_cursor_for_another_query_is_a_mismatch() {
        let cursor = codec().encode(&10u64);
        let other_args = CursorCodec::new(
            "search",
            &Shaping {
                query: "agent",
                sort: "date",
            },
        );
        let other_command = CursorCodec::new(
            "list",
            &Shaping {
                query: "agent",
                sort: "rank",
            },
        );
        for c in [other_args, other_command] {
            let err = c.decode::<u64>(&cursor).unwrap_err();
            assert_eq!(err.code, CURSOR_MISMATCH);
            assert_eq!(err.category, Category::Validation);
            assert!(!err.retryable);
            assert_eq!(err.field.as_deref(), Some("cursor"));
            assert!(err.message.contains("different query"));
            let hint = err.hint.unwrap();
            assert!(hint.contains("drop --cursor") && hint.contains("original arguments"));
        }
        // Key order of the same arguments does not matter.
        let reordered = CursorCodec::new(
            "search",
            &serde_json::json!({"sort": "rank", "query": "agent"}),
        );
        assert_eq!(reordered.decode::<u64>(&cursor).unwrap(), 10);
    }

    #[test]
    fn a_position_of_the_wrong_type_is_invalid() {
        let c = codec();
        let err = c.decode::<u64>(&c.encode("not a number")).unwrap_err();
        assert_eq!(err.code, CURSOR_INVALID);
    }

    #[test]
    fn hostile_input_never_panics() {
        let c = codec();
        let huge = "A".repeat(4 << 20);
        let inputs: Vec<String> = vec![
            String::new(),
            "   ".into(),
            "=".into(),
            "a".into(),
            "AAAA".into(),
            "!!!!".into(),
            "€€€€".into(),
            String::from_utf8_lossy(&[0xff, 0xfe, 0x00, 0x80]).into_owned(),
            "\u{0}\u{1b}[31m".into(),
            huge,
            URL_SAFE_NO_PAD.encode([0u8; MIN_PAYLOAD]),
            URL_SAFE_NO_PAD.encode(vec![0xffu8; 1 << 16]),
            c.encode(&1u8) + "==",
        ];
        for input in &inputs {
            let err = c.decode::<Value>(input).unwrap_err();
            assert_eq!(err.code, CURSOR_INVALID);
            assert!(!err.message.contains('\n'));
        }
        // Arbitrary bytes, after the lossy conversion a CLI argument would get.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes()[0]
                })
                .collect();
            let text = String::from_utf8_lossy(&bytes);
            assert!(c.decode::<Value>(&text).is_err());
            let b64 = URL_SAFE_NO_PAD.encode(&bytes);
            assert!(c.decode::<Value>(&b64).is_err());
        }
    }

    #[test]
    fn a_future_format_version_is_invalid() {
        let c = codec();
        let mut body = vec![CURSOR_VERSION + 1];
        body.extend_from_slice(&c.binding);
        body.extend_from_slice(b"1");
        let sum = checksum(&body);
        body.extend_from_slice(&sum);
        let err = c.decode::<u64>(&URL_SAFE_NO_PAD.encode(body)).unwrap_err();
        assert_eq!(err.code, CURSOR_INVALID);
        assert!(err.message.contains("version 2"));
    }

    #[test]
    fn unserializable_positions_are_reported_or_fail_closed() {
        let c = codec();
        let mut bad: HashMap<(u8, u8), u8> = HashMap::new();
        bad.insert((1, 2), 3);
        assert_eq!(
            c.try_encode(&bad).unwrap_err().code,
            REQUEST_NOT_SERIALIZABLE
        );
        let cursor = c.encode(&bad);
        assert_eq!(c.decode::<u64>(&cursor).unwrap_err().code, CURSOR_INVALID);
    }

    #[test]
    fn check_limit_refuses_zero_only() {
        let err = check_limit(0).unwrap_err();
        assert_eq!(err.category, Category::Usage);
        assert_eq!(err.code, LIMIT_INVALID);
        assert_eq!(err.field.as_deref(), Some("limit"));
        assert!(err.hint.is_some());
        assert_eq!(check_limit(1).unwrap(), 1);
        assert_eq!(check_limit(usize::MAX).unwrap(), usize::MAX);
    }

    /// A stand-in for a keyset query: rows with `id > after`, in id order, at most `n`.
    fn fetch(rows: &[u32], after: Option<u32>, n: usize) -> Vec<u32> {
        rows.iter()
            .copied()
            .filter(|id| after.is_none_or(|a| *id > a))
            .take(n)
            .collect()
    }

    #[test]
    fn following_cursors_visits_every_item_once() {
        let rows: Vec<u32> = (0..1000).map(|i| i * 3 + 1).collect();
        let limit = check_limit(7).unwrap();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            // Each invocation builds its own codec from the same arguments.
            let c = codec();
            let after = cursor
                .as_deref()
                .map(|token| c.decode::<u32>(token).unwrap());
            let page = take_page(&c, fetch(&rows, after, limit + 1), limit, |id| *id);
            pages += 1;
            assert!(page.items.len() <= limit);
            seen.extend_from_slice(&page.items);
            let outcome = page.outcome(Outcome::success());
            assert_eq!(outcome, {
                let base = Outcome::success();
                match &page.next_cursor {
                    Some(c) => base.truncated(Some(c.clone())),
                    None => base,
                }
            });
            match page.next_cursor {
                Some(next) => {
                    assert!(page.items.len() == limit);
                    cursor = Some(next);
                }
                None => {
                    assert!(!page.items.is_empty());
                    break;
                }
            }
            assert!(pages <= 1000, "cursors do not make progress");
        }
        assert_eq!(seen, rows);
        assert_eq!(pages, 1000usize.div_ceil(7));
    }

    #[test]
    fn take_page_cuts_only_when_more_exist() {
        let c = codec();
        let exact = take_page(&c, 0..7u32, 7, |i| *i);
        assert_eq!(exact.items.len(), 7);
        assert!(!exact.truncated());
        assert_eq!(exact.outcome(Outcome::success()), Outcome::success());

        let more = take_page(&c, 0..8u32, 7, |i| *i);
        assert_eq!(more.items, (0..7).collect::<Vec<_>>());
        assert!(more.truncated());
        assert_eq!(
            c.decode::<u32>(more.next_cursor.as_deref().unwrap())
                .unwrap(),
            6
        );
        assert_eq!(
            more.outcome(Outcome::success()),
            Outcome::success().truncated(more.next_cursor.clone())
        );

        let empty = take_page(&c, std::iter::empty::<u32>(), 7, |i| *i);
        assert!(empty.items.is_empty() && !empty.truncated());

        // A limit of 0 (not checked by the caller) is an empty page, never a panic.
        let zero = take_page(&c, 0..3u32, 0, |i| *i);
        assert!(zero.items.is_empty() && zero.next_cursor.is_none());
    }

    #[test]
    fn take_page_draws_at_most_limit_plus_one() {
        let c = codec();
        let mut drawn = 0;
        let endless = std::iter::repeat_with(|| {
            drawn += 1;
            drawn
        });
        let page = take_page(&c, endless, 5, |i| *i);
        assert_eq!(page.items.len(), 5);
        assert!(page.truncated());
        assert_eq!(drawn, 6);
    }
}
