//! The shared redaction case table (`tests/redaction/cases.json`), checked against the Rust SDK.
//!
//! The table is written from spec §11 and the `aoi::surface::redact` doc comments; the Python
//! SDK's `machinemode.redact` is checked against the same file, so the two redact alike. Every
//! case is run and every disagreement reported at once, each naming its case.

use std::fmt::Write as _;
use std::path::Path;

use aoi::surface::redact::{args_fingerprint, Redactor};
use serde::Deserialize;

/// The minimum number of argv and text cases; fewer means cases went missing.
const MIN_ARGV_CASES: usize = 40;
const MIN_TEXT_CASES: usize = 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    argv: Vec<ArgvCase>,
    text: Vec<TextCase>,
}

/// An argument vector, what `Redactor::new().redact_args` makes of it, and the
/// `args_fingerprint` of the redacted vector.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArgvCase {
    argv: Vec<String>,
    redacted: Vec<String>,
    changed: bool,
    fingerprint: String,
}

/// Free text and what `Redactor::new().scrub` makes of it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextCase {
    text: String,
    scrubbed: String,
}

fn table() -> Table {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/redaction/cases.json");
    let bytes =
        std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|err| panic!("{} is not a case table: {err}", path.display()))
}

#[test]
fn every_argv_case_is_redacted_as_the_table_says() {
    let table = table();
    assert!(
        table.argv.len() >= MIN_ARGV_CASES,
        "only {} argv cases",
        table.argv.len()
    );
    let redactor = Redactor::new();
    let mut failures = String::new();
    for (index, case) in table.argv.iter().enumerate() {
        let out = redactor.redact_args(&case.argv);
        if out.args != case.redacted || out.redacted != case.changed {
            let _ = writeln!(
                failures,
                "argv case {index} {:?}: got {:?} (changed {}), table says {:?} (changed {})",
                case.argv, out.args, out.redacted, case.redacted, case.changed
            );
        }
        let fingerprint = args_fingerprint(&case.redacted);
        if fingerprint != case.fingerprint {
            let _ = writeln!(
                failures,
                "argv case {index} {:?}: fingerprint of the redacted argv is {fingerprint}, table says {}",
                case.argv, case.fingerprint
            );
        }
        if case.changed == (case.argv == case.redacted) {
            let _ = writeln!(
                failures,
                "argv case {index} {:?}: `changed` disagrees with the table's own argv and redacted",
                case.argv
            );
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn every_text_case_is_scrubbed_as_the_table_says() {
    let table = table();
    assert!(
        table.text.len() >= MIN_TEXT_CASES,
        "only {} text cases",
        table.text.len()
    );
    let redactor = Redactor::new();
    let mut failures = String::new();
    for (index, case) in table.text.iter().enumerate() {
        let once = redactor.scrub(&case.text);
        if once != case.scrubbed {
            let _ = writeln!(
                failures,
                "text case {index} {:?}: got {once:?}, table says {:?}",
                case.text, case.scrubbed
            );
        }
        let twice = redactor.scrub(&case.scrubbed);
        if twice != case.scrubbed {
            let _ = writeln!(
                failures,
                "text case {index} {:?}: scrubbing the scrubbed text again gives {twice:?}",
                case.text
            );
        }
    }
    assert!(failures.is_empty(), "{failures}");
}
