//! The tools served: each command of each CLI's `capabilities`, with its input schema, output
//! schema and hints, all taken from the CLI's own discovery.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use aoi::discover::manifest::{CommandEntry, InputSchema, Manifest};
use aoi::read::CompiledSchema;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use aoi::discover::argv::caller_schema;

use crate::confine::{ConfineError, Confinement, Pin, Refusal};

/// The longest MCP tool name hosts accept.
pub const MAX_NAME: usize = 64;

/// The argument of an unbounded command's tool that stops the CLI after this many ms.
pub const MAX_DURATION_MS: &str = "max_duration_ms";
/// The argument of an unbounded command's tool that stops the CLI after this many events.
pub const MAX_EVENTS: &str = "max_events";
/// How long an unbounded command runs when the call gives no `max_duration_ms`.
pub const DEFAULT_MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(30);

/// The caller's schema of an unbounded command (`unbounded: true`), with the adapter's own
/// bounds: the stream never ends by itself, so the call says when to stop it.
fn with_stream_bounds(mut schema: Map<String, Value>, unbounded: bool) -> Map<String, Value> {
    if !unbounded {
        return schema;
    }
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(
            MAX_DURATION_MS.into(),
            json!({
                "type": "integer", "minimum": 1, "default": DEFAULT_MAX_DURATION.as_millis() as u64,
                "description": "Stop the stream (SIGINT to the CLI) after this many milliseconds and return the events seen; capped by the server's timeout"
            }),
        );
        props.insert(
            MAX_EVENTS.into(),
            json!({
                "type": "integer", "minimum": 1,
                "description": "Stop the stream (SIGINT to the CLI) after this many events and return them"
            }),
        );
    }
    schema
}

/// One CLI behind the server.
#[derive(Debug)]
pub struct Cli {
    /// The program, then any arguments that precede a command.
    pub argv: Vec<OsString>,
    /// The name its capabilities give.
    pub name: String,
    /// How it spells machine mode (`--output jsonl` or `--format jsonl`).
    pub machine_flag: Vec<String>,
    /// Its event schema, when it publishes one.
    pub schema: Option<Value>,
    /// That schema compiled, for verifying every stream: on the first call, not at start-up.
    pub compiled: OnceLock<Option<CompiledSchema>>,
}

impl Cli {
    /// The event schema, compiled once.
    pub fn compiled(&self) -> Option<&CompiledSchema> {
        self.compiled
            .get_or_init(|| {
                self.schema
                    .as_ref()
                    .and_then(|s| CompiledSchema::new(s).ok())
            })
            .as_ref()
    }
}

/// One MCP tool: a command of a CLI.
#[derive(Debug, Clone)]
pub struct ServedTool {
    /// The MCP tool, as `tools/list` gives it.
    pub tool: Tool,
    /// The CLI it runs.
    pub cli: Arc<Cli>,
    /// What capabilities says of the command.
    pub entry: CommandEntry,
    /// Its input schema.
    pub input: InputSchema,
    /// The property that is `--input-jsonl`, when the command takes JSONL on stdin
    /// (`input_modes` has `jsonl`): the tool then takes its records as [`RECORDS`].
    pub records: Option<String>,
    /// The properties that are paths (`x-aoi-format` or `format` `"path"`), confined to the
    /// catalog's roots.
    pub paths: Vec<String>,
    /// The arguments pinned by the operator (`--pin`): absent from `inputSchema`, refused
    /// from a caller, added to every call.
    pub pins: Map<String, Value>,
}

/// The argument that carries a command's input records: an array of JSON objects, which the
/// adapter writes to the CLI's standard input, one line each, and gives `--input-jsonl -`.
pub const RECORDS: &str = "records";

impl ServedTool {
    /// Makes `arguments` (already valid against `inputSchema`) the CLI's: refuses a pinned
    /// argument and a path outside `confinement`, adds the pins, and takes the [`RECORDS`]
    /// off as the bytes of the CLI's standard input (`None`: stdin stays closed).
    pub fn admit(
        &self,
        confinement: &Confinement,
        arguments: &mut Map<String, Value>,
    ) -> Result<Option<Vec<u8>>, Refusal> {
        if let Some(name) = self.pins.keys().find(|p| arguments.contains_key(*p)) {
            return Err(Refusal::invalid(format!(
                "`{name}` is fixed by the server (--pin) and cannot be given"
            )));
        }
        confinement.check(&self.paths, arguments)?;
        let stdin = self.split_records(arguments)?;
        for (name, value) in &self.pins {
            arguments.insert(name.clone(), value.clone());
        }
        Ok(stdin)
    }

