//! The framework events of spec §8.3 and the `aoi` envelope of §8.1.
//!
//! Each struct here holds the event's own top-level fields; the `type` discriminator and the
//! `aoi` envelope are written around them by the emitter. Fields are optional where the spec lets
//! a producer omit them, so the same types decode any conforming stream; the emitter fills every
//! field the spec asks a producer to send.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::category::Category;
use super::error::ErrorEvent;
use super::text::Code;

/// The AOI version this crate implements. The field name `aoi_version` is frozen (§5).
pub const AOI_VERSION: &str = "1.0-alpha";

/// A framework event: one whose `type` is in the `aoi:` namespace.
pub trait FrameworkEvent: Serialize {
    /// The wire `type`, e.g. `"aoi:meta"`.
    const TYPE: &'static str;
}

/// The reserved `aoi` envelope object (§8.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.envelope")]
pub struct Envelope {
    /// Line counter: 0 on the first line, no gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Identifier of this invocation (a ULID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Milliseconds since `aoi:meta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t: Option<u64>,
    /// Correlation with an external trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// Who is speaking: the identity triple of §5 carried by both `aoi:meta` and `aoi:summary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The tool's name, e.g. `"outline"`.
    pub tool: String,
    /// The tool's release, e.g. `"1.8.2"`.
    pub tool_version: String,
    /// The event schema's name, e.g. `"com.example.outline.events"`.
    pub schema_name: String,
    /// The event schema's version, e.g. `"1.0.0"`.
    pub schema_version: String,
}

impl Identity {
    /// An identity from its four parts.
    pub fn new(
        tool: impl Into<String>,
        tool_version: impl Into<String>,
        schema_name: impl Into<String>,
        schema_version: impl Into<String>,
    ) -> Identity {
        Identity {
            tool: tool.into(),
            tool_version: tool_version.into(),
            schema_name: schema_name.into(),
            schema_version: schema_version.into(),
        }
    }
}

/// `aoi:meta`: the first line, describing the stream (§8.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.meta")]
pub struct Meta {
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool's release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// Always [`AOI_VERSION`] from this crate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "The AOI version, e.g. `\"1.0-alpha\"`; the field name is frozen (§5)."
    )]
    pub aoi_version: Option<String>,
    /// The event schema's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_name: Option<String>,
    /// The negotiated event schema version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
    /// The command being run, e.g. `"search"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Redacted arguments, only when a tool opts in (§11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// True when `args` was redacted or withheld (§11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_redacted: Option<bool>,
    /// A fingerprint of the input, e.g. `"sha256:…"` (§11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_fingerprint: Option<String>,
    /// Tool-specific additions (§8.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl FrameworkEvent for Meta {
    const TYPE: &'static str = "aoi:meta";
}

/// The closed `reason` enum of `aoi:summary` (§8.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "aoi.reason")]
pub enum Reason {
    /// The run failed.
    Failed,
    /// The run was cancelled by a signal or the caller.
    Cancelled,
    /// The run exceeded its deadline.
    Timeout,
    /// The run was refused: no confirmation, or not permitted.
    Denied,
    /// With `ok:true` only: the operation did not apply and did not run.
    Skipped,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 5] = [
        Reason::Failed,
        Reason::Cancelled,
        Reason::Timeout,
        Reason::Denied,
        Reason::Skipped,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Failed => "failed",
            Reason::Cancelled => "cancelled",
            Reason::Timeout => "timeout",
            Reason::Denied => "denied",
            Reason::Skipped => "skipped",
        }
    }

    /// Parses a wire spelling.
    pub fn parse(value: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == value)
    }

    /// True for the reasons valid with `ok:false`.
    pub const fn is_failure(self) -> bool {
        !matches!(self, Reason::Skipped)
    }
}

/// The retry-critical fields of the most severe upstream error (§13.1 `caused_by`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.caused_by")]
pub struct CausedBy {
    /// The tool that raised the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Its category.
    pub category: Category,
    /// Its code.
    pub code: Code,
    /// Its retry disposition.
    pub retryable: bool,
    /// Its retry delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl CausedBy {
    /// The retry fields of `error`, naming `origin` (the error's own origin wins when forwarded
    /// more than once).
    pub fn from_error(error: &ErrorEvent, origin: Option<&str>) -> CausedBy {
        CausedBy {
            origin: error.origin.clone().or_else(|| origin.map(str::to_owned)),
            category: error.category,
            code: error.code.clone(),
            retryable: error.retryable,
            retry_after_ms: if error.retryable {
                error.retry_after_ms
            } else {
                None
            },
        }
    }
}

/// The direct upstream's identity (§13.1 `upstream`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.upstream")]
pub struct Upstream {
    /// Upstream tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Upstream tool release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// Upstream schema name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_name: Option<String>,
    /// Upstream schema version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
}

