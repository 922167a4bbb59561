//! Schemas small enough for `tools/list`, and valid for any client's validator.
//!
//! A host puts every tool's schemas into a model's context and compiles them, so what
//! `tools/list` carries is paid for on every session. The schemas stay self-contained (every
//! `$ref` is local: a client validates with what is in the tool itself), and lose only what
//! neither a model nor a validator of the *result* needs, each step accepting more, never less:
//!
//! - `format` values JSON Schema 2020-12 does not define (`uint64`, `int64`, `double`, …,
//!   which schemars writes) are dropped, an unsigned one leaving `minimum: 0`. Only formats
//!   that both 2020-12 and the common validators (Ajv's `ajv-formats`, Python's `jsonschema`)
//!   know are kept. Path markers (`format` or `x-aoi-format` `"path"`) go from input schemas:
//!   the adapter confines paths by the CLI's own schema.
//! - `$comment`s, and the framework's cross-field rules (`allOf` of `if`/`then` inside an
//!   event's definition: `retry_after_ms` only when retryable, `reason` with `ok:false`): the
//!   adapter verifies every stream against the CLI's full schema before it builds a result.
//! - The envelope (`aoi: {seq, run, t}`) of every event, which a model has no use for.
//! - Descriptions that repeat the tool's own (the input schema's title and description) or
//!   say the same in every tool (the event schema's prose about itself).
//! - Definitions nothing refers to any more.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Formats of JSON Schema 2020-12 that the common validators also implement.
pub const STANDARD_FORMATS: [&str; 15] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is a map of names to schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is one schema.
const SCHEMA_ONE: [&str; 10] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Calls `f` on every schema object in `schema`, itself first, then the subschemas: only
/// where a schema may stand, so a property named `format` or `description` is never mistaken
/// for the keyword, nor is an `enum`'s or a `default`'s data.
pub fn for_each_schema(schema: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(map) = schema else { return };
    f(map);
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if SCHEMA_MAPS.contains(&key) {
            if let Value::Object(named) = value {
                named.values_mut().for_each(|s| for_each_schema(s, f));
            }
        } else if SCHEMA_ONE.contains(&key) {
            for_each_schema(value, f);
        } else if SCHEMA_LISTS.contains(&key) {
            if let Value::Array(list) = value {
                list.iter_mut().for_each(|s| for_each_schema(s, f));
            }
        }
    }
}

/// Keeps only [`STANDARD_FORMATS`] in one schema object (see the module doc).
fn standard_format(map: &mut Map<String, Value>) {
    let Some(format) = map.get("format").and_then(Value::as_str).map(str::to_owned) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format.as_str()) {
        return;
    }
    map.remove("format");
    if format.starts_with("uint") && !map.contains_key("minimum") {
        map.insert("minimum".into(), 0.into());
    }
}

/// `schema` with only standard formats, everywhere a schema stands.
pub fn standard_formats(schema: &mut Value) {
    for_each_schema(schema, &mut standard_format);
}

/// The caller's input schema, compacted: standard formats only, no `$schema`-sibling prose
/// that the tool's own title and description already say.
pub fn input(schema: &mut Map<String, Value>) {
    schema.remove("title");
    schema.remove("description");
    // `$schema` stays: MCP reads an inputSchema without one as 2020-12, but a dialect the
    // CLI names is the caller's to see (the conformance suite's json-schema-2020-12).
    if schema.get("required") == Some(&Value::Array(Vec::new())) {
        schema.remove("required");
    }
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for prop in props.values_mut() {
            // A switch is off unless given: saying so is no information.
            if let Value::Object(p) = prop {
                if p.get("type").and_then(Value::as_str) == Some("boolean")
                    && p.get("default") == Some(&Value::Bool(false))
                {
                    p.remove("default");
                }
            }
        }
    }
    let mut value = Value::Object(std::mem::take(schema));
    standard_formats(&mut value);
    // Which arguments are paths is the adapter's to enforce (`--root`), read from the CLI's
    // own schema: the marker says nothing a caller can act on.
    for_each_schema(&mut value, &mut |map| {
        map.remove(aoi::discover::input_schema::X_AOI_FORMAT);
    });
    if let Value::Object(map) = value {
        *schema = map;
    }
}

