//! The event schema: the JSON Schema a tool prints for `schema --output json` (spec §3, §10), and
//! the validator that checks stream lines against it.
//!
//! The schema is the one machine-readable statement of what a stream may carry, so it must not
//! drift from what the emitter writes. It is therefore derived with schemars from the same Rust
//! types: the framework events of [`crate::wire`] and the tool's own domain event types. The
//! Part I rules a type cannot state (conditional requirements, the closed `aoi:` namespace,
//! single-line messages) are added here, in one place, after derivation.
//!
//! # Shape of the document
//!
//! - `$schema` is JSON Schema 2020-12; `$id` is
//!   `{id_base}/{schema_name}/{schema_version}/events.json` and always `https://`, never a file
//!   URI (§10.2). The identity that matters is `schema_name` + `schema_version` (§5), repeated
//!   under `x-aoi` with `aoi_version` and the sorted `event_types`.
//! - The top level is an object that requires a string `type` and describes `aoi` as the
//!   envelope. It dispatches on `type` with one `if`/`then` per event type inside `allOf` (§10.4),
//!   so a failing line reports the rule of its own event, never an opaque "`oneOf` matched zero
//!   schemas". One more `if` closes the `aoi:` namespace (§8.2): an `aoi:`-prefixed type must be
//!   one of the eight framework types. An unprefixed type the schema does not know is valid:
//!   tools add event types and consumers ignore those they do not know.
//! - Nothing forbids unknown fields on an event (§10.3), except a domain type that itself denies
//!   them (`#[serde(deny_unknown_fields)]`).
//! - Framework fields are omitted when absent, never `null` (§13.1), so the derived
//!   "or null" of each `Option` field is removed; `aoi:summary.next_cursor` alone may be `null`.
//! - Framework shapes follow the reader's contract (what any conforming producer may write:
//!   `scope` may be omitted); domain types follow the serializer's (what this tool writes).
//!
//! # Definition names
//!
//! Definitions live under `$defs`, named so a name says who owns it:
//!
//! | `$defs` name | describes |
//! |---|---|
//! | `aoi.meta`, `aoi.summary`, `aoi.warning`, `aoi.error`, `aoi.check`, `aoi.plan`, `aoi.progress`, `aoi.heartbeat` | the framework event `aoi:<name>` (the `:` becomes `.`) |
//! | `aoi.envelope`, `aoi.category`, `aoi.code`, `aoi.reason`, `aoi.caused_by`, `aoi.upstream`, `aoi.scope`, `aoi.wrapped`, `aoi.protocol`, `aoi.severity` | framework shapes used by those events |
//! | `event.<type>` | the domain event whose `type` is `<type>`, e.g. `event.hit` |
//! | any other name | a type nested in a domain event, named by schemars (its Rust name) |
//!
//! A `$ref` to a definition escapes its name as a JSON pointer token, then percent-encodes it, so
//! any domain `type` string is safe.
//!
//! ```
//! use aoi::discover::schema::{EventSchema, EventValidator};
//! use aoi::Identity;
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Hit { rank: u32, id: String }
//!
//! let identity = Identity::new("outline", "1.8.2", "com.example.outline.events", "1.0.0");
//! let schema = EventSchema::new(&identity, "https://schemas.example.com/outline")
//!     .domain_event_named::<Hit>("hit")
//!     .build()?;
//! assert_eq!(
//!     schema["$id"],
//!     "https://schemas.example.com/outline/com.example.outline.events/1.0.0/events.json"
//! );
//! let validator = EventValidator::new(&schema)?;
//! let hit = serde_json::json!({"type": "hit", "aoi": {"seq": 1, "run": "R"}, "rank": 1, "id": "doc_1"});
//! assert!(validator.validate(&hit).is_ok());
//! let bad = serde_json::json!({"type": "hit", "rank": 1});
//! assert_eq!(validator.validate(&bad).unwrap_err(), ["(root): \"id\" is a required property"]);
//! # Ok::<(), aoi::discover::schema::SchemaError>(())
//! ```

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use crate::wire::{
    Check, Envelope, ErrorEvent, FrameworkEvent, Heartbeat, Identity, Meta, Plan, Progress, Reason,
    Summary, Warning, AOI_VERSION, FRAMEWORK_TYPES,
};

/// The JSON Schema dialect every event schema declares in `$schema`.
pub(crate) const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The `schema_name` of [`framework_schema`], the schema of a stream of framework events only.
pub(crate) const FRAMEWORK_SCHEMA_NAME: &str = "aoi.framework.events";

