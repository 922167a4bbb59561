//! `cat`, `head` and `tail`: bounded reads of file content (§15), as typed `content` and
//! `binary` events in machine mode and as the file's bytes for a person.
//!
//! Human mode is GNU's (uutils, `src/gnu.rs`); this is machine mode.
//!
//! Why this file is whole (over 1,000 lines): `cat`, `head` and `tail` share the budget and
//! cursor logic below, and the sample that decides a file's encoding; `tail -f` is
//! `src/follow.rs`.
//!
//! # Bounds and cursors
//!
//! A run writes at most `--max-bytes` bytes of file *content* (64 KiB by default; the JSON
//! around it is not counted). When the budget cuts a file, the summary says `truncated: true`
//! and its `next_cursor` names the file and the byte offset where the next read starts; the
//! same arguments with `--cursor` (and any `--max-bytes`) continue there, so paging
//! reassembles the selected bytes exactly. Where a cut falls:
//!
//! - never inside a UTF-8 character (nor inside a UTF-16 code unit or surrogate pair): the cut
//!   backs up to the character's first byte;
//! - on a line boundary when one lies within [`LINE_SNAP`] (256) bytes before the cut: the
//!   chunk ends just after that newline, so pages usually hold whole lines;
//! - the same rules split a long read into `content` events of at most [`EVENT_BYTES`]
//!   (16 KiB), so each line of the stream stays small;
//! - a budget smaller than one character still makes progress: the chunk is that character
//!   (at most 3 bytes over the budget).
//!
//! A cut in standard input cannot be resumed: the summary is `truncated` with no cursor.
//!
//! # Selections
//!
//! `cat` reads whole files; `head -n N` / `-c N` the first N lines or bytes (`-n -N`/`-c -N`:
//! all but the last N), `tail -n N` / `-c N` the last ones (`-n +K`/`-c +K`: from line or
//! byte K), as GNU's do, with GNU's multiplier suffixes (`b` 512, `kB` 1000, `K` 1024, `MB`,
//! `M`, `GB`, `G`, ...). `--line-range A:B` (all three) selects lines A to B, 1-based and
//! inclusive: `A:` runs to the end, `:B` starts at line 1, `A` is one line. Lines end at `\n`
//! (in a UTF-16 file, at the code unit U+000A); a last line without one is still a line.
//!
//! # Text, encodings and binary files
//!
//! Each file is judged once, from its first [`SAMPLE_BYTES`] (8 KiB), whatever part is read:
//!
//! - a UTF-16 byte-order mark (`FF FE`, `FE FF`) makes it UTF-16, decoded to text;
//! - a NUL byte makes it binary; so does a sample whose bytes are mostly (30 % or more)
//!   invalid UTF-8, or invalid UTF-8 and C0 controls other than whitespace and ESC. An
//!   incomplete character at the very end of the sample is not counted as invalid: the file
//!   goes on past it, and a cut character must never make a text file look binary;
//! - otherwise it is text. Each `content` event carries the encoding of its own bytes:
//!   `ascii`, `utf-8`, `utf-16le`/`utf-16be` (with `text`), or `unknown` (bytes that are not
//!   valid in the file's encoding, e.g. Latin-1, with `bytes_base64`).
//!
//! A binary file gets one `binary` event (its size, the reason, the offset of the first NUL)
//! instead of its bytes; `--binary` reads it as `content` with encoding `binary` and
//! `bytes_base64` (raw bytes in human mode).
//!
//! # Example stream
//!
//! `aoi-coreutils cat notes.txt --max-bytes 6 --output jsonl` on a file holding `"hello\nworld\n"`:
//!
//! ```text
//! {"type":"aoi:meta",...,"command":"cat"}
//! {"type":"content","aoi":{"seq":1,...},"path":"notes.txt","offset":0,"length":6,"text":"hello\n","encoding":"ascii","first_line":1,"last_line":1,"eof":false}
//! {"type":"aoi:summary",...,"ok":true,"count":1,"truncated":true,"next_cursor":"AQ...","properties":{"content_bytes":6}}
//! ```
//!
//! # Errors
//!
//! Every operand that cannot be read is an item-scope `aoi:error` (§9.1) and makes the run
//! `ok:false`: a missing file `not_found`, a directory `validation` `IS_A_DIRECTORY`, a
//! permission refused `authz`; the other operands are still read.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::{App, Limits};
use aoi::surface::cursor::CursorCodec;
use aoi::surface::flags::GlobalArgs;
use aoi::{DomainEvent, EmitError, Emitter, ErrorEvent, Outcome};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use clap::Args;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::paths::{io_error, path_key, path_text};
use crate::DEFAULT_MAX_BYTES;

/// The most file bytes one `content` event carries.
pub const EVENT_BYTES: usize = 16 * 1024;

/// The bytes at the start of a file that decide whether it is text, and in which encoding.
pub const SAMPLE_BYTES: usize = 8 * 1024;

/// How far before a cut a newline may lie for the cut to move back to it.
pub const LINE_SNAP: usize = 256;

/// Bytes read past a cut: enough to finish any character and to see whether the file goes on.
/// The names of the three commands, everywhere they are named.
pub const CAT: &str = "cat";
/// See [`CAT`].
pub const HEAD: &str = "head";
/// See [`CAT`].
pub const TAIL: &str = "tail";

const LOOKAHEAD: usize = 4;

/// Bytes per read when scanning for line boundaries.
const SCAN_BYTES: usize = 64 * 1024;

/// The bounds every reader shares (§15).
#[derive(Debug, Clone, Args)]
pub struct ReadBounds {
    /// Write at most N bytes of file content in this run (default 64 KiB); the rest is
    /// reachable with --cursor.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BYTES,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_bytes: u64,

    /// Continue where a previous run stopped (the `next_cursor` of its summary).
    #[arg(long, value_name = "TOKEN")]
    pub cursor: Option<String>,

    /// Read binary files too: their bytes as base64 (machine mode) or raw (human mode).
    #[arg(long)]
    pub binary: bool,
}

/// Print files (bounded: 64 KiB of content per run, resumable with --cursor).
// The command's description, which `aoi-coreutils cat --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct CatArgs {
    /// Files to read, in order (`-` or none: standard input).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Only lines A to B, 1-based and inclusive (`A:B`, `A:` to the end, `:B`, or `A`).
    #[arg(long = "line-range", value_name = "A:B", value_parser = parse_line_range)]
    pub line_range: Option<LineRange>,

    #[command(flatten)]
    pub display: crate::display::CatDisplay,

    #[command(flatten)]
    pub bounds: ReadBounds,
}

