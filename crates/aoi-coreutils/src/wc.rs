//! `wc`: newline, word, byte, character and line-width counts, one `count` event per file.
//!
//! The counts are GNU `wc`'s:
//!
//! - lines: `\n` bytes;
//! - words (`-w`): as GNU `wc` in the C locale, runs of printable non-space bytes separated
//!   by ASCII whitespace (space, `\t`, `\n`, `\v`, `\f`, `\r`); other bytes (controls, bytes
//!   of 0x80 and above) neither start nor end a word, so `LC_ALL=C wc -w` agrees on any input;
//! - bytes (`-c`): the size of a regular file without reading it, else the bytes read;
//! - characters (`-m`): UTF-8 characters, as GNU `wc -m` in a UTF-8 locale (bytes that are
//!   not valid UTF-8 are not characters);
//! - max line length (`-L`): the widest line's display width, as GNU `wc -L` in a UTF-8
//!   locale: tabs to the next multiple of 8, wide characters 2 columns, combining marks and
//!   controls 0; `\r` and `\f` end a line for this count.
//!
//! Without flags, lines, words and bytes (GNU's default). Human mode writes GNU's columns:
//! each count right-aligned to a common width (the digits of the total size of the regular
//! files, at least 7 when an operand is not a regular file, 1 for a single count of a single
//! operand), then the name; a `total` line for several files. Machine mode writes a `count`
//! event per file with the counts asked for, and the totals in the summary's
//! `properties.total` when there are several files.
//!
//! Throughput: files are read 256 KiB at a time; `-l` counts newlines in wide blocks the
//! compiler vectorizes, words take one table lookup per byte.
//!
//! ```text
//! {"type":"count","aoi":{"seq":1,...},"path":"notes.txt","lines":2,"words":2,"bytes":12}
//! ```

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::app::{App, Limits};
use aoi::surface::flags::GlobalArgs;
use aoi::surface::term::printable_line;
use aoi::{DomainEvent, ErrorEvent, Outcome};
use clap::Args;
use schemars::JsonSchema;
use serde::Serialize;
use unicode_width::UnicodeWidthChar;

use crate::paths::{io_error, path_text};
use crate::report::{human_exit, say_error};

/// The command's name, everywhere it is named.
pub const NAME: &str = "wc";

/// Bytes per read.
const BUFFER_BYTES: usize = 256 * 1024;

/// Print newline, word, byte, character counts and line widths, as GNU wc.
// The command's description, which `aoi-coreutils wc --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct WcArgs {
    /// Files to count, in order (`-` or none: standard input).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print the newline counts.
    #[arg(short = 'l', long = "lines")]
    pub lines: bool,
    /// Print the word counts.
    #[arg(short = 'w', long = "words")]
    pub words: bool,
    /// Print the byte counts.
    #[arg(short = 'c', long = "bytes")]
    pub bytes: bool,
    /// Print the character counts (UTF-8).
    #[arg(short = 'm', long = "chars")]
    pub chars: bool,
    /// Print the maximum display width of a line.
    #[arg(short = 'L', long = "max-line-length")]
    pub max_line_length: bool,
}

/// Which counts were asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Want {
    /// `-l`.
    pub lines: bool,
    /// `-w`.
    pub words: bool,
    /// `-c`.
    pub bytes: bool,
    /// `-m`.
    pub chars: bool,
    /// `-L`.
    pub max_line_length: bool,
}

impl Want {
    /// The flags' counts; none means lines, words and bytes, as GNU's.
    pub fn of(args: &WcArgs) -> Want {
        let want = Want {
            lines: args.lines,
            words: args.words,
            bytes: args.bytes,
            chars: args.chars,
            max_line_length: args.max_line_length,
        };
        if want == Want::default() {
            Want {
                lines: true,
                words: true,
                bytes: true,
                ..Want::default()
            }
        } else {
            want
        }
    }

    fn how_many(self) -> usize {
        [
            self.lines,
            self.words,
            self.bytes,
            self.chars,
            self.max_line_length,
        ]
        .iter()
        .filter(|w| **w)
        .count()
    }

    fn text(self) -> bool {
        self.chars || self.max_line_length
    }
}

/// The counts of one input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Newlines.
    pub lines: u64,
    /// Words.
    pub words: u64,
    /// Bytes.
    pub bytes: u64,
    /// UTF-8 characters.
    pub chars: u64,
    /// The widest line's display width.
    pub max_line_length: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.lines += other.lines;
        self.words += other.words;
        self.bytes += other.bytes;
        self.chars += other.chars;
        self.max_line_length = self.max_line_length.max(other.max_line_length);
    }
}

