//! `aoi verify`: exit status, human report, machine mode, sources, relay.

use std::process::Command;

use aoi::read::{Event, Level};
use aoi::{FindingCode, Verdict};

use crate::support::{fake_tool, run_aoi, transcript, FAILED_STREAM, OK_STREAM};

fn finding_codes(stdout: &[u8]) -> Vec<String> {
    aoi_test::events(stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Domain { ty, fields } if ty == "finding" => {
                Some(fields["code"].as_str().unwrap_or_default().to_owned())
            }
            _ => None,
        })
        .collect()
}

fn summary(stdout: &[u8]) -> aoi::Summary {
    aoi_test::events(stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Summary(s) => Some(s),
            _ => None,
        })
        .expect("a summary")
}

#[test]
fn a_conforming_successful_stream_exits_0_with_a_readable_report() {
    let out = run_aoi(&["verify"], OK_STREAM.as_bytes());
    insta::assert_snapshot!(transcript(&out), @r"
    exit: 0
    --- stdout
    ✓ conforming AOI stream; the run succeeded (ok:true)
           from outline 1.8.2 · com.example.outline.events 1.0.0 · aoi 1.0-alpha
         source standard input
          lines 3: 1 domain event, 0 warnings, 0 errors
            run 01JZQ7X4TQ9V5R8K2M3N6P7S4W
    --- stderr
    ");
}

#[test]
fn an_honest_failure_exits_1_and_shows_the_retry_detail() {
    let out = run_aoi(&["verify"], FAILED_STREAM.as_bytes());
    insta::assert_snapshot!(transcript(&out), @r"
    exit: 1
    --- stdout
    ✓ conforming AOI stream; the run failed (ok:false, reason: failed)
           from summarize 0.3.0 · com.example.summarize.events 1.0.0 · aoi 1.0-alpha
         source standard input
          lines 3: 0 domain events, 0 warnings, 1 error
            run 01JZQ7X4TQ9V5R8K2M3N6P7S4X
      caused by rate_limited UPSTREAM_RATE_LIMIT from outline, retryable after 7200 ms
    --- stderr
    ");
}

#[test]
fn a_half_written_last_line_is_a_violation_even_when_it_is_valid_json() {
    let cut = &OK_STREAM.as_bytes()[..OK_STREAM.len() - 1];
    let out = run_aoi(&["verify"], cut);
    insta::assert_snapshot!(transcript(&out), @r"
    exit: 65
    --- stdout
    ✗ the stream violates AOI-CLI v1.0-alpha: 2 violations, 0 notices
           from outline 1.8.2 · com.example.outline.events 1.0.0 · aoi 1.0-alpha
         source standard input
          lines 3: 1 domain event, 0 warnings, 0 errors
            run 01JZQ7X4TQ9V5R8K2M3N6P7S4W

      LINE  LEVEL      CODE             SECTION  MESSAGE
         3  violation  TRUNCATED_LINE   §2       last line has no terminating newline (277 bytes discarded): the stream was cut
         -  violation  SUMMARY_MISSING  §4       EOF without aoi:summary: the stream is incomplete (crash, kill or truncation)
    --- stderr
    ");
}

#[test]
fn a_line_lost_in_the_middle_is_caught_although_the_summary_survived() {
    let elided: String = OK_STREAM
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let out = run_aoi(&["verify", "--output", "jsonl"], elided.as_bytes());
    assert_eq!(out.status.code(), Some(65));
    let codes = finding_codes(&out.stdout);
    assert!(codes.contains(&"SEQ_GAP".to_owned()), "{codes:?}");
    assert!(
        codes.contains(&"EVENT_COUNT_MISMATCH".to_owned()),
        "{codes:?}"
    );
    assert!(codes.contains(&"COUNT_MISMATCH".to_owned()), "{codes:?}");
}

#[test]
fn machine_mode_is_itself_a_conforming_stream_for_each_verdict() {
    for (input, exit, ok) in [
        (OK_STREAM.to_owned(), 0, true),
        (FAILED_STREAM.to_owned(), 1, false),
        (OK_STREAM.replace("\"seq\":2", "\"seq\":7"), 65, false),
    ] {
        let out = run_aoi(&["verify", "--format", "jsonl"], input.as_bytes());
        assert_eq!(out.status.code(), Some(exit), "{}", transcript(&out));
        let report = aoi_test::assert_conforms(&out.stdout);
        assert_eq!(report.summary.as_ref().map(|s| s.ok), Some(ok));
        let meta = report.meta.expect("meta");
        assert_eq!(meta.tool.as_deref(), Some("aoi"));
        assert_eq!(meta.command.as_deref(), Some("verify"));
        assert!(out.stderr.is_empty());
        let s = summary(&out.stdout);
        let upstream = s.upstream.expect("the verified stream's identity");
        assert!(upstream.tool.is_some());
    }
}

#[test]
fn machine_mode_carries_the_upstream_retry_fields_in_caused_by() {
    let out = run_aoi(&["verify", "--output=jsonl"], FAILED_STREAM.as_bytes());
    let s = summary(&out.stdout);
    assert_eq!(s.reason, Some(aoi::Reason::Failed));
    let cause = s.caused_by.expect("caused_by");
    assert_eq!(cause.category, aoi::Category::RateLimited);
    assert_eq!(cause.retry_after_ms, Some(7200));
    assert_eq!(cause.origin.as_deref(), Some("outline"));
    assert_eq!(s.error_count, Some(1), "upstream errors are counted");
    assert_eq!(s.input_count, Some(0));
    let upstream = s.upstream.expect("upstream");
    assert_eq!(upstream.tool.as_deref(), Some("summarize"));
}

#[test]
fn reads_a_file_or_dash_and_reports_a_missing_file() {
    let dir = aoi_test::temp_dir("verify");
    let path = dir.join("run.jsonl");
    std::fs::write(&path, OK_STREAM).unwrap();
    let out = run_aoi(&["verify", "-q", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "--quiet prints nothing");
    let out = run_aoi(&["verify", "-q", "-"], FAILED_STREAM.as_bytes());
    assert_eq!(out.status.code(), Some(1));

    let missing = dir.join("missing.jsonl");
    let out = run_aoi(&["verify", missing.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(66));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: cannot open "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line, no trace: {stderr}");

    let out = run_aoi(
        &["verify", "--output", "jsonl", missing.to_str().unwrap()],
        b"",
    );
    assert_eq!(out.status.code(), Some(66));
    aoi_test::assert_conforms(&out.stdout);
    let error = aoi_test::events(&out.stdout)
        .into_iter()
        .find_map(|e| match e {
            Event::Error(e) => Some(e),
            _ => None,
        })
        .expect("an aoi:error");
    assert_eq!(error.category, aoi::Category::NotFound);
    assert_eq!(error.code.as_str(), "FILE_NOT_FOUND");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn runs_a_command_and_judges_its_stream_and_exit_status() {
    let tool = fake_tool();
    let tool = tool.to_str().unwrap();
    let cases: &[(&[&str], i32, &[&str])] = &[
        (&["ok", "5"], 0, &[]),
        (&["fail"], 1, &[]),
        (&["items", "7"], 1, &[]),
        (&["no-summary"], 65, &["SUMMARY_MISSING"]),
        (&["truncated"], 65, &["TRUNCATED_LINE", "SUMMARY_MISSING"]),
        (&["garbage"], 65, &["INVALID_JSON"]),
        (
            &["flat-v02"],
            65,
            &[
                "V02_FLAT_ENVELOPE",
                "V02_CATEGORY_TEMPORARY",
                "ERROR_RETRYABLE_MISSING",
                "REASON_MISSING",
            ],
        ),
        (&["lying-count"], 65, &["COUNT_MISMATCH"]),
    ];
    for (args, exit, expected) in cases {
        let mut argv = vec!["verify", "--output", "jsonl", "--", tool];
        argv.extend_from_slice(args);
        let out = run_aoi(&argv, b"");
        assert_eq!(
            out.status.code(),
            Some(*exit),
            "{args:?}\n{}",
            transcript(&out)
        );
        aoi_test::assert_conforms(&out.stdout);
        let codes = finding_codes(&out.stdout);
        for code in *expected {
            assert!(
                codes.contains(&(*code).to_owned()),
                "{args:?}: {code} not in {codes:?}"
            );
        }
    }
}

#[test]
fn an_ok_summary_from_a_process_that_exits_non_zero_is_a_violation() {
    let script = format!("printf '%s' '{}'; exit 3", OK_STREAM.replace('\'', ""));
    let out = run_aoi(
        &["verify", "--output", "jsonl", "--", "sh", "-c", &script],
        b"",
    );
    assert_eq!(out.status.code(), Some(65), "{}", transcript(&out));
    assert!(finding_codes(&out.stdout).contains(&"EXIT_STATUS_MISMATCH".to_owned()));
}

#[test]
fn a_missing_command_is_not_found() {
    let out = run_aoi(&["verify", "--", "/nonexistent/tool"], b"");
    assert_eq!(out.status.code(), Some(66));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run /nonexistent/tool"));
}

#[test]
fn pass_through_forwards_complete_lines_only_and_reports_on_stderr() {
    let out = run_aoi(&["verify", "--pass-through"], OK_STREAM.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), OK_STREAM);
    assert!(String::from_utf8_lossy(&out.stderr).contains("conforming AOI stream"));

    let cut = &OK_STREAM.as_bytes()[..OK_STREAM.len() - 1];
    let out = run_aoi(&["verify", "--pass-through", "-q"], cut);
    assert_eq!(out.status.code(), Some(65));
    let forwarded = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        forwarded.lines().count(),
        2,
        "the cut summary is not forwarded"
    );
    assert!(forwarded.ends_with('\n'));
    assert!(out.stderr.is_empty());
}

#[test]
fn usage_errors_exit_64_and_in_machine_mode_are_a_usage_error_event() {
    let out = run_aoi(&["verify", "file.jsonl", "--", "true"], b"");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("either FILE or `-- COMMAND`"));

    for args in [
        &["verify", "--pass-through", "--output", "jsonl"][..],
        &["verify", "--no-such-flag", "--output", "jsonl"][..],
        &["verify", "--output", "jsonl", "--max-findings", "many"][..],
    ] {
        let out = run_aoi(args, b"");
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        let report = aoi_test::assert_conforms(&out.stdout);
        assert_eq!(report.verdict, Verdict::Failed);
        let error = aoi_test::events(&out.stdout)
            .into_iter()
            .find_map(|e| match e {
                Event::Error(e) => Some(e),
                _ => None,
            })
            .expect("an aoi:error");
        assert_eq!(error.category, aoi::Category::Usage);
        assert!(!error.message.contains('\n'));
        // §8.3: the meta names the command that ran, whether clap or the command refused.
        let meta = aoi_test::events(&out.stdout)
            .into_iter()
            .find_map(|e| match e {
                Event::Meta(m) => Some(m),
                _ => None,
            })
            .expect("an aoi:meta");
        assert_eq!(meta.command.as_deref(), Some("verify"), "{args:?}");
    }
    let out = run_aoi(&["verify", "--no-such-flag"], b"");
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty());
}

#[test]
fn unbounded_streams_may_end_without_a_summary() {
    let watch = concat!(
        r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"W"},"tool":"outline","tool_version":"1","aoi_version":"1.0-alpha","schema_name":"s","schema_version":"1.0.0","command":"watch"}"#,
        "\n",
        r#"{"type":"aoi:heartbeat","aoi":{"seq":1,"run":"W"}}"#,
        "\n"
    );
    assert_eq!(
        run_aoi(&["verify", "-q"], watch.as_bytes()).status.code(),
        Some(65)
    );
    let out = run_aoi(
        &["verify", "--unbounded", "--output", "jsonl"],
        watch.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
    let findings: Vec<_> = aoi_test::events(&out.stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Domain { ty, fields } if ty == "finding" => Some(
                serde_json::from_value::<aoi::Finding>(serde_json::Value::Object(fields)).unwrap(),
            ),
            _ => None,
        })
        .collect();
    assert!(findings
        .iter()
        .any(|f| f.code == FindingCode::SummaryMissing && f.level == Level::Notice));
}

