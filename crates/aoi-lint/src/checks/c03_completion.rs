//! Check 3, Verifiable (§4, §4.1, §6): a finite success exits 0 with a terminal
//! `aoi:summary` saying `ok:true`; a stream that ends without a summary is a failure.

use super::{findings, id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(3);

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if subject.entry.unbounded {
        return judge.not_applicable(
            "unbounded (§4.2): it has no finite success; check 10 judges how it ends",
        );
    }
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    let found = findings(base, ID);
    if !found.is_empty() {
        let mut result = judge.fail(format!(
            "the run does not complete as §4 says ({}): {}",
            base.ending(),
            found[0].finding.as_deref().unwrap_or("finding")
        ));
        result.evidence = found;
        return result;
    }
    if base.run.timed_out {
        return judge
            .fail("the run did not finish in time and was killed")
            .evidence(base.evidence());
    }
    if base.succeeded() {
        return judge.pass("the example exits 0 and its last event is aoi:summary ok:true");
    }
    // The verifier notes a failed run that exits 0 (`EXIT_STATUS_MISMATCH`, a notice for a
    // consumer, which reads the summary); for lint it is the tool's fault: §6's non-zero is how
    // the process layer says "failed", and `cmd && next` or a CI step takes exit 0 for success.
    let exit_zero_failure = base.verification.findings.iter().any(|f| {
        f.code == aoi::FindingCode::ExitStatusMismatch && f.level == aoi::read::Level::Notice
    });
    if exit_zero_failure {
        return judge
            .fail(format!(
                "the run failed (summary ok:false{}) but exited 0: a failure exits non-zero (§4.1, §6)",
                base.summary()
                    .and_then(|s| s.reason)
                    .map(|r| format!(" reason:{}", r.as_str()))
                    .unwrap_or_default()
            ))
            .evidence(base.evidence());
    }

    judge
        .could_not_run(format!(
            "the example failed honestly ({}{}); give a working invocation in aoi-lint.toml",
            base.ending(),
            base.first_error()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ))
        .evidence(base.evidence())
}
