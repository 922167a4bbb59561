//! The [`Emitter`]: the only writer of a machine-mode stream.
//!
//! It numbers every line (`aoi.seq` from 0, one `aoi.run` ULID), keeps the summary's counters
//! itself so a caller cannot get them wrong, buffers for throughput, and flushes where a consumer
//! needs to see the stream move: after `aoi:meta`, on `aoi:progress`, `aoi:heartbeat` and errors,
//! on [`Emitter::flush`] (call it before blocking work), and at the summary.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value};

use super::cancel::{CancelToken, Signal};
use super::flatten::{write_line, EnvelopeRef};
use crate::wire::single_line;
use crate::wire::{
    exit_code, Category, CausedBy, Check, Code, ErrorEvent, FrameworkEvent, Heartbeat, Identity,
    Meta, Plan, Progress, Reason, Summary, Upstream, Warning, AOI_VERSION,
};
use crate::DomainEvent;

/// Bytes buffered before a write to the underlying stream.
const FLUSH_AT: usize = 64 * 1024;

/// Why an event could not be written.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// The stream could not be written; for a closed pipe see [`EmitError::is_broken_pipe`].
    #[error("writing the event stream failed: {0}")]
    Io(#[from] io::Error),
    /// The event did not serialize as a JSON object, or used a reserved name.
    #[error("event could not be written: {0}")]
    Serialize(String),
    /// A domain event used an empty `type` or one in the `aoi:` namespace (§8.2).
    #[error("invalid domain event type {0:?}: the `aoi:` namespace is reserved (spec §8.2)")]
    InvalidType(String),
    /// The run was cancelled by a signal; the caller should unwind.
    #[error("the run was cancelled by {}", .0.name())]
    Cancelled(Signal),
    /// The summary has been written; nothing may follow it (§4).
    #[error("the stream is finished: nothing may follow aoi:summary")]
    Finished,
    /// The event would take the stream past `--max-bytes`; it was not written, and the summary
    /// will say `truncated` (§15). Stop producing; `?` ends the run successfully.
    #[error("the output reached --max-bytes")]
    ByteLimit,
}

impl EmitError {
    /// True when downstream closed the pipe (exit 141, quietly: §7).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, EmitError::Io(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl From<EmitError> for ErrorEvent {
    fn from(e: EmitError) -> ErrorEvent {
        let (category, code) = match &e {
            EmitError::Io(io) if io.kind() == io::ErrorKind::BrokenPipe => {
                (Category::Io, "BROKEN_PIPE")
            }
            EmitError::Io(_) => (Category::Io, "STDOUT_WRITE_FAILED"),
            EmitError::Serialize(_) | EmitError::InvalidType(_) => {
                (Category::Internal, "EVENT_NOT_SERIALIZABLE")
            }
            EmitError::Cancelled(_) => (Category::Cancelled, "CANCELLED"),
            EmitError::Finished => (Category::Internal, "STREAM_FINISHED"),
            EmitError::ByteLimit => (Category::Internal, "OUTPUT_LIMIT_REACHED"),
        };
        ErrorEvent::new(category, Code::from_static(code), e.to_string())
    }
}

/// How a run ended, as the tool sees it; the emitter turns it into the `aoi:summary`.
///
/// `ok` and `reason` can only be combined as §8.3 allows: [`Outcome::success`] and
/// [`Outcome::skipped`] are `ok:true`; every other constructor is `ok:false` with its reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    ok: bool,
    reason: Option<Reason>,
    partial: Option<bool>,
    truncated: bool,
    next_cursor: Option<String>,
    caused_by: Option<CausedBy>,
    upstream: Option<Upstream>,
    properties: Option<Map<String, Value>>,
    exit_code: Option<u8>,
}

impl Outcome {
    fn new(ok: bool, reason: Option<Reason>) -> Outcome {
        Outcome {
            ok,
            reason,
            partial: None,
            truncated: false,
            next_cursor: None,
            caused_by: None,
            upstream: None,
            properties: None,
            exit_code: None,
        }
    }

