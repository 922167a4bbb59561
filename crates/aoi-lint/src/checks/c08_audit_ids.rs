//! Check 8, Auditable (§14.5): a mutating command's events carry stable ids for what it
//! created, updated or deleted, and those ids are stable: a replay with the same
//! `--idempotency-key` names the same ones, and two reads of the same data name the same ones.
//!
//! An id is a field named `id`, `*_id`, `ids`, `path` or `url` (`docs/discovery.md`), or a
//! documented natural key (§14.4): a field whose description in the event schema calls it an
//! identifier or natural key.

use serde_json::{Map, Value};

use super::{id, Judge};
use crate::model::{Advice, CheckId, CheckResult};
use crate::subject::{without, Captured, Extras, Subject};

/// This check.
pub const ID: CheckId = id(8);

/// True when `key` names an identifier: `id`, `*_id`, `ids`, a path or a URL.
pub(crate) fn is_id_key(key: &str) -> bool {
    key == "id"
        || key == "ids"
        || key.ends_with("_id")
        || key.ends_with("_ids")
        || is_location_key(key)
}

/// True when `key` names where a resource is: a path or a URL.
fn is_location_key(key: &str) -> bool {
    key == "path" || key.ends_with("_path") || key == "url" || key == "uri"
}

/// Identifiers of a run rather than of a resource: they may differ between two runs.
const PER_RUN: [&str; 7] = [
    "run_id",
    "request_id",
    "trace_id",
    "span_id",
    "event_id",
    "correlation_id",
    "session_id",
];

/// True when `value` is a usable identifier (not empty).
fn is_value(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.is_empty(),
        Value::Number(_) => true,
        Value::Array(items) => !items.is_empty(),
        _ => false,
    }
}

/// True when a property's description documents it as an identifier (§14.4 "a documented
/// natural key"): it says "identifier", "natural key" or "natural id".
fn documents_an_id(description: &str) -> bool {
    let text = description.to_lowercase();
    text.contains("identifier") || text.contains("natural key") || text.contains("natural id")
}

/// The event properties `schema` documents as identifiers, anywhere in it.
fn documented_ids(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                for (name, prop) in props {
                    let documented = prop
                        .get("description")
                        .and_then(Value::as_str)
                        .is_some_and(documents_an_id);
                    if documented && !out.contains(name) && !PER_RUN.contains(&name.as_str()) {
                        out.push(name.clone());
                    }
                }
            }
            for value in map.values() {
                documented_ids(value, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                documented_ids(item, out);
            }
        }
        _ => {}
    }
}

/// The tool's natural keys: the event fields its schema documents as identifiers.
fn natural_keys(subject: &Subject<'_>) -> Vec<String> {
    let mut keys = Vec::new();
    if let Ok(schema) = &subject.tool.schema.value {
        documented_ids(schema, &mut keys);
    }
    keys
}

