//! A rate limit for background passes over a table (the retention sweep's rewrite, scans and
//! deletes): the work done so far may run ahead of `per_s` units a second by at most a burst
//! of a tenth of a second's worth; [`Throttle::take`] sleeps until it no longer does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The clock a [`Throttle`] reads and sleeps on (a test passes one whose sleep only counts).
pub trait Pace: Send {
    /// Time since the pass began.
    fn elapsed(&self) -> Duration;
    fn sleep(&mut self, d: Duration);
}

/// The real clock.
pub struct RealPace(Instant);

impl Pace for RealPace {
    fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }

    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

pub struct Throttle {
    /// Units a second; 0 = no limit.
    per_s: u64,
    done: u64,
    /// Units taken since the clock was last read (it is read once per `step` units).
    pending: u64,
    step: u64,
    waited: Duration,
    pace: Box<dyn Pace>,
    /// Once set, no more waiting (the process is stopping: finish the pass at full speed).
    hurry: Option<Arc<AtomicBool>>,
}

impl Throttle {
    /// `per_s` units a second at most, on the real clock from now; 0 = no limit.
    pub fn new(per_s: u64) -> Throttle {
        Throttle::with_pace(per_s, Box::new(RealPace(Instant::now())))
    }

    pub fn with_pace(per_s: u64, pace: Box<dyn Pace>) -> Throttle {
        Throttle {
            per_s,
            done: 0,
            pending: 0,
            // A hundredth of a second's worth between clock reads (the burst is ten of them).
            step: (per_s / 100).max(1),
            waited: Duration::ZERO,
            pace,
            hurry: None,
        }
    }

    /// Stops waiting once `hurry` is set.
    pub fn hurried_by(mut self, hurry: Option<Arc<AtomicBool>>) -> Throttle {
        self.hurry = hurry;
        self
    }

    /// Counts `n` units done, then waits while the pass is ahead of its rate.
    pub fn take(&mut self, n: u64) {
        self.done += n;
        if self.per_s == 0 {
            return;
        }
        self.pending += n;
        if self.pending < self.step {
            return;
        }
        self.pending = 0;
        if self
            .hurry
            .as_ref()
            .is_some_and(|h| h.load(Ordering::Relaxed))
        {
            return;
        }
        let burst = self.per_s / 10;
        let due =
            Duration::from_secs_f64(self.done.saturating_sub(burst) as f64 / self.per_s as f64);
        if let Some(wait) = due.checked_sub(self.pace.elapsed()) {
            self.pace.sleep(wait);
            self.waited += wait;
        }
    }

    /// Units done so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Time spent waiting so far.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A clock that moves only when slept on, or when the work itself is said to take time.
    struct Fake(Arc<Mutex<Duration>>);

    impl Pace for Fake {
        fn elapsed(&self) -> Duration {
            *self.0.lock().unwrap()
        }
        fn sleep(&mut self, d: Duration) {
            *self.0.lock().unwrap() += d;
        }
    }

    #[test]
    fn work_never_runs_ahead_of_the_rate_by_more_than_the_burst() {
        let now = Arc::new(Mutex::new(Duration::ZERO));
        let mut t = Throttle::with_pace(10_000, Box::new(Fake(now.clone())));
        for i in 0..5_000u64 {
            // Work of uneven sizes that takes (fake) time of its own now and then.
            t.take(1 + i % 7);
            if i % 100 == 0 {
                *now.lock().unwrap() += Duration::from_millis(3);
            }
            let elapsed = now.lock().unwrap().as_secs_f64();
            // Allowed: the rate times the elapsed time, the burst, and the units taken since
            // the clock was last read (at most one step).
            let allowed = 10_000.0 * elapsed + 1_000.0 + 100.0 + 7.0;
            assert!(
                t.done() as f64 <= allowed,
                "{} units at {elapsed} s",
                t.done()
            );
        }
        // 20,000 units at 10,000 a second: about two seconds, most of it waited.
        assert_eq!(t.done(), (0..5_000u64).map(|i| 1 + i % 7).sum::<u64>());
        let elapsed = now.lock().unwrap().as_secs_f64();
        assert!(elapsed >= (t.done() - 1_100) as f64 / 10_000.0, "{elapsed}");
        assert!(
            t.waited() > Duration::from_millis(1_500),
            "{:?}",
            t.waited()
        );
    }

    #[test]
    fn no_limit_never_waits() {
        let now = Arc::new(Mutex::new(Duration::ZERO));
        let mut t = Throttle::with_pace(0, Box::new(Fake(now.clone())));
        for _ in 0..1_000 {
            t.take(1 << 20);
        }
        assert_eq!(t.waited(), Duration::ZERO);
        assert_eq!(t.done(), 1_000 << 20);
    }

    #[test]
    fn hurried_it_stops_waiting() {
        let now = Arc::new(Mutex::new(Duration::ZERO));
        let hurry = Arc::new(AtomicBool::new(false));
        let mut t =
            Throttle::with_pace(1_000, Box::new(Fake(now.clone()))).hurried_by(Some(hurry.clone()));
        t.take(2_000);
        let waited = t.waited();
        assert!(waited > Duration::ZERO);
        hurry.store(true, Ordering::Relaxed);
        t.take(1_000_000);
        assert_eq!(t.waited(), waited);
    }
}
