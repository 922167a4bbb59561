//! Processes a run leaves behind: finding them, killing them, reaping them, and ending
//! everything at once when lint itself is cancelled.
//!
//! A process group is not a container: a descendant can leave it (`setsid`, a double fork into
//! a new session) and outlive the run, where a group kill never reaches it. So every process
//! lint starts carries a per-run variable in its environment, [`MARKER`]`=<lint pid>-<sandbox>-<run>`
//! (the environment is built from empty, so only lint puts it there, and every descendant
//! inherits it), and after each run lint scans `/proc` for live processes that carry the run's
//! marker, or carry none but have their working directory inside the sandbox, and kills them.
//! The scan repeats until it finds nothing, so a process forked between a scan and its kill is
//! found by the next one.
//!
//! When lint is a child subreaper ([`become_subreaper`]), orphans of the tool are reparented to
//! lint rather than to init, so lint reaps them: the processes it killed, and any zombie child
//! that no [`std::process::Child`] of a sandbox owns. Spawns and that reaping exclude each other
//! (`SPAWN_GATE`), so a child that exits before its owner has recorded it is never reaped
//! from under it.
//!
//! [`cancel_all`] is the end of everything: every live process group and every marked process
//! of this lint is killed, and every sandbox directory removed; afterwards no sandbox can be
//! made and nothing can be spawned.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::process::{
    kill_process, kill_process_group, pidfd_open, pidfd_send_signal, waitid, Pid, PidfdFlags,
    Signal, WaitId, WaitIdOptions,
};

/// The environment variable that marks every process of one run.
pub const MARKER: &str = "AOI_LINT_RUN";

/// How many scan-and-kill rounds one sweep makes at most (a fork bomb is not chased forever).
const ROUNDS: usize = 8;

/// How long a sweep waits for the processes it killed to die before it reaps them.
const DEATH_WAIT: Duration = Duration::from_secs(2);

/// A process lint found still running after its run ended, outside the run's process group,
/// and killed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Escapee {
    /// Its process id.
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub command: String,
}

/// A process lint killed, with the command line of the run that left it behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witnessed {
    /// The run's command line, as in [`crate::sandbox::Run::argv`].
    pub argv: Vec<String>,
    /// The process.
    pub escapee: Escapee,
}

/// What [`cancel_all`] ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cancelled {
    /// Processes killed (group members counted once each only when a scan saw them).
    pub processes: usize,
    /// Sandbox directories removed.
    pub directories: usize,
}

static SUBREAPER: AtomicBool = AtomicBool::new(false);
static CANCELLED: AtomicBool = AtomicBool::new(false);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Spawns hold it shared, reaping of unowned zombies holds it exclusively.
pub(crate) static SPAWN_GATE: RwLock<()> = RwLock::new(());

/// What is alive now: process groups of running children, sandbox roots, and the pids a
/// [`std::process::Child`] will reap.
#[derive(Default)]
struct Live {
    groups: HashMap<u64, Pid>,
    roots: HashMap<u64, PathBuf>,
    owned: HashSet<i32>,
}

static LIVE: Mutex<Option<Live>> = Mutex::new(None);
static CANCEL: Mutex<Cancelled> = Mutex::new(Cancelled {
    processes: 0,
    directories: 0,
});

thread_local! {
    /// The processes lint killed for runs made on this thread, while [`witness`] collects.
    static WITNESSED: RefCell<Option<Vec<Witnessed>>> = const { RefCell::new(None) };
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn with_live<R>(f: impl FnOnce(&mut Live) -> R) -> R {
    let mut guard = lock(&LIVE);
    f(guard.get_or_insert_with(Live::default))
}

/// Makes this process a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so that orphans of
/// the tools it runs are reparented to it, not to init, and it reaps them.
///
/// Process-wide and permanent: call it from a program that starts children only through
/// sandboxes (`aoi lint` does), since from then on lint reaps every zombie child no sandbox
/// owns.
pub fn become_subreaper() -> std::io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    SUBREAPER.store(true, Ordering::SeqCst);
    Ok(())
}

/// True once [`cancel_all`] was called.
pub fn cancelled() -> bool {
    CANCELLED.load(Ordering::SeqCst)
}

/// A fresh id for a sandbox or a run.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The marker value common to every run of sandbox `sandbox`, ending in `-`.
pub(crate) fn sandbox_prefix(sandbox: u64) -> String {
    format!("{}-{sandbox}-", std::process::id())
}

/// The error every refused sandbox or spawn gets after [`cancel_all`].
pub(crate) fn cancelled_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "lint was cancelled")
}

/// Records a sandbox root; `Err` (and nothing recorded) once lint is cancelled.
pub(crate) fn register_root(id: u64, root: &Path) -> std::io::Result<()> {
    with_live(|live| live.roots.insert(id, root.to_path_buf()));
    // Checked after recording, so that a concurrent cancel either sees the root or is seen here.
    if cancelled() {
        with_live(|live| live.roots.remove(&id));
        return Err(cancelled_error());
    }
    Ok(())
}

