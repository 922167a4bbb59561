//! Check 2, Typed (§2, §8.1): machine-mode stdout is only JSON objects, one per line, each
//! with a string `type`, and no ANSI escapes or prose.

use super::{id, stream_check};
use crate::model::{CheckId, CheckResult};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(2);

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    stream_check(
        subject,
        ID,
        "every stdout line is a JSON object with a type; no ANSI, no prose",
    )
}
