//! One mutating command's guards, done by the SDK in one documented order (§14): the handler
//! says what it would change (a [`Plan`]), how many items (for `--confirm-count`), what shapes
//! the request, and the effect; [`Mutation::run`] does the rest.
//!
//! The order:
//! 1. `--dry-run`: the plan is written as `aoi:plan` and nothing else happens (no
//!    confirmation is needed to look, and the key is not used).
//! 2. The confirmation, when the command declared one ([`Mutation::confirm`]): a destructive
//!    run without `--confirm`, or with a `--confirm-count` that is not the count, is refused
//!    (`reason:"denied"`, exit 77) before anything is touched (§14.3).
//! 3. `--idempotency-key`: the key is held in the tool's [`FileStore`] (a second run with it
//!    waits), then looked up: the same request replays the recorded events
//!    (`idempotent_replay: true`); another request with the key is a `conflict`; a run that
//!    died holding it leaves its outcome unknown (`conflict`, `retryable: false`).
//! 4. The effect, which returns the domain events that say what it did (§14.5).
//! 5. The record of those events under the key, **then** the events on the stream: a retry
//!    after a cut pipe replays instead of applying the effect again (§14.4).
//!
//! ```
//! # use aoi::prelude::*;
//! # #[derive(serde::Serialize)] struct Deleted { id: String }
//! # impl DomainEvent for Deleted { const TYPE: &'static str = "deleted"; }
//! # fn delete(out: &mut Emitter<Vec<u8>>, ids: Vec<String>,
//! #           mutation: &MutationArgs, confirm: &ConfirmArgs) -> RunResult {
//! Mutation::new(mutation)
//!     .confirm(confirm, ids.len() as u64)
//!     .run(out, &ids, Plan::new("delete", ids.join(",")), || {
//!         // ... delete them ...
//!         Ok(ids.iter().map(|id| Deleted { id: id.clone() }).collect())
//!     })
//! # }
//! ```

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::cursor::request_hash;
use super::flags::{ConfirmArgs, MutationArgs};
use super::safety::{begin, replay, Confirmation, Replay, IDEMPOTENCY_STORE_FAILED};
use super::store::FileStore;
use crate::emit::{Emitter, Failure, Outcome};
use crate::wire::{Category, ErrorEvent, Plan};
use crate::DomainEvent;

/// A mutating command's dry run, confirmation and idempotency (see the [module docs](self)).
#[derive(Debug)]
pub struct Mutation {
    dry_run: bool,
    key: Option<String>,
    confirmation: Option<(Confirmation, u64)>,
    store: Option<PathBuf>,
}

impl Mutation {
    /// A mutation under the command's `--dry-run` and `--idempotency-key` (a
    /// [`MutationArgs`], or a [`DryRunArgs`](super::flags::DryRunArgs) for a command that takes
    /// no key); the command and the tool (whose state directory keeps the records) are those
    /// of the stream it runs on.
    pub fn new(flags: impl Into<MutationArgs>) -> Mutation {
        let flags: MutationArgs = flags.into();
        Mutation {
            dry_run: flags.dry_run,
            key: flags.idempotency_key,
            confirmation: None,
            store: None,
        }
    }

    /// The command destroys: `--confirm` is required, and `--confirm-count`, when given, must
    /// be `affected`, the number of items the run would change.
    pub fn confirm(mut self, flags: &ConfirmArgs, affected: u64) -> Mutation {
        self.confirmation = Some((
            Confirmation::new(flags.confirm, flags.confirm_count),
            affected,
        ));
        self
    }

    /// Keeps the idempotency records in `dir` instead of the tool's state directory
    /// ([`FileStore::for_tool`]).
    pub fn store_in(mut self, dir: impl Into<PathBuf>) -> Mutation {
        self.store = Some(dir.into());
        self
    }

    fn file_store(&self, tool: &str) -> Result<FileStore, ErrorEvent> {
        let opened = match &self.store {
            Some(dir) => FileStore::new(dir),
            None => FileStore::for_tool(tool),
        };
        opened.map_err(|e| {
            ErrorEvent::new(
                Category::Io,
                IDEMPOTENCY_STORE_FAILED,
                format!("the idempotency store cannot be opened: {e}"),
            )
            .retryable(false)
        })
    }

