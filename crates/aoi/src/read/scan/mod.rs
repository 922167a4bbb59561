//! The verifier's line scanner: one pass over a line's bytes that checks UTF-8 and JSON syntax,
//! finds ANSI controls and pulls out the [`Head`], without allocating.
//!
//! # Why it exists
//!
//! `aoi verify` must read a stream at a good fraction of the speed of bare `serde_json` (see
//! `bench/README.md`). Checking a line in three steps — `std::str::from_utf8`, a search for ANSI
//! controls, then [`parse_head`] through serde — touched every byte three times, and serde's
//! per-key machinery (identifier visitors, a UTF-8 check of every key) cost more than the parse
//! itself. [`scan_line`] does all of it in one pass: plain ASCII inside strings is skipped eight
//! bytes at a time, multi-byte UTF-8 is validated where it stands, and only the keys the head
//! needs (`type`, `aoi`, `aoi.seq`, `aoi.run`, top-level `seq` and `run`) are looked at.
//!
//! # The contract
//!
//! - **Acceptance.** A line is JSON exactly when `serde_json::from_slice::<serde_json::Value>`
//!   accepts it: RFC 8259 (no trailing commas, no leading zeros, only the escapes JSON defines,
//!   whitespace around the value, nothing after it), plus serde_json's own limits: at most 127
//!   nested arrays and objects, a number must not round to an infinite `f64`
//!   (`1e400` is rejected), and a `\u` escape of a UTF-16 surrogate must be a high surrogate
//!   directly followed by an escaped low one.
//! - **UTF-8.** The line is UTF-8 exactly when `std::str::from_utf8` says so; otherwise the
//!   answer is [`NotUtf8`], with the column of the first byte of the first bad sequence, and
//!   nothing else is said about the line.
//! - **ANSI controls.** [`ScannedLine::ansi`] is what [`find_ansi`] returns for the line.
//! - **The head.** For a JSON object, [`ScannedLine::head`] equals what [`parse_head`] returns
//!   (same keys, same duplicate-key rule: a later occurrence overwrites, flags stay set);
//!   strings are borrowed from the line unless they contain escapes.
//! - **Errors.** An invalid line is described by serde_json itself (message, line and column),
//!   from a second, validating but non-allocating serde pass that runs only on lines the scanner
//!   rejected.
//!
//! Differential tests (below) hold the scanner to this contract against serde_json, `from_utf8`,
//! [`find_ansi`] and [`parse_head`]; the `scan` fuzz target does the same on arbitrary input.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::head::{parse_head, Head, NotObject, Seen};

/// Where a line carries an ANSI control (ESC or the C1 CSI, U+009B), 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ansi {
    /// The control byte itself is on the wire: a violation of §2.
    Raw(usize),
    /// Only its JSON escape (`\u001b`, `\u009b`) is: clean bytes, suspicious data.
    Escaped(usize),
}

/// The first raw ANSI control in a line, else the first escaped one. One pass; lines without a
/// backslash, ESC or 0xC2 byte cost a single `memchr3`.
///
/// This is the byte-level definition [`scan_line`] agrees with; the scanner itself only calls
/// it for lines that are not JSON.
pub fn find_ansi(line: &[u8]) -> Option<Ansi> {
    let mut escaped = None;
    let mut i = 0;
    while let Some(p) = memchr::memchr3(b'\\', 0x1b, 0xc2, &line[i..]) {
        let at = i + p;
        match line[at] {
            b'\\' => {
                let rest = &line[at + 1..];
                if escaped.is_none()
                    && rest.len() >= 5
                    && rest[0] == b'u'
                    && rest[1] == b'0'
                    && rest[2] == b'0'
                    && (rest[3] == b'1' || rest[3] == b'9')
                    && rest[4].eq_ignore_ascii_case(&b'b')
                {
                    escaped = Some(Ansi::Escaped(at + 1));
                }
                // Skip the escaped character, so `\\u001b` (text, not an escape) is passed over.
                i = at + 2;
            }
            0x1b => return Some(Ansi::Raw(at + 1)),
            _ => {
                if line.get(at + 1) == Some(&0x9b) {
                    return Some(Ansi::Raw(at + 1));
                }
                i = at + 1;
            }
        }
        if i >= line.len() {
            break;
        }
    }
    escaped
}

