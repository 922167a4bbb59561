//! Reconciling two outline databases (`outline sync`, §16.3), and protecting a database that
//! others sync with.
//!
//! Documents are matched by their stable id. For each id:
//!
//! - on one side only: it is created on the other side, with the same id, content and
//!   timestamps, when the direction carries changes that way;
//! - on both sides with the same title, body, tags and collection: nothing to do;
//! - on both sides with different content: the side changed last (`updated_at`, then the
//!   higher version) wins, and the other side is updated to its content, again only when the
//!   direction carries changes that way. A difference the direction does not carry is *held
//!   back*; a difference with the same time and version on both sides is a *conflict* and is
//!   left alone on both sides.
//!
//! Sync never deletes: a document deleted on one side is created again from the other on the
//! next two-way sync. Delete it on both sides.
//!
//! [`plan`] reads both databases inside the callers' write transactions, so the plan is
//! still true when [`apply`] carries it out. Each side's changes commit in its own
//! transaction; if the process dies between the two commits, the next sync finds the
//! remaining differences and finishes the job, since a plan is computed from the databases'
//! contents alone.
//!
//! # Protection
//!
//! A database can be *protected*: it keeps the SHA-256 of a token in `outline_meta`, and a
//! sync with it must present that token ([`Protection::admits`]). The token itself is never
//! stored in the database.

use std::fmt;

use rusqlite::{Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use super::documents::{document_from_row, DOCUMENT_COLUMNS};
use super::error::StoreError;
use super::model::{Document, NewDocument, Patch};
use super::{Store, Tx};

/// Which way a sync carries changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From this database to the remote only.
    Push,
    /// From the remote to this database only.
    Pull,
    /// Both ways.
    Both,
}

impl Direction {
    /// The direction's name: `push`, `pull` or `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Push => "push",
            Direction::Pull => "pull",
            Direction::Both => "both",
        }
    }

    fn carries(self, to: Side) -> bool {
        matches!(
            (self, to),
            (Direction::Both, _) | (Direction::Push, Side::Remote) | (Direction::Pull, Side::Local)
        )
    }
}

/// One of the two databases of a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The database the command runs on (`--db`).
    Local,
    /// The database given as the remote.
    Remote,
}

impl Side {
    /// `local` or `remote`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Local => "local",
            Side::Remote => "remote",
        }
    }
}

/// What a planned change does on its target side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncAction {
    /// The document is created there, with the same id.
    Create,
    /// The document there takes the other side's content.
    Update,
}

impl SyncAction {
    /// `create` or `update`.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncAction::Create => "create",
            SyncAction::Update => "update",
        }
    }
}

/// One change a sync makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncChange {
    /// The side that changes.
    pub target: Side,
    /// What happens there.
    pub action: SyncAction,
    /// The document as it is on the other side: the content the target takes.
    pub source: Document,
    /// For an update: the target's version before it (checked again when applied).
    pub replaces: Option<u64>,
}

/// What a sync will do, from [`plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncPlan {
    /// The direction planned for.
    pub direction: Direction,
    /// The changes, local ones and remote ones, in id order.
    pub changes: Vec<SyncChange>,
    /// Documents identical on both sides.
    pub unchanged: u64,
    /// Differences the direction does not carry, by the side they would have changed.
    pub held_back: Vec<(Side, String)>,
    /// Ids that differ with the same update time and version on both sides: left alone.
    pub conflicts: Vec<String>,
}

