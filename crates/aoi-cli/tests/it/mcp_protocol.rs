//! `aoi mcp` held to the MCP specification itself: the official TypeScript SDK client, v1 and
//! v2, with Ajv (`tests/data/mcp/ts/client.mjs`, installed by
//! [`crate::mcp_clients::ts_client`] and [`crate::mcp_clients::ts_client_v2`]) over stdio and
//! Streamable HTTP, on the 2025 revisions and on 2026-07-28, raw JSON-RPC over stdio, raw HTTP requests against `--listen`, and the
//! MCP conformance suite. Real processes only.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::mcp::{data, data_home, outline, path, seed, server};
use crate::mcp_clients::{ts_client, ts_client_v2, TsClient};
use crate::support::aoi;

/// Runs the TypeScript SDK v1 client's `scenario` with `config`; returns what it printed.
pub(crate) fn ts(scenario: &str, config: &Value) -> Value {
    ts_on(ts_client(), scenario, config)
}

/// Runs `client.mjs`'s `scenario` with `config` on `client`'s SDK; returns what it printed.
fn ts_on(client: &TsClient, scenario: &str, config: &Value) -> Value {
    let out = Command::new(&client.node)
        .arg(data("ts/client.mjs"))
        .arg(scenario)
        .arg(config.to_string())
        .env("AOI_TS_MODULES", &client.modules)
        .env("AOI_TS_SDK", client.major)
        .output()
        .expect("the TypeScript client runs");
    crate::mcp_clients::client_json(
        &out,
        &format!("client.mjs {scenario} (SDK v{})", client.major),
    )
}

/// `aoi mcp --listen 0 ARGS -- outline` in `home` (its working directory and data home):
/// the running server and its URL.
pub(crate) struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The directory it runs in, when the server owns it: removed after the server is gone.
    home: Option<aoi_test::TempDir>,
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
        HttpServer {
            child,
            url,
            home: None,
        }
    }

    /// The server, owning the directory it runs in (`home`), which goes after it.
    pub(crate) fn in_home(mut self, home: aoi_test::TempDir) -> HttpServer {
        self.home = Some(home);
        self
    }

    /// `127.0.0.1:PORT`.
    pub(crate) fn authority(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's exit status once it exited, waiting at most `limit`; `None` while it runs.
    pub(crate) fn exited_within(
        &mut self,
        limit: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let started = std::time::Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if started.elapsed() < limit => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                _ => return None,
            }
        }
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
    every_outline_result_fits_on(ts_client(), home, target);
}

/// [`every_outline_result_fits_its_output_schema`] on `client`'s SDK; what the client said
/// of the calls (`protocolVersion` among it).
fn every_outline_result_fits_on(client: &TsClient, home: &Path, target: Value) -> Value {
    let mut config = target;
    config["env"] = json!({"XDG_DATA_HOME": path(home)});
    config["cwd"] = json!(path(home));
    let listed = ts_on(client, "list", &config);
    let id = first_id(home);
    config["calls"] = json!(outline_calls(&listed["tools"], &id));
    let out = ts_on(client, "calls", &config);
    // What the client received for the list is what the catalog promises (its time is
    // bench/mcp.sh's to measure, not a test's).
    let bytes = out["listBytes"].as_u64().expect("listBytes");
    assert!(bytes <= 40_000, "tools/list is {bytes} bytes");
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
    out
}