/// The line is not UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NotUtf8 {
    /// 1-based column of the first byte of the first invalid sequence
    /// (`Utf8Error::valid_up_to() + 1`).
    pub column: usize,
}

/// What [`scan_line`] found in a UTF-8 line.
#[derive(Debug)]
pub struct ScannedLine<'a> {
    /// The first raw ANSI control, else the first escaped one; the same as [`find_ansi`].
    pub ansi: Option<Ansi>,
    /// The head of a JSON object, [`NotObject`] for other JSON, or serde_json's error for a
    /// line that is not JSON; shaped like the result of [`parse_head`].
    pub head: Result<Result<Head<'a>, NotObject>, serde_json::Error>,
}

/// Checks one line (without its `\n`) in a single pass: UTF-8, JSON syntax as strict as
/// `serde_json::Value`'s parser, ANSI controls, and the head: it accepts exactly the lines
/// `serde_json::from_slice::<serde_json::Value>` accepts, and its head equals [`parse_head`]'s.
///
/// ```
/// use aoi::read::{scan_line, Ansi};
/// let line = br#"{"type":"hit","aoi":{"seq":7,"run":"R"},"title":"\u001b[1mbold"}"#;
/// let scanned = scan_line(line).unwrap();
/// assert_eq!(scanned.ansi, Some(Ansi::Escaped(50)));
/// let head = scanned.head.unwrap().unwrap();
/// assert_eq!((head.ty.as_deref(), head.seq), (Some("hit"), Some(7)));
///
/// assert_eq!(scan_line(b"{\"a\":\"\xff\"}").unwrap_err().column, 7);
/// let error = scan_line(br#"{"a":1,}"#).unwrap().head.unwrap_err();
/// assert_eq!(error.to_string(), "trailing comma at line 1 column 8");
/// ```
pub fn scan_line(line: &[u8]) -> Result<ScannedLine<'_>, NotUtf8> {
    match scan_fast(line) {
        Ok((ansi, head)) => Ok(ScannedLine {
            ansi,
            head: Ok(head),
        }),
        Err(Reject) => scan_rejected(line),
    }
}

/// Whether the scanner's fast path accepts `line` on its own, without the slow path of
/// [`scan_line`] (which would mask a fast path that wrongly rejects valid JSON). For the
/// differential fuzz target; it must equal `serde_json::from_slice::<Value>(line).is_ok()`.
#[doc(hidden)]
pub fn scan_fast_accepts(line: &[u8]) -> bool {
    scan_fast(line).is_ok()
}

/// The scanner proper: the head and ANSI finding of a line it accepts, or [`Reject`].
///
/// It accepts exactly the lines `serde_json::Value` accepts; the differential tests call it
/// directly, so that a disagreement cannot hide behind the slow path of [`scan_line`].
fn scan_fast(line: &[u8]) -> Result<(Option<Ansi>, Result<Head<'_>, NotObject>), Reject> {
    let mut s = Scanner {
        bytes: line,
        pos: 0,
        raw_ansi: None,
        escaped_ansi: None,
    };
    let head = s.document()?;
    Ok((s.ansi(), head))
}

/// Why a rejected line was rejected, from the reference implementations: slow, but run only
/// on lines that are not UTF-8 or not JSON.
#[cold]
#[inline(never)]
fn scan_rejected(line: &[u8]) -> Result<ScannedLine<'_>, NotUtf8> {
    if let Err(e) = std::str::from_utf8(line) {
        return Err(NotUtf8 {
            column: e.valid_up_to() + 1,
        });
    }
    let head = match serde_json::from_slice::<Validated>(line) {
        Err(e) => Err(e),
        // Only if the scanner wrongly rejected a line; serde_json's answer stands.
        Ok(Validated) => parse_head(line),
    };
    Ok(ScannedLine {
        ansi: find_ansi(line),
        head,
    })
}

/// The fast path rejects the line; [`scan_rejected`] finds out why.
#[derive(Debug)]
struct Reject;

type Step<T> = Result<T, Reject>;

/// serde_json nests at most this many arrays and objects minus one (its `remaining_depth`
/// starts at 128 and an error is raised when it reaches 0).
const DEPTH_LIMIT: u32 = 128;

