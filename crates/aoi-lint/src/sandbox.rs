//! A disposable place to run the tool under test, many times, without it touching the real user.
//!
//! Lint exercises a tool it knows nothing about, so every run is contained: a fresh temporary root
//! per [`Sandbox`] holding the HOME, XDG and TMPDIR directories and the working directory; an
//! environment built from empty (no credentials or tokens leak in); the child in its own process
//! group so a timeout or a signal reaches everything it spawned; output captured with a bound so
//! a tool printing gigabytes neither blocks nor exhausts memory; and, where the kernel allows,
//! the network made unreachable through a user + network namespace ([`network_isolation`]).
//!
//! [`Sandbox::run`] runs to completion; [`Sandbox::spawn`] gives a [`Running`] child for probes
//! that interact with it (read a line, send a signal, close the pipe).
//!
//! Lint waits without sleeping: it blocks in `poll(2)` on the child's stdout and on a pidfd of
//! the child (readable when it exits), with the time left as the timeout, so output is drained
//! and an exit noticed as soon as they happen. After each run, descendants that left the process
//! group are found and killed ([`crate::reaper`]) and listed in [`Run::escaped`].

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::process::{kill_process_group, pidfd_open, Pid, PidfdFlags};

use aoi_contain::Selector;

use crate::reaper::{self, Escapee, Reaper};
use crate::snapshot::{self, Snapshot};

/// How long to keep draining pipes after the child is gone, for a descendant that escaped the
/// process group and still holds them open.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// How long the one-time `unshare` probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Size of one read from a child's pipe.
const CHUNK: usize = 64 * 1024;

/// Settings shared by the sandboxes of one lint run.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The longest one process may run before its whole process group is killed; default 10 s.
    pub timeout: Duration,
    /// Bytes kept per stream (stdout, stderr); default 8 MiB. Output beyond it is still read,
    /// so the child never blocks, but dropped, and the [`Run`] says it was truncated.
    pub max_output: usize,
    /// A directory whose contents are copied (recursively) into each sandbox's work dir.
    pub fixtures: Option<PathBuf>,
    /// Incremented for every process spawned through any sandbox sharing this counter.
    pub processes: Arc<AtomicU64>,
    /// Incremented for every process lint found still running outside a run's process group
    /// after the run ended, and killed ([`Run::escaped`]).
    pub escaped: Arc<AtomicU64>,
    /// The lint these sandboxes belong to: what its cancellation ends.
    pub reaper: Arc<Reaper>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            timeout: Duration::from_secs(10),
            max_output: 8 * 1024 * 1024,
            fixtures: None,
            processes: Arc::new(AtomicU64::new(0)),
            escaped: Arc::new(AtomicU64::new(0)),
            reaper: Arc::new(Reaper::new()),
        }
    }
}

/// A fresh temporary root with `home/`, `config/`, `data/`, `cache/`, `state/`, `tmp/` and
/// `work/`, removed (with everything in it) on drop.
#[derive(Debug)]
pub struct Sandbox {
    /// Names the sandbox in lint's registry and in its runs' markers.
    id: u64,
    root: PathBuf,
    work: PathBuf,
    timeout: Duration,
    max_output: usize,
    processes: Arc<AtomicU64>,
    escaped: Arc<AtomicU64>,
    reaper: Arc<Reaper>,
    /// Runs started here and not yet swept; a [`Running`] may outlive its sandbox.
    unswept: Arc<AtomicUsize>,
}

/// One process to run: program, arguments, extra environment, stdin and limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The program, looked up on lint's own `PATH` when it has no `/`.
    pub program: OsString,
    /// The arguments after the program.
    pub args: Vec<OsString>,
    /// Variables set after the sandbox's own (so they may override them).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to the child's stdin, which is then closed; `None`: stdin is closed at once.
    pub stdin: Option<Vec<u8>>,
    /// Run with the network unreachable, when [`network_isolation`] allows it.
    pub isolate_network: bool,
    /// Overrides [`SandboxConfig::timeout`] for [`Sandbox::run`].
    pub timeout: Option<Duration>,
}

impl Invocation {
    /// An invocation of `program` with `args`, no extra environment and stdin closed.
    pub fn new<P, I, A>(program: P, args: I) -> Self
    where
        P: Into<OsString>,
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        Invocation {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            stdin: None,
            isolate_network: false,
            timeout: None,
        }
    }

    /// Sets one environment variable for the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Feeds `bytes` to the child's stdin, then closes it.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Asks for the network to be unreachable (see [`network_isolation`]).
    pub fn isolated_network(mut self) -> Self {
        self.isolate_network = true;
        self
    }

    /// Sets this invocation's own timeout.
    #[cfg(test)]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The command line, lossily decoded, for evidence.
    fn argv(&self) -> Vec<String> {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal number.
    Signal(i32),
}

impl Exit {
    /// The exit code, if it exited rather than being killed.
    pub fn code(&self) -> Option<i32> {
        match self {
            Exit::Code(code) => Some(*code),
            Exit::Signal(_) => None,
        }
    }

    /// The status a POSIX shell would report in `$?`: the code, or 128 + the signal number.
    pub fn shell_status(&self) -> i32 {
        match self {
            Exit::Code(code) => *code,
            Exit::Signal(signal) => 128 + signal,
        }
    }

    fn from_status(status: ExitStatus) -> Exit {
        match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            // Neither happens for a reaped child on Unix; report it as a failure.
            (None, None) => Exit::Code(-1),
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit code {code}"),
            Exit::Signal(signal) => write!(f, "killed by signal {signal}"),
        }
    }
}

