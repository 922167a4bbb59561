//! `get`, `list` and `search`, in both modes, with their bounds and cursors.

use crate::support::{domain, error, summary, Db};

#[test]
fn get_returns_the_entry_with_its_body() {
    let db = Db::new("get");
    let id = db.create(&["--title", "Plan", "--body", "step one", "--tag", "work"]);
    let run = db.jsonl(&["get", &id]);
    assert_eq!(run.code, 0);
    let entries = domain(&run, "entry");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["id"], id.as_str());
    assert_eq!(entries[0]["body"], "step one");
    assert_eq!(entries[0]["tags"], serde_json::json!(["work"]));
    assert_ne!(summary(&run).truncated, Some(true));

    let human = db.run(&["get", &id]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let text = human.stdout_text();
    assert!(
        text.contains(&id) && text.contains("Plan") && text.contains("step one"),
        "{text}"
    );
    assert!(!text.contains("\"type\""), "human mode is not JSON: {text}");
}

#[test]
fn get_max_bytes_cuts_the_body_on_a_char_boundary() {
    let db = Db::new("get-max");
    let id = db.create(&["--title", "Accents", "--body", "héllo wörld"]);
    // Byte 2 is inside the two-byte "é": the cut backs off to byte 1.
    let run = db.jsonl(&["get", &id, "--max-bytes", "2"]);
    assert_eq!(run.code, 0);
    let entry = &domain(&run, "entry")[0];
    assert_eq!(entry["body"], "h");
    assert_eq!(entry["body_truncated"], true);
    assert_eq!(summary(&run).truncated, Some(true));

    let whole = db.jsonl(&["get", &id, "--max-bytes", "100"]);
    assert_eq!(domain(&whole, "entry")[0]["body"], "héllo wörld");
    assert_ne!(summary(&whole).truncated, Some(true));

    let human = db.run(&["get", &id, "--max-bytes", "2"]);
    assert!(
        human.stdout_text().contains("cut at 1 of 13 bytes"),
        "{}",
        human.stdout_text()
    );
}

#[test]
fn get_unknown_id_is_not_found_exit_66() {
    let db = Db::new("get-missing");
    db.create(&["--title", "another"]);
    let run = db.jsonl(&["get", "doc_nope"]);
    assert_eq!(run.code, 66);
    let e = error(&run);
    assert_eq!(e.category, aoi::Category::NotFound);
    assert_eq!(e.target.as_deref(), Some("doc_nope"));
    assert!(!summary(&run).ok);

    let human = db.run(&["get", "doc_nope"]);
    assert_eq!(human.code, 66);
    assert!(human.stdout.is_empty());
    assert!(
        human.stderr.contains("no document with id doc_nope"),
        "{}",
        human.stderr
    );
}

#[test]
fn list_pages_with_cursors_visit_every_document_once() {
    let db = Db::new("list");
    let mut ids: Vec<String> = (0..5)
        .map(|i| db.create(&["--title", &format!("Doc {i}"), "--body", "long body text"]))
        .collect();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["list", "--limit", "2"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let run = db.jsonl(&args);
        assert_eq!(run.code, 0);
        for entry in domain(&run, "entry") {
            assert!(entry.get("body").is_none(), "list leaves bodies out");
            seen.push(entry["id"].as_str().unwrap().to_owned());
        }
        let s = summary(&run);
        match s.next_cursor {
            Some(c) => {
                assert_eq!(s.truncated, Some(true));
                cursor = Some(c);
            }
            None => break,
        }
    }
    ids.sort();
    seen.sort();
    assert_eq!(seen, ids);
}

#[test]
fn list_filters_by_collection_and_tag_and_defaults_to_20() {
    let db = Db::new("list-filter");
    for i in 0..22 {
        db.create(&["--title", &format!("Bulk {i}")]);
    }
    let tagged = db.create(&["--title", "Tagged", "--tag", "red", "--collection", "work"]);
    let all = db.jsonl(&["list"]);
    assert_eq!(domain(&all, "entry").len(), 20);
    assert_eq!(summary(&all).truncated, Some(true));

    let red = db.jsonl(&["list", "--tag", "red"]);
    let entries = domain(&red, "entry");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["id"], tagged.as_str());
    let work = db.jsonl(&["list", "--collection", "work"]);
    assert_eq!(domain(&work, "entry").len(), 1);

    let human = db.run(&["list", "--collection", "work"]);
    assert_eq!(human.code, 0);
    let text = human.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ID"), "{text}");
    assert_eq!(
        lines[0].find("COLLECTION"),
        lines[1].find("work"),
        "aligned: {text}"
    );
    assert!(lines[1].contains("Tagged"));
}

