//! Filesystem snapshots, so a check can tell what a tool wrote, removed or changed.
//!
//! Several checks need to know whether a command touched the disk (a read-only command must not
//! write; `--dry-run` must not mutate). A [`Snapshot`] records every entry under a root — regular
//! files by size and SHA-256 of their content, directories, and symlinks by target — without
//! following symlinks, so comparing two snapshots of a sandbox root yields the [`Change`]s a run
//! made anywhere in its HOME, XDG directories and work dir.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// What one path under the root was when the snapshot was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file: its size in bytes and the SHA-256 of its content (`None` when the file
    /// could not be read, e.g. a tool removed its read permission).
    File {
        /// Size in bytes.
        size: u64,
        /// SHA-256 of the content, when readable.
        sha256: Option<[u8; 32]>,
    },
    /// A directory.
    Dir,
    /// A symbolic link and its target (not followed).
    Symlink(PathBuf),
    /// Anything else: a FIFO, socket or device node.
    Other,
}

/// Every entry under a root, keyed by its path relative to the root (the root itself excluded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    entries: BTreeMap<PathBuf, Entry>,
}

/// One difference between two snapshots, by path relative to the root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// The path exists only in the later snapshot.
    Added(PathBuf),
    /// The path exists only in the earlier snapshot.
    Removed(PathBuf),
    /// The path exists in both but its content, size, kind or link target differs.
    Modified(PathBuf),
}

impl Change {
    /// The relative path the change is about.
    pub fn path(&self) -> &Path {
        match self {
            Change::Added(path) | Change::Removed(path) | Change::Modified(path) => path,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Added(path) => write!(f, "added {}", path.display()),
            Change::Removed(path) => write!(f, "removed {}", path.display()),
            Change::Modified(path) => write!(f, "modified {}", path.display()),
        }
    }
}

/// Records everything under `root`, not following symlinks.
///
/// Only a failure to read `root` itself is an error: entries that vanish while the walk runs are
/// skipped, and a directory that cannot be listed is recorded without its contents.
pub fn take(root: &Path) -> io::Result<Snapshot> {
    let mut snapshot = Snapshot::default();
    let top = fs::read_dir(root)?;
    walk(root, Path::new(""), top, &mut snapshot.entries);
    Ok(snapshot)
}

fn walk(
    root: &Path,
    relative: &Path,
    listing: fs::ReadDir,
    entries: &mut BTreeMap<PathBuf, Entry>,
) {
    for dirent in listing.flatten() {
        let rel = relative.join(dirent.file_name());
        let full = root.join(&rel);
        let Ok(meta) = fs::symlink_metadata(&full) else {
            continue;
        };
        let kind = meta.file_type();
        let entry = if kind.is_dir() {
            if let Ok(listing) = fs::read_dir(&full) {
                walk(root, &rel, listing, entries);
            }
            Entry::Dir
        } else if kind.is_file() {
            Entry::File {
                size: meta.len(),
                sha256: sha256_of(&full).ok(),
            }
        } else if kind.is_symlink() {
            match fs::read_link(&full) {
                Ok(target) => Entry::Symlink(target),
                Err(_) => continue,
            }
        } else {
            Entry::Other
        };
        entries.insert(rel, entry);
    }
}

fn sha256_of(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hasher.finalize().into())
}

impl Snapshot {
    /// The entry at `path` (relative to the root), if any.
    #[cfg(test)]
    pub fn get(&self, path: &Path) -> Option<&Entry> {
        self.entries.get(path)
    }

    /// Everything that differs from `self` (before) to `after`, in path order.
    #[cfg(test)]
    pub fn changes(&self, after: &Snapshot) -> Vec<Change> {
        self.changes_ignoring(after, &[])
    }

    /// Like [`changes`](Self::changes), leaving out paths that match any of `patterns`.
    ///
    /// A pattern is a glob on the `/`-separated relative path: `*` matches any run of characters
    /// within one segment, `?` one character, and a `**` segment any number of whole segments
    /// (including none), so `.cache/**` ignores `.cache` and everything below it.
    pub fn changes_ignoring(&self, after: &Snapshot, patterns: &[String]) -> Vec<Change> {
        let ignored = |path: &Path| {
            let segments = path_segments(path);
            patterns
                .iter()
                .any(|pattern| glob_matches(pattern, &segments))
        };
        let mut changes = Vec::new();
        for (path, entry) in &self.entries {
            if ignored(path) {
                continue;
            }
            match after.entries.get(path) {
                None => changes.push(Change::Removed(path.clone())),
                Some(later) if later != entry => changes.push(Change::Modified(path.clone())),
                Some(_) => {}
            }
        }
        for path in after.entries.keys() {
            if !self.entries.contains_key(path) && !ignored(path) {
                changes.push(Change::Added(path.clone()));
            }
        }
        changes.sort_by(|a, b| a.path().cmp(b.path()));
        changes
    }
}