/// What one finished process did: its output, how it ended, and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The command line as invoked (without any isolation wrapper), lossily decoded, for evidence.
    pub argv: Vec<String>,
    /// Everything read from stdout, up to [`SandboxConfig::max_output`] bytes (including lines
    /// already returned by [`Running::read_line`]).
    pub stdout: Vec<u8>,
    /// Everything read from stderr, up to [`SandboxConfig::max_output`] bytes.
    pub stderr: Vec<u8>,
    /// How the process ended.
    pub exit: Exit,
    /// Whether lint killed it at the timeout.
    pub timed_out: bool,
    /// Whether stdout went past the bound and the rest was dropped.
    pub stdout_truncated: bool,
    /// Whether stderr went past the bound and the rest was dropped.
    pub stderr_truncated: bool,
    /// Time from spawn to exit.
    pub elapsed: Duration,
    /// Whether it ran with the network unreachable.
    pub network_isolated: bool,
    /// Processes of the run still alive outside its process group once it ended (a `setsid`,
    /// a double fork into a new session), which lint then killed. A conforming tool leaves
    /// none: nothing of a command should outlive it.
    pub escaped: Vec<Escapee>,
}

/// A signal lint can send to a running child's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGINT`, as from Ctrl-C.
    Interrupt,
    /// `SIGTERM`.
    Terminate,
}

impl Signal {
    fn to_rustix(self) -> rustix::process::Signal {
        match self {
            Signal::Interrupt => rustix::process::Signal::INT,
            Signal::Terminate => rustix::process::Signal::TERM,
        }
    }
}

/// Whether the network can be made unreachable here, probed once per process.
///
/// Isolation runs the program as `unshare --user --map-root-user --net -- PROGRAM ARGS`
/// (util-linux): a new network namespace with only a loopback interface, which is down. The
/// probe runs `unshare --user --map-root-user --net -- true`; `Err` carries the reason it
/// could not (no `unshare`, unprivileged user namespaces disabled, a seccomp filter, …).
pub fn network_isolation() -> Result<(), String> {
    unshare_program().map(|_| ())
}

fn unshare_program() -> Result<&'static Path, String> {
    static PROBE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PROBE
        .get_or_init(probe_unshare)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

