//! The write commands: `create`, `update` and `delete` (§14 safe writes: dry-run, confirmation,
//! idempotency committed in the same transaction as the effect).

use crate::cli::Db;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::cursor::request_hash;
use aoi::surface::flags::{ConfirmArgs, GlobalArgs, MutationArgs};
use aoi::surface::safety::{begin, replay, Confirmation, Effects, Recorded, Replay};
use aoi::{Category, Code, Emitter, ErrorEvent, Failure, Outcome, Plan};
use clap::Args;
use outline::store::{plain_query, Document, ListFilter, NewDocument, Patch, DEFAULT_COLLECTION};

use super::errors::RunError;
use super::events::{Copied, Created, Deleted, Moved, Updated};
use super::name;
use super::{human, human_failure, open_store, Access};

/// What a write did.
enum Done<E> {
    /// The effect was applied; these are its audit events.
    Applied(Vec<E>),
    /// The idempotency key had a record: nothing was done again.
    Replayed(Recorded),
    /// A dry run: these are the planned effects.
    Planned(Vec<Plan>),
}

/// `outline create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The title.
    #[arg(long, value_name = "T")]
    title: String,
    /// The body text.
    #[arg(long, value_name = "B", conflicts_with = "body_file")]
    body: Option<String>,
    /// Read the body from this file.
    #[arg(long, value_name = "PATH")]
    body_file: Option<PathBuf>,
    /// A tag (repeat for several).
    #[arg(long = "tag", value_name = "X")]
    tags: Vec<String>,
    /// The collection (default: inbox).
    #[arg(long, value_name = "C")]
    collection: Option<String>,
    #[command(flatten)]
    mutation: MutationArgs,
}

