//! The one TOML config file. Every key has a default; command-line flags override.

pub mod auth;
pub mod rollup;
pub mod tls;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tsgate_schema::KeyLayout;
use tsgate_store::bigtable::BigtableConfig;
use tsgate_store::hbase::HBaseConfig;
use tsgate_store::TableNames;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the embedded store and the write-ahead log live.
    pub data_dir: PathBuf,
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub uid: UidConfig,
    pub write: WriteConfig,
    pub limits: LimitsConfig,
    pub query: QueryConfig,
    pub meta: MetaConfig,
    pub tree: TreeConfig,
    pub prometheus: PrometheusConfig,
    pub graphite: GraphiteConfig,
    /// HTTP authentication (`[auth]`, see `server::auth`).
    pub auth: auth::AuthConfig,
    pub log: LogConfig,
    pub admin: AdminConfig,
    /// OpenTSDB 2.4's rollup tables (`[rollups]`).
    pub rollups: rollup::RollupsConfig,
}

/// Logging (`--log-format` overrides `format`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` (human-readable) or `json` (one object per line).
    pub format: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: "text".into(),
        }
    }
}

/// Graphite ingest (carbon plaintext and pickle) and the name rules that map dotted paths to
/// OpenTSDB metric + tags (see `src/graphite/names.rs` and the README).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct GraphiteConfig {
    /// Tags per series for tagged (`name;k=v`) paths and rule output.
    pub max_tags: usize,
    /// Largest pickle frame in bytes (carbon's `PICKLE_RECEIVER_MAX_LENGTH`); a longer frame
    /// closes the connection, as in carbon.
    pub pickle_max_frame: usize,
    /// Name rules, tried by priority (higher first), then in file order.
    pub rules: Vec<GraphiteRule>,
}

impl Default for GraphiteConfig {
    fn default() -> Self {
        GraphiteConfig {
            max_tags: 32,
            pickle_max_frame: 1 << 20,
            rules: Vec::new(),
        }
    }
}

/// One `[[graphite.rules]]` entry. Either `match` + `metric` (+ `tags`), or the InfluxDB-style
/// shortcut `template` (+ `filter`, + fixed `tags`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct GraphiteRule {
    /// A label for log and error messages.
    pub name: String,
    /// Dotted pattern, one literal or `{var}` per node (`cpu-{cpu}` mixes both; `{var*}` = rest).
    #[serde(rename = "match")]
    pub match_: String,
    /// The OpenTSDB metric, a template over the variables.
    pub metric: String,
    /// Tag templates (`host = "{host}"`) and fixed tags (`source = "collectd"`).
    pub tags: std::collections::BTreeMap<String, String>,
    /// Anchored regex per variable that must match its value.
    #[serde(rename = "where")]
    pub where_: std::collections::BTreeMap<String, String>,
    /// Higher is tried first; ties keep file order.
    pub priority: i32,
    /// Matching paths are dropped instead of stored.
    pub drop: bool,
    /// InfluxDB-style template: roles per node (`dc.host.measurement*`).
    pub template: String,
    /// With `template`: a dotted glob (`*` = one node) the path must match.
    pub filter: String,
}

