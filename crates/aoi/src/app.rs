//! [`App`]: a tool's identity, schema versions, event schema and command statements in one
//! place, and the plumbing every command shares: parsing with machine-mode usage errors (§16.1),
//! schema-version negotiation (§5), the discovery subcommands (§3, §16.2, §17), and running a
//! command under the [`Harness`].
//!
//! ```no_run
//! use std::process::ExitCode;
//! use clap::{Parser, Subcommand};
//! use aoi::app::{App, Discovery};
//! use aoi::discover::capabilities::CommandSpec;
//! use aoi::surface::flags::{GlobalArgs, PageArgs};
//! use aoi::Outcome;
//!
//! #[derive(Parser)]
//! #[command(name = "notes", version)]
//! struct Cli {
//!     #[command(flatten)]
//!     aoi: GlobalArgs,
//!     #[command(subcommand)]
//!     command: Command,
//! }
//!
//! #[derive(Subcommand)]
//! enum Command {
//!     /// Ranked search.
//!     Search { query: String, #[command(flatten)] page: PageArgs },
//!     #[command(flatten)]
//!     Discovery(Discovery),
//! }
//!
//! fn main() -> ExitCode {
//!     let app = App::new("notes", env!("CARGO_PKG_VERSION"), "com.example.notes.events")
//!         .command(CommandSpec::new("search").read_only().events(["hit"]));
//!     let cli: Cli = match app.parse() {
//!         Ok(cli) => cli,
//!         Err(code) => return code,
//!     };
//!     match cli.command {
//!         Command::Discovery(d) => app.discover::<Cli>(&cli.aoi, &d),
//!         Command::Search { query, page } => app.run(&cli.aoi, "search", |out| {
//!             let _ = (query, page, out);
//!             Ok(Outcome::success())
//!         }),
//!     }
//! }
//! ```

use std::ffi::OsString;
use std::io::{self, IsTerminal, Stderr, Stdout, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::Value;

use crate::discover::capabilities::{command_input_schema, manifest, CommandSpec};
use crate::discover::schema::{framework_schema, SchemaError};
use crate::emit::{Emitter, EmitterBuilder, Harness, RunResult};
use crate::surface::flags::{GlobalArgs, OutputMode};
use crate::surface::human::{HumanHook, HumanRenderer};
use crate::surface::redact::{args_fingerprint, Redactor};
use crate::wire::{exit_code, Category, Code, ErrorEvent, Identity, FRAMEWORK_TYPES};
use crate::Outcome;

type SchemaFn = dyn Fn(&Identity) -> Result<Value, SchemaError>;

use crate::discover::manifest::DISCOVERY_COMMANDS;

/// The discovery subcommands (§16.2), for a tool to flatten into its own subcommands.
///
/// Each prints one JSON document, newline-terminated: one compact line with `--output jsonl`
/// (§2: every line of a JSONL stdout is one complete JSON object), pretty otherwise
/// (`--output json` is a single document, §17). None needs credentials, network or
/// configuration, and none changes anything.
#[derive(Debug, Clone, Subcommand)]
pub enum Discovery {
    /// Print the JSON Schema of this tool's events (credential-free, network-free).
    Schema {
        /// Only this schema name (see `capabilities`).
        #[arg(long)]
        name: Option<String>,
    },
    /// Print the strict JSON Schema of a command's inputs (flags and operands).
    InputSchema {
        /// The command, e.g. `search` or `"auth login"`.
        #[arg(long)]
        command: String,
    },
    /// Print the capability manifest: commands, flags, events, schema versions, examples.
    Capabilities,
}

/// Bounds of one run: `--timeout` and `--max-bytes` (§15, §16.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// End the run after this long.
    pub timeout: Option<Duration>,
    /// Stop domain events before the stream passes this many bytes.
    pub max_bytes: Option<u64>,
}

impl Limits {
    /// The `--max-bytes` bound of a paged command.
    pub fn for_page<D: crate::surface::flags::PageDefaults>(
        page: &crate::surface::flags::PageArgs<D>,
    ) -> Limits {
        Limits {
            max_bytes: page.max_bytes,
            ..Limits::default()
        }
    }
}

/// A tool's description and shared plumbing. See the [module docs](self).
pub struct App {
    tool: String,
    tool_version: String,
    schema_name: String,
    versions: Vec<String>,
    default_version: String,
    schema: Box<SchemaFn>,
    specs: Vec<CommandSpec>,
    grace: Duration,
    echo_args: bool,
    /// Commands' own human rendering of their events ([`App::human`]).
    human_hooks: Vec<(String, HumanHook)>,
    /// Flags the parser's clap definition marks secret, learnt by [`App::parse`].
    secret_flags: std::sync::OnceLock<Vec<String>>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("tool", &self.tool)
            .field("schema_name", &self.schema_name)
            .field("versions", &self.versions)
            .finish_non_exhaustive()
    }
}

impl App {
    /// A tool speaking schema `schema_name` version `1.0.0`, whose schema has only framework
    /// events until [`App::event_schema`] says otherwise.
    pub fn new(
        tool: impl Into<String>,
        tool_version: impl Into<String>,
        schema_name: impl Into<String>,
    ) -> App {
        App {
            tool: tool.into(),
            tool_version: tool_version.into(),
            schema_name: schema_name.into(),
            versions: vec!["1.0.0".to_owned()],
            default_version: "1.0.0".to_owned(),
            schema: Box::new(|_| Ok(framework_schema())),
            specs: Vec::new(),
            grace: Duration::from_millis(1500),
            echo_args: false,
            human_hooks: Vec::new(),
            secret_flags: std::sync::OnceLock::new(),
        }
    }

