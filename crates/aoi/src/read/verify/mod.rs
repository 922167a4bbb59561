//! The stream verifier: every rule of Part I that can be checked on the bytes of one stream.
//!
//! It separates two questions a consumer must never confuse:
//! - does the stream **violate the protocol** (lost lines, a half-written last line, no summary,
//!   malformed errors…)? Then nothing it says can be trusted: [`Verdict::Violation`];
//! - if not, **did the run succeed**? [`Verdict::Succeeded`] (`ok:true`) or [`Verdict::Failed`]
//!   (`ok:false`, reported honestly, with its reason and `caused_by`).

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::event::{decode, decode_object, Decoded, Event};
use super::finding::{bounded_message, Finding, FindingCode, Level};
use super::framing::{Frame, LineReader};
use super::head::Head;
#[cfg(test)]
use super::scan::find_ansi;
use super::scan::{scan_line, Ansi, NotUtf8};
use super::strict;
use crate::wire::{CausedBy, ErrorEvent, Meta, Summary, Upstream, AOI_VERSION, FRAMEWORK_TYPES};

/// How to verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// The stream is documented as unbounded (§4.2): EOF without a summary is not a violation.
    pub unbounded: bool,
    /// Findings kept in the report; the rest are only counted.
    pub max_findings: usize,
    /// Keep every event, decoded, in [`Report::events`] (a consumer that acts on the events
    /// reads them here instead of parsing the stream a second time).
    pub keep_events: bool,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            unbounded: false,
            max_findings: 1000,
            keep_events: false,
        }
    }
}

/// The verdict on a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Conforming, and the summary says `ok:true`.
    Succeeded,
    /// Conforming, and the run cannot be reported as a success: the summary says `ok:false`,
    /// or the process exited non-zero or was killed (§4.1, §6), or the stream carries a
    /// framework event this version cannot interpret (§13). An honest failure.
    Failed,
    /// Conforming so far, no summary, the stream is documented as unbounded, and the process
    /// did not fail (it is still running, was not watched, or exited 0).
    Unterminated,
    /// The stream violates the protocol.
    Violation,
}

impl Verdict {
    /// `"succeeded"`, `"failed"`, `"unterminated"` or `"violation"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Succeeded => "succeeded",
            Verdict::Failed => "failed",
            Verdict::Unterminated => "unterminated",
            Verdict::Violation => "violation",
        }
    }
}

/// How the producing process ended, when the verifier ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessEnd {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

/// Everything the verifier concluded.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The verdict.
    pub verdict: Verdict,
    /// Findings, in stream order, capped at [`VerifyOptions::max_findings`].
    pub findings: Vec<Finding>,
    /// Findings beyond the cap, counted only.
    pub suppressed: u64,
    /// Violations in all, kept or not.
    pub violations: u64,
    /// Lines in the stream (a truncated last line included).
    pub lines: u64,
    /// Domain events seen before the summary.
    pub domain_events: u64,
    /// `aoi:error` events seen.
    pub errors: u64,
    /// `aoi:warning` events seen.
    pub warnings: u64,
    /// The stream's `aoi.run`.
    pub run: Option<String>,
    /// The stream's `aoi:meta`, decoded.
    pub meta: Option<Meta>,
    /// The stream's `aoi:summary`, decoded.
    pub summary: Option<Summary>,
    /// The retry fields that explain a failure: the summary's own `caused_by`, else those of
    /// the most severe `aoi:error` in the stream (process scope first).
    pub caused_by: Option<CausedBy>,
    /// The first process-scope `aoi:error` the producer raised itself (no `origin`): the error
    /// that ended the run (§9.1).
    pub process_error: Option<ErrorEvent>,
    /// The producer's identity as a consumer names its upstream (§13.1): from its `aoi:meta`,
    /// `None` when the meta declares none of it.
    pub upstream: Option<Upstream>,
    /// Every event, decoded, in stream order, when [`VerifyOptions::keep_events`] is set.
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SeqMode {
    Unknown,
    Present,
    Absent,
}

