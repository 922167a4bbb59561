//! Check 1, Discoverable (§3, §10, §16.2, §17): `schema`, `capabilities` and `input-schema`
//! succeed in a sandbox with no credentials, no configuration and no network; the schemas are
//! valid JSON Schema; and what capabilities claims of the command matches what it does.

use super::{id, Judge};
use crate::model::{cut, Advice, CheckId, CheckOutcome, CheckResult, Evidence};
use crate::subject::{machine, Extras, Subject};
use crate::tool::Discovered;

/// This check.
pub const ID: CheckId = id(1);

fn discovery_failure<T>(what: &str, found: &Discovered<T>) -> Option<(String, Evidence)> {
    let why = found.value.as_ref().err()?;
    let evidence = match &found.run {
        Some(run) => {
            let stderr = String::from_utf8_lossy(&run.stderr);
            Evidence {
                invocation: run.argv.clone(),
                excerpt: (!stderr.trim().is_empty()).then(|| cut(stderr.trim(), 300)),
                ..Evidence::default()
            }
        }
        None => Evidence::default(),
    };
    Some((format!("{what}: {why}"), evidence))
}

/// A command capabilities lists that the tool does not have: its example is refused as a usage
/// error (exit 64) and `TOOL COMMAND --help` (§16.1: help is a MUST) fails too.
fn no_such_command(subject: &Subject<'_>) -> Option<(String, Evidence)> {
    let help = subject.missing_help()?;
    let stderr = String::from_utf8_lossy(&help.stderr);
    Some((
        format!(
            "capabilities lists `{}`, but the tool does not know it: its example is a usage error and `--help` exits {}",
            subject.entry.name,
            help.exit.shell_status()
        ),
        Evidence {
            invocation: help.argv.clone(),
            excerpt: (!stderr.trim().is_empty()).then(|| cut(stderr.trim(), 300)),
            ..Evidence::default()
        },
    ))
}

/// How to make a command callable the way `aoi mcp` calls it (advice: no sentence of the spec
/// asks for it).
const CALLABLE_FIX: &str = "describe every flag and operand in the input schema as docs/discovery.md says (operands as properties named in `x-aoi.positional`, flags spelt as `x-aoi.flags` or the convention says), so that an adapter can build the command line from named arguments";

/// A command whose example works but cannot be called the way `aoi mcp` calls it: the example
/// turned into arguments through the input schema and back into argv
/// (`aoi::discover::argv`) is not expressible, or is refused where the example ran. This is
/// the profile's advice, not a failure: §3, §10, §16.2 and §17 ask for discovery documents,
/// not for an input schema an adapter can build every command line from.
fn not_callable_as_mcp_calls(subject: &Subject<'_>) -> Option<Advice> {
    let entry = &subject.entry;
    let input = subject.input?;
    if !entry.speaks_aoi() || entry.is_discovery() || entry.unbounded {
        return None;
    }
    let example = subject.base.as_ref().ok()?;
    let words = entry.words();
    let rest = example.strip_prefix(words.as_slice())?;
    let base = subject.base_run().ok()?;
    if base.run.exit.code() != Some(0) {
        return None;
    }
    let called = aoi::discover::argv::from_argv(input, rest).and_then(|arguments| {
        aoi::discover::argv::to_argv(input, &arguments, &subject.tool.machine_args())
    });
    let argv = match called {
        Ok(argv) => argv,
        Err(e) => {
            return Some(Advice {
                detail: format!(
                    "aoi mcp could not call `{}` as its example does: {e}",
                    example.join(" ")
                ),
                fix: CALLABLE_FIX.into(),
                evidence: vec![base.evidence()],
            })
        }
    };
    let mut full = words;
    full.extend(argv);
    // The same command line the base run ran (it succeeded): nothing new to learn.
    let machine_args = subject.tool.machine_args();
    if machine(&full, &machine_args) == machine(example, &machine_args) {
        return None;
    }
    let mapped = subject.exec(&full, &Extras::default()).ok()?;
    if mapped.run.exit.code() == Some(0) {
        return None;
    }
    let stderr = String::from_utf8_lossy(&mapped.run.stderr);
    Some(Advice {
        detail: format!(
            "the example works, but built from the input schema as aoi mcp builds a call it exits {}",
            mapped.run.exit.shell_status()
        ),
        fix: CALLABLE_FIX.into(),
        evidence: vec![Evidence {
            invocation: mapped.run.argv.clone(),
            excerpt: (!stderr.trim().is_empty()).then(|| cut(stderr.trim(), 300)),
            ..Evidence::default()
        }],
    })
}

