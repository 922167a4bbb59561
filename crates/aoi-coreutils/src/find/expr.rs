//! GNU find's expression in machine mode: `find . -name '*.rs' -type f --output jsonl` selects
//! the entries GNU find prints, as typed events, bounded, with cursors.
//!
//! The words of the expression reach here as they were typed (`app::gnu_find_words` sets them
//! apart from the crate's own flags before clap sees them). What GNU find 4.9 documents is
//! taken: the operators `!`/`-not`, `-a`/`-and` (or nothing), `-o`/`-or`, `,` and parentheses,
//! with GNU's precedence and short-circuit; the tests `-name`, `-iname`, `-path`/`-wholename`,
//! `-ipath`/`-iwholename`, `-regex`, `-iregex` (the whole path, GNU's default `emacs` syntax
//! read as a basic pattern with `+` and `?` as operators), `-type` (a comma list of
//! `f d l b c p s`), `-size` (`[+-]N[cwbkMG]`, GNU's rounding up to the unit), `-mtime`,
//! `-mmin`, `-newer`, `-empty`, `-true`, `-false`; the actions `-print`, `-print0` (the event
//! is the same) and `-prune` (the directory's entries are not walked); and the options
//! `-maxdepth`, `-mindepth`, `-xdev`/`-mount`, `-follow`, `-depth` (accepted: the order of
//! machine mode is always by path), `-H`, `-L`, `-P`. With an expression, the walk is GNU's
//! too: hidden entries and ignored files are found, the start path is an entry, paths are
//! shown as GNU shows them (`./a`).
//!
//! `-delete`, `-exec`, `-execdir`, `-ok`, `-okdir`, `-printf`, `-fprint`, `-ls` and the rest are
//! refused in machine mode with a usage error that says what to do instead: a run that deletes
//! or runs commands must not be reachable without the confirmation machine mode's writes ask
//! for, and what `-ls` or `-printf` would print is in each `entry` event.

use std::ffi::OsStr;
use std::fs::{FileType, Metadata};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use aoi::{Category, Code, ErrorEvent};
use globset::{GlobBuilder, GlobMatcher};

/// A parsed expression, and the options found among its words.
#[derive(Debug)]
pub struct Gnu {
    /// The expression (`-true` when none was given).
    pub expr: Expr,
    /// `-maxdepth`.
    pub max_depth: Option<usize>,
    /// `-mindepth`.
    pub min_depth: Option<usize>,
    /// `-L` or `-follow`.
    pub follow: bool,
    /// `-xdev` or `-mount`.
    pub same_file_system: bool,
    /// The expression holds `-prune`.
    pub prunes: bool,
    /// The expression holds `-print` or `-print0`: an entry is listed when one is reached,
    /// not when the whole holds (GNU's implicit `-print`).
    pub prints: bool,
    /// The expression needs an entry's metadata (size, times, emptiness).
    pub needs_metadata: bool,
}

/// One node of the expression.
#[derive(Debug)]
pub enum Expr {
    /// Both, the right one only when the left holds.
    And(Box<Expr>, Box<Expr>),
    /// Either, the right one only when the left does not hold.
    Or(Box<Expr>, Box<Expr>),
    /// `,`: both evaluated, the right one's value.
    Comma(Box<Expr>, Box<Expr>),
    /// `!`.
    Not(Box<Expr>),
    /// A constant (`-true`, `-false`).
    Const(bool),
    /// `-print`, `-print0`: true; the entry is listed.
    Print,
    /// `-name`/`-iname` (the name), `-path`/`-ipath` (the path as shown).
    Glob { on_path: bool, glob: GlobMatcher },
    /// `-regex`/`-iregex`: the whole path as shown.
    Regex(regex::bytes::Regex),
    /// `-type`: any of these kinds.
    Type(Vec<char>),
    /// `-size`.
    Size { op: Cmp, units: u64, unit: u64 },
    /// `-mtime` (unit 86,400 s) and `-mmin` (60 s): whole units since the modification.
    Age {
        op: Cmp,
        units: i64,
        unit_s: i64,
        now_s: i64,
    },
    /// `-newer FILE`: modified after FILE was (nanoseconds since the epoch).
    Newer(i128),
    /// `-empty`.
    Empty,
    /// `-prune`: true; a directory's entries are not walked.
    Prune,
}

/// `+N` (more than), `-N` (less than), `N` (exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `+N`.
    More,
    /// `-N`.
    Less,
    /// `N`.
    Exactly,
}

impl Cmp {
    fn holds(self, value: i128, n: i128) -> bool {
        match self {
            Cmp::More => value > n,
            Cmp::Less => value < n,
            Cmp::Exactly => value == n,
        }
    }
}

