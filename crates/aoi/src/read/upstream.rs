//! Upstream accounting for transformers and sinks (§13, §13.1): what an AOI producer that reads
//! another tool's stream must remember about it, and what that does to its own summary.
//!
//! The rules, all enforced here:
//! - upstream `aoi:meta` and `aoi:summary` are never forwarded; the meta gives the `upstream`
//!   identity of the summary, the summary the upstream's own outcome;
//! - upstream `aoi:error` and `aoi:warning` are counted into this tool's counters, and when
//!   forwarded carry `origin` (the upstream tool's name);
//! - an upstream error, or an upstream `ok:false`, makes this run `ok:false` unless
//!   `--continue-on-error`, with `caused_by` reproducing the retry fields of the most severe one;
//! - EOF of an AOI stream without its summary is an `io` error and `ok:false`;
//! - an `aoi:` event type this version does not know forbids reporting success;
//! - an error `category` this version does not know is decided on as `internal` with the
//!   event's own `retryable`, and forwarded as written (§9.4); whether it is the upstream's
//!   protocol violation is the verifier's decision (yes in a stream that declares exactly
//!   v1.0-alpha, where the enum is closed, §9.2; no in a later 1.x, which may have grown it).

use serde_json::{Map, Value};

use super::event::{decode_keeping_category, Decoded, Event};
use super::finding::Level;
use super::verify::{Verdict, Verifier, VerifyOptions};
use crate::wire::{Category, CausedBy, Code, ErrorEvent, Meta, Summary, Upstream, Warning};

/// What one upstream line turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// A data record: a domain event (its `type` kept), or a plain JSON object without `type`.
    Record {
        /// The domain `type`, when the line had one.
        ty: Option<String>,
        /// The record's fields (without `type` and `aoi`).
        fields: Map<String, Value>,
    },
    /// An upstream `aoi:error`, to forward or not; already counted.
    Error(UpstreamError),
    /// An upstream `aoi:warning`, to forward or not; already counted.
    Warning(Warning),
    /// A framework event consumed here (meta, summary, progress, ...).
    Consumed,
    /// Not a JSON object, or a malformed framework event: the caller's input contract decides.
    Malformed(String),
}

/// An upstream `aoi:error` as this run decides on it and as it passes it on (§9.4, §13.1).
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamError {
    /// Boxed: it travels in [`Observed`], whose other variants are small.
    error: Box<ErrorEvent>,
    wire_category: Option<String>,
}

impl UpstreamError {
    /// The error this run decides on: a category this version does not know is routed as
    /// [`Category::Internal`], and `retryable` stays the event's own (§9.3, §9.4).
    pub fn error(&self) -> &ErrorEvent {
        &self.error
    }

    /// The `category` as the upstream wrote it, when this version does not know it; a
    /// forwarder passes it on unchanged ([`Emitter::forward_error_in_category`]).
    ///
    /// [`Emitter::forward_error_in_category`]: crate::Emitter::forward_error_in_category
    pub fn wire_category(&self) -> Option<&str> {
        self.wire_category.as_deref()
    }
}

/// The state of one upstream stream.
#[derive(Debug)]
pub struct UpstreamState {
    /// The upstream is checked by the same verifier `aoi verify` uses (one implementation of
    /// Part I): lost lines, a repeated meta, lines after the summary all fail this run.
    verifier: Verifier,
    lines: u64,
    truncated: bool,
    meta: Option<Meta>,
    summary: Option<Summary>,
    aoi_stream: bool,
    records: u64,
    errors: u64,
    warnings: u64,
    worst: Option<(bool, ErrorEvent)>,
    unknown_framework: Vec<String>,
}

impl Default for UpstreamState {
    fn default() -> UpstreamState {
        UpstreamState {
            verifier: Verifier::new(VerifyOptions::default()),
            lines: 0,
            truncated: false,
            meta: None,
            summary: None,
            aoi_stream: false,
            records: 0,
            errors: 0,
            warnings: 0,
            worst: None,
            unknown_framework: Vec::new(),
        }
    }
}

