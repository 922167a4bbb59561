//! Colour for human output: only on a terminal, never with `--no-color` or `NO_COLOR`.

use std::io::IsTerminal;

/// Whether to paint, decided once per output stream.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour when `stream` is a terminal, `--no-color` is off and `NO_COLOR` is unset or empty.
    pub fn for_stream(stream: &impl IsTerminal, no_color: bool) -> Style {
        let env_off = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && !env_off && stream.is_terminal(),
        }
    }

    fn paint(self, sgr: &str, text: &str) -> String {
        if self.color {
            format!("\u{1b}[{sgr}m{text}\u{1b}[0m")
        } else {
            text.to_owned()
        }
    }

    /// Bold.
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Green: success.
    pub fn good(self, text: &str) -> String {
        self.paint("1;32", text)
    }

    /// Red: violations.
    pub fn bad(self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// Yellow: honest failures and notices.
    pub fn warn(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Dim: secondary detail.
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}
