//! `create` and `delete`: audit events, dry runs, idempotency and confirmation.

use crate::support::{domain, error, plans, summary, Db};

#[test]
fn create_emits_created_with_a_stable_id_and_version() {
    let db = Db::new("create");
    let run = db.jsonl(&[
        "create", "--title", "T", "--body", "B", "--tag", "a", "--tag", "b",
    ]);
    assert_eq!(run.code, 0);
    let created = domain(&run, "created");
    assert_eq!(created.len(), 1);
    let id = created[0]["id"].as_str().unwrap();
    assert!(id.starts_with("doc_"), "{id}");
    assert_eq!(created[0]["version"], 1);
    assert_eq!(created[0]["collection"], "inbox");
    let got = db.jsonl(&["get", id]);
    assert_eq!(
        domain(&got, "entry")[0]["tags"],
        serde_json::json!(["a", "b"])
    );

    let body_file = db.path().with_file_name("body.txt");
    std::fs::write(&body_file, "from a file").unwrap();
    let human = db.run(&[
        "create",
        "--title",
        "F",
        "--body-file",
        body_file.to_str().unwrap(),
        "--collection",
        "work",
    ]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let text = human.stdout_text();
    assert!(
        text.starts_with("created doc_") && text.contains("in work"),
        "{text}"
    );
    let listed = db.jsonl(&["list", "--collection", "work"]);
    let id2 = domain(&listed, "entry")[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        domain(&db.jsonl(&["get", &id2]), "entry")[0]["body"],
        "from a file"
    );
}

#[test]
fn create_dry_run_plans_and_writes_nothing() {
    let db = Db::new("create-dry");
    let run = db.jsonl(&["create", "--title", "T", "--dry-run"]);
    assert_eq!(run.code, 0);
    assert_eq!(plans(&run), 1);
    assert!(domain(&run, "created").is_empty());
    assert!(domain(&db.jsonl(&["list"]), "entry").is_empty());
}

#[test]
fn create_with_an_idempotency_key_runs_once() {
    let db = Db::new("create-idem");
    let args = ["create", "--title", "Once", "--idempotency-key", "k1"];
    let first = db.jsonl(&args);
    let second = db.jsonl(&args);
    assert_eq!(
        domain(&first, "created")[0]["id"],
        domain(&second, "created")[0]["id"]
    );
    let props = summary(&second).properties.unwrap_or_default();
    assert_eq!(
        props.get("idempotent_replay"),
        Some(&serde_json::json!(true))
    );
    assert_eq!(domain(&db.jsonl(&["list"]), "entry").len(), 1);

    let reused = db.jsonl(&["create", "--title", "Other", "--idempotency-key", "k1"]);
    assert_eq!(error(&reused).category, aoi::Category::Conflict);
    assert_eq!(domain(&db.jsonl(&["list"]), "entry").len(), 1);
}

#[test]
fn delete_without_confirm_is_denied_and_deletes_nothing() {
    let db = Db::new("delete-deny");
    let id = db.create(&["--title", "Keep me"]);
    let run = db.jsonl(&["delete", &id]);
    assert_eq!(run.code, 77);
    assert_eq!(summary(&run).reason, Some(aoi::Reason::Denied));
    assert_eq!(error(&run).code.as_str(), "CONFIRMATION_REQUIRED");
    assert_eq!(db.jsonl(&["get", &id]).code, 0);

    let human = db.run(&["delete", &id]);
    assert_eq!(human.code, 77);
    assert!(human.stderr.contains("--confirm"), "{}", human.stderr);
    assert_eq!(db.jsonl(&["get", &id]).code, 0);
}

#[test]
fn bulk_delete_needs_the_exact_count() {
    let db = Db::new("delete-bulk");
    let a = db.create(&["--title", "draft one"]);
    let b = db.create(&["--title", "draft two"]);
    let keep = db.create(&["--title", "final"]);
    let wrong = db.jsonl(&[
        "delete",
        "--query",
        "draft",
        "--confirm",
        "--confirm-count",
        "3",
    ]);
    assert_eq!(wrong.code, 77);
    assert_eq!(error(&wrong).code.as_str(), "CONFIRM_COUNT_MISMATCH");
    let missing = db.jsonl(&["delete", "--query", "draft", "--confirm"]);
    assert_eq!(missing.code, 77);
    assert_eq!(domain(&db.jsonl(&["list"]), "entry").len(), 3);

    let dry = db.jsonl(&["delete", "--query", "draft", "--dry-run"]);
    assert_eq!(plans(&dry), 2);
    assert_eq!(domain(&db.jsonl(&["list"]), "entry").len(), 3);

    let run = db.jsonl(&[
        "delete",
        "--query",
        "draft",
        "--confirm",
        "--confirm-count",
        "2",
    ]);
    assert_eq!(run.code, 0);
    let mut deleted: Vec<String> = domain(&run, "deleted")
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    deleted.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(deleted, expected);
    let left = domain(&db.jsonl(&["list"]), "entry");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], keep.as_str());
}

