//! Check 16, Composable (§13, §13.1): fed a known upstream stream that failed, a producer
//! forwards no upstream `aoi:meta` or `aoi:summary`, tags what it forwards with `origin`,
//! counts upstream warnings, and reproduces the upstream retry fields in `caused_by`; fed an
//! upstream cut before its summary, it reports `ok:false` (§13.1: upstream EOF without a
//! terminal `aoi:summary`), never success. What its stream breaks on that path counts here,
//! except bytes that are not JSON lines: check 2's wherever they show.

use aoi::{Category, Code, Emitter, ErrorEvent, Identity, Outcome, Warning};

use super::c12_input_modes::reading_stdin;
use super::{id, Judge};
use crate::model::{CheckId, CheckResult};
use crate::subject::{without, Extras, Subject};

/// This check.
pub const ID: CheckId = id(16);

/// The upstream tool's name.
const UPSTREAM: &str = "aoi-lint-upstream";
/// Marks the upstream's warning and error messages.
const MARK: &str = "aoi-lint upstream probe";

/// What a conforming upstream writes, by the SDK's emitter: its meta, a warning, then
/// (unless the stream is `cut` before its summary) a retryable error and a failed summary.
fn upstream(cut: bool) -> Vec<u8> {
    let identity = Identity::new(
        UPSTREAM,
        "1.0.0",
        "io.machinemode.aoi-lint.upstream",
        "1.0.0",
    );
    let written = Emitter::builder(identity)
        .command("probe")
        .start(Vec::new())
        .and_then(|mut out| {
            out.warning(&Warning::new(
                Code::from_static("UPSTREAM_SLOW"),
                format!("{MARK}: a warning"),
            ))?;
            if cut {
                return Ok(out.into_writer());
            }
            out.error(
                &ErrorEvent::new(
                    Category::Unavailable,
                    Code::from_static("UPSTREAM_DOWN"),
                    format!("{MARK}: an error"),
                )
                .retryable(true)
                .retry_after_ms(1500),
            )?;
            out.finish(Outcome::failed())?;
            Ok(out.into_writer())
        });
    written.unwrap_or_default()
}

/// A conforming stream from a run that failed with a retryable error.
fn upstream_stream() -> Vec<u8> {
    upstream(false)
}

/// A conforming upstream's stream cut before its summary: its meta and a warning, then EOF
/// (the upstream died, or the pipe broke).
fn cut_stream() -> Vec<u8> {
    upstream(true)
}

/// §13.1: an upstream EOF without a terminal summary sets `ok:false`. Returns what the run
/// ended with, or the failure.
fn judges_a_cut_upstream(subject: &Subject<'_>, args: &[String]) -> Result<String, CheckResult> {
    let judge = Judge::new(ID, subject);
    let extras = Extras {
        env: Vec::new(),
        stdin: Some(cut_stream()),
    };
    let run = subject
        .exec_judged_here(args, &extras)
        .map_err(|why| judge.could_not_run(why))?;
    subject.record_where(&run, framing);
    let ok = run.summary().is_some_and(|s| s.ok);
    if ok || run.run.exit.code() == Some(0) {
        return Err(judge
            .fail(format!(
                "an upstream that ended without its aoi:summary was taken for success ({}): EOF without a summary is a failure (§13.1)",
                run.ending()
            ))
            .evidence(run.evidence()));
    }
    if let Some(result) = stream_broken(subject, &run) {
        return Err(result);
    }
    let io = run.errors().any(|e| e.category == aoi::Category::Io);
    Ok(format!(
        "an upstream cut before its summary gives {}{}",
        run.ending(),
        if io { " with an io error" } else { "" }
    ))
}

/// True for a finding that is check 2's wherever it shows: bytes that are not JSON lines
/// (§2), on the path an upstream takes as on any other.
fn framing(finding: &aoi::Finding) -> bool {
    crate::model::check_of(finding.code) == super::c02_jsonl::ID
}