/// Print the first lines or bytes of files (bounded; GNU -n/-c).
///
/// The command's description (`aoi-coreutils head --help`, `capabilities` and MCP show
/// it. It is here, not on the variant, because the subcommands are deferred.)
#[derive(Debug, Clone, Args)]
pub struct HeadArgs {
    /// Files to read, in order (`-` or none: standard input).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The first NUM lines (default 10); with a leading `-`, all but the last NUM.
    #[arg(short = 'n', long = "lines", value_name = "[-]NUM", allow_hyphen_values = true,
          value_parser = parse_count, conflicts_with = "bytes")]
    pub lines: Option<Count>,

    /// The first NUM bytes; with a leading `-`, all but the last NUM.
    #[arg(short = 'c', long = "bytes", value_name = "[-]NUM", allow_hyphen_values = true,
          value_parser = parse_count)]
    pub bytes: Option<Count>,

    #[command(flatten)]
    pub part: Part,
}

/// Print the last lines or bytes of files (bounded; GNU -n/-c, -n +K).
///
/// The command's description (`aoi-coreutils tail --help`, `capabilities` and MCP show
/// it. It is here, not on the variant, because the subcommands are deferred.)
#[derive(Debug, Clone, Args)]
pub struct TailArgs {
    /// Files to read, in order (`-` or none: standard input).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The last NUM lines (default 10); `+NUM`: from line NUM on.
    #[arg(short = 'n', long = "lines", value_name = "[+]NUM", allow_hyphen_values = true,
          value_parser = parse_count, conflicts_with = "bytes")]
    pub lines: Option<Count>,

    /// The last NUM bytes; `+NUM`: from byte NUM on.
    #[arg(short = 'c', long = "bytes", value_name = "[+]NUM", allow_hyphen_values = true,
          value_parser = parse_count)]
    pub bytes: Option<Count>,

    /// Keep reading as the files grow. Machine mode: an unbounded stream (§4.2) of
    /// `content` events as data is appended, an `aoi:heartbeat` after 10 s of quiet, until
    /// interrupted (or --pid ends); `--follow=name` follows the name (rotation).
    #[arg(short = 'f', long = "follow", value_name = "HOW", num_args = 0..=1,
          require_equals = true, default_missing_value = "descriptor",
          value_parser = ["descriptor", "name"])]
    pub follow: Option<String>,

    /// `--follow=name --retry`: follow a name through rotation, waiting for it to appear.
    #[arg(short = 'F')]
    pub follow_name: bool,

    /// Keep trying to open a file that is not there (with --follow=name).
    #[arg(long = "retry")]
    pub retry: bool,

    /// Seconds between polls of a followed file (default 1).
    #[arg(short = 's', long = "sleep-interval", value_name = "N")]
    pub sleep_interval: Option<f64>,

    /// With -f, stop once process PID is gone.
    #[arg(long = "pid", value_name = "PID")]
    pub pid: Option<i32>,

    /// With -f in machine mode, seconds of quiet before an `aoi:heartbeat` (default 10).
    #[arg(long = "heartbeat", value_name = "SECONDS")]
    pub heartbeat: Option<f64>,

    #[command(flatten)]
    pub part: Part,
}

impl TailArgs {
    /// How `-f`/`-F` follow, when they are given.
    fn follow(&self) -> Option<crate::follow::Follow> {
        if self.follow.is_none() && !self.follow_name {
            return None;
        }
        let seconds = self
            .sleep_interval
            .filter(|s| s.is_finite() && *s >= 0.0)
            .unwrap_or(1.0);
        let heartbeat = self
            .heartbeat
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(crate::follow::HEARTBEAT, |s| {
                std::time::Duration::from_secs_f64(s.min(86_400.0))
            });
        Some(crate::follow::Follow {
            by_name: self.follow_name || self.follow.as_deref() == Some("name"),
            sleep: std::time::Duration::from_secs_f64(seconds.min(3600.0)),
            pid: self.pid,
            heartbeat,
        })
    }
}

/// What `head` and `tail` share besides their counts: headers, a line range, the bounds.
#[derive(Debug, Clone, Args)]
pub struct Part {
    /// Never print `==> name <==` headers (human mode; each event names its file).
    #[arg(short = 'q', long = "quiet", visible_alias = "silent")]
    pub quiet: bool,

    /// Always print `==> name <==` headers (human mode; each event names its file).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// Only lines A to B, 1-based and inclusive (`A:B`, `A:` to the end, `:B`, or `A`).
    #[arg(long = "line-range", value_name = "A:B", value_parser = parse_line_range,
          conflicts_with_all = ["lines", "bytes"])]
    pub line_range: Option<LineRange>,

    #[command(flatten)]
    pub bounds: ReadBounds,
}

/// Lines `first` to `last`, 1-based and inclusive (`last: None`: to the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    /// The first line, at least 1.
    pub first: u64,
    /// The last line, at least `first`; `None` to the end of the file.
    pub last: Option<u64>,
}

/// The sign a `-n`/`-c` number was written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    /// `NUM`.
    None,
    /// `+NUM`.
    Plus,
    /// `-NUM`.
    Minus,
}

/// A `-n`/`-c` argument: a number of lines or bytes and its sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The number, multiplier applied (saturating, as GNU's).
    pub n: u64,
    /// How it was written.
    pub sign: Sign,
}

/// Parses `--line-range`.
pub fn parse_line_range(text: &str) -> Result<LineRange, String> {
    let number = |s: &str| -> Result<u64, String> {
        match s.trim().parse::<u64>() {
            Ok(0) => Err("line numbers start at 1".to_owned()),
            Ok(n) => Ok(n),
            Err(_) => Err(format!("{s:?} is not a line number")),
        }
    };
    let (first, last) = match text.split_once(':') {
        None => {
            let n = number(text)?;
            (n, Some(n))
        }
        Some((a, b)) => {
            let first = if a.trim().is_empty() { 1 } else { number(a)? };
            let last = if b.trim().is_empty() {
                None
            } else {
                Some(number(b)?)
            };
            (first, last)
        }
    };
    if last.is_some_and(|l| l < first) {
        return Err(format!("the range {text:?} ends before it starts"));
    }
    Ok(LineRange { first, last })
}

