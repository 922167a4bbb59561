//! Typed decoding of one line, tolerant the way §8.2, §9.4 and §10.3 ask a consumer to be:
//! unknown fields are ignored, unknown domain types are kept as data, an unknown `aoi:` type is
//! kept apart (a consumer must not report success over it), and an unknown error category is
//! routed as `internal`: on an `aoi:error` with the wire value preserved in `details.category`,
//! in a summary's `caused_by` without it (a summary is read, never forwarded).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::wire::{
    Category, Check, Envelope, ErrorEvent, Heartbeat, Meta, Plan, Progress, Summary, Warning,
};

/// One decoded line.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The `aoi` envelope, when present and well-formed.
    pub envelope: Option<Envelope>,
    /// The event.
    pub event: Event,
}

/// A typed event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `aoi:meta`.
    Meta(Meta),
    /// `aoi:summary`.
    Summary(Summary),
    /// `aoi:error`.
    Error(ErrorEvent),
    /// `aoi:warning`.
    Warning(Warning),
    /// `aoi:check`.
    Check(Check),
    /// `aoi:plan`.
    Plan(Plan),
    /// `aoi:progress`.
    Progress(Progress),
    /// `aoi:heartbeat`.
    Heartbeat(Heartbeat),
    /// An `aoi:` type this version does not define.
    UnknownFramework {
        /// Its `type`.
        ty: String,
        /// Its other top-level fields.
        fields: Map<String, Value>,
    },
    /// A domain event: data owned by the tool's schema.
    Domain {
        /// Its `type`.
        ty: String,
        /// Its other top-level fields.
        fields: Map<String, Value>,
    },
}

impl Event {
    /// The wire `type`.
    pub fn event_type(&self) -> &str {
        use crate::wire::FrameworkEvent;
        match self {
            Event::Meta(_) => Meta::TYPE,
            Event::Summary(_) => Summary::TYPE,
            Event::Error(_) => ErrorEvent::TYPE,
            Event::Warning(_) => Warning::TYPE,
            Event::Check(_) => Check::TYPE,
            Event::Plan(_) => Plan::TYPE,
            Event::Progress(_) => Progress::TYPE,
            Event::Heartbeat(_) => Heartbeat::TYPE,
            Event::UnknownFramework { ty, .. } | Event::Domain { ty, .. } => ty,
        }
    }

    /// The `aoi:meta`, when this is one: `events.iter().filter_map(Event::as_meta)`.
    pub fn as_meta(&self) -> Option<&Meta> {
        match self {
            Event::Meta(m) => Some(m),
            _ => None,
        }
    }

    /// The `aoi:summary`, when this is one.
    pub fn as_summary(&self) -> Option<&Summary> {
        match self {
            Event::Summary(s) => Some(s),
            _ => None,
        }
    }

    /// The `aoi:error`, when this is one.
    pub fn as_error(&self) -> Option<&ErrorEvent> {
        match self {
            Event::Error(e) => Some(e),
            _ => None,
        }
    }

    /// The `aoi:warning`, when this is one.
    pub fn as_warning(&self) -> Option<&Warning> {
        match self {
            Event::Warning(w) => Some(w),
            _ => None,
        }
    }

    /// A domain event's fields (without `type` and `aoi`), when this is one.
    pub fn domain_fields(&self) -> Option<&Map<String, Value>> {
        match self {
            Event::Domain { fields, .. } => Some(fields),
            _ => None,
        }
    }
}

/// Why a line could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or not an object.
    #[error("not a JSON object: {0}")]
    Json(#[from] serde_json::Error),
    /// No string `type`.
    #[error("the object has no string `type`")]
    NoType,
    /// A framework event whose fields do not fit the spec.
    #[error("malformed {ty}: {source}")]
    Framework {
        /// The event type.
        ty: String,
        /// What did not fit.
        source: serde_json::Error,
    },
}

/// Decodes one line (without its `\n`).
pub fn decode(line: &[u8]) -> Result<Decoded, DecodeError> {
    decode_object(serde_json::from_slice(line)?)
}

/// [`decode`] for an event already parsed into an object (its `type` and `aoi` included), so
/// a consumer that holds the object does not parse the line again.
pub fn decode_object(fields: Map<String, Value>) -> Result<Decoded, DecodeError> {
    let (mut decoded, wire_category) = decode_fields(fields)?;
    if let (Event::Error(error), Some(wire)) = (&mut decoded.event, wire_category) {
        error
            .details
            .get_or_insert_with(Map::new)
            .insert("category".into(), Value::String(wire));
    }
    Ok(decoded)
}

/// [`decode`], but an `aoi:error` whose category this version does not know comes back routed
/// as `internal` with its other fields (`details` included) exactly as written, and the wire
/// category beside it: what a forwarder needs to pass the error on unchanged (§9.4, §13.1).
pub(crate) fn decode_keeping_category(
    line: &[u8],
) -> Result<(Decoded, Option<String>), DecodeError> {
    decode_fields(serde_json::from_slice(line)?)
}

