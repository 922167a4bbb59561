//! A call's `structuredContent`, held as the JSON text the CLI wrote, and written from it.
//!
//! A result is mostly the CLI's events. Held as `serde_json::Value` trees they cost several
//! times their bytes, and rmcp's `CallToolResult` wants the tree beside the text block (the
//! same JSON again, escaped), and its transport serializes the whole response once more.
//! So a call keeps each event as its line's text ([`Structured`]), and on stdio the response
//! is written from those texts:
//! - the result rmcp handles carries two placeholders ([`hold`]): a string in place of
//!   `structuredContent` and one as the JSON text block, each naming the held result by a
//!   number and a nonce drawn once per process (a CLI cannot write a placeholder of its own);
//! - the stdio writer ([`write_line`]) and the HTTP body (`crate::http`) write every message
//!   through [`Spliced`]: where a placeholder is, the held result, the JSON itself or the same
//!   JSON as an escaped string, 64 KiB at a time. Nothing builds the response in memory; the
//!   held events are the only copy, forgotten once written.
//!
//! rmcp keeps an HTTP stream's messages for a client that resumes it (`Last-Event-ID`): a
//! result replayed after it was written whole is the `RESULT_FORGOTTEN` error below, never a
//! placeholder. A stream cut while its result was being written keeps the result held, for
//! the replay.
//!
//! A held result rmcp drops without sending (a request cancelled while its answer was on the
//! way) is forgotten after [`FORGOTTEN_AFTER`]; a placeholder whose result is gone is written
//! as an `adapter_error` result, never as a placeholder or a guess.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// How long a held result waits to be written before it is forgotten.
pub const FORGOTTEN_AFTER: Duration = Duration::from_secs(3600);

/// Bytes written to the output at a time.
const CHUNK: usize = 64 << 10;

/// The `structuredContent` of a call: its events as JSON texts, and every other field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Structured {
    /// The events, in stream order, each the JSON text of one object without a line break.
    pub events: Vec<String>,
    /// `summary`, and `truncated`, `protocol_violation`, `adapter_error`, … when present.
    pub rest: Map<String, Value>,
}

impl Structured {
    /// A result without events, of `rest`.
    pub fn without_events(rest: Map<String, Value>) -> Structured {
        Structured {
            events: Vec::new(),
            rest,
        }
    }

    /// The result as one JSON value (each event parsed).
    pub fn into_value(self) -> Value {
        let mut map = self.rest;
        let events = self
            .events
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e).ok())
            .collect();
        map.insert("events".into(), Value::Array(events));
        Value::Object(map)
    }

    /// `]` and the other fields, serialized.
    fn tail(&self) -> String {
        let rest = serde_json::to_string(&self.rest).unwrap_or_else(|_| "{}".into());
        if rest == "{}" {
            "]}".to_owned()
        } else {
            format!("],{}", &rest[1..])
        }
    }
}

/// A held result, and when it was held.
#[derive(Debug)]
struct Held {
    structured: Structured,
    at: Instant,
}

#[derive(Debug, Default)]
struct Store {
    held: HashMap<u64, Arc<Held>>,
}

fn store() -> &'static Mutex<Store> {
    static STORE: OnceLock<Mutex<Store>> = OnceLock::new();
    STORE.get_or_init(Mutex::default)
}

/// The process's nonce: 128 random bits, in hex.
fn nonce() -> &'static str {
    static NONCE: OnceLock<String> = OnceLock::new();
    NONCE.get_or_init(|| {
        let draw = || RandomState::new().build_hasher().finish();
        format!("{:016x}{:016x}", draw(), draw())
    })
}

/// The start of every placeholder's marker as serialized JSON: `\u0001`, then the marker.
fn prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| format!("\\u0001aoi-mcp:{}:", nonce()))
}

/// Holds `structured` for the stdio writer: the placeholder for `structuredContent` (an
/// object, as MCP wants it: `{"<marker>":null}`) and the one for the JSON text block (the
/// marker as a string).
pub fn hold(structured: Structured) -> (Value, String) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let now = Instant::now();
    if let Ok(mut store) = store().lock() {
        store
            .held
            .retain(|_, held| now.duration_since(held.at) < FORGOTTEN_AFTER);
        store.held.insert(
            id,
            Arc::new(Held {
                structured,
                at: now,
            }),
        );
    }
    let marker = |kind: &str| format!("\u{1}aoi-mcp:{}:{id}:{kind}\u{1}", nonce());
    let mut placeholder = Map::new();
    placeholder.insert(marker("json"), Value::Null);
    (Value::Object(placeholder), marker("text"))
}

/// One placeholder found in a serialized line.
struct Found {
    start: usize,
    end: usize,
    id: u64,
    text: bool,
}

