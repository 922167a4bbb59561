//! Without the `validate` feature the verifier checks no published schema: there is no way to
//! give it one, so these are never reached.

use serde_json::{Map, Value};

use super::Verifier;

/// No schema can be given without the `validate` feature.
#[derive(Debug)]
pub(super) enum SchemaCheck {}

impl SchemaCheck {
    pub(super) fn checks_domain(&self) -> bool {
        match *self {}
    }
}

impl Verifier {
    pub(super) fn schema_check(&mut self, _: u64, _: &Value) {}

    pub(super) fn schema_domain(&mut self, _: u64, _: &[u8]) {}

    pub(super) fn merge_schema_findings(&mut self) {}

    pub(super) fn schema_identity(&mut self, _: u64, _: &Map<String, Value>) {}
}