/// The `$id` base of [`framework_schema`]: the project's home, advisory only (§5).
pub(crate) const FRAMEWORK_ID_BASE: &str = "https://github.com/machinemode/machinemode/schemas";

/// The prefix that turns a domain event `type` into its `$defs` name (`hit` → `event.hit`).
pub(crate) const DOMAIN_DEF_PREFIX: &str = "event.";

/// The prefix of every framework definition name (`aoi:meta` → `aoi.meta`).
const FRAMEWORK_DEF_PREFIX: &str = "aoi.";

/// A single-line string (§9.1): no line break (as the verifier counts them) and no ANSI control.
const SINGLE_LINE_PATTERN: &str = r"^[^\n\r\u2028\u2029\u0085\u001b\u009b]*$";

/// Why an event schema could not be built or compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The `$id` base is not an `https://` URL with a host (§10.2 forbids file URIs).
    #[error("schema $id base {0:?} is not an https:// URL with a host and no query or fragment (spec §10.2)")]
    IdBase(String),
    /// A domain event type is empty or in the reserved `aoi:` namespace (§8.2).
    #[error("invalid domain event type {0:?}: it is empty or in the reserved `aoi:` namespace (spec §8.2)")]
    EventType(String),
    /// The same domain event type was registered twice.
    #[error("domain event type {0:?} is registered twice")]
    DuplicateEventType(String),
    /// A domain event type declares `type` or `aoi`, the two reserved top-level names (§8.1).
    #[error("domain event {event:?} declares the reserved top-level field {field:?} (spec §8.1)")]
    ReservedField {
        /// The domain event type.
        event: String,
        /// The reserved field it declares.
        field: String,
    },
    /// A type nested in a domain event has the `$defs` name of a domain event definition.
    #[error("the definition name {0:?} is used both by a domain event and by a nested type")]
    DefinitionClash(String),
    /// The document is not a schema the validator can compile.
    #[error("the event schema does not compile: {0}")]
    Compile(String),
}

/// A builder for one event schema: one tool, one `schema_name`, one `schema_version`.
///
/// A tool serving several schema versions (§5.1) builds one `EventSchema` per version from the
/// identity negotiated for it; `identity.schema_version` flows into `$id` and `x-aoi`.
///
/// ```
/// use aoi::discover::schema::EventSchema;
/// # #[derive(schemars::JsonSchema)] struct HitV2 { rank: u32 }
/// let v2 = aoi::Identity::new("outline", "2.0.0", "com.example.outline.events", "2.0.0");
/// let schema = EventSchema::new(&v2, "https://schemas.example.com/outline")
///     .domain_event_named::<HitV2>("hit")
///     .description("Search results, version 2.")
///     .build()?;
/// assert_eq!(schema["x-aoi"]["schema_version"], "2.0.0");
/// # Ok::<(), aoi::discover::schema::SchemaError>(())
/// ```
#[derive(Debug)]
pub struct EventSchema {
    identity: Identity,
    id_base: String,
    description: Option<String>,
    /// Domain event types with their derived schemas, in registration order.
    events: Vec<(String, Value)>,
    /// Collects the definitions of types nested in domain events.
    generator: SchemaGenerator,
    /// The first registration error, reported by [`EventSchema::build`].
    error: Option<SchemaError>,
}

impl EventSchema {
    /// Starts a schema for `identity`, whose `$id` will live under `id_base`, an `https://` URL
    /// prefix the tool chooses (e.g. `"https://schemas.example.com/outline"`).
    pub fn new(identity: &Identity, id_base: &str) -> EventSchema {
        EventSchema {
            identity: identity.clone(),
            id_base: id_base.to_owned(),
            description: None,
            events: Vec::new(),
            generator: SchemaSettings::draft2020_12()
                .for_serialize()
                .into_generator(),
            error: None,
        }
    }

    /// Registers the domain event `T` under its [`DomainEvent::TYPE`](crate::DomainEvent::TYPE).
    ///
    /// `T` is what the tool passes to the emitter: its fields are the event's top-level fields
    /// besides `type` and `aoi`. Errors (a reserved or repeated name) are reported by
    /// [`EventSchema::build`].
    pub fn domain_event<T: JsonSchema + crate::DomainEvent>(self) -> EventSchema {
        self.domain_event_named::<T>(T::TYPE)
    }

