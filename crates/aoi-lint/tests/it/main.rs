//! The library, as a harness that embeds it calls it: `lint_transcript` over captured streams
//! written from the spec's sentences, and `Config::parse` over `aoi-lint.toml` text. (`aoi
//! lint`'s own tests, in `aoi-cli`, run the binary against live tools.)

use aoi_lint::{lint_transcript, CheckId, CheckOutcome, Config, Report};
use serde_json::json;

const RUN: &str = "01JZQ7X4TQ9V6H0ZT7K8F2W3C1";
const IDENT: &str = r#""tool":"t","tool_version":"1.0.0","aoi_version":"1.0-alpha","schema_name":"io.example.t","schema_version":"1.0.0""#;

fn meta() -> String {
    format!(r#"{{"type":"aoi:meta","aoi":{{"seq":0,"run":"{RUN}"}},{IDENT},"command":"search"}}"#)
}

fn hit(seq: u64, id: &str) -> String {
    format!(r#"{{"type":"hit","aoi":{{"seq":{seq},"run":"{RUN}"}},"id":"{id}"}}"#)
}

fn summary(seq: u64, events: u64, count: u64) -> String {
    format!(
        r#"{{"type":"aoi:summary","aoi":{{"seq":{seq},"run":"{RUN}"}},"ok":true,"event_count":{events},"count":{count},"warning_count":0,"error_count":0,{IDENT}}}"#
    )
}

fn stream(lines: &[String]) -> Vec<u8> {
    (lines.join("\n") + "\n").into_bytes()
}

fn outcome(report: &Report, n: u8) -> CheckOutcome {
    let id = CheckId::new(n).expect("a check");
    report
        .results
        .iter()
        .find(|r| r.check == id)
        .map(|r| r.outcome)
        .expect("every check has a result")
}

fn failed(report: &Report) -> Vec<u8> {
    let mut ids: Vec<u8> = report
        .results
        .iter()
        .filter(|r| r.outcome == CheckOutcome::Fail)
        .map(|r| {
            CHECKS_BY_ID
                .iter()
                .position(|c| *c == r.check)
                .map_or(0, |i| i as u8 + 1)
        })
        .collect();
    ids.dedup();
    ids
}

/// The sixteen ids in order, to name a result by number.
static CHECKS_BY_ID: std::sync::LazyLock<Vec<CheckId>> =
    std::sync::LazyLock::new(|| (1..=16).filter_map(CheckId::new).collect());

#[test]
fn a_transcript_whose_meta_echoes_a_secret_fails_check_9_alone() {
    // §11 "If arguments are included, the tool MUST redact sensitive values": the bytes show
    // it, so a transcript can fail check 9 although it cannot show behaviour.
    let leaking = format!(
        r#"{{"type":"aoi:meta","aoi":{{"seq":0,"run":"{RUN}"}},{IDENT},"command":"search","args":["search","--token","ghp_4f9a1c2e7"]}}"#
    );
    let report = lint_transcript("run.jsonl", &stream(&[leaking, summary(1, 2, 0)]), None);
    assert_eq!(failed(&report), [9], "{:#?}", report.results);
    let redacted = format!(
        r#"{{"type":"aoi:meta","aoi":{{"seq":0,"run":"{RUN}"}},{IDENT},"command":"search","args":["search","--token","[REDACTED]"]}}"#
    );
    let report = lint_transcript("run.jsonl", &stream(&[redacted, summary(1, 2, 0)]), None);
    assert_eq!(failed(&report), Vec::<u8>::new(), "{:#?}", report.results);
    assert_eq!(outcome(&report, 9), CheckOutcome::NotApplicable);
}

#[test]
fn a_conforming_transcript_fails_no_check_and_says_what_it_could_not_judge() {
    let good = stream(&[meta(), hit(1, "a"), hit(2, "b"), summary(3, 4, 2)]);
    let report = lint_transcript("run.jsonl", &good, None);
    assert_eq!(failed(&report), Vec::<u8>::new(), "{:#?}", report.results);
    // §8.1/§8.2 validation needs the event schema: without one, check 4 could not run, and
    // is never counted as a pass.
    assert_eq!(outcome(&report, 4), CheckOutcome::CouldNotRun);
    assert!(report.count(CheckOutcome::Pass) > 0);
}

#[test]
fn lines_lost_in_the_middle_fail_the_sequence_check_alone() {
    // §8.1: `aoi.seq` counts lines from 0 without gaps, so a consumer can tell a line was lost.
    let gap = stream(&[meta(), hit(1, "a"), hit(3, "b"), summary(4, 5, 2)]);
    let report = lint_transcript("run.jsonl", &gap, None);
    assert_eq!(failed(&report), [15], "{:#?}", report.results);
    let result = report
        .results
        .iter()
        .find(|r| r.outcome == CheckOutcome::Fail)
        .expect("a failure");
    assert!(!result.evidence.is_empty(), "the evidence names the line");
    assert!(!report.passed());
}

#[test]
fn a_stream_cut_in_its_last_line_is_never_a_success() {
    // §2: every line ends in a newline; a last line without one is a cut stream, even when
    // what was written parses.
    let mut cut = stream(&[meta(), hit(1, "a"), summary(2, 3, 1)]);
    cut.pop();
    let report = lint_transcript("run.jsonl", &cut, None);
    assert!(!failed(&report).is_empty(), "{:#?}", report.results);
    assert!(!report.passed());
}

#[test]
fn events_the_published_schema_refuses_fail_the_schema_check() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"type": "string"}},
        "oneOf": [
            {"properties": {"type": {"const": "hit"}, "id": {"type": "integer"}}, "required": ["id"]},
            {"properties": {"type": {"pattern": "^aoi:"}}}
        ]
    });
    let good = stream(&[meta(), hit(1, "a"), summary(2, 3, 1)]);
    let report = lint_transcript("run.jsonl", &good, Some(&schema));
    assert_eq!(
        outcome(&report, 4),
        CheckOutcome::Fail,
        "{:#?}",
        report.results
    );
}

#[test]
fn a_config_is_strict_and_its_errors_are_one_line() {
    let ok = Config::parse("timeout = 5\n").expect("a valid config");
    assert_eq!(ok.timeout(), std::time::Duration::from_secs(5));
    for bad in ["timeout = \"soon\"\n", "no_such_key = 1\n", "[[[\n"] {
        let e = Config::parse(bad).expect_err(bad).to_string();
        assert!(!e.contains('\n'), "{bad:?}: {e}");
    }
}
