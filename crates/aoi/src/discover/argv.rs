//! Arguments as an object, and a command line, through a command's input schema: the mapping
//! `aoi mcp` makes for every tool call ([`to_argv`]: flags by their spelling, operands in
//! order, booleans as bare flags, arrays as repeated values, a value that starts with `-`
//! joined to its flag),
//! and its reverse for a tool's own examples ([`from_argv`]), so `aoi lint` can check that a
//! tool is callable the way the adapter calls it (`docs/discovery.md`). No shell is ever
//! involved, so no argument is ever interpreted.

use super::input_schema::{PATH_FORMAT, X_AOI_FORMAT};
use super::manifest::{CommandEntry, InputSchema};
use serde_json::{Map, Value};

/// Properties the adapter decides itself: the CLI always runs in machine mode, and in the
/// schema version its `outputSchema` describes (the default one: a result in another version
/// would not match it, §5).
pub const ADAPTER_OWNED: [&str; 5] = ["output", "format", "no_color", "debug", "schema_version"];

/// Why arguments cannot become argv.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgvError {
    /// An argument the command does not take.
    #[error("unknown argument `{0}`")]
    Unknown(String),
    /// A flag given without the value it takes.
    #[error("`{0}` needs a value")]
    MissingValue(String),
    /// An argument the adapter sets itself.
    #[error("`{0}` is set by the adapter (machine mode), not by the caller")]
    AdapterOwned(String),
    /// An operand that would be read as a flag: one starting with `-` where operands cannot
    /// follow `--` (the command's last operand is the one after `--`).
    #[error("argument `{0}` cannot start with `-`: only the last operand is given after `--`")]
    LeadingDash(String),
    /// An operand that starts with `-`, for a command that takes no `--` before its operands
    /// (`x-aoi.double_dash: false`): it would be read as a flag.
    #[error("argument `{0}` cannot start with `-`: the command takes no `--` before its operands")]
    NoDoubleDash(String),
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
        // No process can be given a NUL byte in an argument (exec takes C strings).
        Value::String(s) if s.contains('\0') => Err(ArgvError::Shape {
            name: name.to_owned(),
            found: "a string with a NUL byte",
        }),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(number_word(n))),
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

/// A number as a command line spells it. An integral float (`5.0`, which JSON Schema calls an
/// integer and some clients send for one) is written as the integer, which an integer flag's
/// parser takes and a float flag's parser reads as the same number.
fn number_word(n: &serde_json::Number) -> String {
    // -2^63 and 2^64: floats in between that have no fraction are exact integers.
    const I64_MIN: f64 = -9_223_372_036_854_775_808.0;
    const U64_END: f64 = 18_446_744_073_709_551_616.0;
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && (I64_MIN..0.0).contains(&f) => {
            (f as i64).to_string()
        }
        Some(f) if n.is_f64() && f.fract() == 0.0 && (0.0..U64_END).contains(&f) => {
            (f as u64).to_string()
        }
        _ => n.to_string(),
    }
}

/// `--flag VALUE`, the spelling every parser takes; `--flag=VALUE` when the value starts
/// with `-`, so it is never read as a flag (`docs/discovery.md`).
fn push_flag(flags: &mut Vec<String>, flag: &str, value: String) {
    if value.starts_with('-') {
        flags.push(format!("{flag}={value}"));
    } else {
        flags.push(flag.to_owned());
        flags.push(value);
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
                        push_flag(&mut flags, &flag, v);
                    }
                }
            }
            other => {
                if let Some(v) = scalar(name, other)? {
                    push_flag(&mut flags, &flag, v);
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
                let words = values(name)?;
                // Before `--` a word that starts with `-` is a flag (`--` itself would end
                // the flags): never pass it as an operand. `-` alone is an operand.
                if words.iter().any(|w| w.starts_with('-') && w != "-") {
                    return Err(ArgvError::LeadingDash(name.clone()));
                }
                argv.extend(words);
            }
            let trailing = values(last)?;
            if !trailing.is_empty() {
                argv.push("--".to_owned());
                argv.extend(trailing);
            }
        }
        return Ok(argv);
    }
    // Operands as a person types them: after `--` only when one starts with `-` (then `--`
    // keeps it an operand); a tool that takes no `--` gets such an operand refused instead.
    let mut operands = Vec::new();
    let mut dashed = None;
    for name in &positional {
        let words = values(name)?;
        if dashed.is_none() && words.iter().any(|w| w.starts_with('-') && w != "-") {
            dashed = Some(name.clone());
        }
        operands.extend(words);
    }
    if let Some(name) = dashed {
        if !input.takes_double_dash() {
            return Err(ArgvError::NoDoubleDash(name));
        }
        argv.push("--".to_owned());
    }
    argv.extend(operands);
    Ok(argv)
}

