//! The write commands: dry runs change nothing (§14.2), `rm` confirmation (§14.3),
//! idempotency keys (§14.4), audit events (§14.5), item errors (§9.1), and the GNU look.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{bin, machine, of_type, parse, run, run_unprivileged, summary, Scratch};

/// What a tree holds, entry by entry: kind, size, mode, modification time, content or link
/// target. Two equal snapshots mean nothing was written.
type Snapshot = BTreeMap<String, (char, u64, u32, i128, Vec<u8>)>;

fn snapshot(root: &Path) -> Snapshot {
    fn walk(root: &Path, path: &Path, out: &mut Snapshot) {
        let meta = fs::symlink_metadata(path).expect("lstat");
        let rel = path
            .strip_prefix(root)
            .expect("under root")
            .to_string_lossy()
            .into_owned();
        let t = meta.file_type();
        let kind = if t.is_dir() {
            'd'
        } else if t.is_symlink() {
            'l'
        } else {
            'f'
        };
        let body = match kind {
            'f' => fs::read(path).expect("read"),
            'l' => fs::read_link(path)
                .expect("readlink")
                .into_os_string()
                .into_encoded_bytes(),
            _ => Vec::new(),
        };
        let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        let size = if kind == 'd' { 0 } else { meta.len() };
        out.insert(rel, (kind, size, meta.mode() & 0o7777, mtime, body));
        if kind == 'd' {
            let mut names: Vec<_> = fs::read_dir(path)
                .expect("readdir")
                .map(|e| e.expect("entry").file_name())
                .collect();
            names.sort();
            for name in names {
                walk(root, &path.join(name), out);
            }
        }
    }
    let mut out = Snapshot::new();
    walk(root, root, &mut out);
    out
}

/// A snapshot without times: what `cp -r` is compared on (names, kinds, sizes, modes, bytes).
fn shape(root: &Path) -> BTreeMap<String, (char, u64, u32, Vec<u8>)> {
    snapshot(root)
        .into_iter()
        .map(|(k, (kind, size, mode, _, body))| (k, (kind, size, mode, body)))
        .collect()
}

/// Runs in `dir` with the idempotency store in `state`, as `support::run` otherwise does.
fn run_with_state(dir: &Path, state: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env("AOI_COREUTILS_STATE_DIR", state)
        .stdin(Stdio::null())
        .output()
        .expect("aoi-coreutils runs")
}

fn machine_with_state(dir: &Path, state: &Path, args: &[&str]) -> (i32, Vec<Value>) {
    let mut all = args.to_vec();
    all.extend(["--output", "jsonl"]);
    parse(&run_with_state(dir, state, &all))
}

/// The domain events of a stream, without their envelopes.
fn domain(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| !e["type"].as_str().unwrap_or("aoi:").starts_with("aoi:"))
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().expect("object").remove("aoi");
            e
        })
        .collect()
}

fn field<'a>(events: &[&'a Value], name: &str) -> Vec<&'a str> {
    events
        .iter()
        .map(|e| e[name].as_str().expect("a string field"))
        .collect()
}

/// A small tree: `tree/{a.txt, bin/run (0755), private/ (0700) {key (0600)}, empty/, link -> a.txt}`.
fn tree(s: &Scratch) -> PathBuf {
    s.file("tree/a.txt", b"hello\n");
    s.file("tree/bin/run", b"#!/bin/sh\necho run\n");
    s.file("tree/private/key", b"secret");
    fs::create_dir_all(s.path("tree/empty")).unwrap();
    std::os::unix::fs::symlink("a.txt", s.path("tree/link")).unwrap();
    let mode =
        |p: &str, m: u32| fs::set_permissions(s.path(p), fs::Permissions::from_mode(m)).unwrap();
    mode("tree/bin/run", 0o755);
    mode("tree/private/key", 0o600);
    mode("tree/private", 0o700);
    s.path("tree")
}

/// The paths under `tree/` a recursive copy or removal touches, in the order effects follow.
const TREE_ENTRIES: usize = 8;

