//! `aoi mcp -- sdks/python/examples/bookmarks.py` driven by the official Python MCP SDK client
//! (through `tests/data/mcp/client.py`). bookmarks (the launcher `bookmarks.py` of
//! `bookmarks_app.py`) is built on the Python SDK (`sdks/python/src/machinemode`): its
//! discovery carries the `x-aoi` block, `--db` is a path argument, `delete` is destructive
//! behind `--confirm` and `--confirm-count`, `import` reads JSONL records and `watch` is
//! unbounded. What it proves is that a CLI built on that SDK is callable through `aoi mcp` as
//! the Machine Mode → MCP mapping (`shared/spec/machine-mode-and-mcp.md`) and the adapter's
//! own table (`aoi_mcp`'s crate docs) say.
//!
//! Each test has its own scratch directory: the server runs there (so it is the root path
//! arguments are confined to), and it is `HOME`, with `XDG_DATA_HOME` under it, so bookmarks'
//! default database is `data/bookmarks/bookmarks.db` inside it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use crate::mcp::{
    checked, names, of_type, path, process_error, served_as_capabilities_say, served_commands,
    server, success, tool, tool_error, PythonHost,
};
use crate::support::{temp_dir, TempDir};

fn bookmarks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdks/python/examples/bookmarks.py")
}

/// bookmarks' `URL_PATTERN`, which its input schema gives `url`.
const URL_PATTERN: &str = "^https?://[^\\s]+$";

