//! `du`: disk usage of directory trees, bounded (§15), one `usage` event per directory (and
//! per file with `-a`), **largest first**.
//!
//! The numbers are GNU `du`'s: disk usage is the blocks allocated (`st_blocks` × 512, so a
//! sparse file counts what it occupies, not its length), apparent size is `st_size`; a
//! directory counts itself and everything below it; a file with several hard links counts
//! once (by device and inode), the first time the walk meets it, across all operands; symbolic
//! links are not followed. Within a directory the walk goes by name (bytes).
//!
//! The order is by size, largest first (disk usage, or apparent size with `-b`), then by
//! path (bytes): unlike GNU `du`, which prints each directory after its subdirectories, so
//! the first page says where the space went. Item errors (a directory that cannot be read,
//! an entry that vanished, a name that is not UTF-8) come before the usages, by path. A
//! cursor names the last item of a page; the next page starts after it in that order. An
//! operand that does not exist fails the run (`ok:false`).
//!
//! This is machine mode; human mode is GNU du (uutils, `src/gnu.rs`).

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::{App, Limits};
use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::GlobalArgs;
use aoi::{DomainEvent, ErrorEvent};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use clap::Args;
use schemars::JsonSchema;
use serde::Serialize;

use crate::page::{Bounds, Item, Page};
use crate::paths::{io_error, path_key, path_text};

/// The command's name, in events and messages.
/// The command's name, everywhere it is named.
pub const NAME: &str = "du";

/// Disk usage of directory trees (bounded; largest first).
// The command's description, which `aoi-coreutils du --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct DuArgs {
    /// Files or directories to measure (default: the current directory).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// One usage per operand: its total.
    #[arg(short = 's', long = "summarize", conflicts_with_all = ["max_depth", "all"])]
    pub summarize: bool,
    /// A usage for every file too, not only directories.
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Usages only for what is at most N levels below an operand (totals still count all).
    #[arg(short = 'd', long = "max-depth", value_name = "N")]
    pub max_depth: Option<usize>,
    /// Apparent sizes in bytes (`st_size`) rather than disk usage: the order and the human
    /// numbers.
    #[arg(short = 'b', long = "bytes")]
    pub bytes: bool,
    #[command(flatten)]
    pub display: crate::display::DuDisplay,
    #[command(flatten)]
    pub help: crate::display::LongHelp,
    #[command(flatten)]
    pub bounds: Bounds,
}

/// The `usage` event: how much a directory (or, with `-a`, a file) takes, itself and
/// everything below it.
///
/// ```json
/// {"type":"usage","aoi":{"seq":1,"run":"01JZQ7X4TQ9"},"path":"src","disk_bytes":1318912,"apparent_bytes":1204711,"files":42,"dirs":5}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Usage {
    /// The path as given or found (relative when the operand was).
    pub path: String,
    /// Blocks allocated, in bytes (`st_blocks` × 512): what `du` counts.
    pub disk_bytes: u64,
    /// Sizes in bytes (`st_size`): what `du -b` counts.
    pub apparent_bytes: u64,
    /// Entries that are not directories, each hard-linked file once.
    pub files: u64,
    /// Directories, this one included.
    pub dirs: u64,
}

impl DomainEvent for Usage {
    const TYPE: &'static str = "usage";
}

/// What decides the order and content, which a cursor is bound to.
#[derive(Debug, Serialize)]
struct Shape {
    paths: Vec<String>,
    summarize: bool,
    all: bool,
    max_depth: Option<usize>,
    bytes: bool,
}

/// Sizes and counts of a subtree.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    disk: u64,
    apparent: u64,
    files: u64,
    dirs: u64,
}

impl Totals {
    fn of(metadata: &Metadata) -> Totals {
        let dir = metadata.is_dir();
        Totals {
            disk: metadata.blocks().saturating_mul(512),
            apparent: metadata.len(),
            files: u64::from(!dir),
            dirs: u64::from(dir),
        }
    }

