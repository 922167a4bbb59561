//! Memory bounds against hostile input: `aoi verify`, `aoi lint`'s capture and `aoi mcp` each
//! read what another program writes, and each keeps to the peak resident memory documented in
//! docs/verifier.md ("Memory") and bench/README.md ("Memory bounds"), whatever that program
//! writes: one 300 MB line with or without its newline, millions of lines, a million levels of
//! nesting.
//!
//! Peaks are measured for real, on the debug binaries the tests run: `aoi verify` and `aoi lint`
//! under a small Python wrapper that prints the child's `ru_maxrss` (the largest of the process
//! and the descendants it waited for), `aoi mcp` by reading its `VmHWM` from /proc at the end of
//! the call while it still runs. Hostile input is produced on the fly into a pipe, never kept on
//! disk.

use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aoi::read::Event;
use serde_json::{json, Value};

use crate::mcp::{data, path};
use crate::support::{aoi, temp_dir};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// What the readers here are given beyond their limits: 300 MB in one line.
const HUGE_LINE: usize = 300 << 20;

/// The verifier's line limit (`aoi::read::DEFAULT_MAX_LINE`).
const LINE_LIMIT: u64 = aoi::read::DEFAULT_MAX_LINE as u64;

/// The documented bound of `aoi verify` (docs/verifier.md, "Memory"): 32 MiB, plus the line
/// buffer (twice the longest line, at most the 64 MiB limit, plus a 256 KiB read), plus 4× the
/// longest line it checks (values quoted in findings, the first `aoi.run`), plus 64× the longest
/// framework event it decodes into a tree.
fn verify_bound(longest: u64, checked: u64, framework: u64) -> u64 {
    32 * MIB + (2 * longest).min(LINE_LIMIT) + 256 * KIB + 4 * checked + 64 * framework
}

/// The documented bound of `aoi lint` (bench/README.md, "Memory bounds"): 64 MiB, plus 72 MiB
/// for each run in flight (`--jobs` of them: 8 MiB of stdout and 8 MiB of stderr kept, an
/// 8 MiB line being read, and the verifier on the capture), plus 16 MiB for each command's base
/// run, kept to the end, plus 64× the bytes lint decodes of a run (its framework events; every
/// event of a stream it did not cut) for each of those.
fn lint_bound(jobs: u64, commands: u64, decoded: u64) -> u64 {
    64 * MIB + 72 * MIB * jobs + 16 * MIB * commands + 64 * decoded * (jobs + commands)
}

/// The documented bound of `aoi mcp` (bench/README.md, "Memory bounds"): 32 MiB, plus 3×
/// `--max-output` (what it holds of a result, and writes from), plus 64× the longest line it
/// decodes (lines it rejects or skips are never decoded).
fn mcp_bound(max_output: u64, decoded: u64) -> u64 {
    32 * MIB + 3 * max_output + 64 * decoded
}

/// Runs argv and prints, as JSON, its exit status, its peak RSS in KiB (Linux `ru_maxrss`), its
/// stdout and its stderr; a run past the timeout is killed and reported with `rc: null`.
const RUSAGE_WRAPPER: &str = r#"
import json, resource, subprocess, sys
try:
    p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
    rc, out, err = p.returncode, p.stdout, p.stderr
except subprocess.TimeoutExpired as e:
    rc, out, err = None, e.stdout or b"", e.stderr or b""
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
json.dump({"rc": rc, "peak_kib": peak, "stdout": out.decode(errors="replace"),
           "stderr": err.decode(errors="replace")[-20000:]}, sys.stdout)
"#;

/// One measured run.
struct Measured {
    /// The exit status; `None` when it was killed (by a signal or at the wrapper's timeout).
    code: Option<i32>,
    /// Peak resident set, in bytes.
    peak: u64,
    stdout: String,
    stderr: String,
}

impl std::fmt::Debug for Measured {
    /// The status, the peak and the ends of the outputs (a report can be megabytes long).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tail = |text: &str| -> String {
            let chars: Vec<char> = text.chars().collect();
            chars[chars.len().saturating_sub(2000)..].iter().collect()
        };
        f.debug_struct("Measured")
            .field("code", &self.code)
            .field("peak_mib", &self.mib())
            .field("stdout_tail", &tail(&self.stdout))
            .field("stderr_tail", &tail(&self.stderr))
            .finish()
    }
}

impl Measured {
    fn mib(&self) -> f64 {
        self.peak as f64 / MIB as f64
    }

