//! Schema validation of domain events on worker threads, for [`Verifier::with_schema`].
//!
//! Parsing a line into a [`Value`] and validating it costs several times what the rest of the
//! verifier does, so with a schema the verifier would run at the speed of that one step. The
//! verifier stays single-owner and incremental: it copies the domain lines to validate into
//! batches and hands them to a few worker threads, which parse, validate and keep their failures.
//! When the workers are behind, the verifier's thread validates the batch itself instead of
//! waiting, so there is one worker fewer than cores and no core idles or is oversubscribed.
//! [`SchemaPool::finish`] joins them and returns the failures in line order, so the report is
//! the one a single thread would write (the verifier merges them with its own findings).
//!
//! Each line is checked by an [`EventCheck`]: a valid line is recognised on a borrowed
//! [tape](super::schema_tape) without building a `Value`; any other is parsed into a `Value` and
//! validated as a single thread would, so findings and messages are the same.
//!
//! Framework events are not sent here: they are rare, and the verifier has already parsed them.
//! A worker that panics hands its payload back and [`SchemaPool::finish`] resumes the panic on
//! the verifier's thread, as if validation had run there; nothing waits on a dead worker. If no
//! thread can be spawned, batches are validated on the calling thread.
//!
//! [`Verifier::with_schema`]: super::Verifier::with_schema

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::{self, JoinHandle};

use serde_json::Value;

use super::finding::FindingCode;
use super::schema_tape::{LineTape, TapeValidator};
use crate::discover::schema::EventValidator;

/// Bytes of lines per batch: large enough that a batch costs a worker far more than the channel
/// hand-off, small enough that the workers start early and stay evenly loaded.
pub(crate) const DEFAULT_BATCH_BYTES: usize = 256 * 1024;

/// Most worker threads: beyond this the verifier's own thread cannot feed them.
const MAX_WORKERS: usize = 4;

/// Batches queued per worker before the verifier validates one itself.
const QUEUED_PER_WORKER: usize = 2;

/// Worker threads for this machine: one per available core but the verifier's own, which
/// validates too when the workers are behind; at least 1, at most [`MAX_WORKERS`].
///
/// On 2 cores this is 1 worker: 2 workers and the verifier's thread share 2 cores worse (the
/// verifier, which feeds everything, is preempted), measured 0.54 against 0.65 of `aoi verify`'s
/// throughput on the benchmark stream (`bench/verify_schema.sh`).
///
/// Asked once per process: `available_parallelism` reads the cgroup files on every call, and
/// a consumer verifying a stream per request (`aoi mcp`, `aoi lint`) would pay for it each time.
pub(crate) fn default_workers() -> usize {
    static WORKERS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WORKERS.get_or_init(|| workers_for(thread::available_parallelism().map_or(1, usize::from)))
}

/// Worker threads for `cores` cores; see [`default_workers`].
fn workers_for(cores: usize) -> usize {
    cores.saturating_sub(1).clamp(1, MAX_WORKERS)
}

/// The message of an `EVENT_SCHEMA_INVALID` finding for `event`, or `None` when it is valid.
pub(crate) fn schema_problem(validator: &EventValidator, event: &Value) -> Option<String> {
    let errors = validator.validate(event).err()?;
    let first = errors.first().cloned().unwrap_or_default();
    let more = if errors.len() > 1 {
        format!(" (and {} more)", errors.len() - 1)
    } else {
        String::new()
    };
    Some(super::finding::bounded_message(format!(
        "does not match the published schema: {first}{more}"
    )))
}

/// A line's text: `Ok` when known to be UTF-8, else its bytes.
pub(crate) type LineText<'a> = Result<&'a str, &'a [u8]>;

/// Checks one domain line at a time, on any thread.
pub(crate) trait LineCheck: Send + Sync {
    /// Gets ready for many lines; the pool calls it once, before its threads start.
    fn prepare(&self) {}

