//! Human-mode output: aligned tables and short lines on stdout, colour only on a terminal,
//! and a progress line on stderr for long runs (§1.2: human mode may have colour and
//! progress bars; machine mode never does, and never reaches this module).
//!
//! Write errors are ignored: a reader that went away (`outline list | head -n 1`) is not a
//! failure of the command, and must not end it with a panic message.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use aoi::surface::flags::GlobalArgs;

/// Whether stdout gets colour: only on a terminal, and never under `--no-color` or
/// `NO_COLOR`.
#[derive(Debug, Clone, Copy)]
pub struct Paint(bool);

impl Paint {
    /// The paint for this run's stdout.
    pub fn stdout(global: &GlobalArgs) -> Paint {
        Paint(global.color_allowed() && std::io::stdout().is_terminal())
    }

    /// `text` in bold.
    pub fn bold(self, text: &str) -> String {
        self.wrap("\u{1b}[1m", text)
    }

    /// `text` dimmed.
    pub fn dim(self, text: &str) -> String {
        self.wrap("\u{1b}[2m", text)
    }

    /// The marks around a search match: bold yellow, or brackets without colour.
    pub fn match_marks(self) -> (&'static str, &'static str) {
        if self.0 {
            ("\u{1b}[1;33m", "\u{1b}[0m")
        } else {
            ("[", "]")
        }
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("{code}{text}\u{1b}[0m")
        } else {
            text.to_owned()
        }
    }
}

fn write_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.write_all(b"\n");
}

/// Prints rows under a bold header, each column padded to its widest cell (cells hold no
/// colour codes, except in the last column, which is never padded).
pub fn table(paint: Paint, header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>, bold: bool| {
        let last = cells.len().saturating_sub(1);
        let text: Vec<String> = cells
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                if i == last {
                    c
                } else {
                    let pad = widths[i].saturating_sub(c.chars().count());
                    format!("{c}{}", " ".repeat(pad))
                }
            })
            .collect();
        let text = text.join("  ");
        let text = text.trim_end();
        if bold {
            write_line(&paint.bold(text));
        } else {
            write_line(text);
        }
    };
    line(header.iter().map(|h| (*h).to_owned()).collect(), true);
    for row in rows {
        line(row.clone(), false);
    }
}

/// Prints one line.
pub fn line(text: &str) {
    write_line(text);
}

/// Tags as shown to a person: comma-separated, or `-`.
pub fn tags(tags: &[String]) -> String {
    if tags.is_empty() {
        "-".to_owned()
    } else {
        tags.join(",")
    }
}

/// How long ago a millisecond timestamp was, in words.
pub fn ago(ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let secs = (now - ms).max(0) / 1000;
    match secs {
        0..=59 => "just now".to_owned(),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// A progress line on stderr for a long human-mode run: drawn only when stderr is a terminal,
/// redrawn at most every [`Progress::REDRAW`], and erased when the run ends, so that what
/// stays on the screen is the command's result.
#[derive(Debug)]
pub struct Progress {
    on: bool,
    label: &'static str,
    done: u64,
    started: Instant,
    drawn: Option<Instant>,
}

impl Progress {
    /// How often the line is redrawn at most.
    pub const REDRAW: Duration = Duration::from_millis(100);

    /// Progress on stderr, when it is a terminal and the run is in human mode.
    pub fn stderr(human: bool) -> Progress {
        Progress::new(human && std::io::stderr().is_terminal())
    }

    /// Progress that draws nothing (machine mode).
    pub fn off() -> Progress {
        Progress::new(false)
    }

    fn new(on: bool) -> Progress {
        Progress {
            on,
            label: "",
            done: 0,
            started: Instant::now(),
            drawn: None,
        }
    }

    /// Starts a phase, counting records from 0.
    pub fn phase(&mut self, label: &'static str) {
        self.label = label;
        self.done = 0;
        self.started = Instant::now();
        self.draw();
    }

    /// One more step done.
    pub fn tick(&mut self) {
        self.done += 1;
        if self.on && self.drawn.is_none_or(|at| at.elapsed() >= Self::REDRAW) {
            self.draw();
        }
    }

    fn draw(&mut self) {
        if !self.on {
            return;
        }
        let secs = self.started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 {
            format!("  {:.0}/s", self.done as f64 / secs)
        } else {
            String::new()
        };
        let line = format!("{} {} records{rate}", self.label, self.done);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\u{1b}[2K{line}");
        let _ = err.flush();
        self.drawn = Some(Instant::now());
    }

    /// Erases the line.
    pub fn finish(&mut self) {
        if self.on && self.drawn.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\u{1b}[2K");
            let _ = err.flush();
            self.drawn = None;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
