//! GNU grep's patterns, for both modes: a list of patterns (one per line of each `-e`, of the
//! first operand, or of each `-f` file) in basic (`-G`, the default), extended (`-E`), fixed
//! (`-F`) or Perl (`-P`) syntax, turned into one matcher.
//!
//! Basic and extended patterns are translated into the `regex` crate's syntax, POSIX's rules
//! kept: in a basic pattern `\(`, `\)`, `\{`, `\}`, `\|`, `\+` and `\?` are the operators and
//! their bare characters are literal; `*` at the start of an expression is literal (basic) or
//! ignored (extended, as GNU does with a warning); `^` and `$` anchor only where POSIX says they
//! do in a basic pattern (`a^b` holds a literal `^`); an extended `{` that does not open an
//! interval is literal, as is an unmatched `)`; a bracket expression's backslash is literal and
//! its `[:class:]`, `[=c=]` and `[.c.]` are POSIX's; `\<`, `\>`, `\b`, `\B`, `\w`, `\W`, `\s`,
//! `\S`, `` \` `` and `\'` are GNU's. A pattern with a back-reference (`\(ab\)\1`), or a Perl
//! pattern the `regex` crate cannot take (look-around, back-references), runs on `fancy-regex`,
//! a backtracking engine that hands what it can to `regex`; everything else on `grep-regex`.
//!
//! One difference from GNU remains: the `regex` crate reports the leftmost-first match where
//! POSIX asks for the leftmost-longest. Which lines are selected is the same; what `-o` prints
//! for an alternation whose earlier branch is a prefix of a later one (`a|ab`) is not.

use grep_matcher::{Match, Matcher, NoCaptures};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};

/// Which syntax the patterns are in (`-G`, `-E`, `-F`, `-P`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// POSIX basic regular expressions with GNU's extensions (`-G`, the default).
    #[default]
    Basic,
    /// POSIX extended regular expressions with GNU's extensions (`-E`).
    Extended,
    /// Fixed strings (`-F`).
    Fixed,
    /// Perl-compatible regular expressions (`-P`).
    Perl,
}

/// How the patterns are matched, besides their syntax.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `-i`.
    pub ignore_case: bool,
    /// `-w`: a match must be a whole word.
    pub word: bool,
    /// `-x`: a match must be the whole line.
    pub line: bool,
    /// The line terminator: `\n`, or NUL with `-z`.
    pub terminator: u8,
    /// Text is UTF-8 (a UTF-8 locale; machine mode always): `.` is a character and the
    /// POSIX classes are Unicode's. Otherwise (the C locale) `.` is any byte, the classes are
    /// ASCII's and a pattern's bytes are matched as bytes, as GNU grep does there.
    pub unicode: bool,
}

/// What a search needs of a matcher: each worker holds a copy.
pub trait Searchable: Matcher + Clone + Send + Sync {}

impl<T: Matcher + Clone + Send + Sync> Searchable for T {}

/// The compiled pattern list.
#[derive(Debug)]
pub enum Compiled {
    /// The usual engine: finite automata, literal prefilters.
    Regex(RegexMatcher),
    /// Back-references and look-around.
    Fancy(FancyMatcher),
    /// An empty pattern list (`-f /dev/null`): no line matches.
    Nothing(NothingMatcher),
}

/// Compiles `patterns` (each one pattern, already split at line breaks) or says why not, in
/// GNU's words where GNU has them (`Unmatched ( or \(`).
pub fn compile(patterns: &[String], syntax: Syntax, options: Options) -> Result<Compiled, String> {
    compile_warning(patterns, syntax, options, &mut Vec::new())
}

