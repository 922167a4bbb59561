//! Names and contents are data, and a terminal never acts on them: every human output shows
//! ESC, C1 controls (U+0085, the one-byte CSI U+009B) and Unicode's bidi controls (U+202E
//! right-to-left override, U+2066 left-to-right isolate, U+200F right-to-left mark; Trojan
//! Source, CVE-2021-42574) escaped, through the SDK's one escaper (`aoi::surface::term`).
//! What reaches a terminal is escaped, names and contents, even where GNU would write the bytes
//! raw (a deliberate difference, crates/aoi-coreutils/COMPAT.md); on a pipe human mode is GNU's
//! bytes (`cat a > b` copies, `find | xargs` gets the names, `grep x f | cut` the lines).

use crate::support::{bin, run, Scratch};

/// The characters no terminal may receive from data.
const HOSTILE: [char; 6] = [
    '\u{1b}', '\u{85}', '\u{9b}', '\u{200f}', '\u{202e}', '\u{2066}',
];

/// A tree whose names and contents carry every hostile character: `exe\u{202e}gpj.txt` reads
/// as `exetxt.jpg` on a terminal that obeys the override.
fn hostile_tree() -> Scratch {
    let s = Scratch::new("hostile");
    let body = "needle \u{202e}evil\u{2066} \u{9b}2J \u{1b}[31mred \u{85}nel \u{200f}rlm\n";
    s.file("d/exe\u{202e}gpj.txt", body.as_bytes());
    s.file("d/iso\u{2066}late\u{200f}.txt", body.as_bytes());
    s.file("d/csi\u{9b}2J\u{85}.txt", body.as_bytes());
    s.file("d/esc\u{1b}[31m.txt", body.as_bytes());
    s
}

fn assert_shown_escaped(what: &str, text: &str) {
    for c in HOSTILE {
        assert!(
            !text.contains(c),
            "{what}: {c:?} reached the reader:\n{text}"
        );
    }
    assert!(
        text.contains(r"\u{202e}"),
        "{what}: the override is not shown:\n{text}"
    );
}

#[test]
fn names_are_shown_escaped_on_a_terminal_by_every_command_that_lists_them() {
    let s = hostile_tree();
    let names: Vec<String> = std::fs::read_dir(s.path("d"))
        .unwrap()
        .map(|e| format!("d/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    let mut stat = vec!["stat"];
    stat.extend(names.iter().map(String::as_str));
    for args in [
        &["ls", "d"][..],
        &["ls", "-l", "d"],
        &["find", "d"],
        &["du", "-a", "d"],
        &["grep", "-rl", "needle", "d"],
        &["grep", "-rc", "needle", "d"],
        &stat,
    ] {
        let Some((code, shown)) = aoi_test::on_terminal(&bin(), args, &[("NO_COLOR", "1")], &s.0)
        else {
            return;
        };
        assert_eq!(code, Some(0), "{args:?} on a terminal: {shown}");
        assert_shown_escaped(&format!("{args:?} on a terminal"), &shown);
    }
    // On a pipe, human mode is GNU's bytes: `find d | xargs ...` gets the names as they are.
    let ours = run(&s.0, &["find", "d"]);
    let theirs = std::process::Command::new("find")
        .arg("d")
        .current_dir(&s.0)
        .output()
        .expect("GNU find runs");
    let sorted = |b: &[u8]| {
        let mut lines: Vec<&[u8]> = b.split(|c| *c == b'\n').collect();
        lines.sort();
        lines.into_iter().map(<[u8]>::to_vec).collect::<Vec<_>>()
    };
    assert_eq!(sorted(&ours.stdout), sorted(&theirs.stdout));
}

#[test]
fn matched_lines_and_errors_are_shown_escaped() {
    let s = hostile_tree();
    // On a terminal, grep's names and lines are shown escaped.
    if let Some((code, shown)) = aoi_test::on_terminal(
        &bin(),
        &["grep", "-rn", "needle", "d"],
        &[("NO_COLOR", "1")],
        &s.0,
    ) {
        assert_eq!(code, Some(0), "{shown}");
        assert_shown_escaped("grep -rn on a terminal", &shown);
        assert_eq!(
            shown.lines().filter(|l| l.contains("needle")).count(),
            4,
            "{shown}"
        );
    }
    // On a pipe they are GNU grep's bytes (`grep x f | cut ...` gets the lines as they are).
    let ours = run(&s.0, &["grep", "-rn", "needle", "d"]);
    let theirs = std::process::Command::new("grep")
        .args(["-rn", "needle", "d"])
        .current_dir(&s.0)
        .env("LC_ALL", "C")
        .output()
        .expect("GNU grep runs");
    let sorted = |b: &[u8]| {
        let mut lines: Vec<Vec<u8>> = b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect();
        lines.sort();
        lines
    };
    assert_eq!(ours.status.code(), Some(0));
    assert_eq!(sorted(&ours.stdout), sorted(&theirs.stdout));
    // A missing operand's name comes back in the error on stderr, quoted as GNU quotes it
    // (`$'no\xE2\x80\xAEsuch\xC2\x9B'`): no hostile character reaches the reader.
    let out = run(&s.0, &["cat", "no\u{202e}such\u{9b}"]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("cat: ") && err.contains("No such file"),
        "{err}"
    );
    for c in HOSTILE {
        assert!(!err.contains(c), "{c:?} in {err}");
    }
}

#[test]
fn contents_are_bytes_on_a_pipe_and_shown_escaped_on_a_terminal() {
    let s = hostile_tree();
    let file = "d/exe\u{202e}gpj.txt";
    let body = std::fs::read(s.path(file)).unwrap();
    let piped = run(&s.0, &["cat", file]);
    assert_eq!(piped.stdout, body, "cat on a pipe copies the bytes");
    for args in [
        &["cat", file][..],
        &["head", "-n", "1", file],
        &["tail", "-n", "1", file],
        &["wc", file],
        &["head", file, "d/esc\u{1b}[31m.txt"],
    ] {
        let Some((code, shown)) = aoi_test::on_terminal(&bin(), args, &[("NO_COLOR", "1")], &s.0)
        else {
            return;
        };
        assert_eq!(code, Some(0), "{args:?} on a terminal: {shown}");
        assert_shown_escaped(&format!("{args:?} on a terminal"), &shown);
    }
}
