//! The write commands, `mkdir`, `touch`, `cp`, `mv` and `rm`, with the safety profile of
//! Part II (§14).
//!
//! - **Dry run** (§14.2): with `--dry-run` every effect is an `aoi:plan` (`action`, `target`,
//!   `detail`) and nothing on disk changes; the summary's `properties.planned` counts them.
//!   Each effect goes through [`Journal::apply`], which never calls it under a dry run.
//! - **Confirmation** (§14.3): `rm` is destructive. It counts the entries it would remove
//!   before touching anything and refuses without `--confirm`, and without
//!   `--confirm-count N` (N the count) when given more than one path or `-r`, through the
//!   SDK's [`Confirmation`](aoi::surface::safety::Confirmation): `CONFIRMATION_REQUIRED`,
//!   `CONFIRM_COUNT_REQUIRED`, `CONFIRM_COUNT_MISMATCH`, `reason: "denied"`, exit 77. It then
//!   removes only what it counted, so N is also the most it can remove.
//!   `cp` and `mv` are not destructive in the §14.3 sense: an existing destination is a
//!   `conflict` unless `-f` is given, so `-f` is itself the explicit consent to replace, and
//!   the event says `replaced: true`. They are not `additive` either (with `-f` they replace,
//!   and `mv` removes the source path), so a host still treats them as able to destroy.
//! - **Idempotency** (§14.4): `mkdir`, `cp`, `mv` and `rm` take `--idempotency-key KEY`. The
//!   first run records its audit events under the key ([`store::FileStore`]); a retry with the
//!   same key and the same request (operands, flags and working directory) replays them with
//!   `properties.idempotent_replay: true` and changes nothing, even if the files changed since;
//!   the same key with another request is `conflict` `IDEMPOTENCY_KEY_REUSED`. A run that
//!   did nothing and failed is not recorded, so its retry runs. `touch` takes `--dry-run`
//!   only: repeating it doubles nothing (with `-d`/`-r` the times are the same, without them
//!   "now" is what a retry asks for).
//! - **Audit** (§14.5): every path created, changed or removed is named by an event of
//!   [`events`], with paths as given (see there). A path that cannot be named (not UTF-8)
//!   is an item error and is left alone: no effect without its event.
//! - **Item errors** (§9.1): a path that fails (missing, permission, conflict) is an
//!   item-scope `aoi:error` with the GNU message; the other operands are still processed, and
//!   the run ends `ok: false` (exit 1), `partial: true` when something was done.
//!
//! Human mode is GNU's: silent on success, `-v` lines on stdout, errors on stderr as
//! `aoi-coreutils rm: cannot remove 'x': No such file or directory`, exit 1 on failure (77 for
//! a refused confirmation).

pub mod cp;
pub mod events;
pub mod journal;
pub mod mkdir;
pub mod mv;
pub mod rm;
pub mod store;
pub mod touch;

use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use aoi::{Category, Code, ErrorEvent};
use clap::Args;
use serde_json::Value;

pub use cp::CpArgs;
pub use events::{Change, Changed, Copied, Created, Moved, Removed};
pub use journal::{Applied, Journal, Spec, Step};
pub use mkdir::MkdirArgs;
pub use mv::MvArgs;
pub use rm::RmArgs;
pub use touch::TouchArgs;

use crate::paths::{io_error, path_key, plain_io};

/// `path` quoted as GNU tools quote a file name in a message: `'a b'`, or `"it's"` when it
/// holds a single quote.
pub fn quote(path: &Path) -> String {
    let text = String::from_utf8_lossy(path.as_os_str().as_bytes());
    if text.contains('\'') && !text.contains('"') {
        format!("\"{text}\"")
    } else if text.contains('\'') {
        format!("'{}'", text.replace('\'', "'\\''"))
    } else {
        format!("'{text}'")
    }
}

/// The item error for an I/O failure on `path`, with GNU's words: `"{doing} 'path': reason"`
/// (`cannot remove 'x': No such file or directory`). The category follows the error's kind:
/// `not_found`, `authz` for a permission refused, `conflict` for an existing path,
/// `precondition_failed` for a directory that is not empty, `io` for the rest (§9.2).
pub fn fs_error(doing: &str, path: &Path, error: &io::Error) -> ErrorEvent {
    let mut event = io_error(path, error);
    let special = match error.kind() {
        io::ErrorKind::AlreadyExists => Some((Category::Conflict, "ALREADY_EXISTS")),
        io::ErrorKind::DirectoryNotEmpty => {
            Some((Category::PreconditionFailed, "DIRECTORY_NOT_EMPTY"))
        }
        io::ErrorKind::ReadOnlyFilesystem => Some((Category::Io, "READ_ONLY_FILESYSTEM")),
        _ => None,
    };
    if let Some((category, code)) = special {
        event.category = category;
        event.code = Code::from_static(code);
        event.retryable = category.default_retryable();
    }
    event.message = format!("{doing} {}: {}", quote(path), plain_io(error));
    event
}

