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
            ("tsd.uid.cache-size", cached_uids as u64, None),
            ("tsd.series.cache-size", cached_series as u64, None),
        ]
    }
}
