//! `aoi mcp` end to end, driven by MCP clients no one here wrote: the official Python SDK
//! (through `tests/data/mcp/client.py`) and the MCP Inspector CLI, both installed from their
//! registries by [`crate::mcp_clients`]. Every row of the Machine Mode → MCP mapping
//! (`shared/spec/machine-mode-and-mcp.md`), and CLIs that break the contract
//! (`tests/data/mcp/badcli.py`). Real processes only.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::mcp_clients::mcp_clients;
use crate::support::{aoi, temp_dir, TempDir};

pub(crate) fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/mcp")
        .join(name)
}

pub(crate) fn outline() -> PathBuf {
    aoi_test::workspace_bin("outline")
}

fn badcli() -> PathBuf {
    data("badcli.py")
}

pub(crate) fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `aoi mcp ARGS`, as a server command line.
pub(crate) fn server(args: &[&str]) -> Vec<String> {
    std::iter::once(path(&aoi()))
        .chain(["mcp".to_owned()])
        .chain(args.iter().map(|a| (*a).to_owned()))
        .collect()
}

/// `aoi mcp -- outline`.
fn outline_server() -> Vec<String> {
    server(&["--", &path(&outline())])
}

/// A test's own outline data home.
pub(crate) fn data_home(tag: &str) -> TempDir {
    temp_dir(&format!("mcp-{tag}"))
}

/// The Python SDK client (`tests/data/mcp/client.py`) as the host of one server: its command
/// line, the environment added for it and the directory it starts in.
pub(crate) struct PythonHost {
    pub command: Vec<String>,
    pub env: Value,
    pub cwd: PathBuf,
}

impl PythonHost {
    /// Runs the client's `scenario` with `config` on a session of its own; what it printed.
    pub(crate) fn run(&self, scenario: &str, mut config: Value) -> Value {
        config["command"] = json!(self.command);
        config["env"] = self.env.clone();
        config["cwd"] = json!(path(&self.cwd));
        crate::mcp_clients::python_client(scenario, &config)
    }

    /// Several calls in turn on one session; their results.
    pub(crate) fn calls(&self, calls: Value) -> Vec<Value> {
        let out = self.run("calls", json!({ "calls": calls }));
        out["results"].as_array().expect("results").clone()
    }

    /// One call on its own session.
    pub(crate) fn call(&self, tool: &str, arguments: Value) -> Value {
        let out = self.run("call", json!({"tool": tool, "arguments": arguments}));
        out["result"].clone()
    }
}

/// Runs the Python SDK client's `scenario` against `command` with `XDG_DATA_HOME` set and
/// the server started in `home` (so its paths are inside the default root), and returns what
/// it printed.
fn python(scenario: &str, command: &[String], home: &Path, config: Value) -> Value {
    PythonHost {
        command: command.to_vec(),
        env: json!({"XDG_DATA_HOME": path(home)}),
        cwd: home.to_path_buf(),
    }
    .run(scenario, config)
}

/// Imports `records` into outline's database under `home`, directly (not through MCP).
pub(crate) fn seed(home: &Path, records: &[Value]) {
    let file = home.join("seed.jsonl");
    let lines: Vec<String> = records.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("write seed");
    let out = Command::new(outline())
        .args(["import", "--input-jsonl"])
        .arg(&file)
        .args(["--output", "jsonl"])
        .env("XDG_DATA_HOME", home)
        .output()
        .expect("outline import runs");
    assert!(out.status.success(), "seed import failed: {out:?}");
}

