//! The `aoi` command line: one clap definition, the source of `--help`.

use std::ffi::OsString;
use std::path::PathBuf;

use aoi::surface::flags::OutputMode;
use clap::{Args, Parser, Subcommand};

/// Verify, lint and serve Machine Mode (AOI-CLI v1.0-alpha) tools.
#[derive(Debug, Parser)]
#[command(
    name = "aoi",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Shell completions: aoi completions bash|zsh|fish. Man pages: aoi man [COMMAND]."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    #[command(flatten)]
    Shell(aoi::surface::shell::ShellCommand),
    /// Check that a stream conforms to AOI-CLI v1.0-alpha and say whether the run succeeded.
    #[command(
        long_about = "Check that a stream conforms to AOI-CLI v1.0-alpha and say whether the run succeeded.\n\n\
Reads FILE, standard input, or the stdout of a command run after `--`, and checks every rule of\n\
the spec's Part I that the bytes can show: one JSON object per line, each ending in a newline;\n\
aoi:meta first, one terminal aoi:summary with an explicit `ok`; aoi.seq contiguous from 0 under\n\
one aoi.run and reconciled with event_count, so lines lost in the middle are caught; counters,\n\
error categories, codes, retryable and retry_after_ms; and the removed v0.2 shapes.",
        after_help = "Exit status:\n  \
0   the stream conforms and its summary says ok:true\n  \
1   the stream conforms and its summary says ok:false (an honest failure)\n  \
65  the stream violates the protocol (cut, lines lost, malformed events, ...)\n  \
64  usage error; 66 FILE or COMMAND not found; 74 read error\n\n\
Examples:\n  \
outline search agent --output jsonl | aoi verify\n  \
aoi verify recorded-run.jsonl\n  \
aoi verify -- outline search agent --output jsonl\n  \
producer --output jsonl | aoi verify --pass-through | consumer --input-jsonl -"
    )]
    Verify(VerifyArgs),
    /// Run the sixteen conformance checks of §18.2 against a tool, per command.
    #[command(
        long_about = "Run the sixteen conformance checks of AOI-CLI §18.2 against a tool, per factor and per command.\n\n\
Lint exercises the tool the way an agent would, each run in a fresh sandbox (its own HOME and\n\
XDG directories, no inherited credentials, stdin closed, a timeout on the whole process group,\n\
discovery with the network unreachable where the machine allows it), and reports for every\n\
(check x command) pass, fail with the evidence, not applicable with the reason, or could not run.\n\
Commands, flags and behaviour come from the tool's own `capabilities` and `input-schema`, so a\n\
tool in any language that publishes a §17 manifest needs no configuration; aoi-lint.toml\n\
(--config, or ./aoi-lint.toml when present) gives setup commands, fixtures and invocations for\n\
the rest.",
        after_help = "Exit status:\n  \
0   every applicable check ran and passed\n  \
1   some check failed\n  \
2   nothing failed, but some applicable checks could not run (see the report; --allow-incomplete)\n  \
64  usage error\n  \
69  the tool cannot be run\n\n\
Examples:\n  \
aoi lint --tool outline\n  \
aoi lint --tool ./mytool --output sarif > lint.sarif\n  \
aoi lint --tool outline --check 6 --check 7 --command delete\n  \
aoi lint -- outline search agent --limit 5\n  \
aoi lint --transcript run.jsonl --schema schema.json\n  \
aoi lint --tool outline --badge machine-mode.svg"
    )]
    Lint(LintArgs),
    /// Serve Machine Mode CLIs as an MCP server: one tool per command, from their own discovery.
    #[command(
        long_about = "Serve Machine Mode CLIs as an MCP server, generated from their own discovery.\n\n\
Each command a CLI's `capabilities` lists becomes an MCP tool: its `input-schema` is the tool's\n\
inputSchema (arguments go back to argv exactly, never through a shell), a call runs the CLI in\n\
machine mode and returns its events and summary as structuredContent, an ok:false summary or a\n\
protocol violation is isError with the CLI's own error (category, retryable, retry_after_ms),\n\
aoi:progress becomes notifications/progress, and a cancelled or timed-out call kills the CLI's\n\
whole process group. The adapter never adds --confirm and never retries.",
        after_help = "Examples:\n  \
aoi mcp -- outline                        serve outline over stdio\n  \
aoi mcp --tool outline --tool other       several CLIs; tools are prefixed outline_, other_\n  \
aoi mcp --exclude delete -- outline       keep a tool out of the list\n  \
aoi mcp --print-config -- outline         a configuration snippet for MCP hosts\n  \
aoi mcp --listen 8765 -- outline          Streamable HTTP on http://127.0.0.1:8765/mcp"
    )]
    Mcp(McpArgs),
    /// Print the JSON Schema of aoi's own events (credential-free, network-free).
    Schema {
        /// Only this schema name (see `capabilities`).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Print the strict JSON Schema of a command's inputs (flags and operands).
    InputSchema {
        /// The command, e.g. `verify`.
        #[arg(long)]
        command: String,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Print aoi's capability manifest: commands, flags, events, examples.
    Capabilities {
        #[command(flatten)]
        output: OutputArgs,
    },
}

/// Arguments of `aoi lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// Lint every command this tool's capabilities lists (a path, or a name on PATH).
    #[arg(long, value_name = "TOOL", conflicts_with_all = ["transcript", "invocation"])]
    pub tool: Option<OsString>,

    /// Check a captured machine-mode stream offline (the stream checks only).
    #[arg(long, value_name = "FILE", conflicts_with = "invocation")]
    pub transcript: Option<PathBuf>,

    /// Lint one invocation: TOOL and its arguments (`--output jsonl` is added when missing).
    #[arg(last = true, value_name = "TOOL ARGS")]
    pub invocation: Vec<OsString>,

    /// Settings for what discovery cannot tell: setup, fixtures, invocations (TOML).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// With --transcript: the event schema to validate against (a JSON file).
    #[arg(long, value_name = "FILE", requires = "transcript")]
    pub schema: Option<PathBuf>,

    /// Only this check (1-16; repeat for several).
    #[arg(long = "check", value_name = "N", value_parser = clap::value_parser!(u8).range(1..=16))]
    pub checks: Vec<u8>,

    /// Only this command (repeat for several), e.g. `search` or `"auth login"`.
    #[arg(long = "command", value_name = "NAME")]
    pub commands: Vec<String>,

    /// How many checks run at once (default: four per CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: Option<u16>,

    /// Also write a "Machine Mode Ready" SVG badge listing the factors passed (only when at
    /// least one factor passed every applicable check).
    #[arg(long, value_name = "FILE")]
    pub badge: Option<PathBuf>,

    /// `human` (a matrix), `jsonl` (aoi:check events, machine mode), `sarif` (SARIF 2.1.0) or
    /// `junit` (JUnit XML). `--format` is the same flag.
    #[arg(long, visible_alias = "format", value_enum, default_value_t = LintFormat::Human)]
    pub output: LintFormat,

    /// Never colour human output (also: the NO_COLOR environment variable).
    #[arg(long)]
    pub no_color: bool,

    /// Exit 0 when nothing failed even if some applicable checks could not run (by default that
    /// is exit 2: conformance not proven).
    #[arg(long)]
    pub allow_incomplete: bool,

    /// Fail a check on this project's profile advice too (what `aoi mcp` needs to call a
    /// command, how ids are named: docs/discovery.md), not only on the spec's sentences.
    #[arg(long)]
    pub strict_profile: bool,
}

