//! End-to-end tests of `aoi-coreutils`: the built binary run as a process on real trees, its
//! streams read back through the `aoi` verifier.

mod du;
mod find;
mod grep;
mod hostile;
mod human;
mod ls;
mod read;
mod stat;
mod support;
mod wc;
mod write;
