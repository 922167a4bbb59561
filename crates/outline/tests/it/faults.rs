//! Faults: an import killed with SIGKILL, two processes racing to update one document, a
//! reader that closes the pipe early, secrets in the environment and on the command line, and
//! writes the operating system makes fail.
//!
//! # Fault injection
//!
//! The tests after the `Fault injection` mark below run the real `outline` binary with
//! `aoi_test::faultshim` preloaded (`LD_PRELOAD`; the C source is
//! `crates/aoi-test/faults/faultshim.c`). The shim interposes `write`, `pwrite`, `pwrite64`,
//! `writev`, `fsync`, `fdatasync`, `ftruncate` and `ftruncate64`, and, for the fds a test
//! targets (the database's files by path, or fd 1), lets a budget of bytes through and then
//! fails them with `ENOSPC` or `EIO`, cutting the write that crosses the budget short, as a
//! disk that fills does. SQLite, statically linked into `outline`, calls libc's `pwrite64` and
//! `fsync` like any other code, so the faults land in its write-ahead log, its shared-memory
//! index, its commit and its checkpoint; Rust's stdout calls `write`. `/dev/full` stands in
//! for a full disk behind stdout with no shim at all.
//!
//! What they hold `outline` and the SDK to: a failed database write exits 74 with an `io`
//! error and an `ok:false` summary, and leaves every document exactly as it was (§4, §6,
//! §12); a write that exits 0 is all there; a stream (or human-mode output) that cannot be
//! written never exits 0, and says why in one line on stderr, with no panic (§6, §7).
//!
//! They are part of `cargo test --workspace`; alone: `cargo test -p outline --test it faults`.
//! The shim is built with `cc` (or `$CC`) once per test process; on a machine without a C
//! compiler, or not on Linux, each of these tests says in one line that it was skipped.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use aoi::read::Event;
use aoi::Category;
use aoi_test::faultshim::{self, Calls, Fault, Report};

use crate::support::{domain, error, summary, Db, Run};

/// `outline` with the environment the other tests use.
fn outline() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_outline"));
    cmd.env_remove("OUTLINE_DB")
        .env_remove("OUTLINE_TOKEN")
        .env("NO_COLOR", "1");
    cmd
}

fn count(db: &Db) -> u64 {
    let run = db.jsonl(&["status"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    domain(&run, "status")[0]["documents"].as_u64().unwrap()
}

/// Asserts `outline doctor` finds the database intact: its `integrity` check runs
/// `PRAGMA integrity_check`, `foreign_key_check` and FTS5's own integrity check.
fn assert_intact(db: &Db, context: &str) {
    let run = db.jsonl(&["doctor"]);
    let checks: Vec<aoi::Check> = aoi_test::events(&run.stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Check(c) => Some(c),
            _ => None,
        })
        .collect();
    let integrity = checks
        .iter()
        .find(|c| c.name == "integrity")
        .unwrap_or_else(|| panic!("{context}: no integrity check in {checks:?}"));
    assert!(integrity.ok, "{context}: {:?}", integrity.detail);
    assert_eq!(run.code, 0, "{context}: {checks:?}\n{}", run.stderr);
}

/// A small xorshift generator: enough to spread kill times, reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn from_time() -> (Rng, u64) {
        let seed = match std::env::var("OUTLINE_FAULT_SEED") {
            Ok(s) => s.parse().expect("OUTLINE_FAULT_SEED is a u64"),
            Err(_) => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64,
        };
        (Rng(seed | 1), seed)
    }

    /// A float in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `outline import --input-jsonl INPUT --db DB --output jsonl`, stdin closed.
fn import_command(input: &std::path::Path, db: &std::path::Path) -> Command {
    let mut cmd = outline();
    cmd.arg("import")
        .arg("--input-jsonl")
        .arg(input)
        .arg("--db")
        .arg(db)
        .args(["--output", "jsonl"])
        .stdin(Stdio::null());
    cmd
}