    /// The line's finding, or `None` when it is valid. `tape` is the calling thread's, kept
    /// from line to line so that checking a line need not allocate.
    fn check(&self, text: LineText<'_>, tape: &mut LineTape) -> Option<(FindingCode, String)>;
}

/// The check of a domain line against an event schema.
///
/// A line is parsed into a `Value` and validated by [`EventValidator`]. Once prepared for many
/// lines, a valid one is recognised on a [tape](super::schema_tape) first, which costs a fraction
/// of that; any other still goes through `Value`, so findings are the same.
#[derive(Debug)]
pub(crate) struct EventCheck {
    validator: Arc<EventValidator>,
    /// The schema, for compiling `tape` when prepared.
    schema: Value,
    tape: OnceLock<TapeValidator>,
    /// The tape validator panicked once: it is not trusted again.
    tape_failed: AtomicBool,
}

impl EventCheck {
    /// Checks lines against `validator`, compiled from `schema`.
    pub(crate) fn new(validator: Arc<EventValidator>, schema: Value) -> EventCheck {
        EventCheck {
            validator,
            schema,
            tape: OnceLock::new(),
            tape_failed: AtomicBool::new(false),
        }
    }
}

impl LineCheck for EventCheck {
    fn prepare(&self) {
        self.tape.get_or_init(|| TapeValidator::new(&self.schema));
    }

    fn check(&self, text: LineText<'_>, tape: &mut LineTape) -> Option<(FindingCode, String)> {
        if let (Ok(line), Some(fast)) = (text, self.tape.get()) {
            // The tape only ever confirms a valid line. Should it fail in any way, even by a
            // panic in the validator, `Value` decides, and the tape is not used again.
            if !self.tape_failed.load(Ordering::Relaxed) {
                let valid = panic::catch_unwind(AssertUnwindSafe(|| {
                    tape.with_line(line, |items| fast.is_valid(items)) == Some(true)
                }));
                match valid {
                    Ok(true) => return None,
                    Ok(false) => {}
                    Err(_) => self.tape_failed.store(true, Ordering::Relaxed),
                }
            }
        }
        let parsed = match text {
            Ok(line) => serde_json::from_str::<Value>(line),
            Err(bytes) => serde_json::from_slice::<Value>(bytes),
        };
        line_problem(&self.validator, parsed)
    }
}

/// The finding for one domain line, parsed as `parsed`, or `None` when it is valid.
pub(crate) fn line_problem(
    validator: &EventValidator,
    parsed: Result<Value, serde_json::Error>,
) -> Option<(FindingCode, String)> {
    match parsed {
        Ok(event) => {
            schema_problem(validator, &event).map(|m| (FindingCode::EventSchemaInvalid, m))
        }
        Err(e) => Some((FindingCode::InvalidJson, format!("invalid JSON: {e}"))),
    }
}

/// A violation found on a domain line by schema validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaFinding {
    /// The 1-based line number.
    pub(crate) line: u64,
    /// `EVENT_SCHEMA_INVALID`, or `INVALID_JSON` for a line the full parser rejects.
    pub(crate) code: FindingCode,
    /// The finding's message.
    pub(crate) message: String,
}

/// The first findings in line order, up to a cap, and how many more there were.
#[derive(Debug, Default)]
pub(crate) struct SchemaFindings {
    /// At most `cap` findings, in line order.
    pub(crate) kept: Vec<SchemaFinding>,
    /// Findings beyond the cap, counted only.
    pub(crate) dropped: u64,
    cap: usize,
}

impl SchemaFindings {
    fn new(cap: usize) -> SchemaFindings {
        SchemaFindings {
            kept: Vec::new(),
            dropped: 0,
            cap,
        }
    }

    /// Adds a finding on a line after every one added so far.
    fn push(&mut self, finding: SchemaFinding) {
        if self.kept.len() < self.cap {
            self.kept.push(finding);
        } else {
            self.dropped += 1;
        }
    }

    /// Merges findings kept in line order by several collectors, each of which saw a subsequence
    /// of the lines in order: the first `cap` of the union are among the first `cap` of each.
    fn merge(cap: usize, parts: impl IntoIterator<Item = SchemaFindings>) -> SchemaFindings {
        let mut all = SchemaFindings::new(cap);
        for part in parts {
            all.kept.extend(part.kept);
            all.dropped += part.dropped;
        }
        // A line is in one batch only, so line numbers are unique.
        all.kept.sort_unstable_by_key(|f| f.line);
        if all.kept.len() > cap {
            all.dropped += (all.kept.len() - cap) as u64;
            all.kept.truncate(cap);
        }
        all
    }
}