#[test]
fn dry_runs_change_nothing_and_plan_every_path() {
    let s = Scratch::new("write-dry");
    tree(&s);
    s.file("old.txt", b"old");
    let before = snapshot(&s.0);
    let cases: [(&[&str], &[&str]); 6] = [
        (&["mkdir", "-p", "new/a/b"], &["new", "new/a", "new/a/b"]),
        (
            &["touch", "old.txt", "fresh.txt"],
            &["old.txt", "fresh.txt"],
        ),
        (
            &["cp", "-r", "tree", "copy"],
            &[
                "copy",
                "copy/a.txt",
                "copy/bin",
                "copy/bin/run",
                "copy/empty",
                "copy/link",
                "copy/private",
                "copy/private/key",
            ],
        ),
        (&["mv", "old.txt", "tree"], &["old.txt"]),
        (
            &["rm", "-r", "tree"],
            &[
                "tree/a.txt",
                "tree/bin/run",
                "tree/bin",
                "tree/empty",
                "tree/link",
                "tree/private/key",
                "tree/private",
                "tree",
            ],
        ),
        (&["rm", "old.txt", "tree/a.txt"], &["old.txt", "tree/a.txt"]),
    ];
    for (args, targets) in cases {
        let mut all = args.to_vec();
        all.push("--dry-run");
        let (code, events) = machine(&s.0, &all);
        assert_eq!(code, 0, "{args:?}: {events:?}");
        let plans = of_type(&events, "aoi:plan");
        assert_eq!(field(&plans, "target"), targets, "{args:?}");
        assert!(plans
            .iter()
            .all(|p| p["action"].is_string() && p["detail"].is_string()));
        assert!(
            domain(&events).is_empty(),
            "a dry run reports nothing done: {args:?}"
        );
        let sum = summary(&events);
        assert_eq!(sum["ok"], true);
        assert_eq!(sum["properties"]["planned"], targets.len(), "{args:?}");
        assert_eq!(snapshot(&s.0), before, "{args:?} changed the tree");
    }
    // rm's plan says how many entries a confirmed run must name, without confirmation.
    let (_, events) = machine(&s.0, &["rm", "-r", "--dry-run", "tree"]);
    assert_eq!(summary(&events)["properties"]["affected"], TREE_ENTRIES);
    // Human mode is GNU mkdir, which has no --dry-run: its usage error (exit 1), and nothing
    // changes either.
    let out = run(&s.0, &["mkdir", "-p", "--dry-run", "x/y"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(snapshot(&s.0), before);
}

#[test]
fn rm_refusals_change_nothing_and_exit_77() {
    let s = Scratch::new("write-refuse");
    tree(&s);
    s.file("one", b"1");
    s.file("two", b"2");
    let before = snapshot(&s.0);
    let cases: [(&[&str], &str, &str); 5] = [
        (&["rm", "one"], "CONFIRMATION_REQUIRED", "confirm"),
        (
            &["rm", "-r", "tree", "--confirm"],
            "CONFIRM_COUNT_REQUIRED",
            "confirm_count",
        ),
        (
            &["rm", "one", "two", "--confirm"],
            "CONFIRM_COUNT_REQUIRED",
            "confirm_count",
        ),
        (
            &["rm", "-r", "tree", "--confirm", "--confirm-count", "3"],
            "CONFIRM_COUNT_MISMATCH",
            "confirm_count",
        ),
        // -r on one file still needs the count: -r is a bulk operation.
        (
            &["rm", "-r", "one", "--confirm"],
            "CONFIRM_COUNT_REQUIRED",
            "confirm_count",
        ),
    ];
    for (args, code, field) in cases {
        let (exit, events) = machine(&s.0, args);
        assert_eq!(exit, 77, "{args:?}");
        let errors = of_type(&events, "aoi:error");
        assert_eq!(errors.len(), 1, "{args:?}: {events:?}");
        assert_eq!(errors[0]["code"], code, "{args:?}");
        assert_eq!(errors[0]["field"], field);
        assert_eq!(errors[0]["scope"], "process");
        let sum = summary(&events);
        assert_eq!(
            (&sum["ok"], &sum["reason"]),
            (&Value::Bool(false), &Value::from("denied"))
        );
        assert!(domain(&events).is_empty());
        assert_eq!(snapshot(&s.0), before, "{args:?} changed the tree");
    }
    let (_, events) = machine(
        &s.0,
        &["rm", "-r", "tree", "--confirm", "--confirm-count", "3"],
    );
    let mismatch = of_type(&events, "aoi:error")[0];
    assert_eq!(mismatch["details"]["affected"], TREE_ENTRIES);
    assert_eq!(mismatch["details"]["confirm_count"], 3);
    // Human mode is GNU rm: `rm -r tree` removes it, silently.
    let out = run(&s.0, &["rm", "-r", "tree"]);
    assert_eq!(
        (out.status.code(), out.stdout, out.stderr),
        (Some(0), vec![], vec![])
    );
    assert!(!s.path("tree").exists());
}

#[test]
fn a_confirmed_rm_r_removes_exactly_the_counted_entries() {
    let s = Scratch::new("write-rm");
    tree(&s);
    s.file("keep", b"k");
    let listed: BTreeSet<String> = snapshot(&s.0)
        .into_keys()
        .filter(|k| k == "tree" || k.starts_with("tree/"))
        .collect();
    assert_eq!(listed.len(), TREE_ENTRIES);
    let n = TREE_ENTRIES.to_string();
    let (code, events) = machine(
        &s.0,
        &["rm", "-r", "tree", "--confirm", "--confirm-count", &n],
    );
    assert_eq!(code, 0, "{events:?}");
    let removed = of_type(&events, "removed");
    assert_eq!(removed.len(), TREE_ENTRIES);
    let paths: BTreeSet<String> = field(&removed, "path")
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(paths, listed);
    // Children before their directory, the operand last.
    assert_eq!(removed.last().unwrap()["path"], "tree");
    assert_eq!(removed.last().unwrap()["kind"], "dir");
    assert!(removed
        .iter()
        .any(|e| e["path"] == "tree/link" && e["kind"] == "symlink"));
    assert_eq!(summary(&events)["count"], TREE_ENTRIES);
    assert!(!s.path("tree").exists());
    assert_eq!(snapshot(&s.0).len(), 2, "the scratch root and keep");
}

#[test]
fn rm_refuses_a_directory_without_r_and_f_ignores_what_is_missing() {
    let s = Scratch::new("write-rm-dir");
    s.file("d/f", b"");
    s.file("f", b"");
    let (code, events) = machine(&s.0, &["rm", "d", "f", "--confirm", "--confirm-count", "1"]);
    assert_eq!(code, 1);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0]["code"].as_str(), errors[0]["scope"].as_str()),
        (Some("IS_A_DIRECTORY"), Some("item"))
    );
    assert_eq!(errors[0]["message"], "cannot remove 'd': Is a directory");
    assert_eq!(field(&of_type(&events, "removed"), "path"), ["f"]);
    let sum = summary(&events);
    assert_eq!(
        (&sum["ok"], &sum["partial"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    assert!(s.path("d/f").exists());
    // -f: a missing operand is nothing to do, not an error (GNU).
    let (code, events) = machine(&s.0, &["rm", "-f", "missing"]);
    assert_eq!(code, 0);
    assert_eq!(summary(&events)["count"], 0);
    let (code, events) = machine(&s.0, &["rm", "missing"]);
    assert_eq!(code, 1);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "not_found");
    // `.` is never removed.
    let (code, events) = machine(
        &s.0,
        &["rm", "-rf", ".", "--confirm", "--confirm-count", "0"],
    );
    assert_eq!(code, 1);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "DOT_OPERAND");
    assert!(s.path("d").exists());
}

