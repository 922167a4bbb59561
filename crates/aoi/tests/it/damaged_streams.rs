//! A valid stream damaged the ways pipes, harnesses and disks damage streams is never taken for
//! a whole one: the verdict is a violation, never a success or an honest failure.
//!
//! One damage is outside what a line-level protocol can see: a changed byte inside domain data
//! (`"title":"abc"` becoming `"abd"`) leaves a valid stream, as it would for any format without
//! checksums. Byte flips are therefore only required to be caught in the framing (the newlines)
//! and the envelope (`type` and `aoi`, up to the end of the `aoi` object, except a domain event's
//! own `type` value); anywhere else they are only required not to panic the reader.

use aoi::read::{decode, parse_head, Frame, LineReader};
use aoi::{FindingCode, Report, Verdict, Verifier, VerifyOptions};
use proptest::prelude::*;
use proptest::sample::Index;

use crate::scenario;

#[derive(Debug, Clone)]
enum Damage {
    /// Removes one line.
    Delete(Index),
    /// Repeats one line right after itself.
    Duplicate(Index),
    /// Cuts the stream after this many bytes.
    Cut(Index),
    /// Cuts one line short, keeping its newline and the lines after it.
    ShortenLine(Index, Index),
    /// Changes one newline byte.
    FlipNewline(Index, u8),
    /// Changes one byte of a line's envelope.
    FlipEnvelope(Index, Index, u8),
    /// Changes any byte.
    FlipAny(Index, u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    let xor = 1u8..=255;
    prop_oneof![
        any::<Index>().prop_map(Damage::Delete),
        any::<Index>().prop_map(Damage::Duplicate),
        any::<Index>().prop_map(Damage::Cut),
        (any::<Index>(), any::<Index>()).prop_map(|(l, k)| Damage::ShortenLine(l, k)),
        (any::<Index>(), xor.clone()).prop_map(|(l, x)| Damage::FlipNewline(l, x)),
        (any::<Index>(), any::<Index>(), xor.clone())
            .prop_map(|(l, p, x)| Damage::FlipEnvelope(l, p, x)),
        (any::<Index>(), xor).prop_map(|(p, x)| Damage::FlipAny(p, x)),
    ]
}

/// The lines of a stream, without their newlines.
fn split(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .strip_suffix(b"\n")
        .expect("a valid stream ends with a newline")
        .split(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

/// Byte offsets of `line` the verifier must notice a change to: `{"type":"`, then (for a
/// framework event) the type's value, then `","aoi":{…}` through the envelope's closing brace.
fn envelope_positions(line: &[u8]) -> Vec<usize> {
    const LEAD: &[u8] = b"{\"type\":\"";
    const ENVELOPE: &[u8] = b"\",\"aoi\":{\"seq\":";
    assert!(line.starts_with(LEAD), "{}", String::from_utf8_lossy(line));
    // A quote inside the type value is escaped, so the first `","aoi":{"seq":` ends it.
    let type_end = line
        .windows(ENVELOPE.len())
        .position(|w| w == ENVELOPE)
        .expect("the envelope follows the type");
    let envelope_end = type_end
        + line[type_end..]
            .iter()
            .position(|b| *b == b'}')
            .expect("the envelope closes");
    let framework = line[LEAD.len()..].starts_with(b"aoi:");
    let mut positions: Vec<usize> = (0..LEAD.len()).collect();
    if framework {
        positions.extend(LEAD.len()..type_end);
    }
    positions.extend(type_end..=envelope_end);
    positions
}

/// Applies `damage`; `None` when it cannot apply or changes nothing. The flag says whether the
/// verifier is required to see it.
fn apply(bytes: &[u8], damage: &Damage) -> Option<(Vec<u8>, bool)> {
    let mut lines = split(bytes);
    let damaged = match damage {
        Damage::Delete(i) => {
            lines.remove(i.index(lines.len()));
            (join(&lines), true)
        }
        Damage::Duplicate(i) => {
            let i = i.index(lines.len());
            let line = lines[i].clone();
            lines.insert(i, line);
            (join(&lines), true)
        }
        Damage::Cut(p) => (bytes[..p.index(bytes.len())].to_vec(), true),
        Damage::ShortenLine(l, k) => {
            let l = l.index(lines.len());
            let k = k.index(lines[l].len());
            lines[l].truncate(k);
            (join(&lines), true)
        }
        Damage::FlipNewline(l, x) => {
            let newlines: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == b'\n').collect();
            let at = newlines[l.index(newlines.len())];
            let mut out = bytes.to_vec();
            out[at] ^= x;
            (out, true)
        }
        Damage::FlipEnvelope(l, p, x) => {
            let l = l.index(lines.len());
            let positions = envelope_positions(&lines[l]);
            let at = positions[p.index(positions.len())];
            lines[l][at] ^= x;
            (join(&lines), true)
        }
        Damage::FlipAny(p, x) => {
            let mut out = bytes.to_vec();
            out[p.index(bytes.len())] ^= x;
            (out, false)
        }
    };
    (damaged.0 != bytes).then_some(damaged)
}

/// Reads `bytes` every way a consumer might, asserting only that nothing panics.
pub fn read_every_way(bytes: &[u8]) -> Report {
    let mut reader = LineReader::with_max_line(bytes, 64);
    while let Some(frame) = reader.next().expect("reading memory") {
        if let Frame::Line { bytes, .. } | Frame::Truncated { bytes, .. } = frame {
            let _ = decode(bytes);
            let _ = parse_head(bytes);
        }
    }
    let small = VerifyOptions {
        unbounded: true,
        max_findings: 2,
        ..VerifyOptions::default()
    };
    let _ = Verifier::verify_bytes(bytes, small);
    Verifier::verify_bytes(bytes, VerifyOptions::default())
}

fn valid_stream(s: &scenario::Scenario) -> Vec<u8> {
    let run = scenario::run(s);
    let report = Verifier::verify_bytes(&run.bytes, VerifyOptions::default());
    assert_eq!(report.violations, 0, "{:#?}", report.findings);
    run.bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_damaged_stream_is_a_violation(s in scenario::plain_scenario(), damage in damage()) {
        let bytes = valid_stream(&s);
        if let Some((damaged, must_notice)) = apply(&bytes, &damage) {
            let report = read_every_way(&damaged);
            if must_notice {
                prop_assert_eq!(
                    report.verdict,
                    Verdict::Violation,
                    "{:?} went unnoticed:\n{}",
                    damage,
                    String::from_utf8_lossy(&damaged)
                );
            }
        }
    }

    #[test]
    fn a_line_lost_from_the_middle_is_a_violation(
        s in scenario::plain_scenario(),
        which in any::<Index>(),
    ) {
        let bytes = valid_stream(&s);
        let mut lines = split(&bytes);
        // Meta and summary stay: this is the loss only `aoi.seq` and `event_count` can reveal.
        prop_assume!(lines.len() >= 3);
        lines.remove(1 + which.index(lines.len() - 2));
        let report = Verifier::verify_bytes(&join(&lines), VerifyOptions::default());
        prop_assert_eq!(report.verdict, Verdict::Violation);
        let codes: Vec<FindingCode> = report.findings.iter().map(|f| f.code).collect();
        prop_assert!(codes.contains(&FindingCode::SeqGap), "{:?}", codes);
        prop_assert!(codes.contains(&FindingCode::EventCountMismatch), "{:?}", codes);
    }
}
