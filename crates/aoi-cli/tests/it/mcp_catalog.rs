//! What `aoi mcp` lists and lets a model name, driven by the official Python MCP SDK
//! (`tests/data/mcp/client.py`) and by raw JSON-RPC on the server's stdio: hints no more
//! reassuring than the manifest, path arguments confined to `--root` (the working directory by
//! default), `--pin`ned arguments hidden and enforced, `records` for `--input-jsonl`, and a
//! `tools/list` small enough for a model's context with standard formats only.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::mcp::{checked, path, server, tool};
use crate::support::{aoi, temp_dir, TempDir};

fn outline() -> PathBuf {
    aoi_test::workspace_bin("outline")
}

/// `aoi mcp ARGS -- outline`.
fn outline_server(args: &[&str]) -> Vec<String> {
    let outline = path(&outline());
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", outline.as_str()]);
    server(&all)
}

/// Runs the Python SDK client's `scenario` against `command`, started in `cwd` with
/// `XDG_DATA_HOME` there too; returns what it printed.
fn python(scenario: &str, command: &[String], cwd: &Path, mut config: Value) -> Value {
    config["command"] = json!(command);
    config["env"] = json!({"XDG_DATA_HOME": path(cwd)});
    config["cwd"] = json!(path(cwd));
    crate::mcp_clients::python_client(scenario, &config)
}

/// The results of `calls` on one session.
fn calls(command: &[String], cwd: &Path, calls: Value) -> Vec<Value> {
    let out = python("calls", command, cwd, json!({ "calls": calls }));
    out["results"].as_array().expect("results").clone()
}

/// The adapter's refusal in a result: the CLI never ran.
fn refusal(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "{result}");
    let s = checked(result);
    assert_eq!(s["summary"], Value::Null, "the CLI never ran: {s}");
    &s["adapter_error"]
}

/// A scratch tree: `root/` (the server's working directory), `outside/secret`, and
/// `root/link` leading to `outside/`.
fn tree(tag: &str) -> TempDir {
    let dir = temp_dir(&format!("mcp-catalog-{tag}"));
    std::fs::create_dir_all(dir.join("root")).unwrap();
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::fs::write(dir.join("outside/secret"), "the secret body").unwrap();
    std::fs::write(dir.join("root/body.txt"), "an allowed body").unwrap();
    std::os::unix::fs::symlink(dir.join("outside"), dir.join("root/link")).unwrap();
    dir
}

#[test]
fn hints_say_no_more_than_the_manifest() {
    let dir = tree("hints");
    let out = python("list", &outline_server(&[]), &dir.join("root"), json!({}));
    let tools = &out["tools"];
    let hints = |name: &str| tool(tools, name)["annotations"].clone();
    for additive in ["create", "copy", "import"] {
        let h = hints(additive);
        assert_eq!(h["destructiveHint"], false, "{additive} only adds: {h}");
        assert_eq!(
            h["idempotentHint"], false,
            "{additive}: a key only when given"
        );
        assert_eq!(h["readOnlyHint"], false, "{additive}");
    }
    for overwriting in [
        "update",
        "move",
        "sync",
        "auth_logout",
        "auth_login",
        "delete",
    ] {
        let h = hints(overwriting);
        assert_eq!(h["destructiveHint"], true, "{overwriting}: {h}");
        assert_eq!(h["idempotentHint"], false, "{overwriting}");
    }
    for read in ["get", "list", "search", "status", "export"] {
        let h = hints(read);
        assert_eq!(h["readOnlyHint"], true, "{read}");
        assert_eq!(h["idempotentHint"], true, "{read}");
        assert_eq!(h["destructiveHint"], false, "{read}");
    }
}