#[test]
fn an_idempotent_cp_copies_once_and_replays_its_result() {
    let s = Scratch::new("write-idem");
    let state = s.path("state");
    let work = s.path("work");
    fs::create_dir_all(&work).unwrap();
    fs::write(work.join("a"), b"first").unwrap();
    let args = ["cp", "a", "b", "--idempotency-key", "copy-1"];
    let (code, first) = machine_with_state(&work, &state, &args);
    assert_eq!(code, 0, "{first:?}");
    assert_eq!(fs::read(work.join("b")).unwrap(), b"first");
    let copied = domain(&first);
    assert_eq!(copied.len(), 1);
    assert_eq!(copied[0]["type"], "copied");
    assert_eq!(
        (copied[0]["from"].as_str(), copied[0]["to"].as_str()),
        (Some("a"), Some("b"))
    );
    assert_eq!(copied[0]["bytes"], 5);
    assert!(summary(&first)["properties"]
        .get("idempotent_replay")
        .is_none());
    // The source changes; the same request with the same key replays, copying nothing.
    fs::write(work.join("a"), b"second, longer").unwrap();
    let before = snapshot(&work);
    let (code, second) = machine_with_state(&work, &state, &args);
    assert_eq!(code, 0, "{second:?}");
    assert_eq!(domain(&second), copied);
    assert_eq!(summary(&second)["properties"]["idempotent_replay"], true);
    assert_eq!(snapshot(&work), before);
    assert_eq!(fs::read(work.join("b")).unwrap(), b"first");
    // Without the key the same copy meets the file it made.
    let (code, events) = machine_with_state(&work, &state, &["cp", "a", "b"]);
    assert_eq!(code, 1);
    assert_eq!(
        of_type(&events, "aoi:error")[0]["code"],
        "DESTINATION_EXISTS"
    );
    // Another request with the key is a conflict, and does nothing.
    let (code, events) = machine_with_state(
        &work,
        &state,
        &["cp", "a", "c", "--idempotency-key", "copy-1"],
    );
    assert_eq!(code, 65);
    let error = of_type(&events, "aoi:error")[0];
    assert_eq!(
        (error["category"].as_str(), error["code"].as_str()),
        (Some("conflict"), Some("IDEMPOTENCY_KEY_REUSED"))
    );
    assert_eq!(error["retryable"], false);
    assert!(!work.join("c").exists());
    // The record is one file in the state directory, nothing left half-written.
    let files: Vec<_> = fs::read_dir(state.join("idempotency"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    // mv and mkdir replay the same way.
    let (_, first) = machine_with_state(
        &work,
        &state,
        &["mv", "b", "moved", "--idempotency-key", "mv-1"],
    );
    let (code, again) = machine_with_state(
        &work,
        &state,
        &["mv", "b", "moved", "--idempotency-key", "mv-1"],
    );
    assert_eq!(code, 0, "{again:?}");
    assert_eq!(domain(&again), domain(&first));
    assert_eq!(domain(&first)[0]["type"], "moved");
    let (_, first) =
        machine_with_state(&work, &state, &["mkdir", "d", "--idempotency-key", "mk-1"]);
    let (code, again) =
        machine_with_state(&work, &state, &["mkdir", "d", "--idempotency-key", "mk-1"]);
    assert_eq!(
        code, 0,
        "a retried mkdir replays instead of failing on the directory it made"
    );
    assert_eq!(domain(&again), domain(&first));
}

#[test]
fn cp_r_of_a_tree_equals_gnu_cp_r() {
    let s = Scratch::new("write-gnu-cp");
    tree(&s);
    let (code, events) = machine(&s.0, &["cp", "-r", "tree", "ours"]);
    assert_eq!(code, 0, "{events:?}");
    let gnu = Command::new("cp")
        .args(["-r", "tree", "gnu"])
        .current_dir(&s.0)
        .status()
        .unwrap();
    assert!(gnu.success());
    assert_eq!(shape(&s.path("ours")), shape(&s.path("gnu")));
    let copied = of_type(&events, "copied");
    assert_eq!(copied.len(), TREE_ENTRIES);
    assert_eq!(copied[0]["to"], "ours");
    let key = copied
        .iter()
        .find(|e| e["to"] == "ours/private/key")
        .unwrap();
    assert_eq!(
        (key["from"].as_str(), key["bytes"].as_u64()),
        (Some("tree/private/key"), Some(6))
    );
    assert!(copied
        .iter()
        .any(|e| e["to"] == "ours/link" && e["kind"] == "symlink"));
    // Into an existing directory, as GNU: the tree lands under it.
    let (code, _) = machine(&s.0, &["cp", "-r", "tree", "ours"]);
    assert_eq!(code, 0);
    Command::new("cp")
        .args(["-r", "tree", "gnu"])
        .current_dir(&s.0)
        .status()
        .unwrap();
    assert_eq!(shape(&s.path("ours")), shape(&s.path("gnu")));
    // A directory without -r is an item error; into itself, another.
    let (code, events) = machine(&s.0, &["cp", "tree", "x"]);
    assert_eq!(code, 1);
    assert_eq!(
        of_type(&events, "aoi:error")[0]["message"],
        "-r not specified; omitting directory 'tree'"
    );
    let (_, events) = machine(&s.0, &["cp", "-r", "tree", "tree/bin"]);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "COPY_INTO_ITSELF");
    assert!(!s.path("tree/bin/tree").exists());
}

#[test]
fn an_existing_destination_is_a_conflict_unless_f_or_n() {
    let s = Scratch::new("write-conflict");
    s.file("a", b"new");
    s.file("b", b"old");
    for cmd in ["cp", "mv"] {
        let (code, events) = machine(&s.0, &[cmd, "a", "b"]);
        assert_eq!(code, 1, "{cmd}");
        let e = of_type(&events, "aoi:error")[0];
        assert_eq!(
            (e["category"].as_str(), e["code"].as_str()),
            (Some("conflict"), Some("DESTINATION_EXISTS"))
        );
        assert_eq!(e["scope"], "item");
        assert_eq!(e["target"], "b");
        assert_eq!(summary(&events)["ok"], false);
        let (code, events) = machine(&s.0, &[cmd, "-n", "a", "b"]);
        assert_eq!(code, 0, "{cmd} -n");
        assert_eq!(summary(&events)["properties"]["skipped"], 1);
        assert!(domain(&events).is_empty());
        assert_eq!(fs::read(s.path("b")).unwrap(), b"old");
        assert!(s.path("a").exists());
    }
    let (code, events) = machine(&s.0, &["cp", "-f", "a", "b"]);
    assert_eq!(code, 0);
    assert_eq!(of_type(&events, "copied")[0]["replaced"], true);
    assert_eq!(fs::read(s.path("b")).unwrap(), b"new");
    fs::write(s.path("b"), b"old").unwrap();
    let (code, events) = machine(&s.0, &["mv", "-f", "a", "b"]);
    assert_eq!(code, 0);
    assert_eq!(of_type(&events, "moved")[0]["replaced"], true);
    assert_eq!(fs::read(s.path("b")).unwrap(), b"new");
    assert!(!s.path("a").exists());
    // Human mode is GNU cp, which overwrites (and -n keeps the old one).
    s.file("a", b"again");
    let out = run(&s.0, &["cp", "-n", "a", "b"]);
    assert_eq!(fs::read(s.path("b")).unwrap(), b"new", "{out:?}");
    let out = run(&s.0, &["cp", "a", "b"]);
    assert_eq!(
        (out.status.code(), out.stdout, out.stderr),
        (Some(0), vec![], vec![])
    );
    assert_eq!(fs::read(s.path("b")).unwrap(), b"again");
}

#[test]
fn mv_moves_across_directories() {
    let s = Scratch::new("write-mv");
    s.file("from/a", b"a");
    s.file("from/sub/b", b"b");
    s.file("c", b"c");
    fs::create_dir_all(s.path("to")).unwrap();
    let (code, events) = machine(&s.0, &["mv", "from/a", "from/sub", "c", "to"]);
    assert_eq!(code, 0, "{events:?}");
    let moved = of_type(&events, "moved");
    assert_eq!(field(&moved, "from"), ["from/a", "from/sub", "c"]);
    assert_eq!(field(&moved, "to"), ["to/a", "to/sub", "to/c"]);
    assert!(moved
        .iter()
        .all(|m| m["across_filesystems"] == false && m["replaced"] == false));
    assert_eq!(moved[1]["kind"], "dir");
    assert_eq!(fs::read(s.path("to/sub/b")).unwrap(), b"b");
    assert!(!s.path("from/sub").exists() && !s.path("c").exists());
    // Renaming in place, and into itself refused.
    let (code, _) = machine(&s.0, &["mv", "to", "renamed"]);
    assert_eq!(code, 0);
    let (code, events) = machine(&s.0, &["mv", "renamed", "renamed/sub"]);
    assert_eq!(code, 1);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "MOVE_INTO_ITSELF");
    // Several sources need a directory.
    let (code, events) = machine(&s.0, &["mv", "renamed/a", "renamed/c", "renamed/sub/b"]);
    assert_eq!(code, 65);
    assert_eq!(of_type(&events, "aoi:error")[0]["code"], "NOT_A_DIRECTORY");
    assert!(s.path("renamed/a").exists());
}

