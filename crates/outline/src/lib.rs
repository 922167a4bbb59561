//! `outline`: the AOI-CLI reference tool, a local document store with full-text search.
//!
//! The tool exercises every factor of the standard on a real workload: documents with stable
//! ids and versions (ETags) in an embedded SQLite database, an FTS5 index with BM25 ranking,
//! bounded reads with cursors that survive concurrent writes (§15), and writes that can be
//! made idempotent in the same transaction as their effect (§14.4).
//!
//! This crate is the library under the `outline` binary. [`store`] is the storage layer: it
//! knows nothing of streams, flags or exit codes, and returns typed errors that the command
//! layer turns into `aoi:error` events.

#![deny(missing_docs)]

pub mod store;

#[doc(hidden)]
pub mod import_record;
