//! One `tools/call`, in three phases: `start` spawns the CLI in machine mode (its own
//! process group, no shell); `watch` reads its stream through the `aoi` reader and verifier
//! as it arrives, forwards `aoi:progress` and stops it at its bounds; `respond` turns the run
//! into `{events, summary}` that always fits the tool's `outputSchema`.
//!
//! Everything a call waits for has a deadline: the CLI's stdout, its exit and its stderr are
//! read in one loop beside `--timeout`, so a descendant that holds a pipe open cannot hold the
//! call. When the call ends, however it ends, nothing it started is left running
//! ([`crate::reap`]).

mod collect;
mod respond;
mod start;
mod watch;

use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::ServedTool;
use crate::structured::Structured;

/// The default `--max-output`: 4 MiB, below the line buffer of every official MCP client.
pub const DEFAULT_MAX_OUTPUT: usize = 4 << 20;

/// Bounds of one call.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The run is killed after this long.
    pub timeout: Duration,
    /// The size of the whole response (text and structured content): events past it are
    /// withheld and the result says `truncated`.
    pub max_output: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            timeout: Duration::from_secs(300),
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

/// What one call runs, beyond the tool.
#[derive(Debug, Default)]
pub struct Invocation {
    /// Arguments after the program and the command words.
    pub argv: Vec<String>,
    /// Bytes for the CLI's standard input (closed when `None`).
    pub stdin: Option<Vec<u8>>,
    /// The caller passed an idempotency key: a mutation may then be retried after a timeout.
    pub keyed: bool,
    /// For an unbounded command: stop the CLI (SIGINT) after this long.
    pub max_duration: Option<Duration>,
    /// For an unbounded command: stop the CLI (SIGINT) after this many domain events.
    pub max_events: Option<u64>,
    /// The working directory of the CLI (the confinement's base); the adapter's when `None`.
    pub cwd: Option<std::path::PathBuf>,
}

/// How a call ended, before it becomes an MCP result.
#[derive(Debug)]
pub struct CallOutcome {
    /// The structured result: `{events, summary}` and, when something went wrong beyond an
    /// honest failure, `protocol_violation` or `adapter_error`.
    pub structured: Structured,
    /// True for an MCP `isError` result.
    pub is_error: bool,
    /// A line for a person or a model, read before the JSON.
    pub headline: String,
}

/// A progress update from the CLI's `aoi:progress`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Units done.
    pub progress: f64,
    /// Units in all, when known.
    pub total: Option<f64>,
    /// The CLI's message.
    pub message: Option<String>,
}

/// Runs `tool` with `invocation`, forwarding progress through `progress`, until it ends,
/// `cancel` fires, or `bounds` are reached; the result fits `output` (the tool's compiled
/// `outputSchema`) when one is given.
pub async fn run(
    tool: &ServedTool,
    mut invocation: Invocation,
    bounds: Bounds,
    output: Option<&jsonschema::Validator>,
    cancel: CancellationToken,
    progress: impl FnMut(ProgressUpdate) + Send,
) -> CallOutcome {
    let started = match start::start(tool, &mut invocation) {
        Ok(started) => started,
        Err(outcome) => return outcome,
    };
    let watched = watch::Watch {
        tool,
        invocation: &invocation,
        bounds,
        output,
    };
    let ran = watched.run(started, cancel, progress).await;
    respond::respond(tool, &invocation, bounds, output, ran)
}

/// The map of a JSON object (`json!` of an object literal).
pub(crate) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
