//! Store tests on real database files in a temporary directory.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use aoi::surface::safety::{begin, IdempotencyStore, Replay};

use super::search::MAX_SNAPSHOTS;
use super::*;

/// A directory under the system temp dir, removed when dropped; its `data/outline.db` does
/// not exist until a test makes it.
struct TempDir(aoi_test::TempDir);

impl TempDir {
    fn new(name: &str) -> TempDir {
        TempDir(aoi_test::temp_dir(&format!("outline-store-{name}")))
    }

    fn db(&self) -> PathBuf {
        self.0.join("data").join("outline.db")
    }
}

fn doc(title: &str, body: &str) -> NewDocument {
    NewDocument::new(title, body)
}

fn assert_healthy(store: &mut Store) {
    assert_eq!(store.integrity_problems().unwrap(), Vec::<String>::new());
    assert!(store.integrity_check().unwrap());
}

fn user_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

/// Every document, by walking `list` pages of `limit`.
fn walk(store: &Store, filter: &ListFilter, limit: usize) -> Vec<Document> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = store.list(filter, after, limit).unwrap();
        assert!(page.documents.len() <= limit);
        all.extend(page.documents);
        match page.next {
            Some(next) => after = Some(next),
            None => return all,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Opening and migrations

#[test]
fn open_creates_the_file_in_wal_mode_and_reopens_idempotently() {
    let dir = TempDir::new("open");
    let path = dir.db();
    let created = {
        let mut store = Store::open(&path).unwrap();
        let status = store.status().unwrap();
        assert!(status.wal);
        assert_eq!(status.schema_version, schema::supported_version());
        assert_eq!(status.db_path.as_deref(), Some(path.as_path()));
        assert_eq!(status.documents, 0);
        assert!(status.size_bytes > 0);
        let created = store.create(doc("First", "kept across opens")).unwrap();
        assert_healthy(&mut store);
        created
    };
    assert!(path.exists());
    assert_eq!(user_version(&path), schema::supported_version());
    for _ in 0..3 {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.get(&created.id).unwrap(), created);
        assert_eq!(store.count(&ListFilter::default()).unwrap(), 1);
    }
    assert_eq!(user_version(&path), schema::supported_version());
}

#[test]
fn a_database_from_a_newer_outline_is_refused() {
    let dir = TempDir::new("newer");
    let path = dir.db();
    drop(Store::open(&path).unwrap());
    let newer = schema::supported_version() + 1;
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    match Store::open(&path) {
        Err(StoreError::NewerSchema {
            path: reported,
            found,
            supported,
        }) => {
            assert_eq!(reported, path);
            assert_eq!(found, newer);
            assert_eq!(supported, schema::supported_version());
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    assert_eq!(user_version(&path), newer, "never downgraded");
}

#[test]
fn files_that_are_not_outline_databases_are_refused_untouched() {
    let dir = TempDir::new("foreign");
    std::fs::create_dir_all(&dir.0).unwrap();
    let text = dir.0.join("notes.txt");
    std::fs::write(
        &text,
        "just some text, long enough to have a header of sorts......",
    )
    .unwrap();
    let err = Store::open(&text).unwrap_err();
    assert!(matches!(err, StoreError::NotOutline { .. }), "{err}");

    let other = dir.0.join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE accounts (id INTEGER PRIMARY KEY);")
        .unwrap();
    let err = Store::open(&other).unwrap_err();
    assert!(matches!(err, StoreError::NotOutline { .. }), "{err}");
    let mode: String = rusqlite::Connection::open(&other)
        .unwrap()
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "the foreign file was not switched to WAL");
}

// ---------------------------------------------------------------------------------------------
// Documents

#[test]
fn create_get_update_move_copy_delete_round_trip() {
    let dir = TempDir::new("crud");
    let mut store = Store::open(&dir.db()).unwrap();
    let created = store
        .create(
            doc("Agent tools", "How agents use tools.")
                .tags(["agents", "tools", "agents"])
                .collection("research"),
        )
        .unwrap();
    assert!(created.id.starts_with(ID_PREFIX) && created.id.len() == 30);
    assert_eq!(created.version, 1);
    assert_eq!(created.tags, ["agents", "tools"]);
    assert_eq!(created.collection, "research");
    assert_eq!(created.created_at, created.updated_at);
    assert_eq!(store.get(&created.id).unwrap(), created);
    assert_eq!(
        store
            .get(&created.id.to_ascii_uppercase().replacen("DOC_", "doc_", 1))
            .unwrap(),
        created,
        "ids are case-insensitive on lookup"
    );
    let inbox = store.create(doc("Untitled thoughts", "")).unwrap();
    assert_eq!(inbox.collection, DEFAULT_COLLECTION);
    assert!(inbox.tags.is_empty());

    let updated = store
        .update(
            &created.id,
            Patch {
                body: Some("Rewritten.".into()),
                tags: Some(vec!["tools".into(), "cli".into()]),
                ..Patch::default()
            },
            Some(1),
        )
        .unwrap();
    assert_eq!(updated.version, 2);
    assert_eq!(updated.title, "Agent tools");
    assert_eq!(updated.body, "Rewritten.");
    assert_eq!(updated.tags, ["tools", "cli"]);
    assert!(updated.updated_at >= created.updated_at);
    assert_eq!(store.get(&created.id).unwrap(), updated);
    assert!(store
        .list(&ListFilter::tag("agents"), None, 10)
        .unwrap()
        .documents
        .is_empty());
    assert_eq!(
        store
            .list(&ListFilter::tag("cli"), None, 10)
            .unwrap()
            .documents,
        std::slice::from_ref(&updated)
    );

    let moved = store
        .move_to(
            &created.id,
            "archive",
            Some("Agent tools (old)".into()),
            None,
        )
        .unwrap();
    assert_eq!(moved.version, 3);
    assert_eq!(moved.collection, "archive");
    assert_eq!(moved.title, "Agent tools (old)");
    assert_eq!(store.get(&created.id).unwrap(), moved);

    let copied = store.copy(&created.id, "research").unwrap();
    assert_ne!(copied.id, created.id);
    assert_eq!(copied.version, 1);
    assert_eq!(
        (
            &copied.title,
            &copied.body,
            &copied.tags,
            copied.collection.as_str()
        ),
        (&moved.title, &moved.body, &moved.tags, "research")
    );

    let deleted = store
        .delete(&[created.id.clone(), created.id.clone()])
        .unwrap();
    assert_eq!(deleted, [moved]);
    assert!(matches!(store.get(&created.id), Err(StoreError::NotFound { id }) if id == created.id));
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 2);
    assert_eq!(
        store
            .list(&ListFilter::tag("cli"), None, 10)
            .unwrap()
            .documents,
        [copied]
    );
    assert_healthy(&mut store);
}