fn seeded(tag: &str) -> aoi_test::TempDir {
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

#[test]
fn ts_sdk_v2_pinned_to_2026_07_28_calls_every_outline_tool_over_stdio() {
    // The v2 client pinned to 2026-07-28 starts with server/discover and sends every request
    // with its per-request `_meta`; no initialize, no fallback.
    let home = seeded("ts2-stdio");
    let command = server(&["--timeout", "5", "--", &path(&outline())]);
    let config = json!({"command": command, "negotiation": {"pin": "2026-07-28"}});
    let out = every_outline_result_fits_on(ts_client_v2(), &home, config);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
}

#[test]
fn ts_sdk_v2_negotiating_over_http_chooses_2026_07_28_and_calls_every_outline_tool() {
    // `auto` probes with server/discover and falls back to initialize unless the answer is
    // definitive: the server must give a definitive 2026-07-28.
    let home = seeded("ts2-http");
    let http = HttpServer::start(&home, &["--timeout", "5"], &[path(&outline())]);
    let config = json!({"url": http.url, "negotiation": "auto"});
    let out = every_outline_result_fits_on(ts_client_v2(), &home, config);
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    // And the SDK's default, the 2025 handshake, still works against the same server.
    let legacy = ts_on(ts_client_v2(), "list", &json!({"url": http.url}));
    assert_eq!(legacy["protocolVersion"], "2025-11-25", "{legacy}");
}

// ---- Raw JSON-RPC over stdio ------------------------------------------------------------

/// `aoi mcp -- outline` on pipes, spoken to line by line.
struct StdioSession {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl StdioSession {
    fn start(home: &Path) -> StdioSession {
        StdioSession::serving(home, &["--".as_ref(), outline().as_os_str()])
    }

    /// `aoi mcp ARGS` on pipes.
    fn serving(home: &Path, args: &[&std::ffi::OsStr]) -> StdioSession {
        let mut child = Command::new(aoi())
            .arg("mcp")
            .args(args)
            .current_dir(home)
            .env("XDG_DATA_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("aoi mcp starts");
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        StdioSession {
            child,
            stdin,
            lines,
        }
    }

    /// Writes `line` and a newline.
    fn send(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.stdin, "{line}").expect("write to aoi mcp");
    }

    /// The next message aoi mcp writes (a JSON value: an object, or an array for a batch).
    fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("aoi mcp answers within 20 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends `initialize` for `revision` and `notifications/initialized`; the negotiated one.
    fn initialize(&mut self, revision: &str) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": revision, "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}})
            .to_string(),
        );
        let answer = self.recv();
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        answer["result"]["protocolVersion"].clone()
    }
}

impl Drop for StdioSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn code(answer: &Value) -> &Value {
    &answer["error"]["code"]
}

#[test]
fn stdio_answers_every_malformed_message_with_its_json_rpc_error() {
    let home = seeded("raw-stdio");
    let mut session = StdioSession::start(&home);
    assert_eq!(session.initialize("2025-06-18"), "2025-06-18");

    session.send("not json{");
    let answer = session.recv();
    assert_eq!(code(&answer), -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");

    session.send(r#"{"id":9}"#);
    let answer = session.recv();
    assert_eq!(code(&answer), -32600, "{answer}");
    assert_eq!(answer["id"], 9, "{answer}");

    for (id, params) in [(2, json!({"name": 5})), (3, Value::Null), (4, json!([]))] {
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"});
        if !params.is_null() {
            request["params"] = params;
        }
        session.send(&request.to_string());
        let answer = session.recv();
        assert_eq!(code(&answer), -32602, "invalid params: {answer}");
        assert_eq!(answer["id"], id, "{answer}");
    }

    session.send(r#"{"jsonrpc":"2.0","id":5,"method":"no/such/method"}"#);
    let answer = session.recv();
    assert_eq!(code(&answer), -32601, "{answer}");

    // 2025-06-18 removed batches.
    session.send(r#"[{"jsonrpc":"2.0","id":6,"method":"ping"}]"#);
    let answer = session.recv();
    assert_eq!(code(&answer), -32600, "{answer}");

    // And the session still works.
    session.send(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    assert_eq!(
        session.recv(),
        json!({"jsonrpc": "2.0", "id": 7, "result": {}})
    );
}

#[test]
fn stdio_batches_are_answered_as_one_array_on_2025_03_26() {
    let home = seeded("raw-stdio-batch");
    let mut session = StdioSession::start(&home);
    assert_eq!(session.initialize("2025-03-26"), "2025-03-26");
    session.send(
        &json!([
            {"jsonrpc": "2.0", "id": "a", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}},
            {"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": {"name": "status", "arguments": {}}},
            {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": 5}},
            {"jsonrpc": "2.0", "id": "d", "method": "initialize", "params": {}},
        ])
        .to_string(),
    );
    let answer = session.recv();
    let answers = answer
        .as_array()
        .expect("a batch is answered with an array");
    let by_id = |id: &str| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer for {id}: {answer}"))
    };
    assert_eq!(
        answers.len(),
        4,
        "one answer per request, none for the notification"
    );
    assert_eq!(by_id("a")["result"], json!({}));
    assert_eq!(by_id("b")["result"]["isError"], false, "{answer}");
    assert_eq!(code(by_id("c")), -32602);
    assert_eq!(code(by_id("d")), -32600, "initialize is never batched");

    session.send("[]");
    assert_eq!(code(&session.recv()), -32600, "an empty batch is invalid");
}

/// `_meta` of a 2026-07-28 request.
fn meta_2026() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

#[test]
fn stdio_serves_2026_07_28_without_initialize() {
    let home = seeded("raw-stdio-2026");
    let mut session = StdioSession::start(&home);
    session.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta_2026()}})
            .to_string(),
    );
    let discovered = session.recv();
    let result = &discovered["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]),
        "{discovered}"
    );
    assert_eq!(result["resultType"], "complete", "{discovered}");
    assert!(result["capabilities"]["tools"].is_object(), "{discovered}");
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["ttlMs"], 3_600_000);
    session.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta_2026()}})
            .to_string(),
    );
    let listed = session.recv();
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["cacheScope"], "public");
    assert_eq!(listed["result"]["ttlMs"], 3_600_000);
    assert!(!listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .is_empty());
    session.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "status", "arguments": {}, "_meta": meta_2026()}})
        .to_string(),
    );
    let called = session.recv();
    assert_eq!(called["result"]["resultType"], "complete", "{called}");
    assert_eq!(called["result"]["isError"], false, "{called}");
}

