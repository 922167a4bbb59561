//! Emitter throughput against bare `serde_json`, for `bench/emit.sh`: writes the same 200,000
//! `hit` lines either through the `aoi` `Emitter` (`aoi`) or with `serde_json::to_writer` of a
//! struct that already carries `type` and the envelope into a `BufWriter` (`serde`), into
//! `io::sink()`; `none` only builds the events, so instruction counts can be subtracted.
//! Prints the elapsed time of the writing loop on stderr.

use aoi::{DomainEvent, Emitter, Identity, Outcome};
use serde::Serialize;
use std::io::{self, BufWriter, Write};
#[derive(Serialize)]
struct Hit {
    rank: u64,
    id: String,
    title: String,
    snippet: String,
    score: f64,
}
impl DomainEvent for Hit {
    const TYPE: &'static str = "hit";
}
#[derive(Serialize)]
struct Env<'a> {
    seq: u64,
    run: &'a str,
}
#[derive(Serialize)]
struct Bare<'a> {
    #[serde(rename = "type")]
    ty: &'a str,
    aoi: Env<'a>,
    rank: u64,
    id: &'a str,
    title: &'a str,
    snippet: &'a str,
    score: f64,
}
fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let n = 200_000u64;
    let hits: Vec<Hit> = (0..n)
        .map(|i| Hit {
            rank: i,
            id: format!("doc_{i}"),
            title: format!("Les Misérables — Ἰλιάς 日本語 {i}"),
            snippet: "A conforming tool exposes a stable \"interface\" ünd so weiter…".into(),
            score: 0.83,
        })
        .collect();
    let t = std::time::Instant::now();
    if mode == "aoi" {
        let mut e = Emitter::builder(Identity::new("t", "1", "s", "1.0.0"))
            .run_id("01JZQ7X4TQ9V6H0ZT7K8F2W3C1")
            .start(io::sink())
            .unwrap();
        for h in &hits {
            e.emit(h).unwrap();
        }
        e.finish(Outcome::success()).unwrap();
    } else if mode == "serde" {
        let mut w = BufWriter::new(io::sink());
        for (i, h) in hits.iter().enumerate() {
            serde_json::to_writer(
                &mut w,
                &Bare {
                    ty: "hit",
                    aoi: Env {
                        seq: i as u64 + 1,
                        run: "01JZQ7X4TQ9V6H0ZT7K8F2W3C1",
                    },
                    rank: h.rank,
                    id: &h.id,
                    title: &h.title,
                    snippet: &h.snippet,
                    score: h.score,
                },
            )
            .unwrap();
            w.write_all(b"\n").unwrap();
        }
        w.flush().unwrap();
    }
    let elapsed = t.elapsed();
    let _ = writeln!(io::stderr(), "{mode} {}", elapsed.as_secs_f64());
}
