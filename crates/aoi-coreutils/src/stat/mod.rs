//! `stat`: describe files, one `entry` event per operand, in the order given (bounded, §15).
//!
//! Each operand is `lstat`ed (a symbolic link is described, with its target), or `stat`ed with
//! `-L`. The entries carry what `stat` adds to `ls -l`'s: the device, the device a device
//! file stands for, the I/O block size and the birth time where the file system records it.
//! An operand that cannot be described is an item error and the run fails (`ok:false`), as
//! GNU `stat` exits 1; the other operands are still described.
//!
//! Human mode is GNU `stat`'s: its default format field for field, `-c`/`--format`,
//! `--printf` and `-t`/`--terse` ([`format`]); times in the zone `TZ` names (the system's
//! when it names none), with nanoseconds. In machine mode a format changes nothing: the
//! `entry` event carries every field.

mod format;

use std::fs::{self, Metadata};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::UNIX_EPOCH;

use aoi::app::{App, Limits};
use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::GlobalArgs;
use aoi::surface::term::printable_line;
use aoi::ErrorEvent;
use clap::Args;
use serde::Serialize;

use crate::clock::civil_from_days;
use crate::entry::{Entry, Kind};
use crate::owners::Names;
use crate::page::{Bounds, Item, Page};
use crate::paths::{io_error, path_key};
use crate::report::{human_exit, more_note, say_error};

/// The command's name, in events and messages.
/// The command's name, everywhere it is named.
pub const NAME: &str = "stat";

/// Describe files in detail: size, blocks, inode, links, mode, owner, times.
// The command's description, which `aoi-coreutils stat --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct StatArgs {
    /// Files to describe.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Follow symbolic links: describe what a link points to.
    #[arg(short = 'L', long = "dereference")]
    pub dereference: bool,
    /// Print FORMAT (GNU's directives: `%s` size, `%n` name, `%Y` modification time...)
    /// and a newline, instead of the default (human mode). GNU's `--format=FORMAT` is this
    /// flag too (`app::stat_format_words`).
    #[arg(short = 'c', value_name = "FORMAT", conflicts_with = "printf")]
    pub format: Option<String>,
    /// Print FORMAT with backslash escapes (`\n`, `\t`) and no newline added (human mode).
    #[arg(long = "printf", value_name = "FORMAT")]
    pub printf: Option<String>,
    /// Print the information in terse form (human mode).
    #[arg(short = 't', long = "terse", conflicts_with_all = ["format", "printf"])]
    pub terse: bool,
    #[command(flatten)]
    pub bounds: Bounds,
}

/// What decides the order and content, which a cursor is bound to.
#[derive(Debug, Serialize)]
struct Shape {
    files: Vec<String>,
    dereference: bool,
}

/// Runs `stat`.
pub fn run(app: &App, global: &GlobalArgs, args: StatArgs) -> ExitCode {
    let codec = CursorCodec::new(
        NAME,
        &Shape {
            files: args.files.iter().map(|p| path_key(p.as_os_str())).collect(),
            dereference: args.dereference,
        },
    );
    if !global.machine() {
        return human(&args, &codec);
    }
    let limits = Limits {
        max_bytes: args.bounds.max_bytes,
        ..Limits::default()
    };
    app.run_with(global, limits, |out| {
        let (page, _) = describe(&args, &codec)?;
        Ok(page.emit(out, &codec)?)
    })
}

/// One page of entries, each with the metadata it was made from (`None` for an error).
fn describe(
    args: &StatArgs,
    codec: &CursorCodec,
) -> Result<(Page<Entry>, Vec<Option<Metadata>>), ErrorEvent> {
    let limit = args.bounds.checked_limit()?;
    // A position is the operand's index; the page resumes after it.
    let start = match args.bounds.position::<String>(codec)? {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .and_then(|i| i.checked_add(1))
            .ok_or_else(bad_cursor)?,
    };
    let mut names = Names::default();
    let mut page = Page::default();
    let mut metadata = Vec::new();
    for (index, path) in args.files.iter().enumerate().skip(start) {
        if page.len() >= limit {
            page.more = true;
            break;
        }
        let found = if args.dereference {
            fs::metadata(path)
        } else {
            fs::symlink_metadata(path)
        };
        let described = found.map_err(|e| io_error(path, &e)).and_then(|m| {
            let name = path.file_name().map_or(path.as_path(), Path::new);
            let mut entry = Entry::new(path, name, &m, &mut names)?.with_stat_details(&m);
            if args.dereference {
                // `stat -L` names the operand, not where it leads.
                entry.target = None;
            }
            Ok((entry, m))
        });
        match described {
            Ok((entry, m)) => {
                page.event(index.to_string(), entry);
                metadata.push(Some(m));
            }
            Err(error) => {
                page.failed = true;
                page.error(index.to_string(), error);
                metadata.push(None);
            }
        }
    }
    Ok((page, metadata))
}

fn bad_cursor() -> ErrorEvent {
    crate::page::cursor_invalid("the cursor does not name an operand of this command")
}

