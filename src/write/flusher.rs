//! A shard's flusher: writes buffered series-hours to the store as (partially) compacted
//! columns, makes the store durable, drops the WAL segments it covered, then compacts rows
//! whose hour has closed and that have gone quiet.

use super::compactor::{Compactor, DATA_FAMILY, SETTLE};
use super::shard::Buffer;
use super::WriteError;
use crate::schema::column::build_column;
use crate::schema::rowkey::ROW_SPAN;
use crate::schema::{KeyLayout, RawPoint};
use crate::store::{RowMutations, SharedStore};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

pub struct FlushJob {
    pub buffer: Buffer,
    /// WAL segments up to this one are covered by this job and every earlier one; None for a
    /// job only readers asked for (see `ShardMsg::Publish`): its points are stored but left to
    /// the next job to make durable, and compaction waits for that job too.
    pub wal_upto: Option<u64>,
    pub waiters: Vec<oneshot::Sender<Result<(), WriteError>>>,
    /// Told once the buffer is in the store, before it is made durable there.
    pub readers: Vec<oneshot::Sender<Result<(), WriteError>>>,
    /// The shard is stopping: compact every closed row now.
    pub last: bool,
}

pub struct Flusher {
    pub store: SharedStore,
    pub table: String,
    pub layout: KeyLayout,
    pub wal_dir: PathBuf,
    /// How long a closed row must go without writes before it is compacted.
    pub compaction_delay: Duration,
    /// Keeps `ts_ctr` per series: one store call per series per flush, not per point.
    pub ts_counter: Option<std::sync::Arc<crate::meta::counter::TsCounter>>,
    /// Cleared while store writes fail, set again once one succeeds (see `Writer::store_available`).
    pub store_ok: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Counts the jobs whose points are in the store (see `shard::InFlight`).
    pub in_flight: std::sync::Arc<super::shard::InFlight>,
}

const MUTATE_CHUNK: usize = 4096;