/// Domain lines to validate, copied one after another, with their numbers.
#[derive(Debug, Default)]
struct Batch {
    /// The lines' bytes, without separators.
    text: Vec<u8>,
    /// Each line's number and the offset in `text` where it ends.
    lines: Vec<(u64, usize)>,
}

impl Batch {
    fn with_capacity(bytes: usize) -> Batch {
        Batch {
            text: Vec::with_capacity(bytes),
            lines: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.lines.clear();
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Checks every line, adding failures to `found` in line order.
    fn validate(&self, check: &dyn LineCheck, tape: &mut LineTape, found: &mut SchemaFindings) {
        // The verifier only sends UTF-8 lines, so one check of the whole batch lets every line
        // be parsed as `str`, which skips serde_json's own UTF-8 checks of strings.
        let text = std::str::from_utf8(&self.text).ok();
        let mut start = 0;
        for &(line, end) in &self.lines {
            let line_text = match text.and_then(|t| t.get(start..end)) {
                Some(line) => Ok(line),
                None => Err(self.text.get(start..end).unwrap_or(&[])),
            };
            if let Some((code, message)) = check.check(line_text, tape) {
                found.push(SchemaFinding {
                    line,
                    code,
                    message,
                });
            }
            start = end;
        }
    }
}

/// What a worker hands back when it stops.
#[derive(Debug)]
struct WorkerEnd {
    found: SchemaFindings,
    /// The payload of a panic during validation; the worker stopped there.
    panic: Option<Box<dyn Any + Send>>,
}

/// Running workers and the channels to them.
#[derive(Debug)]
struct Workers {
    /// Full batches to the workers; dropping it tells them to finish.
    jobs: SyncSender<Batch>,
    /// Emptied batches back from the workers, for reuse.
    spare: Receiver<Batch>,
    handles: Vec<JoinHandle<WorkerEnd>>,
}

/// Where batches go.
#[derive(Debug)]
enum Mode {
    /// No batch filled yet: threads start with the first, so a short stream never spawns any.
    Idle,
    /// Worker threads validate.
    Threads(Workers),
    /// No thread could be spawned, or every worker stopped: the caller's thread validates.
    Inline,
}

/// Validates domain lines on worker threads; see the module documentation.
pub(crate) struct SchemaPool {
    check: Arc<dyn LineCheck>,
    workers: usize,
    batch_bytes: usize,
    /// The cap on findings, [`super::VerifyOptions::max_findings`].
    cap: usize,
    batch: Batch,
    mode: Mode,
    /// Findings of batches validated on this thread.
    inline: SchemaFindings,
    /// The tape of lines validated on this thread.
    tape: LineTape,
    /// What the workers handed back once stopped.
    ended: Vec<WorkerEnd>,
}

impl std::fmt::Debug for SchemaPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaPool")
            .field("workers", &self.workers)
            .field("batch_bytes", &self.batch_bytes)
            .field("cap", &self.cap)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl SchemaPool {
    /// A pool of up to `workers` threads (at least 1) applying `check` to batches of about
    /// `batch_bytes`, keeping at most `cap` findings.
    pub(crate) fn new(
        check: Arc<dyn LineCheck>,
        workers: usize,
        batch_bytes: usize,
        cap: usize,
    ) -> SchemaPool {
        SchemaPool {
            check,
            workers: workers.max(1),
            batch_bytes: batch_bytes.max(1),
            cap,
            batch: Batch::default(),
            mode: Mode::Idle,
            inline: SchemaFindings::new(cap),
            tape: LineTape::default(),
            ended: Vec::new(),
        }
    }

    /// Queues the domain line `number` (its bytes without the line ending, already checked to be
    /// UTF-8) for validation.
    pub(crate) fn push(&mut self, number: u64, line: &[u8]) {
        if self.batch.text.capacity() == 0 {
            self.batch = self.fresh_batch();
        }
        self.batch.text.extend_from_slice(line);
        self.batch.lines.push((number, self.batch.text.len()));
        if self.batch.text.len() >= self.batch_bytes {
            self.dispatch();
        }
    }

    /// An empty batch: one a worker has finished with, else a new one.
    fn fresh_batch(&mut self) -> Batch {
        match &self.mode {
            Mode::Threads(workers) => workers.spare.try_recv().ok(),
            Mode::Idle | Mode::Inline => None,
        }
        .unwrap_or_else(|| Batch::with_capacity(self.batch_bytes + self.batch_bytes / 4))
    }

    /// Hands the current batch to the workers, starting them if need be.
    fn dispatch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        if matches!(self.mode, Mode::Idle) {
            self.mode = self.spawn();
        }
        let batch = std::mem::take(&mut self.batch);
        let (unsent, workers_gone) = match &self.mode {
            Mode::Threads(workers) => match workers.jobs.try_send(batch) {
                Ok(()) => (None, false),
                // The workers are behind: rather than wait for them, this thread validates the
                // batch, so that no core idles while there is work.
                Err(TrySendError::Full(batch)) => (Some(batch), false),
                Err(TrySendError::Disconnected(batch)) => (Some(batch), true),
            },
            Mode::Idle | Mode::Inline => (Some(batch), false),
        };
        if let Some(mut batch) = unsent {
            // Every worker has stopped (a panic, handed back at `finish`): go on here.
            if workers_gone {
                self.stop_threads();
            }
            batch.validate(&*self.check, &mut self.tape, &mut self.inline);
            batch.clear();
            self.batch = batch;
        }
    }

    /// Starts the workers; [`Mode::Inline`] when not even one thread can be spawned.
    fn spawn(&self) -> Mode {
        self.check.prepare();
        let (jobs, queue) = mpsc::sync_channel::<Batch>(self.workers * QUEUED_PER_WORKER);
        let queue = Arc::new(Mutex::new(queue));
        let (spare_to, spare) = mpsc::channel::<Batch>();
        let mut handles = Vec::with_capacity(self.workers);
        for i in 0..self.workers {
            let check = Arc::clone(&self.check);
            let queue = Arc::clone(&queue);
            let spare_to = spare_to.clone();
            let cap = self.cap;
            let spawned = thread::Builder::new()
                .name(format!("aoi-schema-{i}"))
                .spawn(move || work(&*check, &queue, &spare_to, cap));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(_) => break,
            }
        }
        if handles.is_empty() {
            Mode::Inline
        } else {
            Mode::Threads(Workers {
                jobs,
                spare,
                handles,
            })
        }
    }

