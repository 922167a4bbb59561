//! How the producer's end is judged against its summary (§4.1).

use aoi::read::{ProcessEnd, Verifier};
use aoi::{FindingCode, Verdict, VerifyOptions};

const OK: &str = "{\"type\":\"aoi:summary\",\"aoi\":{\"seq\":0,\"run\":\"R\"},\"ok\":true,\"event_count\":1,\"count\":0}\n";

fn verdict(end: ProcessEnd) -> (Verdict, Vec<FindingCode>) {
    let mut v = Verifier::new(VerifyOptions::default());
    v.line(1, OK.trim_end().as_bytes());
    let report = v.finish(Some(end));
    (
        report.verdict,
        report.findings.iter().map(|f| f.code).collect(),
    )
}

#[test]
fn ok_true_from_a_process_killed_by_a_signal_is_a_violation() {
    let (v, codes) = verdict(ProcessEnd::Signaled(9));
    assert_eq!(v, Verdict::Violation);
    assert!(codes.contains(&FindingCode::ExitStatusMismatch));
    let (v, _) = verdict(ProcessEnd::Exited(0));
    assert_eq!(v, Verdict::Succeeded);
}
