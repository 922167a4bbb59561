//! One `tools/call`: spawn the CLI in machine mode (its own process group, no shell), read
//! its stream through the `aoi` reader and verifier as it arrives, forward `aoi:progress`, and
//! turn the run into `{events, summary}` that always fits the tool's `outputSchema`.
//!
//! Everything a call waits for has a deadline: the CLI's stdout, its exit and its stderr are
//! read in one loop beside `--timeout`, so a descendant that holds a pipe open cannot hold the
//! call. When the call ends, however it ends, nothing it started is left running
//! ([`crate::reap`]).

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use aoi::read::{decode_object, Event, Frame, Framer, Level, LineKind, ProcessEnd};
use aoi::{Category, Code, ErrorEvent, Verdict, Verifier, VerifyOptions};
use rustix::process::Signal;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::adapter_error::{adapter_error, error_value};
use crate::catalog::ServedTool;
use crate::reap::{CallProcesses, MARKER};
use crate::structured::Structured;

/// The default `--max-output`: 4 MiB, below the line buffer of every official MCP client.
pub const DEFAULT_MAX_OUTPUT: usize = 4 << 20;

/// How long a bounded stop (SIGINT) leaves the CLI to write its summary and exit.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// How long stdout is still read after the CLI exited, when its summary has not arrived yet:
/// what it wrote before exiting is in the pipe already; anything later is a descendant's.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// Bytes of a response kept for everything but the events: headline, summary, errors.
const RESERVE: usize = 16 << 10;

/// The stderr kept, for a violation's message.
const STDERR_KEPT: usize = 8 << 10;

/// Events that do not fit the `outputSchema` named one by one in a result; those past them are
/// withheld all the same, and counted. A CLI can write millions: the adapter holds no more
/// than these and the verifier's findings (whose lines are named by the verifier instead).
const MISFITS_LISTED: usize = 100;

/// Bounds of one call.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The run is killed after this long.
    pub timeout: Duration,
    /// The size of the whole response (text and structured content): events past it are
    /// withheld and the result says `truncated`.
    pub max_output: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            timeout: Duration::from_secs(300),
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

/// What one call runs, beyond the tool.
#[derive(Debug, Default)]
pub struct Invocation {
    /// Arguments after the program and the command words.
    pub argv: Vec<String>,
    /// Bytes for the CLI's standard input (closed when `None`).
    pub stdin: Option<Vec<u8>>,
    /// The caller passed an idempotency key: a mutation may then be retried after a timeout.
    pub keyed: bool,
    /// For an unbounded command: stop the CLI (SIGINT) after this long.
    pub max_duration: Option<Duration>,
    /// For an unbounded command: stop the CLI (SIGINT) after this many domain events.
    pub max_events: Option<u64>,
    /// The working directory of the CLI (the confinement's base); the adapter's when `None`.
    pub cwd: Option<std::path::PathBuf>,
}

/// How a call ended, before it becomes an MCP result.
#[derive(Debug)]
pub struct CallOutcome {
    /// The structured result: `{events, summary}` and, when something went wrong beyond an
    /// honest failure, `protocol_violation` or `adapter_error`.
    pub structured: Structured,
    /// True for an MCP `isError` result.
    pub is_error: bool,
    /// A line for a person or a model, read before the JSON.
    pub headline: String,
}

/// A progress update from the CLI's `aoi:progress`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Units done.
    pub progress: f64,
    /// Units in all, when known.
    pub total: Option<f64>,
    /// The CLI's message.
    pub message: Option<String>,
}

/// Why the adapter stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Cancelled,
    TimedOut,
    /// An unbounded command reached `max_duration_ms` (or the call's timeout).
    MaxDuration,
    /// An unbounded command reached `max_events`.
    MaxEvents,
    /// A read-only command's output reached `--max-output`: nothing more would be kept.
    Output,
}

