//! `aoi lint`: the sixteen conformance checks of §18.2 against a tool, per command, reported
//! as a matrix, an AOI stream, SARIF or JUnit.
//!
//! SIGINT or SIGTERM ends the run at once: every process of the tool (every process group,
//! and every descendant that left one) is killed and every sandbox directory removed, then
//! lint exits 130 or 143; in `--output jsonl` its own stream ends with an `aoi:summary`
//! `reason:"cancelled"` first (§7), the checks already streamed standing.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aoi::{
    exit_code, Category, Check, Code, DomainEvent, EmitError, ErrorEvent, Harness, Outcome,
    Severity,
};
use aoi_lint::reaper::{self, Reaper};
use aoi_lint::{
    lint_invocation_streaming, lint_tool_streaming, lint_transcript, CheckId, CheckResult, Config,
    OnCommand, Options, Report,
};
use serde::Serialize;

use crate::cli::{LintArgs, LintFormat};
use crate::exit::{CommandError, Mode};

/// What the run is about.
enum Target {
    Tool(Vec<OsString>),
    Invocation(OsString, Vec<String>),
    Transcript(PathBuf),
}

/// The command's name, as `aoi:meta.command` and `capabilities` say it.
pub const NAME: &str = "lint";

/// The config file lint uses, when it uses one.
fn config_file(path: Option<&Path>) -> Option<PathBuf> {
    let default = Path::new("aoi-lint.toml");
    match path {
        Some(p) => Some(p.to_path_buf()),
        None if default.is_file() => Some(default.to_path_buf()),
        None => None,
    }
}

/// `path` relative to the working directory when it is below it, with `/` separators (a
/// SARIF artifact URI), else as it is.
fn relative_to_cwd(path: &Path) -> String {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| std::fs::canonicalize(cwd).ok())
        .and_then(|cwd| absolute.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf());
    shown.to_string_lossy().replace('\\', "/")
}

/// The config file: `--config`, else `./aoi-lint.toml` when there is one.
fn load_config(path: Option<&Path>) -> Result<Config, ErrorEvent> {
    let default = Path::new("aoi-lint.toml");
    let path = match path {
        Some(p) => p,
        None if default.is_file() => default,
        None => return Ok(Config::default()),
    };
    Config::load(path).map_err(|e| {
        ErrorEvent::new(
            Category::Config,
            Code::from_static("LINT_CONFIG_INVALID"),
            e.to_string(),
        )
        .target(path.display().to_string())
    })
}

/// Finds `program` as a path or on PATH, so an unrunnable target is reported before any
/// check runs.
fn resolve(program: &OsString) -> Result<OsString, ErrorEvent> {
    if let Some(found) = aoi::read::locate_program(program) {
        return Ok(found.into_os_string());
    }
    let path = Path::new(program);
    Err(ErrorEvent::new(
        Category::Unavailable,
        Code::from_static("TOOL_NOT_RUNNABLE"),
        format!(
            "{} is not an executable file or a program on PATH",
            path.display()
        ),
    )
    .target(path.display().to_string()))
}

