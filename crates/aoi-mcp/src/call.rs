//! One `tools/call`: spawn the CLI in machine mode (its own process group, no shell), read
//! its stream through the `aoi` reader and verifier as it arrives, forward `aoi:progress`, and
//! turn the run into `{events, summary}`.

use std::process::Stdio;
use std::time::Duration;

use aoi::read::{decode_object, Event, Frame, Framer, Level, LineKind, ProcessEnd};
use aoi::wire::FrameworkEvent;
use aoi::{Category, Code, ErrorEvent, Verdict, Verifier, VerifyOptions};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::catalog::ServedTool;

/// Bounds of one call.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The run is killed after this long.
    pub timeout: Duration,
    /// At most this many bytes of stdout are kept; past it the run is killed.
    pub max_output: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            timeout: Duration::from_secs(300),
            max_output: 16 << 20,
        }
    }
}

/// How a call ended, before it becomes an MCP result.
#[derive(Debug)]
pub struct CallOutcome {
    /// The structured result: `{events, summary}` and, when something went wrong beyond an
    /// honest failure, `protocol_violation` or `adapter_error`.
    pub structured: Value,
    /// True for an MCP `isError` result.
    pub is_error: bool,
    /// A line for a person or a model, before the JSON.
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

/// Why a run was stopped by the adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Cancelled,
    TimedOut,
    TooMuchOutput,
}

/// Kills the child's whole process group and reaps the child.
async fn kill_group(child: &mut tokio::process::Child) {
    if let Some(pid) = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32))
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill().await;
    let _ = child.wait().await;
}

/// An `aoi:error` of the adapter's own, as the SDK builds one (its `retryable` is the
/// category's, its message one line), marked with `origin: "aoi mcp"`.
pub fn adapter_error(category: Category, code: &'static str, message: impl AsRef<str>) -> Value {
    let error = ErrorEvent::new(category, Code::from_static(code), message).origin("aoi mcp");
    let mut value = serde_json::to_value(&error).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("type".into(), ErrorEvent::TYPE.into());
    }
    value
}

