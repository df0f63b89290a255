//! A shard's flusher: writes buffered series-hours to the store as (partially) compacted
//! columns, makes the store durable, drops the WAL segments it covered, then compacts rows
//! whose hour has closed and that have gone quiet.

use super::compactor::{Compactor, DATA_FAMILY, SETTLE};
use super::shard::Buffer;
use super::WriteError;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tsgate_schema::column::build_column;
use tsgate_schema::rowkey::ROW_SPAN;
use tsgate_schema::{KeyLayout, RawPoint};
use tsgate_store::{RowMutations, SharedStore};

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

use tsgate_common::clock::now_s;

/// OpenTSDB compacts a row once its hour ended more than a second ago.
pub fn hour_closed(base: u32, now: u64) -> bool {
    base as u64 + ROW_SPAN < now
}

/// Points received per series in a buffer (before duplicates are settled: every write counts).
// `SeriesKey`'s hash and equality read its `hash` and `tsuid`, never the atomic `slot` hint.
#[allow(clippy::mutable_key_type)]
fn series_counts(buffer: &Buffer) -> Vec<(crate::series::Series, u64)> {
    let mut m: HashMap<crate::series::Series, u64, ahash::RandomState> = HashMap::default();
    for row in &buffer.rows {
        *m.entry(row.series).or_default() += row.points.len() as u64;
    }
    m.into_iter().collect()
}

impl Flusher {
    /// Writes a buffer to the store: one column per series-hour. Taken by value: a failed write
    /// has dropped the points of the chunks it stored, so the buffer cannot be written again.
    pub fn write(&self, mut buffer: Buffer) -> Result<Vec<(Vec<u8>, u32)>, WriteError> {
        let mut touched = Vec::with_capacity(buffer.rows.len());
        self.write_from(&mut buffer, &mut 0, &mut touched)?;
        Ok(touched)
    }

    /// Writes `buffer.rows[*done..]` in chunks, adding each row's key and base to `touched`.
    /// A chunk's points are dropped as soon as the store has its columns: a flush's buffer is
    /// the write path's largest allocation, and a burst has one in the flusher while the shard
    /// fills the next. On failure `*done` is where a retry resumes (the chunks before it are
    /// stored; writing a chunk again would only put the same columns).
    fn write_from(
        &self,
        buffer: &mut Buffer,
        done: &mut usize,
        touched: &mut Vec<(Vec<u8>, u32)>,
    ) -> Result<(), WriteError> {
        while *done < buffer.rows.len() {
            let chunk = *done..(*done + MUTATE_CHUNK).min(buffer.rows.len());
            let mut batch = Vec::with_capacity(chunk.len());
            let mut keys = Vec::with_capacity(chunk.len());
            for r in &mut buffer.rows[chunk.clone()] {
                settle(&mut r.points);
                let (q, v) = build_column(&r.points);
                let row = self.layout.row_key(r.series.tsuid, r.base);
                batch.push(RowMutations::put(row.clone(), DATA_FAMILY, q, v));
                keys.push((row, r.base));
            }
            self.store.mutate(&self.table, batch)?;
            for r in &mut buffer.rows[chunk.clone()] {
                r.points = Vec::new();
            }
            touched.append(&mut keys);
            *done = chunk.end;
        }
        Ok(())
    }

