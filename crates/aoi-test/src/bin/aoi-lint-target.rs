//! `aoi-lint-target`: a small Machine Mode tool built on the `aoi` SDK that conforms on every
//! check of §18.2, with one fault per check that can be switched on for the lint corpus.
//!
//! Run under its own name it conforms. Run through a link named `aoi-lint-target-fault-NN`
//! (NN from 01 to 16) it breaks check NN of §18.2 and, as far as the spec allows, no other:
//!
//! | NN | fault |
//! |---:|---|
//! | 01 | `list` says read-only in capabilities but writes a cache file |
//! | 02 | `doctor` writes a raw ANSI control (CSI, U+009B) in an event |
//! | 03 | `doctor` ends with `aoi:summary ok:true` but exits 1 |
//! | 04 | `list` emits items whose `n` is a string, against the published schema |
//! | 05 | an unknown flag exits 0, silently |
//! | 06 | `delete` deletes without `--confirm` |
//! | 07 | `create` accepts `--idempotency-key` and ignores it |
//! | 08 | `create`, `delete` and `import` name no id in their events |
//! | 09 | `list` echoes its `--api-key` on stderr |
//! | 10 | `watch` prints a fake panic when its reader goes away |
//! | 11 | a `list` cursor repeats the last item of the previous page |
//! | 12 | `import` ignores `--continue-on-error` and fails fast |
//! | 13 | `--schema-version` is ignored: the default version is always spoken |
//! | 14 | `doctor` writes a second `aoi:meta` (numbered and counted, so only §4 breaks) |
//! | 15 | `doctor` skips an `aoi.seq` number |
//! | 16 | `import` fed a failed upstream fails without `caused_by` |
//!
//! The fault comes from the program name because `aoi lint` scrubs the environment of every
//! probe: the name is what reaches the tool. State lives in `$XDG_DATA_HOME/aoi-lint-target/
//! state.json`, written whole through a temporary file and a rename, so a failed write leaves
//! nothing and a read creates nothing.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use aoi::app::{App, Discovery, Limits};
use aoi::discover::capabilities::CommandSpec;
use aoi::discover::doctor::Doctor;
use aoi::discover::schema::EventSchema;
use aoi::surface::cursor::{check_limit, request_hash, take_page, CursorCodec};
use aoi::surface::flags::{
    ConfirmArgs, DryRunArgs, GlobalArgs, InputArgs, InputMode, MutationArgs, PageArgs,
};
use aoi::surface::input::Input;
use aoi::surface::safety::{
    begin, replay, Confirmation, Effects, IdempotencyStore, Recorded, Replay,
};
use aoi::wire::{CausedBy, FrameworkEvent};
use aoi::{
    Category, Check, Code, DomainEvent, EmitError, Emitter, ErrorEvent, Failure, Heartbeat,
    Outcome, Plan, Severity,
};
use clap::{Parser, Subcommand};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

const TOOL: &str = "aoi-lint-target";

/// The items every state starts with (a delete removes them by recording their id).
const SEEDS: [&str; 5] = ["seed-1", "seed-2", "seed-3", "seed-4", "seed-5"];

/// A conforming Machine Mode tool with switchable faults, for `aoi lint`'s tests.
#[derive(Debug, Parser)]
#[command(name = "aoi-lint-target", version)]
struct Cli {
    #[command(flatten)]
    aoi: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the items, a page at a time.
    List {
        /// Key for the (imaginary) remote catalogue.
        #[arg(long, env = "AOI_LINT_TARGET_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Create an item.
    Create {
        /// Its title.
        #[arg(long)]
        title: String,
        #[command(flatten)]
        mutation: MutationArgs,
    },
    /// Delete an item (destructive).
    Delete {
        /// The item's id.
        id: String,
        #[command(flatten)]
        dry_run: DryRunArgs,
        #[command(flatten)]
        confirm: ConfirmArgs,
    },
    /// Import items from JSONL records `{"title": ...}`, as one recorded batch.
    Import {
        #[command(flatten)]
        input: InputArgs,
    },
    /// Stream heartbeats until interrupted.
    Watch {
        /// Milliseconds between two heartbeats.
        #[arg(long, value_name = "N", default_value_t = 100)]
        interval_ms: u64,
    },
    /// Check that the state can be read.
    Doctor,
    #[command(flatten)]
    Discovery(Discovery),
}

/// One item.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Item {
    /// Stable id.
    id: String,
    /// Position in the list, from 1.
    n: u64,
    /// Title.
    title: String,
}

impl DomainEvent for Item {
    const TYPE: &'static str = "item";
}