impl UpstreamState {
    /// Nothing seen yet.
    pub fn new() -> UpstreamState {
        UpstreamState::default()
    }

    /// Notes that the input ended inside a line (§2: the stream was cut).
    pub fn truncated(&mut self) {
        self.truncated = true;
    }

    /// Classifies and accounts one complete upstream line.
    pub fn observe(&mut self, line: &[u8]) -> Observed {
        self.lines += 1;
        self.verifier.line(self.lines, line);
        let (Decoded { envelope, event }, wire_category) = match decode_keeping_category(line) {
            Ok(d) => d,
            Err(super::event::DecodeError::NoType) => {
                return match serde_json::from_slice::<Map<String, Value>>(line) {
                    Ok(fields) => {
                        self.records += 1;
                        Observed::Record { ty: None, fields }
                    }
                    Err(e) => Observed::Malformed(e.to_string()),
                }
            }
            Err(e) => return Observed::Malformed(e.to_string()),
        };
        if envelope.is_some() {
            self.aoi_stream = true;
        }
        match event {
            Event::Domain { ty, fields } => {
                self.records += 1;
                Observed::Record {
                    ty: Some(ty),
                    fields,
                }
            }
            Event::Meta(meta) => {
                self.aoi_stream = true;
                self.meta.get_or_insert(meta);
                Observed::Consumed
            }
            Event::Summary(summary) => {
                self.aoi_stream = true;
                self.summary.get_or_insert(summary);
                Observed::Consumed
            }
            Event::Error(error) => {
                self.aoi_stream = true;
                self.errors += 1;
                let error = error.normalized();
                let process = error.is_process_scope();
                if self.worst.as_ref().is_none_or(|(p, _)| process && !*p) {
                    self.worst = Some((process, error.clone()));
                }
                Observed::Error(UpstreamError {
                    error: Box::new(error),
                    wire_category,
                })
            }
            Event::Warning(warning) => {
                self.aoi_stream = true;
                self.warnings += 1;
                Observed::Warning(warning)
            }
            Event::UnknownFramework { ty, .. } => {
                self.aoi_stream = true;
                self.unknown_framework.push(ty);
                Observed::Consumed
            }
            _ => {
                self.aoi_stream = true;
                Observed::Consumed
            }
        }
    }

    /// The upstream tool's name, for `origin`.
    pub fn origin(&self) -> Option<&str> {
        self.meta.as_ref().and_then(|m| m.tool.as_deref())
    }

    /// The direct upstream's identity, for `aoi:summary.upstream`; `None` when unknown.
    pub fn identity(&self) -> Option<Upstream> {
        self.meta.as_ref().and_then(Upstream::from_meta)
    }

    /// Records (domain events or plain objects) seen: `input_count`.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Upstream `aoi:error` events seen.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Upstream `aoi:warning` events seen.
    pub fn warnings(&self) -> u64 {
        self.warnings
    }

    /// True once the input has shown itself to be an AOI stream (an envelope or an `aoi:` type).
    pub fn is_aoi_stream(&self) -> bool {
        self.aoi_stream
    }

    /// The upstream's own summary, when it arrived.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    /// True when the upstream, as far as it has been read, makes this run fail: an error
    /// without `continue_on_error`, an upstream `ok:false`, a cut, or an unknown framework event.
    /// [`UpstreamState::verdict`] also applies the stream checks that need EOF.
    pub fn fails_so_far(&self, continue_on_error: bool) -> bool {
        let upstream_failed = self.errors > 0 || self.summary.as_ref().is_some_and(|s| !s.ok);
        self.truncated
            || !self.unknown_framework.is_empty()
            || (self.aoi_stream && self.summary.is_none())
            || (upstream_failed && !continue_on_error)
    }

