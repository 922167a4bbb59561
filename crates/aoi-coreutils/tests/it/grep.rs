//! `grep`: matches with valid offsets, windows of long lines, bytes that are not UTF-8,
//! bounds and cursors across files (§15), item errors (§9.1), binary and ignored files, and
//! agreement with GNU grep.

use std::collections::BTreeSet;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use crate::support::{bin, machine, of_type, parse, run, run_unprivileged, summary, Scratch};

/// `(path, line_number)` of every `match` event.
fn hits(events: &[Value]) -> Vec<(String, u64)> {
    of_type(events, "match")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["line_number"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Checks that every submatch of `event` indexes its text (or decoded bytes) and returns the
/// matched pieces.
fn submatch_texts(event: &Value) -> Vec<Vec<u8>> {
    let bytes = match event["text"].as_str() {
        Some(text) => text.as_bytes().to_vec(),
        None => STANDARD
            .decode(
                event["bytes_base64"]
                    .as_str()
                    .expect("text or bytes_base64"),
            )
            .unwrap(),
    };
    event["submatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let (start, end) = (
                s["start"].as_u64().unwrap() as usize,
                s["end"].as_u64().unwrap() as usize,
            );
            let piece = bytes[start..end].to_vec();
            if let Some(text) = s["text"].as_str() {
                assert_eq!(text.as_bytes(), &piece[..], "{event}");
            }
            piece
        })
        .collect()
}

#[test]
fn submatch_offsets_index_the_text_even_in_a_window_of_a_long_line() {
    let s = Scratch::new("grep-offsets");
    s.file("short.txt", "naïve café: Needle and needle\n".as_bytes());
    // A 100 KB line of two- and three-byte characters with the match deep inside.
    let long = format!("{}Needle{}\n", "é漢".repeat(10_500), "ü€".repeat(10_500));
    assert!(long.len() > 100_000);
    s.file("long.txt", long.as_bytes());
    let (code, events) = machine(&s.0, &["grep", "-i", "needle"]);
    assert_eq!(code, 0);
    let matches = of_type(&events, "match");
    assert_eq!(matches.len(), 2);
    let long_event = matches.iter().find(|e| e["path"] == "long.txt").unwrap();
    assert_eq!(long_event["line_truncated"], true);
    let text = long_event["text"].as_str().unwrap();
    assert!(
        text.len() <= 500,
        "default --max-columns 500: {}",
        text.len()
    );
    let start = long_event["window_start"].as_u64().unwrap() as usize;
    assert_eq!(&long.as_bytes()[start..start + text.len()], text.as_bytes());
    assert_eq!(submatch_texts(long_event), vec![b"Needle".to_vec()]);
    let short = matches.iter().find(|e| e["path"] == "short.txt").unwrap();
    assert_eq!(short["line_truncated"], false);
    assert_eq!(
        submatch_texts(short),
        vec![b"Needle".to_vec(), b"needle".to_vec()]
    );
    assert_eq!(short["submatches"][0]["start"], 14, "bytes, not characters");

    // A narrower window still holds the match; 0 lifts the limit.
    let (_, events) = machine(&s.0, &["grep", "--max-columns", "40", "Needle", "long.txt"]);
    let e = of_type(&events, "match")[0];
    assert!(e["text"].as_str().unwrap().len() <= 40);
    assert_eq!(submatch_texts(e), vec![b"Needle".to_vec()]);
    let (_, events) = machine(&s.0, &["grep", "--max-columns", "0", "Needle", "long.txt"]);
    let e = of_type(&events, "match")[0];
    assert_eq!(e["line_truncated"], false);
    assert_eq!(e["text"].as_str().unwrap(), long.trim_end());
}

#[test]
fn a_line_that_is_not_utf8_comes_as_its_exact_bytes() {
    let s = Scratch::new("grep-bytes");
    let line: &[u8] = b"caf\xe9 \xff\xfe TODO \xc3(";
    let mut body = b"first\n".to_vec();
    body.extend_from_slice(line);
    body.extend_from_slice(b"\nlast TODO\n");
    s.file("latin1.txt", &body);
    let (code, events) = machine(&s.0, &["grep", "TODO", "latin1.txt"]);
    assert_eq!(code, 0);
    let matches = of_type(&events, "match");
    assert_eq!(matches.len(), 2);
    assert!(matches[0].get("text").is_none());
    let decoded = STANDARD
        .decode(matches[0]["bytes_base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, line);
    assert_eq!(matches[0]["byte_offset"], 6);
    assert_eq!(submatch_texts(matches[0]), vec![b"TODO".to_vec()]);
    assert_eq!(matches[1]["text"], "last TODO");
}

#[test]
fn paging_across_files_visits_every_match_once_in_a_deterministic_order() {
    let s = Scratch::new("grep-pages");
    let mut expected = Vec::new();
    for f in ["b.txt", "a/z.txt", "a/b/c.txt", "a-b.txt", "c.txt"] {
        let mut body = String::new();
        for line in 1..=23u64 {
            if line % 3 == 0 {
                body.push_str("a match here\n");
                expected.push((f.to_owned(), line));
            } else {
                body.push_str("nothing\n");
            }
        }
        s.file(f, body.as_bytes());
    }
    // Path order, component by component: a/b/c.txt < a/z.txt < a-b.txt < b.txt < c.txt.
    expected.sort_by(|x, y| {
        std::path::Path::new(&x.0)
            .cmp(std::path::Path::new(&y.0))
            .then(x.1.cmp(&y.1))
    });
    let whole = machine(&s.0, &["grep", "match", "--limit", "1000"]).1;
    assert_eq!(hits(&whole), expected);
    assert_eq!(
        machine(&s.0, &["grep", "match", "--limit", "1000"]).1.len(),
        whole.len()
    );
    for bound in [&["--limit", "4"][..], &["--max-bytes", "700"]] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut args = vec!["grep", "match"];
            args.extend_from_slice(bound);
            if let Some(c) = &cursor {
                args.extend(["--cursor", c.as_str()]);
            }
            let (code, events) = machine(&s.0, &args);
            assert_eq!(code, 0);
            pages += 1;
            let page = hits(&events);
            assert!(!page.is_empty(), "every page makes progress");
            seen.extend(page);
            let sum = summary(&events);
            match sum["next_cursor"].as_str() {
                Some(c) => {
                    assert_eq!(sum["truncated"], true);
                    cursor = Some(c.to_owned());
                }
                None => {
                    assert_eq!(sum["truncated"], false);
                    break;
                }
            }
        }
        assert_eq!(seen, expected, "{bound:?}");
        assert!(pages > 3, "{bound:?}: {pages}");
    }
    // A cursor for another pattern is refused.
    let first = machine(&s.0, &["grep", "match", "--limit", "2"]).1;
    let cursor = summary(&first)["next_cursor"].as_str().unwrap().to_owned();
    let (code, events) = machine(&s.0, &["grep", "here", "--cursor", &cursor]);
    assert_ne!(code, 0);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "CURSOR_MISMATCH");
}

