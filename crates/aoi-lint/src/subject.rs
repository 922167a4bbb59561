//! One command under test: how to invoke it, and the runs several checks share.
//!
//! Every run gets a fresh [`Sandbox`] with the config's setup applied, so runs never see
//! each other's effects and can go in parallel. The base run (the command's example, in
//! machine mode) is made once and shared by the checks that judge it.

use std::ffi::OsString;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aoi::read::{CompiledSchema, Event, LineReader, ProcessEnd};
use aoi::{ErrorEvent, Meta, Report as Verification, Summary, Verifier, VerifyOptions, Warning};
use serde_json::{Map, Value};

use crate::config::CommandConfig;
use crate::manifest::{CommandEntry, InputSchema};
use crate::model::{cut, explained, Evidence};
use crate::sandbox::{Exit, Invocation, Run, Sandbox, Signal};
use crate::snapshot::{Change, Snapshot};
use crate::tool::Tool;

/// How long an unbounded command runs before lint interrupts it.
const UNBOUNDED_WARMUP: Duration = Duration::from_millis(300);

/// What one run of the command produced, judged by the verifier.
#[derive(Debug)]
pub struct Captured {
    /// The process's output and exit.
    pub run: Run,
    /// The verifier's report on stdout (with the tool's schema when it has one, and the exit
    /// status).
    pub verification: Verification,
    /// Every complete stdout line that decodes as an event, in order, typed (kept by the
    /// verifier as it read them).
    pub events: Vec<Event>,
    /// What changed in the sandbox during the run (setup excluded, ignored paths left out).
    pub changes: Vec<Change>,
}

impl Captured {
    /// Every `aoi:meta`, in order (a conforming stream has at most one).
    pub fn metas(&self) -> impl Iterator<Item = &Meta> {
        self.events.iter().filter_map(Event::as_meta)
    }

    /// Every `aoi:summary`, in order (a conforming stream has at most one).
    pub fn summaries(&self) -> impl Iterator<Item = &Summary> {
        self.events.iter().filter_map(Event::as_summary)
    }

    /// The `aoi:error` events, in order.
    pub fn errors(&self) -> impl Iterator<Item = &ErrorEvent> {
        self.events.iter().filter_map(Event::as_error)
    }

    /// The `aoi:warning` events, in order.
    pub fn warnings(&self) -> impl Iterator<Item = &Warning> {
        self.events.iter().filter_map(Event::as_warning)
    }

    /// The number of `aoi:plan` events.
    pub fn plans(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, Event::Plan(_)))
            .count()
    }

    /// The domain events' fields (without `type` and `aoi`), in order.
    pub fn domain(&self) -> impl Iterator<Item = &Map<String, Value>> {
        self.events.iter().filter_map(Event::domain_fields)
    }

    /// The summary, when the stream has one (the last).
    pub fn summary(&self) -> Option<&Summary> {
        self.summaries().last()
    }

    /// The meta event, when the stream has one (the first).
    pub fn meta(&self) -> Option<&Meta> {
        self.metas().next()
    }

    /// True when the summary says `ok:true` and the process exited 0.
    pub fn succeeded(&self) -> bool {
        self.run.exit.code() == Some(0) && self.summary().is_some_and(|s| s.ok)
    }

    /// Evidence naming this run.
    pub fn evidence(&self) -> Evidence {
        Evidence {
            invocation: self.run.argv.clone(),
            ..Evidence::default()
        }
    }

    /// Evidence naming this run and quoting `excerpt`.
    pub fn quote(&self, line: Option<u64>, excerpt: &str) -> Evidence {
        Evidence {
            invocation: self.run.argv.clone(),
            line,
            excerpt: Some(cut(excerpt, 300)),
            finding: None,
        }
    }

    /// A one-line description of how the run ended.
    pub fn ending(&self) -> String {
        if self.run.timed_out {
            return "it did not finish in time and was killed".into();
        }
        let status = self.run.exit.shell_status();
        match self.summary() {
            Some(s) => format!(
                "exit {status}, summary ok:{}{}",
                s.ok,
                s.reason
                    .map(|r| format!(" reason:{}", r.as_str()))
                    .unwrap_or_default()
            ),
            None => format!("exit {status}, no aoi:summary"),
        }
    }

    /// The first `aoi:error`'s category, code and message, for a detail line.
    pub fn first_error(&self) -> Option<String> {
        let e = self.errors().next()?;
        Some(format!("{} {}: {}", e.category, e.code, e.message))
    }
}

