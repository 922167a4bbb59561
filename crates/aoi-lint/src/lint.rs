//! Running the checks: every (check × command) of a tool in parallel, one invocation, or a
//! captured transcript.

use std::ffi::OsString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use crate::checks::{self, Judge};
use crate::config::Config;
use crate::manifest::CommandEntry;
use crate::model::{CheckId, CheckOutcome, CheckResult, Evidence, Report};
use crate::reaper::{Reaper, Witnessed};
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
    /// `--strict-profile`: the profile's advice fails its check, as a rule of the spec would.
    pub strict_profile: bool,
    /// This lint's processes and sandboxes: hold a clone to end them all at once
    /// ([`Reaper::cancel_all`], e.g. on SIGINT), after which no check starts anything.
    pub reaper: Arc<Reaper>,
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
            strict_profile: false,
            reaper: Arc::new(Reaper::new()),
        }
    }
}

/// Receives one command's results as soon as all its checks have finished, in the order they
/// finished (the report keeps command then check order). Called from lint's worker threads.
pub type OnCommand<'a> = &'a (dyn Fn(&[CheckResult]) + Sync);

fn sandbox_config(config: &Config, options: &Options) -> SandboxConfig {
    SandboxConfig {
        timeout: config.timeout(),
        fixtures: config.fixtures.clone(),
        reaper: Arc::clone(&options.reaper),
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
    lint_tool_streaming(argv, config, options, &|_| {})
}

/// [`lint_tool`], handing each command's results to `on_command` as soon as they are known.
pub fn lint_tool_streaming(
    argv: Vec<OsString>,
    config: Config,
    options: &Options,
    on_command: OnCommand<'_>,
) -> Report {
    let started = Instant::now();
    let sandbox = sandbox_config(&config, options);
    let processes = sandbox.processes.clone();
    let escaped = sandbox.escaped.clone();
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
        for r in &mut report.results {
            r.elapsed = started.elapsed();
        }
        on_command(&report.results);
    } else {
        let subjects: Vec<Subject<'_>> = entries
            .into_iter()
            .map(|entry| Subject::new(&tool, entry))
            .collect();
        report.commands = subjects.iter().map(|s| s.name().to_owned()).collect();
        report.results = run_all(&subjects, options, on_command);
    }
    report.processes = processes.load(Ordering::Relaxed);
    report.escaped = escaped.load(Ordering::Relaxed);
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
    lint_invocation_streaming(program, args, config, options, &|_| {})
}

