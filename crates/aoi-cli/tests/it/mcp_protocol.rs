//! `aoi mcp` held to the MCP specification itself: the official TypeScript SDK client with Ajv
//! (`tests/data/mcp/ts/client.mjs`, installed by [`crate::mcp_clients::ts_client`]) over stdio
//! and Streamable HTTP, raw JSON-RPC over stdio, raw HTTP requests against `--listen`, and the
//! MCP conformance suite. Real processes only.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::mcp::{data, data_home, outline, path, seed, server};
use crate::mcp_clients::ts_client;
use crate::support::aoi;

/// Runs the TypeScript SDK client's `scenario` with `config`; returns what it printed.
fn ts(scenario: &str, config: &Value) -> Value {
    let client = ts_client();
    let out = Command::new(&client.node)
        .arg(data("ts/client.mjs"))
        .arg(scenario)
        .arg(config.to_string())
        .env("AOI_TS_MODULES", &client.modules)
        .output()
        .expect("the TypeScript client runs");
    assert!(
        out.status.success(),
        "client.mjs {scenario} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        let text = String::from_utf8_lossy(&out.stdout);
        panic!(
            "client.mjs {scenario} printed no JSON ({e}), {} bytes:\n{}",
            text.len(),
            text.chars().take(2000).collect::<String>()
        )
    })
}

/// `aoi mcp --listen 0 ARGS -- outline` in `home` (its working directory and data home):
/// the running server and its URL.
pub(crate) struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpServer {
    pub(crate) fn start(home: &Path, args: &[&str], cli: &[String]) -> HttpServer {
        let mut child = Command::new(aoi())
            .args(["mcp", "--listen", "0"])
            .args(args)
            .arg("--")
            .args(cli)
            .current_dir(home)
            .env("XDG_DATA_HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("aoi mcp --listen starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("read the announcement");
        let url = line
            .trim()
            .strip_prefix("aoi mcp: listening on ")
            .unwrap_or_else(|| panic!("no address announced: {line:?}"))
            .to_owned();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The id of the first document `outline list` shows in `home`.
fn first_id(home: &Path) -> String {
    let out = Command::new(outline())
        .args(["list", "--output", "jsonl"])
        .env("XDG_DATA_HOME", home)
        .output()
        .expect("outline list runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|e| e["id"].as_str().map(str::to_owned))
        .expect("a seeded document")
}

/// Arguments for one call of every tool outline serves, in an order that leaves each later
/// call something to act on. A tool missing here fails the test: every command is called.
fn outline_calls(tools: &Value, id: &str) -> Vec<Value> {
    let has = |tool: &str, arg: &str| {
        tools
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == tool)
            .is_some_and(|t| !t["inputSchema"]["properties"][arg].is_null())
    };
    // The records argument of import (its name is the adapter's).
    let records = if has("import", "records") {
        "records"
    } else {
        "input_jsonl"
    };
    let mut watch = json!({"interval_ms": 100});
    if has("watch", "max_duration_ms") {
        watch["max_duration_ms"] = json!(500);
    }
    let table = [
        ("status", json!({})),
        ("doctor", json!({})),
        (
            "create",
            json!({"title": "Protocol notes", "tags": ["mcp"]}),
        ),
        ("get", json!({"id": id})),
        ("list", json!({"limit": 2})),
        ("search", json!({"query": "runbook"})),
        ("update", json!({"id": id, "title": "Renamed runbook"})),
        ("copy", json!({"id": id, "to": "templates"})),
        ("move", json!({"id": id, "to": "archive"})),
        (
            "import",
            json!({records: [{"title": "Imported", "body": "from a record"}]}),
        ),
        ("export", json!({})),
        ("delete", json!({"query": "Imported"})),
        ("delete", json!({"query": "no such words"})),
        ("watch", watch),
        ("sync", json!({"remote": "team.db", "direction": "push"})),
        ("auth_status", json!({})),
        ("auth_login", json!({})),
        ("auth_protect", json!({"dry_run": true})),
        ("auth_unprotect", json!({"dry_run": true})),
        ("auth_logout", json!({})),
        // Arguments that do not fit the input schema: still a result that fits the output schema.
        ("get", json!({"id": 7})),
    ];
    let listed = crate::mcp::names(tools);
    let called: BTreeSet<String> = table.iter().map(|(t, _)| (*t).to_owned()).collect();
    assert_eq!(
        listed, called,
        "every tool outline serves is called, and only those"
    );
    table
        .into_iter()
        .map(|(tool, arguments)| json!({"tool": tool, "arguments": arguments}))
        .collect()
}

/// Lists outline's tools and calls every one through the TypeScript SDK at `target` (a `url`
/// or a `command`); asserts every result fits its tool's outputSchema for the SDK's own Ajv
/// and for a second one of the schema's dialect, and that neither Ajv warned.
fn every_outline_result_fits_its_output_schema(home: &Path, target: Value) {
    let mut config = target;
    config["env"] = json!({"XDG_DATA_HOME": path(home)});
    config["cwd"] = json!(path(home));
    let listed = ts("list", &config);
    let id = first_id(home);
    config["calls"] = json!(outline_calls(&listed["tools"], &id));
    let out = ts("calls", &config);
    eprintln!(
        "TypeScript SDK listTools: {:.1} ms, {} bytes",
        out["listMs"].as_f64().unwrap_or_default(),
        out["listBytes"]
    );
    let calls = config["calls"].as_array().expect("calls");
    let results = out["results"].as_array().expect("results");
    assert_eq!(results.len(), calls.len());
    let mut failures = Vec::new();
    for (call, result) in calls.iter().zip(results) {
        if !result["_sdk_error"].is_null() || result["_schema_errors"] != json!([]) {
            failures.push(format!(
                "{}: sdk {} / ajv {}",
                call, result["_sdk_error"], result["_schema_errors"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "results that do not fit their outputSchema:\n{}",
        failures.join("\n")
    );
    let warnings = out["warnings"].as_array().expect("warnings");
    let distinct: BTreeSet<&str> = warnings.iter().filter_map(Value::as_str).collect();
    assert!(
        warnings.is_empty(),
        "Ajv warned {} times ({} distinct), e.g. {:?}",
        warnings.len(),
        distinct.len(),
        distinct.iter().take(5).collect::<Vec<_>>()
    );
}

fn seeded(tag: &str) -> std::path::PathBuf {
    let home = data_home(tag);
    seed(
        &home,
        &[
            json!({"title": "Rollback runbook", "body": "how to roll back a deploy", "collection": "work"}),
            json!({"title": "Draft", "body": "a draft"}),
        ],
    );
    home
}

#[test]
fn ts_sdk_every_outline_result_fits_its_output_schema_over_stdio() {
    let home = seeded("ts-stdio");
    let command = server(&["--timeout", "5", "--", &path(&outline())]);
    every_outline_result_fits_its_output_schema(&home, json!({"command": command}));
}

#[test]
fn ts_sdk_every_outline_result_fits_its_output_schema_over_http() {
    let home = seeded("ts-http");
    let http = HttpServer::start(&home, &["--timeout", "5"], &[path(&outline())]);
    every_outline_result_fits_its_output_schema(&home, json!({"url": http.url}));
}