/// A number whose magnitude is below `10^MAX_SAFE_EXP` is finite as an `f64` however it rounds;
/// larger ones are rare and checked by serde_json itself.
const MAX_SAFE_EXP: i64 = 308;

/// The keys the head cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Type,
    Aoi,
    Seq,
    Run,
    T,
    TraceId,
    Other,
}

impl Key {
    fn of(name: &[u8]) -> Key {
        match name {
            b"type" => Key::Type,
            b"aoi" => Key::Aoi,
            b"seq" => Key::Seq,
            b"run" => Key::Run,
            b"t" => Key::T,
            b"trace_id" => Key::TraceId,
            _ => Key::Other,
        }
    }

    /// The key whose name is the bytes of `word` up to its first NUL (little-endian).
    #[inline(always)]
    fn of_word(word: u64) -> Key {
        const fn packed(name: &[u8]) -> u64 {
            let mut w = 0;
            let mut i = name.len();
            while i > 0 {
                i -= 1;
                w = w << 8 | name[i] as u64;
            }
            w
        }
        const TYPE: u64 = packed(b"type");
        const AOI: u64 = packed(b"aoi");
        const SEQ: u64 = packed(b"seq");
        const RUN: u64 = packed(b"run");
        const T: u64 = packed(b"t");
        match word {
            TYPE => Key::Type,
            AOI => Key::Aoi,
            SEQ => Key::Seq,
            RUN => Key::Run,
            T => Key::T,
            // `trace_id` is eight bytes: it never takes this path.
            _ => Key::Other,
        }
    }

    /// The key named by the raw contents of a string with escapes, decoded the way serde does.
    #[cold]
    fn of_escaped(raw: &[u8]) -> Step<Key> {
        let mut name = [0u8; 8];
        let mut len = 0;
        let mut fits = true;
        unescape(raw, |piece| {
            match name.get_mut(len..len + piece.len()) {
                Some(slot) if fits => slot.copy_from_slice(piece.as_bytes()),
                _ => fits = false,
            }
            len += piece.len();
        })?;
        Ok(if fits {
            Key::of(&name[..len])
        } else {
            Key::Other
        })
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    /// The next byte to read.
    pos: usize,
    /// Index of the first raw U+009B (`C2 9B`); raw ESC never survives JSON validation.
    raw_ansi: Option<usize>,
    /// Index of the backslash of the first `\u001b` or `\u009b` escape.
    escaped_ansi: Option<usize>,
}

impl<'a> Scanner<'a> {
    fn ansi(&self) -> Option<Ansi> {
        match (self.raw_ansi, self.escaped_ansi) {
            (Some(i), _) => Some(Ansi::Raw(i + 1)),
            (None, Some(i)) => Some(Ansi::Escaped(i + 1)),
            (None, None) => None,
        }
    }

    /// Skips JSON whitespace; the next byte, if any, without consuming it.
    #[inline(always)]
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Like [`Scanner::peek`], where the end of the line is an error.
    #[inline(always)]
    fn next_token(&mut self) -> Step<u8> {
        self.peek().ok_or(Reject)
    }

    /// The whole line: one value, whitespace around it, nothing else.
    fn document(&mut self) -> Step<Result<Head<'a>, NotObject>> {
        let head = match self.next_token()? {
            b'{' => Ok(self.top_object()?),
            b => {
                let kind = match b {
                    b'[' => "an array",
                    b'"' => "a string",
                    b'-' | b'0'..=b'9' => "a number",
                    b't' | b'f' => "a boolean",
                    b'n' => "null",
                    _ => return Err(Reject),
                };
                self.value(b, 0)?;
                Err(NotObject(kind))
            }
        };
        match self.peek() {
            None => Ok(head),
            Some(_) => Err(Reject),
        }
    }

