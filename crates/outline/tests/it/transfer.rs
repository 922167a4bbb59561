//! `import` and `export`: fail-fast and continue-on-error imports, and copying a database.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::support::{domain, error, plans, summary, Db, Run};

/// Runs `outline ARGS --db <db> --output jsonl` with `stdin` piped in.
fn jsonl_with_stdin(db: &Db, args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_outline"))
        .args(args)
        .arg("--db")
        .arg(db.path())
        .args(["--output", "jsonl"])
        .env_remove("OUTLINE_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    aoi_test::assert_conforms(&out.stdout);
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn write_input(db: &Db, text: &str) -> String {
    let path = db.path().with_file_name("input.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The documents in `db`: none when it does not exist (a failed first write leaves none).
fn count(db: &Db) -> u64 {
    if !db.path().exists() {
        return 0;
    }
    let run = db.jsonl(&["status"]);
    domain(&run, "status")[0]["documents"].as_u64().unwrap()
}

const GOOD_AND_BAD: &str = "{\"title\":\"One\",\"body\":\"first\",\"tags\":[\"a\"]}\n\
                            {\"title\":3}\n\
                            {\"title\":\"Three\",\"collection\":\"work\"}\n";

#[test]
fn fail_fast_import_writes_nothing_and_names_the_line() {
    let db = Db::new("import-ff");
    let input = write_input(&db, GOOD_AND_BAD);
    let run = db.jsonl(&["import", "--input-jsonl", &input]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    let e = error(&run);
    assert_eq!(e.category, aoi::Category::Validation);
    assert_eq!(e.line_number, Some(2));
    assert!(e.message.contains("line 2"), "{}", e.message);
    assert!(domain(&run, "created").is_empty());
    assert!(!summary(&run).ok);
    assert_eq!(count(&db), 0);

    let human = db.run(&["import", "--input-jsonl", &input]);
    assert_ne!(human.code, 0);
    assert!(human.stderr.contains("line 2"), "{}", human.stderr);
    assert_eq!(count(&db), 0);
}

#[test]
fn continue_on_error_imports_the_good_records_and_is_partial() {
    let db = Db::new("import-coe");
    let input = write_input(&db, GOOD_AND_BAD);
    let run = db.jsonl(&["import", "--input-jsonl", &input, "--continue-on-error"]);
    // §19.4: a bad line fails the run, which is partial because the good records were written.
    assert_eq!(run.code, 1, "{}", run.stderr);
    let created = domain(&run, "created");
    let titles: Vec<&str> = created
        .iter()
        .map(|c| c["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["One", "Three"]);
    let s = summary(&run);
    assert!(!s.ok);
    assert_eq!(s.reason, Some(aoi::wire::Reason::Failed));
    assert_eq!(s.partial, Some(true));
    let e = error(&run);
    assert_eq!(e.scope, aoi::Scope::Item);
    assert_eq!(e.line_number, Some(2));
    assert_eq!(count(&db), 2);

    // The created ids are real, stable documents.
    let id = created[0]["id"].as_str().unwrap();
    let got = db.jsonl(&["get", id]);
    assert_eq!(domain(&got, "entry")[0]["body"], "first");

    let human = db.run(&["import", "--input-jsonl", &input, "--continue-on-error"]);
    assert_eq!(human.code, 1, "{}", human.stderr);
    assert!(human.stdout_text().contains("imported 2 document(s)"));
    assert!(human.stderr.contains("line 2"), "{}", human.stderr);
    assert_eq!(count(&db), 4);
}

#[test]
fn a_duplicate_id_fails_a_fail_fast_import_entirely() {
    let db = Db::new("import-dup");
    let id = db.create(&["--title", "Existing"]);
    let input = write_input(
        &db,
        &format!("{{\"title\":\"New\"}}\n{{\"title\":\"Clash\",\"id\":\"{id}\"}}\n"),
    );
    let run = db.jsonl(&["import", "--input-jsonl", &input]);
    assert_ne!(run.code, 0);
    let e = error(&run);
    assert_eq!(e.line_number, Some(2));
    assert_eq!(e.category, aoi::Category::Conflict);
    assert_eq!(count(&db), 1);

    let run = db.jsonl(&["import", "--input-jsonl", &input, "--continue-on-error"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(domain(&run, "created").len(), 1);
    assert!(!summary(&run).ok);
    assert_eq!(summary(&run).partial, Some(true));
    assert_eq!(count(&db), 2);
}

#[test]
fn import_dry_run_plans_and_writes_nothing() {
    let db = Db::new("import-dry");
    let input = write_input(&db, "{\"title\":\"A\"}\n{\"title\":\"B\"}\n");
    let run = db.jsonl(&["import", "--input-jsonl", &input, "--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(plans(&run), 2);
    assert!(domain(&run, "created").is_empty());
    assert_eq!(count(&db), 0);

    let human = db.run(&["import", "--input-jsonl", &input, "--dry-run"]);
    assert!(
        human.stdout_text().contains("would import 2"),
        "{}",
        human.stdout_text()
    );
    assert_eq!(count(&db), 0);
}

#[test]
fn import_idempotency_key_replays_without_doubling() {
    let db = Db::new("import-idem");
    let input = write_input(&db, "{\"title\":\"A\"}\n{\"title\":\"B\"}\n");
    let args = ["import", "--input-jsonl", &input, "--idempotency-key", "k1"];
    let first = db.jsonl(&args);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second = db.jsonl(&args);
    assert_eq!(second.code, 0, "{}", second.stderr);
    let ids = |run: &Run| -> Vec<String> {
        domain(run, "created")
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&first).len(), 2);
    assert_eq!(ids(&first), ids(&second));
    assert_eq!(count(&db), 2);

    let human = db.run(&args);
    assert_eq!(human.code, 0);
    assert_eq!(
        human.stdout_text(),
        "already imported under this idempotency key (2 document(s)); nothing changed\n"
    );
    assert_eq!(count(&db), 2);
}

#[test]
fn export_piped_into_import_copies_a_database() {
    let a = Db::new("export-a");
    a.create(&[
        "--title",
        "Alpha",
        "--body",
        "first body",
        "--tag",
        "x",
        "--tag",
        "y",
    ]);
    a.create(&["--title", "Beta", "--body", "héllo", "--collection", "work"]);
    a.create(&["--title", "Gamma"]);
    let export = a.jsonl(&["export"]);
    assert_eq!(export.code, 0, "{}", export.stderr);
    let exported = domain(&export, "entry");
    assert_eq!(exported.len(), 3);
    assert_eq!(exported[0]["body"], "first body");

    let b = Db::new("export-b");
    let import = jsonl_with_stdin(&b, &["import", "--input-jsonl", "-"], &export.stdout);
    assert_eq!(import.code, 0, "{}", import.stderr);
    assert_eq!(domain(&import, "created").len(), 3);

    let copied = domain(&b.jsonl(&["export"]), "entry");
    assert_eq!(copied.len(), 3);
    for (x, y) in exported.iter().zip(&copied) {
        for field in [
            "id",
            "title",
            "body",
            "tags",
            "collection",
            "created_at",
            "updated_at",
        ] {
            assert_eq!(x[field], y[field], "{field}");
        }
    }

    let work = domain(&a.jsonl(&["export", "--collection", "work"]), "entry");
    assert_eq!(work.len(), 1);
    assert_eq!(work[0]["title"], "Beta");
    let tagged = domain(&a.jsonl(&["export", "--tag", "y"]), "entry");
    assert_eq!(tagged.len(), 1);
    assert_eq!(tagged[0]["title"], "Alpha");

    // Without --output, to a pipe or a file: import records, not a table (`export > backup`).
    let human = a.run(&["export"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let records: Vec<serde_json::Value> = human
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON record per line"))
        .collect();
    assert_eq!(records.len(), 3);
    assert!(records
        .iter()
        .any(|r| r["title"] == "Alpha" && r["body"].is_string()));
    let c = Db::new("export-records");
    let backup = write_input(&c, &human.stdout_text());
    let restored = c.jsonl(&["import", "--input-jsonl", &backup]);
    assert_eq!(restored.code, 0, "{}", restored.stderr);
    assert_eq!(count(&c), 3, "the backup imports back whole");
}

#[test]
fn a_cut_upstream_stream_imports_nothing() {
    let a = Db::new("cut-a");
    a.create(&["--title", "Alpha"]);
    a.create(&["--title", "Beta"]);
    let export = a.jsonl(&["export"]);
    // Drop the summary line: the upstream ended without saying it finished.
    let text = export.stdout_text();
    let cut: String = text
        .lines()
        .filter(|l| !l.contains("\"aoi:summary\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let b = Db::new("cut-b");
    let run = jsonl_with_stdin(&b, &["import", "--input-jsonl", "-"], cut.as_bytes());
    assert_ne!(run.code, 0, "{}", run.stdout_text());
    assert!(!summary(&run).ok);
    assert!(domain(&run, "created").is_empty());
    assert_eq!(count(&b), 0);
}

/// The record schema `input-schema --command import` publishes, as a validator.
fn published_record_validator(db: &Db) -> aoi::discover::schema::EventValidator {
    let run = db.run(&["input-schema", "--command", "import", "--output", "jsonl"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let input: Value = serde_json::from_slice(&run.stdout).unwrap();
    let caps = db.run(&["capabilities", "--output", "jsonl"]);
    let caps: Value = serde_json::from_slice(&caps.stdout).unwrap();
    let embedded = caps["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "import")
        .map(|c| c["input_schema"].clone());
    assert_eq!(
        embedded,
        Some(input.clone()),
        "capabilities embeds the same"
    );
    assert!(input["$defs"]["record"].is_object(), "{input}");
    let record = json!({
        "$schema": input["$schema"],
        "$defs": input["$defs"],
        "$ref": "#/$defs/record",
    });
    aoi::discover::schema::EventValidator::new(&record).expect("the record schema compiles")
}

/// The line numbers of the item errors of a continue-on-error import, in order (a record the
/// store refuses is reported after the records refused before it reached the store).
fn refused_lines(run: &Run) -> Vec<u64> {
    let mut lines: Vec<u64> = aoi_test::events(&run.stdout)
        .into_iter()
        .filter_map(|e| match e {
            aoi::read::Event::Error(e) => e.line_number,
            _ => None,
        })
        .collect();
    lines.sort_unstable();
    lines
}

#[test]
fn the_published_record_schema_takes_what_import_takes_and_refuses_what_it_refuses() {
    let db = Db::new("import-record-schema");
    let schema = published_record_validator(&db);
    let long_tag = "t".repeat(64);
    let long_collection = "c".repeat(128);
    let accepted = [
        json!({"title": "Plain"}),
        json!({"title": " padded title ", "body": null, "tags": null, "collection": null}),
        json!({"title": "Full", "body": "text", "tags": ["a", "a", "ünï"], "collection": "work",
            "id": "doc_01arz3ndektsv4rrffq69g5fav", "created_at": 1, "updated_at": 2,
            "version": 3, "body_bytes": 4, "body_truncated": false}),
        json!({"title": "Upper-case id", "id": "doc_7ZZZZZZZZZZZZZZZZZZZZZZZZZ"}),
        json!({"type": "entry", "title": "From an export"}),
        json!({"type": null, "title": "Null type"}),
        json!({"title": "\u{feff}not whitespace", "tags": ["a\u{feff}b"], "collection": "x\u{ad}y"}),
        json!({"title": "a\u{2028}b", "tags": [long_tag], "collection": long_collection}),
        json!({"title": "Before the epoch", "created_at": -5, "tags": []}),
    ];
    // Refused for their shape: by the schema, and by outline.
    let refused = [
        json!({}),
        json!({"title": 3}),
        json!({"title": null}),
        json!({"title": ""}),
        json!({"title": " \u{3000}\u{a0}"}),
        json!({"title": "two\nlines"}),
        json!({"title": "a\u{85}"}),
        json!({"title": "ok", "unknown": 1}),
        json!({"title": "ok", "aoi": {"seq": 0}}),
        json!({"type": "hit", "title": "ok"}),
        json!({"type": 5, "title": "ok"}),
        json!({"title": "ok", "body": 5}),
        json!({"title": "ok", "tags": "a"}),
        json!({"title": "ok", "tags": [1]}),
        json!({"title": "ok", "tags": [""]}),
        json!({"title": "ok", "tags": ["two words"]}),
        json!({"title": "ok", "tags": ["a\u{a0}b"]}),
        json!({"title": "ok", "tags": ["a\n"]}),
        json!({"title": "ok", "tags": ["t".repeat(65)]}),
        json!({"title": "ok", "collection": ""}),
        json!({"title": "ok", "collection": " work"}),
        json!({"title": "ok", "collection": "work\u{2003}"}),
        json!({"title": "ok", "collection": "a\u{0}b"}),
        json!({"title": "ok", "collection": "c".repeat(129)}),
        json!({"title": "ok", "id": "doc_123"}),
        json!({"title": "ok", "id": "doc_8zzzzzzzzzzzzzzzzzzzzzzzzz"}),
        json!({"title": "ok", "id": "doc_01arz3ndektsv4rrffq69g5fai"}),
        json!({"title": "ok", "id": "DOC_01arz3ndektsv4rrffq69g5fav"}),
        json!({"title": "ok", "created_at": "1"}),
        json!({"title": "ok", "version": -1}),
        json!({"title": "ok", "body_truncated": "no"}),
    ];
    // Valid by the schema, refused by rules no schema states: bytes beyond the character
    // count, one field against another, a body an export cut.
    let store_rules = [
        json!({"title": "ok", "tags": ["é".repeat(33)]}),
        json!({"title": "ok", "created_at": 5, "updated_at": 1}),
        json!({"title": "ok", "body_truncated": true}),
    ];
    let lines =
        |records: &[Value]| -> String { records.iter().map(|r| format!("{r}\n")).collect() };

    for record in &accepted {
        assert!(schema.is_valid(record), "the schema refuses {record}");
    }
    let input = write_input(&db, &lines(&accepted));
    let run = db.jsonl(&["import", "--input-jsonl", &input]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(domain(&run, "created").len(), accepted.len());

    for record in &refused {
        assert!(!schema.is_valid(record), "the schema takes {record}");
    }
    for record in &store_rules {
        assert!(schema.is_valid(record), "the schema refuses {record}");
    }
    for (records, what) in [(&refused[..], "shape"), (&store_rules[..], "store rule")] {
        let input = write_input(&db, &lines(records));
        let run = db.jsonl(&["import", "--input-jsonl", &input, "--continue-on-error"]);
        // Every record refused: a failure, and not partial (nothing was written).
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(!summary(&run).ok);
        assert_eq!(summary(&run).partial, Some(false));
        assert!(
            domain(&run, "created").is_empty(),
            "{what}: {}",
            run.stdout_text()
        );
        let expected: Vec<u64> = (1..=records.len() as u64).collect();
        assert_eq!(
            refused_lines(&run),
            expected,
            "{what}: {}",
            run.stdout_text()
        );
    }
    assert_eq!(count(&db), accepted.len() as u64);
}
