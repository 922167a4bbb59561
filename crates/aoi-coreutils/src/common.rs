//! What every command shares: bounded pages with cursors (§15), item-scope errors for one
//! file's problem (§9.1), path text, times, owner names, and writing a page as events or as
//! text for a person.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use aoi::surface::cursor::{check_limit, CursorCodec};
use aoi::surface::term::printable_line;
use aoi::{Category, Code, DomainEvent, EmitError, Emitter, ErrorEvent, Outcome};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use clap::Args;
use serde::Serialize;

use crate::{DEFAULT_LIMIT, DEFAULT_MAX_BYTES};

/// Bounded reads (§15) with this tool's defaults: `--limit` 100, `--max-bytes` 64 KiB.
#[derive(Debug, Clone, Args)]
pub struct Bounds {
    /// Return at most N items (at least 1); the rest is reachable with --cursor.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,

    /// Continue where a previous page stopped (the `next_cursor` of its summary).
    #[arg(long, value_name = "TOKEN")]
    pub cursor: Option<String>,

    /// Stop before the events take more than N bytes of output (machine mode; the first
    /// item always goes out); the rest is reachable with --cursor.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
}

impl Bounds {
    /// The limit, refused when 0 (`usage` `LIMIT_INVALID`).
    pub fn checked_limit(&self) -> Result<usize, ErrorEvent> {
        check_limit(self.limit)
    }

    /// The cursor's position, decoded by `codec`, or `None` without `--cursor`.
    pub fn position(&self, codec: &CursorCodec) -> Result<Option<String>, ErrorEvent> {
        self.cursor.as_deref().map(|c| codec.decode(c)).transpose()
    }
}

/// One position of a page: a domain event, or the item-scope error that stands in its place.
#[derive(Debug)]
pub enum Item<T> {
    /// A result.
    Event(T),
    /// A problem with one item; the walk went on (§9.1 `scope: "item"`).
    Error(Box<ErrorEvent>),
}

/// A bounded, ordered page of items, each with the position a cursor resumes after.
#[derive(Debug)]
pub struct Page<T> {
    /// The items in order, with their positions.
    pub items: Vec<(String, Item<T>)>,
    /// More items exist after the last one (the limit cut the page).
    pub more: bool,
    /// The run did not do what was asked (an operand could not be read): `ok:false`, however
    /// much else was listed. A problem deeper in a walk only makes the run `partial`.
    pub failed: bool,
    /// Tool-specific summary properties.
    pub properties: Vec<(String, serde_json::Value)>,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            items: Vec::new(),
            more: false,
            failed: false,
            properties: Vec::new(),
        }
    }
}

impl<T> Page<T> {
    /// The number of items, events and errors alike.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the page holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds a result at `position`.
    pub fn event(&mut self, position: String, event: T) {
        self.items.push((position, Item::Event(event)));
    }

    /// Adds an item-scope error at `position`.
    pub fn error(&mut self, position: String, error: ErrorEvent) {
        self.items
            .push((position, Item::Error(Box::new(error.item()))));
    }

    /// The number of item errors.
    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|(_, i)| matches!(i, Item::Error(_)))
            .count()
    }
}

impl<T: DomainEvent> Page<T> {
    /// Writes the page as events and returns its outcome: `truncated` with a `next_cursor` when
    /// the limit or `--max-bytes` cut it, `partial` when an item failed beside a result
    /// (§8.3, §15). `codec` mints the cursors.
    pub fn emit<W: Write>(
        self,
        out: &mut Emitter<W>,
        codec: &CursorCodec,
    ) -> Result<Outcome, EmitError> {
        let mut last: Option<String> = None;
        let mut outcome = if self.failed {
            Outcome::failed()
        } else {
            Outcome::success()
        };
        for (key, value) in &self.properties {
            outcome = outcome.property(key.clone(), value.clone());
        }
        for (position, item) in self.items {
            match item {
                Item::Event(event) => match out.emit(&event) {
                    Err(EmitError::ByteLimit) => {
                        let next = last.as_ref().map(|p| codec.encode(p));
                        return Ok(outcome.truncated(next));
                    }
                    other => other?,
                },
                Item::Error(error) => out.error(&error)?,
            }
            last = Some(position);
        }
        if self.more {
            let next = last.as_ref().map(|p| codec.encode(p));
            outcome = outcome.truncated(next);
        }
        Ok(outcome)
    }
}