#[test]
fn mv_across_file_systems_copies_and_removes() {
    let shm = Path::new("/dev/shm");
    let s = Scratch::new("write-xdev");
    let Ok(other) = tempdir_in(shm) else {
        aoi_test::prerequisite::missing("mv across file systems", "a writable /dev/shm");
        return;
    };
    let same_device = fs::metadata(&other).unwrap().dev() == fs::metadata(&s.0).unwrap().dev();
    if same_device {
        aoi_test::prerequisite::missing(
            "mv across file systems",
            "/dev/shm on a file system other than the temp dir's",
        );
        let _ = fs::remove_dir_all(&other);
        return;
    }
    fs::create_dir_all(other.join("tree/sub")).unwrap();
    fs::write(other.join("tree/sub/f"), b"far").unwrap();
    fs::set_permissions(other.join("tree/sub/f"), fs::Permissions::from_mode(0o640)).unwrap();
    let mtime = fs::metadata(other.join("tree/sub/f")).unwrap().mtime();
    let src = other.join("tree");
    let (code, events) = machine(&s.0, &["mv", src.to_str().unwrap(), "here"]);
    let _ = fs::remove_dir_all(&other);
    assert_eq!(code, 0, "{events:?}");
    let moved = of_type(&events, "moved");
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0]["across_filesystems"], true);
    assert_eq!(moved[0]["to"], "here");
    let f = fs::metadata(s.path("here/sub/f")).unwrap();
    assert_eq!(
        (f.mode() & 0o7777, f.mtime()),
        (0o640, mtime),
        "mode and times kept"
    );
    assert_eq!(fs::read(s.path("here/sub/f")).unwrap(), b"far");
    assert!(!src.exists());
}

