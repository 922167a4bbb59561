//! Redaction of secrets from echoed arguments and free text (spec §11).
//!
//! `aoi:meta.args` is optional and dangerous, and `--debug` diagnostics on stderr are read by the
//! same agents and log collectors as the stream itself: a token passed as `--token`, embedded in a
//! URL or read from `GITHUB_TOKEN` must never come back out. This module is the one place that
//! knows what a secret looks like, so every tool built on the SDK redacts the same way:
//!
//! - [`is_sensitive_flag`]: the §11 flag-name heuristics;
//! - [`Redactor::redact_args`]: an argv with every sensitive value replaced by [`REDACTED`],
//!   plus whether anything was replaced (for `aoi:meta.args_redacted`);
//! - [`Redactor::scrub`]: the same for free text (error messages, debug logs);
//! - [`input_fingerprint`] and [`args_fingerprint`]: the §11 preferred pattern, a digest in
//!   `aoi:meta.input_fingerprint` instead of echoing anything.
//!
//! Redaction errs on the side of hiding: a value that might be a secret is replaced, and a flag
//! whose arity is unknown is assumed to take the next argument. Only values are replaced; flag
//! names, header names, variable names, URL hosts and paths survive, so the echo still says what
//! was asked.
//!
//! ```
//! use aoi::surface::redact::{Redactor, REDACTED};
//!
//! let redactor = Redactor::new().secret_flag("--dsn");
//! let out = redactor.redact_args(&[
//!     "sync",
//!     "--token", "ghp_canary",
//!     "--dsn=postgres://app:hunter2@db/prod",
//!     "--header", "Authorization: Bearer abc",
//!     "https://example.com/file?sv=2022-11-02&sig=c2lnbmF0dXJl",
//!     "--limit", "10",
//! ]);
//! assert!(out.redacted);
//! assert_eq!(out.args, [
//!     "sync",
//!     "--token", REDACTED,
//!     "--dsn=[REDACTED]",
//!     "--header", "Authorization: [REDACTED]",
//!     "https://example.com/file?sv=2022-11-02&sig=[REDACTED]",
//!     "--limit", "10",
//! ]);
//!
//! let message = redactor.scrub("GET https://bot:hunter2@api.example.com/v1 failed");
//! assert_eq!(message, "GET https://bot:[REDACTED]@api.example.com/v1 failed");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use memchr::memmem;
use sha2::{Digest, Sha256};

/// The text that replaces every redacted value.
pub const REDACTED: &str = "[REDACTED]";

/// Substrings that make a flag (or variable, or query key) name sensitive, from spec §11.
///
/// Lowercase, with `-` standing for both `-` and `_`. `client-secret` is implied by `secret`
/// and kept so the list reads like the spec's.
const SENSITIVE_NAME_PARTS: [&str; 12] = [
    "token",
    "secret",
    "password",
    "passwd",
    "key",
    "credential",
    "cookie",
    "authorization",
    "auth",
    "bearer",
    "private",
    "client-secret",
];

/// URL query (and fragment) keys whose value is a secret even though the name heuristics
/// miss them: signatures, SAS `sig`, OAuth `code`. Compared ASCII case-insensitively.
///
/// Azure SAS `sv`, `se`, `sp` (version, expiry, permissions) are deliberately absent: they
/// say what the link grants without granting it.
const SECRET_QUERY_KEYS: [&str; 17] = [
    "sig",
    "signature",
    "token",
    "access_token",
    "id_token",
    "refresh_token",
    "code",
    "key",
    "api_key",
    "apikey",
    "password",
    "secret",
    "client_secret",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
];

/// HTTP header names whose value [`Redactor::scrub`] hides when they appear as `Name: value` in
/// free text (a logged request). Lowercase; a match may be the tail of a longer name, so
/// `cookie` covers `Set-Cookie` and `authorization` covers `Proxy-Authorization`.
const SECRET_HEADER_NAMES: [&str; 4] = ["authorization", "cookie", "api-key", "auth-token"];

/// Environment values shorter than this many characters are not collected by
/// [`Redactor::with_env_secrets`]: scrubbing `1` or `on` from every message would destroy it.
const MIN_ENV_SECRET_CHARS: usize = 4;

/// Environment values that are switches, not secrets, even under a sensitive name
/// (`AUTH_ENABLED=true`); compared ASCII case-insensitively.
const ENV_SWITCH_VALUES: [&str; 4] = ["true", "false", "none", "null"];

/// Whether a flag name is sensitive by the spec §11 heuristics, so its value must be redacted.
///
/// The name may carry leading dashes (`--api-key`, `-token`, `api_key`); matching is ASCII
/// case-insensitive and treats `_` and `-` alike. A name is sensitive when it contains any of
/// `token`, `secret`, `password`, `passwd`, `key`, `credential`, `cookie`, `authorization`,
/// `auth`, `bearer`, `private` or `client-secret`.
///
/// The match is on substrings, which is deliberately broad: `key` also catches
/// `--idempotency-key` and `--sort-key`, `auth` catches `--author`. Hiding an idempotency key in
/// an echo costs nothing (the caller chose it and still has it) and leaking a real key costs a
/// great deal, so the broad match is the safe default.
///
/// ```
/// use aoi::surface::redact::is_sensitive_flag;
///
/// assert!(is_sensitive_flag("--api-key"));
/// assert!(is_sensitive_flag("CLIENT_SECRET"));
/// assert!(is_sensitive_flag("--idempotency-key"));
/// assert!(!is_sensitive_flag("--limit"));
/// ```
pub fn is_sensitive_flag(name: &str) -> bool {
    let body = name.trim_start_matches('-').as_bytes();
    SENSITIVE_NAME_PARTS
        .iter()
        .any(|part| contains_normalized(body, part.as_bytes()))
}

/// Replaces secrets in argument vectors and free text, per spec §11.
///
/// Beyond the built-in heuristics it knows the flags a tool declares secret
/// ([`secret_flag`](Self::secret_flag): the clap arguments marked secret) and literal secret
/// values ([`secret_value`](Self::secret_value), [`with_env_secrets`](Self::with_env_secrets))
/// that must be scrubbed wherever they appear. Build one at start-up and share it; redaction
/// takes `&self`.
///
/// `Debug` prints the declared flags but only the number of secret values.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Declared long flags, normalized: no leading dashes, ASCII lowercase, `-` for `_`.
    long_flags: Vec<String>,
    /// Declared short flags; case matters (`-p` is not `-P`).
    short_flags: Vec<char>,
    /// Literal secret values (and their percent-encoded forms), never empty.
    values: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("long_flags", &self.long_flags)
            .field("short_flags", &self.short_flags)
            .field(
                "secret_values",
                &format_args!("<{} hidden>", self.values.len()),
            )
            .finish()
    }
}

/// An argument vector after [`Redactor::redact_args`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedactedArgs {
    /// The arguments, one for one with the input, sensitive values replaced by [`REDACTED`].
    pub args: Vec<String>,
    /// Whether anything was replaced; `false` means `args` equals the input.
    pub redacted: bool,
}

/// What the previous argument said about the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    /// Nothing: the next argument stands on its own.
    None,
    /// The previous argument was a secret flag; the next is its value.
    Secret,
    /// The previous argument was a header flag; the next is `Name: value`. `strict` (a long
    /// `--header`) hides a value without a colon too; a bare `-H` is too common a switch
    /// elsewhere (`grep -H`) to hide what follows it unless it looks like a header.
    Header { strict: bool },
    /// The previous argument was an environment flag; the next is `NAME=value`.
    Env,
}

