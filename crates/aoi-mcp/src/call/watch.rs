//! The middle phase of a call: the CLI's stdout, stderr and exit read in one loop beside the
//! call's deadlines, until the run is over.
//!
//! The loop is a state machine. Its [`Phase`] says what it waits for: a running CLI for its
//! output and its exit; an unbounded command sent SIGINT at its bound for its summary until its
//! grace ends and it is killed; a killed CLI for its exit; an exited CLI for the rest of its
//! stdout, never longer than [`EXIT_GRACE`], since anything later is a descendant's. Beside the
//! phase, [`Stopped`] records why the adapter ended the run, if it did: a cancel, the timeout,
//! or `--max-output` end it at once; a bound (`max_duration_ms`, `max_events`) interrupts it.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use aoi::read::{Frame, Framer, LineKind, ProcessEnd, Report};
use aoi::{Verifier, VerifyOptions};
use rustix::process::Signal;
use tokio::io::AsyncReadExt;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::collect::{take_line, Collected, Line};
use super::start::Started;
use super::{Bounds, Invocation, ProgressUpdate};
use crate::catalog::ServedTool;
use crate::reap::CallProcesses;

/// How long a bounded stop (SIGINT) leaves the CLI to write its summary and exit.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// How long stdout is still read after the CLI exited, when its summary has not arrived yet:
/// what it wrote before exiting is in the pipe already; anything later is a descendant's.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// Bytes of a response kept for everything but the events: headline, summary, errors.
const RESERVE: usize = 16 << 10;

/// The stderr kept, for a violation's message.
const STDERR_KEPT: usize = 8 << 10;

/// Why the adapter stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stopped {
    Cancelled,
    TimedOut,
    /// An unbounded command reached `max_duration_ms` (or the call's timeout).
    MaxDuration,
    /// An unbounded command reached `max_events`.
    MaxEvents,
    /// A read-only command's output reached `--max-output`: nothing more would be kept.
    Output,
}

impl Stopped {
    /// The adapter killed the run outright: whatever it wrote last was cut by the kill.
    fn killed(stopped: Option<Stopped>) -> bool {
        matches!(
            stopped,
            Some(Stopped::Cancelled | Stopped::TimedOut | Stopped::Output)
        )
    }
}

/// What the read loop waits for next.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// The CLI runs: its output and its exit.
    Running,
    /// An unbounded command was sent SIGINT at its bound: its summary and its exit, until
    /// `kill_at`.
    Interrupted { kill_at: Instant },
    /// It did not end on SIGINT and was killed: its exit.
    Killed,
    /// The CLI exited: the rest of its stdout, until EOF, its summary or `grace_until`. A
    /// group interrupted before (or after) the exit is still killed at `kill_at`.
    Exited {
        status: ExitStatus,
        grace_until: Instant,
        kill_at: Option<Instant>,
    },
}

impl Phase {
    /// When the interrupted group is to be killed, if it is.
    fn kill_at(self) -> Option<Instant> {
        match self {
            Phase::Interrupted { kill_at } => Some(kill_at),
            Phase::Exited { kill_at, .. } => kill_at,
            Phase::Running | Phase::Killed => None,
        }
    }

    /// When reading after the exit ends.
    fn grace_until(self) -> Option<Instant> {
        match self {
            Phase::Exited { grace_until, .. } => Some(grace_until),
            _ => None,
        }
    }

