//! One sweep: every live process a [`Selector`] takes is killed, scan after scan until a scan
//! finds none it has not killed already (or [`ROUNDS`] scans: a fork bomb is not chased
//! forever).

use std::collections::HashSet;
use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::process::{kill_process, pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};

use crate::proc;

/// How many scan-and-kill rounds one sweep makes at most.
const ROUNDS: usize = 8;

/// How long a sweep keeps reading the environments it could not read ([`sweep`]).
const UNSURE_WAIT: Duration = Duration::from_millis(10);

/// The pause between two of those reads.
const UNSURE_PAUSE: Duration = Duration::from_micros(200);

/// Which processes a sweep takes.
#[derive(Debug, Clone, Copy)]
pub struct Selector<'a> {
    /// The marker variable, e.g. `AOI_LINT_RUN`.
    pub variable: &'a str,
    /// A process whose marker is this value is taken (exactly, or with `prefix` as a prefix).
    pub value: &'a str,
    /// Match the marker's value as a prefix.
    pub prefix: bool,
    /// Also take processes without any marker whose working directory is inside one of these
    /// (a tool that scrubbed its environment still runs in its sandbox).
    pub roots: &'a [PathBuf],
    /// Also take every child of this process that carries no marker at all (when everything
    /// ends: an orphan reparented here that scrubbed its environment). A child marked with
    /// another value belongs to another run, which sweeps it.
    pub children: bool,
    /// Only processes started no earlier than this (`/proc/PID/stat` start time, in clock
    /// ticks since boot): a run's processes are no older than its first, so every older
    /// process is passed over after one read of its `stat`, its environment never read.
    pub born_since: Option<u64>,
    /// Only processes whose pid was handed out after this one (a run's first process): the
    /// pids since are read one by one, where a whole `/proc` listing reads them all. Trust it
    /// only for a run shorter than the time `pid_max` forks take.
    pub after_pid: Option<i32>,
}

/// What a scan decided about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    Yes,
    No,
    /// Not taken, but its environment could not be read although it is this user's: it may
    /// have been caught mid-exec, and be the selector's after all.
    Unsure,
}

impl Selector<'_> {
    /// Whether the live process at `proc_dir`, a child of `parent`, is taken. Another user's
    /// process has an environment that cannot be read: it is never taken by its marker.
    fn takes(&self, proc_dir: &Path, parent: i32, me: i32) -> Take {
        let environ = proc::environ(proc_dir);
        let value = environ
            .as_deref()
            .and_then(|environ| proc::find_var(environ, self.variable));
        if let Some(value) = &value {
            let wanted = self.value.as_bytes();
            if value == wanted || (self.prefix && value.starts_with(wanted)) {
                return Take::Yes;
            }
            // Another run's process: that run sweeps it.
            return Take::No;
        }
        let by_place = (self.children && parent == me)
            || (!self.roots.is_empty()
                && fs::read_link(proc_dir.join("cwd"))
                    .is_ok_and(|cwd| self.roots.iter().any(|root| cwd.starts_with(root))));
        if by_place {
            Take::Yes
        } else if environ.is_none() && mine(proc_dir) {
            Take::Unsure
        } else {
            Take::No
        }
    }
}

/// True when the process at `proc_dir` runs as this process's effective user.
fn mine(proc_dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(proc_dir).is_ok_and(|m| m.uid() == rustix::process::geteuid().as_raw())
}

/// A process a sweep killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    /// Its process id.
    pub pid: u32,
    /// Its process group when it was found.
    pub pgid: i32,
    /// Its command name (`/proc/PID/comm`).
    pub command: String,
}

/// A child of this process a sweep found dead or killed, for a subreaper to reap.
#[derive(Debug)]
pub enum Reapable<'a> {
    /// A zombie child, by pid.
    Pid(Pid),
    /// A process the sweep killed and waited for, by pid and pidfd.
    Fd(Pid, &'a OwnedFd),
}