/// The first placeholder in `line` at or after `from`: `"<marker>"` for the text block,
/// `{"<marker>":null}` for `structuredContent`.
fn find(line: &str, from: usize) -> Option<Found> {
    let prefix = prefix();
    let mut at = from;
    loop {
        let marker = at + line.get(at..)?.find(prefix)?;
        let after = marker + prefix.len();
        at = after;
        let Some((digits, tail)) = line[after..].split_once(':') else {
            continue;
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(id) = digits.parse::<u64>() else {
            continue;
        };
        let kind_at = after + digits.len() + 1;
        let (text, before, suffix) = if tail.starts_with("text\\u0001\"") {
            (true, "\"", "text\\u0001\"")
        } else if tail.starts_with("json\\u0001\":null}") {
            (false, "{\"", "json\\u0001\":null}")
        } else {
            continue;
        };
        if !line[..marker].ends_with(before) {
            continue;
        }
        return Some(Found {
            start: marker - before.len(),
            end: kind_at + suffix.len(),
            id,
            text,
        });
    }
}

/// Writes `line` and a line break to `output`, each placeholder in it replaced by its held
/// result (which is then forgotten).
pub async fn write_line<W: AsyncWrite + Unpin>(output: &mut W, mut line: String) -> io::Result<()> {
    line.push('\n');
    match Spliced::of(line.as_bytes()) {
        None => output.write_all(line.as_bytes()).await?,
        Some(mut spliced) => {
            while let Some(chunk) = spliced.next_chunk() {
                output.write_all(&chunk).await?;
            }
        }
    }
    output.flush().await
}

/// Bytes with placeholders, written as chunks of about 64 KiB at most, with each
/// placeholder's held result in its place: the response is never built whole. A held result
/// is forgotten once written.
#[derive(Debug)]
pub struct Spliced {
    parts: std::collections::VecDeque<Part>,
}

#[derive(Debug)]
enum Part {
    Bytes(Vec<u8>),
    Held {
        id: u64,
        source: Arc<Held>,
        text: bool,
        /// Where the writing is: 0 the opening, 1 + i event i, then the tail, then done.
        at: usize,
        tail: String,
    },
}

impl Spliced {
    /// `bytes` spliced, or `None` when they hold no placeholder (or are not UTF-8, so no
    /// serialized JSON of this process).
    pub fn of(bytes: &[u8]) -> Option<Spliced> {
        let line = std::str::from_utf8(bytes).ok()?;
        let mut found = find(line, 0)?;
        let mut parts = std::collections::VecDeque::new();
        let mut written = 0;
        loop {
            parts.push_back(Part::Bytes(bytes[written..found.start].to_vec()));
            let held = store()
                .lock()
                .ok()
                .and_then(|s| s.held.get(&found.id).cloned())
                .unwrap_or_else(|| {
                    Arc::new(Held {
                        structured: Structured::without_events(forgotten()),
                        at: Instant::now(),
                    })
                });
            let tail = held.structured.tail();
            parts.push_back(Part::Held {
                id: found.id,
                source: held,
                text: found.text,
                at: 0,
                tail,
            });
            written = found.end;
            match find(line, written) {
                Some(next) => found = next,
                None => break,
            }
        }
        parts.push_back(Part::Bytes(bytes[written..].to_vec()));
        Some(Spliced { parts })
    }

    /// The next chunk, or `None` once everything is written.
    pub fn next_chunk(&mut self) -> Option<Vec<u8>> {
        let mut buffer = Vec::new();
        while buffer.len() < CHUNK {
            let Some(part) = self.parts.front_mut() else {
                break;
            };
            match part {
                Part::Bytes(bytes) => {
                    buffer.append(bytes);
                    self.parts.pop_front();
                }
                Part::Held {
                    id,
                    source,
                    text,
                    at,
                    tail,
                } => {
                    let events = &source.structured.events;
                    let piece: Option<&str> = match *at {
                        0 => Some("{\"events\":["),
                        i if i <= events.len() => Some(events[i - 1].as_str()),
                        i if i == events.len() + 1 => Some(tail.as_str()),
                        _ => None,
                    };
                    let Some(piece) = piece else {
                        if *text {
                            buffer.push(b'"');
                        }
                        let id = *id;
                        self.parts.pop_front();
                        if let Ok(mut store) = store().lock() {
                            store.held.remove(&id);
                        }
                        continue;
                    };
                    if *at == 0 && *text {
                        buffer.push(b'"');
                    }
                    let comma = *at >= 1 && *at < events.len();
                    if *text {
                        escape_into(&mut buffer, piece);
                    } else {
                        buffer.extend_from_slice(piece.as_bytes());
                    }
                    if comma {
                        buffer.push(b',');
                    }
                    *at += 1;
                }
            }
        }
        (!buffer.is_empty()).then_some(buffer)
    }
}

/// What a placeholder whose result was forgotten becomes.
fn forgotten() -> Map<String, Value> {
    let error = crate::adapter_error::adapter_error(
        aoi::Category::Internal,
        "RESULT_FORGOTTEN",
        "the result is no longer held (it was written already, or not within an hour of the call); what the call did is unknown here",
    );
    match json!({"summary": null, "adapter_error": error}) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Appends `text` as the inside of a JSON string, escaped as serde_json escapes it (the
/// SDK's one escaper, [`aoi::wire::escape_json`]).
fn escape_into(buffer: &mut Vec<u8>, text: &str) {
    aoi::wire::escape_json(text, |piece| buffer.extend_from_slice(piece.as_bytes()));
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn written(line: &str) -> String {
        let mut out = Vec::new();
        write_line(&mut out, line.to_owned()).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    fn sample() -> Structured {
        Structured {
            events: vec![
                r#"{"type":"hit","text":"a \"quoted\" \\ back\tslash é"}"#.to_owned(),
                r#"{"type": "hit", "n": 2}"#.to_owned(),
            ],
            rest: crate::call::object(json!({"summary": {"ok": true}, "truncated": true})),
        }
    }

    #[tokio::test]
    async fn a_held_result_is_written_in_place_of_both_placeholders() {
        let structured = sample();
        let expected = structured.clone().into_value();
        let (object, text) = hold(structured);
        let message = json!({"result": {"content": [{"type": "text", "text": text}], "structuredContent": object}});
        let line = serde_json::to_string(&message).unwrap();
        let out = written(&line).await;
        assert!(out.ends_with('\n') && !out[..out.len() - 1].contains('\n'));
        let parsed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed["result"]["structuredContent"], expected);
        let block: Value =
            serde_json::from_str(parsed["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(block, expected, "the text block is the same JSON");
    }

    #[tokio::test]
    async fn a_placeholder_whose_result_is_gone_becomes_an_adapter_error_not_a_placeholder() {
        let (object, text) = hold(sample());
        let line = serde_json::to_string(&json!({"a": object, "b": text})).unwrap();
        let _ = written(&line).await;
        let again: Value = serde_json::from_str(&written(&line).await).unwrap();
        assert_eq!(again["a"]["adapter_error"]["code"], "RESULT_FORGOTTEN");
        assert_eq!(again["a"]["events"], json!([]));
        assert!(!again.to_string().contains("aoi-mcp:"));
    }

    #[tokio::test]
    async fn a_marker_without_this_process_nonce_is_text_like_any_other() {
        let forged = "\u{1}aoi-mcp:00000000000000000000000000000000:0:text\u{1}";
        let line = serde_json::to_string(&json!({"t": forged, "o": {forged: null}})).unwrap();
        assert_eq!(written(&line).await, format!("{line}\n"));
    }

    #[test]
    fn a_large_result_is_written_in_bounded_chunks_that_make_the_same_json() {
        let structured = Structured {
            events: (0..5000)
                .map(|i| {
                    format!(
                        r#"{{"type":"hit","n":{i},"text":"\"{}\""}}"#,
                        "x".repeat(80)
                    )
                })
                .collect(),
            rest: crate::call::object(json!({"summary": null})),
        };
        let expected = structured.clone().into_value();
        let (object, text) = hold(structured);
        let line = serde_json::to_string(&json!({"s": object, "t": text})).unwrap();
        let mut spliced = Spliced::of(line.as_bytes()).expect("placeholders found");
        let mut chunks = Vec::new();
        while let Some(chunk) = spliced.next_chunk() {
            assert!(chunk.len() < 2 * CHUNK, "a chunk of {} bytes", chunk.len());
            chunks.push(chunk);
        }
        assert!(chunks.len() > 10, "{} chunks", chunks.len());
        let parsed: Value = serde_json::from_slice(&chunks.concat()).unwrap();
        assert_eq!(parsed["s"], expected);
        assert_eq!(
            serde_json::from_str::<Value>(parsed["t"].as_str().unwrap()).unwrap(),
            expected
        );
        assert!(Spliced::of(b"no placeholder here").is_none());
    }

    #[test]
    fn the_escaping_is_serde_jsons() {
        let text = "{\"a\":\"\\\" \t \u{7f} é \u{1f}\"}";
        let mut buffer = Vec::new();
        escape_into(&mut buffer, text);
        let quoted = format!("\"{}\"", String::from_utf8(buffer).unwrap());
        assert_eq!(quoted, serde_json::to_string(text).unwrap());
    }
}