    /// True once what was read makes this run fail whatever comes next: an upstream error or
    /// `ok:false` summary (unless `continue_on_error`), or an unknown framework event.
    pub fn fails_now(&self, continue_on_error: bool) -> bool {
        let upstream_failed = self.errors > 0 || self.summary.as_ref().is_some_and(|s| !s.ok);
        !self.unknown_framework.is_empty() || (upstream_failed && !continue_on_error)
    }

    /// The retry fields of the most severe upstream failure, for `caused_by` (§13.1).
    pub fn caused_by(&self) -> Option<CausedBy> {
        let origin = self.origin().map(str::to_owned);
        self.summary
            .as_ref()
            .and_then(|s| s.caused_by.clone())
            .or_else(|| {
                self.worst
                    .as_ref()
                    .map(|(_, e)| CausedBy::from_error(e, origin.as_deref()))
            })
    }

    /// What the upstream means for this run's outcome, at EOF.
    pub fn verdict(self, continue_on_error: bool) -> UpstreamVerdict {
        let origin = self.origin().map(str::to_owned);
        let from = origin
            .as_deref()
            .map(|o| format!(" from {o}"))
            .unwrap_or_default();
        let mut verdict = UpstreamVerdict {
            fails_run: false,
            caused_by: None,
            error: None,
            upstream: self.identity(),
        };
        if self.truncated || (self.aoi_stream && self.summary.is_none()) {
            verdict.fails_run = true;
            verdict.error = Some(
                ErrorEvent::new(
                    Category::Io,
                    Code::from_static("UPSTREAM_TRUNCATED"),
                    format!(
                        "the upstream stream{from} was cut (no newline at its end, or no aoi:summary): its producer crashed or the pipe was cut"
                    ),
                )
                .retryable(false),
            );
        }
        if let Some(ty) = self.unknown_framework.first() {
            verdict.fails_run = true;
            verdict.error.get_or_insert_with(|| {
                ErrorEvent::new(
                    Category::Unsupported,
                    Code::from_static("UPSTREAM_UNKNOWN_FRAMEWORK_EVENT"),
                    format!("upstream sent {ty:?}, a framework event this tool does not understand; it cannot report success over it"),
                )
            });
        }
        let upstream_failed = self.errors > 0 || self.summary.as_ref().is_some_and(|s| !s.ok);
        if upstream_failed && !continue_on_error {
            verdict.fails_run = true;
        }
        if upstream_failed {
            verdict.caused_by = self.caused_by();
        }
        if self.aoi_stream && verdict.error.is_none() {
            let report = self.verifier.finish(None);
            if report.verdict == Verdict::Violation {
                verdict.fails_run = true;
                let first = report
                    .findings
                    .iter()
                    .find(|f| f.level == Level::Violation)
                    .map(|f| format!("{} ({}): {}", f.code, f.section, f.message))
                    .unwrap_or_default();
                verdict.error = Some(ErrorEvent::new(
                    Category::Validation,
                    Code::from_static("UPSTREAM_PROTOCOL_VIOLATION"),
                    format!("the upstream stream{from} violates AOI-CLI: {first}"),
                ));
            }
        }
        verdict
    }
}

