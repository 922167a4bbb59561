//! `aoi mcp`'s calls against a hostile CLI (`tests/data/mcp/hostile.py`), driven by the official
//! Python MCP SDK (`tests/data/mcp/client.py`): every result fits its tool's outputSchema,
//! progress arrives in order and increasing, every stop path leaves no process behind and
//! meets its deadline, the adapter's own errors say honestly whether to retry, unbounded
//! streams are bounded, and responses stay under `--max-output`. Real processes only.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::{checked, data, path, server};

/// `aoi mcp ARGS --tool hostile.py`.
pub(crate) fn hostile(args: &[&str]) -> Vec<String> {
    let tool = path(&data("hostile.py"));
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--tool", &tool]);
    server(&all)
}

/// A tag no other test uses: every process of a call carries it in its argv.
pub(crate) fn tag(name: &str) -> String {
    format!("aoi-mcp-calls-{name}-{}", std::process::id())
}

/// Runs client.py's `scenario` against `command`.
fn python(scenario: &str, command: &[String], mut config: Value) -> Value {
    config["command"] = json!(command);
    crate::mcp_clients::python_client(scenario, &config)
}

/// One call on a fresh server.
fn call(command: &[String], tool: &str, arguments: Value) -> Value {
    let out = python(
        "call",
        command,
        json!({"tool": tool, "arguments": arguments}),
    );
    out["result"].clone()
}

/// The live processes (zombies aside) with `tag` in their argv, after giving the kernel up to
/// two seconds to deliver the kills already sent.
pub(crate) fn left(tag: &str) -> Vec<String> {
    let started = Instant::now();
    loop {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let dir = entry.path();
            let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
                continue;
            };
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            let zombie = stat
                .rfind(')')
                .is_some_and(|i| stat[i + 2..].starts_with('Z'));
            let argv = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if !zombie && argv.contains(tag) {
                found.push(format!("{}: {argv}", entry.file_name().to_string_lossy()));
            }
        }
        if found.is_empty() || started.elapsed() > Duration::from_secs(2) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn codes(structured: &Value) -> Vec<String> {
    structured["protocol_violation"]["findings"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|f| format!("{}@{}", f["code"].as_str().unwrap_or(""), f["line"]))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn bad_events_are_never_copied_into_the_result_and_every_result_fits_its_schema() {
    let command = hostile(&[]);
    let out = python(
        "calls",
        &command,
        json!({"calls": [
            {"tool": "badevents"}, {"tool": "garbage"}, {"tool": "nosummary"},
            {"tool": "unknowncat"}, {"tool": "detach", "arguments": {"tag": tag("fits")}},
        ]}),
    );
    let results = out["results"].as_array().expect("results");
    // `checked`: the client's jsonschema finds nothing wrong with structuredContent, and the
    // JSON text block is exactly it.
    for result in results {
        checked(result);
    }

    let bad = &results[0];
    assert_eq!(bad["isError"], true);
    let s = &bad["structuredContent"];
    let found = codes(s);
    for expected in ["NOT_AN_OBJECT@2", "TYPE_MISSING@3"] {
        assert!(found.contains(&expected.to_owned()), "{found:?}");
    }
    assert!(
        found.iter().any(|c| c.ends_with("@4")),
        "the note that breaks the schema is named: {found:?}"
    );
    assert_eq!(
        s["events"],
        json!([s["events"][0].clone()]),
        "one event kept: {s}"
    );
    assert_eq!(s["events"][0]["text"], "a good note");
    assert!(bad["content"][0]["text"]
        .as_str()
        .expect("headline")
        .contains("broke the AOI-CLI contract"));

    assert!(codes(&results[1]["structuredContent"])
        .iter()
        .any(|c| c.starts_with("INVALID_JSON")));
    assert!(codes(&results[2]["structuredContent"])
        .iter()
        .any(|c| c.starts_with("SUMMARY_MISSING")));
    assert_eq!(results[4]["isError"], false);
}

#[test]
fn an_unknown_category_is_forwarded_unchanged_routed_as_internal_and_no_broken_contract() {
    let result = call(&hostile(&[]), "unknowncat", json!({}));
    let s = checked(&result);
    assert_eq!(result["isError"], true);
    assert!(s.get("protocol_violation").is_none(), "{s}");
    let error = &s["events"][0];
    assert_eq!(error["type"], "aoi:error");
    // §9.4: forwarded unchanged; the headline says how it was routed.
    assert_eq!(error["category"], "quota_exhausted");
    assert!(error.pointer("/details/category").is_none(), "{error}");
    assert_eq!(
        error["retryable"], true,
        "retryable is the CLI's, unchanged"
    );
    assert_eq!(error["code"], "QUOTA");
    let headline = result["content"][0]["text"].as_str().expect("headline");
    assert!(
        headline.contains("quota_exhausted")
            && headline.contains("routed as internal")
            && headline.contains("Retryable"),
        "{headline}"
    );
}

#[test]
fn the_text_block_after_the_headline_is_the_serialized_structured_content() {
    let result = call(&hostile(&[]), "detach", json!({"tag": tag("text")}));
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 2, "a headline, then the JSON: {content:?}");
    assert_eq!(content[0]["text"], "hostile detach succeeded");
    let json: Value = serde_json::from_str(content[1]["text"].as_str().expect("text"))
        .expect("the second block is JSON");
    assert_eq!(json, result["structuredContent"]);
}

