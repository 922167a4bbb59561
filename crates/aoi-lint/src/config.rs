//! `aoi-lint.toml`: what discovery alone cannot tell lint about a tool.
//!
//! Lint needs no configuration for a tool whose `capabilities` gives a runnable example for
//! each command. The file covers the rest: setup commands that put data in each fresh sandbox,
//! fixture files, invocations, stdin and environment for commands whose examples need them,
//! and paths whose changes are caches rather than side effects.
//!
//! ```toml
//! # Run after the tool's program, in every fresh sandbox, before each probe.
//! setup = [["import", "--input-jsonl", "docs.jsonl"]]
//! # Copied into every sandbox's working directory (relative to this file).
//! fixtures = "lint-fixtures"
//! # Changes under these globs (relative to the sandbox root) are not side effects.
//! ignore_paths = ["**/*.db-search"]
//! timeout = 10.0
//!
//! [env]
//! EXAMPLE_TOKEN = "lint-token"
//!
//! [commands."auth login"]
//! args = ["auth", "login", "--with-token"]
//! stdin = "lint-token\n"
//!
//! [commands."auth unprotect"]
//! env = { EXAMPLE_TOKEN = "lint-token" }
//! setup = [["auth", "protect"]]
//!
//! [commands.sync]
//! skip = "needs a second database"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The tool to lint, program then arguments, when the command line does not name one.
    pub tool: Vec<String>,
    /// Steps run with the tool's program in every fresh sandbox before each probe.
    pub setup: Vec<SetupStep>,
    /// A directory copied into every sandbox's working directory.
    pub fixtures: Option<PathBuf>,
    /// Globs (relative to the sandbox root; `*` within a segment, `**` across segments) whose
    /// changes are not side effects, e.g. a cache.
    pub ignore_paths: Vec<String>,
    /// Environment for every run of the tool.
    pub env: BTreeMap<String, String>,
    /// Seconds each process may take (default 10).
    pub timeout: Option<f64>,
    /// Settings per command, by the name capabilities gives it.
    pub commands: BTreeMap<String, CommandConfig>,
}

/// Settings for one command.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandConfig {
    /// The invocation to lint, argv after the program (instead of the capabilities example).
    pub args: Option<Vec<String>>,
    /// Bytes for the command's stdin.
    pub stdin: Option<String>,
    /// Environment for this command's runs.
    pub env: BTreeMap<String, String>,
    /// Steps run after the global setup, before each probe of this command (with this
    /// command's environment).
    pub setup: Vec<SetupStep>,
    /// Do not lint this command, for this reason.
    pub skip: Option<String>,
}

/// One setup step: an argument list, or a table with stdin.
///
/// ```toml
/// setup = [["import", "--input-jsonl", "seed.jsonl"], { args = ["auth", "login", "--with-token"], stdin = "token\n" }]
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SetupStep {
    /// Arguments after the tool's program.
    Args(Vec<String>),
    /// Arguments and the bytes for stdin.
    WithStdin {
        /// Arguments after the tool's program.
        args: Vec<String>,
        /// Bytes for stdin.
        #[serde(default)]
        stdin: Option<String>,
    },
}

impl SetupStep {
    /// The arguments.
    pub fn args(&self) -> &[String] {
        match self {
            SetupStep::Args(args) | SetupStep::WithStdin { args, .. } => args,
        }
    }

    /// The stdin bytes, when the step has them.
    pub fn stdin(&self) -> Option<&str> {
        match self {
            SetupStep::Args(_) => None,
            SetupStep::WithStdin { stdin, .. } => stdin.as_deref(),
        }
    }
}

/// Why a config file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// It cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not valid TOML for lint.
    #[error("{path} is not a valid aoi-lint config: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The parser's message, on one line.
        message: String,
    },
}

impl Config {
    /// Reads `path`; a relative `fixtures` directory is taken relative to the file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut config = Config::parse(&text).map_err(|message| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        })?;
        if let (Some(fixtures), Some(dir)) = (&config.fixtures, path.parent()) {
            if fixtures.is_relative() {
                config.fixtures = Some(dir.join(fixtures));
            }
        }
        Ok(config)
    }

    /// Parses the text of a config file.
    pub fn parse(text: &str) -> Result<Config, String> {
        // The message quotes the offending line, which may hold a lone `\r` or an escape.
        toml::from_str(text).map_err(|e| aoi::wire::single_line(e.to_string().trim()).into_owned())
    }

    /// The per-process timeout: at least a millisecond (a positive timeout never rounds to
    /// none), at most a century, which is as good as none and which a deadline
    /// (`Instant::now() + timeout`) can always hold.
    pub fn timeout(&self) -> Duration {
        const SHORTEST: Duration = Duration::from_millis(1);
        const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);
        self.timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .map_or(Duration::from_secs(10), |t| {
                Duration::try_from_secs_f64(t).map_or(LONGEST, |d| d.clamp(SHORTEST, LONGEST))
            })
    }

    /// The settings of `command` (defaults when the file says nothing of it).
    pub fn command(&self, command: &str) -> CommandConfig {
        self.commands.get(command).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("config.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! "))
            .skip_while(|l| !l.starts_with("```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("```"))
            .collect::<Vec<_>>()
            .join("\n");
        let c = Config::parse(&doc).unwrap();
        assert_eq!(c.setup[0].args()[0], "import");
        assert_eq!(
            c.command("auth login").stdin.as_deref(),
            Some("lint-token\n")
        );
        assert_eq!(
            c.command("sync").skip.as_deref(),
            Some("needs a second database")
        );
        assert_eq!(c.timeout(), Duration::from_secs(10));
        assert_eq!(c.command("nothing"), CommandConfig::default());
    }

    #[test]
    fn unknown_keys_are_refused_with_a_one_line_message() {
        let e = Config::parse("setpu = []\n").unwrap_err();
        assert!(e.contains("setpu") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn a_huge_timeout_is_a_century_not_a_panic() {
        // Found by the fuzz target `lint_config`: `timeout = 1e300` panicked converting the
        // seconds to a Duration, and 1e19 would have overflowed the sandbox's deadline.
        for text in ["timeout = 1e300\n", "timeout = 1e19\n", "timeout = inf\n"] {
            let t = Config::parse(text).unwrap().timeout();
            assert!(std::time::Instant::now().checked_add(t).is_some(), "{text}");
        }
        let century = Config::parse("timeout = 1e300\n").unwrap().timeout();
        assert_eq!(century.as_secs(), 100 * 365 * 24 * 60 * 60);
        assert_eq!(
            Config::parse("timeout = 2.5\n").unwrap().timeout(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            Config::parse("timeout = -1.0\n").unwrap().timeout(),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn a_tiny_timeout_is_a_millisecond_not_none() {
        // Found by the fuzz target `lint_config` in CI: `timeout = 1e-80` became a zero
        // Duration, a deadline that had passed before the process started.
        for text in [
            "timeout = 1e-80\n",
            "timeout = 5e-324\n",
            "timeout = 1e-10\n",
        ] {
            let t = Config::parse(text).unwrap().timeout();
            assert_eq!(t, Duration::from_millis(1), "{text}");
        }
    }

    #[test]
    fn a_refusal_quoting_a_carriage_return_or_an_escape_is_still_one_line() {
        // Found by the fuzz target `lint_config`: the parser's message quotes the line, and
        // only `\n` was taken out of it.
        for text in ["# a\rb\n", "x = \"\u{1b}[2J\" y\n"] {
            let e = Config::parse(text).unwrap_err();
            assert!(!e.contains(['\n', '\r', '\u{1b}']), "{e:?}");
        }
    }
}