/// The arguments object that `args` (a command line after the program and the command's
/// words, as a tool's `examples` give it) stands for under `input`: the reverse of
/// [`to_argv`], so that `to_argv(from_argv(args))` is how `aoi mcp` would call the tool with
/// the same intent. Flags are read by their spelling (`--limit 2`, `--limit=2`, a bare
/// boolean switch), operands by the input schema's order, values typed by each property's
/// schema. The machine-mode selector (`--output`, `--format`) is the adapter's and is skipped.
pub fn from_argv(input: &InputSchema, args: &[String]) -> Result<Map<String, Value>, ArgvError> {
    let positional = input.positional();
    let mut operands: Vec<String> = Vec::new();
    let mut out = Map::new();
    let mut words = args.iter();
    let mut after_dashes = false;
    while let Some(word) = words.next() {
        if after_dashes || word == "-" || !word.starts_with('-') {
            operands.push(word.clone());
            continue;
        }
        if word == "--" {
            after_dashes = true;
            continue;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (word.as_str(), None),
        };
        let Some(name) = property_of(input, flag) else {
            return Err(ArgvError::Unknown(flag.to_owned()));
        };
        if ADAPTER_OWNED.contains(&name.as_str()) {
            // `--output jsonl` in an example: the adapter adds its own.
            if inline.is_none() && kind(input, &name) != Some("boolean") {
                words.next();
            }
            continue;
        }
        let value = match (kind(input, &name), inline) {
            (Some("boolean"), None) => Value::Bool(true),
            (_, Some(v)) => typed(input, &name, v),
            (_, None) => match words.next() {
                Some(v) => typed(input, &name, v.clone()),
                None => return Err(ArgvError::MissingValue(flag.to_owned())),
            },
        };
        if kind(input, &name) == Some("array") {
            if let Value::Array(items) = out.entry(name).or_insert_with(|| Value::Array(Vec::new()))
            {
                items.push(value);
            }
        } else {
            out.insert(name, value);
        }
    }
    let mut operands = operands.into_iter();
    for (i, name) in positional.iter().enumerate() {
        let last = i + 1 == positional.len();
        if kind(input, name) == Some("array") || (last && operands.len() > 1) {
            let rest: Vec<Value> = operands
                .by_ref()
                .map(|v| typed_item(input, name, v))
                .collect();
            if !rest.is_empty() {
                out.insert(name.clone(), Value::Array(rest));
            }
        } else if let Some(v) = operands.next() {
            let value = typed(input, name, v);
            out.insert(name.clone(), value);
        }
    }
    match operands.next() {
        Some(extra) => Err(ArgvError::Unknown(extra)),
        None => Ok(out),
    }
}

/// The property given with `flag`.
fn property_of(input: &InputSchema, flag: &str) -> Option<String> {
    let properties = input.schema.get("properties")?.as_object()?;
    properties
        .keys()
        .find(|p| input.flag(p).is_some_and(|f| f == flag))
        .cloned()
}

/// The JSON type a property's schema names, when it names one.
fn kind<'a>(input: &'a InputSchema, name: &str) -> Option<&'a str> {
    input.property(name)?.get("type")?.as_str()
}

/// `raw` as the value of property `name`: a number, a boolean or a string, as its schema says.
fn typed(input: &InputSchema, name: &str, raw: String) -> Value {
    match kind(input, name) {
        Some("array") => typed_item(input, name, raw),
        other => by_type(other, raw),
    }
}

/// `raw` as one item of array property `name`.
fn typed_item(input: &InputSchema, name: &str, raw: String) -> Value {
    let item = input
        .property(name)
        .and_then(|p| p.get("items"))
        .and_then(|i| i.get("type"))
        .and_then(Value::as_str);
    by_type(item, raw)
}

