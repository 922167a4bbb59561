//! The §17 manifest and input schemas, read through the SDK.

pub use aoi::discover::manifest::{CommandEntry, InputSchema, Manifest};
