//! `aoi`: the Machine Mode SDK, a complete implementation of AOI-CLI v1.0-alpha.
//!
//! One crate holds the wire contract, for producers and consumers alike:
//!
//! - [`wire`]: framework events, the `aoi` envelope, the error taxonomy, exit codes, versions;
//! - [`emit`]: the [`Emitter`] (the only writer of a machine-mode stream) and the process
//!   [`Harness`] that guarantees a summary on every exit under the tool's control;
//! - [`read`]: strict line framing, typed decoding, the stream [`Verifier`], and
//!   [`Session`](read::Session) for harnesses that run tools.
//!
//! # The stream
//!
//! A conforming run of `outline search "agent operable" --output jsonl --limit 2` looks like
//! this: one JSON object per line, each ending in `\n`, `aoi.seq` counting lines from 0 under
//! one `aoi.run`, `aoi:meta` first and `aoi:summary` last with `ok` explicit and `event_count`
//! equal to the number of lines.
//!
//! ```text
//! {"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V6H0ZT7K8F2W3C1"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0","command":"search"}
//! {"type":"hit","aoi":{"seq":1,"run":"01JZQ7X4TQ9V6H0ZT7K8F2W3C1"},"rank":1,"id":"doc_123","title":"Agent-Operable Tools"}
//! {"type":"aoi:warning","aoi":{"seq":2,"run":"01JZQ7X4TQ9V6H0ZT7K8F2W3C1"},"code":"INDEX_STALE","message":"index is 2 days old"}
//! {"type":"aoi:summary","aoi":{"seq":3,"run":"01JZQ7X4TQ9V6H0ZT7K8F2W3C1"},"ok":true,"event_count":4,"count":1,"warning_count":1,"error_count":0,"partial":false,"truncated":true,"next_cursor":"c2VhcmNoOjI","elapsed_ms":3,"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0"}
//! ```
//!
//! # A complete minimal tool
//!
//! One clap definition, one domain event type, and the SDK does the rest: `--output jsonl`,
//! usage errors as events (exit 64), `schema`, `input-schema --command search` and
//! `capabilities` derived from the same definition, `--schema-version` negotiation, a bounded
//! `--limit` with opaque cursors, a summary on every exit, and exit codes from the taxonomy.
//!
//! ```no_run
//! use std::process::ExitCode;
//! use aoi::prelude::*;
//! use clap::{Parser, Subcommand};
//!
//! /// A tiny searchable catalogue.
//! #[derive(Parser)]
//! #[command(name = "notes", version)]
//! struct Cli {
//!     #[command(flatten)]
//!     aoi: GlobalArgs,
//!     #[command(subcommand)]
//!     command: Command,
//! }
//!
//! #[derive(Subcommand)]
//! enum Command {
//!     /// Ranked search.
//!     Search {
//!         /// What to look for.
//!         query: String,
//!         #[command(flatten)]
//!         page: PageArgs,
//!     },
//!     #[command(flatten)]
//!     Discovery(Discovery),
//! }
//!
//! /// One search result.
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Hit { rank: u64, id: String }
//!
//! impl DomainEvent for Hit {
//!     const TYPE: &'static str = "hit";
//! }
//!
//! fn main() -> ExitCode {
//!     let app = App::new("notes", env!("CARGO_PKG_VERSION"), "com.example.notes.events")
//!         .event_schema(|id| {
//!             EventSchema::new(id, "https://schemas.example.com")
//!                 .domain_event::<Hit>()
//!                 .build()
//!         })
//!         .command(CommandSpec::new("search").read_only().events([Hit::TYPE]).example(["search", "agent", "--limit", "2"]));
//!     let cli: Cli = match app.parse() {
//!         Ok(cli) => cli,
//!         Err(code) => return code,
//!     };
//!     match cli.command {
//!         Command::Discovery(d) => app.discover::<Cli>(&cli.aoi, &d),
//!         Command::Search { query, page } => app.run(&cli.aoi, "search", |out| {
//!             let codec = CursorCodec::new("search", &query);
//!             let after: u64 = match &page.cursor {
//!                 Some(c) => codec.decode(c)?, // a cursor from another query: validation error
//!                 None => 0,
//!             };
//!             let hits = (after + 1..=100).map(|rank| Hit { rank, id: format!("doc_{rank}") });
//!             let page = take_page(&codec, hits, check_limit(page.limit)?, |h| h.rank);
//!             for hit in &page.items {
//!                 out.emit(hit)?;
//!             }
//!             Ok(page.outcome(Outcome::success())) // truncated + next_cursor when cut
//!         }),
//!     }
//! }
//! ```
//!
//! [`prelude`] names everything a tool uses. Below [`App`], [`Harness`] runs one body under the same guarantees and [`Emitter`]
//! writes one stream; the [`surface`] modules add dry-run, confirmation, idempotency, redaction
//! and the input contract; `examples/feed.rs`, `shout.rs` and `collect.rs` are a complete
//! source, transformer and sink.
//!
//! # Reading and verifying
//!
//! ```
//! use aoi::{Verifier, VerifyOptions, Verdict};
//! let stream = b"{\"type\":\"aoi:summary\",\"aoi\":{\"seq\":0,\"run\":\"R\"},\"ok\":true,\"event_count\":1,\"count\":0}\n";
//! let report = Verifier::verify_bytes(stream, VerifyOptions::default());
//! assert_eq!(report.verdict, Verdict::Succeeded);
//! // The same summary without its final newline is a cut stream, never a result (§2).
//! let report = Verifier::verify_bytes(&stream[..stream.len() - 1], VerifyOptions::default());
//! assert_eq!(report.verdict, Verdict::Violation);
//! ```

#![deny(missing_docs)]
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod app;
pub mod discover;
pub mod emit;
pub mod prelude;
pub mod read;
pub mod surface;
pub mod wire;

pub use app::{App, Discovery};
pub use discover::capabilities::CommandSpec;
pub use discover::schema::EventSchema;
pub use emit::{
    CancelToken, EmitError, Emitter, EmitterBuilder, Failure, Finished, Harness, Outcome, Signal,
};
pub use read::{Finding, FindingCode, Report, Verdict, Verifier, VerifyOptions};
pub use surface::flags::{GlobalArgs, PageArgs};
pub use wire::{
    exit_code, Category, CausedBy, Check, Code, DomainEvent, ErrorEvent, Heartbeat, Identity, Meta,
    Plan, Progress, Reason, Scope, Severity, Summary, Upstream, Warning, AOI_VERSION,
};
