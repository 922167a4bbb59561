//! `collect`: a sink. Stores records in a JSONL file, with dry-run, idempotency and a guarded
//! destructive `clear`.
//!
//! ```sh
//! feed list --output jsonl | collect add --into items.jsonl --input-jsonl - --output jsonl
//! collect clear --into items.jsonl --confirm --confirm-count 20 --output jsonl
//! ```

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::prelude::*;

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
        /// Wait this long between the effect and its idempotency record (to exercise
        /// concurrent runs).
        #[arg(long, value_name = "MS", hide = true)]
        hold_ms: Option<u64>,
        /// Abort between the effect and its idempotency record (to exercise a run that dies).
        #[arg(long, hide = true)]
        abort_after_effect: bool,
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
    .about("Stores records in a JSONL file: the sink of the example pipeline")
    .schema_id("https://schemas.machinemode.io/examples")
    .command(
        CommandSpec::new("add")
            .emits::<Stored>()
            .record::<ItemIn>()
            .input_default(InputMode::FailFast),
    )
    .command(CommandSpec::new("clear").destructive().emits::<Cleared>())
}

fn main() -> ExitCode {
    let app = app();
    let cli: Cli<Command> = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Command::Add {
            into,
            input,
            mutation,
            hold_ms,
            abort_after_effect,
        } => app.run(&cli.aoi, |out| {
            // Each record checked against the schema `input-schema` publishes for it.
            let mut reader = app.input(&input)?;
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
            let lines: String = records
                .iter()
                .map(|r| serde_json::to_string(&r.fields).unwrap_or_default() + "\n")
                .collect();
            let mut plan = Plan::new("append", into.display().to_string());
            plan.detail = Some(format!("{} record(s)", records.len()));
            // Dry run, idempotency key (records beside the store) and the order of effect,
            // record and output: the SDK's. The request a replay must match: the store and
            // the records.
            let request = (&into, records.iter().map(|r| &r.fields).collect::<Vec<_>>());
            let outcome = Mutation::new(&mutation)
                .store_in(with_suffix(&into, ".idempotency"))
                .run(out, &request, plan, || {
                    let mut file = OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&into)
                        .map_err(|e| io_error(&into, &e))?;
                    file.write_all(lines.as_bytes())
                        .map_err(|e| io_error(&into, &e))?;
                    if let Some(ms) = hold_ms {
                        std::thread::sleep(std::time::Duration::from_millis(ms));
                    }
                    if abort_after_effect {
                        std::process::abort();
                    }
                    let store = into.display().to_string();
                    Ok(ids
                        .iter()
                        .map(|id| Stored {
                            id: id.clone(),
                            store: store.clone(),
                        })
                        .collect())
                })?;
            Ok(reader.finish(out, outcome)?)
        }),
        Command::Clear {
            into,
            dry_run,
            confirm,
        } => app.run(&cli.aoi, |out| {
            let count = match fs::read(&into) {
                Ok(bytes) => bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                    .count() as u64,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
                Err(e) => return Err(io_error(&into, &e).into()),
            };
            let mut plan = Plan::new("clear", into.display().to_string());
            plan.detail = Some(format!("remove {count} record(s)"));
            // A dry run needs no confirmation (preview, then confirm); a run does, with the
            // count.
            Mutation::new(&dry_run)
                .confirm(&confirm, count)
                .run(out, &into, plan, || {
                    fs::write(&into, "").map_err(|e| io_error(&into, &e))?;
                    let store = into.display().to_string();
                    Ok(vec![Cleared {
                        store,
                        removed: count,
                    }])
                })
        }),
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
