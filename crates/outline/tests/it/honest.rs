//! No success that was not earned, hints that run, and a terminal that shows data without
//! obeying it: a named database that is not there, directories made only when asked, a file
//! that may only be read, `--max-bytes` pages that always resume, cursors bound to their
//! database, `more:` hints executed as printed, control characters in a body, and tables fitted
//! to an 80-column terminal by display width (CJK included).

use std::process::Command;

use crate::support::{domain, error, hide_ids, summary, Db};

/// `outline --db DB ARGS` under a pseudo-terminal of `columns` columns
/// ([`aoi_test::on_terminal`]), its output with the terminal's line endings undone.
fn on_terminal(db: &Db, args: &[&str], columns: u16) -> String {
    let path = db.path().display().to_string();
    let columns = columns.to_string();
    let mut argv = vec!["--db", path.as_str()];
    argv.extend_from_slice(args);
    let (_, text) = aoi_test::on_terminal(
        std::path::Path::new(env!("CARGO_BIN_EXE_outline")),
        &argv,
        &[("COLUMNS", columns.as_str()), ("NO_COLOR", "1")],
        &std::env::temp_dir(),
    )
    .expect("util-linux script runs");
    text
}

#[test]
fn a_write_makes_the_database_but_not_its_missing_directories_unless_asked() {
    let db = Db::new("dirs");
    let deep = db.path().with_file_name("a").join("b").join("x.db");
    let create = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_outline"))
            .args(["create", "--title", "t", "--output", "jsonl", "--db"])
            .arg(&deep)
            .args(extra)
            .env_remove("OUTLINE_DB")
            .output()
            .unwrap();
        aoi_test::assert_conforms(&out.stdout);
        crate::support::Run {
            code: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let run = create(&[]);
    assert_eq!(run.code, 66, "{}", run.stderr);
    assert_eq!(error(&run).code.as_str(), "DATABASE_DIRECTORY_NOT_FOUND");
    assert!(!deep.parent().unwrap().exists(), "nothing was made");

    let run = create(&["--create-dirs"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(deep.exists());
    let _ = db;
}

#[test]
fn a_database_the_user_may_only_read_is_read() {
    let db = Db::new("read-only");
    db.create(&["--title", "readable", "--body", "rollback notes"]);
    let path = db.path();
    // Owned by root, readable by all; `nobody` may read it and not write it or its directory.
    for p in [
        path.parent().unwrap().parent().unwrap(),
        path.parent().unwrap(),
    ] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_outline"))
            .args(args)
            .arg("--db")
            .arg(&path)
            .args(["--output", "jsonl"])
            .env_remove("OUTLINE_DB")
            .env("HOME", "/nonexistent")
            .output()
            .expect("setpriv runs")
    };
    let probe = as_nobody(&["status"]);
    if String::from_utf8_lossy(&probe.stderr).contains("setpriv:") {
        // Not root, or no CAP_SETUID here: the permission model cannot be shown.
        aoi_test::prerequisite::missing(
            "a database the user may only read",
            "setpriv changing to user nobody (root, or CAP_SETUID)",
        );
        return;
    }
    for args in [
        &["list"][..],
        &["search", "rollback"],
        &["status"],
        &["export"],
    ] {
        let out = as_nobody(args);
        aoi_test::assert_conforms(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let listed = as_nobody(&["list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("readable"));
    let write = as_nobody(&["create", "--title", "x"]);
    assert_ne!(write.status.code(), Some(0), "a write is refused");
}

#[test]
fn max_bytes_below_one_result_still_shows_one_and_its_cursor_goes_on() {
    let db = Db::new("max-bytes-1");
    for i in 0..3 {
        db.create(&["--title", &format!("note {i}"), "--body", "deploy steps"]);
    }
    for command in [&["list"][..], &["search", "deploy"]] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..5 {
            let mut args = command.to_vec();
            args.extend(["--max-bytes", "1"]);
            if let Some(c) = &cursor {
                args.extend(["--cursor", c]);
            }
            let run = db.jsonl(&args);
            assert_eq!(run.code, 0, "{}", run.stderr);
            let kind = if command[0] == "list" { "entry" } else { "hit" };
            let page = domain(&run, kind);
            assert_eq!(page.len(), 1, "{command:?}: one result per page");
            seen.push(page[0]["id"].as_str().unwrap().to_owned());
            let s = summary(&run);
            cursor = s.next_cursor.clone();
            if cursor.is_none() {
                assert_eq!(s.truncated, Some(false));
                break;
            }
            assert_eq!(s.truncated, Some(true));
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 3, "{command:?}: every document once");
    }
}

#[test]
fn a_cursor_from_another_database_is_refused() {
    let a = Db::new("cursor-a");
    let b = Db::new("cursor-b");
    for db in [&a, &b] {
        for i in 0..3 {
            db.create(&["--title", &format!("n{i}")]);
        }
    }
    let first = a.jsonl(&["list", "--limit", "1"]);
    let cursor = summary(&first).next_cursor.unwrap();
    let run = b.jsonl(&["list", "--limit", "1", "--cursor", &cursor]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_eq!(error(&run).code.as_str(), "CURSOR_MISMATCH");
}

#[test]
fn every_more_hint_runs_as_printed_and_shows_the_next_page() {
    let db = Db::new("hints");
    for i in 0..5 {
        db.create(&[
            "--title",
            &format!("deploy note {i}"),
            "--collection",
            "runbooks",
            "--tag",
            "ops",
        ]);
    }
    db.create(&["--title", "deploy elsewhere"]);
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_outline"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for first in [
        vec![
            "list",
            "--collection",
            "runbooks",
            "--tag",
            "ops",
            "--limit",
            "2",
        ],
        vec![
            "search",
            "deploy note",
            "--collection",
            "runbooks",
            "--limit",
            "2",
        ],
        vec!["list", "--limit", "10", "--max-bytes", "100"],
    ] {
        let mut run = db.run(&first);
        let mut pages = 1;
        loop {
            assert_eq!(run.code, 0, "{first:?}: {}", run.stderr);
            let text = run.stdout_text();
            let Some(hint) = text.lines().find_map(|l| l.strip_prefix("more: ")) else {
                break;
            };
            assert!(hint.contains("--db"), "the hint names the database: {hint}");
            // Pasted into a shell, as a person would.
            let out = Command::new("bash")
                .args(["-c", hint])
                .env("PATH", &path)
                .env_remove("OUTLINE_DB")
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            run = crate::support::Run {
                code: out.status.code().unwrap_or(-1),
                stdout: out.stdout,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            };
            pages += 1;
            assert!(pages < 10, "{first:?}: the hints never end");
        }
        assert!(pages >= 2, "{first:?}: a hint was printed and followed");
    }
}

#[test]
fn a_body_with_terminal_escapes_is_shown_escaped_and_tables_fit_80_columns() {
    let db = Db::new("terminal");
    let evil = db.create(&[
        "--title",
        "escape test",
        "--body",
        "first\n\u{1b}]0;pwned\u{7}\u{1b}[31mred\u{9b}2J rollback\n\tindented",
    ]);
    let cjk = db.create(&[
        "--title",
        "漢字のタイトルと長い説明がここに続きます漢字のタイトルと長い説明がここに続きます",
        "--body",
        "rollback 漢字",
    ]);
    let long = db.create(&["--title", &"long".repeat(750), "--body", "rollback"]);
    let ids = [evil.as_str(), cjk.as_str(), long.as_str()];
    let got = db.run(&["get", &evil]);
    assert!(!got.stdout.contains(&0x1b), "no ESC reaches the terminal");
    insta::assert_snapshot!(got.transcript(&ids), @r"
    exit: 0
    --- stdout
    doc_1_________________________  escape test
    collection inbox  tags -  version 1  updated just now

    first
    \u{1b}]0;pwned\u{7}\u{1b}[31mred\u{9b}2J rollback
    	indented
    --- stderr
    ");
    let piped = db.run(&["search", "rollback"]);
    assert!(!piped.stdout.contains(&0x1b));
    let listed = on_terminal(&db, &["list"], 80);
    for line in listed.lines() {
        assert!(
            aoi::surface::term::width(line) <= 80,
            "{} columns: {line}",
            aoi::surface::term::width(line)
        );
    }
    insta::assert_snapshot!(hide_ids(&listed, &ids), @r"
    ID      COLLECTION  TAGS  UPDATED   TITLE
    ~1____  inbox       -     just now  escape test
    ~2____  inbox       -     just now  漢字のタイトルと長い説明がここに続きます漢…
    ~3____  inbox       -     just now  longlonglonglonglonglonglonglonglonglonglon…
    ");
    let searched = hide_ids(&on_terminal(&db, &["search", "rollback"], 80), &ids);
    for line in searched.lines() {
        assert!(aoi::surface::term::width(line) <= 80, "{line}");
    }
    insta::assert_snapshot!(searched, @r"
    #  ID      TITLE                              SNIPPET
    1  ~3____  longlonglonglonglonglonglonglong…  [rollback]
    2  ~2____  漢字のタイトルと長い説明がここに…  [rollback] 漢字
    3  ~1____  escape test                        first \u{1b}]0;pwned\u{7}\u{1b}[…
    3 match(es)
    ");
}

/// Bidi controls (Trojan Source, CVE-2021-42574) and C1 controls in a title or a body are
/// data: `get`, `list` and `search` show them escaped, never for the terminal to act on.
#[test]
fn bidi_and_c1_controls_in_titles_and_bodies_are_shown_escaped() {
    let db = Db::new("bidi");
    let id = db.create(&[
        "--title",
        "invoice\u{202e}fdp.exe \u{2066}iso\u{2069} \u{200f}rlm",
        "--body",
        "pay \u{85}now\u{9b}2J \u{202e}reversed\u{202c} rollback",
    ]);
    let hostile = [
        '\u{85}', '\u{9b}', '\u{200f}', '\u{202c}', '\u{202e}', '\u{2066}', '\u{2069}',
    ];
    for args in [
        &["get", id.as_str()][..],
        &["list"],
        &["search", "rollback"],
    ] {
        let out = db.run(args);
        let text = String::from_utf8_lossy(&out.stdout);
        for c in hostile {
            assert!(
                !text.contains(c),
                "{args:?}: {c:?} reached the terminal:\n{text}"
            );
        }
        assert!(text.contains("\\u{202e}"), "{args:?}: {text}");
    }
    let shown = on_terminal(&db, &["get", &id], 80);
    for c in hostile {
        assert!(!shown.contains(c), "on a terminal: {c:?}:\n{shown}");
    }
}

#[test]
fn completions_and_man_pages_come_from_the_same_definition() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_outline"))
            .args(args)
            .output()
            .unwrap()
    };
    let bash = run(&["completions", "bash"]);
    assert!(bash.status.success());
    let script = String::from_utf8_lossy(&bash.stdout);
    assert!(
        script.contains("_outline()") && script.contains("--max-bytes"),
        "{script}"
    );
    let zsh = run(&["completions", "zsh"]);
    assert!(String::from_utf8_lossy(&zsh.stdout).starts_with("#compdef outline"));
    let page = run(&["man", "auth", "login"]);
    assert!(page.status.success());
    let roff = String::from_utf8_lossy(&page.stdout);
    assert!(roff.contains(".TH outline-auth-login"), "{roff}");
    let unknown = run(&["man", "nope"]);
    assert_eq!(unknown.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("search"));
    // Neither is a Machine Mode command: capabilities does not list them.
    let caps = run(&["capabilities", "--output", "json"]);
    let names: Vec<String> = serde_json::from_slice::<serde_json::Value>(&caps.stdout).unwrap()
        ["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n == "completions" || n == "man"),
        "{names:?}"
    );
}