/// Highest `query.max_depth` accepted (see `Config::validate`).
pub const MAX_DEPTH_CEILING: usize = 128;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct QueryConfig {
    /// Honour `delete: true` / DELETE on `/api/query` (OpenTSDB's `tsd.http.query.allow_delete`).
    pub allow_delete: bool,
    /// Longest a query may run (OpenTSDB, PromQL, graphite-web) before it is answered 503; 0 = none.
    pub timeout_ms: u64,
    /// Most series one OpenTSDB sub-query may match; 0 = no limit.
    pub max_series: usize,
    /// Most stored points one OpenTSDB query may read; 0 = no limit.
    pub max_points: u64,
    /// Deepest nesting of a query expression (PromQL, graphite-web targets, `/api/query/exp`
    /// expressions): parsers and evaluators recurse once per level, and a thread's stack
    /// holds a few thousand levels.
    pub max_depth: usize,
    /// Most values one query may make: an OpenTSDB fill policy's buckets over all series,
    /// graphite-web's series × steps and the raw points it reads; 0 = no limit.
    pub max_cells: u64,
    /// Largest answer body of `/api/query` and `/render`, checked as it is written; 0 = none.
    pub max_answer_bytes: usize,
    /// Largest image `/render?format=png|svg` and `/q?png` draw, in pixels (width × height):
    /// the raster takes 4 bytes a pixel; 0 = no limit.
    pub max_image_pixels: u64,
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            allow_delete: false,
            timeout_ms: 120_000,
            max_series: 100_000,
            max_points: 50_000_000,
            max_depth: 64,
            max_cells: 10_000_000,
            max_answer_bytes: 128 << 20,
            max_image_pixels: 8_000_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PrometheusConfig {
    /// Labels per series besides `__name__` on the Prometheus paths. OpenTSDB's own limit
    /// (`limits.max_tags`, 8) is too small for real series (`node_dmi_info`, `node_os_info`,
    /// `prometheus_build_info` carry 9–20); a larger series is refused with 400, never dropped.
    pub max_tags: usize,
    /// Largest decompressed remote-write / remote-read body (checked before decoding).
    pub max_decompressed_bytes: usize,
    /// PromQL lookback for instant vectors (`--query.lookback-delta`).
    pub lookback_delta_ms: u64,
    /// Most samples one PromQL query may load (`--query.max-samples`).
    pub max_samples: usize,
}

impl Default for PrometheusConfig {
    fn default() -> Self {
        PrometheusConfig {
            max_tags: 32,
            max_decompressed_bytes: 32 << 20,
            lookback_delta_ms: 300_000,
            max_samples: 50_000_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// OpenTSDB telnet and HTTP, told apart by the first byte (as OpenTSDB's TSD does).
    pub listen: String,
    /// Graphite plaintext, TCP and UDP on the same address ("" = off).
    pub graphite_listen: String,
    /// Graphite pickle (carbon-relay's protocol), TCP ("" = off).
    pub pickle_listen: String,
    /// After SIGINT/SIGTERM, how long draining, flushing and compacting may take before the
    /// process exits anyway (acknowledged points are safe in the WAL and replayed at start).
    pub shutdown_timeout_ms: u64,
    /// Telnet commands on `listen`. Unset: on, unless `auth.enabled` (telnet has no auth, so it
    /// would bypass it); `true` keeps it on even then.
    pub telnet: Option<bool>,
    /// HTTPS on `listen` (`[server.tls]`).
    pub tls: tls::TlsConfig,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// `embedded` (fjall under `data_dir/store`), `hbase` (through its Thrift gateway) or
    /// `bigtable` (Cloud Bigtable, or its emulator).
    pub backend: String,
    pub tables: TableNames,
    /// The Thrift gateway, for `backend = "hbase"`.
    pub hbase: HBaseConfig,
    /// The instance, for `backend = "bigtable"`.
    pub bigtable: BigtableConfig,
    pub uid_width_metric: usize,
    pub uid_width_tagk: usize,
    pub uid_width_tagv: usize,
    /// Salt bytes in front of row keys (0 = off), and how many buckets.
    pub salt_width: usize,
    pub salt_buckets: u32,
    /// Block cache of the embedded engine, in MiB (decompressed blocks of recently read data).
    pub cache_mb: u64,
    /// Decoded rows kept between queries, in MiB (0 = off; the embedded store only: another
    /// node's writes to HBase would not reach it). 128 holds an hour of 10,000 series every
    /// 10 s (~58 MiB decoded) within the half one request may fill: with 32 a `sum(rate(...))`
    /// over them decoded every row at every refresh (53 against 43 ms).
    pub row_cache_mb: u64,
    /// The embedded store refuses writes (503, TCP reads pause) while less than this many MiB
    /// are free in `data_dir`, and reopens a failed engine only once they are; 0 = only when
    /// the engine itself runs out of space.
    pub min_free_mb: u64,
    /// The embedded store writes OpenTSDB's compacted columns (and other long multi-point
    /// columns) encoded: offsets as deltas of deltas, values as scaled-decimal or XOR deltas,
    /// bit-packed; reads give back the same bytes. `false` writes them as they are; cells
    /// written either way are read either way.
    pub encode_columns: bool,
    /// How long data is kept ("90d", "12h", …; units s m h d w y); "" keeps it for ever.
    pub retention: String,
    /// Other retentions for some series: the first rule that matches a series decides.
    pub retention_rules: Vec<RetentionRule>,
    /// How often the retention sweep runs (it also runs at start).
    pub retention_sweep_interval: String,
    /// Rows the sweep deletes per second at most where it deletes row by row (HBase); the
    /// embedded engine drops expired rows as it rewrites its files instead.
    pub retention_sweep_rows_per_s: u64,
    /// Bytes of cells (keys and values, uncompressed) the sweep reads per second at most, on
    /// every backend: the embedded engine's rewrite of the table, HBase's scans of expired
    /// ranges; 0 = no limit.
    pub retention_sweep_bytes_per_s: u64,
}

/// `[[storage.retention_rules]]`: series whose metric matches `metric` (a glob: `*` any run of
/// characters, `?` one) and whose tags match every `tags` entry (tag key = value glob) keep
/// their data for `retention` ("" = for ever).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionRule {
    pub metric: String,
    pub tags: std::collections::BTreeMap<String, String>,
    pub retention: String,
}

/// `[admin]`: the endpoints that delete data (Prometheus' `--web.enable-admin-api`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// `POST /api/v1/admin/tsdb/delete_series` and `/tags/delSeries`; off by default.
    pub enabled: bool,
}

/// A duration key's value that is no duration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?}: expected a number and a unit, e.g. 90d")]
    Number(String),
    #[error("invalid duration {0:?}: unit must be s, m, h, d, w or y")]
    Unit(String),
    #[error("invalid duration {0:?}: too long")]
    TooLong(String),
}

