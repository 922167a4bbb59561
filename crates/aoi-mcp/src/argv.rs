//! A tool call's arguments back to the CLI's argv, exactly as its input schema says: flags by
//! their spelling, operands in order, booleans as bare flags, arrays as repeated values. No
//! shell is ever involved, so no argument is ever interpreted.

use aoi::discover::manifest::InputSchema;
use serde_json::{Map, Value};

/// Properties the adapter decides itself: the CLI always runs in machine mode.
pub const ADAPTER_OWNED: [&str; 4] = ["output", "format", "no_color", "debug"];

/// Why arguments cannot become argv.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgvError {
    /// An argument the command does not take.
    #[error("unknown argument `{0}`")]
    Unknown(String),
    /// An argument the adapter sets itself.
    #[error("`{0}` is set by the adapter (machine mode), not by the caller")]
    AdapterOwned(String),
    /// A value of a shape no command line can carry (an object, a nested array).
    #[error("argument `{name}` cannot be given as {found}")]
    Shape {
        /// The argument.
        name: String,
        /// What it was.
        found: &'static str,
    },
}

fn scalar(name: &str, value: &Value) -> Result<Option<String>, ArgvError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        Value::Array(_) => Err(ArgvError::Shape {
            name: name.to_owned(),
            found: "a nested array",
        }),
        Value::Object(_) => Err(ArgvError::Shape {
            name: name.to_owned(),
            found: "an object",
        }),
    }
}

/// The argv (after the program and the command's words) for `arguments`, ending in
/// `--output jsonl` (or `--format jsonl` when that is how the CLI spells machine mode).
pub fn to_argv(
    input: &InputSchema,
    arguments: &Map<String, Value>,
    machine_flag: &[String],
) -> Result<Vec<String>, ArgvError> {
    let positional = input.positional();
    let mut flags = Vec::new();
    for (name, value) in arguments {
        if ADAPTER_OWNED.contains(&name.as_str()) {
            return Err(ArgvError::AdapterOwned(name.clone()));
        }
        if positional.contains(name) {
            continue;
        }
        let Some(flag) = input.flag(name) else {
            return Err(ArgvError::Unknown(name.clone()));
        };
        match value {
            Value::Bool(true) => flags.push(flag.into_owned()),
            Value::Bool(false) | Value::Null => {}
            Value::Array(items) => {
                for item in items {
                    if let Some(v) = scalar(name, item)? {
                        flags.push(format!("{flag}={v}"));
                    }
                }
            }
            other => {
                if let Some(v) = scalar(name, other)? {
                    // `--flag=value`, so a value starting with `-` is never read as a flag.
                    flags.push(format!("{flag}={v}"));
                }
            }
        }
    }
    let values = |name: &String| -> Result<Vec<String>, ArgvError> {
        match arguments.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for item in items {
                    out.extend(scalar(name, item)?);
                }
                Ok(out)
            }
            Some(other) => Ok(scalar(name, other)?.into_iter().collect()),
        }
    };
    let mut argv = flags;
    argv.extend(machine_flag.iter().cloned());
    if input.trailing_after_double_dash() {
        // The last operand (a command to run, say) is what follows `--`; the others come
        // before it.
        if let Some((last, rest)) = positional.split_last() {
            for name in rest {
                argv.extend(values(name)?);
            }
            let trailing = values(last)?;
            if !trailing.is_empty() {
                argv.push("--".to_owned());
                argv.extend(trailing);
            }
        }
        return Ok(argv);
    }
    let mut operands = Vec::new();
    for name in &positional {
        operands.extend(values(name)?);
    }
    if !operands.is_empty() {
        // Operands after `--`: one that starts with `-` is still an operand.
        argv.push("--".to_owned());
        argv.extend(operands);
    }
    Ok(argv)
}

/// The input schema a caller sees: the command's, without the properties the adapter owns.
pub fn caller_schema(input: &InputSchema) -> Map<String, Value> {
    let mut schema = input.schema.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for owned in ADAPTER_OWNED {
            props.remove(owned);
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !ADAPTER_OWNED.contains(&r)));
    }
    schema.remove("x-aoi");
    schema.remove("$id");
    schema.insert("type".into(), "object".into());
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input() -> InputSchema {
        InputSchema::new(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"}, "ids": {"type": "array"}, "limit": {"type": "integer"},
                "tag": {"type": "array"}, "confirm": {"type": "boolean"}, "output": {"type": "string"}
            },
            "required": ["query"],
            "x-aoi": {
                "flags": {"limit": "--limit", "tag": "--tag", "confirm": "--confirm", "output": "--output"},
                "positional": ["query", "ids"]
            }
        }))
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn machine() -> Vec<String> {
        vec!["--output".into(), "jsonl".into()]
    }

    #[test]
    fn flags_booleans_arrays_and_operands_in_order() {
        let argv = to_argv(
            &input(),
            &args(json!({"ids": ["a", "-b"], "query": "x y", "limit": 5, "tag": ["t1", "t2"], "confirm": true})),
            &machine(),
        )
        .unwrap();
        assert_eq!(
            argv,
            [
                "--confirm",
                "--limit=5",
                "--tag=t1",
                "--tag=t2",
                "--output",
                "jsonl",
                "--",
                "x y",
                "a",
                "-b"
            ]
        );
    }

    #[test]
    fn false_and_null_are_left_out_and_nothing_is_shell_interpreted() {
        let argv = to_argv(
            &input(),
            &args(json!({"query": "$(rm -rf /); `x`", "confirm": false, "limit": null})),
            &machine(),
        )
        .unwrap();
        assert_eq!(argv, ["--output", "jsonl", "--", "$(rm -rf /); `x`"]);
    }

    #[test]
    fn unknown_owned_and_unshaped_arguments_are_refused() {
        let i = input();
        assert_eq!(
            to_argv(&i, &args(json!({"nope": 1})), &machine()),
            Err(ArgvError::Unknown("nope".into()))
        );
        assert_eq!(
            to_argv(&i, &args(json!({"output": "human"})), &machine()),
            Err(ArgvError::AdapterOwned("output".into()))
        );
        assert!(matches!(
            to_argv(&i, &args(json!({"limit": {"a": 1}})), &machine()),
            Err(ArgvError::Shape { .. })
        ));
    }

    #[test]
    fn the_caller_schema_hides_what_the_adapter_owns() {
        let s = caller_schema(&input());
        assert!(s["properties"].get("output").is_none());
        assert!(s.get("x-aoi").is_none());
        assert_eq!(s["type"], "object");
    }

    #[test]
    fn a_tool_without_x_aoi_is_called_by_the_naming_convention() {
        // docs/discovery.md: plain JSON Schema with the §16.1 names needs no x-aoi block.
        let plain = InputSchema::new(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "dry_run": {"type": "boolean"},
                "limit": {"type": "integer"},
                "tag": {"type": "array", "items": {"type": "string"}}
            }
        }));
        let args = json!({"dry_run": true, "limit": 3, "tag": ["a", "-b"]});
        let argv = to_argv(
            &plain,
            args.as_object().unwrap(),
            &["--output".into(), "jsonl".into()],
        )
        .unwrap();
        assert_eq!(
            argv,
            [
                "--dry-run",
                "--limit=3",
                "--tag=a",
                "--tag=-b",
                "--output",
                "jsonl"
            ]
        );
        let unknown = json!({"limt": 3});
        assert!(to_argv(&plain, unknown.as_object().unwrap(), &[]).is_err());
    }
}
