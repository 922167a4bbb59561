//! Discovery (§3, §10, §16.2, §17): event schemas, input schemas, the capability manifest.

pub mod schema;