/// [`compile`], with GNU's warnings about what it accepts but doubts (`* at start of
/// expression`) added to `warnings`.
pub fn compile_warning(
    patterns: &[String],
    syntax: Syntax,
    options: Options,
    warnings: &mut Vec<String>,
) -> Result<Compiled, String> {
    if patterns.is_empty() {
        return Ok(Compiled::Nothing(NothingMatcher));
    }
    let mut sources = Vec::with_capacity(patterns.len());
    let mut fancy = false;
    let mut groups = 0;
    for pattern in patterns {
        let translated = match syntax {
            Syntax::Fixed => Translated {
                source: {
                    let mut source = String::with_capacity(pattern.len());
                    for c in pattern.chars() {
                        push_literal(&mut source, c, options.unicode);
                    }
                    source
                },
                groups: 0,
                backrefs: false,
            },
            Syntax::Perl => Translated {
                source: pattern.clone(),
                groups: 0,
                backrefs: false,
            },
            Syntax::Basic | Syntax::Extended => {
                let dialect = if syntax == Syntax::Extended {
                    Dialect::Extended
                } else {
                    Dialect::Basic
                };
                translate(pattern, dialect, groups, warnings, options.unicode)?
            }
        };
        groups += translated.groups;
        fancy |= translated.backrefs;
        sources.push(translated.source);
    }
    if !fancy {
        let built = RegexMatcherBuilder::new()
            .unicode(options.unicode)
            // -z: lines end at NUL, and `.` matches a newline inside one (not in a Perl
            // pattern, where `.` is PCRE's, newline excluded).
            .dot_matches_new_line(options.terminator == 0 && syntax != Syntax::Perl)
            .case_insensitive(options.ignore_case)
            .word(options.word)
            .whole_line(options.line)
            .line_terminator(Some(options.terminator))
            .build_many(&sources);
        match built {
            Ok(matcher) => return Ok(Compiled::Regex(matcher)),
            // What `regex` refuses in a Perl pattern may be look-around `fancy-regex` has.
            Err(_) if syntax == Syntax::Perl => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut source = String::new();
    if options.ignore_case {
        source.push_str("(?i)");
    }
    if options.terminator == 0 && syntax != Syntax::Perl {
        source.push_str("(?s)");
    }
    let alternation = sources
        .iter()
        .map(|s| format!("(?:{s})"))
        .collect::<Vec<_>>()
        .join("|");
    match (options.line, options.word) {
        (true, _) => source.push_str(&format!("^(?:{alternation})$")),
        (false, true) => source.push_str(&format!(r"(?<!\w)(?:{alternation})(?!\w)")),
        (false, false) => source.push_str(&alternation),
    }
    fancy_regex::Regex::new(&source)
        .map(|regex| Compiled::Fancy(FancyMatcher { regex }))
        .map_err(|e| e.to_string())
}

/// GNU find's `-regex` pattern (its default `emacs` syntax: a basic pattern whose bare `+`
/// and `?` are operators) in the `regex` crate's syntax.
pub fn emacs_to_regex(pattern: &str, warnings: &mut Vec<String>) -> Result<String, String> {
    let translated = translate(pattern, Dialect::Emacs, 0, warnings, true)?;
    if translated.backrefs {
        return Err("back-references are not supported in -regex".into());
    }
    Ok(translated.source)
}

/// The regular expression syntaxes [`translate`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// POSIX basic, GNU's extensions.
    Basic,
    /// POSIX extended, GNU's extensions.
    Extended,
    /// Emacs (GNU find's `-regex`): basic, with bare `+` and `?` operators.
    Emacs,
}

/// One pattern in the `regex` crate's syntax.
struct Translated {
    source: String,
    /// The groups it opens, so the back-references of the patterns after it are renumbered
    /// when the list becomes one alternation.
    groups: usize,
    backrefs: bool,
}

/// Translates one pattern of `dialect`. `before` is the number of groups the patterns before
/// it opened.
fn translate(
    pattern: &str,
    dialect: Dialect,
    before: usize,
    warnings: &mut Vec<String>,
    unicode: bool,
) -> Result<Translated, String> {
    let extended = dialect == Dialect::Extended;
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    // At the start of an expression: nothing yet that a `*` could repeat.
    let mut start = true;
    // At the start of the pattern or of a group, where GNU warns of a repetition.
    let mut group_start = true;
    let mut open: Vec<usize> = Vec::new();
    let mut closed = 0usize;
    let mut groups = 0usize;
    let mut backrefs = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let warn = extended && group_start;
        group_start = extended && c == '(';
        match c {
            '\\' => {
                let Some(&d) = chars.get(i) else {
                    return Err("Trailing backslash".into());
                };
                i += 1;
                match d {
                    '(' if !extended => {
                        groups += 1;
                        open.push(groups);
                        out.push('(');
                        start = true;
                        continue;
                    }
                    ')' if !extended => {
                        if open.pop().is_none() {
                            return Err(r"Unmatched ) or \)".into());
                        }
                        closed += 1;
                        out.push(')');
                    }
                    '|' if !extended => {
                        out.push('|');
                        start = true;
                        continue;
                    }
                    // `\{` with nothing to repeat is literal, as GNU takes it.
                    '{' if !extended && !start => {
                        let (interval, next) = interval(&chars, i, true)
                            .ok_or_else(|| String::from(r"Unmatched \{"))?;
                        out.push_str(&interval?);
                        i = next;
                    }
                    '+' | '?' if dialect == Dialect::Basic && !start => out.push(d),
                    '1'..='9' => {
                        let n = d as usize - '0' as usize;
                        if n > closed + open.len() {
                            return Err("Invalid back reference".into());
                        }
                        out.push_str(&format!("\\{}", n + before));
                        backrefs = true;
                    }
                    '<' => out.push_str(r"\b{start}"),
                    '>' => out.push_str(r"\b{end}"),
                    'b' | 'B' | 'w' | 'W' | 's' | 'S' => {
                        out.push('\\');
                        out.push(d);
                    }
                    '`' => out.push_str(r"\A"),
                    '\'' => out.push_str(r"\z"),
                    other => push_literal(&mut out, other, unicode),
                }
                start = false;
            }
            '[' => {
                i = bracket(&chars, i, &mut out, unicode)?;
                start = false;
            }
            '*' if start => {
                // Literal in a basic pattern; GNU ignores it in an extended one.
                if !extended {
                    out.push_str(r"\*");
                    start = false;
                } else if warn {
                    warnings.push("* at start of expression".into());
                }
            }
            '*' => {
                // `a**` is `a*` to POSIX and an error to `regex`.
                if !out.ends_with('*') || out.ends_with(r"\*") {
                    out.push('*');
                }
            }
            '^' if extended || start => {
                out.push('^');
                start = true;
            }
            '$' if extended || at_end_of_expression(&chars, i) => {
                out.push('$');
                start = false;
            }
            '(' if extended => {
                groups += 1;
                open.push(groups);
                out.push('(');
                start = true;
            }
            ')' if extended && !open.is_empty() => {
                open.pop();
                closed += 1;
                out.push(')');
                start = false;
            }
            '|' if extended => {
                out.push('|');
                start = true;
            }
            // `a{}`: GNU's "Invalid content of \{\}".
            '{' if extended && chars.get(i) == Some(&'}') => {
                return Err(r"Invalid content of \{\}".into());
            }
            '{' if extended => match interval(&chars, i, false) {
                Some((_, next)) if start => {
                    if warn {
                        warnings.push("{...} at start of expression".into());
                    }
                    i = next;
                }
                Some((interval, next)) => {
                    out.push_str(&interval?);
                    i = next;
                }
                None => {
                    out.push_str(r"\{");
                    start = false;
                }
            },
            // GNU ignores a repetition with nothing before it, with a warning.
            '+' | '?' if extended && start => {
                if warn {
                    warnings.push(format!("{c} at start of expression"));
                }
            }
            '+' | '?' if extended || (dialect == Dialect::Emacs && !start) => {
                out.push(c);
                start = false;
            }
            '.' => {
                out.push('.');
                start = false;
            }
            other => {
                push_literal(&mut out, other, unicode);
                start = false;
            }
        }
    }
    if !open.is_empty() {
        return Err(r"Unmatched ( or \(".into());
    }
    Ok(Translated {
        source: out,
        groups,
        backrefs,
    })
}

