//! Reading another tool's discovery: the §17 capability manifest and a command's input schema,
//! as consumers (`aoi lint`, `aoi mcp`) use them. Tolerant of what a tool in any language may
//! leave out: every field has a safe default.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::input_schema::{PATH_FORMAT, RECORD_DEF, X_AOI_FORMAT};

/// The discovery commands every tool has (§16.2): each prints one JSON document, not a
/// stream. [`crate::app::Discovery`] declares them under these names.
pub const DISCOVERY_COMMANDS: [&str; 3] = ["schema", "input-schema", "capabilities"];

/// `capabilities --output json` (§17).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Manifest {
    /// The tool's name.
    pub tool: String,
    /// Its version.
    pub tool_version: Option<String>,
    /// The AOI versions it speaks.
    pub aoi_versions: Vec<String>,
    /// Output formats, e.g. `["jsonl"]`.
    pub outputs: Vec<String>,
    /// The arguments that select machine mode, e.g. `["--format", "jsonl"]` for a tool whose
    /// `--output` names a file (§16.4); see [`Manifest::machine_args`].
    pub machine_flag: Vec<String>,
    /// Event schemas and their versions.
    pub schemas: Vec<SchemaEntry>,
    /// Every command.
    pub commands: Vec<CommandEntry>,
}

impl Manifest {
    /// The arguments that select machine mode: the manifest's `machine_flag`, else the
    /// standard `--output jsonl` (§16.1).
    pub fn machine_args(&self) -> Vec<String> {
        if self.machine_flag.is_empty() {
            vec!["--output".to_owned(), "jsonl".to_owned()]
        } else {
            self.machine_flag.clone()
        }
    }
}

/// One schema a tool publishes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SchemaEntry {
    /// `aoi:meta.schema_name`.
    pub name: String,
    /// The versions served.
    pub versions: Vec<String>,
    /// The version served without `--schema-version`.
    pub default: Option<String>,
}

/// One command of the manifest, with what it claims about itself.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CommandEntry {
    /// Its name; nested commands are space-separated (`"auth login"`).
    pub name: String,
    /// One line about it.
    pub summary: Option<String>,
    /// It changes nothing (§14.1).
    pub read_only: bool,
    /// It destroys data and requires confirmation (§14.3).
    pub destructive: bool,
    /// It only adds, never overwriting nor removing what was there (profile,
    /// `docs/discovery.md`); absent means false: a command that is not read-only is then taken
    /// to be able to destroy.
    pub additive: bool,
    /// It requires `--confirm`.
    pub requires_confirm: bool,
    /// It streams until cancelled (§4.2).
    pub unbounded: bool,
    /// Its output is bounded by default (§15).
    pub bounded: bool,
    /// It takes `--cursor`.
    pub supports_cursor: bool,
    /// It takes `--dry-run`.
    pub supports_dry_run: bool,
    /// It takes `--idempotency-key`.
    pub supports_idempotency_key: bool,
    /// How it takes input: `args`, `jsonl`, `json`.
    pub input_modes: Vec<String>,
    /// The default for malformed input lines: `fail_fast` or `continue_on_error` (§12.2).
    pub input_default: Option<String>,
    /// The event types it emits.
    pub event_types: Vec<String>,
    /// Runnable example invocations, argv without the program name.
    pub examples: Vec<Vec<String>>,
    /// Commands to run first, in the same fresh directory and environment, so the examples
    /// find the state they need (profile, `docs/discovery.md`): each an argv array without
    /// the program name, or `{"args": [...], "stdin": "..."}`.
    pub setup: Vec<Value>,
    /// What the examples read on standard input (e.g. the records of an `--input-jsonl -`).
    pub stdin: Option<String>,
    /// What credentials it needs, if any.
    pub auth: Option<Value>,
    /// Its input schema, when the manifest carries it (else ask `input-schema --command`).
    pub input_schema: Option<Value>,
    /// Another protocol it speaks on stdout instead of an AOI stream (e.g. `mcp`).
    pub protocol: Option<String>,
}

impl CommandEntry {
    /// The words that name the command on a command line.
    pub fn words(&self) -> Vec<String> {
        self.name.split_whitespace().map(str::to_owned).collect()
    }

    /// True when it takes JSONL input on `--input-jsonl`.
    pub fn takes_jsonl(&self) -> bool {
        self.input_modes.iter().any(|m| m == "jsonl")
    }

    /// True when the command writes an AOI stream in machine mode (not another protocol).
    pub fn speaks_aoi(&self) -> bool {
        self.protocol.is_none()
    }

    /// True for the discovery commands every tool has (`schema`, `input-schema`,
    /// `capabilities`): they print one JSON document, not a stream.
    pub fn is_discovery(&self) -> bool {
        DISCOVERY_COMMANDS.contains(&self.name.as_str())
    }
}

/// A command's strict input schema (`input-schema --command NAME`), with the flag spellings
/// and operand order of its `x-aoi` block.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSchema {
    /// The schema document.
    pub schema: Value,
}