// ---- Raw HTTP against --listen ----------------------------------------------------------

/// An HTTP/1.1 response: status, headers (lower-case names), body (de-chunked).
#[derive(Debug)]
struct HttpResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, or the JSON of its SSE `data:` lines (the last message).
    fn json(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .next_back()
            .unwrap_or_else(|| panic!("no JSON in {self:?}"))
    }
}

/// One request on its own connection (`Connection: close`); `headers` as `Name: value`.
fn http(authority: &str, method: &str, headers: &[&str], body: &str) -> HttpResponse {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(
        authority
            .parse::<std::net::SocketAddr>()
            .expect("a socket address"),
    )
    .expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut request = format!("{method} /mcp HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("host:"))
    {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for h in headers {
        request.push_str(h);
        request.push_str("\r\n");
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").expect("a response head");
    let mut head_lines = head.lines();
    let status = head_lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = head_lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        let mut body = String::new();
        let mut rest = rest;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 || after.len() < size {
                break;
            }
            body.push_str(&after[..size]);
            rest = after[size..].trim_start_matches("\r\n");
        }
        body
    } else {
        rest.to_owned()
    };
    HttpResponse {
        status,
        headers,
        body,
    }
}

const JSON_POST: [&str; 2] = [
    "Content-Type: application/json",
    "Accept: application/json, text/event-stream",
];

/// Initializes a session for `revision`; its id.
fn http_session(authority: &str, revision: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let response = http(authority, "POST", &JSON_POST, &init.to_string());
    assert_eq!(response.status, 200, "{response:?}");
    let id = response
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = http(
        authority,
        "POST",
        &[JSON_POST[0], JSON_POST[1], &format!("Mcp-Session-Id: {id}")],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    id
}

#[test]
fn http_answers_bad_json_bad_params_and_dead_sessions_exactly() {
    let home = seeded("raw-http");
    let server = HttpServer::start(&home, &[], &[path(&outline())]);
    let at = server.authority();
    let id = http_session(at, "2025-06-18");
    let session = format!("Mcp-Session-Id: {id}");
    let version = "MCP-Protocol-Version: 2025-06-18";
    let headers = [JSON_POST[0], JSON_POST[1], &session, version];

    let response = http(at, "POST", &headers, "not json{");
    assert_eq!(response.status, 400, "invalid JSON: {response:?}");
    assert_eq!(code(&response.json()), -32700, "{response:?}");

    let response = http(
        at,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#,
    );
    assert_eq!(code(&response.json()), -32602, "{response:?}");
    let response = http(
        at,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[]}"#,
    );
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(code(&response.json()), -32602, "{response:?}");
    let response = http(at, "POST", &headers, r#"{"id":9}"#);
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(code(&response.json()), -32600, "{response:?}");

    let response = http(
        at,
        "POST",
        &headers,
        r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
    );
    assert_eq!(
        response.status, 400,
        "no batches in 2025-06-18: {response:?}"
    );
    assert_eq!(code(&response.json()), -32600, "{response:?}");

    let delete = [session.as_str(), version];
    assert_eq!(http(at, "DELETE", &delete, "").status, 202);
    let again = http(at, "DELETE", &delete, "");
    assert_eq!(again.status, 404, "a deleted session: {again:?}");
    let unknown = http(
        at,
        "DELETE",
        &["Mcp-Session-Id: no-such-session", version],
        "",
    );
    assert_eq!(unknown.status, 404, "an unknown session: {unknown:?}");
    let after = http(
        at,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
    );
    assert_eq!(
        after.status, 404,
        "a request on a deleted session: {after:?}"
    );
}

#[test]
fn http_batches_are_answered_as_one_array_on_2025_03_26() {
    let home = seeded("raw-http-batch");
    let server = HttpServer::start(&home, &[], &[path(&outline())]);
    let at = server.authority();
    let id = http_session(at, "2025-03-26");
    let session = format!("Mcp-Session-Id: {id}");
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}},
    ]);
    let response = http(
        at,
        "POST",
        &[JSON_POST[0], JSON_POST[1], &session],
        &batch.to_string(),
    );
    assert_eq!(response.status, 200, "{response:?}");
    let answers = response.json();
    let answers = answers.as_array().expect("an array");
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(answers[1]["result"]["isError"], false, "{answers:?}");
    assert_eq!(answers[2]["id"], 3);
    assert_eq!(code(&answers[2]), -32600, "initialize is never batched");
}