    /// Registers the domain event `type_name`, whose body is the Rust type `T`: for a body
    /// that is not itself a [`DomainEvent`](crate::DomainEvent) (a shape shared by several
    /// types, a type whose name is chosen at run time).
    pub fn domain_event_named<T: JsonSchema>(mut self, type_name: &str) -> EventSchema {
        if self.error.is_some() {
            return self;
        }
        if type_name.is_empty() || type_name.starts_with("aoi:") {
            self.error = Some(SchemaError::EventType(type_name.to_owned()));
        } else if self.events.iter().any(|(name, _)| name == type_name) {
            self.error = Some(SchemaError::DuplicateEventType(type_name.to_owned()));
        } else {
            let schema = T::json_schema(&mut self.generator).to_value();
            self.events.push((type_name.to_owned(), schema));
        }
        self
    }

    /// Sets the document's `description` (by default one naming the tool and its schema).
    pub fn description(mut self, description: &str) -> EventSchema {
        self.description = Some(description.to_owned());
        self
    }

    /// Produces the schema document.
    ///
    /// Fails when the `$id` base is not `https://`, or on a domain event registration error.
    pub fn build(&self) -> Result<Value, SchemaError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let base = https_base(&self.id_base)?;
        let mut defs = framework_definitions();
        for (name, def) in self.generator.definitions() {
            if name.starts_with(DOMAIN_DEF_PREFIX) {
                return Err(SchemaError::DefinitionClash(name.clone()));
            }
            // A domain type may embed a framework shape; the framework's own definition, with
            // its added rules, is the one that counts.
            if name.starts_with(FRAMEWORK_DEF_PREFIX) && defs.contains_key(name) {
                continue;
            }
            defs.insert(name.clone(), def.clone());
        }
        let mut domain_types = Vec::with_capacity(self.events.len());
        for (type_name, schema) in &self.events {
            let mut def = schema.clone();
            add_line_fields(&mut def, type_name).map_err(|field| SchemaError::ReservedField {
                event: type_name.clone(),
                field: field.to_owned(),
            })?;
            defs.insert(domain_def_name(type_name), def);
            domain_types.push(type_name.as_str());
        }
        let identity = &self.identity;
        let description = self.description.clone().unwrap_or_else(|| {
            format!(
                "Every line `{}` writes in machine mode (AOI-CLI {AOI_VERSION}): one JSON object \
                 per line, discriminated by `type`.",
                identity.tool
            )
        });
        Ok(document(
            &base,
            &identity.schema_name,
            &identity.schema_version,
            &format!(
                "{} events ({} {})",
                identity.tool, identity.schema_name, identity.schema_version
            ),
            &description,
            defs,
            &domain_types,
        ))
    }
}

/// The schema of a stream carrying framework events only.
///
/// Its identity is [`FRAMEWORK_SCHEMA_NAME`] at version [`AOI_VERSION`]. `aoi verify --schema`
/// uses it to check the framework events of any stream, and a tool without domain events may
/// serve it, though [`EventSchema::new`] with no domain event gives one under the tool's own
/// identity.
pub(crate) fn framework_schema() -> Value {
    document(
        FRAMEWORK_ID_BASE,
        FRAMEWORK_SCHEMA_NAME,
        AOI_VERSION,
        &format!("AOI-CLI {AOI_VERSION} framework events"),
        &format!(
            "The framework events (`aoi:*`) of an AOI-CLI {AOI_VERSION} stream. Lines of any \
             other type are accepted unchecked."
        ),
        framework_definitions(),
        &[],
    )
}

/// Assembles the document around its definitions.
fn document(
    base: &str,
    schema_name: &str,
    schema_version: &str,
    title: &str,
    description: &str,
    defs: Map<String, Value>,
    domain_types: &[&str],
) -> Value {
    let mut all_of = vec![json!({
        "$comment": "The aoi: namespace is closed (spec §8.2): only the framework types exist.",
        "if": {
            "properties": {"type": {"type": "string", "pattern": "^aoi:"}},
            "required": ["type"]
        },
        "then": {"properties": {"type": {"enum": FRAMEWORK_TYPES}}}
    })];
    let framework = FRAMEWORK_TYPES
        .iter()
        .map(|ty| (*ty, framework_def_name(ty)));
    let domain = domain_types.iter().map(|ty| (*ty, domain_def_name(ty)));
    for (ty, def_name) in framework.chain(domain) {
        all_of.push(json!({
            "if": {"properties": {"type": {"const": ty}}, "required": ["type"]},
            "then": {"$ref": def_ref(&def_name)}
        }));
    }
    let mut event_types: Vec<&str> = FRAMEWORK_TYPES.to_vec();
    event_types.extend_from_slice(domain_types);
    event_types.sort_unstable();
    json!({
        "$schema": DIALECT,
        "$id": format!(
            "{base}/{}/{}/events.json",
            percent_encode(schema_name, b""),
            percent_encode(schema_version, b"")
        ),
        "title": title,
        "description": description,
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {
                "description": "The event discriminator: `aoi:*` for framework events, unprefixed for the tool's own (spec §8.2).",
                "type": "string",
                "minLength": 1
            },
            "aoi": {"$ref": def_ref("aoi.envelope")}
        },
        "allOf": all_of,
        "$defs": defs,
        "x-aoi": {
            "schema_name": schema_name,
            "schema_version": schema_version,
            "aoi_version": AOI_VERSION,
            "event_types": event_types
        }
    })
}

