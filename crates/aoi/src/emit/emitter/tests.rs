//! Unit tests for the emitter and the harness core: every stream written here goes into memory
//! and is read back through the crate's own verifier and decoder, so a rule the emitter breaks
//! fails a test here rather than in a consumer.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Once;

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use super::*;
use crate::emit::harness::{drive, Failure};
use crate::read::{decode, Event, FindingCode, Level, Report, Verdict, Verifier, VerifyOptions};
use crate::wire::{Scope, Severity};

// ---------------------------------------------------------------------------------------------
// Fixtures

const TOOL: &str = "outline";
const TOOL_VERSION: &str = "1.8.2";
const SCHEMA_NAME: &str = "com.example.outline.events";
const SCHEMA_VERSION: &str = "1.0.0";

fn identity() -> Identity {
    Identity::new(TOOL, TOOL_VERSION, SCHEMA_NAME, SCHEMA_VERSION)
}

fn builder() -> EmitterBuilder {
    Emitter::builder(identity()).command("search")
}

fn start() -> Emitter<Vec<u8>> {
    builder().start(Vec::new()).unwrap()
}

#[derive(Serialize)]
struct Hit {
    rank: u32,
    id: String,
}

impl DomainEvent for Hit {
    const TYPE: &'static str = "hit";
}

fn hit(rank: u32) -> Hit {
    Hit {
        rank,
        id: format!("doc_{rank}"),
    }
}

fn code(c: &'static str) -> Code {
    Code::from_static(c)
}

/// Verifies `bytes` and insists on a conforming stream with no finding of any level.
fn verified(bytes: &[u8]) -> Report {
    let report = Verifier::verify_bytes(bytes, VerifyOptions::default());
    assert_eq!(
        report.violations,
        0,
        "findings: {:#?}\nstream:\n{}",
        report.findings,
        String::from_utf8_lossy(bytes)
    );
    report
}

/// Every line as a JSON value, asserting each one ends in `\n`.
fn lines(bytes: &[u8]) -> Vec<Value> {
    assert!(bytes.ends_with(b"\n"), "the stream must end with a newline");
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn raw_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\n").expect("trailing newline");
    body.split(|b| *b == b'\n').collect()
}

fn finish(mut emitter: Emitter<Vec<u8>>, outcome: Outcome) -> (Finished, Vec<u8>) {
    let finished = emitter.finish(outcome).unwrap();
    (finished, emitter.into_writer())
}

fn summary_of(bytes: &[u8]) -> Value {
    lines(bytes).pop().unwrap()
}

/// Silences the default panic hook for the panics these tests cause on purpose (the payload
/// says so), and for no other.
fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !message.contains("deliberate test panic") {
                default(info);
            }
        }));
    });
}

/// A writer that records every `write` and `flush` call, shared so a test can watch it while the
/// emitter owns it.
#[derive(Debug, Clone, Default)]
struct Recorder(Rc<RefCell<Recorded>>);

#[derive(Debug, Default)]
struct Recorded {
    bytes: Vec<u8>,
    writes: usize,
}

impl Recorder {
    fn lines(&self) -> usize {
        self.0
            .borrow()
            .bytes
            .iter()
            .filter(|b| **b == b'\n')
            .count()
    }

    fn writes(&self) -> usize {
        self.0.borrow().writes
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.borrow().bytes.clone()
    }
}

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut r = self.0.borrow_mut();
        r.writes += 1;
        r.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer whose first `ok_writes` writes succeed and every later one fails with `kind`.
#[derive(Debug)]
struct FailingAfter {
    ok_writes: usize,
    kind: io::ErrorKind,
    out: Vec<u8>,
}

impl FailingAfter {
    fn new(ok_writes: usize, kind: io::ErrorKind) -> FailingAfter {
        FailingAfter {
            ok_writes,
            kind,
            out: Vec::new(),
        }
    }
}

impl Write for FailingAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.ok_writes == 0 {
            return Err(io::Error::new(self.kind, "the test writer refuses"));
        }
        self.ok_writes -= 1;
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Identity, framing and numbering

#[test]
fn meta_is_first_and_carries_the_identity_triple_and_command() {
    let (_, bytes) = finish(start(), Outcome::success());
    let report = verified(&bytes);
    assert!(
        report.findings.is_empty(),
        "a plain stream draws no notice either: {:#?}",
        report.findings
    );
    let first = raw_lines(&bytes)[0];
    assert!(
        first.starts_with(b"{\"type\":\"aoi:meta\",\"aoi\":{\"seq\":0,\"run\":\""),
        "type, then the envelope, lead the line: {}",
        String::from_utf8_lossy(first)
    );
    let Event::Meta(meta) = decode(first).unwrap().event else {
        panic!("first line is not aoi:meta")
    };
    assert_eq!(meta.tool.as_deref(), Some(TOOL));
    assert_eq!(meta.tool_version.as_deref(), Some(TOOL_VERSION));
    assert_eq!(meta.aoi_version.as_deref(), Some("1.0-alpha"));
    assert_eq!(meta.schema_name.as_deref(), Some(SCHEMA_NAME));
    assert_eq!(meta.schema_version.as_deref(), Some(SCHEMA_VERSION));
    assert_eq!(meta.command.as_deref(), Some("search"));
    assert_eq!(report.meta.as_ref(), Some(&meta));
}

#[test]
fn the_summary_carries_the_same_identity_triple() {
    let (finished, bytes) = finish(start(), Outcome::success());
    verified(&bytes);
    let last = *raw_lines(&bytes).last().unwrap();
    let Event::Summary(summary) = decode(last).unwrap().event else {
        panic!("last line is not aoi:summary")
    };
    assert_eq!(summary.tool.as_deref(), Some(TOOL));
    assert_eq!(summary.tool_version.as_deref(), Some(TOOL_VERSION));
    assert_eq!(summary.aoi_version.as_deref(), Some(AOI_VERSION));
    assert_eq!(summary.schema_name.as_deref(), Some(SCHEMA_NAME));
    assert_eq!(summary.schema_version.as_deref(), Some(SCHEMA_VERSION));
    assert_eq!(
        summary, finished.summary,
        "Finished reports what was written"
    );
}

#[test]
fn seq_is_contiguous_under_one_ulid_run_and_lines_are_compact() {
    let mut e = start();
    for rank in 1..=3 {
        e.emit(&hit(rank)).unwrap();
    }
    e.warning(&Warning::new(code("INDEX_STALE"), "index_stale"))
        .unwrap();
    e.check(&Check {
        name: "config_file".into(),
        ok: true,
        severity: Some(Severity::Info),
        detail: Some("found".into()),
        hint: None,
        properties: None,
    })
    .unwrap();
    let run = e.run_id();
    let (_, bytes) = finish(e, Outcome::success());
    let report = verified(&bytes);

    assert_eq!(run.len(), 26);
    assert!(ulid::Ulid::from_string(&run).is_ok(), "{run} is not a ULID");
    assert_eq!(report.run.as_deref(), Some(run.as_str()));
    assert!(
        !bytes.contains(&b' '),
        "compact JSON has no spaces:\n{}",
        String::from_utf8_lossy(&bytes)
    );
    assert!(!bytes.contains(&b'\r'));
    let all = lines(&bytes);
    assert_eq!(all.len(), 7);
    assert_eq!(
        bytes.iter().filter(|b| **b == b'\n').count(),
        all.len(),
        "exactly one newline per line"
    );
    for (i, line) in all.iter().enumerate() {
        assert_eq!(line["aoi"]["seq"], json!(i), "line {i}");
        assert_eq!(line["aoi"]["run"], json!(run), "line {i}");
        assert!(line["aoi"].get("t").is_none(), "no aoi.t unless asked");
        assert!(line["aoi"].get("trace_id").is_none());
    }
    assert_eq!(all.last().unwrap()["event_count"], json!(all.len()));
}

