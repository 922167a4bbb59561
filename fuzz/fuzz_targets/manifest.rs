//! Another tool's discovery as lint and `aoi mcp` read it: the §17 manifest
//! (`aoi::discover::manifest::Manifest`), a command's input schema (`InputSchema`) and what the
//! adapter derives from them (`aoi_mcp::catalog::tool_name`, `hints`, `output_schema`,
//! `aoi::discover::argv::caller_schema`, `aoi_mcp::compact::input`). Arbitrary JSON never
//! panics any of them, MCP tool names stay valid, and a manifest the SDK writes
//! (`aoi::discover::capabilities::Capabilities`) reads back equal, field for field.

#![no_main]

mod arbitrary_json;

use aoi::discover::argv::caller_schema;
use aoi::discover::capabilities::{Capabilities, CommandInfo, SchemaVersions};
use aoi::discover::manifest::{InputSchema, Manifest};
use aoi_mcp::catalog::{hints, output_schema, tool_name, MAX_NAME};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn strings(u: &mut Unstructured) -> Result<Vec<String>> {
    (0..u.int_in_range(0..=3)?)
        .map(|_| arbitrary_json::string(u))
        .collect()
}

fn optional(u: &mut Unstructured) -> Result<Option<String>> {
    Ok(if u.arbitrary()? {
        Some(arbitrary_json::string(u)?)
    } else {
        None
    })
}

fn command_info(u: &mut Unstructured) -> Result<CommandInfo> {
    Ok(CommandInfo {
        name: arbitrary_json::string(u)?,
        summary: optional(u)?,
        read_only: u.arbitrary()?,
        destructive: u.arbitrary()?,
        additive: u.arbitrary()?,
        requires_confirm: u.arbitrary()?,
        supports_dry_run: u.arbitrary()?,
        supports_idempotency_key: u.arbitrary()?,
        bounded: u.arbitrary()?,
        supports_cursor: u.arbitrary()?,
        unbounded: u.arbitrary()?,
        event_types: strings(u)?,
        input_modes: strings(u)?,
        input_default: optional(u)?,
        auth: optional(u)?,
        examples: (0..u.int_in_range(0..=2)?)
            .map(|_| strings(u))
            .collect::<Result<_>>()?,
        // A setup step is an argv array or `{"args": [...], "stdin": "..."}`.
        setup: (0..u.int_in_range(0..=2)?)
            .map(|_| -> Result<Value> {
                let args = Value::from(strings(u)?);
                Ok(if u.arbitrary()? {
                    serde_json::json!({"args": args, "stdin": arbitrary_json::string(u)?})
                } else {
                    args
                })
            })
            .collect::<Result<_>>()?,
        stdin: optional(u)?,
        protocol: optional(u)?,
        // The SDK writes a command's input schema (an object) or nothing: never `null`, which
        // reads back as nothing.
        input_schema: if u.arbitrary()? {
            Some(Value::Object(arbitrary_json::object(u, 3)?))
        } else {
            None
        },
    })
}

fn capabilities(u: &mut Unstructured) -> Result<Capabilities> {
    Ok(Capabilities {
        tool: arbitrary_json::string(u)?,
        tool_version: arbitrary_json::string(u)?,
        aoi_versions: strings(u)?,
        outputs: strings(u)?,
        machine_flag: strings(u)?,
        schemas: (0..u.int_in_range(0..=2)?)
            .map(|_| {
                Ok(SchemaVersions {
                    name: arbitrary_json::string(u)?,
                    versions: strings(u)?,
                    default: arbitrary_json::string(u)?,
                })
            })
            .collect::<Result<_>>()?,
        commands: (0..u.int_in_range(0..=3)?)
            .map(|_| command_info(u))
            .collect::<Result<_>>()?,
    })
}

