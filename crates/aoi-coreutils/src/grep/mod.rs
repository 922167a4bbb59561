//! `grep` in machine mode: search file contents for a pattern, bounded (§15), gitignore-aware,
//! in a deterministic order, one `match` event per matching line. Human mode is GNU grep
//! ([`gnu`]); both compile their patterns in [`pattern`], GNU's syntax.
//!
//! Why this file is whole (over 1,000 lines): arguments, events, the scheduler, the walk
//! and the read paths of machine mode live here; the scheduler and the read paths go into
//! modules of their own next.
//!
//! Directories are walked with the `ignore` crate as ripgrep walks them: `.gitignore`, `.ignore`
//! and hidden files are skipped unless `--no-ignore` / `--hidden` say otherwise, and symbolic links
//! are not followed below an operand. Files are searched with `grep-searcher` by one worker per
//! core. A regular file of 512 KiB or more is mapped into memory (`mapped.rs`: a file cut short
//! while mapped is an item error, `FILE_CHANGED`, not a `SIGBUS`) and searched as one slice, a NUL
//! looked for and lines counted only as far as the search has come (`Lazy`); `--no-mmap`, or a file
//! that cannot be mapped, is read: up to 2 MiB in 256 KiB pieces (each piece's lines searched as it
//! comes, or the file read whole where context lines or `-m` need it), a larger one in 64 KiB
//! blocks. Whichever worker holds the next file in order writes what is ready (ripgrep's shape: no
//! thread only writes, no file's results wait for a thread to wake).
//! Workers render the line text and submatches as JSON themselves, so writing copies them.
//! The order is: operands as given, each operand's files in path order (component by
//! component, bytes, as `rg --sort path`), lines in file order. A cursor names the last item
//! written (operand, path, and the item's ordinal within that file) and is bound to the
//! pattern, the flags and the paths, so paging visits every item exactly once.
//!
//! Events (machine mode):
//!
//! - `match`: a matching line (a selected line with `-v`). `byte_offset` is the absolute
//!   offset of the line's start in the file; `text` is the line without its `\n`, or
//!   `bytes_base64` when it is not UTF-8; `submatches` are byte offsets into what was emitted
//!   (`text[start..end]` is the match; into the decoded bytes for `bytes_base64`). A line
//!   longer than `--max-columns` bytes (default 500 in machine mode, 0 for no limit; ripgrep
//!   ignores `--max-columns` under `--json`) is cut to a window of at most that many bytes, on
//!   UTF-8 boundaries, that holds the first submatch: `line_truncated: true`, `window_start`
//!   the window's offset in the line, submatches rebased into it (those not wholly inside are
//!   dropped; a first submatch longer than the window is cut to it).
//! - `context`: a line of `-A`/`-B`/`-C` context, with the same fields but `submatches`.
//! - `binary_file`: the file holds a NUL byte. A mapped file, or a file of up to 2 MiB (when
//!   its search began), is searched up to the line that holds its first NUL; a larger one
//!   read in 64 KiB blocks, up to the block that holds it (ripgrep's rule). A NUL in the
//!   first line means nothing of the file is searched; the line that holds it is never
//!   written. One per binary file, counted as an item (in human mode a note on stderr).
//! - `file_count` (`-c`): the number of selected lines of a file that has any.
//! - `file_match` (`-l`): a file with at least one selected line.
//!
//! `--limit` counts every item (matches, context lines, binary files, counts, item errors).
//! A file that cannot be read is an item-scope `aoi:error` and the walk goes on (§9.1), as is
//! a file another process cut short while it was mapped (`conflict`, `FILE_CHANGED`: what was
//! found before the cut stands, nothing after it is reported); an operand that does not exist
//! fails the run. No match at all is a success with `count: 0`; in human mode the exit status
//! is GNU grep's: 0 when a line was selected, 1 when none was, 2 when an error occurred.
//!
//! ```text
//! $ aoi-coreutils grep -n TODO src --output jsonl
//! {"type":"aoi:meta","aoi":{"seq":0,"run":"01K..."},"tool":"aoi-coreutils",...,"command":"grep"}
//! {"type":"match","aoi":{"seq":1,"run":"01K..."},"path":"src/a.rs","line_number":3,"byte_offset":41,"text":"// TODO: fix","submatches":[{"start":3,"end":7,"text":"TODO"}],"line_truncated":false}
//! {"type":"binary_file","aoi":{"seq":2,"run":"01K..."},"path":"src/logo.png","byte_offset":12}
//! {"type":"aoi:summary","aoi":{"seq":3,"run":"01K..."},"ok":true,"event_count":4,"count":2,...,"truncated":false}
//! ```

mod cli;
pub mod gnu;
pub mod pattern;

use pattern::{Compiled, Searchable, Syntax};

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex};

use aoi::app::{App, Limits};
use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::GlobalArgs;
use aoi::{Category, Code, DomainEvent, EmitError, Emitter, ErrorEvent, Outcome};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use clap::Args;
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkFinish, SinkMatch,
};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::mapped::{Mapped, Watch};
use crate::page::Bounds;
use crate::paths::{display, io_error, not_utf8, path_key};

/// The command's name, in events, cursors and messages.
/// The command's name, everywhere it is named.
pub const NAME: &str = "grep";

/// `--max-columns` in machine mode when it is not given: long enough for any line of code,
/// short enough that a minified file cannot fill a page with one line.
pub const DEFAULT_MAX_COLUMNS: usize = 500;

/// Files a worker may run ahead of the one being written, so memory stays bounded.
const LOOKAHEAD_FILES: usize = 64;

/// Bytes of line text a worker gathers before handing them over.
const CHUNK_BYTES: usize = 256 * 1024;

/// Chunks of one file in flight between its worker and the writer.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Search file contents for a pattern (bounded; gitignore-aware; sorted).
// The command's description, which `aoi-coreutils grep --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct GrepArgs {
    /// The patterns, one per line: GNU basic regular expressions (`\(a\|b\)`, `x\+`), or
    /// extended with -E, strings with -F, Perl's with -P. With -e, every word here is a path.
    #[arg(value_name = "PATTERN", required_unless_present = "regexp")]
    pub pattern: Option<String>,
    /// Files or directories to search (default: the current directory).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A pattern (repeatable: a line matching any of them is selected), as GNU grep -e.
    #[arg(
        short = 'e',
        long = "regexp",
        value_name = "PATTERN",
        allow_hyphen_values = true
    )]
    pub regexp: Vec<String>,
    /// The patterns are extended regular expressions (`a|b`, `x+`, `(y)`).
    #[arg(
        short = 'E',
        long = "extended-regexp",
        conflicts_with_all = ["fixed_strings", "basic", "perl"]
    )]
    pub extended: bool,
    /// The patterns are basic regular expressions (the default).
    #[arg(
        short = 'G',
        long = "basic-regexp",
        conflicts_with_all = ["fixed_strings", "perl"]
    )]
    pub basic: bool,
    /// The patterns are Perl-compatible regular expressions (look-around, `\d`).
    #[arg(short = 'P', long = "perl-regexp", conflicts_with = "fixed_strings")]
    pub perl: bool,
    /// Select only lines that the pattern matches whole.
    #[arg(short = 'x', long = "line-regexp")]
    pub line_regexp: bool,
    /// Search directories as GNU grep -r does: hidden and ignored files too. Without it a
    /// directory is still searched, as ripgrep searches one (.gitignore and hidden names
    /// skipped).
    #[arg(short = 'r', long = "recursive")]
    pub recursive: bool,
    /// Match case-insensitively.
    #[arg(short = 'i', long = "ignore-case")]
    pub ignore_case: bool,
    /// Take the pattern as a literal string, not a regular expression.
    #[arg(short = 'F', long = "fixed-strings")]
    pub fixed_strings: bool,
    /// Match only whole words.
    #[arg(short = 'w', long = "word-regexp")]
    pub word: bool,
    /// Select the lines that do not match.
    #[arg(short = 'v', long = "invert-match")]
    pub invert: bool,
    /// Show line numbers (human mode; events always carry them).
    #[arg(short = 'n', long = "line-number")]
    pub line_number: bool,
    /// Count the selected lines of each file that has any (`file_count` events).
    #[arg(short = 'c', long = "count", conflicts_with = "files_with_matches")]
    pub count: bool,
    /// Name the files with a selected line (`file_match` events).
    #[arg(short = 'l', long = "files-with-matches")]
    pub files_with_matches: bool,
    /// Lines of context after each match.
    #[arg(short = 'A', long = "after-context", value_name = "N")]
    pub after: Option<usize>,
    /// Lines of context before each match.
    #[arg(short = 'B', long = "before-context", value_name = "N")]
    pub before: Option<usize>,
    /// Lines of context before and after each match.
    #[arg(short = 'C', long = "context", value_name = "N")]
    pub context: Option<usize>,
    /// Search only files whose path matches GLOB (`!GLOB` excludes); repeatable.
    #[arg(short = 'g', long = "glob", value_name = "GLOB")]
    pub glob: Vec<String>,
    /// Search hidden files and directories too.
    #[arg(long)]
    pub hidden: bool,
    /// Do not skip files that .gitignore, .ignore or git's excludes name.
    #[arg(long)]
    pub no_ignore: bool,
    /// Cut lines longer than N bytes to a window around the first match (machine mode
    /// default 500; 0 for no limit).
    #[arg(short = 'M', long = "max-columns", value_name = "N")]
    pub max_columns: Option<usize>,
    /// Stop searching a file after N selected lines.
    #[arg(short = 'm', long = "max-count", value_name = "N")]
    pub max_count: Option<u64>,
    /// Read every file instead of mapping the larger ones into memory (as ripgrep's
    /// --no-mmap): slower, the same results but for a binary file over 2 MiB, then cut at
    /// the 64 KiB block of its first NUL rather than at its line.
    #[arg(long = "no-mmap")]
    pub no_mmap: bool,
    /// Accepted for GNU habits: every event names its file.
    #[arg(short = 'H', long = "with-filename", overrides_with = "no_filename")]
    pub with_filename: bool,
    /// Accepted for GNU habits (`grep -rh`): every event names its file all the same.
    #[arg(short = 'h', long = "no-filename", overrides_with = "with_filename")]
    pub no_filename: bool,
    /// Accepted for GNU habits: events always carry `byte_offset`.
    #[arg(short = 'b', long = "byte-offset")]
    pub byte_offset: bool,
    /// Colours (human mode): never, always or auto.
    #[arg(long = "color", value_name = "WHEN", num_args = 0..=1, require_equals = true, default_missing_value = "auto")]
    pub color: Option<String>,
    #[command(flatten)]
    pub help: crate::display::LongHelp,
    #[command(flatten)]
    pub bounds: Bounds,
}