/// What a probe adds to the command's configured invocation.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Environment on top of the config's.
    pub env: Vec<(String, String)>,
    /// Stdin instead of the configured one.
    pub stdin: Option<Vec<u8>>,
}

/// One command under test.
#[derive(Debug)]
pub struct Subject<'t> {
    /// The tool.
    pub tool: &'t Tool,
    /// What capabilities says of the command (synthesized for a bare invocation).
    pub entry: CommandEntry,
    /// Its input schema, when discovery gave one.
    pub input: Option<&'t InputSchema>,
    /// Its settings from the config file.
    pub settings: CommandConfig,
    /// The arguments of the base invocation (without `--output jsonl`), or why there is none.
    pub base: Result<Vec<String>, String>,
    base_run: OnceLock<Result<Captured, String>>,
    replay: OnceLock<Result<Replay, String>>,
    /// Set by check 1 when capabilities lists the command but the tool does not have it.
    missing: OnceLock<Option<Run>>,
    /// The verifier's violations in the streams of every probe but the base run (which the
    /// stream checks judge themselves), for [`Subject::probe_violations`].
    probes: Mutex<Vec<ProbeViolation>>,
    /// What probes of a read-only command changed in their sandboxes, for check 1
    /// ([`Subject::probe_writes`]).
    writes: Mutex<Vec<ProbeWrites>>,
}

/// What one probe of a read-only command changed in its sandbox.
#[derive(Debug, Clone)]
pub struct ProbeWrites {
    /// The probe's argv.
    pub argv: Vec<String>,
    /// The changes (setup and ignored paths left out).
    pub changes: Vec<Change>,
}

/// The example run twice with the same `--idempotency-key` in one sandbox (§14.4), shared by
/// check 7 (the effect) and check 8 (the ids).
#[derive(Debug)]
pub struct Replay {
    /// The first run.
    pub first: Captured,
    /// The second, with the same key.
    pub second: Captured,
}

/// The key lint replays with.
pub const IDEMPOTENCY_PROBE_KEY: &str = "aoi-lint-idempotency-probe";

/// A violation the verifier found in the stream of one of lint's probes of a command.
#[derive(Debug, Clone)]
pub struct ProbeViolation {
    /// The probe's argv.
    pub argv: Vec<String>,
    /// The finding.
    pub finding: aoi::Finding,
}

