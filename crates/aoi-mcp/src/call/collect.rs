//! What a call keeps of a run as its lines arrive: the events (within the response's budget
//! and the tool's `outputSchema`), the summary, the errors a headline names, and the
//! progress it forwards.

use aoi::read::{decode_object, Event, LineKind};
use aoi::{Category, ErrorEvent, VerifyOptions};
use serde_json::{json, Map, Value};

use super::{Invocation, ProgressUpdate};
use crate::catalog::ServedTool;

/// Events that do not fit the `outputSchema` named one by one in a result; those past them are
/// withheld all the same, and counted. A CLI can write millions: the adapter holds no more
/// than these and the verifier's findings (whose lines are named by the verifier instead).
pub(super) const MISFITS_LISTED: usize = 100;

/// What a response costs for one event line: once in `structuredContent`, once escaped in
/// the text block (every `"` and `\` doubled; the line is compact JSON, so nothing else is
/// escaped), and a comma each time.
pub(super) fn wire_cost(line: &[u8]) -> usize {
    let escaped = line.iter().filter(|&&b| b == b'"' || b == b'\\').count();
    2 * line.len() + escaped + 2
}

/// Everything kept of a run as it is read.
#[derive(Default)]
pub(super) struct Collected {
    /// Events in stream order, with their line numbers, each as its JSON text.
    pub(super) events: Vec<(u64, String)>,
    /// The lines of errors whose category this version does not know.
    pub(super) unknown_category_lines: Vec<u64>,
    /// Findings for events that do not fit the tool's `outputSchema`: withheld. At most
    /// [`MISFITS_LISTED`] more than the verifier keeps findings, so that [`MISFITS_LISTED`]
    /// remain once those on lines the verifier rejected are dropped.
    pub(super) misfits: Vec<Value>,
    /// Events that do not fit the `outputSchema` and are not in `misfits`.
    pub(super) misfits_unlisted: u64,
    pub(super) summary: Option<(u64, Value)>,
    /// The errors the headline may name: the first, and the first of process scope. A CLI
    /// can write millions of errors; only these two are held.
    pub(super) errors: Vec<ErrorEvent>,
    /// Per error kept, in order: its wire category when this version does not know it (§9.4:
    /// it is forwarded unchanged and routed as `internal`).
    pub(super) unknown_categories: Vec<Option<String>>,
    pub(super) domain_events: u64,
    /// Wire cost of the events kept.
    pub(super) cost: usize,
    /// Events not kept: past `--max-output`, or past `max_events`.
    pub(super) withheld: u64,
    /// Events past `--max-output` (a subset of `withheld`).
    pub(super) over_budget: bool,
    pub(super) last_progress: Option<f64>,
}

/// One complete line of the stream, as the verifier classed it.
pub(super) struct Line<'a> {
    pub(super) number: u64,
    pub(super) bytes: &'a [u8],
    pub(super) kind: LineKind,
}

