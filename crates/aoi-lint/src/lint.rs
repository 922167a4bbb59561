//! Running the checks: every (check × command) of a tool in parallel, one invocation, or a
//! captured transcript.

use std::ffi::OsString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use crate::checks::{self, Judge};
use crate::config::Config;
use crate::manifest::CommandEntry;
use crate::model::{CheckId, CheckOutcome, CheckResult, Evidence, Report};
use crate::sandbox::{network_isolation, SandboxConfig};
use crate::subject::{verify, Subject};
use crate::tool::Tool;

/// How lint runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// How many checks run at once (each may run a few processes of the tool).
    pub jobs: usize,
    /// Only these checks (all when empty).
    pub only: Vec<CheckId>,
    /// Only these commands (all when empty).
    pub commands: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Options {
            // Most of a check is waiting on the tool (start-up, a warm-up before a signal),
            // so more checks than cores run at once.
            jobs: (cores * 4).clamp(4, 32),
            only: Vec::new(),
            commands: Vec::new(),
        }
    }
}

fn sandbox_config(config: &Config) -> SandboxConfig {
    SandboxConfig {
        timeout: config.timeout(),
        fixtures: config.fixtures.clone(),
        ..SandboxConfig::default()
    }
}

fn network_fields(report: &mut Report) {
    match network_isolation() {
        Ok(()) => report.network_isolated = true,
        Err(why) => {
            report.network_isolated = false;
            report.network_note = Some(why);
        }
    }
}