/// What a response costs for one event line: once in `structuredContent`, once escaped in
/// the text block (every `"` and `\` doubled; the line is compact JSON, so nothing else is
/// escaped), and a comma each time.
fn wire_cost(line: &[u8]) -> usize {
    let escaped = line.iter().filter(|&&b| b == b'"' || b == b'\\').count();
    2 * line.len() + escaped + 2
}

/// Everything kept of a run as it is read.
struct Collected {
    /// Events in stream order, with their line numbers, each as its JSON text.
    events: Vec<(u64, String)>,
    /// The lines of errors whose category this version does not know.
    unknown_category_lines: Vec<u64>,
    /// Findings for events that do not fit the tool's `outputSchema`: withheld. At most
    /// [`MISFITS_LISTED`] more than the verifier keeps findings, so that [`MISFITS_LISTED`]
    /// remain once those on lines the verifier rejected are dropped.
    misfits: Vec<Value>,
    /// Events that do not fit the `outputSchema` and are not in `misfits`.
    misfits_unlisted: u64,
    summary: Option<(u64, Value)>,
    /// The errors the headline may name: the first, and the first of process scope. A CLI
    /// can write millions of errors; only these two are held.
    errors: Vec<ErrorEvent>,
    /// Per error kept, in order: its wire category when this version does not know it (§9.4:
    /// it is forwarded unchanged and routed as `internal`).
    unknown_categories: Vec<Option<String>>,
    domain_events: u64,
    /// Wire cost of the events kept.
    cost: usize,
    /// Events not kept: past `--max-output`, or past `max_events`.
    withheld: u64,
    /// Events past `--max-output` (a subset of `withheld`).
    over_budget: bool,
    last_progress: Option<f64>,
}

