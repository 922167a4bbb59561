//! Fault injection by the operating system: an `LD_PRELOAD` library, `faults/faultshim.c`,
//! that makes chosen writes of a real binary fail (a disk that fills, a device that fails, a
//! stdout that breaks halfway), so tests see what the binary does with the error and not what a
//! mock of it would do.
//!
//! The shim interposes `write`, `pwrite`, `pwrite64`, `writev`, `fsync`, `fdatasync`,
//! `ftruncate` and `ftruncate64` (and `close`, `dup2`, `dup3`, to keep its per-fd cache true).
//! A [`Fault`] says which fds it targets (a path substring, or a fd number), how many bytes
//! they may take before the fault, which errno they then fail with and which calls fail; see
//! the C file's header for the environment variables it sets. The write that crosses the budget
//! is cut short at it, as on a filling disk, and every later one fails. Nothing else is touched,
//! and the shim never writes to stdout or stderr.
//!
//! SQLite (bundled, statically linked into `outline`) reaches `pwrite64`, `write` and `fsync`
//! through the PLT like any other caller, so its writes are interposed too; so are Rust's
//! `std::io::Stdout` writes.
//!
//! [`library`] builds the shim with the C compiler (`$CC`, else `cc`) once per test process and
//! source text, under the target directory; on a machine without one, or not on Linux, it says
//! why, and the test reports the missing prerequisite (`prerequisite::missing`: a failure
//! under CI, a one-line skip elsewhere).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The shim's C source, built by [`library`].
pub const SOURCE: &str = include_str!("../faults/faultshim.c");

/// The error a fault fails its calls with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Errno {
    /// `ENOSPC`: the disk is full (`/dev/full` says so too).
    NoSpace,
    /// `EIO`: the device failed.
    Io,
    /// `EPIPE`: the reader of a pipe went away.
    BrokenPipe,
}

impl Errno {
    /// The errors of a device that fails, for tests that try each.
    pub const DEVICE: [Errno; 2] = [Errno::NoSpace, Errno::Io];

    /// The name the shim reads from `FAULTSHIM_ERRNO`.
    pub fn name(self) -> &'static str {
        match self {
            Errno::NoSpace => "ENOSPC",
            Errno::Io => "EIO",
            Errno::BrokenPipe => "EPIPE",
        }
    }

    /// The raw errno value on Linux.
    pub fn raw(self) -> i32 {
        match self {
            Errno::NoSpace => 28,
            Errno::Io => 5,
            Errno::BrokenPipe => 32,
        }
    }

    /// How the standard library shows this error (`No space left on device (os error 28)`):
    /// what a message that passes the cause on contains.
    pub fn shown(self) -> String {
        std::io::Error::from_raw_os_error(self.raw()).to_string()
    }
}

/// Which calls on a targeted fd fail once the byte budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calls {
    /// Writes (`write`, `pwrite`, `pwrite64`, `writev`) and syncs (`fsync`, `fdatasync`): a
    /// full disk.
    WritesAndSyncs,
    /// Only syncs: every write goes through (and counts), the first sync after the budget
    /// fails, as a device that loses what it was handed does.
    Syncs,
}

impl Calls {
    fn ops(self) -> &'static str {
        match self {
            Calls::WritesAndSyncs => "write,sync",
            Calls::Syncs => "sync",
        }
    }
}

/// One fault to inject into a process: which fds, after how many bytes, with which error.
#[derive(Debug, Clone)]
pub struct Fault {
    path: Option<String>,
    fd: Option<i32>,
    after: u64,
    errno: Errno,
    calls: Calls,
    report: Option<PathBuf>,
}

impl Fault {
    /// Targets every fd open on a path containing `substring` (ending in `$`: a path ending
    /// with it); fails at the first byte with `ENOSPC` unless told otherwise.
    pub fn on_path(substring: impl Into<String>) -> Fault {
        Fault::new(Some(substring.into()), None)
    }

    /// Targets fd `fd` (1: stdout), whatever it is open on.
    pub fn on_fd(fd: i32) -> Fault {
        Fault::new(None, Some(fd))
    }

    fn new(path: Option<String>, fd: Option<i32>) -> Fault {
        Fault {
            path,
            fd,
            after: 0,
            errno: Errno::NoSpace,
            calls: Calls::WritesAndSyncs,
            report: None,
        }
    }

    /// Lets the targeted fds take `bytes` in all before the fault.
    pub fn after(mut self, bytes: u64) -> Fault {
        self.after = bytes;
        self
    }

    /// Fails with `errno`.
    pub fn errno(mut self, errno: Errno) -> Fault {
        self.errno = errno;
        self
    }

    /// Fails these calls.
    pub fn calls(mut self, calls: Calls) -> Fault {
        self.calls = calls;
        self
    }

