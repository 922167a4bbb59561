//! Text for a terminal. What a tool prints for a person often comes from data (a title, a body,
//! a file name, another program's message), and data is never an instruction to the terminal:
//! every control character is shown escaped, never interpreted. Widths are display columns
//! (UAX #11: a CJK character takes two), and a cell too wide for the terminal is cut with `…`.
//! Machine mode never comes here: JSON escapes control characters itself.

use std::borrow::Cow;

use unicode_width::UnicodeWidthChar;

/// True for a character a terminal would act on or that reorders text: C0 controls, DEL, C1
/// controls, and every bidirectional control of Unicode (`Bidi_Control`: the Arabic letter
/// mark, the left-to-right and right-to-left marks, the embeddings and overrides, the
/// isolates), which can show text in another order than it is read.
fn is_hostile(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` on one line with every control character escaped as `\u{1b}`, `\n`, `\t`…
/// (ESC sequences, bells, carriage returns and bidi overrides lose their effect).
pub fn printable_line(text: &str) -> Cow<'_, str> {
    escaped(text, |_| false)
}

/// Like [`printable_line`], keeping line breaks and tabs: for a body shown as it is written.
pub fn printable_text(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_hostile(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_hostile(c) && !keep(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` as one POSIX shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written `'\''`). For the command lines a
/// tool prints for a person to paste: examples, `more:` hints.
pub fn shell_word(text: &str) -> Cow<'_, str> {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
    }
}

/// The columns `text` takes on a terminal (text already made printable).
pub fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to at most `columns` columns, ending in `…` when it was cut.
pub fn truncate(text: &str, columns: usize) -> Cow<'_, str> {
    if width(text) <= columns {
        return Cow::Borrowed(text);
    }
    if columns == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > columns {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    Cow::Owned(out)
}

/// `text` followed by spaces up to `columns` columns.
pub fn pad(text: &str, columns: usize) -> String {
    let fill = columns.saturating_sub(width(text));
    format!("{text}{}", " ".repeat(fill))
}

/// The width of the terminal stdout is, or `None` when stdout is not a terminal (a pipe or a
/// file gets whole lines). `COLUMNS` overrides it, as shells set it.
pub fn stdout_columns() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(n);
    }
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_bells_and_bidi_overrides_are_shown_not_obeyed() {
        assert_eq!(
            printable_line("a\u{1b}]0;pwned\u{7}b\u{1b}[31mred"),
            "a\\u{1b}]0;pwned\\u{7}b\\u{1b}[31mred"
        );
        assert_eq!(
            printable_line("x\r\ny\u{9b}z\u{202e}"),
            "x\\r\\ny\\u{9b}z\\u{202e}"
        );
        assert_eq!(printable_text("one\n\ttwo\u{1b}"), "one\n\ttwo\\u{1b}");
        assert!(matches!(printable_line("plain é 漢字"), Cow::Borrowed(_)));
    }

    /// Every character of Unicode's `Bidi_Control` property (Trojan Source, CVE-2021-42574)
    /// and every C1 control is shown escaped; the bidi-neutral format characters beside them
    /// (ZWJ, ZWNJ, which shape emoji and scripts) are left alone.
    #[test]
    fn every_bidi_control_and_every_c1_control_is_escaped() {
        let bidi = [
            '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
            '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ];
        for c in bidi.into_iter().chain('\u{80}'..='\u{9f}') {
            let text = format!("a{c}b");
            let shown = printable_text(&text);
            assert!(!shown.contains(c), "{c:?} reached the terminal: {shown:?}");
            assert_eq!(shown, format!("a{}b", c.escape_default()));
        }
        assert!(matches!(
            printable_line("👩\u{200d}💻 a\u{200c}b"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn shell_words_quote_only_what_a_shell_would_read() {
        assert_eq!(shell_word("--limit"), "--limit");
        assert_eq!(shell_word("my db.db"), "'my db.db'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn widths_are_display_columns_and_cuts_end_in_an_ellipsis() {
        assert_eq!(width("abc"), 3);
        assert_eq!(width("漢字"), 4);
        assert_eq!(width("e\u{301}"), 1, "a combining mark takes no column");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("漢字漢字", 5), "漢字…");
        assert_eq!(width(&truncate("漢字漢字", 5)), 5);
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(pad("漢", 4), "漢  ");
    }
}
