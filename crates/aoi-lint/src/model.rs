//! What lint reports: the sixteen checks of §18.2, the ten factors, and one result per
//! (check × command).

use std::fmt;
use std::time::Duration;

use aoi::read::{Finding, FindingCode, Level};
use serde::Serialize;

/// One of the ten Machine Mode factors a check maps to (§18.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Factor {
    /// Machine output is typed JSONL events.
    Typed,
    /// Schema and capabilities without credentials, network or side effects.
    Discoverable,
    /// Consumers can process records incrementally.
    Streamable,
    /// Reads have limits, cursors and truncation signals.
    Bounded,
    /// Destructive work is explicit; secrets are redacted.
    Safe,
    /// Writes can be retried without doubling their effect.
    Idempotent,
    /// Mutations say what they changed, with stable ids.
    Auditable,
    /// Completion, failure and truncation are explicit and checkable.
    Verifiable,
    /// Pipes, signals and upstream streams behave predictably.
    Composable,
    /// The schema version is reported and negotiable.
    Versioned,
}

impl Factor {
    /// Every factor, in the order the badge lists them.
    pub const ALL: [Factor; 10] = [
        Factor::Typed,
        Factor::Discoverable,
        Factor::Streamable,
        Factor::Bounded,
        Factor::Safe,
        Factor::Idempotent,
        Factor::Auditable,
        Factor::Verifiable,
        Factor::Composable,
        Factor::Versioned,
    ];

    /// The factor's name, capitalised as the spec writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Factor::Typed => "Typed",
            Factor::Discoverable => "Discoverable",
            Factor::Streamable => "Streamable",
            Factor::Bounded => "Bounded",
            Factor::Safe => "Safe",
            Factor::Idempotent => "Idempotent",
            Factor::Auditable => "Auditable",
            Factor::Verifiable => "Verifiable",
            Factor::Composable => "Composable",
            Factor::Versioned => "Versioned",
        }
    }
}

impl fmt::Display for Factor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The number of a §18.2 check, 1 to 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct CheckId(u8);

impl CheckId {
    /// The check numbered `n`, if there is one.
    pub const fn new(n: u8) -> Option<CheckId> {
        if n >= 1 && n <= 16 {
            Some(CheckId(n))
        } else {
            None
        }
    }

    /// Its number.
    pub const fn number(self) -> u8 {
        self.0
    }