    fn status(self) -> Option<ExitStatus> {
        match self {
            Phase::Exited { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The phase after SIGINT was sent at a bound: the group is killed `INTERRUPT_GRACE`
    /// later, never later than that grace past the call's `deadline`.
    fn interrupted(self, deadline: Instant) -> Phase {
        let kill_at = (Instant::now() + INTERRUPT_GRACE).min(deadline + INTERRUPT_GRACE);
        self.after_signal(Phase::Interrupted { kill_at }, Some(kill_at))
    }

    /// The phase after the interrupted group was killed.
    fn killed(self) -> Phase {
        self.after_signal(Phase::Killed, None)
    }

    /// `running` while the CLI runs; once it exited, the same phase with the group's kill at
    /// `kill_at` (a signal changes nothing else about reading what it left).
    fn after_signal(self, running: Phase, kill_at: Option<Instant>) -> Phase {
        match self {
            Phase::Exited {
                status,
                grace_until,
                ..
            } => Phase::Exited {
                status,
                grace_until,
                kill_at,
            },
            _ => running,
        }
    }

    /// The phase once the CLI exited with `status`.
    fn exited(self, status: ExitStatus) -> Phase {
        Phase::Exited {
            status,
            grace_until: Instant::now() + EXIT_GRACE,
            kill_at: self.kill_at(),
        }
    }
}

/// A run that is over: everything [`super::respond`] judges.
pub(super) struct Ran {
    pub(super) kept: Collected,
    pub(super) stopped: Option<Stopped>,
    /// The verifier's report; a run the adapter killed is judged without its exit.
    pub(super) report: Report,
    /// The first line the CLI wrote to stderr.
    pub(super) stderr_line: String,
    /// The adapter killed the run outright (a cancel, the timeout, `--max-output`).
    pub(super) killed: bool,
    /// For an unbounded command, how long after its start its bound fell, in ms.
    pub(super) bound_ms: u128,
}

/// One call's run, watched: the tool, what it was called with, its bounds and its
/// `outputSchema`.
pub(super) struct Watch<'a> {
    pub(super) tool: &'a ServedTool,
    pub(super) invocation: &'a Invocation,
    pub(super) bounds: Bounds,
    pub(super) output: Option<&'a jsonschema::Validator>,
}

/// The stream's reader and what it keeps.
struct Reader {
    framer: Framer,
    verifier: Verifier,
    kept: Collected,
    budget: usize,
}

impl Watch<'_> {
    /// Reads `started` until the run is over (see the [module docs](self)), then ends
    /// everything it started.
    pub(super) async fn run(
        &self,
        started: Started,
        cancel: CancellationToken,
        mut progress: impl FnMut(ProgressUpdate) + Send,
    ) -> Ran {
        let Started {
            mut child,
            mut processes,
            mut stdout,
            mut stderr,
        } = started;
        let (tool, invocation) = (self.tool, self.invocation);
        let mut reader = self.reader();
        let started = Instant::now();
        let deadline = started + self.bounds.timeout;
        // An unbounded command never ends by itself: it is stopped at its own bound, or at
        // the call's timeout, and either is an honest end of the run, not a failure.
        let stop_at = tool.entry.unbounded.then(|| {
            invocation
                .max_duration
                .map_or(deadline, |d| (started + d).min(deadline))
        });
        // The bound not yet reached: it interrupts the run once.
        let mut bound = stop_at;
        let mut phase = Phase::Running;
        let mut stopped: Option<Stopped> = None;
        let (mut out_open, mut err_open) = (true, true);
        let mut stderr_kept: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let mut err_chunk = vec![0u8; 8 << 10];
        let far = started + Duration::from_secs(365 * 24 * 3600);

        loop {
            if matches!(phase, Phase::Exited { .. }) && (!out_open || reader.kept.summary.is_some())
            {
                break;
            }
            if Stopped::killed(stopped) {
                break;
            }
            let (kill_at, grace_until) = (phase.kill_at(), phase.grace_until());
            tokio::select! {
                biased;
                () = cancel.cancelled() => { stopped = Some(Stopped::Cancelled); }
                () = sleep_until(deadline), if stop_at.is_none() => { stopped = Some(Stopped::TimedOut); }
                () = sleep_until(bound.unwrap_or(far)), if bound.is_some() => {
                    bound = None;
                    stopped.get_or_insert(Stopped::MaxDuration);
                    phase = interrupt(&processes, phase, deadline);
                }
                () = sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() => {
                    // It did not end on SIGINT: it is killed, and what it said stands.
                    processes.signal_group(Signal::KILL);
                    phase = phase.killed();
                }
                // The CLI is gone; a descendant holding stdout is not waited for.
                () = sleep_until(grace_until.unwrap_or(far)), if grace_until.is_some() => break,
                exited = child.wait(), if phase.status().is_none() => {
                    phase = phase.exited(exited.unwrap_or_else(|_| ExitStatus::from_raw(0xff00)));
                }
                read = stdout.read(&mut chunk), if out_open => {
                    let n = read.unwrap_or_default();
                    if n == 0 {
                        out_open = false;
                        continue;
                    }
                    self.take(&mut reader, &chunk[..n], &mut progress);
                    if reader.kept.over_budget && tool.entry.read_only && stopped.is_none() {
                        // Nothing more would be kept, and a read-only command changes
                        // nothing: it is stopped rather than read to its end.
                        stopped = Some(Stopped::Output);
                    }
                    let capped = invocation
                        .max_events
                        .is_some_and(|m| reader.kept.domain_events >= m);
                    if capped && tool.entry.unbounded && stopped.is_none() {
                        stopped = Some(Stopped::MaxEvents);
                        bound = None;
                        phase = interrupt(&processes, phase, deadline);
                    }
                }
                read = stderr.read(&mut err_chunk), if err_open => {
                    match read {
                        Ok(n) if n > 0 => {
                            let room = STDERR_KEPT.saturating_sub(stderr_kept.len());
                            stderr_kept.extend_from_slice(&err_chunk[..n.min(room)]);
                        }
                        _ => err_open = false,
                    }
                }
            }
        }
        drop(chunk);
        // The call is over: the group, and whatever left it, goes now.
        processes.kill_all();
        let mut status = phase.status();
        if status.is_none() {
            // Killed above; its exit is collected with a bound, as everything else. A
            // cancelled or timed-out call too: left to the runtime's orphan queue, a killed
            // CLI can stay a zombie until some other child happens to exit.
            if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                status = Some(s);
            }
        }
        let killed = Stopped::killed(stopped);
        let Reader {
            mut framer,
            mut verifier,
            kept,
            ..
        } = reader;
        if !killed {
            // A run the adapter killed was cut mid-line by the kill, not by the CLI.
            if let Some(tail) = framer.finish() {
                verifier.frame(tail);
            }
        }
        let end = if killed {
            None
        } else {
            status.map(|s| match (s.code(), s.signal()) {
                (Some(code), _) => ProcessEnd::Exited(code),
                (None, Some(sig)) => ProcessEnd::Signaled(sig),
                (None, None) => ProcessEnd::Exited(-1),
            })
        };
        Ran {
            kept,
            stopped,
            report: verifier.finish(end),
            stderr_line: String::from_utf8_lossy(&stderr_kept)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
            killed,
            bound_ms: stop_at.map_or(0, |t| t.duration_since(started).as_millis()),
        }
    }

