//! MCP `tools/call` arguments to a CLI's argv, as `aoi mcp` makes them
//! (`aoi::discover::argv::to_argv`, behind the validator of the tool's `inputSchema`:
//! `caller_schema`, then `aoi_mcp::compact::input`). The CLI is a clap definition built on the
//! SDK's standard flags, and its input schema is derived from it (`input_schema`), as a tool
//! publishes it. Arguments the schema accepts become an argv that clap, parsing it as the CLI
//! would, reads back as the same arguments (and so does the reverse mapping lint uses,
//! `from_argv`). The mapping itself refuses what no command line can carry: a NUL byte (no
//! `exec` takes one), an operand starting with `-` before a trailing `--`, and arguments naming
//! a property the schema does not offer.

#![no_main]

mod arbitrary_json;

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use aoi::discover::argv::{caller_schema, from_argv, to_argv, ArgvError};
use aoi::discover::input_schema::input_schema;
use aoi::discover::manifest::InputSchema;
use aoi::surface::flags::{ConfirmArgs, GlobalArgs, MutationArgs, PageArgs, TimeoutArgs};
use clap::{value_parser, Arg, ArgAction, ArgMatches, Args, Command};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

/// How the CLI types each argument, for reading clap's matches back as JSON.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Path,
    Switch,
    Usize,
    U64,
    U8,
    I64,
    F64,
    Seconds,
}

fn kind(id: &str) -> Kind {
    match id {
        "dir" => Kind::Path,
        "no_color" | "debug" | "dry_run" | "confirm" | "quiet" => Kind::Switch,
        "limit" => Kind::Usize,
        "max_bytes" | "confirm_count" => Kind::U64,
        "level" => Kind::U8,
        "offset" => Kind::I64,
        "ratio" => Kind::F64,
        "timeout" => Kind::Seconds,
        _ => Kind::Text,
    }
}

/// A CLI with one command of each shape: operands and pages, a destructive bulk command with
/// numbers of every type, and one whose last operand is taken after `--`.
fn cli() -> Command {
    let search = Command::new("search")
        .about("Ranked search.")
        .arg(Arg::new("query").required(true).help("The words to find."))
        .arg(Arg::new("tag").long("tag").action(ArgAction::Append))
        .arg(Arg::new("collection").long("collection"))
        .arg(Arg::new("key").short('k').help("A short-only flag."));
    let search = TimeoutArgs::augment_args(<PageArgs>::augment_args(search));
    let delete = Command::new("delete")
        .about("Delete documents.")
        .arg(Arg::new("ids").required(true).num_args(1..))
        .arg(
            Arg::new("offset")
                .long("offset")
                .value_parser(value_parser!(i64)),
        )
        .arg(
            Arg::new("ratio")
                .long("ratio")
                .value_parser(value_parser!(f64)),
        )
        .arg(
            Arg::new("level")
                .long("level")
                .value_parser(value_parser!(u8)),
        )
        .arg(Arg::new("mode").long("mode").value_parser(["fast", "slow"]))
        .arg(Arg::new("quiet").short('q').action(ArgAction::SetTrue));
    let delete = ConfirmArgs::augment_args(MutationArgs::augment_args(delete));
    let exec = Command::new("exec")
        .about("Run a program.")
        .arg(Arg::new("program").required(true))
        .arg(Arg::new("args").last(true).num_args(0..))
        .arg(
            Arg::new("dir")
                .long("dir")
                .value_parser(value_parser!(PathBuf)),
        );
    GlobalArgs::augment_args(Command::new("tool"))
        .subcommand(search)
        .subcommand(delete)
        .subcommand(exec)
}

const COMMANDS: [&str; 3] = ["search", "delete", "exec"];

/// A command as the adapter serves it: its input schema, the schema of its MCP tool's
/// arguments, and that schema compiled.
struct Tool {
    input: InputSchema,
    served: Map<String, Value>,
    validator: jsonschema::Validator,
}

/// Each command's tool.
static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    let root = cli();
    COMMANDS
        .iter()
        .map(|name| {
            let input = InputSchema::new(input_schema(&root, name).expect("a command"));
            let mut served = caller_schema(&input);
            aoi_mcp::compact::input(&mut served);
            let validator = jsonschema::validator_for(&Value::Object(served.clone()))
                .expect("the served schema compiles");
            Tool {
                input,
                served,
                validator,
            }
        })
        .collect()
});

