//! `wc`: GNU's counts and columns, `count` events, item errors (§9.1).

use std::process::{Command, Stdio};

use crate::support::{bin, machine, of_type, run, summary, Scratch};

/// GNU `wc` with `args` in `dir` under `locale`.
fn gnu_wc(dir: &std::path::Path, locale: &str, args: &[&str]) -> std::process::Output {
    Command::new("wc")
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", locale)
        .stdin(Stdio::null())
        .output()
        .expect("GNU wc runs")
}

/// Files of every kind the counts disagree on.
fn corpus(s: &Scratch) -> Vec<&'static str> {
    s.file("empty", b"");
    s.file("open-end", b"no final newline\tat all");
    s.file(
        "plain",
        b"The quick brown fox\njumps over\n\n  the lazy dog.\r\n\x0bv\x0cf\n",
    );
    s.file("controls", b"a\x01b x\x01 \x01y\n\x7f \x1b[1m bold\n");
    s.file(
        "multibyte",
        "héllo wörld\n日本語 テキスト\n€ 😀 e\u{301}\n\tcafé\r\nend".as_bytes(),
    );
    s.file("invalid", b"ok \xff\xfe bytes \xe2\x82 cut\n\xc3");
    let sparse = std::fs::File::create(s.path("sparse")).unwrap();
    sparse.set_len(3 * 1024 * 1024 + 17).unwrap();
    let long: String = (0..5000)
        .map(|i| format!("word{i} {}\n", "x".repeat(i % 97)))
        .collect();
    s.file("long", long.as_bytes());
    vec![
        "empty",
        "open-end",
        "plain",
        "controls",
        "multibyte",
        "invalid",
        "sparse",
        "long",
    ]
}

#[test]
fn counts_and_columns_are_those_of_gnu_wc() {
    let s = Scratch::new("wc-gnu");
    let files = corpus(&s);
    // Lines, words and bytes: GNU in the C locale, on every file.
    for flags in [
        &[][..],
        &["-l"],
        &["-w"],
        &["-c"],
        &["-lw"],
        &["-l", "-c"],
        &["-wc"],
    ] {
        for file in &files {
            let args = [flags, &[*file][..]].concat();
            let ours = run(&s.0, &[&["wc"][..], &args].concat());
            let theirs = gnu_wc(&s.0, "C", &args);
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&theirs.stdout),
                "wc {args:?}"
            );
            assert_eq!(ours.status.code(), Some(0));
        }
        let args = [flags, &files[..]].concat();
        let ours = run(&s.0, &[&["wc"][..], &args].concat());
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&gnu_wc(&s.0, "C", &args).stdout),
            "wc {args:?}"
        );
    }
    // Characters and widths are UTF-8: GNU in a UTF-8 locale.
    for flags in [&["-m"][..], &["-L"], &["-mL"], &["-lmcL"]] {
        for file in &files {
            let args = [flags, &[*file][..]].concat();
            let ours = run(&s.0, &[&["wc"][..], &args].concat());
            let theirs = gnu_wc(&s.0, "C.UTF-8", &args);
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&theirs.stdout),
                "wc {args:?}"
            );
        }
        let args = [flags, &files[..]].concat();
        let ours = run(&s.0, &[&["wc"][..], &args].concat());
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&gnu_wc(&s.0, "C.UTF-8", &args).stdout),
            "wc {args:?}"
        );
    }
    // On ASCII files every count agrees with the C locale as well.
    let args = ["-lwmcL", "plain", "open-end", "long", "empty"];
    let ours = run(&s.0, &[&["wc"][..], &args[..]].concat());
    assert_eq!(ours.stdout, gnu_wc(&s.0, "C", &args).stdout);
}

#[test]
fn standard_input_is_counted_with_gnu_columns() {
    let s = Scratch::new("wc-stdin");
    corpus(&s);
    for (flags, file) in [
        (&[][..], "plain"),
        (&["-l"][..], "long"),
        (&["-c", "-"][..], "multibyte"),
        (&["-w", "-", "plain"][..], "long"),
    ] {
        let with_stdin = |program: &std::path::Path, prefix: &[&str], from_pipe: bool| {
            let body = std::fs::read(s.path(file)).unwrap();
            let mut cmd = Command::new(program);
            cmd.args(prefix)
                .args(flags)
                .current_dir(&s.0)
                .env("LC_ALL", "C");
            if from_pipe {
                cmd.stdin(Stdio::piped());
            } else {
                cmd.stdin(std::fs::File::open(s.path(file)).unwrap());
            }
            let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
            if let Some(mut stdin) = child.stdin.take() {
                std::thread::spawn(move || {
                    use std::io::Write;
                    let _ = stdin.write_all(&body);
                });
            }
            child.wait_with_output().unwrap().stdout
        };
        for from_pipe in [true, false] {
            let ours = with_stdin(&bin(), &["wc"], from_pipe);
            let theirs = with_stdin(std::path::Path::new("wc"), &[], from_pipe);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs),
                "wc {flags:?} < {file} (pipe: {from_pipe})"
            );
        }
    }
}

#[test]
fn a_count_event_per_file_and_the_total_in_the_summary() {
    let s = Scratch::new("wc-machine");
    s.file("a", "one two\nthree\n".as_bytes());
    s.file("b", "héllo\n".as_bytes());
    let (code, events) = machine(&s.0, &["wc", "a", "b"]);
    assert_eq!(code, 0);
    let counts = of_type(&events, "count");
    assert_eq!(counts.len(), 2);
    assert_eq!(counts[0]["path"], "a");
    assert_eq!(
        (
            counts[0]["lines"].as_u64(),
            counts[0]["words"].as_u64(),
            counts[0]["bytes"].as_u64()
        ),
        (Some(2), Some(3), Some(14))
    );
    assert!(counts[0].get("chars").is_none(), "only what was asked");
    let total = &summary(&events)["properties"]["total"];
    assert_eq!(
        (
            total["lines"].as_u64(),
            total["words"].as_u64(),
            total["bytes"].as_u64()
        ),
        (Some(3), Some(4), Some(21))
    );
    let (_, events) = machine(&s.0, &["wc", "-mL", "b"]);
    let c = of_type(&events, "count")[0];
    assert_eq!(
        (c["chars"].as_u64(), c["max_line_length"].as_u64()),
        (Some(6), Some(5))
    );
    assert!(c.get("lines").is_none());
    assert!(summary(&events)["properties"].get("total").is_none());
}

#[test]
fn a_missing_file_fails_the_run_and_a_directory_is_an_item_error() {
    let s = Scratch::new("wc-errors");
    s.file("a", b"x y\n");
    s.file("d/f", b"");
    let (code, events) = machine(&s.0, &["wc", "nope", "a", "d"]);
    assert_ne!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 2);
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("not_found"), Some("nope"))
    );
    assert_eq!(errors[1]["code"], "IS_A_DIRECTORY");
    assert_eq!(of_type(&events, "count").len(), 1);
    assert_eq!(summary(&events)["ok"], false);
    // Human mode: GNU's lines (a directory's zeros included) and exit 1.
    let args = ["nope", "a", "d"];
    let ours = run(&s.0, &[&["wc"][..], &args[..]].concat());
    let theirs = gnu_wc(&s.0, "C", &args);
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
    assert_eq!(ours.status.code(), Some(1));
}