/// One `count` event: the counts of one file (those asked for).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Count {
    /// The file as given (`-` for standard input).
    pub path: String,
    /// Newlines (`-l`, and by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    /// Words (`-w`, and by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<u64>,
    /// Bytes (`-c`, and by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// UTF-8 characters (`-m`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chars: Option<u64>,
    /// The widest line's display width (`-L`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_line_length: Option<u64>,
}

impl DomainEvent for Count {
    const TYPE: &'static str = "count";
}

impl Count {
    fn new(path: String, counts: &Counts, want: Want) -> Count {
        let pick = |on: bool, v: u64| on.then_some(v);
        Count {
            path,
            lines: pick(want.lines, counts.lines),
            words: pick(want.words, counts.words),
            bytes: pick(want.bytes, counts.bytes),
            chars: pick(want.chars, counts.chars),
            max_line_length: pick(want.max_line_length, counts.max_line_length),
        }
    }
}

/// Byte classes for words (GNU in the C locale).
const NEUTRAL: u8 = 0;
const WORD: u8 = 1;
const SPACE: u8 = 2;

const CLASS: [u8; 256] = {
    let mut t = [NEUTRAL; 256];
    let mut b = 0x21;
    while b < 0x7F {
        t[b] = WORD;
        b += 1;
    }
    t[b' ' as usize] = SPACE;
    t[b'\t' as usize] = SPACE;
    t[b'\n' as usize] = SPACE;
    t[0x0B] = SPACE;
    t[0x0C] = SPACE;
    t[b'\r' as usize] = SPACE;
    t
};

/// Counts a stream fed in pieces.
#[derive(Debug, Clone)]
pub struct Counter {
    want: Want,
    counts: Counts,
    in_word: bool,
    line_width: u64,
}

impl Counter {
    /// A counter of `want`.
    pub fn new(want: Want) -> Counter {
        Counter {
            want,
            counts: Counts::default(),
            in_word: false,
            line_width: 0,
        }
    }

    /// Counts `buf`; with `-m`/`-L`, `buf` must not end inside a character unless it is the
    /// last piece (see [`complete_prefix`]).
    pub fn feed(&mut self, buf: &[u8]) {
        self.counts.bytes += buf.len() as u64;
        if self.want.words {
            self.words_and_lines(buf);
        } else if self.want.lines {
            self.counts.lines += count_newlines(buf);
        }
        if self.want.text() {
            self.text(buf);
        }
    }

    fn words_and_lines(&mut self, buf: &[u8]) {
        let mut lines = 0u64;
        let mut words = 0u64;
        let mut in_word = u8::from(self.in_word);
        for &b in buf {
            let class = CLASS[usize::from(b)];
            let word = class & WORD;
            let space = class >> 1;
            lines += u64::from(b == b'\n');
            words += u64::from(word & !in_word & 1);
            in_word = word | (in_word & (space ^ 1));
        }
        self.in_word = in_word != 0;
        self.counts.lines += lines;
        self.counts.words += words;
    }

    fn text(&mut self, buf: &[u8]) {
        for chunk in buf.utf8_chunks() {
            let valid = chunk.valid();
            if self.want.chars {
                self.counts.chars += valid.bytes().filter(|b| (*b as i8) >= -64).count() as u64;
            }
            if self.want.max_line_length {
                self.widths(valid);
            }
        }
    }

    fn widths(&mut self, text: &str) {
        let mut width = self.line_width;
        let mut widest = self.counts.max_line_length;
        for c in text.chars() {
            match c {
                '\n' | '\r' | '\x0c' => {
                    widest = widest.max(width);
                    width = 0;
                }
                '\t' => width += 8 - width % 8,
                ' '..='~' => width += 1,
                c if c.is_ascii() => {}
                c => width += c.width().unwrap_or(0) as u64,
            }
        }
        self.line_width = width;
        self.counts.max_line_length = widest;
    }

    /// The counts, the last line's width included.
    pub fn finish(mut self) -> Counts {
        self.counts.max_line_length = self.counts.max_line_length.max(self.line_width);
        self.counts
    }
}

