//! Process containment for programs that run other tools (`aoi lint`'s sandboxes, `aoi mcp`'s
//! calls, and every harness to come): nothing a run started may outlive it.
//!
//! A process group is not a container: a descendant can leave it (`setsid`, a double fork into
//! a new session) and outlive the run, where a group kill never reaches it. So the program
//! puts a marker variable in the environment of every process it starts, which every
//! descendant inherits, and after the run [`sweep`] scans `/proc` ([`proc`]) for live
//! processes of this user that carry the run's marker and kills them, scan after scan until
//! one finds nothing new (a process forked between a scan and its kill is found by the next).
//! A descendant that also scrubs its environment escapes the marker; a sweep can also take
//! the processes whose working directory is inside given roots, and every child of this
//! process.
//!
//! Linux only: other systems have no `/proc` to read, and the crate is empty there.

#![deny(missing_docs)]

#[cfg(target_os = "linux")]
pub mod proc;
#[cfg(target_os = "linux")]
mod sweep;

#[cfg(target_os = "linux")]
pub use sweep::{sweep, timespec, Killed, Reapable, Reaper, Selector, Sweep};
