//! A file-backed [`IdempotencyStore`] (§14.4) for a CLI, one process per run: records survive
//! the process, concurrent runs with one key are serialized, and a run that died between its
//! effect and its record is never replayed as a success nor repeated in silence.
//!
//! Layout, in a directory of the tool's own (by default `$XDG_STATE_HOME/TOOL/idempotency`,
//! else `~/.local/state/TOOL/idempotency`, created mode 0700): for a key, files named by the
//! SHA-256 of the key (a key may hold any character):
//! - `HASH.json`: the record of the run that finished, written to a temporary file and renamed
//!   over (a reader never sees half a record);
//! - `HASH.lock`: an exclusive `flock` held by the run using the key, from [`FileStore::lock`]
//!   until its [`KeyLock`] is dropped; the kernel releases it when the process dies;
//! - `HASH.pending`: written when the lock is taken, removed when it is released: present with
//!   the lock free means the run holding it died.
//!
//! The order, for a tool (what [`begin`](super::safety::begin) and
//! [`Recorder::finish`](super::safety::Recorder::finish) do around it):
//!
//! 1. [`FileStore::lock`] the key: a second run with the same key waits here until the first
//!    is done, then finds its record and replays it (one effect, one replay). A key whose
//!    earlier run died after taking the lock is refused: `conflict`
//!    `IDEMPOTENCY_OUTCOME_UNKNOWN`, `retryable: false`, because that run may have applied its
//!    effect and the store cannot tell (§9.3 "A producer MUST set retryable:false when it
//!    cannot determine whether a side effect was applied"). Check the state, then use a new
//!    key.
//! 2. [`begin`](super::safety::begin): replay a record, or run.
//! 3. The effect, then [`Recorder::finish`](super::safety::Recorder::finish) (the record),
//!    then the output: a retry after a cut pipe replays.
//! 4. Drop the [`KeyLock`].
//!
//! Records and markers older than the store's time to live (24 hours unless
//! [`FileStore::ttl`] says otherwise) are forgotten: the key may be used afresh.
//!
//! A tool whose own data lives in a transactional store (outline's SQLite) keeps the record in
//! that transaction instead, with its own [`IdempotencyStore`]: then no crash can separate the
//! effect from its record.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::safety::{IdempotencyStore, Recorded};
use crate::wire::{Category, Code, ErrorEvent};

/// `conflict`: an earlier run with this idempotency key died after it took the key, and may
/// have applied its effect.
pub const IDEMPOTENCY_OUTCOME_UNKNOWN: Code = Code::from_static("IDEMPOTENCY_OUTCOME_UNKNOWN");

/// How long a record is kept, unless [`FileStore::ttl`] says otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Idempotency records in a directory (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
    ttl: Duration,
}

/// The key held by one run: released (and its pending marker removed) when dropped.
#[derive(Debug)]
pub struct KeyLock {
    file: File,
    pending: PathBuf,
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.pending);
        let _ = rustix::fs::flock(&self.file, rustix::fs::FlockOperation::Unlock);
    }
}