#[test]
fn runs_get_distinct_ids_unless_one_is_given() {
    let a = start();
    let b = start();
    assert_ne!(a.run_id(), b.run_id());
    let fixed = builder()
        .run_id("01JZQ7X4TQ9V6H0ZT7K8F2W3C1")
        .start(Vec::new())
        .unwrap();
    let (_, bytes) = finish(fixed, Outcome::success());
    verified(&bytes);
    for line in lines(&bytes) {
        assert_eq!(line["aoi"]["run"], "01JZQ7X4TQ9V6H0ZT7K8F2W3C1");
    }
}

#[test]
fn event_count_counts_every_line_including_the_summary() {
    for domain in [0u32, 1, 5] {
        let mut e = start();
        for rank in 0..domain {
            e.emit(&hit(rank)).unwrap();
        }
        e.progress(&Progress::default()).unwrap();
        let (finished, bytes) = finish(e, Outcome::success());
        verified(&bytes);
        let n = lines(&bytes).len() as u64;
        assert_eq!(n, u64::from(domain) + 3);
        assert_eq!(finished.summary.event_count, Some(n));
        assert_eq!(summary_of(&bytes)["event_count"], json!(n));
    }
}

#[test]
fn timestamps_and_trace_id_go_in_the_envelope_of_every_line() {
    let mut e = builder()
        .timestamps(true)
        .trace_id("4bf92f3577b34da6a3ce929d0e0e4736")
        .start(Vec::new())
        .unwrap();
    e.emit(&hit(1)).unwrap();
    e.warning(&Warning::new(code("W"), "w")).unwrap();
    let (_, bytes) = finish(e, Outcome::success());
    verified(&bytes);
    let all = lines(&bytes);
    let mut previous = 0;
    for line in &all {
        let t = line["aoi"]["t"]
            .as_u64()
            .expect("aoi.t is a non-negative integer");
        assert!(t >= previous, "aoi.t never goes back");
        previous = t;
        assert_eq!(line["aoi"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
        let env = decode(serde_json::to_string(line).unwrap().as_bytes())
            .unwrap()
            .envelope
            .unwrap();
        assert_eq!(env.t, Some(t));
    }
    assert!(
        all.iter()
            .all(|l| l.get("t").is_none() && l.get("trace_id").is_none()),
        "framework fields stay inside `aoi`"
    );
}

#[test]
fn domain_events_round_trip_through_decode() {
    let mut e = start();
    let tricky =
        "quote \" backslash \\ sep\u{2028}par\u{2029} nel\u{85} tab\t nl\n cr\r nul\0 é 💡";
    e.emit_as(
        "hit",
        &json!({"title": tricky, "rank": 1, "score": 0.5, "tags": ["a", "b"], "n": null}),
    )
    .unwrap();
    e.emit(&hit(2)).unwrap();
    let (_, bytes) = finish(e, Outcome::success());
    let report = verified(&bytes);
    assert_eq!(report.domain_events, 2);
    let decoded: Vec<_> = raw_lines(&bytes)
        .into_iter()
        .map(|l| decode(l).unwrap())
        .collect();
    let Event::Domain { ty, fields } = &decoded[1].event else {
        panic!("line 2 is not a domain event: {:?}", decoded[1]);
    };
    assert_eq!(ty, "hit");
    assert_eq!(fields["title"], tricky);
    assert_eq!(fields["score"], 0.5);
    assert_eq!(fields["tags"], json!(["a", "b"]));
    assert!(fields["n"].is_null());
    assert!(
        !fields.contains_key("aoi") && !fields.contains_key("type"),
        "decode takes the envelope and the type out"
    );
    assert_eq!(decoded[1].envelope.as_ref().unwrap().seq, Some(1));
    assert!(matches!(decoded[2].event, Event::Domain { ref ty, .. } if ty == "hit"));
    assert!(matches!(decoded[3].event, Event::Summary(_)));
}

// ---------------------------------------------------------------------------------------------
// Counters

#[test]
fn count_is_domain_events_only() {
    let mut e = start();
    for rank in 0..4 {
        e.emit(&hit(rank)).unwrap();
    }
    e.warning(&Warning::new(code("W"), "w")).unwrap();
    e.error(&ErrorEvent::new(Category::NotFound, code("MISSING"), "m").item())
        .unwrap();
    e.check(&Check {
        name: "c".into(),
        ok: true,
        severity: None,
        detail: None,
        hint: None,
        properties: None,
    })
    .unwrap();
    e.plan(&Plan {
        action: "delete".into(),
        target: Some("/a".into()),
        detail: None,
        properties: None,
    })
    .unwrap();
    e.progress(&Progress::default()).unwrap();
    e.heartbeat(&Heartbeat::default()).unwrap();
    assert_eq!(e.count(), 4);
    let (finished, bytes) = finish(e, Outcome::success());
    let report = verified(&bytes);
    assert_eq!(finished.summary.count, Some(4));
    assert_eq!(report.domain_events, 4);
    assert_eq!(summary_of(&bytes)["count"], 4);
}

#[test]
fn warning_and_error_counts_include_upstream_notes_and_forwards() {
    let mut e = start();
    e.warning(&Warning::new(code("LOCAL_W"), "local")).unwrap();
    e.forward_warning(&Warning::new(code("UP_W"), "upstream"), "source")
        .unwrap();
    e.note_upstream_warning();
    e.note_upstream_warning();
    e.error(&ErrorEvent::new(Category::Validation, code("BAD_ROW"), "bad").item())
        .unwrap();
    e.forward_error(
        &ErrorEvent::new(
            Category::RateLimited,
            code("UPSTREAM_RATE_LIMIT"),
            "slow down",
        ),
        "source",
    )
    .unwrap();
    e.note_upstream_error();
    let (finished, bytes) = finish(e, Outcome::failed());
    let report = verified(&bytes);
    assert_eq!(report.warnings, 2, "two warnings were written");
    assert_eq!(report.errors, 2, "two errors were written");
    assert_eq!(finished.summary.warning_count, Some(4));
    assert_eq!(finished.summary.error_count, Some(3));
    let s = summary_of(&bytes);
    assert_eq!(s["warning_count"], 4);
    assert_eq!(s["error_count"], 3);
}

#[test]
fn forwarded_errors_carry_origin_are_counted_once_and_do_not_fail_the_run() {
    let mut e = start();
    e.emit(&hit(1)).unwrap();
    let upstream = ErrorEvent::new(Category::RateLimited, code("UPSTREAM_RATE_LIMIT"), "slow")
        .retry_after_ms(7200);
    e.forward_error(&upstream, "outline").unwrap();
    // An error already forwarded once keeps the origin of the tool that raised it.
    e.forward_error(&upstream.clone().origin("indexer"), "outline")
        .unwrap();
    e.forward_warning(&Warning::new(code("STALE"), "stale"), "outline")
        .unwrap();
    let (finished, bytes) = finish(e, Outcome::success());
    let report = verified(&bytes);
    assert_eq!(
        report.verdict,
        Verdict::Succeeded,
        "forwarded errors are not local failures"
    );
    assert_eq!(finished.exit_code, 0);
    let all = lines(&bytes);
    assert_eq!(all[2]["type"], "aoi:error");
    assert_eq!(all[2]["origin"], "outline");
    assert_eq!(all[2]["retry_after_ms"], 7200);
    assert_eq!(all[3]["origin"], "indexer");
    assert_eq!(all[4]["type"], "aoi:warning");
    assert_eq!(all[4]["origin"], "outline");
    assert_eq!(
        finished.summary.error_count,
        Some(2),
        "each forwarded error once"
    );
    assert_eq!(finished.summary.warning_count, Some(1));
    assert_eq!(finished.summary.partial, Some(false));
}

#[test]
fn input_count_appears_only_when_input_was_noted() {
    let (finished, bytes) = finish(start(), Outcome::success());
    verified(&bytes);
    assert_eq!(finished.summary.input_count, None);
    assert!(summary_of(&bytes).get("input_count").is_none());

    let mut e = start();
    e.note_input(0);
    let (finished, bytes) = finish(e, Outcome::success());
    verified(&bytes);
    assert_eq!(
        finished.summary.input_count,
        Some(0),
        "zero consumed is still said"
    );
    assert_eq!(summary_of(&bytes)["input_count"], 0);

    let mut e = start();
    e.note_input(3);
    e.note_input(4);
    e.emit(&hit(1)).unwrap();
    let (finished, bytes) = finish(e, Outcome::success());
    verified(&bytes);
    assert_eq!(finished.summary.input_count, Some(7));
    assert_eq!(summary_of(&bytes)["input_count"], 7);
}

#[test]
fn partial_defaults_to_an_item_error_alongside_a_domain_event() {
    let item = || ErrorEvent::new(Category::Validation, code("BAD_ROW"), "bad").item();
    let process = || ErrorEvent::new(Category::Unavailable, code("DOWN"), "down");
    let cases: [(&str, u32, Option<ErrorEvent>, bool); 5] = [
        ("nothing", 0, None, false),
        ("domain only", 2, None, false),
        ("item error only", 0, Some(item()), false),
        ("item error and domain", 2, Some(item()), true),
        ("process error and domain", 2, Some(process()), false),
    ];
    for (name, domain, error, partial) in cases {
        let mut e = start();
        for rank in 0..domain {
            e.emit(&hit(rank)).unwrap();
        }
        if let Some(error) = &error {
            e.error(error).unwrap();
        }
        let (finished, bytes) = finish(e, Outcome::success());
        verified(&bytes);
        assert_eq!(finished.summary.partial, Some(partial), "{name}");
        assert_eq!(summary_of(&bytes)["partial"], partial, "{name}");
    }
}

#[test]
fn outcome_partial_overrides_the_default() {
    let mut e = start();
    e.emit(&hit(1)).unwrap();
    e.error(&ErrorEvent::new(Category::Validation, code("BAD_ROW"), "bad").item())
        .unwrap();
    let (finished, bytes) = finish(e, Outcome::success().partial(false));
    verified(&bytes);
    assert_eq!(finished.summary.partial, Some(false));

    let mut e = start();
    e.emit(&hit(1)).unwrap();
    let (finished, bytes) = finish(e, Outcome::failed().partial(true));
    let report = verified(&bytes);
    assert_eq!(finished.summary.partial, Some(true));
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.code == FindingCode::PartialWithoutErrors),
        "the verifier remarks on partial without errors, as a notice"
    );
}