    /// Takes [`RECORDS`] off `arguments`: its items, one compact JSON line each, become the
    /// bytes for the CLI's standard input and the `--input-jsonl` property `-`. `-` without
    /// records would read an empty input, and records with a file are two inputs: both are
    /// refused, as is a call with neither when the CLI requires `--input-jsonl`.
    pub fn split_records(
        &self,
        arguments: &mut Map<String, Value>,
    ) -> Result<Option<Vec<u8>>, Refusal> {
        let Some(flag) = self.records.as_deref() else {
            return Ok(None);
        };
        let given = arguments.get(flag).cloned();
        let Some(records) = arguments.remove(RECORDS) else {
            return match given {
                Some(Value::String(s)) if s == "-" => Err(Refusal::invalid(format!(
                    "`{flag}: \"-\"` reads standard input: give the records as `{RECORDS}`"
                ))),
                None if self.input.required().iter().any(|r| r == flag) => Err(Refusal::invalid(
                    format!("give the input records as `{RECORDS}` (or a file as `{flag}`)"),
                )),
                _ => Ok(None),
            };
        };
        if given.as_ref().is_some_and(|v| v.as_str() != Some("-")) {
            return Err(Refusal::invalid(format!(
                "give `{RECORDS}` or `{flag}`, not both"
            )));
        }
        let mut stdin = Vec::new();
        for record in records.as_array().into_iter().flatten() {
            stdin.extend(serde_json::to_vec(record).unwrap_or_default());
            stdin.push(b'\n');
        }
        arguments.insert(flag.to_owned(), "-".into());
        Ok(Some(stdin))
    }
}

/// The property of `input` given as `--input-jsonl`, when `entry` takes JSONL input and the
/// tool has no property of its own called [`RECORDS`].
fn records_property(entry: &CommandEntry, input: &InputSchema) -> Option<String> {
    if !entry.takes_jsonl() {
        return None;
    }
    let properties = input.schema.get("properties")?.as_object()?;
    if properties.contains_key(RECORDS) {
        return None;
    }
    properties
        .keys()
        .find(|p| input.flag(p).is_some_and(|f| f == "--input-jsonl"))
        .cloned()
}

/// The caller's schema with [`RECORDS`]: an array of the records the input schema documents
/// ([`InputSchema::record`], under its `$defs` name `record_def`; JSON objects when it
/// documents none), so a record that breaks it is refused with the other invalid arguments,
/// before the CLI runs. The `--input-jsonl` property is no longer required (the records stand
/// for it), and is gone when it only takes `-`, which the records are.
fn with_records(
    mut schema: Map<String, Value>,
    records: Option<&str>,
    record_def: Option<&str>,
) -> Map<String, Value> {
    let Some(flag) = records else { return schema };
    let item = match record_def {
        Some(name) => json!({"$ref": format!("#/$defs/{name}")}),
        None => json!({"type": "object"}),
    };
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str() != Some(flag));
    }
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        let only_stdin = props.get(flag).is_some_and(|own| {
            own.get("const").and_then(Value::as_str) == Some("-")
                || own.get("enum") == Some(&json!(["-"]))
        });
        if only_stdin {
            props.remove(flag);
        }
        props.insert(
            RECORDS.to_owned(),
            json!({
                "type": "array",
                "items": item,
                "description": "The input records, written to the CLI's standard input one JSON line each (`--input-jsonl -`)"
            }),
        );
    }
    schema
}

/// Which tools to serve, by MCP tool name: `--allow` and `--exclude`.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only these (all when empty).
    pub allow: Vec<String>,
    /// Never these.
    pub exclude: Vec<String>,
}

impl Filter {
    fn keeps(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|a| a == name))
            && !self.exclude.iter().any(|e| e == name)
    }
}