#[test]
fn the_change_log_records_every_mutation_in_commit_order() {
    let mut store = Store::open_in_memory().unwrap();
    assert_eq!(store.last_change().unwrap(), 0);
    let a = store.create(doc("A", "a")).unwrap();
    store
        .update(
            &a.id,
            Patch {
                body: Some("a2".into()),
                ..Patch::default()
            },
            None,
        )
        .unwrap();
    store.move_to(&a.id, "elsewhere", None, None).unwrap();
    let b = store.copy(&a.id, "copies").unwrap();
    store.delete(std::slice::from_ref(&a.id)).unwrap();
    let log = store.watch_changes(0, 100).unwrap();
    let summary: Vec<(ChangeKind, &str, u64, &str, Option<&str>)> = log
        .iter()
        .map(|c| {
            (
                c.kind,
                c.id.as_str(),
                c.version,
                c.collection.as_str(),
                c.from.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (ChangeKind::Created, a.id.as_str(), 1, "inbox", None),
            (ChangeKind::Updated, a.id.as_str(), 2, "inbox", None),
            (
                ChangeKind::Moved,
                a.id.as_str(),
                3,
                "elsewhere",
                Some("inbox")
            ),
            (
                ChangeKind::Copied,
                b.id.as_str(),
                1,
                "copies",
                Some(a.id.as_str())
            ),
            (ChangeKind::Deleted, a.id.as_str(), 3, "elsewhere", None),
        ]
    );
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(store.last_change().unwrap(), log[4].seq);
    let tail = store.watch_changes(log[2].seq, 100).unwrap();
    assert_eq!(tail, log[3..]);
    assert_eq!(store.watch_changes(0, 2).unwrap(), log[..2]);
    assert!(store.watch_changes(log[4].seq, 100).unwrap().is_empty());
}

#[test]
fn if_match_refuses_a_stale_version_and_changes_nothing() {
    let mut store = Store::open_in_memory().unwrap();
    let d = store.create(doc("Title", "v1")).unwrap();
    let v2 = store
        .update(
            &d.id,
            Patch {
                body: Some("v2".into()),
                ..Patch::default()
            },
            Some(1),
        )
        .unwrap();
    let changes = store.last_change().unwrap();
    for stale in [1, 3] {
        let err = store
            .update(
                &d.id,
                Patch {
                    body: Some("lost".into()),
                    ..Patch::default()
                },
                Some(stale),
            )
            .unwrap_err();
        match &err {
            StoreError::Conflict {
                id,
                expected,
                actual,
            } => {
                assert_eq!((id.as_str(), *expected, *actual), (d.id.as_str(), stale, 2));
            }
            other => panic!("expected Conflict, got {other:?}"),
        }
        assert!(err.is_item_error());
        let err = store.move_to(&d.id, "x", None, Some(stale)).unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict { actual: 2, .. }),
            "{err}"
        );
    }
    assert_eq!(store.get(&d.id).unwrap(), v2);
    assert_eq!(store.last_change().unwrap(), changes, "nothing logged");
    let err = store
        .update(
            "doc_01hzx3t7q8w9e2r4t6y8v0j1j3",
            Patch {
                body: Some("x".into()),
                ..Patch::default()
            },
            Some(1),
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    let err = store.update(&d.id, Patch::default(), None).unwrap_err();
    assert!(
        matches!(err, StoreError::Invalid { field: "patch", .. }),
        "{err}"
    );
}

#[test]
fn invalid_documents_are_refused_before_anything_is_written() {
    let mut store = Store::open_in_memory().unwrap();
    let cases = [
        (doc("  ", "blank title"), "title"),
        (doc("two\nlines", ""), "title"),
        (doc("t", "").tags(["has space"]), "tags"),
        (doc("t", "").collection(""), "collection"),
        (
            NewDocument {
                id: Some("doc_nope".into()),
                ..doc("t", "")
            },
            "id",
        ),
        (
            NewDocument {
                created_at: Some(10),
                updated_at: Some(5),
                ..doc("t", "")
            },
            "updated_at",
        ),
    ];
    for (new, field) in cases {
        match store.create(new) {
            Err(StoreError::Invalid { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected Invalid {field}, got {other:?}"),
        }
    }
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 0);
    assert_eq!(store.last_change().unwrap(), 0);
    let d = store.create(doc("ok", "")).unwrap();
    let err = store
        .update(
            &d.id,
            Patch {
                tags: Some(vec![String::new()]),
                ..Patch::default()
            },
            None,
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid { field: "tags", .. }));
    assert_eq!(store.get(&d.id).unwrap(), d);
}