/// What the SDK writes, the consumers' reader reads back: every field both know.
fn round_trip(u: &mut Unstructured) -> Result<()> {
    let written = capabilities(u)?;
    let text = serde_json::to_string_pretty(&written).expect("a manifest serializes");
    let read: Manifest = serde_json::from_str(&text).expect("the SDK's manifest reads");
    assert_eq!(read.tool, written.tool);
    assert_eq!(
        read.tool_version.as_deref(),
        Some(written.tool_version.as_str())
    );
    assert_eq!(read.aoi_versions, written.aoi_versions);
    assert_eq!(read.outputs, written.outputs);
    assert_eq!(read.machine_flag, written.machine_flag);
    assert_eq!(read.schemas.len(), written.schemas.len());
    for (r, w) in read.schemas.iter().zip(&written.schemas) {
        assert_eq!((&r.name, &r.versions), (&w.name, &w.versions));
        assert_eq!(r.default.as_deref(), Some(w.default.as_str()));
    }
    assert_eq!(read.commands.len(), written.commands.len());
    for (r, w) in read.commands.iter().zip(&written.commands) {
        assert_eq!(r.name, w.name);
        assert_eq!(r.summary, w.summary);
        assert_eq!(
            (
                r.read_only,
                r.destructive,
                r.additive,
                r.requires_confirm,
                r.unbounded
            ),
            (
                w.read_only,
                w.destructive,
                w.additive,
                w.requires_confirm,
                w.unbounded
            )
        );
        assert_eq!(
            (
                r.bounded,
                r.supports_cursor,
                r.supports_dry_run,
                r.supports_idempotency_key
            ),
            (
                w.bounded,
                w.supports_cursor,
                w.supports_dry_run,
                w.supports_idempotency_key
            )
        );
        assert_eq!(r.event_types, w.event_types);
        assert_eq!(r.input_modes, w.input_modes);
        assert_eq!(r.input_default, w.input_default);
        assert_eq!(r.auth, w.auth.clone().map(Value::String));
        assert_eq!(r.examples, w.examples);
        assert_eq!(r.protocol, w.protocol);
        assert_eq!(r.input_schema, w.input_schema);
        // The seed data a command declares (CommandSpec::setup, ::stdin) reads back as written.
        assert_eq!(r.setup, w.setup);
        assert_eq!(r.stdin, w.stdin);
    }
    // And the SDK reads its own manifest back as written.
    let again: Capabilities = serde_json::from_str(&text).expect("the SDK reads its own");
    assert_eq!(again, written);
    Ok(())
}

/// Everything a consumer does with an input schema, on any JSON.
fn input_schema(schema: Value) {
    let input = InputSchema::new(schema);
    for property in input.properties() {
        if let Some(flag) = input.flag(&property) {
            assert!(input.has_flag(&flag));
        }
    }
    let _ = (input.secret_flags(), input.positional(), input.required());
    let _ = input.trailing_after_double_dash();
    let mut caller = caller_schema(&input);
    assert_eq!(caller.get("type"), Some(&Value::from("object")));
    aoi_mcp::compact::input(&mut caller);
}

fn valid_name(name: &str) {
    assert!(
        name.chars().count() <= MAX_NAME,
        "{name:?} is too long for MCP"
    );
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{name:?} is not a valid MCP tool name"
    );
}

fuzz_target!(|data: &[u8]| {
    let _ = round_trip(&mut Unstructured::new(data));

    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    input_schema(value.clone());
    let Ok(manifest) = serde_json::from_value::<Manifest>(value) else {
        return;
    };
    let _ = manifest.machine_args();
    for entry in &manifest.commands {
        let _ = (
            entry.words(),
            entry.takes_jsonl(),
            entry.speaks_aoi(),
            entry.is_discovery(),
        );
        for prefixed in [false, true] {
            valid_name(&tool_name(&manifest.tool, &entry.name, prefixed));
        }
        let _ = hints(entry);
        let _ = output_schema(entry.input_schema.as_ref(), &entry.event_types);
        if let Some(schema) = &entry.input_schema {
            input_schema(schema.clone());
        }
    }
});
