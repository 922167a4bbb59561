//! Guards for mutating commands: dry-run, confirmation and idempotency (spec §14).
//!
//! An agent retries, guesses and widens filters; these guards make each of those safe by
//! construction rather than by each tool's care:
//!
//! - [`Effects`] runs every side effect through one door. Under `--dry-run` it writes an
//!   `aoi:plan` and never calls the effect, so "a dry run touches nothing" holds by structure
//!   (§14.2).
//! - [`Confirmation`] is checked after counting what would be affected and before touching
//!   anything: a destructive run without `--confirm`, or with a `--confirm-count` that does
//!   not match, is refused with `reason:"denied"` and exit 77 (§14.3).
//! - [`begin`], [`Recorder`] and [`replay`] implement `--idempotency-key` (§14.4): the first
//!   run records its domain events under the key; a retry of the same request replays them
//!   without repeating the effect; the same key with a different request is a `conflict`.
//!
//! # Idempotency and atomicity
//!
//! The record must be saved **in the same transaction as the effect** whenever the tool's
//! store allows it (the SQLite-backed reference tool opens one transaction, applies the
//! effect, calls [`Recorder::finish`] with a store on that transaction, and commits).
//! Otherwise a crash between the two leaves an effect without a record, and the retry applies
//! it twice. Likewise [`begin`] is a lookup, not a lock: a store shared by concurrent runs
//! must serialize them (SQLite: take the write lock before `begin`, release it after
//! `finish`).
//!
//! Per §9.3, a tool that implements this properly **may** report `retryable: true` for a
//! mutating failure it would otherwise mark `false` when it was invoked with
//! `--idempotency-key`, and must document that it does so; this module does not decide that
//! for the tool.
//!
//! ```
//! use aoi::surface::safety::{begin, replay, MemoryStore, Replay};
//! use aoi::surface::cursor::request_hash;
//! # use aoi::{DomainEvent, Emitter, Identity, Outcome};
//! # #[derive(serde::Serialize)] struct Deleted { id: String }
//! # impl DomainEvent for Deleted { const TYPE: &'static str = "deleted"; }
//! # fn run(store: &mut MemoryStore) -> Result<Outcome, aoi::Failure> {
//! # let mut out = Emitter::builder(Identity::new("t", "1", "s", "1.0.0")).start(Vec::new())?;
//! let hash = request_hash("delete", &serde_json::json!({"id": "doc_1"}));
//! match begin(store, "key-123", &hash)? {
//!     Replay::Replayed(recorded) => Ok(replay(&recorded, &mut out)?),
//!     Replay::Fresh(mut recorder) => {
//!         // ... delete doc_1 ...
//!         recorder.emit(&mut out, &Deleted { id: "doc_1".into() })?;
//!         recorder.finish(store, true)?;
//!         Ok(Outcome::success())
//!     }
//! }
//! # }
//! # let mut store = MemoryStore::default();
//! # assert!(run(&mut store).unwrap().is_ok());
//! # assert!(run(&mut store).unwrap().is_ok());
//! ```

use std::collections::HashMap;
use std::fmt;
use std::io::Write;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::emit::{EmitError, Emitter, Failure, Outcome};
use crate::wire::{Category, Code, ErrorEvent, Plan};
use crate::DomainEvent;

/// `precondition_failed`: a destructive command ran without `--confirm`.
pub const CONFIRMATION_REQUIRED: Code = Code::from_static("CONFIRMATION_REQUIRED");
/// `conflict`: `--confirm-count` differs from the number of items that would be affected.
pub const CONFIRM_COUNT_MISMATCH: Code = Code::from_static("CONFIRM_COUNT_MISMATCH");
/// `precondition_failed`: a bulk destructive command ran without `--confirm-count`, and the
/// tool requires it (see [`Confirmation::require_count_for_bulk`]).
pub const CONFIRM_COUNT_REQUIRED: Code = Code::from_static("CONFIRM_COUNT_REQUIRED");
/// `conflict`: the idempotency key was already used for a different request.
pub const IDEMPOTENCY_KEY_REUSED: Code = Code::from_static("IDEMPOTENCY_KEY_REUSED");
/// `usage`: the idempotency key is empty, too long, or contains control characters.
pub const IDEMPOTENCY_KEY_INVALID: Code = Code::from_static("IDEMPOTENCY_KEY_INVALID");
/// `io`: the idempotency store could not be read or written.
pub const IDEMPOTENCY_STORE_FAILED: Code = Code::from_static("IDEMPOTENCY_STORE_FAILED");
/// `internal`: a domain event could not be recorded for replay.
pub(crate) const EVENT_NOT_SERIALIZABLE: Code = Code::from_static("EVENT_NOT_SERIALIZABLE");

/// The longest idempotency key accepted, in bytes.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

// ---------------------------------------------------------------------------------------------
// Dry run