impl InputSchema {
    /// Wraps a schema document as it is.
    pub fn new(schema: Value) -> InputSchema {
        InputSchema { schema }
    }

    fn x_aoi(&self) -> Option<&Value> {
        self.schema.get("x-aoi")
    }

    /// The flag spelling of a property, e.g. `"--limit"` for `limit`: the `x-aoi.flags` entry,
    /// else the convention of `docs/discovery.md` (`--` and the name with `_` as `-`) for a
    /// property the schema defines that is not an operand.
    pub fn flag(&self, property: &str) -> Option<Cow<'_, str>> {
        if let Some(flag) = self.declared_flags().and_then(|f| f.get(property)) {
            return flag.as_str().map(Cow::Borrowed);
        }
        let known = self.property(property).is_some();
        (known && !self.positional().iter().any(|p| p == property))
            .then(|| Cow::Owned(conventional_flag(property)))
    }

    /// True when the command takes this flag (given as `--name`), by `x-aoi.flags` or by the
    /// naming convention.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.properties()
            .iter()
            .any(|p| self.flag(p).is_some_and(|f| f == flag))
            || self
                .declared_flags()
                .is_some_and(|flags| flags.values().any(|f| f.as_str() == Some(flag)))
    }

    /// The flags whose values are secret (§11), as spelled on the command line: the properties
    /// `x-aoi.secret` names, else those marked `"writeOnly": true` or whose name is sensitive
    /// by §11's list (`token`, `password`, `key`, …).
    pub fn secret_flags(&self) -> Vec<String> {
        let declared = self
            .x_aoi()
            .and_then(|x| x.get("secret"))
            .and_then(Value::as_array);
        let secret: Vec<String> = match declared {
            Some(names) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            None => self
                .properties()
                .into_iter()
                .filter(|p| {
                    let schema = self.property(p);
                    let write_only = schema
                        .and_then(|s| s.get("writeOnly"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    let switch =
                        schema.and_then(|s| s.get("type")) == Some(&Value::from("boolean"));
                    // `"writeOnly": false` says the value is not secret, whatever its name
                    // (a store's `key`).
                    let public =
                        schema.and_then(|s| s.get("writeOnly")) == Some(&Value::Bool(false));
                    write_only
                        || (!switch && !public && crate::discover::input_schema::is_secret_name(p))
                })
                .collect(),
        };
        secret
            .iter()
            .filter_map(|p| self.flag(p).map(Cow::into_owned))
            .collect()
    }

    /// The properties given as operands, in command-line order (`x-aoi.positional`; without
    /// it, none: every property is a flag).
    pub fn positional(&self) -> Vec<String> {
        self.x_aoi()
            .and_then(|x| x.get("positional"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    }

    fn declared_flags(&self) -> Option<&serde_json::Map<String, Value>> {
        self.x_aoi()?.get("flags")?.as_object()
    }

    /// Every property the schema defines.
    pub fn properties(&self) -> Vec<String> {
        self.schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// True when the last operand is taken after `--` (e.g. a command to run).
    pub fn trailing_after_double_dash(&self) -> bool {
        self.x_aoi()
            .and_then(|x| x.get("trailing_after_double_dash"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// False when the command takes no `--` before its operands (`x-aoi.double_dash: false`,
    /// docs/discovery.md); by default it does (POSIX utility syntax guideline 10).
    pub fn takes_double_dash(&self) -> bool {
        self.x_aoi()
            .and_then(|x| x.get("double_dash"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    /// The schema of property `name`.
    pub fn property(&self, name: &str) -> Option<&Value> {
        self.schema.get("properties")?.get(name)
    }

    /// The record schema the input schema documents for `--input-jsonl`/`--input-json`, with
    /// its `$defs` name (`docs/discovery.md`, "`$defs.record`"): `$defs.record`, else the one
    /// `$defs` entry whose `title` says "record" (a tool not written on this SDK may name it
    /// otherwise). `None` when there is neither, or several such entries: a consumer then knows
    /// only that a record is a JSON object.
    pub fn record(&self) -> Option<(&str, &Value)> {
        let defs = self.schema.get("$defs")?.as_object()?;
        if let Some((name, record)) = defs.get_key_value(RECORD_DEF) {
            return record.is_object().then_some((name.as_str(), record));
        }
        let mut titled = defs.iter().filter(|(_, d)| {
            d.get("title")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains("record"))
        });
        let (name, record) = titled.next()?;
        (titled.next().is_none() && record.is_object()).then_some((name.as_str(), record))
    }

    /// The properties that name a file system path, in schema order: `x-aoi-format` or
    /// `format` `"path"` on the property, or on the items of an array property
    /// ([`marks_path`]).
    pub fn path_properties(&self) -> Vec<String> {
        self.schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter(|(_, s)| marks_path(s))
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The properties that must be given.
    pub fn required(&self) -> Vec<String> {
        self.schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    }
}

/// True when the property schema `schema` marks a file system path: [`X_AOI_FORMAT`] or
/// `format` `"path"`, on the property or on the items of an array property.
pub fn marks_path(schema: &Value) -> bool {
    let marked = |s: &Value| {
        [X_AOI_FORMAT, "format"]
            .iter()
            .any(|k| s.get(k).and_then(Value::as_str) == Some(PATH_FORMAT))
    };
    marked(schema) || schema.get("items").is_some_and(marked)
}

/// The flag a property is given with when its schema says nothing else (`docs/discovery.md`):
/// `--` and the property name with `_` written `-`, the §16.1 spelling (`dry_run` →
/// `--dry-run`).
pub(crate) fn conventional_flag(property: &str) -> String {
    format!("--{}", property.replace('_', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/discovery.md`: a path is marked by `x-aoi-format` or by JSON Schema's `format`,
    /// on a string property or on an array's items.
    #[test]
    fn both_spellings_of_the_path_format_are_paths() {
        let input = InputSchema::new(serde_json::json!({"properties": {
            "a": {"type": "string", "x-aoi-format": "path"},
            "b": {"type": "string", "format": "path"},
            "c": {"type": "array", "items": {"type": "string", "format": "path"}},
            "d": {"type": "string", "format": "uri"}
        }}));
        assert_eq!(input.path_properties(), ["a", "b", "c"]);
    }

    /// `docs/discovery.md`, "`$defs.record`": `$defs.record` first; else the one `$defs`
    /// entry titled as a record; none when two are, or when the record is not a schema object.
    #[test]
    fn the_record_is_defs_record_else_the_one_entry_titled_so() {
        let with = |defs: serde_json::Value| {
            InputSchema::new(serde_json::json!({"type": "object", "$defs": defs}))
        };
        let named =
            with(serde_json::json!({"record": {"type": "object"}, "other": {"title": "a record"}}));
        assert_eq!(named.record().map(|(n, _)| n), Some("record"));
        let titled = with(
            serde_json::json!({"Item": {"title": "An input record", "type": "object"}, "Tag": {"type": "string"}}),
        );
        assert_eq!(titled.record().map(|(n, _)| n), Some("Item"));
        let two = with(serde_json::json!({"A": {"title": "record a"}, "B": {"title": "record b"}}));
        assert_eq!(two.record(), None);
        let not_a_schema = with(serde_json::json!({"record": "text"}));
        assert_eq!(not_a_schema.record(), None);
        assert_eq!(
            InputSchema::new(serde_json::json!({"type": "object"})).record(),
            None
        );
    }

    #[test]
    fn a_sparse_manifest_reads_with_defaults() {
        let m: Manifest = serde_json::from_str(
            r#"{"tool":"t","commands":[{"name":"auth login","destructive":true},{"name":"x","extra":1},{"name":"create","additive":true}]}"#,
        )
        .unwrap();
        assert_eq!(m.tool, "t");
        assert_eq!(m.commands[0].words(), ["auth", "login"]);
        assert!(m.commands[0].destructive && !m.commands[0].read_only);
        assert!(m.commands[1].examples.is_empty());
        assert!(
            !m.commands[0].additive && !m.commands[1].additive,
            "absent: not additive"
        );
        assert!(m.commands[2].additive);
    }

    #[test]
    fn input_schema_flags_and_secrets() {
        let s = InputSchema::new(serde_json::json!({
            "required": ["query"],
            "x-aoi": {"flags": {"limit": "--limit", "api_key": "--api-key"}, "secret": ["api_key"]}
        }));
        assert_eq!(s.flag("limit").as_deref(), Some("--limit"));
        assert!(s.has_flag("--api-key") && !s.has_flag("--cursor"));
        assert_eq!(s.secret_flags(), ["--api-key"]);
        assert_eq!(s.required(), ["query"]);
    }

    #[test]
    fn without_x_aoi_a_property_is_its_conventional_flag() {
        // A tool written without our SDK publishes only JSON Schema (docs/discovery.md).
        let s = InputSchema::new(serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "cursor": {"type": "string"},
                "dry_run": {"type": "boolean"},
                "idempotency_key": {"type": "string"},
                "api_token": {"type": "string"},
                "secret_sauce": {"type": "string", "writeOnly": true},
                "key": {"type": "string", "writeOnly": false},
                "title": {"type": "string"}
            }
        }));
        assert_eq!(s.flag("dry_run").as_deref(), Some("--dry-run"));
        assert_eq!(s.flag("nope"), None, "only properties the schema defines");
        assert!(s.has_flag("--cursor") && s.has_flag("--idempotency-key"));
        assert!(!s.has_flag("--limit"));
        assert!(s.positional().is_empty());
        let mut secret = s.secret_flags();
        secret.sort();
        // `key` is a sensitive name (§11), but `"writeOnly": false` says it is not secret.
        assert_eq!(secret, ["--api-token", "--secret-sauce"]);
        // Declared operands are never flags.
        let s = InputSchema::new(serde_json::json!({
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "x-aoi": {"positional": ["query"]}
        }));
        assert_eq!(s.flag("query"), None);
        assert_eq!(s.flag("limit").as_deref(), Some("--limit"));
    }
}
