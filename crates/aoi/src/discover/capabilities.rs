//! `capabilities`: the §17 manifest, one JSON object describing every command.
//!
//! What a command *can take* (`supports_dry_run`, `supports_cursor`, `bounded`,
//! `requires_confirm`, `supports_idempotency_key`, input modes) is read from its clap
//! definition, so it cannot disagree with `--help`; what a command *does* (`read_only`,
//! `destructive`, `unbounded`, the domain events it emits, auth, runnable examples) is stated by
//! the tool in a [`CommandSpec`]. `aoi lint` checks the stated half against behaviour.

use clap::Command;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input_schema::{command_paths, find_command, record_schema, with_record};
use crate::discover::schema::EventSchema;
use crate::wire::AOI_VERSION;

/// Where a command's input record schema comes from: derived only when a discovery document
/// needs it, so a run that prints none pays nothing for it.
#[derive(Clone)]
enum RecordSchema {
    /// [`record_schema`] of the tool's record type.
    Derived(fn() -> Value),
    /// Written by the tool.
    Given(Value),
}

impl RecordSchema {
    fn value(&self) -> Value {
        match self {
            RecordSchema::Derived(derive) => derive(),
            RecordSchema::Given(schema) => schema.clone(),
        }
    }
}

impl std::fmt::Debug for RecordSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordSchema::Derived(_) => f.write_str("Derived"),
            RecordSchema::Given(schema) => f.debug_tuple("Given").field(schema).finish(),
        }
    }
}

impl PartialEq for RecordSchema {
    fn eq(&self, other: &RecordSchema) -> bool {
        self.value() == other.value()
    }
}

impl Eq for RecordSchema {}

/// An argv of words, as the builders take it.
pub(crate) fn words<I, S>(argv: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    argv.into_iter().map(Into::into).collect()
}

/// A domain event type a command emits, with what registers its body in an event schema
/// ([`CommandSpec::emits`]).
#[derive(Clone)]
pub struct Emitted {
    event_type: &'static str,
    register: fn(EventSchema) -> EventSchema,
}

impl Emitted {
    /// The event's `type`.
    pub fn event_type(&self) -> &'static str {
        self.event_type
    }

    /// `schema` with the event's body registered.
    pub fn register(&self, schema: EventSchema) -> EventSchema {
        (self.register)(schema)
    }
}

impl std::fmt::Debug for Emitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Emitted").field(&self.event_type).finish()
    }
}

// By type: the registering function is the type's, so two with one type are the same.
impl PartialEq for Emitted {
    fn eq(&self, other: &Emitted) -> bool {
        self.event_type == other.event_type
    }
}

impl Eq for Emitted {}

/// What a tool states about one command's behaviour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandSpec {
    name: String,
    read_only: bool,
    destructive: bool,
    additive: bool,
    unbounded: bool,
    event_types: Vec<String>,
    emitted: Vec<Emitted>,
    examples: Vec<Vec<String>>,
    setup: Vec<Value>,
    stdin: Option<String>,
    auth: Option<String>,
    input_default: Option<String>,
    protocol: Option<String>,
    record: Option<RecordSchema>,
}

impl CommandSpec {
    /// A command (space-separated path for nested ones) that changes state until said otherwise.
    pub fn new(name: impl Into<String>) -> CommandSpec {
        CommandSpec {
            name: name.into(),
            ..CommandSpec::default()
        }
    }

    /// The domain event types the command is said to emit.
    pub fn event_types(&self) -> &[String] {
        &self.event_types
    }

    /// The domain events stated with [`CommandSpec::emits`].
    pub fn emitted(&self) -> &[Emitted] {
        &self.emitted
    }

    /// The command emits the domain event `E`: its type is listed, and its body joins the
    /// event schema an [`App::schema_id`](crate::app::App::schema_id) tool serves, so the
    /// type's name is written once, on `E`.
    pub fn emits<E: crate::DomainEvent + JsonSchema>(mut self) -> Self {
        self.event_types.push(E::TYPE.to_owned());
        self.emitted.push(Emitted {
            event_type: E::TYPE,
            register: EventSchema::domain_event::<E>,
        });
        self
    }

    /// The command changes nothing (§14.1).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The command destroys data: it requires `--confirm` (§14.3).
    pub fn destructive(mut self) -> Self {
        self.destructive = true;
        self
    }

