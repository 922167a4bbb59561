//! Arbitrary bytes as one line through the verifier's scanner, `scan_line`, held to its
//! contract: it accepts exactly what serde_json's `Value` parser accepts (and its fast path does
//! so on its own), reports serde_json's error message, agrees with `std::str::from_utf8` on
//! UTF-8, with `find_ansi` on ANSI controls, and with `parse_head` on the head.

#![no_main]

use aoi::read::{find_ansi, parse_head, scan_fast_accepts, scan_line, NotUtf8};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let value = serde_json::from_slice::<serde_json::Value>(data);
    assert_eq!(
        scan_fast_accepts(data),
        value.is_ok(),
        "fast path vs serde_json"
    );
    let scanned = scan_line(data);
    match std::str::from_utf8(data) {
        Err(e) => assert_eq!(
            scanned.err(),
            Some(NotUtf8 {
                column: e.valid_up_to() + 1
            })
        ),
        Ok(_) => {
            let Ok(scanned) = scanned else {
                panic!("UTF-8 reported as not UTF-8");
            };
            assert_eq!(scanned.ansi, find_ansi(data));
            match (&scanned.head, &value) {
                (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
                (Ok(head), Ok(_)) => match parse_head(data) {
                    Ok(reference) => assert_eq!(head, &reference),
                    Err(e) => panic!("parse_head rejects what serde_json accepts: {e}"),
                },
                (ours, theirs) => panic!("scanner {ours:?}, serde_json {theirs:?}"),
            }
        }
    }
});
