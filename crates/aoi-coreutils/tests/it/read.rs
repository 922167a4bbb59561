//! `cat`, `head`, `tail`: bounded reads with cursors (§15), encodings and binary files, item
//! errors (§9.1), and GNU's bytes in human mode.

use std::process::{Command, Stdio};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use crate::support::{bin, machine, of_type, parse, run, run_unprivileged, summary, Scratch};

/// A deterministic pseudo-random sequence (xorshift), so failures reproduce.
fn noise(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// About `size` bytes of UTF-8 text: lines of varying length mixing 1-, 2-, 3- and 4-byte
/// characters, so cuts land everywhere inside them.
fn multibyte_text(size: usize) -> String {
    let mut next = noise(0x5eed);
    let alphabet = ["a", "z", " ", "é", "ß", "€", "日本", "😀", "ok", "\t"];
    let mut text = String::new();
    while text.len() < size {
        let len = next() % 120;
        for _ in 0..len {
            text.push_str(alphabet[(next() % alphabet.len() as u64) as usize]);
        }
        text.push('\n');
    }
    text
}

/// Runs a reader in machine mode, following `next_cursor` until the end; returns every
/// `content` event and the number of pages.
fn page_through(dir: &std::path::Path, args: &[&str]) -> (Vec<Value>, usize) {
    let mut events = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut all = args.to_vec();
        if let Some(c) = &cursor {
            all.extend(["--cursor", c.as_str()]);
        }
        let (code, page) = machine(dir, &all);
        assert_eq!(code, 0, "{page:?}");
        pages += 1;
        events.extend(of_type(&page, "content").into_iter().cloned());
        let sum = summary(&page);
        assert_eq!(sum["ok"], true);
        match sum["next_cursor"].as_str() {
            Some(c) => {
                assert_eq!(sum["truncated"], true);
                cursor = Some(c.to_owned());
            }
            None => {
                assert_eq!(sum["truncated"], false);
                return (events, pages);
            }
        }
        assert!(pages < 1000, "paging does not end");
    }
}

fn text_of(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| e["text"].as_str().expect("text").to_owned())
        .collect()
}

#[test]
fn cursor_paging_reassembles_a_multibyte_file_and_never_splits_a_character() {
    let s = Scratch::new("cat-pages");
    let text = multibyte_text(300_000);
    s.file("big.txt", text.as_bytes());
    // A budget that is no multiple of anything, so cuts fall inside characters.
    let (events, pages) = page_through(&s.0, &["cat", "big.txt", "--max-bytes", "49999"]);
    assert!(pages >= 6, "{pages} pages");
    let mut offset = 0u64;
    let mut line = 1u64;
    for e in &events {
        assert_eq!(e["offset"], offset, "contiguous");
        assert!(e["encoding"] == "utf-8" || e["encoding"] == "ascii", "{e}");
        let piece = e["text"].as_str().unwrap();
        let length = e["length"].as_u64().unwrap();
        assert_eq!(piece.len() as u64, length, "text is exactly the bytes");
        assert!(length <= 16 * 1024, "events stay small");
        assert_eq!(e["first_line"], line);
        let newlines = piece.matches('\n').count() as u64;
        let last = line + newlines - u64::from(piece.ends_with('\n'));
        assert_eq!(e["last_line"], last);
        line += newlines;
        offset += length;
    }
    assert_eq!(text_of(&events), text);
    assert_eq!(events.last().unwrap()["eof"], true);
    assert!(events[..events.len() - 1].iter().all(|e| e["eof"] == false));
}

#[test]
fn a_budget_cut_moves_back_to_a_line_end_nearby() {
    let s = Scratch::new("cat-snap");
    let line = "0123456789".repeat(9) + "\n"; // 91 bytes
    s.file("lines.txt", line.repeat(100).as_bytes());
    let (_, events) = machine(&s.0, &["cat", "lines.txt", "--max-bytes", "1000"]);
    let content = of_type(&events, "content");
    assert_eq!(content.len(), 1);
    // 10 lines are 910 bytes; the cut at 1000 falls 90 bytes into the 11th.
    assert_eq!(content[0]["length"], 910);
    assert!(content[0]["text"].as_str().unwrap().ends_with('\n'));
    assert_eq!(summary(&events)["truncated"], true);
    assert_eq!(summary(&events)["properties"]["content_bytes"], 910);
}

