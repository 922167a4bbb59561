//! Typed decoding of one line, tolerant the way §8.2, §9.4 and §10.3 ask a consumer to be:
//! unknown fields are ignored, unknown domain types are kept as data, an unknown `aoi:` type is
//! kept apart (a consumer must not report success over it), and an unknown error category is
//! routed as `internal` with the wire value preserved in `details.category`.

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
    let mut fields: Map<String, Value> = serde_json::from_slice(line)?;
    let ty = match fields.remove("type") {
        Some(Value::String(ty)) => ty,
        _ => return Err(DecodeError::NoType),
    };
    let envelope = fields
        .remove("aoi")
        .and_then(|v| serde_json::from_value::<Envelope>(v).ok());
    let event = match ty.as_str() {
        "aoi:meta" => Event::Meta(typed(&ty, fields)?),
        "aoi:summary" => Event::Summary(typed(&ty, fields)?),
        "aoi:error" => {
            route_unknown_category(&mut fields);
            Event::Error(typed(&ty, fields)?)
        }
        "aoi:warning" => Event::Warning(typed(&ty, fields)?),
        "aoi:check" => Event::Check(typed(&ty, fields)?),
        "aoi:plan" => Event::Plan(typed(&ty, fields)?),
        "aoi:progress" => Event::Progress(typed(&ty, fields)?),
        "aoi:heartbeat" => Event::Heartbeat(typed(&ty, fields)?),
        _ if ty.starts_with("aoi:") => Event::UnknownFramework { ty, fields },
        _ => Event::Domain { ty, fields },
    };
    Ok(Decoded { envelope, event })
}

fn typed<T: DeserializeOwned>(ty: &str, fields: Map<String, Value>) -> Result<T, DecodeError> {
    serde_json::from_value(Value::Object(fields)).map_err(|source| DecodeError::Framework {
        ty: ty.to_owned(),
        source,
    })
}

/// §9.4: an unrecognized category must not fail the consumer; route it as `internal`.
fn route_unknown_category(fields: &mut Map<String, Value>) {
    let unknown = match fields.get("category") {
        Some(Value::String(c)) => Category::parse(c).is_none(),
        _ => false,
    };
    if unknown {
        if let Some(original) = fields.insert("category".into(), Value::from("internal")) {
            let details = fields
                .entry("details")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(details) = details {
                details.insert("category".into(), original);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
