//! `aoi` as an AOI tool: its identity, the emitter its commands write with, and usage errors
//! in machine mode.

use aoi::{Emitter, EmitterBuilder, Identity};

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

/// Reports a usage error as a complete AOI stream. Returns 64.
pub fn usage_error(message: &str) -> u8 {
    aoi::app::usage_message_stream(emitter("usage"), message)
}
