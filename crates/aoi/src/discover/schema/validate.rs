//! Checking events against a compiled event schema: the whole document, or the document
//! narrowed to the event's `type` when the schema dispatches on it (§10.4).

#![cfg(feature = "validate")]

use std::collections::HashMap;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::introspect::narrowed_by_type;
use super::SchemaError;

/// Longest message [`EventValidator::validate`] returns; longer ones are cut with `…`.
pub(super) const MAX_MESSAGE_CHARS: usize = 300;

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
    pub(super) whole: jsonschema::Validator,
    pub(super) by_type: HashMap<String, jsonschema::Validator>,
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
/// Compiles a 2020-12 document.
pub(super) fn compile(schema: &Value) -> Result<jsonschema::Validator, SchemaError> {
    jsonschema::draft202012::options()
        .build(schema)
        .map_err(|e| SchemaError::Compile(one_line(&e.to_string())))
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
pub(super) fn one_line(text: &str) -> String {
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
