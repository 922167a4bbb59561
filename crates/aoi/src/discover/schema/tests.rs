use serde::Serialize;
use serde_json::{json, Value};

#[cfg(feature = "validate")]
use std::collections::HashMap;

use super::introspect::{literal_prefix, rejects, type_condition};
#[cfg(feature = "validate")]
use super::validate::{compile, one_line, MAX_MESSAGE_CHARS};
use super::*;
use crate::emit::Outcome;
use crate::wire::{Category, CausedBy, Code, Scope, Severity, Upstream, Wrapped};
use crate::{DomainEvent, Emitter};

const BASE: &str = "https://schemas.example.com/outline";

fn identity() -> Identity {
    Identity::new("outline", "1.8.2", "com.example.outline.events", "1.0.0")
}

/// A domain event as a tool would write it: serialized by the emitter, described by schemars.
#[derive(Serialize, JsonSchema)]
struct Hit {
    rank: u32,
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    source: Source,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Source {
    Index,
    #[allow(dead_code)]
    Cache,
}

impl DomainEvent for Hit {
    const TYPE: &'static str = "hit";
}

/// A strict domain type: it denies unknown fields, so `type` and `aoi` must be declared.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Deleted {
    id: String,
    /// Embeds a framework shape: the framework's definition must win.
    category: Category,
}

impl DomainEvent for Deleted {
    const TYPE: &'static str = "deleted";
}

fn hit(rank: u32) -> Hit {
    Hit {
        rank,
        id: format!("doc_{rank}"),
        title: (rank == 2).then(|| "Agent-Operable Tools".to_owned()),
        tags: if rank == 1 {
            vec!["x".into()]
        } else {
            Vec::new()
        },
        source: Source::Index,
    }
}

fn schema() -> Value {
    EventSchema::new(&identity(), BASE)
        .domain_event_named::<Hit>("hit")
        .domain_event_named::<Deleted>("deleted")
        .build()
        .unwrap()
}

fn validator() -> EventValidator {
    EventValidator::new(&schema()).unwrap()
}

/// Every line of a stream, decoded.
fn lines(stream: &[u8]) -> Vec<Value> {
    assert_eq!(stream.last(), Some(&b'\n'));
    stream
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect()
}

fn assert_valid(validator: &EventValidator, event: &Value) {
    if let Err(errors) = validator.validate(event) {
        panic!("{event} should be valid: {errors:?}");
    }
    assert!(validator.is_valid(event));
}

/// Asserts `event` fails with a message that starts with `pointer` and contains `words`.
fn assert_invalid(validator: &EventValidator, event: &Value, pointer: &str, words: &str) {
    let errors = validator
        .validate(event)
        .expect_err(&format!("{event} should be invalid"));
    assert!(!validator.is_valid(event));
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with(&format!("{pointer}: ")) && e.contains(words)),
        "{event}: expected an error at {pointer} mentioning {words:?}, got {errors:?}"
    );
    for error in &errors {
        assert!(!error.contains('\n') && !error.is_empty(), "{error:?}");
    }
}

fn error_event() -> Value {
    json!({
        "type": "aoi:error", "aoi": {"seq": 3, "run": "R"},
        "category": "rate_limited", "code": "UPSTREAM_RATE_LIMIT",
        "message": "Upstream API rate limit exceeded.", "retryable": true, "retry_after_ms": 4500
    })
}

/// `value` with `changes` applied: `null` removes a key.
fn with(mut value: Value, changes: Value) -> Value {
    for (key, change) in changes.as_object().unwrap() {
        let object = value.as_object_mut().unwrap();
        if change.is_null() {
            object.remove(key);
        } else {
            object.insert(key.clone(), change.clone());
        }
    }
    value
}

#[test]
fn the_documents_are_valid_json_schema_2020_12() {
    for document in [schema(), framework_schema()] {
        if let Err(e) = jsonschema::draft202012::meta::validate(&document) {
            panic!("not a valid 2020-12 schema: {e}");
        }
        assert_eq!(document["$schema"], DIALECT);
    }
    // The check itself can fail: a malformed keyword is caught.
    let mut broken = schema();
    broken["$defs"]["aoi.error"]["required"] = json!("retryable");
    assert!(!jsonschema::draft202012::meta::is_valid(&broken));
}

