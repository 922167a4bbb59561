//! `find` in machine mode: walk directory trees, bounded (§15), one `entry` event per entry
//! found. Human mode is GNU find (uutils findutils, `src/gnu.rs`). GNU's expression
//! (`find . -name '*.rs' -type f --output jsonl`) is [`expr`]'s; without one, fd's spellings
//! and fd's walk (below).
//!
//! Why this file is whole (over 1,000 lines): the arguments, the filters, the order and the
//! parallel walk of one applet, which share the walk's types; the parallel walk goes into a
//! module of its own next.
//!
//! What is walked: each operand (default `.`, shown without the `./` prefix, as `fd` does),
//! skipping hidden names and what `.gitignore`, `.ignore` and git's excludes ignore (inside
//! a git repository, as `fd`), unless `--hidden` / `--no-ignore`. A directory operand is not
//! listed itself (as `find -mindepth 1` and `fd`) unless `--min-depth 0`; an operand that is
//! not a directory is.
//!
//! The order is deterministic: operands as given, and within one, paths compared component
//! by component by their bytes (a directory, then its entries by name, each followed by its
//! own subtree: the order `LC_ALL=C` sorts `find`'s output in when `/` sorts before every
//! other byte). A cursor names the last path a page emitted; the next page skips every path
//! that sorts at or before it (without descending into subtrees that lie wholly before it),
//! so paging visits every entry exactly once even when entries elsewhere come or go.
//!
//! The operand's subtrees are walked by one thread per core (`--threads N`, as `fd -j`), each
//! in that order, and handed out in turn, so any number of threads gives the same items in
//! the same order. At most two subtrees per thread are walked ahead of the output, each only
//! as far as a page can reach. `--follow` walks in one thread: loop detection needs every
//! directory from the operand down.
//!
//! Filters all have to hold: `--name` globs the name, `--glob` the path (as shown, or below
//! the operand; `!GLOB` excludes), `--regex` searches the name (the shown path with
//! `--full-path`), `--type`, `--size`, `--newer-than` / `--older-than` (modification time).
//! Filters choose what is listed, never what is walked: a directory that does not match is
//! still descended into.
//!
//! Problems with one entry are item-scope errors and the walk goes on (§9.1): a directory
//! that cannot be read, an entry that vanished, a symbolic link loop under `--follow`
//! (`SYMLINK_LOOP`), a name that is not UTF-8 (`NAME_NOT_UTF8`). An operand that does not
//! exist or cannot be read fails the run (`ok:false`).
//!
//! Only what a filter needs is `lstat`ed while walking; the event's metadata after.

use std::ffi::OsStr;
use std::fs::{self, FileType, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;

pub mod expr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::SystemTime;

use aoi::app::{App, Limits};
use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::GlobalArgs;
use aoi::{Category, Code, EmitError, ErrorEvent, Outcome};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use clap::{Args, ValueEnum};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;
use serde::Serialize;

use crate::clock::epoch_ms;
use crate::entry::Entry;
use crate::owners::Names;
use crate::page::Bounds;
use crate::paths::{io_error, path_key};
use expr::{Gnu, Subject};

/// The command's name, in events and messages.
/// The command's name, everywhere it is named.
pub const NAME: &str = "find";

/// Find entries in directory trees, gitignore-aware like fd (bounded; sorted by path).
// The command's description, which `aoi-coreutils find --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct FindArgs {
    /// Where to search (default: the current directory).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Include hidden entries (names starting with `.`).
    #[arg(short = 'H', long)]
    pub hidden: bool,
    /// Do not respect `.gitignore`, `.ignore` or git's exclude files.
    #[arg(short = 'I', long)]
    pub no_ignore: bool,
    /// Only entries whose name matches this glob (`*.rs`); repeatable: any may match.
    #[arg(long = "name", value_name = "GLOB")]
    pub names: Vec<String>,
    /// Only entries whose path matches this glob (`src/**/*.rs`), as shown or below the
    /// operand; `!GLOB` excludes; repeatable: any include and no exclude may match.
    #[arg(short = 'g', long = "glob", value_name = "GLOB")]
    pub globs: Vec<String>,
    /// Only entries whose name contains a match of this regular expression (the whole shown
    /// path with --full-path).
    #[arg(short = 'e', long, value_name = "RE")]
    pub regex: Option<String>,
    /// Match --regex against the path as shown rather than the name.
    #[arg(short = 'p', long, requires = "regex")]
    pub full_path: bool,
    /// Only entries of this kind: f (file), d (directory), l (symbolic link); repeatable.
    #[arg(short = 't', long = "type", value_name = "TYPE", value_enum)]
    pub types: Vec<TypeFilter>,
    /// Only regular files of this size: +N at least, -N at most, N exactly; suffixes k, M, G
    /// are powers of 1024 (`+10k`, `-1M`); repeatable: all must hold.
    #[arg(short = 'S', long = "size", value_name = "SIZE", allow_hyphen_values = true, value_parser = parse_size)]
    pub sizes: Vec<SizeFilter>,
    /// Only entries modified at or after this: a duration ago (`30s`, `15min`, `2h`, `7d`,
    /// `2w`) or a UTC date (`2024-01-31`, `2024-01-31T12:00:00Z`).
    #[arg(long, value_name = "WHEN", value_parser = parse_time)]
    pub newer_than: Option<TimeBound>,
    /// Only entries modified before this (same forms as --newer-than).
    #[arg(long, value_name = "WHEN", value_parser = parse_time)]
    pub older_than: Option<TimeBound>,
    /// Descend at most N levels below the operands (1: their entries only).
    #[arg(short = 'd', long, value_name = "N")]
    pub max_depth: Option<usize>,
    /// List only entries at least N levels below the operands (0 lists a directory operand
    /// itself; default 1 for directories, 0 for other operands).
    #[arg(long, value_name = "N")]
    pub min_depth: Option<usize>,
    /// Follow symbolic links (a link is described as what it points to; a loop is an item
    /// error `SYMLINK_LOOP`).
    #[arg(short = 'L', long)]
    pub follow: bool,
    /// Walk with N threads, as `fd -j` (default: one per core). The order and the entries are
    /// the same with any N.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
    /// A word of GNU find's expression (`-name`, `*.rs`, `-type`, `f`, `!`, `(`...), in order:
    /// the command line's GNU words, set apart before parsing (`app::gnu_find_words`).
    #[arg(
        long = "gnu-expr",
        value_name = "WORD",
        hide = true,
        allow_hyphen_values = true
    )]
    pub gnu: Vec<String>,
    #[command(flatten)]
    pub bounds: Bounds,
}