// ---------------------------------------------------------------------------------------------
// ok, reason and exit codes

#[test]
fn each_outcome_maps_to_ok_reason_and_exit_code() {
    let cases = [
        (Outcome::success(), true, None, 0),
        (Outcome::skipped(), true, Some("skipped"), 0),
        (Outcome::failed(), false, Some("failed"), 1),
        (Outcome::cancelled(), false, Some("cancelled"), 130),
        (Outcome::timed_out(), false, Some("timeout"), 124),
        (Outcome::denied(), false, Some("denied"), 77),
    ];
    for (outcome, ok, reason, exit) in cases {
        let label = format!("{outcome:?}");
        assert_eq!(outcome.is_ok(), ok, "{label}");
        let (finished, bytes) = finish(start(), outcome);
        let report = verified(&bytes);
        let s = summary_of(&bytes);
        assert_eq!(s["ok"], ok, "{label}");
        match reason {
            Some(r) => assert_eq!(s["reason"], r, "{label}"),
            None => assert!(s.get("reason").is_none(), "success carries no reason"),
        }
        assert_eq!(finished.exit_code, exit, "{label}");
        assert_eq!(finished.summary.ok, ok);
        let expected = if ok {
            Verdict::Succeeded
        } else {
            Verdict::Failed
        };
        assert_eq!(report.verdict, expected, "{label}");
    }
}

#[test]
fn success_after_a_process_error_is_failed_with_that_errors_exit_code() {
    for outcome in [Outcome::success(), Outcome::skipped()] {
        let mut e = start();
        e.error(&ErrorEvent::new(
            Category::Unavailable,
            code("INDEX_DOWN"),
            "down",
        ))
        .unwrap();
        // A second process error does not change the exit code: the first one ended the run.
        e.error(&ErrorEvent::new(
            Category::Config,
            code("NO_CONFIG"),
            "no config",
        ))
        .unwrap();
        let (finished, bytes) = finish(e, outcome);
        let report = verified(&bytes);
        assert_eq!(report.verdict, Verdict::Failed);
        assert!(!finished.summary.ok);
        assert_eq!(finished.summary.reason, Some(Reason::Failed));
        assert_eq!(finished.exit_code, 69);
        assert_eq!(summary_of(&bytes)["reason"], "failed");
    }
}

#[test]
fn a_failed_run_takes_its_exit_code_from_the_first_process_error() {
    for category in Category::ALL {
        let mut e = start();
        e.error(&ErrorEvent::new(category, code("E"), "m")).unwrap();
        let (finished, bytes) = finish(e, Outcome::failed());
        verified(&bytes);
        assert_eq!(finished.exit_code, category.exit_code(), "{category}");
    }
    // An item error does not pick the exit code.
    let mut e = start();
    e.error(&ErrorEvent::new(Category::Config, code("E"), "m").item())
        .unwrap();
    let (finished, _) = finish(e, Outcome::failed());
    assert_eq!(finished.exit_code, 1);
    // A failure explained by an upstream error is an honest failure: the generic code, with the
    // upstream's retry fields carried in the summary.
    let up = ErrorEvent::new(Category::RateLimited, code("UPSTREAM_RATE_LIMIT"), "m")
        .retry_after_ms(100);
    let outcome = Outcome::failed().caused_by(CausedBy::from_error(&up, Some("outline")));
    let (finished, bytes) = finish(start(), outcome);
    let report = verified(&bytes);
    assert_eq!(finished.exit_code, 1);
    let cb = report.caused_by.expect("caused_by reaches the report");
    assert_eq!(cb.origin.as_deref(), Some("outline"));
    assert_eq!(cb.retry_after_ms, Some(100));
    assert_eq!(summary_of(&bytes)["caused_by"]["category"], "rate_limited");
}

#[test]
fn caused_by_is_written_only_when_the_run_fails() {
    let up = ErrorEvent::new(Category::Validation, code("BAD_RECORD"), "m");
    let cause = CausedBy::from_error(&up, Some("feed"));
    // A run that went on past the upstream error (--continue-on-error) and succeeded.
    let (finished, bytes) = finish(start(), Outcome::success().caused_by(cause.clone()));
    let report = verified(&bytes);
    assert!(summary_of(&bytes).get("caused_by").is_none());
    assert_eq!(finished.summary.caused_by, None);
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.code == FindingCode::CausedByOnSuccess),
        "{:#?}",
        report.findings
    );
    // The same outcome made a failure by a process-scope error keeps it.
    let mut e = start();
    e.error(&ErrorEvent::new(Category::Conflict, code("E"), "m"))
        .unwrap();
    let (finished, bytes) = finish(e, Outcome::success().caused_by(cause));
    verified(&bytes);
    assert_eq!(summary_of(&bytes)["caused_by"]["code"], "BAD_RECORD");
    assert_eq!(finished.exit_code, Category::Conflict.exit_code());
}

