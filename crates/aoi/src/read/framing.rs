//! Strict line framing (spec §2): lines end at `\n` and only there; a last line without `\n` is
//! truncated and is never handed out as a line, even when it happens to be valid JSON.
//!
//! Unicode line separators (U+2028, U+2029, U+0085) and lone `\r` are ordinary bytes here, as
//! they may legally appear inside JSON strings.

use std::io::{self, Read};

/// One frame of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line, without its `\n`. `number` is 1-based.
    Line {
        /// 1-based line number.
        number: u64,
        /// The bytes before the `\n`.
        bytes: &'a [u8],
    },
    /// A line longer than the reader's limit; its bytes were skipped up to the next `\n`.
    TooLong {
        /// 1-based line number.
        number: u64,
        /// Bytes in the line.
        len: u64,
    },
    /// The stream ended inside a line: these bytes had no terminating `\n` (§2).
    Truncated {
        /// 1-based line number the partial line would have had.
        number: u64,
        /// The partial bytes (at most the reader's limit).
        bytes: &'a [u8],
    },
}

/// Default longest line accepted: 64 MiB, so a runaway producer cannot exhaust memory.
pub const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

const CHUNK: usize = 256 * 1024;

/// Reads frames from any byte source with one buffer and no per-line allocation.
#[derive(Debug)]
pub struct LineReader<R> {
    source: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where to resume the newline search inside `buf[start..end]`.
    scanned: usize,
    eof: bool,
    line: u64,
    max_line: usize,
    /// Bytes of an over-long line already discarded.
    skipping: Option<u64>,
}

impl<R: Read> LineReader<R> {
    /// A reader with the default line limit.
    pub fn new(source: R) -> LineReader<R> {
        LineReader::with_max_line(source, DEFAULT_MAX_LINE)
    }

    /// A reader that reports lines longer than `max_line` bytes as [`Frame::TooLong`].
    pub fn with_max_line(source: R, max_line: usize) -> LineReader<R> {
        LineReader {
            source,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            scanned: 0,
            eof: false,
            line: 0,
            max_line: max_line.max(1),
            skipping: None,
        }
    }

    /// Lines handed out so far (complete, too long, or truncated).
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    /// True when the next call to [`LineReader::next`] can answer without reading: a relay
    /// flushes what it forwarded before the reader blocks.
    pub fn has_buffered_frame(&self) -> bool {
        self.eof || memchr::memchr(b'\n', &self.buf[self.scanned..self.end]).is_some()
    }

    /// The next frame, or `None` at a clean end of stream.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> io::Result<Option<Frame<'_>>> {
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) {
                let nl = self.scanned + pos;
                let line_start = self.start;
                self.start = nl + 1;
                self.scanned = self.start;
                self.line += 1;
                let skipped = self.skipping.take();
                let len = skipped.unwrap_or(0) + (nl - line_start) as u64;
                if skipped.is_some() || len > self.max_line as u64 {
                    return Ok(Some(Frame::TooLong {
                        number: self.line,
                        len,
                    }));
                }
                return Ok(Some(Frame::Line {
                    number: self.line,
                    bytes: &self.buf[line_start..nl],
                }));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start == self.end && self.skipping.is_none() {
                    return Ok(None);
                }
                self.line += 1;
                let bytes = &self.buf[self.start..self.end];
                self.start = self.end;
                self.skipping = None;
                return Ok(Some(Frame::Truncated {
                    number: self.line,
                    bytes,
                }));
            }
            self.fill()?;
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        let pending = self.end - self.start;
        if pending > self.max_line {
            // Drop what we have of an over-long line and keep looking for its end.
            *self.skipping.get_or_insert(0) += pending as u64;
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end = pending;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).min(self.max_line.max(CHUNK));
            if grown <= self.buf.len() {
                self.buf.resize(self.buf.len() + CHUNK, 0);
            } else {
                self.buf.resize(grown, 0);
            }
        }
        loop {
            match self.source.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8], max: usize) -> Vec<String> {
        let mut r = LineReader::with_max_line(input, max);
        let mut out = Vec::new();
        while let Some(f) = r.next().unwrap() {
            out.push(match f {
                Frame::Line { number, bytes } => {
                    format!("{number}:{}", String::from_utf8_lossy(bytes))
                }
                Frame::TooLong { number, len } => format!("{number}:too long ({len})"),
                Frame::Truncated { number, bytes } => {
                    format!("{number}:truncated {}", String::from_utf8_lossy(bytes))
                }
            });
        }
        out
    }

    #[test]
    fn a_last_line_without_newline_is_truncated_even_if_valid_json() {
        assert_eq!(
            frames(
                b"{\"a\":1}\n{\"type\":\"aoi:summary\",\"ok\":true}",
                1 << 20
            ),
            [
                "1:{\"a\":1}",
                "2:truncated {\"type\":\"aoi:summary\",\"ok\":true}"
            ]
        );
    }

    #[test]
    fn splits_on_line_feed_only() {
        let input = "a\u{2028}b\rc\u{85}d\n\ne\n".as_bytes();
        assert_eq!(
            frames(input, 1 << 20),
            ["1:a\u{2028}b\rc\u{85}d", "2:", "3:e"]
        );
        assert!(frames(b"", 10).is_empty());
    }

    #[test]
    fn long_lines_are_reported_not_buffered() {
        let mut input = vec![b'x'; 100];
        input.push(b'\n');
        input.extend_from_slice(b"ok\n");
        assert_eq!(frames(&input, 10), ["1:too long (100)", "2:ok"]);
    }

    #[test]
    fn lines_spanning_many_reads_are_reassembled() {
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(3).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let text = "first line\nsecond\nthird";
        let mut r = LineReader::new(Trickle(text.as_bytes()));
        let mut got = Vec::new();
        while let Some(f) = r.next().unwrap() {
            got.push(format!("{f:?}"));
        }
        assert_eq!(got.len(), 3);
        assert!(got[2].contains("Truncated"));
    }
}
