//! Running `aoi` and the fake tools.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub fn aoi() -> PathBuf {
    aoi_test::workspace_bin("aoi")
}

pub fn fake_tool() -> PathBuf {
    aoi_test::workspace_bin("aoi-fake-tool")
}

/// Runs `aoi ARGS` with `stdin` piped in; returns the output.
pub fn run_aoi(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(aoi())
        .args(args)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aoi starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The child may stop reading early; a closed pipe is not a test failure.
        let _ = input.write_all(&bytes);
    });
    let out = child.wait_with_output().expect("aoi runs");
    writer.join().expect("stdin writer");
    out
}

/// Exit code, stdout and stderr, for snapshot-style comparisons.
pub use aoi_test::transcript;

/// A valid three-line stream with a fixed run id.
pub const OK_STREAM: &str = concat!(
    r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0","command":"search"}"#,
    "\n",
    r#"{"type":"hit","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"rank":1,"id":"doc_123","title":"Agent-Operable Tools"}"#,
    "\n",
    r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4W"},"ok":true,"event_count":3,"count":1,"warning_count":0,"error_count":0,"tool":"outline","tool_version":"1.8.2","aoi_version":"1.0-alpha","schema_name":"com.example.outline.events","schema_version":"1.0.0"}"#,
    "\n"
);

/// The §13.1 failure: a forwarded rate limit and a summary with `caused_by`.
pub const FAILED_STREAM: &str = concat!(
    r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4X"},"tool":"summarize","tool_version":"0.3.0","aoi_version":"1.0-alpha","schema_name":"com.example.summarize.events","schema_version":"1.0.0"}"#,
    "\n",
    r#"{"type":"aoi:error","aoi":{"seq":1,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4X"},"origin":"outline","category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","domain":"outline","message":"Upstream API rate limit exceeded.","retryable":true,"retry_after_ms":7200}"#,
    "\n",
    r#"{"type":"aoi:summary","aoi":{"seq":2,"run":"01JZQ7X4TQ9V5R8K2M3N6P7S4X"},"ok":false,"reason":"failed","event_count":3,"count":0,"warning_count":0,"error_count":1,"caused_by":{"origin":"outline","category":"rate_limited","code":"UPSTREAM_RATE_LIMIT","retryable":true,"retry_after_ms":7200},"tool":"summarize","tool_version":"0.3.0","aoi_version":"1.0-alpha","schema_name":"com.example.summarize.events","schema_version":"1.0.0"}"#,
    "\n"
);

/// An example tool of the `aoi` crate (`feed`, `shout`, `collect`), built by `cargo test`.
pub fn example(name: &str) -> PathBuf {
    aoi_test::workspace_bin(&format!("examples/{name}"))
}

/// Runs a bash script with `$FEED`, `$SHOUT`, `$COLLECT`, `$AOI` set; returns the output.
pub fn bash(script: &str, dir: &std::path::Path) -> Output {
    Command::new("bash")
        .args(["-c", &format!("set -o pipefail\n{script}")])
        .current_dir(dir)
        .env("FEED", example("feed"))
        .env("SHOUT", example("shout"))
        .env("COLLECT", example("collect"))
        .env("AOI", aoi())
        .output()
        .expect("bash runs")
}

pub use aoi_test::{temp_dir, TempDir};