#[test]
fn plan_details_and_progress_messages_are_one_line() {
    let mut e = start();
    e.plan(&Plan {
        action: "skip".into(),
        target: Some("doc_3".into()),
        detail: Some("already gone\nsecond \u{1b}[31mred\u{1b}[0m".into()),
        properties: None,
    })
    .unwrap();
    e.progress(&Progress {
        completed: Some(1),
        message: Some("copying\r\nfile \u{9b}1mtwo".into()),
        ..Progress::default()
    })
    .unwrap();
    let (_, bytes) = finish(e, Outcome::success());
    verified(&bytes);
    let lines = lines(&bytes);
    assert_eq!(lines[1]["detail"], "already gone second red");
    assert_eq!(lines[2]["message"], "copying file two");
}

#[test]
fn truncated_sets_next_cursor_which_is_absent_otherwise() {
    let (finished, bytes) = finish(start(), Outcome::success());
    verified(&bytes);
    let s = summary_of(&bytes);
    assert_eq!(s["truncated"], false);
    assert!(s.get("next_cursor").is_none());
    assert_eq!(finished.summary.next_cursor, None);

    let outcome = Outcome::success().truncated(Some("c2VhcmNoOjI".into()));
    let (finished, bytes) = finish(start(), outcome);
    verified(&bytes);
    let s = summary_of(&bytes);
    assert_eq!(s["truncated"], true);
    assert_eq!(s["next_cursor"], "c2VhcmNoOjI");
    assert_eq!(finished.summary.truncated, Some(true));

    let (_, bytes) = finish(start(), Outcome::success().truncated(None));
    verified(&bytes);
    let s = summary_of(&bytes);
    assert_eq!(s["truncated"], true);
    assert!(
        s.get("next_cursor").is_none(),
        "no cursor when none can be given"
    );
}

#[test]
fn outcome_properties_upstream_and_meta_properties_are_written() {
    let mut e = builder()
        .meta_property("input_mode", "jsonl")
        .args(
            Some(vec!["search".into(), "--token=<redacted>".into()]),
            true,
        )
        .start(Vec::new())
        .unwrap();
    e.emit(&hit(1)).unwrap();
    let upstream = Upstream {
        tool: Some("source".into()),
        tool_version: Some("0.1.0".into()),
        schema_name: None,
        schema_version: None,
    };
    let (_, bytes) = finish(
        e,
        Outcome::success()
            .upstream(upstream)
            .property("vendor_cache_hits", 41),
    );
    let report = verified(&bytes);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    let all = lines(&bytes);
    assert_eq!(all[0]["properties"]["input_mode"], "jsonl");
    assert_eq!(all[0]["args_redacted"], true);
    assert_eq!(all[0]["args"][1], "--token=<redacted>");
    let s = all.last().unwrap();
    assert_eq!(s["properties"]["vendor_cache_hits"], 41);
    assert_eq!(
        s["upstream"],
        json!({"tool": "source", "tool_version": "0.1.0"})
    );
}

// ---------------------------------------------------------------------------------------------
// Reserved names and refused events

#[derive(Serialize)]
struct WithAoiField {
    rank: u32,
    aoi: u32,
}

impl DomainEvent for WithAoiField {
    const TYPE: &'static str = "hit";
}

#[derive(Serialize)]
struct WithTypeField {
    rank: u32,
    #[serde(rename = "type")]
    kind: String,
}

impl DomainEvent for WithTypeField {
    const TYPE: &'static str = "hit";
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum Tagged {
    Hit { rank: u32 },
}

impl DomainEvent for Tagged {
    const TYPE: &'static str = "hit";
}

#[test]
fn reserved_names_and_types_are_refused_and_nothing_is_written() {
    let mut e = start();
    e.emit(&hit(1)).unwrap();

    let err = e.emit(&WithAoiField { rank: 1, aoi: 2 }).unwrap_err();
    assert!(
        matches!(err, EmitError::Serialize(ref m) if m.contains("`aoi`")),
        "{err}"
    );
    // `rank` was serialized before `type` failed: it must not survive either.
    let err = e
        .emit(&WithTypeField {
            rank: 1,
            kind: "x".into(),
        })
        .unwrap_err();
    assert!(
        matches!(err, EmitError::Serialize(ref m) if m.contains("`type`")),
        "{err}"
    );
    let err = e.emit(&Tagged::Hit { rank: 1 }).unwrap_err();
    assert!(matches!(err, EmitError::Serialize(_)), "{err}");
    let mut map = BTreeMap::new();
    map.insert("a_first", "x");
    map.insert("type", "y");
    assert!(matches!(
        e.emit_as("hit", &map),
        Err(EmitError::Serialize(_))
    ));
    let mut map = BTreeMap::new();
    map.insert("aoi", 1);
    assert!(matches!(
        e.emit_as("hit", &map),
        Err(EmitError::Serialize(_))
    ));
    assert!(matches!(
        e.emit_as("hit", &json!({"nested": {"type": "fine"}, "type": 1})),
        Err(EmitError::Serialize(_))
    ));
    for not_an_object in [json!(5), json!("text"), json!([1, 2]), json!(true)] {
        assert!(
            matches!(
                e.emit_as("hit", &not_an_object),
                Err(EmitError::Serialize(_))
            ),
            "{not_an_object}"
        );
    }
    for bad_type in ["aoi:hit", "aoi:summary", "aoi:", ""] {
        let err = e.emit_as(bad_type, &json!({"rank": 1})).unwrap_err();
        assert!(
            matches!(err, EmitError::InvalidType(ref t) if t == bad_type),
            "{bad_type:?}: {err}"
        );
    }
    // A nested `type` is the tool's own business, and so are unprefixed framework-like names.
    e.emit_as("hit", &json!({"nested": {"type": "fine", "aoi": 1}}))
        .unwrap();
    e.emit_as("summary", &json!({"text": "a document summary"}))
        .unwrap();
    e.emit_as("aoi", &json!({})).unwrap();
    e.emit(&hit(2)).unwrap();
    assert_eq!(e.count(), 5);

    let (finished, bytes) = finish(e, Outcome::success());
    let report = verified(&bytes);
    assert_eq!(report.verdict, Verdict::Succeeded);
    assert_eq!(finished.summary.count, Some(5));
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(!text.contains("\"kind\"") && !text.contains("\"a_first\""));
    let all = lines(&bytes);
    assert_eq!(all.len(), 7);
    for (i, line) in all.iter().enumerate() {
        assert_eq!(line["aoi"]["seq"], json!(i));
    }
}

/// Serializes one field, then panics, as a buggy `Serialize` impl might.
struct Explodes;

impl Serialize for Explodes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Explodes", 2)?;
        s.serialize_field("half_written", "HALF_WRITTEN_MARKER")?;
        panic!("deliberate test panic inside Serialize")
    }
}

impl DomainEvent for Explodes {
    const TYPE: &'static str = "boom";
}

