//! `feed`: a source. Lists a deterministic catalogue of items, bounded and paginated.
//!
//! ```sh
//! cargo run --example feed -- list --limit 3 --output jsonl
//! cargo run --example feed -- list --fail-after 2 --output jsonl   # an upstream rate limit
//! cargo run --example feed -- capabilities
//! ```

use std::process::ExitCode;

use aoi::prelude::*;

#[derive(Debug, Subcommand)]
enum Command {
    /// List items in order, a page at a time.
    List {
        /// Only items whose title starts with this.
        #[arg(long)]
        prefix: Option<String>,
        /// How many items the catalogue holds.
        #[arg(long, default_value_t = 50)]
        total: u64,
        /// Fail with a rate limit after this many items (to exercise pipelines).
        #[arg(long, value_name = "N")]
        fail_after: Option<u64>,
        /// Abort without a summary after this many items (to exercise a cut upstream).
        #[arg(long, value_name = "N")]
        crash_after: Option<u64>,
        /// Fail at once with an error of this category (to exercise exit statuses).
        #[arg(long, value_name = "CATEGORY", hide = true, value_parser = category)]
        fail_with: Option<Category>,
        /// Token for the (imaginary) catalogue API.
        #[arg(long, short = 'k', env = "FEED_TOKEN", hide_env_values = true)]
        api_token: Option<String>,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Check that the feed can run.
    Doctor,
}

/// A §9.2 category by name.
fn category(name: &str) -> Result<Category, String> {
    Category::parse(name).ok_or_else(|| format!("{name:?} is not a category of §9.2"))
}

/// One catalogue item.
#[derive(Debug, Serialize, JsonSchema)]
struct Item {
    /// Stable id.
    id: String,
    /// Position in the catalogue, from 1.
    n: u64,
    /// Display title.
    title: String,
}

impl DomainEvent for Item {
    const TYPE: &'static str = "item";
}

fn app() -> App {
    App::new(
        "feed",
        env!("CARGO_PKG_VERSION"),
        "io.machinemode.examples.feed",
    )
    .about("A deterministic catalogue of items: the source of the example pipeline")
    .echo_args(true)
    .schema_id("https://schemas.machinemode.io/examples")
    .command(CommandSpec::new("list").read_only().emits::<Item>())
    .command(CommandSpec::new("doctor").read_only().events([Check::TYPE]))
    .example(["list", "--limit", "2"])
    .example(["doctor"])
}

fn main() -> ExitCode {
    let app = app();
    let cli: Cli<Command> = match app.parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    // Knows `--api-token`/`-k` is secret from the clap definition, and FEED_TOKEN from the env.
    let redactor = app.redactor();
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    app.debug(
        &cli.aoi,
        &redactor,
        &format!("argv: {:?}", redactor.redact_args(&argv).args),
    );
    match cli.command {
        Command::Doctor => app.run(&cli.aoi, |out| {
            let mut doctor = Doctor::new();
            doctor.check(out, "catalogue", true, Severity::Info, "built in", None)?;
            Ok(doctor.outcome())
        }),
        Command::List {
            prefix,
            total,
            fail_after,
            crash_after,
            fail_with,
            api_token,
            page,
        } => {
            if let Some(token) = &api_token {
                app.debug(
                    &cli.aoi,
                    &redactor.clone().secret_value(token),
                    &format!("using api token {token}"),
                );
            }
            // One body for both modes: in human mode the same events become a table.
            app.run(&cli.aoi, |out| {
                if let Some(category) = fail_with {
                    let error = ErrorEvent::new(
                        category,
                        Code::from_static("ASKED_TO_FAIL"),
                        "--fail-with asked for this failure",
                    );
                    return Err(if category == Category::Authz {
                        Failure::denied(error)
                    } else {
                        error.into()
                    });
                }
                // --limit, --cursor (bound to this query), --max-bytes and next_cursor: the
                // SDK's. The body says what the items are and what a cursor resumes after.
                let pager = page.pager(out, &(&prefix, total))?;
                let after: u64 = pager.after()?.unwrap_or(0);
                let items: Vec<Item> = (after + 1..=total)
                    .map(|n| Item {
                        id: format!("item-{n:04}"),
                        n,
                        title: format!("Item {n}"),
                    })
                    .filter(|i| prefix.as_deref().is_none_or(|p| i.title.starts_with(p)))
                    .take(pager.fetch())
                    .collect();
                // The test hooks: a failure or a crash once that many items of the page went out.
                let stop = fail_after
                    .or(crash_after)
                    .and_then(|n| usize::try_from(n).ok())
                    .filter(|n| *n < pager.limit().min(items.len()));
                let shown = stop.unwrap_or(items.len());
                let outcome = pager.emit(out, items.into_iter().take(shown), |i| i.n)?;
                if stop.is_some() && fail_after.is_some() {
                    return Err(ErrorEvent::new(
                        Category::RateLimited,
                        Code::from_static("UPSTREAM_RATE_LIMIT"),
                        "the catalogue API rate limit was exceeded",
                    )
                    .retry_after_ms(7200)
                    .into());
                }
                if stop.is_some() {
                    out.flush()?;
                    std::process::abort();
                }
                Ok(outcome)
            })
        }
    }
}
