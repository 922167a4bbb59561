//! `ls`: list directory contents, bounded (§15), one `entry` event per entry.
//!
//! The order is deterministic: operands that are not directories first (sorted), then each
//! directory's entries; within a directory by name (bytes, as `LC_ALL=C ls`), or newest first
//! with `-t`, largest first with `-S`, reversed with `-r`. `-R` lists a directory's entries
//! and then descends into its subdirectories in that order. A cursor resumes after the last
//! item of a page, so paging visits every entry exactly once.

use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::io::{self, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::{App, Limits};
use aoi::surface::color::Paint;
use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::GlobalArgs;
use aoi::surface::term::printable_line;
use aoi::ErrorEvent;
use clap::Args;
use serde::Serialize;

use crate::entry::Entry;
use crate::owners::Names;
use crate::page::{Bounds, Item, Page};
use crate::paths::{io_error, path_key};
use crate::report::{human_exit, more_note, say_error};

/// The command's name, everywhere it is named.
pub const NAME: &str = "ls";

/// List directory contents (bounded; sorted by name unless -t or -S).
// The command's description, which `aoi-coreutils ls --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    /// Files or directories to list (default: the current directory).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Long listing: permissions, links, owner, group, size, time (human mode).
    #[arg(short = 'l')]
    pub long: bool,
    /// Include entries whose names start with `.`, and `.` and `..`.
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Include entries whose names start with `.`, but not `.` and `..`.
    #[arg(short = 'A', long = "almost-all")]
    pub almost_all: bool,
    /// List subdirectories recursively.
    #[arg(short = 'R', long = "recursive")]
    pub recursive: bool,
    /// List directories themselves, not their contents.
    #[arg(short = 'd', long = "directory")]
    pub directory: bool,
    /// Sort by modification time, newest first.
    #[arg(short = 't')]
    pub by_time: bool,
    /// Sort by size, largest first.
    #[arg(short = 'S')]
    pub by_size: bool,
    /// Reverse the order.
    #[arg(short = 'r', long = "reverse")]
    pub reverse: bool,
    /// One entry per line (human mode; the default when stdout is not a terminal).
    #[arg(short = '1')]
    pub one_per_line: bool,
    #[command(flatten)]
    pub display: crate::display::LsDisplay,
    #[command(flatten)]
    pub help: crate::display::LongHelp,
    #[command(flatten)]
    pub bounds: Bounds,
}

/// What decides the order and content, which a cursor is bound to.
#[derive(Debug, Serialize)]
struct Shape<'a> {
    paths: Vec<String>,
    all: bool,
    almost_all: bool,
    recursive: bool,
    directory: bool,
    by_time: bool,
    by_size: bool,
    reverse: bool,
    #[serde(skip)]
    _p: std::marker::PhantomData<&'a ()>,
}

/// One listed entry before it becomes an event: where it is and what it is.
struct Found {
    path: PathBuf,
    name: OsString,
    metadata: Metadata,
}

/// Runs `ls`.
pub fn run(app: &App, global: &GlobalArgs, args: LsArgs) -> ExitCode {
    let codec = CursorCodec::new(NAME, &shape(&args));
    if !global.machine() {
        return human(&args, &codec);
    }
    let limits = Limits {
        max_bytes: args.bounds.max_bytes,
        ..Limits::default()
    };
    app.run_with(global, limits, |out| {
        let (page, _) = list(&args, &codec)?;
        Ok(page.emit(out, &codec)?)
    })
}

fn shape(args: &LsArgs) -> Shape<'static> {
    Shape {
        paths: operands(args)
            .iter()
            .map(|p| path_key(p.as_os_str()))
            .collect(),
        all: args.all,
        almost_all: args.almost_all,
        recursive: args.recursive,
        directory: args.directory,
        by_time: args.by_time,
        by_size: args.by_size,
        reverse: args.reverse,
        _p: std::marker::PhantomData,
    }
}

fn operands(args: &LsArgs) -> Vec<PathBuf> {
    if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    }
}

/// A position: the item's ordinal in the whole listing and its path, so a page resumes after
/// the same entry even when entries before it came or went.
fn position(ordinal: u64, path: &Path) -> String {
    let mut key = ordinal.to_string();
    key.push('/');
    key.push_str(&path_key(path.as_os_str()));
    key
}

/// A run of consecutive items of a page listed in the same directory (`None`: operands).
#[derive(Debug)]
struct Group {
    dir: Option<PathBuf>,
    items: usize,
}

/// A page and the directories its items were listed in, as runs in page order.
type Listing = (Page<Entry>, Vec<Group>);

