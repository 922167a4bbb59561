//! The MCP revisions served, and what the protocol layer answers that rmcp leaves to a server.
//!
//! `aoi mcp` serves 2026-07-28 (stateless: `server/discover`, no `initialize`, no session,
//! `resultType`, caching hints) and the three revisions before it that have `initialize`:
//! 2025-11-25, 2025-06-18 and 2025-03-26. rmcp negotiates among [`SERVED`] and routes each
//! request by its revision; the HTTP gate ([`crate::http`]) and the stdio transport
//! ([`crate::stdio`]) add what JSON-RPC says of bytes rmcp never decodes.

use rmcp::model::{
    CallToolRequestParams, CustomRequest, ErrorCode, PaginatedRequestParams, ProtocolVersion,
};
use rmcp::ErrorData as McpError;

/// The revisions served, oldest first.
pub const SERVED: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// How long a client may keep `tools/list` and `server/discover` (`ttlMs`, one hour).
///
/// The list is the CLI's discovery (cached on disk, keyed by the files the CLI runs from): it
/// changes only with a new version of the CLI. The adapter checks those files at every
/// request; when they change it discovers the CLI again, serves the new tools at once, and
/// tells each stateful session with `notifications/tools/list_changed` (a stateless 2026-07-28
/// client sees the new list when its hour is up; a call to a tool that is gone is `-32602`).
/// The same for every caller, hence `cacheScope: "public"`.
pub const LIST_TTL_MS: u64 = 60 * 60 * 1000;

/// The methods this server implements: a request for one of them that rmcp could not decode
/// (and so handed over as a custom request) has invalid params, not an unknown method.
const SERVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
];

/// The error for a request rmcp handed over undecoded: `-32602` (invalid params, with what
/// is wrong) for a method served, `-32601` (method not found) for any other.
pub fn unparsed_request(request: &CustomRequest) -> McpError {
    let method = request.method.as_str();
    if !SERVED_METHODS.contains(&method) {
        return McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("no method `{method}`"),
            None,
        );
    }
    let params = request.params.clone().unwrap_or(serde_json::Value::Null);
    let why = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params)
            .err()
            .map(|e| e.to_string()),
        "tools/list" => serde_json::from_value::<Option<PaginatedRequestParams>>(params)
            .err()
            .map(|e| e.to_string()),
        _ => None,
    };
    let message = match why {
        Some(why) => format!("invalid params for `{method}`: {why}"),
        None => format!("invalid params for `{method}`"),
    };
    McpError::invalid_params(message, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_served_method_with_bad_params_is_invalid_params() {
        let error = unparsed_request(&CustomRequest::new("tools/call", Some(json!({"name": 5}))));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("tools/call"), "{}", error.message);
        let error = unparsed_request(&CustomRequest::new("tools/call", None));
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn any_other_method_is_not_found() {
        let error = unparsed_request(&CustomRequest::new("prompts/get", Some(json!({}))));
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
    }
}
