//! `ls`: entries, bounds and cursors (§15), item errors (§9.1), and the GNU look.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::{machine, of_type, parse, run, run_unprivileged, summary, Scratch};

#[test]
fn paging_visits_every_entry_exactly_once() {
    let s = Scratch::new("ls-pages");
    for i in 0..250 {
        s.file(&format!("f{i:03}"), b"x");
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = vec!["ls", "--limit", "60"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let (code, events) = machine(&s.0, &args);
        assert_eq!(code, 0);
        pages += 1;
        seen.extend(
            of_type(&events, "entry")
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_owned()),
        );
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
    assert_eq!(pages, 5);
    let unique: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!((seen.len(), unique.len()), (250, 250));
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in name order");
}

#[test]
fn the_default_bound_is_100_entries() {
    let s = Scratch::new("ls-default");
    for i in 0..150 {
        s.file(&format!("f{i:03}"), b"");
    }
    let (_, events) = machine(&s.0, &["ls"]);
    assert_eq!(of_type(&events, "entry").len(), 100);
    assert_eq!(summary(&events)["truncated"], true);
}

#[test]
fn a_missing_operand_fails_the_run_and_the_others_are_listed() {
    let s = Scratch::new("ls-missing");
    s.file("here", b"1");
    let (code, events) = machine(&s.0, &["ls", "here", "nope"]);
    assert_ne!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["scope"], "item");
    assert_eq!(errors[0]["category"], "not_found");
    assert_eq!(errors[0]["target"], "nope");
    assert_eq!(of_type(&events, "entry").len(), 1);
    assert_eq!(summary(&events)["ok"], false);
}

#[test]
fn an_unreadable_subdirectory_is_an_item_error_and_the_walk_goes_on() {
    let s = Scratch::new("ls-unreadable");
    s.file("a/x", b"");
    s.file("b/y", b"");
    s.lock("a");
    let (code, events) = parse(&run_unprivileged(&s.0, &["ls", "-R", "--output", "jsonl"]));
    assert_eq!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("authz"), Some("a"))
    );
    assert!(of_type(&events, "entry").iter().any(|e| e["path"] == "b/y"));
    assert_eq!(summary(&events)["partial"], true);
}

#[test]
fn sorts_by_name_time_and_size_are_those_of_gnu_ls() {
    // Names that share their first eight bytes or are prefixes of others, sizes and times
    // with ties (broken by name), as `LC_ALL=C ls` orders them.
    let s = Scratch::new("ls-sorts");
    let names = [
        "abc",
        "abcdefgh",
        "abcdefghij",
        "abcdefghi",
        "abcdefgh~",
        "B",
        "a b",
        "zz",
        "é",
        "_",
    ];
    for (i, name) in names.iter().enumerate() {
        s.file(name, &vec![b'x'; i % 3 * 10]);
        let time = std::time::UNIX_EPOCH
            + std::time::Duration::from_secs(1_700_000_000 + (i % 4) as u64 * 60);
        let file = std::fs::File::options()
            .write(true)
            .open(s.path(name))
            .unwrap();
        file.set_modified(time).unwrap();
    }
    for args in [
        &["-1"][..],
        &["-t"],
        &["-S"],
        &["-r"],
        &["-tr"],
        &["-Sr"],
        &["-lt"],
    ] {
        assert_same_as_gnu_ls(&s, args);
    }
}

#[test]
fn long_human_output_is_the_gnu_ls_output() {
    let s = Scratch::new("ls-gnu");
    s.file("a.txt", b"hello\n");
    s.file("b c", b"x");
    s.file("d/sub/f", b"z");
    std::os::unix::fs::symlink("a.txt", s.path("ln")).unwrap();
    for args in [
        &["-la"][..],
        &["-l"],
        &["-1"],
        &["-lR"],
        &["-lS"],
        &["-ltr"],
        &["-A"],
    ] {
        assert_same_as_gnu_ls(&s, args);
    }
}

/// `aoi-coreutils ls ARGS` in `s` prints what `LC_ALL=C TZ=UTC ls ARGS` prints, and succeeds.
fn assert_same_as_gnu_ls(s: &Scratch, args: &[&str]) {
    let ours = run(&s.0, &[&["ls"][..], args].concat());
    let gnu = std::process::Command::new("ls")
        .args(args)
        .current_dir(&s.0)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&gnu.stdout),
        "ls {args:?}"
    );
    assert_eq!(ours.status.code(), Some(0), "ls {args:?}");
}

/// GNU's display flags in machine mode (`ls -lh`, `du -sh`, `cat -n`, `grep -h`): the same
/// events as without them, never `-h` read as `--help`; a GNU flag machine mode does not
/// take (`touch -h`) is a usage error, never help with exit 0.
#[test]
fn gnu_display_flags_change_nothing_in_machine_mode() {
    let s = Scratch::new("display-flags");
    s.file("d/a.txt", b"alpha\n");
    s.file("d/.hidden", b"alpha\n");
    s.file("d/sub/b.txt", &[b'x'; 5000]);
    let strip = |events: Vec<Value>| -> Vec<Value> {
        events
            .into_iter()
            .filter(|e| !e["type"].as_str().unwrap_or("").starts_with("aoi:"))
            .map(|mut e| {
                e.as_object_mut().unwrap().remove("aoi");
                e
            })
            .collect()
    };
    for (with, without) in [
        (&["ls", "-lhF", "d"][..], &["ls", "-l", "d"][..]),
        (&["ls", "-lah", "d"], &["ls", "-la", "d"]),
        (&["du", "-sh", "d"], &["du", "-s", "d"]),
        (&["du", "-hc", "d"], &["du", "d"]),
        (&["cat", "-nA", "d/a.txt"], &["cat", "d/a.txt"]),
        (&["grep", "-h", "alpha", "d"], &["grep", "alpha", "d"]),
    ] {
        let (code, events) = machine(&s.0, with);
        assert_eq!(code, 0, "{with:?}");
        let (_, plain) = machine(&s.0, without);
        let events = strip(events);
        assert!(!events.is_empty(), "{with:?}");
        assert_eq!(events, strip(plain), "{with:?}");
    }
    let (code, events) = machine(&s.0, &["touch", "-h", "d/a.txt"]);
    assert_eq!(code, 64);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "usage");
    // `--help` is still help.
    let out = run(&s.0, &["ls", "--help", "--output", "jsonl"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage"));
    // grep -r is GNU's walk in machine mode: the hidden file is searched, as GNU grep -r.
    let (_, events) = machine(&s.0, &["grep", "-rl", "alpha", "d"]);
    let mut files: Vec<&str> = of_type(&events, "file_match")
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    files.sort_unstable();
    assert_eq!(files, ["d/.hidden", "d/a.txt"]);
}
