//! The SDK surface as the example tools expose it: bounds, safety, redaction, input modes,
//! discovery, negotiation, usage errors and deadlines.

use std::process::{Command, Stdio};

use aoi::read::Event;
use aoi::{Category, Reason, Verdict};
use serde_json::Value;

use crate::support::{example, fake_tool, temp_dir, transcript};

fn run(tool: &str, args: &[&str], stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(example(tool))
        .args(args)
        .env_remove("FEED_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("example starts");
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn summary(stdout: &[u8]) -> aoi::Summary {
    aoi_test::assert_conforms(stdout);
    aoi_test::events(stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Summary(s) => Some(s),
            _ => None,
        })
        .expect("a summary")
}

fn first_error(stdout: &[u8]) -> aoi::ErrorEvent {
    aoi_test::events(stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Error(e) => Some(e),
            _ => None,
        })
        .expect("an aoi:error")
}

fn domain(stdout: &[u8], ty: &str) -> Vec<serde_json::Map<String, Value>> {
    aoi_test::events(stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Domain { ty: t, fields } if t == ty => Some(fields),
            _ => None,
        })
        .collect()
}

#[test]
fn following_cursors_visits_every_item_exactly_once() {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = vec!["list", "--total", "23", "--limit", "5", "--output", "jsonl"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let out = run("feed", &args, b"");
        assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
        let s = summary(&out.stdout);
        seen.extend(
            domain(&out.stdout, "item")
                .into_iter()
                .map(|f| f["n"].as_u64().unwrap()),
        );
        pages += 1;
        assert_eq!(
            s.truncated,
            Some(s.next_cursor.is_some()),
            "truncated iff a cursor"
        );
        match s.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(pages, 5);
    assert_eq!(
        seen,
        (1..=23).collect::<Vec<u64>>(),
        "no duplicates, no gaps"
    );
}

#[test]
fn a_cursor_replayed_with_other_arguments_is_a_validation_error() {
    let out = run("feed", &["list", "--limit", "2", "--output", "jsonl"], b"");
    let cursor = summary(&out.stdout).next_cursor.expect("a cursor");
    let out = run(
        "feed",
        &[
            "list", "--limit", "2", "--prefix", "Item 1", "--cursor", &cursor, "--output", "jsonl",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(65), "{}", transcript(&out));
    let e = first_error(&out.stdout);
    assert_eq!(
        (e.category, e.code.as_str()),
        (Category::Validation, "CURSOR_MISMATCH")
    );
    assert_eq!(e.field.as_deref(), Some("cursor"));
    let out = run(
        "feed",
        &["list", "--cursor", "not-a-cursor", "--output", "jsonl"],
        b"",
    );
    assert_eq!(first_error(&out.stdout).code.as_str(), "CURSOR_INVALID");
}

const ITEMS: &str =
    "{\"id\":\"a\",\"n\":1,\"title\":\"A\"}\n{\"id\":\"b\",\"n\":2,\"title\":\"B\"}\n";

#[test]
fn an_idempotency_key_replays_the_first_result_and_refuses_other_arguments() {
    let dir = temp_dir("idem");
    let store = dir.join("store.jsonl");
    let store = store.to_str().unwrap();
    let args = [
        "add",
        "--into",
        store,
        "--input-jsonl",
        "-",
        "--idempotency-key",
        "k-1",
        "--output",
        "jsonl",
    ];
    let first = run("collect", &args, ITEMS.as_bytes());
    assert_eq!(first.status.code(), Some(0), "{}", transcript(&first));
    let second = run("collect", &args, ITEMS.as_bytes());
    assert_eq!(second.status.code(), Some(0), "{}", transcript(&second));
    assert_eq!(
        std::fs::read_to_string(store).unwrap().lines().count(),
        2,
        "not doubled"
    );
    assert_eq!(
        domain(&first.stdout, "stored"),
        domain(&second.stdout, "stored")
    );
    let replay = summary(&second.stdout);
    assert_eq!(replay.properties.unwrap()["idempotent_replay"], true);
    let other = run(
        "collect",
        &args,
        b"{\"id\":\"c\",\"n\":3,\"title\":\"C\"}\n",
    );
    assert_eq!(other.status.code(), Some(65), "{}", transcript(&other));
    let e = first_error(&other.stdout);
    assert_eq!(
        (e.category, e.code.as_str()),
        (Category::Conflict, "IDEMPOTENCY_KEY_REUSED")
    );
    assert_eq!(std::fs::read_to_string(store).unwrap().lines().count(), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn confirmation_and_dry_run_touch_nothing() {
    let dir = temp_dir("confirm");
    let store = dir.join("store.jsonl");
    std::fs::write(&store, ITEMS).unwrap();
    let path = store.to_str().unwrap();
    for (args, code, error) in [
        (
            &["clear", "--into", path, "--output", "jsonl"][..],
            77,
            Some("CONFIRMATION_REQUIRED"),
        ),
        (
            &[
                "clear",
                "--into",
                path,
                "--confirm",
                "--confirm-count",
                "5",
                "--output",
                "jsonl",
            ],
            77,
            Some("CONFIRM_COUNT_MISMATCH"),
        ),
        (
            &[
                "clear",
                "--into",
                path,
                "--confirm",
                "--confirm-count",
                "2",
                "--dry-run",
                "--output",
                "jsonl",
            ],
            0,
            None,
        ),
    ] {
        let out = run("collect", args, b"");
        assert_eq!(out.status.code(), Some(code), "{}", transcript(&out));
        assert_eq!(
            std::fs::read_to_string(&store).unwrap(),
            ITEMS,
            "{args:?} changed the store"
        );
        let s = summary(&out.stdout);
        match error {
            Some(code) => {
                assert_eq!(s.reason, Some(Reason::Denied));
                assert_eq!(first_error(&out.stdout).code.as_str(), code);
            }
            None => {
                let plans = aoi_test::events(&out.stdout)
                    .into_iter()
                    .filter(|e| matches!(e, Event::Plan(_)))
                    .count();
                assert_eq!(plans, 1, "dry-run plans the effect");
                assert!(domain(&out.stdout, "cleared").is_empty());
            }
        }
    }
    let out = run(
        "collect",
        &[
            "add",
            "--into",
            path,
            "--input-jsonl",
            "-",
            "--dry-run",
            "--output",
            "jsonl",
        ],
        ITEMS.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&store).unwrap(),
        ITEMS,
        "dry-run add wrote"
    );
    let out = run(
        "collect",
        &[
            "clear",
            "--into",
            path,
            "--confirm",
            "--confirm-count",
            "2",
            "--output",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "");
    assert_eq!(domain(&out.stdout, "cleared")[0]["removed"], 2);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn malformed_input_lines_follow_the_declared_mode() {
    let dir = temp_dir("input");
    let store = dir.join("store.jsonl");
    let path = store.to_str().unwrap();
    let input = "{\"id\":\"a\",\"n\":1,\"title\":\"A\"}\n{\"id\":\"b\",\"n\":\"two\",\"title\":\"B\"}\nnot json\n{\"id\":\"d\",\"n\":4,\"title\":\"D\",\"extra\":1}\n{\"id\":\"e\",\"n\":5,\"title\":\"E\"}\n";
    // Fail fast (the documented default for add): nothing is stored, the error names line 2.
    let out = run(
        "collect",
        &[
            "add",
            "--into",
            path,
            "--input-jsonl",
            "-",
            "--output",
            "jsonl",
        ],
        input.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(65), "{}", transcript(&out));
    let e = first_error(&out.stdout);
    assert_eq!(
        (e.code.as_str(), e.line_number, e.field.as_deref()),
        ("INPUT_RECORD_INVALID", Some(2), Some("n"))
    );
    assert!(!store.exists(), "fail-fast wrote nothing");
    // Continue on error: good records stored, each bad line an item error, partial.
    let out = run(
        "collect",
        &[
            "add",
            "--into",
            path,
            "--input-jsonl",
            "-",
            "--continue-on-error",
            "--output",
            "jsonl",
        ],
        input.as_bytes(),
    );
    // §19.4: the bad lines fail the run; the good records written make it partial.
    assert_eq!(out.status.code(), Some(1), "{}", transcript(&out));
    let s = summary(&out.stdout);
    assert!(!s.ok);
    assert_eq!(
        (s.count, s.error_count, s.partial),
        (Some(2), Some(3), Some(true))
    );
    let lines: Vec<Option<u64>> = aoi_test::events(&out.stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Error(e) => Some(e.line_number),
            _ => None,
        })
        .collect();
    assert_eq!(lines, [Some(2), Some(3), Some(4)]);
    assert_eq!(std::fs::read_to_string(&store).unwrap().lines().count(), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_canary_secret_in_args_and_env_never_reaches_stdout_or_stderr() {
    const CANARY_ARG: &str = "canary-arg-5ecr3t-4242";
    const CANARY_ENV: &str = "canary-env-5ecr3t-4343";
    let out = Command::new(example("feed"))
        .args([
            "list",
            "--limit",
            "2",
            "--debug",
            "--api-token",
            CANARY_ARG,
            "--output",
            "jsonl",
        ])
        .env("FEED_TOKEN", CANARY_ENV)
        .env("OTHER_SERVICE_PASSWORD", CANARY_ENV)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("debug:"),
        "--debug says something: {stderr}"
    );
    assert!(stderr.contains("[REDACTED]"), "{stderr}");
    for canary in [CANARY_ARG, CANARY_ENV] {
        assert!(!String::from_utf8_lossy(&out.stdout).contains(canary));
        assert!(!stderr.contains(canary), "{canary} leaked: {stderr}");
    }
    // feed opts into echoing its arguments: they arrive redacted.
    let meta = aoi_test::assert_conforms(&out.stdout).meta.unwrap();
    assert_eq!(meta.args_redacted, Some(true));
    let args = meta.args.expect("feed echoes its args");
    assert!(args.contains(&"[REDACTED]".to_owned()), "{args:?}");
    assert!(args.contains(&"--api-token".to_owned()) && args.contains(&"list".to_owned()));
    assert!(meta.input_fingerprint.unwrap().starts_with("sha256:"));
    // A short secret flag, known only from the clap definition, is redacted too.
    let out = Command::new(example("feed"))
        .args([
            "list", "--limit", "1", "-k", CANARY_ARG, "--output", "jsonl",
        ])
        .env_remove("FEED_TOKEN")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(CANARY_ARG));
    let args = aoi_test::assert_conforms(&out.stdout)
        .meta
        .unwrap()
        .args
        .unwrap();
    assert_eq!(
        &args[args.len() - 4..],
        ["-k", "[REDACTED]", "--output", "jsonl"]
    );
    // A tool that does not opt in echoes nothing.
    let out = run(
        "shout",
        &["upcase", "--input-jsonl", "-", "--output", "jsonl"],
        b"",
    );
    let meta = aoi_test::assert_conforms(&out.stdout).meta.unwrap();
    assert_eq!((meta.args, meta.args_redacted), (None, Some(true)));
    // input-schema marks the token secret.
    let schema: Value =
        serde_json::from_slice(&run("feed", &["input-schema", "--command", "list"], b"").stdout)
            .unwrap();
    assert_eq!(schema["x-aoi"]["secret"], serde_json::json!(["api_token"]));
    assert_eq!(schema["x-aoi"]["flags"]["api_token"], "--api-token");
}

#[test]
fn discovery_is_one_json_document_derived_from_the_clap_definition() {
    let caps: Value =
        serde_json::from_slice(&run("feed", &["capabilities", "--output", "json"], b"").stdout)
            .unwrap();
    assert_eq!(caps["tool"], "feed");
    assert_eq!(caps["aoi_versions"], serde_json::json!(["1.0-alpha"]));
    let list = caps["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "list")
        .unwrap();
    assert_eq!(list["read_only"], true);
    assert_eq!(list["bounded"], true);
    assert_eq!(list["supports_cursor"], true);
    assert_eq!(
        list["examples"],
        serde_json::json!([["list", "--limit", "2"]])
    );
    let collect: Value =
        serde_json::from_slice(&run("collect", &["capabilities"], b"").stdout).unwrap();
    let clear = collect["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "clear")
        .unwrap();
    assert_eq!(
        (
            clear["destructive"].clone(),
            clear["requires_confirm"].clone(),
            clear["supports_dry_run"].clone()
        ),
        (Value::Bool(true), Value::Bool(true), Value::Bool(true))
    );
    let add = collect["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "add")
        .unwrap();
    assert_eq!(
        add["input_modes"],
        serde_json::json!(["args", "jsonl", "json"])
    );
    assert_eq!(add["input_default"], "fail_fast");
    // Every example in the manifest runs and conforms.
    for example_argv in list["examples"].as_array().unwrap() {
        let mut argv: Vec<&str> = example_argv
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        argv.extend(["--output", "jsonl"]);
        let out = run("feed", &argv, b"");
        assert_eq!(
            aoi_test::assert_conforms(&out.stdout).verdict,
            Verdict::Succeeded
        );
    }
    let schema: Value = serde_json::from_slice(
        &run(
            "feed",
            &["input-schema", "--command", "list", "--output", "json"],
            b"",
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["properties"]["limit"]["default"], 20);
    // Discovery prints the same bytes whatever the output mode.
    let human = run("feed", &["schema"], b"").stdout;
    let json = run("feed", &["schema", "--output", "json"], b"").stdout;
    assert_eq!(human, json);
}

#[test]
fn schema_version_negotiation_and_usage_errors_in_machine_mode() {
    let out = run(
        "feed",
        &["list", "--schema-version", "1", "--output", "jsonl"],
        b"",
    );
    let report = aoi_test::assert_conforms(&out.stdout);
    assert_eq!(
        report.meta.unwrap().schema_version.as_deref(),
        Some("1.0.0")
    );
    assert_eq!(
        report.summary.unwrap().schema_version.as_deref(),
        Some("1.0.0")
    );
    let out = run(
        "feed",
        &["list", "--schema-version", "2", "--output", "jsonl"],
        b"",
    );
    assert_eq!(out.status.code(), Some(69), "{}", transcript(&out));
    let e = first_error(&out.stdout);
    assert_eq!(
        (e.category, e.code.as_str()),
        (Category::Unsupported, "SCHEMA_VERSION_UNSUPPORTED")
    );
    let out = run("feed", &["schema", "--schema-version", "9"], b"");
    assert_eq!(out.status.code(), Some(69));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: schema version"));
    let out = run("feed", &["list", "--limt", "2", "--output", "jsonl"], b"");
    assert_eq!(out.status.code(), Some(64));
    let e = first_error(&out.stdout);
    assert_eq!(e.category, Category::Usage);
    assert!(e.message.contains("--limt"), "{}", e.message);
    let out = run("feed", &["list", "--limt", "2"], b"");
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--limit"),
        "clap suggests the flag"
    );
    let help = run("feed", &["list", "--help"], b"");
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--cursor <TOKEN>"));
}

#[test]
fn a_deadline_ends_the_run_with_a_timeout_error_and_124() {
    for mode in ["slow", "slow-block"] {
        let mut child = Command::new(fake_tool())
            .arg(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _stdin = child.stdin.take();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(124), "{mode}: {}", transcript(&out));
        let s = summary(&out.stdout);
        assert_eq!(s.reason, Some(Reason::Timeout));
        let e = first_error(&out.stdout);
        assert_eq!((e.category, e.retryable), (Category::Timeout, true));
        assert!(out.stderr.is_empty());
    }
}

#[test]
fn max_bytes_bounds_the_output_and_its_cursor_continues_without_loss() {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let mut args = vec![
            "list",
            "--total",
            "12",
            "--limit",
            "50",
            "--max-bytes",
            "700",
            "--output",
            "jsonl",
        ];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let out = run("feed", &args, b"");
        assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
        // The bound counts the domain events (aoi:meta and aoi:summary are not theirs).
        let lines: Vec<&[u8]> = out.stdout.split_inclusive(|b| *b == b'\n').collect();
        let events: usize = lines[1..lines.len() - 1].iter().map(|l| l.len()).sum();
        assert!(events <= 700, "{events} bytes of events");
        let s = summary(&out.stdout);
        seen.extend(
            domain(&out.stdout, "item")
                .into_iter()
                .map(|f| f["n"].as_u64().unwrap()),
        );
        match s.next_cursor {
            Some(c) => {
                assert_eq!(s.truncated, Some(true));
                cursor = Some(c);
            }
            None => break,
        }
    }
    assert_eq!(seen, (1..=12).collect::<Vec<u64>>());
}

#[test]
fn a_dry_run_clear_previews_without_confirmation_and_an_unreadable_store_is_an_error() {
    let dir = temp_dir("clear-dry");
    let store = dir.join("store.jsonl");
    std::fs::write(&store, ITEMS).unwrap();
    let path = store.to_str().unwrap();
    let out = run(
        "collect",
        &["clear", "--into", path, "--dry-run", "--output", "jsonl"],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
    let plan = aoi_test::events(&out.stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Plan(p) => Some(p),
            _ => None,
        })
        .expect("a plan");
    assert_eq!(plan.detail.as_deref(), Some("remove 2 record(s)"));
    assert_eq!(std::fs::read_to_string(&store).unwrap(), ITEMS);
    // Bytes that are not UTF-8 are still counted: no "0 records, nothing to confirm".
    std::fs::write(&store, b"{\"id\":\"\xff\"}\n{}\n").unwrap();
    let out = run(
        "collect",
        &["clear", "--into", path, "--output", "jsonl"],
        b"",
    );
    assert_eq!(out.status.code(), Some(77), "{}", transcript(&out));
    assert_eq!(
        std::fs::read(&store).unwrap().len(),
        14,
        "refused, untouched"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_runnable_command_is_in_capabilities_and_flags_match_behaviour() {
    let shout: Value =
        serde_json::from_slice(&run("shout", &["capabilities"], b"").stdout).unwrap();
    let names: Vec<&str> = shout["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"upcase"), "{names:?}");
    let collect: Value =
        serde_json::from_slice(&run("collect", &["capabilities"], b"").stdout).unwrap();
    let clear = collect["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "clear")
        .unwrap();
    assert_eq!(
        clear["supports_idempotency_key"], false,
        "clear takes no key"
    );
    assert_eq!(clear["supports_dry_run"], true);
    assert_eq!(collect["tool"], "collect");
}