pub(crate) fn names(tools: &Value) -> BTreeSet<String> {
    tools
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

pub(crate) fn tool<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// The checks every result gets: its structuredContent validates against the tool's
/// outputSchema (checked by client.py with `jsonschema`, or by the SDK alone when client.py
/// was told not to, which only a success allows: the SDK checks successes), and its content is
/// a headline block, then a block of the very same JSON.
pub(crate) fn checked(result: &Value) -> &Value {
    let by_the_sdk = result["_schema_errors"].is_null() && result["isError"] == false;
    assert!(
        by_the_sdk || result["_schema_errors"] == json!([]),
        "structuredContent does not fit outputSchema: {result}"
    );
    assert!(
        result["content"][0]["text"].is_string(),
        "a headline block first"
    );
    let json_text = result["content"][1]["text"]
        .as_str()
        .expect("a JSON text block second");
    let from_text: Value = serde_json::from_str(json_text).expect("the text block holds JSON");
    assert_eq!(
        from_text, result["structuredContent"],
        "text and structure differ"
    );
    &result["structuredContent"]
}

/// Asserts the tool of `command` (an entry of the CLI's capabilities) in `listed` (what
/// client.py's `schemas` scenario printed) is served as its manifest says: input and output
/// schemas valid JSON Schema by the client's `jsonschema` (meta-schema, every `$ref` resolved)
/// and compiled by the Rust validator too, an object input without the `x-aoi` block, the
/// `{events, summary}` result, and hints that say no more than capabilities does, each one
/// present (an absent destructiveHint means true to MCP): only a read-only command is
/// idempotent (a key helps only the calls that pass one), and only one said `additive`
/// writes without being destructive.
/// The commands a capability manifest lists, discovery (`schema`, `capabilities`,
/// `input-schema`) aside: what `aoi mcp` serves one tool for each of.
pub(crate) fn served_commands(caps: &Value) -> BTreeSet<String> {
    caps["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["name"].as_str().expect("name").to_owned())
        .filter(|n| !["schema", "capabilities", "input-schema"].contains(&n.as_str()))
        .collect()
}

pub(crate) fn served_as_capabilities_say(listed: &Value, command: &Value) {
    let name = command["name"].as_str().expect("name");
    assert_eq!(
        listed["schema_problems"][name],
        json!({"inputSchema": [], "outputSchema": []}),
        "{name}"
    );
    let t = tool(&listed["tools"], name);
    for key in ["inputSchema", "outputSchema"] {
        jsonschema::draft202012::meta::validate(&t[key])
            .unwrap_or_else(|e| panic!("{name} {key} breaks the meta-schema: {e}"));
        jsonschema::draft202012::new(&t[key])
            .unwrap_or_else(|e| panic!("{name} {key} does not compile: {e}"));
    }
    assert_eq!(t["inputSchema"]["type"], "object", "{name}");
    assert!(t["inputSchema"].get("x-aoi").is_none(), "{name}");
    assert_eq!(
        t["outputSchema"]["required"],
        json!(["events", "summary"]),
        "{name}"
    );
    let hints = &t["annotations"];
    let flag = |k: &str| command[k].as_bool().unwrap_or(false);
    assert_eq!(hints["readOnlyHint"], flag("read_only"), "{name}");
    let destructive = !flag("read_only") && (flag("destructive") || !flag("additive"));
    assert_eq!(hints["destructiveHint"], destructive, "{name}");
    assert_eq!(hints["idempotentHint"], flag("read_only"), "{name}");
    assert_eq!(hints["openWorldHint"], false, "{name}");
}

/// The events of a structured result of type `ty`.
pub(crate) fn of_type<'a>(structured: &'a Value, ty: &str) -> Vec<&'a Value> {
    structured["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == ty)
        .collect()
}

/// Asserts `result` is a tool error (not a protocol error: it is a result at all) whose
/// structured content fits the output schema; returns the structured content.
pub(crate) fn tool_error(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "a tool error: {result}");
    checked(result)
}

/// Asserts `result` succeeded and fits its output schema (checked by the client's
/// jsonschema); returns the structured content.
pub(crate) fn success(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "a success: {result}");
    assert_eq!(
        result["_schema_errors"],
        json!([]),
        "checked by the client's jsonschema"
    );
    let s = checked(result);
    assert_eq!(s["summary"]["ok"], true, "{s}");
    s
}