#[test]
fn context_lines_surround_matches() {
    let s = Scratch::new("grep-context");
    let body: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    s.file("f.txt", body.as_bytes());
    let lines = |args: &[&str]| {
        let (_, events) = machine(&s.0, &[&["grep"][..], args, &["f.txt"]].concat());
        events
            .iter()
            .filter(|e| e["type"] == "match" || e["type"] == "context")
            .map(|e| {
                let n = e["line_number"].as_u64().unwrap();
                assert_eq!(e["text"], format!("line {n}"));
                if e["type"] == "match" {
                    format!("{n}:")
                } else {
                    format!("{n}-")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(lines(&["-C", "1", "line [49]$"]), "3- 4: 5- 8- 9: 10-");
    assert_eq!(lines(&["-A", "2", "line 11"]), "11: 12-");
    assert_eq!(lines(&["-B", "2", "line 2$"]), "1- 2:");
    let (_, events) = machine(&s.0, &["grep", "-C", "1", "line 5", "f.txt"]);
    let ctx = of_type(&events, "context");
    assert_eq!(
        ctx[0]["byte_offset"], 21,
        "line 4: the line's start in the file"
    );
    // Human mode: GNU's separators.
    let out = run(&s.0, &["grep", "-n", "-C", "1", "line [49]$", "f.txt"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "3-line 3\n4:line 4\n5-line 5\n--\n8-line 8\n9:line 9\n10-line 10\n"
    );
}

#[test]
fn the_largest_context_counts_are_taken_as_the_whole_file() {
    let s = Scratch::new("grep-context-max");
    s.file("f.txt", b"a\nb\nc\n");
    let max = u64::MAX.to_string();
    let out = run(&s.0, &["grep", "-A", &max, "-B", &max, "b", "f.txt"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nb\nc\n");
}

#[test]
fn invert_word_case_and_fixed_strings_select_as_grep_does() {
    let s = Scratch::new("grep-flags");
    s.file("f.txt", b"foo\nfoobar\nFOO bar\na.c\nabc\n");
    let lines = |args: &[&str]| -> Vec<u64> {
        let (code, events) = machine(&s.0, &[&["grep"][..], args, &["f.txt"]].concat());
        assert_eq!(code, 0);
        hits(&events).into_iter().map(|(_, n)| n).collect()
    };
    assert_eq!(lines(&["foo"]), [1, 2]);
    assert_eq!(lines(&["-i", "foo"]), [1, 2, 3]);
    assert_eq!(lines(&["-w", "foo"]), [1]);
    assert_eq!(lines(&["-i", "-w", "foo"]), [1, 3]);
    assert_eq!(lines(&["-v", "foo"]), [3, 4, 5]);
    assert_eq!(lines(&["a.c"]), [4, 5]);
    assert_eq!(lines(&["-F", "a.c"]), [4]);
    let (_, events) = machine(&s.0, &["grep", "-v", "foo", "f.txt"]);
    assert!(of_type(&events, "match")
        .iter()
        .all(|e| e["submatches"].as_array().unwrap().is_empty()));
    let (_, events) = machine(&s.0, &["grep", "-i", "-w", "foo", "f.txt"]);
    let texts: Vec<Vec<u8>> = of_type(&events, "match")
        .iter()
        .flat_map(|e| submatch_texts(e))
        .collect();
    assert_eq!(texts, vec![b"foo".to_vec(), b"FOO".to_vec()]);
}

#[test]
fn counts_and_file_names_are_events_of_their_own() {
    let s = Scratch::new("grep-count");
    s.file("a.txt", b"x\nx\ny\n");
    s.file("b.txt", b"y\n");
    s.file("c.txt", b"x\n");
    let (_, events) = machine(&s.0, &["grep", "-c", "x"]);
    let counts: Vec<(String, u64)> = of_type(&events, "file_count")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [("a.txt".to_owned(), 2), ("c.txt".to_owned(), 1)]);
    let (_, events) = machine(&s.0, &["grep", "-l", "x"]);
    let files: Vec<&str> = of_type(&events, "file_match")
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["a.txt", "c.txt"]);
    let (_, events) = machine(&s.0, &["grep", "--max-count", "1", "x"]);
    assert_eq!(
        hits(&events),
        [("a.txt".to_owned(), 1), ("c.txt".to_owned(), 1)]
    );
}

#[test]
fn an_unreadable_file_is_an_item_error_and_the_search_goes_on() {
    let s = Scratch::new("grep-unreadable");
    s.file("a.txt", b"secret TODO\n");
    s.file("b.txt", b"open TODO\n");
    s.lock("a.txt");
    let (code, events) = parse(&run_unprivileged(
        &s.0,
        &["grep", "TODO", "--output", "jsonl"],
    ));
    assert_eq!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["scope"], "item");
    assert_eq!(errors[0]["category"], "authz");
    assert_eq!(errors[0]["target"], "a.txt");
    assert_eq!(hits(&events), [("b.txt".to_owned(), 1)]);
    assert_eq!(summary(&events)["partial"], true);
    assert_eq!(summary(&events)["ok"], true);
    // Human mode: the error on stderr, exit 2 as GNU grep.
    let out = run_unprivileged(&s.0, &["grep", "-r", "TODO"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "b.txt:open TODO\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
}

#[test]
fn a_binary_file_is_reported_not_dumped() {
    let s = Scratch::new("grep-binary");
    s.file("blob.bin", b"TODO\x00\x01\x02 TODO more\n");
    s.file("text.txt", b"TODO\n");
    let (code, events) = machine(&s.0, &["grep", "TODO"]);
    assert_eq!(code, 0);
    assert_eq!(hits(&events), [("text.txt".to_owned(), 1)]);
    let binary = of_type(&events, "binary_file");
    assert_eq!(binary.len(), 1);
    assert_eq!(binary[0]["path"], "blob.bin");
    assert_eq!(binary[0]["byte_offset"], 4);
    // Human mode as GNU grep 3.8: the binary file's match said on stderr, not its lines.
    let out = run(&s.0, &["grep", "-r", "TODO"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "text.txt:TODO\n");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "grep: blob.bin: binary file matches\n"
    );
    assert_eq!(out.status.code(), Some(0));
}

/// A file of up to 2 MiB is read whole: the lines before the one holding its first NUL byte
/// are searched wherever the NUL is, not only those before a 64 KiB block that holds it.
#[test]
fn a_late_nul_stops_the_search_at_its_line() {
    let s = Scratch::new("grep-late-nul");
    let mut blob = b"TODO first\n".to_vec();
    blob.extend(b"filler line\n".repeat(7_000)); // 84 KB: past the first 64 KiB block
    blob.extend(b"TODO before the nul\n");
    let line_of_nul = blob.len();
    blob.extend(b"TODO \x00 on the nul line\nTODO after\n");
    s.file("late.bin", &blob);
    let (code, events) = machine(&s.0, &["grep", "TODO"]);
    assert_eq!(code, 0);
    assert_eq!(
        hits(&events),
        [("late.bin".to_owned(), 1), ("late.bin".to_owned(), 7_002)]
    );
    let binary = of_type(&events, "binary_file");
    assert_eq!(binary.len(), 1);
    assert_eq!(binary[0]["byte_offset"], line_of_nul + 5);
}

/// A file of about `size` bytes, searched in several pieces: "needle" on lines of every
/// length, on the line that crosses the first 256 KiB piece's end and at the end of a line
/// longer than a piece.
fn pieced_file(size: usize) -> Vec<u8> {
    let mut blob = Vec::new();
    let mut n: u64 = 0;
    while blob.len() < size {
        n += 1;
        let len = (n * 7919) % 97;
        let mut line = vec![b'a' + (n % 26) as u8; len as usize];
        if n.is_multiple_of(211) {
            line.extend(b" needle");
        }
        if blob.len() < 262_100 && blob.len() + line.len() + 60 > 262_144 {
            // The line that holds the piece's end: the match sits across it.
            line = vec![b'z'; 262_144 - blob.len() - 3];
            line.extend(b"needle across the piece's end");
        }
        if n == 9_000 {
            line = vec![b'y'; 300_000];
            line.extend(b" needle at the end of a long line");
        }
        blob.extend(&line);
        blob.push(b'\n');
    }
    blob
}

/// Every way a file is searched: mapped whole (up to 2 MiB) or in pieces (larger), and with
/// `--no-mmap` read in pieces (up to 2 MiB) or by `grep-searcher` in blocks (larger).
#[test]
fn matches_across_pieces_have_gnu_grep_line_numbers_and_offsets() {
    let s = Scratch::new("grep-pieces");
    let lift = ["--limit", "1000000", "--max-bytes", "1000000000"];
    let gnu = |args: &[&str]| {
        let out = std::process::Command::new("grep")
            .args(args)
            .arg("big.txt")
            .current_dir(&s.0)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for size in [1_300_000, 2_300_000] {
        s.file("big.txt", &pieced_file(size));
        let expected: Vec<(u64, u64)> = gnu(&["-n", "-b", "needle"])
            .lines()
            .map(|l| {
                let mut parts = l.splitn(3, ':');
                let line = parts.next().unwrap().parse().unwrap();
                (line, parts.next().unwrap().parse().unwrap())
            })
            .collect();
        assert!(expected.len() > 50, "{}", expected.len());
        assert!(expected
            .iter()
            .any(|&(_, at)| at < 262_144 && at + 300 > 262_144));
        for read in [&[][..], &["--no-mmap"]] {
            let args = [&["grep", "needle", "big.txt"][..], read, &lift].concat();
            let (code, events) = machine(&s.0, &args);
            assert_eq!(code, 0);
            let ours: Vec<(u64, u64)> = of_type(&events, "match")
                .iter()
                .map(|e| {
                    (
                        e["line_number"].as_u64().unwrap(),
                        e["byte_offset"].as_u64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(ours, expected, "{size} {read:?}");
            // Counts with and without -v, across every piece.
            for flags in [&["-c"][..], &["-c", "-v"]] {
                let args = [&["grep"][..], flags, read, &["needle", "big.txt"], &lift].concat();
                let (_, events) = machine(&s.0, &args);
                let count = &of_type(&events, "file_count")[0]["count"];
                let want: u64 = gnu(&[flags, &["needle"][..]].concat())
                    .trim()
                    .parse()
                    .unwrap();
                assert_eq!(count.as_u64(), Some(want), "{size} {read:?} {flags:?}");
            }
        }
    }
}

/// Mapped and read (`--no-mmap`) alike.
#[test]
fn a_match_only_in_the_last_piece_is_found_and_a_nul_in_a_later_piece_stops_at_its_line() {
    let s = Scratch::new("grep-pieces-nul");
    let mut tail = b"x".repeat(200).to_vec();
    tail.push(b'\n');
    let mut last = tail.repeat(4_000); // 804 KB
    last.extend(b"the only TODO\n");
    s.file("last.txt", &last);
    let mut blob = Vec::new();
    for i in 0..3_000 {
        blob.extend(format!("TODO {i:04} {}\n", "f".repeat(190)).as_bytes());
    }
    // About 600 KB in: past two pieces.
    let line_of_nul = blob.len();
    blob.extend(b"TODO \x00 on the nul line\nTODO after\n");
    s.file("late.bin", &blob);
    let lift = ["--limit", "100000", "--max-bytes", "100000000"];
    for read in [&[][..], &["--no-mmap"]] {
        let grep = |args: &[&str]| machine(&s.0, &[&["grep"][..], read, args].concat());
        let (_, events) = grep(&["-l", "TODO", "last.txt"]);
        assert_eq!(of_type(&events, "file_match").len(), 1, "{read:?}");
        let (_, events) = grep(&["TODO", "last.txt"]);
        assert_eq!(hits(&events), [("last.txt".to_owned(), 4_001)], "{read:?}");

        let (code, events) = grep(&[&["TODO", "late.bin"][..], &lift].concat());
        assert_eq!(code, 0);
        let lines: Vec<u64> = hits(&events).into_iter().map(|(_, n)| n).collect();
        assert_eq!(lines, (1..=3_000).collect::<Vec<u64>>(), "{read:?}");
        let binary = of_type(&events, "binary_file");
        assert_eq!(binary.len(), 1, "{read:?}");
        assert_eq!(binary[0]["byte_offset"], line_of_nul + 5, "{read:?}");
        let (_, events) = grep(&["-c", "TODO", "late.bin"]);
        assert_eq!(
            of_type(&events, "file_count")[0]["count"],
            3_000,
            "{read:?}"
        );
    }
}

/// A NUL far into a line longer than a piece, the line begun in an earlier piece: the offset
/// is the NUL's in the file, the lines before it are searched, and the same holds when
/// context lines have the file searched whole, mapped or read.
#[test]
fn a_nul_in_a_line_carried_across_pieces_has_its_offset_in_the_file() {
    let s = Scratch::new("grep-carried-nul");
    let mut blob = Vec::new();
    for i in 0..1_000 {
        blob.extend(format!("TODO {i:04} {}\n", "g".repeat(150)).as_bytes());
    }
    blob.extend(b"TODO long ");
    blob.extend(b"h".repeat(400_000));
    let nul = blob.len();
    blob.extend(b"\x00 TODO\nTODO after\n");
    s.file("carried.bin", &blob);
    let lift = ["--limit", "100000", "--max-bytes", "100000000"];
    for read in [&[][..], &["--no-mmap"]] {
        for flags in [&[][..], &["-C", "1"]] {
            let args = [&["grep"][..], read, flags, &["TODO", "carried.bin"], &lift].concat();
            let (code, events) = machine(&s.0, &args);
            assert_eq!(code, 0, "{flags:?}");
            let lines: Vec<u64> = hits(&events).into_iter().map(|(_, n)| n).collect();
            assert_eq!(
                lines,
                (1..=1_000).collect::<Vec<u64>>(),
                "{read:?} {flags:?}"
            );
            let binary = of_type(&events, "binary_file");
            assert_eq!(binary.len(), 1, "{read:?} {flags:?}");
            assert_eq!(binary[0]["byte_offset"], nul, "{read:?} {flags:?}");
        }
    }
}

/// A mapped file (512 KiB or more) is cut at the line of its first NUL wherever the NUL is: in
/// the first look before the search, past the last match (found once the search is done), or
/// between matches; `-c` and `-l` count only the lines before it. `--no-mmap` agrees.
#[test]
fn a_mapped_file_is_cut_at_the_line_of_its_first_nul_wherever_it_is() {
    let s = Scratch::new("grep-mapped-nul");
    let filler = b"filler line without the word\n".repeat(25_000); // 725 KB
    let lift = ["--limit", "100000", "--max-bytes", "100000000"];
    let cases: [(&str, Vec<u8>, Vec<u64>); 3] = [
        (
            "early",
            [&b"TODO one\nTODO \x00\n"[..], &filler, b"TODO late\n"].concat(),
            vec![1],
        ),
        (
            "after",
            [&b"TODO one\n"[..], &filler, b"TODO two\n", b"x\x00\n"].concat(),
            vec![1, 25_002],
        ),
        (
            "between",
            [
                &b"TODO one\n"[..],
                &filler,
                b"\x00\n",
                &filler,
                b"TODO two\n",
            ]
            .concat(),
            vec![1],
        ),
    ];
    for (name, blob, want) in cases {
        let nul = blob.iter().position(|&b| b == 0).unwrap();
        s.file(name, &blob);
        for read in [&[][..], &["--no-mmap"]] {
            let grep = |args: &[&str]| machine(&s.0, &[&["grep"][..], read, args, &lift].concat());
            let (code, events) = grep(&["TODO", name]);
            assert_eq!(code, 0, "{name} {read:?}");
            let lines: Vec<u64> = hits(&events).into_iter().map(|(_, n)| n).collect();
            assert_eq!(lines, want, "{name} {read:?}");
            let binary = of_type(&events, "binary_file");
            assert_eq!(binary.len(), 1, "{name} {read:?}");
            assert_eq!(binary[0]["byte_offset"], nul, "{name} {read:?}");
            let (_, events) = grep(&["-c", "TODO", name]);
            let count = &of_type(&events, "file_count")[0]["count"];
            assert_eq!(count.as_u64(), Some(want.len() as u64), "{name} {read:?}");
            let (_, events) = grep(&["-l", "TODO", name]);
            assert_eq!(of_type(&events, "file_match").len(), 1, "{name} {read:?}");
        }
    }
}

/// A file another process cuts short while it is mapped (a log rotated by `copytruncate`):
/// the `SIGBUS` the cut raises does not kill the search; the file is an item error
/// `FILE_CHANGED` (`conflict`) with nothing read past the cut reported, and the walk goes on.
#[test]
fn a_file_cut_short_while_it_is_searched_is_an_item_error_not_a_crash() {
    let s = Scratch::new("grep-cut");
    s.file("b.txt", b"a TODO line\n");
    let log = s.path("a.log");
    let line = b"TODO a line of a log that is cut short while it is searched\n";
    // Searched in pieces (over 2 MiB), and whole (-m).
    for flags in [&["-c"][..], &["-c", "-m", "1000000000"]] {
        let mut cut_during_search = false;
        for _ in 0..20 {
            std::fs::write(&log, line.repeat(2_000_000)).unwrap(); // 120 MB
            let mut child = std::process::Command::new(bin())
                .args([&["grep"][..], flags, &["TODO", "--output", "jsonl"]].concat())
                .current_dir(&s.0)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let maps = format!("/proc/{}/maps", child.id());
            while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("/a.log"))
                && child.try_wait().unwrap().is_none()
            {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            std::fs::File::options()
                .write(true)
                .open(&log)
                .unwrap()
                .set_len(4096)
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.code().is_some(), "{flags:?}: {:?}", out.status);
            let (code, events) = parse(&out);
            let count_of = |path: &str| {
                of_type(&events, "file_count")
                    .iter()
                    .find(|e| e["path"] == path)
                    .map(|e| e["count"].as_u64().unwrap())
            };
            assert_eq!(count_of("b.txt"), Some(1), "{flags:?}");
            let errors = of_type(&events, "aoi:error");
            if errors.is_empty() {
                // The search ended before the cut.
                assert_eq!(count_of("a.log"), Some(2_000_000), "{flags:?}");
                continue;
            }
            assert_eq!(code, 0, "{flags:?}");
            assert_eq!(errors.len(), 1, "{events:?}");
            assert_eq!(errors[0]["code"], "FILE_CHANGED");
            assert_eq!(errors[0]["category"], "conflict");
            assert_eq!(errors[0]["scope"], "item");
            assert_eq!(errors[0]["target"], "a.log");
            assert_eq!(count_of("a.log"), None, "{flags:?}");
            assert_eq!(summary(&events)["partial"], true);
            cut_during_search = true;
            break;
        }
        assert!(
            cut_during_search,
            "no cut landed during a search: {flags:?}"
        );
    }
}

#[test]
fn a_gitignored_file_is_skipped_unless_no_ignore() {
    let s = Scratch::new("grep-ignore");
    std::fs::create_dir_all(s.path(".git")).unwrap();
    s.file(".gitignore", b"target/\n*.log\n");
    s.file("src/main.rs", b"TODO\n");
    s.file("target/out.rs", b"TODO\n");
    s.file("debug.log", b"TODO\n");
    s.file(".hidden/h.rs", b"TODO\n");
    let paths = |args: &[&str]| -> BTreeSet<String> {
        let (_, events) = machine(&s.0, &[&["grep", "TODO"][..], args].concat());
        hits(&events).into_iter().map(|(p, _)| p).collect()
    };
    assert_eq!(paths(&[]), BTreeSet::from(["src/main.rs".to_owned()]));
    assert_eq!(
        paths(&["--no-ignore"]),
        BTreeSet::from([
            "debug.log".to_owned(),
            "src/main.rs".to_owned(),
            "target/out.rs".to_owned()
        ])
    );
    assert!(paths(&["--hidden"]).contains(".hidden/h.rs"));
    assert_eq!(
        paths(&["--no-ignore", "--glob", "*.rs"]),
        BTreeSet::from(["src/main.rs".to_owned(), "target/out.rs".to_owned()])
    );
}

#[test]
fn the_matches_are_those_of_gnu_grep() {
    let s = Scratch::new("grep-gnu");
    let words = [
        "alpha", "beta", "gamma", "delta", "TODO", "todo", "fix_me", "x1",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for f in 0..30 {
        let mut body = String::new();
        for _ in 0..(next() % 60) {
            let n = next() % 8;
            let line: Vec<&str> = (0..n).map(|_| words[(next() % 8) as usize]).collect();
            body.push_str(&line.join(" "));
            body.push('\n');
        }
        s.file(&format!("t/d{}/f{f}.txt", f % 4), body.as_bytes());
    }
    for args in [
        &["TODO"][..],
        &["-i", "todo"],
        &["-w", "x1"],
        &["-v", "a"],
        &["-F", "fix_me"],
        &["-E", "^(alpha|beta) "],
    ] {
        let gnu = std::process::Command::new("grep")
            .arg("-rn")
            .args(args)
            .arg("t")
            .current_dir(&s.0)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let gnu_set: BTreeSet<(String, u64)> = String::from_utf8_lossy(&gnu.stdout)
            .lines()
            .map(|l| {
                let mut parts = l.splitn(3, ':');
                let path = parts.next().unwrap().to_owned();
                (path, parts.next().unwrap().parse().unwrap())
            })
            .collect();
        // The same flags in machine mode: GNU's patterns there too.
        let ours_args = args;
        let (code, events) = machine(
            &s.0,
            &[
                &["grep", "--limit", "100000", "--max-bytes", "100000000"][..],
                ours_args,
                &["t"],
            ]
            .concat(),
        );
        assert_eq!(code, 0);
        let ours = hits(&events);
        let ours_set: BTreeSet<(String, u64)> = ours.iter().cloned().collect();
        assert_eq!(ours.len(), ours_set.len(), "no repeats");
        assert!(!gnu_set.is_empty(), "{args:?}");
        assert_eq!(ours_set, gnu_set, "{args:?}");
        // Human mode prints the same lines (in path order rather than directory order).
        let human = run(&s.0, &[&["grep", "-rn"][..], args, &["t"]].concat());
        let mut ours_lines: Vec<String> = String::from_utf8_lossy(&human.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        let mut gnu_lines: Vec<String> = String::from_utf8_lossy(&gnu.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        ours_lines.sort();
        gnu_lines.sort();
        assert_eq!(ours_lines, gnu_lines, "{args:?}");
    }
}

#[test]
fn no_match_is_a_success_with_count_0_and_exit_1_for_a_person() {
    let s = Scratch::new("grep-none");
    s.file("f.txt", b"hello\n");
    let (code, events) = machine(&s.0, &["grep", "absent"]);
    assert_eq!(code, 0);
    assert_eq!(summary(&events)["ok"], true);
    assert_eq!(summary(&events)["count"], 0);
    assert_eq!(run(&s.0, &["grep", "-r", "absent"]).status.code(), Some(1));
    assert_eq!(run(&s.0, &["grep", "-r", "hello"]).status.code(), Some(0));
    // One file operand: no path prefix, as grep.
    assert_eq!(
        String::from_utf8_lossy(&run(&s.0, &["grep", "hello", "f.txt"]).stdout),
        "hello\n"
    );
    // A missing operand fails the run; a bad pattern is a usage error.
    let (code, events) = machine(&s.0, &["grep", "hello", "f.txt", "nope"]);
    assert_ne!(code, 0);
    assert_eq!(summary(&events)["ok"], false);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "not_found");
    assert_eq!(hits(&events).len(), 1);
    let (code, events) = machine(&s.0, &["grep", "-E", "(unclosed"]);
    assert_ne!(code, 0);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "PATTERN_INVALID");
}

#[test]
fn gnu_habits_grep_rn_e_and_e_patterns_are_understood() {
    let s = Scratch::new("grep-habits");
    s.file("src/a.rs", b"// TODO one\nfn main() {}\n// FIXME two\n");
    s.file("src/b.rs", b"-v is a flag\n");
    // `grep -rn` and `grep -E 'a|b'`: recursion is the default, patterns are extended.
    let (code, events) = machine(&s.0, &["grep", "-rn", "-E", "TODO|FIXME", "src"]);
    assert_eq!(code, 0);
    assert_eq!(
        hits(&events),
        [("src/a.rs".to_owned(), 1), ("src/a.rs".to_owned(), 3)]
    );
    // Several -e patterns, a pattern that starts with `-`, and the first word a path.
    let (code, events) = machine(
        &s.0,
        &["grep", "-e", "TODO", "-e", "-v is", "src/a.rs", "src/b.rs"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        hits(&events),
        [("src/a.rs".to_owned(), 1), ("src/b.rs".to_owned(), 1)]
    );
    // Neither a pattern nor -e: a usage error, not a search for nothing.
    let (code, events) = machine(&s.0, &["grep"]);
    assert_eq!(code, 64);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "usage");
    // -E and -F contradict each other.
    let (code, _) = machine(&s.0, &["grep", "-E", "-F", "x"]);
    assert_eq!(code, 64);
}

/// Human mode is GNU grep: each command line (as an agent types it, through `sh`, pipes
/// included) is run by the system's GNU grep and by this crate called as `grep` (a link), in
/// the C locale; stdout, stderr and the exit status must be the same bytes. Recursive searches
/// are compared with their lines sorted: a directory is walked in name order here, in the file
/// system's order by GNU (COMPAT.md).
#[test]
fn human_mode_is_gnu_grep_byte_for_byte() {
    let s = Scratch::new("grep-gnu-human");
    s.file("a.txt", b"alpha\nbeta\ngamma\nalphabet\n");
    s.file(
        "b.txt",
        b"one\ntwo alpha\nthree\nfour\nfive\nsix alpha\nseven\n",
    );
    s.file("bin.dat", b"x\0y\nalpha\n");
    s.file("nn.txt", b"no newline alpha");
    s.file("latin1.txt", b"caf\xe9 alpha\n");
    s.file("d/sub/f.c", b"alpha\n");
    s.file("d/.hid/g", b"alpha\n");
    s.file("d/h.txt", b"beta\n");
    s.file("pats", b"gam\nbet\n");
    s.file("empty", b"");
    s.file("o.txt", b"alpha\n");
    std::os::unix::fs::symlink("../a.txt", s.path("d/link")).unwrap();
    let links = Scratch::new("grep-gnu-links");
    for name in ["grep", "egrep", "fgrep"] {
        std::os::unix::fs::symlink(bin(), links.path(name)).unwrap();
    }
    let system_path = std::env::var("PATH").unwrap_or_default();
    let ours_path = format!("{}:{system_path}", links.0.display());
    s.file("utf.txt", "été\nÉTÉ\nnaïve\nabc\n\u{436}\n".as_bytes());
    let locale = std::cell::Cell::new("C");
    let sh = |path: &str, line: &str| {
        let out = std::process::Command::new("sh")
            .args(["-c", line])
            .current_dir(&s.0)
            .env("PATH", path)
            .env("LC_ALL", locale.get())
            .env_remove("GREP_COLORS")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("sh runs");
        (out.status.code(), out.stdout, out.stderr)
    };
    let sorted = |b: &[u8]| {
        let mut lines: Vec<Vec<u8>> = b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect();
        lines.sort();
        lines
    };
    let mut compared = 0;
    for line in [
        // Standard input: no file, `-`, with a file, twice.
        "printf 'one\\ntwo\\n' | grep two",
        "printf 'one\\ntwo\\n' | grep two -",
        "printf 'one\\ntwo\\n' | grep -H two - a.txt",
        "printf 'one\\ntwo\\n' | grep -c o - -",
        "printf 'one\\ntwo\\n' | grep --label=in -H o",
        "printf 'x\\0alpha\\n' | grep alpha",
        "printf 'tw.\\nalp\\n' | grep -f - a.txt b.txt",
        // Patterns: basic by default, extended, fixed, Perl, lists, back-references.
        "grep 'alph\\(a\\|e\\)' a.txt",
        "grep 'alpha|beta' a.txt",
        "grep 'a\\{2\\}' a.txt b.txt",
        "grep -E 'alph(a|e)t?$' a.txt",
        "grep -E 'a{1' a.txt",
        "grep -E '*alpha' a.txt",
        "grep '*' a.txt",
        "grep 'ph^a' a.txt",
        "grep '[[:upper:]]' a.txt",
        "grep '[^a-z]' a.txt b.txt",
        "grep -F 'a.b' a.txt",
        "grep -F \"$(printf 'gam\\nbet')\" a.txt",
        "grep -e alpha -e beta a.txt",
        "grep -f pats a.txt",
        "grep -f empty a.txt",
        "grep -v -f empty a.txt",
        "grep '\\(l\\)\\1' a.txt",
        "grep -E '(p)h.\\1' a.txt",
        "grep -P 'alpha(?=bet)' a.txt",
        "grep -w alpha a.txt b.txt",
        "grep -x beta a.txt",
        "grep -xF beta a.txt",
        "grep -i ALPHA a.txt",
        "grep -y ALPHA a.txt",
        "grep '\\<bet' a.txt",
        "grep 'pha\\>' a.txt",
        "egrep 'alpha|beta' a.txt",
        "fgrep 'a.t' a.txt",
        // What is printed.
        "grep alpha a.txt b.txt",
        "grep -n alpha a.txt b.txt",
        "grep -h alpha a.txt b.txt",
        "grep -H alpha a.txt",
        "grep -c alpha a.txt b.txt nn.txt empty",
        "grep -l alpha a.txt b.txt nn.txt",
        "grep -L alpha a.txt b.txt d/h.txt",
        "grep -o 'al[a-z]*' a.txt",
        "grep -ob al a.txt",
        "grep -b alpha b.txt",
        "grep -on 'a' b.txt",
        "grep -o '' a.txt",
        "grep -v alpha a.txt",
        "grep -vc alpha b.txt",
        "grep alpha nn.txt",
        "grep -Z -l alpha a.txt b.txt",
        "grep -T -n alpha a.txt",
        "grep -z alpha a.txt",
        "grep --color=always alpha a.txt",
        "grep --color=always -n alpha a.txt b.txt",
        "grep alpha latin1.txt",
        // Context.
        "grep -C1 alpha b.txt",
        "grep -A1 alpha b.txt a.txt",
        "grep -B2 -n alpha b.txt",
        "grep -2 six b.txt",
        "grep -A0 alpha b.txt",
        "grep --no-group-separator -A0 alpha b.txt",
        "grep --group-separator=XX -A0 alpha b.txt",
        "grep -m1 alpha a.txt b.txt",
        "grep -m1 -A1 alpha b.txt",
        "grep -m1 -c alpha b.txt",
        // Binary files.
        "grep alpha bin.dat",
        "grep -a alpha bin.dat",
        "grep -I alpha bin.dat",
        "grep --binary-files=text alpha bin.dat",
        "grep -c alpha bin.dat",
        // Exit statuses and errors.
        "grep zz a.txt",
        "grep alpha a.txt nofile",
        "grep -s alpha nofile a.txt",
        "grep -q alpha nofile a.txt",
        "grep -q zz a.txt",
        "grep alpha d",
        "grep -d skip alpha d a.txt",
        "grep -f nofile a.txt",
        "grep '\\(' a.txt",
        "grep -E '(' a.txt",
        "grep 'a\\{1' a.txt",
        "grep -E -F x a.txt",
        "grep",
        "grep --no-such-option x a.txt",
        "grep -Q x a.txt",
        "grep a.txt -e",
        "grep -C",
        "grep --binary-files=foo x a.txt",
        "grep '[:space:]' a.txt",
        "grep 'a\\{,\\}' a.txt",
        "grep 'a\\{32768\\}' a.txt",
        "grep -E 'a{}' a.txt",
        "grep --no-gr -A1 alpha b.txt",
        "grep -C1 -C0 six b.txt",
        "printf 'x\\n\\n' | grep -T '^' - /dev/null",
        "grep alpha o.txt >> o.txt",
        "cp o.txt c.txt; grep -c alpha c.txt >> c.txt; cat c.txt; rm c.txt",
        // Recursion.
        "grep -r alpha d",
        "grep -rh alpha d",
        "grep -R alpha d",
        "grep -rc alpha d",
        "grep -r alpha --include='*.c' d",
        "grep -r alpha --exclude='*.c' d",
        "grep -r alpha --exclude-dir=sub d",
        "grep -r alpha d/link",
    ] {
        let gnu = sh(&system_path, line);
        let ours = sh(&ours_path, line);
        let recursive = line.contains(" -r") || line.contains(" -R");
        if recursive {
            assert_eq!(
                (ours.0, sorted(&ours.1), sorted(&ours.2)),
                (gnu.0, sorted(&gnu.1), sorted(&gnu.2)),
                "{line}"
            );
        } else {
            assert_eq!(
                (
                    ours.0,
                    String::from_utf8_lossy(&ours.1),
                    String::from_utf8_lossy(&ours.2)
                ),
                (
                    gnu.0,
                    String::from_utf8_lossy(&gnu.1),
                    String::from_utf8_lossy(&gnu.2)
                ),
                "{line}"
            );
        }
        compared += 1;
    }
    assert_eq!(compared, 106);
    // A UTF-8 locale: characters, and the POSIX classes of glibc's UTF-8 locales; the C
    // locale: bytes.
    for (loc, line) in [
        ("C.UTF-8", "grep '[[:lower:]]' utf.txt"),
        ("C.UTF-8", "grep -c '[[:alpha:]]' utf.txt"),
        ("C.UTF-8", "grep -o '^.' utf.txt"),
        ("C.UTF-8", "grep -x '...' utf.txt"),
        ("C.UTF-8", "grep '[[:upper:]]' utf.txt"),
        ("C", "grep -c '^.....$' utf.txt"),
        ("C", "grep '[[:lower:]]' utf.txt"),
        ("C", "grep -o '^.' utf.txt latin1.txt"),
        ("C", "grep 'caf.' latin1.txt"),
    ] {
        locale.set(loc);
        let gnu = sh(&system_path, line);
        let ours = sh(&ours_path, line);
        assert_eq!(ours, gnu, "LC_ALL={loc} {line}");
    }
}

/// Machine mode takes the patterns as GNU grep does (one compiler for both modes): basic by
/// default, `-E`, `-F`, `-P`, `-x`, a pattern list, back-references; each selects in machine
/// mode the lines GNU grep selects.
#[test]
fn machine_mode_patterns_are_gnus() {
    let s = Scratch::new("grep-machine-gnu");
    s.file("f.txt", b"a|b\nab\nfoo\nfoofoo\nxyyx\nfoobar\n(x)\n");
    for args in [
        &["a|b"][..],
        &["a\\|b"],
        &["-E", "a|b"],
        &["-F", "a|b"],
        &["\\(foo\\)\\1"],
        &["-E", "(y)\\1"],
        &["-x", "foo"],
        &["-P", "foo(?!bar)"],
        &["-e", "foo\nxyyx"],
        &["(x)"],
        &["-w", "foo"],
    ] {
        let gnu = std::process::Command::new("grep")
            .arg("-n")
            .args(args)
            .arg("f.txt")
            .current_dir(&s.0)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let expected: Vec<u64> = String::from_utf8_lossy(&gnu.stdout)
            .lines()
            .map(|l| l.split(':').next().unwrap().parse().unwrap())
            .collect();
        let (code, events) = machine(&s.0, &[&["grep"][..], args, &["f.txt"]].concat());
        assert_eq!(code, 0, "{args:?}");
        let lines: Vec<u64> = hits(&events).into_iter().map(|(_, n)| n).collect();
        assert!(!expected.is_empty(), "{args:?}");
        assert_eq!(lines, expected, "{args:?}");
    }
    // Two syntaxes at once are refused, as GNU's "conflicting matchers".
    let (code, _) = machine(&s.0, &["grep", "-P", "-F", "x", "f.txt"]);
    assert_eq!(code, 64);
}
