//! The counters `stats` (telnet) and `/api/stats` report, in OpenTSDB's `tsd.*` naming. They
//! are read from the same metrics `/metrics` exposes (`crate::observe`), so the two agree.

use crate::observe::metrics::{Endpoint, Listener, Protocol, QueryApi, Reason, UidKindLabel};
use crate::observe::Metrics;

/// One reported counter: metric, value, and an optional extra tag.
pub type StatRow = (&'static str, u64, Option<(&'static str, &'static str)>);

/// Stateless: the numbers live in [`crate::observe::metrics`].
#[derive(Default)]
pub struct Stats;

fn received(m: &Metrics, p: Protocol) -> u64 {
    m.ingest(p).stored.get() + m.rejected(p)
}

impl Stats {
    /// (metric, value, extra tag); the caller adds `host`.
    pub fn snapshot(&self, cached_uids: usize, cached_series: usize) -> Vec<StatRow> {
        let m = crate::observe::metrics();
        let open: i64 = Listener::ALL
            .iter()
            .map(|l| m.connections_open[*l as usize].get())
            .sum();
        let total: u64 = Listener::ALL
            .iter()
            .map(|l| m.connections_total[*l as usize].get())
            .sum();
        let http = |e: Endpoint| m.http[e as usize].iter().map(|c| c.get()).sum::<u64>();
        let graphite = [
            (Protocol::GraphitePlaintext, "plaintext"),
            (Protocol::GraphiteUdp, "udp"),
            (Protocol::GraphitePickle, "pickle"),
        ];
        let mut v: Vec<StatRow> = vec![
            (
                "tsd.connectionmgr.connections",
                open.max(0) as u64,
                Some(("type", "open")),
            ),
            (
                "tsd.connectionmgr.connections",
                total,
                Some(("type", "total")),
            ),
            (
                "tsd.rpc.received",
                received(m, Protocol::Telnet),
                Some(("type", "put")),
            ),
            (
                "tsd.rpc.errors",
                m.rejected(Protocol::Telnet),
                Some(("type", "put")),
            ),
            (
                "tsd.http.put.received",
                received(m, Protocol::HttpPut),
                None,
            ),
            ("tsd.http.put.errors", m.rejected(Protocol::HttpPut), None),
            (
                "tsd.http.put.bad_requests",
                m.ingest(Protocol::HttpPut).batches_rejected.get(),
                None,
            ),
            (
                "tsd.prometheus.write.received",
                received(m, Protocol::RemoteWrite),
                None,
            ),
            (
                "tsd.prometheus.write.errors",
                m.rejected(Protocol::RemoteWrite),
                None,
            ),
            (
                "tsd.prometheus.write.bad_requests",
                m.ingest(Protocol::RemoteWrite).batches_rejected.get(),
                None,
            ),
            ("tsd.http.requests", m.http_total(), None),
        ];
        // The InfluxDB and OTLP write endpoints, as remote write's rows.
        for (p, t) in [(Protocol::Influx, "influx"), (Protocol::Otlp, "otlp")] {
            v.push(("tsd.http.write.received", received(m, p), Some(("type", t))));
            v.push(("tsd.http.write.errors", m.rejected(p), Some(("type", t))));
            v.push((
                "tsd.http.write.bad_requests",
                m.ingest(p).batches_rejected.get(),
                Some(("type", t)),
            ));
        }
        let queries: u64 = QueryApi::ALL
            .iter()
            .map(|q| m.query[*q as usize].count())
            .sum();
        v.push(("tsd.http.query.requests", queries, None));
        for q in QueryApi::ALL {
            v.push((
                "tsd.query.requests",
                m.query[*q as usize].count(),
                Some(("type", q.as_str())),
            ));
        }
        v.push((
            "tsd.http.stats.requests",
            http(Endpoint::Stats) + http(Endpoint::Metrics),
            None,
        ));
        for (p, t) in graphite {
            v.push((
                "tsd.graphite.received",
                m.ingest(p).stored.get(),
                Some(("type", t)),
            ));
            v.push(("tsd.graphite.errors", m.rejected(p), Some(("type", t))));
        }
        v.push((
            "tsd.graphite.bad_frames",
            m.ingest(Protocol::GraphitePickle).batches_rejected.get(),
            Some(("type", "pickle")),
        ));
        v.push((
            "tsd.graphite.dropped",
            graphite
                .iter()
                .map(|(p, _)| m.ingest(*p).rejected_by(Reason::Dropped))
                .sum(),
            None,
        ));
        for k in UidKindLabel::ALL {
            let u = &m.uid[*k as usize];
            v.push((
                "tsd.uid.cache-hit",
                u.hits.get(),
                Some(("kind", k.as_str())),
            ));
            v.push((
                "tsd.uid.cache-miss",
                u.misses.get(),
                Some(("kind", k.as_str())),
            ));
            v.push((
                "tsd.uid.ids-assigned",
                u.assigned.get(),
                Some(("kind", k.as_str())),
            ));
        }
        v.push(("tsd.uid.cache-size", cached_uids as u64, None));
        v.push(("tsd.series.cache-size", cached_series as u64, None));
        v.push(("tsd.wal.bytes", m.wal_bytes.get(), None));
        v.push(("tsd.wal.commits", m.wal_commits.get(), None));
        v.push((
            "tsd.write.buffered_points",
            m.buffered_points.get().max(0) as u64,
            None,
        ));
        v.push((
            "tsd.write.flushing_points",
            m.flushing_points.get().max(0) as u64,
            None,
        ));
        // OpenTSDB's name for its compaction queue's length.
        v.push((
            "tsd.compaction.queue.size",
            m.compaction_queue.get().max(0) as u64,
            None,
        ));
        v.push((
            "tsd.compaction.backlog",
            m.compaction_backlog.get().max(0) as u64,
            None,
        ));
        v
    }
}
