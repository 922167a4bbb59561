//! Idempotency records in files (§14.4): one JSON file per key under
//! `$AOI_COREUTILS_STATE_DIR/idempotency/` (default `$XDG_STATE_HOME/aoi-coreutils/` or
//! `~/.local/state/aoi-coreutils/`), named by the SHA-256 of the key.
//!
//! A record is written atomically (a temporary file in the same directory, synced, then
//! renamed over the name), so a reader sees the old record or the new one, never half of one.
//! A run holds `<hash>.lock` (created exclusively) from its lookup to its save, so two runs
//! with the same key are serialized: the second is refused as `conflict`
//! `IDEMPOTENCY_KEY_IN_USE`, `retryable: true`, and a retry replays the first. A lock older
//! than [`STALE_LOCK`] was left by a run that died, and is taken over.
//!
//! What files cannot give is one transaction for the effect and its record: a run killed
//! between the two leaves the effect without a record, and its retry runs again (for `cp` and
//! `mv` that retry then meets the destination it made: a `conflict`, not a second copy).

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use aoi::surface::cursor::request_hash;
use aoi::surface::safety::{IdempotencyStore, Recorded};
use aoi::surface::store::write_atomically;
use aoi::{Category, Code, ErrorEvent};
use serde::{Deserialize, Serialize};

/// The environment variable naming this tool's state directory (records go in its
/// `idempotency/`); it overrides `XDG_STATE_HOME` and `HOME`.
pub const STATE_DIR_ENV: &str = "AOI_COREUTILS_STATE_DIR";

/// How old a lock file must be before it is taken to be left by a run that died.
pub const STALE_LOCK: Duration = Duration::from_secs(600);

/// `conflict` (retryable): another run holds the same idempotency key right now.
pub const IDEMPOTENCY_KEY_IN_USE: Code = Code::from_static("IDEMPOTENCY_KEY_IN_USE");

/// `config`: no state directory is known (no `AOI_COREUTILS_STATE_DIR`, `XDG_STATE_HOME`
/// nor `HOME`).
pub const STATE_DIR_UNKNOWN: Code = Code::from_static("STATE_DIR_UNKNOWN");

/// Idempotency records, one file per key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStore {
    dir: PathBuf,
}

/// A record as stored: the key it belongs to (checked on load) and the record.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    key: String,
    record: Recorded,
}

impl FileStore {
    /// The store in the directory the environment names (see the [module docs](self)).
    pub fn from_env() -> Result<FileStore, ErrorEvent> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let base = if let Some(dir) = var(STATE_DIR_ENV) {
            PathBuf::from(dir)
        } else if let Some(dir) = var("XDG_STATE_HOME").filter(|d| Path::new(d).is_absolute()) {
            PathBuf::from(dir).join("aoi-coreutils")
        } else if let Some(home) = var("HOME") {
            PathBuf::from(home).join(".local/state/aoi-coreutils")
        } else {
            return Err(ErrorEvent::new(
                Category::Config,
                STATE_DIR_UNKNOWN,
                "no directory for idempotency records: set AOI_COREUTILS_STATE_DIR, XDG_STATE_HOME or HOME",
            )
            .field("idempotency_key"));
        };
        Ok(FileStore::at(base.join("idempotency")))
    }

    /// The store in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> FileStore {
        FileStore { dir: dir.into() }
    }

    /// The directory the records are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, key: &str, extension: &str) -> PathBuf {
        let hash = request_hash("aoi-coreutils.idempotency-key", key);
        let hex = hash.strip_prefix("sha256:").unwrap_or(&hash);
        self.dir.join(format!("{hex}.{extension}"))
    }

    fn make_dir(&self) -> io::Result<()> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
    }

    /// Takes the key's lock, held until the returned guard is dropped.
    pub fn lock(&self, key: &str) -> Result<KeyLock, ErrorEvent> {
        let failed = |e: io::Error| {
            ErrorEvent::new(
                Category::Io,
                aoi::surface::safety::IDEMPOTENCY_STORE_FAILED,
                format!(
                    "the idempotency store {} cannot be used: {}",
                    crate::paths::display(&self.dir),
                    crate::paths::plain_io(&e)
                ),
            )
            .retryable(false)
        };
        self.make_dir().map_err(failed)?;
        let path = self.file(key, "lock");
        for attempt in 0..2 {
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(KeyLock { path });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt == 0 => {
                    let age = fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok());
                    if age.is_some_and(|a| a > STALE_LOCK) {
                        let _ = fs::remove_file(&path);
                        continue;
                    }
                    return Err(ErrorEvent::new(
                        Category::Conflict,
                        IDEMPOTENCY_KEY_IN_USE,
                        "another run with this idempotency key is in progress",
                    )
                    .field("idempotency_key")
                    .retryable(true)
                    .retry_after_ms(1000)
                    .hint(
                        "retry the same request: once the other run ends, it replays its result",
                    ));
                }
                Err(e) => return Err(failed(e)),
            }
        }
        Err(failed(io::Error::other("the lock could not be taken")))
    }
}

