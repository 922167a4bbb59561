//! Check 6, Safe (§14.2, §14.3): a destructive command refuses to run without `--confirm`
//! and changes nothing; where it takes `--confirm-count`, a count other than the one its
//! example confirms (one more, one fewer) is refused and changes nothing; `--dry-run`, where
//! advertised, emits `aoi:plan` and changes nothing. "Changes nothing" is judged by comparing
//! the sandbox before and after.

use serde_json::Value;

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{with, without, Captured, Extras, Subject};

/// This check.
pub const ID: CheckId = id(6);

fn changed(captured: &Captured) -> Option<String> {
    captured
        .changes
        .first()
        .map(|c| format!("{} file(s) changed, first {c}", captured.changes.len()))
}

/// Properties that do not say what a command acts on: the §16.1 options, the confirmation
/// itself, and input and output controls.
const OPTIONS: [&str; 21] = [
    "confirm",
    "confirm_count",
    "dry_run",
    "idempotency_key",
    "output",
    "format",
    "schema_version",
    "no_color",
    "color",
    "debug",
    "verbose",
    "quiet",
    "help",
    "version",
    "limit",
    "cursor",
    "timeout",
    "input_jsonl",
    "input_json",
    "fail_fast",
    "continue_on_error",
];

/// True when property `name` is an option of how a command runs, not of what it acts on.
pub(crate) fn is_option(name: &str) -> bool {
    OPTIONS.contains(&name)
}

/// §14.3: the confirmation guards the operation, whatever names its targets. Each selector
/// the input schema offers besides the example's own (a `--prefix`, an `--all`, a
/// `--where`) is given in place of the example's, without `--confirm`, in a fresh sandbox
/// with the example's data: it must change nothing. Returns how many were tried.
fn alternative_selectors(
    subject: &Subject<'_>,
    unconfirmed: &[String],
) -> Result<usize, Box<CheckResult>> {
    let judge = Judge::new(ID, subject);
    let Some(input) = subject.input else {
        return Ok(0);
    };
    let words = subject.entry.words();
    let Some(rest) = unconfirmed.strip_prefix(words.as_slice()) else {
        return Ok(0);
    };
    let Ok(given) = aoi::discover::argv::from_argv(input, rest) else {
        return Ok(0);
    };
    let is_selector = |name: &str| !is_option(name);
    // The value the example selects by (`--key a` selects by "a"): an alternative string
    // selector gets the same, so a prefix or pattern matches what the example destroys.
    let seed = given
        .iter()
        .filter(|(name, _)| is_selector(name))
        .find_map(|(_, v)| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "a".to_owned());
    let mut kept = given.clone();
    kept.retain(|name, _| !is_selector(name));
    let mut tried = 0;
    for name in input.properties() {
        if !is_selector(&name) || given.contains_key(&name) {
            continue;
        }
        let schema = input.property(&name).cloned().unwrap_or_default();
        let value = match schema.get("type").and_then(Value::as_str) {
            Some("boolean") => Value::Bool(true),
            Some("integer" | "number") => Value::from(1),
            Some("array") => Value::Array(vec![Value::from(seed.clone())]),
            Some("string") | None => Value::from(seed.clone()),
            Some(_) => continue,
        };
        let mut arguments = kept.clone();
        arguments.insert(name.clone(), value);
        let Ok(argv) = aoi::discover::argv::to_argv(input, &arguments, &[]) else {
            continue;
        };
        let mut args = words.clone();
        args.extend(argv);
        let run = subject
            .exec(&args, &Extras::default())
            .map_err(|why| Box::new(judge.could_not_run(why)))?;
        tried += 1;
        if let Some(what) = changed(&run) {
            return Err(Box::new(
                judge
                    .fail(format!(
                        "without --confirm, selecting by `{}` instead still changed the sandbox: {what} (§14.3)",
                        input.flag(&name).unwrap_or_default()
                    ))
                    .evidence(run.evidence()),
            ));
        }
    }
    Ok(tried)
}

/// The count a confirmed run states: its `--confirm-count N` (`--confirm-count=N` too).
fn stated_count(args: &[String]) -> Option<u64> {
    args.iter().enumerate().find_map(|(i, a)| {
        let value = a
            .strip_prefix("--confirm-count=")
            .or_else(|| (a == "--confirm-count").then(|| args.get(i + 1).map(String::as_str))?)?;
        value.parse().ok()
    })
}