/// A kind `--type` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
pub enum TypeFilter {
    /// A regular file.
    #[value(name = "f", alias = "file")]
    File,
    /// A directory.
    #[value(name = "d", alias = "dir", alias = "directory")]
    Dir,
    /// A symbolic link.
    #[value(name = "l", alias = "symlink")]
    Symlink,
}

/// How `--size` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SizeOp {
    /// `+N`: at least N bytes.
    AtLeast,
    /// `-N`: at most N bytes.
    AtMost,
    /// `N`: exactly N bytes.
    Exactly,
}

/// One `--size` bound, with the text it was given as (which a cursor is bound to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeFilter {
    /// As given.
    pub text: String,
    /// The comparison.
    pub op: SizeOp,
    /// The bound in bytes.
    pub bytes: u64,
}

impl SizeFilter {
    fn holds(&self, size: u64) -> bool {
        match self.op {
            SizeOp::AtLeast => size >= self.bytes,
            SizeOp::AtMost => size <= self.bytes,
            SizeOp::Exactly => size == self.bytes,
        }
    }
}

/// `+N`, `-N` or `N`, with an optional `k`/`M`/`G` suffix (powers of 1024; `b` for bytes).
fn parse_size(text: &str) -> Result<SizeFilter, String> {
    let (op, rest) = match text.as_bytes().first() {
        Some(b'+') => (SizeOp::AtLeast, &text[1..]),
        Some(b'-') => (SizeOp::AtMost, &text[1..]),
        _ => (SizeOp::Exactly, text),
    };
    let digits = rest.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &rest[digits.len()..];
    let scale: u64 = match unit {
        "" | "b" | "B" => 1,
        "k" | "K" | "ki" | "Ki" | "KiB" => 1 << 10,
        "M" | "m" | "Mi" | "MiB" => 1 << 20,
        "G" | "g" | "Gi" | "GiB" => 1 << 30,
        "T" | "t" | "Ti" | "TiB" => 1 << 40,
        _ => return Err(format!("unknown size unit {unit:?} (use k, M, G or T)")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like +10k, -1M or 512"))?;
    let bytes = n
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too large"))?;
    Ok(SizeFilter {
        text: text.to_owned(),
        op,
        bytes,
    })
}

/// A point in time for `--newer-than` / `--older-than`, with the text it was given as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeBound {
    /// As given.
    pub text: String,
    /// When: a span before now, or an instant.
    #[serde(skip)]
    pub when: When,
}

/// The two forms of a [`TimeBound`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Milliseconds before now.
    Ago(i64),
    /// Milliseconds since the Unix epoch.
    At(i64),
}

impl TimeBound {
    /// The instant in milliseconds since the epoch, relative to `now_ms`.
    fn instant(&self, now_ms: i64) -> i64 {
        match self.when {
            When::Ago(ms) => now_ms.saturating_sub(ms),
            When::At(ms) => ms,
        }
    }
}

/// `2h`, `7d`, `30min`, ... or `YYYY-MM-DD[(T| )HH:MM[:SS]][Z]` (UTC).
fn parse_time(text: &str) -> Result<TimeBound, String> {
    let when = parse_duration(text)
        .map(When::Ago)
        .or_else(|| parse_date(text).map(When::At))
        .ok_or_else(|| {
            format!("{text:?} is neither a duration (2h, 7d, 30min) nor a date (2024-01-31)")
        })?;
    Ok(TimeBound {
        text: text.to_owned(),
        when,
    })
}

fn parse_duration(text: &str) -> Option<i64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let n: i64 = digits.parse().ok()?;
    let secs: i64 = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 7 * 86_400,
        "y" | "year" | "years" => 365 * 86_400,
        _ => return None,
    };
    n.checked_mul(secs)?.checked_mul(1000)
}

