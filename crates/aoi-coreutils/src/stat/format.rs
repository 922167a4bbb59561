//! GNU `stat`'s `--format`/`-c`, `--printf` and `--terse`: the directives of coreutils 9's
//! manual for files (`%a %A %b %B %C %d %D %f %F %g %G %h %i %m %n %N %o %s %t %T %u %U %w %W
//! %x %X %y %Y %z %Z %%`), each with printf's flags, width and precision (`%-10n`, `%08s`,
//! `%.3Y` for sub-second times), and `--printf`'s backslash escapes (`\n`, `\t`, `\\`, `\"`,
//! `\NNN` octal, `\xHH`). A directive GNU has that needs what this crate does not read (`%C`,
//! the SELinux context; `%m`, the mount point) prints `?`, as GNU does where it cannot tell.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::time::UNIX_EPOCH;

use super::{device_numbers, time_text, type_name};
use crate::entry::Entry;

/// GNU's `--terse` format.
pub const TERSE: &str = "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %W %o";

/// `format` applied to the file `entry` describes (`m` its metadata); `escapes`: `--printf`'s
/// backslash escapes are read. The bytes, a name as it is.
pub fn render(format: &str, entry: &Entry, m: &Metadata, escapes: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(format.len() + 32);
    let chars: Vec<char> = format.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c == '\\' && escapes {
            i = escape(&chars, i, &mut out);
            continue;
        }
        if c != '%' {
            push_char(&mut out, c);
            continue;
        }
        // %[flags][width][.precision]directive
        let start = i;
        while chars.get(i).is_some_and(|c| "-+ #0'".contains(*c)) {
            i += 1;
        }
        let flags: String = chars[start..i].iter().collect();
        let width_start = i;
        while chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        let width: usize = chars[width_start..i]
            .iter()
            .collect::<String>()
            .parse()
            .unwrap_or(0);
        let mut precision = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            let p_start = i;
            while chars.get(i).is_some_and(char::is_ascii_digit) {
                i += 1;
            }
            precision = Some(
                chars[p_start..i]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .unwrap_or(0),
            );
        }
        let Some(&directive) = chars.get(i) else {
            // A `%` at the end stands for itself.
            out.push(b'%');
            out.extend(chars[start..].iter().collect::<String>().bytes());
            break;
        };
        i += 1;
        let value = directive_value(directive, entry, m, precision);
        let padded = pad(&value, &flags, width, directive);
        out.extend_from_slice(&padded);
    }
    out
}

/// What a directive stands for: a number (padded as a number) or text.
enum Value {
    Number(String),
    Text(Vec<u8>),
}

fn directive_value(d: char, entry: &Entry, m: &Metadata, precision: Option<usize>) -> Value {
    let number = |n: u64| Value::Number(n.to_string());
    let text = |s: &str| Value::Text(s.as_bytes().to_vec());
    let epoch = |secs: i64, nanos: i64| -> Value {
        match precision {
            Some(p) if p > 0 => {
                let digits = format!("{nanos:09}");
                let mut frac: String = digits.chars().take(p.min(9)).collect();
                while frac.len() < p {
                    frac.push('0');
                }
                Value::Number(format!("{secs}.{frac}"))
            }
            _ => Value::Number(secs.to_string()),
        }
    };
    let (rmajor, rminor) = device_numbers(m.rdev());
    let birth = m
        .created()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok());
    match d {
        'a' => Value::Number(format!("{:o}", m.mode() & 0o7777)),
        'A' => text(&entry.permissions),
        'b' => number(m.blocks()),
        'B' => number(512),
        'C' | 'm' => text("?"),
        'd' => number(m.dev()),
        'D' => Value::Number(format!("{:x}", m.dev())),
        'f' => Value::Number(format!("{:x}", m.mode())),
        'F' => text(type_name(entry.kind, m.len())),
        'g' => number(u64::from(m.gid())),
        'G' => text(&entry.group),
        'h' => number(m.nlink()),
        'i' => number(m.ino()),
        'n' => Value::Text(entry.path.as_bytes().to_vec()),
        'N' => {
            let mut quoted = quote(&entry.path);
            if let Some(target) = &entry.target {
                quoted.push_str(" -> ");
                quoted.push_str(&quote(target));
            }
            Value::Text(quoted.into_bytes())
        }
        'o' => number(m.blksize()),
        's' => number(m.len()),
        't' => Value::Number(format!("{rmajor:x}")),
        'T' => Value::Number(format!("{rminor:x}")),
        'u' => number(u64::from(m.uid())),
        'U' => text(&entry.owner),
        'w' => text(&birth.map_or_else(
            || "-".to_owned(),
            |b| time_text(b.as_secs() as i64, i64::from(b.subsec_nanos())),
        )),
        'W' => birth.map_or_else(
            || Value::Number("0".into()),
            |b| epoch(b.as_secs() as i64, i64::from(b.subsec_nanos())),
        ),
        'x' => text(&time_text(m.atime(), m.atime_nsec())),
        'X' => epoch(m.atime(), m.atime_nsec()),
        'y' => text(&time_text(m.mtime(), m.mtime_nsec())),
        'Y' => epoch(m.mtime(), m.mtime_nsec()),
        'z' => text(&time_text(m.ctime(), m.ctime_nsec())),
        'Z' => epoch(m.ctime(), m.ctime_nsec()),
        '%' => text("%"),
        // GNU prints `?` for a directive it does not know.
        _ => text("?"),
    }
}

