//! The input contract of §12 and the pipeline rules of §13.1 for transformers and sinks.
//!
//! [`Input`] reads `--input-jsonl` (one object per line) or `--input-json` (one object, or an
//! array of objects), accepts an upstream AOI stream as well as plain JSONL, validates each
//! record against the command's record schema (strict: unknown fields are rejected), and applies
//! the documented mode for bad records:
//!
//! - [`InputMode::FailFast`]: the first bad record ends the run with a `validation` error naming
//!   its line, before any side effect when the tool reads everything first
//!   ([`Input::read_all`]);
//! - [`InputMode::ContinueOnError`]: a bad record becomes an item-scope `aoi:error` with
//!   `line_number`, and reading goes on; the run then fails as §19.4 shows (`ok:false`,
//!   `reason:"failed"`), and `partial` says whether anything was done.
//!
//! Upstream `aoi:error`/`aoi:warning` are forwarded with `origin` and counted; upstream meta and
//! summary are never forwarded; [`Input::finish`] turns the upstream's outcome into this run's
//! (`ok:false`, `caused_by`, `upstream`, an `io` error for a cut upstream).

use std::fs::File;
use std::io::{self, Read, Write};

use serde_json::{Map, Value};

use super::flags::{InputArgs, InputMode};
use crate::emit::{EmitError, Emitter, Failure, Outcome};
use crate::read::{Frame, LineReader, Observed, UpstreamState};
use crate::wire::text::json_kind as kind;
use crate::wire::{Category, Code, ErrorEvent};

/// One input record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based input line (JSONL), when the record came from one.
    pub line_number: Option<u64>,
    /// 0-based position among all input items.
    pub item_index: u64,
    /// The domain `type` of an upstream AOI event, `None` for a plain object.
    pub ty: Option<String>,
    /// The record's fields (without `type` and `aoi`).
    pub fields: Map<String, Value>,
}

enum Source<R> {
    Lines(LineReader<R>),
    Document(std::vec::IntoIter<Value>),
}

/// A structured-input reader. See the [module docs](self).
pub struct Input<R> {
    source: Source<R>,
    upstream: UpstreamState,
    mode: InputMode,
    /// The compiled record schema, and the schema itself for the rules' descriptions.
    #[cfg(feature = "validate")]
    validator: Option<(jsonschema::Validator, Value)>,
    forward: bool,
    items: u64,
}

impl<R> std::fmt::Debug for Input<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("mode", &self.mode)
            .field("items", &self.items)
            .finish_non_exhaustive()
    }
}

fn usage(code: &'static str, message: impl AsRef<str>, field: &str) -> ErrorEvent {
    ErrorEvent::new(Category::Usage, Code::from_static(code), message).field(field)
}

impl Input<Box<dyn Read>> {
    /// Opens what `--input-jsonl`/`--input-json` name (`-` is stdin), with the mode the flags
    /// select or `default` (the command's documented default).
    pub fn open(args: &InputArgs, default: InputMode) -> Result<Input<Box<dyn Read>>, Failure> {
        let mode = args.mode(default);
        let (path, jsonl) = match (&args.input_jsonl, &args.input_json) {
            (Some(p), None) => (p.as_str(), true),
            (None, Some(p)) => (p.as_str(), false),
            _ => {
                return Err(usage(
                    "INPUT_REQUIRED",
                    "give --input-jsonl PATH or --input-json PATH (`-` for stdin)",
                    "input_jsonl",
                )
                .into())
            }
        };
        let source: Box<dyn Read> = if path == "-" {
            Box::new(io::stdin())
        } else {
            Box::new(File::open(path).map_err(|e| ErrorEvent::cannot_open(path, &e))?)
        };
        if jsonl {
            Ok(Input::jsonl(source, mode))
        } else {
            Input::json(source, mode)
        }
    }
}

impl<R: Read> Input<R> {
    /// JSONL records from `source`.
    pub fn jsonl(source: R, mode: InputMode) -> Input<R> {
        Input {
            source: Source::Lines(LineReader::new(source)),
            upstream: UpstreamState::new(),
            mode,
            #[cfg(feature = "validate")]
            validator: None,
            forward: true,
            items: 0,
        }
    }

