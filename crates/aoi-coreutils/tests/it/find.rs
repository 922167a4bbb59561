//! `find`: entries as GNU `find` sees them, gitignore by default, every filter, bounds and
//! cursors (§15), item errors that let the walk go on (§9.1).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{bin, machine, of_type, parse, run, run_unprivileged, summary, Scratch};

/// Arguments that lift the default bounds.
const UNBOUNDED: [&str; 4] = ["--limit", "10000000", "--max-bytes", "10000000000"];

/// The `path` of every entry event.
fn paths(events: &[Value]) -> Vec<String> {
    of_type(events, "entry")
        .iter()
        .map(|e| e["path"].as_str().expect("a path").to_owned())
        .collect()
}

/// `find ARGS` with the bounds lifted, in machine mode.
fn find_all(dir: &Path, args: &[&str]) -> (i32, Vec<Value>) {
    machine(dir, &[&["find"][..], args, &UNBOUNDED].concat())
}

/// What GNU `find ARGS -print0` prints, as paths.
fn gnu_find(dir: &Path, args: &[&str]) -> BTreeSet<String> {
    let out = Command::new("find")
        .args(args)
        .arg("-print0")
        .current_dir(dir)
        .output()
        .expect("GNU find runs");
    out.stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8(p.to_vec()).expect("UTF-8"))
        .collect()
}

/// Sets a file's modification time with `touch -d`.
fn touch(path: &Path, date: &str) {
    let ok = Command::new("touch")
        .args(["-h", "-d", date])
        .arg(path)
        .status()
        .expect("touch runs")
        .success();
    assert!(ok);
}

fn sorted_by_components(paths: &[String]) -> bool {
    paths
        .windows(2)
        .all(|w| Path::new(&w[0]) < Path::new(&w[1]))
}

/// A tree with odd names: spaces, a newline, a hidden file and directory, links.
fn odd_tree(tag: &str) -> Scratch {
    let s = Scratch::new(tag);
    s.file("a b/c d.txt", b"1");
    s.file("a b/new\nline", b"22");
    s.file("a-c", b"");
    s.file("a/b/deep.rs", b"fn main() {}\n");
    s.file(".hidden/inner", b"h");
    s.file(".dot", b"");
    s.file("tab\there", b"");
    std::fs::create_dir(s.path("empty")).unwrap();
    symlink("a-c", s.path("link")).unwrap();
    symlink("nowhere", s.path("dangling")).unwrap();
    s
}

#[test]
fn entries_are_those_gnu_find_lists_in_path_order() {
    let s = odd_tree("find-gnu");
    let (code, events) = find_all(&s.0, &[".", "--no-ignore", "--hidden"]);
    assert_eq!(code, 0);
    let ours = paths(&events);
    let gnu = gnu_find(&s.0, &[".", "-mindepth", "1"]);
    assert_eq!(ours.iter().cloned().collect::<BTreeSet<_>>(), gnu);
    assert_eq!(ours.len(), gnu.len(), "each entry once");
    assert!(sorted_by_components(&ours), "{ours:?}");
    // Without an operand the paths have no `./`, as fd prints them.
    let (_, events) = find_all(&s.0, &["--no-ignore", "--hidden"]);
    let bare = paths(&events);
    let stripped: Vec<String> = ours.iter().map(|p| p[2..].to_owned()).collect();
    assert_eq!(bare, stripped);
    // Every entry is whole: depth, kind, size as lstat sees them.
    let entries = of_type(&events, "entry");
    let link = entries.iter().find(|e| e["path"] == "link").unwrap();
    assert_eq!(
        (
            link["kind"].as_str(),
            link["target"].as_str(),
            link["depth"].as_u64()
        ),
        (Some("symlink"), Some("a-c"), Some(1))
    );
    let deep = entries.iter().find(|e| e["path"] == "a/b/deep.rs").unwrap();
    assert_eq!(
        (deep["size"].as_u64(), deep["depth"].as_u64()),
        (Some(13), Some(3))
    );
    assert_eq!(summary(&events)["ok"], true);
}

