//! Check 14, Composable · Verifiable (§4, §13.1): a stream carries at most one `aoi:meta`,
//! first, and at most one `aoi:summary`, last.

use super::{id, stream_check};
use crate::model::{CheckId, CheckResult};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(14);

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    stream_check(subject, ID, "one aoi:meta, first; one aoi:summary, last")
}
