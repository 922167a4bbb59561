//! `aoi-coreutils`: the file tools agents run every minute, in Machine Mode (AOI-CLI v1.0-alpha).
//!
//! One multi-call binary (`aoi-coreutils ls -la`, or a link named `ls`), one capability
//! manifest, one event schema. Every read command is bounded by default (§15): at most
//! [`DEFAULT_LIMIT`] items or [`DEFAULT_MAX_BYTES`] bytes of output, with `truncated` and a
//! `next_cursor` over a deterministic order, so paging visits every item exactly once.
//! Problems with one item (a permission denied, a vanished file, a name that is not UTF-8)
//! are item-scope `aoi:error`s and the walk goes on; the summary says `partial` (§8.3, §9.1).

/// The number of items a read command returns unless `--limit` says otherwise: about what a
/// model can read in one turn.
pub const DEFAULT_LIMIT: usize = 100;

/// The bytes of output a read command writes unless `--max-bytes` says otherwise (64 KiB).
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024;

pub mod app;
pub mod clock;
pub mod display;
pub mod du;
pub mod entry;
pub mod find;
pub mod follow;
pub mod gnu;
pub mod grep;
pub mod ls;
mod mapped;
pub mod owners;
pub mod page;
pub mod paths;
pub mod read;
pub mod report;
pub mod stat;
pub mod wc;
pub mod write;