/// A value for a property of schema `schema`: mostly of its type, sometimes anything.
fn value_for(u: &mut Unstructured, schema: &Value) -> Result<Value> {
    if u.ratio(1, 5)? {
        return arbitrary_json::value(u, 2);
    }
    if let Some(Value::Array(choices)) = schema.get("enum") {
        if !choices.is_empty() {
            return Ok(u.choose(choices)?.clone());
        }
    }
    Ok(match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => Value::Bool(u.arbitrary()?),
        Some("integer") | Some("number") => arbitrary_json::number(u)?,
        Some("array") => {
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            let n = u.int_in_range(0..=3)?;
            Value::Array((0..n).map(|_| value_for(u, &item)).collect::<Result<_>>()?)
        }
        _ => Value::String(arbitrary_json::string(u)?),
    })
}

fn arguments(u: &mut Unstructured, served: &Map<String, Value>) -> Result<Map<String, Value>> {
    let mut args = Map::new();
    if let Some(Value::Object(props)) = served.get("properties") {
        for (name, schema) in props {
            if u.arbitrary()? {
                args.insert(name.clone(), value_for(u, schema)?);
            }
        }
    }
    if u.ratio(1, 8)? {
        let name = (*u.choose(&["output", "format", "nope", "records", "--limit"])?).to_owned();
        args.insert(name, arbitrary_json::value(u, 1)?);
    }
    Ok(args)
}

/// Two JSON values the same as arguments: numbers by value (`5` is `5.0`), arrays item by
/// item.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        _ => a == b,
    }
}

/// The arguments as a command line can carry them: no nulls, no `false` switches, no empty
/// lists, no null items.
fn carried(args: &Map<String, Value>) -> Map<String, Value> {
    args.iter()
        .filter_map(|(k, v)| {
            let v = match v {
                Value::Null | Value::Bool(false) => return None,
                Value::Array(items) => {
                    let items: Vec<Value> =
                        items.iter().filter(|i| !i.is_null()).cloned().collect();
                    if items.is_empty() {
                        return None;
                    }
                    Value::Array(items)
                }
                other => other.clone(),
            };
            Some((k.clone(), v))
        })
        .collect()
}

/// What clap made of property `id`, as JSON; `None` when the command line did not give it.
fn parsed(m: &ArgMatches, id: &str) -> Option<Value> {
    if m.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
        return None;
    }
    let number = |f: f64| serde_json::Number::from_f64(f).map(Value::Number);
    let one = |v: Option<Value>| v.expect("typed as declared");
    Some(match kind(id) {
        Kind::Switch => Value::Bool(m.get_flag(id)),
        Kind::Usize => one(m.get_one::<usize>(id).map(|n| Value::from(*n as u64))),
        Kind::U64 => one(m.get_one::<u64>(id).map(|n| Value::from(*n))),
        Kind::U8 => one(m.get_one::<u8>(id).map(|n| Value::from(*n))),
        Kind::I64 => one(m.get_one::<i64>(id).map(|n| Value::from(*n))),
        Kind::F64 => one(m.get_one::<f64>(id).and_then(|f| number(*f))),
        Kind::Seconds => one(m
            .get_one::<Duration>(id)
            .map(|d| Value::from(d.as_secs_f64()))),
        Kind::Path => one(m
            .get_one::<PathBuf>(id)
            .map(|p| Value::from(p.to_string_lossy().into_owned()))),
        Kind::Text => {
            let values: Vec<Value> = m
                .get_raw(id)
                .into_iter()
                .flatten()
                .map(|v| Value::from(v.to_string_lossy().into_owned()))
                .collect();
            if matches!(id, "tag" | "ids" | "args") {
                Value::Array(values)
            } else {
                values.into_iter().next().unwrap_or(Value::Null)
            }
        }
    })
}

/// A given value as clap reads it: a number of seconds is a `Duration` (nanosecond steps).
fn as_read(id: &str, given: &Value) -> Value {
    match (kind(id), given.as_f64()) {
        (Kind::Seconds, Some(s)) => {
            Duration::try_from_secs_f64(s).map_or(given.clone(), |d| Value::from(d.as_secs_f64()))
        }
        _ => given.clone(),
    }
}

