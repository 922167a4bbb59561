//! `collect`: a sink. Stores records in a JSONL file, with dry-run, idempotency and a guarded
//! destructive `clear`.
//!
//! ```sh
//! feed list --output jsonl | collect add --into items.jsonl --input-jsonl - --output jsonl
//! collect clear --into items.jsonl --confirm --confirm-count 20 --output jsonl
//! ```

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::prelude::*;
use aoi::surface::safety::{
    begin, replay, Confirmation, Effects, IdempotencyStore, Recorded, Replay,
};
use aoi::{app::human_error, surface::cursor::request_hash};
use clap::{Parser, Subcommand};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Stores records in a JSONL file: the sink of the example pipeline.
#[derive(Debug, Parser)]
#[command(name = "collect", version)]
struct Cli {
    #[command(flatten)]
    aoi: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Append records to the store.
    Add {
        /// The store: a JSONL file, created when missing.
        #[arg(long)]
        into: PathBuf,
        #[command(flatten)]
        input: InputArgs,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Remove every record from the store (destructive).
    Clear {
        /// The store.
        #[arg(long)]
        into: PathBuf,
        #[command(flatten)]
        dry_run: DryRunArgs,
        #[command(flatten)]
        confirm: ConfirmArgs,
    },
    #[command(flatten)]
    Discovery(Discovery),
}

/// A record `collect add` accepts.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ItemIn {
    id: String,
    n: u64,
    title: String,
}

/// Audit event: one record stored, with its stable id (§14.5).
#[derive(Debug, Serialize, JsonSchema)]
struct Stored {
    id: String,
    store: String,
}

impl DomainEvent for Stored {
    const TYPE: &'static str = "stored";
}

/// Audit event: the store was cleared.
#[derive(Debug, Serialize, JsonSchema)]
struct Cleared {
    store: String,
    removed: u64,
}

impl DomainEvent for Cleared {
    const TYPE: &'static str = "cleared";
}

/// Idempotency records kept beside the store, in `<store>.idempotency.json`.
struct FileStore {
    path: PathBuf,
}

impl IdempotencyStore for FileStore {
    type Error = String;

    fn load(&mut self, key: &str) -> Result<Option<Recorded>, String> {
        Ok(self.all()?.remove(key))
    }

    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), String> {
        let mut all = self.all()?;
        all.insert(key.to_owned(), record.clone());
        let text = serde_json::to_string(&all).map_err(|e| e.to_string())?;
        fs::write(&self.path, text).map_err(|e| e.to_string())
    }
}

