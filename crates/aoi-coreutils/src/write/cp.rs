//! `cp [-r] [-n] [-f] SRC... DEST`: copy files, and trees with `-r`, one `copied` event per
//! entry written (each file, link and directory).
//!
//! GNU's rules, with one difference: an existing destination file is a `conflict`
//! (`DESTINATION_EXISTS`) unless `-f` replaces it or `-n` skips it, where GNU replaces it
//! silently. An existing directory in the way of a directory is merged into, as GNU does.
//! Modes are GNU's without `-p`: a new file or directory gets its source's permission bits
//! less the umask; a replaced file keeps its own. `-r` copies symbolic links as links; without
//! it a link operand is followed. Entries are copied in name order. `-f` replaces a symbolic
//! link at the destination rather than writing through it.

use std::fs::{self, DirBuilder, File, FileTimes, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::flags::{GlobalArgs, MutationArgs};
use aoi::{Category, ErrorEvent, Failure};
use clap::Args;
use serde_json::json;

use super::journal::{run as run_journal, Applied, Journal, Spec, Step};
use super::{
    clobber, destinations, fs_error, inside, operand_keys, path_error, quote, same_file,
    sorted_names, working_dir, Clobber, Copied, Target,
};
use crate::entry::Kind;
use crate::paths::path_text;

/// The command's name, everywhere it is named.
pub const NAME: &str = "cp";

/// Copy files and trees (-r); an existing destination is a conflict unless -f or -n.
// The command's description, which `aoi-coreutils cp --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct CpArgs {
    /// Sources, then the destination (a directory to copy into, or the copy's path); with
    /// -t, sources only.
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// Copy directories and everything under them (links as links).
    #[arg(short = 'r', short_alias = 'R', long = "recursive")]
    pub recursive: bool,
    /// `-dR --preserve=all`: a tree copied as it is, links as links, modes, times and (as
    /// root) owners kept.
    #[arg(short = 'a', long = "archive")]
    pub archive: bool,
    /// `--preserve=mode,ownership,timestamps`.
    #[arg(short = 'p')]
    pub preserve_default: bool,
    /// Keep these of each source: mode, ownership, timestamps (`all`; `links`, `xattr`,
    /// `context` are accepted and not kept).
    #[arg(long = "preserve", value_name = "ATTRS", num_args = 0..=1, require_equals = true,
          default_missing_value = "mode,ownership,timestamps")]
    pub preserve: Option<String>,
    /// Keep none of these (after --preserve or -a).
    #[arg(long = "no-preserve", value_name = "ATTRS")]
    pub no_preserve: Option<String>,
    /// `--no-dereference --preserve=links`: copy symbolic links as links.
    #[arg(short = 'd')]
    pub links: bool,
    /// Copy symbolic links as links, operands too.
    #[arg(short = 'P', long = "no-dereference", overrides_with_all = ["dereference", "command_line"])]
    pub no_dereference: bool,
    /// Follow symbolic links, below the operands too.
    #[arg(short = 'L', long = "dereference", overrides_with_all = ["no_dereference", "command_line"])]
    pub dereference: bool,
    /// Follow symbolic links named as operands.
    #[arg(short = 'H', overrides_with_all = ["no_dereference", "dereference"])]
    pub command_line: bool,
    /// Copy a file only when the destination is missing or older.
    #[arg(short = 'u', long = "update")]
    pub update: bool,
    #[command(flatten)]
    pub target: Target,
    /// Leave an existing destination alone and go on (counted in `properties.skipped`).
    #[arg(short = 'n', long = "no-clobber", conflicts_with = "force")]
    pub no_clobber: bool,
    /// Replace an existing destination file (without it, an existing one is a conflict).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Print `'src' -> 'dest'` for each entry copied (human mode).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    #[command(flatten)]
    pub mutation: MutationArgs,
}

/// How existing destinations are met, and what is kept.
#[derive(Debug, Clone, Copy)]
struct Options {
    recursive: bool,
    force: bool,
    no_clobber: bool,
    /// Follow a link named as an operand.
    follow_operands: bool,
    /// Follow links below the operands.
    follow_below: bool,
    keep: Keep,
    update: bool,
}

