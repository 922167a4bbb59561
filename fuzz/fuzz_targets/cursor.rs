//! The SDK's cursor codec (`aoi::surface::cursor::CursorCodec`, §15): what it mints it reads
//! back, and nothing else. Every position round-trips; a cursor with a byte changed, cut
//! short, or minted for another command or query is refused as a `validation` error; and any
//! string at all is either refused as `validation` or is a cursor of this codec.

#![no_main]

mod arbitrary_json;

use aoi::surface::cursor::{CursorCodec, CURSOR_INVALID, CURSOR_MISMATCH};
use aoi::Category;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// `decode` refused `cursor` as a `validation` error with one of the cursor codes.
fn refused<P: DeserializeOwned + std::fmt::Debug>(codec: &CursorCodec, cursor: &str, why: &str) {
    match codec.decode::<P>(cursor) {
        Ok(p) => panic!("{why}: {cursor:?} accepted as {p:?}"),
        Err(e) => {
            assert_eq!(e.category, Category::Validation, "{why}: {e:?}");
            assert!(
                e.code == CURSOR_INVALID || e.code == CURSOR_MISMATCH,
                "{why}: {e:?}"
            );
            assert_eq!(e.field.as_deref(), Some("cursor"));
        }
    }
}

/// Mints a cursor for `position`, reads it back, then damages it every way the fuzzer picks.
fn check<P>(
    u: &mut Unstructured,
    codec: &CursorCodec,
    other: &CursorCodec,
    position: &P,
) -> Result<()>
where
    P: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let cursor = codec.encode(position);
    let back: P = codec.decode(&cursor).expect("a cursor this codec minted");
    assert_eq!(&back, position, "round trip through {cursor:?}");
    // Surrounding whitespace is the one change allowed.
    assert_eq!(
        &codec.decode::<P>(&format!(" {cursor}\n")).unwrap(),
        position
    );

    if codec.request_hash() != other.request_hash() {
        refused::<Value>(other, &cursor, "another query's cursor");
    }
    // One character of the text changed (to any other ASCII character but whitespace, which
    // is trimmed only at the ends and then also changes the cursor).
    let at = u.choose_index(cursor.len())?;
    let mut text = cursor.clone().into_bytes();
    let flip = u.int_in_range(1..=127u8)?;
    text[at] = (text[at] ^ flip) & 0x7f;
    if text[at] != cursor.as_bytes()[at] {
        refused::<Value>(
            codec,
            &String::from_utf8_lossy(&text),
            "a character changed",
        );
    }
    // One bit of the payload flipped, behind valid base64.
    let mut payload = URL_SAFE_NO_PAD.decode(&cursor).expect("cursors are base64");
    let at = u.choose_index(payload.len())?;
    payload[at] ^= 1 << u.int_in_range(0..=7u8)?;
    refused::<Value>(
        codec,
        &URL_SAFE_NO_PAD.encode(&payload),
        "a payload bit flipped",
    );
    // Cut short, as text and as payload.
    let keep = u.choose_index(cursor.len())?;
    refused::<Value>(codec, &cursor[..keep], "a cut cursor");
    payload.truncate(u.choose_index(payload.len())?);
    refused::<Value>(codec, &URL_SAFE_NO_PAD.encode(&payload), "a cut payload");
    Ok(())
}

fn run(u: &mut Unstructured) -> Result<()> {
    let command = arbitrary_json::string(u)?;
    let shaping = arbitrary_json::value(u, 2)?;
    let codec = CursorCodec::new(&command, &shaping);
    let other = if u.arbitrary()? {
        CursorCodec::new(&arbitrary_json::string(u)?, &shaping)
    } else {
        CursorCodec::new(&command, &arbitrary_json::value(u, 2)?)
    };
    match u.int_in_range(0..=4)? {
        0 => {
            let position: u64 = u.arbitrary()?;
            check(u, &codec, &other, &position)?
        }
        1 => {
            // The shape of outline's search position: a snapshot and a rank.
            let position: (i64, u64) = (u.arbitrary()?, u.arbitrary()?);
            check(u, &codec, &other, &position)?
        }
        2 => {
            let position = arbitrary_json::string(u)?;
            check(u, &codec, &other, &position)?
        }
        3 => {
            let position = arbitrary_json::value(u, 3)?;
            check(u, &codec, &other, &position)?
        }
        _ => {
            // Any text as a cursor: refused, or really one of this codec's.
            let text: String = u.arbitrary()?;
            match codec.decode::<Value>(&text) {
                Ok(position) => assert_eq!(
                    codec.decode::<Value>(&codec.encode(&position)).unwrap(),
                    position
                ),
                Err(e) => assert_eq!(e.category, Category::Validation),
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