/// The one door every side effect of a run goes through, honouring `--dry-run` (§14.2).
///
/// ```
/// use aoi::{Emitter, Identity, Plan};
/// use aoi::surface::safety::Effects;
///
/// let mut out = Emitter::builder(Identity::new("t", "1", "s", "1.0.0")).start(Vec::new()).unwrap();
/// let mut effects = Effects::new(true);
/// let plan = Plan { action: "delete".into(), target: Some("doc_1".into()), detail: None, properties: None };
/// let done = effects.apply(&mut out, plan, || -> Result<(), std::io::Error> {
///     unreachable!("a dry run never calls the effect")
/// });
/// assert!(matches!(done, Ok(None)));
/// assert_eq!(effects.planned(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effects {
    dry_run: bool,
    planned: u64,
}

impl Effects {
    /// Effects for a run with `--dry-run` set or not.
    pub fn new(dry_run: bool) -> Effects {
        Effects {
            dry_run,
            planned: 0,
        }
    }

    /// True under `--dry-run`.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// How many `aoi:plan` events [`apply`](Self::apply) has written (0 outside a dry run).
    pub fn planned(&self) -> u64 {
        self.planned
    }

    /// Plans or performs one side effect.
    ///
    /// Under `--dry-run` this writes `plan` as an `aoi:plan` and returns `Ok(None)` without
    /// calling `effect`. Otherwise it checks for cancellation (a signal that arrived stops
    /// the run before a new effect starts, never in the middle of one), calls `effect`, and
    /// returns `Ok(Some(result))`.
    pub fn apply<W: Write, R, E>(
        &mut self,
        out: &mut Emitter<W>,
        plan: Plan,
        effect: impl FnOnce() -> Result<R, E>,
    ) -> Result<Option<R>, ApplyError<E>> {
        if self.dry_run {
            out.plan(&plan).map_err(ApplyError::Emit)?;
            self.planned += 1;
            return Ok(None);
        }
        out.check_cancelled().map_err(ApplyError::Emit)?;
        effect().map(Some).map_err(ApplyError::Effect)
    }
}

/// Why [`Effects::apply`] failed: the stream, or the effect itself.
///
/// `?` turns it into a [`Failure`] when the effect's error converts into one (an
/// [`ErrorEvent`], an [`EmitError`], or a `Failure`).
#[derive(Debug)]
pub enum ApplyError<E> {
    /// Writing the plan failed, or the run was cancelled before the effect started; nothing
    /// was applied.
    Emit(EmitError),
    /// The effect ran and failed with this error.
    Effect(E),
}

impl<E: fmt::Display> fmt::Display for ApplyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Emit(e) => write!(f, "{e}"),
            ApplyError::Effect(e) => write!(f, "the effect failed: {e}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ApplyError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ApplyError::Emit(e) => Some(e),
            ApplyError::Effect(e) => Some(e),
        }
    }
}