// ---------------------------------------------------------------------------------------
// Events

/// One match inside a `match` event's line.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Submatch<'a> {
    /// Byte offset of the match's start in the emitted text (or decoded bytes).
    pub start: u64,
    /// Byte offset just past the match's end.
    pub end: u64,
    /// The matched text (absent when it is not UTF-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'a str>,
}

/// A selected line: a line that matched (with `-v`, one that did not).
///
/// The text fields are JSON the workers already rendered (see [`RawValue`]), so the one
/// thread that writes the stream only copies them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Match<'a> {
    /// The file, as given or found under an operand.
    #[schemars(with = "String")]
    pub path: &'a RawValue,
    /// The line's number, from 1.
    pub line_number: u64,
    /// Absolute byte offset of the line's start in the file.
    pub byte_offset: u64,
    /// The line (or its window) without its terminator, when it is UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub text: Option<&'a RawValue>,
    /// The line's bytes, base64, when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub bytes_base64: Option<&'a RawValue>,
    /// The matches within the emitted line, in order (empty with `-v`).
    #[schemars(with = "Vec<Submatch<'static>>")]
    pub submatches: &'a RawValue,
    /// The line was longer than `--max-columns` and is cut to a window.
    pub line_truncated: bool,
    /// Where the window starts in the line, in bytes (only when `line_truncated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_start: Option<u64>,
}

impl DomainEvent for Match<'_> {
    const TYPE: &'static str = "match";
}

/// A line of context around a match (`-A`, `-B`, `-C`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Context<'a> {
    /// The file.
    #[schemars(with = "String")]
    pub path: &'a RawValue,
    /// The line's number, from 1.
    pub line_number: u64,
    /// Absolute byte offset of the line's start in the file.
    pub byte_offset: u64,
    /// The line (or its first `--max-columns` bytes) without its terminator, when UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub text: Option<&'a RawValue>,
    /// The line's bytes, base64, when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub bytes_base64: Option<&'a RawValue>,
    /// The line was longer than `--max-columns` and is cut.
    pub line_truncated: bool,
    /// Where the kept part starts in the line (only when `line_truncated`; always 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_start: Option<u64>,
}

impl DomainEvent for Context<'_> {
    const TYPE: &'static str = "context";
}

/// A file holding binary data (a NUL byte), whose lines are not written.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BinaryFile<'a> {
    /// The file.
    #[schemars(with = "String")]
    pub path: &'a RawValue,
    /// Absolute byte offset of the first NUL byte seen.
    pub byte_offset: u64,
}

impl DomainEvent for BinaryFile<'_> {
    const TYPE: &'static str = "binary_file";
}

/// The number of selected lines in a file (`-c`); only files with at least one.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileCount<'a> {
    /// The file.
    #[schemars(with = "String")]
    pub path: &'a RawValue,
    /// Selected lines (at most `--max-count`).
    pub count: u64,
}

impl DomainEvent for FileCount<'_> {
    const TYPE: &'static str = "file_count";
}

/// A file with at least one selected line (`-l`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileMatch<'a> {
    /// The file.
    #[schemars(with = "String")]
    pub path: &'a RawValue,
}

impl DomainEvent for FileMatch<'_> {
    const TYPE: &'static str = "file_match";
}

// ---------------------------------------------------------------------------------------
// Shape and positions

/// What decides which items exist and in what order, which a cursor is bound to.
#[derive(Debug, Serialize)]
struct Shape {
    patterns: Vec<String>,
    paths: Vec<String>,
    ignore_case: bool,
    syntax: &'static str,
    line_regexp: bool,
    word: bool,
    invert: bool,
    count: bool,
    files_with_matches: bool,
    before: usize,
    after: usize,
    glob: Vec<String>,
    hidden: bool,
    no_ignore: bool,
    max_count: Option<u64>,
}

/// A cursor's position: the last item written was item `k` (from 1) of the file `p`
/// (`path_key`) under operand `o`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Position {
    o: usize,
    p: String,
    k: u64,
}

/// A decoded position.
#[derive(Debug, Clone)]
struct After {
    operand: usize,
    path: PathBuf,
    ordinal: u64,
}

impl After {
    fn decode(position: Position) -> Result<After, ErrorEvent> {
        let bytes = STANDARD.decode(position.p.as_bytes()).map_err(|_| {
            ErrorEvent::new(
                Category::Validation,
                aoi::surface::cursor::CURSOR_INVALID,
                "the cursor's position is not one this tool version understands",
            )
            .field("cursor")
        })?;
        Ok(After {
            operand: position.o,
            path: PathBuf::from(OsStr::from_bytes(&bytes)),
            ordinal: position.k,
        })
    }
}

/// The settings of one run, derived from the flags.
#[derive(Debug)]
struct Plan {
    operands: Vec<PathBuf>,
    /// The operand was defaulted to `.`, whose `./` is not shown.
    implicit: bool,
    before: usize,
    after: usize,
    max_columns: usize,
    mode: Mode,
    limit: usize,
    resume: Option<After>,
    hidden: bool,
    no_ignore: bool,
    invert: bool,
    max_count: Option<u64>,
    /// Regular files of `MAP_MIN` bytes or more are mapped, not read.
    mmap: bool,
}

/// What is reported per file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Lines,
    Count,
    Files,
}

fn shape(args: &GrepArgs, operands: &[PathBuf], before: usize, after: usize) -> Shape {
    Shape {
        patterns: args.regexp.clone(),
        paths: operands.iter().map(|p| path_key(p.as_os_str())).collect(),
        ignore_case: args.ignore_case,
        syntax: match syntax(args) {
            Syntax::Basic => "basic",
            Syntax::Extended => "extended",
            Syntax::Fixed => "fixed",
            Syntax::Perl => "perl",
        },
        line_regexp: args.line_regexp,
        word: args.word,
        invert: args.invert,
        count: args.count,
        files_with_matches: args.files_with_matches,
        before,
        after,
        glob: args.glob.clone(),
        hidden: args.hidden,
        no_ignore: args.no_ignore,
        max_count: args.max_count,
    }
}

