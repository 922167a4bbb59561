//! A borrowed, flat JSON representation of one line, for checking valid events fast.
//!
//! Parsing a line into a [`serde_json::Value`] allocates every key and string and a map node per
//! object, then frees them all: more than half of what schema validation costs. jsonschema
//! validates any representation that implements its [`Json`] traits, so a line is instead read
//! into a tape of [`Item`]s whose strings borrow from the line, and validated there. A
//! [`LineTape`] keeps its buffers from one line to the next, so a line allocates nothing.
//!
//! The parser is strict and conservative: it accepts a subset of what serde_json accepts, and
//! what it accepts reads back as exactly the `Value` serde_json builds (numbers other than short
//! integers, and so every float, are read by serde_json itself). It declines what the tape cannot
//! stand for exactly (an object with a repeated key, which `Value` collapses to its last value;
//! an object of more than [`MAX_MEMBERS`] members; nesting deeper than [`MAX_DEPTH`]) and
//! whatever it is unsure of.
//!
//! The tape only answers "is this line valid?". A line it says is not, or declines, goes through
//! `Value` and [`EventValidator`](crate::discover::schema::EventValidator) as before, so findings
//! and their messages never depend on the tape.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use jsonschema::json::{Array, Json, Node, NodeIdentity, Object};
use jsonschema::{Draft, JsonType};
use serde_json::{Number, Value};

/// Members an object may have on the tape; repeated keys are looked for pairwise, so a larger
/// object goes through `Value`.
const MAX_MEMBERS: u32 = 64;

/// Nesting the tape reads; deeper lines go through `Value` (serde_json's own limit is 128).
const MAX_DEPTH: u32 = 100;

