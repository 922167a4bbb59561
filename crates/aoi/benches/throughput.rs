//! Throughput of the verifier and the emitter against their practical limit, bare `serde_json`,
//! measured in the same run on the same bytes (CONVENTIONS.md, "Performance method").
//!
//! `cargo bench -p aoi --bench throughput`
//!
//! - `verify/serde_json_ignored_any`: split the stream on `\n` with memchr and parse every line
//!   into `serde::de::IgnoredAny` (the floor for anything that must look at every byte);
//! - `verify/serde_json_utf8_then_ignored_any` (informational): the same after checking each
//!   line is UTF-8 with `std::str::from_utf8`, which the verifier must do and `IgnoredAny` over a
//!   slice does not;
//! - `verify/aoi_verifier`: `Verifier::verify_reader` over the same bytes through `LineReader`.
//!   Target: at least 70% of `serde_json_ignored_any`.
//! - `verify/aoi_verifier_schema`: the same with every event also validated against the
//!   stream's published event schema (`Verifier::with_compiled`, the schema compiled once, as
//!   `aoi verify --schema` does on worker threads). Target: at least 50% of `aoi_verifier`.
//! - `emit/serde_json_bufwriter`: `serde_json::to_writer` of structs that already carry `type`
//!   and the `aoi` envelope, into a `BufWriter<io::Sink>`, plus `\n`;
//! - `emit/aoi_emitter`: the `Emitter` writing the same events into `io::sink()`.
//!   Same lines, same bytes out (checked before measuring). Target: at least 85% of the baseline.
//!
//! The stream has the shape of `bench/gen_stream.py`: `aoi:meta`, "hit" domain events with
//! non-ASCII text and escaped quotes, an `aoi:progress` every 5,000 lines, an `aoi:warning`
//! every 20,000 lines, and a terminal `aoi:summary` whose counts match.

use std::hint::black_box;
use std::io::{self, BufWriter, Write};
use std::time::Duration;

use aoi::read::{CompiledSchema, LineReader};
use aoi::{
    Code, DomainEvent, Emitter, EventSchema, FindingCode, Identity, Outcome, Progress, Verdict,
    Verifier, VerifyOptions, Warning,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde::Serialize;

/// A fixed 26-character ULID, so both sides of the emit comparison write identical bytes.
const RUN: &str = "01JZQ7X4TQ9V6H0ZT7K8F2W3C1";
/// Size of the in-memory verify stream.
const VERIFY_BYTES: usize = 16_000_000;
/// Domain events written per emit iteration (about 15 MB of lines).
const EMIT_EVENTS: u64 = 50_000;

const TOOL: &str = "outline";
const TOOL_VERSION: &str = "1.8.2";
const SCHEMA_NAME: &str = "com.example.outline.events";
const SCHEMA_VERSION: &str = "1.0.0";

const TITLES: [&str; 8] = [
    "Agent-Operable Tools",
    "Réseaux de neurones et « apprentissage » profond",
    "Über die Zuverlässigkeit von Befehlszeilenwerkzeugen",
    "JSON Lines: one object per line",
    "日本語のテキスト処理について",
    "Streaming parsers, back-pressure and SIGPIPE",
    "Why exit codes still matter",
    "Ελληνικά: μια σύντομη εισαγωγή",
];

const SENTENCES: [&str; 12] = [
    "The index was rebuilt overnight and now covers 1.2 million documents.",
    "She said \"machine mode\" is the only output an agent should parse.",
    "Naïve tokenisers split “smart quotes” and em dashes — badly.",
    "Paths such as C:\\Users\\docs\\report.txt need their backslashes escaped.",
    "Résumé, façade, coöperate: diacritics survive a round trip in UTF-8.",
    "Latency p99 fell from 84 ms to 31 ms after the cache warmed up 🚀.",
    "Der Verifier prüft jede Zeile, bevor er dem Ergebnis vertraut.",
    "A truncated last line is a cut stream, never a result.",
    "東京の天気は晴れ、気温は二十三度です。",
    "Errors carry a category, a stable code and an explicit \"retryable\" flag.",
    "Sequence numbers start at 0 and never skip, so loss is detectable.",
    "Every summary states ok explicitly; there is no default.",
];

/// The domain event as a tool defines it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
struct Hit {
    rank: u64,
    id: String,
    title: String,
    snippet: String,
    score: f64,
}

impl DomainEvent for Hit {
    const TYPE: &'static str = "hit";
}

fn hit(n: u64) -> Hit {
    let i = n as usize;
    Hit {
        rank: n,
        id: format!("doc_{n}"),
        title: format!("{} (part {})", TITLES[i % TITLES.len()], n % 97),
        snippet: format!(
            "{} {}",
            SENTENCES[(i * 7) % SENTENCES.len()],
            SENTENCES[(i * 7 + 5) % SENTENCES.len()]
        ),
        score: ((n * 7919) % 1000) as f64 / 1000.0,
    }
}

#[derive(Serialize)]
struct Env<'a> {
    seq: u64,
    run: &'a str,
}

