//! The Streamable HTTP transport (`aoi mcp --listen ADDR`): rmcp's Streamable HTTP service
//! under a small hyper server, on loopback unless told otherwise, behind a gate that holds
//! what rmcp leaves to its caller.
//!
//! The gate, in front of every request:
//! - `Host` must name a loopback host (or the bound address) **and the bound port**, and an
//!   `Origin`, when sent, must be a localhost origin or one given with `--allow-origin`:
//!   otherwise `403 Forbidden` (MCP: servers MUST validate `Origin`, against DNS rebinding).
//! - A POST whose body is not JSON gets `400 Bad Request` with a JSON-RPC `-32700` parse error
//!   (rmcp answers 415, which means a wrong `Content-Type`).
//! - A POST of a JSON-RPC batch (an array) is split into its messages when the revision in use
//!   has batches (2025-03-26: no `MCP-Protocol-Version` header, or that one); the responses come
//!   back as one JSON array. Later revisions removed batches: `400` with `-32600`.
//! - A DELETE of a session that is unknown or already deleted gets `404 Not Found` (rmcp
//!   answers 202 whatever the session). A DELETE of a live one cancels the session's running
//!   calls at once, killing what they started ([`crate::session_calls`]); rmcp alone would
//!   let them run while it waits up to 5 s for their answers.
//!
//! Accepted sockets get `TCP_NODELAY`: a request and its response are small writes that
//! Nagle's algorithm would otherwise hold for the peer's delayed ACK (about 40 ms each).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{
    SessionId, SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::session_calls::SessionCalls;
use crate::McpServer;

/// The largest request body read (rmcp's own bound).
const MAX_BODY: usize = 4 << 20;
/// The header that names the session.
pub(crate) const SESSION_ID: &str = "mcp-session-id";
/// The header that names the revision in use (absent: 2025-03-26).
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The only revision with JSON-RPC batches.
const BATCH_REVISION: &str = "2025-03-26";

/// The methods the stateless 2026-07-28 revision removed (it discovers with `server/discover`
/// and has no session to initialize).
const REMOVED_IN_2026: &[&str] = &["initialize"];

/// The answer to a request for a method its revision removed: `-32601` (method not found),
/// sent with HTTP 404 as 2026-07-28 says of a method the server does not have; `None` for any
/// other message.
fn removed_method(revision: Option<&str>, message: &Value) -> Option<Value> {
    let method = message.get("method")?.as_str()?;
    if revision != Some("2026-07-28") || !REMOVED_IN_2026.contains(&method) {
        return None;
    }
    let id = message.get("id")?.clone();
    Some(jsonrpc_error(
        id,
        -32601,
        &format!(
            "Method not found: MCP 2026-07-28 has no `{method}` (discover with server/discover)"
        ),
    ))
}

/// Parses `--listen`: `HOST:PORT`, or a bare `PORT` on 127.0.0.1.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse::<SocketAddr>()
        .map_err(|_| format!("`{text}` is not PORT or HOST:PORT (e.g. 8765 or 127.0.0.1:8765)"))
}

/// An origin as a browser sends it: `(scheme, host, port)`, the port made explicit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// Parses `scheme://host[:port]` (`http` or `https`); `None` for anything else.
    pub fn parse(text: &str) -> Option<Origin> {
        let uri: Uri = text.trim().parse().ok()?;
        if uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
            return None;
        }
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let default = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let authority = uri.authority()?;
        Some(Origin {
            host: bare_host(authority.host()),
            port: authority.port_u16().unwrap_or(default),
            scheme,
        })
    }

    fn is_localhost(&self) -> bool {
        is_loopback_name(&self.host)
    }
}

impl std::str::FromStr for Origin {
    type Err = String;

    fn from_str(text: &str) -> Result<Origin, String> {
        Origin::parse(text).ok_or_else(|| {
            format!("`{text}` is not an origin: http(s)://HOST[:PORT], e.g. https://app.example")
        })
    }
}

/// A host without IPv6 brackets, lower-cased.
fn bare_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

fn is_loopback_name(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// What `--listen` lets in beyond the loopback defaults.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Origins allowed besides localhost ones (`--allow-origin`), e.g. `https://app.example`.
    pub allow_origins: Vec<Origin>,
}

/// Binds `addr`; returns the listener and the address actually bound (port 0 picks one).
pub async fn bind(addr: SocketAddr) -> io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

type Body = BoxBody<Bytes, Infallible>;

/// A response body whose frames are spliced ([`crate::structured::Spliced`]): a frame with
/// a placeholder is sent as the chunks of the held result, one at a time.
struct SplicedBody {
    inner: Body,
    pending: Option<crate::structured::Spliced>,
}