impl Reapable<'_> {
    /// The process id.
    pub fn pid(&self) -> Pid {
        match self {
            Reapable::Pid(pid) | Reapable::Fd(pid, _) => *pid,
        }
    }
}

/// What reaps the children a sweep found dead or killed (see [`Sweep::reap`]).
pub type Reaper = dyn Fn(&[Reapable<'_>]) + Sync;

/// How a sweep runs: what it takes, whether it waits for the dead, who reaps them.
#[derive(Clone, Copy)]
pub struct Sweep<'a> {
    /// What it takes.
    pub select: Selector<'a>,
    /// After each round's kills, wait at most this long for the killed to die (their pidfds
    /// readable), so that the children of a dead parent are reparented before the next scan
    /// and can be reaped; `None` does not wait.
    pub death_wait: Option<Duration>,
    /// Called with the zombie children of this process each scan finds and with each round's
    /// killed processes once they died, for a program that is a child subreaper to reap what
    /// no `Child` of its own owns. `None` for a program whose children others reap.
    pub reap: Option<&'a Reaper>,
}

impl std::fmt::Debug for Sweep<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sweep")
            .field("select", &self.select)
            .field("death_wait", &self.death_wait)
            .field("reap", &self.reap.is_some())
            .finish()
    }
}

/// One process a scan took.
struct Found {
    pid: Pid,
    pgid: i32,
    command: String,
    pidfd: Option<OwnedFd>,
}

/// Kills everything `how.select` takes, scan after scan until one finds nothing new; returns
/// every process killed, each once.
///
/// A process of this user whose environment could not be read may have been caught mid-exec
/// (while a process execs, its new image has no environment yet): when a scan finds nothing
/// new but passed such a process, its environment is read again and again, for
/// `UNSURE_WAIT` (10 ms) at most, until it says whose the process is. An exec takes well under a
/// millisecond; a process of this user that really has an empty environment costs a sweep
/// that wait.
pub fn sweep(how: &Sweep<'_>) -> Vec<Killed> {
    let mut killed: Vec<Killed> = Vec::new();
    let mut seen: HashSet<i32> = HashSet::new();
    for _ in 0..ROUNDS {
        let (mut fresh, unsure) = scan(how);
        // One killed already and still alive (in uninterruptible sleep, say) is not chased.
        fresh.retain(|f| !seen.contains(&f.pid.as_raw_nonzero().get()));
        if fresh.is_empty() && !unsure.is_empty() {
            fresh = settle(&how.select, unsure);
            fresh.retain(|f| !seen.contains(&f.pid.as_raw_nonzero().get()));
        }
        if fresh.is_empty() {
            break;
        }
        for f in &fresh {
            // ESRCH: it died meanwhile, which is what was wanted.
            let _ = match &f.pidfd {
                Some(fd) => pidfd_send_signal(fd, Signal::KILL),
                None => kill_process(f.pid, Signal::KILL),
            };
        }
        if let Some(limit) = how.death_wait {
            wait_for_death(&fresh, limit);
        }
        if let Some(reap) = how.reap {
            let targets: Vec<Reapable<'_>> = fresh
                .iter()
                .map(|f| match &f.pidfd {
                    Some(fd) => Reapable::Fd(f.pid, fd),
                    None => Reapable::Pid(f.pid),
                })
                .collect();
            reap(&targets);
        }
        for f in fresh {
            let raw = f.pid.as_raw_nonzero().get();
            if seen.insert(raw) {
                killed.push(Killed {
                    pid: raw.unsigned_abs(),
                    pgid: f.pgid,
                    command: f.command,
                });
            }
        }
    }
    killed
}

/// A process a scan was unsure of ([`Take::Unsure`]).
struct Unsure {
    pid: Pid,
    dir: PathBuf,
    stat: proc::Stat,
}