impl FileStore {
    /// A store in `dir`, created (mode 0700) when missing.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<FileStore> {
        let dir = dir.into();
        fs::DirBuilder::new()
            .recursive(true)
            .mode_private()
            .create(&dir)?;
        Ok(FileStore {
            dir,
            ttl: DEFAULT_TTL,
        })
    }

    /// The store of tool `tool`: `$XDG_STATE_HOME/TOOL/idempotency`, else
    /// `$HOME/.local/state/TOOL/idempotency`.
    pub fn for_tool(tool: &str) -> io::Result<FileStore> {
        FileStore::new(
            xdg_home("XDG_STATE_HOME", "state")?
                .join(tool)
                .join("idempotency"),
        )
    }

    /// Keeps records for `ttl` instead of [`DEFAULT_TTL`].
    pub fn ttl(mut self, ttl: Duration) -> FileStore {
        self.ttl = ttl;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str, ext: &str) -> PathBuf {
        let hash = Sha256::digest(key.as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.{ext}"))
    }

    /// True when `path` was last written longer ago than the time to live.
    fn expired(&self, path: &Path) -> bool {
        fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > self.ttl)
    }

    /// Takes `key` for this run, waiting while another run holds it (step 1 of the
    /// [module docs](self)).
    pub fn lock(&self, key: &str) -> Result<KeyLock, ErrorEvent> {
        let lock_path = self.path(key, "lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| failed(&lock_path, &e))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| failed(&lock_path, &io::Error::from(e)))?;
        let pending = self.path(key, "pending");
        if pending.exists() {
            if self.expired(&pending) {
                let _ = fs::remove_file(&pending);
                let _ = fs::remove_file(self.path(key, "json"));
            } else {
                let _ = rustix::fs::flock(&file, rustix::fs::FlockOperation::Unlock);
                return Err(ErrorEvent::new(
                    Category::Conflict,
                    IDEMPOTENCY_OUTCOME_UNKNOWN,
                    "an earlier run with this --idempotency-key stopped before it recorded its outcome: its effect may have been applied",
                )
                .retryable(false)
                .hint("check the state the command changes, then run it with a new --idempotency-key"));
            }
        }
        write_atomically(&pending, b"").map_err(|e| failed(&pending, &e))?;
        Ok(KeyLock { file, pending })
    }
}

impl IdempotencyStore for FileStore {
    type Error = String;

    fn load(&mut self, key: &str) -> Result<Option<Recorded>, String> {
        let path = self.path(key, "json");
        if self.expired(&path) {
            let _ = fs::remove_file(&path);
            return Ok(None);
        }
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{}: not a record: {e}", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), String> {
        let path = self.path(key, "json");
        let bytes = serde_json::to_vec(record).map_err(|e| e.to_string())?;
        write_atomically(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// `$VAR` when it is an absolute path, else `$HOME/.local/FALLBACK` (the XDG base directory
/// rule).
fn xdg_home(var: &str, fallback: &str) -> io::Result<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join(fallback))
        })
        .ok_or_else(|| {
            let message = format!("neither {var} nor HOME is set");
            io::Error::new(io::ErrorKind::NotFound, message)
        })
}

/// `io`: a tool's data file could not be read, parsed or written.
pub const DATA_FILE_FAILED: Code = Code::from_static("DATA_FILE_FAILED");

/// A tool's own data kept in one JSON document (a list of notes, a settings map), read whole
/// and replaced whole: [`JsonFile::update`] holds an exclusive `flock` on `PATH.lock` from
/// the read to the write, so two runs changing it at once both count, and writes with
/// [`write_atomically`], so a run killed mid-way leaves the old document or the new.
///
/// ```
/// use aoi::surface::store::JsonFile;
/// # let dir = std::env::temp_dir().join(format!("aoi-jsonfile-doc-{}", std::process::id()));
/// let notes = JsonFile::new(dir.join("notes.json"));
/// let count = notes.update(|list: &mut Vec<String>| {
///     list.push("buy milk".to_owned());
///     Ok(list.len())
/// })?;
/// assert_eq!(count, 1);
/// assert_eq!(notes.read::<Vec<String>>()?, ["buy milk"]);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), aoi::Failure>(())
/// ```
#[derive(Debug, Clone)]
pub struct JsonFile {
    path: PathBuf,
}

impl JsonFile {
    /// The document at `path` (its directory is created, mode 0700, on the first write).
    pub fn new(path: impl Into<PathBuf>) -> JsonFile {
        JsonFile { path: path.into() }
    }

    /// The document `name` of tool `tool`: `$XDG_DATA_HOME/TOOL/NAME`, else
    /// `$HOME/.local/share/TOOL/NAME`.
    pub fn for_tool(tool: &str, name: &str) -> Result<JsonFile, ErrorEvent> {
        let home =
            xdg_home("XDG_DATA_HOME", "share").map_err(|e| data_failed(Path::new(name), &e))?;
        Ok(JsonFile::new(home.join(tool).join(name)))
    }