/// The baseline's view of a line: `type` and the envelope already in the struct.
#[derive(Serialize)]
struct Line<'a, T> {
    #[serde(rename = "type")]
    ty: &'a str,
    aoi: Env<'a>,
    #[serde(flatten)]
    body: &'a T,
}

#[derive(Serialize)]
struct HitLine<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    aoi: Env<'a>,
    rank: u64,
    id: &'a str,
    title: &'a str,
    snippet: &'a str,
    score: f64,
}

#[derive(Serialize)]
struct MetaBody<'a> {
    tool: &'a str,
    tool_version: &'a str,
    aoi_version: &'a str,
    schema_name: &'a str,
    schema_version: &'a str,
    command: &'a str,
}

#[derive(Serialize)]
struct SummaryBody<'a> {
    ok: bool,
    event_count: u64,
    count: u64,
    warning_count: u64,
    error_count: u64,
    partial: bool,
    truncated: bool,
    elapsed_ms: u64,
    tool: &'a str,
    tool_version: &'a str,
    aoi_version: &'a str,
    schema_name: &'a str,
    schema_version: &'a str,
}

fn meta_body() -> MetaBody<'static> {
    MetaBody {
        tool: TOOL,
        tool_version: TOOL_VERSION,
        aoi_version: aoi::AOI_VERSION,
        schema_name: SCHEMA_NAME,
        schema_version: SCHEMA_VERSION,
        command: "search",
    }
}

fn summary_body(lines: u64, domain: u64, warnings: u64, elapsed_ms: u64) -> SummaryBody<'static> {
    SummaryBody {
        ok: true,
        event_count: lines,
        count: domain,
        warning_count: warnings,
        error_count: 0,
        partial: false,
        truncated: false,
        elapsed_ms,
        tool: TOOL,
        tool_version: TOOL_VERSION,
        aoi_version: aoi::AOI_VERSION,
        schema_name: SCHEMA_NAME,
        schema_version: SCHEMA_VERSION,
    }
}

fn put<W: Write, T: Serialize>(out: &mut W, ty: &str, seq: u64, body: &T) {
    let line = Line {
        ty,
        aoi: Env { seq, run: RUN },
        body,
    };
    serde_json::to_writer(&mut *out, &line).unwrap();
    out.write_all(b"\n").unwrap();
}

/// A conforming stream of at least `target` bytes, shaped like `bench/gen_stream.py`.
fn generate_stream(target: usize) -> Vec<u8> {
    #[derive(Serialize)]
    struct WarningBody {
        code: &'static str,
        message: String,
    }
    #[derive(Serialize)]
    struct ProgressBody {
        completed: u64,
        unit: &'static str,
    }
    let mut out = Vec::with_capacity(target + 4096);
    let (mut seq, mut domain, mut warnings) = (0u64, 0u64, 0u64);
    put(&mut out, "aoi:meta", seq, &meta_body());
    seq += 1;
    while out.len() < target {
        if seq.is_multiple_of(20_000) {
            let body = WarningBody {
                code: "INDEX_STALE",
                message: format!("shard {} of the index is 2 days old", seq / 20_000),
            };
            put(&mut out, "aoi:warning", seq, &body);
            warnings += 1;
        } else if seq.is_multiple_of(5_000) {
            put(
                &mut out,
                "aoi:progress",
                seq,
                &ProgressBody {
                    completed: domain,
                    unit: "documents",
                },
            );
        } else {
            domain += 1;
            put(&mut out, "hit", seq, &hit(domain));
        }
        seq += 1;
    }
    put(
        &mut out,
        "aoi:summary",
        seq,
        &summary_body(seq + 1, domain, warnings, 1234),
    );
    out
}

/// The baseline: split on `\n` with memchr, parse each line into `IgnoredAny`.
fn ignored_any_lines(bytes: &[u8]) -> u64 {
    let mut lines = 0;
    let mut rest = bytes;
    while let Some(nl) = memchr::memchr(b'\n', rest) {
        serde_json::from_slice::<serde::de::IgnoredAny>(&rest[..nl]).unwrap();
        rest = &rest[nl + 1..];
        lines += 1;
    }
    lines
}