fn probe_unshare() -> Result<PathBuf, String> {
    let unshare = aoi::read::locate_program(OsStr::new("unshare"))
        .ok_or_else(|| "util-linux `unshare` is not on PATH".to_string())?;
    let mut child = Command::new(&unshare)
        .args(["--user", "--map-root-user", "--net", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", unshare.display()))?;
    let pgid = Pid::from_child(&child);
    // Owned like a sandbox's child, so that lint's reaping of orphans leaves it alone.
    reaper::own(pgid);
    let pidfd = pidfd_open(pgid, PidfdFlags::empty()).ok();
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                wait_readable(&[], Some(pidfd.as_ref()), deadline);
            }
            Ok(None) => {
                let _ = kill_process_group(pgid, rustix::process::Signal::KILL);
                let _ = child.wait();
                reaper::disown(pgid);
                return Err(format!(
                    "`unshare --user --map-root-user --net -- true` did not finish within {}s",
                    PROBE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => {
                reaper::disown(pgid);
                return Err(format!("waiting for unshare: {e}"));
            }
        }
    };
    reaper::disown(pgid);
    if status.success() {
        return Ok(unshare);
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    Err(format!(
        "`unshare --user --map-root-user --net -- true` failed ({}): {}",
        Exit::from_status(status),
        stderr.trim()
    ))
}

impl Sandbox {
    /// Creates a fresh root under the system temp dir, its directories, and copies the fixtures
    /// into `work/`.
    pub fn new(config: &SandboxConfig) -> io::Result<Sandbox> {
        let sandbox = Sandbox::empty(config)?;
        for dir in ["home", "config", "data", "cache", "state", "tmp", "work"] {
            fs::create_dir(sandbox.root.join(dir))?;
        }
        if let Some(fixtures) = &config.fixtures {
            copy_tree(fixtures, &sandbox.work).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("copying fixtures from {}: {e}", fixtures.display()),
                )
            })?;
        }
        Ok(sandbox)
    }

    /// A fresh sandbox holding a copy of everything in `template`'s root: setup made once,
    /// then copied for every probe, instead of run again for each.
    pub fn from_template(config: &SandboxConfig, template: &Sandbox) -> io::Result<Sandbox> {
        let sandbox = Sandbox::empty(config)?;
        copy_tree(&template.root, &sandbox.root).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "copying the set-up sandbox {}: {e}",
                    template.root.display()
                ),
            )
        })?;
        Ok(sandbox)
    }

    /// A new empty root, recorded so that [`Reaper::cancel_all`] can remove it; refused once
    /// lint is cancelled.
    fn empty(config: &SandboxConfig) -> io::Result<Sandbox> {
        if config.reaper.cancelled() {
            return Err(reaper::cancelled_error());
        }
        let root = create_unique_root()?;
        let id = reaper::next_id();
        if let Err(e) = config.reaper.register_root(id, &root) {
            reaper::remove_tree(&root);
            return Err(e);
        }
        // From here on the Sandbox owns the root, so a failure in the caller still removes it.
        Ok(Sandbox {
            id,
            work: root.join("work"),
            root,
            timeout: config.timeout,
            max_output: config.max_output,
            processes: Arc::clone(&config.processes),
            escaped: Arc::clone(&config.escaped),
            reaper: Arc::clone(&config.reaper),
            unswept: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The sandbox's root directory.
    #[cfg(test)]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The child's working directory, `<root>/work`.
    pub fn work_dir(&self) -> &Path {
        &self.work
    }

    /// Runs `inv` to completion, or kills its whole process group (SIGKILL) at its timeout.
    pub fn run(&self, inv: &Invocation) -> io::Result<Run> {
        let timeout = inv.timeout.unwrap_or(self.timeout);
        let running = self.spawn(inv)?;
        let remaining = timeout.saturating_sub(running.started.elapsed());
        running.wait(remaining)
    }

    /// Starts `inv` and returns at once, for probes that interact with a live child.
    ///
    /// Stdout is not read until [`Running::read_line`] or [`Running::wait`] asks for it, so a
    /// child writing more than a pipe holds blocks meanwhile, as under a slow reader; stderr is
    /// drained continuously.
    pub fn spawn(&self, inv: &Invocation) -> io::Result<Running> {
        let isolation = if inv.isolate_network {
            unshare_program().ok()
        } else {
            None
        };
        let mut command = match isolation {
            Some(unshare) => {
                // Resolve the program here so a missing one is the same NotFound error as
                // without isolation, not an exit status from unshare.
                let program = resolve_program(&inv.program)?;
                let mut command = Command::new(unshare);
                command
                    .args(["--user", "--map-root-user", "--net", "--"])
                    .arg(program);
                command
            }
            None => Command::new(&inv.program),
        };
        command
            .args(&inv.args)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("TMPDIR", self.root.join("tmp"))
            .env("LANG", "C.UTF-8")
            .envs(inv.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.work)
            .process_group(0)
            .stdin(if inv.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());

        let run_id = reaper::next_id();
        let marker = format!("{}{run_id}", self.reaper.sandbox_prefix(self.id));
        command.env(reaper::MARKER, &marker);
        let gate = reaper::SPAWN_GATE
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut child = command.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("spawning {}: {e}", inv.program.to_string_lossy()),
            )
        })?;
        let started = Instant::now();
        self.processes.fetch_add(1, Ordering::Relaxed);
        let pgid = Pid::from_child(&child);
        let registered = self.reaper.register_child(run_id, pgid);
        drop(gate);
        // Until `Running` exists, a failure must not leave the child behind.
        let kill_on_error = |child: &mut Child, e: io::Error| {
            let _ = kill_process_group(pgid, rustix::process::Signal::KILL);
            let _ = child.wait();
            self.reaper.unregister_child(run_id, pgid);
            e
        };
        if let Err(e) = registered {
            return Err(kill_on_error(&mut child, e));
        }

        if let (Some(bytes), Some(mut pipe)) = (inv.stdin.clone(), child.stdin.take()) {
            let fed = thread::Builder::new()
                .name("aoi-lint-stdin".into())
                .spawn(move || {
                    // EPIPE means the child stopped reading: not lint's error.
                    let _ = pipe.write_all(&bytes);
                });
            if let Err(e) = fed {
                return Err(kill_on_error(&mut child, e));
            }
        }
        let stdout = child.stdout.take();
        if let Some(pipe) = &stdout {
            // Read without blocking, after poll(2) said there is something, so a read can time
            // out and the pipe can be closed at will.
            if let Err(e) = rustix::io::ioctl_fionbio(pipe, true) {
                return Err(kill_on_error(&mut child, e.into()));
            }
        }
        let stderr = match child.stderr.take() {
            Some(pipe) => match StderrReader::start(pipe, self.max_output) {
                Ok(reader) => Some(reader),
                Err(e) => return Err(kill_on_error(&mut child, e)),
            },
            None => None,
        };
        // Not yet reaped, so the pid is still this child's. Without pidfds (Linux < 5.3) exits
        // are noticed at the next poll of stdout, at most `NO_PIDFD_TICK` later.
        let pidfd = pidfd_open(pgid, PidfdFlags::empty()).ok();
        // Readable until the child is reaped, which only this `Running` does.
        let born = aoi_contain::proc::start_time(child.id());
        self.unswept.fetch_add(1, Ordering::SeqCst);
        Ok(Running {
            child,
            pgid,
            pidfd,
            run_id,
            born,
            marker,
            root: self.root.clone(),
            unswept: Arc::clone(&self.unswept),
            escaped_total: Arc::clone(&self.escaped),
            escaped: Vec::new(),
            reaper: Arc::clone(&self.reaper),
            swept: false,
            started,
            argv: inv.argv(),
            network_isolated: isolation.is_some(),
            stdout,
            stdout_capture: Capture::new(self.max_output),
            pending: Vec::new(),
            stderr,
            exited: None,
        })
    }

    /// A snapshot of the whole root: whatever the tool wrote in its HOME, XDG dirs, TMPDIR or
    /// work dir shows up as a change between two of these.
    pub fn snapshot(&self) -> io::Result<Snapshot> {
        snapshot::take(&self.root)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if self.unswept.load(Ordering::SeqCst) > 0 {
            // A `Running` outlives this sandbox: its processes must not outlive the directory.
            let roots = [self.root.clone()];
            let prefix = self.reaper.sandbox_prefix(self.id);
            reaper::sweep(Selector {
                roots: &roots,
                born_since: aoi_contain::proc::start_time(std::process::id()),
                ..reaper::marked(&prefix, true)
            });
        }
        reaper::remove_tree(&self.root);
        self.reaper.unregister_root(self.id);
    }
}

fn create_unique_root() -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let root = base.join(format!("aoi-lint-{}-{nanos:x}-{n}", std::process::id()));
        match fs::DirBuilder::new().mode(0o700).create(&root) {
            Ok(()) => return Ok(root),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("creating sandbox root {}: {e}", root.display()),
                ))
            }
        }
    }
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    for dirent in fs::read_dir(from)? {
        let dirent = dirent?;
        let source = dirent.path();
        let target = to.join(dirent.file_name());
        let kind = fs::symlink_metadata(&source)?.file_type();
        if kind.is_dir() {
            fs::create_dir(&target)?;
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&source)?, &target)?;
        } else if kind.is_file() {
            fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

fn resolve_program(program: &OsStr) -> io::Result<PathBuf> {
    aoi::read::locate_program(program).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} is not an executable file or a program on PATH",
                program.to_string_lossy()
            ),
        )
    })
}

