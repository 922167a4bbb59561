//! What a tool built on the SDK names: `use aoi::prelude::*;` and a tool needs no other
//! import for its description, its flags, its events, its errors, its paging, its writes and
//! its run; the derives it uses (`Parser`, `Subcommand`, `Serialize`, `JsonSchema`, ...) come
//! with it.
//!
//! ```no_run
//! use aoi::prelude::*;
//!
//! #[derive(Subcommand)]
//! enum Cmd {
//!     /// Say hello.
//!     Hello,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     text: String,
//! }
//!
//! impl DomainEvent for Greeting {
//!     const TYPE: &'static str = "greeting";
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let app = App::new("hello", "1.0.0", "com.example.hello")
//!         .schema_id("https://schemas.example.com/hello")
//!         .command(CommandSpec::new("hello").read_only().emits::<Greeting>())
//!         .example(["hello"]);
//!     let cli: Cli<Cmd> = match app.parse() {
//!         Ok(cli) => cli,
//!         Err(code) => return code,
//!     };
//!     match cli.command {
//!         Cmd::Hello => app.run(&cli.aoi, |out| {
//!             out.emit(&Greeting { text: "hello".into() })?;
//!             Ok(Outcome::success())
//!         }),
//!     }
//! }
//! ```

pub use crate::app::{App, Cli, Discovery, Limits};
pub use crate::discover::capabilities::CommandSpec;
pub use crate::discover::doctor::Doctor;
pub use crate::discover::schema::EventSchema;
pub use crate::emit::{EmitError, Emitter, Failure, Outcome, RunResult};
pub use crate::surface::cursor::{check_limit, take_page, CursorCodec, Pager};
pub use crate::surface::flags::{
    ConfirmArgs, DryRunArgs, GlobalArgs, InputArgs, InputMode, MutationArgs, PageArgs,
};
pub use crate::surface::input::Input;
pub use crate::surface::mutation::Mutation;
pub use crate::surface::store::JsonFile;
pub use crate::wire::{
    Category, Check, Code, DomainEvent, ErrorEvent, FrameworkEvent, Plan, Progress, Severity,
    Warning,
};

// What a tool's definitions derive: its flags (clap), its events' bodies (serde) and their
// schemas (schemars), so the one import above is the only one a tool needs.
pub use clap::{Args, Parser, Subcommand, ValueEnum};
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
