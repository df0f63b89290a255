//! Counters reported by `stats` (telnet) and `/api/stats`.

use std::sync::atomic::{AtomicU64, Ordering};

/// One reported counter: metric, value, and an optional extra tag.
pub type StatRow = (&'static str, u64, Option<(&'static str, &'static str)>);

#[derive(Default)]
pub struct Stats {
    pub telnet_puts: AtomicU64,
    pub telnet_errors: AtomicU64,
    pub http_puts: AtomicU64,
    pub http_put_errors: AtomicU64,
    pub http_requests: AtomicU64,
    pub queries: AtomicU64,
    pub connections: AtomicU64,
    /// Graphite: points accepted, lines/items rejected, frames rejected, by listener.
    pub graphite_plaintext_points: AtomicU64,
    pub graphite_plaintext_errors: AtomicU64,
    pub graphite_udp_points: AtomicU64,
    pub graphite_udp_errors: AtomicU64,
    pub graphite_pickle_points: AtomicU64,
    pub graphite_pickle_errors: AtomicU64,
    pub graphite_pickle_bad_frames: AtomicU64,
    /// Graphite paths no rule could map or that a rule drops.
    pub graphite_unmapped: AtomicU64,
}

impl Stats {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// (metric, value, extra tag) in OpenTSDB's `tsd.*` naming.
    pub fn snapshot(&self, cached_uids: usize, cached_series: usize) -> Vec<StatRow> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("tsd.connectionmgr.connections", g(&self.connections), None),
            ("tsd.rpc.received", g(&self.telnet_puts), Some(("type", "put"))),
            ("tsd.rpc.errors", g(&self.telnet_errors), Some(("type", "put"))),
            ("tsd.http.put.received", g(&self.http_puts), None),
            ("tsd.http.put.errors", g(&self.http_put_errors), None),
            ("tsd.http.requests", g(&self.http_requests), None),
            ("tsd.http.query.requests", g(&self.queries), None),
            ("tsd.graphite.received", g(&self.graphite_plaintext_points), Some(("type", "plaintext"))),
            ("tsd.graphite.errors", g(&self.graphite_plaintext_errors), Some(("type", "plaintext"))),
            ("tsd.graphite.received", g(&self.graphite_udp_points), Some(("type", "udp"))),
            ("tsd.graphite.errors", g(&self.graphite_udp_errors), Some(("type", "udp"))),
            ("tsd.graphite.received", g(&self.graphite_pickle_points), Some(("type", "pickle"))),
            ("tsd.graphite.errors", g(&self.graphite_pickle_errors), Some(("type", "pickle"))),
            ("tsd.graphite.bad_frames", g(&self.graphite_pickle_bad_frames), Some(("type", "pickle"))),
            ("tsd.graphite.dropped", g(&self.graphite_unmapped), None),
            ("tsd.uid.cache-size", cached_uids as u64, None),
            ("tsd.series.cache-size", cached_series as u64, None),
        ]
    }
}
