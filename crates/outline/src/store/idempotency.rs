//! Idempotency records (`--idempotency-key`, spec §14.4) kept in the database itself, so that
//! a record can commit in the same transaction as the effect it records.

use aoi::surface::safety::{IdempotencyStore, Recorded};
use rusqlite::{params, Connection, OptionalExtension};

use super::error::StoreError;
use super::model::now_ms;
use super::{Store, Tx};

fn load(conn: &Connection, key: &str) -> Result<Option<Recorded>, StoreError> {
    let text: Option<String> = conn
        .prepare_cached("SELECT record FROM idempotency WHERE key = ?1")
        .and_then(|mut stmt| stmt.query_row([key], |r| r.get(0)).optional())
        .map_err(StoreError::with("reading an idempotency record"))?;
    text.map(|text| {
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
            what: format!("idempotency record {key:?}"),
            reason: e.to_string(),
        })
    })
    .transpose()
}

fn save(conn: &Connection, key: &str, record: &Recorded) -> Result<(), StoreError> {
    let text = serde_json::to_string(record).map_err(|e| StoreError::Corrupt {
        what: format!("idempotency record {key:?}"),
        reason: e.to_string(),
    })?;
    conn.prepare_cached(
        "INSERT INTO idempotency (key, request_hash, record, saved_at) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (key) DO UPDATE SET request_hash = excluded.request_hash, \
         record = excluded.record, saved_at = excluded.saved_at",
    )
    .and_then(|mut stmt| stmt.execute(params![key, record.request_hash, text, now_ms()]))
    .map_err(StoreError::with("saving an idempotency record"))?;
    Ok(())
}

/// Records saved outside a transaction commit on their own. Use the [`Tx`] implementation to
/// record an effect atomically (see [`Store::transaction`]).
impl IdempotencyStore for Store {
    type Error = StoreError;

    fn load(&mut self, key: &str) -> Result<Option<Recorded>, StoreError> {
        load(&self.conn, key)
    }

    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), StoreError> {
        save(&self.conn, key, record)
    }
}

/// Within a write transaction: the lookup is serialized with every other writer (the
/// transaction holds the write lock), and the record commits with the effect or not at all.
impl IdempotencyStore for Tx<'_> {
    type Error = StoreError;

    fn load(&mut self, key: &str) -> Result<Option<Recorded>, StoreError> {
        load(&self.tx, key)
    }

    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), StoreError> {
        save(&self.tx, key, record)
    }
}