/// Reads the environments of `unsure` again, `UNSURE_PAUSE` apart, until each says whether
/// `select` takes its process or `UNSURE_WAIT` passed; the processes it takes.
fn settle(select: &Selector<'_>, mut unsure: Vec<Unsure>) -> Vec<Found> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let deadline = Instant::now() + UNSURE_WAIT;
    let mut found = Vec::new();
    while !unsure.is_empty() && Instant::now() < deadline {
        std::thread::sleep(UNSURE_PAUSE);
        unsure.retain(|u| match select.takes(&u.dir, u.stat.ppid, me) {
            Take::Unsure => true,
            Take::No => false,
            Take::Yes => {
                found.push(Found {
                    pid: u.pid,
                    pgid: u.stat.pgid,
                    command: u.stat.command.clone(),
                    pidfd: pidfd_open(u.pid, PidfdFlags::empty()).ok(),
                });
                false
            }
        });
    }
    found
}

/// Every live process of this user that `how.select` takes, and those it was unsure of
/// ([`Take::Unsure`]); hands the zombie children it passes to `how.reap`.
fn scan(how: &Sweep<'_>) -> (Vec<Found>, Vec<Unsure>) {
    let select = &how.select;
    let me = rustix::process::getpid().as_raw_nonzero().get();
    // Read each round: a process forked meanwhile is in the window of the next.
    let candidates = match select
        .after_pid
        .and_then(|first| Some((first, proc::last_pid()?)))
    {
        Some((first, last)) => proc::window(first, last),
        None => Box::new(proc::others()),
    };
    let mut found = Vec::new();
    let mut zombies = Vec::new();
    let mut unsure = Vec::new();
    for (raw, dir) in candidates {
        let Some(pid) = Pid::from_raw(raw) else {
            continue;
        };
        let Some(stat) = proc::stat(&dir) else {
            continue;
        };
        if stat.is_dead() {
            if stat.ppid == me {
                zombies.push(Reapable::Pid(pid));
            }
            continue;
        }
        if select.born_since.is_some_and(|t| stat.started < t) && stat.ppid != me {
            continue;
        }
        if stat.is_kernel_thread() {
            continue;
        }
        match select.takes(&dir, stat.ppid, me) {
            Take::Yes => found.push(Found {
                pid,
                pgid: stat.pgid,
                command: stat.command,
                pidfd: pidfd_open(pid, PidfdFlags::empty()).ok(),
            }),
            Take::Unsure => unsure.push(Unsure { pid, dir, stat }),
            Take::No => {}
        }
    }
    if let (Some(reap), false) = (how.reap, zombies.is_empty()) {
        reap(&zombies);
    }
    (found, unsure)
}

/// Waits until every pidfd in `found` is readable (the process exited), or `limit` passed.
/// By then a dead parent's children have been reparented, so they can be reaped.
fn wait_for_death(found: &[Found], limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut pending: Vec<&OwnedFd> = found.iter().filter_map(|f| f.pidfd.as_ref()).collect();
    while !pending.is_empty() {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return;
        }
        let mut fds: Vec<PollFd<'_>> = pending
            .iter()
            .map(|fd| PollFd::new(*fd, PollFlags::IN))
            .collect();
        match poll(&mut fds, Some(&timespec(remaining))) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let done: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
        pending = pending
            .into_iter()
            .zip(done)
            .filter(|(_, done)| !done)
            .map(|(fd, _)| fd)
            .collect();
    }
}

