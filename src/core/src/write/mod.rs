//! The durable write path: resolved points → WAL (group commit) → per series-hour buffer →
//! batched store writes (a partial column per flush, rolled into one every
//! `write.roll_interval_ms`) → compaction of closed hours on its own thread. A write is
//! acknowledged once logged.

pub mod compaction;
pub mod compactor;
pub mod direct;
pub mod flusher;
pub mod rollup;
pub mod shard;
pub mod wal;

use crate::uid::UidError;
use shard::{ShardMsg, StoredPoint};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tsgate_schema::KeyLayout;
use tsgate_store::{SharedStore, StoreError};

#[derive(Debug, Clone, thiserror::Error)]
pub enum WriteError {
    /// Shared: one failed log write or fsync answers every point waiting on it.
    #[error("write-ahead log failure: {0}")]
    Wal(Arc<std::io::Error>),
    #[error("write-ahead log failure: {path}: {source}")]
    WalAt {
        path: String,
        source: Arc<std::io::Error>,
    },
    /// Shared like `Wal`: one failed store write answers every point of its flush.
    #[error("storage failure: {0}")]
    Store(#[source] Arc<StoreError>),
    /// New UIDs or series could not be made durable before the log refers to them.
    #[error("storage failure: {0}")]
    Uid(#[source] Arc<UidError>),
    /// A blocking task of the write path panicked or was cancelled.
    #[error("storage failure: {task} task failed: {source}")]
    Task {
        task: &'static str,
        source: Arc<tokio::task::JoinError>,
    },
    /// The flusher gave up on a store that refuses writes while the node stops.
    #[error("storage failure: the node is stopping while the store refuses writes; the points stay in the write-ahead log")]
    GaveUp,
    #[error("the server is shutting down")]
    ShuttingDown,
}

impl WriteError {
    pub fn wal(e: std::io::Error) -> WriteError {
        WriteError::Wal(Arc::new(e))
    }

    fn wal_at(dir: &Path, e: std::io::Error) -> WriteError {
        WriteError::WalAt {
            path: dir.display().to_string(),
            source: Arc::new(e),
        }
    }
}

impl From<StoreError> for WriteError {
    fn from(e: StoreError) -> Self {
        WriteError::Store(Arc::new(e))
    }
}

impl From<UidError> for WriteError {
    fn from(e: UidError) -> Self {
        WriteError::Uid(Arc::new(e))
    }
}

impl WriteError {
    /// A failed blocking task of the write path (`task` names it).
    pub fn task(task: &'static str, e: tokio::task::JoinError) -> WriteError {
        WriteError::Task {
            task,
            source: Arc::new(e),
        }
    }
}

#[derive(Debug, Clone)]
pub struct WriterConfig {
    pub shards: usize,
    pub flush_interval: Duration,
    pub fsync: bool,
    pub max_batch_points: usize,
    pub buffer_max_points: usize,
    pub compaction_delay: Duration,
    /// How long the open hour's partial columns of a row gather before they are merged into
    /// one (see `flusher`); zero: never.
    pub roll_interval: Duration,
    /// Most points a shard's flusher holds for those merges.
    pub roll_max_points: usize,
    /// Submissions queued per shard before writers wait.
    pub queue_depth: usize,
    /// `ts_ctr` maintenance (tsdb-meta), when tracking is on.
    pub ts_counter: Option<Arc<crate::meta::counter::TsCounter>>,
    /// Rollup cells built as closed hours are compacted (`[rollups]`).
    pub rollups: Option<Arc<rollup::RollupBuild>>,
}

/// The handle protocol handlers write through. Cheap to clone.
#[derive(Clone)]
pub struct Writer {
    /// Emptied by `close`, which is what lets the shards drain and stop.
    shards: Arc<parking_lot::RwLock<Vec<mpsc::Sender<ShardMsg>>>>,
    /// False while a flusher's store writes fail (HBase down, disk full).
    store_ok: Arc<std::sync::atomic::AtomicBool>,
    /// Each shard's input not yet in the store (see `Writer::publish`).
    in_flight: Arc<Vec<Arc<shard::InFlight>>>,
    /// Set by `close`: flushers give up a flush the store refuses (see `Flusher::closing`).
    closing: Arc<std::sync::atomic::AtomicBool>,
}

pub struct WriterThreads {
    threads: Vec<std::thread::JoinHandle<()>>,
}

fn wal_root(data_dir: &Path) -> PathBuf {
    data_dir.join("wal")
}

/// Writes every point left in the WAL (from a crash) to the store, then removes the segments.
pub fn recover(
    data_dir: &Path,
    store: &SharedStore,
    table: &str,
    layout: KeyLayout,
    rollups: Option<Arc<rollup::RollupBuild>>,
) -> Result<wal::ReplayStats, WriteError> {
    let root = wal_root(data_dir);
    let mut total = wal::ReplayStats::default();
    if !root.exists() {
        return Ok(total);
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(WriteError::wal)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    let flusher = flusher::Flusher {
        store: store.clone(),
        table: table.to_string(),
        layout,
        wal_dir: root.clone(),
        compaction_delay: Duration::ZERO,
        roll_interval: Duration::ZERO,
        roll_max_points: 0,
        ts_counter: None,
        rollups: rollups.clone(),
        store_ok: Default::default(),
        in_flight: Default::default(),
        closing: Default::default(),
        gave_up: Default::default(),
    };
    for dir in dirs {
        let mut buffer = shard::Buffer::default();
        let stats = wal::replay(&dir, |tsuid, base, p| {
            buffer.insert(crate::series::SeriesKey::new(tsuid), base, p)
        })
        .map_err(|e| WriteError::wal_at(&dir, e))?;
        if stats.points > 0 {
            tracing::info!(dir = %dir.display(), points = stats.points, records = stats.records, "replaying write-ahead log");
        }
        let touched = flusher.write(buffer)?;
        store.flush()?;
        // Rows of closed hours get their compaction now: no flusher will see them again.
        let now = tsgate_common::clock::now_ms() / 1000;
        let closed: Vec<Vec<u8>> = touched
            .into_iter()
            .filter(|(_, base)| flusher::hour_closed(*base, now))
            .map(|(r, _)| r)
            .collect();
        let left = compactor::Compactor::new(store.clone(), table)
            .with_rollups(rollups.clone())
            .compact_all(&closed, compactor::SETTLE * 3);
        if !left.is_empty() {
            tracing::warn!(
                rows = left.len(),
                "rows left uncompacted after replay (readers merge them; fsck --fix compacts)"
            );
        }
        store.flush()?;
        let last = wal::segments(&dir)
            .map_err(WriteError::wal)?
            .last()
            .copied();
        if let Some(last) = last {
            wal::retire_upto(&dir, last).map_err(WriteError::wal)?;
        }
        // A crash leaves free files behind; the shards, perhaps fewer now, build their own.
        wal::remove_free(&dir).map_err(WriteError::wal)?;
        total.segments += stats.segments;
        total.records += stats.records;
        total.points += stats.points;
        total.damaged += stats.damaged;
    }
    Ok(total)
}

impl Writer {
    /// Starts the shards and their flushers. Call `recover` first.
    pub fn start(
        data_dir: &Path,
        store: SharedStore,
        table: &str,
        layout: KeyLayout,
        cfg: &WriterConfig,
        rt: tokio::runtime::Handle,
    ) -> Result<(Writer, WriterThreads), WriteError> {
        let mut senders = Vec::new();
        let mut threads = Vec::new();
        let mut in_flights = Vec::new();
        let store_ok = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let closing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for i in 0..cfg.shards.max(1) {
            let dir = wal_root(data_dir).join(format!("shard-{i}"));
            let wal = wal::Wal::open(&dir, cfg.fsync).map_err(|e| WriteError::wal_at(&dir, e))?;
            let (tx, rx) = mpsc::channel(cfg.queue_depth);
            let (jobs_tx, jobs_rx) = std::sync::mpsc::sync_channel(1);
            let in_flight = Arc::new(shard::InFlight::default());
            in_flights.push(in_flight.clone());
            let flusher = flusher::Flusher {
                store: store.clone(),
                table: table.to_string(),
                layout,
                wal_dir: dir.clone(),
                compaction_delay: cfg.compaction_delay,
                roll_interval: cfg.roll_interval,
                roll_max_points: cfg.roll_max_points,
                ts_counter: cfg.ts_counter.clone(),
                rollups: cfg.rollups.clone(),
                store_ok: store_ok.clone(),
                in_flight: in_flight.clone(),
                closing: closing.clone(),
                gave_up: Default::default(),
            };
            let scfg = shard::ShardConfig {
                flush_interval: cfg.flush_interval,
                max_batch_points: cfg.max_batch_points,
                buffer_max_points: cfg.buffer_max_points,
            };
            let handle = rt.clone();
            // Unbounded, but each request has writers waiting on it (every caller waits).
            let (sync_tx, sync_rx) = std::sync::mpsc::channel();
            let poisoned = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let syncer = wal::Syncer {
                poisoned: poisoned.clone(),
            };
            threads.push(
                std::thread::Builder::new()
                    .name(format!("wal-sync-{i}"))
                    .spawn(move || {
                        syncer.run(sync_rx, |ack: shard::Ack, res| {
                            let _ = ack.send(res.map_err(WriteError::wal));
                        })
                    })
                    .map_err(WriteError::wal)?,
            );
            threads.push(
                std::thread::Builder::new()
                    .name(format!("flush-{i}"))
                    .spawn(move || flusher.run(jobs_rx))
                    .map_err(WriteError::wal)?,
            );
            threads.push(
                std::thread::Builder::new()
                    .name(format!("shard-{i}"))
                    .spawn(move || {
                        shard::run(rx, wal, jobs_tx, sync_tx, poisoned, in_flight, scfg, handle)
                    })
                    .map_err(WriteError::wal)?,
            );
            senders.push(tx);
        }
        Ok((
            Writer {
                shards: Arc::new(parking_lot::RwLock::new(senders)),
                store_ok,
                in_flight: Arc::new(in_flights),
                closing,
            },
            WriterThreads { threads },
        ))
    }

    fn senders(&self) -> Result<Vec<mpsc::Sender<ShardMsg>>, WriteError> {
        let s = self.shards.read().clone();
        if s.is_empty() {
            return Err(WriteError::ShuttingDown);
        }
        Ok(s)
    }

    /// Write batches queued for the shards now (for `/metrics`).
    pub fn queued(&self) -> usize {
        self.shards
            .read()
            .iter()
            .map(|s| s.max_capacity() - s.capacity())
            .sum()
    }

    /// Whether the store takes writes. While it does not, HTTP writes are answered 503 and TCP
    /// listeners stop reading (the WAL keeps what was acknowledged; flushers keep retrying).
    pub fn store_available(&self) -> bool {
        self.store_ok.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until the store takes writes again.
    pub async fn wait_store_available(&self) {
        while !self.store_available() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops accepting writes; the shards drain what is queued, flush and stop.
    pub fn close(&self) {
        self.closing
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.shards.write().clear();
    }

    /// Logs the points durably and buffers them. With `wait`, returns once the WAL holds them;
    /// without, returns once they are queued (every protocol waits today: telnet and plaintext
    /// for backpressure and error lines, HTTP for its acknowledgement).
    pub async fn write(&self, points: Vec<StoredPoint>, wait: bool) -> Result<(), WriteError> {
        if points.is_empty() {
            return Ok(());
        }
        let shards = self.senders()?;
        let n = shards.len();
        let mut parts: Vec<Vec<StoredPoint>> = (0..n).map(|_| Vec::new()).collect();
        if n == 1 {
            parts[0] = points;
        } else {
            for p in points {
                let s = (p.series.hash % n as u64) as usize;
                parts[s].push(p);
            }
        }
        let mut acks = Vec::new();
        for (i, part) in parts.into_iter().enumerate() {
            if part.is_empty() {
                continue;
            }
            let (ack, rx) = if wait {
                let (t, r) = oneshot::channel();
                (Some(t), Some(r))
            } else {
                (None, None)
            };
            // Counted before the shard can take it (see `InFlight::all_stored`); uncounted
            // again if it never gets there (shutdown, or this future dropped while waiting).
            let queued = Queued::count(&self.in_flight[i].queued, part.len() as u64);
            shards[i]
                .send(ShardMsg::Write { points: part, ack })
                .await
                .map_err(|_| WriteError::ShuttingDown)?;
            queued.sent();
            acks.extend(rx);
        }
        for a in acks {
            a.await.map_err(|_| WriteError::ShuttingDown)??;
        }
        Ok(())
    }

    /// Returns once everything written before the call is in the store (and so queryable).
    pub async fn flush(&self) -> Result<(), WriteError> {
        self.ask_shards(ShardMsg::Flush).await
    }

    /// Returns once everything acknowledged before the call can be read: at once when the
    /// shards hold nothing, else after their flushers have written it (not waiting for the
    /// store to make it durable; the WAL already has). Queries call it before they read.
    pub async fn publish(&self) -> Result<(), WriteError> {
        // Nothing held anywhere (a query between bursts): no round trip to the shards.
        if self.in_flight.iter().all(|f| f.all_stored()) {
            return Ok(());
        }
        self.ask_shards(ShardMsg::Publish).await
    }

    /// Sends `msg` to every shard and waits for every answer (one shard failing does not cut
    /// the wait for the others short); the first failure is the result.
    async fn ask_shards(
        &self,
        msg: fn(oneshot::Sender<Result<(), WriteError>>) -> ShardMsg,
    ) -> Result<(), WriteError> {
        let mut acks = Vec::new();
        let mut result = Ok(());
        for s in self.senders()?.iter() {
            let (t, r) = oneshot::channel();
            match s.send(msg(t)).await {
                Ok(()) => acks.push(r),
                Err(_) => result = result.and(Err(WriteError::ShuttingDown)),
            }
        }
        for a in acks {
            let answer = a.await.unwrap_or(Err(WriteError::ShuttingDown));
            result = result.and(answer);
        }
        result
    }
}

/// Points counted as queued for a shard while they are being sent to it.
struct Queued<'a>(&'a std::sync::atomic::AtomicU64, u64);

impl<'a> Queued<'a> {
    fn count(queued: &'a std::sync::atomic::AtomicU64, n: u64) -> Self {
        queued.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
        Queued(queued, n)
    }

    /// The shard has them: it uncounts them once it takes them.
    fn sent(self) {
        std::mem::forget(self);
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0
            .fetch_sub(self.1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl WriterThreads {
    /// Waits for the shards to drain, flush and compact. Every `Writer` clone must be dropped
    /// first (that is what closes the shards' queues).
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_keep_their_type_and_text() {
        let e = WriteError::from(StoreError::NoSuchTable("tsdb".into()));
        assert!(
            matches!(&e, WriteError::Store(s) if matches!(&**s, StoreError::NoSuchTable(t) if t == "tsdb"))
        );
        assert_eq!(e.to_string(), "storage failure: unknown table tsdb");
        let source = std::error::Error::source(&e).expect("the store error is the source");
        assert_eq!(source.to_string(), "unknown table tsdb");
        let e = WriteError::from(UidError::Store(StoreError::NoSuchTable("tsdb-uid".into())));
        assert_eq!(e.to_string(), "storage failure: unknown table tsdb-uid");
        assert_eq!(
            WriteError::GaveUp.to_string(),
            "storage failure: the node is stopping while the store refuses writes; the points stay in the write-ahead log"
        );
    }

    /// An integer point at `ts` seconds and the base time of its row.
    fn sample(ts: u64, v: i64) -> (u32, tsgate_schema::RawPoint) {
        let base = tsgate_schema::rowkey::base_time(ts);
        let point =
            tsgate_schema::RawPoint::encode(ts, base, tsgate_schema::DataValue::Int(v)).unwrap();
        (base, point)
    }

    fn one_shard(fsync: bool) -> WriterConfig {
        WriterConfig {
            shards: 1,
            flush_interval: Duration::from_secs(60),
            fsync,
            max_batch_points: 1024,
            buffer_max_points: 1 << 20,
            compaction_delay: Duration::from_secs(60),
            roll_interval: Duration::from_secs(30),
            roll_max_points: 1 << 20,
            queue_depth: 64,
            ts_counter: None,
            rollups: None,
        }
    }

    /// Points sent without waiting (telnet, plaintext) are readable after `publish` even while
    /// they still sit in a shard's queue: the fast path that skips asking the shards must not
    /// take queued points for stored ones.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn publish_covers_points_still_queued_for_a_shard() {
        let dir = tempfile::tempdir().unwrap();
        let names = tsgate_store::TableNames::default();
        let store: SharedStore = Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(&dir.path().join("store"), &names.specs())
                .unwrap(),
        );
        let cfg = one_shard(false);
        let layout = KeyLayout::default();
        let (writer, threads) = Writer::start(
            dir.path(),
            store.clone(),
            &names.data,
            layout,
            &cfg,
            tokio::runtime::Handle::current(),
        )
        .unwrap();
        for round in 0..20u32 {
            let series = crate::series::SeriesKey::new(&[0, 0, 1, 0, 0, 1, 0, 0, 2 + round as u8]);
            let (base, point) = sample(1_356_998_400, round as i64);
            writer
                .write(
                    vec![StoredPoint {
                        series,
                        base,
                        point,
                    }],
                    false,
                )
                .await
                .unwrap();
            writer.publish().await.unwrap();
            let row = layout.row_key(series.tsuid, base);
            let cells = store
                .get(&names.data, &row, &[tsgate_schema::DATA_FAMILY])
                .unwrap();
            assert_eq!(
                cells.len(),
                1,
                "round {round}: the point is readable once publish returns"
            );
        }
        writer.close();
        drop(writer);
        threads.join();
    }

    /// Retired segments are written over by later ones while the node runs, and deleted by a
    /// clean stop.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn free_wal_files_are_reused_while_running_and_gone_after_a_clean_stop() {
        let dir = tempfile::tempdir().unwrap();
        let names = tsgate_store::TableNames::default();
        let store: SharedStore = Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(&dir.path().join("store"), &names.specs())
                .unwrap(),
        );
        let cfg = one_shard(true);
        let (writer, threads) = Writer::start(
            dir.path(),
            store.clone(),
            &names.data,
            KeyLayout::default(),
            &cfg,
            tokio::runtime::Handle::current(),
        )
        .unwrap();
        let shard_dir = wal_root(dir.path()).join("shard-0");
        let files = |suffix: &str| {
            let mut v: Vec<String> = std::fs::read_dir(&shard_dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(suffix))
                .collect();
            v.sort();
            v
        };
        let inode = |name: &str| {
            std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(shard_dir.join(name)).unwrap())
        };
        let mut reused = 0;
        for round in 0..5u32 {
            let series = crate::series::SeriesKey::new(&[0, 0, 1, 0, 0, 1, 0, 0, 2]);
            let (base, point) = sample(1_356_998_400 + round as u64, round as i64);
            writer
                .write(
                    vec![StoredPoint {
                        series,
                        base,
                        point,
                    }],
                    true,
                )
                .await
                .unwrap();
            let free_before: Vec<u64> = files(".free").iter().map(|n| inode(n)).collect();
            writer.flush().await.unwrap(); // rotates; the flusher retires what the store now holds
            let current = files(".wal");
            assert_eq!(current.len(), 1, "{:?}", files(""));
            if free_before.contains(&inode(&current[0])) {
                reused += 1;
            }
            assert_eq!(
                files(".free").len(),
                1,
                "the segment just retired: {:?}",
                files("")
            );
        }
        assert_eq!(
            reused, 4,
            "every rotation after the first takes the file retired before it"
        );
        writer.close();
        drop(writer);
        threads.join();
        assert!(files(".free").is_empty(), "{:?}", files(""));
        let current = files(".wal");
        assert_eq!(
            current.len(),
            1,
            "the current segment stays: {:?}",
            files("")
        );
        assert_eq!(
            std::fs::metadata(shard_dir.join(&current[0]))
                .unwrap()
                .len(),
            0,
            "no group went to it: emptied"
        );
        let row = KeyLayout::default().row_key(&[0, 0, 1, 0, 0, 1, 0, 0, 2], 1_356_998_400);
        assert!(!store
            .get(&names.data, &row, &[tsgate_schema::DATA_FAMILY])
            .unwrap()
            .is_empty());
    }
}