/// Arguments of `aoi mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve this CLI (a path or a name on PATH); repeat for several.
    #[arg(long = "tool", value_name = "TOOL", conflicts_with = "cli")]
    pub tools: Vec<OsString>,

    /// The CLI to serve, with any arguments that precede its commands.
    #[arg(last = true, value_name = "CLI ARGS")]
    pub cli: Vec<OsString>,

    /// Only serve this MCP tool (repeat for several); by its MCP name, e.g. `search`.
    #[arg(long, value_name = "NAME")]
    pub allow: Vec<String>,

    /// Never serve this MCP tool (repeat for several).
    #[arg(long, value_name = "NAME")]
    pub exclude: Vec<String>,

    /// Confine every path argument (`x-aoi-format: path` in the input schema) to DIR and what
    /// is below it, symlinks resolved; repeat for several (default: the working directory).
    /// A call naming a path outside is refused (authz, PATH_OUTSIDE_ROOTS) before the CLI runs.
    /// When the working directory is outside every root, the CLIs run in the first root (so a
    /// path a call leaves out, often `.`, is inside it) and relative paths are relative to it.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,

    /// Fix argument NAME to VALUE in every call and hide it from the tools' input schemas,
    /// e.g. `--pin db=/srv/outline.db`; repeat for several. A call that passes it is refused.
    #[arg(long = "pin", value_name = "NAME=VALUE")]
    pub pins: Vec<aoi_mcp::confine::Pin>,

    /// Kill a call's CLI (its whole process group) after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub timeout: u64,

    /// Bound each call's response (text and structured content together) to this many bytes:
    /// events past it are withheld and the result says `truncated` (default 4 MiB).
    #[arg(long, value_name = "BYTES", default_value_t = aoi_mcp::call::DEFAULT_MAX_OUTPUT)]
    pub max_output: usize,

    /// Print a configuration snippet for MCP hosts (Claude Desktop, Cursor, VS Code) and exit.
    #[arg(long)]
    pub print_config: bool,

    /// Discover the CLIs afresh instead of reusing what was cached for the same program
    /// (path, size and modification time) in $XDG_CACHE_HOME/aoi/mcp.
    #[arg(long)]
    pub no_cache: bool,

    /// Serve Streamable HTTP on ADDR instead of stdio: PORT (on 127.0.0.1) or HOST:PORT.
    /// The address actually bound is printed on stderr (PORT 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// With --listen: also answer requests whose `Origin` is ORIGIN (`http(s)://HOST[:PORT]`);
    /// repeat for several. Without it only localhost origins are answered (others get 403).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen")]
    pub allow_origins: Vec<aoi_mcp::http::Origin>,
}

