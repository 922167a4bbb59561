//! The App's unit tests.
use super::cli::CliDefinition;
use super::*;
use clap::FromArgMatches;

fn app() -> App {
    App::new("notes", "2.1.0", "com.example.notes.events")
        .schema_versions(["1.0.0", "1.2.0", "2.0.0"], "2.0.0")
}

#[test]
fn negotiation_picks_exact_versions_and_the_highest_match_of_a_prefix() {
    let a = app();
    assert_eq!(a.negotiate(None).unwrap().schema_version, "2.0.0");
    assert_eq!(a.negotiate(Some("1")).unwrap().schema_version, "1.2.0");
    assert_eq!(a.negotiate(Some("1.0")).unwrap().schema_version, "1.0.0");
    assert_eq!(a.negotiate(Some("v2")).unwrap().schema_version, "2.0.0");
    assert_eq!(a.negotiate(Some("1.0.0")).unwrap().schema_version, "1.0.0");
    let e = a.negotiate(Some("3")).unwrap_err();
    assert_eq!(e.category, Category::Unsupported);
    assert_eq!(e.code.as_str(), "SCHEMA_VERSION_UNSUPPORTED");
    assert!(e.message.contains("1.0.0, 1.2.0, 2.0.0"));
    assert!(a.negotiate(Some("1.")).is_err());
    assert!(
        a.negotiate(Some("10")).is_err(),
        "10 is not a prefix of 1.x at a dot"
    );
}

#[test]
fn the_sdk_states_the_discovery_commands_a_tool_did_not() {
    let root = clap::Command::new("notes")
        .subcommand(clap::Command::new("search"))
        .subcommand(clap::Command::new("schema"))
        .subcommand(clap::Command::new("input-schema"))
        .subcommand(clap::Command::new("capabilities"));
    let a = app()
        .command(CommandSpec::new("search").read_only())
        .command(
            CommandSpec::new("schema")
                .read_only()
                .example(["schema", "--name", "x"]),
        );
    let stated = a.stated(&root);
    let find = |name: &str| stated.iter().find(|s| s.name() == name).cloned();
    // The tool's own statement stands.
    assert_eq!(
        find("schema").map(|s| s.examples().to_vec()),
        Some(vec![vec![
            "schema".to_owned(),
            "--name".to_owned(),
            "x".to_owned()
        ]])
    );
    let input = find("input-schema").expect("stated by the SDK");
    assert_eq!(input.examples(), [["input-schema", "--command", "search"]]);
    assert_eq!(
        find("capabilities").map(|s| s.examples().to_vec()),
        Some(vec![vec!["capabilities".to_owned()]])
    );
    // A command the definition lacks is not stated.
    let bare = clap::Command::new("notes").subcommand(clap::Command::new("search"));
    assert_eq!(a.stated(&bare).len(), 2);
}

#[test]
fn examples_join_a_commands_own_after_help_and_never_replace_it() {
    let root = clap::Command::new("notes")
        .subcommand(clap::Command::new("search").after_help("Exit status:\n  0 found"))
        .subcommand(
            clap::Command::new("list")
                .after_help("Exit status:\n  0\n\nExamples:\n  a | notes list"),
        )
        .subcommand(clap::Command::new("get"));
    let a = app()
        .command(CommandSpec::new("search").example(["search", "x y"]))
        .command(CommandSpec::new("list").example(["list"]))
        .command(CommandSpec::new("get").example(["get", "1"]));
    let taught = a.taught(root);
    let help = |name: &str| {
        taught
            .find_subcommand(name)
            .and_then(|c| c.get_after_help())
            .map(ToString::to_string)
            .unwrap_or_default()
    };
    assert_eq!(
        help("search"),
        "Exit status:\n  0 found\n\nExamples:\n  notes search 'x y'"
    );
    assert_eq!(
        help("list"),
        "Exit status:\n  0\n\nExamples:\n  notes list\n  a | notes list"
    );
    assert_eq!(help("get"), "Examples:\n  notes get 1");
}

