//! `aoi lint` on the project's own tools: the reference tool `outline`, `aoi-coreutils` and
//! `aoi` itself pass every applicable check (§18), with the configurations they ship.

use std::path::Path;
use std::process::Command;

use aoi::read::Event;

/// Runs `aoi lint --tool TOOL --format jsonl` (with `--config CONFIG` when given, in an empty
/// directory so no `./aoi-lint.toml` is picked up) and returns the failures, could-not-runs and
/// the number of passes, after checking lint's own stream conforms and that its exit status
/// agrees: 0 only when every applicable check ran and passed (could-not-run is 2).
fn lint(tool: &Path, config: Option<&Path>) -> (Vec<String>, usize) {
    let dir = aoi_test::temp_dir("lint-targets");
    let mut command = Command::new(aoi_test::workspace_bin("aoi"));
    command.args(["lint", "--tool"]).arg(tool).current_dir(&dir);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let out = command.args(["--format", "jsonl"]).output().unwrap();
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
    let code = out.status.code();
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
    let config = crate_dir("outline").join("aoi-lint.toml");
    let (problems, passes) = lint(&aoi_test::workspace_bin("outline"), Some(&config));
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(passes > 200, "only {passes} checks passed");
}

#[test]
fn aoi_coreutils_passes_every_applicable_check_of_every_command() {
    let config = crate_dir("aoi-coreutils").join("aoi-lint.toml");
    let (problems, passes) = lint(&aoi_test::workspace_bin("aoi-coreutils"), Some(&config));
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(passes >= 160, "only {passes} checks passed");
}

#[test]
fn aoi_passes_every_applicable_check_on_itself() {
    let config = crate_dir("aoi-cli").join("aoi-lint.toml");
    let (problems, passes) = lint(&aoi_test::workspace_bin("aoi"), Some(&config));
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(passes >= 20, "only {passes} checks passed");
}

#[test]
fn the_plain_python_example_passes_lint_with_no_configuration() {
    // A tool written from the spec and docs/discovery.md alone: no SDK, no x-aoi, no
    // aoi-lint.toml. Every applicable check runs and passes, and so lint exits 0.
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/python/notes.py");
    let (problems, passes) = lint(&tool, None);
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(passes >= 60, "only {passes} checks passed");
}
