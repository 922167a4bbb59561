//! Processes a run leaves behind: finding them, killing them, reaping them, and ending
//! everything at once when lint itself is cancelled.
//!
//! A process group is not a container: a descendant can leave it (`setsid`, a double fork into
//! a new session) and outlive the run, where a group kill never reaches it. So every process
//! lint starts carries a per-run variable in its environment, [`MARKER`]`=<lint pid>-<reaper>-<sandbox>-<run>`
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
//! A [`Reaper`], held by the caller, is one lint's state: its live process groups and sandbox
//! roots, and whether it was cancelled. [`Reaper::cancel_all`] is the end of everything of that
//! lint: every live process group and every marked process of it is killed, and every sandbox
//! directory removed; afterwards none of its sandboxes can be made and nothing spawned.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::thread::ThreadId;
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

/// What [`Reaper::cancel_all`] ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cancelled {
    /// Processes killed (group members counted once each only when a scan saw them).
    pub processes: usize,
    /// Sandbox directories removed.
    pub directories: usize,
}

// Three facts belong to the process, not to one lint, and stay process-wide: whether it is a
// subreaper (a `prctl` of the process), which of its children a `Child` will reap (a process
// has one set of children, whichever lint started them), and the ids that make markers unique
// (two lints in one process must never share one).
static SUBREAPER: AtomicBool = AtomicBool::new(false);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static OWNED: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Spawns hold it shared, reaping of unowned zombies holds it exclusively.
pub(crate) static SPAWN_GATE: RwLock<()> = RwLock::new(());

/// What is alive now in one lint: process groups of running children and sandbox roots.
#[derive(Default)]
struct Live {
    groups: HashMap<u64, Pid>,
    roots: HashMap<u64, PathBuf>,
}

/// One lint's processes and sandboxes, and the end of all of them at once.
///
/// The caller holds it (in [`crate::lint::Options`], which hands it to every sandbox of the
/// lint) and keeps a clone where it handles signals, so that
/// [`Reaper::cancel_all`] ends exactly this lint: its marker scan takes only the processes of
/// this reaper's runs (`<pid>-<reaper>-…`), and another lint in the same process, or a test
/// beside it, goes on.
pub struct Reaper {
    id: u64,
    cancelled: AtomicBool,
    live: Mutex<Live>,
    totals: Mutex<Cancelled>,
    /// The processes killed for runs made on each thread, while [`Reaper::witness`] collects
    /// there.
    witnessed: Mutex<HashMap<ThreadId, Vec<Witnessed>>>,
}

impl std::fmt::Debug for Reaper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reaper")
            .field("id", &self.id)
            .field("cancelled", &self.cancelled())
            .finish_non_exhaustive()
    }
}

impl Default for Reaper {
    fn default() -> Self {
        Reaper::new()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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

/// A fresh id for a reaper, a sandbox or a run, unique in this process.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The error every refused sandbox or spawn gets after [`Reaper::cancel_all`].
pub(crate) fn cancelled_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "lint was cancelled")
}

/// Records a started child of this process, which its [`std::process::Child`] will reap, so
/// that [`reap_unowned`] leaves it alone.
pub(crate) fn own(pid: Pid) {
    lock(&OWNED)
        .get_or_insert_with(HashSet::new)
        .insert(pid.as_raw_nonzero().get());
}

/// Forgets a child its [`std::process::Child`] reaped.
pub(crate) fn disown(pid: Pid) {
    if let Some(owned) = lock(&OWNED).as_mut() {
        owned.remove(&pid.as_raw_nonzero().get());
    }
}

impl Reaper {
    /// A reaper with nothing alive yet.
    pub fn new() -> Reaper {
        Reaper {
            id: next_id(),
            cancelled: AtomicBool::new(false),
            live: Mutex::new(Live::default()),
            totals: Mutex::new(Cancelled::default()),
            witnessed: Mutex::new(HashMap::new()),
        }
    }

    /// True once [`Reaper::cancel_all`] was called.
    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// The marker value common to every run of this reaper, ending in `-`.
    fn prefix(&self) -> String {
        format!("{}-{}-", std::process::id(), self.id)
    }

