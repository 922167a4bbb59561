//! `shout`: a transformer. Reads `item` records and writes them back with upper-case titles.
//!
//! ```sh
//! cargo run --example feed -- list --output jsonl | cargo run --example shout -- --input-jsonl - --output jsonl
//! ```

use std::io::{BufRead, Write};
use std::process::ExitCode;

use aoi::prelude::*;
use clap::{Parser, Subcommand};
use serde::{Deserialize, Serialize};

/// Upper-cases the titles of items read from an upstream stream or plain JSONL.
#[derive(Debug, Parser)]
#[command(name = "shout", version)]
struct Cli {
    #[command(flatten)]
    aoi: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Upper-case the title of every item read.
    Upcase {
        #[command(flatten)]
        input: InputArgs,
    },
    #[command(flatten)]
    Discovery(Discovery),
}

/// The records `shout` accepts: exactly these fields (§10.3: input schemas are strict).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ItemIn {
    id: String,
    n: u64,
    title: String,
}

/// An item with its title shouted.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Item {
    id: String,
    n: u64,
    title: String,
}

impl DomainEvent for Item {
    const TYPE: &'static str = "item";
}

fn main() -> ExitCode {
    let app = App::new(
        "shout",
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.examples.shout",
    )
    .event_schema(|identity| {
        EventSchema::new(identity, "https://schemas.machinemode.io/examples")
            .domain_event::<Item>()
            .build()
    })
    .command(
        CommandSpec::new("upcase")
            .read_only()
            .events([Item::TYPE])
            .record::<ItemIn>()
            .input_default(InputMode::FailFast),
    );
    let cli: Cli = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let input = match &cli.command {
        Command::Discovery(d) => return app.discover::<Cli>(&cli.aoi, d),
        Command::Upcase { input } => input,
    };
    if !cli.aoi.machine() {
        return human(input);
    }
    app.run(&cli.aoi, "upcase", |out| {
        // Each record checked against the schema `input-schema` publishes for it.
        let mut input = app.input("upcase", input)?;
        while let Some(item) = input.next_as::<ItemIn, _>(out)? {
            out.emit(&Item {
                id: item.id,
                n: item.n,
                title: item.title.to_uppercase(),
            })?;
        }
        Ok(input.finish(out, Outcome::success())?)
    })
}

/// Human mode: titles only, one per line.
fn human(input: &InputArgs) -> ExitCode {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    if input.input_jsonl.as_deref() != Some("-") {
        let _ = writeln!(
            std::io::stderr(),
            "error: give --input-jsonl -\n  hint: feed list --output jsonl | shout upcase --input-jsonl -"
        );
        return ExitCode::from(aoi::exit_code::USAGE);
    }
    for line in stdin.lock().lines().map_while(Result::ok) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
            if let Some(t) = v.get("title").and_then(|t| t.as_str()) {
                // A title is data from another program: shown escaped, never acted on.
                let shown = aoi::surface::term::printable_line(&t.to_uppercase()).into_owned();
                if writeln!(stdout, "{shown}").is_err() {
                    return ExitCode::from(aoi::exit_code::SIGPIPE);
                }
            }
        }
    }
    ExitCode::SUCCESS
}
