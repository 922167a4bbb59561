//! Check 4, Typed · Verifiable (§5, §8.3, §10): `aoi:meta`, `aoi:summary`, `aoi:warning`,
//! `aoi:error` and `aoi:check` (and every other event) validate against the schema the tool
//! publishes.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{id, stream_check, Judge};
use crate::model::{Advice, CheckId, CheckResult, Evidence};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(4);

/// The field lint adds to a domain event to see whether the schema lets an event grow.
const PROBE_FIELD: &str = "x_aoi_lint_added_field";

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let schema = match &subject.tool.schema.value {
        Ok(schema) => schema,
        Err(why) => {
            return Judge::new(ID, subject)
                .could_not_run(format!("no event schema to validate against: {why}"))
        }
    };
    let result = stream_check(
        subject,
        ID,
        "every event validates against the tool's published schema",
    );
    match closed_event_types(subject, schema) {
        Some(advice) => result.advise(advice),
        None => result,
    }
}

/// §10.3 "Event/output schemas SHOULD be permissive for forward‑compatible extension: allow
/// unknown fields unless a specific event class has a reason to forbid them": each domain
/// event type of the base run whose first event, valid as written, stops validating once one
/// unknown field is added. Advice (a SHOULD), whatever style the schema is written in.
fn closed_event_types(subject: &Subject<'_>, schema: &Value) -> Option<Advice> {
    let base = subject.base_run().ok()?;
    let validator = jsonschema::validator_for(schema).ok()?;
    let mut seen = BTreeSet::new();
    let mut closed = Vec::new();
    for line in base.run.stdout.split(|b| *b == b'\n') {
        let Ok(Value::Object(event)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let Some(ty) = event.get("type").and_then(Value::as_str) else {
            continue;
        };
        if ty.starts_with("aoi:") || !seen.insert(ty.to_owned()) {
            continue;
        }
        let instance = Value::Object(event.clone());
        if !validator.is_valid(&instance) {
            continue;
        }
        let mut grown = event.clone();
        grown.insert(PROBE_FIELD.into(), Value::Bool(true));
        if !validator.is_valid(&Value::Object(grown)) {
            closed.push(format!("`{ty}`"));
        }
    }
    if closed.is_empty() {
        return None;
    }
    Some(Advice {
        detail: format!(
            "spec §10.3 SHOULD: the event schema rejects {} once it carries one field more, so a field added in a minor version breaks consumers that validate",
            closed.join(", ")
        ),
        fix: "allow unknown fields on domain events unless an event class has a reason to forbid them (§10.3 \"Event/output schemas SHOULD be permissive for forward‑compatible extension\")".into(),
        evidence: vec![Evidence {
            invocation: base.run.argv.clone(),
            ..Evidence::default()
        }],
    })
}