/// The patterns' syntax, GNU's flags (clap refuses two of them).
fn syntax(args: &GrepArgs) -> Syntax {
    if args.fixed_strings {
        Syntax::Fixed
    } else if args.extended {
        Syntax::Extended
    } else if args.perl {
        Syntax::Perl
    } else {
        Syntax::Basic
    }
}

fn context_lines(args: &GrepArgs) -> (usize, usize) {
    let c = args.context.unwrap_or(0);
    (args.before.unwrap_or(c), args.after.unwrap_or(c))
}

fn operands(args: &GrepArgs) -> Vec<PathBuf> {
    if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    }
}

// ---------------------------------------------------------------------------------------
// Running

/// Runs `grep`.
pub fn run(app: &App, global: &GlobalArgs, mut args: GrepArgs) -> ExitCode {
    // `-r` is GNU's word, so GNU's walk: nothing skipped for being hidden or ignored.
    if args.recursive {
        args.hidden = true;
        args.no_ignore = true;
    }
    // From here on `regexp` holds every pattern: with -e the first word is a path.
    if let Some(first) = args.pattern.take() {
        if args.regexp.is_empty() {
            args.regexp.push(first);
        } else {
            args.paths.insert(0, PathBuf::from(first));
        }
    }
    let ops = operands(&args);
    let (before, after) = context_lines(&args);
    let codec = CursorCodec::new(NAME, &shape(&args, &ops, before, after));
    let limits = Limits {
        max_bytes: args.bounds.max_bytes,
        ..Limits::default()
    };
    app.run_with(global, limits, |out| {
        let (plan, matcher, overrides) = prepare(&args, &codec)?;
        let mut writer = MachineWriter { out };
        let end = match &matcher {
            Compiled::Regex(m) => drive(&plan, m, &overrides, &mut writer)?,
            Compiled::Fancy(m) => drive(&plan, m, &overrides, &mut writer)?,
            Compiled::Nothing(m) => drive(&plan, m, &overrides, &mut writer)?,
        };
        let mut outcome = if end.failed {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        if end.truncated {
            let next = end.last.as_ref().map(|p| codec.encode(p));
            outcome = outcome.truncated(next);
        }
        Ok(outcome)
    })
}

/// The plan, the matcher and the glob overrides, or the usage error that prevents them.
fn prepare(args: &GrepArgs, codec: &CursorCodec) -> Result<(Plan, Compiled, Override), ErrorEvent> {
    let limit = args.bounds.checked_limit()?;
    let resume = match args.bounds.cursor.as_deref() {
        Some(c) => Some(After::decode(codec.decode::<Position>(c)?)?),
        None => None,
    };
    let (before, after) = context_lines(args);
    let mode = if args.count {
        Mode::Count
    } else if args.files_with_matches {
        Mode::Files
    } else {
        Mode::Lines
    };
    let max_columns = args.max_columns.unwrap_or(DEFAULT_MAX_COLUMNS);
    // GNU's pattern lists: one pattern per line of each.
    let patterns: Vec<String> = args
        .regexp
        .iter()
        .flat_map(|p| p.split('\n').map(str::to_owned))
        .collect();
    let options = pattern::Options {
        ignore_case: args.ignore_case,
        word: args.word,
        line: args.line_regexp,
        terminator: b'\n',
        // Machine mode reads text as UTF-8 whatever the locale: its events are UTF-8.
        unicode: true,
    };
    let matcher = pattern::compile(&patterns, syntax(args), options).map_err(|e| {
        ErrorEvent::new(
            Category::Usage,
            Code::from_static("PATTERN_INVALID"),
            format!("the pattern is not a valid regular expression: {e}"),
        )
        .field("pattern")
        .hint("pass -F to search for the text literally")
    })?;
    let mut overrides = OverrideBuilder::new(".");
    for glob in &args.glob {
        overrides.add(glob).map_err(|e| glob_error(glob, &e))?;
    }
    let overrides = overrides.build().map_err(|e| glob_error("", &e))?;
    let plan = Plan {
        operands: operands(args),
        implicit: args.paths.is_empty(),
        before,
        after,
        max_columns,
        mode,
        limit,
        resume,
        hidden: args.hidden,
        no_ignore: args.no_ignore,
        invert: args.invert,
        max_count: args.max_count,
        mmap: !args.no_mmap,
    };
    Ok((plan, matcher, overrides))
}

fn glob_error(glob: &str, e: &ignore::Error) -> ErrorEvent {
    ErrorEvent::new(
        Category::Usage,
        Code::from_static("GLOB_INVALID"),
        format!("--glob {glob:?} is not a valid glob: {e}"),
    )
    .field("glob")
}

/// How a run ended.
#[derive(Debug, Default)]
struct End {
    /// Items remain after the last one written.
    truncated: bool,
    /// The last item written.
    last: Option<Position>,
    /// An operand could not be read.
    failed: bool,
    /// Selected lines, counts or file names written.
    selected: u64,
    /// Item errors written.
    errors: u64,
}

/// One file (or a problem standing in its place) in the order items are written.
#[derive(Debug)]
enum Task {
    File {
        operand: usize,
        path: PathBuf,
        skip: u64,
    },
    Error {
        operand: usize,
        path: PathBuf,
        error: Box<ErrorEvent>,
        skip: u64,
    },
}

/// What a worker found in one file, in order; text lives in `arena`.
#[derive(Debug, Default)]
struct Chunk {
    /// Line text as JSON (a string literal for the text, an array for the submatches),
    /// rendered by the worker.
    arena: String,
    recs: Vec<Rec>,
}

#[derive(Debug)]
struct Rec {
    ordinal: u64,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Line {
        selected: bool,
        line_number: u64,
        byte_offset: u64,
        text: (usize, usize),
        base64: bool,
        window: Option<u64>,
        /// The submatches' JSON array in the arena.
        subs: (usize, usize),
    },
    Binary(u64),
    Count(u64),
    FileMatch,
    Error(Box<ErrorEvent>),
}

/// Who a file is, for its items.
#[derive(Debug)]
struct FileInfo {
    operand: usize,
    path: PathBuf,
    /// The path as a JSON string.
    shown_json: String,
}

/// A file in the order items are written: its chunks as its worker finds them.
struct Pending {
    info: Arc<FileInfo>,
    chunks: VecDeque<Chunk>,
    finished: bool,
}

/// The files between the one being written and the furthest a worker has taken.
#[derive(Default)]
struct Order {
    /// The index of the file whose items are written next.
    next: usize,
    files: BTreeMap<usize, Pending>,
    /// A worker is writing (it holds the page); the others leave the writing to it.
    busy: bool,
}

/// Writes items as events.
trait ItemWriter {
    type Error;
    /// Writes `rec` of `file`; `Ok(false)` when `--max-bytes` refused it.
    fn item(&mut self, file: &FileRef<'_>, rec: &Rec, chunk: &Chunk) -> Result<bool, Self::Error>;
}

/// The file an item belongs to.
struct FileRef<'a> {
    /// The path's JSON, parsed once per batch.
    json: Option<&'a RawValue>,
}

/// The page being written: the writer and what went out so far. Only the worker that holds
/// [`Order::busy`] touches it.
struct PageState<'w, W: ItemWriter> {
    writer: &'w mut W,
    written: usize,
    end: End,
    /// The file (index, operand, path) and ordinal of the last item written.
    last: Option<(usize, usize, PathBuf)>,
    last_k: u64,
    error: Option<W::Error>,
}

/// Stops every thread of a run when the thread holding it panics, so the others do not
/// wait for it forever.
struct StopOnPanic<'a> {
    shared: &'a Shared,
}

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.stop_all();
        }
    }
}

