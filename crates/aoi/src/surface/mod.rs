//! The standard CLI surface of §14-§16: flags, cursors, dry-run, confirmation, idempotency,
//! redaction.

pub mod color;
pub mod cursor;
pub mod flags;
pub mod input;
pub mod redact;
pub mod safety;
#[cfg(feature = "shell")]
pub mod shell;
pub mod term;
