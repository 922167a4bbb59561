//! The sixteen checks of §18.2, a module each, named after the check's number.
//!
//! Each check judges one command ([`Subject`]) and returns one [`CheckResult`]. Checks that
//! judge the same run share it through the subject; stream rules come from the `aoi`
//! verifier's findings ([`crate::model::check_of`]), never from rules written again here.

pub mod c01_discovery;
pub mod c02_jsonl;
pub mod c03_completion;
pub mod c04_framework_schema;
pub mod c05_errors;
pub mod c06_confirmation;
pub mod c07_idempotency;
pub mod c08_audit_ids;
pub mod c09_redaction;
pub mod c10_pipes_and_signals;
pub mod c11_pagination;
pub mod c12_input_modes;
pub mod c13_versioning;
pub mod c14_one_meta_one_summary;
pub mod c15_sequence;
pub mod c16_upstream;

use aoi::read::{Finding, FindingCode, Level};

use crate::model::{check_of, cut, explained, CheckId, CheckOutcome, CheckResult, Evidence};
use crate::subject::{Captured, Subject};

/// A check: judges one command.
pub type Check = fn(&Subject<'_>) -> CheckResult;

/// Every check, in order.
pub const ALL: [(CheckId, Check); 16] = [
    (c01_discovery::ID, c01_discovery::run),
    (c02_jsonl::ID, c02_jsonl::run),
    (c03_completion::ID, c03_completion::run),
    (c04_framework_schema::ID, c04_framework_schema::run),
    (c05_errors::ID, c05_errors::run),
    (c06_confirmation::ID, c06_confirmation::run),
    (c07_idempotency::ID, c07_idempotency::run),
    (c08_audit_ids::ID, c08_audit_ids::run),
    (c09_redaction::ID, c09_redaction::run),
    (c10_pipes_and_signals::ID, c10_pipes_and_signals::run),
    (c11_pagination::ID, c11_pagination::run),
    (c12_input_modes::ID, c12_input_modes::run),
    (c13_versioning::ID, c13_versioning::run),
    (c14_one_meta_one_summary::ID, c14_one_meta_one_summary::run),
    (c15_sequence::ID, c15_sequence::run),
    (c16_upstream::ID, c16_upstream::run),
];

/// The checks that judge only the bytes of a stream, so a transcript can be linted offline.
pub const STREAM_CHECKS: [CheckId; 6] = [
    c02_jsonl::ID,
    c03_completion::ID,
    c04_framework_schema::ID,
    c05_errors::ID,
    c14_one_meta_one_summary::ID,
    c15_sequence::ID,
];

/// `CheckId::new(n)` for a number known to be in range, at compile time.
const fn id(n: u8) -> CheckId {
    match CheckId::new(n) {
        Some(id) => id,
        None => panic!("check numbers run from 1 to 16"),
    }
}

/// Result builders for one check and command.
pub(crate) struct Judge<'s> {
    check: CheckId,
    command: &'s str,
}

impl<'s> Judge<'s> {
    pub(crate) fn new(check: CheckId, subject: &'s Subject<'_>) -> Judge<'s> {
        Judge {
            check,
            command: subject.name(),
        }
    }

    pub(crate) fn pass(&self, detail: impl Into<String>) -> CheckResult {
        CheckResult::new(self.check, self.command, CheckOutcome::Pass, detail)
    }

    pub(crate) fn fail(&self, detail: impl Into<String>) -> CheckResult {
        CheckResult::new(self.check, self.command, CheckOutcome::Fail, detail)
    }

    pub(crate) fn not_applicable(&self, detail: impl Into<String>) -> CheckResult {
        CheckResult::new(
            self.check,
            self.command,
            CheckOutcome::NotApplicable,
            detail,
        )
    }

    pub(crate) fn could_not_run(&self, detail: impl Into<String>) -> CheckResult {
        CheckResult::new(self.check, self.command, CheckOutcome::CouldNotRun, detail)
    }
}

/// True when a verifier finding counts against `check`: a violation of one of its rules, or
/// the notice that `aoi.seq` is absent (§18.2 #15: no seq, no Verifiable).
pub(crate) fn counts_against(finding: &Finding, check: CheckId) -> bool {
    check_of(finding.code) == check
        && (finding.level == Level::Violation || finding.code == FindingCode::SeqAbsent)
}

/// The verifier's findings on `captured` that count against `check`, as evidence.
pub(crate) fn findings(captured: &Captured, check: CheckId) -> Vec<Evidence> {
    let lines: Vec<&[u8]> = aoi::read::complete_lines(&captured.run.stdout).collect();
    let all = &captured.verification.findings;
    all.iter()
        .filter(|f| counts_against(f, check) && !explained(f, all))
        .map(|f| {
            let excerpt = f
                .line
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| lines.get(n.wrapping_sub(1)))
                .map(|l| cut(&String::from_utf8_lossy(l), 300));
            Evidence {
                invocation: captured.run.argv.clone(),
                line: f.line,
                excerpt: Some(match excerpt {
                    Some(line) => format!("{} ({}): {line}", f.message, f.section),
                    None => format!("{} ({})", f.message, f.section),
                }),
                finding: Some(f.code.as_str().to_owned()),
            }
        })
        .collect()
}

/// A stream check on the base run: fails with the verifier's findings for `check`, passes
/// with `passed` otherwise.
pub(crate) fn stream_check(subject: &Subject<'_>, check: CheckId, passed: &str) -> CheckResult {
    let judge = Judge::new(check, subject);
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    let mut found = findings(base, check);
    if subject.forwarded_summary(base) {
        // Not an identity fault of the tool's own summary: an upstream's, forwarded (§13.1),
        // which check 16 judges.
        found.retain(|e| e.finding.as_deref() != Some(FindingCode::IdentityMismatch.as_str()));
    }
    if found.is_empty() {
        return judge.pass(passed.to_owned());
    }
    let first = found[0]
        .finding
        .clone()
        .unwrap_or_else(|| "a finding".into());
    let mut result = judge.fail(format!(
        "{} finding(s) in the stream of `{}`, first {first}",
        found.len(),
        base.run.argv.join(" ")
    ));
    result.evidence = found;
    result
}

/// Text that marks a stack trace or an unhandled exception, in the common runtimes.
pub(crate) const STACK_TRACE_MARKERS: [&str; 10] = [
    "panicked at",
    "stack backtrace",
    "Traceback (most recent call last)",
    "Exception in thread",
    "goroutine 1 [",
    "BrokenPipeError",
    "UnhandledPromiseRejection",
    "node:internal",
    "Error: write EPIPE",
    "at java.",
];

/// The first stack-trace marker in `stderr`, with the text around it.
pub(crate) fn stack_trace(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    STACK_TRACE_MARKERS.iter().find_map(|m| {
        let at = text.find(m)?;
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        Some(cut(&text[start..], 300))
    })
}
