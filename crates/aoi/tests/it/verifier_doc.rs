//! `docs/verifier.md` is the written contract of the verifier: every finding code is in its
//! table with its section, and every test it names exists, so the page cannot drift.

use std::path::Path;

use aoi::FindingCode;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_finding_code_is_documented_with_its_section() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = read(&root.join("docs/verifier.md"));
    for code in FindingCode::ALL {
        let row = format!("| `{}` | {} |", code.as_str(), code.section());
        assert!(doc.contains(&row), "docs/verifier.md lacks the row {row}");
    }
}

#[test]
fn every_test_the_page_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = read(&root.join("docs/verifier.md"));
    let unit = read(&root.join("crates/aoi/src/read/verify/tests.rs"));
    let cli = read(&root.join("crates/aoi-cli/tests/it/verify.rs"));
    let mut corpus = String::new();
    for entry in std::fs::read_dir(root.join("crates/aoi/tests/data/spec-corpus")).unwrap() {
        corpus.push_str(&read(&entry.unwrap().path()));
    }
    let mut named = 0;
    for (prefix, haystack, pattern) in [
        ("verify_tests `", &unit, "fn {}("),
        ("cli `", &cli, "fn {}("),
        ("corpus `", &corpus, "\"name\": \"{}\""),
    ] {
        for piece in doc.split(prefix).skip(1) {
            // The names up to the end of the table cell or the sentence: `a`, `b`, the `X` case.
            let cell = piece.split(['|', ';']).next().unwrap_or_default();
            let quoted = format!("`{cell}");
            for name in quoted.split('`').skip(1).step_by(2) {
                let plain = name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
                if name.is_empty() || !plain {
                    continue;
                }
                named += 1;
                let wanted = pattern.replace("{}", name);
                assert!(
                    haystack.contains(&wanted),
                    "docs/verifier.md names {prefix}{name}` which does not exist"
                );
            }
        }
    }
    assert!(named > 30, "only {named} tests found in the page");
}