/// One entry of the tape. A container is followed by its contents: an array by its elements, an
/// object by each member's [`Item::Key`] and value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item<'s> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(Number),
    /// A string: a slice of the line, or of the tape's decoded text when it had escapes.
    String(&'s str),
    /// An array of `len` elements; `end` is the index after its last descendant.
    Array {
        /// Elements.
        len: u32,
        /// Index after the last descendant.
        end: u32,
    },
    /// An object of `len` members; `end` is the index after its last descendant.
    Object {
        /// Members.
        len: u32,
        /// Index after the last descendant.
        end: u32,
    },
    /// An object member's name; its value follows.
    Key(&'s str),
}

/// The buffers a line is parsed into, kept from one line to the next.
#[derive(Debug, Default)]
pub(crate) struct LineTape {
    /// Always empty between lines: only its allocation is kept.
    items: Vec<Item<'static>>,
    /// The text of strings that had escapes, decoded.
    decoded: String,
    /// The items that stand for such strings, and where their text is in `decoded`.
    fixups: Vec<(usize, Range<usize>)>,
}

impl LineTape {
    /// Parses `line` onto the tape and calls `f` with it. `None` when `line` is not one JSON
    /// value, or when the tape declines it (see the module documentation).
    pub(crate) fn with_line<R>(
        &mut self,
        line: &str,
        f: impl FnOnce(&[Item<'_>]) -> R,
    ) -> Option<R> {
        let mut items = recycle(std::mem::take(&mut self.items));
        self.decoded.clear();
        self.fixups.clear();
        let parsed = u32::try_from(line.len()).ok().and_then(|_| {
            let mut parser = Parser {
                line,
                bytes: line.as_bytes(),
                pos: 0,
                items: &mut items,
                decoded: &mut self.decoded,
                fixups: &mut self.fixups,
            };
            parser.skip_whitespace();
            parser.value(0)?;
            parser.skip_whitespace();
            (parser.pos == line.len()).then_some(())
        });
        let result = parsed.and_then(|()| {
            for (at, range) in &self.fixups {
                let text = self.decoded.get(range.clone())?;
                match items.get_mut(*at)? {
                    Item::String(s) | Item::Key(s) => *s = text,
                    _ => return None,
                }
            }
            if has_repeated_key(&items) {
                return None;
            }
            Some(f(&items))
        });
        self.items = recycle(items);
        result
    }
}

/// `items`' allocation, emptied, for items of another lifetime. The collect reuses the buffer
/// in place (the two types have one layout), so no line allocates a tape of its own.
fn recycle<'b>(mut items: Vec<Item<'_>>) -> Vec<Item<'b>> {
    items.clear();
    // `filter` cannot change the lifetime, and `map` would need a value to map to.
    #[allow(clippy::unnecessary_filter_map)]
    items.into_iter().filter_map(|_| None).collect()
}

/// Whether an object on the tape has two members of one name.
fn has_repeated_key(items: &[Item<'_>]) -> bool {
    items.iter().enumerate().any(|(at, item)| {
        let Item::Object { len: 2.., .. } = item else {
            return false;
        };
        let Some(object) = TapeNode::new(items, at).as_object() else {
            return false;
        };
        // Names are compared only when two of them fall on one bit of a cheap signature.
        let mut seen = 0u64;
        let distinct = object.members().all(|(name, _)| {
            let bit = 1u64 << name_signature(name);
            let new = seen & bit == 0;
            seen |= bit;
            new
        });
        if distinct {
            return false;
        }
        let mut members = object.members();
        while let Some((name, _)) = members.next() {
            let same = |(other, _): (&str, TapeNode<'_>)| {
                other.len() == name.len()
                    && other.as_bytes().first() == name.as_bytes().first()
                    && other == name
            };
            if members.clone().any(same) {
                return true;
            }
        }
        false
    })
}

/// A number below 64 from a member name's length and ends: equal names have equal signatures.
fn name_signature(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let byte = |i: Option<&u8>| u64::from(i.copied().unwrap_or(0));
    let mixed = (bytes.len() as u64)
        ^ byte(bytes.first()) << 8
        ^ byte(bytes.get(1)) << 16
        ^ byte(bytes.last()) << 24;
    // The top 6 bits of a Fibonacci hash.
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as u32
}

/// Reads one line onto a tape.
struct Parser<'t, 's> {
    line: &'s str,
    bytes: &'s [u8],
    pos: usize,
    items: &'t mut Vec<Item<'s>>,
    decoded: &'t mut String,
    fixups: &'t mut Vec<(usize, Range<usize>)>,
}

impl<'s> Parser<'_, 's> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// JSON whitespace, as serde_json skips it.
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// One value at `pos` (no whitespace before it), `depth` containers deep.
    fn value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string(Item::String),
            b't' => self.literal(b"true", Item::Bool(true)),
            b'f' => self.literal(b"false", Item::Bool(false)),
            b'n' => self.literal(b"null", Item::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], item: Item<'s>) -> Option<()> {
        if self.bytes.get(self.pos..self.pos + word.len())? != word {
            return None;
        }
        self.pos += word.len();
        self.items.push(item);
        Some(())
    }

    /// Writes the final header of the container whose header is at `at`.
    fn close(&mut self, at: usize, header: impl FnOnce(u32) -> Item<'s>) -> Option<()> {
        let end = u32::try_from(self.items.len()).ok()?;
        *self.items.get_mut(at)? = header(end);
        Some(())
    }

    /// After an element or member: `Some(true)` past the `,` before another, `Some(false)` past
    /// the `close` that ends the container.
    fn another(&mut self, close: u8) -> Option<bool> {
        self.skip_whitespace();
        let b = self.peek()?;
        self.pos += 1;
        if b == b',' {
            self.skip_whitespace();
            Some(true)
        } else {
            (b == close).then_some(false)
        }
    }

    fn array(&mut self, depth: u32) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        let at = self.items.len();
        self.items.push(Item::Array { len: 0, end: 0 });
        let mut len = 0u32;
        self.skip_whitespace();
        if self.peek()? == b']' {
            self.pos += 1;
        } else {
            loop {
                self.value(depth + 1)?;
                len = len.checked_add(1)?;
                if !self.another(b']')? {
                    break;
                }
            }
        }
        self.close(at, |end| Item::Array { len, end })
    }

    fn object(&mut self, depth: u32) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        let at = self.items.len();
        self.items.push(Item::Object { len: 0, end: 0 });
        let mut len = 0u32;
        self.skip_whitespace();
        if self.peek()? == b'}' {
            self.pos += 1;
        } else {
            loop {
                len += 1;
                if len > MAX_MEMBERS || self.peek()? != b'"' {
                    return None;
                }
                self.string(Item::Key)?;
                self.skip_whitespace();
                if self.peek()? != b':' {
                    return None;
                }
                self.pos += 1;
                self.skip_whitespace();
                self.value(depth + 1)?;
                if !self.another(b'}')? {
                    break;
                }
            }
        }
        self.close(at, |end| Item::Object { len, end })
    }

    /// The string whose opening quote is at `pos`, pushed as `item`.
    fn string(&mut self, item: fn(&'s str) -> Item<'s>) -> Option<()> {
        let start = self.pos + 1;
        let end = start + plain_len(self.bytes.get(start..)?);
        match self.bytes.get(end)? {
            b'"' => {
                self.pos = end + 1;
                self.items.push(item(self.line.get(start..end)?));
                Some(())
            }
            b'\\' => {
                let range = self.escaped_string(start, end)?;
                // The text is set once the line is read, when `decoded` no longer grows.
                self.fixups.push((self.items.len(), range));
                self.items.push(item(""));
                Some(())
            }
            // A raw control character, which JSON does not allow in a string.
            _ => None,
        }
    }

    /// Decodes the string from `start`, whose first escape is at `escape`, into `decoded`.
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, mut escape: usize) -> Option<Range<usize>> {
        let from = self.decoded.len();
        self.decoded.push_str(self.line.get(start..escape)?);
        loop {
            let mut next = escape + 2;
            let c = match self.bytes.get(escape + 1)? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let unit = self.hex4(next)?;
                    next += 4;
                    match unit {
                        0xD800..=0xDBFF => {
                            // Only a high surrogate followed by a low one makes a character.
                            if self.bytes.get(next..next + 2)? != b"\\u" {
                                return None;
                            }
                            let low = self.hex4(next + 2)?;
                            if !(0xDC00..=0xDFFF).contains(&low) {
                                return None;
                            }
                            next += 6;
                            char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                        }
                        0xDC00..=0xDFFF => return None,
                        unit => char::from_u32(unit)?,
                    }
                }
                _ => return None,
            };
            self.decoded.push(c);
            let run = plain_len(self.bytes.get(next..)?);
            self.decoded.push_str(self.line.get(next..next + run)?);
            escape = next + run;
            match self.bytes.get(escape)? {
                b'"' => break,
                b'\\' => {}
                _ => return None,
            }
        }
        self.pos = escape + 1;
        Some(from..self.decoded.len())
    }

    /// The four hex digits at `at`.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes.get(at..at + 4)?;
        digits.iter().try_fold(0u32, |n, &b| {
            let d = char::from(b).to_digit(16)?;
            Some(n << 4 | d)
        })
    }

    /// The number at `pos`: an integer of up to 18 digits is read here, any other number by
    /// serde_json, so every number is the one `Value` holds.
    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let digits_start = self.pos;
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => self.skip_digits(),
            _ => return None,
        }
        let digits = self.bytes.get(digits_start..self.pos)?;
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.pos += 1;
            self.required_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.required_digits()?;
        }
        let short = (integer && digits.len() <= 18).then(|| {
            digits
                .iter()
                .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'))
        });
        let number = match (short, negative) {
            (Some(n), false) => Number::from(n),
            // `-0` is the float -0.0 to serde_json.
            (Some(n), true) if n > 0 => Number::from(-i64::try_from(n).ok()?),
            // The parser `Value` uses, on the number alone.
            _ => self.line.get(start..self.pos)?.parse::<Number>().ok()?,
        };
        self.items.push(Item::Number(number));
        Some(())
    }

    fn skip_digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    /// One digit or more.
    fn required_digits(&mut self) -> Option<()> {
        if !self.peek()?.is_ascii_digit() {
            return None;
        }
        self.skip_digits();
        Some(())
    }
}

