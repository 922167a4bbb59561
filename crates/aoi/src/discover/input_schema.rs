//! `input-schema`: a command's inputs as a strict JSON Schema, derived from its clap definition
//! (§10.3, §12.1, §16.2), so it cannot drift from `--help`.
//!
//! Every flag and operand is a property named after the clap argument id, with its type,
//! default, enum and description; `required` lists what clap requires; `additionalProperties`
//! is false so a hallucinated parameter is rejected. `x-aoi` says how to turn an object back
//! into argv: which properties are positional and in what order, which flag spelling each
//! property uses, and which values are secret (`hide_env_values` in clap, or a name that §11
//! calls sensitive).
//!
//! A command that reads records (`--input-jsonl`, `--input-json`, §12) documents one record
//! under `$defs.record` (`RECORD_DEF`), from a type the tool declares with
//! [`CommandSpec::record`](super::capabilities::CommandSpec::record) and validates its input
//! with ([`record_schema`], [`Input::validate_with`](crate::surface::input::Input::validate_with)):
//! the schema a consumer checks a record against is the one the tool reads it with.

use std::any::TypeId;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgAction, Command};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// The `$defs` name of a command's input record in its input schema (`docs/discovery.md`):
/// `aoi lint` builds good records from it (check 12), `aoi mcp` types its `records` argument
/// with it.
pub(crate) const RECORD_DEF: &str = "record";

/// The keyword that marks a string property as a file system path: `"x-aoi-format": "path"`
/// (`docs/discovery.md`). Written for a clap argument of type `PathBuf` or with a path value
/// hint; read by [`InputSchema::path_properties`](super::manifest::InputSchema::path_properties),
/// which also takes JSON Schema's own `format` with the same value.
pub const X_AOI_FORMAT: &str = "x-aoi-format";

/// The value of [`X_AOI_FORMAT`] (or `format`) that marks a path.
pub(crate) const PATH_FORMAT: &str = "path";

/// A command path that is not in the tool's clap definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown command {0:?}")]
pub struct UnknownCommand(pub String);

/// Finds a (possibly nested, space-separated) subcommand in a built clap `Command`.
pub(crate) fn find_command<'a>(root: &'a Command, path: &str) -> Option<&'a Command> {
    let mut cmd = root;
    for part in path.split_whitespace() {
        cmd = cmd.find_subcommand(part)?;
    }
    Some(cmd)
}

/// The leaf command paths of a tool, e.g. `["search", "auth login", "auth logout"]`.
pub(crate) fn command_paths(root: &Command) -> Vec<String> {
    fn walk(cmd: &Command, prefix: &str, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() || sub.get_name() == "help" {
                continue;
            }
            let path = if prefix.is_empty() {
                sub.get_name().to_owned()
            } else {
                format!("{prefix} {}", sub.get_name())
            };
            if sub.has_subcommands() {
                walk(sub, &path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, "", &mut out);
    out
}

/// True when an argument's value must never be echoed (§11).
pub fn is_secret(arg: &Arg) -> bool {
    if arg.is_hide_env_values_set() {
        return true;
    }
    let id = arg.get_id().as_str();
    takes_value(arg) && is_secret_name(id) && is_secret_name(arg.get_long().unwrap_or(id))
}

/// True when a parameter named `name` carries a secret by its name alone (§11's list:
/// `token`, `password`, `key`, …), the standard `idempotency_key` and `cursor` aside.
pub(crate) fn is_secret_name(name: &str) -> bool {
    const STANDARD: [&str; 3] = ["idempotency_key", "idempotency-key", "cursor"];
    !STANDARD.contains(&name) && crate::surface::redact::is_sensitive_flag(name)
}

/// True when the argument takes a value (`--limit N`), false for a switch or a counter.
pub(crate) fn takes_value(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Set | ArgAction::Append)
}

fn skipped(arg: &Arg) -> bool {
    arg.is_hide_set()
        || matches!(
            arg.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
}

/// The JSON Schema type of one value of `arg`.
fn value_schema(arg: &Arg) -> Map<String, Value> {
    let mut s = Map::new();
    let possible: Vec<Value> = arg
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| Value::from(p.get_name()))
        .collect();
    if !possible.is_empty() {
        s.insert("type".into(), "string".into());
        s.insert("enum".into(), Value::Array(possible));
        return s;
    }
    let t = arg.get_value_parser().type_id();
    let unsigned = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
    ];
    let signed = [
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<isize>(),
    ];
    if unsigned.iter().any(|u| t == *u) {
        s.insert("type".into(), "integer".into());
        s.insert("minimum".into(), 0.into());
    } else if signed.iter().any(|i| t == *i) {
        s.insert("type".into(), "integer".into());
    } else if t == TypeId::of::<f64>() || t == TypeId::of::<f32>() {
        s.insert("type".into(), "number".into());
    } else if t == TypeId::of::<Duration>() {
        s.insert("type".into(), "number".into());
        s.insert("exclusiveMinimum".into(), 0.into());
        s.insert("x-aoi-unit".into(), "seconds".into());
    } else if t == TypeId::of::<bool>() {
        s.insert("type".into(), "boolean".into());
    } else {
        s.insert("type".into(), "string".into());
        // A path by its type, or by its value hint when `-` (stdin) keeps it a `String`.
        let hinted = matches!(
            arg.get_value_hint(),
            clap::ValueHint::AnyPath | clap::ValueHint::FilePath | clap::ValueHint::DirPath
        );
        if t == TypeId::of::<PathBuf>() || hinted {
            s.insert(X_AOI_FORMAT.into(), PATH_FORMAT.into());
        }
    }
    s
}

