//! Arbitrary bytes as `outline import --input-jsonl` records: the SDK's reader validates each
//! line against the published record schema, `outline::import_record::to_document` makes it a
//! `NewDocument`, and an in-memory store inserts it (rolled back, so every record meets an
//! empty store). A document `to_document` accepts keeps the store's rules as the schema states
//! them (title not blank and one line, tags, collection, an id of `doc_` and a ULID); the store
//! takes it, refusing only what the schema documents as the store's own (a tag or collection
//! over its byte limit, `updated_at` before `created_at`); and nothing ever panics.

#![no_main]

use std::cell::RefCell;

use aoi::discover::input_schema::record_schema;
use aoi::surface::flags::InputMode;
use aoi::surface::input::Input;
use aoi::{Category, Emitter, Identity};
use libfuzzer_sys::fuzz_target;
use outline::import_record::{to_document, ImportRecord};
use outline::store::{
    Document, NewDocument, Store, StoreError, DEFAULT_COLLECTION, MAX_COLLECTION_LEN, MAX_TAG_LEN,
};

thread_local! {
    static STORE: RefCell<Store> = RefCell::new(Store::open_in_memory().expect("a store in memory"));
}

/// What a transaction that is always rolled back saw.
struct RolledBack(Result<Document, StoreError>);

impl From<StoreError> for RolledBack {
    fn from(e: StoreError) -> RolledBack {
        RolledBack(Err(e))
    }
}

fn insert(doc: NewDocument) -> Result<Document, StoreError> {
    STORE.with(|store| {
        let result = store
            .borrow_mut()
            .transaction(|tx| -> Result<(), RolledBack> {
                let mut importer = tx.importer()?;
                Err(RolledBack(importer.insert(doc)))
            });
        match result {
            Err(RolledBack(inserted)) => inserted,
            Ok(()) => unreachable!("the transaction always rolls back"),
        }
    })
}

fn one_line_not_blank(text: &str) -> bool {
    !text.trim().is_empty() && !text.chars().any(char::is_control)
}

/// `doc_` and a ULID in its canonical text, in either case.
fn is_document_id(id: &str) -> bool {
    id.strip_prefix("doc_")
        .filter(|ulid| ulid.len() == 26)
        .and_then(|text| {
            let ulid = ulid::Ulid::from_string(text).ok()?;
            Some(ulid.to_string().eq_ignore_ascii_case(text))
        })
        .unwrap_or(false)
}

/// The rules as the record schema states them: lengths counted in characters.
fn check_rules(doc: &NewDocument) {
    assert!(one_line_not_blank(&doc.title), "title {:?}", doc.title);
    for tag in &doc.tags {
        let chars = tag.chars().count();
        assert!((1..=MAX_TAG_LEN).contains(&chars), "tag {tag:?}");
        assert!(
            !tag.chars().any(|c| c.is_whitespace() || c.is_control()),
            "tag {tag:?}"
        );
    }
    if let Some(collection) = &doc.collection {
        let chars = collection.chars().count();
        assert!(
            (1..=MAX_COLLECTION_LEN).contains(&chars),
            "collection {collection:?}"
        );
        assert_eq!(collection.trim(), collection, "collection {collection:?}");
        assert!(
            !collection.chars().any(char::is_control),
            "collection {collection:?}"
        );
    }
    if let Some(id) = &doc.id {
        assert!(is_document_id(id), "id {id:?}");
    }
}

/// The refusals the schema leaves to the store.
fn documented_refusal(doc: &NewDocument, e: &StoreError) -> bool {
    let StoreError::Invalid { field, .. } = e else {
        return false;
    };
    // A document without `created_at` is created now (read after the store's own clock).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let created = doc.created_at.unwrap_or(now);
    match *field {
        "tags" => doc.tags.iter().any(|t| t.len() > MAX_TAG_LEN),
        "collection" => doc
            .collection
            .as_ref()
            .is_some_and(|c| c.len() > MAX_COLLECTION_LEN),
        "updated_at" => doc.updated_at.is_some_and(|u| u < created),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut out = Emitter::builder(Identity::new("outline", "0", "outline", "1.0.0"))
        .command("import")
        .start(Vec::new())
        .expect("an emitter into memory");
    let schema = record_schema::<ImportRecord>();
    let mut input = Input::jsonl(data, InputMode::ContinueOnError)
        .validate_with(&schema)
        .expect("the record schema compiles");
    while let Ok(Some(record)) = input.next(&mut out) {
        let doc = match to_document(&record) {
            Ok(doc) => doc,
            Err(e) => {
                assert_eq!(e.category, Category::Validation, "{e:?}");
                continue;
            }
        };
        check_rules(&doc);
        match insert(doc.clone()) {
            Ok(stored) => {
                assert_eq!(stored.title, doc.title);
                assert_eq!(
                    stored.collection,
                    doc.collection.as_deref().unwrap_or(DEFAULT_COLLECTION)
                );
                assert!(stored.tags.iter().all(|t| doc.tags.contains(t)));
                assert!(is_document_id(&stored.id) && stored.id == stored.id.to_lowercase());
                if let Some(id) = &doc.id {
                    assert!(stored.id.eq_ignore_ascii_case(id));
                }
            }
            Err(e) => assert!(
                documented_refusal(&doc, &e),
                "the store refused {doc:?}: {e}"
            ),
        }
    }
});
