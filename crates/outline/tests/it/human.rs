//! Human mode: what a person sees, as snapshots headed by the exit code.

use crate::support::Db;

#[test]
fn human_list_search_get_and_refusal() {
    let db = Db::new("human");
    let a = db.create(&[
        "--title",
        "Agent operable tools",
        "--body",
        "Tools agents can operate",
        "--tag",
        "work",
        "--tag",
        "cli",
    ]);
    let b = db.create(&[
        "--title",
        "Groceries",
        "--body",
        "milk, eggs",
        "--collection",
        "home",
    ]);
    let ids = [a.as_str(), b.as_str()];
    insta::assert_snapshot!(db.run(&["list"]).transcript(&ids), @r"
    exit: 0
    --- stdout
    ID      COLLECTION  TAGS      UPDATED   TITLE
    ~1____  inbox       work,cli  just now  Agent operable tools
    ~2____  home        -         just now  Groceries
    --- stderr
    ");
    insta::assert_snapshot!(db.run(&["search", "agents"]).transcript(&ids), @r"
    exit: 0
    --- stdout
    #  ID      TITLE                 SNIPPET
    1  ~1____  Agent operable tools  Tools [agents] can operate
    1 match(es)
    --- stderr
    ");
    insta::assert_snapshot!(db.run(&["get", &b]).transcript(&ids), @r"
    exit: 0
    --- stdout
    doc_2_________________________  Groceries
    collection home  tags -  version 1  updated just now

    milk, eggs
    --- stderr
    ");
    insta::assert_snapshot!(db.run(&["delete", &a, &b]).transcript(&ids), @r"
    exit: 77
    --- stdout
    --- stderr
    error: refusing to delete 2 items without --confirm
      hint: re-run with --confirm --confirm-count 2
    ");
    insta::assert_snapshot!(db.run(&["get", "doc_nope"]).transcript(&ids), @r"
    exit: 66
    --- stdout
    --- stderr
    error: no document with id doc_nope
      hint: run `outline list` or `outline search QUERY` to find document ids
    ");
}

/// Runs `outline ARGS --db DB` under `script(1)`, so stdout and stderr are a terminal, and
/// returns everything the terminal received.
fn on_a_terminal(db: &Db, args: &str, env: &[(&str, &str)]) -> String {
    let command = format!(
        "{} --db {} {args}",
        env!("CARGO_BIN_EXE_outline"),
        db.path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) from util-linux runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn colour_only_on_a_terminal_and_never_under_no_color() {
    let db = Db::new("human-colour");
    db.create(&[
        "--title",
        "Agent notes",
        "--body",
        "operable tools for agents",
    ]);

    let tty = on_a_terminal(&db, "list", &[]);
    assert!(tty.contains("\u{1b}[1mID"), "a bold header: {tty:?}");
    let search = on_a_terminal(&db, "search agents", &[]);
    assert!(
        search.contains("\u{1b}[1;33magents\u{1b}[0m"),
        "the match is highlighted: {search:?}"
    );
    let no_color = on_a_terminal(&db, "list", &[("NO_COLOR", "1")]);
    assert!(!no_color.contains('\u{1b}'), "{no_color:?}");
    let flag = on_a_terminal(&db, "list --no-color", &[]);
    assert!(!flag.contains('\u{1b}'), "{flag:?}");
    // NO_COLOR set but empty does not turn colour off (no-color.org); TERM=dumb does.
    let empty = on_a_terminal(&db, "list", &[("NO_COLOR", ""), ("TERM", "xterm")]);
    assert!(empty.contains('\u{1b}'), "{empty:?}");
    let dumb = on_a_terminal(&db, "list", &[("TERM", "dumb")]);
    assert!(!dumb.contains('\u{1b}'), "{dumb:?}");

    let piped = db.run_env(&["search", "agents"], &[("NO_COLOR", "")], None);
    assert!(!piped.stdout_text().contains('\u{1b}'));
    assert!(
        piped.stdout_text().contains("[agents]"),
        "{}",
        piped.stdout_text()
    );
}

#[test]
fn a_human_import_draws_progress_on_a_terminal_and_never_into_a_pipe() {
    let db = Db::new("human-progress");
    let input = db.path().with_file_name("docs.jsonl");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    let records: String = (0..3000)
        .map(|n| format!("{{\"title\":\"doc {n}\",\"body\":\"words {n}\"}}\n"))
        .collect();
    std::fs::write(&input, records).unwrap();

    let tty = on_a_terminal(
        &db,
        &format!("import --input-jsonl {}", input.display()),
        &[],
    );
    assert!(
        tty.contains("importing 0 records"),
        "a progress line: {tty:?}"
    );
    assert!(tty.contains("\r\u{1b}[2K"), "the line is erased: {tty:?}");
    assert!(tty.ends_with("imported 3000 document(s)\r\n"), "{tty:?}");

    let piped = db.run(&["import", "--input-jsonl", &input.display().to_string()]);
    assert_eq!(piped.code, 0);
    assert_eq!(piped.stdout_text(), "imported 3000 document(s)\n");
    assert!(
        piped.stderr.is_empty(),
        "no progress into a pipe: {:?}",
        piped.stderr
    );
}

#[test]
fn human_watch_ends_with_141_and_no_message_when_its_reader_goes_away() {
    let db = Db::new("human-watch-pipe");
    db.create(&["--title", "seed"]);
    let status_file = db.path().with_file_name("status");
    let stderr_file = db.path().with_file_name("stderr");
    let script = format!(
        "{} --db {} watch --since 0 2>{} | head -n 1 >/dev/null; echo ${{PIPESTATUS[0]}} > {}",
        env!("CARGO_BIN_EXE_outline"),
        db.path().display(),
        stderr_file.display(),
        status_file.display()
    );
    let mut pipeline = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("NO_COLOR", "1")
        .spawn()
        .unwrap();
    // Each new change is another line for a reader that is gone; the first write after
    // `head` exits fails.
    let mut done = None;
    for n in 0..300 {
        if let Some(status) = pipeline.try_wait().unwrap() {
            done = Some(status);
            break;
        }
        db.create(&["--title", &format!("change {n}")]);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let Some(status) = done else {
        let _ = pipeline.kill();
        panic!("watch did not notice its reader was gone");
    };
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&status_file).unwrap().trim(), "141");
    assert_eq!(std::fs::read_to_string(&stderr_file).unwrap(), "");
}

#[test]
fn auth_login_prompts_on_a_terminal_without_echoing_the_token() {
    use std::io::{Read, Write};
    let db = Db::new("login-pty");
    let command = format!(
        "{} --db {} auth login",
        env!("CARGO_BIN_EXE_outline"),
        db.path().display()
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("XDG_CONFIG_HOME", db.config_dir())
        .env_remove("OUTLINE_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux runs");
    let mut stdout = child.stdout.take().unwrap();
    // Type the token only once the prompt is up, as a person would.
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("Token for protected outline databases:") {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "no prompt: {:?}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    // The prompt is written just before echo is turned off; a person types later than that.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"typed-canary-token-81\n").unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let transcript = String::from_utf8_lossy(&seen);
    assert!(
        !transcript.contains("typed-canary-token-81"),
        "the token was echoed: {transcript:?}"
    );
    assert!(transcript.contains("token saved to"), "{transcript:?}");
    let saved =
        std::fs::read_to_string(db.config_dir().join("outline").join("credentials")).unwrap();
    assert!(saved.contains("typed-canary-token-81"));
}
