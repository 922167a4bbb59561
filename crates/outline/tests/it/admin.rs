//! `status` and `doctor`, in both modes.

use aoi::read::Event;

use crate::support::{domain, summary, Db};

fn checks(run: &crate::support::Run) -> Vec<aoi::Check> {
    aoi_test::events(&run.stdout)
        .into_iter()
        .filter_map(|e| match e {
            Event::Check(c) => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn status_counts_documents_collections_and_tags() {
    let db = Db::new("status");
    db.create(&["--title", "A", "--tag", "x", "--tag", "y"]);
    db.create(&["--title", "B", "--tag", "x", "--collection", "work"]);
    let run = db.jsonl(&["status"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let status = domain(&run, "status");
    assert_eq!(status.len(), 1);
    let s = &status[0];
    assert_eq!(s["documents"], 2);
    assert_eq!(s["collections"], 2);
    assert_eq!(s["tags"], 2);
    assert_eq!(s["schema_version"], 2);
    assert_eq!(s["wal"], true);
    assert_eq!(s["db_path"], db.path().display().to_string().as_str());
    assert!(s["size_bytes"].as_u64().unwrap() > 0);
    assert!(summary(&run).ok);

    let human = db.run(&["status"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let text = human.stdout_text();
    assert!(text.contains("documents   2"), "{text}");
    assert!(text.contains("collections 2"), "{text}");
    assert!(!text.contains("\"type\""), "human mode is not JSON: {text}");
}

#[test]
fn doctor_passes_on_a_healthy_database() {
    let db = Db::new("doctor-ok");
    db.create(&["--title", "A", "--body", "searchable words"]);
    let run = db.jsonl(&["doctor"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let checks = checks(&run);
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "database_reachable",
            "schema_version",
            "integrity",
            "credential"
        ]
    );
    assert!(checks.iter().all(|c| c.ok), "{checks:?}");
    assert!(summary(&run).ok);

    let human = db.run(&["doctor"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(human.stdout_text().contains("integrity"));
    assert!(!human.stdout_text().contains("FAIL"));
}

#[test]
fn doctor_fails_when_the_database_is_not_a_database() {
    let db = Db::new("doctor-bad");
    std::fs::create_dir_all(db.path().parent().unwrap()).unwrap();
    std::fs::write(db.path(), vec![b'x'; 8192]).unwrap();
    let run = db.jsonl(&["doctor"]);
    assert_ne!(run.code, 0);
    let checks = checks(&run);
    assert_eq!(
        checks.len(),
        2,
        "the database checks stop at the first: {checks:?}"
    );
    assert_eq!(checks[0].name, "database_reachable");
    assert_eq!(checks[1].name, "credential");
    assert!(!checks[0].ok);
    assert!(checks[0].hint.is_some());
    assert!(!summary(&run).ok);

    let human = db.run(&["doctor"]);
    assert_ne!(human.code, 0);
    assert!(
        human.stdout_text().contains("FAIL"),
        "{}",
        human.stdout_text()
    );
}

#[test]
fn doctor_reports_a_broken_credential_file_as_a_warning_without_showing_it() {
    let db = Db::new("doctor-credential");
    let dir = db.config_dir().join("outline");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("credentials"), "canary-not-json-4411").unwrap();
    db.create(&["--title", "a document"]);
    let run = db.jsonl(&["doctor"]);
    assert_eq!(
        run.code, 0,
        "a credential problem does not fail the database"
    );
    let credential = checks(&run).pop().unwrap();
    assert_eq!(credential.name, "credential");
    assert!(!credential.ok);
    assert_eq!(credential.severity, Some(aoi::Severity::Warning));
    assert!(credential.hint.is_some());
    assert!(!run.stdout_text().contains("canary-not-json-4411"));

    let env = db.run_env(
        &["doctor", "--output", "jsonl"],
        &[("OUTLINE_TOKEN", "canary-env-token-4412")],
        None,
    );
    let credential = checks(&env).pop().unwrap();
    assert!(credential.ok);
    assert!(credential
        .detail
        .as_deref()
        .unwrap_or_default()
        .contains("OUTLINE_TOKEN"));
    assert!(!env.stdout_text().contains("canary-env-token-4412"));
}
