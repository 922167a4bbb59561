//! What a tool built on the SDK names: `use aoi::prelude::*;` and a tool needs no other `aoi`
//! import for its description, its flags, its events, its errors and its run.
//!
//! ```no_run
//! use aoi::prelude::*;
//! use clap::{Parser, Subcommand};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     aoi: GlobalArgs,
//!     #[command(subcommand)]
//!     command: Command,
//! }
//!
//! #[derive(Subcommand)]
//! enum Command {
//!     /// Say hello.
//!     Hello,
//!     #[command(flatten)]
//!     Discovery(Discovery),
//! }
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Greeting { text: String }
//!
//! impl DomainEvent for Greeting {
//!     const TYPE: &'static str = "greeting";
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let app = App::new("hello", "1.0.0", "com.example.hello")
//!         .event_schema(|id| EventSchema::new(id, "https://example.com").domain_event::<Greeting>().build())
//!         .command(CommandSpec::new("hello").read_only().events([Greeting::TYPE]));
//!     let cli: Cli = match app.parse() {
//!         Ok(cli) => cli,
//!         Err(code) => return code,
//!     };
//!     match cli.command {
//!         Command::Discovery(d) => app.discover::<Cli>(&cli.aoi, &d),
//!         Command::Hello => app.run(&cli.aoi, "hello", |out| {
//!             out.emit(&Greeting { text: "hello".into() })?;
//!             Ok(Outcome::success())
//!         }),
//!     }
//! }
//! ```

pub use crate::app::{App, Discovery, Limits};
pub use crate::discover::capabilities::CommandSpec;
pub use crate::discover::doctor::Doctor;
pub use crate::discover::schema::EventSchema;
pub use crate::emit::{EmitError, Emitter, Failure, Outcome, RunResult};
pub use crate::surface::cursor::{check_limit, take_page, CursorCodec};
pub use crate::surface::flags::{
    ConfirmArgs, DryRunArgs, GlobalArgs, InputArgs, InputMode, MutationArgs, PageArgs,
};
pub use crate::surface::input::Input;
pub use crate::wire::{
    Category, Check, Code, DomainEvent, ErrorEvent, FrameworkEvent, Plan, Progress, Severity,
    Warning,
};