/// What `aoi lint` writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    /// A matrix of commands and checks, the failures below it.
    Human,
    /// An AOI stream: one aoi:check per check and command, then a summary.
    #[value(alias = "json")]
    Jsonl,
    /// SARIF 2.1.0, for code-scanning UIs.
    Sarif,
    /// JUnit XML, for CI systems.
    Junit,
}

/// Arguments of `aoi verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The stream to check; standard input when absent or `-`.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Run this command and check its stdout live (its stdin and stderr are inherited).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,

    /// The stream is documented as unbounded (`watch`, `tail`): EOF without a summary is allowed.
    #[arg(long)]
    pub unbounded: bool,

    /// Copy each complete line to stdout as it is checked; the report goes to stderr.
    ///
    /// Makes `aoi verify` a transparent relay in the middle of a pipeline. A truncated last line
    /// is never forwarded.
    #[arg(long)]
    pub pass_through: bool,

    /// Print no report; the exit status says it all.
    #[arg(long, short)]
    pub quiet: bool,

    /// Also validate every event against this published event schema (a JSON file, e.g. from
    /// `TOOL schema --output json`).
    #[arg(long, value_name = "FILE", conflicts_with = "schema_from")]
    pub schema: Option<PathBuf>,

    /// Also validate every event against the schema PROGRAM publishes: runs
    /// `PROGRAM schema --output json`.
    #[arg(long, value_name = "PROGRAM")]
    pub schema_from: Option<OsString>,

    /// Keep at most N findings (the rest are counted).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_findings: usize,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--output` and colour, shared by every subcommand.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// `human` for people, `jsonl` (or `json`) for an AOI event stream (machine mode).
    #[arg(long, visible_alias = "format", value_enum, default_value_t = OutputMode::Human)]
    pub output: OutputMode,

    /// Never colour human output (also: the NO_COLOR environment variable).
    #[arg(long)]
    pub no_color: bool,
}
