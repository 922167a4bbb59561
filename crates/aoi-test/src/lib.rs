//! Test support shared by the workspace's end-to-end tests: locating the built binaries,
//! assertions that read a captured stream through the `aoi` reader and verifier, temporary
//! directories ([`temp_dir`]), and [`faultshim`], which makes the operating system fail a
//! binary's writes.

#![deny(missing_docs)]

pub mod faultshim;
pub mod prerequisite;
mod temp;

pub use temp::{temp_dir, TempDir};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use aoi::read::{decode, Decoded, Event, Frame, LineReader};
use aoi::{Report, Verdict, Verifier, VerifyOptions};

/// The path of a binary built from this workspace (`aoi`, `aoi-fake-tool`, `outline`,
/// `examples/feed`, ...).
///
/// Integration tests live in `target/<profile>/deps/`; the workspace's binaries sit one level
/// up. Cargo builds a package's own binaries before its integration tests, but not another
/// package's (`aoi-fake-tool` would be missing on a clean checkout, or stale after an edit), so
/// the first call in a test run builds every binary and example of the workspace, with the
/// cargo that runs the tests, into the same target directory and profile. A run is the
/// `cargo test` or `cargo nextest` process that started this test binary: its other test
/// processes (one per binary, or one per test under nextest) find the build done and do not
/// ask cargo again.
///
/// # Panics
/// When the binary cannot be built.
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps");
    build_workspace_binaries(dir);
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built, and `cargo build --workspace --bins --examples` did not build it",
        path.display()
    );
    path
}

/// Builds the workspace's binaries and examples into `profile_dir` (`target/<profile>`), once
/// per test run: under an exclusive lock on a stamp named after the process that runs the
/// tests (its pid and start time, so a reused pid is another run), the first test process
/// builds and writes the stamp; the others wait for the lock and find it.
fn build_workspace_binaries(profile_dir: &Path) {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let stamps = profile_dir.join(".workspace-bins");
        std::fs::create_dir_all(&stamps).expect("create target/<profile>/.workspace-bins");
        let lock = std::fs::File::create(stamps.join(".lock")).expect("create the stamps' lock");
        // Held until this closure returns; released by the kernel if the process dies.
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .expect("lock target/<profile>/.workspace-bins/.lock");
        let stamp = run_id().map(|id| stamps.join(id));
        if stamp.as_ref().is_some_and(|s| s.exists()) {
            return;
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--workspace", "--bins", "--examples", "--quiet"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        if let Some(target) = profile_dir.parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
        let status = cmd.status().expect("cargo runs");
        assert!(
            status.success(),
            "building the workspace's binaries failed: {status}"
        );
        if let Some(stamp) = stamp {
            // Stamps of runs long over are removed as new ones are written.
            for old in std::fs::read_dir(&stamps).into_iter().flatten().flatten() {
                if old.file_name() != ".lock" {
                    let _ = std::fs::remove_file(old.path());
                }
            }
            std::fs::write(&stamp, b"").expect("write the build stamp");
        }
    });
}

/// The test run this process belongs to: its parent (the `cargo test` or `cargo nextest`
/// process) by pid and start time, read from `/proc`; `None` where `/proc` cannot tell, and
/// then every test process builds (a no-op when nothing changed).
fn run_id() -> Option<String> {
    let parent = std::os::unix::process::parent_id();
    let stat = std::fs::read_to_string(format!("/proc/{parent}/stat")).ok()?;
    // Field 22 (starttime), counted after the `(comm)` field, which may hold spaces.
    let after_comm = stat.rsplit_once(')')?.1;
    let started = after_comm.split_whitespace().nth(19)?;
    Some(format!("{parent}-{started}"))
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

/// The `properties.results` of the summary `aoi lint --format jsonl` wrote (`pass`, `fail`,
/// `not_applicable`, `could_not_run`).
///
/// # Panics
/// When `stdout` holds no summary.
pub fn lint_results(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "aoi:summary")
        .map(|s| s["properties"]["results"].clone())
        .unwrap_or_else(|| panic!("aoi lint wrote no summary:\n{text}"))
}

/// Reads lines until one contains every one of `needles`; returns everything read.
///
/// # Panics
/// When the stream ends, or 20 s pass, first (a hang guard, not a timing check).
pub fn read_until(reader: &mut impl std::io::BufRead, needles: &[&str]) -> String {
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
        seen.push_str(&line);
        if needles.iter().all(|n| line.contains(n)) {
            return seen;
        }
    }
    panic!("{needles:?} never appeared in:\n{seen}");
}

/// Sends the signal `name` (`INT`, `TERM`, ...) to `child`, with bash's builtin `kill`: no
/// dependency on a separate kill binary.
///
/// # Panics
/// When the signal cannot be sent.
pub fn signal(child: &std::process::Child, name: &str) {
    let status = Command::new("bash")
        .args(["-c", &format!("kill -{name} {}", child.id())])
        .status()
        .expect("bash runs");
    assert!(status.success());
}

/// Signals `child` with `sig`, reads the rest of its stream after `seen`, and checks that it
/// ends as §7 says: exit `exit`, nothing on stderr, a conforming stream whose summary says
/// `reason:"cancelled"`. Returns the whole stream and its summary.
///
/// # Panics
/// When any of that does not hold.
pub fn assert_cancelled(
    mut child: std::process::Child,
    stdout: &mut impl Read,
    mut seen: String,
    sig: &str,
    exit: i32,
) -> (String, aoi::Summary) {
    signal(&child, sig);
    stdout.read_to_string(&mut seen).expect("read the rest");
    let status = child.wait().expect("the child ends");
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        err.read_to_string(&mut stderr).expect("read stderr");
    }
    assert_eq!(status.code(), Some(exit), "{seen}\n{stderr}");
    assert_eq!(stderr, "");
    let report = assert_conforms(seen.as_bytes());
    let summary = report.summary.expect("a cancelled summary");
    assert!(!summary.ok);
    assert_eq!(summary.reason, Some(aoi::Reason::Cancelled));
    (seen, summary)
}

/// What a person sees when `program ARGS` runs on a terminal: the command runs on a real
/// pseudo-terminal (util-linux `script`), with `env` set, in `dir`, and the text the terminal
/// received comes back with CR LF read as LF (stdout and stderr together, as a terminal
/// shows them), with the exit status. For what a tool does only when stdout is a terminal:
/// colours, columns, escaping data. `None` when `script` cannot run: a missing prerequisite
/// ([`prerequisite::missing`]: a failure under CI, a one-line skip elsewhere).
pub fn on_terminal(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    dir: &Path,
) -> Option<(Option<i32>, String)> {
    let word = |w: &str| format!("'{}'", w.replace('\'', r"'\''"));
    let mut line = String::from("exec");
    for (key, value) in env {
        line = format!("{key}={} {line}", word(value));
    }
    line = format!("{line} {}", word(&program.to_string_lossy()));
    for a in args {
        line.push(' ');
        line.push_str(&word(a));
    }
    let out = match Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(dir)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            prerequisite::missing("a run on a terminal", &format!("util-linux `script` ({e})"));
            return None;
        }
    };
    Some((
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
    ))
}

/// A run as a snapshot reads it: `exit: N` (or `exit: signal`), then stdout and stderr under
/// `--- stdout` and `--- stderr`, each as (lossy) UTF-8.
pub fn transcript(out: &std::process::Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status
            .code()
            .map_or_else(|| "signal".to_owned(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