impl SyncPlan {
    /// How many changes of `action` land on `target`.
    pub fn count(&self, target: Side, action: SyncAction) -> u64 {
        let n = self
            .changes
            .iter()
            .filter(|c| c.target == target && c.action == action)
            .count();
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// How many differences held back would have changed `side`.
    pub fn held_back_on(&self, side: Side) -> u64 {
        let n = self.held_back.iter().filter(|(s, _)| *s == side).count();
        u64::try_from(n).unwrap_or(u64::MAX)
    }
}

/// Compares two databases and plans the changes `direction` allows.
///
/// Reads both sides in id order in one pass (a merge join over each side's id index), so it
/// holds only the differing documents in memory.
pub fn plan(local: &Tx<'_>, remote: &Tx<'_>, direction: Direction) -> Result<SyncPlan, StoreError> {
    let mut plan = SyncPlan {
        direction,
        changes: Vec::new(),
        unchanged: 0,
        held_back: Vec::new(),
        conflicts: Vec::new(),
    };
    let sql = format!("SELECT {DOCUMENT_COLUMNS} FROM documents d ORDER BY d.id");
    let read = StoreError::with("reading documents to compare");
    let mut local_stmt = local.tx.prepare(&sql).map_err(&read)?;
    let mut remote_stmt = remote.tx.prepare(&sql).map_err(&read)?;
    let mut locals = local_stmt.query_map([], document_from_row).map_err(&read)?;
    let mut remotes = remote_stmt
        .query_map([], document_from_row)
        .map_err(&read)?;
    let mut next_local = locals.next().transpose().map_err(&read)?;
    let mut next_remote = remotes.next().transpose().map_err(&read)?;
    loop {
        let order = match (&next_local, &next_remote) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(l), Some(r)) => l.id.cmp(&r.id),
        };
        match order {
            std::cmp::Ordering::Less => {
                if let Some(doc) = next_local.take() {
                    plan.only_on(Side::Local, doc);
                }
                next_local = locals.next().transpose().map_err(&read)?;
            }
            std::cmp::Ordering::Greater => {
                if let Some(doc) = next_remote.take() {
                    plan.only_on(Side::Remote, doc);
                }
                next_remote = remotes.next().transpose().map_err(&read)?;
            }
            std::cmp::Ordering::Equal => {
                if let (Some(l), Some(r)) = (next_local.take(), next_remote.take()) {
                    plan.on_both(l, r);
                }
                next_local = locals.next().transpose().map_err(&read)?;
                next_remote = remotes.next().transpose().map_err(&read)?;
            }
        }
    }
    Ok(plan)
}

impl SyncPlan {
    fn propose(&mut self, target: Side, change: SyncChange) {
        if self.direction.carries(target) {
            self.changes.push(change);
        } else {
            self.held_back.push((target, change.source.id));
        }
    }

    fn only_on(&mut self, side: Side, doc: Document) {
        let target = match side {
            Side::Local => Side::Remote,
            Side::Remote => Side::Local,
        };
        self.propose(
            target,
            SyncChange {
                target,
                action: SyncAction::Create,
                source: doc,
                replaces: None,
            },
        );
    }

    fn on_both(&mut self, local: Document, remote: Document) {
        let same = local.title == remote.title
            && local.body == remote.body
            && local.tags == remote.tags
            && local.collection == remote.collection;
        if same {
            self.unchanged += 1;
            return;
        }
        let local_key = (local.updated_at, local.version);
        let remote_key = (remote.updated_at, remote.version);
        let (target, source, replaces) = match local_key.cmp(&remote_key) {
            std::cmp::Ordering::Greater => (Side::Remote, local, remote.version),
            std::cmp::Ordering::Less => (Side::Local, remote, local.version),
            std::cmp::Ordering::Equal => {
                self.conflicts.push(local.id);
                return;
            }
        };
        self.propose(
            target,
            SyncChange {
                target,
                action: SyncAction::Update,
                source,
                replaces: Some(replaces),
            },
        );
    }
}

/// Carries out one planned change on its target side; returns the document as written.
///
/// A create keeps the source's id and timestamps; an update checks that the target is still
/// at the planned version ([`StoreError::Conflict`] otherwise) and takes the source's title,
/// body, tags and collection as one new version.
pub fn apply(tx: &mut Tx<'_>, change: &SyncChange) -> Result<Document, StoreError> {
    let doc = &change.source;
    match change.action {
        SyncAction::Create => tx.create(NewDocument {
            id: Some(doc.id.clone()),
            title: doc.title.clone(),
            body: doc.body.clone(),
            tags: doc.tags.clone(),
            collection: Some(doc.collection.clone()),
            created_at: Some(doc.created_at),
            updated_at: Some(doc.updated_at),
        }),
        SyncAction::Update => tx.update(
            &doc.id,
            Patch {
                title: Some(doc.title.clone()),
                body: Some(doc.body.clone()),
                tags: Some(doc.tags.clone()),
                collection: Some(doc.collection.clone()),
            },
            change.replaces,
        ),
    }
}