impl<E: Into<Failure>> From<ApplyError<E>> for Failure {
    fn from(error: ApplyError<E>) -> Failure {
        match error {
            ApplyError::Emit(e) => Failure::from(e),
            ApplyError::Effect(e) => e.into(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Confirmation

/// The `--confirm` and `--confirm-count N` flags of a destructive command (§14.3).
///
/// Call [`check`](Self::check) after counting what the command would affect and before
/// touching anything. Refusals are [`Failure::denied`]: a process-scope `aoi:error`, a
/// summary with `reason:"denied"`, exit 77. The errors' `field` names the flag
/// as its input-schema property (`"confirm"`, `"confirm_count"`), as docs/discovery.md says.
///
/// ```
/// use aoi::surface::safety::Confirmation;
/// let flags = Confirmation::new(true, Some(3));
/// assert!(flags.check("delete", 3).is_ok());
/// let refused = flags.check("delete", 4).unwrap_err();
/// assert_eq!(refused.event().code.as_str(), "CONFIRM_COUNT_MISMATCH");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Confirmation {
    /// `--confirm` was given.
    pub confirm: bool,
    /// `--confirm-count N`, when given.
    pub confirm_count: Option<u64>,
    count_required_for_bulk: bool,
}

impl Confirmation {
    /// The flags as parsed.
    pub fn new(confirm: bool, confirm_count: Option<u64>) -> Confirmation {
        Confirmation {
            confirm,
            confirm_count,
            count_required_for_bulk: false,
        }
    }

    /// Makes `--confirm-count` mandatory when more than one item would be affected.
    ///
    /// Off by default: §14.3 says bulk destructive operations *should* require the count, and
    /// a tool opts in here. When on, a bulk run with `--confirm` alone is refused with
    /// `precondition_failed` `CONFIRM_COUNT_REQUIRED`.
    pub fn require_count_for_bulk(mut self, on: bool) -> Self {
        self.count_required_for_bulk = on;
        self
    }

    /// Refuses a destructive run of `command` (a verb, e.g. `"delete"`) that would affect
    /// `affected` items, unless the flags allow it.
    ///
    /// In order:
    /// 1. `--confirm-count M` with `M != affected`: `conflict` `CONFIRM_COUNT_MISMATCH`,
    ///    naming both numbers (what the caller expected is not what is there; re-read first).
    /// 2. `affected == 0`: allowed, there is nothing to do.
    /// 3. No `--confirm`: `precondition_failed` `CONFIRMATION_REQUIRED`, hinting
    ///    `re-run with --confirm` (and `--confirm-count N` when N > 1). `--confirm-count`
    ///    alone is not confirmation.
    /// 4. With [`require_count_for_bulk`](Self::require_count_for_bulk), more than one item
    ///    and no `--confirm-count`: `precondition_failed` `CONFIRM_COUNT_REQUIRED`.
    pub fn check(&self, command: &str, affected: u64) -> Result<(), Failure> {
        if let Some(expected) = self.confirm_count {
            if expected != affected {
                return Err(Failure::denied(
                    ErrorEvent::new(
                        Category::Conflict,
                        CONFIRM_COUNT_MISMATCH,
                        format!(
                            "--confirm-count is {expected} but {command} would affect {}",
                            items(affected)
                        ),
                    )
                    .field("confirm_count")
                    .detail("affected", affected)
                    .detail("confirm_count", expected)
                    .hint(format!(
                        "review with --dry-run, then re-run with --confirm --confirm-count {affected} if that is intended"
                    )),
                ));
            }
        }
        if affected == 0 {
            return Ok(());
        }
        if !self.confirm {
            let count = if affected > 1 {
                format!(" --confirm-count {affected}")
            } else {
                String::new()
            };
            return Err(Failure::denied(
                ErrorEvent::new(
                    Category::PreconditionFailed,
                    CONFIRMATION_REQUIRED,
                    format!(
                        "refusing to {command} {} without --confirm",
                        items(affected)
                    ),
                )
                .field("confirm")
                .detail("affected", affected)
                .hint(format!("re-run with --confirm{count}")),
            ));
        }
        if self.count_required_for_bulk && affected > 1 && self.confirm_count.is_none() {
            return Err(Failure::denied(
                ErrorEvent::new(
                    Category::PreconditionFailed,
                    CONFIRM_COUNT_REQUIRED,
                    format!(
                        "refusing to {command} {} without --confirm-count",
                        items(affected)
                    ),
                )
                .field("confirm_count")
                .detail("affected", affected)
                .hint(format!("re-run with --confirm --confirm-count {affected}")),
            ));
        }
        Ok(())
    }
}

fn items(n: u64) -> String {
    if n == 1 {
        "1 item".to_owned()
    } else {
        format!("{n} items")
    }
}

// ---------------------------------------------------------------------------------------------
// Idempotency

/// What a run under an idempotency key produced, saved so that a retry can replay it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// The [`request_hash`](super::cursor::request_hash) of the request that made the record.
    pub request_hash: String,
    /// The domain events the run emitted, in order.
    pub events: Vec<RecordedEvent>,
    /// Whether the run succeeded.
    pub ok: bool,
    /// Summary properties to repeat on replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
}

/// One recorded domain event: its `type` and its fields (without `type` and `aoi`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// The event's `type`.
    pub event_type: String,
    /// The event's own fields.
    pub fields: Map<String, Value>,
}

/// Where idempotency records live: a table in the tool's database, a file, memory.
///
/// Implement it over the same transaction as the tool's effects when possible (see the
/// [module docs](self)).
pub trait IdempotencyStore {
    /// Why the store failed; its text goes into the `aoi:error` message, so keep secrets out.
    type Error: fmt::Display;

    /// The record saved under `key`, if any.
    fn load(&mut self, key: &str) -> Result<Option<Recorded>, Self::Error>;

    /// Saves `record` under `key`, replacing any earlier one.
    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), Self::Error>;
}

/// An [`IdempotencyStore`] in a `HashMap`, for tests and for tools whose runs share a process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryStore(pub HashMap<String, Recorded>);

impl IdempotencyStore for MemoryStore {
    type Error = std::convert::Infallible;

    fn load(&mut self, key: &str) -> Result<Option<Recorded>, Self::Error> {
        Ok(self.0.get(key).cloned())
    }

    fn save(&mut self, key: &str, record: &Recorded) -> Result<(), Self::Error> {
        self.0.insert(key.to_owned(), record.clone());
        Ok(())
    }
}

/// What [`begin`] found under an idempotency key.
#[derive(Debug)]
pub enum Replay {
    /// No record: run the command, recording its events.
    Fresh(Recorder),
    /// The same request already ran: [`replay`] this record instead of running it again.
    Replayed(Recorded),
}