    /// What §18.2 says of it.
    pub fn info(self) -> &'static CheckInfo {
        &CHECKS[usize::from(self.0 - 1)]
    }

    /// Every check, 1 to 16.
    pub fn all() -> impl Iterator<Item = CheckId> {
        (1..=16).map(CheckId)
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A check as §18.2 defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckInfo {
    /// Its number.
    pub id: CheckId,
    /// A short name, e.g. `"discovery"`.
    pub name: &'static str,
    /// What it checks, in one line.
    pub title: &'static str,
    /// The factors it maps to.
    pub factors: &'static [Factor],
    /// The spec sections it enforces.
    pub sections: &'static str,
    /// Its row of the spec's §18.2 table, word for word: the sentence a failure of it breaks.
    pub quote: &'static str,
}

/// The sixteen checks of §18.2, in order.
pub const CHECKS: [CheckInfo; 16] = [
    CheckInfo {
        id: CheckId(1),
        name: "discovery",
        title: "schema, capabilities and input-schema work without credentials or network, are valid, and match what the command does (a read-only command writes nothing in any probe)",
        factors: &[Factor::Discoverable],
        sections: "§3, §10, §16.2, §17",
        quote: "`schema --output json` succeeds without credentials or network. Schema is valid JSON Schema. `capabilities --output json` succeeds if advertised.",
    },
    CheckInfo {
        id: CheckId(2),
        name: "jsonl",
        title: "machine mode writes only JSON objects, one per line, each with a type, and no ANSI or prose",
        factors: &[Factor::Typed],
        sections: "§2, §8.1",
        quote: "Machine mode emits only valid JSONL objects to stdout. Every event has `type`. No ANSI/control/prose pollution.",
    },
    CheckInfo {
        id: CheckId(3),
        name: "completion",
        title: "a finite success exits 0 with a terminal aoi:summary ok:true; a missing summary is a failure",
        factors: &[Factor::Verifiable],
        sections: "§4, §4.1, §6",
        quote: "Finite success exits 0 with terminal `aoi:summary.ok=true`. EOF without `aoi:summary` is detected as failure.",
    },
    CheckInfo {
        id: CheckId(4),
        name: "framework-schema",
        title: "aoi:meta, aoi:summary, aoi:warning, aoi:error and aoi:check validate against the declared schema",
        factors: &[Factor::Typed, Factor::Verifiable],
        sections: "§5, §8.3, §10",
        quote: "`aoi:meta`, `aoi:summary`, `aoi:warning`, `aoi:error`, and `aoi:check` events validate against the declared schema when emitted.",
    },
    CheckInfo {
        id: CheckId(5),
        name: "errors",
        title: "malformed usage exits non-zero; every aoi:error has category, code, message and retryable, retry_after_ms only when retryable",
        factors: &[Factor::Verifiable],
        sections: "§6, §9",
        quote: "Malformed usage exits non‑zero. Every `aoi:error` carries `category`, `code`, `message`, and `retryable`. `retry_after_ms` is absent whenever `retryable` is false. No error uses the removed `partial` category.",
    },
    CheckInfo {
        id: CheckId(6),
        name: "confirmation",
        title: "destructive commands refuse without confirmation, by every selector; --dry-run emits aoi:plan and changes nothing",
        factors: &[Factor::Safe],
        sections: "§14.2, §14.3",
        quote: "Destructive commands refuse to run without confirmation. Dry‑run emits `aoi:plan` events and performs no side effects when advertised.",
    },
    CheckInfo {
        id: CheckId(7),
        name: "idempotency",
        title: "the same --idempotency-key replays the prior result (a replay marker allowed) without doubling the effect",
        factors: &[Factor::Idempotent],
        sections: "§14.4",
        quote: "Mutations accept an `--idempotency-key` and replay returns the prior result without doubling the effect.",
    },
    CheckInfo {
        id: CheckId(8),
        name: "audit-ids",
        title: "mutating events carry ids (or the natural key given) for what they created, updated or deleted, the same on a replay; two reads name the same ids",
        factors: &[Factor::Auditable],
        sections: "§14.5",
        quote: "Mutating events carry stable IDs for created/updated/deleted resources.",
    },
    CheckInfo {
        id: CheckId(9),
        name: "redaction",
        title: "secrets in the environment, secret flags and URLs never appear on stdout or stderr, raw or encoded",
        factors: &[Factor::Safe],
        sections: "§11",
        quote: "Known secret‑looking args are not echoed raw in output.",
    },
    CheckInfo {
        id: CheckId(10),
        name: "pipes-and-signals",
        title: "an early pipe close prints no stack trace; SIGINT/SIGTERM end with reason cancelled",
        factors: &[Factor::Composable],
        sections: "§7",
        quote: "Early pipe close does not produce stack traces. SIGINT/SIGTERM produce a `reason:\"cancelled\"` summary when safe.",
    },
    CheckInfo {
        id: CheckId(11),
        name: "pagination",
        title: "--limit and cursors: truncated and next_cursor agree, pages have no duplicates or gaps, the default page says when it is cut",
        factors: &[Factor::Bounded, Factor::Streamable],
        sections: "§15",
        quote: "Commands advertising `--limit` report `truncated` and cursor behavior consistently.",
    },
    CheckInfo {
        id: CheckId(12),
        name: "input-modes",
        title: "a malformed JSONL line after good records is handled as the declared mode says: fail-fast writes nothing, continue-on-error goes on",
        factors: &[Factor::Composable],
        sections: "§12",
        quote: "Malformed input JSONL line handling matches declared mode.",
    },
    CheckInfo {
        id: CheckId(13),
        name: "versioning",
        title: "schema_version is in aoi:meta and aoi:summary, and --schema-version is honoured: both say it and the events follow that version's schema",
        factors: &[Factor::Versioned],
        sections: "§5, §5.1",
        quote: "`schema_version` is reported in `aoi:meta` and is honored when negotiated.",
    },
    CheckInfo {
        id: CheckId(14),
        name: "one-meta-one-summary",
        title: "at most one aoi:meta, first, and at most one aoi:summary, last",
        factors: &[Factor::Composable, Factor::Verifiable],
        sections: "§4, §13.1",
        quote: "A stream carries at most one `aoi:meta` (first if present) and at most one `aoi:summary` (last if present).",
    },
    CheckInfo {
        id: CheckId(15),
        name: "sequence",
        title: "aoi.seq is contiguous from 0 under one aoi.run and reconciles with event_count",
        factors: &[Factor::Verifiable],
        sections: "§8.1, §8.3",
        quote: "When `aoi.seq` is emitted it is contiguous from 0, `aoi.run` accompanies it, and both reconcile with `aoi:summary.event_count`; when absent, the Verifiable factor is not claimed.",
    },
    CheckInfo {
        id: CheckId(16),
        name: "upstream",
        title: "fed an upstream stream: no upstream meta or summary forwarded, origin on forwarded errors and warnings, retry fields in caused_by, a cut upstream is a failure",
        factors: &[Factor::Composable],
        sections: "§13, §13.1",
        quote: "An AOI producer fed a known upstream stream forwards no upstream `aoi:meta` or `aoi:summary`, tags any forwarded `aoi:error`/`aoi:warning` with `origin`, and reproduces upstream retry fields in `aoi:summary.caused_by` when failing.",
    },
];

/// The check a verifier finding belongs to: stream rules are judged by the verifier, and each
/// of its findings counts against exactly one check.
pub const fn check_of(code: FindingCode) -> CheckId {
    use FindingCode as F;
    CheckId(match code {
        F::InvalidUtf8
        | F::InvalidJson
        | F::EmptyLine
        | F::NotAnObject
        | F::TypeMissing
        | F::TypeNotString
        | F::AnsiEscape
        | F::CrlfLineEnding
        | F::LineTooLong
        | F::NestingTooDeep
        | F::NumberOutOfRange
        | F::LoneSurrogate
        | F::DuplicateKey
        | F::LineNotRelayed
        | F::UnknownFrameworkEvent
        | F::FrameworkExtraField
        | F::V02FlatEnvelope => 2,
        F::TruncatedLine
        | F::MetaMissing
        | F::SummaryMissing
        | F::OkMissing
        | F::OkNotBoolean
        | F::ReasonMissing
        | F::ReasonInvalid
        | F::OkAfterProcessError
        | F::SkippedWithEvents
        | F::ProcessFailed
        | F::StreamNotStarted
        | F::ExitStatusMismatch => 3,
        F::MetaFieldInvalid
        | F::IdentityIncomplete
        | F::IdentityMismatch
        | F::AoiVersionUnknown
        | F::SummaryFieldInvalid
        | F::CheckInvalid
        | F::WarningFieldInvalid
        | F::CausedByInvalid
        | F::CausedByOnSuccess
        | F::UpstreamInvalid
        | F::V02UpstreamShape
        | F::EventSchemaInvalid
        | F::SchemaIdentityMismatch => 4,
        F::ErrorCategoryMissing
        | F::ErrorCategoryInvalid
        | F::ErrorCodeInvalid
        | F::ErrorMessageInvalid
        | F::ErrorRetryableMissing
        | F::RetryAfterNotRetryable
        | F::RetryAfterInvalid
        | F::ErrorFieldInvalid
        | F::V02CategoryTemporary
        | F::V02CategoryPartial
        | F::V02ErrorUpstream
        | F::ItemErrorIndexMissing
        | F::ErrorDomainMissing
        | F::ErrorTargetMissing
        | F::RetryAfterMissing
        | F::WrappedMappingDiffers => 5,
        F::MetaNotFirst | F::MetaRepeated | F::SummaryNotLast | F::SummaryRepeated => 14,
        // §18 #9 "Known secret-looking args are not echoed raw in output".
        F::ArgsNotRedacted => 9,
        F::SeqMissing
        | F::SeqAbsent
        | F::SeqInvalid
        | F::SeqNotZeroBased
        | F::SeqGap
        | F::RunMissing
        | F::RunNotUlid
        | F::RunChanged
        | F::EnvelopeNotObject
        | F::EnvelopeFieldInvalid
        | F::EnvelopeExtraField
        | F::EventCountMissing
        | F::EventCountMismatch
        | F::CountMismatch
        | F::ErrorCountMismatch
        | F::WarningCountMismatch
        | F::PartialWithoutErrors => 15,
    })
}

/// What a check concluded for one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    /// The command does what the check asks.
    Pass,
    /// It does not; the evidence says where.
    Fail,
    /// The check cannot apply to this command (§18.1), e.g. nothing to confirm in a read-only
    /// command.
    NotApplicable,
    /// Lint could not exercise the command (e.g. it needs an operand discovery does not give);
    /// neither a pass nor a fail.
    CouldNotRun,
}