    /// One JSON document from `source`: an object (one record) or an array of objects.
    pub fn json(mut source: R, mode: InputMode) -> Result<Input<R>, Failure> {
        let mut text = Vec::new();
        source.read_to_end(&mut text).map_err(|e| {
            ErrorEvent::new(
                Category::Io,
                Code::from_static("INPUT_READ_FAILED"),
                format!("reading the input failed: {e}"),
            )
        })?;
        let doc: Value = serde_json::from_slice(&text).map_err(|e| {
            ErrorEvent::new(
                Category::Validation,
                Code::from_static("INPUT_JSON_PARSE_ERROR"),
                format!("the input is not one JSON document: {e}"),
            )
            .line_number(e.line() as u64)
        })?;
        let values = match doc {
            Value::Array(items) => items,
            other => vec![other],
        };
        Ok(Input {
            source: Source::Document(values.into_iter()),
            upstream: UpstreamState::new(),
            mode,
            #[cfg(feature = "validate")]
            validator: None,
            forward: true,
            items: 0,
        })
    }

    /// Validates every record against `schema` (the command's record schema; make it strict
    /// with `additionalProperties: false`). Needs the `validate` feature.
    #[cfg(feature = "validate")]
    pub fn validate_with(mut self, schema: &Value) -> Result<Input<R>, ErrorEvent> {
        let validator = jsonschema::validator_for(schema).map_err(|e| {
            ErrorEvent::new(
                Category::Internal,
                Code::from_static("RECORD_SCHEMA_INVALID"),
                format!("the record schema does not compile: {e}"),
            )
        })?;
        self.validator = Some((validator, schema.clone()));
        Ok(self)
    }

    /// Whether upstream `aoi:error`/`aoi:warning` are forwarded (default) or only counted.
    pub fn forward_upstream(mut self, on: bool) -> Input<R> {
        self.forward = on;
        self
    }

    /// The mode in force.
    pub fn mode(&self) -> InputMode {
        self.mode
    }

    /// What is known of the upstream so far.
    pub fn upstream(&self) -> &UpstreamState {
        &self.upstream
    }

    /// True when, at the end of input, the upstream makes this run fail (an upstream error
    /// without `--continue-on-error`, an upstream `ok:false`, a cut or unknown framework event).
    /// A sink that read everything first checks it to apply nothing on a failed upstream.
    pub fn upstream_failed(&self) -> bool {
        self.upstream
            .fails_so_far(self.mode == InputMode::ContinueOnError)
    }

    /// The next valid record; `None` at the end of input. Bad records are handled per the mode.
    pub fn next<W: Write>(&mut self, out: &mut Emitter<W>) -> Result<Option<Record>, Failure> {
        loop {
            let (line_number, observed) = match &mut self.source {
                Source::Lines(lines) => {
                    let frame = lines.next().map_err(|e| {
                        ErrorEvent::new(
                            Category::Io,
                            Code::from_static("INPUT_READ_FAILED"),
                            format!("reading the input failed: {e}"),
                        )
                    })?;
                    match frame {
                        None => return Ok(None),
                        Some(Frame::Line { number, bytes }) => {
                            if bytes.iter().all(u8::is_ascii_whitespace) {
                                continue;
                            }
                            (number, self.upstream.observe(bytes))
                        }
                        Some(Frame::TooLong { number, len }) => (
                            number,
                            Observed::Malformed(format!("line of {len} bytes is too long")),
                        ),
                        Some(Frame::Truncated { .. }) => {
                            // §2: a cut input, never a record; `finish` reports it as `io`.
                            self.upstream.truncated();
                            out.note_upstream_failure(true, None);
                            continue;
                        }
                    }
                }
                Source::Document(values) => match values.next() {
                    None => return Ok(None),
                    Some(Value::Object(fields)) => (0, Observed::Record { ty: None, fields }),
                    Some(other) => (
                        0,
                        Observed::Malformed(format!("item is {}, not an object", kind(&other))),
                    ),
                },
            };
            let line = (line_number > 0).then_some(line_number);
            match observed {
                Observed::Record { ty, fields } => {
                    let index = self.items;
                    self.items += 1;
                    out.note_input(1);
                    let (fields, problem) = self.validated(fields);
                    if let Some(problem) = problem {
                        let error = ErrorEvent::new(
                            Category::Validation,
                            Code::from_static("INPUT_RECORD_INVALID"),
                            format!("{} is invalid: {}", where_(line, index), problem.0),
                        )
                        .field(problem.1);
                        self.bad(out, error, line, index)?;
                        continue;
                    }
                    return Ok(Some(Record {
                        line_number: line,
                        item_index: index,
                        ty,
                        fields,
                    }));
                }
                Observed::Malformed(why) => {
                    let index = self.items;
                    self.items += 1;
                    let code = if matches!(self.source, Source::Lines(_)) {
                        "INPUT_JSONL_PARSE_ERROR"
                    } else {
                        "INPUT_JSON_ITEM_INVALID"
                    };
                    let error = ErrorEvent::new(
                        Category::Validation,
                        Code::from_static(code),
                        format!("invalid JSON on {}: {why}", where_(line, index)),
                    );
                    self.bad(out, error, line, index)?;
                }
                Observed::Error(upstream) => {
                    let origin = self.upstream.origin().unwrap_or("upstream").to_owned();
                    if self.forward {
                        // §9.4: a category this version does not know is passed on as written.
                        match upstream.wire_category() {
                            Some(wire) => {
                                out.forward_error_in_category(upstream.error(), wire, &origin)?
                            }
                            None => out.forward_error(upstream.error(), &origin)?,
                        }
                    } else {
                        out.note_upstream_error();
                    }
                    self.note_upstream(out);
                }
                Observed::Warning(warning) => {
                    let origin = self.upstream.origin().unwrap_or("upstream").to_owned();
                    if self.forward {
                        out.forward_warning(&warning, &origin)?;
                    } else {
                        out.note_upstream_warning();
                    }
                }
                Observed::Consumed => self.note_upstream(out),
            }
        }
    }