/// Parses a GNU `-n`/`-c` number: an optional sign, digits, an optional multiplier suffix
/// (`b` 512; `k`/`K`/`KiB` 1024, `kB`/`KB` 1000; likewise `M`, `G`, `T`, `P`, `E`).
pub fn parse_count(text: &str) -> Result<Count, String> {
    let (sign, rest) = match text.as_bytes().first() {
        Some(b'+') => (Sign::Plus, &text[1..]),
        Some(b'-') => (Sign::Minus, &text[1..]),
        _ => (Sign::None, text),
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(format!("{text:?} is not a number"));
    }
    let (number, suffix) = rest.split_at(digits);
    let multiplier: u64 = match suffix {
        "" => 1,
        "b" => 512,
        _ => {
            let (letter, tail) = suffix.split_at(1);
            let power = match letter {
                "k" | "K" => 1,
                "m" | "M" => 2,
                "g" | "G" => 3,
                "t" | "T" => 4,
                "p" | "P" => 5,
                "e" | "E" => 6,
                _ => return Err(format!("{text:?}: unknown suffix {suffix:?}")),
            };
            let base: u64 = match tail {
                "" | "iB" => 1024,
                "B" => 1000,
                _ => return Err(format!("{text:?}: unknown suffix {suffix:?}")),
            };
            base.saturating_pow(power)
        }
    };
    // Too many digits for u64 means "more than any file holds", as GNU takes it.
    let n = number.parse::<u64>().unwrap_or(u64::MAX);
    Ok(Count {
        n: n.saturating_mul(multiplier),
        sign,
    })
}

/// One `content` event: a run of a file's bytes, as text when they are valid in its
/// encoding, else as base64.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Content {
    /// The file as given (`-` for standard input).
    pub path: String,
    /// The byte offset of this chunk in the file.
    pub offset: u64,
    /// The chunk's length in bytes (of the file, not of `text`).
    pub length: u64,
    /// The chunk decoded (exactly these bytes, a byte-order mark included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The chunk's bytes, base64 (standard alphabet, padded), when it is not text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_base64: Option<String>,
    /// What the bytes are.
    pub encoding: ContentEncoding,
    /// The line (1-based) the chunk starts in, when known (not after `tail -n N`/`-c N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_line: Option<u64>,
    /// The line its last byte belongs to, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_line: Option<u64>,
    /// The chunk ends at the end of the file.
    pub eof: bool,
}

impl DomainEvent for Content {
    const TYPE: &'static str = "content";
}

/// The encoding of a `content` event's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub enum ContentEncoding {
    /// 7-bit ASCII (also valid UTF-8), in `text`.
    #[serde(rename = "ascii")]
    Ascii,
    /// UTF-8, in `text`.
    #[serde(rename = "utf-8")]
    Utf8,
    /// UTF-16, little-endian (the file has a byte-order mark), decoded into `text`.
    #[serde(rename = "utf-16le")]
    Utf16Le,
    /// UTF-16, big-endian (the file has a byte-order mark), decoded into `text`.
    #[serde(rename = "utf-16be")]
    Utf16Be,
    /// Text in no encoding this tool decodes (e.g. Latin-1), in `bytes_base64`.
    #[serde(rename = "unknown")]
    Unknown,
    /// A binary file read with `--binary`, in `bytes_base64`.
    #[serde(rename = "binary")]
    Binary,
}

/// One `binary` event: a file judged binary, whose bytes were not read (see `--binary`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Binary {
    /// The file as given (`-` for standard input).
    pub path: String,
    /// Its size in bytes (absent for standard input or a pipe).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Why it was judged binary.
    pub reason: BinaryReason,
    /// The offset of the first NUL byte, when that was the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nul_offset: Option<u64>,
}

impl DomainEvent for Binary {
    const TYPE: &'static str = "binary";
}

/// Why a file was judged binary (from its first 8 KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BinaryReason {
    /// It holds a NUL byte.
    NulByte,
    /// 30 % or more of its bytes are invalid UTF-8.
    InvalidUtf8,
    /// 30 % or more of its bytes are invalid UTF-8 or control bytes that text does not use.
    ControlBytes,
}

/// What part of each file a reader selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
enum Select {
    /// The whole file.
    All,
    /// Lines `first..=last` (1-based; `last: None` to the end).
    Lines { first: u64, last: Option<u64> },
    /// Bytes from offset `start` to `end` (exclusive; `None` to the end).
    Bytes { start: u64, end: Option<u64> },
    /// The last N lines.
    LastLines(u64),
    /// The last N bytes.
    LastBytes(u64),
    /// All but the last N lines.
    AllButLastLines(u64),
    /// All but the last N bytes.
    AllButLastBytes(u64),
}

impl Select {
    fn range(range: LineRange) -> Select {
        Select::Lines {
            first: range.first,
            last: range.last,
        }
    }

    fn head(args: &HeadArgs) -> Select {
        if let Some(range) = args.part.line_range {
            return Select::range(range);
        }
        match (args.bytes, args.lines) {
            (Some(c), _) if c.sign == Sign::Minus => Select::AllButLastBytes(c.n),
            (Some(c), _) => Select::Bytes {
                start: 0,
                end: Some(c.n),
            },
            (None, Some(n)) if n.sign == Sign::Minus => Select::AllButLastLines(n.n),
            (None, Some(n)) => Select::Lines {
                first: 1,
                last: Some(n.n),
            },
            (None, None) => Select::Lines {
                first: 1,
                last: Some(10),
            },
        }
    }

    fn tail(args: &TailArgs) -> Select {
        if let Some(range) = args.part.line_range {
            return Select::range(range);
        }
        match (args.bytes, args.lines) {
            (Some(c), _) if c.sign == Sign::Plus => Select::Bytes {
                start: c.n.saturating_sub(1),
                end: None,
            },
            (Some(c), _) => Select::LastBytes(c.n),
            (None, Some(n)) if n.sign == Sign::Plus => Select::Lines {
                first: n.n.max(1),
                last: None,
            },
            (None, Some(n)) => Select::LastLines(n.n),
            (None, None) => Select::LastLines(10),
        }
    }
}

/// Where a selection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// At the end of the file.
    Eof,
    /// At this byte offset (or the end of the file, if sooner).
    Offset(u64),
    /// After the newline that ends this line (or at the end of the file).
    AfterLine(u64),
}

/// How a file's bytes are framed into characters and lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// UTF-8 (or ASCII, or text in an unknown 8-bit encoding): lines end at `\n`.
    Utf8,
    /// UTF-16 with a byte-order mark: lines end at the code unit U+000A.
    Utf16 { big_endian: bool },
    /// A binary file read with `--binary`: cut anywhere, lines end at `\n`.
    Raw,
}

