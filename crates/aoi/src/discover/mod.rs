//! Discovery (§3, §10, §16.2, §17): event schemas, input schemas, the capability manifest.

pub mod argv;
pub mod capabilities;
pub mod doctor;
pub mod input_schema;
pub mod manifest;
pub mod schema;