/// An item error of `category` and `code` about `path`, with a message in GNU's words.
pub fn path_error(
    category: Category,
    code: &'static str,
    path: &Path,
    message: String,
) -> ErrorEvent {
    ErrorEvent::new(category, Code::from_static(code), message)
        .item()
        .target(String::from_utf8_lossy(path.as_os_str().as_bytes()).into_owned())
}

/// The `conflict` `DESTINATION_EXISTS` error: `to` exists and neither `-f` nor `-n` was given.
pub fn exists_error(to: &Path) -> ErrorEvent {
    path_error(
        Category::Conflict,
        "DESTINATION_EXISTS",
        to,
        format!("cannot overwrite {}: File exists", quote(to)),
    )
    .hint("pass -f to replace it, or -n to leave it and skip")
}

/// What `cp` and `mv` do about a destination that exists: the source itself is refused
/// (`SAME_FILE`), `-n` skips it, without `-f` it is refused (`DESTINATION_EXISTS`), and with
/// `-f` it is replaced.
#[derive(Debug)]
pub enum Clobber {
    /// An item error instead of the copy or move.
    Refuse(Box<ErrorEvent>),
    /// Leave the destination and go on (`-n`).
    Skip,
    /// Replace the destination (`-f`).
    Replace,
}

/// The [`Clobber`] decision for `src` onto the existing `to`.
pub fn clobber(src: &Path, to: &Path, same: bool, no_clobber: bool, force: bool) -> Clobber {
    if same {
        Clobber::Refuse(Box::new(path_error(
            Category::Validation,
            "SAME_FILE",
            src,
            format!("{} and {} are the same file", quote(src), quote(to)),
        )))
    } else if no_clobber {
        Clobber::Skip
    } else if !force {
        Clobber::Refuse(Box::new(exists_error(to)))
    } else {
        Clobber::Replace
    }
}

/// The working directory as a request component: what relative operands mean.
pub fn working_dir() -> Value {
    std::env::current_dir()
        .map(|d| Value::from(path_key(d.as_os_str())))
        .unwrap_or(Value::Null)
}

/// Operands as a request component (their bytes, so a name that is not UTF-8 is kept).
pub fn operand_keys(paths: &[PathBuf]) -> Value {
    paths
        .iter()
        .map(|p| Value::from(path_key(p.as_os_str())))
        .collect()
}

/// The names in directory `dir`, sorted by bytes (the order effects and events follow).
pub fn sorted_names(dir: &Path) -> io::Result<Vec<OsString>> {
    let mut names = fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<io::Result<Vec<_>>>()?;
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    Ok(names)
}

/// True when the two are the same file (device and inode).
pub fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// True when `to` would lie inside directory `from` (`cp -r a a/b`, `mv a a/b`): resolved
/// through the existing part of `to`'s path.
pub fn inside(from: &Path, to: &Path) -> bool {
    let Ok(from) = fs::canonicalize(from) else {
        return false;
    };
    let parent = match to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(parent) = fs::canonicalize(parent) else {
        return false;
    };
    match to.file_name() {
        Some(name) => parent.join(name).starts_with(&from),
        None => parent.starts_with(&from),
    }
}

/// True when the last component of `path` is `.` or `..`.
pub fn is_dot(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    let trimmed = {
        let mut end = bytes.len();
        while end > 1 && bytes[end - 1] == b'/' {
            end -= 1;
        }
        &bytes[..end]
    };
    let last = trimmed.rsplit(|b| *b == b'/').next().unwrap_or(trimmed);
    last == b"." || last == b".."
}

