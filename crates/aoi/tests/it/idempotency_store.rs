//! The SDK's file-backed idempotency store (`aoi::surface::store::FileStore`) across processes,
//! through the `collect` example (`add` appends records to a JSONL file; its records are kept in
//! `<file>.idempotency/`):
//! - two runs with one `--idempotency-key` at once: one applies the effect, the other waits
//!   for it and replays (§14.4 "retrying a successful request replays the result");
//! - a run killed between its effect and its record: a retry with the key is refused with
//!   `conflict` `IDEMPOTENCY_OUTCOME_UNKNOWN`, `retryable:false` (§9.3: the producer cannot
//!   tell whether the effect was applied), never replayed as a success nor applied again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

const RECORDS: &str =
    "{\"id\":\"a\",\"n\":1,\"title\":\"A\"}\n{\"id\":\"b\",\"n\":2,\"title\":\"B\"}\n";

fn collect() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| aoi_test::workspace_bin("examples/collect"))
}

/// `collect add --into FILE --input-jsonl - --idempotency-key KEY EXTRA… --output jsonl`,
/// started with the records on stdin.
fn add(into: &Path, key: &str, extra: &[&str]) -> Child {
    let mut child = Command::new(collect())
        .args(["add", "--into"])
        .arg(into)
        .args(["--input-jsonl", "-", "--idempotency-key", key])
        .args(extra)
        .args(["--output", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("collect starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(RECORDS.as_bytes())
        .expect("write the records");
    child
}

fn summary(out: &Output) -> Value {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "aoi:summary")
        .unwrap_or_else(|| panic!("no summary: {out:?}"))
}

fn lines_of(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn two_runs_with_one_key_at_once_apply_the_effect_once_and_the_second_replays() {
    let dir = aoi_test::temp_dir("idem-concurrent");
    let into = dir.path().join("items.jsonl");
    // The first holds the key for a while after its effect; the second starts meanwhile.
    let first = add(&into, "order-7", &["--hold-ms", "700"]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let second = add(&into, "order-7", &[]);
    let (first, second) = (
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    );
    assert_eq!(
        (first.status.code(), second.status.code()),
        (Some(0), Some(0)),
        "{first:?}\n{second:?}"
    );
    assert_eq!(lines_of(&into), 2, "the records were appended once");
    let replays: Vec<bool> = [&first, &second]
        .iter()
        .map(|o| summary(o)["properties"]["idempotent_replay"] == true)
        .collect();
    assert_eq!(replays, [false, true]);
    aoi_test::assert_conforms(&second.stdout);
}

#[test]
fn a_run_killed_between_effect_and_record_leaves_the_key_refused_as_outcome_unknown() {
    let dir = aoi_test::temp_dir("idem-killed");
    let into = dir.path().join("items.jsonl");
    let killed = add(&into, "order-8", &["--abort-after-effect"])
        .wait_with_output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "aborted: {killed:?}");
    assert_eq!(
        lines_of(&into),
        2,
        "the effect was applied before the abort"
    );
    let retry = add(&into, "order-8", &[]).wait_with_output().unwrap();
    assert_eq!(lines_of(&into), 2, "the retry did not apply it again");
    let error = String::from_utf8_lossy(&retry.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "aoi:error")
        .unwrap_or_else(|| panic!("no error: {retry:?}"));
    assert_eq!(error["code"], "IDEMPOTENCY_OUTCOME_UNKNOWN");
    assert_eq!(
        (&error["category"], &error["retryable"]),
        (&Value::from("conflict"), &Value::from(false))
    );
    assert_eq!(summary(&retry)["ok"], false);
    assert_ne!(retry.status.code(), Some(0));
    // Another key is a new request: it runs.
    let fresh = add(&into, "order-9", &[]).wait_with_output().unwrap();
    assert_eq!(fresh.status.code(), Some(0), "{fresh:?}");
    assert_eq!(lines_of(&into), 4);
}
