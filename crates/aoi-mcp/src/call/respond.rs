//! The last phase of a call: a finished run judged into an MCP result. Findings that break
//! the contract withhold the lines they are about; a run the adapter stopped is an
//! `adapter_error`; an unbounded command stopped at its bound is an honest end; everything else
//! is the CLI's own success or failure, with a headline a model reads first. The result always
//! fits the tool's `outputSchema`.

use aoi::read::Level;
use aoi::{Category, Code, ErrorEvent, Verdict};
use serde_json::{json, Map, Value};

use super::collect::{Collected, MISFITS_LISTED};
use super::watch::{Ran, Stopped};
use super::{object, Bounds, CallOutcome, Invocation};
use crate::adapter_error::error_value;
use crate::catalog::ServedTool;
use crate::structured::Structured;

/// The result of `ran`, a run of `tool` with `invocation` within `bounds`; it fits `output`
/// (the tool's compiled `outputSchema`) when one is given.
pub(super) fn respond(
    tool: &ServedTool,
    invocation: &Invocation,
    bounds: Bounds,
    output: Option<&jsonschema::Validator>,
    ran: Ran,
) -> CallOutcome {
    let Ran {
        mut kept,
        stopped,
        report,
        stderr_line,
        killed,
        bound_ms,
    } = ran;
    let Violations {
        findings: violations,
        violated,
        dropped_invalid,
    } = withhold_violations(&report, &mut kept, killed);
    let truncated = kept.over_budget;
    let (mut structured, events) = structured(&mut kept);

    let retry_safe = tool.entry.read_only || invocation.keyed;
    let mut outcome = match stopped {
        Some(Stopped::Cancelled) => stop_error(
            structured,
            ErrorEvent::new(
                Category::Cancelled,
                Code::from_static("CALL_CANCELLED"),
                "the call was cancelled; everything the CLI started was killed",
            ),
        ),
        Some(Stopped::TimedOut) => {
            let message = format!(
                "the CLI ran longer than {} s and everything it started was killed{}",
                bounds.timeout.as_secs_f64(),
                if retry_safe {
                    ""
                } else {
                    "; what it applied before is unknown: read the state before calling again"
                }
            );
            stop_error(
                structured,
                ErrorEvent::new(
                    Category::Timeout,
                    Code::from_static("CALL_TIMED_OUT"),
                    message,
                )
                .retryable(retry_safe),
            )
        }
        Some(bound @ (Stopped::MaxDuration | Stopped::MaxEvents)) if !violated => {
            let (reason, message) = match bound {
                Stopped::MaxEvents => (
                    "max_events",
                    format!(
                        "stopped after {} events (max_events); the stream does not end by itself",
                        invocation.max_events.unwrap_or_default()
                    ),
                ),
                _ => (
                    "max_duration",
                    format!(
                        "stopped after {} ms (max_duration_ms or the call's timeout); the stream does not end by itself",
                        bound_ms
                    ),
                ),
            };
            structured.insert(
                "stopped".into(),
                json!({"reason": reason, "retryable": false, "message": message}),
            );
            CallOutcome {
                structured: Structured::without_events(structured),
                is_error: false,
                headline: format!("{} {} {message}", tool.cli.name, tool.entry.name),
            }
        }
        _ if violated => {
            let first = violations
                .first()
                .map(ToString::to_string)
                .unwrap_or_else(|| "the stream broke the contract".into());
            let findings: Vec<Value> = violations
                .iter()
                .map(|f| serde_json::to_value(f).unwrap_or_default())
                .collect();
            let message = format!(
                "{} broke the AOI-CLI contract, so its output cannot be trusted as a result: {first}{}",
                tool.cli.name,
                if stderr_line.is_empty() { String::new() } else { format!(" (stderr: {stderr_line})") }
            );
            let mut violation = json!({"findings": findings, "message": message});
            if dropped_invalid > 0 {
                violation["withheld_events"] = dropped_invalid.into();
            }
            structured.insert("protocol_violation".into(), violation);
            CallOutcome {
                structured: Structured::without_events(structured),
                is_error: true,
                headline: message,
            }
        }
        _ => {
            // Output past --max-output stopped a read-only command: what was kept is a
            // truncated result; the run's own success is unknown, so it is not one.
            let ok = stopped.is_none() && report.verdict == Verdict::Succeeded;
            let mut headline = if ok {
                format!("{} {} succeeded", tool.cli.name, tool.entry.name)
            } else if stopped == Some(Stopped::Output) {
                format!(
                    "{} {}: the output passed --max-output ({} bytes), so the CLI was stopped; the events kept are the first ones",
                    tool.cli.name, tool.entry.name, bounds.max_output
                )
            } else {
                failure_headline(tool, &kept.errors, &kept.unknown_categories)
            };
            if truncated && stopped != Some(Stopped::Output) {
                headline.push_str(&format!(
                    "; {} events withheld to keep the response under {} bytes",
                    kept.withheld, bounds.max_output
                ));
            }
            // A read-only run stopped at --max-output is a truncated result, an error only
            // when the CLI reported one before.
            let is_error = if stopped == Some(Stopped::Output) {
                !kept.errors.is_empty()
            } else {
                !ok
            };
            CallOutcome {
                structured: Structured::without_events(structured),
                is_error,
                headline,
            }
        }
    };
    outcome.structured.events = events;
    if !kept.misfits.is_empty() || kept.misfits_unlisted > 0 {
        withhold_misfits(&mut outcome, kept.misfits, kept.misfits_unlisted);
    }
    if let Some(validator) = output {
        fit(&mut outcome, validator);
    }
    outcome
}

