//! The `outline` binary: parses the command line and hands it to the command layer.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