#[test]
fn a_cursor_replayed_with_other_filters_is_cursor_mismatch() {
    let db = Db::new("list-mismatch");
    db.create(&["--title", "a", "--tag", "x"]);
    db.create(&["--title", "b", "--tag", "x"]);
    let first = db.jsonl(&["list", "--limit", "1"]);
    let cursor = summary(&first).next_cursor.expect("a next cursor");
    let run = db.jsonl(&["list", "--limit", "1", "--tag", "x", "--cursor", &cursor]);
    assert_eq!(run.code, 65, "validation exits 65");
    let e = error(&run);
    assert_eq!(e.category, aoi::Category::Validation);
    assert_eq!(e.code.as_str(), "CURSOR_MISMATCH");

    let s1 = db.jsonl(&["search", "a", "--limit", "1"]);
    assert_eq!(s1.code, 0);
    let human = db.run(&["list", "--tag", "x", "--cursor", &cursor]);
    assert_eq!(human.code, 65);
    assert!(human.stderr.contains("cursor"), "{}", human.stderr);
}

#[test]
fn search_ranks_hits_with_snippets_and_pages() {
    let db = Db::new("search");
    let best = db.create(&["--title", "Agent tools", "--body", "agent agent agent"]);
    db.create(&["--title", "Other", "--body", "an agent once"]);
    db.create(&["--title", "Unrelated", "--body", "nothing here"]);
    let run = db.jsonl(&["search", "agent", "--limit", "1"]);
    assert_eq!(run.code, 0);
    let hits = domain(&run, "hit");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["rank"], 1);
    assert_eq!(hits[0]["id"], best.as_str());
    assert!(hits[0]["score"].is_number());
    assert!(hits[0]["snippet"]
        .as_str()
        .unwrap()
        .to_lowercase()
        .contains("agent"));
    let s = summary(&run);
    assert_eq!(s.truncated, Some(true));
    let next = s.next_cursor.expect("a second page");
    let page2 = db.jsonl(&["search", "agent", "--limit", "1", "--cursor", &next]);
    let hits2 = domain(&page2, "hit");
    assert_eq!(hits2.len(), 1);
    assert_eq!(hits2[0]["rank"], 2);
    assert_ne!(summary(&page2).truncated, Some(true));

    // Free text with punctuation is never a query syntax error.
    let odd = db.jsonl(&["search", "C++ \"quoted"]);
    assert_eq!(odd.code, 0);

    let other = db.jsonl(&["search", "tools", "--cursor", &next]);
    assert_eq!(error(&other).code.as_str(), "CURSOR_MISMATCH");

    let human = db.run(&["search", "agent"]);
    assert_eq!(human.code, 0);
    let text = human.stdout_text();
    assert!(
        text.contains("[agent]") || text.contains("[Agent]"),
        "{text}"
    );
    assert!(text.contains("2 match(es)"), "{text}");
}

#[test]
fn search_max_bytes_cuts_the_page_and_its_cursor_continues_after_the_last_hit() {
    let db = Db::new("search-bytes");
    for i in 0..6 {
        db.create(&[
            "--title",
            &format!("Report {i}"),
            "--body",
            "quarterly report text",
        ]);
    }
    let full = db.jsonl(&["search", "report", "--limit", "5"]);
    let all: Vec<u64> = domain(&full, "hit")
        .iter()
        .map(|h| h["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(all, vec![1, 2, 3, 4, 5]);
    // Room for the meta line and a little more than one hit.
    let meta_len = full.stdout.iter().position(|b| *b == b'\n').unwrap() + 1;
    let budget = (meta_len + 450).to_string();
    let cut = db.jsonl(&["search", "report", "--limit", "5", "--max-bytes", &budget]);
    let got: Vec<u64> = domain(&cut, "hit")
        .iter()
        .map(|h| h["rank"].as_u64().unwrap())
        .collect();
    assert!(!got.is_empty() && got.len() < 5, "{got:?}");
    let s = summary(&cut);
    assert_eq!(s.truncated, Some(true));
    let next = s.next_cursor.expect("a cursor after the last hit sent");
    let rest = db.jsonl(&["search", "report", "--limit", "5", "--cursor", &next]);
    let first_rest = domain(&rest, "hit")[0]["rank"].as_u64().unwrap();
    assert_eq!(first_rest, got.last().unwrap() + 1);
}

#[test]
fn list_max_bytes_cuts_the_page_and_its_cursor_continues_after_the_last_entry() {
    let db = Db::new("list-bytes");
    let ids: Vec<String> = (0..6)
        .map(|i| db.create(&["--title", &format!("Entry {i}")]))
        .collect();
    let full = db.jsonl(&["list"]);
    let meta_len = full.stdout.iter().position(|b| *b == b'\n').unwrap() + 1;
    let budget = (meta_len + 500).to_string();
    let cut = db.jsonl(&["list", "--max-bytes", &budget]);
    let got: Vec<String> = domain(&cut, "entry")
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!got.is_empty() && got.len() < 6, "{got:?}");
    let next = summary(&cut)
        .next_cursor
        .expect("a cursor after the last entry sent");
    let rest = db.jsonl(&["list", "--cursor", &next]);
    let mut seen = got.clone();
    seen.extend(
        domain(&rest, "entry")
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned()),
    );
    assert_eq!(seen, ids);
}