impl CheckOutcome {
    /// `pass`, `fail`, `not_applicable` or `could_not_run`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CheckOutcome::Pass => "pass",
            CheckOutcome::Fail => "fail",
            CheckOutcome::NotApplicable => "not_applicable",
            CheckOutcome::CouldNotRun => "could_not_run",
        }
    }
}

impl fmt::Display for CheckOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What lint saw that made a check fail (or, for a pass, what it exercised).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// The argv lint ran, program first.
    pub invocation: Vec<String>,
    /// The 1-based stdout line concerned, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The bytes concerned: a line of stdout, an event, a piece of stderr (cut to a few
    /// hundred bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    /// The verifier finding code, when the evidence is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
}

/// What lint recommends beyond the spec's MUSTs: a SHOULD of the spec that the tool does not
/// meet (its detail starts `spec §N SHOULD:`), or a rule of this project's profile
/// (`docs/discovery.md`), such as what `aoi mcp` needs to call a command, that no sentence of
/// AOI-CLI makes a requirement. Advice never fails a check, a factor or lint's exit status,
/// unless `--strict-profile` asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Advice {
    /// One line: what was seen.
    pub detail: String,
    /// One line: what to change, and where the profile says it.
    pub fix: String,
    /// What supports it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
}

/// One check's conclusion for one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// The check.
    pub check: CheckId,
    /// The command, as capabilities names it (`"search"`, `"auth login"`); `""` for a single
    /// invocation or a transcript.
    pub command: String,
    /// The conclusion.
    pub outcome: CheckOutcome,
    /// One line: why.
    pub detail: String,
    /// What supports it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// What the profile recommends beyond the spec; never part of the outcome.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub advice: Vec<Advice>,
    /// The check's own wall time for this command (zero for a result no check ran for).
    #[serde(skip)]
    pub elapsed: Duration,
}

