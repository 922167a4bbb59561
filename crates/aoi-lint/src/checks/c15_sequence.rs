//! Check 15, Verifiable (§8.1, §8.3): `aoi.seq` is contiguous from 0 under one `aoi.run`
//! and reconciles with `aoi:summary.event_count`; without `aoi.seq` the Verifiable factor is
//! not claimed.

use super::{id, stream_check};
use crate::model::{CheckId, CheckResult};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(15);

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    stream_check(
        subject,
        ID,
        "aoi.seq runs from 0 without gaps under one aoi.run and matches event_count",
    )
}
