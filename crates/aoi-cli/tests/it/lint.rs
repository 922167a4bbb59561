//! `aoi lint` against a corpus of deliberately broken tools (§18.2): for every check, a tool
//! that fails exactly that check, and conforming tools on which no check may fail (a false
//! positive is a test failure).
//!
//! The Rust corpus is `aoi-lint-target` (crates/aoi-test), whose fault NN is switched on by
//! running it under the name `aoi-lint-target-fault-NN`. The script corpus, in Python and
//! POSIX shell, lives in `tests/data/lint-corpus` and proves lint is language-neutral.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use aoi::read::Event;

/// The commands of `aoi-lint-target`, in capabilities order.
const COMMANDS: [&str; 6] = ["list", "create", "delete", "import", "watch", "doctor"];

/// One (check × command) result from lint's jsonl output.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Row {
    pub(crate) check: u64,
    pub(crate) command: String,
    pub(crate) outcome: String,
    pub(crate) detail: String,
}

/// An empty directory to run lint in, so that no `./aoi-lint.toml` is picked up.
pub(crate) fn scratch() -> &'static Path {
    // One per test process, kept for its whole life: a static is never dropped.
    static DIR: OnceLock<crate::support::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = crate::support::temp_dir("lint-it");
        std::fs::create_dir_all(dir.join("work")).unwrap();
        dir
    })
}

