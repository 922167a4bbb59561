//! Arbitrary bytes as `--input-jsonl` / `--input-json` (§12, §13.1) through the SDK's
//! `aoi::surface::input::Input`, strict against a record schema: outline's import record, a
//! small one, or one of patterns and enums. Every record it hands over validates against that
//! schema (compiled here, independently, with `jsonschema`), records come in input order, and
//! the stream the run writes (item errors, forwarded upstream events, the summary) is one the
//! verifier finds no violation in.

#![no_main]

use aoi::discover::input_schema::record_schema;
use aoi::emit::drive;
use aoi::surface::flags::InputMode;
use aoi::surface::input::Input;
use aoi::{Emitter, Identity, Outcome, Verdict, Verifier};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::LazyLock;

/// The schemas, each with its own validator.
static SCHEMAS: LazyLock<Vec<(Value, jsonschema::Validator)>> = LazyLock::new(|| {
    [
        record_schema::<outline::import_record::ImportRecord>(),
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["title"],
            "properties": {"title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}
        }),
        json!({
            "type": "object",
            "properties": {
                "kind": {"enum": ["a", "b", null]},
                "n": {"type": "integer", "minimum": 0, "maximum": 9},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "nested": {"type": "object", "required": ["x"], "properties": {"x": {"type": "boolean"}}}
            },
            "required": ["kind"]
        }),
    ]
    .into_iter()
    .map(|schema| {
        let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
        (schema, validator)
    })
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let (schema, validator) = &SCHEMAS[usize::from(control & 3) % SCHEMAS.len()];
    let mode = if control & 4 == 0 {
        InputMode::FailFast
    } else {
        InputMode::ContinueOnError
    };
    let jsonl = control & 8 == 0;
    let forward = control & 16 == 0;

    let mut out = Emitter::builder(Identity::new("sink", "1.0.0", "com.example.sink", "1.0.0"))
        .command("import")
        .start(Vec::new())
        .expect("an emitter into memory");
    drive(&mut out, |out| {
        let reader = if jsonl {
            Input::jsonl(input, mode)
        } else {
            Input::json(input, mode)?
        };
        let mut reader = reader.validate_with(schema)?.forward_upstream(forward);
        let mut last: Option<(Option<u64>, u64)> = None;
        while let Some(record) = reader.next(out)? {
            let fields = Value::Object(record.fields.clone());
            assert!(
                validator.is_valid(&fields),
                "accepted an invalid record: {fields}"
            );
            if let Some((line, index)) = last {
                assert!(record.item_index > index, "records out of order");
                assert!(record.line_number > line || record.line_number.is_none());
            }
            assert_eq!(record.line_number.is_some(), jsonl);
            last = Some((record.line_number, record.item_index));
            out.emit_as("record", &record.fields)?;
        }
        Ok(reader.finish(out, Outcome::success())?)
    });
    let stream = out.into_writer();
    let report = Verifier::verify_bytes(&stream, Default::default());
    assert_ne!(
        report.verdict,
        Verdict::Violation,
        "the run's own stream: {:?}\n{}",
        report.findings,
        String::from_utf8_lossy(&stream)
    );
});
