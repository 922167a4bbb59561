//! `touch [-c] [-d DATE|-r REF] FILE...`: set access and modification times, creating the
//! files that do not exist (`created`), or changing those that do (`changed`, `what: times`).
//!
//! DATE is `now`, `@SECONDS`, or ISO 8601: `2024-05-01`, `2024-05-01 12:30`,
//! `2024-05-01T12:30:45.250Z`, `2024-05-01T12:30:45+02:00`. A date without a zone is in the
//! zone `TZ` names, as GNU reads it; so is `-t [[CC]YY]MMDDhhmm[.ss]`. `-a` and `-m` change
//! only the access or only the modification time. `touch` takes `--dry-run` but no
//! idempotency key: repeating it doubles nothing (see [`super`]).

use std::fs::{self, File, FileTimes, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aoi::app::App;
use aoi::surface::flags::{DryRunArgs, GlobalArgs};
use aoi::{ErrorEvent, Failure};
use clap::Args;
use serde_json::Value;

use super::journal::{run as run_journal, Applied, Journal, Spec, Step};
use super::{fs_error, quote, Change, Changed, Created};
use crate::clock::{epoch_ms, iso8601};
use crate::entry::Kind;
use crate::paths::path_text;

/// The command's name, everywhere it is named.
pub const NAME: &str = "touch";

/// Set file times, creating missing files (-c, -d DATE, -r REF; --dry-run plans).
// The command's description, which `aoi-coreutils touch --help`, `capabilities` and MCP
// show: a deferred subcommand takes it from here (see `app::Command`).
#[derive(Debug, Clone, Args)]
pub struct TouchArgs {
    /// Files to touch.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Do not create files that do not exist.
    #[arg(short = 'c', long = "no-create")]
    pub no_create: bool,
    /// Use DATE instead of now: `@SECONDS` or ISO 8601 (`2024-05-01T12:30:00Z`; without a
    /// zone, UTC).
    #[arg(short = 'd', long = "date", value_name = "DATE", value_parser = parse_date, conflicts_with = "reference")]
    pub date: Option<SystemTime>,
    /// Use REF's times instead of now.
    #[arg(
        short = 'r',
        long = "reference",
        value_name = "REF",
        conflicts_with = "stamp"
    )]
    pub reference: Option<PathBuf>,
    /// Use `[[CC]YY]MMDDhhmm[.ss]` (local time) instead of now.
    #[arg(short = 't', value_name = "STAMP", value_parser = parse_stamp, conflicts_with = "date")]
    pub stamp: Option<SystemTime>,
    /// Change only the access time.
    #[arg(short = 'a')]
    pub access_only: bool,
    /// Change only the modification time.
    #[arg(short = 'm')]
    pub modification_only: bool,
    /// `-h` is GNU's --no-dereference, not taken in machine mode yet: a usage error, never
    /// `--help`.
    #[command(flatten)]
    pub help: crate::display::LongHelp,
    #[command(flatten)]
    pub dry_run: DryRunArgs,
}

/// Runs `touch`.
pub fn run(app: &App, global: &GlobalArgs, args: TouchArgs) -> ExitCode {
    let spec = Spec {
        command: NAME,
        dry_run: args.dry_run.dry_run,
        key: None,
        verbose: false,
        request: Value::Null,
    };
    run_journal(app, global, spec, |journal| {
        let times = times(&args)?;
        for file in &args.files {
            touch(journal, &args, file, &times)?;
        }
        Ok(())
    })
}

/// The times to set: `(accessed, modified)`, and whether they are "now".
struct Times {
    accessed: SystemTime,
    modified: SystemTime,
    now: bool,
    /// Which of the two are set (`-a`, `-m`; both without either).
    set_accessed: bool,
    set_modified: bool,
}

fn times(args: &TouchArgs) -> Result<Times, ErrorEvent> {
    let both = args.access_only == args.modification_only;
    let times = chosen_times(args)?;
    Ok(Times {
        set_accessed: both || args.access_only,
        set_modified: both || args.modification_only,
        ..times
    })
}

fn chosen_times(args: &TouchArgs) -> Result<Times, ErrorEvent> {
    if let Some(reference) = &args.reference {
        let meta = fs::metadata(reference).map_err(|e| {
            let mut error = fs_error("failed to get attributes of", reference, &e);
            error.scope = aoi::Scope::Process;
            error.field = Some("reference".to_owned());
            error
        })?;
        let accessed = meta.accessed().unwrap_or(UNIX_EPOCH);
        let modified = meta.modified().unwrap_or(UNIX_EPOCH);
        return Ok(Times {
            accessed,
            modified,
            now: false,
            set_accessed: true,
            set_modified: true,
        });
    }
    match args.date.or(args.stamp) {
        Some(at) => Ok(Times {
            accessed: at,
            modified: at,
            now: false,
            set_accessed: true,
            set_modified: true,
        }),
        None => {
            let now = SystemTime::now();
            Ok(Times {
                accessed: now,
                modified: now,
                now: true,
                set_accessed: true,
                set_modified: true,
            })
        }
    }
}