/// `aoi-lint-target` under the name that switches fault `n` on (`None`: its own name).
///
/// A hard link, not a symlink: `aoi lint --tool` canonicalizes the path it is given, which
/// would resolve a symlink back to `aoi-lint-target`. The links sit beside the binary (same
/// file system, so linking is free), made anew on each run so that they follow a rebuild, and
/// renamed into place so that concurrent test runs never see a half-made one.
fn target(fault: Option<u8>) -> PathBuf {
    let bin = aoi_test::workspace_bin("aoi-lint-target");
    let Some(n) = fault else { return bin };
    let dir = bin.parent().unwrap().join("aoi-lint-corpus");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("aoi-lint-target-fault-{n:02}"));
    let tmp = dir.join(format!(".fault-{n:02}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if std::fs::hard_link(&bin, &tmp).is_err() {
        std::fs::copy(&bin, &tmp).unwrap();
    }
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// A variant of the conforming shell tool `sh-leak-env.sh`, written to the scratch directory
/// as `name`: each `(from, to)` replaced (every `from` must be there), executable.
fn sh_variant(name: &str, replacements: &[(&str, &str)]) -> PathBuf {
    let mut source = std::fs::read_to_string(corpus("sh-leak-env.sh")).unwrap();
    for (from, to) in replacements {
        assert!(
            source.contains(from),
            "{name}: `{from}` is not in sh-leak-env.sh"
        );
        source = source.replace(from, to);
    }
    let tool = scratch().join(name);
    std::fs::write(&tool, source).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    tool
}

pub(crate) fn corpus(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lint-corpus")
        .join(script)
}

fn aoi_lint(args: &[&str]) -> Output {
    Command::new(aoi_test::workspace_bin("aoi"))
        .arg("lint")
        .args(args)
        .current_dir(scratch().join("work"))
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

/// Runs `aoi lint --tool TOOL --format jsonl ARGS`, checks that lint's own stream conforms and
/// that its exit status agrees with the results, and returns the results.
pub(crate) fn lint(tool: &Path, args: &[&str]) -> Vec<Row> {
    let tool = tool.to_str().unwrap();
    let mut all = vec!["--tool", tool, "--format", "jsonl", "--jobs", "4"];
    all.extend_from_slice(args);
    let out = aoi_lint(&all);
    rows(&out)
}

fn rows(out: &Output) -> Vec<Row> {
    aoi_test::assert_conforms(&out.stdout);
    let mut rows = Vec::new();
    for event in aoi_test::events(&out.stdout) {
        if let Event::Check(check) = event {
            let props = check.properties.clone().unwrap_or_default();
            rows.push(Row {
                check: props["check"].as_u64().unwrap(),
                command: props["command"].as_str().unwrap().to_owned(),
                outcome: props["outcome"].as_str().unwrap().to_owned(),
                detail: check.detail.clone().unwrap_or_default(),
            });
        }
    }
    let failed = rows.iter().any(|r| r.outcome == "fail");
    let incomplete = rows.iter().any(|r| r.outcome == "could_not_run");
    assert_eq!(
        out.status.code(),
        Some(match (failed, incomplete) {
            (true, _) => 1,
            (false, true) => 2,
            (false, false) => 0,
        }),
        "exit status disagrees with the results: {rows:#?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rows
}

/// The outcome of `check` on `command` (its result, not its advice); panics when there is none.
pub(crate) fn outcome_of<'a>(rows: &'a [Row], check: u64, command: &str) -> &'a str {
    rows.iter()
        .find(|r| r.check == check && r.command == command && r.outcome != "advice")
        .map(|r| r.outcome.as_str())
        .unwrap_or_else(|| panic!("no result of check {check} on {command}: {rows:#?}"))
}

/// How many (check × command) results `rows` holds: the profile's advice rows aside.
pub(crate) fn checks_of(rows: &[Row]) -> usize {
    rows.iter().filter(|r| r.outcome != "advice").count()
}

/// Asserts that the failures are exactly `expected` (check, command) and everything else
/// passed or was not applicable.
pub(crate) fn assert_fails_exactly(what: &str, rows: &[Row], expected: &[(u64, &str)]) {
    assert_fails_within(what, rows, expected, &[]);
}

/// Like [`assert_fails_exactly`], where the failures in `racy` may or may not be there: the
/// fault is real for them too, and whether a probe catches it depends on timing.
pub(crate) fn assert_fails_within(
    what: &str,
    rows: &[Row],
    expected: &[(u64, &str)],
    racy: &[(u64, &str)],
) {
    let failed: BTreeSet<(u64, &str)> = rows
        .iter()
        .filter(|r| r.outcome == "fail")
        .map(|r| (r.check, r.command.as_str()))
        .collect();
    let expected: BTreeSet<(u64, &str)> = expected.iter().copied().collect();
    let failed: BTreeSet<(u64, &str)> = failed.into_iter().filter(|f| !racy.contains(f)).collect();
    let other: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            !matches!(
                r.outcome.as_str(),
                "pass" | "not_applicable" | "fail" | "advice"
            )
        })
        .collect();
    assert!(
        failed == expected && other.is_empty(),
        "{what}: expected to fail exactly {expected:?}, failed {failed:?}; not pass or n/a: {other:#?}\nall failures: {:#?}",
        rows.iter().filter(|r| r.outcome == "fail").collect::<Vec<_>>()
    );
}

#[test]
fn the_clean_sdk_tool_passes_every_check_with_no_config() {
    let rows = lint(&target(None), &[]);
    assert_eq!(checks_of(&rows), 16 * COMMANDS.len());
    assert_fails_exactly("aoi-lint-target", &rows, &[]);
    // Every check is exercised somewhere: the tool covers the whole of §18.2.
    for check in 1..=16 {
        assert!(
            rows.iter().any(|r| r.check == check && r.outcome == "pass"),
            "check {check} passed on no command"
        );
    }
    // And where a check applies is what the commands say of themselves.
    let outcome = |check: u64, command: &str| outcome_of(&rows, check, command);
    assert_eq!(outcome(6, "delete"), "pass");
    assert_eq!(outcome(6, "list"), "not_applicable");
    assert_eq!(outcome(7, "create"), "pass");
    assert_eq!(outcome(11, "list"), "pass");
    assert_eq!(outcome(12, "import"), "pass");
    assert_eq!(outcome(16, "import"), "pass");
    assert_eq!(outcome(3, "watch"), "not_applicable");
    assert!(rows
        .iter()
        .find(|r| r.check == 11 && r.command == "list")
        .is_some_and(|r| r.detail.contains("page(s)")
            && !r.detail.starts_with("--limit 1 and next_cursor: 1 page")));
}