impl hyper::body::Body for SplicedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        use std::task::Poll;
        let this = self.get_mut();
        if let Some(pending) = &mut this.pending {
            if let Some(chunk) = pending.next_chunk() {
                return Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(chunk)))));
            }
            this.pending = None;
        }
        let frame = match std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(frame) => return Poll::Ready(Some(Ok(frame))),
        };
        let Some(mut spliced) = crate::structured::Spliced::of(&data) else {
            return Poll::Ready(Some(Ok(hyper::body::Frame::data(data))));
        };
        let chunk = spliced.next_chunk().unwrap_or_default();
        this.pending = Some(spliced);
        Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(chunk)))))
    }
}

/// rmcp's service and what the gate checks before it.
struct Gate {
    inner: StreamableHttpService<McpServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    /// The calls each session has running, ended with their session.
    calls: Arc<SessionCalls>,
    /// Host names a request may use (the port must be [`Gate::port`]).
    hosts: Vec<String>,
    port: u16,
    allow_origins: Vec<Origin>,
}

fn plain(status: StatusCode, message: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(message.to_owned())).boxed());
    *response.status_mut() = status;
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A JSON-RPC error object with `id` (`Value::Null` when the request's id is unknown).
fn jsonrpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn header<'a>(parts: &'a hyper::http::request::Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

impl Gate {
    /// `Err` with the refusal when `Host` or `Origin` is not one this server answers.
    fn check_host_and_origin(&self, parts: &hyper::http::request::Parts) -> Result<(), String> {
        let host = header(parts, HOST.as_str()).ok_or("no Host header")?;
        let authority: hyper::http::uri::Authority = host
            .parse()
            .map_err(|_| format!("Host `{host}` is not an authority"))?;
        let name = bare_host(authority.host());
        if !self.hosts.contains(&name) || authority.port_u16().unwrap_or(80) != self.port {
            return Err(format!(
                "Host `{host}` is not this server (it answers on port {} of {})",
                self.port,
                self.hosts.join(", ")
            ));
        }
        if let Some(origin) = parts.headers.get(ORIGIN) {
            let text = origin.to_str().unwrap_or_default();
            let allowed = Origin::parse(text)
                .is_some_and(|o| o.is_localhost() || self.allow_origins.contains(&o));
            if !allowed {
                return Err(format!(
                    "Origin `{text}` is not allowed (localhost origins are; others need --allow-origin)"
                ));
            }
        }
        Ok(())
    }

    /// Answers `request`; every body leaves through [`SplicedBody`], so a result held as the
    /// CLI's text ([`crate::structured`]) is written from it, in chunks.
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let mut response = self.answer(request).await;
        // The length changes with the splicing: the body says when it ends.
        response.headers_mut().remove(hyper::header::CONTENT_LENGTH);
        response.map(|inner| {
            SplicedBody {
                inner,
                pending: None,
            }
            .boxed()
        })
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        if let Err(reason) = self.check_host_and_origin(&parts) {
            let error = json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": format!("Forbidden: {reason}")}});
            return json_response(StatusCode::FORBIDDEN, &error);
        }
        match parts.method {
            Method::POST => self.post(parts, body).await,
            Method::DELETE => {
                if let Some(id) = header(&parts, SESSION_ID) {
                    let id: SessionId = id.to_owned().into();
                    if !self.sessions.has_session(&id).await.unwrap_or(false) {
                        return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
                    }
                    self.calls.end(&id);
                }
                self.inner.handle(Request::from_parts(parts, body)).await
            }
            _ => self.inner.handle(Request::from_parts(parts, body)).await,
        }
    }

    async fn post(&self, parts: hyper::http::request::Parts, body: Incoming) -> Response<Body> {
        let is_json = header(&parts, CONTENT_TYPE.as_str()).is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        });
        if !is_json {
            // rmcp's 415 is the right answer to a body that does not say it is JSON.
            return self.inner.handle(Request::from_parts(parts, body)).await;
        }
        let bytes = match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "Payload Too Large: the request body is over 4 MiB",
                )
            }
        };
        let message: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                let error = jsonrpc_error(Value::Null, -32700, &format!("Parse error: {e}"));
                return json_response(StatusCode::BAD_REQUEST, &error);
            }
        };
        let Value::Array(batch) = message else {
            if let Some(answer) = removed_method(header(&parts, PROTOCOL_VERSION), &message) {
                return json_response(StatusCode::NOT_FOUND, &answer);
            }
            if let Err(answer) = crate::stdio::decode(message) {
                // rmcp would answer 415 to JSON that is no JSON-RPC message it can read.
                return json_response(StatusCode::BAD_REQUEST, &answer);
            }
            return self
                .inner
                .handle(Request::from_parts(parts, Full::new(bytes)))
                .await;
        };
        let revision = header(&parts, PROTOCOL_VERSION).unwrap_or(BATCH_REVISION);
        if revision != BATCH_REVISION {
            let error = jsonrpc_error(
                Value::Null,
                -32600,
                &format!("Invalid Request: MCP {revision} has no JSON-RPC batches (only {BATCH_REVISION} does)"),
            );
            return json_response(StatusCode::BAD_REQUEST, &error);
        }
        self.batch(&parts, batch).await
    }

    /// Runs each message of a 2025-03-26 batch through rmcp, in order, and answers with the
    /// array of their responses (202 when there is none: only notifications and responses).
    async fn batch(
        &self,
        parts: &hyper::http::request::Parts,
        batch: Vec<Value>,
    ) -> Response<Body> {
        if batch.is_empty() {
            let error = jsonrpc_error(Value::Null, -32600, "Invalid Request: an empty batch");
            return json_response(StatusCode::BAD_REQUEST, &error);
        }
        let mut responses = Vec::new();
        for message in batch {
            let id = message.get("id").cloned().unwrap_or(Value::Null);
            if !message.is_object() {
                responses.push(jsonrpc_error(
                    Value::Null,
                    -32600,
                    "Invalid Request: not an object",
                ));
                continue;
            }
            if message.get("method").and_then(Value::as_str) == Some("initialize") {
                responses.push(jsonrpc_error(
                    id,
                    -32600,
                    "Invalid Request: initialize must not be part of a JSON-RPC batch",
                ));
                continue;
            }
            let mut request = Request::new(Full::new(Bytes::from(message.to_string())));
            *request.method_mut() = Method::POST;
            *request.uri_mut() = parts.uri.clone();
            *request.headers_mut() = parts.headers.clone();
            let response = self.inner.handle(request).await;
            match response.status() {
                StatusCode::ACCEPTED => continue,
                StatusCode::OK => {}
                // A refusal of the session or the headers holds for the whole batch.
                _ => return response,
            }
            let is_sse = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/event-stream"));
            let Ok(collected) = response.into_body().collect().await;
            let bytes = collected.to_bytes();
            let messages = if is_sse {
                sse_messages(&bytes)
            } else {
                serde_json::from_slice(&bytes).into_iter().collect()
            };
            responses.extend(
                messages
                    .into_iter()
                    .filter(|m| m.get("result").is_some() || m.get("error").is_some()),
            );
        }
        if responses.is_empty() {
            return plain(StatusCode::ACCEPTED, "");
        }
        json_response(StatusCode::OK, &Value::Array(responses))
    }
}