    /// The top-level object, at its `{`.
    fn top_object(&mut self) -> Step<Head<'a>> {
        self.pos += 1;
        let mut head = Head::default();
        let mut seen = Seen::default();
        let mut b = self.next_token()?;
        if b == b'}' {
            self.pos += 1;
            return Ok(head);
        }
        loop {
            let key = self.member_key(b)?;
            let v = self.next_token()?;
            if matches!(key, Key::Type | Key::Aoi) && seen.again(key as u8) {
                head.duplicate_key = true;
            }
            match key {
                Key::Type => {
                    if v == b'"' {
                        head.ty = Some(self.string_value()?);
                    } else {
                        self.value(v, 1)?;
                        head.ty_not_string = true;
                    }
                }
                Key::Aoi => {
                    head.has_envelope = true;
                    if v == b'{' {
                        self.envelope(&mut head)?;
                    } else {
                        self.value(v, 1)?;
                        head.envelope_not_object = true;
                    }
                }
                Key::Seq => {
                    head.flat_seq = true;
                    self.value(v, 1)?;
                }
                Key::Run => {
                    head.flat_run = true;
                    self.value(v, 1)?;
                }
                Key::T | Key::TraceId | Key::Other => self.value(v, 1)?,
            }
            match self.next_token()? {
                b',' => {
                    self.pos += 1;
                    b = self.next_token()?;
                }
                b'}' => {
                    self.pos += 1;
                    return Ok(head);
                }
                _ => return Err(Reject),
            }
        }
    }

    /// The `aoi` object, at its `{`: `seq` and `run`, the shape of `t` and `trace_id`, and
    /// whether it holds any other member (skipped).
    fn envelope(&mut self, head: &mut Head<'a>) -> Step<()> {
        self.pos += 1;
        let mut seen = Seen::default();
        let mut b = self.next_token()?;
        if b == b'}' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.member_key(b)?;
            let v = self.next_token()?;
            if key != Key::Other && seen.again(key as u8) {
                head.duplicate_key = true;
            }
            match key {
                Key::Seq if matches!(v, b'-' | b'0'..=b'9') => match self.seq_number()? {
                    Some(n) => head.seq = Some(n),
                    None => head.seq_invalid = true,
                },
                Key::Seq => {
                    self.value(v, 2)?;
                    head.seq_invalid = true;
                }
                Key::Run if v == b'"' => head.run = Some(self.string_value()?),
                Key::Run => {
                    self.value(v, 2)?;
                    head.run_invalid = true;
                }
                // Any non-negative number; a leading `-` (even `-0`) is negative.
                Key::T => {
                    self.value(v, 2)?;
                    if !v.is_ascii_digit() {
                        head.envelope_field_invalid = true;
                    }
                }
                Key::TraceId => {
                    self.value(v, 2)?;
                    if v != b'"' {
                        head.envelope_field_invalid = true;
                    }
                }
                Key::Type | Key::Aoi | Key::Other => {
                    self.value(v, 2)?;
                    head.envelope_extra = true;
                }
            }
            match self.next_token()? {
                b',' => {
                    self.pos += 1;
                    b = self.next_token()?;
                }
                b'}' => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Reject),
            }
        }
    }

    /// A member name at `b` (which must be its opening quote), then `:`; which key it is.
    #[inline(always)]
    fn member_key(&mut self, b: u8) -> Step<Key> {
        if b != b'"' {
            return Err(Reject);
        }
        self.pos += 1;
        let start = self.pos;
        // The usual key is short and plain: its closing quote is in the first eight bytes.
        if let Some(word) = self.word_at(start) {
            let special = special_bytes(word);
            let len = (special.trailing_zeros() / 8) as usize;
            if len < 8 && self.bytes[start + len] == b'"' {
                self.pos = start + len + 1;
                self.colon()?;
                // The bytes after the key are masked off; a NUL cannot be in a key.
                return Ok(Key::of_word(word & !(u64::MAX << (8 * len))));
            }
        }
        self.long_member_key(start)
    }

    /// [`Scanner::member_key`] for a name that is long, escaped, or near the end of the line.
    #[inline(never)]
    fn long_member_key(&mut self, start: usize) -> Step<Key> {
        let escaped = self.string()?;
        let name = &self.bytes[start..self.pos - 1];
        let key = if escaped {
            Key::of_escaped(name)?
        } else {
            Key::of(name)
        };
        self.colon()?;
        Ok(key)
    }

    /// The eight bytes at `at`, little-endian, if there are eight.
    #[inline(always)]
    fn word_at(&self, at: usize) -> Option<u64> {
        let chunk = self.bytes.get(at..at + 8)?;
        <[u8; 8]>::try_from(chunk).ok().map(u64::from_le_bytes)
    }

    #[inline(always)]
    fn colon(&mut self) -> Step<()> {
        if self.next_token()? != b':' {
            return Err(Reject);
        }
        self.pos += 1;
        Ok(())
    }

    /// A string value at its opening quote: borrowed from the line, or decoded when escaped.
    fn string_value(&mut self) -> Step<Cow<'a, str>> {
        self.pos += 1;
        let start = self.pos;
        let escaped = self.string()?;
        let bytes: &'a [u8] = self.bytes;
        let raw = &bytes[start..self.pos - 1];
        if escaped {
            let mut text = String::with_capacity(raw.len());
            unescape(raw, |piece| text.push_str(piece))?;
            Ok(Cow::Owned(text))
        } else {
            // Validated already; checking again keeps this module free of `unsafe`, and costs
            // little on the short strings the head keeps.
            std::str::from_utf8(raw)
                .map(Cow::Borrowed)
                .map_err(|_| Reject)
        }
    }

    /// Any value starting with byte `b` at `self.pos`, inside `depth` open arrays and objects.
    #[inline]
    fn value(&mut self, b: u8, depth: u32) -> Step<()> {
        match b {
            b'[' | b'{' => self.container(depth),
            _ => self.scalar(b),
        }
    }

    /// A string, number or literal starting with byte `b` at `self.pos`.
    #[inline]
    fn scalar(&mut self, b: u8) -> Step<()> {
        match b {
            b'"' => {
                self.pos += 1;
                self.string().map(drop)
            }
            b'-' | b'0'..=b'9' => self.number().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => Err(Reject),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Step<()> {
        match self.bytes.get(self.pos..self.pos + word.len()) {
            Some(found) if found == word => {
                self.pos += word.len();
                Ok(())
            }
            _ => Err(Reject),
        }
    }

    /// An array or object at its opening bracket, inside `depth` open ones, skipped without
    /// recursion: bit `k` of `objects` says whether the container `k` levels up is an object.
    fn container(&mut self, depth: u32) -> Step<()> {
        let mut objects: u128 = 0;
        let mut level: u32 = 0;
        let mut b = self.bytes[self.pos];
        'value: loop {
            if b == b'[' || b == b'{' {
                level += 1;
                if depth + level >= DEPTH_LIMIT {
                    return Err(Reject);
                }
                let object = b == b'{';
                objects = objects << 1 | u128::from(object);
                self.pos += 1;
                b = self.next_token()?;
                if b != if object { b'}' } else { b']' } {
                    if object {
                        self.member_name(b)?;
                        b = self.next_token()?;
                    }
                    continue 'value;
                }
                // Empty: closed right away, a complete value of the enclosing container.
                self.pos += 1;
                level -= 1;
                objects >>= 1;
                if level == 0 {
                    return Ok(());
                }
            } else {
                self.scalar(b)?;
            }
            // After a complete value inside the container at `level`.
            loop {
                let object = objects & 1 == 1;
                match self.next_token()? {
                    b',' => {
                        self.pos += 1;
                        b = self.next_token()?;
                        if object {
                            self.member_name(b)?;
                            b = self.next_token()?;
                        }
                        continue 'value;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return Err(Reject),
                }
                self.pos += 1;
                level -= 1;
                objects >>= 1;
                if level == 0 {
                    return Ok(());
                }
            }
        }
    }

    /// A member name nobody asked about, at `b` (its opening quote), then `:`.
    #[inline(always)]
    fn member_name(&mut self, b: u8) -> Step<()> {
        if b != b'"' {
            return Err(Reject);
        }
        self.pos += 1;
        self.string()?;
        self.colon()
    }

    /// The rest of a string after its opening quote, up to and including the closing one.
    /// Returns whether it had escapes.
    #[inline(always)]
    fn string(&mut self) -> Step<bool> {
        let bytes = self.bytes;
        let mut i = self.pos;
        let mut escaped = false;
        loop {
            // Plain ASCII eight bytes at a time, up to the first byte that needs a look.
            while let Some(word) = self.word_at(i) {
                let special = special_bytes(word);
                if special != 0 {
                    i += (special.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            match bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    i = self.escape(i)?;
                }
                Some(&b) if b >= 0x80 => i = self.multibyte(i)?,
                Some(&b) if b >= 0x20 => i += 1,
                // A control character, or the end of the line.
                _ => return Err(Reject),
            }
        }
    }

    /// The escape whose backslash is at `i`; returns the index after it.
    #[inline]
    fn escape(&mut self, i: usize) -> Step<usize> {
        let bytes = self.bytes;
        match bytes.get(i + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
            Some(b'u') => {
                let unit = hex4(bytes, i + 2)?;
                match unit {
                    0x1b | 0x9b => {
                        if self.escaped_ansi.is_none() {
                            self.escaped_ansi = Some(i);
                        }
                        Ok(i + 6)
                    }
                    // A high surrogate must be followed by an escaped low one.
                    0xD800..=0xDBFF => {
                        if bytes.get(i + 6) == Some(&b'\\')
                            && bytes.get(i + 7) == Some(&b'u')
                            && matches!(hex4(bytes, i + 8)?, 0xDC00..=0xDFFF)
                        {
                            Ok(i + 12)
                        } else {
                            Err(Reject)
                        }
                    }
                    0xDC00..=0xDFFF => Err(Reject),
                    _ => Ok(i + 6),
                }
            }
            _ => Err(Reject),
        }
    }

    /// Validates the UTF-8 sequence starting at `i` (a byte >= 0x80) and any that directly
    /// follow it, per the Unicode standard (Table 3-7: no overlongs, no surrogates, nothing
    /// above U+10FFFF). Returns the index after them.
    #[inline]
    fn multibyte(&mut self, mut i: usize) -> Step<usize> {
        let bytes = self.bytes;
        let cont = |at: usize| matches!(bytes.get(at), Some(&b) if (b as i8) < -64);
        loop {
            let lead = bytes[i];
            let second = bytes.get(i + 1).copied().unwrap_or(0);
            i += match lead {
                0xC2..=0xDF => {
                    if (second as i8) >= -64 {
                        return Err(Reject);
                    }
                    if lead == 0xC2 && second == 0x9B && self.raw_ansi.is_none() {
                        self.raw_ansi = Some(i);
                    }
                    2
                }
                0xE0..=0xEF => {
                    let second_ok = match lead {
                        0xE0 => (0xA0..=0xBF).contains(&second),
                        0xED => (0x80..=0x9F).contains(&second),
                        _ => (second as i8) < -64,
                    };
                    if !second_ok || !cont(i + 2) {
                        return Err(Reject);
                    }
                    3
                }
                0xF0..=0xF4 => {
                    let second_ok = match lead {
                        0xF0 => (0x90..=0xBF).contains(&second),
                        0xF4 => (0x80..=0x8F).contains(&second),
                        _ => (second as i8) < -64,
                    };
                    if !second_ok || !cont(i + 2) || !cont(i + 3) {
                        return Err(Reject);
                    }
                    4
                }
                _ => return Err(Reject),
            };
            match bytes.get(i) {
                Some(&b) if b >= 0x80 => {}
                _ => return Ok(i),
            }
        }
    }

    /// A number at `self.pos`, with the grammar and range serde_json applies. Returns
    /// whether it is a non-negative integer literal (no sign, fraction or exponent).
    #[inline]
    fn number(&mut self) -> Step<bool> {
        let bytes = self.bytes;
        let start = self.pos;
        let mut i = start;
        let negative = bytes.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        // Digits of the integer part, a lone `0` not counted: the number is below
        // 10^magnitude before its exponent.
        let magnitude = match bytes.get(i) {
            Some(b'0') => {
                i += 1;
                0
            }
            Some(b'1'..=b'9') => {
                let digits = i;
                i += 1;
                while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
                (i - digits) as i64
            }
            _ => return Err(Reject),
        };
        let mut integer = !negative;
        if bytes.get(i) == Some(&b'.') {
            integer = false;
            i += 1;
            let fraction = i;
            while matches!(bytes.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == fraction {
                return Err(Reject);
            }
        }
        let mut exponent: i64 = 0;
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            integer = false;
            i += 1;
            let negative_exponent = match bytes.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let digits = i;
            while let Some(&d @ b'0'..=b'9') = bytes.get(i) {
                // Saturates far above any exponent that could matter.
                exponent = (exponent * 10 + i64::from(d - b'0')).min(1 << 40);
                i += 1;
            }
            if i == digits {
                return Err(Reject);
            }
            if negative_exponent {
                exponent = -exponent;
            }
        }
        self.pos = i;
        if magnitude + exponent > MAX_SAFE_EXP && !finite_per_serde_json(&bytes[start..i]) {
            return Err(Reject);
        }
        Ok(integer)
    }

    /// `aoi.seq` at `self.pos`: its value when it is a non-negative integer literal that fits
    /// a `u64`, else `None` (serde_json hands the visitor an `i64` or `f64` then).
    fn seq_number(&mut self) -> Step<Option<u64>> {
        let start = self.pos;
        if !self.number()? {
            return Ok(None);
        }
        let mut value: u64 = 0;
        for &d in &self.bytes[start..self.pos] {
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
            {
                Some(v) => value = v,
                None => return Ok(None),
            }
        }
        Ok(Some(value))
    }
}

/// Whether serde_json parses this (syntactically valid) number as a finite `f64`. Its rules
/// near `f64::MAX` depend on its features (`float_roundtrip` rounds correctly, the default
/// does not), so it is asked rather than imitated.
#[cold]
#[inline(never)]
fn finite_per_serde_json(number: &[u8]) -> bool {
    serde_json::from_slice::<Validated>(number).is_ok()
}

/// A mask with the high bit set in each byte of `word` that is `"`, `\`, below 0x20 or
/// above 0x7F. Bytes after the first flagged one may be flagged wrongly (borrows propagate);
/// only the lowest set bit is used.
#[inline(always)]
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (word.wrapping_sub(ONES * 0x20)
        | quote.wrapping_sub(ONES)
        | backslash.wrapping_sub(ONES)
        | word)
        & HIGH
}

/// The four hex digits at `at`, as a UTF-16 code unit.
#[inline]
fn hex4(bytes: &[u8], at: usize) -> Step<u16> {
    let digits = bytes.get(at..at + 4).ok_or(Reject)?;
    let mut unit = 0u16;
    for &d in digits {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return Err(Reject),
        };
        unit = unit << 4 | u16::from(v);
    }
    Ok(unit)
}