/// What of a source a copy keeps (`-p`, `--preserve`, `-a`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Keep {
    mode: bool,
    ownership: bool,
    timestamps: bool,
}

impl Keep {
    fn any(self) -> bool {
        self.mode || self.ownership || self.timestamps
    }

    /// GNU's attribute lists: `mode,ownership,timestamps`, `all`, and those it has that are
    /// not kept here.
    fn parse(list: &str, on: bool, into: &mut Keep) -> Result<(), ErrorEvent> {
        for attr in list.split(',').filter(|a| !a.is_empty()) {
            match attr {
                "mode" => into.mode = on,
                "ownership" => into.ownership = on,
                "timestamps" => into.timestamps = on,
                "all" => {
                    *into = if on {
                        Keep {
                            mode: true,
                            ownership: true,
                            timestamps: true,
                        }
                    } else {
                        Keep::default()
                    }
                }
                "links" | "context" | "xattr" => {}
                other => {
                    return Err(ErrorEvent::new(
                        Category::Usage,
                        aoi::Code::from_static("ATTRIBUTE_INVALID"),
                        format!(
                            "invalid argument {} for '--preserve'",
                            quote(Path::new(other))
                        ),
                    )
                    .field("preserve"))
                }
            }
        }
        Ok(())
    }

    fn of(args: &CpArgs) -> Result<Keep, ErrorEvent> {
        let mut keep = Keep::default();
        if args.archive {
            Keep::parse("all", true, &mut keep)?;
        }
        if args.preserve_default {
            Keep::parse("mode,ownership,timestamps", true, &mut keep)?;
        }
        if let Some(list) = &args.preserve {
            Keep::parse(list, true, &mut keep)?;
        }
        if let Some(list) = &args.no_preserve {
            Keep::parse(list, false, &mut keep)?;
        }
        Ok(keep)
    }
}

/// Runs `cp`.
pub fn run(app: &App, global: &GlobalArgs, args: CpArgs) -> ExitCode {
    let spec = Spec {
        command: NAME,
        dry_run: args.mutation.dry_run,
        key: args.mutation.idempotency_key.as_deref(),
        verbose: args.verbose,
        request: json!({
            "cwd": working_dir(),
            "paths": operand_keys(&args.paths),
            "recursive": args.recursive || args.archive,
            "force": args.force,
            "no_clobber": args.no_clobber,
            "archive": args.archive,
            "preserve": [args.preserve_default, args.preserve.is_some(), args.no_preserve.is_some()],
            "dereference": [args.links, args.no_dereference, args.dereference, args.command_line],
            "update": args.update,
            "target": args.target.directory.as_ref().map(|d| operand_keys(std::slice::from_ref(d))),
            "no_target_directory": args.target.no_directory,
        }),
    };
    let recursive = args.recursive || args.archive;
    // GNU's rule: with -R (and without -L or -H) links are copied as links; without it
    // operands are followed; -P, -d and -a never follow.
    let never = args.no_dereference || args.links || args.archive;
    let options = |keep| Options {
        recursive,
        force: args.force,
        no_clobber: args.no_clobber,
        follow_operands: args.dereference || args.command_line || (!recursive && !never),
        follow_below: args.dereference,
        keep,
        update: args.update,
    };
    run_journal(app, global, spec, |journal| {
        let options = options(Keep::of(&args)?);
        for (src, to) in destinations(&args.paths, &args.target)? {
            copy_operand(journal, options, &src, &to)?;
        }
        Ok(())
    })
}

fn copy_operand(
    journal: &mut Journal<'_>,
    options: Options,
    src: &Path,
    to: &Path,
) -> Result<(), Failure> {
    let meta = if options.follow_operands {
        fs::metadata(src)
    } else {
        fs::symlink_metadata(src)
    };
    let meta = match meta {
        Ok(meta) => meta,
        Err(e) => return journal.item_error(fs_error("cannot stat", src, &e)),
    };
    if meta.is_dir() {
        if !options.recursive {
            return journal.item_error(path_error(
                Category::Validation,
                "IS_A_DIRECTORY",
                src,
                format!("-r not specified; omitting directory {}", quote(src)),
            ));
        }
        if inside(src, to) {
            return journal.item_error(path_error(
                Category::Validation,
                "COPY_INTO_ITSELF",
                src,
                format!(
                    "cannot copy a directory, {}, into itself, {}",
                    quote(src),
                    quote(to)
                ),
            ));
        }
    }
    copy_entry(journal, options, src, to, &meta)
}

