//! The MCP conformance suite (`@modelcontextprotocol/conformance`, pinned, on Node.js 22 from
//! npm, installed by the tests into `target/mcp-clients/`) run over Streamable HTTP against
//! `aoi mcp --listen` serving `tests/data/mcp/conformance.py`, a plain-Python Machine Mode CLI
//! whose commands are the tools the suite's scenarios call.
//!
//! Two pins run: 0.1.16 (`--suite all`, the suite as it scored servers before it had
//! revisions), and the newest 0.2.x release, once per revision it scores (`--requirements
//! 2026-07-28` on the stateless wire, `--requirements 2025-11-25` on the stateful one). Every
//! scenario a run executes is in that run's table, with what this test requires of it: a pass;
//! a pass but for the checks named, each with the reason it does not apply; or not applicable
//! to a tools-only server, with the reason. A scenario a pin adds that its table does not name
//! fails the test, so a new pin is read before it is trusted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::{data, data_home, path};
use crate::mcp_clients::{npm_cached, NODE};
use crate::mcp_protocol::HttpServer;
use crate::support::aoi;

/// The suite as it was before revisions: one run of every server scenario.
const CONFORMANCE_0_1: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The newest 0.2.x release: scenarios scored per revision (`requirements/<revision>.yaml`).
const CONFORMANCE_0_2: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/// What the test requires of one scenario.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Every check passes (a `WARNING` is the suite's SHOULD: allowed, and printed).
    Pass,
    /// Every check passes but these, which fail as the suite's "not testable" because the
    /// scenario needs a tool a CLI cannot be: `(check id, why)`.
    PassExcept(&'static [(&'static str, &'static str)]),
    /// Asks for something a tools-only server in front of a CLI does not offer.
    NotApplicable(&'static str),
}

use Expect::{NotApplicable, Pass, PassExcept};

const NO_LOGGING: &str = "logging is a capability of its own, which aoi mcp does not declare \
(so -32601 is the answer MCP asks for); Machine Mode has no log-message event: aoi:warning is a \
recoverable issue, not a log line, and stderr is undeclared diagnostics";
const NO_MEDIA: &str = "a Machine Mode result is a stream of JSON events; aoi mcp returns text \
and structuredContent, never image, audio or embedded-resource blocks";
const NO_CLIENT_REQUESTS: &str = "the tool would ask the client mid-call (sampling/createMessage \
or elicitation/create); a CLI in machine mode never prompts (AOI §1.3) and has no channel back \
to the client";
const NO_INPUT_REQUIRED: &str = "an input-required result asks the client for elicitation, \
sampling or roots mid-call and resumes with its answer; a CLI in machine mode never prompts \
(AOI §1.3), so no tool of aoi mcp returns one";
const NO_RESOURCES: &str = "resources: aoi mcp serves tools only";
const NO_PROMPTS: &str = "prompts: aoi mcp serves tools only";
const NO_COMPLETIONS: &str =
    "completions are for prompt and resource-template arguments; aoi mcp serves neither";
const NO_TASKS: &str = "the tasks extension (io.modelcontextprotocol/tasks), which the suite \
does not score: aoi mcp does not negotiate it, and a call is answered when the CLI exits";

/// What a tools-only server does not offer, on every wire.
const NOT_SERVED: &[(&str, Expect)] = &[
    ("completion-complete", NotApplicable(NO_COMPLETIONS)),
    ("tools-call-image", NotApplicable(NO_MEDIA)),
    ("tools-call-audio", NotApplicable(NO_MEDIA)),
    ("tools-call-embedded-resource", NotApplicable(NO_MEDIA)),
    ("tools-call-mixed-content", NotApplicable(NO_MEDIA)),
    ("resources-list", NotApplicable(NO_RESOURCES)),
    ("resources-read-text", NotApplicable(NO_RESOURCES)),
    ("resources-read-binary", NotApplicable(NO_RESOURCES)),
    ("resources-templates-read", NotApplicable(NO_RESOURCES)),
    ("prompts-list", NotApplicable(NO_PROMPTS)),
    ("prompts-get-simple", NotApplicable(NO_PROMPTS)),
    ("prompts-get-with-args", NotApplicable(NO_PROMPTS)),
    ("prompts-get-embedded-resource", NotApplicable(NO_PROMPTS)),
    ("prompts-get-with-image", NotApplicable(NO_PROMPTS)),
];

/// What a tools-only server does not offer on the stateful wire besides [`NOT_SERVED`],
/// scored alike by 0.1.16 and by 0.2.x at 2025-11-25.
const STATEFUL_NOT_APPLICABLE: &[(&str, Expect)] = &[
    ("logging-set-level", NotApplicable(NO_LOGGING)),
    ("tools-call-with-logging", NotApplicable(NO_LOGGING)),
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
    ("resources-subscribe", NotApplicable(NO_RESOURCES)),
    ("resources-unsubscribe", NotApplicable(NO_RESOURCES)),
];

/// The tools scenarios both stateful runs must pass.
const STATEFUL_PASS: &[(&str, Expect)] = &[
    ("server-initialize", Pass),
    ("ping", Pass),
    ("tools-list", Pass),
    ("tools-call-simple-text", Pass),
    ("tools-call-error", Pass),
    ("tools-call-with-progress", Pass),
    ("server-sse-multiple-streams", Pass),
    ("dns-rebinding-protection", Pass),
];

/// `--suite all` of 0.1.16: every server scenario, and what it must do.
fn scenarios_0_1() -> Vec<(&'static str, Expect)> {
    let mut table = [STATEFUL_PASS, NOT_SERVED, STATEFUL_NOT_APPLICABLE].concat();
    table.extend([("server-sse-polling", Pass), ("json-schema-2020-12", Pass)]);
    table
}

/// `--requirements 2025-11-25` of 0.2.x: the stateful wire (`initialize`, sessions). The
/// last three are run but not scored (added after the anchor release, or pending).
fn scenarios_0_2_2025_11_25() -> Vec<(&'static str, Expect)> {
    let mut table = [STATEFUL_PASS, NOT_SERVED, STATEFUL_NOT_APPLICABLE].concat();
    table.extend([
        ("server-session-lifecycle", Pass),
        ("json-schema-2020-12", Pass),
        ("server-sse-polling", Pass),
    ]);
    table
}

/// `server-stateless` probes three behaviours through diagnostic tools a CLI cannot be.
const STATELESS_NOT_TESTABLE: &[(&str, &str)] = &[
    (
        "sep-2575-server-rejects-undeclared-capability",
        "needs a tool `test_missing_capability` that requires the client's sampling capability; \
         no tool of aoi mcp needs a client capability (a CLI in machine mode never asks the \
         client for anything, AOI §1.3), so there is nothing to reject",
    ),
    (
        "sep-2575-missing-capability-http-400",
        "the HTTP status of the -32021 above, which no call of aoi mcp can cause",
    ),
    (
        "sep-2575-http-server-no-independent-requests-on-stream",
        "needs a tool `test_streaming_elicitation` that elicits mid-call; aoi mcp sends no \
         request to the client on any stream (only progress notifications and the result)",
    ),
];

/// `caching` asks every list method for its hints; those of prompts and resources are -32601.
const CACHING_NOT_SERVED: &[(&str, &str)] = &[
    ("sep-2549-prompts-list-caching-hints", NO_PROMPTS),
    ("sep-2549-resources-list-caching-hints", NO_RESOURCES),
    (
        "sep-2549-resources-templates-list-caching-hints",
        NO_RESOURCES,
    ),
];

/// `--requirements 2026-07-28` of 0.2.x: the stateless wire (`server/discover`, per-request
/// `_meta`, no session), besides [`NOT_SERVED`]. The tasks extension and the pending
/// scenarios are run, not scored.
const STATELESS: &[(&str, Expect)] = &[
    ("server-stateless", PassExcept(STATELESS_NOT_TESTABLE)),
    ("tools-list", Pass),
    ("tools-call-simple-text", Pass),
    ("tools-call-error", Pass),
    ("tools-call-with-progress", Pass),
    ("server-sse-multiple-streams", Pass),
    ("dns-rebinding-protection", Pass),
    ("caching", PassExcept(CACHING_NOT_SERVED)),
    ("sep-2164-resource-not-found", NotApplicable(NO_RESOURCES)),
    (
        "input-required-result-basic-elicitation",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-basic-sampling",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-basic-list-roots",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-request-state",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-multiple-input-requests",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-multi-round",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-missing-input-response",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-non-tool-request",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-result-type",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-unsupported-methods",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-tampered-state",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-capability-check",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-ignore-extra-params",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    (
        "input-required-result-validate-input",
        NotApplicable(NO_INPUT_REQUIRED),
    ),
    ("tasks-lifecycle", NotApplicable(NO_TASKS)),
    ("tasks-capability-negotiation", NotApplicable(NO_TASKS)),
    ("tasks-wire-fields", NotApplicable(NO_TASKS)),
    ("tasks-request-state-removal", NotApplicable(NO_TASKS)),
    ("tasks-mrtr-input", NotApplicable(NO_TASKS)),
    ("tasks-request-headers", NotApplicable(NO_TASKS)),
    ("tasks-dispatch-and-envelope", NotApplicable(NO_TASKS)),
    ("tasks-status-notifications", NotApplicable(NO_TASKS)),
    ("tasks-required-task-error", NotApplicable(NO_TASKS)),
    ("tasks-mrtr-composition", NotApplicable(NO_TASKS)),
    ("json-schema-2020-12", Pass),
    ("http-header-validation", Pass),
    ("http-custom-header-server-validation", Pass),
];

/// The installed suite: Node.js 22 and the suite's entry point.
struct Suite {
    package: &'static str,
    node: PathBuf,
    entry: PathBuf,
}

fn suite(package: &'static str) -> Suite {
    let prefix = npm_cached(&[NODE, package]);
    let modules = prefix.join("node_modules");
    Suite {
        package,
        node: modules.join(".bin").join("node"),
        entry: modules.join("@modelcontextprotocol/conformance/dist/index.js"),
    }
}

/// `conformance server --url URL SELECT… --output-dir OUT`, bounded by `limit`; what it
/// printed.
fn run_suite(suite: &Suite, url: &str, select: &[&str], out: &Path, limit: Duration) -> String {
    let log = out.with_extension("log");
    let file = std::fs::File::create(&log).expect("create the suite's log");
    let mut child = Command::new(&suite.node)
        .arg(&suite.entry)
        .args(["server", "--url", url])
        .args(select)
        .arg("--output-dir")
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

/// What one scenario did against what its row requires: the report's lines, and the problem
/// when it did not do it.
fn judge(scenario: &str, expect: Expect, checks: &[Value]) -> (Vec<String>, Option<String>) {
    let failed = with_status(checks, "FAILURE");
    let warned = with_status(checks, "WARNING");
    let passed = with_status(checks, "SUCCESS").len();
    let excused: BTreeSet<&str> = match expect {
        PassExcept(checks) => checks.iter().map(|(id, _)| *id).collect(),
        Pass | NotApplicable(_) => BTreeSet::new(),
    };
    let failed_ids: BTreeSet<&str> = failed.iter().filter_map(|c| c["id"].as_str()).collect();
    let verdict = match expect {
        NotApplicable(_) => "not applicable",
        Pass | PassExcept(_) if failed_ids == excused => "pass",
        Pass | PassExcept(_) => "FAIL",
    };
    let mut report = vec![format!(
        "{scenario:46} {verdict} ({passed} passed, {} failed, {} warnings)",
        failed.len(),
        warned.len(),
    )];
    report.extend(
        warned
            .iter()
            .map(|w| format!("    warning: {}", describe(w))),
    );
    match expect {
        NotApplicable(why) => report.push(format!("    {why}")),
        PassExcept(checks) => {
            report.extend(checks.iter().map(|(id, why)| format!("    {id}: {why}")));
        }
        Pass => {}
    }
    let problem = match expect {
        NotApplicable(_) => None,
        Pass | PassExcept(_) if passed > 0 && failed_ids == excused => None,
        Pass | PassExcept(_) => Some(format!(
            "{scenario}: must pass{}; {passed} checks passed, failed: {}",
            if excused.is_empty() {
                String::new()
            } else {
                format!(" but for exactly {excused:?}")
            },
            failed
                .iter()
                .map(|c| describe(c))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    };
    (report, problem)
}

/// Runs `suite` with `select` against the fixture behind `aoi mcp --listen` and holds every
/// scenario to `table`.
fn suite_does_what_the_table_says(
    package: &'static str,
    select: &[&str],
    table: &[(&str, Expect)],
) {
    let suite = suite(package);
    let label = format!("{} {}", suite.package, select.join(" "));
    let home = data_home("conformance");
    let fixture = data("conformance.py");
    let http = HttpServer::start(&home, &["--timeout", "20"], &[path(&fixture)]);
    let out = home.join("results");
    let log = run_suite(&suite, &http.url, select, &out, Duration::from_secs(300));
    assert!(
        log.contains("=== SUMMARY ==="),
        "{label}: the suite did not finish its run:\n{log}"
    );
    let ran = checks_by_scenario(&out);

    let rows: BTreeMap<&str, Expect> = table.iter().copied().collect();
    assert_eq!(rows.len(), table.len(), "a scenario is listed twice");
    let listed: BTreeSet<&str> = rows.keys().copied().collect();
    let run: BTreeSet<&str> = ran.keys().map(String::as_str).collect();
    assert_eq!(
        run, listed,
        "{label}: the suite's scenarios and this test's table differ: read the new ones and \
         say what each must do\n{log}"
    );

    let mut problems = Vec::new();
    let mut report = Vec::new();
    for (scenario, expect) in table {
        let (lines, problem) = judge(scenario, *expect, &ran[*scenario]);
        report.extend(lines);
        problems.extend(problem);
    }
    assert!(
        problems.is_empty(),
        "conformance scenarios that do not do what this test requires:\n{}\n\n{label} \
         against aoi mcp --listen -- conformance.py:\n{}\n\nthe suite printed:\n{log}",
        problems.join("\n"),
        report.join("\n")
    );
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn conformance_0_1_passes_every_scenario_that_applies_to_a_tools_only_server() {
    suite_does_what_the_table_says(CONFORMANCE_0_1, &["--suite", "all"], &scenarios_0_1());
}

#[test]
fn conformance_0_2_passes_every_scored_scenario_of_2026_07_28_that_applies() {
    suite_does_what_the_table_says(
        CONFORMANCE_0_2,
        &["--requirements", "2026-07-28"],
        &[NOT_SERVED, STATELESS].concat(),
    );
}

#[test]
fn conformance_0_2_passes_every_scored_scenario_of_2025_11_25_that_applies() {
    suite_does_what_the_table_says(
        CONFORMANCE_0_2,
        &["--requirements", "2025-11-25"],
        &scenarios_0_2_2025_11_25(),
    );
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
    let results = &aoi_test::lint_results(&out.stdout);
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
