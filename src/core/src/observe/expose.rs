//! `GET /metrics`: every metric of the node in Prometheus' text format 0.0.4.

use super::metrics::{
    status_label, Endpoint, Listener, Metrics, Protocol, QueryApi, Reason, StoreOp, UidKindLabel,
    STATUS_SLOTS,
};
use super::registry::{format_float, Exposition, Kind};

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Values read at scrape time rather than counted.
pub struct Live {
    pub backend: String,
    pub uid_cache: usize,
    pub series_cache: usize,
    pub queued_batches: usize,
    pub store_rpcs: Vec<(&'static str, u64)>,
    pub process: super::process::ProcessStats,
    /// Why the store refuses writes now, if it does.
    pub store_refusal: Option<tsgate_store::Refusal>,
    /// Bytes of HTTP request bodies held now (`limits.max_body_bytes_in_flight`).
    pub body_bytes_in_flight: u64,
}

pub fn render(m: &Metrics, live: &Live) -> String {
    let mut e = Exposition::default();
    e.family(
        "tsgate_build_info",
        "Version and storage backend of this node (always 1).",
        Kind::Gauge,
    );
    e.sample(
        "tsgate_build_info",
        &[
            ("version", env!("CARGO_PKG_VERSION")),
            ("backend", &live.backend),
        ],
        1,
    );

    e.family(
        "tsgate_points_received_total",
        "Data points received (stored plus rejected), by protocol.",
        Kind::Counter,
    );
    for p in Protocol::ALL {
        let c = m.ingest(*p);
        let total = c.stored.get() + c.rejected.iter().map(|r| r.get()).sum::<u64>();
        e.sample(
            "tsgate_points_received_total",
            &[("protocol", p.as_str())],
            total,
        );
    }
    e.family(
        "tsgate_points_stored_total",
        "Data points durably accepted (in the write-ahead log), by protocol.",
        Kind::Counter,
    );
    for p in Protocol::ALL {
        e.sample(
            "tsgate_points_stored_total",
            &[("protocol", p.as_str())],
            m.ingest(*p).stored.get(),
        );
    }
    e.family(
        "tsgate_points_rejected_total",
        "Data points not stored, by protocol and reason.",
        Kind::Counter,
    );
    for p in Protocol::ALL {
        for r in Reason::ALL {
            e.sample(
                "tsgate_points_rejected_total",
                &[("protocol", p.as_str()), ("reason", r.as_str())],
                m.ingest(*p).rejected_by(*r),
            );
        }
    }
    e.family(
        "tsgate_ingest_batches_rejected_total",
        "Request bodies or frames refused as a whole (undecodable), by protocol.",
        Kind::Counter,
    );
    for p in Protocol::ALL {
        e.sample(
            "tsgate_ingest_batches_rejected_total",
            &[("protocol", p.as_str())],
            m.ingest(*p).batches_rejected.get(),
        );
    }

    e.single(
        "tsgate_wal_bytes_written_total",
        "Bytes appended to the write-ahead log.",
        Kind::Counter,
        m.wal_bytes.get(),
    );
    e.single(
        "tsgate_wal_commits_total",
        "Group commits of the write-ahead log.",
        Kind::Counter,
        m.wal_commits.get(),
    );
    e.family(
        "tsgate_wal_fsync_duration_seconds",
        "Time to write and fsync one group commit of the write-ahead log.",
        Kind::Histogram,
    );
    e.histogram("tsgate_wal_fsync_duration_seconds", &[], &m.wal_fsync);
    e.single(
        "tsgate_direct_syncs_total",
        "Store syncs that made rollup and histogram points durable before their answer.",
        Kind::Counter,
        m.direct_syncs.get(),
    );
    e.family(
        "tsgate_direct_sync_duration_seconds",
        "Time of one store sync for rollup and histogram points (shared by concurrent writers).",
        Kind::Histogram,
    );
    e.histogram("tsgate_direct_sync_duration_seconds", &[], &m.direct_sync);
    e.family(
        "tsgate_uid_sync_duration_seconds",
        "Time of one sync making new UIDs durable before the points naming them are logged (shared by concurrent writers).",
        Kind::Histogram,
    );
    e.histogram("tsgate_uid_sync_duration_seconds", &[], &m.uid_sync);
    e.single(
        "tsgate_wal_replayed_points_total",
        "Points replayed from the write-ahead log at startup.",
        Kind::Counter,
        m.wal_replayed_points.get(),
    );
    e.single(
        "tsgate_http_body_bytes_in_flight",
        "Bytes of HTTP request bodies being read or handled (limits.max_body_bytes_in_flight).",
        Kind::Gauge,
        live.body_bytes_in_flight,
    );
    e.single(
        "tsgate_http_body_budget_refusals_total",
        "HTTP requests answered 503 for want of limits.max_body_bytes_in_flight.",
        Kind::Counter,
        m.body_budget_refusals.get(),
    );
    e.family(
        "tsgate_store_refusing_writes",
        "1 while the store refuses writes, by reason (disk_full: free space below storage.min_free_mb or the disk ran full; engine_failed: the engine failed and is being reopened).",
        Kind::Gauge,
    );
    for reason in tsgate_store::REFUSAL_REASONS {
        let on = live
            .store_refusal
            .as_ref()
            .is_some_and(|r| r.reason == reason);
        e.sample(
            "tsgate_store_refusing_writes",
            &[("reason", reason)],
            u64::from(on),
        );
    }
    e.single(
        "tsgate_write_buffered_points",
        "Acknowledged points buffered in memory, waiting for the next flush.",
        Kind::Gauge,
        m.buffered_points.get(),
    );
    e.single(
        "tsgate_write_flushing_points",
        "Points handed to the flushers and not yet in the store.",
        Kind::Gauge,
        m.flushing_points.get(),
    );
    e.single(
        "tsgate_compaction_queue_rows",
        "Data rows written since their last compaction (the open hour's included).",
        Kind::Gauge,
        m.compaction_queue.get(),
    );
    e.single(
        "tsgate_compaction_backlog_rows",
        "Rows of closed hours due for compaction and not compacted yet (growing: compaction is behind).",
        Kind::Gauge,
        m.compaction_backlog.get(),
    );
    e.single(
        "tsgate_compacted_rows_total",
        "Rows of closed hours compacted.",
        Kind::Counter,
        m.compacted_rows.get(),
    );
    e.family(
        "tsgate_compaction_duration_seconds",
        "Time to compact one chunk of rows (64) on a compaction thread.",
        Kind::Histogram,
    );
    e.histogram(
        "tsgate_compaction_duration_seconds",
        &[],
        &m.compaction_duration,
    );
    e.single(
        "tsgate_rolled_rows_total",
        "Rows whose open hour's partial columns were merged into one (write.roll_interval_ms).",
        Kind::Counter,
        m.rolled_rows.get(),
    );
    e.single(
        "tsgate_write_queued_batches",
        "Write batches queued for the shards (bounded; writers wait when full).",
        Kind::Gauge,
        live.queued_batches,
    );
    e.family(
        "tsgate_flush_duration_seconds",
        "Time to write one flush of buffered points to the store.",
        Kind::Histogram,
    );
    e.histogram("tsgate_flush_duration_seconds", &[], &m.flush_duration);

    e.family(
        "tsgate_uid_cache_hits_total",
        "UID look-ups answered from the cache, by kind.",
        Kind::Counter,
    );
    for k in UidKindLabel::ALL {
        e.sample(
            "tsgate_uid_cache_hits_total",
            &[("kind", k.as_str())],
            m.uid[*k as usize].hits.get(),
        );
    }
    e.family(
        "tsgate_uid_cache_misses_total",
        "UID look-ups that went to the store, by kind.",
        Kind::Counter,
    );
    for k in UidKindLabel::ALL {
        e.sample(
            "tsgate_uid_cache_misses_total",
            &[("kind", k.as_str())],
            m.uid[*k as usize].misses.get(),
        );
    }
    e.family(
        "tsgate_uid_assigned_total",
        "New UIDs assigned, by kind.",
        Kind::Counter,
    );
    for k in UidKindLabel::ALL {
        e.sample(
            "tsgate_uid_assigned_total",
            &[("kind", k.as_str())],
            m.uid[*k as usize].assigned.get(),
        );
    }
    e.single(
        "tsgate_uid_cache_size",
        "Names and UIDs held in the UID cache.",
        Kind::Gauge,
        live.uid_cache,
    );
    e.single(
        "tsgate_series_cache_size",
        "Series (metric + tags to TSUID) held in the series cache.",
        Kind::Gauge,
        live.series_cache,
    );

    e.family(
        "tsgate_store_operation_duration_seconds",
        "Storage backend operation latency, by operation.",
        Kind::Histogram,
    );
    for op in StoreOp::ALL {
        e.histogram(
            "tsgate_store_operation_duration_seconds",
            &[("op", op.as_str())],
            &m.store[*op as usize],
        );
    }
    e.family(
        "tsgate_store_errors_total",
        "Storage backend operations that failed, by operation.",
        Kind::Counter,
    );
    for op in StoreOp::ALL {
        e.sample(
            "tsgate_store_errors_total",
            &[("op", op.as_str())],
            m.store_errors[*op as usize].get(),
        );
    }
    if !live.store_rpcs.is_empty() {
        e.family(
            "tsgate_hbase_rpcs_total",
            "HBase Thrift calls, by method.",
            Kind::Counter,
        );
        for (method, n) in &live.store_rpcs {
            e.sample("tsgate_hbase_rpcs_total", &[("method", method)], n);
        }
    }

    e.family(
        "tsgate_query_duration_seconds",
        "Query latency (whole HTTP request), by API.",
        Kind::Histogram,
    );
    for q in QueryApi::ALL {
        e.histogram(
            "tsgate_query_duration_seconds",
            &[("api", q.as_str())],
            &m.query[*q as usize],
        );
    }
    e.family("tsgate_http_requests_total", "HTTP requests answered, by endpoint family and status code (families with no requests omitted).", Kind::Counter);
    for ep in Endpoint::ALL {
        for slot in 0..STATUS_SLOTS {
            let n = m.http[*ep as usize][slot].get();
            if n > 0 {
                e.sample(
                    "tsgate_http_requests_total",
                    &[("endpoint", ep.as_str()), ("code", &status_label(slot))],
                    n,
                );
            }
        }
    }
    e.family(
        "tsgate_connections_open",
        "TCP connections open now, by listener.",
        Kind::Gauge,
    );
    for l in Listener::ALL {
        e.sample(
            "tsgate_connections_open",
            &[("listener", l.as_str())],
            m.connections_open[*l as usize].get(),
        );
    }
    e.family(
        "tsgate_connections_total",
        "TCP connections accepted, by listener.",
        Kind::Counter,
    );
    for l in Listener::ALL {
        e.sample(
            "tsgate_connections_total",
            &[("listener", l.as_str())],
            m.connections_total[*l as usize].get(),
        );
    }

    let p = &live.process;
    e.single(
        "process_resident_memory_bytes",
        "Resident memory size in bytes.",
        Kind::Gauge,
        p.resident_bytes,
    );
    e.single(
        "process_virtual_memory_bytes",
        "Virtual memory size in bytes.",
        Kind::Gauge,
        p.virtual_bytes,
    );
    e.single(
        "process_open_fds",
        "Open file descriptors.",
        Kind::Gauge,
        p.open_fds,
    );
    e.single(
        "process_max_fds",
        "Limit on open file descriptors.",
        Kind::Gauge,
        p.max_fds,
    );
    e.single(
        "process_threads",
        "Operating system threads.",
        Kind::Gauge,
        p.threads,
    );
    e.single(
        "process_cpu_seconds_total",
        "User and system CPU time spent, in seconds.",
        Kind::Counter,
        format_float(p.cpu_seconds),
    );
    e.single(
        "process_start_time_seconds",
        "Start time of the process since the Unix epoch, in seconds.",
        Kind::Gauge,
        format_float(p.start_time_seconds),
    );
    lifecycle(&mut e, m);
    e.finish()
}

/// Retention sweeps and cardinality refusals.
fn lifecycle(e: &mut Exposition, m: &Metrics) {
    let r = &m.retention;
    e.single(
        "tsgate_retention_sweeps_total",
        "Retention sweeps run (at start, then every storage.retention_sweep_interval).",
        Kind::Counter,
        r.runs.get(),
    );
    e.single(
        "tsgate_retention_sweep_failures_total",
        "Retention sweeps that failed (retried at the next interval).",
        Kind::Counter,
        r.failures.get(),
    );
    e.single(
        "tsgate_retention_rows_dropped_total",
        "Expired tsdb rows dropped (embedded: as the engine's rewrites met them).",
        Kind::Counter,
        r.rows_dropped.get(),
    );
    e.single(
        "tsgate_retention_bytes_dropped_total",
        "Bytes given back by retention (embedded: how much the data files shrank).",
        Kind::Counter,
        r.bytes_dropped.get(),
    );
    e.single(
        "tsgate_retention_last_sweep_timestamp_seconds",
        "When the last retention sweep ended, seconds since the epoch (0 = none yet).",
        Kind::Gauge,
        r.last_run_s.get(),
    );
    e.single(
        "tsgate_retention_last_sweep_duration_seconds",
        "How long the last retention sweep took.",
        Kind::Gauge,
        format_float(r.last_duration_ms.get() as f64 / 1000.0),
    );
    e.single(
        "tsgate_retention_sweep_read_bytes_total",
        "Bytes of cells the retention sweeps read (storage.retention_sweep_bytes_per_s).",
        Kind::Counter,
        r.bytes_read.get(),
    );
    e.single(
        "tsgate_retention_sweep_throttled_seconds_total",
        "Time the retention sweeps waited to stay under their I/O rates.",
        Kind::Counter,
        format_float(r.throttled_ms.get() as f64 / 1000.0),
    );
    e.single(
        "tsgate_retention_series_expired_total",
        "Series no longer counted (cardinality, explorer) because retention dropped all their rows.",
        Kind::Counter,
        r.series_expired.get(),
    );
    e.family(
        "tsgate_series_refused_total",
        "New series refused by a cardinality limit, by limit.",
        Kind::Counter,
    );
    for l in super::metrics::SeriesLimit::ALL {
        e.sample(
            "tsgate_series_refused_total",
            &[("limit", l.as_str())],
            m.series_refused[*l as usize].get(),
        );
    }
}