impl FileStore {
    fn all(&self) -> Result<HashMap<String, Recorded>, String> {
        match fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| e.to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashMap::new()),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> ErrorEvent {
    ErrorEvent::new(
        Category::Io,
        Code::from_static("STORE_WRITE_FAILED"),
        format!("{}: {e}", path.display()),
    )
    .target(path.display().to_string())
}

fn app() -> App {
    App::new(
        "collect",
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.examples.collect",
    )
    .event_schema(|identity| {
        EventSchema::new(identity, "https://schemas.machinemode.io/examples")
            .domain_event::<Stored>()
            .domain_event::<Cleared>()
            .build()
    })
    .command(
        CommandSpec::new("add")
            .events([Stored::TYPE])
            .input_default(InputMode::FailFast),
    )
    .command(
        CommandSpec::new("clear")
            .destructive()
            .events([Cleared::TYPE]),
    )
}

fn main() -> ExitCode {
    let app = app();
    let cli: Cli = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    if !cli.aoi.machine() && !matches!(cli.command, Command::Discovery(_)) {
        let e = ErrorEvent::new(
            Category::Usage,
            Code::from_static("MACHINE_ONLY"),
            "this example speaks machine mode only",
        )
        .hint("add --output jsonl");
        return human_error(&e, cli.aoi.color_allowed());
    }
    match cli.command {
        Command::Discovery(d) => app.discover::<Cli>(&cli.aoi, &d),
        Command::Add {
            into,
            input,
            mutation,
        } => app.run(&cli.aoi, "add", |out| {
            let mut reader = Input::open(&input, InputMode::FailFast)?.validate_with(
                &serde_json::to_value(schemars::schema_for!(ItemIn)).unwrap_or_default(),
            )?;
            // Fail fast before side effects: every record is read and validated first.
            let records = reader.read_all(out)?;
            if reader.upstream_failed() && reader.mode() == InputMode::FailFast {
                // The upstream failed or was cut: store nothing rather than part of a result.
                return Ok(reader.finish(out, Outcome::failed())?);
            }
            let ids: Vec<String> = records
                .iter()
                .filter_map(|r| {
                    r.fields
                        .get("id")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned)
                })
                .collect();
            let mut store = FileStore {
                path: with_suffix(&into, ".idempotency.json"),
            };
            let recorder = match &mutation.idempotency_key {
                Some(key) if !mutation.dry_run => {
                    let hash = request_hash(
                        "add",
                        &(
                            &into,
                            &records.iter().map(|r| &r.fields).collect::<Vec<_>>(),
                        ),
                    );
                    match begin(&mut store, key, &hash)? {
                        Replay::Replayed(recorded) => {
                            let outcome = replay(&recorded, out)?;
                            return Ok(reader.finish(out, outcome)?);
                        }
                        Replay::Fresh(recorder) => Some(recorder),
                    }
                }
                _ => None,
            };
            let mut effects = Effects::new(mutation.dry_run);
            let lines: String = records
                .iter()
                .map(|r| serde_json::to_string(&r.fields).unwrap_or_default() + "\n")
                .collect();
            let plan = Plan {
                action: "append".into(),
                target: Some(into.display().to_string()),
                detail: Some(format!("{} record(s)", records.len())),
                properties: None,
            };
            let applied = effects.apply(out, plan, || -> Result<(), ErrorEvent> {
                let mut file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&into)
                    .map_err(|e| io_error(&into, &e))?;
                file.write_all(lines.as_bytes())
                    .map_err(|e| io_error(&into, &e))
            })?;
            if applied.is_some() {
                let events: Vec<Stored> = ids
                    .into_iter()
                    .map(|id| Stored {
                        id,
                        store: into.display().to_string(),
                    })
                    .collect();
                // Save the idempotency record right after the effect and before any output: a
                // retry after a cut pipe must replay, not append again (§14.4).
                if let Some(mut r) = recorder {
                    for event in &events {
                        r.record(event)?;
                    }
                    r.finish(&mut store, true)?;
                }
                for event in &events {
                    out.emit(event)?;
                }
            }
            Ok(reader.finish(out, Outcome::success())?)
        }),
        Command::Clear {
            into,
            dry_run,
            confirm,
        } => app.run(&cli.aoi, "clear", |out| {
            let count = match fs::read(&into) {
                Ok(bytes) => bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                    .count() as u64,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
                Err(e) => return Err(io_error(&into, &e).into()),
            };
            // A dry run changes nothing, so it needs no confirmation: preview, then confirm.
            if !dry_run.dry_run {
                Confirmation::new(confirm.confirm, confirm.confirm_count).check("clear", count)?;
            }
            let mut effects = Effects::new(dry_run.dry_run);
            let plan = Plan {
                action: "clear".into(),
                target: Some(into.display().to_string()),
                detail: Some(format!("remove {count} record(s)")),
                properties: None,
            };
            let applied = effects.apply(out, plan, || {
                fs::write(&into, "").map_err(|e| Failure::from(io_error(&into, &e)))
            })?;
            if applied.is_some() {
                out.emit(&Cleared {
                    store: into.display().to_string(),
                    removed: count,
                })?;
            }
            Ok(Outcome::success())
        }),
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