#[test]
fn id_is_https_and_carries_the_schema_identity() {
    let document = schema();
    assert_eq!(
        document["$id"],
        "https://schemas.example.com/outline/com.example.outline.events/1.0.0/events.json"
    );
    let id = framework_schema()["$id"].as_str().unwrap().to_owned();
    assert!(
        id.starts_with("https://") && id.contains("/1.0-alpha/"),
        "{id}"
    );

    // Normalized: scheme case and trailing slashes.
    let built = EventSchema::new(&identity(), "HTTPS://schemas.example.com/outline//")
        .build()
        .unwrap();
    assert_eq!(built["$id"], document["$id"]);

    // Path-unsafe characters in the identity are encoded, not passed through.
    let odd = Identity::new("t", "1", "a/b c", "1.0.0#x");
    let built = EventSchema::new(&odd, BASE).build().unwrap();
    assert_eq!(
        built["$id"],
        "https://schemas.example.com/outline/a%2Fb%20c/1.0.0%23x/events.json"
    );

    for base in [
        "http://schemas.example.com/outline",
        "file:///usr/share/outline/schemas",
        "file:/tmp/x",
        "schemas.example.com/outline",
        "https://",
        "https:///path",
        "https://example.com/a?b=c",
        "https://example.com/a#frag",
        "https://exa mple.com",
        "",
    ] {
        assert_eq!(
            EventSchema::new(&identity(), base).build(),
            Err(SchemaError::IdBase(base.to_owned())),
            "{base}"
        );
    }
}

#[test]
fn no_file_uri_and_no_top_level_one_of() {
    for document in [schema(), framework_schema()] {
        let id = document["$id"].as_str().unwrap();
        assert!(!id.contains("file:"), "{id}");
        let top = document.as_object().unwrap();
        for keyword in ["oneOf", "anyOf"] {
            assert!(!top.contains_key(keyword), "top-level {keyword}");
        }
        assert_eq!(document["type"], "object");
        assert_eq!(document["required"], json!(["type"]));
        assert_eq!(
            document["properties"]["aoi"]["$ref"],
            "#/$defs/aoi.envelope"
        );
    }
}

#[test]
fn every_event_type_dispatches_to_its_definition() {
    let document = schema();
    let defs = document["$defs"].as_object().unwrap();
    let mut dispatched = Vec::new();
    for rule in document["allOf"].as_array().unwrap() {
        let Some(ty) = rule["if"]["properties"]["type"]["const"].as_str() else {
            continue;
        };
        assert_eq!(rule["if"]["required"], json!(["type"]));
        let target = rule["then"]["$ref"].as_str().unwrap();
        let name = target.strip_prefix("#/$defs/").unwrap();
        assert_eq!(defs[name]["properties"]["type"]["const"], ty, "{name}");
        dispatched.push(ty.to_owned());
    }
    let mut expected: Vec<String> = FRAMEWORK_TYPES.iter().map(|t| t.to_string()).collect();
    expected.extend(["hit".to_owned(), "deleted".to_owned()]);
    assert_eq!(dispatched, expected);

    // The def-name mapping of the module docs, tied to the wire types' `TYPE`.
    for ty in FRAMEWORK_TYPES {
        assert!(defs.contains_key(&ty.replace(':', ".")), "{ty}");
    }
    assert_eq!(<Meta as JsonSchema>::schema_name(), "aoi.meta");
    assert_eq!(<ErrorEvent as JsonSchema>::schema_name(), "aoi.error");
    assert!(defs.contains_key("event.hit") && defs.contains_key("event.deleted"));
    assert!(
        defs.contains_key("Source"),
        "nested domain types keep their names"
    );
}

