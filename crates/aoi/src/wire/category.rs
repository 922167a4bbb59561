//! The closed error taxonomy of spec §9.2 and the one mapping from it to exit codes (§6).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A semantic error class from the closed enum of spec §9.2.
///
/// The enum is owned by the specification: a producer may only emit these values. A consumer that
/// reads an unknown value must not fail (§9.4); [`Category::parse`] returns `None` for it and the
/// reader routes it as [`Category::Internal`] while keeping the wire value.
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
#[schemars(
    rename = "aoi.category",
    description = "A semantic error class from the closed enum of spec §9.2. A consumer that meets a value it does not know must not fail; it routes it as `internal` (§9.4)."
)]
pub enum Category {
    /// Invalid CLI usage or a missing required operand.
    Usage,
    /// Input parsed but failed schema or domain validation.
    Validation,
    /// Missing or invalid configuration.
    Config,
    /// Missing or expired credentials.
    Authn,
    /// Credentials valid, action not allowed.
    Authz,
    /// The target resource does not exist.
    NotFound,
    /// Concurrent modification, version mismatch, or destination exists.
    Conflict,
    /// System state must be fixed before this can succeed.
    PreconditionFailed,
    /// Well-formed invocation of a capability that does not exist.
    Unsupported,
    /// Time-based throttling or quota.
    RateLimited,
    /// Transient dependency, network or service failure.
    Unavailable,
    /// The operation exceeded a deadline.
    Timeout,
    /// Interrupted by the caller or the system.
    Cancelled,
    /// Filesystem or stdio failure, including a broken pipe.
    Io,
    /// A bug in the tool.
    Internal,
}

impl Category {
    /// Every category, in the order of the spec's table.
    pub const ALL: [Category; 15] = [
        Category::Usage,
        Category::Validation,
        Category::Config,
        Category::Authn,
        Category::Authz,
        Category::NotFound,
        Category::Conflict,
        Category::PreconditionFailed,
        Category::Unsupported,
        Category::RateLimited,
        Category::Unavailable,
        Category::Timeout,
        Category::Cancelled,
        Category::Io,
        Category::Internal,
    ];