    pub fn run(self, jobs: Receiver<FlushJob>) {
        // Rows that may need compacting: key -> (base, last write).
        let mut pending: HashMap<Vec<u8>, (u32, Instant)> = HashMap::new();
        let compactor = Compactor::new(self.store.clone(), &self.table);
        while let Ok(job) = jobs.recv() {
            let FlushJob {
                buffer,
                wal_upto,
                waiters,
                readers,
                last,
            } = job;
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
            let compacted = self.compact_ready(&compactor, &mut pending, last);
            crate::observe::write::compaction_queue(queued, pending.len());
            // The buffer, the compacted rows and perhaps a memtable the engine wrote out are
            // free now: give them back before the next burst is buffered on top of them. Not
            // after small flushes, nor after a job only a query asked for: the release returns
            // queries' freed memory too (see `crate::memory`).
            if points >= RELEASE_AFTER_POINTS || compacted >= RELEASE_AFTER_ROWS {
                tsgate_common::memory::release_freed();
            }
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
        let (mut done, mut touched) = (0, Vec::with_capacity(buffer.rows.len()));
        loop {
            match self.write_from(&mut buffer, &mut done, &mut touched) {
                Ok(()) => {
                    // Only a write that reached the store proves it healthy (an empty flush
                    // of another shard must not hide a failing one).
                    if !touched.is_empty() {
                        self.store_ok
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    break;
                }
                Err(e) => {
                    self.store_ok
                        .store(false, std::sync::atomic::Ordering::Relaxed);
                    tracing::error!(error = %e, "store write failed; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
        // Readable now: the jobs before this one were written first.
        self.in_flight
            .written
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        for r in readers {
            let _ = r.send(Ok(()));
        }
        for (row, base) in touched {
            pending.insert(row, (base, now));
        }
        if let (Some(c), Some(counts)) = (&self.ts_counter, counts) {
            let counts: Vec<(&[u8], u64)> = counts.iter().map(|(s, n)| (s.tsuid, *n)).collect();
            // Metadata is best effort: a failure here must not hold up the data.
            if let Err(e) = c.record(&counts) {
                tracing::warn!(error = %e, "ts_ctr update failed");
            }
        }
        if let Some(upto) = wal_upto {
            self.store.flush()?;
            super::wal::retire_upto(&self.wal_dir, upto)
                .map_err(|e| WriteError::Wal(e.to_string()))?;
        }
        Ok(())
    }

    /// Compacts the rows due; returns how many it compacted.
    fn compact_ready(
        &self,
        compactor: &Compactor,
        pending: &mut HashMap<Vec<u8>, (u32, Instant)>,
        all: bool,
    ) -> usize {
        let now = now_s();
        let mut ready: Vec<(Vec<u8>, u32, Instant)> = pending
            .iter()
            .filter(|(_, (base, touched))| {
                hour_closed(*base, now) && (all || touched.elapsed() >= self.compaction_delay)
            })
            .map(|(k, (base, t))| (k.clone(), *base, *t))
            .collect();
        if ready.is_empty() {
            // Flush ticks keep coming while ingest is quiet: a store waiting for the deletes to
            // stop hears again that compaction is caught up (see `Store::tidy`).
            if !all {
                self.tidy_if_caught_up(pending, now);
            }
            return 0;
        }
        // Oldest first, and (outside shutdown) only as many as fit in the budget: flushing must
        // not starve behind compaction. Rows left waiting gather more points meanwhile, so with
        // many series (a backfill of a million, say) each row is compacted fewer times.
        ready.sort_by_key(|(_, _, t)| *t);
        let started = Instant::now();
        let mut taken = 0;
        for chunk in ready.chunks(COMPACT_CHUNK) {
            if !all && started.elapsed() >= COMPACT_BUDGET {
                break;
            }
            let rows: Vec<Vec<u8>> = chunk.iter().map(|(k, _, _)| k.clone()).collect();
            for row in &rows {
                pending.remove(row);
            }
            let left = if all {
                compactor.compact_all(&rows, SETTLE * 3)
            } else {
                compactor.compact(&rows)
            };
            taken += rows.len().saturating_sub(left.len());
            // Rows still settling (or that failed) come back after the settle time.
            let retry_at = Instant::now()
                .checked_sub(self.compaction_delay.saturating_sub(SETTLE))
                .unwrap_or_else(Instant::now);
            let base_of: HashMap<&[u8], u32> =
                chunk.iter().map(|(k, base, _)| (&k[..], *base)).collect();
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
        taken
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

/// A flush of at least this many points, or a compaction pass over at least this many rows,
/// returns the memory it freed to the OS at once (about a MiB of buffered points; a steady
/// scrape of 10,000 series every 10 s flushes 500 points a time and never does).
const RELEASE_AFTER_POINTS: usize = 65_536;
const RELEASE_AFTER_ROWS: usize = 1_024;

/// Rows compacted per store round trip.
const COMPACT_CHUNK: usize = 512;

/// Compaction time per flush cycle (the cycle is `write.flush_interval_ms`, 0.5 s by default).
const COMPACT_BUDGET: Duration = Duration::from_millis(300);

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_schema::DataValue;

    #[test]
    fn settle_keeps_the_last_write_of_an_offset() {
        let p = |ts: u64, v: i64| RawPoint::encode(ts, 1356998400, DataValue::Int(v)).unwrap();
        let mut pts = vec![
            p(1356998410, 1),
            p(1356998400, 2),
            p(1356998410, 3),
            p(1356998400000, 4),
        ];
        settle(&mut pts);
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].value().unwrap(), DataValue::Int(4));
        assert_eq!(pts[1].value().unwrap(), DataValue::Int(3));
        // In order and once each: as they were.
        let mut pts = vec![p(1356998400, 1), p(1356998400500, 2), p(1356998410, 3)];
        settle(&mut pts);
        assert_eq!(
            pts.iter().map(|p| p.value().unwrap()).collect::<Vec<_>>(),
            [1, 2, 3].map(DataValue::Int)
        );
        // In order but for a repeat at the end: the later write stands.
        let mut pts = vec![p(1356998400, 1), p(1356998410, 2), p(1356998410, 3)];
        settle(&mut pts);
        assert_eq!(
            pts.iter().map(|p| p.value().unwrap()).collect::<Vec<_>>(),
            [1, 3].map(DataValue::Int)
        );
    }

    /// Fails its `fail_at`-th `mutate` (counting from 1), once.
    struct FlakyStore {
        inner: SharedStore,
        calls: std::sync::atomic::AtomicUsize,
        fail_at: usize,
    }

    impl tsgate_store::Store for FlakyStore {
        fn get(
            &self,
            t: &str,
            r: &[u8],
            f: &[&[u8]],
        ) -> tsgate_store::StoreResult<Vec<tsgate_store::Cell>> {
            self.inner.get(t, r, f)
        }
        fn mutate(&self, t: &str, b: Vec<RowMutations>) -> tsgate_store::StoreResult<()> {
            if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == self.fail_at {
                return Err(tsgate_store::StoreError::Engine {
                    op: "mutate",
                    table: t.into(),
                    msg: "injected".into(),
                });
            }
            self.inner.mutate(t, b)
        }
        fn scan(
            &self,
            t: &str,
            s: &tsgate_store::Scan,
        ) -> tsgate_store::StoreResult<tsgate_store::RowStream> {
            self.inner.scan(t, s)
        }
        fn increment(
            &self,
            t: &str,
            r: &[u8],
            f: &[u8],
            q: &[u8],
            d: i64,
        ) -> tsgate_store::StoreResult<i64> {
            self.inner.increment(t, r, f, q, d)
        }
        fn check_and_put(
            &self,
            t: &str,
            r: &[u8],
            f: &[u8],
            q: &[u8],
            e: Option<&[u8]>,
            v: &[u8],
        ) -> tsgate_store::StoreResult<bool> {
            self.inner.check_and_put(t, r, f, q, e, v)
        }
        fn flush(&self) -> tsgate_store::StoreResult<()> {
            self.inner.flush()
        }
        fn mutate_at(
            &self,
            t: &str,
            b: Vec<RowMutations>,
            ts: u64,
        ) -> tsgate_store::StoreResult<()> {
            self.inner.mutate_at(t, b, ts)
        }
    }

    const ROWS: usize = 2 * MUTATE_CHUNK + 10;
    const BASE: u32 = 1_356_998_400;

    /// A flusher over a store that fails its second write once, and a buffer of `ROWS` rows of
    /// three points each, row i holding i*10, i*10+1, i*10+2.
    fn flaky_flush() -> (
        tempfile::TempDir,
        Flusher,
        std::sync::Arc<FlakyStore>,
        Buffer,
        Vec<crate::series::Series>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let names = tsgate_store::TableNames::default();
        let inner: SharedStore = std::sync::Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(&dir.path().join("store"), &names.specs())
                .unwrap(),
        );
        let flaky = std::sync::Arc::new(FlakyStore {
            inner,
            calls: Default::default(),
            fail_at: 2,
        });
        let flusher = Flusher {
            store: flaky.clone(),
            table: names.data.clone(),
            layout: KeyLayout::default(),
            wal_dir: dir.path().join("wal"),
            compaction_delay: Duration::ZERO,
            ts_counter: None,
            store_ok: Default::default(),
            in_flight: Default::default(),
        };
        let mut buffer = Buffer::default();
        let series: Vec<_> = (0..ROWS as u32)
            .map(|i| {
                crate::series::SeriesKey::new(&[
                    0,
                    0,
                    7,
                    0,
                    0,
                    1,
                    (i >> 16) as u8,
                    (i >> 8) as u8,
                    i as u8,
                ])
            })
            .collect();
        for (i, s) in series.iter().enumerate() {
            for k in 0..3u64 {
                buffer.insert(
                    s,
                    BASE,
                    RawPoint::encode(
                        BASE as u64 + k * 10,
                        BASE,
                        DataValue::Int(i as i64 * 10 + k as i64),
                    )
                    .unwrap(),
                );
            }
        }
        (dir, flusher, flaky, buffer, series)
    }

    /// Every row holds one column of its three points.
    fn assert_stored(store: &SharedStore, series: &[crate::series::Series]) {
        let table = tsgate_store::TableNames::default().data;
        for (i, s) in series.iter().enumerate() {
            let row = KeyLayout::default().row_key(s.tsuid, BASE);
            let cells = store.get(&table, &row, &[DATA_FAMILY]).unwrap();
            assert_eq!(cells.len(), 1, "row {i}: one column");
            let mut points = Vec::new();
            tsgate_schema::column::decode_compacted(
                &cells[0].qualifier,
                &cells[0].value,
                &mut points,
            )
            .unwrap();
            let values: Vec<_> = points.iter().map(|p| p.value().unwrap()).collect();
            assert_eq!(
                values,
                (0..3)
                    .map(|k| DataValue::Int(i as i64 * 10 + k))
                    .collect::<Vec<_>>(),
                "row {i}"
            );
        }
    }

    /// A flush that fails part-way resumes at the first chunk the store did not take: the
    /// chunks before it are stored once and their points already dropped, the rest are kept
    /// until stored, and in the end every row holds its points.
    #[test]
    fn a_failed_flush_resumes_at_the_chunk_that_failed() {
        let (_dir, flusher, flaky, mut buffer, series) = flaky_flush();
        let (mut done, mut touched) = (0, Vec::new());
        assert!(flusher
            .write_from(&mut buffer, &mut done, &mut touched)
            .is_err());
        assert_eq!(done, MUTATE_CHUNK, "the first chunk is stored");
        assert_eq!(touched.len(), MUTATE_CHUNK);
        assert!(
            buffer.rows[..MUTATE_CHUNK]
                .iter()
                .all(|r| r.points.is_empty() && r.points.capacity() == 0),
            "stored rows' points are dropped"
        );
        assert!(
            buffer.rows[MUTATE_CHUNK..]
                .iter()
                .all(|r| r.points.len() == 3),
            "rows not stored keep their points"
        );
        flusher
            .write_from(&mut buffer, &mut done, &mut touched)
            .unwrap();
        assert_eq!((done, touched.len()), (ROWS, ROWS));
        for (i, s) in series.iter().enumerate() {
            assert_eq!(
                touched[i],
                (KeyLayout::default().row_key(s.tsuid, BASE), BASE)
            );
        }
        // One call per chunk, plus the one that failed: nothing was written twice.
        assert_eq!(flaky.calls.load(std::sync::atomic::Ordering::SeqCst), 3 + 1);
        assert_stored(&flaky.inner, &series);
    }

    /// The flush loop around it: the failure marks the store unavailable, the retry stores
    /// the rest and marks it available again, and every row waits for its compaction.
    #[test]
    fn a_flush_retries_a_failed_store_write_to_the_end() {
        let (_dir, flusher, flaky, buffer, series) = flaky_flush();
        let mut pending = HashMap::new();
        flusher
            .flush_durably(buffer, None, &mut pending, Vec::new())
            .unwrap();
        assert!(
            flusher.store_ok.load(std::sync::atomic::Ordering::SeqCst),
            "available again"
        );
        assert_eq!(pending.len(), ROWS);
        assert!(series.iter().all(|s| pending
            .get(&KeyLayout::default().row_key(s.tsuid, BASE))
            .is_some_and(|(b, _)| *b == BASE)));
        assert_eq!(flaky.calls.load(std::sync::atomic::Ordering::SeqCst), 3 + 1);
        assert_stored(&flaky.inner, &series);
    }

    #[test]
    fn hours_close_a_second_after_they_end() {
        assert!(!hour_closed(1356998400, 1357002000));
        assert!(hour_closed(1356998400, 1357002001));
    }
}
