//! `aoi lint` against tools written by a stranger: `js-notes.mjs`, a notes store in plain
//! JavaScript (Node 20+, no dependencies) written from the text of the spec alone, with none
//! of this project's conventions (no `x-aoi`, no capabilities examples or setup, operands
//! described in its own words, `--` refused, `aoi:meta.args` an object, `aoi:plan` fields in
//! `properties`). What the spec does not ask for must not fail it.
//!
//! Each `js-notes-<fault>.mjs` runs it with one sentence of the spec broken (the list is at the
//! top of js-notes.mjs): lint must fail that check and no other.
//!
//! The spec has no capabilities `examples`, so a stranger's commands that take operands give
//! lint nothing to run; its CI gives lint an invocation per command and some notes to work
//! on in an `aoi-lint.toml`, as any project does (`js-notes.aoi-lint.toml`), and nothing
//! else.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::lint::{corpus, lint, outcome_of, Row};

/// js-notes' commands, in capabilities order (discovery commands are not linted).
const COMMANDS: [&str; 5] = ["add", "get", "list", "rm", "import"];

/// True when Node.js 20 or newer is on PATH, where the tools' `#!/usr/bin/env node` finds
/// it; else says so (a failure under CI) and the test returns.
fn node_available(test: &str) -> bool {
    let version = Command::new("node")
        .arg("--version")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    let major = version
        .as_deref()
        .and_then(|v| v.strip_prefix('v'))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    if major.is_some_and(|m| m >= 20) {
        return true;
    }
    aoi_test::prerequisite::missing(
        test,
        &format!(
            "Node.js 20 or newer on PATH (found {})",
            version.as_deref().unwrap_or("none")
        ),
    );
    false
}

/// `js-notes.mjs`, or its variant `js-notes-<fault>.mjs`.
fn js_notes(fault: Option<&str>) -> PathBuf {
    corpus(&match fault {
        Some(fault) => format!("js-notes-{fault}.mjs"),
        None => "js-notes.mjs".to_owned(),
    })
}

/// Asserts that every failure is check `check` on one of `commands`, that there is at least
/// one, and that every other result passed, was not applicable, could not run or is advice.
fn assert_fails_only(what: &str, rows: &[Row], check: u64, commands: &[&str]) {
    let failed: Vec<&Row> = rows.iter().filter(|r| r.outcome == "fail").collect();
    assert!(
        !failed.is_empty()
            && failed
                .iter()
                .all(|r| r.check == check && commands.contains(&r.command.as_str())),
        "{what}: expected check {check} to fail (on {commands:?}) and nothing else; failed: {failed:#?}"
    );
    let other: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            !matches!(
                r.outcome.as_str(),
                "pass" | "not_applicable" | "could_not_run" | "fail" | "advice"
            )
        })
        .collect();
    assert!(other.is_empty(), "{what}: unexpected outcomes {other:#?}");
}

/// `--config` with the stranger's `aoi-lint.toml`: invocations and seed notes only.
fn config() -> String {
    corpus("js-notes.aoi-lint.toml").display().to_string()
}

/// Lints `tool` with the stranger's configuration.
fn lint_js(tool: &Path) -> Vec<Row> {
    lint(tool, &["--config", &config()])
}

