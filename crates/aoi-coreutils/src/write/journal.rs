//! One run of a write command: every effect through one door, every result named once.
//!
//! [`Journal::apply`] is the door: under `--dry-run` it writes the step as an `aoi:plan` (or,
//! for a person, a `would ...` line) and never calls the effect (§14.2); otherwise it calls
//! it, and a failure becomes an item-scope `aoi:error` while the run goes on (§9.1).
//! [`Journal::done`] writes the audit event of what was done (§14.5) and records it for
//! replay when the run has an `--idempotency-key` (§14.4). [`run`] ties these to the two
//! modes: machine mode under the SDK's harness, human mode silent on success like GNU.

use std::io::{self, Write};
use std::process::ExitCode;

use aoi::app::App;
use aoi::surface::cursor::request_hash;
use aoi::surface::flags::GlobalArgs;
use aoi::surface::safety::{
    begin, replay, ApplyError, Effects, Recorded, Recorder, Replay, CONFIRMATION_REQUIRED,
    CONFIRM_COUNT_MISMATCH, CONFIRM_COUNT_REQUIRED,
};
use aoi::surface::term::printable_line;
use aoi::{Category, DomainEvent, Emitter, ErrorEvent, Failure, Outcome, Plan};
use serde_json::{Map, Value};

use super::store::FileStore;
use crate::report::{human_exit, say_error};

/// What a write command is asked to do, for the journal.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// The command's name (`rm`).
    pub command: &'static str,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--idempotency-key` (not consulted under `--dry-run`, which changes nothing to repeat).
    pub key: Option<&'a str>,
    /// `-v`: a line per effect in human mode.
    pub verbose: bool,
    /// What decides the effect (operands, flags, the working directory): the idempotent
    /// request this key stands for.
    pub request: Value,
}

/// One side effect, described for a plan and for a person.
#[derive(Debug, Clone)]
pub struct Step {
    /// The `aoi:plan` event.
    pub plan: Plan,
    /// The effect in words, for `would ...` under `--dry-run` in human mode.
    pub words: String,
}

impl Step {
    /// A step that `action`s `target`, with a one-line `detail` and the words for a person.
    pub fn new(action: &str, target: &str, detail: String, words: String) -> Step {
        Step {
            plan: Plan {
                action: action.to_owned(),
                target: Some(target.to_owned()),
                detail: Some(detail),
                properties: None,
            },
            words,
        }
    }

    /// Adds a tool-specific plan property.
    pub fn property(mut self, key: &str, value: impl Into<Value>) -> Step {
        self.plan
            .properties
            .get_or_insert_with(Map::new)
            .insert(key.to_owned(), value.into());
        self
    }
}

/// What [`Journal::apply`] did.
#[derive(Debug)]
pub enum Applied<T> {
    /// `--dry-run`: planned, not done.
    Planned,
    /// Done, with the effect's result.
    Done(T),
    /// The effect failed; its item error is written.
    Failed,
}

enum Sink<'a> {
    Machine(&'a mut Emitter<aoi::app::Out>),
    Human,
}

/// The state of one run. See the [module docs](self).
pub struct Journal<'a> {
    sink: Sink<'a>,
    effects: Effects,
    command: &'static str,
    verbose: bool,
    recorder: Option<Recorder>,
    done: u64,
    failed: u64,
    skipped: u64,
    properties: Vec<(String, Value)>,
    written: io::Result<()>,
}