/// The lock of one key; released (its file removed) when dropped.
#[derive(Debug)]
pub struct KeyLock {
    path: PathBuf,
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

impl IdempotencyStore for FileStore {
    type Error = String;

    fn load(&mut self, key: &str) -> Result<Option<Recorded>, String> {
        let path = self.file(key, "json");
        let text = match fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "{}: {}",
                    path.display(),
                    crate::paths::plain_io(&e)
                ))
            }
        };
        let stored: Stored = serde_json::from_slice(&text)
            .map_err(|e| format!("{} is not a record: {e}", path.display()))?;
        if stored.key != key {
            return Err(format!("{} holds another key's record", path.display()));
        }
        Ok(Some(stored.record))
    }

    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), String> {
        let path = self.file(key, "json");
        let stored = Stored {
            key: key.to_owned(),
            record: record.clone(),
        };
        let bytes = serde_json::to_vec(&stored).map_err(|e| e.to_string())?;
        self.make_dir()
            .map_err(|e| format!("{}: {}", self.dir.display(), crate::paths::plain_io(&e)))?;
        write_atomically(&path, &bytes)
            .map_err(|e| format!("{}: {}", path.display(), crate::paths::plain_io(&e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aoi::surface::safety::{begin, Replay};

    fn scratch(tag: &str) -> aoi_test::TempDir {
        aoi_test::temp_dir(&format!("coreutils-store-{tag}"))
    }

    #[test]
    fn a_record_survives_a_new_store_and_belongs_to_its_key() {
        let dir = scratch("roundtrip");
        let mut store = FileStore::at(&dir);
        assert_eq!(store.load("k").unwrap(), None);
        let Replay::Fresh(recorder) = begin(&mut store, "k", "h1").unwrap() else {
            panic!("an empty store has no record");
        };
        let saved = recorder.finish(&mut store, true).unwrap();
        let mut again = FileStore::at(&dir);
        assert_eq!(again.load("k").unwrap(), Some(saved));
        assert_eq!(again.load("other").unwrap(), None);
        // Only the record is left: no temporary file, no lock.
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(names[0].to_string_lossy().ends_with(".json"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_held_key_is_refused_as_retryable_and_released_on_drop() {
        let dir = scratch("lock");
        let store = FileStore::at(&dir);
        let held = store.lock("k").unwrap();
        let e = store.lock("k").unwrap_err();
        assert_eq!(e.code, IDEMPOTENCY_KEY_IN_USE);
        assert!(e.retryable);
        assert!(store.lock("other").is_ok(), "keys are independent");
        drop(held);
        assert!(store.lock("k").is_ok());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_record_is_a_store_failure_not_a_fresh_run() {
        let dir = scratch("damaged");
        let mut store = FileStore::at(&dir);
        store.make_dir().unwrap();
        fs::write(store.file("k", "json"), b"{not json").unwrap();
        let e = begin(&mut store, "k", "h").unwrap_err();
        assert_eq!(e.code.as_str(), "IDEMPOTENCY_STORE_FAILED");
        fs::remove_dir_all(&dir).unwrap();
    }
}
