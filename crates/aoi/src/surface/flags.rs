//! The standard flags of §16.1 as clap argument groups a tool flattens into its own parser.
//!
//! A command opts into exactly the groups that apply to it, so `--help`, `input-schema` and
//! `capabilities` (which read the same clap definition) agree by construction:
//!
//! ```
//! use clap::{Args, Parser, Subcommand};
//! use aoi::surface::flags::{GlobalArgs, PageArgs, MutationArgs, ConfirmArgs};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     aoi: GlobalArgs,
//!     #[command(subcommand)]
//!     command: Command,
//! }
//!
//! #[derive(Subcommand)]
//! enum Command {
//!     /// Ranked search (read-only, bounded).
//!     Search {
//!         query: String,
//!         #[command(flatten)]
//!         page: PageArgs,
//!     },
//!     /// Delete documents (destructive).
//!     Delete {
//!         id: String,
//!         #[command(flatten)]
//!         mutation: MutationArgs,
//!         #[command(flatten)]
//!         confirm: ConfirmArgs,
//!     },
//! }
//!
//! let cli = Cli::parse_from(["notes", "search", "agent", "--limit", "2", "--output", "jsonl"]);
//! assert!(cli.aoi.machine());
//! ```
//!
//! `--output` clashes with a tool whose `--output FILE` already names a destination: flatten
//! [`FormatOnlyArgs`] instead of [`GlobalArgs`], which offers only `--format jsonl|human`, the
//! spec's equal alternate (§16.4), and say so in `capabilities` (`outputs`).

use std::time::Duration;

use clap::{Args, ValueEnum};

/// Human output for people, or the AOI JSONL stream (machine mode, §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, ValueEnum)]
pub enum OutputMode {
    /// Readable output: tables, colour on a terminal.
    #[default]
    Human,
    /// AOI JSONL events on stdout.
    Jsonl,
    /// One JSON document: what discovery commands print (`schema --output json`); other
    /// commands treat it as `jsonl`.
    Json,
}

/// Flags every command of a tool takes: output mode, colour, debug, schema version. Their
/// help is grouped apart from each command's own flags, under "Global options".
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Output: `human` for people, `jsonl` for the AOI event stream (machine mode), `json` for
    /// discovery documents.
    #[arg(long, visible_alias = "format", value_enum, global = true, default_value_t = OutputMode::Human)]
    pub output: OutputMode,

    /// Event schema version to speak, e.g. `1` or `1.0.0` (see `capabilities`).
    #[arg(long, value_name = "VERSION", global = true)]
    pub schema_version: Option<String>,

    /// Never colour human output (also: the NO_COLOR environment variable).
    #[arg(long, global = true)]
    pub no_color: bool,

    /// Extra diagnostics on stderr, with secrets redacted; stdout is untouched.
    #[arg(long, global = true)]
    pub debug: bool,
}

impl GlobalArgs {
    /// True in machine mode.
    pub fn machine(&self) -> bool {
        self.output != OutputMode::Human
    }

    /// True when human output may be coloured on a terminal: no `--no-color`, and the
    /// environment allows it (see [`color`](crate::surface::color)).
    pub fn color_allowed(&self) -> bool {
        !self.no_color && crate::surface::color::env_allows()
    }
}

/// [`GlobalArgs`] for a tool whose `--output` already means something else (§16.4).
#[derive(Debug, Clone, Default, Args)]
pub struct FormatOnlyArgs {
    /// Format: `human` for people, `jsonl` for the AOI event stream (machine mode).
    #[arg(long, value_enum, global = true, default_value_t = OutputMode::Human)]
    pub format: OutputMode,

    /// Event schema version to speak, e.g. `1` or `1.0.0`.
    #[arg(long, value_name = "VERSION", global = true)]
    pub schema_version: Option<String>,

    /// Never colour human output (also: NO_COLOR).
    #[arg(long, global = true)]
    pub no_color: bool,

    /// Extra diagnostics on stderr, with secrets redacted.
    #[arg(long, global = true)]
    pub debug: bool,
}

impl From<FormatOnlyArgs> for GlobalArgs {
    fn from(f: FormatOnlyArgs) -> GlobalArgs {
        GlobalArgs {
            output: f.format,
            schema_version: f.schema_version,
            no_color: f.no_color,
            debug: f.debug,
        }
    }
}

/// Bounded reads (§15): `--limit`, `--cursor`, `--max-bytes`.
#[derive(Debug, Clone, Args)]
pub struct PageArgs {
    /// Return at most N results, at least 1 (the rest is reachable with --cursor).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,

    /// Continue where a previous page stopped (the `next_cursor` of its summary).
    #[arg(long, value_name = "TOKEN")]
    pub cursor: Option<String>,

    /// Stop before the results take more than N bytes of output (the first result is always
    /// shown); the rest is reachable with --cursor.
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<u64>,
}