    /// Asserts that the run ended by itself, without a panic, within `bound` bytes.
    fn assert_within(&self, bound: u64, what: &str) {
        assert!(self.code.is_some(), "{what}: killed or hung: {self:?}");
        assert!(
            !self.stderr.contains("panicked"),
            "{what}: a panic: {}",
            self.stderr
        );
        assert!(
            self.peak <= bound,
            "{what}: peak RSS {:.1} MiB over the bound of {:.1} MiB",
            self.mib(),
            bound as f64 / MIB as f64
        );
    }
}

/// Runs `argv` in `dir` under [`RUSAGE_WRAPPER`] with `feed` writing its stdin through a pipe.
fn measure<F>(argv: &[String], dir: &Path, feed: F) -> Measured
where
    F: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(RUSAGE_WRAPPER)
        .args(argv)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || {
        let mut pipe = io::BufWriter::with_capacity(1 << 16, &mut stdin);
        // The reader may stop early (a closed pipe is its right, not a test failure).
        let _ = feed(&mut pipe).and_then(|()| pipe.flush());
    });
    let out = child.wait_with_output().expect("the wrapper runs");
    writer.join().expect("the feeder");
    assert!(
        out.status.success(),
        "the wrapper failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("the wrapper's report");
    Measured {
        // Python reports a death by signal as a negative status.
        code: report["rc"].as_i64().filter(|c| *c >= 0).map(|c| c as i32),
        peak: report["peak_kib"].as_u64().expect("peak") * KIB,
        stdout: report["stdout"].as_str().unwrap_or_default().to_owned(),
        stderr: report["stderr"].as_str().unwrap_or_default().to_owned(),
    }
}

// ---- aoi verify ---------------------------------------------------------------------------

/// `aoi verify --output jsonl` reading `feed` on stdin: the run and its finding codes.
fn verify<F>(feed: F) -> (Measured, Vec<String>)
where
    F: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
{
    let dir = temp_dir("memory-verify");
    let argv = [
        path(&aoi()),
        "verify".into(),
        "--output".into(),
        "jsonl".into(),
    ];
    let run = measure(&argv, &dir, feed);
    let codes = aoi_test::events(run.stdout.as_bytes())
        .into_iter()
        .filter_map(|e| match e {
            Event::Domain { ty, fields } if ty == "finding" => {
                Some(fields["code"].as_str().unwrap_or_default().to_owned())
            }
            _ => None,
        })
        .collect();
    (run, codes)
}

const IDENTITY: &str = r#""tool":"hostile","tool_version":"0.1.0","aoi_version":"1.0-alpha","schema_name":"io.machinemode.tests.hostile","schema_version":"1.0.0""#;

fn meta(out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        r#"{{"type":"aoi:meta","aoi":{{"seq":0,"run":"R"}},{IDENTITY}}}"#
    )
}

