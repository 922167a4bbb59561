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

/// Push-style framing: feed it bytes as they arrive ([`Framer::push`], or [`Framer::spare`] and
/// [`Framer::commit`] to read straight into its buffer), take the complete lines
/// ([`Framer::next_frame`]), and at the end of the stream the cut tail ([`Framer::finish`]).
///
/// Async code (the MCP adapter reading a child's stdout) and blocking code ([`LineReader`])
/// frame a stream through this one implementation, so they split any byte sequence the same way.
///
/// ```
/// use aoi::read::{Frame, Framer};
/// let mut framer = Framer::new();
/// framer.push(b"{\"type\":\"a\"}\n{\"type\":");
/// assert!(matches!(framer.next_frame(), Some(Frame::Line { number: 1, .. })));
/// assert!(framer.next_frame().is_none());
/// framer.push(b"\"b\"}");
/// // The stream ends inside a line: it is cut, never a line (§2).
/// assert!(matches!(framer.finish(), Some(Frame::Truncated { number: 2, .. })));
/// ```
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where to resume the newline search inside `buf[start..end]`.
    scanned: usize,
    line: u64,
    max_line: usize,
    /// Bytes of an over-long line already discarded.
    skipping: Option<u64>,
    finished: bool,
}

/// Where a frame lies in the framer's buffer; turned into a [`Frame`] once the borrow that
/// found it has ended.
#[derive(Debug, Clone, Copy)]
enum Span {
    Line { number: u64, from: usize, to: usize },
    TooLong { number: u64, len: u64 },
    Truncated { number: u64, from: usize, to: usize },
}

impl Default for Framer {
    fn default() -> Framer {
        Framer::new()
    }
}

impl Framer {
    /// A framer with the default line limit.
    pub fn new() -> Framer {
        Framer::with_max_line(DEFAULT_MAX_LINE)
    }

    /// A framer that reports lines longer than `max_line` bytes as [`Frame::TooLong`] and
    /// holds at most about that many bytes of one line.
    pub fn with_max_line(max_line: usize) -> Framer {
        Framer {
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            line: 0,
            max_line: max_line.max(1),
            skipping: None,
            finished: false,
        }
    }

    /// Lines handed out so far (complete, too long, or truncated).
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    /// Bytes received and not yet handed out as a frame.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }

    /// True when [`Framer::next_frame`] has a complete line to hand out.
    pub fn has_frame(&self) -> bool {
        memchr::memchr(b'\n', &self.buf[self.scanned..self.end]).is_some()
    }

    /// Appends `bytes` received from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let spare = self.spare();
            let n = spare.len().min(bytes.len());
            spare[..n].copy_from_slice(&bytes[..n]);
            self.commit(n);
            bytes = &bytes[n..];
        }
    }

    /// Room to read the next bytes into (never empty); [`Framer::commit`] says how many were
    /// written. Call it only when [`Framer::next_frame`] has nothing to hand out.
    pub fn spare(&mut self) -> &mut [u8] {
        let pending = self.end - self.start;
        if pending > self.max_line {
            // Drop what we have of an over-long line and keep looking for its end.
            *self.skipping.get_or_insert(0) += pending as u64;
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
        } else if self.start > 0 && (self.end == self.buf.len() || self.start == self.end) {
            self.buf.copy_within(self.start..self.end, 0);
            self.end = pending;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).clamp(CHUNK, self.max_line.max(CHUNK));
            let grown = if grown <= self.buf.len() {
                self.buf.len() + CHUNK
            } else {
                grown
            };
            self.buf.resize(grown, 0);
        }
        &mut self.buf[self.end..]
    }

    /// Records that the first `n` bytes of [`Framer::spare`] hold stream data.
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The next complete line (or over-long line), if the bytes so far hold one.
    pub fn next_frame(&mut self) -> Option<Frame<'_>> {
        let span = self.next_span()?;
        Some(self.frame(span))
    }

    /// Ends the stream: the bytes after the last `\n`, if any, as [`Frame::Truncated`] (or the
    /// over-long line they belong to as [`Frame::TooLong`]). Complete lines are taken first
    /// with [`Framer::next_frame`]; once finished, nothing more is handed out.
    pub fn finish(&mut self) -> Option<Frame<'_>> {
        let span = self.finish_span()?;
        Some(self.frame(span))
    }

    fn next_span(&mut self) -> Option<Span> {
        let pos = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]);
        let Some(pos) = pos else {
            self.scanned = self.end;
            return None;
        };
        let nl = self.scanned + pos;
        let line_start = self.start;
        self.start = nl + 1;
        self.scanned = self.start;
        self.line += 1;
        let skipped = self.skipping.take();
        let len = skipped.unwrap_or(0) + (nl - line_start) as u64;
        if skipped.is_some() || len > self.max_line as u64 {
            return Some(Span::TooLong {
                number: self.line,
                len,
            });
        }
        Some(Span::Line {
            number: self.line,
            from: line_start,
            to: nl,
        })
    }

    fn finish_span(&mut self) -> Option<Span> {
        if self.finished || (self.start == self.end && self.skipping.is_none()) {
            self.finished = true;
            return None;
        }
        self.finished = true;
        self.line += 1;
        let (from, to) = (self.start, self.end);
        self.start = self.end;
        self.scanned = self.end;
        let len = self.skipping.take().unwrap_or(0) + (to - from) as u64;
        match len > self.max_line as u64 {
            true => Some(Span::TooLong {
                number: self.line,
                len,
            }),
            false => Some(Span::Truncated {
                number: self.line,
                from,
                to,
            }),
        }
    }

    fn frame(&self, span: Span) -> Frame<'_> {
        match span {
            Span::Line { number, from, to } => Frame::Line {
                number,
                bytes: &self.buf[from..to],
            },
            Span::TooLong { number, len } => Frame::TooLong { number, len },
            Span::Truncated { number, from, to } => Frame::Truncated {
                number,
                bytes: &self.buf[from..to],
            },
        }
    }
}