/// Lists one page.
fn list(args: &LsArgs, codec: &CursorCodec) -> Result<Listing, ErrorEvent> {
    let limit = args.bounds.checked_limit()?;
    let after = args.bounds.position::<String>(codec)?;
    let mut names = Names::default();
    let mut page = Page::default();
    let mut ordinal: u64 = 0;
    // Resume: skip the first n items of the (deterministic) order, the nth being the one the
    // cursor names; if it is not, the listing changed and the page could skip or repeat
    // entries, so the cursor is refused.
    let resume: Option<(u64, String)> = match after.as_deref() {
        None => None,
        Some(p) => {
            let (n, k) = p.split_once('/').ok_or_else(stale)?;
            Some((n.parse().map_err(|_| stale())?, k.to_owned()))
        }
    };
    let mut stale_at: Option<u64> = None;
    let mut groups: Vec<Group> = Vec::new();
    let mut visit = |path: &Path,
                     item: Result<&Found, ErrorEvent>,
                     page: &mut Page<Entry>,
                     group: Option<&Path>| {
        ordinal += 1;
        if let Some((n, k)) = &resume {
            if ordinal < *n {
                return true;
            }
            if ordinal == *n {
                if *k != path_key(path.as_os_str()) {
                    stale_at = Some(ordinal);
                    return false;
                }
                return true;
            }
        }
        if page.len() >= limit {
            page.more = true;
            return false;
        }
        let key = position(ordinal, path);
        match item.and_then(|f| Entry::new(&f.path, Path::new(&f.name), &f.metadata, &mut names)) {
            Ok(entry) => page.event(key, entry),
            Err(error) => page.error(key, error),
        }
        match groups.last_mut() {
            Some(last) if last.dir.as_deref() == group => last.items += 1,
            _ => groups.push(Group {
                dir: group.map(Path::to_path_buf),
                items: 1,
            }),
        }
        true
    };

    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for path in operands(args) {
        match fs::symlink_metadata(&path) {
            Ok(meta) => {
                // A link to a directory given as an operand is listed as the directory (as ls
                // does without -l's own rules); -d lists it as itself.
                let is_dir = meta.is_dir()
                    || (meta.file_type().is_symlink()
                        && !args.long
                        && fs::metadata(&path).is_ok_and(|m| m.is_dir()));
                if is_dir && !args.directory {
                    dirs.push(path);
                } else {
                    let name = path.clone().into_os_string();
                    files.push(Found {
                        path,
                        name,
                        metadata: meta,
                    });
                }
            }
            Err(e) => {
                page.failed = true;
                let error = io_error(&path, &e);
                if !visit(&path, Err(error), &mut page, None) {
                    return Ok((page, groups));
                }
            }
        }
    }
    walk_rest(args, files, dirs, limit, &mut page, &mut visit);
    if stale_at.is_some() {
        return Err(stale());
    }
    if let Some((n, _)) = resume {
        if ordinal < n {
            return Err(stale());
        }
    }
    Ok((page, groups))
}

/// The cursor's entry is no longer where it was: the listing changed between pages.
fn stale() -> ErrorEvent {
    crate::page::cursor_stale("the listing changed")
}

type Visit<'a> =
    dyn FnMut(&Path, Result<&Found, ErrorEvent>, &mut Page<Entry>, Option<&Path>) -> bool + 'a;

/// Visits the files given as operands, then each directory's entries (and, with -R, its
/// subdirectories'), until `visit` says stop (a page holds at most `limit` items).
fn walk_rest(
    args: &LsArgs,
    mut files: Vec<Found>,
    dirs: Vec<PathBuf>,
    limit: usize,
    page: &mut Page<Entry>,
    visit: &mut Visit<'_>,
) {
    sort(&mut files, args);
    for f in &files {
        if !visit(&f.path, Ok(f), page, None) {
            return;
        }
    }
    let mut dirs = dirs;
    dirs.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    let mut stack: Vec<(PathBuf, bool)> = dirs.into_iter().rev().map(|d| (d, true)).collect();
    while let Some((dir, top)) = stack.pop() {
        let entries = match read_dir(&dir, args) {
            Ok(entries) => entries,
            Err(e) => {
                if top {
                    page.failed = true;
                }
                if !visit(&dir, Err(io_error(&dir, &e)), page, None) {
                    return;
                }
                continue;
            }
        };
        let mut subdirs = Vec::new();
        page.items
            .reserve(entries.len().min(limit.saturating_sub(page.len())));
        for found in entries {
            let descend = args.recursive
                && found.metadata.is_dir()
                && found.name != OsStr::new(".")
                && found.name != OsStr::new("..");
            if descend {
                subdirs.push(found.path.clone());
            }
            if !visit(&found.path, Ok(&found), page, Some(&dir)) {
                return;
            }
        }
        for sub in subdirs.into_iter().rev() {
            stack.push((sub, false));
        }
    }
}

