//! `schema`, `input-schema`, `capabilities`, and that every stream matches the published schema.

use std::process::Command;

use crate::support::Db;

fn document(db: &Db, args: &[&str]) -> serde_json::Value {
    let run = db.run(args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_slice(&run.stdout).expect("one JSON document")
}

#[test]
fn schema_publishes_the_domain_events() {
    let db = Db::new("schema");
    let schema = document(&db, &["schema"]);
    let text = schema.to_string();
    for ty in ["entry", "hit", "created", "updated", "deleted"] {
        assert!(
            text.contains(&format!("\"{ty}\"")),
            "{ty} missing from the schema"
        );
    }
    assert!(
        !db.path().exists(),
        "discovery must not create the database"
    );
}

#[test]
fn capabilities_state_each_commands_behaviour() {
    let db = Db::new("caps");
    let caps = document(&db, &["capabilities"]);
    let text = caps.to_string();
    for command in ["create", "get", "update", "list", "search", "delete"] {
        assert!(
            text.contains(&format!("\"{command}\"")),
            "{command} missing"
        );
    }
    let commands = caps["commands"].as_array().expect("a commands array");
    let find = |name: &str| {
        commands
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {caps}"))
    };
    assert_eq!(find("delete")["destructive"], true);
    assert_eq!(find("search")["read_only"], true);
    assert_ne!(find("create")["read_only"], true);
}

#[test]
fn input_schema_of_delete_has_its_flags() {
    let db = Db::new("input");
    let schema = document(&db, &["input-schema", "--command", "delete"]);
    let props = schema["properties"].as_object().unwrap();
    for flag in [
        "confirm",
        "confirm_count",
        "dry_run",
        "idempotency_key",
        "query",
        "db",
    ] {
        assert!(props.contains_key(flag), "{flag} missing: {schema}");
    }
}

/// §2: in JSONL mode every line of stdout is one complete JSON object, so a discovery
/// document asked for with `--output jsonl` is one compact line and its `\n`; `--output json`
/// is a single JSON document (§17) and may stay pretty.
#[test]
fn discovery_documents_are_one_compact_line_in_jsonl_mode_section_2() {
    let db = Db::new("discovery-jsonl");
    for args in [
        &["schema"][..],
        &["capabilities"],
        &["input-schema", "--command", "search"],
    ] {
        let mut jsonl = args.to_vec();
        jsonl.extend(["--output", "jsonl"]);
        let run = db.run(&jsonl);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let text = run.stdout_text();
        assert!(text.ends_with('\n'), "{args:?}: no final newline");
        assert_eq!(
            text.matches('\n').count(),
            1,
            "{args:?}: not one line: {} lines",
            text.lines().count()
        );
        let line: serde_json::Value = serde_json::from_str(text.trim_end_matches('\n'))
            .unwrap_or_else(|e| panic!("{args:?}: the line is not one JSON document: {e}"));
        assert!(line.is_object(), "{args:?}");
        let mut json = args.to_vec();
        json.extend(["--output", "json"]);
        let pretty = document(&db, &json);
        assert_eq!(
            pretty, line,
            "{args:?}: json and jsonl carry the same document"
        );
    }
}

#[test]
fn every_stream_passes_aoi_verify_against_the_published_schema() {
    let db = Db::new("verify");
    let id = db.create(&["--title", "Agent notes", "--body", "agents operate tools"]);
    let aoi = aoi_test::workspace_bin("aoi");
    let outline = env!("CARGO_BIN_EXE_outline");
    let remote = Db::new("verify-remote");
    remote.create(&["--title", "Remote note"]);
    let remote_path = remote.path().display().to_string();
    let input = db.path().with_file_name("input.jsonl");
    std::fs::write(&input, "{\"title\":\"one\"}\n{\"title\":\"\"}\n").unwrap();
    let input = input.display().to_string();
    let runs: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["doctor"],
        vec!["export"],
        vec!["import", "--input-jsonl", &input],
        vec!["import", "--input-jsonl", &input, "--continue-on-error"],
        vec!["import", "--input-jsonl", &input, "--dry-run"],
        vec!["sync", &remote_path, "--dry-run"],
        vec!["sync", &remote_path],
        vec!["sync", "/nonexistent/outline.db"],
        vec!["auth", "status"],
        vec!["auth", "logout"],
        vec!["auth", "protect"],
        vec!["create", "--title", "x"],
        vec!["get", &id],
        vec!["get", "doc_missing"],
        vec!["update", &id, "--title", "Agent notes 2", "--if-match", "1"],
        vec!["update", &id, "--title", "stale", "--if-match", "1"],
        vec!["list", "--limit", "1"],
        vec!["search", "agents"],
        vec!["create", "--title", "k", "--idempotency-key", "k"],
        vec!["create", "--title", "k", "--idempotency-key", "k"],
        vec!["search", "agent", "--limit", "1", "--max-bytes", "100"],
        vec!["move", &id, "--to", "archive", "--title", "Moved"],
        vec!["move", &id, "--to", "inbox", "--dry-run"],
        vec!["move", &id, "--to", "inbox", "--if-match", "1"],
        vec!["move", "doc_missing", "--to", "inbox"],
        vec!["copy", &id, "--to", "templates"],
        vec!["copy", &id, "--dry-run"],
        vec!["delete", &id, "--dry-run"],
        vec!["delete", &id],
        vec!["delete", &id, "--confirm"],
    ];
    for args in runs {
        let run = db.jsonl(&args);
        let file = db.path().with_file_name("stream.jsonl");
        std::fs::write(&file, &run.stdout).unwrap();
        let verdict = Command::new(&aoi)
            .args(["verify", "--schema-from", outline])
            .arg(&file)
            .output()
            .unwrap();
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&verdict.stdout),
            String::from_utf8_lossy(&verdict.stderr)
        );
        assert!(
            report.contains("✓ conforming AOI stream") && !report.contains("violat"),
            "{args:?}: aoi verify said {:?}\n{report}",
            verdict.status.code()
        );
    }
}