/// True for an `allOf` entry of the event schema that discriminates by `type` (§10.4):
/// `{"if": {"properties": {"type": {"const" | "enum": …}}}, "then": …}`.
fn discriminates(entry: &Value) -> bool {
    entry
        .pointer("/if/properties/type")
        .is_some_and(|t| t.get("const").is_some() || t.get("enum").is_some())
        && entry.get("then").is_some()
}

/// The framework events a result may hold, as the adapter describes them in every tool's
/// `outputSchema`: the fields a model acts on (§8.3, §9.1, §15), each with its JSON type, and
/// nothing a result could break that the CLI's own schema allows (a category the spec adds
/// later is forwarded unchanged, §9.4: a string, not the enum). The adapter has already
/// verified every event against the CLI's full schema; these only accept more.
fn framework_shape(ty: &str) -> Option<Value> {
    Some(match ty {
        "aoi:summary" => serde_json::json!({
            "required": ["ok"],
            "properties": {"ok": {"type": "boolean"}, "truncated": {"type": "boolean"},
                "next_cursor": {"type": ["string", "null"]}}
        }),
        "aoi:error" => {
            serde_json::json!({"required": ["category", "code", "message", "retryable"]})
        }
        _ => return None,
    })
}

/// True for a framework type (`aoi:*`, §8.2).
fn framework(ty: &str) -> bool {
    ty.starts_with("aoi:")
}

/// The `type` an `allOf` entry of the event schema discriminates, when it names one.
fn discriminated(entry: &Value) -> Option<&str> {
    let ty = entry.pointer("/if/properties/type")?;
    ty.get("const")
        .and_then(Value::as_str)
        .or_else(|| ty.get("enum")?.as_array()?.first()?.as_str())
}

/// An event schema (one JSON Schema for every line, discriminated by `type`, with its
/// `$defs`), compacted as the module doc says, with the framework events of `types` (every
/// one, when `types` is empty) described by the adapter (`framework_shape`) instead of by
/// the CLI's definitions. Accepts every event it accepted before.
pub fn events_of(schema: &mut Value, types: &[String]) {
    if let Some(Value::Array(entries)) = schema.get_mut("allOf") {
        entries.retain(|e| discriminates(e) && discriminated(e).is_none_or(|t| !framework(t)));
        let framework: Vec<Value> = [
            "aoi:summary",
            "aoi:error",
            "aoi:warning",
            "aoi:plan",
            "aoi:check",
        ]
        .into_iter()
        .filter(|ty| types.is_empty() || types.iter().any(|t| t == ty))
        .filter_map(|ty| {
            let shape = framework_shape(ty)?;
            Some(serde_json::json!({"if": {"properties": {"type": {"const": ty}}}, "then": shape}))
        })
        .collect();
        entries.splice(0..0, framework);
    }
    events(schema);
}

/// An event schema compacted as the module doc says. Accepts every event it accepted before.
pub fn events(schema: &mut Value) {
    if let Some(Value::Object(ty)) = schema.pointer_mut("/properties/type") {
        ty.remove("description");
    }
    let Value::Object(root) = schema else { return };
    root.remove("description");
    let typed = root
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|n| n == "type"));
    if let Some(Value::Array(entries)) = root.get_mut("allOf") {
        entries.retain(discriminates);
        if typed {
            // Every event has a `type` already: the `if` need not require it again.
            for entry in entries.iter_mut() {
                if let Some(Value::Object(condition)) = entry.get_mut("if") {
                    condition.remove("required");
                }
            }
        }
    }
    if let Some(Value::Object(ty)) = schema.pointer_mut("/properties/type") {
        ty.remove("minLength");
    }
    let mut at_root = true;
    for_each_schema(schema, &mut |map| {
        map.remove("$comment");
        standard_format(map);
        if map.get("type").and_then(Value::as_str) == Some("integer")
            || map.get("type") == Some(&serde_json::json!(["integer", "null"]))
        {
            map.remove("minimum");
        }
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            if props.get("aoi").is_some_and(|a| a.get("$ref").is_some()) {
                props.remove("aoi");
            }
        }
        if !at_root {
            if let Some(Value::Array(entries)) = map.get_mut("allOf") {
                entries.retain(|e| e.get("if").is_none());
                if entries.is_empty() {
                    map.remove("allOf");
                }
            }
        }
        at_root = false;
    });
    inline_event_definitions(schema);
    prune_definitions(schema);
}