fn parse_date(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = match text.find(['T', ' ']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let mut parts = date.splitn(3, '-');
    let year: i64 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    let days = days_from_civil(year, month, day)?;
    let mut secs = days.checked_mul(86_400)?;
    if let Some(time) = time {
        let mut hms = time.splitn(3, ':');
        let h: i64 = hms.next()?.parse().ok()?;
        let m: i64 = hms.next()?.parse().ok()?;
        let s: i64 = match hms.next() {
            Some(s) => s.parse().ok()?,
            None => 0,
        };
        if !(0..24).contains(&h) || !(0..60).contains(&m) || !(0..61).contains(&s) {
            return None;
        }
        secs += h * 3600 + m * 60 + s;
    }
    secs.checked_mul(1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date, `None` for a date that does not exist.
fn days_from_civil(year: i64, month: u32, day: u32) -> Option<i64> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (crate::clock::civil_from_days(days) == (year, month, day)).then_some(days)
}

/// What decides the order and content, which a cursor is bound to.
#[derive(Debug, Serialize)]
struct Shape<'a> {
    paths: Vec<String>,
    hidden: bool,
    no_ignore: bool,
    names: &'a [String],
    globs: &'a [String],
    regex: &'a Option<String>,
    full_path: bool,
    types: &'a [TypeFilter],
    sizes: Vec<&'a str>,
    newer_than: Option<&'a str>,
    older_than: Option<&'a str>,
    max_depth: Option<usize>,
    min_depth: Option<usize>,
    follow: bool,
    gnu: &'a [String],
}

fn shape(args: &FindArgs) -> Shape<'_> {
    Shape {
        paths: args.paths.iter().map(|p| path_key(p.as_os_str())).collect(),
        hidden: args.hidden,
        no_ignore: args.no_ignore,
        names: &args.names,
        globs: &args.globs,
        regex: &args.regex,
        full_path: args.full_path,
        types: &args.types,
        sizes: args.sizes.iter().map(|s| s.text.as_str()).collect(),
        newer_than: args.newer_than.as_ref().map(|t| t.text.as_str()),
        older_than: args.older_than.as_ref().map(|t| t.text.as_str()),
        max_depth: args.max_depth,
        min_depth: args.min_depth,
        follow: args.follow,
        gnu: &args.gnu,
    }
}

/// Where an item sits in the order: its operand, its path as walked, and 1 for the error of
/// reading a directory (after the directory, before its entries), else 0.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Position {
    operand: usize,
    path: PathBuf,
    rank: u8,
}

impl Position {
    fn token(&self) -> (usize, String, u8) {
        (self.operand, path_key(self.path.as_os_str()), self.rank)
    }

    fn from_token((operand, key, rank): (usize, String, u8)) -> Result<Position, ErrorEvent> {
        let bytes = STANDARD.decode(key).map_err(|_| bad_cursor())?;
        Ok(Position {
            operand,
            path: PathBuf::from(OsStr::from_bytes(&bytes)),
            rank,
        })
    }

    /// True when this position comes strictly after `other` (in the same operand).
    fn after(&self, path: &Path, rank: u8) -> bool {
        match path.cmp(&self.path) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => rank > self.rank,
            std::cmp::Ordering::Less => false,
        }
    }
}

fn bad_cursor() -> ErrorEvent {
    crate::page::cursor_invalid("the cursor does not name a position of this listing")
}

/// The filters, compiled.
struct Filters {
    min_depth: Option<usize>,
    types: Vec<TypeFilter>,
    names: Option<GlobSet>,
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    regex: Option<regex::bytes::Regex>,
    full_path: bool,
    sizes: Vec<SizeFilter>,
    newer_ms: Option<i64>,
    older_ms: Option<i64>,
    /// GNU's expression.
    gnu: Option<Arc<Gnu>>,
}

