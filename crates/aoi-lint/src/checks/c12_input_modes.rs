//! Check 12, Composable (§12.2): a malformed line of `--input-jsonl` is handled as the
//! command declares. Lint puts the malformed line after good records (the example's own
//! input, or a record built from the record schema the input schema documents) and then the
//! same records again:
//!
//! - fail-fast aborts the whole command before any side effect (the good records before the
//!   bad line are not written either) and names the line;
//! - continue-on-error reports an item error for that line and goes on: the run has the
//!   effect and the domain events of the same input without the bad line.

use aoi::wire::Scope;
use aoi::ErrorEvent;
use serde_json::{Map, Value};

use super::{id, Judge};
use crate::model::{Advice, CheckId, CheckResult};
use crate::subject::{without, Captured, Extras, Subject};

/// This check.
pub const ID: CheckId = id(12);

/// The malformed line.
const BAD: &[u8] = b"this line is not JSON\n";

/// At most this many good records go before (and after) the bad line.
const GOOD_RECORDS: usize = 2;

/// `args` reading JSONL from stdin instead of wherever the example reads.
pub(crate) fn reading_stdin(args: &[String]) -> Vec<String> {
    let mut args = without(&without(args, "--input-jsonl", true), "--input-json", true);
    args.push("--input-jsonl".into());
    args.push("-".into());
    args
}

/// The input lint feeds: good records, the bad line, the good records again.
struct Input {
    /// The good records, each a line.
    good: Vec<u8>,
    /// How many good records precede the bad line.
    count: usize,
}

impl Input {
    /// The whole input, with the bad line.
    fn with_bad_line(&self) -> Vec<u8> {
        let mut out = self.good.clone();
        out.extend_from_slice(BAD);
        out.extend_from_slice(&self.good);
        out
    }

    /// The same input without the bad line.
    fn without_bad_line(&self) -> Vec<u8> {
        let mut out = self.good.clone();
        out.extend_from_slice(&self.good);
        out
    }

    /// The bad line's number (1-based).
    fn bad_line(&self) -> u64 {
        self.count as u64 + 1
    }
}

