//! Mapping wrapped HTTP and gRPC failures onto the taxonomy (spec §9.5).
//!
//! A tool wrapping a service turns the service's status into a [`Wrap`], applies the retry timing
//! headers and the operation's idempotency, and finishes it into an [`ErrorEvent`]:
//!
//! ```
//! use aoi::wire::mapping::{Operation, Wrap};
//! use aoi::{Category, Code};
//! let err = Wrap::http(429)
//!     .retry_after("120", std::time::SystemTime::now())
//!     .for_operation(Operation::Idempotent)
//!     .into_error(Code::from_static("UPSTREAM_RATE_LIMIT"), "Rate limited by the API.");
//! assert_eq!(err.category, Category::RateLimited);
//! assert_eq!(err.retry_after_ms, Some(120_000));
//! ```

use std::time::SystemTime;

use super::category::Category;
use super::error::{ErrorEvent, Protocol, Wrapped};
use super::text::Code;

/// The gRPC status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum GrpcCode {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl GrpcCode {
    const ALL: [GrpcCode; 17] = [
        GrpcCode::Ok,
        GrpcCode::Cancelled,
        GrpcCode::Unknown,
        GrpcCode::InvalidArgument,
        GrpcCode::DeadlineExceeded,
        GrpcCode::NotFound,
        GrpcCode::AlreadyExists,
        GrpcCode::PermissionDenied,
        GrpcCode::ResourceExhausted,
        GrpcCode::FailedPrecondition,
        GrpcCode::Aborted,
        GrpcCode::OutOfRange,
        GrpcCode::Unimplemented,
        GrpcCode::Internal,
        GrpcCode::Unavailable,
        GrpcCode::DataLoss,
        GrpcCode::Unauthenticated,
    ];

    /// The canonical name, e.g. `"RESOURCE_EXHAUSTED"`.
    pub const fn name(self) -> &'static str {
        match self {
            GrpcCode::Ok => "OK",
            GrpcCode::Cancelled => "CANCELLED",
            GrpcCode::Unknown => "UNKNOWN",
            GrpcCode::InvalidArgument => "INVALID_ARGUMENT",
            GrpcCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcCode::NotFound => "NOT_FOUND",
            GrpcCode::AlreadyExists => "ALREADY_EXISTS",
            GrpcCode::PermissionDenied => "PERMISSION_DENIED",
            GrpcCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            GrpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcCode::Aborted => "ABORTED",
            GrpcCode::OutOfRange => "OUT_OF_RANGE",
            GrpcCode::Unimplemented => "UNIMPLEMENTED",
            GrpcCode::Internal => "INTERNAL",
            GrpcCode::Unavailable => "UNAVAILABLE",
            GrpcCode::DataLoss => "DATA_LOSS",
            GrpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// Looks a code up by number (0-16).
    pub fn from_number(n: i64) -> Option<GrpcCode> {
        GrpcCode::ALL.into_iter().find(|c| *c as i64 == n)
    }

    /// Looks a code up by canonical name.
    pub fn from_name(name: &str) -> Option<GrpcCode> {
        GrpcCode::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// Whether the failed operation may be repeated safely (the downgrade rule of §9.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A read, or a write that is idempotent by nature.
    Idempotent,
    /// A write that is not idempotent; `idempotency_key` says whether the caller passed one.
    NonIdempotent {
        /// True when invoked with `--idempotency-key`.
        idempotency_key: bool,
    },
}

/// A wrapped failure on its way to an [`ErrorEvent`]: category, retry disposition and timing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrap {
    /// The mapped category.
    pub category: Category,
    /// The mapped retry disposition.
    pub retryable: bool,
    /// Retry delay from `Retry-After` or `grpc-retry-pushback-ms`.
    pub retry_after_ms: Option<u64>,
    /// The raw status.
    pub wrapped: Wrapped,
}

impl Wrap {
    /// Maps an HTTP status per the §9.5 table; unlisted 4xx → `validation`, unlisted 5xx (and
    /// anything else that is not a success) → `unavailable`.
    pub fn http(status: u16) -> Wrap {
        let category = match status {
            400 | 422 => Category::Validation,
            401 => Category::Authn,
            403 => Category::Authz,
            404 | 410 => Category::NotFound,
            405 | 501 => Category::Unsupported,
            408 | 504 => Category::Timeout,
            409 => Category::Conflict,
            412 | 428 => Category::PreconditionFailed,
            429 => Category::RateLimited,
            502 | 503 => Category::Unavailable,
            500 => Category::Internal,
            499 => Category::Cancelled,
            400..=499 => Category::Validation,
            _ => Category::Unavailable,
        };
        Wrap {
            category,
            retryable: category.default_retryable(),
            retry_after_ms: None,
            wrapped: Wrapped {
                protocol: Protocol::Http,
                status: Some(i64::from(status)),
                code: None,
            },
        }
    }

