//! The envelope and the first line: `aoi.seq`, `aoi.run` and `aoi.t` (§8.1), the fields each
//! framework type may carry (§8.3), and the `aoi:meta` that names the run (§5).

use serde_json::{Map, Value};

use super::{major, SeqMode, Verifier, IDENTITY_FIELDS};
use crate::read::finding::FindingCode;
use crate::read::head::Head;
use crate::surface::redact::Redactor;
use crate::wire::{Meta, AOI_VERSION};

impl Verifier {
    pub(super) fn envelope(&mut self, number: u64, head: &Head<'_>) {
        if head.envelope_not_object {
            self.violation(
                FindingCode::EnvelopeNotObject,
                number,
                "`aoi` is not an object",
            );
        }
        if head.seq_invalid {
            self.violation(
                FindingCode::SeqInvalid,
                number,
                "`aoi.seq` is not a non-negative integer",
            );
        }
        let has_seq = head.seq.is_some() || head.seq_invalid;
        if self.seq_mode == SeqMode::Unknown {
            self.seq_mode = if has_seq {
                SeqMode::Present
            } else {
                SeqMode::Absent
            };
        }
        match (self.seq_mode, head.seq) {
            (SeqMode::Present, Some(seq)) => {
                let unnumbered = std::mem::take(&mut self.unnumbered);
                if seq < self.next_seq && seq + unnumbered >= self.next_seq {
                    // The non-event lines before it took no seq numbers: no gap, no repeat
                    // (they are check 2's violations, not a loss).
                    self.took_no_seq += self.next_seq - seq;
                } else if seq != self.next_seq {
                    if number == 1 || (self.next_seq == 0 && seq != 0) {
                        self.violation(
                            FindingCode::SeqNotZeroBased,
                            number,
                            format!("first `aoi.seq` is {seq}, not 0"),
                        );
                    } else if seq > self.next_seq {
                        self.violation(
                            FindingCode::SeqGap,
                            number,
                            format!(
                                "`aoi.seq` jumps from {} to {seq}: {} line(s) lost",
                                self.next_seq.saturating_sub(1),
                                seq - self.next_seq
                            ),
                        );
                    } else {
                        self.violation(
                            FindingCode::SeqGap,
                            number,
                            format!(
                                "`aoi.seq` {seq} repeats or goes back (expected {})",
                                self.next_seq
                            ),
                        );
                    }
                }
                self.next_seq = seq + 1;
            }
            (SeqMode::Present, None) => {
                if !head.seq_invalid {
                    self.violation(
                        FindingCode::SeqMissing,
                        number,
                        "line has no `aoi.seq` while the stream numbers its lines",
                    );
                }
                self.next_seq += 1;
            }
            (SeqMode::Absent, Some(_)) => {
                self.violation(
                    FindingCode::SeqMissing,
                    number,
                    "`aoi.seq` appears on a later line but not on the first",
                );
            }
            _ => {}
        }
        if head.run_invalid {
            self.violation(FindingCode::RunMissing, number, "`aoi.run` is not a string");
        }
        match (&head.run, has_seq) {
            (Some(run), _) => match &self.run {
                Some(first) if first.as_str() != run.as_ref() => {
                    let message = format!("`aoi.run` changes from {first:?} to {run:?}");
                    self.violation(FindingCode::RunChanged, number, message);
                }
                Some(_) => {}
                None => {
                    if !is_ulid(run.as_ref()) {
                        let message = format!(
                            "`aoi.run` {:?} is not a ULID (26 characters of Crockford base32), which §8.1 recommends",
                            run.as_ref()
                        );
                        self.notice(FindingCode::RunNotUlid, number, message);
                    }
                    self.run = Some(run.as_ref().to_owned());
                }
            },
            (None, true) if !head.run_invalid => {
                self.violation(
                    FindingCode::RunMissing,
                    number,
                    "`aoi.seq` without `aoi.run`",
                );
            }
            _ => {}
        }
    }