/// How a flag's value is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlagKind {
    /// The whole value is a secret.
    Secret,
    /// The value is an HTTP header; the part after the colon is hidden.
    Header,
    /// The value is an environment assignment; the part after `=` is hidden.
    Env,
    /// The value is scrubbed like any other text.
    Plain,
}

impl Redactor {
    /// Creates a redactor that knows only the built-in heuristics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates a redactor that also hides the values of this process's sensitive environment
    /// variables; see [`with_env_secrets`](Self::with_env_secrets).
    ///
    /// Variables whose name or value is not UTF-8 are skipped (they cannot appear in a `str`).
    pub fn from_env() -> Self {
        let vars = std::env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        });
        Self::new().with_env_secrets(vars)
    }

    /// Declares a flag secret beyond the name heuristics, e.g. a clap argument marked secret.
    ///
    /// `--db-dsn` (or `db-dsn`) declares a long flag, matched ASCII case-insensitively with `_`
    /// and `-` alike; it is also recognized with a single dash (`-db-dsn`, Go style). `-p` (or a
    /// single character) declares a short flag, matched exactly, whose value may be separate
    /// (`-p X`), attached (`-pX`, `-p=X`) or at the end of a cluster (`-vpX`, `-vp X`).
    pub fn secret_flag(mut self, flag: &str) -> Self {
        let body = flag.trim_start_matches('-');
        let mut chars = body.chars();
        match (chars.next(), chars.next()) {
            (None, _) => {}
            (Some(short), None) if !flag.starts_with("--") => {
                if !self.short_flags.contains(&short) {
                    self.short_flags.push(short);
                }
            }
            _ => {
                let normalized = body.to_ascii_lowercase().replace('_', "-");
                if !self.long_flags.contains(&normalized) {
                    self.long_flags.push(normalized);
                }
            }
        }
        self
    }

    /// Declares several flags secret; see [`secret_flag`](Self::secret_flag).
    pub fn secret_flags<I, S>(self, flags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        flags
            .into_iter()
            .fold(self, |redactor, flag| redactor.secret_flag(flag.as_ref()))
    }

    /// Adds a literal secret (a token read from a credential file, say) to scrub wherever it
    /// appears, inside longer arguments and text too.
    ///
    /// Its percent-encoded form is scrubbed as well, since a token containing `/` or `+` shows
    /// up encoded in URLs. An empty value is ignored. Every occurrence is hidden, so a value that
    /// is also an ordinary word hides that word everywhere.
    pub fn secret_value(mut self, value: impl Into<String>) -> Self {
        let value = value.into();
        if value.is_empty() {
            return self;
        }
        let encoded = percent_encode(&value);
        if encoded != value && !self.values.contains(&encoded) {
            self.values.push(encoded);
        }
        if !self.values.contains(&value) {
            self.values.push(value);
        }
        self
    }

    /// Adds as secret values the values of the environment variables whose name is sensitive
    /// by [`is_sensitive_flag`] (`OUTLINE_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `DATABASE_PASSWORD`).
    ///
    /// Values shorter than 4 characters are ignored, and so are the switch words `true`,
    /// `false`, `none` and `null`: scrubbing `1` or `true` from every message would make the
    /// messages useless while protecting nothing.
    ///
    /// ```
    /// use aoi::surface::redact::Redactor;
    ///
    /// let redactor = Redactor::new().with_env_secrets([
    ///     ("GITHUB_TOKEN".to_owned(), "ghp_0123456789".to_owned()),
    ///     ("HOME".to_owned(), "/home/ada".to_owned()),
    /// ]);
    /// assert_eq!(
    ///     redactor.scrub("push to /home/ada with ghp_0123456789 failed"),
    ///     "push to /home/ada with [REDACTED] failed",
    /// );
    /// ```
    pub fn with_env_secrets(self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        vars.into_iter().fold(self, |redactor, (name, value)| {
            let is_switch = ENV_SWITCH_VALUES
                .iter()
                .any(|word| value.eq_ignore_ascii_case(word));
            if is_sensitive_flag(&name)
                && !is_switch
                && value.chars().nth(MIN_ENV_SECRET_CHARS - 1).is_some()
            {
                redactor.secret_value(value)
            } else {
                redactor
            }
        })
    }

    /// Returns `args` with every sensitive value replaced by [`REDACTED`], one for one.
    ///
    /// Hidden, keeping flag and key names:
    ///
    /// - the value of a sensitive or declared flag: `--token X`, `--token=X`, Go-style
    ///   `-token X`, declared short flags `-p X`, `-pX`, `-vpX`; a flag's value is the next
    ///   argument unless that starts with `--`;
    /// - header values after `--header`/`-H`: `Authorization: [REDACTED]` (every header, since
    ///   custom headers carry credentials);
    /// - environment values: `--env NAME=X`, `-e NAME=X`, and `NAME=X` operands whose name is
    ///   upper-case (`DATABASE_URL=...`) or sensitive (`token=...`);
    /// - and, in every argument, whatever [`scrub`](Self::scrub) hides: configured secret
    ///   values, URL credentials and secret query values, `Bearer` tokens.
    ///
    /// `--` does not switch the flag rules off: what follows it is often forwarded to another
    /// program (`aoi mcp -- tool --api-key X`) whose flags are just as secret.
    pub fn redact_args<S: AsRef<str>>(&self, args: &[S]) -> RedactedArgs {
        let mut out = Vec::with_capacity(args.len());
        let mut redacted = false;
        let mut pending = Pending::None;
        let mut ranges = Vec::new();
        for arg in args {
            let arg = arg.as_ref();
            ranges.clear();
            pending = self.arg_ranges(arg, pending, &mut ranges);
            self.scrub_ranges(arg, &mut ranges);
            let result = replace_ranges(arg, &mut ranges);
            redacted |= matches!(result, Cow::Owned(_));
            out.push(result.into_owned());
        }
        RedactedArgs {
            args: out,
            redacted,
        }
    }

    /// Returns the positions of the arguments of an echo (`aoi:meta.args`) that still carry a
    /// value [`redact_args`](Self::redact_args) would hide: how a consumer judges another
    /// producer's echo by the same rules (§11 "If arguments are included, the tool MUST redact
    /// sensitive values").
    ///
    /// The spec names no marker, so a value already hidden passes whatever hid it:
    /// [`REDACTED`], other text that calls itself redacted (`<redacted>`), asterisks only, or
    /// nothing at all (`--token=`).
    ///
    /// ```
    /// use aoi::surface::redact::Redactor;
    ///
    /// let echo = ["search", "--token", "ghp_canary", "--password=***", "--key", "[REDACTED]"];
    /// assert_eq!(Redactor::new().unredacted_args(&echo), [2]);
    /// ```
    pub fn unredacted_args<S: AsRef<str>>(&self, args: &[S]) -> Vec<usize> {
        let hidden = self.redact_args(args);
        args.iter()
            .zip(&hidden.args)
            .enumerate()
            .filter(|(_, (given, hidden))| {
                let given = given.as_ref();
                given != hidden.as_str() && !hidden_by_a_marker(given, hidden)
            })
            .map(|(at, _)| at)
            .collect()
    }

    /// Returns `text` with secrets replaced by [`REDACTED`], for error messages and `--debug`
    /// logs; borrows when nothing was hidden.
    ///
    /// Hidden: configured secret values; URL userinfo passwords (`user:[REDACTED]@`) and
    /// token-like user names (`[REDACTED]@`; a short lower-case name such as `git@` stays);
    /// query and fragment values whose key is a known secret key (`sig`, `code`,
    /// `access_token`, `X-Amz-Signature`, ...) or sensitive by name; `name=value` pairs whose
    /// name is sensitive (`password=...`); the token after `Bearer`; and the value of
    /// `Authorization:`, `Cookie:`, `X-Api-Key:`-style header lines.
    ///
    /// The patterns are matched ASCII case-insensitively, so prose such as "bearer of news" loses
    /// its next word: in diagnostics a false alarm is cheap and a leak is not.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut ranges = Vec::new();
        self.scrub_ranges(text, &mut ranges);
        replace_ranges(text, &mut ranges)
    }

    /// Pushes the ranges of `arg` hidden by the flag rules, and says what `arg` makes of the
    /// next argument.
    fn arg_ranges(&self, arg: &str, pending: Pending, ranges: &mut Vec<Range<usize>>) -> Pending {
        let is_long_option = arg.starts_with("--");
        match pending {
            Pending::Secret if !is_long_option => {
                ranges.push(0..arg.len());
                return Pending::None;
            }
            Pending::Header { strict } if !is_long_option => {
                if let Some(value) = header_value(arg, 0) {
                    ranges.push(value);
                    return Pending::None;
                }
                if strict {
                    ranges.push(0..arg.len());
                    return Pending::None;
                }
            }
            Pending::Env if !is_long_option => {
                ranges.extend(assignment_value(arg, 0, true));
                return Pending::None;
            }
            _ => {}
        }

        if let Some(body) = arg.strip_prefix("--") {
            if body.is_empty() {
                return Pending::None;
            }
            let (name, value) = split_flag(arg, 2);
            return self.named_flag(arg, name, value, ranges);
        }
        let Some(body) = arg.strip_prefix('-') else {
            ranges.extend(assignment_value(arg, 0, false));
            return Pending::None;
        };
        let Some(first) = body.chars().next() else {
            return Pending::None; // `-`: standard input
        };
        if first.is_ascii_digit() || first == '.' {
            return Pending::None; // a negative number
        }
        if self.short_flags.contains(&first) {
            return short_value(arg, 1 + first.len_utf8(), FlagKind::Secret, ranges);
        }
        // A single-dash argument is ambiguous: a Go-style long flag (`-token X`), `-H`/`-e` with
        // an attached value, or a cluster of short flags ending in a declared one (`-vpX`).
        // Every reading that hides something is applied, so no reading can leak.
        let mut next = Pending::None;
        let (name, value) = split_flag(arg, 1);
        if name.len() > 1 && is_flag_name(name) && self.flag_kind(name) != FlagKind::Plain {
            next = self.named_flag(arg, name, value, ranges);
        }
        let attached = match first {
            'H' => short_value(arg, 2, FlagKind::Header, ranges),
            'e' => short_value(arg, 2, FlagKind::Env, ranges),
            _ => Pending::None,
        };
        if next == Pending::None {
            next = attached;
        }
        let declared = body
            .char_indices()
            .skip(1)
            .take_while(|(_, c)| c.is_ascii_alphanumeric())
            .find(|(_, c)| self.short_flags.contains(c));
        if let Some((at, c)) = declared {
            let cluster = short_value(arg, 1 + at + c.len_utf8(), FlagKind::Secret, ranges);
            if next == Pending::None {
                next = cluster;
            }
        }
        next
    }

    /// Handles a named (long or Go-style) flag whose value, if attached, is at `value`.
    fn named_flag(
        &self,
        arg: &str,
        name: &str,
        value: Option<Range<usize>>,
        ranges: &mut Vec<Range<usize>>,
    ) -> Pending {
        let kind = self.flag_kind(name);
        let Some(value) = value else {
            return match kind {
                FlagKind::Secret => Pending::Secret,
                FlagKind::Header => Pending::Header { strict: true },
                FlagKind::Env => Pending::Env,
                FlagKind::Plain => Pending::None,
            };
        };
        let text = &arg[value.clone()];
        match kind {
            FlagKind::Secret => ranges.push(value),
            FlagKind::Header => ranges.push(header_value(text, value.start).unwrap_or(value)),
            FlagKind::Env => ranges.extend(assignment_value(text, value.start, true)),
            FlagKind::Plain => ranges.extend(assignment_value(text, value.start, false)),
        }
        Pending::None
    }

    /// Classifies a flag name (with or without dashes).
    fn flag_kind(&self, name: &str) -> FlagKind {
        let body = name.trim_start_matches('-');
        if is_sensitive_flag(body) || self.long_flags.iter().any(|f| eq_normalized(body, f)) {
            return FlagKind::Secret;
        }
        let is_header = ["header", "headers"]
            .iter()
            .any(|h| eq_normalized(body, h) || ends_with_normalized(body, &format!("-{h}")));
        if is_header {
            return FlagKind::Header;
        }
        if eq_normalized(body, "env")
            || eq_normalized(body, "environment")
            || ends_with_normalized(body, "-env")
        {
            return FlagKind::Env;
        }
        FlagKind::Plain
    }

    /// Pushes the ranges of `text` that [`scrub`](Self::scrub) hides.
    fn scrub_ranges(&self, text: &str, ranges: &mut Vec<Range<usize>>) {
        let bytes = text.as_bytes();
        for value in &self.values {
            let mut from = 0;
            while let Some(at) = bytes
                .get(from..)
                .and_then(|rest| memmem::find(rest, value.as_bytes()))
            {
                let start = from + at;
                ranges.push(start..start + value.len());
                from = start + 1; // overlapping occurrences too
            }
        }
        url_userinfo_ranges(bytes, ranges);
        query_ranges(bytes, ranges);
        sensitive_assignment_ranges(bytes, ranges);
        header_line_ranges(bytes, ranges);
        bearer_ranges(bytes, ranges);
    }
}