/// `c` as a literal; without `unicode`, a character of U+0080 to U+00FF stands for the byte of
/// that value (the pattern was read as Latin-1: its bytes).
fn push_literal(out: &mut String, c: char, unicode: bool) {
    if !unicode && ('\u{80}'..='\u{ff}').contains(&c) {
        out.push_str(&format!("\\x{:02X}", c as u32));
        return;
    }
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}

/// True when a `$` at `next - 1` of a basic pattern ends an expression: the pattern's end, or
/// just before `\)` or `\|`.
fn at_end_of_expression(chars: &[char], next: usize) -> bool {
    next == chars.len()
        || (chars.get(next) == Some(&'\\') && matches!(chars.get(next + 1), Some(')' | '|')))
}

/// The interval whose `{` was just read (`i` is after it): `{n}`, `{n,}`, `{,m}`, `{n,m}`,
/// closed by `\}` in a basic pattern and `}` in an extended one; in `regex` syntax (or GNU's
/// error for a count over 32,767), with the index after it. `None` when it is not one.
fn interval(chars: &[char], mut i: usize, basic: bool) -> Option<(Result<String, String>, usize)> {
    let digits = |i: &mut usize| {
        let from = *i;
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        chars[from..*i].iter().collect::<String>()
    };
    let low = digits(&mut i);
    let comma = chars.get(i) == Some(&',');
    if comma {
        i += 1;
    }
    let high = digits(&mut i);
    if basic {
        if chars.get(i) != Some(&'\\') {
            return None;
        }
        i += 1;
    }
    if chars.get(i) != Some(&'}') || (low.is_empty() && !comma) {
        return None;
    }
    let low = if low.is_empty() { "0".to_owned() } else { low };
    // GNU's RE_DUP_MAX: a larger count is "Regular expression too big" (an error, below).
    let too_big = |n: &str| n.len() > 5 || n.parse::<u32>().is_ok_and(|n| n > 32_767);
    if too_big(&low) || too_big(&high) {
        return Some((Err("Regular expression too big".into()), i + 1));
    }
    let text = match (comma, high.is_empty()) {
        (false, _) => format!("{{{low}}}"),
        (true, true) => format!("{{{low},}}"),
        (true, false) => format!("{{{low},{high}}}"),
    };
    Some((Ok(text), i + 1))
}