#[test]
fn a_record_for_a_command_that_reads_no_input_is_an_error_at_start_up() {
    let stray = app().command(
        CommandSpec::new("search")
            .read_only()
            .record_with_schema(serde_json::json!({"type": "object"})),
    );
    let e = stray.check::<Notes>().unwrap_err();
    assert_eq!(e.code.as_str(), "COMMAND_SPEC_RECORD");
    assert!(e.message.contains("`search`"), "{}", e.message);
}

#[test]
fn a_statement_naming_no_command_is_an_error_at_start_up_not_a_silent_default() {
    let typo = app().command(CommandSpec::new("serch").read_only());
    let e = typo.check::<Notes>().unwrap_err();
    assert_eq!(e.code.as_str(), "COMMAND_SPEC_UNKNOWN");
    assert!(
        e.message.contains("`serch`") && e.message.contains("search"),
        "{}",
        e.message
    );
    // Every run refuses to start, whatever it asked for.
    let parsed = typo.parse_from::<Notes, _, _>(["notes", "search", "x", "--output", "jsonl"]);
    assert!(parsed.is_err());
    assert!(app()
        .command(CommandSpec::new("search").read_only())
        .check::<Notes>()
        .is_ok());
    assert!(app()
        .command(CommandSpec::new("auth login"))
        .check::<Notes>()
        .is_ok());
    // A group is no command to run, and neither is nothing.
    for name in ["auth", ""] {
        assert!(app()
            .command(CommandSpec::new(name))
            .check::<Notes>()
            .is_err());
    }
}

#[test]
fn an_example_given_to_the_app_is_the_example_of_the_command_it_names() {
    let root = built(&Notes::command());
    let a = app()
        .command(CommandSpec::new("search").read_only())
        .command(CommandSpec::new("auth login"))
        .setup(["auth", "login"])
        .example(["search", "--limit", "2", "milk"])
        .example(["auth", "login"]);
    let stated = a.stated(&root);
    let find = |name: &str| stated.iter().find(|s| s.name() == name).cloned();
    let search = find("search").expect("stated");
    assert_eq!(search.examples(), [["search", "--limit", "2", "milk"]]);
    assert_eq!(find("auth login").map(|s| s.examples().len()), Some(1));
    // The App's set-up is every stated command's that has none, never a discovery one's.
    assert_eq!(search.setup_steps().len(), 1);
    assert!(find("capabilities").is_some_and(|c| c.setup_steps().is_empty()));
    // An example that names no stated command stops the tool at start-up.
    let e = app()
        .command(CommandSpec::new("search").read_only())
        .example(["serch", "milk"])
        .check::<Notes>()
        .unwrap_err();
    assert_eq!(e.code.as_str(), "EXAMPLE_COMMAND_UNKNOWN");
    assert!(e.message.contains("`serch milk`"), "{}", e.message);
}

#[test]
fn app_parse_remembers_the_command_app_run_runs() {
    let a = app().command(CommandSpec::new("search").read_only());
    assert_eq!(a.parsed_command(), None);
    let _: Notes = a.parse_from(["notes", "search", "x"]).unwrap();
    assert_eq!(a.parsed_command().as_deref(), Some("search"));
    let _: Notes = a.parse_from(["notes", "auth", "login"]).unwrap();
    assert_eq!(a.parsed_command().as_deref(), Some("auth login"));
}

#[test]
fn the_schema_of_a_schema_id_tool_is_its_commands_events_once_each() {
    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Hit {
        id: String,
    }
    impl crate::DomainEvent for Hit {
        const TYPE: &'static str = "hit";
    }
    let a = app()
        .schema_id("https://schemas.example.com/notes")
        .command(CommandSpec::new("search").read_only().emits::<Hit>())
        .command(CommandSpec::new("auth login").emits::<Hit>());
    let schema = a.schema_document(&a.identity()).unwrap();
    let types = crate::discover::schema::event_types(&schema);
    assert!(types.contains("hit"), "{types:?}");
    assert!(a.check::<Notes>().is_ok());
    // Without schema_id the schema is the framework's, and a command's `hit` is unknown.
    let bare = app().command(CommandSpec::new("search").emits::<Hit>());
    assert_eq!(
        bare.check::<Notes>().unwrap_err().code.as_str(),
        "EVENT_TYPE_UNKNOWN"
    );
}