/// Which (check × command) each fault of `aoi-lint-target` fails: its own check, and nothing
/// else. Faults 05 and 13 break a rule every command shares (clap's usage handling, the
/// schema-version negotiation), so check 05 or 13 fails on every command.
fn expected_failures(fault: u8) -> Vec<(u64, &'static str)> {
    let on = |commands: &[&'static str]| -> Vec<(u64, &'static str)> {
        commands.iter().map(|c| (u64::from(fault), *c)).collect()
    };
    match fault {
        1 | 4 | 9 | 11 => on(&["list"]),
        2 | 3 | 14 | 15 => on(&["doctor"]),
        5 | 13 => on(&COMMANDS),
        6 => on(&["delete"]),
        7 => on(&["create"]),
        // A delete without ids is the profile's advice: lint cannot tell a natural key from
        // no key there; two additive runs with identical events name nothing (§14.5).
        8 => on(&["create", "import"]),
        10 => on(&["watch"]),
        12 | 16 => on(&["import"]),
        _ => unreachable!(),
    }
}

#[test]
fn each_fault_of_the_sdk_tool_fails_exactly_its_check() {
    // Four lints at a time, each with four checks at a time.
    let faults: Vec<u8> = (1..=16).collect();
    let results: Vec<(u8, Vec<Row>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = faults
            .chunks(4)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|&n| (n, lint(&target(Some(n)), &[])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    for (n, rows) in results {
        assert_eq!(checks_of(&rows), 16 * COMMANDS.len(), "fault {n:02}");
        assert_fails_exactly(&format!("fault {n:02}"), &rows, &expected_failures(n));
    }
}

#[test]
fn sarif_has_one_result_per_failure_and_advice_and_junit_counts_match() {
    // Fault 08 emits no ids: `create` (additive) fails check 8, since two runs give the same
    // events (§14.5); for `delete` lint cannot tell a natural key from none: advice.
    let tool = target(Some(8));
    let tool = tool.to_str().unwrap();
    let filter = [
        "--tool",
        tool,
        "--command",
        "create",
        "--command",
        "delete",
        "--jobs",
        "4",
    ];

    let jsonl = rows(&aoi_lint(&[&filter[..], &["--format", "jsonl"]].concat()));
    assert_fails_exactly("fault 08", &jsonl, &[(8, "create")]);
    assert!(
        jsonl
            .iter()
            .any(|r| r.check == 8 && r.command == "delete" && r.outcome == "advice"),
        "{jsonl:#?}"
    );
    let not_applicable = jsonl
        .iter()
        .filter(|r| r.outcome == "not_applicable")
        .count();

    let sarif = aoi_lint(&[&filter[..], &["--output", "sarif"]].concat());
    assert_eq!(sarif.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&sarif.stdout).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(results.iter().all(|r| r["ruleId"] == "AOI008"));
    let levels: Vec<&str> = results
        .iter()
        .map(|r| r["level"].as_str().unwrap())
        .collect();
    assert_eq!(
        levels,
        ["error", "note"],
        "the failure, then the advice: {results:#?}"
    );
    assert!(results[1]["message"]["text"]
        .as_str()
        .unwrap_or_default()
        .starts_with("advice: "));
    // GitHub code scanning takes a result only with a file to show it at, and records how the
    // analysis ran.
    for r in results {
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap_or_default();
        assert!(uri.ends_with("aoi-lint-target-fault-08"), "{r:#}");
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            1
        );
    }
    let invocation = &doc["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], true);
    assert!(invocation["commandLine"]
        .as_str()
        .unwrap_or_default()
        .contains("--output sarif"));

    let junit = aoi_lint(&[&filter[..], &["--output", "junit"]].concat());
    assert_eq!(junit.status.code(), Some(1));
    let text = String::from_utf8(junit.stdout).unwrap();
    let mut reader = quick_xml::Reader::from_str(&text);
    let (mut cases, mut failures, mut skipped, mut outputs) = (0, 0, 0, 0);
    let mut total_failures = None;
    loop {
        match reader.read_event().unwrap() {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                match e.name().as_ref() {
                    "testcase" => cases += 1,
                    "failure" => failures += 1,
                    "skipped" => skipped += 1,
                    "system-out" => outputs += 1,
                    "testsuites" => {
                        total_failures = e
                            .try_get_attribute("failures")
                            .unwrap()
                            .map(|a| a.value.to_string());
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    assert_eq!(cases, checks_of(&jsonl));
    assert_eq!(failures, 1);
    assert_eq!(total_failures.as_deref(), Some("1"));
    assert_eq!(skipped, not_applicable);
    assert_eq!(
        outputs, 1,
        "the advice, beside its passing test case: {text}"
    );
    assert!(text.contains("advice: none of the"), "{text}");
}

#[test]
fn a_failed_check_quotes_the_sentence_of_the_spec_it_breaks() {
    // Fault 08: `create` names no id (§18.2 #8 "Mutating events carry stable IDs ...").
    let tool = target(Some(8));
    let out = aoi_lint(&[
        "--tool",
        tool.to_str().unwrap(),
        "--command",
        "create",
        "--check",
        "8",
        "--format",
        "jsonl",
    ]);
    let failed: Vec<serde_json::Value> = aoi_test::events(&out.stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Check(check) if !check.ok => check.properties.clone(),
            _ => None,
        })
        .map(serde_json::Value::Object)
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(
        failed[0]["spec"],
        "§18.2 #8: Mutating events carry stable IDs for created/updated/deleted resources."
    );
    let human = aoi_lint(&[
        "--tool",
        tool.to_str().unwrap(),
        "--command",
        "create",
        "--check",
        "8",
    ]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("spec §18.2 #8: \"Mutating events carry stable IDs"),
        "{text}"
    );
}

#[test]
fn exit_status_is_64_without_a_target_and_69_for_a_missing_tool() {
    let out = aoi_lint(&[]);
    assert_eq!(out.status.code(), Some(64), "{out:?}");
    // §8.3: the meta of a usage error names the command that was run; §16.1: in machine
    // mode, spelt `--output` or `--format` alike, a usage error is a stream.
    for spelling in ["--output", "--format"] {
        let out = aoi_lint(&[spelling, "jsonl"]);
        assert_eq!(out.status.code(), Some(64), "{out:?}");
        aoi_test::assert_conforms(&out.stdout);
        let meta: serde_json::Value =
            serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
        assert_eq!(meta["command"], "lint", "{meta}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(r#""category":"usage""#), "{text}");
    }
    let missing = scratch().join("no-such-tool");
    let out = aoi_lint(&["--tool", missing.to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(69), "{out:?}");
    aoi_test::assert_conforms(&out.stdout);
}

#[test]
fn a_transcript_with_a_seq_gap_fails_check_15_only() {
    let run = "01JZQ7X4TQ9V6H0ZT7K8F2W3C1";
    let ident = r#""tool":"t","tool_version":"1.0.0","aoi_version":"1.0-alpha","schema_name":"io.example.t","schema_version":"1.0.0""#;
    let stream = [
        format!(r#"{{"type":"aoi:meta","aoi":{{"seq":0,"run":"{run}"}},{ident}}}"#),
        format!(r#"{{"type":"hit","aoi":{{"seq":1,"run":"{run}"}},"id":"a"}}"#),
        format!(r#"{{"type":"hit","aoi":{{"seq":3,"run":"{run}"}},"id":"b"}}"#),
        format!(
            r#"{{"type":"aoi:summary","aoi":{{"seq":4,"run":"{run}"}},"ok":true,"event_count":5,"count":2,"warning_count":0,"error_count":0,{ident}}}"#
        ),
    ]
    .join("\n")
        + "\n";
    let file = scratch().join("gap.jsonl");
    std::fs::write(&file, stream).unwrap();
    let out = aoi_lint(&["--transcript", file.to_str().unwrap(), "--format", "jsonl"]);
    let rows = rows(&out);
    assert_eq!(checks_of(&rows), 16);
    let by_check = |n: u64| rows.iter().find(|r| r.check == n).unwrap();
    assert_eq!(by_check(15).outcome, "fail", "{rows:#?}");
    // Without --schema there is nothing to validate events against.
    assert_eq!(by_check(4).outcome, "could_not_run");
    for r in rows.iter().filter(|r| r.check != 15 && r.check != 4) {
        assert!(
            matches!(r.outcome.as_str(), "pass" | "not_applicable"),
            "{r:?}"
        );
    }
}

#[test]
fn the_clean_python_tool_passes_every_check() {
    let rows = lint(&corpus("py-clean.py"), &[]);
    assert_eq!(checks_of(&rows), 16 * 2);
    assert_fails_exactly("py-clean.py", &rows, &[]);
    for (check, command) in [(11, "list"), (10, "watch"), (15, "list"), (13, "watch")] {
        assert!(
            rows.iter()
                .any(|r| r.check == check && r.command == command && r.outcome == "pass"),
            "{check} on {command} did not pass: {rows:#?}"
        );
    }
}

#[test]
fn a_python_traceback_on_a_closed_pipe_fails_check_10() {
    let rows = lint(&corpus("py-pipe-trace.py"), &[]);
    // `list` writes a few lines and is often done before its reader goes away; under load the
    // reader can leave first, and the unhandled EPIPE shows there too.
    assert_fails_within("py-pipe-trace.py", &rows, &[(10, "watch")], &[(10, "list")]);
    let failed = rows.iter().find(|r| r.outcome == "fail").unwrap();
    assert!(failed.detail.contains("stack trace"), "{failed:?}");
}

#[test]
fn a_python_tool_without_aoi_seq_fails_check_15() {
    let rows = lint(&corpus("py-no-seq.py"), &[]);
    assert_fails_exactly("py-no-seq.py", &rows, &[(15, "list"), (15, "watch")]);
}

#[test]
fn a_shell_tool_leaking_an_env_secret_fails_check_9() {
    let rows = lint(&corpus("sh-leak-env.sh"), &[]);
    assert_fails_exactly("sh-leak-env.sh", &rows, &[(9, "ping")]);
}

#[test]
fn checks_that_could_not_run_are_no_pass_they_exit_2_unless_allowed() {
    // A conforming tool that gives no example: lint cannot exercise `ping`, and must not let
    // CI go green on checks that never ran.
    let tool = sh_variant(
        "sh-no-example.sh",
        &[
            (r#","examples":[["ping"]]"#, ""),
            (
                r#""properties":{},"additionalProperties":false"#,
                r#""properties":{"host":{"type":"string"}},"required":["host"],"additionalProperties":false"#,
            ),
            (
                r#"echo "$TOOL: calling the service with key ${API_KEY:-none}" >&2"#,
                r#"echo "error: ping needs --host" >&2; exit 64"#,
            ),
        ],
    );
    let path = tool.to_str().unwrap();

    let rows = lint(&tool, &[]);
    assert!(
        rows.iter().any(|r| r.outcome == "could_not_run"),
        "{rows:#?}"
    );
    assert!(!rows.iter().any(|r| r.outcome == "fail"), "{rows:#?}");
    let human = aoi_lint(&["--tool", path]);
    assert_eq!(human.status.code(), Some(2));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("not proven:"), "{text}");
    let allowed = aoi_lint(&["--tool", path, "--allow-incomplete"]);
    assert_eq!(allowed.status.code(), Some(0));
    let machine = aoi_lint(&["--tool", path, "--format", "jsonl"]);
    assert_eq!(machine.status.code(), Some(2));
    let report = aoi_test::assert_conforms(&machine.stdout);
    assert_eq!(report.summary.map(|s| s.ok), Some(false));
}

#[test]
fn a_schema_that_needs_the_network_fails_discovery_and_is_never_used_vacuously() {
    // §3.2: discovery must not need the network, and a $ref outside the document would.
    let tool = sh_variant(
        "sh-remote-ref.sh",
        &[
            (
                r#""properties":{"type":{"type":"string"}},"x-aoi""#,
                r#""properties":{"type":{"type":"string"}},"allOf":[{"$ref":"https://schemas.example.com/remote.json"}],"x-aoi""#,
            ),
            (
                r#"echo "$TOOL: calling the service with key ${API_KEY:-none}" >&2"#,
                ":",
            ),
        ],
    );
    let rows = lint(&tool, &[]);
    let of = |check: u64| {
        rows.iter()
            .find(|r| r.check == check && r.command == "ping")
            .unwrap()
    };
    assert_eq!(of(1).outcome, "fail", "{:?}", of(1));
    assert!(
        of(1).detail.contains("does not compile offline"),
        "{:?}",
        of(1)
    );
    assert_eq!(of(4).outcome, "could_not_run", "{:?}", of(4));
}

#[test]
fn a_command_capabilities_lists_but_the_tool_lacks_fails_check_1() {
    let tool = sh_variant(
        "sh-ghost-command.sh",
        &[
            (
                r#"{"name":"schema","read_only":true}"#,
                r#"{"name":"pong","read_only":true,"event_types":["pong"],"examples":[["pong"]]},{"name":"schema","read_only":true}"#,
            ),
            (
                r#"echo "$TOOL: calling the service with key ${API_KEY:-none}" >&2"#,
                ":",
            ),
        ],
    );
    let rows = lint(&tool, &["--check", "1"]);
    let of = |command: &str| {
        rows.iter()
            .find(|r| r.check == 1 && r.command == command)
            .unwrap()
    };
    assert_eq!(of("pong").outcome, "fail", "{rows:#?}");
    assert!(
        of("pong").detail.contains("does not know it"),
        "{:?}",
        of("pong")
    );
    assert_eq!(of("ping").outcome, "pass", "{rows:#?}");
}

#[test]
fn a_violation_in_the_stream_of_a_probe_counts_against_its_check_once() {
    // The base run is clean; the run lint makes with canary credentials in the environment
    // (check 9) gets a summary whose event_count is off by one. The verifier sees it, and check
    // 15 fails for `ping` with that probe as evidence (it is not check 9's business).
    let tool = sh_variant(
        "sh-probe-violation.sh",
        &[
            (
                r#"echo "$TOOL: calling the service with key ${API_KEY:-none}" >&2"#,
                r#"ec=3; [ -n "${API_KEY:-}" ] && ec=4"#,
            ),
            (
                r#""event_count":3,"count":1,"warning_count":0,"error_count":0,"partial":false,"truncated":false,%s}\n' "$run" "$IDENT""#,
                r#""event_count":%s,"count":1,"warning_count":0,"error_count":0,"partial":false,"truncated":false,%s}\n' "$run" "$ec" "$IDENT""#,
            ),
        ],
    );
    let rows = lint(&tool, &[]);
    let failed: Vec<&Row> = rows.iter().filter(|r| r.outcome == "fail").collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(
        (failed[0].check, failed[0].command.as_str()),
        (15, "ping"),
        "{failed:#?}"
    );
    assert!(
        failed[0].detail.contains("the stream of a probe"),
        "{failed:#?}"
    );
}

#[test]
fn a_stream_cut_by_lints_own_bound_is_never_blamed_on_the_tool() {
    // `ping` writes about 10 MiB of events, more than the 8 MiB lint keeps of a run: the cut
    // is lint's, so the stream checks could not run; none fails.
    let tool = sh_variant(
        "sh-flood.sh",
        &[(
            r#"echo "$TOOL: calling the service with key ${API_KEY:-none}" >&2"#,
            r#"[ "$output" = human ] || yes '{"type":"pong","aoi":{"seq":1,"run":"R"},"id":"pong-1","pad":"................................................................................................"}' | head -n 70000"#,
        )],
    );
    let rows = lint(&tool, &["--command", "ping"]);
    let failed: Vec<&Row> = rows.iter().filter(|r| r.outcome == "fail").collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let base = rows.iter().find(|r| r.check == 3).unwrap();
    assert_eq!(base.outcome, "could_not_run", "{base:?}");
    assert!(base.detail.contains("lint keeps"), "{base:?}");
}

#[test]
fn an_example_aoi_mcp_could_not_call_is_advice_and_fails_only_with_strict_profile() {
    // `ping now` works, but the input schema says the command takes no operand
    // (`"positional": []`), so a caller of the MCP tool could never pass `now`
    // (docs/discovery.md). No sentence of the spec asks an input schema to describe the
    // command line that far: the profile's advice, not a failure.
    let tool = sh_variant(
        "sh-undescribed-operand.sh",
        &[
            (
                r#""x-aoi":{"flags":{}}"#,
                r#""x-aoi":{"flags":{},"positional":[]}"#,
            ),
            (r#""examples":[["ping"]]"#, r#""examples":[["ping","now"]]"#),
            ("  ping)", "  ping|ping\\ *)"),
            (
                r#"echo "$TOOL: calling the service with key ${API_KEY:-none}" >&2"#,
                ":",
            ),
        ],
    );
    let rows = lint(&tool, &["--check", "1", "--check", "3"]);
    let of = |check: u64, outcome: &str| {
        rows.iter()
            .find(|r| r.check == check && r.outcome == outcome)
            .unwrap_or_else(|| panic!("no {outcome} of check {check}: {rows:#?}"))
    };
    assert_eq!(of(3, "pass").outcome, "pass", "the example itself works");
    of(1, "pass");
    let advice = rows
        .iter()
        .find(|r| {
            r.check == 1 && r.outcome == "advice" && r.detail.contains("aoi mcp could not call")
        })
        .unwrap_or_else(|| panic!("no advice that aoi mcp could not call: {rows:#?}"));
    assert!(
        advice.detail.starts_with("profile:") || advice.detail.contains("aoi mcp"),
        "{advice:?}"
    );
    assert!(!rows.iter().any(|r| r.outcome == "fail"), "{rows:#?}");
    // §16.1 "| `--version` | SHOULD | Tool version. |": this tool has none, a SHOULD unmet.
    assert!(
        rows.iter().any(|r| r.outcome == "advice"
            && r.detail
                .starts_with("spec §16.1 SHOULD: `--version` exits 64")),
        "{rows:#?}"
    );

    // The human report says it apart, and the exit status is the spec's: 0.
    let out = Command::new(crate::support::aoi())
        .args(["lint", "--tool"])
        .arg(&tool)
        .args(["--check", "1", "--no-color"])
        .current_dir(scratch())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("): the spec's SHOULDs and this project's profile"),
        "{text}"
    );
    assert!(
        text.contains("fix: describe every flag and operand"),
        "{text}"
    );

    // --strict-profile: the advice fails check 1, and lint exits 1.
    let rows = lint(&tool, &["--check", "1", "--strict-profile"]);
    let failed = rows
        .iter()
        .find(|r| r.check == 1 && r.outcome == "fail")
        .unwrap_or_else(|| panic!("{rows:#?}"));
    assert!(
        failed.detail.starts_with("profile (--strict-profile): "),
        "{failed:?}"
    );
}