/// Incremental verifier: feed it frames, then [`Verifier::finish`].
#[derive(Debug)]
pub struct Verifier {
    opts: VerifyOptions,
    findings: Vec<Finding>,
    suppressed: u64,
    violations: u64,
    lines: u64,
    seq_mode: SeqMode,
    next_seq: u64,
    /// Lines since the last numbered event that are not events (each may or may not have
    /// taken a seq number: a cut event did, a stray prose line did not).
    unnumbered: u64,
    /// Non-event lines the next event's seq showed took no number.
    took_no_seq: u64,
    run: Option<String>,
    meta_line: Option<u64>,
    meta: Option<Map<String, Value>>,
    summary_line: Option<u64>,
    summary: Option<Map<String, Value>>,
    after_summary_reported: bool,
    domain: u64,
    errors: u64,
    warnings: u64,
    process_errors: u64,
    worst_error: Option<(bool, ErrorEvent)>,
    flat_domain_reported: bool,
    /// The meta declares another 1.x AOI version than this verifier's, whose enums, event types
    /// and fields may have grown (§9.2, §8.1): what 1.0-alpha does not define is only a notice.
    other_minor: bool,
    /// `aoi:` events of a type this version does not define, seen in such a stream: the run
    /// cannot be reported as a success (§13).
    uninterpreted: u64,
    /// The cut last line: its number and length.
    truncated: Option<(u64, usize)>,
    process_error: Option<ErrorEvent>,
    events: Vec<Event>,
    /// The tool's published event schema, when checking against it.
    schema: Option<SchemaCheck>,
}

/// What a line turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// A domain event.
    Domain,
    /// A framework event of a known type.
    Framework,
    /// An `aoi:` type this version does not define.
    UnknownFramework,
    /// Not an event at all.
    Invalid,
}

impl Verifier {
    /// A verifier with `opts`.
    pub fn new(opts: VerifyOptions) -> Verifier {
        Verifier {
            opts,
            findings: Vec::new(),
            suppressed: 0,
            violations: 0,
            lines: 0,
            seq_mode: SeqMode::Unknown,
            next_seq: 0,
            unnumbered: 0,
            took_no_seq: 0,
            run: None,
            meta_line: None,
            meta: None,
            summary_line: None,
            summary: None,
            after_summary_reported: false,
            domain: 0,
            errors: 0,
            warnings: 0,
            process_errors: 0,
            worst_error: None,
            flat_domain_reported: false,
            other_minor: false,
            uninterpreted: 0,
            truncated: None,
            process_error: None,
            events: Vec::new(),
            schema: None,
        }
    }

    /// Verifies a whole stream from a reader.
    pub fn verify_reader<R: std::io::Read>(
        source: R,
        opts: VerifyOptions,
    ) -> std::io::Result<Report> {
        let mut reader = LineReader::new(source);
        let mut verifier = Verifier::new(opts);
        while let Some(frame) = reader.next()? {
            verifier.frame(frame);
        }
        Ok(verifier.finish(None))
    }

    /// Verifies a stream held in memory.
    pub fn verify_bytes(bytes: &[u8], opts: VerifyOptions) -> Report {
        match Verifier::verify_reader(bytes, opts) {
            Ok(report) => report,
            // Reading from a slice cannot fail.
            Err(_) => Verifier::new(opts).finish(None),
        }
    }

    fn report(&mut self, code: FindingCode, level: Level, line: Option<u64>, message: String) {
        if level == Level::Violation {
            self.violations += 1;
        }
        if self.findings.len() < self.opts.max_findings {
            self.findings.push(Finding {
                code,
                level,
                line,
                section: code.section().to_owned(),
                message: bounded_message(message),
            });
        } else {
            self.suppressed += 1;
        }
    }

    fn violation(&mut self, code: FindingCode, line: u64, message: impl Into<String>) {
        self.report(code, Level::Violation, Some(line), message.into());
    }

    fn notice(&mut self, code: FindingCode, line: u64, message: impl Into<String>) {
        self.report(code, Level::Notice, Some(line), message.into());
    }

