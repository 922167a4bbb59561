//! The consumer API (`aoi::read::Session`) against real processes: events as they arrive, and
//! one outcome at the end.

use std::process::{Command, Stdio};

use aoi::read::{Conclusion, Event, Session};
use aoi::{Category, VerifyOptions};

use crate::support::fake_tool;

fn session(args: &[&str]) -> Session {
    let mut cmd = Command::new(fake_tool());
    cmd.args(args).stdin(Stdio::null()).stderr(Stdio::null());
    Session::spawn(&mut cmd, VerifyOptions::default()).expect("spawn")
}

#[test]
fn a_successful_run_yields_typed_events_then_succeeded() {
    let mut s = session(&["ok", "4"]);
    let mut types = Vec::new();
    while let Some(event) = s.next_event().unwrap() {
        types.push(event.unwrap().event.event_type().to_owned());
    }
    assert_eq!(
        types,
        ["aoi:meta", "hit", "hit", "hit", "hit", "aoi:summary"]
    );
    let done = s.finish().unwrap();
    assert!(done.status.success());
    match done.conclusion() {
        Conclusion::Succeeded { summary } => assert_eq!(summary.count, Some(4)),
        other => panic!("expected success, got {other:?}"),
    }
}

#[test]
fn an_honest_failure_carries_the_summary_and_the_retry_fields() {
    let s = session(&["fail"]);
    let done = s.finish().unwrap();
    assert_eq!(done.status.code(), Some(69));
    match done.conclusion() {
        Conclusion::Failed { summary, caused_by } => {
            assert!(!summary.expect("a summary").ok);
            let cause = caused_by.expect("caused_by");
            assert_eq!(cause.category, Category::Unavailable);
            assert_eq!(cause.retry_after_ms, Some(2500));
        }
        other => panic!("expected an honest failure, got {other:?}"),
    }
}

#[test]
fn a_stream_without_summary_is_a_protocol_violation_even_with_exit_0() {
    let s = session(&["no-summary"]);
    let done = s.finish().unwrap();
    assert!(done.status.success());
    match done.conclusion() {
        Conclusion::ProtocolViolation { findings } => {
            assert!(findings
                .iter()
                .any(|f| f.code.as_str() == "SUMMARY_MISSING"));
        }
        other => panic!("expected a violation, got {other:?}"),
    }
}

#[test]
fn events_arrive_while_the_tool_runs_and_a_killed_tool_is_reported_as_killed() {
    let mut s = session(&["watch"]);
    // A heartbeat arrives while the process is still running.
    loop {
        let event = s
            .next_event()
            .unwrap()
            .expect("the stream is open")
            .unwrap();
        if matches!(event.event, Event::Heartbeat(_)) {
            break;
        }
    }
    s.kill().unwrap();
    let done = s.finish().unwrap();
    match done.conclusion() {
        Conclusion::Killed { signal } => assert_eq!(signal, 9),
        other => panic!("expected killed, got {other:?}"),
    }
}
