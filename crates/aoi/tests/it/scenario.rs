//! A scenario is what a tool might do with an emitter: a sequence of operations and an ending.
//! Running one through [`aoi::emit::drive`] yields the stream and a model of what should be in
//! it, computed independently of the emitter's own counters.

use std::panic;
use std::sync::Once;

use aoi::emit::drive;
use aoi::read::{decode, Event};
use aoi::wire::Severity;
use aoi::{
    CancelToken, Category, CausedBy, Check, Code, EmitError, Emitter, ErrorEvent, Heartbeat,
    Identity, Outcome, Plan, Progress, Reason, Signal, Warning,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// One thing a tool does with its emitter.
#[derive(Debug, Clone)]
pub enum Op {
    Domain {
        ty: String,
        fields: Map<String, Value>,
    },
    Warning {
        message: String,
        target: Option<String>,
    },
    Error(ErrorSpec),
    ForwardError {
        error: ErrorSpec,
        origin: String,
    },
    ForwardWarning {
        message: String,
        origin: String,
    },
    NoteUpstreamError,
    NoteUpstreamWarning,
    NoteInput(u64),
    Progress {
        completed: u64,
        message: Option<String>,
    },
    Heartbeat,
    Check {
        name: String,
        ok: bool,
        detail: Option<String>,
    },
    Plan {
        action: String,
        target: Option<String>,
    },
    Flush,
    Cancel(Signal),
}

/// An `aoi:error` as a tool would build it.
#[derive(Debug, Clone)]
pub struct ErrorSpec {
    pub item: bool,
    pub category: Category,
    pub code: String,
    pub message: String,
    pub retryable: Option<bool>,
    pub retry_after_ms: Option<u64>,
    pub target: Option<String>,
}

impl ErrorSpec {
    pub fn build(&self) -> ErrorEvent {
        let code = Code::new(self.code.clone()).expect("the strategy makes valid codes");
        let mut e = ErrorEvent::new(self.category, code, &self.message);
        if let Some(r) = self.retryable {
            e = e.retryable(r);
        }
        if let Some(ms) = self.retry_after_ms {
            e = e.retry_after_ms(ms);
        }
        if let Some(t) = &self.target {
            e = e.target(t.clone());
        }
        if self.item {
            e = e.item();
        }
        e
    }
}

/// How the body of the run ends.
#[derive(Debug, Clone)]
pub enum Ending {
    Outcome {
        kind: OutcomeKind,
        /// `Some(cursor)`: truncated, with that cursor if any.
        truncated: Option<Option<String>>,
        partial: Option<bool>,
        caused_by: Option<ErrorSpec>,
    },
    /// The body returns this error.
    Fail(ErrorSpec),
    /// The body panics.
    Panic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeKind {
    Success,
    Skipped,
    Failed,
    Cancelled,
    TimedOut,
    Denied,
}

impl OutcomeKind {
    fn build(self) -> Outcome {
        match self {
            OutcomeKind::Success => Outcome::success(),
            OutcomeKind::Skipped => Outcome::skipped(),
            OutcomeKind::Failed => Outcome::failed(),
            OutcomeKind::Cancelled => Outcome::cancelled(),
            OutcomeKind::TimedOut => Outcome::timed_out(),
            OutcomeKind::Denied => Outcome::denied(),
        }
    }

    fn ok(self) -> bool {
        matches!(self, OutcomeKind::Success | OutcomeKind::Skipped)
    }

    fn reason(self) -> Option<Reason> {
        match self {
            OutcomeKind::Success => None,
            OutcomeKind::Skipped => Some(Reason::Skipped),
            OutcomeKind::Failed => Some(Reason::Failed),
            OutcomeKind::Cancelled => Some(Reason::Cancelled),
            OutcomeKind::TimedOut => Some(Reason::Timeout),
            OutcomeKind::Denied => Some(Reason::Denied),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub timestamps: bool,
    pub trace_id: Option<String>,
    pub ops: Vec<Op>,
    pub ending: Ending,
}

/// What the stream should say, from the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub ok: bool,
    pub reason: Option<Reason>,
    pub exit_code: u8,
    pub count: u64,
    pub warning_count: u64,
    pub error_count: u64,
    pub input_count: Option<u64>,
    pub partial: bool,
    pub truncated: bool,
    pub next_cursor: Option<String>,
    pub signal: Option<&'static str>,
    /// The `type` of every line, meta and summary included.
    pub types: Vec<String>,
    /// The fields of every domain event written, in order.
    pub domain_fields: Vec<Map<String, Value>>,
}

/// A finished run.
#[derive(Debug)]
pub struct Run {
    pub bytes: Vec<u8>,
    pub exit_code: u8,
    pub expected: Expected,
    /// Operations whose result differed from the model's prediction.
    pub mismatches: Vec<String>,
}

#[derive(Debug, Default)]
struct Model {
    cancelled: Option<Signal>,
    domain: u64,
    warnings: u64,
    errors: u64,
    item_errors: u64,
    upstream_warnings: u64,
    upstream_errors: u64,
    input: Option<u64>,
    first_process_error: Option<Category>,
    types: Vec<String>,
    domain_fields: Vec<Map<String, Value>>,
}

/// Why the model expects an operation to be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Cancelled,
    InvalidType,
    Serialize,
}

fn refusal_of(result: &Result<(), EmitError>) -> Option<Refusal> {
    match result {
        Ok(()) => None,
        Err(EmitError::Cancelled(_)) => Some(Refusal::Cancelled),
        Err(EmitError::InvalidType(_)) => Some(Refusal::InvalidType),
        Err(EmitError::Serialize(_)) => Some(Refusal::Serialize),
        Err(other) => panic!("unexpected emit error {other}"),
    }
}

/// The refusal the emitter owes a framework event: only cancellation refuses one; ESC and CSI
/// in its text are written escaped (§2).
fn framework_refusal(model: &Model) -> Option<Refusal> {
    if model.cancelled.is_some() {
        Some(Refusal::Cancelled)
    } else {
        None
    }
}

fn apply(
    out: &mut Emitter<Vec<u8>>,
    token: &CancelToken,
    op: &Op,
    model: &mut Model,
    mismatches: &mut Vec<String>,
) {
    let (result, predicted, written_type) = match op {
        Op::Domain { ty, fields } => {
            let predicted = if model.cancelled.is_some() {
                Some(Refusal::Cancelled)
            } else if ty.is_empty() || ty.starts_with("aoi:") {
                Some(Refusal::InvalidType)
            } else if fields.contains_key("type") || fields.contains_key("aoi") {
                Some(Refusal::Serialize)
            } else {
                None
            };
            let result = out.emit_as(ty, fields);
            if predicted.is_none() && result.is_ok() {
                model.domain += 1;
                model.domain_fields.push(fields.clone());
            }
            (result, predicted, ty.clone())
        }
        Op::Warning { message, target } => {
            let mut w = Warning::new(Code::from_static("PROP_WARNING"), message);
            if let Some(t) = target {
                w = w.target(t.clone());
            }
            let predicted = framework_refusal(model);
            let result = out.warning(&w);
            if predicted.is_none() && result.is_ok() {
                model.warnings += 1;
            }
            (result, predicted, "aoi:warning".to_owned())
        }
        Op::Error(spec) => {
            let predicted = framework_refusal(model);
            let result = out.error(&spec.build());
            if predicted.is_none() && result.is_ok() {
                model.errors += 1;
                if spec.item {
                    model.item_errors += 1;
                } else {
                    model.first_process_error.get_or_insert(spec.category);
                }
            }
            (result, predicted, "aoi:error".to_owned())
        }
        Op::ForwardError { error, origin } => {
            let predicted = framework_refusal(model);
            let result = out.forward_error(&error.build(), origin);
            if predicted.is_none() && result.is_ok() {
                model.upstream_errors += 1;
            }
            (result, predicted, "aoi:error".to_owned())
        }
        Op::ForwardWarning { message, origin } => {
            let predicted = framework_refusal(model);
            let w = Warning::new(Code::from_static("UPSTREAM_WARNING"), message);
            let result = out.forward_warning(&w, origin);
            if predicted.is_none() && result.is_ok() {
                model.upstream_warnings += 1;
            }
            (result, predicted, "aoi:warning".to_owned())
        }
        Op::NoteUpstreamError => {
            out.note_upstream_error();
            model.upstream_errors += 1;
            return;
        }
        Op::NoteUpstreamWarning => {
            out.note_upstream_warning();
            model.upstream_warnings += 1;
            return;
        }
        Op::NoteInput(n) => {
            out.note_input(*n);
            *model.input.get_or_insert(0) += n;
            return;
        }
        Op::Progress { completed, message } => {
            let predicted = framework_refusal(model);
            let p = Progress {
                completed: Some(*completed),
                message: message.clone(),
                ..Progress::default()
            };
            (out.progress(&p), predicted, "aoi:progress".to_owned())
        }
        Op::Heartbeat => {
            let predicted = framework_refusal(model);
            let h = Heartbeat {
                interval_ms: Some(1000),
                properties: None,
            };
            (out.heartbeat(&h), predicted, "aoi:heartbeat".to_owned())
        }
        Op::Check { name, ok, detail } => {
            let predicted = framework_refusal(model);
            let c = Check {
                name: name.clone(),
                ok: *ok,
                severity: Some(if *ok { Severity::Info } else { Severity::Error }),
                detail: detail.clone(),
                hint: None,
                properties: None,
            };
            (out.check(&c), predicted, "aoi:check".to_owned())
        }
        Op::Plan { action, target } => {
            let predicted = framework_refusal(model);
            let p = Plan {
                action: action.clone(),
                target: target.clone(),
                detail: None,
                properties: None,
            };
            (out.plan(&p), predicted, "aoi:plan".to_owned())
        }
        Op::Flush => {
            if let Err(e) = out.flush() {
                mismatches.push(format!("flush failed: {e}"));
            }
            return;
        }
        Op::Cancel(signal) => {
            token.cancel(*signal);
            model.cancelled.get_or_insert(*signal);
            return;
        }
    };
    let actual = refusal_of(&result);
    if actual != predicted {
        mismatches.push(format!(
            "{op:?}: the model predicted {predicted:?}, the emitter said {result:?}"
        ));
    }
    if actual.is_none() && predicted.is_none() {
        model.types.push(written_type);
    }
}

/// Silences the default panic hook for the panics scenarios cause on purpose, and only those.
pub fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let deliberate = payload
                .downcast_ref::<&str>()
                .is_some_and(|s| s.contains("deliberate test panic"))
                || payload
                    .downcast_ref::<String>()
                    .is_some_and(|s| s.contains("deliberate test panic"));
            if !deliberate {
                default(info);
            }
        }));
    });
}

