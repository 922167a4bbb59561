//! Arbitrary JSON values from fuzz bytes, shared by the targets that need structured input.

#![allow(dead_code)]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// Strings a parser treats specially, mixed into the arbitrary ones.
const WORDS: [&str; 16] = [
    "",
    "-",
    "--",
    "-x",
    "--flag",
    "=",
    "a=b",
    " ",
    "\n",
    "\u{0}",
    "\u{7f}",
    "\u{85}",
    "\u{2028}",
    "é",
    "doc_01jzq7x4tq9v6h0zt7k8f2w3c1",
    "entry",
];

/// A string: an arbitrary one, or one of [`WORDS`].
pub fn string(u: &mut Unstructured) -> Result<String> {
    if u.ratio(1, 4)? {
        return Ok((*u.choose(&WORDS)?).to_owned());
    }
    u.arbitrary()
}

/// A JSON number: an integer of either sign (small or extreme), or a finite float.
pub fn number(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=5)? {
        0 => Value::from(u.int_in_range(-3i64..=300)?),
        1 => Value::from(u.arbitrary::<u64>()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => Number::from_f64(u.arbitrary::<f64>()?).map_or(Value::Null, Value::Number),
        4 => Number::from_f64(f64::from(u.int_in_range(-3i32..=300)?))
            .map_or(Value::Null, Value::Number),
        _ => Value::from(*u.choose(&[u64::MAX, i64::MAX as u64, 1 << 53, 0])?),
    })
}

/// Any JSON value, nested at most `depth` deep.
pub fn value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let leaf = depth == 0 || u.is_empty();
    Ok(match u.int_in_range(0..=if leaf { 3 } else { 5 })? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => Value::String(string(u)?),
        4 => {
            let n = u.int_in_range(0..=4)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(object(u, depth - 1)?),
    })
}

/// A JSON object of up to four members.
pub fn object(u: &mut Unstructured, depth: u32) -> Result<Map<String, Value>> {
    let n = u.int_in_range(0..=4)?;
    let mut map = Map::new();
    for _ in 0..n {
        map.insert(string(u)?, value(u, depth)?);
    }
    Ok(map)
}