impl Filters {
    fn new(args: &FindArgs, gnu: Option<Arc<Gnu>>) -> Result<Filters, ErrorEvent> {
        let glob_set = |globs: &[&str], flag: &str| -> Result<Option<GlobSet>, ErrorEvent> {
            if globs.is_empty() {
                return Ok(None);
            }
            let mut set = GlobSetBuilder::new();
            for glob in globs {
                let compiled = GlobBuilder::new(glob)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| usage(flag, format!("{glob:?} is not a valid glob: {e}")))?;
                set.add(compiled);
            }
            set.build()
                .map(Some)
                .map_err(|e| usage(flag, format!("the globs do not compile: {e}")))
        };
        let names: Vec<&str> = args.names.iter().map(String::as_str).collect();
        let include: Vec<&str> = args
            .globs
            .iter()
            .filter(|g| !g.starts_with('!'))
            .map(String::as_str)
            .collect();
        let exclude: Vec<&str> = args
            .globs
            .iter()
            .filter_map(|g| g.strip_prefix('!'))
            .collect();
        let regex = args
            .regex
            .as_deref()
            .map(|re| {
                regex::bytes::Regex::new(re).map_err(|e| {
                    usage(
                        "regex",
                        format!("{re:?} is not a valid regular expression: {e}"),
                    )
                })
            })
            .transpose()?;
        let now_ms = epoch_ms(SystemTime::now());
        Ok(Filters {
            min_depth: args.min_depth,
            types: args.types.clone(),
            names: glob_set(&names, "name")?,
            include: glob_set(&include, "glob")?,
            exclude: glob_set(&exclude, "glob")?,
            regex,
            full_path: args.full_path,
            sizes: args.sizes.clone(),
            newer_ms: args.newer_than.as_ref().map(|t| t.instant(now_ms)),
            older_ms: args.older_than.as_ref().map(|t| t.instant(now_ms)),
            gnu,
        })
    }

    /// Whether the filters need the entry's metadata.
    fn need_metadata(&self) -> bool {
        !self.sizes.is_empty()
            || self.newer_ms.is_some()
            || self.older_ms.is_some()
            || self.gnu.as_ref().is_some_and(|g| g.needs_metadata)
    }

    /// Whether what is known without `lstat` lets the entry through.
    fn accept_cheap(&self, c: &Candidate<'_>) -> bool {
        let min = self
            .min_depth
            .unwrap_or(usize::from(c.depth == 0 && c.is_dir()));
        if c.depth < min {
            return false;
        }
        if !self.types.is_empty() {
            let Some(t) = c.file_type else {
                return false;
            };
            let kind = if t.is_symlink() {
                Some(TypeFilter::Symlink)
            } else if t.is_dir() {
                Some(TypeFilter::Dir)
            } else if t.is_file() {
                Some(TypeFilter::File)
            } else {
                None
            };
            if !kind.is_some_and(|k| self.types.contains(&k)) {
                return false;
            }
        }
        if let Some(names) = &self.names {
            if !names.is_match(c.name) {
                return false;
            }
        }
        if self.include.is_some() || self.exclude.is_some() {
            let shown = c.shown;
            let below = c.below();
            let matches = |set: &GlobSet| set.is_match(shown) || set.is_match(below);
            if self.include.as_ref().is_some_and(|s| !matches(s)) {
                return false;
            }
            if self.exclude.as_ref().is_some_and(matches) {
                return false;
            }
        }
        if let Some(re) = &self.regex {
            let text = if self.full_path {
                c.shown
            } else {
                Path::new(c.name)
            };
            if !re.is_match(text.as_os_str().as_bytes()) {
                return false;
            }
        }
        true
    }

    /// Whether the metadata lets the entry through.
    fn accept_metadata(&self, metadata: &Metadata) -> bool {
        let sized = metadata.is_file() && self.sizes.iter().all(|s| s.holds(metadata.len()));
        if !self.sizes.is_empty() && !sized {
            return false;
        }
        let mtime = metadata.mtime() * 1000 + metadata.mtime_nsec() / 1_000_000;
        if self.newer_ms.is_some_and(|t| mtime < t) {
            return false;
        }
        if self.older_ms.is_some_and(|t| mtime >= t) {
            return false;
        }
        true
    }
}

fn usage(flag: &str, message: String) -> ErrorEvent {
    ErrorEvent::new(
        Category::Usage,
        Code::from_static("PATTERN_INVALID"),
        message,
    )
    .field(flag.to_owned())
}

/// What the filters look at.
struct Candidate<'a> {
    depth: usize,
    file_type: Option<FileType>,
    name: &'a OsStr,
    shown: &'a Path,
    path: &'a Path,
    root: &'a Path,
}

impl Candidate<'_> {
    fn is_dir(&self) -> bool {
        self.file_type.is_some_and(|t| t.is_dir())
    }

    /// The path below the operand.
    fn below(&self) -> &Path {
        self.path.strip_prefix(self.root).unwrap_or(self.path)
    }
}

/// One item of the walk, in order.
enum Found {
    /// An entry that passed the filters.
    Entry(Hit),
    /// A problem with one entry.
    Error(Position, ErrorEvent),
}

/// An entry that passed the filters.
struct Hit {
    position: Position,
    /// Bytes of the walked path's `./` prefix not shown.
    strip: bool,
    depth: usize,
    metadata: Option<Result<Metadata, io::Error>>,
}

impl Hit {
    /// The path as shown.
    fn shown(&self) -> &Path {
        shown(&self.position.path, self.strip)
    }

    fn name(&self) -> &OsStr {
        name(&self.position.path, self.depth)
    }

    /// The `entry` event, or the item error that stands in its place.
    fn entry(&mut self, names: &mut Names, follow: bool) -> Result<Entry, ErrorEvent> {
        let metadata = match self.metadata.take() {
            Some(m) => m,
            None => metadata(&self.position.path, follow),
        };
        let metadata = metadata.map_err(|e| io_error(self.shown(), &e))?;
        let shown = self.shown();
        let mut entry = Entry::new(shown, Path::new(self.name()), &metadata, names)?;
        entry.depth = Some(self.depth);
        Ok(entry)
    }
}

/// The path as shown: without the walk's `./` when the operand was implicit. (Byte slicing:
/// parsing components for every entry costs more than the rest of the walk.)
fn shown(path: &Path, strip: bool) -> &Path {
    let bytes = path.as_os_str().as_bytes();
    match bytes.strip_prefix(b"./") {
        Some(rest) if strip => Path::new(OsStr::from_bytes(rest)),
        _ => path,
    }
}

/// The last component of a walked path: after its last `/` below the operand (which the
/// walker joined with one), the whole operand's name at depth 0.
fn name(path: &Path, depth: usize) -> &OsStr {
    let bytes = path.as_os_str().as_bytes();
    match memchr::memrchr(b'/', bytes) {
        Some(at) if depth > 0 => OsStr::from_bytes(&bytes[at + 1..]),
        _ => path.file_name().unwrap_or(path.as_os_str()),
    }
}

