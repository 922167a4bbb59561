//! `aoi`: verify, lint and serve Machine Mode (AOI-CLI v1.0-alpha) tools.

use std::process::ExitCode;

mod cli;
mod commands;
mod machine;
mod style;

/// Prints one discovery document about `aoi` itself, derived from its clap definition.
fn discover(output: &cli::OutputArgs, which: &aoi::app::Discovery) -> ExitCode {
    let global = aoi::surface::flags::GlobalArgs {
        output: output.output,
        no_color: output.no_color,
        ..Default::default()
    };
    machine::app().discover::<cli::Cli>(&global, which)
}

fn main() -> ExitCode {
    // `aoi mcp`'s watchdog (aoi_mcp::reap::start_watchdog), before any parsing.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(aoi_mcp::reap::WATCHDOG_ARG)) {
        return aoi_mcp::reap::watchdog_main(args.next().as_deref().and_then(|a| a.to_str()));
    }
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(code) => return ExitCode::from(code),
    };
    match cli.command {
        cli::Command::Shell(shell) => {
            use clap::CommandFactory;
            shell.run(cli::Cli::command(), "aoi")
        }
        cli::Command::Verify(args) => commands::verify::run(args),
        cli::Command::Lint(args) => commands::lint::run(args),
        cli::Command::Mcp(args) => commands::mcp::run(args),
        cli::Command::Schema { name, output } => {
            discover(&output, &aoi::app::Discovery::Schema { name })
        }
        cli::Command::InputSchema { command, output } => {
            discover(&output, &aoi::app::Discovery::InputSchema { command })
        }
        cli::Command::Capabilities { output } => {
            discover(&output, &aoi::app::Discovery::Capabilities)
        }
    }
}