/// Runs `tool` with `argv` (after the program and command words) and `stdin` on its
/// standard input (closed when `None`), forwarding progress through `progress`, until it
/// ends, `cancel` fires, or `bounds` are reached.
pub async fn run(
    tool: &ServedTool,
    argv: Vec<String>,
    stdin: Option<Vec<u8>>,
    bounds: Bounds,
    cancel: CancellationToken,
    mut progress: impl FnMut(ProgressUpdate) + Send,
) -> CallOutcome {
    let cli = &tool.cli;
    let mut command = Command::new(cli.argv.first().cloned().unwrap_or_default());
    command
        .args(&cli.argv[1.min(cli.argv.len())..])
        .args(tool.entry.words())
        .args(&argv)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let error = adapter_error(
                Category::Unavailable,
                "CLI_NOT_RUNNABLE",
                format!("cannot run {}: {e}", cli.name),
            );
            return CallOutcome {
                structured: json!({"events": [], "summary": null, "adapter_error": error}),
                is_error: true,
                headline: format!("{} could not be started: {e}", cli.name),
            };
        }
    };
    if let (Some(bytes), Some(mut input)) = (stdin, child.stdin.take()) {
        // Written beside the reading of stdout, so a CLI that writes before it has read
        // everything cannot deadlock; one that exits unread is a broken pipe, ignored.
        tokio::spawn(async move {
            let _ = input.write_all(&bytes).await;
        });
    }
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let stderr_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(err) = stderr.as_mut() {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = err.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                if buf.len() < 64 << 10 {
                    buf.extend_from_slice(&chunk[..n]);
                }
            }
        }
        buf
    });

    let mut verifier = Verifier::new(VerifyOptions {
        unbounded: tool.entry.unbounded,
        ..VerifyOptions::default()
    });
    if let Some(schema) = cli.compiled() {
        verifier = verifier.with_compiled(schema);
    }
    let mut framer = Framer::new();
    let mut received = 0usize;
    let mut stopped = None;
    let deadline = tokio::time::sleep(bounds.timeout);
    tokio::pin!(deadline);
    let mut events: Vec<Value> = Vec::new();
    let mut errors: Vec<ErrorEvent> = Vec::new();
    let mut summary: Option<Value> = None;
    if let Some(out) = stdout.as_mut() {
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            tokio::select! {
                read = out.read(&mut chunk) => {
                    let n: usize = read.unwrap_or_default();
                    if n == 0 {
                        break;
                    }
                    received += n;
                    if received > bounds.max_output {
                        stopped = Some(Stopped::TooMuchOutput);
                        break;
                    }
                    framer.push(&chunk[..n]);
                    // Complete lines only: a cut last line is never a line (§2).
                    while let Some(frame) = framer.next_frame() {
                        // The verifier parses framework lines and only scans domain ones; the
                        // result needs each event as a JSON value, parsed here once.
                        let kind = verifier.frame(frame);
                        let Frame::Line { bytes: line, .. } = frame else { continue };
                        if kind == LineKind::Invalid {
                            continue;
                        }
                        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(line) else { continue };
                        if kind != LineKind::Framework {
                            events.push(Value::Object(object));
                            continue;
                        }
                        let decoded = decode_object(object.clone());
                        let raw = Value::Object(object);
                        match decoded.map(|d| d.event) {
                            Ok(Event::Meta(_)) => {}
                            Ok(Event::Summary(_)) => summary = Some(raw),
                            Ok(Event::Progress(p)) => {
                                progress(ProgressUpdate {
                                    progress: p.completed.map_or(0.0, |c| c as f64),
                                    total: p.total.map(|t| t as f64),
                                    message: p.message,
                                });
                                events.push(raw);
                            }
                            Ok(Event::Error(e)) => {
                                errors.push(e);
                                events.push(raw);
                            }
                            Ok(_) => events.push(raw),
                            // A framework event that breaks its shape is the verifier's finding,
                            // not a result.
                            Err(_) => {}
                        }
                    }
                }
                () = cancel.cancelled() => { stopped = Some(Stopped::Cancelled); break; }
                () = &mut deadline => { stopped = Some(Stopped::TimedOut); break; }
            }
        }
    }
    if stopped.is_some() {
        kill_group(&mut child).await;
    }
    let status = if stopped.is_some() {
        None
    } else {
        tokio::select! {
            status = child.wait() => status.ok(),
            () = cancel.cancelled() => { stopped = Some(Stopped::Cancelled); kill_group(&mut child).await; None }
            () = &mut deadline => { stopped = Some(Stopped::TimedOut); kill_group(&mut child).await; None }
        }
    };
    let stderr = stderr_task.await.unwrap_or_default();
    if let Some(tail) = framer.finish() {
        verifier.frame(tail);
    }
    let end = status.map(|s| {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(code), _) => ProcessEnd::Exited(code),
            (None, Some(sig)) => ProcessEnd::Signaled(sig),
            (None, None) => ProcessEnd::Exited(-1),
        }
    });
    let report = verifier.finish(end);
    let mut structured = Map::new();
    structured.insert("events".into(), Value::Array(events));
    structured.insert("summary".into(), summary.clone().unwrap_or(Value::Null));
    if let Some(stop) = stopped {
        let (category, code, message) = match stop {
            Stopped::Cancelled => (
                Category::Cancelled,
                "CALL_CANCELLED",
                "the call was cancelled; the CLI's process group was killed".to_owned(),
            ),
            Stopped::TimedOut => (
                Category::Timeout,
                "CALL_TIMED_OUT",
                format!(
                    "the CLI ran longer than {} s and its process group was killed",
                    bounds.timeout.as_secs()
                ),
            ),
            Stopped::TooMuchOutput => (
                Category::Io,
                "OUTPUT_TOO_LARGE",
                format!(
                    "the CLI wrote more than {} bytes; it was killed",
                    bounds.max_output
                ),
            ),
        };
        structured.insert(
            "adapter_error".into(),
            adapter_error(category, code, message.clone()),
        );
        return CallOutcome {
            structured: Value::Object(structured),
            is_error: true,
            headline: message,
        };
    }
    if report.verdict == Verdict::Violation {
        let findings: Vec<Value> = report
            .findings
            .iter()
            .filter(|f| f.level == Level::Violation)
            .map(|f| serde_json::to_value(f).unwrap_or_default())
            .collect();
        let first = report
            .findings
            .iter()
            .find(|f| f.level == Level::Violation)
            .map(ToString::to_string)
            .unwrap_or_default();
        let stderr_line = String::from_utf8_lossy(&stderr)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        let message =
            format!(
            "{} broke the AOI-CLI contract, so its output cannot be trusted as a result: {first}{}",
            tool.cli.name,
            if stderr_line.is_empty() { String::new() } else { format!(" (stderr: {stderr_line})") }
        );
        structured.insert(
            "protocol_violation".into(),
            json!({"findings": findings, "message": message}),
        );
        return CallOutcome {
            structured: Value::Object(structured),
            is_error: true,
            headline: message,
        };
    }
    let ok = report.verdict == Verdict::Succeeded;
    let headline = if ok {
        format!("{} {} succeeded", tool.cli.name, tool.entry.name)
    } else {
        failure_headline(tool, &errors)
    };
    CallOutcome {
        structured: Value::Object(structured),
        is_error: !ok,
        headline,
    }
}

/// What a model should read first about a failed run: the process error, its retry advice,
/// and for an interactive login, that a person has to act (never retried).
fn failure_headline(tool: &ServedTool, errors: &[ErrorEvent]) -> String {
    let error = errors
        .iter()
        .find(|e| e.scope == aoi::wire::Scope::Process)
        .or(errors.first());
    let Some(error) = error else {
        return format!("{} {} failed (ok:false)", tool.cli.name, tool.entry.name);
    };
    let hint = error.hint.as_deref().unwrap_or_default();
    // The message is a sentence of the CLI's, often with its own full stop; the advice that
    // follows starts a sentence of its own.
    let mut text = format!(
        "{} {} failed: {} {}: {}",
        tool.cli.name,
        tool.entry.name,
        error.category,
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