#[test]
fn replaces_the_jq_one_liner_and_catches_what_it_cannot() {
    // The §13.2 one-liner only looks at the summary; a cut in the middle passes it.
    let elided: String = OK_STREAM
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    // jq is installed by .ci/run.
    let mut jq = Command::new("jq")
        .args(["-e", r#"select(.type=="aoi:summary") | .ok == true"#])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("jq is installed (see .ci/run)");
    use std::io::Write;
    jq.stdin
        .take()
        .unwrap()
        .write_all(elided.as_bytes())
        .unwrap();
    assert!(jq.wait().unwrap().success(), "jq accepts the elided stream");
    assert_eq!(
        run_aoi(&["verify", "-q"], elided.as_bytes()).status.code(),
        Some(65)
    );
}

/// Runs `aoi verify ARGS -- sh -c SCRIPT`.
fn verify_script(args: &[&str], script: &str) -> std::process::Output {
    let mut argv = vec!["verify"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--", "sh", "-c", script]);
    run_aoi(&argv, b"")
}

const WATCH_START: &str = r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"W"},"tool":"outline","tool_version":"1","aoi_version":"1.0-alpha","schema_name":"s","schema_version":"1.0.0","command":"watch"}"#;

#[test]
fn an_unbounded_producer_that_exits_non_zero_or_is_killed_failed() {
    // §4.1, §6: a non-zero exit is a failure, documented as unbounded or not.
    for script in [
        format!("printf '%s\\n' '{WATCH_START}'; exit 3"),
        format!("printf '%s\\n' '{WATCH_START}'; kill -9 $$"),
    ] {
        let out = verify_script(&["--unbounded", "-q"], &script);
        assert_eq!(out.status.code(), Some(1), "{script}\n{}", transcript(&out));
        let out = verify_script(&["--unbounded", "--output", "jsonl"], &script);
        assert_eq!(out.status.code(), Some(1), "{}", transcript(&out));
        aoi_test::assert_conforms(&out.stdout);
        assert!(!summary(&out.stdout).ok);
        assert!(finding_codes(&out.stdout).contains(&"PROCESS_FAILED".to_owned()));
    }
    let out = verify_script(
        &["--unbounded", "-q"],
        &format!("printf '%s\\n' '{WATCH_START}'"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", transcript(&out));
}

#[test]
fn a_usage_error_before_the_stream_starts_is_an_honest_failure_not_a_violation() {
    // §2 "usage errors may use stderr before stream startup"; §20 "can exit before aoi:meta".
    let out = verify_script(&[], "echo 'usage: tool [--limit N]' >&2; exit 64");
    insta::assert_snapshot!(transcript(&out), @r"
    exit: 1
    --- stdout
    ✓ conforming AOI stream; the run failed (no summary: the process exited 64)
         source sh -c echo 'usage: tool [--limit N]' >&2; exit 64
        process exited 64
          lines 0: 0 domain events, 0 warnings, 0 errors

      LINE  LEVEL      CODE                SECTION  MESSAGE
         -  notice     STREAM_NOT_STARTED  §2       the process exited 64 before its stream started (nothing on stdout)
    --- stderr
    usage: tool [--limit N]
    ");
    // Nothing on stdout and exit 0 is still no stream at all.
    let out = verify_script(&["-q"], "exit 0");
    assert_eq!(out.status.code(), Some(65));
}

#[test]
fn a_line_too_long_to_relay_is_never_dropped_silently() {
    let mut stream = OK_STREAM.as_bytes().to_vec();
    let line = format!(
        r#"{{"type":"hit","aoi":{{"seq":1,"run":"R1"}},"x":"{}"}}"#,
        "a".repeat((64 << 20) + 16)
    );
    let first = stream.iter().position(|b| *b == b'\n').unwrap() + 1;
    stream.splice(first..first, line.bytes().chain([b'\n']));
    let out = run_aoi(&["verify", "--pass-through"], &stream);
    assert_eq!(out.status.code(), Some(65));
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("LINE_NOT_RELAYED"), "{report}");
    assert!(!out.stdout.windows(4).any(|w| w == b"aaaa"));
}

#[test]
fn the_machine_summary_agrees_with_the_exit_status_and_carries_the_cause() {
    let error = r#"{"type":"aoi:error","aoi":{"seq":1,"run":"W"},"category":"unavailable","code":"UPSTREAM_DOWN","message":"gone","retryable":true,"retry_after_ms":500}"#;
    let cases: [(String, &[&str], i32); 4] = [
        (OK_STREAM.to_owned(), &[], 0),
        (FAILED_STREAM.to_owned(), &[], 1),
        // A watch that ended on a process-scope error without a summary failed because of it.
        (format!("{WATCH_START}\n{error}\n"), &["--unbounded"], 1),
        (OK_STREAM.replace("\"seq\":2", "\"seq\":7"), &[], 65),
    ];
    for (stream, extra, exit) in cases {
        let mut args = vec!["verify", "--output", "jsonl"];
        args.extend_from_slice(extra);
        let out = run_aoi(&args, stream.as_bytes());
        assert_eq!(out.status.code(), Some(exit), "{}", transcript(&out));
        let mut human = vec!["verify", "-q"];
        human.extend_from_slice(extra);
        assert_eq!(run_aoi(&human, stream.as_bytes()).status.code(), Some(exit));
        aoi_test::assert_conforms(&out.stdout);
        let s = summary(&out.stdout);
        assert_eq!(s.ok, exit == 0, "{}", transcript(&out));
        if exit == 1 {
            assert!(s.caused_by.is_some(), "{}", transcript(&out));
        }
    }
}

#[test]
fn a_report_that_cannot_be_written_is_an_io_failure() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(full) = full else { return };
    let mut child = Command::new(crate::support::aoi())
        .args(["verify"])
        .stdin(std::process::Stdio::piped())
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("aoi starts");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(OK_STREAM.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(74));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot write the report"), "{stderr}");
}

/// What a stream carries is data, and a terminal must never act on it (§2 keeps raw controls
/// off stdout; escaped in JSON they decode into the report): the tool's name, the run id and
/// the findings that quote them are shown escaped: ESC, C1 controls and bidi controls alike.
#[test]
fn the_human_report_shows_escape_c1_and_bidi_controls_from_the_stream_escaped() {
    let identity = |tool: &str| {
        format!(
            r#""tool":"{tool}","tool_version":"1\u2066","aoi_version":"1.0-alpha","schema_name":"s\u009b2J","schema_version":"1""#
        )
    };
    let stream = format!(
        "{{\"type\":\"aoi:meta\",\"aoi\":{{\"seq\":0,\"run\":\"r\\u202e1\"}},{}}}\n\
         {{\"type\":\"aoi:summary\",\"aoi\":{{\"seq\":1,\"run\":\"r\\u202e1\"}},\"ok\":true,\"event_count\":2,{}}}\n",
        identity(r"ev\u001b]0;pwned\u0007il\u202e"),
        identity("other\\u200f"),
    );
    let out = run_aoi(&["verify"], stream.as_bytes());
    let text = String::from_utf8(out.stdout).unwrap();
    for c in [
        '\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\u{2066}', '\u{200f}',
    ] {
        assert!(!text.contains(c), "{c:?} reached the terminal:\n{text}");
    }
    assert!(text.contains(r"ev\u{1b}]0;pwned\u{7}il\u{202e}"), "{text}");
    assert!(text.contains(r"r\u{202e}1"), "{text}");
    assert_eq!(
        out.status.code(),
        Some(65),
        "the identities differ: a violation\n{text}"
    );
}
