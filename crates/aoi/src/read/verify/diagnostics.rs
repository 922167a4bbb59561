//! Diagnostics: `aoi:error` and `aoi:warning` (§9), their categories, `caused_by` and
//! `upstream` (§9.4, §13.1), and `aoi:check`.

use serde_json::{Map, Value};

use super::Verifier;
use crate::read::finding::FindingCode;
use crate::wire::text::json_kind as kind;
use crate::wire::{Category, Code, ErrorEvent};

impl Verifier {
    pub(super) fn error(&mut self, number: u64, fields: &Map<String, Value>) {
        self.errors += 1;
        let category = match fields.get("category") {
            None => {
                self.violation(
                    FindingCode::ErrorCategoryMissing,
                    number,
                    "aoi:error has no `category`",
                );
                None
            }
            Some(v) => self.category(number, v, "aoi:error", fields.contains_key("origin")),
        };
        let code = match fields.get("code") {
            Some(Value::String(c)) if crate::wire::text::is_valid_code(c) => {
                Code::new(c.clone()).ok()
            }
            Some(Value::String(c)) => {
                self.violation(
                    FindingCode::ErrorCodeInvalid,
                    number,
                    format!("code {c:?} does not match [A-Z][A-Z0-9_]*"),
                );
                None
            }
            Some(other) => {
                self.violation(
                    FindingCode::ErrorCodeInvalid,
                    number,
                    format!("`code` is {other}, not a string"),
                );
                None
            }
            None => {
                self.violation(
                    FindingCode::ErrorCodeInvalid,
                    number,
                    "aoi:error has no `code`",
                );
                None
            }
        };
        match fields.get("message") {
            Some(Value::String(m)) => {
                if let Some(problem) = single_line_problem(m) {
                    self.violation(
                        FindingCode::ErrorMessageInvalid,
                        number,
                        format!("`message` {problem}"),
                    );
                }
            }
            Some(other) => {
                self.violation(
                    FindingCode::ErrorMessageInvalid,
                    number,
                    format!("`message` is {other}, not a string"),
                );
            }
            None => self.violation(
                FindingCode::ErrorMessageInvalid,
                number,
                "aoi:error has no `message`",
            ),
        }
        let retryable = match fields.get("retryable") {
            Some(Value::Bool(r)) => Some(*r),
            Some(other) => {
                self.violation(
                    FindingCode::ErrorRetryableMissing,
                    number,
                    format!("`retryable` is {other}, not a boolean"),
                );
                None
            }
            None => {
                self.violation(
                    FindingCode::ErrorRetryableMissing,
                    number,
                    "aoi:error has no `retryable`: it is required and authoritative",
                );
                None
            }
        };
        let retry_after = fields.get("retry_after_ms");
        if let Some(v) = retry_after {
            if !v.is_u64() {
                self.violation(
                    FindingCode::RetryAfterInvalid,
                    number,
                    format!("`retry_after_ms` is {v}, not a non-negative integer"),
                );
            }
            if retryable == Some(false) {
                self.violation(
                    FindingCode::RetryAfterNotRetryable,
                    number,
                    "`retry_after_ms` must not appear with `retryable:false`",
                );
            }
        }
        let scope = fields.get("scope");
        let is_item = match scope {
            None => false,
            Some(Value::String(s)) if s == "process" => false,
            Some(Value::String(s)) if s == "item" => true,
            Some(other) => {
                self.violation(
                    FindingCode::ErrorFieldInvalid,
                    number,
                    format!("`scope` is {other}, not \"process\" or \"item\""),
                );
                false
            }
        };
        for problem in diagnostic_field_problems(fields) {
            self.violation(FindingCode::ErrorFieldInvalid, number, problem);
        }
        self.recommended_error_fields(number, fields, category, retryable, is_item);
        if fields.contains_key("upstream") {
            self.violation(
                FindingCode::V02ErrorUpstream,
                number,
                "aoi:error.upstream was renamed `wrapped` in v1.0-alpha",
            );
        }
        let origin = fields.get("origin").and_then(Value::as_str);
        // A non-string `origin` is a violation above; it still marks the error as forwarded.
        let forwarded = fields.contains_key("origin");
        if !is_item && !forwarded {
            self.process_errors += 1;
        }
        if let (Some(category), Some(code), Some(retryable)) = (category, code, retryable) {
            let mut e = ErrorEvent::new(category, code, "").retryable(retryable);
            if let Some(ms) = retry_after.and_then(Value::as_u64) {
                e = e.retry_after_ms(ms);
            }
            if let Some(origin) = origin {
                e = e.origin(origin);
            }
            let process = !is_item;
            if self
                .worst_error
                .as_ref()
                .is_none_or(|(p, _)| process && !*p)
            {
                self.worst_error = Some((process, e));
            }
        }
    }

