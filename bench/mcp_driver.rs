// A small MCP client over stdio for bench/mcp.sh: std only, compiled with `rustc -O`.
// It writes JSON-RPC lines to a server's stdin and times each response line, so its own
// overhead is a write, a line read and a substring check (no JSON parsing in the timed path).
//
//   mcp_driver list N -- SERVER...              warm tools/list round trips on one server
//   mcp_driver call N DIRECT -- SERVER...       warm tools/call `search` through the server,
//                                               interleaved with spawning DIRECT (a command
//                                               line split on spaces) and reading all its output
//   mcp_driver cold N DIRECT -- SERVER...       spawn SERVER, initialize, notifications/initialized,
//                                               tools/list until its response; interleaved with
//                                               spawning DIRECT and reading all its output
//   mcp_driver transports N DIRECT -- STDIO... ++ HTTP...
//                                               the same warm tools/call `search` through a stdio
//                                               server and through a Streamable HTTP one (HTTP is
//                                               a `--listen 0` server that announces its URL on
//                                               stderr; one keep-alive connection), interleaved
//                                               with spawning DIRECT; then tools/list's bytes on
//                                               both
//
// Output: one line per sample, `label<TAB>nanoseconds`. Warm-ups are not printed.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcp_driver","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: Vec<u8>,
}

impl Server {
    fn spawn(argv: &[String]) -> Server {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", argv[0]));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
        Server { child, stdin, stdout, next_id: 2, line: Vec::with_capacity(1 << 20) }
    }

    fn send(&mut self, text: &str) {
        let mut buf = Vec::with_capacity(text.len() + 1);
        buf.extend_from_slice(text.as_bytes());
        buf.push(b'\n');
        self.stdin.write_all(&buf).expect("write to server");
        self.stdin.flush().unwrap();
    }

    /// Reads lines until the response to `id` (skipping notifications and server requests).
    fn wait_for(&mut self, id: u64) -> &[u8] {
        let a = format!("\"id\":{id},");
        let b = format!("\"id\":{id}}}");
        loop {
            self.line.clear();
            let n = self.stdout.read_until(b'\n', &mut self.line).expect("read from server");
            assert!(n > 0, "server closed stdout while waiting for id {}", id);
            let l = &self.line[..];
            if l.starts_with(b"{\"method\"") || find(l, b"\"method\":").is_some_and(|p| p < 40) {
                continue;
            }
            if find(l, a.as_bytes()).is_some() || find(l, b.as_bytes()).is_some() {
                return &self.line;
            }
        }
    }

    fn request(&mut self, method: &str, params: &str) -> &[u8] {
        let id = self.next_id;
        self.next_id += 1;
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        self.send(&text);
        self.wait_for(id)
    }

    fn handshake(&mut self) {
        self.send(INIT);
        let r = self.wait_for(1);
        assert!(find(r, b"\"result\"").is_some(), "initialize failed: {}", String::from_utf8_lossy(r));
        self.send(INITIALIZED);
    }

    fn close(mut self) {
        drop(self.stdin);
        let mut rest = Vec::new();
        let _ = self.stdout.read_to_end(&mut rest);
        let _ = self.child.wait();
    }
}

/// A Streamable HTTP server on one keep-alive connection: requests are POSTs with the session's
/// headers; a response is read by its `Content-Length` or its chunks, with no JSON parsing.
struct HttpServer {
    child: Child,
    conn: BufReader<TcpStream>,
    authority: String,
    path: String,
    session: Option<String>,
    next_id: u64,
    body: Vec<u8>,
}

