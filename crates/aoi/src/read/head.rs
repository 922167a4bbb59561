//! The fast path of the reader: one pass over a line that pulls out `type`, `aoi.seq` and
//! `aoi.run` (borrowed, no allocation for plain strings) and skips every other value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// What a line's top level looks like.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Head<'a> {
    /// `type`, when it is a string.
    pub ty: Option<Cow<'a, str>>,
    /// `type` was present but not a string.
    pub ty_not_string: bool,
    /// An `aoi` key was present.
    pub has_envelope: bool,
    /// The `aoi` value was not an object.
    pub envelope_not_object: bool,
    /// `aoi.seq`, when a non-negative integer.
    pub seq: Option<u64>,
    /// `aoi.seq` was present but not a non-negative integer.
    pub seq_invalid: bool,
    /// `aoi.run`, when a string.
    pub run: Option<Cow<'a, str>>,
    /// `aoi.run` was present but not a string.
    pub run_invalid: bool,
    /// Top-level `seq` (the v0.2 flat envelope on framework events).
    pub flat_seq: bool,
    /// Top-level `run`.
    pub flat_run: bool,
    /// A key the head reads is repeated: `type` or `aoi` at the top, or `seq`, `run`, `t` or
    /// `trace_id` inside `aoi`.
    pub duplicate_key: bool,
    /// `aoi.t` is not a non-negative number, or `aoi.trace_id` is not a string.
    pub envelope_field_invalid: bool,
    /// `aoi` holds a key other than `seq`, `run`, `t` and `trace_id`.
    pub envelope_extra: bool,
}

/// The line parsed as JSON but is not an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotObject(pub &'static str);

/// Parses a line's head. `Ok(Err(NotObject))` for valid JSON that is not an object.
///
/// This is the reference implementation, through serde. The verifier uses
/// [`scan_line`](super::scan_line), which checks UTF-8, JSON and ANSI controls in the same
/// pass and is tested to return the same head for every line serde_json's `Value` parser
/// accepts. `parse_head` itself is more lenient inside the values it skips: it checks neither
/// their nesting depth, nor number ranges, nor UTF-8 and `\u` surrogate pairs in strings.
pub fn parse_head(line: &[u8]) -> Result<Result<Head<'_>, NotObject>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let head = de.deserialize_any(HeadVisitor)?;
    de.end()?;
    Ok(head)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Type,
    Aoi,
    Seq,
    Run,
    T,
    TraceId,
    Other,
}

/// Which of the keys the head looks at an object has named so far, by their index in the
/// head's key enum (here and in the scanner).
#[derive(Default)]
pub(super) struct Seen(u8);

impl Seen {
    /// Notes the key with index `key` (below 8); true when it was already there.
    pub(super) fn again(&mut self, key: u8) -> bool {
        let bit = 1 << key;
        let again = self.0 & bit != 0;
        self.0 |= bit;
        again
    }
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "type" => Key::Type,
                    "aoi" => Key::Aoi,
                    "seq" => Key::Seq,
                    "run" => Key::Run,
                    "t" => Key::T,
                    "trace_id" => Key::TraceId,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

struct HeadVisitor;

macro_rules! not_object {
    ($($name:ident($ty:ty) => $what:expr),* $(,)?) => {
        $(fn $name<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
            Ok(Err(NotObject($what)))
        })*
    };
}

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = Result<Head<'de>, NotObject>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    not_object!(
        visit_bool(bool) => "a boolean",
        visit_i64(i64) => "a number",
        visit_u64(u64) => "a number",
        visit_f64(f64) => "a number",
        visit_str(&str) => "a string",
    );

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(NotObject("null")))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(NotObject("an array")))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut head = Head::default();
        let mut seen = Seen::default();
        while let Some(key) = map.next_key::<Key>()? {
            if matches!(key, Key::Type | Key::Aoi) && seen.again(key as u8) {
                head.duplicate_key = true;
            }
            match key {
                Key::Type => match map.next_value::<MaybeStr<'de>>()? {
                    MaybeStr::Str(s) => head.ty = Some(s),
                    MaybeStr::Other => head.ty_not_string = true,
                },
                Key::Aoi => {
                    head.has_envelope = true;
                    map.next_value_seed(EnvelopeSeed { head: &mut head })?;
                }
                Key::Seq => {
                    head.flat_seq = true;
                    map.next_value::<IgnoredAny>()?;
                }
                Key::Run => {
                    head.flat_run = true;
                    map.next_value::<IgnoredAny>()?;
                }
                Key::T | Key::TraceId | Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Ok(head))
    }
}