fn tempdir_in(parent: &Path) -> std::io::Result<PathBuf> {
    let dir = parent.join(format!("aoi-coreutils-it-xdev-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[test]
fn permission_failures_are_item_errors_and_the_rest_is_done() {
    let s = Scratch::new("write-perm");
    // `open` anyone may write; `locked` only its owner (root, when the tests run as root).
    s.file("open/g", b"g");
    s.file("locked/f", b"f");
    fs::set_permissions(s.path("open"), fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(s.path("locked"), fs::Permissions::from_mode(0o555)).unwrap();
    let unprivileged = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--output", "jsonl"]);
        parse(&run_unprivileged(&s.0, &all))
    };
    let (code, events) = unprivileged(&["mkdir", "open/x", "locked/y"]);
    assert_eq!(code, 1);
    assert_eq!(field(&of_type(&events, "created"), "path"), ["open/x"]);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("authz"), Some("locked/y"))
    );
    assert_eq!(errors[0]["scope"], "item");
    let sum = summary(&events);
    assert_eq!(
        (&sum["ok"], &sum["partial"]),
        (&Value::Bool(false), &Value::Bool(true))
    );

    let (code, events) = unprivileged(&["touch", "locked/t", "open/t"]);
    assert_eq!(code, 1);
    assert_eq!(field(&of_type(&events, "created"), "path"), ["open/t"]);
    assert_eq!(
        of_type(&events, "aoi:error")[0]["message"],
        "cannot touch 'locked/t': Permission denied"
    );

    let (code, events) = unprivileged(&[
        "rm",
        "locked/f",
        "open/g",
        "--confirm",
        "--confirm-count",
        "2",
    ]);
    assert_eq!(code, 1);
    assert_eq!(field(&of_type(&events, "removed"), "path"), ["open/g"]);
    let errors = of_type(&events, "aoi:error");
    assert_eq!(
        (errors[0]["category"].as_str(), errors[0]["target"].as_str()),
        (Some("authz"), Some("locked/f"))
    );
    assert!(s.path("locked/f").exists());

    let (code, events) = unprivileged(&["cp", "open/t", "locked/t2"]);
    assert_eq!(code, 1);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "authz");
    assert!(domain(&events).is_empty());
}