/// Every tool served.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// In `tools/list` order.
    pub tools: Vec<ServedTool>,
    /// Where path arguments must lead: the working directory unless [`Catalog::confine`]
    /// says otherwise (none at all when it cannot be resolved).
    pub confinement: Confinement,
    /// The files the CLIs were discovered from, as they were then: [`Catalog::changed`].
    pub programs: Vec<Fingerprint>,
}

/// A file a CLI runs from (its program, or a script an argument names), as it was when the
/// CLI was discovered: a new version of the CLI is a new file there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// The file, resolved.
    pub path: PathBuf,
    /// Its size, modification time and inode; `None` when it could not be read.
    pub stamp: Option<(u64, std::time::SystemTime, u64)>,
}

impl Fingerprint {
    /// `path` as it is now.
    pub fn of(path: PathBuf) -> Fingerprint {
        use std::os::unix::fs::MetadataExt;
        let stamp = std::fs::metadata(&path)
            .ok()
            .and_then(|m| Some((m.len(), m.modified().ok()?, m.ino())));
        Fingerprint { path, stamp }
    }

    /// The files of `argv`: its program, and every argument that names a file (a script).
    pub fn of_argv(argv: &[OsString]) -> Vec<Fingerprint> {
        let mut files: Vec<PathBuf> = argv.first().map(absolute).into_iter().collect();
        files.extend(
            argv.iter()
                .skip(1)
                .map(PathBuf::from)
                .filter(|p| p.is_file())
                .filter_map(|p| std::fs::canonicalize(p).ok()),
        );
        files.into_iter().map(Fingerprint::of).collect()
    }
}

/// Why a CLI cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// Its discovery failed.
    #[error("{program}: `{command}` {why}")]
    Discovery {
        /// The program.
        program: String,
        /// The discovery command.
        command: String,
        /// What went wrong.
        why: String,
    },
    /// Two tools would have the same name.
    #[error("two tools would both be called `{0}`; serve the CLIs with distinct names")]
    Duplicate(String),
    /// A `--root` that cannot be used.
    #[error(transparent)]
    Confine(#[from] ConfineError),
    /// A `--pin` that no tool takes, or with a value its property refuses.
    #[error("{0}")]
    Pin(String),
}

/// Runs one discovery command of `argv` and parses its stdout as JSON.
fn discover(argv: &[OsString], args: &[&str]) -> Result<Value, CatalogError> {
    let program = argv
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let failed = |why: String| CatalogError::Discovery {
        program: program.clone(),
        command: args.join(" "),
        why,
    };
    let out = Command::new(argv.first().cloned().unwrap_or_default())
        .args(&argv[1.min(argv.len())..])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| failed(format!("could not run: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(failed(format!(
            "exited with {}: {}",
            out.status,
            stderr.lines().next().unwrap_or_default()
        )));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| failed(format!("did not print JSON: {e}")))
}

/// A CLI's capabilities and schema, from `cache` when the program has not changed since.
fn discover_cli(
    argv: &[OsString],
    cache: Option<&Path>,
) -> Result<(Manifest, Option<Value>), CatalogError> {
    let program = argv
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = cache.and_then(|dir| cache_file(dir, argv));
    let cached = file
        .as_ref()
        .and_then(|f| std::fs::read(f).ok())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    let (caps, schema) = match cached {
        Some(Value::Object(mut doc)) if doc.contains_key("capabilities") => (
            doc.remove("capabilities").unwrap_or_default(),
            doc.remove("schema").filter(|s| !s.is_null()),
        ),
        _ => {
            let (caps, schema) = std::thread::scope(|s| {
                let schema = s.spawn(|| discover(argv, &["schema", "--output", "json"]));
                let caps = discover(argv, &["capabilities", "--output", "json"]);
                (caps, schema.join())
            });
            let caps = caps?;
            let schema = schema.ok().and_then(Result::ok);
            if let Some(file) = &file {
                store(file, &json!({"capabilities": caps, "schema": schema}));
            }
            (caps, schema)
        }
    };
    let manifest: Manifest = serde_json::from_value(caps).map_err(|e| CatalogError::Discovery {
        program,
        command: "capabilities --output json".into(),
        why: format!("is not a §17 manifest: {e}"),
    })?;
    Ok((manifest, schema))
}

