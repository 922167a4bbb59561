//! A stream that cannot be written (§6, §7): the emitter and the harness, with stdout on
//! `/dev/full` and with the operating system failing fd 1 after a chosen number of bytes.
//!
//! The program is the SDK's `feed` example (a source built on `App` and the harness). The
//! faults come from `aoi-test`'s LD_PRELOAD shim (`crates/aoi-test/faults/faultshim.c`, see
//! `aoi_test::faultshim`): it fails `write`/`writev` on fd 1 with `EIO`, `ENOSPC` or `EPIPE` once
//! a byte budget is spent, cutting the write that crosses it short. What holds: a stream that
//! could not be written never exits 0; a failing device exits 74 (`EX_IOERR`) with one line on
//! stderr that names the system's error and no panic; a reader that went away exits 141 and
//! says nothing. Where the shim cannot be built (no C compiler, not Linux) those tests say in
//! one line that they were skipped.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use aoi::{Emitter, Outcome};
use aoi_test::faultshim::{self, Errno, Fault, Report};

use crate::scenario::identity;

/// The `feed` example, built with the workspace's binaries once per test run
/// (`aoi_test::workspace_bin`: integration tests do not build examples).
pub(crate) fn feed() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| aoi_test::workspace_bin("examples/feed"))
}

/// `feed ARGS` with stdout `stdout`, stderr captured.
fn run(args: &[&str], stdout: Stdio, fault: Option<(&Path, Fault)>) -> Output {
    let mut cmd = Command::new(feed());
    cmd.args(args)
        .env_remove("FEED_TOKEN")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped());
    if let Some((lib, fault)) = fault {
        fault.apply(lib, &mut cmd);
    }
    cmd.output().expect("feed runs")
}

/// A listing of `n` items in machine mode: about 100 bytes an item.
fn list(n: u64) -> Vec<String> {
    [
        "list",
        "--total",
        &n.to_string(),
        "--limit",
        &n.to_string(),
        "--output",
        "jsonl",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Asserts the end §6 asks of a run whose stream a failing device swallowed: exit 74, and one
/// line on stderr naming the cause, no panic, no backtrace.
fn assert_lost(out: &Output, errno: Errno, context: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(aoi::exit_code::IO_ERR)),
        "{context}: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{context}: {stderr:?}");
    assert!(stderr.ends_with('\n'), "{context}: {stderr:?}");
    assert!(
        stderr.contains(&errno.shown()),
        "{context}: names {:?}: {stderr:?}",
        errno.shown()
    );
    for noise in ["panicked", "backtrace"] {
        assert!(!stderr.contains(noise), "{context}: {stderr:?}");
    }
}

#[test]
fn every_kind_of_output_on_dev_full_exits_74_with_one_line_naming_the_cause() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        aoi_test::prerequisite::missing("stdout on /dev/full", "/dev/full");
        return;
    };
    let cases: [&[&str]; 9] = [
        // The harness: a stream of events, a doctor.
        &[
            "list", "--total", "3000", "--limit", "3000", "--output", "jsonl",
        ],
        // The example's own human output.
        &["list", "--total", "3000", "--limit", "3000"],
        &["doctor", "--output", "jsonl"],
        // Discovery documents.
        &["schema"],
        &["capabilities", "--output", "json"],
        &["input-schema", "--command", "list", "--output", "json"],
        // A usage error reported as a stream.
        &["list", "--no-such-flag", "--output", "jsonl"],
        // clap's own output.
        &["--help"],
        &["--version"],
    ];
    for args in cases {
        let stdout = Stdio::from(full.try_clone().expect("dup /dev/full"));
        let out = run(args, stdout, None);
        assert_lost(&out, Errno::NoSpace, &format!("{args:?} > /dev/full"));
    }
}

