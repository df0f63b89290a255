//! Threads that stay up for the queries' parallel parts. Starting a thread per query part
//! cost more than the part saved: the kernel first queues a new thread on its parent's core,
//! and on a busy two-core machine it waited 0.1–3 ms there before running (measured on
//! Graphite's `groupByNode` over 1,000 paths, a 10 ms query), where a parked worker is woken
//! onto an idle core at once.

use parking_lot::Mutex;

/// Workers per core. A query's parts each take one; some wait on the network (HBase reads),
/// and concurrent queries each bring theirs, so the pool has more workers than cores (they
/// share the cores as threads started per query did) rather than queueing one query's parts
/// behind another's. Idle workers sleep.
const WORKERS_PER_CORE: usize = 4;

/// The pool, started on first use.
fn pool() -> &'static rayon_core::ThreadPool {
    static POOL: std::sync::OnceLock<rayon_core::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon_core::ThreadPoolBuilder::new()
            .num_threads((crate::cores() * WORKERS_PER_CORE).max(8))
            .thread_name(|i| format!("query-{i}"))
            .build()
            .expect("the query worker threads start")
    })
}

/// `f(0)`, …, `f(n - 1)`, in that order: `f(0)` on the calling thread, the others on the
/// pool's workers, all at once. A panic in any of them is raised here once all have ended.
pub fn on_workers<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    if n <= 1 {
        return (0..n).map(f).collect();
    }
    let slots: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
    pool().in_place_scope(|s| {
        for (i, slot) in slots.iter().enumerate().skip(1) {
            let f = &f;
            s.spawn(move |_| *slot.lock() = Some(f(i)));
        }
        *slots[0].lock() = Some(f(0));
    });
    slots.into_iter().map(|s| s.into_inner().expect("every worker ran")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_and_nested_calls_finish() {
        let got = on_workers(4, |i| on_workers(3, |j| i * 10 + j));
        assert_eq!(got, vec![vec![0, 1, 2], vec![10, 11, 12], vec![20, 21, 22], vec![30, 31, 32]]);
        assert_eq!(on_workers(0, |i| i), Vec::<usize>::new());
        assert_eq!(on_workers(1, |i| i + 7), vec![7]);
    }

    #[test]
    fn a_worker_panic_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| on_workers(2, |i| if i == 1 { panic!("boom") } else { i }));
        assert!(r.is_err());
    }
}
