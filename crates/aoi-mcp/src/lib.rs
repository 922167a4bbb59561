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
//! | a run: `aoi:meta` … `aoi:summary` | `structuredContent` `{events, summary}` and the same JSON as text |
//! | a process `aoi:error`, `ok:false`, a protocol violation | `isError: true` with the whole error |
//! | `aoi:progress` | `notifications/progress`, when the client sent a progress token |
//! | `truncated` / `next_cursor` | the tool's `cursor` argument |
//! | `read_only`, `additive` | `readOnlyHint`; `idempotentHint` only when read-only; `destructiveHint` unless read-only or additive ([`catalog::hints`]) |
//! | `notifications/cancelled`, a timeout | the child's process group killed, and reaped |
//!
//! The adapter never adds `--confirm`, never retries, and never runs a shell.

#![deny(missing_docs)]

pub mod call;
pub mod catalog;
pub mod http;
pub mod reap;
pub mod revision;
pub mod server;
pub mod stdio;

pub mod compact;
pub mod confine;
pub use catalog::{Catalog, CatalogError, Cli, Filter, ServedTool};
pub use server::{McpServer, ServerOptions};
