//! The end of a stream: the `aoi:summary` (§4, §8.3), the counts it reports reconciled with
//! what the stream held (§13.2), and the verdict once the producer is gone (§4.1, §6).

use serde_json::{Map, Value};

use super::{ProcessEnd, Report, SeqMode, Verdict, Verifier, IDENTITY_FIELDS};
use crate::read::finding::{FindingCode, Level};
use crate::wire::{Category, CausedBy, Meta, Reason, Summary, Upstream};

impl Verifier {
    pub(super) fn summary(&mut self, number: u64, fields: Map<String, Value>) {
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
        // §15 "If output is truncated, `aoi:summary.truncated` MUST be true": a cursor names
        // more data, so the output was truncated. §15 is Part II, not required for
        // conformance: a notice.
        if fields.get("next_cursor").is_some_and(Value::is_string)
            && fields.get("truncated") != Some(&Value::Bool(true))
        {
            self.notice(
                FindingCode::SummaryFieldInvalid,
                number,
                "`next_cursor` names more data, but `truncated` is not true (§15)",
            );
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