fn metadata(path: &Path, follow: bool) -> io::Result<Metadata> {
    if follow {
        // A dangling link is still an entry (a link), as `find -L` lists it.
        fs::metadata(path).or_else(|e| match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => Ok(m),
            _ => Err(e),
        })
    } else {
        fs::symlink_metadata(path)
    }
}

/// The operands, as walked, each with whether its `./` prefix is hidden when shown.
fn operands(args: &FindArgs) -> Vec<(PathBuf, bool)> {
    if args.paths.is_empty() {
        return vec![(PathBuf::from("."), true)];
    }
    args.paths
        .iter()
        .map(|p| {
            // The walker reads `-` as standard input.
            if p.as_os_str() == "-" {
                (PathBuf::from("./-"), false)
            } else {
                (p.clone(), false)
            }
        })
        .collect()
}

/// Walks every operand in order, after `resume`, calling `visit` with each item until it
/// says stop. `budget` is the most items `visit` takes (a page and one more), which bounds
/// what a parallel walk holds. Returns true when an operand could not be read (the run
/// failed).
fn walk(
    args: &FindArgs,
    filters: &Filters,
    resume: Option<&Position>,
    want_metadata: bool,
    budget: usize,
    visit: &mut dyn FnMut(Found) -> bool,
) -> bool {
    let mut failed = false;
    let need_metadata = filters.need_metadata();
    for (operand, (root, strip)) in operands(args).into_iter().enumerate() {
        let resume = match resume {
            Some(c) if c.operand > operand => continue,
            Some(c) if c.operand == operand => Some(c),
            _ => None,
        };
        let root_metadata = match metadata(&root, args.follow) {
            Ok(m) => m,
            Err(e) => {
                failed = true;
                let position = Position {
                    operand,
                    path: root.clone(),
                    rank: 0,
                };
                if resume.is_some_and(|c| !c.after(&root, 0)) {
                    continue;
                }
                if !visit(Found::Error(position, io_error(shown(&root, strip), &e))) {
                    return failed;
                }
                continue;
            }
        };
        let tree = Tree {
            args,
            resume,
            look: Look {
                filters,
                root: &root,
                strip,
                operand,
                metadata: need_metadata || want_metadata,
                follow: args.follow,
            },
        };
        let go_on = match workers(args, &root_metadata) {
            Some(threads) => tree.walk_parallel(threads, budget, &mut failed, visit),
            None => tree.walk_from(
                &root,
                0,
                args.max_depth,
                false,
                &mut failed,
                &mut |s| match s {
                    Step::Found(found) => visit(found),
                    // Only a split walk hands out subtrees; this one is not split.
                    Step::Descend(_) => true,
                },
            ),
        };
        if !go_on {
            return failed;
        }
    }
    failed
}

/// How many threads walk an operand's subtrees, or `None` to walk it in one: a directory
/// operand with subtrees below its entries, on more than one core, without `--follow`
/// (whose loop detection needs the whole chain of directories from the operand down).
fn workers(args: &FindArgs, root: &Metadata) -> Option<usize> {
    let threads = match args.threads {
        Some(n) => usize::from(n),
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let deep = args.max_depth.is_none_or(|d| d > 1);
    (threads > 1 && deep && !args.follow && root.is_dir()).then_some(threads)
}

/// One item of a walk, or (in a split walk) a directory below the operand whose subtree is
/// walked on its own, the directory itself included.
#[allow(
    clippy::large_enum_variant,
    reason = "a step goes straight into `visit` or a page's vector; a box would cost an allocation per entry"
)]
enum Step {
    Found(Found),
    Descend(PathBuf),
}

/// The walk of one operand.
struct Tree<'a> {
    args: &'a FindArgs,
    resume: Option<&'a Position>,
    look: Look<'a>,
}

