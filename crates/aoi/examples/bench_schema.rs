//! Prints the event schema of the benchmark stream (`bench/gen_stream.py`): the identity it
//! declares and its one domain event, `hit`. Used by `bench/verify_schema.sh` as the schema for
//! `aoi verify --schema`.
//!
//! `cargo run --release -p aoi --example bench_schema > schema.json`

use std::io::{self, Write};
use std::process::ExitCode;

use aoi::discover::schema::EventSchema;
use aoi::Identity;

/// A search result, as `gen_stream.py` writes it.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Hit {
    /// 1-based rank of the result.
    rank: u64,
    /// Document id, e.g. `doc_17`.
    id: String,
    /// Document title.
    title: String,
    /// Matching text.
    snippet: String,
    /// Relevance in [0, 1).
    score: f64,
}

fn main() -> ExitCode {
    let identity = Identity::new("outline", "1.8.2", "com.example.outline.events", "1.0.0");
    let schema = EventSchema::new(&identity, "https://schemas.example.com/outline")
        .domain_event_named::<Hit>("hit")
        .build();
    let written = match schema {
        Ok(schema) => serde_json::to_writer_pretty(io::stdout().lock(), &schema)
            .map_err(io::Error::from)
            .and_then(|()| io::stdout().write_all(b"\n")),
        Err(e) => {
            let _ = writeln!(io::stderr(), "bench_schema: {e}");
            return ExitCode::from(aoi::exit_code::SOFTWARE);
        }
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(aoi::exit_code::IO_ERR),
    }
}