    /// The command only adds (a new document, a copy): it never overwrites nor removes what
    /// was there, so a host may treat it as not destructive (profile, `docs/discovery.md`).
    pub fn additive(mut self) -> Self {
        self.additive = true;
        self
    }

    /// The command streams until cancelled, like `watch` (§4.2).
    pub fn unbounded(mut self) -> Self {
        self.unbounded = true;
        self
    }

    /// The domain event types the command emits.
    pub fn events<I, S>(mut self, types: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.event_types.extend(types.into_iter().map(Into::into));
        self
    }

    /// A runnable example invocation, argv without the program name.
    pub fn example<I, S>(mut self, argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.examples.push(words(argv));
        self
    }

    /// A command to run first, in the same fresh directory, so the examples find the state
    /// they need (a record to get, items to page through): an argv without the program name.
    /// Consumers that run examples (`aoi lint`) run the setup first (profile,
    /// docs/discovery.md).
    pub fn setup<I, S>(mut self, argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.setup.push(Value::from(words(argv)));
        self
    }

    /// `steps` as the command's set-up when it states none of its own
    /// ([`App::setup`](crate::app::App::setup)).
    pub(crate) fn or_setup(mut self, steps: &[Value]) -> Self {
        if self.setup.is_empty() {
            self.setup = steps.to_vec();
        }
        self
    }

    /// [`CommandSpec::setup`] with what the command reads on standard input (the records of
    /// an `import --input-jsonl -`).
    pub fn setup_with_stdin<I, S>(mut self, argv: I, stdin: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.setup
            .push(serde_json::json!({"args": words(argv), "stdin": stdin.into()}));
        self
    }

    /// The set-up steps stated: argvs, or `{"args", "stdin"}` objects.
    pub fn setup_steps(&self) -> &[Value] {
        &self.setup
    }

    /// What the examples read on standard input.
    pub fn stdin(mut self, text: impl Into<String>) -> Self {
        self.stdin = Some(text.into());
        self
    }

    /// The command speaks another protocol on stdout instead of an AOI stream, e.g. `"mcp"`
    /// for a server: consumers (lint, an MCP adapter) do not run it as a Machine Mode command.
    pub fn protocol(mut self, protocol: impl Into<String>) -> Self {
        self.protocol = Some(protocol.into());
        self
    }

    /// The command needs credentials, e.g. `"OUTLINE_TOKEN or outline auth login"`.
    pub fn auth(mut self, requirement: impl Into<String>) -> Self {
        self.auth = Some(requirement.into());
        self
    }

    /// The documented default for malformed input lines: `"fail_fast"` or
    /// `"continue_on_error"` (§12.2).
    pub fn input_default(mut self, mode: crate::surface::flags::InputMode) -> Self {
        self.input_default = Some(
            match mode {
                crate::surface::flags::InputMode::FailFast => "fail_fast",
                crate::surface::flags::InputMode::ContinueOnError => "continue_on_error",
            }
            .to_owned(),
        );
        self
    }

    /// The command reads records of type `T` (`--input-jsonl`, `--input-json`, §12): its input
    /// schema documents one as `$defs.record`, derived by
    /// [`record_schema`], where `aoi lint` and `aoi mcp`
    /// read it (`docs/discovery.md`). Validate the input with the same schema
    /// ([`Input::validate_with`](crate::surface::input::Input::validate_with)) so that what a
    /// consumer was told is what the command takes. A command without an input flag that
    /// declares a record is an error at start-up ([`App::check`](crate::app::App::check)).
    ///
    /// ```
    /// use aoi::CommandSpec;
    ///
    /// /// One note to add.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// #[serde(deny_unknown_fields)]
    /// struct NoteRecord {
    ///     /// The note's text.
    ///     text: String,
    /// }
    ///
    /// let spec = CommandSpec::new("import").additive().record::<NoteRecord>();
    /// assert_eq!(spec.record_schema().unwrap()["required"], serde_json::json!(["text"]));
    /// ```
    pub fn record<T: JsonSchema>(mut self) -> Self {
        self.record = Some(RecordSchema::Derived(record_schema::<T>));
        self
    }

    /// The command reads records that `schema` (a standalone JSON Schema 2020-12 document)
    /// describes: [`CommandSpec::record`] for a schema written by hand.
    pub fn record_with_schema(mut self, schema: Value) -> Self {
        self.record = Some(RecordSchema::Given(schema));
        self
    }