/// A test's scratch directory: the server's working directory, home and data home.
struct Scratch {
    dir: TempDir,
    /// The Python SDK client against `aoi mcp -- bookmarks.py`, run in `dir`.
    host: PythonHost,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = temp_dir(&format!("mcp-bookmarks-{tag}"));
        Scratch {
            host: PythonHost {
                command: server(&["--", &path(&bookmarks())]),
                env: json!({"HOME": path(&dir), "XDG_DATA_HOME": path(&dir.join("data"))}),
                cwd: dir.to_path_buf(),
            },
            dir,
        }
    }

    /// The default database: `$XDG_DATA_HOME/bookmarks/bookmarks.db`.
    fn store(&self) -> PathBuf {
        self.dir.join("data/bookmarks/bookmarks.db")
    }

    /// Runs bookmarks itself (not through MCP) in the scratch directory with the server's
    /// environment, and returns its events after checking that it succeeded.
    fn direct(&self, args: &[&str]) -> Vec<Value> {
        let out = Command::new(bookmarks())
            .args(args)
            .args(["--output", "jsonl"])
            .current_dir(&self.dir)
            .env("HOME", &self.dir)
            .env("XDG_DATA_HOME", self.dir.join("data"))
            .output()
            .expect("bookmarks runs");
        assert!(out.status.success(), "bookmarks {args:?} failed: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// Adds a bookmark with bookmarks itself; its id.
    fn seed(&self, url: &str, title: &str) -> String {
        let events = self.direct(&["add", url, "--title", title]);
        let created = events
            .iter()
            .find(|e| e["type"] == "created")
            .expect("a created event");
        created["id"].as_str().expect("an id").to_owned()
    }

    /// The URLs in the default database, oldest first, read with bookmarks' own `list`.
    fn urls(&self) -> Vec<String> {
        self.direct(&["list", "--limit", "1000"])
            .iter()
            .filter(|e| e["type"] == "bookmark")
            .map(|e| e["url"].as_str().expect("a url").to_owned())
            .collect()
    }

    /// The default database's bytes.
    fn store_bytes(&self) -> Vec<u8> {
        std::fs::read(self.store()).expect("the database")
    }
}

/// bookmarks' capability manifest, read directly.
fn capabilities() -> Value {
    let out = Command::new(bookmarks())
        .args(["capabilities", "--output", "json"])
        .output()
        .expect("bookmarks capabilities");
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("capabilities JSON")
}

/// Asserts `result` is a refusal of the adapter's own (the arguments do not fit, or a path
/// leads outside the root): bookmarks never ran.
fn refused(result: &Value, category: &str, code: &str) {
    let s = tool_error(result);
    assert_eq!(s["adapter_error"]["category"], category, "{s}");
    assert_eq!(s["adapter_error"]["code"], code, "{s}");
    assert_eq!(s["adapter_error"]["retryable"], false, "{s}");
    assert_eq!(s["summary"], Value::Null, "bookmarks never ran: {s}");
}

/// The first line of a result's headline block.
fn headline(result: &Value) -> &str {
    let text = result["content"][0]["text"].as_str().expect("a headline");
    text.lines().next().unwrap_or_default()
}

#[test]
fn every_bookmarks_command_is_a_tool_with_schemas_that_compile_and_the_hints_capabilities_give() {
    let scratch = Scratch::new("tools");
    let out = scratch.host.run("schemas", json!({}));
    assert_eq!(out["server"]["name"], "aoi-mcp");
    let tools = &out["tools"];

    let caps = capabilities();
    let commands = caps["commands"].as_array().expect("commands");
    let expected = served_commands(&caps);
    assert_eq!(
        expected,
        ["add", "delete", "get", "import", "list", "search", "update", "watch"]
            .map(String::from)
            .into(),
        "bookmarks' commands, discovery aside"
    );
    assert_eq!(names(tools), expected, "one tool per command");
    for command in commands {
        if expected.contains(command["name"].as_str().expect("name")) {
            served_as_capabilities_say(&out, command);
        }
    }

    // The hints each command gets, spelled out: additive writes are not destructive, update
    // overwrites (destructive though not `destructive`), only reads are idempotent.
    for (name, read_only, destructive, idempotent) in [
        ("add", false, false, false),
        ("import", false, false, false),
        ("update", false, true, false),
        ("delete", false, true, false),
        ("get", true, false, true),
        ("list", true, false, true),
        ("search", true, false, true),
        ("watch", true, false, true),
    ] {
        let hints = &tool(tools, name)["annotations"];
        assert_eq!(hints["readOnlyHint"], read_only, "{name}");
        assert_eq!(hints["destructiveHint"], destructive, "{name}");
        assert_eq!(hints["idempotentHint"], idempotent, "{name}");
    }
    let description = |name: &str| tool(tools, name)["description"].as_str().expect("text");
    assert!(description("delete").contains("`confirm`"));
    assert!(description("delete").contains("`dry_run`"));
    for bounded in ["list", "search"] {
        assert!(description(bounded).contains("`cursor`"), "{bounded}");
    }

    let schema = |name: &str| &tool(tools, name)["inputSchema"];
    let props = |name: &str| -> BTreeSet<String> {
        schema(name)["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect()
    };
    for name in &expected {
        for owned in ["output", "format", "no_color", "debug", "schema_version"] {
            assert!(
                !props(name).contains(owned),
                "{name}: {owned} is the adapter's"
            );
        }
    }
    assert_eq!(
        props("delete"),
        [
            "confirm",
            "confirm_count",
            "db",
            "dry_run",
            "id",
            "idempotency_key",
            "query"
        ]
        .map(String::from)
        .into()
    );
    assert_eq!(schema("add")["required"], json!(["url"]));
    assert_eq!(schema("add")["properties"]["url"]["pattern"], URL_PATTERN);
    assert_eq!(schema("get")["required"], json!(["id"]));
    // watch never ends by itself: the adapter adds its own bounds to bookmarks' arguments.
    assert_eq!(
        props("watch"),
        ["db", "interval", "max_duration_ms", "max_events"]
            .map(String::from)
            .into()
    );
    let max_duration = &schema("watch")["properties"]["max_duration_ms"];
    assert_eq!(max_duration["type"], "integer");
    assert_eq!(max_duration["default"], 30_000);
    assert_eq!(schema("watch")["properties"]["interval"]["minimum"], 0.05);
    // import takes its records as `records`, each one an ImportRecord ($defs.record); its
    // `--input-jsonl` takes a file as well as `-`, so it stays.
    let import = schema("import");
    assert_eq!(
        import["properties"]["records"]["items"],
        json!({"$ref": "#/$defs/record"})
    );
    assert_eq!(import["$defs"]["record"]["required"], json!(["url"]));
    assert_eq!(import["$defs"]["record"]["additionalProperties"], false);
    assert!(import["properties"]["input_jsonl"].is_object(), "{import}");

    assert!(!scratch.store().exists(), "discovery writes no database");
    // The output schema describes bookmarks' own events: a `bookmark` as bookmarks itself
    // writes it fits get's, and one without its url does not.
    scratch.seed("https://example.com/schema", "Schema");
    let written = scratch.direct(&["get", "b1"]);
    let mut bookmark = written
        .iter()
        .find(|e| e["type"] == "bookmark")
        .expect("a bookmark event")
        .clone();
    let summary = written.last().expect("a summary").clone();
    let output = jsonschema::draft202012::new(&tool(tools, "get")["outputSchema"])
        .expect("get's outputSchema compiles");
    assert!(output.is_valid(&json!({"events": [bookmark], "summary": summary})));
    bookmark.as_object_mut().expect("an object").remove("url");
    assert!(!output.is_valid(&json!({"events": [bookmark], "summary": summary})));
}

#[test]
fn add_then_get_list_and_search_find_it_and_update_changes_it() {
    let scratch = Scratch::new("add");
    let added = scratch.host.call(
        "add",
        json!({"url": "https://example.com/rust", "title": "The Rust book", "tag": ["rust", "docs"]}),
    );
    let s = success(&added);
    let created = of_type(s, "created");
    assert_eq!(created.len(), 1, "{s}");
    let created = created[0];
    assert_eq!(created["id"], "b1", "the first bookmark of a new database");
    assert_eq!(created["url"], "https://example.com/rust");
    assert_eq!(
        created["tags"],
        json!(["docs", "rust"]),
        "sorted, as stored"
    );
    assert!(scratch.store().exists(), "the database is the scratch one");

    // Another session, another bookmarks process for each call: it is in the database.
    let results = scratch.host.calls(json!([
        {"tool": "get", "arguments": {"id": "b1"}},
        {"tool": "list", "arguments": {}},
        {"tool": "list", "arguments": {"tag": "docs"}},
        {"tool": "list", "arguments": {"tag": "cooking"}},
        {"tool": "search", "arguments": {"query": "RUST BOOK"}},
        {"tool": "search", "arguments": {"query": "example.com/ru"}},
        {"tool": "search", "arguments": {"query": "python"}},
    ]));
    let got = of_type(success(&results[0]), "bookmark")[0].clone();
    for field in ["id", "url", "title", "tags", "created_at"] {
        assert_eq!(got[field], created[field], "{field}");
    }
    for listed in [&results[1], &results[2]] {
        let s = success(listed);
        let ids: Vec<&Value> = of_type(s, "bookmark").iter().map(|e| &e["id"]).collect();
        assert_eq!(ids, [&json!("b1")], "{s}");
        assert_eq!(s["summary"]["count"], 1);
        assert_eq!(s["summary"]["truncated"], false);
    }
    let none = success(&results[3]);
    assert_eq!(none["events"], json!([]), "no bookmark has that tag");
    assert_eq!(none["summary"]["count"], 0);
    for searched in [&results[4], &results[5]] {
        let s = success(searched);
        let hits = of_type(s, "hit");
        assert_eq!(hits.len(), 1, "{s}");
        assert_eq!(hits[0]["rank"], 1);
        assert_eq!(hits[0]["id"], "b1");
        assert_eq!(hits[0]["title"], "The Rust book");
    }
    assert_eq!(success(&results[6])["events"], json!([]));

    let results = scratch.host.calls(json!([
        {"tool": "update", "arguments": {"id": "b1", "title": "Rust, the book", "tag": ["rust"]}},
        {"tool": "get", "arguments": {"id": "b1"}},
    ]));
    let updated = of_type(success(&results[0]), "updated")[0].clone();
    assert_eq!(
        updated,
        json!({"type": "updated", "aoi": updated["aoi"], "id": "b1",
               "url": "https://example.com/rust", "title": "Rust, the book", "tags": ["rust"]})
    );
    let got = of_type(success(&results[1]), "bookmark")[0].clone();
    assert_eq!(got["title"], "Rust, the book");
    assert_eq!(got["tags"], json!(["rust"]));
    assert_eq!(scratch.urls(), ["https://example.com/rust"]);
}

#[test]
fn list_and_search_page_with_the_cursor_their_summaries_give() {
    let scratch = Scratch::new("pages");
    for i in 1..=5 {
        scratch.seed(&format!("https://example.com/{i}"), &format!("Page {i}"));
    }
    scratch.seed("https://other.org/", "Elsewhere");
    for (tool, arguments, ty) in [
        ("list", json!({"limit": 2}), "bookmark"),
        ("search", json!({"query": "example", "limit": 2}), "hit"),
    ] {
        let out = scratch
            .host
            .run("paginate", json!({"tool": tool, "arguments": arguments}));
        let pages = out["pages"].as_array().expect("pages");
        assert_eq!(pages.len(), 3, "{tool}: two a page");
        let mut ids = Vec::new();
        for (n, page) in pages.iter().enumerate() {
            let s = success(page);
            let last = n == pages.len() - 1;
            assert_eq!(s["summary"]["truncated"], !last, "{tool} page {n}: {s}");
            assert_eq!(s["summary"]["next_cursor"].is_string(), !last, "{tool} {n}");
            ids.extend(of_type(s, ty).iter().map(|e| e["id"].clone()));
        }
        let want: Vec<Value> = if tool == "list" {
            (1..=6).map(|i| json!(format!("b{i}"))).collect()
        } else {
            (1..=5).map(|i| json!(format!("b{i}"))).collect()
        };
        assert_eq!(ids, want, "{tool}: every one once, in order");
    }

    // A cursor is the query's and the database's it was issued for.
    let first = scratch.host.call("list", json!({"limit": 2}));
    let cursor = success(&first)["summary"]["next_cursor"].clone();
    let results = scratch.host.calls(json!([
        {"tool": "list", "arguments": {"limit": 2, "cursor": cursor}},
        {"tool": "list", "arguments": {"limit": 2, "cursor": cursor, "tag": "demo"}},
        {"tool": "search", "arguments": {"query": "example", "cursor": cursor}},
        {"tool": "list", "arguments": {"cursor": cursor, "db": "other.db"}},
    ]));
    let ids: Vec<&Value> = of_type(success(&results[0]), "bookmark")
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert_eq!(ids, [&json!("b3"), &json!("b4")], "the same page again");
    for (n, code) in [
        (1, "CURSOR_MISMATCH"),
        (2, "CURSOR_MISMATCH"),
        (3, "CURSOR_INVALID"),
    ] {
        let error = process_error(tool_error(&results[n])).clone();
        assert_eq!(error["category"], "validation", "{n}: {error}");
        assert_eq!(error["code"], code, "{n}");
        assert_eq!(error["field"], "cursor", "{n}");
    }
}

#[test]
fn invalid_arguments_are_tool_errors_with_their_category_and_code() {
    let scratch = Scratch::new("invalid");
    let results = scratch.host.calls(json!([
        // Accepted by the input schema, refused by bookmarks itself: its category and code.
        {"tool": "add", "arguments": {"url": "https://alice:hunter2@example.com/"}},
        {"tool": "add", "arguments": {"url": "https://example.com/?token=hunter2"}},
        {"tool": "add", "arguments": {"url": "https://example.com/", "tag": ["not a tag"]}},
        {"tool": "list", "arguments": {"cursor": "bm90LWEtY3Vyc29y"}},
        {"tool": "get", "arguments": {"id": "b99"}},
        // Refused by the adapter against the input schema: usage, bookmarks never ran.
        {"tool": "add", "arguments": {"url": "ftp://example.com/"}},
        {"tool": "add", "arguments": {"title": "no url"}},
        {"tool": "add", "arguments": {"url": "https://example.com/", "colour": "red"}},
        {"tool": "get", "arguments": {"id": "1"}},
        {"tool": "list", "arguments": {"limit": -1}},
        {"tool": "watch", "arguments": {"interval": 0.01}},
        {"tool": "list", "arguments": {"schema_version": "1.0.0"}},
    ]));
    for credentials in &results[..2] {
        let s = tool_error(credentials);
        let error = process_error(s);
        assert_eq!(error["category"], "validation", "{s}");
        assert_eq!(error["code"], "URL_HAS_CREDENTIALS");
        assert_eq!(error["field"], "url");
        assert_eq!(error["retryable"], false);
        assert_eq!(s["summary"]["ok"], false);
        assert_eq!(s["summary"]["reason"], "failed");
        // bookmarks keeps no secrets and never echoes them; nor does the result.
        assert!(
            !credentials.to_string().contains("hunter2"),
            "the secret is echoed: {credentials}"
        );
    }
    assert!(
        headline(&results[0]).starts_with("bookmarks add failed: validation URL_HAS_CREDENTIALS"),
        "{}",
        headline(&results[0])
    );
    let tag = process_error(tool_error(&results[2])).clone();
    assert_eq!(tag["category"], "validation", "{tag}");
    assert_eq!(tag["code"], "INVALID_TAG");
    assert_eq!(tag["field"], "tag");
    let cursor = process_error(tool_error(&results[3])).clone();
    assert_eq!(cursor["category"], "validation", "{cursor}");
    assert_eq!(cursor["code"], "CURSOR_INVALID");
    assert_eq!(cursor["field"], "cursor");
    let missing = process_error(tool_error(&results[4])).clone();
    assert_eq!(missing["category"], "not_found", "{missing}");
    assert_eq!(missing["code"], "BOOKMARK_NOT_FOUND");
    assert_eq!(missing["target"], "b99");
    for result in &results[5..] {
        refused(result, "usage", "INVALID_ARGUMENTS");
    }
    assert!(!scratch.store().exists(), "nothing was written");
}

#[test]
fn delete_without_confirm_is_refused_and_changes_nothing_and_with_it_deletes() {
    let scratch = Scratch::new("delete");
    let one = scratch.seed("https://example.com/one", "One example");
    scratch.seed("https://example.org/two", "Two example");
    scratch.seed("https://other.net/three", "Three");
    let before = scratch.store_bytes();
    let results = scratch.host.calls(json!([
        {"tool": "delete", "arguments": {"id": one}},
        {"tool": "delete", "arguments": {"id": one, "confirm": false}},
        // --confirm-count alone is not confirmation.
        {"tool": "delete", "arguments": {"id": one, "confirm_count": 1}},
        {"tool": "delete", "arguments": {"query": "example"}},
        // Confirmed, but a delete by query of more than one needs the count, and the right one.
        {"tool": "delete", "arguments": {"query": "example", "confirm": true}},
        {"tool": "delete", "arguments": {"query": "example", "confirm": true, "confirm_count": 1}},
        {"tool": "delete", "arguments": {"confirm": true}},
    ]));
    assert!(
        headline(&results[0]).starts_with(
            "bookmarks delete failed: precondition_failed CONFIRMATION_REQUIRED: Refusing to \
             delete without --confirm."
        ),
        "{}",
        headline(&results[0])
    );
    for (n, refusal) in results.iter().enumerate() {
        let s = tool_error(refusal);
        assert!(of_type(s, "deleted").is_empty(), "{n}: {s}");
        assert_eq!(s["summary"]["ok"], false, "{n}: {s}");
        assert_eq!(process_error(s)["retryable"], false, "{n}: {s}");
    }
    for (n, unconfirmed) in results[..4].iter().enumerate() {
        let s = checked(unconfirmed);
        let error = process_error(s);
        assert_eq!(error["category"], "precondition_failed", "{n}: {s}");
        assert_eq!(error["code"], "CONFIRMATION_REQUIRED", "{n}");
        assert_eq!(error["field"], "confirm", "{n}");
        assert_eq!(s["summary"]["reason"], "denied", "{n}");
    }
    assert_eq!(process_error(checked(&results[0]))["target"], one.as_str());
    let count = checked(&results[4]);
    let error = process_error(count);
    assert_eq!(error["category"], "precondition_failed", "{count}");
    assert_eq!(error["code"], "CONFIRM_COUNT_REQUIRED");
    assert_eq!(error["field"], "confirm_count");
    assert_eq!(error["details"]["affected"], 2, "b1 and b2 match");
    assert_eq!(count["summary"]["reason"], "denied");
    let mismatch = checked(&results[5]);
    let error = process_error(mismatch);
    assert_eq!(error["category"], "conflict", "{mismatch}");
    assert_eq!(error["code"], "CONFIRM_COUNT_MISMATCH");
    assert_eq!(error["field"], "confirm_count");
    assert_eq!(error["details"], json!({"affected": 2, "confirm_count": 1}));
    assert_eq!(mismatch["summary"]["reason"], "denied");
    let neither = process_error(checked(&results[6]));
    assert_eq!(neither["category"], "usage", "{neither}");
    assert_eq!(neither["code"], "ID_OR_QUERY");
    assert_eq!(
        scratch.store_bytes(),
        before,
        "the database is byte for byte as it was"
    );

    // A dry run shows the plan, changes nothing and needs no confirm.
    let results = scratch.host.calls(json!([
        {"tool": "delete", "arguments": {"id": one, "dry_run": true}},
        {"tool": "delete", "arguments": {"query": "example", "dry_run": true}},
    ]));
    let plan = success(&results[0]);
    let steps = of_type(plan, "aoi:plan");
    assert_eq!(steps.len(), 1, "{plan}");
    assert_eq!(steps[0]["action"], "delete");
    assert_eq!(steps[0]["target"], one.as_str());
    assert_eq!(plan["summary"]["properties"]["dry_run"], true);
    let targets: Vec<&Value> = of_type(success(&results[1]), "aoi:plan")
        .iter()
        .map(|p| &p["target"])
        .collect();
    assert_eq!(targets, [&json!("b1"), &json!("b2")]);
    assert_eq!(scratch.store_bytes(), before, "a dry run changes nothing");

    let results = scratch.host.calls(json!([
        {"tool": "delete", "arguments": {"id": one, "confirm": true}},
        {"tool": "get", "arguments": {"id": one}},
        // Only b2 is left to match: one item, confirmed and counted.
        {"tool": "delete", "arguments": {"query": "example", "confirm": true, "confirm_count": 1}},
    ]));
    let deleted = of_type(success(&results[0]), "deleted")[0].clone();
    assert_eq!(deleted["id"], one.as_str());
    assert_eq!(deleted["url"], "https://example.com/one");
    let gone = process_error(tool_error(&results[1])).clone();
    assert_eq!(gone["category"], "not_found", "{gone}");
    assert_eq!(gone["code"], "BOOKMARK_NOT_FOUND");
    let ids: Vec<&Value> = of_type(success(&results[2]), "deleted")
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert_eq!(ids, [&json!("b2")]);
    assert_eq!(scratch.urls(), ["https://other.net/three"]);
}

#[test]
fn dry_runs_plan_and_change_nothing() {
    let scratch = Scratch::new("dry-run");
    let results = scratch.host.calls(json!([
        {"tool": "add", "arguments": {"url": "https://example.com/planned", "dry_run": true}},
        {"tool": "import", "arguments": {"dry_run": true, "records": [
            {"url": "https://example.com/a"}, {"url": "https://example.com/b", "title": "B"},
        ]}},
    ]));
    let plan = success(&results[0]);
    assert_eq!(of_type(plan, "aoi:plan")[0]["action"], "create", "{plan}");
    assert_eq!(
        of_type(plan, "aoi:plan")[0]["target"],
        "https://example.com/planned"
    );
    assert!(of_type(plan, "created").is_empty());
    let plan = success(&results[1]);
    let targets: Vec<&Value> = of_type(plan, "aoi:plan")
        .iter()
        .map(|p| &p["target"])
        .collect();
    assert_eq!(
        targets,
        [
            &json!("https://example.com/a"),
            &json!("https://example.com/b")
        ]
    );
    assert!(!scratch.store().exists(), "no database was even created");

    let id = scratch.seed("https://example.com/kept", "Kept");
    let before = scratch.store_bytes();
    let results = scratch.host.calls(json!([
        {"tool": "update", "arguments": {"id": id, "title": "Planned", "dry_run": true}},
        {"tool": "add", "arguments": {"url": "https://example.com/planned", "dry_run": true}},
        {"tool": "delete", "arguments": {"id": id, "dry_run": true}},
        {"tool": "get", "arguments": {"id": id}},
    ]));
    let plan = success(&results[0]);
    assert_eq!(of_type(plan, "aoi:plan")[0]["action"], "update", "{plan}");
    assert!(of_type(plan, "updated").is_empty());
    assert_eq!(of_type(success(&results[1]), "aoi:plan").len(), 1);
    assert_eq!(of_type(success(&results[2]), "aoi:plan").len(), 1);
    assert_eq!(
        of_type(success(&results[3]), "bookmark")[0]["title"],
        "Kept"
    );
    assert_eq!(scratch.store_bytes(), before, "byte for byte as it was");
    assert_eq!(scratch.urls(), ["https://example.com/kept"]);
}

#[test]
fn import_gets_its_records_on_stdin_or_from_a_file_in_the_root() {
    let scratch = Scratch::new("import");
    std::fs::write(
        scratch.dir.join("more.jsonl"),
        "{\"url\": \"https://example.com/from-file\"}\n",
    )
    .expect("write records");
    let outside = temp_dir("mcp-bookmarks-outside");
    std::fs::write(
        outside.join("more.jsonl"),
        "{\"url\": \"https://example.com/outside\"}\n",
    )
    .expect("write records");
    let results = scratch.host.calls(json!([
        {"tool": "import", "arguments": {"records": [
            {"url": "https://example.com/a", "title": "A", "tags": ["x", "b"]},
            {"url": "https://example.com/b"},
        ]}},
        // The second record fits the record schema and bookmarks refuses its URL: fail fast,
        // nothing written.
        {"tool": "import", "arguments": {"records": [
            {"url": "https://example.com/never"},
            {"url": "https://bob:pw@example.com/"},
        ]}},
        // A field the record schema does not have: refused by the adapter.
        {"tool": "import", "arguments": {"records": [{"url": "https://example.com/c", "colour": "red"}]}},
        {"tool": "import", "arguments": {"input_jsonl": "more.jsonl"}},
        {"tool": "import", "arguments": {"input_jsonl": "more.jsonl", "records": [{"url": "https://example.com/d"}]}},
        {"tool": "import", "arguments": {"input_jsonl": path(&outside.join("more.jsonl"))}},
    ]));
    let s = success(&results[0]);
    let created = of_type(s, "created");
    let ids: Vec<&Value> = created.iter().map(|e| &e["id"]).collect();
    assert_eq!(ids, [&json!("b1"), &json!("b2")], "{s}");
    assert_eq!(created[0]["tags"], json!(["b", "x"]));
    assert_eq!(s["summary"]["count"], 2);

    let s = tool_error(&results[1]);
    let error = process_error(s);
    assert_eq!(error["category"], "validation", "{s}");
    assert_eq!(error["code"], "URL_HAS_CREDENTIALS");
    assert!(of_type(s, "created").is_empty());
    assert!(!results[1].to_string().contains(":pw@"), "{}", results[1]);

    refused(&results[2], "usage", "INVALID_ARGUMENTS");
    let s = success(&results[3]);
    assert_eq!(
        of_type(s, "created")[0]["url"],
        "https://example.com/from-file"
    );
    refused(&results[4], "usage", "INVALID_ARGUMENTS");
    refused(&results[5], "authz", "PATH_OUTSIDE_ROOTS");

    assert_eq!(
        scratch.urls(),
        [
            "https://example.com/a",
            "https://example.com/b",
            "https://example.com/from-file"
        ]
    );
}

#[test]
fn an_idempotency_key_replays_the_first_add_and_refuses_another_request() {
    let scratch = Scratch::new("idempotency");
    let results = scratch.host.calls(json!([
        {"tool": "add", "arguments": {"url": "https://example.com/k", "idempotency_key": "k-1"}},
        {"tool": "add", "arguments": {"url": "https://example.com/k", "idempotency_key": "k-1"}},
        {"tool": "add", "arguments": {"url": "https://example.com/other", "idempotency_key": "k-1"}},
        // Fits the input schema (a string of one character or more), not bookmarks.
        {"tool": "add", "arguments": {"url": "https://example.com/blank", "idempotency_key": " "}},
    ]));
    let first = success(&results[0]);
    let again = success(&results[1]);
    assert_eq!(
        again["summary"]["properties"]["idempotent_replay"], true,
        "{again}"
    );
    assert_eq!(
        of_type(first, "created")[0]["id"],
        of_type(again, "created")[0]["id"],
        "the same bookmark"
    );
    let reused = process_error(tool_error(&results[2])).clone();
    assert_eq!(reused["category"], "conflict", "{reused}");
    assert_eq!(reused["code"], "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(reused["field"], "idempotency_key");
    let blank = process_error(tool_error(&results[3])).clone();
    assert_eq!(blank["category"], "usage", "{blank}");
    assert_eq!(blank["code"], "IDEMPOTENCY_KEY_INVALID");
    assert_eq!(scratch.urls(), ["https://example.com/k"]);
}

#[test]
fn the_db_argument_names_a_database_inside_the_root_only() {
    let scratch = Scratch::new("db");
    let outside = temp_dir("mcp-bookmarks-db-outside");
    let results = scratch.host.calls(json!([
        {"tool": "add", "arguments": {"url": "https://example.com/mine", "db": "mine.db"}},
        {"tool": "list", "arguments": {"db": "mine.db"}},
        {"tool": "list", "arguments": {}},
        {"tool": "add", "arguments": {"url": "https://example.com/x", "db": path(&outside.join("x.db"))}},
        {"tool": "add", "arguments": {"url": "https://example.com/x", "db": "../escape.db"}},
    ]));
    assert_eq!(of_type(success(&results[0]), "created")[0]["id"], "b1");
    let listed = success(&results[1]);
    assert_eq!(
        of_type(listed, "bookmark")[0]["url"],
        "https://example.com/mine"
    );
    assert_eq!(success(&results[2])["events"], json!([]));
    assert!(scratch.dir.join("mine.db").exists());
    assert!(
        !scratch.store().exists(),
        "the default database is untouched"
    );
    refused(&results[3], "authz", "PATH_OUTSIDE_ROOTS");
    refused(&results[4], "authz", "PATH_OUTSIDE_ROOTS");
    assert!(!outside.join("x.db").exists());
    assert!(!scratch.dir.join("../escape.db").exists());
}

/// Asserts `result` is a watch the adapter stopped at `reason`: not an error, its structured
/// content fitting the output schema, and bookmarks' own answer to the SIGINT that stopped it
/// (§4.2: `ok:false`, `reason:"cancelled"`) as its summary. Returns the structured content.
fn stopped_at<'a>(result: &'a Value, reason: &str) -> &'a Value {
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["_schema_errors"], json!([]), "{result}");
    let s = checked(result);
    assert_eq!(s["stopped"]["reason"], reason, "{s}");
    assert_eq!(s["stopped"]["retryable"], false);
    assert_eq!(s["summary"]["ok"], false, "{s}");
    assert_eq!(s["summary"]["reason"], "cancelled");
    assert_eq!(s["summary"]["properties"]["signal"], "SIGINT");
    s
}