    /// What §9.1, §9.2 and §9.5 ask of an error beyond its required fields, each a notice: an
    /// index on an item error, a `domain`, the `target` of a `not_found`, the `retry_after_ms`
    /// of a retryable `rate_limited`, and the category §9.5 gives a `wrapped` status.
    ///
    /// The index is a notice although §9.2's prose says item failures use scope "item" "and an
    /// index" (MUST): §9.1's table, which defines the fields, makes `item_index`/`line_number`
    /// a SHOULD, "correlation back to the input record", and an item with no input record (a
    /// file met in a walk) has none to give (spec-corpus/OPEN.md).
    fn recommended_error_fields(
        &mut self,
        number: u64,
        fields: &Map<String, Value>,
        category: Option<Category>,
        retryable: Option<bool>,
        is_item: bool,
    ) {
        if is_item && !fields.contains_key("item_index") && !fields.contains_key("line_number") {
            self.notice(
                FindingCode::ItemErrorIndexMissing,
                number,
                "an item error with neither `item_index` nor `line_number`, its correlation back to the input record (§9.1 SHOULD, §9.2)",
            );
        }
        if !fields.contains_key("domain") {
            self.notice(
                FindingCode::ErrorDomainMissing,
                number,
                "aoi:error has no `domain`, the namespace of its code (§9.1 SHOULD; it defaults to aoi:meta.tool)",
            );
        }
        if category == Some(Category::NotFound) && !fields.contains_key("target") {
            self.notice(
                FindingCode::ErrorTargetMissing,
                number,
                "a not_found error without `target`, the resource it concerns (§9.1 SHOULD)",
            );
        }
        if category == Some(Category::RateLimited)
            && retryable == Some(true)
            && !fields.contains_key("retry_after_ms")
        {
            self.notice(
                FindingCode::RetryAfterMissing,
                number,
                "a retryable rate_limited error without `retry_after_ms` (§9.2: it SHOULD carry one)",
            );
        }
        if let (Some(category), Some(mapped)) =
            (category, fields.get("wrapped").and_then(mapped_category))
        {
            if category != mapped.1 {
                self.notice(
                    FindingCode::WrappedMappingDiffers,
                    number,
                    format!(
                        "`wrapped` is {}, which §9.5 maps to {}; the error says {} (right only when the tool knows better than the table)",
                        mapped.0,
                        mapped.1.as_str(),
                        category.as_str()
                    ),
                );
            }
        }
    }

    /// A `category` value (§9.2): unknown ones are a violation where the stream claims exactly
    /// v1.0-alpha, and a notice, routed as `internal`, where it declares another 1.x (§9.4) or
    /// where the error was forwarded from another tool (`forwarded`: it carries `origin`, and
    /// its category belongs to the origin's version, which this stream cannot vouch for).
    pub(super) fn category(
        &mut self,
        number: u64,
        value: &Value,
        what: &str,
        forwarded: bool,
    ) -> Option<Category> {
        match value {
            Value::String(c) => match (Category::parse(c), c.as_str()) {
                (Some(c), _) => Some(c),
                (None, "temporary") => {
                    self.violation(
                        FindingCode::V02CategoryTemporary,
                        number,
                        format!("{what}: category \"temporary\" was renamed \"unavailable\" in v1.0-alpha"),
                    );
                    None
                }
                (None, "partial") => {
                    self.violation(
                        FindingCode::V02CategoryPartial,
                        number,
                        format!("{what}: category \"partial\" was removed: use the item's real category with scope \"item\" and aoi:summary.partial"),
                    );
                    None
                }
                (None, other) => {
                    // §9.2: a new category is a minor version bump, and §9.4 forbids failing on
                    // one; only a producer that claims exactly this version is held to the enum.
                    if self.other_minor || forwarded {
                        self.notice(
                            FindingCode::ErrorCategoryInvalid,
                            number,
                            format!("{what}: category {other:?} is not in the v1.0-alpha enum; routed as internal (§9.4)"),
                        );
                        Some(Category::Internal)
                    } else {
                        self.violation(
                            FindingCode::ErrorCategoryInvalid,
                            number,
                            format!("{what}: category {other:?} is not in the closed enum of §9.2"),
                        );
                        None
                    }
                }
            },
            other => {
                self.violation(
                    FindingCode::ErrorCategoryInvalid,
                    number,
                    format!("{what}: `category` is {}, not a string", kind(other)),
                );
                None
            }
        }
    }