/// Runs `tool` with `invocation`, forwarding progress through `progress`, until it ends,
/// `cancel` fires, or `bounds` are reached; the result fits `output` (the tool's compiled
/// `outputSchema`) when one is given.
pub async fn run(
    tool: &ServedTool,
    mut invocation: Invocation,
    bounds: Bounds,
    output: Option<&jsonschema::Validator>,
    cancel: CancellationToken,
    mut progress: impl FnMut(ProgressUpdate) + Send,
) -> CallOutcome {
    let cli = &tool.cli;
    let Some(mut processes) = CallProcesses::new() else {
        return not_started(tool, "the adapter is stopping".into());
    };
    let mut command = Command::new(cli.argv.first().cloned().unwrap_or_default());
    command
        .args(&cli.argv[1.min(cli.argv.len())..])
        .args(tool.entry.words())
        .args(&invocation.argv)
        .env(MARKER, processes.marker())
        .stdin(if invocation.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &invocation.cwd {
        command.current_dir(cwd);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return not_started(tool, format!("cannot run {}: {e}", cli.name)),
    };
    if !processes.started(child.id().unwrap_or_default()) {
        return not_started(tool, "the adapter is stopping".into());
    }
    if let (Some(bytes), Some(mut input)) = (invocation.stdin.take(), child.stdin.take()) {
        // Written beside the reading of stdout, so a CLI that writes before it has read
        // everything cannot deadlock; one that exits unread is a broken pipe, ignored. The
        // task ends when the pipe does: the CLI's group is killed at the end of the call.
        tokio::spawn(async move {
            let _ = input.write_all(&bytes).await;
        });
    }
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return not_started(tool, "the CLI's pipes were not opened".into());
    };

    let mut verifier = Verifier::new(VerifyOptions {
        unbounded: tool.entry.unbounded,
        ..VerifyOptions::default()
    });
    if let Some(schema) = cli.compiled() {
        verifier = verifier.with_compiled(schema);
    }
    let budget = bounds.max_output.saturating_sub(RESERVE);
    let mut framer = Framer::with_max_line(budget.max(1));
    let started = Instant::now();
    let deadline = started + bounds.timeout;
    // An unbounded command never ends by itself: it is stopped at its own bound, or at the
    // call's timeout, and either is an honest end of the run, not a failure.
    let stop_at = if tool.entry.unbounded {
        Some(
            invocation
                .max_duration
                .map_or(deadline, |d| (started + d).min(deadline)),
        )
    } else {
        None
    };
    let mut kept = Collected {
        events: Vec::new(),
        unknown_category_lines: Vec::new(),
        misfits: Vec::new(),
        misfits_unlisted: 0,
        summary: None,
        errors: Vec::new(),
        unknown_categories: Vec::new(),
        domain_events: 0,
        cost: 0,
        withheld: 0,
        over_budget: false,
        last_progress: None,
    };
    let mut stopped: Option<Stopped> = None;
    let mut interrupted: Option<Instant> = None;
    let mut status: Option<std::process::ExitStatus> = None;
    let mut exit_grace: Option<Instant> = None;
    let mut out_open = true;
    let mut err_open = true;
    let mut stderr_kept: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut err_chunk = vec![0u8; 8 << 10];
    let far = started + Duration::from_secs(365 * 24 * 3600);

    loop {
        if status.is_some() && (!out_open || kept.summary.is_some()) {
            break;
        }
        if matches!(
            stopped,
            Some(Stopped::Cancelled | Stopped::TimedOut | Stopped::Output)
        ) {
            break;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => { stopped = Some(Stopped::Cancelled); }
            () = sleep_until(deadline), if stop_at.is_none() => { stopped = Some(Stopped::TimedOut); }
            () = sleep_until(stop_at.unwrap_or(far)), if stop_at.is_some() && interrupted.is_none() => {
                stopped.get_or_insert(Stopped::MaxDuration);
                processes.signal_group(Signal::INT);
                interrupted = Some(Instant::now());
            }
            () = sleep_until(interrupted.map_or(far, |t| (t + INTERRUPT_GRACE).min(deadline + INTERRUPT_GRACE))), if interrupted.is_some() => {
                // It did not end on SIGINT: it is killed, and what it said stands.
                processes.signal_group(Signal::KILL);
                interrupted = None;
                exit_grace.get_or_insert(Instant::now() + EXIT_GRACE);
            }
            () = sleep_until(exit_grace.unwrap_or(far)), if exit_grace.is_some() => {
                // The CLI is gone; a descendant holding stdout is not waited for.
                if status.is_some() { break; }
                exit_grace = None;
            }
            exited = child.wait(), if status.is_none() => {
                match exited {
                    Ok(s) => status = Some(s),
                    Err(_) => status = Some(std::process::ExitStatus::from_raw(0xff00)),
                }
                exit_grace = Some(Instant::now() + EXIT_GRACE);
            }
            read = stdout.read(&mut chunk), if out_open => {
                let n = read.unwrap_or_default();
                if n == 0 {
                    out_open = false;
                    continue;
                }
                framer.push(&chunk[..n]);
                // Complete lines only: a cut last line is never a line (§2).
                while let Some(frame) = framer.next_frame() {
                    let kind = verifier.frame(frame);
                    let Frame::Line { number, bytes: line } = frame else { continue };
                    if kind == LineKind::Invalid {
                        continue;
                    }
                    let line = Line { number, bytes: line, kind };
                    take_line(tool, &invocation, budget, output, line, &mut kept, &mut progress);
                }
                if kept.over_budget && tool.entry.read_only && stopped.is_none() {
                    // Nothing more would be kept, and a read-only command changes nothing:
                    // it is stopped rather than read to its end.
                    stopped = Some(Stopped::Output);
                }
                let capped = invocation.max_events.is_some_and(|m| kept.domain_events >= m);
                if capped && tool.entry.unbounded && interrupted.is_none() && stopped.is_none() {
                    stopped = Some(Stopped::MaxEvents);
                    processes.signal_group(Signal::INT);
                    interrupted = Some(Instant::now());
                }
            }
            read = stderr.read(&mut err_chunk), if err_open => {
                match read {
                    Ok(n) if n > 0 => {
                        let room = STDERR_KEPT.saturating_sub(stderr_kept.len());
                        stderr_kept.extend_from_slice(&err_chunk[..n.min(room)]);
                    }
                    _ => err_open = false,
                }
            }
        }
    }
    drop(chunk);
    // The call is over: the group, and whatever left it, goes now.
    processes.kill_all();
    if status.is_none() {
        // Killed above; its exit is collected with a bound, as everything else. A cancelled
        // or timed-out call too: left to the runtime's orphan queue, a killed CLI can stay a
        // zombie until some other child happens to exit.
        if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
            status = Some(s);
        }
    }
    let killed = matches!(
        stopped,
        Some(Stopped::Cancelled | Stopped::TimedOut | Stopped::Output)
    );
    if !killed {
        // A run the adapter killed was cut mid-line by the kill, not by the CLI.
        if let Some(tail) = framer.finish() {
            verifier.frame(tail);
        }
    }
    let end = if killed {
        None
    } else {
        status.map(|s| match (s.code(), s.signal()) {
            (Some(code), _) => ProcessEnd::Exited(code),
            (None, Some(sig)) => ProcessEnd::Signaled(sig),
            (None, None) => ProcessEnd::Exited(-1),
        })
    };
    let report = verifier.finish(end);
    let stderr_line = String::from_utf8_lossy(&stderr_kept)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    drop(stderr_kept);

    // The findings that make the run untrustworthy. An unknown category is §9.4's to route,
    // not a broken contract: its event is kept, routed as `internal`.
    let violations: Vec<&aoi::read::Finding> = report
        .findings
        .iter()
        .filter(|f| f.level == Level::Violation)
        .filter(|f| !unknown_category(f, &kept))
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

    let mut structured = Map::new();
    let events: Vec<String> = kept.events.into_iter().map(|(_, text)| text).collect();
    let summary = kept.summary.map(|(_, v)| v);
    let next_cursor = summary
        .as_ref()
        .and_then(|s| s.get("next_cursor"))
        .filter(|c| c.is_string())
        .cloned();
    structured.insert("summary".into(), summary.unwrap_or(Value::Null));
    let truncated = kept.over_budget;
    if truncated {
        structured.insert("truncated".into(), Value::Bool(true));
        if let Some(cursor) = next_cursor {
            structured.insert("next_cursor".into(), cursor);
        }
    }
    if kept.withheld > 0 {
        structured.insert("withheld_events".into(), kept.withheld.into());
    }

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
                        stop_at.map_or(0, |t| t.duration_since(started).as_millis())
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

