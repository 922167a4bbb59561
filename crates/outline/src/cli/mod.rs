//! The command layer: one clap definition, the tool's description for discovery, and the
//! dispatch of each subcommand to its module.

mod admin;
mod auth;
mod debug;
mod errors;
mod events;
mod human;
mod name;
mod read;
mod sync;
mod transfer;
mod watch;
mod write;

use std::path::PathBuf;
use std::process::ExitCode;

use aoi::app::{human_error, App, Discovery};
use aoi::discover::capabilities::CommandSpec;
use aoi::discover::schema::EventSchema;
use aoi::surface::flags::{ConfirmArgs, GlobalArgs, MutationArgs, PageArgs};
use aoi::wire::FrameworkEvent;
use aoi::{Category, Code, DomainEvent, ErrorEvent, Progress};
use clap::{Args, Parser, Subcommand};

use errors::RunError;
use events::{
    Changed, Copied, Created, CredentialEvent, Deleted, Entry, HitEvent, Moved, ProtectionEvent,
    StatusEvent, SyncPlanned, Synced, Updated,
};
use outline::store::Store;

/// A local document store with full-text search, for agents and people.
#[derive(Debug, Parser)]
#[command(
    name = "outline",
    version,
    after_help = "Shell completions: outline completions bash|zsh|fish. Man pages: outline man [COMMAND]."
)]
pub struct Cli {
    #[command(flatten)]
    aoi: GlobalArgs,
    /// The database file (default: $XDG_DATA_HOME/outline/outline.db). A file named here
    /// must exist for a read; a write creates it (not its directory, unless --create-dirs).
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        env = "OUTLINE_DB",
        help_heading = "Global options"
    )]
    db: Option<PathBuf>,
    /// Let a write create the missing directories of --db's path.
    #[arg(long, global = true, help_heading = "Global options")]
    create_dirs: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a document.
    #[command(name = name::CREATE)]
    Create(write::CreateArgs),
    /// Show one document.
    #[command(name = name::GET)]
    Get(read::GetArgs),
    /// Change a document's title, body, tags or collection.
    #[command(name = name::UPDATE)]
    Update(write::UpdateArgs),
    /// List documents in creation order, a page at a time.
    #[command(name = name::LIST)]
    List {
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Full-text search, best match first, a page at a time.
    ///
    /// The query is plain words: a document matches when its title or body holds every one
    /// of them, as whole words, in any order, case and accents ignored (`Déploy` finds
    /// `deploy`). There are no operators: `OR`, `NOT`, quotes and `*` are words like any
    /// other, so `rollback OR deploy` looks for documents with all three.
    #[command(verbatim_doc_comment)]
    #[command(name = name::SEARCH)]
    Search {
        /// Words to look for (every word must match, as a whole word).
        query: String,
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Move a document to another collection, optionally retitling it.
    #[command(name = name::MOVE)]
    Move(write::MoveArgs),
    /// Copy a document into a new document with a new id.
    #[command(name = name::COPY)]
    Copy(write::CopyArgs),
    /// Delete documents by id or by query (destructive: needs --confirm).
    #[command(name = name::DELETE)]
    Delete {
        /// Ids of the documents to delete (or the ends of them that `list` and `search` show).
        ids: Vec<String>,
        /// Also delete every document matching these words.
        #[arg(long, value_name = "Q")]
        query: Option<String>,
        #[command(flatten)]
        confirm: ConfirmArgs,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    #[command(flatten)]
    Shell(aoi::surface::shell::ShellCommand),
    /// Import documents from JSONL (plain records or an `outline export` stream).
    ///
    /// One JSON object per line:
    ///   {"title": "Deploying", "body": "Run the deploy job", "tags": ["ops"], "collection": "runbooks"}
    /// `title` is required (one line, not blank); `body`, `tags` (each without whitespace) and
    /// `collection` (default: inbox) are optional; `id`, `created_at` and `updated_at` keep
    /// those of an export. Unknown fields are refused. `outline input-schema --command import
    /// --output json` has the exact schema (`$defs.record`). A bad line stops the import before
    /// anything is written, unless --continue-on-error (the run then fails, partial).
    #[command(verbatim_doc_comment)]
    #[command(name = name::IMPORT)]
    Import(transfer::ImportArgs),
    /// Export every document, with its body, in list order.
    #[command(name = name::EXPORT)]
    Export {
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Stream changes as they happen, with heartbeats, until interrupted.
    #[command(name = name::WATCH)]
    Watch(watch::WatchArgs),
    /// Counts and facts about the database: documents, collections, tags, size, schema.
    #[command(name = name::STATUS)]
    Status,
    /// Check that the database is reachable, current and consistent, and where a token comes from.
    #[command(name = name::DOCTOR)]
    Doctor,
    /// Reconcile with another outline database: states the direction and the changes, never deletes.
    #[command(name = name::SYNC)]
    Sync(sync::SyncArgs),
    /// The token that protected databases ask a sync for: login, logout, status, protect.
    #[command(name = name::AUTH)]
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
    },
    #[command(flatten)]
    Discovery(Discovery),
}

/// Filters shared by `list` and `search`.
#[derive(Debug, Clone, Args, serde::Serialize)]
pub struct FilterArgs {
    /// Only documents in this collection.
    #[arg(long, value_name = "C")]
    collection: Option<String>,
    /// Only documents with this tag.
    #[arg(long, value_name = "X")]
    tag: Option<String>,
}

impl FilterArgs {
    /// The filter as the flags that give it, for a command line.
    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(c) = &self.collection {
            flags.extend(["--collection".to_owned(), c.clone()]);
        }
        if let Some(t) = &self.tag {
            flags.extend(["--tag".to_owned(), t.clone()]);
        }
        flags
    }

    fn to_filter(&self) -> outline::store::ListFilter {
        outline::store::ListFilter {
            collection: self.collection.clone(),
            tag: self.tag.clone(),
        }
    }
}

fn app() -> App {
    App::new(
        "outline",
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.outline.events",
    )
    .event_schema(|identity| {
        EventSchema::new(identity, "https://schemas.machinemode.io/outline")
            .domain_event::<Entry>()
            .domain_event::<HitEvent>()
            .domain_event::<Created>()
            .domain_event::<Updated>()
            .domain_event::<Deleted>()
            .domain_event::<Moved>()
            .domain_event::<Copied>()
            .domain_event::<Changed>()
            .domain_event::<StatusEvent>()
            .domain_event::<SyncPlanned>()
            .domain_event::<Synced>()
            .domain_event::<CredentialEvent>()
            .domain_event::<ProtectionEvent>()
            .build()
    })
    .command(
        CommandSpec::new(name::CREATE)
            .additive()
            .events([Created::TYPE])
            .example([name::CREATE, "--title", "Meeting notes", "--tag", "work"]),
    )
    .command(
        CommandSpec::new(name::GET)
            .read_only()
            .events([Entry::TYPE])
            .example([
                name::GET,
                "doc_01JZQ7X4TQ9V6H0ZT7K8F2W3C1",
                "--max-bytes",
                "4096",
            ]),
    )
    .command(
        CommandSpec::new(name::UPDATE)
            .events([Updated::TYPE])
            .example([
                name::UPDATE,
                "doc_01JZQ7X4TQ9V6H0ZT7K8F2W3C1",
                "--title",
                "New title",
                "--if-match",
                "1",
            ]),
    )
    .command(CommandSpec::new(name::MOVE).events([Moved::TYPE]).example([
        name::MOVE,
        "doc_01JZQ7X4TQ9V6H0ZT7K8F2W3C1",
        "--to",
        "archive",
        "--if-match",
        "1",
    ]))
    .command(
        CommandSpec::new(name::COPY)
            .additive()
            .events([Copied::TYPE])
            .example([
                name::COPY,
                "doc_01JZQ7X4TQ9V6H0ZT7K8F2W3C1",
                "--to",
                "templates",
            ]),
    )
    .command(
        CommandSpec::new(name::LIST)
            .read_only()
            .events([Entry::TYPE])
            .example([name::LIST, "--collection", "work", "--limit", "20"]),
    )
    .command(
        CommandSpec::new(name::SEARCH)
            .read_only()
            .events([HitEvent::TYPE])
            .example([name::SEARCH, "agent operable", "--limit", "5"]),
    )
    .command(
        CommandSpec::new(name::DELETE)
            .destructive()
            .events([Deleted::TYPE])
            .example([
                name::DELETE,
                "--query",
                "draft",
                "--confirm",
                "--confirm-count",
                "3",
            ]),
    )
    .command(
        CommandSpec::new(name::IMPORT)
            .additive()
            .events([Created::TYPE, Progress::TYPE])
            .input_default(aoi::surface::flags::InputMode::FailFast)
            .record::<transfer::ImportRecord>()
            .example([name::IMPORT, "--input-jsonl", "docs.jsonl"]),
    )
    .command(
        CommandSpec::new(name::EXPORT)
            .read_only()
            .events([Entry::TYPE])
            .example([name::EXPORT, "--collection", "work"]),
    )
    .command(
        CommandSpec::new(name::WATCH)
            .read_only()
            .unbounded()
            .events([Changed::TYPE])
            .example([name::WATCH, "--interval-ms", "1000"]),
    )
    .command(
        CommandSpec::new(name::STATUS)
            .read_only()
            .events([StatusEvent::TYPE])
            .example([name::STATUS]),
    )
    .command(
        CommandSpec::new(name::DOCTOR)
            .read_only()
            .example([name::DOCTOR]),
    )
    .command(
        CommandSpec::new(name::SYNC)
            .events([SyncPlanned::TYPE, Synced::TYPE])
            .auth("a protected remote needs OUTLINE_TOKEN or a token saved by `outline auth login`")
            .example([name::SYNC, "team.db", "--direction", "push"]),
    )
    .command(
        CommandSpec::new(name::AUTH_LOGIN)
            .events([CredentialEvent::TYPE])
            .example([name::AUTH, name::leaf(name::AUTH_LOGIN), "--with-token"]),
    )
    .command(
        CommandSpec::new(name::AUTH_LOGOUT)
            .events([CredentialEvent::TYPE])
            .example([name::AUTH, name::leaf(name::AUTH_LOGOUT)]),
    )
    .command(
        CommandSpec::new(name::AUTH_STATUS)
            .read_only()
            .events([CredentialEvent::TYPE])
            .example([name::AUTH, name::leaf(name::AUTH_STATUS)]),
    )
    .command(
        CommandSpec::new(name::AUTH_PROTECT)
            .events([ProtectionEvent::TYPE])
            .auth("OUTLINE_TOKEN or a token saved by `outline auth login`")
            .example([name::AUTH, name::leaf(name::AUTH_PROTECT)]),
    )
    .command(
        CommandSpec::new(name::AUTH_UNPROTECT)
            .events([ProtectionEvent::TYPE])
            .auth("the database's token, from OUTLINE_TOKEN or `outline auth login`")
            .example([name::AUTH, name::leaf(name::AUTH_UNPROTECT)]),
    )
    .command(CommandSpec::new("input-schema").read_only().example([
        "input-schema",
        "--command",
        "search",
    ]))
}

/// The database a run is about: `--db`/`OUTLINE_DB` (with `--create-dirs`), else the default.
#[derive(Debug, Clone, Default)]
pub struct Db {
    /// The path named by `--db` or `OUTLINE_DB`; `None` for the default location.
    pub path: Option<PathBuf>,
    /// A write may create the missing directories of a named path.
    pub create_dirs: bool,
}

impl Db {
    /// The path named, when one was (an empty one is none).
    pub fn named(&self) -> Option<&PathBuf> {
        self.path.as_ref().filter(|p| !p.as_os_str().is_empty())
    }
}

/// The database path: `--db`/`OUTLINE_DB`, else the XDG data directory.
fn db_path(db: &Db) -> Result<PathBuf, ErrorEvent> {
    if let Some(path) = db.named() {
        return Ok(path.clone());
    }
    if let Some(path) = xdg_file("XDG_DATA_HOME", ".local/share", "outline.db") {
        return Ok(path);
    }
    Err(ErrorEvent::new(
        Category::Config,
        Code::from_static("DATABASE_PATH_UNKNOWN"),
        "no database path: neither --db, OUTLINE_DB, XDG_DATA_HOME nor HOME is set",
    )
    .hint("pass --db PATH"))
}

/// `$VAR/outline/FILE`, else `$HOME/HOME_DIR/outline/FILE` (the XDG base directories, with
/// their documented fallbacks); `None` when neither variable is set.
pub fn xdg_file(var: &str, home_dir: &str, file: &str) -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = match set(var) {
        Some(base) => PathBuf::from(base),
        None => PathBuf::from(set("HOME")?).join(home_dir),
    };
    Some(base.join("outline").join(file))
}

