//! Check 5, Verifiable (§6, §9): malformed usage exits non-zero with a usage error, and every
//! `aoi:error` carries `category`, `code`, `message` and `retryable`, with `retry_after_ms`
//! only when retryable, and never the removed `partial` category.

use super::{findings, id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{Extras, Subject};

/// This check.
pub const ID: CheckId = id(5);

/// The flag no tool has.
pub const UNKNOWN_FLAG: &str = "--aoi-lint-no-such-flag";

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let mut args = subject.entry.words();
    args.push(UNKNOWN_FLAG.to_owned());
    // Its stream's violations are this check's: counted here, once.
    let usage = match subject.exec_judged_here(&args, &Extras::default()) {
        Ok(usage) => usage,
        Err(why) => return judge.could_not_run(why),
    };
    if usage.run.exit.code() == Some(0) {
        return judge
            .fail(format!("an unknown flag ({UNKNOWN_FLAG}) exits 0"))
            .evidence(usage.evidence());
    }
    if !usage.run.stdout.is_empty() {
        let violations: Vec<_> = usage
            .verification
            .findings
            .iter()
            .filter(|f| f.level == aoi::read::Level::Violation)
            .collect();
        if let Some(first) = violations.first() {
            return judge
                .fail(format!(
                    "the usage error's stream violates the protocol: {first}"
                ))
                .evidence(usage.quote(first.line, &first.message));
        }
        let category = usage.errors().next().map(|e| e.category.as_str());
        if category != Some("usage") {
            return judge
                .fail(format!(
                    "an unknown flag is reported as {}, not a usage error",
                    category.map_or("no aoi:error".to_owned(), |c| format!("category {c}"))
                ))
                .evidence(usage.evidence());
        }
    }
    let mut found = findings(&usage, ID);
    if let Ok(base) = subject.base_run() {
        found.extend(findings(base, ID));
    }
    if let Some(first) = found.first() {
        let mut result = judge.fail(format!(
            "an aoi:error is incomplete or malformed: {}",
            first.finding.as_deref().unwrap_or("finding")
        ));
        result.evidence = found;
        return result;
    }
    judge.pass(format!(
        "an unknown flag exits {} with a usage error; every aoi:error is complete",
        usage.run.exit.shell_status()
    ))
}