/// How many bytes at the start of `bytes` may stand in a string as they are: everything before
/// the first `"`, `\` or control character.
#[inline(always)]
fn plain_len(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `word` that is zero; exact up to the first one.
    let zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut n = 0;
    for chunk in &mut chunks {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(chunk);
        let special = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
        if special != 0 {
            return n + (special.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    let rest = bytes.get(n..).unwrap_or_default();
    n + rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(rest.len())
}

/// The tape as a jsonschema instance representation.
#[derive(Debug)]
pub(crate) struct Tape;

/// A value on a tape: the tape and its index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeNode<'a> {
    items: &'a [Item<'a>],
    at: u32,
}

impl<'a> TapeNode<'a> {
    /// The root value of a parsed tape.
    pub(crate) fn root(items: &'a [Item<'a>]) -> TapeNode<'a> {
        TapeNode { items, at: 0 }
    }

    /// The value at index `at`; `at` is less than the tape's length, so below `u32::MAX`.
    fn new(items: &'a [Item<'a>], at: usize) -> TapeNode<'a> {
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        TapeNode { items, at }
    }

    fn item(&self) -> Option<&'a Item<'a>> {
        self.items.get(self.at as usize)
    }

    /// Index after this value and its descendants.
    fn end(&self) -> u32 {
        match self.item() {
            Some(Item::Array { end, .. } | Item::Object { end, .. }) => *end,
            _ => self.at + 1,
        }
    }

    /// The text of a string or member name.
    fn text(&self) -> Option<&'a str> {
        match self.item() {
            Some(Item::String(s) | Item::Key(s)) => Some(s),
            _ => None,
        }
    }

    /// The value as a `serde_json::Value` (cold paths: errors and `const` of a container).
    fn value(&self) -> Value {
        match self.item() {
            None | Some(Item::Null) => Value::Null,
            Some(Item::Bool(b)) => Value::Bool(*b),
            Some(Item::Number(n)) => Value::Number(n.clone()),
            Some(Item::String(s) | Item::Key(s)) => Value::String((*s).to_owned()),
            Some(Item::Array { .. }) => Value::Array(
                self.as_array()
                    .map(|a| a.elements().map(|e| e.value()).collect())
                    .unwrap_or_default(),
            ),
            Some(Item::Object { .. }) => Value::Object(
                self.as_object()
                    .map(|o| {
                        o.members()
                            .map(|(k, v)| (k.to_owned(), v.value()))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
        }
    }
}

impl Json for Tape {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = String;
    type StringBuffer = ();

    // A lookup scans the members, so one pass over them is never worse; no object on a tape
    // has more than this many.
    const KEYS_PER_LOOKUP: usize = MAX_MEMBERS as usize;
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>(_: &mut (), string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        f(TapeNode::root(&[Item::String(string)]))
    }
}

impl<'a> Node<'a, Tape> for TapeNode<'a> {
    type Object = TapeObject<'a>;
    type Array = TapeArray<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<TapeObject<'a>> {
        match self.item() {
            Some(Item::Object { len, end }) => Some(TapeObject {
                items: self.items,
                at: self.at,
                len: *len,
                end: *end,
            }),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<TapeArray<'a>> {
        match self.item() {
            Some(Item::Array { len, end }) => Some(TapeArray {
                items: self.items,
                at: self.at,
                len: *len,
                end: *end,
            }),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        self.text().map(Cow::Borrowed)
    }

    fn as_number(&self) -> Option<&'a Number> {
        match self.item() {
            Some(Item::Number(n)) => Some(n),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.item() {
            Some(Item::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.item(), Some(Item::Null))
    }

    fn json_type(&self) -> JsonType {
        match self.item() {
            None | Some(Item::Null) => JsonType::Null,
            Some(Item::Bool(_)) => JsonType::Boolean,
            Some(Item::Number(_)) => JsonType::Number,
            Some(Item::String(_) | Item::Key(_)) => JsonType::String,
            Some(Item::Array { .. }) => JsonType::Array,
            Some(Item::Object { .. }) => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        // `const`/`enum` on a string (an event's `type`) is checked on every line: no copy.
        match (self.item(), expected) {
            (Some(Item::String(s)), Value::String(e)) => *s == e.as_str(),
            (Some(Item::String(_)), _) => false,
            _ => jsonschema::json::cmp::equal(&self.value(), expected),
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(self.value())
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::tagged(self.items.as_ptr() as usize, self.at))
    }
}

/// An object on a tape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeObject<'a> {
    items: &'a [Item<'a>],
    at: u32,
    len: u32,
    end: u32,
}

/// An array on a tape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeArray<'a> {
    items: &'a [Item<'a>],
    at: u32,
    len: u32,
    end: u32,
}