fn run_create(db: Db, args: &CreateArgs) -> Result<Done<Created>, RunError> {
    let body = match (&args.body, &args.body_file) {
        (Some(body), _) => body.clone(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map_err(|e| ErrorEvent::cannot_open(&path.display().to_string(), &e))?,
        (None, None) => String::new(),
    };
    let collection = args
        .collection
        .clone()
        .unwrap_or_else(|| DEFAULT_COLLECTION.to_owned());
    if args.mutation.dry_run {
        return Ok(Done::Planned(vec![Plan {
            action: "create".into(),
            target: Some(collection.clone()),
            detail: Some(format!("create {:?} ({} bytes)", args.title, body.len())),
            properties: None,
        }]));
    }
    let hash = request_hash(name::CREATE, &(&args.title, &body, &args.tags, &collection));
    let new = NewDocument::new(args.title.clone(), body)
        .tags(args.tags.clone())
        .collection(collection);
    let mut store = open_store(db, Access::Write)?;
    let done = store.transaction(|tx| {
        let mut recorder = match &args.mutation.idempotency_key {
            Some(key) => match begin(tx, key, &hash)? {
                Replay::Replayed(recorded) => return Ok(Done::Replayed(recorded)),
                Replay::Fresh(recorder) => Some(recorder),
            },
            None => None,
        };
        let doc = tx.create(new)?;
        let event = Created {
            id: doc.id,
            version: doc.version,
            title: doc.title,
            collection: doc.collection,
        };
        if let Some(mut r) = recorder.take() {
            r.record(&event)?;
            r.finish(tx, true)?;
        }
        Ok(Done::Applied(vec![event]))
    });
    store.finish(done)
}

/// Emits what a write did and returns the outcome to finish with.
fn emit_done<W: Write, E: aoi::DomainEvent>(
    out: &mut Emitter<W>,
    done: Done<E>,
) -> Result<Outcome, Failure> {
    match done {
        Done::Applied(events) => {
            for event in &events {
                out.emit(event)?;
            }
            Ok(Outcome::success())
        }
        Done::Replayed(recorded) => Ok(replay(&recorded, out)?),
        Done::Planned(plans) => {
            let mut effects = Effects::new(true);
            for plan in plans {
                effects.apply(out, plan, || Ok::<(), ErrorEvent>(()))?;
            }
            Ok(Outcome::success())
        }
    }
}

/// Runs a write in the mode asked for: its events in machine mode, a line per effect for a
/// person (`nothing` when it applied to no document).
fn write_command<E: aoi::DomainEvent>(
    app: &App,
    global: &GlobalArgs,
    run: impl FnOnce() -> Result<Done<E>, RunError>,
    nothing: &str,
    describe: impl Fn(&E) -> String,
) -> ExitCode {
    if !global.machine() {
        return match run() {
            Ok(done) => {
                print_done(done, nothing, describe);
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, |out| {
        let done = run()?;
        emit_done(out, done)
    })
}

/// Prints what a write did for a person.
fn print_done<E>(done: Done<E>, nothing: &str, applied: impl Fn(&E) -> String) {
    match done {
        Done::Applied(events) if events.is_empty() => human::line(nothing),
        Done::Applied(events) => {
            for e in &events {
                human::line(&applied(e));
            }
        }
        Done::Replayed(recorded) => {
            human::line("already done under this idempotency key; nothing changed:");
            for e in &recorded.events {
                let id = e.fields.get("id").and_then(|v| v.as_str()).unwrap_or("?");
                human::line(&format!("  {} {id}", e.event_type));
            }
        }
        Done::Planned(plans) => {
            for p in &plans {
                human::line(&format!(
                    "would {} {}{}",
                    p.action,
                    p.target.as_deref().unwrap_or_default(),
                    p.detail
                        .as_deref()
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                ));
            }
            human::line("dry run: nothing was changed");
        }
    }
}

/// Runs `outline create`.
pub fn create(app: &App, global: &GlobalArgs, db: Db, args: CreateArgs) -> ExitCode {
    write_command(
        app,
        global,
        || run_create(db, &args),
        "nothing was created",
        |c: &Created| {
            format!(
                "created {} in {} (version {})",
                c.id, c.collection, c.version
            )
        },
    )
}

/// What `outline delete` was asked to do.
#[derive(Debug)]
pub struct DeleteRequest {
    /// Ids named on the command line.
    pub ids: Vec<String>,
    /// `--query`: also every document matching these words.
    pub query: Option<String>,
    /// `--confirm`, `--confirm-count`.
    pub confirm: ConfirmArgs,
    /// `--dry-run`, `--idempotency-key`.
    pub mutation: MutationArgs,
}

fn run_delete(db: Db, req: &DeleteRequest) -> Result<Done<Deleted>, RunError> {
    if req.ids.is_empty() && req.query.is_none() {
        return Err(ErrorEvent::new(
            Category::Usage,
            Code::from_static("NOTHING_TO_DELETE"),
            "name at least one document id or pass --query",
        )
        .hint("outline delete ID --confirm")
        .into());
    }
    let hash = request_hash(name::DELETE, &(&req.ids, &req.query));
    let mut store = open_store(db, Access::unless_dry_run(req.mutation.dry_run))?;
    let done = store.transaction(|tx| {
        let mut recorder = match &req.mutation.idempotency_key {
            Some(key) if !req.mutation.dry_run => match begin(tx, key, &hash)? {
                Replay::Replayed(recorded) => return Ok(Done::Replayed(recorded)),
                Replay::Fresh(recorder) => Some(recorder),
            },
            _ => None,
        };
        let mut targets: Vec<Document> = Vec::new();
        let mut ids: Vec<String> = req.ids.clone();
        if let Some(query) = &req.query {
            ids.extend(tx.ids_matching(&plain_query(query), &ListFilter::default())?);
        }
        for id in &ids {
            let doc = tx.get(id)?;
            if !targets.iter().any(|t| t.id == doc.id) {
                targets.push(doc);
            }
        }
        if req.mutation.dry_run {
            return Ok(Done::Planned(
                targets
                    .iter()
                    .map(|d| Plan {
                        action: "delete".into(),
                        target: Some(d.id.clone()),
                        detail: Some(d.title.clone()),
                        properties: None,
                    })
                    .collect(),
            ));
        }
        Confirmation::new(req.confirm.confirm, req.confirm.confirm_count)
            .require_count_for_bulk(true)
            .check(name::DELETE, targets.len() as u64)
            .map_err(|f| RunError::Denied(Box::new(f.into_event())))?;
        let target_ids: Vec<String> = targets.iter().map(|d| d.id.clone()).collect();
        let deleted = tx.delete(&target_ids)?;
        let events: Vec<Deleted> = deleted
            .into_iter()
            .map(|d| Deleted {
                id: d.id,
                version: d.version,
                title: d.title,
                collection: d.collection,
            })
            .collect();
        if let Some(mut r) = recorder.take() {
            for event in &events {
                r.record(event)?;
            }
            r.finish(tx, true)?;
        }
        Ok(Done::Applied(events))
    });
    store.finish(done)
}

/// Runs `outline delete`.
pub fn delete(app: &App, global: &GlobalArgs, db: Db, req: DeleteRequest) -> ExitCode {
    write_command(
        app,
        global,
        || run_delete(db, &req),
        "nothing to delete: no document matched",
        |d: &Deleted| format!("deleted {}  {}", d.id, d.title),
    )
}

/// `outline update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The document's id, or the end of it that `list` and `search` show.
    id: String,
    /// A new title.
    #[arg(long, value_name = "T")]
    title: Option<String>,
    /// A new body.
    #[arg(long, value_name = "B", conflicts_with = "body_file")]
    body: Option<String>,
    /// Read the new body from this file.
    #[arg(long, value_name = "PATH")]
    body_file: Option<PathBuf>,
    /// Replace the tags with these (repeat for several).
    #[arg(long = "tag", value_name = "X", conflicts_with = "clear_tags")]
    tags: Vec<String>,
    /// Remove every tag.
    #[arg(long)]
    clear_tags: bool,
    /// Move to this collection.
    #[arg(long, value_name = "C")]
    collection: Option<String>,
    /// Update only if the document is at this version (else a `conflict` error).
    #[arg(long, value_name = "VERSION")]
    if_match: Option<u64>,
    #[command(flatten)]
    mutation: MutationArgs,
}

fn run_update(db: Db, args: &UpdateArgs) -> Result<Done<Updated>, RunError> {
    let body = match (&args.body, &args.body_file) {
        (Some(body), _) => Some(body.clone()),
        (None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| ErrorEvent::cannot_open(&path.display().to_string(), &e))?,
        ),
        (None, None) => None,
    };
    let tags = if args.clear_tags {
        Some(Vec::new())
    } else if args.tags.is_empty() {
        None
    } else {
        Some(args.tags.clone())
    };
    let patch = Patch {
        title: args.title.clone(),
        body,
        tags,
        collection: args.collection.clone(),
    };
    if patch.is_empty() {
        return Err(ErrorEvent::new(
            Category::Usage,
            Code::from_static("NOTHING_TO_UPDATE"),
            "name at least one field to change",
        )
        .hint("pass --title, --body, --body-file, --tag, --clear-tags or --collection")
        .into());
    }
    let hash = request_hash(
        name::UPDATE,
        &(
            &args.id,
            &patch.title,
            &patch.body,
            &patch.tags,
            &patch.collection,
            args.if_match,
        ),
    );
    let mut store = open_store(db, Access::unless_dry_run(args.mutation.dry_run))?;
    if args.mutation.dry_run {
        let doc = store.get(&args.id)?;
        return Ok(Done::Planned(vec![Plan {
            action: "update".into(),
            target: Some(doc.id),
            detail: Some(format!("from version {}", doc.version)),
            properties: None,
        }]));
    }
    let done = store.transaction(|tx| {
        let mut recorder = match &args.mutation.idempotency_key {
            Some(key) => match begin(tx, key, &hash)? {
                Replay::Replayed(recorded) => return Ok(Done::Replayed(recorded)),
                Replay::Fresh(recorder) => Some(recorder),
            },
            None => None,
        };
        let doc = tx.update(&args.id, patch, args.if_match)?;
        let event = Updated {
            id: doc.id,
            version: doc.version,
        };
        if let Some(mut r) = recorder.take() {
            r.record(&event)?;
            r.finish(tx, true)?;
        }
        Ok(Done::Applied(vec![event]))
    });
    store.finish(done)
}

/// Runs `outline update`.
pub fn update(app: &App, global: &GlobalArgs, db: Db, args: UpdateArgs) -> ExitCode {
    write_command(
        app,
        global,
        || run_update(db, &args),
        "nothing was updated",
        |u: &Updated| format!("updated {} (now version {})", u.id, u.version),
    )
}

/// `outline move`.
#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The document's id, or the end of it that `list` and `search` show.
    id: String,
    /// The collection to move it to.
    #[arg(long, value_name = "C")]
    to: String,
    /// A new title.
    #[arg(long, value_name = "T")]
    title: Option<String>,
    /// Move only if the document is at this version (else a `conflict` error).
    #[arg(long, value_name = "VERSION")]
    if_match: Option<u64>,
    /// Show what would be moved and change nothing.
    #[arg(long)]
    dry_run: bool,
}

