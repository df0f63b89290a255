//! Threads that stay up for the queries' parallel parts. Starting a thread per query part
//! cost more than the part saved: the kernel first queues a new thread on its parent's core,
//! and on a busy two-core machine it waited 0.1–3 ms there before running (measured on
//! Graphite's `groupByNode` over 1,000 paths, a 10 ms query), where a parked worker is woken
//! onto an idle core at once.
//!
//! Idle workers sleep on a condition variable and never spin. (rayon's pool, used before, has
//! each worker that runs out of work yield in a loop before it sleeps: with more workers than
//! cores, those yields took 8.5 % of the server's CPU in that same query, on the cores its own
//! parts were waiting for.) A caller runs the first part itself and, once done, takes back the
//! parts no worker has started, so a query is never queued behind another's parts and a part
//! that calls [`on_workers`] again cannot wait on a worker that waits on it.

use parking_lot::{Condvar, Mutex};
use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

/// Workers per core. A query's parts each take one; some wait on the network (HBase reads),
/// and concurrent queries each bring theirs, so the pool has more workers than cores (they
/// share the cores as threads started per query did) rather than queueing one query's parts
/// behind another's.
const WORKERS_PER_CORE: usize = 4;

/// A part whose borrows [`on_workers`] keeps alive until it has run (see there).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// One [`on_workers`] call's parts.
struct Batch {
    state: Mutex<BatchState>,
    /// Signalled when the last running part ends.
    ended: Condvar,
}

struct BatchState {
    /// Parts no one has started, taken from the end.
    pending: Vec<Job>,
    /// Parts started and not yet ended. Changed under the same lock as `pending`, so that
    /// "nothing pending and nothing running" is never seen while a part changes hands.
    running: usize,
    /// The first part's panic, raised in the caller.
    panic: Option<Box<dyn Any + Send>>,
}

impl Batch {
    /// Runs one pending part; false when there was none.
    fn run_one(&self) -> bool {
        let job = {
            let mut s = self.state.lock();
            let Some(job) = s.pending.pop() else {
                return false;
            };
            s.running += 1;
            job
        };
        let result = catch_unwind(AssertUnwindSafe(job));
        let mut s = self.state.lock();
        s.running -= 1;
        if let Err(p) = result {
            if s.panic.is_none() {
                s.panic = Some(p);
            } else {
                // Dropping a payload runs its code, which may panic in turn: here that would
                // leave [`on_workers`] (and the borrows its parts hold) early. A second panic
                // of one call is rare enough to leak.
                std::mem::forget(p);
            }
        }
        if s.running == 0 {
            self.ended.notify_all();
        }
        true
    }
}

/// The workers' queue: one entry per part handed out (a worker finding its batch's parts all
/// taken goes back to sleep).
struct Pool {
    queue: Mutex<VecDeque<Arc<Batch>>>,
    work: Condvar,
}

/// The pool, started on first use.
fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            queue: Mutex::new(VecDeque::new()),
            work: Condvar::new(),
        }));
        for i in 0..(crate::cores() * WORKERS_PER_CORE).max(8) {
            std::thread::Builder::new()
                .name(format!("query-{i}"))
                .spawn(move || loop {
                    let batch = {
                        let mut q = pool.queue.lock();
                        loop {
                            match q.pop_front() {
                                Some(b) => break b,
                                None => pool.work.wait(&mut q),
                            }
                        }
                    };
                    batch.run_one();
                })
                .expect("the query worker threads start");
        }
        pool
    })
}

/// `f(0)`, …, `f(n - 1)`, in that order: `f(0)` on the calling thread, the others on the
/// pool's workers, all at once (or on the calling thread, for those no worker was free to
/// start by the time `f(0)` ended). A panic in any of them is raised here once all have ended.
pub fn on_workers<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    if n <= 1 {
        return (0..n).map(f).collect();
    }
    let slots: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let jobs: Vec<Job> = (1..n)
        .rev()
        .map(|i| {
            let (f, slot) = (&f, &slots[i]);
            let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || *slot.lock() = Some(f(i)));
            // SAFETY: the job borrows `f` and `slots`, which outlive it: this function returns
            // (or unwinds) only once the batch has no pending part (each was run or taken back
            // below) and no running one, and a part's panic is caught where it runs.
            unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) }
        })
        .collect();
    let batch = Arc::new(Batch {
        state: Mutex::new(BatchState {
            pending: jobs,
            running: 0,
            panic: None,
        }),
        ended: Condvar::new(),
    });
    let pool = pool();
    {
        let mut q = pool.queue.lock();
        q.extend((1..n).map(|_| batch.clone()));
    }
    for _ in 1..n {
        pool.work.notify_one();
    }
    let first = catch_unwind(AssertUnwindSafe(|| *slots[0].lock() = Some(f(0))));
    while batch.run_one() {}
    let panic = {
        let mut s = batch.state.lock();
        while s.running > 0 {
            batch.ended.wait(&mut s);
        }
        s.panic.take()
    };
    if let Err(p) = first {
        resume_unwind(p);
    }
    if let Some(p) = panic {
        resume_unwind(p);
    }
    slots
        .into_iter()
        .map(|s| s.into_inner().expect("every part ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_and_nested_calls_finish() {
        let got = on_workers(4, |i| on_workers(3, |j| i * 10 + j));
        assert_eq!(
            got,
            vec![
                vec![0, 1, 2],
                vec![10, 11, 12],
                vec![20, 21, 22],
                vec![30, 31, 32]
            ]
        );
        assert_eq!(on_workers(0, |i| i), Vec::<usize>::new());
        assert_eq!(on_workers(1, |i| i + 7), vec![7]);
    }

    #[test]
    fn a_worker_panic_reaches_the_caller() {
        let r =
            std::panic::catch_unwind(|| on_workers(2, |i| if i == 1 { panic!("boom") } else { i }));
        assert!(r.is_err());
        let r =
            std::panic::catch_unwind(|| on_workers(3, |i| if i == 0 { panic!("boom") } else { i }));
        assert!(r.is_err());
    }

    #[test]
    fn parts_borrow_the_callers_data_and_all_run() {
        // More parts than workers, nested deeper than the pool is wide, from several threads
        // at once: every part runs exactly once and sees the caller's data.
        let data: Vec<usize> = (0..100).collect();
        let sums: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    let data = &data;
                    s.spawn(move || {
                        on_workers(40, |i| {
                            on_workers(5, |j| data[(i + j + t) % 100])
                                .iter()
                                .sum::<usize>()
                        })
                        .iter()
                        .sum()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (t, got) in sums.into_iter().enumerate() {
            let want: usize = (0..40)
                .flat_map(|i| (0..5).map(move |j| (i + j + t) % 100))
                .sum();
            assert_eq!(got, want);
        }
    }
}
