//! The node's metrics: every label set is an array slot fixed at compile time, so an update
//! is an index and an atomic add. One instance per process ([`super::metrics`]).

use super::registry::{Counter, Gauge, Histogram};

/// Declares a label enum with its label values, in slot order.
macro_rules! labels {
    ($(#[$m:meta])* $name:ident { $($v:ident => $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($v),* }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v),*];
            pub const COUNT: usize = Self::ALL.len();
            pub fn as_str(self) -> &'static str {
                match self { $($name::$v => $s),* }
            }
        }
    };
}

labels!(
    /// Where points come in.
    Protocol {
        Telnet => "telnet",
        HttpPut => "http_put",
        RemoteWrite => "remote_write",
        GraphitePlaintext => "graphite_plaintext",
        GraphiteUdp => "graphite_udp",
        GraphitePickle => "graphite_pickle",
        Influx => "influx",
        Otlp => "otlp",
    }
);

labels!(
    /// Why a point was not stored.
    Reason {
        Parse => "parse",
        Limit => "limit",
        Tags => "tags",
        Value => "value",
        UnknownName => "unknown_name",
        Uid => "uid",
        Unmapped => "unmapped",
        Dropped => "dropped",
        Unsupported => "unsupported",
        Store => "store",
    }
);

labels!(
    /// UID kinds, as OpenTSDB names them.
    UidKindLabel {
        Metric => "metrics",
        Tagk => "tagk",
        Tagv => "tagv",
    }
);

labels!(
    /// Store operations (the `Store` trait's methods, grouped).
    StoreOp {
        Get => "get",
        Put => "put",
        Scan => "scan",
        Increment => "increment",
        Cas => "cas",
        Flush => "flush",
    }
);

labels!(
    /// Query APIs whose latency is recorded.
    QueryApi {
        OpenTsdb => "opentsdb",
        PromqlInstant => "promql_instant",
        PromqlRange => "promql_range",
        GraphiteRender => "graphite_render",
        RemoteRead => "remote_read",
    }
);

labels!(
    /// HTTP endpoint families (bounded, unlike paths).
    Endpoint {
        Put => "put",
        Query => "query",
        RemoteWrite => "remote_write",
        RemoteRead => "remote_read",
        PromqlInstant => "promql_instant",
        PromqlRange => "promql_range",
        PromMeta => "prometheus_meta",
        GraphiteRender => "graphite_render",
        GraphiteMeta => "graphite_meta",
        Metrics => "metrics",
        Stats => "stats",
        Uid => "uid",
        Meta => "meta",
        Other => "other",
    }
);

labels!(
    /// The cardinality limits a new series can run into.
    SeriesLimit {
        Total => "max_series",
        PerMetric => "max_series_per_metric",
        Rate => "max_new_series_per_minute",
    }
);

labels!(
    /// Listeners whose connections are counted.
    Listener {
        OpenTsdb => "opentsdb",
        Graphite => "graphite",
        Pickle => "pickle",
    }
);

/// Status codes with their own slot; the rest share "other".
pub const STATUS_CODES: [u16; 15] = [
    200, 204, 206, 301, 400, 401, 403, 404, 405, 408, 413, 415, 422, 500, 503,
];
pub const STATUS_SLOTS: usize = STATUS_CODES.len() + 1;

pub fn status_slot(code: u16) -> usize {
    STATUS_CODES
        .iter()
        .position(|&c| c == code)
        .unwrap_or(STATUS_CODES.len())
}

pub fn status_label(slot: usize) -> String {
    STATUS_CODES
        .get(slot)
        .map(|c| c.to_string())
        .unwrap_or_else(|| "other".into())
}

#[derive(Default)]
pub struct IngestCounters {
    pub stored: Counter,
    pub rejected: [Counter; Reason::COUNT],
    /// Bodies or frames refused as a whole (their points cannot be counted).
    pub batches_rejected: Counter,
}

#[derive(Default)]
pub struct UidCounters {
    pub hits: Counter,
    pub misses: Counter,
    pub assigned: Counter,
}

#[derive(Default)]
pub struct Metrics {
    pub ingest: [IngestCounters; Protocol::COUNT],
    pub wal_bytes: Counter,
    pub wal_commits: Counter,
    pub wal_fsync: Histogram,
    /// Store syncs of rollup and histogram writes (`write::direct`), and their time.
    pub direct_syncs: Counter,
    pub direct_sync: Histogram,
    /// Syncs that made new UIDs durable before the points naming them were logged.
    pub uid_sync: Histogram,
    pub wal_replayed_points: Counter,
    /// HTTP requests refused for want of `limits.max_body_bytes_in_flight`.
    pub body_budget_refusals: Counter,
    /// Points acknowledged and waiting in the shards' buffers.
    pub buffered_points: Gauge,
    /// Points handed to the flushers, not yet in the store.
    pub flushing_points: Gauge,
    /// `tsdb` rows written since their last compaction (the open hour's included).
    pub compaction_queue: Gauge,
    /// Rows of closed hours due for compaction and not compacted yet.
    pub compaction_backlog: Gauge,
    pub compacted_rows: Counter,
    /// One chunk of rows compacted by a compaction thread.
    pub compaction_duration: Histogram,
    /// Rows whose open hour's partial columns were merged into one.
    pub rolled_rows: Counter,
    pub flush_duration: Histogram,
    pub uid: [UidCounters; UidKindLabel::COUNT],
    pub store: [Histogram; StoreOp::COUNT],
    pub store_errors: [Counter; StoreOp::COUNT],
    pub query: [Histogram; QueryApi::COUNT],
    pub http: [[Counter; STATUS_SLOTS]; Endpoint::COUNT],
    pub connections_open: [Gauge; Listener::COUNT],
    pub connections_total: [Counter; Listener::COUNT],
    pub retention: RetentionCounters,
    /// Series refused by the cardinality limits, by limit.
    pub series_refused: [Counter; SeriesLimit::COUNT],
}

