//! `scenario`: plays one scenario of `tests/scenarios/` through the SDK's public API.
//!
//! A scenario is the list of calls a tool makes (`tests/scenarios/README.md` has the format);
//! the Python SDK's `sdks/python/tests/scenario_tool.py` makes the same calls through
//! `machinemode`, and `sdks/python/tests/test_scenarios.py` holds the two streams to the same
//! bytes.
//!
//! ```sh
//! cargo run -p aoi --example scenario -- tests/scenarios/success.json
//! ```
//!
//! A scenario this tool cannot read exits 2, before any stream, with one line on stderr.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use aoi::emit::RunResult;
use aoi::surface::safety::{replay, Recorded, RecordedEvent};
use aoi::wire::{Protocol, Wrapped};
use aoi::{
    Category, CausedBy, Check, Code, Emitter, ErrorEvent, Failure, Harness, Heartbeat, Identity,
    Outcome, Plan, Progress, Severity, Upstream, Warning,
};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// Exit status for a scenario that cannot be read (not a status of the SDK's).
const BAD_SCENARIO: u8 = 2;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        return refuse("usage: scenario FILE.json");
    };
    let scenario = match std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: {e}", path.to_string_lossy()))
        .and_then(|text| Scenario::parse(&text))
    {
        Ok(scenario) => scenario,
        Err(e) => return refuse(&format!("scenario: {e}")),
    };
    scenario.run()
}

fn refuse(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "{message}");
    ExitCode::from(BAD_SCENARIO)
}

/// A JSON value that keeps the order of an object's keys, as a domain event's fields keep
/// the order a tool's struct declares them in (`serde_json::Value` sorts them).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn into_value(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Number(n) => Value::Number(n),
            Json::String(s) => Value::String(s),
            Json::Array(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Object(pairs) => Value::Object(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k, v.into_value()))
                    .collect(),
            ),
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(pairs) => {
                let mut map = serializer.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number JSON cannot carry"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut pairs: Vec<(String, Json)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            if pairs.iter().any(|(seen, _)| *seen == k) {
                return Err(de::Error::custom(format_args!("duplicate key {k:?}")));
            }
            pairs.push((k, v));
        }
        Ok(Json::Object(pairs))
    }
}

/// The fields of one object of the scenario, taken one by one; any left over is an error, so
/// a misspelt field never passes unnoticed.
struct Fields {
    what: String,
    pairs: Vec<(String, Json)>,
}

impl Fields {
    fn of(what: &str, json: Json) -> Result<Fields, String> {
        match json {
            Json::Object(pairs) => Ok(Fields {
                what: what.to_owned(),
                pairs,
            }),
            _ => Err(format!("{what} is not an object")),
        }
    }

    fn take(&mut self, key: &str) -> Option<Json> {
        let at = self.pairs.iter().position(|(k, _)| k == key)?;
        Some(self.pairs.remove(at).1)
    }

    fn bad(&self, key: &str, kind: &str) -> String {
        format!("{}.{key} is not {kind}", self.what)
    }

    fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.bad(key, "a string")),
        }
    }

    fn required(&mut self, key: &str) -> Result<String, String> {
        self.string(key)?
            .ok_or_else(|| format!("{} needs {key}", self.what))
    }

    fn uint(&mut self, key: &str) -> Result<Option<u64>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::Number(n)) => n.as_u64().map(Some).ok_or_else(|| self.bad(key, "a u64")),
            Some(_) => Err(self.bad(key, "a u64")),
        }
    }

    fn boolean(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(b)),
            Some(_) => Err(self.bad(key, "a boolean")),
        }
    }

    fn object(&mut self, key: &str) -> Result<Option<Map<String, Value>>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(json @ Json::Object(_)) => match json.into_value() {
                Value::Object(map) => Ok(Some(map)),
                _ => Err(self.bad(key, "an object")),
            },
            Some(_) => Err(self.bad(key, "an object")),
        }
    }

    fn typed<T: for<'de> Deserialize<'de>>(&mut self, key: &str) -> Result<Option<T>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(json) => serde_json::from_value(json.into_value())
                .map(Some)
                .map_err(|e| format!("{}.{key}: {e}", self.what)),
        }
    }

    fn done(self) -> Result<(), String> {
        match self.pairs.first() {
            None => Ok(()),
            Some((k, _)) => Err(format!("{} has an unknown field {k:?}", self.what)),
        }
    }
}