#[test]
fn hidden_and_ignored_entries_are_left_out_by_default() {
    let s = Scratch::new("find-ignore");
    s.git_init();
    s.file(".gitignore", b"*.log\nbuild/\n");
    s.file("keep.txt", b"");
    s.file("debug.log", b"");
    s.file("build/out.o", b"");
    s.file("src/.env", b"");
    s.file("src/main.rs", b"");
    s.file("notes/.ignore", b"draft*\n");
    s.file("notes/draft1", b"");
    s.file("notes/final", b"");
    let (_, events) = find_all(&s.0, &[]);
    assert_eq!(
        paths(&events),
        ["keep.txt", "notes", "notes/final", "src", "src/main.rs"]
    );
    let (_, events) = find_all(&s.0, &["--hidden"]);
    let hidden = paths(&events);
    assert!(hidden.contains(&"src/.env".to_owned()), "{hidden:?}");
    assert!(hidden.contains(&".gitignore".to_owned()));
    assert!(!hidden.contains(&"debug.log".to_owned()));
    let (_, events) = find_all(&s.0, &["--no-ignore"]);
    let all = paths(&events);
    for p in ["debug.log", "build", "build/out.o", "notes/draft1"] {
        assert!(all.contains(&p.to_owned()), "{p} in {all:?}");
    }
    assert!(!all.iter().any(|p| p.starts_with('.') || p.contains("/.")));
}

#[test]
fn name_glob_and_regex_filters_select_entries() {
    let s = odd_tree("find-match");
    s.file("src/lib.rs", b"");
    s.file("src/bin/tool.rs", b"");
    s.file("README.md", b"");
    let list = |args: &[&str]| {
        let (code, events) = find_all(&s.0, args);
        assert_eq!(code, 0, "{args:?}");
        paths(&events)
    };
    assert_eq!(
        list(&["--name", "*.rs"]),
        ["a/b/deep.rs", "src/bin/tool.rs", "src/lib.rs"]
    );
    assert_eq!(
        list(&["--name", "*.rs", "--name", "*.md"]),
        ["README.md", "a/b/deep.rs", "src/bin/tool.rs", "src/lib.rs"]
    );
    // A path glob: `*` stays within a component, `**` crosses them.
    assert_eq!(list(&["--glob", "src/*.rs"]), ["src/lib.rs"]);
    assert_eq!(
        list(&["--glob", "src/**/*.rs"]),
        ["src/bin/tool.rs", "src/lib.rs"]
    );
    assert_eq!(
        list(&["--glob", "**/*.rs", "--glob", "!src/bin/**"]),
        ["a/b/deep.rs", "src/lib.rs"]
    );
    // Below the operand or as shown: both match.
    let (_, events) = find_all(&s.0, &["src", "--glob", "*.rs"]);
    assert_eq!(paths(&events), ["src/lib.rs"]);
    // --regex searches the name; --full-path the shown path.
    assert_eq!(list(&["--regex", "^t"]), ["src/bin/tool.rs", "tab\there"]);
    assert_eq!(
        list(&["--regex", "^src/b", "--full-path"]),
        ["src/bin", "src/bin/tool.rs"]
    );
    assert_eq!(list(&["--regex", "\\n"]), ["a b/new\nline"]);
    // A bad pattern is a usage error, and nothing is listed.
    let (code, events) = machine(&s.0, &["find", "--regex", "("]);
    assert_eq!(code, 64);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "usage");
    assert!(paths(&events).is_empty());
}

