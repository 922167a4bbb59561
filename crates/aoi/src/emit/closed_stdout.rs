//! Whether stdout is open at all: a run started with fd 1 closed (`tool >&-`) cannot write its
//! stream, and must say so with exit 74 (§6 `EX_IOERR`) instead of exiting 0 having written
//! nothing.
//!
//! Asking at run time is not enough. Before `main`, Rust's runtime reopens a closed fd 0, 1 or
//! 2 on `/dev/null` (so that a later `open` cannot land on it), after which fd 1 looks like an
//! ordinary `tool > /dev/null`; and writes to a fd 1 closed later are swallowed by std's
//! `Stdout`, which treats `EBADF` as success. So the state of fd 1 is also probed once when the
//! process is loaded, before `main` and the runtime run: a function in the platform's
//! initializer section (where std itself captures `argv` on glibc) makes one `fcntl(1,
//! F_GETFD)` and records the answer.
//!
//! The initializer is the one item of the crate that needs `unsafe_code`: the lint flags every
//! `#[link_section]`, since an item placed in the wrong section is undefined behaviour. The
//! section names are the ones the platform's loader runs (`.init_array` on ELF,
//! `__DATA,__mod_init_func` on Mach-O); the function takes no arguments, touches only an atomic
//! and makes one system call through rustix, with no allocation and nothing from std's runtime.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set before `main` when fd 1 was not open as the process started.
static CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// True when fd 1 is not an open file descriptor right now.
fn closed_now() -> bool {
    #[cfg(unix)]
    {
        rustix::io::fcntl_getfd(rustix::stdio::stdout()) == Err(rustix::io::Errno::BADF)
    }
    #[cfg(not(unix))]
    {
        false
    }
}

// Where the loader's initializer section is known to run before `main`; elsewhere only the
// run-time check applies.
#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
mod probe {
    use std::sync::atomic::Ordering;

    extern "C" fn probe_stdout_at_load() {
        super::CLOSED_AT_START.store(super::closed_now(), Ordering::Relaxed);
    }

    /// The loader runs every function pointer in this section before `main`.
    #[allow(unsafe_code)]
    #[used]
    #[cfg_attr(not(target_vendor = "apple"), link_section = ".init_array")]
    #[cfg_attr(target_vendor = "apple", link_section = "__DATA,__mod_init_func")]
    pub(super) static PROBE: extern "C" fn() = probe_stdout_at_load;

    /// Reading the initializer's slot makes the linker keep the object it lives in.
    pub(super) fn keep() {
        std::hint::black_box(PROBE as usize);
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
mod probe {
    pub(super) fn keep() {}
}

/// True when stdout cannot carry a stream: fd 1 was closed when the process started, or is
/// closed now.
pub(crate) fn stdout_closed() -> bool {
    probe::keep();
    CLOSED_AT_START.load(Ordering::Relaxed) || closed_now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_stdout_is_not_closed() {
        // The test harness runs with fd 1 open (a pipe or a terminal); the probe ran at load.
        assert!(!stdout_closed());
    }
}
