//! The `entry` event: one file system entry, as `ls -l`, `find` and `stat` describe it.

use std::fs::{self, FileType, Metadata};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use aoi::{DomainEvent, ErrorEvent};
use schemars::JsonSchema;
use serde::Serialize;

use crate::clock::{epoch_ms, iso8601};
use crate::owners::Names;
use crate::paths::path_text;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A block device.
    BlockDevice,
    /// A character device.
    CharDevice,
}

impl Kind {
    /// The kind of `metadata` (from `symlink_metadata`: a link is a link).
    pub fn of(metadata: &Metadata) -> Kind {
        Kind::of_type(metadata.file_type())
    }

    /// The kind of a file type (a link is a link).
    pub fn of_type(t: FileType) -> Kind {
        if t.is_symlink() {
            Kind::Symlink
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_fifo() {
            Kind::Fifo
        } else if t.is_socket() {
            Kind::Socket
        } else if t.is_block_device() {
            Kind::BlockDevice
        } else if t.is_char_device() {
            Kind::CharDevice
        } else {
            Kind::File
        }
    }

    /// The SGR colour GNU `ls` and `find`'s listing paint a name of this kind in by default,
    /// if any; a regular file is painted only when `executable`.
    pub fn colour(self, executable: bool) -> Option<&'static str> {
        match self {
            Kind::Dir => Some("01;34"),
            Kind::Symlink => Some("01;36"),
            Kind::Fifo => Some("33"),
            Kind::Socket => Some("01;35"),
            Kind::BlockDevice | Kind::CharDevice => Some("01;33"),
            Kind::File => executable.then_some("01;32"),
        }
    }

    /// The letter `ls -l` shows first.
    pub fn letter(self) -> char {
        match self {
            Kind::File => '-',
            Kind::Dir => 'd',
            Kind::Symlink => 'l',
            Kind::Fifo => 'p',
            Kind::Socket => 's',
            Kind::BlockDevice => 'b',
            Kind::CharDevice => 'c',
        }
    }
}

/// One file system entry (a symbolic link is described, not followed).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Entry {
    /// The path as given or found (relative when the walk started from a relative path).
    pub path: String,
    /// The last component of the path.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Size in bytes (of the link itself for a symbolic link).
    pub size: u64,
    /// Disk usage in bytes (512-byte blocks allocated); less than `size` for a sparse file.
    pub disk_bytes: u64,
    /// Permission bits with setuid, setgid and sticky, as octal text: `"0644"`.
    pub mode: String,
    /// The `ls -l` permission string: `"-rw-r--r--"`.
    pub permissions: String,
    /// Hard links.
    pub nlink: u64,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Owner user name (the id as text when it has none).
    pub owner: String,
    /// Owner group name (the id as text when it has none).
    pub group: String,
    /// Last modification, ISO-8601 UTC with milliseconds.
    pub modified: String,
    /// Last modification, milliseconds since the Unix epoch.
    pub modified_ms: i64,
    /// Last access, milliseconds since the Unix epoch.
    pub accessed_ms: i64,
    /// Last status change, milliseconds since the Unix epoch.
    pub changed_ms: i64,
    /// Inode number.
    pub inode: u64,
    /// Where a symbolic link points (as stored, not resolved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Levels below the operand it was found under, 0 for the operand itself (`find`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// The device the entry lives on, `st_dev` (`stat`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u64>,
    /// The device a block or character device entry stands for, `st_rdev` (`stat`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_type: Option<u64>,
    /// The preferred I/O block size, `st_blksize` (`stat`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_block: Option<u64>,
    /// Creation (birth), milliseconds since the Unix epoch, where the file system records it
    /// (`stat`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_ms: Option<i64>,
}

impl DomainEvent for Entry {
    const TYPE: &'static str = "entry";
}

