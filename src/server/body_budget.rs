//! `limits.max_body_bytes_in_flight`: one budget for the bodies of every HTTP request being read
//! or handled (remote write, `/api/put`, graphite-web and query POSTs alike). Each body is
//! capped by `limits.http_body_max`, but bodies × connections were not: 16 parallel 60 MiB
//! bodies took the process to 1 GB. A request reserves its declared length before its body is
//! read (a chunked one as it arrives); one that cannot get budget within [`PATIENCE`] is
//! answered 503 with `Retry-After`, having read nothing. A reservation is released when the
//! request's answer is made or its connection dropped (it is an owned permit), so nothing can
//! hold budget past its request, and a waiter gives up on its own: no deadlock.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a request waits for budget before it is refused.
pub const PATIENCE: Duration = Duration::from_secs(2);

/// Budget is counted in KiB: a semaphore hands out at most `u32::MAX` permits at once.
const UNIT: u64 = 1024;

/// A chunked body's reservation grows by at least this much at a time.
const GROW_STEP: u64 = 1 << 20;

/// Bodies up to this size draw from a pool of their own (an eighth of the budget), so that
/// large ones never starve them: a semaphore serves its waiters in order, and a queued 60 MiB
/// body would otherwise take every KiB given back before a 1 KiB put could have one.
pub const SMALL_BODY: u64 = 1 << 20;

pub struct BodyBudget {
    /// Bodies up to [`SMALL_BODY`]; None: they use `large`.
    small: Option<Arc<Semaphore>>,
    /// Larger bodies (and all of them if `small` is None); None: no budget at all
    /// (`limits.max_body_bytes_in_flight = 0`).
    large: Option<Arc<Semaphore>>,
    /// Units in each pool.
    small_units: u64,
    large_units: u64,
    bytes: u64,
}

/// Budget held by one request; given back when dropped.
#[derive(Default)]
pub struct Reservation {
    small: Option<OwnedSemaphorePermit>,
    large: Option<OwnedSemaphorePermit>,
}

impl Reservation {
    /// Bytes reserved.
    pub fn bytes(&self) -> u64 {
        let n = |p: &Option<OwnedSemaphorePermit>| p.as_ref().map_or(0, |p| p.num_permits());
        (n(&self.small) + n(&self.large)) as u64 * UNIT
    }
}

/// No budget came within [`PATIENCE`].
#[derive(Debug)]
pub struct Exhausted {
    pub budget: u64,
}

/// Makes `held` hold `want` units of `sem`, waiting up to [`PATIENCE`].
async fn hold(
    sem: &Arc<Semaphore>,
    held: &mut Option<OwnedSemaphorePermit>,
    want: u64,
) -> Result<(), ()> {
    let have = held.as_ref().map_or(0, |p| p.num_permits() as u64);
    if want <= have {
        return Ok(());
    }
    let more = (want - have) as u32;
    let permit = match sem.clone().try_acquire_many_owned(more) {
        Ok(p) => p,
        Err(_) => tokio::time::timeout(PATIENCE, sem.clone().acquire_many_owned(more))
            .await
            .map_err(|_| ())?
            .map_err(|_| ())?,
    };
    match held {
        Some(p) => p.merge(permit),
        None => *held = Some(permit),
    }
    Ok(())
}

impl BodyBudget {
    /// A budget of `bytes` (0: none) for bodies of at most `largest` bytes each.
    pub fn new(bytes: u64, largest: u64) -> BodyBudget {
        let total = (bytes / UNIT).min(u32::MAX as u64);
        // The small pool never leaves the large one too little for the largest body.
        let small_units = (total / 8).min(total.saturating_sub(largest.div_ceil(UNIT)));
        let large_units = total - small_units;
        let pool = |n: u64| (bytes > 0 && n > 0).then(|| Arc::new(Semaphore::new(n as usize)));
        BodyBudget {
            small: pool(small_units),
            large: pool(large_units),
            small_units,
            large_units,
            bytes,
        }
    }

    /// Bytes reserved by requests now.
    pub fn in_flight(&self) -> u64 {
        let used = |s: &Option<Arc<Semaphore>>, n: u64| {
            s.as_ref()
                .map_or(0, |s| n.saturating_sub(s.available_permits() as u64))
        };
        (used(&self.small, self.small_units) + used(&self.large, self.large_units)) * UNIT
    }

