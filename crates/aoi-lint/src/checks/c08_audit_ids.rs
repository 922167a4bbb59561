//! Check 8, Auditable (§14.5): a mutating command's events carry stable ids for what it
//! created, updated or deleted.

use serde_json::{Map, Value};

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(8);

/// True when `key` names an identifier: `id`, `*_id`, `ids`, a path or a URL.
fn is_id_key(key: &str) -> bool {
    key == "id"
        || key == "ids"
        || key.ends_with("_id")
        || key.ends_with("_ids")
        || key == "path"
        || key.ends_with("_path")
        || key == "url"
        || key == "uri"
}

/// True when `event` carries a non-empty identifier.
fn has_id(fields: &Map<String, Value>) -> bool {
    fields.iter().any(|(k, v)| {
        is_id_key(k)
            && match v {
                Value::String(s) => !s.is_empty(),
                Value::Number(_) => true,
                Value::Array(items) => !items.is_empty(),
                _ => false,
            }
    })
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if subject.entry.read_only {
        return judge.not_applicable("read-only: nothing to audit (§18.1)");
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
    let domain: Vec<&Map<String, Value>> = base.domain().collect();
    if base.changes.is_empty() {
        return judge.could_not_run(
            "the example changed nothing in the sandbox, so there is nothing to audit; give an invocation with an effect in aoi-lint.toml",
        );
    }
    let with_ids = domain.iter().filter(|e| has_id(e)).count();
    if with_ids == 0 {
        let what = if domain.is_empty() {
            "no domain event".to_owned()
        } else {
            format!("{} domain event(s), none with an id", domain.len())
        };
        return judge
            .fail(format!(
                "the mutation changed {} file(s) but emitted {what}",
                base.changes.len()
            ))
            .evidence(base.evidence());
    }
    judge.pass(format!(
        "{with_ids} of {} domain event(s) carry a stable id",
        domain.len()
    ))
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
        assert!(has_id(&fields(serde_json::json!({"id": "doc_1"}))));
        assert!(has_id(&fields(serde_json::json!({"source_id": 7}))));
        assert!(has_id(&fields(serde_json::json!({"path": "/x"}))));
        assert!(!has_id(&fields(serde_json::json!({"id": ""}))));
        assert!(!has_id(&fields(
            serde_json::json!({"title": "t", "count": 3})
        )));
    }
}
