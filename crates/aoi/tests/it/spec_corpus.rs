//! A held-out conformance corpus for the verifier, written from the text of the specification
//! (Part I of AOI-CLI v1.0-alpha) and not from the code.
//!
//! Every `.json` file in `tests/data/spec-corpus/` is an array of cases. Each case gives the
//! exact stdout of a producer (as `lines`, joined with `\n` and ended with `\n`, or as
//! `raw_hex`, the exact bytes), optionally how the producer ended (`exit`: an integer or
//! `{"signal": N}`), whether the command is documented as unbounded, and the verdict the
//! spec's sentence (quoted in `spec`) settles. The test runs every case and reports all
//! disagreements at once.
//!
//! A verdict cannot show a SHOULD: a stream that misses one is as conforming as one that
//! meets it. For those sentences a case may also name finding codes (the stable codes of
//! `docs/verifier.md`): `notices`, each of which the verifier must report as a notice, and
//! `not_reported`, none of which it may report at all. A SHOULD is then tested both ways by
//! two cases with the same verdict.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use aoi::read::{FindingCode, Level, LineReader, ProcessEnd};
use aoi::{Verdict, Verifier, VerifyOptions};
use serde_json::Value;

/// The minimum size of the corpus; a smaller one means files went missing.
const MIN_CASES: usize = 100;

/// How the producer ended, as the case file gives it.
#[derive(Clone, Copy)]
enum End {
    Unknown,
    Exited(i32),
    Signaled(i32),
}

impl End {
    fn to_process_end(self) -> Option<ProcessEnd> {
        match self {
            End::Unknown => None,
            End::Exited(c) => Some(ProcessEnd::Exited(c)),
            End::Signaled(s) => Some(ProcessEnd::Signaled(s)),
        }
    }
}

struct Case {
    file: String,
    name: String,
    spec: String,
    bytes: Vec<u8>,
    end: End,
    unbounded: bool,
    expect: &'static str,
    notices: Vec<FindingCode>,
    not_reported: Vec<FindingCode>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/spec-corpus")
}

fn hex_decode(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    let nibble = |c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!("not a hex digit: {:?}", c as char)),
        }
    };
    digits
        .chunks(2)
        .map(|pair| Ok((nibble(pair[0])? << 4) | nibble(pair[1])?))
        .collect()
}

fn parse_verdict(s: &str) -> Result<&'static str, String> {
    match s {
        "succeeded" => Ok("succeeded"),
        "failed" => Ok("failed"),
        "violation" => Ok("violation"),
        "unterminated" => Ok("unterminated"),
        other => Err(format!("unknown expect {other:?}")),
    }
}

fn parse_end(v: Option<&Value>) -> Result<End, String> {
    match v {
        None | Some(Value::Null) => Ok(End::Unknown),
        Some(Value::Number(n)) => {
            let code = n
                .as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .ok_or_else(|| format!("exit is not an i32: {n}"))?;
            Ok(End::Exited(code))
        }
        Some(Value::Object(o)) => {
            let sig = o
                .get("signal")
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok())
                .ok_or_else(|| "exit object needs an integer \"signal\"".to_owned())?;
            Ok(End::Signaled(sig))
        }
        Some(other) => Err(format!("bad exit: {other}")),
    }
}

fn parse_case(file: &str, v: &Value) -> Result<Case, String> {
    let o = v.as_object().ok_or("case is not an object")?;
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .ok_or("case has no string name")?
        .to_owned();
    let ctx = |e: String| format!("{name}: {e}");
    let spec = o
        .get("spec")
        .and_then(Value::as_str)
        .ok_or_else(|| ctx("no string spec".into()))?
        .to_owned();
    let bytes = match (o.get("lines"), o.get("raw_hex")) {
        (Some(Value::Array(lines)), None | Some(Value::Null)) => {
            let mut out = Vec::new();
            for l in lines {
                let l = l
                    .as_str()
                    .ok_or_else(|| ctx("a line is not a string".into()))?;
                out.extend_from_slice(l.as_bytes());
                out.push(b'\n');
            }
            out
        }
        (None | Some(Value::Null), Some(Value::String(h))) => hex_decode(h).map_err(ctx)?,
        _ => {
            return Err(ctx(
                "needs exactly one of lines (array) or raw_hex (string)".into(),
            ))
        }
    };
    let end = parse_end(o.get("exit")).map_err(ctx)?;
    let unbounded = match o.get("unbounded") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ctx("unbounded is not a boolean".into())),
    };
    let expect = parse_verdict(
        o.get("expect")
            .and_then(Value::as_str)
            .ok_or_else(|| ctx("no string expect".into()))?,
    )
    .map_err(ctx)?;
    let notices = parse_codes(o.get("notices")).map_err(ctx)?;
    let not_reported = parse_codes(o.get("not_reported")).map_err(ctx)?;
    Ok(Case {
        file: file.to_owned(),
        name,
        spec,
        bytes,
        end,
        unbounded,
        expect,
        notices,
        not_reported,
    })
}