/// Decodes the raw contents of a string the scanner has validated, handing `push` the text
/// piece by piece (runs of literal text and single decoded characters).
fn unescape(raw: &[u8], mut push: impl FnMut(&str)) -> Step<()> {
    fn text(bytes: &[u8]) -> Step<&str> {
        std::str::from_utf8(bytes).map_err(|_| Reject)
    }
    let mut rest = raw;
    while let Some(p) = memchr::memchr(b'\\', rest) {
        push(text(&rest[..p])?);
        let (c, used) = match rest.get(p + 1) {
            Some(b'u') => {
                let unit = hex4(rest, p + 2)?;
                if (0xD800..0xDC00).contains(&unit) {
                    let low = hex4(rest, p + 8)?;
                    let c =
                        0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    (char::from_u32(c).ok_or(Reject)?, 12)
                } else {
                    (char::from_u32(u32::from(unit)).ok_or(Reject)?, 6)
                }
            }
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(b'n') => ('\n', 2),
            Some(b'r') => ('\r', 2),
            Some(b't') => ('\t', 2),
            Some(&b) => (char::from(b), 2),
            None => return Err(Reject),
        };
        push(c.encode_utf8(&mut [0; 4]));
        rest = &rest[p + used..];
    }
    push(text(rest)?);
    Ok(())
}

/// Deserializes like `serde_json::Value` — every string decoded and checked, every number
/// parsed, nesting counted — and keeps nothing: serde_json's verdict and error message for a
/// line, without building the value.
struct Validated;

impl<'de> Deserialize<'de> for Validated {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Validated, D::Error> {
        d.deserialize_any(ValidatedVisitor)
    }
}

struct ValidatedVisitor;

impl<'de> Visitor<'de> for ValidatedVisitor {
    type Value = Validated;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Validated, E> {
        Ok(Validated)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Validated, A::Error> {
        while seq.next_element::<Validated>()?.is_some() {}
        Ok(Validated)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Validated, A::Error> {
        // Keys go through `deserialize_any` too, which serde_json answers with a checked str.
        while map.next_entry::<Validated, Validated>()?.is_some() {}
        Ok(Validated)
    }
}

#[cfg(test)]
mod tests;
