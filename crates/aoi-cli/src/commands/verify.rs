//! `aoi verify`: the stream gate of spec §13.2.
//!
//! It replaces `jq -e 'select(.type=="aoi:summary") | .ok == true'` and catches what that cannot:
//! a half-written last line (§2), lines lost in the middle (§8.1), a summary that lies about its
//! counters, malformed errors (§9), v0.2 shapes (§5.2).

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use aoi::read::{process_end, Frame, Level, LineReader, ProcessEnd, Session};
use aoi::surface::term::printable_line;
use aoi::{
    exit_code, Category, Code, DomainEvent, ErrorEvent, Failure, Finding, Harness, Outcome, Report,
    Verdict, Verifier, VerifyOptions,
};
use serde::Serialize;

use aoi::surface::flags::OutputMode;

use crate::cli::VerifyArgs;
use crate::exit::{CommandError, Mode};
use aoi::surface::color::Paint;

/// Where the stream comes from.
#[derive(Debug)]
enum Source {
    Stdin,
    File(PathBuf),
    Command(Vec<OsString>),
}

impl Source {
    fn label(&self) -> String {
        match self {
            Source::Stdin => "standard input".to_owned(),
            Source::File(path) => path.display().to_string(),
            Source::Command(argv) => argv
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// A checked stream and, for a command, how the process ended.
struct Checked {
    report: Report,
    end: Option<ProcessEnd>,
}

/// The command's name, as `aoi:meta.command` and `capabilities` say it.
pub const NAME: &str = "verify";

/// Runs `aoi verify`.
pub fn run(args: VerifyArgs) -> Result<ExitCode, CommandError> {
    let mode = Mode::new(
        args.output.output != OutputMode::Human,
        args.output.no_color,
    );
    let source = match (&args.file, args.command.is_empty()) {
        (Some(_), false) => {
            return Err(mode.usage(NAME, "give either FILE or `-- COMMAND`, not both"))
        }
        (Some(path), true) if path.as_os_str() != "-" => Source::File(path.clone()),
        (_, true) => Source::Stdin,
        (None, false) => Source::Command(args.command.clone()),
    };
    if args.pass_through && mode.machine() {
        return Err(mode.usage(
            NAME,
            "--pass-through forwards the stream on stdout, so it cannot be combined with --output jsonl",
        ));
    }
    let opts = VerifyOptions {
        unbounded: args.unbounded,
        max_findings: args.max_findings,
        ..VerifyOptions::default()
    };
    // The verifier, with the published schema compiled once, before any stream is read.
    let verifier = load_schema(&args)
        .and_then(|schema| verifier(opts, schema))
        .map_err(|e| mode.failed(NAME, e.into_event()))?;
    if mode.machine() {
        Ok(machine_run(&source, verifier))
    } else {
        human_run(&args, mode, &source, verifier)
    }
}

/// A verifier with `opts`, checking events against `schema` when there is one.
fn verifier(opts: VerifyOptions, schema: Option<Schema>) -> Result<Verifier, Failure> {
    let v = Verifier::new(opts);
    let Some(Schema { value, origin }) = schema else {
        return Ok(v);
    };
    v.with_schema(&value).map_err(|e| {
        ErrorEvent::new(
            Category::Validation,
            Code::from_static("SCHEMA_INVALID"),
            format!("the schema from {origin} does not compile: {e}"),
        )
        .into()
    })
}

/// A published event schema and where it came from.
struct Schema {
    value: serde_json::Value,
    origin: String,
}

/// Loads `--schema FILE` or runs `--schema-from PROGRAM schema --output json`.
fn load_schema(args: &VerifyArgs) -> Result<Option<Schema>, Failure> {
    let (bytes, origin) = if let Some(path) = &args.schema {
        let bytes = std::fs::read(path).map_err(|e| open_error(path, &e))?;
        (bytes, path.display().to_string())
    } else if let Some(program) = &args.schema_from {
        let output = Command::new(program)
            .args(["schema", "--output", "json"])
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| spawn_error(program, &e))?;
        let label = format!("{} schema --output json", program.to_string_lossy());
        if !output.status.success() {
            return Err(ErrorEvent::new(
                Category::Unavailable,
                Code::from_static("SCHEMA_COMMAND_FAILED"),
                format!("`{label}` failed ({})", output.status),
            )
            .retryable(false)
            .into());
        }
        (output.stdout, label)
    } else {
        return Ok(None);
    };
    let schema: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        ErrorEvent::new(
            Category::Validation,
            Code::from_static("SCHEMA_NOT_JSON"),
            format!("the schema from {origin} is not JSON: {e}"),
        )
    })?;
    Ok(Some(Schema {
        value: schema,
        origin,
    }))
}

