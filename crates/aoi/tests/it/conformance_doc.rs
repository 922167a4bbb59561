//! `docs/conformance.md` traces every normative sentence of the spec to its producer, its check
//! and its tests. This holds the page to the code: every finding code it names exists, every
//! lint check it names has its file, every test it names exists (a corpus case or a Rust or
//! Python test function), and the counts in its header are the counts of its tables.

use std::path::{Path, PathBuf};

use aoi::FindingCode;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of every `.rs`, `.py` and `.json` file under `dir`, build output left out.
fn sources(dir: &Path, out: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(
                name.as_ref(),
                "target" | "node_modules" | "__pycache__" | ".venv"
            ) {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".py") || name.ends_with(".json") {
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.push_str(&text);
            }
        }
    }
}

/// The cells of a table row, split on `|` that are not escaped.
fn cells(row: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_owned()).collect()
}

fn quoted(cell: &str) -> impl Iterator<Item = &str> {
    cell.split('`').skip(1).step_by(2)
}

/// The sentence rows: `| § | sentence | level | produced by | checked by | test |`.
fn sentence_rows(doc: &str) -> Vec<Vec<String>> {
    doc.lines()
        .filter(|l| l.starts_with("| §"))
        .map(|l| {
            let c = cells(l);
            c[1..c.len() - 1].to_vec()
        })
        .filter(|c| c.len() == 6 && c[0] != "§")
        .collect()
}

#[test]
fn every_name_the_page_gives_exists() {
    let root = root();
    let doc = read(&root.join("docs/conformance.md"));
    let mut code = String::new();
    sources(&root.join("crates"), &mut code);
    sources(&root.join("sdks/python"), &mut code);
    let checks: Vec<String> = std::fs::read_dir(root.join("crates/aoi-lint/src/checks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let rows = sentence_rows(&doc);
    assert!(rows.len() > 100, "only {} sentence rows", rows.len());
    let mut named = 0;
    for row in &rows {
        let (checked, tests) = (&row[4], &row[5]);
        for name in quoted(checked) {
            if name.chars().all(|c| c.is_ascii_uppercase() || c == '_') && name.contains('_') {
                named += 1;
                assert!(
                    FindingCode::parse(name).is_some(),
                    "docs/conformance.md names the finding code {name}, which does not exist"
                );
            }
        }
        for word in checked.split(|c: char| !c.is_ascii_alphanumeric()) {
            let is_check = word.len() == 3
                && word.starts_with('c')
                && word[1..].chars().all(|c| c.is_ascii_digit());
            if is_check {
                named += 1;
                assert!(
                    checks.iter().any(|f| f.starts_with(&format!("{word}_"))),
                    "docs/conformance.md names lint check {word}, which has no file"
                );
            }
        }
        for name in quoted(tests) {
            named += 1;
            let found = if name.contains('-') {
                code.contains(&format!("\"name\": \"{name}\""))
            } else {
                code.contains(&format!("fn {name}(")) || code.contains(&format!("def {name}("))
            };
            assert!(
                found,
                "docs/conformance.md names the test {name}, which does not exist"
            );
        }
    }
    assert!(named > 300, "only {named} names checked");
}

#[test]
fn the_header_counts_are_the_counts_of_the_tables() {
    let doc = read(&root().join("docs/conformance.md"));
    let rows = sentence_rows(&doc);
    let part_two = |section: &str| {
        ["§14", "§15", "§16", "§17"]
            .iter()
            .any(|p| section == *p || section.starts_with(&format!("{p}.")))
    };
    let count = |two: bool| {
        let rs: Vec<&Vec<String>> = rows.iter().filter(|r| part_two(&r[0]) == two).collect();
        let produced = rs.iter().filter(|r| r[3] != "—").count();
        let checked = rs
            .iter()
            .filter(|r| {
                let c = r[4].split("not observable").next().unwrap_or_default();
                let c = c.trim().trim_end_matches(';').trim();
                !c.is_empty() && c != "—" && c != "not checked yet"
            })
            .count();
        let unobservable = rs
            .iter()
            .filter(|r| r[4].contains("not observable"))
            .count();
        let gaps = rs
            .iter()
            .filter(|r| r[4].contains("not checked yet"))
            .count();
        format!(
            "| {} | {produced} | {checked} | {unobservable} | {gaps} |",
            rs.len()
        )
    };
    for (two, title) in [
        (false, "AOI-CLI v1.0-alpha, Part I (§1–§13)"),
        (true, "AOI-CLI v1.0-alpha, Part II (§14–§17)"),
    ] {
        let line = format!("| {title} {}", count(two));
        assert!(
            doc.contains(&line),
            "docs/conformance.md's header disagrees with its tables: expected the row\n{line}"
        );
    }
    let gaps_listed = doc
        .split("## Gaps")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("- §"))
        .count();
    let gaps = rows
        .iter()
        .filter(|r| r[4].contains("not checked yet"))
        .count();
    assert_eq!(
        gaps_listed, gaps,
        "the Gaps section lists every row not checked yet"
    );
}
