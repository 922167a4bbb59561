//! `shout`: a transformer. Reads `item` records and writes them back with upper-case titles.
//!
//! ```sh
//! cargo run --example feed -- list --output jsonl | cargo run --example shout -- upcase --input-jsonl - --output jsonl
//! ```

use aoi::prelude::*;

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Upper-case the title of every item read.
    Upcase {
        #[command(flatten)]
        input: InputArgs,
    },
}

/// The records `shout` accepts: exactly these fields (§10.3: input schemas are strict).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ItemIn {
    id: String,
    n: u64,
    title: String,
}

/// An item with its title shouted.
#[derive(Debug, Serialize, JsonSchema)]
struct Item {
    id: String,
    n: u64,
    title: String,
}

impl DomainEvent for Item {
    const TYPE: &'static str = "item";
}

fn main() -> std::process::ExitCode {
    let app = App::new(
        "shout",
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.examples.shout",
    )
    .about("Upper-cases the titles of items read from an upstream stream or plain JSONL")
    .schema_id("https://schemas.machinemode.io/examples")
    .command(
        CommandSpec::new("upcase")
            .read_only()
            .emits::<Item>()
            .record::<ItemIn>()
            .input_default(InputMode::FailFast),
    );
    let cli: Cli<Cmd> = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let Cmd::Upcase { input } = cli.command;
    // One body for both modes: a person sees the shouted items as a table.
    app.run(&cli.aoi, |out| {
        // Each record checked against the schema `input-schema` publishes for it.
        let mut input = app.input(&input)?;
        while let Some(item) = input.next_as::<ItemIn, _>(out)? {
            let title = item.title.to_uppercase();
            out.emit(&Item {
                title,
                ..item.into()
            })?;
        }
        Ok(input.finish(out, Outcome::success())?)
    })
}

impl From<ItemIn> for Item {
    fn from(item: ItemIn) -> Item {
        Item {
            id: item.id,
            n: item.n,
            title: item.title,
        }
    }
}
