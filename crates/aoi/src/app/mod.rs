//! [`App`]: a tool's identity, schema versions, event schema and command statements in one
//! place, and the plumbing every command shares: parsing with machine-mode usage errors (§16.1),
//! schema-version negotiation (§5), the discovery subcommands (§3, §16.2, §17), and running a
//! command under the [`Harness`].
//!
//! ```no_run
//! use aoi::prelude::*;
//!
//! #[derive(Subcommand)]
//! enum Cmd {
//!     /// Ranked search.
//!     Search { query: String, #[command(flatten)] page: PageArgs },
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let app = App::new("notes", env!("CARGO_PKG_VERSION"), "com.example.notes.events")
//!         .command(CommandSpec::new("search").read_only())
//!         .example(["search", "milk"]);
//!     // `schema`, `capabilities` and `input-schema` are answered here; a usage error too.
//!     let cli: Cli<Cmd> = match app.parse() {
//!         Ok(cli) => cli,
//!         Err(code) => return code,
//!     };
//!     match cli.command {
//!         // The command parse named, its body under the harness, in either output mode.
//!         Cmd::Search { query, page } => app.run(&cli.aoi, |out| {
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

mod cli;
mod summary;
use cli::sdk_discovery;
pub use cli::Cli;
use summary::{discovery_summary, discovery_text};

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
    schema: Option<Box<SchemaFn>>,
    specs: Vec<CommandSpec>,
    grace: Duration,
    echo_args: bool,
    /// Commands' own human rendering of their events ([`App::human`]).
    human_hooks: Vec<(String, HumanHook)>,
    /// Flags the parser's clap definition marks secret, learnt by [`App::parse`].
    secret_flags: std::sync::OnceLock<Vec<String>>,
    /// The command the arguments named (its path, space-separated), learnt by [`App::parse`]:
    /// the one [`App::run`] runs.
    parsed: std::sync::Mutex<Option<String>>,
    /// The base of the event schema's `$id` when the schema is the commands' own events
    /// ([`App::schema_id`]).
    schema_id: Option<String>,
    /// What `--help` says the tool is, when the tool's parser does not ([`App::about`]).
    about: Option<String>,
    /// The set-up of every command that states none ([`App::setup`]).
    setup: Vec<Value>,
    /// Examples given to the App, each the example of the command its words name
    /// ([`App::example`]).
    examples: Vec<Vec<String>>,
    /// The command each of `examples` names, resolved once (a walk of the built definition).
    examples_named: std::sync::OnceLock<Vec<Option<String>>>,
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
            schema: None,
            specs: Vec::new(),
            grace: Duration::from_millis(1500),
            echo_args: false,
            human_hooks: Vec::new(),
            secret_flags: std::sync::OnceLock::new(),
            parsed: std::sync::Mutex::new(None),
            schema_id: None,
            about: None,
            setup: Vec::new(),
            examples: Vec::new(),
            examples_named: std::sync::OnceLock::new(),
        }
    }

    /// A runnable example (argv, without the program name) of the command its words name:
    /// `.example(["get", "1"])` is `get`'s, as if stated with [`CommandSpec::example`], so
    /// the command's name is not written twice. An example naming no stated command is an
    /// error at start-up, as a statement naming no command is.
    pub fn example<I, S>(mut self, argv: I) -> App
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.examples
            .push(crate::discover::capabilities::words(argv));
        self
    }

    /// What the tool is, one line for `--help` (a parser of its own says it with a doc
    /// comment instead; [`Cli`] has none).
    pub fn about(mut self, about: impl Into<String>) -> App {
        self.about = Some(about.into());
        self
    }

    /// A set-up step (argv, without the program name) for every command that states none of
    /// its own ([`CommandSpec::setup`]): the seed data its examples need, run in a fresh
    /// state before each (§3: an example runs as written).
    pub fn setup<I, S>(mut self, argv: I) -> App
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.setup
            .push(Value::from(crate::discover::capabilities::words(argv)));
        self
    }

    /// The tool's clap definition `C`, named, versioned and described by the App where `C`
    /// does not say (as [`Cli`] does not).
    fn root<C: CommandFactory>(&self) -> clap::Command {
        let mut root = C::command().name(self.tool.clone());
        if root.get_version().is_none() {
            root = root.version(self.tool_version.clone());
        }
        match &self.about {
            Some(about) if root.get_about().is_none() => root.about(about.clone()),
            _ => root,
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
        self.schema = Some(Box::new(build));
        self
    }

    /// The event schema is the framework events and every domain event the commands
    /// [`emit`](CommandSpec::emits), its `$id` under `base` (`https://`), for a tool whose
    /// schema is nothing more. [`App::event_schema`] builds it by hand instead.
    pub fn schema_id(mut self, base: impl Into<String>) -> App {
        self.schema_id = Some(base.into());
        self
    }

    /// The event schema at `identity`'s version: [`App::event_schema`]'s, else the commands'
    /// own events under [`App::schema_id`], else the framework events only.
    fn schema_document(&self, identity: &Identity) -> Result<Value, SchemaError> {
        if let Some(build) = &self.schema {
            return build(identity);
        }
        let Some(base) = &self.schema_id else {
            return Ok(framework_schema());
        };
        let mut schema = crate::EventSchema::new(identity, base);
        let mut seen: Vec<&str> = Vec::new();
        for emitted in self.specs.iter().flat_map(CommandSpec::emitted) {
            if !seen.contains(&emitted.event_type()) {
                seen.push(emitted.event_type());
                schema = emitted.register(schema);
            }
        }
        schema.build()
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
        let root = self.root::<C>();
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
        let matched = root.try_get_matches_from_mut(&args);
        if let Ok(matches) = &matched {
            // §16.2: the SDK's discovery subcommands are answered here, whatever the tool's
            // parser does with them.
            if let Some((global, which)) = sdk_discovery(&root, matches) {
                return Err(self.answer(&self.root::<C>(), &global, &which));
            }
        }
        let parsed = matched.and_then(|matches| {
            let mut path: Vec<&str> = Vec::new();
            let mut at = &matches;
            while let Some((name, sub)) = at.subcommand() {
                path.push(name);
                at = sub;
            }
            if let Ok(mut parsed) = self.parsed.lock() {
                *parsed = Some(path.join(" "));
            }
            C::from_arg_matches(&matches)
        });
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
                    if let Some(command) = command_named(&self.root::<C>(), &args) {
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
        let mut specs: Vec<CommandSpec> = (self.specs.iter())
            .map(|s| match DISCOVERY_COMMANDS.contains(&s.name()) {
                true => s.clone(),
                false => s.clone().or_setup(&self.setup),
            })
            .collect();
        for (named, example) in self.examples_named(root) {
            if let Some(spec) = specs
                .iter_mut()
                .find(|s| Some(s.name()) == named.as_deref())
            {
                *spec = spec.clone().example(example.iter().cloned());
            }
        }
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
        let root = built(&self.root::<C>());
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
        let examples = self.examples_named(root);
        let stated = |named: &Option<String>| {
            (self.specs.iter()).any(|s| Some(s.name()) == named.as_deref())
        };
        if let Some((_, example)) = examples.iter().find(|(named, _)| !stated(named)) {
            return Some(ErrorEvent::new(
                Category::Internal,
                Code::from_static("EXAMPLE_COMMAND_UNKNOWN"),
                format!(
                    "{} gives the example `{}`, which names none of the commands it states",
                    self.tool,
                    example.join(" ")
                ),
            ));
        }
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

    /// The examples given to the App, each with the command its words name by the clap
    /// definition `root` (built once for all of them).
    fn examples_named<'a>(&'a self, root: &clap::Command) -> Vec<(Option<String>, &'a [String])> {
        if self.examples.is_empty() {
            return Vec::new();
        }
        let named = self.examples_named.get_or_init(|| {
            let root = built(root);
            (self.examples.iter())
                .map(|example| {
                    let args: Vec<OsString> = std::iter::once(&self.tool)
                        .chain(example)
                        .map(OsString::from)
                        .collect();
                    command_named_built(&root, &args)
                })
                .collect()
        });
        (named.iter().cloned())
            .zip(self.examples.iter().map(Vec::as_slice))
            .collect()
    }

    /// An event type a [`CommandSpec`] lists that the event schema does not register.
    fn event_types_problem(&self) -> Option<ErrorEvent> {
        let schema = match self.schema_document(&self.identity()) {
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
        named(Emitter::builder(self.identity()), command)
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

    /// Runs the command [`App::parse`] parsed, its body under the [`Harness`], after
    /// negotiating the schema version, in either mode: the body writes events; in human mode
    /// they are shown to a person ([`human`](crate::surface::human)), with the exit status
    /// machine mode gives.
    pub fn run<F>(&self, global: &GlobalArgs, body: F) -> ExitCode
    where
        F: FnOnce(&mut Emitter<Out>) -> RunResult,
    {
        self.run_with(global, Limits::default(), body)
    }

    /// The command the arguments named, space-separated for a nested one (`""` for a tool
    /// without subcommands), or `None` before [`App::parse`].
    pub fn parsed_command(&self) -> Option<String> {
        self.parsed.lock().ok().and_then(|p| p.clone())
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
    pub fn run_with<F>(&self, global: &GlobalArgs, limits: Limits, body: F) -> ExitCode
    where
        F: FnOnce(&mut Emitter<Out>) -> RunResult,
    {
        let Some(command) = self.parsed_command() else {
            let error = ErrorEvent::new(
                Category::Internal,
                Code::from_static("NOT_PARSED"),
                "App::run needs the command App::parse parsed, and nothing was parsed",
            );
            return Harness::new(Emitter::builder(self.identity()))
                .run_on(self.out(global, ""), |_| Err(error.into()));
        };
        let command = command.as_str();
        let out = self.out(global, command);
        match self.negotiate(global.schema_version.as_deref()) {
            Ok(identity) => {
                let argv: Vec<String> = std::env::args_os()
                    .skip(1)
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                let redacted = self.redactor().redact_args(&argv);
                let builder = named(Emitter::builder(identity), command)
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

    /// The structured input of the command [`App::parse`] parsed (§10, §12): what `--input-jsonl`/`--input-json`
    /// name, read in the mode the flags select or else the one its
    /// [`CommandSpec::input_default`] documents (fail-fast when it states none), each record
    /// checked against the schema its [`CommandSpec::record`] publishes, so that what a
    /// consumer was told is what the command takes (with the `validate` feature).
    pub fn input(
        &self,
        args: &crate::surface::flags::InputArgs,
    ) -> Result<crate::surface::input::Input<Box<dyn io::Read>>, crate::emit::Failure> {
        use crate::surface::flags::InputMode;
        let command = self.parsed_command();
        let spec = (self.specs.iter()).find(|s| Some(s.name()) == command.as_deref());
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
        self.answer(&self.root::<C>(), global, which)
    }

    /// Answers a discovery subcommand from the clap definition `root`.
    fn answer(&self, root: &clap::Command, global: &GlobalArgs, which: &Discovery) -> ExitCode {
        // §6: a document that cannot be written is not a success (fd 1 closed: `tool >&-`).
        if let Some(code) = crate::emit::refuse_closed_stdout() {
            return ExitCode::from(code);
        }
        let document = self.discovery_document(root, global, which);
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
                self.schema_document(&identity)
                    .map_err(|e| schema_build_failed(&e))
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
pub fn machine_requested(args: &[OsString]) -> bool {
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

/// `builder` for `command`, unless the tool has no subcommands (`command` empty).
fn named(builder: EmitterBuilder, command: &str) -> EmitterBuilder {
    if command.is_empty() {
        builder
    } else {
        builder.command(command)
    }
}

/// The subcommand path the raw arguments name (`"search"`, `"auth login"`), read against the
/// clap definition `root` without parsing them, so that a usage error's `aoi:meta.command`
/// names the command it is about (§8.3). `args[0]` is the program name; flags are skipped with
/// their values, and the walk stops at `--` or at the first word that is not a subcommand of
/// the one reached. `None` when the arguments name no subcommand (`tool serach`, `tool --bad`).
pub(crate) fn command_named(root: &clap::Command, args: &[OsString]) -> Option<String> {
    // Built, global flags are propagated into every subcommand, so each knows all the flags it
    // accepts.
    command_named_built(&built(root), args)
}

/// [`command_named`] in a definition already built.
fn command_named_built(root: &clap::Command, args: &[OsString]) -> Option<String> {
    use crate::discover::input_schema::takes_value;
    let mut current = root;
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
mod tests;