    fn add(&mut self, other: Totals) {
        self.disk = self.disk.saturating_add(other.disk);
        self.apparent = self.apparent.saturating_add(other.apparent);
        self.files += other.files;
        self.dirs += other.dirs;
    }
}

/// Where an item sits in the order: errors first by path, then usages by size descending and
/// path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    usage: bool,
    size_desc: std::cmp::Reverse<u64>,
    path: Vec<u8>,
}

impl SortKey {
    /// The cursor text of this position.
    fn text(&self) -> String {
        format!(
            "{}/{}/{}",
            u8::from(self.usage),
            self.size_desc.0,
            STANDARD.encode(&self.path)
        )
    }

    fn parse(text: &str) -> Option<SortKey> {
        let mut parts = text.splitn(3, '/');
        let usage = match parts.next()? {
            "0" => false,
            "1" => true,
            _ => return None,
        };
        let size = parts.next()?.parse().ok()?;
        let path = STANDARD.decode(parts.next()?).ok()?;
        Some(SortKey {
            usage,
            size_desc: std::cmp::Reverse(size),
            path,
        })
    }
}

/// Everything measured: errors and usages, unordered.
#[derive(Default)]
struct Measured {
    errors: Vec<(PathBuf, ErrorEvent)>,
    usages: Vec<(PathBuf, Totals)>,
    failed: bool,
}

/// A directory being measured: what is left to visit in it and what it holds so far.
struct Frame {
    path: PathBuf,
    depth: usize,
    children: std::vec::IntoIter<OsString>,
    totals: Totals,
}

fn operands(args: &DuArgs) -> Vec<PathBuf> {
    if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    }
}

/// Walks every operand (without following links), counting each inode once.
fn measure(args: &DuArgs) -> Measured {
    let report_depth = if args.summarize {
        Some(0)
    } else {
        args.max_depth
    };
    let reported = |depth: usize| report_depth.is_none_or(|max| depth <= max);
    let mut out = Measured::default();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    // Directories always, other files when they have more than one name.
    let mut first_time = |m: &Metadata| {
        if m.is_dir() || m.nlink() > 1 {
            seen.insert((m.dev(), m.ino()))
        } else {
            true
        }
    };
    for root in operands(args) {
        let metadata = match fs::symlink_metadata(&root) {
            Ok(m) => m,
            Err(e) => {
                out.failed = true;
                out.errors.push((root.clone(), io_error(&root, &e)));
                continue;
            }
        };
        if !first_time(&metadata) {
            continue;
        }
        if !metadata.is_dir() {
            out.usages.push((root, Totals::of(&metadata)));
            continue;
        }
        let mut stack = vec![open(&root, 0, &metadata, &mut out.errors)];
        if stack[0].children.len() == 0 && out.errors.last().is_some_and(|(p, _)| *p == root) {
            out.failed = true;
        }
        while let Some(top) = stack.last_mut() {
            let Some(name) = top.children.next() else {
                let Some(done) = stack.pop() else { break };
                if reported(done.depth) {
                    out.usages.push((done.path, done.totals));
                }
                if let Some(parent) = stack.last_mut() {
                    parent.totals.add(done.totals);
                }
                continue;
            };
            let path = top.path.join(&name);
            let depth = top.depth + 1;
            let metadata = match fs::symlink_metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    out.errors.push((path.clone(), io_error(&path, &e)));
                    continue;
                }
            };
            if !first_time(&metadata) {
                continue;
            }
            if metadata.is_dir() {
                let frame = open(&path, depth, &metadata, &mut out.errors);
                stack.push(frame);
            } else {
                let own = Totals::of(&metadata);
                top.totals.add(own);
                if args.all && reported(depth) {
                    out.usages.push((path, own));
                }
            }
        }
    }
    out
}