#[test]
fn a_panic_inside_serialize_under_drive_ends_with_internal_panic_and_exit_70() {
    quiet_deliberate_panics();
    let mut e = start();
    let code = drive(&mut e, |out| {
        out.emit(&hit(1))?;
        out.emit(&Explodes)?;
        Ok(Outcome::success())
    });
    assert_eq!(code, 70);
    let bytes = e.into_writer();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        !text.contains("HALF_WRITTEN_MARKER") && !text.contains("\"boom\""),
        "no part of the exploded event reaches the stream:\n{text}"
    );
    let report = verified(&bytes);
    assert_eq!(report.verdict, Verdict::Failed);
    let all = lines(&bytes);
    assert_eq!(all.len(), 4, "meta, hit, error, summary");
    let error = &all[2];
    assert_eq!(error["type"], "aoi:error");
    assert_eq!(error["category"], "internal");
    assert_eq!(error["code"], "INTERNAL_PANIC");
    assert_eq!(error["scope"], "process");
    assert_eq!(error["retryable"], false);
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("deliberate test panic inside Serialize"));
    let s = &all[3];
    assert_eq!(s["ok"], false);
    assert_eq!(s["reason"], "failed");
    assert_eq!(s["count"], 1);
    assert_eq!(s["error_count"], 1);
}

#[test]
fn the_emitter_stays_usable_after_a_panic_inside_serialize() {
    quiet_deliberate_panics();
    let mut e = start();
    e.emit(&hit(1)).unwrap();
    let caught = panic::catch_unwind(AssertUnwindSafe(|| e.emit(&Explodes)));
    assert!(caught.is_err(), "the panic propagates to the caller");
    e.emit(&hit(2)).unwrap();
    assert_eq!(e.count(), 2);
    let (_, bytes) = finish(e, Outcome::success());
    let report = verified(&bytes);
    assert_eq!(report.verdict, Verdict::Succeeded);
    assert_eq!(report.domain_events, 2);
    assert!(!String::from_utf8(bytes)
        .unwrap()
        .contains("HALF_WRITTEN_MARKER"));
}

#[test]
fn a_panic_in_the_body_becomes_an_internal_error() {
    quiet_deliberate_panics();
    let mut e = start();
    let code = drive(&mut e, |out| {
        out.emit(&hit(1))?;
        panic!("deliberate test panic in the body: {}", 42);
    });
    assert_eq!(code, 70);
    let bytes = e.into_writer();
    verified(&bytes);
    let all = lines(&bytes);
    assert_eq!(all[2]["code"], "INTERNAL_PANIC");
    assert!(all[2]["message"].as_str().unwrap().contains("42"));
    assert_eq!(all[3]["reason"], "failed");
}

// ---------------------------------------------------------------------------------------------
// drive: errors returned by the body

#[test]
fn drive_turns_a_returned_error_into_a_process_error_and_a_failed_summary() {
    for category in Category::ALL {
        let mut e = start();
        let returned = ErrorEvent::new(category, code("BODY_FAILED"), "it failed").item();
        let code = drive(&mut e, |out| {
            out.emit(&hit(1))?;
            Err(returned.into())
        });
        let bytes = e.into_writer();
        let report = verified(&bytes);
        assert_eq!(report.verdict, Verdict::Failed, "{category}");
        let all = lines(&bytes);
        assert_eq!(all.len(), 4, "{category}");
        let error = &all[2];
        assert_eq!(error["type"], "aoi:error");
        assert_eq!(error["category"], category.as_str());
        assert_eq!(error["code"], "BODY_FAILED");
        assert_eq!(error["scope"], "process", "a returned error ended the run");
        let s = &all[3];
        assert_eq!(s["ok"], false);
        let (reason, exit) = match category {
            Category::Cancelled => ("cancelled", 130),
            Category::Timeout => ("timeout", 124),
            Category::Authz => ("denied", 77),
            c => ("failed", c.exit_code()),
        };
        assert_eq!(s["reason"], reason, "{category}");
        assert_eq!(code, exit, "{category}");
        assert_eq!(s["error_count"], 1);
        assert_eq!(
            s["partial"], false,
            "a process error is not a partial result"
        );
    }
}

#[test]
fn a_denied_failure_ends_with_reason_denied_and_77() {
    let mut e = start();
    let refusal = ErrorEvent::new(
        Category::PreconditionFailed,
        code("CONFIRMATION_REQUIRED"),
        "delete needs --confirm",
    );
    let code = drive(&mut e, |_| Err(Failure::denied(refusal)));
    assert_eq!(code, 77);
    let bytes = e.into_writer();
    verified(&bytes);
    let all = lines(&bytes);
    assert_eq!(all[1]["category"], "precondition_failed");
    assert_eq!(all[2]["reason"], "denied");
}

#[test]
fn drive_normalizes_a_returned_error_built_by_hand() {
    let mut e = start();
    let mut returned = ErrorEvent::new(Category::Validation, code("BAD"), "x");
    returned.message = "first line\nsecond line".into();
    returned.retry_after_ms = Some(10);
    let code = drive(&mut e, |_| Err(returned.into()));
    assert_eq!(code, 65);
    let bytes = e.into_writer();
    verified(&bytes);
    let all = lines(&bytes);
    assert_eq!(all[1]["message"], "first line second line");
    assert!(all[1].get("retry_after_ms").is_none());
}

#[test]
fn drive_returns_the_outcome_exit_code() {
    let mut e = start();
    assert_eq!(drive(&mut e, |_| Ok(Outcome::success())), 0);
    verified(&e.into_writer());
    let mut e = start();
    assert_eq!(drive(&mut e, |_| Ok(Outcome::denied())), 77);
    verified(&e.into_writer());
    let mut e = start();
    assert_eq!(drive(&mut e, |_| Ok(Outcome::timed_out())), 124);
    verified(&e.into_writer());
}

#[test]
fn a_failure_may_state_the_tools_own_exit_code_but_a_process_error_decides_first() {
    let mut e = start();
    assert_eq!(drive(&mut e, |_| Ok(Outcome::failed().exit_code(2))), 2);
    verified(&e.into_writer());
    // A success is 0, whatever is stated.
    let mut e = start();
    assert_eq!(drive(&mut e, |_| Ok(Outcome::success().exit_code(2))), 0);
    verified(&e.into_writer());
    // A process-scope error ended the run: its category's code (io: 74).
    let mut e = start();
    let code = drive(&mut e, |out| {
        out.error(&ErrorEvent::new(
            Category::Io,
            Code::from_static("DISK"),
            "disk gone",
        ))?;
        Ok(Outcome::failed().exit_code(2))
    });
    assert_eq!(code, 74);
    verified(&e.into_writer());
}

// ---------------------------------------------------------------------------------------------
// drive: lost stdout

#[test]
fn a_broken_pipe_ends_quietly_with_141() {
    // At the summary.
    let mut e = builder()
        .start(FailingAfter::new(1, io::ErrorKind::BrokenPipe))
        .unwrap();
    let code = drive(&mut e, |out| {
        out.emit(&hit(1))?;
        Ok(Outcome::success())
    });
    assert_eq!(code, 141);
    // In the middle of the run, where the body sees it through `?`.
    let mut e = builder()
        .start(FailingAfter::new(1, io::ErrorKind::BrokenPipe))
        .unwrap();
    let mut seen = None;
    let code = drive(&mut e, |out| {
        out.emit(&hit(1))?;
        let r = out.progress(&Progress::default());
        seen = Some(r.as_ref().map_err(EmitError::is_broken_pipe).err());
        r?;
        Ok(Outcome::success())
    });
    assert_eq!(code, 141);
    assert_eq!(seen, Some(Some(true)), "the body saw a broken pipe");
    // Nothing but meta ever reached the pipe.
    assert_eq!(lines(&e.into_writer().out).len(), 1);
}

#[test]
fn any_other_write_failure_ends_with_74() {
    for kind in [
        io::ErrorKind::Other,
        io::ErrorKind::PermissionDenied,
        io::ErrorKind::WriteZero,
    ] {
        let mut e = builder().start(FailingAfter::new(1, kind)).unwrap();
        assert_eq!(drive(&mut e, |_| Ok(Outcome::success())), 74, "{kind:?}");
        let mut e = builder().start(FailingAfter::new(1, kind)).unwrap();
        let code = drive(&mut e, |out| {
            out.flush()?;
            Ok(Outcome::success())
        });
        assert_eq!(code, 74, "{kind:?}");
    }
}