/// What evaluating an expression on an entry did besides its value.
#[derive(Debug, Default)]
pub struct Effects {
    /// `-prune` was reached.
    pub pruned: bool,
    /// `-print` or `-print0` was reached.
    pub printed: bool,
}

impl Gnu {
    /// Whether `s` is listed: where `-print` is reached, or, with no `-print` in the
    /// expression, where the expression holds.
    pub fn lists(&self, s: &Subject<'_>) -> bool {
        let mut effects = Effects::default();
        let held = self.expr.eval(s, &mut effects);
        if self.prints {
            effects.printed
        } else {
            held
        }
    }
}

/// What an expression is evaluated on.
#[derive(Debug)]
pub struct Subject<'a> {
    /// The name (the last component; the operand as given at depth 0).
    pub name: &'a OsStr,
    /// The path as shown.
    pub shown: &'a Path,
    /// The path as walked (for `-empty` of a directory).
    pub path: &'a Path,
    /// Its kind, when known.
    pub file_type: Option<FileType>,
    /// Its metadata, when read.
    pub metadata: Option<&'a Metadata>,
}

impl Expr {
    /// Evaluates the expression on `s`, as GNU does (left to right, short-circuit): whether it
    /// holds; what it reached goes in `effects`.
    pub fn eval(&self, s: &Subject<'_>, effects: &mut Effects) -> bool {
        match self {
            Expr::And(a, b) => a.eval(s, effects) && b.eval(s, effects),
            Expr::Or(a, b) => a.eval(s, effects) || b.eval(s, effects),
            Expr::Comma(a, b) => {
                a.eval(s, effects);
                b.eval(s, effects)
            }
            Expr::Not(a) => !a.eval(s, effects),
            Expr::Const(v) => *v,
            Expr::Print => {
                effects.printed = true;
                true
            }
            Expr::Glob { on_path, glob } => {
                if *on_path {
                    glob.is_match(s.shown)
                } else {
                    glob.is_match(s.name)
                }
            }
            Expr::Regex(re) => re.is_match(s.shown.as_os_str().as_bytes()),
            Expr::Type(kinds) => s.file_type.is_some_and(|t| kinds.contains(&kind(t))),
            Expr::Size { op, units, unit } => s.metadata.is_some_and(|m| {
                let size = m.len();
                let rounded = size.div_ceil(*unit);
                op.holds(i128::from(rounded), i128::from(*units))
            }),
            Expr::Age {
                op,
                units,
                unit_s,
                now_s,
            } => s.metadata.is_some_and(|m| {
                let age = (now_s - m.mtime()).div_euclid(*unit_s);
                op.holds(i128::from(age), i128::from(*units))
            }),
            Expr::Newer(than) => s.metadata.is_some_and(|m| nanos(m) > *than),
            Expr::Empty => s.metadata.is_some_and(|m| {
                if m.is_dir() {
                    std::fs::read_dir(s.path).is_ok_and(|mut d| d.next().is_none())
                } else {
                    m.is_file() && m.len() == 0
                }
            }),
            Expr::Prune => {
                effects.pruned = true;
                true
            }
        }
    }
}

fn nanos(m: &Metadata) -> i128 {
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

/// GNU find's letter for a kind.
fn kind(t: FileType) -> char {
    if t.is_file() {
        'f'
    } else if t.is_dir() {
        'd'
    } else if t.is_symlink() {
        'l'
    } else if t.is_block_device() {
        'b'
    } else if t.is_char_device() {
        'c'
    } else if t.is_fifo() {
        'p'
    } else if t.is_socket() {
        's'
    } else {
        '?'
    }
}

fn usage(message: String) -> ErrorEvent {
    ErrorEvent::new(
        Category::Usage,
        Code::from_static("EXPRESSION_INVALID"),
        message,
    )
    .field("expression")
}

/// Parses the expression `words` (as typed, after the paths) at `now_s` (seconds since the
/// epoch, for `-mtime` and `-mmin`).
pub fn parse(words: &[String], now_s: i64) -> Result<Gnu, ErrorEvent> {
    let mut parser = Parser {
        words,
        at: 0,
        now_s,
        gnu: Gnu {
            expr: Expr::Const(true),
            max_depth: None,
            min_depth: None,
            follow: false,
            same_file_system: false,
            prunes: false,
            prints: false,
            needs_metadata: false,
        },
    };
    // -H, -L, -P come first in GNU's syntax; they may come anywhere here.
    let expr = if parser.peek().is_none() {
        Expr::Const(true)
    } else {
        parser.comma()?
    };
    if let Some(word) = parser.peek() {
        return Err(usage(format!("unexpected {word:?} in the expression")));
    }
    parser.gnu.expr = expr;
    Ok(parser.gnu)
}

struct Parser<'w> {
    words: &'w [String],
    at: usize,
    now_s: i64,
    gnu: Gnu,
}

