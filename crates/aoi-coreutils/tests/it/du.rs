//! `du`: the numbers of GNU `du` (sparse files, empty files, hard links once), largest
//! first, bounds and cursors (§15), item errors (§9.1).

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{machine, of_type, parse, run, run_unprivileged, summary, Scratch};

/// A tree with a 1 GiB sparse file, empty files and directories, hard links and a link.
fn tree(tag: &str) -> Scratch {
    let s = Scratch::new(tag);
    s.file("data/blob", &vec![b'x'; 100_000]);
    s.file("data/small", b"hello\n");
    s.file("data/deep/er/leaf", &vec![b'y'; 5000]);
    s.file("empty-file", b"");
    s.file("docs/a b.txt", &vec![b'z'; 3000]);
    std::fs::create_dir_all(s.path("empty-dir/inner")).unwrap();
    let ok = Command::new("truncate")
        .args(["-s", "1G"])
        .arg(s.path("data/sparse"))
        .status()
        .unwrap()
        .success();
    assert!(ok, "truncate");
    // Hard links in one directory, so which name counts does not depend on readdir order.
    std::fs::hard_link(s.path("data/blob"), s.path("data/blob-again")).unwrap();
    std::fs::hard_link(s.path("data/blob"), s.path("data/blob-third")).unwrap();
    symlink("data/blob", s.path("link")).unwrap();
    s
}

/// GNU `du ARGS` in `dir`: its `size\tpath` lines, as a set.
fn gnu_du(dir: &Path, args: &[&str]) -> BTreeSet<(u64, String)> {
    let out = Command::new("du")
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .output()
        .expect("GNU du runs");
    assert!(out.status.success());
    lines(&out.stdout)
}

fn lines(text: &[u8]) -> BTreeSet<(u64, String)> {
    String::from_utf8_lossy(text)
        .lines()
        .map(|l| {
            let (n, p) = l.split_once('\t').expect("size<TAB>path");
            (n.parse().expect("a number"), p.to_owned())
        })
        .collect()
}