/// Forgets a sandbox root (it was removed).
pub(crate) fn unregister_root(id: u64) {
    with_live(|live| live.roots.remove(&id));
}

/// Records a started child (its pid, which is its process group); `Err` once lint is
/// cancelled, and the caller kills it.
pub(crate) fn register_child(run: u64, pid: Pid) -> std::io::Result<()> {
    with_live(|live| {
        live.groups.insert(run, pid);
        live.owned.insert(pid.as_raw_nonzero().get());
    });
    if cancelled() {
        return Err(cancelled_error());
    }
    Ok(())
}

/// Forgets a child once its [`std::process::Child`] reaped it.
pub(crate) fn unregister_child(run: u64, pid: Pid) {
    with_live(|live| {
        live.groups.remove(&run);
        live.owned.remove(&pid.as_raw_nonzero().get());
    });
}

/// Runs `f`, returning with its result every process lint killed for a run made on this
/// thread meanwhile, with the run's command line: which probe left what behind.
pub fn witness<R>(f: impl FnOnce() -> R) -> (R, Vec<Witnessed>) {
    let outer = WITNESSED.with(|w| w.borrow_mut().replace(Vec::new()));
    let result = f();
    let seen = WITNESSED.with(|w| std::mem::replace(&mut *w.borrow_mut(), outer));
    (result, seen.unwrap_or_default())
}

/// Notes, for [`witness`], that `argv`'s run left `escapees` behind.
pub(crate) fn report_witnessed(argv: &[String], escapees: &[Escapee]) {
    if escapees.is_empty() {
        return;
    }
    WITNESSED.with(|w| {
        if let Some(seen) = w.borrow_mut().as_mut() {
            seen.extend(escapees.iter().map(|e| Witnessed {
                argv: argv.to_vec(),
                escapee: e.clone(),
            }));
        }
    });
}

/// Which processes a sweep takes.
pub(crate) struct Selector<'a> {
    /// `MARKER=value` exactly, or (with `prefix`) `MARKER=value…`.
    pub marker: String,
    /// Match the marker's value as a prefix.
    pub prefix: bool,
    /// Also take processes without any marker whose working directory is inside one of these.
    pub roots: &'a [PathBuf],
    /// Also take every child of lint (when cancelling).
    pub children: bool,
    /// Only processes started no earlier than this (`/proc/PID/stat` start time, in clock
    /// ticks since boot): a run's processes are no older than its first, so every older
    /// process is passed over after one read of its `stat`, its environment never read.
    pub born_since: Option<u64>,
}

impl Selector<'_> {
    fn takes(&self, proc_dir: &Path, ppid: i32, me: i32) -> bool {
        if self.children && ppid == me {
            return true;
        }
        let value = aoi::process::env_value(proc_dir, MARKER);
        if let Some(value) = &value {
            let wanted = self.marker.as_bytes();
            if value == wanted || (self.prefix && value.starts_with(wanted)) {
                return true;
            }
        }
        if value.is_some() || self.roots.is_empty() {
            // Another run's process: that run sweeps it.
            return false;
        }
        fs::read_link(proc_dir.join("cwd"))
            .is_ok_and(|cwd| self.roots.iter().any(|root| cwd.starts_with(root)))
    }
}

/// One process a scan took.
struct Found {
    pid: Pid,
    pgid: i32,
    command: String,
    pidfd: Option<OwnedFd>,
}

/// Every live process of this user that `select` takes; reaps unowned zombie children on
/// the way when lint is a subreaper.
fn scan(select: &Selector<'_>) -> Vec<Found> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut found = Vec::new();
    let mut zombies = Vec::new();
    for (raw, dir) in aoi::process::others() {
        let Some(pid) = Pid::from_raw(raw) else {
            continue;
        };
        let Some(stat) = aoi::process::stat(&dir) else {
            continue;
        };
        if stat.is_dead() {
            if stat.ppid == me {
                zombies.push(pid);
            }
            continue;
        }
        if select.born_since.is_some_and(|t| stat.started < t) && stat.ppid != me {
            continue;
        }
        // Another user's process: its environment cannot be read, and it cannot be killed.
        if select.takes(&dir, stat.ppid, me) {
            found.push(Found {
                pid,
                pgid: stat.pgid,
                command: stat.command,
                pidfd: pidfd_open(pid, PidfdFlags::empty()).ok(),
            });
        }
    }
    if !zombies.is_empty() {
        reap_unowned(zombies.into_iter().map(WaitTarget::Pid));
    }
    found
}

enum WaitTarget<'a> {
    Pid(Pid),
    Fd(Pid, &'a OwnedFd),
}