#[test]
fn delete_is_all_or_nothing() {
    let mut store = Store::open_in_memory().unwrap();
    let a = store.create(doc("A", "")).unwrap();
    let b = store.create(doc("B", "")).unwrap();
    let missing = "doc_01hzx3t7q8w9e2r4t6y8v0j1j3".to_owned();
    let err = store
        .delete(&[a.id.clone(), missing.clone(), b.id.clone()])
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { id } if id == missing));
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 2);
    assert_eq!(store.delete(&[b.id.clone(), a.id.clone()]).unwrap(), [b, a]);
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 0);
}

#[test]
fn two_stores_updating_one_document_with_if_match_never_lose_an_update() {
    let dir = TempDir::new("race");
    let path = dir.db();
    let id = Store::open(&path)
        .unwrap()
        .create(doc("Counter", ""))
        .unwrap()
        .id;
    const WRITERS: usize = 3;
    const UPDATES: usize = 40;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let (path, id) = (&path, &id);
                scope.spawn(move || {
                    let mut store = Store::open(path).unwrap();
                    for update in 0..UPDATES {
                        loop {
                            let current = store.get(id).unwrap();
                            let body = format!("{} w{writer}u{update};", current.body);
                            let patch = Patch {
                                body: Some(body),
                                ..Patch::default()
                            };
                            match store.update(id, patch, Some(current.version)) {
                                Ok(_) => break,
                                Err(StoreError::Conflict { .. }) => continue,
                                Err(e) => panic!("writer {writer}: {e}"),
                            }
                        }
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });
    let mut store = Store::open(&path).unwrap();
    let last = store.get(&id).unwrap();
    assert_eq!(last.version, 1 + (WRITERS * UPDATES) as u64);
    for writer in 0..WRITERS {
        for update in 0..UPDATES {
            let token = format!(" w{writer}u{update};");
            assert_eq!(
                last.body.matches(&token).count(),
                1,
                "{token} lost or doubled"
            );
        }
    }
    // Every successful update, and nothing else, is in the log.
    let updates = store
        .watch_changes(0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|c| c.kind == ChangeKind::Updated)
        .count();
    assert_eq!(updates, WRITERS * UPDATES);
    assert_healthy(&mut store);
}

// ---------------------------------------------------------------------------------------------
// Listing

#[test]
fn list_walks_visit_every_document_once_while_another_process_writes() {
    for filter in [
        ListFilter::default(),
        ListFilter::collection("even"),
        ListFilter::tag("third"),
        ListFilter {
            collection: Some("even".into()),
            tag: Some("third".into()),
        },
    ] {
        let dir = TempDir::new("list");
        let path = dir.db();
        let mut reader = Store::open(&path).unwrap();
        let mut writer = Store::open(&path).unwrap();
        let initial: Vec<Document> = reader
            .import((0..100).map(|i| {
                doc(&format!("doc {i}"), "")
                    .tags(if i % 3 == 0 { vec!["third"] } else { vec![] })
                    .collection(if i % 2 == 0 { "even" } else { "odd" })
            }))
            .unwrap();
        let matches = |d: &Document| {
            filter
                .collection
                .as_ref()
                .is_none_or(|c| &d.collection == c)
                && filter.tag.as_ref().is_none_or(|t| d.tags.contains(t))
        };
        let before = walk(&reader, &filter, 7);
        let expected: Vec<&Document> = initial.iter().filter(|d| matches(d)).collect();
        assert_eq!(before.iter().collect::<Vec<_>>(), expected);

        let mut seen: Vec<Document> = Vec::new();
        let mut inserted: Vec<Document> = Vec::new();
        let mut deleted_ahead: Vec<String> = Vec::new();
        let mut after = None;
        let mut pages = 0;
        loop {
            let page = reader.list(&filter, after, 7).unwrap();
            seen.extend(page.documents.iter().cloned());
            pages += 1;
            // Between pages, another connection inserts documents that pass the filter (and
            // some that do not), and deletes one the walk has not reached yet.
            if pages <= 5 && page.next.is_some() {
                for i in 0..3 {
                    let new = doc(&format!("late {pages}.{i}"), "")
                        .tags(filter.tag.iter().cloned())
                        .collection(filter.collection.clone().unwrap_or_else(|| "odd".into()));
                    inserted.push(writer.create(new).unwrap());
                    writer
                        .create(doc("elsewhere", "").collection("unrelated"))
                        .unwrap();
                }
                let seen_ids: HashSet<&str> = seen.iter().map(|d| d.id.as_str()).collect();
                if let Some(ahead) = walk(&writer, &filter, 1000)
                    .into_iter()
                    .rev()
                    .find(|d| !seen_ids.contains(d.id.as_str()) && d.title.starts_with("doc "))
                {
                    writer.delete(std::slice::from_ref(&ahead.id)).unwrap();
                    deleted_ahead.push(ahead.id);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let ids: Vec<&str> = seen.iter().map(|d| d.id.as_str()).collect();
        let unique: HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "a document was visited twice");
        for d in &expected {
            if !deleted_ahead.contains(&d.id) {
                assert!(unique.contains(d.id.as_str()), "{} was skipped", d.title);
            }
        }
        for id in &deleted_ahead {
            assert!(
                !unique.contains(id.as_str()),
                "a deleted document was visited"
            );
        }
        for d in &inserted {
            assert!(
                unique.contains(d.id.as_str()),
                "{} inserted during the walk was missed",
                d.title
            );
        }
        assert!(seen.iter().all(matches));
        let seqs: Vec<i64> = seen.iter().map(|d| d.seq).collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "not in insertion order"
        );
        assert!(!deleted_ahead.is_empty() && !inserted.is_empty());
        assert_healthy(&mut reader);
    }
}

#[test]
fn list_pages_are_index_seeks_whatever_the_filter() {
    let store = Store::open_in_memory().unwrap();
    for filter in [
        ListFilter::default(),
        ListFilter::collection("c"),
        ListFilter::tag("t"),
        ListFilter {
            collection: Some("c".into()),
            tag: Some("t".into()),
        },
    ] {
        let (source, key, values) = documents::filtered_source(&filter);
        let sql = format!(
            "EXPLAIN QUERY PLAN SELECT {} FROM {source} ORDER BY {key} LIMIT 21",
            documents::DOCUMENT_COLUMNS
        );
        let mut params = vec![rusqlite::types::Value::Integer(5)];
        params.extend(values);
        let plan: Vec<String> = store
            .conn
            .prepare(&sql)
            .unwrap()
            .query_map(rusqlite::params_from_iter(params), |r| {
                r.get::<_, String>(3)
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let plan = plan.join("\n");
        assert!(!plan.contains("SCAN"), "{filter:?} scans:\n{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{filter:?} sorts:\n{plan}");
    }
}

#[test]
fn iter_all_yields_one_consistent_snapshot_in_list_order() {
    let dir = TempDir::new("export");
    let path = dir.db();
    let mut store = Store::open(&path).unwrap();
    let docs = store
        .import((0..1200).map(|i| doc(&format!("d{i}"), "x")))
        .unwrap();
    let mut writer = Store::open(&path).unwrap();
    let mut iter = store.iter_all().unwrap();
    let first = iter.next().unwrap().unwrap();
    writer.create(doc("written during the export", "")).unwrap();
    writer.delete(std::slice::from_ref(&docs[1100].id)).unwrap();
    let rest: Vec<Document> = iter.map(Result::unwrap).collect();
    let mut exported = vec![first];
    exported.extend(rest);
    assert_eq!(exported, docs);
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 1200);
}

// ---------------------------------------------------------------------------------------------
// Import

#[test]
fn an_import_with_one_bad_item_writes_nothing() {
    let dir = TempDir::new("import");
    let mut store = Store::open(&dir.db()).unwrap();
    let existing = store.create(doc("Existing", "")).unwrap();
    let changes = store.last_change().unwrap();
    let batch = |bad_at: usize, bad: NewDocument| {
        (0..10_000).map(move |i| {
            if i == bad_at {
                bad.clone()
            } else {
                doc(&format!("Imported {i}"), "zebra crossing").tags(["imported"])
            }
        })
    };
    let clash = NewDocument {
        id: Some(existing.id.to_ascii_uppercase().replacen("DOC_", "doc_", 1)),
        ..doc("Clash", "")
    };
    match store.import(batch(6789, clash)) {
        Err(StoreError::ImportItem { index, source }) => {
            assert_eq!(index, 6789);
            assert!(
                matches!(*source, StoreError::Duplicate { ref id } if *id == existing.id),
                "{source}"
            );
        }
        other => panic!("expected ImportItem, got {other:?}"),
    }
    match store.import(batch(9999, doc("", ""))) {
        Err(e @ StoreError::ImportItem { index: 9999, .. }) => assert!(e.is_item_error()),
        other => panic!("expected ImportItem, got {other:?}"),
    }
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 1);
    assert_eq!(store.count(&ListFilter::tag("imported")).unwrap(), 0);
    assert_eq!(
        store.count_query("zebra", &ListFilter::default()).unwrap(),
        0
    );
    assert_eq!(store.last_change().unwrap(), changes);

    let imported = store.import(batch(usize::MAX, doc("", ""))).unwrap();
    assert_eq!(imported.len(), 10_000);
    assert_eq!(store.count(&ListFilter::tag("imported")).unwrap(), 10_000);
    assert_eq!(
        store.count_query("zebra", &ListFilter::default()).unwrap(),
        10_000
    );
    assert_eq!(walk(&store, &ListFilter::default(), 999)[1..], imported[..]);
    assert_healthy(&mut store);
}

#[test]
fn imports_keep_given_ids_and_times() {
    let mut store = Store::open_in_memory().unwrap();
    let given = NewDocument {
        id: Some("doc_01HZX3T7Q8W9E2R4T6Y8V0J1J3".into()),
        created_at: Some(1_000),
        updated_at: Some(2_000),
        ..doc("Old", "from another outline")
    };
    let [kept] = store.import([given]).unwrap().try_into().unwrap();
    assert_eq!(kept.id, "doc_01hzx3t7q8w9e2r4t6y8v0j1j3");
    assert_eq!(
        (kept.created_at, kept.updated_at, kept.version),
        (1_000, 2_000, 1)
    );
}

#[test]
fn continue_on_error_imports_skip_bad_items_inside_one_transaction() {
    let mut store = Store::open_in_memory().unwrap();
    let existing = store.create(doc("Existing", "")).unwrap();
    let items = vec![
        doc("one", ""),
        NewDocument {
            id: Some(existing.id.clone()),
            ..doc("dup", "")
        },
        doc(" ", ""),
        doc("two", ""),
    ];
    let (written, failed) = store
        .transaction(|tx| -> Result<_, StoreError> {
            let mut written = Vec::new();
            let mut failed = Vec::new();
            for (index, new) in items.into_iter().enumerate() {
                match tx.create(new) {
                    Ok(d) => written.push(d.title),
                    Err(e) if e.is_item_error() => failed.push(index),
                    Err(e) => return Err(e),
                }
            }
            Ok((written, failed))
        })
        .unwrap();
    assert_eq!(written, ["one", "two"]);
    assert_eq!(failed, [1, 2]);
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 3);
    assert_healthy(&mut store);
}

// ---------------------------------------------------------------------------------------------
// Search

fn search_all(store: &mut Store, query: &str, filter: &ListFilter, limit: usize) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut after = None;
    loop {
        let page = store.search(query, filter, after, limit).unwrap();
        hits.extend(page.hits);
        match page.next {
            Some(next) => after = Some(next),
            None => return hits,
        }
    }
}