/// The ids an event carries, as `field=value` (sorted by field): id-like fields (locations
/// only when `locations`, per-run ids never) and documented natural keys.
fn ids_of(fields: &Map<String, Value>, natural: &[String], locations: bool) -> Vec<String> {
    let mut out: Vec<String> = fields
        .iter()
        .filter(|(k, v)| {
            let id_like = is_id_key(k)
                && !PER_RUN.contains(&k.as_str())
                && (locations || !is_location_key(k));
            (id_like || natural.contains(k)) && is_value(v)
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    out.sort();
    out
}

/// Every id the run's domain events carry, in event order.
fn ids(run: &Captured, natural: &[String], locations: bool) -> Vec<String> {
    run.domain()
        .flat_map(|e| ids_of(e, natural, locations))
        .collect()
}

/// The events of a run as compared across two runs: the domain events without the
/// envelope.
fn events_of(run: &Captured) -> Vec<Map<String, Value>> {
    run.domain()
        .map(|e| {
            let mut e = e.clone();
            e.remove("aoi");
            e
        })
        .collect()
}

/// When no field reads as an id, for a command capabilities calls additive (each run adds a
/// resource): the example run twice in one sandbox (without its idempotency key, so the
/// second run is a second mutation). Two runs that both changed the sandbox added two
/// resources, and events that are identical name neither: the failure of §14.5, shown without
/// knowing which field a tool uses as its key. `None` when the runs cannot show it (not
/// additive: a second update of one resource may rightly say the same; the second run was
/// refused, changed nothing, or its events differ).
fn two_runs_name_nothing(subject: &Subject<'_>) -> Option<CheckResult> {
    if !subject.entry.additive {
        return None;
    }
    let args = subject.base.as_ref().ok()?;
    let args = without(args, "--idempotency-key", true);
    let sandbox = subject.fresh().ok()?;
    let first = subject.exec_in(&sandbox, &args, &Extras::default()).ok()?;
    let second = subject.exec_in(&sandbox, &args, &Extras::default()).ok()?;
    let both_changed = first.succeeded()
        && second.succeeded()
        && !first.changes.is_empty()
        && !second.changes.is_empty();
    let events = events_of(&first);
    if !both_changed || events.is_empty() || events != events_of(&second) {
        return None;
    }
    Some(
        Judge::new(ID, subject)
            .fail(format!(
                "run twice, the mutation changed the sandbox both times ({} then {} file(s)) and emitted the same events both times: nothing in them names which resource each run changed (§14.5: mutating operations SHOULD emit stable IDs/paths/URLs for resources created, updated, or deleted)",
                first.changes.len(),
                second.changes.len()
            ))
            .evidence(first.evidence())
            .evidence(second.evidence()),
    )
}

/// A short list of ids for a detail line.
fn shown(ids: &[String]) -> String {
    let mut text = ids.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > 3 {
        text.push_str(", …");
    }
    if text.is_empty() {
        text.push_str("none");
    }
    text
}

/// A read-only command whose events name resources: the same data read twice (two fresh
/// sandboxes made from the same setup) names the same ids.
fn two_reads(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if subject.entry.unbounded {
        return judge.not_applicable("read-only and unbounded: nothing to audit (§18.1)");
    }
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    let natural = natural_keys(subject);
    let mut first = ids(base, &natural, false);
    if !base.succeeded() || first.is_empty() {
        return judge.not_applicable(
            "read-only, and its example names no resource by id: nothing to audit (§18.1)",
        );
    }
    let args = match &subject.base {
        Ok(args) => args.clone(),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let again = match subject.exec(&args, &Extras::default()) {
        Ok(run) => run,
        Err(why) => return judge.could_not_run(why),
    };
    let mut second = ids(&again, &natural, false);
    first.sort();
    second.sort();
    if first != second {
        return judge
            .fail(format!(
                "two reads of the same data name different ids ({} then {}): an id that changes is no stable id (§14.5)",
                shown(&first),
                shown(&second)
            ))
            .evidence(again.evidence());
    }
    judge.pass(format!(
        "two reads of the same data name the same {} id(s)",
        first.len()
    ))
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if subject.entry.read_only {
        return two_reads(subject);
    }
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    if !base.succeeded() {
        return judge
            .could_not_run(format!("the example did not succeed ({})", base.ending()))
            .evidence(base.evidence());
    }
    if base.changes.is_empty() {
        return judge.could_not_run(
            "the example changed nothing in the sandbox, so there is nothing to audit; give an invocation with an effect in aoi-lint.toml",
        );
    }
    let natural = natural_keys(subject);
    let domain: Vec<&Map<String, Value>> = base.domain().collect();
    let with_ids = domain
        .iter()
        .filter(|e| !ids_of(e, &natural, true).is_empty())
        .count();
    if domain.is_empty() {
        return judge
            .fail(format!(
                "the mutation changed {} file(s) but emitted no domain event to name what it changed (§14.5: mutating operations SHOULD emit stable IDs/paths/URLs for resources created, updated, or deleted)",
                base.changes.len()
            ))
            .evidence(base.evidence());
    }
    if with_ids == 0 {
        if let Some(failed) = two_runs_name_nothing(subject) {
            return failed;
        }
        // The events may name the resource by a key lint cannot tell from other fields: §14.4
        // allows "a documented natural key", and the words it is documented in are the
        // tool's. Which field is an id is the profile's convention, so this is advice.
        return judge
            .pass(format!(
                "the mutation changed {} file(s) and emitted {} domain event(s); lint could not tell which field names the resource",
                base.changes.len(),
                domain.len()
            ))
            .advise(Advice {
                detail: format!(
                    "none of the {} domain event(s) has a field lint reads as an id",
                    domain.len()
                ),
                fix: "name the resource's id field `id`, `*_id`, `path` or `url`, or say in its description in the event schema that it is the resource's identifier or natural key (docs/discovery.md, \"a resource's id in an event\")".into(),
                evidence: vec![base.evidence()],
            });
    }
    let mut passed = format!("{with_ids} of {} domain event(s) carry an id", domain.len());
    if subject.takes("--idempotency-key") {
        // Whether the replay itself works is check 7's; here, only what it names.
        if let Ok(replay) = subject.replay() {
            // A replay that did the work again made new resources: that doubled effect is
            // check 7's failure, and its new ids follow from it.
            if replay.second.succeeded() && replay.second.changes.is_empty() {
                let first = ids(&replay.first, &natural, true);
                let second = ids(&replay.second, &natural, true);
                if first != second {
                    return judge
                        .fail(format!(
                            "a replay with the same --idempotency-key names other ids than the first run ({} then {}): the ids are not stable (§14.4, §14.5)",
                            shown(&first),
                            shown(&second)
                        ))
                        .evidence(replay.second.evidence());
                }
                passed.push_str("; a replay names the same ones");
            }
        }
    }
    judge.pass(passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn ids_paths_and_urls_count_but_empty_values_do_not() {
        let has = |v: Value| !ids_of(&fields(v), &[], true).is_empty();
        assert!(has(serde_json::json!({"id": "doc_1"})));
        assert!(has(serde_json::json!({"source_id": 7})));
        assert!(has(serde_json::json!({"path": "/x"})));
        assert!(!has(serde_json::json!({"id": ""})));
        assert!(!has(serde_json::json!({"title": "t", "count": 3})));
        assert!(!has(serde_json::json!({"request_id": "r1"})));
    }

    #[test]
    fn a_field_the_schema_documents_as_an_identifier_is_an_id() {
        let schema = serde_json::json!({"$defs": {"record": {"properties": {
            "key": {"type": "string", "description": "The record's key: its natural identifier (§14.4)"},
            "value": {"type": "string", "description": "The value"}
        }}}});
        let mut found = Vec::new();
        documented_ids(&schema, &mut found);
        assert_eq!(found, ["key"]);
        let event = fields(serde_json::json!({"key": "a", "value": "v"}));
        assert_eq!(ids_of(&event, &found, true), ["key=\"a\""]);
        assert!(ids_of(&event, &[], true).is_empty());
    }
}