/// Each event type's definition, referred to once by its discriminator entry, moved into that
/// entry (`then`), without the `type` constant the entry's `if` already tests.
fn inline_event_definitions(schema: &mut Value) {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut count = |v: &Value| {
        for name in refs_all(v) {
            *counts.entry(name).or_default() += 1;
        }
    };
    count(schema);
    let Some(Value::Object(defs)) = schema.get("$defs").cloned() else {
        return;
    };
    let Some(Value::Array(entries)) = schema.get_mut("allOf") else {
        return;
    };
    for entry in entries.iter_mut() {
        let Some(ty) = discriminated(entry).map(str::to_owned) else {
            continue;
        };
        let Some(name) = entry
            .pointer("/then/$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .map(str::to_owned)
        else {
            continue;
        };
        if counts.get(&name) != Some(&1) {
            continue;
        }
        let Some(Value::Object(mut def)) = defs.get(&name).cloned() else {
            continue;
        };
        if let Some(Value::Object(props)) = def.get_mut("properties") {
            if props.get("type") == Some(&serde_json::json!({"const": ty})) {
                props.remove("type");
            }
        }
        entry["then"] = Value::Object(def);
    }
}

/// Every `#/$defs/NAME` reference in `value`, once per occurrence.
fn refs_all(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut walk = vec![value];
    while let Some(v) = walk.pop() {
        match v {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    // A JSON Pointer token: `~1` is `/`, `~0` is `~`.
                    found.push(name.replace("~1", "/").replace("~0", "~"));
                }
                walk.extend(map.values());
            }
            Value::Array(items) => walk.extend(items),
            _ => {}
        }
    }
    found
}

/// A tool's output schema (`{events, summary, …}`) with the fields beside `events` and
/// `summary` (the adapter's failure details) named and typed, their inner shapes left to the
/// result itself.
///
/// The summary's shape moves from the events' discriminator into `summary` itself: a result's
/// events never hold the run's summary.
pub fn result_fields(schema: &mut Map<String, Value>) {
    let summary_ref =
        serde_json::json!({"anyOf": [{"$ref": "#/$defs/aoi_event"}, {"type": "null"}]});
    if schema.get("properties").and_then(|p| p.get("summary")) == Some(&summary_ref) {
        let mut value = Value::Object(std::mem::take(schema));
        let shape = match value.pointer_mut("/$defs/aoi_event/allOf") {
            Some(Value::Array(entries)) => entries
                .iter()
                .position(|e| discriminated(e) == Some("aoi:summary"))
                .map(|i| entries.remove(i))
                .and_then(|e| e.get("then").cloned()),
            _ => None,
        };
        if let Some(Value::Object(mut shape)) = shape {
            shape.insert("type".into(), "object".into());
            value["properties"]["summary"] =
                serde_json::json!({"anyOf": [Value::Object(shape), {"type": "null"}]});
        }
        if let Value::Object(map) = value {
            *schema = map;
        }
    }
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return;
    };
    for (name, field) in props.iter_mut() {
        if name == "events" || name == "summary" {
            continue;
        }
        if let Value::Object(map) = field {
            if map.get("type").and_then(Value::as_str) == Some("object") {
                map.retain(|k, _| k == "type" || k == "description");
            }
        }
    }
}

/// Drops every schema `description` that an earlier schema of `schemas` already has, word
/// for word: a host lists every tool to the model at once, so the first one says what `db`
/// or `dry_run` is for all of them (`tools/list` order).
pub fn dedupe_descriptions<'a>(schemas: impl IntoIterator<Item = &'a mut Value>) {
    let mut seen = BTreeSet::new();
    for schema in schemas {
        for_each_schema(schema, &mut |map| {
            if let Some(Value::String(text)) = map.get("description") {
                if !seen.insert(text.clone()) {
                    map.remove("description");
                }
            }
        });
    }
}

