//! `rm [-r] [-f] PATH...`: remove files, and trees with `-r`; destructive (§14.3).
//!
//! First everything that would be removed is listed, without touching anything: each operand,
//! and with `-r` everything under it, children before their directory, in name order. Its
//! length is the count `--confirm-count` must match; [`Confirmation`] refuses without
//! `--confirm`, and without `--confirm-count` when more than one path is given or `-r` is
//! (`reason: "denied"`, exit 77, nothing changed). Then exactly the listed entries are
//! removed, one `removed` event each: an entry that appeared after the count is not removed
//! (its directory then fails as not empty), so N is the most a confirmed run removes.
//!
//! `--dry-run` needs no confirmation: it plans the removals and says how many in
//! `properties.affected`. GNU's rules otherwise: a directory without `-r` is an item error,
//! `-f` ignores operands that do not exist, `.` and `..` are refused, and `/` is refused with
//! `-r`. When an entry cannot be removed, the directories above it are left alone without
//! a second error (they are not empty).

use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::flags::{ConfirmArgs, GlobalArgs, MutationArgs};
use aoi::surface::safety::{Confirmation, CONFIRM_COUNT_REQUIRED};
use aoi::{Category, ErrorEvent, Failure};
use clap::Args;
use serde_json::json;

use super::journal::{run as run_journal, Applied, Journal, Spec, Step};
use super::{
    fs_error, is_dot, operand_keys, path_error, quote, sorted_names, working_dir, Removed,
};
use crate::entry::Kind;
use crate::paths::path_text;

/// The command's name, everywhere it is named.
pub const NAME: &str = "rm";

/// Remove files and trees (-r): destructive, refuses without --confirm (and --confirm-count N).
// The command's description, which `aoi-coreutils rm --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct RmArgs {
    /// Files (and, with -r, directories) to remove.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Remove directories and everything under them.
    #[arg(short = 'r', short_alias = 'R', long = "recursive")]
    pub recursive: bool,
    /// Ignore paths that do not exist.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Print a line for each entry removed (human mode).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    #[command(flatten)]
    pub confirm: ConfirmArgs,
    #[command(flatten)]
    pub mutation: MutationArgs,
}

/// One entry to remove.
#[derive(Debug)]
struct Removal {
    path: PathBuf,
    text: String,
    kind: Kind,
}

/// Runs `rm`.
pub fn run(app: &App, global: &GlobalArgs, args: RmArgs) -> ExitCode {
    let spec = Spec {
        command: NAME,
        dry_run: args.mutation.dry_run,
        key: args.mutation.idempotency_key.as_deref(),
        verbose: args.verbose,
        request: json!({
            "cwd": working_dir(),
            "paths": operand_keys(&args.paths),
            "recursive": args.recursive,
            "force": args.force,
            "confirm": args.confirm.confirm,
            "confirm_count": args.confirm.confirm_count,
        }),
    };
    run_journal(app, global, spec, |journal| remove(journal, &args))
}

fn remove(journal: &mut Journal<'_>, args: &RmArgs) -> Result<(), Failure> {
    let mut list = Vec::new();
    let mut errors = Vec::new();
    for path in &args.paths {
        plan_operand(path, args, &mut list, &mut errors);
    }
    let affected = list.len() as u64;
    journal.property("affected", affected);
    if !journal.dry_run() {
        confirm(args, affected)?;
    }
    for error in errors {
        journal.item_error(error)?;
    }
    // Paths that could not be removed: the directories above them are left alone.
    let mut failed: Vec<PathBuf> = Vec::new();
    for entry in list {
        if entry.kind == Kind::Dir && failed.iter().any(|f| f.starts_with(&entry.path)) {
            continue;
        }
        let words = match entry.kind {
            Kind::Dir => format!("remove directory {}", quote(&entry.path)),
            _ => format!("remove {}", quote(&entry.path)),
        };
        let detail = if entry.kind == Kind::Dir {
            "directory"
        } else {
            kind_name(entry.kind)
        };
        let step = Step::new("remove", &entry.text, detail.to_owned(), words);
        let path = entry.path.clone();
        let done = journal.apply(step, || {
            let removed = if entry.kind == Kind::Dir {
                fs::remove_dir(&path)
            } else {
                fs::remove_file(&path)
            };
            removed.map_err(|e| fs_error("cannot remove", &path, &e))
        })?;
        match done {
            Applied::Done(()) => {
                let line = match entry.kind {
                    Kind::Dir => format!("removed directory {}", quote(&entry.path)),
                    _ => format!("removed {}", quote(&entry.path)),
                };
                let event = Removed {
                    path: entry.text,
                    kind: entry.kind,
                };
                journal.done(&event, || line)?;
            }
            Applied::Planned => {}
            Applied::Failed => failed.push(entry.path),
        }
    }
    Ok(())
}

