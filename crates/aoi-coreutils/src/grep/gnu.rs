//! `grep` in human mode: GNU grep 3's syntax, output and exit statuses, on `grep-searcher` and
//! the patterns of [`pattern`].
//!
//! What GNU does, this does: patterns basic by default (`-E`, `-F`, `-P`), a list of them one
//! per line (`-e`, `-f FILE`, `-f -`), standard input when no file is named (`-` names it too)
//! unless `-r`, every file named searched in the order given, `name:` before a line when more
//! than one file is searched (`-H`, `-h`), `-n`, `-b`, `-o`, `-c` (every file, zeros too), `-l`,
//! `-L`, `-q` (exit 0 at the first selected line, errors or not), `-s`, `-m`, `-x`, `-w`, `-i`,
//! context (`-A`, `-B`, `-C`, `-NUM`, `--` between groups), `-z`, `-Z`, `-T`, `--label`,
//! `--color`, binary files (`grep: F: binary file matches` on stderr instead of their lines;
//! `-a`, `-I`, `--binary-files`), `-r` (symbolic links followed on the command line only) and
//! `-R`, `--include`, `--exclude`, `--exclude-dir`, `-d`, `-D`. Unbounded, as GNU is. The exit
//! status is 0 when a line was selected (for `-L`, a file listed), 1 when none was, 2 when an
//! error occurred (unless `-q` selected one).
//!
//! Two differences, on purpose: a directory is walked in name order (GNU: the order the file
//! system gives, which differs from one machine to the next), and on a terminal every name and
//! line goes through the SDK's escaper (escape sequences, carriage returns and bidi controls
//! shown, never obeyed) while the colours of `--color` are GNU's.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aoi::surface::term::{printable_line, printable_text};
use clap::Parser;
use globset::{Glob, GlobSet, GlobSetBuilder};
use grep_matcher::Matcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use super::cli::{BinaryFiles, Devices, Directories, GnuGrep, When};
use super::pattern::{self, Compiled, Syntax};

/// What each file's search prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    Lines,
    Count,
    FilesWith,
    FilesWithout,
    Quiet,
}

/// Everything decided before the first file is opened.
struct Config {
    report: Report,
    with_filename: bool,
    /// `-r` with one operand: the names of the files found in a directory are shown, as GNU
    /// shows them (a file named alone is not).
    names_in_directories: bool,
    line_number: bool,
    byte_offset: bool,
    only_matching: bool,
    invert: bool,
    null: bool,
    initial_tab: bool,
    context: bool,
    group_separator: Option<Vec<u8>>,
    terminator: u8,
    binary: BinaryFiles,
    color: bool,
    terminal: bool,
    line_buffered: bool,
    no_messages: bool,
    recursive: Option<Recursion>,
    skip_directories: bool,
    skip_devices: bool,
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    exclude_dir: Option<GlobSet>,
    label: Vec<u8>,
    /// Standard output's file, when it is a regular one.
    output_file: Option<(u64, u64)>,
    /// What is printed can grow the output (not -q, -l, -L, -c, -m 1).
    output_can_grow: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recursion {
    /// `-r`: links followed on the command line only.
    Physical,
    /// `-R`: every link followed.
    Logical,
}

/// What ended a run early.
enum Stop {
    /// `-q` selected a line: exit 0 now.
    Selected,
    /// Writing to stdout failed.
    Write(io::Error),
}

/// The whole run's state: its output and what it found.
struct Run<'c> {
    config: &'c Config,
    out: io::BufWriter<io::StdoutLock<'static>>,
    selected: bool,
    errors: bool,
    /// Something was printed with context on: the next group starts with a separator.
    printed: bool,
    stdin_read: bool,
    /// Walking a directory: its files' names are shown with -r.
    walking: bool,
    /// The name of the input being opened, for the refusal of an input that is the output.
    reading: Option<Vec<u8>>,
}

/// Runs GNU grep on `args` (`grep` first); the exit status.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let args = context_numbers(args);
    let cli = match GnuGrep::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let message = usage_error(&e, &args);
            // GNU names a bad --binary-files type alone, without the usage lines.
            if message == BINARY_FILES_TYPE {
                let _ = writeln!(io::stderr(), "grep: {message}");
            } else {
                let _ = writeln!(io::stderr(), "grep: {message}\n{USAGE}");
            }
            return ExitCode::from(2);
        }
    };
    if cli.version {
        let mut out = io::stdout();
        let _ = writeln!(
            out,
            "grep (aoi-coreutils) {}\nGNU grep's syntax and behaviour; see `aoi-coreutils grep --help`.",
            env!("CARGO_PKG_VERSION")
        );
        return ExitCode::SUCCESS;
    }
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(message) if message == USAGE => {
            let _ = writeln!(io::stderr(), "{USAGE}");
            ExitCode::from(2)
        }
        Err(message) => {
            let _ = writeln!(io::stderr(), "grep: {}", printable_line(&message));
            ExitCode::from(2)
        }
    }
}