/// Looks up `key` before running a request whose [`request_hash`](super::cursor::request_hash)
/// is `request_hash`.
///
/// - No record: [`Replay::Fresh`] with a [`Recorder`] for the run.
/// - A record with the same hash: [`Replay::Replayed`].
/// - A record with another hash: `conflict` `IDEMPOTENCY_KEY_REUSED`.
/// - An empty key, one longer than [`MAX_IDEMPOTENCY_KEY_LEN`] bytes, or one with control
///   characters: `usage` `IDEMPOTENCY_KEY_INVALID`.
/// - The store fails: `io` `IDEMPOTENCY_STORE_FAILED`, `retryable: false`. `io` because a
///   store is local state (a file, an embedded database) rather than a remote dependency; not
///   retryable because a consumer cannot tell whether the condition is transient.
pub fn begin<S: IdempotencyStore + ?Sized>(
    store: &mut S,
    key: &str,
    request_hash: &str,
) -> Result<Replay, ErrorEvent> {
    check_key(key)?;
    let found = store
        .load(key)
        .map_err(|e| store_failed(&format!("reading the idempotency store failed: {e}")))?;
    match found {
        None => Ok(Replay::Fresh(Recorder {
            key: key.to_owned(),
            request_hash: request_hash.to_owned(),
            events: Vec::new(),
            properties: None,
        })),
        Some(recorded) if recorded.request_hash == request_hash => Ok(Replay::Replayed(recorded)),
        Some(_) => Err(ErrorEvent::new(
            Category::Conflict,
            IDEMPOTENCY_KEY_REUSED,
            "the idempotency key was already used for a different request",
        )
        .field("idempotency_key")
        .hint(
            "use a new --idempotency-key for a new request, or repeat the original request exactly",
        )),
    }
}

fn check_key(key: &str) -> Result<(), ErrorEvent> {
    let problem = if key.trim().is_empty() {
        "the idempotency key is empty".to_owned()
    } else if key.len() > MAX_IDEMPOTENCY_KEY_LEN {
        format!(
            "the idempotency key is {} bytes; at most {MAX_IDEMPOTENCY_KEY_LEN} are allowed",
            key.len()
        )
    } else if key.chars().any(char::is_control) {
        "the idempotency key contains control characters".to_owned()
    } else {
        return Ok(());
    };
    Err(
        ErrorEvent::new(Category::Usage, IDEMPOTENCY_KEY_INVALID, problem)
            .field("idempotency_key")
            .hint(format!(
                "pass a printable key of 1 to {MAX_IDEMPOTENCY_KEY_LEN} bytes, e.g. a UUID"
            )),
    )
}

fn store_failed(message: &str) -> ErrorEvent {
    ErrorEvent::new(Category::Io, IDEMPOTENCY_STORE_FAILED, message)
        .retryable(false)
        .hint("check that the tool's data store is readable and writable")
}

/// Collects what a fresh run under an idempotency key emits, then saves it.
#[derive(Debug)]
pub struct Recorder {
    key: String,
    request_hash: String,
    events: Vec<RecordedEvent>,
    properties: Option<Map<String, Value>>,
}

impl Recorder {
    /// The idempotency key this run records under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Records one domain event for replay.
    ///
    /// The event is kept as a JSON map (keys may come back in another order, values are the
    /// same). An event that the emitter would refuse (no object, an empty or `aoi:` type, a
    /// reserved `type` or `aoi` field) is an `internal` `EVENT_NOT_SERIALIZABLE`.
    pub fn record<E: DomainEvent + ?Sized>(&mut self, event: &E) -> Result<(), ErrorEvent> {
        let event_type = event.event_type();
        if event_type.is_empty() || event_type.starts_with("aoi:") {
            return Err(not_recordable(&format!(
                "invalid domain event type {event_type:?}"
            )));
        }
        let fields = match serde_json::to_value(event) {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => return Err(not_recordable("it is not a JSON object")),
            Err(e) => return Err(not_recordable(&e.to_string())),
        };
        if let Some(key) = ["type", "aoi"]
            .into_iter()
            .find(|k| fields.contains_key(*k))
        {
            return Err(not_recordable(&format!(
                "the top-level name `{key}` is reserved"
            )));
        }
        self.events.push(RecordedEvent {
            event_type: event_type.to_owned(),
            fields,
        });
        Ok(())
    }

    /// Records `event`, then emits it: the one call to use for each domain event of a run
    /// under an idempotency key, so that what is replayed is what was written.
    ///
    /// Recording comes first: if the stream then fails, the record still holds the event and
    /// a retry replays it.
    pub fn emit<W: Write, E: DomainEvent + ?Sized>(
        &mut self,
        out: &mut Emitter<W>,
        event: &E,
    ) -> Result<(), Failure> {
        self.record(event)?;
        out.emit(event)?;
        Ok(())
    }

    /// Adds a summary property to repeat when the run is replayed.
    pub fn property(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        self.properties
            .get_or_insert_with(Map::new)
            .insert(key.into(), value.into());
    }