#[test]
fn x_aoi_carries_the_identity_and_sorted_event_types() {
    let document = schema();
    assert_eq!(
        document["x-aoi"],
        json!({
            "schema_name": "com.example.outline.events",
            "schema_version": "1.0.0",
            "aoi_version": AOI_VERSION,
            "event_types": [
                "aoi:check", "aoi:error", "aoi:heartbeat", "aoi:meta", "aoi:plan",
                "aoi:progress", "aoi:summary", "aoi:warning", "deleted", "hit"
            ]
        })
    );
    // One schema per version: the negotiated version flows into `$id` and `x-aoi`.
    let v2 = Identity::new("outline", "1.8.2", "com.example.outline.events", "2.0.0");
    let document = EventSchema::new(&v2, BASE)
        .domain_event_named::<Hit>("hit")
        .description("Version two.")
        .build()
        .unwrap();
    assert_eq!(document["x-aoi"]["schema_version"], "2.0.0");
    assert!(document["$id"].as_str().unwrap().contains("/2.0.0/"));
    assert_eq!(document["description"], "Version two.");
    assert_eq!(
        framework_schema()["x-aoi"]["schema_name"],
        FRAMEWORK_SCHEMA_NAME
    );
}

#[test]
fn every_event_the_emitter_writes_validates() {
    let validator = validator();
    let mut seen = std::collections::BTreeSet::new();
    let check = |stream: Vec<u8>, seen: &mut std::collections::BTreeSet<String>| {
        for line in lines(&stream) {
            assert_valid(&validator, &line);
            seen.insert(line["type"].as_str().unwrap().to_owned());
        }
    };

    // A run that uses every event type and ends truncated with a cursor.
    let mut out = Emitter::builder(identity())
        .command("search")
        .timestamps(true)
        .trace_id("4bf92f3577b34da6a3ce929d0e0e4736")
        .args(
            Some(vec!["search".into(), "--token=<redacted>".into()]),
            true,
        )
        .input_fingerprint("sha256:00")
        .meta_property("index", "main")
        .start(Vec::new())
        .unwrap();
    for rank in 1..=3 {
        out.emit(&hit(rank)).unwrap();
    }
    out.emit(&Deleted {
        id: "doc_9".into(),
        category: Category::NotFound,
    })
    .unwrap();
    out.warning(
        &Warning::new(Code::from_static("INDEX_STALE"), "index is\n2 days old").target("main"),
    )
    .unwrap();
    out.error(
        &ErrorEvent::new(
            Category::RateLimited,
            Code::from_static("UPSTREAM_RATE_LIMIT"),
            "slow down",
        )
        .item()
        .retry_after_ms(4500)
        .item_index(17)
        .line_number(18)
        .target("/documents/abc123")
        .wrapped(Wrapped {
            protocol: crate::wire::Protocol::Http,
            status: Some(429),
            code: None,
        })
        .detail("quota", "hourly")
        .hint("wait"),
    )
    .unwrap();
    out.check(&Check {
        name: "config_file".into(),
        ok: true,
        severity: Some(Severity::Info),
        detail: Some("found".into()),
        hint: None,
        properties: None,
    })
    .unwrap();
    out.plan(&Plan {
        action: "delete".into(),
        target: Some("doc_9".into()),
        detail: Some("would delete one document".into()),
        properties: None,
    })
    .unwrap();
    out.progress(&Progress {
        completed: Some(3),
        total: Some(10),
        unit: Some("documents".into()),
        message: Some("indexing".into()),
        properties: None,
    })
    .unwrap();
    out.heartbeat(&Heartbeat {
        interval_ms: Some(1000),
        properties: None,
    })
    .unwrap();
    out.finish(Outcome::success().truncated(Some("c2VhcmNoOjI".into())))
        .unwrap();
    check(out.into_writer(), &mut seen);

    // A run that fails on a process-scope error.
    let mut out = Emitter::builder(identity()).start(Vec::new()).unwrap();
    out.error(
        &ErrorEvent::new(
            Category::Unavailable,
            Code::from_static("INDEX_DOWN"),
            "index unreachable",
        )
        .retryable(false),
    )
    .unwrap();
    out.finish(Outcome::failed()).unwrap();
    check(out.into_writer(), &mut seen);

    // A run that fails because upstream did, and one that was skipped.
    let upstream_error =
        ErrorEvent::new(Category::RateLimited, Code::from_static("SLOW"), "m").retry_after_ms(7200);
    let mut out = Emitter::builder(identity()).start(Vec::new()).unwrap();
    out.forward_error(&upstream_error, "outline").unwrap();
    out.finish(
        Outcome::failed()
            .caused_by(CausedBy::from_error(&upstream_error, Some("outline")))
            .upstream(Upstream {
                tool: Some("outline".into()),
                tool_version: Some("1.8.2".into()),
                schema_name: Some("com.example.outline.events".into()),
                schema_version: Some("1.0.0".into()),
            })
            .partial(true),
    )
    .unwrap();
    check(out.into_writer(), &mut seen);
    let mut out = Emitter::builder(identity()).start(Vec::new()).unwrap();
    out.finish(Outcome::skipped()).unwrap();
    check(out.into_writer(), &mut seen);

    let mut expected: Vec<&str> = FRAMEWORK_TYPES.to_vec();
    expected.extend(["hit", "deleted"]);
    for ty in expected {
        assert!(seen.contains(ty), "{ty} was never emitted");
    }
}