/// The SDK's refusals (§14.3), and `--confirm-count` required for `-r` or several paths even
/// when they come to one entry.
fn confirm(args: &RmArgs, affected: u64) -> Result<(), Failure> {
    let flags = Confirmation::new(args.confirm.confirm, args.confirm.confirm_count)
        .require_count_for_bulk(true);
    flags.check("remove", affected)?;
    let bulk = args.recursive || args.paths.len() > 1;
    if bulk && affected > 0 && args.confirm.confirm_count.is_none() {
        return Err(Failure::denied(
            ErrorEvent::new(
                Category::PreconditionFailed,
                CONFIRM_COUNT_REQUIRED,
                format!(
                    "refusing to remove {affected} item{} without --confirm-count (-r or several paths)",
                    if affected == 1 { "" } else { "s" }
                ),
            )
            .field("confirm_count")
            .detail("affected", affected)
            .hint(format!("re-run with --confirm --confirm-count {affected}")),
        ));
    }
    Ok(())
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "file",
        Kind::Dir => "directory",
        Kind::Symlink => "symbolic link",
        Kind::Fifo => "fifo",
        Kind::Socket => "socket",
        Kind::BlockDevice => "block device",
        Kind::CharDevice => "character device",
    }
}

/// Lists what removing `path` would remove (into `list`) and what cannot be (into `errors`).
fn plan_operand(path: &Path, args: &RmArgs, list: &mut Vec<Removal>, errors: &mut Vec<ErrorEvent>) {
    if is_dot(path) {
        errors.push(path_error(
            Category::Validation,
            "DOT_OPERAND",
            path,
            format!(
                "refusing to remove '.' or '..' directory: skipping {}",
                quote(path)
            ),
        ));
        return;
    }
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound && args.force => return,
        Err(e) => {
            errors.push(fs_error("cannot remove", path, &e));
            return;
        }
    };
    if meta.is_dir() && args.recursive && fs::canonicalize(path).is_ok_and(|p| p == Path::new("/"))
    {
        errors.push(path_error(
            Category::PreconditionFailed,
            "ROOT_REFUSED",
            path,
            format!("it is dangerous to operate recursively on {}", quote(path)),
        ));
        return;
    }
    plan_entry(path, &meta, args.recursive, list, errors);
}

/// Adds `path` (after what is under it) to `list`; false when it cannot be removed.
fn plan_entry(
    path: &Path,
    meta: &Metadata,
    recursive: bool,
    list: &mut Vec<Removal>,
    errors: &mut Vec<ErrorEvent>,
) -> bool {
    let text = match path_text(path) {
        Ok(text) => text,
        Err(error) => {
            errors.push(error);
            return false;
        }
    };
    let kind = Kind::of(meta);
    if kind == Kind::Dir {
        if !recursive {
            errors.push(path_error(
                Category::Validation,
                "IS_A_DIRECTORY",
                path,
                format!("cannot remove {}: Is a directory", quote(path)),
            ));
            return false;
        }
        let names = match sorted_names(path) {
            Ok(names) => names,
            Err(e) => {
                errors.push(fs_error("cannot remove", path, &e));
                return false;
            }
        };
        let mut whole = true;
        for name in names {
            let child = path.join(&name);
            match fs::symlink_metadata(&child) {
                Ok(m) => whole &= plan_entry(&child, &m, recursive, list, errors),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    errors.push(fs_error("cannot remove", &child, &e));
                    whole = false;
                }
            }
        }
        if !whole {
            return false;
        }
    }
    list.push(Removal {
        path: path.to_path_buf(),
        text,
        kind,
    });
    true
}
