//! The calls each Streamable HTTP session has running, so that ending the session ends them.
//!
//! When a client DELETEs its session, rmcp ends the session's service only after waiting up
//! to 5 s for its handlers to answer, and only then cancels them: a call that never answers by
//! itself (a CLI that hangs) would run on for those seconds, its CLI and helpers with it. So
//! every call made over HTTP takes its cancellation from its session's token too, and the
//! gate cancels that token on DELETE, before rmcp sees the request: the call ends at once as a
//! cancelled one, which kills its process group and its marked descendants ([`crate::reap`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// The sessions with calls running now, each with the token its calls listen to.
#[derive(Debug, Default)]
pub struct SessionCalls {
    running: Mutex<HashMap<String, Running>>,
}

#[derive(Debug)]
struct Running {
    token: CancellationToken,
    calls: usize,
}

impl SessionCalls {
    fn with_running<R>(&self, f: impl FnOnce(&mut HashMap<String, Running>) -> R) -> R {
        let mut guard = self.running.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// A call of session `session` begins: its claim, which cancels `request` (rmcp's token
    /// for the call) or the session's end, whichever comes first.
    pub fn begin(self: &Arc<Self>, session: &str, request: &CancellationToken) -> SessionCall {
        let session_token = self.with_running(|running| {
            let entry = running
                .entry(session.to_owned())
                .or_insert_with(|| Running {
                    token: CancellationToken::new(),
                    calls: 0,
                });
            entry.calls += 1;
            entry.token.clone()
        });
        let token = session_token.child_token();
        let (request, call) = (request.clone(), token.clone());
        // Ends with the call at the latest: the claim cancels `token` when dropped.
        tokio::spawn(async move {
            tokio::select! {
                () = request.cancelled() => call.cancel(),
                () = call.cancelled() => {}
            }
        });
        SessionCall {
            calls: self.clone(),
            session: session.to_owned(),
            token,
        }
    }

    /// Session `session` ended (its client deleted it): every call it has running is
    /// cancelled now. Returns how many there were.
    pub fn end(&self, session: &str) -> usize {
        let Some(running) = self.with_running(|running| running.remove(session)) else {
            return 0;
        };
        running.token.cancel();
        running.calls
    }
}

/// One running call's claim on its session: its cancellation token. Dropping it (the call
/// ended) forgets the session once its last call ended.
#[derive(Debug)]
pub struct SessionCall {
    calls: Arc<SessionCalls>,
    session: String,
    token: CancellationToken,
}

impl SessionCall {
    /// The token the call stops on: its request was cancelled, or its session ended.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for SessionCall {
    fn drop(&mut self) {
        self.token.cancel();
        self.calls.with_running(|running| {
            if let Some(entry) = running.get_mut(&self.session) {
                entry.calls = entry.calls.saturating_sub(1);
                if entry.calls == 0 {
                    running.remove(&self.session);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ending_a_session_cancels_its_calls_and_no_other() {
        let calls = Arc::new(SessionCalls::default());
        let request = CancellationToken::new();
        let first = calls.begin("a", &request);
        let second = calls.begin("a", &request);
        let other = calls.begin("b", &CancellationToken::new());
        assert_eq!(calls.end("a"), 2);
        assert!(first.token().is_cancelled() && second.token().is_cancelled());
        assert!(!other.token().is_cancelled());
        assert!(!request.is_cancelled(), "rmcp's token is not the session's");
        assert_eq!(calls.end("a"), 0, "a session ends once");
    }

    #[tokio::test]
    async fn a_cancelled_request_cancels_its_call_and_a_finished_session_is_forgotten() {
        let calls = Arc::new(SessionCalls::default());
        let request = CancellationToken::new();
        let call = calls.begin("a", &request);
        request.cancel();
        // The forwarding task runs on this runtime; the token is cancelled once it has.
        call.token().cancelled().await;
        drop(call);
        assert_eq!(calls.end("a"), 0, "no call of `a` is running");
    }
}