/// A directory's entries, filtered and sorted.
fn read_dir(dir: &Path, args: &LsArgs) -> io::Result<Vec<Found>> {
    let mut out = Vec::new();
    if args.all {
        for special in [".", ".."] {
            let path = dir.join(special);
            if let Ok(metadata) = fs::symlink_metadata(&path) {
                out.push(Found {
                    path,
                    name: OsString::from(special),
                    metadata,
                });
            }
        }
    }
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.as_bytes().first() == Some(&b'.') && !(args.all || args.almost_all) {
            continue;
        }
        // An entry that vanished between readdir and lstat is skipped, as ls does. (The
        // metadata is the entry's own, not followed, taken relative to the open directory.)
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        let path = join(dir, &name);
        out.push(Found {
            path,
            name,
            metadata,
        });
    }
    sort(&mut out, args);
    Ok(out)
}

/// `dir/name`, without a leading `./` for the current directory given implicitly.
fn join(dir: &Path, name: &OsStr) -> PathBuf {
    if dir == Path::new(".") {
        PathBuf::from(name)
    } else {
        dir.join(name)
    }
}

/// What `sort` compares, in order, and the item's index: the -t or -S number (descending),
/// the name's first eight bytes, the name.
type SortKey<'a> = ((i64, i64), u64, &'a [u8], usize);

