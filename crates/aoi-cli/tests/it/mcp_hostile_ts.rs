//! `aoi mcp` in front of a hostile CLI (`tests/data/mcp/hostile.py`), driven by the official
//! TypeScript SDK (`tests/data/mcp/ts/client.mjs`): every result a misbehaving CLI produces fits
//! its tool's outputSchema for the SDK's own Ajv and for a 2020-12 Ajv, over stdio and
//! Streamable HTTP, with no Ajv warning; and a call over Streamable HTTP leaves no process
//! behind when its session is deleted, when it is cancelled, when the server gets SIGTERM and
//! when it times out, while the server goes on serving. Real processes only.

use std::time::Duration;

use serde_json::{json, Value};

use crate::mcp::{data, data_home, path};
use crate::mcp_calls::{hostile, left, tag};
use crate::mcp_protocol::{ts, HttpServer};

/// The bound every response is held to here (`--max-output`).
const MAX_OUTPUT: usize = 200_000;

/// `aoi mcp --listen 0 ARGS -- hostile.py`, in a data home of its own.
fn http_server(name: &str, args: &[&str]) -> HttpServer {
    let home = data_home(&format!("hostile-ts-{name}"));
    HttpServer::start(&home, args, &[path(&data("hostile.py"))]).in_home(home)
}

/// The SDK refused nothing, the second Ajv found nothing: `result` fits its outputSchema.
fn assert_fits(what: &str, result: &Value) {
    assert_eq!(
        result["_sdk_error"],
        Value::Null,
        "{what}: the SDK refused the result: {result}"
    );
    assert_eq!(
        result["_schema_errors"],
        json!([]),
        "{what}: the 2020-12 Ajv refused the result: {result}"
    );
}

fn assert_no_warnings(out: &Value) {
    assert_eq!(out["warnings"], json!([]), "Ajv warned");
}

/// The size of a result's content and structured content, as JSON: what the response carries.
fn response_size(result: &Value) -> usize {
    result["content"].to_string().len() + result["structuredContent"].to_string().len()
}