#[test]
fn watch_is_served_with_the_adapters_bounds_and_stopped_at_them() {
    let scratch = Scratch::new("watch");
    let seeded = scratch.seed("https://example.com/before", "Before");

    // Nothing added while it runs: stopped at max_duration_ms with its heartbeats only.
    let quiet = scratch
        .host
        .call("watch", json!({"interval": 0.05, "max_duration_ms": 1000}));
    let s = stopped_at(&quiet, "max_duration");
    assert!(of_type(s, "bookmark").is_empty(), "{s}");
    assert!(!of_type(s, "aoi:heartbeat").is_empty(), "{s}");
    assert!(
        headline(&quiet).starts_with("bookmarks watch stopped after 1000 ms"),
        "{}",
        headline(&quiet)
    );

    // Bookmarks added while it runs: stopped at max_events with exactly that many.
    let done = AtomicBool::new(false);
    let watched = std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..300 {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                scratch.seed(&format!("https://example.com/during/{i}"), "During");
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let result = scratch.host.call(
            "watch",
            json!({"interval": 0.05, "max_events": 2, "max_duration_ms": 60_000}),
        );
        done.store(true, Ordering::Relaxed);
        result
    });
    let s = stopped_at(&watched, "max_events");
    let seen = of_type(s, "bookmark");
    assert_eq!(seen.len(), 2, "{s}");
    let numbers: Vec<u64> = seen
        .iter()
        .map(|e| {
            let id = e["id"].as_str().expect("an id");
            assert_ne!(id, seeded, "added before the watch began");
            id[1..].parse().expect("b and a number")
        })
        .collect();
    assert!(numbers[0] < numbers[1], "oldest first: {numbers:?}");
    for e in &seen {
        assert!(e["url"]
            .as_str()
            .is_some_and(|u| u.starts_with("https://example.com/during/")));
    }
}
