//! Human mode: what a person sees at a shell. It is GNU's, compared byte for byte with the
//! system's GNU tools (grep's own table is in grep.rs); wc, this crate's own, as snapshots
//! headed by the exit code.

use crate::support::{bin, run, transcript, Scratch};

/// A small tree with a fixed time: two notes, a ZIP-like binary and a name with a newline.
fn notes() -> Scratch {
    let s = Scratch::new("human");
    s.file("notes/todo.txt", b"buy milk\nTODO: call the bank\n");
    s.file("notes/readme.md", b"# Notes\nTODO list\n");
    s.file("notes/archive.zip", b"PK\x03\x04\x00\x00binary\n");
    s.file("notes/odd\nname.txt", b"x\n");
    let status = std::process::Command::new("sh")
        .args(["-c", "touch -d 2026-01-02T03:04:05Z notes/* notes"])
        .current_dir(&s.0)
        .status()
        .expect("touch runs");
    assert!(status.success());
    s
}

/// A run's exit status and stdout.
type Ran = (Option<i32>, Vec<u8>);

/// `args` run by this crate (human mode) and by the system's GNU tool in `dir`, with
/// `LC_ALL=C`: (ours, GNU's).
fn both(dir: &std::path::Path, args: &[&str]) -> (Ran, Ran) {
    let run = |program: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .current_dir(dir)
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("runs");
        (out.status.code(), out.stdout)
    };
    let ours = run(&bin(), args);
    let gnu = run(std::path::Path::new(args[0]), &args[1..]);
    (ours, gnu)
}

#[test]
fn listing_finding_and_reading_are_gnus_byte_for_byte() {
    let s = notes();
    for args in [
        &["ls", "notes"][..],
        &["ls", "-l", "notes"],
        &["ls", "-lh", "notes"],
        &["ls", "-1a", "notes"],
        &["head", "-n", "1", "notes/todo.txt"],
        &["tail", "-n", "1", "notes/todo.txt", "notes/readme.md"],
        &["cat", "-n", "notes/todo.txt", "notes/readme.md"],
        // A binary file is its bytes on a pipe, as GNU cat writes them.
        &["cat", "notes/archive.zip"],
        &["ls", "no-such-file"],
    ] {
        let (ours, gnu) = both(&s.0, args);
        assert_eq!(ours, gnu, "{args:?}");
    }
    // find lists in the directory's order: the same lines, sorted.
    let (ours, gnu) = both(&s.0, &["find", "notes"]);
    let sorted = |b: &[u8]| {
        let mut lines: Vec<Vec<u8>> = b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect();
        lines.sort();
        lines
    };
    assert_eq!((ours.0, sorted(&ours.1)), (gnu.0, sorted(&gnu.1)));
}

#[test]
fn searching_and_reading_look_like_grep_head_tail_and_wc() {
    let s = notes();
    // grep is GNU's in human mode: the lines (sorted: a directory is walked in name order,
    // GNU's in the file system's), its status and its note on the binary file.
    let (ours, gnu) = both(&s.0, &["grep", "-r", "TODO", "notes"]);
    let sorted = |b: &[u8]| {
        let mut lines: Vec<Vec<u8>> = b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect();
        lines.sort();
        lines
    };
    assert_eq!((ours.0, sorted(&ours.1)), (gnu.0, sorted(&gnu.1)));
    assert_eq!(ours.0, Some(0));
    insta::assert_snapshot!(
        transcript(&run(&s.0, &["wc", "notes/todo.txt", "notes/readme.md"])),
        @r"
    exit: 0
    --- stdout
     2  6 29 notes/todo.txt
     2  4 18 notes/readme.md
     4 10 47 total
    --- stderr
    "
    );
}

#[test]
fn writes_and_usage_errors_are_gnus_and_machine_mode_keeps_its_guards() {
    let s = notes();
    // GNU rm removes what it is told to, silently; so does human mode.
    let (ours, _) = both(&s.0, &["rm", "notes/todo.txt"]);
    assert_eq!(ours, (Some(0), Vec::new()));
    assert!(!s.path("notes/todo.txt").exists());
    // Machine mode keeps its guard: a destructive run without --confirm is refused (§14.3).
    let refused = run(&s.0, &["rm", "notes/readme.md", "--output", "jsonl"]);
    assert_eq!(refused.status.code(), Some(77));
    assert!(
        s.path("notes/readme.md").exists(),
        "a refusal removes nothing"
    );
    // A flag GNU does not have is GNU's usage error (exit 1 for mkdir, 2 for ls), and does
    // nothing; machine mode has the flag.
    let (ours, gnu) = both(&s.0, &["mkdir", "--dry-run", "-p", "out/a"]);
    assert_eq!(ours.0, gnu.0);
    assert!(!s.path("out").exists(), "a usage error creates nothing");
    let planned = run(
        &s.0,
        &["mkdir", "--dry-run", "-p", "out/a", "--output", "jsonl"],
    );
    assert_eq!(planned.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&planned.stdout).contains("\"aoi:plan\""));
    assert!(!s.path("out").exists(), "a plan creates nothing");
    let (ours, gnu) = both(&s.0, &["ls", "--bogus"]);
    assert_eq!((ours.0, ours.1.is_empty()), (gnu.0, true));
}

/// A reader that goes away ends a human-mode run as it ends GNU's: by SIGPIPE, which a shell
/// reports as 141 (`find . | head -n 1`).
#[test]
fn a_closed_pipe_ends_the_run_by_sigpipe_as_gnu() {
    let s = Scratch::new("human-pipe");
    for i in 0..3000 {
        s.file(
            &format!("d/a-rather-long-name-to-fill-the-pipe-{i:05}.txt"),
            b"x\n",
        );
    }
    for args in [
        &["find", "d"][..],
        &["ls", "-l", "d"],
        &[
            "cat",
            "d/a-rather-long-name-to-fill-the-pipe-00001.txt",
            "/dev/zero",
        ],
    ] {
        let line = format!(
            "\"$0\" {} | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}",
            args.join(" ")
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &line])
            .arg(bin())
            .current_dir(&s.0)
            .output()
            .expect("bash runs");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "141",
            "{args:?}"
        );
    }
}
