//! The command line: one multi-call binary. `aoi-coreutils ls -la`, or a link named `ls`
//! (argv\[0\] dispatch, as busybox and uutils do), with one capability manifest and one event
//! schema for every command (§3, §17).
//!
//! Each command lives in its own module with its `clap::Args` and a `run` function; this
//! module only names them, describes them in the manifest, and dispatches.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use aoi::app::{App, Discovery};
use aoi::discover::capabilities::CommandSpec;
use aoi::discover::schema::EventSchema;
use aoi::surface::flags::GlobalArgs;
use aoi::DomainEvent;
use clap::{Parser, Subcommand};

use crate::entry::Entry;
use crate::{du, grep, ls, read, wc, write};

/// File tools for agents: bounded by default, typed events in machine mode
/// (`--output jsonl`), the GNU look for people.
#[derive(Debug, Parser)]
#[command(name = "aoi-coreutils", version, disable_help_subcommand = true)]
#[command(
    after_help = "Run a command through a link named after it (ln -s aoi-coreutils ls) or as `aoi-coreutils COMMAND`.\nRead commands return at most 100 items or 64 KiB by default; the summary's next_cursor continues."
)]
pub struct Cli {
    #[command(flatten)]
    pub aoi: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Every command.
///
/// Deferred: only the command a run names has its arguments built, so `cat` (whose start-up
/// `bench/coreutils.sh` holds to a hello-world's) does not build `grep`'s flags. A deferred
/// command's description is written twice, the same words: here for the list in
/// `aoi-coreutils --help` (read before any command is built), and on its arguments struct,
/// which clap applies last when it builds the command (`COMMAND --help`, `capabilities`, MCP).
/// Test: `every_command_is_described_by_its_own_doc`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// List directory contents (bounded; sorted by name unless -t or -S).
    #[command(name = ls::NAME, disable_help_flag = true)]
    Ls(ls::LsArgs),
    /// Find entries in directory trees, gitignore-aware like fd (bounded; sorted by path).
    #[command(name = crate::find::NAME)]
    Find(crate::find::FindArgs),
    /// Search file contents for a pattern (bounded; gitignore-aware; sorted).
    #[command(name = grep::NAME, disable_help_flag = true)]
    Grep(crate::grep::GrepArgs),
    /// Print files (bounded: 64 KiB of content per run, resumable with --cursor).
    #[command(name = read::CAT)]
    Cat(crate::read::CatArgs),
    /// Print the first lines or bytes of files (bounded; GNU -n/-c).
    #[command(name = read::HEAD)]
    Head(crate::read::HeadArgs),
    /// Print the last lines or bytes of files (bounded; GNU -n/-c, -n +K).
    #[command(name = read::TAIL)]
    Tail(crate::read::TailArgs),
    /// Make directories (-p parents, -m mode; --dry-run plans, --idempotency-key replays).
    #[command(name = write::mkdir::NAME)]
    Mkdir(crate::write::MkdirArgs),
    /// Set file times, creating missing files (-c, -d DATE, -r REF; --dry-run plans).
    #[command(name = write::touch::NAME, disable_help_flag = true)]
    Touch(crate::write::TouchArgs),
    /// Copy files and trees (-r); an existing destination is a conflict unless -f or -n.
    #[command(name = write::cp::NAME)]
    Cp(crate::write::CpArgs),
    /// Move or rename (across file systems too); an existing destination is a conflict unless -f or -n.
    #[command(name = write::mv::NAME)]
    Mv(crate::write::MvArgs),
    /// Remove files and trees (-r): destructive, refuses without --confirm (and --confirm-count N).
    #[command(name = write::rm::NAME)]
    Rm(crate::write::RmArgs),
    /// Print newline, word, byte, character counts and line widths, as GNU wc.
    #[command(name = wc::NAME)]
    Wc(crate::wc::WcArgs),
    /// Disk usage of directory trees (bounded; largest first).
    #[command(name = du::NAME, disable_help_flag = true)]
    Du(crate::du::DuArgs),
    /// Describe files in detail: size, blocks, inode, links, mode, owner, times.
    #[command(name = crate::stat::NAME)]
    Stat(crate::stat::StatArgs),
    // <commands: one line per command above this marker>
    #[command(flatten)]
    Discovery(Discovery),
}