/// §18.1, §18.2: a tool that follows the spec in its own way passes every applicable check,
/// given invocations to run, and lint exits 0 (asserted by `lint`: nothing left unproven).
#[test]
fn the_stranger_notes_tool_passes_every_check() {
    if !node_available("the_stranger_notes_tool_passes_every_check") {
        return;
    }
    let rows = lint_js(&js_notes(None));
    let results = rows.iter().filter(|r| r.outcome != "advice").count();
    assert_eq!(results, 16 * COMMANDS.len(), "{rows:#?}");
    // Advice (this project's profile, not the spec) fails nothing; anything else but a pass or
    // a not-applicable is a failure of lint on a conforming tool.
    let failed: Vec<&Row> = rows
        .iter()
        .filter(|r| !matches!(r.outcome.as_str(), "pass" | "not_applicable" | "advice"))
        .collect();
    assert!(failed.is_empty(), "js-notes: {failed:#?}");
    let outcome = |check: u64, command: &str| outcome_of(&rows, check, command);
    // The checks that need the tool's behaviour ran where they apply.
    for (check, command) in [
        (6, "rm"),
        (6, "add"),
        (7, "add"),
        (8, "add"),
        (8, "rm"),
        (9, "add"),
        (11, "list"),
        (12, "import"),
        (14, "list"),
        (16, "import"),
    ] {
        assert_eq!(
            outcome(check, command),
            "pass",
            "{check} on {command}: {rows:#?}"
        );
    }
}

/// §2 (machine-mode stdout MUST NOT include mixed plain-text warnings), in a command that
/// relays records (§13): `import` prints a prose line when it passes on a warning.
#[test]
fn a_relay_printing_prose_on_a_warning_fails_check_2() {
    if !node_available("a_relay_printing_prose_on_a_warning_fails_check_2") {
        return;
    }
    let rows = lint_js(&js_notes(Some("relay-prose")));
    assert_fails_only("js-notes-relay-prose", &rows, 2, &["import"]);
}

/// §14.3 (bulk destructive operations guarded by `--confirm-count N`): `rm` goes ahead when
/// N is larger than the number of notes matched.
#[test]
fn a_confirm_count_larger_than_the_match_fails_check_6() {
    if !node_available("a_confirm_count_larger_than_the_match_fails_check_6") {
        return;
    }
    let rows = lint_js(&js_notes(Some("confirm-count")));
    assert_fails_only("js-notes-confirm-count", &rows, 6, &["rm"]);
}

/// §11 (if arguments are included, the tool MUST redact sensitive values): `--token` is in
/// `aoi:meta.args` with every character `\u`-escaped, so the bytes hide what the JSON says.
#[test]
fn a_secret_echoed_json_escaped_fails_check_9() {
    if !node_available("a_secret_echoed_json_escaped_fails_check_9") {
        return;
    }
    let rows = lint_js(&js_notes(Some("secret-escaped")));
    assert_fails_only(
        "js-notes-secret-escaped",
        &rows,
        9,
        &["add", "rm", "import"],
    );
}

/// §15 (if output is truncated, `truncated` MUST be true): a full page with more notes after
/// it says `truncated:false` and gives no cursor.
#[test]
fn a_full_page_reported_untruncated_fails_check_11() {
    if !node_available("a_full_page_reported_untruncated_fails_check_11") {
        return;
    }
    let rows = lint_js(&js_notes(Some("full-page")));
    assert_fails_only("js-notes-full-page", &rows, 11, &["list"]);
}

/// §13.1 (a stream carries at most one `aoi:meta`): `--verbose`, which every command's input
/// schema advertises, writes a second one.
#[test]
fn a_second_meta_under_verbose_fails_check_14() {
    if !node_available("a_second_meta_under_verbose_fails_check_14") {
        return;
    }
    let rows = lint_js(&js_notes(Some("verbose-meta")));
    assert_fails_only("js-notes-verbose-meta", &rows, 14, &COMMANDS);
}

// ---- Two Python tools by other hands, from the spec alone: an inventory keyed by SKU (its own
// argument parser, SQLite, an input schema only for `import`'s records) and a task tracker on
// argparse subparsers (a JSON store, a relay `tail`, an input schema only for `tail`).

/// Lints `py-<name>.py` with its own `py-<name>.aoi-lint.toml` (invocations and seed data).
fn lint_py(tool: &Path, name: &str) -> Vec<Row> {
    let config = corpus(&format!("py-{name}.aoi-lint.toml"));
    lint(tool, &["--config", &config.display().to_string()])
}