fn decode_fields(mut fields: Map<String, Value>) -> Result<(Decoded, Option<String>), DecodeError> {
    let ty = match fields.remove("type") {
        Some(Value::String(ty)) => ty,
        _ => return Err(DecodeError::NoType),
    };
    let envelope = fields
        .remove("aoi")
        .and_then(|v| serde_json::from_value::<Envelope>(v).ok());
    let mut wire_category = None;
    let event = match ty.as_str() {
        "aoi:meta" => {
            args_as_strings(&mut fields);
            Event::Meta(typed(&ty, fields)?)
        }
        "aoi:summary" => {
            if let Some(Value::Object(cause)) = fields.get_mut("caused_by") {
                route_unknown_category(cause);
            }
            Event::Summary(typed(&ty, fields)?)
        }
        "aoi:error" => {
            wire_category = route_unknown_category(&mut fields);
            Event::Error(typed(&ty, fields)?)
        }
        "aoi:warning" => Event::Warning(typed(&ty, fields)?),
        "aoi:check" => Event::Check(typed(&ty, fields)?),
        "aoi:plan" => {
            // §8.3 defines no field of `aoi:plan` ("one planned side effect"): a plan that
            // says what it does only in `properties` (§8.1) is a plan. The SDK writes `action`;
            // a reader does not require it.
            fields
                .entry("action")
                .or_insert_with(|| Value::String(String::new()));
            Event::Plan(typed(&ty, fields)?)
        }
        "aoi:progress" => Event::Progress(typed(&ty, fields)?),
        "aoi:heartbeat" => Event::Heartbeat(typed(&ty, fields)?),
        _ if ty.starts_with("aoi:") => Event::UnknownFramework { ty, fields },
        _ => Event::Domain { ty, fields },
    };
    Ok((Decoded { envelope, event }, wire_category))
}

/// `aoi:meta.args` as the list of strings the SDK writes, whatever shape a tool gave it: §11
/// says only that it is optional and redacted, not what it holds. An array keeps its strings
/// (anything else in it as its JSON text), an object becomes `--key=value` entries (as the
/// flags they stand for, so the redaction check reads a `token` key as the `--token` flag), a
/// string one entry, anything else its JSON text: every value stays in view of that check.
pub(crate) fn args_as_strings(fields: &mut Map<String, Value>) {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let strings: Vec<String> = match fields.get("args") {
        None | Some(Value::Null) => return,
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => return,
        Some(Value::Array(items)) => items.iter().map(text).collect(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| format!("--{k}={}", text(v)))
            .collect(),
        Some(other) => vec![text(other)],
    };
    fields.insert(
        "args".into(),
        Value::Array(strings.into_iter().map(Value::String).collect()),
    );
}

fn typed<T: DeserializeOwned>(ty: &str, fields: Map<String, Value>) -> Result<T, DecodeError> {
    serde_json::from_value(Value::Object(fields)).map_err(|source| DecodeError::Framework {
        ty: ty.to_owned(),
        source,
    })
}