/// A hostile tool, its arguments, and what its result must say.
type HostileCall = (&'static str, Value, fn(&Value));

/// Every hostile mode that ends with a result, each with what its result must say (so a
/// result that fits the schema by saying nothing fails too).
fn hostile_calls(t: &str) -> Vec<HostileCall> {
    fn violation(result: &Value) {
        assert_eq!(result["isError"], true, "{result}");
        let findings = &result["structuredContent"]["protocol_violation"]["findings"];
        assert!(
            findings.as_array().is_some_and(|f| !f.is_empty()),
            "the violation is named: {result}"
        );
    }
    fn bad_events(result: &Value) {
        violation(result);
        let events = &result["structuredContent"]["events"];
        assert_eq!(
            events.as_array().map(Vec::len),
            Some(1),
            "only the good note is kept: {result}"
        );
        assert_eq!(events[0]["text"], "a good note");
    }
    fn unknown_category(result: &Value) {
        assert_eq!(result["isError"], true, "{result}");
        let s = &result["structuredContent"];
        assert!(s.get("protocol_violation").is_none(), "{s}");
        // §9.4: forwarded unchanged, routed as internal by the adapter.
        assert_eq!(s["events"][0]["category"], "quota_exhausted", "{s}");
    }
    fn truncated(result: &Value) {
        assert_eq!(result["isError"], false, "{}", result["content"][0]);
        assert_eq!(result["structuredContent"]["truncated"], true);
        assert!(
            result["structuredContent"]["events"]
                .as_array()
                .is_some_and(|e| e.len() > 100),
            "the first events are kept"
        );
        let size = response_size(result);
        assert!(size <= MAX_OUTPUT, "a response of {size} bytes");
    }
    fn timed_out(result: &Value) {
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(
            result["structuredContent"]["adapter_error"]["code"],
            "CALL_TIMED_OUT"
        );
    }
    fn max_events(result: &Value) {
        assert_eq!(result["isError"], false, "{result}");
        let s = &result["structuredContent"];
        assert_eq!(s["stopped"]["reason"], "max_events", "{s}");
        let notes = s["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["type"] == "note")
            .count();
        assert_eq!(notes, 3);
    }
    fn succeeded(result: &Value) {
        assert_eq!(result["isError"], false, "{result}");
        assert_eq!(result["structuredContent"]["summary"]["ok"], true);
    }
    vec![
        ("badevents", json!({}), bad_events),
        ("garbage", json!({}), violation),
        ("nosummary", json!({}), violation),
        ("unknowncat", json!({}), unknown_category),
        ("flood", json!({}), truncated),
        ("huge", json!({}), truncated),
        ("hang", json!({"tag": t}), timed_out),
        ("watch", json!({"max_events": 3}), max_events),
        ("detach", json!({"tag": t}), succeeded),
    ]
}

/// Calls every hostile mode through the TypeScript SDK at `target` (a `url` or a `command`)
/// and holds each result to its schema and to what it must say; nothing of the calls is left.
fn every_hostile_result_fits_its_output_schema(target: Value, t: &str) {
    let calls = hostile_calls(t);
    let mut config = target;
    config["calls"] = calls
        .iter()
        .map(|(tool, arguments, _)| json!({"tool": tool, "arguments": arguments}))
        .collect();
    let out = ts("calls", &config);
    let results = out["results"].as_array().expect("results");
    assert_eq!(results.len(), calls.len(), "{out}");
    for ((tool, _, says), result) in calls.iter().zip(results) {
        assert_fits(tool, result);
        says(result);
    }
    assert_no_warnings(&out);
    assert_eq!(left(t), Vec::<String>::new());
}

const BOUNDS: [&str; 4] = ["--timeout", "3", "--max-output", "200000"];

#[test]
fn ts_sdk_every_hostile_result_fits_its_output_schema_over_stdio() {
    let t = tag("ts-fits-stdio");
    every_hostile_result_fits_its_output_schema(json!({"command": hostile(&BOUNDS)}), &t);
}

#[test]
fn ts_sdk_every_hostile_result_fits_its_output_schema_over_http() {
    let t = tag("ts-fits-http");
    let server = http_server("fits", &BOUNDS);
    every_hostile_result_fits_its_output_schema(json!({"url": server.url}), &t);
}

/// Stops a `hang` call over Streamable HTTP `how` (client.mjs's `stop`, once the CLI's first
/// progress says its helpers run): the CLI and its two helpers (one in its own session) ran,
/// and none is left within three seconds (rmcp alone ends a deleted session's calls after 5).
/// After "delete" and "cancel" the server serves the next call.
fn stop_over_http(how: &str) -> (Value, HttpServer) {
    let t = tag(&format!("http-stop-{how}"));
    let after = tag(&format!("http-after-{how}"));
    let server = http_server(&format!("stop-{how}"), &[]);
    let mut config = json!({
        "url": server.url, "tool": "hang", "arguments": {"tag": t}, "tag": t, "how": how,
        "expect": 3, "limit_ms": 3000, "server_pid": server.pid(),
    });
    if how != "signal" {
        config["after"] = json!({"tool": "detach", "arguments": {"tag": after}});
    }
    let out = ts("stop", &config);
    // At least the CLI and its two helpers (a fork caught before its exec shows its
    // parent's argv, and counts once more).
    let seen = out["seen"].as_u64().expect("seen");
    assert!(seen >= 3, "{how}: the CLI and its two helpers ran: {out}");
    assert_eq!(out["left"], json!([]), "{how}: left after 3 s: {out}");
    assert_eq!(left(&t), Vec::<String>::new());
    if how != "signal" {
        let result = &out["after"];
        assert_fits(&format!("the call after {how}"), result);
        assert_eq!(
            result["isError"], false,
            "{how}: the server goes on serving: {out}"
        );
        assert_eq!(left(&after), Vec::<String>::new());
    }
    assert_no_warnings(&out);
    (out, server)
}

#[test]
fn http_deleting_the_session_kills_every_process_of_its_running_call() {
    stop_over_http("delete");
}

#[test]
fn http_cancelling_a_call_kills_every_process_it_started() {
    let (out, _server) = stop_over_http("cancel");
    assert!(
        out["call_error"]["message"].is_string(),
        "the SDK ended the call on abort: {out}"
    );
}

#[test]
fn http_sigterm_kills_every_process_of_a_running_call_and_the_server_exits() {
    let (out, mut server) = stop_over_http("signal");
    assert_eq!(out["server_alive"], false, "{out}");
    let status = server
        .exited_within(Duration::from_secs(2))
        .expect("the server exited on SIGTERM");
    assert_eq!(status.code(), Some(143), "128 + SIGTERM, as over stdio");
}

#[test]
fn http_a_timed_out_call_leaves_nothing_and_the_server_goes_on_serving() {
    let t = tag("http-timeout");
    let after = tag("http-timeout-after");
    let server = http_server("timeout", &["--timeout", "2"]);
    let out = ts(
        "calls",
        &json!({"url": server.url, "calls": [
            {"tool": "hang", "arguments": {"tag": t}},
            {"tool": "detach", "arguments": {"tag": after}},
        ]}),
    );
    let results = out["results"].as_array().expect("results");
    assert_fits("hang", &results[0]);
    assert_eq!(
        results[0]["structuredContent"]["adapter_error"]["code"], "CALL_TIMED_OUT",
        "{out}"
    );
    // Nothing of the timed-out call is left, by the time the next call returns and after.
    assert_eq!(left(&t), Vec::<String>::new());
    assert_fits("detach", &results[1]);
    assert_eq!(results[1]["isError"], false, "{out}");
    assert_eq!(left(&after), Vec::<String>::new());
    assert_no_warnings(&out);
}