/// Where each source of `cp`/`mv` goes: into `dest` when it is a directory (`dest/name`), else
/// to `dest` itself. More than one source needs a directory: else a process-scope error,
/// before anything is done.
pub fn destinations(
    paths: &[PathBuf],
    target: &Target,
) -> Result<Vec<(PathBuf, PathBuf)>, ErrorEvent> {
    let usage = |message: String| {
        ErrorEvent::new(
            Category::Usage,
            Code::from_static("OPERAND_MISSING"),
            message,
        )
    };
    let (dest, sources) = match &target.directory {
        // -t DIR: every operand is a source, DIR the directory they go into.
        Some(dir) => {
            if paths.is_empty() {
                return Err(usage("missing file operand".into()));
            }
            match fs::metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(ErrorEvent::new(
                        Category::Validation,
                        Code::from_static("NOT_A_DIRECTORY"),
                        format!("target directory {} is not a directory", quote(dir)),
                    ))
                }
                Err(e) => {
                    let mut error = fs_error("target directory", dir, &e);
                    error.scope = aoi::Scope::Process;
                    return Err(error);
                }
            }
            (dir, paths)
        }
        None => match paths.split_last() {
            Some((dest, sources)) if !sources.is_empty() => (dest, sources),
            Some((only, _)) => {
                return Err(usage(format!(
                    "missing destination file operand after {}",
                    quote(only)
                )))
            }
            None => return Err(usage("missing file operand".into())),
        },
    };
    // -T: DEST is the new path itself, even when it is a directory.
    if target.no_directory {
        if sources.len() > 1 {
            return Err(usage(format!("extra operand {}", quote(&paths[2]))));
        }
        return Ok(vec![(sources[0].clone(), dest.clone())]);
    }
    let into = fs::metadata(dest).map(|m| m.is_dir());
    if sources.len() > 1 {
        match &into {
            Ok(true) => {}
            Ok(false) => {
                return Err(ErrorEvent::new(
                    Category::Validation,
                    Code::from_static("NOT_A_DIRECTORY"),
                    format!("target {} is not a directory", quote(dest)),
                )
                .target(String::from_utf8_lossy(dest.as_os_str().as_bytes()).into_owned()))
            }
            Err(e) => {
                let mut error = fs_error("target", dest, e);
                error.scope = aoi::Scope::Process;
                return Err(error);
            }
        }
    }
    let into = target.directory.is_some() || matches!(into, Ok(true));
    Ok(sources
        .iter()
        .map(|src| {
            let to = match (into, src.file_name()) {
                (true, Some(name)) => dest.join(name),
                _ => dest.clone(),
            };
            (src.clone(), to)
        })
        .collect())
}

/// GNU's `-t DIR` and `-T` of `cp` and `mv`.
#[derive(Debug, Clone, Default, Args)]
pub struct Target {
    /// Copy or move every operand into DIR.
    #[arg(
        short = 't',
        long = "target-directory",
        value_name = "DIR",
        conflicts_with = "no_directory"
    )]
    pub directory: Option<PathBuf>,
    /// Take the last operand as the new path itself, even when it is a directory.
    #[arg(short = 'T', long = "no-target-directory")]
    pub no_directory: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_as_gnu_quotes_them() {
        assert_eq!(quote(Path::new("a b")), "'a b'");
        assert_eq!(quote(Path::new("it's")), "\"it's\"");
        assert_eq!(quote(Path::new("a'\"b")), "'a'\\''\"b'");
    }

    #[test]
    fn io_errors_keep_gnu_words_and_get_their_category() {
        let e = fs_error(
            "cannot remove",
            Path::new("x"),
            &io::Error::from_raw_os_error(2),
        );
        assert_eq!(e.message, "cannot remove 'x': No such file or directory");
        assert_eq!(
            (e.category, e.code.as_str()),
            (Category::NotFound, "NOT_FOUND")
        );
        assert_eq!(e.target.as_deref(), Some("x"));
        let e = fs_error(
            "cannot create directory",
            Path::new("d"),
            &io::Error::from_raw_os_error(17),
        );
        assert_eq!(
            (e.category, e.code.as_str()),
            (Category::Conflict, "ALREADY_EXISTS")
        );
        let e = fs_error(
            "cannot remove",
            Path::new("d"),
            &io::Error::from_raw_os_error(39),
        );
        assert_eq!(e.category, Category::PreconditionFailed);
    }

    #[test]
    fn dot_operands_are_recognized_with_trailing_slashes() {
        for p in [".", "..", "a/.", "a/..", "./", "../"] {
            assert!(is_dot(Path::new(p)), "{p}");
        }
        for p in ["a", ".a", "a/.b", "/"] {
            assert!(!is_dot(Path::new(p)), "{p}");
        }
    }
}
