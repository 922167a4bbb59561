//! The crate README's complete tool (README.md shows this file; tests/it/readme.rs checks both).
use aoi::prelude::*;

#[derive(Subcommand)]
enum Cmd {
    /// Count up to a number, a page at a time.
    Count {
        /// The last number.
        #[arg(long, default_value_t = 100)]
        to: u64,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Remember a number.
    Keep {
        /// The number.
        n: u64,
        #[command(flatten)]
        write: MutationArgs,
    },
}

/// A number.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Number {
    /// Its value.
    n: u64,
}

impl DomainEvent for Number {
    const TYPE: &'static str = "number";
}

fn main() -> std::process::ExitCode {
    let app = App::new("numbers", "1.0.0", "com.example.numbers")
        .about("Counts, and keeps what it is told")
        .schema_id("https://schemas.example.com/numbers")
        .command(CommandSpec::new("count").read_only().emits::<Number>())
        .command(CommandSpec::new("keep").emits::<Number>())
        .example(["count", "--to", "5"])
        .example(["keep", "7"]);
    let cli: Cli<Cmd> = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Cmd::Count { to, page } => app.run(&cli.aoi, |out| {
            // --limit, --cursor (bound to this command and `to`), --max-bytes, next_cursor.
            let pager = page.pager(out, &to)?;
            let after: u64 = pager.after()?.unwrap_or(0);
            let numbers = (after + 1..=to).map(|n| Number { n });
            pager.emit(out, numbers, |number| number.n)
        }),
        Cmd::Keep { n, write } => app.run(&cli.aoi, |out| {
            // --dry-run, then the key: replayed, or the effect, recorded, then written.
            Mutation::new(&write).run(out, &n, Plan::new("keep", n.to_string()), || {
                let kept = JsonFile::for_tool("numbers", "kept.json")?;
                kept.update(|all: &mut Vec<u64>| {
                    all.push(n);
                    Ok(vec![Number { n }])
                })
            })
        }),
    }
}