/// A domain event whose `text` is `len` bytes of `x`, with or without its newline.
fn huge_line(len: usize, newline: bool) -> impl FnOnce(&mut dyn Write) -> io::Result<()> {
    move |out| {
        meta(out)?;
        out.write_all(br#"{"type":"note","aoi":{"seq":1,"run":"R"},"text":""#)?;
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..len >> 20 {
            out.write_all(&chunk)?;
        }
        if newline {
            out.write_all(b"\"}\n")?;
        }
        Ok(())
    }
}

#[test]
fn verify_skips_a_300_mb_line_without_holding_it() {
    let (run, codes) = verify(huge_line(HUGE_LINE, true));
    assert_eq!(run.code, Some(65), "{run:?}");
    assert!(codes.contains(&"LINE_TOO_LONG".to_owned()), "{codes:?}");
    run.assert_within(verify_bound(LINE_LIMIT, KIB, KIB), "300 MB line");
}

#[test]
fn verify_skips_a_300_mb_line_without_a_newline_without_holding_it() {
    let (run, codes) = verify(huge_line(HUGE_LINE, false));
    assert_eq!(run.code, Some(65), "{run:?}");
    assert!(codes.contains(&"LINE_TOO_LONG".to_owned()), "{codes:?}");
    run.assert_within(verify_bound(LINE_LIMIT, KIB, KIB), "300 MB cut line");
}

#[test]
fn verify_reads_a_million_events_in_constant_memory() {
    const EVENTS: u64 = 1_000_000;
    let (run, codes) = verify(|out| {
        meta(out)?;
        for seq in 1..=EVENTS {
            writeln!(out, r#"{{"type":"note","aoi":{{"seq":{seq},"run":"R"}}}}"#)?;
        }
        writeln!(
            out,
            r#"{{"type":"aoi:summary","aoi":{{"seq":{},"run":"R"}},"ok":true,"event_count":{},"count":{EVENTS},"warning_count":0,"error_count":0,{IDENTITY}}}"#,
            EVENTS + 1,
            EVENTS + 2
        )
    });
    // Every line read and counted: a conforming stream, a success.
    assert_eq!(run.code, Some(0), "{codes:?} {run:?}");
    run.assert_within(verify_bound(KIB, KIB, KIB), "1,000,000 events");
}

#[test]
fn verify_reads_two_million_garbage_lines_in_constant_memory() {
    let (run, codes) = verify(|out| {
        for _ in 0..2_000_000 {
            out.write_all(b"this is not json\n")?;
        }
        Ok(())
    });
    assert_eq!(run.code, Some(65), "{run:?}");
    // The first thousand findings are kept, the rest only counted.
    assert_eq!(
        codes.iter().filter(|c| *c == "INVALID_JSON").count(),
        1000,
        "{codes:?}"
    );
    run.assert_within(verify_bound(KIB, KIB, KIB), "2,000,000 garbage lines");
}

/// One line of `open` repeated `depth` times: nesting no recursive parser survives.
fn nested(open: &'static [u8], depth: usize) -> impl FnOnce(&mut dyn Write) -> io::Result<()> {
    move |out| {
        meta(out)?;
        out.write_all(&open.repeat(depth))?;
        out.write_all(b"\n")
    }
}

#[test]
fn verify_rejects_a_million_nested_arrays_without_recursing() {
    let (run, codes) = verify(nested(b"[", 1_000_000));
    assert_eq!(run.code, Some(65), "{run:?}");
    assert!(codes.contains(&"NESTING_TOO_DEEP".to_owned()), "{codes:?}");
    run.assert_within(verify_bound(MIB, MIB, KIB), "1,000,000 [");
}

#[test]
fn verify_rejects_a_million_nested_objects_without_recursing() {
    let (run, codes) = verify(nested(br#"{"a":"#, 1_000_000));
    assert_eq!(run.code, Some(65), "{run:?}");
    assert!(codes.contains(&"NESTING_TOO_DEEP".to_owned()), "{codes:?}");
    run.assert_within(verify_bound(5 * MIB, 5 * MIB, KIB), "1,000,000 {\"a\":");
}

#[test]
fn verify_findings_that_quote_long_values_do_not_accumulate() {
    // 24 lines of an unknown framework type 8 MiB long: each finding quotes the type. Before
    // finding messages were cut to 1 KiB, the findings held every one of them (about 200 MiB
    // here, 64 GiB for a thousand lines at the line limit).
    const LEN: u64 = 8 * MIB;
    let (run, codes) = verify(|out| {
        let chunk = vec![b'x'; LEN as usize];
        for _ in 0..24 {
            out.write_all(br#"{"type":"aoi:"#)?;
            out.write_all(&chunk)?;
            out.write_all(b"\"}\n")?;
        }
        Ok(())
    });
    assert_eq!(run.code, Some(65), "{run:?}");
    assert_eq!(
        codes
            .iter()
            .filter(|c| *c == "UNKNOWN_FRAMEWORK_EVENT")
            .count(),
        24,
        "{codes:?}"
    );
    let messages: Vec<usize> = aoi_test::events(run.stdout.as_bytes())
        .into_iter()
        .filter_map(|e| match e {
            Event::Domain { ty, fields } if ty == "finding" => {
                fields["message"].as_str().map(str::len)
            }
            _ => None,
        })
        .collect();
    run.assert_within(verify_bound(LEN, LEN, KIB), "24 long quoted types");
    assert!(messages.iter().all(|&len| len <= 1024), "{messages:?}");
}

#[test]
fn verify_holds_a_framework_events_tree_within_its_bound() {
    // A summary whose `properties` is 4 MiB of `0,`: decoded, it is a tree of about 16 bytes
    // of `serde_json::Value` per byte of the line, copied once to decode it.
    const LEN: u64 = 4 * MIB;
    let (run, codes) = verify(|out| {
        meta(out)?;
        out.write_all(
            br#"{"type":"aoi:summary","aoi":{"seq":1,"run":"R"},"ok":true,"event_count":2,"count":0,"warning_count":0,"error_count":0,"properties":{"a":["#,
        )?;
        out.write_all(&b"0,".repeat((LEN / 2) as usize))?;
        out.write_all(b"0]},")?;
        out.write_all(IDENTITY.as_bytes())?;
        out.write_all(b"}\n")
    });
    assert_eq!(run.code, Some(0), "{codes:?} {run:?}");
    run.assert_within(verify_bound(LEN, LEN, LEN), "a 4 MiB summary");
}

// ---- aoi lint -------------------------------------------------------------------------------

/// A conforming tool with one command, `blast`, whose machine-mode stdout is `mode`: `huge`
/// (one 300 MB line, while 20 MB go to stderr), `flood` (1,000,000 events of 200 bytes) or
/// `deep` (a line of 1,000,000 `[`). Each probe of the command writes it all.
fn write_tool(dir: &Path, mode: &str) -> PathBuf {
    let tool = dir.join(format!("blast-{mode}.py"));
    let script = format!(
        r#"#!/usr/bin/env python3
import json, sys, threading
MODE = {mode:?}
ID = {{"tool": "blast", "tool_version": "0.1.0", "aoi_version": "1.0-alpha",
      "schema_name": "io.machinemode.tests.blast", "schema_version": "1.0.0"}}
words, output, args = [], "human", sys.argv[1:]
while args:
    a = args.pop(0)
    if a in ("--output", "--format", "--command") and args:
        value = args.pop(0)
        if a != "--command":
            output = value
    elif a.startswith("-"):
        sys.stderr.write("error: unknown flag %s\n" % a.split("=")[0])
        sys.exit(64)
    else:
        words.append(a)
if words == ["capabilities"]:
    print(json.dumps({{"tool": "blast", "tool_version": "0.1.0", "aoi_versions": ["1.0-alpha"],
        "outputs": ["human", "jsonl"],
        "schemas": [{{"name": ID["schema_name"], "versions": ["1.0.0"], "default": "1.0.0"}}],
        "commands": [{{"name": "blast", "read_only": True, "event_types": ["x"], "examples": [["blast"]]}},
                     {{"name": "schema", "read_only": True}}, {{"name": "input-schema", "read_only": True}},
                     {{"name": "capabilities", "read_only": True}}]}}))
elif words == ["schema"]:
    print(json.dumps({{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "required": ["type"], "properties": {{"type": {{"type": "string"}}}},
        "x-aoi": {{"schema_name": ID["schema_name"], "schema_version": "1.0.0"}}}}))
elif words == ["input-schema"]:
    print(json.dumps({{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {{}}, "additionalProperties": False, "x-aoi": {{"flags": {{}}}}}}))
elif words == ["blast"] and output == "human":
    print("blast")
elif words == ["blast"]:
    out, mb = sys.stdout.buffer, b"x" * (1 << 20)
    def spill():
        try:
            for _ in range(20):
                sys.stderr.buffer.write(mb)
        except BrokenPipeError:
            pass
    try:
        out.write(json.dumps(dict({{"type": "aoi:meta", "aoi": {{"seq": 0, "run": "R"}}, "command": "blast"}}, **ID)).encode() + b"\n")
        if MODE == "huge":
            spilling = threading.Thread(target=spill)
            spilling.start()
            out.write(b'{{"type":"x","aoi":{{"seq":1,"run":"R"}},"s":"')
            for _ in range(300):
                out.write(mb)
            out.write(b'"}}\n')
            spilling.join()
        elif MODE == "flood":
            line = b'{{"type":"x","aoi":{{"seq":1,"run":"R"}},"pad":"%s"}}\n' % (b"." * 153)
            block = line * 5000
            for _ in range(200):
                out.write(block)
        else:
            out.write(b"[" * 1000000 + b"\n")
        out.flush()
    except BrokenPipeError:
        sys.exit(141)
else:
    sys.stderr.write("error: unknown command %r\n" % " ".join(words))
    sys.exit(64)
"#
    );
    std::fs::write(&tool, script).expect("write the tool");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    tool
}

/// `aoi lint --tool blast-MODE.py --format jsonl --jobs JOBS`: the run, and each check's
/// `(check, outcome, detail)`.
fn lint(mode: &str, jobs: u64) -> (Measured, Vec<(u64, String, String)>) {
    let dir = temp_dir("memory-lint");
    let tool = write_tool(&dir, mode);
    let argv = [
        path(&aoi()),
        "lint".into(),
        "--tool".into(),
        path(&tool),
        "--format".into(),
        "jsonl".into(),
        "--jobs".into(),
        jobs.to_string(),
    ];
    let run = measure(&argv, &dir, |_| Ok(()));
    aoi_test::assert_conforms(run.stdout.as_bytes());
    let rows = aoi_test::events(run.stdout.as_bytes())
        .into_iter()
        .filter_map(|e| match e {
            Event::Check(check) => {
                let props = check.properties.clone().unwrap_or_default();
                Some((
                    props["check"].as_u64().unwrap_or_default(),
                    props["outcome"].as_str().unwrap_or_default().to_owned(),
                    check.detail.clone().unwrap_or_default(),
                ))
            }
            _ => None,
        })
        .collect();
    (run, rows)
}

/// A stream lint's capture cut: the checks that need it could not run (lint's bound, never
/// the tool's fault), none fails, and lint says so with exit 2.
fn assert_cut_by_lints_bound(run: &Measured, rows: &[(u64, String, String)]) {
    assert_eq!(run.code, Some(2), "{rows:#?} {run:?}");
    assert!(
        rows.iter().all(|(_, outcome, _)| outcome != "fail"),
        "{rows:#?}"
    );
    let base = rows
        .iter()
        .find(|(check, ..)| *check == 3)
        .expect("check 3");
    assert_eq!(base.1, "could_not_run", "{base:?}");
    assert!(base.2.contains("lint keeps"), "{base:?}");
}

#[test]
fn lint_keeps_its_bound_against_a_tool_printing_a_300_mb_line_and_20_mb_on_stderr() {
    let (run, rows) = lint("huge", 1);
    assert_cut_by_lints_bound(&run, &rows);
    // Only the meta line is decoded (by the verifier): lint cut the stream.
    run.assert_within(lint_bound(1, 1, KIB), "lint, a 300 MB line");
}

#[test]
fn lint_keeps_its_bound_against_a_tool_flooding_stdout_with_lines() {
    let (run, rows) = lint("flood", 1);
    assert_cut_by_lints_bound(&run, &rows);
    run.assert_within(lint_bound(1, 1, KIB), "lint, 1,000,000 lines");
}

#[test]
fn lint_fails_a_tool_that_nests_a_million_arrays_within_its_bound() {
    let (run, rows) = lint("deep", 1);
    assert_eq!(run.code, Some(1), "{rows:#?} {run:?}");
    let stream = rows
        .iter()
        .find(|(check, ..)| *check == 2)
        .expect("check 2");
    assert_eq!(stream.1, "fail", "{stream:?}");
    assert!(stream.2.contains("NESTING_TOO_DEEP"), "{stream:?}");
    // Only the meta line is decoded: the deep line is rejected before anything parses it.
    run.assert_within(lint_bound(1, 1, KIB), "lint, 1,000,000 [");
}

// ---- aoi mcp --------------------------------------------------------------------------------

/// A raw JSON-RPC client on `aoi mcp -- hostile.py` (its discovery cached, as for the other
/// tests): initializes, calls `tool`, reads the adapter's `VmHWM` once the result has arrived
/// (the adapter still running), then closes its stdin. Returns the result and the peak, in
/// bytes.
fn mcp_call(tool: &str) -> (Value, u64) {
    let mut adapter = Command::new(aoi())
        .args(["mcp", "--"])
        .arg(data("hostile.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aoi mcp starts");
    let mut input = adapter.stdin.take().expect("stdin");
    let mut output = BufReader::new(adapter.stdout.take().expect("stdout"));
    let mut send = |message: Value| {
        writeln!(input, "{message}").expect("write a request");
        input.flush().expect("flush");
    };
    let mut response = |id: u64| -> Value {
        loop {
            let mut line = String::new();
            let n = output.read_line(&mut line).expect("read a response");
            assert!(n > 0, "the adapter ended before answering request {id}");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC message");
            if message["id"] == id {
                return message;
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "memory-test", "version": "1"}}}),
    );
    response(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}}));
    let result = response(2)["result"].clone();
    let status = std::fs::read_to_string(format!("/proc/{}/status", adapter.id()))
        .expect("the adapter still runs");
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM")
        * KIB;
    drop(input);
    let deadline = Instant::now() + Duration::from_secs(10);
    while adapter.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = adapter.kill();
            let _ = adapter.wait();
            panic!("the adapter did not end when its stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stderr = String::new();
    let _ = io::Read::read_to_string(&mut adapter.stderr.take().expect("stderr"), &mut stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (result, peak)
}

/// Asserts that the adapter's `peak` is within its bound at the default `--max-output`, for
/// lines of at most `decoded` bytes decoded.
fn assert_mcp_within(tool: &str, peak: u64, decoded: u64) {
    let bound = mcp_bound(aoi_mcp::call::DEFAULT_MAX_OUTPUT as u64, decoded);
    assert!(
        peak <= bound,
        "{tool}: the adapter's peak RSS {:.1} MiB is over the bound of {:.1} MiB",
        peak as f64 / MIB as f64,
        bound as f64 / MIB as f64
    );
}

/// Asserts that `result` is a protocol violation naming `code`.
fn assert_violation(tool: &str, code: &str, result: &Value) {
    assert_eq!(result["isError"], true, "{tool}: {result}");
    let findings = &result["structuredContent"]["protocol_violation"]["findings"];
    assert!(
        findings
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["code"] == code)),
        "{tool}: {code} is named: {result}"
    );
}

#[test]
fn mcp_skips_a_300_mb_line_within_its_bound() {
    let (result, peak) = mcp_call("hugeline");
    assert_violation("hugeline", "LINE_TOO_LONG", &result);
    // Only the meta and the summary are decoded: the long line is skipped as it arrives.
    assert_mcp_within("hugeline", peak, KIB);
}

#[test]
fn mcp_skips_a_300_mb_line_without_a_newline_within_its_bound() {
    let (result, peak) = mcp_call("hugecut");
    assert_violation("hugecut", "LINE_TOO_LONG", &result);
    assert_mcp_within("hugecut", peak, KIB);
}

#[test]
fn mcp_rejects_a_million_nested_arrays_and_deep_objects_within_its_bound() {
    for tool in ["deep", "deepobject"] {
        let (result, peak) = mcp_call(tool);
        assert_violation(tool, "NESTING_TOO_DEEP", &result);
        // The verifier rejects the deep line before anything decodes it.
        assert_mcp_within(tool, peak, KIB);
    }
}

#[test]
fn mcp_reads_half_a_million_garbage_lines_within_its_bound() {
    let (result, peak) = mcp_call("garbageflood");
    assert_violation("garbageflood", "INVALID_JSON", &result);
    assert_mcp_within("garbageflood", peak, KIB);
}

#[test]
fn mcp_cuts_an_endless_flood_of_events_within_its_bound() {
    let (result, peak) = mcp_call("flood");
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["truncated"], true);
    assert_mcp_within("flood", peak, KIB);
}

