//! `notes`: the SDK's short path. A bounded list, a get, an idempotent add with a dry run and a
//! confirmed delete, in both output modes, with no paging, idempotency, confirmation or
//! human-output code of its own (tests/it/short_path.rs holds it to that and lints it).
//!
//! ```sh
//! cargo run --example notes -- add "buy milk" --tag home
//! cargo run --example notes -- list --output jsonl
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use aoi::prelude::*;
use aoi::surface::mutation::Mutation;
use clap::{Parser, Subcommand};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Short notes, kept in $XDG_DATA_HOME/notes/notes.json.
#[derive(Parser)]
#[command(name = "notes", version)]
struct Cli {
    #[command(flatten)]
    aoi: GlobalArgs,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List notes, a page at a time.
    List {
        /// Only notes with this tag.
        #[arg(long)]
        tag: Option<String>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Show one note.
    Get {
        /// The note's id (n1, n2, ...).
        id: String,
    },
    /// Add a note.
    Add {
        /// What the note says.
        text: String,
        /// A tag to find it by.
        #[arg(long)]
        tag: Option<String>,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Delete notes (destructive).
    Rm {
        /// The notes' ids.
        #[arg(required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        mutation: MutationArgs,
        #[command(flatten)]
        confirm: ConfirmArgs,
    },
    #[command(flatten)]
    Discovery(Discovery),
}

/// A note.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Note {
    /// Its id, given when it is added: n1, n2, ...
    id: String,
    /// What it says.
    text: String,
    /// Its tag, if any.
    tag: Option<String>,
}

/// A note that was deleted.
#[derive(Serialize, JsonSchema)]
struct Deleted {
    /// The deleted note's id.
    id: String,
}

impl DomainEvent for Note {
    const TYPE: &'static str = "note";
}
impl DomainEvent for Deleted {
    const TYPE: &'static str = "deleted";
}

fn store() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME").map(PathBuf::from);
    let home = || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".local/share");
    data.unwrap_or_else(home).join("notes/notes.json")
}

fn load() -> Result<Vec<Note>, ErrorEvent> {
    match std::fs::read(store()) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            ErrorEvent::new(
                Category::Config,
                Code::from_static("STORE_CORRUPT"),
                e.to_string(),
            )
        }),
        Err(_) => Ok(Vec::new()),
    }
}

fn save(notes: &[Note]) -> Result<(), Failure> {
    let path = store();
    let written = std::fs::create_dir_all(path.parent().unwrap_or(&path))
        .and_then(|()| std::fs::write(&path, serde_json::to_vec(notes).unwrap_or_default()));
    written.map_err(|e| {
        ErrorEvent::new(
            Category::Io,
            Code::from_static("STORE_WRITE_FAILED"),
            e.to_string(),
        )
        .into()
    })
}

fn not_found(id: &str) -> Failure {
    let message = format!("no note {id}");
    ErrorEvent::new(
        Category::NotFound,
        Code::from_static("NOTE_NOT_FOUND"),
        message,
    )
    .target(id)
    .into()
}

fn plan(action: &str, target: String) -> Plan {
    Plan {
        action: action.into(),
        target: Some(target),
        detail: None,
        properties: None,
    }
}

fn main() -> ExitCode {
    let seed = ["add", "first note", "--tag", "home"];
    let app = App::new(
        "notes",
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.examples.notes",
    )
    .event_schema(|id| {
        EventSchema::new(id, "https://schemas.machinemode.io/examples")
            .domain_event::<Note>()
            .domain_event::<Deleted>()
            .build()
    })
    .command(
        CommandSpec::new("list")
            .read_only()
            .events([Note::TYPE])
            .setup(seed)
            .setup(seed)
            .example(["list"]),
    )
    .command(
        CommandSpec::new("get")
            .read_only()
            .events([Note::TYPE])
            .setup(seed)
            .example(["get", "n1"]),
    )
    .command(
        CommandSpec::new("add")
            .events([Note::TYPE])
            .example(["add", "buy milk"]),
    )
    .command(
        CommandSpec::new("rm")
            .destructive()
            .events([Deleted::TYPE])
            .setup(seed)
            .example(["rm", "n1", "--confirm"]),
    );
    let cli: Cli = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Cmd::Discovery(d) => app.discover::<Cli>(&cli.aoi, &d),
        Cmd::List { tag, page } => app.run_with(&cli.aoi, "list", Limits::for_page(&page), |out| {
            let pager = page.pager("list", &tag)?;
            let after: usize = pager.after()?.unwrap_or(0);
            // Notes are kept in the order of their ids, which cursors resume after.
            let number = |n: &Note| n.id[1..].parse::<usize>().unwrap_or(0);
            let notes = load()?.into_iter().filter(|n| number(n) > after);
            pager.emit(out, notes.filter(|n| tag.is_none() || n.tag == tag), number)
        }),
        Cmd::Get { id } => app.run(&cli.aoi, "get", |out| {
            let note = load()?
                .into_iter()
                .find(|n| n.id == id)
                .ok_or_else(|| not_found(&id))?;
            Ok(out.emit(&note).map(|()| Outcome::success())?)
        }),
        Cmd::Add {
            text,
            tag,
            mutation,
        } => app.run(&cli.aoi, "add", |out| {
            Mutation::new(&app, "add", &mutation).run(
                out,
                &(&text, &tag),
                plan("add", "a note".into()),
                || {
                    let mut notes = load()?;
                    let next = notes
                        .iter()
                        .filter_map(|n| n.id[1..].parse::<usize>().ok())
                        .max()
                        .unwrap_or(0)
                        + 1;
                    let note = Note {
                        id: format!("n{next}"),
                        text: text.clone(),
                        tag: tag.clone(),
                    };
                    notes.push(note.clone());
                    save(&notes).map(|()| vec![note])
                },
            )
        }),
        Cmd::Rm {
            ids,
            mutation,
            confirm,
        } => app.run(&cli.aoi, "rm", |out| {
            // The effect looks the notes up: a replay of a delete finds them gone, and must.
            Mutation::new(&app, "rm", &mutation)
                .confirm(&confirm, ids.len() as u64)
                .run(out, &ids, plan("delete", ids.join(" ")), || {
                    let notes = load()?;
                    if let Some(id) = ids.iter().find(|id| !notes.iter().any(|n| &n.id == *id)) {
                        return Err(not_found(id));
                    }
                    save(
                        &notes
                            .into_iter()
                            .filter(|n| !ids.contains(&n.id))
                            .collect::<Vec<_>>(),
                    )?;
                    Ok(ids.iter().map(|id| Deleted { id: id.clone() }).collect())
                })
        }),
    }
}
