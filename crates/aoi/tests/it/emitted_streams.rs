//! Anything the emitter writes, the verifier accepts, with the verdict and counters the tool's
//! actions call for.

use aoi::read::{LineReader, ProcessEnd};
use aoi::{Verdict, Verifier, VerifyOptions};
use proptest::prelude::*;
use serde_json::Value;

use crate::scenario::{self, Run};

fn summary_line(bytes: &[u8]) -> Value {
    let last = bytes[..bytes.len() - 1]
        .rsplit(|b| *b == b'\n')
        .next()
        .expect("at least one line");
    serde_json::from_slice(last).expect("the summary is JSON")
}

fn check(run: &Run) -> Result<(), TestCaseError> {
    let stream = String::from_utf8_lossy(&run.bytes);
    prop_assert!(
        run.mismatches.is_empty(),
        "the emitter refused or accepted against the model: {:#?}",
        run.mismatches
    );
    prop_assert!(run.bytes.ends_with(b"\n"));

    // Verified with the exit code, as a harness that ran the tool would.
    let mut reader = LineReader::new(&run.bytes[..]);
    let mut verifier = Verifier::new(VerifyOptions::default());
    while let Some(frame) = reader.next().expect("reading memory") {
        verifier.frame(frame);
    }
    let report = verifier.finish(Some(ProcessEnd::Exited(i32::from(run.exit_code))));
    prop_assert_eq!(
        report.violations,
        0,
        "findings: {:#?}\nstream:\n{}",
        report.findings,
        stream
    );

    let e = &run.expected;
    prop_assert_eq!(run.exit_code, e.exit_code, "exit code\n{}", stream);
    let verdict = if e.ok {
        Verdict::Succeeded
    } else {
        Verdict::Failed
    };
    prop_assert_eq!(report.verdict, verdict);
    prop_assert_eq!(report.domain_events, e.count);

    let s = summary_line(&run.bytes);
    prop_assert_eq!(&s["ok"], &Value::from(e.ok));
    match e.reason {
        Some(reason) => prop_assert_eq!(&s["reason"], reason.as_str()),
        None => prop_assert!(s.get("reason").is_none()),
    }
    prop_assert_eq!(&s["count"], &Value::from(e.count));
    prop_assert_eq!(&s["warning_count"], &Value::from(e.warning_count));
    prop_assert_eq!(&s["error_count"], &Value::from(e.error_count));
    match e.input_count {
        Some(n) => prop_assert_eq!(&s["input_count"], &Value::from(n)),
        None => prop_assert!(s.get("input_count").is_none()),
    }
    prop_assert_eq!(&s["partial"], &Value::from(e.partial));
    prop_assert_eq!(&s["truncated"], &Value::from(e.truncated));
    match &e.next_cursor {
        Some(cursor) => prop_assert_eq!(&s["next_cursor"], cursor.as_str()),
        None => prop_assert!(s.get("next_cursor").is_none()),
    }
    match e.signal {
        Some(name) => prop_assert_eq!(&s["properties"]["signal"], name),
        None => prop_assert!(s.get("properties").is_none()),
    }
    let lines = run.bytes.iter().filter(|b| **b == b'\n').count();
    prop_assert_eq!(&s["event_count"], &Value::from(lines));
    prop_assert_eq!(lines, e.types.len());

    // Every line decodes, in the order the tool wrote it, and domain data comes back unchanged.
    let (types, domain) = scenario::decoded(&run.bytes);
    prop_assert_eq!(&types, &e.types);
    prop_assert_eq!(&domain, &e.domain_fields);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn anything_the_emitter_writes_the_verifier_accepts(s in scenario::scenario()) {
        check(&scenario::run(&s))?;
    }
}