    /// §8.1: tool additions to a framework event go in `properties`. A top-level field that
    /// v1.0-alpha does not define is a violation in a stream that declares v1.0-alpha (or no
    /// version), and a notice in one that declares another 1.x, which may define more.
    /// The envelope's other keys (§8.1): `t` a non-negative number, `trace_id` a string, no key
    /// that this version does not define (a violation in a v1.0-alpha stream, a notice in one
    /// declaring another 1.x), and `type`, `aoi` and the envelope's keys named once.
    pub(super) fn envelope_keys(&mut self, number: u64, head: &Head<'_>, duplicates: bool) {
        if duplicates && head.duplicate_key {
            self.violation(
                FindingCode::DuplicateKey,
                number,
                "`type`, `aoi` or a key of `aoi` appears twice: consumers disagree on which occurrence wins",
            );
        }
        if head.envelope_field_invalid {
            self.violation(
                FindingCode::EnvelopeFieldInvalid,
                number,
                "`aoi.t` must be a non-negative number of milliseconds and `aoi.trace_id` a string",
            );
        }
        if head.envelope_extra {
            let message = "`aoi` holds a key v1.0-alpha does not define (only seq, run, t, trace_id): the envelope is reserved to the framework";
            if self.other_minor {
                self.notice(FindingCode::EnvelopeExtraField, number, message);
            } else {
                self.violation(FindingCode::EnvelopeExtraField, number, message);
            }
        }
    }

    pub(super) fn extra_fields(&mut self, number: u64, ty: &str, fields: &Map<String, Value>) {
        let (known, closed) = match framework_fields(ty) {
            Some(known) => known,
            None => return,
        };
        let extra: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|k| !matches!(*k, "type" | "aoi" | "properties" | "seq" | "run"))
            // Reported as V02_ERROR_UPSTREAM on an error.
            .filter(|k| !(ty == "aoi:error" && *k == "upstream"))
            .filter(|k| !known.contains(k))
            .collect();
        if extra.is_empty() {
            return;
        }
        let message = format!(
            "{ty} has top-level field(s) v1.0-alpha does not define ({}); tool additions belong in `properties`",
            extra.join(", ")
        );
        if closed && !self.other_minor {
            self.violation(FindingCode::FrameworkExtraField, number, message);
        } else {
            self.notice(FindingCode::FrameworkExtraField, number, message);
        }
    }

    pub(super) fn meta(&mut self, number: u64, fields: Map<String, Value>) {
        if self.meta_line.is_some() {
            self.violation(
                FindingCode::MetaRepeated,
                number,
                "a second aoi:meta: a stream carries at most one",
            );
            return;
        }
        self.meta_line = Some(number);
        if number != 1 {
            self.violation(
                FindingCode::MetaNotFirst,
                number,
                "aoi:meta is not the first line",
            );
        }
        self.identity(number, "aoi:meta", &fields);
        // §11 gives `args` no shape: read as the reader reads it, values kept.
        let mut read = fields.clone();
        crate::read::event::args_as_strings(&mut read);
        if let Err(e) = serde_json::from_value::<Meta>(Value::Object(read.clone())) {
            self.violation(
                FindingCode::MetaFieldInvalid,
                number,
                format!("aoi:meta has a field of the wrong type: {e}"),
            );
        }
        self.echoed_args(number, &read);
        self.meta = Some(fields);
    }

    /// §11 "If arguments are included, the tool MUST redact sensitive values": `aoi:meta.args`
    /// is judged by the SDK's redactor, whatever marker the producer hid a value with. The
    /// finding names the position, never the value.
    fn echoed_args(&mut self, number: u64, fields: &Map<String, Value>) {
        let Some(Value::Array(args)) = fields.get("args") else {
            return;
        };
        let Some(args) = args
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()
        else {
            return; // not strings after reading: cannot happen
        };
        let raw = Redactor::new().unredacted_args(&args);
        if !raw.is_empty() {
            let at: Vec<String> = raw.iter().map(usize::to_string).collect();
            self.violation(
                FindingCode::ArgsNotRedacted,
                number,
                format!(
                    "aoi:meta.args echoes a sensitive value unredacted at position {}",
                    at.join(", ")
                ),
            );
        }
    }

    pub(super) fn identity(&mut self, number: u64, ty: &str, fields: &Map<String, Value>) {
        let missing: Vec<&str> = IDENTITY_FIELDS
            .into_iter()
            .filter(|k| !fields.get(*k).is_some_and(Value::is_string))
            .collect();
        if !missing.is_empty() {
            self.notice(
                FindingCode::IdentityIncomplete,
                number,
                format!("{ty} lacks {}: the Versioned factor needs the identity triple on meta and summary", missing.join(", ")),
            );
        }
        if let Some(version) = fields.get("aoi_version").and_then(Value::as_str) {
            if major(version) != major(AOI_VERSION) {
                // §5: framework events may only be interpreted when the AOI major matches; a
                // verifier that cannot interpret them cannot vouch for the stream.
                self.violation(
                    FindingCode::AoiVersionUnknown,
                    number,
                    format!(
                        "aoi_version {version:?} has a major other than {}: its framework events cannot be interpreted",
                        major(AOI_VERSION)
                    ),
                );
            }
        }
    }
}