#[test]
fn a_cli_of_subcommands_parses_them_and_leaves_discovery_to_app_parse() {
    #[derive(Debug, Subcommand)]
    enum Cmd {
        /// Say hello.
        Hello {
            /// Who.
            name: String,
        },
    }
    let a = App::new("hello", "1.2.3", "com.example.hello")
        .about("Greets people")
        .command(CommandSpec::new("hello").read_only());
    let cli: Cli<Cmd> = a
        .parse_from(["hello", "hello", "Ada", "--output", "jsonl"])
        .unwrap();
    assert!(matches!(cli.command, Cmd::Hello { ref name } if name == "Ada"));
    assert!(cli.aoi.machine());
    let root = a.root::<Cli<Cmd>>();
    assert_eq!(root.get_name(), "hello");
    assert_eq!(root.get_version(), Some("1.2.3"));
    assert_eq!(
        root.get_about().map(ToString::to_string).as_deref(),
        Some("Greets people")
    );
    assert!(root.find_subcommand("capabilities").is_some());
    // Not a Cli's to build: App::parse answered it.
    let discovery = CliDefinition::<Cmd>::command()
        .try_get_matches_from(["hello", "capabilities"])
        .unwrap();
    assert!(Cli::<Cmd>::from_arg_matches(&discovery).is_err());
    assert!(sdk_discovery(&built(&root), &discovery).is_some());
}

#[test]
fn a_statement_naming_an_event_the_schema_lacks_is_an_error() {
    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Hit {
        id: String,
    }
    impl crate::DomainEvent for Hit {
        const TYPE: &'static str = "hit";
    }
    let with_schema = |events: &[&str]| {
        app()
            .event_schema(|id| {
                crate::discover::schema::EventSchema::new(id, "https://schemas.example.com")
                    .domain_event::<Hit>()
                    .build()
            })
            .command(
                CommandSpec::new("search")
                    .read_only()
                    .events(events.iter().copied()),
            )
    };
    assert!(with_schema(&["hit", "aoi:warning"])
        .check::<Notes>()
        .is_ok());
    let e = with_schema(&["hits"]).check::<Notes>().unwrap_err();
    assert_eq!(e.code.as_str(), "EVENT_TYPE_UNKNOWN");
    assert!(e.message.contains("`hits`"), "{}", e.message);
}

#[derive(Debug, Parser)]
#[command(name = "notes")]
struct Notes {
    #[command(flatten)]
    aoi: GlobalArgs,
    /// A global flag that takes a value.
    #[arg(long, short = 'd', global = true)]
    db: Option<String>,
    #[command(subcommand)]
    command: NotesCommand,
}