/// What GNU says when no pattern is given.
const USAGE: &str =
    "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.";

/// GNU's message for `--binary-files=WHAT` of no known type.
const BINARY_FILES_TYPE: &str = "unknown binary-files type";

/// A command-line error in getopt's words (`unrecognized option '--x'`, `invalid option --
/// 'Q'`, `option requires an argument -- 'e'`), as GNU grep says it.
fn usage_error(e: &clap::Error, args: &[OsString]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let value = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(ContextValue::Strings(s)) => s.join(" "),
        _ => String::new(),
    };
    let arg = value(ContextKind::InvalidArg);
    match e.kind() {
        ErrorKind::UnknownArgument if arg.starts_with("--") => {
            format!(
                "unrecognized option '{}'",
                arg.split('=').next().unwrap_or(&arg)
            )
        }
        ErrorKind::UnknownArgument => {
            let letter = arg.trim_start_matches('-').chars().next().unwrap_or('-');
            format!("invalid option -- '{letter}'")
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
            if value(ContextKind::InvalidValue).is_empty() =>
        {
            let option = arg.split([' ', '=']).next().unwrap_or(&arg).to_owned();
            // clap names the option by its long name; getopt by what was typed.
            let long = option.trim_start_matches('-');
            let typed_long = args.iter().any(|a| {
                a.to_str()
                    .and_then(|a| a.strip_prefix("--"))
                    .is_some_and(|a| !a.is_empty() && long.starts_with(a))
            });
            let short = <GnuGrep as clap::CommandFactory>::command()
                .get_arguments()
                .find(|a| a.get_long() == Some(long))
                .and_then(clap::Arg::get_short);
            match short {
                Some(letter) if !typed_long => {
                    format!("option requires an argument -- '{letter}'")
                }
                _ => format!("option '--{long}' requires an argument"),
            }
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
            if arg.starts_with("--binary-files") =>
        {
            BINARY_FILES_TYPE.to_owned()
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let option = arg.split([' ', '=']).next().unwrap_or(&arg).to_owned();
            format!(
                "invalid argument '{}' for '{option}'",
                value(ContextKind::InvalidValue)
            )
        }
        _ => {
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            first.to_owned()
        }
    }
}

/// `-5` as `-C 5` (GNU's `-NUM`), before `--` only.
fn context_numbers(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len() + 1);
    let mut literal = false;
    let mut after_value_flag = false;
    for (i, word) in args.into_iter().enumerate() {
        let number = word
            .to_str()
            .and_then(|w| w.strip_prefix('-'))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_owned);
        literal |= word == "--";
        match number {
            Some(n) if i > 0 && !literal && !after_value_flag => {
                out.push(OsString::from("-C"));
                out.push(OsString::from(n));
                after_value_flag = false;
            }
            _ => {
                after_value_flag = word
                    .to_str()
                    .is_some_and(|w| ["-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D"].contains(&w));
                out.push(word);
            }
        }
    }
    out
}

