//! A borrowed, flat JSON representation of one line, for checking valid events fast.
//!
//! Parsing a line into a [`serde_json::Value`] allocates every key and string and a map node per
//! object, then frees them all: more than half of what schema validation costs. jsonschema
//! validates any representation that implements its [`Json`] traits, so a line is instead parsed
//! by serde_json (the same parser, numbers and depth limit as `Value`) into a tape of [`Item`]s
//! whose strings borrow from the line, and validated there.
//!
//! The tape only answers "is this line valid?". A line it says is not, or cannot stand for
//! exactly (an object with a repeated key, which `Value` collapses to its last value), goes
//! through `Value` and [`EventValidator`](crate::discover::schema::EventValidator) as before, so
//! findings and their messages never depend on the tape.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use jsonschema::json::{Array, Json, Node, NodeIdentity, Object};
use jsonschema::{Draft, JsonType};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// Members an object may have on the tape; repeated keys are looked for pairwise, so a larger
/// object goes through `Value`.
const MAX_MEMBERS: u32 = 64;

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
    /// A string, borrowed from the line unless it had escapes.
    String(Cow<'s, str>),
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
    Key(Cow<'s, str>),
}

/// Parses `line` onto `tape` (cleared first). `None` when it is not one JSON value, or when the
/// tape cannot stand for it exactly.
pub(crate) fn parse<'s>(line: &'s str, tape: &mut Vec<Item<'s>>) -> Option<()> {
    tape.clear();
    let mut de = serde_json::Deserializer::from_str(line);
    Fill(tape).deserialize(&mut de).ok()?;
    de.end().ok()
}

/// Appends one JSON value to the tape.
struct Fill<'t, 's>(&'t mut Vec<Item<'s>>);

impl<'de> DeserializeSeed<'de> for Fill<'_, 'de> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

/// Index of the next item, as the tape stores it.
fn position<E: de::Error>(tape: &[Item<'_>]) -> Result<u32, E> {
    u32::try_from(tape.len()).map_err(|_| E::custom("line too large for the tape"))
}

impl<'de> Visitor<'de> for Fill<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push(Item::Bool(v));
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.0.push(Item::Number(v.into()));
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.0.push(Item::Number(v.into()));
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // serde_json never yields a non-finite number; `Value` would hold `null` for one.
        let number = Number::from_f64(v).ok_or_else(|| E::custom("non-finite number"))?;
        self.0.push(Item::Number(number));
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push(Item::Null);
        Ok(())
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.0.push(Item::String(Cow::Borrowed(v)));
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.push(Item::String(Cow::Owned(v.to_owned())));
        Ok(())
    }

    fn visit_string<E>(self, v: String) -> Result<(), E> {
        self.0.push(Item::String(Cow::Owned(v)));
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let at = position(self.0)?;
        self.0.push(Item::Array { len: 0, end: 0 });
        let mut len = 0u32;
        while seq.next_element_seed(Fill(&mut *self.0))?.is_some() {
            len += 1;
        }
        let end = position(self.0)?;
        self.0[at as usize] = Item::Array { len, end };
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let at = position(self.0)?;
        self.0.push(Item::Object { len: 0, end: 0 });
        let mut len = 0u32;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            len += 1;
            let so_far = Members {
                items: self.0,
                next: at + 1,
                end: position(self.0)?,
            };
            if len > MAX_MEMBERS || so_far.map(|(name, _)| name).any(|name| name == key) {
                return Err(de::Error::custom("repeated key or large object"));
            }
            self.0.push(Item::Key(key));
            map.next_value_seed(Fill(&mut *self.0))?;
        }
        let end = position(self.0)?;
        self.0[at as usize] = Item::Object { len, end };
        Ok(())
    }
}