pub fn identity() -> Identity {
    Identity::new("prop-tool", "0.1.0", "com.example.prop.events", "1.0.0")
}

/// Runs `scenario` under `drive` and works out what the stream should say.
pub fn run(scenario: &Scenario) -> Run {
    quiet_deliberate_panics();
    let token = CancelToken::new();
    let mut builder = Emitter::builder(identity())
        .command("prop")
        .timestamps(scenario.timestamps)
        .cancel_token(token.clone());
    if let Some(trace) = &scenario.trace_id {
        builder = builder.trace_id(trace.clone());
    }
    let mut emitter = builder.start(Vec::new()).expect("writing to memory");
    let mut model = Model {
        types: vec!["aoi:meta".to_owned()],
        ..Model::default()
    };
    let mut mismatches = Vec::new();
    let exit_code = drive(&mut emitter, |out| {
        for op in &scenario.ops {
            apply(out, &token, op, &mut model, &mut mismatches);
        }
        match &scenario.ending {
            Ending::Outcome {
                kind,
                truncated,
                partial,
                caused_by,
            } => {
                let mut outcome = kind.build();
                if let Some(cursor) = truncated {
                    outcome = outcome.truncated(cursor.clone());
                }
                if let Some(p) = partial {
                    outcome = outcome.partial(*p);
                }
                if let Some(spec) = caused_by {
                    outcome = outcome.caused_by(CausedBy::from_error(&spec.build(), Some("up")));
                }
                Ok(outcome)
            }
            Ending::Fail(spec) => Err(spec.build().into()),
            Ending::Panic => panic!("deliberate test panic: the scenario's body gives up"),
        }
    });
    let expected = expect(scenario, model);
    Run {
        bytes: emitter.into_writer(),
        exit_code,
        expected,
        mismatches,
    }
}