/// §9.4: an unrecognized category must not fail the consumer; routes it as `internal` and
/// returns the value it replaced.
fn route_unknown_category(fields: &mut Map<String, Value>) -> Option<String> {
    match fields.get("category") {
        Some(Value::String(c)) if Category::parse(c).is_none() => {}
        _ => return None,
    }
    match fields.insert("category".into(), Value::from(Category::Internal.as_str())) {
        Some(Value::String(wire)) => Some(wire),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_already_parsed_decodes_as_its_line_does() {
        for line in [
            &br#"{"type":"aoi:error","aoi":{"seq":1,"run":"R"},"category":"quota","code":"Q","message":"m","retryable":false}"#[..],
            br#"{"type":"aoi:summary","ok":false,"reason":"failed","caused_by":{"category":"x","code":"C","retryable":true}}"#,
            br#"{"type":"hit","aoi":{"seq":2,"run":"R"},"rank":1}"#,
            br#"{"type":"aoi:later","x":1}"#,
        ] {
            let object: Map<String, Value> = serde_json::from_slice(line).unwrap();
            let (a, b) = (decode(line).unwrap(), decode_object(object).unwrap());
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
        assert!(matches!(
            decode_object(Map::new()),
            Err(DecodeError::NoType)
        ));
    }

    #[test]
    fn decodes_framework_and_domain_events_ignoring_unknown_fields() {
        let d =
            decode(br#"{"type":"hit","aoi":{"seq":1,"run":"R"},"rank":1,"future":true}"#).unwrap();
        assert_eq!(d.envelope.unwrap().seq, Some(1));
        assert!(
            matches!(d.event, Event::Domain { ref ty, ref fields } if ty == "hit" && fields.len() == 2)
        );
        let d = decode(br#"{"type":"aoi:summary","aoi":{"seq":2,"run":"R"},"ok":true,"count":1,"new_field":1}"#).unwrap();
        assert!(matches!(d.event, Event::Summary(ref s) if s.ok && s.count == Some(1)));
        let d = decode(br#"{"type":"aoi:later","x":1}"#).unwrap();
        assert!(matches!(d.event, Event::UnknownFramework { .. }));
    }

    #[test]
    fn an_unknown_category_is_routed_as_internal_and_kept() {
        let d = decode(br#"{"type":"aoi:error","category":"quantum","code":"Q","message":"m","retryable":true}"#).unwrap();
        let Event::Error(e) = d.event else {
            panic!("not an error")
        };
        assert_eq!(e.category, Category::Internal);
        assert!(e.retryable, "retryable stays authoritative");
        assert_eq!(e.details.unwrap()["category"], "quantum");
    }

    /// §9.4: a newer producer's summary whose `caused_by` names a category this version does
    /// not know still reads as that producer's failure, routed as `internal`.
    #[test]
    fn an_unknown_category_in_caused_by_does_not_fail_the_summary_section_9_4() {
        let d = decode(br#"{"type":"aoi:summary","ok":false,"reason":"failed","caused_by":{"category":"quota_exhausted","code":"Q","retryable":true,"retry_after_ms":5}}"#).unwrap();
        let Event::Summary(s) = d.event else {
            panic!("not a summary")
        };
        let cause = s.caused_by.unwrap();
        assert_eq!(cause.category, Category::Internal);
        assert_eq!((cause.retryable, cause.retry_after_ms), (true, Some(5)));
    }

    /// What a forwarder reads: the error routed as `internal`, its own `details` untouched,
    /// and the wire category beside it (§9.4, §13.1).
    #[test]
    fn decoding_for_a_forwarder_keeps_the_wire_category_and_the_details_as_written() {
        let line = br#"{"type":"aoi:error","category":"quota_exhausted","code":"Q","message":"m","retryable":true,"details":{"category":"mine"}}"#;
        let (d, wire) = decode_keeping_category(line).unwrap();
        assert_eq!(wire.as_deref(), Some("quota_exhausted"));
        let Event::Error(e) = d.event else {
            panic!("not an error")
        };
        assert_eq!(e.category, Category::Internal);
        assert_eq!(e.details.unwrap()["category"], "mine");
        let (_, wire) = decode_keeping_category(
            br#"{"type":"aoi:error","category":"io","code":"Q","message":"m","retryable":false}"#,
        )
        .unwrap();
        assert_eq!(wire, None, "a known category is no wire category");
    }

    #[test]
    fn malformed_framework_events_are_errors_not_panics() {
        assert!(matches!(
            decode(br#"{"type":"aoi:summary"}"#),
            Err(DecodeError::Framework { .. })
        ));
        assert!(matches!(
            decode(br#"{"no":"type"}"#),
            Err(DecodeError::NoType)
        ));
        assert!(matches!(decode(b"[1]"), Err(DecodeError::Json(_))));
    }

    #[test]
    fn meta_args_of_any_shape_are_read_with_every_value_kept_section_11() {
        // §11: "`aoi:meta.args` is optional and dangerous" — it gives args no type.
        let line =
            br#"{"type":"aoi:meta","tool":"t","args":{"slug":"a","limit":2,"token":"[REDACTED]"}}"#;
        let Event::Meta(meta) = decode(line).unwrap().event else {
            panic!("not a meta")
        };
        assert_eq!(
            meta.args.unwrap(),
            ["--limit=2", "--slug=a", "--token=[REDACTED]"]
        );
        for (args, want) in [
            (r#"["get",1,true]"#, vec!["get", "1", "true"]),
            (r#""get a""#, vec!["get a"]),
            (r#"["get","a"]"#, vec!["get", "a"]),
        ] {
            let line = format!(r#"{{"type":"aoi:meta","tool":"t","args":{args}}}"#);
            let Event::Meta(meta) = decode(line.as_bytes()).unwrap().event else {
                panic!("not a meta")
            };
            assert_eq!(meta.args.unwrap(), want, "{args}");
        }
    }

    #[test]
    fn a_plan_that_says_what_it_does_only_in_properties_is_a_plan_section_8_3() {
        // §8.3 defines no field of aoi:plan; §8.1 puts tool additions in `properties`.
        let line = br#"{"type":"aoi:plan","properties":{"op":"add","slug":"a"}}"#;
        let Event::Plan(plan) = decode(line).unwrap().event else {
            panic!("not a plan")
        };
        assert_eq!(plan.action, "");
        assert_eq!(plan.properties.unwrap()["slug"], "a");
        // What the SDK writes reads back as written.
        let line = br#"{"type":"aoi:plan","action":"delete","target":"n1"}"#;
        let Event::Plan(plan) = decode(line).unwrap().event else {
            panic!("not a plan")
        };
        assert_eq!(
            (plan.action.as_str(), plan.target.as_deref()),
            ("delete", Some("n1"))
        );
    }
}
