//! The audit events of the write commands (§14.5): every path created, changed or removed is
//! named by one of them.
//!
//! Paths are written **as given** on the command line, joined lexically with the names found
//! under them (`src/a` → `backup/a`), never made absolute nor normalized: the same path a
//! person typed, the same path `ls` and `find` would report from the same directory. They are
//! stable for a given working directory, which is why the working directory is part of an
//! idempotent request (see [`super`]).

use aoi::DomainEvent;
use schemars::JsonSchema;
use serde::Serialize;

use crate::entry::Kind;

/// `created`: a path that did not exist and now does (`mkdir`, `touch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Created {
    /// The path created, as given: the entry's natural identifier.
    pub path: String,
    /// What was created.
    pub kind: Kind,
}

impl DomainEvent for Created {
    const TYPE: &'static str = "created";
}

/// What a `changed` event changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The access and modification times (`touch` on an existing path).
    Times,
}

/// `changed`: an existing path whose metadata changed (`touch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Changed {
    /// The path changed, as given: the entry's natural identifier.
    pub path: String,
    /// What changed.
    pub what: Change,
    /// The new modification time, ISO-8601 UTC with milliseconds.
    pub modified: String,
}

impl DomainEvent for Changed {
    const TYPE: &'static str = "changed";
}

/// `removed`: a path that existed and no longer does (`rm`), one event per entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Removed {
    /// The path removed, as given or found under an operand: the entry's natural identifier.
    pub path: String,
    /// What it was.
    pub kind: Kind,
}

impl DomainEvent for Removed {
    const TYPE: &'static str = "removed";
}

/// `moved`: one operand of `mv`, renamed (with everything under it) from one path to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Moved {
    /// The path it had, as given: the moved entry's former identifier.
    pub from: String,
    /// The path it has now: the moved entry's natural identifier.
    pub to: String,
    /// What was moved.
    pub kind: Kind,
    /// An entry at `to` was replaced (`-f`).
    pub replaced: bool,
    /// `from` and `to` are on different file systems: the entry was copied (with its mode and
    /// times) and the original removed.
    pub across_filesystems: bool,
}

impl DomainEvent for Moved {
    const TYPE: &'static str = "moved";
}

/// `copied`: one entry written by `cp` (each file, link and directory of a tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Copied {
    /// The path copied from.
    pub from: String,
    /// The path of the copy: the copy's natural identifier.
    pub to: String,
    /// What was copied (a symbolic link is copied as a link under `-r`).
    pub kind: Kind,
    /// Bytes of file data written (0 for a directory or a link).
    pub bytes: u64,
    /// An existing file at `to` was replaced (`-f`).
    pub replaced: bool,
}

impl DomainEvent for Copied {
    const TYPE: &'static str = "copied";
}