/// The names a link to this binary may carry (argv\[0\] dispatch).
pub const COMMANDS: &[&str] = &[
    ls::NAME,
    crate::find::NAME,
    grep::NAME,
    read::CAT,
    read::HEAD,
    read::TAIL,
    wc::NAME,
    write::mkdir::NAME,
    write::touch::NAME,
    write::cp::NAME,
    write::mv::NAME,
    write::rm::NAME,
    du::NAME,
    crate::stat::NAME,
];

/// The tool's identity, schema and command statements.
pub fn app() -> App {
    App::new(
        "aoi-coreutils",
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.coreutils.events",
    )
    .event_schema(|identity| {
        EventSchema::new(identity, "https://schemas.machinemode.io/coreutils")
            .domain_event::<Entry>()
            .domain_event::<crate::grep::Match<'static>>()
            .domain_event::<crate::grep::Context<'static>>()
            .domain_event::<crate::grep::BinaryFile<'static>>()
            .domain_event::<crate::grep::FileCount<'static>>()
            .domain_event::<crate::grep::FileMatch<'static>>()
            .domain_event::<crate::read::Content>()
            .domain_event::<crate::read::Binary>()
            .domain_event::<crate::write::Created>()
            .domain_event::<crate::write::Changed>()
            .domain_event::<crate::write::Removed>()
            .domain_event::<crate::write::Moved>()
            .domain_event::<crate::write::Copied>()
            .domain_event::<crate::wc::Count>()
            .domain_event::<crate::du::Usage>()
            // <schema: one .domain_event line per event type above this marker>
            .build()
    })
    .command(
        CommandSpec::new(ls::NAME)
            .read_only()
            .events([Entry::TYPE])
            .example([ls::NAME, "-l", "--all", "."]),
    )
    .command(
        CommandSpec::new(crate::find::NAME)
            .read_only()
            .events([Entry::TYPE])
            .example([crate::find::NAME, "notes", "--type", "f"]),
    )
    .command(
        CommandSpec::new(grep::NAME)
            .read_only()
            .events([
                grep::Match::TYPE,
                grep::Context::TYPE,
                grep::BinaryFile::TYPE,
                grep::FileCount::TYPE,
                grep::FileMatch::TYPE,
            ])
            .example([grep::NAME, "TODO", "notes", "src"]),
    )
    .command(
        CommandSpec::new(read::CAT)
            .read_only()
            .events([read::Content::TYPE, read::Binary::TYPE])
            .example([read::CAT, "notes/todo.txt", "--max-bytes", "16384"]),
    )
    .command(
        CommandSpec::new(read::HEAD)
            .read_only()
            .events([read::Content::TYPE, read::Binary::TYPE])
            .example([read::HEAD, "--lines", "2", "notes/todo.txt"]),
    )
    .command(
        CommandSpec::new(read::TAIL)
            .read_only()
            .events([read::Content::TYPE, read::Binary::TYPE])
            .example([read::TAIL, "--lines", "2", "notes/todo.txt"]),
    )
    .command(
        CommandSpec::new(write::mkdir::NAME)
            .events([write::Created::TYPE])
            .example([write::mkdir::NAME, "--parents", "build/out"]),
    )
    .command(
        CommandSpec::new(write::touch::NAME)
            .events([write::Created::TYPE, write::Changed::TYPE])
            .example([write::touch::NAME, "notes/new.txt"]),
    )
    .command(
        CommandSpec::new(write::cp::NAME)
            .events([write::Copied::TYPE])
            .example([write::cp::NAME, "--recursive", "notes", "notes-copy"]),
    )
    .command(
        CommandSpec::new(write::mv::NAME)
            .events([write::Moved::TYPE])
            .example([write::mv::NAME, "notes/readme.md", "notes/README.md"]),
    )
    .command(
        CommandSpec::new(write::rm::NAME)
            .destructive()
            .events([write::Removed::TYPE])
            .example([write::rm::NAME, "--confirm", "notes/readme.md"])
            .example([
                write::rm::NAME,
                "--recursive",
                "--confirm",
                "--confirm-count",
                "3",
                "notes",
            ]),
    )
    .command(
        CommandSpec::new(wc::NAME)
            .read_only()
            .events([wc::Count::TYPE])
            .example([wc::NAME, "--lines", "notes/todo.txt", "src/main.rs"]),
    )
    .command(
        CommandSpec::new(du::NAME)
            .read_only()
            .events([du::Usage::TYPE])
            .example([du::NAME, "--max-depth", "1", "."]),
    )
    .command(
        CommandSpec::new(crate::stat::NAME)
            .read_only()
            .events([Entry::TYPE])
            .example([crate::stat::NAME, "notes/todo.txt", "notes/readme.md"]),
    )
    // <specs: one .command(...) per command above this marker>
}