    /// The schema versions served (§5.1) and the default one.
    pub fn schema_versions<I, S>(mut self, versions: I, default: &str) -> App
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.versions = versions.into_iter().map(Into::into).collect();
        self.default_version = default.to_owned();
        self
    }

    /// How to build the event schema for a negotiated identity (its `schema_version` says which).
    pub fn event_schema(
        mut self,
        build: impl Fn(&Identity) -> Result<Value, SchemaError> + 'static,
    ) -> App {
        self.schema = Box::new(build);
        self
    }

    /// States one command's behaviour for `capabilities`. The command must exist in the clap
    /// definition and the event types it names in the event schema: a statement that names
    /// neither is an error at start-up ([`App::check`]), never a silent fallback.
    ///
    /// The discovery subcommands ([`Discovery`]) need no statement: the SDK states each as
    /// read-only with itself as its example (`input-schema --command` the first command
    /// stated). State one only to say something else of it.
    pub fn command(mut self, spec: CommandSpec) -> App {
        self.specs.push(spec);
        self
    }

    /// Echoes the arguments in `aoi:meta.args`, redacted per §11 (sensitive flags, URL
    /// credentials and signature keys, headers, `KEY=VALUE`, and the values of sensitive
    /// environment variables). Off by default: the caller already knows what it passed.
    pub fn echo_args(mut self, on: bool) -> App {
        self.echo_args = on;
        self
    }

    /// How long a cancelled command has to reach a safe point (see [`Harness::grace`]).
    pub fn grace(mut self, grace: Duration) -> App {
        self.grace = grace;
        self
    }

    /// The tool's identity at its default schema version.
    pub fn identity(&self) -> Identity {
        self.identity_at(&self.default_version)
    }

    fn identity_at(&self, version: &str) -> Identity {
        Identity::new(&self.tool, &self.tool_version, &self.schema_name, version)
    }

    /// Parses the process arguments with `C`. `--help` and `--version` print and return exit 0;
    /// a usage error exits 64, reported in machine mode as a complete stream with a `usage`
    /// `aoi:error` (§16.1) whose `hint` carries clap's suggestion and whose `aoi:meta.command`
    /// names the subcommand the arguments named (see `command_named`), in human mode by clap
    /// on stderr.
    pub fn parse<C: Parser>(&self) -> Result<C, ExitCode> {
        self.parse_from(std::env::args_os())
    }

    /// [`App::parse`] from given arguments (the first is the program name).
    pub fn parse_from<C, I, T>(&self, args: I) -> Result<C, ExitCode>
    where
        C: Parser,
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let root = C::command();
        // The unbuilt definition first: cheap, and enough unless subcommands are deferred
        // (`#[command(defer = true)]`), whose nesting and flags appear only once built.
        if self.commands_problem(&root).is_some() {
            if let Some(error) = self.commands_problem(&built(&root)) {
                // A tool whose statements name no command of its own is broken, whatever was
                // asked.
                return Err(if machine_requested(&args) {
                    ExitCode::from(error_stream(Emitter::builder(self.identity()), &error))
                } else {
                    human_error(&error, crate::surface::color::env_allows())
                });
            }
        }
        let mut root = self.taught(root);
        let parsed = root
            .try_get_matches_from_mut(&args)
            .and_then(|matches| C::from_arg_matches(&matches));
        // After parsing, every command on the path the arguments took is built, deferred or
        // not, and those are the flags this run's argv can hold.
        let _ = self.secret_flags.set(secret_flags(&root));
        parsed.map_err(|e| {
            use clap::error::ErrorKind;
            match e.kind() {
                // §6: help that could not be written is not a success; a reader that went
                // away (`tool --help | head -n 3`) is.
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => match e.print() {
                    Err(lost) if lost.kind() != io::ErrorKind::BrokenPipe => {
                        let _ = writeln!(io::stderr(), "error: writing to stdout failed: {lost}");
                        ExitCode::from(exit_code::IO_ERR)
                    }
                    _ => ExitCode::SUCCESS,
                },
                _ if machine_requested(&args) => {
                    let mut builder = Emitter::builder(self.identity());
                    if let Some(command) = command_named(&C::command(), &args) {
                        builder = builder.command(command);
                    }
                    ExitCode::from(usage_error_stream(builder, &e))
                }
                _ => {
                    let _ = e.print();
                    ExitCode::from(exit_code::USAGE)
                }
            }
        })
    }

    /// The tool's statements, and for each discovery subcommand its definition has and no
    /// statement names, the SDK's own: read-only, with itself as its example
    /// (`input-schema --command FIRST`, the first command stated). A tool states its
    /// discovery commands itself only to say something else of them.
    fn stated(&self, root: &clap::Command) -> Vec<CommandSpec> {
        let mut specs = self.specs.clone();
        let first = self
            .specs
            .iter()
            .map(CommandSpec::name)
            .find(|name| !DISCOVERY_COMMANDS.contains(name))
            .map(str::to_owned);
        for name in DISCOVERY_COMMANDS {
            if root.find_subcommand(name).is_none() || self.specs.iter().any(|s| s.name() == name) {
                continue;
            }
            let spec = CommandSpec::new(name).read_only();
            specs.push(match (name, &first) {
                ("input-schema", Some(first)) => {
                    spec.example(["input-schema", "--command", first.as_str()])
                }
                ("input-schema", None) => spec,
                _ => spec.example([name]),
            });
        }
        specs
    }

    /// `root` with each command's examples (its [`CommandSpec`]s) at the end of its help, so
    /// `--help` and `capabilities` show the same ones and cannot drift apart.
    fn taught(&self, mut root: clap::Command) -> clap::Command {
        for spec in &self.stated(&root) {
            if spec.examples().is_empty() {
                continue;
            }
            let lines: Vec<String> = spec
                .examples()
                .iter()
                .map(|argv| {
                    let words: Vec<_> = argv
                        .iter()
                        .map(|w| crate::surface::term::shell_word(w))
                        .collect();
                    format!("  {} {}", self.tool, words.join(" "))
                })
                .collect();
            let lines = lines.join("\n");
            let path: Vec<&str> = spec.name().split(' ').collect();
            root = with_subcommand(root, &path, |cmd| {
                // A command's own after-help (exit statuses, pipelines) stays: these examples
                // lead its own `Examples:` block, or follow it in one of their own.
                let own = cmd.get_after_help().map(ToString::to_string);
                let help = match own {
                    Some(own) => match own.split_once("Examples:\n") {
                        Some((before, after)) => format!("{before}Examples:\n{lines}\n{after}"),
                        None => format!("{own}\n\nExamples:\n{lines}"),
                    },
                    None => format!("Examples:\n{lines}"),
                };
                cmd.after_help(help)
            });
        }
        root
    }

    /// Checks the tool's statements against its clap definition `C` and its event schema: every
    /// [`CommandSpec`] names a leaf command, every event type it lists is a framework type
    /// or a domain type the schema registers, and a command that declares an input record
    /// takes `--input-jsonl` or `--input-json`. Tools call it in a test; [`App::parse`] checks
    /// the commands at every start, and `capabilities` checks all three.
    pub fn check<C: CommandFactory>(&self) -> Result<(), ErrorEvent> {
        let root = built(&C::command());
        match self
            .commands_problem(&root)
            .or_else(|| self.records_problem(&root))
        {
            Some(error) => Err(error),
            None => self.event_types_problem().map_or(Ok(()), Err),
        }
    }

    /// A [`CommandSpec`] declaring an input record for a command that reads no input.
    fn records_problem(&self, root: &clap::Command) -> Option<ErrorEvent> {
        let reads_input = |path: &str| {
            crate::discover::input_schema::find_command(root, path).is_some_and(|cmd| {
                cmd.get_arguments()
                    .any(|a| matches!(a.get_long(), Some("input-jsonl" | "input-json")))
            })
        };
        let spec = self
            .specs
            .iter()
            .find(|s| s.has_record() && !reads_input(s.name()))?;
        Some(ErrorEvent::new(
            Category::Internal,
            Code::from_static("COMMAND_SPEC_RECORD"),
            format!(
                "{} declares an input record for `{}`, which takes neither --input-jsonl nor \
                 --input-json",
                self.tool,
                spec.name()
            ),
        ))
    }

    /// A [`CommandSpec`] naming no leaf command of `root`.
    ///
    /// It runs at every start, so it walks the unbuilt definition by canonical names (no clone,
    /// no build); the list of commands is made only for the error.
    fn commands_problem(&self, root: &clap::Command) -> Option<ErrorEvent> {
        let is_leaf = |path: &str| {
            let mut cmd = root;
            for part in path.split_whitespace() {
                match cmd.get_subcommands().find(|c| c.get_name() == part) {
                    Some(sub) if !sub.is_hide_set() => cmd = sub,
                    _ => return false,
                }
            }
            !std::ptr::eq(cmd, root) && !cmd.has_subcommands()
        };
        let unknown = self.specs.iter().find(|s| !is_leaf(s.name()))?;
        let paths = crate::discover::input_schema::command_paths(root);
        Some(ErrorEvent::new(
            Category::Internal,
            Code::from_static("COMMAND_SPEC_UNKNOWN"),
            format!(
                "{} states the behaviour of `{}`, which is not one of its commands ({})",
                self.tool,
                unknown.name(),
                paths.join(", ")
            ),
        ))
    }

    /// An event type a [`CommandSpec`] lists that the event schema does not register.
    fn event_types_problem(&self) -> Option<ErrorEvent> {
        let schema = match (self.schema)(&self.identity()) {
            Ok(schema) => schema,
            Err(e) => return Some(schema_build_failed(&e)),
        };
        let known = crate::discover::schema::event_types(&schema);
        self.specs.iter().find_map(|spec| {
            let ty = spec.event_types().iter().find(|ty| {
                !known.contains(ty.as_str()) && !FRAMEWORK_TYPES.contains(&ty.as_str())
            })?;
            Some(ErrorEvent::new(
                Category::Internal,
                Code::from_static("EVENT_TYPE_UNKNOWN"),
                format!(
                    "{} says `{}` emits `{ty}`, which its event schema does not define",
                    self.tool,
                    spec.name()
                ),
            ))
        })
    }

    /// Picks the schema version for `--schema-version` (§5.1): an exact version, or a major
    /// (`2`) or major.minor (`2.1`) prefix meaning the highest version that matches.
    pub fn negotiate(&self, requested: Option<&str>) -> Result<Identity, ErrorEvent> {
        let Some(requested) = requested else {
            return Ok(self.identity());
        };
        let requested = requested.trim_start_matches('v');
        let best = self
            .versions
            .iter()
            .filter(|v| {
                *v == requested
                    || v.strip_prefix(requested)
                        .is_some_and(|rest| rest.starts_with('.'))
            })
            .max_by(|a, b| version_key(a).cmp(&version_key(b)));
        match best {
            Some(v) => Ok(self.identity_at(v)),
            None => Err(ErrorEvent::new(
                Category::Unsupported,
                Code::from_static("SCHEMA_VERSION_UNSUPPORTED"),
                format!(
                    "schema version {requested:?} is not served; this {} serves {}",
                    self.tool,
                    self.versions.join(", ")
                ),
            )
            .field("schema_version")
            .hint(format!("--schema-version {}", self.default_version))),
        }
    }

    fn emitter(&self, command: &str) -> EmitterBuilder {
        Emitter::builder(self.identity()).command(command)
    }

    /// Renders `command`'s events of a type its own way in human mode: `hook` returns the
    /// lines for an event, or `None` for the default (a table or `key: value` lines, see
    /// [`human`](crate::surface::human)).
    pub fn human(
        mut self,
        command: &str,
        hook: impl Fn(&str, &serde_json::Map<String, serde_json::Value>) -> Option<String>
            + Send
            + Sync
            + 'static,
    ) -> App {
        self.human_hooks
            .push((command.to_owned(), std::sync::Arc::new(hook)));
        self
    }

    /// Runs a command's body under the [`Harness`], after negotiating the schema version, in
    /// either mode: the body writes events; in human mode they are shown to a person
    /// ([`human`](crate::surface::human)), with the exit status machine mode gives.
    pub fn run<F>(&self, global: &GlobalArgs, command: &str, body: F) -> ExitCode
    where
        F: FnOnce(&mut Emitter<Out>) -> RunResult,
    {
        self.run_with(global, command, Limits::default(), body)
    }

    /// Where a command's events go: stdout as JSONL, or a renderer for a person.
    fn out(&self, global: &GlobalArgs, command: &str) -> Out {
        if global.machine() {
            return Out::Machine(io::stdout());
        }
        let argv = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let paint = |tty: &dyn Fn() -> bool| {
            crate::surface::color::Paint::new(global.color_allowed() && tty())
        };
        let hook = self
            .human_hooks
            .iter()
            .find(|(c, _)| c == command)
            .map(|(_, h)| h.clone());
        Out::Human(Box::new(
            HumanRenderer::new(
                io::stdout(),
                io::stderr(),
                paint(&|| io::stdout().is_terminal()),
                paint(&|| io::stderr().is_terminal()),
                argv,
            )
            .hook(hook),
        ))
    }

    /// [`App::run`] within `limits`: `--timeout` ends the run with `reason:"timeout"` (exit
    /// 124); `--max-bytes` stops domain events at the bound and the summary says `truncated`.
    pub fn run_with<F>(
        &self,
        global: &GlobalArgs,
        command: &str,
        limits: Limits,
        body: F,
    ) -> ExitCode
    where
        F: FnOnce(&mut Emitter<Out>) -> RunResult,
    {
        let out = self.out(global, command);
        match self.negotiate(global.schema_version.as_deref()) {
            Ok(identity) => {
                let argv: Vec<String> = std::env::args_os()
                    .skip(1)
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                let redacted = self.redactor().redact_args(&argv);
                let builder = Emitter::builder(identity)
                    .command(command)
                    .input_fingerprint(args_fingerprint(&redacted.args))
                    .max_bytes(limits.max_bytes);
                let builder = if self.echo_args {
                    builder.args(Some(redacted.args), redacted.redacted)
                } else {
                    builder.args(None, true)
                };
                Harness::new(builder)
                    .grace(self.grace)
                    .timeout(limits.timeout)
                    .run_on(out, body)
            }
            Err(error) => Harness::new(self.emitter(command)).run_on(out, |_| Err(error.into())),
        }
    }

    /// The structured input of `command` (§10, §12): what `--input-jsonl`/`--input-json`
    /// name, read in the mode the flags select or else the one its
    /// [`CommandSpec::input_default`] documents (fail-fast when it states none), each record
    /// checked against the schema its [`CommandSpec::record`] publishes, so that what a
    /// consumer was told is what the command takes (with the `validate` feature).
    pub fn input(
        &self,
        command: &str,
        args: &crate::surface::flags::InputArgs,
    ) -> Result<crate::surface::input::Input<Box<dyn io::Read>>, crate::emit::Failure> {
        use crate::surface::flags::InputMode;
        let spec = self.specs.iter().find(|s| s.name() == command);
        let default = spec
            .and_then(CommandSpec::input_default_mode)
            .unwrap_or(InputMode::FailFast);
        let input = crate::surface::input::Input::open(args, default)?;
        // Built without the `validate` feature, the SDK has no validator: records are
        // checked only by what the tool decodes them into (`Input::next_as`).
        #[cfg(feature = "validate")]
        if let Some(schema) = spec.and_then(CommandSpec::record_schema) {
            return Ok(input.validate_with(&schema)?);
        }
        Ok(input)
    }

    /// Answers a discovery subcommand: prints one JSON document on stdout, as one compact line
    /// with `--output jsonl` (§2) and pretty otherwise (§17).
    ///
    /// `C` is the tool's parser, whose clap definition is the source of input schemas and
    /// capabilities.
    pub fn discover<C: CommandFactory>(&self, global: &GlobalArgs, which: &Discovery) -> ExitCode {
        // §6: a document that cannot be written is not a success (fd 1 closed: `tool >&-`).
        if let Some(code) = crate::emit::refuse_closed_stdout() {
            return ExitCode::from(code);
        }
        let document = self.discovery_document(&C::command(), global, which);
        match document {
            Ok(value) => {
                let text = if global.output == OutputMode::Human && io::stdout().is_terminal() {
                    // A person at a terminal reads a summary; a pipe or a file gets the JSON.
                    discovery_summary(&value, which, &self.tool)
                } else {
                    discovery_text(&value, global.output)
                };
                match io::stdout().write_all(text.as_bytes()) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                        ExitCode::from(exit_code::SIGPIPE)
                    }
                    // As the harness does: one line on stderr, the only place left to say it.
                    Err(e) => {
                        let _ = writeln!(io::stderr(), "error: writing to stdout failed: {e}");
                        ExitCode::from(exit_code::IO_ERR)
                    }
                }
            }
            Err(error) if global.machine() => {
                let command = match which {
                    Discovery::Schema { .. } => "schema",
                    Discovery::InputSchema { .. } => "input-schema",
                    Discovery::Capabilities => "capabilities",
                };
                Harness::new(self.emitter(command)).run(|_| Err(error.into()))
            }
            Err(error) => human_error(&error, global.color_allowed()),
        }
    }

    /// The discovery document for `which`, from the clap definition `root` (built or not).
    pub fn discovery_document(
        &self,
        root: &clap::Command,
        global: &GlobalArgs,
        which: &Discovery,
    ) -> Result<Value, ErrorEvent> {
        let root = &built(root);
        match which {
            Discovery::Schema { name } => {
                if let Some(name) = name {
                    if *name != self.schema_name {
                        return Err(ErrorEvent::new(
                            Category::NotFound,
                            Code::from_static("SCHEMA_NOT_FOUND"),
                            format!(
                                "no schema named {name:?}; this tool serves {}",
                                self.schema_name
                            ),
                        )
                        .field("name"));
                    }
                }
                let identity = self.negotiate(global.schema_version.as_deref())?;
                (self.schema)(&identity).map_err(|e| schema_build_failed(&e))
            }
            Discovery::InputSchema { command } => {
                let spec = self.specs.iter().find(|s| s.name() == command);
                command_input_schema(root, command, spec).map_err(|e| {
                    ErrorEvent::new(
                        Category::Usage,
                        Code::from_static("UNKNOWN_COMMAND"),
                        format!("{e}: see `{} capabilities`", self.tool),
                    )
                    .field("command")
                })
            }
            Discovery::Capabilities => {
                if let Some(error) = self
                    .commands_problem(root)
                    .or_else(|| self.records_problem(root))
                    .or_else(|| self.event_types_problem())
                {
                    return Err(error);
                }
                let m = manifest(
                    root,
                    &self.stated(root),
                    &self.identity(),
                    &self.schema_name,
                    &self.versions,
                    &self.default_version,
                );
                serde_json::to_value(m).map_err(|e| {
                    ErrorEvent::new(
                        Category::Internal,
                        Code::from_static("MANIFEST_FAILED"),
                        e.to_string(),
                    )
                })
            }
        }
    }

    /// A redactor that knows this tool's secret flags (from its clap definition, once
    /// [`App::parse`] ran) and the values of sensitive environment variables (§11).
    pub fn redactor(&self) -> Redactor {
        Redactor::from_env().secret_flags(self.secret_flags.get().into_iter().flatten())
    }

    /// Writes one debug line to stderr when `--debug` is on, with secrets redacted (§11).
    pub fn debug(&self, global: &GlobalArgs, redactor: &Redactor, message: &str) {
        if global.debug {
            let _ = writeln!(io::stderr(), "debug: {}", redactor.scrub(message));
        }
    }
}

