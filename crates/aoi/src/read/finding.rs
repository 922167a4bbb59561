//! Findings: what the verifier reports, each with a stable code and the spec section it enforces.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// A SHOULD not met, or a factor not claimed: the stream is still conforming.
    Notice,
    /// A MUST of Part I broken: the stream violates the protocol.
    Violation,
}

impl Level {
    /// `"notice"` or `"violation"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Notice => "notice",
            Level::Violation => "violation",
        }
    }
}

macro_rules! codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $code:literal, $section:literal;)*) => {
        /// The stable identifier of a finding. The string form never changes once published.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum FindingCode {
            $($(#[doc = $doc])* $variant,)*
        }

        impl FindingCode {
            /// Every code.
            pub const ALL: &'static [FindingCode] = &[$(FindingCode::$variant,)*];

            /// The wire spelling, e.g. `"SEQ_GAP"`.
            pub const fn as_str(self) -> &'static str {
                match self { $(FindingCode::$variant => $code,)* }
            }

            /// The spec section the rule comes from, e.g. `"§8.1"`.
            pub const fn section(self) -> &'static str {
                match self { $(FindingCode::$variant => $section,)* }
            }

            /// Parses a wire spelling.
            pub fn parse(code: &str) -> Option<FindingCode> {
                FindingCode::ALL.iter().copied().find(|c| c.as_str() == code)
            }
        }
    };
}

