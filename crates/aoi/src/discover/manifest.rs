//! Reading another tool's discovery: the §17 capability manifest and a command's input schema,
//! as consumers (`aoi lint`, `aoi mcp`) use them. Tolerant of what a tool in any language may
//! leave out: every field has a safe default.

use serde::Deserialize;
use serde_json::Value;

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
        matches!(
            self.name.as_str(),
            "schema" | "input-schema" | "capabilities"
        )
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
    /// Wraps a schema document.
    pub fn new(schema: Value) -> InputSchema {
        InputSchema { schema }
    }

    fn x_aoi(&self) -> Option<&Value> {
        self.schema.get("x-aoi")
    }

    /// The flag spelling of a property, e.g. `"--limit"` for `limit`.
    pub fn flag(&self, property: &str) -> Option<&str> {
        self.x_aoi()?.get("flags")?.get(property)?.as_str()
    }

    /// True when the command takes this flag (given as `--name`).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.x_aoi()
            .and_then(|x| x.get("flags"))
            .and_then(Value::as_object)
            .is_some_and(|flags| flags.values().any(|f| f.as_str() == Some(flag)))
    }

    /// The flags whose values are secret (§11), as spelled on the command line.
    pub fn secret_flags(&self) -> Vec<String> {
        self.x_aoi()
            .and_then(|x| x.get("secret"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|p| self.flag(p).map(str::to_owned))
            .collect()
    }

    /// The properties given as operands, in command-line order.
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

    /// True when the last operand is taken after `--` (e.g. a command to run).
    pub fn trailing_after_double_dash(&self) -> bool {
        self.x_aoi()
            .and_then(|x| x.get("trailing_after_double_dash"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The schema of property `name`.
    pub fn property(&self, name: &str) -> Option<&Value> {
        self.schema.get("properties")?.get(name)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_manifest_reads_with_defaults() {
        let m: Manifest = serde_json::from_str(
            r#"{"tool":"t","commands":[{"name":"auth login","destructive":true},{"name":"x","extra":1}]}"#,
        )
        .unwrap();
        assert_eq!(m.tool, "t");
        assert_eq!(m.commands[0].words(), ["auth", "login"]);
        assert!(m.commands[0].destructive && !m.commands[0].read_only);
        assert!(m.commands[1].examples.is_empty());
    }

    #[test]
    fn input_schema_flags_and_secrets() {
        let s = InputSchema::new(serde_json::json!({
            "required": ["query"],
            "x-aoi": {"flags": {"limit": "--limit", "api_key": "--api-key"}, "secret": ["api_key"]}
        }));
        assert_eq!(s.flag("limit"), Some("--limit"));
        assert!(s.has_flag("--api-key") && !s.has_flag("--cursor"));
        assert_eq!(s.secret_flags(), ["--api-key"]);
        assert_eq!(s.required(), ["query"]);
    }
}