#[test]
fn type_size_and_depth_filters_select_entries() {
    let s = odd_tree("find-kinds");
    s.file("big", &vec![b'x'; 3 * 1024]);
    s.file("small", &vec![b'x'; 1024]);
    let list = |args: &[&str]| {
        let (code, events) = find_all(&s.0, args);
        assert_eq!(code, 0, "{args:?}");
        paths(&events)
    };
    assert_eq!(list(&["--type", "d"]), ["a", "a/b", "a b", "empty"]);
    assert_eq!(list(&["--type", "l"]), ["dangling", "link"]);
    assert_eq!(
        list(&["--type", "l", "--type", "d", "--max-depth", "1"]),
        ["a", "a b", "dangling", "empty", "link"]
    );
    let files = list(&["--type", "f"]);
    assert_eq!(files.len(), 7, "{files:?}");
    // Sizes: +N at least, -N at most, N exactly; k is 1024; only regular files.
    assert_eq!(list(&["--size", "+2k"]), ["big"]);
    assert_eq!(list(&["--size", "1k"]), ["small"]);
    assert_eq!(list(&["--size", "+1k", "--size", "-3k"]), ["big", "small"]);
    assert_eq!(list(&["--size=-0"]), ["a-c", "tab\there"]);
    // Depths count from the operand: its entries are at 1.
    assert_eq!(list(&["--min-depth", "3"]), ["a/b/deep.rs"]);
    assert_eq!(
        list(&["--max-depth", "1", "--name", "a*"]),
        ["a", "a b", "a-c"]
    );
    // --min-depth 0 lists the operand itself; a file operand is listed in any case.
    let (_, events) = find_all(&s.0, &["a", "--min-depth", "0", "--max-depth", "1"]);
    assert_eq!(paths(&events), ["a", "a/b"]);
    let (_, events) = find_all(&s.0, &["big", "small"]);
    assert_eq!(paths(&events), ["big", "small"]);
}

#[test]
fn time_filters_compare_modification_times() {
    let s = Scratch::new("find-time");
    s.file("old", b"");
    s.file("recent", b"");
    s.file("now", b"");
    touch(&s.path("old"), "2001-06-01 00:00:00 UTC");
    touch(&s.path("recent"), "3 hours ago");
    let list = |args: &[&str]| {
        let (code, events) = find_all(&s.0, args);
        assert_eq!(code, 0, "{args:?}");
        paths(&events)
    };
    assert_eq!(list(&["--newer-than", "1h"]), ["now"]);
    assert_eq!(list(&["--newer-than", "1d"]), ["now", "recent"]);
    assert_eq!(list(&["--older-than", "2h"]), ["old", "recent"]);
    assert_eq!(list(&["--older-than", "2010-06-01"]), ["old"]);
    assert_eq!(
        list(&["--newer-than", "2000-12-31T23:59:59Z", "--older-than", "1h"]),
        ["old", "recent"]
    );
    let (code, events) = machine(&s.0, &["find", "--newer-than", "yesterday"]);
    assert_eq!(code, 64, "not a duration nor a date: a usage error");
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "usage");
}

#[test]
fn a_symlink_loop_under_follow_is_an_item_error_and_the_walk_goes_on() {
    let s = Scratch::new("find-loop");
    s.file("a/x", b"");
    s.file("b/y", b"");
    symlink("..", s.path("a/up")).unwrap();
    symlink("../b", s.path("a/to-b")).unwrap();
    symlink("nowhere", s.path("dangling")).unwrap();
    // Not followed, a link is an entry like any other.
    let (code, events) = find_all(&s.0, &[]);
    assert_eq!(code, 0);
    assert!(of_type(&events, "aoi:error").is_empty());
    assert_eq!(
        paths(&events),
        ["a", "a/to-b", "a/up", "a/x", "b", "b/y", "dangling"]
    );
    let (code, events) = find_all(&s.0, &["--follow"]);
    assert_eq!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(
        (
            errors[0]["code"].as_str(),
            errors[0]["scope"].as_str(),
            errors[0]["target"].as_str()
        ),
        (Some("SYMLINK_LOOP"), Some("item"), Some("a/up"))
    );
    // The link to b is walked as a directory; a dangling link is still listed.
    assert_eq!(
        paths(&events),
        ["a", "a/to-b", "a/to-b/y", "a/x", "b", "b/y", "dangling"]
    );
    let entries = of_type(&events, "entry");
    assert_eq!(entries[1]["kind"], "dir");
    assert_eq!(entries[6]["kind"], "symlink");
    assert_eq!(summary(&events)["partial"], true);
    assert_eq!(summary(&events)["ok"], true);
}