/// `root` built, deferred subcommands (`#[command(defer = true)]`) included, so that every
/// command and flag is in it.
fn built(root: &clap::Command) -> clap::Command {
    let mut built = root.clone();
    built.build();
    built
}

/// Every flag spelling of every argument the clap definition marks secret, in the commands
/// built so far.
fn secret_flags(root: &clap::Command) -> Vec<String> {
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if crate::discover::input_schema::is_secret(arg) {
                out.extend(arg.get_long().map(|l| format!("--{l}")));
                out.extend(arg.get_short().map(|s| format!("-{s}")));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    out.dedup();
    out
}

/// A discovery document as printed: §2 makes every line of a JSONL stdout one complete JSON
/// object, so `--output jsonl` gets one compact line; `--output json` is one document (§17)
/// and human mode is read by people, so both stay pretty. Always newline-terminated.
/// A discovery document as a person reads it at a terminal: for `capabilities`, each command
/// with what it may do and its description, then the examples; for `schema`, each event type
/// with its required fields; for `input-schema`, each argument with its flag and type. The
/// JSON is one `--output json` away (said on the last line). Data is made printable.
fn discovery_summary(document: &Value, which: &Discovery, tool: &str) -> String {
    use crate::surface::term::{pad, printable_line, width};
    let text = |v: &Value| printable_line(v.as_str().unwrap_or_default()).into_owned();
    let table = |rows: Vec<[String; 3]>| -> String {
        let w0 = rows.iter().map(|r| width(&r[0])).max().unwrap_or(0);
        let w1 = rows.iter().map(|r| width(&r[1])).max().unwrap_or(0);
        rows.iter()
            .map(|r| {
                format!("  {}  {}  {}", pad(&r[0], w0), pad(&r[1], w1), r[2])
                    .trim_end()
                    .to_owned()
                    + "\n"
            })
            .collect()
    };
    let mut out = String::new();
    match which {
        Discovery::Capabilities => {
            out.push_str(&format!(
                "{} {}: {} commands\n\n",
                text(&document["tool"]),
                text(&document["tool_version"]),
                document["commands"].as_array().map_or(0, Vec::len)
            ));
            let mut rows = Vec::new();
            let mut examples = Vec::new();
            for c in document["commands"].as_array().into_iter().flatten() {
                let kind = if c["read_only"] == true {
                    "read-only"
                } else if c["destructive"] == true {
                    "destructive"
                } else if c["additive"] == true {
                    "additive"
                } else {
                    "writes"
                };
                let what = c["input_schema"]["description"].clone();
                rows.push([text(&c["name"]), kind.to_owned(), text(&what)]);
                for e in c["examples"].as_array().into_iter().flatten() {
                    let words: Vec<String> = e
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|w| printable_line(w.as_str().unwrap_or_default()).into_owned())
                        .map(|w| crate::surface::term::shell_word(&w).into_owned())
                        .collect();
                    examples.push(format!("  {tool} {}\n", words.join(" ")));
                }
            }
            out.push_str(&table(rows));
            if !examples.is_empty() {
                out.push_str("\nExamples:\n");
                out.extend(examples);
            }
            out.push_str(&format!(
                "\nThe whole manifest: {tool} capabilities --output json\n"
            ));
        }
        Discovery::Schema { .. } => {
            let defs = document["$defs"].as_object();
            let events: Vec<(&String, &Value)> = defs
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.starts_with("event."))
                .collect();
            out.push_str(&format!(
                "{} {}: {} event types, and the aoi: framework events\n\n",
                text(&document["x-aoi"]["schema_name"]),
                text(&document["x-aoi"]["schema_version"]),
                events.len()
            ));
            let rows = events
                .iter()
                .map(|(k, v)| {
                    let required: Vec<String> = v["required"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .filter(|f| *f != "type")
                        .map(str::to_owned)
                        .collect();
                    let about = v["description"].as_str().unwrap_or_default();
                    [
                        printable_line(k.trim_start_matches("event.")).into_owned(),
                        required.join(", "),
                        printable_line(about.lines().next().unwrap_or_default()).into_owned(),
                    ]
                })
                .collect();
            out.push_str(&table(rows));
            out.push_str(&format!("\nThe JSON Schema: {tool} schema --output json\n"));
        }
        Discovery::InputSchema { command } => {
            out.push_str(&format!(
                "{tool} {}: {}\n\n",
                printable_line(command),
                text(&document["description"])
            ));
            let flags = &document["x-aoi"]["flags"];
            let rows = document["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, p)| {
                    let flag = flags[name]
                        .as_str()
                        .map_or_else(|| format!("<{name}>"), str::to_owned);
                    let kind = p["type"].as_str().unwrap_or("value").to_owned();
                    [
                        printable_line(&flag).into_owned(),
                        kind,
                        text(&p["description"]),
                    ]
                })
                .collect();
            out.push_str(&table(rows));
            out.push_str(&format!(
                "\nThe JSON Schema: {tool} input-schema --command {} --output json\n",
                printable_line(command)
            ));
        }
    }
    out
}