/// Copies one entry (and, for a directory, what is under it).
fn copy_entry(
    journal: &mut Journal<'_>,
    options: Options,
    src: &Path,
    to: &Path,
    meta: &Metadata,
) -> Result<(), Failure> {
    let (from_text, to_text) = match (path_text(src), path_text(to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return journal.item_error(e),
    };
    let kind = Kind::of(meta);
    let existing = fs::symlink_metadata(to).ok();
    if kind == Kind::Dir {
        return copy_dir(
            journal,
            options,
            src,
            to,
            meta,
            existing,
            (from_text, to_text),
        );
    }
    if !matches!(kind, Kind::File | Kind::Symlink) {
        return journal.item_error(path_error(
            Category::Unsupported,
            "UNSUPPORTED_FILE_TYPE",
            src,
            format!("cannot copy special file {}", quote(src)),
        ));
    }
    if let Some(there) = &existing {
        // -u: a destination as new as the source stays.
        if options.update && there.modified().ok() >= meta.modified().ok() {
            journal.skip();
            return Ok(());
        }
        let followed = fs::metadata(to).ok();
        let same = same_file(meta, there) || followed.is_some_and(|f| same_file(meta, &f));
        match clobber(src, to, same, options.no_clobber, options.force) {
            Clobber::Refuse(error) => return journal.item_error(*error),
            Clobber::Skip => {
                journal.skip();
                return Ok(());
            }
            Clobber::Replace => {}
        }
        if there.is_dir() {
            return journal.item_error(path_error(
                Category::Conflict,
                "DESTINATION_IS_DIRECTORY",
                to,
                format!(
                    "cannot overwrite directory {} with non-directory",
                    quote(to)
                ),
            ));
        }
    }
    let replaced = existing.is_some();
    let bytes = if kind == Kind::File { meta.len() } else { 0 };
    let what = if kind == Kind::File {
        "file"
    } else {
        "symbolic link"
    };
    let detail = format!(
        "{what} from {from_text} ({bytes} bytes){}",
        if replaced {
            ", replacing the existing file"
        } else {
            ""
        }
    );
    let step = Step::new(
        "copy",
        &to_text,
        detail,
        format!("copy {} to {}", quote(src), quote(to)),
    )
    .property("from", from_text.clone())
    .property("replaces", replaced);
    let done = journal.apply(step, || {
        let bytes = if kind == Kind::File {
            copy_file(src, to, meta.mode() & 0o777, existing.as_ref())?
        } else {
            copy_link(src, to, replaced)?;
            0
        };
        keep(to, meta, options.keep)?;
        Ok(bytes)
    })?;
    if let Applied::Done(bytes) = done {
        let event = Copied {
            from: from_text,
            to: to_text,
            kind,
            bytes,
            replaced,
        };
        journal.done(&event, || format!("{} -> {}", quote(src), quote(to)))?;
    }
    Ok(())
}

fn copy_dir(
    journal: &mut Journal<'_>,
    options: Options,
    src: &Path,
    to: &Path,
    meta: &Metadata,
    existing: Option<Metadata>,
    (from_text, to_text): (String, String),
) -> Result<(), Failure> {
    let mode = meta.mode() & 0o7777;
    let mut created = false;
    let existing_dir = existing.is_some();
    match existing {
        // A directory (or a link to one) in the way is merged into, as GNU does.
        Some(_) if fs::metadata(to).is_ok_and(|m| m.is_dir()) => {}
        Some(_) => {
            return journal.item_error(path_error(
                Category::Conflict,
                "DESTINATION_NOT_DIRECTORY",
                to,
                format!(
                    "cannot overwrite non-directory {} with directory {}",
                    quote(to),
                    quote(src)
                ),
            ))
        }
        None => {
            let step = Step::new(
                "copy",
                &to_text,
                format!("directory from {from_text}"),
                format!("copy directory {} to {}", quote(src), quote(to)),
            )
            .property("from", from_text.clone())
            .property("replaces", false);
            // Made writable by its owner while it is filled; its mode is set at the end.
            let done = journal.apply(step, || {
                DirBuilder::new()
                    .mode(mode | 0o700)
                    .create(to)
                    .map_err(|e| fs_error("cannot create directory", to, &e))
            })?;
            match done {
                Applied::Done(()) => {
                    created = true;
                    let event = Copied {
                        from: from_text,
                        to: to_text,
                        kind: Kind::Dir,
                        bytes: 0,
                        replaced: false,
                    };
                    journal.done(&event, || format!("{} -> {}", quote(src), quote(to)))?;
                }
                Applied::Planned => {}
                Applied::Failed => return Ok(()),
            }
        }
    }
    match sorted_names(src) {
        Ok(names) => {
            for name in names {
                let child = src.join(&name);
                let found = if options.follow_below {
                    fs::metadata(&child)
                } else {
                    fs::symlink_metadata(&child)
                };
                match found {
                    Ok(m) => copy_entry(journal, options, &child, &to.join(&name), &m)?,
                    // Gone since it was listed: there is nothing to copy.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => journal.item_error(fs_error("cannot stat", &child, &e))?,
                }
            }
        }
        Err(e) => journal.item_error(fs_error("cannot access", src, &e))?,
    }
    if created && !options.keep.mode {
        if let Err(e) = finish_dir_mode(to, mode) {
            journal.item_error(fs_error("cannot set permissions of", to, &e))?;
        }
    }
    // A directory's times and mode last: copying into it changed them.
    if (created || existing_dir) && options.keep.any() && !journal.dry_run() {
        if let Err(error) = keep(to, meta, options.keep) {
            journal.item_error(error)?;
        }
    }
    Ok(())
}

/// Gives `to` what `keep` asks of `meta` (its source): mode, owner (as root; as GNU, a
/// failure to keep the owner is not an error for another user), times (a link's own, not
/// its target's). A link has no mode of its own.
fn keep(to: &Path, meta: &Metadata, keep: Keep) -> Result<(), ErrorEvent> {
    if keep.ownership {
        let owned = std::os::unix::fs::lchown(to, Some(meta.uid()), Some(meta.gid()));
        if let Err(e) = owned {
            if e.kind() != io::ErrorKind::PermissionDenied {
                return Err(fs_error("cannot preserve ownership of", to, &e));
            }
        }
    }
    if meta.file_type().is_symlink() {
        if keep.timestamps {
            let at = |secs: i64, nanos: i64| rustix::fs::Timespec {
                tv_sec: secs,
                tv_nsec: nanos,
            };
            let times = rustix::fs::Timestamps {
                last_access: at(meta.atime(), meta.atime_nsec()),
                last_modification: at(meta.mtime(), meta.mtime_nsec()),
            };
            rustix::fs::utimensat(
                rustix::fs::CWD,
                to,
                &times,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .map_err(|e| fs_error("cannot preserve times of", to, &e.into()))?;
        }
        return Ok(());
    }
    if keep.mode {
        fs::set_permissions(to, fs::Permissions::from_mode(meta.mode() & 0o7777))
            .map_err(|e| fs_error("cannot preserve permissions of", to, &e))?;
    }
    if keep.timestamps {
        let times = FileTimes::new()
            .set_accessed(meta.accessed().unwrap_or(std::time::UNIX_EPOCH))
            .set_modified(meta.modified().unwrap_or(std::time::UNIX_EPOCH));
        File::open(to)
            .and_then(|f| f.set_times(times))
            .map_err(|e| fs_error("cannot preserve times of", to, &e))?;
    }
    Ok(())
}

/// Gives a directory made with `mode | 0o700` (less the umask) the mode `mode` less the umask.
fn finish_dir_mode(path: &Path, mode: u32) -> io::Result<()> {
    let have = fs::symlink_metadata(path)?.permissions().mode() & 0o7777;
    let want = have & (mode | 0o7077);
    if want != have {
        fs::set_permissions(path, fs::Permissions::from_mode(want))?;
    }
    Ok(())
}

/// Copies a file's bytes to `to`, a new file with `mode` (less the umask), or the existing
/// file `existing` (truncated, its mode kept; removed first when it cannot be opened or is
/// not a regular file). Returns the bytes written.
pub fn copy_file(
    src: &Path,
    to: &Path,
    mode: u32,
    existing: Option<&Metadata>,
) -> Result<u64, ErrorEvent> {
    let mut input = File::open(src).map_err(|e| fs_error("cannot open", src, &e))?;
    let create_new = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(to)
            .map_err(|e| fs_error("cannot create regular file", to, &e))
    };
    let mut output = match existing {
        Some(m) if m.file_type().is_file() => {
            match OpenOptions::new().write(true).truncate(true).open(to) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    fs::remove_file(to)
                        .map_err(|_| fs_error("cannot create regular file", to, &e))?;
                    create_new()?
                }
                Err(e) => return Err(fs_error("cannot create regular file", to, &e)),
            }
        }
        Some(_) => {
            fs::remove_file(to).map_err(|e| fs_error("cannot remove", to, &e))?;
            create_new()?
        }
        None => create_new()?,
    };
    io::copy(&mut input, &mut output).map_err(|e| fs_error("error copying to", to, &e))
}

