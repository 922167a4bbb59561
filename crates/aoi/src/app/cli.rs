//! [`Cli`]: a tool's command line of subcommands, the global flags and the discovery
//! subcommands, and how [`App::parse`](super::App::parse) knows the SDK's discovery
//! subcommands when it meets them.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use super::Discovery;
use crate::surface::flags::GlobalArgs;

/// A tool's command line when it is its subcommands `C`, the global flags and the discovery
/// subcommands, nothing more: named and versioned by its [`App`](super::App), described by
/// [`App::about`](super::App::about). `C` need not list [`Discovery`]: [`App::parse`](super::App::parse)
/// answers it.
///
/// ```
/// use aoi::prelude::*;
///
/// #[derive(Subcommand)]
/// enum Cmd {
///     /// Say hello.
///     Hello,
/// }
///
/// let app = App::new("hello", "1.0.0", "com.example.hello").about("Greets");
/// let cli: Cli<Cmd> = app.parse_from(["hello", "hello"]).unwrap();
/// assert!(matches!(cli.command, Cmd::Hello));
/// ```
#[derive(Debug)]
pub struct Cli<C> {
    /// The global flags (§16.1).
    pub aoi: GlobalArgs,
    /// The command the arguments named.
    pub command: C,
}

/// [`Cli`] as clap reads it: the tool's commands and the discovery ones.
#[derive(Debug, Parser)]
#[command(about = None, long_about = None)]
pub(super) struct CliDefinition<C: Subcommand> {
    #[command(flatten)]
    aoi: GlobalArgs,
    #[command(subcommand)]
    command: CliCommands<C>,
}

#[derive(Debug, Subcommand)]
enum CliCommands<C: Subcommand> {
    #[command(flatten)]
    Tool(C),
    #[command(flatten)]
    Discovery(Discovery),
}

impl<C: Subcommand> CommandFactory for Cli<C> {
    fn command() -> clap::Command {
        CliDefinition::<C>::command()
    }

    fn command_for_update() -> clap::Command {
        CliDefinition::<C>::command_for_update()
    }
}

impl<C: Subcommand> FromArgMatches for Cli<C> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let parsed = CliDefinition::<C>::from_arg_matches(matches)?;
        match parsed.command {
            CliCommands::Tool(command) => Ok(Cli {
                aoi: parsed.aoi,
                command,
            }),
            // App::parse answers these before it asks for a Cli.
            CliCommands::Discovery(_) => Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidSubcommand,
                "the discovery subcommands are answered by App::parse\n",
            )),
        }
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl<C: Subcommand> Parser for Cli<C> {}

/// The SDK's [`GlobalArgs`] and [`Discovery`] subcommand `matches` holds, when `root` (built,
/// as parsed) has the flags of the one and `matches` names the other: a tool's own command
/// that is merely called `schema` (aoi's) is not the SDK's.
pub(super) fn sdk_discovery(
    root: &clap::Command,
    matches: &clap::ArgMatches,
) -> Option<(GlobalArgs, Discovery)> {
    use clap::Args;
    let ids = |cmd: &clap::Command| -> Vec<String> {
        cmd.get_arguments()
            .map(|a| a.get_id().to_string())
            .collect()
    };
    let (name, _) = matches.subcommand()?;
    let sdk = Discovery::augment_subcommands(clap::Command::new("sdk"));
    let theirs = root.find_subcommand(name)?;
    let ours = sdk.find_subcommand(name)?;
    let root_ids = ids(root);
    let globals = ids(&GlobalArgs::augment_args(clap::Command::new("sdk")));
    let same = ids(ours).iter().all(|id| ids(theirs).contains(id))
        && globals.iter().all(|id| root_ids.contains(id));
    if !same {
        return None;
    }
    Some((
        GlobalArgs::from_arg_matches(matches).ok()?,
        Discovery::from_arg_matches(matches).ok()?,
    ))
}