/// Where a CLI's discovery is cached: a digest of its argv, and of the size, modification
/// time and inode of every file it runs from (its program, a script an argument names), so a
/// rebuilt or upgraded CLI is discovered again.
fn cache_file(dir: &Path, argv: &[OsString]) -> Option<PathBuf> {
    argv.first()?;
    let mut hasher = Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    for file in Fingerprint::of_argv(argv) {
        let (len, modified, inode) = file.stamp?;
        let modified = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        hasher.update(file.path.as_os_str().as_encoded_bytes());
        hasher.update(len.to_le_bytes());
        hasher.update(modified.as_nanos().to_le_bytes());
        hasher.update(inode.to_le_bytes());
    }
    for arg in &argv[1..] {
        hasher.update([0]);
        hasher.update(arg.as_encoded_bytes());
    }
    let digest: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(dir.join(format!("{}.json", &digest[..32])))
}

/// Writes `doc` to `file` atomically; a cache that cannot be written is simply not kept.
fn store(file: &Path, doc: &Value) {
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let temp = file.with_extension(format!("tmp-{}", std::process::id()));
    let written = serde_json::to_vec(doc)
        .ok()
        .is_some_and(|bytes| std::fs::write(&temp, bytes).is_ok());
    if !written || std::fs::rename(&temp, file).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

/// The default cache directory: `$XDG_CACHE_HOME/aoi/mcp`, else `~/.cache/aoi/mcp`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|base| base.join("aoi").join("mcp"))
}

/// The MCP name of `command` of `tool`: letters, digits, `_` and `-`, at most 64 characters,
/// prefixed with the tool's name when several CLIs are served.
pub fn tool_name(tool: &str, command: &str, prefixed: bool) -> String {
    let raw = if prefixed {
        format!("{tool}_{command}")
    } else {
        command.to_owned()
    };
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(MAX_NAME);
    name
}

/// The output schema of a tool: `{events, summary}`, for a success and a failure alike (hosts
/// hide a result that does not validate, and a failed run is the one to see).
///
/// The events are described by the CLI's event schema narrowed to the types the command emits
/// (`event_types` in capabilities): the other domain types' rules and definitions are left
/// out, which only ever accepts more, never less, and keeps `tools/list` small.
pub fn output_schema(event_schema: Option<&Value>, event_types: &[String]) -> Map<String, Value> {
    let event = match event_schema {
        Some(schema) => narrowed(schema, event_types),
        None => json!({"type": "object", "required": ["type"]}),
    };
    let mut event = event.as_object().cloned().unwrap_or_default();
    let mut defs = match event.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    for key in ["$schema", "$id", "title", "x-aoi"] {
        event.remove(key);
    }
    defs.insert("aoi_event".into(), Value::Object(event));
    // The events' shapes, not their prose: a model reads the result itself, and the CLI's
    // `schema` has every description (tools/list is paid for in every session's context).
    for def in defs.values_mut() {
        crate::compact::for_each_schema(def, &mut |map| {
            map.remove("description");
        });
    }
    let mut schema = json!({
        "type": "object",
        "description": "The run of the CLI: its events (aoi:meta and aoi:summary aside) and its terminal aoi:summary; `protocol_violation` when the CLI broke the AOI-CLI contract, `adapter_error` when the adapter stopped the run.",
        "properties": {
            "events": {"type": "array", "items": {"$ref": "#/$defs/aoi_event"}},
            "summary": {"anyOf": [{"$ref": "#/$defs/aoi_event"}, {"type": "null"}]},
            "protocol_violation": {
                "type": "object",
                "properties": {
                    "findings": {"type": "array", "items": {"type": "object"}},
                    "message": {"type": "string"},
                    "withheld_events": {"type": "integer"}
                }
            },
            "adapter_error": {"type": "object"},
            "truncated": {"type": "boolean", "description": "Events were withheld to keep the response under the server's --max-output"},
            "next_cursor": {"type": "string", "description": "The CLI's own next_cursor, when a truncated result's summary gave one"},
            "withheld_events": {"type": "integer", "description": "Events the adapter did not include"},
            "stopped": {
                "type": "object",
                "description": "An unbounded stream the adapter stopped at max_duration_ms or max_events",
                "properties": {"reason": {"enum": ["max_duration", "max_events"]}, "retryable": {"type": "boolean"}, "message": {"type": "string"}}
            }
        },
        "required": ["events", "summary"]
    });
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("$defs".into(), Value::Object(defs));
    }
    schema.as_object().cloned().unwrap_or_default()
}