    /// Has the shim record each injected failure, and the bytes the targeted fds took, in
    /// `file` (read it back with [`Report::read`]).
    pub fn report_to(mut self, file: impl Into<PathBuf>) -> Fault {
        self.report = Some(file.into());
        self
    }

    /// Sets up `cmd` to run under this fault, with the shim at `library` preloaded.
    pub fn apply<'c>(&self, library: &Path, cmd: &'c mut Command) -> &'c mut Command {
        let mut preload = library.as_os_str().to_owned();
        if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload.push(":");
            preload.push(existing);
        }
        cmd.env("LD_PRELOAD", preload)
            .env("FAULTSHIM_AFTER", self.after.to_string())
            .env("FAULTSHIM_ERRNO", self.errno.name())
            .env("FAULTSHIM_OPS", self.calls.ops());
        match &self.path {
            Some(path) => cmd.env("FAULTSHIM_PATH", path),
            None => cmd.env_remove("FAULTSHIM_PATH"),
        };
        match self.fd {
            Some(fd) => cmd.env("FAULTSHIM_FD", fd.to_string()),
            None => cmd.env_remove("FAULTSHIM_FD"),
        };
        match &self.report {
            Some(file) => cmd.env("FAULTSHIM_REPORT", file),
            None => cmd.env_remove("FAULTSHIM_REPORT"),
        };
        cmd
    }
}

/// One failure the shim injected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// The call that failed: `pwrite64`, `write`, `fsync`, ...
    pub call: String,
    /// The fd it was called on.
    pub fd: i32,
    /// The errno it failed with.
    pub errno: i32,
    /// The path the fd was open on.
    pub path: String,
}

/// What the shim recorded in a run's report file ([`Fault::report_to`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Every failure injected, in order.
    pub injected: Vec<Injection>,
    /// The bytes the targeted fds took, when the process exited through `exit` (not when it
    /// was killed).
    pub written: Option<u64>,
}

impl Report {
    /// Reads `file` and removes it (so the next run starts a fresh one); a missing file is an
    /// empty report.
    ///
    /// # Panics
    /// When a line is not one the shim writes.
    pub fn read(file: &Path) -> Report {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let _ = std::fs::remove_file(file);
        let mut report = Report::default();
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("written ") {
                report.written = Some(n.parse().expect("written <bytes>"));
                continue;
            }
            let (call, rest) = line.split_once(" fd=").expect("<call> fd=");
            let (fd, rest) = rest.split_once(" errno=").expect("errno=");
            let (errno, path) = rest.split_once(" path=").expect("path=");
            report.injected.push(Injection {
                call: call.to_owned(),
                fd: fd.parse().expect("a fd"),
                errno: errno.parse().expect("an errno"),
                path: path.to_owned(),
            });
        }
        report
    }
}

/// The built shim, or why it cannot be built on this machine. Built once per test process
/// (and reused across processes while its source is unchanged).
pub fn library() -> Result<&'static Path, &'static str> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(build)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(String::as_str)
}

fn build() -> Result<PathBuf, String> {
    if !cfg!(target_os = "linux") {
        return Err("fault injection needs LD_PRELOAD and /proc/self/fd (Linux)".into());
    }
    let mut hasher = DefaultHasher::new();
    SOURCE.hash(&mut hasher);
    let name = format!("faultshim-{:016x}.so", hasher.finish());
    let dir = shim_dir();
    let lib = dir.join(&name);
    if lib.exists() {
        return Ok(lib);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Built under a name of this process's own, then renamed into place: a concurrent test
    // process sees either no library or a whole one.
    let pid = std::process::id();
    let source = dir.join(format!("faultshim-{pid}.c"));
    let partial = dir.join(format!("{name}.{pid}.partial"));
    std::fs::write(&source, SOURCE).map_err(|e| format!("writing {}: {e}", source.display()))?;
    let compiler = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let out = Command::new(&compiler)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&partial)
        .arg(&source)
        .arg("-ldl")
        .output();
    let _ = std::fs::remove_file(&source);
    let out = out.map_err(|e| {
        format!(
            "no C compiler to build the fault-injection shim ({}: {e})",
            compiler.to_string_lossy()
        )
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(format!(
            "the fault-injection shim does not compile with {}: {}",
            compiler.to_string_lossy(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    std::fs::rename(&partial, &lib).map_err(|e| format!("placing {}: {e}", lib.display()))?;
    Ok(lib)
}

/// `target/<profile>/faultshim/`, beside the test binaries' `deps/`; the temp directory when
/// the test binary lives elsewhere.
fn shim_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let deps = exe.parent()?;
            (deps.file_name()? == "deps").then(|| deps.parent().map(|p| p.join("faultshim")))?
        })
        .unwrap_or_else(|| std::env::temp_dir().join("aoi-test-faultshim"))
}