/// One complete line of the stream, as the verifier classed it.
struct Line<'a> {
    number: u64,
    bytes: &'a [u8],
    kind: LineKind,
}

/// Takes one complete line the verifier did not reject outright into `kept`. An event that
/// does not fit `output` (the tool's `outputSchema`) is withheld and named in `kept.misfits`.
fn take_line(
    tool: &ServedTool,
    invocation: &Invocation,
    budget: usize,
    output: Option<&jsonschema::Validator>,
    line: Line<'_>,
    kept: &mut Collected,
    progress: &mut impl FnMut(ProgressUpdate),
) {
    let number = line.number;
    // The verifier parses framework lines and only scans domain ones: parsed here once, to
    // be checked; it is kept as the text it came in.
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(line.bytes) else {
        return;
    };
    let keep = |kept: &mut Collected, object: Map<String, Value>| {
        if let Some(finding) = output.and_then(|v| misfit(v, number, &object)) {
            if kept.misfits.len() < MISFITS_LISTED + VerifyOptions::default().max_findings {
                kept.misfits.push(finding);
            } else {
                kept.misfits_unlisted += 1;
            }
            return;
        }
        let cost = wire_cost(line.bytes);
        if kept.over_budget || kept.cost + cost > budget {
            kept.over_budget = true;
            kept.withheld += 1;
            return;
        }
        kept.cost += cost;
        // The line as written, unless it holds a carriage return (JSON whitespace, but a line
        // break to an SSE reader): then its compact serialization.
        let text = match std::str::from_utf8(line.bytes) {
            Ok(text) if !text.contains('\r') => text.trim().to_owned(),
            _ => Value::Object(object).to_string(),
        };
        kept.events.push((number, text));
    };
    if line.kind != LineKind::Framework {
        kept.domain_events += 1;
        let past_cap = invocation
            .max_events
            .is_some_and(|m| tool.entry.unbounded && kept.domain_events > m);
        if past_cap {
            kept.withheld += 1;
        } else {
            keep(kept, object);
        }
        return;
    }
    match decode_object(object.clone()).map(|d| d.event) {
        Ok(Event::Meta(_)) => {}
        Ok(Event::Summary(_)) => kept.summary = Some((number, Value::Object(object))),
        Ok(Event::Progress(p)) => {
            let value = p.completed.map_or(0.0, |c| c as f64);
            // MCP: progress MUST increase. A value that does not is not forwarded (the event
            // stays in the result).
            if kept.last_progress.is_none_or(|last| value > last) {
                kept.last_progress = Some(value);
                progress(ProgressUpdate {
                    progress: value,
                    total: p.total.map(|t| t as f64),
                    message: p.message,
                });
            }
            keep(kept, object);
        }
        Ok(Event::Error(e)) => {
            // §9.4: a category this version does not know is forwarded unchanged; the
            // adapter routes it as `internal` (the decoded error says so) and the headline
            // names both.
            let unknown = object
                .get("category")
                .and_then(Value::as_str)
                .filter(|c| Category::parse(c).is_none())
                .map(str::to_owned);
            // The verifier keeps its first `max_findings` findings, and each of these lines
            // has one: a kept finding is about one of the first `max_findings` such lines.
            if unknown.is_some()
                && kept.unknown_category_lines.len() < VerifyOptions::default().max_findings
            {
                kept.unknown_category_lines.push(number);
            }
            let process = aoi::wire::Scope::Process;
            let named = kept.errors.is_empty()
                || (e.scope == process && kept.errors.iter().all(|k| k.scope != process));
            if named {
                kept.errors.push(e);
                kept.unknown_categories.push(unknown);
            }
            keep(kept, object);
        }
        Ok(_) => keep(kept, object),
        // A framework event that breaks its shape is the verifier's finding, not a result.
        Err(_) => {}
    }
}

