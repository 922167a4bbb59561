//! Writing a stream: the [`Emitter`], cancellation, and the process [`Harness`].

mod cancel;
mod closed_stdout;
mod emitter;
mod flatten;
pub mod harness;

pub use cancel::{CancelToken, Signal};
pub(crate) use emitter::new_run_id;
pub use emitter::{EmitError, Emitter, EmitterBuilder, Finished, Outcome};
pub(crate) use harness::refuse_closed_stdout;
pub use harness::{drive, Failure, Harness, RunResult};
