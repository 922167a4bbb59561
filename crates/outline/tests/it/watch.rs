//! `watch`: an unbounded stream of changes, ended by SIGINT/SIGTERM with a cancelled summary.

use std::io::BufReader;
use std::process::{Child, Command, Stdio};

use aoi_test::{read_until, signal};

use crate::support::Db;

fn spawn_watch(db: &Db, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_outline"))
        .arg("watch")
        .args(args)
        .arg("--db")
        .arg(db.path())
        .env_remove("OUTLINE_DB")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("outline watch starts")
}

/// Signals the watcher, reads the rest of its stream and checks it ends cancelled.
fn cancel(
    child: Child,
    mut stdout: BufReader<std::process::ChildStdout>,
    seen: String,
    sig: &str,
    exit: i32,
) -> String {
    aoi_test::assert_cancelled(child, &mut stdout, seen, sig, exit).0
}

#[test]
fn watch_streams_a_change_from_another_process_and_sigint_ends_it_cancelled_with_130() {
    let db = Db::new("watch");
    db.create(&["--title", "before the watch"]);
    let mut child = spawn_watch(&db, &["--interval-ms", "50", "--output", "jsonl"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = read_until(&mut stdout, &["aoi:heartbeat"]);
    assert!(seen.contains("\"interval_ms\":50"), "{seen}");
    let id = db.create(&["--title", "during the watch"]);
    seen.push_str(&read_until(&mut stdout, &["\"changed\"", &id]));
    let all = cancel(child, stdout, seen, "INT", 130);
    assert!(all.contains("\"kind\":\"created\""), "{all}");
    assert_eq!(
        all.matches("\"type\":\"changed\"").count(),
        1,
        "only changes from now on: {all}"
    );
    assert!(all.contains("\"signal\":\"SIGINT\""), "{all}");
    let file = db.path().with_file_name("watch.jsonl");
    std::fs::write(&file, &all).unwrap();
    let verdict = Command::new(aoi_test::workspace_bin("aoi"))
        .args(["verify", "--schema-from", env!("CARGO_BIN_EXE_outline")])
        .arg(&file)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&verdict.stdout);
    assert!(
        report.contains("✓ conforming AOI stream") && !report.contains("violat"),
        "aoi verify said {:?}\n{report}",
        verdict.status.code()
    );
}

#[test]
fn watch_since_replays_the_log_and_sigterm_ends_it_with_143() {
    let db = Db::new("watch-since");
    let id = db.create(&["--title", "T", "--collection", "work"]);
    assert_eq!(db.jsonl(&["move", &id, "--to", "archive"]).code, 0);
    let mut child = spawn_watch(
        &db,
        &["--since", "0", "--interval-ms", "50", "--output", "jsonl"],
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let seen = read_until(&mut stdout, &["\"kind\":\"moved\""]);
    assert!(seen.contains("\"kind\":\"created\""), "{seen}");
    assert!(seen.contains("\"from\":\"work\""), "{seen}");
    cancel(child, stdout, seen, "TERM", 143);
}

#[test]
fn watch_in_human_mode_prints_a_line_per_change() {
    let db = Db::new("watch-human");
    db.create(&["--title", "seed"]);
    // `--since 1` (after the seed's change) so the test does not race the watcher's start.
    let mut child = spawn_watch(&db, &["--interval-ms", "50", "--since", "1"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let id = db.create(&["--title", "new"]);
    let seen = read_until(&mut stdout, &["created", &id]);
    assert!(!seen.contains('{'), "no JSON in human mode: {seen}");
    assert_eq!(
        seen.lines().count(),
        1,
        "only the change after --since: {seen}"
    );
    signal(&child, "INT");
    let status = child.wait().unwrap();
    assert!(!status.success());
}

#[test]
fn capabilities_mark_watch_unbounded_and_the_schema_has_the_change_events() {
    let db = Db::new("watch-caps");
    let caps = db.run(&["capabilities", "--output", "json"]);
    assert_eq!(caps.code, 0, "{}", caps.stderr);
    let caps: serde_json::Value = serde_json::from_slice(&caps.stdout).unwrap();
    let watch = caps["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "watch")
        .expect("watch in capabilities");
    assert_eq!(watch["unbounded"], true);
    assert_eq!(watch["bounded"], false);
    let schema = db.run(&["schema", "--output", "json"]).stdout_text();
    for ty in ["moved", "copied", "changed"] {
        assert!(schema.contains(&format!("\"{ty}\"")), "{ty}: {schema}");
    }
}
