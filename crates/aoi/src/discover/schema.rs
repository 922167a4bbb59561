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

use std::collections::BTreeSet;
#[cfg(feature = "validate")]
use std::collections::HashMap;

#[cfg(feature = "validate")]
use jsonschema::error::ValidationErrorKind;
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

/// Longest message [`EventValidator::validate`] returns; longer ones are cut with `…`.
#[cfg(feature = "validate")]
const MAX_MESSAGE_CHARS: usize = 300;

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

#[cfg(feature = "validate")]
/// Checks events against a compiled event schema.
///
/// Compile once, then validate every line: a valid event costs one `is_valid` pass and nothing
/// else; errors are collected, and messages formatted, only for an invalid one.
///
/// A schema in the discriminator style of §10.4 is also compiled once per event type `T` named
/// by a top-level `allOf` entry `{"if": {"properties": {"type": {"const": T}}, "required":
/// ["type"]}, "then": …}`, keeping only the entries whose `if` may hold for `T`. An event whose
/// `type` is `T` is checked by that narrower validator: every dropped entry has an `if` that
/// fails for it, so the entry could only pass, and the result (errors included) is the same at a
/// fraction of the cost. Any other event, and any schema of another shape, goes through the
/// whole document.
#[derive(Debug)]
pub struct EventValidator {
    whole: jsonschema::Validator,
    by_type: HashMap<String, jsonschema::Validator>,
}

#[cfg(feature = "validate")]
impl EventValidator {
    /// Compiles `schema` as JSON Schema 2020-12. Only references inside the document resolve:
    /// nothing is fetched (§3: discovery needs no network).
    pub fn new(schema: &Value) -> Result<EventValidator, SchemaError> {
        let whole = compile(schema)?;
        let mut by_type = HashMap::new();
        for (ty, narrow) in narrowed_by_type(schema) {
            by_type.insert(ty, compile(&narrow)?);
        }
        Ok(EventValidator { whole, by_type })
    }

    /// The validator for `event`: the one narrowed to its `type` when there is one.
    fn validator_for(&self, event: &Value) -> &jsonschema::Validator {
        event
            .get("type")
            .and_then(Value::as_str)
            .and_then(|ty| self.by_type.get(ty))
            .unwrap_or(&self.whole)
    }

    /// True when `event` is valid.
    pub fn is_valid(&self, event: &Value) -> bool {
        self.validator_for(event).is_valid(event)
    }

    /// Validates `event`; on failure, one line per error, each starting with the JSON pointer of
    /// the offending value (`(root)` for the event itself), e.g.
    /// `/retry_after_ms: must not appear when `retryable` is false (spec §9.1)`.
    pub fn validate(&self, event: &Value) -> Result<(), Vec<String>> {
        let validator = self.validator_for(event);
        if validator.is_valid(event) {
            return Ok(());
        }
        let mut messages: Vec<String> = validator
            .iter_errors(event)
            .map(|error| {
                let pointer = error.instance_path().as_str();
                let shown = if pointer.is_empty() {
                    "(root)"
                } else {
                    pointer
                };
                if matches!(error.kind(), ValidationErrorKind::FalseSchema) {
                    // The stock message ("False schema does not allow 4500") hides the rule.
                    one_line(&format!("{shown}: {}", forbidden_field(pointer)))
                } else {
                    one_line(&format!("{shown}: {error}"))
                }
            })
            .collect();
        messages.dedup();
        Err(messages)
    }
}

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

#[cfg(feature = "validate")]
/// Compiles a 2020-12 document.
fn compile(schema: &Value) -> Result<jsonschema::Validator, SchemaError> {
    jsonschema::draft202012::options()
        .build(schema)
        .map_err(|e| SchemaError::Compile(one_line(&e.to_string())))
}

