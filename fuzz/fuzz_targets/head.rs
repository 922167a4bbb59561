//! Arbitrary bytes as one line through the reader's fast path, `parse_head`, checked against
//! the full decoder where they overlap.

#![no_main]

use aoi::read::{decode, parse_head};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let head = parse_head(data);
    if decode(data).is_ok() {
        // What decodes is a JSON object, which the fast path must also see as one.
        assert!(matches!(head, Ok(Ok(_))));
    }
});