/// The complete lines of a stream held in memory, without their `\n`, in order: line `i` of
/// the iterator is line `i + 1` of the stream. A last line without `\n` is cut and is not
/// yielded (§2). The same split as [`Framer`] with no line limit.
pub fn complete_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .filter_map(|line| line.strip_suffix(b"\n"))
}

/// Reads frames from any byte source with one buffer and no per-line allocation: a
/// [`Framer`] fed from a [`Read`].
#[derive(Debug)]
pub struct LineReader<R> {
    source: R,
    framer: Framer,
    eof: bool,
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
            framer: Framer::with_max_line(max_line),
            eof: false,
        }
    }

    /// Lines handed out so far (complete, too long, or truncated).
    pub fn lines_read(&self) -> u64 {
        self.framer.lines_read()
    }

    /// True when the next call to [`LineReader::next`] can answer without reading: a relay
    /// flushes what it forwarded before the reader blocks.
    pub fn has_buffered_frame(&self) -> bool {
        self.eof || self.framer.has_frame()
    }

    /// The next frame, or `None` at a clean end of stream.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> io::Result<Option<Frame<'_>>> {
        loop {
            if let Some(span) = self.framer.next_span() {
                return Ok(Some(self.framer.frame(span)));
            }
            if self.eof {
                return Ok(self
                    .framer
                    .finish_span()
                    .map(|span| self.framer.frame(span)));
            }
            self.fill()?;
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        let spare = self.framer.spare();
        loop {
            match self.source.read(spare) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.framer.commit(n);
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

    /// The frames of `input` pushed in pieces of `piece` bytes, in the form of [`frames`].
    fn pushed(input: &[u8], max: usize, piece: usize) -> Vec<String> {
        let mut f = Framer::with_max_line(max);
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            f.push(chunk);
            while let Some(frame) = f.next_frame() {
                out.push(describe(frame));
            }
        }
        if let Some(frame) = f.finish() {
            out.push(describe(frame));
        }
        out
    }

    fn describe(f: Frame<'_>) -> String {
        match f {
            Frame::Line { number, bytes } => {
                format!("{number}:{}", String::from_utf8_lossy(bytes))
            }
            Frame::TooLong { number, len } => format!("{number}:too long ({len})"),
            Frame::Truncated { number, bytes } => {
                format!("{number}:truncated {}", String::from_utf8_lossy(bytes))
            }
        }
    }

    #[test]
    fn pushing_in_any_pieces_frames_like_the_reader() {
        let inputs: [&[u8]; 5] = [
            b"{\"a\":1}\n{\"b\":2}\n",
            b"one\ntwo\nthree",
            b"\n\n\nx",
            b"short\nthis line is far too long for the limit\nok\ncut tail that is also too long",
            b"",
        ];
        for input in inputs {
            let reference = frames(input, 16);
            for piece in [1, 2, 3, 7, 16, 1000] {
                assert_eq!(
                    pushed(input, 16, piece),
                    reference,
                    "{input:?} in pieces of {piece}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_in_any_pieces_frame_like_the_reader(
            input in proptest::collection::vec(proptest::prop_oneof![proptest::strategy::Just(b'\n'), proptest::num::u8::ANY], 0..400),
            piece in 1usize..64,
            max in 1usize..48,
        ) {
            proptest::prop_assert_eq!(pushed(&input, max, piece), frames(&input, max));
            let mut unbounded = Framer::with_max_line(usize::MAX);
            unbounded.push(&input);
            let mut framed = Vec::new();
            while let Some(Frame::Line { bytes, .. }) = unbounded.next_frame() {
                framed.push(bytes.to_vec());
            }
            let split: Vec<Vec<u8>> = complete_lines(&input).map(<[u8]>::to_vec).collect();
            proptest::prop_assert_eq!(split, framed);
        }
    }

    #[test]
    fn finish_hands_out_the_tail_once() {
        let mut f = Framer::new();
        f.push(b"a\nb");
        assert!(f.next_frame().is_some());
        assert!(matches!(
            f.finish(),
            Some(Frame::Truncated {
                number: 2,
                bytes: b"b"
            })
        ));
        assert!(f.finish().is_none());
        assert_eq!(f.lines_read(), 2);
    }

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
