//! Check 7, Idempotent (§14.4): run twice with the same `--idempotency-key`, the second run
//! replays the first one's result and changes nothing more.

use serde_json::{Map, Value};

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{with, Extras, Subject};

/// This check.
pub const ID: CheckId = id(7);

/// A domain event without its envelope, for comparing two runs.
fn payload(fields: &Map<String, Value>) -> Value {
    Value::Object(fields.clone())
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if subject.entry.read_only {
        return judge.not_applicable("read-only: nothing to repeat safely (§18.1)");
    }
    if !subject.takes("--idempotency-key") {
        return judge.not_applicable("does not advertise --idempotency-key");
    }
    let args = match &subject.base {
        Ok(args) => with(args, "--idempotency-key", "aoi-lint-idempotency-probe"),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let sandbox = match subject.fresh() {
        Ok(s) => s,
        Err(why) => return judge.could_not_run(why),
    };
    let first = match subject.exec_in(&sandbox, &args, &Extras::default()) {
        Ok(run) => run,
        Err(why) => return judge.could_not_run(why),
    };
    if !first.succeeded() {
        return judge
            .could_not_run(format!(
                "the first run did not succeed ({})",
                first.ending()
            ))
            .evidence(first.evidence());
    }
    let second = match subject.exec_in(&sandbox, &args, &Extras::default()) {
        Ok(run) => run,
        Err(why) => return judge.could_not_run(why),
    };
    if !second.succeeded() {
        return judge
            .fail(format!(
                "the same key a second time did not succeed ({}{})",
                second.ending(),
                second
                    .first_error()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ))
            .evidence(second.evidence());
    }
    if let Some(change) = second.changes.first() {
        return judge
            .fail(format!(
                "the replay changed the sandbox again ({} file(s), first {change}): the effect doubled",
                second.changes.len()
            ))
            .evidence(second.evidence());
    }
    let a: Vec<Value> = first.domain().map(payload).collect();
    let b: Vec<Value> = second.domain().map(payload).collect();
    if a != b {
        return judge
            .fail(format!(
                "the replay returned {} domain event(s) that differ from the first run's {}",
                b.len(),
                a.len()
            ))
            .evidence(second.quote(None, &serde_json::to_string(&b).unwrap_or_default()));
    }
    judge.pass(format!(
        "the second run with the same key replays {} event(s) and changes nothing",
        b.len()
    ))
}
