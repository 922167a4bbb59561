//! A tool built on the `aoi` SDK, and some that are not, for end-to-end tests.
//!
//! `aoi-fake-tool MODE [N]`:
//! - `ok N`: N `hit` events, success;
//! - `many N`: N hits, for pipe-close tests;
//! - `fail`: an `unavailable` process error with `retry_after_ms`;
//! - `items N`: N hits with an item error after every third, then `ok:false`, partial;
//! - `panic`: one hit, then a panic;
//! - `watch`: heartbeats every 50 ms until SIGINT/SIGTERM (cooperative);
//! - `block`: blocks reading stdin, ignoring cancellation (the harness must take over);
//! - `slow`: runs under a 200 ms `--timeout`-style deadline and waits cooperatively;
//! - `slow-block`: the same deadline, blocked reading stdin;
//! - raw misbehaviours written without the SDK: `no-summary`, `truncated`, `garbage`,
//!   `flat-v02`, `lying-count`.

use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use aoi::{
    Category, Code, DomainEvent, Emitter, ErrorEvent, Harness, Heartbeat, Identity, Outcome,
};
use serde::Serialize;

#[derive(Serialize)]
struct Hit {
    rank: u64,
    id: String,
    title: String,
}

impl DomainEvent for Hit {
    const TYPE: &'static str = "hit";
}

fn hit(rank: u64) -> Hit {
    Hit {
        rank,
        id: format!("doc_{rank}"),
        title: format!("Document number {rank}"),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map_or("ok", String::as_str);
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    if let Some(code) = raw(mode) {
        return code;
    }
    let identity = Identity::new(
        "aoi-fake-tool",
        "0.0.1",
        "io.machinemode.fake.events",
        "1.0.0",
    );
    let timeout = mode
        .starts_with("slow")
        .then_some(Duration::from_millis(200));
    let harness = Harness::new(Emitter::builder(identity).command(mode.to_owned()))
        .grace(Duration::from_millis(300))
        .timeout(timeout);
    let mode = mode.to_owned();
    harness.run(move |out| match mode.as_str() {
        "ok" | "many" => {
            for rank in 1..=n {
                out.emit(&hit(rank))?;
            }
            Ok(Outcome::success())
        }
        "fail" => {
            out.emit(&hit(1))?;
            Err(ErrorEvent::new(
                Category::Unavailable,
                Code::from_static("INDEX_UNAVAILABLE"),
                "the index is unavailable",
            )
            .retry_after_ms(2500)
            .into())
        }
        "items" => {
            for rank in 1..=n {
                if rank % 3 == 0 {
                    out.error(
                        &ErrorEvent::new(
                            Category::Validation,
                            Code::from_static("BAD_ITEM"),
                            "bad item",
                        )
                        .item()
                        .line_number(rank),
                    )?;
                } else {
                    out.emit(&hit(rank))?;
                }
            }
            Ok(Outcome::failed())
        }
        "panic" => {
            out.emit(&hit(1))?;
            let empty: Vec<u64> = Vec::new();
            // A real bug: indexing out of bounds.
            let index = n as usize;
            Ok(Outcome::success().property("value", empty[index]))
        }
        "watch" => {
            let cancel = out.cancel_token();
            loop {
                out.heartbeat(&Heartbeat {
                    interval_ms: Some(50),
                    properties: None,
                })?;
                if cancel.sleep(Duration::from_millis(50)).is_some() {
                    return Ok(Outcome::cancelled());
                }
            }
        }
        "slow" => {
            out.emit(&hit(1))?;
            out.cancel_token().sleep(Duration::from_secs(30));
            out.emit(&hit(2))?;
            Ok(Outcome::success())
        }
        "block" | "slow-block" => {
            out.emit(&hit(1))?;
            out.flush()?;
            let mut sink = Vec::new();
            let _ = io::stdin().read_to_end(&mut sink);
            Ok(Outcome::success())
        }
        other => Err(ErrorEvent::new(
            Category::Usage,
            Code::from_static("UNKNOWN_MODE"),
            format!("unknown mode {other:?}"),
        )
        .into()),
    })
}

/// Misbehaving producers, written by hand on purpose.
fn raw(mode: &str) -> Option<ExitCode> {
    let meta = r#"{"type":"aoi:meta","aoi":{"seq":0,"run":"RAW"},"tool":"raw","tool_version":"0","aoi_version":"1.0-alpha","schema_name":"raw","schema_version":"1.0.0"}"#;
    let text = match mode {
        "no-summary" => format!("{meta}\n{{\"type\":\"hit\",\"aoi\":{{\"seq\":1,\"run\":\"RAW\"}}}}\n"),
        "truncated" => format!(
            "{meta}\n{{\"type\":\"aoi:summary\",\"aoi\":{{\"seq\":1,\"run\":\"RAW\"}},\"ok\":true,\"event_count\":2,\"count\":0}}"
        ),
        "garbage" => format!("{meta}\nWARNING: something happened\n"),
        "flat-v02" => "{\"type\":\"aoi:meta\",\"seq\":0,\"run\":\"RAW\"}\n{\"type\":\"aoi:error\",\"seq\":1,\"run\":\"RAW\",\"category\":\"temporary\",\"code\":\"X\",\"message\":\"m\"}\n{\"type\":\"aoi:summary\",\"seq\":2,\"run\":\"RAW\",\"ok\":false}\n".to_owned(),
        "lying-count" => format!(
            "{meta}\n{{\"type\":\"aoi:summary\",\"aoi\":{{\"seq\":1,\"run\":\"RAW\"}},\"ok\":true,\"event_count\":2,\"count\":5}}\n"
        ),
        _ => return None,
    };
    let _ = io::stdout().write_all(text.as_bytes());
    Some(ExitCode::SUCCESS)
}