/// Returns the SHA-256 fingerprint of some input, as `sha256:<64 lowercase hex digits>`.
///
/// This is the §11 preferred alternative to echoing: `aoi:meta.input_fingerprint` lets a caller
/// check which input a run saw without the stream repeating it. A digest of low-entropy input
/// (a four-digit PIN) can be reversed by trying every candidate, so fingerprint what the caller
/// already has, not a secret on its own.
///
/// ```
/// assert_eq!(
///     aoi::surface::redact::input_fingerprint(b""),
///     "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
/// );
/// ```
pub fn input_fingerprint(bytes: &[u8]) -> String {
    hex_fingerprint(&Sha256::digest(bytes))
}

/// Returns the SHA-256 fingerprint of an argument vector, in the [`input_fingerprint`] format.
///
/// Each argument is hashed as its byte length (8 bytes, little-endian) followed by its bytes, so
/// `["ab", "c"]` and `["a", "bc"]` differ. The same caveat about low-entropy secrets applies; to
/// fingerprint only the shape of a call, hash [`Redactor::redact_args`] output instead.
pub fn args_fingerprint<S: AsRef<str>>(args: &[S]) -> String {
    let mut hasher = Sha256::new();
    for arg in args {
        let arg = arg.as_ref().as_bytes();
        hasher.update((arg.len() as u64).to_le_bytes());
        hasher.update(arg);
    }
    hex_fingerprint(&hasher.finalize())
}

