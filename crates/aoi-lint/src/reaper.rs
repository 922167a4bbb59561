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
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::Duration;

use aoi_contain::{Reapable, Selector, Sweep};
use rustix::process::{
    kill_process, kill_process_group, waitid, Pid, Signal, WaitId, WaitIdOptions,
};

/// The environment variable that marks every process of one run.
pub const MARKER: &str = "AOI_LINT_RUN";

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
    /// The run's command line, as a sandbox run records it.
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

/// Reaps (without blocking) each target that is a child of lint no sandbox's `Child` owns;
/// only when lint is a subreaper, since otherwise such children are not lint's to reap.
fn reap_unowned(targets: &[Reapable<'_>]) {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return;
    }
    let _gate = SPAWN_GATE.write().unwrap_or_else(|p| p.into_inner());
    let owned = with_live(|live| live.owned.clone());
    for target in targets {
        if owned.contains(&target.pid().as_raw_nonzero().get()) {
            continue;
        }
        let id = match target {
            Reapable::Pid(pid) => WaitId::Pid(*pid),
            Reapable::Fd(_, fd) => WaitId::PidFd(fd.as_fd()),
        };
        // ECHILD: not lint's child (its parent is alive and reaps it).
        let _ = waitid(id, WaitIdOptions::EXITED | WaitIdOptions::NOHANG);
    }
}

/// Kills everything `select` takes (its `variable` is [`MARKER`]), scan after scan until one
/// finds nothing new, waits for it to die and reaps what is lint's to reap
/// ([`aoi_contain::sweep`]); returns each process killed with its process group.
pub(crate) fn sweep(select: Selector<'_>) -> Vec<(Escapee, i32)> {
    aoi_contain::sweep(&Sweep {
        select,
        death_wait: Some(DEATH_WAIT),
        reap: Some(&reap_unowned),
    })
    .into_iter()
    .map(|k| {
        (
            Escapee {
                pid: k.pid,
                command: k.command,
            },
            k.pgid,
        )
    })
    .collect()
}

/// A selector of this lint's processes: those whose [`MARKER`] is `value` (or starts with it).
pub(crate) fn marked(value: &str, prefix: bool) -> Selector<'_> {
    Selector {
        variable: MARKER,
        value,
        prefix,
        roots: &[],
        children: false,
        born_since: None,
        after_pid: None,
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
    let mine = format!("{}-", std::process::id());
    let select = Selector {
        roots: &roots,
        children: true,
        born_since: aoi_contain::proc::start_time(std::process::id()),
        ..marked(&mine, true)
    };
    totals.processes += sweep(select).len();
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
    for (raw, dir) in aoi_contain::proc::others() {
        let Some(value) = aoi_contain::proc::env_value(&dir, MARKER) else {
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
