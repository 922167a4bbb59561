//! End-to-end tests: the real `outline` binary on a database file in a fresh temp dir.

mod db_path;
mod discovery;
mod human;
mod read;
mod support;
mod write;