/// The key in `outline_meta` holding a protected database's token digest.
const PROTECTION_KEY: &str = "sync_token_sha256";

/// Whether a database asks for a token before it syncs.
#[derive(Clone, PartialEq, Eq)]
pub enum Protection {
    /// Anyone who can open the file can sync with it.
    Open,
    /// A sync must present the token whose SHA-256 this is.
    Protected {
        /// The token's SHA-256, in lowercase hex.
        digest: String,
    },
}

impl fmt::Debug for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protection::Open => "Open",
            Protection::Protected { .. } => "Protected",
        })
    }
}

impl Protection {
    /// True when `token` may sync with the database.
    pub fn admits(&self, token: Option<&str>) -> bool {
        match (self, token) {
            (Protection::Open, _) => true,
            (Protection::Protected { digest }, Some(token)) => {
                constant_time_eq(digest.as_bytes(), token_digest(token).as_bytes())
            }
            (Protection::Protected { .. }, None) => false,
        }
    }

    /// True for a protected database.
    pub fn is_protected(&self) -> bool {
        matches!(self, Protection::Protected { .. })
    }
}

/// A token's SHA-256 in lowercase hex.
fn token_digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Compares two digests without stopping at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn read_protection(conn: &Connection) -> Result<Protection, StoreError> {
    let digest: Option<String> = conn
        .query_row(
            "SELECT value FROM outline_meta WHERE key = ?1",
            [PROTECTION_KEY],
            |r| r.get(0),
        )
        .optional()
        .map_err(StoreError::with("reading the database's protection"))?;
    Ok(digest.map_or(Protection::Open, |digest| Protection::Protected { digest }))
}

impl Store {
    /// Whether syncing with this database needs a token.
    pub fn protection(&self) -> Result<Protection, StoreError> {
        read_protection(&self.conn)
    }
}

