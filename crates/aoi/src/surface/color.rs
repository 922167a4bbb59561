//! The one colour decision for human output (§16.1 `--no-color`; machine mode never colours).
//!
//! Colour is used only when all of these hold: the stream is a terminal, `--no-color` was not
//! given, `NO_COLOR` is unset or empty (<https://no-color.org>: "present and not an empty
//! string" turns colour off), and `TERM` is not `dumb`. Every human output of the SDK, `aoi`
//! and outline asks here.

use std::io::IsTerminal;

/// True when the environment allows colour: `NO_COLOR` unset or empty, `TERM` not `dumb`.
pub fn env_allows() -> bool {
    allows(
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
    )
}

/// True when output to `stream` is coloured, `--no-color` being `no_color_flag`.
pub fn enabled(stream: &impl IsTerminal, no_color_flag: bool) -> bool {
    !no_color_flag && env_allows() && stream.is_terminal()
}

/// How one output stream is painted, decided once ([`Paint::for_stream`]): SGR-coloured text
/// when colour is on, the text as it is otherwise. The one painter of human output: the
/// SDK's, `aoi`'s, outline's and the coreutils' (whose `LS_COLORS`-style codes go through
/// [`Paint::sgr`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    on: bool,
}

impl Paint {
    /// Colour for `stream` when it is a terminal and nothing turns colour off
    /// ([`enabled`]).
    pub fn for_stream(stream: &impl IsTerminal, no_color_flag: bool) -> Paint {
        Paint {
            on: enabled(stream, no_color_flag),
        }
    }

    /// Colour as decided elsewhere (`true`: paint).
    pub const fn new(on: bool) -> Paint {
        Paint { on }
    }

    /// True when this paint colours.
    pub const fn is_on(self) -> bool {
        self.on
    }

    /// `text` between the SGR sequence of `code` (e.g. `"01;34"`) and a reset, when on.
    /// `text` is written as given: escape data with
    /// [`printable_line`](crate::surface::term::printable_line) first.
    pub fn sgr(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\u{1b}[{code}m{text}\u{1b}[0m")
        } else {
            text.to_owned()
        }
    }

    /// Bold: headings, names.
    pub fn bold(self, text: &str) -> String {
        self.sgr("1", text)
    }

    /// Dim: secondary detail.
    pub fn dim(self, text: &str) -> String {
        self.sgr("2", text)
    }

    /// Green: success, a check that passed.
    pub fn good(self, text: &str) -> String {
        self.sgr("32", text)
    }

    /// Bold red: a failure, a violation.
    pub fn bad(self, text: &str) -> String {
        self.sgr("1;31", text)
    }

    /// Yellow: a warning, an honest failure, a notice.
    pub fn warn(self, text: &str) -> String {
        self.sgr("33", text)
    }
}

fn allows(no_color: Option<&std::ffi::OsStr>, term: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::allows;

    #[test]
    fn paint_wraps_text_in_sgr_only_when_on() {
        use super::Paint;
        assert_eq!(Paint::new(true).bad("x"), "\u{1b}[1;31mx\u{1b}[0m");
        assert_eq!(
            Paint::new(true).sgr("01;34", "dir"),
            "\u{1b}[01;34mdir\u{1b}[0m"
        );
        assert_eq!(Paint::new(false).good("x"), "x");
        // A file is never a terminal: no colour whatever the flags.
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(!Paint::for_stream(&file, false).is_on());
    }

    #[test]
    fn no_color_set_to_anything_but_empty_and_a_dumb_terminal_turn_colour_off() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert!(allows(None, None));
        assert!(allows(os(""), os("xterm-256color")));
        assert!(!allows(os("1"), None));
        assert!(!allows(os("0"), None), "any non-empty value counts");
        assert!(!allows(None, os("dumb")));
    }
}
