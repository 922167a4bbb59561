//! The wire model of AOI-CLI v1.0-alpha: framework events, the envelope, the error taxonomy,
//! exit codes and versions (spec §2, §4, §5, §6, §8, §9).

pub mod category;
pub mod error;
pub mod events;
pub mod mapping;
pub mod text;

pub use category::{exit_code, Category};
pub use error::{ErrorEvent, Protocol, Scope, Wrapped};
pub(crate) use events::FRAMEWORK_TYPES;
pub use events::{
    CausedBy, Check, Envelope, FrameworkEvent, Heartbeat, Identity, Meta, Plan, Progress, Reason,
    Severity, Summary, Upstream, Warning, AOI_VERSION,
};
pub use text::{escape_json, push_json_string, single_line, Code, InvalidCode};

/// Domain events: any serializable type that names its `type`.
///
/// The top-level names `type` and `aoi` are reserved (§8.1); the emitter refuses an event whose
/// serialization uses them, and a `type` in the `aoi:` namespace (§8.2). Serialize the event as
/// a struct or a map; an internally tagged enum (`#[serde(tag = "type")]`) would write `type`
/// itself, so name it in [`DomainEvent::TYPE`] instead.
///
/// The name is written once, there: the schema registers the type under it
/// ([`EventSchema::domain_event`](crate::discover::schema::EventSchema::domain_event)), the
/// emitter writes it, and the app checks at start-up that the command statements name only
/// registered types.
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Hit { rank: u32, id: String, title: String }
///
/// impl aoi::DomainEvent for Hit {
///     const TYPE: &'static str = "hit";
/// }
/// ```
pub trait DomainEvent: serde::Serialize {
    /// The event's `type`, unprefixed and owned by the tool's schema.
    const TYPE: &'static str;

    /// The `type` of this value: [`DomainEvent::TYPE`], unless a type chooses its name at run
    /// time (then `TYPE` is the name it registers in the schema).
    fn event_type(&self) -> &str {
        Self::TYPE
    }
}