fn code(what: &str, text: String) -> Result<Code, String> {
    Code::new(text).map_err(|e| format!("{what}: {e}"))
}

/// One call of the tool's body.
#[derive(Debug)]
enum Call {
    Emit(String, Json),
    Warning(Warning),
    Error(ErrorEvent),
    ForwardError(ErrorEvent, String),
    ForwardWarning(Warning, String),
    Plan(Plan),
    Progress(Progress),
    Heartbeat(Heartbeat),
    Check(Check),
    Consumed { errors: u64, warnings: u64 },
    Input(u64),
    Flush,
    Signal(i32),
    Sleep(Duration),
}

/// How the body ends.
#[derive(Debug)]
enum End {
    Outcome(Outcome),
    Fail(Failure),
    Replay(Recorded),
}

#[derive(Debug)]
struct Scenario {
    identity: Identity,
    command: String,
    timestamps: bool,
    trace_id: Option<String>,
    timeout: Option<Duration>,
    args_redacted: Option<bool>,
    input_fingerprint: Option<String>,
    meta_properties: Map<String, Value>,
    calls: Vec<Call>,
    end: End,
}

impl Scenario {
    fn parse(text: &str) -> Result<Scenario, String> {
        let json: Json = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut top = Fields::of("scenario", json)?;
        let _ = top.string("description")?;
        let _ = top.take("expect");
        let mut id = Fields::of("identity", top.take("identity").unwrap_or(Json::Null))?;
        let identity = Identity::new(
            id.required("tool")?,
            id.required("tool_version")?,
            id.required("schema_name")?,
            id.required("schema_version")?,
        );
        id.done()?;
        let command = top.required("command")?;
        let (timestamps, trace_id) = match top.take("envelope") {
            None => (true, None),
            Some(json) => {
                let mut env = Fields::of("envelope", json)?;
                let t = env.boolean("timestamps")?.unwrap_or(true);
                let trace = env.string("trace_id")?;
                env.done()?;
                (t, trace)
            }
        };
        let timeout = top.uint("timeout_ms")?.map(Duration::from_millis);
        let (args_redacted, input_fingerprint, meta_properties) = match top.take("meta") {
            None => (None, None, Map::new()),
            Some(json) => {
                let mut meta = Fields::of("meta", json)?;
                let r = meta.boolean("args_redacted")?;
                let f = meta.string("input_fingerprint")?;
                let p = meta.object("properties")?.unwrap_or_default();
                meta.done()?;
                (r, f, p)
            }
        };
        let calls = match top.take("calls") {
            None => Vec::new(),
            Some(Json::Array(calls)) => calls
                .into_iter()
                .enumerate()
                .map(|(i, c)| Call::parse(i, c))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("scenario.calls is not an array".to_owned()),
        };
        let end = End::parse(top.take("end").unwrap_or(Json::Null))?;
        top.done()?;
        Ok(Scenario {
            identity,
            command,
            timestamps,
            trace_id,
            timeout,
            args_redacted,
            input_fingerprint,
            meta_properties,
            calls,
            end,
        })
    }

    fn run(self) -> ExitCode {
        let mut builder = Emitter::builder(self.identity)
            .command(self.command)
            .timestamps(self.timestamps);
        if let Some(trace) = self.trace_id {
            builder = builder.trace_id(trace);
        }
        if let Some(redacted) = self.args_redacted {
            builder = builder.args(None, redacted);
        }
        if let Some(fingerprint) = self.input_fingerprint {
            builder = builder.input_fingerprint(fingerprint);
        }
        for (k, v) in self.meta_properties {
            builder = builder.meta_property(k, v);
        }
        let calls = self.calls;
        let end = self.end;
        Harness::new(builder)
            .timeout(self.timeout)
            .run(move |out| play(out, calls, end))
    }
}