    /// The command's documented default for malformed input (§12.2), when it states one.
    pub fn input_default_mode(&self) -> Option<crate::surface::flags::InputMode> {
        use crate::surface::flags::InputMode;
        match self.input_default.as_deref() {
            Some("fail_fast") => Some(InputMode::FailFast),
            Some("continue_on_error") => Some(InputMode::ContinueOnError),
            _ => None,
        }
    }

    /// The schema of the command's input record, when it declares one.
    pub fn record_schema(&self) -> Option<Value> {
        self.record.as_ref().map(RecordSchema::value)
    }

    /// True when the command declares an input record.
    pub fn has_record(&self) -> bool {
        self.record.is_some()
    }

    /// The command's name (a space-separated path for nested ones).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its examples, each an argv after the program name.
    pub fn examples(&self) -> &[Vec<String>] {
        &self.examples
    }
}

/// The input schema of command `path` of the built definition `built`, with the record
/// `spec` declares as `$defs.record`.
pub(crate) fn command_input_schema(
    built: &Command,
    path: &str,
    spec: Option<&CommandSpec>,
) -> Result<Value, super::input_schema::UnknownCommand> {
    let schema = super::input_schema::input_schema(built, path)?;
    Ok(match spec.and_then(CommandSpec::record_schema) {
        Some(record) => with_record(schema, record),
        None => schema,
    })
}

/// The §17 manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Tool name.
    pub tool: String,
    /// Tool release.
    pub tool_version: String,
    /// AOI versions spoken.
    pub aoi_versions: Vec<String>,
    /// Machine outputs, with the flag that selects them.
    pub outputs: Vec<String>,
    /// How machine mode is selected, e.g. `["--output", "jsonl"]`.
    pub machine_flag: Vec<String>,
    /// Event schemas served.
    pub schemas: Vec<SchemaVersions>,
    /// Commands.
    pub commands: Vec<CommandInfo>,
}

/// The versions of one event schema (§5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaVersions {
    /// `schema_name`.
    pub name: String,
    /// Every version served.
    pub versions: Vec<String>,
    /// The one spoken without `--schema-version`.
    pub default: String,
}

/// One command in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandInfo {
    /// Command path.
    pub name: String,
    /// One-line description from `--help`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Changes nothing.
    pub read_only: bool,
    /// Destroys data.
    pub destructive: bool,
    /// Only adds: never overwrites nor removes what was there (profile, `docs/discovery.md`).
    /// Written only when true; absent means false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub additive: bool,
    /// Takes `--confirm`.
    pub requires_confirm: bool,
    /// Takes `--dry-run`.
    pub supports_dry_run: bool,
    /// Takes `--idempotency-key`.
    pub supports_idempotency_key: bool,
    /// Takes `--limit` (and is bounded by default).
    pub bounded: bool,
    /// Takes `--cursor`.
    pub supports_cursor: bool,
    /// Streams until cancelled; EOF without a summary is expected (§4.2).
    pub unbounded: bool,
    /// Every event type the command may emit, framework ones included.
    pub event_types: Vec<String>,
    /// `args`, `jsonl`, `json`.
    pub input_modes: Vec<String>,
    /// The default handling of malformed input lines, when it takes input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_default: Option<String>,
    /// Credentials needed, when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    /// Runnable examples: argv arrays without the program name.
    pub examples: Vec<Vec<String>>,
    /// Commands to run first so the examples find their state: argv arrays, or
    /// `{"args": [...], "stdin": "..."}` (profile, docs/discovery.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<Value>,
    /// What the examples read on standard input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Another protocol the command speaks on stdout instead of an AOI stream (e.g. `mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The command's input schema, as `input-schema --command NAME` prints it: a consumer
    /// that needs every command's (an MCP adapter listing tools) reads them here in one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
}