/// Runs `aoi lint`.
pub fn run(args: LintArgs) -> Result<ExitCode, CommandError> {
    let format = args.output;
    let mode = Mode::new(format == LintFormat::Jsonl, args.no_color);
    let target = match (&args.tool, &args.transcript, args.invocation.split_first()) {
        (Some(tool), None, None) => Target::Tool(vec![tool.clone()]),
        (None, Some(file), None) => Target::Transcript(file.clone()),
        (None, None, Some((program, rest))) => Target::Invocation(
            program.clone(),
            rest.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        ),
        (None, None, None) => {
            return Err(mode.usage(
                NAME,
                "say what to lint: --tool TOOL, --transcript FILE, or -- TOOL ARGS",
            ))
        }
        _ => return Err(mode.usage(NAME, "give one of --tool, --transcript or -- TOOL ARGS")),
    };
    let config_path = config_file(args.config.as_deref());
    let config = load_config(args.config.as_deref()).map_err(|e| mode.failed(NAME, e))?;
    let mut options = Options {
        only: args
            .checks
            .iter()
            .filter_map(|n| CheckId::new(*n))
            .collect(),
        commands: args.commands.clone(),
        strict_profile: args.strict_profile,
        ..Options::default()
    };
    if let Some(jobs) = args.jobs {
        options.jobs = usize::from(jobs);
    }
    // Orphans of the tool come to lint, which kills and reaps them; without it (no prctl)
    // they still are found and killed, and init reaps them.
    let _ = reaper::become_subreaper();
    // A lint killed outright (SIGKILL) could not remove its sandboxes or stop its tool: that is
    // done here, for every earlier lint that is no longer alive.
    let _ = reaper::clean_up_after_dead_runs();
    let reaper = Arc::clone(&options.reaper);
    let run = LintRun {
        target,
        config,
        config_path,
        options,
        schema: args.schema.clone(),
        badge: args.badge.clone(),
    };
    let render: fn(&Report, bool) -> String = match format {
        LintFormat::Jsonl => return Ok(machine_run(run, args.allow_incomplete)),
        LintFormat::Human => aoi_lint::report::human,
        LintFormat::Sarif => |report, _| {
            let mut text =
                serde_json::to_string_pretty(&aoi_lint::report::sarif(report)).unwrap_or_default();
            text.push('\n');
            text
        },
        LintFormat::Junit => |report, _| aoi_lint::report::junit(report),
    };
    end_on_signal(Arc::clone(&reaper));
    let linted = run.lint(&|_| {});
    if let Some(code) = signalled() {
        // The signal thread is ending the run: its sweep first, then no report.
        reaper.cancel_all();
        return Ok(ExitCode::from(code));
    }
    let report = linted.map_err(|e| mode.failed(NAME, e))?;
    let code = lint_exit(&report, args.allow_incomplete);
    let color = aoi::surface::color::enabled(&io::stdout(), args.no_color);
    crate::exit::write_stdout(mode, NAME, "the report", &render(&report, color))?;
    Ok(ExitCode::from(code))
}

/// Everything one lint run needs once its arguments are parsed.
struct LintRun {
    target: Target,
    config: Config,
    config_path: Option<PathBuf>,
    options: Options,
    schema: Option<PathBuf>,
    badge: Option<PathBuf>,
}

impl LintRun {
    /// Lints the target, handing each command's results to `on_command` as they are known,
    /// and writes the badge when asked.
    fn lint(self, on_command: OnCommand<'_>) -> Result<Report, ErrorEvent> {
        let target_path: Option<PathBuf> = match &self.target {
            Target::Tool(argv) => Some(PathBuf::from(&argv[0])),
            Target::Invocation(program, _) => Some(PathBuf::from(program)),
            Target::Transcript(path) => Some(path.clone()),
        };
        let mut report = match self.target {
            Target::Tool(argv) => {
                let program = resolve(&argv[0])?;
                lint_tool_streaming(vec![program], self.config, &self.options, on_command)
            }
            Target::Invocation(program, rest) => {
                let program = resolve(&program)?;
                lint_invocation_streaming(program, rest, self.config, &self.options, on_command)
            }
            Target::Transcript(path) => {
                let report = transcript(&path, self.schema.as_deref())?;
                on_command(&report.results);
                report
            }
        };
        report.artifact = self
            .config_path
            .or(target_path)
            .map(|p| relative_to_cwd(&p));
        report.invocation = std::env::args().collect();
        if let Some(path) = &self.badge {
            if let Some(svg) = aoi_lint::report::badge(&report) {
                std::fs::write(path, svg).map_err(|e| {
                    ErrorEvent::new(
                        Category::Io,
                        Code::from_static("BADGE_WRITE_FAILED"),
                        format!("cannot write {}: {e}", path.display()),
                    )
                    .target(path.display().to_string())
                })?;
            }
        }
        Ok(report)
    }
}

/// The exit code of the signal that cancelled a report written at the end, once one arrived.
static SIGNALLED: AtomicU8 = AtomicU8::new(0);

fn signalled() -> Option<u8> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        code => Some(code),
    }
}

/// For the reports written at the end (human, SARIF, JUnit): the first SIGINT or SIGTERM kills
/// every process of the tool, removes every sandbox and exits 130 or 143 at once.
fn end_on_signal(reaper: Arc<Reaper>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        // Without a handler the signal kills lint; the sweep of the next lint run cannot help,
        // but the tool's process groups still get the terminal's SIGINT.
        return;
    };
    std::thread::spawn(move || {
        if let Some(raw) = signals.forever().next() {
            let code = if raw == SIGTERM {
                exit_code::SIGTERM
            } else {
                exit_code::SIGINT
            };
            SIGNALLED.store(code, Ordering::SeqCst);
            reaper.cancel_all();
            std::process::exit(i32::from(code));
        }
    });
}