/// Removes the `$defs` that nothing outside them refers to, directly or through another.
pub fn prune_definitions(schema: &mut Value) {
    let Some(Value::Object(defs)) = schema.get("$defs").cloned() else {
        return;
    };
    let mut root = schema.clone();
    if let Value::Object(map) = &mut root {
        map.remove("$defs");
    }
    let mut reachable = BTreeSet::new();
    let mut pending: Vec<String> = refs(&root).into_iter().collect();
    while let Some(name) = pending.pop() {
        if !reachable.insert(name.clone()) {
            continue;
        }
        if let Some(def) = defs.get(&name) {
            pending.extend(refs(def));
        }
    }
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        defs.retain(|name, _| reachable.contains(name));
    }
}

/// The `$defs` names `value` refers to (`#/$defs/NAME`).
fn refs(value: &Value) -> BTreeSet<String> {
    refs_all(value).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_standard_formats_go_and_unsigned_ones_keep_their_minimum() {
        let mut s = json!({"properties": {
            "n": {"type": "integer", "format": "uint64"},
            "m": {"type": "integer", "format": "uint32", "minimum": 1},
            "i": {"type": "integer", "format": "int64"},
            "d": {"type": "number", "format": "double"},
            "at": {"type": "string", "format": "date-time"},
            "p": {"type": "string", "format": "path"},
            "format": {"type": "string", "enum": ["a"], "default": "x"}
        }, "items": {"format": "float"}});
        standard_formats(&mut s);
        assert_eq!(
            s,
            json!({"properties": {
                "n": {"type": "integer", "minimum": 0},
                "m": {"type": "integer", "minimum": 1},
                "i": {"type": "integer"},
                "d": {"type": "number"},
                "at": {"type": "string", "format": "date-time"},
                "p": {"type": "string"},
                "format": {"type": "string", "enum": ["a"], "default": "x"}
            }, "items": {}}),
            "a property named `format` is a property"
        );
    }

    #[test]
    fn events_lose_envelopes_comments_and_cross_field_rules_but_keep_every_shape() {
        let mut s = json!({
            "description": "Every line",
            "type": "object",
            "properties": {"type": {"type": "string", "description": "discriminator"}, "aoi": {"$ref": "#/$defs/envelope"}},
            "allOf": [
                {"$comment": "closed namespace", "if": {"properties": {"type": {"pattern": "^aoi:"}}}, "then": {"properties": {"type": {"enum": ["aoi:summary"]}}}},
                {"if": {"properties": {"type": {"const": "aoi:summary"}}}, "then": {"$ref": "#/$defs/summary"}},
                {"if": {"properties": {"type": {"const": "hit"}}}, "then": {"$ref": "#/$defs/hit"}}
            ],
            "$defs": {
                "envelope": {"type": "object", "properties": {"seq": {"type": "integer", "format": "uint64"}}},
                "summary": {"$comment": "x", "type": "object", "required": ["ok"],
                    "properties": {"ok": {"type": "boolean"}, "aoi": {"$ref": "#/$defs/envelope"}},
                    "allOf": [{"if": {"properties": {"ok": {"const": false}}}, "then": {"required": ["reason"]}}]},
                "hit": {"type": "object", "required": ["rank"], "description": "A match.",
                    "properties": {"rank": {"type": "integer", "format": "uint64", "description": "Its rank."}}}
            }
        });
        events(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {"type": {"type": "string"}},
                "allOf": [
                    {"if": {"properties": {"type": {"const": "aoi:summary"}}},
                     "then": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}},
                    {"if": {"properties": {"type": {"const": "hit"}}},
                     "then": {"type": "object", "required": ["rank"], "description": "A match.",
                        "properties": {"rank": {"type": "integer", "description": "Its rank."}}}}
                ],
                "$defs": {}
            })
        );
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(
            !v.is_valid(&json!({"type": "hit"})),
            "a hit still needs its rank"
        );
        assert!(v.is_valid(&json!({"type": "aoi:summary", "ok": false, "aoi": {"seq": 1}})));
    }

    #[test]
    fn input_schemas_lose_the_prose_the_tool_already_has() {
        let mut s = json!({"title": "t x", "description": "X.", "type": "object",
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {"db": {"type": "string", "format": "path", "description": "The file"},
                "out": {"type": "string", "x-aoi-format": "path"}}})
        .as_object()
        .cloned()
        .unwrap();
        input(&mut s);
        assert_eq!(
            Value::Object(s),
            json!({"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema",
                "properties": {"db": {"type": "string", "description": "The file"},
                    "out": {"type": "string"}}})
        );
    }
}