/// The first violation in the stream of an upstream probe, as this check's failure (framing
/// aside: check 2 has it).
fn stream_broken(subject: &Subject<'_>, run: &crate::subject::Captured) -> Option<CheckResult> {
    let all = &run.verification.findings;
    let first = all.iter().find(|f| {
        f.level == aoi::read::Level::Violation && !crate::model::explained(f, all) && !framing(f)
    })?;
    Some(
        Judge::new(ID, subject)
            .fail(format!(
                "fed an upstream stream, its own stream breaks the contract: {} ({}): {}",
                first.code.as_str(),
                first.section,
                first.message
            ))
            .evidence(run.quote(first.line, &first.message)),
    )
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if !subject.takes("--input-jsonl") {
        return judge.not_applicable("takes no JSONL input: not a transformer or sink");
    }
    let args = match &subject.base {
        Ok(args) => without(&reading_stdin(args), "--continue-on-error", false),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let extras = Extras {
        env: Vec::new(),
        stdin: Some(upstream_stream()),
    };
    // What the producer does with an upstream is this check's: the violations of its streams
    // here (a forwarded summary's identity, say) count here, once.
    let run = match subject.exec_judged_here(&args, &extras) {
        Ok(run) => run,
        Err(why) => return judge.could_not_run(why),
    };
    subject.record_where(&run, framing);
    let metas: Vec<&aoi::Meta> = run.metas().collect();
    if metas.len() != 1 || metas[0].tool.as_deref() == Some(UPSTREAM) {
        return judge
            .fail("the upstream's aoi:meta was forwarded")
            .evidence(run.evidence());
    }
    let summaries: Vec<&aoi::Summary> = run.summaries().collect();
    if summaries.len() > 1
        || summaries
            .iter()
            .any(|s| s.tool.as_deref() == Some(UPSTREAM))
    {
        return judge
            .fail("the upstream's aoi:summary was forwarded")
            .evidence(run.evidence());
    }
    let diagnostics = run
        .warnings()
        .map(|w| {
            (
                "aoi:warning",
                &w.message,
                &w.origin,
                serde_json::to_string(w),
            )
        })
        .chain(
            run.errors()
                .map(|e| ("aoi:error", &e.message, &e.origin, serde_json::to_string(e))),
        );
    for (ty, message, origin, text) in diagnostics {
        if message.contains(MARK) && origin.is_none() {
            return judge
                .fail(format!("a forwarded upstream {ty} has no origin"))
                .evidence(run.quote(None, &text.unwrap_or_default()));
        }
    }
    let Some(summary) = run.summary() else {
        return judge
            .fail(format!(
                "no aoi:summary after the upstream failure ({})",
                run.ending()
            ))
            .evidence(run.evidence());
    };
    let text = serde_json::to_string(summary).unwrap_or_default();
    if summary.warning_count.unwrap_or(0) < 1 {
        return judge
            .fail("the upstream warning is not counted in warning_count")
            .evidence(run.quote(None, &text));
    }
    if summary.ok {
        return judge
            .fail("an upstream aoi:error did not set ok:false (§13.1), and --continue-on-error was not given")
            .evidence(run.quote(None, &text));
    }
    let reproduced = summary.caused_by.as_ref().is_some_and(|c| {
        c.category == aoi::Category::Unavailable && c.retryable && c.retry_after_ms == Some(1500)
    });
    if !reproduced {
        return judge
            .fail("aoi:summary.caused_by does not reproduce the upstream retry fields (unavailable, retryable, retry_after_ms 1500)")
            .evidence(run.quote(None, &text));
    }
    if let Some(result) = stream_broken(subject, &run) {
        return result;
    }
    let cut = match judges_a_cut_upstream(subject, &args) {
        Ok(text) => text,
        Err(result) => return result,
    };
    judge.pass(format!("no upstream meta or summary forwarded; origin on what is forwarded; the upstream warning counted; caused_by carries the retry fields; {cut}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstream_stream_is_a_conforming_honest_failure_with_retry_fields() {
        let stream = upstream_stream();
        let report = aoi::Verifier::verify_bytes(&stream, aoi::VerifyOptions::default());
        assert_eq!(
            report.verdict,
            aoi::Verdict::Failed,
            "{:?}",
            report.findings
        );
        assert_eq!((report.warnings, report.errors), (1, 1));
        let cause = report.caused_by.expect("retry detail");
        assert_eq!(cause.retry_after_ms, Some(1500));
    }
}

#[cfg(test)]
mod cut_tests {
    use super::*;

    #[test]
    fn the_cut_stream_has_a_meta_and_no_summary() {
        let report = aoi::Verifier::verify_bytes(&cut_stream(), aoi::VerifyOptions::default());
        // Read without a process end, EOF before the summary is a broken stream.
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.code == aoi::FindingCode::SummaryMissing),
            "{:?}",
            report.findings
        );
        assert!(report.summary.is_none());
        let stream = String::from_utf8(cut_stream()).unwrap();
        let types: Vec<&str> = stream.lines().filter_map(|l| l.split('"').nth(3)).collect();
        assert_eq!(types, ["aoi:meta", "aoi:warning"]);
    }
}