fn run_move(db: Db, args: &MoveArgs) -> Result<Done<Moved>, RunError> {
    let mut store = open_store(db, Access::unless_dry_run(args.dry_run))?;
    let done = store.transaction(|tx| {
        let before = tx.get(&args.id)?;
        if args.dry_run {
            return Ok(Done::Planned(vec![Plan {
                action: "move".into(),
                target: Some(before.id.clone()),
                detail: Some(format!(
                    "from {} to {}{}",
                    before.collection,
                    args.to,
                    args.title
                        .as_deref()
                        .map(|t| format!(", retitled {t:?}"))
                        .unwrap_or_default()
                )),
                properties: None,
            }]));
        }
        let doc = tx.move_to(&args.id, &args.to, args.title.clone(), args.if_match)?;
        Ok(Done::Applied(vec![Moved {
            id: doc.id,
            from: before.collection,
            to: doc.collection,
            title: doc.title,
            version: doc.version,
        }]))
    });
    store.finish(done)
}

/// Runs `outline move`.
pub fn move_doc(app: &App, global: &GlobalArgs, db: Db, args: MoveArgs) -> ExitCode {
    write_command(
        app,
        global,
        || run_move(db, &args),
        "nothing was moved",
        |m: &Moved| {
            format!(
                "moved {} from {} to {} (now version {})",
                m.id, m.from, m.to, m.version
            )
        },
    )
}

