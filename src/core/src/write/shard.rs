//! One write shard: a thread that owns a WAL and an in-memory buffer of points per
//! series-hour. Writes are logged, buffered, and acknowledged once the shard's syncer has
//! fsynced them (group commit); every flush interval the buffer is handed to the shard's
//! flusher and the WAL segment rotated.

use super::flusher::FlushJob;
use super::wal::{SyncRequest, Wal};
use super::WriteError;
use crate::series::Series;
use std::collections::HashMap;
use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tsgate_schema::RawPoint;

/// A point ready for storage: its series, its row's base hour, and its encoded column.
#[derive(Clone, Debug)]
pub struct StoredPoint {
    pub series: Series,
    pub base: u32,
    pub point: RawPoint,
}

/// Input quiet this long ends a burst: the buffer is flushed without waiting for the tick.
const IDLE_FLUSH: Duration = Duration::from_millis(50);
/// At most one idle flush per this fraction of `write.flush_interval_ms`: a longer interval,
/// chosen for fewer partial columns, keeps most of its effect.
const IDLE_GAP_DIVISOR: u32 = 4;

pub type Ack = oneshot::Sender<Result<(), WriteError>>;

pub enum ShardMsg {
    Write {
        points: Vec<StoredPoint>,
        ack: Option<Ack>,
    },
    /// Acknowledged once everything written before it is in the store.
    Flush(oneshot::Sender<Result<(), WriteError>>),
    /// Acknowledged once everything written before it can be read: in the store, though
    /// perhaps not yet durable there (the WAL holds it). What a query asks before it reads.
    Publish(oneshot::Sender<Result<(), WriteError>>),
}

impl ShardMsg {
    /// The points it brings (what a group commit counts).
    fn points(&self) -> usize {
        match self {
            ShardMsg::Write { points, .. } => points.len(),
            ShardMsg::Flush(_) | ShardMsg::Publish(_) => 0,
        }
    }
}

/// Points per series-hour, in arrival order.
#[derive(Default)]
pub struct Buffer {
    /// In the order each series-hour first came.
    pub rows: Vec<Row>,
    /// Where each series-hour is in `rows`, when its series' `slot` does not say.
    index: HashMap<(Series, u32), u32, ahash::RandomState>,
    pub points: usize,
}

pub struct Row {
    pub series: Series,
    pub base: u32,
    pub points: Vec<RawPoint>,
}

impl Buffer {
    pub fn insert(&mut self, series: Series, base: u32, p: RawPoint) {
        // The series' own slot names its row without a hash look-up (the look-up's probe
        // missed the cache once per point). Only a hint: other buffers (the next one, a
        // replay's, other writers' in tests) set it too, and a series may have rows for two
        // hours; a row is taken only if it is this series-hour's (rows are unique by it).
        let at = series.slot.load(std::sync::atomic::Ordering::Relaxed) as usize;
        let row = match self.rows.get_mut(at) {
            Some(r) if std::ptr::eq(r.series, series) && r.base == base => r,
            _ => {
                let rows = &mut self.rows;
                let at = *self.index.entry((series, base)).or_insert_with(|| {
                    rows.push(Row {
                        series,
                        base,
                        points: Vec::new(),
                    });
                    (rows.len() - 1) as u32
                });
                series.slot.store(at, std::sync::atomic::Ordering::Relaxed);
                &mut self.rows[at as usize]
            }
        };
        row.points.push(p);
        self.points += 1;
    }
}

pub struct ShardConfig {
    pub flush_interval: Duration,
    pub max_batch_points: usize,
    pub buffer_max_points: usize,
}

/// What of a shard's input may not be readable yet: points queued for it by a write that
/// does not wait for them (see `Writer::write`), points in its buffer, and flush jobs it has
/// handed its flusher against those the flusher has written to the store.
#[derive(Default)]
pub struct InFlight {
    pub queued: std::sync::atomic::AtomicU64,
    pub buffered: std::sync::atomic::AtomicU64,
    pub sent: std::sync::atomic::AtomicU64,
    pub written: std::sync::atomic::AtomicU64,
}

impl InFlight {
    /// No job between the shard and the store.
    fn idle(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.written.load(SeqCst) == self.sent.load(SeqCst)
    }

    /// Everything sent to the shard before the call is in the store. Read in the order points
    /// move on: the shard counts points buffered before it uncounts them queued, and a job sent
    /// before it empties its buffer count, and the flusher counts a job written only after
    /// storing it; so each count seen empty here has the earlier points counted further on.
    pub fn all_stored(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.queued.load(SeqCst) == 0 && self.buffered.load(SeqCst) == 0 && self.idle()
    }
}