impl Entry {
    /// Describes `path` from its `symlink_metadata`; `name` is the component to show.
    pub fn new(
        path: &Path,
        name: &Path,
        metadata: &Metadata,
        names: &mut Names,
    ) -> Result<Entry, ErrorEvent> {
        let kind = Kind::of(metadata);
        let target = if kind == Kind::Symlink {
            match fs::read_link(path) {
                Ok(t) => Some(path_text(&t)?),
                Err(_) => None,
            }
        } else {
            None
        };
        let modified_ms = metadata.mtime() * 1000 + metadata.mtime_nsec() / 1_000_000;
        Ok(Entry {
            path: path_text(path)?,
            name: path_text(name)?,
            kind,
            size: metadata.len(),
            disk_bytes: metadata.blocks() * 512,
            mode: format!("{:04o}", metadata.mode() & 0o7777),
            permissions: permissions(kind, metadata.mode()),
            nlink: metadata.nlink(),
            uid: metadata.uid(),
            gid: metadata.gid(),
            owner: names.user(metadata.uid()),
            group: names.group(metadata.gid()),
            modified: iso8601(modified_ms),
            modified_ms,
            accessed_ms: metadata.atime() * 1000 + metadata.atime_nsec() / 1_000_000,
            changed_ms: metadata.ctime() * 1000 + metadata.ctime_nsec() / 1_000_000,
            inode: metadata.ino(),
            target,
            depth: None,
            device: None,
            device_type: None,
            io_block: None,
            created_ms: None,
        })
    }

    /// The entry with what only `stat` shows: device, device type, I/O block, birth time.
    pub fn with_stat_details(mut self, metadata: &Metadata) -> Entry {
        self.device = Some(metadata.dev());
        let kind = self.kind;
        if matches!(kind, Kind::BlockDevice | Kind::CharDevice) {
            self.device_type = Some(metadata.rdev());
        }
        self.io_block = Some(metadata.blksize());
        self.created_ms = metadata.created().ok().map(epoch_ms);
        self
    }
}

/// The `ls -l` permission string of a mode.
pub fn permissions(kind: Kind, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(kind.letter());
    let bit = |m: u32, c: char| if mode & m != 0 { c } else { '-' };
    let special = |x: bool, special: bool, on: char, off: char| match (x, special) {
        (true, true) => on,
        (false, true) => off,
        (true, false) => 'x',
        (false, false) => '-',
    };
    s.push(bit(0o400, 'r'));
    s.push(bit(0o200, 'w'));
    s.push(special(mode & 0o100 != 0, mode & 0o4000 != 0, 's', 'S'));
    s.push(bit(0o040, 'r'));
    s.push(bit(0o020, 'w'));
    s.push(special(mode & 0o010 != 0, mode & 0o2000 != 0, 's', 'S'));
    s.push(bit(0o004, 'r'));
    s.push(bit(0o002, 'w'));
    s.push(special(mode & 0o001 != 0, mode & 0o1000 != 0, 't', 'T'));
    s
}

/// `modified_ms` from metadata, for sorting without building an entry.
pub fn modified_ms(metadata: &Metadata) -> i64 {
    metadata
        .modified()
        .map(epoch_ms)
        .unwrap_or(metadata.mtime() * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_gnu_ls_defaults() {
        assert_eq!(Kind::Dir.colour(false), Some("01;34"));
        assert_eq!(Kind::Symlink.colour(false), Some("01;36"));
        assert_eq!(Kind::Fifo.colour(false), Some("33"));
        assert_eq!(Kind::CharDevice.colour(false), Some("01;33"));
        assert_eq!(Kind::File.colour(true), Some("01;32"));
        assert_eq!(Kind::File.colour(false), None);
    }

    #[test]
    fn permission_strings_are_those_of_ls() {
        assert_eq!(permissions(Kind::File, 0o644), "-rw-r--r--");
        assert_eq!(permissions(Kind::Dir, 0o1777), "drwxrwxrwt");
        assert_eq!(permissions(Kind::File, 0o4644), "-rwSr--r--");
        assert_eq!(permissions(Kind::File, 0o2755), "-rwxr-sr-x");
        assert_eq!(permissions(Kind::Symlink, 0o777), "lrwxrwxrwx");
    }
}