/// The finding for an event on line `number` that does not fit `output` (checked as the
/// only event of a result), or `None` when it fits.
fn misfit(
    output: &jsonschema::Validator,
    number: u64,
    event: &Map<String, Value>,
) -> Option<Value> {
    let probe = json!({"events": [event], "summary": null});
    let error = output
        .iter_errors(&probe)
        .find(|e| e.instance_path().to_string().starts_with("/events/0"))?;
    let path = error
        .instance_path()
        .to_string()
        .replacen("/events/0", "", 1);
    // jsonschema's message quotes the value, which may be megabytes long.
    let message = aoi::read::bounded_message(format!(
        "line {number}: {}{error}",
        if path.is_empty() {
            String::new()
        } else {
            format!("{path}: ")
        }
    ));
    Some(
        json!({"code": "OUTPUT_SCHEMA_MISMATCH", "level": "violation", "section": "§10", "line": number, "message": message}),
    )
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

fn not_started(tool: &ServedTool, message: String) -> CallOutcome {
    let error = adapter_error(Category::Unavailable, "CLI_NOT_RUNNABLE", &message);
    CallOutcome {
        structured: Structured::without_events(object(
            json!({"summary": null, "adapter_error": error}),
        )),
        is_error: true,
        headline: format!("{} {}: {message}", tool.cli.name, tool.entry.name),
    }
}

/// The map of a JSON object (`json!` of an object literal).
pub(crate) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_cost_counts_the_line_twice_and_its_escapes_once() {
        assert_eq!(wire_cost(br#"{"a":1}"#), 2 * 7 + 2 + 2);
        assert_eq!(wire_cost(br#""\\""#), 2 * 4 + 4 + 2);
    }
}
