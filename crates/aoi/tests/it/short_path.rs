//! The SDK's short path, held to what it promises a tool author: the `notes` example (a
//! bounded, filtered list, a get by id, an idempotent add with a dry run, a confirmed delete,
//! human and machine mode) has no paging, idempotency, confirmation or human-output code of its
//! own, and `aoi lint` passes it with no failure and nothing left unproven, with no
//! `aoi-lint.toml`: the seed data its examples need is declared on its commands.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

const SOURCE: &str = include_str!("../../examples/notes.rs");

#[test]
fn the_notes_example_leaves_paging_idempotency_confirmation_and_human_output_to_the_sdk() {
    for name in [
        "CursorCodec",
        "take_page",
        "check_limit",
        "begin(",
        "replay(",
        "Recorder",
        "Confirmation",
        "FileStore",
        "IdempotencyStore",
        "human_error",
        "println!",
        "writeln!",
        "print!",
        "is_terminal",
        "machine()",
    ] {
        assert!(
            !SOURCE.contains(name),
            "examples/notes.rs does by hand what the SDK owns: {name}"
        );
    }
}

/// The measure: at most 120 lines of code (cloc's count: neither blank nor comment;
/// the doc comments are the tool's `--help` and its schema's descriptions).
#[test]
fn the_notes_example_is_at_most_120_lines_of_code() {
    let code = SOURCE
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim().starts_with("//"))
        .count();
    assert!(code <= 120, "examples/notes.rs has {code} lines of code");
}

#[test]
fn the_notes_example_is_answered_for_its_discovery_commands_by_the_sdk() {
    let notes = aoi_test::workspace_bin("examples/notes");
    let capabilities = Command::new(&notes)
        .args(["capabilities", "--output", "json"])
        .output()
        .expect("notes runs");
    assert_eq!(capabilities.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&capabilities.stdout).expect("one JSON document");
    // The examples given to the App are their commands' own, the set-up every command's.
    let commands = &doc["commands"];
    let get = commands
        .as_array()
        .and_then(|all| all.iter().find(|c| c["name"] == "get"))
        .expect("get is stated");
    assert_eq!(get["examples"], serde_json::json!([["get", "1"]]), "{get}");
    assert_eq!(get["setup"].as_array().map(Vec::len), Some(2), "{get}");
    let types = get["event_types"].as_array().expect("event_types");
    assert!(types.contains(&Value::from("note")), "{get}");
    let schema = Command::new(&notes)
        .args(["schema", "--output", "json"])
        .output()
        .expect("notes runs");
    let doc: Value = serde_json::from_slice(&schema.stdout).expect("one JSON document");
    let text = doc.to_string();
    assert!(
        text.contains("\"note\"") && text.contains("\"deleted\""),
        "{text}"
    );
}

#[test]
fn aoi_lint_passes_the_notes_example_with_no_configuration() {
    let notes = aoi_test::workspace_bin("examples/notes");
    let aoi = aoi_test::workspace_bin("aoi");
    let dir = aoi_test::temp_dir("short-path-lint");
    let out = Command::new(&aoi)
        .args(["lint", "--format", "jsonl", "--tool"])
        .arg(&notes)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("aoi lint runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let results = &aoi_test::lint_results(&out.stdout);
    assert_eq!(
        (
            out.status.code(),
            &results["fail"],
            &results["could_not_run"]
        ),
        (Some(0), &Value::from(0), &Value::from(0)),
        "{text}"
    );
    assert!(results["pass"].as_u64().unwrap_or(0) >= 40, "{results}");
    assert!(Path::new(&notes).exists());
}

#[test]
fn the_notes_list_pages_by_its_cursors_after_a_delete_and_both_modes_exit_alike() {
    let notes = aoi_test::workspace_bin("examples/notes");
    let dir = aoi_test::temp_dir("short-path-pages");
    let run = |args: &[&str]| {
        Command::new(&notes)
            .args(args)
            .env("XDG_DATA_HOME", dir.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("notes runs")
    };
    for text in ["a", "b", "c"] {
        assert!(run(&["add", text]).status.success());
    }
    assert!(run(&["rm", "1", "--confirm"]).status.success());
    let mut seen = Vec::new();
    let mut cursor: Vec<String> = Vec::new();
    loop {
        let mut args = vec!["list", "--limit", "1", "--output", "jsonl"];
        args.extend(cursor.iter().map(String::as_str));
        let events: Vec<Value> = String::from_utf8_lossy(&run(&args).stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        seen.extend(
            events
                .iter()
                .filter(|e| e["type"] == "note")
                .map(|e| e["n"].clone()),
        );
        match events.last().and_then(|s| s["next_cursor"].as_str()) {
            Some(next) => cursor = vec!["--cursor".into(), next.to_owned()],
            None => break,
        }
    }
    assert_eq!(seen, [2, 3]);
    // A refusal and a missing note exit alike in both modes.
    for args in [["rm", "2"], ["get", "9"]] {
        let human = run(&args).status.code();
        let machine = run(&[args[0], args[1], "--output", "jsonl"]).status.code();
        assert_eq!(human, machine, "{args:?}");
    }
}