    /// `ok:true`: the tool accomplished what was asked.
    pub fn success() -> Outcome {
        Outcome::new(true, None)
    }

    /// `ok:true, reason:"skipped"`: the operation did not apply and did not run.
    pub fn skipped() -> Outcome {
        Outcome::new(true, Some(Reason::Skipped))
    }

    /// `ok:false, reason:"failed"`.
    pub fn failed() -> Outcome {
        Outcome::new(false, Some(Reason::Failed))
    }

    /// This outcome as a failure (`ok:false, reason:"failed"`), its other fields kept; a
    /// failure stays as it is.
    pub fn into_failed(mut self) -> Outcome {
        if self.ok {
            self.ok = false;
            self.reason = Some(Reason::Failed);
        }
        self
    }

    /// `ok:false, reason:"cancelled"`.
    pub fn cancelled() -> Outcome {
        Outcome::new(false, Some(Reason::Cancelled))
    }

    /// `ok:false, reason:"timeout"`.
    pub fn timed_out() -> Outcome {
        Outcome::new(false, Some(Reason::Timeout))
    }

    /// `ok:false, reason:"denied"`.
    pub fn denied() -> Outcome {
        Outcome::new(false, Some(Reason::Denied))
    }

    /// Whether this outcome is `ok:true`.
    pub fn is_ok(&self) -> bool {
        self.ok
    }

    /// Marks the output as cut by a bound, with the cursor to continue from (§15).
    pub fn truncated(mut self, next_cursor: Option<String>) -> Outcome {
        self.truncated = true;
        self.next_cursor = next_cursor;
        self
    }

    /// Overrides `partial`, which otherwise is true when at least one item-scope error was
    /// emitted alongside at least one domain event.
    pub fn partial(mut self, partial: bool) -> Outcome {
        self.partial = Some(partial);
        self
    }

    /// Records the upstream error that made this run fail (§13.1); written only when the run
    /// fails (§8.3), so a run that goes on past an upstream error and succeeds leaves it out.
    pub fn caused_by(mut self, caused_by: CausedBy) -> Outcome {
        self.caused_by = Some(caused_by);
        self
    }

    /// Records the direct upstream's identity (§13.1).
    pub fn upstream(mut self, upstream: Upstream) -> Outcome {
        self.upstream = Some(upstream);
        self
    }

    /// The exit status of this failure when the tool documents its own (`aoi lint` exits 2 when
    /// checks could not run, §6 lets a tool define its codes): used for an `ok:false` summary
    /// unless a process-scope error or `reason:"denied"` decides the status; ignored for a
    /// success, which is 0.
    pub fn exit_code(mut self, code: u8) -> Outcome {
        self.exit_code = Some(code);
        self
    }

    /// Adds a tool-specific summary property.
    pub fn property(mut self, key: impl Into<String>, value: impl Into<Value>) -> Outcome {
        self.properties
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
        self
    }
}

/// The summary that was written and the exit code the run should end with.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The terminal event as written.
    pub summary: Summary,
    /// The process exit code per §6.
    pub exit_code: u8,
}

/// Configures and starts an [`Emitter`].
#[derive(Debug, Clone)]
pub struct EmitterBuilder {
    identity: Identity,
    meta: Meta,
    timestamps: bool,
    trace_id: Option<String>,
    run: Option<String>,
    flush_each_line: bool,
    cancel: CancelToken,
    max_bytes: Option<u64>,
}

impl EmitterBuilder {
    /// Names the command in `aoi:meta.command`.
    pub fn command(mut self, command: impl Into<String>) -> Self {
        self.meta.command = Some(command.into());
        self
    }

    /// Adds `aoi.t` (ms since meta) to every line.
    pub fn timestamps(mut self, on: bool) -> Self {
        self.timestamps = on;
        self
    }

    /// Adds `aoi.trace_id` to every line.
    pub fn trace_id(mut self, trace_id: impl Into<String>) -> Self {
        self.trace_id = Some(trace_id.into());
        self
    }