impl HttpServer {
    fn spawn(argv: &[String]) -> HttpServer {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", argv[0]));
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).expect("read the server's announcement");
        let url = line.trim().rsplit(' ').next().unwrap_or_default().to_owned();
        let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("no URL announced: {line:?}"));
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let stream = TcpStream::connect(authority).expect("connect to the HTTP server");
        stream.set_nodelay(true).unwrap();
        HttpServer {
            child,
            conn: BufReader::with_capacity(1 << 20, stream),
            authority: authority.to_owned(),
            path: path.to_owned(),
            session: None,
            next_id: 2,
            body: Vec::with_capacity(1 << 20),
        }
    }

    /// POSTs `json`; reads the response into `self.body`; its status.
    fn post(&mut self, json: &str) -> u16 {
        let mut req = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.authority,
            json.len()
        );
        if let Some(id) = &self.session {
            req.push_str("MCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: ");
            req.push_str(id);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        req.push_str(json);
        self.conn.get_mut().write_all(req.as_bytes()).expect("send the request");
        let mut line = String::new();
        self.conn.read_line(&mut line).expect("read the status line");
        let status: u16 = line.split(' ').nth(1).and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let (mut length, mut chunked) = (None, false);
        loop {
            line.clear();
            self.conn.read_line(&mut line).expect("read a header");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            let (name, value) = (name.to_ascii_lowercase(), value.trim());
            match name.as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.contains("chunked"),
                "mcp-session-id" => self.session = Some(value.to_owned()),
                _ => {}
            }
        }
        self.body.clear();
        if chunked {
            loop {
                line.clear();
                self.conn.read_line(&mut line).expect("read a chunk size");
                let size = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
                let start = self.body.len();
                self.body.resize(start + size + 2, 0);
                self.conn.read_exact(&mut self.body[start..]).expect("read a chunk");
                self.body.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        } else if let Some(n) = length {
            self.body.resize(n, 0);
            self.conn.read_exact(&mut self.body).expect("read the body");
        }
        status
    }

    fn request(&mut self, method: &str, params: &str) -> &[u8] {
        let id = self.next_id;
        self.next_id += 1;
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        let status = self.post(&text);
        assert_eq!(status, 200, "{method}: {}", String::from_utf8_lossy(&self.body));
        &self.body
    }

    fn handshake(&mut self) {
        assert_eq!(self.post(INIT), 200, "initialize: {}", String::from_utf8_lossy(&self.body));
        assert!(self.session.is_some(), "no Mcp-Session-Id");
        assert_eq!(self.post(INITIALIZED), 202, "initialized: {}", String::from_utf8_lossy(&self.body));
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON-RPC message in an SSE body (its `data:` line), or the body itself.
fn sse_json(body: &[u8]) -> &[u8] {
    body.split(|&b| b == b'\n')
        .filter_map(|l| l.strip_prefix(b"data: "))
        .find(|d| d.starts_with(b"{"))
        .unwrap_or(body)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn check_list(r: &[u8]) {
    assert!(find(r, b"\"tools\"").is_some() && find(r, b"\"search\"").is_some(),
        "bad tools/list response: {}", String::from_utf8_lossy(&r[..r.len().min(400)]));
}

fn check_call(r: &[u8]) {
    assert!(find(r, b"\"isError\":true").is_none() && find(r, b"Rolling back").is_some(),
        "bad tools/call response: {}", String::from_utf8_lossy(&r[..r.len().min(600)]));
}

/// Spawns `argv`, reads all of its stdout and waits for it; returns the output.
fn run_direct(argv: &[String], out: &mut Vec<u8>) {
    out.clear();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn direct");
    child.stdout.take().unwrap().read_to_end(out).expect("read direct");
    let status = child.wait().unwrap();
    assert!(status.success(), "{argv:?} failed: {status}");
}

const CALL: &str = r#"{"name":"search","arguments":{"query":"rollback","limit":5}}"#;

fn mode_is_transports(args: &[String]) -> bool {
    args.first().is_some_and(|m| m == "transports")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sep = args.iter().position(|a| a == "--").expect("-- SERVER... missing");
    let mut server: Vec<String> = args[sep + 1..].to_vec();
    // `transports` takes a second server after `++` (`--` is the servers' own separator).
    let http_server: Vec<String> = match server.iter().position(|a| a == "++") {
        Some(at) if mode_is_transports(&args) => {
            let http = server[at + 1..].to_vec();
            server.truncate(at);
            http
        }
        _ => Vec::new(),
    };
    let mode = args[0].as_str();
    let n: usize = args[1].parse().expect("N");
    let direct: Vec<String> =
        args.get(2).filter(|_| sep > 2).map(|d| d.split(' ').map(String::from).collect()).unwrap_or_default();
    let warmup = (n / 10).max(3);
    let stdout = std::io::stdout();
    let mut o = std::io::BufWriter::new(stdout.lock());
    match mode {
        "list" => {
            let mut s = Server::spawn(&server);
            s.handshake();
            for _ in 0..warmup {
                check_list(s.request("tools/list", "{}"));
            }
            for _ in 0..n {
                let t = Instant::now();
                let r = s.request("tools/list", "{}");
                let ns = t.elapsed().as_nanos();
                check_list(r);
                writeln!(o, "list\t{ns}").unwrap();
            }
            let len = s.request("tools/list", "{}").len();
            writeln!(o, "list_bytes\t{len}").unwrap();
            s.close();
        }
        "call" => {
            let mut s = Server::spawn(&server);
            s.handshake();
            let mut out = Vec::with_capacity(1 << 16);
            for _ in 0..warmup {
                check_call(s.request("tools/call", CALL));
                run_direct(&direct, &mut out);
            }
            assert!(find(&out, b"aoi:summary").is_some() && find(&out, b"Rolling back").is_some());
            for i in 0..n {
                // Alternate which of the two goes first.
                for k in 0..2 {
                    if (i + k) % 2 == 0 {
                        let t = Instant::now();
                        let r = s.request("tools/call", CALL);
                        let ns = t.elapsed().as_nanos();
                        check_call(r);
                        writeln!(o, "call\t{ns}").unwrap();
                    } else {
                        let t = Instant::now();
                        run_direct(&direct, &mut out);
                        let ns = t.elapsed().as_nanos();
                        writeln!(o, "direct\t{ns}").unwrap();
                    }
                }
            }
            let len = s.request("tools/call", CALL).len();
            writeln!(o, "call_bytes\t{len}").unwrap();
            writeln!(o, "direct_bytes\t{}", out.len()).unwrap();
            s.close();
        }
        "cold" => {
            let mut out = Vec::with_capacity(1 << 16);
            for i in 0..n + warmup {
                for k in 0..2 {
                    if (i + k) % 2 == 0 {
                        let t = Instant::now();
                        let mut s = Server::spawn(&server);
                        s.handshake();
                        let ns = {
                            let r = s.request("tools/list", "{}");
                            let ns = t.elapsed().as_nanos();
                            check_list(r);
                            ns
                        };
                        s.close();
                        if i >= warmup {
                            writeln!(o, "cold\t{ns}").unwrap();
                        }
                    } else {
                        let t = Instant::now();
                        run_direct(&direct, &mut out);
                        let ns = t.elapsed().as_nanos();
                        if i >= warmup {
                            writeln!(o, "direct\t{ns}").unwrap();
                        }
                    }
                }
            }
        }
        "transports" => {
            let mut stdio = Server::spawn(&server);
            stdio.handshake();
            let mut http = HttpServer::spawn(&http_server);
            http.handshake();
            let mut out = Vec::with_capacity(1 << 16);
            for _ in 0..warmup {
                check_call(stdio.request("tools/call", CALL));
                check_call(http.request("tools/call", CALL));
                run_direct(&direct, &mut out);
            }
            for i in 0..n {
                // Rotate which of the three goes first.
                for k in 0..3 {
                    let t = Instant::now();
                    let (label, ns) = match (i + k) % 3 {
                        0 => {
                            let r = stdio.request("tools/call", CALL);
                            let ns = t.elapsed().as_nanos();
                            check_call(r);
                            ("stdio", ns)
                        }
                        1 => {
                            let r = http.request("tools/call", CALL);
                            let ns = t.elapsed().as_nanos();
                            check_call(r);
                            ("http", ns)
                        }
                        _ => {
                            run_direct(&direct, &mut out);
                            ("direct", t.elapsed().as_nanos())
                        }
                    };
                    writeln!(o, "{label}\t{ns}").unwrap();
                }
            }
            let len = stdio.request("tools/list", "{}").len();
            writeln!(o, "list_bytes_stdio\t{len}").unwrap();
            let body = http.request("tools/list", "{}");
            check_list(body);
            writeln!(o, "list_bytes_http_body\t{}", body.len()).unwrap();
            writeln!(o, "list_bytes_http_json\t{}", sse_json(body).len()).unwrap();
            stdio.close();
        }
        other => panic!("unknown mode {}", other),
    }
}