#[derive(Default)]
pub struct RetentionCounters {
    pub runs: Counter,
    pub failures: Counter,
    /// Rows dropped (embedded: as the engine's rewrites met them; HBase: deleted).
    pub rows_dropped: Counter,
    /// Bytes given back (embedded: how much the files shrank; HBase: cells deleted).
    pub bytes_dropped: Counter,
    /// When the last sweep ended (seconds since the epoch) and how long it took (ms).
    pub last_run_s: Gauge,
    pub last_duration_ms: Gauge,
    /// Bytes of cells the sweeps read (`storage.retention_sweep_bytes_per_s` bounds the rate).
    pub bytes_read: Counter,
    /// Time the sweeps waited to stay under their rates (ms).
    pub throttled_ms: Counter,
    /// Series forgotten by the cardinality counts because retention dropped all their rows.
    pub series_expired: Counter,
}

impl Metrics {
    pub fn ingest(&self, p: Protocol) -> &IngestCounters {
        &self.ingest[p as usize]
    }

    pub fn rejected(&self, p: Protocol) -> u64 {
        self.ingest(p)
            .rejected
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != Reason::Dropped as usize)
            .map(|(_, c)| c.get())
            .sum()
    }

    pub fn uid(&self, kind: tsgate_schema::uid_table::UidKind) -> &UidCounters {
        use tsgate_schema::uid_table::UidKind;
        &self.uid[match kind {
            UidKind::Metric => UidKindLabel::Metric,
            UidKind::Tagk => UidKindLabel::Tagk,
            UidKind::Tagv => UidKindLabel::Tagv,
        } as usize]
    }

    pub fn http_total(&self) -> u64 {
        self.http.iter().flatten().map(Counter::get).sum()
    }
}

impl IngestCounters {
    pub fn reject(&self, r: Reason, n: u64) {
        self.rejected[r as usize].add(n)
    }

    pub fn rejected_by(&self, r: Reason) -> u64 {
        self.rejected[r as usize].get()
    }
}

/// The reason for a validation message of OpenTSDB's put checks (telnet and `/api/put`),
/// from the phrases those messages use. Refusals are the cold path, so reading the text is
/// affordable; anything unrecognised counts as `parse`.
pub fn message_reason(msg: &str) -> Reason {
    const TAGS: &[&str] = &[
        "too many tags",
        "at least one tag",
        "missing tags",
        "duplicate tag",
        "invalid tag",
        "tag name with",
        "tag value with",
    ];
    const LIMIT: &[&str] = &["too long", "limits."];
    const VALUE: &[&str] = &[
        "invalid value",
        "parse value",
        "empty value",
        "nan or infinite",
        "timestamp",
    ];
    let m = msg.to_ascii_lowercase();
    let has = |list: &[&str]| list.iter().any(|p| m.contains(p));
    if has(TAGS) {
        Reason::Tags
    } else if has(LIMIT) {
        Reason::Limit
    } else if has(VALUE) {
        Reason::Value
    } else {
        Reason::Parse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_from_opentsdb_messages() {
        assert_eq!(
            message_reason(
                "put: illegal argument: Too many tags: 9 maximum allowed: 8, tags: {a=1}"
            ),
            Reason::Tags
        );
        assert_eq!(
            message_reason("Invalid tag value with key [host] (\"a!\"): illegal character: !"),
            Reason::Tags
        );
        assert_eq!(
            message_reason("put: invalid value: Unable to parse value to a number"),
            Reason::Value
        );
        assert_eq!(message_reason("Invalid timestamp"), Reason::Value);
        assert_eq!(
            message_reason(
                "put: illegal argument: line too long (limits.telnet_line_max = 10 bytes)"
            ),
            Reason::Limit
        );
        assert_eq!(
            message_reason("put: illegal argument: not enough arguments (need least 4, got 1)"),
            Reason::Parse
        );
        // A metric named like a phrase does not fool it when the phrase is not there.
        assert_eq!(
            message_reason("Invalid metric (\"stage!\"): illegal character: !"),
            Reason::Parse
        );
    }
}
