//! `aoi`: verify, lint and serve Machine Mode (AOI-CLI v1.0-alpha) tools.

use std::process::ExitCode;

use aoi::app::App;
use aoi::discover::capabilities::CommandSpec;
use aoi::discover::schema::EventSchema;

use commands::lint::LintVerdict;
use commands::verify::{FindingEvent, VerdictEvent};

mod cli;
mod commands;
mod machine;
mod style;

/// `aoi` as an AOI tool, for its discovery subcommands: its event schema and what each
/// command does, with examples that run against the files in `crates/aoi-cli/lint/`.
fn app() -> App {
    App::new("aoi", env!("CARGO_PKG_VERSION"), machine::SCHEMA_NAME)
        .schema_versions([machine::SCHEMA_VERSION], machine::SCHEMA_VERSION)
        .event_schema(|identity| {
            EventSchema::new(identity, "https://schemas.machinemode.io/aoi")
                .domain_event::<FindingEvent<'static>>()
                .domain_event::<VerdictEvent<'static>>()
                .domain_event::<LintVerdict>()
                .build()
        })
        .command(
            CommandSpec::new("verify")
                .read_only()
                .events(["finding", "verdict"])
                .example(["verify", "search.jsonl"]),
        )
        .command(
            CommandSpec::new("lint")
                .read_only()
                .events(["lint_verdict"])
                .example([
                    "lint",
                    "--transcript",
                    "search.jsonl",
                    "--schema",
                    "search.schema.json",
                ]),
        )
        .command(
            CommandSpec::new("mcp")
                .read_only()
                .protocol("mcp")
                .example(["mcp", "--", "outline"]),
        )
        .command(CommandSpec::new("schema").read_only().example(["schema"]))
        .command(CommandSpec::new("input-schema").read_only().example([
            "input-schema",
            "--command",
            "verify",
        ]))
        .command(
            CommandSpec::new("capabilities")
                .read_only()
                .example(["capabilities"]),
        )
}

/// Prints one discovery document about `aoi` itself, derived from its clap definition.
fn discover(output: &cli::OutputArgs, which: &aoi::app::Discovery) -> ExitCode {
    let global = aoi::surface::flags::GlobalArgs {
        output: output.output,
        no_color: output.no_color,
        ..Default::default()
    };
    app().discover::<cli::Cli>(&global, which)
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