    /// Uses a given run id instead of a fresh ULID (for replaying a recorded run in tests).
    pub fn run_id(mut self, run: impl Into<String>) -> Self {
        self.run = Some(run.into());
        self
    }

    /// Writes every line through at once (for interactive consumers); the default batches.
    pub fn flush_each_line(mut self, on: bool) -> Self {
        self.flush_each_line = on;
        self
    }

    /// Bounds the domain events to `max` bytes (`--max-bytes`, §15): the lines of domain
    /// events, envelope and line break included, are counted; framework events (`aoi:meta`,
    /// `aoi:summary`, errors, warnings) are not, and are always written. A domain event that
    /// would pass the bound is refused with [`EmitError::ByteLimit`] and the summary says
    /// `truncated`; the first domain event always goes out, however long, so a page that
    /// follows a cursor always moves on (and the caller has a position to resume from).
    pub fn max_bytes(mut self, max: Option<u64>) -> Self {
        self.max_bytes = max;
        self
    }

    /// Sets `aoi:meta.args_redacted` and `args` (already redacted by the caller, §11).
    pub fn args(mut self, args: Option<Vec<String>>, redacted: bool) -> Self {
        self.meta.args = args;
        self.meta.args_redacted = Some(redacted);
        self
    }

    /// Sets `aoi:meta.input_fingerprint`.
    pub fn input_fingerprint(mut self, fingerprint: impl Into<String>) -> Self {
        self.meta.input_fingerprint = Some(fingerprint.into());
        self
    }

    /// Adds a tool-specific `aoi:meta` property.
    pub fn meta_property(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.meta
            .properties
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
        self
    }

    /// Shares a cancellation token (the harness passes the one its signal handler sets).
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }

    /// Writes `aoi:meta` to `out`, flushes it, and returns the emitter.
    pub fn start<W: Write>(self, out: W) -> Result<Emitter<W>, EmitError> {
        let mut meta = self.meta;
        meta.tool = Some(self.identity.tool.clone());
        meta.tool_version = Some(self.identity.tool_version.clone());
        meta.aoi_version = Some(AOI_VERSION.to_owned());
        meta.schema_name = Some(self.identity.schema_name.clone());
        meta.schema_version = Some(self.identity.schema_version.clone());
        let core = Core {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            committed: 0,
            run: self.run.unwrap_or_else(new_run_id),
            trace_id: self.trace_id,
            started: Instant::now(),
            timestamps: self.timestamps,
            flush_each_line: self.flush_each_line,
            max_bytes: self.max_bytes,
            written: 0,
            domain_written: 0,
            cut_by_bytes: false,
            finished_exit: None,
            upstream: None,
            upstream_fails: false,
            upstream_cause: None,
            seq: 0,
            identity: self.identity,
            command: meta.command.clone(),
            counts: Counts::default(),
            first_process_error: None,
            state: State::Open,
            broken_cause: String::new(),
        };
        let emitter = Emitter {
            core: Arc::new(Mutex::new(core)),
            cancel: self.cancel,
        };
        {
            let mut core = emitter.lock();
            core.write(Meta::TYPE, &meta)?;
            core.flush()?;
        }
        Ok(emitter)
    }
}

/// A warning whose message is one line, as any framework text must be (§2, §9.1).
fn normalized_warning(warning: &Warning) -> Warning {
    let mut w = warning.clone();
    w.message = single_line(&w.message).into_owned();
    w
}

/// A fresh ULID for `aoi.run` (§8.1 recommends ULIDs: sortable, unique without coordination).
pub(crate) fn new_run_id() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let mut random = [0u8; 16];
    if getrandom::fill(&mut random).is_err() {
        // No entropy source: fall back to the clock and pid, still unique per process start.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        random = (nanos ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    ulid::Ulid::from_parts(ms, u128::from_le_bytes(random)).to_string()
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    domain: u64,
    warnings: u64,
    errors: u64,
    item_errors: u64,
    upstream_warnings: u64,
    upstream_errors: u64,
    input: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Finished,
    /// A write to the underlying stream failed: part of a line may be out, so nothing more
    /// may follow (§2). Holds the kind of the failure.
    Broken(io::ErrorKind),
}

