//! Check 14, Composable · Verifiable (§4, §13.1): a stream carries at most one `aoi:meta`,
//! first, and at most one `aoi:summary`, last.
//!
//! The rule holds in every mode a command has: besides the example, a run with each verbosity
//! switch the input schema advertises (`--verbose`, `--debug`, `--trace`), whose stream is
//! judged as every probe's is (a second `aoi:meta` there fails this check).

use super::{id, stream_check};
use crate::model::{CheckId, CheckResult};
use crate::subject::{Extras, Subject};

/// This check.
pub const ID: CheckId = id(14);

/// The switches that change how much a command says, not what it does.
const VERBOSITY: [&str; 3] = ["--verbose", "--debug", "--trace"];

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let result = stream_check(subject, ID, "one aoi:meta, first; one aoi:summary, last");
    if let Ok(args) = &subject.base {
        for flag in VERBOSITY.iter().filter(|f| subject.takes(f)) {
            if args.iter().any(|a| a == flag) {
                continue;
            }
            let mut louder = args.clone();
            louder.push((*flag).to_owned());
            // Its stream's violations are recorded for the stream checks, this one included.
            let _ = subject.exec(&louder, &Extras::default());
        }
    }
    result
}
