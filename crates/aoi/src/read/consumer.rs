//! The consumer API for agent harnesses: spawn a tool, read its typed events as they arrive,
//! and get one final [`Outcome`] that never mistakes a cut stream for a result.
//!
//! ```no_run
//! use std::process::Command;
//! use aoi::read::{Session, Outcome};
//!
//! let mut cmd = Command::new("outline");
//! cmd.args(["search", "agent", "--output", "jsonl"]);
//! let mut session = Session::spawn(&mut cmd, Default::default())?;
//! while let Some(event) = session.next_event()? {
//!     if let Ok(event) = event {
//!         println!("{}", event.event.event_type());
//!     }
//! }
//! match session.finish()?.outcome() {
//!     Outcome::Succeeded { summary } => println!("{} results", summary.count.unwrap_or(0)),
//!     Outcome::Failed { caused_by, .. } => println!("failed: {caused_by:?}"),
//!     Outcome::ProtocolViolation { findings } => println!("cannot trust it: {}", findings[0]),
//!     Outcome::Killed { signal } => println!("killed by {signal}"),
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
pub enum Outcome<'a> {
    /// A conforming stream whose summary says `ok:true`, and exit 0.
    Succeeded {
        /// The terminal summary.
        summary: &'a Summary,
    },
    /// A conforming stream that reports failure honestly.
    Failed {
        /// The terminal summary.
        summary: &'a Summary,
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
    pub fn outcome(&self) -> Outcome<'_> {
        use std::os::unix::process::ExitStatusExt;
        if let (Some(signal), None) = (self.status.signal(), &self.report.summary) {
            return Outcome::Killed { signal };
        }
        match (&self.report.verdict, &self.report.summary) {
            (Verdict::Succeeded, Some(summary)) => Outcome::Succeeded { summary },
            (Verdict::Failed, Some(summary)) => Outcome::Failed {
                summary,
                caused_by: self.report.caused_by.as_ref(),
            },
            _ => Outcome::ProtocolViolation {
                findings: &self.report.findings,
            },
        }
    }
}

impl Session {
    /// Spawns `command` with stdout piped (stdin and stderr as the command sets them).
    pub fn spawn(command: &mut Command, opts: VerifyOptions) -> io::Result<Session> {
        let mut child = command.stdout(Stdio::piped()).spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("child stdout was not captured"))?;
        Ok(Session {
            child,
            reader: LineReader::new(stdout),
            verifier: Verifier::new(opts),
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