/// Reaps (without blocking) each target that is a child of lint no sandbox's `Child` owns;
/// only when lint is a subreaper, since otherwise such children are not lint's to reap.
fn reap_unowned<'a>(targets: impl Iterator<Item = WaitTarget<'a>>) {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return;
    }
    let _gate = SPAWN_GATE.write().unwrap_or_else(|p| p.into_inner());
    let owned = with_live(|live| live.owned.clone());
    for target in targets {
        let (pid, id) = match target {
            WaitTarget::Pid(pid) => (pid, WaitId::Pid(pid)),
            WaitTarget::Fd(pid, fd) => (pid, WaitId::PidFd(fd.as_fd())),
        };
        if owned.contains(&pid.as_raw_nonzero().get()) {
            continue;
        }
        // ECHILD: not lint's child (its parent is alive and reaps it).
        let _ = waitid(id, WaitIdOptions::EXITED | WaitIdOptions::NOHANG);
    }
}

/// Kills everything `select` takes, scan after scan until one finds nothing, waits for it to
/// die and reaps what is lint's to reap; returns each process killed with its process group.
pub(crate) fn sweep(select: &Selector<'_>) -> Vec<(Escapee, i32)> {
    let mut killed: Vec<(Escapee, i32)> = Vec::new();
    let mut seen: HashSet<i32> = HashSet::new();
    for _ in 0..ROUNDS {
        let found = scan(select);
        // One killed already and still alive (in uninterruptible sleep, say) is not chased.
        let fresh: Vec<Found> = found
            .into_iter()
            .filter(|f| !seen.contains(&f.pid.as_raw_nonzero().get()))
            .collect();
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
        wait_for_death(&fresh, DEATH_WAIT);
        reap_unowned(fresh.iter().map(|f| match &f.pidfd {
            Some(fd) => WaitTarget::Fd(f.pid, fd),
            None => WaitTarget::Pid(f.pid),
        }));
        for f in fresh {
            let raw = f.pid.as_raw_nonzero().get();
            if seen.insert(raw) {
                killed.push((
                    Escapee {
                        pid: raw.unsigned_abs(),
                        command: f.command,
                    },
                    f.pgid,
                ));
            }
        }
    }
    killed
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

/// `duration` as poll's timeout.
pub(crate) fn timespec(duration: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(duration.subsec_nanos()),
    }
}

/// Kills every process of this lint (every live process group, every marked process, every
/// child of lint) and removes every sandbox directory; from then on no sandbox can be made and
/// nothing spawned. For SIGINT/SIGTERM to `aoi lint`. Safe to call from several threads and
/// more than once: a second call waits for the first, then sweeps again (for anything a check
/// thread started meanwhile) and returns the running totals.
pub fn cancel_all() -> Cancelled {
    let mut totals = lock(&CANCEL);
    CANCELLED.store(true, Ordering::SeqCst);
    let (groups, roots): (Vec<Pid>, Vec<PathBuf>) = with_live(|live| {
        (
            live.groups.values().copied().collect(),
            live.roots.values().cloned().collect(),
        )
    });
    for group in groups {
        let _ = kill_process_group(group, Signal::KILL);
    }
    let select = Selector {
        marker: format!("{}-", std::process::id()),
        prefix: true,
        roots: &roots,
        children: true,
        born_since: aoi::process::start_time(std::process::id()),
    };
    totals.processes += sweep(&select).len();
    for root in &roots {
        if remove_tree(root) {
            totals.directories += 1;
        }
    }
    *totals
}

/// Removes `root` and everything in it, giving back permissions a tool took away; true when
/// something was removed.
/// What earlier lint runs left that were killed outright (SIGKILL, an OOM kill: no chance to
/// clean up): sandbox roots `aoi-lint-<pid>-…` under the temp dir, and processes of their
/// runs ([`MARKER`] `<pid>-…`), for every such `<pid>` that is no longer alive. Removes and
/// kills them, and returns how many of each; a lint that is still running, or whose pid was
/// taken by another process since, is left alone (its things are its to clean). Nothing of
/// another user's is touched: their processes' environments are unreadable, and a sandbox
/// root is mode 0700.
pub fn clean_up_after_dead_runs() -> (usize, usize) {
    let gone = |pid: &str| {
        pid.parse::<u32>()
            .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
    };
    let mut roots = 0;
    for dirent in fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = dirent.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("aoi-lint-"))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if gone(pid) && dirent.file_type().is_ok_and(|t| t.is_dir()) && remove_tree(&dirent.path())
        {
            roots += 1;
        }
    }
    let mut processes = 0;
    for (raw, dir) in aoi::process::others() {
        let Some(value) = aoi::process::env_value(&dir, MARKER) else {
            continue;
        };
        let owner = value.split(|&b| b == b'-').next().unwrap_or_default();
        if std::str::from_utf8(owner).is_ok_and(gone) {
            if let Some(pid) = Pid::from_raw(raw) {
                if kill_process(pid, Signal::KILL).is_ok() {
                    processes += 1;
                }
            }
        }
    }
    (roots, processes)
}

pub(crate) fn remove_tree(root: &Path) -> bool {
    match fs::remove_dir_all(root) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => {
            make_writable(root);
            fs::remove_dir_all(root).is_ok()
        }
    }
}

fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(listing) = fs::read_dir(dir) {
        for dirent in listing.flatten() {
            if dirent.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                make_writable(&dirent.path());
            }
        }
    }
}