/// The upstream's effect on this run's summary.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamVerdict {
    /// This run must not report `ok:true`.
    pub fails_run: bool,
    /// Retry fields of the most severe upstream error (§13.1 `caused_by`).
    pub caused_by: Option<CausedBy>,
    /// An error this tool must emit itself (a cut upstream, an unknown framework event).
    pub error: Option<ErrorEvent>,
    /// The direct upstream's identity.
    pub upstream: Option<Upstream>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"U"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0"}"#;
    const HIT: &str = r#"{"type":"hit","aoi":{"seq":1,"run":"U"},"id":"doc_1"}"#;
    const RATE: &str = r#"{"type":"aoi:error","aoi":{"seq":2,"run":"U"},"category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","message":"slow down","retryable":true,"retry_after_ms":7200}"#;
    const WARN: &str = r#"{"type":"aoi:warning","aoi":{"seq":2,"run":"U"},"message":"stale"}"#;
    const OK: &str =
        r#"{"type":"aoi:summary","aoi":{"seq":3,"run":"U"},"ok":true,"event_count":4}"#;
    const FAILED: &str = r#"{"type":"aoi:summary","aoi":{"seq":3,"run":"U"},"ok":false,"reason":"failed","event_count":4}"#;

    fn feed(lines: &[&str]) -> UpstreamState {
        let mut s = UpstreamState::new();
        for l in lines {
            s.observe(l.as_bytes());
        }
        s
    }

    #[test]
    fn a_clean_upstream_passes_and_names_itself() {
        let s = feed(&[META, HIT, WARN, OK]);
        assert_eq!((s.records(), s.warnings()), (1, 1));
        let v = s.verdict(false);
        assert!(!v.fails_run && v.error.is_none() && v.caused_by.is_none());
        assert_eq!(v.upstream.unwrap().tool.as_deref(), Some("outline"));
    }

    #[test]
    fn an_upstream_error_fails_the_run_with_its_retry_fields_unless_continue_on_error() {
        let v = feed(&[META, HIT, RATE, FAILED]).verdict(false);
        assert!(v.fails_run);
        let c = v.caused_by.unwrap();
        assert_eq!(c.origin.as_deref(), Some("outline"));
        assert_eq!(c.category, Category::RateLimited);
        assert_eq!(c.retry_after_ms, Some(7200));
        let v = feed(&[META, HIT, RATE, FAILED]).verdict(true);
        assert!(!v.fails_run, "--continue-on-error accepts upstream errors");
        assert!(v.caused_by.is_some());
    }

    #[test]
    fn a_cut_upstream_is_an_io_error_and_fails_the_run() {
        let v = feed(&[META, HIT]).verdict(true);
        assert!(v.fails_run);
        let e = v.error.unwrap();
        assert_eq!(e.category, Category::Io);
        assert_eq!(e.code.as_str(), "UPSTREAM_TRUNCATED");
    }

    #[test]
    fn plain_jsonl_needs_no_summary_and_unknown_framework_events_forbid_success() {
        let s = feed(&[r#"{"title":"a"}"#, r#"{"title":"b"}"#]);
        assert_eq!(s.records(), 2);
        assert!(s.identity().is_none(), "upstream omitted when unknown");
        assert!(!s.verdict(false).fails_run);
        let v = feed(&[
            META,
            r#"{"type":"aoi:future","aoi":{"seq":1,"run":"U"}}"#,
            OK,
        ])
        .verdict(true);
        assert!(v.fails_run);
        assert_eq!(v.error.unwrap().category, Category::Unsupported);
    }

    #[test]
    fn a_non_conforming_upstream_fails_the_run_through_the_verifier() {
        let gap = r#"{"type":"hit","aoi":{"seq":5,"run":"U"},"id":"doc_5"}"#;
        let v = feed(&[META, gap, OK]).verdict(true);
        assert!(v.fails_run, "a lost line");
        assert_eq!(
            v.error.unwrap().code.as_str(),
            "UPSTREAM_PROTOCOL_VIOLATION"
        );
        let v = feed(&[META, HIT, WARN, OK, HIT]).verdict(true);
        assert!(v.fails_run, "a line after the summary");
        let mut s = feed(&[r#"{"title":"a"}"#]);
        s.truncated();
        let v = s.verdict(true);
        assert!(v.fails_run, "plain JSONL cut mid-line");
        assert_eq!(v.error.unwrap().category, Category::Io);
    }

    #[test]
    fn malformed_lines_are_reported_not_counted() {
        let mut s = UpstreamState::new();
        assert!(matches!(s.observe(b"{oops"), Observed::Malformed(_)));
        assert!(matches!(s.observe(b"[1]"), Observed::Malformed(_)));
        assert_eq!(s.records(), 0);
    }
}