#[test]
fn head_pages_through_its_selection_only() {
    let s = Scratch::new("head-pages");
    let text = multibyte_text(100_000);
    s.file("t.txt", text.as_bytes());
    let (events, pages) =
        page_through(&s.0, &["head", "-n", "700", "t.txt", "--max-bytes", "7001"]);
    assert!(pages > 3, "{pages}");
    let expected: String = text.split_inclusive('\n').take(700).collect();
    assert_eq!(text_of(&events), expected);
    let (events, _) = page_through(
        &s.0,
        &["tail", "-n", "+300", "t.txt", "--max-bytes", "9000"],
    );
    let expected: String = text.split_inclusive('\n').skip(299).collect();
    assert_eq!(text_of(&events), expected);
    assert_eq!(events[0]["first_line"], 300);
}

#[test]
fn several_files_are_read_in_order_and_the_cursor_crosses_them() {
    let s = Scratch::new("cat-many");
    s.file("a", b"first file\n");
    s.file("b", "second ✓ file\n".repeat(50).as_bytes());
    s.file("c", b"third\n");
    let (events, pages) = page_through(&s.0, &["cat", "a", "b", "c", "--max-bytes", "200"]);
    assert!(pages >= 4);
    let by_file = |name: &str| {
        text_of(
            &events
                .iter()
                .filter(|e| e["path"] == name)
                .cloned()
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(by_file("a"), "first file\n");
    assert_eq!(by_file("b"), "second ✓ file\n".repeat(50));
    assert_eq!(by_file("c"), "third\n");
    let order: Vec<&str> = events.iter().map(|e| e["path"].as_str().unwrap()).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "in operand order");
}

#[test]
fn a_binary_file_is_one_binary_event_and_no_content() {
    let s = Scratch::new("cat-binary");
    let mut next = noise(42);
    let mut bytes: Vec<u8> = (0..2048).map(|_| (next() >> 24) as u8).collect();
    bytes[100] = 0;
    let first_nul = bytes.iter().position(|b| *b == 0).unwrap();
    s.file("blob.bin", &bytes);
    for command in ["cat", "head", "tail"] {
        let (code, events) = machine(&s.0, &[command, "blob.bin"]);
        assert_eq!(code, 0);
        assert!(of_type(&events, "content").is_empty());
        let binary = of_type(&events, "binary");
        assert_eq!(binary.len(), 1);
        assert_eq!(binary[0]["path"], "blob.bin");
        assert_eq!(binary[0]["size"], 2048);
        assert_eq!(binary[0]["reason"], "nul_byte");
        assert_eq!(binary[0]["nul_offset"], first_nul);
    }
    // --binary reads it as base64.
    let (_, events) = machine(&s.0, &["cat", "blob.bin", "--binary"]);
    let content = of_type(&events, "content");
    let decoded: Vec<u8> = content
        .iter()
        .flat_map(|e| {
            STANDARD
                .decode(e["bytes_base64"].as_str().unwrap())
                .unwrap()
        })
        .collect();
    assert_eq!(decoded, bytes);
    assert!(content.iter().all(|e| e["encoding"] == "binary"));
    // Human mode is GNU cat: the bytes, on a pipe (a terminal gets them escaped).
    let out = run(&s.0, &["cat", "blob.bin"]);
    assert_eq!((out.status.code(), out.stdout), (Some(0), bytes));
}

#[test]
fn a_character_cut_by_the_detection_sample_is_still_utf8() {
    let s = Scratch::new("cat-sample");
    // '€' (3 bytes) starts at 8191: the 8 KiB sample ends after its first byte.
    let text = "a".repeat(8191) + "€" + &"b".repeat(100) + "\n";
    s.file("edge.txt", text.as_bytes());
    let (_, events) = machine(&s.0, &["cat", "edge.txt"]);
    assert!(of_type(&events, "binary").is_empty());
    let content = of_type(&events, "content");
    assert!(content.iter().all(|e| e["encoding"] == "utf-8"));
    assert_eq!(
        text_of(&content.into_iter().cloned().collect::<Vec<_>>()),
        text
    );
}

#[test]
fn utf16_with_a_byte_order_mark_is_decoded() {
    let s = Scratch::new("cat-utf16");
    let text = "\u{feff}héllo\nwörld 😀\n";
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    s.file("le.txt", &le);
    s.file("be.txt", &be);
    for (name, encoding, len) in [
        ("le.txt", "utf-16le", le.len()),
        ("be.txt", "utf-16be", be.len()),
    ] {
        let (_, events) = machine(&s.0, &["cat", name]);
        let content = of_type(&events, "content");
        assert_eq!(content.len(), 1, "{events:?}");
        assert_eq!(content[0]["encoding"], encoding);
        assert_eq!(content[0]["text"], text);
        assert_eq!(content[0]["length"], len);
        assert_eq!(content[0]["last_line"], 2);
        // Lines are code units: the second line alone.
        let (_, events) = machine(&s.0, &["tail", "-n", "1", name]);
        assert_eq!(of_type(&events, "content")[0]["text"], "wörld 😀\n");
    }
    // Paging a UTF-16 file by odd budgets never splits a code unit or a surrogate pair.
    let long: Vec<u8> = "\u{feff}"
        .chars()
        .chain("a😀é\n".repeat(400).chars())
        .collect::<String>()
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    s.file("long16.txt", &long);
    let (events, _) = page_through(&s.0, &["cat", "long16.txt", "--max-bytes", "333"]);
    assert!(events.iter().all(|e| e["encoding"] == "utf-16le"));
    assert_eq!(
        text_of(&events),
        "\u{feff}".to_owned() + &"a😀é\n".repeat(400)
    );
}

#[test]
fn text_in_an_unknown_encoding_is_base64() {
    let s = Scratch::new("cat-latin1");
    let latin1 = b"caf\xe9 cr\xe8me br\xfbl\xe9e\nna\xefve\n";
    s.file("fr.txt", latin1);
    let (_, events) = machine(&s.0, &["cat", "fr.txt"]);
    let content = of_type(&events, "content");
    assert_eq!(content[0]["encoding"], "unknown");
    assert_eq!(
        STANDARD
            .decode(content[0]["bytes_base64"].as_str().unwrap())
            .unwrap(),
        latin1
    );
    assert!(content[0].get("text").is_none());
}

#[test]
fn line_ranges_are_one_based_and_inclusive() {
    let s = Scratch::new("cat-range");
    let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    s.file("t", text.as_bytes());
    let (_, events) = machine(&s.0, &["cat", "--line-range", "3:5", "t"]);
    let content = of_type(&events, "content");
    assert_eq!(content[0]["text"], "line 3\nline 4\nline 5\n");
    assert_eq!(
        (
            content[0]["first_line"].as_u64(),
            content[0]["last_line"].as_u64()
        ),
        (Some(3), Some(5))
    );
    assert_eq!(content[0]["offset"], 14);
    let (_, events) = machine(&s.0, &["head", "--line-range", "19:", "t"]);
    assert_eq!(of_type(&events, "content")[0]["text"], "line 19\nline 20\n");
    let (_, events) = machine(&s.0, &["tail", "--line-range", "25:30", "t"]);
    assert_eq!(of_type(&events, "content")[0]["length"], 0);
}

/// Runs GNU `tool` with `args` in `dir`.
fn gnu(dir: &std::path::Path, tool: &str, args: &[&str]) -> std::process::Output {
    Command::new(tool)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .expect("GNU tool runs")
}

#[test]
fn head_and_tail_write_the_bytes_gnu_writes() {
    let s = Scratch::new("head-gnu");
    s.file(
        "lines",
        (1..=30)
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .as_bytes(),
    );
    s.file("open-end", b"one\ntwo\nthree");
    s.file("empty", b"");
    s.file("utf8", "héllo\nwörld\n日本語\n€\n".as_bytes());
    s.file("blank", b"\n\n\n\n");
    let files = ["lines", "open-end", "empty", "utf8", "blank"];
    let cases: &[(&str, &[&str])] = &[
        ("head", &[]),
        ("head", &["-n", "3"]),
        ("head", &["-n", "0"]),
        ("head", &["-n", "-2"]),
        ("head", &["-n", "-0"]),
        ("head", &["-c", "5"]),
        ("head", &["-c", "-3"]),
        ("head", &["-c", "1K"]),
        ("tail", &[]),
        ("tail", &["-n", "3"]),
        ("tail", &["-n", "0"]),
        ("tail", &["-n", "+2"]),
        ("tail", &["-n", "+0"]),
        ("tail", &["-c", "4"]),
        ("tail", &["-c", "+3"]),
        ("tail", &["-n", "-1"]),
        // The obsolete count form agents type: `head -5`, `tail -2`.
        ("head", &["-5"]),
        ("tail", &["-2"]),
    ];
    for (tool, flags) in cases {
        for file in files {
            let args = [*flags, &[file]].concat();
            let ours = run(&s.0, &[&[*tool][..], &args].concat());
            let theirs = gnu(&s.0, tool, &args);
            assert_eq!(ours.stdout, theirs.stdout, "{tool} {args:?}");
            assert_eq!(ours.status.code(), Some(0), "{tool} {args:?}");
        }
        // GNU takes the obsolete form for one file only ("option used in invalid context").
        if flags
            .first()
            .is_some_and(|f| f[1..].bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        // Several files: `==> name <==` headers, a blank line between.
        let args = [*flags, &files[..]].concat();
        let ours = run(&s.0, &[&[*tool][..], &args].concat());
        assert_eq!(
            ours.stdout,
            gnu(&s.0, tool, &args).stdout,
            "{tool} {args:?}"
        );
    }
    for extra in [["-q"], ["-v"]] {
        for tool in ["head", "tail"] {
            let args = [&extra[..], &["lines", "utf8"]].concat();
            let ours = run(&s.0, &[&[tool][..], &args].concat());
            assert_eq!(
                ours.stdout,
                gnu(&s.0, tool, &args).stdout,
                "{tool} {args:?}"
            );
            let one = [&extra[..], &["lines"]].concat();
            let ours = run(&s.0, &[&[tool][..], &one].concat());
            assert_eq!(ours.stdout, gnu(&s.0, tool, &one).stdout, "{tool} {one:?}");
        }
    }
    let ours = run(&s.0, &["cat", "lines", "utf8", "open-end"]);
    assert_eq!(
        ours.stdout,
        gnu(&s.0, "cat", &["lines", "utf8", "open-end"]).stdout
    );
}

#[test]
fn standard_input_is_read_and_a_cut_in_it_has_no_cursor() {
    let s = Scratch::new("cat-stdin");
    let text = "x".repeat(100) + "\n" + &"y".repeat(100) + "\n";
    let path = s.file("in.txt", text.as_bytes());
    let piped = |args: &[&str]| {
        let mut child = Command::new(bin())
            .args(args)
            .current_dir(&s.0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let body = std::fs::read(&path).unwrap();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&body);
        });
        child.wait_with_output().unwrap()
    };
    let (_, events) = parse(&piped(&["tail", "-n", "1", "--output", "jsonl"]));
    let content = of_type(&events, "content");
    assert_eq!(content[0]["path"], "-");
    assert_eq!(content[0]["text"], "y".repeat(100) + "\n");
    let (_, events) = parse(&piped(&[
        "cat",
        "-",
        "--max-bytes",
        "50",
        "--output",
        "jsonl",
    ]));
    let sum = summary(&events);
    assert_eq!(sum["truncated"], true);
    assert!(sum.get("next_cursor").is_none() || sum["next_cursor"].is_null());
    assert_eq!(of_type(&events, "content")[0]["length"], 50);
    let out = piped(&["head", "-c", "150"]);
    assert_eq!(out.stdout, &text.as_bytes()[..150]);
}

