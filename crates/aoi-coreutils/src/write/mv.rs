//! `mv [-n] [-f] SRC... DEST`: rename files and directories, one `moved` event per operand.
//!
//! GNU's rules, with one difference: an existing destination is a `conflict`
//! (`DESTINATION_EXISTS`) unless `-f` replaces it or `-n` skips it, where GNU replaces it
//! silently. Across file systems a rename is impossible, so the entry is copied with its mode
//! and times, then the original removed (`across_filesystems: true`). If that copy fails, the
//! source is left whole and the error's `details.partial_copy` names what was copied so far.

use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::flags::{GlobalArgs, MutationArgs};
use aoi::{Category, ErrorEvent, Failure};
use clap::Args;
use serde_json::json;

use super::cp::copy_preserving;
use super::journal::{run as run_journal, Applied, Journal, Spec, Step};
use super::{
    clobber, destinations, fs_error, inside, is_dot, operand_keys, path_error, quote, same_file,
    working_dir, Clobber, Moved, Target,
};
use crate::entry::Kind;
use crate::paths::path_text;

/// The command's name, everywhere it is named.
pub const NAME: &str = "mv";

/// EXDEV: a rename across file systems (18 on Linux, the BSDs and macOS alike).
const EXDEV: i32 = 18;

/// Move or rename (across file systems too); an existing destination is a conflict unless -f or -n.
// The command's description, which `aoi-coreutils mv --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct MvArgs {
    /// Sources, then the destination (a directory to move into, or the new path); with -t,
    /// sources only.
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub target: Target,
    /// Leave an existing destination alone and go on (counted in `properties.skipped`).
    #[arg(short = 'n', long = "no-clobber", conflicts_with = "force")]
    pub no_clobber: bool,
    /// Replace an existing destination (without it, an existing one is a conflict).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Print `renamed 'src' -> 'dest'` for each operand moved (human mode).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    #[command(flatten)]
    pub mutation: MutationArgs,
}

/// Runs `mv`.
pub fn run(app: &App, global: &GlobalArgs, args: MvArgs) -> ExitCode {
    let spec = Spec {
        command: NAME,
        dry_run: args.mutation.dry_run,
        key: args.mutation.idempotency_key.as_deref(),
        verbose: args.verbose,
        request: json!({
            "cwd": working_dir(),
            "paths": operand_keys(&args.paths),
            "force": args.force,
            "no_clobber": args.no_clobber,
            "target": args.target.directory.as_ref().map(|d| operand_keys(std::slice::from_ref(d))),
            "no_target_directory": args.target.no_directory,
        }),
    };
    run_journal(app, global, spec, |journal| {
        for (src, to) in destinations(&args.paths, &args.target)? {
            move_operand(journal, &args, &src, &to)?;
        }
        Ok(())
    })
}

fn move_operand(
    journal: &mut Journal<'_>,
    args: &MvArgs,
    src: &Path,
    to: &Path,
) -> Result<(), Failure> {
    if is_dot(src) {
        return journal.item_error(path_error(
            Category::Validation,
            "DOT_OPERAND",
            src,
            format!("cannot move {}: refusing to move '.' or '..'", quote(src)),
        ));
    }
    let meta = match fs::symlink_metadata(src) {
        Ok(meta) => meta,
        Err(e) => return journal.item_error(fs_error("cannot stat", src, &e)),
    };
    let (from_text, to_text) = match (path_text(src), path_text(to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return journal.item_error(e),
    };
    if meta.is_dir() && inside(src, to) {
        return journal.item_error(path_error(
            Category::Validation,
            "MOVE_INTO_ITSELF",
            src,
            format!(
                "cannot move {} to a subdirectory of itself, {}",
                quote(src),
                quote(to)
            ),
        ));
    }
    let existing = fs::symlink_metadata(to).ok();
    if let Some(there) = &existing {
        match clobber(
            src,
            to,
            same_file(&meta, there),
            args.no_clobber,
            args.force,
        ) {
            Clobber::Refuse(error) => return journal.item_error(*error),
            Clobber::Skip => {
                journal.skip();
                return Ok(());
            }
            Clobber::Replace => {}
        }
        if there.is_dir() != meta.is_dir() {
            let message = if there.is_dir() {
                format!(
                    "cannot overwrite directory {} with non-directory",
                    quote(to)
                )
            } else {
                format!(
                    "cannot overwrite non-directory {} with directory {}",
                    quote(to),
                    quote(src)
                )
            };
            return journal.item_error(path_error(
                Category::Conflict,
                "DESTINATION_KIND_DIFFERS",
                to,
                message,
            ));
        }
    }
    let replaced = existing.is_some();
    let parent = match to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let across = fs::metadata(parent).is_ok_and(|p| p.dev() != meta.dev());
    let detail = format!(
        "to {to_text}{}{}",
        if across {
            ", copied across file systems and the original removed"
        } else {
            ""
        },
        if replaced {
            ", replacing what is there"
        } else {
            ""
        }
    );
    let step = Step::new(
        "move",
        &from_text,
        detail,
        format!("move {} to {}", quote(src), quote(to)),
    )
    .property("to", to_text.clone())
    .property("replaces", replaced)
    .property("across_filesystems", across);
    let kind = Kind::of(&meta);
    if let Applied::Done(across) = journal.apply(step, || move_entry(src, to, &meta, replaced))? {
        let event = Moved {
            from: from_text,
            to: to_text,
            kind,
            replaced,
            across_filesystems: across,
        };
        journal.done(&event, || {
            format!("renamed {} -> {}", quote(src), quote(to))
        })?;
    }
    Ok(())
}

/// Renames `src` to `to`, or copies and removes it across file systems; true for the latter.
fn move_entry(src: &Path, to: &Path, meta: &Metadata, replace: bool) -> Result<bool, ErrorEvent> {
    let cannot = |e: &std::io::Error| {
        let mut error = fs_error(&format!("cannot move {} to", quote(src)), to, e);
        error.target =
            Some(String::from_utf8_lossy(src.as_os_str().as_encoded_bytes()).into_owned());
        error
    };
    match fs::rename(src, to) {
        Ok(()) => Ok(false),
        Err(e) if e.raw_os_error() == Some(EXDEV) => {
            if replace {
                let removed = if meta.is_dir() {
                    fs::remove_dir(to)
                } else {
                    fs::remove_file(to)
                };
                removed.map_err(|e| cannot(&e))?;
            }
            copy_preserving(src, to, meta).map_err(|e| {
                e.detail(
                    "partial_copy",
                    String::from_utf8_lossy(to.as_os_str().as_encoded_bytes()).into_owned(),
                )
            })?;
            let removed = if meta.is_dir() {
                fs::remove_dir_all(src)
            } else {
                fs::remove_file(src)
            };
            removed.map_err(|e| {
                fs_error("cannot remove", src, &e).hint(format!(
                    "{} was copied to {}; what is left of it was not removed",
                    quote(src),
                    quote(to)
                ))
            })?;
            Ok(true)
        }
        Err(e) => Err(cannot(&e)),
    }
}
