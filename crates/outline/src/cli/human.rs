//! Human-mode output: aligned tables and short lines on stdout, colour only on a terminal,
//! and a progress line on stderr for long runs (§1.2: human mode may have colour and
//! progress bars; machine mode never does, and never reaches this module).
//!
//! A reader that went away (`outline list | head -n 1`) is not a failure of the command, and
//! must not end it with a panic message: that write error is ignored. Any other (a full disk
//! behind `>`, a failing device) is remembered, and [`checked_exit`] turns the run's success
//! into 74 (§6: output that was lost is not a success).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use aoi::surface::flags::GlobalArgs;
use aoi::surface::term;

pub use aoi::surface::color::Paint;

/// The paint for this run's stdout: colour only on a terminal, and never under `--no-color`
/// or `NO_COLOR` (the SDK's one painter).
pub fn stdout_paint(global: &GlobalArgs) -> Paint {
    Paint::for_stream(&std::io::stdout(), global.no_color)
}

/// The marks around a search match: bold yellow, or brackets without colour.
fn match_marks(paint: Paint) -> (&'static str, &'static str) {
    if paint.is_on() {
        ("\u{1b}[1;33m", "\u{1b}[0m")
    } else {
        ("[", "]")
    }
}

/// The first failure to write stdout other than a closed pipe, as the system put it.
static WRITE_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn write_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"));
    if let Err(e) = written {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = WRITE_FAILED.set(e.to_string());
        }
    }
}

/// `code`, unless it is a success and a line of human output could not be written (other than
/// to a reader that went away): then 74 (`EX_IOERR`), with one line on stderr saying why.
pub fn checked_exit(code: std::process::ExitCode) -> std::process::ExitCode {
    match WRITE_FAILED.get() {
        Some(cause) if code == std::process::ExitCode::SUCCESS => {
            let _ = writeln!(
                std::io::stderr(),
                "error: writing to stdout failed: {cause}"
            );
            std::process::ExitCode::from(aoi::exit_code::IO_ERR)
        }
        _ => code,
    }
}

/// Where a search match starts and ends in a cell (private-use characters, replaced by the
/// paint's marks once the cell is cut to fit).
pub const MATCH_OPEN: &str = "\u{E000}";
/// See [`MATCH_OPEN`].
pub const MATCH_CLOSE: &str = "\u{E001}";

/// The columns a cell never shrinks below when the table is fitted to the terminal.
const MIN_COLUMNS: usize = 8;
/// The widest a column other than the last gets when stdout is not a terminal.
const MAX_PIPED_COLUMNS: usize = 60;

/// Prints rows under a bold header. Every cell is made printable (control characters shown
/// escaped, never interpreted) and measured in display columns. Columns are padded to their
/// widest cell; on a terminal, the table is fitted to its width by cutting the widest columns
/// (with `…`; the full value is one `--output jsonl` or `get` away), and elsewhere no column but
/// the last is wider than 60. `fixed` columns (ids, ranks, times) are never cut.
pub fn table(paint: Paint, header: &[&str], rows: &[Vec<String>]) {
    table_fixed(paint, header, rows, &["ID", "#", "UPDATED", "VERSION"]);
}

fn table_fixed(paint: Paint, header: &[&str], rows: &[Vec<String>], fixed: &[&str]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| term::printable_line(c).into_owned())
                .collect()
        })
        .collect();
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| term::width(h)).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell_width(cell));
        }
    }
    let columns = term::stdout_columns();
    let shrinkable = |i: usize| !fixed.contains(&header[i]);
    match columns {
        Some(total) => {
            // The widest shrinkable columns give way first, evenly: every one is capped at the
            // widest width that lets the table fit (never below its floor).
            let natural = widths.clone();
            let floor = |i: usize| MIN_COLUMNS.max(term::width(header[i])).min(natural[i]);
            let gaps = 2 * n.saturating_sub(1);
            let fitted = |cap: usize| -> usize {
                gaps + (0..n)
                    .map(|i| {
                        if shrinkable(i) {
                            widths[i].min(cap).max(floor(i))
                        } else {
                            widths[i]
                        }
                    })
                    .sum::<usize>()
            };
            let mut cap = (0..n)
                .filter(|&i| shrinkable(i))
                .map(|i| widths[i])
                .max()
                .unwrap_or(0);
            while cap > MIN_COLUMNS && fitted(cap) > total {
                cap -= 1;
            }
            for i in (0..n).filter(|&i| shrinkable(i)) {
                widths[i] = widths[i].min(cap).max(floor(i));
            }
        }
        None => {
            for (i, w) in widths.iter_mut().enumerate() {
                if i + 1 < n && shrinkable(i) {
                    *w = (*w).min(MAX_PIPED_COLUMNS.max(term::width(header[i])));
                }
            }
        }
    }
    let (open, close) = match_marks(paint);
    let render = |cells: Vec<String>, bold: bool| {
        let last = cells.len().saturating_sub(1);
        let text: Vec<String> = cells
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                // The last column is cut only to fit a terminal, and never padded.
                let limit = if i == last && columns.is_none() {
                    usize::MAX
                } else {
                    widths[i]
                };
                let (cut, w) = fit_cell(&c, limit, open, close);
                if i == last {
                    cut
                } else {
                    format!("{cut}{}", " ".repeat(widths[i].saturating_sub(w)))
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
    render(header.iter().map(|h| (*h).to_owned()).collect(), true);
    for row in rows {
        render(row, false);
    }
}

/// The columns of a cell, match marks aside.
fn cell_width(cell: &str) -> usize {
    term::width(&cell.replace(['\u{E000}', '\u{E001}'], ""))
}

/// `cell` cut to `limit` columns (with `…`), its match marks replaced by `open`/`close` (a
/// match cut short is closed); and the columns it takes.
fn fit_cell(cell: &str, limit: usize, open: &str, close: &str) -> (String, usize) {
    let cut = cell_width(cell) > limit;
    let room = if cut { limit.saturating_sub(1) } else { limit };
    let mut out = String::new();
    let mut used = 0;
    let mut inside = false;
    for c in cell.chars() {
        match c {
            '\u{E000}' => {
                inside = true;
                out.push_str(open);
            }
            '\u{E001}' => {
                inside = false;
                out.push_str(close);
            }
            c => {
                let w = term::width(c.encode_utf8(&mut [0; 4]));
                if used + w > room {
                    break;
                }
                out.push(c);
                used += w;
            }
        }
    }
    if inside {
        out.push_str(close);
    }
    if cut && limit > 0 {
        out.push('…');
        used += 1;
    }
    (out, used)
}

/// Prints one line, made printable: it may quote data (a title, a path, a message), and a
/// control character in it is shown escaped, never sent to the terminal.
pub fn line(text: &str) {
    write_line(&term::printable_line(text));
}

/// Prints a document's body: its line breaks and tabs kept, every other control character
/// shown escaped.
pub fn body(text: &str) {
    write_line(&term::printable_text(text));
}

/// Prints `mark` (already painted) and then `text`, made printable.
pub fn marked_line(mark: &str, text: &str) {
    write_line(&format!("{mark}{}", term::printable_line(text)));
}

/// Prints one line, made printable, then dimmed.
pub fn dim_line(paint: Paint, text: &str) {
    write_line(&paint.dim(&term::printable_line(text)));
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
