//! The `aoi:error` event (spec §9.1): a structured failure with an authoritative `retryable`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::category::Category;
use super::text::{single_line, Code};

/// `process` ends the run; `item` concerns one record and the stream continues (§9.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "aoi.scope")]
pub enum Scope {
    /// The run is over.
    #[default]
    Process,
    /// One item failed; the stream continues.
    Item,
}

/// The protocol of a wrapped service whose raw status an error carries (§9.1 `wrapped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "aoi.protocol")]
pub enum Protocol {
    /// An HTTP status.
    Http,
    /// A gRPC status code.
    Grpc,
    /// A child process exit status.
    Exit,
}

/// Raw status from a wrapped service (§9.1 `wrapped`; named `upstream` in v0.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.wrapped")]
pub struct Wrapped {
    /// Which protocol the status comes from.
    pub protocol: Protocol,
    /// The numeric status: an HTTP status, a gRPC code number, or an exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// The symbolic status, e.g. `"UNAVAILABLE"` for gRPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// An `aoi:error` event.
///
/// Built with [`ErrorEvent::new`], which starts `retryable` from the category's default; every
/// text field is made single-line on the way in, and `retry_after_ms` can only be present while
/// `retryable` is true, so an `ErrorEvent` built here is always valid on the wire.
///
/// ```
/// use aoi::{Category, Code, ErrorEvent};
/// let e = ErrorEvent::new(Category::RateLimited, Code::from_static("UPSTREAM_RATE_LIMIT"), "Rate limit exceeded.")
///     .retry_after_ms(4500)
///     .item_index(17);
/// assert!(e.retryable);
/// let e = e.retryable(false);
/// assert_eq!(e.retry_after_ms, None);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(
    rename = "aoi.error",
    description = "`aoi:error`: a structured failure of one item or of the whole run, with an authoritative `retryable` (spec §9)."
)]
pub struct ErrorEvent {
    /// `process` (default) or `item`.
    #[serde(default)]
    pub scope: Scope,
    /// The semantic class.
    pub category: Category,
    /// The stable tool-defined code.
    pub code: Code,
    /// Namespace for `code`; defaults to the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The tool that raised this error when it was forwarded from upstream (§13.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Human-readable, single line.
    pub message: String,
    /// The authoritative retry disposition (§9.3).
    pub retryable: bool,
    /// Minimum delay before a retry, only with `retryable: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The resource concerned: a path, URI or id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Index of the input item this error concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_index: Option<u64>,
    /// Input line (1-based) this error concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_number: Option<u64>,
    /// Input path that failed validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Raw status of a wrapped service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapped: Option<Wrapped>,
    /// Informational next step for a person; consumers never execute it (§1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Documentation URL for this condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
    /// Extension bag; consumers ignore unknown keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
    /// Tool-specific additions (§8.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl ErrorEvent {
    /// A process-scope error with the category's default `retryable`.
    pub fn new(category: Category, code: Code, message: impl AsRef<str>) -> ErrorEvent {
        ErrorEvent {
            scope: Scope::Process,
            category,
            code,
            domain: None,
            origin: None,
            message: single_line(message.as_ref()).into_owned(),
            retryable: category.default_retryable(),
            retry_after_ms: None,
            target: None,
            item_index: None,
            line_number: None,
            field: None,
            wrapped: None,
            hint: None,
            docs: None,
            details: None,
            properties: None,
        }
    }

    /// A usage error (§16.1): arguments that do not fit the command. `usage` `USAGE`, not
    /// retryable, with `--help` as its hint; the one shape every usage error of the SDK and of
    /// `aoi` has (a parse error's hint is clap's suggestion instead).
    pub fn usage(message: impl AsRef<str>) -> ErrorEvent {
        ErrorEvent::new(Category::Usage, Code::from_static("USAGE"), message).hint("--help")
    }

    /// The error for a file that cannot be opened: `not_found` `FILE_NOT_FOUND`, `authz`
    /// `FILE_NOT_READABLE`, or `io` `FILE_OPEN_FAILED`, with the path as `target`.
    pub fn cannot_open(path: &str, error: &std::io::Error) -> ErrorEvent {
        let (category, code) = match error.kind() {
            std::io::ErrorKind::NotFound => (Category::NotFound, "FILE_NOT_FOUND"),
            std::io::ErrorKind::PermissionDenied => (Category::Authz, "FILE_NOT_READABLE"),
            _ => (Category::Io, "FILE_OPEN_FAILED"),
        };
        ErrorEvent::new(
            category,
            Code::from_static(code),
            format!("cannot open {path}: {error}"),
        )
        .target(path)
    }