fn run(mut cli: GnuGrep) -> Result<u8, String> {
    let syntax = syntax(&cli)?;
    let stdin_for_patterns = cli.file.iter().any(|f| f.as_os_str() == "-");
    let unicode = utf8_locale();
    let mut patterns = Vec::new();
    for p in &cli.regexp {
        patterns.extend(split_patterns(&pattern_text(p.as_bytes(), unicode)));
    }
    for file in &cli.file {
        patterns.extend(pattern_file(file, unicode)?);
    }
    if cli.regexp.is_empty() && cli.file.is_empty() {
        if cli.operands.is_empty() {
            return Err(USAGE.into());
        }
        let first = cli.operands.remove(0);
        patterns.extend(split_patterns(&pattern_text(first.as_bytes(), unicode)));
    }
    let options = pattern::Options {
        ignore_case: (cli.ignore_case || cli.ignore_case_y) && !cli.no_ignore_case,
        word: cli.word,
        line: cli.line,
        terminator: if cli.null_data { 0 } else { b'\n' },
        unicode,
    };
    let mut warnings = Vec::new();
    let compiled = pattern::compile_warning(&patterns, syntax, options, &mut warnings);
    for warning in &warnings {
        let _ = writeln!(io::stderr(), "grep: warning: {warning}");
    }
    let compiled = compiled?;
    let config = config(&cli)?;
    let searcher = searcher(&cli_context(&cli), &config, cli.max_count, cli.invert);
    let mut files: Vec<(OsString, bool)> = cli.operands.into_iter().map(|f| (f, false)).collect();
    if files.is_empty() {
        files.push(if config.recursive.is_some() {
            (OsString::from("."), true)
        } else {
            (OsString::from("-"), false)
        });
    }
    let mut run = Run {
        config: &config,
        out: io::BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
        selected: false,
        errors: false,
        printed: false,
        stdin_read: stdin_for_patterns,
        walking: false,
        reading: None,
    };
    let ended = files
        .iter()
        .try_for_each(|(file, implicit)| match &compiled {
            Compiled::Regex(m) => run.operand(m, searcher.clone(), file, *implicit),
            Compiled::Fancy(m) => run.operand(m, searcher.clone(), file, *implicit),
            Compiled::Nothing(m) => run.operand(m, searcher.clone(), file, *implicit),
        });
    let flushed = run.out.flush();
    match (ended, flushed) {
        (Err(Stop::Selected), _) => Ok(0),
        (Err(Stop::Write(e)), _) | (Ok(()), Err(e)) => {
            Err(format!("write error: {}", io_message(&e)))
        }
        (Ok(()), Ok(())) if run.errors => Ok(2),
        (Ok(()), Ok(())) => Ok(if run.selected { 0 } else { 1 }),
    }
}

/// The one syntax `-E`, `-F`, `-G`, `-P` ask for; two different ones are an error, as GNU's
/// "conflicting matchers specified".
fn syntax(cli: &GnuGrep) -> Result<Syntax, String> {
    let asked: Vec<Syntax> = [
        (cli.extended, Syntax::Extended),
        (cli.fixed, Syntax::Fixed),
        (cli.basic, Syntax::Basic),
        (cli.perl, Syntax::Perl),
    ]
    .into_iter()
    .filter_map(|(on, s)| on.then_some(s))
    .collect();
    match asked.as_slice() {
        [] => Ok(Syntax::Basic),
        [one] => Ok(*one),
        _ => Err("conflicting matchers specified".into()),
    }
}

/// Whether the locale's text is UTF-8 (`LC_ALL`, else `LC_CTYPE`, else `LANG`, as setlocale
/// reads them; none set is the C locale, which is not).
fn utf8_locale() -> bool {
    for var in ["LC_ALL", "LC_CTYPE", "LANG"] {
        if let Some(value) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let value = value.to_string_lossy().to_ascii_lowercase();
            return value.contains("utf-8") || value.contains("utf8");
        }
    }
    false
}

/// A pattern's bytes as text: UTF-8 in a UTF-8 locale (an invalid byte as U+FFFD); in the C
/// locale each byte as the character of its value (Latin-1), which [`pattern`] turns back
/// into that byte.
fn pattern_text(bytes: &[u8], unicode: bool) -> String {
    if unicode {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        bytes.iter().map(|&b| char::from(b)).collect()
    }
}

/// A pattern argument's patterns: one per line (a trailing newline adds an empty pattern,
/// which matches every line, as GNU's does).
fn split_patterns(text: &str) -> Vec<String> {
    text.split('\n').map(str::to_owned).collect()
}