/// The JSON messages of an SSE body: each event's `data:` lines joined (priming events, with
/// empty data, skipped).
fn sse_messages(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    let mut messages = Vec::new();
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        } else if line.is_empty() && !data.is_empty() {
            if let Ok(value) = serde_json::from_str(&data) {
                messages.push(value);
            }
            data.clear();
        }
    }
    messages
}

/// Serves `server` over Streamable HTTP on `listener` until `cancel` fires. Every path
/// answers (hosts usually use `/mcp`).
pub async fn serve(
    server: McpServer,
    listener: TcpListener,
    options: HttpOptions,
    cancel: CancellationToken,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !local.ip().is_loopback() {
        hosts.push(local.ip().to_string());
    }
    // rmcp checks Host too (its own list, with the port); the gate has already checked both.
    let authorities: Vec<String> = hosts
        .iter()
        .map(|h| match h.contains(':') {
            true => format!("[{h}]:{}", local.port()),
            false => format!("{h}:{}", local.port()),
        })
        .collect();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel.clone())
        .with_allowed_hosts(authorities)
        .with_max_request_body_bytes(MAX_BODY);
    let sessions = Arc::new(LocalSessionManager::default());
    let calls = server.session_calls();
    let inner =
        StreamableHttpService::new(move || Ok(server.for_session()), sessions.clone(), config);
    let gate = Arc::new(Gate {
        inner,
        sessions,
        calls,
        hosts,
        port: local.port(),
        allow_origins: options.allow_origins,
    });
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            () = cancel.cancelled() => return Ok(()),
        };
        let _ = stream.set_nodelay(true);
        let gate = gate.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let gate = gate.clone();
                async move { Ok::<_, Infallible>(gate.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback() {
        assert_eq!(parse_addr("8765").unwrap().to_string(), "127.0.0.1:8765");
        assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(parse_addr("nowhere").is_err());
    }

    #[test]
    fn origins_compare_by_scheme_host_and_port() {
        let o = |s| Origin::parse(s).unwrap();
        assert_eq!(o("https://App.Example"), o("https://app.example:443"));
        assert_ne!(o("http://app.example"), o("https://app.example"));
        assert_ne!(o("https://app.example:8443"), o("https://app.example"));
        assert!(o("http://[::1]:3000").is_localhost());
        assert!(o("http://localhost").is_localhost());
        assert!(!o("http://localhost.evil.example").is_localhost());
        assert!(Origin::parse("null").is_none());
        assert!(Origin::parse("file:///etc").is_none());
        assert!(Origin::parse("https://app.example/path").is_none());
    }

    #[test]
    fn sse_bodies_yield_their_messages() {
        let body = b"data: \nid: 0\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\nid: 1/0\n\n";
        assert_eq!(
            sse_messages(body),
            vec![json!({"jsonrpc": "2.0", "id": 5, "result": {}})]
        );
    }
}