/// What the sample says a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    Text(Form),
    Binary(BinaryReason, Option<u64>),
}

/// Judges a file from `sample`, its first bytes; `whole` when the sample is the whole file
/// (then an incomplete character at its end is invalid, not cut).
fn judge(sample: &[u8], whole: bool) -> Judged {
    let utf32 = sample.starts_with(&[0xFF, 0xFE, 0, 0]) || sample.starts_with(&[0, 0, 0xFE, 0xFF]);
    if !utf32 {
        if sample.starts_with(&[0xFF, 0xFE]) {
            return Judged::Text(Form::Utf16 { big_endian: false });
        }
        if sample.starts_with(&[0xFE, 0xFF]) {
            return Judged::Text(Form::Utf16 { big_endian: true });
        }
    }
    if let Some(at) = memchr::memchr(0, sample) {
        return Judged::Binary(BinaryReason::NulByte, Some(at as u64));
    }
    let checked = if whole {
        sample
    } else {
        &sample[..utf8_boundary(sample, sample.len())]
    };
    let mut invalid = 0usize;
    let mut controls = 0usize;
    for chunk in checked.utf8_chunks() {
        invalid += chunk.invalid().len();
        controls += chunk
            .valid()
            .bytes()
            .filter(|b| matches!(b, 0x01..=0x07 | 0x0E..=0x1A | 0x1C..=0x1F | 0x7F))
            .count();
    }
    let dense = |n: usize| n * 100 >= checked.len() * 30 && n > 0;
    if dense(invalid) {
        Judged::Binary(BinaryReason::InvalidUtf8, None)
    } else if dense(invalid + controls) {
        Judged::Binary(BinaryReason::ControlBytes, None)
    } else {
        Judged::Text(Form::Utf8)
    }
}

/// The length of the UTF-8 sequence a lead byte starts (1 for ASCII and invalid bytes).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

/// `at`, or the start of the UTF-8 character that `at` would cut (`buf[at]` is the byte after
/// the cut; at the end of `buf`, the start of an incomplete character there).
fn utf8_boundary(buf: &[u8], at: usize) -> usize {
    let continuation = |b: u8| b & 0xC0 == 0x80;
    if at < buf.len() && !continuation(buf[at]) {
        return at;
    }
    for back in 1..=3.min(at) {
        let i = at - back;
        if !continuation(buf[i]) {
            return if utf8_len(buf[i]) > back { i } else { at };
        }
    }
    at
}

/// The end (exclusive) of the newline whose `\n` byte is at `i`, if it is one in `form`
/// (`base` is the file offset of `buf[0]`: a UTF-16 unit starts at an even offset).
fn newline_end(form: Form, base: u64, buf: &[u8], i: usize) -> Option<usize> {
    match form {
        Form::Utf8 | Form::Raw => Some(i + 1),
        Form::Utf16 { big_endian: false } => {
            ((base + i as u64).is_multiple_of(2) && buf.get(i + 1) == Some(&0)).then_some(i + 2)
        }
        Form::Utf16 { big_endian: true } => {
            ((base + i as u64) % 2 == 1 && i > 0 && buf[i - 1] == 0).then_some(i + 1)
        }
    }
}

/// The end of the `n`th newline in `buf` (0-based), if there are that many.
fn nth_newline_end(form: Form, base: u64, buf: &[u8], n: u64) -> Option<usize> {
    let n = usize::try_from(n).ok()?;
    if form == Form::Utf8 || form == Form::Raw {
        return memchr::memchr_iter(b'\n', buf).nth(n).map(|i| i + 1);
    }
    memchr::memchr_iter(b'\n', buf)
        .filter_map(|i| newline_end(form, base, buf, i))
        .nth(n)
}

/// The end of the last newline in `buf`.
fn last_newline_end(form: Form, base: u64, buf: &[u8]) -> Option<usize> {
    memchr::memrchr_iter(b'\n', buf).find_map(|i| newline_end(form, base, buf, i))
}

/// The number of newlines in `buf`.
fn count_newlines(form: Form, base: u64, buf: &[u8]) -> u64 {
    match form {
        Form::Utf8 | Form::Raw => buf.iter().filter(|b| **b == b'\n').count() as u64,
        _ => memchr::memchr_iter(b'\n', buf)
            .filter_map(|i| newline_end(form, base, buf, i))
            .count() as u64,
    }
}

/// Where to cut `buf` (the file from offset `base`, with at least one byte past `at`) at or
/// before `at`: never inside a character, after a newline within [`LINE_SNAP`] bytes before,
/// and never at 0 (a chunk always makes progress).
fn snap(form: Form, base: u64, buf: &[u8], at: usize) -> usize {
    let mut cut = match form {
        Form::Raw => return at.max(1).min(buf.len()),
        Form::Utf8 => utf8_boundary(buf, at),
        Form::Utf16 { big_endian } => {
            let mut cut = at;
            if (base + cut as u64) % 2 == 1 {
                cut -= 1;
            }
            if cut >= 2 && is_high_surrogate(utf16_unit(buf, cut - 2, big_endian)) {
                cut -= 2;
            }
            cut
        }
    };
    let from = cut.saturating_sub(LINE_SNAP);
    if let Some(end) = last_newline_end(form, base + from as u64, &buf[from..cut]) {
        cut = from + end;
    }
    if cut == 0 {
        cut = match form {
            Form::Utf16 { big_endian } if buf.len() >= 4 => {
                if is_high_surrogate(utf16_unit(buf, 0, big_endian)) {
                    4
                } else {
                    2
                }
            }
            Form::Utf16 { .. } => buf.len(),
            _ => utf8_len(buf[0]),
        };
    }
    cut.min(buf.len())
}

fn utf16_unit(buf: &[u8], i: usize, big_endian: bool) -> u16 {
    let pair = [buf[i], buf[i + 1]];
    if big_endian {
        u16::from_be_bytes(pair)
    } else {
        u16::from_le_bytes(pair)
    }
}

fn is_high_surrogate(unit: u16) -> bool {
    (0xD800..0xDC00).contains(&unit)
}

