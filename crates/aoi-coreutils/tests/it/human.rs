//! Human mode: what a person sees at a shell, as snapshots headed by the exit code. The GNU
//! look (one name per line, `ls -l` columns, `grep`'s `path:line`, `wc`'s counts and total,
//! `tail`'s `==> name <==` headers), controls escaped (§14), refusals on stderr, a dry run's plan on stdout (as `mkdir -v` reports).

use crate::support::{run, transcript, Scratch};

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

#[test]
fn listing_and_finding_look_like_ls_and_find() {
    let s = notes();
    insta::assert_snapshot!(transcript(&run(&s.0, &["ls", "notes"])), @r"
    exit: 0
    --- stdout
    archive.zip
    odd\nname.txt
    readme.md
    todo.txt
    --- stderr
    ");
    insta::assert_snapshot!(transcript(&run(&s.0, &["ls", "-l", "notes"])), @r"
    exit: 0
    --- stdout
    total 16
    -rw-r--r-- 1 OWNER GROUP 13 Jan  2  2026 archive.zip
    -rw-r--r-- 1 OWNER GROUP  2 Jan  2  2026 odd\nname.txt
    -rw-r--r-- 1 OWNER GROUP 18 Jan  2  2026 readme.md
    -rw-r--r-- 1 OWNER GROUP 29 Jan  2  2026 todo.txt
    --- stderr
    ");
    insta::assert_snapshot!(transcript(&run(&s.0, &["find", "notes"])), @r"
    exit: 0
    --- stdout
    notes/archive.zip
    notes/odd\nname.txt
    notes/readme.md
    notes/todo.txt
    --- stderr
    ");
}

#[test]
fn searching_and_reading_look_like_grep_head_tail_and_wc() {
    let s = notes();
    insta::assert_snapshot!(transcript(&run(&s.0, &["grep", "TODO", "notes"])), @r"
    exit: 0
    --- stdout
    notes/readme.md:TODO list
    notes/todo.txt:TODO: call the bank
    --- stderr
    aoi-coreutils grep: notes/archive.zip: binary file skipped (NUL byte at offset 4)
    ");
    insta::assert_snapshot!(transcript(&run(&s.0, &["head", "-n", "1", "notes/todo.txt"])), @r"
    exit: 0
    --- stdout
    buy milk
    --- stderr
    ");
    insta::assert_snapshot!(
        transcript(&run(&s.0, &["tail", "-n", "1", "notes/todo.txt", "notes/readme.md"])),
        @r"
    exit: 0
    --- stdout
    ==> notes/todo.txt <==
    TODO: call the bank

    ==> notes/readme.md <==
    TODO list
    --- stderr
    "
    );
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
    // A binary file is named, never decoded onto the terminal.
    insta::assert_snapshot!(transcript(&run(&s.0, &["cat", "notes/archive.zip"])), @r#"
    exit: 0
    --- stdout
    --- stderr
    aoi-coreutils cat: "notes/archive.zip": binary file (a NUL byte at offset 4), not shown; --binary writes its bytes
    "#);
}

#[test]
fn refusals_and_usage_errors_go_to_stderr_and_plans_to_stdout() {
    let s = notes();
    insta::assert_snapshot!(
        transcript(&run(&s.0, &["rm", "notes/todo.txt", "notes/readme.md"])),
        @r"
    exit: 77
    --- stdout
    --- stderr
    aoi-coreutils rm: refusing to remove 2 items without --confirm
    aoi-coreutils rm: hint: re-run with --confirm --confirm-count 2
    "
    );
    assert!(
        s.path("notes/todo.txt").exists(),
        "a refusal removes nothing"
    );
    insta::assert_snapshot!(
        transcript(&run(&s.0, &["mkdir", "--dry-run", "-p", "out/a"])),
        @r"
    exit: 0
    --- stdout
    aoi-coreutils mkdir: would create directory 'out'
    aoi-coreutils mkdir: would create directory 'out/a'
    --- stderr
    "
    );
    assert!(!s.path("out").exists(), "a plan creates nothing");
    insta::assert_snapshot!(transcript(&run(&s.0, &["ls", "--bogus"])), @r"
    exit: 64
    --- stdout
    --- stderr
    error: unexpected argument '--bogus' found

      tip: to pass '--bogus' as a value, use '-- --bogus'

    Usage: aoi-coreutils ls [OPTIONS] [PATH]...

    For more information, try '--help'.
    ");
}
