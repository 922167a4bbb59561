//! Shell completions and man pages, generated from the tool's own clap definition (the same
//! one `--help`, `input-schema` and `capabilities` come from, so none can drift): a tool adds
//! `completions SHELL` and `man [COMMAND]` and calls these. Feature `shell`.

use std::io::{self, Write};
use std::process::ExitCode;

pub use clap_complete::Shell;

/// The two commands, for a tool to flatten into its own subcommands
/// (`#[command(flatten)] Shell(ShellCommand)`); hidden from `--help`'s list and from
/// `capabilities`, since they print no AOI stream (say so in the root help).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ShellCommand {
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(hide = true)]
    Completions {
        /// The shell.
        shell: Shell,
    },
    /// Print the man page of the tool, or of one command (`man search | man -l -`).
    #[command(hide = true)]
    Man {
        /// The command (`auth login` as two words); none for the tool itself.
        command: Vec<String>,
    },
}

impl ShellCommand {
    /// Runs the command for the tool whose clap definition is `cmd`, installed as `bin`.
    pub fn run(self, cmd: clap::Command, bin: &str) -> ExitCode {
        match self {
            ShellCommand::Completions { shell } => completions(cmd, bin, shell),
            ShellCommand::Man { command } => man(cmd, &command),
        }
    }
}

/// Writes `shell`'s completion script for `cmd` (named `bin`) to stdout.
pub fn completions(mut cmd: clap::Command, bin: &str, shell: Shell) -> ExitCode {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, bin, &mut out);
    written(&out)
}

/// Writes the man page (roff) of `cmd`, or of its subcommand at `path` (`["auth", "login"]`),
/// to stdout; a path that names no command is a usage error (64) with the names it knows.
pub fn man(cmd: clap::Command, path: &[String]) -> ExitCode {
    let mut cmd = cmd;
    cmd.build();
    let mut page = cmd.clone();
    let mut name = cmd.get_name().to_owned();
    for word in path {
        let Some(sub) = page.find_subcommand(word).cloned() else {
            let known: Vec<&str> = page
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(clap::Command::get_name)
                .collect();
            let _ = writeln!(
                io::stderr(),
                "error: `{word}` is not a command of `{name}` (it has: {})",
                known.join(", ")
            );
            return ExitCode::from(crate::exit_code::USAGE);
        };
        name = format!("{name}-{word}");
        page = sub;
    }
    let mut out = Vec::new();
    if clap_mangen::Man::new(page)
        .title(name)
        .render(&mut out)
        .is_err()
    {
        return ExitCode::from(crate::exit_code::SOFTWARE);
    }
    written(&out)
}

/// Writes `bytes` to stdout: a closed reader is 141, any other failure 74.
fn written(bytes: &[u8]) -> ExitCode {
    match io::stdout().lock().write_all(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::from(crate::exit_code::SIGPIPE)
        }
        Err(_) => ExitCode::from(crate::exit_code::IO_ERR),
    }
}