#[test]
fn search_ranks_title_matches_above_body_matches_and_highlights_terms() {
    let mut store = Store::open_in_memory().unwrap();
    let body_only = store
        .create(doc(
            "Weekly notes",
            "We talked about the quasar survey and other things at length.",
        ))
        .unwrap();
    let in_title = store
        .create(doc(
            "Quasar survey",
            "Plans for next year, nothing else of note here.",
        ))
        .unwrap();
    let in_tags = store
        .create(doc("Telescope time", "Booking rules.").tags(["quasar"]))
        .unwrap();
    store.create(doc("Unrelated", "Nothing to see.")).unwrap();
    let page = store
        .search("quasar", &ListFilter::default(), None, 10)
        .unwrap();
    let order: Vec<&str> = page.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        order,
        [
            in_title.id.as_str(),
            in_tags.id.as_str(),
            body_only.id.as_str()
        ]
    );
    assert_eq!(page.total, 3);
    assert!(page.next.is_none());
    assert_eq!(
        page.hits.iter().map(|h| h.rank).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(page.hits.windows(2).all(|w| w[0].score > w[1].score));
    for hit in &page.hits {
        assert!(!hit.snippet.highlights.is_empty(), "{hit:?}");
        for range in &hit.snippet.highlights {
            assert!(
                hit.snippet.text[range.clone()].eq_ignore_ascii_case("quasar"),
                "{hit:?}"
            );
        }
    }
    let body_hit = &page.hits[2];
    assert!(
        body_hit
            .snippet
            .marked("[", "]")
            .contains("the [quasar] survey"),
        "{body_hit:?}"
    );
    assert_eq!(body_hit.title, "Weekly notes");

    // Filters apply to search; the FTS5 syntax is available.
    let tagged = store
        .search("quasar", &ListFilter::tag("quasar"), None, 10)
        .unwrap();
    assert_eq!(tagged.hits.len(), 1);
    assert_eq!(tagged.hits[0].id, in_tags.id);
    let titled = store
        .search("title: quasar", &ListFilter::default(), None, 10)
        .unwrap();
    assert_eq!(titled.hits.len(), 1);
    assert_eq!(
        store
            .count_query("quasar NOT survey", &ListFilter::default())
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .count_query("quas*", &ListFilter::collection("inbox"))
            .unwrap(),
        3
    );
    assert_eq!(
        store
            .count_query("quasar", &ListFilter::collection("nowhere"))
            .unwrap(),
        0
    );
}