/// Formats a digest as `sha256:` and lowercase hex.
fn hex_fingerprint(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(7 + 2 * digest.len());
    out.push_str("sha256:");
    for &byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// Replaces the (possibly overlapping, unsorted) `ranges` of `text` with [`REDACTED`].
///
/// Ranges are widened to character boundaries and merged; a range that already reads
/// `[REDACTED]` is left alone, so scrubbing twice changes nothing the second time. Borrows when
/// nothing changed.
/// Whether `given` differs from its redaction `hidden` only where it already held a marker of
/// its own: the text between their common prefix and suffix is empty, asterisks, or names
/// itself redacted.
fn hidden_by_a_marker(given: &str, hidden: &str) -> bool {
    let prefix = given
        .char_indices()
        .zip(hidden.chars())
        .find(|((_, a), b)| a != b)
        .map_or(given.len().min(hidden.len()), |((at, _), _)| at);
    let suffix = given[prefix..]
        .chars()
        .rev()
        .zip(hidden[prefix..].chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    let original = &given[prefix..given.len() - suffix];
    original.is_empty()
        || original.chars().all(|c| c == '*')
        || original.to_ascii_lowercase().contains("redacted")
}

fn replace_ranges<'a>(text: &'a str, ranges: &mut [Range<usize>]) -> Cow<'a, str> {
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut current: Option<Range<usize>> = None;
    let mut flush = |range: Range<usize>, out: &mut Option<String>| {
        let Some(original) = text.get(range.clone()) else {
            return;
        };
        if original == REDACTED || range.start < copied {
            return;
        }
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[copied..range.start]);
        out.push_str(REDACTED);
        copied = range.end;
    };
    for range in ranges.iter() {
        let range = char_aligned(text, range.clone());
        if range.is_empty() {
            continue;
        }
        match &mut current {
            Some(open) if range.start <= open.end => open.end = open.end.max(range.end),
            _ => {
                if let Some(done) = current.replace(range) {
                    flush(done, &mut out);
                }
            }
        }
    }
    if let Some(done) = current {
        flush(done, &mut out);
    }
    match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    }
}

/// Widens `range` outward to character boundaries, clamped to `text`.
fn char_aligned(text: &str, range: Range<usize>) -> Range<usize> {
    let mut start = range.start.min(text.len());
    let mut end = range.end.clamp(start, text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// Splits a flag argument into its name (after `dashes` dashes) and attached value range.
fn split_flag(arg: &str, dashes: usize) -> (&str, Option<Range<usize>>) {
    let body = &arg[dashes..];
    match body.find('=') {
        Some(eq) => (&body[..eq], Some(dashes + eq + 1..arg.len())),
        None => (body, None),
    }
}

/// Handles a short flag of `kind` whose value starts at byte `at` of `arg` (or is the next
/// argument when nothing follows).
fn short_value(arg: &str, at: usize, kind: FlagKind, ranges: &mut Vec<Range<usize>>) -> Pending {
    let rest = &arg[at..];
    if rest.is_empty() {
        return match kind {
            FlagKind::Secret => Pending::Secret,
            FlagKind::Header => Pending::Header { strict: false },
            FlagKind::Env => Pending::Env,
            FlagKind::Plain => Pending::None,
        };
    }
    let (at, rest) = match rest.strip_prefix('=') {
        Some(rest) => (at + 1, rest),
        None => (at, rest),
    };
    match kind {
        FlagKind::Secret => ranges.push(at..arg.len()),
        FlagKind::Header => ranges.extend(header_value(rest, at)),
        // Attached to `-e`, only a plausible variable name counts: `-exclude=x` is another flag.
        FlagKind::Env => ranges.extend(assignment_value(rest, at, false)),
        FlagKind::Plain => {}
    }
    Pending::None
}

/// The range of the value in a `Name: value` header (offset by `offset`), or `None` without a
/// colon.
fn header_value(text: &str, offset: usize) -> Option<Range<usize>> {
    let colon = text.find(':')?;
    let value = &text[colon + 1..];
    let start = colon + 1 + (value.len() - value.trim_start_matches([' ', '\t']).len());
    Some(offset + start..offset + text.len())
}

/// The range of the value in a `NAME=value` assignment (offset by `offset`).
///
/// With `any_name` (after `--env`) every name counts; otherwise only an environment-style
/// upper-case name (`DATABASE_URL`) or a sensitive one (`api_key`, `db.password`).
fn assignment_value(text: &str, offset: usize, any_name: bool) -> Option<Range<usize>> {
    let eq = text.find('=')?;
    let name = &text[..eq];
    let counts = !name.is_empty()
        && (any_name || is_env_style_name(name) || (is_flag_name(name) && is_sensitive_flag(name)));
    counts.then(|| offset + eq + 1..offset + text.len())
}

/// Whether `name` looks like an environment variable: `[A-Z_][A-Z0-9_]*` with a letter.
fn is_env_style_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.first().is_some_and(|b| !b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
        && bytes.iter().any(u8::is_ascii_uppercase)
}

/// Whether `name` is made of flag-name characters: ASCII letters, digits, `_`, `-`, `.`.
fn is_flag_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_name_byte)
}