/// A cursor this tool could have issued but that names no position of this request: a
/// `validation` error with the SDK's `CURSOR_INVALID` code, `field: "cursor"` (§15).
pub fn cursor_invalid(message: &str) -> ErrorEvent {
    ErrorEvent::new(
        Category::Validation,
        aoi::surface::cursor::CURSOR_INVALID,
        message,
    )
    .field("cursor")
    .hint("run again without --cursor")
}

/// A cursor whose position is gone (the listing or file changed between pages), so the next
/// page could skip or repeat items: `validation` `CURSOR_STALE`, `field: "cursor"` (§15).
pub fn cursor_stale(why: &str) -> ErrorEvent {
    ErrorEvent::new(
        Category::Validation,
        Code::from_static("CURSOR_STALE"),
        format!("{why} since this cursor was issued, so the next page could skip or repeat items"),
    )
    .field("cursor")
    .hint("run again without --cursor")
}

/// A path as JSON text; a path that is not UTF-8 is an item error `NAME_NOT_UTF8`
/// (`unsupported`: no JSON string can name it) carrying its bytes as base64 in `details`.
pub fn path_text(path: &Path) -> Result<String, ErrorEvent> {
    match path.to_str() {
        Some(text) => Ok(text.to_owned()),
        None => Err(not_utf8(path)),
    }
}

/// The `NAME_NOT_UTF8` error for `path`.
pub fn not_utf8(path: &Path) -> ErrorEvent {
    let bytes = path.as_os_str().as_bytes();
    ErrorEvent::new(
        Category::Unsupported,
        Code::from_static("NAME_NOT_UTF8"),
        format!(
            "{} is not UTF-8, so no JSON string can name it",
            display(path)
        ),
    )
    .item()
    .target(String::from_utf8_lossy(bytes).into_owned())
    .detail("path_base64", STANDARD.encode(bytes))
}

/// `path` for a message: lossy UTF-8, quoted with its controls escaped.
pub fn display(path: &Path) -> String {
    format!("{:?}", String::from_utf8_lossy(path.as_os_str().as_bytes()))
}

/// The item-scope error for an I/O failure on `path`: `not_found` for a missing file,
/// `authz` for a permission refused, `io` for a symlink loop and the rest (§9.2).
pub fn io_error(path: &Path, error: &io::Error) -> ErrorEvent {
    let (category, code) = match error.kind() {
        io::ErrorKind::NotFound => (Category::NotFound, "NOT_FOUND"),
        io::ErrorKind::PermissionDenied => (Category::Authz, "PERMISSION_DENIED"),
        _ if error.raw_os_error() == Some(libc_eloop()) => (Category::Io, "SYMLINK_LOOP"),
        io::ErrorKind::NotADirectory => (Category::Validation, "NOT_A_DIRECTORY"),
        io::ErrorKind::IsADirectory => (Category::Validation, "IS_A_DIRECTORY"),
        _ => (Category::Io, "IO_ERROR"),
    };
    ErrorEvent::new(
        category,
        Code::from_static(code),
        format!("{}: {}", display(path), plain_io(error)),
    )
    .item()
    .target(String::from_utf8_lossy(path.as_os_str().as_bytes()).into_owned())
}

/// ELOOP on Linux and the BSDs alike (40 on Linux, 62 on the BSDs and macOS).
fn libc_eloop() -> i32 {
    if cfg!(target_os = "linux") {
        40
    } else {
        62
    }
}

