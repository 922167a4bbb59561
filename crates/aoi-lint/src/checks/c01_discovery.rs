//! Check 1, Discoverable (§3, §10, §16.2, §17): `schema`, `capabilities` and `input-schema`
//! succeed in a sandbox with no credentials, no configuration and no network; the schemas are
//! valid JSON Schema; and what capabilities claims of the command matches what it does.

use super::{id, Judge};
use crate::model::{cut, Advice, CheckId, CheckOutcome, CheckResult, Evidence};
use crate::subject::{machine, Extras, Subject};
use crate::tool::{Discovered, Tool};
use serde_json::Value;

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

/// §3 "If both flags and subcommands exist, they MUST return equivalent information": each
/// discovery flag that answered, against its subcommand's document (compared as JSON values,
/// so key order and spacing do not matter).
fn flags_that_disagree(tool: &Tool) -> Vec<(String, Evidence)> {
    let mut problems = Vec::new();
    for found in &tool.discovery_flags {
        let subcommand = match found.subcommand {
            "capabilities" => tool.capabilities.run.as_ref(),
            _ => tool.schema.run.as_ref(),
        };
        let Some(sub_run) = subcommand else { continue };
        let Ok(expected) = serde_json::from_slice::<Value>(&sub_run.stdout) else {
            continue;
        };
        if expected != found.document {
            problems.push((
                format!(
                    "`{}` and `{} --output json` print different documents: §3 \"If both flags and subcommands exist, they MUST return equivalent information.\"",
                    found.flag, found.subcommand
                ),
                Evidence {
                    invocation: found.run.argv.clone(),
                    excerpt: Some(cut(&String::from_utf8_lossy(&found.run.stdout), 300)),
                    ..Evidence::default()
                },
            ));
        }
    }
    problems
}

/// §10.2 "Schema `$id` MUST NOT be a machine‑local file URI unless the schema is explicitly
/// local‑only": the event schema's and this command's input schema's `$id`. A schema says it
/// is local-only in its own words (`"local-only"` or `"local only"` in its `title`,
/// `description` or `$comment`), the only place the bytes can say it.
fn local_schema_ids(subject: &Subject<'_>) -> Vec<(String, Evidence)> {
    let tool = subject.tool;
    let input = tool
        .input_schemas
        .get(subject.name())
        .and_then(|found| Some((found.run.as_ref()?, &found.value.as_ref().ok()?.schema)));
    let schema = tool
        .schema
        .run
        .as_ref()
        .zip(tool.schema.value.as_ref().ok());
    let mut problems = Vec::new();
    for (what, found) in [("schema", schema), ("input-schema", input)] {
        let Some((run, document)) = found else {
            continue;
        };
        let Some(id) = document.get("$id").and_then(Value::as_str) else {
            continue;
        };
        if !id.trim_start().to_ascii_lowercase().starts_with("file:") {
            continue;
        }
        let says_local = ["title", "description", "$comment"].iter().any(|key| {
            document
                .get(*key)
                .and_then(Value::as_str)
                .is_some_and(|text| {
                    let text = text.to_ascii_lowercase();
                    text.contains("local-only") || text.contains("local only")
                })
        });
        if !says_local {
            problems.push((
                format!(
                    "{what}: `$id` is {id:?}, a machine-local file URI: §10.2 \"Schema `$id` MUST NOT be a machine‑local file URI unless the schema is explicitly local‑only.\""
                ),
                Evidence {
                    invocation: run.argv.clone(),
                    ..Evidence::default()
                },
            ));
        }
    }
    problems
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
    problems.extend(flags_that_disagree(tool));
    problems.extend(local_schema_ids(subject));
    let mut advice: Vec<Advice> = spec_shoulds(subject);
    if let Some(found) = tool.input_schemas.get(subject.name()) {
        // A served input schema must be one (§10: JSON Schema 2020-12 for input schemas); not
        // serving one is a SHOULD for a command that reads structured stdin (§12.1) and the
        // profile's for the others (aoi mcp builds calls from it): advice.
        let served = found.run.as_ref().is_some_and(|r| r.exit.code() == Some(0));
        if let Some((detail, evidence)) = discovery_failure("input-schema", found) {
            if served {
                problems.push((detail, evidence));
            } else {
                advice.push(no_input_schema(subject, detail, evidence));
            }
        }
    }
    let entry = &subject.entry;
    if let Some(input) = subject.input {
        // What capabilities claims against what the input schema lists: the profile's
        // reading, where the input schema describes the command line (docs/discovery.md);
        // the spec's input schema may describe stdin records instead (§12.1), and check 6, 7
        // and 11 test the claims by running them. Advice, never a failure.
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
                advice.push(Advice {
                    detail: format!(
                        "profile: capabilities says {claim}: {said}, but the input schema {} {flag}",
                        if said { "has no" } else { "has" }
                    ),
                    fix: format!("describe {flag} in the command's input schema, or correct the claim (docs/discovery.md)"),
                    evidence: Vec::new(),
                });
            }
        }
        if entry.destructive && !input.has_flag("--confirm") {
            advice.push(Advice {
                detail: "profile: capabilities says destructive, but the input schema has no --confirm".into(),
                fix: "describe --confirm in the command's input schema (check 6 tests that the command refuses without it)".into(),
                evidence: Vec::new(),
            });
        }
    }
    if let Some(problem) = no_such_command(subject) {
        problems.push(problem);
    } else {
        advice.extend(not_callable_as_mcp_calls(subject));
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
        return advice.into_iter().fold(result, CheckResult::advise);
    }
    let mut result = judge.fail(problems[0].0.clone());
    for (detail, mut evidence) in problems {
        if evidence.excerpt.is_none() {
            evidence.excerpt = Some(detail);
        }
        result = result.evidence(evidence);
    }
    advice.into_iter().fold(result, CheckResult::advise)
}