/// The emitter's state, shared with the harness's signal watcher through a mutex so that a
/// cancelled summary is never interleaved with a half-written line.
#[derive(Debug)]
pub(crate) struct Core<W> {
    out: W,
    buf: Vec<u8>,
    /// Length of `buf` up to the last complete line; a panic mid-event is repaired to here.
    committed: usize,
    run: String,
    trace_id: Option<String>,
    started: Instant,
    timestamps: bool,
    flush_each_line: bool,
    /// `--max-bytes`, and the bytes of every complete line so far, and of the domain events'.
    max_bytes: Option<u64>,
    written: u64,
    domain_written: u64,
    cut_by_bytes: bool,
    /// The exit code decided when the summary was written.
    finished_exit: Option<u8>,
    /// What the input contract learnt about the upstream (§13.1), applied by `finish` on every
    /// exit path: its identity, whether it fails this run, and its retry fields.
    upstream: Option<Upstream>,
    upstream_fails: bool,
    upstream_cause: Option<CausedBy>,
    seq: u64,
    identity: Identity,
    /// `aoi:meta.command`, when the builder named one.
    command: Option<String>,
    counts: Counts,
    first_process_error: Option<Category>,
    state: State,
    /// The error that broke the stream, once one did ([`State::Broken`]).
    broken_cause: String,
}