codes! {
    /// A line is not valid UTF-8.
    InvalidUtf8 = "INVALID_UTF8", "§2";
    /// A line is not valid JSON.
    InvalidJson = "INVALID_JSON", "§2";
    /// A line is empty.
    EmptyLine = "EMPTY_LINE", "§2";
    /// A line is JSON but not an object.
    NotAnObject = "NOT_AN_OBJECT", "§2";
    /// An object has no `type`.
    TypeMissing = "TYPE_MISSING", "§8.1";
    /// `type` is not a string.
    TypeNotString = "TYPE_NOT_STRING", "§8.1";
    /// An ANSI escape (ESC or CSI) in the stream.
    AnsiEscape = "ANSI_ESCAPE", "§2";
    /// A line ends in `\r\n`.
    CrlfLineEnding = "CRLF_LINE_ENDING", "§2";
    /// A line exceeds the reader's limit.
    LineTooLong = "LINE_TOO_LONG", "§2";
    /// A line nests arrays and objects deeper than the reader's limit (127 levels).
    NestingTooDeep = "NESTING_TOO_DEEP", "§2";
    /// A number too large for an IEEE 754 double (`1e400`): consumers cannot agree on its value.
    NumberOutOfRange = "NUMBER_OUT_OF_RANGE", "§2";
    /// A `\u` escape of a UTF-16 surrogate without its pair: the string is not Unicode text.
    LoneSurrogate = "LONE_SURROGATE", "§2";
    /// A framework event, or an envelope, names the same key twice: consumers disagree on which wins.
    DuplicateKey = "DUPLICATE_KEY", "§8.1";
    /// The last line has no terminating `\n`.
    TruncatedLine = "TRUNCATED_LINE", "§2";
    /// `aoi:meta` is not the first line.
    MetaNotFirst = "META_NOT_FIRST", "§13.1";
    /// More than one `aoi:meta`.
    MetaRepeated = "META_REPEATED", "§13.1";
    /// No `aoi:meta` at all.
    MetaMissing = "META_MISSING", "§4";
    /// An `aoi:meta` field has the wrong JSON type.
    MetaFieldInvalid = "META_FIELD_INVALID", "§8.3";
    /// `aoi:meta.args` echoes a sensitive value unredacted.
    ArgsNotRedacted = "ARGS_NOT_REDACTED", "§11";
    /// The identity triple is incomplete on meta or summary.
    IdentityIncomplete = "IDENTITY_INCOMPLETE", "§5";
    /// Meta and summary name different identities.
    IdentityMismatch = "IDENTITY_MISMATCH", "§5";
    /// An `aoi_version` whose major this verifier does not know: its framework events cannot be
    /// interpreted (§5).
    AoiVersionUnknown = "AOI_VERSION_UNKNOWN", "§5";
    /// Lines follow the `aoi:summary`.
    SummaryNotLast = "SUMMARY_NOT_LAST", "§13.1";
    /// More than one `aoi:summary`.
    SummaryRepeated = "SUMMARY_REPEATED", "§13.1";
    /// EOF without a terminal `aoi:summary`.
    SummaryMissing = "SUMMARY_MISSING", "§4";
    /// The summary has no `ok`.
    OkMissing = "OK_MISSING", "§4";
    /// `ok` is not a boolean.
    OkNotBoolean = "OK_NOT_BOOLEAN", "§4";
    /// `ok:false` without a `reason`.
    ReasonMissing = "REASON_MISSING", "§8.3";
    /// A `reason` outside the closed enum, or not allowed with this `ok`.
    ReasonInvalid = "REASON_INVALID", "§8.3";
    /// `aoi.run` is not a ULID, which §8.1 recommends (a notice).
    RunNotUlid = "RUN_NOT_ULID", "§8.1";
    /// An `aoi:error` without `domain`, the namespace of its `code` (a notice, §9.1 SHOULD).
    ErrorDomainMissing = "ERROR_DOMAIN_MISSING", "§9.1";
    /// A `not_found` error that does not name its `target` (a notice, §9.1 SHOULD).
    ErrorTargetMissing = "ERROR_TARGET_MISSING", "§9.1";
    /// An item-scope error with neither `item_index` nor `line_number` (a notice, §9.1 SHOULD).
    ItemErrorIndexMissing = "ITEM_ERROR_INDEX_MISSING", "§9.2";
    /// A retryable `rate_limited` error without `retry_after_ms` (a notice, §9.2 SHOULD).
    RetryAfterMissing = "RETRY_AFTER_MISSING", "§9.2";
    /// An error whose `wrapped` status §9.5 maps to another category (a notice: the mapping is
    /// a SHOULD, and knowledge of the upstream MUST override it).
    WrappedMappingDiffers = "WRAPPED_MAPPING_DIFFERS", "§9.5";
    /// `ok:true` after a process-scope `aoi:error`.
    OkAfterProcessError = "OK_AFTER_PROCESS_ERROR", "§9.1";
    /// Some lines carry `aoi.seq` and this one does not.
    SeqMissing = "SEQ_MISSING", "§8.1";
    /// No line carries `aoi.seq`: the Verifiable factor is not claimed.
    SeqAbsent = "SEQ_ABSENT", "§8.1";
    /// `aoi.seq` is not a non-negative integer.
    SeqInvalid = "SEQ_INVALID", "§8.1";
    /// The first `aoi.seq` is not 0.
    SeqNotZeroBased = "SEQ_NOT_ZERO_BASED", "§8.1";
    /// `aoi.seq` skips or repeats: lines were lost or duplicated.
    SeqGap = "SEQ_GAP", "§8.1";
    /// `aoi.seq` without `aoi.run`, or `aoi.run` not a string.
    RunMissing = "RUN_MISSING", "§8.1";
    /// `aoi.run` changes within the stream.
    RunChanged = "RUN_CHANGED", "§8.1";
    /// `aoi` is not an object.
    EnvelopeNotObject = "ENVELOPE_NOT_OBJECT", "§8.1";
    /// `aoi.t` is not a non-negative number, or `aoi.trace_id` is not a string.
    EnvelopeFieldInvalid = "ENVELOPE_FIELD_INVALID", "§8.1";
    /// A key inside `aoi` that this version does not define (`seq`, `run`, `t`, `trace_id`).
    EnvelopeExtraField = "ENVELOPE_EXTRA_FIELD", "§8.1";
    /// The summary has no `event_count`: the Verifiable factor is not claimed.
    EventCountMissing = "EVENT_COUNT_MISSING", "§8.3";
    /// `event_count` differs from the lines received.
    EventCountMismatch = "EVENT_COUNT_MISMATCH", "§8.3";
    /// `count` differs from the domain events received.
    CountMismatch = "COUNT_MISMATCH", "§8.3";
    /// `error_count` is below the `aoi:error` events received.
    ErrorCountMismatch = "ERROR_COUNT_MISMATCH", "§8.3";
    /// `warning_count` is below the `aoi:warning` events received.
    WarningCountMismatch = "WARNING_COUNT_MISMATCH", "§8.3";
    /// A summary field has the wrong JSON type; as a notice, a `next_cursor` without
    /// `truncated:true` (§15).
    SummaryFieldInvalid = "SUMMARY_FIELD_INVALID", "§8.3";
    /// `partial:true` with no error at all.
    PartialWithoutErrors = "PARTIAL_WITHOUT_ERRORS", "§8.3";
    /// `reason:"skipped"` (did not run) on a stream that carries domain events.
    SkippedWithEvents = "SKIPPED_WITH_EVENTS", "§8.3";
    /// `caused_by` is not an object of the §13.1 retry fields with their §9.1 types.
    CausedByInvalid = "CAUSED_BY_INVALID", "§13.1";
    /// `caused_by` on a summary that says `ok:true`.
    CausedByOnSuccess = "CAUSED_BY_ON_SUCCESS", "§8.3";
    /// `upstream` is null, not an object, or has a null or non-string member (§13.1: omit it).
    UpstreamInvalid = "UPSTREAM_INVALID", "§13.1";
    /// `aoi:summary.upstream` shaped like the v0.2 `{protocol,status}` (now `aoi:error.wrapped`).
    V02UpstreamShape = "V02_UPSTREAM_SHAPE", "§5.2";
    /// An `aoi:error` without a `category`.
    ErrorCategoryMissing = "ERROR_CATEGORY_MISSING", "§9.1";
    /// A `category` outside the closed enum.
    ErrorCategoryInvalid = "ERROR_CATEGORY_INVALID", "§9.2";
    /// A missing `code` or one not matching `[A-Z][A-Z0-9_]*`.
    ErrorCodeInvalid = "ERROR_CODE_INVALID", "§9.1";
    /// A missing `message`, or one that is not a single line.
    ErrorMessageInvalid = "ERROR_MESSAGE_INVALID", "§9.1";
    /// `retryable` missing or not a boolean.
    ErrorRetryableMissing = "ERROR_RETRYABLE_MISSING", "§9.3";
    /// `retry_after_ms` with `retryable:false`.
    RetryAfterNotRetryable = "RETRY_AFTER_NOT_RETRYABLE", "§9.1";
    /// `retry_after_ms` not a non-negative integer.
    RetryAfterInvalid = "RETRY_AFTER_INVALID", "§9.1";
    /// Another `aoi:error` field has the wrong shape.
    ErrorFieldInvalid = "ERROR_FIELD_INVALID", "§9.1";
    /// An `aoi:warning` field has the wrong shape.
    WarningFieldInvalid = "WARNING_FIELD_INVALID", "§9.1";
    /// An `aoi:check` without a string `name` and a boolean `ok`.
    CheckInvalid = "CHECK_INVALID", "§8.3";
    /// `seq`/`run` at the top level: the v0.2 flat envelope.
    V02FlatEnvelope = "V02_FLAT_ENVELOPE", "§5.2";
    /// The v0.2 category `temporary` (renamed `unavailable`).
    V02CategoryTemporary = "V02_CATEGORY_TEMPORARY", "§5.2";
    /// The v0.2 category `partial` (removed).
    V02CategoryPartial = "V02_CATEGORY_PARTIAL", "§5.2";
    /// `aoi:error.upstream` (renamed `wrapped`).
    V02ErrorUpstream = "V02_ERROR_UPSTREAM", "§5.2";
    /// An `aoi:` event type this version does not define.
    UnknownFrameworkEvent = "UNKNOWN_FRAMEWORK_EVENT", "§13";
    /// A top-level field on a framework event the spec does not define (belongs in `properties`).
    FrameworkExtraField = "FRAMEWORK_EXTRA_FIELD", "§8.1";
    /// An event does not validate against the tool's published schema (§10, lint check 4).
    EventSchemaInvalid = "EVENT_SCHEMA_INVALID", "§10";
    /// The stream names another schema than the one it is checked against (§5).
    SchemaIdentityMismatch = "SCHEMA_IDENTITY_MISMATCH", "§5";
    /// The process exit status contradicts the summary.
    ExitStatusMismatch = "EXIT_STATUS_MISMATCH", "§4.1";
    /// The process exited non-zero or was killed: the run failed whatever the stream says (§4.1, §6).
    ProcessFailed = "PROCESS_FAILED", "§4.1";
    /// A consumer that relays the stream (`aoi verify --pass-through`) could not forward a line:
    /// the relayed stream is missing it.
    LineNotRelayed = "LINE_NOT_RELAYED", "§2";
    /// The process ended before its stream started: nothing on stdout, a non-zero exit (a usage
    /// error reported on stderr, §2).
    StreamNotStarted = "STREAM_NOT_STARTED", "§2";
}