fn expect(scenario: &Scenario, mut m: Model) -> Expected {
    let default_partial = |m: &Model| m.item_errors > 0 && m.domain > 0;
    let mut truncated = false;
    let mut next_cursor = None;
    let mut signal = None;
    let (ok, reason, partial) = if let Some(sig) = m.cancelled {
        signal = Some(match sig {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Deadline => unreachable!("scenarios cancel with signals only"),
        });
        (false, Some(Reason::Cancelled), default_partial(&m))
    } else {
        match &scenario.ending {
            Ending::Outcome {
                kind,
                truncated: t,
                partial,
                ..
            } => {
                if let Some(cursor) = t {
                    truncated = true;
                    next_cursor = cursor.clone();
                }
                let demoted = kind.ok() && m.first_process_error.is_some();
                let ok = kind.ok() && !demoted;
                let reason = if demoted {
                    Some(Reason::Failed)
                } else {
                    kind.reason()
                };
                (ok, reason, partial.unwrap_or(default_partial(&m)))
            }
            Ending::Fail(spec) => {
                m.errors += 1;
                m.first_process_error.get_or_insert(spec.category);
                m.types.push("aoi:error".to_owned());
                let reason = match spec.category {
                    Category::Cancelled => Reason::Cancelled,
                    Category::Timeout => Reason::Timeout,
                    // Not permitted: the run was refused.
                    Category::Authz => Reason::Denied,
                    _ => Reason::Failed,
                };
                (false, Some(reason), default_partial(&m))
            }
            Ending::Panic => {
                m.errors += 1;
                m.first_process_error.get_or_insert(Category::Internal);
                m.types.push("aoi:error".to_owned());
                (false, Some(Reason::Failed), default_partial(&m))
            }
        }
    };
    let exit_code = match (m.cancelled, ok, m.first_process_error) {
        (Some(sig), _, _) => sig.exit_code(),
        (None, true, _) => 0,
        // A refusal is a refusal whatever error came before it.
        (None, false, _) if reason == Some(Reason::Denied) => 77,
        (None, false, Some(category)) => category.exit_code(),
        (None, false, None) => match reason {
            Some(Reason::Cancelled) => 130,
            Some(Reason::Timeout) => 124,
            Some(Reason::Denied) => 77,
            _ => 1,
        },
    };
    m.types.push("aoi:summary".to_owned());
    Expected {
        ok,
        reason,
        exit_code,
        count: m.domain,
        warning_count: m.warnings + m.upstream_warnings,
        error_count: m.errors + m.upstream_errors,
        input_count: m.input,
        partial,
        truncated,
        next_cursor,
        signal,
        types: m.types,
        domain_fields: m.domain_fields,
    }
}