/// The patterns of `-f FILE`: one per line, the last line's newline ending it (an empty file
/// holds none, so nothing matches).
fn pattern_file(file: &Path, unicode: bool) -> Result<Vec<String>, String> {
    let mut bytes = Vec::new();
    let read = if file.as_os_str() == "-" {
        io::stdin().lock().read_to_end(&mut bytes)
    } else {
        File::open(file).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    read.map_err(|e| format!("{}: {}", file.display(), io_message(&e)))?;
    let text = pattern_text(&bytes, unicode);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    Ok(split_patterns(text))
}

struct ContextLines {
    before: usize,
    after: usize,
}

fn cli_context(cli: &GnuGrep) -> ContextLines {
    let context = cli.context.unwrap_or(0);
    ContextLines {
        before: cli.before.unwrap_or(context),
        after: cli.after.unwrap_or(context),
    }
}

fn config(cli: &GnuGrep) -> Result<Config, String> {
    let report = if cli.quiet {
        Report::Quiet
    } else if cli.files_with_matches {
        Report::FilesWith
    } else if cli.files_without_match {
        Report::FilesWithout
    } else if cli.count {
        Report::Count
    } else {
        Report::Lines
    };
    let recursive = if cli.dereference_recursive {
        Some(Recursion::Logical)
    } else if cli.recursive || cli.directories == Some(Directories::Recurse) {
        Some(Recursion::Physical)
    } else {
        None
    };
    // By now the operands are the files (the pattern taken out).
    let many = cli.operands.len() > 1;
    let with_filename = if cli.no_filename {
        false
    } else {
        cli.with_filename || many
    };
    let binary = if cli.text {
        BinaryFiles::Text
    } else if cli.without_match {
        BinaryFiles::WithoutMatch
    } else {
        cli.binary_files.unwrap_or(BinaryFiles::Binary)
    };
    let terminal = io::stdout().is_terminal();
    let color = match cli.color {
        Some(When::Always) => true,
        Some(When::Auto) => {
            terminal
                && std::env::var_os("TERM").is_some_and(|t| t != "dumb")
                && std::env::var_os("NO_COLOR").is_none()
        }
        Some(When::Never) | None => false,
    };
    let mut exclude = cli.exclude.clone();
    for file in &cli.exclude_from {
        let text =
            std::fs::read(file).map_err(|e| format!("{}: {}", file.display(), io_message(&e)))?;
        exclude.extend(
            String::from_utf8_lossy(&text)
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
        );
    }
    Ok(Config {
        report,
        with_filename,
        names_in_directories: !cli.no_filename && recursive.is_some(),
        line_number: cli.line_number,
        byte_offset: cli.byte_offset,
        only_matching: cli.only_matching,
        invert: cli.invert,
        null: cli.null,
        initial_tab: cli.initial_tab,
        // Asked for, even as 0: groups are then separated by `--`.
        context: (cli.before.is_some() || cli.after.is_some() || cli.context.is_some())
            && !cli.only_matching,
        group_separator: if cli.no_group_separator {
            None
        } else {
            Some(
                cli.group_separator
                    .as_ref()
                    .map_or_else(|| b"--".to_vec(), |s| s.as_bytes().to_vec()),
            )
        },
        terminator: if cli.null_data { 0 } else { b'\n' },
        binary,
        color,
        terminal,
        line_buffered: cli.line_buffered,
        no_messages: cli.no_messages,
        recursive,
        skip_directories: cli.directories == Some(Directories::Skip),
        skip_devices: cli.devices == Some(Devices::Skip),
        include: globs(&cli.include)?,
        exclude: globs(&exclude)?,
        exclude_dir: globs(&cli.exclude_dir)?,
        output_file: stdout_identity(),
        output_can_grow: report == Report::Lines && cli.max_count.is_none_or(|m| m > 1),
        label: cli
            .label
            .as_ref()
            .map_or_else(|| b"(standard input)".to_vec(), |l| l.as_bytes().to_vec()),
    })
}

fn globs(patterns: &[String]) -> Result<Option<GlobSet>, String> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(Glob::new(p).map_err(|e| format!("{p}: {e}"))?);
    }
    set.build().map(Some).map_err(|e| e.to_string())
}

fn searcher(
    context: &ContextLines,
    config: &Config,
    max_count: Option<i64>,
    invert: bool,
) -> Searcher {
    let detection = match (config.binary, config.terminator) {
        (BinaryFiles::Text, _) | (_, 0) => BinaryDetection::none(),
        (BinaryFiles::WithoutMatch, _) => BinaryDetection::quit(0),
        (BinaryFiles::Binary, _) => BinaryDetection::convert(0),
    };
    let (before, after) = if config.report == Report::Lines && !config.only_matching {
        (context.before, context.after)
    } else {
        (0, 0)
    };
    let max = match config.report {
        Report::FilesWith | Report::FilesWithout | Report::Quiet => Some(1),
        _ => max_count.and_then(|m| u64::try_from(m).ok()),
    };
    SearcherBuilder::new()
        .line_terminator(grep_matcher::LineTerminator::byte(config.terminator))
        .invert_match(invert)
        .line_number(true)
        .before_context(before)
        .after_context(after)
        .max_matches(max)
        .binary_detection(detection)
        .memory_map(grep_searcher::MmapChoice::never())
        .build()
}

