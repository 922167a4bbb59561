//! Moving documents in and out: `import` (§12 input, §13.1 upstream streams) and `export`.
//!
//! `outline export --db A --output jsonl | outline import --db B --input-jsonl - --output jsonl`
//! copies a database: `export` writes every document as an `entry` with its body, and `import`
//! accepts those entries (keeping ids and timestamps) as well as plain `{title, body?, tags?,
//! collection?}` records.

use std::cell::RefCell;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

use aoi::app::App;
use aoi::read::Event;
use aoi::surface::cursor::request_hash;
use aoi::surface::flags::{GlobalArgs, InputArgs, InputMode, MutationArgs};
use aoi::surface::input::{Input, Record};
use aoi::surface::safety::{begin, replay, Effects, Replay};
use aoi::{Category, Code, Emitter, ErrorEvent, Failure, Outcome, Plan};
use clap::Args;
use schemars::JsonSchema;
use serde::Deserialize;

use outline::store::{NewDocument, StoreError, DEFAULT_COLLECTION};

use super::errors::{store_error, RunError};
use super::events::{Created, Entry};
use super::human::Progress;
use super::{human, human_failure, open_store, FilterArgs};

/// `outline import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    mutation: MutationArgs,
}

/// One record `import` accepts: a new document, or an `entry` of an `outline export` stream.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ImportRecord {
    /// The title.
    title: String,
    /// The body text.
    #[serde(default)]
    body: Option<String>,
    /// Tags.
    #[serde(default)]
    tags: Option<Vec<String>>,
    /// The collection (default: inbox).
    #[serde(default)]
    collection: Option<String>,
    /// An id to keep (from an export).
    #[serde(default)]
    id: Option<String>,
    /// Creation time to keep, ms since the epoch (from an export).
    #[serde(default)]
    created_at: Option<i64>,
    /// Update time to keep, ms since the epoch (from an export).
    #[serde(default)]
    updated_at: Option<i64>,
    /// The exported version; the imported document starts afresh.
    #[serde(default, rename = "version")]
    _version: Option<u64>,
    /// The exported body's length (ignored).
    #[serde(default, rename = "body_bytes")]
    _body_bytes: Option<u64>,
    /// True when the exported body was cut: such a record is refused.
    #[serde(default)]
    body_truncated: Option<bool>,
}

fn record_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ImportRecord)).unwrap_or_default()
}

fn where_(line: Option<u64>, index: u64) -> String {
    match line {
        Some(l) => format!("input line {l}"),
        None => format!("input item {index}"),
    }
}

/// The item error for a record, with its position.
fn item_error(mut error: ErrorEvent, record: &Record) -> ErrorEvent {
    error = error.item_index(record.item_index);
    if let Some(line) = record.line_number {
        error = error.line_number(line);
    }
    error
}