fn human_run(
    args: &VerifyArgs,
    mode: Mode,
    source: &Source,
    verifier: Verifier,
) -> Result<ExitCode, CommandError> {
    let checked = if args.pass_through {
        let stdout = io::stdout();
        let mut relay = BufWriter::with_capacity(64 * 1024, stdout.lock());
        let checked = check(source, verifier, Some(&mut relay));
        let flushed = relay.flush();
        match (checked, flushed) {
            (Ok(c), Ok(())) => Ok(c),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(relay_error(&e).into()),
        }
    } else {
        check(source, verifier, None)
    };
    let checked = match checked {
        Ok(c) => c,
        Err(e) if e.event().code.as_str() == "BROKEN_PIPE" => {
            return Err(mode.write_failed(NAME, "the stream", io::ErrorKind::BrokenPipe.into()))
        }
        Err(e) => return Err(mode.failed(NAME, e.into_event())),
    };
    if !args.quiet {
        let no_color = args.output.no_color;
        // With --pass-through the stream is on stdout and the report on stderr. A report
        // nobody can read is no verdict: the write error ends the run.
        let written = if args.pass_through {
            let text = render(&checked, source, Paint::for_stream(&io::stderr(), no_color));
            io::stderr().write_all(text.as_bytes())
        } else {
            let text = render(&checked, source, Paint::for_stream(&io::stdout(), no_color));
            io::stdout().write_all(text.as_bytes())
        };
        written.map_err(|e| mode.write_failed(NAME, "the report", e))?;
    }
    Ok(ExitCode::from(verdict_exit(checked.report.verdict)))
}

/// The exit status for a verdict: 0, 1 or 65.
fn verdict_exit(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Succeeded | Verdict::Unterminated => exit_code::OK,
        Verdict::Failed => exit_code::FAILURE,
        Verdict::Violation => exit_code::DATA_ERR,
    }
}

fn machine_run(source: &Source, verifier: Verifier) -> ExitCode {
    Harness::new(crate::emitter(NAME)).run(|out| {
        let checked = check(source, verifier, None)?;
        let report = &checked.report;
        for finding in &report.findings {
            out.emit(&FindingEvent(finding))?;
        }
        out.emit(&VerdictEvent::new(&checked))?;
        out.note_input(report.domain_events);
        out.note_upstream_counts(report.errors, report.warnings);
        let upstream = report.upstream.clone();
        let with_upstream = |o: Outcome| match upstream.clone() {
            Some(up) => o.upstream(up),
            None => o,
        };
        match report.verdict {
            Verdict::Succeeded | Verdict::Unterminated => Ok(with_upstream(Outcome::success())),
            Verdict::Failed => {
                let outcome = match report.caused_by.clone() {
                    Some(cause) => Outcome::failed().caused_by(cause),
                    None => Outcome::failed(),
                };
                Ok(with_upstream(outcome))
            }
            Verdict::Violation => {
                out.error(&violation_error(report))?;
                Ok(with_upstream(Outcome::failed()))
            }
        }
    })
}

fn violation_error(report: &Report) -> ErrorEvent {
    let first = report.findings.iter().find(|f| f.level == Level::Violation);
    let mut message = format!(
        "the stream violates AOI-CLI v1.0-alpha: {} violation(s)",
        report.violations
    );
    if let Some(f) = first {
        message.push_str(&format!(", first {} ({})", f.code, f.section));
        if let Some(line) = f.line {
            message.push_str(&format!(" at line {line}"));
        }
    }
    ErrorEvent::new(
        Category::Validation,
        Code::from_static("STREAM_VIOLATES_PROTOCOL"),
        message,
    )
}

