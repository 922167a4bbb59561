//! `--debug`: diagnostics on stderr for a person finding out what happened: the database
//! resolved and how it was opened, how long the run took, and a failure's causes. Never on
//! stdout (machine mode stays a clean stream), each line made printable, and no secret: the
//! token is never read here, and a path or an SQL error carries none.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use aoi::surface::term::printable_line;

static ON: AtomicBool = AtomicBool::new(false);

fn started() -> &'static Instant {
    static STARTED: OnceLock<Instant> = OnceLock::new();
    STARTED.get_or_init(Instant::now)
}

/// Turns the diagnostics on (from `--debug`) and starts the clock.
pub fn enable(on: bool) {
    started();
    ON.store(on, Ordering::Relaxed);
}

fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// One diagnostic line: `outline: debug: +12.3 ms TEXT`.
pub fn log(text: impl AsRef<str>) {
    if !on() {
        return;
    }
    let ms = started().elapsed().as_secs_f64() * 1000.0;
    let line = format!(
        "outline: debug: +{ms:.1} ms {}\n",
        printable_line(text.as_ref())
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The causes of `error`, outermost first, one line each.
pub fn causes(error: &(dyn std::error::Error + 'static)) {
    if !on() {
        return;
    }
    let mut cause = Some(error);
    while let Some(e) = cause {
        log(format!("cause: {e}"));
        cause = e.source();
    }
}
