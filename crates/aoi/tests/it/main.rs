//! Integration tests of the `aoi` crate through its public API, in one test binary.
//!
//! Property tests for the invariants the SDK exists to keep: whatever a tool does with the
//! emitter, the stream it writes is one the verifier accepts and reads back as written; the
//! reader never panics on any bytes; and a damaged stream is never taken for a whole one.

mod arbitrary_bytes;
mod conformance_doc;
mod damaged_streams;
mod emitted_streams;
mod idempotency_store;
mod modes;
mod process_end;
mod readme;
mod redaction_cases;
mod scenario;
mod short_path;
mod spec_corpus;
mod stdout_faults;
mod verifier_doc;