    /// Makes `r` hold at least `bytes` (capped at the whole budget), waiting up to [`PATIENCE`].
    pub async fn reserve(&self, r: &mut Reservation, bytes: u64) -> Result<(), Exhausted> {
        let Some(large) = &self.large else {
            return Ok(());
        };
        let fail = |_| Exhausted { budget: self.bytes };
        let want = bytes.div_ceil(UNIT);
        if let Some(small) = &self.small {
            if bytes <= SMALL_BODY && r.large.is_none() {
                return hold(small, &mut r.small, want).await.map_err(fail);
            }
        }
        // Grown out of the small pool: the whole body moves to the large one.
        hold(large, &mut r.large, want.min(self.large_units))
            .await
            .map_err(fail)?;
        r.small = None;
        Ok(())
    }

    /// As [`BodyBudget::reserve`] for a body that has grown to `bytes`: reserves ahead by
    /// [`GROW_STEP`] (within the small pool's bound while it fits there) so that a chunked
    /// body does not ask once per chunk.
    pub async fn grow(&self, r: &mut Reservation, bytes: u64) -> Result<(), Exhausted> {
        if self.large.is_none() || bytes <= r.bytes() {
            return Ok(());
        }
        let ahead = bytes.max(r.bytes() + GROW_STEP);
        let ahead = if bytes <= SMALL_BODY {
            ahead.min(SMALL_BODY)
        } else {
            ahead
        };
        self.reserve(r, ahead).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reservations_wait_give_up_and_are_released_on_drop() {
        // 32 MiB: 4 for small bodies, 28 for the rest.
        let b = BodyBudget::new(32 << 20, 16 << 20);
        let mut first = Reservation::default();
        b.reserve(&mut first, 20 << 20).await.unwrap();
        assert_eq!(b.in_flight(), 20 << 20);
        // Not enough left: the second waits, then gives up with nothing held.
        let mut second = Reservation::default();
        let started = std::time::Instant::now();
        assert!(b.reserve(&mut second, 10 << 20).await.is_err());
        assert!(started.elapsed() >= PATIENCE);
        assert_eq!(second.bytes(), 0);
        assert_eq!(b.in_flight(), 20 << 20);
        // A small body is served at once even with a large one queued.
        let queued = {
            let b = std::sync::Arc::new(BodyBudget::new(32 << 20, 16 << 20));
            let mut r = Reservation::default();
            b.reserve(&mut r, 20 << 20).await.unwrap();
            let b2 = b.clone();
            let waiter = tokio::spawn(async move {
                let mut r = Reservation::default();
                b2.reserve(&mut r, 10 << 20).await.is_ok()
            });
            tokio::task::yield_now().await;
            let mut small = Reservation::default();
            let t = std::time::Instant::now();
            b.reserve(&mut small, 1000).await.unwrap();
            assert!(t.elapsed() < PATIENCE);
            drop(r);
            waiter.await.unwrap()
        };
        assert!(
            queued,
            "the queued large body got its share once one was released"
        );
        // Released on drop, the budget serves the next request at once.
        drop(first);
        assert_eq!(b.in_flight(), 0);
        b.reserve(&mut second, 10 << 20).await.unwrap();
        // A body larger than the large pool is held to it.
        let mut big = Reservation::default();
        drop(second);
        b.reserve(&mut big, 40 << 20).await.unwrap();
        assert_eq!(big.bytes(), 28 << 20);
    }

    #[tokio::test]
    async fn a_growing_body_reserves_ahead_and_no_budget_means_no_limit() {
        let b = BodyBudget::new(16 << 20, 8 << 20);
        let mut r = Reservation::default();
        b.grow(&mut r, 10).await.unwrap();
        assert_eq!(r.bytes(), GROW_STEP);
        assert_eq!(b.in_flight(), GROW_STEP);
        // Past the small bound the body moves to the large pool, whole.
        b.grow(&mut r, GROW_STEP + 1).await.unwrap();
        assert_eq!(r.bytes(), 2 * GROW_STEP);
        assert_eq!(b.in_flight(), 2 * GROW_STEP);
        drop(r);
        assert_eq!(b.in_flight(), 0);
        let off = BodyBudget::new(0, 1 << 20);
        let mut r = Reservation::default();
        off.reserve(&mut r, 1 << 40).await.unwrap();
        assert_eq!(off.in_flight(), 0);
    }
}