/// Takes one complete line the verifier did not reject outright into `kept`. An event that
/// does not fit `output` (the tool's `outputSchema`) is withheld and named in `kept.misfits`.
pub(super) fn take_line(
    tool: &ServedTool,
    invocation: &Invocation,
    budget: usize,
    output: Option<&jsonschema::Validator>,
    line: Line<'_>,
    kept: &mut Collected,
    progress: &mut impl FnMut(ProgressUpdate),
) {
    let number = line.number;
    // The verifier parses framework lines and only scans domain ones: parsed here once, to
    // be checked; it is kept as the text it came in.
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(line.bytes) else {
        return;
    };
    let keep = |kept: &mut Collected, object: Map<String, Value>| {
        if let Some(finding) = output.and_then(|v| misfit(v, number, &object)) {
            if kept.misfits.len() < MISFITS_LISTED + VerifyOptions::default().max_findings {
                kept.misfits.push(finding);
            } else {
                kept.misfits_unlisted += 1;
            }
            return;
        }
        let cost = wire_cost(line.bytes);
        if kept.over_budget || kept.cost + cost > budget {
            kept.over_budget = true;
            kept.withheld += 1;
            return;
        }
        kept.cost += cost;
        // The line as written, unless it holds a carriage return (JSON whitespace, but a line
        // break to an SSE reader): then its compact serialization.
        let text = match std::str::from_utf8(line.bytes) {
            Ok(text) if !text.contains('\r') => text.trim().to_owned(),
            _ => Value::Object(object).to_string(),
        };
        kept.events.push((number, text));
    };
    if line.kind != LineKind::Framework {
        kept.domain_events += 1;
        let past_cap = invocation
            .max_events
            .is_some_and(|m| tool.entry.unbounded && kept.domain_events > m);
        if past_cap {
            kept.withheld += 1;
        } else {
            keep(kept, object);
        }
        return;
    }
    match decode_object(object.clone()).map(|d| d.event) {
        Ok(Event::Meta(_)) => {}
        Ok(Event::Summary(_)) => kept.summary = Some((number, Value::Object(object))),
        Ok(Event::Progress(p)) => {
            let value = p.completed.map_or(0.0, |c| c as f64);
            // MCP: progress MUST increase. A value that does not is not forwarded (the event
            // stays in the result).
            if kept.last_progress.is_none_or(|last| value > last) {
                kept.last_progress = Some(value);
                progress(ProgressUpdate {
                    progress: value,
                    total: p.total.map(|t| t as f64),
                    message: p.message,
                });
            }
            keep(kept, object);
        }
        Ok(Event::Error(e)) => {
            // §9.4: a category this version does not know is forwarded unchanged; the
            // adapter routes it as `internal` (the decoded error says so) and the headline
            // names both.
            let unknown = object
                .get("category")
                .and_then(Value::as_str)
                .filter(|c| Category::parse(c).is_none())
                .map(str::to_owned);
            // The verifier keeps its first `max_findings` findings, and each of these lines
            // has one: a kept finding is about one of the first `max_findings` such lines.
            if unknown.is_some()
                && kept.unknown_category_lines.len() < VerifyOptions::default().max_findings
            {
                kept.unknown_category_lines.push(number);
            }
            let process = aoi::wire::Scope::Process;
            let named = kept.errors.is_empty()
                || (e.scope == process && kept.errors.iter().all(|k| k.scope != process));
            if named {
                kept.errors.push(e);
                kept.unknown_categories.push(unknown);
            }
            keep(kept, object);
        }
        Ok(_) => keep(kept, object),
        // A framework event that breaks its shape is the verifier's finding, not a result.
        Err(_) => {}
    }
}

/// The finding for an event on line `number` that does not fit `output` (checked as the
/// only event of a result), or `None` when it fits.
fn misfit(
    output: &jsonschema::Validator,
    number: u64,
    event: &Map<String, Value>,
) -> Option<Value> {
    let probe = json!({"events": [event], "summary": null});
    let error = output
        .iter_errors(&probe)
        .find(|e| e.instance_path().to_string().starts_with("/events/0"))?;
    let path = error
        .instance_path()
        .to_string()
        .replacen("/events/0", "", 1);
    // jsonschema's message quotes the value, which may be megabytes long.
    let message = aoi::read::bounded_message(format!(
        "line {number}: {}{error}",
        if path.is_empty() {
            String::new()
        } else {
            format!("{path}: ")
        }
    ));
    Some(
        json!({"code": "OUTPUT_SCHEMA_MISMATCH", "level": "violation", "section": "§10", "line": number, "message": message}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_cost_counts_the_line_twice_and_its_escapes_once() {
        assert_eq!(wire_cost(br#"{"a":1}"#), 2 * 7 + 2 + 2);
        assert_eq!(wire_cost(br#""\\""#), 2 * 4 + 4 + 2);
    }
}
