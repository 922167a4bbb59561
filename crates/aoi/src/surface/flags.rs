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

use std::marker::PhantomData;
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

/// A tool's paging defaults (§15): what `--limit` and `--max-bytes` are when not given.
///
/// ```
/// use aoi::surface::flags::{PageArgs, PageDefaults};
///
/// #[derive(Debug, Clone, Copy)]
/// struct Listing;
/// impl PageDefaults for Listing {
///     const LIMIT: usize = 100;
///     const MAX_BYTES: Option<u64> = Some(64 * 1024);
/// }
///
/// #[derive(clap::Parser)]
/// struct Ls {
///     #[command(flatten)]
///     page: PageArgs<Listing>,
/// }
///
/// let ls: Ls = clap::Parser::parse_from(["ls"]);
/// assert_eq!((ls.page.limit, ls.page.max_bytes), (100, Some(65536)));
/// ```
pub trait PageDefaults: Clone + Send + Sync + 'static {
    /// `--limit` when not given: every read is bounded (§15), so there is always one.
    const LIMIT: usize;
    /// `--max-bytes` when not given; `None`: no byte bound unless asked.
    const MAX_BYTES: Option<u64>;
}

/// The SDK's paging defaults: `--limit` 20, no `--max-bytes`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Page20;

impl PageDefaults for Page20 {
    const LIMIT: usize = 20;
    const MAX_BYTES: Option<u64> = None;
}

/// Bounded reads (§15): `--limit`, `--cursor`, `--max-bytes`, with the defaults `D` gives
/// (the SDK's, [`Page20`], unless the tool names its own [`PageDefaults`]).
#[derive(Debug, Clone)]
pub struct PageArgs<D: PageDefaults = Page20> {
    /// Return at most N results, at least 1 (the rest is reachable with --cursor).
    pub limit: usize,
    /// Continue where a previous page stopped (the `next_cursor` of its summary).
    pub cursor: Option<String>,
    /// Stop before the results take more than N bytes of output (the first result is always
    /// shown); the rest is reachable with --cursor.
    pub max_bytes: Option<u64>,
    defaults: PhantomData<fn() -> D>,
}

impl<D: PageDefaults> PageArgs<D> {
    /// The flags as not given: `--limit` and `--max-bytes` at their defaults, no cursor.
    pub fn new() -> Self {
        PageArgs {
            limit: D::LIMIT,
            cursor: None,
            max_bytes: D::MAX_BYTES,
            defaults: PhantomData,
        }
    }

    /// `--limit`, refused when 0 (`usage` `LIMIT_INVALID`, [`check_limit`]).
    ///
    /// [`check_limit`]: crate::surface::cursor::check_limit
    pub fn checked_limit(&self) -> Result<usize, crate::ErrorEvent> {
        crate::surface::cursor::check_limit(self.limit)
    }

    /// The paging of the results `out`'s command writes, whose query, filters and sort are
    /// `shaping`: the limit checked, the cursor bound to the command and to them, `--max-bytes`
    /// applied to `out`, the page emitted with its `next_cursor`
    /// ([`Pager`](crate::surface::cursor::Pager)).
    pub fn pager<W: std::io::Write, S: serde::Serialize + ?Sized>(
        &self,
        out: &mut crate::Emitter<W>,
        shaping: &S,
    ) -> Result<crate::surface::cursor::Pager, crate::ErrorEvent> {
        let command = out.command().unwrap_or_default();
        let pager =
            crate::surface::cursor::Pager::new(&command, shaping, self.limit, self.cursor.clone())?;
        if self.max_bytes.is_some() {
            out.max_bytes(self.max_bytes);
        }
        Ok(pager)
    }

    /// The position `--cursor` resumes after, decoded by `codec` (a cursor it did not mint is
    /// refused), or `None` without `--cursor`.
    pub fn position<P: serde::de::DeserializeOwned>(
        &self,
        codec: &crate::surface::cursor::CursorCodec,
    ) -> Result<Option<P>, crate::ErrorEvent> {
        self.cursor.as_deref().map(|c| codec.decode(c)).transpose()
    }
}

impl<D: PageDefaults> Default for PageArgs<D> {
    fn default() -> Self {
        PageArgs::new()
    }
}

