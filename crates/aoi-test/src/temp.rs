//! Temporary directories for tests: one mechanism for every crate's tests.

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A fresh directory under the system's temp directory, removed with everything in it when
/// dropped (a test that fails keeps nothing behind either). It reads as the [`Path`] it is:
/// `dir.join("x")`, `Command::current_dir(&dir)`.
#[derive(Debug)]
pub struct TempDir(tempfile::TempDir);

/// A fresh directory named `aoi-<tag>-<random>`, removed on drop. Its path is canonical (the
/// system's temp directory with its symbolic links resolved), so that a path a tool prints
/// can be compared with it.
///
/// # Panics
/// When the temp directory cannot be written: a test cannot run without it.
pub fn temp_dir(tag: &str) -> TempDir {
    let base = std::env::temp_dir();
    let base = base.canonicalize().unwrap_or(base);
    let dir = tempfile::Builder::new()
        .prefix(&format!("aoi-{tag}-"))
        .tempdir_in(base)
        .unwrap_or_else(|e| panic!("cannot create a temp dir for {tag}: {e}"));
    TempDir(dir)
}

impl TempDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Keeps the directory after the test (for a process that outlives it), returning its
    /// path.
    pub fn keep(self) -> PathBuf {
        self.0.keep()
    }
}

impl Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.path().as_os_str()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_dir_is_fresh_and_gone_with_everything_in_it_on_drop() {
        let dir = temp_dir("unit");
        assert!(dir.is_dir());
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/file"), b"x").unwrap();
        let path = dir.to_path_buf();
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("aoi-unit-"));
        assert_ne!(path, temp_dir("unit").to_path_buf());
        drop(dir);
        assert!(!path.exists());
    }
}