/// Reads and verifies the stream, forwarding complete lines to `relay` when given.
fn check(
    source: &Source,
    verifier: Verifier,
    relay: Option<&mut dyn Write>,
) -> Result<Checked, Failure> {
    match source {
        Source::Stdin => {
            let stdin = io::stdin();
            let verifier = verify_stream(stdin.lock(), verifier, relay)?;
            Ok(Checked {
                report: verifier.finish(None),
                end: None,
            })
        }
        Source::File(path) => {
            let file = File::open(path).map_err(|e| open_error(path, &e))?;
            let verifier = verify_stream(file, verifier, relay)?;
            Ok(Checked {
                report: verifier.finish(None),
                end: None,
            })
        }
        Source::Command(argv) => {
            let (program, rest) = argv
                .split_first()
                .ok_or_else(|| ErrorEvent::usage("no command after `--`"))?;
            let mut session = Session::spawn_with(Command::new(program).args(rest), verifier)
                .map_err(|e| spawn_error(program, &e))?;
            let relayed = relay_session(&mut session, relay);
            if relayed.is_err() {
                let _ = session.kill();
            }
            let completion = session
                .finish()
                .map_err(|e| read_error("the command's stream", &e))?;
            relayed?;
            let end = process_end(completion.status);
            Ok(Checked {
                report: completion.report,
                end: Some(end),
            })
        }
    }
}

/// Reads a session's stream to the end, forwarding complete lines to `relay` when given.
fn relay_session(session: &mut Session, relay: Option<&mut dyn Write>) -> Result<(), Failure> {
    let Some(out) = relay else {
        return Ok(());
    };
    loop {
        if !session.has_buffered_frame() {
            out.flush().map_err(|e| relay_error(&e))?;
        }
        let frame = session
            .next_frame()
            .map_err(|e| read_error("the command's stream", &e))?;
        let not_relayed = match frame {
            None => return Ok(()),
            Some(frame) => relay_frame(out, frame)?,
        };
        if let Some((number, len)) = not_relayed {
            session.not_relayed(number, len);
        }
    }
}

/// Forwards one frame: a complete line with its `\n`; a cut tail is dropped (a naive reader
/// downstream would take a cut summary for a whole one, §2); a line too long to hold is
/// returned so the verifier can say it was not relayed.
fn relay_frame(out: &mut dyn Write, frame: Frame<'_>) -> Result<Option<(u64, u64)>, Failure> {
    match frame {
        Frame::Line { bytes, .. } => {
            out.write_all(bytes)
                .and_then(|()| out.write_all(b"\n"))
                .map_err(|e| relay_error(&e))?;
            Ok(None)
        }
        Frame::Truncated { .. } => Ok(None),
        Frame::TooLong { number, len } => Ok(Some((number, len))),
    }
}

fn verify_stream<R: Read>(
    source: R,
    mut verifier: Verifier,
    mut relay: Option<&mut dyn Write>,
) -> Result<Verifier, Failure> {
    let mut reader = LineReader::new(source);
    loop {
        if let Some(out) = relay.as_deref_mut() {
            if !reader.has_buffered_frame() {
                out.flush().map_err(|e| relay_error(&e))?;
            }
        }
        let frame = match reader.next() {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => return Err(read_error("the stream", &e).into()),
        };
        if let Some(out) = relay.as_deref_mut() {
            if let Some((number, len)) = relay_frame(out, frame)? {
                verifier.not_relayed(number, len);
            }
        }
        verifier.frame(frame);
    }
    Ok(verifier)
}

/// Reading `what` failed.
fn read_error(what: &str, e: &io::Error) -> ErrorEvent {
    ErrorEvent::new(
        Category::Io,
        Code::from_static("READ_FAILED"),
        format!("reading {what} failed: {e}"),
    )
}