fn touch(
    journal: &mut Journal<'_>,
    args: &TouchArgs,
    file: &Path,
    times: &Times,
) -> Result<(), Failure> {
    let text = match path_text(file) {
        Ok(text) => text,
        Err(error) => return journal.item_error(error),
    };
    let when = if times.now {
        "now".to_owned()
    } else {
        iso8601(epoch_ms(times.modified))
    };
    let exists = match fs::metadata(file) {
        Ok(_) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return journal.item_error(fs_error("cannot touch", file, &e)),
    };
    if !exists && args.no_create {
        return Ok(());
    }
    let modified = iso8601(epoch_ms(times.modified));
    if exists {
        let step = Step::new(
            "change",
            &text,
            format!("times to {when}"),
            format!("change the times of {} to {when}", quote(file)),
        );
        if let Applied::Done(()) = journal.apply(step, || set_times(file, times))? {
            let event = Changed {
                path: text,
                what: Change::Times,
                modified,
            };
            journal.done(&event, String::new)?;
        }
        return Ok(());
    }
    let step = Step::new(
        "create",
        &text,
        format!("empty file, times {when}"),
        format!("create file {}", quote(file)),
    );
    let created = journal.apply(step, || {
        // `create`, not `create_new`: a dangling link makes its target, as GNU touch does.
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(file)
            .map_err(|e| fs_error("cannot touch", file, &e))?;
        if !times.now {
            set_times(file, times)?;
        }
        Ok(())
    })?;
    if let Applied::Done(()) = created {
        let event = Created {
            path: text,
            kind: Kind::File,
        };
        journal.done(&event, String::new)?;
    }
    Ok(())
}

fn set_times(path: &Path, times: &Times) -> Result<(), ErrorEvent> {
    let cannot = |e: &io::Error| fs_error("cannot touch", path, e);
    // Reading is enough to set times on a file one owns; a write-only file needs write.
    let file = File::open(path)
        .or_else(|_| OpenOptions::new().write(true).open(path))
        .map_err(|e| cannot(&e))?;
    // The time not asked for (`-a`, `-m`) is left as it is.
    let mut set = FileTimes::new();
    if times.set_accessed {
        set = set.set_accessed(times.accessed);
    }
    if times.set_modified {
        set = set.set_modified(times.modified);
    }
    file.set_times(set).map_err(|e| cannot(&e))
}

/// Parses a `-d` DATE (see the [module docs](self)).
pub fn parse_date(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    let bad =
        || format!("invalid date {text:?}: give @SECONDS or ISO 8601, e.g. 2024-05-01T12:30:00Z");
    if text == "now" {
        return Ok(SystemTime::now());
    }
    if let Some(seconds) = text.strip_prefix('@') {
        let value: f64 = seconds.parse().map_err(|_| bad())?;
        if !value.is_finite() {
            return Err(bad());
        }
        return at_seconds(value.floor() as i64, ((value - value.floor()) * 1e9) as u32)
            .ok_or_else(bad);
    }
    let (Some(date), Some(rest)) = (text.get(..10), text.get(10..)) else {
        return Err(bad());
    };
    let fields: Vec<&str> = date.split('-').collect();
    let [y, m, d] = fields[..] else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let number = |s: &str| s.parse::<u32>().map_err(|_| bad());
    let (year, month, day) = (number(y)?, number(m)?, number(d)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err(bad());
    }
    let mut seconds = days_from_civil(i64::from(year), month, day) * 86_400;
    let mut nanos = 0;
    let mut rest = rest;
    if let Some(time) = rest.strip_prefix(['T', 't', ' ']) {
        let end = time
            .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.' || c == ','))
            .unwrap_or(time.len());
        let (clock, zone) = time.split_at(end);
        let (hms, frac) = match clock.split_once(['.', ',']) {
            Some((hms, frac)) => (hms, Some(frac)),
            None => (clock, None),
        };
        let parts: Vec<&str> = hms.split(':').collect();
        if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.len() != 2) {
            return Err(bad());
        }
        let h = number(parts[0])?;
        let min = number(parts[1])?;
        let s = parts.get(2).map(|p| number(p)).transpose()?.unwrap_or(0);
        if h > 23 || min > 59 || s > 60 {
            return Err(bad());
        }
        if let Some(frac) = frac {
            if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            nanos = number(&format!("{frac:0<9}"))?;
        }
        seconds += i64::from(h * 3600 + min * 60 + s);
        rest = zone;
    }
    if rest.trim().is_empty() {
        // No zone: the local one, as GNU's.
        return local(seconds, nanos).ok_or_else(bad);
    }
    seconds -= zone_offset(rest.trim_start()).ok_or_else(bad)?;
    at_seconds(seconds, nanos).ok_or_else(bad)
}

