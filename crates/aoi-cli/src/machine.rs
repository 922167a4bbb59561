//! `aoi` as an AOI tool: its identity, and usage errors in machine mode.

use aoi::app::App;
use aoi::discover::capabilities::CommandSpec;
use aoi::discover::schema::EventSchema;
use aoi::{Emitter, EmitterBuilder, Identity};

use crate::commands::lint::LintVerdict;
use crate::commands::verify::{FindingEvent, VerdictEvent};

/// The schema of the events `aoi` itself emits in machine mode.
pub const SCHEMA_NAME: &str = "io.machinemode.aoi";
/// Its version.
pub const SCHEMA_VERSION: &str = "1.0.0";

/// `aoi`'s identity triple.
pub fn identity() -> Identity {
    Identity::new(
        "aoi",
        env!("CARGO_PKG_VERSION"),
        SCHEMA_NAME,
        SCHEMA_VERSION,
    )
}

/// `aoi` as an AOI tool, for its discovery subcommands: its event schema and what each
/// command does, with examples that run against the files in `crates/aoi-cli/lint/`.
pub fn app() -> App {
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

/// An emitter builder for one `aoi` subcommand.
pub fn emitter(command: &str) -> EmitterBuilder {
    Emitter::builder(identity()).command(command)
}

/// Reports a usage error as a complete AOI stream. Returns 64.
pub fn usage_error(message: &str) -> u8 {
    aoi::app::usage_message_stream(emitter("usage"), message)
}