/// The argv with the command inserted when the program was called by a command's name.
pub fn dispatch_args(args: Vec<OsString>) -> Vec<OsString> {
    let called = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
    // GNU's egrep and fgrep are `grep -E` and `grep -F`.
    let syntax = match called {
        "egrep" => Some("-E"),
        "fgrep" => Some("-F"),
        _ => None,
    };
    if let Some(flag) = syntax {
        let mut out = Vec::with_capacity(args.len() + 2);
        out.extend(["aoi-coreutils", grep::NAME, flag].map(OsString::from));
        out.extend(args.into_iter().skip(1));
        return out;
    }
    if COMMANDS.contains(&called) {
        let mut out = Vec::with_capacity(args.len() + 1);
        out.push(OsString::from("aoi-coreutils"));
        out.push(OsString::from(called));
        out.extend(args.into_iter().skip(1));
        out
    } else {
        args
    }
}

/// GNU find's expression in machine mode (`find . -name '*.rs' -type f --output jsonl`): each
/// of its words becomes `--gnu-expr=WORD`, in order, for [`crate::find::expr`] to parse; the
/// crate's own flags (`--output`, `--limit`, fd's `--name`) stay as they are. `-H`, `-L` and
/// `-P` are GNU's when the command line holds GNU's expression, fd's (`--hidden`, `--follow`)
/// otherwise. Nothing after `--` is touched.
pub fn gnu_find_words(args: Vec<OsString>) -> Vec<OsString> {
    use crate::find::expr::arity;
    let Some(at) = applet_at(&args, &[crate::find::NAME]) else {
        return args;
    };
    let words = &args[at + 1..];
    let gnu = words
        .iter()
        .take_while(|w| *w != "--")
        .any(|w| w.to_str().and_then(arity).is_some());
    if !gnu {
        return args;
    }
    let expr = |w: &OsString| {
        let mut word = OsString::from("--gnu-expr=");
        word.push(w);
        word
    };
    let mut out: Vec<OsString> = args[..=at].to_vec();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        if word == "--" {
            out.push(word.clone());
            out.extend(rest.by_ref().cloned());
            break;
        }
        let text = word.to_str().unwrap_or("");
        let takes = match text {
            "-H" | "-L" | "-P" => Some(0),
            _ => arity(text),
        };
        let Some(takes) = takes else {
            out.push(word.clone());
            continue;
        };
        out.push(expr(word));
        if takes == usize::MAX {
            // -exec and its kin: to the `;` or `+` that ends the command.
            for w in rest.by_ref() {
                out.push(expr(w));
                if w == ";" || w == "+" {
                    break;
                }
            }
        } else {
            out.extend(rest.by_ref().take(takes).map(expr));
        }
    }
    out
}

/// `stat --format=FMT` (GNU's) as `stat -c FMT`: `--format` is otherwise the standard flags'
/// spelling of `--output`, which `stat` then does not take (`--output jsonl` does it).
pub fn stat_format_words(args: Vec<OsString>) -> Vec<OsString> {
    let Some(at) = applet_at(&args, &[crate::stat::NAME]) else {
        return args;
    };
    let mut out: Vec<OsString> = args[..=at].to_vec();
    let mut rest = args[at + 1..].iter();
    while let Some(word) = rest.next() {
        if word == "--" {
            out.push(word.clone());
            out.extend(rest.by_ref().cloned());
            break;
        }
        match word.to_str() {
            Some("--format") => out.push(OsString::from("-c")),
            Some(w) if w.starts_with("--format=") => {
                out.push(OsString::from("-c"));
                out.push(OsString::from(&w["--format=".len()..]));
            }
            _ => out.push(word.clone()),
        }
    }
    out
}