/// The `$defs` name of a framework event type: `aoi:meta` → `aoi.meta`.
fn framework_def_name(type_name: &str) -> String {
    type_name.replacen(':', ".", 1)
}

/// The `$defs` name of a domain event type: `hit` → `event.hit`.
fn domain_def_name(type_name: &str) -> String {
    format!("{DOMAIN_DEF_PREFIX}{type_name}")
}

/// A `$ref` to the definition `name`: a JSON pointer token, percent-encoded for a URI fragment.
fn def_ref(name: &str) -> String {
    let token = name.replace('~', "~0").replace('/', "~1");
    format!("#/$defs/{}", percent_encode(&token, b"/?"))
}

/// Percent-encodes every byte outside RFC 3986 `pchar` (and `extra`).
fn percent_encode(text: &str, extra: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        let keep =
            b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) || extra.contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// `base` as an `https://` URL prefix without trailing slashes (the scheme lowercased), or the
/// reason it is not one.
fn https_base(base: &str) -> Result<String, SchemaError> {
    let refuse = || SchemaError::IdBase(base.to_owned());
    let trimmed = base.trim().trim_end_matches('/');
    let rest = match trimmed.get(..8) {
        Some(scheme) if scheme.eq_ignore_ascii_case("https://") => &trimmed[8..],
        _ => return Err(refuse()),
    };
    let host = rest.split('/').next().unwrap_or_default();
    let clean = !rest.contains(['?', '#', '\\'])
        && !rest.chars().any(|c| c.is_whitespace() || c.is_control());
    if host.is_empty() || !clean {
        return Err(refuse());
    }
    Ok(format!("https://{rest}"))
}

/// The definitions of the framework events and their shapes, derived from [`crate::wire`] and
/// completed with the rules derivation cannot express.
fn framework_definitions() -> Map<String, Value> {
    let mut generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator();
    generator.subschema_for::<Envelope>();
    framework_event::<Meta>(&mut generator);
    framework_event::<Summary>(&mut generator);
    framework_event::<Warning>(&mut generator);
    framework_event::<ErrorEvent>(&mut generator);
    framework_event::<Check>(&mut generator);
    framework_event::<Plan>(&mut generator);
    framework_event::<Progress>(&mut generator);
    framework_event::<Heartbeat>(&mut generator);
    let mut defs = generator.take_definitions(true);

    for def in defs.values_mut() {
        if let Some(Value::Object(properties)) = def.get_mut("properties") {
            properties.values_mut().for_each(forbid_null);
        }
        consts_to_enum(def);
    }
    for ty in FRAMEWORK_TYPES {
        let def = definition(&mut defs, &framework_def_name(ty));
        // Framework types never declare `type` or `aoi`; the wire tests keep it so.
        let _ = add_line_fields(def, ty);
    }

    let summary = definition(&mut defs, "aoi.summary");
    property(summary, "next_cursor").insert("type".into(), json!(["string", "null"]));
    let failures: Vec<&str> = Reason::ALL
        .into_iter()
        .filter(|r| r.is_failure())
        .map(Reason::as_str)
        .collect();
    add_rules(
        summary,
        [
            json!({
                "$comment": "ok:false needs a failure reason (spec §8.3).",
                "if": {"properties": {"ok": {"const": false}}, "required": ["ok"]},
                "then": {"required": ["reason"], "properties": {"reason": {"enum": failures}}}
            }),
            json!({
                "$comment": "With ok:true the only reason is skipped (spec §8.3).",
                "if": {"properties": {"ok": {"const": true}}, "required": ["ok"]},
                "then": {"properties": {"reason": {"const": Reason::Skipped.as_str()}}}
            }),
        ],
    );

    let error = definition(&mut defs, "aoi.error");
    property(error, "message").insert("pattern".into(), json!(SINGLE_LINE_PATTERN));
    add_rules(error, [no_retry_delay_without_retryable()]);
    let caused_by = definition(&mut defs, "aoi.caused_by");
    add_rules(caused_by, [no_retry_delay_without_retryable()]);
    defs
}

