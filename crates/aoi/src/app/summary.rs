//! What a discovery document looks like to a person: a summary at a terminal, the JSON
//! elsewhere (§17).

use serde_json::Value;

use super::Discovery;
use crate::surface::flags::OutputMode;

/// A discovery document as printed: §2 makes every line of a JSONL stdout one complete JSON
/// object, so `--output jsonl` gets one compact line; `--output json` is one document (§17)
/// and human mode is read by people, so both stay pretty. Always newline-terminated.
/// A discovery document as a person reads it at a terminal: for `capabilities`, each command
/// with what it may do and its description, then the examples; for `schema`, each event type
/// with its required fields; for `input-schema`, each argument with its flag and type. The
/// JSON is one `--output json` away (said on the last line). Data is made printable.
pub(super) fn discovery_summary(document: &Value, which: &Discovery, tool: &str) -> String {
    use crate::surface::term::{pad, printable_line, width};
    let text = |v: &Value| printable_line(v.as_str().unwrap_or_default()).into_owned();
    let table = |rows: Vec<[String; 3]>| -> String {
        let w0 = rows.iter().map(|r| width(&r[0])).max().unwrap_or(0);
        let w1 = rows.iter().map(|r| width(&r[1])).max().unwrap_or(0);
        rows.iter()
            .map(|r| {
                format!("  {}  {}  {}", pad(&r[0], w0), pad(&r[1], w1), r[2])
                    .trim_end()
                    .to_owned()
                    + "\n"
            })
            .collect()
    };
    let mut out = String::new();
    match which {
        Discovery::Capabilities => {
            out.push_str(&format!(
                "{} {}: {} commands\n\n",
                text(&document["tool"]),
                text(&document["tool_version"]),
                document["commands"].as_array().map_or(0, Vec::len)
            ));
            let mut rows = Vec::new();
            let mut examples = Vec::new();
            for c in document["commands"].as_array().into_iter().flatten() {
                let kind = if c["read_only"] == true {
                    "read-only"
                } else if c["destructive"] == true {
                    "destructive"
                } else if c["additive"] == true {
                    "additive"
                } else {
                    "writes"
                };
                let what = c["input_schema"]["description"].clone();
                rows.push([text(&c["name"]), kind.to_owned(), text(&what)]);
                for e in c["examples"].as_array().into_iter().flatten() {
                    let words: Vec<String> = e
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|w| printable_line(w.as_str().unwrap_or_default()).into_owned())
                        .map(|w| crate::surface::term::shell_word(&w).into_owned())
                        .collect();
                    examples.push(format!("  {tool} {}\n", words.join(" ")));
                }
            }
            out.push_str(&table(rows));
            if !examples.is_empty() {
                out.push_str("\nExamples:\n");
                out.extend(examples);
            }
            out.push_str(&format!(
                "\nThe whole manifest: {tool} capabilities --output json\n"
            ));
        }
        Discovery::Schema { .. } => {
            let defs = document["$defs"].as_object();
            let events: Vec<(&String, &Value)> = defs
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.starts_with("event."))
                .collect();
            out.push_str(&format!(
                "{} {}: {} event types, and the aoi: framework events\n\n",
                text(&document["x-aoi"]["schema_name"]),
                text(&document["x-aoi"]["schema_version"]),
                events.len()
            ));
            let rows = events
                .iter()
                .map(|(k, v)| {
                    let required: Vec<String> = v["required"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .filter(|f| *f != "type")
                        .map(str::to_owned)
                        .collect();
                    let about = v["description"].as_str().unwrap_or_default();
                    [
                        printable_line(k.trim_start_matches("event.")).into_owned(),
                        required.join(", "),
                        printable_line(about.lines().next().unwrap_or_default()).into_owned(),
                    ]
                })
                .collect();
            out.push_str(&table(rows));
            out.push_str(&format!("\nThe JSON Schema: {tool} schema --output json\n"));
        }
        Discovery::InputSchema { command } => {
            out.push_str(&format!(
                "{tool} {}: {}\n\n",
                printable_line(command),
                text(&document["description"])
            ));
            let flags = &document["x-aoi"]["flags"];
            let rows = document["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, p)| {
                    let flag = flags[name]
                        .as_str()
                        .map_or_else(|| format!("<{name}>"), str::to_owned);
                    let kind = p["type"].as_str().unwrap_or("value").to_owned();
                    [
                        printable_line(&flag).into_owned(),
                        kind,
                        text(&p["description"]),
                    ]
                })
                .collect();
            out.push_str(&table(rows));
            out.push_str(&format!(
                "\nThe JSON Schema: {tool} input-schema --command {} --output json\n",
                printable_line(command)
            ));
        }
    }
    out
}

pub(super) fn discovery_text(document: &Value, output: OutputMode) -> String {
    let mut text = match output {
        OutputMode::Jsonl => serde_json::to_string(document),
        OutputMode::Json | OutputMode::Human => serde_json::to_string_pretty(document),
    }
    .unwrap_or_default();
    text.push('\n');
    text
}