#[test]
fn mcp_lists_a_hundred_events_that_do_not_fit_and_only_counts_the_rest() {
    // 4,000 notes that break the outputSchema, each quoting 4 KB in its message. Before the
    // adapter listed at most a hundred (with messages cut to 1 KiB), it held one finding per
    // event, and sent them all.
    let (result, peak) = mcp_call("misfitflood");
    assert_violation("misfitflood", "OUTPUT_SCHEMA_MISMATCH", &result);
    assert_mcp_within("misfitflood", peak, 5 * KIB);
    let findings = result["structuredContent"]["protocol_violation"]["findings"]
        .as_array()
        .expect("findings");
    let misfits: Vec<&Value> = findings
        .iter()
        .filter(|f| f["code"] == "OUTPUT_SCHEMA_MISMATCH")
        .collect();
    assert_eq!(misfits.len(), 100, "{result}");
    assert!(misfits
        .iter()
        .all(|f| f["message"].as_str().is_some_and(|m| m.len() <= 1024)));
    let headline = result["content"][0]["text"].as_str().expect("headline");
    assert!(
        headline.contains("2900 more events that do not fit"),
        "{headline}"
    );
}

#[test]
fn mcp_holds_only_the_errors_it_names_from_a_flood_of_errors() {
    // 8,000 item errors with 4 KB of details from a command that is not read-only (so it is
    // read to its end): before the adapter kept only the errors its headline may name, it
    // held every one.
    let (result, peak) = mcp_call("errorflood");
    assert_eq!(result["isError"], true, "{result}");
    let headline = result["content"][0]["text"].as_str().expect("headline");
    assert!(headline.contains("failed: not_found GONE"), "{headline}");
    assert_mcp_within("errorflood", peak, 5 * KIB);
}