/// Seconds in a duration written as a number and a unit (`s m h d w y`; a bare number is
/// seconds); "" and "0" are 0.
pub fn parse_duration_s(text: &str) -> Result<u64, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(0);
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| DurationError::Number(text.to_string()))?;
    let mult = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        "y" => 365 * 86_400,
        _ => return Err(DurationError::Unit(text.to_string())),
    };
    n.checked_mul(mult)
        .ok_or_else(|| DurationError::TooLong(text.to_string()))
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UidConfig {
    /// OpenTSDB defaults metrics to false; a gateway is expected to accept new metrics.
    pub auto_create_metrics: bool,
    pub auto_create_tagks: bool,
    pub auto_create_tagvs: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WriteConfig {
    /// Independent write shards (each a WAL, a buffer and a writer thread); 0 = one per two
    /// cores.
    pub shards: usize,
    /// How often buffered points are written to the store (and become queryable).
    pub flush_interval_ms: u64,
    /// `always`: every acknowledged write is fsynced (group commit). `never`: left to the OS.
    pub wal_fsync: String,
    /// Most points a shard appends to its WAL in one write.
    pub wal_max_batch_points: usize,
    /// Points buffered per shard before a flush is forced.
    pub buffer_max_points: usize,
    /// How long a row whose hour has closed must go without writes before it is compacted.
    pub compaction_delay_ms: u64,
    /// How long the open hour's partial columns of a series (one per flush) gather before
    /// they are merged into one column (0 = never; not on HBase, shared with other writers).
    pub roll_interval_ms: u64,
    /// Most points per shard held in memory for those merges; past it rows merge early.
    pub roll_max_points: usize,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Tags per series (OpenTSDB's `tsd.storage.max_tags`).
    pub max_tags: usize,
    /// Longest telnet line in bytes; a longer line is answered with an error and skipped.
    pub telnet_line_max: usize,
    /// Largest HTTP request body, before and after decompression.
    pub http_body_max: usize,
    /// Bytes of HTTP request bodies read or being handled at once, over every connection and
    /// route; a request that gets no share within 2 s is answered 503 (0 = no limit). At
    /// least `http_body_max`.
    pub max_body_bytes_in_flight: u64,
    /// Extra characters allowed in names (OpenTSDB's `tsd.core.tag.allow_specialchars`).
    pub allow_special_chars: String,
    /// Most points in one `/api/put` or remote-write request (413 beyond).
    pub max_points_per_request: usize,
    /// Longest metric, tag key or tag value in bytes, on every protocol.
    pub max_name_length: usize,
    /// Open connections on the OpenTSDB port (HTTP and telnet); one more is refused unless a
    /// connection still pending (see `handshake_timeout_ms`) can be displaced.
    pub max_connections: usize,
    /// Open connections on each carbon listener (plaintext TCP, pickle), apart from the
    /// OpenTSDB port's.
    pub carbon_max_connections: usize,
    /// Open connections from one client address on one listener.
    pub max_connections_per_ip: usize,
    /// A new connection must prove itself within this long — its first bytes on a carbon
    /// port or in telnet, an authenticated request in HTTP (any request with auth off) — or it
    /// is closed; after a second of waiting it may be displaced by a new connection.
    pub handshake_timeout_ms: u64,
    /// A connection that sends nothing for this long is closed (telnet, Graphite, HTTP keep-alive).
    pub idle_timeout_ms: u64,
    /// Longest an HTTP client may take to send a request's headers, and again its body.
    pub read_timeout_ms: u64,
    /// Series in the store at most (0 = no limit).
    pub max_series: u64,
    /// Series of one metric at most (0 = no limit).
    pub max_series_per_metric: u64,
    /// New series per minute at most, all metrics together (0 = no limit).
    pub max_new_series_per_minute: u64,
}

/// Metadata writes (OpenTSDB's `tsd.core.meta.*`); all off by default, as in OpenTSDB.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetaConfig {
    /// `tsd.core.meta.enable_realtime_uid`: UIDMeta rows for the UIDs of new series.
    pub enable_realtime_uid: bool,
    /// `tsd.core.meta.enable_realtime_ts`: a TSMeta row for every new series (needs tracking).
    pub enable_realtime_ts: bool,
    /// `tsd.core.meta.enable_tsuid_tracking`: maintain `ts_ctr` in tsdb-meta.
    pub enable_tsuid_tracking: bool,
    /// `tsd.core.meta.enable_tsuid_incrementing`: `ts_ctr` counts points instead of being a marker.
    pub enable_tsuid_incrementing: bool,
}

/// Trees (OpenTSDB's `tsd.core.tree.*`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TreeConfig {
    /// `tsd.core.tree.enable_processing`: run new series through the enabled trees.
    pub enable_processing: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./data"),
            server: ServerConfig::default(),
            storage: StorageConfig::default(),
            uid: UidConfig::default(),
            write: WriteConfig::default(),
            limits: LimitsConfig::default(),
            query: QueryConfig::default(),
            meta: MetaConfig::default(),
            tree: TreeConfig::default(),
            prometheus: PrometheusConfig::default(),
            graphite: GraphiteConfig::default(),
            auth: Default::default(),
            log: LogConfig::default(),
            admin: AdminConfig::default(),
            rollups: Default::default(),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "0.0.0.0:4242".into(),
            graphite_listen: "0.0.0.0:2003".into(),
            pickle_listen: "0.0.0.0:2004".into(),
            shutdown_timeout_ms: 30_000,
            telnet: None,
            tls: Default::default(),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            backend: "embedded".into(),
            tables: TableNames::default(),
            hbase: HBaseConfig::default(),
            bigtable: BigtableConfig::default(),
            uid_width_metric: 3,
            uid_width_tagk: 3,
            uid_width_tagv: 3,
            salt_width: 0,
            salt_buckets: 20,
            cache_mb: 64,
            row_cache_mb: 128,
            min_free_mb: 64,
            encode_columns: true,
            retention: String::new(),
            retention_rules: Vec::new(),
            retention_sweep_interval: "1h".into(),
            retention_sweep_rows_per_s: 20_000,
            retention_sweep_bytes_per_s: 64 << 20,
        }
    }
}