#[test]
fn human_mode_is_unbounded_as_gnu_and_machine_mode_has_the_budget() {
    let s = Scratch::new("cat-human-budget");
    // Human mode is GNU cat: the whole file, whatever its size.
    s.file("big", "z".repeat(100_000).as_bytes());
    let whole = run(&s.0, &["cat", "big"]);
    assert_eq!(
        (whole.status.code(), whole.stdout.len()),
        (Some(0), 100_000)
    );
    // Machine mode is bounded: 64 KiB by default, and the summary says it was cut.
    let (_, events) = machine(&s.0, &["cat", "big"]);
    assert_eq!(summary(&events)["properties"]["content_bytes"], 65536);
    assert_eq!(summary(&events)["truncated"], true);
}

#[test]
fn operands_that_cannot_be_read_fail_the_run_and_the_others_are_read() {
    let s = Scratch::new("cat-errors");
    s.file("here", b"hi\n");
    s.file("d/x", b"");
    let (code, events) = machine(&s.0, &["cat", "nope", "here", "d"]);
    assert_ne!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 2);
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["scope"].as_str()),
        (Some("not_found"), Some("item"))
    );
    assert_eq!(errors[0]["target"], "nope");
    assert_eq!(
        (errors[1]["category"].as_str(), errors[1]["code"].as_str()),
        (Some("validation"), Some("IS_A_DIRECTORY"))
    );
    assert_eq!(of_type(&events, "content")[0]["text"], "hi\n");
    let sum = summary(&events);
    assert_eq!(
        (sum["ok"].as_bool(), sum["partial"].as_bool()),
        (Some(false), Some(true))
    );

    s.file("secret", b"x\n");
    s.lock("secret");
    let (code, events) = parse(&run_unprivileged(
        &s.0,
        &["head", "secret", "--output", "jsonl"],
    ));
    assert_ne!(code, 0);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "authz");
    assert_eq!(summary(&events)["ok"], false);

    // Human mode: no header for a file that cannot be opened, as GNU's.
    let ours = run(&s.0, &["head", "nope", "here"]);
    assert_eq!(ours.stdout, gnu(&s.0, "head", &["nope", "here"]).stdout);
    assert_eq!(ours.status.code(), Some(1));
    let out = run(&s.0, &["tail", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such file"));
}

#[test]
fn a_cursor_for_other_arguments_is_refused() {
    let s = Scratch::new("cat-cursor");
    s.file("t", "abc\n".repeat(100).as_bytes());
    let (_, events) = machine(&s.0, &["cat", "t", "--max-bytes", "10"]);
    let cursor = summary(&events)["next_cursor"].as_str().unwrap().to_owned();
    let (code, events) = machine(&s.0, &["head", "t", "--cursor", &cursor]);
    assert_ne!(code, 0);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "CURSOR_MISMATCH");
}