impl Tree<'_> {
    /// The operand's own entries in order, its subtrees walked by `threads` threads, each
    /// subtree in order, and handed to `visit` in order: the same items as one walk. At most
    /// `2 × threads` subtrees are walked ahead of `visit`, and each holds at most `budget`
    /// items, so a page of a huge tree costs no more than a page.
    fn walk_parallel(
        &self,
        threads: usize,
        budget: usize,
        failed: &mut bool,
        visit: &mut dyn FnMut(Found) -> bool,
    ) -> bool {
        use std::sync::atomic::AtomicUsize;
        use std::sync::{Condvar, Mutex};

        let root = self.look.root;
        // The operand's own entries; once `budget` of them are in, no later step is needed.
        let mut steps = Vec::new();
        let mut entries = 0usize;
        self.walk_from(root, 0, Some(1), true, failed, &mut |s| {
            entries += usize::from(matches!(s, Step::Found(_)));
            steps.push(s);
            entries < budget
        });
        // The workers read the directories, `visit` takes the entries.
        let (mut direct, dirs): (Vec<Option<Found>>, Vec<Option<PathBuf>>) = steps
            .into_iter()
            .map(|s| match s {
                Step::Found(found) => (Some(found), None),
                Step::Descend(dir) => (None, Some(dir)),
            })
            .unzip();
        let below = self.args.max_depth.map(|d| d - 1);
        let window = 2 * threads;
        // `done[i]`: the items of step i's subtree once walked; `taken`: steps `visit` has
        // had, which bounds how far ahead the workers go.
        let state = Mutex::new((
            (0..dirs.len())
                .map(|_| None)
                .collect::<Vec<Option<Vec<Found>>>>(),
            0usize,
        ));
        let changed = Condvar::new();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let lock = || {
            state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                    if i >= dirs.len() || stop.load(AtomicOrdering::Relaxed) {
                        return;
                    }
                    let Some(dir) = &dirs[i] else {
                        continue;
                    };
                    {
                        let mut s = lock();
                        while i >= s.1 + window && !stop.load(AtomicOrdering::Relaxed) {
                            s = changed
                                .wait(s)
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                        }
                    }
                    if stop.load(AtomicOrdering::Relaxed) {
                        return;
                    }
                    let mut items = Vec::new();
                    let mut never = false;
                    self.walk_from(dir, 1, below, false, &mut never, &mut |s| {
                        if let Step::Found(found) = s {
                            items.push(found);
                        }
                        items.len() < budget && !stop.load(AtomicOrdering::Relaxed)
                    });
                    lock().0[i] = Some(items);
                    changed.notify_all();
                });
            }
            let mut go_on = true;
            for (i, entry) in direct.iter_mut().enumerate() {
                let items = match entry.take() {
                    Some(found) => vec![found],
                    None => {
                        let mut s = lock();
                        loop {
                            if let Some(items) = s.0[i].take() {
                                break items;
                            }
                            s = changed
                                .wait(s)
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                        }
                    }
                };
                lock().1 = i + 1;
                changed.notify_all();
                if !items.into_iter().all(&mut *visit) {
                    go_on = false;
                    break;
                }
            }
            // Under the lock, so that no worker checks `stop` and then misses the wake-up.
            let guard = lock();
            stop.store(true, AtomicOrdering::Relaxed);
            drop(guard);
            changed.notify_all();
            go_on
        })
    }

    /// Walks `start` (the operand, or a directory below it at depth `offset`) in order, to
    /// `max_depth` below it, after the cursor, calling `visit` until it says stop. `split`:
    /// a directory at depth 1 is a [`Step::Descend`], not an entry. Returns false when
    /// `visit` stopped the walk.
    fn walk_from(
        &self,
        start: &Path,
        offset: usize,
        max_depth: Option<usize>,
        split: bool,
        failed: &mut bool,
        visit: &mut dyn FnMut(Step) -> bool,
    ) -> bool {
        let args = self.args;
        let resume = self.resume;
        let mut builder = WalkBuilder::new(start);
        let ignore = !args.no_ignore;
        builder
            .hidden(!args.hidden)
            .parents(ignore)
            .ignore(ignore)
            .git_ignore(ignore)
            .git_global(ignore)
            .git_exclude(ignore)
            .follow_links(args.follow)
            .max_depth(max_depth)
            // Siblings share their parent's path, so comparing whole paths by bytes orders
            // them by name, without parsing components.
            .sort_by_file_path(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
        // Past the cursor, every later path is too: stop comparing.
        let past = Arc::new(AtomicBool::new(resume.is_none()));
        let gnu = self.look.filters.gnu.clone();
        builder.same_file_system(gnu.as_ref().is_some_and(|g| g.same_file_system));
        let prune = gnu.filter(|g| g.prunes);
        if resume.is_some() || prune.is_some() {
            let cursor = resume.map(|c| c.path.clone());
            let past = Arc::clone(&past);
            let pruned = Pruned {
                gnu: prune,
                strip: self.look.strip,
                follow: args.follow,
                offset,
                last: std::sync::Mutex::new(None),
            };
            builder.filter_entry(move |e| {
                let after_cursor = cursor.as_ref().is_none_or(|cursor| {
                    past.load(AtomicOrdering::Relaxed)
                        || e.path() > cursor.as_path()
                        || cursor.starts_with(e.path())
                });
                after_cursor && !pruned.below_pruned(e)
            });
        }
        let mut last_dir: Option<PathBuf> = None;
        for result in builder.build() {
            let found = match result {
                Ok(ent) => {
                    let depth = ent.depth() + offset;
                    let file_type = ent.file_type();
                    let is_dir = file_type.is_some_and(|t| t.is_dir());
                    if split && depth == 1 && is_dir {
                        // Its subtree (itself first) is walked on its own, cursor and all.
                        if !visit(Step::Descend(ent.into_path())) {
                            return false;
                        }
                        continue;
                    }
                    if !past.load(AtomicOrdering::Relaxed) {
                        if resume.is_some_and(|c| !c.after(ent.path(), 0)) {
                            if is_dir {
                                last_dir = Some(ent.path().to_path_buf());
                            }
                            continue;
                        }
                        past.store(true, AtomicOrdering::Relaxed);
                    }
                    if is_dir {
                        last_dir = Some(ent.path().to_path_buf());
                    }
                    match self.look.hit(ent.into_path(), depth, file_type) {
                        Some(hit) => Found::Entry(hit),
                        None => continue,
                    }
                }
                Err(err) => {
                    let Some(path) = error_path(&err).map(Path::to_path_buf) else {
                        continue;
                    };
                    let rank = u8::from(last_dir.as_deref() == Some(path.as_path()));
                    if !past.load(AtomicOrdering::Relaxed) {
                        if resume.is_some_and(|c| !c.after(&path, rank)) {
                            continue;
                        }
                        past.store(true, AtomicOrdering::Relaxed);
                    }
                    if path == self.look.root {
                        *failed = true;
                    }
                    if let Some(link) = args.follow.then(|| dangling(&err, &path)).flatten() {
                        let depth = err.depth().unwrap_or(0) + offset;
                        match self.look.hit(path, depth, Some(link)) {
                            Some(hit) => Found::Entry(hit),
                            None => continue,
                        }
                    } else {
                        let error = walk_error(&err, shown(&path, self.look.strip));
                        Found::Error(
                            Position {
                                operand: self.look.operand,
                                path,
                                rank,
                            },
                            error,
                        )
                    }
                }
            };
            if !visit(Step::Found(found)) {
                return false;
            }
        }
        true
    }
}

