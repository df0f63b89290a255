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

pub struct BodyBudget {
    /// None: no budget (`limits.max_body_bytes_in_flight = 0`).
    sem: Option<Arc<Semaphore>>,
    bytes: u64,
}

/// Budget held by one request; given back when dropped.
#[derive(Default)]
pub struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
}

impl Reservation {
    /// Bytes reserved.
    pub fn bytes(&self) -> u64 {
        self.permit.as_ref().map_or(0, |p| p.num_permits() as u64 * UNIT)
    }
}

/// No budget came within [`PATIENCE`].
#[derive(Debug)]
pub struct Exhausted {
    pub budget: u64,
}

impl BodyBudget {
    pub fn new(bytes: u64) -> BodyBudget {
        let units = (bytes / UNIT).min(u32::MAX as u64) as usize;
        BodyBudget {
            sem: (bytes > 0).then(|| Arc::new(Semaphore::new(units))),
            bytes,
        }
    }

    /// Bytes reserved by requests now.
    pub fn in_flight(&self) -> u64 {
        self.sem.as_ref().map_or(0, |s| {
            (self.bytes / UNIT).saturating_sub(s.available_permits() as u64) * UNIT
        })
    }

    /// Makes `r` hold at least `bytes` (capped at the whole budget), waiting up to [`PATIENCE`].
    pub async fn reserve(&self, r: &mut Reservation, bytes: u64) -> Result<(), Exhausted> {
        let Some(sem) = &self.sem else {
            return Ok(());
        };
        let want = bytes.div_ceil(UNIT).min(self.bytes / UNIT);
        let have = r.permit.as_ref().map_or(0, |p| p.num_permits() as u64);
        if want <= have {
            return Ok(());
        }
        let more = (want - have) as u32;
        let fail = Exhausted { budget: self.bytes };
        let permit = match sem.clone().try_acquire_many_owned(more) {
            Ok(p) => p,
            Err(_) => tokio::time::timeout(PATIENCE, sem.clone().acquire_many_owned(more))
                .await
                .map_err(|_| Exhausted { budget: self.bytes })?
                .map_err(|_| fail)?,
        };
        match &mut r.permit {
            Some(p) => p.merge(permit),
            None => r.permit = Some(permit),
        }
        Ok(())
    }

    /// As [`BodyBudget::reserve`] for a body that has grown to `bytes`: reserves ahead by
    /// [`GROW_STEP`] so that a chunked body does not ask once per chunk.
    pub async fn grow(&self, r: &mut Reservation, bytes: u64) -> Result<(), Exhausted> {
        if self.sem.is_none() || bytes <= r.bytes() {
            return Ok(());
        }
        self.reserve(r, bytes.max(r.bytes() + GROW_STEP)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reservations_wait_give_up_and_are_released_on_drop() {
        let b = BodyBudget::new(4 << 20);
        let mut first = Reservation::default();
        b.reserve(&mut first, 3 << 20).await.unwrap();
        assert_eq!(b.in_flight(), 3 << 20);
        // Not enough left: the second waits, then gives up with nothing held.
        let mut second = Reservation::default();
        let started = std::time::Instant::now();
        assert!(b.reserve(&mut second, 2 << 20).await.is_err());
        assert!(started.elapsed() >= PATIENCE);
        assert_eq!(second.bytes(), 0);
        assert_eq!(b.in_flight(), 3 << 20);
        // Released on drop, the budget serves the next request at once.
        drop(first);
        assert_eq!(b.in_flight(), 0);
        b.reserve(&mut second, 2 << 20).await.unwrap();
        // A body larger than the whole budget is held to the budget.
        let mut big = Reservation::default();
        drop(second);
        b.reserve(&mut big, 10 << 20).await.unwrap();
        assert_eq!(big.bytes(), 4 << 20);
    }

    #[tokio::test]
    async fn a_growing_body_reserves_ahead_and_no_budget_means_no_limit() {
        let b = BodyBudget::new(8 << 20);
        let mut r = Reservation::default();
        b.grow(&mut r, 10).await.unwrap();
        assert_eq!(r.bytes(), GROW_STEP);
        b.grow(&mut r, GROW_STEP + 1).await.unwrap();
        assert_eq!(r.bytes(), 2 * GROW_STEP);
        let off = BodyBudget::new(0);
        let mut r = Reservation::default();
        off.reserve(&mut r, 1 << 40).await.unwrap();
        assert_eq!(off.in_flight(), 0);
    }
}
