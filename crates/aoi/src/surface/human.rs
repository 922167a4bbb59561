//! Human output derived from the machine stream: one handler serves both modes.
//!
//! A command writes its events to an [`Emitter`](crate::emit::Emitter) whatever the output
//! mode. In human mode (`--output human`) [`App::run`](crate::app::App::run) gives the emitter a
//! [`HumanRenderer`] instead of stdout: each line the emitter writes is read back and shown to a
//! person, so the exit status, the refusals, the dry-run plans and the idempotent replays are
//! the machine mode's by construction (the harness computes the exit status from the same
//! events in both modes).
//!
//! What a person sees, on stdout unless said otherwise:
//! - a run of two or more domain events of one type whose fields are all scalars: a table,
//!   one column per field in the order they first appear, cells cut to the terminal;
//! - any other domain event: `field: value` lines, a blank line between events (nested
//!   values as compact JSON);
//! - `aoi:plan`: `would ACTION TARGET`, and after the summary `dry run: nothing was changed`;
//! - `aoi:check`: `✓ name` or `✗ name: detail`;
//! - `aoi:warning` and `aoi:error` on stderr: `warning: …`, `error: TARGET: …` and its hint;
//! - the summary: `more: COMMAND LINE --cursor NEXT` (the whole line to paste) when the page
//!   was cut, `replayed: …` when the events are a replay of an earlier run with the same
//!   `--idempotency-key`, `(none)` for a successful read that found nothing;
//! - `aoi:meta`: nothing; `aoi:progress` and `aoi:heartbeat`: nothing of their own, but the
//!   events waiting for a table are shown then (a stream that goes on is not held back).
//!
//! Every value is escaped for the terminal ([`printable_line`]); colour only where
//! [`Paint`] allows it (a terminal, no `NO_COLOR`, no `--no-color`). A command that wants its
//! own layout for an event type gives a [`HumanHook`]: whatever it returns replaces the default
//! for that event.

use std::io::{self, Write};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::color::Paint;
use super::term::{pad, printable_line, shell_word, truncate, width};

/// A command's own rendering of one domain event: `Some(text)` (lines, no trailing newline)
/// replaces the default; `None` keeps it. Called with the event's type and its fields (without
/// `type` and `aoi`).
pub type HumanHook = Arc<dyn Fn(&str, &Map<String, Value>) -> Option<String> + Send + Sync>;

/// An event's fields in the order the line has them (a `Map` sorts its keys): columns and
/// `key: value` lines follow the order the tool wrote.
struct Fields(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Fields, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    fields.push((key, value));
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

impl Fields {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn remove(&mut self, key: &str) -> Option<Value> {
        let mut found = None;
        self.0.retain_mut(|(k, v)| {
            if k == key {
                found = Some(std::mem::take(v));
                false
            } else {
                true
            }
        });
        found
    }

    fn map(&self) -> Map<String, Value> {
        self.0.iter().cloned().collect()
    }
}

/// Rows of one table shown at once: the widths are those of these rows.
const TABLE_ROWS: usize = 500;
/// The widest a table cell is shown before it is cut with `…`.
const CELL_COLUMNS: usize = 60;

/// Reads the machine stream an emitter writes and shows it to a person (see the module docs).
pub struct HumanRenderer<W: Write, E: Write> {
    out: W,
    err: E,
    paint: Paint,
    err_paint: Paint,
    hook: Option<HumanHook>,
    /// The command line as typed, program first: the base of a `more:` hint.
    argv: Vec<String>,
    /// The bytes of a line not yet complete.
    partial: Vec<u8>,
    /// Domain events of one type, waiting to be shown together.
    pending: Vec<(String, Fields)>,
    plans: u64,
    replayed: bool,
}

impl<W: Write, E: Write> std::fmt::Debug for HumanRenderer<W, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HumanRenderer")
            .field("pending", &self.pending.len())
            .field("plans", &self.plans)
            .finish_non_exhaustive()
    }
}

impl<W: Write, E: Write> HumanRenderer<W, E> {
    /// A renderer writing to `out` and `err`; `paint` and `err_paint` say whether each may be
    /// coloured; `argv` is the command line as typed (program first), for `more:` hints.
    pub fn new(out: W, err: E, paint: Paint, err_paint: Paint, argv: Vec<String>) -> Self {
        HumanRenderer {
            out,
            err,
            paint,
            err_paint,
            hook: None,
            argv,
            partial: Vec::new(),
            pending: Vec::new(),
            plans: 0,
            replayed: false,
        }
    }

