//! Processes as Linux's `/proc` shows them, for programs that run tools and must find what a
//! run left behind: a descendant that left the process group (`setsid`) is found by the
//! marker variable it inherited.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The fields of `/proc/PID/stat` a sweep needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The command name (`comm`), at most 15 bytes.
    pub command: String,
    /// The state letter (`R`, `S`, `Z`, …).
    pub state: u8,
    /// The parent's pid.
    pub ppid: i32,
    /// The process group.
    pub pgid: i32,
    /// When it started, in clock ticks after boot.
    pub started: u64,
    /// The kernel's flags for it (`PF_*`).
    pub flags: u64,
}

impl Stat {
    /// True for a zombie or a dead process: nothing left to kill.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }

    /// True for a kernel thread (`PF_KTHREAD`): it has no environment, and is nobody's to kill.
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & 0x0020_0000 != 0
    }
}

/// Parses `PROC_DIR/stat` (e.g. `/proc/1234/stat`), read with one `read(2)`: it is a few
/// hundred bytes. `None` when the process is gone or the file is not what Linux writes.
pub fn stat(proc_dir: &Path) -> Option<Stat> {
    let mut buf = [0u8; 1024];
    let n = fs::File::open(proc_dir.join("stat"))
        .and_then(|mut f| f.read(&mut buf))
        .ok()?;
    let text = String::from_utf8_lossy(buf.get(..n)?);
    // The command name may hold spaces and parentheses: the fields follow the last `)`.
    let (head, rest) = text.rsplit_once(')')?;
    let command = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state, ppid, pgrp, …; starttime is the 20th.
    Some(Stat {
        command,
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        flags: fields.get(6)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

/// When process `pid` started, in clock ticks after boot.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(Path::new(&format!("/proc/{pid}"))).map(|s| s.started)
}

/// Every process in `/proc` but this one, as its pid and its `/proc/PID` directory.
pub fn others() -> impl Iterator<Item = (i32, PathBuf)> {
    let me = std::process::id();
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(move |dirent| {
            let pid: u32 = dirent.file_name().to_str()?.parse().ok()?;
            (pid != me).then(|| Some((i32::try_from(pid).ok()?, dirent.path())))?
        })
}

/// The pid the kernel handed out last (`/proc/sys/kernel/ns_last_pid`, in this pid
/// namespace).
pub fn last_pid() -> Option<i32> {
    fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// True when `pid` was handed out after `first` and no later than `last`: pids are given in
/// increasing order, wrapping at `pid_max`, so every descendant of process `first` born
/// before `last` was read is in that window (as long as the counter did not go round once
/// in between, which takes `pid_max` forks).
pub fn allocated_between(pid: i32, first: i32, last: i32) -> bool {
    if first <= last {
        pid > first && pid <= last
    } else {
        pid > first || pid <= last
    }
}

/// The most pids [`window`] reads one by one; a wider window is read by listing `/proc`.
const WINDOW_MAX: i32 = 4096;

/// Every process but this one whose pid was handed out after `first` and no later than
/// `last` ([`allocated_between`]), as its pid and its `/proc/PID` directory: for a narrow
/// window the pids are tried one by one (no listing of `/proc`), else `/proc` is listed.
pub fn window(first: i32, last: i32) -> Box<dyn Iterator<Item = (i32, PathBuf)>> {
    // Read once per process: a boot-time setting.
    static PID_MAX: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    let max = *PID_MAX.get_or_init(|| {
        fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|m| m.trim().parse::<i32>().ok())
            .unwrap_or(i32::MAX)
    });
    let width = if first <= last {
        last - first
    } else {
        (max - first) + last
    };
    if width > WINDOW_MAX {
        return Box::new(others().filter(move |(pid, _)| allocated_between(*pid, first, last)));
    }
    let me = i32::try_from(std::process::id()).unwrap_or(-1);
    Box::new(
        (1..=width)
            .map(move |n| {
                let pid = first.saturating_add(n);
                // Past pid_max the counter starts again from the low pids.
                if pid >= max {
                    pid - max
                } else {
                    pid
                }
            })
            .filter(move |&pid| pid > 0 && pid != me)
            .map(|pid| (pid, PathBuf::from(format!("/proc/{pid}"))))
            .filter(|(_, dir)| dir.exists()),
    )
}

/// The value of environment variable `name` in the process at `proc_dir`, when it has one
/// and its environment can be read (another user's cannot, and is not ours to touch).
pub fn env_value(proc_dir: &Path, name: &str) -> Option<Vec<u8>> {
    find_var(&environ(proc_dir)?, name)
}

/// The environment of the process at `proc_dir` (`NAME=value` entries, each ended by a NUL);
/// `None` when it cannot be read whole: another user's process, always; a process of this
/// user while it execs, for that moment. An exec replaces the memory the environment is read
/// from, so a read then is empty, or cut where the old image went away: the environment is
/// read twice, and taken only when both reads agree and it ends where an entry ends.
pub fn environ(proc_dir: &Path) -> Option<Vec<u8>> {
    let path = proc_dir.join("environ");
    let first = fs::read(&path).ok()?;
    if first.last() != Some(&0) {
        return None;
    }
    (fs::read(&path).ok()? == first).then_some(first)
}

/// The value of `name` in `environ` (as [`environ`] returns it).
pub fn find_var(environ: &[u8], name: &str) -> Option<Vec<u8>> {
    let prefix = format!("{name}=");
    environ
        .split(|&b| b == 0)
        .find_map(|var| var.strip_prefix(prefix.as_bytes()).map(<[u8]>::to_vec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_from_proc() {
        let me = stat(Path::new("/proc/self")).expect("/proc/self/stat");
        assert_eq!(
            i64::from(me.ppid),
            i64::from(std::os::unix::process::parent_id())
        );
        assert!(!me.is_dead());
        assert_eq!(start_time(std::process::id()), Some(me.started));
        assert!(others().all(|(pid, _)| pid != i32::try_from(std::process::id()).unwrap()));
    }

    #[test]
    fn pids_are_windowed_in_allocation_order_across_the_wrap() {
        assert!(allocated_between(11, 10, 20) && allocated_between(20, 10, 20));
        assert!(!allocated_between(10, 10, 20) && !allocated_between(21, 10, 20));
        // The counter wrapped at pid_max between 32760 and 5.
        assert!(allocated_between(32767, 32760, 5) && allocated_between(3, 32760, 5));
        assert!(!allocated_between(100, 32760, 5));
        let child = std::process::Command::new("true").spawn().expect("true");
        let pid = i32::try_from(child.id()).unwrap();
        let last = last_pid().expect("ns_last_pid");
        assert!(
            allocated_between(pid, pid - 1, last),
            "{pid} in ({}, {last}]",
            pid - 1
        );
        assert!(
            window(pid - 1, last).any(|(p, _)| p == pid),
            "the child is found in its window"
        );
        let _ = child.wait_with_output();
    }

    #[test]
    fn a_childs_marker_is_read_from_its_environment() {
        use std::io::BufRead;
        // The line comes once the child runs its own program (before exec it still has
        // this process's environment).
        let mut child = std::process::Command::new("sh")
            // It stays in sh (no exec to race with the read) until killed.
            .args(["-c", "echo ready; while :; do sleep 1; done"])
            .env("AOI_PROCESS_TEST", "run-7")
            // Its `sleep` outlives the kill of `sh` for up to a second: it holds no stream of
            // the test's.
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("ready");
        let dir = PathBuf::from(format!("/proc/{}", child.id()));
        let value = env_value(&dir, "AOI_PROCESS_TEST");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(value.as_deref(), Some(&b"run-7"[..]));
    }
}