impl fmt::Display for FindingCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl schemars::JsonSchema for FindingCode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "aoi.finding_code".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let codes: Vec<&str> = FindingCode::ALL.iter().map(|c| c.as_str()).collect();
        schemars::json_schema!({
            "description": "A stable verifier finding code.",
            "type": "string",
            "enum": codes
        })
    }
}

impl<'de> Deserialize<'de> for FindingCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        FindingCode::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown finding code {s:?}")))
    }
}

/// The longest finding message kept, in bytes. Messages quote what the stream said (a type, a
/// value, a code), and a stream is hostile input: without a bound, a thousand findings on
/// 64 MiB lines would hold gigabytes (docs/verifier.md, "Memory").
pub const MAX_MESSAGE: usize = 1024;

/// `message` cut to at most [`MAX_MESSAGE`] bytes, at a character boundary, ending in `…`
/// when cut.
pub fn bounded_message(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE - '…'.len_utf8();
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
        message.shrink_to_fit();
    }
    message
}

/// One thing the verifier found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// Stable code.
    pub code: FindingCode,
    /// Violation or notice.
    pub level: Level,
    /// 1-based line, when the finding is about one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The spec section, e.g. `"§8.1"`.
    pub section: String,
    /// One line saying what is wrong.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: ")?,
            None => f.write_str("stream: ")?,
        }
        write!(
            f,
            "{} {} ({}): {}",
            self.level.as_str(),
            self.code,
            self.section,
            self.message
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_stable_identifiers_with_sections() {
        let mut seen = std::collections::HashSet::new();
        for c in FindingCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {c}");
            assert!(crate::wire::text::is_valid_code(c.as_str()));
            assert!(c.section().starts_with('§'));
            assert_eq!(FindingCode::parse(c.as_str()), Some(*c));
        }
    }

    #[test]
    fn a_message_is_cut_at_a_character_boundary_to_the_bound() {
        assert_eq!(bounded_message("short".into()), "short");
        let long = "é".repeat(MAX_MESSAGE);
        let cut = bounded_message(long);
        assert!(cut.len() <= MAX_MESSAGE, "{}", cut.len());
        assert!(cut.len() > MAX_MESSAGE - 4);
        assert!(cut.ends_with('…'));
        assert!(cut.trim_end_matches('…').chars().all(|c| c == 'é'));
    }
}
