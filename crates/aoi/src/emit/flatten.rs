//! Writes an event as one JSON object: `type`, then the `aoi` envelope, then the event's own
//! fields flattened in, in a single pass with no intermediate value.
//!
//! The event body is serialized through [`Fields`], a serializer that accepts only objects
//! (structs and maps) and forwards each field to the outer map, refusing the reserved top-level
//! names `type` and `aoi` (§8.1). The JSON is serde_json's compact form, with U+009B escaped
//! so that no ANSI control byte reaches the wire (§2; see [`write_line`]).

use serde::ser::{Error as _, Impossible, Serialize, SerializeMap, SerializeStruct, Serializer};

type JsonError = serde_json::Error;

const NOT_AN_OBJECT: &str = "an event must serialize as a JSON object (a struct or a map)";

/// Serializes `body`'s fields into `map`, rejecting the reserved names.
pub(crate) fn serialize_fields<M, T>(map: &mut M, body: &T) -> Result<(), JsonError>
where
    M: SerializeMap<Error = JsonError>,
    T: Serialize + ?Sized,
{
    body.serialize(Fields { map })
}

fn reserved(key: &str) -> Result<(), JsonError> {
    if key == "type" || key == "aoi" {
        Err(JsonError::custom(format_args!(
            "the top-level name `{key}` is reserved by the envelope (spec §8.1)"
        )))
    } else {
        Ok(())
    }
}

struct Fields<'a, M> {
    map: &'a mut M,
}

macro_rules! reject {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $arg),*) -> Result<(), JsonError> {
            Err(JsonError::custom(NOT_AN_OBJECT))
        })*
    };
}

impl<'a, M> Serializer for Fields<'a, M>
where
    M: SerializeMap<Error = JsonError>,
{
    type Ok = ();
    type Error = JsonError;
    type SerializeSeq = Impossible<(), JsonError>;
    type SerializeTuple = Impossible<(), JsonError>;
    type SerializeTupleStruct = Impossible<(), JsonError>;
    type SerializeTupleVariant = Impossible<(), JsonError>;
    type SerializeMap = FieldsMap<'a, M>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), JsonError>;

    reject!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_unit(self) -> Result<(), JsonError> {
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), JsonError> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), JsonError> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), JsonError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), JsonError> {
        Err(JsonError::custom(NOT_AN_OBJECT))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, JsonError> {
        Err(JsonError::custom(NOT_AN_OBJECT))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, JsonError> {
        Err(JsonError::custom(NOT_AN_OBJECT))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, JsonError> {
        Err(JsonError::custom(NOT_AN_OBJECT))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, JsonError> {
        Err(JsonError::custom(NOT_AN_OBJECT))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, JsonError> {
        Ok(FieldsMap {
            map: self.map,
            key: Vec::new(),
        })
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, JsonError> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, JsonError> {
        Err(JsonError::custom(NOT_AN_OBJECT))
    }
}

impl<M> SerializeStruct for Fields<'_, M>
where
    M: SerializeMap<Error = JsonError>,
{
    type Ok = ();
    type Error = JsonError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), JsonError> {
        reserved(key)?;
        self.map.serialize_entry(key, value)
    }

    fn end(self) -> Result<(), JsonError> {
        Ok(())
    }
}

/// Map-shaped bodies (`#[serde(flatten)]`, `serde_json::Map`, `HashMap`): each key is rendered
/// once to check it against the reserved names.
pub(crate) struct FieldsMap<'a, M> {
    map: &'a mut M,
    key: Vec<u8>,
}

impl<M> SerializeMap for FieldsMap<'_, M>
where
    M: SerializeMap<Error = JsonError>,
{
    type Ok = ();
    type Error = JsonError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), JsonError> {
        self.key.clear();
        serde_json::to_writer(&mut self.key, key)?;
        if self.key == b"\"type\"" || self.key == b"\"aoi\"" {
            let name = String::from_utf8_lossy(&self.key[1..self.key.len() - 1]).into_owned();
            return reserved(&name);
        }
        self.map.serialize_key(key)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JsonError> {
        self.map.serialize_value(value)
    }

    fn end(self) -> Result<(), JsonError> {
        Ok(())
    }
}

/// A map entry whose value is a pre-validated `aoi` envelope, written without allocation.
pub(crate) struct EnvelopeRef<'a> {
    pub seq: u64,
    pub run: &'a str,
    pub t: Option<u64>,
    pub trace_id: Option<&'a str>,
}

impl Serialize for EnvelopeRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 2 + usize::from(self.t.is_some()) + usize::from(self.trace_id.is_some());
        let mut s = serializer.serialize_struct("aoi", len)?;
        s.serialize_field("seq", &self.seq)?;
        s.serialize_field("run", self.run)?;
        if let Some(t) = self.t {
            s.serialize_field("t", &t)?;
        }
        if let Some(trace) = self.trace_id {
            s.serialize_field("trace_id", trace)?;
        }
        s.end()
    }
}