/// A frame for directory `path`: its own size, and its entries by name; a directory that
/// cannot be read is an item error and counts only itself.
fn open(
    path: &Path,
    depth: usize,
    metadata: &Metadata,
    errors: &mut Vec<(PathBuf, ErrorEvent)>,
) -> Frame {
    let mut names = Vec::new();
    match fs::read_dir(path) {
        Ok(entries) => {
            for entry in entries {
                match entry {
                    Ok(e) => names.push(e.file_name()),
                    Err(e) => {
                        errors.push((path.to_path_buf(), io_error(path, &e)));
                        break;
                    }
                }
            }
        }
        Err(e) => errors.push((path.to_path_buf(), io_error(path, &e))),
    }
    names.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Frame {
        path: path.to_path_buf(),
        depth,
        children: names.into_iter(),
        totals: Totals::of(metadata),
    }
}

/// One page of the measured items, in order, after the cursor.
fn page(args: &DuArgs, codec: &CursorCodec) -> Result<Page<Usage>, ErrorEvent> {
    let limit = args.bounds.checked_limit()?;
    let after = match args.bounds.position::<String>(codec)? {
        None => None,
        Some(text) => Some(SortKey::parse(&text).ok_or_else(bad_cursor)?),
    };
    let measured = measure(args);
    let size = |t: &Totals| if args.bytes { t.apparent } else { t.disk };
    let mut items: Vec<(SortKey, Item<Usage>)> = Vec::new();
    for (path, error) in measured.errors {
        let key = SortKey {
            usage: false,
            size_desc: std::cmp::Reverse(0),
            path: path.as_os_str().as_bytes().to_vec(),
        };
        items.push((key, Item::Error(Box::new(error))));
    }
    for (path, totals) in measured.usages {
        let key = SortKey {
            usage: true,
            size_desc: std::cmp::Reverse(size(&totals)),
            path: path.as_os_str().as_bytes().to_vec(),
        };
        let item = match path_text(&path) {
            Ok(text) => Item::Event(Usage {
                path: text,
                disk_bytes: totals.disk,
                apparent_bytes: totals.apparent,
                files: totals.files,
                dirs: totals.dirs,
            }),
            Err(error) => Item::Error(Box::new(error)),
        };
        items.push((key, item));
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let mut page = Page {
        failed: measured.failed,
        ..Page::default()
    };
    let start = match &after {
        Some(key) => items.partition_point(|(k, _)| k <= key),
        None => 0,
    };
    let rest = items.len() - start;
    for (key, item) in items.into_iter().skip(start).take(limit) {
        match item {
            Item::Event(usage) => page.event(key.text(), usage),
            Item::Error(error) => page.error(key.text(), *error),
        }
    }
    page.more = rest > limit;
    Ok(page)
}

fn bad_cursor() -> ErrorEvent {
    crate::page::cursor_invalid("the cursor does not name a position of this listing")
}

/// Runs `du`.
pub fn run(app: &App, global: &GlobalArgs, args: DuArgs) -> ExitCode {
    let codec = CursorCodec::new(NAME, &shape(&args));
    let limits = Limits {
        max_bytes: args.bounds.max_bytes,
        ..Limits::default()
    };
    app.run_with(global, limits, |out| {
        let page = page(&args, &codec)?;
        Ok(page.emit(out, &codec)?)
    })
}

fn shape(args: &DuArgs) -> Shape {
    Shape {
        paths: operands(args)
            .iter()
            .map(|p| path_key(p.as_os_str()))
            .collect(),
        summarize: args.summarize,
        all: args.all,
        max_depth: args.max_depth,
        bytes: args.bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_order_errors_first_then_largest_first_and_read_back() {
        let key = |usage, size, path: &str| SortKey {
            usage,
            size_desc: std::cmp::Reverse(size),
            path: path.as_bytes().to_vec(),
        };
        let mut keys = vec![
            key(true, 10, "b"),
            key(true, 30, "z"),
            key(false, 0, "q"),
            key(true, 10, "a"),
        ];
        keys.sort();
        let paths: Vec<&[u8]> = keys.iter().map(|k| k.path.as_slice()).collect();
        assert_eq!(paths, [&b"q"[..], b"z", b"a", b"b"]);
        for k in keys {
            assert_eq!(SortKey::parse(&k.text()), Some(k));
        }
        assert_eq!(SortKey::parse("2/0/"), None);
    }
}