/// Builds the manifest from the clap definition and the tool's statements.
///
/// Every leaf command of `root` appears; one without a [`CommandSpec`] is described
/// conservatively (not read-only, not destructive).
pub fn manifest(
    root: &Command,
    specs: &[CommandSpec],
    identity: &crate::wire::Identity,
    schema_name: &str,
    versions: &[String],
    default_version: &str,
) -> Capabilities {
    let mut built = root.clone();
    built.build();
    let machine_flag = if built
        .get_arguments()
        .any(|a| a.get_long() == Some("output"))
    {
        vec!["--output".to_owned(), "jsonl".to_owned()]
    } else {
        vec!["--format".to_owned(), "jsonl".to_owned()]
    };
    let commands = command_paths(&built)
        .into_iter()
        .filter_map(|path| {
            let cmd = find_command(&built, &path)?;
            let spec = specs
                .iter()
                .find(|s| s.name == path)
                .cloned()
                .unwrap_or_else(|| CommandSpec::new(path.clone()));
            let input_schema = command_input_schema(&built, &path, Some(&spec)).ok();
            let mut info = command_info(cmd, spec);
            info.input_schema = input_schema;
            Some(info)
        })
        .collect();
    Capabilities {
        tool: identity.tool.clone(),
        tool_version: identity.tool_version.clone(),
        aoi_versions: vec![AOI_VERSION.to_owned()],
        outputs: vec!["jsonl".to_owned()],
        machine_flag,
        schemas: vec![SchemaVersions {
            name: schema_name.to_owned(),
            versions: versions.to_vec(),
            default: default_version.to_owned(),
        }],
        commands,
    }
}

