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

fn allows(no_color: Option<&std::ffi::OsStr>, term: Option<&std::ffi::OsStr>) -> bool {
    no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::allows;

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
