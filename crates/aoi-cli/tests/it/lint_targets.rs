//! `aoi lint` on the project's own tools: the reference tool `outline` and `aoi` itself pass
//! every applicable check (§18), with the configurations they ship.

use std::path::Path;
use std::process::Command;

use aoi::read::Event;

/// Runs `aoi lint --tool TOOL --config CONFIG --format jsonl` and returns the failures,
/// could-not-runs and the number of passes, after checking lint's own stream conforms.
fn lint(tool: &str, config: &Path) -> (Vec<String>, usize) {
    let out = Command::new(aoi_test::workspace_bin("aoi"))
        .args(["lint", "--tool"])
        .arg(aoi_test::workspace_bin(tool))
        .arg("--config")
        .arg(config)
        .args(["--format", "jsonl"])
        .output()
        .unwrap();
    aoi_test::assert_conforms(&out.stdout);
    let mut problems = Vec::new();
    let mut passes = 0;
    for event in aoi_test::events(&out.stdout) {
        if let Event::Check(check) = event {
            let props = check.properties.clone().unwrap_or_default();
            match props["outcome"].as_str() {
                Some("pass") => passes += 1,
                Some("not_applicable") => {}
                other => problems.push(format!(
                    "{} [{other:?}]: {}",
                    check.name,
                    check.detail.unwrap_or_default()
                )),
            }
        }
    }
    let code = out.status.code();
    // 0 only when every applicable check ran and passed (could-not-run is exit 2).
    assert_eq!(
        code == Some(0),
        problems.is_empty(),
        "exit status {code:?} disagrees with the checks: {problems:?}"
    );
    (problems, passes)
}

fn crate_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

#[test]
fn outline_passes_every_applicable_check() {
    let (problems, passes) = lint("outline", &crate_dir("outline").join("aoi-lint.toml"));
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(passes > 200, "only {passes} checks passed");
}

#[test]
fn aoi_passes_every_applicable_check_on_itself() {
    let (problems, passes) = lint("aoi", &crate_dir("aoi-cli").join("aoi-lint.toml"));
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(passes >= 20, "only {passes} checks passed");
}

#[test]
fn the_plain_python_example_passes_lint_with_no_configuration() {
    // A tool written from the spec and docs/discovery.md alone: no SDK, no x-aoi, no
    // aoi-lint.toml. Every applicable check runs and passes, and so lint exits 0.
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/python/notes.py");
    let dir = std::env::temp_dir().join(format!("aoi-notes-lint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(aoi_test::workspace_bin("aoi"))
        .args(["lint", "--tool"])
        .arg(&tool)
        .args(["--format", "jsonl"])
        .current_dir(&dir)
        .output()
        .unwrap();
    aoi_test::assert_conforms(&out.stdout);
    let mut problems = Vec::new();
    let mut passes = 0;
    for event in aoi_test::events(&out.stdout) {
        if let Event::Check(check) = event {
            let props = check.properties.clone().unwrap_or_default();
            match props["outcome"].as_str() {
                Some("pass") => passes += 1,
                Some("not_applicable") => {}
                other => problems.push(format!(
                    "{} {} [{other:?}]: {}",
                    props["command"],
                    check.name,
                    check.detail.unwrap_or_default()
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(passes >= 60, "only {passes} checks passed");
    assert_eq!(out.status.code(), Some(0));
}