/// An I/O error's text without Rust's ` (os error N)` suffix.
pub fn plain_io(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// A position key for a path: its bytes, base64, so a name that is not UTF-8 keeps its place.
pub fn path_key(path: &OsStr) -> String {
    STANDARD.encode(path.as_bytes())
}

/// Milliseconds since the Unix epoch (negative before it).
pub fn epoch_ms(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// ISO-8601 UTC with milliseconds: `2026-12-02T01:23:45.678Z`.
pub fn iso8601(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        );
    }
    // Every entry carries one: written digit by digit, without the formatting machinery.
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: i64| {
        for i in (at..at + width).rev() {
            text[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, y);
    put(5, 2, i64::from(m));
    put(8, 2, i64::from(d));
    put(11, 2, rem / 3600);
    put(14, 2, rem % 3600 / 60);
    put(17, 2, rem % 60);
    put(20, 3, millis);
    String::from_utf8_lossy(&text).into_owned()
}

/// The proleptic Gregorian date of a day count from 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// User and group names by id, read once from `/etc/passwd` and `/etc/group`; an id with no
/// name is written as its number, as `ls -l` does.
#[derive(Debug, Default)]
pub struct Names {
    users: Option<HashMap<u32, String>>,
    groups: Option<HashMap<u32, String>>,
}

impl Names {
    /// The name of user `uid`.
    pub fn user(&mut self, uid: u32) -> String {
        let map = self
            .users
            .get_or_insert_with(|| read_id_file(Path::new("/etc/passwd")));
        map.get(&uid).cloned().unwrap_or_else(|| uid.to_string())
    }

    /// The name of group `gid`.
    pub fn group(&mut self, gid: u32) -> String {
        let map = self
            .groups
            .get_or_insert_with(|| read_id_file(Path::new("/etc/group")));
        map.get(&gid).cloned().unwrap_or_else(|| gid.to_string())
    }
}

/// `name:x:id:...` lines; the first name of an id wins, as getpwuid's does.
fn read_id_file(path: &Path) -> HashMap<u32, String> {
    let mut map = HashMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return map;
    };
    for line in text.lines() {
        let mut fields = line.split(':');
        let (Some(name), Some(_), Some(id)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if let Ok(id) = id.parse::<u32>() {
            map.entry(id).or_insert_with(|| name.to_owned());
        }
    }
    map
}

/// Ends a human-mode run: 0 when everything was written and no item failed, 1 when an item
/// failed (as GNU tools exit on a file they could not read), 141 for a reader that went away
/// (§7), 74 with one line on stderr for any other write failure.
pub fn human_exit(tool: &str, written: io::Result<()>, item_errors: usize) -> ExitCode {
    match written.and_then(|()| io::stdout().flush()) {
        Ok(()) if item_errors == 0 => ExitCode::SUCCESS,
        Ok(()) => ExitCode::from(1),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(aoi::exit_code::SIGPIPE),
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "{tool}: writing to stdout failed: {}",
                plain_io(&e)
            );
            ExitCode::from(aoi::exit_code::IO_ERR)
        }
    }
}

/// An error for a person, on stderr: `aoi-coreutils ls: <message>`; text from the file system
/// is escaped (no terminal controls reach the terminal).
pub fn say_error(command: &str, error: &ErrorEvent) {
    let _ = writeln!(
        io::stderr(),
        "aoi-coreutils {command}: {}",
        printable_line(&error.message)
    );
}

/// The note a human-mode page ends with when it was cut: how to get the rest.
pub fn more_note(command: &str, next: Option<&str>) {
    let hint = match next {
        Some(cursor) => format!("more: aoi-coreutils {command} ... --cursor {cursor}"),
        None => "more: raise --limit".to_owned(),
    };
    let _ = writeln!(io::stderr(), "{hint}");
}

/// A serializable unit for positions that carry no data.
#[derive(Debug, Serialize)]
pub struct NoShape;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_matches_known_instants() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_796_170_425_678), "2026-12-02T00:13:45.678Z");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso8601(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
        assert_eq!(iso8601(-62_135_596_800_001), "0000-12-31T23:59:59.999Z");
    }

    #[test]
    fn io_errors_get_the_category_of_their_kind() {
        let p = Path::new("/x");
        let nf = io_error(p, &io::Error::from_raw_os_error(2));
        assert_eq!(
            (nf.category, nf.code.as_str()),
            (Category::NotFound, "NOT_FOUND")
        );
        let pd = io_error(p, &io::Error::from_raw_os_error(13));
        assert_eq!(
            (pd.category, pd.code.as_str()),
            (Category::Authz, "PERMISSION_DENIED")
        );
        let lp = io_error(p, &io::Error::from_raw_os_error(40));
        assert_eq!(lp.code.as_str(), "SYMLINK_LOOP");
        assert_eq!(nf.message, "\"/x\": No such file or directory");
    }

    #[test]
    fn a_name_that_is_not_utf8_is_an_unsupported_item_error_with_its_bytes() {
        let p = Path::new(OsStr::from_bytes(b"a\xffb"));
        let e = path_text(p).unwrap_err();
        assert_eq!(e.code.as_str(), "NAME_NOT_UTF8");
        assert_eq!(e.details.as_ref().unwrap()["path_base64"], "Yf9i");
    }

    #[test]
    fn controls_are_escaped_for_a_terminal() {}
}
