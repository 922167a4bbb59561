//! `aoi mcp -- examples/python/notes.py` driven by the official MCP clients: the Python SDK
//! (through `tests/data/mcp/client.py`) and the MCP Inspector CLI. notes is a tool in plain
//! Python with no SDK and no `x-aoi` block, so every call goes through the naming convention of
//! `docs/discovery.md`; what it proves is that such a tool is callable through `aoi mcp` as the
//! Machine Mode → MCP mapping (`shared/spec/machine-mode-and-mcp.md`) says.
//!
//! Each test has its own scratch directory: the server runs there, and notes' store
//! (`$NOTES_DB`, with `HOME` and `XDG_DATA_HOME` pointing there too) lives there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::mcp::{
    names, of_type, path, process_error, served_as_capabilities_say, served_commands, server,
    success, tool, tool_error, PythonHost,
};
use crate::mcp_clients::mcp_clients;
use crate::support::{temp_dir, TempDir};

fn notes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/python/notes.py")
}

/// `aoi mcp -- notes.py`.
fn notes_server() -> Vec<String> {
    server(&["--", &path(&notes())])
}

/// A test's scratch directory: the server's working directory, home and store.
struct Scratch {
    dir: TempDir,
    /// The Python SDK client against `aoi mcp -- notes.py`, run in `dir` with the store there.
    host: PythonHost,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = temp_dir(&format!("mcp-notes-{tag}"));
        // The store named, and every fallback location of `store_path()` inside the scratch
        // directory as well.
        let env = json!({
            "NOTES_DB": path(&dir.join("notes.json")),
            "HOME": path(&dir),
            "XDG_DATA_HOME": path(&dir.join("data")),
        });
        Scratch {
            host: PythonHost {
                command: notes_server(),
                env,
                cwd: dir.to_path_buf(),
            },
            dir,
        }
    }

    fn store(&self) -> PathBuf {
        self.dir.join("notes.json")
    }

    /// Adds a note with notes itself (not through MCP); its id.
    fn seed(&self, title: &str) -> String {
        let out = Command::new(notes())
            .args(["add", "--title", title, "--output", "jsonl"])
            .current_dir(&self.dir)
            .env("NOTES_DB", self.store())
            .output()
            .expect("notes add runs");
        assert!(out.status.success(), "seed add failed: {out:?}");
        let created = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
            .find(|e| e["type"] == "created")
            .expect("a created event");
        created["id"].as_str().expect("an id").to_owned()
    }

    /// The titles in the store, read with notes' own `list` (not through MCP).
    fn titles(&self) -> Vec<String> {
        let out = Command::new(notes())
            .args(["list", "--limit", "1000", "--output", "jsonl"])
            .current_dir(&self.dir)
            .env("NOTES_DB", self.store())
            .output()
            .expect("notes list runs");
        assert!(out.status.success(), "list failed: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
            .filter(|e| e["type"] == "entry")
            .map(|e| e["title"].as_str().expect("a title").to_owned())
            .collect()
    }
}

/// notes' capability manifest, read directly.
fn capabilities() -> Value {
    let out = Command::new(notes())
        .args(["capabilities", "--output", "json"])
        .output()
        .expect("notes capabilities");
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("capabilities JSON")
}