#[test]
fn an_import_killed_at_random_points_leaves_an_intact_database_with_all_or_none_of_it() {
    const N: u64 = 100_000;
    const ROUNDS: u32 = 4;
    let db = Db::new("kill-import");
    let input = db.path().with_file_name("input.jsonl");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    let mut text = String::with_capacity(N as usize * 40);
    for i in 0..N {
        writeln!(text, "{{\"title\":\"doc {i}\",\"body\":\"body of {i}\"}}").unwrap();
    }
    std::fs::write(&input, text).unwrap();

    // One import run to the end, in a database of its own: the import works (so the rounds
    // below can fail), and its duration is the span the kills are spread over.
    let full = Db::new("kill-import-full");
    let started = Instant::now();
    let out = import_command(&input, &full.path()).output().unwrap();
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The summary is the last line; the count of documents below is the real check.
    let last = out
        .stdout
        .trim_ascii_end()
        .rsplit(|b| *b == b'\n')
        .next()
        .unwrap();
    let last: serde_json::Value = serde_json::from_slice(last).unwrap();
    assert_eq!(last["type"], "aoi:summary");
    assert_eq!(last["ok"], true);
    assert_eq!(last["count"], N);
    assert_eq!(count(&full), N);
    assert_intact(&full, "after a complete import");
    drop(full);

    for n in 0..10 {
        db.create(&["--title", &format!("before {n}")]);
    }
    let mut prior = count(&db);
    assert_eq!(prior, 10);

    let (mut rng, seed) = Rng::from_time();
    for round in 0..ROUNDS {
        // Round r kills somewhere in the r-th quarter of the measured run, so early (still
        // reading), middle and late (writing, committing) points are all hit.
        let delay = took.mul_f64((f64::from(round) + rng.unit()) / f64::from(ROUNDS));
        let mut child = import_command(&input, &db.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        let context = format!(
            "round {round} (seed {seed}, OUTLINE_FAULT_SEED reruns it), \
             killed after {delay:?} of a {took:?} import, {status}"
        );

        let after = count(&db);
        assert!(
            after == prior || after == prior + N,
            "{context}: {after} documents; expected {prior} or {}",
            prior + N
        );
        assert_intact(&db, &context);
        // The database takes writes again: no lock or journal was left behind.
        db.create(&["--title", &format!("after round {round}")]);
        prior = after + 1;
        assert_eq!(count(&db), prior, "{context}");
    }
}

/// Increments the counter in `id`'s body `times` times with get + `update --if-match`,
/// retrying on conflicts and retryable errors; returns the values it wrote.
fn increment(db: &Db, id: &str, times: usize) -> Vec<u64> {
    let mut written = Vec::new();
    let mut attempts = 0;
    while written.len() < times {
        attempts += 1;
        assert!(attempts < 5_000, "no progress after {attempts} attempts");
        let got = db.jsonl(&["get", id]);
        if got.code != 0 {
            let e = error(&got);
            assert!(e.retryable, "get failed and is not retryable: {e:?}");
            assert_eq!(got.code, i32::from(e.category.exit_code()), "{e:?}");
            continue;
        }
        let entry = &domain(&got, "entry")[0];
        let value: u64 = entry["body"].as_str().unwrap().parse().unwrap();
        let version = entry["version"].as_u64().unwrap();
        let next = value + 1;
        let run = db.jsonl(&[
            "update",
            id,
            "--body",
            &next.to_string(),
            "--if-match",
            &version.to_string(),
        ]);
        if run.code == 0 {
            assert!(summary(&run).ok);
            assert_eq!(domain(&run, "updated")[0]["version"], version + 1);
            written.push(next);
            continue;
        }
        let e = error(&run);
        assert!(!summary(&run).ok);
        assert_eq!(run.code, i32::from(e.category.exit_code()), "{e:?}");
        if e.category == Category::Conflict {
            assert_eq!(run.code, 65, "conflict exits 65 (DATA_ERR)");
        } else {
            assert!(
                e.retryable,
                "update failed other than by conflict, not retryable: {e:?}"
            );
        }
    }
    written
}

#[test]
fn two_processes_updating_with_if_match_never_lose_an_update() {
    const EACH: usize = 25;
    let db = Db::new("if-match-race");
    let id = db.create(&["--title", "Counter", "--body", "0"]);
    let start = domain(&db.jsonl(&["get", &id]), "entry")[0]["version"]
        .as_u64()
        .unwrap();

    let mut written: Vec<u64> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| s.spawn(|| increment(&db, &id, EACH)))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    written.sort_unstable();
    // Every successful update wrote a distinct value: none was based on a stale read.
    let expected: Vec<u64> = (1..=2 * EACH as u64).collect();
    assert_eq!(written, expected);

    let entry = &domain(&db.jsonl(&["get", &id]), "entry")[0];
    assert_eq!(entry["body"], (2 * EACH).to_string());
    assert_eq!(entry["version"].as_u64().unwrap(), start + 2 * EACH as u64);
}