/// Where the command line names its applet (the first word that is a command; global flags
/// may come before it), when that applet is one of `wanted`. Every rewriting of an applet's
/// words starts here, so a later word that happens to be a command's name (`grep find src`)
/// is never taken for the applet.
fn applet_at(args: &[OsString], wanted: &[&str]) -> Option<usize> {
    let at = args
        .iter()
        .skip(1)
        .position(|a| COMMANDS.iter().any(|c| a == c))?
        + 1;
    wanted.iter().any(|w| args[at] == *w).then_some(at)
}

/// `head -5` and `tail -20`, the counts GNU still takes in its obsolete form, as `-n 5` and
/// `-n 20`: only for `head` and `tail`, only before `--`, and never the value of `-n`/`-c`
/// (`head -n -5` is all but the last five lines).
pub fn obsolete_counts(args: Vec<OsString>) -> Vec<OsString> {
    let Some(at) = applet_at(&args, &[read::HEAD, read::TAIL]) else {
        return args;
    };
    let mut out = Vec::with_capacity(args.len() + 1);
    let mut words = args.into_iter();
    out.extend(words.by_ref().take(at + 1));
    let mut literal = false;
    for word in words {
        let count = word
            .to_str()
            .and_then(|w| w.strip_prefix('-'))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(str::to_owned);
        let after_flag = out
            .last()
            .is_some_and(|p| ["-n", "--lines", "-c", "--bytes"].iter().any(|f| p == f));
        literal |= word == "--";
        match count {
            Some(n) if !literal && !after_flag => {
                out.push(OsString::from("-n"));
                out.push(OsString::from(n));
            }
            _ => out.push(word),
        }
    }
    out
}