impl Upstream {
    /// The identity an upstream `aoi:meta` declares; `None` when it declares none of it.
    pub fn from_meta(meta: &Meta) -> Option<Upstream> {
        let up = Upstream {
            tool: meta.tool.clone(),
            tool_version: meta.tool_version.clone(),
            schema_name: meta.schema_name.clone(),
            schema_version: meta.schema_version.clone(),
        };
        (up != Upstream::default()).then_some(up)
    }
}

/// `aoi:summary`: the terminal event and the run's outcome (§4, §8.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.summary")]
pub struct Summary {
    /// Whether the tool accomplished what was asked. Never defaulted.
    pub ok: bool,
    /// Required when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// Lines in the stream, this one included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_count: Option<u64>,
    /// Domain events this tool emitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Domain events this tool consumed from stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_count: Option<u64>,
    /// Warnings emitted plus those consumed from upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning_count: Option<u64>,
    /// Errors emitted plus those consumed from upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_count: Option<u64>,
    /// Usable output and at least one failed item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// The output was cut by a bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Where to continue when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Wall time of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// Retry fields of the upstream error that made this run fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caused_by: Option<CausedBy>,
    /// The direct upstream's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
    /// The tool's name (identity triple, §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool's release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// The AOI version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aoi_version: Option<String>,
    /// The event schema's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_name: Option<String>,
    /// The negotiated event schema version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
    /// Tool-specific additions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl FrameworkEvent for Summary {
    const TYPE: &'static str = "aoi:summary";
}

/// `aoi:warning`: a recoverable issue; the operation continues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.warning")]
pub struct Warning {
    /// Stable code, same pattern as error codes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
    /// Human-readable, single line.
    pub message: String,
    /// The tool that raised it when forwarded from upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The resource concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Input line (1-based) this warning concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_number: Option<u64>,
    /// Extension bag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
    /// Tool-specific additions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl Warning {
    /// A warning with a code and a message made single-line.
    pub fn new(code: Code, message: impl AsRef<str>) -> Warning {
        Warning {
            code: Some(code),
            message: super::text::single_line(message.as_ref()).into_owned(),
            origin: None,
            target: None,
            line_number: None,
            details: None,
            properties: None,
        }
    }

    /// Sets `target`.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }
}

impl FrameworkEvent for Warning {
    const TYPE: &'static str = "aoi:warning";
}

impl FrameworkEvent for ErrorEvent {
    const TYPE: &'static str = "aoi:error";
}

/// Severity of an `aoi:check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "aoi.severity")]
pub enum Severity {
    /// Informational.
    Info,
    /// Degraded but usable.
    Warning,
    /// Broken.
    Error,
}

/// `aoi:check`: one readiness or doctor check (§8.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.check")]
pub struct Check {
    /// Stable check name, e.g. `"config_file"`.
    pub name: String,
    /// Whether the check passed.
    pub ok: bool,
    /// How much a failure matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// What was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What to do about a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Tool-specific additions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl FrameworkEvent for Check {
    const TYPE: &'static str = "aoi:check";
}

/// `aoi:plan`: one planned side effect, emitted by `--dry-run` (§8.3, §14.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.plan")]
pub struct Plan {
    /// The effect, e.g. `"delete"`.
    pub action: String,
    /// The resource it touches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// A one-line description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Tool-specific additions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl Plan {
    /// The plan to `action` `target` (`Plan::new("delete", "n1")`); set `detail` and
    /// `properties` on the value for more.
    pub fn new(action: impl Into<String>, target: impl Into<String>) -> Plan {
        Plan {
            action: action.into(),
            target: Some(target.into()),
            detail: None,
            properties: None,
        }
    }
}

impl FrameworkEvent for Plan {
    const TYPE: &'static str = "aoi:plan";
}

/// `aoi:progress`: progress of a long operation; never required for correctness (§8.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.progress")]
pub struct Progress {
    /// Units done so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
    /// Units in all, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// What a unit is, e.g. `"documents"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// A one-line status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Tool-specific additions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl FrameworkEvent for Progress {
    const TYPE: &'static str = "aoi:progress";
}

/// `aoi:heartbeat`: an unbounded stream is quiet but alive (§4.2, §8.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "aoi.heartbeat")]
pub struct Heartbeat {
    /// The interval at which heartbeats are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u64>,
    /// Tool-specific additions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

impl FrameworkEvent for Heartbeat {
    const TYPE: &'static str = "aoi:heartbeat";
}

/// Every framework `type` this version of the spec defines.
pub(crate) const FRAMEWORK_TYPES: [&str; 8] = [
    Meta::TYPE,
    Summary::TYPE,
    Warning::TYPE,
    ErrorEvent::TYPE,
    Check::TYPE,
    Plan::TYPE,
    Progress::TYPE,
    Heartbeat::TYPE,
];