/// Human mode: GNU `stat`'s default format.
fn human(args: &StatArgs, codec: &CursorCodec) -> ExitCode {
    let (page, metadata) = match describe(args, codec) {
        Ok(described) => described,
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
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut written = Ok(());
    for ((_, item), m) in page.items.into_iter().zip(metadata) {
        match (item, m) {
            (Item::Event(entry), Some(m)) => {
                let text = match (&args.format, &args.printf, args.terse) {
                    (Some(f), _, _) => {
                        [format::render(f, &entry, &m, false), b"\n".to_vec()].concat()
                    }
                    (_, Some(f), _) => format::render(f, &entry, &m, true),
                    (_, _, true) => [
                        format::render(format::TERSE, &entry, &m, false),
                        b"\n".to_vec(),
                    ]
                    .concat(),
                    _ => gnu_text(&entry, &m).into_bytes(),
                };
                written = out.write_all(&text);
                if written.is_err() {
                    break;
                }
            }
            (Item::Error(error), _) => say_error(NAME, &error),
            (Item::Event(_), None) => {}
        }
    }
    let written = written.and_then(|()| out.flush());
    drop(out);
    if more {
        more_note(NAME, next.as_deref());
    }
    human_exit("aoi-coreutils stat", written, errors)
}

/// The text GNU `stat` prints for one file by default.
fn gnu_text(entry: &Entry, m: &Metadata) -> String {
    let mut file = printable_line(&entry.path).into_owned();
    if let Some(target) = &entry.target {
        file.push_str(" -> ");
        file.push_str(&printable_line(target));
    }
    let (major, minor) = device_numbers(m.dev());
    let links = match entry.device_type {
        Some(rdev) => {
            let (rmajor, rminor) = device_numbers(rdev);
            format!("{:<5} Device type: {rmajor},{rminor}", m.nlink())
        }
        None => m.nlink().to_string(),
    };
    let birth = m
        .created()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or_else(
            || "-".to_owned(),
            |d| time_text(d.as_secs() as i64, d.subsec_nanos() as i64),
        );
    format!(
        "  File: {file}\n  Size: {:<10}\tBlocks: {:<10} IO Block: {:<6} {}\n\
         Device: {major},{minor}\tInode: {:<11} Links: {links}\n\
         Access: ({:04o}/{})  Uid: ({:>5}/{:>8})   Gid: ({:>5}/{:>8})\n\
         Access: {}\nModify: {}\nChange: {}\n Birth: {birth}\n",
        m.len(),
        m.blocks(),
        m.blksize(),
        type_name(entry.kind, m.len()),
        m.ino(),
        m.mode() & 0o7777,
        entry.permissions,
        m.uid(),
        entry.owner,
        m.gid(),
        entry.group,
        time_text(m.atime(), m.atime_nsec()),
        time_text(m.mtime(), m.mtime_nsec()),
        time_text(m.ctime(), m.ctime_nsec()),
    )
}

/// GNU `stat`'s `%F`.
fn type_name(kind: Kind, size: u64) -> &'static str {
    match kind {
        Kind::File if size == 0 => "regular empty file",
        Kind::File => "regular file",
        Kind::Dir => "directory",
        Kind::Symlink => "symbolic link",
        Kind::Fifo => "fifo",
        Kind::Socket => "socket",
        Kind::BlockDevice => "block special file",
        Kind::CharDevice => "character special file",
    }
}

/// The major and minor numbers of a Linux `dev_t` (glibc's `gnu_dev_major` / `minor`).
fn device_numbers(dev: u64) -> (u64, u64) {
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff);
    (major, minor)
}

/// `2026-12-02 01:52:19.016897636 +0000`: GNU `stat`'s times, in the zone `TZ` names.
fn time_text(secs: i64, nanos: i64) -> String {
    time_text_in(secs, nanos, &jiff::tz::TimeZone::system())
}

/// [`time_text`] in `zone`.
fn time_text_in(secs: i64, nanos: i64, zone: &jiff::tz::TimeZone) -> String {
    if let Ok(at) = jiff::Timestamp::new(secs, i32::try_from(nanos).unwrap_or(0)) {
        return at
            .to_zoned(zone.clone())
            .strftime("%Y-%m-%d %H:%M:%S.%N %z")
            .to_string();
    }
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}.{nanos:09} +0000",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_split_as_glibc_does() {
        assert_eq!(device_numbers(0xfe00), (254, 0));
        assert_eq!(device_numbers(0x0103), (1, 3));
        // makedev(259, 0x1205): the minor's high bits sit above the major's low ones.
        assert_eq!(
            device_numbers((259 << 8) | 0x05 | (0x1200 << 12)),
            (259, 0x1205)
        );
    }

    #[test]
    fn times_are_gnu_stat_times_in_the_zone() {
        let utc = jiff::tz::TimeZone::UTC;
        assert_eq!(
            time_text_in(1_796_176_339, 16_897_636, &utc),
            "2026-12-02 01:52:19.016897636 +0000"
        );
        assert_eq!(
            time_text_in(0, 0, &utc),
            "1970-01-01 00:00:00.000000000 +0000"
        );
        let east = jiff::tz::TimeZone::fixed(jiff::tz::offset(5));
        assert_eq!(
            time_text_in(0, 5, &east),
            "1970-01-01 05:00:00.000000005 +0500"
        );
    }
}
