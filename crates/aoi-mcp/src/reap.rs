//! Nothing a call started outlives it: its process group is killed, and so is every
//! descendant that left the group (`setsid`, a double fork), found by a per-call marker.
//!
//! A process group is not a container. So every CLI the adapter runs carries
//! [`MARKER`]`=<adapter pid>-<call>` in its environment, which every descendant inherits, and
//! when a call ends, however it ends, the adapter kills the call's group and then scans `/proc`
//! for live processes of this user that carry the call's marker and kills them too, scan after
//! scan until one finds nothing new (a process forked between a scan and its kill is found by
//! the next). A descendant that also scrubs its environment escapes the sweep; one that only
//! changes session or group does not.
//!
//! [`stop_all`] is the end of everything, for when the adapter itself is told to stop (stdin
//! closed, SIGTERM, SIGINT, SIGHUP): every live call's group, and every process marked by this
//! adapter, killed; afterwards no call can start.
//!
//! SIGKILL gives the adapter no chance to do either, so [`start_watchdog`] arranges a watchdog,
//! started before the first call's CLI: the adapter's own program, in a process group of its own, reading a pipe whose only
//! writer is the adapter. The adapter tells it each call's process group as the call starts
//! and ends; when the pipe ends (the adapter exited, however: SIGKILL too), the watchdog kills
//! the groups still running and sweeps every process marked by the adapter, then exits. This
//! is the watchdog that `PR_SET_PDEATHSIG` would only half be: that signal reaches the CLI
//! alone, not what the CLI started, and setting it needs code between fork and exec, which
//! costs every call the fast `posix_spawn`.
//!
//! The adapter is not a child subreaper: tokio reaps the CLIs it started, and orphans a sweep
//! killed are reaped by whoever inherited them (init, or the host's subreaper).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, Pid, Signal};

/// The environment variable that marks every process of one call.
pub const MARKER: &str = "AOI_MCP_CALL";

static NEXT: AtomicU64 = AtomicU64::new(1);
static STOPPED: AtomicBool = AtomicBool::new(false);
/// The process group of every call running now, by call id.
static LIVE: Mutex<Option<HashMap<u64, Pid>>> = Mutex::new(None);

fn with_live<R>(f: impl FnOnce(&mut HashMap<u64, Pid>) -> R) -> R {
    let mut guard = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// One call's claim on its processes: the marker its CLI carries and, once spawned, its
/// process group. Dropping it (the call ended, or its future was dropped) kills the group and
/// sweeps the marked processes.
#[derive(Debug)]
pub struct CallProcesses {
    id: u64,
    marker: String,
    group: Option<Pid>,
    /// When the CLI started.
    since: Option<Instant>,
    /// True once [`CallProcesses::kill_all`] ran (dropping it then sweeps no more).
    swept: bool,
}

/// How long a call may run for its sweep to look only at the pids handed out after its CLI:
/// far less than the time `pid_max` forks take.
const WINDOW_TRUSTED: Duration = Duration::from_secs(30);

impl CallProcesses {
    /// A fresh marker for a call; `None` once [`stop_all`] ran: nothing may start any more.
    pub fn new() -> Option<CallProcesses> {
        if stopped() {
            return None;
        }
        wake_watchdog();
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        Some(CallProcesses {
            id,
            marker: format!("{}-{id}", std::process::id()),
            group: None,
            since: None,
            swept: false,
        })
    }

    /// The value of [`MARKER`] for this call's CLI.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Records the CLI's process group (its pid: it leads its own group). `false` when the
    /// adapter was stopped meanwhile; the caller then ends the call (dropping this kills it).
    pub fn started(&mut self, pid: u32) -> bool {
        let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return true;
        };
        self.group = Some(pid);
        self.since = Some(Instant::now());
        with_live(|live| live.insert(self.id, pid));
        tell_watchdog('+', pid);
        // Checked after recording, so a concurrent stop_all either sees the group or is seen.
        !stopped()
    }

    /// Sends `signal` to the CLI's whole process group.
    pub fn signal_group(&self, signal: Signal) {
        if let Some(group) = self.group {
            // ESRCH: the group is gone already, which is what was wanted.
            let _ = kill_process_group(group, signal);
        }
    }

    /// Kills the group and every process that carries this call's marker; returns how many
    /// processes outside the group were killed.
    pub fn kill_all(&mut self) -> usize {
        self.swept = true;
        self.signal_group(Signal::KILL);
        // Every descendant was born after the CLI: only the pids handed out since are read
        // (a few, where a whole `/proc` scan reads them all), unless the call lasted long
        // enough for the pid counter to have gone round.
        let window = match (self.group, self.since) {
            (Some(group), Some(since)) if since.elapsed() < WINDOW_TRUSTED => {
                Some(group.as_raw_nonzero().get())
            }
            _ => None,
        };
        sweep(&self.marker, false, window)
    }
}