#[test]
fn search_pages_visit_each_match_once_while_documents_are_inserted() {
    let dir = TempDir::new("search");
    let path = dir.db();
    let mut reader = Store::open(&path).unwrap();
    let mut writer = Store::open(&path).unwrap();
    // Matches of varied lengths and term frequencies, so BM25 has something to order.
    let matching = reader
        .import((0..150).map(|i| {
            let body = format!(
                "{} {}",
                "nebula ".repeat(1 + i % 7),
                "filler words ".repeat(i % 13)
            );
            doc(&format!("Report {i}"), &body)
        }))
        .unwrap();
    reader
        .import((0..50).map(|i| doc(&format!("Other {i}"), "nothing relevant")))
        .unwrap();
    let expected: HashSet<&str> = matching.iter().map(|d| d.id.as_str()).collect();
    let first = reader
        .search("nebula", &ListFilter::default(), None, 9)
        .unwrap();
    assert_eq!(first.total, 150);
    let probe = &first.hits[0];

    let mut hits = first.hits.clone();
    let mut after = first.next;
    let mut deleted = None;
    let mut pages = 1;
    while let Some(position) = after {
        // Between pages: more matching documents (long and short, changing every BM25
        // statistic), non-matching ones, and one deletion ahead of the walk.
        writer
            .import((0..20).map(|i| doc("nebula nebula", &"nebula filler ".repeat(i * 3))))
            .unwrap();
        writer
            .create(doc("Noise", &"unrelated text ".repeat(50)))
            .unwrap();
        if pages == 3 {
            let seen: HashSet<&str> = hits.iter().map(|h| h.id.as_str()).collect();
            let ahead = matching
                .iter()
                .rev()
                .find(|d| !seen.contains(d.id.as_str()))
                .unwrap();
            writer.delete(std::slice::from_ref(&ahead.id)).unwrap();
            deleted = Some(ahead.id.clone());
        }
        let page = reader
            .search("nebula", &ListFilter::default(), Some(position), 9)
            .unwrap();
        assert_eq!(page.total, 150);
        assert!(page.hits.len() <= 9);
        hits.extend(page.hits);
        after = page.next;
        pages += 1;
    }
    let deleted = deleted.unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "a hit was returned twice");
    let mut want = expected.clone();
    want.remove(deleted.as_str());
    assert_eq!(
        unique, want,
        "exactly the matches of the first page, less the deleted one"
    );
    // Ranks are the snapshot's: strictly increasing, 1..=150 with one gap.
    let ranks: Vec<u64> = hits.iter().map(|h| h.rank).collect();
    assert!(ranks.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ranks.len(), 149);
    assert!(ranks.iter().all(|r| (1..=150).contains(r)));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));

    // The reason for snapshots: the inserts moved the live scores.
    let fresh = search_all(&mut reader, "nebula", &ListFilter::default(), 1000);
    let live = fresh.iter().find(|h| h.id == probe.id).unwrap();
    assert_ne!(
        live.score, probe.score,
        "BM25 scores did not move; the test proves nothing"
    );
    assert_eq!(fresh.len(), 149 + 20 * (pages - 1));
    assert_healthy(&mut reader);
}