/// `duration` as `poll(2)`'s timeout.
pub fn timespec(duration: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(duration.subsec_nanos()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::process::{Child, Command, Stdio};

    /// A process in a session of its own (`setsid`: out of this process's group) carrying
    /// `variable=value`, once it runs its own program (its line says so); one process, no
    /// children and no `exec` after the line (while a process execs, its environment cannot
    /// be read): `sh` waits on `read`, its stdin held open here. Killed and reaped when
    /// dropped, whatever the test found.
    struct Escaped(Child);

    impl Escaped {
        fn start(variable: &str, value: &str) -> Escaped {
            let mut child = Command::new("setsid")
                .args(["sh", "-c", "echo ready; read line"])
                .env(variable, value)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("setsid sh");
            let mut line = String::new();
            let stdout = child.stdout.take().expect("piped");
            std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .expect("ready");
            Escaped(child)
        }

        fn pid(&self) -> u32 {
            self.0.id()
        }

        /// True once it was killed (reaped with a failure status).
        fn killed(&mut self) -> bool {
            self.0.wait().is_ok_and(|status| !status.success())
        }

        fn alive(&mut self) -> bool {
            self.0.try_wait().is_ok_and(|status| status.is_none())
        }
    }

    impl Drop for Escaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn selector(value: &str, prefix: bool) -> Selector<'_> {
        Selector {
            variable: "AOI_CONTAIN_TEST",
            value,
            prefix,
            roots: &[],
            children: false,
            born_since: proc::start_time(std::process::id()),
            after_pid: None,
        }
    }

    #[test]
    fn a_marked_process_that_left_its_group_is_found_and_killed_and_others_are_not() {
        let tag = format!("{}-sweep", std::process::id());
        let wanted = format!("{tag}-1");
        let mut mine = Escaped::start("AOI_CONTAIN_TEST", &wanted);
        let mut other = Escaped::start("AOI_CONTAIN_TEST", &format!("{tag}x-2"));
        let killed = sweep(&Sweep {
            select: selector(&wanted, false),
            death_wait: Some(Duration::from_secs(2)),
            reap: None,
        });
        assert_eq!(
            killed.iter().map(|k| k.pid).collect::<Vec<_>>(),
            [mine.pid()],
            "exactly the marked process"
        );
        assert_eq!(killed[0].command, "sh");
        assert!(mine.killed(), "killed, not finished");
        assert!(other.alive(), "another marker's process is left alone");
        // A prefix takes every run of the program: the other one too.
        let prefix = format!("{tag}x-");
        let killed = sweep(&Sweep {
            select: selector(&prefix, true),
            death_wait: None,
            reap: None,
        });
        assert_eq!(
            killed.iter().map(|k| k.pid).collect::<Vec<_>>(),
            [other.pid()]
        );
        assert!(other.killed());
    }

    #[test]
    fn a_window_after_the_first_pid_finds_a_later_descendant() {
        let first = proc::last_pid().expect("ns_last_pid");
        let value = format!("{}-window", std::process::id());
        let mut child = Escaped::start("AOI_CONTAIN_TEST", &value);
        let select = Selector {
            after_pid: Some(first),
            ..selector(&value, false)
        };
        let killed = sweep(&Sweep {
            select,
            death_wait: Some(Duration::from_secs(2)),
            reap: None,
        });
        assert_eq!(
            killed.iter().map(|k| k.pid).collect::<Vec<_>>(),
            [child.pid()]
        );
        assert!(child.killed());
    }

    #[test]
    fn a_marked_process_caught_mid_exec_is_found_all_the_same() {
        // A process that does nothing but exec itself (its script is its own `$0`): whenever
        // a scan reads it, it may be mid-exec, its environment empty or cut for that moment.
        // Before the sweep read such environments again, a few in 40 outlived it.
        let again = r#"exec sh -c "$0" "$0""#;
        let mut escaped = 0;
        for round in 0..40 {
            let value = format!("{}-exec-{round}", std::process::id());
            let mut child = Command::new("setsid")
                .args(["sh", "-c", again, again])
                .env("AOI_CONTAIN_TEST", &value)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("setsid sh");
            std::thread::sleep(Duration::from_millis(20));
            sweep(&Sweep {
                select: selector(&value, false),
                death_wait: Some(Duration::from_secs(2)),
                reap: None,
            });
            std::thread::sleep(Duration::from_millis(20));
            if child.try_wait().is_ok_and(|s| s.is_none()) {
                escaped += 1;
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        assert_eq!(
            escaped, 0,
            "{escaped} of 40 re-exec'ing processes outlived a sweep"
        );
    }
}