    /// Maps a gRPC status per the §9.5 table. `OUT_OF_RANGE`, which the table does not list, is
    /// `validation` as gRPC documents it as a client error.
    pub fn grpc(code: GrpcCode) -> Wrap {
        let category = match code {
            GrpcCode::InvalidArgument | GrpcCode::OutOfRange => Category::Validation,
            GrpcCode::Unauthenticated => Category::Authn,
            GrpcCode::PermissionDenied => Category::Authz,
            GrpcCode::NotFound => Category::NotFound,
            GrpcCode::Unimplemented => Category::Unsupported,
            GrpcCode::DeadlineExceeded => Category::Timeout,
            GrpcCode::Aborted | GrpcCode::AlreadyExists => Category::Conflict,
            GrpcCode::FailedPrecondition => Category::PreconditionFailed,
            GrpcCode::ResourceExhausted => Category::RateLimited,
            GrpcCode::Unavailable => Category::Unavailable,
            GrpcCode::Internal | GrpcCode::Unknown | GrpcCode::DataLoss | GrpcCode::Ok => {
                Category::Internal
            }
            GrpcCode::Cancelled => Category::Cancelled,
        };
        Wrap {
            category,
            retryable: category.default_retryable(),
            retry_after_ms: None,
            wrapped: Wrapped {
                protocol: Protocol::Grpc,
                status: Some(code as i64),
                code: Some(code.name().to_owned()),
            },
        }
    }

    /// Applies an HTTP `Retry-After` value: delay-seconds → ms; an HTTP-date → `max(0, date −
    /// now)` in ms. An unparseable value is ignored.
    pub fn retry_after(mut self, value: &str, now: SystemTime) -> Wrap {
        if let Some(ms) = parse_retry_after(value, now) {
            self.retry_after_ms = Some(ms);
        }
        self
    }

    /// Applies a `grpc-retry-pushback-ms` value; a negative pushback means "do not retry": the
    /// delay is omitted and `retryable` becomes false. A pushback too long for a `u64` is the
    /// longest delay, and a negative one of any length still means "do not retry"; a value that
    /// is not a whole number is ignored.
    pub fn grpc_pushback(mut self, value: &str) -> Wrap {
        let value = value.trim();
        let (negative, digits) = match value.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, value.strip_prefix('+').unwrap_or(value)),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return self;
        }
        // Only digits: parsing fails only on overflow.
        let ms = digits.parse::<u64>().unwrap_or(u64::MAX);
        if negative && ms > 0 {
            self.retry_after_ms = None;
            self.retryable = false;
        } else {
            self.retry_after_ms = Some(ms);
        }
        self
    }

    /// Applies the downgrade rule: `unavailable` (§9.5) and `timeout` on a non-idempotent
    /// operation invoked without an idempotency key are not retryable. A timed-out write may
    /// or may not have been applied, and §9.3 requires `retryable:false` when the producer
    /// cannot tell.
    pub fn for_operation(mut self, operation: Operation) -> Wrap {
        if matches!(self.category, Category::Unavailable | Category::Timeout)
            && operation
                == (Operation::NonIdempotent {
                    idempotency_key: false,
                })
        {
            self.retryable = false;
        }
        self
    }

    /// Finishes the mapping into an error event.
    pub fn into_error(self, code: Code, message: impl AsRef<str>) -> ErrorEvent {
        let mut e = ErrorEvent::new(self.category, code, message)
            .retryable(self.retryable)
            .wrapped(self.wrapped);
        if let Some(ms) = self.retry_after_ms {
            e = e.retry_after_ms(ms);
        }
        e
    }
}