fn command_info(cmd: &Command, spec: CommandSpec) -> CommandInfo {
    let has = |long: &str| cmd.get_arguments().any(|a| a.get_long() == Some(long));
    let mut input_modes = vec!["args".to_owned()];
    if has("input-jsonl") {
        input_modes.push("jsonl".to_owned());
    }
    if has("input-json") {
        input_modes.push("json".to_owned());
    }
    let takes_input = input_modes.len() > 1;
    let mut event_types = vec!["aoi:meta".to_owned()];
    event_types.extend(spec.event_types.iter().cloned());
    if has("dry-run") {
        event_types.push("aoi:plan".to_owned());
    }
    if spec.unbounded {
        event_types.push("aoi:heartbeat".to_owned());
    }
    event_types.extend(["aoi:warning", "aoi:error", "aoi:summary"].map(str::to_owned));
    CommandInfo {
        summary: cmd
            .get_about()
            .map(|a| a.to_string().lines().next().unwrap_or_default().to_owned()),
        read_only: spec.read_only,
        destructive: spec.destructive,
        additive: spec.additive,
        requires_confirm: has("confirm"),
        supports_dry_run: has("dry-run"),
        supports_idempotency_key: has("idempotency-key"),
        bounded: has("limit"),
        supports_cursor: has("cursor"),
        unbounded: spec.unbounded,
        event_types,
        input_modes,
        input_default: if takes_input {
            spec.input_default.or_else(|| Some("fail_fast".to_owned()))
        } else {
            None
        },
        auth: spec.auth,
        examples: spec.examples,
        setup: spec.setup,
        stdin: spec.stdin,
        name: spec.name,
        protocol: spec.protocol,
        input_schema: None,
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, Subcommand};

    use super::*;
    use crate::surface::flags::{ConfirmArgs, GlobalArgs, InputArgs, MutationArgs, PageArgs};

    #[derive(Parser)]
    #[command(name = "notes", version = "2.1.0")]
    struct Cli {
        #[command(flatten)]
        aoi: GlobalArgs,
        #[command(subcommand)]
        command: Cmd,
    }

    #[derive(Subcommand)]
    enum Cmd {
        /// Ranked search.
        Search {
            query: String,
            #[command(flatten)]
            page: PageArgs,
        },
        /// Delete notes.
        Delete {
            id: String,
            #[command(flatten)]
            mutation: MutationArgs,
            #[command(flatten)]
            confirm: ConfirmArgs,
        },
        /// Import notes.
        Import {
            #[command(flatten)]
            input: InputArgs,
        },
    }

    fn build() -> Capabilities {
        let specs = [
            CommandSpec::new("search")
                .read_only()
                .events(["hit"])
                .example(["search", "agent", "--limit", "2"]),
            CommandSpec::new("delete")
                .destructive()
                .events(["deleted"])
                .setup_with_stdin(["import", "--input-jsonl", "-"], "{\"id\":\"n1\"}\n")
                .setup(["import", "--input-jsonl", "seed.jsonl"])
                .example(["delete", "n1", "--confirm"]),
            CommandSpec::new("import")
                .additive()
                .stdin("{\"id\":\"n2\"}\n"),
        ];
        manifest(
            &Cli::command(),
            &specs,
            &crate::wire::Identity::new("notes", "2.1.0", "com.example.notes.events", "2.0.0"),
            "com.example.notes.events",
            &["1.0.0".into(), "2.0.0".into()],
            "2.0.0",
        )
    }

    #[test]
    fn setup_and_stdin_are_declared_on_the_command_and_absent_unless_given() {
        let m = build();
        let json = serde_json::to_value(&m).unwrap();
        let delete = &json["commands"][1];
        assert_eq!(
            delete["setup"],
            serde_json::json!([
                {"args": ["import", "--input-jsonl", "-"], "stdin": "{\"id\":\"n1\"}\n"},
                ["import", "--input-jsonl", "seed.jsonl"]
            ])
        );
        assert_eq!(json["commands"][2]["stdin"], "{\"id\":\"n2\"}\n");
        let search = json["commands"][0].as_object().unwrap();
        assert!(!search.contains_key("setup") && !search.contains_key("stdin"));
        // What lint reads back: the same steps.
        let entry: crate::discover::manifest::CommandEntry =
            serde_json::from_value(delete.clone()).unwrap();
        assert_eq!(entry.setup.len(), 2);
    }

    #[test]
    fn flags_are_read_from_clap_and_behaviour_from_the_spec() {
        let m = build();
        assert_eq!(m.tool, "notes");
        assert_eq!(m.tool_version, "2.1.0");
        assert_eq!(m.aoi_versions, ["1.0-alpha"]);
        assert_eq!(m.machine_flag, ["--output", "jsonl"]);
        assert_eq!(m.schemas[0].default, "2.0.0");
        let search = &m.commands[0];
        assert_eq!(search.name, "search");
        assert!(search.read_only && search.bounded && search.supports_cursor);
        assert!(!search.supports_dry_run && !search.requires_confirm);
        assert_eq!(search.summary.as_deref(), Some("Ranked search"));
        assert_eq!(search.examples, [["search", "agent", "--limit", "2"]]);
        assert_eq!(
            search.event_types,
            ["aoi:meta", "hit", "aoi:warning", "aoi:error", "aoi:summary"]
        );
        let delete = &m.commands[1];
        assert!(delete.destructive && delete.requires_confirm && delete.supports_dry_run);
        assert!(delete.supports_idempotency_key && !delete.bounded);
        assert!(delete.event_types.contains(&"aoi:plan".to_owned()));
        let import = &m.commands[2];
        assert!(!import.read_only && import.additive);
        assert!(
            !search.additive && !delete.additive,
            "not additive unless said"
        );
        assert_eq!(import.input_modes, ["args", "jsonl", "json"]);
        assert_eq!(import.input_default.as_deref(), Some("fail_fast"));
        assert_eq!(search.input_default, None);
    }

    #[test]
    fn the_manifest_is_one_json_object_that_round_trips() {
        let m = build();
        let text = serde_json::to_string(&m).unwrap();
        let back: Capabilities = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn what_the_sdk_writes_the_consumer_reader_reads_back_equal() {
        // The writer (`Capabilities`) and the reader lint and mcp use (`manifest::Manifest`)
        // must agree on every field both know.
        let written = build();
        let read: crate::discover::manifest::Manifest =
            serde_json::from_value(serde_json::to_value(&written).unwrap()).unwrap();
        assert_eq!(read.tool, written.tool);
        assert_eq!(
            read.tool_version.as_deref(),
            Some(written.tool_version.as_str())
        );
        assert_eq!(read.aoi_versions, written.aoi_versions);
        assert_eq!(read.outputs, written.outputs);
        assert_eq!(read.machine_args(), written.machine_flag);
        assert_eq!(read.schemas.len(), written.schemas.len());
        for (r, w) in read.schemas.iter().zip(&written.schemas) {
            assert_eq!((&r.name, &r.versions), (&w.name, &w.versions));
            assert_eq!(r.default.as_deref(), Some(w.default.as_str()));
        }
        assert_eq!(read.commands.len(), written.commands.len());
        for (r, w) in read.commands.iter().zip(&written.commands) {
            let as_read = (
                &r.name,
                &r.summary,
                r.read_only,
                r.destructive,
                r.requires_confirm,
                r.unbounded,
                r.bounded,
                r.supports_cursor,
                r.supports_dry_run,
                r.supports_idempotency_key,
                &r.input_modes,
                &r.input_default,
            );
            let as_written = (
                &w.name,
                &w.summary,
                w.read_only,
                w.destructive,
                w.requires_confirm,
                w.unbounded,
                w.bounded,
                w.supports_cursor,
                w.supports_dry_run,
                w.supports_idempotency_key,
                &w.input_modes,
                &w.input_default,
            );
            assert_eq!(as_read, as_written, "{}", w.name);
            assert_eq!(r.additive, w.additive, "{}", w.name);
        }
    }
}
