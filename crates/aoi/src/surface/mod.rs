//! The standard CLI surface of §14-§16: flags, cursors, dry-run, confirmation, idempotency,
//! redaction, and human output derived from the machine stream.

pub mod color;
pub mod cursor;
pub mod flags;
pub mod human;
pub mod input;
#[cfg(unix)]
pub mod mutation;
pub mod redact;
pub mod safety;
#[cfg(feature = "shell")]
pub mod shell;
#[cfg(unix)]
pub mod store;
pub mod term;