    /// `aoi:summary.caused_by` (§13.1): the retry-critical fields of an error, with their §9.1
    /// types and rules.
    pub(super) fn caused_by(&mut self, number: u64, value: &Value) {
        let Value::Object(fields) = value else {
            self.violation(
                FindingCode::CausedByInvalid,
                number,
                format!("`caused_by` is {}, not an object", kind(value)),
            );
            return;
        };
        match fields.get("category") {
            Some(v) => {
                self.category(number, v, "caused_by", fields.contains_key("origin"));
            }
            None => self.violation(
                FindingCode::CausedByInvalid,
                number,
                "`caused_by` has no `category`",
            ),
        }
        match fields.get("code") {
            Some(Value::String(c)) if crate::wire::text::is_valid_code(c) => {}
            _ => self.violation(
                FindingCode::CausedByInvalid,
                number,
                "`caused_by.code` must be a string matching [A-Z][A-Z0-9_]*",
            ),
        }
        let retryable = fields.get("retryable").and_then(Value::as_bool);
        if retryable.is_none() {
            self.violation(
                FindingCode::CausedByInvalid,
                number,
                "`caused_by.retryable` must be a boolean: it is the retry disposition (§9.3)",
            );
        }
        if let Some(v) = fields.get("retry_after_ms") {
            if !v.is_u64() {
                self.violation(
                    FindingCode::RetryAfterInvalid,
                    number,
                    format!("`caused_by.retry_after_ms` is {v}, not a non-negative integer"),
                );
            }
            if retryable == Some(false) {
                self.violation(
                    FindingCode::RetryAfterNotRetryable,
                    number,
                    "`caused_by.retry_after_ms` must not appear with `retryable:false` (§9.1)",
                );
            }
        }
        if let Some(v) = fields.get("origin") {
            if !v.is_string() {
                self.violation(
                    FindingCode::CausedByInvalid,
                    number,
                    format!("`caused_by.origin` is {}, not a string", kind(v)),
                );
            }
        }
    }

    /// `aoi:summary.upstream` (§13.1): the direct upstream's identity, omitted when unknown,
    /// never null.
    pub(super) fn upstream(&mut self, number: u64, value: &Value) {
        let Value::Object(fields) = value else {
            self.violation(
                FindingCode::UpstreamInvalid,
                number,
                format!(
                    "`upstream` is {}: when the upstream's identity is unknown the key must be omitted",
                    kind(value)
                ),
            );
            return;
        };
        if fields.contains_key("protocol") || fields.contains_key("status") {
            self.violation(
                FindingCode::V02UpstreamShape,
                number,
                "`upstream` carries `protocol`/`status`, the v0.2 wrapped-service shape: that is aoi:error.wrapped; aoi:summary.upstream is the upstream tool's identity",
            );
            return;
        }
        for (key, v) in fields {
            if !v.is_string() {
                self.violation(
                    FindingCode::UpstreamInvalid,
                    number,
                    format!(
                        "`upstream.{key}` is {}, not a string: omit what is unknown",
                        kind(v)
                    ),
                );
            }
        }
        if fields.is_empty() {
            self.notice(
                FindingCode::UpstreamInvalid,
                number,
                "`upstream` is empty: when the upstream's identity is unknown the key is omitted",
            );
        }
    }

    /// `aoi:warning`: the §9.1 fields it carries, none required, with their §9.1 types.
    pub(super) fn warning(&mut self, number: u64, fields: &Map<String, Value>) {
        self.warnings += 1;
        match fields.get("message") {
            Some(Value::String(m)) => {
                if let Some(problem) = single_line_problem(m) {
                    self.violation(
                        FindingCode::WarningFieldInvalid,
                        number,
                        format!("`message` {problem}"),
                    );
                }
            }
            Some(other) => self.violation(
                FindingCode::WarningFieldInvalid,
                number,
                format!("`message` is {}, not a string", kind(other)),
            ),
            None => {}
        }
        match fields.get("code") {
            Some(Value::String(c)) if crate::wire::text::is_valid_code(c) => {}
            Some(other) => self.violation(
                FindingCode::WarningFieldInvalid,
                number,
                format!("`code` {other} is not a string matching [A-Z][A-Z0-9_]*"),
            ),
            None => {}
        }
        if let Some(v) = fields.get("category") {
            self.category(number, v, "aoi:warning", fields.contains_key("origin"));
        }
        if let Some(v) = fields.get("retryable") {
            if !v.is_boolean() {
                self.violation(
                    FindingCode::WarningFieldInvalid,
                    number,
                    format!("`retryable` is {}, not a boolean", kind(v)),
                );
            }
        }
        if let Some(v) = fields.get("retry_after_ms") {
            if !v.is_u64() {
                self.violation(
                    FindingCode::WarningFieldInvalid,
                    number,
                    format!("`retry_after_ms` is {v}, not a non-negative integer"),
                );
            }
        }
        if let Some(v) = fields.get("scope") {
            if !matches!(v.as_str(), Some("process" | "item")) {
                self.violation(
                    FindingCode::WarningFieldInvalid,
                    number,
                    format!("`scope` is {v}, not \"process\" or \"item\""),
                );
            }
        }
        for problem in diagnostic_field_problems(fields) {
            self.violation(FindingCode::WarningFieldInvalid, number, problem);
        }
    }

