//! The reader is fed what the world sends: any bytes at all, and bytes that are nearly a stream.
//! It never panics, and what it reports is consistent with what it was given.

use aoi::read::{decode, parse_head, Frame, LineReader};
use aoi::{Verdict, Verifier, VerifyOptions};
use proptest::prelude::*;

use crate::damaged_streams::read_every_way;

/// Fragments of AOI lines, glued in any order, reach far deeper into the verifier than random
/// bytes, which almost never parse as JSON.
fn nearly_a_stream() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop::sample::select(vec![
        "{", "}", "[", "]", ",", ":", "\"", "\n", "\r\n", "\\", " ",
        "\\u001b", "\\ud800", "\\u0000", "\u{2028}", "\u{1b}[0m", "\u{9b}",
        "\"type\"", "\"aoi\"", "\"seq\"", "\"run\"", "\"t\"", "\"ok\"", "\"reason\"",
        "\"aoi:meta\"", "\"aoi:summary\"", "\"aoi:error\"", "\"aoi:warning\"", "\"aoi:check\"",
        "\"aoi:plan\"", "\"aoi:progress\"", "\"aoi:heartbeat\"", "\"aoi:future\"", "\"hit\"",
        "\"category\"", "\"code\"", "\"message\"", "\"retryable\"", "\"retry_after_ms\"",
        "\"scope\"", "\"item\"", "\"process\"", "\"origin\"", "\"wrapped\"", "\"upstream\"",
        "\"event_count\"", "\"count\"", "\"error_count\"", "\"warning_count\"", "\"partial\"",
        "\"caused_by\"", "\"tool\"", "\"aoi_version\"", "\"1.0-alpha\"", "\"2.0\"",
        "\"internal\"", "\"temporary\"", "\"partial\"", "\"rate_limited\"", "\"failed\"",
        "\"skipped\"", "\"BAD_CODE\"", "\"bad-code\"", "\"R\"",
        "0", "1", "2", "-1", "1.5", "1e400", "18446744073709551616", "true", "false", "null",
        "{\"type\":\"aoi:meta\",\"aoi\":{\"seq\":0,\"run\":\"R\"},\"tool\":\"t\"}\n",
        "{\"type\":\"hit\",\"aoi\":{\"seq\":1,\"run\":\"R\"},\"id\":1}\n",
        "{\"type\":\"aoi:error\",\"aoi\":{\"seq\":2,\"run\":\"R\"},\"category\":\"io\",\"code\":\"E\",\"message\":\"m\",\"retryable\":false}\n",
        "{\"type\":\"aoi:summary\",\"aoi\":{\"seq\":3,\"run\":\"R\"},\"ok\":true,\"event_count\":4,\"count\":1}\n",
        "{\"type\":\"aoi:summary\",\"aoi\":{\"seq\":0,\"run\":\"R\"},\"ok\":false,\"reason\":\"failed\",\"event_count\":1}\n",
    ]);
    let piece = prop_oneof![
        8 => fragment.prop_map(|f| f.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..4),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

fn check_consistency(bytes: &[u8]) -> Result<(), TestCaseError> {
    let report = read_every_way(bytes);
    let mut frames = 0u64;
    let mut reader = LineReader::new(bytes);
    while let Some(frame) = reader.next().expect("reading memory") {
        frames += 1;
        if let Frame::Line { bytes, .. } = frame {
            // decode and parse_head agree on what is an object with a string `type`.
            let head_type = matches!(parse_head(bytes), Ok(Ok(ref h)) if h.ty.is_some());
            if decode(bytes).is_ok() {
                prop_assert!(head_type, "{}", String::from_utf8_lossy(bytes));
            }
        }
    }
    prop_assert_eq!(report.lines, frames);
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        prop_assert_eq!(
            report.verdict,
            Verdict::Violation,
            "a cut last line is never whole"
        );
    }
    if report.verdict == Verdict::Succeeded {
        prop_assert!(report.summary.as_ref().is_some_and(|s| s.ok));
    }
    if report.violations > 0 {
        prop_assert_eq!(report.verdict, Verdict::Violation);
    }
    prop_assert!(report.findings.len() as u64 + report.suppressed >= report.violations);
    let capped = Verifier::verify_bytes(
        bytes,
        VerifyOptions {
            unbounded: false,
            max_findings: 1,
            ..VerifyOptions::default()
        },
    );
    prop_assert!(capped.findings.len() <= 1);
    prop_assert_eq!(
        capped.violations,
        report.violations,
        "the cap hides findings, not violations"
    );
    prop_assert_eq!(capped.verdict, report.verdict);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_bytes_are_read_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        check_consistency(&bytes)?;
    }

    #[test]
    fn nearly_a_stream_is_read_without_panic(bytes in nearly_a_stream()) {
        check_consistency(&bytes)?;
    }
}
