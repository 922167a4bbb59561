//! `aoi`: verify, lint and serve Machine Mode (AOI-CLI v1.0-alpha) tools.

use std::process::ExitCode;

mod cli;
mod commands;
mod machine;
mod style;

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(code) => return ExitCode::from(code),
    };
    match cli.command {
        cli::Command::Verify(args) => commands::verify::run(args),
        cli::Command::Lint(args) => commands::lint::run(args),
    }
}