/// The baseline plus the UTF-8 check every line needs (§2): `from_utf8`, then `from_str`.
fn utf8_then_ignored_any_lines(bytes: &[u8]) -> u64 {
    let mut lines = 0;
    let mut rest = bytes;
    while let Some(nl) = memchr::memchr(b'\n', rest) {
        let line = std::str::from_utf8(&rest[..nl]).unwrap();
        serde_json::from_str::<serde::de::IgnoredAny>(line).unwrap();
        rest = &rest[nl + 1..];
        lines += 1;
    }
    lines
}

fn bench_verify(c: &mut Criterion) {
    let stream = generate_stream(VERIFY_BYTES);
    let report = Verifier::verify_bytes(&stream, VerifyOptions::default());
    assert_eq!(
        report.verdict,
        Verdict::Succeeded,
        "generated stream must verify: {:?}",
        report.findings
    );
    assert!(
        report.findings.is_empty(),
        "generated stream has findings: {:?}",
        report.findings
    );
    assert_eq!(report.lines, ignored_any_lines(&stream));

    let mut g = c.benchmark_group("verify");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.bench_function("serde_json_ignored_any", |b| {
        b.iter(|| ignored_any_lines(black_box(&stream)))
    });
    // Informational: the same parse after `std::str::from_utf8` on each line, which a verifier
    // must do and `IgnoredAny` over a slice does not (it skips strings without validating them).
    g.bench_function("serde_json_utf8_then_ignored_any", |b| {
        b.iter(|| utf8_then_ignored_any_lines(black_box(&stream)))
    });
    g.bench_function("aoi_verifier", |b| {
        b.iter(|| {
            let report =
                Verifier::verify_reader(black_box(&stream[..]), VerifyOptions::default()).unwrap();
            debug_assert_eq!(report.verdict, Verdict::Succeeded);
            report
        })
    });
    let schema = event_schema();
    check_schema_applies(&stream, &schema);
    g.bench_function("aoi_verifier_schema", |b| {
        b.iter(|| {
            let report = verify_with_schema(black_box(&stream[..]), &schema);
            debug_assert_eq!(report.verdict, Verdict::Succeeded);
            report
        })
    });
    g.finish();
}

/// The event schema a tool built on the SDK publishes for the stream: its identity and `hit`.
fn event_schema() -> CompiledSchema {
    let identity = Identity::new(TOOL, TOOL_VERSION, SCHEMA_NAME, SCHEMA_VERSION);
    let schema = EventSchema::new(&identity, "https://schemas.example.com/outline")
        .domain_event_named::<Hit>(Hit::TYPE)
        .build()
        .unwrap();
    CompiledSchema::new(&schema).unwrap()
}

/// Verifies `stream` as `aoi verify --schema` does.
fn verify_with_schema(stream: &[u8], schema: &CompiledSchema) -> aoi::Report {
    let mut verifier = Verifier::new(VerifyOptions::default()).with_compiled(schema);
    let mut reader = LineReader::new(stream);
    while let Some(frame) = reader.next().unwrap() {
        verifier.frame(frame);
    }
    verifier.finish(None)
}

/// The stream passes the schema, and a copy with one `hit` broken (its `rank` a string) does
/// not: the benchmark measures validation that happens.
fn check_schema_applies(stream: &[u8], schema: &CompiledSchema) {
    let report = verify_with_schema(stream, schema);
    assert_eq!(report.verdict, Verdict::Succeeded, "{:?}", report.findings);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let text = std::str::from_utf8(stream).unwrap();
    let broken = text.replacen("\"rank\":777,", "\"rank\":\"777\",", 1);
    assert_ne!(broken, text, "the stream has a hit of rank 777");
    let report = verify_with_schema(broken.as_bytes(), schema);
    let codes: Vec<FindingCode> = report.findings.iter().map(|f| f.code).collect();
    assert_eq!(
        codes,
        [FindingCode::EventSchemaInvalid],
        "{:?}",
        report.findings
    );
}

/// Every `PROGRESS_EVERY`-th event is preceded by an `aoi:progress`, every `WARNING_EVERY`-th
/// by an `aoi:warning`, so both sides write a few framework events (and the emitter flushes).
const PROGRESS_EVERY: u64 = 5_000;
const WARNING_EVERY: u64 = 20_000;