#[test]
fn mkdir_p_of_an_existing_directory_is_ok_and_mkdir_of_one_is_a_conflict() {
    let s = Scratch::new("write-mkdir");
    fs::create_dir_all(s.path("have")).unwrap();
    let before = snapshot(&s.0);
    let (code, events) = machine(&s.0, &["mkdir", "-p", "have"]);
    assert_eq!(code, 0);
    assert!(domain(&events).is_empty());
    assert_eq!(summary(&events)["ok"], true);
    assert_eq!(snapshot(&s.0), before);
    let (code, events) = machine(&s.0, &["mkdir", "have"]);
    assert_eq!(code, 1);
    let e = of_type(&events, "aoi:error")[0];
    assert_eq!(
        (e["category"].as_str(), e["code"].as_str()),
        (Some("conflict"), Some("ALREADY_EXISTS"))
    );
    assert_eq!(e["message"], "cannot create directory 'have': File exists");
    let (code, events) = machine(&s.0, &["mkdir", "-p", "-m", "700", "have/a/b"]);
    assert_eq!(code, 0);
    let created = of_type(&events, "created");
    assert_eq!(field(&created, "path"), ["have/a", "have/a/b"]);
    assert!(created.iter().all(|c| c["kind"] == "dir"));
    assert_eq!(
        fs::metadata(s.path("have/a/b")).unwrap().mode() & 0o7777,
        0o700
    );
    let (code, events) = machine(&s.0, &["mkdir", "no/parent"]);
    assert_eq!(code, 1);
    assert_eq!(of_type(&events, "aoi:error")[0]["category"], "not_found");
}