#[test]
fn an_unreadable_directory_is_an_item_error_and_the_walk_goes_on() {
    let s = Scratch::new("find-unreadable");
    s.file("a/secret", b"");
    s.file("b/y", b"");
    s.file("c", b"");
    s.lock("a");
    let mut args = vec!["find", "--output", "jsonl"];
    args.extend(UNBOUNDED);
    let (code, events) = parse(&run_unprivileged(&s.0, &args));
    assert_eq!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("authz"), Some("a"))
    );
    assert_eq!(paths(&events), ["a", "b", "b/y", "c"]);
    // The error stands right after its directory, in the order of the page.
    assert_eq!(events[2]["type"], "aoi:error");
    assert_eq!(summary(&events)["partial"], true);
    // A page that ends at the directory resumes with its error, once.
    let mut first = vec!["find", "--limit", "1", "--output", "jsonl"];
    first.extend(&UNBOUNDED[2..]);
    let (_, events) = parse(&run_unprivileged(&s.0, &first));
    assert_eq!(paths(&events), ["a"]);
    let cursor = summary(&events)["next_cursor"].as_str().unwrap().to_owned();
    let (_, events) = parse(&run_unprivileged(
        &s.0,
        &[
            "find", "--limit", "2", "--cursor", &cursor, "--output", "jsonl",
        ],
    ));
    assert_eq!(of_type(&events, "aoi:error").len(), 1);
    assert_eq!(paths(&events), ["b"]);
}

#[test]
fn a_name_that_is_not_utf8_is_an_item_error_and_the_rest_is_listed() {
    let s = Scratch::new("find-utf8");
    s.file("fine", b"");
    std::fs::write(s.0.join(OsStr::from_bytes(b"bad\xffname")), b"").unwrap();
    s.file("zz", b"");
    let (code, events) = find_all(&s.0, &[]);
    assert_eq!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["code"], "NAME_NOT_UTF8");
    assert_eq!(errors[0]["scope"], "item");
    assert_eq!(errors[0]["details"]["path_base64"], "YmFk/25hbWU=");
    assert_eq!(paths(&events), ["fine", "zz"]);
    assert_eq!(summary(&events)["partial"], true);
}

#[test]
fn a_missing_operand_fails_the_run_and_the_others_are_listed() {
    let s = Scratch::new("find-missing");
    s.file("here/x", b"");
    let (code, events) = find_all(&s.0, &["here", "nope"]);
    assert_ne!(code, 0);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("not_found"), Some("nope"))
    );
    assert_eq!(paths(&events), ["here/x"]);
    assert_eq!(summary(&events)["ok"], false);
}

