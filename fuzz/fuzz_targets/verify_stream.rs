//! Arbitrary bytes as an AOI stream: the verifier, the line reader and the typed decoder must
//! never panic, and their answers must agree with each other.

#![no_main]

use aoi::read::{decode, Frame, LineReader};
use aoi::{Verdict, Verifier, VerifyOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let report = Verifier::verify_bytes(data, VerifyOptions::default());
    let unbounded = Verifier::verify_bytes(
        data,
        VerifyOptions {
            unbounded: true,
            max_findings: 1,
            keep_events: true,
        },
    );
    assert!(unbounded.findings.len() <= 1);
    // What it keeps is what it read as events.
    assert!(unbounded.events.len() as u64 <= unbounded.lines);

    // A small line limit reaches the over-long-line paths with small inputs.
    let mut reader = LineReader::with_max_line(data, 64);
    let mut frames = 0u64;
    while let Ok(Some(frame)) = reader.next() {
        frames += 1;
        if let Frame::Line { bytes, .. } | Frame::Truncated { bytes, .. } = frame {
            let _ = decode(bytes);
        }
    }
    assert_eq!(frames, report.lines);

    // A stream whose last line has no newline was cut (§2): never a result.
    if !data.is_empty() && !data.ends_with(b"\n") {
        assert_eq!(report.verdict, Verdict::Violation);
    }
    if report.violations > 0 {
        assert_eq!(report.verdict, Verdict::Violation);
    }
});
