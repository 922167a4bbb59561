//! Any Machine Mode CLI as an MCP server, with nothing invented.
//!
//! MCP makes a tool reachable; Machine Mode makes it operable. This crate builds an MCP
//! server from a CLI's own discovery (`capabilities`, `input-schema`, `schema`), so the two
//! cannot drift apart (`../shared/spec/machine-mode-and-mcp.md`):
//!
//! | Machine Mode | MCP |
//! | --- | --- |
//! | each command of `capabilities` | one `tools/list` entry, named after it |
//! | `input-schema --command NAME` | the tool's `inputSchema`; arguments map back to argv exactly |
//! | `--input-jsonl -` (`input_modes` has `jsonl`) | a `records` array, each record checked against `$defs.record`, written to the CLI's stdin |
//! | a property marked as a path (`x-aoi-format: "path"`) | confined to `--root` (default: the working directory), see [`confine`] |
//! | the event schema | `outputSchema`: `{events, summary}`, failed runs included |
//! | a run: `aoi:meta` … `aoi:summary` | `structuredContent` `{events, summary}`; `content`: a headline block, then the serialized JSON of `structuredContent` |
//! | a process `aoi:error`, `ok:false`, a protocol violation | `isError: true` with the whole error |
//! | a line the verifier or the tool's `outputSchema` rejects | never in `events`: `isError`, `protocol_violation.findings` (line, code, message; the verifier's first 1000 and the first 100 `outputSchema` misfits, the rest counted); the result always fits `outputSchema` |
//! | an `aoi:error` category v1.0-alpha does not know | forwarded unchanged, routed as `internal` (the headline says both, §9.4); no violation |
//! | `aoi:progress` | `notifications/progress`, when the client sent a progress token, in order, and only a value above the last one sent (MCP: progress increases) |
//! | `unbounded: true` (`watch`) | `max_duration_ms` (default 30 s, capped by `--timeout`) and `max_events` arguments: SIGINT at either, the events seen, `stopped` `{reason, retryable: false}`, not an error |
//! | `--timeout` | a hard limit: `adapter_error` `timeout` `CALL_TIMED_OUT`, `retryable` only for a read-only command or a call with an idempotency key (§9.3) |
//! | `--max-output` (4 MiB) | bounds the response: events past it withheld, `truncated: true`, `withheld_events`, the summary's `next_cursor`; a read-only CLI is stopped there |
//! | the end of a call, stdin closed, SIGTERM/SIGINT/SIGHUP | the call's process group and every descendant carrying its `AOI_MCP_CALL` marker killed ([`reap`]) |
//! | `truncated` / `next_cursor` | the tool's `cursor` argument |
//! | `read_only`, `additive` | `readOnlyHint`; `idempotentHint` only when read-only; `destructiveHint` unless read-only or additive ([`catalog::hints`]) |
//! | `notifications/cancelled`, a timeout | the child's process group killed, and reaped |
//! | an HTTP session deleted (`DELETE`) during a call | its running calls cancelled at once (rmcp would wait up to 5 s for their answers first), so their groups and marked descendants are killed ([`session_calls`]) |
//!
//! The adapter never adds `--confirm`, never retries, and never runs a shell.

#![deny(missing_docs)]

pub mod adapter_error;
pub mod call;
pub mod catalog;
pub mod compact;
pub mod confine;
pub mod http;
pub mod reap;
pub mod revision;
pub mod server;
pub mod session_calls;
pub mod stdio;
pub mod structured;

pub use catalog::{Catalog, CatalogError, Cli, Filter, ServedTool};
pub use server::{McpServer, ServerOptions};