/// A string (borrowed when it has no escapes) or anything else, skipped.
enum MaybeStr<'a> {
    Str(Cow<'a, str>),
    Other,
}

impl<'de> de::Deserialize<'de> for MaybeStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MaybeStr::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MaybeStr::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MaybeStr::Str(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeStr::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeStr::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeStr::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeStr::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeStr::Other)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeStr::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeStr::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A non-negative integer or anything else, skipped.
enum MaybeU64 {
    Int(u64),
    Other,
}

impl<'de> de::Deserialize<'de> for MaybeU64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeU64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(MaybeU64::Int(v))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeU64::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeU64::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeU64::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MaybeU64::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeU64::Other)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeU64::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeU64::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a value is a non-negative number (`-0` is not: its sign is negative).
struct NonNegative(bool);

impl<'de> de::Deserialize<'de> for NonNegative {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NonNegative;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(NonNegative(true))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                // serde_json visits only negative integers here.
                Ok(NonNegative(v >= 0))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(NonNegative(!v.is_sign_negative()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(NonNegative(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(NonNegative(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(NonNegative(false))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(NonNegative(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(NonNegative(false))
            }
        }
        d.deserialize_any(V)
    }
}

struct EnvelopeSeed<'h, 'a> {
    head: &'h mut Head<'a>,
}

impl<'de> DeserializeSeed<'de> for EnvelopeSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EnvelopeSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the aoi envelope object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = Seen::default();
        while let Some(key) = map.next_key::<Key>()? {
            if key != Key::Other && seen.again(key as u8) {
                self.head.duplicate_key = true;
            }
            match key {
                Key::Seq => match map.next_value::<MaybeU64>()? {
                    MaybeU64::Int(n) => self.head.seq = Some(n),
                    MaybeU64::Other => self.head.seq_invalid = true,
                },
                Key::Run => match map.next_value::<MaybeStr<'de>>()? {
                    MaybeStr::Str(s) => self.head.run = Some(s),
                    MaybeStr::Other => self.head.run_invalid = true,
                },
                Key::T => {
                    if !map.next_value::<NonNegative>()?.0 {
                        self.head.envelope_field_invalid = true;
                    }
                }
                Key::TraceId => {
                    if let MaybeStr::Other = map.next_value::<MaybeStr<'de>>()? {
                        self.head.envelope_field_invalid = true;
                    }
                }
                Key::Type | Key::Aoi | Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    self.head.envelope_extra = true;
                }
            }
        }
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.head.envelope_not_object = true;
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.head.envelope_not_object = true;
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.head.envelope_not_object = true;
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.head.envelope_not_object = true;
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.head.envelope_not_object = true;
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.head.envelope_not_object = true;
        Ok(())
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        self.head.envelope_not_object = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_type_seq_and_run_and_skips_the_rest() {
        let h =
            parse_head(br#"{"type":"hit","x":[1,{"type":"no"}],"aoi":{"seq":3,"run":"R","t":5}}"#)
                .unwrap()
                .unwrap();
        assert_eq!(h.ty.as_deref(), Some("hit"));
        assert!(matches!(h.ty, Some(Cow::Borrowed(_))));
        assert_eq!((h.seq, h.run.as_deref()), (Some(3), Some("R")));
        assert!(!h.flat_seq && !h.ty_not_string);
    }

    #[test]
    fn reports_odd_shapes() {
        let h = parse_head(br#"{"type":5,"seq":1,"run":"x","aoi":{"seq":-1,"run":2}}"#)
            .unwrap()
            .unwrap();
        assert!(h.ty_not_string && h.flat_seq && h.flat_run && h.seq_invalid && h.run_invalid);
        let h = parse_head(br#"{"aoi":[1]}"#).unwrap().unwrap();
        assert!(h.envelope_not_object);
        assert_eq!(parse_head(b"[1,2]").unwrap(), Err(NotObject("an array")));
        assert_eq!(parse_head(b"\"s\"").unwrap(), Err(NotObject("a string")));
        assert!(parse_head(b"{\"a\":1} x").is_err());
        assert!(parse_head(b"{\"type\":\"a\"").is_err());
    }
}
