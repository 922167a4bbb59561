//! Check 7, Idempotent (§14.4): run twice with the same `--idempotency-key`, the second run
//! replays the first one's result and changes nothing more.
//!
//! A replay is judged by its effect (the sandbox does not change again) and its result (the
//! same domain events), not its bytes: a replay may mark its events `"replayed": true`, and
//! the ids it names are check 8's to compare.

use serde_json::{Map, Value};

use super::c08_audit_ids::is_id_key;
use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(7);

/// Fields a replay may add or change without changing its result: the marker that it is one.
const REPLAY_MARKERS: [&str; 2] = ["replayed", "replay"];

/// A domain event's result for comparing a replay with the first run: its fields without the
/// replay marker and the ids (check 8 compares those).
fn result(fields: &Map<String, Value>) -> Value {
    let mut out = fields.clone();
    out.retain(|k, _| !REPLAY_MARKERS.contains(&k.as_str()) && !is_id_key(k));
    Value::Object(out)
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
    if let Err(why) = &subject.base {
        return judge.could_not_run(why.clone());
    }
    let replay = match subject.replay() {
        Ok(replay) => replay,
        Err(why) => return judge.could_not_run(why),
    };
    let (first, second) = (&replay.first, &replay.second);
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
    let a: Vec<Value> = first.domain().map(result).collect();
    let b: Vec<Value> = second.domain().map(result).collect();
    if a != b {
        return judge
            .fail(format!(
                "the replay returned {} domain event(s) that differ from the first run's {}: not the prior result",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_marker_and_the_ids_are_not_the_result() {
        let fields = |v: Value| match v {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let first = fields(serde_json::json!({"id": "n1", "title": "t"}));
        let replayed = fields(serde_json::json!({"id": "n2", "title": "t", "replayed": true}));
        let other = fields(serde_json::json!({"id": "n1", "title": "u"}));
        assert_eq!(result(&first), result(&replayed));
        assert_ne!(result(&first), result(&other));
    }
}
