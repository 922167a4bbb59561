//! How a command of `aoi` ends when it cannot do its job. Commands return
//! `Result<ExitCode, CommandError>`; [`CommandError::exit`] is the one place such an ending
//! becomes what the reader sees and an exit status.
//!
//! - In machine mode, a complete stream: `aoi:meta` naming the command, the `aoi:error`, a
//!   failed `aoi:summary` (§16.1, §20); the status is the error category's (§6, §9).
//! - In human mode, one line on stderr (escaped: a message may quote data), same status.
//! - For `aoi mcp`, whose stdout belongs to the MCP protocol, one line on stderr only.

use std::io::{self, Write};
use std::process::ExitCode;

use aoi::{exit_code, ErrorEvent, Harness};

/// Who reads the command's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// An agent: an AOI stream.
    Machine,
    /// A person: text, coloured unless `no_color` or the environment says not to.
    Human { no_color: bool },
    /// An MCP host (`aoi mcp`): stdout is the protocol's, diagnostics go to stderr.
    Protocol,
}

impl Mode {
    /// Machine mode when `machine`, else human.
    pub fn new(machine: bool, no_color: bool) -> Mode {
        if machine {
            Mode::Machine
        } else {
            Mode::Human { no_color }
        }
    }

    /// True in machine mode.
    pub fn machine(self) -> bool {
        self == Mode::Machine
    }

    /// A usage error of `command`: arguments clap accepted that do not fit together.
    pub fn usage(self, command: &'static str, message: impl Into<String>) -> CommandError {
        CommandError {
            command,
            mode: self,
            kind: Kind::Usage(message.into()),
        }
    }

    /// `error` ends `command` before it wrote anything.
    pub fn failed(self, command: &'static str, error: ErrorEvent) -> CommandError {
        CommandError {
            command,
            mode: self,
            kind: Kind::Failed(Box::new(error)),
        }
    }

    /// Writing `what` (`"the report"`) of `command` failed.
    pub fn write_failed(
        self,
        command: &'static str,
        what: &'static str,
        error: io::Error,
    ) -> CommandError {
        CommandError {
            command,
            mode: self,
            kind: Kind::Write(what, error),
        }
    }
}

/// A command that ended without doing its job. See the [module docs](self).
#[derive(Debug)]
pub struct CommandError {
    command: &'static str,
    mode: Mode,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Usage(String),
    Failed(Box<ErrorEvent>),
    Write(&'static str, io::Error),
}

impl CommandError {
    /// Shows the error where its reader looks and returns the exit status.
    pub fn exit(self) -> ExitCode {
        let error = match self.kind {
            // §6: a reader that went away is no failure to report; anything else is, on the
            // only stream left to say it.
            Kind::Write(_, e) if e.kind() == io::ErrorKind::BrokenPipe => {
                return ExitCode::from(exit_code::SIGPIPE)
            }
            Kind::Write(what, e) => {
                let _ = writeln!(
                    io::stderr(),
                    "aoi {}: cannot write {what}: {e}",
                    self.command
                );
                return ExitCode::from(exit_code::IO_ERR);
            }
            Kind::Usage(message) => {
                if let Mode::Human { .. } = self.mode {
                    // As clap words its own usage errors.
                    let _ = writeln!(
                        io::stderr(),
                        "error: {}\n\nFor more information, try 'aoi {} --help'.",
                        aoi::surface::term::printable_line(&message),
                        self.command
                    );
                    return ExitCode::from(exit_code::USAGE);
                }
                ErrorEvent::usage(message)
            }
            Kind::Failed(error) => *error,
        };
        match self.mode {
            Mode::Machine => Harness::new(crate::emitter(self.command)).run(|_| Err(error.into())),
            Mode::Human { no_color } => {
                aoi::app::human_error(&error, !no_color && aoi::surface::color::env_allows())
            }
            Mode::Protocol => {
                let _ = writeln!(
                    io::stderr(),
                    "aoi {}: {}",
                    self.command,
                    aoi::surface::term::printable_line(&error.message)
                );
                ExitCode::from(error.category.exit_code())
            }
        }
    }
}

/// Writes `what` (`"the report"`), `text`, to stdout and flushes it.
pub fn write_stdout(
    mode: Mode,
    command: &'static str,
    what: &'static str,
    text: &str,
) -> Result<(), CommandError> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| mode.write_failed(command, what, e))
}
