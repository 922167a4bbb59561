//! The stream verifier: every rule of Part I that can be checked on the bytes of one stream.
//!
//! It separates two questions a consumer must never confuse:
//! - does the stream **violate the protocol** (lost lines, a half-written last line, no summary,
//!   malformed errors…)? Then nothing it says can be trusted: [`Verdict::Violation`];
//! - if not, **did the run succeed**? [`Verdict::Succeeded`] (`ok:true`) or [`Verdict::Failed`]
//!   (`ok:false`, reported honestly, with its reason and `caused_by`).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::finding::{Finding, FindingCode, Level};
use super::framing::{Frame, LineReader};
use super::head::Head;
#[cfg(test)]
use super::scan::find_ansi;
use super::scan::{scan_line, Ansi, NotUtf8};
use super::schema_pool::{self, EventCheck, SchemaPool};
use crate::discover::schema::EventValidator;
use crate::wire::{
    Category, CausedBy, Code, ErrorEvent, Meta, Reason, Summary, AOI_VERSION, FRAMEWORK_TYPES,
};

/// How to verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// The stream is documented as unbounded (§4.2): EOF without a summary is not a violation.
    pub unbounded: bool,
    /// Findings kept in the report; the rest are only counted.
    pub max_findings: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            unbounded: false,
            max_findings: 1000,
        }
    }
}

/// The verdict on a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Conforming, and the summary says `ok:true`.
    Succeeded,
    /// Conforming, and the summary says `ok:false`: an honest failure.
    Failed,
    /// Conforming so far, no summary, and the stream is documented as unbounded.
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
    /// The meta claims a later 1.x AOI version, whose enums may have grown (§9.2).
    newer_aoi_minor: bool,
    /// The tool's published event schema, when checking against it.
    schema: Option<SchemaCheck>,
}

/// An event schema to check every event against, and the identity it describes.
#[derive(Debug)]
struct SchemaCheck {
    validator: Arc<EventValidator>,
    /// Validates domain events on worker threads; `None` validates them in [`Verifier::line`].
    pool: Option<SchemaPool>,
    name: Option<String>,
    version: Option<String>,
    /// False once the stream turned out to speak another schema: its domain events are not
    /// interpreted (§5), framework events still are.
    domain: bool,
}

/// A tool's published event schema, compiled once to verify many streams with
/// [`Verifier::with_compiled`] (compiling is most of the cost of verifying a short stream).
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    validator: Arc<EventValidator>,
    check: Arc<EventCheck>,
    name: Option<String>,
    version: Option<String>,
}

impl CompiledSchema {
    /// Compiles `schema` (see [`Verifier::with_schema`]).
    pub fn new(schema: &Value) -> Result<CompiledSchema, crate::discover::schema::SchemaError> {
        let validator = Arc::new(EventValidator::new(schema)?);
        let x = schema.get("x-aoi");
        let text = |k: &str| {
            x.and_then(|x| x.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Ok(CompiledSchema {
            check: Arc::new(EventCheck::new(Arc::clone(&validator), schema.clone())),
            validator,
            name: text("schema_name"),
            version: text("schema_version"),
        })
    }
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
            newer_aoi_minor: false,
            schema: None,
        }
    }

    /// Also validates every event against `schema`, a tool's published event schema (its
    /// `x-aoi.schema_name`/`schema_version` are compared with the stream's meta, §5).
    ///
    /// Past the first 256 KiB of domain events, they are validated on up to 4 worker threads;
    /// [`Verifier::finish`] waits for them, and the report is the one a single thread writes.
    pub fn with_schema(
        self,
        schema: &Value,
    ) -> Result<Verifier, crate::discover::schema::SchemaError> {
        Ok(self.with_compiled(&CompiledSchema::new(schema)?))
    }

    /// Like [`Verifier::with_schema`], with a schema compiled once for many streams.
    pub fn with_compiled(mut self, compiled: &CompiledSchema) -> Verifier {
        let pool = SchemaPool::new(
            Arc::clone(&compiled.check) as Arc<dyn schema_pool::LineCheck>,
            schema_pool::default_workers(),
            schema_pool::DEFAULT_BATCH_BYTES,
            self.opts.max_findings,
        );
        self.schema = Some(SchemaCheck {
            validator: Arc::clone(&compiled.validator),
            pool: Some(pool),
            name: compiled.name.clone(),
            version: compiled.version.clone(),
            domain: true,
        });
        self
    }