/// The findings of a run that break the contract, and what they cost it.
struct Violations<'a> {
    findings: Vec<&'a aoi::read::Finding>,
    /// The run cannot be trusted as a result.
    violated: bool,
    /// Events withheld because the verifier rejected their lines.
    dropped_invalid: u64,
}

/// Withholds from `kept` every event, misfit and summary on a line the verifier rejected
/// (all events, when it found more violations than it keeps), and returns the violations.
/// A run the adapter `killed` is not faulted for the summary the kill prevented.
fn withhold_violations<'a>(
    report: &'a aoi::read::Report,
    kept: &mut Collected,
    killed: bool,
) -> Violations<'a> {
    // The findings that make the run untrustworthy. An unknown category is §9.4's to route,
    // not a broken contract: its event is kept, routed as `internal`.
    let violations: Vec<&aoi::read::Finding> = report
        .findings
        .iter()
        .filter(|f| f.level == Level::Violation)
        .filter(|f| !unknown_category(f, kept))
        // A run the adapter stopped has no summary because the adapter stopped it.
        .filter(|f| !(killed && f.code == aoi::read::FindingCode::SummaryMissing))
        .collect();
    let mut bad_lines: Vec<u64> = violations.iter().filter_map(|f| f.line).collect();
    bad_lines.sort_unstable();
    let suppressed = report.suppressed > 0;
    let violated = !violations.is_empty() || (suppressed && report.verdict == Verdict::Violation);
    let before = kept.events.len();
    if suppressed && report.verdict == Verdict::Violation {
        // More violations than the verifier keeps: which lines they were on is unknown, so
        // no event of the run can be vouched for.
        kept.events.clear();
    } else {
        kept.events
            .retain(|(line, _)| bad_lines.binary_search(line).is_err());
    }
    let dropped_invalid = (before - kept.events.len()) as u64;
    // A line the verifier rejected is its finding alone, not also the outputSchema's.
    kept.misfits.retain(|f| {
        f.get("line")
            .and_then(Value::as_u64)
            .is_none_or(|n| bad_lines.binary_search(&n).is_err())
    });
    if kept.misfits.len() > MISFITS_LISTED {
        kept.misfits_unlisted += (kept.misfits.len() - MISFITS_LISTED) as u64;
        kept.misfits.truncate(MISFITS_LISTED);
    }
    if kept
        .summary
        .as_ref()
        .is_some_and(|(line, _)| bad_lines.binary_search(line).is_ok())
    {
        kept.summary = None;
    }
    Violations {
        findings: violations,
        violated,
        dropped_invalid,
    }
}

/// The result's structured content beyond its events (the summary, `truncated` with the
/// cursor to go on, how many events were withheld), and the events, taken from `kept`.
fn structured(kept: &mut Collected) -> (Map<String, Value>, Vec<String>) {
    let mut structured = Map::new();
    let events: Vec<String> = std::mem::take(&mut kept.events)
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    let summary = kept.summary.take().map(|(_, v)| v);
    let next_cursor = summary
        .as_ref()
        .and_then(|s| s.get("next_cursor"))
        .filter(|c| c.is_string())
        .cloned();
    structured.insert("summary".into(), summary.unwrap_or(Value::Null));
    if kept.over_budget {
        structured.insert("truncated".into(), Value::Bool(true));
        if let Some(cursor) = next_cursor {
            structured.insert("next_cursor".into(), cursor);
        }
    }
    if kept.withheld > 0 {
        structured.insert("withheld_events".into(), kept.withheld.into());
    }
    (structured, events)
}