    /// A reader for this call: the verifier knows the tool's schema, and a line longer than
    /// the response's budget is not buffered.
    fn reader(&self) -> Reader {
        let mut verifier = Verifier::new(VerifyOptions {
            unbounded: self.tool.entry.unbounded,
            ..VerifyOptions::default()
        });
        if let Some(schema) = self.tool.cli.compiled() {
            verifier = verifier.with_compiled(schema);
        }
        let budget = self.bounds.max_output.saturating_sub(RESERVE);
        Reader {
            framer: Framer::with_max_line(budget.max(1)),
            verifier,
            kept: Collected::default(),
            budget,
        }
    }

    /// Takes the complete lines of `bytes` (a cut last line is never a line, §2).
    fn take(
        &self,
        reader: &mut Reader,
        bytes: &[u8],
        progress: &mut (impl FnMut(ProgressUpdate) + Send),
    ) {
        reader.framer.push(bytes);
        while let Some(frame) = reader.framer.next_frame() {
            let kind = reader.verifier.frame(frame);
            let Frame::Line {
                number,
                bytes: line,
            } = frame
            else {
                continue;
            };
            if kind == LineKind::Invalid {
                continue;
            }
            let line = Line {
                number,
                bytes: line,
                kind,
            };
            take_line(
                self.tool,
                self.invocation,
                reader.budget,
                self.output,
                line,
                &mut reader.kept,
                progress,
            );
        }
    }
}

/// Sends SIGINT to the group at a bound; the phase that follows.
fn interrupt(processes: &CallProcesses, phase: Phase, deadline: Instant) -> Phase {
    processes.signal_group(Signal::INT);
    phase.interrupted(deadline)
}
