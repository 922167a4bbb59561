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
//
// Output: one line per sample, `label<TAB>nanoseconds`. Warm-ups are not printed.
use std::io::{BufRead, BufReader, Read, Write};
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sep = args.iter().position(|a| a == "--").expect("-- SERVER... missing");
    let server: Vec<String> = args[sep + 1..].to_vec();
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
        other => panic!("unknown mode {}", other),
    }
}
