//! Check 10, Composable (§7): closing the pipe early prints no stack trace, and SIGINT and
//! SIGTERM end an unbounded command with a `reason:"cancelled"` summary.

use super::{id, stack_trace, Judge};
use crate::model::{CheckId, CheckResult};
use crate::sandbox::Signal;
use crate::subject::{snapshot, with, Extras, Subject};

/// This check.
pub const ID: CheckId = id(10);

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    let args = match &subject.base {
        Ok(args) => args.clone(),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let mut passed = Vec::new();

    // The reader goes away after the first line. A bounded read is asked for more lines, so
    // that the tool is still writing when the pipe closes.
    let args_for_pipe = if subject.takes("--limit") {
        with(&args, "--limit", "1000")
    } else {
        args.clone()
    };
    let sandbox = match subject.fresh() {
        Ok(s) => s,
        Err(why) => return judge.could_not_run(why),
    };
    let inv = subject.invocation_of(&args_for_pipe, &Extras::default());
    let before = match snapshot(&sandbox) {
        Ok(s) => s,
        Err(why) => return judge.could_not_run(why),
    };
    let mut running = match sandbox.spawn(&inv) {
        Ok(r) => r,
        Err(e) => return judge.could_not_run(format!("could not start the command: {e}")),
    };
    let timeout = subject.tool.config.timeout();
    let _ = running.read_line(timeout);
    running.close_stdout();
    let closed = match running.wait(timeout) {
        Ok(run) => run,
        Err(e) => return judge.could_not_run(format!("could not wait for the command: {e}")),
    };
    // A read-only command writes nothing here either (check 1 hears of it).
    let changes = subject
        .changes_since(&sandbox, &before, &closed.argv)
        .unwrap_or_default();
    let closed = subject.judge_unrecorded(closed, changes);
    if let Some(trace) = stack_trace(&closed.run.stderr) {
        return judge
            .fail("closing the pipe early printed a stack trace")
            .evidence(closed.quote(None, &trace));
    }
    if closed.run.timed_out {
        return judge
            .fail("it kept running after its reader went away")
            .evidence(closed.evidence());
    }
    passed.push(format!(
        "an early pipe close ends quietly (exit {})",
        closed.run.exit.shell_status()
    ));

    if subject.entry.unbounded {
        for (signal, name, status) in [
            (Signal::Interrupt, "SIGINT", 130),
            (Signal::Terminate, "SIGTERM", 143),
        ] {
            let sandbox = match subject.fresh() {
                Ok(s) => s,
                Err(why) => return judge.could_not_run(why),
            };
            let inv = subject.invocation_of(&args, &Extras::default());
            let before = match snapshot(&sandbox) {
                Ok(s) => s,
                Err(why) => return judge.could_not_run(why),
            };
            let run = match subject.interrupt(&sandbox, &inv, signal) {
                Ok(run) => run,
                Err(why) => return judge.could_not_run(why),
            };
            let changes = subject
                .changes_since(&sandbox, &before, &run.argv)
                .unwrap_or_default();
            let ended = subject.judge_unrecorded(run, changes);
            let reason = ended.summary().and_then(|s| s.reason);
            if reason != Some(aoi::Reason::Cancelled) {
                return judge
                    .fail(format!(
                        "{name} did not end the stream with reason:\"cancelled\" ({})",
                        ended.ending()
                    ))
                    .evidence(ended.evidence());
            }
            if ended.run.exit.shell_status() != status {
                return judge
                    .fail(format!(
                        "{name} ended with a cancelled summary but exit {} (expected {status})",
                        ended.run.exit.shell_status()
                    ))
                    .evidence(ended.evidence());
            }
            if let Some(trace) = stack_trace(&ended.run.stderr) {
                return judge
                    .fail(format!("{name} printed a stack trace"))
                    .evidence(ended.quote(None, &trace));
            }
        }
        passed.push("SIGINT and SIGTERM end it with reason:\"cancelled\", 130 and 143".into());
    } else {
        passed.push("finite: no signal probe (it ends on its own)".into());
    }
    judge.pass(passed.join("; "))
}