#[test]
fn search_sees_every_change_to_the_text() {
    let mut store = Store::open_in_memory().unwrap();
    let d = store
        .create(doc("Original heading", "first draft").tags(["alpha"]))
        .unwrap();
    let found = |store: &mut Store, q: &str| store.count_query(q, &ListFilter::default()).unwrap();
    store
        .update(
            &d.id,
            Patch {
                body: Some("second version".into()),
                tags: Some(vec!["beta".into()]),
                ..Patch::default()
            },
            None,
        )
        .unwrap();
    assert_eq!(
        (found(&mut store, "draft"), found(&mut store, "second")),
        (0, 1)
    );
    assert_eq!(
        (found(&mut store, "alpha"), found(&mut store, "beta")),
        (0, 1)
    );
    store
        .move_to(&d.id, "elsewhere", Some("Renamed heading".into()), None)
        .unwrap();
    assert_eq!(
        (found(&mut store, "original"), found(&mut store, "renamed")),
        (0, 1)
    );
    store.move_to(&d.id, "third", None, None).unwrap();
    assert_eq!(found(&mut store, "renamed"), 1);
    let copy = store.copy(&d.id, "copies").unwrap();
    assert_eq!(found(&mut store, "renamed"), 2);
    store.delete(&[d.id.clone(), copy.id]).unwrap();
    assert_eq!(
        (found(&mut store, "renamed"), found(&mut store, "second")),
        (0, 0)
    );
    assert_healthy(&mut store);
}

#[test]
fn a_hit_moved_out_of_the_filter_after_the_first_page_is_skipped() {
    let mut store = Store::open_in_memory().unwrap();
    let docs = store
        .import((0..12).map(|i| doc(&format!("comet {i}"), "comet").collection("sky")))
        .unwrap();
    let filter = ListFilter::collection("sky");
    let first = store.search("comet", &filter, None, 4).unwrap();
    let seen: HashSet<String> = first.hits.iter().map(|h| h.id.clone()).collect();
    let ahead = docs.iter().find(|d| !seen.contains(&d.id)).unwrap();
    store.move_to(&ahead.id, "ground", None, None).unwrap();
    let mut hits = first.hits;
    let mut after = first.next;
    while let Some(position) = after {
        let page = store.search("comet", &filter, Some(position), 4).unwrap();
        hits.extend(page.hits);
        after = page.next;
    }
    assert_eq!(hits.len(), 11);
    assert!(hits
        .iter()
        .all(|h| h.id != ahead.id && h.collection == "sky"));
}

#[test]
fn search_positions_belong_to_their_query_filter_and_database() {
    let mut store = Store::open_in_memory().unwrap();
    store
        .import((0..30).map(|i| doc(&format!("comet {i}"), "comet tail")))
        .unwrap();
    let page = store
        .search("comet", &ListFilter::default(), None, 10)
        .unwrap();
    let position = page.next.unwrap();
    let err = store
        .search("tail", &ListFilter::default(), Some(position), 10)
        .unwrap_err();
    assert!(matches!(err, StoreError::PositionMismatch), "{err}");
    let err = store
        .search("comet", &ListFilter::tag("x"), Some(position), 10)
        .unwrap_err();
    assert!(matches!(err, StoreError::PositionMismatch), "{err}");
    // The same position works with its own query, any number of times.
    let again = store
        .search("comet", &ListFilter::default(), Some(position), 10)
        .unwrap();
    assert_eq!(
        again,
        store
            .search("comet", &ListFilter::default(), Some(position), 10)
            .unwrap()
    );
    assert_eq!(again.hits[0].rank, 11);

    // Another database never honours it, even with the same snapshot cache.
    let mut other = Store::open_in_memory().unwrap();
    other
        .import((0..30).map(|i| doc(&format!("comet {i}"), "comet tail")))
        .unwrap();
    let err = other
        .search("comet", &ListFilter::default(), Some(position), 10)
        .unwrap_err();
    assert!(matches!(err, StoreError::PositionExpired { .. }), "{err}");

    // An evicted snapshot has expired.
    store
        .conn
        .execute("DELETE FROM search_cache.snapshots_v1", [])
        .unwrap();
    let err = store
        .search("comet", &ListFilter::default(), Some(position), 10)
        .unwrap_err();
    assert!(matches!(err, StoreError::PositionExpired { .. }), "{err}");
}