fn play<W: Write>(out: &mut Emitter<W>, calls: Vec<Call>, end: End) -> RunResult {
    for call in calls {
        match call {
            Call::Emit(ty, body) => out.emit_as(&ty, &body)?,
            Call::Warning(w) => out.warning(&w)?,
            Call::Error(e) => out.error(&e)?,
            Call::ForwardError(e, origin) => out.forward_error(&e, &origin)?,
            Call::ForwardWarning(w, origin) => out.forward_warning(&w, &origin)?,
            Call::Plan(p) => out.plan(&p)?,
            Call::Progress(p) => out.progress(&p)?,
            Call::Heartbeat(h) => out.heartbeat(&h)?,
            Call::Check(c) => out.check(&c)?,
            Call::Consumed { errors, warnings } => out.note_upstream_counts(errors, warnings),
            Call::Input(n) => out.note_input(n),
            Call::Flush => out.flush()?,
            Call::Signal(signal) => {
                // The harness's watcher thread turns the signal into cancellation; wait for it
                // so the next call is refused, as in a tool the signal interrupts.
                if signal_hook::low_level::raise(signal).is_ok() {
                    let _ = out.cancel_token().sleep(Duration::from_secs(10));
                }
                out.check_cancelled()?;
            }
            Call::Sleep(d) => {
                let _ = out.cancel_token().sleep(d);
                out.check_cancelled()?;
            }
        }
    }
    match end {
        End::Outcome(outcome) => Ok(outcome),
        End::Fail(failure) => Err(failure),
        End::Replay(recorded) => Ok(replay(&recorded, out)?),
    }
}