/// Parses a clap default (an `OsStr`) into the JSON value of the property's type.
fn default_value(kind: &Map<String, Value>, raw: &str) -> Value {
    match kind.get("type").and_then(Value::as_str) {
        Some("integer") => raw.parse::<i64>().map_or_else(|_| raw.into(), Value::from),
        Some("number") => raw.parse::<f64>().map_or_else(|_| raw.into(), Value::from),
        Some("boolean") => raw.parse::<bool>().map_or_else(|_| raw.into(), Value::from),
        _ => raw.into(),
    }
}

fn property(arg: &Arg) -> Map<String, Value> {
    let mut p = match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => {
            let mut p = Map::new();
            p.insert("type".into(), "boolean".into());
            p.insert(
                "default".into(),
                Value::Bool(matches!(arg.get_action(), ArgAction::SetFalse)),
            );
            p
        }
        ArgAction::Count => {
            let mut p = Map::new();
            p.insert("type".into(), "integer".into());
            p.insert("minimum".into(), 0.into());
            p
        }
        _ => {
            let item = value_schema(arg);
            let many = matches!(arg.get_action(), ArgAction::Append)
                || arg.get_num_args().is_some_and(|r| r.max_values() > 1);
            let defaults: Vec<Value> = arg
                .get_default_values()
                .iter()
                .map(|d| default_value(&item, &d.to_string_lossy()))
                .collect();
            if many {
                let mut p = Map::new();
                p.insert("type".into(), "array".into());
                p.insert("items".into(), Value::Object(item));
                if arg.is_required_set() {
                    // A required list is not given by none: clap wants at least one value.
                    let least = arg.get_num_args().map_or(1, |r| r.min_values().max(1));
                    p.insert("minItems".into(), least.into());
                }
                if !defaults.is_empty() {
                    p.insert("default".into(), Value::Array(defaults));
                }
                p
            } else {
                let mut p = item;
                if let Some(d) = defaults.into_iter().next() {
                    p.insert("default".into(), d);
                }
                p
            }
        }
    };
    if let Some(help) = arg.get_long_help().or(arg.get_help()) {
        let text = help.to_string();
        p.insert(
            "description".into(),
            text.lines().next().unwrap_or_default().trim().into(),
        );
    }
    if is_secret(arg) {
        p.insert("writeOnly".into(), true.into());
    }
    // The SDK's own `--limit` (`PageArgs`) takes at least 1 (`check_limit`): the schema says
    // so, rather than the 0 an unsigned type allows.
    if arg.get_long() == Some("limit") && p.get("minimum") == Some(&Value::from(0)) {
        p.insert("minimum".into(), 1.into());
    }
    p
}