/// The members of an object, in line order.
#[derive(Debug, Clone)]
pub(crate) struct Members<'a> {
    items: &'a [Item<'a>],
    next: u32,
    end: u32,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let Some(Item::Key(name)) = self.items.get(self.next as usize) else {
            return None;
        };
        let value = TapeNode {
            items: self.items,
            at: self.next + 1,
        };
        self.next = value.end();
        Some((name, value))
    }
}

/// The elements of an array, in order.
#[derive(Debug)]
pub(crate) struct Elements<'a> {
    items: &'a [Item<'a>],
    next: u32,
    end: u32,
}

impl<'a> Iterator for Elements<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<TapeNode<'a>> {
        if self.next >= self.end {
            return None;
        }
        let value = TapeNode {
            items: self.items,
            at: self.next,
        };
        self.next = value.end();
        Some(value)
    }
}

impl<'a> Object<'a, Tape> for TapeObject<'a> {
    type Node = TapeNode<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.len as usize
    }

    fn get(&self, key: &String) -> Option<TapeNode<'a>> {
        // Names are unique on a tape (see `has_repeated_key`).
        self.members()
            .find(|(name, _)| *name == key.as_str())
            .map(|(_, value)| value)
    }

    fn members(&self) -> Members<'a> {
        Members {
            items: self.items,
            next: self.at + 1,
            end: self.end,
        }
    }
}

impl<'a> Array<'a, Tape> for TapeArray<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.len as usize
    }

    fn elements(&self) -> Elements<'a> {
        Elements {
            items: self.items,
            next: self.at + 1,
            end: self.end,
        }
    }
}

