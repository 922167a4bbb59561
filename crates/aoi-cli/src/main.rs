//! `aoi`: verify, lint and serve Machine Mode (AOI-CLI v1.0-alpha) tools.
//!
//! `aoi` is an [`App`] like any tool built on the SDK: [`App::parse`] reads its one clap
//! definition ([`cli::Cli`]) and reports usage errors as streams in machine mode (§16.1);
//! [`run`] dispatches to one command, which returns `Result<ExitCode, CommandError>`; and
//! [`CommandError::exit`] is the one place an error becomes output and an exit status.

use std::process::ExitCode;

use aoi::app::{App, Discovery};
use aoi::discover::capabilities::CommandSpec;
use aoi::discover::schema::EventSchema;
use aoi::{DomainEvent, Emitter, EmitterBuilder};

use commands::lint::LintVerdict;
use commands::verify::{FindingEvent, VerdictEvent};
use exit::CommandError;

mod cli;
mod commands;
mod exit;

/// The schema of the events `aoi` itself emits in machine mode.
const SCHEMA_NAME: &str = "io.machinemode.aoi";
/// Its version.
const SCHEMA_VERSION: &str = "1.0.0";

/// `aoi` as an AOI tool: its identity, its event schema and what each command does, with
/// examples that run against the files in `crates/aoi-cli/lint/`.
fn app() -> App {
    App::new("aoi", env!("CARGO_PKG_VERSION"), SCHEMA_NAME)
        .schema_versions([SCHEMA_VERSION], SCHEMA_VERSION)
        .event_schema(|identity| {
            EventSchema::new(identity, "https://schemas.machinemode.io/aoi")
                .domain_event::<FindingEvent<'static>>()
                .domain_event::<VerdictEvent<'static>>()
                .domain_event::<LintVerdict>()
                .build()
        })
        .command(
            CommandSpec::new(commands::verify::NAME)
                .read_only()
                .events([FindingEvent::TYPE, VerdictEvent::TYPE])
                .example([commands::verify::NAME, "search.jsonl"]),
        )
        .command(
            CommandSpec::new(commands::lint::NAME)
                .read_only()
                .events([LintVerdict::TYPE])
                .example([
                    commands::lint::NAME,
                    "--transcript",
                    "search.jsonl",
                    "--schema",
                    "search.schema.json",
                ]),
        )
        .command(
            CommandSpec::new(commands::mcp::NAME)
                .read_only()
                .protocol("mcp")
                .example([commands::mcp::NAME, "--", "outline"]),
        )
}

/// The emitter one `aoi` command writes its stream with.
fn emitter(command: &str) -> EmitterBuilder {
    Emitter::builder(app().identity()).command(command)
}

/// Prints one discovery document about `aoi` itself, derived from its clap definition.
fn discover(app: &App, output: &cli::OutputArgs, which: &Discovery) -> ExitCode {
    let global = aoi::surface::flags::GlobalArgs {
        output: output.output,
        no_color: output.no_color,
        ..Default::default()
    };
    app.discover::<cli::Cli>(&global, which)
}

/// Runs the command the arguments named.
fn run(app: &App, cli: cli::Cli) -> Result<ExitCode, CommandError> {
    match cli.command {
        cli::Command::Shell(shell) => {
            use clap::CommandFactory;
            Ok(shell.run(cli::Cli::command(), "aoi"))
        }
        cli::Command::Verify(args) => commands::verify::run(args),
        cli::Command::Lint(args) => commands::lint::run(args),
        cli::Command::Mcp(args) => commands::mcp::run(args),
        cli::Command::Schema { name, output } => {
            Ok(discover(app, &output, &Discovery::Schema { name }))
        }
        cli::Command::InputSchema { command, output } => {
            Ok(discover(app, &output, &Discovery::InputSchema { command }))
        }
        cli::Command::Capabilities { output } => {
            Ok(discover(app, &output, &Discovery::Capabilities))
        }
    }
}

fn main() -> ExitCode {
    // `aoi mcp`'s watchdog (aoi_mcp::reap::start_watchdog), before any parsing.
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(aoi_mcp::reap::WATCHDOG_ARG)) {
        return aoi_mcp::reap::watchdog_main(args.next().as_deref().and_then(|a| a.to_str()));
    }
    let app = app();
    let cli = match app.parse::<cli::Cli>() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    run(&app, cli).unwrap_or_else(CommandError::exit)
}