/// Standard input's size when it is a regular file.
fn stdin_metadata() -> Option<std::fs::Metadata> {
    use std::os::fd::AsFd;
    let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
    File::from(fd).metadata().ok()
}

/// Standard output's device and inode when it is a regular file (`grep x f >> f`).
fn stdout_identity() -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let fd = io::stdout().as_fd().try_clone_to_owned().ok()?;
    let meta = File::from(fd).metadata().ok()?;
    meta.is_file().then(|| (meta.dev(), meta.ino()))
}

fn io_message(e: &io::Error) -> String {
    crate::paths::plain_io(e)
}

impl Run<'_> {
    /// Searches one operand: standard input, a file, or (with -r) a directory's files.
    fn operand<M: Matcher>(
        &mut self,
        matcher: &M,
        mut searcher: Searcher,
        operand: &OsStr,
        implicit: bool,
    ) -> Result<(), Stop> {
        if operand == "-" {
            let name = self.config.label.clone();
            if self.stdin_read {
                return self.search(matcher, &mut searcher, &name, io::empty(), None);
            }
            self.stdin_read = true;
            self.reading = Some(name.clone());
            let meta = stdin_metadata();
            if self.is_the_output(meta.as_ref()) {
                self.reading = None;
                return Ok(());
            }
            let size = meta.filter(|m| m.is_file()).map(|m| m.len());
            return self.search(matcher, &mut searcher, &name, io::stdin().lock(), size);
        }
        let path = Path::new(operand);
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) => {
                // A dangling link named on the command line is an error as GNU's.
                self.complain(operand.as_bytes(), &e);
                return Ok(());
            }
        };
        if meta.is_dir() {
            if self.config.skip_directories || self.excluded_dir(path, true) {
                return Ok(());
            }
            return match self.config.recursive {
                Some(recursion) => {
                    self.walking = true;
                    let walked = self.walk(matcher, searcher, path, implicit, recursion);
                    self.walking = false;
                    walked
                }
                None => {
                    let e = io::Error::from_raw_os_error(libc::EISDIR);
                    self.complain(operand.as_bytes(), &e);
                    Ok(())
                }
            };
        }
        if !self.included(path, true) {
            return Ok(());
        }
        if self.config.skip_devices && !meta.is_file() {
            return Ok(());
        }
        self.search_path(matcher, &mut searcher, path, operand.as_bytes())
    }

    fn walk<M: Matcher>(
        &mut self,
        matcher: &M,
        mut searcher: Searcher,
        root: &Path,
        implicit: bool,
        recursion: Recursion,
    ) -> Result<(), Stop> {
        let exclude_dir = self.config.exclude_dir.clone();
        let walk = ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .follow_links(recursion == Recursion::Logical)
            .sort_by_file_name(|a, b| a.as_bytes().cmp(b.as_bytes()))
            .filter_entry(move |entry| {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                !(is_dir
                    && entry.depth() > 0
                    && exclude_dir
                        .as_ref()
                        .is_some_and(|set| set.is_match(entry.file_name())))
            })
            .build();
        for entry in walk {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    let (path, err) = walk_error(e);
                    self.complain(path.as_os_str().as_bytes(), &err);
                    continue;
                }
            };
            // -r: a link found below an operand is skipped, as are devices.
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if !kind.is_file() {
                continue;
            }
            let path = entry.path();
            if !self.included(path, false) {
                continue;
            }
            let shown = if implicit {
                path.strip_prefix(".").unwrap_or(path)
            } else {
                path
            };
            let shown = shown.as_os_str().as_bytes().to_vec();
            self.search_path(matcher, &mut searcher, path, &shown)?;
        }
        Ok(())
    }

    fn excluded_dir(&self, path: &Path, _command_line: bool) -> bool {
        self.config.exclude_dir.as_ref().is_some_and(|set| {
            set.is_match(path) || path.file_name().is_some_and(|n| set.is_match(n))
        })
    }

    /// --include and --exclude: a file's base name (and, named on the command line, the name
    /// as given).
    fn included(&self, path: &Path, command_line: bool) -> bool {
        let matches = |set: &GlobSet| {
            path.file_name().is_some_and(|n| set.is_match(n))
                || (command_line && set.is_match(path))
        };
        if self.config.exclude.as_ref().is_some_and(matches) {
            return false;
        }
        self.config.include.as_ref().is_none_or(matches)
    }

    fn search_path<M: Matcher>(
        &mut self,
        matcher: &M,
        searcher: &mut Searcher,
        path: &Path,
        shown: &[u8],
    ) -> Result<(), Stop> {
        match File::open(path) {
            Ok(file) => {
                let meta = file.metadata().ok();
                self.reading = Some(shown.to_vec());
                if self.is_the_output(meta.as_ref()) {
                    return Ok(());
                }
                let size = meta.filter(|m| m.is_file()).map(|m| m.len());
                self.search(matcher, searcher, shown, file, size)
            }
            Err(e) => {
                self.complain(shown, &e);
                Ok(())
            }
        }
    }

    /// Whether the input described by `meta` is the file stdout writes to, which GNU refuses
    /// (`input file is also the output`: the search would read what it writes, without end)
    /// unless what is printed cannot grow it (`-q`, `-l`, `-L`, `-c`, `-m 1`).
    fn is_the_output(&mut self, meta: Option<&std::fs::Metadata>) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (Some(out), Some(meta)) = (self.config.output_file, meta) else {
            return false;
        };
        if !self.config.output_can_grow || (meta.dev(), meta.ino()) != out {
            return false;
        }
        self.errors = true;
        if !self.config.no_messages {
            let name = self.reading.take().unwrap_or_default();
            let _ = self.out.flush();
            let _ = writeln!(
                io::stderr(),
                "grep: {}: input file is also the output",
                printable_line(&String::from_utf8_lossy(&name))
            );
        }
        true
    }

    /// `grep: NAME: reason` unless -s; the run's status becomes 2.
    fn complain(&mut self, name: &[u8], e: &io::Error) {
        self.errors = true;
        if self.config.no_messages {
            return;
        }
        let _ = self.out.flush();
        let _ = writeln!(
            io::stderr(),
            "grep: {}: {}",
            printable_line(&String::from_utf8_lossy(name)),
            io_message(e)
        );
    }

    /// Searches what `reader` reads; `size` is its size when it is a regular file (`-T` pads
    /// numbers to its digits, as GNU does; to 19 columns otherwise).
    fn search<M: Matcher, R: io::Read>(
        &mut self,
        matcher: &M,
        searcher: &mut Searcher,
        name: &[u8],
        reader: R,
        size: Option<u64>,
    ) -> Result<(), Stop> {
        let width = if self.config.initial_tab {
            size.map_or(19, |n| n.to_string().len())
        } else {
            0
        };
        let mut sink = FileSink {
            run: self,
            matcher,
            name,
            width,
            count: 0,
            binary: false,
            binary_matched: false,
            last_line: None,
            write_error: None,
        };
        let searched = searcher.search_reader(matcher, reader, &mut sink);
        let FileSink {
            count,
            binary_matched,
            write_error,
            ..
        } = sink;
        if let Some(e) = write_error {
            return Err(Stop::Write(e));
        }
        if let Err(e) = searched {
            self.complain(name, &e);
        }
        let config = self.config;
        match config.report {
            Report::Quiet if count > 0 => return Err(Stop::Selected),
            Report::Count => {
                self.selected |= count > 0;
                let mut line = Vec::new();
                if self.named() {
                    self.name_prefix(&mut line, name, b':');
                }
                line.extend_from_slice(count.to_string().as_bytes());
                line.push(b'\n');
                self.write(&line)?;
            }
            Report::FilesWith if count > 0 => {
                self.selected = true;
                self.file_name_line(name)?;
            }
            Report::FilesWithout if count == 0 => {
                self.selected = true;
                self.file_name_line(name)?;
            }
            _ => self.selected |= count > 0,
        }
        if binary_matched {
            self.flush()?;
            let _ = writeln!(
                io::stderr(),
                "grep: {}: binary file matches",
                printable_line(&String::from_utf8_lossy(name))
            );
        }
        Ok(())
    }

    /// Whether the file being searched is named before its lines.
    fn named(&self) -> bool {
        self.config.with_filename || (self.walking && self.config.names_in_directories)
    }

    fn file_name_line(&mut self, name: &[u8]) -> Result<(), Stop> {
        let mut line = Vec::with_capacity(name.len() + 16);
        self.colored(&mut line, FILE_COLOR, &self.shown(name, false));
        line.push(if self.config.null { 0 } else { b'\n' });
        self.write(&line)
    }

    /// `name` as it goes to stdout: escaped on a terminal.
    fn shown(&self, bytes: &[u8], keep_tabs: bool) -> Vec<u8> {
        if !self.config.terminal {
            return bytes.to_vec();
        }
        let text = String::from_utf8_lossy(bytes);
        if keep_tabs {
            printable_text(&text).into_owned().into_bytes()
        } else {
            printable_line(&text).into_owned().into_bytes()
        }
    }

    fn colored(&self, line: &mut Vec<u8>, color: &[u8], text: &[u8]) {
        if self.config.color {
            line.extend_from_slice(b"\x1b[");
            line.extend_from_slice(color);
            line.extend_from_slice(b"m\x1b[K");
            line.extend_from_slice(text);
            line.extend_from_slice(b"\x1b[m\x1b[K");
        } else {
            line.extend_from_slice(text);
        }
    }

    fn separator(&self, line: &mut Vec<u8>, sep: u8) {
        self.colored(line, SEPARATOR_COLOR, &[sep]);
    }

    fn name_prefix(&self, line: &mut Vec<u8>, name: &[u8], sep: u8) {
        self.colored(line, FILE_COLOR, &self.shown(name, false));
        if self.config.null {
            line.push(0);
        } else {
            self.separator(line, sep);
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        self.out.write_all(bytes).map_err(Stop::Write)?;
        if self.config.line_buffered {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Stop> {
        self.out.flush().map_err(Stop::Write)
    }
}

const FILE_COLOR: &[u8] = b"35";
const NUMBER_COLOR: &[u8] = b"32";
const SEPARATOR_COLOR: &[u8] = b"36";
const MATCH_COLOR: &[u8] = b"01;31";

fn walk_error(e: ignore::Error) -> (PathBuf, io::Error) {
    let mut e = e;
    let mut path = PathBuf::new();
    loop {
        match e {
            ignore::Error::WithPath { path: p, err } => {
                path = p;
                e = *err;
            }
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                e = *err;
            }
            ignore::Error::Loop { child, .. } => {
                return (child, io::Error::other("warning: recursive directory loop"))
            }
            ignore::Error::Io(io) => return (path, io),
            other => return (path, io::Error::other(other.to_string())),
        }
    }
}

/// One file's search: prints as it goes (lines mode) and counts selected lines.
struct FileSink<'r, 'c, 'm, M> {
    run: &'r mut Run<'c>,
    matcher: &'m M,
    name: &'r [u8],
    /// `-T`: the columns line numbers and offsets are padded to.
    width: usize,
    count: u64,
    /// A NUL was seen: the file is binary.
    binary: bool,
    /// A binary file had a selected line: say so instead of printing it.
    binary_matched: bool,
    last_line: Option<u64>,
    write_error: Option<io::Error>,
}