impl std::fmt::Debug for Journal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("command", &self.command)
            .field("dry_run", &self.effects.is_dry_run())
            .field("done", &self.done)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<'a> Journal<'a> {
    fn new(sink: Sink<'a>, spec: &Spec<'_>) -> Journal<'a> {
        Journal {
            sink,
            effects: Effects::new(spec.dry_run),
            command: spec.command,
            verbose: spec.verbose,
            recorder: None,
            done: 0,
            failed: 0,
            skipped: 0,
            properties: Vec::new(),
            written: Ok(()),
        }
    }

    /// True under `--dry-run`.
    pub fn dry_run(&self) -> bool {
        self.effects.is_dry_run()
    }

    /// Plans or performs one effect (see the [module docs](self)).
    pub fn apply<T>(
        &mut self,
        step: Step,
        effect: impl FnOnce() -> Result<T, ErrorEvent>,
    ) -> Result<Applied<T>, Failure> {
        let result = match &mut self.sink {
            Sink::Machine(out) => match self.effects.apply(out, step.plan, effect) {
                Ok(None) => return Ok(Applied::Planned),
                Ok(Some(value)) => Ok(value),
                Err(ApplyError::Emit(e)) => return Err(e.into()),
                Err(ApplyError::Effect(e)) => Err(e),
            },
            Sink::Human => {
                if self.effects.is_dry_run() {
                    let line = format!("aoi-coreutils {}: would {}", self.command, step.words);
                    self.line(&line);
                    return Ok(Applied::Planned);
                }
                effect()
            }
        };
        match result {
            Ok(value) => Ok(Applied::Done(value)),
            Err(error) => {
                self.item_error(error)?;
                Ok(Applied::Failed)
            }
        }
    }

    /// Writes the audit event of an effect that was done, recording it for replay; `line` is
    /// the `-v` line for a person.
    pub fn done<E: DomainEvent>(
        &mut self,
        event: &E,
        line: impl FnOnce() -> String,
    ) -> Result<(), Failure> {
        self.done += 1;
        if let Some(recorder) = &mut self.recorder {
            recorder.record(event)?;
        }
        match &mut self.sink {
            Sink::Machine(out) => out.emit(event)?,
            Sink::Human if self.verbose => {
                let text = line();
                self.line(&text);
            }
            Sink::Human => {}
        }
        Ok(())
    }

    /// Writes an item-scope error: this item failed, the run goes on and ends `ok:false`.
    pub fn item_error(&mut self, error: ErrorEvent) -> Result<(), Failure> {
        self.failed += 1;
        match &mut self.sink {
            Sink::Machine(out) => out.error(&error.item())?,
            Sink::Human => say_error(self.command, &error),
        }
        Ok(())
    }

    /// Counts an item left alone on purpose (`-n` and an existing destination).
    pub fn skip(&mut self) {
        self.skipped += 1;
    }

    /// Adds a summary property.
    pub fn property(&mut self, key: &str, value: impl Into<Value>) {
        self.properties.push((key.to_owned(), value.into()));
    }

    fn line(&mut self, text: &str) {
        if self.written.is_ok() {
            self.written = writeln!(io::stdout(), "{}", printable_line(text));
        }
    }

    fn replay(&mut self, recorded: &Recorded) -> Result<Outcome, Failure> {
        match &mut self.sink {
            Sink::Machine(out) => Ok(replay(recorded, out)?),
            Sink::Human if recorded.ok => Ok(Outcome::success()),
            Sink::Human => Ok(Outcome::failed()),
        }
    }

    /// Saves the record (unless nothing was done and something failed: then a retry may
    /// succeed and doubles nothing) and returns the outcome.
    fn finish(&mut self, store: Option<FileStore>) -> Result<Outcome, Failure> {
        let mut extra: Vec<(String, Value)> = std::mem::take(&mut self.properties);
        if self.skipped > 0 {
            extra.push(("skipped".to_owned(), self.skipped.into()));
        }
        if self.dry_run() {
            extra.push(("planned".to_owned(), self.effects.planned().into()));
        }
        if let (Some(mut recorder), Some(mut store)) = (self.recorder.take(), store) {
            if self.done > 0 || self.failed == 0 {
                for (key, value) in &extra {
                    recorder.property(key.clone(), value.clone());
                }
                if self.failed > 0 {
                    recorder.property("item_errors", self.failed);
                }
                recorder.finish(&mut store, self.failed == 0)?;
            }
        }
        let mut outcome = if self.failed > 0 {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        for (key, value) in extra {
            outcome = outcome.property(key, value);
        }
        Ok(outcome)
    }
}

/// Runs a write command's `body` in the mode `global` selects, with `--idempotency-key`
/// replay and recording around it.
pub fn run(
    app: &App,
    global: &GlobalArgs,
    spec: Spec<'_>,
    body: impl FnOnce(&mut Journal<'_>) -> Result<(), Failure>,
) -> ExitCode {
    if global.machine() {
        return app.run(global, |out| {
            let mut journal = Journal::new(Sink::Machine(out), &spec);
            execute(&mut journal, &spec, body)
        });
    }
    let mut journal = Journal::new(Sink::Human, &spec);
    let result = execute(&mut journal, &spec, body);
    let written = std::mem::replace(&mut journal.written, Ok(()));
    let tool = format!("aoi-coreutils {}", spec.command);
    match result {
        Ok(outcome) => human_exit(&tool, written, usize::from(!outcome.is_ok())),
        Err(failure) => {
            let denied = [
                CONFIRMATION_REQUIRED,
                CONFIRM_COUNT_MISMATCH,
                CONFIRM_COUNT_REQUIRED,
            ]
            .contains(&failure.event().code);
            let error = failure.into_event();
            say_error(spec.command, &error);
            if let Some(hint) = &error.hint {
                let _ = writeln!(
                    io::stderr(),
                    "aoi-coreutils {}: hint: {}",
                    spec.command,
                    printable_line(hint)
                );
            }
            let _ = io::stdout().flush();
            ExitCode::from(match error.category {
                _ if denied => aoi::exit_code::NO_PERM,
                Category::Usage => aoi::exit_code::USAGE,
                _ => 1,
            })
        }
    }
}

fn execute(
    journal: &mut Journal<'_>,
    spec: &Spec<'_>,
    body: impl FnOnce(&mut Journal<'_>) -> Result<(), Failure>,
) -> Result<Outcome, Failure> {
    let mut store = None;
    // Held from the lookup to the save, so a concurrent run with the key waits its turn.
    let mut _lock = None;
    if let (Some(key), false) = (spec.key, spec.dry_run) {
        let mut files = FileStore::from_env()?;
        _lock = Some(files.lock(key)?);
        let hash = request_hash(spec.command, &spec.request);
        match begin(&mut files, key, &hash)? {
            Replay::Replayed(recorded) => return journal.replay(&recorded),
            Replay::Fresh(recorder) => {
                journal.recorder = Some(recorder);
                store = Some(files);
            }
        }
    }
    body(journal)?;
    journal.finish(store)
}