impl<W: Write> Core<W> {
    fn write<T: Serialize + ?Sized>(&mut self, ty: &str, body: &T) -> Result<(), EmitError> {
        match self.state {
            State::Open => {}
            State::Finished => return Err(EmitError::Finished),
            State::Broken(kind) => return Err(self.broken(kind)),
        }
        self.buf.truncate(self.committed);
        let t = if self.timestamps {
            Some(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX))
        } else {
            None
        };
        let envelope = EnvelopeRef {
            seq: self.seq,
            run: &self.run,
            t,
            trace_id: self.trace_id.as_deref(),
        };
        if let Err(e) = write_line(&mut self.buf, ty, &envelope, body) {
            self.buf.truncate(self.committed);
            return Err(EmitError::Serialize(e.to_string()));
        }
        self.written += (self.buf.len() - self.committed) as u64;
        self.committed = self.buf.len();
        self.seq += 1;
        if self.flush_each_line || self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), EmitError> {
        if let State::Broken(kind) = self.state {
            return Err(self.broken(kind));
        }
        self.buf.truncate(self.committed);
        let result = self
            .out
            .write_all(&self.buf)
            .and_then(|()| self.out.flush());
        self.buf.clear();
        self.committed = 0;
        if let Err(e) = &result {
            self.state = State::Broken(e.kind());
            self.broken_cause = e.to_string();
        }
        result.map_err(EmitError::Io)
    }

    /// The error for a write after the stream broke: it names the failure that broke it, so
    /// the one line a harness has left on stderr says why (`No space left on device`), not
    /// only that something failed before.
    fn broken(&self, kind: io::ErrorKind) -> EmitError {
        EmitError::Io(io::Error::new(
            kind,
            format!(
                "{} (an earlier write failed; the stream cannot continue)",
                self.broken_cause
            ),
        ))
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    /// The exit code decided when the summary was written, once it was.
    pub(crate) fn finished_exit(&self) -> Option<u8> {
        self.finished_exit
    }

    pub(crate) fn finish(&mut self, outcome: Outcome) -> Result<Finished, EmitError> {
        let Outcome {
            mut ok,
            mut reason,
            partial,
            truncated,
            next_cursor,
            caused_by,
            upstream,
            properties,
            exit_code: stated_exit,
        } = outcome;
        // A process-scope error ends the run: success after one would be a lie (§9.1); so does
        // a failed upstream (§13.1), whichever way the body ended.
        if ok && (self.first_process_error.is_some() || self.upstream_fails) {
            ok = false;
            reason = Some(Reason::Failed);
        }
        // §8.3: `caused_by` is "present when `ok` is false"; on a success it would explain
        // a failure that did not happen (the verifier's CAUSED_BY_ON_SUCCESS).
        let caused_by = if ok {
            None
        } else {
            caused_by.or_else(|| self.upstream_cause.clone())
        };
        let upstream = upstream.or_else(|| self.upstream.clone());
        let c = self.counts;
        let exit_code = if ok {
            exit_code::OK
        } else if reason == Some(Reason::Denied) {
            exit_code::NO_PERM
        } else if let Some(category) = self.first_process_error {
            category.exit_code()
        } else if let Some(code) = stated_exit.filter(|c| *c != exit_code::OK) {
            code
        } else {
            match reason {
                Some(Reason::Cancelled) => exit_code::SIGINT,
                Some(Reason::Timeout) => exit_code::TIMEOUT,
                // An honest failure with no local process error (a failed check, an upstream
                // error recorded in `caused_by`): the generic failure code.
                _ => exit_code::FAILURE,
            }
        };
        let summary = Summary {
            ok,
            reason,
            event_count: Some(self.seq + 1),
            count: Some(c.domain),
            input_count: c.input,
            warning_count: Some(c.warnings + c.upstream_warnings),
            error_count: Some(c.errors + c.upstream_errors),
            partial: Some(partial.unwrap_or(c.item_errors > 0 && c.domain > 0)),
            truncated: Some(truncated || self.cut_by_bytes),
            next_cursor: if truncated || self.cut_by_bytes {
                next_cursor
            } else {
                None
            },
            elapsed_ms: Some(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)),
            caused_by,
            upstream,
            tool: Some(self.identity.tool.clone()),
            tool_version: Some(self.identity.tool_version.clone()),
            aoi_version: Some(AOI_VERSION.to_owned()),
            schema_name: Some(self.identity.schema_name.clone()),
            schema_version: Some(self.identity.schema_version.clone()),
            properties,
        };
        self.write(Summary::TYPE, &summary)?;
        self.state = State::Finished;
        self.finished_exit = Some(exit_code);
        self.flush()?;
        Ok(Finished { summary, exit_code })
    }

    /// Ends a cancelled run: a `timeout` error and `reason:"timeout"` for a passed deadline,
    /// else `reason:"cancelled"` naming the signal. Returns the exit code.
    pub(crate) fn end_cancelled(&mut self, signal: Signal) -> Result<u8, EmitError> {
        if signal == Signal::Deadline {
            let error = ErrorEvent::new(
                Category::Timeout,
                Code::from_static("TIMEOUT"),
                "the command did not finish within --timeout",
            )
            .domain(self.identity.tool.clone())
            .hint("raise --timeout, or narrow the request");
            self.write(ErrorEvent::TYPE, &error)?;
            self.counts.errors += 1;
            self.first_process_error.get_or_insert(Category::Timeout);
            self.finish(Outcome::timed_out())?;
        } else {
            self.finish(Outcome::cancelled().property("signal", signal.name()))?;
        }
        Ok(signal.exit_code())
    }

    /// Makes the stream usable again after a panic inside an event's `Serialize`.
    pub(crate) fn repair(&mut self) {
        self.buf.truncate(self.committed);
    }
}

/// Writes one AOI stream: numbers every line, keeps the summary's counters, buffers for
/// throughput and flushes where a consumer needs to see the stream move (after `aoi:meta`, on
/// progress, heartbeats and errors, on [`Emitter::flush`], and at the summary). See the crate
/// docs for an example stream.
#[derive(Debug)]
pub struct Emitter<W> {
    core: Arc<Mutex<Core<W>>>,
    cancel: CancelToken,
}

