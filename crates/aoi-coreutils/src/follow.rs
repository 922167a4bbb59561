//! `tail -f` in machine mode: after the last lines, an unbounded stream (§4.2) of what is
//! appended to the files, as GNU `tail -f` follows them.
//!
//! The stream is unbounded: it ends when the run is interrupted (SIGINT or SIGTERM: the
//! harness writes the `aoi:summary` with `reason: "cancelled"`), or, with `--pid PID`, once
//! that process is gone and the files were read a last time (then `ok: true`). Each poll
//! (`-s`, default 1 s as GNU's) reads what a file gained as `content` events (`first_line`
//! unknown, `eof: true` when the event reaches what the file held when polled), never
//! splitting a UTF-8 character between two events. A file that shrank is read again from its
//! start after an `aoi:warning` (`FILE_TRUNCATED`, GNU's "file truncated"). With `-F`
//! (`--follow=name --retry`) the name is followed: a file replaced (log rotation) is reopened
//! from its start, one that vanished is waited for, each with an `aoi:warning`. When nothing
//! was written for `--heartbeat` seconds (10 by default) an `aoi:heartbeat` says the stream is
//! alive. The bytes
//! followed are not bounded by `--max-bytes`, which bounds the first part only.

use std::collections::BTreeMap;
use std::fs::{File, Metadata};
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aoi::{Code, EmitError, Emitter, Heartbeat, Warning};

/// A heartbeat after this long without an event, unless `--heartbeat` says otherwise.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// The most one event holds: a burst is written in several.
const MAX_EVENT_BYTES: u64 = 64 * 1024;

/// Bytes a followed file gained, for the caller to write as its `content` event.
#[derive(Debug)]
pub struct Gained<'a> {
    /// The file as given.
    pub path: &'a str,
    /// Where the bytes start in the file.
    pub offset: u64,
    /// The bytes (never ending inside a UTF-8 character).
    pub bytes: &'a [u8],
    /// They reach what the file held when it was polled.
    pub eof: bool,
}

/// What writes a [`Gained`] as an event.
pub type WriteGained<'f, W> = dyn FnMut(&mut Emitter<W>, Gained<'_>) -> Result<(), EmitError> + 'f;

/// How to follow.
#[derive(Debug, Clone)]
pub struct Follow {
    /// Follow the name (reopen a replaced file, wait for a vanished one), not the open file.
    pub by_name: bool,
    /// Between polls.
    pub sleep: Duration,
    /// Stop once this process is gone.
    pub pid: Option<i32>,
    /// Quiet before an `aoi:heartbeat` (`--heartbeat`, default [`HEARTBEAT`]).
    pub heartbeat: Duration,
}

/// One followed file.
struct Followed {
    path: PathBuf,
    shown: String,
    file: Option<File>,
    /// (device, inode) of the open file.
    id: Option<(u64, u64)>,
    offset: u64,
    /// A warning was given for it being gone; not repeated.
    gone: bool,
}