fn path_segments(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// Whether `pattern` (a `/`-separated glob) matches the path made of `segments`.
fn glob_matches(pattern: &str, segments: &[String]) -> bool {
    let parts: Vec<&str> = pattern.split('/').filter(|part| !part.is_empty()).collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match_segments(&parts, &segments)
}

fn match_segments(parts: &[&str], segments: &[&str]) -> bool {
    match parts.split_first() {
        None => segments.is_empty(),
        Some((&"**", rest)) => {
            (0..=segments.len()).any(|skip| match_segments(rest, &segments[skip..]))
        }
        Some((part, rest)) => match segments.split_first() {
            Some((segment, remaining)) => {
                segment_matches(part, segment) && match_segments(rest, remaining)
            }
            None => false,
        },
    }
}

/// Wildcard match of one segment: `*` any run of characters, `?` exactly one.
fn segment_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // Position of the last `*` in the pattern and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        glob_matches(pattern, &path_segments(Path::new(path)))
    }

    #[test]
    fn star_stays_within_a_segment() {
        assert!(matches("*.log", "run.log"));
        assert!(!matches("*.log", "logs/run.log"));
        assert!(matches("logs/*.log", "logs/run.log"));
        assert!(matches("a*b*c", "abbbc"));
        assert!(matches("a*b*c", "a-b-x-c"));
        assert!(!matches("a*b*c", "a-b-x-d"));
        assert!(matches("*", "anything"));
        assert!(!matches("*", "two/segments"));
        assert!(matches("fil?", "file"));
        assert!(!matches("fil?", "fil"));
    }

    #[test]
    fn double_star_spans_segments() {
        assert!(matches("**/*.log", "run.log"));
        assert!(matches("**/*.log", "a/b/c/run.log"));
        assert!(!matches("**/*.log", "a/b/c/run.txt"));
        assert!(matches("home/.cache/**", "home/.cache"));
        assert!(matches("home/.cache/**", "home/.cache/tool/x"));
        assert!(!matches("home/.cache/**", "home/.cachet/x"));
        assert!(matches("a/**/z", "a/z"));
        assert!(matches("a/**/z", "a/b/c/z"));
        assert!(!matches("a/**/z", "a/b/c/y"));
        assert!(matches("**", "any/path/at/all"));
    }

    #[test]
    fn literal_patterns_match_exactly() {
        assert!(matches("work/out.txt", "work/out.txt"));
        assert!(!matches("work/out.txt", "work/out.txt.bak"));
        assert!(!matches("work", "work/out.txt"));
    }

    fn scratch(name: &str) -> io::Result<aoi_test::TempDir> {
        Ok(aoi_test::temp_dir(&format!("lint-snapshot-{name}")))
    }

    #[test]
    fn detects_added_removed_and_modified() -> io::Result<()> {
        let dir = scratch("changes")?;
        fs::write(dir.join("keep"), "same")?;
        fs::write(dir.join("old"), "going away")?;
        fs::write(dir.join("edit"), "before")?;
        fs::create_dir(dir.join("sub"))?;
        std::os::unix::fs::symlink("keep", dir.join("link"))?;
        let before = take(&dir)?;
        assert_eq!(before.get(Path::new("sub")), Some(&Entry::Dir));
        assert_eq!(
            before.get(Path::new("link")),
            Some(&Entry::Symlink(PathBuf::from("keep")))
        );

        fs::remove_file(dir.join("old"))?;
        // Same size, different content: only the digest tells.
        fs::write(dir.join("edit"), "after!")?;
        fs::write(dir.join("sub/new"), "hello")?;
        fs::remove_file(dir.join("link"))?;
        std::os::unix::fs::symlink("edit", dir.join("link"))?;
        let after = take(&dir)?;
        fs::remove_dir_all(&dir)?;

        assert_eq!(
            before.changes(&after),
            vec![
                Change::Modified(PathBuf::from("edit")),
                Change::Modified(PathBuf::from("link")),
                Change::Removed(PathBuf::from("old")),
                Change::Added(PathBuf::from("sub/new")),
            ]
        );
        assert_eq!(after.changes(&after), vec![]);
        assert_eq!(
            before.changes(&after)[3].to_string(),
            format!("added {}", Path::new("sub/new").display())
        );
        Ok(())
    }

    #[test]
    fn ignoring_leaves_out_matching_paths() -> io::Result<()> {
        let dir = scratch("ignore")?;
        let before = take(&dir)?;
        fs::create_dir_all(dir.join("cache/deep"))?;
        fs::write(dir.join("cache/deep/blob"), "x")?;
        fs::write(dir.join("trace.log"), "x")?;
        fs::write(dir.join("result.json"), "{}")?;
        let after = take(&dir)?;
        fs::remove_dir_all(&dir)?;

        let patterns = vec!["cache/**".to_string(), "*.log".to_string()];
        assert_eq!(
            before.changes_ignoring(&after, &patterns),
            vec![Change::Added(PathBuf::from("result.json"))]
        );
        assert_eq!(before.changes(&after).len(), 5);
        Ok(())
    }
}
