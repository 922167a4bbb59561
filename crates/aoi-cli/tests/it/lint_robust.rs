//! `aoi lint` against a hostile tool: descendants that leave their process group, a signal to
//! lint mid-run, and checks streamed as each command finishes.
//!
//! The tool is a small Python program that lists two commands, `fast` and `slow`. Every
//! invocation appends its pid to a file outside the sandbox; `slow` also starts a process in a
//! session of its own (which a group kill misses) and appends its pid, says so on a FIFO when
//! asked to, then waits at a FIFO gate the test opens, then sleeps a second.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{aoi, temp_dir};

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

/// Writes the tool into `dir`; with `announce`, `slow` writes its pid and its escapee's to the
/// FIFO `dir/ready` (blocking until the test reads).
fn write_tool(dir: &Path, announce: bool) -> PathBuf {
    let tool = dir.join("slowpoke.py");
    let script = format!(
        r#"#!/usr/bin/env python3
import json, os, sys, time
DIR = {dir:?}
ANNOUNCE = {announce}
def note(pid):
    with open(os.path.join(DIR, "pids"), "a") as f:
        f.write(f"{{pid}}\n")
note(os.getpid())
args = sys.argv[1:]
if args[:1] == ["capabilities"]:
    command = lambda name: {{"name": name, "read_only": True, "examples": [[name]]}}
    print(json.dumps({{"tool": "slowpoke", "tool_version": "0.1.0", "aoi_versions": ["1.0-alpha"],
        "outputs": ["jsonl"], "machine_flag": ["--output", "jsonl"],
        "commands": [command("fast"), command("slow")]}}))
    sys.exit(0)
if args[:1] in (["fast"], ["slow"]) and "--output" in args:
    if args[0] == "slow":
        r, w = os.pipe()
        child = os.fork()
        if child == 0:
            os.setsid()
            os.write(w, b"x")
            os.execvp("sleep", ["sleep", "300"])
        os.read(r, 1)
        note(child)
        if ANNOUNCE:
            with open(os.path.join(DIR, "ready"), "w") as f:
                f.write(f"{{os.getpid()}} {{child}}\n")
        gate = os.open(os.path.join(DIR, "gate"), os.O_RDONLY)
        os.read(gate, 1)
        time.sleep(1)
    run = {{"seq": 0, "run": "r1"}}
    print(json.dumps({{"type": "aoi:meta", "aoi": run, "tool": "slowpoke", "command": args[0]}}))
    run["seq"] = 1
    print(json.dumps({{"type": "aoi:summary", "aoi": run, "ok": True, "event_count": 2}}))
    sys.exit(0)
sys.stderr.write("usage: slowpoke fast|slow --output jsonl\n")
sys.exit(64)
"#,
        dir = dir.display().to_string(),
        announce = if announce { "True" } else { "False" },
    );
    fs::write(&tool, script).expect("write the tool");
    let status = Command::new("chmod")
        .args(["+x"])
        .arg(&tool)
        .status()
        .expect("chmod runs");
    assert!(status.success());
    mkfifo(&dir.join("gate"));
    if announce {
        mkfifo(&dir.join("ready"));
    }
    tool
}

/// Starts `aoi lint --tool TOOL ARGS` with its temp dir in `tmp`.
fn start_lint(tool: &Path, tmp: &Path, args: &[&str]) -> std::process::Child {
    Command::new(aoi())
        .arg("lint")
        .arg("--tool")
        .arg(tool)
        .args(args)
        .env("TMPDIR", tmp)
        .current_dir(tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aoi lint starts")
}

/// Alive: present in /proc and not a zombie.
fn alive(pid: &str) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Every live process whose environment carries the marker of lint process `lint`.
fn marked_by(lint: u32) -> Vec<String> {
    let needle = format!("AOI_LINT_RUN={lint}-");
    fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|d| d.file_name().to_str().map(str::to_owned))
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|var| var.starts_with(needle.as_bytes()))
            })
        })
        .filter(|pid| alive(pid))
        .collect()
}