fn by_type(kind: Option<&str>, raw: String) -> Value {
    match kind {
        Some("integer") => match (raw.parse::<i64>(), raw.parse::<u64>()) {
            (Ok(n), _) => Value::from(n),
            // Past `i64::MAX` (a `u64` flag): still a number.
            (_, Ok(n)) => Value::from(n),
            _ => Value::String(raw),
        },
        Some("number") => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(raw), Value::Number),
        Some("boolean") => match raw.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(raw),
        },
        _ => Value::String(raw),
    }
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

/// The property a consumer adds to an input schema that does not say which of its properties
/// are operands (no `x-aoi.positional`) for a command that takes some: an array of strings
/// given in order after the flags, each confined as a path by `aoi mcp` (docs/discovery.md,
/// "Operands a schema does not name"). A tool not written to this profile is callable all the
/// same.
pub const OPERANDS: &str = "operands";

impl InputSchema {
    /// Command `entry`'s input schema, as lint and `aoi mcp` read it: with [`OPERANDS`] when
    /// the schema does not say which of its properties are operands and the command may take
    /// some (it has no example to tell, or an example has a word the schema's flags do not
    /// account for).
    pub fn for_command(mut schema: Value, entry: &CommandEntry) -> InputSchema {
        let plain = InputSchema::new(schema.clone());
        let words = entry.words().len();
        let takes_operands = entry.examples.is_empty()
            || entry.examples.iter().any(|example| {
                let rest = example.get(words..).unwrap_or_default();
                matches!(
                    from_argv(&plain, rest),
                    Err(ArgvError::Unknown(word)) if !word.starts_with('-')
                )
            });
        if takes_operands {
            add_operands(&mut schema);
        }
        InputSchema::new(schema)
    }
}

