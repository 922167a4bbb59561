//! The `aoi` command line: one clap definition, the source of `--help`.

use std::ffi::OsString;
use std::path::PathBuf;

use aoi::surface::flags::OutputMode;
use clap::{Args, Parser, Subcommand};

use crate::machine;

/// Verify, lint and serve Machine Mode (AOI-CLI v1.0-alpha) tools.
#[derive(Debug, Parser)]
#[command(name = "aoi", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
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

/// Parses the process arguments. Usage errors exit 64; in machine mode they are reported as a
/// usage `aoi:error` in a complete stream (§16.1, §20), in human mode on stderr.
pub fn parse() -> Result<Cli, u8> {
    let args: Vec<OsString> = std::env::args_os().collect();
    match Cli::try_parse_from(&args) {
        Ok(cli) => Ok(cli),
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    Err(0)
                }
                _ if aoi::app::machine_requested(&args) => {
                    Err(aoi::app::usage_error_stream(machine::emitter("usage"), &e))
                }
                _ => {
                    let _ = e.print();
                    Err(aoi::exit_code::USAGE)
                }
            }
        }
    }
}