impl<M: Matcher> FileSink<'_, '_, '_, M> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), io::Error> {
        match self.run.write(bytes) {
            Ok(()) => Ok(()),
            Err(Stop::Write(e)) => {
                let message = io::Error::new(e.kind(), e.to_string());
                self.write_error = Some(e);
                Err(message)
            }
            Err(Stop::Selected) => Ok(()),
        }
    }

    /// The separator before a line that does not follow the last one printed.
    fn group_break(&mut self, line_number: u64) -> Result<(), io::Error> {
        let config = self.run.config;
        if !config.context {
            return Ok(());
        }
        let gap = match self.last_line {
            Some(last) => line_number > last + 1,
            None => self.run.printed,
        };
        if gap {
            if let Some(sep) = &config.group_separator {
                let mut line = Vec::with_capacity(sep.len() + 16);
                self.run.colored(&mut line, SEPARATOR_COLOR, sep);
                line.push(b'\n');
                self.write(&line)?;
            }
        }
        self.last_line = Some(line_number);
        self.run.printed = true;
        Ok(())
    }

    fn head(&self, line: &mut Vec<u8>, number: u64, offset: u64, sep: u8) {
        let config = self.run.config;
        let named = self.run.named();
        if named {
            self.run.name_prefix(line, self.name, sep);
        }
        if config.line_number {
            let number = format!("{number:>width$}", width = self.width);
            self.run.colored(line, NUMBER_COLOR, number.as_bytes());
            self.run.separator(line, sep);
        }
        if config.byte_offset {
            let offset = format!("{offset:>width$}", width = self.width);
            self.run.colored(line, NUMBER_COLOR, offset.as_bytes());
            self.run.separator(line, sep);
        }
        if config.initial_tab && (named || config.line_number || config.byte_offset) {
            line.push(b'\t');
        }
    }

    fn body(&self, line: &mut Vec<u8>, text: &[u8], highlight: bool) -> Result<(), io::Error> {
        let config = self.run.config;
        if !(config.color && highlight) {
            line.extend_from_slice(&self.run.shown(text, true));
            return Ok(());
        }
        let mut at = 0;
        let mut result = Ok(());
        let found = self.matcher.find_iter(text, |m| {
            if m.is_empty() {
                return true;
            }
            line.extend_from_slice(&self.run.shown(&text[at..m.start()], true));
            self.run
                .colored(line, MATCH_COLOR, &self.run.shown(&text[m], true));
            at = m.end();
            true
        });
        if let Err(e) = found {
            result = Err(io::Error::other(e.to_string()));
        }
        line.extend_from_slice(&self.run.shown(&text[at..], true));
        result
    }

    fn print_line(
        &mut self,
        bytes: &[u8],
        number: u64,
        offset: u64,
        sep: u8,
    ) -> Result<(), io::Error> {
        self.group_break(number)?;
        let terminator = self.run.config.terminator;
        let text = bytes.strip_suffix(&[terminator]).unwrap_or(bytes);
        let mut line = Vec::with_capacity(text.len() + 32);
        self.head(&mut line, number, offset, sep);
        // GNU's -T puts its tab only before something.
        if text.is_empty() && line.last() == Some(&b'\t') && self.run.config.initial_tab {
            line.pop();
        }
        self.body(&mut line, text, sep == b':' && !self.run.config.invert)?;
        line.push(terminator);
        self.write(&line)
    }

    fn print_matches(&mut self, bytes: &[u8], number: u64, offset: u64) -> Result<(), io::Error> {
        let terminator = self.run.config.terminator;
        let text = bytes.strip_suffix(&[terminator]).unwrap_or(bytes);
        let mut parts = Vec::new();
        self.matcher
            .find_iter(text, |m| {
                if !m.is_empty() {
                    parts.push((m.start(), m.end()));
                }
                true
            })
            .map_err(|e| io::Error::other(e.to_string()))?;
        for (start, end) in parts {
            let mut line = Vec::with_capacity(end - start + 32);
            self.head(&mut line, number, offset + start as u64, b':');
            self.run.colored(
                &mut line,
                MATCH_COLOR,
                &self.run.shown(&text[start..end], true),
            );
            line.push(terminator);
            self.write(&line)?;
        }
        Ok(())
    }
}