    /// Feeds one frame from a [`LineReader`].
    pub fn frame(&mut self, frame: Frame<'_>) -> LineKind {
        match frame {
            Frame::Line { number, bytes } => self.line(number, bytes),
            Frame::TooLong { number, len } => {
                self.lines = number;
                self.violation(
                    FindingCode::LineTooLong,
                    number,
                    format!("line of {len} bytes exceeds the reader's limit"),
                );
                self.skip_seq();
                LineKind::Invalid
            }
            Frame::Truncated { number, bytes } => {
                self.lines = number;
                // Judged in `finish`, which knows whether the producer died mid-line.
                self.truncated = Some((number, bytes.len()));
                LineKind::Invalid
            }
        }
    }

    /// Records that a consumer relaying the stream could not forward line `number` (`len`
    /// bytes, beyond the reader's limit): a violation, so the loss is never silent.
    pub fn not_relayed(&mut self, number: u64, len: u64) {
        self.violation(
            FindingCode::LineNotRelayed,
            number,
            format!("line {number} ({len} bytes) exceeds the reader's limit and was not relayed: the forwarded stream lacks it"),
        );
    }

    /// A line that is not an event may occupy a seq slot in the producer's numbering (an
    /// event cut or garbled on the way) or not (a stray line the producer never numbered):
    /// the next event's seq tells which, and either is contiguous.
    fn skip_seq(&mut self) {
        self.next_seq += 1;
        self.unnumbered += 1;
    }