    /// The marker value common to every run of sandbox `sandbox`, ending in `-`.
    pub(crate) fn sandbox_prefix(&self, sandbox: u64) -> String {
        format!("{}{sandbox}-", self.prefix())
    }

    /// Records a sandbox root; `Err` (and nothing recorded) once cancelled.
    pub(crate) fn register_root(&self, id: u64, root: &Path) -> std::io::Result<()> {
        lock(&self.live).roots.insert(id, root.to_path_buf());
        // Checked after recording, so that a concurrent cancel either sees the root or is seen
        // here.
        if self.cancelled() {
            lock(&self.live).roots.remove(&id);
            return Err(cancelled_error());
        }
        Ok(())
    }

    /// Forgets a sandbox root (it was removed).
    pub(crate) fn unregister_root(&self, id: u64) {
        lock(&self.live).roots.remove(&id);
    }

    /// Records a started child (its pid, which is its process group); `Err` once cancelled,
    /// and the caller kills it.
    pub(crate) fn register_child(&self, run: u64, pid: Pid) -> std::io::Result<()> {
        lock(&self.live).groups.insert(run, pid);
        own(pid);
        if self.cancelled() {
            return Err(cancelled_error());
        }
        Ok(())
    }

    /// Forgets a child once its [`std::process::Child`] reaped it.
    pub(crate) fn unregister_child(&self, run: u64, pid: Pid) {
        lock(&self.live).groups.remove(&run);
        disown(pid);
    }

    /// Runs `f`, returning with its result every process this reaper killed for a run made on
    /// this thread meanwhile, with the run's command line: which probe left what behind.
    pub fn witness<R>(&self, f: impl FnOnce() -> R) -> (R, Vec<Witnessed>) {
        let thread = std::thread::current().id();
        let outer = lock(&self.witnessed).insert(thread, Vec::new());
        let result = f();
        let mut witnessed = lock(&self.witnessed);
        let seen = match outer {
            Some(outer) => witnessed.insert(thread, outer),
            None => witnessed.remove(&thread),
        };
        (result, seen.unwrap_or_default())
    }

    /// Notes, for [`Reaper::witness`], that `argv`'s run left `escapees` behind.
    pub(crate) fn report_witnessed(&self, argv: &[String], escapees: &[Escapee]) {
        if escapees.is_empty() {
            return;
        }
        if let Some(seen) = lock(&self.witnessed).get_mut(&std::thread::current().id()) {
            seen.extend(escapees.iter().map(|e| Witnessed {
                argv: argv.to_vec(),
                escapee: e.clone(),
            }));
        }
    }

    /// Kills every process of this lint (every live process group, every process of its
    /// runs, every child of lint) and removes every sandbox directory; from then on no
    /// sandbox can be made and nothing spawned through this reaper. For SIGINT/SIGTERM to
    /// `aoi lint`. Safe to call from several threads and more than once: a second call waits
    /// for the first, then sweeps again (for anything a check thread started meanwhile) and
    /// returns the running totals.
    pub fn cancel_all(&self) -> Cancelled {
        let mut totals = lock(&self.totals);
        self.cancelled.store(true, Ordering::SeqCst);
        let (groups, roots): (Vec<Pid>, Vec<PathBuf>) = {
            let live = lock(&self.live);
            (
                live.groups.values().copied().collect(),
                live.roots.values().cloned().collect(),
            )
        };
        for group in groups {
            let _ = kill_process_group(group, Signal::KILL);
        }
        let mine = self.prefix();
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
}

/// Reaps (without blocking) each target that is a child of lint no sandbox's `Child` owns;
/// only when lint is a subreaper, since otherwise such children are not lint's to reap.
fn reap_unowned(targets: &[Reapable<'_>]) {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return;
    }
    let _gate = SPAWN_GATE.write().unwrap_or_else(|p| p.into_inner());
    let owned = lock(&OWNED).clone().unwrap_or_default();
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

/// Removes `root` and everything in it, giving back permissions a tool took away; true when
/// something was removed.
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
