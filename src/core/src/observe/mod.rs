//! Observability: the node's metrics (`/metrics`, `/api/stats`, telnet `stats`), the
//! instrumented store, process statistics and log setup.
//!
//! Metrics live in one process-wide instance so that the write path, the store and the
//! listeners update them without any handle being threaded through.

pub mod expose;
pub mod logging;
pub mod metrics;
pub mod process;
pub mod queries;
pub mod registry;
pub mod store;

pub use metrics::{Listener, Metrics, Protocol, Reason};

static METRICS: std::sync::LazyLock<Metrics> = std::sync::LazyLock::new(Metrics::default);

pub fn metrics() -> &'static Metrics {
    &METRICS
}

impl Listener {
    /// The label of an accept loop's listener name.
    pub fn named(what: &str) -> Listener {
        match what {
            "graphite" => Listener::Graphite,
            "pickle" => Listener::Pickle,
            _ => Listener::OpenTsdb,
        }
    }
}

/// Counts an open connection until dropped.
pub struct ConnectionGuard(Listener);

impl ConnectionGuard {
    pub fn open(l: Listener) -> ConnectionGuard {
        let m = metrics();
        m.connections_total[l as usize].inc();
        m.connections_open[l as usize].add(1);
        ConnectionGuard(l)
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        metrics().connections_open[self.0 as usize].add(-1);
    }
}

/// The write path's hooks: one call per group commit, batch or flush, never per point.
pub mod write {
    use std::time::Instant;

    /// `bytes` appended to a WAL segment (not yet fsynced).
    pub fn wal_appended(bytes: usize) {
        super::metrics().wal_bytes.add(bytes as u64);
    }

    /// A group commit: an fsync that started at `start` (with `wal_fsync = "never"`, a write).
    pub fn wal_commit(start: Instant) {
        let m = super::metrics();
        m.wal_fsync.since(start);
        m.wal_commits.inc();
    }

    /// A sync that made new UIDs durable (the UID journal's, or the store's) from `start`.
    pub fn uid_sync(start: Instant) {
        super::metrics().uid_sync.since(start);
    }

    /// A store sync for rollup and histogram points (`write::direct`) that started at `start`.
    pub fn direct_sync(start: Instant) {
        let m = super::metrics();
        m.direct_sync.since(start);
        m.direct_syncs.inc();
    }

    /// Points acknowledged into a shard's buffer.
    pub fn buffered(points: usize) {
        super::metrics().buffered_points.add(points as i64);
    }

    /// A flusher's count of rows waiting for compaction went from `before` to `after`;
    /// returns `after`.
    pub fn compaction_queue(before: usize, after: usize) -> usize {
        super::metrics()
            .compaction_queue
            .add(after as i64 - before as i64);
        after
    }

    /// A flusher's count of rows due for compaction and not compacted went from `before` to
    /// `now`; returns `now`.
    pub fn compaction_backlog(before: usize, now: usize) -> usize {
        super::metrics()
            .compaction_backlog
            .add(now as i64 - before as i64);
        now
    }

    /// A compaction thread compacted `rows` rows in a chunk that started at `start`.
    pub fn compacted(rows: usize, start: Instant) {
        let m = super::metrics();
        m.compacted_rows.add(rows as u64);
        m.compaction_duration.since(start);
    }

    /// `rows` rows had their partial columns merged.
    pub fn rolled(rows: usize) {
        if rows > 0 {
            super::metrics().rolled_rows.add(rows as u64);
        }
    }

    /// A shard's buffer handed to its flusher.
    pub fn handed_to_flusher(points: usize) {
        let m = super::metrics();
        m.buffered_points.add(-(points as i64));
        m.flushing_points.add(points as i64);
    }

    /// A flush of `points` that started at `start` finished (written or failed).
    pub fn flushed(points: usize, start: Instant) {
        let m = super::metrics();
        m.flushing_points.add(-(points as i64));
        m.flush_duration.since(start);
    }
}