fn transcript(path: &Path, schema: Option<&Path>) -> Result<Report, ErrorEvent> {
    let open = |p: &Path| {
        std::fs::read(p).map_err(|e| ErrorEvent::cannot_open(&p.display().to_string(), &e))
    };
    let stream = open(path)?;
    let schema = match schema {
        Some(p) => Some(serde_json::from_slice(&open(p)?).map_err(|e| {
            ErrorEvent::new(
                Category::Validation,
                Code::from_static("SCHEMA_NOT_JSON"),
                format!("{} is not JSON: {e}", p.display()),
            )
            .target(p.display().to_string())
        })?),
        None => None,
    };
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(lint_transcript(&name, &stream, schema.as_ref()))
}

/// The summary's properties: what a consumer needs without re-reading every check.
#[derive(Serialize)]
struct Totals {
    pass: usize,
    fail: usize,
    not_applicable: usize,
    could_not_run: usize,
}

/// A lint verdict for the whole tool, before the summary.
#[derive(Serialize, schemars::JsonSchema)]
pub struct LintVerdict {
    /// The tool linted.
    tool: String,
    /// Its version, when discovery gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_version: Option<String>,
    /// The commands linted.
    commands: Vec<String>,
    /// True when no applicable check failed.
    passed: bool,
    /// The factors every applicable check of which passed.
    factors_passed: Vec<String>,
    /// Pieces of this project's profile advice (docs/discovery.md): they fail nothing unless
    /// `--strict-profile` was given.
    advice: u64,
    /// Processes of the tool lint ran.
    processes: u64,
    /// Whether discovery ran with the network unreachable.
    network_isolated: bool,
}

impl DomainEvent for LintVerdict {
    const TYPE: &'static str = "lint_verdict";
}

/// Nothing failed, but some applicable check could not run: conformance is not proven.
pub const INCOMPLETE: u8 = 2;

/// The exit status of a lint run: 1 when a check failed, [`INCOMPLETE`] when nothing failed but
/// something could not run (unless `allow_incomplete`), else 0.
fn lint_exit(report: &Report, allow_incomplete: bool) -> u8 {
    if !report.passed() {
        exit_code::FAILURE
    } else if !report.complete() && !allow_incomplete {
        INCOMPLETE
    } else {
        exit_code::OK
    }
}

/// One result as an `aoi:check` event; `properties.elapsed_ms` is the check's own wall time.
fn check_event(r: &CheckResult) -> Check {
    let info = r.check.info();
    let (ok, severity) = match r.outcome {
        aoi_lint::CheckOutcome::Pass | aoi_lint::CheckOutcome::NotApplicable => {
            (true, Severity::Info)
        }
        aoi_lint::CheckOutcome::Fail => (false, Severity::Error),
        aoi_lint::CheckOutcome::CouldNotRun => (true, Severity::Warning),
    };
    let mut properties = serde_json::Map::new();
    properties.insert("check".into(), r.check.number().into());
    properties.insert("command".into(), r.command.clone().into());
    properties.insert("outcome".into(), r.outcome.as_str().into());
    properties.insert(
        "factors".into(),
        info.factors
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .into(),
    );
    properties.insert(
        "elapsed_ms".into(),
        u64::try_from(r.elapsed.as_millis())
            .unwrap_or(u64::MAX)
            .into(),
    );
    if !r.evidence.is_empty() {
        properties.insert(
            "evidence".into(),
            serde_json::to_value(&r.evidence).unwrap_or_default(),
        );
    }
    if r.outcome == aoi_lint::CheckOutcome::Fail {
        // The sentence of the spec a failure breaks: its row of §18.2, word for word.
        properties.insert(
            "spec".into(),
            format!("§18.2 #{}: {}", r.check, info.quote).into(),
        );
    }
    Check {
        name: check_name(r, ""),
        ok,
        severity: Some(severity),
        detail: Some(r.detail.clone()),
        hint: None,
        properties: Some(properties),
    }
}