/// GNU's `-prune`: an entry is not walked when the expression, evaluated on its directory,
/// reached `-prune` (whatever the cursor or the threads, so every page walks the same tree).
struct Pruned {
    gnu: Option<Arc<Gnu>>,
    strip: bool,
    follow: bool,
    /// The depth of the walk's start below the operand.
    offset: usize,
    /// The last directory looked at, and whether it was pruned: a directory's entries come
    /// together.
    last: std::sync::Mutex<Option<(PathBuf, bool)>>,
}

impl Pruned {
    fn below_pruned(&self, entry: &ignore::DirEntry) -> bool {
        let Some(gnu) = &self.gnu else {
            return false;
        };
        if entry.depth() == 0 {
            return false;
        }
        let Some(parent) = entry.path().parent() else {
            return false;
        };
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((dir, pruned)) = last.as_ref() {
            if dir == parent {
                return *pruned;
            }
        }
        let depth = entry.depth() - 1 + self.offset;
        let meta = metadata(parent, self.follow).ok();
        let subject = Subject {
            name: name(parent, depth),
            shown: shown(parent, self.strip),
            path: parent,
            file_type: meta.as_ref().map(Metadata::file_type),
            metadata: meta.as_ref(),
        };
        let mut effects = expr::Effects::default();
        gnu.expr.eval(&subject, &mut effects);
        *last = Some((parent.to_path_buf(), effects.pruned));
        effects.pruned
    }
}

/// How the walk of one operand turns a path into a [`Hit`].
struct Look<'a> {
    filters: &'a Filters,
    root: &'a Path,
    strip: bool,
    operand: usize,
    /// Read the metadata (for a filter, the event or the colour).
    metadata: bool,
    follow: bool,
}

impl Look<'_> {
    /// The hit for `path`, or `None` when a filter leaves it out.
    fn hit(&self, path: PathBuf, depth: usize, file_type: Option<FileType>) -> Option<Hit> {
        let candidate = Candidate {
            depth,
            file_type,
            name: name(&path, depth),
            shown: shown(&path, self.strip),
            path: &path,
            root: self.root,
        };
        if !self.filters.accept_cheap(&candidate) {
            return None;
        }
        let metadata = if self.metadata {
            let m = metadata(&path, self.follow);
            if let Ok(m) = &m {
                if !self.filters.accept_metadata(m) {
                    return None;
                }
            }
            Some(m)
        } else {
            None
        };
        if let Some(gnu) = &self.filters.gnu {
            let subject = Subject {
                name: candidate.name,
                shown: candidate.shown,
                path: &path,
                file_type,
                metadata: metadata.as_ref().and_then(|m| m.as_ref().ok()),
            };
            if !gnu.lists(&subject) {
                return None;
            }
        }
        Some(Hit {
            position: Position {
                operand: self.operand,
                path,
                rank: 0,
            },
            strip: self.strip,
            depth,
            metadata,
        })
    }
}

/// The file type of a dangling symbolic link the walk could not follow (`find -L` lists
/// one as a link), or `None` for any other error.
fn dangling(err: &ignore::Error, path: &Path) -> Option<FileType> {
    if err.io_error()?.kind() != io::ErrorKind::NotFound {
        return None;
    }
    let t = fs::symlink_metadata(path).ok()?.file_type();
    t.is_symlink().then_some(t)
}

/// The path an error of the walk is about.
fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child),
        ignore::Error::Partial(errs) => errs.first().and_then(error_path),
        _ => None,
    }
}

/// The loop of an error of the walk, if it is one.
fn error_loop(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => error_loop(err),
        ignore::Error::Loop { ancestor, .. } => Some(ancestor),
        _ => None,
    }
}

/// The item error for an error of the walk about `shown`.
fn walk_error(err: &ignore::Error, shown: &Path) -> ErrorEvent {
    if let Some(ancestor) = error_loop(err) {
        return ErrorEvent::new(
            Category::Io,
            Code::from_static("SYMLINK_LOOP"),
            format!(
                "{}: a symbolic link loop back to {}",
                crate::paths::display(shown),
                crate::paths::display(ancestor)
            ),
        )
        .item()
        .target(String::from_utf8_lossy(shown.as_os_str().as_bytes()).into_owned());
    }
    match err.io_error() {
        Some(io) => io_error(shown, io),
        None => ErrorEvent::new(
            Category::Io,
            Code::from_static("IO_ERROR"),
            format!("{}: {err}", crate::paths::display(shown)),
        )
        .item()
        .target(String::from_utf8_lossy(shown.as_os_str().as_bytes()).into_owned()),
    }
}