/// Audit event: an item was created. (The id is optional only so that fault 08 validates.)
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Created {
    /// The new item's stable id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    /// Its title.
    title: String,
}

impl DomainEvent for Created {
    const TYPE: &'static str = "created";
}

/// Audit event: an item was deleted.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Deleted {
    /// The deleted item's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
}

impl DomainEvent for Deleted {
    const TYPE: &'static str = "deleted";
}

/// Audit event: an import batch was recorded.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Imported {
    /// The batch's stable id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    batch_id: Option<String>,
    /// The ids of the items it created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    item_ids: Option<Vec<String>>,
    /// How many items it created.
    count: u64,
}

impl DomainEvent for Imported {
    const TYPE: &'static str = "imported";
}

/// A record `import` accepts.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ItemIn {
    title: String,
}

/// The tool's whole state.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// Items created, in order.
    items: Vec<(String, String)>,
    /// Seed ids deleted.
    deleted: Vec<String>,
    /// Import batches recorded.
    batches: u64,
    /// Idempotency records.
    idempotency: HashMap<String, Recorded>,
}

impl IdempotencyStore for State {
    type Error = String;

    fn load(&mut self, key: &str) -> Result<Option<Recorded>, String> {
        Ok(self.idempotency.get(key).cloned())
    }

    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), String> {
        self.idempotency.insert(key.to_owned(), record.clone());
        Ok(())
    }
}

fn data_dir() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join(TOOL)
}

fn io_error(what: &str, e: &dyn std::fmt::Display) -> ErrorEvent {
    ErrorEvent::new(
        Category::Io,
        Code::from_static("STATE_IO"),
        format!("{what}: {e}"),
    )
}

impl State {
    /// Reads the state; a missing file is the empty state (nothing is created).
    fn load() -> Result<State, ErrorEvent> {
        match fs::read_to_string(data_dir().join("state.json")) {
            Ok(text) => {
                serde_json::from_str(&text).map_err(|e| io_error("the state file is corrupt", &e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
            Err(e) => Err(io_error("reading the state failed", &e)),
        }
    }

    /// Writes the state whole: a temporary file renamed over the old one.
    fn save(&self) -> Result<(), ErrorEvent> {
        let dir = data_dir();
        fs::create_dir_all(&dir).map_err(|e| io_error("creating the data directory", &e))?;
        let text = serde_json::to_string(self).map_err(|e| io_error("encoding the state", &e))?;
        let tmp = dir.join(format!("state.json.{}.tmp", std::process::id()));
        let written = fs::write(&tmp, text).and_then(|()| fs::rename(&tmp, dir.join("state.json")));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io_error("writing the state failed", &e));
        }
        Ok(())
    }

    /// Every live item, in id order.
    fn items(&self) -> Vec<(String, String)> {
        let mut all: BTreeMap<String, String> = SEEDS
            .iter()
            .filter(|s| !self.deleted.iter().any(|d| d == *s))
            .map(|s| ((*s).to_owned(), format!("Seed {}", &s[5..])))
            .collect();
        all.extend(self.items.iter().cloned());
        all.into_iter().collect()
    }

    fn create(&mut self, title: &str) -> String {
        let id = format!("note-{:04}", self.items.len() + 1);
        self.items.push((id.clone(), title.to_owned()));
        id
    }
}

/// The fault switched on by the program name, 1 to 16, if any.
fn fault_from_name() -> Option<u8> {
    let argv0 = std::env::args_os().next()?;
    let name = PathBuf::from(argv0);
    let name = name.file_name()?.to_str()?;
    name.strip_prefix("aoi-lint-target-fault-")?.parse().ok()
}

fn app() -> App {
    App::new(
        TOOL,
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.aoi-lint-target",
    )
    .schema_versions(["1.0.0", "1.1.0"], "1.1.0")
    .event_schema(|identity| {
        EventSchema::new(identity, "https://schemas.machinemode.io/tests")
            .domain_event::<Item>()
            .domain_event::<Created>()
            .domain_event::<Deleted>()
            .domain_event::<Imported>()
            .build()
    })
    .grace(Duration::from_millis(500))
    .command(
        CommandSpec::new("list")
            .read_only()
            .events([Item::TYPE])
            .example(["list", "--limit", "2"]),
    )
    .command(
        CommandSpec::new("create")
            .additive()
            .events([Created::TYPE])
            .example(["create", "--title", "Lint note"]),
    )
    .command(
        CommandSpec::new("delete")
            .destructive()
            .events([Deleted::TYPE])
            .example(["delete", "seed-3", "--confirm"]),
    )
    .command(
        CommandSpec::new("import")
            .additive()
            .events([Imported::TYPE])
            .input_default(InputMode::FailFast)
            .example(["import", "--input-jsonl", "-"]),
    )
    .command(
        CommandSpec::new("watch")
            .read_only()
            .unbounded()
            .events([Heartbeat::TYPE])
            .example(["watch"]),
    )
    .command(
        CommandSpec::new("doctor")
            .read_only()
            .events([Check::TYPE])
            .example(["doctor"]),
    )
    .command(CommandSpec::new("schema").read_only())
    .command(CommandSpec::new("input-schema").read_only())
    .command(CommandSpec::new("capabilities").read_only())
}

fn main() -> ExitCode {
    let fault = fault_from_name();
    let app = app();
    let cli: Cli = if fault == Some(5) {
        // Fault 05: a usage error exits 0 and says nothing.
        match Cli::try_parse() {
            Err(e) if e.kind() == clap::error::ErrorKind::UnknownArgument => {
                return ExitCode::SUCCESS
            }
            // Parsed again by the App, which remembers the command App::run runs.
            _ => match app.parse() {
                Ok(cli) => cli,
                Err(code) => return code,
            },
        }
    } else {
        match app.parse() {
            Ok(cli) => cli,
            Err(code) => return code,
        }
    };
    let mut global = cli.aoi.clone();
    if fault == Some(13) {
        // Fault 13: whatever version is asked for, the default one is spoken.
        global.schema_version = None;
    }
    if !global.machine() && !matches!(cli.command, Command::Discovery(_)) {
        return human(&cli.command);
    }
    match cli.command {
        Command::Discovery(d) => app.discover::<Cli>(&global, &d),
        Command::List { api_key, page } => list(&app, &global, fault, api_key, &page),
        Command::Create { title, mutation } => create(&app, &global, fault, &title, &mutation),
        Command::Delete {
            id,
            dry_run,
            confirm,
        } => delete(&app, &global, fault, &id, dry_run.dry_run, &confirm),
        Command::Import { input } => import(&app, &global, fault, input),
        Command::Watch { interval_ms } => watch(&app, &global, fault, interval_ms),
        Command::Doctor => doctor(&app, &global, fault),
    }
}

/// Human mode: one line per item, or a short note.
fn human(command: &Command) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    let text = match command {
        Command::List { page, .. } => match State::load() {
            Ok(state) => state
                .items()
                .iter()
                .take(page.limit)
                .map(|(id, title)| format!("{id}  {title}\n"))
                .collect(),
            Err(e) => format!("error: {}\n", e.message),
        },
        _ => "this tool speaks machine mode: add --output jsonl\n".to_owned(),
    };
    match stdout.write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(aoi::exit_code::SIGPIPE),
    }
}