/// The process error of a result's events.
pub(crate) fn process_error(structured: &Value) -> &Value {
    structured["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "aoi:error")
        .unwrap_or_else(|| panic!("no aoi:error in {structured}"))
}

#[test]
fn python_sdk_lists_one_tool_per_command_with_schemas_and_hints() {
    let home = data_home("list");
    let out = python("list", &outline_server(), &home, json!({}));
    assert_eq!(out["server"]["name"], "aoi-mcp");
    let tools = &out["tools"];

    // One tool per command of capabilities, discovery commands aside.
    let caps = Command::new(outline())
        .args(["capabilities", "--output", "json"])
        .output()
        .expect("outline capabilities");
    let caps: Value = serde_json::from_slice(&caps.stdout).expect("capabilities JSON");
    let expected: BTreeSet<String> = caps["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .filter(|n| !["capabilities", "schema", "input-schema"].contains(n))
        .map(|n| n.replace(' ', "_"))
        .collect();
    assert_eq!(names(tools), expected);

    let search = tool(tools, "search");
    assert_eq!(search["annotations"]["readOnlyHint"], true);
    assert_eq!(search["annotations"]["destructiveHint"], false);
    assert_eq!(search["annotations"]["idempotentHint"], true);
    let props = search["inputSchema"]["properties"]
        .as_object()
        .expect("properties");
    for p in ["query", "limit", "cursor", "tag"] {
        assert!(props.contains_key(p), "search takes {p}");
    }
    for owned in ["output", "format", "no_color", "debug"] {
        assert!(!props.contains_key(owned), "{owned} is the adapter's");
    }
    assert_eq!(search["inputSchema"]["type"], "object");
    assert_eq!(search["inputSchema"]["required"], json!(["query"]));
    assert!(search["inputSchema"].get("x-aoi").is_none());

    let delete = tool(tools, "delete");
    assert_eq!(delete["annotations"]["destructiveHint"], true);
    assert_eq!(delete["annotations"]["readOnlyHint"], false);
    assert!(delete["inputSchema"]["properties"]["confirm"].is_object());
    assert!(delete["description"]
        .as_str()
        .expect("description")
        .contains("confirm"));

    // A key makes a call idempotent only when the caller passes one: `create` is not.
    assert_eq!(
        tool(tools, "create")["annotations"]["idempotentHint"],
        false
    );
    assert_eq!(tool(tools, "move")["annotations"]["idempotentHint"], false);

    for t in tools.as_array().expect("tools") {
        assert_eq!(
            t["outputSchema"]["required"],
            json!(["events", "summary"]),
            "{}",
            t["name"]
        );
    }
}

#[test]
fn python_sdk_follows_next_cursor_through_every_page() {
    let home = data_home("cursor");
    let records: Vec<Value> = (0..5)
        .map(|i| json!({"title": format!("alpha {i}"), "body": "b"}))
        .collect();
    seed(&home, &records);
    let out = python(
        "paginate",
        &outline_server(),
        &home,
        json!({"tool": "search", "arguments": {"query": "alpha", "limit": 1}}),
    );
    let pages = out["pages"].as_array().expect("pages");
    assert_eq!(pages.len(), 5, "one hit per page, five hits");
    let mut ids = BTreeSet::new();
    for (n, page) in pages.iter().enumerate() {
        assert_eq!(page["isError"], false);
        let s = checked(page);
        let hits: Vec<&Value> = s["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["type"] == "hit")
            .collect();
        assert_eq!(hits.len(), 1, "page {n}: {s}");
        assert!(
            ids.insert(hits[0]["id"].as_str().expect("id").to_owned()),
            "page {n} repeats a hit"
        );
        let last = n == pages.len() - 1;
        assert_eq!(s["summary"]["truncated"], !last, "page {n}");
        assert_eq!(s["summary"]["next_cursor"].is_string(), !last, "page {n}");
    }
    assert_eq!(ids.len(), 5);
}

#[test]
fn python_sdk_receives_progress_notifications_on_a_long_import() {
    // outline reports progress every 250 ms: 40k records take a debug build a few seconds.
    const RECORDS: u64 = 40_000;
    let home = data_home("progress");
    let file = home.join("big.jsonl");
    let mut text = String::new();
    for i in 0..RECORDS {
        text.push_str(
            &json!({"title": format!("doc {i}"), "body": "lorem ipsum dolor"}).to_string(),
        );
        text.push('\n');
    }
    std::fs::write(&file, text).expect("write records");
    let out = python(
        "progress",
        &outline_server(),
        &home,
        json!({"tool": "import", "arguments": {"input_jsonl": path(&file)}}),
    );
    let result = &out["result"];
    // Validated against outputSchema by the SDK itself (it raises on a misfit), not again by
    // client.py: 40k events through pure-Python jsonschema twice take minutes.
    assert_eq!(result["isError"], false);
    assert!(result["_schema_errors"].is_null());
    let s = checked(result);
    assert_eq!(s["summary"]["ok"], true);
    assert_eq!(s["summary"]["count"], RECORDS);
    // Every aoi:progress of the stream became a notification for this call's token.
    let forwarded: Vec<f64> = s["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "aoi:progress")
        .map(|e| e["completed"].as_f64().expect("completed"))
        .collect();
    let updates = out["progress"].as_array().expect("progress");
    assert!(
        updates.len() >= 2,
        "an import of {RECORDS} records reports progress: {updates:?}"
    );
    let values: Vec<f64> = updates
        .iter()
        .map(|u| u["progress"].as_f64().expect("progress"))
        .collect();
    assert_eq!(
        values, forwarded,
        "one notification per aoi:progress, in order"
    );
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    assert!(updates
        .iter()
        .all(|u| u["message"].as_str().is_some_and(|m| m.contains("records"))));
}

#[test]
fn a_failed_call_is_is_error_with_the_clis_category_and_retryable() {
    let home = data_home("fail");
    let out = python(
        "call",
        &outline_server(),
        &home,
        json!({"tool": "get", "arguments": {"id": "doc_01M8P000000000000000000000"}}),
    );
    let result = &out["result"];
    assert_eq!(result["isError"], true);
    let s = checked(result);
    assert_eq!(s["summary"]["ok"], false);
    let error = process_error(s);
    assert_eq!(error["category"], "not_found");
    assert_eq!(error["code"], "DOCUMENT_NOT_FOUND");
    assert_eq!(error["retryable"], false);
    let headline = result["content"][0]["text"].as_str().expect("text");
    assert!(headline.starts_with("outline get failed: not_found DOCUMENT_NOT_FOUND"));
    assert!(headline.contains("Not retryable"));

    // A retryable failure keeps retryable and retry_after_ms.
    let out = python(
        "call",
        &server(&["--tool", &path(&badcli())]),
        &home,
        json!({"tool": "unavailable"}),
    );
    let result = &out["result"];
    assert_eq!(result["isError"], true);
    let error = process_error(checked(result));
    assert_eq!(error["category"], "unavailable");
    assert_eq!(error["retryable"], true);
    assert_eq!(error["retry_after_ms"], 1500);
    assert!(result["content"][0]["text"]
        .as_str()
        .expect("text")
        .contains("Retryable after 1500 ms"));
}

#[test]
fn delete_without_confirm_is_refused_by_the_cli_and_deletes_nothing() {
    let home = data_home("delete");
    seed(&home, &[json!({"title": "keep me", "body": "b"})]);
    let listed = python(
        "call",
        &outline_server(),
        &home,
        json!({"tool": "list", "arguments": {}}),
    );
    let id = checked(&listed["result"])["events"][0]["id"]
        .as_str()
        .expect("a listed document")
        .to_owned();
    let out = python(
        "calls",
        &outline_server(),
        &home,
        json!({"calls": [
            {"tool": "delete", "arguments": {"ids": [id]}},
            {"tool": "get", "arguments": {"id": id}},
        ]}),
    );
    let results = out["results"].as_array().expect("results");
    assert_eq!(results[0]["isError"], true);
    let error = process_error(checked(&results[0]));
    assert_eq!(error["category"], "precondition_failed");
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED");
    assert_eq!(results[1]["isError"], false, "still there: {}", results[1]);
    assert_eq!(checked(&results[1])["events"][0]["id"], id.as_str());
}

#[test]
fn cancelling_a_call_kills_the_clis_process_group_and_reaps_it() {
    let home = data_home("cancel");
    let db = path(&home.join("watched.db"));
    // A named database must exist to be read: it is made by a write first.
    let made = Command::new(outline())
        .args(["--db", &db, "import", "--input-jsonl", "/dev/null"])
        .output()
        .expect("outline runs");
    assert!(made.status.success(), "{made:?}");
    let out = python(
        "cancel",
        &outline_server(),
        &home,
        json!({"tool": "watch", "arguments": {"db": db, "interval_ms": 100},
               "marker": db, "program": "outline",
               "after": {"tool": "status", "arguments": {"db": db}}}),
    );
    assert_eq!(out["cancelled"], true);
    assert!(
        out.get("result").is_none(),
        "a cancelled call has no result"
    );
    let seen = out["seen"].as_array().expect("seen");
    assert_eq!(seen.len(), 1, "one `outline watch` ran: {seen:?}");
    assert_eq!(seen[0]["argv"][1], "watch");
    assert_eq!(
        seen[0]["pgid"], seen[0]["pid"],
        "the CLI runs in its own process group"
    );
    assert_eq!(
        out["left"],
        json!([]),
        "nothing of the group is left, not even a zombie"
    );
    // The server goes on serving.
    assert_eq!(out["after"]["isError"], false);
    assert_eq!(checked(&out["after"])["summary"]["ok"], true);
}

/// `/proc/PID/stat`'s state letter, or None when there is no such process.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].chars().next()
}

#[test]
fn misbehaving_clis_are_errors_never_successes_and_a_hang_is_killed() {
    let home = data_home("bad");
    let pidfile = home.join("pids");
    let out = python(
        "calls",
        &server(&["--timeout", "2", "--tool", &path(&badcli())]),
        &home,
        json!({"calls": [
            {"tool": "nosummary"},
            {"tool": "garbage"},
            {"tool": "hang", "arguments": {"pidfile": path(&pidfile)}},
        ]}),
    );
    let results = out["results"].as_array().expect("results");
    let codes = |s: &Value| -> Vec<String> {
        s["protocol_violation"]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| f["code"].as_str().expect("code").to_owned())
            .collect()
    };

    assert_eq!(results[0]["isError"], true);
    let s = checked(&results[0]);
    assert!(codes(s).contains(&"SUMMARY_MISSING".to_owned()), "{s}");
    assert_eq!(s["summary"], Value::Null);
    assert_eq!(s["events"][0]["type"], "note", "what it did say is kept");

    assert_eq!(results[1]["isError"], true);
    let s = checked(&results[1]);
    assert!(codes(s).contains(&"INVALID_JSON".to_owned()), "{s}");
    assert!(results[1]["content"][0]["text"]
        .as_str()
        .expect("text")
        .contains("broke the AOI-CLI contract"));

    assert_eq!(results[2]["isError"], true);
    let s = checked(&results[2]);
    assert_eq!(s["adapter_error"]["category"], "timeout");
    assert_eq!(s["adapter_error"]["code"], "CALL_TIMED_OUT");
    let pids: Vec<u32> = std::fs::read_to_string(&pidfile)
        .expect("hang wrote its pids")
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect();
    // The CLI itself was killed and reaped by aoi mcp (no zombie); its grandchild, in the
    // same group, was killed too (reaped by whoever inherited it, or a zombie until then).
    assert_eq!(state(pids[0]), None, "the hanging CLI is gone");
    let mut grandchild = state(pids[1]);
    for _ in 0..50 {
        if grandchild.is_none_or(|s| s == 'Z') {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        grandchild = state(pids[1]);
    }
    assert!(
        grandchild.is_none_or(|s| s == 'Z'),
        "the grandchild in the group was killed: {grandchild:?}"
    );
}

#[test]
fn allow_and_exclude_filter_the_tool_list() {
    let home = data_home("filter");
    let o = path(&outline());
    let out = python(
        "list",
        &server(&["--allow", "search", "--allow", "get", "--", &o]),
        &home,
        json!({}),
    );
    assert_eq!(
        names(&out["tools"]),
        ["get", "search"].map(String::from).into()
    );
    let out = python(
        "list",
        &server(&["--exclude", "delete", "--exclude", "sync", "--", &o]),
        &home,
        json!({}),
    );
    let listed = names(&out["tools"]);
    assert!(!listed.contains("delete") && !listed.contains("sync"));
    assert!(listed.contains("search") && listed.contains("create"));
}

#[test]
fn two_clis_get_prefixed_names_and_each_runs_its_own() {
    let home = data_home("two");
    let command = server(&["--tool", &path(&outline()), "--tool", &path(&badcli())]);
    let out = python("list", &command, &home, json!({}));
    let listed = names(&out["tools"]);
    assert!(listed.contains("outline_search") && listed.contains("badcli_hang"));
    assert!(
        listed
            .iter()
            .all(|n| n.starts_with("outline_") || n.starts_with("badcli_")),
        "{listed:?}"
    );
    let out = python(
        "calls",
        &command,
        &home,
        json!({"calls": [
            {"tool": "outline_status"},
            {"tool": "badcli_unavailable"},
        ]}),
    );
    assert_eq!(out["results"][0]["isError"], false);
    assert_eq!(
        checked(&out["results"][0])["summary"]["tool"],
        "outline",
        "outline_status ran outline"
    );
    assert_eq!(
        process_error(checked(&out["results"][1]))["code"],
        "BACKEND_DOWN"
    );
}

/// Runs the MCP Inspector's CLI mode with `args`; returns its stdout as JSON.
fn inspector(args: &[String], home: &Path) -> Value {
    let out = Command::new(&mcp_clients().inspector)
        .arg("--cli")
        .arg("-e")
        .arg(format!("XDG_DATA_HOME={}", path(home)))
        .args(args)
        .output()
        .expect("the Inspector runs");
    crate::mcp_clients::client_json(&out, &format!("mcp-inspector {args:?}"))
}

#[test]
fn mcp_inspector_lists_and_calls_tools() {
    let home = data_home("inspector");
    seed(
        &home,
        &[
            json!({"title": "alpha one", "body": "b"}),
            json!({"title": "alpha two", "body": "b"}),
        ],
    );
    // The Inspector reads everything after a `--` as its own, so the server is named with
    // `--tool` rather than `aoi mcp -- outline`.
    let command = server(&["--tool", &path(&outline())]);
    let mut args = command.clone();
    args.extend(["--method", "tools/list"].map(String::from));
    let listed = inspector(&args, &home);
    let listed_names = names(&listed["tools"]);
    assert!(listed_names.contains("search") && listed_names.contains("delete"));
    assert_eq!(
        tool(&listed["tools"], "search")["annotations"]["readOnlyHint"],
        true
    );

    let mut args = command;
    args.extend(
        [
            "--method",
            "tools/call",
            "--tool-name",
            "search",
            "--tool-arg",
            "query=alpha",
            "--tool-arg",
            "limit=1",
        ]
        .map(String::from),
    );
    let called = inspector(&args, &home);
    assert_eq!(called["isError"], false, "{called}");
    let s = &called["structuredContent"];
    assert_eq!(s["events"].as_array().map(Vec::len), Some(1));
    assert_eq!(s["events"][0]["type"], "hit");
    assert_eq!(s["summary"]["truncated"], true);
}

#[test]
fn print_config_is_json_a_host_can_run() {
    let home = data_home("config");
    let out = Command::new(aoi())
        .args(["mcp", "--print-config", "--", &path(&outline())])
        .output()
        .expect("aoi mcp --print-config");
    assert!(out.status.success(), "{out:?}");
    let config: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let entry = &config["mcpServers"]["outline"];
    let command = entry["command"].as_str().expect("command");
    assert!(Path::new(command).is_absolute() && Path::new(command).exists());
    // The default root, the working directory, is written out: a host starts the server
    // somewhere else.
    let cwd = std::env::current_dir().and_then(std::fs::canonicalize);
    assert_eq!(
        entry["args"],
        json!([
            "mcp",
            "--root",
            path(&cwd.expect("the working directory")),
            "--",
            path(&std::fs::canonicalize(outline()).expect("outline"))
        ])
    );

    // A `--tool` configuration with a filter, run by the Inspector from the file itself.
    let out = Command::new(aoi())
        .args([
            "mcp",
            "--print-config",
            "--allow",
            "search",
            "--allow",
            "get",
        ])
        .args(["--tool", &path(&outline())])
        .output()
        .expect("aoi mcp --print-config");
    assert!(out.status.success(), "{out:?}");
    let file = home.join("mcp.json");
    std::fs::write(&file, &out.stdout).expect("write config");
    let listed = inspector(
        &[
            "--config".into(),
            path(&file),
            "--server".into(),
            "outline".into(),
            "--method".into(),
            "tools/list".into(),
        ],
        &home,
    );
    assert_eq!(
        names(&listed["tools"]),
        ["get", "search"].map(String::from).into()
    );
}

#[test]
fn discovery_is_cached_until_the_program_changes() {
    let dir = temp_dir("mcp-cache");
    let cache = dir.join("cache");
    // A copy of outline whose modification time the test controls.
    let program = dir.join("outline-copy");
    std::fs::copy(outline(), &program).unwrap();
    let print = |no_cache: bool| {
        let mut cmd = Command::new(aoi());
        cmd.args(["mcp", "--print-config"]);
        if no_cache {
            cmd.arg("--no-cache");
        }
        let out = cmd
            .arg("--")
            .arg(&program)
            .env("XDG_CACHE_HOME", &cache)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let files = || -> Vec<PathBuf> {
        std::fs::read_dir(cache.join("aoi").join("mcp"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    print(true);
    assert!(files().is_empty(), "--no-cache writes nothing");
    print(false);
    let first = files();
    assert_eq!(first.len(), 1);
    let doc: Value = serde_json::from_slice(&std::fs::read(&first[0]).unwrap()).unwrap();
    assert_eq!(doc["capabilities"]["tool"], "outline");
    assert!(doc["schema"].is_object());
    print(false);
    assert_eq!(files(), first, "the same program reuses its entry");
    // A changed program (here: a new modification time) is discovered again.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&program)
        .unwrap()
        .set_modified(later)
        .unwrap();
    print(false);
    assert_eq!(files().len(), 2);
    // The copy of outline is large: it goes now, not with the hourly sweep.
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn python_sdk_calls_tools_over_streamable_http_on_loopback() {
    use std::io::{BufRead, BufReader};
    let home = data_home("http");
    seed(
        &home,
        &[json!({"title": "Rollback runbook", "body": "how to roll back a deploy"})],
    );
    let mut server = Command::new(aoi())
        .args(["mcp", "--listen", "0", "--"])
        .arg(outline())
        .env("XDG_DATA_HOME", &home)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("aoi mcp: listening on ")
        .unwrap_or_else(|| panic!("no address announced: {line:?}"))
        .to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "loopback by default: {url}"
    );
    let out = python(
        "call",
        &outline_server(),
        &home,
        json!({"url": url, "tool": "search", "arguments": {"query": "rollback"}}),
    );
    let _ = server.kill();
    let _ = server.wait();
    let result = &out["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["_schema_errors"], json!([]));
    let events = result["structuredContent"]["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["title"], "Rollback runbook");
}

#[test]
fn records_given_as_input_jsonl_reach_the_clis_stdin() {
    // A command that takes `--input-jsonl -` (input_modes has `jsonl`) gets its records as
    // the `records` argument: aoi mcp writes them to the CLI's stdin, one line each.
    let home = data_home("stdin");
    let out = python(
        "calls",
        &outline_server(),
        &home,
        json!({"calls": [
            {"tool": "import", "arguments": {"records": [
                {"title": "Stdin alpha", "body": "first"},
                {"title": "Stdin beta", "body": "second"},
            ]}},
            {"tool": "search", "arguments": {"query": "stdin"}},
        ]}),
    );
    let results = out["results"].as_array().expect("results");
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    let imported = checked(&results[0]);
    assert_eq!(imported["summary"]["count"], 2, "{imported}");
    let titles: BTreeSet<&str> = checked(&results[1])["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["title"].as_str())
        .collect();
    assert_eq!(titles, ["Stdin alpha", "Stdin beta"].into());
}