/// The strict input schema of one command (a space-separated path for nested commands).
///
/// `root` may be built or not; a built copy is used so global flags are included.
pub fn input_schema(root: &Command, path: &str) -> Result<Value, UnknownCommand> {
    let mut built = root.clone();
    built.build();
    let cmd = find_command(&built, path).ok_or_else(|| UnknownCommand(path.to_owned()))?;
    if cmd.has_subcommands() {
        return Err(UnknownCommand(path.to_owned()));
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut positional: Vec<(usize, String)> = Vec::new();
    let mut flags = Map::new();
    let mut secret = Vec::new();
    for arg in cmd.get_arguments() {
        if skipped(arg) {
            continue;
        }
        let name = arg.get_id().as_str().to_owned();
        properties.insert(name.clone(), Value::Object(property(arg)));
        if arg.is_required_set() {
            required.push(Value::from(name.clone()));
        }
        if arg.is_positional() {
            positional.push((arg.get_index().unwrap_or(usize::MAX), name.clone()));
        } else if let Some(long) = arg.get_long() {
            flags.insert(name.clone(), format!("--{long}").into());
        } else if let Some(short) = arg.get_short() {
            flags.insert(name.clone(), format!("-{short}").into());
        }
        if is_secret(arg) {
            secret.push(Value::from(name.clone()));
        }
    }
    positional.sort();
    let last_is_trailing = cmd
        .get_arguments()
        .any(|a| a.is_positional() && a.is_last_set());
    let full_name = format!("{} {path}", root.get_name());
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": full_name,
        "type": "object",
        "additionalProperties": false,
        "properties": properties,
        "required": required,
        "x-aoi": {
            "command": path,
            "positional": positional.into_iter().map(|(_, n)| n).collect::<Vec<_>>(),
            "flags": flags,
            "secret": secret,
            "trailing_after_double_dash": last_is_trailing,
        }
    });
    if let Some(about) = cmd.get_about() {
        schema["description"] = about.to_string().into();
    }
    Ok(schema)
}

/// The JSON Schema of one input record, derived from `T` as serde reads it: a standalone
/// 2020-12 document, for [`Input::validate_with`](crate::surface::input::Input::validate_with)
/// and for `with_record`.
///
/// `T` is what the tool deserializes each record into. Make it strict
/// (`#[serde(deny_unknown_fields)]` gives `additionalProperties: false`) and state the rules its
/// code enforces that a type cannot (lengths, patterns) with `#[schemars(...)]`, so that a record
/// the schema accepts is one the command can take. The reader hands a record over without `type`
/// and `aoi` when it is an event of an upstream AOI stream (§13.1); a command that takes such
/// events declares `type` in `T` with the values it accepts. The derived `title` (the Rust
/// type's name) is dropped: the record is named by where it lives.
///
/// ```
/// use aoi::discover::input_schema::record_schema;
///
/// /// One note to add.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct NoteRecord {
///     /// The note's text.
///     #[schemars(length(min = 1))]
///     text: String,
///     /// Labels.
///     #[serde(default)]
///     labels: Vec<String>,
/// }
///
/// let schema = record_schema::<NoteRecord>();
/// assert_eq!(schema["required"], serde_json::json!(["text"]));
/// assert_eq!(schema["additionalProperties"], false);
/// assert_eq!(schema["description"], "One note to add.");
/// assert!(schema.get("title").is_none());
/// ```
pub fn record_schema<T: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
    }
    schema
}

/// `input` (an input schema, as [`input_schema`] makes it) with `record` documented as
/// `$defs.record` ([`RECORD_DEF`]).
///
/// `record` is a standalone schema such as [`record_schema`] derives: its `$schema` is dropped
/// (the input schema declares the dialect) and the definitions it carries move up into the
/// input schema's `$defs`, so each `#/$defs/...` reference inside it still resolves. A nested
/// definition named `record` would be shadowed by the record itself: name types otherwise.
pub(crate) fn with_record(mut input: Value, mut record: Value) -> Value {
    let mut defs = Map::new();
    if let Value::Object(map) = &mut record {
        map.remove("$schema");
        if let Some(Value::Object(nested)) = map.remove("$defs") {
            defs = nested;
        }
    }
    defs.insert(RECORD_DEF.to_owned(), record);
    if let Value::Object(map) = &mut input {
        let entry = map
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(existing) = entry {
            existing.extend(defs);
        }
    }
    input
}

#[cfg(test)]
mod tests {
    use clap::{Args, CommandFactory, Parser, Subcommand};

    use super::*;
    use crate::surface::flags::{
        ConfirmArgs, GlobalArgs, InputArgs, MutationArgs, PageArgs, TimeoutArgs,
    };

    #[derive(Parser)]
    #[command(name = "notes")]
    struct Cli {
        #[command(flatten)]
        aoi: GlobalArgs,
        #[command(subcommand)]
        command: Cmd,
    }