#[test]
fn delete_by_id_in_both_modes_and_unknown_ids_delete_nothing() {
    let db = Db::new("delete-id");
    let a = db.create(&["--title", "A"]);
    let b = db.create(&["--title", "B"]);
    let missing = db.jsonl(&[
        "delete",
        &a,
        "doc_nope",
        "--confirm",
        "--confirm-count",
        "2",
    ]);
    assert_eq!(missing.code, 66);
    assert_eq!(db.jsonl(&["get", &a]).code, 0);

    let run = db.jsonl(&["delete", &a, "--confirm", "--idempotency-key", "d1"]);
    assert_eq!(run.code, 0);
    assert_eq!(domain(&run, "deleted")[0]["id"], a.as_str());
    let again = db.jsonl(&["delete", &a, "--confirm", "--idempotency-key", "d1"]);
    assert_eq!(again.code, 0, "a replay, not a not_found");
    assert_eq!(domain(&again, "deleted")[0]["id"], a.as_str());
    assert_eq!(db.jsonl(&["get", &a]).code, 66);

    let human = db.run(&["delete", &b, "--confirm"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(human.stdout_text().contains(&format!("deleted {b}")));
    assert_eq!(db.jsonl(&["get", &b]).code, 66);
}

#[test]
fn human_dry_run_and_empty_delete_say_what_happened() {
    let db = Db::new("delete-human");
    let id = db.create(&["--title", "Keep"]);
    let dry = db.run(&["delete", &id, "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let text = dry.stdout_text();
    assert!(text.contains(&format!("would delete {id}")), "{text}");
    assert!(text.contains("nothing was changed"), "{text}");
    assert_eq!(db.jsonl(&["get", &id]).code, 0);

    let none = db.run(&["delete", "--query", "absent", "--confirm"]);
    assert_eq!(none.code, 0, "{}", none.stderr);
    assert!(
        none.stdout_text().contains("nothing to delete"),
        "{}",
        none.stdout_text()
    );
    let machine = db.jsonl(&["delete", "--query", "absent", "--confirm"]);
    assert!(domain(&machine, "deleted").is_empty());
    assert!(summary(&machine).ok);
}

#[test]
fn usage_errors_are_streams_in_machine_mode() {
    let db = Db::new("usage");
    let missing_title = db.jsonl(&["create"]);
    assert_eq!(missing_title.code, 64);
    assert_eq!(error(&missing_title).category, aoi::Category::Usage);
    let both_bodies = db.jsonl(&["create", "--title", "t", "--body", "b", "--body-file", "f"]);
    assert_eq!(both_bodies.code, 64);
    let nothing = db.jsonl(&["delete", "--confirm"]);
    assert_eq!(nothing.code, 64);
    assert_eq!(error(&nothing).code.as_str(), "NOTHING_TO_DELETE");
    let zero = db.jsonl(&["list", "--limit", "0"]);
    assert_eq!(zero.code, 64);
}

/// The `aoi:meta.command` of a run's stream.
fn meta_command(run: &crate::support::Run) -> Option<String> {
    aoi_test::events(&run.stdout)
        .into_iter()
        .find_map(|e| match e {
            aoi::read::Event::Meta(m) => Some(m.command),
            _ => None,
        })
        .expect("an aoi:meta")
}

/// §16.1 usage errors in machine mode keep what clap tells a person: its suggestion goes in
/// the error's `hint` (one line, informational only, §1.3), and `aoi:meta.command` names the
/// subcommand the argv named, omitted only when none can be identified (§8.3 `aoi:meta`).
#[test]
fn usage_errors_keep_clap_suggestions_in_the_hint_and_name_their_command_section_16_1() {
    let db = Db::new("usage-hint");
    let typo = db.jsonl(&["search", "--limt", "5", "agents"]);
    assert_eq!(typo.code, 64);
    let e = error(&typo);
    assert_eq!(e.category, aoi::Category::Usage);
    let hint = e.hint.clone().unwrap_or_default();
    assert!(
        hint.contains("'--limit'"),
        "the suggestion is kept: {hint:?}"
    );
    assert!(!hint.contains('\n'), "{hint:?}");
    assert_eq!(meta_command(&typo).as_deref(), Some("search"));

    let nested = db.jsonl(&["auth", "login", "--bogus"]);
    assert_eq!(nested.code, 64);
    assert_eq!(meta_command(&nested).as_deref(), Some("auth login"));

    let discovery = db.jsonl(&["input-schema", "--commnd", "search"]);
    assert_eq!(discovery.code, 64);
    assert!(error(&discovery)
        .hint
        .unwrap_or_default()
        .contains("'--command'"));
    assert_eq!(meta_command(&discovery).as_deref(), Some("input-schema"));

    let missing = db.jsonl(&["search"]);
    assert_eq!(missing.code, 64);
    let e = error(&missing);
    assert!(
        e.message.contains("<QUERY>"),
        "names what is missing: {:?}",
        e.message
    );
    assert_eq!(meta_command(&missing).as_deref(), Some("search"));

    let unknown = db.jsonl(&["serach", "agents"]);
    assert_eq!(unknown.code, 64);
    let hint = error(&unknown).hint.unwrap_or_default();
    assert!(hint.contains("'search'"), "{hint:?}");
    assert_eq!(meta_command(&unknown), None, "no subcommand was named");
}

#[test]
fn update_raises_the_version_and_if_match_refuses_a_stale_one() {
    let db = Db::new("update");
    let id = db.create(&["--title", "Old", "--tag", "a"]);
    let run = db.jsonl(&["update", &id, "--title", "New", "--if-match", "1"]);
    assert_eq!(run.code, 0);
    let updated = domain(&run, "updated");
    assert_eq!(updated[0]["id"], id.as_str());
    assert_eq!(updated[0]["version"], 2);
    let entry = &domain(&db.jsonl(&["get", &id]), "entry")[0];
    assert_eq!(entry["title"], "New");
    assert_eq!(entry["tags"], serde_json::json!(["a"]), "tags kept");

    let stale = db.jsonl(&["update", &id, "--title", "Lost", "--if-match", "1"]);
    assert_eq!(stale.code, 65, "conflict exits 65 (DATA_ERR)");
    assert_eq!(error(&stale).category, aoi::Category::Conflict);
    assert_eq!(domain(&db.jsonl(&["get", &id]), "entry")[0]["title"], "New");

    let dry = db.jsonl(&["update", &id, "--clear-tags", "--dry-run"]);
    assert_eq!(plans(&dry), 1);
    let human = db.run(&["update", &id, "--clear-tags"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(
        human.stdout_text().contains("now version 3"),
        "{}",
        human.stdout_text()
    );
    assert_eq!(
        domain(&db.jsonl(&["get", &id]), "entry")[0]["tags"],
        serde_json::json!([])
    );

    assert_eq!(db.jsonl(&["update", &id]).code, 64, "nothing to change");
    assert_eq!(db.jsonl(&["update", "doc_nope", "--title", "x"]).code, 66);
}

#[test]
fn a_failed_first_write_leaves_no_database_behind_and_reads_create_none() {
    let db = Db::new("no-half-made");
    for args in [
        vec!["list"],
        vec!["search", "anything"],
        vec!["status"],
        vec!["doctor"],
        vec!["export"],
        vec![
            "update",
            "doc_01jzq7x4tq9v6h0zt7k8f2w3c1",
            "--title",
            "x",
            "--dry-run",
        ],
    ] {
        db.jsonl(&args);
        assert!(!db.path().exists(), "{args:?} created the database");
    }
    // A named database that is not there is reported missing, not as an empty store.
    let status = db.jsonl(&["status"]);
    assert_eq!(status.code, 66, "{}", status.stderr);
    assert!(domain(&status, "status").is_empty());

    // A write that fails on a database it had to create removes it again.
    let blank = db.jsonl(&["create", "--title", " "]);
    assert_eq!(blank.code, 65);
    assert!(
        !db.path().exists(),
        "a failed create left a database behind"
    );
    let input = db.path().with_file_name("bad.jsonl");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    std::fs::write(&input, "{\"title\":\"ok\"}\nnot json\n").unwrap();
    let import = db.jsonl(&["import", "--input-jsonl", &input.display().to_string()]);
    assert_ne!(import.code, 0);
    assert!(
        !db.path().exists(),
        "a failed import left a database behind"
    );

    db.create(&["--title", "now it exists"]);
    assert!(db.path().exists());
    assert_eq!(domain(&db.jsonl(&["status"]), "status")[0]["exists"], true);
}