/// Safe writes (§14.2, §14.4): `--dry-run`, `--idempotency-key`.
#[derive(Debug, Clone, Default, Args)]
pub struct MutationArgs {
    /// Show what would change, and change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Make a retry safe: the same key with the same arguments replays the first result.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

/// Dry run alone (§14.2), for a mutation that has nothing to make idempotent.
#[derive(Debug, Clone, Default, Args)]
pub struct DryRunArgs {
    /// Show what would change, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Destructive operations (§14.3): `--confirm`, `--confirm-count`.
#[derive(Debug, Clone, Default, Args)]
pub struct ConfirmArgs {
    /// Required to destroy anything.
    #[arg(long)]
    pub confirm: bool,

    /// Refuse unless exactly N items would be affected (guards bulk operations).
    #[arg(long, value_name = "N")]
    pub confirm_count: Option<u64>,
}

/// External calls bounded in time (§16.1): `--timeout`.
#[derive(Debug, Clone, Default, Args)]
pub struct TimeoutArgs {
    /// Give up after SECONDS (exit 124, reason "timeout").
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("{text:?} must be a positive number of seconds"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
}

/// How malformed input lines are handled (§12.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub enum InputMode {
    /// Any malformed line aborts the whole command before side effects.
    FailFast,
    /// Malformed lines become item-level errors and processing continues.
    ContinueOnError,
}

/// Structured input (§12): `--input-jsonl`, `--input-json`, `--fail-fast` / `--continue-on-error`.
#[derive(Debug, Clone, Default, Args)]
pub struct InputArgs {
    /// Read one JSON object per line from PATH (`-` for stdin).
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath, conflicts_with = "input_json")]
    pub input_jsonl: Option<String>,

    /// Read one JSON document (an object, or an array of objects) from PATH (`-` for stdin).
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub input_json: Option<String>,

    /// Abort on the first malformed line, before any side effect.
    #[arg(long, conflicts_with = "continue_on_error")]
    pub fail_fast: bool,

    /// Report malformed lines as item errors and go on.
    #[arg(long)]
    pub continue_on_error: bool,
}

impl InputArgs {
    /// The mode the flags select, falling back to the command's documented default.
    pub fn mode(&self, default: InputMode) -> InputMode {
        if self.fail_fast {
            InputMode::FailFast
        } else if self.continue_on_error {
            InputMode::ContinueOnError
        } else {
            default
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, Subcommand};

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        aoi: GlobalArgs,
        #[command(subcommand)]
        command: Cmd,
    }

    #[derive(Subcommand)]
    enum Cmd {
        Search {
            query: String,
            #[command(flatten)]
            page: PageArgs,
            #[command(flatten)]
            timeout: TimeoutArgs,
        },
        Import {
            #[command(flatten)]
            input: InputArgs,
            #[command(flatten)]
            mutation: MutationArgs,
        },
    }

    #[test]
    fn global_flags_work_before_and_after_the_subcommand_and_format_is_an_alias() {
        for argv in [
            &["t", "--output", "jsonl", "search", "q"][..],
            &["t", "search", "q", "--format", "jsonl"],
            &["t", "search", "q", "--output=jsonl"],
        ] {
            let cli = Cli::try_parse_from(argv).unwrap();
            assert!(cli.aoi.machine(), "{argv:?}");
        }
        let cli = Cli::try_parse_from(["t", "search", "q"]).unwrap();
        assert!(!cli.aoi.machine());
        let Cmd::Search { page, .. } = cli.command else {
            panic!()
        };
        assert_eq!(page.limit, 20, "bounded by default (§15)");
    }

    #[test]
    fn a_command_gets_only_the_groups_it_opts_into() {
        let cmd = Cli::command();
        let search = cmd.find_subcommand("search").unwrap();
        let longs: Vec<&str> = search
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        assert!(longs.contains(&"limit") && longs.contains(&"timeout"));
        assert!(!longs.contains(&"dry-run") && !longs.contains(&"confirm"));
        assert!(Cli::try_parse_from(["t", "search", "q", "--dry-run"]).is_err());
    }

    #[test]
    fn timeouts_must_be_positive_seconds_and_input_flags_conflict() {
        let cli = Cli::try_parse_from(["t", "search", "q", "--timeout", "1.5"]).unwrap();
        let Cmd::Search { timeout, .. } = cli.command else {
            panic!()
        };
        assert_eq!(timeout.timeout, Some(Duration::from_millis(1500)));
        for bad in ["0", "-1", "soon", "inf"] {
            assert!(
                Cli::try_parse_from(["t", "search", "q", "--timeout", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(
            Cli::try_parse_from(["t", "import", "--fail-fast", "--continue-on-error"]).is_err()
        );
        let cli = Cli::try_parse_from(["t", "import", "--input-jsonl", "-", "--continue-on-error"])
            .unwrap();
        let Cmd::Import { input, .. } = cli.command else {
            panic!()
        };
        assert_eq!(input.mode(InputMode::FailFast), InputMode::ContinueOnError);
    }
}