    /// With a command's own rendering of its events.
    pub fn hook(mut self, hook: Option<HumanHook>) -> Self {
        self.hook = hook;
        self
    }

    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        let Ok(mut event) = serde_json::from_slice::<Fields>(line) else {
            // Not something the emitter writes; shown as it is, escaped.
            let text = String::from_utf8_lossy(line);
            return writeln!(self.out, "{}", printable_line(&text));
        };
        let ty = match event.remove("type") {
            Some(Value::String(ty)) => ty,
            _ => String::new(),
        };
        event.remove("aoi");
        match ty.as_str() {
            "aoi:meta" => Ok(()),
            // A stream that goes on (a watch): what waited is shown now, not at its end.
            "aoi:progress" | "aoi:heartbeat" => self.show_pending(),
            "aoi:plan" => {
                self.show_pending()?;
                self.plans += 1;
                let action = text_of(event.get("action")).unwrap_or_else(|| "change".into());
                let target = text_of(event.get("target"))
                    .map(|t| format!(" {}", printable_line(&t)))
                    .unwrap_or_default();
                let detail = text_of(event.get("detail"))
                    .map(|d| format!("  ({})", printable_line(&d)))
                    .unwrap_or_default();
                let would = self.paint.warn("would");
                writeln!(
                    self.out,
                    "{would} {}{target}{detail}",
                    printable_line(&action)
                )
            }
            "aoi:check" => {
                self.show_pending()?;
                let name = text_of(event.get("name")).unwrap_or_default();
                let ok = event.get("ok") == Some(&Value::Bool(true));
                let mark = if ok {
                    self.paint.good("✓")
                } else {
                    self.paint.bad("✗")
                };
                let detail = text_of(event.get("detail"))
                    .map(|d| format!(": {}", printable_line(&d)))
                    .unwrap_or_default();
                writeln!(self.out, "{mark} {}{detail}", printable_line(&name))
            }
            "aoi:warning" => {
                self.show_pending()?;
                let message = text_of(event.get("message")).unwrap_or_default();
                let label = self.err_paint.warn("warning:");
                writeln!(self.err, "{label} {}", printable_line(&message))
            }
            "aoi:error" => {
                self.show_pending()?;
                self.error(&event)
            }
            "aoi:summary" => {
                self.show_pending()?;
                self.summary(&event)
            }
            _ => {
                if event.get("replayed") == Some(&Value::Bool(true)) {
                    self.replayed = true;
                    event.remove("replayed");
                }
                if self.pending.first().is_some_and(|(t, _)| *t != ty)
                    || self.pending.len() >= TABLE_ROWS
                {
                    self.show_pending()?;
                }
                self.pending.push((ty, event));
                Ok(())
            }
        }
    }

    fn error(&mut self, event: &Fields) -> io::Result<()> {
        let message = text_of(event.get("message")).unwrap_or_default();
        let target = text_of(event.get("target"))
            .map(|t| format!("{}: ", printable_line(&t)))
            .unwrap_or_default();
        let label = self.err_paint.bad("error:");
        writeln!(self.err, "{label} {target}{}", printable_line(&message))?;
        if let Some(hint) = text_of(event.get("hint")) {
            writeln!(self.err, "  hint: {}", printable_line(&hint))?;
        }
        Ok(())
    }

    fn summary(&mut self, summary: &Fields) -> io::Result<()> {
        let ok = summary.get("ok") == Some(&Value::Bool(true));
        if self.plans > 0 {
            let note = self.paint.dim("dry run: nothing was changed");
            writeln!(self.out, "{note}")?;
        }
        // A replay (§14.4): the SDK's `replay` says so on the summary, a tool may on events.
        let replay = summary
            .get("properties")
            .and_then(|p| p.get("idempotent_replay"))
            == Some(&Value::Bool(true));
        if self.replayed || replay {
            let note = self.paint.dim(
                "replayed: an earlier run with this --idempotency-key did this; nothing was done again",
            );
            writeln!(self.out, "{note}")?;
        }
        let count = summary.get("count").and_then(Value::as_u64);
        let skipped = summary.get("reason").and_then(Value::as_str) == Some("skipped");
        if ok && !skipped && self.plans == 0 && count == Some(0) {
            writeln!(self.out, "{}", self.paint.dim("(none)"))?;
        }
        if let (Some(Value::Bool(true)), Some(Value::String(next))) =
            (summary.get("truncated"), summary.get("next_cursor"))
        {
            let line = more_line(&self.argv, next);
            writeln!(self.out, "{} {line}", self.paint.dim("more:"))?;
        }
        Ok(())
    }

    /// Shows the waiting domain events: through the hook, as a table, or as blocks.
    fn show_pending(&mut self) -> io::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let mut rest = Vec::new();
        for (ty, fields) in pending {
            match self.hook.as_ref().and_then(|hook| hook(&ty, &fields.map())) {
                Some(text) => {
                    for line in text.lines() {
                        writeln!(self.out, "{}", printable_line(line))?;
                    }
                }
                None => rest.push(fields),
            }
        }
        if rest.len() >= 2 && rest.iter().all(|f| f.0.iter().all(|(_, v)| is_scalar(v))) {
            return self.table(&rest);
        }
        for (i, fields) in rest.iter().enumerate() {
            if i > 0 {
                writeln!(self.out)?;
            }
            let key_width = fields.0.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
            for (key, value) in &fields.0 {
                let key = format!("{}:", printable_line(key));
                writeln!(
                    self.out,
                    "{} {}",
                    self.paint.bold(&pad(&key, key_width + 1)),
                    printable_line(&cell(value))
                )?;
            }
        }
        Ok(())
    }

    fn table(&mut self, rows: &[Fields]) -> io::Result<()> {
        let mut columns: Vec<&String> = Vec::new();
        for row in rows {
            for (key, _) in &row.0 {
                if !columns.contains(&key) {
                    columns.push(key);
                }
            }
        }
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|row| {
                columns
                    .iter()
                    .map(|c| {
                        let text = row.get(c).map(cell).unwrap_or_default();
                        truncate(&printable_line(&text), CELL_COLUMNS).into_owned()
                    })
                    .collect()
            })
            .collect();
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                cells
                    .iter()
                    .map(|r| width(&r[i]))
                    .chain([width(&printable_line(c))])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let header: Vec<String> = columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| pad(&printable_line(c).to_uppercase(), *w))
            .collect();
        writeln!(
            self.out,
            "{}",
            self.paint.bold(header.join("  ").trim_end())
        )?;
        for row in cells {
            let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| pad(c, *w)).collect();
            writeln!(self.out, "{}", line.join("  ").trim_end())?;
        }
        Ok(())
    }
}