fn parse_codes(v: Option<&Value>) -> Result<Vec<FindingCode>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(codes)) => codes
            .iter()
            .map(|c| {
                c.as_str()
                    .and_then(FindingCode::parse)
                    .ok_or_else(|| format!("not a finding code: {c}"))
            })
            .collect(),
        Some(other) => Err(format!(
            "finding codes are an array of strings, not {other}"
        )),
    }
}

fn load_corpus() -> Vec<Case> {
    let dir = corpus_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    for p in &paths {
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {file}: {e}"));
        let doc: Value = match serde_json::from_str(&text) {
            Ok(d) => d,
            Err(e) => {
                errors.push(format!("{file}: not JSON: {e}"));
                continue;
            }
        };
        let Some(arr) = doc.as_array() else {
            errors.push(format!("{file}: not a JSON array"));
            continue;
        };
        for v in arr {
            match parse_case(&file, v) {
                Ok(c) => cases.push(c),
                Err(e) => errors.push(format!("{file}: {e}")),
            }
        }
    }
    assert!(
        errors.is_empty(),
        "malformed corpus:\n{}",
        errors.join("\n")
    );
    cases
}

fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::Succeeded => "succeeded",
        Verdict::Failed => "failed",
        Verdict::Violation => "violation",
        Verdict::Unterminated => "unterminated",
    }
}

#[test]
#[allow(clippy::print_stdout, reason = "a one-line tally for --nocapture runs")]
fn spec_corpus() {
    let cases = load_corpus();
    assert!(
        cases.len() >= MIN_CASES,
        "the corpus has {} cases, fewer than {MIN_CASES}",
        cases.len()
    );
    let mut names = BTreeSet::new();
    let dups: Vec<&str> = cases
        .iter()
        .filter(|c| !names.insert(c.name.as_str()))
        .map(|c| c.name.as_str())
        .collect();
    assert!(dups.is_empty(), "duplicate case names: {dups:?}");

    let mut failures = String::new();
    let mut failed = 0usize;
    for c in &cases {
        let opts = VerifyOptions {
            unbounded: c.unbounded,
            ..VerifyOptions::default()
        };
        let mut reader = LineReader::new(c.bytes.as_slice());
        let mut v = Verifier::new(opts);
        while let Some(frame) = reader.next().expect("read from a byte slice") {
            v.frame(frame);
        }
        let report = v.finish(c.end.to_process_end());
        let got = verdict_name(&report.verdict);
        let missing: Vec<&str> = c
            .notices
            .iter()
            .filter(|code| {
                !report
                    .findings
                    .iter()
                    .any(|f| f.code == **code && f.level == Level::Notice)
            })
            .map(|code| code.as_str())
            .collect();
        let unwanted: Vec<&str> = c
            .not_reported
            .iter()
            .filter(|code| report.findings.iter().any(|f| f.code == **code))
            .map(|code| code.as_str())
            .collect();
        if got != c.expect || !missing.is_empty() || !unwanted.is_empty() {
            failed += 1;
            let _ = writeln!(
                failures,
                "\n[{}] {}\n  spec: {}\n  expected: {}, got: {}",
                c.file, c.name, c.spec, c.expect, got
            );
            if !missing.is_empty() {
                let _ = writeln!(failures, "  notices expected, not reported: {missing:?}");
            }
            if !unwanted.is_empty() {
                let _ = writeln!(failures, "  reported, expected absent: {unwanted:?}");
            }
            if report.findings.is_empty() {
                let _ = writeln!(failures, "  findings: (none)");
            }
            for f in &report.findings {
                let _ = writeln!(failures, "  finding: {f}");
            }
        }
    }
    println!(
        "spec corpus: {} cases, {} disagreements",
        cases.len(),
        failed
    );
    assert!(
        failed == 0,
        "{failed} of {} spec-corpus cases disagree with the verifier:{failures}",
        cases.len()
    );
}