/// The first JSON-object lines of `text`, at most [`GOOD_RECORDS`].
fn records(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in text
        .split(|b| *b == b'\n')
        .filter(|l| serde_json::from_slice::<Map<String, Value>>(l).is_ok())
        .take(GOOD_RECORDS)
    {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

/// A record with every required property of `schema` (a string, number, boolean, array or
/// object with the first value its type allows), or none when the schema is not that simple.
fn record_from_schema(schema: &Value, n: usize) -> Option<Value> {
    let props = schema.get("properties")?.as_object()?;
    let mut record = Map::new();
    for name in schema.get("required")?.as_array()? {
        let name = name.as_str()?;
        let prop = props.get(name)?;
        let value = if let Some(c) = prop.get("const") {
            c.clone()
        } else if let Some(first) = prop.get("enum").and_then(|e| e.get(0)) {
            first.clone()
        } else {
            match prop.get("type").and_then(Value::as_str)? {
                "string" => Value::from(format!("aoi-lint-record-{n}")),
                "integer" | "number" => Value::from(n),
                "boolean" => Value::Bool(true),
                "array" => Value::Array(Vec::new()),
                "object" => Value::Object(Map::new()),
                _ => return None,
            }
        };
        record.insert(name.to_owned(), value);
    }
    Some(Value::Object(record))
}

/// Good records for `subject`: the example's own input (its stdin, or the file its
/// `--input-jsonl` names in a fresh sandbox), else records built from a record schema the
/// input schema documents ([`aoi::discover::manifest::InputSchema::record`]).
fn good_records(subject: &Subject<'_>) -> Vec<u8> {
    if let Ok(args) = &subject.base {
        let file = args
            .iter()
            .position(|a| a == "--input-jsonl")
            .and_then(|i| args.get(i + 1))
            .filter(|f| f.as_str() != "-");
        let text = match file {
            Some(file) => subject
                .fresh()
                .ok()
                .and_then(|s| std::fs::read(s.work_dir().join(file)).ok()),
            None => subject.settings.stdin.clone().map(String::into_bytes),
        };
        let found = records(&text.unwrap_or_default());
        if !found.is_empty() {
            return found;
        }
    }
    let schema = subject
        .input
        .and_then(|i| i.record())
        .map(|(_, record)| record);
    let mut out = Vec::new();
    for n in 1..=GOOD_RECORDS {
        if let Some(record) = schema.and_then(|s| record_from_schema(s, n)) {
            out.extend_from_slice(record.to_string().as_bytes());
            out.push(b'\n');
        }
    }
    out
}

/// The `aoi:error` events that name input line `line` (1-based): by `line_number`, or by an
/// `item_index` counted from 0 or from 1 (§9.1 "correlation back to the input record" says
/// neither).
fn naming(captured: &Captured, line: u64) -> Vec<&ErrorEvent> {
    captured
        .errors()
        .filter(|e| {
            e.line_number == Some(line)
                || e.item_index
                    .is_some_and(|i| i == line || i.checked_add(1) == Some(line))
        })
        .collect()
}

/// A mode that behaved as §12.2 says: what lint saw, and whether an error named the malformed
/// line (§9.1 makes `line_number`/`item_index` a SHOULD, so an unnamed line is advice).
type Behaved = (String, bool);

fn fail_fast(
    subject: &Subject<'_>,
    args: &[String],
    input: &Input,
) -> Result<Behaved, CheckResult> {
    let judge = Judge::new(ID, subject);
    let bad = input.bad_line();
    let extras = Extras {
        env: Vec::new(),
        stdin: Some(input.with_bad_line()),
    };
    let run = subject
        .exec(args, &extras)
        .map_err(|why| judge.could_not_run(why))?;
    if run.run.exit.code() == Some(0) {
        return Err(judge
            .fail(format!(
                "fail-fast input with a malformed line {bad} exits 0"
            ))
            .evidence(run.evidence()));
    }
    if let Some(change) = run.changes.first() {
        let before = if input.count > 0 {
            format!(
                " (the {} good record(s) before it were written)",
                input.count
            )
        } else {
            String::new()
        };
        return Err(judge
            .fail(format!(
                "fail-fast input with a malformed line {bad} still changed the sandbox{before}: {change}"
            ))
            .evidence(run.evidence()));
    }
    Ok((
        format!(
            "fail-fast aborts at line {bad} (exit {}) and writes nothing",
            run.run.exit.shell_status()
        ),
        !naming(&run, bad).is_empty(),
    ))
}

fn continue_on_error(
    subject: &Subject<'_>,
    args: &[String],
    input: &Input,
) -> Result<Behaved, CheckResult> {
    let judge = Judge::new(ID, subject);
    let bad = input.bad_line();
    let extras = Extras {
        env: Vec::new(),
        stdin: Some(input.with_bad_line()),
    };
    let run = subject
        .exec(args, &extras)
        .map_err(|why| judge.could_not_run(why))?;
    // §12.2 "malformed lines emit item-level errors": one naming the line, else any item error.
    let named = naming(&run, bad);
    let Some(error) = named
        .first()
        .copied()
        .or_else(|| run.errors().find(|e| e.scope == Scope::Item))
        .or_else(|| run.errors().next())
    else {
        return Err(judge
            .fail(format!(
                "continue-on-error gives no item error for the malformed line {bad}"
            ))
            .evidence(run.evidence()));
    };
    if error.scope == Scope::Process {
        return Err(judge
            .fail("continue-on-error reports the malformed line as a process error, not an item error")
            .evidence(run.evidence()));
    }
    if run.summary().is_none() || run.run.timed_out {
        return Err(judge
            .fail(format!(
                "continue-on-error did not go on to a summary ({})",
                run.ending()
            ))
            .evidence(run.evidence()));
    }
    if input.count == 0 {
        return Ok((
            format!(
                "continue-on-error reports line {bad} as an item error and goes on (no good records known to follow it: give the example's input)"
            ),
            !named.is_empty(),
        ));
    }
    // Going on means the records after the bad line are processed: the run does what the
    // same input without the bad line does.
    let clean = subject
        .exec(
            args,
            &Extras {
                env: Vec::new(),
                stdin: Some(input.without_bad_line()),
            },
        )
        .map_err(|why| judge.could_not_run(why))?;
    let (got, want) = (run.domain().count(), clean.domain().count());
    let paths = |c: &Captured| {
        let mut p: Vec<String> = c
            .changes
            .iter()
            .map(|c| c.path().display().to_string())
            .collect();
        p.sort();
        p
    };
    if got != want || paths(&run) != paths(&clean) {
        return Err(judge
            .fail(format!(
                "continue-on-error stopped at the malformed line {bad}: {got} domain event(s) where the same input without it gives {want}"
            ))
            .evidence(run.evidence()));
    }
    Ok((
        format!(
            "continue-on-error reports line {bad} as an item error and processes the {} record(s) after it",
            input.count
        ),
        !named.is_empty(),
    ))
}

/// Runs the check for one command.
pub fn run(subject: &Subject<'_>) -> CheckResult {
    let judge = Judge::new(ID, subject);
    if !subject.takes("--input-jsonl") {
        return judge.not_applicable("takes no JSONL input");
    }
    let base = match &subject.base {
        Ok(args) => reading_stdin(args),
        Err(why) => return judge.could_not_run(why.clone()),
    };
    let plain = without(
        &without(&base, "--fail-fast", false),
        "--continue-on-error",
        false,
    );
    let good = good_records(subject);
    let input = Input {
        count: good.iter().filter(|b| **b == b'\n').count(),
        good,
    };
    let default = subject.entry.input_default.as_deref();
    let mut passed = Vec::new();
    let outcome = match default {
        Some("fail_fast") => fail_fast(subject, &plain, &input),
        Some("continue_on_error") => continue_on_error(subject, &plain, &input),
        Some(other) => {
            return judge.fail(format!(
                "capabilities declares input_default {other:?}, neither fail_fast nor continue_on_error"
            ))
        }
        None if subject.takes("--fail-fast") || subject.takes("--continue-on-error") => Ok((
            "no declared default; the mode is configurable".to_owned(),
            true,
        )),
        // §12.2 asks that the mode be documented, not where: without the field lint reads,
        // the command must behave as one of the two modes, whichever it is.
        None => match fail_fast(subject, &plain, &input) {
            Ok((text, named)) => Ok((
                format!("{text} (no input_default declared: it behaves as fail-fast)"),
                named,
            )),
            Err(_) => continue_on_error(subject, &plain, &input).map(|(text, named)| {
                (
                    format!("{text} (no input_default declared: it behaves as continue-on-error)"),
                    named,
                )
            }),
        },
    };
    let mut unnamed = false;
    match outcome {
        Ok((text, named)) => {
            passed.push(text);
            unnamed |= !named;
        }
        Err(result) => return result,
    }
    if subject.takes("--continue-on-error") && default != Some("continue_on_error") {
        let mut args = plain.clone();
        args.push("--continue-on-error".into());
        match continue_on_error(subject, &args, &input) {
            Ok((text, named)) => {
                passed.push(format!("{text} under --continue-on-error"));
                unnamed |= !named;
            }
            Err(result) => return result,
        }
    }
    if subject.takes("--fail-fast") && default != Some("fail_fast") {
        let mut args = plain;
        args.push("--fail-fast".into());
        match fail_fast(subject, &args, &input) {
            Ok((text, named)) => {
                passed.push(format!("{text} under --fail-fast"));
                unnamed |= !named;
            }
            Err(result) => return result,
        }
    }
    let result = judge.pass(passed.join("; "));
    if !unnamed {
        return result;
    }
    result.advise(Advice {
        detail: format!(
            "spec §9.1 SHOULD: no error names the malformed line {} by line_number or item_index",
            input.bad_line()
        ),
        fix: "give the error for a malformed input line its `line_number` (§9.1 \"| `item_index` / `line_number` | SHOULD when `scope:\"item\"` |\")".into(),
        evidence: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_built_from_the_required_properties() {
        let schema = serde_json::json!({
            "type": "object",
            "required": ["title", "n", "kind"],
            "properties": {
                "title": {"type": "string"},
                "n": {"type": "integer"},
                "kind": {"enum": ["a", "b"]},
                "body": {"type": "string"}
            }
        });
        assert_eq!(
            record_from_schema(&schema, 2),
            Some(serde_json::json!({"title": "aoi-lint-record-2", "n": 2, "kind": "a"}))
        );
    }

    #[test]
    fn good_records_are_the_first_object_lines() {
        assert_eq!(
            records(b"{\"a\":1}\nnot json\n[1]\n{\"b\":2}\n{\"c\":3}\n"),
            b"{\"a\":1}\n{\"b\":2}\n"
        );
    }
}
