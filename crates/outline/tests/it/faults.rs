//! Faults: an import killed with SIGKILL, two processes racing to update one document, a
//! reader that closes the pipe early, and secrets in the environment and on the command line.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use aoi::read::Event;
use aoi::Category;

use crate::support::{domain, error, summary, Db};

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