    /// Feeds one complete line (without its `\n`); `number` is 1-based.
    pub fn line(&mut self, number: u64, bytes: &[u8]) -> LineKind {
        self.lines = number;
        if self.summary_line.is_some() && !self.after_summary_reported {
            self.after_summary_reported = true;
            self.violation(
                FindingCode::SummaryNotLast,
                number,
                "a line follows the terminal aoi:summary",
            );
        }
        let Some((bytes, head)) = self.lex(number, bytes) else {
            self.skip_seq();
            return LineKind::Invalid;
        };
        self.envelope(number, &head);
        let ty: Cow<'_, str> = match head.ty {
            Some(ref ty) => Cow::Borrowed(ty.as_ref()),
            None => {
                if head.ty_not_string {
                    self.violation(FindingCode::TypeNotString, number, "`type` is not a string");
                } else {
                    self.violation(FindingCode::TypeMissing, number, "object has no `type`");
                }
                return LineKind::Invalid;
            }
        };
        if !ty.starts_with("aoi:") {
            self.domain_event(number, bytes, &head)
        } else if !FRAMEWORK_TYPES.contains(&ty.as_ref()) {
            self.unknown_framework(number, &ty, bytes, &head)
        } else {
            let ty = ty.into_owned();
            self.framework(number, &ty, bytes, &head)
        }
    }

    /// The line as a JSON object's head, in one pass that checks UTF-8 and JSON and finds
    /// ANSI controls; `None` when it is not an object (reported). A CR before the LF is
    /// reported and dropped.
    fn lex<'b>(&mut self, number: u64, bytes: &'b [u8]) -> Option<(&'b [u8], Head<'b>)> {
        let bytes = match bytes.strip_suffix(b"\r") {
            Some(stripped) => {
                self.notice(
                    FindingCode::CrlfLineEnding,
                    number,
                    "line ends in CR LF; AOI lines end in LF",
                );
                stripped
            }
            None => bytes,
        };
        if bytes.is_empty() {
            self.violation(
                FindingCode::EmptyLine,
                number,
                "empty line: every line must be one JSON object",
            );
            return None;
        }
        let scanned = match scan_line(bytes) {
            Ok(scanned) => scanned,
            Err(NotUtf8 { column }) => {
                self.violation(
                    FindingCode::InvalidUtf8,
                    number,
                    format!("not UTF-8 (invalid byte at column {column})"),
                );
                return None;
            }
        };
        match scanned.ansi {
            Some(Ansi::Raw(column)) => self.violation(
                FindingCode::AnsiEscape,
                number,
                format!("raw ANSI control byte at column {column}: stdout carries no escape codes"),
            ),
            // Escaped in a JSON string, the bytes on stdout are clean; the decoded value is data
            // (a document body, a log line) that a consumer must not print raw.
            Some(Ansi::Escaped(column)) => self.notice(
                FindingCode::AnsiEscape,
                number,
                format!("a string carries an escaped ANSI control (column {column}); printing it raw would emit escape codes"),
            ),
            None => {}
        }
        match scanned.head {
            Ok(Ok(head)) => Some((bytes, head)),
            Ok(Err(not_object)) => {
                self.violation(
                    FindingCode::NotAnObject,
                    number,
                    format!("line is {}, not a JSON object", not_object.0),
                );
                None
            }
            Err(e) => {
                let (code, message) = json_problem(&e);
                self.violation(code, number, message);
                None
            }
        }
    }

    /// A domain event: counted, kept, and checked against the tool's schema when there is one.
    fn domain_event(&mut self, number: u64, bytes: &[u8], head: &Head<'_>) -> LineKind {
        if !head.has_envelope && head.flat_seq && head.flat_run && !self.flat_domain_reported {
            self.flat_domain_reported = true;
            self.notice(
                FindingCode::V02FlatEnvelope,
                number,
                "top-level `seq` and `run` without an `aoi` object look like the v0.2 flat envelope",
            );
        }
        self.envelope_keys(number, head, true);
        if self.summary_line.is_none() {
            self.domain += 1;
        }
        self.keep(bytes);
        if self.schema.as_ref().is_some_and(SchemaCheck::checks_domain) {
            self.schema_domain(number, bytes);
        }
        LineKind::Domain
    }

    /// An `aoi:` type this version does not define: a violation of the closed namespace
    /// (§8.2), or in a stream of a later 1.x only a run that cannot succeed (§13).
    fn unknown_framework(
        &mut self,
        number: u64,
        ty: &str,
        bytes: &[u8],
        head: &Head<'_>,
    ) -> LineKind {
        self.envelope_keys(number, head, true);
        if self.other_minor {
            // §13: it MAY be ignored, but the run must not be reported as a success.
            self.uninterpreted += 1;
            self.notice(
                FindingCode::UnknownFrameworkEvent,
                number,
                format!("framework event type {ty:?} is not defined by v1.0-alpha: the run cannot be reported as a success (§13)"),
            );
        } else {
            self.violation(
                FindingCode::UnknownFrameworkEvent,
                number,
                format!("unknown framework event type {ty:?}: the aoi: namespace is closed (§8.2)"),
            );
        }
        self.keep(bytes);
        LineKind::UnknownFramework
    }

    /// A framework event of a type v1.0-alpha defines: parsed strictly (no duplicate keys),
    /// its fields and its schema checked, then judged by its type.
    fn framework(&mut self, number: u64, ty: &str, bytes: &[u8], head: &Head<'_>) -> LineKind {
        if head.flat_seq || head.flat_run {
            self.violation(
                FindingCode::V02FlatEnvelope,
                number,
                "framework event carries top-level `seq`/`run`: the v0.2 flat envelope; use `aoi.seq`/`aoi.run`",
            );
        }
        let Some(fields) = self.strict_fields(number, ty, bytes) else {
            return LineKind::Invalid;
        };
        if ty == "aoi:meta" && self.meta_line.is_none() {
            // The version the stream declares decides how strictly its own first line is read.
            self.other_minor = fields
                .get("aoi_version")
                .and_then(Value::as_str)
                .is_some_and(|v| major(v) == major(AOI_VERSION) && v != AOI_VERSION);
        }
        // Duplicates anywhere in a framework event were reported by the strict parse.
        self.envelope_keys(number, head, false);
        self.extra_fields(number, ty, &fields);
        let fields = if self.schema.is_some() {
            if ty == "aoi:meta" {
                self.schema_identity(number, &fields);
            }
            let value = Value::Object(fields);
            self.schema_check(number, &value);
            match value {
                Value::Object(fields) => fields,
                _ => Map::new(),
            }
        } else {
            fields
        };
        // The one typed decode a framework line gets, from the fields already parsed: for the
        // events kept and for the first process-scope error.
        let wanted = self.opts.keep_events || (ty == "aoi:error" && self.process_error.is_none());
        let decoded = if wanted {
            decode_object(fields.clone()).ok()
        } else {
            None
        };
        let process_errors = self.process_errors;
        match ty {
            "aoi:meta" => self.meta(number, fields),
            "aoi:summary" => self.summary(number, fields),
            "aoi:error" => self.error(number, &fields),
            "aoi:warning" => self.warning(number, &fields),
            "aoi:check" => self.check(number, &fields),
            _ => {}
        }
        if self.process_errors > process_errors && self.process_error.is_none() {
            if let Some(Decoded {
                event: Event::Error(e),
                ..
            }) = &decoded
            {
                self.process_error = Some(e.clone());
            }
        }
        if let (true, Some(decoded)) = (self.opts.keep_events, decoded) {
            self.events.push(decoded.event);
        }
        LineKind::Framework
    }

    /// The fields of a framework event, parsed with duplicate keys refused (reported, then read
    /// as serde_json reads them: the last wins); `None` when they cannot be read at all.
    fn strict_fields(&mut self, number: u64, ty: &str, bytes: &[u8]) -> Option<Map<String, Value>> {
        match strict::parse_object(bytes) {
            Ok(fields) => Some(fields),
            Err(strict::Problem::Duplicate(path)) => {
                self.violation(
                    FindingCode::DuplicateKey,
                    number,
                    format!(
                        "{ty} repeats the key {path}: consumers disagree on which occurrence wins"
                    ),
                );
                // Checked on with the last occurrence, as serde_json keeps it.
                serde_json::from_slice::<Map<String, Value>>(bytes).ok()
            }
            // The scanner accepted the line, so only a duplicate key gets here; be safe anyway.
            Err(strict::Problem::Json(e)) => {
                let (code, message) = json_problem(&e);
                self.violation(code, number, message);
                None
            }
        }
    }

    /// Keeps the event on a line the verifier did not parse (a domain event, an unknown
    /// framework type), decoded, when the caller asked for the events.
    fn keep(&mut self, bytes: &[u8]) {
        if self.opts.keep_events {
            if let Ok(decoded) = decode(bytes) {
                self.events.push(decoded.event);
            }
        }
    }
}