    /// The wire spelling, e.g. `"rate_limited"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Category::Usage => "usage",
            Category::Validation => "validation",
            Category::Config => "config",
            Category::Authn => "authn",
            Category::Authz => "authz",
            Category::NotFound => "not_found",
            Category::Conflict => "conflict",
            Category::PreconditionFailed => "precondition_failed",
            Category::Unsupported => "unsupported",
            Category::RateLimited => "rate_limited",
            Category::Unavailable => "unavailable",
            Category::Timeout => "timeout",
            Category::Cancelled => "cancelled",
            Category::Io => "io",
            Category::Internal => "internal",
        }
    }

    /// Parses a wire spelling; `None` for anything outside the closed enum (including the removed
    /// v0.2 values `temporary` and `partial`).
    pub fn parse(value: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == value)
    }

    /// The default `retryable` of §9.2. Producers always emit `retryable` explicitly; this is the
    /// value they start from.
    pub const fn default_retryable(self) -> bool {
        matches!(
            self,
            Category::RateLimited | Category::Unavailable | Category::Timeout
        )
    }

    /// The process exit code for a run that failed with this category (§6, sysexits).
    pub const fn exit_code(self) -> u8 {
        match self {
            Category::Usage => exit_code::USAGE,
            Category::Validation | Category::Conflict | Category::PreconditionFailed => {
                exit_code::DATA_ERR
            }
            Category::NotFound => exit_code::NO_INPUT,
            Category::Unsupported | Category::Unavailable => exit_code::UNAVAILABLE,
            Category::Internal => exit_code::SOFTWARE,
            Category::Io => exit_code::IO_ERR,
            Category::RateLimited => exit_code::TEMP_FAIL,
            Category::Authn | Category::Authz => exit_code::NO_PERM,
            Category::Config => exit_code::CONFIG,
            Category::Timeout => exit_code::TIMEOUT,
            Category::Cancelled => exit_code::SIGINT,
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Exit codes of spec §6: sysexits where they fit, then the shell's signal conventions.
///
/// | code | meaning | from |
/// |---:|---|---|
/// | 0 | success: a terminal `aoi:summary` with `ok:true` | |
/// | 1 | the run failed without a process-scope error (e.g. a doctor check failed) | |
/// | 64 | usage error | `usage` |
/// | 65 | data error | `validation`, `conflict`, `precondition_failed` |
/// | 66 | input does not exist | `not_found` |
/// | 69 | unavailable | `unavailable`, `unsupported` |
/// | 70 | internal software error, panics | `internal` |
/// | 74 | I/O error | `io` |
/// | 75 | temporary failure, retry may succeed | `rate_limited` |
/// | 77 | permission | `authn`, `authz`, reason `denied` |
/// | 78 | configuration | `config` |
/// | 124 | timeout | `timeout`, reason `timeout` |
/// | 130 | interrupted by SIGINT | `cancelled`, reason `cancelled` |
/// | 141 | downstream closed the pipe | broken pipe on stdout |
/// | 143 | terminated by SIGTERM | |
pub mod exit_code {
    /// Success.
    pub const OK: u8 = 0;
    /// A failure with no more specific code.
    pub const FAILURE: u8 = 1;
    /// `EX_USAGE`.
    pub const USAGE: u8 = 64;
    /// `EX_DATAERR`.
    pub const DATA_ERR: u8 = 65;
    /// `EX_NOINPUT`.
    pub const NO_INPUT: u8 = 66;
    /// `EX_UNAVAILABLE`.
    pub const UNAVAILABLE: u8 = 69;
    /// `EX_SOFTWARE`.
    pub const SOFTWARE: u8 = 70;
    /// `EX_CANTCREAT`.
    pub const CANT_CREATE: u8 = 73;
    /// `EX_IOERR`.
    pub const IO_ERR: u8 = 74;
    /// `EX_TEMPFAIL`.
    pub const TEMP_FAIL: u8 = 75;
    /// `EX_NOPERM`.
    pub const NO_PERM: u8 = 77;
    /// `EX_CONFIG`.
    pub const CONFIG: u8 = 78;
    /// Timed out.
    pub const TIMEOUT: u8 = 124;
    /// Interrupted by SIGINT (128 + 2).
    pub const SIGINT: u8 = 130;
    /// Downstream closed the pipe (128 + SIGPIPE).
    pub const SIGPIPE: u8 = 141;
    /// Terminated by SIGTERM (128 + 15).
    pub const SIGTERM: u8 = 143;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enum_has_exactly_the_fifteen_spec_values() {
        let names: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "usage",
                "validation",
                "config",
                "authn",
                "authz",
                "not_found",
                "conflict",
                "precondition_failed",
                "unsupported",
                "rate_limited",
                "unavailable",
                "timeout",
                "cancelled",
                "io",
                "internal"
            ]
        );
        for c in Category::ALL {
            assert_eq!(Category::parse(c.as_str()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
    }

    #[test]
    fn removed_v02_categories_do_not_parse() {
        assert_eq!(Category::parse("temporary"), None);
        assert_eq!(Category::parse("partial"), None);
    }

    #[test]
    fn only_rate_limited_unavailable_and_timeout_default_to_retryable() {
        let retryable: Vec<Category> = Category::ALL
            .into_iter()
            .filter(|c| c.default_retryable())
            .collect();
        assert_eq!(
            retryable,
            [
                Category::RateLimited,
                Category::Unavailable,
                Category::Timeout
            ]
        );
    }

    #[test]
    fn exit_codes_follow_sysexits() {
        assert_eq!(Category::Usage.exit_code(), 64);
        assert_eq!(Category::Validation.exit_code(), 65);
        assert_eq!(Category::Unavailable.exit_code(), 69);
        assert_eq!(Category::Internal.exit_code(), 70);
        assert_eq!(Category::Io.exit_code(), 74);
        assert_eq!(Category::RateLimited.exit_code(), 75);
        assert_eq!(Category::Authz.exit_code(), 77);
        assert_eq!(Category::Config.exit_code(), 78);
        assert_eq!(Category::Timeout.exit_code(), 124);
        assert_eq!(Category::Cancelled.exit_code(), 130);
        for c in Category::ALL {
            assert_ne!(c.exit_code(), 0, "{c} must not exit 0");
        }
    }
}
