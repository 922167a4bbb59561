//! The stdio transport (`aoi mcp`, the default): newline-delimited JSON-RPC on stdin and
//! stdout, exact where rmcp's own stdio codec is lenient.
//!
//! rmcp's codec drops a line it cannot decode. This transport answers it instead, the way
//! JSON-RPC 2.0 says:
//! - a line that is not JSON gets `-32700` (parse error, `id: null`);
//! - JSON that is not a JSON-RPC message gets `-32600` (invalid request), with the
//!   message's `id` when it has one;
//! - a batch (an array) is split into its messages when the revision negotiated by
//!   `initialize` has batches (2025-03-26): their responses are written back as one array,
//!   once all of them are in. Other revisions removed batches: `-32600`.
//!
//! Every line written goes through one writer task, so rmcp's messages and these answers
//! never interleave within a line.

use std::collections::HashSet;
use std::io;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientJsonRpcMessage, CustomRequest, ErrorCode, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, watch};

/// The only revision with JSON-RPC batches.
const BATCH_REVISION: &str = "2025-03-26";

/// A batch whose responses are still coming: the ids it waits for, and what is in.
#[derive(Debug, Default)]
struct Batch {
    waiting: HashSet<String>,
    responses: Vec<Value>,
}

/// What the reader and the sender share.
#[derive(Debug, Default)]
struct Shared {
    batches: Vec<Batch>,
}

/// The stdio transport over any reader and writer (the process's stdin and stdout in
/// `aoi mcp`).
#[derive(Debug)]
pub struct StdioTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    out: mpsc::UnboundedSender<String>,
    shared: Arc<Mutex<Shared>>,
    /// The revision the `initialize` response named, once it is sent.
    revision: watch::Sender<Option<String>>,
}