/// The instant of a wall-clock time (`seconds` counted as if the zone were UTC) in the zone
/// `TZ` names (the system's when none).
fn local(seconds: i64, nanos: u32) -> Option<SystemTime> {
    let wall = jiff::Timestamp::new(seconds, i32::try_from(nanos).ok()?)
        .ok()?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .datetime();
    let at = wall
        .to_zoned(jiff::tz::TimeZone::system())
        .ok()?
        .timestamp();
    at_seconds(at.as_second(), u32::try_from(at.subsec_nanosecond()).ok()?)
}

/// Parses `-t [[CC]YY]MMDDhhmm[.ss]` in the local zone, as GNU does (a two-digit year is
/// 1969-2068).
pub fn parse_stamp(text: &str) -> Result<SystemTime, String> {
    let bad = || format!("invalid date format {text:?}: give [[CC]YY]MMDDhhmm[.ss]");
    let (main, secs) = match text.split_once('.') {
        Some((main, secs)) if secs.len() == 2 => (main, Some(secs)),
        Some(_) => return Err(bad()),
        None => (text, None),
    };
    if !main.bytes().all(|b| b.is_ascii_digit()) || ![8, 10, 12].contains(&main.len()) {
        return Err(bad());
    }
    let number = |s: &str| s.parse::<u32>().map_err(|_| bad());
    let (year, rest) = match main.len() {
        12 => (number(&main[..4])?, &main[4..]),
        10 => {
            let yy = number(&main[..2])?;
            (if yy < 69 { 2000 + yy } else { 1900 + yy }, &main[2..])
        }
        _ => {
            let now = jiff::Zoned::now().year();
            (u32::try_from(now).map_err(|_| bad())?, main)
        }
    };
    let (month, day, hour, minute) = (
        number(&rest[..2])?,
        number(&rest[2..4])?,
        number(&rest[4..6])?,
        number(&rest[6..8])?,
    );
    let second = secs.map(number).transpose()?.unwrap_or(0);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let seconds = days_from_civil(i64::from(year), month, day) * 86_400
        + i64::from(hour * 3600 + minute * 60 + second.min(59));
    local(seconds, 0).ok_or_else(bad)
}

/// The offset east of UTC in seconds of a zone suffix: empty (UTC), `Z`, `UTC`, `+HH`,
/// `+HHMM`, `+HH:MM` (or `-`).
fn zone_offset(zone: &str) -> Option<i64> {
    if zone.is_empty() || zone.eq_ignore_ascii_case("z") || zone.eq_ignore_ascii_case("utc") {
        return Some(0);
    }
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let digits = digits.replace(':', "");
    if !(digits.len() == 2 || digits.len() == 4) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i64 = digits[..2].parse().ok()?;
    let m: i64 = if digits.len() == 4 {
        digits[2..].parse().ok()?
    } else {
        0
    };
    (h <= 23 && m <= 59).then_some(sign * (h * 3600 + m * 60))
}

fn at_seconds(seconds: i64, nanos: u32) -> Option<SystemTime> {
    let since = Duration::new(seconds.unsigned_abs(), 0);
    let base = if seconds >= 0 {
        UNIX_EPOCH.checked_add(since)?
    } else {
        UNIX_EPOCH.checked_sub(since)?
    };
    base.checked_add(Duration::from_nanos(u64::from(nanos)))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (the inverse of
/// [`civil_from_days`](crate::clock::civil_from_days)).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        epoch_ms(parse_date(text).unwrap())
    }

    #[test]
    fn dates_parse_as_gnu_reads_them_in_utc() {
        assert_eq!(ms("1970-01-01"), 0);
        assert_eq!(ms("@0"), 0);
        assert_eq!(ms("@1700000000.5"), 1_700_000_000_500);
        assert_eq!(ms("2000-02-29T00:00:00.123Z"), 951_782_400_123);
        assert_eq!(ms("2000-02-29 00:00"), 951_782_400_000);
        assert_eq!(ms("2024-05-01T12:30:00+02:00"), ms("2024-05-01T10:30:00Z"));
        assert_eq!(ms("2024-05-01T12:30:00-0130"), ms("2024-05-01T14:00:00Z"));
        assert_eq!(ms("1969-12-31T23:59:59Z"), -1000);
        assert_eq!(
            iso8601(ms("2026-12-02T00:13:45.678Z")),
            "2026-12-02T00:13:45.678Z"
        );
    }

    #[test]
    fn bad_dates_are_refused() {
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2023-02-29",
            "2024-05-01T25:00",
            "2024-5-1",
            "2024-05-01T12:30:00+2",
            "@x",
            "2024-05-01T12",
            "2024-05-01T12:30:00.Z",
        ] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn days_from_civil_inverts_civil_from_days() {
        for days in [-800_000, -1, 0, 59, 10_957, 20_000, 2_932_896] {
            let (y, m, d) = crate::clock::civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
