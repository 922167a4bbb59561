//! Parsing a framework event whole, refusing duplicate keys.
//!
//! JSON (RFC 8259 §4) leaves the meaning of a repeated key to the reader, and readers disagree:
//! serde_json and Python's `json` keep the last occurrence, some streaming parsers the first.
//! On a framework event that is the difference between `"ok":false` and `"ok":true`, so the
//! verifier reads framework events (few per stream) through this parser, which reports the
//! first repeated key with its path (`docs/verifier.md`, `DUPLICATE_KEY`).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a line could not be read as one object with distinct keys.
#[derive(Debug)]
pub(crate) enum Problem {
    /// A key repeats; the path names it, e.g. `` `caused_by.code` ``.
    Duplicate(String),
    /// Not a JSON object at all.
    Json(serde_json::Error),
}

/// Marks the custom error that carries a duplicate key's path through serde.
const DUPLICATE: &str = "\u{0}duplicate key ";

/// Parses `bytes` as a JSON object whose objects, at every depth, have distinct keys.
pub(crate) fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, Problem> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Node {
        path: String::new(),
    }
    .deserialize(&mut de)
    .and_then(|v| {
        de.end()?;
        Ok(v)
    });
    match parsed {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Problem::Json(de::Error::custom("not a JSON object"))),
        Err(e) => {
            let text = e.to_string();
            match text.strip_prefix(DUPLICATE) {
                // serde_json appends " at line L column C" to custom errors.
                Some(rest) => Err(Problem::Duplicate(
                    rest.rsplit_once(" at line ")
                        .map_or(rest, |(path, _)| path)
                        .to_owned(),
                )),
                None => Err(Problem::Json(e)),
            }
        }
    }
}

/// One value, at `path` (empty at the top).
struct Node {
    path: String,
}

impl<'de> DeserializeSeed<'de> for Node {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl Node {
    fn child(&self, key: &str) -> Node {
        Node {
            path: if self.path.is_empty() {
                key.to_owned()
            } else {
                format!("{}.{key}", self.path)
            },
        }
    }
}

impl<'de> Visitor<'de> for Node {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Node {
            path: format!("{}[{}]", self.path, items.len()),
        })? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let child = self.child(&key);
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "{DUPLICATE}`{}`",
                    child.path
                )));
            }
            let value = map.next_value_seed(child)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_parse_like_serde_json() {
        let line = br#"{"type":"aoi:summary","ok":true,"x":[{"a":1},{"a":2}],"n":-1.5}"#;
        let ours = parse_object(line).unwrap();
        let theirs: Map<String, Value> = serde_json::from_slice(line).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_repeated_key_is_named_with_its_path() {
        let cases: [(&[u8], &str); 3] = [
            (br#"{"ok":false,"reason":"failed","ok":true}"#, "`ok`"),
            (
                br#"{"caused_by":{"code":"A","code":"B"}}"#,
                "`caused_by.code`",
            ),
            (br#"{"x":[{},{"a":1,"a":1}]}"#, "`x[1].a`"),
        ];
        for (line, path) in cases {
            match parse_object(line) {
                Err(Problem::Duplicate(p)) => assert_eq!(p, path),
                other => panic!("{line:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn other_json_is_refused_as_json() {
        assert!(matches!(parse_object(b"[1]"), Err(Problem::Json(_))));
        assert!(matches!(parse_object(b"{\"a\":}"), Err(Problem::Json(_))));
    }
}