/// Asserts that nothing of the tool survived lint and that lint left no sandbox behind.
fn assert_nothing_left(tool_dir: &Path, tmp: &Path, lint: u32) {
    let pids = fs::read_to_string(tool_dir.join("pids")).unwrap_or_default();
    let pids: Vec<&str> = pids.lines().collect();
    assert!(!pids.is_empty(), "the tool never ran");
    let survivors: Vec<&&str> = pids.iter().filter(|p| alive(p)).collect();
    assert!(survivors.is_empty(), "left running: {survivors:?}");
    assert_eq!(marked_by(lint), Vec::<String>::new());
    assert_eq!(
        sandboxes(tmp, ""),
        Vec::<String>::new(),
        "sandbox dirs left"
    );
}

/// The sandbox roots in `tmp` (`aoi-lint-<owner>…`; every lint's with `owner` empty).
fn sandboxes(tmp: &Path, owner: &str) -> Vec<String> {
    let prefix = format!("aoi-lint-{owner}");
    fs::read_dir(tmp)
        .expect("tmp")
        .flatten()
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Reads the first announcement on `dir/ready`: a `slow` run and its escapee are alive.
fn await_slow_run(dir: &Path) -> (String, String) {
    let mut line = String::new();
    BufReader::new(fs::File::open(dir.join("ready")).expect("open ready"))
        .read_line(&mut line)
        .expect("read ready");
    let (run, escapee) = line.trim().split_once(' ').expect("two pids");
    (run.to_owned(), escapee.to_owned())
}

#[test]
fn sigterm_mid_run_kills_every_process_of_the_tool_and_removes_every_sandbox() {
    let tool_dir = temp_dir("robust-tool");
    let tmp = temp_dir("robust-tmp");
    let tool = write_tool(&tool_dir, true);
    let mut child = start_lint(&tool, &tmp, &["--format", "jsonl"]);
    let mut stdout = child.stdout.take().expect("stdout");
    let (run, escapee) = await_slow_run(&tool_dir);
    assert!(alive(&run) && alive(&escapee));
    let lint = child.id();
    let (stream, _) = aoi_test::assert_cancelled(child, &mut stdout, String::new(), "TERM", 143);
    assert!(stream.starts_with(r#"{"type":"aoi:meta""#), "{stream}");
    assert_nothing_left(&tool_dir, &tmp, lint);
}

#[test]
fn sigint_mid_run_does_the_same_for_a_human_report() {
    let tool_dir = temp_dir("robust-tool");
    let tmp = temp_dir("robust-tmp");
    let tool = write_tool(&tool_dir, true);
    let mut child = start_lint(&tool, &tmp, &[]);
    let (run, escapee) = await_slow_run(&tool_dir);
    assert!(alive(&run) && alive(&escapee));
    let lint = child.id();
    aoi_test::signal(&child, "INT");
    let status = child.wait().expect("lint ends");
    assert_eq!(status.code(), Some(130));
    let mut report = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut report).expect("stdout");
    }
    assert_eq!(report, "", "a cancelled run writes no report");
    assert_nothing_left(&tool_dir, &tmp, lint);
}

#[test]
fn checks_stream_as_each_command_finishes_with_their_own_elapsed_time() {
    let tool_dir = temp_dir("robust-tool");
    let tmp = temp_dir("robust-tmp");
    let tool = write_tool(&tool_dir, false);
    let mut child = start_lint(&tool, &tmp, &["--format", "jsonl"]);
    let lint = child.id();
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    // Every check of `fast` arrives while every run of `slow` still waits at the gate.
    let mut seen = String::new();
    let mut fast = 0;
    while fast < 16 {
        let mut line = String::new();
        assert_ne!(stdout.read_line(&mut line).expect("read"), 0, "{seen}");
        assert!(
            !line.contains("· slow"),
            "slow finished first:\n{seen}{line}"
        );
        if line.contains(r#""type":"aoi:check""#) && line.contains("· fast") {
            fast += 1;
        }
        seen.push_str(&line);
    }
    assert!(child.try_wait().expect("try_wait").is_none(), "lint ended");
    // Open the gate, and keep it open with a byte for every run that will pass it.
    let mut gate = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(tool_dir.join("gate"))
        .expect("open the gate");
    gate.write_all(&[b'x'; 4096]).expect("write the gate");
    stdout.read_to_string(&mut seen).expect("the rest");
    let status = child.wait().expect("lint ends");
    drop(gate);
    assert!(status.code().is_some(), "{status}");
    let report = aoi_test::assert_conforms(seen.as_bytes());
    let summary = report.summary.expect("a summary");
    let props = summary.properties.clone().unwrap_or_default();
    let escaped = props
        .get("escaped_processes")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    assert!(escaped >= 1, "{props:?}");

    let checks: Vec<serde_json::Value> = seen
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .filter(|e| e["type"] == "aoi:check")
        .filter(|e| e["properties"]["level"] != "advice")
        .collect();
    assert_eq!(checks.len(), 32);
    let elapsed = |name: &str| -> u64 {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .and_then(|c| c["properties"]["elapsed_ms"].as_u64())
            .unwrap_or_else(|| panic!("no elapsed_ms on {name}"))
    };
    // The base run of `slow` sleeps a second after the gate; check 3 judges that run.
    assert!(elapsed("3 completion · slow") >= 1000);
    // The escapee is evidence on a check of `slow` (whichever made the run that left it).
    assert!(
        checks.iter().any(
            |c| c["name"].as_str().is_some_and(|n| n.ends_with("· slow"))
                && c["properties"]["evidence"].to_string().contains(
                    "outside the command's process group after the command ended; lint killed it"
                )
        ),
        "{seen}"
    );
    assert_nothing_left(&tool_dir, &tmp, lint);
}

/// SIGKILL gives lint no chance to clean up: killed while it copies a large fixture tree into a
/// sandbox (or just after), it leaves a partial sandbox and perhaps a running tool. The next
/// lint removes and kills what a lint that is no longer alive left, and the fixtures it copied
/// from are untouched.
#[test]
fn a_lint_killed_mid_copy_leaves_nothing_the_next_lint_does_not_clear() {
    const FILES: usize = 20_000;
    let tool_dir = temp_dir("robust-tool");
    let tmp = temp_dir("robust-tmp");
    let tool = write_tool(&tool_dir, false);
    let fixtures = tool_dir.join("fx");
    fs::create_dir(&fixtures).expect("fixtures dir");
    for n in 0..FILES {
        fs::write(fixtures.join(format!("f{n}")), [b'x'; 512]).expect("fixture");
    }
    let config = tool_dir.join("aoi-lint.toml");
    fs::write(&config, "fixtures = \"fx\"\n").expect("config");
    let config_arg = config.display().to_string();
    let mut child = start_lint(&tool, &tmp, &["--config", &config_arg]);
    let lint = child.id();
    // Kill as soon as a sandbox holds some of the fixtures.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let partial = loop {
        let copied = fs::read_dir(&tmp)
            .expect("tmp")
            .flatten()
            .filter(|d| d.file_name().to_string_lossy().starts_with("aoi-lint-"))
            .filter_map(|d| fs::read_dir(d.path().join("work")).ok())
            .map(|work| work.count())
            .max();
        if copied.is_some_and(|n| n > 0) || std::time::Instant::now() > deadline {
            break copied;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(partial.is_some_and(|n| n > 0), "a sandbox was being filled");
    assert!(
        !sandboxes(&tmp, &format!("{lint}-")).is_empty(),
        "SIGKILL left the sandbox (nothing could remove it)"
    );

    // Any later lint clears it, even one whose own tool cannot be run.
    let next = Command::new(aoi())
        .args(["lint", "--tool", "/nonexistent/tool"])
        .env("TMPDIR", &tmp)
        .current_dir(&tmp)
        .stdin(Stdio::null())
        .output()
        .expect("aoi lint runs");
    assert_ne!(next.status.code(), Some(0));
    let pids = fs::read_to_string(tool_dir.join("pids")).unwrap_or_default();
    let survivors: Vec<&str> = pids.lines().filter(|p| alive(p)).collect();
    assert!(survivors.is_empty(), "left running: {survivors:?}");
    assert_eq!(marked_by(lint), Vec::<String>::new());
    assert_eq!(
        sandboxes(&tmp, ""),
        Vec::<String>::new(),
        "sandbox dirs left"
    );
    assert_eq!(fs::read_dir(&fixtures).expect("fixtures").count(), FILES);
}
