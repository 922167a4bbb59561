//! The process harness: whatever happens after `aoi:meta`, the run ends with an `aoi:summary`
//! when the process is still in control (spec §4), and with the right exit code (§6).
//!
//! - A returned [`Failure`] (an [`ErrorEvent`]) becomes a process-scope `aoi:error` and an `ok:false` summary.
//! - A panic becomes an `internal` `aoi:error` (`INTERNAL_PANIC`) and an `ok:false` summary; the
//!   panic message goes into the event, nothing is printed to stderr, no backtrace anywhere.
//! - A closed stdout (EPIPE) ends the process quietly with 141 (§7).
//! - A stdout that is not open at all (fd 1 closed: `tool >&-`) ends the run before `aoi:meta`
//!   with 74 and one line on stderr (§6): the stream cannot be written, so the run must not
//!   exit 0 (see the `closed_stdout` module for why std alone cannot tell).
//! - SIGINT/SIGTERM cancel the run: the emitter refuses further events so the tool unwinds, and
//!   the harness writes a `reason:"cancelled"` summary and exits 130/143. A tool that does not
//!   reach a safe point within the grace period (blocked in a read, say) is ended by the
//!   harness itself, which writes the summary between two lines, never inside one; if even that
//!   is impossible (the emitter is stuck writing to a full pipe) it exits without one, since
//!   exiting promptly matters more (§7).

use std::any::Any;
use std::io::{self, Stdout, Write};
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::cancel::{CancelToken, Signal};
use super::emitter::{Core, EmitError, Emitter, EmitterBuilder, Outcome};
use crate::wire::{exit_code, Category, Code, ErrorEvent};

/// What a tool's body returns: an outcome, or the error that ended the run.
pub type RunResult = Result<Outcome, Failure>;

/// The error that ended a run: becomes a process-scope `aoi:error` and an `ok:false` summary.
///
/// Boxed so that `Result<_, Failure>` stays small; `?` converts from [`ErrorEvent`] and from
/// [`EmitError`], and `Err(event.into())` returns one. The summary's `reason` follows the
/// category (`cancelled`, `timeout`, `authz` → `denied`, else `failed`) unless
/// [`Failure::denied`] says the run was refused.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    event: Box<ErrorEvent>,
    denied: bool,
    /// The run stopped at `--max-bytes`: not a failure, a bounded success (§15).
    bounded: bool,
}

impl Failure {
    /// A refusal: the summary says `reason:"denied"` (a missing `--confirm`, a count mismatch).
    pub fn denied(event: ErrorEvent) -> Failure {
        Failure {
            event: Box::new(event),
            denied: true,
            bounded: false,
        }
    }

    /// The error event.
    pub fn event(&self) -> &ErrorEvent {
        &self.event
    }

    /// The error event, owned.
    pub fn into_event(self) -> ErrorEvent {
        *self.event
    }

    /// The summary's outcome for this failure.
    fn outcome(&self) -> Outcome {
        match self.event.category {
            _ if self.denied => Outcome::denied(),
            Category::Authz => Outcome::denied(),
            Category::Cancelled => Outcome::cancelled(),
            Category::Timeout => Outcome::timed_out(),
            _ => Outcome::failed(),
        }
    }
}

impl From<ErrorEvent> for Failure {
    fn from(event: ErrorEvent) -> Failure {
        Failure {
            event: Box::new(event),
            denied: false,
            bounded: false,
        }
    }
}

impl From<EmitError> for Failure {
    fn from(error: EmitError) -> Failure {
        let bounded = matches!(error, EmitError::ByteLimit);
        Failure {
            bounded,
            ..Failure::from(ErrorEvent::from(error))
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = &self.event;
        write!(f, "{} {}: {}", e.category, e.code, e.message)
    }
}

impl std::error::Error for Failure {}

/// Runs a tool's machine-mode body under the §4 guarantees. See the [module docs](self).
#[derive(Debug)]
pub struct Harness {
    builder: EmitterBuilder,
    grace: Duration,
    timeout: Option<Duration>,
}

impl Harness {
    /// A harness that will start the emitter `builder` describes on stdout.
    pub fn new(builder: EmitterBuilder) -> Harness {
        Harness {
            builder,
            grace: Duration::from_millis(1500),
            timeout: None,
        }
    }