    /// Sets how domain events are schema-checked against `schema` (the one given to
    /// [`Verifier::with_schema`]): on `workers` threads fed batches of about `batch_bytes`, or in
    /// [`Verifier::line`] itself when `workers` is 0.
    #[cfg(test)]
    fn schema_workers(mut self, schema: &Value, workers: usize, batch_bytes: usize) -> Verifier {
        let cap = self.opts.max_findings;
        if let Some(check) = &mut self.schema {
            check.pool = (workers > 0).then(|| {
                SchemaPool::new(
                    Arc::new(EventCheck::new(
                        Arc::clone(&check.validator),
                        schema.clone(),
                    )),
                    workers,
                    batch_bytes,
                    cap,
                )
            });
        }
        self
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
                message,
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
                self.violation(
                    FindingCode::TruncatedLine,
                    number,
                    format!(
                        "last line has no terminating newline ({} bytes discarded): the stream was cut",
                        bytes.len()
                    ),
                );
                LineKind::Invalid
            }
        }
    }

    /// A line that is not an event still occupies a seq slot in the producer's numbering.
    fn skip_seq(&mut self) {
        self.next_seq += 1;
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
                self.violation(
                    FindingCode::InvalidJson,
                    number,
                    format!("invalid JSON: {e}"),
                );
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
            if self.summary_line.is_none() {
                self.domain += 1;
            }
            if self.schema.as_ref().is_some_and(|s| s.domain) {
                self.schema_domain(number, bytes);
            }
            return LineKind::Domain;
        }
        if !FRAMEWORK_TYPES.contains(&ty.as_ref()) {
            self.violation(
                FindingCode::UnknownFrameworkEvent,
                number,
                format!("unknown framework event type {ty:?}: a consumer cannot vouch for a stream it did not fully interpret"),
            );
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
        let fields = match serde_json::from_slice::<Map<String, Value>>(bytes) {
            Ok(fields) => fields,
            // The head parse accepted it; only absurd nesting depth gets here.
            Err(e) => {
                self.violation(
                    FindingCode::InvalidJson,
                    number,
                    format!("invalid JSON: {e}"),
                );
                return LineKind::Invalid;
            }
        };
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
        match ty.as_str() {
            "aoi:meta" => self.meta(number, fields),
            "aoi:summary" => self.summary(number, fields),
            "aoi:error" => self.error(number, &fields),
            "aoi:warning" => self.warnings += 1,
            "aoi:check" => self.check(number, &fields),
            _ => {}
        }
        LineKind::Framework
    }

    fn schema_check(&mut self, number: u64, value: &Value) {
        let Some(check) = &self.schema else { return };
        if let Some(message) = schema_pool::schema_problem(&check.validator, value) {
            self.violation(FindingCode::EventSchemaInvalid, number, message);
        }
    }

    /// Validates the domain event on line `number` against the schema: queued for the workers,
    /// whose findings [`Verifier::finish`] merges, or here when there are none.
    fn schema_domain(&mut self, number: u64, bytes: &[u8]) {
        let Some(check) = &mut self.schema else {
            return;
        };
        if let Some(pool) = &mut check.pool {
            pool.push(number, bytes);
            return;
        }
        let parsed = serde_json::from_slice::<Value>(bytes);
        if let Some((code, message)) = schema_pool::line_problem(&check.validator, parsed) {
            self.violation(code, number, message);
        }
    }

    /// Waits for the schema workers and merges their findings into the report, in the order a
    /// single thread would have reported them: a domain line's schema finding comes last among
    /// that line's findings. The cap applies to the merged sequence.
    fn merge_schema_findings(&mut self) {
        let Some(pool) = self.schema.as_mut().and_then(|s| s.pool.take()) else {
            return;
        };
        let found = pool.finish();
        let schema_total = found.kept.len() as u64 + found.dropped;
        // Every schema finding is a violation.
        self.violations += schema_total;
        let total = self.findings.len() as u64 + self.suppressed + schema_total;
        let ours = std::mem::take(&mut self.findings);
        let mut merged = Vec::with_capacity(ours.len() + found.kept.len());
        let mut theirs = found.kept.into_iter().peekable();
        let as_finding = |f: schema_pool::SchemaFinding| Finding {
            code: f.code,
            level: Level::Violation,
            line: Some(f.line),
            section: f.code.section().to_owned(),
            message: f.message,
        };
        for finding in ours {
            // Findings before `finish` all carry the line being read.
            let line = finding.line.unwrap_or(u64::MAX);
            while let Some(f) = theirs.next_if(|f| f.line < line) {
                merged.push(as_finding(f));
            }
            merged.push(finding);
        }
        merged.extend(theirs.map(as_finding));
        merged.truncate(self.opts.max_findings);
        self.suppressed = total - merged.len() as u64;
        self.findings = merged;
    }

    fn schema_identity(&mut self, number: u64, meta: &Map<String, Value>) {
        let Some(check) = &self.schema else { return };
        let stream_name = meta.get("schema_name").and_then(Value::as_str);
        let stream_version = meta.get("schema_version").and_then(Value::as_str);
        let (expected_name, expected_version) = (check.name.clone(), check.version.clone());
        let name_differs = matches!((stream_name, &expected_name), (Some(a), Some(b)) if a != b);
        let major_differs = matches!((stream_version, &expected_version), (Some(a), Some(b)) if major(a) != major(b));
        let minor_differs =
            matches!((stream_version, &expected_version), (Some(a), Some(b)) if a != b);
        let describe =
            |n: Option<&str>, v: Option<&str>| format!("{}@{}", n.unwrap_or("?"), v.unwrap_or("?"));
        let message = format!(
            "the stream speaks {} but is checked against {}",
            describe(stream_name, stream_version),
            describe(expected_name.as_deref(), expected_version.as_deref())
        );
        if name_differs || major_differs {
            if let Some(check) = &mut self.schema {
                check.domain = false;
            }
            self.violation(
                FindingCode::SchemaIdentityMismatch,
                number,
                format!("{message}: domain events are not interpreted (§5)"),
            );
        } else if minor_differs {
            self.notice(FindingCode::SchemaIdentityMismatch, number, message);
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
                if seq != self.next_seq {
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

    fn extra_fields(&mut self, number: u64, ty: &str, fields: &Map<String, Value>) {
        let known: &[&str] = match ty {
            "aoi:meta" => &[
                "tool",
                "tool_version",
                "aoi_version",
                "schema_name",
                "schema_version",
                "command",
                "args",
                "args_redacted",
                "input_fingerprint",
            ],
            "aoi:summary" => &[
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
            ],
            "aoi:error" => &[
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
            ],
            "aoi:check" => &["name", "ok", "severity", "detail", "hint"],
            // The spec fixes no field list for the others.
            _ => return,
        };
        let extra: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|k| !matches!(*k, "type" | "aoi" | "properties" | "seq" | "run"))
            // Reported as V02_ERROR_UPSTREAM on an error; an extra field anywhere else but the summary.
            .filter(|k| !(ty == "aoi:error" && *k == "upstream"))
            .filter(|k| !known.contains(k))
            .collect();
        if !extra.is_empty() {
            self.notice(
                FindingCode::FrameworkExtraField,
                number,
                format!(
                    "{ty} has top-level field(s) the spec does not define ({}); tool additions belong in `properties`",
                    extra.join(", ")
                ),
            );
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
        self.newer_aoi_minor = fields
            .get("aoi_version")
            .and_then(Value::as_str)
            .is_some_and(|v| major(v) == major(AOI_VERSION) && v != AOI_VERSION);
        self.meta = Some(fields);
    }

    fn identity(&mut self, number: u64, ty: &str, fields: &Map<String, Value>) {
        let missing: Vec<&str> = [
            "tool",
            "tool_version",
            "aoi_version",
            "schema_name",
            "schema_version",
        ]
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
                self.notice(
                    FindingCode::AoiVersionUnknown,
                    number,
                    format!(
                        "aoi_version {version:?} has a major other than {}",
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
            if serde_json::from_value::<CausedBy>(v.clone()).is_err() {
                self.violation(
                    FindingCode::SummaryFieldInvalid,
                    number,
                    "`caused_by` must carry a valid category, code and retryable",
                );
            }
        }
        self.identity(number, "aoi:summary", &fields);
        if let Some(meta) = &self.meta {
            let differs: Vec<&str> = ["tool", "aoi_version", "schema_name", "schema_version"]
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
            if let Err(e) = serde_json::from_value::<Summary>(Value::Object(fields.clone())) {
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
            Some(Value::String(c)) => match (Category::parse(c), c.as_str()) {
                (Some(c), _) => Some(c),
                (None, "temporary") => {
                    self.violation(
                        FindingCode::V02CategoryTemporary,
                        number,
                        "category \"temporary\" was renamed \"unavailable\" in v1.0-alpha",
                    );
                    None
                }
                (None, "partial") => {
                    self.violation(
                        FindingCode::V02CategoryPartial,
                        number,
                        "category \"partial\" was removed: use the item's real category with scope \"item\" and aoi:summary.partial",
                    );
                    None
                }
                (None, other) => {
                    // §9.2: a new category is a minor version bump, and §9.4 forbids failing on
                    // one; only a producer that claims exactly this version is held to the enum.
                    if self.newer_aoi_minor {
                        self.notice(
                            FindingCode::ErrorCategoryInvalid,
                            number,
                            format!("category {other:?} is not in the v1.0-alpha enum; routed as internal (§9.4)"),
                        );
                    } else {
                        self.violation(
                            FindingCode::ErrorCategoryInvalid,
                            number,
                            format!("category {other:?} is not in the closed enum of §9.2"),
                        );
                    }
                    None
                }
            },
            Some(other) => {
                self.violation(
                    FindingCode::ErrorCategoryInvalid,
                    number,
                    format!("`category` is {other}, not a string"),
                );
                None
            }
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
        for key in ["item_index", "line_number"] {
            if let Some(v) = fields.get(key) {
                if !v.is_u64() {
                    self.violation(
                        FindingCode::ErrorFieldInvalid,
                        number,
                        format!("`{key}` is {v}, not a non-negative integer"),
                    );
                }
            }
        }
        if let Some(w) = fields.get("wrapped") {
            let protocol = w.get("protocol").and_then(Value::as_str);
            if !matches!(protocol, Some("http" | "grpc" | "exit")) {
                self.violation(
                    FindingCode::ErrorFieldInvalid,
                    number,
                    "`wrapped` must be an object whose `protocol` is http, grpc or exit",
                );
            }
        }
        if fields.contains_key("upstream") {
            self.violation(
                FindingCode::V02ErrorUpstream,
                number,
                "aoi:error.upstream was renamed `wrapped` in v1.0-alpha",
            );
        }
        let origin = fields.get("origin").and_then(Value::as_str);
        if !is_item && origin.is_none() {
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
        match (&summary_fields, self.summary_line) {
            (Some(fields), Some(line)) => self.reconcile(fields, line),
            _ => {
                let level = if self.opts.unbounded {
                    Level::Notice
                } else {
                    Level::Violation
                };
                let message = match end {
                    Some(ProcessEnd::Signaled(sig)) => {
                        format!("EOF without aoi:summary: the producer was killed by signal {sig}")
                    }
                    _ => "EOF without aoi:summary: the stream is incomplete (crash, kill or truncation)".into(),
                };
                self.report(FindingCode::SummaryMissing, level, None, message);
            }
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
        let summary: Option<Summary> =
            summary_fields.and_then(|f| serde_json::from_value(Value::Object(f)).ok());
        let meta: Option<Meta> = self
            .meta
            .take()
            .and_then(|f| serde_json::from_value(Value::Object(f)).ok());
        let verdict = if self.violations > 0 {
            Verdict::Violation
        } else {
            match &summary {
                Some(s) if s.ok => Verdict::Succeeded,
                Some(_) => Verdict::Failed,
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
            meta,
            summary,
            caused_by,
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

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