    /// The next valid record decoded as `T`; `None` at the end of input.
    ///
    /// A record that does not decode as `T` is an invalid record like one the record schema
    /// refuses: `validation` `INPUT_RECORD_INVALID`, handled per the input mode (§10.3, §12.2).
    /// Its message names the field, never the value (input may carry secrets, §11).
    pub fn next_as<T: serde::de::DeserializeOwned, W: Write>(
        &mut self,
        out: &mut Emitter<W>,
    ) -> Result<Option<T>, Failure> {
        while let Some(record) = self.next(out)? {
            match serde_json::from_value::<T>(Value::Object(record.fields)) {
                Ok(value) => return Ok(Some(value)),
                Err(e) => {
                    let error = ErrorEvent::new(
                        Category::Validation,
                        Code::from_static("INPUT_RECORD_INVALID"),
                        format!(
                            "{} is invalid: {}",
                            where_(record.line_number, record.item_index),
                            undecodable(&e)
                        ),
                    );
                    self.bad(out, error, record.line_number, record.item_index)?;
                }
            }
        }
        Ok(None)
    }

    /// Hands what is known of the upstream to the emitter, so every exit path's summary
    /// accounts for it (§13.1).
    fn note_upstream<W: Write>(&mut self, out: &mut Emitter<W>) {
        if let Some(identity) = self.upstream.identity() {
            out.note_upstream_identity(identity);
        }
        let cont = self.mode == InputMode::ContinueOnError;
        if self.upstream.fails_now(cont) || self.upstream.caused_by().is_some() {
            out.note_upstream_failure(self.upstream.fails_now(cont), self.upstream.caused_by());
        }
    }

    /// Reads every remaining record first, so a fail-fast import can refuse bad input before
    /// touching anything (§12.2: "fail fast before side effects").
    pub fn read_all<W: Write>(&mut self, out: &mut Emitter<W>) -> Result<Vec<Record>, Failure> {
        let mut records = Vec::new();
        while let Some(r) = self.next(out)? {
            records.push(r);
        }
        Ok(records)
    }

    /// Checks a record against the input schema; hands the fields back without copying them.
    fn validated(
        &self,
        fields: Map<String, Value>,
    ) -> (Map<String, Value>, Option<(String, String)>) {
        let value = Value::Object(fields);
        let problem = self.invalid(&value);
        match value {
            Value::Object(fields) => (fields, problem),
            _ => (Map::new(), problem),
        }
    }

    /// Without the `validate` feature there is no record schema to break.
    #[cfg(not(feature = "validate"))]
    fn invalid(&self, _: &Value) -> Option<(String, String)> {
        None
    }

