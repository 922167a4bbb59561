//! The adapter's own `aoi:error` objects: what `aoi mcp` reports as `adapter_error` when it,
//! not the CLI, ended or refused a call (a timeout, a refused argument, a CLI that would not
//! start).

use aoi::wire::FrameworkEvent;
use aoi::{Category, Code, ErrorEvent};
use serde_json::Value;

/// An `aoi:error` of the adapter's own, as the SDK builds one (its `retryable` is the
/// category's, its message one line), marked with `origin: "aoi mcp"`.
pub fn adapter_error(category: Category, code: &'static str, message: impl AsRef<str>) -> Value {
    error_value(ErrorEvent::new(category, Code::from_static(code), message))
}

/// `error` as an `aoi:error` object, marked with `origin: "aoi mcp"`.
pub fn error_value(error: ErrorEvent) -> Value {
    let mut value = serde_json::to_value(error.origin("aoi mcp")).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("type".into(), ErrorEvent::TYPE.into());
    }
    value
}