impl Default for UidConfig {
    fn default() -> Self {
        UidConfig {
            auto_create_metrics: true,
            auto_create_tagks: true,
            auto_create_tagvs: true,
        }
    }
}

impl Default for WriteConfig {
    fn default() -> Self {
        WriteConfig {
            shards: 0,
            flush_interval_ms: 500,
            wal_fsync: "always".into(),
            wal_max_batch_points: 200_000,
            buffer_max_points: 500_000,
            compaction_delay_ms: 5_000,
            roll_interval_ms: 30_000,
            roll_max_points: 2_000_000,
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_tags: 8,
            telnet_line_max: 1024,
            http_body_max: 64 << 20,
            max_body_bytes_in_flight: 128 << 20,
            allow_special_chars: String::new(),
            max_points_per_request: 1_000_000,
            max_name_length: 1024,
            max_connections: 4096,
            carbon_max_connections: 1024,
            max_connections_per_ip: 512,
            handshake_timeout_ms: 10_000,
            idle_timeout_ms: 300_000,
            read_timeout_ms: 30_000,
            max_series: 0,
            max_series_per_metric: 0,
            max_new_series_per_minute: 0,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("invalid config: {0}")]
    Invalid(String),
    #[error("invalid config: rollups: {0}")]
    Rollups(#[from] rollup::RollupConfigError),
    #[error("invalid config: {0}")]
    Bigtable(#[from] tsgate_store::bigtable::SettingsError),
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        let mut cfg: Config = toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.into(),
            source,
        })?;
        cfg.rollups.base_dir = path.parent().map(Path::to_path_buf);
        cfg.validate()?;
        cfg.resolve_rollups()?;
        Ok(cfg)
    }