    #[cfg(feature = "validate")]
    fn invalid(&self, value: &Value) -> Option<(String, String)> {
        let (validator, schema) = self.validator.as_ref()?;
        if validator.is_valid(value) {
            return None;
        }
        let error = validator.iter_errors(value).next()?;
        let path = error.instance_path().to_string();
        let mut field = path.trim_start_matches('/').replace('/', ".");
        // Built from the rule, never from the value: input may carry secrets (§9.1, §11).
        use jsonschema::error::ValidationErrorKind as Kind;
        let message = match error.kind() {
            Kind::Required { property } => {
                let name = property.as_str().unwrap_or_default().to_owned();
                let message = format!("the required field `{name}` is missing");
                field = name;
                message
            }
            Kind::AdditionalProperties { unexpected } => {
                field = unexpected.first().cloned().unwrap_or_default();
                format!("unknown field(s) {}", unexpected.join(", "))
            }
            Kind::Type { kind } => {
                let expected = match kind {
                    jsonschema::error::TypeKind::Single(t) => t.to_string(),
                    jsonschema::error::TypeKind::Multiple(ts) => format!("{ts:?}"),
                };
                format!("`{field}` must be of type {expected}")
            }
            other => {
                let rule = other.keyword();
                match rule_description(schema, &error.schema_path().to_string()) {
                    Some(says) => {
                        format!("`{field}` breaks the record schema's `{rule}` rule: {says}")
                    }
                    None => format!("`{field}` breaks the record schema's `{rule}` rule"),
                }
            }
        };
        Some((crate::wire::single_line(&message).into_owned(), field))
    }

    fn bad<W: Write>(
        &mut self,
        out: &mut Emitter<W>,
        error: ErrorEvent,
        line: Option<u64>,
        index: u64,
    ) -> Result<(), Failure> {
        let mut error = error.item_index(index);
        if let Some(line) = line {
            error = error.line_number(line);
        }
        match self.mode {
            InputMode::FailFast => Err(error
                .hint("fix the input, or pass --continue-on-error to skip bad records")
                .into()),
            InputMode::ContinueOnError => {
                out.error(&error.item())?;
                Ok(())
            }
        }
    }

    /// Ends the input: reports a cut or non-conforming upstream (an `aoi:error` of its own,
    /// §13.1) and hands the upstream's verdict to the emitter, whose summary applies it. Call it
    /// once, after the last record. `outcome` passes through, except that a run with
    /// `--continue-on-error` that reported any item error (a bad record, or one the command
    /// could not apply) is a failure, as in §19.4: `ok:false, reason:"failed"`, `partial` when
    /// it wrote domain events.
    pub fn finish<W: Write>(
        self,
        out: &mut Emitter<W>,
        outcome: Outcome,
    ) -> Result<Outcome, EmitError> {
        let verdict = self
            .upstream
            .verdict(self.mode == InputMode::ContinueOnError);
        if let Some(error) = &verdict.error {
            out.error(error)?;
        }
        if let Some(up) = verdict.upstream {
            out.note_upstream_identity(up);
        }
        out.note_upstream_failure(verdict.fails_run, verdict.caused_by);
        if self.mode == InputMode::ContinueOnError && out.item_error_count() > 0 {
            return Ok(outcome.into_failed());
        }
        Ok(outcome)
    }
}

/// The description of the schema a failed keyword belongs to (`/properties/title/not` → the
/// description of `title`), the nearest one above it below the root: it says the rule in words
/// (a pattern does not).
#[cfg(feature = "validate")]
fn rule_description<'s>(schema: &'s Value, keyword_path: &str) -> Option<&'s str> {
    let mut path = keyword_path.rsplit_once('/')?.0;
    while !path.is_empty() {
        if let Some(says) = schema
            .pointer(path)
            .and_then(|s| s.get("description"))
            .and_then(Value::as_str)
        {
            return Some(says.trim_end_matches('.'));
        }
        path = path.rsplit_once('/')?.0;
    }
    None
}

/// Why a record does not decode, in words that quote no value: serde names a missing or
/// unknown field by its key, but quotes the value of a wrong type.
fn undecodable(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.split_once(", expected") {
        Some((head, _))
            if head.starts_with("missing field") || head.starts_with("unknown field") =>
        {
            crate::surface::term::printable_line(head).into_owned()
        }
        _ if text.starts_with("missing field") => {
            crate::surface::term::printable_line(&text).into_owned()
        }
        _ => "a field has a type or value the command does not take".to_owned(),
    }
}

