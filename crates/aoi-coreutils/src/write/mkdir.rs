//! `mkdir [-p] [-m MODE] DIR...`: make directories, one `created` event per directory made
//! (the missing parents too, with `-p`).
//!
//! An existing directory is a `conflict` (`ALREADY_EXISTS`) without `-p`, and nothing at all
//! with it (GNU). `-m` gives the last directory exactly MODE (octal), whatever the umask; the
//! parents `-p` makes get the umask's mode and at least `u+wx`, as GNU's do.

use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::flags::{GlobalArgs, MutationArgs};
use aoi::{Category, ErrorEvent, Failure};
use clap::Args;
use serde_json::json;

use super::journal::{run as run_journal, Applied, Journal, Spec, Step};
use super::{fs_error, operand_keys, path_error, quote, working_dir, Created};
use crate::entry::Kind;
use crate::paths::path_text;

/// The command's name, everywhere it is named.
pub const NAME: &str = "mkdir";

/// EEXIST and ENOTDIR (the same numbers on Linux, the BSDs and macOS), for GNU's words.
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;

/// Make directories (-p parents, -m mode; --dry-run plans, --idempotency-key replays).
// The command's description, which `aoi-coreutils mkdir --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct MkdirArgs {
    /// Directories to make.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Make missing parents too; an existing directory is no error.
    #[arg(short = 'p', long = "parents")]
    pub parents: bool,
    /// The new directory's permission bits, octal (e.g. 750), regardless of the umask.
    #[arg(short = 'm', long = "mode", value_name = "MODE", value_parser = parse_mode)]
    pub mode: Option<u32>,
    /// Print a line for each directory made (human mode).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    #[command(flatten)]
    pub mutation: MutationArgs,
}

/// An octal mode of at most 0o7777.
pub fn parse_mode(text: &str) -> Result<u32, String> {
    let valid =
        !text.is_empty() && text.len() <= 4 && text.bytes().all(|b| (b'0'..=b'7').contains(&b));
    match u32::from_str_radix(text, 8) {
        Ok(mode) if valid => Ok(mode),
        _ => Err(format!(
            "invalid mode {text:?}: give octal permission bits, e.g. 755"
        )),
    }
}

/// Runs `mkdir`.
pub fn run(app: &App, global: &GlobalArgs, args: MkdirArgs) -> ExitCode {
    let spec = Spec {
        command: NAME,
        dry_run: args.mutation.dry_run,
        key: args.mutation.idempotency_key.as_deref(),
        verbose: args.verbose,
        request: json!({
            "cwd": working_dir(),
            "dirs": operand_keys(&args.dirs),
            "parents": args.parents,
            "mode": args.mode,
        }),
    };
    run_journal(app, global, spec, |journal| {
        for dir in &args.dirs {
            make(journal, &args, dir)?;
        }
        Ok(())
    })
}

fn make(journal: &mut Journal<'_>, args: &MkdirArgs, dir: &Path) -> Result<(), Failure> {
    let missing = match missing(dir, args.parents) {
        Ok(missing) => missing,
        Err(error) => return journal.item_error(error),
    };
    for path in missing {
        let text = match path_text(&path) {
            Ok(text) => text,
            Err(error) => return journal.item_error(error),
        };
        let mode = if path == dir { args.mode } else { None };
        let detail = match mode {
            Some(m) => format!("directory, mode {m:04o}"),
            None => "directory".to_owned(),
        };
        let words = format!("create directory {}", quote(&path));
        let step = Step::new("create", &text, detail, words);
        let made = journal.apply(step, || create(&path, mode, path != dir))?;
        match made {
            Applied::Done(()) => journal.done(
                &Created {
                    path: text,
                    kind: Kind::Dir,
                },
                || format!("aoi-coreutils mkdir: created directory {}", quote(&path)),
            )?,
            Applied::Planned => {}
            Applied::Failed => return Ok(()),
        }
    }
    Ok(())
}

/// The directories to make for `dir`, parents first; checked before anything is made, so a
/// dry run plans what a real run would do.
fn missing(dir: &Path, parents: bool) -> Result<Vec<PathBuf>, ErrorEvent> {
    let cannot = |e: &std::io::Error| fs_error("cannot create directory", dir, e);
    if !parents {
        if fs::symlink_metadata(dir).is_ok() {
            return Err(cannot(&std::io::Error::from_raw_os_error(EEXIST)));
        }
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        return match fs::metadata(parent) {
            Ok(m) if m.is_dir() => Ok(vec![dir.to_path_buf()]),
            Ok(_) => Err(cannot(&std::io::Error::from_raw_os_error(ENOTDIR))),
            Err(e) => Err(cannot(&e)),
        };
    }
    let mut out = Vec::new();
    for ancestor in dir.ancestors() {
        if ancestor.as_os_str().is_empty() {
            break;
        }
        match fs::metadata(ancestor) {
            Ok(m) if m.is_dir() => break,
            Ok(_) if ancestor == dir => {
                return Err(cannot(&std::io::Error::from_raw_os_error(EEXIST)))
            }
            Ok(_) => {
                return Err(path_error(
                    Category::Validation,
                    "NOT_A_DIRECTORY",
                    ancestor,
                    format!("cannot create directory {}: Not a directory", quote(dir)),
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // `a/..` and `a/.` are never made: they exist once `a` does.
                if !super::is_dot(ancestor) {
                    out.push(ancestor.to_path_buf());
                }
            }
            Err(e) => return Err(cannot(&e)),
        }
    }
    out.reverse();
    Ok(out)
}

/// Makes one directory: with exactly `mode` when given, else the umask's mode (plus `u+wx`
/// for a parent, as GNU's `-p`).
fn create(path: &Path, mode: Option<u32>, parent: bool) -> Result<(), ErrorEvent> {
    let cannot = |e: &std::io::Error| fs_error("cannot create directory", path, e);
    DirBuilder::new()
        .mode(mode.unwrap_or(0o777))
        .create(path)
        .map_err(|e| cannot(&e))?;
    let have = fs::symlink_metadata(path)
        .map_err(|e| cannot(&e))?
        .permissions()
        .mode()
        & 0o7777;
    let want = match mode {
        Some(m) => m,
        None if parent => have | 0o300,
        None => have,
    };
    if want != have {
        fs::set_permissions(path, fs::Permissions::from_mode(want))
            .map_err(|e| fs_error("cannot set permissions of", path, &e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_octal_and_at_most_four_digits() {
        assert_eq!(parse_mode("755"), Ok(0o755));
        assert_eq!(parse_mode("0700"), Ok(0o700));
        assert_eq!(parse_mode("1777"), Ok(0o1777));
        for bad in ["", "8", "u+x", "77777", "-1", "0x1"] {
            assert!(parse_mode(bad).is_err(), "{bad}");
        }
    }
}