/// Our usages as (KiB or bytes, path).
fn usages(events: &[Value], bytes: bool) -> Vec<(u64, String)> {
    of_type(events, "usage")
        .iter()
        .map(|u| {
            let n = if bytes {
                u["apparent_bytes"].as_u64().unwrap()
            } else {
                u["disk_bytes"].as_u64().unwrap().div_ceil(1024)
            };
            (n, u["path"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn the_numbers_are_gnu_du_numbers() {
    let s = tree("du-gnu");
    for (ours, gnu, bytes) in [
        (&["du"][..], &["--block-size=1K"][..], false),
        (&["du", "-b"], &["-b"], true),
        (&["du", "-s"], &["-s", "--block-size=1K"], false),
        (&["du", "-sb"], &["-sb"], true),
        (&["du", "-a"], &["-a", "--block-size=1K"], false),
        (&["du", "-ab"], &["-ab"], true),
        (
            &["du", "--max-depth", "1"],
            &["--max-depth=1", "--block-size=1K"],
            false,
        ),
        (
            &["du", "-s", "data", "docs", "empty-file"],
            &["-s", "--block-size=1K", "data", "docs", "empty-file"],
            false,
        ),
    ] {
        let mut args = ours.to_vec();
        args.extend(["--limit", "1000"]);
        let (code, events) = machine(&s.0, &args);
        assert_eq!(code, 0, "{ours:?}");
        // With -a, which name of a hard-linked file is shown depends on the order of the
        // walk (GNU: readdir's; ours: by name), so those lines are left out of the
        // comparison; the totals that hold them are compared.
        let comparable = |set: BTreeSet<(u64, String)>| -> BTreeSet<(u64, String)> {
            set.into_iter()
                .filter(|(_, p)| !p.contains("blob"))
                .collect()
        };
        let expected = comparable(gnu_du(&s.0, gnu));
        let got = usages(&events, bytes);
        let got_set: BTreeSet<_> = got.iter().cloned().collect();
        assert_eq!(got_set.len(), got.len(), "{ours:?}: each once");
        assert_eq!(comparable(got_set), expected, "{ours:?}");
        // Human mode is GNU du (uutils'): the same numbers, GNU's format, unbounded (so no
        // --limit, which GNU does not know). Except -b: uutils 0.12 leaves a directory's own
        // size out of its apparent size, where GNU counts it (COMPAT.md); machine mode, above,
        // has GNU's numbers.
        let human = run(&s.0, ours);
        if bytes {
            assert_eq!(human.status.code(), Some(0), "{ours:?} human");
        } else {
            assert_eq!(comparable(lines(&human.stdout)), expected, "{ours:?} human");
        }
    }
    // The sparse file's length is counted by -b, not its (empty) blocks; a hard-linked file
    // once; what the totals hold.
    let (_, events) = machine(&s.0, &["du", "-s", "data"]);
    let data = of_type(&events, "usage")[0];
    assert_eq!(data["apparent_bytes"].as_u64().unwrap() >> 30, 1);
    assert!(data["disk_bytes"].as_u64().unwrap() < 1 << 20);
    assert_eq!(
        (data["files"].as_u64(), data["dirs"].as_u64()),
        (Some(4), Some(3))
    );
}

#[test]
fn hard_links_across_directories_count_once_in_the_total() {
    let s = Scratch::new("du-links");
    s.file("a/big", &vec![b'x'; 200_000]);
    std::fs::create_dir(s.path("b")).unwrap();
    std::fs::hard_link(s.path("a/big"), s.path("b/big")).unwrap();
    let (_, events) = machine(&s.0, &["du", "-sb"]);
    assert_eq!(
        usages(&events, true),
        gnu_du(&s.0, &["-sb"]).into_iter().collect::<Vec<_>>()
    );
    // And across operands: the second name of a file already counted adds nothing.
    let (_, events) = machine(&s.0, &["du", "-s", "a", "b"]);
    let got = usages(&events, false);
    assert_eq!(got.len(), 2);
    let total: u64 = got.iter().map(|(n, _)| n).sum();
    let gnu: u64 = gnu_du(&s.0, &["-s", "--block-size=1K", "a", "b"])
        .iter()
        .map(|(n, _)| n)
        .sum();
    assert_eq!(total, gnu);
}

#[test]
fn usages_come_largest_first_and_pages_visit_each_once() {
    let s = Scratch::new("du-order");
    for i in 0..30 {
        s.file(&format!("d{i:02}/f"), &vec![b'x'; 4096 * (i % 7 + 1)]);
    }
    let (_, events) = machine(&s.0, &["du", "-b", "--limit", "1000"]);
    let all = usages(&events, true);
    assert_eq!(all.len(), 31);
    assert_eq!(all[0].1, ".", "the total is largest");
    assert!(
        all.windows(2)
            .all(|w| w[0].0 > w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)),
        "by size descending, then path: {all:?}"
    );
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["du", "-b", "--limit", "7"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let (code, events) = machine(&s.0, &args);
        assert_eq!(code, 0);
        seen.extend(usages(&events, true));
        match summary(&events)["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, all);
    // The default bound.
    for i in 0..120 {
        s.file(&format!("many/{i}/x"), b"");
    }
    let (_, events) = machine(&s.0, &["du"]);
    assert_eq!(of_type(&events, "usage").len(), 100);
    assert_eq!(summary(&events)["truncated"], true);
}

#[test]
fn an_unreadable_directory_is_an_item_error_and_the_rest_is_measured() {
    let s = Scratch::new("du-unreadable");
    s.file("locked/secret", &vec![b'x'; 50_000]);
    s.file("open/f", &vec![b'x'; 10_000]);
    s.lock("locked");
    let (code, events) = parse(&run_unprivileged(&s.0, &["du", "--output", "jsonl"]));
    assert_eq!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("authz"), Some("./locked"))
    );
    assert_eq!(events[1]["type"], "aoi:error", "errors come first");
    let paths: BTreeSet<String> = usages(&events, false).into_iter().map(|u| u.1).collect();
    assert_eq!(paths, [".", "./locked", "./open"].map(String::from).into());
    assert_eq!(summary(&events)["partial"], true);
}

#[test]
fn a_missing_operand_fails_the_run_and_the_others_are_measured() {
    let s = Scratch::new("du-missing");
    s.file("here/f", b"x");
    let (code, events) = machine(&s.0, &["du", "-s", "here", "nope"]);
    assert_ne!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("not_found"), Some("nope"))
    );
    assert_eq!(usages(&events, false).len(), 1);
    assert_eq!(summary(&events)["ok"], false);
    let human = run(&s.0, &["du", "-s", "here", "nope"]);
    assert_eq!(human.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&human.stderr).contains("nope"));
}