#[test]
fn http_refuses_foreign_origins_and_hosts_unless_allowed() {
    let home = seeded("raw-http-origin");
    let server = HttpServer::start(
        &home,
        &["--allow-origin", "https://app.example"],
        &[path(&outline())],
    );
    let at = server.authority();
    let port = at.rsplit(':').next().expect("a port");
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let status = |extra: &str| http(at, "POST", &[JSON_POST[0], JSON_POST[1], extra], ping).status;
    for (origin, expected) in [
        ("http://evil.example", 403),
        ("https://app.example.evil", 403),
        ("http://app.example", 403),
        ("null", 403),
        ("https://app.example", 200),
        ("http://localhost:3000", 200),
        ("http://127.0.0.1", 200),
    ] {
        assert_eq!(
            status(&format!("Origin: {origin}")),
            expected,
            "Origin: {origin}"
        );
    }
    for (host, expected) in [
        (format!("127.0.0.1:{port}"), 200),
        (format!("localhost:{port}"), 200),
        ("127.0.0.1:1".to_owned(), 403),
        ("127.0.0.1".to_owned(), 403),
        (format!("evil.example:{port}"), 403),
    ] {
        assert_eq!(status(&format!("Host: {host}")), expected, "Host: {host}");
    }
}

#[test]
fn http_serves_2026_07_28_statelessly() {
    let home = seeded("raw-http-2026");
    let server = HttpServer::start(&home, &[], &[path(&outline())]);
    let at = server.authority();
    let post = |method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = meta_2026();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        http(
            at,
            "POST",
            &[
                JSON_POST[0],
                JSON_POST[1],
                "MCP-Protocol-Version: 2026-07-28",
                &format!("Mcp-Method: {method}"),
            ],
            &body.to_string(),
        )
    };
    let discovered = post("server/discover", json!({}));
    assert_eq!(discovered.status, 200, "{discovered:?}");
    assert_eq!(
        discovered.header("mcp-session-id"),
        None,
        "no sessions in 2026-07-28"
    );
    let result = discovered.json()["result"].clone();
    assert_eq!(
        result["supportedVersions"],
        json!(["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(result["cacheScope"], "public");
    // No `subscriptions/listen` here, so no list changes are advertised on this revision.
    assert!(
        result["capabilities"]["tools"].get("listChanged").is_none(),
        "{result}"
    );
    let listed = post("tools/list", json!({}));
    assert_eq!(listed.header("mcp-session-id"), None);
    let result = listed.json()["result"].clone();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 3_600_000);
    assert_eq!(result["cacheScope"], "public");
    let called = http(
        at,
        "POST",
        &[
            JSON_POST[0],
            JSON_POST[1],
            "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: tools/call",
            "Mcp-Name: status",
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "status", "arguments": {}, "_meta": meta_2026()}})
        .to_string(),
    );
    let result = called.json()["result"].clone();
    assert_eq!(result["resultType"], "complete", "{called:?}");
    assert_eq!(result["isError"], false, "{called:?}");
    // A method 2026-07-28 removed is one the server does not have: HTTP 404, -32601.
    let init = post(
        "initialize",
        json!({"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(init.status, 404, "{init:?}");
    assert_eq!(init.json()["error"]["code"], -32601, "{init:?}");
    assert_eq!(init.json()["id"], 1, "{init:?}");
}

/// Each tools/call's answer, the notifications before it kept.
fn call_and_notes(session: &mut StdioSession, id: u64, tool: &str) -> (Vec<Value>, Value) {
    session.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": {}}})
        .to_string(),
    );
    let mut notes = Vec::new();
    loop {
        let message = session.recv();
        if message.get("id") == Some(&json!(id)) {
            return (notes, message);
        }
        notes.push(message);
    }
}

#[test]
fn a_cli_replaced_while_served_is_discovered_again_and_the_change_announced() {
    let home = data_home("reload");
    let program = home.join("cli.py");
    let original = std::fs::read_to_string(data("badcli.py")).unwrap();
    let write = |text: &str| {
        use std::os::unix::fs::PermissionsExt;
        // A new version is a new file in the program's place, as an upgrade installs it.
        let next = home.join("cli.py.next");
        std::fs::write(&next, text).unwrap();
        std::fs::set_permissions(&next, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&next, &program).unwrap();
    };
    write(&original);
    let mut session = StdioSession::serving(
        &home,
        &[
            "--no-cache".as_ref(),
            "--tool".as_ref(),
            program.as_os_str(),
        ],
    );
    session.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string(),
    );
    let init = session.recv();
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    session.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let list = |session: &mut StdioSession, id: u64| -> BTreeSet<String> {
        session.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string());
        crate::mcp::names(&session.recv()["result"]["tools"])
    };
    let before = list(&mut session, 1);
    assert!(
        before.contains("unavailable") && !before.contains("fresh"),
        "{before:?}"
    );
    let (notes, _) = call_and_notes(&mut session, 2, "unavailable");
    assert!(notes.is_empty(), "nothing changed yet: {notes:?}");

    write(&original.replace(
        r#"MISBEHAVING = ["unavailable", "nosummary", "garbage", "hang"]"#,
        r#"MISBEHAVING = ["unavailable", "nosummary", "garbage", "hang", "fresh"]"#,
    ));
    let (notes, answer) = call_and_notes(&mut session, 3, "unavailable");
    assert_eq!(
        notes,
        vec![json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})],
        "the change is announced before the answer"
    );
    assert_eq!(answer["result"]["isError"], true, "the call ran: {answer}");
    let after = list(&mut session, 4);
    assert!(
        after.contains("fresh"),
        "the new version's tools: {after:?}"
    );
    let (notes, _) = call_and_notes(&mut session, 5, "unavailable");
    assert!(notes.is_empty(), "announced once: {notes:?}");
}