fn list(
    app: &App,
    global: &GlobalArgs,
    fault: Option<u8>,
    api_key: Option<String>,
    page: &PageArgs,
) -> ExitCode {
    if let (Some(9), Some(key)) = (fault, &api_key) {
        // Fault 09: the secret goes to stderr as it is.
        let _ = writeln!(std::io::stderr(), "note: using api key {key}");
    }
    app.run_with(global, Limits::for_page(page), |out| {
        let limit = check_limit(page.limit)?;
        let state = State::load()?;
        if fault == Some(1) {
            // Fault 01: a "read-only" command that writes a cache.
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir)
                .join(TOOL);
            fs::create_dir_all(&cache).map_err(|e| io_error("cache", &e))?;
            fs::write(cache.join("last-list"), "listed\n").map_err(|e| io_error("cache", &e))?;
        }
        let codec = CursorCodec::new("list", &());
        let after: Option<String> = match &page.cursor {
            Some(c) => Some(codec.decode(c)?),
            None => None,
        };
        let items: Vec<Item> = state
            .items()
            .into_iter()
            .enumerate()
            .map(|(i, (id, title))| Item {
                id,
                n: i as u64 + 1,
                title,
            })
            // Fault 11: the cursor's own item comes again at the top of the next page.
            .filter(|item| match &after {
                Some(a) if fault == Some(11) => item.id >= *a,
                Some(a) => item.id > *a,
                None => true,
            })
            .collect();
        let page = take_page(&codec, items, limit, |i| i.id.clone());
        for item in &page.items {
            if fault == Some(4) {
                // Fault 04: `n` as a string, which the published schema does not allow.
                out.emit_as(
                    "item",
                    &serde_json::json!({"id": item.id, "n": item.n.to_string(), "title": item.title}),
                )?;
            } else {
                out.emit(item)?;
            }
        }
        Ok(page.outcome(Outcome::success()))
    })
}

