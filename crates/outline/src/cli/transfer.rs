//! Moving documents in and out: `import` (§12 input, §13.1 upstream streams) and `export`.
//!
//! `outline export --db A --output jsonl | outline import --db B --input-jsonl - --output jsonl`
//! copies a database: `export` writes every document as an `entry` with its body, and `import`
//! accepts those entries (keeping ids and timestamps) as well as plain `{title, body?, tags?,
//! collection?}` records.

use crate::cli::Db;
use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use aoi::app::App;
use aoi::discover::input_schema::record_schema;
use aoi::read::Event;
use aoi::surface::cursor::request_hash;
use aoi::surface::flags::{GlobalArgs, InputArgs, InputMode, MutationArgs};
use aoi::surface::input::{Input, Record};
use aoi::surface::safety::{begin, replay, Effects, IdempotencyStore, Recorded, Replay};
use aoi::{Emitter, ErrorEvent, Failure, Outcome, Plan};
use clap::Args;
use sha2::{Digest, Sha256};

// The record and its parser live in the library, where the fuzz target `import_record` reaches them.
pub(super) use outline::import_record::ImportRecord;
use outline::import_record::{position, to_document};
use outline::store::DEFAULT_COLLECTION;

use super::errors::{store_error, RunError};
use super::events::{Created, Entry};
use super::human::Progress;
use super::name;
use super::{human, human_failure, open_store, table_ids, Access, FilterArgs};

/// `outline import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    mutation: MutationArgs,
}

/// The item error for a record, with its position.
fn item_error(mut error: ErrorEvent, record: &Record) -> ErrorEvent {
    error = error.item_index(record.item_index);
    if let Some(line) = record.line_number {
        error = error.line_number(line);
    }
    error
}

fn created(doc: outline::store::Document) -> Created {
    Created {
        id: doc.id,
        version: doc.version,
        title: doc.title,
        collection: doc.collection,
    }
}

/// How often a long import reports `aoi:progress`.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The hint on an input error that ends a fail-fast import.
const FIX_INPUT: &str = "fix the input, or pass --continue-on-error to skip bad records";

/// Why a streamed import did not commit; the transaction rolls back, so nothing is written.
enum Abort {
    /// The import failed.
    Failed(RunError),
    /// The idempotency key holds the record of this very request: replay it.
    Replayed(Recorded),
    /// The upstream stream failed and the import is fail-fast.
    Upstream,
}

impl<E: Into<RunError>> From<E> for Abort {
    fn from(e: E) -> Abort {
        Abort::Failed(e.into())
    }
}

/// The error for a record that cannot be imported, naming its position.
fn located(e: ErrorEvent, record: &Record) -> ErrorEvent {
    let at = position(record.line_number, record.item_index);
    let mut event = item_error(e, record);
    event.message = format!("{at}: {}", event.message);
    event
}

