//! GNU grep 3's command line, as [`super::gnu`] takes it: every option of `grep --help`, `-h`
//! as `--no-filename` (help is `--help` alone), `--color[=WHEN]`, `-NUM` (read as `-C NUM`
//! before parsing).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Parser, ValueEnum};

/// GNU grep's command line. Its `-h` is `--no-filename`; help is `--help` alone.
#[derive(Debug, Parser)]
#[command(
    name = "grep",
    // GNU's getopt_long: a long option may be shortened to any unambiguous prefix
    // (`--no-gr`), and an option given twice takes its last value (`-C1 -C2`).
    infer_long_args = true,
    args_override_self = true,
    disable_help_flag = true,
    disable_version_flag = true,
    override_usage = "grep [OPTION]... PATTERNS [FILE]...",
    about = "Search for PATTERNS in each FILE (standard input when none is named, or with -).",
    after_help = "PATTERNS can hold several patterns separated by newlines.\nExit status: 0 if a line is selected, 1 if none is, 2 if an error occurred (unless -q selected a line).\nMachine mode: add --output jsonl for typed events, bounded, with cursors."
)]
pub(super) struct GnuGrep {
    /// PATTERNS are extended regular expressions.
    #[arg(short = 'E', long = "extended-regexp", action = ArgAction::SetTrue)]
    pub(super) extended: bool,
    /// PATTERNS are strings.
    #[arg(short = 'F', long = "fixed-strings", action = ArgAction::SetTrue)]
    pub(super) fixed: bool,
    /// PATTERNS are basic regular expressions (the default).
    #[arg(short = 'G', long = "basic-regexp", action = ArgAction::SetTrue)]
    pub(super) basic: bool,
    /// PATTERNS are Perl regular expressions.
    #[arg(short = 'P', long = "perl-regexp", action = ArgAction::SetTrue)]
    pub(super) perl: bool,
    /// Use PATTERNS for matching.
    #[arg(
        short = 'e',
        long = "regexp",
        value_name = "PATTERNS",
        allow_hyphen_values = true
    )]
    pub(super) regexp: Vec<OsString>,
    /// Take PATTERNS from FILE (one per line; - is standard input).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub(super) file: Vec<PathBuf>,
    /// Ignore case distinctions in patterns and data.
    #[arg(short = 'i', long = "ignore-case", overrides_with = "no_ignore_case")]
    pub(super) ignore_case: bool,
    /// The same as -i (obsolete).
    #[arg(short = 'y', hide = true)]
    pub(super) ignore_case_y: bool,
    /// Do not ignore case distinctions (the default).
    #[arg(long = "no-ignore-case", overrides_with = "ignore_case")]
    pub(super) no_ignore_case: bool,
    /// Match only whole words.
    #[arg(short = 'w', long = "word-regexp")]
    pub(super) word: bool,
    /// Match only whole lines.
    #[arg(short = 'x', long = "line-regexp")]
    pub(super) line: bool,
    /// A data line ends in a NUL byte, not a newline.
    #[arg(short = 'z', long = "null-data")]
    pub(super) null_data: bool,
    /// Suppress error messages about files that do not exist or cannot be read.
    #[arg(short = 's', long = "no-messages")]
    pub(super) no_messages: bool,
    /// Select the lines that do not match.
    #[arg(short = 'v', long = "invert-match")]
    pub(super) invert: bool,
    /// Print version information and exit.
    #[arg(short = 'V', long = "version")]
    pub(super) version: bool,
    /// Print this help and exit.
    #[arg(long = "help", action = ArgAction::Help)]
    pub(super) help: Option<bool>,
    /// Stop after NUM selected lines (per file).
    #[arg(short = 'm', long = "max-count", value_name = "NUM")]
    pub(super) max_count: Option<i64>,
    /// Print the byte offset with output lines.
    #[arg(short = 'b', long = "byte-offset")]
    pub(super) byte_offset: bool,
    /// Print the line number with output lines.
    #[arg(short = 'n', long = "line-number")]
    pub(super) line_number: bool,
    /// Flush output on every line.
    #[arg(long = "line-buffered")]
    pub(super) line_buffered: bool,
    /// Print the file name for each match (the default when there is more than one file).
    #[arg(short = 'H', long = "with-filename", overrides_with = "no_filename")]
    pub(super) with_filename: bool,
    /// Suppress the file name prefix on output.
    #[arg(short = 'h', long = "no-filename", overrides_with = "with_filename")]
    pub(super) no_filename: bool,
    /// Use LABEL as the name of standard input.
    #[arg(long = "label", value_name = "LABEL")]
    pub(super) label: Option<OsString>,
    /// Show only the nonempty parts of lines that match.
    #[arg(short = 'o', long = "only-matching")]
    pub(super) only_matching: bool,
    /// Suppress all normal output; exit 0 at the first selected line.
    #[arg(short = 'q', long = "quiet", visible_alias = "silent")]
    pub(super) quiet: bool,
    /// Assume that binary files are TYPE: binary, text or without-match.
    #[arg(long = "binary-files", value_name = "TYPE", value_enum)]
    pub(super) binary_files: Option<BinaryFiles>,
    /// Equivalent to --binary-files=text.
    #[arg(short = 'a', long = "text")]
    pub(super) text: bool,
    /// Equivalent to --binary-files=without-match.
    #[arg(short = 'I')]
    pub(super) without_match: bool,
    /// How to handle directories: read, recurse or skip.
    #[arg(short = 'd', long = "directories", value_name = "ACTION", value_enum)]
    pub(super) directories: Option<Directories>,
    /// How to handle devices, FIFOs and sockets: read or skip.
    #[arg(short = 'D', long = "devices", value_name = "ACTION", value_enum)]
    pub(super) devices: Option<Devices>,
    /// Search directories recursively (symbolic links followed on the command line only).
    #[arg(short = 'r', long = "recursive")]
    pub(super) recursive: bool,
    /// Search directories recursively, following every symbolic link.
    #[arg(short = 'R', long = "dereference-recursive")]
    pub(super) dereference_recursive: bool,
    /// Search only files whose base name matches GLOB.
    #[arg(long = "include", value_name = "GLOB")]
    pub(super) include: Vec<String>,
    /// Skip files whose base name matches GLOB.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub(super) exclude: Vec<String>,
    /// Skip files whose base name matches a glob of FILE.
    #[arg(long = "exclude-from", value_name = "FILE")]
    pub(super) exclude_from: Vec<PathBuf>,
    /// Skip directories whose name matches GLOB.
    #[arg(long = "exclude-dir", value_name = "GLOB")]
    pub(super) exclude_dir: Vec<String>,
    /// Print only the names of files with no selected line.
    #[arg(short = 'L', long = "files-without-match")]
    pub(super) files_without_match: bool,
    /// Print only the names of files with a selected line.
    #[arg(short = 'l', long = "files-with-matches")]
    pub(super) files_with_matches: bool,
    /// Print only a count of selected lines per file.
    #[arg(short = 'c', long = "count")]
    pub(super) count: bool,
    /// Make tabs line up (if needed).
    #[arg(short = 'T', long = "initial-tab")]
    pub(super) initial_tab: bool,
    /// Print a NUL byte after each file name.
    #[arg(short = 'Z', long = "null")]
    pub(super) null: bool,
    /// Print NUM lines of leading context.
    #[arg(short = 'B', long = "before-context", value_name = "NUM")]
    pub(super) before: Option<usize>,
    /// Print NUM lines of trailing context.
    #[arg(short = 'A', long = "after-context", value_name = "NUM")]
    pub(super) after: Option<usize>,
    /// Print NUM lines of output context (-NUM is the same).
    #[arg(short = 'C', long = "context", value_name = "NUM")]
    pub(super) context: Option<usize>,
    /// Use markers to highlight the matching strings: never, always or auto.
    #[arg(
        long = "color",
        visible_alias = "colour",
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "auto",
        value_enum
    )]
    pub(super) color: Option<When>,
    /// Do not strip CR characters at end of line (accepted; nothing is stripped here).
    #[arg(short = 'U', long = "binary")]
    pub(super) binary: bool,
    /// Print SEP between groups of context lines.
    #[arg(
        long = "group-separator",
        value_name = "SEP",
        allow_hyphen_values = true
    )]
    pub(super) group_separator: Option<OsString>,
    /// Print no separator between groups of context lines.
    #[arg(long = "no-group-separator")]
    pub(super) no_group_separator: bool,
    /// PATTERNS (unless -e or -f gives them), then the files.
    #[arg(value_name = "PATTERNS | FILE", allow_hyphen_values = false)]
    pub(super) operands: Vec<OsString>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum BinaryFiles {
    Binary,
    Text,
    #[value(name = "without-match")]
    WithoutMatch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Directories {
    Read,
    Recurse,
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Devices {
    Read,
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum When {
    Never,
    Always,
    Auto,
}