impl<W: Write, E: Write> Write for HumanRenderer<W, E> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            self.line(&line[..end])?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.err.flush()?;
        self.out.flush()
    }
}

/// The command line that shows the next page: the one typed, its `--cursor` replaced.
fn more_line(argv: &[String], next: &str) -> String {
    let mut words = Vec::new();
    let mut skip = false;
    for (i, arg) in argv.iter().enumerate() {
        if skip {
            skip = false;
            continue;
        }
        if arg == "--cursor" {
            skip = true;
            continue;
        }
        if arg.starts_with("--cursor=") {
            continue;
        }
        let word = if i == 0 {
            std::path::Path::new(arg)
                .file_name()
                .map_or_else(|| arg.clone(), |n| n.to_string_lossy().into_owned())
        } else {
            arg.clone()
        };
        words.push(shell_word(&word).into_owned());
    }
    words.push("--cursor".into());
    words.push(shell_word(next).into_owned());
    words.join(" ")
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// A value as a person reads it: strings bare, `null` empty, the rest as compact JSON.
fn cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(lines: &[&str], argv: &[&str]) -> (String, String) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        {
            let mut r = HumanRenderer::new(
                &mut out,
                &mut err,
                Paint::new(false),
                Paint::new(false),
                argv.iter().map(|a| (*a).to_owned()).collect(),
            );
            for line in lines {
                // Written in two pieces, as a buffered writer may split a line.
                let (a, b) = line.split_at(line.len() / 2);
                r.write_all(a.as_bytes()).unwrap();
                r.write_all(b.as_bytes()).unwrap();
                r.write_all(b"\n").unwrap();
            }
            r.flush().unwrap();
        }
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    const META: &str = r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"R"},"tool":"notes"}"#;

    #[test]
    fn a_list_of_one_flat_type_is_a_table_and_a_cut_page_says_the_whole_next_command() {
        let (out, err) = render(
            &[
                META,
                r#"{"type":"note","aoi":{"seq":1,"run":"R"},"id":"n1","text":"Buy milk","done":false}"#,
                r#"{"type":"note","aoi":{"seq":2,"run":"R"},"id":"n22","text":"Call\u001b[31m Bob","done":true}"#,
                r#"{"type":"aoi:summary","aoi":{"seq":3,"run":"R"},"ok":true,"count":2,"truncated":true,"next_cursor":"c:2 x"}"#,
            ],
            &["/usr/bin/notes", "list", "--limit", "2", "--cursor", "c:0"],
        );
        assert_eq!(
            out,
            "ID   TEXT                DONE\n\
             n1   Buy milk            false\n\
             n22  Call\\u{1b}[31m Bob  true\n\
             more: notes list --limit 2 --cursor 'c:2 x'\n"
        );
        assert_eq!(err, "");
    }

    #[test]
    fn one_event_or_nested_fields_are_key_value_blocks() {
        let (out, _) = render(
            &[
                META,
                r#"{"type":"note","aoi":{"seq":1,"run":"R"},"id":"n1","tags":["home"]}"#,
                r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":1}"#,
            ],
            &["notes", "show", "n1"],
        );
        assert_eq!(out, "id:   n1\ntags: [\"home\"]\n");
    }

    #[test]
    fn plans_replays_refusals_and_empty_reads_say_what_happened() {
        let (out, _) = render(
            &[
                META,
                r#"{"type":"aoi:plan","aoi":{"seq":1,"run":"R"},"action":"create","target":"note"}"#,
                r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":0}"#,
            ],
            &["notes", "add", "x", "--dry-run"],
        );
        assert_eq!(out, "would create note\ndry run: nothing was changed\n");
        let (out, _) = render(
            &[
                META,
                r#"{"type":"created","aoi":{"seq":1,"run":"R"},"id":"n1","replayed":true}"#,
                r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":1}"#,
            ],
            &["notes", "add", "x"],
        );
        assert!(out.starts_with("id: n1\nreplayed: "), "{out}");
        let (out, err) = render(
            &[
                META,
                r#"{"type":"aoi:error","aoi":{"seq":1,"run":"R"},"category":"usage","code":"CONFIRM_REQUIRED","message":"rm deletes 2 notes","retryable":false,"hint":"add --confirm"}"#,
                r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":false,"reason":"denied","count":0}"#,
            ],
            &["notes", "rm", "n1", "n2"],
        );
        assert_eq!(out, "");
        assert_eq!(err, "error: rm deletes 2 notes\n  hint: add --confirm\n");
        let (out, _) = render(
            &[
                META,
                r#"{"type":"aoi:summary","aoi":{"seq":1,"run":"R"},"ok":true,"count":0}"#,
            ],
            &["notes", "list"],
        );
        assert_eq!(out, "(none)\n");
    }

    #[test]
    fn a_replay_marked_on_the_summary_and_a_stream_that_goes_on_are_shown_as_they_come() {
        let (out, _) = render(
            &[
                META,
                r#"{"type":"created","aoi":{"seq":1,"run":"R"},"id":"n1"}"#,
                r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":1,"properties":{"idempotent_replay":true}}"#,
            ],
            &["notes", "add", "x"],
        );
        assert!(out.starts_with("id: n1\nreplayed: "), "{out}");
        let (out, _) = render(
            &[
                META,
                r#"{"type":"change","aoi":{"seq":1,"run":"R"},"path":"a"}"#,
                r#"{"type":"aoi:heartbeat","aoi":{"seq":2,"run":"R"}}"#,
            ],
            &["notes", "watch"],
        );
        assert_eq!(out, "path: a\n");
    }

    #[test]
    fn a_hook_replaces_the_default_for_the_events_it_renders() {
        let mut out = Vec::new();
        {
            let hook: HumanHook = Arc::new(|ty, fields| {
                (ty == "note").then(|| format!("- {}", fields["text"].as_str().unwrap_or("")))
            });
            let mut r = HumanRenderer::new(
                &mut out,
                io::sink(),
                Paint::new(false),
                Paint::new(false),
                vec!["notes".into()],
            )
            .hook(Some(hook));
            for line in [
                META,
                r#"{"type":"note","aoi":{"seq":1,"run":"R"},"text":"a\u202eb"}"#,
                r#"{"type":"note","aoi":{"seq":2,"run":"R"},"text":"c"}"#,
                r#"{"type":"aoi:summary","aoi":{"seq":3,"run":"R"},"ok":true,"count":2}"#,
            ] {
                writeln!(r, "{line}").unwrap();
            }
        }
        // The hook's text is escaped too: U+202E cannot reorder the terminal.
        assert_eq!(String::from_utf8(out).unwrap(), "- a\\u{202e}b\n- c\n");
    }
}
