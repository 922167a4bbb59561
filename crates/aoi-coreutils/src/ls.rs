//! `ls`: list directory contents, bounded (§15), one `entry` event per entry.
//!
//! The order is deterministic: operands that are not directories first (sorted), then each
//! directory's entries; within a directory by name (bytes, as `LC_ALL=C ls`), or newest first
//! with `-t`, largest first with `-S`, reversed with `-r`. `-R` lists a directory's entries
//! and then descends into its subdirectories in that order. A cursor resumes after the last
//! item of a page, so paging visits every entry exactly once. This is machine mode; human mode
//! is GNU ls (uutils, `src/gnu.rs`).

use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::io;
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

use crate::entry::Entry;
use crate::owners::Names;
use crate::page::{Bounds, Page};
use crate::paths::{io_error, path_key};

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
    /// Long listing (the events carry every field either way).
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
    /// One entry per line (the events are one per entry either way).
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