/// The schema an `allOf` entry's `if` applies to `type`, when the `if` looks at `type` alone:
/// `{"if": {"properties": {"type": S}, "required": ["type"]}, "then": …}` (`required` optional)
/// with only annotations besides (no `else`). `None` for any other shape.
fn type_condition(rule: &Value) -> Option<&Value> {
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
fn rejects(condition: &Value, ty: &str) -> bool {
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
fn literal_prefix(pattern: &str) -> Option<&str> {
    let literal = pattern.strip_prefix('^')?;
    let plain = !literal.contains([
        '\\', '.', '^', '$', '|', '?', '*', '+', '(', ')', '[', ']', '{', '}',
    ]);
    plain.then_some(literal)
}

#[cfg(feature = "validate")]
/// Why the field at `pointer` may not appear: the schema's only `false` subschemas are rules of
/// this module.
fn forbidden_field(pointer: &str) -> &'static str {
    match pointer.rsplit('/').next() {
        Some("retry_after_ms") => "must not appear when `retryable` is false (spec §9.1)",
        _ => "is not allowed here",
    }
}

#[cfg(feature = "validate")]
/// `text` on one line and at most [`MAX_MESSAGE_CHARS`] characters.
fn one_line(text: &str) -> String {
    let mut line: String = crate::wire::single_line(text)
        .chars()
        .take(MAX_MESSAGE_CHARS + 1)
        .collect();
    if line.chars().count() > MAX_MESSAGE_CHARS {
        line = line.chars().take(MAX_MESSAGE_CHARS - 1).collect();
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::{json, Value};

    use super::*;
    use crate::emit::Outcome;
    use crate::wire::{Category, CausedBy, Code, Scope, Severity, Upstream, Wrapped};
    use crate::{DomainEvent, Emitter};

    const BASE: &str = "https://schemas.example.com/outline";

    fn identity() -> Identity {
        Identity::new("outline", "1.8.2", "com.example.outline.events", "1.0.0")
    }

    /// A domain event as a tool would write it: serialized by the emitter, described by schemars.
    #[derive(Serialize, JsonSchema)]
    struct Hit {
        rank: u32,
        id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tags: Vec<String>,
        source: Source,
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Source {
        Index,
        #[allow(dead_code)]
        Cache,
    }

    impl DomainEvent for Hit {
        const TYPE: &'static str = "hit";
    }

    /// A strict domain type: it denies unknown fields, so `type` and `aoi` must be declared.
    #[derive(Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Deleted {
        id: String,
        /// Embeds a framework shape: the framework's definition must win.
        category: Category,
    }

    impl DomainEvent for Deleted {
        const TYPE: &'static str = "deleted";
    }

    fn hit(rank: u32) -> Hit {
        Hit {
            rank,
            id: format!("doc_{rank}"),
            title: (rank == 2).then(|| "Agent-Operable Tools".to_owned()),
            tags: if rank == 1 {
                vec!["x".into()]
            } else {
                Vec::new()
            },
            source: Source::Index,
        }
    }

    fn schema() -> Value {
        EventSchema::new(&identity(), BASE)
            .domain_event_named::<Hit>("hit")
            .domain_event_named::<Deleted>("deleted")
            .build()
            .unwrap()
    }

    fn validator() -> EventValidator {
        EventValidator::new(&schema()).unwrap()
    }

    /// Every line of a stream, decoded.
    fn lines(stream: &[u8]) -> Vec<Value> {
        assert_eq!(stream.last(), Some(&b'\n'));
        stream
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect()
    }

    fn assert_valid(validator: &EventValidator, event: &Value) {
        if let Err(errors) = validator.validate(event) {
            panic!("{event} should be valid: {errors:?}");
        }
        assert!(validator.is_valid(event));
    }

    /// Asserts `event` fails with a message that starts with `pointer` and contains `words`.
    fn assert_invalid(validator: &EventValidator, event: &Value, pointer: &str, words: &str) {
        let errors = validator
            .validate(event)
            .expect_err(&format!("{event} should be invalid"));
        assert!(!validator.is_valid(event));
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(&format!("{pointer}: ")) && e.contains(words)),
            "{event}: expected an error at {pointer} mentioning {words:?}, got {errors:?}"
        );
        for error in &errors {
            assert!(!error.contains('\n') && !error.is_empty(), "{error:?}");
        }
    }

    fn error_event() -> Value {
        json!({
            "type": "aoi:error", "aoi": {"seq": 3, "run": "R"},
            "category": "rate_limited", "code": "UPSTREAM_RATE_LIMIT",
            "message": "Upstream API rate limit exceeded.", "retryable": true, "retry_after_ms": 4500
        })
    }

    /// `value` with `changes` applied: `null` removes a key.
    fn with(mut value: Value, changes: Value) -> Value {
        for (key, change) in changes.as_object().unwrap() {
            let object = value.as_object_mut().unwrap();
            if change.is_null() {
                object.remove(key);
            } else {
                object.insert(key.clone(), change.clone());
            }
        }
        value
    }

    #[test]
    fn the_documents_are_valid_json_schema_2020_12() {
        for document in [schema(), framework_schema()] {
            if let Err(e) = jsonschema::draft202012::meta::validate(&document) {
                panic!("not a valid 2020-12 schema: {e}");
            }
            assert_eq!(document["$schema"], DIALECT);
        }
        // The check itself can fail: a malformed keyword is caught.
        let mut broken = schema();
        broken["$defs"]["aoi.error"]["required"] = json!("retryable");
        assert!(!jsonschema::draft202012::meta::is_valid(&broken));
    }

    #[test]
    fn id_is_https_and_carries_the_schema_identity() {
        let document = schema();
        assert_eq!(
            document["$id"],
            "https://schemas.example.com/outline/com.example.outline.events/1.0.0/events.json"
        );
        let id = framework_schema()["$id"].as_str().unwrap().to_owned();
        assert!(
            id.starts_with("https://") && id.contains("/1.0-alpha/"),
            "{id}"
        );

        // Normalized: scheme case and trailing slashes.
        let built = EventSchema::new(&identity(), "HTTPS://schemas.example.com/outline//")
            .build()
            .unwrap();
        assert_eq!(built["$id"], document["$id"]);

        // Path-unsafe characters in the identity are encoded, not passed through.
        let odd = Identity::new("t", "1", "a/b c", "1.0.0#x");
        let built = EventSchema::new(&odd, BASE).build().unwrap();
        assert_eq!(
            built["$id"],
            "https://schemas.example.com/outline/a%2Fb%20c/1.0.0%23x/events.json"
        );

        for base in [
            "http://schemas.example.com/outline",
            "file:///usr/share/outline/schemas",
            "file:/tmp/x",
            "schemas.example.com/outline",
            "https://",
            "https:///path",
            "https://example.com/a?b=c",
            "https://example.com/a#frag",
            "https://exa mple.com",
            "",
        ] {
            assert_eq!(
                EventSchema::new(&identity(), base).build(),
                Err(SchemaError::IdBase(base.to_owned())),
                "{base}"
            );
        }
    }

    #[test]
    fn no_file_uri_and_no_top_level_one_of() {
        for document in [schema(), framework_schema()] {
            let id = document["$id"].as_str().unwrap();
            assert!(!id.contains("file:"), "{id}");
            let top = document.as_object().unwrap();
            for keyword in ["oneOf", "anyOf"] {
                assert!(!top.contains_key(keyword), "top-level {keyword}");
            }
            assert_eq!(document["type"], "object");
            assert_eq!(document["required"], json!(["type"]));
            assert_eq!(
                document["properties"]["aoi"]["$ref"],
                "#/$defs/aoi.envelope"
            );
        }
    }

    #[test]
    fn every_event_type_dispatches_to_its_definition() {
        let document = schema();
        let defs = document["$defs"].as_object().unwrap();
        let mut dispatched = Vec::new();
        for rule in document["allOf"].as_array().unwrap() {
            let Some(ty) = rule["if"]["properties"]["type"]["const"].as_str() else {
                continue;
            };
            assert_eq!(rule["if"]["required"], json!(["type"]));
            let target = rule["then"]["$ref"].as_str().unwrap();
            let name = target.strip_prefix("#/$defs/").unwrap();
            assert_eq!(defs[name]["properties"]["type"]["const"], ty, "{name}");
            dispatched.push(ty.to_owned());
        }
        let mut expected: Vec<String> = FRAMEWORK_TYPES.iter().map(|t| t.to_string()).collect();
        expected.extend(["hit".to_owned(), "deleted".to_owned()]);
        assert_eq!(dispatched, expected);

        // The def-name mapping of the module docs, tied to the wire types' `TYPE`.
        for ty in FRAMEWORK_TYPES {
            assert!(defs.contains_key(&ty.replace(':', ".")), "{ty}");
        }
        assert_eq!(<Meta as JsonSchema>::schema_name(), "aoi.meta");
        assert_eq!(<ErrorEvent as JsonSchema>::schema_name(), "aoi.error");
        assert!(defs.contains_key("event.hit") && defs.contains_key("event.deleted"));
        assert!(
            defs.contains_key("Source"),
            "nested domain types keep their names"
        );
    }

    #[test]
    fn x_aoi_carries_the_identity_and_sorted_event_types() {
        let document = schema();
        assert_eq!(
            document["x-aoi"],
            json!({
                "schema_name": "com.example.outline.events",
                "schema_version": "1.0.0",
                "aoi_version": AOI_VERSION,
                "event_types": [
                    "aoi:check", "aoi:error", "aoi:heartbeat", "aoi:meta", "aoi:plan",
                    "aoi:progress", "aoi:summary", "aoi:warning", "deleted", "hit"
                ]
            })
        );
        // One schema per version: the negotiated version flows into `$id` and `x-aoi`.
        let v2 = Identity::new("outline", "1.8.2", "com.example.outline.events", "2.0.0");
        let document = EventSchema::new(&v2, BASE)
            .domain_event_named::<Hit>("hit")
            .description("Version two.")
            .build()
            .unwrap();
        assert_eq!(document["x-aoi"]["schema_version"], "2.0.0");
        assert!(document["$id"].as_str().unwrap().contains("/2.0.0/"));
        assert_eq!(document["description"], "Version two.");
        assert_eq!(
            framework_schema()["x-aoi"]["schema_name"],
            FRAMEWORK_SCHEMA_NAME
        );
    }

    #[test]
    fn every_event_the_emitter_writes_validates() {
        let validator = validator();
        let mut seen = std::collections::BTreeSet::new();
        let check = |stream: Vec<u8>, seen: &mut std::collections::BTreeSet<String>| {
            for line in lines(&stream) {
                assert_valid(&validator, &line);
                seen.insert(line["type"].as_str().unwrap().to_owned());
            }
        };

        // A run that uses every event type and ends truncated with a cursor.
        let mut out = Emitter::builder(identity())
            .command("search")
            .timestamps(true)
            .trace_id("4bf92f3577b34da6a3ce929d0e0e4736")
            .args(
                Some(vec!["search".into(), "--token=<redacted>".into()]),
                true,
            )
            .input_fingerprint("sha256:00")
            .meta_property("index", "main")
            .start(Vec::new())
            .unwrap();
        for rank in 1..=3 {
            out.emit(&hit(rank)).unwrap();
        }
        out.emit(&Deleted {
            id: "doc_9".into(),
            category: Category::NotFound,
        })
        .unwrap();
        out.warning(
            &Warning::new(Code::from_static("INDEX_STALE"), "index is\n2 days old").target("main"),
        )
        .unwrap();
        out.error(
            &ErrorEvent::new(
                Category::RateLimited,
                Code::from_static("UPSTREAM_RATE_LIMIT"),
                "slow down",
            )
            .item()
            .retry_after_ms(4500)
            .item_index(17)
            .line_number(18)
            .target("/documents/abc123")
            .wrapped(Wrapped {
                protocol: crate::wire::Protocol::Http,
                status: Some(429),
                code: None,
            })
            .detail("quota", "hourly")
            .hint("wait"),
        )
        .unwrap();
        out.check(&Check {
            name: "config_file".into(),
            ok: true,
            severity: Some(Severity::Info),
            detail: Some("found".into()),
            hint: None,
            properties: None,
        })
        .unwrap();
        out.plan(&Plan {
            action: "delete".into(),
            target: Some("doc_9".into()),
            detail: Some("would delete one document".into()),
            properties: None,
        })
        .unwrap();
        out.progress(&Progress {
            completed: Some(3),
            total: Some(10),
            unit: Some("documents".into()),
            message: Some("indexing".into()),
            properties: None,
        })
        .unwrap();
        out.heartbeat(&Heartbeat {
            interval_ms: Some(1000),
            properties: None,
        })
        .unwrap();
        out.finish(Outcome::success().truncated(Some("c2VhcmNoOjI".into())))
            .unwrap();
        check(out.into_writer(), &mut seen);

        // A run that fails on a process-scope error.
        let mut out = Emitter::builder(identity()).start(Vec::new()).unwrap();
        out.error(
            &ErrorEvent::new(
                Category::Unavailable,
                Code::from_static("INDEX_DOWN"),
                "index unreachable",
            )
            .retryable(false),
        )
        .unwrap();
        out.finish(Outcome::failed()).unwrap();
        check(out.into_writer(), &mut seen);

        // A run that fails because upstream did, and one that was skipped.
        let upstream_error = ErrorEvent::new(Category::RateLimited, Code::from_static("SLOW"), "m")
            .retry_after_ms(7200);
        let mut out = Emitter::builder(identity()).start(Vec::new()).unwrap();
        out.forward_error(&upstream_error, "outline").unwrap();
        out.finish(
            Outcome::failed()
                .caused_by(CausedBy::from_error(&upstream_error, Some("outline")))
                .upstream(Upstream {
                    tool: Some("outline".into()),
                    tool_version: Some("1.8.2".into()),
                    schema_name: Some("com.example.outline.events".into()),
                    schema_version: Some("1.0.0".into()),
                })
                .partial(true),
        )
        .unwrap();
        check(out.into_writer(), &mut seen);
        let mut out = Emitter::builder(identity()).start(Vec::new()).unwrap();
        out.finish(Outcome::skipped()).unwrap();
        check(out.into_writer(), &mut seen);

        let mut expected: Vec<&str> = FRAMEWORK_TYPES.to_vec();
        expected.extend(["hit", "deleted"]);
        for ty in expected {
            assert!(seen.contains(ty), "{ty} was never emitted");
        }
    }

    /// Events Part I forbids, one per line: the pointer of the error, words its message contains,
    /// and the event.
    const INVALID: &str = r#"
(root)                    ¦ "retryable" is a required property ¦ {"type":"aoi:error","category":"io","code":"X","message":"m"}
/retry_after_ms           ¦ must not appear when `retryable` is false ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"retry_after_ms":5}
/category                 ¦ "temporary" is not one of ¦ {"type":"aoi:error","category":"temporary","code":"X","message":"m","retryable":true}
/category                 ¦ "partial" is not one of ¦ {"type":"aoi:error","category":"partial","code":"X","message":"m","retryable":false}
/code                     ¦ does not match ¦ {"type":"aoi:error","category":"io","code":"upstream_rate_limit","message":"m","retryable":false}
/message                  ¦ does not match ¦ {"type":"aoi:error","category":"io","code":"X","message":"line one\nline two","retryable":false}
/message                  ¦ does not match ¦ {"type":"aoi:error","category":"io","code":"X","message":"colour \u001b[31mred","retryable":false}
(root)                    ¦ "category" is a required property ¦ {"type":"aoi:error","code":"X","message":"m","retryable":false}
/scope                    ¦ "run" is not one of ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"scope":"run"}
/item_index               ¦ minimum ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"item_index":-1}
/wrapped/protocol         ¦ "ftp" is not one of ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"wrapped":{"protocol":"ftp"}}
/wrapped                  ¦ "protocol" is a required property ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"wrapped":{"status":429}}
(root)                    ¦ "ok" is a required property ¦ {"type":"aoi:summary","event_count":1}
/ok                       ¦ boolean ¦ {"type":"aoi:summary","ok":"true"}
(root)                    ¦ "reason" is a required property ¦ {"type":"aoi:summary","ok":false}
/reason                   ¦ "skipped" was expected ¦ {"type":"aoi:summary","ok":true,"reason":"failed"}
/reason                   ¦ "skipped" is not one of ¦ {"type":"aoi:summary","ok":false,"reason":"skipped"}
/reason                   ¦ "crashed" is not one of ¦ {"type":"aoi:summary","ok":false,"reason":"crashed"}
/count                    ¦ minimum ¦ {"type":"aoi:summary","ok":true,"count":-1}
/partial                  ¦ boolean ¦ {"type":"aoi:summary","ok":true,"partial":"no"}
/next_cursor              ¦ 7 is not of types ¦ {"type":"aoi:summary","ok":true,"next_cursor":7}
/tool                     ¦ null is not of type "string" ¦ {"type":"aoi:summary","ok":true,"tool":null}
/upstream/tool            ¦ 1 is not of type "string" ¦ {"type":"aoi:summary","ok":true,"upstream":{"tool":1}}
/caused_by/retry_after_ms ¦ must not appear when `retryable` is false ¦ {"type":"aoi:summary","ok":false,"reason":"failed","caused_by":{"category":"io","code":"X","retryable":false,"retry_after_ms":5}}
/caused_by                ¦ "retryable" is a required property ¦ {"type":"aoi:summary","ok":false,"reason":"failed","caused_by":{"category":"io","code":"X"}}
/type                     ¦ "aoi:whatever" is not one of ¦ {"type":"aoi:whatever","aoi":{"seq":1}}
/type                     ¦ "aoi:Summary" is not one of ¦ {"type":"aoi:Summary","ok":true}
/type                     ¦ shorter than 1 character ¦ {"type":""}
/type                     ¦ is not of type "string" ¦ {"type":3}
(root)                    ¦ "type" is a required property ¦ {"aoi":{"seq":0}}
(root)                    ¦ is not of type "object" ¦ ["type","hit"]
/aoi/seq                  ¦ minimum ¦ {"type":"hit_v0","aoi":{"seq":-1}}
/aoi/run                  ¦ is not of type "string" ¦ {"type":"hit_v0","aoi":{"run":5}}
/aoi                      ¦ is not of type "object" ¦ {"type":"aoi:meta","aoi":"x"}
/aoi_version              ¦ is not of type "string" ¦ {"type":"aoi:meta","aoi_version":1}
/schema_version           ¦ is not of type "string" ¦ {"type":"aoi:meta","schema_version":1}
(root)                    ¦ "ok" is a required property ¦ {"type":"aoi:check","name":"db"}
/severity                 ¦ "fatal" is not one of ¦ {"type":"aoi:check","name":"db","ok":false,"severity":"fatal"}
(root)                    ¦ "message" is a required property ¦ {"type":"aoi:warning","code":"STALE"}
/code                     ¦ does not match ¦ {"type":"aoi:warning","message":"m","code":"stale"}
(root)                    ¦ "action" is a required property ¦ {"type":"aoi:plan","target":"doc_1"}
/completed                ¦ is not of type "integer" ¦ {"type":"aoi:progress","completed":1.5}
/interval_ms              ¦ is not of type "integer" ¦ {"type":"aoi:heartbeat","interval_ms":"1s"}
(root)                    ¦ "id" is a required property ¦ {"type":"hit","rank":1,"source":"index"}
/rank                     ¦ minimum ¦ {"type":"hit","rank":-1,"id":"d","source":"index"}
/source                   ¦ "web" is not one of ¦ {"type":"hit","rank":1,"id":"d","source":"web"}
(root)                    ¦ 'extra' was unexpected ¦ {"type":"deleted","id":"d","category":"io","extra":1}
/category                 ¦ "temporary" is not one of ¦ {"type":"deleted","id":"d","category":"temporary"}
"#;

    /// Events the spec allows, including what a stricter schema would wrongly refuse.
    const VALID: &str = r#"
{"type":"aoi:error","aoi":{"seq":3,"run":"R"},"category":"rate_limited","code":"SLOW","message":"m","retryable":true,"retry_after_ms":4500}
{"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false}
{"type":"aoi:error","category":"io","code":"X","message":"m","retryable":true,"details":{"k":[1]},"future_field":true}
{"type":"aoi:summary","aoi":{"seq":9,"run":"R"},"ok":true,"event_count":10,"count":8,"partial":false,"truncated":false}
{"type":"aoi:summary","ok":true,"reason":"skipped","next_cursor":null}
{"type":"aoi:summary","ok":false,"reason":"cancelled","vendor_cache_hits":41,"properties":{"x":1}}
{"type":"aoi:heartbeat","aoi":{"seq":4,"run":"R","t":9,"trace_id":"T","future":1}}
{"type":"aoi:check","name":"db","ok":true}
{"type":"compiled","aoi":{"seq":1,"run":"R"},"anything":[1,2]}
{"type":"summary","text":"a domain event may be named summary (§8.2)"}
{"type":"hit","rank":1,"id":"d","source":"cache","extra":"unknown fields are fine"}
{"type":"deleted","aoi":{"seq":2},"id":"d","category":"io"}
"#;

    /// The `(pointer, words, event)` cases of [`INVALID`].
    fn invalid_cases() -> Vec<(&'static str, &'static str, Value)> {
        INVALID
            .lines()
            .filter(|line| !line.is_empty())
            .map(|line| {
                let mut parts = line.splitn(3, '¦').map(str::trim);
                let (pointer, words, event) = (parts.next(), parts.next(), parts.next());
                let event = serde_json::from_str(event.unwrap()).unwrap();
                (pointer.unwrap(), words.unwrap(), event)
            })
            .collect()
    }

    fn valid_events() -> Vec<Value> {
        VALID
            .lines()
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn framework_rules_reject_what_part_one_forbids() {
        let v = validator();
        let cases = invalid_cases();
        assert_eq!(cases.len(), 48);
        for (pointer, words, event) in &cases {
            assert_invalid(&v, event, pointer, words);
        }
    }

    #[test]
    fn open_where_the_spec_is_open() {
        let v = validator();
        for event in valid_events() {
            assert_valid(&v, &event);
        }
    }

    #[test]
    fn a_schema_narrowed_to_some_types_judges_them_as_the_whole_and_never_rejects_more() {
        let whole = schema();
        let narrow = narrowed(&whole, |ty| ty == "hit" || ty.starts_with("aoi:"));
        let (whole_v, narrow_v) = (compile(&whole).unwrap(), compile(&narrow).unwrap());
        let events = invalid_cases().into_iter().map(|(_, _, e)| e);
        for event in events.chain(valid_events()) {
            let ty = event["type"].as_str().unwrap_or_default();
            if ty == "deleted" {
                // Only ever more accepted.
                assert!(
                    narrow_v.is_valid(&event) || !whole_v.is_valid(&event),
                    "{event}"
                );
            } else {
                assert_eq!(
                    narrow_v.is_valid(&event),
                    whole_v.is_valid(&event),
                    "{event}"
                );
            }
        }
        let defs = narrow["$defs"].as_object().unwrap();
        assert!(defs.contains_key("event.hit"), "{:?}", defs.keys());
        assert!(whole["$defs"].get("event.deleted").is_some());
        assert!(!defs.contains_key("event.deleted"), "{:?}", defs.keys());
        assert!(narrow_v.is_valid(&json!({"type": "deleted", "anything": 1})));
    }

    #[test]
    fn narrowed_validators_agree_with_the_whole_schema() {
        let schema = schema();
        let fast = EventValidator::new(&schema).unwrap();
        let mut narrowed: Vec<&str> = fast.by_type.keys().map(String::as_str).collect();
        narrowed.sort_unstable();
        let mut expected: Vec<&str> = FRAMEWORK_TYPES.to_vec();
        expected.extend(["deleted", "hit"]);
        expected.sort_unstable();
        assert_eq!(narrowed, expected);
        // Without narrowing: every event goes through the whole document.
        let slow = EventValidator {
            whole: compile(&schema).unwrap(),
            by_type: HashMap::new(),
        };
        let events = invalid_cases().into_iter().map(|(_, _, e)| e);
        for event in events.chain(valid_events()) {
            assert_eq!(fast.validate(&event), slow.validate(&event), "{event}");
        }
        // The namespace rule is dropped for unprefixed types, kept for framework ones.
        let rules = schema["allOf"].as_array().unwrap();
        let namespace = type_condition(&rules[0]).unwrap();
        assert!(rejects(namespace, "hit"));
        assert!(!rejects(namespace, "aoi:meta"));
        assert!(rejects(&json!({"const": "a"}), "b") && !rejects(&json!({"const": "a"}), "a"));
        assert!(rejects(&json!({"enum": ["a"]}), "b") && !rejects(&json!({"enum": ["b"]}), "b"));
        // Unsure means keep the rule.
        assert!(!rejects(&json!({"pattern": "^a.c"}), "xyz"));
        assert!(!rejects(&json!({"minLength": 9}), "x"));
        assert_eq!(literal_prefix("^aoi:"), Some("aoi:"));
        assert_eq!(literal_prefix("aoi:"), None);
        assert_eq!(literal_prefix("^a+"), None);
    }

    #[test]
    fn the_framework_schema_checks_framework_events_only() {
        let v = EventValidator::new(&framework_schema()).unwrap();
        assert_valid(&v, &json!({"type": "hit", "rank": "not checked"}));
        assert_valid(&v, &error_event());
        assert_invalid(
            &v,
            &with(error_event(), json!({"retryable": false})),
            "/retry_after_ms",
            "must not appear when `retryable` is false",
        );
        assert_invalid(
            &v,
            &json!({"type": "aoi:whatever"}),
            "/type",
            "is not one of",
        );
    }

    #[test]
    fn odd_domain_type_names_resolve() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Odd {
            n: u8,
        }
        let name = "a/b c~%#\u{e9}";
        let document = EventSchema::new(&identity(), BASE)
            .domain_event_named::<Odd>(name)
            .build()
            .unwrap();
        assert!(document["$defs"].get(format!("event.{name}")).is_some());
        let v = EventValidator::new(&document).unwrap();
        assert_valid(&v, &json!({"type": name, "n": 1}));
        assert_invalid(&v, &json!({"type": name, "n": 300}), "/n", "maximum");
    }

    #[test]
    fn registration_errors_surface_at_build() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Typed {
            r#type: String,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Enveloped {
            aoi: u8,
        }
        let build = |schema: EventSchema| schema.build().unwrap_err();
        let new = || EventSchema::new(&identity(), BASE);
        assert_eq!(
            build(new().domain_event_named::<Hit>("aoi:hit")),
            SchemaError::EventType("aoi:hit".into())
        );
        assert_eq!(
            build(new().domain_event_named::<Hit>("")),
            SchemaError::EventType(String::new())
        );
        assert_eq!(
            build(
                new()
                    .domain_event_named::<Hit>("hit")
                    .domain_event_named::<Deleted>("hit")
            ),
            SchemaError::DuplicateEventType("hit".into())
        );
        assert_eq!(
            build(new().domain_event_named::<Typed>("typed")),
            SchemaError::ReservedField {
                event: "typed".into(),
                field: "type".into()
            }
        );
        assert_eq!(
            build(new().domain_event_named::<Enveloped>("enveloped")),
            SchemaError::ReservedField {
                event: "enveloped".into(),
                field: "aoi".into()
            }
        );
    }

    #[test]
    fn framework_shapes_keep_their_rules_inside_domain_events() {
        #[derive(Serialize, JsonSchema)]
        struct Retry {
            cause: CausedBy,
        }
        let document = EventSchema::new(&identity(), BASE)
            .domain_event_named::<Retry>("retry")
            .build()
            .unwrap();
        assert_eq!(
            document["$defs"]["event.retry"]["properties"]["cause"]["$ref"],
            "#/$defs/aoi.caused_by"
        );
        let v = EventValidator::new(&document).unwrap();
        let cause = json!({"category": "io", "code": "X", "retryable": false, "retry_after_ms": 1});
        assert_invalid(
            &v,
            &json!({"type": "retry", "cause": cause}),
            "/cause/retry_after_ms",
            "must not appear",
        );

        #[derive(JsonSchema)]
        #[schemars(rename = "event.hit")]
        #[allow(dead_code)]
        struct Impostor {
            n: u8,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Carrier {
            inner: Impostor,
        }
        assert_eq!(
            EventSchema::new(&identity(), BASE)
                .domain_event_named::<Carrier>("carrier")
                .build(),
            Err(SchemaError::DefinitionClash("event.hit".into()))
        );
    }

    #[test]
    fn a_document_that_does_not_compile_is_an_error() {
        let err = EventValidator::new(&json!({"type": 12})).unwrap_err();
        assert!(
            matches!(err, SchemaError::Compile(ref m) if !m.contains('\n')),
            "{err}"
        );
    }

    #[test]
    fn long_messages_are_cut_to_one_line() {
        let long = "x".repeat(5000);
        let message = one_line(&format!("a\nb {long}"));
        assert!(message.starts_with("a b x"));
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS);
        assert!(message.ends_with('…'));
        assert_eq!(one_line("short"), "short");
    }

    #[test]
    fn scope_defaults_keep_errors_without_scope_valid() {
        let v = validator();
        let event = with(error_event(), json!({"scope": null}));
        assert_valid(&v, &event);
        let decoded: ErrorEvent = serde_json::from_value(event).unwrap();
        assert_eq!(decoded.scope, Scope::Process);
    }
}