impl Tx<'_> {
    /// Whether syncing with this database needs a token, as this transaction sees it.
    pub fn protection(&self) -> Result<Protection, StoreError> {
        read_protection(&self.tx)
    }

    /// Protects the database with `token` (`Some`), replacing any earlier token, or removes
    /// the protection (`None`). Only the token's SHA-256 is stored.
    pub fn set_protection(&mut self, token: Option<&str>) -> Result<(), StoreError> {
        let result = match token {
            Some(token) => self.tx.execute(
                "INSERT INTO outline_meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [PROTECTION_KEY, &token_digest(token)],
            ),
            None => self
                .tx
                .execute("DELETE FROM outline_meta WHERE key = ?1", [PROTECTION_KEY]),
        };
        result
            .map(|_| ())
            .map_err(StoreError::with("writing the database's protection"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ListFilter, NewDocument, Store};

    fn same_on(store: &mut Store, doc: &Document) -> Document {
        store
            .create(NewDocument {
                id: Some(doc.id.clone()),
                title: doc.title.clone(),
                body: doc.body.clone(),
                tags: doc.tags.clone(),
                collection: Some(doc.collection.clone()),
                created_at: Some(doc.created_at),
                updated_at: Some(doc.updated_at),
            })
            .unwrap()
    }

    fn plan_of(local: &mut Store, remote: &mut Store, direction: Direction) -> SyncPlan {
        local
            .transaction(|l| remote.transaction(|r| plan(l, r, direction)))
            .unwrap()
    }

    #[test]
    fn the_plan_matches_documents_by_id_across_interleaved_ids() {
        let (mut local, mut remote) = (
            Store::open_in_memory().unwrap(),
            Store::open_in_memory().unwrap(),
        );
        let mut made = Vec::new();
        for n in 0..6 {
            made.push(
                local
                    .create(NewDocument::new(format!("doc {n}"), "x"))
                    .unwrap(),
            );
        }
        // Local has all six; the remote holds 1, 3 and 5 identically, and one of its own.
        for doc in made.iter().skip(1).step_by(2) {
            same_on(&mut remote, doc);
        }
        let extra = remote.create(NewDocument::new("remote only", "y")).unwrap();
        let plan = plan_of(&mut local, &mut remote, Direction::Both);
        assert_eq!(plan.unchanged, 3);
        assert_eq!(plan.count(Side::Remote, SyncAction::Create), 3);
        assert_eq!(plan.count(Side::Local, SyncAction::Create), 1);
        let pulled: Vec<&str> = plan
            .changes
            .iter()
            .filter(|c| c.target == Side::Local)
            .map(|c| c.source.id.as_str())
            .collect();
        assert_eq!(pulled, [extra.id.as_str()]);

        let applied = local
            .transaction(|l| {
                remote.transaction(|r| -> Result<_, StoreError> {
                    for change in &plan.changes {
                        match change.target {
                            Side::Local => apply(l, change)?,
                            Side::Remote => apply(r, change)?,
                        };
                    }
                    Ok(plan.changes.len())
                })
            })
            .unwrap();
        assert_eq!(applied, 4);
        assert_eq!(local.count(&ListFilter::default()).unwrap(), 7);
        assert_eq!(remote.count(&ListFilter::default()).unwrap(), 7);
        assert_eq!(
            local.get(&extra.id).unwrap().created_at,
            extra.created_at,
            "a pulled document keeps its timestamps"
        );
        let again = plan_of(&mut local, &mut remote, Direction::Both);
        assert!(again.changes.is_empty());
        assert_eq!(again.unchanged, 7);
    }

    #[test]
    fn the_same_time_and_version_with_different_content_is_a_conflict_left_alone() {
        let (mut local, mut remote) = (
            Store::open_in_memory().unwrap(),
            Store::open_in_memory().unwrap(),
        );
        let doc = local.create(NewDocument::new("t", "mine")).unwrap();
        let mut theirs = doc.clone();
        theirs.body = "theirs".into();
        same_on(&mut remote, &theirs);
        let plan = plan_of(&mut local, &mut remote, Direction::Both);
        assert_eq!(plan.conflicts, std::slice::from_ref(&doc.id));
        assert!(plan.changes.is_empty());

        // One more version on the remote breaks the tie in its favour; a push holds it back.
        remote
            .update(
                &doc.id,
                Patch {
                    body: Some("theirs 2".into()),
                    ..Patch::default()
                },
                None,
            )
            .unwrap();
        let push = plan_of(&mut local, &mut remote, Direction::Push);
        assert_eq!(push.held_back, [(Side::Local, doc.id.clone())]);
        let pull = plan_of(&mut local, &mut remote, Direction::Pull);
        assert_eq!(pull.count(Side::Local, SyncAction::Update), 1);
        assert_eq!(pull.changes[0].replaces, Some(1));
    }

    #[test]
    fn protection_stores_a_digest_and_admits_only_its_token() {
        let mut store = Store::open_in_memory().unwrap();
        assert_eq!(store.protection().unwrap(), Protection::Open);
        assert!(store.protection().unwrap().admits(None));
        store
            .transaction(|tx| tx.set_protection(Some("tok-123")))
            .unwrap();
        let p = store.protection().unwrap();
        assert!(p.admits(Some("tok-123")));
        assert!(!p.admits(Some("tok-124")));
        assert!(!p.admits(None));
        assert_eq!(format!("{p:?}"), "Protected");
        let stored: String = store
            .conn
            .query_row("SELECT group_concat(value) FROM outline_meta", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(
            !stored.contains("tok-123"),
            "the token itself is never stored"
        );
        store.transaction(|tx| tx.set_protection(None)).unwrap();
        assert_eq!(store.protection().unwrap(), Protection::Open);
    }
}