/// An event schema compiled for the tape, narrowed per event type like
/// [`EventValidator`](crate::discover::schema::EventValidator); in each narrowed validator the
/// type's own discriminator entry is settled (see [`settle_discriminator`]). Only validity is
/// asked of it, never errors, so the narrower schema changes nothing the report shows.
///
/// Each validator is compiled when a line first needs it: a stream of one domain event type
/// compiles one, not one per type the schema names (framework types included, whose events the
/// verifier checks itself), and the thread that reads the stream does not wait for any of them.
#[derive(Debug)]
pub(crate) struct TapeValidator {
    whole: Lazy,
    /// The narrowed validators, one per event type.
    by_type: Vec<(String, Lazy)>,
}

/// A schema and its validator, compiled on first use; `None` if it does not compile.
#[derive(Debug)]
struct Lazy {
    schema: Value,
    compiled: OnceLock<Option<jsonschema::Validator<Tape>>>,
}

impl Lazy {
    fn new(schema: Value) -> Lazy {
        Lazy {
            schema,
            compiled: OnceLock::new(),
        }
    }

    fn get(&self) -> Option<&jsonschema::Validator<Tape>> {
        self.compiled
            .get_or_init(|| {
                jsonschema::options_for::<Tape>()
                    .with_draft(Draft::Draft202012)
                    .build(&self.schema)
                    .ok()
            })
            .as_ref()
    }
}

impl TapeValidator {
    /// Prepares `schema` to be compiled as JSON Schema 2020-12, whole and narrowed per type.
    pub(crate) fn new(schema: &Value) -> TapeValidator {
        let by_type = crate::discover::schema::narrowed_by_type(schema)
            .into_iter()
            .map(|(ty, mut narrow)| {
                settle_discriminator(&mut narrow, &ty);
                (ty, Lazy::new(narrow))
            })
            .collect();
        TapeValidator {
            whole: Lazy::new(schema.clone()),
            by_type,
        }
    }