/// How a command uses the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// It only reads: a database that does not exist yet reads as an empty one, and nothing
    /// is created on disk (a read-only command has no side effects, §14.1).
    Read,
    /// It may write: the database is created on first use, and removed again if the command
    /// fails before [`Opened::finish`] says it succeeded (nothing half-made stays behind).
    Write,
}

impl Access {
    /// `Read` for a dry run, `Write` otherwise.
    pub fn unless_dry_run(dry_run: bool) -> Access {
        if dry_run {
            Access::Read
        } else {
            Access::Write
        }
    }
}

/// An open database; for a write that created the file, the file is removed when this is
/// dropped without [`Opened::finish`] reporting success.
#[derive(Debug)]
pub struct Opened {
    store: Option<Store>,
    /// What this open created: the database file and the directories made for it.
    created: Option<(PathBuf, Vec<PathBuf>)>,
}

impl Opened {
    /// Passes `result` through; when it is a success, whatever the open created stays.
    pub fn finish<T, E>(mut self, result: Result<T, E>) -> Result<T, E> {
        if result.is_ok() {
            self.created = None;
        }
        result
    }
}

impl std::ops::Deref for Opened {
    type Target = Store;
    fn deref(&self) -> &Store {
        // Present until drop.
        self.store.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl std::ops::DerefMut for Opened {
    fn deref_mut(&mut self) -> &mut Store {
        self.store.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        // Close the connection first, so that SQLite's own files are settled.
        drop(self.store.take());
        if let Some((file, dirs)) = self.created.take() {
            for suffix in ["", "-wal", "-shm", "-journal", "-search"] {
                let mut name = file.clone().into_os_string();
                name.push(suffix);
                let _ = std::fs::remove_file(name);
            }
            for dir in dirs.iter().rev() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

/// Opens the database this run is about, for `access`.
///
/// A database named with `--db` or `OUTLINE_DB` that does not exist is `not_found` for a
/// read (an agent with a typo must not conclude the store is empty); a write creates it, and
/// its missing directories only with `--create-dirs`. The default database reads as empty
/// until the first write creates it and its directories.
pub fn open_store(db: Db, access: Access) -> Result<Opened, RunError> {
    let path = db_path(&db)?;
    debug::log(format!(
        "database {} ({}, {}), for {}",
        path.display(),
        if db.named().is_some() {
            "named"
        } else {
            "default location"
        },
        if path.exists() {
            "exists"
        } else {
            "does not exist"
        },
        match access {
            Access::Read => "reading",
            Access::Write => "writing",
        }
    ));
    if path.exists() {
        let store = match access {
            Access::Read => Store::open_for_reading(&path)?,
            Access::Write => Store::open(&path)?,
        };
        return Ok(Opened {
            store: Some(store),
            created: None,
        });
    }
    let named = db.named().is_some();
    if access == Access::Read {
        if named {
            return Err(errors::database_not_found(&path).into());
        }
        return Ok(Opened {
            store: Some(Store::open_in_memory()?),
            created: None,
        });
    }
    let mut dirs = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        dirs.push(d.to_owned());
        dir = d.parent();
    }
    dirs.reverse();
    if named && !db.create_dirs {
        if let Some(missing) = dirs.first() {
            return Err(errors::directory_not_found(&path, missing).into());
        }
    }
    match Store::open(&path) {
        Ok(store) => Ok(Opened {
            store: Some(store),
            created: Some((path, dirs)),
        }),
        Err(e) => {
            // Removes whatever the failed open left.
            drop(Opened {
                store: None,
                created: Some((path, dirs)),
            });
            Err(e.into())
        }
    }
}

/// Reports a human-mode failure on stderr and returns its exit code.
/// `ids` as a table's ID column shows them: each one's shortest end that no other document's
/// id shares ([`Store::short_ids`]), which every command takes in place of the id. When the
/// database cannot be read again the ids stay whole: the column is only ever shorter, never
/// wrong.
pub fn table_ids<'a>(db: &Db, ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let ids: Vec<&str> = ids.into_iter().collect();
    open_store(db.clone(), Access::Read)
        .ok()
        .and_then(|store| store.short_ids(&ids).ok())
        .unwrap_or_else(|| ids.iter().map(|id| (*id).to_owned()).collect())
}

pub fn human_failure(e: RunError, color: bool) -> ExitCode {
    if let RunError::Store(store) = &e {
        debug::causes(store);
    }
    let denied = e.is_denied();
    let code = human_error(&e.event(), color);
    if denied {
        ExitCode::from(aoi::exit_code::NO_PERM)
    } else {
        code
    }
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let app = app();
    let cli: Cli = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let Cli {
        aoi,
        db,
        create_dirs,
        command,
    } = cli;
    let db = Db {
        path: db,
        create_dirs,
    };
    let started = std::time::Instant::now();
    debug::enable(aoi.debug);
    debug::log(format!("outline {}", env!("CARGO_PKG_VERSION")));
    let code = human::checked_exit(run(&app, &aoi, db, command));
    debug::log(format!(
        "done in {:.1} ms",
        started.elapsed().as_secs_f64() * 1000.0
    ));
    code
}

/// Runs `command`.
fn run(app: &App, aoi: &GlobalArgs, db: Db, command: Command) -> ExitCode {
    use clap::CommandFactory;
    match command {
        Command::Shell(shell) => shell.run(Cli::command(), "outline"),
        Command::Import(args) => transfer::import(app, aoi, db, args),
        Command::Export { filter } => transfer::export(app, aoi, db, filter),
        Command::Watch(args) => watch::watch(app, aoi, db, args),
        Command::Status => admin::status(app, aoi, db),
        Command::Doctor => admin::doctor(app, aoi, db),
        Command::Sync(args) => sync::sync(app, aoi, db, args),
        Command::Auth { command } => auth::auth(app, aoi, db, command),
        Command::Discovery(d) => app.discover::<Cli>(aoi, &d),
        Command::Create(args) => write::create(app, aoi, db, args),
        Command::Get(args) => read::get(app, aoi, db, args),
        Command::Update(args) => write::update(app, aoi, db, args),
        Command::Move(args) => write::move_doc(app, aoi, db, args),
        Command::Copy(args) => write::copy(app, aoi, db, args),
        Command::List { filter, page } => read::list(app, aoi, db, filter, page),
        Command::Search {
            query,
            filter,
            page,
        } => read::search(app, aoi, db, query, filter, page),
        Command::Delete {
            ids,
            query,
            confirm,
            mutation,
        } => write::delete(
            app,
            aoi,
            db,
            write::DeleteRequest {
                ids,
                query,
                confirm,
                mutation,
            },
        ),
    }
}