impl CheckResult {
    /// A result without evidence.
    pub fn new(
        check: CheckId,
        command: &str,
        outcome: CheckOutcome,
        detail: impl Into<String>,
    ) -> Self {
        CheckResult {
            check,
            command: command.to_owned(),
            outcome,
            detail: detail.into(),
            evidence: Vec::new(),
            advice: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }

    /// With one more piece of evidence.
    pub fn evidence(mut self, evidence: Evidence) -> Self {
        self.evidence.push(evidence);
        self
    }

    /// With one more piece of advice.
    pub fn advise(mut self, advice: Advice) -> Self {
        self.advice.push(advice);
        self
    }

    /// `--strict-profile`: advice fails the check. A check that passed fails with its first
    /// advice as the detail (and every piece as evidence); a check already failed keeps its
    /// own detail and gains the advice as evidence.
    pub fn fail_on_advice(&mut self) {
        if self.advice.is_empty() {
            return;
        }
        if matches!(
            self.outcome,
            CheckOutcome::Pass | CheckOutcome::NotApplicable
        ) {
            self.outcome = CheckOutcome::Fail;
            self.detail = format!("profile (--strict-profile): {}", self.advice[0].detail);
        }
        for advice in &self.advice {
            let mut evidence = advice.evidence.first().cloned().unwrap_or_default();
            evidence.excerpt = Some(format!("{} — {}", advice.detail, advice.fix));
            self.evidence.push(evidence);
        }
    }
}

/// Everything one lint run found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// The tool, as its capabilities name it (or the program name).
    pub tool: String,
    /// Its version, when discovery gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// The commands linted, in capabilities order.
    pub commands: Vec<String>,
    /// One result per (check × command), ordered by command then check.
    pub results: Vec<CheckResult>,
    /// How many processes of the target lint spawned.
    pub processes: u64,
    /// How many processes lint found still running outside a run's process group after the
    /// run ended, and killed (each also evidence on the check whose probe left it, when a
    /// check's probe did).
    pub escaped: u64,
    /// Wall time of the whole lint run.
    #[serde(skip)]
    pub elapsed: Duration,
    /// Whether discovery ran with the network unreachable; `false` with the reason when it
    /// could not be enforced on this machine.
    pub network_isolated: bool,
    /// Why the network could not be isolated, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_note: Option<String>,
    /// The file a finding is reported against, as a path relative to the directory lint ran
    /// in when it is below it: the `aoi-lint.toml` used, else the tool or the transcript.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// Lint's own command line, for reports that record how they were made (SARIF).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub invocation: Vec<String>,
}

impl Report {
    /// True when no applicable check failed.
    pub fn passed(&self) -> bool {
        !self.results.iter().any(|r| r.outcome == CheckOutcome::Fail)
    }