fn discovery_text(document: &Value, output: OutputMode) -> String {
    let mut text = match output {
        OutputMode::Jsonl => serde_json::to_string(document),
        OutputMode::Json | OutputMode::Human => serde_json::to_string_pretty(document),
    }
    .unwrap_or_default();
    text.push('\n');
    text
}

fn version_key(v: &str) -> Vec<u64> {
    v.split(['.', '-'])
        .map(|p| p.parse::<u64>().unwrap_or(0))
        .collect()
}

/// `root` with `edit` applied to the subcommand at `path` (unchanged when there is none).
fn with_subcommand(
    root: clap::Command,
    path: &[&str],
    edit: impl FnOnce(clap::Command) -> clap::Command,
) -> clap::Command {
    let Some((first, rest)) = path.split_first() else {
        return edit(root);
    };
    if root.find_subcommand(first).is_none() {
        return root;
    }
    root.mut_subcommand(*first, |sub| with_subcommand(sub, rest, edit))
}

/// True when the raw arguments ask for machine mode (`--output jsonl`, `--format=json`, ...),
/// looked at before clap so that even a usage error is reported as events.
pub(crate) fn machine_requested(args: &[OsString]) -> bool {
    let mut previous_is_flag = false;
    for arg in args {
        let arg = arg.to_string_lossy();
        if previous_is_flag && matches!(arg.as_ref(), "jsonl" | "json") {
            return true;
        }
        for flag in ["--output=", "--format="] {
            if let Some(value) = arg.strip_prefix(flag) {
                if matches!(value, "jsonl" | "json") {
                    return true;
                }
            }
        }
        previous_is_flag = arg == "--output" || arg == "--format";
    }
    false
}