/// `schema` without the rules of the types not in `types` (nor of `aoi:meta`, which a result
/// never holds), through the SDK's narrowing, then compacted ([`crate::compact::events`]);
/// the framework's definitions lose their prose too, which would be repeated in every tool.
fn narrowed(schema: &Value, types: &[String]) -> Value {
    let mut narrow = aoi::discover::schema::narrowed(schema, |ty| {
        ty != "aoi:meta" && (types.is_empty() || types.iter().any(|t| t == ty))
    });
    crate::compact::events_of(&mut narrow, types);
    narrow
}

impl Catalog {
    /// Discovers every CLI of `clis` and builds its tools, keeping those `filter` keeps.
    ///
    /// With `cache`, a CLI's discovery is kept there, keyed by the program's path, size and
    /// modification time (and its arguments): a host that restarts the server often does not
    /// pay for discovery again until the program changes.
    pub fn discover(
        clis: &[Vec<OsString>],
        filter: &Filter,
        cache: Option<&Path>,
    ) -> Result<Catalog, CatalogError> {
        let prefixed = clis.len() > 1;
        let mut catalog = Catalog {
            confinement: Confinement::new(&[]).unwrap_or_default(),
            ..Catalog::default()
        };
        let mut names = BTreeSet::new();
        // Discovery of every CLI at once: start-up is bounded by the slowest, not the sum.
        let found: Vec<Result<(Manifest, Option<Value>), CatalogError>> =
            std::thread::scope(|scope| {
                let handles: Vec<_> = clis
                    .iter()
                    .map(|argv| scope.spawn(move || discover_cli(argv, cache)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(CatalogError::Discovery {
                                program: String::new(),
                                command: "capabilities".into(),
                                why: "discovery failed".into(),
                            })
                        })
                    })
                    .collect()
            });
        for (argv, found) in clis.iter().zip(found) {
            let (manifest, schema) = found?;
            let machine_flag = manifest.machine_args();
            let cli = Arc::new(Cli {
                argv: argv.clone(),
                name: manifest.tool.clone(),
                machine_flag,
                compiled: OnceLock::new(),
                schema,
            });
            for entry in manifest
                .commands
                .iter()
                .filter(|c| !c.is_discovery() && c.speaks_aoi())
            {
                let name = tool_name(&cli.name, &entry.name, prefixed);
                if !filter.keeps(&name) {
                    continue;
                }
                if !names.insert(name.clone()) {
                    return Err(CatalogError::Duplicate(name));
                }
                let input = match &entry.input_schema {
                    Some(schema) => InputSchema::for_command(schema.clone(), entry),
                    None => InputSchema::for_command(
                        discover(
                            argv,
                            &["input-schema", "--command", &entry.name, "--output", "json"],
                        )?,
                        entry,
                    ),
                };
                catalog
                    .tools
                    .push(served(name, Arc::clone(&cli), entry.clone(), input));
            }
        }
        catalog.dedupe_descriptions();
        catalog.programs = clis
            .iter()
            .flat_map(|argv| Fingerprint::of_argv(argv))
            .collect();
        Ok(catalog)
    }

    /// True when a file a CLI runs from is not as it was at discovery: the CLI was upgraded,
    /// rebuilt or replaced, and its tools may have changed.
    pub fn changed(&self) -> bool {
        self.programs
            .iter()
            .any(|f| Fingerprint::of(f.path.clone()) != *f)
    }

    /// Keeps each schema description once in the list ([`crate::compact::dedupe_descriptions`]).
    fn dedupe_descriptions(&mut self) {
        let mut schemas: Vec<Value> = Vec::new();
        for t in &self.tools {
            schemas.push(Value::Object(t.tool.input_schema.as_ref().clone()));
            schemas.push(Value::Object(
                t.tool.output_schema.as_deref().cloned().unwrap_or_default(),
            ));
        }
        crate::compact::dedupe_descriptions(schemas.iter_mut());
        let mut schemas = schemas.into_iter();
        for t in &mut self.tools {
            if let Some(Value::Object(input)) = schemas.next() {
                t.tool.input_schema = Arc::new(input);
            }
            if let Some(Value::Object(output)) = schemas.next() {
                if t.tool.output_schema.is_some() {
                    t.tool.output_schema = Some(Arc::new(output));
                }
            }
        }
    }

    /// Confines every path argument to `roots` (the working directory when empty) and pins
    /// `pins`: each is removed from the `inputSchema` of every tool that takes it, and a pin
    /// that no tool takes, or whose value its property refuses, is an error.
    pub fn confine(&mut self, roots: &[PathBuf], pins: &[Pin]) -> Result<(), CatalogError> {
        self.confinement = Confinement::new(roots)?;
        let base = self.confinement.base().to_path_buf();
        for pin in pins {
            if aoi::discover::argv::ADAPTER_OWNED.contains(&pin.name.as_str()) {
                return Err(CatalogError::Pin(format!(
                    "--pin {}: `{}` is the adapter's (machine mode)",
                    pin.name, pin.name
                )));
            }
            let mut taken = false;
            for served in &mut self.tools {
                let Some(property) = served.input.property(&pin.name).cloned() else {
                    continue;
                };
                taken = true;
                let value = pin.typed(&property, &base).map_err(CatalogError::Pin)?;
                served.pins.insert(pin.name.clone(), value);
                let mut schema = served.tool.input_schema.as_ref().clone();
                if let Some(Value::Object(props)) = schema.get_mut("properties") {
                    props.remove(&pin.name);
                }
                if let Some(Value::Array(required)) = schema.get_mut("required") {
                    required.retain(|r| r.as_str() != Some(pin.name.as_str()));
                }
                served.tool.input_schema = Arc::new(schema);
            }
            if !taken {
                return Err(CatalogError::Pin(format!(
                    "--pin {}: no tool takes `{}`",
                    pin.name, pin.name
                )));
            }
        }
        Ok(())
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&ServedTool> {
        self.tools.iter().find(|t| t.tool.name == name)
    }
}