/// A chunk's bytes as an event payload: text and its encoding, or base64.
fn payload(form: Form, bytes: &[u8]) -> (ContentEncoding, Option<String>, Option<String>) {
    let text = match form {
        Form::Raw => None,
        Form::Utf8 => std::str::from_utf8(bytes).ok().map(|t| {
            let encoding = if t.is_ascii() {
                ContentEncoding::Ascii
            } else {
                ContentEncoding::Utf8
            };
            (encoding, t.to_owned())
        }),
        Form::Utf16 { big_endian } => decode_utf16(bytes, big_endian).map(|t| {
            let encoding = if big_endian {
                ContentEncoding::Utf16Be
            } else {
                ContentEncoding::Utf16Le
            };
            (encoding, t)
        }),
    };
    match text {
        Some((encoding, text)) => (encoding, Some(text), None),
        None => {
            let encoding = if form == Form::Raw {
                ContentEncoding::Binary
            } else {
                ContentEncoding::Unknown
            };
            (encoding, None, Some(STANDARD.encode(bytes)))
        }
    }
}

/// UTF-16 bytes as text, or `None` for an odd length or an unpaired surrogate.
fn decode_utf16(bytes: &[u8], big_endian: bool) -> Option<String> {
    if bytes.len() % 2 == 1 {
        return None;
    }
    let units = bytes.chunks_exact(2).map(|p| utf16_unit(p, 0, big_endian));
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .ok()
}

/// A file to read: a regular file read by offset, or a stream (standard input, a pipe, a
/// device) whose bytes are kept as they are read, so any offset already read can be read again.
enum Source {
    File {
        file: File,
        size: u64,
    },
    Stream {
        reader: File,
        data: Vec<u8>,
        done: bool,
    },
}

impl Source {
    /// Opens `path` (`-`: standard input); a directory is refused with `EISDIR`.
    fn open(path: &Path) -> io::Result<Source> {
        let file = if path.as_os_str() == "-" {
            File::from(io::stdin().as_fd().try_clone_to_owned()?)
        } else {
            File::open(path)?
        };
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Err(io::Error::from_raw_os_error(21));
        }
        Ok(if meta.is_file() && path.as_os_str() != "-" {
            Source::File {
                file,
                size: meta.len(),
            }
        } else {
            Source::Stream {
                reader: file,
                data: Vec::new(),
                done: false,
            }
        })
    }

    /// The size, when known without reading everything (a regular file).
    fn known_size(&self) -> Option<u64> {
        match self {
            Source::File { size, .. } => Some(*size),
            Source::Stream { .. } => None,
        }
    }

    /// The size; a stream is read to its end.
    fn len(&mut self) -> io::Result<u64> {
        match self {
            Source::File { size, .. } => Ok(*size),
            Source::Stream { .. } => {
                self.fill(u64::MAX)?;
                match self {
                    Source::Stream { data, .. } => Ok(data.len() as u64),
                    Source::File { size, .. } => Ok(*size),
                }
            }
        }
    }

    /// Reads a stream until it holds `upto` bytes or ends.
    fn fill(&mut self, upto: u64) -> io::Result<()> {
        let Source::Stream { reader, data, done } = self else {
            return Ok(());
        };
        while !*done && (data.len() as u64) < upto {
            let old = data.len();
            data.resize(old + SCAN_BYTES, 0);
            match reader.read(&mut data[old..]) {
                Ok(0) => {
                    data.truncate(old);
                    *done = true;
                }
                Ok(n) => data.truncate(old + n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => data.truncate(old),
                Err(e) => {
                    data.truncate(old);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Reads as many bytes as `buf` holds from `offset`, fewer only at the end of the file.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::File { file, size } => {
                let mut filled = 0;
                while filled < buf.len() {
                    match file.read_at(&mut buf[filled..], offset + filled as u64) {
                        Ok(0) => break,
                        // A short read that reaches the size seen at open is the end (no
                        // second read to learn it); a file that grew is read further next time.
                        Ok(n)
                            if filled + n < buf.len() && offset + (filled + n) as u64 >= *size =>
                        {
                            filled += n;
                            break;
                        }
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(filled)
            }
            Source::Stream { .. } => {
                self.fill(offset.saturating_add(buf.len() as u64))?;
                let Source::Stream { data, .. } = self else {
                    return Ok(0);
                };
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let n = buf.len().min(data.len() - start);
                buf[..n].copy_from_slice(&data[start..start + n]);
                Ok(n)
            }
        }
    }
}

/// Where a selection starts in a file, and the line number there when known.
fn start_of(src: &mut Source, select: Select, form: Form) -> io::Result<(u64, Option<u64>)> {
    Ok(match select {
        Select::All | Select::AllButLastLines(_) | Select::AllButLastBytes(_) => (0, Some(1)),
        Select::Lines { first, .. } => (line_start(src, first, form)?, Some(first)),
        Select::Bytes { start, .. } => (start, (start == 0).then_some(1)),
        Select::LastLines(n) => (last_lines_start(src, n, form)?, None),
        Select::LastBytes(n) => (src.len()?.saturating_sub(n), None),
    })
}

/// Where a selection ends.
fn end_of(src: &mut Source, select: Select, form: Form) -> io::Result<End> {
    Ok(match select {
        Select::All | Select::LastLines(_) | Select::LastBytes(_) => End::Eof,
        Select::Lines { last, .. } => last.map_or(End::Eof, End::AfterLine),
        Select::Bytes { end, .. } => end.map_or(End::Eof, End::Offset),
        Select::AllButLastLines(n) => End::Offset(last_lines_start(src, n, form)?),
        Select::AllButLastBytes(n) => End::Offset(src.len()?.saturating_sub(n)),
    })
}

/// The offset where line `line` (1-based) starts, or the end of the file if it has fewer.
fn line_start(src: &mut Source, line: u64, form: Form) -> io::Result<u64> {
    let mut need = line - 1;
    let mut pos = 0u64;
    let mut buf = vec![0u8; SCAN_BYTES];
    while need > 0 {
        let got = src.read_at(pos, &mut buf)?;
        if got == 0 {
            return Ok(pos);
        }
        let block = &buf[..got];
        if let Some(end) = nth_newline_end(form, pos, block, need - 1) {
            return Ok(pos + end as u64);
        }
        need -= count_newlines(form, pos, block);
        pos += got as u64;
    }
    Ok(pos)
}

/// The offset where the last `n` lines start (a last line without a newline counts).
fn last_lines_start(src: &mut Source, n: u64, form: Form) -> io::Result<u64> {
    let size = src.len()?;
    if n == 0 {
        return Ok(size);
    }
    let unit = if matches!(form, Form::Utf16 { .. }) {
        2
    } else {
        1
    };
    let mut end = size;
    if size >= unit {
        let mut last = [0u8; 2];
        let got = src.read_at(size - unit, &mut last[..unit as usize])?;
        if newline_at_end(form, size - unit, &last[..got]) {
            end = size - unit;
        }
    }
    let mut need = n;
    let mut buf = vec![0u8; SCAN_BYTES];
    while end > 0 {
        let mut start = end.saturating_sub(SCAN_BYTES as u64);
        if unit == 2 && start % 2 == 1 {
            start += 1;
        }
        if start == end {
            break;
        }
        let len = (end - start) as usize;
        let got = src.read_at(start, &mut buf[..len])?;
        let block = &buf[..got];
        for i in memchr::memrchr_iter(b'\n', block) {
            if let Some(e) = newline_end(form, start, block, i) {
                need -= 1;
                if need == 0 {
                    return Ok(start + e as u64);
                }
            }
        }
        end = start;
    }
    Ok(0)
}

/// Whether `tail` (the file's last unit, at `offset`) is a newline.
fn newline_at_end(form: Form, offset: u64, tail: &[u8]) -> bool {
    match tail.iter().rposition(|b| *b == b'\n') {
        Some(i) => newline_end(form, offset, tail, i) == Some(tail.len()),
        None => false,
    }
}

/// One chunk a read produced: its length, whether the selection ends with it, and whether
/// the file does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunk {
    len: usize,
    ends: bool,
    eof: bool,
}

/// Reads the next chunk of a selection from `pos` (on line `line`) into `buf`: at most
/// `limit` bytes, cut by [`snap`] when the selection goes on.
fn next_chunk(
    src: &mut Source,
    pos: u64,
    end: End,
    line: Option<u64>,
    form: Form,
    limit: usize,
    buf: &mut Vec<u8>,
) -> io::Result<Chunk> {
    let cap = match end {
        End::Offset(e) => usize::try_from(e.saturating_sub(pos)).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let want = limit.min(cap);
    let request = want + LOOKAHEAD;
    buf.resize(request, 0);
    let got = src.read_at(pos, &mut buf[..request])?;
    buf.truncate(got);
    let at_eof = got < request;
    let mut rest = got.min(cap);
    let mut complete = at_eof || cap <= got;
    if let (End::AfterLine(last), Some(line)) = (end, line) {
        if last < line {
            rest = 0;
            complete = true;
        } else if let Some(e) = nth_newline_end(form, pos, &buf[..rest], last - line) {
            rest = e;
            complete = true;
        }
    }
    if complete && rest <= want {
        return Ok(Chunk {
            len: rest,
            ends: true,
            eof: at_eof && rest == got,
        });
    }
    Ok(Chunk {
        len: snap(form, pos, buf, want),
        ends: false,
        eof: false,
    })
}

/// A cursor's position: the operand's index and key, the offset to resume at (`None`: the
/// selection's start) and the line there, when known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Position {
    f: usize,
    k: String,
    #[serde(default)]
    o: Option<u64>,
    #[serde(default)]
    l: Option<u64>,
}

/// What decides the bytes a run selects, which a cursor is bound to (not the budget).
#[derive(Debug, Serialize)]
struct Shape {
    files: Vec<String>,
    select: Select,
    binary: bool,
}

/// One chunk as a sink sees it.
#[derive(Debug)]
struct Piece<'a> {
    offset: u64,
    bytes: &'a [u8],
    form: Form,
    first_line: Option<u64>,
    last_line: Option<u64>,
    eof: bool,
}

/// Where a read goes: events, or bytes for a person.
trait Sink {
    type Error;
    /// A file begins; `false` to skip it (its problem was reported).
    fn begin(&mut self, path: &Path) -> Result<bool, Self::Error>;
    /// The file was opened: what is read from it follows.
    fn opened(&mut self, path: &Path) -> Result<(), Self::Error>;
    fn piece(&mut self, piece: &Piece<'_>) -> Result<(), Self::Error>;
    fn binary(&mut self, event: Binary) -> Result<(), Self::Error>;
    fn error(&mut self, error: ErrorEvent) -> Result<(), Self::Error>;
}

/// Why a read stopped early: the sink failed, or the run cannot go on (a stale cursor).
enum Stop<E> {
    Sink(E),
    Run(Box<ErrorEvent>),
}

/// How a read went.
#[derive(Debug, Default)]
struct Report {
    /// An operand could not be read.
    failed: bool,
    /// Item errors reported.
    errors: usize,
    /// Content bytes written.
    bytes: u64,
    /// The budget cut the read: `Some(cursor position)`, `Some(None)` for standard input.
    cut: Option<Option<Position>>,
}

/// One reader's request: the operands, the selection, the bounds.
struct Request<'a> {
    files: Vec<PathBuf>,
    select: Select,
    bounds: &'a ReadBounds,
}

impl Request<'_> {
    fn codec(&self, command: &str) -> CursorCodec {
        let shape = Shape {
            files: self.files.iter().map(|f| path_key(f.as_os_str())).collect(),
            select: self.select,
            binary: self.bounds.binary,
        };
        CursorCodec::new(command, &shape)
    }
}

fn operands(files: &[PathBuf]) -> Vec<PathBuf> {
    if files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        files.to_vec()
    }
}