/// What the walker and the workers share.
struct Shared {
    stop: AtomicBool,
    failed: AtomicBool,
    /// The index of the file being written; workers wait while they are too far ahead.
    writing: AtomicUsize,
    /// Workers waiting for `writing` to move, so it only wakes them when some wait.
    waiting: AtomicUsize,
    window: Mutex<()>,
    window_moved: Condvar,
    order: Mutex<Order>,
    /// A writer took a file's chunks: its worker may go on.
    drained: Condvar,
    /// Workers waiting on `drained` (counted under `order`), so a writer only makes the
    /// wake-up system call when one waits: most files never fill `CHUNKS_IN_FLIGHT`.
    drain_waiting: AtomicUsize,
}

impl Shared {
    fn stop_all(&self) {
        self.stop.store(true, Ordering::SeqCst);
        // Under the locks, so a worker that checked `stop` is already waiting.
        drop(self.window.lock());
        self.window_moved.notify_all();
        drop(self.order.lock());
        self.drained.notify_all();
    }

    /// Blocks until file `index` is within `ahead` files of the one being written.
    fn wait_for_window(&self, index: usize, ahead: usize) {
        let within = || index < self.writing.load(Ordering::SeqCst) + ahead;
        if within() {
            return;
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut guard) = self.window.lock() {
            while !within() && !self.stop.load(Ordering::SeqCst) {
                guard = match self
                    .window_moved
                    .wait_timeout(guard, std::time::Duration::from_millis(10))
                {
                    Ok((guard, _)) => guard,
                    Err(_) => break,
                };
            }
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    /// Records that file `next` is being written, waking the workers that wait for it.
    fn moved_to(&self, next: usize) {
        self.writing.store(next, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            drop(self.window.lock());
            self.window_moved.notify_all();
        }
    }

    /// Adds a worker's chunk of file `index` (and marks it finished), then writes whatever
    /// is ready in order, then waits while the file holds too many chunks nobody took.
    fn deliver<W: ItemWriter>(
        &self,
        page: &Mutex<PageState<'_, W>>,
        plan: &Plan,
        index: usize,
        chunk: Option<Chunk>,
        finished: bool,
    ) {
        if let Ok(mut order) = self.order.lock() {
            if let Some(file) = order.files.get_mut(&index) {
                file.chunks.extend(chunk);
                file.finished |= finished;
            }
        }
        self.write_ready(page, plan);
        let Ok(mut order) = self.order.lock() else {
            return;
        };
        while !self.stop.load(Ordering::SeqCst)
            && order
                .files
                .get(&index)
                .is_some_and(|f| f.chunks.len() >= CHUNKS_IN_FLIGHT)
        {
            self.drain_waiting.fetch_add(1, Ordering::SeqCst);
            let waited = self
                .drained
                .wait_timeout(order, std::time::Duration::from_millis(10));
            self.drain_waiting.fetch_sub(1, Ordering::SeqCst);
            order = match waited {
                Ok((guard, _)) => guard,
                Err(_) => return,
            };
        }
    }

    /// Writes the ready chunks in file order, unless another worker is writing (it will
    /// see them: it looks again before it lets go).
    fn write_ready<W: ItemWriter>(&self, page: &Mutex<PageState<'_, W>>, plan: &Plan) {
        let Ok(mut order) = self.order.lock() else {
            return;
        };
        if order.busy {
            return;
        }
        while !self.stop.load(Ordering::SeqCst) {
            let next = order.next;
            let Some(file) = order.files.get_mut(&next) else {
                return;
            };
            if file.chunks.is_empty() {
                if !file.finished {
                    return;
                }
                order.files.remove(&next);
                order.next += 1;
                self.moved_to(next + 1);
                continue;
            }
            let batch: Vec<Chunk> = file.chunks.drain(..).collect();
            let info = Arc::clone(&file.info);
            order.busy = true;
            drop(order);
            if self.drain_waiting.load(Ordering::SeqCst) > 0 {
                self.drained.notify_all();
            }
            let go_on = write_batch(page, plan, next, &info, &batch);
            order = match self.order.lock() {
                Ok(order) => order,
                Err(_) => return,
            };
            order.busy = false;
            if !go_on {
                drop(order);
                self.stop_all();
                return;
            }
        }
    }
}

/// Writes a batch of one file's chunks; false when the page is full or writing failed.
fn write_batch<W: ItemWriter>(
    page: &Mutex<PageState<'_, W>>,
    plan: &Plan,
    index: usize,
    info: &FileInfo,
    batch: &[Chunk],
) -> bool {
    let Ok(mut page) = page.lock() else {
        return false;
    };
    let page = &mut *page;
    let file = FileRef {
        json: serde_json::from_str(&info.shown_json).ok(),
    };
    for chunk in batch {
        for rec in &chunk.recs {
            if page.written >= plan.limit {
                page.end.truncated = true;
                return false;
            }
            match page.writer.item(&file, rec, chunk) {
                Ok(true) => {}
                Ok(false) => {
                    page.end.truncated = true;
                    return false;
                }
                Err(e) => {
                    page.error = Some(e);
                    return false;
                }
            }
            page.written += 1;
            match &rec.kind {
                Kind::Line { selected: true, .. } | Kind::Count(_) | Kind::FileMatch => {
                    page.end.selected += 1
                }
                Kind::Error(_) => page.end.errors += 1,
                _ => {}
            }
            if page.last.as_ref().map(|l| l.0) != Some(index) {
                page.last = Some((index, info.operand, info.path.clone()));
            }
            page.last_k = rec.ordinal;
        }
    }
    true
}

/// Walks, searches and writes one page: one worker per core searches files in order, and
/// whichever holds the next file in order writes what is ready, so no thread only waits
/// and no file's results wait for a thread to wake.
fn drive<M: Searchable, W: ItemWriter + Send>(
    plan: &Plan,
    matcher: &M,
    overrides: &Override,
    writer: &mut W,
) -> Result<End, W::Error>
where
    W::Error: Send,
{
    let shared = Shared {
        stop: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        writing: AtomicUsize::new(0),
        waiting: AtomicUsize::new(0),
        window: Mutex::new(()),
        window_moved: Condvar::new(),
        order: Mutex::new(Order::default()),
        drained: Condvar::new(),
        drain_waiting: AtomicUsize::new(0),
    };
    let page = Mutex::new(PageState {
        writer,
        written: 0,
        end: End::default(),
        last: None,
        last_k: 0,
        error: None,
    });
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let (task_tx, task_rx) = mpsc::channel::<(usize, Task)>();
    let task_rx = Mutex::new(task_rx);
    std::thread::scope(|scope| {
        let shared = &shared;
        let page = &page;
        let task_rx = &task_rx;
        scope.spawn(move || {
            let _guard = StopOnPanic { shared };
            walk(plan, overrides, shared, task_tx)
        });
        for _ in 0..workers {
            let matcher = matcher.clone();
            scope.spawn(move || {
                let _guard = StopOnPanic { shared };
                work(plan, &matcher, shared, task_rx, page)
            });
        }
    });
    // Every worker is done: what is left is finished and ready.
    if !shared.stop.load(Ordering::SeqCst) {
        shared.write_ready(&page, plan);
    }
    let page = match page.into_inner() {
        Ok(page) => page,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(error) = page.error {
        return Err(error);
    }
    let mut end = page.end;
    end.failed |= shared.failed.load(Ordering::SeqCst);
    end.last = page.last.map(|(_, o, p)| Position {
        o,
        p: path_key(p.as_os_str()),
        k: page.last_k,
    });
    Ok(end)
}

/// Lists the files of every operand, in order, as tasks; skips what a cursor passed.
fn walk(plan: &Plan, overrides: &Override, shared: &Shared, tasks: mpsc::Sender<(usize, Task)>) {
    let mut index = 0usize;
    let mut send = |task: Task| {
        let ok = tasks.send((index, task)).is_ok();
        index += 1;
        ok && !shared.stop.load(Ordering::Relaxed)
    };
    for (o, operand) in plan.operands.iter().enumerate() {
        let (skip_to, resume_path) = match &plan.resume {
            Some(a) if a.operand > o => continue,
            Some(a) if a.operand == o => (a.ordinal, Some(a.path.clone())),
            _ => (0, None),
        };
        let skip_for = |path: &Path| match &resume_path {
            Some(r) if r == path => Some(skip_to),
            Some(r) if path < r.as_path() => None,
            _ => Some(0),
        };
        if let Err(e) = std::fs::metadata(operand) {
            shared.failed.store(true, Ordering::Relaxed);
            if let Some(skip) = skip_for(operand) {
                let error = Box::new(io_error(operand, &e));
                if !send(Task::Error {
                    operand: o,
                    path: operand.clone(),
                    error,
                    skip,
                }) {
                    return;
                }
            }
            continue;
        }
        let mut builder = WalkBuilder::new(operand);
        builder
            .hidden(!plan.hidden)
            .overrides(overrides.clone())
            .sort_by_file_name(|a, b| a.cmp(b));
        let no_ignore = plan.no_ignore;
        builder
            .ignore(!no_ignore)
            .git_ignore(!no_ignore)
            .git_global(!no_ignore)
            .git_exclude(!no_ignore)
            .parents(!no_ignore);
        if let Some(r) = resume_path.clone() {
            let r = if plan.implicit {
                Path::new(".").join(r)
            } else {
                r
            };
            // Prune what sorts wholly before the cursor's file: a directory before it that
            // does not hold it holds only paths before it.
            builder.filter_entry(move |e| e.path() >= r.as_path() || r.starts_with(e.path()));
        }
        for entry in builder.build() {
            if shared.stop.load(Ordering::Relaxed) {
                return;
            }
            let task = match entry {
                Ok(entry) => {
                    let is_file = match entry.file_type() {
                        Some(t) if t.is_file() => true,
                        // An operand that is a link to a file is searched; links found in a
                        // walk are not followed.
                        Some(t) if t.is_symlink() && entry.depth() == 0 => entry.path().is_file(),
                        _ => false,
                    };
                    if !is_file {
                        continue;
                    }
                    let path = shown_path(plan, entry.into_path());
                    let Some(skip) = skip_for(&path) else {
                        continue;
                    };
                    Task::File {
                        operand: o,
                        path,
                        skip,
                    }
                }
                Err(err) => {
                    let (path, error) = walk_error(operand, err);
                    let path = shown_path(plan, path);
                    let Some(skip) = skip_for(&path) else {
                        continue;
                    };
                    Task::Error {
                        operand: o,
                        path,
                        error: Box::new(error),
                        skip,
                    }
                }
            };
            if !send(task) {
                return;
            }
        }
    }
}

/// `path` as events show it: without the `./` of a defaulted operand.
fn shown_path(plan: &Plan, path: PathBuf) -> PathBuf {
    if plan.implicit {
        match path.strip_prefix(".") {
            Ok(rest) if !rest.as_os_str().is_empty() => rest.to_path_buf(),
            _ => path,
        }
    } else {
        path
    }
}

/// The path a walk error concerns and its item error.
fn walk_error(operand: &Path, err: ignore::Error) -> (PathBuf, ErrorEvent) {
    let mut err = err;
    let mut path = operand.to_path_buf();
    loop {
        match err {
            ignore::Error::WithPath {
                path: p,
                err: inner,
            } => {
                path = p;
                err = *inner;
            }
            ignore::Error::WithDepth { err: inner, .. }
            | ignore::Error::WithLineNumber { err: inner, .. } => err = *inner,
            ignore::Error::Loop { child, .. } => {
                let e =
                    io::Error::from_raw_os_error(if cfg!(target_os = "linux") { 40 } else { 62 });
                return (child.clone(), io_error(&child, &e));
            }
            ignore::Error::Io(e) => return (path.clone(), io_error(&path, &e)),
            other => {
                let error = ErrorEvent::new(
                    Category::Io,
                    Code::from_static("WALK_ERROR"),
                    format!("{}: {other}", crate::paths::display(&path)),
                )
                .item()
                .target(path.to_string_lossy().into_owned());
                return (path, error);
            }
        }
    }
}

/// Takes tasks in order, registers each file, searches it, and writes what is ready.
fn work<M: Searchable, W: ItemWriter>(
    plan: &Plan,
    matcher: &M,
    shared: &Shared,
    tasks: &Mutex<Receiver<(usize, Task)>>,
    page: &Mutex<PageState<'_, W>>,
) {
    let lines = plan.mode == Mode::Lines;
    let mut builder = SearcherBuilder::new();
    builder
        .line_number(true)
        .before_context(if lines { plan.before } else { 0 })
        .after_context(if lines { plan.after } else { 0 })
        .invert_match(plan.invert)
        .max_matches(match plan.mode {
            Mode::Files => Some(1),
            _ => plan.max_count,
        });
    let mut searchers = Searchers {
        blocks: builder.binary_detection(BinaryDetection::quit(0)).build(),
        // Slices are of bytes `search_file` has already looked through for a NUL: a second
        // look (`grep-searcher` checks a slice's first 64 KiB) would find none.
        slices: builder.binary_detection(BinaryDetection::none()).build(),
        // For `Lazy`, which counts lines and looks for a NUL itself.
        lazy: builder.line_number(false).build(),
    };
    // The worker's buffer for the files `search_file` reads itself.
    let mut buf = Vec::new();
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let (index, task) = {
            let Ok(guard) = tasks.lock() else { return };
            let Ok((index, task)) = guard.recv() else {
                return;
            };
            let (operand, path) = match &task {
                Task::File { operand, path, .. } | Task::Error { operand, path, .. } => {
                    (*operand, path.clone())
                }
            };
            let shown = path.to_string_lossy().into_owned();
            let mut shown_json = String::with_capacity(shown.len() + 2);
            aoi::wire::push_json_string(&mut shown_json, &shown);
            let info = Arc::new(FileInfo {
                operand,
                path,
                shown_json,
            });
            let Ok(mut order) = shared.order.lock() else {
                return;
            };
            order.files.insert(
                index,
                Pending {
                    info,
                    chunks: VecDeque::new(),
                    finished: false,
                },
            );
            (index, task)
        };
        shared.wait_for_window(index, LOOKAHEAD_FILES);
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let skip = match &task {
            Task::File { skip, .. } | Task::Error { skip, .. } => *skip,
        };
        let mut sink = Collect::new(plan, matcher, shared, index, skip, page);
        match task {
            Task::Error { error, .. } => sink.push(Kind::Error(error)),
            Task::File { path, .. } => {
                if path.to_str().is_none() {
                    sink.push(Kind::Error(Box::new(not_utf8(&path))));
                } else {
                    match File::open(&path) {
                        Ok(file) => {
                            let searched =
                                search_file(&mut searchers, matcher, &file, &mut buf, &mut sink);
                            if let Err(e) = searched {
                                sink.push(Kind::Error(Box::new(search_error(&path, &e))));
                            }
                        }
                        Err(e) => sink.push(Kind::Error(Box::new(io_error(&path, &e)))),
                    }
                }
            }
        }
        sink.finish();
    }
}

/// Regular files of at least this size are mapped (`mapped.rs`) and searched where the kernel
/// holds their pages, with no copy; smaller ones are read, which costs less than a map's
/// set-up, page faults and tear-down: on the bench machine maps were slower for files of
/// 256 KiB and less, about even from 512 KiB, faster at 4 MiB (`bench/README.md`).
const MAP_MIN: u64 = 512 << 10;

/// Files up to this size that are not mapped are read by `search_file` itself and searched as
/// slices: up to the line that holds a NUL, with fewer system calls than `grep-searcher`'s
/// 64 KiB blocks. Larger files, and files whose size says nothing (0 in `/proc`), are read in
/// blocks.
const WHOLE_FILE_MAX: u64 = 2 << 20;

/// How much of a file `search_by_piece` reads at once. Its complete lines are searched as it
/// comes (and looked through for a NUL, `Lazy`), and the line it ends inside moved to the
/// front of the buffer for the next, so the buffer stays one piece and a line long (as
/// `grep-searcher`'s does). 64, 128 and 256 KiB measured the same within the bench machine's
/// noise (`bench/README.md`).
const READ_PIECE: usize = 256 << 10;

/// A worker's searchers: one for slices `search_file` has checked for a NUL itself, one that
/// checks the blocks it reads, and one that counts no line, for `Lazy` (which does).
struct Searchers {
    slices: Searcher,
    blocks: Searcher,
    lazy: Searcher,
}

/// Searches an open file. A regular file that is mapped (of `MAP_MIN` bytes or more), or read
/// by `search_file` itself (up to `WHOLE_FILE_MAX`), is searched up to the line that
/// holds its first NUL byte, which is then reported (`binary_file`); any other, up to the
/// 64 KiB block that holds it (`grep-searcher`'s rule, as ripgrep's).
fn search_file<M: Searchable, W: ItemWriter>(
    searchers: &mut Searchers,
    matcher: &M,
    file: &File,
    buf: &mut Vec<u8>,
    sink: &mut Collect<'_, '_, '_, M, W>,
) -> io::Result<()> {
    let meta = file.metadata()?;
    let len = meta.len();
    if !meta.is_file() || len == 0 {
        return searchers.blocks.search_file(matcher, file, sink);
    }
    let plan = sink.plan;
    let mapped = if plan.mmap && len >= MAP_MIN {
        usize::try_from(len)
            .ok()
            .and_then(|len| Mapped::new(file, len))
    } else {
        None
    };
    if let Some(map) = mapped {
        sink.watch = Some(map.watch());
        let searched = search_all(searchers, matcher, map.bytes(), sink);
        sink.watch = None;
        if map.shrank() {
            return Err(io::Error::other(Shrank));
        }
        return searched;
    }
    if len > WHOLE_FILE_MAX {
        return searchers.blocks.search_file(matcher, file, sink);
    }
    // Pieces are searched as they come only where a line's result does not depend on lines
    // outside its piece: no context lines, and no `-m` (which `grep-searcher` counts per
    // search).
    let by_piece = (plan.mode != Mode::Lines || (plan.before == 0 && plan.after == 0))
        && plan.max_count.is_none();
    if by_piece {
        search_by_piece(searchers, matcher, file, buf, sink)
    } else {
        search_whole(searchers, matcher, file, len, buf, sink)
    }
}

/// The error a search ends with when its mapped file shrank under it (`Mapped::shrank`).
#[derive(Debug)]
struct Shrank;

impl std::fmt::Display for Shrank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the file was cut short while it was searched")
    }
}