/// The key of a JSON-RPC id, for matching responses to a batch.
fn id_key(id: &Value) -> String {
    id.to_string()
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

impl StdioTransport {
    /// The transport on the process's stdin and stdout.
    pub fn stdio() -> StdioTransport {
        StdioTransport::new(tokio::io::stdin(), tokio::io::stdout())
    }

    /// The transport reading `input` and writing `output`; spawns its reader and writer tasks
    /// (call within a Tokio runtime).
    pub fn new<R, W>(input: R, output: W) -> StdioTransport
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, lines) = mpsc::unbounded_channel::<String>();
        tokio::spawn(write_lines(output, lines));
        let (deliver, incoming) = mpsc::channel(64);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (revision, negotiated) = watch::channel(None);
        let reader = Reader {
            deliver,
            out: out.clone(),
            shared: shared.clone(),
            negotiated,
            initialized: false,
        };
        tokio::spawn(reader.run(input));
        StdioTransport {
            incoming,
            out,
            shared,
            revision,
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::UnboundedReceiver<String>,
) {
    while let Some(line) = lines.recv().await {
        if crate::structured::write_line(&mut output, line)
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The reading half: lines from stdin, decoded.
struct Reader {
    deliver: mpsc::Sender<ClientJsonRpcMessage>,
    out: mpsc::UnboundedSender<String>,
    shared: Arc<Mutex<Shared>>,
    negotiated: watch::Receiver<Option<String>>,
    /// Whether an `initialize` request went to rmcp (its answer then names the revision).
    initialized: bool,
}

impl Reader {
    /// Reads lines until EOF: each becomes messages for rmcp, or an answer written at once.
    async fn run<R: AsyncRead + Unpin>(mut self, input: R) {
        let mut input = BufReader::new(input);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match input.read_until(b'\n', &mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = buffer.trim_ascii();
            if line.is_empty() {
                continue;
            }
            let messages = match serde_json::from_slice(line) {
                Ok(Value::Array(items)) => self.batch(items).await,
                Ok(value) => match decode(value) {
                    Ok(message) => vec![message],
                    Err(answer) => {
                        self.answer(answer);
                        continue;
                    }
                },
                Err(e) => {
                    self.answer(error(Value::Null, -32700, &format!("Parse error: {e}")));
                    continue;
                }
            };
            for message in messages {
                if let ClientJsonRpcMessage::Request(request) = &message {
                    self.initialized |= request.request.method() == "initialize";
                }
                if self.deliver.send(message).await.is_err() {
                    return;
                }
            }
        }
    }

    fn answer(&self, value: Value) {
        let _ = self.out.send(value.to_string());
    }

    /// The revision negotiated: once `initialize` went to rmcp, its answer is waited for (a
    /// client may send a batch right behind it).
    async fn revision(&mut self) -> Option<String> {
        if self.initialized {
            let wait = self.negotiated.wait_for(Option::is_some);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(30), wait).await;
        }
        self.negotiated.borrow().clone()
    }

    /// The messages of a batch for rmcp; the batch is registered so that its responses are
    /// written as one array. Answers at once when the revision has no batches.
    async fn batch(&mut self, items: Vec<Value>) -> Vec<ClientJsonRpcMessage> {
        let revision = self.revision().await;
        if revision.as_deref() != Some(BATCH_REVISION) {
            let named = revision.unwrap_or_else(|| "none yet".to_owned());
            let message = format!(
                "Invalid Request: JSON-RPC batches are only part of MCP {BATCH_REVISION} (negotiated: {named})"
            );
            self.answer(error(Value::Null, -32600, &message));
            return Vec::new();
        }
        if items.is_empty() {
            self.answer(error(
                Value::Null,
                -32600,
                "Invalid Request: an empty batch",
            ));
            return Vec::new();
        }
        let mut batch = Batch::default();
        let mut messages = Vec::new();
        for item in items {
            if item.get("method").and_then(Value::as_str) == Some("initialize") {
                let id = item.get("id").cloned().unwrap_or(Value::Null);
                let message = "Invalid Request: initialize must not be part of a JSON-RPC batch";
                batch.responses.push(error(id, -32600, message));
                continue;
            }
            match decode(item) {
                Ok(message) => {
                    if let ClientJsonRpcMessage::Request(request) = &message {
                        let id = serde_json::to_value(&request.id).unwrap_or_default();
                        batch.waiting.insert(id_key(&id));
                    }
                    messages.push(message);
                }
                Err(answer) => batch.responses.push(answer),
            }
        }
        if batch.waiting.is_empty() {
            if !batch.responses.is_empty() {
                self.answer(Value::Array(batch.responses));
            }
        } else if let Ok(mut shared) = self.shared.lock() {
            shared.batches.push(batch);
        }
        messages
    }
}

/// A JSON-RPC message for rmcp, or the answer to one that is not: `-32602` for a request of a
/// method served whose params rmcp cannot read, `-32600` for anything else.
pub(crate) fn decode(value: Value) -> Result<ClientJsonRpcMessage, Value> {
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .unwrap_or(Value::Null);
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let params = value.get("params").cloned();
    serde_json::from_value(value).map_err(|e| match method {
        Some(method) if !id.is_null() => {
            let unparsed = crate::revision::unparsed_request(&CustomRequest::new(method, params));
            if unparsed.code == ErrorCode::INVALID_PARAMS {
                error(id, -32602, &unparsed.message)
            } else {
                error(id, -32600, &format!("Invalid Request: {e}"))
            }
        }
        _ => error(
            id,
            -32600,
            &format!("Invalid Request: not a JSON-RPC 2.0 message ({e})"),
        ),
    })
}

impl Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = self.route(item);
        std::future::ready(sent)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleServer>>> {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

impl StdioTransport {
    /// Writes `item`, or holds it for the batch that waits for its id.
    fn route(&self, item: ServerJsonRpcMessage) -> Result<(), io::Error> {
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed");
        let line = serde_json::to_string(&item).map_err(io::Error::other)?;
        let id = match &item {
            ServerJsonRpcMessage::Response(response) => {
                if let ServerResult::InitializeResult(init) = &response.result {
                    let revision = init.protocol_version.as_str().to_owned();
                    self.revision.send_replace(Some(revision));
                }
                Some(&response.id)
            }
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let key = id
            .and_then(|id| serde_json::to_value(id).ok())
            .map(|id| id_key(&id));
        let mut shared = self
            .shared
            .lock()
            .map_err(|_| io::Error::other("stdio state poisoned"))?;
        let waiting = key.and_then(|key| {
            let at = shared
                .batches
                .iter()
                .position(|b| b.waiting.contains(&key))?;
            Some((at, key))
        });
        let Some((at, key)) = waiting else {
            drop(shared);
            return self.out.send(line).map_err(|_| gone());
        };
        let batch = &mut shared.batches[at];
        batch.waiting.remove(&key);
        batch
            .responses
            .push(serde_json::from_str(&line).map_err(io::Error::other)?);
        if batch.waiting.is_empty() {
            let done = shared.batches.remove(at);
            drop(shared);
            return self
                .out
                .send(Value::Array(done.responses).to_string())
                .map_err(|_| gone());
        }
        Ok(())
    }
}