/// Sorts by offset and keeps the last write of each offset (arrival order is write order).
pub fn settle(points: &mut Vec<RawPoint>) {
    // The usual case, a series' points in time order and once each: nothing to do (sorting
    // them anyway was a few percent of the ingest CPU).
    let mut offsets = points.iter().map(RawPoint::offset_ms);
    if let Some(first) = offsets.next() {
        let mut prev = first;
        if offsets.all(|o| std::mem::replace(&mut prev, o) < o) {
            return;
        }
    }
    points.reverse();
    points.sort_by_key(|p| p.offset_ms()); // stable: the newest of equal offsets comes first
    points.dedup_by_key(|p| p.offset_ms());
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// OpenTSDB compacts a row once its hour ended more than a second ago.
pub fn hour_closed(base: u32, now: u64) -> bool {
    base as u64 + ROW_SPAN < now
}

/// Points received per series in a buffer (before duplicates are settled: every write counts).
fn series_counts(buffer: &Buffer) -> Vec<(crate::series::Series, u64)> {
    let mut m: HashMap<crate::series::Series, u64, ahash::RandomState> = HashMap::default();
    for row in &buffer.rows {
        *m.entry(row.series).or_default() += row.points.len() as u64;
    }
    m.into_iter().collect()
}

impl Flusher {
    /// Writes a buffer to the store: one column per series-hour.
    pub fn write(&self, buffer: &mut Buffer) -> Result<Vec<(Vec<u8>, u32)>, WriteError> {
        let mut touched = Vec::with_capacity(buffer.rows.len());
        let mut batch = Vec::with_capacity(MUTATE_CHUNK);
        for r in buffer.rows.iter_mut() {
            settle(&mut r.points);
            let (q, v) = build_column(&r.points);
            let row = self.layout.row_key(r.series.tsuid, r.base);
            batch.push(RowMutations::put(row.clone(), DATA_FAMILY, q, v));
            touched.push((row, r.base));
            if batch.len() == MUTATE_CHUNK {
                self.store.mutate(&self.table, std::mem::take(&mut batch))?;
            }
        }
        if !batch.is_empty() {
            self.store.mutate(&self.table, batch)?;
        }
        Ok(touched)
    }

    pub fn run(self, jobs: Receiver<FlushJob>) {
        // Rows that may need compacting: key -> (base, last write).
        let mut pending: HashMap<Vec<u8>, (u32, Instant)> = HashMap::new();
        let compactor = Compactor::new(self.store.clone(), &self.table);
        while let Ok(job) = jobs.recv() {
            let FlushJob { buffer, wal_upto, waiters, readers, last } = job;
            let (points, started, queued) = (buffer.points, Instant::now(), pending.len());
            let result = self.flush_durably(buffer, wal_upto, &mut pending, readers);
            crate::observe::write::flushed(points, started);
            if let Err(e) = &result {
                tracing::error!(error = %e, "flush failed; points stay in the write-ahead log");
            }
            for w in waiters {
                let _ = w.send(result.clone());
            }
            if wal_upto.is_none() {
                continue;
            }
            self.compact_ready(&compactor, &mut pending, last);
            crate::observe::write::compaction_queue(queued, pending.len());
            if last && result.is_ok() {
                // Kept for reuse while running; a stopped node does not need them.
                if let Err(e) = super::wal::remove_free(&self.wal_dir) {
                    tracing::warn!(error = %e, "cannot delete the write-ahead log's free files");
                }
            }
        }
    }

    fn flush_durably(
        &self,
        mut buffer: Buffer,
        wal_upto: Option<u64>,
        pending: &mut HashMap<Vec<u8>, (u32, Instant)>,
        readers: Vec<oneshot::Sender<Result<(), WriteError>>>,
    ) -> Result<(), WriteError> {
        let now = Instant::now();
        let counts = self.ts_counter.as_ref().map(|_| series_counts(&buffer));
        // On a store failure keep retrying: the points are in the WAL, and nothing newer may
        // be acknowledged as flushed before them.
        let mut delay = Duration::from_millis(100);
        let touched = loop {
            match self.write(&mut buffer) {
                Ok(t) => {
                    // Only a write that reached the store proves it healthy (an empty flush
                    // of another shard must not hide a failing one).
                    if !t.is_empty() {
                        self.store_ok.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    break t;
                }
                Err(e) => {
                    self.store_ok.store(false, std::sync::atomic::Ordering::Relaxed);
                    tracing::error!(error = %e, "store write failed; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        };
        // Readable now: the jobs before this one were written first.
        self.in_flight.written.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        for r in readers {
            let _ = r.send(Ok(()));
        }
        for (row, base) in touched {
            pending.insert(row, (base, now));
        }
        if let (Some(c), Some(counts)) = (&self.ts_counter, counts) {
            let counts: Vec<(&[u8], u64)> = counts.iter().map(|(s, n)| (&s.tsuid[..], *n)).collect();
            // Metadata is best effort: a failure here must not hold up the data.
            if let Err(e) = c.record(&counts) {
                tracing::warn!(error = %e, "ts_ctr update failed");
            }
        }
        if let Some(upto) = wal_upto {
            self.store.flush()?;
            super::wal::retire_upto(&self.wal_dir, upto).map_err(|e| WriteError::Wal(e.to_string()))?;
        }
        Ok(())
    }

    fn compact_ready(&self, compactor: &Compactor, pending: &mut HashMap<Vec<u8>, (u32, Instant)>, all: bool) {
        let now = now_s();
        let mut ready: Vec<(Vec<u8>, u32, Instant)> = pending
            .iter()
            .filter(|(_, (base, touched))| hour_closed(*base, now) && (all || touched.elapsed() >= self.compaction_delay))
            .map(|(k, (base, t))| (k.clone(), *base, *t))
            .collect();
        if ready.is_empty() {
            // Flush ticks keep coming while ingest is quiet: a store waiting for the deletes to
            // stop hears again that compaction is caught up (see `Store::tidy`).
            if !all {
                self.tidy_if_caught_up(pending, now);
            }
            return;
        }
        // Oldest first, and (outside shutdown) only as many as fit in the budget: flushing must
        // not starve behind compaction. Rows left waiting gather more points meanwhile, so with
        // many series (a backfill of a million, say) each row is compacted fewer times.
        ready.sort_by_key(|(_, _, t)| *t);
        let started = Instant::now();
        for chunk in ready.chunks(COMPACT_CHUNK) {
            if !all && started.elapsed() >= COMPACT_BUDGET {
                break;
            }
            let rows: Vec<Vec<u8>> = chunk.iter().map(|(k, _, _)| k.clone()).collect();
            for row in &rows {
                pending.remove(row);
            }
            let left = if all { compactor.compact_all(&rows, SETTLE * 3) } else { compactor.compact(&rows) };
            // Rows still settling (or that failed) come back after the settle time.
            let retry_at = Instant::now().checked_sub(self.compaction_delay.saturating_sub(SETTLE)).unwrap_or_else(Instant::now);
            let base_of: HashMap<&[u8], u32> = chunk.iter().map(|(k, base, _)| (&k[..], *base)).collect();
            for row in left {
                let base = base_of.get(&row[..]).copied().unwrap_or(0);
                pending.insert(row, (base, retry_at));
            }
        }
        if all {
            if let Err(e) = self.store.flush() {
                tracing::error!(error = %e, "store flush after compaction failed");
            }
        } else {
            self.tidy_if_caught_up(pending, now);
        }
    }

    /// Caught up with the closed hours: the store may clear what the deletes left.
    fn tidy_if_caught_up(&self, pending: &HashMap<Vec<u8>, (u32, Instant)>, now: u64) {
        if pending.values().all(|(base, _)| !hour_closed(*base, now)) {
            if let Err(e) = self.store.tidy() {
                tracing::warn!(error = %e, "store tidy after compaction failed");
            }
        }
    }
}

/// Rows compacted per store round trip.
const COMPACT_CHUNK: usize = 512;

/// Compaction time per flush cycle (the cycle is `write.flush_interval_ms`, 0.5 s by default).
const COMPACT_BUDGET: Duration = Duration::from_millis(300);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::DataValue;

    #[test]
    fn settle_keeps_the_last_write_of_an_offset() {
        let p = |ts: u64, v: i64| RawPoint::encode(ts, 1356998400, DataValue::Int(v)).unwrap();
        let mut pts = vec![p(1356998410, 1), p(1356998400, 2), p(1356998410, 3), p(1356998400000, 4)];
        settle(&mut pts);
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].value().unwrap(), DataValue::Int(4));
        assert_eq!(pts[1].value().unwrap(), DataValue::Int(3));
        // In order and once each: as they were.
        let mut pts = vec![p(1356998400, 1), p(1356998400500, 2), p(1356998410, 3)];
        settle(&mut pts);
        assert_eq!(pts.iter().map(|p| p.value().unwrap()).collect::<Vec<_>>(), [1, 2, 3].map(DataValue::Int));
        // In order but for a repeat at the end: the later write stands.
        let mut pts = vec![p(1356998400, 1), p(1356998410, 2), p(1356998410, 3)];
        settle(&mut pts);
        assert_eq!(pts.iter().map(|p| p.value().unwrap()).collect::<Vec<_>>(), [1, 3].map(DataValue::Int));
    }

    #[test]
    fn hours_close_a_second_after_they_end() {
        assert!(!hour_closed(1356998400, 1357002000));
        assert!(hour_closed(1356998400, 1357002001));
    }
}