impl Call {
    fn parse(index: usize, json: Json) -> Result<Call, String> {
        let what = format!("calls[{index}]");
        let Json::Object(mut pairs) = json else {
            return Err(format!("{what} is not an object"));
        };
        if pairs.len() != 1 {
            return Err(format!("{what} must have exactly one key, the call's name"));
        }
        let (name, arg) = pairs.remove(0);
        let what = format!("{what}.{name}");
        Ok(match name.as_str() {
            "emit" => {
                let Json::Object(mut fields) = arg else {
                    return Err(format!("{what} is not an object"));
                };
                let at = fields
                    .iter()
                    .position(|(k, _)| k == "type")
                    .ok_or_else(|| format!("{what} needs a type"))?;
                let Json::String(ty) = fields.remove(at).1 else {
                    return Err(format!("{what}.type is not a string"));
                };
                Call::Emit(ty, Json::Object(fields))
            }
            "warning" => {
                let mut f = Fields::of(&what, arg)?;
                let mut w = Warning::new(code(&what, f.required("code")?)?, f.required("message")?);
                w.origin = f.string("origin")?;
                w.target = f.string("target")?;
                w.line_number = f.uint("line_number")?;
                w.details = f.object("details")?;
                w.properties = f.object("properties")?.filter(|p| !p.is_empty());
                f.done()?;
                Call::Warning(w)
            }
            "error" => Call::Error(error_event(&what, arg)?),
            "forward" => {
                // An upstream event as it was read: decoded as a consumer decodes it, so a
                // field §9.1 does not define is dropped (§13.1 forwarding).
                let mut f = Fields::of(&what, arg)?;
                let ty = f.required("type")?;
                let origin = f.required("origin")?;
                let event = f
                    .object("event")?
                    .ok_or_else(|| format!("{what} needs event"))?;
                f.done()?;
                let event = Value::Object(event);
                match ty.as_str() {
                    "aoi:error" => Call::ForwardError(
                        serde_json::from_value(event).map_err(|e| format!("{what}.event: {e}"))?,
                        origin,
                    ),
                    "aoi:warning" => Call::ForwardWarning(
                        serde_json::from_value(event).map_err(|e| format!("{what}.event: {e}"))?,
                        origin,
                    ),
                    other => {
                        return Err(format!("{what}.type {other:?} is aoi:error or aoi:warning"))
                    }
                }
            }
            "plan" => {
                let mut f = Fields::of(&what, arg)?;
                let plan = Plan {
                    action: f.required("action")?,
                    target: f.string("target")?,
                    detail: f.string("detail")?,
                    properties: None,
                };
                f.done()?;
                Call::Plan(plan)
            }
            "progress" => {
                let mut f = Fields::of(&what, arg)?;
                let progress = Progress {
                    completed: f.uint("completed")?,
                    total: f.uint("total")?,
                    unit: f.string("unit")?,
                    ..Progress::default()
                };
                f.done()?;
                Call::Progress(progress)
            }
            "heartbeat" => {
                let mut f = Fields::of(&what, arg)?;
                let heartbeat = Heartbeat {
                    interval_ms: f.uint("interval_ms")?,
                    ..Heartbeat::default()
                };
                f.done()?;
                Call::Heartbeat(heartbeat)
            }
            "check" => {
                let mut f = Fields::of(&what, arg)?;
                let check = Check {
                    name: f.required("name")?,
                    ok: f.boolean("ok")?.ok_or_else(|| format!("{what} needs ok"))?,
                    severity: f.typed::<Severity>("severity")?,
                    detail: f.string("detail")?,
                    hint: None,
                    properties: None,
                };
                f.done()?;
                Call::Check(check)
            }
            "consumed" => {
                let mut f = Fields::of(&what, arg)?;
                let call = Call::Consumed {
                    errors: f.uint("errors")?.unwrap_or(0),
                    warnings: f.uint("warnings")?.unwrap_or(0),
                };
                f.done()?;
                call
            }
            "input" => match arg {
                Json::Number(n) => Call::Input(n.as_u64().ok_or_else(|| what.clone())?),
                _ => return Err(format!("{what} is not a u64")),
            },
            "flush" => Call::Flush,
            "signal" => match arg {
                Json::String(s) if s == "SIGINT" => Call::Signal(signal_hook::consts::SIGINT),
                Json::String(s) if s == "SIGTERM" => Call::Signal(signal_hook::consts::SIGTERM),
                _ => return Err(format!("{what} is SIGINT or SIGTERM")),
            },
            "sleep_ms" => match arg {
                Json::Number(n) => Call::Sleep(Duration::from_millis(
                    n.as_u64().ok_or_else(|| what.clone())?,
                )),
                _ => return Err(format!("{what} is not a u64")),
            },
            other => return Err(format!("{what}: unknown call {other:?}")),
        })
    }
}

fn error_event(what: &str, json: Json) -> Result<ErrorEvent, String> {
    let mut f = Fields::of(what, json)?;
    let category: Category = f
        .typed("category")?
        .ok_or_else(|| format!("{what} needs category"))?;
    let code = code(what, f.required("code")?)?;
    let mut e = ErrorEvent::new(category, code, f.required("message")?);
    match f.string("scope")?.as_deref() {
        None | Some("process") => {}
        Some("item") => e = e.item(),
        Some(other) => return Err(format!("{what}.scope {other:?} is process or item")),
    }
    if let Some(retryable) = f.boolean("retryable")? {
        e = e.retryable(retryable);
    }
    if let Some(ms) = f.uint("retry_after_ms")? {
        e = e.retry_after_ms(ms);
    }
    if let Some(domain) = f.string("domain")? {
        e = e.domain(domain);
    }
    if let Some(origin) = f.string("origin")? {
        e = e.origin(origin);
    }
    if let Some(target) = f.string("target")? {
        e = e.target(target);
    }
    if let Some(index) = f.uint("item_index")? {
        e = e.item_index(index);
    }
    if let Some(line) = f.uint("line_number")? {
        e = e.line_number(line);
    }
    if let Some(field) = f.string("field")? {
        e = e.field(field);
    }
    if let Some(json) = f.take("wrapped") {
        let mut w = Fields::of(&format!("{what}.wrapped"), json)?;
        let protocol: Protocol = w
            .typed("protocol")?
            .ok_or_else(|| format!("{what}.wrapped needs protocol"))?;
        let status = match w.take("status") {
            None => None,
            Some(Json::Number(n)) => Some(
                n.as_i64()
                    .ok_or_else(|| format!("{what}.wrapped.status is not an i64"))?,
            ),
            Some(_) => return Err(format!("{what}.wrapped.status is not an i64")),
        };
        let code = w.string("code")?;
        w.done()?;
        e = e.wrapped(Wrapped {
            protocol,
            status,
            code,
        });
    }
    if let Some(hint) = f.string("hint")? {
        e = e.hint(hint);
    }
    if let Some(docs) = f.string("docs")? {
        e = e.docs(docs);
    }
    for (k, v) in f.object("details")?.unwrap_or_default() {
        e = e.detail(k, v);
    }
    for (k, v) in f.object("properties")?.unwrap_or_default() {
        e = e.property(k, v);
    }
    f.done()?;
    Ok(e)
}