    /// Every piece of advice, with the result it belongs to.
    pub fn advice(&self) -> impl Iterator<Item = (&CheckResult, &Advice)> {
        self.results
            .iter()
            .flat_map(|r| r.advice.iter().map(move |a| (r, a)))
    }

    /// True when every applicable check ran: nothing "could not run". Only a report that
    /// passed and is complete proves conformance.
    pub fn complete(&self) -> bool {
        !self
            .results
            .iter()
            .any(|r| r.outcome == CheckOutcome::CouldNotRun)
    }

    /// The reasons checks could not run, each with how many did not for it, most frequent
    /// first: what the tool or `aoi-lint.toml` must give lint.
    pub fn could_not_run_reasons(&self) -> Vec<(String, usize)> {
        let mut reasons: Vec<(String, usize)> = Vec::new();
        for r in self
            .results
            .iter()
            .filter(|r| r.outcome == CheckOutcome::CouldNotRun)
        {
            match reasons.iter_mut().find(|(d, _)| *d == r.detail) {
                Some((_, n)) => *n += 1,
                None => reasons.push((r.detail.clone(), 1)),
            }
        }
        reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
        reasons
    }

    /// How many results have `outcome`.
    pub fn count(&self, outcome: CheckOutcome) -> usize {
        self.results.iter().filter(|r| r.outcome == outcome).count()
    }

    /// The factors for which every applicable check passed, on every command, and at least
    /// one check ran: what a "Machine Mode Ready" badge may claim. A factor with a failure or a
    /// check that could not run is not claimed.
    pub fn factors_passed(&self) -> Vec<Factor> {
        Factor::ALL
            .into_iter()
            .filter(|factor| {
                let of_factor = || {
                    self.results
                        .iter()
                        .filter(|r| r.check.info().factors.contains(factor))
                };
                of_factor().any(|r| r.outcome == CheckOutcome::Pass)
                    && of_factor().all(|r| {
                        matches!(r.outcome, CheckOutcome::Pass | CheckOutcome::NotApplicable)
                    })
            })
            .collect()
    }
}

/// True when `finding` is a schema finding on a line whose fault the verifier's own rules
/// already name (an `aoi:error` without `retryable` breaks both §9.1 and a schema that
/// requires it): one fault counts once, against the rule's check, not check 4 as well.
pub(crate) fn explained(finding: &Finding, all: &[Finding]) -> bool {
    finding.code == FindingCode::EventSchemaInvalid
        && finding.line.is_some()
        && all.iter().any(|other| {
            other.line == finding.line
                && other.level == Level::Violation
                && check_of(other.code) != check_of(finding.code)
        })
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut: how evidence
/// quotes what a tool wrote.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_numbered_in_order_and_each_has_factors() {
        for (i, check) in CHECKS.iter().enumerate() {
            assert_eq!(usize::from(check.id.number()), i + 1);
            assert!(!check.factors.is_empty());
            assert!(check.sections.starts_with('§'));
        }
        assert_eq!(CheckId::all().count(), 16);
        assert_eq!(CheckId::new(0), None);
        assert_eq!(CheckId::new(17), None);
    }

    #[test]
    fn every_verifier_finding_counts_against_a_stream_check() {
        for code in FindingCode::ALL {
            let check = check_of(*code).number();
            assert!(
                [2, 3, 4, 5, 9, 14, 15].contains(&check),
                "{code} maps to {check}"
            );
        }
    }

    #[test]
    fn a_factor_is_claimed_only_when_all_its_applicable_checks_passed() {
        let id = |n| CheckId::new(n).unwrap();
        let report = Report {
            results: vec![
                CheckResult::new(id(7), "create", CheckOutcome::Pass, ""),
                CheckResult::new(id(7), "search", CheckOutcome::NotApplicable, ""),
                CheckResult::new(id(6), "delete", CheckOutcome::Fail, ""),
                CheckResult::new(id(9), "search", CheckOutcome::Pass, ""),
                CheckResult::new(id(13), "search", CheckOutcome::CouldNotRun, ""),
            ],
            ..Report::default()
        };
        let factors = report.factors_passed();
        assert!(factors.contains(&Factor::Idempotent));
        assert!(
            !factors.contains(&Factor::Safe),
            "6 failed although 9 passed"
        );
        assert!(!factors.contains(&Factor::Versioned), "13 could not run");
        assert!(!factors.contains(&Factor::Auditable), "nothing ran");
        assert!(!report.passed());
    }

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("héllo", 2), "h…");
        assert_eq!(cut("abc", 5), "abc");
    }
}
