//! The verifier's published-schema half: every event checked against a tool's event schema
//! (`aoi verify --schema`, lint check 4), domain events on worker threads. Compiled only with
//! the `validate` feature, which brings the JSON Schema validator.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{major, Finding, FindingCode, Level, Verifier};
use crate::discover::schema::EventValidator;
use crate::read::schema_pool::{self, EventCheck, SchemaPool};

/// An event schema to check every event against, and the identity it describes.
#[derive(Debug)]
pub(super) struct SchemaCheck {
    validator: Arc<EventValidator>,
    /// Validates domain events on worker threads; `None` validates them in [`Verifier::line`].
    pool: Option<SchemaPool>,
    name: Option<String>,
    version: Option<String>,
    /// False once the stream turned out to speak another schema: its domain events are not
    /// interpreted (§5), framework events still are.
    domain: bool,
}

/// A tool's published event schema, compiled once to verify many streams with
/// [`Verifier::with_compiled`] (compiling is most of the cost of verifying a short stream).
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    validator: Arc<EventValidator>,
    check: Arc<EventCheck>,
    name: Option<String>,
    version: Option<String>,
}

impl CompiledSchema {
    /// Compiles `schema` (see [`Verifier::with_schema`]).
    pub fn new(schema: &Value) -> Result<CompiledSchema, crate::discover::schema::SchemaError> {
        let validator = Arc::new(EventValidator::new(schema)?);
        let x = schema.get("x-aoi");
        let text = |k: &str| {
            x.and_then(|x| x.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Ok(CompiledSchema {
            check: Arc::new(EventCheck::new(Arc::clone(&validator), schema.clone())),
            validator,
            name: text("schema_name"),
            version: text("schema_version"),
        })
    }
}

impl SchemaCheck {
    /// Whether domain events are still checked: not once the stream speaks another schema.
    pub(super) fn checks_domain(&self) -> bool {
        self.domain
    }
}

impl Verifier {
    /// Also validates every event against `schema`, a tool's published event schema (its
    /// `x-aoi.schema_name`/`schema_version` are compared with the stream's meta, §5).
    ///
    /// Past the first 256 KiB of domain events, they are validated on worker threads (one
    /// fewer than cores, at most 4), and on the verifier's own thread when the workers are behind;
    /// [`Verifier::finish`] waits for them, and the report is the one a single thread writes.
    pub fn with_schema(
        self,
        schema: &Value,
    ) -> Result<Verifier, crate::discover::schema::SchemaError> {
        Ok(self.with_compiled(&CompiledSchema::new(schema)?))
    }

    /// Like [`Verifier::with_schema`], with a schema compiled once for many streams.
    pub fn with_compiled(mut self, compiled: &CompiledSchema) -> Verifier {
        let pool = SchemaPool::new(
            Arc::clone(&compiled.check) as Arc<dyn schema_pool::LineCheck>,
            schema_pool::default_workers(),
            schema_pool::DEFAULT_BATCH_BYTES,
            self.opts.max_findings,
        );
        self.schema = Some(SchemaCheck {
            validator: Arc::clone(&compiled.validator),
            pool: Some(pool),
            name: compiled.name.clone(),
            version: compiled.version.clone(),
            domain: true,
        });
        self
    }

    /// Sets how domain events are schema-checked against `schema` (the one given to
    /// [`Verifier::with_schema`]): on `workers` threads fed batches of about `batch_bytes`, or in
    /// [`Verifier::line`] itself when `workers` is 0.
    #[cfg(test)]
    pub(super) fn schema_workers(
        mut self,
        schema: &Value,
        workers: usize,
        batch_bytes: usize,
    ) -> Verifier {
        let cap = self.opts.max_findings;
        if let Some(check) = &mut self.schema {
            check.pool = (workers > 0).then(|| {
                SchemaPool::new(
                    Arc::new(EventCheck::new(
                        Arc::clone(&check.validator),
                        schema.clone(),
                    )),
                    workers,
                    batch_bytes,
                    cap,
                )
            });
        }
        self
    }

    pub(super) fn schema_check(&mut self, number: u64, value: &Value) {
        let Some(check) = &self.schema else { return };
        if let Some(message) = schema_pool::schema_problem(&check.validator, value) {
            self.violation(FindingCode::EventSchemaInvalid, number, message);
        }
    }

    /// Validates the domain event on line `number` against the schema: queued for the workers,
    /// whose findings [`Verifier::finish`] merges, or here when there are none.
    pub(super) fn schema_domain(&mut self, number: u64, bytes: &[u8]) {
        let Some(check) = &mut self.schema else {
            return;
        };
        if let Some(pool) = &mut check.pool {
            pool.push(number, bytes);
            return;
        }
        let parsed = serde_json::from_slice::<Value>(bytes);
        if let Some((code, message)) = schema_pool::line_problem(&check.validator, parsed) {
            self.violation(code, number, message);
        }
    }

    /// Waits for the schema workers and merges their findings into the report, in the order a
    /// single thread would have reported them: a domain line's schema finding comes last among
    /// that line's findings. The cap applies to the merged sequence.
    pub(super) fn merge_schema_findings(&mut self) {
        let Some(pool) = self.schema.as_mut().and_then(|s| s.pool.take()) else {
            return;
        };
        let found = pool.finish();
        let schema_total = found.kept.len() as u64 + found.dropped;
        // Every schema finding is a violation.
        self.violations += schema_total;
        let total = self.findings.len() as u64 + self.suppressed + schema_total;
        let ours = std::mem::take(&mut self.findings);
        let mut merged = Vec::with_capacity(ours.len() + found.kept.len());
        let mut theirs = found.kept.into_iter().peekable();
        let as_finding = |f: schema_pool::SchemaFinding| Finding {
            code: f.code,
            level: Level::Violation,
            line: Some(f.line),
            section: f.code.section().to_owned(),
            message: f.message,
        };
        for finding in ours {
            // Findings before `finish` all carry the line being read.
            let line = finding.line.unwrap_or(u64::MAX);
            while let Some(f) = theirs.next_if(|f| f.line < line) {
                merged.push(as_finding(f));
            }
            merged.push(finding);
        }
        merged.extend(theirs.map(as_finding));
        merged.truncate(self.opts.max_findings);
        self.suppressed = total - merged.len() as u64;
        self.findings = merged;
    }

    pub(super) fn schema_identity(&mut self, number: u64, meta: &Map<String, Value>) {
        let Some(check) = &self.schema else { return };
        let stream_name = meta.get("schema_name").and_then(Value::as_str);
        let stream_version = meta.get("schema_version").and_then(Value::as_str);
        let (expected_name, expected_version) = (check.name.clone(), check.version.clone());
        let name_differs = matches!((stream_name, &expected_name), (Some(a), Some(b)) if a != b);
        let major_differs = matches!((stream_version, &expected_version), (Some(a), Some(b)) if major(a) != major(b));
        let minor_differs =
            matches!((stream_version, &expected_version), (Some(a), Some(b)) if a != b);
        let describe =
            |n: Option<&str>, v: Option<&str>| format!("{}@{}", n.unwrap_or("?"), v.unwrap_or("?"));
        let message = format!(
            "the stream speaks {} but is checked against {}",
            describe(stream_name, stream_version),
            describe(expected_name.as_deref(), expected_version.as_deref())
        );
        if name_differs || major_differs {
            if let Some(check) = &mut self.schema {
                check.domain = false;
            }
            self.violation(
                FindingCode::SchemaIdentityMismatch,
                number,
                format!("{message}: domain events are not interpreted (§5)"),
            );
        } else if minor_differs {
            self.notice(FindingCode::SchemaIdentityMismatch, number, message);
        }
    }
}