impl std::error::Error for Shrank {}

/// The item error of a file whose search ended in `err`.
fn search_error(path: &Path, err: &io::Error) -> ErrorEvent {
    if err.get_ref().is_some_and(|e| e.is::<Shrank>()) {
        return ErrorEvent::new(
            Category::Conflict,
            Code::from_static("FILE_CHANGED"),
            format!("{}: {Shrank}", display(path)),
        )
        .item()
        .target(path.to_string_lossy().into_owned())
        .hint("search it again once nothing is writing to it");
    }
    io_error(path, err)
}

/// Reads `file` in pieces into the front of `buf` and searches the complete lines of each as
/// it comes (`search_lazy`, which looks through them for a NUL); the last search, of what
/// follows the last line end, closes the file's results.
fn search_by_piece<M: Searchable, W: ItemWriter>(
    searchers: &mut Searchers,
    matcher: &M,
    mut file: &File,
    buf: &mut Vec<u8>,
    sink: &mut Collect<'_, '_, '_, M, W>,
) -> io::Result<()> {
    // `buf[..filled]` is the file from `sink.base_offset` on, read and not yet searched: the
    // start of a line not yet ended.
    let mut filled = 0;
    sink.defer_finish = true;
    while !sink.halted {
        if buf.len() < filled + READ_PIECE {
            buf.resize(filled + READ_PIECE, 0);
        }
        let n = match file.read(&mut buf[filled..filled + READ_PIECE]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // The file's items end with the error (`work`), not with `finish`.
            Err(e) => return Err(e),
        };
        let new = filled..filled + n;
        filled += n;
        if new.start == 0 && sink.base_offset == 0 {
            // The file's first piece: a binary file's NUL, and nothing more of it is read.
            if let Some(nul) = first_nul(&buf[..n]) {
                sink.defer_finish = false;
                return search_before_nul(&mut searchers.slices, matcher, &buf[..n], nul, sink);
            }
        }
        // What was read before this piece holds no line end.
        if let Some(eol) = memchr::memrchr(b'\n', &buf[new]) {
            let upto = filled - n + eol + 1;
            search_lazy(&mut searchers.lazy, matcher, &buf[..upto], sink)?;
            buf.copy_within(upto..filled, 0);
            filled -= upto;
        }
    }
    // The last search, which also closes the file's results (counts, the binary note).
    sink.defer_finish = false;
    let rest = if sink.halted { &[][..] } else { &buf[..filled] };
    search_lazy(&mut searchers.lazy, matcher, rest, sink)
}

