//! End-to-end tests: the real `outline` binary on a database file in a fresh temp dir.

mod admin;
mod db_path;
mod discovery;
mod faults;
mod honest;
mod human;
mod moves;
mod read;
mod support;
mod sync;
mod transfer;
mod watch;
mod write;