/// The number of `\n` bytes, in blocks the compiler vectorizes: each of 64 lanes counts in a
/// byte, emptied every 255 blocks so it cannot overflow. Unlike a search for each newline,
/// its speed does not depend on how many there are.
pub fn count_newlines(buf: &[u8]) -> u64 {
    const LANES: usize = 64;
    let mut total = 0u64;
    let mut rounds = buf.chunks_exact(LANES * 255);
    for round in rounds.by_ref() {
        let mut acc = [0u8; LANES];
        for block in round.chunks_exact(LANES) {
            let Ok(block) = <&[u8; LANES]>::try_from(block) else {
                continue;
            };
            for (a, b) in acc.iter_mut().zip(block) {
                *a += u8::from(*b == b'\n');
            }
        }
        total += acc.iter().map(|a| u64::from(*a)).sum::<u64>();
    }
    total + rounds.remainder().iter().filter(|b| **b == b'\n').count() as u64
}

/// The length of `buf` without an incomplete UTF-8 character at its end.
pub fn complete_prefix(buf: &[u8]) -> usize {
    let n = buf.len();
    for back in 1..=3.min(n) {
        let b = buf[n - back];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF4 => 4,
                _ => 1,
            };
            return if need > back { n - back } else { n };
        }
    }
    n
}

/// Counts what `reader` holds.
pub fn count_reader(reader: &mut impl Read, want: Want) -> io::Result<Counts> {
    let mut counter = Counter::new(want);
    let mut buf = vec![0u8; BUFFER_BYTES];
    let mut carry = 0;
    loop {
        let n = match reader.read(&mut buf[carry..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            counter.feed(&buf[..carry]);
            return Ok(counter.finish());
        }
        let end = carry + n;
        let cut = if want.text() {
            complete_prefix(&buf[..end])
        } else {
            end
        };
        counter.feed(&buf[..cut]);
        buf.copy_within(cut..end, 0);
        carry = end - cut;
    }
}

/// An operand, opened: the file and whether it is a regular file (and its size).
fn open(path: &Path) -> io::Result<(File, Option<u64>)> {
    let file = if path.as_os_str() == "-" {
        File::from(io::stdin().as_fd().try_clone_to_owned()?)
    } else {
        File::open(path)?
    };
    let meta = file.metadata()?;
    let size = (meta.is_file() && path.as_os_str() != "-").then_some(meta.len());
    Ok((file, size))
}

/// Counts one operand. A directory is `IS_A_DIRECTORY`.
fn count_path(path: &Path, want: Want) -> io::Result<Counts> {
    let (mut file, size) = open(path)?;
    if file.metadata()?.is_dir() {
        return Err(io::Error::from_raw_os_error(21));
    }
    let bytes_only = want.bytes && !want.lines && !want.words && !want.text();
    match size {
        Some(size) if bytes_only && size > 0 => Ok(Counts {
            bytes: size,
            ..Counts::default()
        }),
        _ => count_reader(&mut file, want),
    }
}

/// The operands (none: standard input, with no name shown).
fn operands(args: &WcArgs) -> Vec<PathBuf> {
    if args.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.files.clone()
    }
}

/// Runs `wc`.
pub fn run(app: &App, global: &GlobalArgs, args: WcArgs) -> ExitCode {
    let want = Want::of(&args);
    if !global.machine() {
        return human(&args, want);
    }
    app.run_with(global, Limits::default(), |out| {
        let files = operands(&args);
        let mut total = Counts::default();
        let mut failed = false;
        for path in &files {
            let name = match path_text(path) {
                Ok(name) => name,
                Err(error) => {
                    failed = true;
                    out.error(&error)?;
                    continue;
                }
            };
            match count_path(path, want) {
                Ok(counts) => {
                    total.add(&counts);
                    out.emit(&Count::new(name, &counts, want))?;
                }
                Err(e) => {
                    failed = true;
                    out.error(&io_error(path, &e))?;
                }
            }
        }
        let mut outcome = if failed {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        if files.len() > 1 {
            let total = Count::new("total".to_owned(), &total, want);
            let mut value = serde_json::to_value(&total).map_err(|e| {
                ErrorEvent::new(
                    aoi::Category::Internal,
                    aoi::Code::from_static("TOTAL_NOT_SERIALIZABLE"),
                    e.to_string(),
                )
            })?;
            if let Some(map) = value.as_object_mut() {
                map.remove("path");
            }
            outcome = outcome.property("total", value);
        }
        Ok(outcome)
    })
}

/// GNU's column width: the digits of the regular files' total size, at least 7 when an
/// operand is not a regular file (standard input, a pipe, a directory), 1 for a single count
/// of a single operand. Operands that cannot be examined do not count.
fn column_width(files: &[PathBuf], want: Want) -> usize {
    if files.len() == 1 && want.how_many() == 1 {
        return 1;
    }
    let mut minimum = 1;
    let mut regular: u64 = 0;
    for path in files {
        let meta = if path.as_os_str() == "-" {
            io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map(File::from)
                .and_then(|f| f.metadata())
        } else {
            std::fs::metadata(path)
        };
        match meta {
            Ok(m) if m.is_file() => regular = regular.saturating_add(m.len()),
            Ok(_) => minimum = 7,
            Err(_) => {}
        }
    }
    regular.to_string().len().max(minimum)
}

fn write_line(
    out: &mut impl Write,
    counts: &Counts,
    want: Want,
    width: usize,
    name: Option<&[u8]>,
    terminal: bool,
) -> io::Result<()> {
    let mut line = String::new();
    let columns = [
        (want.lines, counts.lines),
        (want.words, counts.words),
        (want.chars, counts.chars),
        (want.bytes, counts.bytes),
        (want.max_line_length, counts.max_line_length),
    ];
    for (on, value) in columns {
        if on {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&format!("{value:>width$}"));
        }
    }
    out.write_all(line.as_bytes())?;
    if let Some(name) = name {
        out.write_all(b" ")?;
        if terminal {
            // A name is data: on a terminal it is shown escaped, never acted on.
            out.write_all(printable_line(&String::from_utf8_lossy(name)).as_bytes())?;
        } else {
            out.write_all(name)?;
        }
    }
    out.write_all(b"\n")
}