/// `outline copy`.
#[derive(Debug, Args)]
pub struct CopyArgs {
    /// The document's id, or the end of it that `list` and `search` show.
    id: String,
    /// The collection for the copy (default: the original's).
    #[arg(long, value_name = "C")]
    to: Option<String>,
    /// Show what would be copied and change nothing.
    #[arg(long)]
    dry_run: bool,
}

fn run_copy(db: Db, args: &CopyArgs) -> Result<Done<Copied>, RunError> {
    let mut store = open_store(db, Access::unless_dry_run(args.dry_run))?;
    let done = store.transaction(|tx| {
        let source = tx.get(&args.id)?;
        let to = args.to.clone().unwrap_or_else(|| source.collection.clone());
        if args.dry_run {
            return Ok(Done::Planned(vec![Plan {
                action: "copy".into(),
                target: Some(source.id.clone()),
                detail: Some(format!("copy {:?} into {to}", source.title)),
                properties: None,
            }]));
        }
        let doc = tx.copy(&source.id, &to)?;
        Ok(Done::Applied(vec![Copied {
            id: doc.id,
            source_id: source.id,
            collection: doc.collection,
            title: doc.title,
            version: doc.version,
        }]))
    });
    store.finish(done)
}

/// Runs `outline copy`.
pub fn copy(app: &App, global: &GlobalArgs, db: Db, args: CopyArgs) -> ExitCode {
    write_command(
        app,
        global,
        || run_copy(db, &args),
        "nothing was copied",
        |c: &Copied| format!("copied {} to {} in {}", c.source_id, c.id, c.collection),
    )
}