impl Emitter<()> {
    /// Starts configuring an emitter for a tool.
    pub fn builder(identity: Identity) -> EmitterBuilder {
        EmitterBuilder {
            identity,
            meta: Meta::default(),
            timestamps: false,
            trace_id: None,
            run: None,
            flush_each_line: false,
            cancel: CancelToken::new(),
            max_bytes: None,
        }
    }
}

impl<W: Write> Emitter<W> {
    fn lock(&self) -> MutexGuard<'_, Core<W>> {
        match self.core.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                guard.repair();
                guard
            }
        }
    }

    pub(crate) fn shared_core(&self) -> Arc<Mutex<Core<W>>> {
        Arc::clone(&self.core)
    }

    #[inline]
    fn live(&self) -> Result<(), EmitError> {
        match self.cancel.cancelled() {
            Some(signal) => Err(EmitError::Cancelled(signal)),
            None => Ok(()),
        }
    }

    /// Writes a domain event. Fails with [`EmitError::Cancelled`] once a signal arrived.
    pub fn emit<E: DomainEvent + ?Sized>(&mut self, event: &E) -> Result<(), EmitError> {
        self.emit_as(event.event_type(), event)
    }

    /// Writes a domain event whose `type` is given separately, e.g. for a `serde_json::Value`.
    pub fn emit_as<T: Serialize + ?Sized>(&mut self, ty: &str, body: &T) -> Result<(), EmitError> {
        self.live()?;
        if ty.is_empty() || ty.starts_with("aoi:") {
            return Err(EmitError::InvalidType(ty.to_owned()));
        }
        let mut core = self.lock();
        if core.cut_by_bytes {
            return Err(EmitError::ByteLimit);
        }
        let before = core.written;
        core.write(ty, body)?;
        let len = core.written - before;
        if let Some(max) = core.max_bytes {
            if core.counts.domain > 0 && core.domain_written + len > max {
                // Take the line back: it is the last one, still in the buffer unless it alone
                // filled it, in which case it already went out and the bound is exceeded by one
                // line at most.
                let len = len as usize;
                if core.committed >= len {
                    let keep = core.committed - len;
                    core.buf.truncate(keep);
                    core.committed = keep;
                    core.written = before;
                    core.seq -= 1;
                    core.cut_by_bytes = true;
                    return Err(EmitError::ByteLimit);
                }
                core.cut_by_bytes = true;
            }
        }
        core.domain_written += len;
        core.counts.domain += 1;
        Ok(())
    }

    /// Writes a framework event and applies `count` under the same lock: the harness's signal
    /// watcher may write the summary the moment the lock is released, and its counters must
    /// cover every line before it.
    fn framework<T: FrameworkEvent>(
        &mut self,
        event: &T,
        flush: bool,
        count: impl FnOnce(&mut Core<W>),
    ) -> Result<(), EmitError> {
        self.live()?;
        let mut core = self.lock();
        core.write(T::TYPE, event)?;
        count(&mut core);
        if flush {
            core.flush()?;
        }
        Ok(())
    }

    /// Writes an `aoi:warning`.
    pub fn warning(&mut self, warning: &Warning) -> Result<(), EmitError> {
        let warning = normalized_warning(warning);
        self.framework(&warning, false, |core| core.counts.warnings += 1)
    }

    /// Writes an `aoi:error`. A process-scope error makes the summary `ok:false` whatever the
    /// outcome passed to [`Emitter::finish`]; an item-scope one counts toward `partial`.
    pub fn error(&mut self, error: &ErrorEvent) -> Result<(), EmitError> {
        // The fields are public, so an error built by hand or decoded from upstream may break
        // what §9.1 requires (single-line message, no retry delay without retryable). A local
        // error names its code's namespace, `domain`, which §9.1 asks for: the tool's name,
        // its default, unless the tool gave another.
        let mut error_out = error.clone().normalized();
        if error_out.domain.is_none() {
            error_out.domain = Some(self.lock().identity.tool.clone());
        }
        self.framework(&error_out, true, |core| {
            core.counts.errors += 1;
            if error.is_process_scope() {
                core.first_process_error.get_or_insert(error.category);
            } else {
                core.counts.item_errors += 1;
            }
        })
    }

    /// Forwards an upstream `aoi:error` tagged with `origin` (§13.1). The error is counted once,
    /// as consumed from upstream, and is not a local process failure.
    pub fn forward_error(&mut self, error: &ErrorEvent, origin: &str) -> Result<(), EmitError> {
        let mut forwarded = error.clone().normalized();
        forwarded.origin.get_or_insert_with(|| origin.to_owned());
        self.framework(&forwarded, true, |core| core.counts.upstream_errors += 1)
    }

    /// Forwards an upstream `aoi:error` whose `category` this version does not know, as the
    /// upstream wrote it: the line carries `wire_category` unchanged (§9.4: the enum grows with
    /// minor versions, and a forwarder must not rewrite what it cannot interpret) and `origin`
    /// (§13.1). `error` is the rest of the event, which this run decides on as `internal`
    /// (see [`UpstreamError`](crate::read::UpstreamError)); counted like
    /// [`Emitter::forward_error`].
    pub fn forward_error_in_category(
        &mut self,
        error: &ErrorEvent,
        wire_category: &str,
        origin: &str,
    ) -> Result<(), EmitError> {
        let mut forwarded = error.clone().normalized();
        forwarded.origin.get_or_insert_with(|| origin.to_owned());
        let mut body = match serde_json::to_value(&forwarded) {
            Ok(Value::Object(body)) => body,
            Ok(_) => return Err(EmitError::Serialize("an error is an object".to_owned())),
            Err(e) => return Err(EmitError::Serialize(e.to_string())),
        };
        body.insert("category".into(), Value::from(wire_category));
        self.live()?;
        let mut core = self.lock();
        core.write(ErrorEvent::TYPE, &body)?;
        core.counts.upstream_errors += 1;
        core.flush()
    }

    /// Forwards an upstream `aoi:warning` tagged with `origin`, counted once as upstream.
    pub fn forward_warning(&mut self, warning: &Warning, origin: &str) -> Result<(), EmitError> {
        let mut forwarded = normalized_warning(warning);
        forwarded.origin.get_or_insert_with(|| origin.to_owned());
        self.framework(&forwarded, false, |core| core.counts.upstream_warnings += 1)
    }

    /// Records the direct upstream's identity for the summary's `upstream` (§13.1).
    pub fn note_upstream_identity(&mut self, upstream: Upstream) {
        self.lock().upstream.get_or_insert(upstream);
    }

    /// Records that the upstream makes this run fail (`fails`), and its retry fields for
    /// `caused_by`; the summary is then `ok:false` on every exit path (§13.1).
    pub fn note_upstream_failure(&mut self, fails: bool, cause: Option<CausedBy>) {
        let mut core = self.lock();
        core.upstream_fails |= fails;
        if core.upstream_cause.is_none() {
            core.upstream_cause = cause;
        }
    }

    /// Counts `errors` upstream `aoi:error` and `warnings` upstream `aoi:warning` events consumed
    /// without forwarding them, e.g. by a sink that read a whole stream.
    pub fn note_upstream_counts(&mut self, errors: u64, warnings: u64) {
        let mut core = self.lock();
        core.counts.upstream_errors += errors;
        core.counts.upstream_warnings += warnings;
    }

    /// Counts an upstream `aoi:error` consumed without forwarding it.
    pub fn note_upstream_error(&mut self) {
        self.lock().counts.upstream_errors += 1;
    }

    /// Counts an upstream `aoi:warning` consumed without forwarding it.
    pub fn note_upstream_warning(&mut self) {
        self.lock().counts.upstream_warnings += 1;
    }

    /// Counts `n` domain events consumed from stdin (`input_count`).
    pub fn note_input(&mut self, n: u64) {
        let mut core = self.lock();
        *core.counts.input.get_or_insert(0) += n;
    }

    /// Writes an `aoi:check`.
    pub fn check(&mut self, check: &Check) -> Result<(), EmitError> {
        let mut check = check.clone();
        check.detail = check.detail.map(|d| single_line(&d).into_owned());
        check.hint = check.hint.map(|h| single_line(&h).into_owned());
        self.framework(&check, false, |_| {})
    }

    /// Writes an `aoi:plan`, its `detail` made one line, as [`Plan::detail`] promises.
    pub fn plan(&mut self, plan: &Plan) -> Result<(), EmitError> {
        let mut plan = plan.clone();
        plan.detail = plan.detail.map(|d| single_line(&d).into_owned());
        self.framework(&plan, false, |_| {})
    }

    /// Writes an `aoi:progress`, its `message` made one line, and flushes.
    pub fn progress(&mut self, progress: &Progress) -> Result<(), EmitError> {
        let mut progress = progress.clone();
        progress.message = progress.message.map(|m| single_line(&m).into_owned());
        self.framework(&progress, true, |_| {})
    }

    /// Writes an `aoi:heartbeat` and flushes.
    pub fn heartbeat(&mut self, heartbeat: &Heartbeat) -> Result<(), EmitError> {
        self.framework(heartbeat, true, |_| {})
    }

    /// Writes buffered lines through. Call before blocking work so consumers see what is done.
    pub fn flush(&mut self) -> Result<(), EmitError> {
        self.lock().flush()
    }

    /// The run's cancellation token, for checking or sleeping in long work.
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }

    /// `Err(Cancelled)` once a signal arrived: a safe point for long work that emits nothing.
    pub fn check_cancelled(&self) -> Result<(), EmitError> {
        self.live()
    }

    /// The identity written in `aoi:meta` (the tool, its release, the schema version).
    pub fn identity(&self) -> Identity {
        self.lock().identity.clone()
    }

    /// The command written in `aoi:meta.command`, when one was.
    pub fn command(&self) -> Option<String> {
        self.lock().command.clone()
    }

    /// Bounds the domain events' bytes from now on (`--max-bytes`, §15), counting those
    /// already written, as [`EmitterBuilder::max_bytes`] does from the start.
    pub fn max_bytes(&mut self, max: Option<u64>) {
        self.lock().max_bytes = max;
    }

    /// The run id written in every line's `aoi.run`.
    pub fn run_id(&self) -> String {
        self.lock().run.clone()
    }

    /// Domain events written so far.
    pub fn count(&self) -> u64 {
        self.lock().counts.domain
    }

    /// Item-scope `aoi:error`s written so far.
    pub fn item_error_count(&self) -> u64 {
        self.lock().counts.item_errors
    }

    /// The exit code decided when the summary was written, once it was.
    pub(crate) fn finished_exit(&self) -> Option<u8> {
        self.lock().finished_exit()
    }

    /// Ends a run cancelled by `signal` (see [`Core::end_cancelled`]).
    pub(crate) fn end_cancelled(&mut self, signal: Signal) -> Result<u8, EmitError> {
        self.lock().end_cancelled(signal)
    }

    /// Writes the terminal `aoi:summary` from `outcome` and the emitter's own counters.
    pub fn finish(&mut self, outcome: Outcome) -> Result<Finished, EmitError> {
        self.lock().finish(outcome)
    }

    /// Gives back the underlying writer (tests read what was written).
    ///
    /// # Panics
    /// When a clone of the shared state is still alive, which only the harness holds.
    pub fn into_writer(self) -> W {
        let core = match Arc::try_unwrap(self.core) {
            Ok(mutex) => mutex,
            Err(_) => panic!("the emitter's state is still shared"),
        };
        let mut core = core.into_inner().unwrap_or_else(|p| p.into_inner());
        // What was written but not yet flushed (a warning, a domain event) belongs to the
        // stream the caller takes back.
        let _ = core.flush();
        core.out
    }
}

#[cfg(test)]
mod tests;