/// Parses a `Retry-After` header value into milliseconds from `now`. A delay in seconds too
/// long for a `u64` of milliseconds is the longest delay, never ignored.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Only digits: parsing fails only on overflow.
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(seconds.saturating_mul(1000));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    let ms = date
        .duration_since(now)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    Some(ms)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn http_table() {
        let cases = [
            (400, Category::Validation, false),
            (422, Category::Validation, false),
            (401, Category::Authn, false),
            (403, Category::Authz, false),
            (404, Category::NotFound, false),
            (410, Category::NotFound, false),
            (405, Category::Unsupported, false),
            (501, Category::Unsupported, false),
            (408, Category::Timeout, true),
            (504, Category::Timeout, true),
            (409, Category::Conflict, false),
            (412, Category::PreconditionFailed, false),
            (428, Category::PreconditionFailed, false),
            (429, Category::RateLimited, true),
            (502, Category::Unavailable, true),
            (503, Category::Unavailable, true),
            (500, Category::Internal, false),
            (499, Category::Cancelled, false),
            (418, Category::Validation, false),
            (507, Category::Unavailable, true),
        ];
        for (status, category, retryable) in cases {
            let w = Wrap::http(status);
            assert_eq!((w.category, w.retryable), (category, retryable), "{status}");
            assert_eq!(w.wrapped.status, Some(i64::from(status)));
        }
    }

    #[test]
    fn grpc_table() {
        use GrpcCode::*;
        let cases = [
            (InvalidArgument, Category::Validation, false),
            (Unauthenticated, Category::Authn, false),
            (PermissionDenied, Category::Authz, false),
            (NotFound, Category::NotFound, false),
            (Unimplemented, Category::Unsupported, false),
            (DeadlineExceeded, Category::Timeout, true),
            (Aborted, Category::Conflict, false),
            (AlreadyExists, Category::Conflict, false),
            (FailedPrecondition, Category::PreconditionFailed, false),
            (ResourceExhausted, Category::RateLimited, true),
            (Unavailable, Category::Unavailable, true),
            (Internal, Category::Internal, false),
            (Unknown, Category::Internal, false),
            (DataLoss, Category::Internal, false),
            (Cancelled, Category::Cancelled, false),
        ];
        for (code, category, retryable) in cases {
            let w = Wrap::grpc(code);
            assert_eq!((w.category, w.retryable), (category, retryable), "{code:?}");
            assert_eq!(w.wrapped.code.as_deref(), Some(code.name()));
            assert_eq!(GrpcCode::from_name(code.name()), Some(code));
            assert_eq!(GrpcCode::from_number(code as i64), Some(code));
        }
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(parse_retry_after("120", now), Some(120_000));
        // Wed, 21 Oct 2015 07:28:00 GMT is 1445412480.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(30_000)
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(0)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
        let w = Wrap::http(503).retry_after("120", now);
        assert_eq!(w.retry_after_ms, Some(120_000));
    }

    #[test]
    fn grpc_pushback_and_negative_pushback() {
        let w = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback("4500");
        assert_eq!((w.retryable, w.retry_after_ms), (true, Some(4500)));
        let w = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback("-1");
        assert_eq!((w.retryable, w.retry_after_ms), (false, None));
        let e = w.into_error(Code::from_static("QUOTA"), "quota");
        assert!(!e.retryable && e.retry_after_ms.is_none());
    }

    #[test]
    fn delays_too_long_for_a_u64_saturate_and_a_long_negative_pushback_still_refuses() {
        // Found by the fuzz target `retry_after`: both were ignored, so a server asking for a
        // very long wait, or for no retry at all, left the error retryable at once.
        let huge = "99999999999999999999999";
        assert_eq!(parse_retry_after(huge, SystemTime::now()), Some(u64::MAX));
        let w = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback(huge);
        assert_eq!((w.retryable, w.retry_after_ms), (true, Some(u64::MAX)));
        let w = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback(&format!("-{huge}"));
        assert_eq!((w.retryable, w.retry_after_ms), (false, None));
        // Within range nothing changes: a sign is allowed, `-0` is no delay, text is ignored.
        let w = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback(" +4500 ");
        assert_eq!(w.retry_after_ms, Some(4500));
        let w = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback("-0");
        assert_eq!((w.retryable, w.retry_after_ms), (true, Some(0)));
        for ignored in ["", "-", "4.5", "soon", "--1"] {
            let w = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback(ignored);
            assert_eq!((w.retryable, w.retry_after_ms), (true, None), "{ignored:?}");
        }
    }

    #[test]
    fn unavailable_is_downgraded_for_non_idempotent_writes_without_a_key() {
        let no_key = Operation::NonIdempotent {
            idempotency_key: false,
        };
        let with_key = Operation::NonIdempotent {
            idempotency_key: true,
        };
        assert!(!Wrap::http(503).for_operation(no_key).retryable);
        assert!(Wrap::http(503).for_operation(with_key).retryable);
        assert!(
            Wrap::http(503)
                .for_operation(Operation::Idempotent)
                .retryable
        );
        // A timed-out write may have been applied (§9.3); a rate limit was refused outright.
        assert!(!Wrap::http(504).for_operation(no_key).retryable);
        assert!(Wrap::http(504).for_operation(with_key).retryable);
        assert!(Wrap::http(429).for_operation(no_key).retryable);
        let e = Wrap::http(503)
            .retry_after("3", SystemTime::now())
            .for_operation(no_key)
            .into_error(Code::from_static("UPSTREAM_DOWN"), "down");
        assert!(!e.retryable);
        assert_eq!(e.retry_after_ms, None);
    }
}
