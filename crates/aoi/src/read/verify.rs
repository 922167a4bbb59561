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
use crate::wire::text::json_kind as kind;
use crate::wire::{
    Category, CausedBy, Code, ErrorEvent, Meta, Reason, Summary, Upstream, AOI_VERSION,
    FRAMEWORK_TYPES,
};

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
            self.skip_seq();
            return LineKind::Invalid;
        }
        // One pass checks UTF-8 and JSON, finds ANSI controls and extracts the head.
        let scanned = match scan_line(bytes) {
            Ok(scanned) => scanned,
            Err(NotUtf8 { column }) => {
                self.violation(
                    FindingCode::InvalidUtf8,
                    number,
                    format!("not UTF-8 (invalid byte at column {column})"),
                );
                self.skip_seq();
                return LineKind::Invalid;
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
        let head = match scanned.head {
            Ok(Ok(head)) => head,
            Ok(Err(not_object)) => {
                self.violation(
                    FindingCode::NotAnObject,
                    number,
                    format!("line is {}, not a JSON object", not_object.0),
                );
                self.skip_seq();
                return LineKind::Invalid;
            }
            Err(e) => {
                let (code, message) = json_problem(&e);
                self.violation(code, number, message);
                self.skip_seq();
                return LineKind::Invalid;
            }
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
            if !head.has_envelope && head.flat_seq && head.flat_run && !self.flat_domain_reported {
                self.flat_domain_reported = true;
                self.notice(
                    FindingCode::V02FlatEnvelope,
                    number,
                    "top-level `seq` and `run` without an `aoi` object look like the v0.2 flat envelope",
                );
            }
            self.envelope_keys(number, &head, true);
            if self.summary_line.is_none() {
                self.domain += 1;
            }
            self.keep(bytes);
            if self.schema.as_ref().is_some_and(SchemaCheck::checks_domain) {
                self.schema_domain(number, bytes);
            }
            return LineKind::Domain;
        }
        if !FRAMEWORK_TYPES.contains(&ty.as_ref()) {
            self.envelope_keys(number, &head, true);
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
                    format!(
                        "unknown framework event type {ty:?}: the aoi: namespace is closed (§8.2)"
                    ),
                );
            }
            self.keep(bytes);
            return LineKind::UnknownFramework;
        }
        if head.flat_seq || head.flat_run {
            self.violation(
                FindingCode::V02FlatEnvelope,
                number,
                "framework event carries top-level `seq`/`run`: the v0.2 flat envelope; use `aoi.seq`/`aoi.run`",
            );
        }
        let ty = ty.into_owned();
        let fields = match strict::parse_object(bytes) {
            Ok(fields) => fields,
            Err(strict::Problem::Duplicate(path)) => {
                self.violation(
                    FindingCode::DuplicateKey,
                    number,
                    format!(
                        "{ty} repeats the key {path}: consumers disagree on which occurrence wins"
                    ),
                );
                // Checked on with the last occurrence, as serde_json keeps it.
                match serde_json::from_slice::<Map<String, Value>>(bytes) {
                    Ok(fields) => fields,
                    Err(_) => return LineKind::Invalid,
                }
            }
            // The scanner accepted the line, so only a duplicate key gets here; be safe anyway.
            Err(strict::Problem::Json(e)) => {
                let (code, message) = json_problem(&e);
                self.violation(code, number, message);
                return LineKind::Invalid;
            }
        };
        if ty == "aoi:meta" && self.meta_line.is_none() {
            // The version the stream declares decides how strictly its own first line is read.
            self.other_minor = fields
                .get("aoi_version")
                .and_then(Value::as_str)
                .is_some_and(|v| major(v) == major(AOI_VERSION) && v != AOI_VERSION);
        }
        // Duplicates anywhere in a framework event were reported by the strict parse.
        self.envelope_keys(number, &head, false);
        self.extra_fields(number, &ty, &fields);
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
        match ty.as_str() {
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

    /// Keeps the event on a line the verifier did not parse (a domain event, an unknown
    /// framework type), decoded, when the caller asked for the events.
    fn keep(&mut self, bytes: &[u8]) {
        if self.opts.keep_events {
            if let Ok(decoded) = decode(bytes) {
                self.events.push(decoded.event);
            }
        }
    }

    fn envelope(&mut self, number: u64, head: &Head<'_>) {
        if head.envelope_not_object {
            self.violation(
                FindingCode::EnvelopeNotObject,
                number,
                "`aoi` is not an object",
            );
        }
        if head.seq_invalid {
            self.violation(
                FindingCode::SeqInvalid,
                number,
                "`aoi.seq` is not a non-negative integer",
            );
        }
        let has_seq = head.seq.is_some() || head.seq_invalid;
        if self.seq_mode == SeqMode::Unknown {
            self.seq_mode = if has_seq {
                SeqMode::Present
            } else {
                SeqMode::Absent
            };
        }
        match (self.seq_mode, head.seq) {
            (SeqMode::Present, Some(seq)) => {
                let unnumbered = std::mem::take(&mut self.unnumbered);
                if seq < self.next_seq && seq + unnumbered >= self.next_seq {
                    // The non-event lines before it took no seq numbers: no gap, no repeat
                    // (they are check 2's violations, not a loss).
                    self.took_no_seq += self.next_seq - seq;
                } else if seq != self.next_seq {
                    if number == 1 || (self.next_seq == 0 && seq != 0) {
                        self.violation(
                            FindingCode::SeqNotZeroBased,
                            number,
                            format!("first `aoi.seq` is {seq}, not 0"),
                        );
                    } else if seq > self.next_seq {
                        self.violation(
                            FindingCode::SeqGap,
                            number,
                            format!(
                                "`aoi.seq` jumps from {} to {seq}: {} line(s) lost",
                                self.next_seq.saturating_sub(1),
                                seq - self.next_seq
                            ),
                        );
                    } else {
                        self.violation(
                            FindingCode::SeqGap,
                            number,
                            format!(
                                "`aoi.seq` {seq} repeats or goes back (expected {})",
                                self.next_seq
                            ),
                        );
                    }
                }
                self.next_seq = seq + 1;
            }
            (SeqMode::Present, None) => {
                if !head.seq_invalid {
                    self.violation(
                        FindingCode::SeqMissing,
                        number,
                        "line has no `aoi.seq` while the stream numbers its lines",
                    );
                }
                self.next_seq += 1;
            }
            (SeqMode::Absent, Some(_)) => {
                self.violation(
                    FindingCode::SeqMissing,
                    number,
                    "`aoi.seq` appears on a later line but not on the first",
                );
            }
            _ => {}
        }
        if head.run_invalid {
            self.violation(FindingCode::RunMissing, number, "`aoi.run` is not a string");
        }
        match (&head.run, has_seq) {
            (Some(run), _) => match &self.run {
                Some(first) if first.as_str() != run.as_ref() => {
                    let message = format!("`aoi.run` changes from {first:?} to {run:?}");
                    self.violation(FindingCode::RunChanged, number, message);
                }
                Some(_) => {}
                None => self.run = Some(run.as_ref().to_owned()),
            },
            (None, true) if !head.run_invalid => {
                self.violation(
                    FindingCode::RunMissing,
                    number,
                    "`aoi.seq` without `aoi.run`",
                );
            }
            _ => {}
        }
    }

    /// §8.1: tool additions to a framework event go in `properties`. A top-level field that
    /// v1.0-alpha does not define is a violation in a stream that declares v1.0-alpha (or no
    /// version), and a notice in one that declares another 1.x, which may define more.
    /// The envelope's other keys (§8.1): `t` a non-negative number, `trace_id` a string, no key
    /// that this version does not define (a violation in a v1.0-alpha stream, a notice in one
    /// declaring another 1.x), and `type`, `aoi` and the envelope's keys named once.
    fn envelope_keys(&mut self, number: u64, head: &Head<'_>, duplicates: bool) {
        if duplicates && head.duplicate_key {
            self.violation(
                FindingCode::DuplicateKey,
                number,
                "`type`, `aoi` or a key of `aoi` appears twice: consumers disagree on which occurrence wins",
            );
        }
        if head.envelope_field_invalid {
            self.violation(
                FindingCode::EnvelopeFieldInvalid,
                number,
                "`aoi.t` must be a non-negative number of milliseconds and `aoi.trace_id` a string",
            );
        }
        if head.envelope_extra {
            let message = "`aoi` holds a key v1.0-alpha does not define (only seq, run, t, trace_id): the envelope is reserved to the framework";
            if self.other_minor {
                self.notice(FindingCode::EnvelopeExtraField, number, message);
            } else {
                self.violation(FindingCode::EnvelopeExtraField, number, message);
            }
        }
    }

    fn extra_fields(&mut self, number: u64, ty: &str, fields: &Map<String, Value>) {
        let (known, closed) = match framework_fields(ty) {
            Some(known) => known,
            None => return,
        };
        let extra: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|k| !matches!(*k, "type" | "aoi" | "properties" | "seq" | "run"))
            // Reported as V02_ERROR_UPSTREAM on an error.
            .filter(|k| !(ty == "aoi:error" && *k == "upstream"))
            .filter(|k| !known.contains(k))
            .collect();
        if extra.is_empty() {
            return;
        }
        let message = format!(
            "{ty} has top-level field(s) v1.0-alpha does not define ({}); tool additions belong in `properties`",
            extra.join(", ")
        );
        if closed && !self.other_minor {
            self.violation(FindingCode::FrameworkExtraField, number, message);
        } else {
            self.notice(FindingCode::FrameworkExtraField, number, message);
        }
    }

    fn meta(&mut self, number: u64, fields: Map<String, Value>) {
        if self.meta_line.is_some() {
            self.violation(
                FindingCode::MetaRepeated,
                number,
                "a second aoi:meta: a stream carries at most one",
            );
            return;
        }
        self.meta_line = Some(number);
        if number != 1 {
            self.violation(
                FindingCode::MetaNotFirst,
                number,
                "aoi:meta is not the first line",
            );
        }
        self.identity(number, "aoi:meta", &fields);
        if let Err(e) = serde_json::from_value::<Meta>(Value::Object(fields.clone())) {
            self.violation(
                FindingCode::MetaFieldInvalid,
                number,
                format!("aoi:meta has a field of the wrong type: {e}"),
            );
        }
        self.meta = Some(fields);
    }

    fn identity(&mut self, number: u64, ty: &str, fields: &Map<String, Value>) {
        let missing: Vec<&str> = IDENTITY_FIELDS
            .into_iter()
            .filter(|k| !fields.get(*k).is_some_and(Value::is_string))
            .collect();
        if !missing.is_empty() {
            self.notice(
                FindingCode::IdentityIncomplete,
                number,
                format!("{ty} lacks {}: the Versioned factor needs the identity triple on meta and summary", missing.join(", ")),
            );
        }
        if let Some(version) = fields.get("aoi_version").and_then(Value::as_str) {
            if major(version) != major(AOI_VERSION) {
                // §5: framework events may only be interpreted when the AOI major matches; a
                // verifier that cannot interpret them cannot vouch for the stream.
                self.violation(
                    FindingCode::AoiVersionUnknown,
                    number,
                    format!(
                        "aoi_version {version:?} has a major other than {}: its framework events cannot be interpreted",
                        major(AOI_VERSION)
                    ),
                );
            }
        }
    }

    fn summary(&mut self, number: u64, fields: Map<String, Value>) {
        if self.summary_line.is_some() {
            self.violation(
                FindingCode::SummaryRepeated,
                number,
                "a second aoi:summary: a stream carries at most one",
            );
            return;
        }
        self.summary_line = Some(number);
        let violations_before = self.violations;
        let ok = match fields.get("ok") {
            None => {
                self.violation(
                    FindingCode::OkMissing,
                    number,
                    "aoi:summary has no `ok`: it has no default",
                );
                None
            }
            Some(Value::Bool(ok)) => Some(*ok),
            Some(other) => {
                self.violation(
                    FindingCode::OkNotBoolean,
                    number,
                    format!("`ok` is {other}, not a boolean"),
                );
                None
            }
        };
        match (ok, fields.get("reason")) {
            (Some(false), None) => {
                self.violation(
                    FindingCode::ReasonMissing,
                    number,
                    "`ok:false` requires a `reason`",
                );
            }
            (_, Some(Value::String(r))) => match (ok, Reason::parse(r)) {
                (_, None) => self.violation(
                    FindingCode::ReasonInvalid,
                    number,
                    format!(
                        "reason {r:?} is not one of failed, cancelled, timeout, denied, skipped"
                    ),
                ),
                (Some(true), Some(reason)) if reason.is_failure() => self.violation(
                    FindingCode::ReasonInvalid,
                    number,
                    format!(
                        "reason {r:?} contradicts `ok:true` (only \"skipped\" is valid with it)"
                    ),
                ),
                (Some(false), Some(Reason::Skipped)) => self.violation(
                    FindingCode::ReasonInvalid,
                    number,
                    "reason \"skipped\" is only valid with `ok:true`",
                ),
                _ => {}
            },
            (_, Some(other)) if !other.is_null() || ok == Some(false) => {
                self.violation(
                    FindingCode::ReasonInvalid,
                    number,
                    format!("`reason` is {other}, not a string"),
                );
            }
            _ => {}
        }
        for key in [
            "event_count",
            "count",
            "input_count",
            "warning_count",
            "error_count",
            "elapsed_ms",
        ] {
            if let Some(v) = fields.get(key) {
                if !v.is_u64() {
                    self.violation(
                        FindingCode::SummaryFieldInvalid,
                        number,
                        format!("`{key}` is {v}, not a non-negative integer"),
                    );
                }
            }
        }
        for key in ["partial", "truncated"] {
            if let Some(v) = fields.get(key) {
                if !v.is_boolean() {
                    self.violation(
                        FindingCode::SummaryFieldInvalid,
                        number,
                        format!("`{key}` is {v}, not a boolean"),
                    );
                }
            }
        }
        if let Some(v) = fields.get("next_cursor") {
            if !(v.is_string() || v.is_null()) {
                self.violation(
                    FindingCode::SummaryFieldInvalid,
                    number,
                    format!("`next_cursor` is {v}, not a string"),
                );
            }
        }
        if let Some(v) = fields.get("caused_by") {
            self.caused_by(number, v);
            if ok == Some(true) {
                self.notice(
                    FindingCode::CausedByOnSuccess,
                    number,
                    "`caused_by` explains a failure, but the summary says ok:true",
                );
            }
        }
        if let Some(v) = fields.get("upstream") {
            self.upstream(number, v);
        }
        if fields.get("reason").and_then(Value::as_str) == Some("skipped") && self.domain > 0 {
            self.notice(
                FindingCode::SkippedWithEvents,
                number,
                format!(
                    "reason \"skipped\" says the operation did not run, but {} domain event(s) precede it",
                    self.domain
                ),
            );
        }
        self.identity(number, "aoi:summary", &fields);
        if let Some(meta) = &self.meta {
            let differs: Vec<&str> = IDENTITY_FIELDS
                .into_iter()
                .filter(|k| match (meta.get(*k), fields.get(*k)) {
                    (Some(a), Some(b)) => a != b,
                    _ => false,
                })
                .collect();
            if !differs.is_empty() {
                self.violation(
                    FindingCode::IdentityMismatch,
                    number,
                    format!(
                        "aoi:summary and aoi:meta disagree on {}",
                        differs.join(", ")
                    ),
                );
            }
        }
        // The verdict is read from the decoded summary: one that does not decode must not pass
        // for a stream without a summary (Verdict::Unterminated) with no violation to say why.
        if self.violations == violations_before {
            if let Err(e) = decode_summary(&fields) {
                self.violation(
                    FindingCode::SummaryFieldInvalid,
                    number,
                    format!("aoi:summary does not decode: {e}"),
                );
            }
        }
        self.summary = Some(fields);
    }

    fn error(&mut self, number: u64, fields: &Map<String, Value>) {
        self.errors += 1;
        let category = match fields.get("category") {
            None => {
                self.violation(
                    FindingCode::ErrorCategoryMissing,
                    number,
                    "aoi:error has no `category`",
                );
                None
            }
            Some(v) => self.category(number, v, "aoi:error", fields.contains_key("origin")),
        };
        let code = match fields.get("code") {
            Some(Value::String(c)) if crate::wire::text::is_valid_code(c) => {
                Code::new(c.clone()).ok()
            }
            Some(Value::String(c)) => {
                self.violation(
                    FindingCode::ErrorCodeInvalid,
                    number,
                    format!("code {c:?} does not match [A-Z][A-Z0-9_]*"),
                );
                None
            }
            Some(other) => {
                self.violation(
                    FindingCode::ErrorCodeInvalid,
                    number,
                    format!("`code` is {other}, not a string"),
                );
                None
            }
            None => {
                self.violation(
                    FindingCode::ErrorCodeInvalid,
                    number,
                    "aoi:error has no `code`",
                );
                None
            }
        };
        match fields.get("message") {
            Some(Value::String(m)) => {
                if let Some(problem) = single_line_problem(m) {
                    self.violation(
                        FindingCode::ErrorMessageInvalid,
                        number,
                        format!("`message` {problem}"),
                    );
                }
            }
            Some(other) => {
                self.violation(
                    FindingCode::ErrorMessageInvalid,
                    number,
                    format!("`message` is {other}, not a string"),
                );
            }
            None => self.violation(
                FindingCode::ErrorMessageInvalid,
                number,
                "aoi:error has no `message`",
            ),
        }
        let retryable = match fields.get("retryable") {
            Some(Value::Bool(r)) => Some(*r),
            Some(other) => {
                self.violation(
                    FindingCode::ErrorRetryableMissing,
                    number,
                    format!("`retryable` is {other}, not a boolean"),
                );
                None
            }
            None => {
                self.violation(
                    FindingCode::ErrorRetryableMissing,
                    number,
                    "aoi:error has no `retryable`: it is required and authoritative",
                );
                None
            }
        };
        let retry_after = fields.get("retry_after_ms");
        if let Some(v) = retry_after {
            if !v.is_u64() {
                self.violation(
                    FindingCode::RetryAfterInvalid,
                    number,
                    format!("`retry_after_ms` is {v}, not a non-negative integer"),
                );
            }
            if retryable == Some(false) {
                self.violation(
                    FindingCode::RetryAfterNotRetryable,
                    number,
                    "`retry_after_ms` must not appear with `retryable:false`",
                );
            }
        }
        let scope = fields.get("scope");
        let is_item = match scope {
            None => false,
            Some(Value::String(s)) if s == "process" => false,
            Some(Value::String(s)) if s == "item" => true,
            Some(other) => {
                self.violation(
                    FindingCode::ErrorFieldInvalid,
                    number,
                    format!("`scope` is {other}, not \"process\" or \"item\""),
                );
                false
            }
        };
        for problem in diagnostic_field_problems(fields) {
            self.violation(FindingCode::ErrorFieldInvalid, number, problem);
        }
        if fields.contains_key("upstream") {
            self.violation(
                FindingCode::V02ErrorUpstream,
                number,
                "aoi:error.upstream was renamed `wrapped` in v1.0-alpha",
            );
        }
        let origin = fields.get("origin").and_then(Value::as_str);
        // A non-string `origin` is a violation above; it still marks the error as forwarded.
        let forwarded = fields.contains_key("origin");
        if !is_item && !forwarded {
            self.process_errors += 1;
        }
        if let (Some(category), Some(code), Some(retryable)) = (category, code, retryable) {
            let mut e = ErrorEvent::new(category, code, "").retryable(retryable);
            if let Some(ms) = retry_after.and_then(Value::as_u64) {
                e = e.retry_after_ms(ms);
            }
            if let Some(origin) = origin {
                e = e.origin(origin);
            }
            let process = !is_item;
            if self
                .worst_error
                .as_ref()
                .is_none_or(|(p, _)| process && !*p)
            {
                self.worst_error = Some((process, e));
            }
        }
    }

    /// A `category` value (§9.2): unknown ones are a violation where the stream claims exactly
    /// v1.0-alpha, and a notice, routed as `internal`, where it declares another 1.x (§9.4) or
    /// where the error was forwarded from another tool (`forwarded`: it carries `origin`, and
    /// its category belongs to the origin's version, which this stream cannot vouch for).
    fn category(
        &mut self,
        number: u64,
        value: &Value,
        what: &str,
        forwarded: bool,
    ) -> Option<Category> {
        match value {
            Value::String(c) => match (Category::parse(c), c.as_str()) {
                (Some(c), _) => Some(c),
                (None, "temporary") => {
                    self.violation(
                        FindingCode::V02CategoryTemporary,
                        number,
                        format!("{what}: category \"temporary\" was renamed \"unavailable\" in v1.0-alpha"),
                    );
                    None
                }
                (None, "partial") => {
                    self.violation(
                        FindingCode::V02CategoryPartial,
                        number,
                        format!("{what}: category \"partial\" was removed: use the item's real category with scope \"item\" and aoi:summary.partial"),
                    );
                    None
                }
                (None, other) => {
                    // §9.2: a new category is a minor version bump, and §9.4 forbids failing on
                    // one; only a producer that claims exactly this version is held to the enum.
                    if self.other_minor || forwarded {
                        self.notice(
                            FindingCode::ErrorCategoryInvalid,
                            number,
                            format!("{what}: category {other:?} is not in the v1.0-alpha enum; routed as internal (§9.4)"),
                        );
                        Some(Category::Internal)
                    } else {
                        self.violation(
                            FindingCode::ErrorCategoryInvalid,
                            number,
                            format!("{what}: category {other:?} is not in the closed enum of §9.2"),
                        );
                        None
                    }
                }
            },
            other => {
                self.violation(
                    FindingCode::ErrorCategoryInvalid,
                    number,
                    format!("{what}: `category` is {}, not a string", kind(other)),
                );
                None
            }
        }
    }

    /// `aoi:summary.caused_by` (§13.1): the retry-critical fields of an error, with their §9.1
    /// types and rules.
    fn caused_by(&mut self, number: u64, value: &Value) {
        let Value::Object(fields) = value else {
            self.violation(
                FindingCode::CausedByInvalid,
                number,
                format!("`caused_by` is {}, not an object", kind(value)),
            );
            return;
        };
        match fields.get("category") {
            Some(v) => {
                self.category(number, v, "caused_by", fields.contains_key("origin"));
            }
            None => self.violation(
                FindingCode::CausedByInvalid,
                number,
                "`caused_by` has no `category`",
            ),
        }
        match fields.get("code") {
            Some(Value::String(c)) if crate::wire::text::is_valid_code(c) => {}
            _ => self.violation(
                FindingCode::CausedByInvalid,
                number,
                "`caused_by.code` must be a string matching [A-Z][A-Z0-9_]*",
            ),
        }
        let retryable = fields.get("retryable").and_then(Value::as_bool);
        if retryable.is_none() {
            self.violation(
                FindingCode::CausedByInvalid,
                number,
                "`caused_by.retryable` must be a boolean: it is the retry disposition (§9.3)",
            );
        }
        if let Some(v) = fields.get("retry_after_ms") {
            if !v.is_u64() {
                self.violation(
                    FindingCode::RetryAfterInvalid,
                    number,
                    format!("`caused_by.retry_after_ms` is {v}, not a non-negative integer"),
                );
            }
            if retryable == Some(false) {
                self.violation(
                    FindingCode::RetryAfterNotRetryable,
                    number,
                    "`caused_by.retry_after_ms` must not appear with `retryable:false` (§9.1)",
                );
            }
        }
        if let Some(v) = fields.get("origin") {
            if !v.is_string() {
                self.violation(
                    FindingCode::CausedByInvalid,
                    number,
                    format!("`caused_by.origin` is {}, not a string", kind(v)),
                );
            }
        }
    }

    /// `aoi:summary.upstream` (§13.1): the direct upstream's identity, omitted when unknown,
    /// never null.
    fn upstream(&mut self, number: u64, value: &Value) {
        let Value::Object(fields) = value else {
            self.violation(
                FindingCode::UpstreamInvalid,
                number,
                format!(
                    "`upstream` is {}: when the upstream's identity is unknown the key must be omitted",
                    kind(value)
                ),
            );
            return;
        };
        if fields.contains_key("protocol") || fields.contains_key("status") {
            self.violation(
                FindingCode::V02UpstreamShape,
                number,
                "`upstream` carries `protocol`/`status`, the v0.2 wrapped-service shape: that is aoi:error.wrapped; aoi:summary.upstream is the upstream tool's identity",
            );
            return;
        }
        for (key, v) in fields {
            if !v.is_string() {
                self.violation(
                    FindingCode::UpstreamInvalid,
                    number,
                    format!(
                        "`upstream.{key}` is {}, not a string: omit what is unknown",
                        kind(v)
                    ),
                );
            }
        }
        if fields.is_empty() {
            self.notice(
                FindingCode::UpstreamInvalid,
                number,
                "`upstream` is empty: when the upstream's identity is unknown the key is omitted",
            );
        }
    }

    /// `aoi:warning`: the §9.1 fields it carries, none required, with their §9.1 types.
    fn warning(&mut self, number: u64, fields: &Map<String, Value>) {
        self.warnings += 1;
        match fields.get("message") {
            Some(Value::String(m)) => {
                if let Some(problem) = single_line_problem(m) {
                    self.violation(
                        FindingCode::WarningFieldInvalid,
                        number,
                        format!("`message` {problem}"),
                    );
                }
            }
            Some(other) => self.violation(
                FindingCode::WarningFieldInvalid,
                number,
                format!("`message` is {}, not a string", kind(other)),
            ),
            None => {}
        }
        match fields.get("code") {
            Some(Value::String(c)) if crate::wire::text::is_valid_code(c) => {}
            Some(other) => self.violation(
                FindingCode::WarningFieldInvalid,
                number,
                format!("`code` {other} is not a string matching [A-Z][A-Z0-9_]*"),
            ),
            None => {}
        }
        if let Some(v) = fields.get("category") {
            self.category(number, v, "aoi:warning", fields.contains_key("origin"));
        }
        if let Some(v) = fields.get("retryable") {
            if !v.is_boolean() {
                self.violation(
                    FindingCode::WarningFieldInvalid,
                    number,
                    format!("`retryable` is {}, not a boolean", kind(v)),
                );
            }
        }
        if let Some(v) = fields.get("retry_after_ms") {
            if !v.is_u64() {
                self.violation(
                    FindingCode::WarningFieldInvalid,
                    number,
                    format!("`retry_after_ms` is {v}, not a non-negative integer"),
                );
            }
        }
        if let Some(v) = fields.get("scope") {
            if !matches!(v.as_str(), Some("process" | "item")) {
                self.violation(
                    FindingCode::WarningFieldInvalid,
                    number,
                    format!("`scope` is {v}, not \"process\" or \"item\""),
                );
            }
        }
        for problem in diagnostic_field_problems(fields) {
            self.violation(FindingCode::WarningFieldInvalid, number, problem);
        }
    }

    fn check(&mut self, number: u64, fields: &Map<String, Value>) {
        let name_ok = fields.get("name").is_some_and(Value::is_string);
        let ok_ok = fields.get("ok").is_some_and(Value::is_boolean);
        if !(name_ok && ok_ok) {
            self.violation(
                FindingCode::CheckInvalid,
                number,
                "aoi:check needs a string `name` and a boolean `ok`",
            );
        }
    }

    /// Ends the stream and reconciles the summary. `end` is how the producer exited, if known.
    pub fn finish(mut self, end: Option<ProcessEnd>) -> Report {
        self.merge_schema_findings();
        let last = self.lines;
        if self.meta_line.is_none() && last > 0 {
            self.report(
                FindingCode::MetaMissing,
                Level::Notice,
                None,
                "no aoi:meta: the stream does not say what it is".into(),
            );
        }
        if self.seq_mode == SeqMode::Absent {
            self.report(
                FindingCode::SeqAbsent,
                Level::Notice,
                None,
                "lines carry no `aoi.seq`: loss in the middle of the stream cannot be detected (Verifiable not claimed)".into(),
            );
        }
        let summary_fields = self.summary.take();
        // §4.1, §6: a process that exited non-zero or was killed failed, whatever it wrote.
        let failed_end = match end {
            Some(ProcessEnd::Exited(code)) if code != 0 => Some(format!("exited {code}")),
            Some(ProcessEnd::Signaled(sig)) => Some(format!("was killed by signal {sig}")),
            _ => None,
        };
        if let Some((number, len)) = self.truncated {
            // §2: the cut line is discarded either way; it is the producer's fault unless the
            // process is known to have died (a crash or a kill mid-write, §4).
            let level = if failed_end.is_some() {
                Level::Notice
            } else {
                Level::Violation
            };
            self.report(
                FindingCode::TruncatedLine,
                level,
                Some(number),
                format!("last line has no terminating newline ({len} bytes discarded): the stream was cut"),
            );
        }
        match (&summary_fields, self.summary_line) {
            (Some(fields), Some(line)) => self.reconcile(fields, line),
            _ => self.no_summary(failed_end.as_deref()),
        }
        let ok = summary_fields
            .as_ref()
            .and_then(|s| s.get("ok"))
            .and_then(Value::as_bool);
        if let (Some(ProcessEnd::Exited(code)), Some(ok)) = (end, ok) {
            if ok && code != 0 {
                self.report(
                    FindingCode::ExitStatusMismatch,
                    Level::Violation,
                    None,
                    format!("summary says ok:true but the process exited {code}"),
                );
            } else if !ok && code == 0 {
                self.report(
                    FindingCode::ExitStatusMismatch,
                    Level::Notice,
                    None,
                    "summary says ok:false but the process exited 0".into(),
                );
            }
        }
        if let (Some(ProcessEnd::Signaled(sig)), Some(true)) = (end, ok) {
            // §4.1: a process that did not exit 0 failed, whatever its summary says.
            self.report(
                FindingCode::ExitStatusMismatch,
                Level::Violation,
                None,
                format!("summary says ok:true but the process was killed by signal {sig}"),
            );
        }
        let summary: Option<Summary> = summary_fields.and_then(|f| decode_summary(&f).ok());
        let meta: Option<Meta> = self
            .meta
            .take()
            .and_then(|f| serde_json::from_value(Value::Object(f)).ok());
        let verdict = if self.violations > 0 {
            Verdict::Violation
        } else {
            match &summary {
                Some(s) if s.ok && self.uninterpreted == 0 => Verdict::Succeeded,
                Some(_) => Verdict::Failed,
                // A process-scope error ends the run (§9.1), summary or not.
                None if failed_end.is_some() || self.process_errors > 0 => Verdict::Failed,
                None => Verdict::Unterminated,
            }
        };
        let caused_by = summary
            .as_ref()
            .and_then(|s| s.caused_by.clone())
            .or_else(|| {
                self.worst_error.as_ref().map(|(_, e)| {
                    CausedBy::from_error(e, meta.as_ref().and_then(|m| m.tool.as_deref()))
                })
            });
        Report {
            verdict,
            findings: self.findings,
            suppressed: self.suppressed,
            violations: self.violations,
            lines: last,
            domain_events: self.domain,
            errors: self.errors,
            warnings: self.warnings,
            run: self.run,
            upstream: meta.as_ref().and_then(Upstream::from_meta),
            meta,
            summary,
            caused_by,
            process_error: self.process_error,
            events: self.events,
        }
    }

    /// EOF without a summary: a violation of §4 when the process exited 0 (§4.1 "protocol
    /// failure") or its end is unknown (a cut stream), unless the stream is documented as
    /// unbounded (§4.2). A process that exited non-zero or was killed failed (§4.1): a crash
    /// exits non-zero too, so no summary is owed that the verifier can tell was withheld.
    fn no_summary(&mut self, failed_end: Option<&str>) {
        if self.lines == 0 {
            if let Some(how) = failed_end {
                self.report(
                    FindingCode::StreamNotStarted,
                    Level::Notice,
                    None,
                    format!("the process {how} before its stream started (nothing on stdout)"),
                );
                return;
            }
        }
        let forgivable = self.opts.unbounded || failed_end.is_some();
        let level = if forgivable {
            Level::Notice
        } else {
            Level::Violation
        };
        let message = match (failed_end, self.opts.unbounded) {
            (Some(how), _) => format!("EOF without aoi:summary: the producer {how}"),
            (None, true) => "EOF without aoi:summary (the stream is unbounded)".into(),
            (None, false) => {
                "EOF without aoi:summary: the stream is incomplete (crash, kill or truncation)"
                    .into()
            }
        };
        self.report(FindingCode::SummaryMissing, level, None, message);
        if let (Some(how), true) = (failed_end, forgivable) {
            self.report(
                FindingCode::ProcessFailed,
                Level::Notice,
                None,
                format!("the run failed: the process {how}"),
            );
        }
    }

    fn reconcile(&mut self, fields: &Map<String, Value>, line: u64) {
        let int = |k: &str| fields.get(k).and_then(Value::as_u64);
        match int("event_count") {
            None if !fields.contains_key("event_count") => self.report(
                FindingCode::EventCountMissing,
                Level::Notice,
                Some(line),
                "summary has no `event_count`: line loss cannot be reconciled (Verifiable not claimed)".into(),
            ),
            Some(n) if n != line && Some(n) == line.checked_sub(self.took_no_seq) => self.report(
                FindingCode::EventCountMismatch,
                Level::Notice,
                Some(line),
                format!(
                    "event_count is {n}: it counts the events, not the {} line(s) that are not events and took no seq number (those are violations of their own)",
                    self.took_no_seq
                ),
            ),
            Some(n) if n != line => self.report(
                FindingCode::EventCountMismatch,
                Level::Violation,
                Some(line),
                format!("event_count is {n} but {line} line(s) were received through the summary"),
            ),
            _ => {}
        }
        if let Some(n) = int("count") {
            if n != self.domain {
                self.report(
                    FindingCode::CountMismatch,
                    Level::Violation,
                    Some(line),
                    format!(
                        "count is {n} but {} domain event(s) were received",
                        self.domain
                    ),
                );
            }
        }
        if let Some(n) = int("error_count") {
            if n < self.errors {
                self.report(
                    FindingCode::ErrorCountMismatch,
                    Level::Violation,
                    Some(line),
                    format!(
                        "error_count is {n} but {} aoi:error event(s) were received",
                        self.errors
                    ),
                );
            }
        }
        if let Some(n) = int("warning_count") {
            if n < self.warnings {
                self.report(
                    FindingCode::WarningCountMismatch,
                    Level::Violation,
                    Some(line),
                    format!(
                        "warning_count is {n} but {} aoi:warning event(s) were received",
                        self.warnings
                    ),
                );
            }
        }
        if fields.get("partial") == Some(&Value::Bool(true))
            && int("error_count").unwrap_or(self.errors) == 0
        {
            self.report(
                FindingCode::PartialWithoutErrors,
                Level::Notice,
                Some(line),
                "partial:true but no item failed (error_count 0)".into(),
            );
        }
        if fields.get("ok") == Some(&Value::Bool(true)) && self.process_errors > 0 {
            self.report(
                FindingCode::OkAfterProcessError,
                Level::Violation,
                Some(line),
                "summary says ok:true after a process-scope aoi:error ended the run".into(),
            );
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

/// The top-level fields v1.0-alpha defines on a framework event type besides `type`, `aoi` and
/// `properties`, and whether the list is closed (the spec fixes it) or only this verifier's
/// reading of types the spec names without listing fields (`docs/verifier.md`).
fn framework_fields(ty: &str) -> Option<(&'static [&'static str], bool)> {
    const ERROR: &[&str] = &[
        "category",
        "code",
        "message",
        "retryable",
        "retry_after_ms",
        "domain",
        "origin",
        "scope",
        "target",
        "item_index",
        "line_number",
        "field",
        "wrapped",
        "hint",
        "docs",
        "details",
    ];
    Some(match ty {
        // §8.3 example, §5 identity, §11 args.
        "aoi:meta" => (
            &[
                "tool",
                "tool_version",
                "aoi_version",
                "schema_name",
                "schema_version",
                "command",
                "args",
                "args_redacted",
                "input_fingerprint",
            ][..],
            true,
        ),
        // §8.3 table and example, §5 identity, §13.1.
        "aoi:summary" => (
            &[
                "ok",
                "reason",
                "event_count",
                "count",
                "input_count",
                "warning_count",
                "error_count",
                "partial",
                "truncated",
                "next_cursor",
                "elapsed_ms",
                "caused_by",
                "upstream",
                "tool",
                "tool_version",
                "aoi_version",
                "schema_name",
                "schema_version",
            ][..],
            true,
        ),
        // §9.1.
        "aoi:error" => (ERROR, true),
        // The recoverable counterpart of aoi:error (§2, §13.1 forward both with `origin`): the
        // same field names, none required.
        "aoi:warning" => (ERROR, true),
        // §8.3 example, plus §9.1's informational `hint`.
        "aoi:check" => (&["name", "ok", "severity", "detail", "hint"][..], true),
        // The spec names these types without fields: this verifier's reading, notices only.
        "aoi:plan" => (&["action", "target", "detail"][..], false),
        "aoi:progress" => (&["completed", "total", "unit", "message"][..], false),
        "aoi:heartbeat" => (&["interval_ms"][..], false),
        _ => return None,
    })
}

/// The §9.1 fields an error and a warning share, where they have the wrong shape: indices that
/// are not non-negative integers, `wrapped`, strings, objects. One message per field.
fn diagnostic_field_problems(fields: &Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    for key in ["item_index", "line_number"] {
        if let Some(v) = fields.get(key) {
            if !v.is_u64() {
                problems.push(format!("`{key}` is {v}, not a non-negative integer"));
            }
        }
    }
    if let Some(problem) = fields.get("wrapped").and_then(wrapped_problem) {
        problems.push(problem);
    }
    for key in ["origin", "domain", "target", "field", "hint", "docs"] {
        if let Some(v) = fields.get(key) {
            if !v.is_string() {
                problems.push(format!("`{key}` is {}, not a string", kind(v)));
            }
        }
    }
    for key in ["details", "properties"] {
        if let Some(v) = fields.get(key) {
            if !v.is_object() {
                problems.push(format!("`{key}` is {}, not an object", kind(v)));
            }
        }
    }
    problems
}

/// Why a `wrapped` value is not `{protocol, status?, code?}` (§9.1), if it is not.
fn wrapped_problem(w: &Value) -> Option<String> {
    let Value::Object(w) = w else {
        return Some(format!("`wrapped` is {}, not an object", kind(w)));
    };
    if !matches!(
        w.get("protocol").and_then(Value::as_str),
        Some("http" | "grpc" | "exit")
    ) {
        return Some("`wrapped.protocol` must be \"http\", \"grpc\" or \"exit\"".into());
    }
    for key in ["status", "code"] {
        match w.get(key) {
            None | Some(Value::String(_)) => {}
            Some(Value::Number(n)) if n.is_u64() || n.is_i64() => {}
            Some(v) => {
                return Some(format!(
                    "`wrapped.{key}` is {}, not an integer or a string",
                    kind(v)
                ))
            }
        }
    }
    None
}

/// The summary decoded, with a `caused_by` category this version does not know routed as
/// `internal` (§9.4), so a newer producer's failure still reads as a failure.
fn decode_summary(fields: &Map<String, Value>) -> Result<Summary, serde_json::Error> {
    let mut fields = fields.clone();
    if let Some(Value::Object(cause)) = fields.get_mut("caused_by") {
        if let Some(Value::String(c)) = cause.get("category") {
            if Category::parse(c).is_none() {
                cause.insert(
                    "category".into(),
                    Value::String(Category::Internal.as_str().into()),
                );
            }
        }
    }
    serde_json::from_value(Value::Object(fields))
}

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

/// Why `text` is not a clean single line, if it is not.
fn single_line_problem(text: &str) -> Option<&'static str> {
    if text.contains(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}']) {
        Some("spans more than one line")
    } else if text.contains(['\u{1b}', '\u{9b}']) {
        Some("contains an ANSI escape")
    } else {
        None
    }
}

// The published-schema half (`aoi verify --schema`, lint check 4) needs a JSON Schema
// validator, compiled in only with the `validate` feature.
#[cfg(feature = "validate")]
#[path = "verify_schema.rs"]
mod schema;
#[cfg(not(feature = "validate"))]
#[path = "verify_no_schema.rs"]
mod schema;
#[cfg(feature = "validate")]
pub use schema::CompiledSchema;
use schema::SchemaCheck;

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