/// Reads an object member's name.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Cow<'de, str>, D::Error> {
        de.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
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

    /// The value as a `serde_json::Value` (cold paths: errors and `const` of a container).
    fn value(&self) -> Value {
        match self.item() {
            None | Some(Item::Null) => Value::Null,
            Some(Item::Bool(b)) => Value::Bool(*b),
            Some(Item::Number(n)) => Value::Number(n.clone()),
            Some(Item::String(s) | Item::Key(s)) => Value::String(s.as_ref().to_owned()),
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
    type StringBuffer = Vec<Item<'static>>;

    // A lookup scans the members, so one pass over them is never worse; no object on a tape
    // has more than this many.
    const KEYS_PER_LOOKUP: usize = MAX_MEMBERS as usize;
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>(
        buffer: &mut Vec<Item<'static>>,
        string: &str,
        f: impl FnOnce(TapeNode<'_>) -> T,
    ) -> T {
        buffer.clear();
        buffer.push(Item::String(Cow::Owned(string.to_owned())));
        f(TapeNode::root(buffer))
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
        match self.item() {
            Some(Item::String(s) | Item::Key(s)) => Some(Cow::Borrowed(s.as_ref())),
            _ => None,
        }
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
            (Some(Item::String(s)), Value::String(e)) => s.as_ref() == e.as_str(),
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
#[derive(Debug)]
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
        Some((name.as_ref(), value))
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
        // Names are unique on a tape (see `Fill::visit_map`).
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
/// [`EventValidator`](crate::discover::schema::EventValidator).
#[derive(Debug)]
pub(crate) struct TapeValidator {
    whole: jsonschema::Validator<Tape>,
    by_type: HashMap<String, jsonschema::Validator<Tape>>,
}

impl TapeValidator {
    /// Compiles `schema` as JSON Schema 2020-12, or `None` if it does not compile.
    pub(crate) fn new(schema: &Value) -> Option<TapeValidator> {
        let compile = |schema: &Value| {
            jsonschema::options_for::<Tape>()
                .with_draft(Draft::Draft202012)
                .build(schema)
                .ok()
        };
        let whole = compile(schema)?;
        let mut by_type = HashMap::new();
        for (ty, narrow) in crate::discover::schema::narrowed_by_type(schema) {
            by_type.insert(ty, compile(&narrow)?);
        }
        Some(TapeValidator { whole, by_type })
    }

    /// True when the line on `tape` is valid; `false` may also mean the tape cannot tell.
    pub(crate) fn is_valid(&self, tape: &[Item<'_>]) -> bool {
        let root = TapeNode::root(tape);
        let ty = root
            .as_object()
            .and_then(|o| o.members().find(|(name, _)| *name == "type"))
            .and_then(|(_, t)| t.as_string());
        let validator = ty
            .and_then(|ty| self.by_type.get(ty.as_ref()))
            .unwrap_or(&self.whole);
        validator.is_valid(root)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
        let mut tape = Vec::new();
        let mut outcomes = [0; 2];
        for schema in schemas() {
            let on_tape = TapeValidator::new(&schema).expect("compiles for the tape");
            let on_value = jsonschema::draft202012::new(&schema).expect("compiles");
            for line in LINES {
                let value: Value = serde_json::from_str(line).expect("valid JSON");
                let expected = on_value.is_valid(&value);
                let got = parse(line, &mut tape).map(|()| on_tape.is_valid(&tape));
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
    fn repeated_keys_and_bad_json_are_left_to_value() {
        let mut tape = Vec::new();
        assert!(parse(r#"{"a":1,"a":2}"#, &mut tape).is_none());
        assert!(parse(r#"{"a":{"b":1,"b":1}}"#, &mut tape).is_none());
        assert!(parse(r#"{"a":1,"b":{"a":2}}"#, &mut tape).is_some());
        assert!(parse(r#"{"a":1} x"#, &mut tape).is_none());
        assert!(parse(r#"{"a":1,}"#, &mut tape).is_none());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse(&deep, &mut tape).is_none());
        let wide: String = (0..70).map(|i| format!(",\"k{i}\":{i}")).collect();
        assert!(parse(&format!("{{\"a\":0{wide}}}"), &mut tape).is_none());
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
            let mut tape = Vec::new();
            proptest::prop_assert!(parse(&line, &mut tape).is_some(), "{}", line);
            proptest::prop_assert_eq!(TapeNode::root(&tape).value(), value.clone());
            for schema in schemas() {
                let on_tape = TapeValidator::new(&schema).expect("compiles for the tape");
                let on_value = jsonschema::draft202012::new(&schema).expect("compiles");
                proptest::prop_assert_eq!(on_tape.is_valid(&tape), on_value.is_valid(&value));
            }
        }
    }

    #[test]
    fn the_tape_reads_back_as_the_value() {
        let mut tape = Vec::new();
        for line in LINES {
            let value: Value = serde_json::from_str(line).expect("valid JSON");
            if parse(line, &mut tape).is_some() {
                assert_eq!(TapeNode::root(&tape).value(), value, "{line}");
            }
        }
    }
}
