//! Check 6, Safe (§14.2, §14.3): a destructive command refuses to run without `--confirm`
//! and changes nothing; `--dry-run`, where advertised, emits `aoi:plan` and changes nothing.
//! "Changes nothing" is judged by comparing the sandbox before and after.

use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{without, Captured, Extras, Subject};

/// This check.
pub const ID: CheckId = id(6);

fn changed(captured: &Captured) -> Option<String> {
    captured
        .changes
        .first()
        .map(|c| format!("{} file(s) changed, first {c}", captured.changes.len()))
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let destructive = subject.entry.destructive;
    let dry_run = subject.takes("--dry-run");
    if subject.entry.read_only || (!destructive && !dry_run) {
        return judge.not_applicable(if subject.entry.read_only {
            "read-only: nothing to confirm or plan (§18.1)"
        } else {
            "neither destructive nor advertising --dry-run"
        });
    }
    let base = match subject.base_run() {
        Ok(base) => base,
        Err(why) => return judge.could_not_run(why),
    };
    let args = match &subject.base {
        Ok(args) => args.clone(),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let mut passed = Vec::new();
    if destructive {
        if base.changes.is_empty() {
            return judge.could_not_run(
                "the example destroys nothing in the sandbox, so a refusal cannot be told from a no-op; add setup data in aoi-lint.toml",
            );
        }
        let unconfirmed = without(&without(&args, "--confirm", false), "--confirm-count", true);
        let refused = match subject.exec(&unconfirmed, &Extras::default()) {
            Ok(run) => run,
            Err(why) => return judge.could_not_run(why),
        };
        if refused.run.exit.code() == Some(0) {
            return judge
                .fail("without --confirm the destructive command exits 0")
                .evidence(refused.evidence());
        }
        if let Some(what) = changed(&refused) {
            return judge
                .fail(format!(
                    "without --confirm it still changed the sandbox: {what}"
                ))
                .evidence(refused.evidence());
        }
        passed.push(format!(
            "refuses without --confirm (exit {}) and changes nothing",
            refused.run.exit.shell_status()
        ));
    }
    if dry_run {
        let mut planned = args.clone();
        if !planned.iter().any(|a| a == "--dry-run") {
            planned.push("--dry-run".into());
        }
        let dry = match subject.exec(&planned, &Extras::default()) {
            Ok(run) => run,
            Err(why) => return judge.could_not_run(why),
        };
        if let Some(what) = changed(&dry) {
            return judge
                .fail(format!("--dry-run changed the sandbox: {what}"))
                .evidence(dry.evidence());
        }
        let plans = dry.plans();
        let real_did_something = !base.changes.is_empty() || base.domain().next().is_some();
        if plans == 0 && real_did_something {
            return judge
                .fail(format!(
                    "--dry-run emitted no aoi:plan although the real run does something ({})",
                    dry.ending()
                ))
                .evidence(dry.evidence());
        }
        passed.push(format!(
            "--dry-run plans {plans} effect(s) and changes nothing"
        ));
    }
    judge.pass(passed.join("; "))
}
