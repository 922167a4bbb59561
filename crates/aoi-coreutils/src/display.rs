//! GNU's flags that shape only what a person sees, taken in machine mode too, so that an
//! agent's `ls -lhF`, `du -sh` or `cat -n` with `--output jsonl` means what it means to GNU
//! instead of a usage error (or, worse, `-h` read as `--help`): in machine mode the events
//! carry the data whole (sizes in bytes, the file's own bytes, the entry's kind), and these
//! flags change nothing in them. Human mode is GNU's own parser (`src/gnu.rs`).

use clap::Args;

/// `--help` alone: `-h` is the applet's own GNU flag (`ls -lh`, `du -sh`, `grep -h`).
#[derive(Debug, Clone, Args)]
pub struct LongHelp {
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

/// `ls`'s display flags.
#[derive(Debug, Clone, Args)]
pub struct LsDisplay {
    /// Sizes for people (`1.5K`): machine mode's `size` is bytes.
    #[arg(short = 'h', long = "human-readable")]
    pub human_readable: bool,
    /// A kind mark after each name (`/`, `*`, `@`): machine mode's `kind` says it.
    #[arg(short = 'F', long = "classify")]
    pub classify: bool,
    /// `/` after directory names.
    #[arg(short = 'p')]
    pub slash: bool,
    /// Inode numbers.
    #[arg(short = 'i', long = "inode")]
    pub inode: bool,
    /// Allocated blocks.
    #[arg(short = 's', long = "size")]
    pub blocks: bool,
    /// Blocks of 1024 bytes.
    #[arg(short = 'k', long = "kibibytes")]
    pub kibibytes: bool,
    /// Numeric user and group ids (events carry both).
    #[arg(short = 'n', long = "numeric-uid-gid")]
    pub numeric: bool,
    /// A long listing without the owner.
    #[arg(short = 'g')]
    pub no_owner: bool,
    /// A long listing without the group.
    #[arg(short = 'o')]
    pub no_group_long: bool,
    /// No group in a long listing.
    #[arg(short = 'G', long = "no-group")]
    pub no_group: bool,
    /// Names in double quotes.
    #[arg(short = 'Q', long = "quote-name")]
    pub quote: bool,
    /// Names without quoting.
    #[arg(short = 'N', long = "literal")]
    pub literal: bool,
    /// C-style escapes for nongraphic characters.
    #[arg(short = 'b', long = "escape")]
    pub escape: bool,
    /// `?` for nongraphic characters.
    #[arg(short = 'q', long = "hide-control-chars")]
    pub hide_control: bool,
    /// Entries in columns.
    #[arg(short = 'C')]
    pub columns: bool,
    /// Entries in rows.
    #[arg(short = 'x')]
    pub rows: bool,
    /// Entries separated by commas.
    #[arg(short = 'm')]
    pub commas: bool,
    /// Colours: never, always or auto.
    #[arg(long = "color", value_name = "WHEN", num_args = 0..=1, require_equals = true, default_missing_value = "auto")]
    pub color: Option<String>,
    /// Full timestamps (events carry them in milliseconds).
    #[arg(long = "full-time")]
    pub full_time: bool,
    /// How times are shown.
    #[arg(long = "time-style", value_name = "STYLE")]
    pub time_style: Option<String>,
}

/// `du`'s display flags.
#[derive(Debug, Clone, Args)]
pub struct DuDisplay {
    /// Sizes for people (`1.5K`): machine mode's sizes are bytes.
    #[arg(short = 'h', long = "human-readable")]
    pub human_readable: bool,
    /// Sizes in powers of 1000.
    #[arg(long = "si")]
    pub si: bool,
    /// Sizes in KiB.
    #[arg(short = 'k')]
    pub kibibytes: bool,
    /// Sizes in MiB.
    #[arg(short = 'm')]
    pub mebibytes: bool,
    /// A grand total line (in machine mode, sum the events' bytes).
    #[arg(short = 'c', long = "total")]
    pub total: bool,
}

/// `cat`'s display flags: machine mode's `content` events are the file's own bytes.
#[derive(Debug, Clone, Args)]
pub struct CatDisplay {
    /// Number the lines (events carry offsets; count the line breaks).
    #[arg(short = 'n', long = "number")]
    pub number: bool,
    /// Number the nonblank lines.
    #[arg(short = 'b', long = "number-nonblank")]
    pub number_nonblank: bool,
    /// Show nonprinting characters, tabs and line ends (`-vET`).
    #[arg(short = 'A', long = "show-all")]
    pub show_all: bool,
    /// `$` at each line's end.
    #[arg(short = 'E', long = "show-ends")]
    pub show_ends: bool,
    /// `-vE`.
    #[arg(short = 'e')]
    pub e: bool,
    /// Tabs as `^I`.
    #[arg(short = 'T', long = "show-tabs")]
    pub show_tabs: bool,
    /// `-vT`.
    #[arg(short = 't')]
    pub t: bool,
    /// Nonprinting characters in `^` and `M-` notation.
    #[arg(short = 'v', long = "show-nonprinting")]
    pub show_nonprinting: bool,
    /// Repeated empty lines shown as one.
    #[arg(short = 's', long = "squeeze-blank")]
    pub squeeze: bool,
    /// Ignored, as GNU ignores it.
    #[arg(short = 'u')]
    pub unbuffered: bool,
}