/// A read-only command writes nothing in any probe (§14.1, §17 `read_only`): every run lint
/// made of it (the base run, `--cursor` pages, refusals, human mode, signals, a closed pipe)
/// was snapshotted before and after, and what changed fails check 1, once per probe.
pub fn fold_probe_writes(subject: &Subject<'_>, results: &mut [CheckResult]) {
    let writes = subject.probe_writes();
    if writes.is_empty() {
        return;
    }
    let Some(result) = results
        .iter_mut()
        .find(|r| r.check == ID && r.command == subject.name())
    else {
        return;
    };
    if result.outcome == CheckOutcome::NotApplicable {
        return;
    }
    for probe in &writes {
        let detail = format!(
            "capabilities says read_only, but `{}` changed {} file(s), first {}",
            probe.argv.join(" "),
            probe.changes.len(),
            probe.changes[0]
        );
        if result.outcome != CheckOutcome::Fail {
            result.outcome = CheckOutcome::Fail;
            result.detail = detail.clone();
        }
        result.evidence.push(Evidence {
            invocation: probe.argv.clone(),
            excerpt: Some(detail),
            ..Evidence::default()
        });
    }
}

/// A command the tool does not have fails check 1, once: the other checks of it, which had
/// nothing to run, are not applicable rather than "could not run" (which would ask for
/// configuration that cannot help).
pub fn fold_missing_command(subject: &Subject<'_>, results: &mut [CheckResult]) {
    if !subject.missing() {
        return;
    }
    for result in results
        .iter_mut()
        .filter(|r| r.command == subject.name() && r.check != ID)
        .filter(|r| r.outcome == CheckOutcome::CouldNotRun)
    {
        result.outcome = CheckOutcome::NotApplicable;
        result.detail =
            "the tool does not have this command, which capabilities lists (check 1)".into();
        result.evidence.clear();
    }
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let tool = subject.tool;
    let mut problems: Vec<(String, Evidence)> = Vec::new();
    problems.extend(discovery_failure("capabilities", &tool.capabilities));
    problems.extend(discovery_failure("schema", &tool.schema));
    if let Some(found) = tool.input_schemas.get(subject.name()) {
        problems.extend(discovery_failure("input-schema", found));
    }
    let entry = &subject.entry;
    if let Some(input) = subject.input {
        let claims = [
            ("supports_dry_run", entry.supports_dry_run, "--dry-run"),
            (
                "supports_idempotency_key",
                entry.supports_idempotency_key,
                "--idempotency-key",
            ),
            ("supports_cursor", entry.supports_cursor, "--cursor"),
        ];
        for (claim, said, flag) in claims {
            if said != input.has_flag(flag) {
                problems.push((
                    format!(
                        "capabilities says {claim}: {said}, but the input schema {} {flag}",
                        if said { "has no" } else { "has" }
                    ),
                    Evidence::default(),
                ));
            }
        }
        if entry.destructive && !input.has_flag("--confirm") {
            problems.push((
                "capabilities says destructive, but the command takes no --confirm".into(),
                Evidence::default(),
            ));
        }
    }
    let mut advice = None;
    if let Some(problem) = no_such_command(subject) {
        problems.push(problem);
    } else {
        advice = not_callable_as_mcp_calls(subject);
    }
    if entry.read_only && entry.speaks_aoi() {
        // The base run is made here; what it and every other probe wrote is judged once all
        // the command's checks ran (`fold_probe_writes`).
        let _ = subject.base_run();
    }
    if problems.is_empty() {
        let isolated = tool
            .capabilities
            .run
            .as_ref()
            .is_some_and(|r| r.network_isolated);
        let network = if isolated {
            "with the network unreachable"
        } else {
            "(the network could not be isolated here)"
        };
        let result = judge.pass(format!(
            "schema, capabilities and input-schema work without credentials {network}; the claims match the command"
        ));
        return match advice {
            Some(advice) => result.advise(advice),
            None => result,
        };
    }
    let mut result = judge.fail(problems[0].0.clone());
    for (detail, mut evidence) in problems {
        if evidence.excerpt.is_none() {
            evidence.excerpt = Some(detail);
        }
        result = result.evidence(evidence);
    }
    match advice {
        Some(advice) => result.advise(advice),
        None => result,
    }
}