/// Registers the framework event `T` under its definition name.
fn framework_event<T: FrameworkEvent + JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

/// `retry_after_ms` must not appear with `retryable:false` (§9.1). Written as a `false` schema
/// on the property so the error points at `/retry_after_ms` itself.
fn no_retry_delay_without_retryable() -> Value {
    json!({
        "$comment": "retry_after_ms must not appear when retryable is false (spec §9.1).",
        "if": {"properties": {"retryable": {"const": false}}, "required": ["retryable"]},
        "then": {"properties": {"retry_after_ms": false}}
    })
}

/// Adds the line-level fields to an event definition: `type` as a constant and `aoi` as the
/// envelope. Returns the reserved name the body already declares, if any.
fn add_line_fields(def: &mut Value, type_name: &str) -> Result<(), &'static str> {
    let Some(Value::Object(properties)) = def.get_mut("properties") else {
        // Not a struct-like body (a map or any value): nothing to complete.
        return Ok(());
    };
    for reserved in ["type", "aoi"] {
        if properties.contains_key(reserved) {
            return Err(reserved);
        }
    }
    properties.insert("type".into(), json!({"const": type_name}));
    properties.insert("aoi".into(), json!({"$ref": def_ref("aoi.envelope")}));
    Ok(())
}

/// Appends conditional rules to a definition's `allOf`.
fn add_rules(def: &mut Value, rules: impl IntoIterator<Item = Value>) {
    let all_of = object(def)
        .entry("allOf")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(all_of) = all_of {
        all_of.extend(rules);
    }
}

/// The definition `name`, created empty if missing (only when the derived names change, which
/// the tests catch).
fn definition<'a>(defs: &'a mut Map<String, Value>, name: &str) -> &'a mut Value {
    defs.entry(name).or_insert_with(|| json!({}))
}

/// The schema of `def.properties.<name>` as an object, created if missing.
fn property<'a>(def: &'a mut Value, name: &str) -> &'a mut Map<String, Value> {
    let properties = object(def).entry("properties").or_insert_with(|| json!({}));
    object(object(properties).entry(name).or_insert_with(|| json!({})))
}

/// `value` as an object, replacing anything else with an empty one.
fn object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// Rewrites a unit enum that schemars derives as a `oneOf` of documented `const`s into an `enum`,
/// so a bad value reads "`\"temporary\"` is not one of …" rather than "not valid under any of the
/// schemas listed in the 'oneOf' keyword". The variants' docs move into the description.
fn consts_to_enum(def: &mut Value) {
    let Some(Value::Array(variants)) = def.get("oneOf") else {
        return;
    };
    let mut values = Vec::with_capacity(variants.len());
    let mut docs = String::new();
    for variant in variants {
        let Some(Value::String(value)) = variant.get("const") else {
            return;
        };
        if let Some(Value::String(doc)) = variant.get("description") {
            docs.push_str(&format!("\n- `{value}`: {doc}"));
        }
        values.push(Value::String(value.clone()));
    }
    let map = object(def);
    map.remove("oneOf");
    map.insert("type".into(), json!("string"));
    map.insert("enum".into(), Value::Array(values));
    if !docs.is_empty() {
        let description = map.entry("description").or_insert_with(|| json!(""));
        if let Value::String(text) = description {
            text.push_str(&docs);
        }
    }
}

/// Removes the `null` schemars allows for an `Option` field: a framework field is omitted when
/// absent, never `null`.
fn forbid_null(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(options)) = map.get_mut("enum") {
        options.retain(|o| !o.is_null());
    }
    // A `$ref` made nullable becomes `anyOf: [{$ref}, {type: null}]`.
    if let Some(Value::Array(any_of)) = map.get_mut("anyOf") {
        any_of.retain(|s| s.get("type").and_then(Value::as_str) != Some("null"));
        if any_of.len() == 1 {
            if let Some(Value::Object(only)) = any_of.pop() {
                map.remove("anyOf");
                for (key, value) in only {
                    map.entry(key).or_insert(value);
                }
            }
        }
    }
}

mod introspect;
#[cfg(feature = "validate")]
mod validate;

#[cfg(feature = "validate")]
pub(crate) use introspect::narrowed_by_type;
pub use introspect::{event_types, narrowed};
#[cfg(feature = "validate")]
pub use validate::EventValidator;

#[cfg(test)]
mod tests;