    /// Stops the workers and keeps what they found in `ended`, switching to [`Mode::Inline`].
    fn stop_threads(&mut self) {
        let Mode::Threads(workers) = std::mem::replace(&mut self.mode, Mode::Inline) else {
            return;
        };
        let Workers { jobs, handles, .. } = workers;
        // Closing the queue ends each worker once it has drained it.
        drop(jobs);
        for handle in handles {
            let end = handle.join().unwrap_or_else(|payload| WorkerEnd {
                found: SchemaFindings::default(),
                panic: Some(payload),
            });
            self.ended.push(end);
        }
    }

    /// Validates what is still queued, stops the workers and returns every finding, at most
    /// `cap` of them kept, in line order.
    ///
    /// A panic in a worker is resumed here, on the caller's thread, once every worker has
    /// stopped.
    pub(crate) fn finish(mut self) -> SchemaFindings {
        if matches!(self.mode, Mode::Threads(_)) {
            self.dispatch();
        } else {
            // Threads are not worth starting for one last batch.
            self.batch
                .validate(&*self.check, &mut self.tape, &mut self.inline);
            self.batch.clear();
        }
        self.stop_threads();
        let mut panic = None;
        let mut parts = Vec::with_capacity(self.ended.len() + 1);
        for end in std::mem::take(&mut self.ended) {
            parts.push(end.found);
            if panic.is_none() {
                panic = end.panic;
            }
        }
        if let Some(payload) = panic {
            panic::resume_unwind(payload);
        }
        parts.push(std::mem::take(&mut self.inline));
        SchemaFindings::merge(self.cap, parts)
    }
}