    /// How long a cancelled tool has to reach a safe point before the harness ends the run
    /// itself (default 1.5 s).
    pub fn grace(mut self, grace: Duration) -> Harness {
        self.grace = grace;
        self
    }

    /// Ends the run with a `timeout` error and `reason:"timeout"` (exit 124) once `timeout` has
    /// passed (`--timeout`, §16.1), the way a signal ends it.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Harness {
        self.timeout = timeout;
        self
    }

    /// Writes `aoi:meta`, runs `body`, writes the summary, and returns the exit code.
    pub fn run<F>(self, body: F) -> ExitCode
    where
        F: FnOnce(&mut Emitter<Stdout>) -> RunResult,
    {
        self.run_on(io::stdout(), body)
    }

    /// [`Harness::run`] with the stream written to `out`, a writer in front of stdout (e.g. a
    /// [`HumanRenderer`](crate::surface::human::HumanRenderer) in human mode): the signals,
    /// the deadline and the exit status are the same.
    pub fn run_on<W, F>(self, out: W, body: F) -> ExitCode
    where
        W: Write + Send + 'static,
        F: FnOnce(&mut Emitter<W>) -> RunResult,
    {
        if let Some(code) = refuse_closed_stdout() {
            return ExitCode::from(code);
        }
        install_quiet_panic_hook();
        let cancel = CancelToken::new();
        let builder = self.builder.cancel_token(cancel.clone());
        let mut emitter = match builder.start(out) {
            Ok(emitter) => emitter,
            Err(e) => return ExitCode::from(exit_for_lost_stdout(&e)),
        };
        watch_signals(emitter.shared_core(), cancel.clone(), self.grace);
        if let Some(timeout) = self.timeout {
            let core = emitter.shared_core();
            let grace = self.grace;
            thread::spawn(move || {
                if cancel.sleep(timeout).is_none() {
                    cancel.cancel(Signal::Deadline);
                    take_over_after(grace, Signal::Deadline, &core);
                }
            });
        }
        ExitCode::from(drive(&mut emitter, body))
    }
}

/// Runs `body` on a started emitter and ends the stream; returns the exit code. The signal-free
/// core of [`Harness::run`], usable with any writer.
pub fn drive<W, F>(emitter: &mut Emitter<W>, body: F) -> u8
where
    W: Write,
    F: FnOnce(&mut Emitter<W>) -> RunResult,
{
    let result = panic::catch_unwind(AssertUnwindSafe(|| body(&mut *emitter)));
    let cancelled = emitter.cancel_token().cancelled();
    let outcome = match result {
        Ok(Ok(outcome)) => Ok(outcome),
        // `?` on an emit refused at `--max-bytes`: the summary says `truncated`.
        Ok(Err(failure)) if failure.bounded => Ok(Outcome::success()),
        Ok(Err(failure)) => Err(failure),
        Err(payload) => Err(Failure::from(panic_error(payload.as_ref()))),
    };
    let ended = match (outcome, cancelled) {
        (_, Some(signal)) => emitter.end_cancelled(signal),
        (Ok(outcome), None) => emitter.finish(outcome).map(|f| f.exit_code),
        (Err(error), None) => end_with_error(emitter, error),
    };
    match ended {
        Ok(code) => code,
        // A signal arrived while the run was being ended: end it as cancelled.
        Err(EmitError::Cancelled(signal)) => emitter
            .end_cancelled(signal)
            .unwrap_or_else(|e| exit_for_lost_stdout(&e)),
        // The summary is already out: the body called `finish` itself, or the signal watcher
        // ended the run. Keep the exit code that summary stands for.
        Err(EmitError::Finished) => emitter.finished_exit().unwrap_or_else(|| {
            emitter
                .cancel_token()
                .cancelled()
                .map_or(exit_code::SOFTWARE, Signal::exit_code)
        }),
        Err(e) => exit_for_lost_stdout(&e),
    }
}