/// Follows `files` (standard input, `-`, is not followed, as GNU warns) from where the first
/// part read each to its end (`ends`, by path as shown; a file it did not reach, from its
/// current end), until cancelled or `how.pid` is gone; `content` writes what a file gained.
pub fn follow<W: Write>(
    out: &mut Emitter<W>,
    files: &[PathBuf],
    ends: &BTreeMap<String, u64>,
    how: &Follow,
    content: &mut WriteGained<'_, W>,
) -> Result<(), EmitError> {
    let mut followed = Vec::new();
    for path in files {
        if path.as_os_str() == "-" {
            out.warning(
                &Warning::new(
                    Code::from_static("STDIN_NOT_FOLLOWED"),
                    "following standard input indefinitely is ineffective",
                )
                .target("-"),
            )?;
            continue;
        }
        let file = File::open(path).ok();
        let meta = file.as_ref().and_then(|f| f.metadata().ok());
        let shown = path.to_string_lossy().into_owned();
        let offset = ends
            .get(&shown)
            .copied()
            .or_else(|| meta.as_ref().map(Metadata::len))
            .unwrap_or(0);
        followed.push(Followed {
            path: path.clone(),
            shown,
            id: meta.as_ref().map(identity),
            offset,
            gone: file.is_none(),
            file,
        });
    }
    let cancel = out.cancel_token();
    let mut quiet_since = Instant::now();
    loop {
        // A signal ends the stream here, between events: the summary says `cancelled`.
        out.check_cancelled()?;
        let last_round = how.pid.is_some_and(|pid| !alive(pid));
        let mut wrote = false;
        for f in &mut followed {
            wrote |= poll(out, f, how.by_name, content)?;
        }
        if last_round {
            return Ok(());
        }
        if wrote {
            // A consumer of an unbounded stream sees each event as it comes.
            out.flush()?;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= how.heartbeat {
            out.heartbeat(&Heartbeat {
                interval_ms: Some(how.heartbeat.as_millis() as u64),
                properties: None,
            })?;
            quiet_since = Instant::now();
        }
        if cancel.sleep(how.sleep).is_some() {
            out.check_cancelled()?;
        }
    }
}

fn identity(m: &Metadata) -> (u64, u64) {
    (m.dev(), m.ino())
}

/// Whether process `pid` is running (any user's; a zombie, which has ended but was not yet
/// waited for, is not).
fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `PID (COMMAND) STATE ...`: the command may hold spaces and parentheses.
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    state != Some('Z') && state != Some('X')
}

fn warn<W: Write>(
    out: &mut Emitter<W>,
    f: &Followed,
    code: &'static str,
    message: &str,
) -> Result<(), EmitError> {
    out.warning(
        &Warning::new(Code::from_static(code), format!("{}: {message}", f.shown))
            .target(f.shown.clone()),
    )
}

/// Reads what `f` gained since the last poll; whether an event was written.
fn poll<W: Write>(
    out: &mut Emitter<W>,
    f: &mut Followed,
    by_name: bool,
    content: &mut WriteGained<'_, W>,
) -> Result<bool, EmitError> {
    let mut wrote = false;
    if by_name {
        match std::fs::metadata(&f.path) {
            Err(_) => {
                if !f.gone {
                    warn(
                        out,
                        f,
                        "FILE_GONE",
                        "has become inaccessible: No such file or directory",
                    )?;
                    wrote = true;
                    f.gone = true;
                    f.file = None;
                    f.id = None;
                }
                return Ok(wrote);
            }
            Ok(m) if Some(identity(&m)) != f.id => {
                let Ok(file) = File::open(&f.path) else {
                    return Ok(wrote);
                };
                let message = if f.id.is_some() {
                    "has been replaced; following new file"
                } else {
                    "has appeared; following new file"
                };
                warn(out, f, "FILE_REPLACED", message)?;
                wrote = true;
                f.file = Some(file);
                f.id = Some(identity(&m));
                f.offset = 0;
                f.gone = false;
            }
            Ok(_) => {}
        }
    }
    let Some(file) = &f.file else {
        return Ok(wrote);
    };
    let Ok(meta) = file.metadata() else {
        return Ok(wrote);
    };
    let size = meta.len();
    if size < f.offset {
        warn(out, f, "FILE_TRUNCATED", "file truncated")?;
        wrote = true;
        f.offset = 0;
    }
    while f.offset < size {
        let want = (size - f.offset).min(MAX_EVENT_BYTES);
        let mut buf = vec![0u8; want as usize];
        let got = match file.read_at(&mut buf, f.offset) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.truncate(got);
        // A character cut by the poll waits for its other bytes.
        let keep = match std::str::from_utf8(&buf) {
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => buf.len(),
        };
        if keep == 0 {
            break;
        }
        buf.truncate(keep);
        content(
            out,
            Gained {
                path: &f.shown,
                offset: f.offset,
                bytes: &buf,
                eof: f.offset + buf.len() as u64 == size,
            },
        )?;
        wrote = true;
        f.offset += buf.len() as u64;
        if keep < got {
            break;
        }
    }
    Ok(wrote)
}

/// The files `tail -f` follows: as given (standard input included, to be warned about).
pub fn operands(files: &[PathBuf]) -> Vec<PathBuf> {
    if files.is_empty() {
        vec![Path::new("-").to_path_buf()]
    } else {
        files.to_vec()
    }
}
