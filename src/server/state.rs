//! What each API family's handlers may reach, built once by the app's wiring (`app.rs`). A
//! handler takes its family's state, not the whole node: the Prometheus API cannot touch the
//! graphite-web index, carbon listeners cannot run queries, and what a family depends on reads
//! off its struct. The parts several families share (the ingest path, the query engine, the
//! series resolver) are behind `Arc`s; each family reads the config keys it needs from its own
//! settings, converted once from the config at start, never the whole config.

use crate::config::rollup::RollupsConfig;
use crate::config::Config;
use crate::graphite::names::NameRules;
use crate::ingest::Ingest;
use crate::lifecycle::cardinality::Cardinality;
use crate::meta::MetaService;
use crate::prometheus::PromState;
use crate::query::graphite::{self, index::SeriesIndex};
use crate::query::QueryEngine;
use crate::series::SeriesResolver;
use crate::server::admission;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tsgate_opentsdb::Limits;

/// The OpenTSDB API: `/api/put`, telnet, `/api/query`, metadata, annotations and trees.
pub struct OpenTsdb {
    pub ingest: Arc<Ingest>,
    pub query: Arc<QueryEngine>,
    pub resolver: Arc<SeriesResolver>,
    /// Annotations, UID/TS metadata and trees.
    pub meta: Arc<MetaService>,
    /// OpenTSDB's put checks (name lengths, tags per point).
    pub limits: Limits,
    /// A delete must drop the deleted series from graphite-web's index at once.
    pub graphite_index: Arc<SeriesIndex>,
    pub settings: OpenTsdbSettings,
}

/// What the OpenTSDB API reads of the config, taken from it once at start.
#[derive(Debug, Clone)]
pub struct OpenTsdbSettings {
    /// `limits.max_points_per_request`: points one `/api/put`, `/api/rollup` or
    /// `/api/histogram` request may carry.
    pub max_points_per_request: usize,
    /// `limits.http_body_max`: the most a gzip body inflates to.
    pub http_body_max: usize,
    /// `limits.telnet_line_max`: the longest telnet line read.
    pub telnet_line_max: usize,
    /// `limits.idle_timeout_ms`: a telnet connection silent this long is closed.
    pub idle: Duration,
    /// `query.max_answer_bytes` (0 = no limit).
    pub max_answer_bytes: usize,
    /// `query.max_image_pixels` (0 = no limit) for `/q?png`.
    pub max_image_pixels: u64,
    /// `[rollups]`, where `/api/rollup` and the telnet `rollup` command write.
    /// `query.max_depth`: the deepest `/api/query/exp` expression parsed.
    pub max_depth: usize,
    pub rollups: Arc<RollupsConfig>,
    /// What `/api/config` answers: OpenTSDB's keys and the whole config, secrets redacted.
    pub config_view: Arc<BTreeMap<String, String>>,
}

impl OpenTsdbSettings {
    pub fn from_config(c: &Config) -> OpenTsdbSettings {
        OpenTsdbSettings {
            max_depth: c.query.max_depth,
            max_points_per_request: c.limits.max_points_per_request,
            http_body_max: c.limits.http_body_max,
            telnet_line_max: c.limits.telnet_line_max,
            idle: Duration::from_millis(c.limits.idle_timeout_ms),
            max_answer_bytes: c.query.max_answer_bytes,
            max_image_pixels: c.query.max_image_pixels,
            rollups: Arc::new(c.rollups.clone()),
            config_view: Arc::new(crate::server::opentsdb_query::config_view(c)),
        }
    }
}

/// The Prometheus API: remote write and read, PromQL, series and labels, metadata.
pub struct Prometheus {
    pub ingest: Arc<Ingest>,
    pub query: Arc<QueryEngine>,
    pub resolver: Arc<SeriesResolver>,
    /// Metadata from remote write.
    pub prom: PromState,
    /// `delete_series` must drop the deleted series from graphite-web's index at once.
    pub graphite_index: Arc<SeriesIndex>,
    /// Series counts by metric (`/api/v1/status/tsdb`) and the cardinality limits.
    pub cardinality: Arc<Cardinality>,
    pub settings: PrometheusSettings,
}

