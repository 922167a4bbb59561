//! One module per subcommand.

pub mod lint;
pub mod mcp;
pub mod verify;