fn relay_error(e: &io::Error) -> ErrorEvent {
    if e.kind() == io::ErrorKind::BrokenPipe {
        ErrorEvent::new(
            Category::Io,
            Code::from_static("BROKEN_PIPE"),
            "downstream closed the pipe",
        )
    } else {
        ErrorEvent::new(
            Category::Io,
            Code::from_static("WRITE_FAILED"),
            format!("forwarding the stream failed: {e}"),
        )
    }
}

fn open_error(path: &Path, e: &io::Error) -> ErrorEvent {
    ErrorEvent::cannot_open(&path.display().to_string(), e)
}

fn spawn_error(program: &OsString, e: &io::Error) -> ErrorEvent {
    let name = program.to_string_lossy();
    let (category, code) = match e.kind() {
        io::ErrorKind::NotFound => (Category::NotFound, "COMMAND_NOT_FOUND"),
        io::ErrorKind::PermissionDenied => (Category::Authz, "COMMAND_NOT_EXECUTABLE"),
        _ => (Category::Unavailable, "SPAWN_FAILED"),
    };
    ErrorEvent::new(
        category,
        Code::from_static(code),
        format!("cannot run {name}: {e}"),
    )
    .retryable(false)
    .target(name.into_owned())
}

/// A finding as a domain event of `aoi`'s schema.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FindingEvent<'a>(&'a Finding);

impl DomainEvent for FindingEvent<'_> {
    const TYPE: &'static str = "finding";
}

/// The verdict on the stream, one per run.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct VerdictEvent<'a> {
    verdict: &'static str,
    lines: u64,
    domain_events: u64,
    errors: u64,
    warnings: u64,
    violations: u64,
    notices: usize,
    suppressed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<aoi::Reason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
}