#[allow(clippy::too_many_arguments)]
pub fn run(
    mut rx: mpsc::Receiver<ShardMsg>,
    mut wal: Wal,
    jobs: SyncSender<FlushJob>,
    sync: std::sync::mpsc::Sender<SyncRequest<Ack>>,
    poisoned: std::sync::Arc<std::sync::atomic::AtomicBool>,
    in_flight: std::sync::Arc<InFlight>,
    cfg: ShardConfig,
    rt: tokio::runtime::Handle,
) {
    let mut buffer = Buffer::default();
    let mut last_flush = Instant::now();
    let mut next_flush = last_flush + cfg.flush_interval;
    let mut open = true;
    while open {
        let mut wait = next_flush.saturating_duration_since(Instant::now());
        if buffer.points > 0 {
            wait = wait.min(IDLE_FLUSH);
        }
        let first = rt.block_on(async { tokio::time::timeout(wait, rx.recv()).await });
        let mut batch = Vec::new();
        let mut waiters = Vec::new();
        let mut readers = Vec::new();
        let mut n = 0;
        // Input went quiet with points buffered: a burst (a batch of remote writes, a file
        // piped to the telnet port) has ended, so make it queryable now rather than at the
        // next tick. Not more often than a quarter interval, so that many small bursts don't write
        // a partial column per burst.
        let mut quiet = false;
        match first {
            Ok(Some(m)) => {
                n += m.points();
                batch.push(m)
            }
            Ok(None) => open = false,
            Err(_) => {
                quiet = buffer.points > 0
                    && last_flush.elapsed() >= cfg.flush_interval / IDLE_GAP_DIVISOR
            }
        }
        // Group commit: take whatever else is already queued, up to what fills the buffer. A
        // buffer flushed well past `buffer_max_points` had its rows' vectors doubled once more
        // (a row of 65 points holds room for 128): a burst kept ~1.5× the memory it needed.
        let room = cfg.buffer_max_points.saturating_sub(buffer.points);
        while n < cfg.max_batch_points.min(room) {
            match rx.try_recv() {
                Ok(m) => {
                    n += m.points();
                    batch.push(m)
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if poisoned.swap(false, std::sync::atomic::Ordering::AcqRel) {
            // An fsync of this segment failed (see `Syncer`): this batch goes to a fresh one.
            // Before it is encoded: a group committed to the failed segment would be
            // acknowledged, yet replay stops at that segment's lost pages, before it.
            if let Err(e) = wal.rotate() {
                tracing::error!(error = %e, "cannot rotate the write-ahead log after a failed fsync");
            }
        }
        let mut writes = Vec::new();
        let mut taken = 0;
        for m in batch {
            match m {
                ShardMsg::Write { points, ack } => {
                    taken += points.len() as u64;
                    wal.begin();
                    for p in &points {
                        wal.push(p.series.tsuid, p.base, &p.point);
                    }
                    wal.end();
                    writes.push((points, ack));
                }
                ShardMsg::Flush(w) => waiters.push(w),
                ShardMsg::Publish(r) => readers.push(r),
            }
        }
        // Written now, durable once the syncer's fsync ends; buffered now too (a flush that
        // stores these points before that fsync only makes them durable sooner). Writers hear
        // back after the fsync.
        let start = Instant::now();
        let written = if writes.is_empty() {
            Ok(None)
        } else {
            wal.write().map(Some)
        };
        if let Err(e) = &written {
            // A failed write may have left a torn record: later groups go to a fresh segment.
            tracing::error!(error = %e, "write-ahead log write failed; moving to a new segment");
            let _ = wal.rotate();
        }
        // One failure answers every write of the group.
        let written = written.map_err(WriteError::wal);
        let mut waiting = Vec::with_capacity(writes.len());
        for (points, ack) in writes {
            match &written {
                Ok(_) => {
                    crate::observe::write::buffered(points.len());
                    for p in points {
                        buffer.insert(p.series, p.base, p.point);
                    }
                    waiting.extend(ack);
                }
                Err(e) => {
                    if let Some(a) = ack {
                        let _ = a.send(Err(e.clone()));
                    }
                }
            }
        }
        // Before any of these points is acknowledged (see `InFlight::all_stored`).
        in_flight
            .buffered
            .store(buffer.points as u64, std::sync::atomic::Ordering::SeqCst);
        in_flight
            .queued
            .fetch_sub(taken, std::sync::atomic::Ordering::SeqCst);
        if let Ok(Some((_, file))) = written {
            if wal.fsync() {
                if let Err(std::sync::mpsc::SendError(req)) = sync.send(SyncRequest {
                    file,
                    waiters: waiting,
                }) {
                    for a in req.waiters {
                        let _ = a.send(Err(WriteError::ShuttingDown));
                    }
                }
            } else {
                crate::observe::write::wal_commit(start);
                for a in waiting {
                    let _ = a.send(Ok(()));
                }
            }
        }
        // A reader with nothing buffered or on its way to the store has nothing to wait for.
        if !readers.is_empty() && buffer.points == 0 && in_flight.idle() {
            for r in readers.drain(..) {
                let _ = r.send(Ok(()));
            }
        }
        let due = quiet
            || Instant::now() >= next_flush
            || buffer.points >= cfg.buffer_max_points
            || !waiters.is_empty()
            || !open;
        let job = if due {
            last_flush = Instant::now();
            next_flush = last_flush + cfg.flush_interval;
            let sealed = match wal.rotate() {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "cannot rotate the write-ahead log; flush postponed");
                    let e = WriteError::wal(e);
                    for w in waiters.into_iter().chain(readers) {
                        let _ = w.send(Err(e.clone()));
                    }
                    continue;
                }
            };
            FlushJob {
                buffer: std::mem::take(&mut buffer),
                wal_upto: Some(sealed),
                waiters,
                readers,
                last: !open,
            }
        } else if !readers.is_empty() {
            // Only readers ask: the buffer goes to the store now, but the WAL keeps its segment
            // (and the tick its schedule); the next flush covers these points durably.
            FlushJob {
                buffer: std::mem::take(&mut buffer),
                wal_upto: None,
                waiters,
                readers,
                last: false,
            }
        } else {
            continue;
        };
        crate::observe::write::handed_to_flusher(job.buffer.points);
        in_flight
            .sent
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        in_flight
            .buffered
            .store(0, std::sync::atomic::Ordering::SeqCst);
        // Blocks when the flusher is behind: that is the backpressure on writers.
        if jobs.send(job).is_err() {
            tracing::error!("flusher is gone; stopping shard");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_schema::DataValue;

    fn values(b: &Buffer) -> Vec<(u8, u32, Vec<i64>)> {
        b.rows
            .iter()
            .map(|r| {
                let vs = r.points.iter().map(|p| match p.value().unwrap() {
                    DataValue::Int(v) => v,
                    other => panic!("{other:?}"),
                });
                (r.series.tsuid[8], r.base, vs.collect())
            })
            .collect()
    }

    /// After a failed fsync (`poisoned`), the next batch is written to a fresh segment, never
    /// to the failed one: replay stops at that segment's lost pages, before anything after them.
    #[test]
    fn after_a_failed_fsync_the_next_batch_goes_to_a_fresh_segment() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let wal = Wal::open(dir.path(), false).unwrap();
        let (tx, rx) = mpsc::channel(8);
        let (jobs_tx, jobs_rx) = std::sync::mpsc::sync_channel(1);
        let (sync_tx, _sync_rx) = std::sync::mpsc::channel();
        let poisoned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let cfg = ShardConfig {
            flush_interval: Duration::from_secs(60),
            max_batch_points: 1024,
            buffer_max_points: 1 << 20,
        };
        let handle = rt.handle().clone();
        let in_flight = std::sync::Arc::new(InFlight::default());
        let shard = std::thread::spawn(move || {
            run(rx, wal, jobs_tx, sync_tx, poisoned, in_flight, cfg, handle)
        });
        let series = crate::series::SeriesKey::new(&[0, 0, 9, 0, 0, 1, 0, 0, 7]);
        let point = RawPoint::encode(
            1_356_998_400,
            1_356_998_400,
            tsgate_schema::DataValue::Int(5),
        )
        .unwrap();
        let (ack, acked) = oneshot::channel();
        rt.block_on(async {
            tx.send(ShardMsg::Write {
                points: vec![StoredPoint {
                    series,
                    base: 1_356_998_400,
                    point,
                }],
                ack: Some(ack),
            })
            .await
            .unwrap();
            acked.await.unwrap().unwrap();
        });
        let size = |seq: u64| {
            std::fs::metadata(dir.path().join(format!("{seq:020}.wal")))
                .unwrap()
                .len()
        };
        assert_eq!(
            size(1),
            0,
            "segment 1 failed its fsync: nothing more goes to it"
        );
        assert!(size(2) > 0, "the point is in segment 2");
        assert_eq!(
            super::super::wal::replay(dir.path(), |_, _, _| {})
                .unwrap()
                .points,
            1
        );
        drop(tx);
        let drain = std::thread::spawn(move || while jobs_rx.recv().is_ok() {});
        shard.join().unwrap();
        drain.join().unwrap();
    }

    /// A group commit takes queued writes only up to what fills the buffer: a flush job holds
    /// at most `buffer_max_points` plus one write's points, however many were queued at once.
    #[test]
    fn a_group_commit_stops_where_the_buffer_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let wal = Wal::open(dir.path(), false).unwrap();
        let (tx, rx) = mpsc::channel(64);
        let (jobs_tx, jobs_rx) = std::sync::mpsc::sync_channel(64);
        let (sync_tx, _sync_rx) = std::sync::mpsc::channel();
        let poisoned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cfg = ShardConfig {
            flush_interval: Duration::from_secs(60),
            max_batch_points: 100_000,
            buffer_max_points: 1_000,
        };
        let series = crate::series::SeriesKey::new(&[0, 0, 9, 0, 0, 1, 0, 0, 9]);
        let base = 1_356_998_400u32;
        // Forty writes of 300 points, all queued before the shard starts.
        rt.block_on(async {
            for w in 0..40u64 {
                let points = (0..300u64)
                    .map(|i| StoredPoint {
                        series,
                        base,
                        point: RawPoint::encode(
                            (base as u64 + (w * 300 + i) % 3600) * 1000,
                            base,
                            DataValue::Int(i as i64),
                        )
                        .unwrap(),
                    })
                    .collect();
                tx.send(ShardMsg::Write { points, ack: None })
                    .await
                    .unwrap();
            }
        });
        drop(tx);
        let handle = rt.handle().clone();
        let in_flight = std::sync::Arc::new(InFlight::default());
        let shard = std::thread::spawn(move || {
            run(rx, wal, jobs_tx, sync_tx, poisoned, in_flight, cfg, handle)
        });
        shard.join().unwrap();
        let sizes: Vec<usize> = jobs_rx.try_iter().map(|j| j.buffer.points).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 40 * 300);
        assert!(
            sizes.iter().all(|&n| n < 1_000 + 300),
            "flush jobs of {sizes:?} points"
        );
    }

    /// Rows found through the series' slots are the rows a plain look-up finds: with two
    /// buffers filling at once (their slots overwrite each other's), and a series spanning
    /// two hours (its slot names one of its rows).
    #[test]
    fn points_land_in_their_series_hour_whatever_the_slots_say() {
        let a = crate::series::SeriesKey::new(&[0, 0, 9, 0, 0, 1, 0, 0, 1]);
        let b = crate::series::SeriesKey::new(&[0, 0, 9, 0, 0, 1, 0, 0, 2]);
        let (h0, h1) = (1_356_998_400u32, 1_357_002_000u32);
        let p = |ts: u64, v: i64| {
            RawPoint::encode(ts, tsgate_schema::rowkey::base_time(ts), DataValue::Int(v)).unwrap()
        };
        let (mut one, mut two) = (Buffer::default(), Buffer::default());
        one.insert(a, h0, p(h0 as u64, 1));
        two.insert(a, h0, p(h0 as u64 + 10, 100));
        one.insert(a, h0, p(h0 as u64 + 10, 2));
        one.insert(b, h0, p(h0 as u64, 3));
        one.insert(a, h1, p(h1 as u64, 4));
        two.insert(b, h1, p(h1 as u64, 101));
        one.insert(a, h0, p(h0 as u64 + 20, 5));
        one.insert(a, h1, p(h1 as u64 + 10, 6));
        two.insert(a, h0, p(h0 as u64 + 20, 102));
        one.insert(b, h0, p(h0 as u64 + 10, 7));
        assert_eq!(
            values(&one),
            vec![
                (1, h0, vec![1, 2, 5]),
                (2, h0, vec![3, 7]),
                (1, h1, vec![4, 6])
            ]
        );
        assert_eq!(
            values(&two),
            vec![(1, h0, vec![100, 102]), (2, h1, vec![101])]
        );
        assert_eq!((one.points, two.points), (7, 3));
    }
}
