//! Check 12, Composable (§12.2): a malformed line of `--input-jsonl` is handled as the
//! command declares: fail-fast aborts the whole command before any side effect, and names the
//! line; continue-on-error reports an item error for that line and goes on.

use aoi::wire::Scope;
use aoi::ErrorEvent;

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{without, Captured, Extras, Subject};

/// This check.
pub const ID: CheckId = id(12);

/// Input whose first line is not JSON; the second is a JSON object.
const INPUT: &[u8] = b"this line is not JSON\n{}\n";

/// `args` reading JSONL from stdin instead of wherever the example reads.
pub(crate) fn reading_stdin(args: &[String]) -> Vec<String> {
    let mut args = without(&without(args, "--input-jsonl", true), "--input-json", true);
    args.push("--input-jsonl".into());
    args.push("-".into());
    args
}

/// The `aoi:error` events that name input line 1.
fn names_line_one(captured: &Captured) -> Vec<&ErrorEvent> {
    captured
        .errors()
        .filter(|e| e.line_number == Some(1))
        .collect()
}

fn fail_fast(subject: &Subject<'_>, args: &[String]) -> Result<String, CheckResult> {
    let judge = Judge::new(ID, subject);
    let extras = Extras {
        env: Vec::new(),
        stdin: Some(INPUT.to_vec()),
    };
    let run = subject
        .exec(args, &extras)
        .map_err(|why| judge.could_not_run(why))?;
    if run.run.exit.code() == Some(0) {
        return Err(judge
            .fail("fail-fast input with a malformed line exits 0")
            .evidence(run.evidence()));
    }
    if let Some(change) = run.changes.first() {
        return Err(judge
            .fail(format!(
                "fail-fast input with a malformed line still changed the sandbox: {change}"
            ))
            .evidence(run.evidence()));
    }
    if names_line_one(&run).is_empty() {
        return Err(judge
            .fail(format!(
                "the fail-fast error does not name the malformed line (line_number 1): {}",
                run.first_error().unwrap_or_else(|| run.ending())
            ))
            .evidence(run.evidence()));
    }
    Ok(format!(
        "fail-fast aborts at line 1 (exit {}) and writes nothing",
        run.run.exit.shell_status()
    ))
}

fn continue_on_error(subject: &Subject<'_>, args: &[String]) -> Result<String, CheckResult> {
    let judge = Judge::new(ID, subject);
    let extras = Extras {
        env: Vec::new(),
        stdin: Some(INPUT.to_vec()),
    };
    let run = subject
        .exec(args, &extras)
        .map_err(|why| judge.could_not_run(why))?;
    let named = names_line_one(&run);
    let Some(error) = named.first() else {
        return Err(judge
            .fail("continue-on-error gives no item error for the malformed line 1")
            .evidence(run.evidence()));
    };
    if error.scope == Scope::Process {
        return Err(judge
            .fail("continue-on-error reports the malformed line as a process error, not an item error")
            .evidence(run.evidence()));
    }
    if run.summary().is_none() || run.run.timed_out {
        return Err(judge
            .fail(format!(
                "continue-on-error did not go on to a summary ({})",
                run.ending()
            ))
            .evidence(run.evidence()));
    }
    Ok("continue-on-error reports line 1 as an item error and goes on".into())
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if !subject.takes("--input-jsonl") {
        return judge.not_applicable("takes no JSONL input");
    }
    let base = match &subject.base {
        Ok(args) => reading_stdin(args),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let plain = without(
        &without(&base, "--fail-fast", false),
        "--continue-on-error",
        false,
    );
    let default = subject.entry.input_default.as_deref();
    let mut passed = Vec::new();
    let outcome = match default {
        Some("fail_fast") => fail_fast(subject, &plain),
        Some("continue_on_error") => continue_on_error(subject, &plain),
        Some(other) => {
            return judge.fail(format!(
                "capabilities declares input_default {other:?}, neither fail_fast nor continue_on_error"
            ))
        }
        None if subject.takes("--fail-fast") || subject.takes("--continue-on-error") => {
            Ok("no declared default; the mode is configurable".to_owned())
        }
        None => {
            return judge.fail(
                "the command takes JSONL input but declares no malformed-line mode (input_default, §12.2)",
            )
        }
    };
    match outcome {
        Ok(text) => passed.push(text),
        Err(result) => return result,
    }
    if subject.takes("--continue-on-error") && default != Some("continue_on_error") {
        let mut args = plain.clone();
        args.push("--continue-on-error".into());
        match continue_on_error(subject, &args) {
            Ok(text) => passed.push(format!("{text} under --continue-on-error")),
            Err(result) => return result,
        }
    }
    if subject.takes("--fail-fast") && default != Some("fail_fast") {
        let mut args = plain;
        args.push("--fail-fast".into());
        match fail_fast(subject, &args) {
            Ok(text) => passed.push(format!("{text} under --fail-fast")),
            Err(result) => return result,
        }
    }
    judge.pass(passed.join("; "))
}