/// [`lint_invocation`], handing the command's results to `on_command` once its checks ran.
pub fn lint_invocation_streaming(
    program: OsString,
    args: Vec<String>,
    config: Config,
    options: &Options,
    on_command: OnCommand<'_>,
) -> Report {
    let started = Instant::now();
    let sandbox = sandbox_config(&config, options);
    let processes = sandbox.processes.clone();
    let escaped = sandbox.escaped.clone();
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
    let mut results = run_all(std::slice::from_ref(&subject), &opts, on_command);
    if stream_only {
        let mut skipped = Vec::new();
        for check in CheckId::all() {
            if !results.iter().any(|r| r.check == check) {
                skipped.push(
                    Judge::new(check, &subject).not_applicable(
                        "the tool's capabilities do not describe this command, so only the stream checks run",
                    ),
                );
            }
        }
        on_command(&skipped);
        results.extend(skipped);
        results.sort_by_key(|r| r.check);
    }
    report.results = results;
    report.processes = processes.load(Ordering::Relaxed);
    report.escaped = escaped.load(Ordering::Relaxed);
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
        let found: Vec<_> = verification
            .findings
            .iter()
            .filter(|f| checks::counts_against(f, check))
            .collect();
        // A behaviour check a stream can still fail: `aoi:meta.args` echoing a secret is
        // check 9's (§11), shown by the bytes alone.
        let shown = !found.is_empty() && !checks::STREAM_CHECKS.contains(&check);
        let result = if checks::STREAM_CHECKS.contains(&check) || shown {
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
/// command order, then check order. Once every check of a command has finished, its results
/// are adjusted for what the command's probes showed and handed to `on_command` in the order
/// they finished. Each result carries its check's own wall time, and as evidence every process
/// its probes left running outside their process group (which lint killed).
fn run_all(
    subjects: &[Subject<'_>],
    options: &Options,
    on_command: OnCommand<'_>,
) -> Vec<CheckResult> {
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
    let unfinished: Vec<AtomicUsize> = (0..subjects.len())
        .map(|s| AtomicUsize::new(jobs.iter().filter(|job| job.0 == s).count()))
        .collect();
    // Per command, its jobs in the order they finished.
    let finished: Vec<Mutex<Vec<usize>>> =
        subjects.iter().map(|_| Mutex::new(Vec::new())).collect();
    let next = AtomicUsize::new(0);
    let take = |i: usize| {
        let (s, check, _, _) = &jobs[i];
        let slot = results[i].lock().ok().and_then(|mut slot| slot.take());
        slot.unwrap_or_else(|| {
            Judge::new(*check, &subjects[*s]).could_not_run("the check did not finish")
        })
    };
    let finish_command = |s: usize| {
        let subject = &subjects[s];
        let order = finished[s].lock().map(|o| o.clone()).unwrap_or_default();
        let mut done: Vec<CheckResult> = order.iter().map(|&i| take(i)).collect();
        fold_probe_violations(subject, &mut done);
        checks::c01_discovery::fold_probe_writes(subject, &mut done);
        checks::c01_discovery::fold_missing_command(subject, &mut done);
        on_command(&done);
        for (i, result) in order.into_iter().zip(done) {
            if let Ok(mut slot) = results[i].lock() {
                *slot = Some(result);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1).min(jobs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((s, check, run, skip)) = jobs.get(i) else {
                    break;
                };
                let subject = &subjects[*s];
                let started = Instant::now();
                let (mut result, escaped) =
                    options
                        .reaper
                        .witness(|| match (skip, &subject.entry.protocol) {
                            _ if options.reaper.cancelled() => {
                                Judge::new(*check, subject).could_not_run("lint was cancelled")
                            }
                            (Some(why), _) => Judge::new(*check, subject)
                                .could_not_run(format!("skipped in aoi-lint.toml: {why}")),
                            (None, Some(protocol)) if *check != checks::c01_discovery::ID => {
                                Judge::new(*check, subject).not_applicable(format!(
                        "it speaks {protocol} on stdout, not an AOI stream (capabilities says so)"
                    ))
                            }
                            (None, _) => run(subject),
                        });
                result.elapsed = started.elapsed();
                if options.strict_profile {
                    result.fail_on_advice();
                }
                result
                    .evidence
                    .extend(escaped.into_iter().map(escape_evidence));
                if let Ok(mut slot) = results[i].lock() {
                    *slot = Some(result);
                }
                if let Ok(mut order) = finished[*s].lock() {
                    order.push(i);
                }
                if unfinished[*s].fetch_sub(1, Ordering::AcqRel) == 1 {
                    finish_command(*s);
                }
            });
        }
    });
    (0..jobs.len()).map(take).collect()
}

/// Evidence that a probe left a process running outside its process group when it ended.
///
/// Reported, not failed: no rule of the spec says a command's descendants must end with it
/// (§4 and §7 speak of the stream and of the process lint started), but a command that leaves
/// a daemon behind in every invocation is one a user wants to hear about.
fn escape_evidence(witnessed: Witnessed) -> Evidence {
    Evidence {
        invocation: witnessed.argv,
        excerpt: Some(format!(
            "pid {} ({}) was still running outside the command's process group after the command ended; lint killed it",
            witnessed.escapee.pid,
            crate::model::cut(&witnessed.escapee.command, 64)
        )),
        ..Evidence::default()
    }
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
