//! Read-only memory maps of the files `grep` searches, made safe against the one hazard they
//! bring: a file that shrinks while it is mapped.
//!
//! A map lets `grep` search a file's pages where the kernel keeps them, with no copy into a
//! buffer (the copy was half of a search's time: `bench/README.md`). The hazard is the one
//! ripgrep documents for its `--mmap`: when another process truncates the file, touching a
//! page past its new end raises `SIGBUS`, which kills the process. A tool an agent runs must
//! not die of a log file rotated by `copytruncate`, so this module installs a `SIGBUS`
//! handler (once, chained to the one before it) that, for a fault inside a map made here,
//! puts zero pages in place of the map's pages from the fault on and marks the map
//! [`Mapped::shrank`]. The search goes on over zeros and the caller, seeing the mark, drops
//! what it would report after the fault and reports the file as changed instead. A fault
//! anywhere else is passed to the handler that was there before (for the standard library's,
//! a stack overflow report), or to the default action.
//!
//! This is the crate's only `unsafe` code.
#![allow(unsafe_code)]

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Maps that can be registered at once: one a worker, and workers are one per core (up to
/// this many maps; a worker finding none free reads the file instead).
const SLOTS: usize = 256;

/// A registered map: its address range, and whether a fault was caught in it.
#[derive(Debug)]
struct Slot {
    /// Taken by a map (set before the range, cleared after it).
    taken: AtomicBool,
    /// The map's first byte; 0 while no map is registered.
    start: AtomicUsize,
    /// One past the map's last byte.
    end: AtomicUsize,
    shrank: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    taken: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    shrank: AtomicBool::new(false),
};

static SLOT: [Slot; SLOTS] = [FREE; SLOTS];

/// The page size, read when the handler is installed (`sysconf` is not safe in a handler).
static PAGE: AtomicUsize = AtomicUsize::new(0);

/// Whether the handler is in place, decided once.
static HANDLED: OnceLock<bool> = OnceLock::new();

/// The `SIGBUS` action before ours, set before ours is installed (a handler may read a
/// `OnceLock`: an atomic load).
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// A file's bytes, mapped read-only and registered with the `SIGBUS` handler.
#[derive(Debug)]
pub struct Mapped {
    map: memmap2::Mmap,
    slot: &'static Slot,
}

impl Mapped {
    /// Maps the first `len` bytes of `file` (its size when it was read), or `None` when it
    /// cannot be mapped safely here (no handler, no free slot, a file the kernel will not
    /// map): the caller then reads it.
    pub fn new(file: &File, len: usize) -> Option<Mapped> {
        if len == 0 || !install() {
            return None;
        }
        let slot = SLOT.iter().find(|s| {
            s.taken
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        })?;
        // SAFETY: the map is read-only and private. The file may change while it is mapped
        // (as with any read); when it shrinks, the pages past its end are replaced by zero
        // pages in the `SIGBUS` handler before any access to them completes, so no access
        // faults and the caller learns of it through `shrank`.
        let map = match unsafe { memmap2::MmapOptions::new().len(len).map(file) } {
            Ok(map) => map,
            Err(_) => {
                slot.taken.store(false, Ordering::Release);
                return None;
            }
        };
        let start = map.as_ptr() as usize;
        slot.shrank.store(false, Ordering::Relaxed);
        slot.end.store(start + len, Ordering::Relaxed);
        slot.start.store(start, Ordering::Release);
        Some(Mapped { map, slot })
    }

    /// The mapped bytes: the file's, and zeros from where it was cut when it shrank.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Whether the file was found shorter than its map while it was read: every byte read
    /// since then may be a zero that was never in the file.
    pub fn shrank(&self) -> bool {
        self.watch().shrank()
    }

    /// The map's mark, for code that reads the bytes through a borrow of its own. It means
    /// nothing once the map is dropped (its slot may be another map's).
    pub fn watch(&self) -> Watch {
        Watch(&self.slot.shrank)
    }
}

/// A map's [`Mapped::shrank`] mark, held apart from the map.
#[derive(Clone, Copy, Debug)]
pub struct Watch(&'static AtomicBool);

impl Watch {
    /// See [`Mapped::shrank`].
    pub fn shrank(self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // Unregistered before `map` is unmapped (it is dropped after this body runs).
        self.slot.start.store(0, Ordering::Release);
        self.slot.end.store(0, Ordering::Relaxed);
        self.slot.taken.store(false, Ordering::Release);
    }
}

/// Installs the handler once; false when it could not be installed (maps are then not used).
fn install() -> bool {
    *HANDLED.get_or_init(|| {
        // SAFETY: `sysconf` and `sigaction` with valid arguments.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page <= 0 {
                return false;
            }
            PAGE.store(page as usize, Ordering::Relaxed);
            let mut before: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut before) != 0 {
                return false;
            }
            let _ = PREVIOUS.set(before);
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_bus as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut ours.sa_mask);
            libc::sigaction(libc::SIGBUS, &ours, std::ptr::null_mut()) == 0
        }
    })
}

/// The `SIGBUS` handler. Only atomics, `mmap` and `sigaction` (system calls) are used here.
extern "C" fn on_bus(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for slot in &SLOT {
        let start = slot.start.load(Ordering::Acquire);
        let end = slot.end.load(Ordering::Relaxed);
        if start == 0 || addr < start || addr >= end {
            continue;
        }
        let from = addr & !(page - 1);
        // SAFETY: `[from, end)` lies inside a live map of ours (it is unregistered before it
        // is unmapped, and only its own worker, now in this handler, unmaps it): replacing its
        // pages with anonymous zero pages touches no other memory.
        let zeroed = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeroed != libc::MAP_FAILED {
            slot.shrank.store(true, Ordering::Release);
            return;
        }
    }
    // Not a fault of ours: what would have happened without this handler.
    match PREVIOUS.get().copied() {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            // SAFETY: the previous handler, called as the kernel would have called it.
            unsafe {
                if p.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(p.sa_sigaction);
                    f(signal, info, context);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
                    f(signal);
                }
            }
        }
        _ => {
            // The default action: returning re-runs the access, which faults again and,
            // with the default in place, ends the process as it would have.
            // SAFETY: `sigaction` with a zeroed action (`SIG_DFL`).
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_cut_while_mapped_reads_as_zeros_and_is_marked() {
        let dir = aoi_test::temp_dir("mapped");
        let path = dir.join("cut.txt");
        let mut f = File::create(&path).unwrap();
        f.write_all(&b"abcdefgh\n".repeat(100_000)).unwrap();
        drop(f);
        let file = File::open(&path).unwrap();
        let map = Mapped::new(&file, 900_000).expect("mapped");
        assert_eq!(&map.bytes()[..9], b"abcdefgh\n");
        assert!(!map.shrank());
        // Another writer cuts the file to 10,000 bytes: the pages past it are gone.
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(10_000)
            .unwrap();
        let past: u64 = map.bytes()[500_000..].iter().map(|&b| u64::from(b)).sum();
        assert_eq!(past, 0);
        assert!(map.shrank());
        // Before the cut's page, the file's bytes are as they were.
        assert_eq!(&map.bytes()[..9], b"abcdefgh\n");
        drop(map);
        // The slot is free again and a second map of the now short file is not marked.
        let again = Mapped::new(&file, 10_000).expect("mapped");
        assert!(!again.shrank());
        assert_eq!(again.bytes().len(), 10_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