/// Reads stdout lines of a running process as they come, until one satisfies `done` or
/// `within` passes; the lines parsed as JSON.
fn read_until(
    lines: &std::sync::mpsc::Receiver<String>,
    within: std::time::Duration,
    mut done: impl FnMut(&Value) -> bool,
) -> Vec<Value> {
    let deadline = std::time::Instant::now() + within;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        let Ok(line) = lines.recv_timeout(left) else {
            break;
        };
        let event: Value = serde_json::from_str(&line).expect("each line is JSON");
        let stop = done(&event);
        seen.push(event);
        if stop {
            break;
        }
    }
    seen
}

/// `tail -f` in machine mode is an unbounded stream (§4.2): the last lines, then what is
/// appended, each event as it comes (never a character split), a warning when the file is
/// truncated or (with -F) replaced, heartbeats in the quiet, and on SIGINT a `cancelled`
/// summary with exit 130; with `--pid` it ends with `ok: true` once that process is gone.
#[test]
fn tail_follow_is_an_unbounded_stream_that_ends_on_a_signal() {
    use std::io::{BufRead, Write};
    let s = Scratch::new("tail-follow");
    let log = s.file("app.log", b"one\ntwo\n");
    let append = |bytes: &[u8]| {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(bytes).unwrap();
    };
    let mut child = Command::new(bin())
        .args(["tail", "-n", "1", "-F", "-s", "0.05", "--heartbeat", "0.4"])
        .arg("app.log")
        .args(["--output", "jsonl"])
        .current_dir(&s.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let wait = std::time::Duration::from_secs(10);
    let text = |e: &Value| e["text"].as_str().unwrap_or("").to_owned();
    let first = read_until(&lines, wait, |e| e["type"] == "content");
    assert_eq!(first[0]["type"], "aoi:meta");
    assert_eq!(text(first.last().unwrap()), "two\n");
    // Appended bytes come as they are written; a character cut in two waits for its end.
    append(b"three\ncaf\xc3");
    let got = read_until(&lines, wait, |e| text(e).ends_with("caf"));
    assert_eq!(text(got.last().unwrap()), "three\ncaf");
    append(b"\xa9\n");
    let got = read_until(&lines, wait, |e| e["type"] == "content");
    assert_eq!(text(got.last().unwrap()), "é\n");
    // Quiet: a heartbeat.
    let got = read_until(&lines, wait, |e| e["type"] == "aoi:heartbeat");
    assert_eq!(got.last().unwrap()["interval_ms"], 400);
    // Truncated: a warning, then the file from its start.
    std::fs::write(&log, b"").unwrap();
    let got = read_until(&lines, wait, |e| e["type"] == "aoi:warning");
    assert_eq!(got.last().unwrap()["code"], "FILE_TRUNCATED");
    append(b"four\n");
    let got = read_until(&lines, wait, |e| e["type"] == "content");
    assert_eq!(got.last().unwrap()["offset"], 0);
    assert_eq!(text(got.last().unwrap()), "four\n");
    // Rotated (-F follows the name): a warning, then the new file.
    std::fs::rename(&log, s.path("app.log.1")).unwrap();
    std::fs::write(&log, b"five\n").unwrap();
    let got = read_until(&lines, wait, |e| text(e) == "five\n");
    assert!(
        got.iter()
            .any(|e| e["code"] == "FILE_REPLACED" || e["code"] == "FILE_GONE"),
        "{got:?}"
    );
    // SIGINT: the summary says cancelled, exit 130.
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let got = read_until(&lines, wait, |e| e["type"] == "aoi:summary");
    let end = got.last().unwrap();
    assert_eq!(end["type"], "aoi:summary");
    assert_eq!(
        (end["ok"].as_bool(), end["reason"].as_str()),
        (Some(false), Some("cancelled"))
    );
    assert_eq!(child.wait().unwrap().code(), Some(130));
    reader.join().unwrap();

    // --pid: once that process is gone, the files are read a last time and the run succeeds.
    let mut sleeper = Command::new("sleep").arg("0.5").spawn().unwrap();
    let out = Command::new(bin())
        .args([
            "tail",
            "-f",
            "-s",
            "0.05",
            "--pid",
            &sleeper.id().to_string(),
        ])
        .arg("app.log")
        .args(["--output", "jsonl"])
        .current_dir(&s.0)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    sleeper.wait().unwrap();
    let (code, events) = parse(&out);
    assert_eq!(code, 0);
    assert_eq!(summary(&events)["ok"], true);
    assert_eq!(text(of_type(&events, "content")[0]), "five\n");
}
