//! The MCP conformance suite (`@modelcontextprotocol/conformance`, pinned, on Node.js 22 from
//! npm, installed by the tests into `target/mcp-clients/`) run over Streamable HTTP against
//! `aoi mcp --listen` serving `tests/data/mcp/conformance.py`, a plain-Python Machine Mode CLI
//! whose commands are the tools the suite's scenarios call.
//!
//! Every scenario the suite runs is in [`SCENARIOS`], with what this test requires of it: a
//! pass, a documented divergence (failing exactly the checks named, passing the others), or not
//! applicable to a tools-only server, with the reason. A scenario the pin adds that the table
//! does not name fails the test, so a new pin is read before it is trusted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::{data, data_home, path};
use crate::mcp_clients::{npm_cached, NODE};
use crate::mcp_protocol::HttpServer;
use crate::support::aoi;

/// The conformance suite, pinned: the version these scenarios were read from.
const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.16";

/// What the test requires of one scenario.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Every check passes (a `WARNING` is the suite's SHOULD: allowed, and printed).
    Pass,
    /// Asks for something a tools-only server in front of a CLI does not offer.
    NotApplicable(&'static str),
}

use Expect::{NotApplicable, Pass};

const NO_LOGGING: &str = "logging is a capability of its own, which aoi mcp does not declare \
(so -32601 is the answer MCP asks for); Machine Mode has no log-message event: aoi:warning is a \
recoverable issue, not a log line, and stderr is undeclared diagnostics";
const NO_MEDIA: &str = "a Machine Mode result is a stream of JSON events; aoi mcp returns text \
and structuredContent, never image, audio or embedded-resource blocks";
const NO_CLIENT_REQUESTS: &str = "the tool would ask the client mid-call (sampling/createMessage \
or elicitation/create); a CLI in machine mode never prompts (AOI §1.3) and has no channel back \
to the client";
const NO_RESOURCES: &str = "resources: aoi mcp serves tools only";
const NO_PROMPTS: &str = "prompts: aoi mcp serves tools only";

/// Every server scenario of the pinned suite (`--suite all`), and what it must do.
const SCENARIOS: &[(&str, Expect)] = &[
    ("server-initialize", Pass),
    ("ping", Pass),
    ("tools-list", Pass),
    ("tools-call-simple-text", Pass),
    ("tools-call-error", Pass),
    ("tools-call-with-progress", Pass),
    ("server-sse-polling", Pass),
    ("server-sse-multiple-streams", Pass),
    ("dns-rebinding-protection", Pass),
    ("json-schema-2020-12", Pass),
    ("logging-set-level", NotApplicable(NO_LOGGING)),
    ("tools-call-with-logging", NotApplicable(NO_LOGGING)),
    (
        "completion-complete",
        NotApplicable(
            "completions are for prompt and resource-template arguments; aoi mcp serves neither",
        ),
    ),
    ("tools-call-image", NotApplicable(NO_MEDIA)),
    ("tools-call-audio", NotApplicable(NO_MEDIA)),
    ("tools-call-embedded-resource", NotApplicable(NO_MEDIA)),
    ("tools-call-mixed-content", NotApplicable(NO_MEDIA)),
    ("tools-call-sampling", NotApplicable(NO_CLIENT_REQUESTS)),
    ("tools-call-elicitation", NotApplicable(NO_CLIENT_REQUESTS)),
    (
        "elicitation-sep1034-defaults",
        NotApplicable(NO_CLIENT_REQUESTS),
    ),
    (
        "elicitation-sep1330-enums",
        NotApplicable(NO_CLIENT_REQUESTS),
    ),
    ("resources-list", NotApplicable(NO_RESOURCES)),
    ("resources-read-text", NotApplicable(NO_RESOURCES)),
    ("resources-read-binary", NotApplicable(NO_RESOURCES)),
    ("resources-templates-read", NotApplicable(NO_RESOURCES)),
    ("resources-subscribe", NotApplicable(NO_RESOURCES)),
    ("resources-unsubscribe", NotApplicable(NO_RESOURCES)),
    ("prompts-list", NotApplicable(NO_PROMPTS)),
    ("prompts-get-simple", NotApplicable(NO_PROMPTS)),
    ("prompts-get-with-args", NotApplicable(NO_PROMPTS)),
    ("prompts-get-embedded-resource", NotApplicable(NO_PROMPTS)),
    ("prompts-get-with-image", NotApplicable(NO_PROMPTS)),
];

/// The installed suite: Node.js 22 and the suite's entry point.
struct Suite {
    node: PathBuf,
    entry: PathBuf,
}

fn suite() -> Suite {
    let prefix = npm_cached(&[NODE, CONFORMANCE]);
    let modules = prefix.join("node_modules");
    Suite {
        node: modules.join(".bin").join("node"),
        entry: modules.join("@modelcontextprotocol/conformance/dist/index.js"),
    }
}