/// Searches `bytes` up to the line that holds the NUL at `nul`, noted for `finish`.
fn search_before_nul<M: Searchable, W: ItemWriter>(
    searcher: &mut Searcher,
    matcher: &M,
    bytes: &[u8],
    nul: usize,
    sink: &mut Collect<'_, '_, '_, M, W>,
) -> io::Result<()> {
    sink.binary_at = Some(sink.base_offset + nul as u64);
    let cut = memchr::memrchr(b'\n', &bytes[..nul]).map_or(0, |eol| eol + 1);
    searcher.search_slice(matcher, &bytes[..cut], sink)
}

/// How much of a file is looked through for a NUL before it is searched: a NUL here (where a
/// binary file has one) ends the search before it begins.
const FIRST_LOOK: usize = 64 << 10;

/// The first NUL in the first `FIRST_LOOK` bytes of a file.
fn first_nul(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(0, &bytes[..bytes.len().min(FIRST_LOOK)])
}

/// Searches `bytes`, a whole file (mapped, or read whole), as one slice up to the line of its
/// first NUL. Past its first `FIRST_LOOK` bytes, a NUL is looked for, and lines counted, only
/// as far as the search has come (`Lazy`): the bytes are read from memory once, by the search,
/// and a search that stops early (`-l`, a full page) reads no further.
fn search_all<M: Searchable, W: ItemWriter>(
    searchers: &mut Searchers,
    matcher: &M,
    bytes: &[u8],
    sink: &mut Collect<'_, '_, '_, M, W>,
) -> io::Result<()> {
    match first_nul(bytes) {
        Some(nul) => search_before_nul(&mut searchers.slices, matcher, bytes, nul, sink),
        None => search_lazy(&mut searchers.lazy, matcher, bytes, sink),
    }
}

/// Searches `bytes`, whole lines of a file from the sink's `base_offset` on, through `Lazy`,
/// and moves the sink's line and byte bases past them for the next.
fn search_lazy<M: Searchable, W: ItemWriter>(
    searcher: &mut Searcher,
    matcher: &M,
    bytes: &[u8],
    sink: &mut Collect<'_, '_, '_, M, W>,
) -> io::Result<()> {
    let mut lazy = Lazy {
        sink,
        bytes,
        checked: 0,
        lines: 0,
    };
    searcher.search_slice(matcher, bytes, &mut lazy)?;
    let lines = lazy.lines;
    sink.base_line += lines;
    sink.base_offset += bytes.len() as u64;
    Ok(())
}

/// The sink of a map's or a piece's search, between the searcher and `Collect`: before a line
/// is taken, the bytes from where the last look ended to the line's end are looked through
/// for a NUL and their line ends counted, a block at a time so the second look reads the
/// first-level cache. A NUL ends the search at the line that holds it, as a look before the
/// search would have; the search itself has read the bytes into the cache, so the file is read
/// from memory once.
struct Lazy<'s, 'a, 'p, 'w, M: Searchable, W: ItemWriter> {
    sink: &'s mut Collect<'a, 'p, 'w, M, W>,
    bytes: &'s [u8],
    /// `bytes[..checked]` holds no NUL and `lines` line ends.
    checked: usize,
    lines: u64,
}

/// The bytes `Lazy` looks through at once.
const LAZY_BLOCK: usize = 16 << 10;

impl<M: Searchable, W: ItemWriter> Lazy<'_, '_, '_, '_, M, W> {
    /// Looks through the bytes up to `upto`, counting line ends when `count`; false at a NUL,
    /// which is noted for `finish` (nothing after it is searched).
    fn look(&mut self, upto: usize, count: bool) -> bool {
        while self.checked < upto {
            let end = upto.min(self.checked + LAZY_BLOCK);
            let block = &self.bytes[self.checked..end];
            if let Some(at) = memchr::memchr(0, block) {
                self.sink.binary_at = Some(self.sink.base_offset + (self.checked + at) as u64);
                self.sink.halted = true;
                return false;
            }
            if count {
                self.lines += memchr::memchr_iter(b'\n', block).count() as u64;
            }
            self.checked = end;
        }
        true
    }