#[test]
fn a_stream_that_fails_after_n_bytes_exits_74_and_never_0() {
    let lib = match faultshim::library() {
        Ok(lib) => lib,
        Err(reason) => return aoi_test::prerequisite::missing("feed with stdout failing", reason),
    };
    let args = list(2000);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let whole = run(&args, Stdio::piped(), None);
    assert_eq!(whole.status.code(), Some(0));
    let total = whole.stdout.len() as u64;
    // The emitter buffers 64 KiB: this stream is written in several writes.
    assert!(total > 3 * (64 << 10), "{total} bytes");
    let meta = whole.stdout.iter().position(|b| *b == b'\n').unwrap() as u64 + 1;
    let scratch = aoi_test::temp_dir("stdout-faults");
    let report = scratch.join("report");
    // With a budget it never spends, the shim changes nothing: it fails only what it is told to.
    let fault = Fault::on_fd(1).after(u64::MAX).report_to(&report);
    let untouched = run(&args, Stdio::piped(), Some((lib, fault)));
    assert_eq!(untouched.status.code(), Some(0));
    assert_eq!(untouched.stderr, b"");
    let written = Report::read(&report).written.expect("the shim counts");
    assert_eq!(written, untouched.stdout.len() as u64);
    assert!(
        aoi::Verifier::verify_bytes(&untouched.stdout, aoi::VerifyOptions::default())
            .summary
            .is_some_and(|s| s.ok)
    );
    for errno in Errno::DEVICE {
        for after in [
            0,
            1,
            meta - 1,
            meta,
            (64 << 10) - 1,
            64 << 10,
            (64 << 10) + 1,
            total / 2,
            // Inside the summary line (whose `elapsed_ms` may be a digit longer or shorter).
            total - 100,
        ] {
            let fault = Fault::on_fd(1).after(after).errno(errno).report_to(&report);
            let out = run(&args, Stdio::piped(), Some((lib, fault)));
            let injected = Report::read(&report).injected;
            let context = format!(
                "stdout failing with {} after {after} of {total} bytes",
                errno.name()
            );
            assert_lost(&out, errno, &context);
            assert!(!injected.is_empty(), "{context}: nothing was injected");
            // The reader got exactly the bytes before the fault, and no summary: a cut stream,
            // which no consumer can take for a whole one.
            assert_eq!(out.stdout.len() as u64, after, "{context}");
            let report = aoi::Verifier::verify_bytes(&out.stdout, aoi::VerifyOptions::default());
            assert!(report.summary.is_none(), "{context}");
            assert_ne!(report.verdict, aoi::Verdict::Succeeded, "{context}");
        }
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_run_with_141_and_nothing_on_stderr() {
    let lib = match faultshim::library() {
        Ok(lib) => lib,
        Err(reason) => return aoi_test::prerequisite::missing("feed with stdout closed", reason),
    };
    let args = list(2000);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for after in [0, 500, 100_000] {
        let fault = Fault::on_fd(1).after(after).errno(Errno::BrokenPipe);
        let out = run(&args, Stdio::piped(), Some((lib, fault)));
        let context = format!("EPIPE after {after} bytes");
        assert_eq!(
            out.status.code(),
            Some(i32::from(aoi::exit_code::SIGPIPE)),
            "{context}"
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{context}");
    }
}

/// A writer that takes `left` bytes and then fails every write with `kind`.
struct Failing {
    left: usize,
    kind: io::ErrorKind,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::new(self.kind, "the device failed"));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// After one failed write, every later call fails too, naming the failure that broke the
/// stream: that is what the harness's one line on stderr passes on.
#[test]
fn once_a_write_failed_every_later_call_fails_and_names_the_first_failure() {
    #[derive(serde::Serialize)]
    struct Item {
        n: u64,
        text: String,
    }
    impl aoi::DomainEvent for Item {
        const TYPE: &'static str = "item";
    }
    let out = Failing {
        left: 100 << 10,
        kind: io::ErrorKind::StorageFull,
    };
    let mut emitter = Emitter::builder(identity()).start(out).expect("meta fits");
    let first = (0..)
        .find_map(|n| {
            let item = Item {
                n,
                text: "x".repeat(200),
            };
            emitter.emit(&item).err()
        })
        .expect("a write fails");
    assert!(first.to_string().contains("the device failed"), "{first}");
    let item = Item {
        n: 0,
        text: String::new(),
    };
    for later in [
        emitter.emit(&item).unwrap_err(),
        emitter.flush().unwrap_err(),
        emitter.finish(Outcome::success()).unwrap_err(),
    ] {
        let aoi::EmitError::Io(e) = &later else {
            panic!("not an I/O error: {later:?}");
        };
        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{later}");
        assert!(later.to_string().contains("the device failed"), "{later}");
        assert!(later.to_string().contains("earlier write"), "{later}");
    }
}