/// Whether a byte can be part of a flag, variable or key name.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Whether a byte ends a URL or a token in free text.
fn ends_url(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(b, b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\')
}

/// Pushes the credentials in `scheme://userinfo@host` URLs: the password, and a user name that
/// looks like a token.
fn url_userinfo_ranges(bytes: &[u8], ranges: &mut Vec<Range<usize>>) {
    for sep in memmem::find_iter(bytes, b"://") {
        let has_scheme = bytes[..sep]
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
        if !has_scheme {
            continue;
        }
        let start = sep + 3;
        let end = bytes[start..]
            .iter()
            .position(|&b| ends_url(b) || matches!(b, b'/' | b'?' | b'#'))
            .map_or(bytes.len(), |len| start + len);
        let authority = &bytes[start..end];
        let Some(at) = authority.iter().rposition(|&b| b == b'@') else {
            continue;
        };
        let userinfo = &authority[..at];
        match userinfo.iter().position(|&b| b == b':') {
            Some(colon) => {
                if !is_plain_user_name(&userinfo[..colon]) {
                    ranges.push(start..start + colon);
                }
                ranges.push(start + colon + 1..start + at);
            }
            None => {
                if !is_plain_user_name(userinfo) {
                    ranges.push(start..start + at);
                }
            }
        }
    }
}

/// Whether a URL user name is an ordinary account name (`git`, `deploy`) rather than a token.
///
/// Ordinary means at most 16 bytes of lower-case letters, digits, `.`, `_` and `-`; an empty
/// name counts too. Tokens are long, mixed-case or percent-encoded, so they fail this test and
/// are hidden.
fn is_plain_user_name(name: &[u8]) -> bool {
    name.len() <= 16
        && name.iter().all(|&b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
}

/// Pushes the values of secret keys in query strings and fragments (`?sig=...`, `#code=...`),
/// in full URLs and in bare paths (`/callback?code=...`) alike.
fn query_ranges(bytes: &[u8], ranges: &mut Vec<Range<usize>>) {
    for mark in memchr::memchr2_iter(b'?', b'#', bytes) {
        let mut at = mark + 1;
        while at < bytes.len() && !ends_url(bytes[at]) {
            let end = bytes[at..]
                .iter()
                .position(|&b| ends_url(b) || matches!(b, b'&' | b'?' | b'#'))
                .map_or(bytes.len(), |len| at + len);
            let param = &bytes[at..end];
            if let Some(eq) = param.iter().position(|&b| b == b'=') {
                if is_secret_query_key(&param[..eq]) {
                    ranges.push(at + eq + 1..end);
                }
            }
            if end >= bytes.len() || !matches!(bytes[end], b'&') {
                break; // `?` and `#` start their own scan
            }
            at = end + 1;
        }
    }
}

/// Whether a query key names a secret: a known secret key or a sensitive name.
fn is_secret_query_key(key: &[u8]) -> bool {
    SECRET_QUERY_KEYS
        .iter()
        .any(|known| key.eq_ignore_ascii_case(known.as_bytes()))
        || (!key.is_empty()
            && key.iter().all(|&b| is_name_byte(b))
            && SENSITIVE_NAME_PARTS
                .iter()
                .any(|part| contains_normalized(key, part.as_bytes())))
}

/// Pushes the values of `name=value` pairs whose name is sensitive (`password=hunter2`,
/// `--api-key=...` in a logged command line); a value in double quotes runs to the closing quote.
fn sensitive_assignment_ranges(bytes: &[u8], ranges: &mut Vec<Range<usize>>) {
    for eq in memchr::memchr_iter(b'=', bytes) {
        let name_start = bytes[..eq]
            .iter()
            .rposition(|&b| !is_name_byte(b))
            .map_or(0, |at| at + 1);
        let name = &bytes[name_start..eq];
        let sensitive = !name.is_empty()
            && SENSITIVE_NAME_PARTS
                .iter()
                .any(|part| contains_normalized(name, part.as_bytes()));
        if sensitive {
            ranges.push(value_after(bytes, eq + 1));
        }
    }
}

/// Pushes the values of `Authorization:`-style header lines in free text: `Name: value` to the
/// end of the line, or `"name": "value"` to the closing quote.
fn header_line_ranges(bytes: &[u8], ranges: &mut Vec<Range<usize>>) {
    for name in SECRET_HEADER_NAMES {
        let mut from = 0;
        while let Some(start) = find_ascii_ci(bytes, name.as_bytes(), from) {
            from = start + 1;
            if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
                continue;
            }
            let mut at = start + name.len();
            if matches!(bytes.get(at), Some(b'"' | b'\'')) {
                at += 1;
            }
            at = skip_blanks(bytes, at);
            if bytes.get(at) != Some(&b':') {
                continue;
            }
            at = skip_blanks(bytes, at + 1);
            let range = if bytes.get(at) == Some(&b'"') {
                value_after(bytes, at)
            } else {
                let end = bytes[at..]
                    .iter()
                    .position(|&b| matches!(b, b'\r' | b'\n'))
                    .map_or(bytes.len(), |len| at + len);
                at..end
            };
            ranges.push(range);
        }
    }
}

/// Pushes the tokens after `Bearer ` (any case, as a word).
fn bearer_ranges(bytes: &[u8], ranges: &mut Vec<Range<usize>>) {
    let mut from = 0;
    while let Some(start) = find_ascii_ci(bytes, b"bearer", from) {
        from = start + 1;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let after = start + b"bearer".len();
        let token_start = skip_blanks(bytes, after);
        if token_start == after {
            continue;
        }
        let token_end = bytes[token_start..]
            .iter()
            .position(|&b| {
                ends_url(b) || matches!(b, b',' | b';' | b'(' | b')' | b'[' | b']' | b'{' | b'}')
            })
            .map_or(bytes.len(), |len| token_start + len);
        ranges.push(token_start..token_end);
    }
}

/// The range of a value starting at `at`: inside double quotes up to the closing quote, else up
/// to whitespace, a quote or `&`.
fn value_after(bytes: &[u8], at: usize) -> Range<usize> {
    if bytes.get(at) == Some(&b'"') {
        let start = at + 1;
        let end = bytes[start..]
            .iter()
            .position(|&b| matches!(b, b'"' | b'\r' | b'\n'))
            .map_or(bytes.len(), |len| start + len);
        return start..end;
    }
    let end = bytes[at.min(bytes.len())..]
        .iter()
        .position(|&b| ends_url(b) || b == b'&')
        .map_or(bytes.len(), |len| at + len);
    at..end
}

/// The index of the first byte at or after `at` that is not a space or tab.
fn skip_blanks(bytes: &[u8], at: usize) -> usize {
    bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|&b| b != b' ' && b != b'\t'))
        .map_or(bytes.len(), |len| at + len)
        .max(at.min(bytes.len()))
}

/// The first occurrence of the lowercase ASCII `needle` in `hay` at or after `from`, ignoring
/// ASCII case.
fn find_ascii_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut at = from;
    while let Some(offset) = hay
        .get(at..)
        .and_then(|rest| memchr::memchr2(first, first.to_ascii_uppercase(), rest))
    {
        let start = at + offset;
        if hay
            .get(start..start + needle.len())
            .is_some_and(|window| window.eq_ignore_ascii_case(needle))
        {
            return Some(start);
        }
        at = start + 1;
    }
    None
}

/// Lowercases ASCII and maps `_` to `-`, the normal form names are compared in.
fn normalize_byte(b: u8) -> u8 {
    if b == b'_' {
        b'-'
    } else {
        b.to_ascii_lowercase()
    }
}

/// Whether `hay`, normalized, contains the normalized `needle`.
fn contains_normalized(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len()
        && hay.windows(needle.len()).any(|window| {
            window
                .iter()
                .zip(needle)
                .all(|(&h, &n)| normalize_byte(h) == n)
        })
}

/// Whether `name`, normalized, equals the normalized `other`.
fn eq_normalized(name: &str, other: &str) -> bool {
    name.len() == other.len()
        && name
            .bytes()
            .zip(other.bytes())
            .all(|(a, b)| normalize_byte(a) == normalize_byte(b))
}

/// Whether `name`, normalized, ends with the normalized `suffix`.
fn ends_with_normalized(name: &str, suffix: &str) -> bool {
    name.len() >= suffix.len()
        && name.is_char_boundary(name.len() - suffix.len())
        && eq_normalized(&name[name.len() - suffix.len()..], suffix)
}