/// Lints every command a tool's capabilities lists (`aoi lint --tool TOOL`).
pub fn lint_tool(argv: Vec<OsString>, config: Config, options: &Options) -> Report {
    let started = Instant::now();
    let sandbox = sandbox_config(&config);
    let processes = sandbox.processes.clone();
    let tool = Tool::discover(argv, config, sandbox);
    let entries: Vec<CommandEntry> = match tool.manifest() {
        Some(manifest) => manifest
            .commands
            .iter()
            .filter(|c| !c.is_discovery())
            .filter(|c| options.commands.is_empty() || options.commands.contains(&c.name))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    let mut report = Report {
        tool: tool.name.clone(),
        tool_version: tool.manifest().and_then(|m| m.tool_version.clone()),
        ..Report::default()
    };
    network_fields(&mut report);
    if entries.is_empty() {
        // Without a manifest there are no commands to exercise: discovery itself fails.
        let detail = match &tool.capabilities.value {
            Err(why) => format!("capabilities: {why}"),
            Ok(_) => "capabilities lists no command to lint".to_owned(),
        };
        report.commands.push(String::new());
        report.results.push(
            CheckResult::new(checks::c01_discovery::ID, "", CheckOutcome::Fail, detail).evidence(
                Evidence {
                    invocation: tool
                        .capabilities
                        .run
                        .as_ref()
                        .map(|r| r.argv.clone())
                        .unwrap_or_default(),
                    ..Evidence::default()
                },
            ),
        );
    } else {
        let subjects: Vec<Subject<'_>> = entries
            .into_iter()
            .map(|entry| Subject::new(&tool, entry))
            .collect();
        report.commands = subjects.iter().map(|s| s.name().to_owned()).collect();
        report.results = run_all(&subjects, options);
    }
    report.processes = processes.load(Ordering::Relaxed);
    report.elapsed = started.elapsed();
    report
}

/// Lints one invocation (`aoi lint -- TOOL ARGS`): when capabilities knows the command, every
/// check runs with these arguments as the base invocation; otherwise the stream checks.
pub fn lint_invocation(
    program: OsString,
    args: Vec<String>,
    config: Config,
    options: &Options,
) -> Report {
    let started = Instant::now();
    let sandbox = sandbox_config(&config);
    let processes = sandbox.processes.clone();
    let tool = Tool::discover(vec![program], config, sandbox);
    let words: Vec<&str> = args
        .iter()
        .take_while(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    // The longest command name the arguments start with.
    let known = tool.manifest().and_then(|m| {
        m.commands
            .iter()
            .filter(|c| {
                let name: Vec<&str> = c.name.split_whitespace().collect();
                !name.is_empty() && words.starts_with(&name)
            })
            .max_by_key(|c| c.name.split_whitespace().count())
            .cloned()
    });
    let stream_only = known.is_none();
    let entry = known.unwrap_or_else(|| CommandEntry {
        name: words.join(" "),
        ..CommandEntry::default()
    });
    let mut report = Report {
        tool: tool.name.clone(),
        tool_version: tool.manifest().and_then(|m| m.tool_version.clone()),
        ..Report::default()
    };
    network_fields(&mut report);
    let subject = Subject::invocation(&tool, entry, args);
    report.commands = vec![subject.name().to_owned()];
    let mut opts = options.clone();
    if stream_only && opts.only.is_empty() {
        opts.only = checks::STREAM_CHECKS.to_vec();
    }
    let mut results = run_all(std::slice::from_ref(&subject), &opts);
    if stream_only {
        for check in CheckId::all() {
            if !results.iter().any(|r| r.check == check) {
                results.push(
                    Judge::new(check, &subject).not_applicable(
                        "the tool's capabilities do not describe this command, so only the stream checks run",
                    ),
                );
            }
        }
        results.sort_by_key(|r| r.check);
    }
    report.results = results;
    report.processes = processes.load(Ordering::Relaxed);
    report.elapsed = started.elapsed();
    report
}

/// Lints a captured stream offline (`aoi lint --transcript FILE`): the stream checks only,
/// against `schema` when one is given.
pub fn lint_transcript(name: &str, stream: &[u8], schema: Option<&Value>) -> Report {
    let started = Instant::now();
    let compiled = schema.and_then(|s| aoi::read::CompiledSchema::new(s).ok());
    let verification = verify(stream, compiled.as_ref(), None, false);
    let mut results = Vec::new();
    for check in CheckId::all() {
        let result = if checks::STREAM_CHECKS.contains(&check) {
            let found: Vec<_> = verification
                .findings
                .iter()
                .filter(|f| checks::counts_against(f, check))
                .collect();
            if check == checks::c04_framework_schema::ID && schema.is_none() {
                CheckResult::new(
                    check,
                    "",
                    CheckOutcome::CouldNotRun,
                    "no schema given (--schema FILE) to validate the events against",
                )
            } else if let Some(first) = found.first() {
                let mut r = CheckResult::new(check, "", CheckOutcome::Fail, first.to_string());
                for f in found {
                    r = r.evidence(Evidence {
                        line: f.line,
                        excerpt: Some(f.message.clone()),
                        finding: Some(f.code.as_str().to_owned()),
                        ..Evidence::default()
                    });
                }
                r
            } else {
                CheckResult::new(
                    check,
                    "",
                    CheckOutcome::Pass,
                    "the transcript shows no violation",
                )
            }
        } else {
            CheckResult::new(
                check,
                "",
                CheckOutcome::NotApplicable,
                "a transcript cannot show behaviour; lint the live tool for this check",
            )
        };
        results.push(result);
    }
    Report {
        tool: name.to_owned(),
        commands: vec![String::new()],
        results,
        elapsed: started.elapsed(),
        network_isolated: false,
        network_note: Some("a transcript runs nothing".into()),
        ..Report::default()
    }
}

/// Runs every selected (command × check) on `options.jobs` threads; results come back in
/// command order, then check order.
fn run_all(subjects: &[Subject<'_>], options: &Options) -> Vec<CheckResult> {
    let mut jobs = Vec::new();
    for (s, subject) in subjects.iter().enumerate() {
        for (check, run) in checks::ALL {
            if !options.only.is_empty() && !options.only.contains(&check) {
                continue;
            }
            let skip = subject.settings.skip.clone();
            jobs.push((s, check, run, skip));
        }
    }
    let results: Vec<Mutex<Option<CheckResult>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1).min(jobs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((s, check, run, skip)) = jobs.get(i) else {
                    break;
                };
                let subject = &subjects[*s];
                let result = match (skip, &subject.entry.protocol) {
                    (Some(why), _) => Judge::new(*check, subject)
                        .could_not_run(format!("skipped in aoi-lint.toml: {why}")),
                    (None, Some(protocol)) if *check != checks::c01_discovery::ID => {
                        Judge::new(*check, subject).not_applicable(format!(
                        "it speaks {protocol} on stdout, not an AOI stream (capabilities says so)"
                    ))
                    }
                    (None, _) => run(subject),
                };
                if let Ok(mut slot) = results[i].lock() {
                    *slot = Some(result);
                }
            });
        }
    });
    let mut results: Vec<CheckResult> = results
        .into_iter()
        .zip(&jobs)
        .map(|(slot, (s, check, _, _))| {
            slot.into_inner().ok().flatten().unwrap_or_else(|| {
                Judge::new(*check, &subjects[*s]).could_not_run("the check did not finish")
            })
        })
        .collect();
    for subject in subjects {
        fold_probe_violations(subject, &mut results);
        checks::c01_discovery::fold_probe_writes(subject, &mut results);
    }
    results
}

/// Every stream lint observes is judged by the verifier: a violation in the stream of any
/// probe of a command (a refusal, a replay, a page, an upstream run) counts against the stream
/// check it belongs to for that command, once per finding code.
fn fold_probe_violations(subject: &Subject<'_>, results: &mut [CheckResult]) {
    for violation in subject.probe_violations() {
        let check = crate::model::check_of(violation.finding.code);
        if !checks::STREAM_CHECKS.contains(&check) {
            continue;
        }
        let Some(result) = results
            .iter_mut()
            .find(|r| r.check == check && r.command == subject.name())
        else {
            continue;
        };
        let code = violation.finding.code.as_str();
        if result.outcome == CheckOutcome::NotApplicable
            || result
                .evidence
                .iter()
                .any(|e| e.finding.as_deref() == Some(code))
        {
            continue;
        }
        if result.outcome != CheckOutcome::Fail {
            result.outcome = CheckOutcome::Fail;
            result.detail = format!(
                "the stream of a probe (`{}`) breaks the contract: {code} ({})",
                violation.argv.join(" "),
                violation.finding.section
            );
        }
        result.evidence.push(Evidence {
            invocation: violation.argv.clone(),
            line: violation.finding.line,
            excerpt: Some(format!(
                "{} ({})",
                violation.finding.message, violation.finding.section
            )),
            finding: Some(code.to_owned()),
        });
    }
}