#[test]
fn a_reader_that_goes_away_ends_the_run_without_a_panic() {
    let db = Db::new("pipe");
    let big = db.path().with_file_name("big.txt");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    std::fs::write(&big, "word ".repeat(300_000)).unwrap();
    let id = db.create(&["--title", "Big", "--body-file", big.to_str().unwrap()]);
    for machine in [false, true] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_outline"));
        cmd.args(["get", &id, "--db"]).arg(db.path());
        if machine {
            cmd.args(["--output", "jsonl"]);
        }
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end at once: the 1.5 MB body cannot fit the pipe.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "machine={machine}: {stderr}");
        assert!(
            out.status.code().is_some(),
            "machine={machine}: killed by a signal"
        );
    }
}

/// Ids that end alike: `twin_a` and `twin_b` share their last 7 characters, `loner` shares
/// nothing with them.
const TWIN_A: &str = "doc_01m8serhj9p9hgbe2q1abcdefg";
const TWIN_B: &str = "doc_01m8serhj9p9hgbe2q2abcdefg";
const LONER: &str = "doc_01m8serhj9p9hgbe2qfx77z23m";

fn twins() -> Db {
    let db = Db::new("short-ids");
    let records: String = [(TWIN_A, "Twin A"), (TWIN_B, "Twin B"), (LONER, "Loner")]
        .iter()
        .map(|(id, title)| format!("{{\"id\":\"{id}\",\"title\":\"{title}\",\"body\":\"b\"}}\n"))
        .collect();
    let run = db.run_env(
        &["import", "--input-jsonl", "-", "--output", "jsonl"],
        &[],
        Some(records.as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    db
}

#[test]
fn the_id_column_shows_the_shortest_end_no_other_id_shares() {
    let db = twins();
    let listed = db.run(&["list"]).stdout_text();
    let column: Vec<&str> = listed
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().next().unwrap())
        .collect();
    // The twins need 8 characters (their last 7 are the same); the loner needs the minimum.
    assert_eq!(column, ["1abcdefg", "2abcdefg", "77z23m"], "{listed}");
    let searched = db.run(&["search", "twin"]).stdout_text();
    assert!(searched.contains("  1abcdefg  "), "{searched}");
    // Machine mode keeps whole ids (§14.5).
    let run = db.jsonl(&["list"]);
    let ids: Vec<String> = domain(&run, "entry")
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, [TWIN_A, TWIN_B, LONER]);
}

#[test]
fn every_command_that_takes_an_id_takes_the_end_a_table_shows() {
    let db = twins();
    for short in ["1abcdefg", "1ABCDEFG"] {
        let run = db.jsonl(&["get", short]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(domain(&run, "entry")[0]["id"], TWIN_A);
    }
    let run = db.jsonl(&["update", "77z23m", "--title", "Loner, retitled"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(domain(&run, "updated")[0]["id"], LONER);
    let run = db.jsonl(&["move", "2abcdefg", "--to", "archive"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(domain(&run, "moved")[0]["id"], TWIN_B);
    let run = db.jsonl(&["copy", "2abcdefg", "--to", "drafts"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(domain(&run, "copied")[0]["source_id"], TWIN_B);
    let run = db.jsonl(&["delete", "77z23m", "--confirm"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(domain(&run, "deleted")[0]["id"], LONER);
    assert_eq!(db.jsonl(&["get", LONER]).code, 66);
}

#[test]
fn an_end_that_two_ids_share_is_refused_and_changes_nothing() {
    let db = twins();
    let run = db.jsonl(&["delete", "abcdefg", "--confirm"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    let e = error(&run);
    assert_eq!(e.code.as_str(), "AMBIGUOUS_ID");
    assert_eq!(e.category, aoi::Category::Validation);
    assert!(
        e.message.contains(TWIN_A) && e.message.contains(TWIN_B),
        "{}",
        e.message
    );
    for id in [TWIN_A, TWIN_B] {
        assert_eq!(db.jsonl(&["get", id]).code, 0, "{id} is still there");
    }
    // Too short to stand for an id, or not an id's alphabet: not found, not a guess.
    for reference in ["defg", "bcdefg!", "1abcdefu"] {
        let run = db.jsonl(&["get", reference]);
        assert_eq!(run.code, 66, "{reference}: {}", run.stderr);
        assert_eq!(error(&run).code.as_str(), "DOCUMENT_NOT_FOUND");
    }
    let human = db.run(&["get", "abcdefg"]);
    assert_eq!(human.code, 65);
    assert!(
        human.stderr.contains("give more of the id"),
        "{}",
        human.stderr
    );
}
