//! Check 16, Composable (§13, §13.1): fed a known upstream stream that failed, a producer
//! forwards no upstream `aoi:meta` or `aoi:summary`, tags what it forwards with `origin`,
//! counts upstream warnings, and reproduces the upstream retry fields in `caused_by`.

use serde_json::Value;

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

/// A conforming stream from a run that failed with a retryable error.
fn upstream_stream() -> Vec<u8> {
    let run = "01JZQ7X4TQ9V6H0ZT7K8F2W3C1";
    let lines = [
        serde_json::json!({"type":"aoi:meta","aoi":{"seq":0,"run":run},"tool":UPSTREAM,"tool_version":"1.0.0","aoi_version":"1.0-alpha","schema_name":"io.machinemode.aoi-lint.upstream","schema_version":"1.0.0"}),
        serde_json::json!({"type":"aoi:warning","aoi":{"seq":1,"run":run},"code":"UPSTREAM_SLOW","message":format!("{MARK}: a warning")}),
        serde_json::json!({"type":"aoi:error","aoi":{"seq":2,"run":run},"scope":"process","category":"unavailable","code":"UPSTREAM_DOWN","message":format!("{MARK}: an error"),"retryable":true,"retry_after_ms":1500}),
        serde_json::json!({"type":"aoi:summary","aoi":{"seq":3,"run":run},"ok":false,"reason":"failed","event_count":4,"count":0,"warning_count":1,"error_count":1,"partial":false,"truncated":false,"tool":UPSTREAM,"tool_version":"1.0.0","aoi_version":"1.0-alpha","schema_name":"io.machinemode.aoi-lint.upstream","schema_version":"1.0.0"}),
    ];
    let mut out = Vec::new();
    for line in lines {
        out.extend(line.to_string().into_bytes());
        out.push(b'\n');
    }
    out
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
    let run = match subject.exec(&args, &extras) {
        Ok(run) => run,
        Err(why) => return judge.could_not_run(why),
    };
    let metas: Vec<&Value> = run.of_type("aoi:meta").collect();
    if metas.len() != 1 || metas[0].get("tool").and_then(Value::as_str) == Some(UPSTREAM) {
        return judge
            .fail("the upstream's aoi:meta was forwarded")
            .evidence(run.evidence());
    }
    let summaries: Vec<&Value> = run.of_type("aoi:summary").collect();
    if summaries.len() > 1
        || summaries
            .iter()
            .any(|s| s.get("tool").and_then(Value::as_str) == Some(UPSTREAM))
    {
        return judge
            .fail("the upstream's aoi:summary was forwarded")
            .evidence(run.evidence());
    }
    for ty in ["aoi:warning", "aoi:error"] {
        for event in run.of_type(ty) {
            let forwarded = event
                .get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.contains(MARK));
            if forwarded && event.get("origin").and_then(Value::as_str).is_none() {
                return judge
                    .fail(format!("a forwarded upstream {ty} has no origin"))
                    .evidence(run.quote(None, &event.to_string()));
            }
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
    if summary
        .get("warning_count")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        < 1
    {
        return judge
            .fail("the upstream warning is not counted in warning_count")
            .evidence(run.quote(None, &summary.to_string()));
    }
    if summary.get("ok") == Some(&Value::Bool(true)) {
        return judge
            .fail("an upstream aoi:error did not set ok:false (§13.1), and --continue-on-error was not given")
            .evidence(run.quote(None, &summary.to_string()));
    }
    let caused = summary.get("caused_by");
    let field = |k: &str| caused.and_then(|c| c.get(k));
    let reproduced = field("category").and_then(Value::as_str) == Some("unavailable")
        && field("retryable") == Some(&Value::Bool(true))
        && field("retry_after_ms").and_then(Value::as_u64) == Some(1500);
    if !reproduced {
        return judge
            .fail("aoi:summary.caused_by does not reproduce the upstream retry fields (unavailable, retryable, retry_after_ms 1500)")
            .evidence(run.quote(None, &summary.to_string()));
    }
    judge.pass("no upstream meta or summary forwarded; origin on what is forwarded; the upstream warning counted; caused_by carries the retry fields")
}
