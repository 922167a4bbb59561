//! Cooperative cancellation: SIGINT/SIGTERM set a flag that the emitter and the tool observe at
//! safe points, so the run can end with a `reason:"cancelled"` summary (spec §4.2, §7).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The signal that cancelled a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// SIGINT: exit 130.
    Interrupt,
    /// SIGTERM: exit 143.
    Terminate,
    /// Not a signal: the `--timeout` deadline passed. Exit 124, reason `timeout`.
    Deadline,
}

impl Signal {
    /// The conventional exit code, 128 + the signal number (§6).
    pub const fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => crate::wire::exit_code::SIGINT,
            Signal::Terminate => crate::wire::exit_code::SIGTERM,
            Signal::Deadline => crate::wire::exit_code::TIMEOUT,
        }
    }

    /// The signal's name, e.g. `"SIGINT"`.
    pub const fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Deadline => "deadline",
        }
    }
}

/// A handle on the run's cancellation state, cheap to clone and safe to share with threads.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// 0: running; otherwise the signal, so the hot path is one relaxed load.
    state: AtomicU8,
    lock: Mutex<()>,
    wake: Condvar,
}

impl CancelToken {
    /// A token that nothing has cancelled yet.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// The signal that cancelled the run, if any.
    #[inline]
    pub fn cancelled(&self) -> Option<Signal> {
        match self.inner.state.load(Ordering::Relaxed) {
            0 => None,
            1 => Some(Signal::Interrupt),
            2 => Some(Signal::Terminate),
            _ => Some(Signal::Deadline),
        }
    }

    /// Marks the run cancelled and wakes every waiter. The first signal wins.
    pub fn cancel(&self, signal: Signal) {
        let value = match signal {
            Signal::Interrupt => 1,
            Signal::Terminate => 2,
            Signal::Deadline => 3,
        };
        let _ = self
            .inner
            .state
            .compare_exchange(0, value, Ordering::SeqCst, Ordering::SeqCst);
        let _guard = self.inner.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.inner.wake.notify_all();
    }

    /// Sleeps for `duration` unless cancelled first; returns the signal when cancelled.
    ///
    /// Unbounded commands use this between heartbeats so that a signal ends them at once.
    pub fn sleep(&self, duration: Duration) -> Option<Signal> {
        let guard = self.inner.lock.lock().unwrap_or_else(|p| p.into_inner());
        let _guard = self
            .inner
            .wake
            .wait_timeout_while(guard, duration, |_| self.cancelled().is_none())
            .unwrap_or_else(|p| p.into_inner());
        self.cancelled()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn sleep_wakes_on_cancel_and_the_first_signal_wins() {
        let token = CancelToken::new();
        assert_eq!(token.sleep(Duration::from_millis(1)), None);
        let other = token.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            other.cancel(Signal::Terminate);
            other.cancel(Signal::Interrupt);
        });
        let start = Instant::now();
        assert_eq!(
            token.sleep(Duration::from_secs(30)),
            Some(Signal::Terminate)
        );
        assert!(start.elapsed() < Duration::from_secs(30));
        t.join().unwrap();
        assert_eq!(token.cancelled().map(Signal::exit_code), Some(143));
    }
}