/// Events Part I forbids, one per line: the pointer of the error, words its message contains,
/// and the event.
const INVALID: &str = r#"
(root)                    ¦ "retryable" is a required property ¦ {"type":"aoi:error","category":"io","code":"X","message":"m"}
/retry_after_ms           ¦ must not appear when `retryable` is false ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"retry_after_ms":5}
/category                 ¦ "temporary" is not one of ¦ {"type":"aoi:error","category":"temporary","code":"X","message":"m","retryable":true}
/category                 ¦ "partial" is not one of ¦ {"type":"aoi:error","category":"partial","code":"X","message":"m","retryable":false}
/code                     ¦ does not match ¦ {"type":"aoi:error","category":"io","code":"upstream_rate_limit","message":"m","retryable":false}
/message                  ¦ does not match ¦ {"type":"aoi:error","category":"io","code":"X","message":"line one\nline two","retryable":false}
/message                  ¦ does not match ¦ {"type":"aoi:error","category":"io","code":"X","message":"colour \u001b[31mred","retryable":false}
(root)                    ¦ "category" is a required property ¦ {"type":"aoi:error","code":"X","message":"m","retryable":false}
/scope                    ¦ "run" is not one of ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"scope":"run"}
/item_index               ¦ minimum ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"item_index":-1}
/wrapped/protocol         ¦ "ftp" is not one of ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"wrapped":{"protocol":"ftp"}}
/wrapped                  ¦ "protocol" is a required property ¦ {"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false,"wrapped":{"status":429}}
(root)                    ¦ "ok" is a required property ¦ {"type":"aoi:summary","event_count":1}
/ok                       ¦ boolean ¦ {"type":"aoi:summary","ok":"true"}
(root)                    ¦ "reason" is a required property ¦ {"type":"aoi:summary","ok":false}
/reason                   ¦ "skipped" was expected ¦ {"type":"aoi:summary","ok":true,"reason":"failed"}
/reason                   ¦ "skipped" is not one of ¦ {"type":"aoi:summary","ok":false,"reason":"skipped"}
/reason                   ¦ "crashed" is not one of ¦ {"type":"aoi:summary","ok":false,"reason":"crashed"}
/count                    ¦ minimum ¦ {"type":"aoi:summary","ok":true,"count":-1}
/partial                  ¦ boolean ¦ {"type":"aoi:summary","ok":true,"partial":"no"}
/next_cursor              ¦ 7 is not of types ¦ {"type":"aoi:summary","ok":true,"next_cursor":7}
/tool                     ¦ null is not of type "string" ¦ {"type":"aoi:summary","ok":true,"tool":null}
/upstream/tool            ¦ 1 is not of type "string" ¦ {"type":"aoi:summary","ok":true,"upstream":{"tool":1}}
/caused_by/retry_after_ms ¦ must not appear when `retryable` is false ¦ {"type":"aoi:summary","ok":false,"reason":"failed","caused_by":{"category":"io","code":"X","retryable":false,"retry_after_ms":5}}
/caused_by                ¦ "retryable" is a required property ¦ {"type":"aoi:summary","ok":false,"reason":"failed","caused_by":{"category":"io","code":"X"}}
/type                     ¦ "aoi:whatever" is not one of ¦ {"type":"aoi:whatever","aoi":{"seq":1}}
/type                     ¦ "aoi:Summary" is not one of ¦ {"type":"aoi:Summary","ok":true}
/type                     ¦ shorter than 1 character ¦ {"type":""}
/type                     ¦ is not of type "string" ¦ {"type":3}
(root)                    ¦ "type" is a required property ¦ {"aoi":{"seq":0}}
(root)                    ¦ is not of type "object" ¦ ["type","hit"]
/aoi/seq                  ¦ minimum ¦ {"type":"hit_v0","aoi":{"seq":-1}}
/aoi/run                  ¦ is not of type "string" ¦ {"type":"hit_v0","aoi":{"run":5}}
/aoi                      ¦ is not of type "object" ¦ {"type":"aoi:meta","aoi":"x"}
/aoi_version              ¦ is not of type "string" ¦ {"type":"aoi:meta","aoi_version":1}
/schema_version           ¦ is not of type "string" ¦ {"type":"aoi:meta","schema_version":1}
(root)                    ¦ "ok" is a required property ¦ {"type":"aoi:check","name":"db"}
/severity                 ¦ "fatal" is not one of ¦ {"type":"aoi:check","name":"db","ok":false,"severity":"fatal"}
(root)                    ¦ "message" is a required property ¦ {"type":"aoi:warning","code":"STALE"}
/code                     ¦ does not match ¦ {"type":"aoi:warning","message":"m","code":"stale"}
(root)                    ¦ "action" is a required property ¦ {"type":"aoi:plan","target":"doc_1"}
/completed                ¦ is not of type "integer" ¦ {"type":"aoi:progress","completed":1.5}
/interval_ms              ¦ is not of type "integer" ¦ {"type":"aoi:heartbeat","interval_ms":"1s"}
(root)                    ¦ "id" is a required property ¦ {"type":"hit","rank":1,"source":"index"}
/rank                     ¦ minimum ¦ {"type":"hit","rank":-1,"id":"d","source":"index"}
/source                   ¦ "web" is not one of ¦ {"type":"hit","rank":1,"id":"d","source":"web"}
(root)                    ¦ 'extra' was unexpected ¦ {"type":"deleted","id":"d","category":"io","extra":1}
/category                 ¦ "temporary" is not one of ¦ {"type":"deleted","id":"d","category":"temporary"}
"#;

/// Events the spec allows, including what a stricter schema would wrongly refuse.
const VALID: &str = r#"
{"type":"aoi:error","aoi":{"seq":3,"run":"R"},"category":"rate_limited","code":"SLOW","message":"m","retryable":true,"retry_after_ms":4500}
{"type":"aoi:error","category":"io","code":"X","message":"m","retryable":false}
{"type":"aoi:error","category":"io","code":"X","message":"m","retryable":true,"details":{"k":[1]},"future_field":true}
{"type":"aoi:summary","aoi":{"seq":9,"run":"R"},"ok":true,"event_count":10,"count":8,"partial":false,"truncated":false}
{"type":"aoi:summary","ok":true,"reason":"skipped","next_cursor":null}
{"type":"aoi:summary","ok":false,"reason":"cancelled","vendor_cache_hits":41,"properties":{"x":1}}
{"type":"aoi:heartbeat","aoi":{"seq":4,"run":"R","t":9,"trace_id":"T","future":1}}
{"type":"aoi:check","name":"db","ok":true}
{"type":"compiled","aoi":{"seq":1,"run":"R"},"anything":[1,2]}
{"type":"summary","text":"a domain event may be named summary (§8.2)"}
{"type":"hit","rank":1,"id":"d","source":"cache","extra":"unknown fields are fine"}
{"type":"deleted","aoi":{"seq":2},"id":"d","category":"io"}
"#;

/// The `(pointer, words, event)` cases of [`INVALID`].
fn invalid_cases() -> Vec<(&'static str, &'static str, Value)> {
    INVALID
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut parts = line.splitn(3, '¦').map(str::trim);
            let (pointer, words, event) = (parts.next(), parts.next(), parts.next());
            let event = serde_json::from_str(event.unwrap()).unwrap();
            (pointer.unwrap(), words.unwrap(), event)
        })
        .collect()
}