// Written out rather than derived: a derived default is a constant of the struct, and here it
// is the tool's (`D`), with `--max-bytes` given a default only when `D` has one.
impl<D: PageDefaults> Args for PageArgs<D> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let max_bytes = clap::Arg::new("max_bytes")
            .long("max-bytes")
            .value_name("N")
            .value_parser(clap::value_parser!(u64))
            .action(clap::ArgAction::Set)
            .help(
                "Stop before the results take more than N bytes of output (the first result \
                 is always shown); the rest is reachable with --cursor",
            );
        cmd.arg(
            clap::Arg::new("limit")
                .long("limit")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .action(clap::ArgAction::Set)
                .default_value(D::LIMIT.to_string())
                .help("Return at most N results, at least 1 (the rest is reachable with --cursor)"),
        )
        .arg(
            clap::Arg::new("cursor")
                .long("cursor")
                .value_name("TOKEN")
                .value_parser(clap::value_parser!(String))
                .action(clap::ArgAction::Set)
                .help("Continue where a previous page stopped (the `next_cursor` of its summary)"),
        )
        .arg(match D::MAX_BYTES {
            Some(bytes) => max_bytes.default_value(bytes.to_string()),
            None => max_bytes,
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl<D: PageDefaults> clap::FromArgMatches for PageArgs<D> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut page = PageArgs::new();
        page.update_from_arg_matches_mut(matches)?;
        Ok(page)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.update_from_arg_matches_mut(&mut matches.clone())
    }

    fn update_from_arg_matches_mut(
        &mut self,
        matches: &mut clap::ArgMatches,
    ) -> Result<(), clap::Error> {
        if let Some(limit) = matches.remove_one::<usize>("limit") {
            self.limit = limit;
        }
        if let Some(cursor) = matches.remove_one::<String>("cursor") {
            self.cursor = Some(cursor);
        }
        if let Some(max_bytes) = matches.remove_one::<u64>("max_bytes") {
            self.max_bytes = Some(max_bytes);
        }
        Ok(())
    }
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

impl From<&MutationArgs> for MutationArgs {
    fn from(flags: &MutationArgs) -> MutationArgs {
        flags.clone()
    }
}

/// A dry run alone is a mutation without a key.
impl From<&DryRunArgs> for MutationArgs {
    fn from(flags: &DryRunArgs) -> MutationArgs {
        MutationArgs {
            dry_run: flags.dry_run,
            idempotency_key: None,
        }
    }
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

    #[derive(Debug, Clone, Copy)]
    struct Small;
    impl PageDefaults for Small {
        const LIMIT: usize = 5;
        const MAX_BYTES: Option<u64> = Some(300);
    }

    #[derive(Parser)]
    struct Paged {
        #[command(flatten)]
        small: PageArgs<Small>,
    }

    #[test]
    fn a_tool_names_its_own_paging_defaults_and_help_and_input_schema_say_them() {
        let page = Paged::try_parse_from(["t"]).unwrap().small;
        assert_eq!(
            (page.limit, page.max_bytes, page.cursor),
            (5, Some(300), None)
        );
        let page =
            Paged::try_parse_from(["t", "--limit", "7", "--max-bytes", "9", "--cursor", "c"])
                .unwrap()
                .small;
        assert_eq!((page.limit, page.max_bytes), (7, Some(9)));
        assert_eq!(page.cursor.as_deref(), Some("c"));

        let help = Paged::command().render_long_help().to_string();
        assert!(
            help.contains("[default: 5]") && help.contains("[default: 300]"),
            "{help}"
        );
        let schema = crate::discover::input_schema::input_schema(&Paged::command(), "").unwrap();
        assert_eq!(schema["properties"]["limit"]["default"], 5, "{schema}");
        assert_eq!(schema["properties"]["limit"]["minimum"], 1, "{schema}");
        assert_eq!(
            schema["properties"]["max_bytes"]["default"], 300,
            "{schema}"
        );

        // The SDK's own: --limit 20, no byte bound unless asked.
        let search = Cli::command()
            .find_subcommand_mut("search")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(search.contains("[default: 20]"), "{search}");
        let max_bytes = &search[search.find("--max-bytes").unwrap()..];
        let max_bytes = &max_bytes[..max_bytes.find("--timeout").unwrap_or(max_bytes.len())];
        assert!(!max_bytes.contains("[default"), "{max_bytes}");
    }

    #[test]
    fn a_limit_of_zero_and_a_foreign_cursor_are_refused_by_the_page_itself() {
        use crate::surface::cursor::CursorCodec;
        let zero = Paged::try_parse_from(["t", "--limit", "0"]).unwrap().small;
        assert_eq!(
            zero.checked_limit().unwrap_err().code.as_str(),
            "LIMIT_INVALID"
        );
        let codec = CursorCodec::new("list", &"filter");
        let cursor = codec.encode(&"k9");
        let page = Paged::try_parse_from(["t", "--cursor", &cursor])
            .unwrap()
            .small;
        assert_eq!(
            page.position::<String>(&codec).unwrap().as_deref(),
            Some("k9")
        );
        let other = CursorCodec::new("list", &"another filter");
        assert!(page.position::<String>(&other).is_err());
        assert_eq!(
            PageArgs::<Small>::default()
                .position::<String>(&codec)
                .unwrap(),
            None
        );
    }
}
