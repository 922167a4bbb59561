//! Validated wire strings: error codes (`[A-Z][A-Z0-9_]*`, §9.1) and single-line messages;
//! and the SDK's one JSON string escaper, for hot paths that render JSON text themselves.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A stable, tool-defined error code matching `[A-Z][A-Z0-9_]*` (spec §9.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(Cow<'static, str>);

/// A string that is not a valid error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid error code {0:?}: codes match [A-Z][A-Z0-9_]* (spec §9.1)")]
pub struct InvalidCode(pub String);

impl Code {
    /// Validates `code` against `[A-Z][A-Z0-9_]*`.
    pub fn new(code: impl Into<String>) -> Result<Code, InvalidCode> {
        let code = code.into();
        if is_valid_code(&code) {
            Ok(Code(Cow::Owned(code)))
        } else {
            Err(InvalidCode(code))
        }
    }

    /// A code from a literal, checked at compile time when used in a `const`.
    ///
    /// ```
    /// const NOT_FOUND: aoi::Code = aoi::Code::from_static("DOC_NOT_FOUND");
    /// assert_eq!(NOT_FOUND.as_str(), "DOC_NOT_FOUND");
    /// ```
    ///
    /// # Panics
    /// When the literal is not a valid code; in a `const` that is a compile error.
    pub const fn from_static(code: &'static str) -> Code {
        assert!(
            is_valid_code(code),
            "error codes match [A-Z][A-Z0-9_]* (spec §9.1)"
        );
        Code(Cow::Borrowed(code))
    }

    /// The code as written on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// True when `code` matches `[A-Z][A-Z0-9_]*`.
pub const fn is_valid_code(code: &str) -> bool {
    let bytes = code.as_bytes();
    if bytes.is_empty() || !bytes[0].is_ascii_uppercase() {
        return false;
    }
    let mut i = 1;
    while i < bytes.len() {
        let b = bytes[i];
        if !(b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
            return false;
        }
        i += 1;
    }
    true
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Code::new(raw).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Code {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "aoi.code".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A stable, tool-defined error code (spec §9.1).",
            "type": "string",
            "pattern": "^[A-Z][A-Z0-9_]*$"
        })
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Makes `text` a single line fit for a `message` or `hint` (§9.1: single line, no ANSI).
///
/// Line breaks (`\n`, `\r`, and the Unicode separators U+2028/U+2029/U+0085) and tabs become one
/// space each, ANSI escape sequences are removed whole, and every other control character is
/// dropped. Text that is already clean is returned without copying.
pub fn single_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_cleaning) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape_sequence(&mut chars),
            '\u{9b}' => skip_csi_body(&mut chars),
            '\n' | '\r' | '\t' | '\u{2028}' | '\u{2029}' | '\u{85}' => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out.trim_end().to_owned())
}

fn needs_cleaning(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

fn skip_escape_sequence(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            skip_csi_body(chars);
        }
        Some(']') => {
            // OSC: up to BEL or ESC \.
            chars.next();
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
        Some(_) => {
            chars.next();
        }
        None => {}
    }
}

fn skip_csi_body(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// What kind of JSON value `v` is, for messages: "null", "a boolean", "a number", "a string",
/// "an array" or "an object".
pub(crate) fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Appends `text` as a JSON string literal, quotes included, escaped byte for byte as
/// `serde_json` escapes it (`\"`, `\\`, the short escapes, `\u00XX` for the other C0
/// controls; everything else as it is). For a hot path that renders an event's JSON text
/// itself (a `RawValue` field): `grep`'s match lines.
#[inline]
pub fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    escape_json(text, |piece| out.push_str(piece));
    out.push('"');
}

/// Hands `text` to `push`, piece by piece, as the inside of a JSON string literal (no
/// quotes), escaped as [`push_json_string`] escapes it: for a writer that is not a `String`
/// (`aoi mcp` streams a line of JSON as the text of a JSON string).
pub fn escape_json(text: &str, mut push: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut done = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none needs an escape (the common case).
        if let Some(block) = bytes.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(block);
            if !needs_escape(u64::from_le_bytes(word)) {
                i += 8;
                continue;
            }
        }
        let end = (i + 8).min(bytes.len());
        while i < end {
            let b = bytes[i];
            let escape: &str = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..=0x1f => "",
                _ => {
                    i += 1;
                    continue;
                }
            };
            push(&text[done..i]);
            if escape.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let code = [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0xf)],
                ];
                push(std::str::from_utf8(&code).unwrap_or_default());
            } else {
                push(escape);
            }
            i += 1;
            done = i;
        }
    }
    push(&text[done..]);
}

/// Whether any byte of `word` is `"`, `\` or below 0x20 (may say yes for a high byte next
/// to one of those; never no for one).
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    below_space
        | has_zero(word ^ (ONES * u64::from(b'"')))
        | has_zero(word ^ (ONES * u64::from(b'\\')))
        != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped_byte_for_byte_as_serde_json_escapes_them() {
        let mut all = String::new();
        for c in (0u32..0x80).chain([0x9b, 0xe9, 0x202e, 0x6f22]) {
            all.push(char::from_u32(c).unwrap());
        }
        for text in [
            "",
            "plain ascii text, longer than eight bytes",
            "a\"b\\c\nd\te\u{1b}[31m\u{7f}",
            "ünïcødé \u{1} 漢字 and \"quotes\" at the end\"",
            &all,
        ] {
            let mut ours = String::new();
            push_json_string(&mut ours, text);
            assert_eq!(ours, serde_json::to_string(text).unwrap(), "{text:?}");
            let mut body = Vec::new();
            escape_json(text, |piece| body.extend_from_slice(piece.as_bytes()));
            assert_eq!(body, ours.as_bytes()[1..ours.len() - 1], "{text:?}");
        }
    }

    #[test]
    fn codes_follow_the_pattern() {
        for ok in ["A", "UPSTREAM_RATE_LIMIT", "E404", "X_"] {
            assert!(Code::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "a",
            "_X",
            "4XX",
            "Not-Found",
            "NOT FOUND",
            "NOT-FOUND",
            "ÉCHEC",
        ] {
            assert_eq!(Code::new(bad), Err(InvalidCode(bad.to_owned())), "{bad}");
        }
    }

    #[test]
    fn codes_deserialize_only_when_valid() {
        assert!(serde_json::from_str::<Code>("\"BAD_THING\"").is_ok());
        assert!(serde_json::from_str::<Code>("\"bad\"").is_err());
    }

    #[test]
    fn single_line_strips_breaks_and_ansi() {
        assert!(matches!(single_line("plain"), Cow::Borrowed("plain")));
        assert_eq!(single_line("a\nb\r\nc"), "a b c");
        assert_eq!(single_line("\u{1b}[31mred\u{1b}[0m text"), "red text");
        assert_eq!(single_line("osc \u{1b}]0;title\u{7}done"), "osc done");
        assert_eq!(single_line("bell\u{7} sep\u{2028}x"), "bell sep x");
        assert_eq!(single_line("trailing\n"), "trailing");
        assert_eq!(single_line("csi \u{9b}1mX"), "csi X");
    }
}