impl<M: Matcher> Sink for FileSink<'_, '_, '_, M> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let config = self.run.config;
        let mut offset = mat.absolute_byte_offset();
        for (number, line) in (mat.line_number().unwrap_or(0)..).zip(mat.lines()) {
            self.count += 1;
            match config.report {
                Report::Quiet | Report::FilesWith | Report::FilesWithout => return Ok(false),
                Report::Count => {}
                Report::Lines if self.binary => {
                    self.binary_matched = true;
                    return Ok(false);
                }
                Report::Lines if config.only_matching => {
                    if !config.invert {
                        self.print_matches(line, number, offset)?;
                    }
                }
                Report::Lines => self.print_line(line, number, offset, b':')?,
            }
            offset += line.len() as u64;
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.binary {
            return Ok(true);
        }
        let number = ctx.line_number().unwrap_or(0);
        self.print_line(ctx.bytes(), number, ctx.absolute_byte_offset(), b'-')?;
        Ok(true)
    }

    fn binary_data(&mut self, searcher: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        // -I: a binary file is one without a match.
        Ok(searcher.binary_detection().quit_byte().is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn dash_number_is_context_before_double_dash_only() {
        assert_eq!(
            context_numbers(words(&["grep", "-2", "x", "--", "-3"])),
            words(&["grep", "-C", "2", "x", "--", "-3"])
        );
        assert_eq!(
            context_numbers(words(&["grep", "-e", "-5", "f"])),
            words(&["grep", "-e", "-5", "f"])
        );
    }

    #[test]
    fn a_pattern_list_is_split_at_newlines() {
        assert_eq!(split_patterns("a\nb"), ["a", "b"]);
        assert_eq!(split_patterns("a\n"), ["a", ""]);
    }

    #[test]
    fn h_is_no_filename_and_help_is_long_only() {
        let cli = GnuGrep::try_parse_from(["grep", "-rh", "x"]).unwrap();
        assert!(cli.no_filename && cli.recursive);
    }
}