    /// Where the document is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The document, or `T::default()` when there is none yet. One that cannot be read or is
    /// not a `T` is an `io` error naming the file, never an empty default.
    pub fn read<T: serde::de::DeserializeOwned + Default>(&self) -> Result<T, ErrorEvent> {
        match fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                let e = io::Error::new(io::ErrorKind::InvalidData, e);
                data_failed(&self.path, &e)
                    .hint("the file is not what this tool wrote: restore it or move it aside")
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(T::default()),
            Err(e) => Err(data_failed(&self.path, &e)),
        }
    }

    /// Reads the document, lets `change` change it, and writes it back when `change`
    /// succeeds (an error leaves the file as it was), all under the document's lock. Returns
    /// what `change` returned.
    pub fn update<T, R>(
        &self,
        change: impl FnOnce(&mut T) -> Result<R, crate::Failure>,
    ) -> Result<R, crate::Failure>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + Default,
    {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let failed = |path: &Path, e: io::Error| crate::Failure::from(data_failed(path, &e));
        fs::DirBuilder::new()
            .recursive(true)
            .mode_private()
            .create(dir)
            .map_err(|e| failed(dir, e))?;
        let mut lock_path = self.path.clone().into_os_string();
        lock_path.push(".lock");
        let lock_path = PathBuf::from(lock_path);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| failed(&lock_path, e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| failed(&lock_path, io::Error::from(e)))?;
        let mut document: T = self.read()?;
        let result = change(&mut document)?;
        let bytes = serde_json::to_vec_pretty(&document)
            .map_err(|e| failed(&self.path, io::Error::new(io::ErrorKind::InvalidData, e)))?;
        write_atomically(&self.path, &bytes).map_err(|e| failed(&self.path, e))?;
        // The lock goes with the file's last handle.
        drop(lock);
        Ok(result)
    }
}

fn data_failed(path: &Path, e: &io::Error) -> ErrorEvent {
    ErrorEvent::new(
        Category::Io,
        DATA_FILE_FAILED,
        format!("{}: {e}", path.display()),
    )
    .target(path.display().to_string())
    .retryable(false)
}

/// Writes `bytes` to `path` atomically: a new temporary file beside it (mode 0600, a name no
/// other writer uses), synced, renamed over `path`, and the directory synced, so a reader sees
/// the old content or the new, never half of it. For any store a tool keeps in files.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let temp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written?;
    // The rename is durable once the directory is synced; a failure here loses nothing.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn failed(path: &Path, e: &io::Error) -> ErrorEvent {
    ErrorEvent::new(
        Category::Io,
        super::safety::IDEMPOTENCY_STORE_FAILED,
        format!("the idempotency store failed: {}: {e}", path.display()),
    )
    .retryable(false)
}

/// `DirBuilder::mode(0o700)` where there are modes.
trait PrivateDir {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateDir for fs::DirBuilder {
    #[cfg(unix)]
    fn mode_private(&mut self) -> &mut Self {
        use std::os::unix::fs::DirBuilderExt;
        self.mode(0o700)
    }

