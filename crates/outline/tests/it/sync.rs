//! `outline sync` between two real database files, and the credentials a protected remote
//! asks for (§1.3, §16.3).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{domain, error, plans, summary, Db, Run};

const TOKEN: &str = "canary-token-7f3a9c1e5b";

fn ids(db: &Db) -> Vec<String> {
    let run = db.jsonl(&["list", "--limit", "1000"]);
    let mut ids: Vec<String> = domain(&run, "entry")
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn body(db: &Db, id: &str) -> (String, u64) {
    let run = db.jsonl(&["get", id]);
    let entry = &domain(&run, "entry")[0];
    (
        entry["body"].as_str().unwrap().to_owned(),
        entry["version"].as_u64().unwrap(),
    )
}

fn remote(db: &Db) -> String {
    db.path().display().to_string()
}

/// The `sync` header event of a run.
fn header(run: &Run) -> serde_json::Map<String, serde_json::Value> {
    let headers = domain(run, "sync");
    assert_eq!(headers.len(), 1, "one sync event: {}", run.stdout_text());
    headers[0].clone()
}

fn assert_no_token(run: &Run) {
    assert!(!run.stdout_text().contains(TOKEN), "{}", run.stdout_text());
    assert!(!run.stderr.contains(TOKEN), "{}", run.stderr);
}

#[test]
fn sync_both_ways_copies_missing_documents_with_their_ids_then_has_nothing_to_do() {
    let (a, b) = (Db::new("sync-a"), Db::new("sync-b"));
    a.create(&["--title", "Alpha", "--body", "one", "--tag", "x"]);
    a.create(&["--title", "Beta", "--body", "two", "--collection", "work"]);
    b.create(&["--title", "Gamma", "--body", "three"]);

    let run = a.jsonl(&["sync", &remote(&b)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let h = header(&run);
    assert_eq!(h["direction"], "both");
    assert_eq!(
        (&h["push_create"], &h["pull_create"], &h["unchanged"]),
        (&2.into(), &1.into(), &0.into())
    );
    let synced = domain(&run, "synced");
    assert_eq!(synced.len(), 3);
    assert_eq!(
        summary(&run).count,
        Some(4),
        "the header and three synced events"
    );

    let both = ids(&a);
    assert_eq!(both.len(), 3);
    assert_eq!(both, ids(&b), "the same ids on both sides");
    let beta = &domain(&b.jsonl(&["list", "--collection", "work"]), "entry")[0];
    assert_eq!(beta["title"], "Beta");

    let again = a.jsonl(&["sync", &remote(&b)]);
    let h = header(&again);
    assert_eq!(h["unchanged"], 3);
    assert!(domain(&again, "synced").is_empty());
}

#[test]
fn the_newer_side_wins_and_the_direction_holds_back_the_other_way() {
    let (a, b) = (Db::new("sync-dir-a"), Db::new("sync-dir-b"));
    let id = a.create(&["--title", "Doc", "--body", "v1"]);
    b.create(&["--title", "Remote seed"]);
    assert_eq!(a.jsonl(&["sync", &remote(&b)]).code, 0);
    let (_, remote_version) = body(&b, &id);
    assert_eq!(
        a.jsonl(&["update", &id, "--body", "v2 local"]).code,
        0,
        "update"
    );

    let pull = a.jsonl(&["sync", &remote(&b), "--direction", "pull"]);
    let h = header(&pull);
    assert_eq!((&h["held_back"], &h["pull_update"]), (&1.into(), &0.into()));
    assert_eq!(body(&b, &id).0, "v1", "a pull writes nothing to the remote");

    let push = a.jsonl(&["sync", &remote(&b), "--direction", "push"]);
    assert_eq!(header(&push)["push_update"], 1);
    let synced = &domain(&push, "synced")[0];
    assert_eq!(
        (&synced["to"], &synced["action"]),
        (&"remote".into(), &"update".into())
    );
    let (text, version) = body(&b, &id);
    assert_eq!(text, "v2 local");
    assert_eq!(
        version,
        remote_version + 1,
        "the remote's version rose by one"
    );

    // Now the remote changes last: a two-way sync brings it back.
    b.jsonl(&["update", &id, "--body", "v3 remote"]);
    let both = a.jsonl(&["sync", &remote(&b)]);
    assert_eq!(header(&both)["pull_update"], 1);
    assert_eq!(body(&a, &id).0, "v3 remote");
}

#[test]
fn a_dry_run_states_every_change_as_a_plan_and_writes_nothing() {
    let (a, b) = (Db::new("sync-dry-a"), Db::new("sync-dry-b"));
    a.create(&["--title", "One"]);
    a.create(&["--title", "Two"]);
    b.create(&["--title", "Three"]);
    let run = a.jsonl(&["sync", &remote(&b), "--dry-run"]);
    assert_eq!(run.code, 0);
    assert_eq!(header(&run)["dry_run"], true);
    assert_eq!(plans(&run), 3);
    assert!(domain(&run, "synced").is_empty());
    assert_eq!((ids(&a).len(), ids(&b).len()), (2, 1));

    let human = a.run(&["sync", &remote(&b), "--dry-run"]);
    assert_eq!(human.code, 0);
    let text = human.stdout_text();
    assert!(text.starts_with("sync both with "), "{text}");
    assert!(
        text.contains("push: 2 to create, 0 to update on the remote"),
        "{text}"
    );
    assert!(text.contains("would create doc_"), "{text}");
    assert!(text.ends_with("dry run: nothing was changed\n"), "{text}");
}

#[test]
fn a_missing_remote_is_not_found_and_the_same_database_is_refused() {
    let a = Db::new("sync-missing");
    a.create(&["--title", "One"]);
    let missing = a.jsonl(&["sync", "/nonexistent/outline.db"]);
    assert_eq!(missing.code, 66);
    assert_eq!(error(&missing).code.as_str(), "REMOTE_NOT_FOUND");
    let same = a.jsonl(&["sync", &remote(&a)]);
    assert_eq!(same.code, 65);
    assert_eq!(error(&same).code.as_str(), "SAME_DATABASE");
}

/// Protects `db` with [`TOKEN`], given through the environment.
fn protect(db: &Db) {
    let run = db.run_env(
        &["auth", "protect", "--output", "jsonl"],
        &[("OUTLINE_TOKEN", TOKEN)],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout_text());
    let p = &domain(&run, "protection")[0];
    assert_eq!(
        (&p["protected"], &p["token_source"]),
        (&true.into(), &"env".into())
    );
    assert_no_token(&run);
}

#[test]
fn a_protected_remote_needs_its_token_and_never_prompts_in_machine_mode() {
    let (a, b) = (Db::new("sync-auth-a"), Db::new("sync-auth-b"));
    a.create(&["--title", "Secret plans"]);
    b.create(&["--title", "Remote"]);
    protect(&b);

    // No token anywhere: an authn error naming the way out, nothing written.
    let none = a.jsonl(&["sync", &remote(&b)]);
    assert_eq!(none.code, 77);
    let e = error(&none);
    assert_eq!(
        (e.category.as_str(), e.code.as_str()),
        ("authn", "INTERACTIVE_REQUIRED")
    );
    assert!(!e.retryable);
    assert_eq!(e.hint.as_deref(), Some("outline auth login"));
    assert_eq!(ids(&b).len(), 1);

    // A wrong token is rejected; it is not echoed.
    let wrong = a.run_env(
        &["sync", &remote(&b), "--output", "jsonl"],
        &[("OUTLINE_TOKEN", "canary-token-wrong-0000")],
        None,
    );
    assert_eq!(wrong.code, 77);
    assert_eq!(error(&wrong).code.as_str(), "TOKEN_REJECTED");
    assert!(!wrong.stdout_text().contains("canary-token-wrong-0000"));

    // The right token from the environment works.
    let env = a.run_env(
        &["sync", &remote(&b), "--output", "jsonl"],
        &[("OUTLINE_TOKEN", TOKEN)],
        None,
    );
    assert_eq!(env.code, 0, "{}", env.stdout_text());
    assert_eq!(ids(&b).len(), 2);
    assert_no_token(&env);

    // So does the token `auth login --with-token` saved; human mode says where it went.
    let login = a.run_env(
        &["auth", "login", "--with-token"],
        &[],
        Some(format!("{TOKEN}\n").as_bytes()),
    );
    assert_eq!(login.code, 0, "{}", login.stderr);
    assert!(login.stdout_text().starts_with("token saved to "));
    assert_no_token(&login);
    let file = a.config_dir().join("outline").join("credentials");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "only the owner may read the token");
    }
    a.create(&["--title", "Later"]);
    let saved = a.jsonl(&["sync", &remote(&b), "--direction", "push"]);
    assert_eq!(saved.code, 0, "{}", saved.stdout_text());
    assert_eq!(header(&saved)["push_create"], 1);

    // `auth unprotect` needs the token too; afterwards no token is needed.
    let logout = a.jsonl(&["auth", "logout"]);
    assert_eq!(domain(&logout, "credential")[0]["changed"], true);
    assert!(!file.exists());
    let refused = b.jsonl(&["auth", "unprotect"]);
    assert_eq!(error(&refused).code.as_str(), "INTERACTIVE_REQUIRED");
    let unprotect = b.run_env(
        &["auth", "unprotect", "--output", "jsonl"],
        &[("OUTLINE_TOKEN", TOKEN)],
        None,
    );
    assert_eq!(domain(&unprotect, "protection")[0]["protected"], false);
    assert_eq!(a.jsonl(&["sync", &remote(&b)]).code, 0);
}

/// Runs outline with stdin a pipe that stays open, and returns its output once it exits, or
/// panics if it is still waiting after `limit` (a hang detector, not a timing check).
fn run_with_open_stdin(db: &Db, args: &[&str], limit: Duration) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_outline"))
        .args(args)
        .arg("--db")
        .arg(db.path())
        .env_remove("OUTLINE_TOKEN")
        .env("XDG_CONFIG_HOME", db.config_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("outline {args:?} was still waiting on an open stdin after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

#[test]
fn auth_login_never_waits_on_stdin_in_machine_mode_and_explains_itself_in_human_mode() {
    let db = Db::new("auth-login");
    let machine = run_with_open_stdin(
        &db,
        &["auth", "login", "--output", "jsonl"],
        Duration::from_secs(30),
    );
    assert_eq!(machine.code, 77);
    aoi_test::assert_conforms(&machine.stdout);
    let e = error(&machine);
    assert_eq!(
        (e.category.as_str(), e.code.as_str()),
        ("authn", "INTERACTIVE_REQUIRED")
    );
    assert!(machine.stderr.is_empty(), "{}", machine.stderr);

    // Human mode with no terminal to prompt on: a usage error that names --with-token.
    let human = db.run(&["auth", "login"]);
    assert_eq!(human.code, 64);
    assert!(human.stderr.contains("--with-token"), "{}", human.stderr);

    let status = db.jsonl(&["auth", "status"]);
    assert_eq!(domain(&status, "credential")[0]["source"], "none");
    let env = db.run_env(
        &["auth", "status", "--output", "jsonl"],
        &[("OUTLINE_TOKEN", TOKEN)],
        None,
    );
    assert_eq!(domain(&env, "credential")[0]["source"], "env");
    assert_no_token(&env);

    let blank = db.run_env(&["auth", "login", "--with-token"], &[], Some(b"\n"));
    assert_eq!(
        blank.code, 65,
        "an empty token is refused: {}",
        blank.stderr
    );
    assert!(!db.config_dir().join("outline").join("credentials").exists());
}

#[test]
fn auth_dry_runs_plan_and_change_nothing() {
    let (a, b) = (Db::new("auth-dry-a"), Db::new("auth-dry-b"));
    b.create(&["--title", "Remote"]);
    let file = a.config_dir().join("outline").join("credentials");

    let login = a.run_env(
        &[
            "auth",
            "login",
            "--with-token",
            "--dry-run",
            "--output",
            "jsonl",
        ],
        &[],
        Some(format!("{TOKEN}\n").as_bytes()),
    );
    assert_eq!(
        (login.code, plans(&login)),
        (0, 1),
        "{}",
        login.stdout_text()
    );
    assert!(!file.exists(), "a dry run saves no token");
    assert_no_token(&login);

    let protect = b.run_env(
        &["auth", "protect", "--dry-run", "--output", "jsonl"],
        &[("OUTLINE_TOKEN", TOKEN)],
        None,
    );
    assert_eq!((protect.code, plans(&protect)), (0, 1));
    assert!(domain(&protect, "protection").is_empty());
    assert_eq!(
        a.jsonl(&["sync", &remote(&b)]).code,
        0,
        "the remote is still open to a sync without a token"
    );

    a.run_env(
        &["auth", "login", "--with-token"],
        &[],
        Some(TOKEN.as_bytes()),
    );
    assert!(file.exists());
    let logout = a.run(&["auth", "logout", "--dry-run"]);
    assert_eq!(logout.code, 0);
    assert!(
        logout.stdout_text().contains("would remove"),
        "{}",
        logout.stdout_text()
    );
    assert!(file.exists(), "a dry run removes nothing");
}