    /// Saves the record under the key, with `ok` saying whether the run succeeded, and
    /// returns it.
    ///
    /// Call it in the same transaction as the effect when the store allows (see the
    /// [module docs](self)). A store failure is `io` `IDEMPOTENCY_STORE_FAILED`,
    /// `retryable: false`: the effect may already be applied (§9.3).
    pub fn finish<S: IdempotencyStore + ?Sized>(
        self,
        store: &mut S,
        ok: bool,
    ) -> Result<Recorded, ErrorEvent> {
        let record = Recorded {
            request_hash: self.request_hash,
            events: self.events,
            ok,
            properties: self.properties,
        };
        store.save(&self.key, &record).map_err(|e| {
            store_failed(&format!(
                "saving the idempotency record failed after the effect may have been applied: {e}"
            ))
        })?;
        Ok(record)
    }
}

fn not_recordable(why: &str) -> ErrorEvent {
    ErrorEvent::new(
        Category::Internal,
        EVENT_NOT_SERIALIZABLE,
        format!("a domain event could not be recorded for replay: {why}"),
    )
}

/// Re-emits a recorded run's domain events and returns the outcome to finish with.
///
/// The outcome is [`Outcome::success`] (or [`Outcome::failed`] when the recorded run failed)
/// with the recorded summary properties and `idempotent_replay: true`, so a consumer can tell
/// a replay from a run that applied the effect.
pub fn replay<W: Write>(recorded: &Recorded, out: &mut Emitter<W>) -> Result<Outcome, EmitError> {
    for event in &recorded.events {
        out.emit_as(&event.event_type, &event.fields)?;
    }
    let mut outcome = if recorded.ok {
        Outcome::success()
    } else {
        Outcome::failed()
    };
    for (key, value) in recorded.properties.iter().flatten() {
        outcome = outcome.property(key.clone(), value.clone());
    }
    Ok(outcome.property("idempotent_replay", true))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::emit::drive;
    use crate::read::{decode, Event, Verifier};
    use crate::surface::cursor::request_hash;
    use crate::wire::{exit_code, Identity, Reason, Summary};
    use crate::Signal;

    fn start() -> Emitter<Vec<u8>> {
        Emitter::builder(Identity::new("t", "1", "s", "1.0.0"))
            .command("delete")
            .start(Vec::new())
            .unwrap()
    }

    /// Ends the stream, checks it against the verifier, and returns its decoded events.
    fn end(mut out: Emitter<Vec<u8>>, outcome: Outcome) -> Vec<Event> {
        out.finish(outcome).unwrap();
        events(out.into_writer())
    }

    fn events(bytes: Vec<u8>) -> Vec<Event> {
        let report = Verifier::verify_bytes(&bytes, Default::default());
        assert_eq!(report.violations, 0, "{:?}", report.findings);
        bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| decode(line).unwrap().event)
            .collect()
    }

    fn summary(events: &[Event]) -> &Summary {
        match events.last() {
            Some(Event::Summary(s)) => s,
            other => panic!("no summary at the end: {other:?}"),
        }
    }

    fn plan(target: &str) -> Plan {
        Plan {
            action: "delete".into(),
            target: Some(target.into()),
            detail: None,
            properties: None,
        }
    }

    // --- dry run ---

    #[test]
    fn dry_run_plans_and_never_calls_the_effect() {
        let mut out = start();
        let mut effects = Effects::new(true);
        let calls = Cell::new(0);
        for target in ["a", "b", "c"] {
            let done = effects.apply(&mut out, plan(target), || {
                calls.set(calls.get() + 1);
                Ok::<_, ErrorEvent>(())
            });
            assert!(matches!(done, Ok(None)));
        }
        assert!(effects.is_dry_run());
        assert_eq!(effects.planned(), 3);
        assert_eq!(calls.get(), 0);
        let events = end(out, Outcome::success());
        let plans: Vec<&Plan> = events
            .iter()
            .filter_map(|e| match e {
                Event::Plan(p) => Some(p),
                _ => None,
            })
            .collect();
        assert_eq!(plans, vec![&plan("a"), &plan("b"), &plan("c")]);
        assert_eq!(summary(&events).count, Some(0));
    }

    #[test]
    fn a_real_run_applies_each_effect_once_and_plans_nothing() {
        let mut out = start();
        let mut effects = Effects::new(false);
        let calls = Cell::new(0);
        let done = effects.apply(&mut out, plan("a"), || {
            calls.set(calls.get() + 1);
            Ok::<_, ErrorEvent>(41 + 1)
        });
        assert_eq!(done.unwrap(), Some(42));
        let failed = effects.apply(&mut out, plan("b"), || {
            calls.set(calls.get() + 1);
            Err::<(), _>(ErrorEvent::new(
                Category::NotFound,
                Code::from_static("DOC_NOT_FOUND"),
                "no such document",
            ))
        });
        match failed {
            Err(ApplyError::Effect(e)) => assert_eq!(e.code.as_str(), "DOC_NOT_FOUND"),
            other => panic!("expected the effect's error: {other:?}"),
        }
        assert_eq!(calls.get(), 2);
        assert_eq!(effects.planned(), 0);
        let events = end(out, Outcome::success());
        assert!(!events.iter().any(|e| matches!(e, Event::Plan(_))));
    }

    #[test]
    fn no_effect_starts_after_cancellation() {
        let mut out = start();
        out.cancel_token().cancel(Signal::Interrupt);
        let called = Cell::new(false);
        let done = Effects::new(false).apply(&mut out, plan("a"), || {
            called.set(true);
            Ok::<_, ErrorEvent>(())
        });
        assert!(matches!(
            done,
            Err(ApplyError::Emit(EmitError::Cancelled(Signal::Interrupt)))
        ));
        assert!(!called.get());
    }

    #[test]
    fn apply_errors_become_failures() {
        let effect: ApplyError<ErrorEvent> = ApplyError::Effect(ErrorEvent::new(
            Category::Conflict,
            Code::from_static("EXISTS"),
            "exists",
        ));
        assert_eq!(Failure::from(effect).event().code.as_str(), "EXISTS");
        let emit: ApplyError<ErrorEvent> = ApplyError::Emit(EmitError::Finished);
        assert_eq!(Failure::from(emit).event().code.as_str(), "STREAM_FINISHED");
    }

    // --- confirmation ---

    fn refusal(flags: Confirmation, affected: u64) -> ErrorEvent {
        flags.check("delete", affected).unwrap_err().into_event()
    }

    #[test]
    fn confirmation_is_required_with_a_hint() {
        let e = refusal(Confirmation::new(false, None), 1);
        assert_eq!(e.code, CONFIRMATION_REQUIRED);
        assert_eq!(e.category, Category::PreconditionFailed);
        assert!(!e.retryable);
        assert_eq!(e.field.as_deref(), Some("confirm"));
        assert_eq!(e.message, "refusing to delete 1 item without --confirm");
        assert_eq!(e.hint.as_deref(), Some("re-run with --confirm"));

        let e = refusal(Confirmation::new(false, None), 12);
        assert_eq!(e.message, "refusing to delete 12 items without --confirm");
        assert_eq!(
            e.hint.as_deref(),
            Some("re-run with --confirm --confirm-count 12")
        );
        assert_eq!(e.details.unwrap()["affected"], 12);

        // A matching count alone is not confirmation.
        let e = refusal(Confirmation::new(false, Some(12)), 12);
        assert_eq!(e.code, CONFIRMATION_REQUIRED);
    }

    #[test]
    fn a_count_mismatch_names_both_numbers() {
        for confirm in [true, false] {
            let e = refusal(Confirmation::new(confirm, Some(5)), 3);
            assert_eq!(e.code, CONFIRM_COUNT_MISMATCH);
            assert_eq!(e.category, Category::Conflict);
            assert_eq!(e.field.as_deref(), Some("confirm_count"));
            assert!(e.message.contains('5') && e.message.contains("3 items"));
            assert!(e.hint.as_deref().unwrap().contains("--confirm-count 3"));
        }
        // Expecting items that are gone is a mismatch too.
        let e = refusal(Confirmation::new(true, Some(2)), 0);
        assert_eq!(e.code, CONFIRM_COUNT_MISMATCH);
    }

    #[test]
    fn what_is_allowed() {
        assert!(Confirmation::new(true, None).check("delete", 1).is_ok());
        assert!(Confirmation::new(true, None).check("delete", 50).is_ok());
        assert!(Confirmation::new(true, Some(50))
            .check("delete", 50)
            .is_ok());
        assert!(Confirmation::new(true, None).check("delete", 0).is_ok());
        assert!(Confirmation::new(false, None).check("delete", 0).is_ok());
        assert!(Confirmation::new(true, Some(0)).check("delete", 0).is_ok());
        let strict = Confirmation::new(true, None).require_count_for_bulk(true);
        assert!(strict.check("delete", 1).is_ok());
        assert!(strict.check("delete", 0).is_ok());
    }

    #[test]
    fn bulk_may_require_the_count() {
        let strict = Confirmation::new(true, None).require_count_for_bulk(true);
        let e = refusal(strict, 7);
        assert_eq!(e.code, CONFIRM_COUNT_REQUIRED);
        assert_eq!(e.category, Category::PreconditionFailed);
        assert_eq!(
            e.hint.as_deref(),
            Some("re-run with --confirm --confirm-count 7")
        );
        let counted = Confirmation {
            confirm_count: Some(7),
            ..strict
        };
        assert!(counted.check("delete", 7).is_ok());
    }

    #[test]
    fn refusals_touch_nothing_and_exit_77() {
        let cases = [
            (Confirmation::new(false, None), CONFIRMATION_REQUIRED),
            (Confirmation::new(true, Some(2)), CONFIRM_COUNT_MISMATCH),
            (
                Confirmation::new(true, None).require_count_for_bulk(true),
                CONFIRM_COUNT_REQUIRED,
            ),
        ];
        for (flags, code) in cases {
            let mut out = start();
            let touched = Cell::new(false);
            let exit = drive(&mut out, |out| {
                flags.check("delete", 3)?;
                Effects::new(false).apply(out, plan("a"), || {
                    touched.set(true);
                    Ok::<_, ErrorEvent>(())
                })?;
                Ok(Outcome::success())
            });
            assert_eq!(exit, exit_code::NO_PERM);
            assert!(!touched.get());
            let events = events(out.into_writer());
            let s = summary(&events);
            assert!(!s.ok);
            assert_eq!(s.reason, Some(Reason::Denied));
            let errors: Vec<&ErrorEvent> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Error(e) => Some(e),
                    _ => None,
                })
                .collect();
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].code, code);
            assert!(errors[0].is_process_scope());
        }
    }

    // --- idempotency ---

    #[derive(Serialize)]
    struct Deleted {
        id: String,
        bytes: u64,
        tags: Vec<&'static str>,
        note: Option<String>,
    }

    impl DomainEvent for Deleted {
        const TYPE: &'static str = "deleted";
    }

    fn deleted(i: u64) -> Deleted {
        Deleted {
            id: format!("doc_{i}"),
            bytes: i * 1000,
            tags: vec!["x", "y"],
            note: i.is_multiple_of(2).then(|| "even\u{2028}line".to_owned()),
        }
    }

    fn hash(id: &str) -> String {
        request_hash("delete", &serde_json::json!({ "ids": [id] }))
    }

    fn domain(events: &[Event]) -> Vec<(String, Map<String, Value>)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Domain { ty, fields } => Some((ty.clone(), fields.clone())),
                _ => None,
            })
            .collect()
    }

    /// One run of an idempotent delete; returns the stream's events.
    fn run_once(
        store: &mut MemoryStore,
        key: &str,
        request: &str,
        effects: &Cell<u32>,
    ) -> Vec<Event> {
        let mut out = start();
        let outcome = match begin(store, key, &hash(request)).unwrap() {
            Replay::Replayed(recorded) => replay(&recorded, &mut out).unwrap(),
            Replay::Fresh(mut recorder) => {
                effects.set(effects.get() + 1);
                for i in 0..3 {
                    recorder.emit(&mut out, &deleted(i)).unwrap();
                }
                recorder.property("freed_bytes", 3000);
                recorder.finish(store, true).unwrap();
                Outcome::success().property("freed_bytes", 3000)
            }
        };
        end(out, outcome)
    }

    #[test]
    fn a_retry_replays_instead_of_repeating_the_effect() {
        let mut store = MemoryStore::default();
        let effects = Cell::new(0);
        let first = run_once(&mut store, "k1", "doc_1", &effects);
        let second = run_once(&mut store, "k1", "doc_1", &effects);
        assert_eq!(effects.get(), 1);
        assert_eq!(domain(&first).len(), 3);
        assert_eq!(domain(&first), domain(&second));
        let (s1, s2) = (summary(&first), summary(&second));
        assert!(s1.ok && s2.ok);
        assert_eq!(s1.count, s2.count);
        let p2 = s2.properties.as_ref().unwrap();
        assert_eq!(p2["idempotent_replay"], true);
        assert_eq!(p2["freed_bytes"], 3000);
        assert!(s1
            .properties
            .as_ref()
            .is_none_or(|p| !p.contains_key("idempotent_replay")));
    }

    #[test]
    fn begin_fresh_then_replayed_with_the_same_events() {
        let mut store = MemoryStore::default();
        let Replay::Fresh(mut recorder) = begin(&mut store, "k", &hash("a")).unwrap() else {
            panic!("an empty store has no record");
        };
        assert_eq!(recorder.key(), "k");
        recorder.record(&deleted(1)).unwrap();
        recorder.record(&deleted(2)).unwrap();
        let saved = recorder.finish(&mut store, true).unwrap();
        assert_eq!(saved.events.len(), 2);
        assert_eq!(saved.events[0].event_type, "deleted");
        assert_eq!(saved.events[0].fields["id"], "doc_1");
        match begin(&mut store, "k", &hash("a")).unwrap() {
            Replay::Replayed(recorded) => assert_eq!(recorded, saved),
            Replay::Fresh(_) => panic!("the record was saved"),
        }
        // The record survives a trip through its serialized form.
        let json = serde_json::to_string(&saved).unwrap();
        assert_eq!(serde_json::from_str::<Recorded>(&json).unwrap(), saved);
    }

    #[test]
    fn the_same_key_for_another_request_is_a_conflict() {
        let mut store = MemoryStore::default();
        let Replay::Fresh(recorder) = begin(&mut store, "k", &hash("a")).unwrap() else {
            panic!("fresh");
        };
        recorder.finish(&mut store, true).unwrap();
        let e = begin(&mut store, "k", &hash("b")).unwrap_err();
        assert_eq!(e.code, IDEMPOTENCY_KEY_REUSED);
        assert_eq!(e.category, Category::Conflict);
        assert!(!e.retryable);
        assert!(e.message.contains("different request"));
        assert!(e.hint.as_deref().unwrap().contains("new --idempotency-key"));
        // Other keys are independent.
        assert!(matches!(
            begin(&mut store, "k2", &hash("b")).unwrap(),
            Replay::Fresh(_)
        ));
    }

    #[test]
    fn a_failed_run_replays_as_failed() {
        let recorded = Recorded {
            request_hash: hash("a"),
            events: vec![],
            ok: false,
            properties: None,
        };
        let mut out = start();
        let outcome = replay(&recorded, &mut out).unwrap();
        assert!(!outcome.is_ok());
        let events = end(out, outcome);
        let s = summary(&events);
        assert_eq!(s.reason, Some(Reason::Failed));
        assert_eq!(s.properties.as_ref().unwrap()["idempotent_replay"], true);
    }

    #[test]
    fn a_tampered_record_cannot_write_framework_events() {
        let recorded = Recorded {
            request_hash: hash("a"),
            events: vec![RecordedEvent {
                event_type: "aoi:summary".into(),
                fields: Map::new(),
            }],
            ok: true,
            properties: None,
        };
        let mut out = start();
        assert!(matches!(
            replay(&recorded, &mut out),
            Err(EmitError::InvalidType(_))
        ));
    }

    struct Broken;

    impl IdempotencyStore for Broken {
        type Error = String;
        fn load(&mut self, _: &str) -> Result<Option<Recorded>, String> {
            Err("disk I/O error".into())
        }
        fn save(&mut self, _: &str, _: &Recorded) -> Result<(), String> {
            Err("database is locked".into())
        }
    }

    #[test]
    fn store_failures_are_io_and_not_retryable() {
        let e = begin(&mut Broken, "k", &hash("a")).unwrap_err();
        assert_eq!(e.code, IDEMPOTENCY_STORE_FAILED);
        assert_eq!(e.category, Category::Io);
        assert!(!e.retryable);
        assert!(e.message.contains("disk I/O error"));

        let Replay::Fresh(recorder) = begin(&mut MemoryStore::default(), "k", &hash("a")).unwrap()
        else {
            panic!("fresh");
        };
        let e = recorder.finish(&mut Broken, true).unwrap_err();
        assert_eq!(e.code, IDEMPOTENCY_STORE_FAILED);
        assert!(!e.retryable);
        assert!(e.message.contains("may have been applied"));
    }

    #[test]
    fn bad_keys_are_usage_errors() {
        let long = "k".repeat(MAX_IDEMPOTENCY_KEY_LEN + 1);
        for key in ["", "  ", "a\nb", "\u{1b}[31m", long.as_str()] {
            let e = begin(&mut MemoryStore::default(), key, &hash("a")).unwrap_err();
            assert_eq!(e.code, IDEMPOTENCY_KEY_INVALID, "{key:?}");
            assert_eq!(e.category, Category::Usage);
            assert_eq!(e.field.as_deref(), Some("idempotency_key"));
        }
        let longest = "k".repeat(MAX_IDEMPOTENCY_KEY_LEN);
        assert!(begin(&mut MemoryStore::default(), &longest, &hash("a")).is_ok());
    }

    #[test]
    fn events_the_emitter_would_refuse_are_not_recorded() {
        struct Typed(&'static str, Value);
        impl Serialize for Typed {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.1.serialize(s)
            }
        }
        impl DomainEvent for Typed {
            const TYPE: &'static str = "typed";
            fn event_type(&self) -> &str {
                self.0
            }
        }
        let Replay::Fresh(mut recorder) = begin(&mut MemoryStore::default(), "k", "h").unwrap()
        else {
            panic!("fresh");
        };
        let refused = [
            Typed("", serde_json::json!({})),
            Typed("aoi:plan", serde_json::json!({})),
            Typed("x", serde_json::json!([1, 2])),
            Typed("x", serde_json::json!({"type": "y"})),
            Typed("x", serde_json::json!({"aoi": {}})),
        ];
        for event in &refused {
            let e = recorder.record(event).unwrap_err();
            assert_eq!(e.code, EVENT_NOT_SERIALIZABLE);
            assert_eq!(e.category, Category::Internal);
        }
        recorder
            .record(&Typed("x", serde_json::json!({"a": 1})))
            .unwrap();
        let saved = recorder.finish(&mut MemoryStore::default(), true).unwrap();
        assert_eq!(saved.events.len(), 1);
    }
}