    #[cfg(not(unix))]
    fn mode_private(&mut self) -> &mut Self {
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread;

    use super::*;
    use crate::surface::safety::{begin, Replay};

    #[test]
    fn concurrent_updates_of_a_json_file_all_count() {
        let dir = aoi_test::temp_dir("jsonfile-concurrent");
        let file = JsonFile::new(dir.path().join("sub").join("notes.json"));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let file = file.clone();
                thread::spawn(move || {
                    for i in 0..25 {
                        file.update(|list: &mut Vec<u32>| {
                            list.push(w * 100 + i);
                            Ok(())
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(file.read::<Vec<u32>>().unwrap().len(), 100);
    }

    #[test]
    fn a_json_file_that_is_not_the_document_is_an_io_error_and_stays_as_it_was() {
        let dir = aoi_test::temp_dir("jsonfile-corrupt");
        let path = dir.path().join("notes.json");
        fs::write(&path, b"{not json").unwrap();
        let file = JsonFile::new(&path);
        let e = file.read::<Vec<u32>>().unwrap_err();
        assert_eq!(
            (e.category, e.code.as_str()),
            (Category::Io, "DATA_FILE_FAILED")
        );
        assert!(!e.message.contains('\n'), "one line: {}", e.message);
        assert!(file.update(|l: &mut Vec<u32>| Ok(l.len())).is_err());
        // A change that fails writes nothing either.
        let fresh = JsonFile::new(dir.path().join("fresh.json"));
        let refused = fresh.update(|l: &mut Vec<u32>| {
            l.push(1);
            Err::<(), _>(ErrorEvent::usage("no").into())
        });
        assert!(refused.is_err());
        assert_eq!(fs::read(&path).unwrap(), b"{not json");
        assert!(!fresh.path().exists());
        // None yet is the empty default.
        assert_eq!(
            JsonFile::new(dir.path().join("none.json"))
                .read::<Vec<u32>>()
                .unwrap(),
            Vec::<u32>::new()
        );
    }

    fn record(hash: &str) -> Recorded {
        Recorded {
            request_hash: hash.into(),
            events: Vec::new(),
            ok: true,
            properties: None,
        }
    }

    #[test]
    fn a_record_survives_the_store_and_a_new_handle_replays_it() {
        let dir = aoi_test::temp_dir("store-replay");
        let mut store = FileStore::new(dir.path().join("idem")).unwrap();
        let lock = store.lock("key/with spaces é").unwrap();
        let Replay::Fresh(recorder) = begin(&mut store, "key/with spaces é", "h1").unwrap() else {
            panic!("a fresh key replays nothing")
        };
        recorder.finish(&mut store, true).unwrap();
        drop(lock);
        let mut again = FileStore::new(dir.path().join("idem")).unwrap();
        let _lock = again.lock("key/with spaces é").unwrap();
        assert!(matches!(
            begin(&mut again, "key/with spaces é", "h1").unwrap(),
            Replay::Replayed(_)
        ));
        // The same key for another request is a conflict, as with any store.
        assert!(begin(&mut again, "key/with spaces é", "h2").is_err());
        // Nothing but the record, the lock and this run's marker is in the directory.
        let names: Vec<String> = fs::read_dir(again.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn a_second_run_with_the_key_waits_for_the_first_and_then_replays() {
        let dir = aoi_test::temp_dir("store-wait");
        let store = FileStore::new(dir.path()).unwrap();
        let first = store.lock("k").unwrap();
        let (tx, rx) = mpsc::channel();
        let other = store.clone();
        let waiter = thread::spawn(move || {
            let mut other = other;
            let _lock = other.lock("k").unwrap();
            tx.send(matches!(
                begin(&mut other, "k", "h").unwrap(),
                Replay::Replayed(_)
            ))
            .unwrap();
        });
        // Still waiting while the first run holds the key.
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        let mut store = store;
        store.save("k", &record("h")).unwrap();
        drop(first);
        assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        waiter.join().unwrap();
    }

    #[test]
    fn a_run_that_died_holding_the_key_leaves_its_outcome_unknown_until_it_expires() {
        let dir = aoi_test::temp_dir("store-died");
        let store = FileStore::new(dir.path()).unwrap();
        // A run that died: its marker stays, its lock went with the process (the kernel
        // releases a dead process's flock).
        fs::write(store.path("k", "pending"), b"").unwrap();
        let err = FileStore::new(dir.path()).unwrap().lock("k").unwrap_err();
        assert_eq!(err.code, IDEMPOTENCY_OUTCOME_UNKNOWN);
        assert_eq!((err.category, err.retryable), (Category::Conflict, false));
        // Past the time to live the key is forgotten and may be used afresh.
        let forgetful = FileStore::new(dir.path()).unwrap().ttl(Duration::ZERO);
        thread::sleep(Duration::from_millis(20));
        assert!(forgetful.lock("k").is_ok());
    }

    #[test]
    fn an_expired_record_is_gone() {
        let dir = aoi_test::temp_dir("store-expired");
        let mut store = FileStore::new(dir.path()).unwrap().ttl(Duration::ZERO);
        store.save("k", &record("h")).unwrap();
        thread::sleep(Duration::from_millis(20));
        assert!(store.load("k").unwrap().is_none());
    }
}