#[test]
fn every_notes_command_is_a_tool_with_valid_schemas_and_the_hints_capabilities_give() {
    let scratch = Scratch::new("list");
    let out = scratch.host.run("schemas", json!({}));
    assert_eq!(
        out["server"]["name"], "aoi-mcp",
        "initialize named the server"
    );
    let tools = &out["tools"];

    let caps = capabilities();
    let commands = caps["commands"].as_array().expect("commands");
    let expected = served_commands(&caps);
    assert_eq!(
        expected,
        ["add", "delete", "get", "import", "list"]
            .map(String::from)
            .into(),
        "notes' resource commands"
    );
    assert_eq!(
        names(tools),
        expected,
        "one tool per command, discovery aside"
    );

    for command in commands {
        let name = command["name"].as_str().expect("name");
        if expected.contains(name) {
            served_as_capabilities_say(&out, command);
        }
    }
    assert_eq!(tool(tools, "list")["annotations"]["readOnlyHint"], true);
    assert_eq!(
        tool(tools, "delete")["annotations"]["destructiveHint"],
        true
    );
    assert_eq!(tool(tools, "add")["annotations"]["destructiveHint"], false);
    assert_eq!(tool(tools, "add")["annotations"]["idempotentHint"], false);
    assert!(tool(tools, "delete")["description"]
        .as_str()
        .expect("description")
        .contains("confirm"));

    // The input properties are notes' own, the adapter's aside (`schema_version` among them);
    // `import` takes its records.
    let props = |name: &str| -> BTreeSet<String> {
        tool(tools, name)["inputSchema"]["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(
        props("delete"),
        ["confirm", "dry_run", "id", "idempotency_key"]
            .map(String::from)
            .into()
    );
    // import takes its records as `records`, each one a notes record ($defs.record); its
    // `--input-jsonl`, which only takes `-`, is the adapter's to give.
    let import = &tool(tools, "import")["inputSchema"];
    assert_eq!(
        import["properties"]["records"]["items"],
        json!({"$ref": "#/$defs/record"}),
        "{import}"
    );
    assert_eq!(import["$defs"]["record"]["required"], json!(["title"]));
    assert!(
        import["properties"].get("input_jsonl").is_none(),
        "{import}"
    );
    assert!(!props("import").contains("input_jsonl"));
    assert!(!scratch.store().exists(), "discovery writes no store");
}

#[test]
fn list_results_fit_the_output_schema_and_page_with_the_cursor() {
    let scratch = Scratch::new("listing");
    let empty = scratch.host.call("list", json!({}));
    let s = success(&empty);
    assert_eq!(s["events"], json!([]));
    assert_eq!(s["summary"]["count"], 0);
    assert!(!scratch.store().exists(), "a list writes nothing");

    for title in ["one", "two", "three"] {
        scratch.seed(title);
    }
    let out = scratch.host.run(
        "paginate",
        json!({"tool": "list", "arguments": {"limit": 2}}),
    );
    let pages = out["pages"].as_array().expect("pages");
    assert_eq!(pages.len(), 2, "three notes, two a page");
    let first = success(&pages[0]);
    assert_eq!(first["summary"]["truncated"], true);
    assert!(first["summary"]["next_cursor"].is_string());
    let last = success(&pages[1]);
    assert_eq!(last["summary"]["truncated"], false);
    let titles: Vec<&Value> = [first, last]
        .iter()
        .flat_map(|s| of_type(s, "entry"))
        .map(|e| &e["title"])
        .collect();
    assert_eq!(titles, [&json!("one"), &json!("two"), &json!("three")]);
}

#[test]
fn add_then_get_by_the_id_add_returned() {
    let scratch = Scratch::new("add");
    scratch.seed("already there");
    let added = scratch
        .host
        .call("add", json!({"title": "Buy milk", "body": "Two litres"}));
    let s = success(&added);
    let created = of_type(s, "created");
    assert_eq!(created.len(), 1, "{s}");
    let id = created[0]["id"].as_str().expect("the stable id");
    assert_eq!(id, "n2", "after the seeded n1");
    assert!(scratch.store().exists(), "the store is the scratch one");

    // Another session, another process: the note is in the store.
    let got = scratch.host.call("get", json!({"id": id}));
    let s = success(&got);
    let note = of_type(s, "note");
    assert_eq!(note.len(), 1, "{s}");
    assert_eq!(note[0]["id"], id);
    assert_eq!(note[0]["title"], "Buy milk");
    assert_eq!(note[0]["body"], "Two litres");
}

#[test]
fn delete_without_confirm_is_a_tool_error_that_changes_nothing_and_with_it_deletes() {
    let scratch = Scratch::new("delete");
    let id = scratch.seed("keep me");
    let before = std::fs::read(scratch.store()).expect("the store");
    let results = scratch.host.calls(json!([
        {"tool": "delete", "arguments": {"id": id}},
        {"tool": "delete", "arguments": {"id": id, "confirm": false}},
    ]));
    // The headline a model reads first: the error, one sentence each part.
    assert_eq!(
        results[0]["content"][0]["text"]
            .as_str()
            .expect("text")
            .lines()
            .next(),
        Some(
            "notes delete failed: usage CONFIRM_REQUIRED: delete is destructive and needs \
             --confirm (or --dry-run to see the plan). Not retryable as is; hint: notes delete n1 --confirm"
        )
    );
    for refused in &results {
        let s = tool_error(refused);
        let error = process_error(s);
        assert_eq!(error["category"], "usage", "{s}");
        assert_eq!(error["code"], "CONFIRM_REQUIRED");
        assert_eq!(error["retryable"], false);
        assert_eq!(s["summary"]["ok"], false);
        assert_eq!(s["summary"]["reason"], "denied");
        assert!(of_type(s, "deleted").is_empty());
    }
    assert_eq!(
        std::fs::read(scratch.store()).expect("the store"),
        before,
        "the store is byte for byte as it was"
    );

    let results = scratch.host.calls(json!([
        {"tool": "delete", "arguments": {"id": id, "dry_run": true}},
        {"tool": "delete", "arguments": {"id": id, "confirm": true}},
        {"tool": "get", "arguments": {"id": id}},
    ]));
    let plan = success(&results[0]);
    assert_eq!(of_type(plan, "aoi:plan")[0]["action"], "delete");
    let deleted = success(&results[1]);
    assert_eq!(of_type(deleted, "deleted")[0]["id"], id.as_str());
    let gone = tool_error(&results[2]);
    assert_eq!(process_error(gone)["category"], "not_found");
    assert_eq!(process_error(gone)["code"], "NOTE_NOT_FOUND");
    assert!(scratch.titles().is_empty());
}

#[test]
fn import_gets_its_records_on_stdin_and_fails_fast_on_a_bad_one() {
    let scratch = Scratch::new("import");
    let results = scratch.host.calls(json!([
        {"tool": "import", "arguments": {"records": [
            {"title": "From MCP", "body": "first"},
            {"title": "Also from MCP"},
        ]}},
        // The second record has a blank title, which its schema allows and notes refuses:
        // fail fast, nothing written.
        {"tool": "import", "arguments": {"records": [
            {"title": "Never written"},
            {"title": "   "},
        ]}},
        {"tool": "import", "arguments": {"continue_on_error": true, "records": [
            {"title": "Kept"},
            {"title": "   "},
        ]}},
        // A field notes' record schema does not have: refused by the adapter, notes never ran.
        {"tool": "import", "arguments": {"records": [
            {"title": "Never either"},
            {"title": "Bad", "colour": "red"},
        ]}},
    ]));

    let s = success(&results[0]);
    assert_eq!(s["summary"]["input_count"], 2, "{s}");
    let ids: Vec<&Value> = of_type(s, "created").iter().map(|e| &e["id"]).collect();
    assert_eq!(ids, [&json!("n1"), &json!("n2")]);

    let s = tool_error(&results[1]);
    let error = process_error(s);
    assert_eq!(error["category"], "validation", "{s}");
    assert_eq!(error["line_number"], 2, "the line of stdin it was on");
    assert!(of_type(s, "created").is_empty());

    let s = tool_error(&results[2]);
    assert_eq!(s["summary"]["partial"], true, "{s}");
    assert_eq!(of_type(s, "created")[0]["title"], "Kept");
    assert_eq!(of_type(s, "aoi:error")[0]["scope"], "item");

    let s = tool_error(&results[3]);
    assert_eq!(s["adapter_error"]["category"], "usage", "{s}");
    assert_eq!(s["adapter_error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(s["summary"], Value::Null, "notes never ran");

    assert_eq!(scratch.titles(), ["From MCP", "Also from MCP", "Kept"]);
}

#[test]
fn invalid_arguments_are_tool_errors_with_their_category() {
    let scratch = Scratch::new("invalid");
    let results = scratch.host.calls(json!([
        // Refused by the adapter against the input schema: usage, nothing run.
        {"tool": "list", "arguments": {"limit": -1}},
        {"tool": "get", "arguments": {"id": "not-an-id"}},
        {"tool": "add", "arguments": {"title": "x", "colour": "red"}},
        {"tool": "get", "arguments": {}},
        // Accepted by the schema, refused by notes itself: its own category and field.
        {"tool": "list", "arguments": {"cursor": "bm90LWEtY3Vyc29y"}},
        {"tool": "add", "arguments": {"title": "   "}},
        // The adapter's own (its outputSchema is the default version's): refused too.
        {"tool": "list", "arguments": {"schema_version": "1.0"}},
    ]));
    for refused in results[..4].iter().chain(&results[6..]) {
        let s = tool_error(refused);
        assert_eq!(s["adapter_error"]["category"], "usage", "{s}");
        assert_eq!(s["adapter_error"]["code"], "INVALID_ARGUMENTS");
        assert_eq!(s["adapter_error"]["retryable"], false);
        assert_eq!(s["summary"], Value::Null, "notes never ran");
    }
    let cursor = process_error(tool_error(&results[4])).clone();
    assert_eq!(cursor["category"], "validation", "{cursor}");
    assert_eq!(cursor["code"], "INVALID_CURSOR");
    assert_eq!(cursor["field"], "cursor");
    let title = process_error(tool_error(&results[5])).clone();
    assert_eq!(title["category"], "validation", "{title}");
    assert_eq!(title["code"], "INVALID_TITLE");
    assert_eq!(title["field"], "title");
    assert!(!scratch.store().exists(), "nothing was written");
}

/// Runs the MCP Inspector's CLI mode against `aoi mcp --tool notes.py` with `args`.
fn inspector(scratch: &Scratch, args: &[&str]) -> Value {
    // The Inspector reads everything after a `--` as its own, so the server is named with
    // `--tool` rather than `aoi mcp -- notes.py`.
    let out = Command::new(&mcp_clients().inspector)
        .arg("--cli")
        .arg("-e")
        .arg(format!("NOTES_DB={}", path(&scratch.store())))
        .arg("-e")
        .arg(format!("HOME={}", path(&scratch.dir)))
        .args(server(&["--tool", &path(&notes())]))
        .args(args)
        .current_dir(&scratch.dir)
        .output()
        .expect("the Inspector runs");
    crate::mcp_clients::client_json(&out, &format!("mcp-inspector {args:?}"))
}

#[test]
fn mcp_inspector_lists_and_calls_notes() {
    let scratch = Scratch::new("inspector");
    let listed = inspector(&scratch, &["--method", "tools/list"]);
    assert_eq!(
        names(&listed["tools"]),
        ["add", "delete", "get", "import", "list"]
            .map(String::from)
            .into()
    );
    assert_eq!(
        tool(&listed["tools"], "delete")["annotations"]["destructiveHint"],
        true
    );

    let added = inspector(
        &scratch,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "add",
            "--tool-arg",
            "title=Inspected",
        ],
    );
    assert_eq!(added["isError"], false, "{added}");
    assert_eq!(
        added["structuredContent"]["events"][0]["type"], "created",
        "{added}"
    );
    let listed = inspector(
        &scratch,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "list",
            "--tool-arg",
            "limit=5",
        ],
    );
    assert_eq!(listed["isError"], false, "{listed}");
    let s = &listed["structuredContent"];
    assert_eq!(s["events"][0]["title"], "Inspected", "{s}");
    assert_eq!(s["summary"]["count"], 1);
    assert_eq!(scratch.titles(), ["Inspected"]);
}