/// Bytes kept from one stream, up to a bound; the rest is counted as truncation.
#[derive(Debug)]
struct Capture {
    bytes: Vec<u8>,
    max: usize,
    truncated: bool,
}

impl Capture {
    fn new(max: usize) -> Self {
        Capture {
            bytes: Vec::new(),
            max,
            truncated: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let room = self.max.saturating_sub(self.bytes.len());
        if chunk.len() > room {
            self.truncated = true;
        }
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}

/// Drains stderr on its own thread so the child never blocks on it.
#[derive(Debug)]
struct StderrReader {
    capture: Arc<Mutex<Capture>>,
    done: Receiver<()>,
}

impl StderrReader {
    fn start(mut pipe: ChildStderr, max: usize) -> io::Result<Self> {
        let capture = Arc::new(Mutex::new(Capture::new(max)));
        let (tx, done) = mpsc::channel();
        let shared = Arc::clone(&capture);
        thread::Builder::new()
            .name("aoi-lint-stderr".into())
            .spawn(move || {
                let mut buf = vec![0u8; CHUNK];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => lock(&shared).push(&buf[..n]),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                let _ = tx.send(());
            })?;
        Ok(StderrReader { capture, done })
    }

    /// What was read, once the pipe reached EOF or after `grace` (when a descendant that escaped
    /// the group keeps it open; the thread then carries on alone and its later bytes are lost).
    fn finish(self, grace: Duration) -> (Vec<u8>, bool) {
        match self.done.recv_timeout(grace) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) | Err(RecvTimeoutError::Timeout) => {}
        }
        let mut capture = lock(&self.capture);
        (std::mem::take(&mut capture.bytes), capture.truncated)
    }
}

fn lock(capture: &Mutex<Capture>) -> std::sync::MutexGuard<'_, Capture> {
    capture
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How often an exit is checked for when the kernel gives no pidfd to wait on.
const NO_PIDFD_TICK: Duration = Duration::from_millis(5);

/// Blocks until one of `fds` is readable (or hung up) or `deadline` passes; when `exit` is the
/// child's pidfd, also until the child exits. Without a pidfd (`exit` `Some(None)`), waits at
/// most [`NO_PIDFD_TICK`] so that the caller can check for the exit itself.
fn wait_readable(fds: &[BorrowedFd<'_>], exit: Option<Option<&OwnedFd>>, deadline: Instant) {
    let mut remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return;
    }
    if matches!(exit, Some(None)) {
        remaining = remaining.min(NO_PIDFD_TICK);
    }
    let mut polled: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::from_borrowed_fd(*fd, PollFlags::IN))
        .chain(exit.flatten().map(|fd| PollFd::new(fd, PollFlags::IN)))
        .collect();
    // EINTR and other errors: the caller loops, reading again and checking its deadline.
    let _ = poll(&mut polled, Some(&aoi_contain::timespec(remaining)));
}

/// What one non-blocking read from stdout gave.
enum Poll {
    Data,
    Empty,
    Eof,
}

/// A live child started by [`Sandbox::spawn`]; its process group, and whatever of it escaped
/// the group, is killed if dropped unfinished.
#[derive(Debug)]
pub struct Running {
    child: Child,
    pgid: Pid,
    /// Readable once the child exits; `None` on kernels without pidfds.
    pidfd: Option<OwnedFd>,
    /// Names the run in lint's registry of live process groups.
    run_id: u64,
    /// When the child started (clock ticks after boot): no process of the run is older.
    born: Option<u64>,
    /// The value of [`reaper::MARKER`] in the environment of every process of this run.
    marker: String,
    /// The sandbox root: a process without a marker but with its cwd in here is this run's.
    root: PathBuf,
    unswept: Arc<AtomicUsize>,
    escaped_total: Arc<AtomicU64>,
    escaped: Vec<Escapee>,
    /// The lint the run belongs to.
    reaper: Arc<Reaper>,
    swept: bool,
    started: Instant,
    argv: Vec<String>,
    network_isolated: bool,
    /// `None` once closed by [`Running::close_stdout`] or after EOF was seen.
    stdout: Option<ChildStdout>,
    stdout_capture: Capture,
    /// Stdout bytes read but not yet returned by `read_line`.
    pending: Vec<u8>,
    stderr: Option<StderrReader>,
    /// Set once the child is reaped: how it ended and when.
    exited: Option<(ExitStatus, Instant)>,
}