fn valid_events() -> Vec<Value> {
    VALID
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn framework_rules_reject_what_part_one_forbids() {
    let v = validator();
    let cases = invalid_cases();
    assert_eq!(cases.len(), 48);
    for (pointer, words, event) in &cases {
        assert_invalid(&v, event, pointer, words);
    }
}

#[test]
fn open_where_the_spec_is_open() {
    let v = validator();
    for event in valid_events() {
        assert_valid(&v, &event);
    }
}

#[test]
fn a_schema_narrowed_to_some_types_judges_them_as_the_whole_and_never_rejects_more() {
    let whole = schema();
    let narrow = narrowed(&whole, |ty| ty == "hit" || ty.starts_with("aoi:"));
    let (whole_v, narrow_v) = (compile(&whole).unwrap(), compile(&narrow).unwrap());
    let events = invalid_cases().into_iter().map(|(_, _, e)| e);
    for event in events.chain(valid_events()) {
        let ty = event["type"].as_str().unwrap_or_default();
        if ty == "deleted" {
            // Only ever more accepted.
            assert!(
                narrow_v.is_valid(&event) || !whole_v.is_valid(&event),
                "{event}"
            );
        } else {
            assert_eq!(
                narrow_v.is_valid(&event),
                whole_v.is_valid(&event),
                "{event}"
            );
        }
    }
    let defs = narrow["$defs"].as_object().unwrap();
    assert!(defs.contains_key("event.hit"), "{:?}", defs.keys());
    assert!(whole["$defs"].get("event.deleted").is_some());
    assert!(!defs.contains_key("event.deleted"), "{:?}", defs.keys());
    assert!(narrow_v.is_valid(&json!({"type": "deleted", "anything": 1})));
}

#[test]
fn narrowed_validators_agree_with_the_whole_schema() {
    let schema = schema();
    let fast = EventValidator::new(&schema).unwrap();
    let mut narrowed: Vec<&str> = fast.by_type.keys().map(String::as_str).collect();
    narrowed.sort_unstable();
    let mut expected: Vec<&str> = FRAMEWORK_TYPES.to_vec();
    expected.extend(["deleted", "hit"]);
    expected.sort_unstable();
    assert_eq!(narrowed, expected);
    // Without narrowing: every event goes through the whole document.
    let slow = EventValidator {
        whole: compile(&schema).unwrap(),
        by_type: HashMap::new(),
    };
    let events = invalid_cases().into_iter().map(|(_, _, e)| e);
    for event in events.chain(valid_events()) {
        assert_eq!(fast.validate(&event), slow.validate(&event), "{event}");
    }
    // The namespace rule is dropped for unprefixed types, kept for framework ones.
    let rules = schema["allOf"].as_array().unwrap();
    let namespace = type_condition(&rules[0]).unwrap();
    assert!(rejects(namespace, "hit"));
    assert!(!rejects(namespace, "aoi:meta"));
    assert!(rejects(&json!({"const": "a"}), "b") && !rejects(&json!({"const": "a"}), "a"));
    assert!(rejects(&json!({"enum": ["a"]}), "b") && !rejects(&json!({"enum": ["b"]}), "b"));
    // Unsure means keep the rule.
    assert!(!rejects(&json!({"pattern": "^a.c"}), "xyz"));
    assert!(!rejects(&json!({"minLength": 9}), "x"));
    assert_eq!(literal_prefix("^aoi:"), Some("aoi:"));
    assert_eq!(literal_prefix("aoi:"), None);
    assert_eq!(literal_prefix("^a+"), None);
}

#[test]
fn the_framework_schema_checks_framework_events_only() {
    let v = EventValidator::new(&framework_schema()).unwrap();
    assert_valid(&v, &json!({"type": "hit", "rank": "not checked"}));
    assert_valid(&v, &error_event());
    assert_invalid(
        &v,
        &with(error_event(), json!({"retryable": false})),
        "/retry_after_ms",
        "must not appear when `retryable` is false",
    );
    assert_invalid(
        &v,
        &json!({"type": "aoi:whatever"}),
        "/type",
        "is not one of",
    );
}

#[test]
fn odd_domain_type_names_resolve() {
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Odd {
        n: u8,
    }
    let name = "a/b c~%#\u{e9}";
    let document = EventSchema::new(&identity(), BASE)
        .domain_event_named::<Odd>(name)
        .build()
        .unwrap();
    assert!(document["$defs"].get(format!("event.{name}")).is_some());
    let v = EventValidator::new(&document).unwrap();
    assert_valid(&v, &json!({"type": name, "n": 1}));
    assert_invalid(&v, &json!({"type": name, "n": 300}), "/n", "maximum");
}

#[test]
fn registration_errors_surface_at_build() {
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Typed {
        r#type: String,
    }
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Enveloped {
        aoi: u8,
    }
    let build = |schema: EventSchema| schema.build().unwrap_err();
    let new = || EventSchema::new(&identity(), BASE);
    assert_eq!(
        build(new().domain_event_named::<Hit>("aoi:hit")),
        SchemaError::EventType("aoi:hit".into())
    );
    assert_eq!(
        build(new().domain_event_named::<Hit>("")),
        SchemaError::EventType(String::new())
    );
    assert_eq!(
        build(
            new()
                .domain_event_named::<Hit>("hit")
                .domain_event_named::<Deleted>("hit")
        ),
        SchemaError::DuplicateEventType("hit".into())
    );
    assert_eq!(
        build(new().domain_event_named::<Typed>("typed")),
        SchemaError::ReservedField {
            event: "typed".into(),
            field: "type".into()
        }
    );
    assert_eq!(
        build(new().domain_event_named::<Enveloped>("enveloped")),
        SchemaError::ReservedField {
            event: "enveloped".into(),
            field: "aoi".into()
        }
    );
}

#[test]
fn framework_shapes_keep_their_rules_inside_domain_events() {
    #[derive(Serialize, JsonSchema)]
    struct Retry {
        cause: CausedBy,
    }
    let document = EventSchema::new(&identity(), BASE)
        .domain_event_named::<Retry>("retry")
        .build()
        .unwrap();
    assert_eq!(
        document["$defs"]["event.retry"]["properties"]["cause"]["$ref"],
        "#/$defs/aoi.caused_by"
    );
    let v = EventValidator::new(&document).unwrap();
    let cause = json!({"category": "io", "code": "X", "retryable": false, "retry_after_ms": 1});
    assert_invalid(
        &v,
        &json!({"type": "retry", "cause": cause}),
        "/cause/retry_after_ms",
        "must not appear",
    );

    #[derive(JsonSchema)]
    #[schemars(rename = "event.hit")]
    #[allow(dead_code)]
    struct Impostor {
        n: u8,
    }
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Carrier {
        inner: Impostor,
    }
    assert_eq!(
        EventSchema::new(&identity(), BASE)
            .domain_event_named::<Carrier>("carrier")
            .build(),
        Err(SchemaError::DefinitionClash("event.hit".into()))
    );
}

#[test]
fn a_document_that_does_not_compile_is_an_error() {
    let err = EventValidator::new(&json!({"type": 12})).unwrap_err();
    assert!(
        matches!(err, SchemaError::Compile(ref m) if !m.contains('\n')),
        "{err}"
    );
}

#[test]
fn long_messages_are_cut_to_one_line() {
    let long = "x".repeat(5000);
    let message = one_line(&format!("a\nb {long}"));
    assert!(message.starts_with("a b x"));
    assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS);
    assert!(message.ends_with('…'));
    assert_eq!(one_line("short"), "short");
}

#[test]
fn scope_defaults_keep_errors_without_scope_valid() {
    let v = validator();
    let event = with(error_event(), json!({"scope": null}));
    assert_valid(&v, &event);
    let decoded: ErrorEvent = serde_json::from_value(event).unwrap();
    assert_eq!(decoded.scope, Scope::Process);
}