fn stale() -> ErrorEvent {
    crate::page::cursor_stale("the file got shorter than the cursor's offset")
}

/// Reads every operand in order into `sink`, within the budget.
fn read_all<S: Sink>(
    request: &Request<'_>,
    resume: Option<Position>,
    sink: &mut S,
) -> Result<Report, Stop<S::Error>> {
    let mut report = Report::default();
    let mut budget = request.bounds.max_bytes;
    if let Some(r) = &resume {
        let matches = request
            .files
            .get(r.f)
            .is_some_and(|f| path_key(f.as_os_str()) == r.k && f.as_os_str() != "-");
        if !matches {
            return Err(Stop::Run(Box::new(stale())));
        }
    }
    let mut buf = Vec::with_capacity(EVENT_BYTES + LOOKAHEAD);
    for (index, path) in request.files.iter().enumerate() {
        let here = match &resume {
            Some(r) if index < r.f => continue,
            Some(r) if index == r.f => Some(r),
            _ => None,
        };
        if budget == 0 {
            report.cut = Some((path.as_os_str() != "-").then(|| Position {
                f: index,
                k: path_key(path.as_os_str()),
                o: None,
                l: None,
            }));
            return Ok(report);
        }
        if !sink.begin(path).map_err(Stop::Sink)? {
            report.failed = true;
            report.errors += 1;
            continue;
        }
        let fail = |report: &mut Report, sink: &mut S, e: &io::Error| {
            report.failed = true;
            report.errors += 1;
            sink.error(io_error(path, e)).map_err(Stop::Sink)
        };
        let mut src = match Source::open(path) {
            Ok(src) => src,
            Err(e) => {
                fail(&mut report, sink, &e)?;
                continue;
            }
        };
        sink.opened(path).map_err(Stop::Sink)?;
        let mut sample = vec![0u8; SAMPLE_BYTES];
        let got = match src.read_at(0, &mut sample) {
            Ok(got) => got,
            Err(e) => {
                fail(&mut report, sink, &e)?;
                continue;
            }
        };
        let form = match judge(&sample[..got], got < SAMPLE_BYTES) {
            Judged::Text(form) => form,
            Judged::Binary(..) if request.bounds.binary => Form::Raw,
            Judged::Binary(reason, nul_offset) => {
                let event = Binary {
                    path: String::new(),
                    size: src.known_size(),
                    reason,
                    nul_offset,
                };
                sink.binary(event).map_err(Stop::Sink)?;
                continue;
            }
        };
        let span = match here {
            Some(Position { o: Some(o), l, .. }) => match src.len() {
                Ok(size) if *o > size => return Err(Stop::Run(Box::new(stale()))),
                Ok(_) => Ok((*o, *l)),
                Err(e) => Err(e),
            },
            _ => start_of(&mut src, request.select, form),
        };
        let (start, line) = match span {
            Ok(span) => span,
            Err(e) => {
                fail(&mut report, sink, &e)?;
                continue;
            }
        };
        let end = match end_of(&mut src, request.select, form) {
            Ok(end) => end,
            Err(e) => {
                fail(&mut report, sink, &e)?;
                continue;
            }
        };
        let (mut pos, mut line) = (start, line);
        loop {
            // A limit of the budget's size is a budget cut when it cuts; one of EVENT_BYTES
            // only splits events.
            let by_budget = budget <= EVENT_BYTES as u64;
            let limit = usize::try_from(budget.min(EVENT_BYTES as u64)).unwrap_or(EVENT_BYTES);
            let chunk = match next_chunk(&mut src, pos, end, line, form, limit, &mut buf) {
                Ok(chunk) => chunk,
                Err(e) => {
                    fail(&mut report, sink, &e)?;
                    break;
                }
            };
            let bytes = &buf[..chunk.len];
            let newlines = count_newlines(form, pos, bytes);
            let ends_in_newline = last_newline_end(form, pos, bytes) == Some(bytes.len());
            let covered = (!bytes.is_empty()).then_some(()).and(line);
            let piece = Piece {
                offset: pos,
                bytes,
                form,
                first_line: covered,
                last_line: covered.map(|l| l + newlines - u64::from(ends_in_newline)),
                eof: chunk.eof,
            };
            sink.piece(&piece).map_err(Stop::Sink)?;
            budget = budget.saturating_sub(chunk.len as u64);
            report.bytes += chunk.len as u64;
            pos += chunk.len as u64;
            line = line.map(|l| l + newlines);
            if chunk.ends {
                break;
            }
            if by_budget || budget == 0 {
                report.cut = Some((path.as_os_str() != "-").then(|| Position {
                    f: index,
                    k: path_key(path.as_os_str()),
                    o: Some(pos),
                    l: line,
                }));
                return Ok(report);
            }
        }
    }
    Ok(report)
}