impl Running {
    /// The next complete stdout line (with its `\n`), or the unterminated rest at EOF, or `None`
    /// at EOF (and after [`close_stdout`](Self::close_stdout)).
    ///
    /// Fails with [`io::ErrorKind::TimedOut`] when no line arrives within `timeout`, and with
    /// [`io::ErrorKind::InvalidData`] when a line grows past [`SandboxConfig::max_output`].
    pub fn read_line(&mut self, timeout: Duration) -> io::Result<Option<Vec<u8>>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                return Ok(Some(self.pending.drain(..=end).collect()));
            }
            if self.pending.len() > self.stdout_capture.max {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("stdout line longer than {} bytes", self.stdout_capture.max),
                ));
            }
            match self.poll_stdout(true)? {
                Poll::Data => {}
                Poll::Eof if self.pending.is_empty() => return Ok(None),
                Poll::Eof => return Ok(Some(std::mem::take(&mut self.pending))),
                Poll::Empty if Instant::now() >= deadline => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no stdout line within {} ms", timeout.as_millis()),
                    ))
                }
                // A line is what is waited for, not the exit: EOF comes when the writers go.
                Poll::Empty => wait_readable(&self.stdout_fd(), None, deadline),
            }
        }
    }

    /// Sends `signal` to the child's whole process group.
    pub fn signal(&self, signal: Signal) -> io::Result<()> {
        kill_process_group(self.pgid, signal.to_rustix())?;
        Ok(())
    }

    /// Closes lint's read end of stdout: the child's next writes fail with `EPIPE` (or kill it
    /// with `SIGPIPE`), as when piped into `head`.
    pub fn close_stdout(&mut self) {
        self.stdout = None;
        self.pending.clear();
    }

    /// Waits for the child, collecting the rest of stdout (unless closed) and stderr; at
    /// `timeout` kills the whole process group (SIGKILL). The child is always reaped, any of
    /// its group left behind is killed, and so is any process of the run outside the group
    /// ([`Run::escaped`]).
    pub fn wait(mut self, timeout: Duration) -> io::Result<Run> {
        let deadline = Instant::now() + timeout;
        let mut timed_out = false;
        let (status, ended) = loop {
            // Drain what is there first: a child blocked on a full pipe never exits.
            while matches!(self.poll_stdout(false)?, Poll::Data) {}
            if let Some(exited) = self.try_reap()? {
                break exited;
            }
            if Instant::now() >= deadline {
                let _ = kill_process_group(self.pgid, rustix::process::Signal::KILL);
                timed_out = true;
                break self.reap()?;
            }
            let stdout = self.stdout_fd();
            wait_readable(&stdout, Some(self.pidfd.as_ref()), deadline);
        };
        // Background children the tool left running would hold the pipes open, and so would a
        // descendant that left the group.
        let _ = kill_process_group(self.pgid, rustix::process::Signal::KILL);
        self.sweep();
        let grace_end = Instant::now() + DRAIN_GRACE;
        while self.stdout.is_some() && Instant::now() < grace_end {
            match self.poll_stdout(false)? {
                Poll::Data => {}
                Poll::Empty => wait_readable(&self.stdout_fd(), None, grace_end),
                Poll::Eof => break,
            }
        }
        self.stdout = None;
        let (stderr, stderr_truncated) = match self.stderr.take() {
            Some(reader) => reader.finish(grace_end.saturating_duration_since(Instant::now())),
            None => (Vec::new(), false),
        };
        Ok(Run {
            argv: std::mem::take(&mut self.argv),
            stdout: std::mem::take(&mut self.stdout_capture.bytes),
            stderr,
            exit: Exit::from_status(status),
            timed_out,
            stdout_truncated: self.stdout_capture.truncated,
            stderr_truncated,
            elapsed: ended.saturating_duration_since(self.started),
            network_isolated: self.network_isolated,
            escaped: std::mem::take(&mut self.escaped),
        })
    }

    fn stdout_fd(&self) -> Vec<BorrowedFd<'_>> {
        self.stdout.iter().map(AsFd::as_fd).collect()
    }

    /// Kills every process of this run that is still alive (it carries the run's marker, or
    /// no marker and a working directory in the sandbox), reaps what is lint's to reap, and
    /// records those outside the process group as escaped. Once per run, after the child
    /// was reaped.
    fn sweep(&mut self) {
        if std::mem::replace(&mut self.swept, true) {
            return;
        }
        let roots = [self.root.clone()];
        let killed = reaper::sweep(Selector {
            roots: &roots,
            born_since: self.born,
            ..reaper::marked(&self.marker, false)
        });
        let pgid = self.pgid.as_raw_nonzero().get();
        self.escaped = killed
            .into_iter()
            .filter(|(_, group)| *group != pgid)
            .map(|(escapee, _)| escapee)
            .collect();
        self.escaped_total
            .fetch_add(self.escaped.len() as u64, Ordering::Relaxed);
        self.reaper.report_witnessed(&self.argv, &self.escaped);
        self.unswept.fetch_sub(1, Ordering::SeqCst);
    }

    /// Non-blocking reads from stdout into the capture (and, for `read_line`, the pending line
    /// buffer): one chunk.
    fn poll_stdout(&mut self, for_lines: bool) -> io::Result<Poll> {
        let Some(pipe) = self.stdout.as_mut() else {
            return Ok(Poll::Eof);
        };
        let mut buf = [0u8; CHUNK];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => {
                    self.stdout = None;
                    return Ok(Poll::Eof);
                }
                Ok(n) => {
                    self.stdout_capture.push(&buf[..n]);
                    if for_lines {
                        self.pending.extend_from_slice(&buf[..n]);
                    }
                    return Ok(Poll::Data);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Poll::Empty),
                Err(e) => return Err(e),
            }
        }
    }

    fn try_reap(&mut self) -> io::Result<Option<(ExitStatus, Instant)>> {
        if self.exited.is_none() {
            if let Some(status) = self.child.try_wait()? {
                self.exited = Some((status, Instant::now()));
                self.reaper.unregister_child(self.run_id, self.pgid);
            }
        }
        Ok(self.exited)
    }

    fn reap(&mut self) -> io::Result<(ExitStatus, Instant)> {
        match self.exited {
            Some(exited) => Ok(exited),
            None => {
                let status = self.child.wait()?;
                let exited = (status, Instant::now());
                self.exited = Some(exited);
                self.reaper.unregister_child(self.run_id, self.pgid);
                Ok(exited)
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = kill_process_group(self.pgid, rustix::process::Signal::KILL);
            let _ = self.child.wait();
            self.reaper.unregister_child(self.run_id, self.pgid);
        }
        self.sweep();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hang guard only: nothing here asserts on speed.
    const GUARD: Duration = Duration::from_secs(20);

    fn sandbox() -> io::Result<Sandbox> {
        Sandbox::new(&SandboxConfig::default())
    }

    fn sh(script: &str) -> Invocation {
        Invocation::new("/bin/sh", ["-c", script])
    }

    fn env_of(run: &Run) -> Vec<(String, String)> {
        String::from_utf8_lossy(&run.stdout)
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Gone, or a zombie left for an init that does not reap (as in some containers).
    fn process_is_dead(pid: &str) -> bool {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "Z" || state == "X"),
        }
    }

    #[test]
    fn environment_is_built_from_empty() -> io::Result<()> {
        let allowed = [
            "PATH",
            "HOME",
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "XDG_CACHE_HOME",
            "XDG_STATE_HOME",
            "TMPDIR",
            "LANG",
            reaper::MARKER,
            "EXTRA",
            // Set by the shell itself.
            "PWD",
            "OLDPWD",
            "SHLVL",
            "_",
        ];
        let leaked: Vec<String> = std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .filter(|k| !allowed.contains(&k.as_str()))
            .collect();
        // The test harness has variables of its own (CARGO_*, at least) that must not leak.
        assert!(!leaked.is_empty());

        let sandbox = sandbox()?;
        let run = sandbox.run(&Invocation::new("env", Vec::<OsString>::new()).env("EXTRA", "1"))?;
        assert_eq!(run.exit, Exit::Code(0));
        let env = env_of(&run);
        for (key, _) in &env {
            assert!(
                allowed.contains(&key.as_str()),
                "{key} leaked into the child"
            );
        }
        let get = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let root = sandbox.root().to_string_lossy().into_owned();
        assert_eq!(get("HOME"), Some(format!("{root}/home").as_str()));
        assert_eq!(
            get("XDG_CONFIG_HOME"),
            Some(format!("{root}/config").as_str())
        );
        assert_eq!(get("XDG_DATA_HOME"), Some(format!("{root}/data").as_str()));
        assert_eq!(
            get("XDG_CACHE_HOME"),
            Some(format!("{root}/cache").as_str())
        );
        assert_eq!(
            get("XDG_STATE_HOME"),
            Some(format!("{root}/state").as_str())
        );
        assert_eq!(get("TMPDIR"), Some(format!("{root}/tmp").as_str()));
        assert_eq!(get("LANG"), Some("C.UTF-8"));
        assert_eq!(get("EXTRA"), Some("1"));
        assert_eq!(run.argv, vec!["env".to_string()]);
        Ok(())
    }

    #[test]
    fn cwd_is_the_work_dir_and_fixtures_are_copied() -> io::Result<()> {
        let scratch = sandbox()?;
        let fixtures = scratch.root().join("fixtures");
        fs::create_dir_all(fixtures.join("sub"))?;
        fs::write(fixtures.join("sub/data.txt"), "fixture\n")?;
        let config = SandboxConfig {
            fixtures: Some(fixtures),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(&config)?;
        let run = sandbox.run(&sh("pwd -P; cat sub/data.txt"))?;
        let expected = format!(
            "{}\nfixture\n",
            fs::canonicalize(sandbox.work_dir())?.display()
        );
        assert_eq!(String::from_utf8_lossy(&run.stdout), expected);
        assert_eq!(sandbox.work_dir(), sandbox.root().join("work"));
        Ok(())
    }

    #[test]
    fn stdin_is_closed_unless_given() -> io::Result<()> {
        let sandbox = sandbox()?;
        let fed = sandbox.run(&Invocation::new("cat", Vec::<OsString>::new()).stdin("one\ntwo"))?;
        assert_eq!(fed.stdout, b"one\ntwo");
        let closed = sandbox.run(&sh("cat; echo end"))?;
        assert_eq!(closed.stdout, b"end\n");
        assert!(!closed.timed_out);
        Ok(())
    }

    #[test]
    fn exit_codes_and_stderr_are_reported() -> io::Result<()> {
        let config = SandboxConfig::default();
        let sandbox = Sandbox::new(&config)?;
        let run = sandbox.run(&sh("echo oops >&2; exit 3"))?;
        assert_eq!(run.exit, Exit::Code(3));
        assert_eq!(run.exit.shell_status(), 3);
        assert_eq!(run.stderr, b"oops\n");
        let killed = sandbox.run(&sh("kill -TERM $$"))?;
        assert_eq!(killed.exit, Exit::Signal(15));
        assert_eq!(killed.exit.code(), None);
        assert_eq!(killed.exit.shell_status(), 143);
        let missing = sandbox.run(&Invocation::new("aoi-lint-no-such-program", ["x"]));
        assert_eq!(
            missing.map(|_| ()).map_err(|e| e.kind()),
            Err(io::ErrorKind::NotFound)
        );
        assert_eq!(config.processes.load(Ordering::Relaxed), 2);
        Ok(())
    }

    #[test]
    fn timeout_kills_the_whole_group() -> io::Result<()> {
        let sandbox = sandbox()?;
        let run =
            sandbox.run(&sh("sleep 100 & echo $!; sleep 100").timeout(Duration::from_secs(1)))?;
        assert!(run.timed_out);
        assert_eq!(run.exit, Exit::Signal(9));
        let grandchild = String::from_utf8_lossy(&run.stdout).trim().to_string();
        assert!(!grandchild.is_empty() && grandchild.bytes().all(|b| b.is_ascii_digit()));
        assert!(
            process_is_dead(&grandchild),
            "grandchild {grandchild} survived"
        );
        Ok(())
    }

    #[test]
    fn output_beyond_the_bound_is_dropped() -> io::Result<()> {
        let config = SandboxConfig {
            max_output: 4096,
            timeout: Duration::from_secs(1),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(&config)?;
        let run = sandbox.run(&Invocation::new("yes", Vec::<OsString>::new()))?;
        assert!(run.timed_out);
        assert!(run.stdout_truncated);
        assert!(!run.stderr_truncated);
        assert_eq!(run.stdout.len(), 4096);
        assert!(run.stdout.starts_with(b"y\ny\n"));

        let exact = sandbox.run(&sh("printf 1234"))?;
        assert!(!exact.stdout_truncated);
        Ok(())
    }

    #[test]
    fn closing_stdout_gives_the_child_sigpipe() -> io::Result<()> {
        let sandbox = sandbox()?;
        let mut running = sandbox.spawn(&Invocation::new("yes", Vec::<OsString>::new()))?;
        assert_eq!(running.read_line(GUARD)?, Some(b"y\n".to_vec()));
        running.close_stdout();
        assert_eq!(running.read_line(GUARD)?, None);
        let run = running.wait(GUARD)?;
        assert!(!run.timed_out);
        assert!(
            run.exit == Exit::Signal(13) || run.exit.code().is_some_and(|c| c != 0),
            "{}",
            run.exit
        );
        Ok(())
    }

    #[test]
    fn interrupt_reaches_the_child() -> io::Result<()> {
        let sandbox = sandbox()?;
        // After `ready` the shell forks nothing: it waits in its `wait` builtin, which a
        // trapped signal ends at once (POSIX), for a `sleep` that already runs as `sleep` and
        // ignores SIGINT (an asynchronous list does). The loop of foreground `sleep 1`s this
        // test once had forked a copy of the shell every second, and what a signal did to it
        // depended on how far the copy had got towards `exec` when it came.
        let mut running = sandbox.spawn(&sh(
            "trap 'echo got; exit 130' INT; sleep 100 >/dev/null 2>&1 & s=$!; \
             while [ \"$(cat /proc/$s/comm)\" != sleep ]; do :; done; echo ready; wait",
        ))?;
        assert_eq!(running.read_line(GUARD)?, Some(b"ready\n".to_vec()));
        running.signal(Signal::Interrupt)?;
        assert_eq!(running.read_line(GUARD)?, Some(b"got\n".to_vec()));
        let run = running.wait(GUARD)?;
        assert_eq!(run.exit, Exit::Code(130));
        assert_eq!(run.stdout, b"ready\ngot\n");
        Ok(())
    }

    #[test]
    fn read_line_times_out_and_drop_kills() -> io::Result<()> {
        let sandbox = sandbox()?;
        let mut running = sandbox.spawn(&sh("echo $$; sleep 100"))?;
        let pid = running.read_line(GUARD)?.unwrap_or_default();
        let pid = String::from_utf8_lossy(&pid).trim().to_string();
        let err = running.read_line(Duration::from_millis(50)).map(|_| ());
        assert_eq!(err.map_err(|e| e.kind()), Err(io::ErrorKind::TimedOut));
        drop(running);
        assert!(process_is_dead(&pid), "{pid} survived drop");
        Ok(())
    }

    /// The pids a shell printed, one a line.
    fn pids_in(bytes: &[u8]) -> Vec<u32> {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// A shell script that starts `escapee` in a new session, prints its pid, and returns only
    /// once it has left the shell's process group (so the group kill cannot be what ends it)
    /// and `setsid` has become the program it runs (a loaded machine can be seen between the two).
    fn escape(escapee: &str) -> String {
        format!(
            "{escapee} & e=$!; \
             while [ \"$(cut -d' ' -f5 /proc/$e/stat)\" = \"$$\" ] || [ \"$(cat /proc/$e/comm)\" = setsid ]; do :; done; echo $e"
        )
    }

    #[test]
    fn a_descendant_that_left_the_group_is_killed_and_reported() -> io::Result<()> {
        let config = SandboxConfig::default();
        let sandbox = Sandbox::new(&config)?;
        // One in the group (killed silently, as before) and one in a session of its own.
        let script = format!("sleep 100 & echo $!; {}", escape("setsid sleep 100"));
        let run = sandbox.run(&sh(&script).timeout(GUARD))?;
        assert!(!run.timed_out);
        assert_eq!(run.exit, Exit::Code(0));
        let pids = pids_in(&run.stdout);
        let [in_group, escaped] = pids[..] else {
            panic!(
                "two pids expected: {:?}",
                String::from_utf8_lossy(&run.stdout)
            );
        };
        assert_eq!(
            run.escaped,
            vec![Escapee {
                pid: escaped,
                command: "sleep".into()
            }]
        );
        assert_eq!(config.escaped.load(Ordering::Relaxed), 1);
        for pid in [in_group, escaped] {
            assert!(process_is_dead(&pid.to_string()), "{pid} survived");
        }
        Ok(())
    }

    #[test]
    fn an_escapee_without_the_marker_is_found_by_its_working_directory() -> io::Result<()> {
        let sandbox = sandbox()?;
        let run = sandbox.run(&sh(&escape("env -i setsid sleep 100")).timeout(GUARD))?;
        let pids = pids_in(&run.stdout);
        assert_eq!(run.escaped.len(), 1, "{:?}", run.escaped);
        assert_eq!(run.escaped.iter().map(|e| e.pid).collect::<Vec<_>>(), pids);
        assert!(process_is_dead(&pids[0].to_string()));
        Ok(())
    }

    #[test]
    fn a_running_dropped_unfinished_kills_its_escapees_too() -> io::Result<()> {
        let sandbox = sandbox()?;
        let mut running =
            sandbox.spawn(&sh(&format!("{}; sleep 100", escape("setsid sleep 100"))))?;
        let line = running.read_line(GUARD)?.unwrap_or_default();
        let pid = String::from_utf8_lossy(&line).trim().to_string();
        assert!(!process_is_dead(&pid));
        let reaper = Arc::clone(&sandbox.reaper);
        let (_, seen) = reaper.witness(|| drop(running));
        assert!(process_is_dead(&pid), "{pid} survived drop");
        assert_eq!(
            seen.iter()
                .map(|w| w.escapee.pid.to_string())
                .collect::<Vec<_>>(),
            vec![pid]
        );
        Ok(())
    }

    #[test]
    fn cancelling_one_reaper_ends_its_runs_and_leaves_another_lints_alone() -> io::Result<()> {
        // Two lints in one process, each with the reaper its caller holds.
        let mine = SandboxConfig::default();
        let theirs = SandboxConfig::default();
        let (a, b) = (Sandbox::new(&mine)?, Sandbox::new(&theirs)?);
        let mut doomed = a.spawn(&sh(&format!("{}; sleep 100", escape("setsid sleep 100"))))?;
        let mut spared = b.spawn(&sh(&format!("{}; sleep 100", escape("setsid sleep 100"))))?;
        let doomed_escapee = String::from_utf8_lossy(&doomed.read_line(GUARD)?.unwrap_or_default())
            .trim()
            .to_string();
        let spared_escapee = String::from_utf8_lossy(&spared.read_line(GUARD)?.unwrap_or_default())
            .trim()
            .to_string();
        let root = a.root().to_path_buf();

        let cancelled = mine.reaper.cancel_all();

        assert!(
            process_is_dead(&doomed_escapee),
            "the cancelled lint's escapee lives"
        );
        assert!(process_is_dead(&doomed.pgid.as_raw_nonzero().to_string()));
        assert!(
            !root.exists(),
            "the cancelled lint's sandbox is still there"
        );
        assert_eq!(cancelled.directories, 1);
        // The escapee at least: the group kill may end the shell before the scan sees it.
        assert!(cancelled.processes >= 1, "{cancelled:?}");
        assert_eq!(
            Sandbox::new(&mine).err().map(|e| e.kind()),
            Some(io::ErrorKind::Interrupted),
            "a cancelled lint made a sandbox"
        );
        assert!(!theirs.reaper.cancelled());
        assert!(
            !process_is_dead(&spared_escapee),
            "the other lint's escapee was killed"
        );
        assert!(!process_is_dead(&spared.pgid.as_raw_nonzero().to_string()));
        assert!(Sandbox::new(&theirs).is_ok());
        drop(spared);
        assert!(process_is_dead(&spared_escapee));
        Ok(())
    }

    #[test]
    fn a_subreaper_reaps_the_escapees_it_killed() -> io::Result<()> {
        // Process-wide: from here on every orphan of this test binary is reparented to it,
        // which every other test must (and does) survive.
        reaper::become_subreaper()?;
        let sandbox = sandbox()?;
        let run = sandbox.run(&sh(&escape("setsid sleep 100")).timeout(GUARD))?;
        let pids = pids_in(&run.stdout);
        assert_eq!(run.escaped.len(), 1);
        // Not even a zombie: lint reaped it.
        assert!(
            !Path::new(&format!("/proc/{}", pids[0])).exists(),
            "{} was not reaped",
            pids[0]
        );
        Ok(())
    }

    #[test]
    fn unterminated_last_line_is_returned_at_eof() -> io::Result<()> {
        let sandbox = sandbox()?;
        let mut running = sandbox.spawn(&sh("printf 'a\\nb'"))?;
        assert_eq!(running.read_line(GUARD)?, Some(b"a\n".to_vec()));
        assert_eq!(running.read_line(GUARD)?, Some(b"b".to_vec()));
        assert_eq!(running.read_line(GUARD)?, None);
        assert_eq!(running.wait(GUARD)?.stdout, b"a\nb");
        Ok(())
    }

    #[test]
    fn snapshot_sees_writes_anywhere_in_the_root() -> io::Result<()> {
        let sandbox = sandbox()?;
        fs::write(sandbox.work_dir().join("old"), "x")?;
        fs::write(sandbox.work_dir().join("mod"), "x")?;
        let before = sandbox.snapshot()?;
        sandbox.run(&sh(
            "echo new > new; rm old; echo more >> mod; mkdir -p \"$XDG_CACHE_HOME/tool\"",
        ))?;
        let after = sandbox.snapshot()?;
        assert_eq!(
            before.changes(&after),
            vec![
                snapshot::Change::Added(PathBuf::from("cache/tool")),
                snapshot::Change::Modified(PathBuf::from("work/mod")),
                snapshot::Change::Added(PathBuf::from("work/new")),
                snapshot::Change::Removed(PathBuf::from("work/old")),
            ]
        );
        Ok(())
    }

    #[test]
    fn root_is_removed_on_drop() -> io::Result<()> {
        let sandbox = sandbox()?;
        let root = sandbox.root().to_path_buf();
        // Even a directory the tool made unwritable goes.
        sandbox.run(&sh(
            "mkdir -p locked/in && touch locked/in/f && chmod 0 locked/in locked",
        ))?;
        assert!(root.join("work/locked").exists());
        drop(sandbox);
        assert!(!root.exists());
        Ok(())
    }

    #[test]
    fn network_isolation_is_used_when_available() -> io::Result<()> {
        let sandbox = sandbox()?;
        let run =
            sandbox.run(&Invocation::new("cat", ["/proc/self/net/dev"]).isolated_network())?;
        assert_eq!(
            run.argv,
            vec!["cat".to_string(), "/proc/self/net/dev".to_string()]
        );
        match network_isolation() {
            Ok(()) => {
                assert!(run.network_isolated);
                let interfaces: Vec<String> = String::from_utf8_lossy(&run.stdout)
                    .lines()
                    .skip(2)
                    .filter_map(|line| line.split_once(':'))
                    .map(|(name, _)| name.trim().to_string())
                    .collect();
                assert_eq!(interfaces, vec!["lo".to_string()]);
            }
            Err(_) => assert!(!run.network_isolated),
        }
        let plain = sandbox.run(&Invocation::new("true", Vec::<OsString>::new()))?;
        assert!(!plain.network_isolated);
        Ok(())
    }
}
