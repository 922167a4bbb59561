//! Reading a stream: strict line framing, typed decoding, the verifier, and the consumer API.

mod consumer;
mod event;
mod finding;
mod framing;
mod head;
mod program;
mod scan;
#[cfg(feature = "validate")]
mod schema_pool;
#[cfg(feature = "validate")]
mod schema_tape;
mod strict;
mod upstream;
mod verify;

pub use consumer::{process_end, Completion, Conclusion, Session};
pub use event::{decode, decode_object, DecodeError, Decoded, Event};
pub use finding::{bounded_message, Finding, FindingCode, Level, MAX_MESSAGE};
pub use framing::{complete_lines, Frame, Framer, LineReader, DEFAULT_MAX_LINE};
pub use head::{parse_head, Head, NotObject};
pub use program::locate_program;
#[doc(hidden)]
pub use scan::scan_fast_accepts;
pub use scan::{find_ansi, scan_line, Ansi, NotUtf8, ScannedLine};
pub use upstream::{Observed, UpstreamError, UpstreamState, UpstreamVerdict};
#[cfg(feature = "validate")]
pub use verify::CompiledSchema;
pub use verify::{LineKind, ProcessEnd, Report, Verdict, Verifier, VerifyOptions};