/// Adds [`OPERANDS`] to `schema` when it declares no operands and has no property of that
/// name.
fn add_operands(schema: &mut Value) {
    let declared = schema
        .get("x-aoi")
        .and_then(|x| x.get("positional"))
        .is_some();
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if declared
        || object.get("x-aoi").is_some_and(|x| !x.is_object())
        || object
            .get("properties")
            .is_some_and(|p| !p.is_object() || p.get(OPERANDS).is_some())
    {
        return;
    }
    let properties = object
        .entry("properties")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(properties) = properties.as_object_mut() {
        properties.insert(
            OPERANDS.into(),
            serde_json::json!({
                "type": "array",
                "items": {"type": "string", X_AOI_FORMAT: PATH_FORMAT},
                "description": "Operands, in order, after the flags: the command's input schema does not say which of its properties are operands"
            }),
        );
    }
    let x_aoi = object
        .entry("x-aoi")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(x_aoi) = x_aoi.as_object_mut() {
        x_aoi.insert("positional".into(), serde_json::json!([OPERANDS]));
    }
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
                "--limit",
                "5",
                "--tag",
                "t1",
                "--tag",
                "t2",
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
        assert_eq!(argv, ["--output", "jsonl", "$(rm -rf /); `x`"]);
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
    fn an_integral_float_is_written_as_the_integer() {
        // Found by the fuzz target `mcp_args`: `{"limit": 5.0}` passes an integer schema and
        // became `--limit 5.0`, which the CLI's integer parser refuses.
        let argv = to_argv(&input(), &args(json!({"query": "q", "limit": 5.0})), &[]).unwrap();
        assert_eq!(argv, ["--limit", "5", "q"]);
        let argv = to_argv(&input(), &args(json!({"query": "q", "limit": -0.0})), &[]).unwrap();
        assert_eq!(argv, ["--limit", "0", "q"]);
        // Fractions, and floats past the integers, stay as they are.
        let argv = to_argv(&input(), &args(json!({"query": "q", "limit": 2.5})), &[]).unwrap();
        assert_eq!(argv, ["--limit", "2.5", "q"]);
        let argv = to_argv(&input(), &args(json!({"query": "q", "limit": 1e19})), &[]).unwrap();
        assert_eq!(argv, ["--limit", "10000000000000000000", "q"]);
        let argv = to_argv(&input(), &args(json!({"query": "q", "limit": -4.0})), &[]).unwrap();
        assert_eq!(argv, ["--limit=-4", "q"]);
        let argv = to_argv(&input(), &args(json!({"query": "q", "limit": -1e19})), &[]).unwrap();
        assert_eq!(argv, ["--limit=-1e+19", "q"]);
        let argv = to_argv(&input(), &args(json!({"query": "q", "limit": 1e300})), &[]).unwrap();
        assert_eq!(argv, ["--limit", "1e+300", "q"]);
    }

    #[test]
    fn a_nul_byte_is_refused_as_an_argument_no_process_can_take() {
        // Found by the fuzz target `mcp_args`: the schema takes "\u0000", and the call then
        // failed to start as `unavailable` (retryable) instead of being refused.
        for bad in [
            json!({"query": "a\0b"}),
            json!({"query": "q", "tag": ["ok", "\0"]}),
            json!({"query": "q", "ids": ["\0"]}),
        ] {
            let err = to_argv(&input(), &args(bad.clone()), &[]).unwrap_err();
            assert!(matches!(err, ArgvError::Shape { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("NUL"), "{err}");
        }
    }

    #[test]
    fn an_integer_past_i64_reads_back_as_a_number() {
        // Found by the fuzz target `mcp_args`: `--limit 9983789742163914357` (a valid `u64`)
        // read back as the string "9983789742163914357".
        let argv: Vec<String> = ["--limit", "9983789742163914357", "q"]
            .map(str::to_owned)
            .to_vec();
        let args = from_argv(&input(), &argv).unwrap();
        assert_eq!(args["limit"], json!(9_983_789_742_163_914_357u64));
        assert_eq!(
            from_argv(&input(), &["--limit".into(), "-3".into(), "q".into()]).unwrap()["limit"],
            json!(-3)
        );
        let past: Vec<String> = ["--limit", "99999999999999999999", "q"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            from_argv(&input(), &past).unwrap()["limit"],
            json!("99999999999999999999")
        );
    }

    #[test]
    fn an_operand_before_the_trailing_one_never_becomes_a_flag() {
        // Found by the fuzz target `mcp_args`: with the last operand after `--`, the others
        // went before it as they were, so `"--debug"` was the flag and `"--"` the separator.
        let input = InputSchema::new(json!({
            "type": "object",
            "properties": {"file": {"type": "string"}, "command": {"type": "array"}},
            "x-aoi": {"positional": ["file", "command"], "trailing_after_double_dash": true}
        }));
        for file in ["--debug", "--", "-q", "--output=human"] {
            assert_eq!(
                to_argv(&input, &args(json!({"file": file, "command": ["ls"]})), &[]),
                Err(ArgvError::LeadingDash("file".into())),
                "{file}"
            );
        }
        let argv = to_argv(&input, &args(json!({"file": "-", "command": ["-l"]})), &[]).unwrap();
        assert_eq!(argv, ["-", "--", "-l"]);
    }

    #[test]
    fn operands_go_as_typed_and_behind_double_dash_only_when_one_starts_with_a_dash() {
        let input = InputSchema::new(json!({
            "type": "object",
            "properties": {"slug": {"type": "string"}, "more": {"type": "array"}},
            "x-aoi": {"positional": ["slug", "more"]}
        }));
        let call = |v: Value| to_argv(&input, &args(v), &[]);
        // A tool that takes no `--` (most that were not written with one in mind) is called
        // as a person would call it.
        assert_eq!(call(json!({"slug": "item_1"})).unwrap(), ["item_1"]);
        assert_eq!(
            call(json!({"slug": "a", "more": ["b", "-"]})).unwrap(),
            ["a", "b", "-"]
        );
        // An operand that looks like a flag is kept an operand by `--` (POSIX guideline 10).
        assert_eq!(
            call(json!({"slug": "-x", "more": ["b"]})).unwrap(),
            ["--", "-x", "b"]
        );
        assert_eq!(
            call(json!({"slug": "a", "more": ["--output=human"]})).unwrap(),
            ["--", "a", "--output=human"]
        );
        // A tool that says it takes no `--` gets such an operand refused, never passed as a flag.
        let strict = InputSchema::new(json!({
            "type": "object",
            "properties": {"slug": {"type": "string"}},
            "x-aoi": {"positional": ["slug"], "double_dash": false}
        }));
        assert!(!strict.takes_double_dash());
        assert_eq!(
            to_argv(&strict, &args(json!({"slug": "-rf"})), &[]),
            Err(ArgvError::NoDoubleDash("slug".into()))
        );
        assert_eq!(
            to_argv(&strict, &args(json!({"slug": "ok"})), &[]).unwrap(),
            ["ok"]
        );
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
                "--limit",
                "3",
                "--tag",
                "a",
                "--tag=-b",
                "--output",
                "jsonl"
            ]
        );
        let unknown = json!({"limt": 3});
        assert!(to_argv(&plain, unknown.as_object().unwrap(), &[]).is_err());
    }

    #[test]
    fn an_example_maps_to_arguments_and_back_to_the_same_call() {
        let input = input();
        let example: Vec<String> = [
            "--limit",
            "5",
            "--tag",
            "t1",
            "--tag=t2",
            "--confirm",
            "x y",
            "--",
            "a",
            "-b",
        ]
        .map(str::to_owned)
        .to_vec();
        let args = from_argv(&input, &example).unwrap();
        let argv = to_argv(&input, &args, &["--output".into(), "jsonl".into()]).unwrap();
        let again = from_argv(&input, &argv).unwrap();
        assert_eq!(again, args, "{argv:?}");
        assert_eq!(args["limit"], json!(5));
        assert_eq!(args["tag"], json!(["t1", "t2"]));
        assert_eq!(args["confirm"], json!(true));
        // A flag the schema cannot express is how an example would be uncallable through MCP.
        let bad: Vec<String> = vec!["--limt".into(), "5".into()];
        assert_eq!(
            from_argv(&input, &bad),
            Err(ArgvError::Unknown("--limt".into()))
        );
        let missing: Vec<String> = vec!["--limit".into()];
        assert!(matches!(
            from_argv(&input, &missing),
            Err(ArgvError::MissingValue(_))
        ));
    }

    #[test]
    fn a_schema_that_names_no_operands_takes_them_as_operands_confined_as_paths() {
        let schema = serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {"slug": {"type": "string", "description": "the note's slug"}}
        });
        let entry = |examples: serde_json::Value| -> CommandEntry {
            serde_json::from_value(serde_json::json!({"name": "get", "examples": examples}))
                .unwrap()
        };
        // No example to tell, or one with a word no flag takes: operands come as `operands`.
        let s = InputSchema::for_command(schema.clone(), &entry(serde_json::json!([])));
        let from_example = InputSchema::for_command(
            schema.clone(),
            &entry(serde_json::json!([["get", "item_1"]])),
        );
        assert_eq!(from_example, s);
        assert_eq!(s.positional(), [OPERANDS]);
        assert_eq!(
            s.path_properties(),
            [OPERANDS],
            "each is confined as a path"
        );
        assert_eq!(s.property(OPERANDS).unwrap()["type"], "array");
        assert_eq!(s.flag("slug").as_deref(), Some("--slug"));
        // `get item_1`, as the example has it, maps to arguments and back as it was.
        let words = vec!["item_1".to_owned()];
        let arguments = from_argv(&s, &words).unwrap();
        assert_eq!(arguments[OPERANDS], serde_json::json!(["item_1"]));
        assert_eq!(to_argv(&s, &arguments, &[]).unwrap(), ["item_1"]);
        // Examples that use flags only: the command takes no operands, none are added.
        let flags_only = InputSchema::for_command(
            schema.clone(),
            &entry(serde_json::json!([["get", "--slug", "a"]])),
        );
        assert_eq!(flags_only.schema, schema);
        // Declared operands (even none), or a property already called `operands`: untouched.
        for schema in [
            serde_json::json!({"properties": {"q": {"type": "string"}}, "x-aoi": {"positional": []}}),
            serde_json::json!({"properties": {"operands": {"type": "string"}}}),
        ] {
            let before = schema.clone();
            let read = InputSchema::for_command(schema, &entry(serde_json::json!([])));
            assert_eq!(read.schema, before);
        }
    }
}