/// The subcommand path the raw arguments name (`"search"`, `"auth login"`), read against the
/// clap definition `root` without parsing them, so that a usage error's `aoi:meta.command`
/// names the command it is about (§8.3). `args[0]` is the program name; flags are skipped with
/// their values, and the walk stops at `--` or at the first word that is not a subcommand of
/// the one reached. `None` when the arguments name no subcommand (`tool serach`, `tool --bad`).
pub(crate) fn command_named(root: &clap::Command, args: &[OsString]) -> Option<String> {
    use crate::discover::input_schema::takes_value;
    let mut root = root.clone();
    // Propagates global flags into every subcommand, so each knows all the flags it accepts.
    root.build();
    let mut current = &root;
    let mut path: Vec<&str> = Vec::new();
    let mut words = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let takes = !long.contains('=')
                && current.get_arguments().any(|a| {
                    takes_value(a)
                        && (a.get_long() == Some(long)
                            || a.get_all_aliases().is_some_and(|v| v.contains(&long)))
                });
            if takes {
                words.next();
            }
            continue;
        }
        if let Some(shorts) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
            // A cluster (`-qv`), where the first short taking a value takes the rest of the
            // word, or the next word when it ends the cluster (`-n5`, `-n 5`).
            let shorts: Vec<char> = shorts.chars().collect();
            let valued = shorts.iter().position(|c| {
                current.get_arguments().any(|a| {
                    takes_value(a)
                        && (a.get_short() == Some(*c)
                            || a.get_all_short_aliases().is_some_and(|v| v.contains(c)))
                })
            });
            if valued == Some(shorts.len() - 1) {
                words.next();
            }
            continue;
        }
        match current.find_subcommand(word.as_ref()) {
            Some(sub) => {
                path.push(sub.get_name());
                current = sub;
            }
            None => break,
        }
    }
    (!path.is_empty()).then(|| path.join(" "))
}