impl Parser<'_> {
    fn peek(&mut self) -> Option<&str> {
        // Options that change the walk, not the expression, are taken wherever they are.
        while let Some(word) = self.words.get(self.at) {
            match word.as_str() {
                "-H"
                | "-P"
                | "-depth"
                | "-d"
                | "-noleaf"
                | "-ignore_readdir_race"
                | "-noignore_readdir_race"
                | "-nowarn"
                | "-warn" => {}
                "-L" | "-follow" => self.gnu.follow = true,
                "-xdev" | "-mount" => self.gnu.same_file_system = true,
                "-maxdepth" | "-mindepth" => {
                    let flag = word.clone();
                    let value = self.words.get(self.at + 1).ok_or(()).ok();
                    let Some(n) = value.and_then(|v| v.parse::<usize>().ok()) else {
                        // Left for `primary`, which says what is wrong.
                        return Some(&self.words[self.at]);
                    };
                    if flag == "-maxdepth" {
                        self.gnu.max_depth = Some(n);
                    } else {
                        self.gnu.min_depth = Some(n);
                    }
                    self.at += 1;
                }
                _ => return Some(&self.words[self.at]),
            }
            self.at += 1;
        }
        None
    }

    fn next_word(&mut self) -> Option<String> {
        let word = self.peek()?.to_owned();
        self.at += 1;
        Some(word)
    }

    fn comma(&mut self) -> Result<Expr, ErrorEvent> {
        let mut left = self.or()?;
        while self.peek() == Some(",") {
            self.at += 1;
            let right = self.or()?;
            left = Expr::Comma(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn or(&mut self) -> Result<Expr, ErrorEvent> {
        let mut left = self.and()?;
        while matches!(self.peek(), Some("-o" | "-or")) {
            self.at += 1;
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ErrorEvent> {
        let mut left = self.unary()?;
        loop {
            match self.peek() {
                Some("-a" | "-and") => {
                    self.at += 1;
                }
                Some("-o" | "-or" | "," | ")") | None => return Ok(left),
                Some(_) => {}
            }
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Expr, ErrorEvent> {
        match self.peek() {
            Some("!" | "-not") => {
                self.at += 1;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Some("(") => {
                self.at += 1;
                if self.peek() == Some(")") {
                    return Err(usage(
                        "invalid expression; empty parentheses are not allowed".into(),
                    ));
                }
                let inner = self.comma()?;
                if self.next_word().as_deref() != Some(")") {
                    return Err(usage("invalid expression; I was expecting to find a ')' somewhere but did not see one".into()));
                }
                Ok(inner)
            }
            Some(")") => Err(usage("invalid expression; you have too many ')'".into())),
            Some(_) => self.primary(),
            None => Err(usage(
                "invalid expression: an operator has nothing after it".into(),
            )),
        }
    }

    fn value(&mut self, flag: &str) -> Result<String, ErrorEvent> {
        let value = self.words.get(self.at).cloned();
        self.at += 1;
        value.ok_or_else(|| usage(format!("missing argument to `{flag}'")))
    }

    fn primary(&mut self) -> Result<Expr, ErrorEvent> {
        let Some(flag) = self.next_word() else {
            return Err(usage("invalid expression".into()));
        };
        let expr = match flag.as_str() {
            "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename" => {
                let pattern = self.value(&flag)?;
                let glob = GlobBuilder::new(&pattern)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .case_insensitive(flag.starts_with("-i"))
                    .build()
                    .map_err(|e| usage(format!("{flag} {pattern:?}: {e}")))?
                    .compile_matcher();
                Expr::Glob {
                    on_path: !flag.ends_with("name") || flag.ends_with("wholename"),
                    glob,
                }
            }
            "-regex" | "-iregex" => {
                let pattern = self.value(&flag)?;
                let mut warnings = Vec::new();
                let translated = crate::grep::pattern::emacs_to_regex(&pattern, &mut warnings)
                    .map_err(|e| usage(format!("{flag} {pattern:?}: {e}")))?;
                let re = regex::bytes::RegexBuilder::new(&format!("^(?:{translated})$"))
                    .case_insensitive(flag == "-iregex")
                    .build()
                    .map_err(|e| usage(format!("{flag} {pattern:?}: {e}")))?;
                Expr::Regex(re)
            }
            "-type" | "-xtype" => {
                let value = self.value(&flag)?;
                let kinds: Vec<char> = value.split(',').filter_map(|k| k.chars().next()).collect();
                let valid = value
                    .split(',')
                    .all(|k| k.len() == 1 && "fdlbcps".contains(k));
                if !valid || kinds.is_empty() {
                    return Err(usage(format!("Unknown argument to {flag}: {value}")));
                }
                Expr::Type(kinds)
            }
            "-size" => {
                let value = self.value(&flag)?;
                let (op, rest) = cmp(&value);
                let (digits, unit) = match rest.char_indices().last() {
                    Some((i, c)) if c.is_ascii_alphabetic() => {
                        let unit = match c {
                            'c' => 1,
                            'w' => 2,
                            'b' => 512,
                            'k' => 1024,
                            'M' => 1 << 20,
                            'G' => 1 << 30,
                            _ => return Err(usage(format!("invalid -size type `{c}'"))),
                        };
                        (&rest[..i], unit)
                    }
                    _ => (rest, 512),
                };
                let units = digits
                    .parse()
                    .map_err(|_| usage(format!("invalid argument `{value}' to `-size'")))?;
                self.gnu.needs_metadata = true;
                Expr::Size { op, units, unit }
            }
            "-mtime" | "-mmin" => {
                let value = self.value(&flag)?;
                let (op, rest) = cmp(&value);
                let units = rest
                    .parse()
                    .map_err(|_| usage(format!("invalid argument `{value}' to `{flag}'")))?;
                self.gnu.needs_metadata = true;
                Expr::Age {
                    op,
                    units,
                    unit_s: if flag == "-mtime" { 86_400 } else { 60 },
                    now_s: self.now_s,
                }
            }
            "-newer" => {
                let file = self.value(&flag)?;
                let m = std::fs::metadata(&file)
                    .map_err(|e| usage(format!("{file}: {}", crate::paths::plain_io(&e))))?;
                self.gnu.needs_metadata = true;
                Expr::Newer(nanos(&m))
            }
            "-empty" => {
                self.gnu.needs_metadata = true;
                Expr::Empty
            }
            "-print" | "-print0" => {
                self.gnu.prints = true;
                Expr::Print
            }
            "-true" => Expr::Const(true),
            "-false" => Expr::Const(false),
            "-prune" => {
                self.gnu.prunes = true;
                Expr::Prune
            }
            "-maxdepth" | "-mindepth" => {
                return Err(usage(format!(
                    "{flag} takes a number of levels, a non-negative integer"
                )));
            }
            "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir" => {
                return Err(usage(format!(
                    "{flag} is not run in machine mode: list the entries with --output jsonl, then remove them with `aoi-coreutils rm --confirm` (or run find without --output jsonl, as GNU find)"
                )));
            }
            "-printf" | "-fprintf" | "-fprint" | "-fprint0" | "-ls" | "-fls" => {
                return Err(usage(format!(
                    "{flag} is for human mode: in machine mode each `entry` event carries the path, kind, size, mode, owner and times"
                )));
            }
            other if arity(other).is_some() => {
                return Err(usage(format!(
                    "{other} is not taken in machine mode yet: run find without --output jsonl for GNU find"
                )));
            }
            other if other.starts_with('-') => {
                return Err(usage(format!("unknown predicate `{other}'")));
            }
            other => {
                return Err(usage(format!("paths must precede expression: `{other}'")));
            }
        };
        Ok(expr)
    }
}

/// A number's comparison: `+N`, `-N` or `N`.
fn cmp(value: &str) -> (Cmp, &str) {
    if let Some(rest) = value.strip_prefix('+') {
        (Cmp::More, rest)
    } else if let Some(rest) = value.strip_prefix('-') {
        (Cmp::Less, rest)
    } else {
        (Cmp::Exactly, value)
    }
}

/// The words of GNU find's expression every primary takes after it, and whether it is one.
/// `None` for a word that is not GNU find's; `Some(n)`: the word and `n` more are the
/// expression's (`-exec` runs to its `;` or `+`, which the caller looks for).
pub fn arity(word: &str) -> Option<usize> {
    Some(match word {
        "!"
        | "("
        | ")"
        | ","
        | "-not"
        | "-a"
        | "-and"
        | "-o"
        | "-or"
        | "-true"
        | "-false"
        | "-print"
        | "-print0"
        | "-prune"
        | "-empty"
        | "-delete"
        | "-ls"
        | "-depth"
        | "-xdev"
        | "-mount"
        | "-follow"
        | "-noleaf"
        | "-ignore_readdir_race"
        | "-noignore_readdir_race"
        | "-nowarn"
        | "-warn"
        | "-readable"
        | "-writable"
        | "-executable"
        | "-quit"
        | "-nouser"
        | "-nogroup" => 0,
        "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename" | "-regex"
        | "-iregex" | "-type" | "-xtype" | "-size" | "-mtime" | "-mmin" | "-atime" | "-amin"
        | "-ctime" | "-cmin" | "-newer" | "-maxdepth" | "-mindepth" | "-user" | "-group"
        | "-perm" | "-links" | "-inum" | "-samefile" | "-lname" | "-ilname" | "-uid" | "-gid"
        | "-printf" | "-fprint" | "-fprint0" | "-fls" | "-regextype" | "-used" | "-anewer"
        | "-cnewer" | "-context" | "-fstype" => 1,
        "-fprintf" => 2,
        "-exec" | "-execdir" | "-ok" | "-okdir" => usize::MAX,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    fn holds(expr: &str, name: &str, kind: &str) -> bool {
        let gnu = parse(&words(expr), 0).unwrap();
        let dir = std::env::temp_dir();
        let file_type = std::fs::symlink_metadata(match kind {
            "d" => dir.clone(),
            _ => std::env::current_exe().unwrap(),
        })
        .unwrap()
        .file_type();
        let shown = Path::new(name);
        let subject = Subject {
            name: shown.file_name().unwrap(),
            shown,
            path: shown,
            file_type: Some(file_type),
            metadata: None,
        };
        gnu.lists(&subject)
    }

    #[test]
    fn operators_have_gnus_precedence() {
        assert!(holds("-name *.rs -type f", "./a.rs", "f"));
        assert!(!holds("-name *.rs -type d", "./a.rs", "f"));
        assert!(holds("-name *.rs -o -type d", "./a.txt", "d"));
        assert!(holds("! -name *.rs", "./a.txt", "f"));
        assert!(holds("-type f -a ( -name *.c -o -name *.h )", "./x.h", "f"));
        assert!(!holds(
            "-type f -a ( -name *.c -o -name *.h )",
            "./x.rs",
            "f"
        ));
        // `-a` binds tighter than `-o`.
        assert!(holds("-name x -a -type d -o -name y", "./y", "f"));
        assert!(holds("-path ./src/* -type f", "./src/a.rs", "f"));
        assert!(holds("-iname README*", "./readme.md", "f"));
        assert!(holds("-regex .*\\.\\(rs\\|md\\)", "./a.md", "f"));
        assert!(!holds("-regex a", "./a", "f"));
        assert!(holds("-type f,d", "./x", "d"));
    }

    #[test]
    fn prune_is_reached_only_where_the_expression_reaches_it() {
        let gnu = parse(&words("-name node_modules -prune -o -print"), 0).unwrap();
        assert!(gnu.prunes);
        let eval = |name: &str| {
            let shown = Path::new(name);
            let mut effects = Effects::default();
            gnu.expr.eval(
                &Subject {
                    name: shown.file_name().unwrap(),
                    shown,
                    path: shown,
                    file_type: None,
                    metadata: None,
                },
                &mut effects,
            );
            (effects.printed, effects.pruned)
        };
        // node_modules is pruned and, `-print` being on the other side of `-o`, not listed.
        assert_eq!(eval("./node_modules"), (false, true));
        assert_eq!(eval("./src"), (true, false));
    }

    #[test]
    fn options_and_errors_are_gnus() {
        let gnu = parse(&words("-maxdepth 2 -mindepth 1 -L -xdev -name x"), 0).unwrap();
        assert_eq!((gnu.max_depth, gnu.min_depth), (Some(2), Some(1)));
        assert!(gnu.follow && gnu.same_file_system);
        for (expr, needle) in [
            ("-delete", "rm --confirm"),
            ("-exec rm {} ;", "rm --confirm"),
            ("-ls", "entry"),
            ("-bogus", "unknown predicate"),
            ("( -name x", "')'"),
            ("-name", "missing argument"),
            ("-type q", "Unknown argument"),
            ("-size 1X", "invalid -size"),
        ] {
            let error = parse(&words(expr), 0).unwrap_err();
            assert_eq!(error.category, Category::Usage, "{expr}");
            assert!(error.message.contains(needle), "{expr}: {}", error.message);
        }
    }

    #[test]
    fn arity_knows_gnus_words_and_nothing_else() {
        assert_eq!(arity("-name"), Some(1));
        assert_eq!(arity("-type"), Some(1));
        assert_eq!(arity("!"), Some(0));
        assert_eq!(arity("--name"), None);
        assert_eq!(arity("-t"), None);
        assert_eq!(arity("src"), None);
    }
}