#[test]
fn a_writer_that_fails_at_once_fails_start() {
    let err = builder()
        .start(FailingAfter::new(0, io::ErrorKind::BrokenPipe))
        .unwrap_err();
    assert!(err.is_broken_pipe());
    let err = builder()
        .start(FailingAfter::new(0, io::ErrorKind::Other))
        .unwrap_err();
    assert!(matches!(err, EmitError::Io(_)) && !err.is_broken_pipe());
    assert_eq!(ErrorEvent::from(err).category, Category::Io);
}

// ---------------------------------------------------------------------------------------------
// After the summary

#[test]
fn nothing_may_follow_the_summary() {
    let mut e = start();
    e.finish(Outcome::success()).unwrap();
    assert!(matches!(e.emit(&hit(1)), Err(EmitError::Finished)));
    assert!(matches!(
        e.emit_as("hit", &json!({})),
        Err(EmitError::Finished)
    ));
    assert!(matches!(
        e.warning(&Warning::new(code("W"), "w")),
        Err(EmitError::Finished)
    ));
    assert!(matches!(
        e.error(&ErrorEvent::new(Category::Internal, code("E"), "e")),
        Err(EmitError::Finished)
    ));
    assert!(matches!(
        e.progress(&Progress::default()),
        Err(EmitError::Finished)
    ));
    assert!(matches!(
        e.finish(Outcome::failed()),
        Err(EmitError::Finished)
    ));
    assert_eq!(e.count(), 0);
    let bytes = e.into_writer();
    let report = verified(&bytes);
    assert_eq!(report.verdict, Verdict::Succeeded);
    assert_eq!(lines(&bytes).len(), 2);
    // The error a tool would propagate for it is an internal one.
    let event = ErrorEvent::from(EmitError::Finished);
    assert_eq!(event.category, Category::Internal);
    assert_eq!(event.code.as_str(), "STREAM_FINISHED");
}

#[test]
fn a_summary_written_by_the_body_is_not_written_twice() {
    // Misuse (the body owns no summary), but the stream must stay whole. The exit code drive
    // returns here (70) is not asserted: it contradicts the ok:true summary already written.
    let mut e = start();
    drive(&mut e, |out| {
        out.finish(Outcome::success())?;
        Ok(Outcome::failed())
    });
    let bytes = e.into_writer();
    let report = verified(&bytes);
    assert_eq!(lines(&bytes).len(), 2);
    assert_eq!(
        report.verdict,
        Verdict::Succeeded,
        "the first summary stands"
    );
}

// ---------------------------------------------------------------------------------------------
// Cancellation

#[test]
fn after_cancel_every_emit_fails_with_cancelled() {
    let token = CancelToken::new();
    let mut e = builder()
        .cancel_token(token.clone())
        .start(Vec::new())
        .unwrap();
    e.emit(&hit(1)).unwrap();
    assert!(e.check_cancelled().is_ok());
    token.cancel(Signal::Interrupt);
    assert_eq!(e.cancel_token().cancelled(), Some(Signal::Interrupt));
    assert!(matches!(
        e.check_cancelled(),
        Err(EmitError::Cancelled(Signal::Interrupt))
    ));
    assert!(matches!(
        e.emit(&hit(2)),
        Err(EmitError::Cancelled(Signal::Interrupt))
    ));
    // Cancellation is checked before anything else about the event.
    assert!(matches!(
        e.emit_as("aoi:nope", &json!({})),
        Err(EmitError::Cancelled(_))
    ));
    assert!(matches!(
        e.warning(&Warning::new(code("W"), "w")),
        Err(EmitError::Cancelled(_))
    ));
    assert!(matches!(
        e.error(&ErrorEvent::new(Category::Internal, code("E"), "e")),
        Err(EmitError::Cancelled(_))
    ));
    assert!(matches!(
        e.heartbeat(&Heartbeat::default()),
        Err(EmitError::Cancelled(_))
    ));
    assert_eq!(e.count(), 1);
    let event = ErrorEvent::from(EmitError::Cancelled(Signal::Interrupt));
    assert_eq!(event.category, Category::Cancelled);
    // finish itself still works: the summary is what a cancelled run owes its consumer.
    let (finished, bytes) = finish(e, Outcome::cancelled());
    assert_eq!(finished.exit_code, 130);
    assert_eq!(verified(&bytes).verdict, Verdict::Failed);
}

#[test]
fn drive_ends_a_cancelled_run_with_reason_cancelled_and_the_signal_exit_code() {
    for (signal, exit, name) in [
        (Signal::Interrupt, 130, "SIGINT"),
        (Signal::Terminate, 143, "SIGTERM"),
    ] {
        let token = CancelToken::new();
        let mut e = builder()
            .cancel_token(token.clone())
            .start(Vec::new())
            .unwrap();
        let code = drive(&mut e, |out| {
            out.emit(&hit(1))?;
            out.emit(&hit(2))?;
            token.cancel(signal);
            out.emit(&hit(3))?;
            Ok(Outcome::success())
        });
        assert_eq!(code, exit, "{name}");
        let bytes = e.into_writer();
        let report = verified(&bytes);
        assert_eq!(report.verdict, Verdict::Failed);
        let all = lines(&bytes);
        assert_eq!(
            all.len(),
            4,
            "meta, two hits, summary: no error for the unwinding"
        );
        let s = &all[3];
        assert_eq!(s["ok"], false);
        assert_eq!(s["reason"], "cancelled");
        assert_eq!(s["properties"]["signal"], name);
        assert_eq!(s["count"], 2);
        assert_eq!(s["error_count"], 0);
    }
}

#[test]
fn a_cancelled_run_is_cancelled_whatever_the_body_returns() {
    let bodies: [Body; 3] = [
        |_, t| {
            t.cancel(Signal::Terminate);
            Ok(Outcome::success())
        },
        |_, t| {
            t.cancel(Signal::Terminate);
            Err(ErrorEvent::new(Category::Unavailable, code("DOWN"), "down").into())
        },
        |out, t| {
            out.error(&ErrorEvent::new(Category::Config, code("NO_CONFIG"), "m"))?;
            t.cancel(Signal::Terminate);
            Ok(Outcome::success())
        },
    ];
    for body in bodies {
        let token = CancelToken::new();
        let mut e = builder()
            .cancel_token(token.clone())
            .start(Vec::new())
            .unwrap();
        assert_eq!(drive(&mut e, |out| body(out, &token)), 143);
        let bytes = e.into_writer();
        verified(&bytes);
        let s = summary_of(&bytes);
        assert_eq!(s["reason"], "cancelled");
        assert_eq!(s["properties"]["signal"], "SIGTERM");
    }
}

/// A run body that ignores the token's cancellation in some way.
type Body = fn(&mut Emitter<Vec<u8>>, &CancelToken) -> crate::emit::RunResult;

// ---------------------------------------------------------------------------------------------
// Flushing

/// Something that should write the buffered lines through.
type Flusher = fn(&mut Emitter<Recorder>);