/// Reports a clap usage error as a complete stream (meta, a `usage` error, a failed summary) on
/// stdout; returns 64.
///
/// The message is clap's first paragraph on one line (`the following required arguments were
/// not provided: <QUERY>`); clap's suggestions (`a similar argument exists: '--limit'`, and its
/// other tips) become the `hint`, one line, informational only (§1.3, §9.1), else `--help`.
pub(crate) fn usage_error_stream(builder: EmitterBuilder, error: &clap::Error) -> u8 {
    error_stream(builder, &usage_error(error))
}

/// The `usage` `aoi:error` for a clap parse error (see [`usage_error_stream`]).
fn usage_error(error: &clap::Error) -> ErrorEvent {
    let rendered = error.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let message = match message.join(" ") {
        m if m.is_empty() => "invalid usage".to_owned(),
        m => m.trim_start_matches("error: ").to_owned(),
    };
    let tips: Vec<&str> = rendered
        .lines()
        .filter_map(|l| l.trim().strip_prefix("tip:"))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let error = ErrorEvent::usage(message);
    if tips.is_empty() {
        error
    } else {
        error.hint(tips.join("; "))
    }
}

/// The error of a schema the tool could not build.
fn schema_build_failed(e: &SchemaError) -> ErrorEvent {
    ErrorEvent::new(
        Category::Internal,
        Code::from_static("SCHEMA_BUILD_FAILED"),
        e.to_string(),
    )
}

/// Writes a complete stream holding `event` and a failed summary; returns the exit code.
fn error_stream(builder: EmitterBuilder, event: &ErrorEvent) -> u8 {
    let code = builder
        .start(io::stdout())
        .and_then(|mut out| {
            out.error(event)?;
            out.finish(Outcome::failed())
        })
        .map(|f| f.exit_code);
    match code {
        Ok(code) => code,
        Err(e) if e.is_broken_pipe() => exit_code::SIGPIPE,
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: {e}");
            exit_code::IO_ERR
        }
    }
}

/// The writer a command's events go to (see [`App::run`]): stdout, or a
/// [`HumanRenderer`] in front of stdout and stderr.
pub enum Out {
    /// Machine mode: the JSONL stream on stdout.
    Machine(Stdout),
    /// Human mode: the stream read back and shown to a person.
    Human(Box<HumanRenderer<Stdout, Stderr>>),
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Out::Machine(_) => "Out::Machine",
            Out::Human(_) => "Out::Human",
        })
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Machine(out) => out.write(buf),
            Out::Human(out) => out.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Machine(out) => out.write_all(buf),
            Out::Human(out) => out.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Machine(out) => out.flush(),
            Out::Human(out) => out.flush(),
        }
    }
}

