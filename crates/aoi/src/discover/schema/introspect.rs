//! Reading an event schema's shape: the event types its discriminator names, and the schema
//! narrowed to some of them (what `aoi mcp` and lint publish or compile per type).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

#[cfg(feature = "validate")]
/// For each event type `T` named by a top-level discriminator entry of `schema`, the schema
/// narrowed to `T`: its `allOf` keeps only the entries whose `if` may hold for `T` (see
/// [`EventValidator`]).
pub(crate) fn narrowed_by_type(schema: &Value) -> Vec<(String, Value)> {
    let Some(Value::Array(rules)) = schema.get("allOf") else {
        return Vec::new();
    };
    let types: BTreeSet<&str> = rules
        .iter()
        .filter_map(type_condition)
        .filter_map(|condition| condition.get("const").and_then(Value::as_str))
        .collect();
    types
        .into_iter()
        .map(|ty| {
            let kept: Vec<Value> = rules
                .iter()
                .filter(|rule| !type_condition(rule).is_some_and(|c| rejects(c, ty)))
                .cloned()
                .collect();
            let mut narrow = schema.clone();
            narrow["allOf"] = Value::Array(kept);
            (ty.to_owned(), narrow)
        })
        .collect()
}

/// `schema` narrowed to the event types `keep` accepts: a top-level discriminator entry
/// (`{"if": {"properties": {"type": {"const": T}}, "required": ["type"]}, "then": …}`, or an
/// `enum` of types) is dropped when `keep` refuses every type it applies to, and so are the
/// `$defs` nothing left refers to. Every other entry stays, so the narrowed schema accepts every
/// event of a kept type that the whole one accepts, and never rejects more.
///
/// This is how a consumer describes only what one command emits (the output schema of an MCP
/// tool, from `event_types` in capabilities) without copying the tool's whole schema.
///
/// ```
/// use serde_json::json;
/// let schema = json!({
///     "allOf": [
///         {"if": {"properties": {"type": {"const": "hit"}}, "required": ["type"]},
///          "then": {"$ref": "#/$defs/hit"}},
///         {"if": {"properties": {"type": {"const": "deleted"}}, "required": ["type"]},
///          "then": {"$ref": "#/$defs/deleted"}}
///     ],
///     "$defs": {"hit": {"type": "object"}, "deleted": {"type": "object"}}
/// });
/// let narrow = aoi::discover::schema::narrowed(&schema, |ty| ty == "hit");
/// assert_eq!(narrow["allOf"].as_array().unwrap().len(), 1);
/// assert!(narrow["$defs"].get("deleted").is_none());
/// ```
pub fn narrowed(schema: &Value, keep: impl Fn(&str) -> bool) -> Value {
    let Some(whole) = schema.as_object() else {
        return schema.clone();
    };
    // Only the parts kept are copied: a tool's whole schema is large.
    let mut out: Map<String, Value> = whole
        .iter()
        .filter(|(k, _)| k.as_str() != "$defs" && k.as_str() != "allOf")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(Value::Array(rules)) = whole.get("allOf") {
        let kept: Vec<Value> = rules
            .iter()
            .filter(|rule| {
                let applies_to = type_condition(rule).and_then(condition_types);
                !applies_to.is_some_and(|types| types.iter().all(|ty| !keep(ty)))
            })
            .cloned()
            .collect();
        out.insert("allOf".into(), Value::Array(kept));
    }
    let Some(Value::Object(defs)) = whole.get("$defs") else {
        return Value::Object(out);
    };
    // Definitions reachable from what is left, following references inside definitions too.
    let mut reachable = BTreeSet::new();
    let mut todo = Vec::new();
    for value in out.values() {
        collect_refs(value, &mut todo);
    }
    while let Some(name) = todo.pop() {
        if reachable.insert(name.clone()) {
            if let Some(def) = defs.get(&name) {
                collect_refs(def, &mut todo);
            }
        }
    }
    let kept: Map<String, Value> = reachable
        .into_iter()
        .filter_map(|k| Some((k.clone(), defs.get(&k)?.clone())))
        .collect();
    out.insert("$defs".into(), Value::Object(kept));
    Value::Object(out)
}

/// The event types `schema` describes one by one: those named by its top-level discriminator
/// entries (`if type is T then …`).
pub fn event_types(schema: &Value) -> BTreeSet<String> {
    let Some(Value::Array(rules)) = schema.get("allOf") else {
        return BTreeSet::new();
    };
    rules
        .iter()
        .filter_map(type_condition)
        .filter_map(condition_types)
        .flatten()
        .map(str::to_owned)
        .collect()
}

/// The event types a discriminator condition applies to, when it names them (`const` or an
/// `enum` of strings); `None` when it cannot be told.
fn condition_types(condition: &Value) -> Option<Vec<&str>> {
    if let Some(ty) = condition.get("const") {
        return Some(vec![ty.as_str()?]);
    }
    condition
        .get("enum")?
        .as_array()?
        .iter()
        .map(Value::as_str)
        .collect()
}

/// The names of the `#/$defs/NAME` references in `value`.
fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    if let Some(name) = v.as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                        out.push(name.to_owned());
                    }
                } else {
                    collect_refs(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// The schema an `allOf` entry's `if` applies to `type`, when the `if` looks at `type` alone:
/// `{"if": {"properties": {"type": S}, "required": ["type"]}, "then": …}` (`required` optional)
/// with only annotations besides (no `else`). `None` for any other shape.
pub(super) fn type_condition(rule: &Value) -> Option<&Value> {
    let rule = rule.as_object()?;
    let annotations_only = rule.keys().all(|k| {
        matches!(
            k.as_str(),
            "if" | "then" | "$comment" | "title" | "description"
        )
    });
    if !annotations_only || !rule.contains_key("then") {
        return None;
    }
    let condition = rule.get("if")?.as_object()?;
    let properties = condition.get("properties")?.as_object()?;
    // `required: ["type"]` may be there or not: only events with a string `type` are narrowed.
    let required_type_only = match condition.get("required") {
        None => condition.len() == 1,
        Some(required) => condition.len() == 2 && required == &json!(["type"]),
    };
    let exact = properties.len() == 1 && required_type_only;
    if exact {
        properties.get("type")
    } else {
        None
    }
}

#[cfg(feature = "validate")]
/// True when the schema `condition` certainly rejects the string `ty`; false when unsure. Its
/// keywords are a conjunction, so one keyword that rejects is enough.
pub(super) fn rejects(condition: &Value, ty: &str) -> bool {
    let Some(condition) = condition.as_object() else {
        return condition == &Value::Bool(false);
    };
    condition
        .iter()
        .any(|(keyword, value)| match keyword.as_str() {
            "const" => value.as_str() != Some(ty),
            "enum" => value
                .as_array()
                .is_some_and(|options| !options.iter().any(|o| o.as_str() == Some(ty))),
            "type" => value.as_str().is_some_and(|t| t != "string"),
            // Only an anchored literal prefix such as `^aoi:` is decided here.
            "pattern" => value
                .as_str()
                .and_then(literal_prefix)
                .is_some_and(|p| !ty.starts_with(p)),
            _ => false,
        })
}

#[cfg(feature = "validate")]
/// The literal of a pattern `^literal` without regex metacharacters.
pub(super) fn literal_prefix(pattern: &str) -> Option<&str> {
    let literal = pattern.strip_prefix('^')?;
    let plain = !literal.contains([
        '\\', '.', '^', '$', '|', '?', '*', '+', '(', ')', '[', ']', '{', '}',
    ]);
    plain.then_some(literal)
}