/// Makes `to` a link with `src`'s target (removing what is at `to` when `replace`).
fn copy_link(src: &Path, to: &Path, replace: bool) -> Result<(), ErrorEvent> {
    let target = fs::read_link(src).map_err(|e| fs_error("cannot read symbolic link", src, &e))?;
    if replace {
        fs::remove_file(to).map_err(|e| fs_error("cannot remove", to, &e))?;
    }
    std::os::unix::fs::symlink(&target, to)
        .map_err(|e| fs_error("cannot create symbolic link", to, &e))
}

/// Copies `src` (described by `meta`, not followed) to the new path `to` with its exact mode
/// and times, everything under it too; the first failure stops the copy. For `mv` across
/// file systems.
pub fn copy_preserving(src: &Path, to: &Path, meta: &Metadata) -> Result<(), ErrorEvent> {
    let mode = meta.mode() & 0o7777;
    let times = FileTimes::new()
        .set_accessed(meta.accessed().unwrap_or(std::time::UNIX_EPOCH))
        .set_modified(meta.modified().unwrap_or(std::time::UNIX_EPOCH));
    match Kind::of(meta) {
        Kind::Dir => {
            DirBuilder::new()
                .mode(0o700)
                .create(to)
                .map_err(|e| fs_error("cannot create directory", to, &e))?;
            for name in sorted_names(src).map_err(|e| fs_error("cannot access", src, &e))? {
                let child = src.join(&name);
                let m = fs::symlink_metadata(&child)
                    .map_err(|e| fs_error("cannot stat", &child, &e))?;
                copy_preserving(&child, &to.join(&name), &m)?;
            }
            let dir = File::open(to).map_err(|e| fs_error("cannot open", to, &e))?;
            dir.set_times(times)
                .map_err(|e| fs_error("cannot preserve times of", to, &e))?;
            fs::set_permissions(to, fs::Permissions::from_mode(mode))
                .map_err(|e| fs_error("cannot preserve permissions of", to, &e))
        }
        Kind::File => {
            copy_file(src, to, 0o600, None)?;
            let file = OpenOptions::new()
                .write(true)
                .open(to)
                .map_err(|e| fs_error("cannot open", to, &e))?;
            file.set_times(times)
                .map_err(|e| fs_error("cannot preserve times of", to, &e))?;
            fs::set_permissions(to, fs::Permissions::from_mode(mode))
                .map_err(|e| fs_error("cannot preserve permissions of", to, &e))
        }
        Kind::Symlink => copy_link(src, to, false),
        _ => Err(path_error(
            Category::Unsupported,
            "UNSUPPORTED_FILE_TYPE",
            src,
            format!(
                "cannot move special file {} across file systems",
                quote(src)
            ),
        )),
    }
}