/// The `aoi:check` name of a result: `"6 confirmation · delete"` and `suffix`.
fn check_name(r: &CheckResult, suffix: &str) -> String {
    let info = r.check.info();
    if r.command.is_empty() {
        format!("{} {}{suffix}", r.check, info.name)
    } else {
        format!("{} {} · {}{suffix}", r.check, info.name, r.command)
    }
}

/// One piece of the profile's advice as an `aoi:check` event: `ok: true` (it fails nothing),
/// severity `info`, `properties.level` and `properties.outcome` both `advice`, the fix in
/// `hint`.
fn advice_event(r: &CheckResult, advice: &aoi_lint::Advice) -> Check {
    let mut properties = serde_json::Map::new();
    properties.insert("check".into(), r.check.number().into());
    properties.insert("command".into(), r.command.clone().into());
    properties.insert("level".into(), "advice".into());
    properties.insert("outcome".into(), "advice".into());
    if !advice.evidence.is_empty() {
        properties.insert(
            "evidence".into(),
            serde_json::to_value(&advice.evidence).unwrap_or_default(),
        );
    }
    Check {
        name: check_name(r, " (advice)"),
        ok: true,
        severity: Some(Severity::Info),
        detail: Some(advice.detail.clone()),
        hint: Some(advice.fix.clone()),
        properties: Some(properties),
    }
}

/// `--output jsonl`: each command's `aoi:check` events as soon as all its checks finished,
/// then the verdict and the summary. A signal (the harness turns it into cancellation) ends
/// every process of the tool and every sandbox at once, and the stream with `reason:"cancelled"`;
/// so does a closed stdout, quietly (141).
fn machine_run(run: LintRun, allow_incomplete: bool) -> ExitCode {
    let reaper = Arc::clone(&run.options.reaper);
    Harness::new(crate::emitter(NAME)).run(|out| {
        let token = out.cancel_token();
        let watcher = Arc::clone(&reaper);
        std::thread::spawn(move || {
            while token.sleep(Duration::from_secs(3600)).is_none() {}
            watcher.cancel_all();
        });
        let token = out.cancel_token();
        let emitter = Mutex::new(&mut *out);
        let lost: Mutex<Option<EmitError>> = Mutex::new(None);
        let report = run.lint(&|results| {
            let mut out = emitter.lock().unwrap_or_else(|p| p.into_inner());
            let mut lost = lost.lock().unwrap_or_else(|p| p.into_inner());
            if lost.is_some() {
                return;
            }
            // Flushed per command: a consumer sees each command's verdict as it is known.
            let written = results
                .iter()
                .try_for_each(|r| {
                    out.check(&check_event(r))?;
                    r.advice
                        .iter()
                        .try_for_each(|advice| out.check(&advice_event(r, advice)))
                })
                .and_then(|()| out.flush());
            if let Err(e) = written {
                // Nobody is reading (or a signal arrived): stop the tool now.
                *lost = Some(e);
                reaper.cancel_all();
            }
        });
        if token.cancelled().is_some() {
            // Waits for the watcher's sweep, then sweeps again for whatever a check started
            // meanwhile; the harness writes the cancelled summary.
            reaper.cancel_all();
            return Ok(Outcome::cancelled());
        }
        if let Some(e) = lost.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e.into());
        }
        let report = report?;
        let wanted = lint_exit(&report, allow_incomplete);
        out.emit(&LintVerdict {
            tool: report.tool.clone(),
            tool_version: report.tool_version.clone(),
            commands: report.commands.clone(),
            passed: report.passed(),
            factors_passed: report
                .factors_passed()
                .iter()
                .map(|f| f.name().to_owned())
                .collect(),
            advice: report.advice().count() as u64,
            processes: report.processes,
            network_isolated: report.network_isolated,
        })?;
        let totals = Totals {
            pass: report.count(aoi_lint::CheckOutcome::Pass),
            fail: report.count(aoi_lint::CheckOutcome::Fail),
            not_applicable: report.count(aoi_lint::CheckOutcome::NotApplicable),
            could_not_run: report.count(aoi_lint::CheckOutcome::CouldNotRun),
        };
        let outcome = if wanted == exit_code::OK {
            Outcome::success()
        } else {
            Outcome::failed().exit_code(wanted)
        };
        Ok(outcome
            .property("results", serde_json::to_value(totals).unwrap_or_default())
            .property("escaped_processes", report.escaped))
    })
}