/// Translates the bracket expression whose `[` was just read (`i` is after it) into `out`; the
/// index after its `]`.
fn bracket(chars: &[char], mut i: usize, out: &mut String, unicode: bool) -> Result<usize, String> {
    const UNMATCHED: &str = "Unmatched [, [^, [:, [., or [=";
    // `[:space:]` meant `[[:space:]]`: GNU refuses it rather than match `:`, `s`, `p`...
    if chars.get(i) == Some(&':') {
        let close = (i + 1..chars.len()).find(|&j| chars[j] == ']');
        if let Some(end) = close {
            let inner: String = chars[i..end].iter().collect();
            if end > i + 2
                && inner.ends_with(':')
                && inner[1..inner.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_alphabetic())
            {
                let name = &inner[1..inner.len() - 1];
                return Err(format!(
                    "character class syntax is [[:{name}:]], not [:{name}:]"
                ));
            }
        }
    }
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    let first = i;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(UNMATCHED.into());
        };
        if c == ']' && i > first {
            out.push(']');
            return Ok(i + 1);
        }
        if c == '[' && matches!(chars.get(i + 1), Some(':' | '=' | '.')) {
            let kind = chars[i + 1];
            let body = i + 2;
            let end = (body..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == kind && chars[j + 1] == ']')
                .ok_or_else(|| String::from(UNMATCHED))?;
            let name: String = chars[body..end].iter().collect();
            if kind == ':' {
                const CLASSES: [&str; 12] = [
                    "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print",
                    "punct", "space", "upper", "xdigit",
                ];
                if !CLASSES.contains(&name.as_str()) {
                    return Err("Invalid character class name".into());
                }
                out.push_str(&class(&name, unicode));
            } else {
                for n in name.chars() {
                    push_class_char(out, n, unicode);
                }
            }
            i = end + 2;
            continue;
        }
        let range = c == '-' && i > first && chars.get(i + 1).is_some_and(|&n| n != ']');
        if range {
            out.push('-');
        } else {
            push_class_char(out, c, unicode);
        }
        i += 1;
    }
}