fn where_(line: Option<u64>, index: u64) -> String {
    match line {
        Some(l) => format!("input line {l}"),
        None => format!("input item {index}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::read::{decode, Event};
    use crate::wire::Identity;
    use crate::{Verdict, Verifier};

    fn emitter() -> Emitter<Vec<u8>> {
        Emitter::builder(Identity::new("sink", "1", "s", "1.0.0"))
            .command("import")
            .start(Vec::new())
            .unwrap()
    }

    fn record_schema() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["title"],
            "properties": {"title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}
        })
    }

    fn events(bytes: &[u8]) -> Vec<Event> {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| decode(l).unwrap().event)
            .collect()
    }

    const INPUT: &str =
        "{\"title\":\"a\"}\n{\"title\":\"b\",\"tilte\":\"typo\"}\n{not json\n{\"title\":\"d\"}\n";

    #[test]
    fn fail_fast_stops_at_the_first_bad_record_and_names_its_line_and_field() {
        let mut out = emitter();
        let mut input = Input::jsonl(INPUT.as_bytes(), InputMode::FailFast)
            .validate_with(&record_schema())
            .unwrap();
        let err = input.read_all(&mut out).unwrap_err().into_event();
        assert_eq!(err.category, Category::Validation);
        assert_eq!(err.code.as_str(), "INPUT_RECORD_INVALID");
        assert_eq!(err.line_number, Some(2));
        assert_eq!(err.field.as_deref(), Some("tilte"));
        assert!(!err.message.contains('\n'));
    }

    #[test]
    fn validation_messages_name_the_rule_never_the_value() {
        let mut out = emitter();
        let secret = "hunter2-canary-password";
        let line = format!("{{\"title\":\"a\",\"tags\":\"{secret}\"}}\n");
        let mut input = Input::jsonl(line.as_bytes(), InputMode::FailFast)
            .validate_with(&record_schema())
            .unwrap();
        let err = input.read_all(&mut out).unwrap_err().into_event();
        assert!(!err.message.contains(secret), "{}", err.message);
        assert_eq!(err.field.as_deref(), Some("tags"));
        assert!(err.message.contains("array"), "{}", err.message);
        let line = "{\"tags\":[]}\n";
        let mut input = Input::jsonl(line.as_bytes(), InputMode::FailFast)
            .validate_with(&record_schema())
            .unwrap();
        let err = input.read_all(&mut out).unwrap_err().into_event();
        assert_eq!(err.field.as_deref(), Some("title"));
        assert!(
            err.message.contains("required field `title`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn next_as_decodes_records_and_treats_one_that_does_not_decode_as_invalid_per_the_mode() {
        #[derive(Debug, PartialEq, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Note {
            title: String,
            #[serde(default)]
            n: u64,
        }
        let secret = "hunter2-canary-password";
        let lines = format!(
            "{{\"title\":\"a\"}}\n{{\"title\":\"b\",\"n\":\"{secret}\"}}\n{{\"n\":2}}\n{{\"title\":\"c\",\"x\":1}}\n{{\"title\":\"d\",\"n\":4}}\n"
        );
        // §12.2 fail-fast: the first record that does not decode ends the run, by its line.
        let mut out = emitter();
        let mut input = Input::jsonl(lines.as_bytes(), InputMode::FailFast);
        let first: Option<Note> = input.next_as(&mut out).unwrap();
        assert_eq!(first.map(|n| n.title).as_deref(), Some("a"));
        let err = input.next_as::<Note, _>(&mut out).unwrap_err().into_event();
        assert_eq!(err.category, Category::Validation);
        assert_eq!(err.code.as_str(), "INPUT_RECORD_INVALID");
        assert_eq!(err.line_number, Some(2));
        // §11: the value is never quoted.
        assert!(!err.message.contains(secret), "{}", err.message);
        // continue-on-error: each bad record is an item error, the good ones come through.
        let mut out = emitter();
        let mut input = Input::jsonl(lines.as_bytes(), InputMode::ContinueOnError);
        let mut titles = Vec::new();
        while let Some(note) = input.next_as::<Note, _>(&mut out).unwrap() {
            titles.push(note.title);
        }
        assert_eq!(titles, ["a", "d"]);
        let text = String::from_utf8(out.into_writer()).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(
            text.contains("input line 3 is invalid: missing field `title`"),
            "{text}"
        );
        assert!(
            text.contains("input line 4 is invalid: unknown field `x`"),
            "{text}"
        );
    }

    #[test]
    fn a_rule_without_a_type_to_name_is_said_in_the_words_of_its_description() {
        let schema = json!({
            "type": "object",
            "properties": {"tags": {
                "type": "array",
                "description": "Tags, without whitespace.",
                "items": {"type": "string", "not": {"pattern": "\\s"}}
            }}
        });
        let mut out = emitter();
        let line = "{\"tags\":[\"a\", \"two words\"]}\n";
        let mut input = Input::jsonl(line.as_bytes(), InputMode::FailFast)
            .validate_with(&schema)
            .unwrap();
        let err = input.read_all(&mut out).unwrap_err().into_event();
        assert_eq!(err.field.as_deref(), Some("tags.1"));
        assert_eq!(
            err.message,
            "input line 1 is invalid: `tags.1` breaks the record schema's `not` rule: Tags, \
             without whitespace"
        );
    }

    #[test]
    fn continue_on_error_with_every_record_bad_fails_and_is_not_partial() {
        let mut out = emitter();
        let mut input = Input::jsonl(
            &b"not json\n{\"title\": 3}\n"[..],
            InputMode::ContinueOnError,
        )
        .validate_with(&record_schema())
        .unwrap();
        assert!(input.read_all(&mut out).unwrap().is_empty());
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        let finished = out.finish(outcome).unwrap();
        assert!(!finished.summary.ok);
        assert_eq!(finished.summary.partial, Some(false), "nothing was done");
        assert_eq!(finished.summary.count, Some(0));
        assert_eq!(finished.summary.error_count, Some(2));
    }

    #[test]
    fn continue_on_error_without_a_bad_record_succeeds() {
        let mut out = emitter();
        let mut input = Input::jsonl(&b"{\"title\": \"a\"}\n"[..], InputMode::ContinueOnError)
            .validate_with(&record_schema())
            .unwrap();
        assert_eq!(input.read_all(&mut out).unwrap().len(), 1);
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        assert!(out.finish(outcome).unwrap().summary.ok);
    }

    #[test]
    fn continue_on_error_reports_each_bad_line_as_an_item_error_and_goes_on() {
        let mut out = emitter();
        let mut input = Input::jsonl(INPUT.as_bytes(), InputMode::ContinueOnError)
            .validate_with(&record_schema())
            .unwrap();
        let records = input.read_all(&mut out).unwrap();
        let titles: Vec<&Value> = records.iter().map(|r| &r.fields["title"]).collect();
        assert_eq!(titles, [&json!("a"), &json!("d")]);
        assert_eq!(records[1].line_number, Some(4));
        for r in &records {
            out.emit_as("imported", &r.fields).unwrap();
        }
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        let finished = out.finish(outcome).unwrap();
        // §19.4: an item error fails the run; what was done makes it partial.
        assert!(!finished.summary.ok);
        assert_eq!(finished.summary.reason, Some(crate::wire::Reason::Failed));
        assert_eq!(finished.summary.partial, Some(true));
        assert_eq!(finished.summary.error_count, Some(2));
        assert_eq!(
            finished.summary.input_count,
            Some(3),
            "three objects were read"
        );
        let bytes = out.into_writer();
        let errors: Vec<(Option<u64>, String)> = events(&bytes)
            .into_iter()
            .filter_map(|e| match e {
                Event::Error(e) => Some((e.line_number, e.code.to_string())),
                _ => None,
            })
            .collect();
        assert_eq!(
            errors,
            [
                (Some(2), "INPUT_RECORD_INVALID".to_owned()),
                (Some(3), "INPUT_JSONL_PARSE_ERROR".to_owned())
            ]
        );
        // A conforming stream of a failed run.
        assert_eq!(
            Verifier::verify_bytes(&bytes, Default::default()).verdict,
            Verdict::Failed
        );
    }

    const UPSTREAM: &str = concat!(
        r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"U"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0"}"#,
        "\n",
        r#"{"type":"entry","aoi":{"seq":1,"run":"U"},"title":"a"}"#,
        "\n",
        r#"{"type":"aoi:warning","aoi":{"seq":2,"run":"U"},"message":"stale index"}"#,
        "\n",
        r#"{"type":"aoi:error","aoi":{"seq":3,"run":"U"},"category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","message":"slow down","retryable":true,"retry_after_ms":7200}"#,
        "\n",
        r#"{"type":"aoi:summary","aoi":{"seq":4,"run":"U"},"ok":false,"reason":"failed","event_count":5,"count":1,"error_count":1,"warning_count":1}"#,
        "\n",
    );

    #[test]
    fn an_upstream_stream_is_accounted_per_section_13_1() {
        let mut out = emitter();
        let mut input = Input::jsonl(UPSTREAM.as_bytes(), InputMode::FailFast)
            .validate_with(&record_schema())
            .unwrap();
        let records = input.read_all(&mut out).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].ty.as_deref(), Some("entry"));
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        let finished = out.finish(outcome).unwrap();
        let s = &finished.summary;
        assert!(!s.ok, "an upstream error fails the run");
        assert_eq!(
            (s.warning_count, s.error_count, s.input_count),
            (Some(1), Some(1), Some(1))
        );
        let cause = s.caused_by.as_ref().unwrap();
        assert_eq!(
            (cause.category, cause.retry_after_ms),
            (Category::RateLimited, Some(7200))
        );
        assert_eq!(cause.origin.as_deref(), Some("outline"));
        assert_eq!(
            s.upstream.as_ref().unwrap().tool.as_deref(),
            Some("outline")
        );
        let bytes = out.into_writer();
        let types: Vec<String> = events(&bytes)
            .iter()
            .map(|e| e.event_type().to_owned())
            .collect();
        assert_eq!(
            types,
            ["aoi:meta", "aoi:warning", "aoi:error", "aoi:summary"],
            "no upstream meta or summary"
        );
        let forwarded = events(&bytes)
            .into_iter()
            .find_map(|e| match e {
                Event::Error(e) => Some(e),
                _ => None,
            })
            .unwrap();
        assert_eq!(forwarded.origin.as_deref(), Some("outline"));
        let report = Verifier::verify_bytes(&bytes, Default::default());
        assert_eq!(report.verdict, Verdict::Failed);
        assert_eq!(report.violations, 0);
    }

    /// An upstream of a newer minor (1.1) whose error carries a category v1.0-alpha does not
    /// know, and whose summary's `caused_by` repeats it.
    fn newer_minor_upstream(aoi_version: &str) -> String {
        format!(
            "{}\n{}\n{}\n{}\n",
            r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"U"},"tool":"up","tool_version":"2.0.0","aoi_version":"AOI_VERSION","schema_name":"com.example.up.events","schema_version":"1.0.0"}"#
                .replace("AOI_VERSION", aoi_version),
            r#"{"type":"entry","aoi":{"seq":1,"run":"U"},"title":"a"}"#,
            r#"{"type":"aoi:error","aoi":{"seq":2,"run":"U"},"category":"quota_exhausted","code":"QUOTA_GONE","message":"monthly quota used up","retryable":true,"retry_after_ms":60000,"details":{"plan":"free"}}"#,
            r#"{"type":"aoi:summary","aoi":{"seq":3,"run":"U"},"ok":false,"reason":"failed","event_count":4,"count":1,"warning_count":0,"error_count":1,"caused_by":{"category":"quota_exhausted","code":"QUOTA_GONE","retryable":true,"retry_after_ms":60000}}"#,
        )
    }

    /// The raw JSON objects of the lines written.
    fn raw_lines(bytes: &[u8]) -> Vec<Value> {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    /// §9.4: an unknown category in a newer-minor stream must not fail the consumer. Under
    /// `--continue-on-error` the run succeeds; the error is decided on as `internal` with the
    /// event's own `retryable`, and forwarded unchanged (its wire category kept) with `origin`
    /// (§13.1).
    #[test]
    fn an_unknown_category_from_a_newer_minor_is_forwarded_unchanged_and_decided_as_internal_section_9_4(
    ) {
        let upstream = newer_minor_upstream("1.1");
        let mut out = emitter();
        let mut input = Input::jsonl(upstream.as_bytes(), InputMode::ContinueOnError);
        let records = input.read_all(&mut out).unwrap();
        assert_eq!(records.len(), 1, "the data is read");
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        let finished = out.finish(outcome).unwrap();
        assert!(finished.summary.ok, "not a failure: {:?}", finished.summary);
        assert_eq!(finished.exit_code, 0);
        assert_eq!(finished.summary.error_count, Some(1));
        let bytes = out.into_writer();
        let lines = raw_lines(&bytes);
        let errors: Vec<&Value> = lines.iter().filter(|l| l["type"] == "aoi:error").collect();
        assert_eq!(errors.len(), 1, "only the forwarded error: {lines:?}");
        let forwarded = errors[0];
        assert_eq!(
            forwarded["category"], "quota_exhausted",
            "the wire category is kept"
        );
        assert_eq!(forwarded["origin"], "up");
        assert_eq!(forwarded["code"], "QUOTA_GONE");
        assert_eq!(forwarded["retryable"], true);
        assert_eq!(forwarded["retry_after_ms"], 60000);
        assert_eq!(
            forwarded["details"],
            json!({"plan": "free"}),
            "details unchanged"
        );

        // Without --continue-on-error the upstream error fails the run, decided as `internal`
        // with the upstream's own retry disposition.
        let mut out = emitter();
        let mut input = Input::jsonl(upstream.as_bytes(), InputMode::FailFast);
        input.read_all(&mut out).unwrap();
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        let finished = out.finish(outcome).unwrap();
        assert!(!finished.summary.ok);
        let cause = finished.summary.caused_by.clone().unwrap();
        assert_eq!(cause.category, Category::Internal);
        assert_eq!((cause.retryable, cause.retry_after_ms), (true, Some(60000)));
        assert_eq!(cause.origin.as_deref(), Some("up"));
        let bytes = out.into_writer();
        let codes: Vec<String> = raw_lines(&bytes)
            .iter()
            .filter(|l| l["type"] == "aoi:error")
            .map(|l| l["code"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            codes,
            ["QUOTA_GONE"],
            "no error of this run's own: {codes:?}"
        );
    }

    /// In a stream that declares exactly v1.0-alpha the enum is closed (§9.2): an unknown
    /// category is the upstream's protocol violation, as the verifier decides, and fails the
    /// run even under `--continue-on-error`; the error itself is still forwarded unchanged.
    #[test]
    fn an_unknown_category_in_a_1_0_alpha_stream_is_an_upstream_violation_section_9_2() {
        let upstream = newer_minor_upstream(crate::AOI_VERSION);
        let mut out = emitter();
        let mut input = Input::jsonl(upstream.as_bytes(), InputMode::ContinueOnError);
        input.read_all(&mut out).unwrap();
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        let finished = out.finish(outcome).unwrap();
        assert!(!finished.summary.ok);
        let bytes = out.into_writer();
        let errors: Vec<Value> = raw_lines(&bytes)
            .into_iter()
            .filter(|l| l["type"] == "aoi:error")
            .collect();
        assert_eq!(errors[0]["category"], "quota_exhausted");
        assert_eq!(errors[0]["origin"], "up");
        assert_eq!(errors[1]["code"], "UPSTREAM_PROTOCOL_VIOLATION");
        assert!(errors[1].get("origin").is_none(), "raised here");
    }

    #[test]
    fn a_cut_upstream_fails_the_run_with_an_io_error() {
        let cut: String = UPSTREAM.lines().take(2).map(|l| format!("{l}\n")).collect();
        let mut out = emitter();
        let mut input = Input::jsonl(cut.as_bytes(), InputMode::ContinueOnError);
        input.read_all(&mut out).unwrap();
        let outcome = input.finish(&mut out, Outcome::success()).unwrap();
        let finished = out.finish(outcome).unwrap();
        assert!(!finished.summary.ok);
        assert_eq!(finished.exit_code, 74, "io");
        let bytes = out.into_writer();
        assert!(String::from_utf8_lossy(&bytes).contains("UPSTREAM_TRUNCATED"));
    }

    #[test]
    fn input_json_takes_an_object_or_an_array_of_objects() {
        let mut out = emitter();
        let mut input = Input::json(
            r#"[{"title":"a"},5,{"title":"c"}]"#.as_bytes(),
            InputMode::ContinueOnError,
        )
        .unwrap()
        .validate_with(&record_schema())
        .unwrap();
        let records = input.read_all(&mut out).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].item_index, 2);
        let mut input = Input::json(r#"{"title":"solo"}"#.as_bytes(), InputMode::FailFast).unwrap();
        assert_eq!(input.read_all(&mut out).unwrap().len(), 1);
        let err = Input::json("[1,".as_bytes(), InputMode::FailFast).unwrap_err();
        assert_eq!(err.event().code.as_str(), "INPUT_JSON_PARSE_ERROR");
    }
}
