//! The practical limit for `aoi verify`, as a program: read stdin in 256 KiB chunks, split on
//! `\n` with memchr, and parse every line into `serde::de::IgnoredAny`. Used by
//! `bench/verify.sh`; exits 65 on the first line that is not JSON, like `aoi verify` on a
//! violation, and 0 otherwise. Prints nothing.
//!
//! `cargo build --release -p aoi --example bench_ignored_any`

use std::io::{self, Read};
use std::process::ExitCode;

const CHUNK: usize = 256 * 1024;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(aoi::exit_code::DATA_ERR),
        Err(_) => ExitCode::from(aoi::exit_code::IO_ERR),
    }
}

fn run() -> io::Result<bool> {
    let mut stdin = io::stdin().lock();
    let mut buf = vec![0u8; CHUNK];
    // buf[..end] holds unread bytes; a partial line is moved to the front before each read.
    let mut end = 0;
    loop {
        if end == buf.len() {
            // A line longer than the buffer: grow it.
            buf.resize(buf.len() * 2, 0);
        }
        let n = match stdin.read(&mut buf[end..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            // A last line without `\n` is not a complete line.
            return Ok(end == 0);
        }
        end += n;
        let mut start = 0;
        while let Some(pos) = memchr::memchr(b'\n', &buf[start..end]) {
            let line = &buf[start..start + pos];
            if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err() {
                return Ok(false);
            }
            start += pos + 1;
        }
        buf.copy_within(start..end, 0);
        end -= start;
    }
}