/// Asserts `rows` hold no failure and nothing unproven, every command's 16 checks, and a pass
/// of each `(check, command)` in `ran`.
fn assert_stranger_passes(what: &str, rows: &[Row], commands: usize, ran: &[(u64, &str)]) {
    let results = rows.iter().filter(|r| r.outcome != "advice").count();
    assert_eq!(results, 16 * commands, "{what}: {rows:#?}");
    let failed: Vec<&Row> = rows
        .iter()
        .filter(|r| !matches!(r.outcome.as_str(), "pass" | "not_applicable" | "advice"))
        .collect();
    assert!(failed.is_empty(), "{what}: {failed:#?}");
    for (check, command) in ran {
        assert_eq!(
            outcome_of(rows, *check, command),
            "pass",
            "{what}: {check} on {command}: {rows:#?}"
        );
    }
}

/// §14.4 "or a documented natural key": the SKU names the item. No input schema but for
/// `import`'s records (§12.1: the SHOULD is for structured stdin), no `--` before operands,
/// `--help` in machine mode as an event: none of it fails.
#[test]
fn the_stranger_inventory_tool_passes_every_check() {
    let rows = lint_py(&corpus("py-inventory.py"), "inventory");
    assert_stranger_passes(
        "py-inventory",
        &rows,
        6,
        &[
            (6, "remove"),
            (6, "add"),
            (7, "add"),
            (11, "list"),
            (12, "import"),
        ],
    );
}

/// A relay (`tail`) and a bulk delete by filter (`purge`) with `--confirm-count`, on argparse.
#[test]
fn the_stranger_task_tool_passes_every_check() {
    let rows = lint_py(&corpus("py-tasks.py"), "tasks");
    assert_stranger_passes(
        "py-tasks",
        &rows,
        6,
        &[(6, "purge"), (7, "create"), (11, "list"), (16, "tail")],
    );
    // §10.3 "Input schemas SHOULD be strict": `tail`'s accepts fields it does not name, which
    // is advice (a SHOULD), never a failure.
    assert!(
        rows.iter().any(|r| r.command == "tail"
            && r.outcome == "advice"
            && r.detail
                .starts_with("spec §10.3 SHOULD: the input schema accepts")),
        "{rows:#?}"
    );
}

