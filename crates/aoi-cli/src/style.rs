//! Colour for human output, as `aoi::surface::color` decides it: only on a terminal, never
//! with `--no-color`, `NO_COLOR` or `TERM=dumb`.

use std::io::IsTerminal;

/// Whether to paint, decided once per output stream.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour when `stream` is a terminal and nothing turns it off (see `aoi::surface::color`).
    pub fn for_stream(stream: &impl IsTerminal, no_color: bool) -> Style {
        Style {
            color: aoi::surface::color::enabled(stream, no_color),
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