/// Sorts by name, or newest or largest first (then by name), reversed with -r.
fn sort(items: &mut [Found], args: &LsArgs) {
    // A `Found` is large (its metadata): sort small keys that point at the names, then
    // permute the items in place. The first key is the number -t or -S sorts on (largest
    // first), then the name's first eight bytes, so most comparisons touch no name.
    let primary = |m: &Metadata| -> (i64, i64) {
        if args.by_size {
            (i64::try_from(m.len()).unwrap_or(i64::MAX), 0)
        } else if args.by_time {
            (m.mtime(), m.mtime_nsec())
        } else {
            (0, 0)
        }
    };
    let mut keys: Vec<SortKey<'_>> = items
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = f.name.as_bytes();
            let mut head = [0u8; 8];
            let n = name.len().min(8);
            head[..n].copy_from_slice(&name[..n]);
            (primary(&f.metadata), u64::from_be_bytes(head), name, i)
        })
        .collect();
    keys.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| (a.1, a.2).cmp(&(b.1, b.2))));
    if args.reverse {
        keys.reverse();
    }
    let mut order: Vec<usize> = keys.into_iter().map(|k| k.3).collect();
    // In place, one cycle of the permutation at a time: the item at `i` is to be the one now
    // at `order[i]`; a placed position is marked by `order[i] == i`.
    for start in 0..order.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start || from == at {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// Human mode: the GNU look. Names one per line when piped, in columns on a terminal; `-l`
/// the long format with `total`; a directory's header when more than one is listed.
fn human(args: &LsArgs, codec: &CursorCodec) -> ExitCode {
    let (page, groups) = match list(args, codec) {
        Ok(listing) => listing,
        Err(error) => {
            say_error(NAME, &error);
            return ExitCode::from(error.category.exit_code());
        }
    };
    let errors = page.error_count();
    let more = page.more;
    let next = page
        .items
        .last()
        .filter(|_| more)
        .map(|(p, _)| codec.encode(p));
    let terminal = io::stdout().is_terminal();
    let color = terminal && aoi::surface::color::env_allows();
    let mut out = io::BufWriter::new(io::stdout().lock());
    let written = write_human(&mut out, args, &page, &groups, terminal, color);
    let written = written.and_then(|()| out.flush());
    drop(out);
    // The process ends here: freeing every entry of a large listing one by one would only
    // delay the exit (as GNU ls, which frees none).
    std::mem::forget(page);
    if more {
        more_note(NAME, next.as_deref());
    }
    human_exit("aoi-coreutils ls", written, errors)
}

fn write_human(
    out: &mut impl Write,
    args: &LsArgs,
    page: &Page<Entry>,
    groups: &[Group],
    terminal: bool,
    color: bool,
) -> io::Result<()> {
    // The entries of each directory, in order, with its header; files given as operands
    // form a group of their own with no header. Errors go to stderr as they come.
    let operand_dirs = operands(args).len() > 1 || args.recursive;
    let now_ms = crate::clock::epoch_ms(std::time::SystemTime::now());
    let mut items = page.items.iter();
    let mut entries: Vec<&Entry> = Vec::new();
    let mut first = true;
    for group in groups {
        entries.clear();
        for (_, item) in items.by_ref().take(group.items) {
            match item {
                Item::Error(e) => say_error(NAME, e),
                Item::Event(entry) => entries.push(entry),
            }
        }
        if entries.is_empty() {
            continue;
        }
        if !first {
            writeln!(out)?;
        }
        first = false;
        if let Some(dir) = &group.dir {
            if operand_dirs {
                writeln!(out, "{}:", printable_line(&header(dir, args)))?;
            }
        }
        if args.long {
            if group.dir.is_some() {
                let blocks: u64 = entries.iter().map(|e| e.disk_bytes / 1024).sum();
                writeln!(out, "total {blocks}")?;
            }
            long_lines(out, &entries, now_ms, color)?;
        } else if terminal && !args.one_per_line {
            columns(out, &entries, color)?;
        } else {
            for e in &entries {
                write_name(out, e, color)?;
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(())
}

/// A directory's header: as given, with `./` before a subdirectory of the implicit `.`.
fn header(dir: &Path, args: &LsArgs) -> String {
    let text = dir.to_string_lossy();
    if args.paths.is_empty() && dir != Path::new(".") {
        format!("./{text}")
    } else {
        text.into_owned()
    }
}

/// Writes an entry's name, escaped, in its colour when `color`.
fn write_name(out: &mut impl Write, entry: &Entry, color: bool) -> io::Result<()> {
    let name = printable_line(&entry.name);
    let executable = entry.permissions.contains('x');
    // Painted only when colour is on; otherwise written as it is, with no copy.
    match entry.kind.colour(executable).filter(|_| color) {
        Some(code) => write!(out, "{}", Paint::new(true).sgr(code, &name)),
        None => out.write_all(name.as_bytes()),
    }
}

fn long_lines(
    out: &mut impl Write,
    entries: &[&Entry],
    now_ms: i64,
    color: bool,
) -> io::Result<()> {
    let widest = |f: &dyn Fn(&Entry) -> usize| entries.iter().map(|e| f(e)).max().unwrap_or(0);
    let links = widest(&|e| digits(e.nlink));
    let owner = widest(&|e| e.owner.len());
    let group = widest(&|e| e.group.len());
    let size = widest(&|e| digits(e.size));
    for e in entries {
        write!(
            out,
            "{} {:>links$} {:<owner$} {:<group$} {:>size$} {} ",
            e.permissions,
            e.nlink,
            e.owner,
            e.group,
            e.size,
            LsTime {
                ms: e.modified_ms,
                now_ms
            },
        )?;
        write_name(out, e, color)?;
        if let Some(target) = &e.target {
            out.write_all(b" -> ")?;
            out.write_all(printable_line(target).as_bytes())?;
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// How many decimal digits `n` takes.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// A modification time `ms` as `ls -l` shows it at `now_ms`: `Dec  2 01:23` within six
/// months, `Dec  2  2025` otherwise (UTC).
struct LsTime {
    ms: i64,
    now_ms: i64,
}

impl std::fmt::Display for LsTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let (ms, now_ms) = (self.ms, self.now_ms);
        let secs = ms.div_euclid(1000);
        let (y, m, d) = crate::clock::civil_from_days(secs.div_euclid(86_400));
        let month = MONTHS[(m - 1) as usize];
        let six_months_ms = 31_556_952_000 / 2;
        if now_ms - ms > six_months_ms || ms - now_ms > 60_000 * 60 {
            write!(f, "{month} {d:>2}  {y}")
        } else {
            let rem = secs.rem_euclid(86_400);
            write!(f, "{month} {d:>2} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
        }
    }
}

/// Names in columns, top to bottom then left to right, as `ls` on a terminal.
fn columns(out: &mut impl Write, entries: &[&Entry], color: bool) -> io::Result<()> {
    use unicode_width::UnicodeWidthStr;
    let width = terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0))
        .unwrap_or(80);
    let names: Vec<_> = entries.iter().map(|e| printable_line(&e.name)).collect();
    let widths: Vec<usize> = names.iter().map(|n| n.width()).collect();
    let n = names.len();
    let mut rows = 1;
    let mut col_widths = Vec::new();
    while rows <= n {
        let cols = n.div_ceil(rows);
        col_widths = (0..cols)
            .map(|c| {
                (0..rows)
                    .filter_map(|r| widths.get(c * rows + r))
                    .max()
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let total: usize = col_widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
        if total <= width {
            break;
        }
        rows += 1;
    }
    let mut line = Vec::new();
    for r in 0..rows {
        line.clear();
        for (c, w) in col_widths.iter().enumerate() {
            let Some(i) = Some(c * rows + r).filter(|i| *i < n) else {
                continue;
            };
            let last = c + 1 == col_widths.len() || (c + 1) * rows + r >= n;
            write_name(&mut line, entries[i], color)?;
            if !last {
                line.resize(line.len() + w - widths[i] + 2, b' ');
            }
        }
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}
