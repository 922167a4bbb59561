//! `doctor`: readiness checks as `aoi:check` events (§16.2, §19.3).

use std::io::Write;

use crate::emit::{EmitError, Emitter, Outcome};
use crate::wire::{Check, Severity};

/// Collects checks, emits each as an `aoi:check`, and ends the run `ok:false` when any check of
/// severity `error` failed (`properties.checks_failed` counts them).
#[derive(Debug, Default)]
pub struct Doctor {
    failed: u64,
    warned: u64,
}

impl Doctor {
    /// A doctor with no checks yet.
    pub fn new() -> Doctor {
        Doctor::default()
    }

    /// Emits one check.
    pub fn check<W: Write>(
        &mut self,
        out: &mut Emitter<W>,
        name: &str,
        ok: bool,
        severity: Severity,
        detail: impl Into<String>,
        hint: Option<&str>,
    ) -> Result<(), EmitError> {
        if !ok {
            match severity {
                Severity::Error => self.failed += 1,
                Severity::Warning => self.warned += 1,
                Severity::Info => {}
            }
        }
        out.check(&Check {
            name: name.to_owned(),
            ok,
            severity: Some(severity),
            detail: Some(crate::wire::single_line(&detail.into()).into_owned()),
            hint: hint.map(|h| crate::wire::single_line(h).into_owned()),
            properties: None,
        })
    }

    /// The outcome: `ok:false, reason:"failed"` when an error-severity check failed.
    pub fn outcome(&self) -> Outcome {
        let outcome = if self.failed > 0 {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        outcome
            .property("checks_failed", self.failed)
            .property("checks_warned", self.warned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Identity;

    #[test]
    fn a_failed_error_check_fails_the_run_and_warnings_do_not() {
        let mut out = Emitter::builder(Identity::new("t", "1", "s", "1.0.0"))
            .command("doctor")
            .start(Vec::new())
            .unwrap();
        let mut d = Doctor::new();
        d.check(&mut out, "config_file", true, Severity::Info, "found", None)
            .unwrap();
        d.check(
            &mut out,
            "index",
            false,
            Severity::Warning,
            "stale",
            Some("t reindex"),
        )
        .unwrap();
        let finished = out.finish(d.outcome()).unwrap();
        assert!(finished.summary.ok);
        let mut out = Emitter::builder(Identity::new("t", "1", "s", "1.0.0"))
            .start(Vec::new())
            .unwrap();
        let mut d = Doctor::new();
        d.check(
            &mut out,
            "api_token",
            false,
            Severity::Error,
            "missing",
            Some("t auth login"),
        )
        .unwrap();
        let finished = out.finish(d.outcome()).unwrap();
        assert!(!finished.summary.ok);
        assert_eq!(finished.exit_code, 1);
        let bytes = out.into_writer();
        let report = crate::Verifier::verify_bytes(&bytes, Default::default());
        assert_eq!(report.verdict, crate::Verdict::Failed);
        assert_eq!(
            finished.summary.properties.unwrap()["checks_failed"],
            serde_json::json!(1)
        );
    }
}