#[test]
fn only_meta_is_written_through_until_something_asks_for_a_flush() {
    let rec = Recorder::default();
    let mut e = builder().start(rec.clone()).unwrap();
    assert_eq!(rec.lines(), 1, "meta is flushed at start");
    let after_meta = rec.writes();
    assert!(after_meta >= 1);

    // Buffered: domain events, warnings, checks, plans, forwarded warnings, notes.
    let quiet = |e: &mut Emitter<Recorder>| {
        e.emit(&hit(1)).unwrap();
        e.warning(&Warning::new(code("W"), "w")).unwrap();
        e.forward_warning(&Warning::new(code("W"), "w"), "up")
            .unwrap();
        e.check(&Check {
            name: "c".into(),
            ok: true,
            severity: None,
            detail: None,
            hint: None,
            properties: None,
        })
        .unwrap();
        e.plan(&Plan {
            action: "delete".into(),
            target: None,
            detail: None,
            properties: None,
        })
        .unwrap();
        e.note_upstream_error();
        e.note_input(1);
    };
    let mut expect_lines = 1;
    let flushers: [(&str, Flusher); 6] = [
        ("progress", |e| e.progress(&Progress::default()).unwrap()),
        ("heartbeat", |e| e.heartbeat(&Heartbeat::default()).unwrap()),
        ("item error", |e| {
            e.error(&ErrorEvent::new(Category::NotFound, code("E"), "e").item())
                .unwrap()
        }),
        ("forwarded error", |e| {
            e.forward_error(&ErrorEvent::new(Category::NotFound, code("E"), "e"), "up")
                .unwrap()
        }),
        ("flush", |e| e.flush().unwrap()),
        ("finish", |e| {
            e.finish(Outcome::success()).unwrap();
        }),
    ];
    for (name, flusher) in flushers {
        let writes = rec.writes();
        quiet(&mut e);
        assert_eq!(
            rec.writes(),
            writes,
            "{name}: nothing written before the flush"
        );
        assert_eq!(rec.lines(), expect_lines, "{name}");
        flusher(&mut e);
        expect_lines += 5 + usize::from(name != "flush");
        assert_eq!(
            rec.lines(),
            expect_lines,
            "{name}: everything written through"
        );
    }
    verified(&rec.bytes());
}

