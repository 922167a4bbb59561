//! Test support shared by the workspace's end-to-end tests: locating the built binaries, and
//! assertions that read a captured stream through the `aoi` reader and verifier.

#![deny(missing_docs)]

use std::path::PathBuf;

use aoi::read::{decode, Decoded, Event, Frame, LineReader};
use aoi::{Report, Verdict, Verifier, VerifyOptions};

/// The path of a binary built from this workspace (`aoi`, `aoi-fake-tool`, `outline`, ...).
///
/// Integration tests live in `target/<profile>/deps/`; the workspace's binaries sit one level
/// up. `cargo test --workspace` builds every binary before it runs any test.
///
/// # Panics
/// When the binary has not been built, with a message saying how to build it.
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built; run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

/// Verifies a captured stream and returns the report.
pub fn verify(stdout: &[u8]) -> Report {
    Verifier::verify_bytes(stdout, VerifyOptions::default())
}

/// Verifies a captured stream and panics, listing the findings, unless it conforms.
pub fn assert_conforms(stdout: &[u8]) -> Report {
    let report = verify(stdout);
    assert_ne!(
        report.verdict,
        Verdict::Violation,
        "stream violates the protocol:\n{}\n--- stream ---\n{}",
        report
            .findings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        String::from_utf8_lossy(stdout)
    );
    report
}

/// Decodes every complete line of a captured stream.
///
/// # Panics
/// When a line does not decode.
pub fn events(stdout: &[u8]) -> Vec<Event> {
    let mut reader = LineReader::new(stdout);
    let mut out = Vec::new();
    while let Some(frame) = reader.next().expect("reading from memory") {
        if let Frame::Line { bytes, .. } = frame {
            let Decoded { event, .. } = decode(bytes).unwrap_or_else(|e| {
                panic!(
                    "line does not decode ({e}): {}",
                    String::from_utf8_lossy(bytes)
                )
            });
            out.push(event);
        }
    }
    out
}