/// The MCP hints of a command, never more reassuring than its manifest allows: MCP reads an
/// absent or false `destructiveHint` on a tool that writes as "only adds", and a host may
/// approve such calls without asking.
///
/// - `readOnlyHint`: `read_only`.
/// - `idempotentHint`: only a read-only command. Taking `--idempotency-key` makes a call safe
///   to repeat only when the caller passes a key; two `create` calls without one create two.
/// - `destructiveHint`: every command that is not read-only, unless the manifest says it is
///   `additive` (profile, `docs/discovery.md`): `update`, `move` or `sync` overwrite what was
///   there though they delete nothing, and are not `destructive` in the §14.3 sense.
pub fn hints(entry: &CommandEntry) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(entry.read_only)
        .destructive(!entry.read_only && (entry.destructive || !entry.additive))
        .idempotent(entry.read_only)
        .open_world(false)
}

fn served(name: String, cli: Arc<Cli>, entry: CommandEntry, input: InputSchema) -> ServedTool {
    let mut description = entry
        .summary
        .clone()
        .unwrap_or_else(|| format!("`{} {}`", cli.name, entry.name));
    if entry.destructive {
        description.push_str(
            ". Destructive: the CLI refuses unless `confirm` is true (and `confirm_count` matches when it asks for it); run with `dry_run` first to see the plan.",
        );
    }
    if entry.supports_cursor {
        description.push_str(
            ". Bounded: when the summary says truncated, pass its next_cursor as `cursor` for the next page.",
        );
    }
    let annotations = hints(&entry);
    let records = records_property(&entry, &input);
    let mut input_schema = with_stream_bounds(
        with_records(
            caller_schema(&input),
            records.as_deref(),
            input.record().map(|(name, _)| name),
        ),
        entry.unbounded,
    );
    crate::compact::input(&mut input_schema);
    let tool = Tool::new(name, description, Arc::new(input_schema))
        .with_title(format!("{} {}", cli.name, entry.name))
        .with_raw_output_schema(Arc::new({
            let mut schema = output_schema(cli.schema.as_ref(), &entry.event_types);
            crate::compact::result_fields(&mut schema);
            schema
        }))
        .with_annotations(annotations);
    ServedTool {
        tool,
        cli,
        entry,
        paths: input.path_properties(),
        input,
        records,
        pins: Map::new(),
    }
}

