//! `move` and `copy`: audit events, dry runs, not found and stale `--if-match`.

use crate::support::{domain, error, plans, Db};

#[test]
fn move_emits_moved_and_changes_the_collection_and_title() {
    let db = Db::new("move");
    let id = db.create(&["--title", "Draft", "--collection", "work"]);
    let run = db.jsonl(&[
        "move",
        &id,
        "--to",
        "archive",
        "--title",
        "Final",
        "--if-match",
        "1",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let moved = domain(&run, "moved");
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0]["id"], id.as_str());
    assert_eq!(moved[0]["from"], "work");
    assert_eq!(moved[0]["to"], "archive");
    assert_eq!(moved[0]["title"], "Final");
    assert_eq!(moved[0]["version"], 2);
    let got = &domain(&db.jsonl(&["get", &id]), "entry")[0];
    assert_eq!(got["collection"], "archive");
    assert_eq!(got["title"], "Final");

    let human = db.run(&["move", &id, "--to", "inbox"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let text = human.stdout_text();
    assert!(
        text.starts_with("moved doc_") && text.contains("from archive to inbox"),
        "{text}"
    );
}

#[test]
fn move_dry_run_plans_and_changes_nothing() {
    let db = Db::new("move-dry");
    let id = db.create(&["--title", "T"]);
    let run = db.jsonl(&["move", &id, "--to", "archive", "--dry-run"]);
    assert_eq!(run.code, 0);
    assert_eq!(plans(&run), 1);
    assert!(domain(&run, "moved").is_empty());
    let got = &domain(&db.jsonl(&["get", &id]), "entry")[0];
    assert_eq!(got["collection"], "inbox");
    assert_eq!(got["version"], 1);
    let human = db.run(&["move", &id, "--to", "archive", "--dry-run"]);
    assert_eq!(human.code, 0);
    assert!(human.stdout_text().contains("dry run"));
}

#[test]
fn move_of_an_unknown_id_is_not_found_and_a_stale_if_match_is_a_conflict() {
    let db = Db::new("move-errors");
    let missing = db.jsonl(&["move", "doc_nope", "--to", "archive"]);
    assert_eq!(missing.code, 66);
    assert_eq!(error(&missing).category, aoi::Category::NotFound);
    assert_eq!(db.run(&["move", "doc_nope", "--to", "archive"]).code, 66);

    let id = db.create(&["--title", "T"]);
    let stale = db.jsonl(&["move", &id, "--to", "archive", "--if-match", "7"]);
    assert_ne!(stale.code, 0);
    assert_eq!(error(&stale).category, aoi::Category::Conflict);
    let human = db.run(&["move", &id, "--to", "archive", "--if-match", "7"]);
    assert_eq!(human.code, stale.code);
    assert_eq!(
        domain(&db.jsonl(&["get", &id]), "entry")[0]["collection"],
        "inbox"
    );
}

#[test]
fn copy_emits_copied_with_a_new_id_and_the_source_id() {
    let db = Db::new("copy");
    let id = db.create(&["--title", "Template", "--body", "B", "--collection", "work"]);
    let run = db.jsonl(&["copy", &id, "--to", "templates"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let copied = domain(&run, "copied");
    assert_eq!(copied.len(), 1);
    let new_id = copied[0]["id"].as_str().unwrap().to_owned();
    assert!(new_id.starts_with("doc_") && new_id != id, "{new_id}");
    assert_eq!(copied[0]["source_id"], id.as_str());
    assert_eq!(copied[0]["collection"], "templates");
    let got = &domain(&db.jsonl(&["get", &new_id]), "entry")[0];
    assert_eq!(got["body"], "B");
    assert_eq!(got["collection"], "templates");

    let same = db.jsonl(&["copy", &id]);
    assert_eq!(domain(&same, "copied")[0]["collection"], "work");
    let human = db.run(&["copy", &id]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(human.stdout_text().starts_with("copied doc_"));
    assert_eq!(domain(&db.jsonl(&["list"]), "entry").len(), 4);
}

#[test]
fn copy_dry_run_writes_nothing_and_unknown_ids_are_not_found() {
    let db = Db::new("copy-dry");
    let id = db.create(&["--title", "T"]);
    let run = db.jsonl(&["copy", &id, "--dry-run"]);
    assert_eq!(run.code, 0);
    assert_eq!(plans(&run), 1);
    assert!(domain(&run, "copied").is_empty());
    assert_eq!(domain(&db.jsonl(&["list"]), "entry").len(), 1);
    assert_eq!(db.jsonl(&["copy", "doc_nope"]).code, 66);
    assert_eq!(db.run(&["copy", "doc_nope"]).code, 66);
}
