//! Retry timing of wrapped failures (§9.5): `Retry-After` through
//! `aoi::wire::mapping::parse_retry_after` and `grpc-retry-pushback-ms` through
//! `Wrap::grpc_pushback`. Arbitrary text never panics or overflows; a delay in seconds and an
//! HTTP-date written by `httpdate` read back as the delay they stand for (saturating, never
//! wrapping, for huge numbers); a pushback of digits is that many ms, and a negative one,
//! however long, means "do not retry".

#![no_main]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aoi::wire::mapping::{parse_retry_after, GrpcCode, Wrap};
use aoi::{Code, ErrorEvent};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

/// `digits` (ASCII digits only) as a number, saturating at `u64::MAX`.
fn saturating(digits: &str) -> u64 {
    digits.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    })
}

/// The error event is the wrap, field for field.
fn check_event(wrap: &Wrap) {
    let event: ErrorEvent = wrap
        .clone()
        .into_error(Code::from_static("UPSTREAM"), "upstream failed");
    assert_eq!(event.retryable, wrap.retryable);
    assert_eq!(event.retry_after_ms, wrap.retry_after_ms);
    if !event.retryable {
        assert_eq!(
            event.retry_after_ms, None,
            "a delay only on a retryable error"
        );
    }
}

fn run(u: &mut Unstructured) -> Result<()> {
    // Whole seconds from 1970 to 9999, when httpdate can write the date.
    let now = UNIX_EPOCH + Duration::from_secs(u.int_in_range(0..=253_402_300_799)?);
    match u.int_in_range(0..=4)? {
        0 => {
            let seconds: u64 = u.arbitrary()?;
            let text = format!("{}{seconds}{}", pad(u)?, pad(u)?);
            assert_eq!(
                parse_retry_after(&text, now),
                Some(seconds.saturating_mul(1000)),
                "{text:?}"
            );
        }
        1 => {
            let ahead = Duration::from_secs(u.int_in_range(0..=10_000_000)?);
            let behind = Duration::from_secs(u.int_in_range(0..=10_000_000)?);
            let date = (now + ahead).checked_sub(behind).unwrap_or(UNIX_EPOCH);
            if date
                .duration_since(UNIX_EPOCH)
                .is_ok_and(|d| d.as_secs() < 253_402_300_800)
            {
                let text = httpdate::fmt_http_date(date);
                let expected = date.duration_since(now).map_or(0, |d| d.as_millis() as u64);
                assert_eq!(parse_retry_after(&text, now), Some(expected), "{text:?}");
            }
        }
        2 => {
            // Digits of any length, an optional sign: the pushback and the seconds.
            let digits: String = (0..u.int_in_range(1..=40)?)
                .map(|_| u.int_in_range(b'0'..=b'9').map(char::from))
                .collect::<Result<_>>()?;
            let negative: bool = u.arbitrary()?;
            let text = if negative {
                format!("-{digits}")
            } else {
                digits.clone()
            };
            let value = saturating(&digits);
            let wrap = Wrap::grpc(GrpcCode::ResourceExhausted).grpc_pushback(&text);
            if negative && value > 0 {
                assert!(
                    !wrap.retryable,
                    "a negative pushback {text:?} allows a retry"
                );
                assert_eq!(wrap.retry_after_ms, None);
            } else {
                assert!(wrap.retryable);
                assert_eq!(wrap.retry_after_ms, Some(value), "pushback {text:?}");
            }
            check_event(&wrap);
            let seconds = parse_retry_after(&text, now);
            if negative {
                assert_eq!(seconds, None, "{text:?} is not a delay");
            } else {
                assert_eq!(seconds, Some(value.saturating_mul(1000)), "{text:?}");
            }
        }
        _ => {
            // Any text: no panic, and a delay only from digits or a date.
            let text: String = u.arbitrary()?;
            let parsed = parse_retry_after(&text, now);
            let trimmed = text.trim();
            if parsed.is_some() && !trimmed.bytes().all(|b| b.is_ascii_digit()) {
                let date = httpdate::parse_http_date(trimmed).expect("a date, then");
                let expected = date.duration_since(now).map_or(0, |d| d.as_millis() as u64);
                assert_eq!(parsed, Some(expected));
            }
            let wrap = Wrap::http(503).retry_after(&text, SystemTime::now());
            check_event(&wrap);
            let wrap = Wrap::grpc(GrpcCode::Unavailable).grpc_pushback(&text);
            check_event(&wrap);
        }
    }
    Ok(())
}

/// Whitespace a header value may carry around it.
fn pad(u: &mut Unstructured) -> Result<&'static str> {
    u.choose(&["", " ", "\t", "  "]).copied()
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