    /// Compiles `[rollups]` (reading its JSON file) and adds its tables to the ones the store
    /// opens and `create-tables` makes.
    pub fn resolve_rollups(&mut self) -> Result<(), ConfigError> {
        let data = self.storage.tables.data.clone();
        let compiled = self.rollups.compile(&data)?;
        self.storage.tables.rollups = compiled
            .as_ref()
            .map(|r| r.tables(&data))
            .unwrap_or_default();
        self.rollups.compiled = compiled.map(std::sync::Arc::new);
        Ok(())
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.log
            .format
            .parse::<LogFormat>()
            .map_err(|e| ConfigError::Invalid(format!("log.format: {e}")))?;
        let l = &self.limits;
        if l.max_body_bytes_in_flight > 0 && l.max_body_bytes_in_flight < l.http_body_max as u64 {
            return Err(ConfigError::Invalid(format!(
                "limits.max_body_bytes_in_flight ({}) must be 0 or at least limits.http_body_max ({}): a body of the largest size could never be read",
                l.max_body_bytes_in_flight, l.http_body_max
            )));
        }
        let s = &self.storage;
        for (k, w) in [
            ("metric", s.uid_width_metric),
            ("tagk", s.uid_width_tagk),
            ("tagv", s.uid_width_tagv),
        ] {
            if !(1..=8).contains(&w) {
                return Err(ConfigError::Invalid(format!(
                    "storage.uid_width_{k} must be 1..8, got {w}"
                )));
            }
        }
        if s.salt_width > 8 || (s.salt_width > 0 && s.salt_buckets == 0) {
            return Err(ConfigError::Invalid(
                "storage.salt_width must be 0..8 with salt_buckets >= 1".into(),
            ));
        }
        match s.backend.as_str() {
            "embedded" => {}
            "hbase" => {
                if s.hbase.thrift.trim().is_empty() {
                    return Err(ConfigError::Invalid(
                        "storage.hbase.thrift must name the Thrift gateway (host:port)".into(),
                    ));
                }
                if s.hbase.pool_size == 0 || s.hbase.scan_caching == 0 {
                    return Err(ConfigError::Invalid(
                        "storage.hbase.pool_size and scan_caching must be >= 1".into(),
                    ));
                }
            }
            "bigtable" => s.bigtable.check()?,
            other => {
                return Err(ConfigError::Invalid(format!(
                    "storage.backend {other:?} is not available (embedded, hbase, bigtable)"
                )))
            }
        }
        if self.limits.max_tags < 1 {
            return Err(ConfigError::Invalid("limits.max_tags must be >= 1".into()));
        }
        if self.graphite.max_tags < 1 || self.graphite.pickle_max_frame < 16 {
            return Err(ConfigError::Invalid(
                "graphite.max_tags must be >= 1 and graphite.pickle_max_frame >= 16".into(),
            ));
        }
        if self.prometheus.max_tags < 1 {
            return Err(ConfigError::Invalid(
                "prometheus.max_tags must be >= 1".into(),
            ));
        }
        // Past this a debug build's 2 MiB thread stack no longer holds the deepest evaluation.
        if !(1..=MAX_DEPTH_CEILING).contains(&self.query.max_depth) {
            return Err(ConfigError::Invalid(format!(
                "query.max_depth must be between 1 and {MAX_DEPTH_CEILING}"
            )));
        }
        let l = &self.limits;
        if l.max_points_per_request < 1
            || l.max_name_length < 1
            || l.max_connections < 1
            || l.carbon_max_connections < 1
            || l.max_connections_per_ip < 1
            || l.handshake_timeout_ms < 1
            || l.idle_timeout_ms < 1
            || l.read_timeout_ms < 1
        {
            return Err(ConfigError::Invalid(
                "limits.max_points_per_request, max_name_length, max_connections, carbon_max_connections, max_connections_per_ip, handshake_timeout_ms, idle_timeout_ms and read_timeout_ms must be >= 1".into(),
            ));
        }
        let d = |key: &str, v: &str| {
            parse_duration_s(v).map_err(|e| ConfigError::Invalid(format!("{key}: {e}")))
        };
        d("storage.retention", &s.retention)?;
        if d(
            "storage.retention_sweep_interval",
            &s.retention_sweep_interval,
        )? == 0
        {
            return Err(ConfigError::Invalid(
                "storage.retention_sweep_interval must be at least 1s".into(),
            ));
        }
        for (i, r) in s.retention_rules.iter().enumerate() {
            d(
                &format!("storage.retention_rules[{i}].retention"),
                &r.retention,
            )?;
            if r.metric.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "storage.retention_rules[{i}].metric must be a glob (\"*\" for every metric)"
                )));
            }
        }
        if !matches!(self.write.wal_fsync.as_str(), "always" | "never") {
            return Err(ConfigError::Invalid(
                "write.wal_fsync must be \"always\" or \"never\"".into(),
            ));
        }
        Ok(())
    }

    /// Whether the OpenTSDB port answers telnet commands (see `ServerConfig::telnet`).
    pub fn telnet_enabled(&self) -> bool {
        self.server.telnet.unwrap_or(!self.auth.enabled)
    }

    pub fn layout(&self) -> KeyLayout {
        let s = &self.storage;
        KeyLayout {
            metric_width: s.uid_width_metric,
            tagk_width: s.uid_width_tagk,
            tagv_width: s.uid_width_tagv,
            salt_width: s.salt_width,
            salt_buckets: s.salt_buckets,
        }
    }

    pub fn shards(&self) -> usize {
        if self.write.shards == 0 {
            // A shard is three threads and an fsync per group commit: on two cores, one shard
            // took 9 % less CPU than two for the same input (remote write and Graphite ingest).
            std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
        } else {
            self.write.shards
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_and_unknown_keys_fail() {
        let text = toml::to_string(&Config::default()).unwrap();
        assert_eq!(toml::from_str::<Config>(&text).unwrap(), Config::default());
        assert!(toml::from_str::<Config>("[limits]\nmax_tag = 3\n").is_err());
        let c: Config = toml::from_str("[limits]\nmax_tags = 12\n").unwrap();
        assert_eq!(c.limits.max_tags, 12);
        assert_eq!(c.server.listen, "0.0.0.0:4242");
    }

    #[test]
    fn hbase_backend_keys() {
        let c: Config = toml::from_str("[storage]\nbackend = \"hbase\"\n[storage.hbase]\nthrift = \"hb1:9090\"\npool_size = 4\n").unwrap();
        c.validate().unwrap();
        assert_eq!(c.storage.hbase.thrift, "hb1:9090");
        assert_eq!(c.storage.hbase.retries, 3);
        let mut bad = c.clone();
        bad.storage.backend = "cassandra".into();
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("embedded, hbase, bigtable"));
        assert!(toml::from_str::<Config>("[storage.hbase]\nthrfit = \"x\"\n").is_err());
    }

    #[test]
    fn bigtable_backend_keys() {
        let c: Config = toml::from_str("[storage]\nbackend = \"bigtable\"\n[storage.bigtable]\nproject = \"p\"\ninstance = \"i\"\napp_profile = \"tsgate\"\nchannels = 2\n").unwrap();
        c.validate().unwrap();
        assert_eq!(c.storage.bigtable.app_profile, "tsgate");
        assert_eq!(c.storage.bigtable.max_mutations_per_request, 100_000);
        let mut bad = c.clone();
        bad.storage.bigtable.instance.clear();
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("storage.bigtable.project and storage.bigtable.instance"));
        let mut bad = c.clone();
        bad.storage.bigtable.max_mutations_per_request = 100_001;
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("the service's limit"));
        assert!(toml::from_str::<Config>("[storage.bigtable]\nprojet = \"x\"\n").is_err());
    }

    #[test]
    fn invalid_widths_are_named() {
        let mut c = Config::default();
        c.storage.uid_width_tagv = 9;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("uid_width_tagv"));
    }

    #[test]
    fn max_depth_stays_within_what_a_stack_holds() {
        let c: Config = toml::from_str("[query]\nmax_depth = 128\n").unwrap();
        c.validate().unwrap();
        assert_eq!(Config::default().query.max_depth, 64);
        for bad in [0, MAX_DEPTH_CEILING + 1] {
            let mut c = Config::default();
            c.query.max_depth = bad;
            assert!(c
                .validate()
                .unwrap_err()
                .to_string()
                .contains("query.max_depth"));
        }
    }
}

/// `log.format`: how log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid log format {0:?}: expected text or json")]
pub struct BadFormat(pub String);

impl std::str::FromStr for LogFormat {
    type Err = BadFormat;
    fn from_str(s: &str) -> Result<Self, BadFormat> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(BadFormat(other.into())),
        }
    }
}