/// The program's absolute path (see [`aoi::read::locate_program`]), or the name as given
/// when it cannot be found.
pub fn absolute(program: &OsString) -> PathBuf {
    aoi::read::locate_program(program).unwrap_or_else(|| PathBuf::from(program))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_for_mcp_and_prefixed_when_several_clis_are_served() {
        assert_eq!(tool_name("outline", "auth login", false), "auth_login");
        assert_eq!(tool_name("outline", "search", true), "outline_search");
        assert_eq!(tool_name("t", "a.b/c", false), "a_b_c");
        assert_eq!(tool_name("t", &"x".repeat(100), false).len(), MAX_NAME);
    }

    #[test]
    fn hints_are_never_more_reassuring_than_the_manifest() {
        let entry = |v: Value| serde_json::from_value::<CommandEntry>(v).unwrap();
        let h = |v: Value| {
            let a = hints(&entry(v));
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
        };
        let keyed = json!({"name": "create", "supports_idempotency_key": true});
        assert_eq!(h(keyed), (Some(false), Some(true), Some(false)));
        let additive =
            json!({"name": "create", "additive": true, "supports_idempotency_key": true});
        assert_eq!(h(additive), (Some(false), Some(false), Some(false)));
        let update = json!({"name": "update"});
        assert_eq!(h(update), (Some(false), Some(true), Some(false)));
        let both = json!({"name": "x", "additive": true, "destructive": true});
        assert_eq!(
            h(both),
            (Some(false), Some(true), Some(false)),
            "destructive wins"
        );
        let read = json!({"name": "get", "read_only": true});
        assert_eq!(h(read), (Some(true), Some(false), Some(true)));
    }

    #[test]
    fn the_output_schema_accepts_a_failed_run_and_a_violation() {
        let event = json!({"type": "object", "required": ["type"]});
        let schema = Value::Object(output_schema(Some(&event), &[]));
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(&json!({"events": [], "summary": {"type": "aoi:summary", "ok": false}})));
        assert!(v.is_valid(&json!({"events": [{"type": "hit"}], "summary": null, "protocol_violation": {"findings": [], "message": "x"}})));
        assert!(!v.is_valid(&json!({"summary": null})));
    }

    #[test]
    fn narrowing_drops_other_domain_types_and_their_definitions_only() {
        let schema = json!({
            "type": "object",
            "allOf": [
                {"if": {"properties": {"type": {"const": "aoi:summary"}}}, "then": {"$ref": "#/$defs/summary"}},
                {"if": {"properties": {"type": {"const": "hit"}}}, "then": {"$ref": "#/$defs/hit"}},
                {"if": {"properties": {"type": {"const": "entry"}}}, "then": {"$ref": "#/$defs/entry"}}
            ],
            "$defs": {
                "summary": {"properties": {"reason": {"$ref": "#/$defs/reason"}}},
                "reason": {"enum": ["failed"]},
                "hit": {"required": ["rank"]},
                "entry": {"required": ["id"]}
            }
        });
        let narrowed = narrowed(&schema, &["hit".to_owned(), "aoi:summary".to_owned()]);
        // The summary is the adapter's own shape, the hit's definition inlined: the CLI's
        // framework definitions and the other types' are gone.
        let defs = narrowed["$defs"].as_object().unwrap();
        assert!(defs.is_empty(), "{defs:?}");
        let entries = narrowed["allOf"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0]["if"]["properties"]["type"]["const"],
            "aoi:summary"
        );
        assert_eq!(entries[1]["then"], json!({"required": ["rank"]}));
        let out = Value::Object(output_schema(
            Some(&schema),
            &["hit".to_owned(), "aoi:summary".to_owned()],
        ));
        let v = jsonschema::validator_for(&out).unwrap();
        assert!(
            !v.is_valid(&json!({"events": [{"type": "hit"}], "summary": null})),
            "a hit needs its rank"
        );
        assert!(
            v.is_valid(&json!({"events": [{"type": "entry"}], "summary": null})),
            "narrowing never rejects more"
        );
    }
}