/// GNU's default quoting of a name in `%N` (`shell-escape-always`): `'a b'`, a `'` inside as
/// `'\''`.
fn quote(name: &str) -> String {
    format!("'{}'", name.replace('\'', r"'\''"))
}

/// printf's width and flags (`-` left, `0` zeros for numbers, `+`/` ` signs for the signed
/// ones, the times since the epoch; GNU prints the others unsigned).
fn pad(value: &Value, flags: &str, width: usize, directive: char) -> Vec<u8> {
    let (body, numeric) = match value {
        Value::Number(n) => (n.clone().into_bytes(), true),
        Value::Text(t) => (t.clone(), false),
    };
    let mut body = body;
    if numeric && matches!(directive, 'W' | 'X' | 'Y' | 'Z') {
        if flags.contains('+') {
            body.insert(0, b'+');
        } else if flags.contains(' ') {
            body.insert(0, b' ');
        }
    }
    let len = String::from_utf8_lossy(&body).chars().count();
    if len >= width {
        return body;
    }
    let fill = width - len;
    if flags.contains('-') {
        body.extend(std::iter::repeat_n(b' ', fill));
        body
    } else if flags.contains('0') && numeric {
        let sign = usize::from(body.first().is_some_and(|b| *b == b'+' || *b == b' '));
        let mut out = body[..sign].to_vec();
        out.extend(std::iter::repeat_n(b'0', fill));
        out.extend_from_slice(&body[sign..]);
        out
    } else {
        let mut out = vec![b' '; fill];
        out.extend_from_slice(&body);
        out
    }
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// Reads the escape whose `\` was just read (`i` after it) into `out`; the index after it.
fn escape(chars: &[char], mut i: usize, out: &mut Vec<u8>) -> usize {
    let Some(&c) = chars.get(i) else {
        out.push(b'\\');
        return i;
    };
    i += 1;
    let byte = match c {
        'a' => 7,
        'b' => 8,
        'e' => 0x1b,
        'f' => 12,
        'n' => b'\n',
        'r' => b'\r',
        't' => b'\t',
        'v' => 11,
        '\\' => b'\\',
        '"' => b'"',
        '\'' => b'\'',
        '0'..='7' => {
            let mut value = c.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match chars.get(i).and_then(|d| d.to_digit(8)) {
                    Some(d) => {
                        value = value * 8 + d;
                        i += 1;
                    }
                    None => break,
                }
            }
            (value & 0xff) as u8
        }
        'x' => {
            let mut value = 0u32;
            let mut digits = 0;
            while digits < 2 {
                match chars.get(i).and_then(|d| d.to_digit(16)) {
                    Some(d) => {
                        value = value * 16 + d;
                        i += 1;
                        digits += 1;
                    }
                    None => break,
                }
            }
            if digits == 0 {
                out.extend_from_slice(b"\\x");
                return i;
            }
            value as u8
        }
        // GNU drops the backslash of an escape it does not know (and warns).
        other => {
            push_char(out, other);
            return i;
        }
    };
    out.push(byte);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_flags_and_escapes_are_printfs() {
        let n = |s: &str| Value::Number(s.into());
        assert_eq!(pad(&n("26"), "", 6, 's'), b"    26");
        assert_eq!(pad(&n("26"), "-", 6, 's'), b"26    ");
        assert_eq!(pad(&n("644"), "0", 5, 'a'), b"00644");
        assert_eq!(pad(&n("5"), "+", 0, 'Y'), b"+5");
        assert_eq!(pad(&n("5"), "+", 0, 's'), b"5");
        assert_eq!(pad(&Value::Text(b"ab".to_vec()), "0", 4, 'n'), b"  ab");
        let mut out = Vec::new();
        let chars: Vec<char> = r"n\101x41\q".chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] == '\\' {
                i = escape(&chars, i + 1, &mut out);
            } else {
                push_char(&mut out, chars[i]);
                i += 1;
            }
        }
        assert_eq!(out, b"nAx41q");
    }
}
