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
use clap::{Parser, Subcommand};

use crate::entry::Entry;
use crate::ls;

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
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List directory contents (bounded; sorted by name unless -t or -S).
    Ls(ls::LsArgs),
    // <commands: one line per command above this marker>
    #[command(flatten)]
    Discovery(Discovery),
}

/// The names a link to this binary may carry (argv\[0\] dispatch).
pub const COMMANDS: &[&str] = &["ls"];

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
            // <schema: one .domain_event line per event type above this marker>
            .build()
    })
    .command(
        CommandSpec::new("ls")
            .read_only()
            .events(["entry"])
            .example(["ls", "-la", "."]),
    )
    // <specs: one .command(...) per command above this marker>
    .command(CommandSpec::new("schema").read_only().example(["schema"]))
    .command(CommandSpec::new("input-schema").read_only().example([
        "input-schema",
        "--command",
        "ls",
    ]))
    .command(
        CommandSpec::new("capabilities")
            .read_only()
            .example(["capabilities"]),
    )
}

/// The argv with the command inserted when the program was called by a command's name.
pub fn dispatch_args(args: Vec<OsString>) -> Vec<OsString> {
    let called = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
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

/// Parses and runs.
pub fn main() -> ExitCode {
    let app = app();
    let args = dispatch_args(std::env::args_os().collect());
    let cli: Cli = match app.parse_from(args) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Command::Discovery(d) => app.discover::<Cli>(&cli.aoi, &d),
        Command::Ls(args) => ls::run(&app, &cli.aoi, args),
        // <dispatch: one arm per command above this marker>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn every_link_name_is_a_command() {
        use clap::CommandFactory;
        let cli = Cli::command();
        for name in COMMANDS {
            assert!(cli.find_subcommand(name).is_some(), "{name}");
        }
        app()
            .check::<Cli>()
            .expect("the manifest matches the parser");
    }
}
