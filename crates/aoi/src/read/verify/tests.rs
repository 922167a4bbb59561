//! Unit tests for the verifier: one per rule.
//!
//! Most tests start from a valid stream built by [`numbered`] and break exactly one thing, then
//! assert the complete list of findings (code, level, line) and the verdict, so a rule that stops
//! firing, fires at the wrong level, or fires on the wrong line fails a test.

use super::*;
use crate::read::schema_pool;
use crate::wire::{Category, Reason};

const RUN: &str = "01JZQ7X4TQ9V5R8K2M3N6P7S4W";

/// The identity triple of §5, as it appears on `aoi:meta` and `aoi:summary`.
const IDENTITY: &str = r#""tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0""#;

const HIT: &str = r#"{"type":"hit","rank":1,"id":"doc_123","title":"Agent-operable tools"}"#;

/// An item-scope error: the stream continues and `ok:true` stays possible.
const ITEM_ERROR: &str = r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"DOC_MISSING","message":"no such document","retryable":false,"target":"doc_3","item_index":3}"#;

/// A process-scope error raised locally (no `origin`): the run is over.
const PROCESS_ERROR: &str = r#"{"type":"aoi:error","domain":"outline","category":"internal","code":"BOOM","message":"it broke","retryable":false}"#;

const WARNING: &str =
    r#"{"type":"aoi:warning","code":"INDEX_STALE","message":"index is 2 days old"}"#;