#[test]
fn search_into_head_ends_quietly_in_both_modes() {
    let db = Db::new("search-head");
    let input = db.path().with_file_name("input.jsonl");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    let title = format!("needle {}", "word ".repeat(60));
    let body = "needle text ".repeat(100);
    let mut text = String::new();
    for i in 0..3000 {
        writeln!(text, "{{\"title\":\"{title}{i}\",\"body\":\"{body}\"}}").unwrap();
    }
    std::fs::write(&input, text).unwrap();
    let imported = db.jsonl(&["import", "--input-jsonl", input.to_str().unwrap()]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);

    let err = db.path().with_file_name("stderr.txt");
    let db_path = db.path();
    for machine in [false, true] {
        let mut args = vec!["search", "needle", "--limit", "5000", "--db"];
        args.push(db_path.to_str().unwrap());
        if machine {
            args.extend(["--output", "jsonl"]);
        }

        // Unpiped, the output is far more than a pipe holds, so `head` must close it early.
        let whole = outline().args(&args).output().unwrap();
        assert!(whole.status.success());
        assert!(
            whole.stdout.len() > 256 << 10,
            "machine={machine}: only {} bytes",
            whole.stdout.len()
        );

        let out = Command::new("bash")
            .env_remove("OUTLINE_DB")
            .env("NO_COLOR", "1")
            .arg("-c")
            .arg(
                "bin=$1; err=$2; shift 2\n\
                 \"$bin\" \"$@\" 2>\"$err\" | head -n 1\n\
                 echo \"status=${PIPESTATUS[0]}\"",
            )
            .arg("bash")
            .arg(env!("CARGO_BIN_EXE_outline"))
            .arg(&err)
            .args(&args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "machine={machine}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "machine={machine}"
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "machine={machine}: {stdout}");
        let status = lines[1].strip_prefix("status=").unwrap();
        assert!(
            status == "141" || status == "0",
            "machine={machine}: outline exited {status}"
        );
        let outline_stderr = std::fs::read_to_string(&err).unwrap();
        assert!(
            !outline_stderr.contains("panicked"),
            "machine={machine}: {outline_stderr}"
        );
        assert_eq!(outline_stderr, "", "machine={machine}");
        if machine {
            let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
            assert_eq!(first["type"], "aoi:meta", "{}", lines[0]);
            assert_eq!(first["command"], "search", "{}", lines[0]);
        } else {
            assert!(lines[0].contains("TITLE"), "{}", lines[0]);
        }
    }
}

