//! Store work that may block, run from a request's task.

use std::panic::{catch_unwind, AssertUnwindSafe};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Why the work gave no answer: it panicked.
#[derive(Debug, thiserror::Error)]
#[error("the request's work panicked")]
pub struct Panicked;

/// Runs `f`, which may block on the store, off the async scheduling path. On the multi-thread
/// runtime the request's own thread runs it (`block_in_place` hands that worker's other tasks
/// to another thread first): a small query, a fraction of a millisecond of work, does not wait
/// for a blocking-pool thread to wake and then for its task to be woken back, two thread
/// hand-offs that cost about as much as the query. Elsewhere (a current-thread runtime, as in
/// `#[tokio::test]`) it goes to the blocking pool. A panic is an error either way, as
/// `spawn_blocking` reports it.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Panicked> {
    let multi = Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi {
        tokio::task::block_in_place(|| catch_unwind(AssertUnwindSafe(f)).map_err(|_| Panicked))
    } else {
        tokio::task::spawn_blocking(f).await.map_err(|_| Panicked)
    }
}