fn create(
    app: &App,
    global: &GlobalArgs,
    fault: Option<u8>,
    title: &str,
    mutation: &MutationArgs,
) -> ExitCode {
    app.run(global, |out| {
        let mut state = State::load()?;
        // Fault 07: the key is accepted and ignored.
        let key = mutation
            .idempotency_key
            .as_deref()
            .filter(|_| fault != Some(7));
        let recorder = match key {
            Some(key) if !mutation.dry_run => {
                match begin(&mut state, key, &request_hash("create", &title))? {
                    Replay::Replayed(recorded) => return Ok(replay(&recorded, out)?),
                    Replay::Fresh(recorder) => Some(recorder),
                }
            }
            _ => None,
        };
        let mut effects = Effects::new(mutation.dry_run);
        let plan = Plan {
            action: "create".into(),
            target: Some(title.to_owned()),
            detail: Some("create one item".into()),
            properties: None,
        };
        let created = effects.apply(out, plan, || -> Result<Created, ErrorEvent> {
            let id = state.create(title);
            Ok(Created {
                id: (fault != Some(8)).then_some(id),
                title: title.to_owned(),
            })
        })?;
        if let Some(created) = created {
            if let Some(mut r) = recorder {
                r.record(&created)?;
                r.finish(&mut state, true)?;
            }
            // One write: the item and its idempotency record together.
            state.save()?;
            out.emit(&created)?;
        }
        Ok(Outcome::success())
    })
}

fn delete(
    app: &App,
    global: &GlobalArgs,
    fault: Option<u8>,
    id: &str,
    dry_run: bool,
    confirm: &ConfirmArgs,
) -> ExitCode {
    app.run(global, |out| {
        let mut state = State::load()?;
        if !state.items().iter().any(|(i, _)| i == id) {
            return Err(ErrorEvent::new(
                Category::NotFound,
                Code::from_static("ITEM_NOT_FOUND"),
                format!("no item {id}"),
            )
            .target(id.to_owned())
            .into());
        }
        // Fault 06: no confirmation asked.
        if !dry_run && fault != Some(6) {
            Confirmation::new(confirm.confirm, confirm.confirm_count).check("delete", 1)?;
        }
        let mut effects = Effects::new(dry_run);
        let plan = Plan {
            action: "delete".into(),
            target: Some(id.to_owned()),
            detail: Some("delete one item".into()),
            properties: None,
        };
        let applied = effects.apply(out, plan, || -> Result<(), Failure> {
            if SEEDS.contains(&id) {
                state.deleted.push(id.to_owned());
            } else {
                state.items.retain(|(i, _)| i != id);
            }
            Ok(state.save()?)
        })?;
        if applied.is_some() {
            out.emit(&Deleted {
                id: (fault != Some(8)).then(|| id.to_owned()),
            })?;
        }
        Ok(Outcome::success())
    })
}

fn import(app: &App, global: &GlobalArgs, fault: Option<u8>, mut input: InputArgs) -> ExitCode {
    if fault == Some(12) {
        // Fault 12: --continue-on-error is accepted and ignored.
        input.continue_on_error = false;
    }
    app.run(global, |out| {
        let schema = serde_json::to_value(schemars::schema_for!(ItemIn)).unwrap_or_default();
        let mut reader = Input::open(&input, InputMode::FailFast)?.validate_with(&schema)?;
        // Fail fast before side effects: every record is read and validated first.
        let records = reader.read_all(out)?;
        if reader.upstream_failed() && reader.mode() == InputMode::FailFast {
            if fault == Some(16) {
                // Fault 16: the run fails for its own reason, not the upstream's: caused_by
                // loses the upstream's retry fields.
                let cause = CausedBy {
                    origin: None,
                    category: Category::Internal,
                    code: Code::from_static("IMPORT_FAILED"),
                    retryable: false,
                    retry_after_ms: None,
                };
                reader.finish(out, Outcome::failed())?;
                return Ok(Outcome::failed().caused_by(cause));
            }
            return Ok(reader.finish(out, Outcome::failed())?);
        }
        let mut state = State::load()?;
        let ids: Vec<String> = records
            .iter()
            .filter_map(|r| r.fields.get("title").and_then(Value::as_str))
            .map(|title| state.create(title))
            .collect();
        state.batches += 1;
        let batch = format!("batch-{:04}", state.batches);
        state.save()?;
        out.emit(&Imported {
            batch_id: (fault != Some(8)).then_some(batch),
            item_ids: (fault != Some(8) && !ids.is_empty()).then_some(ids.clone()),
            count: ids.len() as u64,
        })?;
        Ok(reader.finish(out, Outcome::success())?)
    })
}