/// §6: a machine-mode run whose stream cannot be written (fd 1 closed: `outline ... >&-`)
/// must not exit 0 having written nothing; it exits 74 (`EX_IOERR`) with one line on stderr,
/// the only place left to say so. Both the harness (a command's run) and the discovery
/// subcommands are held to it.
#[test]
fn a_closed_stdout_exits_74_with_one_line_on_stderr_section_6() {
    let db = Db::new("closed-stdout");
    db.create(&["--title", "Agent notes"]);
    let db_path = db.path();
    let db_path = db_path.to_str().unwrap();
    for args in [
        &["search", "agent"][..],
        &["status"],
        &["schema"],
        &["capabilities"],
    ] {
        let out = Command::new("sh")
            .env_remove("OUTLINE_DB")
            .env("NO_COLOR", "1")
            .arg("-c")
            .arg("exec \"$0\" \"$@\" >&-")
            .arg(env!("CARGO_BIN_EXE_outline"))
            .args(args)
            .args(["--db", db_path, "--output", "jsonl"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(aoi::exit_code::IO_ERR.into()),
            "{args:?}: stderr {stderr:?}"
        );
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
        assert!(stderr.ends_with('\n'), "{args:?}: {stderr:?}");
        assert!(
            stderr.contains("stdout"),
            "{args:?}: names what failed: {stderr:?}"
        );
    }
}

/// Secret values that must never come back out.
const ENV_CANARY: &str = "canary-env-7f3a9c0d";
const ARG_CANARY: &str = "canary-arg-51d2e8b4";

/// Runs `outline ARGS --db <db>` with secrets in sensitive environment variables, in human
/// mode and in machine mode; asserts the exit code in both and that no canary is in any output.
fn assert_no_canary(db: &Db, args: &[&str], code: i32) {
    for machine in [false, true] {
        let mut cmd = outline();
        cmd.args(args).arg("--db").arg(db.path());
        if machine {
            cmd.args(["--output", "jsonl"]);
        }
        let out = cmd
            // No credential file from the machine running the tests.
            .env("XDG_CONFIG_HOME", db.path().with_file_name("config"))
            .env("OUTLINE_TOKEN", ENV_CANARY)
            .env("OUTLINE_API_KEY", format!("{ENV_CANARY}-key"))
            .env("GITHUB_TOKEN", format!("{ENV_CANARY}-gh"))
            .env("AWS_SECRET_ACCESS_KEY", format!("{ENV_CANARY}-aws"))
            .env("DATABASE_PASSWORD", format!("{ENV_CANARY}-pw"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let context =
            format!("machine={machine} {args:?}\n--- stdout\n{stdout}--- stderr\n{stderr}");
        assert_eq!(out.status.code(), Some(code), "{context}");
        if machine {
            aoi_test::assert_conforms(&out.stdout);
        }
        for canary in [ENV_CANARY, ARG_CANARY] {
            assert!(!stdout.contains(canary), "{canary} on stdout: {context}");
            assert!(!stderr.contains(canary), "{canary} on stderr: {context}");
        }
    }
}

#[test]
fn a_secret_in_the_environment_or_a_sensitive_flag_never_appears_in_output() {
    let db = Db::new("canary");
    let id = db.create(&["--title", "Plain", "--body", "searchable words"]);

    // Commands that succeed, with and without --debug.
    assert_no_canary(&db, &["create", "--title", "T", "--body", "searchable"], 0);
    assert_no_canary(&db, &["search", "searchable", "--debug"], 0);
    assert_no_canary(&db, &["get", &id, "--debug"], 0);
    assert_no_canary(&db, &["list", "--debug"], 0);
    assert_no_canary(&db, &["status", "--debug"], 0);
    assert_no_canary(&db, &["doctor", "--debug"], 0);
    // Commands that fail after parsing: a missing document, a stale version.
    let missing = "doc_01m8p3c9kj1b51p7yykr0mz3d6";
    let not_found = db.jsonl(&["get", missing]).code;
    assert_ne!(not_found, 0);
    assert_no_canary(&db, &["get", missing, "--debug"], not_found);
    assert_no_canary(
        &db,
        &["update", &id, "--title", "X", "--if-match", "99", "--debug"],
        65,
    );

    // The commands about credentials, with OUTLINE_TOKEN set to a canary: they say where a
    // token comes from, never what it is.
    assert_no_canary(&db, &["auth", "status"], 0);
    assert_no_canary(&db, &["auth", "protect"], 0);
    let remote = Db::new("canary-remote");
    remote.create(&["--title", "Remote"]);
    assert_no_canary(&remote, &["auth", "protect"], 0);
    let remote_path = remote.path().display().to_string();
    assert_no_canary(&db, &["sync", &remote_path, "--dry-run"], 0);
    assert_no_canary(&db, &["auth", "login", "--with-token"], 65);

    // Usage errors: a secret given to a flag whose name is sensitive (§11) must not be
    // echoed back in the error, in either spelling.
    for flag in [
        "--api-key",
        "--token",
        "--password",
        "--client-secret",
        "--auth",
    ] {
        assert_no_canary(&db, &["search", "words", flag, ARG_CANARY], 64);
        let joined = format!("{flag}={ARG_CANARY}");
        assert_no_canary(&db, &["search", "words", &joined], 64);
        assert_no_canary(&db, &[flag, ARG_CANARY, "status"], 64);
        assert_no_canary(&db, &["create", "--title", "T", &joined, "--debug"], 64);
    }
    // A misspelled subcommand with a secret after it.
    assert_no_canary(&db, &["statsu", "--token", ARG_CANARY], 64);

    // Nothing was created by the refused commands: two creates only (the helper's and the
    // first case's, once per mode).
    assert_eq!(count(&db), 3);
}

// Fault injection: the operating system fails chosen writes (see the module docs).

/// The fault-injection shim, or `None` after saying in one line why `test` is skipped.
fn shim(test: &str) -> Option<&'static Path> {
    match faultshim::library() {
        Ok(lib) => Some(lib),
        Err(reason) => {
            aoi_test::prerequisite::missing(test, reason);
            None
        }
    }
}

/// The path substring that targets every file of `db` (the database, its `-wal`, `-shm` and
/// `-search`), as `/proc/self/fd` shows it (the temp directory may be behind a symlink).
fn db_files(db: &Db) -> String {
    let dir = std::fs::canonicalize(db.path().parent().unwrap()).unwrap();
    dir.join("outline.db").display().to_string()
}

/// `outline ARGS --db DB --output jsonl`, stdin empty, under `fault`; the run and what the
/// shim recorded.
fn faulted(db: &Db, args: &[&str], lib: &Path, fault: Fault) -> (Run, Report) {
    let report = db.config_dir().with_file_name("faultshim.report");
    let _ = std::fs::remove_file(&report);
    let mut cmd = outline();
    cmd.args(args)
        .arg("--db")
        .arg(db.path())
        .args(["--output", "jsonl"])
        .env("XDG_CONFIG_HOME", db.config_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    fault.report_to(&report).apply(lib, &mut cmd);
    let out = cmd.output().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (run, Report::read(&report))
}

/// Every document of `db` as `export` writes it: the whole content, for "exactly as before".
fn documents(db: &Db) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let run = db.jsonl(&["export"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    domain(&run, "entry")
}

/// The start of a run's stdout and its stderr, for an assertion's message.
fn shown(run: &Run) -> String {
    let text = run.stdout_text();
    let cut = text
        .char_indices()
        .nth(3000)
        .map_or(text.as_str(), |(i, _)| &text[..i]);
    format!(
        "exit {}\n--- stdout\n{cut}\n--- stderr\n{}",
        run.code, run.stderr
    )
}

/// Where the first injected failure landed: the call and the file (`outline.db-wal`, ...).
fn landed(report: &Report) -> String {
    report.injected.first().map_or("nowhere".into(), |i| {
        let file = i.path.rsplit('/').next().unwrap_or(&i.path);
        format!("{} on {file}", i.call)
    })
}

/// Asserts that `run` failed the way a failed database write must (§4, §6, §9): exit 74, a
/// conforming stream whose process-scope `aoi:error` is `io` (not retryable: the tool cannot
/// know the disk has room again) and whose summary says `ok:false, reason:"failed"`, and
/// nothing on stderr (in machine mode the stream carries the error). Returns the error.
fn assert_failed_io(run: &Run, context: &str) -> aoi::ErrorEvent {
    assert_eq!(
        run.code,
        i32::from(aoi::exit_code::IO_ERR),
        "{context}\n{}",
        shown(run)
    );
    let report = aoi_test::assert_conforms(&run.stdout);
    let summary = report.summary.expect("a summary");
    assert!(!summary.ok, "{context}");
    assert_eq!(summary.reason, Some(aoi::Reason::Failed), "{context}");
    let e = error(run);
    assert_eq!(e.category, Category::Io, "{context}: {e:?}");
    assert_eq!(e.scope, aoi::Scope::Process, "{context}: {e:?}");
    assert!(!e.retryable, "{context}: {e:?}");
    assert_eq!(run.stderr, "", "{context}");
    e
}

/// One disk fault for a write command: which files, after how many bytes, which calls.
struct DiskFault {
    /// What the budget stands for, for messages.
    label: String,
    fault: Fault,
    /// The run must fail (the fault lands before the commit); otherwise either outcome is
    /// right, as long as the database says the same as the exit code.
    must_fail: bool,
}

/// Runs `args` under each fault in `faults`, with each errno, and holds every run to the
/// rule that makes a write safe to retry or to trust: **committed exactly when it exits 0**.
/// A failed run exits 74 with an `io` error and leaves every document as it was (its
/// `export` is unchanged) and the database intact; a run that exits 0 says `ok:true` and its
/// effect is there. Returns, per fault that failed a run, the error's message and where the
/// shim's first failure landed.
fn assert_committed_iff_exit_0(
    db: &Db,
    lib: &Path,
    args: &[&str],
    faults: &[DiskFault],
    created: u64,
) -> Vec<(String, String, String)> {
    let mut failures = Vec::new();
    for errno in faultshim::Errno::DEVICE {
        for case in faults {
            let before = documents(db);
            let fault = case.fault.clone().errno(errno);
            let (run, report) = faulted(db, args, lib, fault);
            let context = format!(
                "{} {} with {} (first failure: {})",
                args[0],
                case.label,
                errno.name(),
                landed(&report)
            );
            let after = documents(db);
            if run.code == 0 {
                assert!(!case.must_fail, "{context}: exited 0\n{}", shown(&run));
                let stream = aoi_test::assert_conforms(&run.stdout);
                assert!(stream.summary.expect("a summary").ok, "{context}");
                assert_eq!(
                    after.len() as u64,
                    before.len() as u64 + created,
                    "{context}: exit 0, so all of it is there"
                );
                assert_eq!(&after[..before.len()], &before[..], "{context}");
            } else {
                let e = assert_failed_io(&run, &context);
                assert!(
                    !report.injected.is_empty(),
                    "{context}: failed, but the shim injected nothing"
                );
                assert!(
                    report.injected.iter().all(|i| i.errno == errno.raw()),
                    "{context}: {report:?}"
                );
                assert_eq!(after, before, "{context}: not exactly as before");
                failures.push((case.label.clone(), e.message, landed(&report)));
            }
            assert_intact(db, &context);
        }
    }
    failures
}

#[test]
fn a_disk_that_fills_or_fails_during_create_leaves_every_document_as_it_was() {
    let Some(lib) = shim("create on a failing disk") else {
        return;
    };
    let db = Db::new("disk-create");
    for n in 0..3 {
        db.create(&["--title", &format!("before {n}")]);
    }
    let files = db_files(&db);
    let on_db = |after: u64| Fault::on_path(&files).after(after);
    // Large enough (≈300 KiB of words, and their full-text entries) that the budgets below
    // land inside its own pages, before the commit.
    let body: String = (0..40_000).map(|i| format!("word{} ", i % 997)).collect();
    let body_file = db.config_dir().with_file_name("body.txt");
    std::fs::write(&body_file, body).unwrap();
    let faults = [
        DiskFault {
            label: "at the first byte".into(),
            fault: on_db(0),
            must_fail: true,
        },
        DiskFault {
            label: "after 4 KiB".into(),
            fault: on_db(4 << 10),
            must_fail: true,
        },
        DiskFault {
            label: "after 64 KiB".into(),
            fault: on_db(64 << 10),
            must_fail: true,
        },
        DiskFault {
            label: "after 1 MiB".into(),
            fault: on_db(1 << 20),
            must_fail: false,
        },
        DiskFault {
            label: "on every fsync".into(),
            fault: on_db(0).calls(Calls::Syncs),
            must_fail: false,
        },
        DiskFault {
            label: "on fsyncs after 64 KiB".into(),
            fault: on_db(64 << 10).calls(Calls::Syncs),
            must_fail: false,
        },
    ];
    let args = [
        "create",
        "--title",
        "Big",
        "--body-file",
        body_file.to_str().unwrap(),
    ];
    let failures = assert_committed_iff_exit_0(&db, lib, &args, &faults, 1);
    // The budgets put the failure in different places: the shared-memory index as the run
    // starts reading, and the write-ahead log's pages as the transaction writes.
    let places: Vec<&str> = failures.iter().map(|(_, _, at)| at.as_str()).collect();
    for place in ["pwrite64 on outline.db-shm", "pwrite64 on outline.db-wal"] {
        assert!(places.contains(&place), "{place} not among {failures:#?}");
    }
}

#[test]
fn a_create_that_fails_on_a_full_disk_leaves_no_database_behind() {
    let Some(lib) = shim("create of a new database on a failing disk") else {
        return;
    };
    for errno in faultshim::Errno::DEVICE {
        for after in [0, 4 << 10, 16 << 10] {
            let db = Db::new("disk-new");
            let files = db_files(&db);
            let fault = Fault::on_path(&files).after(after).errno(errno);
            let (run, report) = faulted(&db, &["create", "--title", "First"], lib, fault);
            let context = format!(
                "{} after {after} bytes (first failure: {})",
                errno.name(),
                landed(&report)
            );
            assert_failed_io(&run, &context);
            // §12: nothing half-made: no database file, journal or index stays behind.
            let left: Vec<_> = std::fs::read_dir(db.path().parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert!(left.is_empty(), "{context}: left {left:?}");
            let status = db.jsonl(&["status"]);
            assert_eq!(
                error(&status).code.as_str(),
                "DATABASE_NOT_FOUND",
                "{context}"
            );
        }
    }
}

/// `n` import records with bodies of ≈30 words, several MiB of pages once indexed.
fn import_input(dir: &Db, n: usize) -> std::path::PathBuf {
    let input = dir.config_dir().with_file_name("input.jsonl");
    let mut text = String::with_capacity(n * 250);
    for i in 0..n {
        let words: Vec<String> = (0..30)
            .map(|j| format!("word{}", (i * 7 + j) % 5000))
            .collect();
        writeln!(
            text,
            "{{\"title\":\"record {i}\",\"body\":\"{}\"}}",
            words.join(" ")
        )
        .unwrap();
    }
    std::fs::write(&input, text).unwrap();
    input
}

#[test]
fn a_disk_that_fills_or_fails_during_an_import_rolls_all_of_it_back() {
    const N: usize = 10_000;
    let Some(lib) = shim("import on a failing disk") else {
        return;
    };
    let db = Db::new("disk-import");
    for n in 0..10 {
        db.create(&["--title", &format!("before {n}")]);
    }
    let input = import_input(&db, N);
    let input = input.to_str().unwrap();
    let args = ["import", "--input-jsonl", input];
    let files = db_files(&db);
    let wal = format!("{files}-wal");

    // How much the import writes to the write-ahead log when nothing fails, measured on a
    // copy of the database (the same pages, so the same log): the budgets below are placed
    // inside that run, the last ones in the commit itself.
    let copy = Db::new("disk-import-measure");
    std::fs::copy(db.path(), copy.path()).unwrap();
    let copy_wal = format!("{}-wal", db_files(&copy));
    let (run, report) = faulted(&copy, &args, lib, Fault::on_path(copy_wal).after(u64::MAX));
    assert_eq!(run.code, 0, "{}", shown(&run));
    let logged = report.written.expect("the shim reports the bytes written");
    assert!(logged > 4 << 20, "the import logs {logged} bytes");
    drop(copy);

    let on_wal = |label: &str, after: u64| DiskFault {
        label: format!("{label} ({after} bytes into the log)"),
        fault: Fault::on_path(&wal).after(after),
        must_fail: true,
    };
    let faults = [
        // The whole database: the run fails as it starts reading (the shared-memory index).
        DiskFault {
            label: "at the first byte of any file".into(),
            fault: Fault::on_path(&files),
            must_fail: true,
        },
        on_wal("at the first byte", 0),
        on_wal("after 4 KiB", 4 << 10),
        on_wal("after 64 KiB", 64 << 10),
        on_wal("after 1 MiB", 1 << 20),
        on_wal("halfway", logged / 2),
        on_wal("in the commit", logged - (64 << 10)),
        on_wal("at the commit's last byte", logged - 1),
        // Syncs only: the log is synced as a new one starts and when it is copied back into
        // the database after the commit; either outcome, as long as it is the truth.
        DiskFault {
            label: "on every fsync".into(),
            fault: Fault::on_path(&files).calls(Calls::Syncs),
            must_fail: false,
        },
    ];
    let failures = assert_committed_iff_exit_0(&db, lib, &args, &faults, N as u64);
    // Failures landed both while records were inserted (pages spilled from the cache to the
    // log mid-transaction) and in the commit.
    let contexts: Vec<&str> = failures
        .iter()
        .map(|(_, message, _)| message.split(':').next().unwrap_or(""))
        .collect();
    for context in ["inserting a document", "committing"] {
        assert!(contexts.contains(&context), "{context}: {failures:#?}");
    }
}

/// The other half of "committed exactly when it exits 0": once the commit is in the log, a
/// failure to copy it back into the database file (the checkpoint when the connection
/// closes) loses nothing, so the run succeeds, and the next open finds all of it.
#[test]
fn a_checkpoint_that_fails_after_the_commit_keeps_the_import() {
    const N: usize = 2_000;
    let Some(lib) = shim("checkpoint on a failing disk") else {
        return;
    };
    for errno in faultshim::Errno::DEVICE {
        let db = Db::new("disk-checkpoint");
        db.create(&["--title", "before"]);
        let input = import_input(&db, N);
        // The database file only (not its log): every write and fsync of it fails.
        let main = format!("{}$", db_files(&db));
        let fault = Fault::on_path(main).errno(errno);
        let (run, report) = faulted(
            &db,
            &["import", "--input-jsonl", input.to_str().unwrap()],
            lib,
            fault,
        );
        let context = format!("{} (first failure: {})", errno.name(), landed(&report));
        assert_eq!(run.code, 0, "{context}\n{}", shown(&run));
        assert!(summary(&run).ok, "{context}");
        assert!(
            report
                .injected
                .iter()
                .any(|i| i.path.ends_with("/outline.db")),
            "{context}: the checkpoint never wrote the database file: {report:?}"
        );
        assert_eq!(count(&db), N as u64 + 1, "{context}");
        assert_intact(&db, &context);
    }
}

/// A database of `n` documents with longish titles, for reads that print a lot.
fn many_documents(name: &str, n: usize) -> Db {
    let db = Db::new(name);
    let input = db.config_dir().with_file_name("many.jsonl");
    let mut text = String::new();
    for i in 0..n {
        writeln!(
            text,
            "{{\"title\":\"document {i} about agents and tools\",\"body\":\"body {i}\"}}"
        )
        .unwrap();
    }
    std::fs::write(&input, text).unwrap();
    let run = db.jsonl(&["import", "--input-jsonl", input.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    db
}

/// Asserts that a run whose stdout failed ended as §6 and §7 say: exit 74, never 0, and one
/// line on stderr (the only place left to say it) that names the system's error, with no
/// panic message or backtrace.
fn assert_stdout_failed(run: &Run, errno: faultshim::Errno, context: &str) {
    assert_eq!(
        run.code,
        i32::from(aoi::exit_code::IO_ERR),
        "{context}\n{}",
        shown(run)
    );
    let stderr = &run.stderr;
    assert_eq!(stderr.lines().count(), 1, "{context}: {stderr:?}");
    assert!(stderr.ends_with('\n'), "{context}: {stderr:?}");
    assert!(
        stderr.contains(&errno.shown()),
        "{context}: the line names the cause ({}): {stderr:?}",
        errno.shown()
    );
    for noise in ["panicked", "backtrace", "RUST_BACKTRACE"] {
        assert!(!stderr.contains(noise), "{context}: {stderr:?}");
    }
}

/// `outline ARGS --db DB --output jsonl` with stdout on `/dev/full`, a real device whose
/// every write fails with ENOSPC; `None` where there is no such device.
fn to_dev_full(db: &Db, args: &[&str]) -> Option<Run> {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .ok()?;
    let out = outline()
        .args(args)
        .arg("--db")
        .arg(db.path())
        .args(["--output", "jsonl"])
        .env("XDG_CONFIG_HOME", db.config_dir())
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    Some(Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

#[test]
fn a_read_whose_stdout_fills_or_fails_exits_74_and_never_0() {
    let Some(lib) = shim("a read whose stdout fails") else {
        return;
    };
    let db = many_documents("stdout-read", 3000);
    for args in [&["list", "--limit", "1000"][..], &["export"]] {
        let whole = db.jsonl(args);
        assert_eq!(whole.code, 0);
        let total = whole.stdout.len() as u64;
        // More than the emitter buffers (64 KiB), so it writes in the middle of the run too.
        assert!(total > 128 << 10, "{args:?}: {total} bytes");
        let meta = whole.stdout.iter().position(|b| *b == b'\n').unwrap() as u64 + 1;
        for errno in faultshim::Errno::DEVICE {
            for after in [0, 100, meta, 64 << 10, total / 2, total - 10] {
                let fault = Fault::on_fd(1).after(after).errno(errno);
                let (run, report) = faulted(&db, args, lib, fault);
                let context = format!(
                    "{args:?}, stdout failing with {} after {after} of {total} bytes",
                    errno.name()
                );
                assert_stdout_failed(&run, errno, &context);
                assert!(
                    !report.injected.is_empty() && report.injected.iter().all(|i| i.fd == 1),
                    "{context}: {report:?}"
                );
                // Exactly the budget reached the reader, and without a summary: a consumer
                // sees a cut stream, never a complete one.
                assert_eq!(run.stdout.len() as u64, after, "{context}");
                let stream = aoi_test::verify(&run.stdout);
                assert!(stream.summary.is_none(), "{context}");
                assert_ne!(stream.verdict, aoi::Verdict::Succeeded, "{context}");
            }
        }
    }
}

/// A write whose stdout fails: what the SDK does is fixed by where the failure lands. The
/// harness writes `aoi:meta` before the command's body runs, so a stdout that fails from the
/// first byte (or `/dev/full`) ends the run before it touches the database. One that fails
/// after `aoi:meta` lets the body run and commit; the `created` event and the summary cannot
/// be written, so the exit code (74) and one line on stderr are all that says the run did not
/// end well. The effect is then unknown to the caller, as for any `retryable:false` failure
/// (§9.3): it must look (`outline get`, `list`) before it writes again. Never exit 0.
#[test]
fn a_create_whose_stdout_fails_exits_74_and_commits_only_once_meta_is_out() {
    let Some(lib) = shim("a create whose stdout fails") else {
        return;
    };
    let db = Db::new("stdout-create");
    let args = ["create", "--title", "Same"];
    let clean = db.jsonl(&args);
    assert_eq!(clean.code, 0);
    let meta = clean.stdout.iter().position(|b| *b == b'\n').unwrap() as u64 + 1;
    for errno in faultshim::Errno::DEVICE {
        for (after, commits) in [
            (0, false),
            (meta / 2, false),
            (meta, true),
            (meta + 40, true),
        ] {
            let before = count(&db);
            let fault = Fault::on_fd(1).after(after).errno(errno);
            let (run, report) = faulted(&db, &args, lib, fault);
            let context = format!(
                "create, stdout failing with {} after {after} bytes (meta is {meta})",
                errno.name()
            );
            assert_stdout_failed(&run, errno, &context);
            assert!(!report.injected.is_empty(), "{context}");
            assert_eq!(run.stdout.len() as u64, after, "{context}");
            assert!(aoi_test::verify(&run.stdout).summary.is_none(), "{context}");
            assert_eq!(
                count(&db),
                before + u64::from(commits),
                "{context}: committed?"
            );
            assert_intact(&db, &context);
        }
    }
}

#[test]
fn a_machine_mode_run_on_dev_full_exits_74_and_a_write_never_starts() {
    let db = many_documents("dev-full", 1500);
    for args in [
        &["list", "--limit", "1000"][..],
        &["export"],
        &["search", "agents"],
        &["status"],
        &["doctor"],
    ] {
        let Some(run) = to_dev_full(&db, args) else {
            aoi_test::prerequisite::missing("stdout on /dev/full", "/dev/full");
            return;
        };
        assert_stdout_failed(
            &run,
            faultshim::Errno::NoSpace,
            &format!("{args:?} > /dev/full"),
        );
    }
    let before = documents(&db);
    let run = to_dev_full(&db, &["create", "--title", "Never"]).unwrap();
    assert_stdout_failed(&run, faultshim::Errno::NoSpace, "create > /dev/full");
    assert_eq!(
        documents(&db),
        before,
        "create > /dev/full never reached its body"
    );
}

/// Human mode is held to §6 too: a table, a document or `--help` that could not be written
/// is not a success. (A reader that went away, `outline list | head -n 1`, is: see
/// `search_into_head_ends_quietly_in_both_modes`.)
#[test]
fn a_human_mode_run_whose_stdout_fails_does_not_exit_0() {
    let db = many_documents("human-stdout", 200);
    let id = domain(&db.jsonl(&["list", "--limit", "1"]), "entry")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cases: [&[&str]; 9] = [
        &["list"],
        &["search", "agents"],
        &["get", &id],
        // An unbounded command ends at its first line that cannot be written.
        &["watch", "--since", "0"],
        &["status"],
        &["doctor"],
        &["create", "--title", "Made"],
        &["--help"],
        &["--version"],
    ];
    let lib = faultshim::library();
    for args in cases {
        let run = |fault: Option<(&Path, Fault)>| {
            let mut cmd = outline();
            cmd.args(args)
                .arg("--db")
                .arg(db.path())
                .env("XDG_CONFIG_HOME", db.config_dir())
                .stdin(Stdio::null())
                .stderr(Stdio::piped());
            match fault {
                Some((lib, fault)) => {
                    fault.apply(lib, &mut cmd).stdout(Stdio::piped());
                }
                None => {
                    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
                    cmd.stdout(full.expect("/dev/full"));
                }
            }
            let out = cmd.output().unwrap();
            Run {
                code: out.status.code().unwrap_or(-1),
                stdout: out.stdout,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        };
        if Path::new("/dev/full").exists() {
            let context = format!("{args:?} > /dev/full");
            assert_stdout_failed(&run(None), faultshim::Errno::NoSpace, &context);
        }
        if let Ok(lib) = lib {
            let fault = Fault::on_fd(1).errno(faultshim::Errno::Io).after(10);
            let context = format!("{args:?}, stdout failing with EIO after 10 bytes");
            assert_stdout_failed(&run(Some((lib, fault))), faultshim::Errno::Io, &context);
        }
    }
    if let Err(reason) = lib {
        aoi_test::prerequisite::missing("human mode with stdout failing by EIO", reason);
    }
}