/// True when `value` is within what property `id`'s type can hold.
fn in_range(id: &str, value: &Value) -> bool {
    let whole = |lo: i128, hi: i128| {
        let n = match (value.as_i64(), value.as_u64(), value.as_f64()) {
            (Some(n), _, _) => i128::from(n),
            (_, Some(n), _) => i128::from(n),
            // Exact for every integral float that could be in range.
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 1e30 => f as i128,
            _ => return false,
        };
        (lo..=hi).contains(&n)
    };
    match kind(id) {
        Kind::Usize | Kind::U64 => whole(0, u64::MAX.into()),
        Kind::U8 => whole(0, 255),
        Kind::I64 => whole(i64::MIN.into(), i64::MAX.into()),
        Kind::Seconds => value
            .as_f64()
            .is_some_and(|s| Duration::try_from_secs_f64(s).is_ok()),
        _ => true,
    }
}

fn run(u: &mut Unstructured) -> Result<()> {
    let which = u.choose_index(COMMANDS.len())?;
    let Tool {
        input,
        served,
        validator,
    } = &TOOLS[which];
    let args = arguments(u, served)?;
    let machine = ["--output".to_owned(), "jsonl".to_owned()];
    let argv = to_argv(input, &args, &machine);

    let offered = served
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if args.keys().any(|k| !offered.contains_key(k)) {
        assert!(
            argv.is_err(),
            "an argument the tool does not offer became argv: {argv:?}"
        );
    }
    if !validator.is_valid(&Value::Object(args.clone())) {
        return Ok(());
    }
    // No process can take a NUL byte in an argument: the mapping refuses it.
    let nul = args.values().any(|v| match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items
            .iter()
            .any(|i| i.as_str().is_some_and(|s| s.contains('\0'))),
        _ => false,
    });
    let argv = match argv {
        Ok(argv) => argv,
        Err(_) if nul => return Ok(()),
        // Before the `--` of a trailing operand, an operand starting with `-` would be a flag.
        Err(ArgvError::LeadingDash(name))
            if input.trailing_after_double_dash()
                && args[&name]
                    .as_str()
                    .is_some_and(|s| s.starts_with('-') && s != "-") =>
        {
            return Ok(())
        }
        Err(e) => panic!("arguments the schema accepts are refused: {e}: {args:?}"),
    };
    for word in &argv {
        assert!(
            !word.contains('\0'),
            "a NUL byte cannot be passed to exec: {argv:?}"
        );
    }
    let line = ["tool", COMMANDS[which]]
        .into_iter()
        .map(str::to_owned)
        .chain(argv.iter().cloned());
    let matches = match cli().try_get_matches_from(line) {
        Ok(m) => m,
        // What the derived schema does not say, the CLI refuses itself, as a usage error,
        // never misreading it: a number past its type (integers are bounded below only) and
        // an empty path (clap's `PathBuf` parser wants one character).
        Err(e)
            if e.kind() == clap::error::ErrorKind::ValueValidation
                && args.iter().any(|(id, v)| !in_range(id, v)) =>
        {
            return Ok(())
        }
        Err(e)
            if e.kind() == clap::error::ErrorKind::InvalidValue
                && args.iter().any(|(id, v)| kind(id) == Kind::Path && v == "") =>
        {
            return Ok(())
        }
        Err(e) => panic!("the CLI refuses {argv:?} for {args:?}: {e}"),
    };
    let m = matches
        .subcommand_matches(COMMANDS[which])
        .expect("the command");
    assert_eq!(
        matches.get_one::<aoi::surface::flags::OutputMode>("output"),
        Some(&aoi::surface::flags::OutputMode::Jsonl)
    );
    let wanted = carried(&args);
    for (id, _) in offered.iter() {
        let got = parsed(m, id);
        match (wanted.get(id), got) {
            (None, None) => {}
            (Some(given), Some(got)) => assert!(
                same(&as_read(id, given), &got),
                "`{id}`: given {given}, the CLI read {got} from {argv:?}"
            ),
            (given, got) => panic!("`{id}`: given {given:?}, the CLI read {got:?} from {argv:?}"),
        }
    }
    // The reverse mapping (lint's, for a tool's examples) reads the same arguments back.
    let back = from_argv(input, &argv).expect("the adapter's own argv reads back");
    let same_back = back.len() == wanted.len()
        && wanted
            .iter()
            .all(|(k, v)| back.get(k).is_some_and(|b| same(v, b)));
    assert!(
        same_back,
        "from_argv({argv:?}) = {back:?}, given {wanted:?}"
    );
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
