//! The consumer API for agent harnesses: spawn a tool, read its typed events as they arrive,
//! and get one final [`Conclusion`] that never mistakes a cut stream for a result.
//!
//! ```no_run
//! use std::process::Command;
//! use aoi::read::{Conclusion, Session};
//!
//! let mut cmd = Command::new("outline");
//! cmd.args(["search", "agent", "--output", "jsonl"]);
//! let mut session = Session::spawn(&mut cmd, Default::default())?;
//! while let Some(event) = session.next_event()? {
//!     if let Ok(event) = event {
//!         println!("{}", event.event.event_type());
//!     }
//! }
//! match session.finish()?.conclusion() {
//!     Conclusion::Succeeded { summary } => println!("{} results", summary.count.unwrap_or(0)),
//!     Conclusion::Failed { caused_by, .. } => println!("failed: {caused_by:?}"),
//!     Conclusion::ProtocolViolation { findings } => println!("cannot trust it: {}", findings[0]),
//!     Conclusion::Killed { signal } => println!("killed by {signal}"),
//! }
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};

use super::event::{decode, DecodeError, Decoded};
use super::finding::Finding;
use super::framing::{Frame, LineReader};
use super::verify::{ProcessEnd, Report, Verdict, Verifier, VerifyOptions};
use crate::wire::{CausedBy, Summary};

/// A running tool whose stdout is read and verified as it arrives.
#[derive(Debug)]
pub struct Session {
    child: Child,
    reader: LineReader<ChildStdout>,
    verifier: Verifier,
}

/// How the tool's run ended, once the stream is read to the end.
#[derive(Debug)]
pub struct Completion {
    /// The process's exit status.
    pub status: ExitStatus,
    /// The verifier's report on the stream.
    pub report: Report,
}

/// The one question a harness asks at the end.
#[derive(Debug, Clone, Copy)]
pub enum Conclusion<'a> {
    /// A conforming stream whose summary says `ok:true`, and exit 0.
    Succeeded {
        /// The terminal summary.
        summary: &'a Summary,
    },
    /// A conforming stream that reports failure honestly, or a process that exited non-zero
    /// without a summary (§4.1).
    Failed {
        /// The terminal summary, when there is one.
        summary: Option<&'a Summary>,
        /// The retry fields that explain it, when known.
        caused_by: Option<&'a CausedBy>,
    },
    /// The stream breaks the protocol: nothing in it can be trusted.
    ProtocolViolation {
        /// What is wrong, violations first.
        findings: &'a [Finding],
    },
    /// The process was killed by a signal before it could end its stream.
    Killed {
        /// The signal number.
        signal: i32,
    },
}

impl Completion {
    /// Classifies the run.
    pub fn conclusion(&self) -> Conclusion<'_> {
        use std::os::unix::process::ExitStatusExt;
        if let (Some(signal), None) = (self.status.signal(), &self.report.summary) {
            return Conclusion::Killed { signal };
        }
        match (&self.report.verdict, &self.report.summary) {
            (Verdict::Succeeded, Some(summary)) => Conclusion::Succeeded { summary },
            (Verdict::Failed, summary) => Conclusion::Failed {
                summary: summary.as_ref(),
                caused_by: self.report.caused_by.as_ref(),
            },
            _ => Conclusion::ProtocolViolation {
                findings: &self.report.findings,
            },
        }
    }
}

impl Session {
    /// Spawns `command` with stdout piped (stdin and stderr as the command sets them).
    pub fn spawn(command: &mut Command, opts: VerifyOptions) -> io::Result<Session> {
        Session::spawn_with(command, Verifier::new(opts))
    }

    /// Like [`Session::spawn`], with a verifier set up by the caller (e.g. with the tool's
    /// published schema).
    pub fn spawn_with(command: &mut Command, verifier: Verifier) -> io::Result<Session> {
        let mut child = command.stdout(Stdio::piped()).spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("child stdout was not captured"))?;
        Ok(Session {
            child,
            reader: LineReader::new(stdout),
            verifier,
        })
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The next event as it arrives; `None` at end of stream. Every line is also verified, and a
    /// line that is not an event is skipped here and reported in the final report.
    pub fn next_event(&mut self) -> io::Result<Option<Result<Decoded, DecodeError>>> {
        loop {
            let Some(frame) = self.reader.next()? else {
                return Ok(None);
            };
            self.verifier.frame(frame);
            if let Frame::Line { bytes, .. } = frame {
                return Ok(Some(decode(bytes)));
            }
        }
    }

    /// The next frame as it arrives, already verified; `None` at end of stream. For a relay that
    /// forwards the stream as it reads it.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame<'_>>> {
        let frame = self.reader.next()?;
        if let Some(frame) = frame {
            self.verifier.frame(frame);
        }
        Ok(frame)
    }

    /// True when [`Session::next_frame`] can answer without waiting for the child.
    pub fn has_buffered_frame(&self) -> bool {
        self.reader.has_buffered_frame()
    }

    /// Records that a relay could not forward line `number` (see [`Verifier::not_relayed`]).
    pub fn not_relayed(&mut self, number: u64, len: u64) {
        self.verifier.not_relayed(number, len);
    }

    /// Kills the child (e.g. on a caller's timeout); [`Session::finish`] then reports it.
    pub fn kill(&mut self) -> io::Result<()> {
        self.child.kill()
    }

    /// Reads the rest of the stream, waits for the process, and returns the verdict.
    pub fn finish(mut self) -> io::Result<Completion> {
        while let Some(frame) = self.reader.next()? {
            self.verifier.frame(frame);
        }
        let status = self.child.wait()?;
        let end = process_end(status);
        Ok(Completion {
            status,
            report: self.verifier.finish(Some(end)),
        })
    }
}

/// How a process ended, for the verifier.
pub fn process_end(status: ExitStatus) -> ProcessEnd {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ProcessEnd::Exited(code),
        (None, Some(signal)) => ProcessEnd::Signaled(signal),
        (None, None) => ProcessEnd::Exited(-1),
    }
}