    pub(super) fn check(&mut self, number: u64, fields: &Map<String, Value>) {
        let name_ok = fields.get("name").is_some_and(Value::is_string);
        let ok_ok = fields.get("ok").is_some_and(Value::is_boolean);
        if !(name_ok && ok_ok) {
            self.violation(
                FindingCode::CheckInvalid,
                number,
                "aoi:check needs a string `name` and a boolean `ok`",
            );
        }
    }
}

/// The §9.1 fields an error and a warning share, where they have the wrong shape: indices that
/// are not non-negative integers, `wrapped`, strings, objects. One message per field.
fn diagnostic_field_problems(fields: &Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    for key in ["item_index", "line_number"] {
        if let Some(v) = fields.get(key) {
            if !v.is_u64() {
                problems.push(format!("`{key}` is {v}, not a non-negative integer"));
            }
        }
    }
    if let Some(problem) = fields.get("wrapped").and_then(wrapped_problem) {
        problems.push(problem);
    }
    for key in ["origin", "domain", "target", "field", "hint", "docs"] {
        if let Some(v) = fields.get(key) {
            if !v.is_string() {
                problems.push(format!("`{key}` is {}, not a string", kind(v)));
            }
        }
    }
    for key in ["details", "properties"] {
        if let Some(v) = fields.get(key) {
            if !v.is_object() {
                problems.push(format!("`{key}` is {}, not an object", kind(v)));
            }
        }
    }
    problems
}

/// The category §9.5 maps a `wrapped` failure to, with the status as the message names it:
/// an HTTP error status (400–599), or a gRPC code by number or name (in `status` or `code`).
/// `None` for a wrapped exit status, a success, or what the table cannot read.
fn mapped_category(wrapped: &Value) -> Option<(String, Category)> {
    use crate::wire::mapping::{GrpcCode, Wrap};
    let status = wrapped.get("status");
    match wrapped.get("protocol").and_then(Value::as_str)? {
        "http" => {
            let n = match status? {
                Value::Number(n) => n.as_u64()?,
                Value::String(s) => s.trim().parse().ok()?,
                _ => return None,
            };
            let n = u16::try_from(n).ok().filter(|n| (400..600).contains(n))?;
            Some((format!("HTTP {n}"), Wrap::http(n).category))
        }
        "grpc" => {
            let code = [status, wrapped.get("code")]
                .into_iter()
                .flatten()
                .find_map(|v| match v {
                    Value::Number(n) => n.as_i64().and_then(GrpcCode::from_number),
                    Value::String(s) => GrpcCode::from_name(s.trim()),
                    _ => None,
                })?;
            if code == GrpcCode::Ok {
                return None;
            }
            Some((format!("gRPC {}", code.name()), Wrap::grpc(code).category))
        }
        _ => None,
    }
}

/// Why a `wrapped` value is not `{protocol, status?, code?}` (§9.1), if it is not.
fn wrapped_problem(w: &Value) -> Option<String> {
    let Value::Object(w) = w else {
        return Some(format!("`wrapped` is {}, not an object", kind(w)));
    };
    if !matches!(
        w.get("protocol").and_then(Value::as_str),
        Some("http" | "grpc" | "exit")
    ) {
        return Some("`wrapped.protocol` must be \"http\", \"grpc\" or \"exit\"".into());
    }
    for key in ["status", "code"] {
        match w.get(key) {
            None | Some(Value::String(_)) => {}
            Some(Value::Number(n)) if n.is_u64() || n.is_i64() => {}
            Some(v) => {
                return Some(format!(
                    "`wrapped.{key}` is {}, not an integer or a string",
                    kind(v)
                ))
            }
        }
    }
    None
}

/// Why `text` is not a clean single line, if it is not.
fn single_line_problem(text: &str) -> Option<&'static str> {
    if text.contains(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}']) {
        Some("spans more than one line")
    } else if text.contains(['\u{1b}', '\u{9b}']) {
        Some("contains an ANSI escape")
    } else {
        None
    }
}