impl<'a> VerdictEvent<'a> {
    fn new(checked: &'a Checked) -> VerdictEvent<'a> {
        let r = &checked.report;
        VerdictEvent {
            verdict: r.verdict.as_str(),
            lines: r.lines,
            domain_events: r.domain_events,
            errors: r.errors,
            warnings: r.warnings,
            violations: r.violations,
            notices: r
                .findings
                .iter()
                .filter(|f| f.level == Level::Notice)
                .count(),
            suppressed: r.suppressed,
            run: r.run.as_deref(),
            ok: r.summary.as_ref().map(|s| s.ok),
            reason: r.summary.as_ref().and_then(|s| s.reason),
            exit_code: match checked.end {
                Some(ProcessEnd::Exited(code)) => Some(code),
                _ => None,
            },
            signal: match checked.end {
                Some(ProcessEnd::Signaled(sig)) => Some(sig),
                _ => None,
            },
        }
    }
}

impl DomainEvent for VerdictEvent<'_> {
    const TYPE: &'static str = "verdict";
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The human report.
fn render(checked: &Checked, source: &Source, style: Paint) -> String {
    let r = &checked.report;
    let notices = r
        .findings
        .iter()
        .filter(|f| f.level == Level::Notice)
        .count() as u64;
    let mut out = String::new();
    let headline = match r.verdict {
        Verdict::Succeeded => format!(
            "{} conforming AOI stream; the run succeeded (ok:true)",
            style.good("✓")
        ),
        Verdict::Failed => {
            let why = match (&r.summary, checked.end) {
                (Some(s), _) if s.ok => {
                    "ok:true, but it carries framework events this version cannot interpret"
                        .to_owned()
                }
                (Some(s), _) => format!(
                    "ok:false, reason: {}",
                    s.reason.map_or("none given", |r| r.as_str())
                ),
                (None, Some(ProcessEnd::Exited(code))) if code != 0 => {
                    format!("no summary: the process exited {code}")
                }
                (None, Some(ProcessEnd::Signaled(sig))) => {
                    format!("no summary: the process was killed by signal {sig}")
                }
                (None, _) => "no summary: a process-scope error ended it".to_owned(),
            };
            format!(
                "{} conforming AOI stream; the run {} ({why})",
                style.warn("✓"),
                style.warn("failed")
            )
        }
        Verdict::Unterminated => format!(
            "{} conforming unbounded AOI stream; it ended without a summary",
            style.good("✓")
        ),
        Verdict::Violation => format!(
            "{} {} AOI-CLI v1.0-alpha: {}, {}",
            style.bad("✗"),
            style.bad("the stream violates"),
            plural(r.violations, "violation", "violations"),
            plural(notices, "notice", "notices")
        ),
    };
    out.push_str(&headline);
    out.push('\n');
    let mut facts = Vec::new();
    if let Some(meta) = &r.meta {
        let mut who = meta.tool.clone().unwrap_or_else(|| "unknown tool".into());
        if let Some(v) = &meta.tool_version {
            who.push(' ');
            who.push_str(v);
        }
        if let (Some(name), Some(version)) = (&meta.schema_name, &meta.schema_version) {
            who.push_str(&format!(" · {name} {version}"));
        }
        if let Some(v) = &meta.aoi_version {
            who.push_str(&format!(" · aoi {v}"));
        }
        facts.push(("from", who));
    }
    facts.push(("source", source.label()));
    if let Some(end) = checked.end {
        facts.push((
            "process",
            match end {
                ProcessEnd::Exited(code) => format!("exited {code}"),
                ProcessEnd::Signaled(sig) => format!("killed by signal {sig}"),
            },
        ));
    }
    facts.push((
        "lines",
        format!(
            "{}: {}, {}, {}",
            r.lines,
            plural(r.domain_events, "domain event", "domain events"),
            plural(r.warnings, "warning", "warnings"),
            plural(r.errors, "error", "errors"),
        ),
    ));
    if let Some(run) = &r.run {
        facts.push(("run", run.clone()));
    }
    if r.verdict == Verdict::Failed {
        if let Some(c) = &r.caused_by {
            let mut text = format!("{} {}", c.category, c.code);
            if let Some(origin) = &c.origin {
                text.push_str(&format!(" from {origin}"));
            }
            text.push_str(if c.retryable {
                ", retryable"
            } else {
                ", not retryable"
            });
            if let Some(ms) = c.retry_after_ms {
                text.push_str(&format!(" after {ms} ms"));
            }
            facts.push(("caused by", text));
        }
    }
    // Every value but the counts comes from the stream or the command line: shown escaped,
    // never acted on by the terminal.
    for (key, value) in facts {
        let value = printable_line(&value);
        out.push_str(&format!("  {} {value}\n", style.dim(&format!("{key:>9}"))));
    }
    if !r.findings.is_empty() {
        out.push('\n');
        out.push_str(&findings_table(&r.findings, style));
    }
    if r.suppressed > 0 {
        out.push_str(&format!(
            "  {}\n",
            style.dim(&format!(
                "… and {} more (raise --max-findings to see them)",
                r.suppressed
            ))
        ));
    }
    out
}

fn findings_table(findings: &[Finding], style: Paint) -> String {
    let line_w = findings
        .iter()
        .map(|f| f.line.map_or(1, |l| l.to_string().len()))
        .max()
        .unwrap_or(1)
        .max(4);
    let code_w = findings
        .iter()
        .map(|f| f.code.as_str().len())
        .max()
        .unwrap_or(4);
    let sect_w = findings
        .iter()
        .map(|f| f.section.chars().count())
        .max()
        .unwrap_or(7)
        .max(7);
    let mut out = format!(
        "  {}\n",
        style.bold(&format!(
            "{:>line_w$}  {:<9}  {:<code_w$}  {:<sect_w$}  MESSAGE",
            "LINE", "LEVEL", "CODE", "SECTION"
        ))
    );
    for f in findings {
        let line = f.line.map_or_else(|| "-".to_owned(), |l| l.to_string());
        let level = match f.level {
            Level::Violation => style.bad(&format!("{:<9}", "violation")),
            Level::Notice => style.warn(&format!("{:<9}", "notice")),
        };
        let section_pad = sect_w - f.section.chars().count();
        out.push_str(&format!(
            "  {line:>line_w$}  {level}  {:<code_w$}  {}{}  {}\n",
            f.code.as_str(),
            printable_line(&f.section),
            " ".repeat(section_pad),
            printable_line(&f.message)
        ));
    }
    out
}