#[test]
fn a_path_outside_the_root_is_refused_before_the_cli_runs() {
    let dir = tree("root");
    let root = dir.join("root");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let db = path(&root.join("o.db"));
    let secret = path(&dir.join("outside/secret"));
    // Started in `work`, confined to `root` (and only there).
    let command = outline_server(&["--root", &path(&root)]);
    let results = calls(
        &command,
        &work,
        json!([
            {"tool": "create", "arguments": {"title": "a", "db": db, "body_file": secret}},
            {"tool": "create", "arguments": {"title": "b", "db": db,
                "body_file": format!("{}/../outside/secret", path(&root))}},
            {"tool": "create", "arguments": {"title": "c", "db": db,
                "body_file": path(&root.join("link/secret"))}},
            {"tool": "status", "arguments": {"db": path(&dir.join("outside/o.db"))}},
            {"tool": "status", "arguments": {"db": "../outside/o.db"}},
            {"tool": "create", "arguments": {"title": "d", "db": db,
                "body_file": path(&root.join("body.txt"))}},
        ]),
    );
    for (n, refused) in results[..5].iter().enumerate() {
        let error = refusal(refused);
        assert_eq!(error["category"], "authz", "{n}: {error}");
        assert_eq!(error["code"], "PATH_OUTSIDE_ROOTS", "{n}");
        assert_eq!(error["retryable"], false, "{n}");
    }
    assert!(
        refusal(&results[2])["message"]
            .as_str()
            .unwrap()
            .contains(&path(&dir.join("outside"))),
        "the symlink is followed: {}",
        results[2]
    );
    assert!(
        !root.join("o.db").exists() || results[5]["isError"] == false,
        "nothing ran before the allowed call"
    );
    assert!(!dir.join("outside/o.db").exists(), "outside untouched");
    assert!(
        !work.join("o.db").exists(),
        "the working directory untouched"
    );
    // The allowed file is read, and the secret never was.
    assert_eq!(results[5]["isError"], false, "{}", results[5]);
    let got = calls(
        &command,
        &work,
        json!([
            {"tool": "export", "arguments": {"db": db}},
            // Started outside every root, the CLI runs in the root: a relative path is the
            // root's file, and it is the database just made.
            {"tool": "export", "arguments": {"db": "o.db"}},
        ]),
    );
    for result in &got {
        let bodies: Vec<&str> = checked(result)["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["body"].as_str())
            .collect();
        assert_eq!(bodies, ["an allowed body"], "{result}");
    }
}

#[test]
fn without_root_paths_are_confined_to_the_working_directory() {
    let dir = tree("cwd");
    let root = dir.join("root");
    let results = calls(
        &outline_server(&[]),
        &root,
        json!([
            {"tool": "create", "arguments": {"title": "x", "db": "here.db", "body_file": "body.txt"}},
            {"tool": "create", "arguments": {"title": "y", "db": "here.db", "body_file": "../outside/secret"}},
            {"tool": "import", "arguments": {"db": "here.db", "input_jsonl": "link/secret"}},
        ]),
    );
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert!(root.join("here.db").exists());
    for refused in &results[1..] {
        assert_eq!(refusal(refused)["code"], "PATH_OUTSIDE_ROOTS", "{refused}");
    }
}

#[test]
fn a_pinned_argument_is_hidden_refused_and_always_given() {
    let dir = tree("pin");
    let root = dir.join("root");
    let command = outline_server(&["--pin", "db=pinned.db"]);
    let out = python("list", &command, &root, json!({}));
    for t in out["tools"].as_array().expect("tools") {
        let props = &t["inputSchema"]["properties"];
        assert!(props.get("db").is_none(), "{} still lists db", t["name"]);
    }
    let results = calls(
        &command,
        &root,
        json!([
            {"tool": "create", "arguments": {"title": "pinned"}},
            {"tool": "status", "arguments": {"db": "other.db"}},
            {"tool": "status"},
        ]),
    );
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(refusal(&results[1])["code"], "INVALID_ARGUMENTS");
    assert_eq!(refusal(&results[1])["category"], "usage");
    assert!(!root.join("other.db").exists());
    let status = &checked(&results[2])["events"][0];
    assert_eq!(status["db_path"], path(&root.join("pinned.db")), "{status}");
    assert_eq!(status["documents"], 1);

    // A pin no tool takes is an error at start-up, not a silent no-op.
    let out = Command::new(aoi())
        .args(["mcp", "--print-config", "--pin", "nope=1", "--"])
        .arg(outline())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}

#[test]
fn print_config_carries_roots_and_pins_resolved() {
    let dir = tree("config");
    let root = dir.join("root");
    let out = Command::new(aoi())
        .args(["mcp", "--print-config", "--root", ".", "--root"])
        .arg(dir.join("outside"))
        .args(["--pin", "db=data.db", "--"])
        .arg(outline())
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let config: Value = serde_json::from_slice(&out.stdout).unwrap();
    let args = &config["mcpServers"]["outline"]["args"];
    assert_eq!(
        args.as_array().unwrap()[..7],
        json!([
            "mcp",
            "--root",
            path(&root),
            "--root",
            path(&dir.join("outside")),
            "--pin",
            format!("db={}", path(&root.join("data.db")))
        ])
        .as_array()
        .unwrap()[..],
        "{args}"
    );
}

#[test]
fn records_are_validated_and_written_to_stdin_and_stdin_alone_is_refused() {
    let dir = tree("records");
    let root = dir.join("root");
    let results = calls(
        &outline_server(&[]),
        &root,
        json!([
            {"tool": "import", "arguments": {"records": [1, 2]}},
            {"tool": "import", "arguments": {"input_jsonl": "-"}},
            {"tool": "import", "arguments": {"records": [{"title": "a"}], "input_jsonl": "body.txt"}},
            {"tool": "import", "arguments": {"records": [{"title": "Recorded"}]}},
        ]),
    );
    for refused in &results[..3] {
        assert_eq!(refusal(refused)["code"], "INVALID_ARGUMENTS", "{refused}");
    }
    let imported = checked(&results[3]);
    assert_eq!(results[3]["isError"], false, "{imported}");
    assert_eq!(imported["summary"]["count"], 1);
}

/// `tools/list` as the bytes of its JSON-RPC response line, over the server's stdio.
fn raw_tools_list(args: &[&str], cwd: &Path) -> Vec<u8> {
    let mut child = Command::new(aoi())
        .arg("mcp")
        .args(args)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("aoi mcp starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = Vec::new();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#).unwrap();
    stdout.read_until(b'\n', &mut line).unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    line.clear();
    stdout.read_until(b'\n', &mut line).unwrap();
    drop(stdin);
    let _ = child.wait();
    line
}

/// Every `format` keyword's value in `value` (a string under a `format` key).
fn formats(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("format", Value::String(f)) => out.push(f.clone()),
                    _ => formats(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| formats(v, out)),
        _ => {}
    }
}

#[test]
fn outlines_tool_list_fits_in_40_kb_with_standard_formats_and_local_refs_only() {
    let dir = tree("size");
    let outline = path(&outline());
    let bytes = raw_tools_list(&["--", &outline], &dir.join("root"));
    assert!(
        bytes.len() <= 40_000,
        "tools/list for outline: {} bytes",
        bytes.len()
    );
    let response: Value = serde_json::from_slice(&bytes).expect("JSON-RPC");
    let tools = response["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 19, "every outline command is still there");
    let mut found = Vec::new();
    formats(&response, &mut found);
    let standard = aoi_mcp::compact::STANDARD_FORMATS;
    assert!(
        found.iter().all(|f| standard.contains(&f.as_str())),
        "{found:?}"
    );
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains(r#""$ref":"http"#), "no remote $ref");
    // Each tool's schemas still compile on their own, and describe what the command emits.
    for t in tools {
        for key in ["inputSchema", "outputSchema"] {
            jsonschema::draft202012::new(&t[key])
                .unwrap_or_else(|e| panic!("{} {key}: {e}", t["name"]));
        }
    }
    let get = tools.iter().find(|t| t["name"] == "get").unwrap();
    let v = jsonschema::draft202012::new(&get["outputSchema"]).unwrap();
    let result =
        |event: Value| json!({"events": [event], "summary": {"type": "aoi:summary", "ok": true}});
    assert!(
        !v.is_valid(&result(json!({"type": "entry", "id": "x"}))),
        "an entry needs its fields"
    );
    assert!(
        !v.is_valid(&json!({"events": [], "summary": {"type": "aoi:summary"}})),
        "a summary needs ok"
    );
}
