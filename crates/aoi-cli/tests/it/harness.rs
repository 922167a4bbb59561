//! The SDK's process harness, end to end: a tool built on `aoi` under real pipes and signals.

use std::io::BufReader;
use std::process::{Child, Command, Stdio};

use aoi::read::Event;
use aoi::{Category, Verdict};

use aoi_test::read_until;

use crate::support::{aoi, fake_tool, transcript};

fn spawn_tool(args: &[&str]) -> Child {
    Command::new(fake_tool())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fake tool starts")
}

#[test]
fn a_closed_pipe_ends_the_tool_quietly_with_141() {
    let mut child = spawn_tool(&["many", "5000000"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = read_until(&mut stdout, &["aoi:meta"]);
    assert!(first.contains("\"seq\":0"));
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", transcript(&out));
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn head_n_1_in_a_real_shell_pipeline_prints_no_stack_trace() {
    let tool = fake_tool();
    let dir = aoi_test::temp_dir("head");
    let err_path = dir.join("head.err");
    let out = Command::new("bash")
        .args([
            "-c",
            r#"set -o pipefail; "$0" many 5000000 2>"$1" | head -n 1; echo "status=${PIPESTATUS[0]}""#,
        ])
        .arg(&tool)
        .arg(&err_path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with(r#"{"type":"aoi:meta""#));
    assert_eq!(lines[1], "status=141");
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    assert_eq!(stderr, "", "no stack trace, no message");
}

fn cancel_run(mode: &str, sig: &str, exit: i32) {
    let mut child = spawn_tool(&[mode]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let seen = read_until(
        &mut stdout,
        &[if mode == "watch" {
            "aoi:heartbeat"
        } else {
            "\"hit\""
        }],
    );
    // The stdin of `block` is still open: the harness must end the run by itself.
    let (_, summary) = aoi_test::assert_cancelled(child, &mut stdout, seen, sig, exit);
    let signal_name = format!("SIG{sig}");
    assert_eq!(
        summary.properties.and_then(|p| p.get("signal").cloned()),
        Some(serde_json::Value::from(signal_name))
    );
}

#[test]
fn sigint_on_a_cooperative_unbounded_stream_ends_with_a_cancelled_summary_and_130() {
    cancel_run("watch", "INT", 130);
}

#[test]
fn sigterm_ends_with_a_cancelled_summary_and_143() {
    cancel_run("watch", "TERM", 143);
}

#[test]
fn a_tool_blocked_outside_the_emitter_is_ended_by_the_harness_with_a_summary() {
    cancel_run("block", "TERM", 143);
    cancel_run("block", "INT", 130);
}

#[test]
fn a_panic_becomes_an_internal_error_and_a_summary_with_nothing_on_stderr() {
    let out = Command::new(fake_tool()).arg("panic").output().unwrap();
    assert_eq!(out.status.code(), Some(70), "{}", transcript(&out));
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = aoi_test::assert_conforms(&out.stdout);
    assert_eq!(report.verdict, Verdict::Failed);
    let error = aoi_test::events(&out.stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Error(e) => Some(e),
            _ => None,
        })
        .expect("an aoi:error");
    assert_eq!(error.category, Category::Internal);
    assert_eq!(error.code.as_str(), "INTERNAL_PANIC");
    assert!(!error.retryable);
    assert!(error.message.contains("index out of bounds"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("stack backtrace") && !text.contains("panicked at"));
}

#[test]
fn aoi_verify_gates_a_tool_built_on_the_sdk() {
    let tool = fake_tool();
    let tool = tool.to_str().unwrap();
    for (mode, exit) in [("ok", 0), ("fail", 1), ("panic", 1), ("items", 1)] {
        let out = Command::new(aoi())
            .args(["verify", "-q", "--", tool, mode, "6"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(exit),
            "{mode}: {}",
            transcript(&out)
        );
    }
}

#[test]
fn a_returned_error_keeps_its_retry_fields_and_exit_code() {
    let out = Command::new(fake_tool()).arg("fail").output().unwrap();
    assert_eq!(out.status.code(), Some(69));
    let report = aoi_test::assert_conforms(&out.stdout);
    let cause = report.caused_by.expect("the error's retry fields");
    assert_eq!(cause.category, Category::Unavailable);
    assert!(cause.retryable);
    assert_eq!(cause.retry_after_ms, Some(2500));
    let summary = report.summary.unwrap();
    assert_eq!((summary.count, summary.error_count), (Some(1), Some(1)));
}