impl<'t> Subject<'t> {
    /// The subject for `entry`: its base invocation is the config's, else its first
    /// capabilities example, else its bare name when it needs no operand.
    pub fn new(tool: &'t Tool, entry: CommandEntry) -> Subject<'t> {
        let mut settings = tool.config.command(&entry.name);
        // What the tool publishes for its examples, unless aoi-lint.toml says otherwise.
        if settings.setup.is_empty() {
            settings.setup = entry
                .setup
                .iter()
                .filter_map(|step| serde_json::from_value(step.clone()).ok())
                .collect();
        }
        if settings.stdin.is_none() {
            settings.stdin = entry.stdin.clone();
        }
        let input = tool.input_schema(&entry.name);
        // Without an input schema (the spec asks for one only where stdin is structured,
        // §12.1), whether the command needs operands is learnt by running it bare once.
        let guessed = settings.args.is_none() && entry.examples.is_empty() && input.is_none();
        let base = if let Some(args) = &settings.args {
            Ok(args.clone())
        } else if let Some(example) = entry.examples.first() {
            Ok(example.clone())
        } else if guessed || input.is_some_and(|i| i.required().is_empty()) {
            Ok(entry.words())
        } else {
            Err(format!(
                "`{}` has no example in capabilities and needs operands; give one under [commands.\"{}\"] in aoi-lint.toml",
                entry.name, entry.name
            ))
        };
        let mut subject = Subject {
            tool,
            entry,
            input,
            settings,
            base,
            base_run: OnceLock::new(),
            replay: OnceLock::new(),
            missing: OnceLock::new(),
            probes: Mutex::new(Vec::new()),
            writes: Mutex::new(Vec::new()),
        };
        if guessed
            && subject
                .base_run()
                .is_ok_and(|c| c.run.exit.code() == Some(64))
        {
            let name = &subject.entry.name;
            subject.base = Err(format!(
                "`{name}` has no example in capabilities nor an input schema, and run bare it is a usage error (exit 64): it needs operands; give one under [commands.\"{name}\"] in aoi-lint.toml"
            ));
            subject.base_run = OnceLock::new();
        }
        subject
    }

    /// A subject for a bare invocation (`aoi lint -- TOOL ARGS`).
    pub fn invocation(tool: &'t Tool, entry: CommandEntry, args: Vec<String>) -> Subject<'t> {
        let input = tool.input_schema(&entry.name);
        Subject {
            tool,
            settings: tool.config.command(&entry.name),
            entry,
            input,
            base: Ok(args),
            base_run: OnceLock::new(),
            replay: OnceLock::new(),
            missing: OnceLock::new(),
            probes: Mutex::new(Vec::new()),
            writes: Mutex::new(Vec::new()),
        }
    }

    /// True when the tool does not have this command although capabilities lists it: its
    /// example is a usage error and `COMMAND --help` fails (decided once).
    pub fn missing(&self) -> bool {
        self.missing_help().is_some()
    }

    /// The failed `COMMAND --help` run that shows the command is missing, if it is.
    pub fn missing_help(&self) -> Option<&Run> {
        self.missing
            .get_or_init(|| {
                let entry = &self.entry;
                if !entry.speaks_aoi() || entry.is_discovery() {
                    return None;
                }
                let base = self.base_run().ok()?;
                if base.run.exit.code() != Some(i32::from(aoi::exit_code::USAGE)) {
                    return None;
                }
                let mut words = entry.words();
                words.push("--help".into());
                let sandbox = self.fresh().ok()?;
                let help = sandbox
                    .run(&self.human_invocation_of(&words, &Extras::default()))
                    .ok()?;
                (help.exit.code() != Some(0)).then_some(help)
            })
            .as_ref()
    }

    /// The command's name.
    pub fn name(&self) -> &str {
        &self.entry.name
    }

    /// True when the run's last summary is an upstream's, forwarded: the command reads an
    /// upstream stream and the summary names another tool than the meta does. Forwarding is
    /// check 16's to judge; the other checks do not count its consequences again.
    pub fn forwarded_summary(&self, captured: &Captured) -> bool {
        let tools = (
            captured.meta().and_then(|m| m.tool.as_deref()),
            captured.summary().and_then(|s| s.tool.as_deref()),
        );
        self.takes("--input-jsonl") && matches!(tools, (Some(a), Some(b)) if a != b)
    }

    /// True when the command's input schema (or, without one, its manifest entry) says it
    /// takes `flag`.
    pub fn takes(&self, flag: &str) -> bool {
        // The input schema's flags, or what capabilities claims (§17): an input schema may
        // describe stdin records rather than the command line (§12.1), and a claim is tested
        // by running it.
        let claimed = match flag {
            "--dry-run" => self.entry.supports_dry_run,
            "--idempotency-key" => self.entry.supports_idempotency_key,
            "--cursor" => self.entry.supports_cursor,
            // §15: a bounded read takes --limit; a cursor pages what --limit cut.
            "--limit" => self.input.is_none() && (self.entry.bounded || self.entry.supports_cursor),
            "--confirm" => self.entry.requires_confirm || self.entry.destructive,
            "--input-jsonl" => self.entry.takes_jsonl(),
            _ => false,
        };
        claimed || self.input.is_some_and(|input| input.has_flag(flag))
    }

    /// A fresh sandbox with the config's setup applied: a copy of a sandbox the setup ran in
    /// once.
    pub fn fresh(&self) -> Result<Sandbox, String> {
        let config = &self.tool.sandbox;
        if self.tool.config.setup.is_empty() && self.settings.setup.is_empty() {
            return Sandbox::new(config).map_err(|e| format!("could not make a sandbox: {e}"));
        }
        let key = if self.settings.setup.is_empty() {
            String::new()
        } else {
            self.name().to_owned()
        };
        let slot = match self.tool.templates.lock() {
            Ok(mut map) => Arc::clone(map.entry(key).or_default()),
            Err(_) => return Err("a sandbox template could not be shared".into()),
        };
        let template = slot.get_or_init(|| self.set_up()).as_ref()?;
        Sandbox::from_template(config, template)
            .map_err(|e| format!("could not make a sandbox: {e}"))
    }

    /// A new sandbox with the global setup and this command's own setup run in it.
    fn set_up(&self) -> Result<Sandbox, String> {
        let sandbox = Sandbox::new(&self.tool.sandbox)
            .map_err(|e| format!("could not make a sandbox: {e}"))?;
        let own = self.settings.setup.iter().map(|step| (step, true));
        for (step, own) in self.tool.config.setup.iter().map(|s| (s, false)).chain(own) {
            let args = step.args();
            let mut inv = self.tool.invocation(args);
            if own {
                for (k, v) in &self.settings.env {
                    inv = inv.env(k, v);
                }
            }
            if let Some(stdin) = step.stdin() {
                inv = inv.stdin(stdin.as_bytes().to_vec());
            }
            let run = sandbox
                .run(&inv)
                .map_err(|e| format!("setup `{}` could not run: {e}", args.join(" ")))?;
            if run.exit.code() != Some(0) {
                return Err(format!(
                    "setup `{}` exited with status {}: {}",
                    args.join(" "),
                    run.exit.shell_status(),
                    cut(String::from_utf8_lossy(&run.stderr).trim(), 200)
                ));
            }
        }
        Ok(sandbox)
    }

    /// The invocation of `args` in machine mode, with the command's environment and stdin.
    pub fn invocation_of(&self, args: &[String], extras: &Extras) -> Invocation {
        self.with_settings(
            self.tool
                .invocation(machine(args, &self.tool.machine_args())),
            extras,
        )
    }

    /// The invocation of `args` exactly as given (human mode, unless they choose otherwise),
    /// with the command's environment and stdin.
    pub fn human_invocation_of(&self, args: &[String], extras: &Extras) -> Invocation {
        self.with_settings(self.tool.invocation(args), extras)
    }

    fn with_settings(&self, mut inv: Invocation, extras: &Extras) -> Invocation {
        for (k, v) in &self.settings.env {
            inv = inv.env(k, v);
        }
        for (k, v) in &extras.env {
            inv = inv.env(k, v);
        }
        match (&extras.stdin, &self.settings.stdin) {
            (Some(bytes), _) => inv.stdin(bytes.clone()),
            (None, Some(text)) => inv.stdin(text.clone().into_bytes()),
            (None, None) => inv,
        }
    }

    /// Runs `args` in machine mode in `sandbox`, noting what it changed there.
    pub fn exec_in(
        &self,
        sandbox: &Sandbox,
        args: &[String],
        extras: &Extras,
    ) -> Result<Captured, String> {
        self.exec_in_as(sandbox, args, extras, true)
    }

    /// [`Subject::exec_in`], its stream's violations recorded for the stream checks or not.
    fn exec_in_as(
        &self,
        sandbox: &Sandbox,
        args: &[String],
        extras: &Extras,
        record: bool,
    ) -> Result<Captured, String> {
        let (run, changes) = self.run_in(sandbox, args, extras)?;
        // An unbounded command's run is ended by lint's signal: what its stream shows is the
        // base run's and check 10's to judge.
        Ok(if record && !self.entry.unbounded {
            self.judge(run, changes)
        } else {
            self.judge_unrecorded(run, changes)
        })
    }

    /// Runs `args` in machine mode in `sandbox` (an unbounded command until lint's SIGINT),
    /// with the sandbox snapshotted around the run: the run and what it changed.
    fn run_in(
        &self,
        sandbox: &Sandbox,
        args: &[String],
        extras: &Extras,
    ) -> Result<(Run, Vec<Change>), String> {
        let before = snapshot(sandbox)?;
        let inv = self.invocation_of(args, extras);
        let run = if self.entry.unbounded {
            self.interrupt(sandbox, &inv, Signal::Interrupt)?
        } else {
            sandbox
                .run(&inv)
                .map_err(|e| format!("could not run `{}`: {e}", args.join(" ")))?
        };
        let changes = self.changes_since(sandbox, &before, &run.argv)?;
        Ok((run, changes))
    }

    /// What changed in `sandbox` since `before` (ignored paths left out). For a read-only
    /// command every change is noted for check 1, whichever probe made it (§14.1: read-only
    /// means no probe writes, `--cursor` pages and human mode included).
    pub fn changes_since(
        &self,
        sandbox: &Sandbox,
        before: &Snapshot,
        argv: &[String],
    ) -> Result<Vec<Change>, String> {
        let after = snapshot(sandbox)?;
        let changes = before.changes_ignoring(&after, &self.tool.config.ignore_paths);
        if self.entry.read_only && !changes.is_empty() {
            if let Ok(mut writes) = self.writes.lock() {
                writes.push(ProbeWrites {
                    argv: argv.to_vec(),
                    changes: changes.clone(),
                });
            }
        }
        Ok(changes)
    }

    /// What the probes of this read-only command changed, each probe once.
    pub fn probe_writes(&self) -> Vec<ProbeWrites> {
        self.writes.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Runs `args` in machine mode in a fresh sandbox.
    pub fn exec(&self, args: &[String], extras: &Extras) -> Result<Captured, String> {
        let sandbox = self.fresh()?;
        self.exec_in(&sandbox, args, extras)
    }

    /// [`Subject::exec`] for a probe whose check judges the stream's violations itself (so they
    /// count once, there).
    pub fn exec_judged_here(&self, args: &[String], extras: &Extras) -> Result<Captured, String> {
        let sandbox = self.fresh()?;
        self.exec_in_as(&sandbox, args, extras, false)
    }

    /// [`Subject::exec_judged_here`], the stream verified against `schema` instead of the
    /// tool's default schema (a negotiated `--schema-version`'s).
    pub fn exec_against(
        &self,
        args: &[String],
        schema: &CompiledSchema,
    ) -> Result<Captured, String> {
        let sandbox = self.fresh()?;
        let (run, changes) = self.run_in(&sandbox, args, &Extras::default())?;
        Ok(self.judge_against(run, changes, Some(schema)))
    }
    /// Starts an unbounded command, lets it run briefly, then sends `signal`.
    pub fn interrupt(
        &self,
        sandbox: &Sandbox,
        inv: &Invocation,
        signal: Signal,
    ) -> Result<Run, String> {
        let mut running = sandbox
            .spawn(inv)
            .map_err(|e| format!("could not start the command: {e}"))?;
        // Wait for the first line (aoi:meta): the tool is up and has its signal handling.
        let _ = running.read_line(self.tool.config.timeout());
        std::thread::sleep(UNBOUNDED_WARMUP);
        running
            .signal(signal)
            .map_err(|e| format!("could not signal the command: {e}"))?;
        running
            .wait(self.tool.config.timeout())
            .map_err(|e| format!("could not wait for the command: {e}"))
    }

    /// Verifies a run's stdout (with the tool's schema, when it has one, and the exit status)
    /// and decodes its events.
    pub fn judge(&self, run: Run, changes: Vec<Change>) -> Captured {
        let captured = self.judge_unrecorded(run, changes);
        self.record(&captured);
        captured
    }

    /// [`Subject::judge`] for a run whose stream lint cut on purpose (an early pipe close, a
    /// signal): its findings describe lint's doing, not the tool's, and count against nothing.
    pub fn judge_unrecorded(&self, run: Run, changes: Vec<Change>) -> Captured {
        self.judge_against(run, changes, self.tool.compiled.as_ref())
    }

    /// [`Subject::judge_unrecorded`] against `schema` (another version's, say) instead of the
    /// tool's default schema.
    pub fn judge_against(
        &self,
        run: Run,
        changes: Vec<Change>,
        schema: Option<&CompiledSchema>,
    ) -> Captured {
        // A capture lint's bound cut is judged by no check: only its findings are read (for
        // evidence), its events are not kept.
        let opts = VerifyOptions {
            keep_events: !run.stdout_truncated,
            ..VerifyOptions::default()
        };
        let mut verification = verify_with(&run.stdout, schema, Some(&run.exit), opts);
        let events = std::mem::take(&mut verification.events);
        Captured {
            run,
            verification,
            events,
            changes,
        }
    }

    /// Notes the violations in `captured`'s stream for [`Subject::probe_violations`].
    fn record(&self, captured: &Captured) {
        self.record_where(captured, |_| true);
    }

    /// [`Subject::record`] for the violations `keep` takes only: a probe whose check judges
    /// most of its stream itself still hands on what belongs to another check wherever it
    /// shows (prose on stdout is §2's on any path).
    pub fn record_where(&self, captured: &Captured, keep: impl Fn(&aoi::Finding) -> bool) {
        if captured.run.stdout_truncated {
            // Cut by lint's own bound: its end says nothing about the tool.
            return;
        }
        let all = &captured.verification.findings;
        let forwarded = self.forwarded_summary(captured);
        let violations = all
            .iter()
            .filter(|f| f.level == aoi::read::Level::Violation)
            .filter(|f| !explained(f, all))
            // An upstream's summary forwarded: check 16's, not an identity fault here.
            .filter(|f| !(forwarded && f.code == aoi::FindingCode::IdentityMismatch))
            .filter(|f| keep(f));
        if let Ok(mut probes) = self.probes.lock() {
            probes.extend(violations.map(|finding| ProbeViolation {
                argv: captured.run.argv.clone(),
                finding: finding.clone(),
            }));
        }
    }

    /// The violations found in the streams of this command's probes (the base run aside).
    pub fn probe_violations(&self) -> Vec<ProbeViolation> {
        self.probes.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The example run twice with the same `--idempotency-key` in one sandbox, made once and
    /// shared. An error when a run could not be made or the first did not succeed (nothing to
    /// replay).
    pub fn replay(&self) -> Result<&Replay, String> {
        self.replay
            .get_or_init(|| {
                let args = with(
                    self.base.as_ref()?,
                    "--idempotency-key",
                    IDEMPOTENCY_PROBE_KEY,
                );
                let sandbox = self.fresh()?;
                let first = self.exec_in(&sandbox, &args, &Extras::default())?;
                if !first.succeeded() {
                    return Err(format!(
                        "the first run did not succeed ({})",
                        first.ending()
                    ));
                }
                let second = self.exec_in(&sandbox, &args, &Extras::default())?;
                Ok(Replay { first, second })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The base run, made once and shared.
    pub fn base_run(&self) -> Result<&Captured, String> {
        self.base_run
            .get_or_init(|| {
                let args = self.base.clone()?;
                let sandbox = self.fresh()?;
                let captured = self.exec_in_as(&sandbox, &args, &Extras::default(), false)?;
                if captured.run.stdout_truncated {
                    // Lint's bound, not the tool's fault: the stream cannot be judged.
                    return Err(format!(
                        "the example wrote more than the {} MiB of stdout lint keeps of a run, so lint cut its stream; give a smaller example in aoi-lint.toml",
                        self.tool.sandbox.max_output >> 20
                    ));
                }
                Ok(captured)
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// A snapshot of `sandbox`, or why there is none.
pub fn snapshot(sandbox: &Sandbox) -> Result<Snapshot, String> {
    sandbox
        .snapshot()
        .map_err(|e| format!("could not snapshot the sandbox: {e}"))
}

/// Verifies `stdout` with the verifier (and `schema`, when given), judging the exit status.
pub fn verify(
    stdout: &[u8],
    schema: Option<&CompiledSchema>,
    exit: Option<&Exit>,
    unbounded: bool,
) -> Verification {
    let opts = VerifyOptions {
        unbounded,
        keep_events: true,
        ..VerifyOptions::default()
    };
    verify_with(stdout, schema, exit, opts)
}

/// [`verify`] with the verifier's options given.
fn verify_with(
    stdout: &[u8],
    schema: Option<&CompiledSchema>,
    exit: Option<&Exit>,
    opts: VerifyOptions,
) -> Verification {
    let mut verifier = Verifier::new(opts);
    if let Some(schema) = schema {
        verifier = verifier.with_compiled(schema);
    }
    let mut reader = LineReader::new(stdout);
    while let Ok(Some(frame)) = reader.next() {
        verifier.frame(frame);
    }
    verifier.finish(exit.map(|e| match e {
        Exit::Code(c) => ProcessEnd::Exited(*c),
        Exit::Signal(s) => ProcessEnd::Signaled(*s),
    }))
}

/// `args` with `machine_args` (the tool's machine-mode selector, `--output jsonl` by default)
/// added unless they already choose an output format.
pub fn machine(args: &[String], machine_args: &[String]) -> Vec<OsString> {
    let chooses = args.iter().any(|a| {
        a == "--output"
            || a == "--format"
            || a.starts_with("--output=")
            || a.starts_with("--format=")
    });
    let mut out: Vec<OsString> = args.iter().map(OsString::from).collect();
    if !chooses {
        out.extend(machine_args.iter().map(OsString::from));
    }
    out
}

/// `args` without `flag` (and its value, when `takes_value`), in both `--flag v` and
/// `--flag=v` spellings.
pub fn without(args: &[String], flag: &str, takes_value: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if a == flag {
            skip = takes_value;
            continue;
        }
        if a.starts_with(&format!("{flag}=")) {
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// `args` with `flag value` set (replacing any earlier value).
pub fn with(args: &[String], flag: &str, value: &str) -> Vec<String> {
    let mut out = without(args, flag, true);
    out.push(flag.to_owned());
    out.push(value.to_owned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn machine_mode_is_added_once() {
        assert_eq!(
            machine(&s(&["search", "x"]), &s(&["--output", "jsonl"])),
            ["search", "x", "--output", "jsonl"].map(OsString::from)
        );
        assert_eq!(
            machine(&s(&["x", "--format=jsonl"]), &s(&["--output", "jsonl"])).len(),
            2
        );
        assert_eq!(
            machine(&s(&["x"]), &s(&["--format", "jsonl"])),
            ["x", "--format", "jsonl"].map(OsString::from)
        );
    }

    #[test]
    fn flags_are_removed_and_replaced_in_both_spellings() {
        let args = s(&["delete", "--confirm", "--confirm-count", "3", "--limit=5"]);
        assert_eq!(
            without(&args, "--confirm", false),
            s(&["delete", "--confirm-count", "3", "--limit=5"])
        );
        assert_eq!(
            without(&args, "--confirm-count", true),
            s(&["delete", "--confirm", "--limit=5"])
        );
        assert_eq!(
            with(&args, "--limit", "1"),
            s(&[
                "delete",
                "--confirm",
                "--confirm-count",
                "3",
                "--limit",
                "1"
            ])
        );
    }
}