/// The `type` of every line and the fields of every domain line, decoded from `bytes`.
pub fn decoded(bytes: &[u8]) -> (Vec<String>, Vec<Map<String, Value>>) {
    let mut types = Vec::new();
    let mut domain = Vec::new();
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let d = decode(line).unwrap_or_else(|e| {
            panic!(
                "line does not decode: {e}: {}",
                String::from_utf8_lossy(line)
            )
        });
        types.push(d.event.event_type().to_owned());
        if let Event::Domain { fields, .. } = d.event {
            domain.push(fields);
        }
    }
    (types, domain)
}

// ---------------------------------------------------------------------------------------------
// Strategies

/// Short text that often holds what breaks naive writers: quotes, backslashes, control
/// characters, ESC/CSI, the Unicode line separators, non-BMP characters.
pub fn text() -> impl Strategy<Value = String> {
    let special = prop::sample::select(vec![
        '"', '\\', '\n', '\r', '\t', '\0', '\u{7}', '\u{7f}', '\u{85}', '\u{2028}', '\u{2029}',
        '\u{feff}', '\u{1b}', '\u{9b}', 'é', '💡', '/', '{', '}', ':', ',', ' ',
    ]);
    prop::collection::vec(
        prop_oneof![
            4 => any::<char>(),
            3 => prop::char::range('a', 'z'),
            2 => special,
        ],
        0..10,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn optional_text() -> impl Strategy<Value = Option<String>> {
    prop::option::weighted(0.5, text())
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Binary fractions, so a float survives the round trip exactly.
        (-1_000_000i32..1_000_000).prop_map(|n| Value::from(f64::from(n) / 64.0)),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["id", "rank", "title", "path", "line_number", "text", "summary", "seq", "run"])
            .prop_map(str::to_owned),
        3 => text(),
        1 => Just("type".to_owned()),
        1 => Just("aoi".to_owned()),
    ]
}