/// Runs an import against `out`, streaming the input into one transaction (§12.2).
///
/// Fail-fast holds because the transaction commits only after the last record: a bad record
/// anywhere, or an upstream that failed, rolls everything back. Records are inserted as they
/// are read, so memory stays flat however long the input is. `created` events are emitted
/// only after the commit.
fn run_import<W: Write>(
    out: &mut Emitter<W>,
    db: Db,
    args: &ImportArgs,
    progress: &mut Progress,
) -> Result<Outcome, RunError> {
    let mode = args.input.mode(InputMode::FailFast);
    let fail_fast = mode == InputMode::FailFast;
    let mut input = Input::open(&args.input, InputMode::FailFast)?
        .validate_with(&record_schema::<ImportRecord>())?;
    if args.mutation.dry_run {
        return dry_run_import(out, input, fail_fast, progress);
    }
    let key = args.mutation.idempotency_key.as_deref();
    let mut store = open_store(db, Access::Write)?;
    progress.phase("importing");
    let result = store.transaction(|tx| -> Result<_, Abort> {
        // A key with a record: read the input only to see if it is the same request.
        let replaying = match key {
            Some(key) => tx.load(key)?.is_some(),
            None => false,
        };
        let mut digest = Sha256::new();
        let mut events = Vec::new();
        let mut item_errors = Vec::new();
        let mut importer = tx.importer()?;
        let mut last_report = Instant::now();
        let mut read = 0u64;
        while let Some(record) = input.next(out)? {
            progress.tick();
            read += 1;
            if last_report.elapsed() >= PROGRESS_EVERY {
                // For a machine reader: how far a long import is (never needed for its result).
                out.progress(&aoi::Progress {
                    completed: Some(read),
                    unit: Some("records".into()),
                    message: Some(format!("read {read} records")),
                    ..aoi::Progress::default()
                })?;
                last_report = Instant::now();
            }
            if key.is_some() {
                digest.update(serde_json::to_vec(&record.fields).unwrap_or_default());
                digest.update(b"\n");
            }
            if replaying {
                continue;
            }
            let doc = match to_document(&record) {
                Ok(doc) => doc,
                Err(e) if fail_fast => {
                    return Err(Failure::from(item_error(e, &record).hint(FIX_INPUT)).into())
                }
                Err(e) => {
                    out.error(&item_error(e, &record).item())?;
                    continue;
                }
            };
            match importer.insert(doc) {
                Ok(doc) => events.push(created(doc)),
                Err(e) if e.is_item_error() && fail_fast => {
                    let event = located(store_error(&e), &record).hint(FIX_INPUT);
                    return Err(Failure::from(event).into());
                }
                Err(e) if e.is_item_error() => item_errors.push(located(store_error(&e), &record)),
                Err(e) => return Err(e.into()),
            }
        }
        drop(importer);
        if fail_fast && input.upstream_failed() {
            return Err(Abort::Upstream);
        }
        if let Some(key) = key {
            let records: String = digest
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let hash = request_hash(name::IMPORT, &(fail_fast, records));
            match begin(tx, key, &hash)? {
                Replay::Replayed(recorded) => return Err(Abort::Replayed(recorded)),
                Replay::Fresh(mut recorder) => {
                    for event in &events {
                        recorder.record(event)?;
                    }
                    recorder.finish(tx, true)?;
                }
            }
        }
        Ok((events, item_errors))
    });
    let result = store.finish(result);
    progress.finish();
    let outcome = match result {
        Ok((events, item_errors)) => {
            for e in item_errors {
                out.error(&e.item())?;
            }
            for event in &events {
                out.emit(event)?;
            }
            Outcome::success()
        }
        Err(Abort::Replayed(recorded)) => replay(&recorded, out)?,
        Err(Abort::Upstream) => Outcome::failed(),
        Err(Abort::Failed(e)) => return Err(e),
    };
    Ok(input.finish(out, outcome)?)
}