#[test]
fn touch_creates_files_and_changes_times() {
    let s = Scratch::new("write-touch");
    s.file("old", b"x");
    let (code, events) = machine(&s.0, &["touch", "-d", "2024-05-01T12:30:00Z", "old", "new"]);
    assert_eq!(code, 0, "{events:?}");
    let changed = of_type(&events, "changed");
    assert_eq!(
        (changed[0]["path"].as_str(), changed[0]["what"].as_str()),
        (Some("old"), Some("times"))
    );
    assert_eq!(changed[0]["modified"], "2024-05-01T12:30:00.000Z");
    assert_eq!(field(&of_type(&events, "created"), "path"), ["new"]);
    for f in ["old", "new"] {
        assert_eq!(
            fs::metadata(s.path(f)).unwrap().mtime(),
            1_714_566_600,
            "{f}"
        );
    }
    let (code, events) = machine(&s.0, &["touch", "-c", "absent"]);
    assert_eq!(code, 0);
    assert!(domain(&events).is_empty());
    assert!(!s.path("absent").exists());
    let (code, _) = machine(&s.0, &["touch", "-r", "old", "ref-copy"]);
    assert_eq!(code, 0);
    assert_eq!(
        fs::metadata(s.path("ref-copy")).unwrap().mtime(),
        1_714_566_600
    );
    let (code, events) = machine(&s.0, &["touch", "-r", "missing", "x"]);
    assert_eq!(code, 66);
    assert_eq!(of_type(&events, "aoi:error")[0]["scope"], "process");
    // A bad date is a usage error.
    assert_eq!(machine(&s.0, &["touch", "-d", "someday", "x"]).0, 64);
    assert!(!s.path("x").exists());
}