impl Drop for SchemaPool {
    /// Stops the workers of a verifier dropped before [`SchemaPool::finish`] (or unwinding).
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// A worker: takes batches until the queue closes, validating each.
fn work(
    check: &dyn LineCheck,
    queue: &Mutex<Receiver<Batch>>,
    spare: &Sender<Batch>,
    cap: usize,
) -> WorkerEnd {
    let mut found = SchemaFindings::new(cap);
    let mut tape = LineTape::default();
    loop {
        // Only `recv` runs under the lock; a poisoned lock still guards a usable receiver.
        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(mut batch) = next else {
            return WorkerEnd { found, panic: None };
        };
        let validated = panic::catch_unwind(AssertUnwindSafe(|| {
            batch.validate(check, &mut tape, &mut found);
        }));
        if let Err(payload) = validated {
            return WorkerEnd {
                found,
                panic: Some(payload),
            };
        }
        batch.clear();
        // The verifier may be gone already; the batch is then simply freed.
        let _ = spare.send(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check that fails lines containing `bad` and panics on lines containing `boom`.
    struct Toy;

    impl LineCheck for Toy {
        fn check(&self, text: LineText<'_>, _: &mut LineTape) -> Option<(FindingCode, String)> {
            let line = text.unwrap_or("");
            assert!(!line.contains("boom"), "the check exploded");
            line.contains("bad")
                .then(|| (FindingCode::EventSchemaInvalid, line.to_owned()))
        }
    }

    fn toy_check() -> Arc<dyn LineCheck> {
        Arc::new(Toy)
    }

    fn feed(pool: &mut SchemaPool, lines: u64, bad_every: u64, boom_at: Option<u64>) {
        for n in 1..=lines {
            let text = match (n.is_multiple_of(bad_every), boom_at == Some(n)) {
                (_, true) => format!("boom {n}"),
                (true, _) => format!("bad {n}"),
                _ => format!("fine {n}"),
            };
            pool.push(n, text.as_bytes());
        }
    }

    #[test]
    fn an_event_check_finds_what_value_validation_finds() {
        let schema = serde_json::json!({
            "type": "object",
            "required": ["type"],
            "allOf": [{
                "if": {"properties": {"type": {"const": "hit"}}, "required": ["type"]},
                "then": {
                    "properties": {
                        "rank": {"type": "integer", "minimum": 0},
                        "id": {"type": "string", "minLength": 2},
                        "score": {"type": "number"},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["rank", "id"]
                }
            }, {
                "if": {"properties": {"type": {"const": "gone"}}, "required": ["type"]},
                "then": {"required": ["id"], "properties": {"id": {"type": "string"}}}
            }]
        });
        let validator = Arc::new(EventValidator::new(&schema).expect("compiles"));
        let check = EventCheck::new(Arc::clone(&validator), schema);
        check.prepare();
        let lines: &[&[u8]] = &[
            br#"{"type":"hit","rank":1,"id":"ab","score":0.5,"tags":["x"]}"#,
            br#"{"type":"hit","rank":1,"id":"a\"b\\c\u00e9","tags":["\ud83e\udd80"]}"#,
            br#"{"type":"hit","rank":-1,"id":"ab"}"#,
            br#"{"type":"hit","rank":1.5,"id":"ab"}"#,
            br#"{"type":"hit","rank":1,"id":"a"}"#,
            br#"{"type":"hit","rank":1,"id":"ab","tags":[1]}"#,
            br#"{"type":"hit","rank":1,"id":"ab","rank":"x"}"#,
            br#"{"type":"hit","rank":"x","id":"ab","rank":1}"#,
            br#"{"type":"gone","id":"x"}"#,
            br#"{"type":"gone","id":5}"#,
            br#"{"type":"other"}"#,
            br#"{"type":"hit","rank":1,"id":"ab",}"#,
            br#"{"type":"hit","rank":1,"id":"ab"} x"#,
            b"{\"type\":\"hit\",\"rank\":1,\"id\":\"a\xffb\"}",
            br#"[1,2]"#,
        ];
        let mut tape = LineTape::default();
        let mut found = 0;
        for line in lines {
            let text = std::str::from_utf8(line).map_err(|_| *line);
            let expected = line_problem(&validator, serde_json::from_slice(line));
            found += usize::from(expected.is_some());
            assert_eq!(
                check.check(text, &mut tape),
                expected,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(found, 10);
    }

    #[test]
    fn findings_come_back_in_line_order_under_the_cap() {
        for (workers, batch) in [(1, 1), (3, 1), (2, 64), (4, 1000)] {
            let mut pool = SchemaPool::new(toy_check(), workers, batch, 10);
            feed(&mut pool, 5000, 7, None);
            let found = pool.finish();
            let lines: Vec<u64> = found.kept.iter().map(|f| f.line).collect();
            assert_eq!(lines, (1..=10).map(|i| i * 7).collect::<Vec<_>>());
            assert_eq!(found.kept[0].message, "bad 7");
            assert_eq!(
                found.dropped,
                5000 / 7 - 10,
                "{workers} workers, batch {batch}"
            );
        }
    }

    #[test]
    fn a_panic_in_a_worker_is_resumed_by_finish_not_a_hang() {
        for workers in [1, 2, 4] {
            let mut pool = SchemaPool::new(toy_check(), workers, 16, 100);
            // The line may also be validated on this thread (the workers behind): then the
            // panic is raised here directly.
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                feed(&mut pool, 3000, 5, Some(1234));
                pool.finish()
            }));
            let payload = outcome.expect_err("the worker's panic reaches the caller");
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied());
            assert_eq!(message, Some("the check exploded"), "{workers} workers");
        }
    }

    #[test]
    fn a_pool_whose_workers_all_panicked_goes_on_inline_then_reports_the_panic() {
        // The first batch goes to the one worker, which dies on it; once this thread sees the
        // queue closed, every later batch is validated here.
        let mut pool = SchemaPool::new(toy_check(), 1, 1, 100);
        pool.push(1, b"boom 1");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut n = 1;
        while !matches!(pool.mode, Mode::Inline) && std::time::Instant::now() < deadline {
            n += 1;
            pool.push(n, format!("fine {n}").as_bytes());
            thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(matches!(pool.mode, Mode::Inline), "{:?}", pool.mode);
        pool.push(n + 1, b"bad, and validated here");
        assert_eq!(pool.inline.kept.last().map(|f| f.line), Some(n + 1));
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| pool.finish()));
        assert!(outcome.is_err());
    }

    #[test]
    fn a_dropped_pool_stops_its_workers() {
        let mut pool = SchemaPool::new(toy_check(), 2, 1, 100);
        // Line 700 panics on a worker, or here if this thread validates it.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| feed(&mut pool, 2000, 3, Some(700))));
        drop(pool);
    }

    /// Fails lines containing `bad`; on a worker thread, waits until `open` first.
    struct Gated {
        open: Mutex<bool>,
        opened: std::sync::Condvar,
    }

    impl LineCheck for Gated {
        fn check(&self, text: LineText<'_>, _: &mut LineTape) -> Option<(FindingCode, String)> {
            if thread::current()
                .name()
                .is_some_and(|n| n.starts_with("aoi-schema-"))
            {
                let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
                while !*open {
                    open = self
                        .opened
                        .wait(open)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
            let line = text.unwrap_or("");
            line.contains("bad")
                .then(|| (FindingCode::EventSchemaInvalid, line.to_owned()))
        }
    }

    #[test]
    fn while_the_workers_are_busy_this_thread_validates_and_the_order_holds() {
        let gated = Arc::new(Gated {
            open: Mutex::new(false),
            opened: std::sync::Condvar::new(),
        });
        let mut pool = SchemaPool::new(Arc::clone(&gated) as Arc<dyn LineCheck>, 1, 1, 1000);
        // The worker holds the first batch, the queue the next ones: the rest is done here.
        feed(&mut pool, 500, 7, None);
        assert!(matches!(pool.mode, Mode::Threads(_)), "{:?}", pool.mode);
        let here = pool.inline.kept.len();
        assert!(
            here >= 500 / 7 - 1,
            "{here} findings validated on this thread"
        );
        *gated.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        gated.opened.notify_all();
        let found = pool.finish();
        let lines: Vec<u64> = found.kept.iter().map(|f| f.line).collect();
        assert_eq!(lines, (1..=500 / 7).map(|i| i * 7).collect::<Vec<_>>());
        assert_eq!(found.dropped, 0);
    }

    #[test]
    fn one_worker_fewer_than_cores() {
        assert_eq!(workers_for(1), 1);
        assert_eq!(workers_for(2), 1);
        assert_eq!(workers_for(3), 2);
        assert_eq!(workers_for(5), 4);
        assert_eq!(workers_for(64), MAX_WORKERS);
    }

    #[test]
    fn a_short_stream_starts_no_thread() {
        let mut pool = SchemaPool::new(toy_check(), 2, DEFAULT_BATCH_BYTES, 100);
        feed(&mut pool, 100, 10, None);
        assert!(matches!(pool.mode, Mode::Idle));
        let found = pool.finish();
        assert_eq!(found.kept.len(), 10);
    }
}