/// The advice for a command whose `input-schema` is not served.
fn no_input_schema(subject: &Subject<'_>, detail: String, evidence: Evidence) -> Advice {
    let structured = subject
        .entry
        .input_modes
        .iter()
        .any(|m| m != "args" && m != "argv");
    let (detail, fix) = if structured {
        (
            format!("spec §12.1 SHOULD: the command reads structured input, and {detail}"),
            "serve `input-schema --command NAME --output json` (§12.1 \"If accepting structured stdin, the tool SHOULD provide an input schema\")",
        )
    } else {
        (
            format!("profile: {detail}"),
            "serve `input-schema --command NAME --output json`, from which lint and `aoi mcp` build an invocation (docs/discovery.md)",
        )
    };
    Advice {
        detail,
        fix: fix.into(),
        evidence: vec![evidence],
    }
}

/// The SHOULDs of the spec that discovery shows unmet, as advice: they fail nothing (a SHOULD
/// is not a MUST), and `--strict-profile` makes them fail with the profile's advice.
/// - §10.3 "Input schemas SHOULD be strict": the command's input schema allows unknown
///   properties (no `additionalProperties: false` or `unevaluatedProperties: false` at its root);
/// - once per tool, on its first command: §16.1 `--version` SHOULD (`TOOL --version` does not
///   exit 0 with some output). (§10.3's other SHOULD, permissive event schemas, is check 4's.)
fn spec_shoulds(subject: &Subject<'_>) -> Vec<Advice> {
    let tool = subject.tool;
    let mut advice = Vec::new();
    if let Some(Ok(input)) = tool.input_schemas.get(subject.name()).map(|f| &f.value) {
        let closed = |key: &str| input.schema.get(key) == Some(&Value::Bool(false));
        if !closed("additionalProperties") && !closed("unevaluatedProperties") {
            advice.push(Advice {
                detail: "spec §10.3 SHOULD: the input schema accepts properties it does not name, so a mistyped or invented parameter is not caught".into(),
                fix: "close the input schema's root with \"additionalProperties\": false (§10.3 \"Input schemas SHOULD be strict: reject unknown fields\")".into(),
                evidence: Vec::new(),
            });
        }
    }
    if tool.first_command() != Some(subject.name()) {
        return advice;
    }
    if let Some(run) = &tool.version {
        if run.exit.code() != Some(0) || run.stdout.iter().all(u8::is_ascii_whitespace) {
            advice.push(Advice {
                detail: format!(
                    "spec §16.1 SHOULD: `--version` exits {} {}",
                    run.exit.shell_status(),
                    if run.stdout.is_empty() { "and prints nothing" } else { "" }
                )
                .trim_end()
                .to_owned(),
                fix: "answer `--version` with the tool's version (§16.1 \"| `--version` | SHOULD | Tool version. |\")".into(),
                evidence: vec![Evidence {
                    invocation: run.argv.clone(),
                    ..Evidence::default()
                }],
            });
        }
    }
    advice
}