/// What a run needs before it walks: the limit, the cursor's position, the filters.
fn prepare(
    args: &FindArgs,
    codec: &CursorCodec,
    gnu: Option<Arc<Gnu>>,
) -> Result<(usize, Option<Position>, Filters), ErrorEvent> {
    let limit = args.bounds.checked_limit()?;
    let resume = match args.bounds.cursor.as_deref() {
        None => None,
        Some(c) => Some(Position::from_token(codec.decode(c)?)?),
    };
    Ok((limit, resume, Filters::new(args, gnu)?))
}

/// The arguments as GNU's expression has them: with one, the walk is GNU find's (hidden and
/// ignored entries found, the start path listed and shown as given) and its options set the
/// depths and links.
fn with_gnu(mut args: FindArgs, gnu: Option<&Arc<Gnu>>) -> FindArgs {
    let Some(gnu) = gnu else {
        return args;
    };
    args.hidden = true;
    args.no_ignore = true;
    args.min_depth = Some(gnu.min_depth.unwrap_or(0));
    args.max_depth = gnu.max_depth.or(args.max_depth);
    args.follow |= gnu.follow;
    if args.paths.is_empty() {
        args.paths.push(PathBuf::from("."));
    }
    args
}

/// Runs `find` (machine mode: human mode is GNU find's, `src/gnu.rs`).
pub fn run(app: &App, global: &GlobalArgs, args: FindArgs) -> ExitCode {
    // GNU's expression: parsed here, its error reported in the stream below.
    let gnu = (!args.gnu.is_empty()).then(|| {
        let now_s = epoch_ms(SystemTime::now()).div_euclid(1000);
        expr::parse(&args.gnu, now_s).map(Arc::new)
    });
    let args = with_gnu(args, gnu.as_ref().and_then(|g| g.as_ref().ok()));
    let codec = CursorCodec::new(NAME, &shape(&args));
    let limits = Limits {
        max_bytes: args.bounds.max_bytes,
        ..Limits::default()
    };
    app.run_with(global, limits, |out| {
        let gnu = gnu.transpose()?;
        let (limit, resume, filters) = prepare(&args, &codec, gnu)?;
        let mut names = Names::default();
        let mut count = 0usize;
        let mut last: Option<Position> = None;
        let mut more = false;
        let mut cut = false;
        let mut failure: Option<EmitError> = None;
        let failed = walk(
            &args,
            &filters,
            resume.as_ref(),
            true,
            limit.saturating_add(1),
            &mut |found| {
                if count >= limit {
                    more = true;
                    return false;
                }
                let (written, position) = match found {
                    Found::Entry(mut hit) => {
                        let written = match hit.entry(&mut names, args.follow) {
                            Ok(entry) => out.emit(&entry),
                            Err(error) => out.error(&error),
                        };
                        (written, hit.position)
                    }
                    Found::Error(position, error) => (out.error(&error), position),
                };
                match written {
                    Ok(()) => {
                        count += 1;
                        last = Some(position);
                        true
                    }
                    Err(EmitError::ByteLimit) => {
                        cut = true;
                        false
                    }
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            },
        );
        if let Some(e) = failure {
            return Err(e.into());
        }
        let mut outcome = if failed {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        if more || cut {
            outcome = outcome.truncated(last.map(|p| codec.encode(&p.token())));
        }
        Ok(outcome)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_a_sign_and_a_binary_suffix() {
        let s = parse_size("+10k").unwrap();
        assert_eq!((s.op, s.bytes), (SizeOp::AtLeast, 10 * 1024));
        let s = parse_size("-1M").unwrap();
        assert_eq!((s.op, s.bytes), (SizeOp::AtMost, 1 << 20));
        let s = parse_size("512").unwrap();
        assert_eq!((s.op, s.bytes), (SizeOp::Exactly, 512));
        assert!(parse_size("+1X").is_err());
        assert!(parse_size("+").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }

    #[test]
    fn times_are_durations_or_utc_dates() {
        assert_eq!(parse_time("2h").unwrap().when, When::Ago(2 * 3600 * 1000));
        assert_eq!(parse_time("7d").unwrap().when, When::Ago(7 * 86_400 * 1000));
        assert_eq!(parse_time("30min").unwrap().when, When::Ago(30 * 60 * 1000));
        assert_eq!(
            parse_time("2000-02-29").unwrap().when,
            When::At(951_782_400_000)
        );
        assert_eq!(
            parse_time("2000-02-29T00:00:01Z").unwrap().when,
            When::At(951_782_401_000)
        );
        assert!(parse_time("2001-02-29").is_err(), "no such day");
        assert!(parse_time("2h30").is_err());
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn the_path_order_is_component_wise() {
        // `a/b` sorts before `a-c` although `/` is a larger byte than `-`: a directory's
        // subtree comes right after it, as the walk yields it.
        let mut paths = vec![Path::new("a-c"), Path::new("a/b"), Path::new("a")];
        paths.sort();
        assert_eq!(paths, [Path::new("a"), Path::new("a/b"), Path::new("a-c")]);
        let c = Position {
            operand: 0,
            path: PathBuf::from("a/b"),
            rank: 0,
        };
        assert!(c.after(Path::new("a-c"), 0));
        assert!(!c.after(Path::new("a/b"), 0));
        assert!(c.after(Path::new("a/b"), 1));
        assert!(c.after(Path::new("a/b/c"), 0));
        assert!(!c.after(Path::new("a"), 1));
    }
}
