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
use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::GlobalArgs;
use aoi::ErrorEvent;
use clap::Args;
use serde::Serialize;

use crate::common::{
    escape_controls, human_exit, io_error, more_note, path_key, say_error, Bounds, Item, Names,
    Page,
};
use crate::entry::{Entry, Kind};

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
    let codec = CursorCodec::new("ls", &shape(&args));
    if !global.machine() {
        return human(&args, &codec);
    }
    let limits = Limits {
        max_bytes: Some(args.bounds.max_bytes),
        ..Limits::default()
    };
    app.run_with(global, "ls", limits, |out| {
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
    format!("{ordinal}/{}", path_key(path.as_os_str()))
}

/// Lists one page.
/// A page and, for each of its items, the directory it was listed in (`None` for an operand).
type Listing = (Page<Entry>, Vec<Option<PathBuf>>);

fn list(args: &LsArgs, codec: &CursorCodec) -> Result<Listing, ErrorEvent> {
    let limit = args.bounds.checked_limit()?;
    let after = args.bounds.position(codec)?;
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
    let mut groups: Vec<Option<PathBuf>> = Vec::new();
    let mut visit = |path: PathBuf,
                     item: Result<Found, ErrorEvent>,
                     page: &mut Page<Entry>,
                     group: Option<&Path>| {
        ordinal += 1;
        let key = position(ordinal, &path);
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
        match item.and_then(|f| Entry::new(&f.path, Path::new(&f.name), &f.metadata, &mut names)) {
            Ok(entry) => page.event(key, entry),
            Err(error) => page.error(key, error),
        }
        groups.push(group.map(Path::to_path_buf));
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
                if !visit(path, Err(error), &mut page, None) {
                    return Ok((page, groups));
                }
            }
        }
    }
    walk_rest(args, files, dirs, &mut page, &mut visit);
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
    crate::common::cursor_stale("the listing changed")
}

type Visit<'a> =
    dyn FnMut(PathBuf, Result<Found, ErrorEvent>, &mut Page<Entry>, Option<&Path>) -> bool + 'a;

