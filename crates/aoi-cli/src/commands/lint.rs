//! `aoi lint`: the sixteen conformance checks of §18.2 against a tool, per command, reported
//! as a matrix, an AOI stream, SARIF or JUnit.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::{exit_code, Category, Check, Code, DomainEvent, ErrorEvent, Harness, Outcome, Severity};
use aoi_lint::{lint_invocation, lint_tool, lint_transcript, CheckId, Config, Options, Report};
use serde::Serialize;

use crate::cli::{LintArgs, LintFormat};
use crate::machine;

/// What the run is about.
enum Target {
    Tool(Vec<OsString>),
    Invocation(OsString, Vec<String>),
    Transcript(PathBuf),
}

fn fail(e: ErrorEvent, format: LintFormat, no_color: bool) -> ExitCode {
    if format == LintFormat::Jsonl {
        return Harness::new(machine::emitter("lint")).run(|_| Err(e.into()));
    }
    aoi::app::human_error(&e, !no_color && aoi::surface::color::env_allows())
}

fn usage(message: &str, format: LintFormat) -> ExitCode {
    if format == LintFormat::Jsonl {
        return ExitCode::from(machine::usage_error(message));
    }
    let _ = writeln!(
        io::stderr(),
        "error: {message}\n\nFor more information, try 'aoi lint --help'."
    );
    ExitCode::from(exit_code::USAGE)
}

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
pub fn run(args: LintArgs) -> ExitCode {
    let format = args.format;
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
            return usage(
                "say what to lint: --tool TOOL, --transcript FILE, or -- TOOL ARGS",
                format,
            )
        }
        _ => return usage("give one of --tool, --transcript or -- TOOL ARGS", format),
    };
    let config_path = config_file(args.config.as_deref());
    let config = match load_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(e, format, args.no_color),
    };
    let mut options = Options {
        only: args
            .checks
            .iter()
            .filter_map(|n| CheckId::new(*n))
            .collect(),
        commands: args.commands.clone(),
        ..Options::default()
    };
    if let Some(jobs) = args.jobs {
        options.jobs = usize::from(jobs);
    }
    let target_path: Option<PathBuf> = match &target {
        Target::Tool(argv) => Some(PathBuf::from(&argv[0])),
        Target::Invocation(program, _) => Some(PathBuf::from(program)),
        Target::Transcript(path) => Some(path.clone()),
    };
    let report = match target {
        Target::Tool(argv) => match resolve(&argv[0]) {
            Ok(program) => lint_tool(vec![program], config, &options),
            Err(e) => return fail(e, format, args.no_color),
        },
        Target::Invocation(program, rest) => match resolve(&program) {
            Ok(program) => lint_invocation(program, rest, config, &options),
            Err(e) => return fail(e, format, args.no_color),
        },
        Target::Transcript(path) => match transcript(&path, args.schema.as_deref()) {
            Ok(report) => report,
            Err(e) => return fail(e, format, args.no_color),
        },
    };
    let mut report = report;
    report.artifact = config_path.or(target_path).map(|p| relative_to_cwd(&p));
    report.invocation = std::env::args().collect();
    if let Some(path) = &args.badge {
        if let Some(svg) = aoi_lint::report::badge(&report) {
            if let Err(e) = std::fs::write(path, svg) {
                let e = ErrorEvent::new(
                    Category::Io,
                    Code::from_static("BADGE_WRITE_FAILED"),
                    format!("cannot write {}: {e}", path.display()),
                )
                .target(path.display().to_string());
                return fail(e, format, args.no_color);
            }
        }
    }
    let code = lint_exit(&report, args.allow_incomplete);
    let text = match format {
        LintFormat::Jsonl => return machine_run(&report, args.allow_incomplete),
        LintFormat::Human => {
            let color = aoi::surface::color::enabled(&io::stdout(), args.no_color);
            aoi_lint::report::human(&report, color)
        }
        LintFormat::Sarif => {
            let mut text =
                serde_json::to_string_pretty(&aoi_lint::report::sarif(&report)).unwrap_or_default();
            text.push('\n');
            text
        }
        LintFormat::Junit => aoi_lint::report::junit(&report),
    };
    let mut stdout = io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(exit_code::SIGPIPE);
    }
    ExitCode::from(code)
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

fn machine_run(report: &Report, allow_incomplete: bool) -> ExitCode {
    let wanted = lint_exit(report, allow_incomplete);
    Harness::new(machine::emitter("lint")).run(|out| {
        for r in &report.results {
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
            if !r.evidence.is_empty() {
                properties.insert(
                    "evidence".into(),
                    serde_json::to_value(&r.evidence).unwrap_or_default(),
                );
            }
            let name = if r.command.is_empty() {
                format!("{} {}", r.check, info.name)
            } else {
                format!("{} {} · {}", r.check, info.name, r.command)
            };
            out.check(&Check {
                name,
                ok,
                severity: Some(severity),
                detail: Some(r.detail.clone()),
                hint: None,
                properties: Some(properties),
            })?;
        }
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
        Ok(outcome.property("results", serde_json::to_value(totals).unwrap_or_default()))
    })
}