#[test]
fn human_mode_is_silent_on_success_and_verbose_lines_are_gnus() {
    let s = Scratch::new("write-human");
    s.file("src/one/f", b"1");
    let ours = run(&s.0, &["mkdir", "-p", "a/b"]);
    assert_eq!(
        (ours.status.code(), ours.stdout.len(), ours.stderr.len()),
        (Some(0), 0, 0)
    );
    let pairs: [(&[&str], &[&str]); 4] = [
        (&["mkdir", "-pv", "x/y"], &["mkdir", "-pv", "gx/y"]),
        (&["cp", "-rv", "src", "ours"], &["cp", "-rv", "src", "gnu"]),
        (&["mv", "-v", "ours", "ours2"], &["mv", "-v", "gnu", "gnu2"]),
        (&["rm", "-rv", "ours2"], &["rm", "-rv", "gnu2"]),
    ];
    for (ours, gnu) in pairs {
        let mine = run(&s.0, ours);
        let theirs = Command::new(gnu[0])
            .args(&gnu[1..])
            .current_dir(&s.0)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        assert_eq!(mine.status.code(), Some(0), "{ours:?}");
        let normalized = String::from_utf8_lossy(&mine.stdout)
            .replace("'x", "'gx")
            .replace("ours", "gnu");
        // uutils 0.12's `cp -rv` names a directory copied to a new name with a trailing `/`
        // (COMPAT.md lists it); the rest of each line is GNU's.
        let normalized = if ours[0] == "cp" {
            normalized.replace("'src' -> 'gnu/'", "'src' -> 'gnu'")
        } else {
            normalized
        };
        assert_eq!(
            normalized,
            String::from_utf8_lossy(&theirs.stdout),
            "{ours:?}"
        );
    }
    let out = run(&s.0, &["rm", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rm: cannot remove 'nope': No such file or directory\n"
    );
}

/// GNU's `cp` and `mv` flags in machine mode (`cp -a`, `-p`, `-t DIR`, `-T`, `-u`, `-L`;
/// `mv -t`, `-T`) and `touch -a`, `-m`, `-t` leave the trees GNU's tools leave, times and
/// modes included (the snapshots compare kinds, sizes, modes, modification times to the
/// nanosecond, bytes and link targets).
#[test]
fn gnu_cp_mv_and_touch_flags_in_machine_mode_leave_what_gnu_leaves() {
    let s = Scratch::new("gnu-write-flags");
    let make = |root: &str| {
        s.file(&format!("{root}/src/a.txt"), b"alpha\n");
        s.file(&format!("{root}/src/sub/b.txt"), b"beta\n");
        s.file(&format!("{root}/one.txt"), b"one\n");
        s.file(&format!("{root}/two.txt"), b"two\n");
        fs::set_permissions(
            s.path(&format!("{root}/src/a.txt")),
            fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        std::os::unix::fs::symlink("a.txt", s.path(&format!("{root}/src/link"))).unwrap();
        fs::create_dir_all(s.path(&format!("{root}/into"))).unwrap();
        let touched = Command::new("touch")
            .args(["-d", "2021-02-03 04:05:06.123456789", "-h"])
            .args([
                "src/a.txt",
                "src/sub/b.txt",
                "src/link",
                "src/sub",
                "src",
                "one.txt",
                "two.txt",
            ])
            .current_dir(s.path(root))
            .status()
            .unwrap();
        assert!(touched.success());
    };
    for (ours, theirs) in [
        (
            &["cp", "-a", "src", "copy"][..],
            &["cp", "-a", "src", "copy"][..],
        ),
        (&["cp", "-rp", "src", "copy"], &["cp", "-rp", "src", "copy"]),
        (
            &["cp", "-R", "--preserve=mode,timestamps", "src", "copy"],
            &["cp", "-R", "--preserve=mode,timestamps", "src", "copy"],
        ),
        (&["cp", "-rL", "src", "copy"], &["cp", "-rL", "src", "copy"]),
        (
            &["cp", "-t", "into", "one.txt", "two.txt"],
            &["cp", "-t", "into", "one.txt", "two.txt"],
        ),
        (&["cp", "-rT", "src", "into"], &["cp", "-rT", "src", "into"]),
        (
            &["cp", "-u", "one.txt", "src/a.txt"],
            &["cp", "-u", "one.txt", "src/a.txt"],
        ),
        (
            &["mv", "-t", "into", "one.txt", "two.txt"],
            &["mv", "-t", "into", "one.txt", "two.txt"],
        ),
        (&["mv", "-T", "src", "into2"], &["mv", "-T", "src", "into2"]),
        (
            &["touch", "-a", "-d", "2020-01-01 00:00", "one.txt"],
            &["touch", "-a", "-d", "2020-01-01 00:00", "one.txt"],
        ),
        (
            &["touch", "-m", "-t", "202001020304.05", "one.txt"],
            &["touch", "-m", "-t", "202001020304.05", "one.txt"],
        ),
        (
            &["touch", "-t", "2001020304", "new.txt"],
            &["touch", "-t", "2001020304", "new.txt"],
        ),
    ] {
        let _ = fs::remove_dir_all(s.path("ours"));
        let _ = fs::remove_dir_all(s.path("gnu"));
        make("ours");
        make("gnu");
        let mut args: Vec<&str> = ours.to_vec();
        if ours[0] == "cp" || ours[0] == "mv" {
            args.push("-f");
        }
        let out = Command::new(bin())
            .args(&args)
            .args(["--output", "jsonl"])
            .current_dir(s.path("ours"))
            .env("TZ", "Asia/Tokyo")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (code, _) = parse(&out);
        assert_eq!(
            code,
            0,
            "{ours:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let gnu = Command::new(theirs[0])
            .args(&theirs[1..])
            .current_dir(s.path("gnu"))
            .env("TZ", "Asia/Tokyo")
            .status()
            .unwrap();
        assert!(gnu.success(), "{theirs:?}");
        let (a, b) = (snapshot(&s.path("ours")), snapshot(&s.path("gnu")));
        // The roots' own times moved with what was written into them; entries are compared.
        let entries = |snap: Snapshot| -> Snapshot {
            snap.into_iter()
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, (kind, size, mode, mtime, body))| {
                    // What was written now has now's time on both sides (the fixture's is 2021).
                    let mtime = if mtime > 1_700_000_000_000_000_000 {
                        0
                    } else {
                        mtime
                    };
                    (k, (kind, size, mode, mtime, body))
                })
                .collect()
        };
        assert_eq!(entries(a), entries(b), "{ours:?}");
        // -a of `touch` keeps the modification time; the access times are GNU's too.
        if ours[0] == "touch" {
            let atime = |root: &str| {
                fs::metadata(s.path(&format!("{root}/{}", ours.last().unwrap())))
                    .unwrap()
                    .atime()
            };
            assert_eq!(atime("ours"), atime("gnu"), "{ours:?}");
        }
    }
}