/// Names the events withheld for not fitting the tool's `outputSchema` in
/// `protocol_violation` (and counts the `unlisted` ones past them); the result becomes an
/// error.
fn withhold_misfits(outcome: &mut CallOutcome, misfits: Vec<Value>, unlisted: u64) {
    let mut message = format!(
        "the CLI's output does not fit the tool's outputSchema, so it was withheld: {}",
        misfits
            .first()
            .and_then(|f| f.get("message"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    );
    if unlisted > 0 {
        message.push_str(&format!(
            " ({unlisted} more events that do not fit are withheld and not listed)"
        ));
    }
    let violation = outcome
        .structured
        .rest
        .entry("protocol_violation")
        .or_insert_with(|| json!({"findings": [], "message": message}));
    if let Some(Value::Array(list)) = violation.get_mut("findings") {
        list.extend(misfits);
    }
    outcome.is_error = true;
    if !outcome.headline.contains("outputSchema") {
        outcome.headline.push_str(&format!("; {message}"));
    }
}

/// True when `finding` is only about an `aoi:error` category this version does not know
/// (a string, not one of the renamed v0.2 values): §9.4 routes it, it breaks nothing.
fn unknown_category(finding: &aoi::read::Finding, kept: &Collected) -> bool {
    if finding.code != aoi::read::FindingCode::ErrorCategoryInvalid {
        return false;
    }
    let Some(line) = finding.line else {
        return false;
    };
    kept.unknown_category_lines.contains(&line)
}

/// A run the adapter ended: `error` as `adapter_error`, an MCP error result.
fn stop_error(mut structured: Map<String, Value>, error: ErrorEvent) -> CallOutcome {
    let headline = error.message.clone();
    structured.insert("adapter_error".into(), error_value(error));
    CallOutcome {
        structured: Structured::without_events(structured),
        is_error: true,
        headline,
    }
}

/// Makes `outcome` fit the tool's `outputSchema` beyond its events (each was checked as it
/// came): a summary that does not fit (the verifier let it through, or the schema is stricter
/// than the stream's) is withheld and named in `protocol_violation`, and the result becomes
/// an error. Never passes a misfit on.
fn fit(outcome: &mut CallOutcome, validator: &jsonschema::Validator) {
    for _ in 0..4 {
        let mut skeleton = outcome.structured.rest.clone();
        skeleton.insert("events".into(), Value::Array(Vec::new()));
        let errors: Vec<(String, String)> = validator
            .iter_errors(&Value::Object(skeleton))
            .take(32)
            .map(|e| (e.instance_path().to_string(), e.to_string()))
            .collect();
        if errors.is_empty() {
            return;
        }
        let rest = &mut outcome.structured.rest;
        let mut findings = Vec::new();
        for (path, message) in &errors {
            if path.trim_start_matches('/').split('/').next() == Some("summary") {
                rest.insert("summary".into(), Value::Null);
            }
            findings.push(json!({"code": "OUTPUT_SCHEMA_MISMATCH", "level": "violation", "section": "§10", "message": format!("{path}: {message}")}));
        }
        withhold_misfits(outcome, findings, 0);
    }
    // Still no fit (a field of the adapter's own, say): nothing but the violation is sent.
    let message = format!(
        "{}; the result could not be made to fit the tool's outputSchema",
        outcome.headline
    );
    outcome.structured = Structured::without_events(object(
        json!({"summary": null, "protocol_violation": {"findings": [], "message": message}}),
    ));
    outcome.is_error = true;
    outcome.headline = message;
}

/// What a model should read first about a failed run: the process error, its retry advice,
/// and for an interactive login, that a person has to act (never retried).
fn failure_headline(
    tool: &ServedTool,
    errors: &[ErrorEvent],
    unknown_categories: &[Option<String>],
) -> String {
    let at = errors
        .iter()
        .position(|e| e.scope == aoi::wire::Scope::Process)
        .or((!errors.is_empty()).then_some(0));
    let Some((error, wire)) =
        at.map(|i| (&errors[i], unknown_categories.get(i).cloned().flatten()))
    else {
        return format!("{} {} failed (ok:false)", tool.cli.name, tool.entry.name);
    };
    let hint = error.hint.as_deref().unwrap_or_default();
    // §9.4: an unknown category was routed as internal; the model sees both.
    let category = match wire {
        Some(wire) => format!("{wire} (unknown category, routed as internal)"),
        None => error.category.to_string(),
    };
    // The message is a sentence of the CLI's, often with its own full stop; the advice that
    // follows starts a sentence of its own.
    let mut text = format!(
        "{} {} failed: {category} {}: {}",
        tool.cli.name,
        tool.entry.name,
        error.code,
        error.message.trim_end_matches('.')
    );
    if error.code.as_str() == "INTERACTIVE_REQUIRED" {
        text.push_str(&format!(
            ". A person must act: run `{hint}` in a terminal, then try again. Do not retry before that."
        ));
        return text;
    }
    if error.retryable {
        text.push_str(". Retryable");
        if let Some(ms) = error.retry_after_ms {
            text.push_str(&format!(" after {ms} ms"));
        }
    } else {
        text.push_str(". Not retryable as is");
    }
    if !hint.is_empty() {
        text.push_str(&format!("; hint: {hint}"));
    }
    text
}