/// The machine-mode sink: `content`, `binary` and item-scope `aoi:error` events.
struct Events<'a, W: Write> {
    out: &'a mut Emitter<W>,
    path: String,
    /// Where each file's content ended when it reached the end of the file (`tail -f`
    /// follows from there).
    ends: std::collections::BTreeMap<String, u64>,
}

impl<W: Write> Sink for Events<'_, W> {
    type Error = EmitError;

    fn begin(&mut self, path: &Path) -> Result<bool, EmitError> {
        match path_text(path) {
            Ok(text) => {
                self.path = text;
                Ok(true)
            }
            Err(error) => {
                self.out.error(&error)?;
                Ok(false)
            }
        }
    }

    fn opened(&mut self, _path: &Path) -> Result<(), EmitError> {
        Ok(())
    }

    fn piece(&mut self, piece: &Piece<'_>) -> Result<(), EmitError> {
        if piece.eof {
            let end = piece.offset + piece.bytes.len() as u64;
            self.ends.insert(self.path.clone(), end);
        }
        let (encoding, text, bytes_base64) = payload(piece.form, piece.bytes);
        self.out.emit(&Content {
            path: self.path.clone(),
            offset: piece.offset,
            length: piece.bytes.len() as u64,
            text,
            bytes_base64,
            encoding,
            first_line: piece.first_line,
            last_line: piece.last_line,
            eof: piece.eof,
        })
    }

    fn binary(&mut self, mut event: Binary) -> Result<(), EmitError> {
        event.path = self.path.clone();
        self.out.emit(&event)
    }

    fn error(&mut self, error: ErrorEvent) -> Result<(), EmitError> {
        self.out.error(&error)
    }
}

/// Runs `cat`.
pub fn run_cat(app: &App, global: &GlobalArgs, args: CatArgs) -> ExitCode {
    let select = args.line_range.map_or(Select::All, Select::range);
    let request = Request {
        files: operands(&args.files),
        select,
        bounds: &args.bounds,
    };
    run(app, global, CAT, &request)
}

/// Runs `head`.
pub fn run_head(app: &App, global: &GlobalArgs, args: HeadArgs) -> ExitCode {
    let request = Request {
        files: operands(&args.files),
        select: Select::head(&args),
        bounds: &args.part.bounds,
    };
    run(app, global, HEAD, &request)
}

/// Runs `tail`.
pub fn run_tail(app: &App, global: &GlobalArgs, args: TailArgs) -> ExitCode {
    let request = Request {
        files: operands(&args.files),
        select: Select::tail(&args),
        bounds: &args.part.bounds,
    };
    match args.follow() {
        Some(how) if global.machine() => follow(app, global, &request, &how),
        _ => run(app, global, TAIL, &request),
    }
}

/// Reads `request` (after `resume`) as `content` and `binary` events into `out`: the report,
/// and where each file's content ended when it reached the end of the file.
fn read_events<W: Write>(
    out: &mut Emitter<W>,
    request: &Request<'_>,
    resume: Option<Position>,
) -> Result<(Report, std::collections::BTreeMap<String, u64>), aoi::Failure> {
    let mut sink = Events {
        out,
        path: String::new(),
        ends: std::collections::BTreeMap::new(),
    };
    match read_all(request, resume, &mut sink) {
        Ok(report) => Ok((report, sink.ends)),
        Err(Stop::Sink(e)) => Err(e.into()),
        Err(Stop::Run(e)) => Err((*e).into()),
    }
}