/// The top-level fields v1.0-alpha defines on a framework event type besides `type`, `aoi` and
/// `properties`, and whether the list is closed (the spec fixes it) or only this verifier's
/// reading of types the spec names without listing fields (`docs/verifier.md`).
fn framework_fields(ty: &str) -> Option<(&'static [&'static str], bool)> {
    const ERROR: &[&str] = &[
        "category",
        "code",
        "message",
        "retryable",
        "retry_after_ms",
        "domain",
        "origin",
        "scope",
        "target",
        "item_index",
        "line_number",
        "field",
        "wrapped",
        "hint",
        "docs",
        "details",
    ];
    Some(match ty {
        // §8.3 example, §5 identity, §11 args.
        "aoi:meta" => (
            &[
                "tool",
                "tool_version",
                "aoi_version",
                "schema_name",
                "schema_version",
                "command",
                "args",
                "args_redacted",
                "input_fingerprint",
            ][..],
            true,
        ),
        // §8.3 table and example, §5 identity, §13.1.
        "aoi:summary" => (
            &[
                "ok",
                "reason",
                "event_count",
                "count",
                "input_count",
                "warning_count",
                "error_count",
                "partial",
                "truncated",
                "next_cursor",
                "elapsed_ms",
                "caused_by",
                "upstream",
                "tool",
                "tool_version",
                "aoi_version",
                "schema_name",
                "schema_version",
            ][..],
            true,
        ),
        // §9.1.
        "aoi:error" => (ERROR, true),
        // The recoverable counterpart of aoi:error (§2, §13.1 forward both with `origin`): the
        // same field names, none required.
        "aoi:warning" => (ERROR, true),
        // §8.3 example, plus §9.1's informational `hint`.
        "aoi:check" => (&["name", "ok", "severity", "detail", "hint"][..], true),
        // The spec names these types without fields: this verifier's reading, notices only.
        "aoi:plan" => (&["action", "target", "detail"][..], false),
        "aoi:progress" => (&["completed", "total", "unit", "message"][..], false),
        "aoi:heartbeat" => (&["interval_ms"][..], false),
        _ => return None,
    })
}

/// True for a ULID's text: 26 characters of Crockford's base32 (no I, L, O or U; either case),
/// the first at most `7` so the 128 bits do not overflow (§8.1 "ULID RECOMMENDED").
fn is_ulid(run: &str) -> bool {
    run.len() == 26
        && run.starts_with(|c: char| ('0'..='7').contains(&c))
        && run.chars().all(|c| {
            c.is_ascii_digit()
                || (c.is_ascii_alphabetic()
                    && !matches!(c.to_ascii_uppercase(), 'I' | 'L' | 'O' | 'U'))
        })
}