/// Parses and runs.
pub fn main() -> ExitCode {
    let args = dispatch_args(std::env::args_os().collect());
    // Human mode is GNU's, for the applets uutils implements.
    if let Some(code) = crate::gnu::run(&args) {
        return code;
    }
    let app = app();
    let args = stat_format_words(gnu_find_words(obsolete_counts(args)));
    let cli: Cli = match app.parse_from(args) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Command::Discovery(d) => app.discover::<Cli>(&cli.aoi, &d),
        Command::Ls(args) => ls::run(&app, &cli.aoi, args),
        Command::Find(args) => crate::find::run(&app, &cli.aoi, args),
        Command::Grep(args) => crate::grep::run(&app, &cli.aoi, args),
        Command::Cat(args) => crate::read::run_cat(&app, &cli.aoi, args),
        Command::Head(args) => crate::read::run_head(&app, &cli.aoi, args),
        Command::Tail(args) => crate::read::run_tail(&app, &cli.aoi, args),
        Command::Mkdir(args) => crate::write::mkdir::run(&app, &cli.aoi, args),
        Command::Touch(args) => crate::write::touch::run(&app, &cli.aoi, args),
        Command::Cp(args) => crate::write::cp::run(&app, &cli.aoi, args),
        Command::Mv(args) => crate::write::mv::run(&app, &cli.aoi, args),
        Command::Rm(args) => crate::write::rm::run(&app, &cli.aoi, args),
        Command::Wc(args) => crate::wc::run(&app, &cli.aoi, args),
        Command::Du(args) => crate::du::run(&app, &cli.aoi, args),
        Command::Stat(args) => crate::stat::run(&app, &cli.aoi, args),
        // <dispatch: one arm per command above this marker>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_applet_named_first_has_its_words_rewritten() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        // `find` and `stat` as grep's pattern and path are not applets.
        let grep = args(&[
            "aoi-coreutils",
            "grep",
            "find",
            "-name",
            "x",
            "--output",
            "jsonl",
        ]);
        assert_eq!(gnu_find_words(grep.clone()), grep);
        let grep = args(&["aoi-coreutils", "grep", "stat", "--format=json", "f"]);
        assert_eq!(stat_format_words(grep.clone()), grep);
        let tail = args(&["aoi-coreutils", "grep", "head", "-5"]);
        assert_eq!(obsolete_counts(tail.clone()), tail);
        // After global flags, the applet is still found.
        assert_eq!(
            gnu_find_words(args(&[
                "aoi-coreutils",
                "--output",
                "jsonl",
                "find",
                "-type",
                "f"
            ])),
            args(&[
                "aoi-coreutils",
                "--output",
                "jsonl",
                "find",
                "--gnu-expr=-type",
                "--gnu-expr=f"
            ])
        );
        assert_eq!(
            stat_format_words(args(&["aoi-coreutils", "stat", "--format=%s", "f"])),
            args(&["aoi-coreutils", "stat", "-c", "%s", "f"])
        );
        assert_eq!(
            obsolete_counts(args(&["aoi-coreutils", "head", "-5", "f"])),
            args(&["aoi-coreutils", "head", "-n", "5", "f"])
        );
    }

    #[test]
    fn a_link_named_after_a_command_runs_it() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            dispatch_args(args(&["/usr/local/bin/ls", "-la"])),
            args(&["aoi-coreutils", "ls", "-la"])
        );
        assert_eq!(
            dispatch_args(args(&["aoi-coreutils", "ls"])),
            args(&["aoi-coreutils", "ls"])
        );
    }

    #[test]
    fn head_and_tail_take_the_obsolete_count_form() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let cases: [(&[&str], &[&str]); 6] = [
            (&["x", "head", "-5", "f"], &["x", "head", "-n", "5", "f"]),
            (
                &["x", "--output", "jsonl", "tail", "-20"],
                &["x", "--output", "jsonl", "tail", "-n", "20"],
            ),
            // The value of -n keeps its sign: all but the last five.
            (&["x", "head", "-n", "-5"], &["x", "head", "-n", "-5"]),
            // After `--` it is a file name.
            (&["x", "head", "--", "-5"], &["x", "head", "--", "-5"]),
            // Other commands are left as they are.
            (&["x", "ls", "-1"], &["x", "ls", "-1"]),
            (&["x", "head", "-", "-x5"], &["x", "head", "-", "-x5"]),
        ];
        for (given, want) in cases {
            assert_eq!(obsolete_counts(args(given)), args(want), "{given:?}");
        }
    }

    #[test]
    fn every_command_is_described_by_its_own_doc() {
        use clap::CommandFactory;
        let about = |cli: &clap::Command, name: &str| {
            cli.find_subcommand(name)
                .and_then(|c| c.get_about())
                .map(ToString::to_string)
                .unwrap_or_default()
        };
        let listed = Cli::command();
        let mut cli = Cli::command();
        cli.build();
        for name in COMMANDS {
            let built = about(&cli, name);
            assert!(
                !built.is_empty() && !built.contains("flags") && !built.contains("(§"),
                "{name}: {built}"
            );
            // The root's list (unbuilt) says what the command's own help (built) says.
            assert_eq!(about(&listed, name), built, "{name}");
        }
        let ls = cli.find_subcommand("ls").and_then(|c| c.get_about());
        assert_eq!(
            ls.map(ToString::to_string).as_deref(),
            Some("List directory contents (bounded; sorted by name unless -t or -S)")
        );
    }

    #[test]
    fn every_link_name_is_a_command() {
        use clap::CommandFactory;
        let cli = Cli::command();
        for name in COMMANDS {
            assert!(cli.find_subcommand(name).is_some(), "{name}");
        }
        // And every command is a link name: discovery aside, the parser has no other.
        let discovery = aoi::discover::manifest::DISCOVERY_COMMANDS;
        for sub in cli.get_subcommands().map(clap::Command::get_name) {
            assert!(
                COMMANDS.contains(&sub) || discovery.contains(&sub),
                "{sub} is not in COMMANDS"
            );
        }
        app()
            .check::<Cli>()
            .expect("the manifest matches the parser");
    }
}