#[test]
fn old_snapshots_are_evicted() {
    let mut store = Store::open_in_memory().unwrap();
    store
        .import((0..5).map(|i| doc(&format!("comet {i}"), "")))
        .unwrap();
    let first = store
        .search("comet", &ListFilter::default(), None, 1)
        .unwrap()
        .next
        .unwrap();
    for _ in 0..MAX_SNAPSHOTS {
        store
            .search("comet", &ListFilter::default(), None, 1)
            .unwrap();
    }
    let kept: i64 = store
        .conn
        .query_row("SELECT count(*) FROM search_cache.snapshots_v1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(kept, search::MAX_SNAPSHOTS);
    let err = store
        .search("comet", &ListFilter::default(), Some(first), 1)
        .unwrap_err();
    assert!(matches!(err, StoreError::PositionExpired { .. }), "{err}");
}

#[test]
fn a_search_that_fits_one_page_writes_no_snapshot() {
    let dir = TempDir::new("small-search");
    let mut store = Store::open(&dir.db()).unwrap();
    store
        .import((0..5).map(|i| doc(&format!("comet {i}"), "")))
        .unwrap();
    let page = store
        .search("comet", &ListFilter::default(), None, 5)
        .unwrap();
    assert_eq!((page.hits.len(), page.next, page.total), (5, None, 5));
    let snapshots: i64 = store
        .conn
        .query_row("SELECT count(*) FROM search_cache.snapshots_v1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(snapshots, 0);
    let page = store
        .search("comet", &ListFilter::default(), None, 4)
        .unwrap();
    assert!(page.next.is_some());
    let cache = dir.db().with_file_name("outline.db-search");
    assert!(cache.exists(), "snapshots live beside the database");
}

#[test]
fn fts_syntax_errors_are_invalid_query_never_a_panic() {
    let mut store = Store::open_in_memory().unwrap();
    store
        .create(doc("alpha beta", "gamma \"delta\" e-mail"))
        .unwrap();
    for bad in [
        "",
        "   ",
        "\"unterminated",
        "alpha AND",
        "AND",
        "(",
        "alpha)",
        "nosuchcolumn: alpha",
        "NEAR(",
        "*",
        "^",
        "alpha OR OR beta",
        "e-mail",
        "-",
        "{title",
        "title:",
        "+",
        "NEAR(alpha beta, x)",
    ] {
        match store.search(bad, &ListFilter::default(), None, 10) {
            Err(StoreError::InvalidQuery { reason }) => assert!(!reason.is_empty()),
            other => panic!("{bad:?}: expected InvalidQuery, got {other:?}"),
        }
        assert!(matches!(
            store.count_query(bad, &ListFilter::default()),
            Err(StoreError::InvalidQuery { .. })
        ));
    }
    // Arbitrary strings over FTS5's special characters: a result or InvalidQuery, nothing else;
    // through plain_query, always a result.
    let alphabet: Vec<char> = "ab \"*^():{}-+,.NEARORNOT\\'é\u{1}\u{2}".chars().collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in 0..400 {
        let text: String = (0..len % 24)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                alphabet[(state % alphabet.len() as u64) as usize]
            })
            .collect();
        match store.search(&text, &ListFilter::default(), None, 10) {
            Ok(_) | Err(StoreError::InvalidQuery { .. }) => {}
            Err(e) => panic!("{text:?}: {e}"),
        }
        let plain = plain_query(&text);
        if !plain.is_empty() {
            if let Err(e) = store.search(&plain, &ListFilter::default(), None, 10) {
                panic!("plain {plain:?} of {text:?}: {e}");
            }
        }
    }
    let found = store
        .search(
            &plain_query("e-mail \"delta\""),
            &ListFilter::default(),
            None,
            10,
        )
        .unwrap();
    assert_eq!(found.hits.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Idempotency

#[derive(serde::Serialize)]
struct Created {
    id: String,
}

impl aoi::DomainEvent for Created {
    const TYPE: &'static str = "created";
}

#[derive(Debug)]
enum RunError {
    Store(StoreError),
    Refused(Box<aoi::ErrorEvent>),
    Abandoned,
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> Self {
        RunError::Store(e)
    }
}

impl From<aoi::ErrorEvent> for RunError {
    fn from(e: aoi::ErrorEvent) -> Self {
        RunError::Refused(Box::new(e))
    }
}

/// `create` under an idempotency key, the way the command layer does it; `abandon` makes
/// the run fail after the record was saved, before the commit.
fn create_once(
    store: &mut Store,
    key: &str,
    title: &str,
    abandon: bool,
) -> Result<(bool, String), RunError> {
    let hash = aoi::surface::cursor::request_hash("create", &serde_json::json!({ "title": title }));
    store.transaction(|tx| match begin(tx, key, &hash)? {
        Replay::Replayed(recorded) => {
            let id = recorded.events[0].fields["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            Ok((true, id))
        }
        Replay::Fresh(mut recorder) => {
            let created = tx.create(doc(title, ""))?;
            recorder.record(&Created {
                id: created.id.clone(),
            })?;
            recorder.finish(tx, true)?;
            if abandon {
                return Err(RunError::Abandoned);
            }
            Ok((false, created.id))
        }
    })
}

#[test]
fn idempotency_records_commit_with_their_effect() {
    let dir = TempDir::new("idempotency");
    let path = dir.db();
    let mut store = Store::open(&path).unwrap();
    assert!(matches!(
        create_once(&mut store, "k1", "Once", true),
        Err(RunError::Abandoned)
    ));
    assert_eq!(
        store.load("k1").unwrap(),
        None,
        "the record rolled back with the effect"
    );
    assert_eq!(store.count(&ListFilter::default()).unwrap(), 0);

    let (replayed, id) = create_once(&mut store, "k1", "Once", false).unwrap();
    assert!(!replayed);
    // A retry, from another process, replays instead of creating again.
    let mut other = Store::open(&path).unwrap();
    assert_eq!(
        create_once(&mut other, "k1", "Once", false).unwrap(),
        (true, id.clone())
    );
    assert_eq!(other.count(&ListFilter::default()).unwrap(), 1);
    // The same key for a different request is refused.
    match create_once(&mut other, "k1", "Twice", false) {
        Err(RunError::Refused(e)) => assert_eq!(e.code.as_str(), "IDEMPOTENCY_KEY_REUSED"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // An effect that fails leaves no record: the key stays free for a corrected retry.
    match create_once(&mut other, "k2", " ", false) {
        Err(RunError::Store(e)) => assert!(matches!(e, StoreError::Invalid { field: "title", .. })),
        other => panic!("expected a store error, got {other:?}"),
    }
    assert_eq!(other.load("k2").unwrap(), None);
    let record = other.load("k1").unwrap().unwrap();
    assert!(record.ok);
    assert_eq!(record.events[0].fields["id"], serde_json::json!(id));
    // Outside a transaction, save and load work on their own.
    let mut copy = record.clone();
    copy.ok = false;
    other.save("k3", &copy).unwrap();
    assert_eq!(store.load("k3").unwrap(), Some(copy));
}

// ---------------------------------------------------------------------------------------------
// Status and doctor

#[test]
fn status_counts_documents_collections_and_tags() {
    let mut store = Store::open_in_memory().unwrap();
    store
        .import([
            doc("a", "").collection("x").tags(["t1", "t2"]),
            doc("b", "").collection("y").tags(["t2"]),
            doc("c", "").collection("x"),
        ])
        .unwrap();
    let status = store.status().unwrap();
    assert_eq!(
        (status.documents, status.collections, status.tags),
        (3, 2, 2)
    );
    assert_eq!(status.db_path, None);
    assert!(!status.wal, "an in-memory database has no WAL");
    assert_eq!(status.last_change, 3);
}

#[test]
fn doctor_notices_a_full_text_index_out_of_step() {
    let mut store = Store::open_in_memory().unwrap();
    let d = store.create(doc("indexed", "text")).unwrap();
    assert_healthy(&mut store);
    // Change the text behind the store's back, as a foreign tool editing the file might.
    store
        .conn
        .execute("UPDATE documents SET body = 'changed behind the index'", [])
        .unwrap();
    let problems = store.integrity_problems().unwrap();
    assert!(!problems.is_empty());
    assert!(problems[0].contains("full-text index"), "{problems:?}");
    assert!(!store.integrity_check().unwrap());
    let _ = d;
}

#[test]
fn doctor_notices_tags_out_of_step() {
    let mut store = Store::open_in_memory().unwrap();
    store.create(doc("tagged", "").tags(["a", "b"])).unwrap();
    assert_healthy(&mut store);
    store
        .conn
        .execute("DELETE FROM document_tags WHERE tag = 'b'", [])
        .unwrap();
    store
        .conn
        .execute("INSERT INTO document_tags (tag, doc) VALUES ('c', 999)", [])
        .unwrap();
    let problems = store.integrity_problems().unwrap();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("belong to no document"),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("tag index does not list"),
        "{problems:?}"
    );
}

#[test]
fn ids_for_bulk_deletes_come_from_the_same_transaction() {
    let mut store = Store::open_in_memory().unwrap();
    store
        .import((0..10).map(|i| {
            doc(&format!("n{i}"), if i < 4 { "purge me" } else { "keep" })
                .collection(if i % 2 == 0 { "a" } else { "b" })
        }))
        .unwrap();
    let deleted = store
        .transaction(|tx| -> Result<_, StoreError> {
            let ids = tx.ids_matching("purge", &ListFilter::default())?;
            assert_eq!(ids.len(), 4);
            tx.delete(&ids)
        })
        .unwrap();
    assert_eq!(deleted.len(), 4);
    let in_a = store
        .transaction(|tx| tx.ids(&ListFilter::collection("a")))
        .unwrap();
    assert_eq!(in_a.len(), 3);
    let by_title: HashMap<String, usize> = walk(&store, &ListFilter::default(), 3)
        .into_iter()
        .enumerate()
        .map(|(i, d)| (d.title, i))
        .collect();
    assert_eq!(by_title.len(), 6);
    assert!(!by_title.contains_key("n0"));
}

#[test]
fn the_full_text_index_buffers_64_mib_of_terms_per_transaction() {
    let store = Store::open_in_memory().unwrap();
    let hashsize: i64 = store
        .conn
        .query_row(
            "SELECT v FROM documents_fts_config WHERE k = 'hashsize'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hashsize, 64 << 20);
}