/// `import --dry-run`: every record is read and checked, and each document it would create
/// is an `aoi:plan`; a fail-fast import with a bad record plans nothing.
fn dry_run_import<W: Write, R: std::io::Read>(
    out: &mut Emitter<W>,
    mut input: Input<R>,
    fail_fast: bool,
    progress: &mut Progress,
) -> Result<Outcome, RunError> {
    progress.phase("checking");
    let mut plans = Vec::new();
    while let Some(record) = input.next(out)? {
        progress.tick();
        match to_document(&record) {
            Ok(doc) => plans.push(Plan {
                action: "create".into(),
                target: Some(
                    doc.collection
                        .unwrap_or_else(|| DEFAULT_COLLECTION.to_owned()),
                ),
                detail: Some(format!("create {:?} ({} bytes)", doc.title, doc.body.len())),
                properties: None,
            }),
            Err(e) if fail_fast => {
                return Err(Failure::from(item_error(e, &record).hint(FIX_INPUT)).into())
            }
            Err(e) => out.error(&item_error(e, &record).item())?,
        }
    }
    progress.finish();
    if fail_fast && input.upstream_failed() {
        return Ok(input.finish(out, Outcome::failed())?);
    }
    let mut effects = Effects::new(true);
    for plan in plans {
        effects
            .apply(out, plan, || Ok::<(), ErrorEvent>(()))
            .map_err(Failure::from)?;
    }
    Ok(input.finish(out, Outcome::success())?)
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
pub fn import(app: &App, global: &GlobalArgs, db: Db, args: ImportArgs) -> ExitCode {
    if global.machine() {
        return app.run(global, |out| {
            Ok(run_import(out, db, &args, &mut Progress::off())?)
        });
    }
    let capture = Capture::default();
    let mut out = match Emitter::builder(app.identity())
        .command(name::IMPORT)
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
    let mut errors = 0u64;
    for event in captured_events(&bytes) {
        match event {
            Event::Error(e) => {
                errors += 1;
                let mut err = std::io::stderr().lock();
                let _ = writeln!(
                    err,
                    "error: {}",
                    aoi::surface::term::printable_line(&e.message)
                );
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
    } else if errors > 0 {
        // §19.4: the run failed; what it wrote stays, and the person is told both.
        human::line(&format!(
            "imported {created} document(s); {errors} record(s) failed (above), so the import is incomplete"
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

/// Calls `each` with every document passing `filter`, with its body, in list order, from one
/// snapshot, a batch at a time (an export never holds the whole database in memory).
fn for_each_entry(
    db: Db,
    filter: &FilterArgs,
    mut each: impl FnMut(Entry) -> Result<(), RunError>,
) -> Result<(), RunError> {
    let store = open_store(db, Access::Read)?;
    let filter = filter.to_filter();
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
        each(entry)?;
    }
    Ok(())
}

/// Writes every document as an import record, one JSON object per line, to stdout. A reader
/// that went away (`| head`) ends it quietly; any other write error (a full disk) is an `io`
/// failure, never a success.
fn export_records(db: Db, filter: &FilterArgs, global: &GlobalArgs) -> ExitCode {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut failed: Option<std::io::Error> = None;
    let written = for_each_entry(db, filter, |e| {
        if failed.is_some() {
            return Ok(());
        }
        let record = serde_json::json!({
            "id": e.id, "title": e.title, "body": e.body, "tags": e.tags,
            "collection": e.collection, "created_at": e.created_at, "updated_at": e.updated_at,
        });
        let mut line = record.to_string();
        line.push('\n');
        failed = out.write_all(line.as_bytes()).err();
        Ok(())
    });
    if failed.is_none() {
        failed = out.flush().err();
    }
    match (written, failed) {
        (Err(e), _) => human_failure(e, global.color_allowed()),
        (Ok(()), None) => ExitCode::SUCCESS,
        (Ok(()), Some(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(141),
        (Ok(()), Some(e)) => {
            let error = aoi::ErrorEvent::new(
                aoi::Category::Io,
                aoi::Code::from_static("OUTPUT_WRITE_FAILED"),
                format!("the export could not be written: {e}"),
            );
            aoi::app::human_error(&error, global.color_allowed())
        }
    }
}

/// Runs `outline export`: a table on a terminal; import records when stdout is a file or a
/// pipe; the AOI stream with `--output jsonl`.
pub fn export(app: &App, global: &GlobalArgs, db: Db, filter: FilterArgs) -> ExitCode {
    if !global.machine() && !std::io::stdout().is_terminal() {
        // `outline export > backup.jsonl`: what lands in the file is what `import` takes back
        // (one record per line: id, title, body, tags, collection, times), never a table.
        return export_records(db, &filter, global);
    }
    if !global.machine() {
        let mut rows: Vec<Vec<String>> = Vec::new();
        let listed = for_each_entry(db.clone(), &filter, |e| {
            rows.push(vec![
                e.id,
                e.collection,
                e.body_bytes.unwrap_or(0).to_string(),
                e.title,
            ]);
            Ok(())
        });
        return match listed {
            Ok(()) => {
                let ids = table_ids(&db, rows.iter().map(|row| row[0].as_str()));
                for (row, id) in rows.iter_mut().zip(ids) {
                    row[0] = id;
                }
                human::table(
                    human::stdout_paint(global),
                    &["ID", "COLLECTION", "BYTES", "TITLE"],
                    &rows,
                );
                human::line(&format!(
                    "{} document(s); use --output jsonl for the full export",
                    rows.len()
                ));
                ExitCode::SUCCESS
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, |out| {
        for_each_entry(db, &filter, |entry| Ok(out.emit(&entry)?))?;
        Ok(Outcome::success())
    })
}