/// The document a valid record describes, or why it cannot be one.
fn to_document(record: &Record) -> Result<NewDocument, ErrorEvent> {
    let at = where_(record.line_number, record.item_index);
    if let Some(ty) = record.ty.as_deref().filter(|t| *t != "entry") {
        return Err(ErrorEvent::new(
            Category::Validation,
            Code::from_static("INPUT_RECORD_INVALID"),
            format!("{at} is an upstream `{ty}` event, not a document entry"),
        )
        .field("type"));
    }
    let r: ImportRecord = serde_json::from_value(serde_json::Value::Object(record.fields.clone()))
        .map_err(|e| {
            ErrorEvent::new(
                Category::Validation,
                Code::from_static("INPUT_RECORD_INVALID"),
                format!("{at} is invalid: {e}"),
            )
        })?;
    if r.body_truncated == Some(true) {
        return Err(ErrorEvent::new(
            Category::Validation,
            Code::from_static("INPUT_BODY_TRUNCATED"),
            format!("{at} carries a body that was cut upstream; importing it would lose text"),
        )
        .field("body_truncated")
        .hint("export without --max-bytes"));
    }
    Ok(NewDocument {
        id: r.id,
        title: r.title,
        body: r.body.unwrap_or_default(),
        tags: r.tags.unwrap_or_default(),
        collection: r.collection,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

fn created(doc: outline::store::Document) -> Created {
    Created {
        id: doc.id,
        version: doc.version,
        title: doc.title,
        collection: doc.collection,
    }
}

/// Runs an import against `out`: reads everything first, then writes in one transaction.
fn run_import<W: Write>(
    out: &mut Emitter<W>,
    db: Option<PathBuf>,
    args: &ImportArgs,
    progress: &mut Progress,
) -> Result<Outcome, RunError> {
    let mode = args.input.mode(InputMode::FailFast);
    let mut input =
        Input::open(&args.input, InputMode::FailFast)?.validate_with(&record_schema())?;
    // Fail fast before side effects: every record is read and validated first (§12.2).
    progress.phase("reading", None);
    let mut records = Vec::new();
    while let Some(record) = input.next(out)? {
        records.push(record);
        progress.tick();
    }
    if input.upstream_failed() && mode == InputMode::FailFast {
        return Ok(input.finish(out, Outcome::failed())?);
    }
    let mut docs: Vec<(NewDocument, &Record)> = Vec::with_capacity(records.len());
    for record in &records {
        match to_document(record) {
            Ok(doc) => docs.push((doc, record)),
            Err(e) => {
                let e = item_error(e, record);
                if mode == InputMode::FailFast {
                    return Err(Failure::from(
                        e.hint("fix the input, or pass --continue-on-error to skip bad records"),
                    )
                    .into());
                }
                out.error(&e.item())?;
            }
        }
    }
    if args.mutation.dry_run {
        let mut effects = Effects::new(true);
        for (doc, _) in &docs {
            let plan = Plan {
                action: "create".into(),
                target: Some(
                    doc.collection
                        .clone()
                        .unwrap_or_else(|| DEFAULT_COLLECTION.to_owned()),
                ),
                detail: Some(format!("create {:?} ({} bytes)", doc.title, doc.body.len())),
                properties: None,
            };
            effects
                .apply(out, plan, || Ok::<(), ErrorEvent>(()))
                .map_err(Failure::from)?;
        }
        return Ok(input.finish(out, Outcome::success())?);
    }
    let fields: Vec<_> = records.iter().map(|r| &r.fields).collect();
    let hash = request_hash("import", &(mode == InputMode::FailFast, &fields));
    let mut store = open_store(db)?;
    let mut item_errors: Vec<ErrorEvent> = Vec::new();
    let done = store.transaction(|tx| -> Result<_, RunError> {
        let mut recorder = match &args.mutation.idempotency_key {
            Some(key) => match begin(tx, key, &hash)? {
                Replay::Replayed(recorded) => return Ok(Err(recorded)),
                Replay::Fresh(recorder) => Some(recorder),
            },
            None => None,
        };
        let mut events = Vec::with_capacity(docs.len());
        progress.phase("importing", u64::try_from(docs.len()).ok());
        if mode == InputMode::FailFast {
            let positions: Vec<&Record> = docs.iter().map(|(_, r)| *r).collect();
            let imported = tx
                .import(docs.iter().map(|(d, _)| {
                    progress.tick();
                    d.clone()
                }))
                .map_err(|e| match e {
                    StoreError::ImportItem { index, source } => {
                        let record = positions[index];
                        let at = where_(record.line_number, record.item_index);
                        let mut event = item_error(store_error(&source), record);
                        event.message = format!("{at}: {}", event.message);
                        RunError::Failed(Failure::from(event.hint(
                            "fix the input, or pass --continue-on-error to skip bad records",
                        )))
                    }
                    other => RunError::Store(other),
                })?;
            events.extend(imported.into_iter().map(created));
        } else {
            for (doc, record) in &docs {
                progress.tick();
                match tx.create(doc.clone()) {
                    Ok(doc) => events.push(created(doc)),
                    Err(e) if e.is_item_error() => {
                        let at = where_(record.line_number, record.item_index);
                        let mut event = item_error(store_error(&e), record);
                        event.message = format!("{at}: {}", event.message);
                        item_errors.push(event);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        if let Some(mut r) = recorder.take() {
            for event in &events {
                r.record(event)?;
            }
            r.finish(tx, true)?;
        }
        progress.phase("committing", None);
        Ok(Ok(events))
    })?;
    progress.finish();
    let outcome = match done {
        Ok(events) => {
            for e in &item_errors {
                out.error(&e.clone().item())?;
            }
            for event in &events {
                out.emit(event)?;
            }
            Outcome::success()
        }
        Err(recorded) => replay(&recorded, out)?,
    };
    Ok(input.finish(out, outcome)?)
}

/// A writer into a shared buffer, so human mode can read back what the import reported.
#[derive(Clone, Default)]
struct Capture(Rc<RefCell<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The events of a captured stream (lines that do not decode are skipped).
fn captured_events(bytes: &[u8]) -> Vec<Event> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| aoi::read::decode(l).ok().map(|d| d.event))
        .collect()
}

/// Runs `outline import`.
pub fn import(app: &App, global: &GlobalArgs, db: Option<PathBuf>, args: ImportArgs) -> ExitCode {
    if global.machine() {
        return app.run(global, "import", |out| {
            Ok(run_import(out, db, &args, &mut Progress::off())?)
        });
    }
    let capture = Capture::default();
    let mut out = match Emitter::builder(app.identity())
        .command("import")
        .start(capture.clone())
    {
        Ok(out) => out,
        Err(e) => return human_failure(RunError::from(e), global.color_allowed()),
    };
    let mut progress = Progress::stderr(true);
    let result = run_import(&mut out, db, &args, &mut progress);
    progress.finish();
    let finished = match result {
        Ok(outcome) => out.finish(outcome).map(|_| ()),
        Err(e) => return human_failure(e, global.color_allowed()),
    };
    if let Err(e) = finished {
        return human_failure(RunError::from(e), global.color_allowed());
    }
    let bytes = capture.0.borrow().clone();
    let mut created = 0u64;
    let mut planned = 0u64;
    let mut ok = true;
    let mut replayed = false;
    for event in captured_events(&bytes) {
        match event {
            Event::Error(e) => {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "error: {}", e.message);
            }
            Event::Domain { ty, .. } if ty == "created" => created += 1,
            Event::Plan(_) => planned += 1,
            Event::Summary(s) => {
                ok = s.ok;
                replayed = s
                    .properties
                    .as_ref()
                    .and_then(|p| p.get("idempotent_replay"))
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false);
            }
            _ => {}
        }
    }
    if args.mutation.dry_run {
        human::line(&format!(
            "would import {planned} document(s); dry run: nothing was changed"
        ));
    } else if replayed {
        human::line(&format!(
            "already imported under this idempotency key ({created} document(s)); nothing changed"
        ));
    } else {
        human::line(&format!("imported {created} document(s)"));
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Every document passing `filter`, with its body, in list order, from one snapshot.
fn export_entries(db: Option<PathBuf>, filter: &FilterArgs) -> Result<Vec<Entry>, RunError> {
    let store = open_store(db)?;
    let filter = filter.to_filter();
    let mut entries = Vec::new();
    for doc in store.iter_all()? {
        let doc = doc?;
        if filter
            .collection
            .as_ref()
            .is_some_and(|c| *c != doc.collection)
            || filter.tag.as_ref().is_some_and(|t| !doc.tags.contains(t))
        {
            continue;
        }
        let mut entry = Entry::header(&doc);
        entry.body_bytes = Some(doc.body.len() as u64);
        entry.body = Some(doc.body);
        entries.push(entry);
    }
    Ok(entries)
}

/// Runs `outline export`.
pub fn export(app: &App, global: &GlobalArgs, db: Option<PathBuf>, filter: FilterArgs) -> ExitCode {
    if !global.machine() {
        return match export_entries(db, &filter) {
            Ok(entries) => {
                let rows: Vec<Vec<String>> = entries
                    .iter()
                    .map(|e| {
                        vec![
                            e.id.clone(),
                            e.collection.clone(),
                            e.body_bytes.unwrap_or(0).to_string(),
                            e.title.clone(),
                        ]
                    })
                    .collect();
                human::table(
                    human::Paint::stdout(global),
                    &["ID", "COLLECTION", "BYTES", "TITLE"],
                    &rows,
                );
                human::line(&format!(
                    "{} document(s); use --output jsonl for the full export",
                    entries.len()
                ));
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, "export", |out| {
        for entry in export_entries(db, &filter)? {
            out.emit(&entry)?;
        }
        Ok(Outcome::success())
    })
}