fn end_with_error<W: Write>(emitter: &mut Emitter<W>, failure: Failure) -> Result<u8, EmitError> {
    let outcome = failure.outcome();
    let mut error = failure.into_event();
    if error.category == Category::Io && error.code.as_str() == "BROKEN_PIPE" {
        return Ok(exit_code::SIGPIPE);
    }
    error = error.normalized();
    error.scope = crate::wire::Scope::Process;
    emitter.error(&error)?;
    emitter.finish(outcome).map(|f| f.exit_code)
}

/// `Some(74)` when stdout is not open (fd 1 closed), after saying so in one line on stderr;
/// `None` when the stream can be written. §6: a run that cannot write its stream must not exit
/// 0, and std's `Stdout` would silently discard every byte (see [`super::closed_stdout`]).
pub(crate) fn refuse_closed_stdout() -> Option<u8> {
    if !super::closed_stdout::stdout_closed() {
        return None;
    }
    let _ = writeln!(
        io::stderr(),
        "error: stdout is not open (fd 1 is closed): the machine-mode stream cannot be written"
    );
    Some(exit_code::IO_ERR)
}

/// The exit code when the stream itself cannot be written: 141 for a closed pipe (quietly), 74
/// for any other I/O failure (with one line on stderr, the only place left to say it).
fn exit_for_lost_stdout(error: &EmitError) -> u8 {
    if error.is_broken_pipe() {
        return exit_code::SIGPIPE;
    }
    let _ = writeln!(io::stderr(), "error: {error}");
    match error {
        EmitError::Io(_) => exit_code::IO_ERR,
        _ => exit_code::SOFTWARE,
    }
}

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the default panic hook (which prints a message and maybe a backtrace to stderr)
/// with one that records where the panic happened for the `aoi:error` event.
fn install_quiet_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(location);
    }));
}

fn panic_error(payload: &(dyn Any + Send)) -> ErrorEvent {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned());
    let location = LAST_PANIC
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .filter(|l| !l.is_empty());
    let mut error = ErrorEvent::new(
        Category::Internal,
        Code::from_static("INTERNAL_PANIC"),
        format!(
            "internal error: {}",
            crate::surface::redact::Redactor::from_env().scrub(&message)
        ),
    );
    if let Some(location) = location {
        error = error.detail("location", location);
    }
    error
}

/// Starts the thread that turns SIGINT/SIGTERM into cancellation. See the module docs.
fn watch_signals<W: Write + Send + 'static>(
    core: Arc<Mutex<Core<W>>>,
    cancel: CancelToken,
    grace: Duration,
) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        // Without a handler the default disposition stays: the process dies by the signal,
        // which a consumer reads as a missing summary. Nothing better is possible.
        return;
    };
    thread::spawn(move || {
        let mut first = None;
        for raw in signals.forever() {
            let signal = if raw == SIGTERM {
                Signal::Terminate
            } else {
                Signal::Interrupt
            };
            if first.is_some() {
                // A second signal: the caller insists.
                std::process::exit(i32::from(signal.exit_code()));
            }
            first = Some(signal);
            cancel.cancel(signal);
            let core = Arc::clone(&core);
            thread::spawn(move || take_over_after(grace, signal, &core));
        }
    });
}

/// Ends a cancelled run that did not reach a safe point within `grace`.
fn take_over_after<W: Write>(grace: Duration, signal: Signal, core: &Mutex<Core<W>>) {
    thread::sleep(grace);
    let deadline = Instant::now() + grace;
    loop {
        match core.try_lock() {
            Ok(mut guard) => {
                if guard.is_finished() {
                    // The tool wrote its summary and is on its way out with its own exit code.
                    return;
                }
                let _ = guard.end_cancelled(signal);
                std::process::exit(i32::from(signal.exit_code()));
            }
            Err(std::sync::TryLockError::Poisoned(p)) => {
                let mut guard = p.into_inner();
                guard.repair();
                let _ = guard.end_cancelled(signal);
                std::process::exit(i32::from(signal.exit_code()));
            }
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(5));
            }
            Err(std::sync::TryLockError::WouldBlock) => {
                std::process::exit(i32::from(signal.exit_code()));
            }
        }
    }
}
