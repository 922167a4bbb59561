//! The crate README, held to what it says: its complete tool is `examples/numbers.rs` byte for
//! byte, and every behaviour it lists is run here.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const README: &str = include_str!("../../README.md");
const NUMBERS: &str = include_str!("../../examples/numbers.rs");

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(aoi_test::workspace_bin("examples/numbers"))
        .args(args)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("numbers runs")
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn the_readme_shows_the_numbers_example_as_it_is() {
    let block = README
        .split("```rust,no_run\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README has the tool");
    let source = NUMBERS.split_once('\n').map(|(_, rest)| rest);
    assert_eq!(Some(block), source);
}

#[test]
fn the_readme_numbers_tool_pages_with_cursors_bound_to_their_query() {
    let dir = aoi_test::temp_dir("readme-pages");
    let out = run(
        dir.path(),
        &["count", "--to", "5", "--output", "jsonl", "--limit", "2"],
    );
    let events = lines(&out);
    let numbers: Vec<&Value> = events.iter().filter(|e| e["type"] == "number").collect();
    assert_eq!(numbers.len(), 2);
    let summary = events.last().expect("a summary");
    assert_eq!(
        (summary["ok"].as_bool(), summary["truncated"].as_bool()),
        (Some(true), Some(true))
    );
    let cursor = summary["next_cursor"].as_str().expect("a cursor");
    let next = lines(&run(
        dir.path(),
        &[
            "count", "--to", "5", "--output", "jsonl", "--cursor", cursor,
        ],
    ));
    let ns: Vec<u64> = next.iter().filter_map(|e| e["n"].as_u64()).collect();
    assert_eq!(ns, [3, 4, 5]);
    // Another query's cursor: a validation error, 65, in both modes.
    let machine = run(
        dir.path(),
        &[
            "count", "--to", "6", "--cursor", cursor, "--output", "jsonl",
        ],
    );
    let error = lines(&machine)
        .into_iter()
        .find(|e| e["type"] == "aoi:error")
        .expect("an error");
    assert_eq!(error["category"], "validation");
    assert_eq!(machine.status.code(), Some(65));
    assert_eq!(
        run(dir.path(), &["count", "--to", "6", "--cursor", cursor])
            .status
            .code(),
        Some(65)
    );
    // Human: the rows, then the whole command line that continues.
    let human = run(dir.path(), &["count", "--to", "5", "--limit", "2"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains(&format!(
            "more: numbers count --to 5 --limit 2 --cursor {cursor}"
        )),
        "{text}"
    );
}

#[test]
fn the_readme_numbers_tool_keeps_once_per_key_and_a_dry_run_changes_nothing() {
    let dir = aoi_test::temp_dir("readme-keep");
    let kept = dir.path().join("data/numbers/kept.json");
    let dry = lines(&run(
        dir.path(),
        &["keep", "8", "--dry-run", "--output", "jsonl"],
    ));
    assert!(dry.iter().any(|e| e["type"] == "aoi:plan"));
    assert!(!kept.exists(), "a dry run wrote the file");
    let first = lines(&run(
        dir.path(),
        &["keep", "7", "--idempotency-key", "k1", "--output", "jsonl"],
    ));
    let again = lines(&run(
        dir.path(),
        &["keep", "7", "--idempotency-key", "k1", "--output", "jsonl"],
    ));
    assert!(first.iter().any(|e| e["type"] == "number" && e["n"] == 7));
    assert!(again.iter().any(|e| e["type"] == "number" && e["n"] == 7));
    let replay = &again.last().expect("a summary")["properties"]["idempotent_replay"];
    assert_eq!(replay, &Value::Bool(true));
    let all: Vec<u64> = serde_json::from_slice(&std::fs::read(&kept).expect("kept")).expect("JSON");
    assert_eq!(all, [7], "one effect");
}

#[test]
fn the_readme_numbers_tool_describes_itself_and_refuses_bad_usage_alike_in_both_modes() {
    let dir = aoi_test::temp_dir("readme-discovery");
    for args in [
        &["schema", "--output", "json"][..],
        &["capabilities", "--output", "json"],
        &["input-schema", "--command", "count", "--output", "json"],
    ] {
        let out = run(dir.path(), args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert!(doc.is_object(), "{args:?}");
    }
    let machine = run(dir.path(), &["count", "--to", "x", "--output", "jsonl"]);
    assert_eq!(machine.status.code(), Some(64));
    let events = lines(&machine);
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(Value::from("aoi:summary"))
    );
    assert_eq!(
        run(dir.path(), &["count", "--to", "x"]).status.code(),
        Some(64)
    );
}
