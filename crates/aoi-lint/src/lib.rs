//! The conformance checks of AOI-CLI v1.0-alpha §18.2, run against any Machine Mode tool.
//!
//! Conformance is asserted per factor and per command (§18.1). This crate exercises a tool,
//! in any language, through its own discovery (`capabilities`, `input-schema`, `schema`), each
//! run in a fresh sandbox, and reports one [`CheckResult`] per (check × command): pass,
//! fail with the evidence, not applicable with the reason, or could not run. Stream-level rules
//! are judged by the `aoi` verifier; lint never re-implements a wire rule.

#![deny(missing_docs)]

// Public: what `aoi` (the binary) and the fuzz targets use. The rest is lint's own, in layers
// (model <- sandbox, reaper, snapshot <- tool <- subject <- checks <- lint <- report).
mod checks;
pub mod config;
mod lint;
mod manifest;
mod model;
pub mod reaper;
pub mod report;
mod sandbox;
mod snapshot;
mod subject;
mod tool;

pub use config::Config;
pub use lint::{
    lint_invocation, lint_invocation_streaming, lint_tool, lint_tool_streaming, lint_transcript,
    OnCommand, Options,
};
pub use model::{Advice, CheckId, CheckOutcome, CheckResult, Evidence, Factor, Report, CHECKS};