fn human(args: &WcArgs, want: Want) -> ExitCode {
    let files = operands(args);
    let width = column_width(&files, want);
    let terminal = io::stdout().is_terminal();
    // A line per write, as GNU's: two wc writing into one pipe (`xargs -P2 wc`) never tear
    // each other's lines.
    let mut out = io::LineWriter::new(io::stdout().lock());
    let mut total = Counts::default();
    let mut errors = 0;
    let mut written = Ok(());
    for path in &files {
        let name = (!args.files.is_empty()).then(|| path.as_os_str().as_bytes());
        let counts = match count_path(path, want) {
            Ok(counts) => Some(counts),
            Err(e) => {
                errors += 1;
                let _ = out.flush();
                say_error(NAME, &io_error(path, &e));
                // GNU writes a directory's (zero) counts after its error.
                (e.raw_os_error() == Some(21)).then(Counts::default)
            }
        };
        if let Some(counts) = counts {
            total.add(&counts);
            written = write_line(&mut out, &counts, want, width, name, terminal);
            if written.is_err() {
                break;
            }
        }
    }
    if written.is_ok() && files.len() > 1 {
        written = write_line(&mut out, &total, want, width, Some(b"total"), terminal);
    }
    let written = written.and_then(|()| out.flush());
    drop(out);
    human_exit("aoi-coreutils wc", written, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(bytes: &[u8], want: Want) -> Counts {
        count_reader(&mut &bytes[..], want).unwrap()
    }

    const ALL: Want = Want {
        lines: true,
        words: true,
        bytes: true,
        chars: true,
        max_line_length: true,
    };

    #[test]
    fn words_are_those_of_gnu_wc_in_the_c_locale() {
        let c = count(b"a\x01b x\x01 \x01y\n", ALL);
        assert_eq!((c.lines, c.words, c.bytes), (1, 3, 10));
        assert_eq!(count(b"\x01 \x02\n", ALL).words, 0);
        assert_eq!(count(b"  two words", ALL).words, 2);
    }

    #[test]
    fn chars_and_widths_are_utf8() {
        let c = count(
            b"a\nh\xc3\xa9llo w\xc3\xb6rld \xe6\x97\xa5\xe6\x9c\xac\xe2\x80",
            ALL,
        );
        assert_eq!(
            (c.lines, c.chars, c.bytes, c.max_line_length),
            (1, 16, 24, 16)
        );
        assert_eq!(count(b"ab\tc\rxyz\x0cq", ALL).max_line_length, 9);
    }

    #[test]
    fn newlines_are_counted_across_blocks() {
        let mut data = vec![b'x'; 100_000];
        for i in (0..data.len()).step_by(7) {
            data[i] = b'\n';
        }
        let expected = data.iter().filter(|b| **b == b'\n').count() as u64;
        assert_eq!(count_newlines(&data), expected);
    }

    #[test]
    fn an_incomplete_character_is_carried() {
        assert_eq!(complete_prefix(b"ab\xe2\x80"), 2);
        assert_eq!(complete_prefix("ab€".as_bytes()), 5);
        assert_eq!(complete_prefix(b"ab\x80"), 3);
    }
}