impl End {
    fn parse(json: Json) -> Result<End, String> {
        let mut f = Fields::of("end", json)?;
        if let Some(fail) = f.take("fail") {
            let error = error_event("end.fail", fail)?;
            let denied = f.boolean("denied")?.unwrap_or(false);
            f.done()?;
            return Ok(End::Fail(if denied {
                Failure::denied(error)
            } else {
                Failure::from(error)
            }));
        }
        if let Some(json) = f.take("replay") {
            f.done()?;
            let mut r = Fields::of("end.replay", json)?;
            let events = match r.take("events") {
                Some(Json::Array(events)) => events
                    .into_iter()
                    .map(|event| {
                        let mut fields = match event.into_value() {
                            Value::Object(fields) => fields,
                            _ => return Err("end.replay.events[] is not an object".to_owned()),
                        };
                        match fields.remove("type") {
                            Some(Value::String(event_type)) => {
                                Ok(RecordedEvent { event_type, fields })
                            }
                            _ => Err("end.replay.events[] needs a string type".to_owned()),
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                _ => return Err("end.replay needs events, an array".to_owned()),
            };
            let ok = r
                .boolean("ok")?
                .ok_or_else(|| "end.replay needs ok".to_owned())?;
            let properties = r.object("properties")?;
            r.done()?;
            return Ok(End::Replay(Recorded {
                request_hash: String::new(),
                events,
                ok,
                properties,
            }));
        }
        let ok = f
            .boolean("ok")?
            .ok_or_else(|| "end needs ok, fail or replay".to_owned())?;
        let mut outcome = match (ok, f.string("reason")?.as_deref()) {
            (true, None) => Outcome::success(),
            (true, Some("skipped")) => Outcome::skipped(),
            (false, None | Some("failed")) => Outcome::failed(),
            (false, Some("cancelled")) => Outcome::cancelled(),
            (false, Some("timeout")) => Outcome::timed_out(),
            (false, Some("denied")) => Outcome::denied(),
            (_, Some(other)) => return Err(format!("end.reason {other:?} does not go with ok")),
        };
        if let Some(partial) = f.boolean("partial")? {
            outcome = outcome.partial(partial);
        }
        let next_cursor = f.string("next_cursor")?;
        match f.boolean("truncated")? {
            Some(true) => outcome = outcome.truncated(next_cursor),
            _ if next_cursor.is_some() => {
                return Err("end.next_cursor goes with truncated: true".to_owned())
            }
            _ => {}
        }
        if let Some(caused_by) = f.typed::<CausedBy>("caused_by")? {
            outcome = outcome.caused_by(caused_by);
        }
        if let Some(upstream) = f.typed::<Upstream>("upstream")? {
            outcome = outcome.upstream(upstream);
        }
        for (k, v) in f.object("properties")?.unwrap_or_default() {
            outcome = outcome.property(k, v);
        }
        if let Some(code) = f.uint("exit_code")? {
            outcome =
                outcome.exit_code(u8::try_from(code).map_err(|_| "end.exit_code is not a u8")?);
        }
        f.done()?;
        Ok(End::Outcome(outcome))
    }
}
