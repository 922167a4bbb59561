//! `outline sync`: reconcile this database with another outline database (§16.3: the
//! direction and the planned changes are stated before anything else; see
//! [`outline::store::sync`] for the rules).

use crate::cli::Db;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::flags::{DryRunArgs, GlobalArgs};
use aoi::surface::safety::Effects;
use aoi::{Category, Code, Emitter, ErrorEvent, Failure, Outcome, Plan, Warning};
use clap::{Args, ValueEnum};
use outline::store::sync::{self, Direction, Side, SyncAction, SyncChange, SyncPlan};
use outline::store::{Document, Store};

use super::auth::{credential, interactive_required, token_rejected};
use super::errors::RunError;
use super::events::{SyncPlanned, Synced};
use super::{human, human_failure, open_store, Access};

/// `outline sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The other outline database file; it must exist (create one with `outline --db PATH status`).
    #[arg(value_name = "REMOTE")]
    remote: PathBuf,
    /// Which way changes go: `push` (this database to REMOTE), `pull` (REMOTE to this one) or
    /// `both`. Sync never deletes; the newer side of a changed document wins.
    #[arg(long, value_enum, default_value_t = DirectionArg::Both)]
    direction: DirectionArg,
    #[command(flatten)]
    dry_run: DryRunArgs,
}

/// `--direction`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum DirectionArg {
    Push,
    Pull,
    Both,
}

impl From<DirectionArg> for Direction {
    fn from(d: DirectionArg) -> Direction {
        match d {
            DirectionArg::Push => Direction::Push,
            DirectionArg::Pull => Direction::Pull,
            DirectionArg::Both => Direction::Both,
        }
    }
}

/// What a sync did: its plan, and the documents as written (empty for a dry run).
struct Done {
    remote: String,
    plan: SyncPlan,
    dry_run: bool,
    written: Vec<(SyncChange, Document)>,
}

fn remote_not_found(remote: &Path) -> ErrorEvent {
    ErrorEvent::new(
        Category::NotFound,
        Code::from_static("REMOTE_NOT_FOUND"),
        format!("the remote {} does not exist", remote.display()),
    )
    .target(remote.display().to_string())
    .hint(format!(
        "create an empty outline database there with `outline --db {} import --input-jsonl /dev/null`",
        aoi::surface::term::shell_word(&remote.display().to_string())
    ))
}

