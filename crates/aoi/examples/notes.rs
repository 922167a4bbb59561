//! `notes`: the SDK's short path, with no paging, idempotency, confirmation or human-output
//! code of its own (tests/it/short_path.rs holds it to that). `cargo run --example notes -- list`
use aoi::prelude::*;

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
        /// The note's number.
        n: u64,
    },
    /// Add a note.
    Add {
        /// What the note says.
        text: String,
        /// A tag to find it by.
        #[arg(long)]
        tag: Option<String>,
        #[command(flatten)]
        write: MutationArgs,
    },
    /// Delete notes (destructive).
    Rm {
        /// The notes' numbers.
        #[arg(required = true)]
        ns: Vec<u64>,
        #[command(flatten)]
        write: MutationArgs,
        #[command(flatten)]
        confirm: ConfirmArgs,
    },
}

/// A note.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct Note {
    /// Its number, given when it is added.
    n: u64,
    /// What it says.
    text: String,
    /// Its tag, if any.
    tag: Option<String>,
}

/// A note that was deleted.
#[derive(Serialize, JsonSchema)]
struct Deleted {
    /// The deleted note's number.
    n: u64,
}

impl DomainEvent for Note {
    const TYPE: &'static str = "note";
}
impl DomainEvent for Deleted {
    const TYPE: &'static str = "deleted";
}

fn not_found(n: u64) -> Failure {
    let code = Code::from_static("NOTE_NOT_FOUND");
    ErrorEvent::new(Category::NotFound, code, format!("no note {n}"))
        .target(n.to_string())
        .into()
}

fn main() -> std::process::ExitCode {
    let app = App::new("notes", "1.0.0", "io.example.notes")
        .about("Short notes, kept in $XDG_DATA_HOME/notes/notes.json")
        .schema_id("https://schemas.example.com/notes")
        .setup(["add", "first note", "--tag", "home"])
        .setup(["add", "second note", "--tag", "home"])
        .command(CommandSpec::new("list").read_only().emits::<Note>())
        .command(CommandSpec::new("get").read_only().emits::<Note>())
        .command(CommandSpec::new("add").emits::<Note>())
        .command(CommandSpec::new("rm").destructive().emits::<Deleted>())
        .example(["list", "--tag", "home"])
        .example(["get", "1"])
        .example(["add", "buy milk", "--tag", "home"])
        .example(["rm", "1", "--confirm"]);
    let cli: Cli<Cmd> = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let file = JsonFile::for_tool("notes", "notes.json");
    match cli.command {
        Cmd::List { tag, page } => app.run(&cli.aoi, |out| {
            let pager = page.pager(out, &tag)?;
            let after: u64 = pager.after()?.unwrap_or(0);
            let notes: Vec<Note> = file?.read()?;
            let notes = notes
                .into_iter()
                .filter(|n| n.n > after && (tag.is_none() || n.tag == tag));
            pager.emit(out, notes, |note| note.n)
        }),
        Cmd::Get { n } => app.run(&cli.aoi, |out| {
            let notes: Vec<Note> = file?.read()?;
            let note = notes
                .into_iter()
                .find(|note| note.n == n)
                .ok_or_else(|| not_found(n))?;
            out.emit(&note)?;
            Ok(Outcome::success())
        }),
        Cmd::Add { text, tag, write } => app.run(&cli.aoi, |out| {
            Mutation::new(&write).run(out, &(&text, &tag), Plan::new("add", "a note"), || {
                file?.update(|notes: &mut Vec<Note>| {
                    let n = notes.iter().map(|note| note.n).max().unwrap_or(0) + 1;
                    let (text, tag) = (text.clone(), tag.clone());
                    notes.push(Note { n, text, tag });
                    Ok(notes[notes.len() - 1..].to_vec())
                })
            })
        }),
        Cmd::Rm { ns, write, confirm } => app.run(&cli.aoi, |out| {
            // The effect looks the notes up: a replay of a delete finds them gone, and must.
            let plan = Plan::new("delete", format!("notes {ns:?}"));
            let mutation = Mutation::new(&write).confirm(&confirm, ns.len() as u64);
            mutation.run(out, &ns, plan, || {
                file?.update(|notes: &mut Vec<Note>| {
                    if let Some(&gone) = ns.iter().find(|&&n| !notes.iter().any(|note| note.n == n))
                    {
                        return Err(not_found(gone));
                    }
                    notes.retain(|note| !ns.contains(&note.n));
                    Ok(ns.iter().map(|&n| Deleted { n }).collect())
                })
            })
        }),
    }
}