/// A POSIX class inside a bracket: ASCII's in the C locale, and in a UTF-8 one what glibc's
/// UTF-8 locales put in it (`[[:lower:]]` matches `é`).
fn class(name: &str, unicode: bool) -> String {
    if !unicode {
        return format!("[:{name}:]");
    }
    match name {
        "alpha" => r"\p{Alphabetic}",
        "lower" => r"\p{Lowercase}",
        "upper" => r"\p{Uppercase}",
        "digit" => "0-9",
        "alnum" => r"\p{Alphabetic}\p{Nd}",
        "space" => r"\s",
        "blank" => r"\t\p{Zs}",
        "punct" => r"\p{P}\p{S}",
        "cntrl" => r"\p{Cc}",
        "xdigit" => "0-9A-Fa-f",
        "graph" => r"[^\p{C}\p{Z}]",
        "print" => r"[^\p{C}\p{Zl}\p{Zp}]",
        _ => return format!("[:{name}:]"),
    }
    .to_owned()
}

/// `c` as a literal inside a `regex` class, where `\`, `[`, `]`, `&`, `~`, `-` and `^` may
/// mean something; without `unicode`, U+0080 to U+00FF is the byte of that value.
fn push_class_char(out: &mut String, c: char, unicode: bool) {
    if !unicode && ('\u{80}'..='\u{ff}').contains(&c) {
        out.push_str(&format!("\\x{:02X}", c as u32));
        return;
    }
    if matches!(c, '\\' | '[' | ']' | '&' | '~' | '-' | '^') {
        out.push('\\');
    }
    out.push(c);
}

// ---------------------------------------------------------------------------------------
// The other matchers

/// A pattern on `fancy-regex`. It sees one line at a time (it names no line terminator, so
/// the searcher hands it lines); a line that is not UTF-8 is matched with each invalid byte
/// read as U+FFFD, its offsets mapped back to the bytes.
#[derive(Debug, Clone)]
pub struct FancyMatcher {
    regex: fancy_regex::Regex,
}

/// A match the backtracking engine gave up on (its backtrack limit), as GNU's `-P` does:
/// an error, never a silent non-match.
#[derive(Debug)]
pub struct FancyError(String);

impl std::fmt::Display for FancyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Matcher for FancyMatcher {
    type Captures = NoCaptures;
    type Error = FancyError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, FancyError> {
        let found = |text: &str, at: usize| {
            self.regex
                .find_from_pos(text, at)
                .map(|m| m.map(|m| (m.start(), m.end())))
                .map_err(|e| FancyError(e.to_string()))
        };
        if let Ok(text) = std::str::from_utf8(haystack) {
            // `at` is where a search resumes after a match, on a character boundary.
            return Ok(found(text, at)?.map(|(s, e)| Match::new(s, e)));
        }
        // Each byte of an invalid sequence becomes U+FFFD (three bytes): map offsets both ways.
        let mut text = String::with_capacity(haystack.len() + 16);
        let mut origin = Vec::with_capacity(haystack.len() + 16);
        for chunk in haystack.utf8_chunks() {
            let base = chunk.valid().as_ptr() as usize - haystack.as_ptr() as usize;
            text.push_str(chunk.valid());
            origin.extend(base..base + chunk.valid().len());
            let invalid_at = base + chunk.valid().len();
            for k in 0..chunk.invalid().len() {
                text.push('\u{FFFD}');
                origin.extend([invalid_at + k; 3]);
            }
        }
        origin.push(haystack.len());
        let from = origin.iter().position(|&o| o >= at).unwrap_or(text.len());
        Ok(found(&text, from)?.map(|(s, e)| Match::new(origin[s], origin[e])))
    }

    fn new_captures(&self) -> Result<NoCaptures, FancyError> {
        Ok(NoCaptures::new())
    }
}