/// Writes `{"type":…,"aoi":{…},<body fields>}` followed by `\n` into `out`.
///
/// The JSON is serde_json's compact form, except that U+009B (the C1 control CSI, which
/// serde_json leaves raw) is rewritten as the escape `\u009b`, so no ANSI control byte ever
/// reaches stdout (§2); ESC and the other C0 controls are already escaped by serde_json.
///
/// On error, `out` may hold part of the line; the caller truncates it.
pub(crate) fn write_line<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    ty: &str,
    envelope: &EnvelopeRef<'_>,
    body: &T,
) -> Result<(), JsonError> {
    let start = out.len();
    let mut ser = serde_json::Serializer::new(&mut *out);
    let mut map = ser.serialize_map(None)?;
    map.serialize_entry("type", ty)?;
    map.serialize_entry("aoi", envelope)?;
    serialize_fields(&mut map, body)?;
    SerializeMap::end(map)?;
    // One scan of the finished line, instead of one per string fragment. Outside strings a
    // JSON line is ASCII, so every C2 9B pair is U+009B inside a string; 0x9B alone is a
    // continuation byte of other characters (Û, many CJK), hence the C2 check.
    if memchr::memchr_iter(0x9b, &out[start..]).any(|at| at > 0 && out[start + at - 1] == 0xc2) {
        escape_csi(out, start);
    }
    out.push(b'\n');
    Ok(())
}

/// Rewrites every U+009B (C2 9B) in `out[start..]` as `\u009b`. Rare: only on lines that
/// carry a CSI.
#[cold]
fn escape_csi(out: &mut Vec<u8>, start: usize) {
    let line = out.split_off(start);
    let mut written = 0;
    for at in memchr::memchr_iter(0x9b, &line) {
        if at > 0 && line[at - 1] == 0xc2 {
            out.extend_from_slice(&line[written..at - 1]);
            out.extend_from_slice(b"\\u009b");
            written = at + 1;
        }
    }
    out.extend_from_slice(&line[written..]);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::*;

    fn line<T: Serialize>(body: &T) -> Result<String, JsonError> {
        let mut out = Vec::new();
        let env = EnvelopeRef {
            seq: 3,
            run: "01JZQ7X4TQ9",
            t: None,
            trace_id: None,
        };
        write_line(&mut out, "hit", &env, body)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[derive(Serialize)]
    struct Hit {
        rank: u32,
        id: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        snippet: Option<&'static str>,
    }

    #[test]
    fn struct_fields_follow_the_envelope() {
        let hit = Hit {
            rank: 1,
            id: "doc_123",
            snippet: None,
        };
        assert_eq!(
            line(&hit).unwrap(),
            "{\"type\":\"hit\",\"aoi\":{\"seq\":3,\"run\":\"01JZQ7X4TQ9\"},\"rank\":1,\"id\":\"doc_123\"}\n"
        );
    }

    #[test]
    fn maps_and_flattened_structs_work() {
        let mut m = BTreeMap::new();
        m.insert("a", 1);
        assert_eq!(
            line(&m).unwrap(),
            "{\"type\":\"hit\",\"aoi\":{\"seq\":3,\"run\":\"01JZQ7X4TQ9\"},\"a\":1}\n"
        );
        #[derive(Serialize)]
        struct Outer {
            x: u8,
            #[serde(flatten)]
            rest: BTreeMap<&'static str, u8>,
        }
        let o = Outer {
            x: 1,
            rest: [("y", 2)].into_iter().collect(),
        };
        assert!(line(&o).unwrap().ends_with("\"x\":1,\"y\":2}\n"));
        assert!(line(&()).unwrap().ends_with("\"run\":\"01JZQ7X4TQ9\"}}\n"));
    }

    #[test]
    fn reserved_names_are_refused() {
        #[derive(Serialize)]
        struct Bad {
            aoi: u8,
        }
        let err = line(&Bad { aoi: 1 }).unwrap_err().to_string();
        assert!(err.contains("`aoi` is reserved"), "{err}");
        let mut m = BTreeMap::new();
        m.insert("type", "x");
        assert!(line(&m).unwrap_err().to_string().contains("`type`"));
        #[derive(Serialize)]
        #[serde(tag = "type")]
        enum Tagged {
            Hit { id: u8 },
        }
        assert!(line(&Tagged::Hit { id: 1 }).is_err());
    }

    #[test]
    fn ansi_control_characters_are_escaped_never_written_raw() {
        let mut m = BTreeMap::new();
        m.insert("title", "\u{1b}[31mred csi \u{9b}1m Û (C3 9B) 日本語");
        let text = line(&m).unwrap();
        assert!(
            text.contains(r#""title":"\u001b[31mred csi \u009b1m Û (C3 9B) 日本語""#),
            "{text}"
        );
        assert!(!text.as_bytes().contains(&0x1b));
        assert!(!text.contains('\u{9b}'));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["title"], "\u{1b}[31mred csi \u{9b}1m Û (C3 9B) 日本語");
    }

    #[test]
    fn non_objects_are_refused() {
        assert!(line(&5).is_err());
        assert!(line(&"text").is_err());
        assert!(line(&vec![1, 2]).is_err());
    }
}
