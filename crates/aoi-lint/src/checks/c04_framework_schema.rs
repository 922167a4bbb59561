//! Check 4, Typed · Verifiable (§5, §8.3, §10): `aoi:meta`, `aoi:summary`, `aoi:warning`,
//! `aoi:error` and `aoi:check` (and every other event) validate against the schema the tool
//! publishes.

use super::{id, stream_check, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::Subject;

/// This check.
pub const ID: CheckId = id(4);

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    if let Err(why) = &subject.tool.schema.value {
        return Judge::new(ID, subject)
            .could_not_run(format!("no event schema to validate against: {why}"));
    }
    stream_check(
        subject,
        ID,
        "every event validates against the tool's published schema",
    )
}