/// The matcher of an empty pattern list: never a match.
#[derive(Debug, Clone)]
pub struct NothingMatcher;

impl Matcher for NothingMatcher {
    type Captures = NoCaptures;
    type Error = grep_matcher::NoError;

    fn find_at(&self, _: &[u8], _: usize) -> Result<Option<Match>, Self::Error> {
        Ok(None)
    }

    fn new_captures(&self) -> Result<NoCaptures, Self::Error> {
        Ok(NoCaptures::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(p: &str) -> String {
        translate(p, Dialect::Basic, 0, &mut Vec::new(), false)
            .map(|t| t.source)
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    fn extended(p: &str) -> String {
        translate(p, Dialect::Extended, 0, &mut Vec::new(), false)
            .map(|t| t.source)
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    fn selects(patterns: &[&str], syntax: Syntax, line: &str) -> bool {
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        let options = Options {
            terminator: b'\n',
            ..Options::default()
        };
        let line = line.as_bytes();
        match compile(&patterns, syntax, options).unwrap() {
            Compiled::Regex(m) => m.is_match(line).unwrap(),
            Compiled::Fancy(m) => m.is_match(line).unwrap(),
            Compiled::Nothing(m) => m.is_match(line).unwrap(),
        }
    }

    #[test]
    fn basic_operators_are_escaped_and_bare_ones_literal() {
        // POSIX basic: \( \) \{ \} grouping and intervals; GNU: \| \+ \?.
        assert_eq!(basic(r"\(ab\)\{2\}"), "(ab){2}");
        assert_eq!(basic(r"a\|b"), "a|b");
        assert_eq!(basic(r"a\+b\?"), "a+b?");
        assert_eq!(basic("a|b+(c)?{1}"), r"a\|b\+\(c\)\?\{1\}");
        assert_eq!(basic(r"a\{,3\}"), "a{0,3}");
    }

    #[test]
    fn star_caret_and_dollar_are_literal_where_posix_says() {
        assert_eq!(basic("*a"), r"\*a");
        assert_eq!(basic(r"\(*a\)"), r"(\*a)");
        assert_eq!(basic("^*"), r"^\*");
        assert_eq!(basic("a^b$c$"), r"a\^b\$c$");
        assert_eq!(basic(r"\(a$\)"), "(a$)");
        assert_eq!(extended("*a"), "a");
        assert_eq!(extended("+a"), "a");
        assert_eq!(extended("a**"), "a*");
        assert_eq!(extended("{1}a"), "a");
        assert_eq!(basic(r"\{a"), r"\{a");
        let mut warnings = Vec::new();
        translate("*a|*b", Dialect::Extended, 0, &mut warnings, true).unwrap();
        translate("(+a)", Dialect::Extended, 0, &mut warnings, true).unwrap();
        translate(r"\(*a\)", Dialect::Basic, 0, &mut warnings, true).unwrap();
        assert_eq!(
            warnings,
            ["* at start of expression", "+ at start of expression"]
        );
    }

    #[test]
    fn extended_braces_and_parens_are_literal_when_not_operators() {
        assert_eq!(extended("a{1"), r"a\{1");
        assert_eq!(extended("a{x}"), r"a\{x\}");
        assert_eq!(extended("a{1,}"), "a{1,}");
        assert_eq!(extended("a)"), r"a\)");
        assert_eq!(extended(r"\(a\)"), r"\(a\)");
        assert_eq!(extended("(a"), r"error: Unmatched ( or \(");
        assert_eq!(basic(r"\(a"), r"error: Unmatched ( or \(");
        assert_eq!(basic(r"a\{1"), r"error: Unmatched \{");
        assert_eq!(basic(r"a\"), "error: Trailing backslash");
    }

    #[test]
    fn brackets_are_posix() {
        assert_eq!(basic(r"[\]"), r"[\\]");
        assert_eq!(basic("[]a]"), r"[\]a]");
        assert_eq!(basic("[^]a]"), r"[^\]a]");
        assert_eq!(basic("[[:digit:]x-z-]"), r"[[:digit:]x-z\-]");
        assert_eq!(basic("[[=a=][.b.]&&~]"), r"[ab\&\&\~]");
        assert_eq!(basic("[[:nope:]]"), "error: Invalid character class name");
        assert_eq!(basic("[a"), "error: Unmatched [, [^, [:, [., or [=");
    }

    #[test]
    fn lines_are_selected_as_gnu_selects_them() {
        let b = Syntax::Basic;
        assert!(selects(&[r"foo\|bar"], b, "a bar"));
        assert!(!selects(&["foo|bar"], b, "bar"));
        assert!(selects(&["a+b"], b, "a+b"));
        assert!(selects(&[r"\<wor"], b, "a word"));
        assert!(!selects(&[r"\<ord"], b, "a word"));
        assert!(selects(&[r"ord\>"], b, "a word!"));
        assert!(selects(&[r"\(a\)\1"], b, "xaax"));
        assert!(!selects(&[r"\(a\)\1"], b, "xabx"));
        // Back-references are renumbered when patterns are joined.
        assert!(selects(&["zzz", r"\(b\)\1"], b, "abba"));
        assert!(selects(&["(z)", r"(b)\1"], Syntax::Extended, "abba"));
        assert!(selects(&["(x|y)+z"], Syntax::Extended, "xyz"));
        assert!(selects(&["a.b"], Syntax::Fixed, "xa.b"));
        assert!(!selects(&["a.b"], Syntax::Fixed, "axb"));
        assert!(selects(&[r"foo(?=bar)"], Syntax::Perl, "foobar"));
        assert!(!selects(&[r"foo(?=bar)"], Syntax::Perl, "foobaz"));
        assert!(selects(&[r"\d+"], Syntax::Perl, "a1"));
        assert!(!selects(&[], b, "anything"));
        assert!(selects(&[""], b, "anything"));
    }

    #[test]
    fn classes_and_bytes_follow_the_locale() {
        let matches = |pattern: &str, unicode: bool, line: &[u8]| {
            let options = Options {
                terminator: b'\n',
                unicode,
                ..Options::default()
            };
            match compile(&[pattern.to_owned()], Syntax::Basic, options).unwrap() {
                Compiled::Regex(m) => m.is_match(line).unwrap(),
                other => panic!("{other:?}"),
            }
        };
        // A UTF-8 locale: `é` is a lowercase letter, one character.
        assert!(matches("[[:lower:]]", true, "é".as_bytes()));
        assert!(matches("^.$", true, "é".as_bytes()));
        assert!(matches("[[:alpha:]]", true, "ж".as_bytes()));
        assert!(!matches("[[:digit:]]", true, "٣".as_bytes()));
        // The C locale: bytes; `é` is two of them, neither a letter; `.` is any byte.
        assert!(!matches("[[:lower:]]", false, "é".as_bytes()));
        assert!(matches("^..$", false, "é".as_bytes()));
        assert!(matches("^.$", false, b"\xff"));
        // A pattern's bytes (read as Latin-1) match those bytes.
        assert!(matches("caf\u{e9}", false, b"caf\xe9"));
        assert!(matches("[\u{e0}-\u{ff}]", false, b"\xe9"));
    }

    #[test]
    fn a_backreference_to_a_group_not_yet_opened_is_refused() {
        assert_eq!(basic(r"\1\(a\)"), "error: Invalid back reference");
        assert_eq!(basic(r"\(a\)\2"), "error: Invalid back reference");
    }

    #[test]
    fn the_backtracking_engine_maps_offsets_of_bytes_that_are_not_utf8() {
        let Compiled::Fancy(m) = compile(
            &[r"\(b\)\1".to_owned()],
            Syntax::Basic,
            Options {
                terminator: b'\n',
                ..Options::default()
            },
        )
        .unwrap() else {
            panic!("a back-reference needs the backtracking engine");
        };
        let line = b"a\xffbb\xfe";
        let found = m.find(line).unwrap().unwrap();
        assert_eq!((found.start(), found.end()), (2, 4));
    }
}