fn meta() -> String {
    format!(r#"{{"type":"aoi:meta",{IDENTITY},"command":"search"}}"#)
}

/// An `aoi:summary` carrying `fields` and the identity triple.
fn summary(fields: &str) -> String {
    format!(r#"{{"type":"aoi:summary",{fields},{IDENTITY}}}"#)
}

/// Turns event bodies into a valid stream: contiguous `aoi.seq` from `first_seq`, one `aoi.run`,
/// every line ended by `\n`, and, when `event_count` is set, an `aoi:summary` that lacks one
/// gets the number of lines through it.
fn number(bodies: &[&str], first_seq: u64, event_count: bool) -> String {
    let mut out = String::new();
    for (i, body) in bodies.iter().enumerate() {
        let rest = body.strip_prefix('{').expect("a body is a JSON object");
        let sep = if rest.starts_with('}') { "" } else { "," };
        let seq = first_seq + i as u64;
        let mut line = format!(r#"{{"aoi":{{"seq":{seq},"run":"{RUN}"}}{sep}{rest}"#);
        if event_count
            && body.contains(r#""type":"aoi:summary""#)
            && !body.contains(r#""event_count""#)
        {
            line.pop();
            line.push_str(&format!(r#","event_count":{}}}"#, i + 1));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A valid stream of `bodies` (see [`number`]).
fn numbered(bodies: &[&str]) -> String {
    number(bodies, 0, true)
}

/// The smallest clean stream: meta, one hit, summary.
fn baseline() -> String {
    numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":1"#)])
}

/// `stream` with its 1-based line `number` replaced by `with` (which gets no `\n` of its own).
fn replace_line(stream: &str, number: usize, with: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, line) in stream.split_inclusive('\n').enumerate() {
        if i + 1 == number {
            out.extend_from_slice(with);
            out.push(b'\n');
        } else {
            out.extend_from_slice(line.as_bytes());
        }
    }
    out
}

/// `stream` without its 1-based line `number`.
fn delete_line(stream: &str, number: usize) -> String {
    stream
        .split_inclusive('\n')
        .enumerate()
        .filter(|(i, _)| i + 1 != number)
        .map(|(_, line)| line)
        .collect()
}

/// Lines `{"type":"hit",…}` numbered `first_seq..first_seq + n`, for the long spec examples.
fn hits(first_seq: u64, n: u64) -> String {
    (first_seq..first_seq + n)
        .map(|seq| {
            format!(
                "{{\"type\":\"hit\",\"aoi\":{{\"seq\":{seq},\"run\":\"{RUN}\"}},\"rank\":{},\"id\":\"doc_{seq}\"}}\n",
                seq - first_seq + 1
            )
        })
        .collect()
}

fn verify(input: impl AsRef<[u8]>) -> Report {
    Verifier::verify_bytes(input.as_ref(), VerifyOptions::default())
}

/// Verifies through a [`LineReader`] with a line limit, and reports how the producer ended.
fn verify_with(
    input: &[u8],
    opts: VerifyOptions,
    max_line: usize,
    end: Option<ProcessEnd>,
) -> Report {
    verify_with_schema(input, opts, max_line, end, None)
}

fn verify_with_schema(
    input: &[u8],
    opts: VerifyOptions,
    max_line: usize,
    end: Option<ProcessEnd>,
    schema: Option<&serde_json::Value>,
) -> Report {
    let mut reader = LineReader::with_max_line(input, max_line);
    let mut verifier = Verifier::new(opts);
    if let Some(schema) = schema {
        verifier = verifier
            .with_schema(schema)
            .expect("the test schema compiles");
    }
    while let Some(frame) = reader.next().expect("reading a slice cannot fail") {
        verifier.frame(frame);
    }
    verifier.finish(end)
}

type Seen = (FindingCode, Level, Option<u64>);

const V: Level = Level::Violation;
const N: Level = Level::Notice;

fn sorted(mut seen: Vec<Seen>) -> Vec<Seen> {
    seen.sort_by_key(|(code, level, line)| (line.unwrap_or(u64::MAX), *code, *level));
    seen
}

fn seen(report: &Report) -> Vec<Seen> {
    sorted(
        report
            .findings
            .iter()
            .map(|f| (f.code, f.level, f.line))
            .collect(),
    )
}

fn listing(report: &Report) -> String {
    report.findings.iter().map(|f| format!("\n  {f}")).collect()
}

/// Asserts the verdict and the exact findings (in any order), and that the counters agree.
#[track_caller]
fn assert_report(report: &Report, verdict: Verdict, expected: &[Seen]) {
    assert_eq!(
        seen(report),
        sorted(expected.to_vec()),
        "findings differ; got:{}",
        listing(report)
    );
    assert_eq!(report.verdict, verdict, "findings:{}", listing(report));
    assert_eq!(report.suppressed, 0);
    let violations = report.findings.iter().filter(|f| f.level == V).count() as u64;
    assert_eq!(report.violations, violations);
    for f in &report.findings {
        assert_eq!(f.section, f.code.section(), "{f}");
        assert!(!f.message.is_empty(), "{f}");
    }
}

/// Asserts a stream is conforming: no violation and the given verdict, notices allowed as listed.
#[track_caller]
fn assert_conforming(report: &Report, verdict: Verdict, notices: &[Seen]) {
    assert!(notices.iter().all(|(_, level, _)| *level == N));
    assert_report(report, verdict, notices);
    assert_eq!(report.violations, 0);
}

// ---------------------------------------------------------------------------------------------
// Every finding code, on a minimal stream.
// ---------------------------------------------------------------------------------------------

struct Case {
    /// The code this case exists to produce.
    code: FindingCode,
    input: Vec<u8>,
    opts: VerifyOptions,
    max_line: usize,
    end: Option<ProcessEnd>,
    verdict: Verdict,
    /// Every finding expected, the target one included.
    expect: Vec<Seen>,
    /// A published event schema to check against.
    schema: Option<serde_json::Value>,
}

fn case(code: FindingCode, input: impl Into<Vec<u8>>, verdict: Verdict, expect: &[Seen]) -> Case {
    Case {
        code,
        input: input.into(),
        opts: VerifyOptions::default(),
        max_line: crate::read::DEFAULT_MAX_LINE,
        end: None,
        verdict,
        expect: expect.to_vec(),
        schema: None,
    }
}

impl Case {
    fn ended(mut self, end: ProcessEnd) -> Case {
        self.end = Some(end);
        self
    }

    fn schema(mut self, schema: serde_json::Value) -> Case {
        self.schema = Some(schema);
        self
    }

    fn max_line(mut self, max_line: usize) -> Case {
        self.max_line = max_line;
        self
    }
}

/// A stream with one item-scope error, `error`, and a summary that accounts for it.
fn with_item_error(error: &str) -> String {
    numbered(&[
        &meta(),
        error,
        &summary(r#""ok":true,"count":0,"error_count":1"#),
    ])
}

/// The published schema of the test tool, whose `hit` has an integer `rank`.
fn hit_schema(version: &str) -> serde_json::Value {
    #[derive(serde::Serialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Hit {
        rank: u32,
        id: String,
        title: String,
    }
    let identity =
        crate::wire::Identity::new("outline", "1.8.2", "com.example.outline.events", version);
    crate::discover::schema::EventSchema::new(&identity, "https://schemas.example.com")
        .domain_event_named::<Hit>("hit")
        .build()
        .expect("the test schema builds")
}

fn cases() -> Vec<Case> {
    use FindingCode as C;
    use Verdict::{Succeeded, Violation};
    let two_hits = numbered(&[&meta(), HIT, HIT, &summary(r#""ok":true,"count":1"#)]);
    let long_hit = format!(r#"{{"type":"hit","text":"{}"}}"#, "x".repeat(1000));
    let identity_2_0 = IDENTITY.replace("1.0-alpha", "2.0");
    vec![
        // §2 framing and JSON.
        case(
            C::InvalidUtf8,
            replace_line(&two_hits, 3, b"{\"type\":\"hit\",\"title\":\"\xff\"}"),
            Violation,
            &[(C::InvalidUtf8, V, Some(3))],
        ),
        case(
            C::InvalidJson,
            replace_line(&two_hits, 3, br#"{"type":"hit","#),
            Violation,
            &[(C::InvalidJson, V, Some(3))],
        ),
        case(
            C::EmptyLine,
            replace_line(&two_hits, 3, b""),
            Violation,
            &[(C::EmptyLine, V, Some(3))],
        ),
        case(
            C::NotAnObject,
            replace_line(&two_hits, 3, b"[1,2]"),
            Violation,
            &[(C::NotAnObject, V, Some(3))],
        ),
        case(
            C::AnsiEscape,
            numbered(&[
                &meta(),
                "{\"type\":\"hit\",\"title\":\"\u{9b}31mred\"}",
                &summary(r#""ok":true,"count":1"#),
            ]),
            Violation,
            &[(C::AnsiEscape, V, Some(2))],
        ),
        case(
            C::CrlfLineEnding,
            baseline().replace('\n', "\r\n"),
            Succeeded,
            &[
                (C::CrlfLineEnding, N, Some(1)),
                (C::CrlfLineEnding, N, Some(2)),
                (C::CrlfLineEnding, N, Some(3)),
            ],
        ),
        case(
            C::LineTooLong,
            numbered(&[&meta(), &long_hit, &summary(r#""ok":true,"count":0"#)]),
            Violation,
            &[(C::LineTooLong, V, Some(2))],
        )
        .max_line(400),
        case(
            C::TruncatedLine,
            baseline().trim_end_matches('\n'),
            Violation,
            &[(C::TruncatedLine, V, Some(3)), (C::SummaryMissing, V, None)],
        ),
        // §8.1 type and envelope.
        case(
            C::TypeMissing,
            numbered(&[&meta(), r#"{"rank":1}"#, &summary(r#""ok":true,"count":0"#)]),
            Violation,
            &[(C::TypeMissing, V, Some(2))],
        ),
        case(
            C::TypeNotString,
            numbered(&[&meta(), r#"{"type":5}"#, &summary(r#""ok":true,"count":0"#)]),
            Violation,
            &[(C::TypeNotString, V, Some(2))],
        ),
        case(
            C::SeqMissing,
            replace_line(
                &baseline(),
                2,
                br#"{"type":"hit","aoi":{"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"}}"#,
            ),
            Violation,
            &[(C::SeqMissing, V, Some(2))],
        ),
        case(
            C::SeqAbsent,
            format!(
                "{}\n{HIT}\n{}\n",
                meta(),
                summary(r#""ok":true,"count":1,"event_count":3"#)
            ),
            Succeeded,
            &[(C::SeqAbsent, N, None)],
        ),
        case(
            C::SeqInvalid,
            replace_line(
                &baseline(),
                2,
                br#"{"type":"hit","aoi":{"seq":-1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"}}"#,
            ),
            Violation,
            &[(C::SeqInvalid, V, Some(2))],
        ),
        case(
            C::SeqNotZeroBased,
            number(&[&meta(), HIT, &summary(r#""ok":true,"count":1"#)], 1, true),
            Violation,
            &[(C::SeqNotZeroBased, V, Some(1))],
        ),
        case(
            C::SeqGap,
            delete_line(
                &numbered(&[&meta(), HIT, HIT, HIT, &summary(r#""ok":true,"count":3"#)]),
                3,
            ),
            Violation,
            &[
                (C::SeqGap, V, Some(3)),
                (C::EventCountMismatch, V, Some(4)),
                (C::CountMismatch, V, Some(4)),
            ],
        ),
        case(
            C::RunMissing,
            replace_line(&baseline(), 2, br#"{"type":"hit","aoi":{"seq":1}}"#),
            Violation,
            &[(C::RunMissing, V, Some(2))],
        ),
        case(
            C::RunChanged,
            replace_line(
                &baseline(),
                2,
                br#"{"type":"hit","aoi":{"seq":1,"run":"01JZQ7X4TQ9-other"}}"#,
            ),
            Violation,
            &[(C::RunChanged, V, Some(2))],
        ),
        case(
            C::EnvelopeNotObject,
            replace_line(&baseline(), 2, br#"{"type":"hit","aoi":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"}"#),
            Violation,
            &[
                (C::EnvelopeNotObject, V, Some(2)),
                (C::SeqMissing, V, Some(2)),
            ],
        ),
        // §4, §5, §13.1 meta and summary placement and identity.
        case(
            C::MetaNotFirst,
            numbered(&[HIT, &meta(), &summary(r#""ok":true,"count":1"#)]),
            Violation,
            &[(C::MetaNotFirst, V, Some(2))],
        ),
        case(
            C::MetaRepeated,
            numbered(&[&meta(), &meta(), &summary(r#""ok":true,"count":0"#)]),
            Violation,
            &[(C::MetaRepeated, V, Some(2))],
        ),
        // §10 and §5: checked against a published schema.
        case(
            C::EventSchemaInvalid,
            numbered(&[
                &meta(),
                r#"{"type":"hit","rank":"first","id":"doc_123","title":"t"}"#,
                &summary(r#""ok":true,"count":1"#),
            ]),
            Violation,
            &[(C::EventSchemaInvalid, V, Some(2))],
        )
        .schema(hit_schema("1.0.0")),
        case(
            C::SchemaIdentityMismatch,
            numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":1"#)]),
            Violation,
            &[(C::SchemaIdentityMismatch, V, Some(1))],
        )
        .schema(hit_schema("2.0.0")),
        case(
            C::SchemaIdentityMismatch,
            numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":1"#)]),
            Succeeded,
            &[(C::SchemaIdentityMismatch, N, Some(1))],
        )
        .schema(hit_schema("1.1.0")),
        case(
            C::MetaFieldInvalid,
            numbered(&[
                &format!(r#"{{"type":"aoi:meta",{IDENTITY},"command":5}}"#),
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[(C::MetaFieldInvalid, V, Some(1))],
        ),
        case(
            C::ArgsNotRedacted,
            numbered(&[
                &format!(
                    r#"{{"type":"aoi:meta",{IDENTITY},"command":"get","args":["get","--token","ghp_4f9a1c2e"]}}"#
                ),
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[(C::ArgsNotRedacted, V, Some(1))],
        ),
        case(
            C::RunNotUlid,
            "{\"type\":\"aoi:meta\",\"aoi\":{\"seq\":0,\"run\":\"run-1\"},\"tool\":\"outline\",\"tool_version\":\"1.8.2\",\"aoi_version\":\"1.0-alpha\",\"schema_name\":\"com.example.outline.events\",\"schema_version\":\"1.0.0\",\"command\":\"search\"}\n{\"type\":\"aoi:summary\",\"aoi\":{\"seq\":1,\"run\":\"run-1\"},\"ok\":true,\"count\":0,\"event_count\":2,\"tool\":\"outline\",\"tool_version\":\"1.8.2\",\"aoi_version\":\"1.0-alpha\",\"schema_name\":\"com.example.outline.events\",\"schema_version\":\"1.0.0\"}\n",
            Succeeded,
            &[(C::RunNotUlid, N, Some(1))],
        ),
        case(
            C::ErrorDomainMissing,
            with_item_error(
                r#"{"type":"aoi:error","scope":"item","category":"io","code":"X","message":"m","retryable":false,"item_index":0}"#,
            ),
            Succeeded,
            &[(C::ErrorDomainMissing, N, Some(2))],
        ),
        case(
            C::ErrorTargetMissing,
            with_item_error(
                r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"X","message":"m","retryable":false,"item_index":0}"#,
            ),
            Succeeded,
            &[(C::ErrorTargetMissing, N, Some(2))],
        ),
        case(
            C::ItemErrorIndexMissing,
            with_item_error(
                r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"io","code":"X","message":"m","retryable":false,"target":"/a"}"#,
            ),
            Succeeded,
            &[(C::ItemErrorIndexMissing, N, Some(2))],
        ),
        case(
            C::RetryAfterMissing,
            with_item_error(
                r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"rate_limited","code":"X","message":"m","retryable":true,"item_index":0}"#,
            ),
            Succeeded,
            &[(C::RetryAfterMissing, N, Some(2))],
        ),
        case(
            C::WrappedMappingDiffers,
            with_item_error(
                r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"conflict","code":"X","message":"m","retryable":false,"item_index":0,"wrapped":{"protocol":"http","status":404}}"#,
            ),
            Succeeded,
            &[(C::WrappedMappingDiffers, N, Some(2))],
        ),
        case(
            C::MetaMissing,
            numbered(&[HIT, &summary(r#""ok":true,"count":1"#)]),
            Succeeded,
            &[(C::MetaMissing, N, None)],
        ),
        case(
            C::IdentityIncomplete,
            numbered(&[
                r#"{"type":"aoi:meta","tool":"outline","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0"}"#,
                &summary(r#""ok":true,"count":0"#),
            ]),
            Succeeded,
            &[(C::IdentityIncomplete, N, Some(1))],
        ),
        case(
            C::IdentityMismatch,
            numbered(&[
                &meta(),
                r#"{"type":"aoi:summary","ok":true,"count":0,"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"2.0.0"}"#,
            ]),
            Violation,
            &[(C::IdentityMismatch, V, Some(2))],
        ),
        case(
            C::AoiVersionUnknown,
            numbered(&[
                &format!(r#"{{"type":"aoi:meta",{identity_2_0}}}"#),
                &format!(r#"{{"type":"aoi:summary","ok":true,"count":0,{identity_2_0}}}"#),
            ]),
            Violation,
            &[
                (C::AoiVersionUnknown, V, Some(1)),
                (C::AoiVersionUnknown, V, Some(2)),
            ],
        ),
        case(
            C::SummaryNotLast,
            numbered(&[&meta(), &summary(r#""ok":true,"count":0"#), HIT]),
            Violation,
            &[(C::SummaryNotLast, V, Some(3))],
        ),
        case(
            C::SummaryRepeated,
            numbered(&[
                &meta(),
                &summary(r#""ok":true,"count":0"#),
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[
                (C::SummaryNotLast, V, Some(3)),
                (C::SummaryRepeated, V, Some(3)),
            ],
        ),
        case(
            C::SummaryMissing,
            numbered(&[&meta(), HIT]),
            Violation,
            &[(C::SummaryMissing, V, None)],
        ),
        // §4, §8.3 the summary's own fields.
        case(
            C::OkMissing,
            numbered(&[&meta(), &summary(r#""count":0"#)]),
            Violation,
            &[(C::OkMissing, V, Some(2))],
        ),
        case(
            C::OkNotBoolean,
            numbered(&[&meta(), &summary(r#""ok":"true","count":0"#)]),
            Violation,
            &[(C::OkNotBoolean, V, Some(2))],
        ),
        case(
            C::ReasonMissing,
            numbered(&[&meta(), &summary(r#""ok":false,"count":0"#)]),
            Violation,
            &[(C::ReasonMissing, V, Some(2))],
        ),
        case(
            C::ReasonInvalid,
            numbered(&[
                &meta(),
                &summary(r#""ok":false,"reason":"crashed","count":0"#),
            ]),
            Violation,
            &[(C::ReasonInvalid, V, Some(2))],
        ),
        case(
            C::OkAfterProcessError,
            numbered(&[
                &meta(),
                PROCESS_ERROR,
                &summary(r#""ok":true,"count":0,"error_count":1"#),
            ]),
            Violation,
            &[(C::OkAfterProcessError, V, Some(3))],
        ),
        case(
            C::EventCountMissing,
            number(
                &[&meta(), HIT, &summary(r#""ok":true,"count":1"#)],
                0,
                false,
            ),
            Succeeded,
            &[(C::EventCountMissing, N, Some(3))],
        ),
        case(
            C::EventCountMismatch,
            numbered(&[
                &meta(),
                HIT,
                &summary(r#""ok":true,"count":1,"event_count":4"#),
            ]),
            Violation,
            &[(C::EventCountMismatch, V, Some(3))],
        ),
        case(
            C::CountMismatch,
            numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":2"#)]),
            Violation,
            &[(C::CountMismatch, V, Some(3))],
        ),
        case(
            C::ErrorCountMismatch,
            numbered(&[
                &meta(),
                ITEM_ERROR,
                &summary(r#""ok":true,"count":0,"error_count":0"#),
            ]),
            Violation,
            &[(C::ErrorCountMismatch, V, Some(3))],
        ),
        case(
            C::WarningCountMismatch,
            numbered(&[
                &meta(),
                WARNING,
                &summary(r#""ok":true,"count":0,"warning_count":0"#),
            ]),
            Violation,
            &[(C::WarningCountMismatch, V, Some(3))],
        ),
        case(
            C::SummaryFieldInvalid,
            numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":"1""#)]),
            Violation,
            &[(C::SummaryFieldInvalid, V, Some(3))],
        ),
        case(
            C::PartialWithoutErrors,
            numbered(&[
                &meta(),
                HIT,
                &summary(r#""ok":true,"count":1,"error_count":0,"partial":true"#),
            ]),
            Succeeded,
            &[(C::PartialWithoutErrors, N, Some(3))],
        ),
        // §9 errors.
        case(
            C::ErrorCategoryMissing,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","code":"DOC_MISSING","message":"m","retryable":false}"#,
            ),
            Violation,
            &[(C::ErrorCategoryMissing, V, Some(2))],
        ),
        case(
            C::ErrorCategoryInvalid,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"quantum","code":"DOC_MISSING","message":"m","retryable":false}"#,
            ),
            Violation,
            &[(C::ErrorCategoryInvalid, V, Some(2))],
        ),
        case(
            C::ErrorCodeInvalid,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"target":"x","domain":"outline","scope":"item","category":"not_found","code":"doc-missing","message":"m","retryable":false}"#,
            ),
            Violation,
            &[(C::ErrorCodeInvalid, V, Some(2))],
        ),
        case(
            C::ErrorMessageInvalid,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"target":"x","domain":"outline","scope":"item","category":"not_found","code":"DOC_MISSING","message":"line one\nline two","retryable":false}"#,
            ),
            Violation,
            &[(C::ErrorMessageInvalid, V, Some(2))],
        ),
        case(
            C::ErrorRetryableMissing,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"target":"x","domain":"outline","scope":"item","category":"not_found","code":"DOC_MISSING","message":"m"}"#,
            ),
            Violation,
            &[(C::ErrorRetryableMissing, V, Some(2))],
        ),
        case(
            C::RetryAfterNotRetryable,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"rate_limited","code":"QUOTA","message":"m","retryable":false,"retry_after_ms":100}"#,
            ),
            Violation,
            &[(C::RetryAfterNotRetryable, V, Some(2))],
        ),
        case(
            C::RetryAfterInvalid,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"rate_limited","code":"QUOTA","message":"m","retryable":true,"retry_after_ms":-1}"#,
            ),
            Violation,
            &[(C::RetryAfterInvalid, V, Some(2))],
        ),
        case(
            C::ErrorFieldInvalid,
            with_item_error(
                r#"{"type":"aoi:error","target":"x","domain":"outline","scope":"item","category":"not_found","code":"DOC_MISSING","message":"m","retryable":false,"item_index":"17"}"#,
            ),
            Violation,
            &[(C::ErrorFieldInvalid, V, Some(2))],
        ),
        case(
            C::CheckInvalid,
            numbered(&[
                &meta(),
                r#"{"type":"aoi:check","name":"config_file"}"#,
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[(C::CheckInvalid, V, Some(2))],
        ),
        // §5.2 v0.2 shapes.
        case(
            C::V02FlatEnvelope,
            numbered(&[
                &meta(),
                r#"{"type":"aoi:warning","seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W","code":"INDEX_STALE","message":"m"}"#,
                &summary(r#""ok":true,"count":0,"warning_count":1"#),
            ]),
            Violation,
            &[(C::V02FlatEnvelope, V, Some(2))],
        ),
        case(
            C::V02CategoryTemporary,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"temporary","code":"UPSTREAM_DOWN","message":"m","retryable":true}"#,
            ),
            Violation,
            &[(C::V02CategoryTemporary, V, Some(2))],
        ),
        case(
            C::V02CategoryPartial,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"partial","code":"SOME_FAILED","message":"m","retryable":false}"#,
            ),
            Violation,
            &[(C::V02CategoryPartial, V, Some(2))],
        ),
        case(
            C::V02ErrorUpstream,
            with_item_error(
                r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"unavailable","code":"UPSTREAM_DOWN","message":"m","retryable":true,"upstream":{"protocol":"http","status":503}}"#,
            ),
            Violation,
            &[(C::V02ErrorUpstream, V, Some(2))],
        ),
        // §13, §8.1 framework namespace.
        case(
            C::UnknownFrameworkEvent,
            numbered(&[
                &meta(),
                r#"{"type":"aoi:later","x":1}"#,
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[(C::UnknownFrameworkEvent, V, Some(2))],
        ),
        // §8.1 "Tool-specific additions to a framework event MUST go in a `properties` object".
        case(
            C::FrameworkExtraField,
            numbered(&[
                &meta(),
                HIT,
                &summary(r#""ok":true,"count":1,"vendor_cache_hits":41"#),
            ]),
            Violation,
            &[(C::FrameworkExtraField, V, Some(3))],
        ),
        // §2 parser limits, each with its own code.
        case(
            C::NestingTooDeep,
            numbered(&[
                &meta(),
                &format!(
                    r#"{{"type":"hit","deep":{}{}}}"#,
                    "[".repeat(200),
                    "]".repeat(200)
                ),
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[(C::NestingTooDeep, V, Some(2))],
        ),
        case(
            C::NumberOutOfRange,
            numbered(&[
                &meta(),
                r#"{"type":"hit","score":1e400}"#,
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[(C::NumberOutOfRange, V, Some(2))],
        ),
        case(
            C::LoneSurrogate,
            numbered(&[
                &meta(),
                r#"{"type":"hit","title":"\ud800"}"#,
                &summary(r#""ok":true,"count":0"#),
            ]),
            Violation,
            &[(C::LoneSurrogate, V, Some(2))],
        ),
        // docs/verifier.md: a repeated key on a framework event.
        case(
            C::DuplicateKey,
            numbered(&[
                &meta(),
                &summary(r#""ok":false,"reason":"failed","count":0,"ok":true"#),
            ]),
            Violation,
            // Read on with the last `ok`, the reason contradicts it.
            &[
                (C::DuplicateKey, V, Some(2)),
                (C::ReasonInvalid, V, Some(2)),
            ],
        ),
        // §8.3 skipped means "did not run".
        case(
            C::SkippedWithEvents,
            numbered(&[
                &meta(),
                HIT,
                &summary(r#""ok":true,"reason":"skipped","count":1"#),
            ]),
            Succeeded,
            &[(C::SkippedWithEvents, N, Some(3))],
        ),
        // §8.1 envelope fields.
        case(
            C::EnvelopeFieldInvalid,
            numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":1"#)])
                .replacen(
                    r#""run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"}"#,
                    r#""run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W","t":"5ms"}"#,
                    2,
                )
                .replacen(r#""t":"5ms"}"#, r#""t":0}"#, 1),
            Violation,
            &[(C::EnvelopeFieldInvalid, V, Some(2))],
        ),
        case(
            C::EnvelopeExtraField,
            numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":1"#)])
                .replace(r#""seq":1,"#, r#""seq":1,"vendor":1,"#),
            Violation,
            &[(C::EnvelopeExtraField, V, Some(2))],
        ),
        // §13.1 caused_by and upstream.
        case(
            C::CausedByInvalid,
            numbered(&[
                &meta(),
                &summary(
                    r#""ok":false,"reason":"failed","count":0,"caused_by":{"category":"rate_limited","code":"X"}"#,
                ),
            ]),
            Violation,
            &[(C::CausedByInvalid, V, Some(2))],
        ),
        case(
            C::CausedByOnSuccess,
            numbered(&[
                &meta(),
                &summary(
                    r#""ok":true,"count":0,"caused_by":{"category":"rate_limited","code":"X","retryable":true}"#,
                ),
            ]),
            Succeeded,
            &[(C::CausedByOnSuccess, N, Some(2))],
        ),
        case(
            C::UpstreamInvalid,
            numbered(&[&meta(), &summary(r#""ok":true,"count":0,"upstream":null"#)]),
            Violation,
            &[(C::UpstreamInvalid, V, Some(2))],
        ),
        case(
            C::V02UpstreamShape,
            numbered(&[
                &meta(),
                &summary(r#""ok":true,"count":0,"upstream":{"protocol":"http","status":503}"#),
            ]),
            Violation,
            &[(C::V02UpstreamShape, V, Some(2))],
        ),
        // §9.1 types on a warning.
        case(
            C::WarningFieldInvalid,
            numbered(&[
                &meta(),
                r#"{"type":"aoi:warning","code":"INDEX_STALE","message":"m","origin":7}"#,
                &summary(r#""ok":true,"count":0,"warning_count":1"#),
            ]),
            Violation,
            &[(C::WarningFieldInvalid, V, Some(2))],
        ),
        // §4.1 a watch-like producer that dies.
        Case {
            opts: VerifyOptions {
                unbounded: true,
                ..VerifyOptions::default()
            },
            ..case(
                C::ProcessFailed,
                numbered(&[&meta(), HIT]),
                Verdict::Failed,
                &[(C::SummaryMissing, N, None), (C::ProcessFailed, N, None)],
            )
        }
        .ended(ProcessEnd::Exited(1)),
        // §2 "usage errors may use stderr before stream startup".
        case(
            C::StreamNotStarted,
            Vec::new(),
            Verdict::Failed,
            &[(C::StreamNotStarted, N, None)],
        )
        .ended(ProcessEnd::Exited(64)),
        // §4.1 the exit status.
        case(
            C::ExitStatusMismatch,
            baseline(),
            Violation,
            &[(C::ExitStatusMismatch, V, None)],
        )
        .ended(ProcessEnd::Exited(3)),
    ]
}

#[test]
fn the_baseline_stream_is_clean() {
    let report = verify(baseline());
    assert_conforming(&report, Verdict::Succeeded, &[]);
    assert_eq!(report.lines, 3);
    assert_eq!(report.domain_events, 1);
    assert_eq!(report.run.as_deref(), Some(RUN));
    assert!(report.meta.is_some() && report.summary.is_some());
}

#[test]
fn every_case_produces_exactly_its_findings() {
    for (i, c) in cases().iter().enumerate() {
        let report = verify_with_schema(&c.input, c.opts, c.max_line, c.end, c.schema.as_ref());
        let input = String::from_utf8_lossy(&c.input);
        assert_eq!(
            seen(&report),
            sorted(c.expect.clone()),
            "case {i} ({}):\n{input}\ngot:{}",
            c.code,
            listing(&report)
        );
        assert_eq!(report.verdict, c.verdict, "case {i} ({}):\n{input}", c.code);
        let violations = c.expect.iter().filter(|(_, l, _)| *l == V).count() as u64;
        assert_eq!(report.violations, violations, "case {i} ({})", c.code);
    }
}

#[test]
fn every_finding_code_is_produced_by_some_case() {
    let cases = cases();
    // Reported by a consumer through the API, not by any input: see its own test.
    let by_the_consumer = [FindingCode::LineNotRelayed];
    for code in FindingCode::ALL
        .iter()
        .filter(|c| !by_the_consumer.contains(c))
    {
        let producing = cases
            .iter()
            .any(|c| c.code == *code && c.expect.iter().any(|(seen, _, _)| seen == code));
        assert!(producing, "no test case produces {code}");
    }
}

// ---------------------------------------------------------------------------------------------
// The spec's own streams are valid (§8.1, §8.3, §9, §13.1, §15, §19), seq and event_count filled
// in where the spec omits lines or shows `"seq":0` on every example.
// ---------------------------------------------------------------------------------------------

#[test]
fn spec_8_3_meta_check_and_summary_examples_are_valid() {
    // §8.3: the meta, check and summary examples in one stream; the summary counts 42 domain
    // events and one warning, so those are generated between them.
    let stream = [
        r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0","command":"search"}"#,
        "\n",
        r#"{"type":"aoi:check","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"name":"config_file","ok":true,"severity":"info","detail":"found"}"#,
        "\n",
        r#"{"type":"aoi:warning","aoi":{"seq":2,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"code":"INDEX_STALE","message":"index is 2 days old"}"#,
        "\n",
        hits(3, 42).as_str(),
        r#"{"type":"aoi:summary","aoi":{"seq":45,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":true,"count":42,"input_count":50,"warning_count":1,"error_count":0,"partial":false,"truncated":false,"next_cursor":null,"elapsed_ms":384,"event_count":46}"#,
        "\n",
    ]
    .concat();
    let report = verify(&stream);
    // The §8.3 summary example carries no identity triple: a SHOULD, reported as a notice.
    assert_conforming(
        &report,
        Verdict::Succeeded,
        &[(FindingCode::IdentityIncomplete, N, Some(46))],
    );
    assert_eq!(
        (report.lines, report.domain_events, report.warnings),
        (46, 42, 1)
    );
}

#[test]
fn spec_8_1_summary_with_properties_is_valid() {
    let stream = [
        meta_line(0).as_str(),
        "\n",
        hits(1, 8).as_str(),
        r#"{"type":"aoi:summary","aoi":{"seq":9,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":true,"event_count":10,"count":8,"#,
        r#" "properties":{"vendor_cache_hits":41}}"#,
        "\n",
    ]
    .concat();
    let report = verify(&stream);
    assert_conforming(
        &report,
        Verdict::Succeeded,
        &[(FindingCode::IdentityIncomplete, N, Some(10))],
    );
}

/// The §8.3 meta example with its seq.
fn meta_line(seq: u64) -> String {
    format!(
        r#"{{"type":"aoi:meta","aoi":{{"seq":{seq},"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"}},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0","command":"search"}}"#
    )
}

#[test]
fn spec_9_item_error_example_is_valid() {
    let stream = r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0","command":"import"}
{"type":"hit","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"rank":1,"id":"doc_123"}
{"type":"aoi:error","aoi":{"seq":2,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"scope":"item","category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","domain":"outline","message":"Upstream API rate limit exceeded.","retryable":true,"retry_after_ms":4500,"target":"/documents/abc123","item_index":17}
{"type":"hit","aoi":{"seq":3,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"rank":2,"id":"doc_124"}
{"type":"aoi:summary","aoi":{"seq":4,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":true,"event_count":5,"count":2,"error_count":1,"partial":true,"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0"}
"#;
    let report = verify(stream);
    assert_conforming(&report, Verdict::Succeeded, &[]);
    // No process error: the retry detail of the item error still explains what went wrong.
    let caused_by = report.caused_by.expect("the item error is reported");
    assert_eq!(caused_by.category, Category::RateLimited);
    assert_eq!(caused_by.code.as_str(), "UPSTREAM_RATE_LIMIT");
    assert_eq!(
        (caused_by.retryable, caused_by.retry_after_ms),
        (true, Some(4500))
    );
}

#[test]
fn spec_13_1_forwarded_error_and_caused_by_summary_are_valid() {
    // A transformer fed by outline: twelve hits, outline's rate-limit error forwarded with
    // `origin` at seq 7, and the §13.1 summary (caused_by + upstream) at seq 14.
    let stream = [
        r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"tool":"rerank","tool_version":"0.3.0","aoi_version":"1.0-alpha","schema_name":"com.example.rerank.events","schema_version":"1.0.0","command":"rerank"}"#,
        "\n",
        hits(1, 6).as_str(),
        r#"{"type":"aoi:error","domain":"outline","aoi":{"seq":7,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"origin":"outline","category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","message":"…","retryable":true,"retry_after_ms":7200}"#,
        "\n",
        hits(8, 6).as_str(),
        r#"{"type":"aoi:summary","aoi":{"seq":14,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":false,"reason":"failed","event_count":15,"count":12,"warning_count":0,"error_count":1,"partial":true,"caused_by":{"origin":"outline","category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","retryable":true,"retry_after_ms":7200},"upstream":{"tool":"outline","tool_version":"1.8.2","schema_name":"com.example.outline.events","schema_version":"1.0.0"}}"#,
        "\n",
    ]
    .concat();
    let report = verify(&stream);
    assert_conforming(
        &report,
        Verdict::Failed,
        &[(FindingCode::IdentityIncomplete, N, Some(15))],
    );
    let caused_by = report.caused_by.expect("caused_by survives the pipe");
    assert_eq!(caused_by.origin.as_deref(), Some("outline"));
    assert_eq!(caused_by.category, Category::RateLimited);
    assert_eq!(
        (caused_by.retryable, caused_by.retry_after_ms),
        (true, Some(7200))
    );
    let summary = report.summary.expect("decoded summary");
    let upstream = summary.upstream.expect("upstream identity");
    assert_eq!(upstream.tool.as_deref(), Some("outline"));
    assert_eq!((report.domain_events, report.errors), (12, 1));
}

#[test]
fn spec_15_truncated_summary_is_valid() {
    let stream = [
        meta_line(0).as_str(),
        "\n",
        hits(1, 100).as_str(),
        r#"{"type":"aoi:summary","aoi":{"seq":101,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":true,"event_count":102,"count":100,"truncated":true,"next_cursor":"opaque-token"}"#,
        "\n",
    ]
    .concat();
    let report = verify(&stream);
    assert_conforming(
        &report,
        Verdict::Succeeded,
        &[(FindingCode::IdentityIncomplete, N, Some(102))],
    );
    let summary = report.summary.expect("decoded summary");
    assert_eq!(summary.truncated, Some(true));
    assert_eq!(summary.next_cursor.as_deref(), Some("opaque-token"));
}

#[test]
fn spec_7_cancelled_summary_is_an_honest_failure() {
    let stream = [
        meta_line(0).as_str(),
        "\n",
        hits(1, 40).as_str(),
        r#"{"type":"aoi:summary","aoi":{"seq":41,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":false,"reason":"cancelled","event_count":42}"#,
        "\n",
    ]
    .concat();
    let report = verify(&stream);
    assert_conforming(
        &report,
        Verdict::Failed,
        &[(FindingCode::IdentityIncomplete, N, Some(42))],
    );
    assert_eq!(
        report.summary.and_then(|s| s.reason),
        Some(Reason::Cancelled)
    );
}

#[test]
fn spec_19_1_finite_search_is_valid() {
    // As in the spec, plus `event_count` on the summary.
    let stream = r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0","command":"search"}
{"type":"hit","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"rank":1,"id":"doc_123","title":"Agent-Operable Tools","snippet":"A conforming tool exposes a stable interface..."}
{"type":"aoi:summary","aoi":{"seq":2,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":true,"count":1,"warning_count":0,"error_count":0,"partial":false,"truncated":false,"event_count":3}
"#;
    let report = verify(stream);
    assert_conforming(
        &report,
        Verdict::Succeeded,
        &[(FindingCode::IdentityIncomplete, N, Some(3))],
    );
    // "if EOF arrives before the aoi:summary, the stream failed"
    let cut = &stream[..stream
        .find("{\"type\":\"aoi:summary\"")
        .expect("summary line")];
    assert_eq!(verify(cut).verdict, Verdict::Violation);
}

#[test]
fn spec_19_3_doctor_is_an_honest_failure() {
    let stream = r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"tool":"outline","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0","command":"doctor"}
{"type":"aoi:check","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"name":"config_file","ok":true,"severity":"info","detail":"found"}
{"type":"aoi:check","aoi":{"seq":2,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"name":"api_token","ok":false,"severity":"error","detail":"missing"}
{"type":"aoi:summary","aoi":{"seq":3,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":false,"reason":"failed","event_count":4,"count":0,"error_count":0,"properties":{"checks_failed":1}}
"#;
    let report = verify(stream);
    // The spec's doctor meta has no tool_version and its summary no identity: notices only.
    assert_conforming(
        &report,
        Verdict::Failed,
        &[
            (FindingCode::IdentityIncomplete, N, Some(1)),
            (FindingCode::IdentityIncomplete, N, Some(4)),
        ],
    );
    assert_eq!(report.summary.and_then(|s| s.reason), Some(Reason::Failed));
}

#[test]
fn spec_19_4_import_with_item_error_is_an_honest_partial_failure() {
    // The 29 audit events the spec omits (seq 2 to 30) are generated.
    let audit: String = (2..=30)
        .map(|seq| {
            format!(
                "{{\"type\":\"imported\",\"aoi\":{{\"seq\":{seq},\"run\":\"{RUN}\"}},\"id\":\"rec_{seq}\"}}\n"
            )
        })
        .collect();
    let stream = [
        r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"tool":"outline","command":"import","properties":{"input_mode":"jsonl","continue_on_error":true}}"#,
        "\n",
        r#"{"type":"aoi:error","domain":"outline","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"scope":"item","category":"validation","code":"INPUT_JSONL_PARSE_ERROR","line_number":17,"message":"Invalid JSON on input line 17","retryable":false}"#,
        "\n",
        audit.as_str(),
        r#"{"type":"aoi:summary","aoi":{"seq":31,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":false,"reason":"failed","event_count":32,"count":29,"error_count":1,"partial":true}"#,
        "\n",
    ]
    .concat();
    let report = verify(&stream);
    assert_conforming(
        &report,
        Verdict::Failed,
        &[
            (FindingCode::IdentityIncomplete, N, Some(1)),
            (FindingCode::IdentityIncomplete, N, Some(32)),
        ],
    );
    assert_eq!(
        (report.lines, report.domain_events, report.errors),
        (32, 29, 1)
    );
    assert_eq!(report.summary.and_then(|s| s.partial), Some(true));
}

// ---------------------------------------------------------------------------------------------
// v0.2 shapes are violations (§5.2).
// ---------------------------------------------------------------------------------------------

#[test]
fn v02_flat_envelope_stream_is_a_violation() {
    // A whole v0.2 stream: seq/run at the top level of every line, no `aoi` object.
    let stream = format!(
        "{}\n{}\n{}\n{}\n",
        format_args!(r#"{{"type":"aoi:meta","seq":0,"run":"{RUN}",{IDENTITY}}}"#),
        format_args!(r#"{{"type":"hit","seq":1,"run":"{RUN}","rank":1}}"#),
        format_args!(r#"{{"type":"hit","seq":2,"run":"{RUN}","rank":2}}"#),
        format_args!(
            r#"{{"type":"aoi:summary","seq":3,"run":"{RUN}","ok":true,"count":2,"event_count":4,{IDENTITY}}}"#
        ),
    );
    let report = verify(stream);
    assert_report(
        &report,
        Verdict::Violation,
        &[
            (FindingCode::V02FlatEnvelope, V, Some(1)),
            // On a domain event `seq`/`run` belong to the tool: only a hint, and only once.
            (FindingCode::V02FlatEnvelope, N, Some(2)),
            (FindingCode::V02FlatEnvelope, V, Some(4)),
            (FindingCode::SeqAbsent, N, None),
        ],
    );
}

#[test]
fn v02_flat_run_alone_on_a_framework_event_is_a_violation() {
    let stream = numbered(&[
        &format!(r#"{{"type":"aoi:meta","run":"{RUN}",{IDENTITY}}}"#),
        &summary(r#""ok":true,"count":0"#),
    ]);
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[(FindingCode::V02FlatEnvelope, V, Some(1))],
    );
}

#[test]
fn a_domain_event_may_have_its_own_seq_and_run_fields_next_to_the_envelope() {
    // §8.1: every top-level name but `type` and `aoi` belongs to the tool.
    let stream = numbered(&[
        &meta(),
        r#"{"type":"chapter","seq":7,"run":"marathon"}"#,
        &summary(r#""ok":true,"count":1"#),
    ]);
    assert_conforming(&verify(stream), Verdict::Succeeded, &[]);
}

#[test]
fn v02_error_shapes_are_violations_with_their_own_codes() {
    let cases = [
        (
            r#"{"type":"aoi:error","domain":"outline","category":"temporary","code":"UPSTREAM_DOWN","message":"m","retryable":true}"#,
            FindingCode::V02CategoryTemporary,
        ),
        (
            r#"{"type":"aoi:error","domain":"outline","category":"partial","code":"SOME_FAILED","message":"m","retryable":false}"#,
            FindingCode::V02CategoryPartial,
        ),
        (
            r#"{"type":"aoi:error","domain":"outline","category":"unavailable","code":"UPSTREAM_DOWN","message":"m","retryable":true,"upstream":{"protocol":"http","status":503}}"#,
            FindingCode::V02ErrorUpstream,
        ),
        (
            r#"{"type":"aoi:error","domain":"outline","category":"unavailable","code":"UPSTREAM_DOWN","message":"m"}"#,
            FindingCode::ErrorRetryableMissing,
        ),
        (
            r#"{"type":"aoi:error","domain":"outline","category":"unavailable","code":"UPSTREAM_DOWN","message":"m","retryable":"yes"}"#,
            FindingCode::ErrorRetryableMissing,
        ),
    ];
    for (error, code) in cases {
        // An honest failure around the error, so the v0.2 shape is the only problem.
        let stream = numbered(&[
            &meta(),
            error,
            &summary(r#""ok":false,"reason":"failed","count":0,"error_count":1"#),
        ]);
        assert_report(&verify(stream), Verdict::Violation, &[(code, V, Some(2))]);
    }
}

#[test]
fn the_v1_spelling_of_each_v02_shape_is_valid() {
    let stream = numbered(&[
        &meta(),
        r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"unavailable","code":"UPSTREAM_DOWN","message":"m","retryable":true,"retry_after_ms":0,"wrapped":{"protocol":"http","status":503}}"#,
        HIT,
        &summary(r#""ok":true,"count":1,"error_count":1,"partial":true"#),
    ]);
    assert_conforming(&verify(stream), Verdict::Succeeded, &[]);
}

// ---------------------------------------------------------------------------------------------
// Framing (§2).
// ---------------------------------------------------------------------------------------------

#[test]
fn a_final_summary_without_newline_is_truncated_even_though_it_is_valid_json() {
    let stream = baseline();
    let cut = stream.strip_suffix('\n').expect("ends in a newline");
    let last = cut.rsplit('\n').next().expect("a last line");
    assert!(
        serde_json::from_str::<Value>(last).is_ok(),
        "the cut line is whole JSON"
    );
    let report = verify(cut);
    assert_report(
        &report,
        Verdict::Violation,
        &[
            (FindingCode::TruncatedLine, V, Some(3)),
            (FindingCode::SummaryMissing, V, None),
        ],
    );
    assert!(
        report.summary.is_none(),
        "a truncated summary is never read"
    );
    assert_eq!(report.lines, 3);
}

#[test]
fn unicode_line_separators_and_lone_cr_inside_a_line_are_not_line_ends() {
    let stream = numbered(&[
        &meta(),
        "{\"type\":\"hit\",\"title\":\"one\u{2028}two\u{2029}three\u{85}four\"}",
        "{\"type\":\"hit\",\r\"rank\":2}",
        &summary(r#""ok":true,"count":2"#),
    ]);
    let report = verify(&stream);
    assert_conforming(&report, Verdict::Succeeded, &[]);
    assert_eq!(report.lines, 4);
}

#[test]
fn crlf_line_endings_are_a_notice_on_every_line() {
    let stream = baseline().replace('\n', "\r\n");
    let report = verify(stream);
    assert_conforming(
        &report,
        Verdict::Succeeded,
        &[
            (FindingCode::CrlfLineEnding, N, Some(1)),
            (FindingCode::CrlfLineEnding, N, Some(2)),
            (FindingCode::CrlfLineEnding, N, Some(3)),
        ],
    );
    assert_eq!(report.summary.map(|s| s.event_count), Some(Some(3)));
}

#[test]
fn raw_ansi_controls_are_violations_and_escaped_ones_notices_but_not_an_escaped_backslash() {
    // (title as JSON text, extra findings besides ANSI_ESCAPE, ANSI_ESCAPE level if any)
    let cases: [(&[u8], &[FindingCode], Option<Level>); 9] = [
        // Escaped: the bytes on stdout are clean; the decoded data carries a control.
        (b"\\u001b[31mred", &[], Some(N)),
        (b"\\u001B[31mred", &[], Some(N)),
        (b"\\u009b31mred", &[], Some(N)),
        (b"\\u009B31mred", &[], Some(N)),
        // A raw C1 CSI is legal inside a JSON string, and a real escape on a terminal.
        ("\u{9b}31mred".as_bytes(), &[], Some(V)),
        // A raw ESC is both an escape and a control character JSON forbids in strings.
        (b"\x1b[31mred", &[FindingCode::InvalidJson], Some(V)),
        // `\\` then `\u001b`: a backslash, then an escaped ESC.
        (b"\\\\\\u001b[0m", &[], Some(N)),
        // `\\u001b`: a backslash followed by the letters u001b.
        (b"C:\\\\u001b\\\\dir", &[], None),
        (b"\\\\u009b", &[], None),
    ];
    for (title, also, level) in cases {
        let shown = String::from_utf8_lossy(title).into_owned();
        let mut line =
            br#"{"type":"hit","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"title":""#
                .to_vec();
        line.extend_from_slice(title);
        line.extend_from_slice(b"\"}");
        let stream = replace_line(&baseline(), 2, &line);
        let report = verify(&stream);
        let mut expected: Vec<Seen> = also.iter().map(|c| (*c, V, Some(2))).collect();
        if let Some(level) = level {
            expected.push((FindingCode::AnsiEscape, level, Some(2)));
        }
        // An invalid line is not a domain event.
        if !also.is_empty() {
            expected.push((FindingCode::CountMismatch, V, Some(3)));
        }
        assert_eq!(
            seen(&report),
            sorted(expected),
            "title {shown:?}:{}",
            listing(&report)
        );
        let verdict = if level == Some(V) {
            Verdict::Violation
        } else {
            Verdict::Succeeded
        };
        assert_eq!(report.verdict, verdict, "title {shown:?}");
    }
}

#[test]
fn find_ansi_reports_the_column_of_the_escape() {
    assert_eq!(find_ansi(br#"{"a":"\u001b"}"#), Some(Ansi::Escaped(7)));
    assert_eq!(find_ansi(b"ab\x1bc"), Some(Ansi::Raw(3)));
    assert_eq!(find_ansi("ab\u{9b}".as_bytes()), Some(Ansi::Raw(3)));
    // A raw control wins over an earlier escaped one.
    assert_eq!(find_ansi("\\u001b \u{9b}".as_bytes()), Some(Ansi::Raw(8)));
    assert_eq!(find_ansi(br#"{"a":"\\u001b"}"#), None);
    assert_eq!(find_ansi(br#"{"a":"\u0019b\u00e9"}"#), None);
    // Other C1 characters share the 0xC2 lead byte: U+0082 is C2 82, U+00A0 is C2 A0.
    assert_eq!(find_ansi("\u{82}\u{a0}é".as_bytes()), None);
    assert_eq!(find_ansi(b"\\"), None);
    assert_eq!(find_ansi(b"\\u001"), None);
}

#[test]
fn an_error_message_with_an_escaped_ansi_control_is_an_invalid_message() {
    let stream = with_item_error(
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"DOC_MISSING","message":"\u001b[31mred","retryable":false,"target":"doc_3","item_index":3}"#,
    );
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[
            (FindingCode::AnsiEscape, N, Some(2)),
            (FindingCode::ErrorMessageInvalid, V, Some(2)),
        ],
    );
}

#[test]
fn an_empty_stream_has_no_summary() {
    let report = verify(b"");
    assert_report(
        &report,
        Verdict::Violation,
        &[(FindingCode::SummaryMissing, V, None)],
    );
    assert_eq!(report.lines, 0);
}

#[test]
fn a_blank_line_after_the_summary_breaks_its_finality() {
    let stream = format!("{}\n", baseline());
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[
            (FindingCode::SummaryNotLast, V, Some(4)),
            (FindingCode::EmptyLine, V, Some(4)),
        ],
    );
}

#[test]
fn an_invalid_line_keeps_its_seq_slot() {
    // A banner replacing line 2 of a numbered stream: the lines around it stay contiguous.
    let stream = replace_line(
        &numbered(&[&meta(), HIT, HIT, &summary(r#""ok":true,"count":1"#)]),
        2,
        b"Welcome to outline!",
    );
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[(FindingCode::InvalidJson, V, Some(2))],
    );
}

#[test]
fn line_kinds_are_reported_per_line() {
    let mut v = Verifier::new(VerifyOptions::default());
    assert_eq!(v.line(1, meta().as_bytes()), LineKind::Framework);
    assert_eq!(v.line(2, br#"{"type":"hit"}"#), LineKind::Domain);
    assert_eq!(
        v.line(3, br#"{"type":"aoi:later"}"#),
        LineKind::UnknownFramework
    );
    assert_eq!(v.line(4, b"nope"), LineKind::Invalid);
    assert_eq!(v.line(5, br#"{"rank":1}"#), LineKind::Invalid);
    let report = v.finish(None);
    assert_eq!(report.domain_events, 1);
    assert_eq!(report.lines, 5);
}

// ---------------------------------------------------------------------------------------------
// An honest failure is not a violation (§4, §9, §13).
// ---------------------------------------------------------------------------------------------

#[test]
fn ok_false_with_reason_and_matching_counters_is_failed_not_violation() {
    let stream = numbered(&[
        &meta(),
        HIT,
        PROCESS_ERROR,
        &summary(r#""ok":false,"reason":"failed","count":1,"error_count":1,"warning_count":0"#),
    ]);
    let report = verify(stream);
    assert_conforming(&report, Verdict::Failed, &[]);
    let caused_by = report
        .caused_by
        .expect("the process error explains the failure");
    assert_eq!(caused_by.code.as_str(), "BOOM");
    assert_eq!(caused_by.category, Category::Internal);
    assert!(!caused_by.retryable);
}

#[test]
fn every_failure_reason_is_an_honest_failure_and_skipped_is_a_success() {
    for reason in ["failed", "cancelled", "timeout", "denied"] {
        let fields = format!(r#""ok":false,"reason":"{reason}","count":0"#);
        let stream = numbered(&[&meta(), &summary(&fields)]);
        assert_conforming(&verify(stream), Verdict::Failed, &[]);
    }
    let stream = numbered(&[
        &meta(),
        &summary(r#""ok":true,"reason":"skipped","count":0"#),
    ]);
    assert_conforming(&verify(stream), Verdict::Succeeded, &[]);
}

#[test]
fn a_reason_that_contradicts_ok_is_invalid() {
    for fields in [
        r#""ok":true,"reason":"failed","count":0"#,
        r#""ok":false,"reason":"skipped","count":0"#,
        r#""ok":false,"reason":null,"count":0"#,
        r#""ok":false,"reason":5,"count":0"#,
        r#""ok":true,"reason":"Failed","count":0"#,
    ] {
        let stream = numbered(&[&meta(), &summary(fields)]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(FindingCode::ReasonInvalid, V, Some(2))],
        );
    }
}

#[test]
fn ok_true_after_a_process_error_is_a_violation() {
    for error in [
        PROCESS_ERROR,
        r#"{"type":"aoi:error","domain":"outline","scope":"process","category":"io","code":"BROKEN_PIPE","message":"m","retryable":false}"#,
    ] {
        let stream = numbered(&[
            &meta(),
            HIT,
            error,
            &summary(r#""ok":true,"count":1,"error_count":1"#),
        ]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(FindingCode::OkAfterProcessError, V, Some(4))],
        );
    }
}

#[test]
fn ok_true_after_item_errors_succeeds() {
    let stream = numbered(&[
        &meta(),
        HIT,
        ITEM_ERROR,
        HIT,
        &summary(r#""ok":true,"count":2,"error_count":1,"partial":true"#),
    ]);
    let report = verify(stream);
    assert_conforming(&report, Verdict::Succeeded, &[]);
    assert_eq!(report.errors, 1);
}

#[test]
fn ok_true_after_a_forwarded_error_is_allowed_with_continue_on_error() {
    // §13.1: an upstream error sets ok:false "unless --continue-on-error is set".
    let stream = numbered(&[
        &meta(),
        r#"{"type":"aoi:error","domain":"outline","origin":"outline","category":"unavailable","code":"UPSTREAM_DOWN","message":"m","retryable":true}"#,
        HIT,
        &summary(r#""ok":true,"count":1,"error_count":1"#),
    ]);
    assert_conforming(&verify(stream), Verdict::Succeeded, &[]);
}

#[test]
fn an_unknown_framework_event_forbids_success() {
    let stream = numbered(&[
        &meta(),
        r#"{"type":"aoi:cancel_all","why":"new in 1.1"}"#,
        HIT,
        &summary(r#""ok":true,"count":1"#),
    ]);
    let report = verify(stream);
    assert_report(
        &report,
        Verdict::Violation,
        &[(FindingCode::UnknownFrameworkEvent, V, Some(2))],
    );
    // It is not data either.
    assert_eq!(report.domain_events, 1);
}

#[test]
fn unknown_domain_types_and_fields_are_data() {
    // §8.2: bare `summary`, `meta` and `error` belong to the tool, as do unknown fields.
    let stream = numbered(&[
        &meta(),
        r#"{"type":"transcoded","codec":"av1","future_field":{"nested":[1,2,3]}}"#,
        r#"{"type":"summary","text":"A document summary.","ok":"not a boolean"}"#,
        r#"{"type":"meta","tool":5}"#,
        r#"{"type":"error","retryable":"maybe","category":"temporary"}"#,
        r#"{"type":"hit","rank":1,"id":"doc_123","properties":7}"#,
        &summary(r#""ok":true,"count":5"#),
    ]);
    let report = verify(stream);
    assert_conforming(&report, Verdict::Succeeded, &[]);
    assert_eq!((report.domain_events, report.errors), (5, 0));
}

#[test]
fn framework_events_without_a_fixed_field_list_take_any_fields_with_a_notice() {
    // The spec names aoi:plan, aoi:progress and aoi:heartbeat without listing their fields.
    let stream = numbered(&[
        &meta(),
        r#"{"type":"aoi:plan","action":"delete","target":"/doc/1","extra":true}"#,
        r#"{"type":"aoi:progress","completed":1,"total":2,"unit":"documents"}"#,
        r#"{"type":"aoi:heartbeat","interval_ms":1000}"#,
        &summary(r#""ok":true,"count":0,"properties":{"vendor_cache_hits":41}"#),
    ]);
    assert_conforming(
        &verify(stream),
        Verdict::Succeeded,
        &[(FindingCode::FrameworkExtraField, N, Some(2))],
    );
}

#[test]
fn extra_fields_are_notices_in_a_stream_that_declares_a_newer_minor() {
    let newer = IDENTITY.replace("1.0-alpha", "1.1");
    let stream = numbered(&[
        &format!(r#"{{"type":"aoi:meta",{newer},"later_field":1}}"#),
        &format!(r#"{{"type":"aoi:summary","ok":true,"count":0,"later_field":2,{newer}}}"#),
    ]);
    assert_conforming(
        &verify(stream),
        Verdict::Succeeded,
        &[
            (FindingCode::FrameworkExtraField, N, Some(1)),
            (FindingCode::FrameworkExtraField, N, Some(2)),
        ],
    );
}

#[test]
fn an_unknown_framework_type_in_a_newer_minor_stream_is_no_violation_but_no_success() {
    // §13: it MAY be ignored, but a consumer MUST NOT report success on the stream.
    let newer = IDENTITY.replace("1.0-alpha", "1.1");
    let stream = numbered(&[
        &format!(r#"{{"type":"aoi:meta",{newer}}}"#),
        r#"{"type":"aoi:later","x":1}"#,
        &format!(r#"{{"type":"aoi:summary","ok":true,"count":0,{newer}}}"#),
    ]);
    assert_conforming(
        &verify(stream),
        Verdict::Failed,
        &[(FindingCode::UnknownFrameworkEvent, N, Some(2))],
    );
}

#[test]
fn the_recommended_error_fields_are_notices_when_absent_and_silent_when_present() {
    // §9.1 SHOULDs (domain; target, for the resource a not_found concerns; an index on an
    // item error), §9.2 "SHOULD carry retry_after_ms", §9.5 "SHOULD use this mapping".
    for error in [
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"X","message":"m","retryable":false,"target":"/a","line_number":4}"#,
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"rate_limited","code":"X","message":"m","retryable":true,"retry_after_ms":1000,"item_index":0}"#,
        // A hard quota: not retryable, so retry_after_ms MUST NOT appear (§9.3).
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"rate_limited","code":"X","message":"m","retryable":false,"item_index":0}"#,
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"X","message":"m","retryable":false,"target":"/a","item_index":0,"wrapped":{"protocol":"http","status":410}}"#,
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"rate_limited","code":"X","message":"m","retryable":true,"retry_after_ms":5,"item_index":0,"wrapped":{"protocol":"grpc","status":8,"code":"RESOURCE_EXHAUSTED"}}"#,
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"unavailable","code":"X","message":"m","retryable":true,"item_index":0,"wrapped":{"protocol":"http","status":"599"}}"#,
        // A wrapped exit status has no row in §9.5.
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"io","code":"X","message":"m","retryable":false,"item_index":0,"wrapped":{"protocol":"exit","status":2}}"#,
    ] {
        assert_conforming(&verify(with_item_error(error)), Verdict::Succeeded, &[]);
    }
    // The spec's own §1.3 error (no domain, no target): conforming, with a notice.
    let stream = numbered(&[
        &meta(),
        r#"{"type":"aoi:error","category":"authn","code":"INTERACTIVE_REQUIRED","message":"Interactive authentication required.","retryable":false,"hint":"outline auth login"}"#,
        &summary(r#""ok":false,"reason":"failed","count":0,"error_count":1"#),
    ]);
    assert_conforming(
        &verify(stream),
        Verdict::Failed,
        &[(FindingCode::ErrorDomainMissing, N, Some(2))],
    );
    // A gRPC status named rather than numbered, mapped to another category than the tool's.
    let stream = with_item_error(
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"internal","code":"X","message":"m","retryable":false,"item_index":0,"wrapped":{"protocol":"grpc","code":"NOT_FOUND"}}"#,
    );
    assert_conforming(
        &verify(stream),
        Verdict::Succeeded,
        &[(FindingCode::WrappedMappingDiffers, N, Some(2))],
    );
}

#[test]
fn a_run_id_is_read_as_a_ulid_in_either_case_and_nothing_else() {
    for (run, ulid) in [
        ("01JZQ7X4TQ9V5R8K2M3N6P7S4W", true),
        ("01jzq7x4tq9v5r8k2m3n6p7s4w", true),
        ("7ZZZZZZZZZZZZZZZZZZZZZZZZZ", true),
        ("8ZZZZZZZZZZZZZZZZZZZZZZZZZ", false),
        ("01JZQ7X4TQ9V5R8K2M3N6P7S4", false),
        ("01JZQ7X4TQ9V5R8K2M3N6P7S4WX", false),
        ("01JZQ7X4TQ9V5R8K2M3N6P7SLU", false),
        ("01JZQ7X4TQ9", false),
        ("0196f3a2-7c1e-7b3d-9a4e-2f6c8d1b5e7a", false),
    ] {
        let stream = baseline().replace(RUN, run);
        let expected: &[Seen] = if ulid {
            &[]
        } else {
            &[(FindingCode::RunNotUlid, N, Some(1))]
        };
        assert_conforming(&verify(stream), Verdict::Succeeded, expected);
    }
}

#[test]
fn error_and_warning_field_types_follow_9_1() {
    use FindingCode as C;
    let bad = [
        r#""origin":7"#,
        r#""details":"x""#,
        r#""target":["/a"]"#,
        r#""domain":1"#,
        r#""hint":true"#,
        r#""docs":{}"#,
        r#""field":0"#,
        r#""wrapped":{"protocol":"http","status":[503]}"#,
        r#""properties":1"#,
    ];
    for extra in bad {
        // The recommended `domain` is there, unless it is the field under test.
        let domain = if extra.starts_with(r#""domain""#) {
            ""
        } else {
            r#""domain":"outline","#
        };
        let error = format!(
            r#"{{"type":"aoi:error","item_index":0,{domain}"scope":"item","category":"io","code":"X","message":"m","retryable":false,{extra}}}"#
        );
        let stream = numbered(&[
            &meta(),
            &error,
            &summary(r#""ok":true,"count":0,"error_count":1"#),
        ]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(C::ErrorFieldInvalid, V, Some(2))],
        );
        let warning = format!(r#"{{"type":"aoi:warning","code":"W","message":"m",{extra}}}"#);
        let stream = numbered(&[
            &meta(),
            &warning,
            &summary(r#""ok":true,"count":0,"warning_count":1"#),
        ]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(C::WarningFieldInvalid, V, Some(2))],
        );
    }
    for warning in [
        r#"{"type":"aoi:warning","code":"w","message":"m"}"#,
        r#"{"type":"aoi:warning","message":"two\nlines"}"#,
        r#"{"type":"aoi:warning","message":5}"#,
        r#"{"type":"aoi:warning","message":"m","line_number":-1}"#,
    ] {
        let stream = numbered(&[
            &meta(),
            warning,
            &summary(r#""ok":true,"count":0,"warning_count":1"#),
        ]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(C::WarningFieldInvalid, V, Some(2))],
        );
    }
}

#[test]
fn a_forwarded_error_with_a_non_string_origin_is_a_violation_and_still_forwarded() {
    // A non-string origin must not make a forwarded error count as a local process error.
    let error = r#"{"type":"aoi:error","domain":"outline","category":"unavailable","code":"DOWN","message":"m","retryable":true,"origin":{"tool":"up"}}"#;
    let stream = numbered(&[
        &meta(),
        error,
        &summary(r#""ok":true,"count":0,"error_count":1"#),
    ]);
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[(FindingCode::ErrorFieldInvalid, V, Some(2))],
    );
}

#[test]
fn every_identity_field_must_agree_between_meta_and_summary() {
    // One run has one identity (§5); tool_version is no exception.
    let other = IDENTITY.replace("1.8.2", "1.8.3");
    let stream = numbered(&[
        &meta(),
        &format!(r#"{{"type":"aoi:summary","ok":true,"count":0,{other}}}"#),
    ]);
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[(FindingCode::IdentityMismatch, V, Some(2))],
    );
}

#[test]
fn a_repeated_key_on_a_framework_event_is_a_violation_wherever_it_is() {
    for body in [
        r#""ok":true,"count":0,"count":0"#,
        r#""ok":false,"reason":"failed","count":0,"caused_by":{"category":"io","code":"X","retryable":false,"retryable":true}"#,
    ] {
        let stream = numbered(&[&meta(), &summary(body)]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(FindingCode::DuplicateKey, V, Some(2))],
        );
    }
}

#[test]
fn a_nonzero_exit_fails_an_unbounded_stream_and_exit_0_leaves_it_unterminated() {
    let opts = VerifyOptions {
        unbounded: true,
        ..VerifyOptions::default()
    };
    let stream = numbered(&[&meta(), HIT]);
    let run = |end| {
        let mut v = Verifier::new(opts);
        let mut reader = LineReader::new(stream.as_bytes());
        while let Some(frame) = reader.next().unwrap() {
            v.frame(frame);
        }
        v.finish(end)
    };
    assert_eq!(
        run(Some(ProcessEnd::Exited(0))).verdict,
        Verdict::Unterminated
    );
    assert_eq!(run(None).verdict, Verdict::Unterminated);
    assert_eq!(run(Some(ProcessEnd::Exited(2))).verdict, Verdict::Failed);
    assert_eq!(run(Some(ProcessEnd::Signaled(15))).verdict, Verdict::Failed);
}

#[test]
fn the_report_carries_the_typed_results_a_consumer_acts_on() {
    let stream = numbered(&[
        &meta(),
        HIT,
        ITEM_ERROR,
        PROCESS_ERROR,
        &summary(r#""ok":false,"reason":"failed","count":1,"error_count":2"#),
    ]);
    let opts = VerifyOptions {
        keep_events: true,
        ..VerifyOptions::default()
    };
    let report = verify_with(stream.as_bytes(), opts, crate::read::DEFAULT_MAX_LINE, None);
    assert_eq!(report.verdict, Verdict::Failed);
    // The first process-scope error, not the item error before it.
    let error = report.process_error.expect("the process error");
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("BOOM", "it broke")
    );
    let upstream = report.upstream.expect("the producer's identity");
    assert_eq!(upstream.tool.as_deref(), Some("outline"));
    assert_eq!(upstream.schema_version.as_deref(), Some("1.0.0"));
    let kinds: Vec<&str> = report.events.iter().map(|e| e.event_type()).collect();
    assert_eq!(
        kinds,
        ["aoi:meta", "hit", "aoi:error", "aoi:error", "aoi:summary"]
    );
    // Not asked for, not kept.
    assert!(verify(baseline()).events.is_empty());
}

#[test]
fn a_line_a_relay_could_not_forward_is_a_violation() {
    let mut v = Verifier::new(VerifyOptions::default());
    for (i, line) in baseline().lines().enumerate() {
        v.line(i as u64 + 1, line.as_bytes());
    }
    v.not_relayed(2, 1 << 27);
    let report = v.finish(None);
    assert_report(
        &report,
        Verdict::Violation,
        &[(FindingCode::LineNotRelayed, V, Some(2))],
    );
}

#[test]
fn an_unbounded_stream_ended_by_a_process_scope_error_failed() {
    let opts = VerifyOptions {
        unbounded: true,
        ..VerifyOptions::default()
    };
    let stream = numbered(&[&meta(), HIT, PROCESS_ERROR]);
    let report = verify_with(stream.as_bytes(), opts, crate::read::DEFAULT_MAX_LINE, None);
    assert_report(
        &report,
        Verdict::Failed,
        &[(FindingCode::SummaryMissing, N, None)],
    );
    assert_eq!(
        report
            .caused_by
            .map(|c| c.code.as_str().to_owned())
            .as_deref(),
        Some("BOOM")
    );
}

#[test]
fn empty_stdout_is_an_honest_failure_only_with_a_nonzero_exit() {
    assert_report(
        &ended("", ProcessEnd::Exited(64)),
        Verdict::Failed,
        &[(FindingCode::StreamNotStarted, N, None)],
    );
    assert_report(
        &ended("", ProcessEnd::Exited(0)),
        Verdict::Violation,
        &[(FindingCode::SummaryMissing, V, None)],
    );
}

#[test]
fn unbounded_streams_may_end_without_a_summary() {
    let stream = numbered(&[
        &meta(),
        HIT,
        r#"{"type":"aoi:heartbeat","interval_ms":1000}"#,
        HIT,
    ]);
    let unbounded = VerifyOptions {
        unbounded: true,
        ..VerifyOptions::default()
    };
    let report = Verifier::verify_bytes(stream.as_bytes(), unbounded);
    assert_conforming(
        &report,
        Verdict::Unterminated,
        &[(FindingCode::SummaryMissing, N, None)],
    );
    // The same bytes from a finite command are a violation.
    assert_report(
        &verify(&stream),
        Verdict::Violation,
        &[(FindingCode::SummaryMissing, V, None)],
    );
    // Unbounded does not excuse a cut line.
    let cut = stream.trim_end_matches('\n');
    assert_report(
        &Verifier::verify_bytes(cut.as_bytes(), unbounded),
        Verdict::Violation,
        &[
            (FindingCode::TruncatedLine, V, Some(4)),
            (FindingCode::SummaryMissing, N, None),
        ],
    );
}

#[test]
fn an_unbounded_stream_cancelled_gracefully_is_an_honest_failure() {
    let stream = numbered(&[
        &meta(),
        HIT,
        &summary(r#""ok":false,"reason":"cancelled","count":1"#),
    ]);
    let unbounded = VerifyOptions {
        unbounded: true,
        ..VerifyOptions::default()
    };
    let report = Verifier::verify_bytes(stream.as_bytes(), unbounded);
    assert_conforming(&report, Verdict::Failed, &[]);
}

// ---------------------------------------------------------------------------------------------
// Counters (§8.1, §8.3).
// ---------------------------------------------------------------------------------------------

#[test]
fn count_counts_domain_events_only() {
    let bodies = [
        meta(),
        HIT.to_owned(),
        r#"{"type":"aoi:check","name":"config_file","ok":true}"#.to_owned(),
        WARNING.to_owned(),
        ITEM_ERROR.to_owned(),
        r#"{"type":"aoi:progress","completed":1}"#.to_owned(),
        r#"{"type":"aoi:plan","action":"delete"}"#.to_owned(),
        r#"{"type":"aoi:heartbeat"}"#.to_owned(),
        HIT.to_owned(),
    ];
    for (count, expected) in [
        (2, vec![]),
        (9, vec![(FindingCode::CountMismatch, V, Some(10))]),
        (1, vec![(FindingCode::CountMismatch, V, Some(10))]),
    ] {
        let fields = format!(
            r#""ok":true,"count":{count},"error_count":1,"warning_count":1,"partial":true"#
        );
        let mut all: Vec<&str> = bodies.iter().map(String::as_str).collect();
        let last = summary(&fields);
        all.push(&last);
        let report = verify(numbered(&all));
        let verdict = if expected.is_empty() {
            Verdict::Succeeded
        } else {
            Verdict::Violation
        };
        assert_report(&report, verdict, &expected);
        assert_eq!(
            (report.domain_events, report.errors, report.warnings),
            (2, 1, 1)
        );
    }
}

#[test]
fn error_and_warning_counts_may_exceed_what_was_seen_but_never_fall_below() {
    // Upstream errors and warnings consumed and not forwarded are still counted (§8.3).
    let stream = numbered(&[
        &meta(),
        WARNING,
        ITEM_ERROR,
        HIT,
        &summary(r#""ok":true,"count":1,"error_count":4,"warning_count":7,"partial":true"#),
    ]);
    assert_conforming(&verify(stream), Verdict::Succeeded, &[]);

    let stream = numbered(&[
        &meta(),
        WARNING,
        WARNING,
        ITEM_ERROR,
        ITEM_ERROR,
        HIT,
        &summary(r#""ok":true,"count":1,"error_count":1,"warning_count":1,"partial":true"#),
    ]);
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[
            (FindingCode::ErrorCountMismatch, V, Some(7)),
            (FindingCode::WarningCountMismatch, V, Some(7)),
        ],
    );
}

#[test]
fn event_count_equals_the_lines_through_the_summary() {
    for (event_count, expected) in [
        (3, vec![]),
        (2, vec![(FindingCode::EventCountMismatch, V, Some(3))]),
        (4, vec![(FindingCode::EventCountMismatch, V, Some(3))]),
        // Counting from zero like seq is the classic off-by-one.
        (0, vec![(FindingCode::EventCountMismatch, V, Some(3))]),
    ] {
        let fields = format!(r#""ok":true,"count":1,"event_count":{event_count}"#);
        let stream = numbered(&[&meta(), HIT, &summary(&fields)]);
        let verdict = if expected.is_empty() {
            Verdict::Succeeded
        } else {
            Verdict::Violation
        };
        assert_report(&verify(stream), verdict, &expected);
    }
}

#[test]
fn a_stray_line_the_producer_did_not_number_is_no_seq_gap_and_no_line_loss() {
    // §2 breaks once (the prose line); seq and event_count follow the producer's numbering of
    // its events, which the line did not take part in (§8.1, §8.3).
    let events = numbered(&[
        &meta(),
        HIT,
        &summary(r#""ok":true,"count":1,"event_count":3"#),
    ]);
    let mut lines: Vec<&str> = events.lines().collect();
    lines.insert(2, "saved 1 record");
    let stream = lines.join("\n") + "\n";
    assert_report(
        &verify(&stream),
        Verdict::Violation,
        &[
            (FindingCode::InvalidJson, V, Some(3)),
            (FindingCode::EventCountMismatch, N, Some(4)),
        ],
    );
    // A line that did take a number (a cut event) is still a gap when the next one skips.
    let mut cut: Vec<&str> = events.lines().collect();
    cut[1] = "{\"type\":\"hit\",\"aoi\":{\"se";
    let stream = cut.join("\n") + "\n";
    let report = verify(&stream);
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.code == FindingCode::SeqGap || f.code == FindingCode::EventCountMismatch),
        "{:?}",
        report.findings
    );
}

#[test]
fn middle_elision_is_detected_although_the_summary_survives() {
    // §8.1: an agent harness keeps head and tail of a 10-line stream and drops line 3.
    let mut bodies: Vec<String> = vec![meta()];
    bodies.extend((1..=8).map(|rank| format!(r#"{{"type":"hit","rank":{rank}}}"#)));
    bodies.push(summary(r#""ok":true,"count":8"#));
    let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let whole = numbered(&bodies);
    assert_eq!(whole.lines().count(), 10);
    assert_conforming(&verify(&whole), Verdict::Succeeded, &[]);

    let elided = delete_line(&whole, 3);
    let report = verify(&elided);
    assert_report(
        &report,
        Verdict::Violation,
        &[
            (FindingCode::SeqGap, V, Some(3)),
            (FindingCode::EventCountMismatch, V, Some(9)),
            (FindingCode::CountMismatch, V, Some(9)),
        ],
    );
    // The summary itself still reads ok:true: only the reconciliation catches the loss.
    assert_eq!(report.summary.map(|s| s.ok), Some(true));
}

#[test]
fn middle_elision_of_a_framework_line_is_still_detected() {
    let whole = numbered(&[
        &meta(),
        HIT,
        WARNING,
        HIT,
        &summary(r#""ok":true,"count":2,"warning_count":1"#),
    ]);
    assert_report(
        &verify(delete_line(&whole, 3)),
        Verdict::Violation,
        &[
            (FindingCode::SeqGap, V, Some(3)),
            (FindingCode::EventCountMismatch, V, Some(4)),
        ],
    );
}

#[test]
fn a_duplicated_line_is_a_seq_gap() {
    let whole = numbered(&[&meta(), HIT, &summary(r#""ok":true,"count":1"#)]);
    let line2 = whole.lines().nth(1).expect("line 2");
    let duplicated = whole.replacen(line2, &format!("{line2}\n{line2}"), 1);
    assert_report(
        &verify(duplicated),
        Verdict::Violation,
        &[
            (FindingCode::SeqGap, V, Some(3)),
            (FindingCode::EventCountMismatch, V, Some(4)),
            (FindingCode::CountMismatch, V, Some(4)),
        ],
    );
}

#[test]
fn seq_on_later_lines_but_not_the_first_is_missing() {
    let stream = format!(
        "{}\n{}\n{}\n",
        meta(),
        r#"{"type":"hit","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"}}"#,
        summary(r#""ok":true,"count":1,"event_count":3"#),
    );
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[
            (FindingCode::SeqMissing, V, Some(2)),
            (FindingCode::SeqAbsent, N, None),
        ],
    );
}

#[test]
fn summary_field_types_are_checked() {
    for fields in [
        r#""ok":true,"count":1,"event_count":"3""#,
        r#""ok":true,"count":1,"error_count":-1"#,
        r#""ok":true,"count":1,"elapsed_ms":1.5"#,
        r#""ok":true,"count":1,"partial":"no""#,
        r#""ok":true,"count":1,"truncated":1"#,
        r#""ok":true,"count":1,"next_cursor":5"#,
    ] {
        let stream = numbered(&[&meta(), HIT, &summary(fields)]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(FindingCode::SummaryFieldInvalid, V, Some(3))],
        );
    }
}

#[test]
fn caused_by_is_checked_field_by_field_with_the_rules_of_9_1() {
    use FindingCode as C;
    let cases: [(&str, &[FindingCode]); 6] = [
        (
            r#"{"category":"rate_limited"}"#,
            &[C::CausedByInvalid, C::CausedByInvalid],
        ),
        (
            r#"{"category":"temporary","code":"X","retryable":true}"#,
            &[C::V02CategoryTemporary],
        ),
        (r#""rate_limited""#, &[C::CausedByInvalid]),
        (
            r#"{"category":"rate_limited","code":"X","retryable":false,"retry_after_ms":5}"#,
            &[C::RetryAfterNotRetryable],
        ),
        (
            r#"{"category":"rate_limited","code":"X","retryable":true,"retry_after_ms":-5}"#,
            &[C::RetryAfterInvalid],
        ),
        (
            r#"{"category":"rate_limited","code":"X","retryable":true,"origin":7}"#,
            &[C::CausedByInvalid],
        ),
    ];
    for (cause, codes) in cases {
        let fields = format!(r#""ok":false,"reason":"failed","count":1,"caused_by":{cause}"#);
        let stream = numbered(&[&meta(), HIT, &summary(&fields)]);
        let expect: Vec<Seen> = codes.iter().map(|c| (*c, V, Some(3))).collect();
        assert_report(&verify(stream), Verdict::Violation, &expect);
    }
}

#[test]
fn an_unknown_category_in_caused_by_follows_the_stream_version_as_on_the_error() {
    // §9.4 applies inside caused_by too: a notice (routed as internal) in a newer-minor stream,
    // a violation in one that declares exactly v1.0-alpha.
    let newer = IDENTITY.replace("1.0-alpha", "1.1");
    let error = r#"{"type":"aoi:error","domain":"outline","category":"quota_exhausted","code":"QUOTA","message":"m","retryable":false,"origin":"up"}"#;
    let cause = r#""caused_by":{"origin":"up","category":"quota_exhausted","code":"QUOTA","retryable":false}"#;
    let body = format!(r#""ok":false,"reason":"failed","count":0,"error_count":1,{cause}"#);
    let stream = numbered(&[
        &format!(r#"{{"type":"aoi:meta",{newer}}}"#),
        error,
        &format!(r#"{{"type":"aoi:summary",{body},{newer}}}"#),
    ]);
    let report = verify(stream);
    assert_conforming(
        &report,
        Verdict::Failed,
        &[
            (FindingCode::ErrorCategoryInvalid, N, Some(2)),
            (FindingCode::ErrorCategoryInvalid, N, Some(3)),
        ],
    );
    let cause = report.summary.and_then(|s| s.caused_by).expect("decoded");
    assert_eq!(cause.category, Category::Internal);
    // Forwarded (with `origin`), the category is the origin's: a notice even in a v1.0-alpha
    // stream, so a transformer can pass a newer upstream's error on unchanged.
    let stream = numbered(&[&meta(), error, &summary(&body)]);
    assert_conforming(
        &verify(stream),
        Verdict::Failed,
        &[
            (FindingCode::ErrorCategoryInvalid, N, Some(2)),
            (FindingCode::ErrorCategoryInvalid, N, Some(3)),
        ],
    );
    // Raised by the producer itself, it is held to the closed enum.
    let local = error.replace(r#","origin":"up""#, "");
    let local_cause = body.replace(r#""origin":"up","#, "");
    let stream = numbered(&[&meta(), &local, &summary(&local_cause)]);
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[
            (FindingCode::ErrorCategoryInvalid, V, Some(2)),
            (FindingCode::ErrorCategoryInvalid, V, Some(3)),
        ],
    );
}

#[test]
fn upstream_is_omitted_when_unknown_never_null() {
    // §13.1 "the producer MUST omit the upstream key rather than emit nulls".
    for upstream in [
        "null",
        r#"{"tool":null}"#,
        r#"{"tool":"outline","tool_version":null}"#,
        r#"{"tool":"outline","schema_version":1}"#,
        r#""outline""#,
    ] {
        let fields = format!(r#""ok":true,"count":0,"upstream":{upstream}"#);
        let stream = numbered(&[&meta(), &summary(&fields)]);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(FindingCode::UpstreamInvalid, V, Some(2))],
        );
    }
}

#[test]
fn a_summary_that_does_not_decode_is_never_a_verdict_of_unterminated() {
    // Whatever the summary holds, a finite stream that has one is judged on it.
    let stream = numbered(&[
        &meta(),
        HIT,
        &summary(r#""ok":true,"count":1,"properties":[1]"#),
    ]);
    let report = verify(stream);
    assert_report(
        &report,
        Verdict::Violation,
        &[(FindingCode::SummaryFieldInvalid, V, Some(3))],
    );
    // A non-string identity field is incomplete identity, and also no summary one can decode.
    let stream = numbered(&[
        &meta(),
        r#"{"type":"aoi:summary","ok":true,"tool":"outline","tool_version":5,"aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0"}"#,
    ]);
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[
            (FindingCode::IdentityIncomplete, N, Some(2)),
            (FindingCode::IdentityMismatch, V, Some(2)),
        ],
    );
}

#[test]
fn upstream_belongs_on_the_summary_not_on_the_meta() {
    // §13.1 "Provenance lives on the summary, not the meta": a tool addition on meta.
    let stream = numbered(&[
        &format!(r#"{{"type":"aoi:meta",{IDENTITY},"upstream":{{"tool":"outline"}}}}"#),
        &summary(r#""ok":true,"count":0,"upstream":{"tool":"outline"}"#),
    ]);
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[(FindingCode::FrameworkExtraField, V, Some(1))],
    );
}

#[test]
fn error_fields_are_checked() {
    for error in [
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"X","message":"m","retryable":false,"target":"x","line_number":-3}"#,
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"X","message":"m","retryable":false,"target":"x","item_index":0,"wrapped":{"protocol":"ftp"}}"#,
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"not_found","code":"X","message":"m","retryable":false,"target":"x","item_index":0,"wrapped":"http 404"}"#,
    ] {
        let stream = with_item_error(error);
        assert_report(
            &verify(stream),
            Verdict::Violation,
            &[(FindingCode::ErrorFieldInvalid, V, Some(2))],
        );
    }
    // A bad scope is also a process error: the run is over, so ok:true contradicts it.
    let stream = with_item_error(
        r#"{"type":"aoi:error","domain":"outline","scope":"global","category":"not_found","code":"X","message":"m","retryable":false,"target":"x"}"#,
    );
    assert_report(
        &verify(stream),
        Verdict::Violation,
        &[
            (FindingCode::ErrorFieldInvalid, V, Some(2)),
            (FindingCode::OkAfterProcessError, V, Some(3)),
        ],
    );
}

#[test]
fn the_worst_error_explains_the_failure() {
    let stream = numbered(&[
        &meta(),
        ITEM_ERROR,
        r#"{"type":"aoi:error","domain":"outline","category":"rate_limited","code":"QUOTA","message":"m","retryable":true,"retry_after_ms":4500}"#,
        r#"{"type":"aoi:error","domain":"outline","scope":"item","category":"io","code":"LATER","message":"m","retryable":false,"item_index":1}"#,
        &summary(r#""ok":false,"reason":"failed","count":0,"error_count":3"#),
    ]);
    let report = verify(stream);
    assert_conforming(&report, Verdict::Failed, &[]);
    let caused_by = report.caused_by.expect("caused_by");
    assert_eq!(
        caused_by.code.as_str(),
        "QUOTA",
        "process scope beats item scope"
    );
    assert_eq!(caused_by.retry_after_ms, Some(4500));
    assert_eq!(report.errors, 3);
}

// ---------------------------------------------------------------------------------------------
// The process's exit status (§4.1, §6).
// ---------------------------------------------------------------------------------------------

fn ended(stream: &str, end: ProcessEnd) -> Report {
    verify_with(
        stream.as_bytes(),
        VerifyOptions::default(),
        crate::read::DEFAULT_MAX_LINE,
        Some(end),
    )
}

#[test]
fn ok_true_with_a_nonzero_exit_is_a_violation() {
    let report = ended(&baseline(), ProcessEnd::Exited(3));
    assert_report(
        &report,
        Verdict::Violation,
        &[(FindingCode::ExitStatusMismatch, V, None)],
    );
    assert_conforming(
        &ended(&baseline(), ProcessEnd::Exited(0)),
        Verdict::Succeeded,
        &[],
    );
}

#[test]
fn ok_false_with_exit_zero_is_only_a_notice() {
    let failed = numbered(&[
        &meta(),
        &summary(r#""ok":false,"reason":"failed","count":0"#),
    ]);
    assert_conforming(
        &ended(&failed, ProcessEnd::Exited(0)),
        Verdict::Failed,
        &[(FindingCode::ExitStatusMismatch, N, None)],
    );
    assert_conforming(&ended(&failed, ProcessEnd::Exited(1)), Verdict::Failed, &[]);
}

#[test]
fn a_killed_producer_without_summary_failed_and_the_report_names_the_signal() {
    // §4: a summary is owed by a process that exits under its own control; a kill is not that.
    let stream = numbered(&[&meta(), HIT]);
    let report = ended(&stream, ProcessEnd::Signaled(9));
    assert_report(
        &report,
        Verdict::Failed,
        &[
            (FindingCode::SummaryMissing, N, None),
            (FindingCode::ProcessFailed, N, None),
        ],
    );
    assert!(
        report.findings[0].message.contains("signal 9"),
        "{}",
        listing(&report)
    );
}

// ---------------------------------------------------------------------------------------------
// The findings cap.
// ---------------------------------------------------------------------------------------------

#[test]
fn findings_beyond_the_cap_are_counted_not_kept() {
    let garbage = "garbage\n".repeat(5000);
    let opts = VerifyOptions {
        unbounded: false,
        max_findings: 100,
        ..VerifyOptions::default()
    };
    let report = Verifier::verify_bytes(garbage.as_bytes(), opts);
    assert_eq!(report.verdict, Verdict::Violation);
    assert_eq!(report.findings.len(), 100);
    // 5000 invalid lines, then META_MISSING (notice) and SUMMARY_MISSING.
    assert_eq!(report.findings.len() as u64 + report.suppressed, 5002);
    assert_eq!(report.violations, 5001);
    assert_eq!(report.lines, 5000);
    for (i, f) in report.findings.iter().enumerate() {
        assert_eq!(
            (f.code, f.level, f.line),
            (FindingCode::InvalidJson, V, Some(i as u64 + 1))
        );
    }

    let none_kept = VerifyOptions {
        unbounded: false,
        max_findings: 0,
        ..VerifyOptions::default()
    };
    let report = Verifier::verify_bytes(garbage.as_bytes(), none_kept);
    assert!(report.findings.is_empty());
    assert_eq!((report.suppressed, report.violations), (5002, 5001));
    assert_eq!(report.verdict, Verdict::Violation);
}

#[test]
fn an_unknown_category_from_a_later_1x_producer_is_only_a_notice() {
    let later = IDENTITY.replace("1.0-alpha", "1.1");
    let stream = numbered(&[
        &format!(r#"{{"type":"aoi:meta",{later}}}"#),
        r#"{"type":"aoi:error","item_index":0,"domain":"outline","scope":"item","category":"quota_exceeded","code":"Q","message":"m","retryable":true}"#,
        &format!(r#"{{"type":"aoi:summary","ok":true,"count":0,"error_count":1,{later}}}"#),
    ]);
    let report = Verifier::verify_bytes(stream.as_bytes(), VerifyOptions::default());
    assert_eq!(report.verdict, Verdict::Succeeded, "{:?}", report.findings);
    assert!(report
        .findings
        .iter()
        .any(|f| f.code == FindingCode::ErrorCategoryInvalid && f.level == Level::Notice));
    // The same error from a producer claiming exactly 1.0-alpha breaks the closed enum.
    let strict = stream.replace(&later, IDENTITY);
    let report = Verifier::verify_bytes(strict.as_bytes(), VerifyOptions::default());
    assert_eq!(report.verdict, Verdict::Violation);
}

// ---------------------------------------------------------------------------------------------
// Schema validation on worker threads reports exactly what one thread does.
// ---------------------------------------------------------------------------------------------

/// Verifies `input` against `schema`, validating domain events on `workers` threads fed batches
/// of `batch_bytes` (`workers` 0: in the verifier's own thread, the reference).
fn verify_schema_on(
    input: &[u8],
    opts: VerifyOptions,
    schema: &serde_json::Value,
    workers: usize,
    batch_bytes: usize,
) -> Report {
    let mut reader = LineReader::with_max_line(input, 4096);
    let mut verifier = Verifier::new(opts)
        .with_schema(schema)
        .expect("the test schema compiles")
        .schema_workers(schema, workers, batch_bytes);
    while let Some(frame) = reader.next().expect("reading a slice cannot fail") {
        verifier.frame(frame);
    }
    verifier.finish(None)
}

/// Bytes of every domain line the pool is sent in [`schema_stream`], so a batch of
/// `k * DOMAIN_LINE` bytes ends exactly on every `k`-th of them.
const DOMAIN_LINE: usize = 160;

/// A domain line padded to exactly [`DOMAIN_LINE`] bytes (its CR, if any, excluded).
fn padded(seq: u64, fields: &str) -> String {
    let head = format!(r#"{{"aoi":{{"seq":{seq},"run":"{RUN}"}},"type":"hit",{fields},"pad":""#);
    let tail = "\"}";
    let fill = DOMAIN_LINE
        .checked_sub(head.len() + tail.len())
        .expect("the fields fit in a padded line");
    format!("{head}{}{tail}", "x".repeat(fill))
}

/// A stream of `n` lines mixing valid and invalid events of every kind the verifier and the
/// schema disagree on. Every 10th domain line sent to the pool (counting from 0) breaks the
/// schema, and so does the one after it, so with batches of `10 * DOMAIN_LINE` bytes invalid
/// events sit on both sides of every batch boundary. `meta` is the first line's body.
fn schema_stream(n: u64, meta: &str) -> (String, Vec<u64>) {
    let mut out = String::new();
    let mut sent = 0u64;
    // Lines whose domain event breaks the schema.
    let mut invalid = Vec::new();
    let mut seq = 0u64;
    for number in 1..=n {
        let line = if number == 1 {
            number_line(meta, seq)
        } else if number.is_multiple_of(211) {
            // A framework event the verifier and the schema both reject: no `message`.
            number_line(r#"{"type":"aoi:warning","code":"INDEX_STALE"}"#, seq)
        } else if number.is_multiple_of(173) {
            // Not JSON: the verifier's own finding, never sent to the pool.
            format!(r#"{{"aoi":{{"seq":{seq},"run":"{RUN}"}},"type":"hit","rank":"#)
        } else if number.is_multiple_of(389) {
            // A seq gap on a valid hit: a finding of the verifier's own.
            seq += 3;
            number_line(HIT, seq)
        } else {
            let d = sent;
            sent += 1;
            let bad = d.is_multiple_of(10) || d % 10 == 9 || d % 37 == 5;
            let fields = if !bad && d % 13 == 4 {
                // A repeated key: the last one counts, as in `serde_json::Value`.
                format!(r#""rank":"first","rank":{d},"id":"doc_{d}","title":"t""#)
            } else if !bad {
                format!(r#""rank":{d},"id":"doc_{d}","title":"t""#)
            } else if d.is_multiple_of(6) {
                format!(r#""rank":{d},"rank":"first","id":"doc_{d}","title":"t""#)
            } else if d.is_multiple_of(3) {
                format!(r#""rank":"first","id":"doc_{d}","title":"t""#)
            } else if d % 3 == 1 {
                // Three errors: the message says "(and 2 more)".
                format!(r#""rank":-1,"id":{d}"#)
            } else {
                // Escaped ANSI: the verifier's notice and the schema's violation on one line.
                format!(r#""rank":0.5,"id":"doc_{d}","title":"\u001b[1m""#)
            };
            if bad {
                invalid.push(number);
            }
            let mut line = padded(seq, &fields);
            if number.is_multiple_of(97) {
                // CRLF: a notice on the same line as a schema finding, or not.
                line.push('\r');
            }
            line
        };
        out.push_str(&line);
        out.push('\n');
        seq += 1;
    }
    (out, invalid)
}

/// One line of `body` (a JSON object) with `aoi.seq` `seq`.
fn number_line(body: &str, seq: u64) -> String {
    let rest = body.strip_prefix('{').expect("a body is a JSON object");
    format!(r#"{{"aoi":{{"seq":{seq},"run":"{RUN}"}},{rest}"#)
}

#[test]
fn schema_workers_report_exactly_what_one_thread_reports() {
    let schema = hit_schema("1.0.0");
    // 4,003 lines: the last batch of 10 domain lines is partial.
    let (stream, invalid) = schema_stream(4003, &meta());
    let opts = VerifyOptions {
        unbounded: false,
        max_findings: 100_000,
        ..VerifyOptions::default()
    };
    let reference = verify_schema_on(stream.as_bytes(), opts, &schema, 0, 0);
    // The reference itself is what the stream was built to produce.
    let schema_lines: Vec<u64> = reference
        .findings
        .iter()
        .filter(|f| f.code == FindingCode::EventSchemaInvalid)
        .filter_map(|f| f.line)
        .filter(|line| !line.is_multiple_of(211))
        .collect();
    assert_eq!(schema_lines, invalid);
    assert!(
        invalid.contains(&4003) || invalid.contains(&4002),
        "{invalid:?}"
    );
    assert!(reference
        .findings
        .iter()
        .any(|f| f.code == FindingCode::CrlfLineEnding));
    assert!(reference
        .findings
        .iter()
        .any(|f| f.code == FindingCode::AnsiEscape));
    assert!(reference
        .findings
        .iter()
        .any(|f| f.code == FindingCode::SeqGap));
    assert!(reference
        .findings
        .iter()
        .any(|f| f.code == FindingCode::InvalidJson));
    assert!(reference
        .findings
        .iter()
        .any(|f| f.message.ends_with("(and 2 more)")));
    assert_eq!(reference.suppressed, 0);
    for (workers, batch) in [
        (1, 1),
        (2, 1),
        (2, 10 * DOMAIN_LINE),
        (3, 10 * DOMAIN_LINE),
        (4, 7 * DOMAIN_LINE),
        (2, 4096),
        (2, schema_pool::DEFAULT_BATCH_BYTES),
    ] {
        let threaded = verify_schema_on(stream.as_bytes(), opts, &schema, workers, batch);
        assert_eq!(
            threaded, reference,
            "{workers} worker(s), batches of {batch} bytes"
        );
    }
}

#[test]
fn schema_workers_apply_the_findings_cap_to_the_merged_order() {
    let schema = hit_schema("1.0.0");
    let (stream, _) = schema_stream(3001, &meta());
    for max_findings in [0, 1, 2, 3, 5, 37, 200] {
        let opts = VerifyOptions {
            unbounded: false,
            max_findings,
            ..VerifyOptions::default()
        };
        let reference = verify_schema_on(stream.as_bytes(), opts, &schema, 0, 0);
        assert_eq!(reference.findings.len(), max_findings);
        assert!(reference.suppressed > 0);
        for (workers, batch) in [(1, 1), (2, 10 * DOMAIN_LINE), (3, 4096)] {
            let threaded = verify_schema_on(stream.as_bytes(), opts, &schema, workers, batch);
            assert_eq!(
                threaded, reference,
                "max_findings {max_findings}, {workers} worker(s), batches of {batch} bytes"
            );
        }
    }
}

#[test]
fn schema_workers_skip_domain_events_once_the_meta_names_another_schema() {
    let schema = hit_schema("1.0.0");
    // The meta speaks 2.0.0: a major difference, so domain events are not interpreted (§5),
    // framework events still are.
    let other = meta().replace(r#""schema_version":"1.0.0""#, r#""schema_version":"2.0.0""#);
    let (stream, _) = schema_stream(2503, &other);
    let opts = VerifyOptions::default();
    let reference = verify_schema_on(stream.as_bytes(), opts, &schema, 0, 0);
    assert!(reference
        .findings
        .iter()
        .any(|f| f.code == FindingCode::SchemaIdentityMismatch));
    let schema_lines: Vec<u64> = reference
        .findings
        .iter()
        .filter(|f| f.code == FindingCode::EventSchemaInvalid)
        .filter_map(|f| f.line)
        .collect();
    assert!(!schema_lines.is_empty());
    assert!(
        schema_lines.iter().all(|line| line.is_multiple_of(211)),
        "{schema_lines:?}"
    );

    // A meta that arrives late switches validation off for the lines after it only.
    let (mut late, _) = schema_stream(1200, &meta());
    let (tail, _) = schema_stream(1300, &other);
    late.push_str(&tail);
    let late_reference = verify_schema_on(late.as_bytes(), opts, &schema, 0, 0);
    let domain_lines: Vec<u64> = late_reference
        .findings
        .iter()
        .filter(|f| f.code == FindingCode::EventSchemaInvalid)
        .filter_map(|f| f.line)
        .filter(|&line| {
            !(line.is_multiple_of(211) || (line > 1200 && (line - 1200).is_multiple_of(211)))
        })
        .collect();
    assert!(domain_lines.iter().any(|&line| line < 1200));
    assert!(
        domain_lines.iter().all(|&line| line < 1201),
        "{domain_lines:?}"
    );

    for (workers, batch) in [(1, 1), (2, 10 * DOMAIN_LINE), (2, 4096)] {
        let threaded = verify_schema_on(stream.as_bytes(), opts, &schema, workers, batch);
        assert_eq!(
            threaded, reference,
            "{workers} worker(s), batches of {batch} bytes"
        );
        let threaded = verify_schema_on(late.as_bytes(), opts, &schema, workers, batch);
        assert_eq!(
            threaded, late_reference,
            "late meta, {workers} worker(s), batches of {batch}"
        );
    }
}

#[test]
fn a_verifier_dropped_before_finish_stops_its_schema_workers() {
    let schema = hit_schema("1.0.0");
    let (stream, _) = schema_stream(2000, &meta());
    let mut reader = LineReader::new(stream.as_bytes());
    let mut verifier = Verifier::new(VerifyOptions::default())
        .with_schema(&schema)
        .expect("the test schema compiles")
        .schema_workers(&schema, 2, 1);
    while let Some(frame) = reader.next().expect("reading a slice cannot fail") {
        verifier.frame(frame);
    }
    // Dropping joins the workers once they have drained the queue: this returns, not hangs.
    drop(verifier);
}

#[test]
fn every_known_framework_field_is_accepted_on_its_type() {
    // The fields docs/verifier.md lists for each type raise no FRAMEWORK_EXTRA_FIELD.
    let stream = numbered(&[
        &format!(
            r#"{{"type":"aoi:meta",{IDENTITY},"command":"search","args":["search"],"args_redacted":true,"input_fingerprint":"sha256:00"}}"#
        ),
        r#"{"type":"aoi:warning","code":"W","message":"m","origin":"up","target":"/a","domain":"d","item_index":1,"line_number":2,"field":"f","hint":"h","docs":"https://d","details":{},"scope":"item","retryable":false}"#,
        r#"{"type":"aoi:error","scope":"item","category":"not_found","code":"X","message":"m","retryable":true,"retry_after_ms":5,"domain":"d","origin":"up","target":"/a","item_index":1,"line_number":2,"field":"f","wrapped":{"protocol":"http","status":404},"hint":"h","docs":"https://d","details":{}}"#,
        r#"{"type":"aoi:check","name":"config","ok":true,"severity":"info","detail":"found","hint":"h"}"#,
        &summary(
            r#""ok":true,"reason":"skipped","count":0,"input_count":0,"warning_count":1,"error_count":1,"partial":false,"truncated":false,"next_cursor":null,"elapsed_ms":3,"upstream":{"tool":"up"},"properties":{"x":1}"#,
        ),
    ]);
    let report = verify(stream);
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.code == FindingCode::FrameworkExtraField),
        "{}",
        listing(&report)
    );
    assert_eq!(report.violations, 0, "{}", listing(&report));
}

#[test]
fn an_empty_upstream_is_only_a_notice() {
    let stream = numbered(&[&meta(), &summary(r#""ok":true,"count":0,"upstream":{}"#)]);
    assert_conforming(
        &verify(stream),
        Verdict::Succeeded,
        &[(FindingCode::UpstreamInvalid, N, Some(2))],
    );
}

#[test]
fn echoed_args_carry_no_sensitive_value_raw_whatever_marker_hides_it() {
    let with_args = |args: &str| {
        numbered(&[
            &format!(r#"{{"type":"aoi:meta",{IDENTITY},"command":"search","args":{args}}}"#),
            &summary(r#""ok":true,"count":0"#),
        ])
    };
    for raw in [
        r#"["search","--token","ghp_4f9a1c2e"]"#,
        r#"["search","--password=hunter2"]"#,
        r#"["search","--source","https://alice:hunter2@example.com/d"]"#,
        r#"["search","--source","https://example.com/d?sig=Zm9vYmFy"]"#,
    ] {
        let report = verify(with_args(raw));
        assert_report(
            &report,
            Verdict::Violation,
            &[(FindingCode::ArgsNotRedacted, V, Some(1))],
        );
        assert!(
            report
                .findings
                .iter()
                .all(|f| !f.message.contains("hunter2")),
            "a finding repeats the secret: {}",
            listing(&report)
        );
    }
    for hidden in [
        r#"["search","--token","[REDACTED]"]"#,
        r#"["search","--token","***"]"#,
        r#"["search","--password=<redacted>"]"#,
        r#"["search","agent operable","--limit","2"]"#,
    ] {
        assert_conforming(&verify(with_args(hidden)), Verdict::Succeeded, &[]);
    }
}

#[test]
fn a_next_cursor_without_truncated_true_is_a_notice() {
    for fields in [
        r#""ok":true,"count":1,"truncated":false,"next_cursor":"t1""#,
        r#""ok":true,"count":1,"next_cursor":"t1""#,
    ] {
        let stream = numbered(&[&meta(), HIT, &summary(fields)]);
        assert_conforming(
            &verify(stream),
            Verdict::Succeeded,
            &[(FindingCode::SummaryFieldInvalid, N, Some(3))],
        );
    }
    for fields in [
        r#""ok":true,"count":1,"truncated":true,"next_cursor":"t1""#,
        r#""ok":true,"count":1,"truncated":false,"next_cursor":null"#,
        r#""ok":true,"count":1,"truncated":true"#,
    ] {
        let stream = numbered(&[&meta(), HIT, &summary(fields)]);
        assert_conforming(&verify(stream), Verdict::Succeeded, &[]);
    }
}