#[test]
fn progress_arrives_in_order_and_strictly_increasing() {
    let out = python(
        "progress",
        &hostile(&[]),
        json!({"tool": "progress", "arguments": {}}),
    );
    let values: Vec<f64> = out["progress"]
        .as_array()
        .expect("progress")
        .iter()
        .map(|u| u["progress"].as_f64().expect("a number"))
        .collect();
    // 2,000 steps, every 10th repeating the value before it: 1,800 distinct values, each
    // forwarded once, in order; the repeats are not.
    let expected: Vec<f64> = (1..=1800).map(f64::from).collect();
    assert_eq!(values, expected);
    assert_eq!(out["result"]["isError"], false);
}

#[test]
fn a_helper_that_holds_stdout_does_not_hold_the_call_and_is_killed() {
    let t = tag("detach");
    let result = call(&hostile(&["--timeout", "5"]), "detach", json!({"tag": t}));
    let s = checked(&result);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(s["summary"]["ok"], true);
    let elapsed = result["_elapsed"].as_f64().expect("elapsed");
    assert!(
        elapsed < 5.0,
        "the call did not wait for the helper: {elapsed} s"
    );
    assert_eq!(left(&t), Vec::<String>::new());
}

#[test]
fn the_timeout_is_a_hard_limit_and_kills_what_left_the_group() {
    let t = tag("timeout");
    let result = call(&hostile(&["--timeout", "2"]), "hang", json!({"tag": t}));
    let s = checked(&result);
    assert_eq!(result["isError"], true);
    assert_eq!(s["adapter_error"]["code"], "CALL_TIMED_OUT");
    assert_eq!(
        s["adapter_error"]["retryable"], true,
        "a read-only command may be retried"
    );
    let elapsed = result["_elapsed"].as_f64().expect("elapsed");
    assert!(
        (2.0..4.0).contains(&elapsed),
        "ended at the deadline: {elapsed} s"
    );
    assert_eq!(left(&t), Vec::<String>::new());
}

#[test]
fn a_timed_out_mutation_is_retryable_only_with_an_idempotency_key() {
    let t = tag("write");
    let out = python(
        "calls",
        &hostile(&["--timeout", "1"]),
        json!({"calls": [
            {"tool": "write", "arguments": {"tag": t}},
            {"tool": "write", "arguments": {"tag": t, "idempotency_key": "k-1"}},
        ]}),
    );
    let results = out["results"].as_array().expect("results");
    let unkeyed = checked(&results[0]);
    assert_eq!(unkeyed["adapter_error"]["category"], "timeout");
    assert_eq!(unkeyed["adapter_error"]["retryable"], false);
    assert!(unkeyed["adapter_error"]["message"]
        .as_str()
        .expect("message")
        .contains("unknown"));
    assert_eq!(checked(&results[1])["adapter_error"]["retryable"], true);
    assert_eq!(left(&t), Vec::<String>::new());
}

#[test]
fn cancelling_a_call_kills_its_group_and_what_left_it() {
    let t = tag("cancel");
    let out = python(
        "cancel",
        &hostile(&[]),
        json!({"tool": "hang", "arguments": {"tag": t}, "marker": t, "program": "python3",
               "after": {"tool": "detach", "arguments": {"tag": t}}}),
    );
    assert_eq!(out["cancelled"], true);
    assert_eq!(out["left"], json!([]), "{out}");
    assert_eq!(out["after"]["isError"], false, "the server goes on serving");
    assert_eq!(left(&t), Vec::<String>::new());
}

