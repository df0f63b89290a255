//! Store work that may block, run from a request's task.

use std::panic::{catch_unwind, AssertUnwindSafe};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Why the work gave no answer: it panicked (with this message, when it had one).
#[derive(Debug, thiserror::Error)]
#[error("the request's work panicked: {0}")]
pub struct Panicked(String);

fn message(p: Box<dyn std::any::Any + Send>) -> Panicked {
    Panicked(
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default(),
    )
}

/// Runs `f`, which may block on the store, off the async scheduling path. On the multi-thread
/// runtime the request's own thread runs it (`block_in_place` hands that worker's other tasks
/// to another thread first): a small query, a fraction of a millisecond of work, does not wait
/// for a blocking-pool thread to wake and then for its task to be woken back, two thread
/// hand-offs that cost about as much as the query. Elsewhere (a current-thread runtime, as in
/// `#[tokio::test]`) it goes to the blocking pool. A panic is an error either way, as
/// `spawn_blocking` reports it.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Panicked> {
    let multi =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi {
        tokio::task::block_in_place(|| catch_unwind(AssertUnwindSafe(f)).map_err(message))
    } else {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| match e.try_into_panic() {
                Ok(p) => message(p),
                Err(e) => Panicked(e.to_string()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_on_both_runtimes_and_reports_a_panic() {
        for rt in [
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .unwrap(),
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
        ] {
            rt.block_on(async {
                assert_eq!(run(|| 6 * 7).await.unwrap(), 42);
                let e = run(|| -> u8 { panic!("boom") }).await.unwrap_err();
                assert!(e.to_string().ends_with("panicked: boom"), "{e}");
            });
        }
    }
}