fn watch(app: &App, global: &GlobalArgs, fault: Option<u8>, interval_ms: u64) -> ExitCode {
    app.run(global, |out| {
        let cancel = out.cancel_token();
        let heartbeat = Heartbeat {
            interval_ms: Some(interval_ms),
            properties: None,
        };
        loop {
            let beat = out.heartbeat(&heartbeat).and_then(|()| out.flush());
            if let Err(e) = beat {
                if fault == Some(10) && e.is_broken_pipe() {
                    // Fault 10: a closed pipe shows up as a stack trace.
                    let _ = writeln!(
                        std::io::stderr(),
                        "thread 'main' panicked at src/bin/aoi-lint-target.rs:1:1:\nfailed printing to stdout: Broken pipe (os error 32)"
                    );
                    return Ok(Outcome::failed());
                }
                return Err(e.into());
            }
            if cancel.sleep(Duration::from_millis(interval_ms)).is_some() {
                return Ok(Outcome::cancelled());
            }
        }
    })
}

fn doctor(app: &App, global: &GlobalArgs, fault: Option<u8>) -> ExitCode {
    let stream_fault = matches!(fault, Some(2 | 3 | 14 | 15));
    let identity = match app.negotiate(global.schema_version.as_deref()) {
        Ok(identity) if stream_fault => identity,
        _ => return app.run(global, doctor_body),
    };
    // The stream faults: the run is made in memory, then its lines are altered.
    let stream = (|| -> Result<Vec<u8>, EmitError> {
        let mut out = Emitter::builder(identity)
            .command("doctor")
            .start(Vec::new())?;
        let outcome = match doctor_body(&mut out) {
            Ok(o) => o,
            Err(_) => Outcome::failed(),
        };
        out.finish(outcome)?;
        out.flush()?;
        Ok(out.into_writer())
    })();
    let Ok(stream) = stream else {
        return ExitCode::from(aoi::exit_code::SOFTWARE);
    };
    let mut lines: Vec<Value> = stream
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    let mut raw: Vec<String> = Vec::new();
    match fault {
        Some(14) => {
            // A second aoi:meta, with its own seq and counted in event_count: only the
            // one-meta rule breaks.
            let copy = lines[0].clone();
            lines.insert(1, copy);
            renumber(&mut lines, 0);
            if let Some(summary) = lines.last_mut() {
                let n = summary["event_count"].as_u64().unwrap_or(0);
                summary["event_count"] = Value::from(n + 1);
            }
        }
        Some(15) => {
            // seq skips one number after the first event.
            renumber(&mut lines, 1);
        }
        _ => {}
    }
    if fault == Some(2) {
        // Fault 02: colour codes on stdout. Not a prose line: the verifier counts every line
        // against aoi.seq and event_count (§8.3), so a stray line would break check 15 as
        // well. A raw C1 CSI (U+009B, which JSON need not escape) inside a string keeps the
        // line a valid event and breaks only §2's "no ANSI".
        if let Some(check) = lines.get_mut(1) {
            check["detail"] = Value::from("\u{9b}32mok\u{9b}0m");
        }
    }
    for line in &lines {
        raw.push(line.to_string());
    }
    let mut text = raw.join("\n");
    text.push('\n');
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if fault == Some(3) {
        // Fault 03: ok:true on the summary, exit 1 from the process.
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `doctor`'s checks.
fn doctor_body<W: Write>(out: &mut Emitter<W>) -> Result<Outcome, Failure> {
    let mut doctor = Doctor::new();
    let state = State::load();
    doctor.check(
        out,
        "state",
        state.is_ok(),
        Severity::Error,
        match &state {
            Ok(s) => format!("{} item(s)", s.items().len()),
            Err(e) => e.message.clone(),
        },
        None,
    )?;
    doctor.check(out, "seeds", true, Severity::Info, "built in", None)?;
    Ok(doctor.outcome())
}

/// Renumbers `aoi.seq` from 0, skipping one number after index `gap` when it is not 0.
fn renumber(lines: &mut [Value], gap: usize) {
    for (i, line) in lines.iter_mut().enumerate() {
        let seq = if gap > 0 && i >= gap { i + 1 } else { i };
        if let Some(aoi) = line.get_mut("aoi") {
            aoi["seq"] = Value::from(seq as u64);
        }
    }
}