    /// Runs the mutation in the documented order: `request` is what decides the effect (the
    /// arguments a replay must match), `plan` what a dry run shows, `effect` the change,
    /// returning the domain events that say what it did. The outcome to finish with.
    pub fn run<W, R, E, F>(
        self,
        out: &mut Emitter<W>,
        request: &R,
        plan: Plan,
        effect: F,
    ) -> Result<Outcome, Failure>
    where
        W: Write,
        R: Serialize + ?Sized,
        E: DomainEvent,
        F: FnOnce() -> Result<Vec<E>, Failure>,
    {
        if self.dry_run {
            out.plan(&plan)?;
            return Ok(Outcome::success());
        }
        let command = out.command().unwrap_or_default();
        if let Some((confirmation, affected)) = &self.confirmation {
            confirmation.check(&command, *affected)?;
        }
        let Some(key) = self.key.clone() else {
            out.check_cancelled()?;
            for event in &effect()? {
                out.emit(event)?;
            }
            return Ok(Outcome::success());
        };
        let mut store = self.file_store(&out.identity().tool)?;
        let _held = store.lock(&key)?;
        let hash = request_hash(&command, request);
        let mut recorder = match begin(&mut store, &key, &hash)? {
            Replay::Replayed(recorded) => return Ok(replay(&recorded, out)?),
            Replay::Fresh(recorder) => recorder,
        };
        out.check_cancelled()?;
        let events = effect()?;
        for event in &events {
            recorder.record(event)?;
        }
        recorder.finish(&mut store, true)?;
        for event in &events {
            out.emit(event)?;
        }
        Ok(Outcome::success())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::read::decode;
    use crate::Identity;

    #[derive(Serialize)]
    struct Deleted {
        id: String,
    }

    impl DomainEvent for Deleted {
        const TYPE: &'static str = "deleted";
    }

    /// Runs `mutation` on a fresh stream: the outcome's summary, the event types, and how
    /// many times the effect ran.
    fn run(mutation: Mutation, effects: &Cell<u32>) -> (Vec<String>, Result<Outcome, Failure>) {
        let mut out = Emitter::builder(Identity::new("notes", "1", "s", "1.0.0"))
            .command("delete")
            .start(Vec::new())
            .unwrap();
        let result = mutation.run(&mut out, &("n1",), Plan::new("delete", "n1"), || {
            effects.set(effects.get() + 1);
            Ok(vec![Deleted { id: "n1".into() }])
        });
        let outcome = result
            .as_ref()
            .map_or_else(|_| Outcome::failed(), Clone::clone);
        out.finish(outcome).unwrap();
        let types = String::from_utf8(out.into_writer())
            .unwrap()
            .lines()
            .map(|l| decode(l.as_bytes()).unwrap().event.event_type().to_owned())
            .collect();
        (types, result)
    }

    fn flags(dry_run: bool, key: Option<&str>) -> MutationArgs {
        MutationArgs {
            dry_run,
            idempotency_key: key.map(str::to_owned),
        }
    }

    #[test]
    fn a_dry_run_plans_and_touches_nothing_even_unconfirmed() {
        let effects = Cell::new(0);
        let m = Mutation::new(flags(true, Some("k"))).confirm(&ConfirmArgs::default(), 1);
        let (types, result) = run(m, &effects);
        assert!(result.is_ok());
        assert_eq!(types, ["aoi:meta", "aoi:plan", "aoi:summary"]);
        assert_eq!(effects.get(), 0);
    }

    #[test]
    fn an_unconfirmed_or_miscounted_run_is_refused_before_the_effect() {
        let effects = Cell::new(0);
        let m = Mutation::new(flags(false, None)).confirm(&ConfirmArgs::default(), 1);
        assert!(run(m, &effects).1.is_err());
        let wrong = ConfirmArgs {
            confirm: true,
            confirm_count: Some(2),
        };
        let m = Mutation::new(flags(false, None)).confirm(&wrong, 1);
        assert!(run(m, &effects).1.is_err());
        assert_eq!(effects.get(), 0);
    }

    #[test]
    fn a_key_applies_once_then_replays_and_another_request_with_it_is_a_conflict() {
        let dir = aoi_test::temp_dir("mutation-key");
        let effects = Cell::new(0);
        let confirmed = ConfirmArgs {
            confirm: true,
            confirm_count: Some(1),
        };
        for _ in 0..2 {
            let m = Mutation::new(flags(false, Some("k1")))
                .confirm(&confirmed, 1)
                .store_in(dir.path());
            let (types, result) = run(m, &effects);
            assert!(result.is_ok());
            assert_eq!(types, ["aoi:meta", "deleted", "aoi:summary"]);
        }
        assert_eq!(effects.get(), 1, "the second run replayed");
        let mut out = Emitter::builder(Identity::new("notes", "1", "s", "1.0.0"))
            .command("delete")
            .start(Vec::new())
            .unwrap();
        let other = Mutation::new(flags(false, Some("k1")))
            .store_in(dir.path())
            .run(&mut out, &("n2",), Plan::new("delete", "n2"), || {
                Ok(Vec::<Deleted>::new())
            });
        assert!(other.is_err(), "the key was used for another request");
    }
}