    #[derive(Subcommand)]
    enum Cmd {
        /// Ranked full-text search.
        Search(SearchArgs),
        /// Delete a note.
        Delete {
            /// Note id.
            id: String,
            #[command(flatten)]
            mutation: MutationArgs,
            #[command(flatten)]
            confirm: ConfirmArgs,
        },
        /// Credentials.
        #[command(subcommand)]
        Auth(AuthCmd),
        /// Import notes.
        Import {
            #[command(flatten)]
            input: InputArgs,
            /// Attach this file.
            #[arg(long)]
            attach: Option<std::path::PathBuf>,
            /// A label.
            #[arg(long)]
            label: Option<String>,
        },
    }

    #[derive(Subcommand)]
    enum AuthCmd {
        /// Store a token.
        Login {
            /// API token.
            #[arg(long, env = "NOTES_TOKEN", hide_env_values = true)]
            token: Option<String>,
            /// The account password.
            #[arg(long)]
            password: Option<String>,
        },
    }

    #[derive(Args)]
    struct SearchArgs {
        /// What to look for.
        query: String,
        /// Extra terms.
        more: Vec<String>,
        /// Only these tags.
        #[arg(long = "tag", short = 't')]
        tags: Vec<String>,
        /// Sort order.
        #[arg(long, value_enum, default_value = "rank")]
        sort: Sort,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        timeout: TimeoutArgs,
        /// More output.
        #[arg(short, action = clap::ArgAction::Count)]
        verbose: u8,
    }

    #[derive(Clone, clap::ValueEnum)]
    enum Sort {
        Rank,
        Recent,
    }

    fn schema(path: &str) -> Value {
        input_schema(&Cli::command(), path).unwrap()
    }

    #[test]
    fn a_required_list_takes_at_least_one_item() {
        // Found by the fuzz target `mcp_args`: `{"ids": []}` met the schema of a required
        // `ids...` operand, and the CLI then refused the call for want of an id.
        let cmd = Command::new("t")
            .subcommand(Command::new("rm").arg(Arg::new("ids").required(true).num_args(1..)))
            .subcommand(Command::new("ls").arg(Arg::new("ids").num_args(0..)));
        let rm = input_schema(&cmd, "rm").unwrap();
        assert_eq!(rm["properties"]["ids"]["minItems"], 1);
        let ls = input_schema(&cmd, "ls").unwrap();
        assert!(ls["properties"]["ids"].get("minItems").is_none());
    }

    #[test]
    fn every_flag_and_operand_is_a_typed_property() {
        let s = schema("search");
        assert_eq!(s["additionalProperties"], false);
        let p = &s["properties"];
        assert_eq!(p["query"]["type"], "string");
        assert_eq!(p["query"]["description"], "What to look for");
        assert_eq!(p["more"]["type"], "array");
        assert_eq!(p["tags"]["items"]["type"], "string");
        assert_eq!(p["sort"]["enum"], json!(["rank", "recent"]));
        assert_eq!(p["sort"]["default"], "rank");
        assert_eq!(p["limit"]["type"], "integer");
        assert_eq!(p["limit"]["minimum"], 1, "check_limit refuses 0");
        assert_eq!(p["limit"]["default"], 20);
        assert_eq!(p["cursor"]["type"], "string");
        assert_eq!(p["timeout"]["type"], "number");
        assert_eq!(p["verbose"]["type"], "integer");
        assert_eq!(
            p["no_color"]["type"], "boolean",
            "global flags are included"
        );
        assert_eq!(p["output"]["enum"], json!(["human", "jsonl", "json"]));
        assert_eq!(s["required"], json!(["query"]));
        assert_eq!(s["x-aoi"]["positional"], json!(["query", "more"]));
        assert_eq!(s["x-aoi"]["flags"]["tags"], "--tag");
        assert_eq!(s["x-aoi"]["flags"]["limit"], "--limit");
        assert!(p.get("help").is_none());
        assert_eq!(s["description"], "Ranked full-text search");
    }

    #[test]
    fn paths_are_marked_by_type_or_by_value_hint() {
        let p = &schema("import")["properties"];
        for path in ["attach", "input_jsonl", "input_json"] {
            assert_eq!(p[path]["x-aoi-format"], "path", "{path}");
            assert_eq!(p[path]["type"], "string", "{path}");
        }
        assert!(p["label"].get("x-aoi-format").is_none());
    }