impl Drop for CallProcesses {
    fn drop(&mut self) {
        // A call that ended normally swept already; one whose future was dropped did not.
        if !self.swept {
            self.kill_all();
        }
        with_live(|live| live.remove(&self.id));
        if let Some(group) = self.group {
            tell_watchdog('-', group);
        }
    }
}

/// True once [`stop_all`] was called.
pub fn stopped() -> bool {
    STOPPED.load(Ordering::SeqCst)
}

/// Kills every live call's process group and every process marked by this adapter; from then
/// on no call starts. Returns how many marked processes were killed. Safe to call more than once.
pub fn stop_all() -> usize {
    STOPPED.store(true, Ordering::SeqCst);
    let groups: Vec<Pid> = with_live(|live| live.values().copied().collect());
    for group in groups {
        let _ = kill_process_group(group, Signal::KILL);
    }
    sweep(&format!("{}-", std::process::id()), true, None)
}

/// Calls `on_hangup` once this process's standard input is hung up (a pipe whose every writer
/// closed it, a terminal that went away), from a thread of its own. It only polls for the
/// hang-up, never reads, so the transport reading stdin loses nothing. Standard input that
/// cannot hang up (a file, `/dev/null`) or is not open: `on_hangup` is never called.
pub fn on_stdin_hangup(on_hangup: impl FnOnce() + Send + 'static) {
    use rustix::event::{poll, PollFd, PollFlags};
    let spawned = std::thread::Builder::new()
        .name("stdin-hangup".into())
        .spawn(move || {
            let stdin = rustix::stdio::stdin();
            loop {
                // No events asked for: poll reports only POLLHUP, POLLERR and POLLNVAL.
                let mut fds = [PollFd::new(&stdin, PollFlags::empty())];
                match poll(&mut fds, None) {
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(_) => return,
                }
                let revents = fds[0].revents();
                if revents.contains(PollFlags::NVAL) {
                    return;
                }
                if revents.intersects(PollFlags::HUP | PollFlags::ERR) {
                    on_hangup();
                    return;
                }
            }
        });
    // Without the thread, stdin's EOF still ends the service, only later.
    drop(spawned);
}

/// The first argument that makes the adapter's program its watchdog:
/// `PROGRAM __aoi-mcp-watchdog ADAPTER_PID` (see [`start_watchdog`]).
pub const WATCHDOG_ARG: &str = "__aoi-mcp-watchdog";

/// The adapter's end of the watchdog's pipe, once the first call started it; the program to
/// start it with, once [`start_watchdog`] named it.
static WATCHDOG: Mutex<Watchdog> = Mutex::new(Watchdog::Off);

enum Watchdog {
    Off,
    Wanted(std::path::PathBuf),
    Running(std::io::PipeWriter),
}

/// Arranges the watchdog that outlives the adapter just long enough to kill what its calls
/// started, however the adapter ends (SIGKILL included): `program` (the adapter's own, e.g.
/// `/proc/self/exe`) run as `PROGRAM `[`WATCHDOG_ARG`]` PID`, which must call
/// [`watchdog_main`]. It is started with the first call (a server that only lists its tools
/// starts nothing), in a process group of its own (a signal to the adapter's group does not
/// reach it), and reads a pipe that only the adapter holds (close-on-exec: no CLI inherits
/// it). Call it once, before the first call.
pub fn start_watchdog(program: &std::path::Path) {
    *WATCHDOG.lock().unwrap_or_else(|p| p.into_inner()) = Watchdog::Wanted(program.to_owned());
}

/// Starts the watchdog `program`; the adapter's end of its pipe.
fn spawn_watchdog(program: &std::path::Path) -> std::io::Result<std::io::PipeWriter> {
    use std::os::unix::process::CommandExt;
    let (reader, writer) = std::io::pipe()?;
    // A watchdog that stops reading must never block a call: a record that does not fit
    // (the pipe holds 64 KiB of them) is dropped, and the marker sweep still finds the CLI.
    let flags = rustix::fs::fcntl_getfl(&writer)?;
    rustix::fs::fcntl_setfl(&writer, flags | rustix::fs::OFlags::NONBLOCK)?;
    std::process::Command::new(program)
        .arg0("aoi")
        .arg(WATCHDOG_ARG)
        .arg(std::process::id().to_string())
        .env_remove(MARKER)
        .stdin(reader)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok(writer)
}