#[test]
fn a_full_buffer_is_written_through_without_being_asked() {
    let rec = Recorder::default();
    let mut e = builder().start(rec.clone()).unwrap();
    let meta_len = rec.bytes().len();
    let writes = rec.writes();
    let payload = "x".repeat(1000);
    let mut emitted = 0;
    while rec.writes() == writes {
        e.emit_as("blob", &json!({ "payload": payload })).unwrap();
        emitted += 1;
        assert!(emitted < 1000, "the buffer never flushed");
    }
    let bytes = rec.bytes();
    let data = &bytes[meta_len..];
    let lines_written = data.iter().filter(|b| **b == b'\n').count();
    assert_eq!(lines_written, emitted, "whole lines only, all of them");
    let last_line = data[..data.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(data.len(), |p| data.len() - p - 1);
    assert!(
        data.len() >= FLUSH_AT,
        "flushed at the threshold, not before"
    );
    assert!(
        data.len() - last_line < FLUSH_AT,
        "flushed as soon as the threshold was crossed"
    );
    e.finish(Outcome::success()).unwrap();
    verified(&rec.bytes());
}

#[test]
fn flush_each_line_writes_every_line_through() {
    let rec = Recorder::default();
    let mut e = builder().flush_each_line(true).start(rec.clone()).unwrap();
    for n in 1..=3 {
        e.emit(&hit(n)).unwrap();
        assert_eq!(rec.lines(), 1 + n as usize);
    }
    e.warning(&Warning::new(code("W"), "w")).unwrap();
    assert_eq!(rec.lines(), 5);
    e.finish(Outcome::success()).unwrap();
    verified(&rec.bytes());
}

// ---------------------------------------------------------------------------------------------
// Errors written as the spec requires

#[test]
fn errors_are_written_with_every_required_field() {
    let mut e = start();
    let error = ErrorEvent::new(Category::RateLimited, code("UPSTREAM_RATE_LIMIT"), "slow")
        .item()
        .retry_after_ms(4500)
        .target("/documents/abc123")
        .item_index(17);
    e.error(&error).unwrap();
    let (_, bytes) = finish(e, Outcome::failed());
    verified(&bytes);
    let line = &lines(&bytes)[1];
    assert_eq!(line["scope"], "item");
    assert_eq!(line["category"], "rate_limited");
    assert_eq!(line["code"], "UPSTREAM_RATE_LIMIT");
    assert_eq!(line["retryable"], true);
    assert_eq!(line["retry_after_ms"], 4500);
    assert_eq!(line["item_index"], 17);
    // §9.1 `domain` SHOULD, defaulting to the tool: written as the tool's name.
    assert_eq!(line["domain"], "outline");
    let Event::Error(decoded) = decode(raw_lines(&bytes)[1]).unwrap().event else {
        panic!("not an error")
    };
    assert_eq!(decoded, error.clone().domain("outline"));
    assert_eq!(decoded.scope, Scope::Item);
}

#[test]
fn hand_built_errors_are_written_in_their_valid_form() {
    // The fields are public: an error decoded from upstream or built by hand may break the
    // invariants the builder keeps. What reaches the stream must not.
    let mut multiline = ErrorEvent::new(Category::Validation, code("BAD"), "x");
    multiline.message = "line one\nline two\u{2028}three".into();
    let mut retry_without_retryable = ErrorEvent::new(Category::Unavailable, code("DOWN"), "down");
    retry_without_retryable.retryable = false;
    retry_without_retryable.retry_after_ms = Some(500);
    let mut e = start();
    e.error(&multiline.clone().item()).unwrap();
    e.error(&retry_without_retryable.clone().item()).unwrap();
    e.forward_error(&multiline, "up").unwrap();
    e.forward_error(&retry_without_retryable, "up").unwrap();
    let (_, bytes) = finish(e, Outcome::failed());
    let report = verified(&bytes);
    assert_eq!(report.errors, 4);
    let all = lines(&bytes);
    assert_eq!(all[1]["message"], "line one line two three");
    assert!(all[2].get("retry_after_ms").is_none());
    assert_eq!(all[3]["message"], "line one line two three");
    assert!(all[4].get("retry_after_ms").is_none());
}

#[test]
fn ansi_controls_in_data_are_escaped_and_never_reach_the_wire_raw() {
    let mut e = start();
    let texts = ["\u{1b}[31mred\u{1b}[0m", "csi \u{9b}1m", "esc alone \u{1b}"];
    for text in texts {
        e.emit_as("hit", &json!({ "title": text, text: 1 }))
            .unwrap();
        e.warning(&Warning::new(code("W"), "w").target(text))
            .unwrap();
        e.plan(&Plan {
            action: text.into(),
            target: None,
            detail: None,
            properties: None,
        })
        .unwrap();
    }
    let outcome = Outcome::success()
        .truncated(Some("cursor\u{9b}0m".into()))
        .property("note", "\u{1b}[1mbold");
    let (finished, bytes) = finish(e, outcome);
    assert_eq!(finished.exit_code, 0);
    assert!(!bytes.contains(&0x1b), "no raw ESC");
    assert!(!bytes.windows(2).any(|w| w == [0xc2, 0x9b]), "no raw CSI");
    let report = verified(&bytes);
    assert_eq!(report.verdict, Verdict::Succeeded);
    assert!(report
        .findings
        .iter()
        .filter(|f| f.code == FindingCode::AnsiEscape)
        .all(|f| f.level == Level::Notice));
    // The data survives exactly.
    let all = lines(&bytes);
    assert_eq!(all[1]["title"], texts[0]);
    assert_eq!(all[4]["title"], texts[1]);
    assert_eq!(summary_of(&bytes)["next_cursor"], "cursor\u{9b}0m");
}

#[test]
fn a_returned_error_with_controls_in_its_fields_is_reported_whole() {
    let mut e = start();
    let returned = ErrorEvent::new(
        Category::NotFound,
        code("NO_DOC"),
        "no such \u{1b}[1mdocument",
    )
    .target("/docs/\u{1b}[31mred");
    let code = drive(&mut e, |_| Err(returned.into()));
    assert_eq!(code, 66);
    let bytes = e.into_writer();
    verified(&bytes);
    let all = lines(&bytes);
    assert_eq!(all.len(), 3);
    assert_eq!(all[1]["code"], "NO_DOC");
    assert_eq!(
        all[1]["message"], "no such document",
        "messages are single-line, no ANSI"
    );
    assert_eq!(all[1]["target"], "/docs/\u{1b}[31mred", "targets are data");
    assert_eq!(all[2]["reason"], "failed");
}

// ---------------------------------------------------------------------------------------------
// The harness's signal watcher writes the summary from another thread

#[test]
fn a_summary_written_from_another_thread_counts_every_line_before_it() {
    // The watcher ends a run that did not reach a safe point by taking the shared state and
    // finishing it. Whatever line it lands after, the summary's counters cover every line.
    for round in 0..100 {
        let mut e = start();
        let core = e.shared_core();
        let watcher = std::thread::spawn(move || {
            for _ in 0..(round % 10) * 20 {
                std::thread::yield_now();
            }
            let mut guard = core.lock().unwrap_or_else(|p| p.into_inner());
            guard.finish(Outcome::cancelled()).unwrap();
        });
        for _ in 0..500 {
            let written = match round % 3 {
                0 => e.warning(&Warning::new(code("W"), "w")),
                1 => e.error(&ErrorEvent::new(Category::Unavailable, code("E"), "e")),
                _ => e.forward_error(&ErrorEvent::new(Category::NotFound, code("E"), "e"), "up"),
            };
            match written {
                Ok(()) => {}
                Err(EmitError::Finished) => break,
                Err(other) => panic!("{other}"),
            }
        }
        watcher.join().unwrap();
        let bytes = e.into_writer();
        verified(&bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// --max-bytes (§15)

#[test]
fn max_bytes_refuses_the_event_that_would_pass_the_bound_and_marks_the_summary_truncated() {
    let mut e = Emitter::builder(Identity::new(
        TOOL,
        TOOL_VERSION,
        SCHEMA_NAME,
        SCHEMA_VERSION,
    ))
    .max_bytes(Some(600))
    .start(Vec::new())
    .unwrap();
    let mut written = 0;
    let mut refused = None;
    for n in 1..100 {
        match e.emit(&hit(n)) {
            Ok(()) => written += 1,
            Err(err) => {
                refused = Some(err);
                break;
            }
        }
    }
    assert!(matches!(refused, Some(EmitError::ByteLimit)));
    assert!(e.emit(&hit(1000)).is_err(), "the bound stays reached");
    e.warning(&Warning::new(code("W"), "framework events still go out"))
        .unwrap();
    let finished = e.finish(Outcome::success()).unwrap();
    let bytes = e.into_writer();
    let report = verified(&bytes);
    assert_eq!(report.domain_events, written);
    assert_eq!(finished.summary.truncated, Some(true));
    assert!(finished.summary.ok);
    let domain_bytes: usize = bytes
        .split_inclusive(|b| *b == b'\n')
        .skip(1)
        .take(written as usize)
        .map(<[u8]>::len)
        .sum();
    assert!(
        domain_bytes <= 600,
        "the domain events stay within the bound"
    );
    assert!(
        domain_bytes + 100 > 600,
        "the meta line is not counted against it: {domain_bytes} bytes of events"
    );
}

#[test]
fn max_bytes_below_one_event_still_writes_the_first_so_paging_moves_on() {
    let mut e = Emitter::builder(Identity::new(
        TOOL,
        TOOL_VERSION,
        SCHEMA_NAME,
        SCHEMA_VERSION,
    ))
    .max_bytes(Some(1))
    .start(Vec::new())
    .unwrap();
    e.emit(&hit(1)).unwrap();
    assert!(matches!(e.emit(&hit(2)), Err(EmitError::ByteLimit)));
    let finished = e.finish(Outcome::success()).unwrap();
    assert_eq!(finished.summary.count, Some(1));
    assert_eq!(finished.summary.truncated, Some(true));
    verified(&e.into_writer());
}

#[test]
fn a_byte_limit_returned_through_question_mark_is_a_bounded_success() {
    let mut e = Emitter::builder(Identity::new(
        TOOL,
        TOOL_VERSION,
        SCHEMA_NAME,
        SCHEMA_VERSION,
    ))
    .max_bytes(Some(400))
    .start(Vec::new())
    .unwrap();
    let code = drive(&mut e, |out| {
        for n in 1..1000 {
            out.emit(&hit(n))?;
        }
        Ok(Outcome::success())
    });
    assert_eq!(code, 0);
    let bytes = e.into_writer();
    let report = verified(&bytes);
    assert_eq!(report.verdict, Verdict::Succeeded);
    assert_eq!(report.summary.unwrap().truncated, Some(true));
    assert_eq!(report.errors, 0, "a bound is not an error");
}

// ---------------------------------------------------------------------------------------------
// Failures of the stream itself, and a body that ends the run on its own

/// Accepts `accept` bytes, then fails every write with `kind`.
struct FullAfter {
    written: Vec<u8>,
    accept: usize,
    kind: io::ErrorKind,
}

impl Write for FullAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.accept.saturating_sub(self.written.len());
        if room == 0 {
            return Err(io::Error::new(self.kind, "no space left"));
        }
        let n = room.min(buf.len());
        self.written.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn after_a_failed_write_nothing_more_is_written_not_even_a_summary() {
    let out = FullAfter {
        written: Vec::new(),
        accept: 400,
        kind: io::ErrorKind::StorageFull,
    };
    let mut e = Emitter::builder(Identity::new(
        TOOL,
        TOOL_VERSION,
        SCHEMA_NAME,
        SCHEMA_VERSION,
    ))
    .flush_each_line(true)
    .start(out)
    .unwrap();
    let code = drive(&mut e, |out| {
        for n in 1..100 {
            out.emit(&hit(n))?;
        }
        Ok(Outcome::success())
    });
    assert_eq!(code, 74);
    let written = e.into_writer().written;
    assert_eq!(written.len(), 400);
    let text = String::from_utf8_lossy(&written);
    let last = text.rsplit('\n').next().unwrap();
    assert!(
        !last.contains("aoi:error") && !last.contains("aoi:summary"),
        "nothing glued to the cut line: {last}"
    );
}

#[test]
fn a_body_that_writes_its_own_summary_keeps_that_summarys_exit_code() {
    let mut e = start();
    let code = drive(&mut e, |out| {
        out.emit(&hit(1))?;
        out.finish(Outcome::success())?;
        Ok(Outcome::success())
    });
    assert_eq!(code, 0);
    let mut e = start();
    let code = drive(&mut e, |out| {
        out.finish(Outcome::denied())?;
        Ok(Outcome::success())
    });
    assert_eq!(code, 77);
    let bytes = e.into_writer();
    assert_eq!(verified(&bytes).verdict, Verdict::Failed);
}

#[test]
fn into_writer_gives_back_what_was_written_before_any_summary() {
    // A stream taken back mid-run (an upstream cut before its summary, in a test) holds every
    // event written so far, the buffered ones included.
    let mut out = start();
    out.warning(&Warning::new(code("SLOW"), "a warning"))
        .unwrap();
    let bytes = out.into_writer();
    let types: Vec<Value> = lines(&bytes).iter().map(|l| l["type"].clone()).collect();
    assert_eq!(types, [json!("aoi:meta"), json!("aoi:warning")]);
}
