//! A shard's compaction thread: compacts the rows of closed hours its flusher hands it, so that
//! the flusher never waits for a compaction (a profile of a rollover under load had the
//! flusher at a full core in compaction while writers timed out).
//!
//! Bounded: the flusher offers rows without waiting and keeps what does not fit; at most
//! `LANE_JOBS` jobs of `HAND_OVER_ROWS` rows wait here. Lower priority: the thread runs at a
//! higher nice value, so ingest gets the cores when both want them, and it compacts
//! `CHUNK_ROWS` rows per store call (the embedded store's `mutate_at` holds its writers off
//! while it checks a batch's versions).

use super::compactor::{Compactor, SETTLE};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tsgate_store::SharedStore;

/// Rows per job the flusher hands over.
pub const HAND_OVER_ROWS: usize = 2048;
/// Jobs waiting for the thread before the flusher keeps its rows for a later tick.
const LANE_JOBS: usize = 2;
/// Rows per compaction store round trip.
const CHUNK_ROWS: usize = 64;
/// The thread's nice value (ingest threads run at 0).
const NICE: i32 = 10;
/// A job of at least this many rows returns the memory it freed to the OS at once.
const RELEASE_AFTER_ROWS: usize = 1_024;

enum Job {
    Rows {
        rows: Vec<(Vec<u8>, u32)>,
        all: bool,
    },
    Tidy,
}

/// The flusher's end of its compaction thread.
pub struct Lane {
    jobs: Option<SyncSender<Job>>,
    /// Rows to try again later (still settling on a shared store, or the store failed).
    back: Receiver<Vec<(Vec<u8>, u32)>>,
    /// Rows handed over and not compacted yet.
    queued: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Lane {
    pub fn start(
        store: SharedStore,
        table: &str,
        name: &str,
        rollups: Option<Arc<super::rollup::RollupBuild>>,
    ) -> std::io::Result<Lane> {
        let (jobs, rx) = std::sync::mpsc::sync_channel(LANE_JOBS);
        let (back_tx, back) = std::sync::mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let compactor = Compactor::new(store.clone(), table).with_rollups(rollups);
        let q = queued.clone();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || run(compactor, store, rx, back_tx, q))?;
        Ok(Lane {
            jobs: Some(jobs),
            back,
            queued,
            thread: Some(thread),
        })
    }

    /// Hands `rows` over: at once if there is room, else false (the caller keeps them). With
    /// `all` (shutdown) it waits for room instead.
    pub fn offer(&self, rows: Vec<(Vec<u8>, u32)>, all: bool) -> bool {
        let Some(jobs) = &self.jobs else {
            return false;
        };
        let n = rows.len();
        self.queued.fetch_add(n, Ordering::SeqCst);
        let job = Job::Rows { rows, all };
        let sent = if all {
            jobs.send(job).is_ok()
        } else {
            jobs.try_send(job).is_ok()
        };
        if !sent {
            self.queued.fetch_sub(n, Ordering::SeqCst);
        }
        sent
    }

    /// Compaction is caught up: the store may tidy (if nothing is queued here either).
    pub fn tidy(&self) {
        if let (Some(jobs), 0) = (&self.jobs, self.queued()) {
            let _ = jobs.try_send(Job::Tidy);
        }
    }

    /// Rows handed over and not compacted yet.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    /// Puts the rows the thread gave back into `pending`, due again once `SETTLE` has passed
    /// (a row written since keeps its later time).
    pub fn take_back(
        &self,
        pending: &mut super::flusher::Pending,
        compaction_delay: Duration,
        layout: &tsgate_schema::KeyLayout,
    ) {
        for rows in self.back.try_iter() {
            let retry_at = Instant::now()
                .checked_sub(compaction_delay.saturating_sub(SETTLE))
                .unwrap_or_else(Instant::now);
            for (row, base) in rows {
                let Ok(key) = layout.parse(&row) else {
                    continue; // not a row this flusher wrote
                };
                let series = crate::series::SeriesKey::new(&key.tsuid());
                pending.entry((series, base)).or_insert(retry_at);
            }
        }
    }

    /// Waits for every job handed over to be done.
    pub fn finish(mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    compactor: Compactor,
    store: SharedStore,
    jobs: Receiver<Job>,
    back: Sender<Vec<(Vec<u8>, u32)>>,
    queued: Arc<AtomicUsize>,
) {
    lower_priority();
    while let Ok(job) = jobs.recv() {
        let (rows, all) = match job {
            Job::Tidy => {
                if let Err(e) = store.tidy() {
                    tracing::warn!(error = %e, "store tidy after compaction failed");
                }
                continue;
            }
            Job::Rows { rows, all } => (rows, all),
        };
        let started = Instant::now();
        let base_of: HashMap<&[u8], u32> = rows.iter().map(|(k, b)| (&k[..], *b)).collect();
        let keys: Vec<Vec<u8>> = rows.iter().map(|(k, _)| k.clone()).collect();
        let mut left = Vec::new();
        for chunk in keys.chunks(CHUNK_ROWS) {
            let t = Instant::now();
            // Stopping while the store refuses writes: the rest is left uncompacted.
            if all && store.refusing_writes().is_some() {
                queued.fetch_sub(chunk.len(), Ordering::SeqCst);
                left.extend_from_slice(chunk);
                continue;
            }
            let l = if all {
                compactor.compact_all(chunk, SETTLE * 3)
            } else {
                compactor.compact(chunk)
            };
            crate::observe::write::compacted(chunk.len() - l.len(), t);
            queued.fetch_sub(chunk.len(), Ordering::SeqCst);
            left.extend(l);
        }
        if rows.len() >= RELEASE_AFTER_ROWS {
            tsgate_common::memory::release_freed();
        }
        if all {
            if let Err(e) = store.flush() {
                tracing::error!(error = %e, "store flush after compaction failed");
            }
        }
        if rows.len() >= RELEASE_AFTER_ROWS || started.elapsed() >= Duration::from_secs(5) {
            tracing::info!(
                rows = rows.len(),
                left = left.len(),
                seconds = started.elapsed().as_secs_f64(),
                "compacted rows of closed hours"
            );
        }
        if !left.is_empty() {
            let left = left
                .into_iter()
                .map(|r| {
                    let base = base_of.get(&r[..]).copied().unwrap_or(0);
                    (r, base)
                })
                .collect();
            let _ = back.send(left);
        }
    }
}

/// Ingest first: when the cores are busy the scheduler gives this thread a small share.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take no pointers; raising a thread's own nice value
        // needs no privilege and only changes how the scheduler weighs this thread.
        let r =
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, NICE) };
        if r != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "cannot lower the compaction thread's priority");
        }
    }
}

/// Lets something through at most once per `every` (for log lines that would repeat).
pub struct RateLimited {
    every: Duration,
    last: Option<Instant>,
}

impl RateLimited {
    pub fn new(every: Duration) -> Self {
        RateLimited { every, last: None }
    }

    pub fn ready(&mut self) -> bool {
        if self.last.is_some_and(|t| t.elapsed() < self.every) {
            return false;
        }
        self.last = Some(Instant::now());
        true
    }
}