    /// The line number of a line at `start` of `len` bytes, once no NUL is found up to its
    /// end; `None` to stop.
    fn line(&mut self, start: u64, len: usize) -> Option<u64> {
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        if !self.look(start, true) {
            return None;
        }
        let number = self.sink.base_line + self.lines + 1;
        self.look(start.saturating_add(len), true).then_some(number)
    }

    /// Hands a line at `at` in the slice to `Collect::take` once it is looked through (which
    /// refuses it when a mapped file was cut short: a look may have read zeros).
    fn take(&mut self, selected: bool, bytes: &[u8], at: u64) -> bool {
        match self.line(at, bytes.len()) {
            Some(n) => self
                .sink
                .take(selected, bytes, n, at + self.sink.base_offset),
            None => false,
        }
    }
}

impl<M: Searchable, W: ItemWriter> Sink for Lazy<'_, '_, '_, '_, M, W> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        Ok(self.take(true, mat.bytes(), mat.absolute_byte_offset()))
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.take(false, ctx.bytes(), ctx.absolute_byte_offset()))
    }

    fn finish(&mut self, _: &Searcher, _: &SinkFinish) -> Result<(), io::Error> {
        // The rest of a search that ran to the end: a NUL there is still the file's, and its
        // lines are counted when another piece of the file follows.
        if !self.sink.halted {
            let more = self.sink.defer_finish;
            self.look(self.bytes.len(), more);
        }
        self.sink.close(None);
        Ok(())
    }
}

/// Reads `file`, of `len` bytes when its size was read, into `buf` whole (context lines and
/// `-m` need it at once) and searches it as one slice (`search_all`).
fn search_whole<M: Searchable, W: ItemWriter>(
    searchers: &mut Searchers,
    matcher: &M,
    mut file: &File,
    len: u64,
    buf: &mut Vec<u8>,
    sink: &mut Collect<'_, '_, '_, M, W>,
) -> io::Result<()> {
    // One byte more than the size, to see the end of the file in the same buffer.
    let want = usize::try_from(len).unwrap_or(usize::MAX).saturating_add(1);
    if buf.len() < want {
        buf.resize(want, 0);
    }
    let mut filled = 0;
    while filled < want {
        match file.read(&mut buf[filled..want]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    if filled == want {
        // It grew since its size was read: what is read so far, then the rest in blocks.
        let rest = io::Cursor::new(&buf[..filled]).chain(file);
        return searchers.blocks.search_reader(matcher, rest, sink);
    }
    search_all(searchers, matcher, &buf[..filled], sink)
}

/// Collects one file's items into chunks and delivers them for writing.
struct Collect<'a, 'p, 'w, M: Searchable, W: ItemWriter> {
    plan: &'a Plan,
    matcher: &'a M,
    shared: &'a Shared,
    page: &'p Mutex<PageState<'w, W>>,
    /// The file's index in the order of items.
    index: usize,
    chunk: Chunk,
    /// The ordinal of the last item found in this file.
    ordinal: u64,
    /// Items a cursor already passed.
    skip: u64,
    /// Selected lines (for `-c` and `-l`).
    count: u64,
    /// Match ranges of the current line.
    found: Vec<(usize, usize)>,
    /// The first NUL byte of a file searched as slices (mapped or read by `search_file`),
    /// which `grep-searcher` does not look for: the search ends before its line.
    binary_at: Option<u64>,
    /// Lines and bytes of the file before the slice being searched (`search_lazy`).
    base_line: u64,
    base_offset: u64,
    /// A search of one piece of a file: its end is not the file's, so `finish` waits.
    defer_finish: bool,
    /// The sink asked the search to stop: no further piece is searched.
    halted: bool,
    /// The mark of the map being searched: once it is set, the bytes may be zeros that were
    /// never in the file, and nothing more of it is kept.
    watch: Option<Watch>,
}

impl<'a, 'p, 'w, M: Searchable, W: ItemWriter> Collect<'a, 'p, 'w, M, W> {
    fn new(
        plan: &'a Plan,
        matcher: &'a M,
        shared: &'a Shared,
        index: usize,
        skip: u64,
        page: &'p Mutex<PageState<'w, W>>,
    ) -> Self {
        Collect {
            plan,
            matcher,
            shared,
            page,
            index,
            chunk: Chunk::default(),
            ordinal: 0,
            skip,
            count: 0,
            found: Vec::new(),
            binary_at: None,
            base_line: 0,
            base_offset: 0,
            defer_finish: false,
            halted: false,
            watch: None,
        }
    }

    /// Whether the mapped file being searched was found cut short; the search then stops.
    fn shrank(&mut self) -> bool {
        let shrank = self.watch.is_some_and(Watch::shrank);
        self.halted |= shrank;
        shrank
    }

    /// Past the items this page can use: the cursor's, plus a page, plus one to know there
    /// are more.
    fn full(&self) -> bool {
        self.ordinal
            > self
                .skip
                .saturating_add(self.plan.limit as u64)
                .saturating_add(1)
    }

    /// Counts the next item and says whether it is to be kept.
    fn next_kept(&mut self) -> bool {
        self.ordinal += 1;
        self.ordinal > self.skip && !self.full()
    }

    fn push(&mut self, kind: Kind) {
        if self.next_kept() {
            self.chunk.recs.push(Rec {
                ordinal: self.ordinal,
                kind,
            });
        }
    }

    /// Delivers the chunk; false when the run stopped.
    fn send(&mut self) -> bool {
        if !self.chunk.recs.is_empty() {
            let chunk = std::mem::take(&mut self.chunk);
            self.shared
                .deliver(self.page, self.plan, self.index, Some(chunk), false);
        }
        !self.shared.stop.load(Ordering::Relaxed)
    }

    /// Delivers the last chunk and marks the file finished.
    fn finish(&mut self) {
        let chunk = std::mem::take(&mut self.chunk);
        let chunk = (!chunk.recs.is_empty()).then_some(chunk);
        self.shared
            .deliver(self.page, self.plan, self.index, chunk, true);
    }

    /// Records a selected line or a context line; false to stop the search.
    fn line(&mut self, selected: bool, bytes: &[u8], line_number: u64, byte_offset: u64) -> bool {
        if self.shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        if !self.next_kept() {
            return !self.full();
        }
        let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        if self.chunk.recs.capacity() == 0 {
            // One allocation for the chunk's first lines instead of a doubling series.
            self.chunk.arena.reserve(16 * 1024);
            self.chunk.recs.reserve(64);
        }
        self.found.clear();
        if selected && !self.plan.invert {
            let found = &mut self.found;
            let _ = self.matcher.find_iter(line, |m| {
                if !m.is_empty() {
                    found.push((m.start(), m.end()));
                }
                true
            });
        }
        let max = self.plan.max_columns;
        let (ws, we) = if max > 0 && line.len() > max {
            window(line, self.found.first().copied(), max)
        } else {
            (0, line.len())
        };
        let kept = &line[ws..we];
        let (text, base64, subs) = self.render_json(kept, ws, we);
        let chunk = &mut self.chunk;
        let cut = we - ws < line.len();
        chunk.recs.push(Rec {
            ordinal: self.ordinal,
            kind: Kind::Line {
                selected,
                line_number,
                byte_offset,
                text,
                base64,
                window: cut.then_some(ws as u64),
                subs,
            },
        });
        if chunk.arena.len() >= CHUNK_BYTES || chunk.recs.len() >= 4096 {
            return self.send();
        }
        true
    }
}

/// The match ranges of `found` kept in the window `[ws, we)`, rebased into it: those wholly
/// inside, and the first one cut to the window when it is longer.
fn kept_subs(
    found: &[(usize, usize)],
    ws: usize,
    we: usize,
) -> impl Iterator<Item = (usize, usize)> + '_ {
    found.iter().enumerate().filter_map(move |(i, &(s, e))| {
        if s >= ws && e <= we {
            Some((s - ws, e - ws))
        } else if i == 0 && s < we && e > ws {
            Some((s.max(ws) - ws, e.min(we) - ws))
        } else {
            None
        }
    })
}

