//! Names and contents are data, and a terminal never acts on them: every human output shows
//! ESC, C1 controls (U+0085, the one-byte CSI U+009B) and Unicode's bidi controls (U+202E
//! right-to-left override, U+2066 left-to-right isolate, U+200F right-to-left mark; Trojan
//! Source, CVE-2021-42574) escaped, through the SDK's one escaper (`aoi::surface::term`).
//! Names are escaped wherever they are shown; what a file holds is escaped when it reaches a
//! terminal, and is the file's bytes on a pipe (`cat a > b` copies).

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
fn names_are_shown_escaped_by_every_command_that_lists_them() {
    let s = hostile_tree();
    for args in [
        &["ls", "d"][..],
        &["ls", "-l", "d"],
        &["find", "d"],
        &["du", "-a", "d"],
        &["grep", "-rl", "needle", "d"],
        &["grep", "-rc", "needle", "d"],
    ] {
        let out = run(&s.0, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert_shown_escaped(&args.join(" "), &String::from_utf8_lossy(&out.stdout));
    }
    let names: Vec<String> = std::fs::read_dir(s.path("d"))
        .unwrap()
        .map(|e| format!("d/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    let mut stat = vec!["stat"];
    stat.extend(names.iter().map(String::as_str));
    let out = run(&s.0, &stat);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_shown_escaped("stat", &String::from_utf8_lossy(&out.stdout));
}

#[test]
fn matched_lines_and_errors_are_shown_escaped() {
    let s = hostile_tree();
    let out = run(&s.0, &["grep", "-rn", "needle", "d"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_shown_escaped("grep -rn", &text);
    assert_eq!(text.lines().count(), 4, "{text}");
    // A missing operand's name comes back in the error on stderr.
    let out = run(&s.0, &["cat", "no\u{202e}such\u{9b}"]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no\\u{202e}such\\u{9b}"), "{err}");
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