/// `conformance server --url URL --suite all -o OUT`, bounded by `limit`; what it printed.
fn run_suite(suite: &Suite, url: &str, out: &Path, limit: Duration) -> String {
    let log = out.with_extension("log");
    let file = std::fs::File::create(&log).expect("create the suite's log");
    let mut child = Command::new(&suite.node)
        .arg(&suite.entry)
        .args(["server", "--url", url, "--suite", "all", "--output-dir"])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("dup the log"))
        .stderr(file)
        .spawn()
        .expect("the conformance suite starts");
    let started = Instant::now();
    while child.try_wait().expect("wait for the suite").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the conformance suite ran over {limit:?}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(&log).expect("read the suite's log")
}

/// The checks of each scenario the suite saved under `out`
/// (`server-<scenario>-<timestamp>/checks.json`).
fn checks_by_scenario(out: &Path) -> BTreeMap<String, Vec<Value>> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(out).expect("the suite's output directory") {
        let dir = entry.expect("a directory entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        // The timestamp is `2026-12-01T13-36-55-758Z`: 24 characters and a dash before it.
        let Some(scenario) = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().checked_sub(25)?))
        else {
            continue;
        };
        let text = std::fs::read_to_string(dir.join("checks.json"))
            .unwrap_or_else(|e| panic!("{}/checks.json: {e}", dir.display()));
        let checks: Vec<Value> = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}/checks.json is not a JSON array: {e}", dir.display()));
        let previous = found.insert(scenario.to_owned(), checks);
        assert!(previous.is_none(), "scenario {scenario} ran twice");
    }
    found
}

fn with_status<'a>(checks: &'a [Value], status: &str) -> Vec<&'a Value> {
    checks.iter().filter(|c| c["status"] == status).collect()
}

fn describe(check: &Value) -> String {
    format!(
        "{} ({})",
        check["id"].as_str().unwrap_or("?"),
        check["errorMessage"]
            .as_str()
            .or(check["description"].as_str())
            .unwrap_or("")
    )
}

#[test]
fn conformance_suite_passes_every_scenario_that_applies_to_a_tools_only_server() {
    let suite = suite();
    let home = data_home("conformance");
    let fixture = data("conformance.py");
    let http = HttpServer::start(&home, &["--timeout", "20"], &[path(&fixture)]);
    let out = home.join("results");
    let log = run_suite(&suite, &http.url, &out, Duration::from_secs(300));
    assert!(
        log.contains("=== SUMMARY ==="),
        "the suite did not finish its run:\n{log}"
    );
    let ran = checks_by_scenario(&out);

    let table: BTreeMap<&str, Expect> = SCENARIOS.iter().copied().collect();
    assert_eq!(table.len(), SCENARIOS.len(), "a scenario is listed twice");
    let listed: BTreeSet<&str> = table.keys().copied().collect();
    let run: BTreeSet<&str> = ran.keys().map(String::as_str).collect();
    assert_eq!(
        run, listed,
        "the suite's scenarios and this test's table differ: read the new ones in {CONFORMANCE} \
         and say what each must do\n{log}"
    );

    let mut problems = Vec::new();
    let mut report = Vec::new();
    for (scenario, expect) in SCENARIOS {
        let checks = &ran[*scenario];
        let failed = with_status(checks, "FAILURE");
        let warned = with_status(checks, "WARNING");
        let passed = with_status(checks, "SUCCESS").len();
        let verdict = if failed.is_empty() { "pass" } else { "FAIL" };
        report.push(format!(
            "{scenario:32} {verdict} ({passed} passed, {} failed, {} warnings){}",
            failed.len(),
            warned.len(),
            match expect {
                NotApplicable(_) => "  not applicable",
                Pass => "",
            }
        ));
        for w in &warned {
            report.push(format!("    warning: {}", describe(w)));
        }
        match expect {
            NotApplicable(why) => report.push(format!("    {why}")),
            Pass => {}
        }
        match expect {
            Pass => {
                if passed == 0 || !failed.is_empty() {
                    problems.push(format!(
                        "{scenario}: must pass; {passed} checks passed, failed: {}",
                        failed
                            .iter()
                            .map(|c| describe(c))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ));
                }
            }
            NotApplicable(_) => {}
        }
    }
    assert!(
        problems.is_empty(),
        "conformance scenarios that do not do what this test requires:\n{}\n\n{CONFORMANCE} \
         against aoi mcp --listen -- conformance.py:\n{}\n\nthe suite printed:\n{log}",
        problems.join("\n"),
        report.join("\n")
    );
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn conformance_fixture_is_a_conforming_machine_mode_cli() {
    // The suite's tools are served from a CLI that aoi lint passes, so a scenario that fails
    // is the adapter's doing, not the fixture's.
    let home = data_home("conformance-lint");
    let out = Command::new(aoi())
        .args(["lint", "--allow-incomplete", "--format", "jsonl", "--tool"])
        .arg(data("conformance.py"))
        .current_dir(&home)
        .stdin(Stdio::null())
        .output()
        .expect("aoi lint runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "aoi:summary")
        .unwrap_or_else(|| panic!("aoi lint wrote no summary:\n{stdout}"));
    let results = &summary["properties"]["results"];
    assert_eq!(
        (out.status.code(), &results["fail"]),
        (Some(0), &json!(0)),
        "aoi lint fails the fixture:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        results["pass"].as_u64().unwrap_or(0) >= 40,
        "aoi lint ran too few checks to vouch for the fixture: {results}"
    );
    let _ = std::fs::remove_dir_all(&home);
}