fn domain_type() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["hit", "entry", "match", "summary", "meta", "error", "aoi", "AOI:hit"])
            .prop_map(str::to_owned),
        2 => text(),
        1 => Just("aoi:hit".to_owned()),
        1 => Just(String::new()),
    ]
}

pub fn category() -> impl Strategy<Value = Category> {
    prop::sample::select(Category::ALL.to_vec())
}

fn code() -> impl Strategy<Value = String> {
    "[A-Z][A-Z0-9_]{0,8}".prop_filter("a broken pipe ends the run without a summary", |c| {
        c != "BROKEN_PIPE"
    })
}

fn error_spec() -> impl Strategy<Value = ErrorSpec> {
    (
        any::<bool>(),
        category(),
        code(),
        text(),
        prop::option::of(any::<bool>()),
        prop::option::of(0u64..100_000),
        prop::option::weighted(0.3, text()),
    )
        .prop_map(
            |(item, category, code, message, retryable, retry_after_ms, target)| ErrorSpec {
                item,
                category,
                code,
                message,
                retryable,
                retry_after_ms,
                target,
            },
        )
}

fn signal() -> impl Strategy<Value = Signal> {
    prop_oneof![Just(Signal::Interrupt), Just(Signal::Terminate)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (domain_type(), prop::collection::vec((key(), value()), 0..5))
            .prop_map(|(ty, kv)| Op::Domain { ty, fields: kv.into_iter().collect() }),
        3 => (text(), prop::option::weighted(0.3, text()))
            .prop_map(|(message, target)| Op::Warning { message, target }),
        3 => error_spec().prop_map(Op::Error),
        2 => (error_spec(), text()).prop_map(|(error, origin)| Op::ForwardError { error, origin }),
        1 => (text(), text()).prop_map(|(message, origin)| Op::ForwardWarning { message, origin }),
        1 => Just(Op::NoteUpstreamError),
        1 => Just(Op::NoteUpstreamWarning),
        1 => (0u64..1000).prop_map(Op::NoteInput),
        1 => (any::<u64>(), optional_text())
            .prop_map(|(completed, message)| Op::Progress { completed, message }),
        1 => Just(Op::Heartbeat),
        1 => (text(), any::<bool>(), optional_text())
            .prop_map(|(name, ok, detail)| Op::Check { name, ok, detail }),
        1 => (text(), optional_text()).prop_map(|(action, target)| Op::Plan { action, target }),
        1 => Just(Op::Flush),
        1 => signal().prop_map(Op::Cancel),
    ]
}

fn ending() -> impl Strategy<Value = Ending> {
    let kind = prop::sample::select(vec![
        OutcomeKind::Success,
        OutcomeKind::Skipped,
        OutcomeKind::Failed,
        OutcomeKind::Cancelled,
        OutcomeKind::TimedOut,
        OutcomeKind::Denied,
    ]);
    let clean_spec = error_spec().prop_map(|mut e| {
        e.target = None;
        e
    });
    prop_oneof![
        8 => (
            kind,
            prop::option::of(prop::option::of(text())),
            prop::option::of(any::<bool>()),
            prop::option::weighted(0.2, clean_spec),
        )
            .prop_map(|(kind, truncated, partial, caused_by)| Ending::Outcome {
                kind,
                truncated,
                partial,
                caused_by,
            }),
        2 => error_spec().prop_map(Ending::Fail),
        1 => Just(Ending::Panic),
    ]
}

/// Any scenario.
pub fn scenario() -> impl Strategy<Value = Scenario> {
    (
        any::<bool>(),
        prop::option::weighted(0.2, "[0-9a-f]{32}"),
        prop::collection::vec(op(), 0..30),
        ending(),
    )
        .prop_map(|(timestamps, trace_id, ops, ending)| Scenario {
            timestamps,
            trace_id,
            ops,
            ending,
        })
}

/// A scenario whose every byte the verifier can check: no `aoi.t` or `aoi.trace_id`, whose
/// values it cannot know.
pub fn plain_scenario() -> impl Strategy<Value = Scenario> {
    scenario().prop_map(|s| Scenario {
        timestamps: false,
        trace_id: None,
        ..s
    })
}