/// The identity triple of §5 (tool and release, AOI version, schema name and version), carried
/// by both `aoi:meta` and `aoi:summary`; one run has one identity, so every field must agree.
const IDENTITY_FIELDS: [&str; 5] = [
    "tool",
    "tool_version",
    "aoi_version",
    "schema_name",
    "schema_version",
];

/// The finding for a line serde_json rejects: the parser limits get codes of their own, so a
/// consumer can tell "not JSON" from "JSON beyond what interoperable readers accept".
fn json_problem(e: &serde_json::Error) -> (FindingCode, String) {
    let text = e.to_string();
    let code = if text.starts_with("recursion limit exceeded") {
        FindingCode::NestingTooDeep
    } else if text.starts_with("number out of range") {
        FindingCode::NumberOutOfRange
    } else if text.contains("surrogate") || text.starts_with("unexpected end of hex escape") {
        FindingCode::LoneSurrogate
    } else {
        FindingCode::InvalidJson
    };
    let what = match code {
        FindingCode::NestingTooDeep => "nested deeper than 127 arrays and objects",
        FindingCode::NumberOutOfRange => "a number beyond the range of an IEEE 754 double",
        FindingCode::LoneSurrogate => "a \\u escape of a lone UTF-16 surrogate",
        _ => "invalid JSON",
    };
    (code, format!("{what}: {e}"))
}

fn major(version: &str) -> &str {
    version.split(['.', '-']).next().unwrap_or(version)
}

mod diagnostics;
mod envelope;
// The published-schema half (`aoi verify --schema`, lint check 4) needs a JSON Schema
// validator, compiled in only with the `validate` feature.
#[cfg(not(feature = "validate"))]
mod no_schema;
#[cfg(feature = "validate")]
mod schema;
mod summary;

#[cfg(not(feature = "validate"))]
use no_schema as schema;
#[cfg(feature = "validate")]
pub use schema::CompiledSchema;
use schema::SchemaCheck;

#[cfg(test)]
mod tests;
