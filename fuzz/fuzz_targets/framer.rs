//! The push framer (`aoi::read::Framer`, what the MCP adapter reads a child's stdout with)
//! against the blocking `aoi::read::LineReader` and a model of §2 framing: for any bytes, cut
//! into any chunks, fed by `push` or by `spare`/`commit`, all three give the same frames (the
//! same lines, the same over-long lines with their lengths, the same cut tail) under the same
//! line limit.

#![no_main]

use std::io::{self, Read};

use aoi::read::{Frame, Framer, LineReader};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

/// A frame, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owned {
    Line(u64, Vec<u8>),
    TooLong(u64, u64),
    Truncated(u64, Vec<u8>),
}

fn owned(frame: Frame<'_>) -> Owned {
    match frame {
        Frame::Line { number, bytes } => Owned::Line(number, bytes.to_vec()),
        Frame::TooLong { number, len } => Owned::TooLong(number, len),
        Frame::Truncated { number, bytes } => Owned::Truncated(number, bytes.to_vec()),
    }
}

/// §2 as written: lines end at `\n` only; a line over the limit is too long; a tail without
/// `\n` is cut (or too long).
fn model(bytes: &[u8], max: usize) -> Vec<Owned> {
    let mut frames = Vec::new();
    let mut start = 0;
    let mut number = 0;
    // `memchr` rather than a byte loop: the fuzzer's compare tracing would time every byte.
    for end in memchr::memchr_iter(b'\n', bytes).chain([bytes.len()]) {
        let piece = &bytes[start..end];
        let last = end == bytes.len();
        if last && piece.is_empty() {
            break;
        }
        number += 1;
        frames.push(match (piece.len() > max, last) {
            (true, _) => Owned::TooLong(number, piece.len() as u64),
            (false, false) => Owned::Line(number, piece.to_vec()),
            (false, true) => Owned::Truncated(number, piece.to_vec()),
        });
        start = end + 1;
    }
    frames
}

/// A source that hands out the chunks one `read` at a time, as a pipe does.
struct Chunks<'a> {
    chunks: std::vec::IntoIter<&'a [u8]>,
    current: &'a [u8],
}

impl Read for Chunks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.next() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = &self.current[n..];
        Ok(n)
    }
}

/// Cuts `bytes` into chunks of 1 to `most` bytes, where a xorshift seeded by `seed` says.
fn cut(bytes: &[u8], mut seed: u64, most: usize) -> Vec<&[u8]> {
    let mut chunks = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let n = 1 + (seed as usize) % most.min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// Takes every frame the framer has now, checking `has_frame` against `next_frame`.
fn drain(framer: &mut Framer, into: &mut Vec<Owned>) {
    while framer.has_frame() {
        let frame = framer.next_frame().expect("has_frame promised a frame");
        into.push(owned(frame));
    }
    assert!(
        framer.next_frame().is_none(),
        "a frame has_frame did not see"
    );
}

fn run(u: &mut Unstructured) -> Result<()> {
    let max = match u.int_in_range(0..=3)? {
        0 => u.int_in_range(0..=8usize)?,
        1 => u.int_in_range(9..=300usize)?,
        2 => 256 * 1024 + u.int_in_range(0..=2usize)?,
        _ => aoi::read::DEFAULT_MAX_LINE,
    };
    let by_spare: bool = u.arbitrary()?;
    let seed = u.arbitrary::<u64>()? | 1;
    let most = u.int_in_range(1..=64usize)?;
    let repeat = u.ratio(1, 8)?;
    let stream = u.bytes(u.len())?;
    // A line past the framer's first buffer (256 KiB) without a big input: the stream
    // repeated, just past a limit that size (never the 64 MiB default: too slow to fuzz).
    let bytes = if repeat && (300..1 << 20).contains(&max) && !stream.is_empty() {
        stream.repeat(max / stream.len() + 2)
    } else {
        stream.to_vec()
    };
    let most = if bytes.len() > 4096 {
        most * 1024
    } else {
        most
    };
    let chunks = cut(&bytes, seed, most);
    let expected = model(&bytes, max.max(1));

    let mut framed = Vec::new();
    let mut framer = Framer::with_max_line(max);
    for chunk in &chunks {
        if by_spare {
            // Read straight into the framer's buffer, as the async reader does.
            let mut chunk: &[u8] = chunk;
            while !chunk.is_empty() {
                drain(&mut framer, &mut framed);
                let spare = framer.spare();
                assert!(!spare.is_empty(), "spare is never empty");
                let n = spare.len().min(chunk.len());
                spare[..n].copy_from_slice(&chunk[..n]);
                framer.commit(n);
                chunk = &chunk[n..];
            }
        } else {
            framer.push(chunk);
        }
        drain(&mut framer, &mut framed);
    }
    if let Some(frame) = framer.finish() {
        framed.push(owned(frame));
    }
    assert!(framer.finish().is_none(), "finish hands out the tail once");
    assert!(framer.next_frame().is_none(), "nothing after the end");
    assert_eq!(framer.lines_read(), expected.len() as u64);

    let source = Chunks {
        chunks: chunks.clone().into_iter(),
        current: &[],
    };
    let mut reader = LineReader::with_max_line(source, max);
    let mut read = Vec::new();
    while let Some(frame) = reader.next().expect("reading memory never fails") {
        read.push(owned(frame));
    }
    assert!(reader.next().expect("memory").is_none());

    assert_eq!(framed, expected, "Framer vs the model (limit {max})");
    assert_eq!(read, expected, "LineReader vs the model (limit {max})");
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
