//! `aoi` as an AOI tool: its identity, and usage errors in machine mode.

use std::ffi::OsString;
use std::io;

use aoi::{Category, Code, Emitter, EmitterBuilder, ErrorEvent, Identity, Outcome};

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

/// An emitter builder for one `aoi` subcommand.
pub fn emitter(command: &str) -> EmitterBuilder {
    Emitter::builder(identity()).command(command)
}

/// True when the arguments ask for machine mode (`--output jsonl`, `--format=jsonl`, ...),
/// looked up before clap so that even a usage error is reported as events.
pub fn requested(args: &[OsString]) -> bool {
    let mut previous_is_flag = false;
    for arg in args {
        let arg = arg.to_string_lossy();
        if previous_is_flag && arg == "jsonl" {
            return true;
        }
        if arg == "--output=jsonl" || arg == "--format=jsonl" {
            return true;
        }
        previous_is_flag = arg == "--output" || arg == "--format";
    }
    false
}

/// Reports a clap usage error as a complete AOI stream: meta, a `usage` error, a failed summary.
/// Returns 64.
pub fn clap_usage_error(error: &clap::Error) -> u8 {
    let rendered = error.render().to_string();
    let first = rendered
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid usage")
        .trim_start_matches("error: ");
    usage_error(first)
}

/// Reports a usage error as a complete AOI stream. Returns 64.
pub fn usage_error(message: &str) -> u8 {
    let event =
        ErrorEvent::new(Category::Usage, Code::from_static("USAGE"), message).hint("aoi --help");
    let code = emitter("usage")
        .start(io::stdout())
        .and_then(|mut out| {
            out.error(&event)?;
            out.finish(Outcome::failed())
        })
        .map(|f| f.exit_code);
    match code {
        Ok(code) => code,
        Err(e) if e.is_broken_pipe() => aoi::exit_code::SIGPIPE,
        Err(_) => aoi::exit_code::IO_ERR,
    }
}