fn warning_message(i: u64) -> String {
    format!("shard {} of the index is 2 days old", i / WARNING_EVERY)
}

/// The baseline: bare `serde_json::to_writer` into a `BufWriter<io::Sink>`, plus `\n`.
fn write_bare<W: Write>(out: W, hits: &[Hit], elapsed_ms: u64) -> W {
    #[derive(Serialize)]
    struct WarningBody<'a> {
        code: &'a str,
        message: &'a str,
    }
    #[derive(Serialize)]
    struct ProgressBody {
        completed: u64,
        unit: &'static str,
    }
    let mut out = BufWriter::new(out);
    let mut seq = 0;
    put(&mut out, "aoi:meta", seq, &meta_body());
    seq += 1;
    let mut warnings = 0;
    for (i, h) in hits.iter().enumerate() {
        let i = i as u64;
        if i > 0 && i.is_multiple_of(WARNING_EVERY) {
            let message = warning_message(i);
            put(
                &mut out,
                "aoi:warning",
                seq,
                &WarningBody {
                    code: "INDEX_STALE",
                    message: &message,
                },
            );
            seq += 1;
            warnings += 1;
        }
        if i > 0 && i.is_multiple_of(PROGRESS_EVERY) {
            put(
                &mut out,
                "aoi:progress",
                seq,
                &ProgressBody {
                    completed: i,
                    unit: "documents",
                },
            );
            seq += 1;
        }
        let line = HitLine {
            ty: "hit",
            aoi: Env { seq, run: RUN },
            rank: h.rank,
            id: &h.id,
            title: &h.title,
            snippet: &h.snippet,
            score: h.score,
        };
        serde_json::to_writer(&mut out, &line).unwrap();
        out.write_all(b"\n").unwrap();
        seq += 1;
    }
    put(
        &mut out,
        "aoi:summary",
        seq,
        &summary_body(seq + 1, hits.len() as u64, warnings, elapsed_ms),
    );
    out.into_inner().map_err(|e| e.into_error()).unwrap()
}

/// The emitter writing the same events.
fn write_emitter<W: Write>(out: W, hits: &[Hit]) -> W {
    let identity = Identity::new(TOOL, TOOL_VERSION, SCHEMA_NAME, SCHEMA_VERSION);
    let mut e = Emitter::builder(identity)
        .command("search")
        .run_id(RUN)
        .start(out)
        .unwrap();
    for (i, h) in hits.iter().enumerate() {
        let i = i as u64;
        if i > 0 && i.is_multiple_of(WARNING_EVERY) {
            e.warning(&Warning::new(
                Code::from_static("INDEX_STALE"),
                warning_message(i),
            ))
            .unwrap();
        }
        if i > 0 && i.is_multiple_of(PROGRESS_EVERY) {
            let progress = Progress {
                completed: Some(i),
                unit: Some("documents".into()),
                ..Progress::default()
            };
            e.progress(&progress).unwrap();
        }
        e.emit(h).unwrap();
    }
    e.finish(Outcome::success()).unwrap();
    e.into_writer()
}

/// Both writers must produce the same lines; only the summary's `elapsed_ms` may differ.
fn check_same_bytes(hits: &[Hit]) -> u64 {
    let bare = write_bare(Vec::new(), hits, 0);
    let emitted = write_emitter(Vec::new(), hits);
    let without_elapsed = |bytes: &[u8]| -> String {
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let (head, summary) = text[..text.len() - 1].rsplit_once('\n').unwrap();
        let mut summary: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(summary).unwrap();
        summary.remove("elapsed_ms");
        format!("{head}\n{}", serde_json::to_string(&summary).unwrap())
    };
    assert_eq!(
        without_elapsed(&bare),
        without_elapsed(&emitted),
        "emitter and baseline must write the same lines"
    );
    let report = Verifier::verify_bytes(&emitted, VerifyOptions::default());
    assert_eq!(report.verdict, Verdict::Succeeded, "{:?}", report.findings);
    emitted.len() as u64
}

fn bench_emit(c: &mut Criterion) {
    let hits: Vec<Hit> = (1..=EMIT_EVENTS).map(hit).collect();
    let bytes = check_same_bytes(&hits);

    let mut g = c.benchmark_group("emit");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("serde_json_bufwriter", |b| {
        b.iter(|| write_bare(io::sink(), black_box(&hits), 0))
    });
    g.bench_function("aoi_emitter", |b| {
        b.iter(|| write_emitter(io::sink(), black_box(&hits)))
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_verify, bench_emit
}
criterion_main!(benches);