/// §14.3's guard, for a command that takes `--confirm-count`: the count the example states
/// (it succeeded, so it is the number matched), plus one and minus one, is refused and changes
/// nothing. A guard that takes any larger count does not guard against a broad delete the
/// caller did not expect. `Ok(None)` when the example states no count.
fn wrong_counts(
    subject: &Subject<'_>,
    args: &[String],
    base: &Captured,
) -> Result<Option<String>, Box<CheckResult>> {
    if !subject.takes("--confirm-count") || !base.succeeded() {
        return Ok(None);
    }
    let Some(matched) = stated_count(args) else {
        return Ok(None);
    };
    let mut wrong = vec![matched + 1];
    if matched > 1 {
        wrong.push(matched - 1);
    }
    for n in &wrong {
        let probe = with(args, "--confirm-count", &n.to_string());
        let run = subject
            .exec(&probe, &Extras::default())
            .map_err(|why| Box::new(Judge::new(ID, subject).could_not_run(why)))?;
        let change = changed(&run);
        if run.run.exit.code() == Some(0) || change.is_some() {
            let what = change.unwrap_or_else(|| "it exited 0".into());
            return Err(Box::new(
                Judge::new(ID, subject)
                    .fail(format!(
                        "--confirm-count {n} where the example confirms {matched} was not refused: {what} (§14.3: the guard is there to prevent accidental broad deletes)"
                    ))
                    .evidence(run.evidence()),
            ));
        }
    }
    Ok(Some(format!(
        "--confirm-count other than the {matched} matched ({}) is refused",
        wrong
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let destructive = subject.entry.destructive;
    let dry_run = subject.takes("--dry-run");
    if subject.entry.read_only || (!destructive && !dry_run) {
        return judge.not_applicable(if subject.entry.read_only {
            "read-only: nothing to confirm or plan (§18.1)"
        } else {
            "neither destructive nor advertising --dry-run"
        });
    }
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    let args = match &subject.base {
        Ok(args) => args.clone(),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let mut passed = Vec::new();
    if destructive {
        if base.changes.is_empty() {
            return judge.could_not_run(
                "the example destroys nothing in the sandbox, so a refusal cannot be told from a no-op; add setup data in aoi-lint.toml",
            );
        }
        let unconfirmed = without(&without(&args, "--confirm", false), "--confirm-count", true);
        let refused = match subject.exec(&unconfirmed, &Extras::default()) {
            Ok(run) => run,
            Err(why) => return judge.could_not_run(why),
        };
        if refused.run.exit.code() == Some(0) {
            return judge
                .fail("without --confirm the destructive command exits 0")
                .evidence(refused.evidence());
        }
        if let Some(what) = changed(&refused) {
            return judge
                .fail(format!(
                    "without --confirm it still changed the sandbox: {what}"
                ))
                .evidence(refused.evidence());
        }
        passed.push(format!(
            "refuses without --confirm (exit {}) and changes nothing",
            refused.run.exit.shell_status()
        ));
        let others = match alternative_selectors(subject, &unconfirmed) {
            Ok(tried) => tried,
            Err(result) => return *result,
        };
        if others > 0 {
            passed.push(format!(
                "so do its {others} other selector(s) (bulk or alternative)"
            ));
        }
        match wrong_counts(subject, &args, base) {
            Ok(Some(checked)) => passed.push(checked),
            Ok(None) => {}
            Err(result) => return *result,
        }
    }
    if dry_run {
        let mut planned = args.clone();
        if !planned.iter().any(|a| a == "--dry-run") {
            planned.push("--dry-run".into());
        }
        let dry = match subject.exec(&planned, &Extras::default()) {
            Ok(run) => run,
            Err(why) => return judge.could_not_run(why),
        };
        if let Some(what) = changed(&dry) {
            return judge
                .fail(format!("--dry-run changed the sandbox: {what}"))
                .evidence(dry.evidence());
        }
        let plans = dry.plans();
        let real_did_something = !base.changes.is_empty() || base.domain().next().is_some();
        if plans == 0 && real_did_something {
            return judge
                .fail(format!(
                    "--dry-run emitted no aoi:plan although the real run does something ({})",
                    dry.ending()
                ))
                .evidence(dry.evidence());
        }
        passed.push(format!(
            "--dry-run plans {plans} effect(s) and changes nothing"
        ));
    }
    judge.pass(passed.join("; "))
}