    #[test]
    fn booleans_secrets_and_nested_commands() {
        let s = schema("delete");
        assert_eq!(s["properties"]["confirm"]["type"], "boolean");
        assert_eq!(s["properties"]["confirm"]["default"], false);
        assert_eq!(s["properties"]["confirm_count"]["type"], "integer");
        assert_eq!(s["x-aoi"]["flags"]["dry_run"], "--dry-run");
        assert_eq!(
            s["x-aoi"]["secret"],
            json!([]),
            "idempotency keys are not secrets"
        );
        let s = schema("auth login");
        assert_eq!(s["x-aoi"]["secret"], json!(["token", "password"]));
        assert_eq!(s["properties"]["token"]["writeOnly"], true);
        assert_eq!(s["title"], "notes auth login");
        assert_eq!(
            command_paths(&Cli::command()),
            ["search", "delete", "auth login", "import"]
        );
        assert!(input_schema(&Cli::command(), "auth").is_err(), "not a leaf");
        assert!(input_schema(&Cli::command(), "nope").is_err());
    }

    #[test]
    fn help_and_input_schema_come_from_the_same_definition() {
        let base = Cli::command();
        let extended = Cli::command().mut_subcommand("search", |s| {
            s.arg(
                clap::Arg::new("fuzzy")
                    .long("fuzzy")
                    .action(ArgAction::SetTrue)
                    .help("Match approximately."),
            )
        });
        let help = |root: &Command| {
            let mut root = root.clone();
            root.build();
            let sub = root.find_subcommand_mut("search").unwrap();
            sub.render_help().to_string()
        };
        assert!(!help(&base).contains("--fuzzy"));
        assert!(help(&extended).contains("--fuzzy"));
        assert!(help(&extended).contains("Match approximately."));
        assert!(input_schema(&base, "search").unwrap()["properties"]
            .get("fuzzy")
            .is_none());
        let s = input_schema(&extended, "search").unwrap();
        assert_eq!(s["properties"]["fuzzy"]["type"], "boolean");
        assert_eq!(
            s["properties"]["fuzzy"]["description"],
            "Match approximately."
        );
        assert_eq!(s["x-aoi"]["flags"]["fuzzy"], "--fuzzy");
        // And every flag --help shows is a property, and the other way round.
        let text = help(&base);
        let props = s["properties"].as_object().unwrap();
        for (name, flag) in s["x-aoi"]["flags"].as_object().unwrap() {
            if name != "fuzzy" {
                assert!(
                    text.contains(flag.as_str().unwrap()),
                    "{flag} not in --help"
                );
            }
            assert!(props.contains_key(name));
        }
    }

    /// A record with a nested type, as a tool would declare it.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct NoteRecord {
        /// The note's text.
        text: String,
        /// Where it came from.
        source: Option<Source>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Source {
        url: String,
    }

    #[test]
    fn a_record_lives_under_defs_record_with_its_own_definitions_beside_it() {
        let s = with_record(schema("import"), record_schema::<NoteRecord>());
        assert!(jsonschema::meta::is_valid(&s));
        let defs = s["$defs"].as_object().unwrap();
        assert_eq!(
            defs.keys().collect::<Vec<_>>(),
            ["Source", RECORD_DEF],
            "the nested type moved up"
        );
        let record = &defs[RECORD_DEF];
        assert!(record.get("$schema").is_none() && record.get("$defs").is_none());
        assert_eq!(record["required"], json!(["text"]));
        let v = jsonschema::validator_for(&json!({"$defs": s["$defs"], "$ref": "#/$defs/record"}))
            .unwrap();
        assert!(v.is_valid(&json!({"text": "a", "source": {"url": "https://x"}})));
        assert!(
            !v.is_valid(&json!({"text": "a", "source": {}})),
            "the nested $ref resolves"
        );
        assert!(!v.is_valid(&json!({"text": "a", "txet": "typo"})));
        assert_eq!(
            s["properties"],
            schema("import")["properties"],
            "the command's own schema is untouched"
        );
    }

    #[test]
    fn the_schema_is_valid_2020_12_and_strict() {
        let s = schema("search");
        assert!(jsonschema::meta::is_valid(&s));
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(v.is_valid(&json!({"query": "agent", "limit": 2, "tags": ["a"]})));
        assert!(
            !v.is_valid(&json!({"query": "agent", "limt": 2})),
            "typos are rejected"
        );
        assert!(!v.is_valid(&json!({"limit": 2})), "query is required");
        assert!(!v.is_valid(&json!({"query": "a", "sort": "random"})));
    }
}