/// Percent-encodes everything but RFC 3986 unreserved characters, upper-case hex.
fn percent_encode(value: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "canary-5ecr3t-XYZ";

    fn redact(redactor: &Redactor, args: &[&str]) -> RedactedArgs {
        redactor.redact_args(args)
    }

    /// Asserts that no output argument contains the canary, and returns the output.
    fn clean(redactor: &Redactor, args: &[&str]) -> RedactedArgs {
        let out = redact(redactor, args);
        for arg in &out.args {
            assert!(
                !arg.contains("5ecr3t"),
                "canary leaked from {args:?}: {:?}",
                out.args
            );
        }
        assert!(out.redacted, "nothing redacted in {args:?}");
        assert_eq!(out.args.len(), args.len());
        out
    }

    #[test]
    fn sensitive_flag_names_follow_the_spec_list() {
        for part in SENSITIVE_NAME_PARTS {
            assert!(is_sensitive_flag(part), "{part}");
            assert!(is_sensitive_flag(&format!("--{part}")), "{part}");
            assert!(
                is_sensitive_flag(&format!("--my-{}-file", part.to_uppercase())),
                "{part}"
            );
            assert!(
                is_sensitive_flag(&format!("-{}", part.replace('-', "_"))),
                "{part}"
            );
        }
        for name in [
            "--api-key",
            "--idempotency-key",
            "API_KEY",
            "--Client_Secret",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(is_sensitive_flag(name), "{name}");
        }
        for name in [
            "--limit",
            "--output",
            "--query",
            "--cursor",
            "--dry-run",
            "",
            "--",
            "--tokn",
        ] {
            assert!(!is_sensitive_flag(name), "{name}");
        }
    }

    #[test]
    fn every_flag_keyword_hides_separate_and_attached_values() {
        let redactor = Redactor::new();
        for part in SENSITIVE_NAME_PARTS {
            let flag = format!("--{part}");
            let out = clean(&redactor, &["run", &flag, CANARY, "--limit", "5"]);
            assert_eq!(out.args, ["run", &flag, REDACTED, "--limit", "5"]);

            let attached = format!("--{part}={CANARY}");
            let out = clean(&redactor, &["run", &attached, "x"]);
            assert_eq!(
                out.args,
                ["run", format!("--{part}=[REDACTED]").as_str(), "x"]
            );

            let go_style = format!("-{part}");
            let out = clean(&redactor, &[&go_style, CANARY]);
            assert_eq!(out.args, [go_style.as_str(), REDACTED]);
        }
    }

    #[test]
    fn a_secret_flag_takes_the_next_argument_unless_it_is_a_long_option() {
        let redactor = Redactor::new();
        let out = redact(&redactor, &["--private", "--limit", "5"]);
        assert_eq!(out.args, ["--private", "--limit", "5"]);
        assert!(!out.redacted);
        // A value that starts with a single dash is still a value.
        let out = clean(&redactor, &["--token", "-canary-5ecr3t"]);
        assert_eq!(out.args, ["--token", REDACTED]);
        // A trailing secret flag has nothing to hide.
        assert!(!redact(&redactor, &["--token"]).redacted);
        // An empty value has nothing to hide either.
        assert!(!redact(&redactor, &["--token", ""]).redacted);
        assert!(!redact(&redactor, &["--token="]).redacted);
    }

    #[test]
    fn declared_long_flags_are_secret() {
        let redactor = Redactor::new().secret_flags(["--dsn", "db_url"]);
        let out = clean(&redactor, &["--dsn", CANARY]);
        assert_eq!(out.args, ["--dsn", REDACTED]);
        let out = clean(&redactor, &["--DSN=canary-5ecr3t"]);
        assert_eq!(out.args, ["--DSN=[REDACTED]"]);
        let out = clean(&redactor, &["--db-url", CANARY, "--db_url=canary-5ecr3t"]);
        assert_eq!(out.args, ["--db-url", REDACTED, "--db_url=[REDACTED]"]);
        let out = clean(&redactor, &["-dsn", CANARY]);
        assert_eq!(out.args, ["-dsn", REDACTED]);
    }

    #[test]
    fn declared_short_flags_are_secret_in_every_form() {
        let redactor = Redactor::new().secret_flag("-p");
        let cases: [(&[&str], &[&str]); 7] = [
            (&["-p", CANARY], &["-p", REDACTED]),
            // Also a plausible Go-style `-vpkey...` flag: both readings apply.
            (&["-vpkeycanary-5ecr3t"], &["-vp[REDACTED]"]),
            (&["-pcanary-5ecr3t"], &["-p[REDACTED]"]),
            (&["-p=canary-5ecr3t"], &["-p=[REDACTED]"]),
            (&["-vpcanary-5ecr3t"], &["-vp[REDACTED]"]),
            (&["-vp", CANARY, "x"], &["-vp", REDACTED, "x"]),
            (&["-pkeycanary-5ecr3t"], &["-p[REDACTED]"]),
        ];
        for (args, want) in cases {
            assert_eq!(clean(&redactor, args).args, want, "{args:?}");
        }
        // Undeclared, and case matters.
        let out = redact(&redactor, &["-P", "8080", "-x", "y"]);
        assert_eq!(out.args, ["-P", "8080", "-x", "y"]);
        assert!(!out.redacted);
        assert!(!redact(&Redactor::new(), &["-p", "8080"]).redacted);
    }

    #[test]
    fn header_values_are_hidden_and_names_kept() {
        let redactor = Redactor::new();
        let cases: [(&[&str], &[&str]); 7] = [
            (
                &["--header", "Authorization: Bearer canary-5ecr3t"],
                &["--header", "Authorization: [REDACTED]"],
            ),
            (
                &["-H", "X-Api-Key: canary-5ecr3t"],
                &["-H", "X-Api-Key: [REDACTED]"],
            ),
            (
                &["-H", "X-Tenant:canary-5ecr3t"],
                &["-H", "X-Tenant:[REDACTED]"],
            ),
            (
                &["--header=Cookie: session=canary-5ecr3t"],
                &["--header=Cookie: [REDACTED]"],
            ),
            (&["-HX-Custom: canary-5ecr3t"], &["-HX-Custom: [REDACTED]"]),
            (
                &["--proxy-header", "X-Trace: canary-5ecr3t"],
                &["--proxy-header", "X-Trace: [REDACTED]"],
            ),
            // `--header` is unambiguous: a value without a colon is hidden whole.
            (&["--header", CANARY], &["--header", REDACTED]),
        ];
        for (args, want) in cases {
            assert_eq!(clean(&redactor, args).args, want, "{args:?}");
        }
        // A bare `-H` is a switch in many tools; a colon-less operand after it is not a header.
        let out = redact(&redactor, &["-H", "pattern"]);
        assert_eq!(out.args, ["-H", "pattern"]);
    }

    #[test]
    fn environment_values_are_hidden_and_names_kept() {
        let redactor = Redactor::new();
        let cases: [(&[&str], &[&str]); 8] = [
            (
                &["--env", "DB_URL=canary-5ecr3t"],
                &["--env", "DB_URL=[REDACTED]"],
            ),
            (
                &["-e", "db_url=canary-5ecr3t"],
                &["-e", "db_url=[REDACTED]"],
            ),
            (
                &["--env=DB_URL=canary-5ecr3t"],
                &["--env=DB_URL=[REDACTED]"],
            ),
            (&["-eDB_URL=canary-5ecr3t"], &["-eDB_URL=[REDACTED]"]),
            (
                &["--set-env", "x=canary-5ecr3t"],
                &["--set-env", "x=[REDACTED]"],
            ),
            (
                &["DATABASE_URL=canary-5ecr3t", "run"],
                &["DATABASE_URL=[REDACTED]", "run"],
            ),
            (&["api_key=canary-5ecr3t"], &["api_key=[REDACTED]"]),
            (
                &["--filter=token=canary-5ecr3t"],
                &["--filter=token=[REDACTED]"],
            ),
        ];
        for (args, want) in cases {
            assert_eq!(clean(&redactor, args).args, want, "{args:?}");
        }
        // Lower-case, non-sensitive assignments are ordinary operands.
        let out = redact(
            &redactor,
            &["--filter", "status=open", "sort=date", "-e", "HOME"],
        );
        assert_eq!(
            out.args,
            ["--filter", "status=open", "sort=date", "-e", "HOME"]
        );
        assert!(!out.redacted);
    }

    #[test]
    fn url_credentials_are_hidden_and_the_rest_kept() {
        let redactor = Redactor::new();
        let cases: [(&str, &str); 6] = [
            (
                "https://ada:canary-5ecr3t@example.com/a/b?q=1",
                "https://ada:[REDACTED]@example.com/a/b?q=1",
            ),
            (
                "https://canary-5ecr3t-XYZ@github.com/o/r.git",
                "https://[REDACTED]@github.com/o/r.git",
            ),
            (
                "https://canary-5ecr3t-XYZ:x-oauth-basic@github.com/o/r",
                "https://[REDACTED]:[REDACTED]@github.com/o/r",
            ),
            (
                "--url=postgres://app:canary-5ecr3t@db:5432/prod",
                "--url=postgres://app:[REDACTED]@db:5432/prod",
            ),
            (
                "remote=git+ssh://deploy:canary-5ecr3t@host/x",
                "remote=git+ssh://deploy:[REDACTED]@host/x",
            ),
            ("https://u:p%40canary-5ecr3t@h", "https://u:[REDACTED]@h"),
        ];
        for (arg, want) in cases {
            assert_eq!(clean(&redactor, &[arg]).args, [want], "{arg}");
            assert_eq!(
                redactor.scrub(&format!("see {arg} now")),
                format!("see {want} now")
            );
        }
        for plain in [
            "ssh://git@github.com/o/r.git",
            "https://example.com/a@b",
            "mailto:ada@example.com",
        ] {
            let out = redact(&redactor, &[plain]);
            assert_eq!(out.args, [plain]);
            assert!(!out.redacted, "{plain}");
        }
    }

    #[test]
    fn every_secret_query_key_is_hidden() {
        let redactor = Redactor::new();
        for key in SECRET_QUERY_KEYS {
            for key in [key.to_owned(), key.to_uppercase()] {
                let url = format!("https://h.example/p?a=1&{key}={CANARY}&b=2#top");
                let want = format!("https://h.example/p?a=1&{key}=[REDACTED]&b=2#top");
                assert_eq!(clean(&redactor, &[&url]).args, [want.as_str()], "{key}");
                assert_eq!(
                    redactor.scrub(&format!("GET {url} 403")),
                    format!("GET {want} 403")
                );
            }
        }
        // Sensitive by name though not in the list.
        let out = clean(
            &redactor,
            &["https://gitlab.example/api?private_token=canary-5ecr3t"],
        );
        assert_eq!(
            out.args,
            ["https://gitlab.example/api?private_token=[REDACTED]"]
        );
    }

    #[test]
    fn azure_sas_keeps_its_shape_and_hides_its_signature() {
        let url = "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01T00%3A00Z&sp=r&sig=canary%2B5ecr3t%3D";
        let want = "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01T00%3A00Z&sp=r&sig=[REDACTED]";
        assert_eq!(clean(&Redactor::new(), &[url]).args, [want]);
    }

    #[test]
    fn fragments_and_bare_paths_are_scrubbed_too() {
        let redactor = Redactor::new();
        let out = clean(
            &redactor,
            &["https://app.example/cb#access_token=canary-5ecr3t&state=s1"],
        );
        assert_eq!(
            out.args,
            ["https://app.example/cb#access_token=[REDACTED]&state=s1"]
        );
        assert_eq!(
            redactor.scrub("GET /oauth/cb?state=s1&code=canary-5ecr3t HTTP/1.1"),
            "GET /oauth/cb?state=s1&code=[REDACTED] HTTP/1.1"
        );
    }

    #[test]
    fn bearer_tokens_are_hidden() {
        let redactor = Redactor::new();
        let out = clean(&redactor, &["--data", "Bearer canary-5ecr3t"]);
        assert_eq!(out.args, ["--data", "Bearer [REDACTED]"]);
        assert_eq!(
            redactor.scrub("sent bearer  canary-5ecr3t, got 401"),
            "sent bearer  [REDACTED], got 401"
        );
        assert_eq!(
            redactor.scrub(r#"{"authorization":"Bearer canary-5ecr3t"}"#),
            r#"{"authorization":"[REDACTED]"}"#
        );
        // Not a word on its own: left alone.
        assert_eq!(redactor.scrub("unbearer x"), "unbearer x");
    }

    #[test]
    fn header_lines_and_sensitive_assignments_in_free_text_are_hidden() {
        let redactor = Redactor::new();
        let log = "> GET /v1 HTTP/1.1\r\n> Authorization: Basic Y2FuYXJ5LTVlY3IzdA==\r\n> Cookie: sid=canary-5ecr3t; theme=dark\r\n> X-Api-Key: canary-5ecr3t\r\n> Accept: */*\r\n";
        let want = "> GET /v1 HTTP/1.1\r\n> Authorization: [REDACTED]\r\n> Cookie: [REDACTED]\r\n> X-Api-Key: [REDACTED]\r\n> Accept: */*\r\n";
        assert_eq!(redactor.scrub(log), want);
        assert_eq!(
            redactor.scrub("connect host=db password=canary-5ecr3t user=app"),
            "connect host=db password=[REDACTED] user=app"
        );
        assert_eq!(
            redactor.scrub(r#"level=debug client_secret="canary 5ecr3t" ok"#),
            r#"level=debug client_secret="[REDACTED]" ok"#
        );
    }

    #[test]
    fn configured_secret_values_are_hidden_anywhere() {
        let redactor = Redactor::new()
            .secret_value(CANARY)
            .secret_value("tok/en+canary-5ecr3t");
        let out = clean(
            &redactor,
            &["--query", "prefix-canary-5ecr3t-XYZ-suffix", "x"],
        );
        assert_eq!(out.args, ["--query", "prefix-[REDACTED]-suffix", "x"]);
        assert_eq!(
            redactor.scrub("failed: canary-5ecr3t-XYZcanary-5ecr3t-XYZ!"),
            "failed: [REDACTED]!"
        );
        // Percent-encoded in a URL path, where no query rule would find it.
        assert_eq!(
            redactor.scrub("GET /v1/tok%2Fen%2Bcanary-5ecr3t/x"),
            "GET /v1/[REDACTED]/x"
        );
        // Overlapping occurrences are all covered.
        let overlapping = Redactor::new().secret_value("abab");
        assert_eq!(overlapping.scrub("xababab y"), "x[REDACTED] y");
        // An empty value is ignored rather than matching everywhere.
        assert_eq!(Redactor::new().secret_value("").scrub("text"), "text");
    }

    #[test]
    fn env_secrets_come_from_sensitive_names_only() {
        let vars = [
            ("OUTLINE_TOKEN", "canary-5ecr3t-outline"),
            ("GITHUB_TOKEN", "ghp_canary5ecr3tgithub"),
            ("AWS_SECRET_ACCESS_KEY", "wJalr/canary5ecr3t+aws"),
            ("DATABASE_PASSWORD", "canary-5ecr3t-db"),
            ("HOME", "/home/ada"),
            ("SHORT_TOKEN", "abc"),
            ("AUTH_ENABLED", "TRUE"),
        ];
        let redactor = Redactor::new()
            .with_env_secrets(vars.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())));
        let text = "home=/home/ada outline=canary-5ecr3t-outline gh=ghp_canary5ecr3tgithub \
                    aws=wJalr/canary5ecr3t+aws url=s3://x/wJalr%2Fcanary5ecr3t%2Baws db=canary-5ecr3t-db \
                    short=abc enabled=TRUE";
        let scrubbed = redactor.scrub(text);
        assert!(!scrubbed.contains("5ecr3t"), "{scrubbed}");
        assert_eq!(
            scrubbed,
            "home=/home/ada outline=[REDACTED] gh=[REDACTED] aws=[REDACTED] url=s3://x/[REDACTED] \
             db=[REDACTED] short=abc enabled=TRUE"
        );
        let out = clean(&redactor, &["--note", "db is canary-5ecr3t-db"]);
        assert_eq!(out.args, ["--note", "db is [REDACTED]"]);
        // Debug shows how many values there are, never the values.
        let debug = format!("{redactor:?}");
        assert!(!debug.contains("5ecr3t"), "{debug}");
    }

    #[test]
    fn non_secret_args_are_unchanged() {
        let redactor = Redactor::new().secret_flag("--dsn").secret_value(CANARY);
        let args = [
            "search",
            "agent operable",
            "--limit",
            "2",
            "--output",
            "jsonl",
            "--cursor=c2VhcmNoOjI",
            "-v",
            "-",
            "-5",
            "https://example.com/docs?q=rust&page=2#intro",
            "--",
            "--not-a-flag",
            "naïve café 日本語",
        ];
        let out = redactor.redact_args(&args);
        assert_eq!(out.args, args);
        assert!(!out.redacted);
        assert!(matches!(
            redactor.scrub("nothing to see: ok?"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn end_of_options_does_not_switch_redaction_off() {
        let out = clean(
            &Redactor::new(),
            &[
                "mcp",
                "--",
                "tool",
                "--api-key",
                CANARY,
                "TOKEN=canary-5ecr3t",
                "https://u:canary-5ecr3t@h",
            ],
        );
        assert_eq!(
            out.args,
            [
                "mcp",
                "--",
                "tool",
                "--api-key",
                REDACTED,
                "TOKEN=[REDACTED]",
                "https://u:[REDACTED]@h"
            ]
        );
    }

    #[test]
    fn scrub_borrows_unless_it_changes_something() {
        let redactor = Redactor::new();
        assert!(matches!(
            redactor.scrub("https://example.com/?q=1"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            redactor.scrub("token=[REDACTED]"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(redactor.scrub("token=abcd"), Cow::Owned(_)));
    }

    const TRICKY: [&str; 24] = [
        "",
        "é",
        "://",
        "é://ü@ö",
        "https://ü:ß@ö/?sig=é#code=ñ",
        "https://日本:語@例え.jp/パス?token=値&x=y",
        "Bearer 日本語",
        "bearer\u{3000}x",
        "BEARER",
        "?token=",
        "#=&=?=",
        "token=\"unterminated",
        "cookie:\"",
        "Authorization:",
        "🙂=🙂 🙂token=🙂",
        "--token=🙂",
        "-p🙂",
        "-🙂",
        "-e",
        "--header=",
        "x://@",
        "a://b@c:d@e",
        "\u{0}\u{7f}token=\u{1}",
        "ℹ️?key=ℹ️&sig=\u{200b}",
    ];

    #[test]
    fn tricky_text_never_panics_and_scrubbing_is_idempotent() {
        let redactor = Redactor::new()
            .secret_flag("-p")
            .secret_value("🙂")
            .secret_value("é");
        for text in TRICKY {
            let once = redactor.scrub(text).into_owned();
            assert_eq!(redactor.scrub(&once), once, "{text:?}");
            let args: Vec<&str> = TRICKY.iter().copied().chain([text]).collect();
            let out = redactor.redact_args(&args);
            assert_eq!(out.args.len(), args.len());
        }
        // Every suffix and prefix at every char boundary, to exercise cut-off patterns.
        for text in TRICKY {
            for (at, _) in text.char_indices() {
                let _ = redactor.scrub(&text[at..]);
                let _ = redactor.scrub(&text[..at]);
                let _ = redactor.redact_args(&["--token", &text[at..], &text[..at]]);
            }
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn scrub_never_panics_and_is_idempotent(
                text in r"[ a-zA-Z0-9:/?#@=&%+;,\x22'\[\]\-_.é日🙂\t\r\n]{0,64}",
            ) {
                let redactor = Redactor::new().secret_value("a日").secret_flag("-p");
                let once = redactor.scrub(&text).into_owned();
                prop_assert_eq!(redactor.scrub(&once).into_owned(), once);
                let _ = redactor.redact_args(&text.split(' ').collect::<Vec<_>>());
            }

            #[test]
            fn a_canary_after_a_secret_flag_never_survives(
                before in r"[a-z0-9 =:/?&-]{0,20}",
                flag in prop::sample::select(SENSITIVE_NAME_PARTS.to_vec()),
                attached in any::<bool>(),
            ) {
                let redactor = Redactor::new();
                let mut args: Vec<String> = before.split(' ').map(str::to_owned).collect();
                if attached {
                    args.push(format!("--{flag}={CANARY}"));
                } else {
                    args.push(format!("--{flag}"));
                    args.push(CANARY.to_owned());
                }
                let out = redactor.redact_args(&args);
                prop_assert!(out.redacted);
                prop_assert!(out.args.iter().all(|a| !a.contains(CANARY)));
            }
        }
    }

    #[test]
    fn fingerprints_are_sha256_hex_and_unambiguous() {
        assert_eq!(
            input_fingerprint(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let fingerprint = args_fingerprint(&["search", "agent"]);
        let hex = fingerprint.strip_prefix("sha256:").unwrap_or_default();
        assert_eq!(hex.len(), 64);
        assert!(hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_eq!(
            fingerprint,
            args_fingerprint(&["search".to_owned(), "agent".to_owned()])
        );
        let ab_c = args_fingerprint(&["ab", "c"]);
        assert_ne!(ab_c, args_fingerprint(&["a", "bc"]));
        assert_ne!(ab_c, args_fingerprint(&["abc"]));
        assert_ne!(args_fingerprint::<&str>(&[]), args_fingerprint(&[""]));
        // Length-prefixed, not a hash of the concatenation.
        assert_ne!(args_fingerprint(&["abc"]), input_fingerprint(b"abc"));
    }

    #[test]
    fn an_echo_is_judged_by_what_redaction_would_still_hide() {
        let r = Redactor::new();
        // Raw values the §11 patterns name: a flag's value, attached or separate, URL
        // credentials, a secret query key, a header.
        let raw = [
            &["search", "--token", CANARY][..],
            &["--password=hunter2"],
            &["--client-secret", CANARY],
            &["https://alice:hunter2@example.com/docs"],
            &["https://example.com/d?sv=2024&sig=Zm9vYmFy"],
            &["--header", "Authorization: Bearer abc.def"],
        ];
        for args in raw {
            assert!(!r.unredacted_args(args).is_empty(), "{args:?} passed");
        }
        // Already hidden, by the SDK's marker or another, or nothing sensitive at all.
        let hidden = [
            &["search", "--token", REDACTED][..],
            &["--api-key=[REDACTED]", "agent"],
            &["--token", "***"],
            &["--password=<redacted>"],
            &["--token="],
            &["https://example.com/d?sv=2024&sig=[REDACTED]"],
            &["search", "agent operable", "--limit", "2"],
            &["https://example.com/docs?page=2"],
        ];
        for args in hidden {
            assert_eq!(r.unredacted_args(args), Vec::<usize>::new(), "{args:?}");
        }
        assert_eq!(
            r.unredacted_args(&["a", "--token", "x1", "--limit", "2", "--key=v"]),
            [2, 5]
        );
    }
}