/// Starts the watchdog [`start_watchdog`] asked for, unless it runs already.
fn wake_watchdog() {
    let mut watchdog = WATCHDOG.lock().unwrap_or_else(|p| p.into_inner());
    if let Watchdog::Wanted(program) = &*watchdog {
        // One that cannot start is not retried; the sweeps still run on every other way out.
        *watchdog = spawn_watchdog(program).map_or(Watchdog::Off, Watchdog::Running);
    }
}

/// Tells the watchdog that a call's process group started (`+`) or ended (`-`).
fn tell_watchdog(sign: char, group: Pid) {
    use std::io::Write;
    let mut watchdog = WATCHDOG.lock().unwrap_or_else(|p| p.into_inner());
    if let Watchdog::Running(pipe) = &mut *watchdog {
        // One write of a few bytes: atomic on a pipe, so a full pipe drops it whole.
        let _ = pipe.write(format!("{sign}{}\n", group.as_raw_nonzero()).as_bytes());
    }
}

/// The watchdog's whole life (`PROGRAM `[`WATCHDOG_ARG`]` ADAPTER_PID`, stdin the pipe of
/// [`start_watchdog`]): it follows the groups the adapter reports until the pipe ends, then
/// kills the groups still running and every process the adapter marked ([`MARKER`] starting
/// with `ADAPTER_PID-`, started after the adapter), and exits 0; 64 when the pid is missing.
pub fn watchdog_main(adapter: Option<&str>) -> std::process::ExitCode {
    use std::io::BufRead;
    let Some(adapter) = adapter.and_then(|a| a.parse::<u32>().ok()) else {
        return std::process::ExitCode::from(aoi::exit_code::USAGE);
    };
    // Read while the adapter is alive: afterwards its /proc entry is gone.
    let born = aoi_contain::proc::start_time(adapter);
    let mut groups: std::collections::HashSet<i32> = std::collections::HashSet::new();
    for line in std::io::stdin().lock().split(b'\n') {
        let Ok(line) = line else { break };
        let Some((&sign, digits)) = line.split_first() else {
            continue;
        };
        let Some(group) = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<i32>().ok())
        else {
            continue;
        };
        match sign {
            b'+' => {
                groups.insert(group);
            }
            b'-' => {
                groups.remove(&group);
            }
            _ => {}
        }
    }
    for group in groups.into_iter().filter_map(Pid::from_raw) {
        let _ = kill_process_group(group, Signal::KILL);
    }
    sweep_since(&format!("{adapter}-"), true, None, born);
    std::process::ExitCode::SUCCESS
}

/// Kills every live process whose [`MARKER`] is `wanted` (exactly, or starting with it when
/// `prefix`), started after the adapter, until a scan finds none it has not killed already
/// ([`aoi_contain::sweep`]); with `after`, only among the pids handed out since that one.
fn sweep(wanted: &str, prefix: bool, after: Option<i32>) -> usize {
    sweep_since(
        wanted,
        prefix,
        after,
        aoi_contain::proc::start_time(std::process::id()),
    )
}

/// [`sweep`], among the processes started at or after `born` (clock ticks since boot).
fn sweep_since(wanted: &str, prefix: bool, after: Option<i32>, born: Option<u64>) -> usize {
    // The adapter is not a subreaper: tokio reaps its CLIs, init or the host's subreaper
    // the orphans a sweep killed. So a sweep neither waits for them nor reaps them.
    aoi_contain::sweep(&aoi_contain::Sweep {
        select: aoi_contain::Selector {
            variable: MARKER,
            value: wanted,
            prefix,
            roots: &[],
            children: false,
            born_since: born,
            after_pid: after,
        },
        death_wait: None,
        reap: None,
    })
    .len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    #[test]
    fn a_marked_process_in_its_own_session_is_found_and_killed() {
        let mut call = CallProcesses::new().expect("not stopped");
        let mut child = Command::new("setsid")
            .args(["sh", "-c", "echo ready; while :; do sleep 1; done"])
            .env(MARKER, call.marker())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("setsid sh");
        let pid = child.id();
        // setsid execs sh in place (it is not a group leader), so the pid is sh's; its line
        // says it runs with its own environment (before exec, /proc shows the parent's).
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("ready");
        let killed = call.kill_all();
        assert!(killed >= 1, "the marked process was found");
        let status = child.wait().expect("reaped");
        assert!(!status.success(), "killed, not finished: {status:?}");
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }
}
