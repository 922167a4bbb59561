//! Human mode's endings: the exit status of a listing, an error said on stderr, and the
//! `more:` note that tells a person how to get the next page.

use std::io::{self, Write};
use std::process::ExitCode;

use aoi::surface::term::printable_line;
use aoi::ErrorEvent;

use crate::paths::plain_io;

/// Ends a human-mode run: 0 when everything was written and no item failed, 1 when an item
/// failed (as GNU tools exit on a file they could not read), 141 for a reader that went away
/// (§7), 74 with one line on stderr for any other write failure.
pub fn human_exit(tool: &str, written: io::Result<()>, item_errors: usize) -> ExitCode {
    match written.and_then(|()| io::stdout().flush()) {
        Ok(()) if item_errors == 0 => ExitCode::SUCCESS,
        Ok(()) => ExitCode::from(1),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(aoi::exit_code::SIGPIPE),
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "{tool}: writing to stdout failed: {}",
                plain_io(&e)
            );
            ExitCode::from(aoi::exit_code::IO_ERR)
        }
    }
}

/// An error for a person, on stderr: `aoi-coreutils ls: <message>`; text from the file system
/// is escaped (no terminal controls reach the terminal).
pub fn say_error(command: &str, error: &ErrorEvent) {
    let _ = writeln!(
        io::stderr(),
        "aoi-coreutils {command}: {}",
        printable_line(&error.message)
    );
}

/// The note a human-mode page ends with when it was cut: how to get the rest.
pub fn more_note(command: &str, next: Option<&str>) {
    let hint = match next {
        Some(cursor) => format!("more: aoi-coreutils {command} ... --cursor {cursor}"),
        None => "more: raise --limit".to_owned(),
    };
    let _ = writeln!(io::stderr(), "{hint}");
}