/// Stops the server `how` during a `hang` call (the CLI, a helper in its group, a helper in
/// its own session): the server exits and nothing of the call is left, within seconds.
fn stop(how: &str) {
    let t = tag(&format!("stop-{how}"));
    let out = python(
        "stop",
        &hostile(&[]),
        json!({"tool": "hang", "arguments": {"tag": t}, "tag": t, "how": how, "expect": 3}),
    );
    // At least the CLI and its two helpers (a fork caught before its exec shows its
    // parent's argv, and counts once more).
    let seen = out["seen"].as_u64().expect("seen");
    assert!(seen >= 3, "the CLI and its two helpers ran: {out}");
    assert_eq!(out["servers"], 1);
    assert_eq!(out["left"], json!([]), "{how}: {out}");
    assert_eq!(out["server_alive"], false, "{how}: {out}");
    let elapsed = out["elapsed"].as_f64().expect("elapsed");
    assert!(elapsed < 5.0, "{how}: stopped in {elapsed} s");
    assert_eq!(left(&t), Vec::<String>::new());
}

#[test]
fn closing_stdin_kills_every_process_of_a_running_call() {
    stop("stdin");
}

#[test]
fn sigterm_kills_every_process_of_a_running_call() {
    stop("TERM");
}

#[test]
fn sigint_kills_every_process_of_a_running_call() {
    stop("INT");
}

#[test]
fn sighup_kills_every_process_of_a_running_call() {
    stop("HUP");
}

/// SIGKILL leaves the adapter no chance to act: its watchdog, a process of its own that sees
/// the adapter's end as the end of a pipe, kills what the call started.
#[test]
fn sigkill_of_the_adapter_leaves_no_process_of_a_running_call() {
    stop("KILL");
}

/// The size of a result's content and structured content, as JSON: what the response carries.
fn response_size(result: &Value) -> usize {
    result["content"].to_string().len() + result["structuredContent"].to_string().len()
}

#[test]
fn output_past_max_output_is_truncated_and_the_read_only_cli_stopped() {
    const MAX: usize = 200_000;
    let command = hostile(&["--max-output", &MAX.to_string()]);
    let out = python(
        "calls",
        &command,
        json!({"calls": [{"tool": "flood"}, {"tool": "huge"}]}),
    );
    for result in out["results"].as_array().expect("results") {
        let s = checked(result);
        assert_eq!(result["isError"], false, "{}", result["content"][0]);
        assert_eq!(s["truncated"], true);
        assert!(s["events"].as_array().expect("events").len() > 100);
        let size = response_size(result);
        assert!(size <= MAX, "a response of {size} bytes");
        assert!(
            result["_elapsed"].as_f64().expect("elapsed") < 10.0,
            "stopped, not read to its end"
        );
    }
}

#[test]
fn a_500_mb_output_is_cut_under_the_default_max_output() {
    let out = python(
        "progress",
        &hostile(&[]),
        json!({"tool": "huge", "arguments": {}}),
    );
    let result = &out["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["truncated"], true);
    let size = response_size(result);
    assert!(
        size <= 4 << 20 && size > 3 << 20,
        "a response of {size} bytes"
    );
}

#[test]
fn unbounded_streams_are_bounded_by_max_events_and_max_duration() {
    let command = hostile(&[]);
    let listed = python("list", &command, json!({}));
    let watch = crate::mcp::tool(&listed["tools"], "watch");
    let props = &watch["inputSchema"]["properties"];
    assert_eq!(props["max_duration_ms"]["type"], "integer");
    assert_eq!(props["max_events"]["type"], "integer");
    assert!(
        crate::mcp::tool(&listed["tools"], "hang")["inputSchema"]["properties"]
            .get("max_events")
            .is_none()
    );

    let out = python(
        "calls",
        &command,
        json!({"calls": [
            {"tool": "watch", "arguments": {"max_events": 5}},
            // Long enough for the CLI to start and write on a loaded machine (a note every
            // 20 ms once it runs), short against the 300 s default.
            {"tool": "watch", "arguments": {"max_duration_ms": 1500}},
        ]}),
    );
    let results = out["results"].as_array().expect("results");
    let by_events = checked(&results[0]);
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(by_events["stopped"]["reason"], "max_events");
    assert_eq!(by_events["stopped"]["retryable"], false);
    let notes = by_events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "note")
        .count();
    assert_eq!(notes, 5);
    assert_eq!(
        by_events["summary"]["reason"], "cancelled",
        "the CLI's own summary after SIGINT"
    );

    let by_time = checked(&results[1]);
    assert_eq!(by_time["stopped"]["reason"], "max_duration");
    let elapsed = results[1]["_elapsed"].as_f64().expect("elapsed");
    assert!(
        (1.4..6.0).contains(&elapsed),
        "stopped at 1.5 s: {elapsed} s"
    );
    assert!(!by_time["events"].as_array().expect("events").is_empty());
}