    /// True when the line on `tape` is valid; `false` may also mean the tape cannot tell (its
    /// schema does not compile for the tape).
    pub(crate) fn is_valid(&self, tape: &[Item<'_>]) -> bool {
        let root = TapeNode::root(tape);
        let ty = root
            .as_object()
            .and_then(|o| o.members().find(|(name, _)| *name == "type"))
            .and_then(|(_, t)| t.text());
        // A handful of types, most of different lengths: a scan beats hashing the name.
        let validator = ty
            .and_then(|ty| self.by_type.iter().find(|(t, _)| t.as_str() == ty))
            .map_or(&self.whole, |(_, v)| v);
        validator.get().is_some_and(|v| v.is_valid(root))
    }
}

/// In `schema`, the validator for events of type `ty` only, replaces each top-level `allOf`
/// entry `{"if": {"properties": {"type": {"const": ty}}, "required": ["type"]}, "then": S}` by
/// `S`: the condition holds for every event it sees, so evaluating it is wasted.
fn settle_discriminator(schema: &mut Value, ty: &str) {
    let Some(Value::Array(rules)) = schema.get_mut("allOf") else {
        return;
    };
    let holds = serde_json::json!({"properties": {"type": {"const": ty}}, "required": ["type"]});
    for rule in rules {
        let Value::Object(entry) = rule else {
            continue;
        };
        let annotations_only = entry.keys().all(|k| {
            matches!(
                k.as_str(),
                "if" | "then" | "$comment" | "title" | "description"
            )
        });
        if annotations_only && entry.get("if") == Some(&holds) {
            if let Some(then) = entry.remove("then") {
                *rule = then;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::any;
    use serde_json::json;

    use super::*;

    impl LineTape {
        pub(super) fn accepts(&mut self, line: &str) -> bool {
            self.with_line(line, |_| ()).is_some()
        }

        /// The line as the tape reads it back.
        pub(super) fn value(&mut self, line: &str) -> Option<Value> {
            self.with_line(line, |items| TapeNode::root(items).value())
        }
    }

    /// Lines whose validity the tape must judge exactly as `Value` does.
    const LINES: &[&str] = &[
        r#"{"type":"hit","rank":1,"id":"a","tags":["x","y"],"score":0.5}"#,
        r#"{"type":"hit","rank":-1,"id":"a"}"#,
        r#"{"type":"hit","rank":1.0,"id":"a"}"#,
        r#"{"type":"hit","rank":1e2,"id":"a"}"#,
        r#"{"type":"hit","rank":-0,"id":"a"}"#,
        r#"{"type":"hit","rank":18446744073709551616,"id":"a"}"#,
        r#"{"type":"hit","rank":9007199254740993,"id":"a"}"#,
        r#"{"type":"hit","rank":"1","id":"a"}"#,
        r#"{"type":"hit","id":"a\"b\\c\u00e9\ud83e\udd80"}"#,
        r#"{"type":"hit","id":"héllo 🦀","rank":3}"#,
        r#"{"type":"hit","id":"ab","rank":3}"#,
        r#"{"type":"hit","id":"abcdefghijk","rank":3}"#,
        r#"{"type":"hit","id":"a","rank":1,"rank":"x"}"#,
        r#"{"type":"hit","id":"a","rank":"x","rank":1}"#,
        r#"{"type":"hit","id":"a","rank":2,"tags":["x","x"]}"#,
        r#"{"type":"hit","id":"a","rank":2,"tags":[]}"#,
        r#"{"type":"hit","id":"a","rank":2,"nested":{"a":[1,{"b":null}],"c":true}}"#,
        r#"{"type":"hit","id":"a","rank":2,"nested":{"a":[1,{"b":false}]}}"#,
        r#"{"type":"hit","id":"a","rank":2,"Bad-Name":1}"#,
        r#"{"type":"hit","id":"a","rank":2,"extra":1,"more":2,"most":3}"#,
        r#"{"type":"hit"}"#,
        r#"{"type":"other","anything":[1,2,3]}"#,
        r#"{"type":5}"#,
        r#"{"type":"hit","id":null,"rank":true}"#,
        r#"{"type":"hit","id":"a","rank":2,"kind":"gold"}"#,
        r#"{"type":"hit","id":"a","rank":2,"kind":"tin"}"#,
        r#"{"type":"hit","id":"a","rank":2,"pair":[1,"x"]}"#,
        r#"{"type":"hit","id":"a","rank":2,"pair":["x",1]}"#,
        r#"[1,2,3]"#,
        r#""text""#,
        r#"null"#,
    ];

    fn schemas() -> Vec<Value> {
        vec![
            json!({"type": "object", "required": ["type"]}),
            json!({
                "type": "object",
                "allOf": [{
                    "if": {"properties": {"type": {"const": "hit"}}, "required": ["type"]},
                    "then": {
                        "properties": {
                            "type": {"const": "hit"},
                            "rank": {"type": "integer", "minimum": 0},
                            "id": {"type": "string", "minLength": 2, "maxLength": 10},
                            "score": {"type": "number", "exclusiveMaximum": 1},
                            "tags": {"type": "array", "uniqueItems": true, "minItems": 1,
                                     "items": {"type": "string"}},
                            "nested": {"type": "object",
                                       "properties": {"a": {"type": "array",
                                           "prefixItems": [{"type": "integer"},
                                               {"type": "object", "properties": {"b": {"type": "null"}}}]}}},
                            "kind": {"enum": ["gold", "silver"]},
                            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}
                        },
                        "required": ["rank", "id"],
                        "propertyNames": {"pattern": "^[a-z]+$"},
                        "maxProperties": 5
                    }
                }]
            }),
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"type": {"type": "string"}, "id": {}, "rank": {}}}),
            json!({"oneOf": [{"required": ["rank"]}, {"required": ["id"]}]}),
            json!({"not": {"properties": {"rank": {"multipleOf": 2}}}}),
            json!({"const": {"type": "hit", "rank": 1, "id": "a"}}),
            json!({"dependentRequired": {"tags": ["score"]}, "minProperties": 3}),
            json!({"required": ["type", "rank", "id"]}),
            json!({"required": ["type", "rank", "id", "tags"], "maxProperties": 4}),
            json!({"patternProperties": {"^r": {"type": "integer"}}, "unevaluatedProperties": {"type": "string"}}),
        ]
    }