impl<M: Searchable, W: ItemWriter> Collect<'_, '_, '_, M, W> {
    /// Machine mode: the text as a JSON string (base64 when not UTF-8) and the submatches
    /// as a JSON array, in the arena, for the writer to copy as they are. Returns the
    /// text's range, whether it is base64, and the array's range.
    fn render_json(
        &mut self,
        kept: &[u8],
        ws: usize,
        we: usize,
    ) -> ((usize, usize), bool, (usize, usize)) {
        let arena = &mut self.chunk.arena;
        let at = arena.len();
        let utf8 = std::str::from_utf8(kept).ok();
        match utf8 {
            Some(text) => aoi::wire::push_json_string(arena, text),
            None => {
                arena.push('"');
                STANDARD.encode_string(kept, arena);
                arena.push('"');
            }
        }
        let text = (at, arena.len());
        let subs_at = arena.len();
        arena.push('[');
        for (n, (s, e)) in kept_subs(&self.found, ws, we).enumerate() {
            if n > 0 {
                arena.push(',');
            }
            arena.push_str("{\"start\":");
            push_u64(arena, s as u64);
            arena.push_str(",\"end\":");
            push_u64(arena, e as u64);
            if let Some(piece) = kept.get(s..e).and_then(|b| std::str::from_utf8(b).ok()) {
                arena.push_str(",\"text\":");
                aoi::wire::push_json_string(arena, piece);
            }
            arena.push('}');
        }
        arena.push(']');
        (text, utf8.is_none(), (subs_at, arena.len()))
    }
}

impl<M: Searchable, W: ItemWriter> Collect<'_, '_, '_, M, W> {
    /// Takes a selected line (`selected`) or a context line; false to stop the search, as
    /// when the mapped file being searched was found cut short.
    fn take(&mut self, selected: bool, bytes: &[u8], line_number: u64, byte_offset: u64) -> bool {
        if self.shrank() {
            return false;
        }
        let keep = match self.plan.mode {
            Mode::Files if selected => {
                self.count += 1;
                false
            }
            Mode::Count if selected => {
                self.count += 1;
                !self.shared.stop.load(Ordering::Relaxed)
            }
            _ => self.line(selected, bytes, line_number, byte_offset),
        };
        self.halted |= !keep;
        keep
    }

    /// Closes the file's results: its count or name, and its binary note (`block_nul`: a NUL
    /// `grep-searcher` found in a block it read).
    fn close(&mut self, block_nul: Option<u64>) {
        if self.defer_finish || self.shrank() {
            return;
        }
        match self.plan.mode {
            Mode::Count if self.count > 0 => self.push(Kind::Count(self.count)),
            Mode::Files if self.count > 0 => self.push(Kind::FileMatch),
            _ => {}
        }
        let block_nul = block_nul.map(|at| at + self.base_offset);
        if let Some(offset) = block_nul.or(self.binary_at) {
            self.push(Kind::Binary(offset));
        }
    }
}

impl<M: Searchable, W: ItemWriter> Sink for &mut Collect<'_, '_, '_, M, W> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let (n, at) = (mat.line_number(), mat.absolute_byte_offset());
        let (n, at) = (n.unwrap_or(0) + self.base_line, at + self.base_offset);
        Ok(self.take(true, mat.bytes(), n, at))
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let (n, at) = (ctx.line_number(), ctx.absolute_byte_offset());
        let (n, at) = (n.unwrap_or(0) + self.base_line, at + self.base_offset);
        Ok(self.take(false, ctx.bytes(), n, at))
    }

    fn finish(&mut self, _: &Searcher, finish: &SinkFinish) -> Result<(), io::Error> {
        self.close(finish.binary_byte_offset());
        Ok(())
    }
}

/// Appends `n` in decimal.
fn push_u64(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// The window `[start, end)` of at most `max` bytes of `line` that holds `first` (a match's
/// byte range; the line's start when `None`), on UTF-8 boundaries. A quarter of the room
/// left goes before the match; a match longer than `max` is cut to it.
fn window(line: &[u8], first: Option<(usize, usize)>, max: usize) -> (usize, usize) {
    let boundary = |i: usize| i >= line.len() || line[i] & 0xC0 != 0x80;
    let (s, e) = first.unwrap_or((0, 0));
    if e - s >= max {
        let mut end = s + max;
        while end > s && !boundary(end) {
            end -= 1;
        }
        return (s, end);
    }
    let room = max - (e - s);
    let mut start = s - (room / 4).min(s);
    let mut end = (start + max).min(line.len());
    if end - start < max {
        start = end.saturating_sub(max);
    }
    while start < s && !boundary(start) {
        start += 1;
    }
    while end > e && !boundary(end) {
        end -= 1;
    }
    (start, end)
}

// ---------------------------------------------------------------------------------------
// Writing

/// Machine mode: every item an event through the emitter.
struct MachineWriter<'e, W: Write> {
    out: &'e mut Emitter<W>,
}

impl<W: Write> ItemWriter for MachineWriter<'_, W> {
    type Error = EmitError;

    fn item(&mut self, file: &FileRef<'_>, rec: &Rec, chunk: &Chunk) -> Result<bool, EmitError> {
        // The worker rendered and escaped the JSON; parsing it back as a `RawValue` only
        // scans it.
        let raw = |range: (usize, usize)| -> Result<&RawValue, EmitError> {
            let json = chunk.arena.get(range.0..range.1).unwrap_or("null");
            serde_json::from_str(json).map_err(|e| EmitError::Serialize(e.to_string()))
        };
        let path = match file.json {
            Some(path) => path,
            None => return Err(EmitError::Serialize("a path did not render".to_owned())),
        };
        let result = match &rec.kind {
            Kind::Line {
                selected,
                line_number,
                byte_offset,
                text,
                base64,
                window,
                subs,
            } => {
                let body = raw(*text)?;
                let (text, bytes_base64) = if *base64 {
                    (None, Some(body))
                } else {
                    (Some(body), None)
                };
                if *selected {
                    self.out.emit(&Match {
                        path,
                        line_number: *line_number,
                        byte_offset: *byte_offset,
                        text,
                        bytes_base64,
                        submatches: raw(*subs)?,
                        line_truncated: window.is_some(),
                        window_start: *window,
                    })
                } else {
                    self.out.emit(&Context {
                        path,
                        line_number: *line_number,
                        byte_offset: *byte_offset,
                        text,
                        bytes_base64,
                        line_truncated: window.is_some(),
                        window_start: *window,
                    })
                }
            }
            Kind::Binary(offset) => self.out.emit(&BinaryFile {
                path,
                byte_offset: *offset,
            }),
            Kind::Count(count) => self.out.emit(&FileCount {
                path,
                count: *count,
            }),
            Kind::FileMatch => self.out.emit(&FileMatch { path }),
            Kind::Error(error) => self.out.error(error),
        };
        match result {
            Ok(()) => Ok(true),
            Err(EmitError::ByteLimit) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(line: &str, first: Option<(usize, usize)>, max: usize) -> &str {
        let (s, e) = window(line.as_bytes(), first, max);
        &line[s..e]
    }

    #[test]
    fn a_window_holds_the_match_on_char_boundaries() {
        let line = format!("{}NEEDLE{}", "é".repeat(100), "ü".repeat(100));
        let s = line.find("NEEDLE").unwrap();
        for max in [6, 7, 10, 33, 101] {
            let w = cut(&line, Some((s, s + 6)), max);
            assert!(w.len() <= max, "{max}");
            assert!(w.contains("NEEDLE"), "{max}: {w}");
        }
        assert_eq!(cut(&line, Some((s, s + 6)), 3), "NEE");
        assert_eq!(cut(&line, None, 5), "éé");
        // Near the end, the window slides back to keep its size.
        let end = line.len();
        let w = cut(&line, Some((end - 2, end)), 20);
        assert!(w.ends_with('ü') && w.len() >= 19);
    }

    #[test]
    fn numbers_are_written_as_decimal() {
        let mut n = String::new();
        for v in [0, 7, 10, 1234567890123, u64::MAX] {
            n.clear();
            push_u64(&mut n, v);
            assert_eq!(n, v.to_string());
        }
    }
}