#[derive(Debug, clap::Subcommand)]
enum NotesCommand {
    Search {
        query: String,
        #[arg(long, short = 'n')]
        limit: Option<u64>,
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    #[command(flatten)]
    Discovery(Discovery),
}

#[derive(Debug, clap::Subcommand)]
enum AuthCommand {
    Login,
}

/// A tool may defer its subcommands (`#[command(defer = true)]`) so a run builds only the
/// one it names; statements, secret flags and discovery still see every command (§11, §17).
#[derive(Debug, Parser)]
#[command(name = "notes")]
struct Deferred {
    #[command(flatten)]
    aoi: GlobalArgs,
    #[command(subcommand)]
    command: DeferredCommand,
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
enum DeferredCommand {
    Search {
        query: String,
        /// A credential (§11).
        #[arg(long)]
        api_key: Option<String>,
    },
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    #[command(flatten)]
    Discovery(Discovery),
}

#[test]
fn deferred_subcommands_are_checked_redacted_and_discovered_in_full() {
    let deferred = || {
        app()
            .command(CommandSpec::new("search").read_only())
            .command(CommandSpec::new("auth login"))
    };
    // A nested command exists only once built: no false COMMAND_SPEC_UNKNOWN.
    deferred().check::<Deferred>().expect("statements match");
    let a = deferred();
    let parsed = a.parse_from::<Deferred, _, _>(["notes", "auth", "login"]);
    assert!(parsed.is_ok(), "a nested deferred command parses");
    let e = app()
        .command(CommandSpec::new("auth logout"))
        .check::<Deferred>()
        .unwrap_err();
    assert_eq!(e.code.as_str(), "COMMAND_SPEC_UNKNOWN");
    assert!(app()
        .command(CommandSpec::new("auth logout"))
        .parse_from::<Deferred, _, _>(["notes", "auth", "login"])
        .is_err());

    // The flags of the command a run named are known secret once parsed.
    let a = deferred();
    let parsed = a.parse_from::<Deferred, _, _>(["notes", "search", "q", "--api-key", "k1"]);
    assert!(parsed.is_ok());
    let redacted = a.redactor().redact_args(&[
        "search".to_owned(),
        "q".to_owned(),
        "--api-key".to_owned(),
        "k1".to_owned(),
    ]);
    assert!(
        !redacted.args.iter().any(|w| w == "k1"),
        "{:?}",
        redacted.args
    );

    // Discovery describes the deferred commands' flags.
    let global = GlobalArgs::default();
    let doc = deferred()
        .discovery_document(
            &Deferred::command(),
            &global,
            &Discovery::InputSchema {
                command: "search".to_owned(),
            },
        )
        .expect("an input schema");
    assert!(doc["properties"].get("api_key").is_some(), "{doc}");
}

/// §8.3: a usage error's `aoi:meta.command` names the subcommand its arguments named.
#[test]
fn the_command_a_usage_error_is_about_is_read_from_the_raw_arguments_section_8_3() {
    let named = |a: &[&str]| {
        let args: Vec<OsString> = std::iter::once("notes")
            .chain(a.iter().copied())
            .map(OsString::from)
            .collect();
        command_named(&Notes::command(), &args)
    };
    assert_eq!(named(&["search", "--limt", "5"]).as_deref(), Some("search"));
    assert_eq!(
        named(&["--db", "search", "search"]).as_deref(),
        Some("search"),
        "a flag's value is not a command"
    );
    assert_eq!(
        named(&["--db=x", "-d", "auth", "search"]).as_deref(),
        Some("search")
    );
    assert_eq!(
        named(&["--output", "jsonl", "auth", "login", "--bogus"]).as_deref(),
        Some("auth login")
    );
    assert_eq!(
        named(&["--format", "jsonl", "input-schema", "--commnd"]).as_deref(),
        Some("input-schema")
    );
    assert_eq!(named(&["search", "-qn", "auth"]).as_deref(), Some("search"));
    assert_eq!(named(&["auth", "logn"]).as_deref(), Some("auth"));
    assert_eq!(
        named(&["serach", "auth"]),
        None,
        "an unknown word ends the walk"
    );
    assert_eq!(
        named(&["--", "search"]),
        None,
        "an operand after -- is no command"
    );
    assert_eq!(named(&["--bogus"]), None);
    assert_eq!(named(&[]), None);
}

/// §16.1 and §1.3: clap's suggestion survives into the machine-mode error's one-line `hint`.
#[test]
fn a_usage_error_keeps_clap_suggestions_in_its_hint_section_16_1() {
    let error = Notes::try_parse_from(["notes", "search", "x", "--limt", "5"]).unwrap_err();
    let mut out = Vec::new();
    let builder = Emitter::builder(app().identity()).command("search");
    let finished = builder.start(&mut out).and_then(|mut e| {
        e.error(&usage_error(&error))?;
        e.finish(Outcome::failed())
    });
    assert_eq!(finished.unwrap().exit_code, exit_code::USAGE);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(r#""hint":"a similar argument exists: '--limit'""#),
        "{text}"
    );
    assert!(
        text.contains(r#""message":"unexpected argument '--limt' found""#),
        "{text}"
    );
}

#[test]
fn machine_mode_is_detected_before_parsing() {
    let yes = |a: &[&str]| machine_requested(&a.iter().map(OsString::from).collect::<Vec<_>>());
    assert!(yes(&["t", "x", "--output", "jsonl"]));
    assert!(yes(&["t", "--format=json", "x"]));
    assert!(!yes(&["t", "x", "--output", "human"]));
    assert!(!yes(&["t", "jsonl"]));
}