/// Visits the files given as operands, then each directory's entries (and, with -R, its
/// subdirectories'), until `visit` says stop.
fn walk_rest(
    args: &LsArgs,
    mut files: Vec<Found>,
    dirs: Vec<PathBuf>,
    page: &mut Page<Entry>,
    visit: &mut Visit<'_>,
) {
    sort(&mut files, args);
    for f in files {
        let path = f.path.clone();
        if !visit(path, Ok(f), page, None) {
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
                if !visit(dir.clone(), Err(io_error(&dir, &e)), page, None) {
                    return;
                }
                continue;
            }
        };
        let mut subdirs = Vec::new();
        for found in entries {
            let descend = args.recursive
                && found.metadata.is_dir()
                && found.name != OsStr::new(".")
                && found.name != OsStr::new("..");
            if descend {
                subdirs.push(found.path.clone());
            }
            let path = found.path.clone();
            if !visit(path, Ok(found), page, Some(&dir)) {
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
        let path = join(dir, &name);
        // An entry that vanished between readdir and lstat is skipped, as ls does.
        let Ok(metadata) = fs::symlink_metadata(&path) else {
            continue;
        };
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

fn sort(items: &mut [Found], args: &LsArgs) {
    let by_name = |a: &Found, b: &Found| a.name.as_bytes().cmp(b.name.as_bytes());
    if args.by_size {
        items.sort_by(|a, b| {
            b.metadata
                .len()
                .cmp(&a.metadata.len())
                .then_with(|| by_name(a, b))
        });
    } else if args.by_time {
        items.sort_by(|a, b| {
            let t = |m: &Metadata| (m.mtime(), m.mtime_nsec());
            t(&b.metadata)
                .cmp(&t(&a.metadata))
                .then_with(|| by_name(a, b))
        });
    } else {
        items.sort_by(by_name);
    }
    if args.reverse {
        items.reverse();
    }
}

/// Human mode: the GNU look. Names one per line when piped, in columns on a terminal; `-l`
/// the long format with `total`; a directory's header when more than one is listed.
fn human(args: &LsArgs, codec: &CursorCodec) -> ExitCode {
    let (page, groups) = match list(args, codec) {
        Ok(listing) => listing,
        Err(error) => {
            say_error("ls", &error);
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
    let written = write_human(&mut out, args, page, &groups, terminal, color);
    let written = written.and_then(|()| out.flush());
    drop(out);
    if more {
        more_note("ls", next.as_deref());
    }
    human_exit("aoi-coreutils ls", written, errors)
}

fn write_human(
    out: &mut impl Write,
    args: &LsArgs,
    page: Page<Entry>,
    dirs: &[Option<PathBuf>],
    terminal: bool,
    color: bool,
) -> io::Result<()> {
    // Group the entries by directory, in order; files given as operands form a group of
    // their own with no header.
    let mut groups: Vec<(Option<String>, Vec<Entry>)> = Vec::new();
    let operand_dirs = operands(args).len() > 1 || args.recursive;
    for ((_, item), dir) in page.items.into_iter().zip(dirs) {
        match item {
            Item::Error(e) => say_error("ls", &e),
            Item::Event(entry) => {
                let dir = dir.as_deref().map(|d| header(d, args));
                match groups.last_mut() {
                    Some((d, list)) if *d == dir => list.push(entry),
                    _ => groups.push((dir, vec![entry])),
                }
            }
        }
    }
    let now_ms = crate::common::epoch_ms(std::time::SystemTime::now());
    for (i, (dir, entries)) in groups.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        if let Some(dir) = dir {
            if operand_dirs {
                writeln!(out, "{}:", escape_controls(dir))?;
            }
        }
        if args.long {
            if dir.is_some() {
                let blocks: u64 = entries.iter().map(|e| e.disk_bytes / 1024).sum();
                writeln!(out, "total {blocks}")?;
            }
            long_lines(out, entries, now_ms, color)?;
        } else if terminal && !args.one_per_line {
            columns(out, entries, color)?;
        } else {
            for e in entries {
                writeln!(out, "{}", painted(e, color))?;
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

fn painted(entry: &Entry, color: bool) -> String {
    let name = escape_controls(&entry.name);
    if !color {
        return name;
    }
    let code = match entry.kind {
        Kind::Dir => "01;34",
        Kind::Symlink => "01;36",
        Kind::Fifo => "33",
        Kind::Socket => "01;35",
        Kind::BlockDevice | Kind::CharDevice => "01;33",
        Kind::File if entry.permissions.contains('x') => "01;32",
        Kind::File => return name,
    };
    format!("\x1b[{code}m{name}\x1b[0m")
}

fn long_lines(out: &mut impl Write, entries: &[Entry], now_ms: i64, color: bool) -> io::Result<()> {
    let width =
        |f: &dyn Fn(&Entry) -> String| entries.iter().map(|e| f(e).len()).max().unwrap_or(0);
    let links = width(&|e| e.nlink.to_string());
    let owner = width(&|e| e.owner.clone());
    let group = width(&|e| e.group.clone());
    let size = width(&|e| e.size.to_string());
    for e in entries {
        let mut line = format!(
            "{} {:>links$} {:<owner$} {:<group$} {:>size$} {} {}",
            e.permissions,
            e.nlink,
            e.owner,
            e.group,
            e.size,
            ls_time(e.modified_ms, now_ms),
            painted(e, color),
        );
        if let Some(target) = &e.target {
            line.push_str(" -> ");
            line.push_str(&escape_controls(target));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `ls -l`'s time: `Dec  2 01:23` within six months, `Dec  2  2025` otherwise (UTC).
pub fn ls_time(ms: i64, now_ms: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = ms.div_euclid(1000);
    let (y, m, d) = crate::common::civil_from_days(secs.div_euclid(86_400));
    let month = MONTHS[(m - 1) as usize];
    let six_months_ms = 31_556_952_000 / 2;
    if now_ms - ms > six_months_ms || ms - now_ms > 60_000 * 60 {
        format!("{month} {d:>2}  {y}")
    } else {
        let rem = secs.rem_euclid(86_400);
        format!("{month} {d:>2} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
    }
}

/// Names in columns, top to bottom then left to right, as `ls` on a terminal.
fn columns(out: &mut impl Write, entries: &[Entry], color: bool) -> io::Result<()> {
    use unicode_width::UnicodeWidthStr;
    let width = terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0))
        .unwrap_or(80);
    let names: Vec<String> = entries.iter().map(|e| escape_controls(&e.name)).collect();
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
    for r in 0..rows {
        let mut line = String::new();
        for (c, w) in col_widths.iter().enumerate() {
            let Some(i) = Some(c * rows + r).filter(|i| *i < n) else {
                continue;
            };
            let last = c + 1 == col_widths.len() || (c + 1) * rows + r >= n;
            line.push_str(&painted(&entries[i], color));
            if !last {
                line.push_str(&" ".repeat(w - widths[i] + 2));
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}