    /// Makes this an item-scope error: the stream goes on.
    pub fn item(mut self) -> Self {
        self.scope = Scope::Item;
        self
    }

    /// Overrides `retryable`; turning it off drops `retry_after_ms` (§9.1).
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        if !retryable {
            self.retry_after_ms = None;
        }
        self
    }

    /// Sets `retry_after_ms`; ignored while `retryable` is false, where it must not appear.
    pub fn retry_after_ms(mut self, ms: u64) -> Self {
        if self.retryable {
            self.retry_after_ms = Some(ms);
        }
        self
    }

    /// Sets `domain`.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Sets `origin`, marking the error as forwarded from upstream.
    pub fn origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = Some(origin.into());
        self
    }

    /// Sets `target`.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    /// Sets `item_index`.
    pub fn item_index(mut self, index: u64) -> Self {
        self.item_index = Some(index);
        self
    }

    /// Sets `line_number` (1-based).
    pub fn line_number(mut self, line: u64) -> Self {
        self.line_number = Some(line);
        self
    }

    /// Sets `field`.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Sets `wrapped`.
    pub fn wrapped(mut self, wrapped: Wrapped) -> Self {
        self.wrapped = Some(wrapped);
        self
    }

    /// Sets `hint`, made single-line.
    pub fn hint(mut self, hint: impl AsRef<str>) -> Self {
        self.hint = Some(single_line(hint.as_ref()).into_owned());
        self
    }

    /// Sets `docs`.
    pub fn docs(mut self, url: impl Into<String>) -> Self {
        self.docs = Some(url.into());
        self
    }

    /// Adds one key to `details`.
    pub fn detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
        self
    }

    /// Adds one key to `properties`.
    pub fn property(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.properties
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
        self
    }

    /// True for errors that end the run.
    pub fn is_process_scope(&self) -> bool {
        self.scope == Scope::Process
    }

    /// Restores the invariants a builder guarantees on an error decoded from a stream: a
    /// single-line message and hint, and no `retry_after_ms` without `retryable`.
    pub fn normalized(mut self) -> Self {
        self.message = single_line(&self.message).into_owned();
        self.hint = self.hint.map(|h| single_line(&h).into_owned());
        if !self.retryable {
            self.retry_after_ms = None;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code() -> Code {
        Code::from_static("BOOM")
    }

    #[test]
    fn retryable_starts_from_the_category_default_and_is_always_emitted() {
        for c in Category::ALL {
            let e = ErrorEvent::new(c, code(), "m");
            assert_eq!(e.retryable, c.default_retryable());
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["retryable"], Value::Bool(c.default_retryable()), "{c}");
        }
    }

    #[test]
    fn retry_after_never_appears_without_retryable() {
        let e = ErrorEvent::new(Category::Validation, code(), "m").retry_after_ms(10);
        assert_eq!(e.retry_after_ms, None);
        let e = ErrorEvent::new(Category::Unavailable, code(), "m")
            .retry_after_ms(10)
            .retryable(false);
        let v = serde_json::to_value(&e).unwrap();
        assert!(v.get("retry_after_ms").is_none());
        let e = ErrorEvent::new(Category::Unavailable, code(), "m").retry_after_ms(10);
        assert_eq!(serde_json::to_value(&e).unwrap()["retry_after_ms"], 10);
    }

    #[test]
    fn messages_and_hints_are_single_line() {
        let e = ErrorEvent::new(Category::Internal, code(), "line one\nline two\u{1b}[0m")
            .hint("run\nthis");
        assert_eq!(e.message, "line one line two");
        assert_eq!(e.hint.as_deref(), Some("run this"));
    }

    #[test]
    fn serializes_the_spec_fields_with_scope() {
        let e = ErrorEvent::new(
            Category::RateLimited,
            Code::from_static("UPSTREAM_RATE_LIMIT"),
            "Upstream API rate limit exceeded.",
        )
        .item()
        .domain("outline")
        .retry_after_ms(4500)
        .target("/documents/abc123")
        .item_index(17);
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"scope":"item","category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","domain":"outline","message":"Upstream API rate limit exceeded.","retryable":true,"retry_after_ms":4500,"target":"/documents/abc123","item_index":17}"#
        );
    }
}
