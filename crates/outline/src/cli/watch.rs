//! `outline watch`: an unbounded stream of changes (§4.2), with `aoi:heartbeat` at the
//! documented interval and a `cancelled` summary on SIGINT/SIGTERM.

use crate::cli::Db;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use aoi::app::App;
use aoi::surface::flags::GlobalArgs;
use aoi::{Heartbeat, Outcome};
use clap::Args;

use super::errors::RunError;
use super::events::Changed;
use super::{db_path, human_failure, open_store, Access, Opened};

/// How many change-log entries one poll reads at most.
const BATCH: usize = 500;
/// The longest wait between two polls of the change log, whatever the heartbeat interval.
const MAX_POLL: Duration = Duration::from_millis(200);

/// `outline watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Milliseconds between two heartbeats, which say the watch is alive (changes are shown as they happen).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    interval_ms: u64,
    /// Start after this change-log position (a `seq` from an earlier `changed` event; 0 for
    /// the whole log); default: only changes from now on.
    #[arg(long, value_name = "POS")]
    since: Option<i64>,
}

/// The watched database. A database that does not exist yet is watched as an empty one
/// (watch is read-only and creates nothing) until the first write creates it.
struct Watched {
    db: Db,
    path: PathBuf,
    store: Opened,
}

impl Watched {
    fn open(db: Db) -> Result<Watched, RunError> {
        let path = db_path(&db)?;
        let store = open_store(db.clone(), Access::Read)?;
        Ok(Watched { db, path, store })
    }

    /// Switches to the real database once it has been created.
    fn refresh(&mut self) -> Result<(), RunError> {
        if self.store.path().is_none() && self.path.exists() {
            self.store = open_store(self.db.clone(), Access::Read)?;
        }
        Ok(())
    }
}

/// A millisecond timestamp as the time of day in UTC, `HH:MM:SS`.
fn clock(ms: i64) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Runs `outline watch`.
pub fn watch(app: &App, global: &GlobalArgs, db: Db, args: WatchArgs) -> ExitCode {
    let interval = Duration::from_millis(args.interval_ms);
    let poll = interval.min(MAX_POLL);
    if !global.machine() {
        // It watches until it cannot write (Ok: why) or cannot read the store (Err).
        let run = || -> Result<std::io::Error, RunError> {
            let mut watched = Watched::open(db)?;
            let mut since = match args.since {
                Some(pos) => pos,
                None => watched.store.last_change()?,
            };
            // For a person at a terminal: what is watched, and how to stop.
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                let _ = writeln!(
                    std::io::stderr(),
                    "watching {} for changes; Ctrl-C stops",
                    aoi::surface::term::printable_line(&watched.path.display().to_string())
                );
            }
            loop {
                watched.refresh()?;
                for change in watched.store.watch_changes(since, BATCH)? {
                    since = change.seq;
                    // The title as it is now (a deleted document has none left).
                    let title = watched
                        .store
                        .get(&change.id)
                        .map_or_else(|_| "(deleted)".to_owned(), |d| d.title);
                    let line = format!(
                        "{}  {:>6}  {:<8} {}  {}  {}{}\n",
                        clock(change.at),
                        change.seq,
                        change.kind.as_str(),
                        change.id,
                        change.collection,
                        title,
                        change
                            .from
                            .as_deref()
                            .map(|f| format!(" (from {f})"))
                            .unwrap_or_default()
                    );
                    let line =
                        aoi::surface::term::printable_line(line.trim_end()).into_owned() + "\n";
                    let mut out = std::io::stdout().lock();
                    if let Err(e) = out.write_all(line.as_bytes()).and_then(|()| out.flush()) {
                        return Ok(e);
                    }
                }
                std::thread::sleep(poll);
            }
        };
        return match run() {
            // Quietly, with the status a shell gives a process ended by SIGPIPE.
            Ok(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                ExitCode::from(aoi::exit_code::SIGPIPE)
            }
            // Any other failure to write is not a success, and says why in one line.
            Ok(e) => {
                let _ = writeln!(std::io::stderr(), "error: writing to stdout failed: {e}");
                ExitCode::from(aoi::exit_code::IO_ERR)
            }
            Err(e) => human_failure(e, global.color_allowed()),
        };
    }
    app.run(global, |out| {
        let mut watched = Watched::open(db)?;
        let mut since = match args.since {
            Some(pos) => pos,
            None => watched.store.last_change().map_err(RunError::from)?,
        };
        let cancel = out.cancel_token();
        let heartbeat = Heartbeat {
            interval_ms: Some(args.interval_ms),
            properties: None,
        };
        out.heartbeat(&heartbeat)?;
        out.flush()?;
        let mut last_beat = Instant::now();
        loop {
            watched.refresh()?;
            let changes = watched
                .store
                .watch_changes(since, BATCH)
                .map_err(RunError::from)?;
            let more = changes.len() == BATCH;
            for change in changes {
                since = change.seq;
                out.emit(&Changed::from_change(change))?;
            }
            if last_beat.elapsed() >= interval {
                out.heartbeat(&heartbeat)?;
                last_beat = Instant::now();
            }
            out.flush()?;
            if more {
                out.check_cancelled()?;
                continue;
            }
            let wait = poll.min(interval.saturating_sub(last_beat.elapsed()));
            if cancel.sleep(wait).is_some() {
                return Ok(Outcome::cancelled());
            }
        }
    })
}