/// Prints an error for a person on stderr (`error: …` and its hint) and returns its exit code.
pub fn human_error(error: &ErrorEvent, color: bool) -> ExitCode {
    let label =
        crate::surface::color::Paint::new(color && io::stderr().is_terminal()).bad("error:");
    // A message may quote data (a path, a title, another program's words): shown, never obeyed.
    use crate::surface::term::printable_line;
    let mut text = format!("{label} {}\n", printable_line(&error.message));
    if let Some(hint) = &error.hint {
        text.push_str(&format!("  hint: {}\n", printable_line(hint)));
    }
    let _ = io::stderr().write_all(text.as_bytes());
    ExitCode::from(error.category.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> App {
        App::new("notes", "2.1.0", "com.example.notes.events")
            .schema_versions(["1.0.0", "1.2.0", "2.0.0"], "2.0.0")
    }

    #[test]
    fn negotiation_picks_exact_versions_and_the_highest_match_of_a_prefix() {
        let a = app();
        assert_eq!(a.negotiate(None).unwrap().schema_version, "2.0.0");
        assert_eq!(a.negotiate(Some("1")).unwrap().schema_version, "1.2.0");
        assert_eq!(a.negotiate(Some("1.0")).unwrap().schema_version, "1.0.0");
        assert_eq!(a.negotiate(Some("v2")).unwrap().schema_version, "2.0.0");
        assert_eq!(a.negotiate(Some("1.0.0")).unwrap().schema_version, "1.0.0");
        let e = a.negotiate(Some("3")).unwrap_err();
        assert_eq!(e.category, Category::Unsupported);
        assert_eq!(e.code.as_str(), "SCHEMA_VERSION_UNSUPPORTED");
        assert!(e.message.contains("1.0.0, 1.2.0, 2.0.0"));
        assert!(a.negotiate(Some("1.")).is_err());
        assert!(
            a.negotiate(Some("10")).is_err(),
            "10 is not a prefix of 1.x at a dot"
        );
    }

    #[test]
    fn the_sdk_states_the_discovery_commands_a_tool_did_not() {
        let root = clap::Command::new("notes")
            .subcommand(clap::Command::new("search"))
            .subcommand(clap::Command::new("schema"))
            .subcommand(clap::Command::new("input-schema"))
            .subcommand(clap::Command::new("capabilities"));
        let a = app()
            .command(CommandSpec::new("search").read_only())
            .command(
                CommandSpec::new("schema")
                    .read_only()
                    .example(["schema", "--name", "x"]),
            );
        let stated = a.stated(&root);
        let find = |name: &str| stated.iter().find(|s| s.name() == name).cloned();
        // The tool's own statement stands.
        assert_eq!(
            find("schema").map(|s| s.examples().to_vec()),
            Some(vec![vec![
                "schema".to_owned(),
                "--name".to_owned(),
                "x".to_owned()
            ]])
        );
        let input = find("input-schema").expect("stated by the SDK");
        assert_eq!(input.examples(), [["input-schema", "--command", "search"]]);
        assert_eq!(
            find("capabilities").map(|s| s.examples().to_vec()),
            Some(vec![vec!["capabilities".to_owned()]])
        );
        // A command the definition lacks is not stated.
        let bare = clap::Command::new("notes").subcommand(clap::Command::new("search"));
        assert_eq!(a.stated(&bare).len(), 2);
    }

    #[test]
    fn examples_join_a_commands_own_after_help_and_never_replace_it() {
        let root = clap::Command::new("notes")
            .subcommand(clap::Command::new("search").after_help("Exit status:\n  0 found"))
            .subcommand(
                clap::Command::new("list")
                    .after_help("Exit status:\n  0\n\nExamples:\n  a | notes list"),
            )
            .subcommand(clap::Command::new("get"));
        let a = app()
            .command(CommandSpec::new("search").example(["search", "x y"]))
            .command(CommandSpec::new("list").example(["list"]))
            .command(CommandSpec::new("get").example(["get", "1"]));
        let taught = a.taught(root);
        let help = |name: &str| {
            taught
                .find_subcommand(name)
                .and_then(|c| c.get_after_help())
                .map(ToString::to_string)
                .unwrap_or_default()
        };
        assert_eq!(
            help("search"),
            "Exit status:\n  0 found\n\nExamples:\n  notes search 'x y'"
        );
        assert_eq!(
            help("list"),
            "Exit status:\n  0\n\nExamples:\n  notes list\n  a | notes list"
        );
        assert_eq!(help("get"), "Examples:\n  notes get 1");
    }

    #[test]
    fn a_record_for_a_command_that_reads_no_input_is_an_error_at_start_up() {
        let stray = app().command(
            CommandSpec::new("search")
                .read_only()
                .record_with_schema(serde_json::json!({"type": "object"})),
        );
        let e = stray.check::<Notes>().unwrap_err();
        assert_eq!(e.code.as_str(), "COMMAND_SPEC_RECORD");
        assert!(e.message.contains("`search`"), "{}", e.message);
    }

    #[test]
    fn a_statement_naming_no_command_is_an_error_at_start_up_not_a_silent_default() {
        let typo = app().command(CommandSpec::new("serch").read_only());
        let e = typo.check::<Notes>().unwrap_err();
        assert_eq!(e.code.as_str(), "COMMAND_SPEC_UNKNOWN");
        assert!(
            e.message.contains("`serch`") && e.message.contains("search"),
            "{}",
            e.message
        );
        // Every run refuses to start, whatever it asked for.
        let parsed = typo.parse_from::<Notes, _, _>(["notes", "search", "x", "--output", "jsonl"]);
        assert!(parsed.is_err());
        assert!(app()
            .command(CommandSpec::new("search").read_only())
            .check::<Notes>()
            .is_ok());
        assert!(app()
            .command(CommandSpec::new("auth login"))
            .check::<Notes>()
            .is_ok());
        // A group is no command to run, and neither is nothing.
        for name in ["auth", ""] {
            assert!(app()
                .command(CommandSpec::new(name))
                .check::<Notes>()
                .is_err());
        }
    }

    #[test]
    fn a_statement_naming_an_event_the_schema_lacks_is_an_error() {
        #[derive(serde::Serialize, schemars::JsonSchema)]
        struct Hit {
            id: String,
        }
        impl crate::DomainEvent for Hit {
            const TYPE: &'static str = "hit";
        }
        let with_schema = |events: &[&str]| {
            app()
                .event_schema(|id| {
                    crate::discover::schema::EventSchema::new(id, "https://schemas.example.com")
                        .domain_event::<Hit>()
                        .build()
                })
                .command(
                    CommandSpec::new("search")
                        .read_only()
                        .events(events.iter().copied()),
                )
        };
        assert!(with_schema(&["hit", "aoi:warning"])
            .check::<Notes>()
            .is_ok());
        let e = with_schema(&["hits"]).check::<Notes>().unwrap_err();
        assert_eq!(e.code.as_str(), "EVENT_TYPE_UNKNOWN");
        assert!(e.message.contains("`hits`"), "{}", e.message);
    }

    #[derive(Debug, Parser)]
    #[command(name = "notes")]
    struct Notes {
        #[command(flatten)]
        aoi: GlobalArgs,
        /// A global flag that takes a value.
        #[arg(long, short = 'd', global = true)]
        db: Option<String>,
        #[command(subcommand)]
        command: NotesCommand,
    }

    #[derive(Debug, clap::Subcommand)]
    enum NotesCommand {
        Search {
            query: String,
            #[arg(long, short = 'n')]
            limit: Option<u64>,
            #[arg(long, short = 'q')]
            quiet: bool,
        },
        Auth {
            #[command(subcommand)]
            command: AuthCommand,
        },
        #[command(flatten)]
        Discovery(Discovery),
    }

    #[derive(Debug, clap::Subcommand)]
    enum AuthCommand {
        Login,
    }

    /// A tool may defer its subcommands (`#[command(defer = true)]`) so a run builds only the
    /// one it names; statements, secret flags and discovery still see every command (§11, §17).
    #[derive(Debug, Parser)]
    #[command(name = "notes")]
    struct Deferred {
        #[command(flatten)]
        aoi: GlobalArgs,
        #[command(subcommand)]
        command: DeferredCommand,
    }

    #[derive(Debug, clap::Subcommand)]
    #[command(defer = true)]
    enum DeferredCommand {
        Search {
            query: String,
            /// A credential (§11).
            #[arg(long)]
            api_key: Option<String>,
        },
        Auth {
            #[command(subcommand)]
            command: AuthCommand,
        },
        #[command(flatten)]
        Discovery(Discovery),
    }

    #[test]
    fn deferred_subcommands_are_checked_redacted_and_discovered_in_full() {
        let deferred = || {
            app()
                .command(CommandSpec::new("search").read_only())
                .command(CommandSpec::new("auth login"))
        };
        // A nested command exists only once built: no false COMMAND_SPEC_UNKNOWN.
        deferred().check::<Deferred>().expect("statements match");
        let a = deferred();
        let parsed = a.parse_from::<Deferred, _, _>(["notes", "auth", "login"]);
        assert!(parsed.is_ok(), "a nested deferred command parses");
        let e = app()
            .command(CommandSpec::new("auth logout"))
            .check::<Deferred>()
            .unwrap_err();
        assert_eq!(e.code.as_str(), "COMMAND_SPEC_UNKNOWN");
        assert!(app()
            .command(CommandSpec::new("auth logout"))
            .parse_from::<Deferred, _, _>(["notes", "auth", "login"])
            .is_err());

        // The flags of the command a run named are known secret once parsed.
        let a = deferred();
        let parsed = a.parse_from::<Deferred, _, _>(["notes", "search", "q", "--api-key", "k1"]);
        assert!(parsed.is_ok());
        let redacted = a.redactor().redact_args(&[
            "search".to_owned(),
            "q".to_owned(),
            "--api-key".to_owned(),
            "k1".to_owned(),
        ]);
        assert!(
            !redacted.args.iter().any(|w| w == "k1"),
            "{:?}",
            redacted.args
        );

        // Discovery describes the deferred commands' flags.
        let global = GlobalArgs::default();
        let doc = deferred()
            .discovery_document(
                &Deferred::command(),
                &global,
                &Discovery::InputSchema {
                    command: "search".to_owned(),
                },
            )
            .expect("an input schema");
        assert!(doc["properties"].get("api_key").is_some(), "{doc}");
    }

    /// §8.3: a usage error's `aoi:meta.command` names the subcommand its arguments named.
    #[test]
    fn the_command_a_usage_error_is_about_is_read_from_the_raw_arguments_section_8_3() {
        let named = |a: &[&str]| {
            let args: Vec<OsString> = std::iter::once("notes")
                .chain(a.iter().copied())
                .map(OsString::from)
                .collect();
            command_named(&Notes::command(), &args)
        };
        assert_eq!(named(&["search", "--limt", "5"]).as_deref(), Some("search"));
        assert_eq!(
            named(&["--db", "search", "search"]).as_deref(),
            Some("search"),
            "a flag's value is not a command"
        );
        assert_eq!(
            named(&["--db=x", "-d", "auth", "search"]).as_deref(),
            Some("search")
        );
        assert_eq!(
            named(&["--output", "jsonl", "auth", "login", "--bogus"]).as_deref(),
            Some("auth login")
        );
        assert_eq!(
            named(&["--format", "jsonl", "input-schema", "--commnd"]).as_deref(),
            Some("input-schema")
        );
        assert_eq!(named(&["search", "-qn", "auth"]).as_deref(), Some("search"));
        assert_eq!(named(&["auth", "logn"]).as_deref(), Some("auth"));
        assert_eq!(
            named(&["serach", "auth"]),
            None,
            "an unknown word ends the walk"
        );
        assert_eq!(
            named(&["--", "search"]),
            None,
            "an operand after -- is no command"
        );
        assert_eq!(named(&["--bogus"]), None);
        assert_eq!(named(&[]), None);
    }

    /// §16.1 and §1.3: clap's suggestion survives into the machine-mode error's one-line `hint`.
    #[test]
    fn a_usage_error_keeps_clap_suggestions_in_its_hint_section_16_1() {
        let error = Notes::try_parse_from(["notes", "search", "x", "--limt", "5"]).unwrap_err();
        let mut out = Vec::new();
        let builder = Emitter::builder(app().identity()).command("search");
        let finished = builder.start(&mut out).and_then(|mut e| {
            e.error(&usage_error(&error))?;
            e.finish(Outcome::failed())
        });
        assert_eq!(finished.unwrap().exit_code, exit_code::USAGE);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(r#""hint":"a similar argument exists: '--limit'""#),
            "{text}"
        );
        assert!(
            text.contains(r#""message":"unexpected argument '--limt' found""#),
            "{text}"
        );
    }

    #[test]
    fn machine_mode_is_detected_before_parsing() {
        let yes = |a: &[&str]| machine_requested(&a.iter().map(OsString::from).collect::<Vec<_>>());
        assert!(yes(&["t", "x", "--output", "jsonl"]));
        assert!(yes(&["t", "--format=json", "x"]));
        assert!(!yes(&["t", "x", "--output", "human"]));
        assert!(!yes(&["t", "jsonl"]));
    }
}