fn run_sync(db: Db, args: &SyncArgs) -> Result<Done, RunError> {
    let remote_name = args.remote.display().to_string();
    if !args.remote.is_file() {
        return Err(remote_not_found(&args.remote).into());
    }
    let mut local = open_store(db, Access::unless_dry_run(args.dry_run.dry_run))?;
    let same = match (
        local.path().map(Path::canonicalize),
        args.remote.canonicalize(),
    ) {
        (Some(Ok(a)), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(ErrorEvent::new(
            Category::Validation,
            Code::from_static("SAME_DATABASE"),
            format!("{remote_name} is this database; sync needs another one"),
        )
        .field("remote")
        .into());
    }
    let mut remote = Store::open(&args.remote)?;
    let token = credential()?;
    let direction = Direction::from(args.direction);
    let dry_run = args.dry_run.dry_run;
    let result = local.transaction(|ltx| {
        remote.transaction(|rtx| -> Result<_, RunError> {
            // Checked inside the remote's write transaction, so protection added meanwhile
            // is not missed.
            let protection = rtx.protection()?;
            if protection.is_protected() {
                let Some(credential) = &token else {
                    return Err(interactive_required(&format!("syncing with {remote_name}"))
                        .target(remote_name.clone())
                        .into());
                };
                if !protection.admits(Some(credential.token())) {
                    return Err(token_rejected(&remote_name, credential).into());
                }
            }
            let plan = sync::plan(ltx, rtx, direction)?;
            let mut written = Vec::new();
            if !dry_run {
                for change in &plan.changes {
                    let doc = match change.target {
                        Side::Local => sync::apply(ltx, change)?,
                        Side::Remote => sync::apply(rtx, change)?,
                    };
                    written.push((change.clone(), doc));
                }
            }
            Ok((plan, written))
        })
    });
    let (plan, written) = local.finish(result)?;
    Ok(Done {
        remote: remote_name,
        plan,
        dry_run,
        written,
    })
}

fn planned(done: &Done) -> SyncPlanned {
    let p = &done.plan;
    SyncPlanned {
        remote: done.remote.clone(),
        direction: p.direction.as_str().to_owned(),
        dry_run: done.dry_run,
        push_create: p.count(Side::Remote, SyncAction::Create),
        push_update: p.count(Side::Remote, SyncAction::Update),
        pull_create: p.count(Side::Local, SyncAction::Create),
        pull_update: p.count(Side::Local, SyncAction::Update),
        unchanged: p.unchanged,
        held_back: u64::try_from(p.held_back.len()).unwrap_or(u64::MAX),
        conflicts: u64::try_from(p.conflicts.len()).unwrap_or(u64::MAX),
    }
}

fn conflict_warning(id: &str) -> Warning {
    Warning::new(
        Code::from_static("SYNC_CONFLICT"),
        format!(
            "{id} differs on the two sides with the same update time and version; left alone on both"
        ),
    )
    .target(id)
}

fn plan_event(change: &SyncChange) -> Plan {
    Plan {
        action: change.action.as_str().to_owned(),
        target: Some(change.source.id.clone()),
        detail: Some(format!(
            "{} {:?} on the {} side",
            change.action.as_str(),
            change.source.title,
            change.target.as_str()
        )),
        properties: None,
    }
}

fn emit_done<W: Write>(out: &mut Emitter<W>, done: Done) -> Result<Outcome, Failure> {
    out.emit(&planned(&done))?;
    for id in &done.plan.conflicts {
        out.warning(&conflict_warning(id))?;
    }
    if done.dry_run {
        let mut effects = Effects::new(true);
        for change in &done.plan.changes {
            effects.apply(out, plan_event(change), || Ok::<(), ErrorEvent>(()))?;
        }
    }
    for (change, doc) in done.written {
        out.emit(&Synced {
            id: doc.id,
            action: change.action.as_str().to_owned(),
            to: change.target.as_str().to_owned(),
            title: doc.title,
            version: doc.version,
        })?;
    }
    Ok(Outcome::success())
}

/// How many changes human mode lists one by one.
const HUMAN_LIST: usize = 20;

fn print_done(done: &Done) {
    let s = planned(done);
    human::line(&format!("sync {} with {}", s.direction, s.remote));
    human::line(&format!(
        "  push: {} to create, {} to update on the remote",
        s.push_create, s.push_update
    ));
    human::line(&format!(
        "  pull: {} to create, {} to update here",
        s.pull_create, s.pull_update
    ));
    human::line(&format!(
        "  {} unchanged, {} held back by the direction, {} in conflict",
        s.unchanged, s.held_back, s.conflicts
    ));
    for id in &done.plan.conflicts {
        human::line(&format!("  conflict: {id} (left alone on both sides)"));
    }
    let verb = |action: SyncAction| match (action, done.dry_run) {
        (SyncAction::Create, true) => "would create",
        (SyncAction::Update, true) => "would update",
        (SyncAction::Create, false) => "created",
        (SyncAction::Update, false) => "updated",
    };
    let changes = &done.plan.changes;
    for change in changes.iter().take(HUMAN_LIST) {
        human::line(&format!(
            "{} {} {:?} on the {} side",
            verb(change.action),
            change.source.id,
            change.source.title,
            change.target.as_str()
        ));
    }
    if changes.len() > HUMAN_LIST {
        human::line(&format!(
            "... and {} more (--output jsonl lists every one)",
            changes.len() - HUMAN_LIST
        ));
    }
    if done.dry_run {
        human::line("dry run: nothing was changed");
    } else if changes.is_empty() {
        human::line("already in sync: nothing to do");
    }
}

/// Runs `outline sync`.
pub fn sync(app: &App, global: &GlobalArgs, db: Db, args: SyncArgs) -> ExitCode {
    if !global.machine() {
        return match run_sync(db, &args) {
            Ok(done) => {
                print_done(&done);
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, |out| {
        let done = run_sync(db, &args)?;
        emit_done(out, done)
    })
}