/// §18.2 #9 "Known secret‑looking args are not echoed raw in output": argparse's own usage
/// error repeats an argument it does not know, `--api-key=SECRET` included. The task tool
/// names the flags only; put back argparse's message and every command fails check 9.
#[test]
fn a_usage_error_repeating_an_unknown_secret_flag_fails_check_9() {
    let source = std::fs::read_to_string(corpus("py-tasks.py")).unwrap();
    let guard = "        if message.startswith(prefix):";
    assert!(source.contains(guard), "py-tasks.py changed: {guard}");
    let tool = super::lint::scratch().join("py-tasks-echoes-args.py");
    std::fs::write(&tool, source.replace(guard, "        if False:")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rows = lint_py(&tool, "tasks");
    assert_fails_only(
        "py-tasks-echoes-args",
        &rows,
        9,
        &["create", "show", "list", "done", "purge", "tail"],
    );
}

/// Runs `tool ARGS` with its store under `data`, `stdin` piped in.
fn run(tool: &Path, data: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(tool)
        .args(args)
        .env("XDG_DATA_HOME", data)
        .env_remove(WRITE_TOKEN_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tool starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    // The tool may not read its stdin: a closed pipe is no failure.
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    child.wait_with_output().expect("the tool runs")
}

/// The environment variable that protects a js-notes store.
const WRITE_TOKEN_ENV: &str = "JS_NOTES_WRITE_TOKEN";

/// The lines of `out`'s stdout that parse as JSON objects.
fn objects(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(Value::is_object)
        .collect()
}

/// The planted faults are there, and only in their variants: a test above that lint misses
/// one is lint's miss, not a variant that lost its fault.
#[test]
fn each_planted_fault_is_in_its_variant_and_not_in_the_clean_tool() {
    if !node_available("each_planted_fault_is_in_its_variant_and_not_in_the_clean_tool") {
        return;
    }
    let secret = "aoi-it-secret/5e1c9f";
    for fault in [
        None,
        Some("relay-prose"),
        Some("confirm-count"),
        Some("secret-escaped"),
        Some("full-page"),
        Some("verbose-meta"),
    ] {
        let dir = aoi_test::temp_dir("js-notes");
        let tool = js_notes(fault);
        let m = ["--output", "jsonl"];
        for title in ["Alpha", "Beta", "Gamma"] {
            let out = run(&tool, dir.path(), &[&m[..], &["add", title]].concat(), "");
            assert_eq!(out.status.code(), Some(0), "{fault:?} add {title}: {out:?}");
        }
        let is = |name: &str| fault == Some(name);

        // relay-prose: a prose line beside the forwarded warning.
        let upstream = concat!(
            r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"R"},"tool":"up","tool_version":"1.0.0","aoi_version":"1.0-alpha","schema_name":"io.example.up","schema_version":"1.0.0"}"#,
            "\n",
            r#"{"type":"aoi:warning","aoi":{"seq":1,"run":"R"},"code":"SLOW","message":"slow"}"#,
            "\n",
            r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"event_count":3}"#,
            "\n"
        );
        let out = run(
            &tool,
            dir.path(),
            &[&m[..], &["import", "--input-jsonl", "-"]].concat(),
            upstream,
        );
        let prose = String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| serde_json::from_str::<Value>(l).is_err());
        assert_eq!(prose, is("relay-prose"), "{fault:?} import: {out:?}");
        assert_eq!(out.status.code(), Some(0), "{fault:?} import: {out:?}");

        // secret-escaped: the bytes hide the token, the decoded JSON shows it.
        let out = run(
            &tool,
            dir.path(),
            &[&m[..], &["add", "Delta", "--token", secret]].concat(),
            "",
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains(secret), "{fault:?}: {text}");
        let decoded = objects(&out).iter().any(|e| e.to_string().contains(secret));
        assert_eq!(decoded, is("secret-escaped"), "{fault:?}: {text}");

        // verbose-meta: two aoi:meta under --verbose.
        let out = run(
            &tool,
            dir.path(),
            &[&m[..], &["list", "--verbose"]].concat(),
            "",
        );
        let metas = objects(&out)
            .iter()
            .filter(|e| e["type"] == "aoi:meta")
            .count();
        assert_eq!(
            metas,
            if is("verbose-meta") { 2 } else { 1 },
            "{fault:?}: {out:?}"
        );

        // full-page: four notes, a page of two, says it is complete.
        let out = run(
            &tool,
            dir.path(),
            &[&m[..], &["list", "--limit", "2"]].concat(),
            "",
        );
        let summary = objects(&out).pop().unwrap_or_default();
        assert_eq!(summary["type"], "aoi:summary", "{fault:?}: {out:?}");
        assert_eq!(
            summary["truncated"],
            !is("full-page"),
            "{fault:?}: {summary}"
        );
        assert_eq!(
            summary["next_cursor"].is_string(),
            !is("full-page"),
            "{fault:?}: {summary}"
        );

        // confirm-count: a count of 5 for 2 notes removes them.
        let out = run(
            &tool,
            dir.path(),
            &[
                &m[..],
                &["rm", "alpha", "beta", "--confirm", "--confirm-count", "5"],
            ]
            .concat(),
            "",
        );
        let removed = objects(&out)
            .iter()
            .filter(|e| e["type"] == "removed")
            .count();
        assert_eq!(
            removed,
            if is("confirm-count") { 2 } else { 0 },
            "{fault:?}: {out:?}"
        );
        assert_eq!(
            out.status.code() == Some(0),
            is("confirm-count"),
            "{fault:?}: {out:?}"
        );
    }
}
