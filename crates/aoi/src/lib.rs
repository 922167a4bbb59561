#![doc = include_str!("../README.md")]
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
//! [`prelude`] names everything a tool uses. Below [`App`], [`Harness`] runs one body under the
//! same guarantees and [`Emitter`] writes one stream; the [`surface`] modules add paging,
//! writes, redaction, the input contract and human output.

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