/// `tail -f` in machine mode: the last lines, then what is appended (`crate::follow`).
fn follow(
    app: &App,
    global: &GlobalArgs,
    request: &Request<'_>,
    how: &crate::follow::Follow,
) -> ExitCode {
    app.run_with(global, Limits::default(), |out| {
        let (report, ends) = read_events(out, request, None)?;
        out.flush()?;
        let files = crate::follow::operands(&request.files);
        let mut content = |out: &mut Emitter<_>, gained: crate::follow::Gained<'_>| {
            let (encoding, text, bytes_base64) = payload(Form::Utf8, gained.bytes);
            out.emit(&Content {
                path: gained.path.to_owned(),
                offset: gained.offset,
                length: gained.bytes.len() as u64,
                text,
                bytes_base64,
                encoding,
                first_line: None,
                last_line: None,
                eof: gained.eof,
            })
        };
        crate::follow::follow(out, &files, &ends, how, &mut content)?;
        Ok(if report.failed {
            Outcome::failed()
        } else {
            Outcome::success()
        })
    })
}

fn run(app: &App, global: &GlobalArgs, command: &str, request: &Request<'_>) -> ExitCode {
    let codec = request.codec(command);
    // The budget counts content, not stream bytes: the emitter is not bounded here.
    app.run_with(global, Limits::default(), |out| {
        let resume = request
            .bounds
            .cursor
            .as_deref()
            .map(|c| codec.decode::<Position>(c))
            .transpose()?;
        let (report, _) = read_events(out, request, resume)?;
        let mut outcome = if report.failed {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        outcome = outcome.property("content_bytes", report.bytes);
        if let Some(next) = report.cut {
            outcome = outcome.truncated(next.map(|p| codec.encode(&p)));
        }
        Ok(outcome)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_as_gnu_numbers() {
        let c = |s: &str| parse_count(s).unwrap();
        assert_eq!(
            c("10"),
            Count {
                n: 10,
                sign: Sign::None
            }
        );
        assert_eq!(
            c("+3"),
            Count {
                n: 3,
                sign: Sign::Plus
            }
        );
        assert_eq!(
            c("-2K"),
            Count {
                n: 2048,
                sign: Sign::Minus
            }
        );
        assert_eq!(c("1kB").n, 1000);
        assert_eq!(c("2b").n, 1024);
        assert_eq!(c("1MiB").n, 1 << 20);
        assert_eq!(c("99999999999999999999999").n, u64::MAX);
        assert!(parse_count("x").is_err());
        assert!(parse_count("5Q").is_err());
        assert!(parse_count("").is_err());
    }

    #[test]
    fn line_ranges_are_one_based_and_inclusive() {
        let r = |s: &str| parse_line_range(s).unwrap();
        assert_eq!(
            r("3:5"),
            LineRange {
                first: 3,
                last: Some(5)
            }
        );
        assert_eq!(
            r("3:"),
            LineRange {
                first: 3,
                last: None
            }
        );
        assert_eq!(
            r(":5"),
            LineRange {
                first: 1,
                last: Some(5)
            }
        );
        assert_eq!(
            r("7"),
            LineRange {
                first: 7,
                last: Some(7)
            }
        );
        assert!(parse_line_range("0:3").is_err());
        assert!(parse_line_range("5:3").is_err());
        assert!(parse_line_range("a:b").is_err());
    }

    #[test]
    fn a_character_cut_by_the_sample_does_not_make_text_binary() {
        let mut sample = vec![b'a'; SAMPLE_BYTES - 1];
        sample.push(0xE2); // the first byte of a 3-byte character
        assert_eq!(judge(&sample, false), Judged::Text(Form::Utf8));
        assert_eq!(
            judge(b"\xff\xfeh\0i\0", true),
            Judged::Text(Form::Utf16 { big_endian: false })
        );
        assert_eq!(
            judge(b"ab\0c", true),
            Judged::Binary(BinaryReason::NulByte, Some(2))
        );
        let noise: Vec<u8> = (0..200u8).map(|i| 0x80 | (i % 0x3f)).collect();
        assert!(matches!(
            judge(&noise, true),
            Judged::Binary(BinaryReason::InvalidUtf8, _)
        ));
        // Latin-1 prose: some invalid bytes, still text.
        assert_eq!(
            judge(b"caf\xe9 cr\xe8me br\xfbl\xe9e, a dessert", true),
            Judged::Text(Form::Utf8)
        );
    }

    #[test]
    fn cuts_never_split_a_character_and_prefer_a_line_end() {
        let text = "ab€cd".as_bytes(); // € is bytes 2..5
        assert_eq!(snap(Form::Utf8, 0, text, 3), 2);
        assert_eq!(snap(Form::Utf8, 0, text, 4), 2);
        assert_eq!(snap(Form::Utf8, 0, text, 5), 5);
        assert_eq!(snap(Form::Utf8, 0, "€x".as_bytes(), 1), 3, "progress");
        let mut lines = b"line one\n".to_vec();
        lines.extend(std::iter::repeat_n(b'x', 100));
        assert_eq!(snap(Form::Utf8, 0, &lines, 50), 9);
        let far: Vec<u8> = [&b"a\n"[..], &[b'y'; 400]].concat();
        assert_eq!(snap(Form::Utf8, 0, &far, 390), 390);
        // UTF-16LE: 'a', U+1F600 (a surrogate pair), 'b'
        let utf16: Vec<u8> = "a\u{1F600}b"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(snap(Form::Utf16 { big_endian: false }, 0, &utf16, 5), 2);
        assert_eq!(snap(Form::Utf16 { big_endian: false }, 0, &utf16, 6), 6);
    }

    #[test]
    fn utf16_newlines_are_code_units() {
        let le: Vec<u8> = "a\nb\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let form = Form::Utf16 { big_endian: false };
        assert_eq!(count_newlines(form, 0, &le), 2);
        assert_eq!(nth_newline_end(form, 0, &le, 0), Some(4));
        let be: Vec<u8> = "a\nb".encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(
            nth_newline_end(Form::Utf16 { big_endian: true }, 0, &be, 0),
            Some(4)
        );
        // U+0A00 is not a newline.
        assert_eq!(count_newlines(form, 0, &[0x00, 0x0A]), 0);
    }
}