    #[test]
    fn the_tape_judges_every_line_as_value_does() {
        let mut tape = LineTape::default();
        let mut outcomes = [0; 2];
        for schema in schemas() {
            let on_tape = TapeValidator::new(&schema);
            let on_value = jsonschema::draft202012::new(&schema).expect("compiles");
            for line in LINES {
                let value: Value = serde_json::from_str(line).expect("valid JSON");
                let expected = on_value.is_valid(&value);
                let got = tape.with_line(line, |doc| on_tape.is_valid(doc));
                // The tape declines only an object with a repeated key.
                let declines =
                    line.contains(r#""rank":1,"rank""#) || line.contains(r#""rank":"x","rank""#);
                let want = (!declines).then_some(expected);
                assert_eq!(got, want, "{line} against {schema}");
                outcomes[usize::from(expected)] += 1;
            }
        }
        assert!(
            outcomes.iter().all(|&n| n > 40),
            "valid/invalid: {outcomes:?}"
        );
    }

    #[test]
    fn a_settled_discriminator_keeps_only_what_applies_to_the_type() {
        let condition =
            |ty: &str| json!({"properties": {"type": {"const": ty}}, "required": ["type"]});
        let mut schema = json!({"allOf": [
            {"if": condition("hit"), "then": {"required": ["rank"]}, "$comment": "hits"},
            {"if": condition("other"), "then": {"required": ["id"]}},
            {"if": condition("hit"), "then": {"required": ["id"]}, "else": false},
            {"if": {"properties": {"type": {"const": "hit"}}}, "then": {"required": ["x"]}},
            {"required": ["type"]}
        ]});
        settle_discriminator(&mut schema, "hit");
        assert_eq!(
            schema,
            json!({"allOf": [
                {"required": ["rank"]},
                {"if": condition("other"), "then": {"required": ["id"]}},
                {"if": condition("hit"), "then": {"required": ["id"]}, "else": false},
                {"if": {"properties": {"type": {"const": "hit"}}}, "then": {"required": ["x"]}},
                {"required": ["type"]}
            ]})
        );
    }

    #[test]
    fn only_the_validators_lines_need_are_compiled() {
        let schema = &schemas()[1];
        let on_tape = TapeValidator::new(schema);
        fn compiled(v: &TapeValidator) -> Vec<&str> {
            let mut names: Vec<&str> = v
                .by_type
                .iter()
                .filter(|(_, lazy)| lazy.compiled.get().is_some())
                .map(|(ty, _)| ty.as_str())
                .collect();
            if v.whole.compiled.get().is_some() {
                names.push("(whole)");
            }
            names
        }
        assert_eq!(on_tape.by_type.len(), 1);
        assert!(compiled(&on_tape).is_empty());
        let mut tape = LineTape::default();
        let hit = r#"{"type":"hit","rank":1,"id":"ab"}"#;
        assert_eq!(tape.with_line(hit, |doc| on_tape.is_valid(doc)), Some(true));
        assert_eq!(compiled(&on_tape), ["hit"]);
        let other = r#"{"type":"other"}"#;
        assert_eq!(
            tape.with_line(other, |doc| on_tape.is_valid(doc)),
            Some(true)
        );
        assert_eq!(compiled(&on_tape), ["hit", "(whole)"]);
    }

    #[test]
    fn repeated_keys_and_bad_json_are_left_to_value() {
        let mut tape = LineTape::default();
        assert!(!tape.accepts(r#"{"a":1,"a":2}"#));
        assert!(!tape.accepts(r#"{"a":{"b":1,"b":1}}"#));
        assert!(!tape.accepts(r#"{"a":1,"\u0061":2}"#));
        assert!(!tape.accepts(r#"{"a":[{"x":1}],"b":{"a":2},"c":3,"a":4}"#));
        assert!(!tape.accepts(r#"[1,{"b":[{"c":1,"d":2,"c":3}]}]"#));
        assert!(tape.accepts(r#"[{"a":1},{"a":2}]"#));
        assert!(tape.accepts(r#"{"a":1,"b":{"a":2}}"#));
        assert!(!tape.accepts(r#"{"a":1} x"#));
        assert!(!tape.accepts(r#"{"a":1,}"#));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(!tape.accepts(&deep));
        let wide: String = (0..70).map(|i| format!(",\"k{i}\":{i}")).collect();
        assert!(!tape.accepts(&format!("{{\"a\":0{wide}}}")));
    }

    #[test]
    fn numbers_strings_and_whitespace_read_as_serde_json_reads_them() {
        let lines = [
            "0",
            "-0",
            "1",
            "-1",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "12345678901234567890",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "0.1",
            "0.919",
            "-0.0",
            "1e2",
            "1E+2",
            "1e-2",
            "123.456e7",
            "2.5e-324",
            "1.7976931348623157e308",
            "1e-400",
            r#""\u00e9\u00E9""#,
            r#""\ud83e\udd80 and \uD83E\uDD80x""#,
            r#""\/\b\f\n\r\t\"\\""#,
            r#""a\u0000b""#,
            "\"caf\u{e9} \u{1f980} \u{7f}\"",
            " \t\r\n{ \"a\" : [ 1 , 2 , { } , [ ] ] , \"b\" :null } \n",
            r#"{"esc\"aped":"x","plain":"y"}"#,
            "[true,false,null]",
        ];
        let mut tape = LineTape::default();
        for line in lines {
            let value: Value = serde_json::from_str(line).expect("valid JSON");
            let read = tape
                .value(line)
                .unwrap_or_else(|| panic!("declined {line}"));
            assert_eq!(read, value, "{line}");
            // `==` on numbers compares their kind too: 1.0 is not 1.
            assert_eq!(read.to_string(), value.to_string(), "{line}");
        }
    }

    #[test]
    fn what_serde_json_rejects_the_tape_rejects() {
        let lines = [
            "",
            " ",
            "01",
            "-01",
            "1.",
            ".1",
            "-",
            "1e",
            "1e+",
            "+1",
            "1.e2",
            "0x10",
            "NaN",
            "Infinity",
            "1e400",
            "-1e400",
            "tru",
            "nul",
            "falsey",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\":}",
            "{1:2}",
            "{\"a\":1,}",
            "{,}",
            "{\"a\":1 \"b\":2}",
            "[1]]",
            "[[1]",
            "\"abc",
            "\"a\\\"",
            r#""\x41""#,
            r#""\u12""#,
            r#""\u12G4""#,
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\ud800x""#,
            "\"a\tb\"",
            "\"a\u{1}b\"",
            "\u{feff}1",
            "1 2",
            "{} {}",
            "[] x",
        ];
        let mut tape = LineTape::default();
        for line in lines {
            assert!(
                serde_json::from_str::<Value>(line).is_err(),
                "serde_json accepts {line:?}"
            );
            assert!(!tape.accepts(line), "the tape accepts {line:?}");
        }
    }

    #[test]
    fn the_tape_keeps_its_buffer_from_line_to_line() {
        let mut tape = LineTape::default();
        assert!(tape.accepts(r#"{"type":"hit","tags":["a","b"],"n":1}"#));
        let (buffer, capacity) = (tape.items.as_ptr(), tape.items.capacity());
        assert!(capacity >= 8, "{capacity}");
        assert!(tape.accepts(r#"{"type":"hit","n":2}"#));
        assert_eq!(
            (tape.items.as_ptr(), tape.items.capacity()),
            (buffer, capacity)
        );
        assert!(tape.items.is_empty());
    }

    #[test]
    fn a_reused_tape_reads_each_line_afresh() {
        let mut tape = LineTape::default();
        let lines = [
            r#"{"a":"x\ny","b":[1,2,{"c":"\u00e9"}]}"#,
            r#"{"z":1}"#,
            r#"not json"#,
            r#"["q\"r",{"a":"x\ny"}]"#,
        ];
        for _ in 0..2 {
            for line in lines {
                let expected = serde_json::from_str::<Value>(line).ok();
                assert_eq!(tape.value(line), expected);
            }
        }
    }

    /// `line` with the byte at `at` (wrapped) replaced, removed or followed by `with`.
    fn mutated(line: &str, at: usize, edit: u8, with: char) -> String {
        let mut chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            return with.to_string();
        }
        let at = at % chars.len();
        match edit % 3 {
            0 => chars[at] = with,
            1 => {
                chars.remove(at);
            }
            _ => chars.insert(at, with),
        }
        chars.into_iter().collect()
    }

    /// Any JSON value, with keys and strings that need escapes and numbers of every kind.
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = prop_oneof![
            "[a-z]{0,3}",
            "\\PC{0,6}",
            "[\\x00-\\x1f\"\\\\]{0,3}",
            Just("rank".to_owned()),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            (-3i32..3).prop_map(|i| Value::from(f64::from(i) / 2.0)),
            text.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(text.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_json_on_the_tape_reads_back_and_validates_as_value(value in any_json()) {
            let line = value.to_string();
            let mut tape = LineTape::default();
            proptest::prop_assert_eq!(tape.value(&line), Some(value.clone()), "{}", line);
            for schema in schemas() {
                let on_tape = TapeValidator::new(&schema);
                let on_value = jsonschema::draft202012::new(&schema).expect("compiles");
                let got = tape.with_line(&line, |doc| on_tape.is_valid(doc));
                proptest::prop_assert_eq!(got, Some(on_value.is_valid(&value)));
            }
        }

        #[test]
        fn a_mutated_line_the_tape_accepts_is_the_value_serde_json_reads(
            value in any_json(),
            edits in proptest::collection::vec(
                (any::<usize>(), any::<u8>(), proptest::sample::select(
                    &['"', '\\', ',', ':', '[', ']', '{', '}', '-', '.', 'e', '0', '1', 'u', 'd', ' ', '\u{1}', 'é'][..])),
                1..4),
        ) {
            let mut line = value.to_string();
            for (at, edit, with) in edits {
                line = mutated(&line, at, edit, with);
            }
            let mut tape = LineTape::default();
            if let Some(read) = tape.value(&line) {
                let parsed = serde_json::from_str::<Value>(&line);
                proptest::prop_assert!(parsed.is_ok(), "the tape accepts {:?}, serde_json does not", line);
                if let Ok(parsed) = parsed {
                    proptest::prop_assert_eq!(read.to_string(), parsed.to_string());
                }
            }
        }
    }

    #[test]
    fn the_tape_reads_back_as_the_value() {
        let mut tape = LineTape::default();
        for line in LINES {
            let value: Value = serde_json::from_str(line).expect("valid JSON");
            if let Some(read) = tape.value(line) {
                assert_eq!(read, value, "{line}");
            }
        }
    }
}