/// A directory far larger than one `getdents` buffer (about a thousand names) is listed whole,
/// as GNU lists it, and paged in ten pages, each entry once.
#[test]
fn a_20k_entry_directory_is_listed_whole_and_paged_exactly_once() {
    let s = Scratch::new("find-20k");
    let dir = s.path("many");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..20_000 {
        std::fs::File::create(dir.join(format!("f{i}"))).unwrap();
    }
    let (code, events) = find_all(&s.0, &["many"]);
    assert_eq!(code, 0);
    let all = paths(&events);
    assert_eq!(all.len(), 20_000);
    let gnu = gnu_find(&s.0, &["many", "-mindepth", "1"]);
    assert_eq!(all.iter().cloned().collect::<BTreeSet<_>>(), gnu);
    // `ls` of the same directory in human mode (GNU's, unbounded) prints what GNU `ls`
    // prints, byte for byte.
    let ours = Command::new(bin())
        .args(["ls", "many"])
        .current_dir(&s.0)
        .env("LC_ALL", "C")
        .output()
        .expect("aoi-coreutils runs");
    let theirs = Command::new("ls")
        .arg("many")
        .current_dir(&s.0)
        .env("LC_ALL", "C")
        .output()
        .expect("GNU ls runs");
    assert_eq!(ours.status.code(), Some(0));
    assert!(
        ours.stdout == theirs.stdout,
        "ls of 20k entries differs from GNU ls"
    );
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = vec![
            "find",
            "many",
            "--limit",
            "2000",
            "--max-bytes",
            "100000000",
        ];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let (code, events) = machine(&s.0, &args);
        assert_eq!(code, 0);
        pages += 1;
        seen.extend(paths(&events));
        match summary(&events)["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 10);
    assert_eq!(seen, all, "every entry once, in the same order");
}

#[test]
fn pages_cut_by_bytes_or_the_default_bound_resume_where_they_stopped() {
    let s = odd_tree("find-bytes");
    for d in 0..5 {
        for f in 0..80 {
            s.file(&format!("d{d}/file-with-a-longish-name-{f:03}"), b"");
        }
    }
    let (_, events) = find_all(&s.0, &[]);
    let all = paths(&events);
    assert_eq!(all.len(), 416);
    let (_, first) = machine(&s.0, &["find"]);
    assert_eq!(paths(&first).len(), 100, "the default bound");
    assert_eq!(summary(&first)["truncated"], true);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec!["find", "--limit", "100000", "--max-bytes", "20000"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let (_, events) = machine(&s.0, &args);
        let page = paths(&events);
        assert!(page.len() < 100, "cut by bytes");
        seen.extend(page);
        match summary(&events)["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen, all);
    // A cursor belongs to its query.
    let c = summary(&first)["next_cursor"].as_str().unwrap().to_owned();
    let (code, events) = machine(&s.0, &["find", "--hidden", "--cursor", &c]);
    assert_ne!(code, 0);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "CURSOR_MISMATCH");
}

#[test]
fn human_output_is_gnu_find_output() {
    let s = odd_tree("find-human");
    // Human mode is GNU find (uutils findutils): its syntax, its paths (the start path first,
    // dotfiles included), its bytes on a pipe (a newline in a name is a newline), its exit
    // status. Entries come in the order of the directory, so both sides are sorted.
    for args in [
        &[][..],
        &["."],
        &[".", "-name", "*.txt", "-type", "f"],
        &[".", "-maxdepth", "1", "-type", "d"],
        &[".", "!", "-name", "*.txt", "-mindepth", "1"],
        &["no-such-dir"],
    ] {
        let mut ours_args = vec!["find"];
        ours_args.extend(args);
        let ours = run(&s.0, &ours_args);
        let theirs = Command::new("find")
            .args(args)
            .current_dir(&s.0)
            .output()
            .expect("GNU find runs");
        let sorted = |bytes: &[u8]| {
            let mut lines: Vec<Vec<u8>> =
                bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
            lines.sort();
            lines
        };
        assert_eq!(ours.status.code(), theirs.status.code(), "find {args:?}");
        assert_eq!(
            sorted(&ours.stdout),
            sorted(&theirs.stdout),
            "find {args:?}"
        );
    }
}

/// What a run lists, in order: each entry's path and each item error's target.
fn items(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e["type"].as_str() {
            Some("entry") => e["path"].as_str().map(str::to_owned),
            Some("aoi:error") => e["target"].as_str().map(|t| format!("error:{t}")),
            _ => None,
        })
        .collect()
}

#[test]
fn any_number_of_threads_walks_the_same_items_in_the_same_order_and_pages() {
    let s = Scratch::new("find-threads");
    s.git_init();
    s.file(".gitignore", b"/build\n*.log\n");
    for top in ["a", "b b", "c", "d-e", "d"] {
        for mid in ["x", "y"] {
            s.file(&format!("{top}/{mid}/one.txt"), b"1");
            s.file(&format!("{top}/{mid}/two.log"), b"2");
            s.file(&format!("{top}/{mid}/deep/three.rs"), b"3");
        }
        s.file(
            &format!("{top}/build/kept"),
            b"an unanchored name is not /build",
        );
    }
    s.file("build/out.o", b"");
    s.file("top.txt", b"");
    s.file(".hidden/inner", b"");
    s.file("c/.ignore", b"y/\n");
    s.file("locked/inside", b"");
    s.lock("locked");
    let walk = |threads: &str, extra: &[&str]| {
        let mut args = vec!["find", "--threads", threads, "--output", "jsonl"];
        args.extend(extra);
        let (code, events) = parse(&run_unprivileged(&s.0, &args));
        assert_eq!(code, 0, "{events:?}");
        events
    };
    for extra in [
        &[][..],
        &["--hidden"],
        &["--max-depth", "2"],
        &["--min-depth", "3", "--type", "f"],
    ] {
        let all = [extra, &UNBOUNDED[..]].concat();
        let one = items(&walk("1", &all));
        assert!(one.contains(&"error:locked".to_owned()), "{one:?}");
        assert!(one.contains(&"a/build/kept".to_owned()) || extra.len() == 2);
        assert!(!one
            .iter()
            .any(|p| p.starts_with("build") || p.ends_with(".log")));
        assert!(!one.iter().any(|p| p.starts_with("c/y")), "c/.ignore holds");
        for threads in ["2", "5"] {
            assert_eq!(
                items(&walk(threads, &all)),
                one,
                "--threads {threads} {extra:?}"
            );
        }
        // Pages of 3 visit the same items, each once.
        let mut paged = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut args = vec!["--limit", "3"];
            args.extend(extra);
            if let Some(c) = &cursor {
                args.extend(["--cursor", c.as_str()]);
            }
            let events = walk("5", &args);
            paged.extend(items(&events));
            match summary(&events)["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(paged, one, "paged {extra:?}");
    }
}

/// Machine mode takes GNU find's expression (`find . -name '*.rs' -type f --output jsonl`):
/// for each, the paths of the `entry` events are the lines GNU find prints (in path order
/// rather than the file system's), hidden entries, the start path and `-prune` included.
#[test]
fn machine_mode_takes_gnu_finds_expression() {
    let s = Scratch::new("find-gnu-expr");
    s.file("src/main.rs", b"fn main() {}\n");
    s.file("src/lib.rs", b"");
    s.file("src/.hidden.rs", b"x\n");
    s.file("node_modules/pkg/index.js", b"x\n");
    s.file("docs/README.md", &[b'x'; 3000]);
    s.file("empty.txt", b"");
    std::fs::create_dir_all(s.path("emptydir")).unwrap();
    std::os::unix::fs::symlink("src/main.rs", s.path("link.rs")).unwrap();
    for expr in [
        &["-name", "*.rs"][..],
        &["-name", "*.rs", "-type", "f"],
        &["-type", "d"],
        &["-type", "l"],
        &["-type", "f,l", "-name", "*.rs"],
        &["-iname", "readme*"],
        &["-path", "./src/*"],
        &["!", "-name", "*.rs", "-type", "f"],
        &["-name", "*.js", "-o", "-name", "*.md"],
        &[
            "(", "-name", "*.js", "-o", "-name", "*.md", ")", "-type", "f",
        ],
        &[
            "-name",
            "node_modules",
            "-prune",
            "-o",
            "-type",
            "f",
            "-print",
        ],
        &["-name", "node_modules", "-prune"],
        &["-maxdepth", "1"],
        &["-mindepth", "2", "-maxdepth", "2"],
        &["-empty"],
        &["-size", "+1k"],
        &["-size", "-1"],
        &["-regex", ".*\\.\\(rs\\|md\\)"],
        &["-mtime", "-1", "-type", "f"],
        &["-newer", "src/lib.rs"],
    ] {
        let gnu = std::process::Command::new("find")
            .arg(".")
            .args(expr)
            .current_dir(&s.0)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        assert!(gnu.status.success(), "{expr:?}");
        let mut expected: Vec<String> = String::from_utf8_lossy(&gnu.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        expected.sort();
        let (code, events) = machine(
            &s.0,
            &[&["find", "."][..], expr, &["--limit", "1000"]].concat(),
        );
        assert_eq!(code, 0, "{expr:?}");
        let mut paths: Vec<String> = of_type(&events, "entry")
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_owned())
            .collect();
        paths.sort();
        assert_eq!(paths, expected, "{expr:?}");
    }
    // What machine mode does not run is refused, with what to do instead.
    for expr in [
        &["-delete"][..],
        &["-exec", "rm", "{}", ";"],
        &["-printf", "%p\n"],
    ] {
        let (code, events) = machine(&s.0, &[&["find", "."][..], expr].concat());
        assert_eq!(code, 64, "{expr:?}");
        assert_eq!(
            of_type(&events, "aoi:error")[0]["code"],
            "EXPRESSION_INVALID"
        );
    }
    // fd's spellings stay: `-H` is --hidden when no GNU word is given.
    let (_, events) = machine(&s.0, &["find", "src", "-H", "--name", "*.rs"]);
    assert_eq!(of_type(&events, "entry").len(), 3);
}