/// What the Prometheus API (with the InfluxDB and OTLP writes it hosts) reads of the config,
/// taken from it once at start.
#[derive(Debug, Clone)]
pub struct PrometheusSettings {
    /// `prometheus.max_tags`: labels per series besides `__name__`.
    pub max_tags: usize,
    /// `prometheus.max_decompressed_bytes`: the largest remote-write / remote-read body.
    pub max_decompressed_bytes: usize,
    /// `prometheus.lookback_delta_ms`.
    pub lookback_delta_ms: u64,
    /// `prometheus.max_samples`: samples one query or export may load.
    pub max_samples: usize,
    /// `limits.http_body_max`: the most a compressed body inflates to.
    pub http_body_max: usize,
    /// `limits.max_points_per_request`.
    pub max_points_per_request: usize,
    /// `query.timeout_ms`: caps every query (0 = Prometheus' own 2 minutes).
    pub query_timeout_ms: u64,
    /// `query.max_depth`: the deepest expression parsed.
    pub max_depth: usize,
    /// `storage.retention` in ms (0 = for ever): older windows read rollups.
    pub raw_retention_ms: i64,
    /// `admin.enabled`: the admin API (delete_series, snapshot) answers.
    pub admin: bool,
    /// `data_dir/snapshots`, where `/api/v1/admin/tsdb/snapshot` writes.
    pub snapshots_dir: PathBuf,
}

impl PrometheusSettings {
    pub fn from_config(c: &Config) -> PrometheusSettings {
        let p = &c.prometheus;
        PrometheusSettings {
            max_tags: p.max_tags,
            max_decompressed_bytes: p.max_decompressed_bytes,
            lookback_delta_ms: p.lookback_delta_ms,
            max_samples: p.max_samples,
            http_body_max: c.limits.http_body_max,
            max_points_per_request: c.limits.max_points_per_request,
            query_timeout_ms: c.query.timeout_ms,
            max_depth: c.query.max_depth,
            raw_retention_ms: crate::config::parse_duration_s(&c.storage.retention).unwrap_or(0)
                as i64
                * 1000,
            admin: c.admin.enabled,
            snapshots_dir: c.data_dir.join("snapshots"),
        }
    }
}

/// The graphite-web API: `/render`, `/metrics/*`, `/tags/*`, events.
pub struct GraphiteWeb {
    /// `/tags/delSeries` writes out what is buffered before it deletes.
    pub ingest: Arc<Ingest>,
    /// The render language's engine: the query engine, name rules and the series index.
    pub engine: Arc<graphite::Engine>,
    /// `/tags/delSeries` forgets the series it deleted.
    pub cardinality: Arc<Cardinality>,
    pub settings: GraphiteWebSettings,
}

/// What the graphite-web API reads of the config, taken from it once at start (the render
/// language's own is `query::graphite::Settings`).
#[derive(Debug, Clone, Copy)]
pub struct GraphiteWebSettings {
    /// `query.timeout_ms`: bounds every answer (0 = no limit).
    pub timeout_ms: u64,
    /// `query.max_depth`: the deepest target parsed.
    pub max_depth: usize,
    /// `query.max_answer_bytes` (0 = no limit).
    pub max_answer_bytes: usize,
    /// `query.max_image_pixels` (0 = no limit).
    pub max_image_pixels: u64,
    /// `admin.enabled`: `/tags/delSeries` answers.
    pub admin: bool,
}

impl GraphiteWebSettings {
    pub fn from_config(c: &Config) -> GraphiteWebSettings {
        GraphiteWebSettings {
            timeout_ms: c.query.timeout_ms,
            max_depth: c.query.max_depth,
            max_answer_bytes: c.query.max_answer_bytes,
            max_image_pixels: c.query.max_image_pixels,
            admin: c.admin.enabled,
        }
    }
}

/// The carbon listeners: Graphite plaintext and pickle.
pub struct Carbon {
    pub ingest: Arc<Ingest>,
    pub resolver: Arc<SeriesResolver>,
    pub names: Arc<NameRules>,
    pub settings: CarbonSettings,
}

/// What the carbon listeners read of the config, taken from it once at start.
#[derive(Debug, Clone)]
pub struct CarbonSettings {
    /// `limits.carbon_max_connections`, `limits.max_connections_per_ip` and
    /// `limits.handshake_timeout_ms`.
    pub admission: admission::Limits,
    /// `limits.idle_timeout_ms`: a connection silent this long is closed.
    pub idle: Duration,
    /// `graphite.pickle_max_frame`: the largest pickle frame read.
    pub pickle_max_frame: usize,
}

impl CarbonSettings {
    pub fn from_config(c: &Config) -> CarbonSettings {
        CarbonSettings {
            admission: admission::Limits::of(&c.limits, true),
            idle: Duration::from_millis(c.limits.idle_timeout_ms),
            pickle_max_frame: c.graphite.pickle_max_frame,
        }
    }
}
