//! graphite-web's render language: target expressions parsed (`parser`), evaluated
//! (`eval`) over series read through the shared scan onto whisper's grid (`series`), the
//! function library (`functions`), time grammars (`attime`), path globs (`glob`), the series
//! index that paths resolve against (`index`, named by `naming`) and `seriesByTag` expressions
//! (`tags`). The HTTP side (parameters, output formats, browsing endpoints) is the server's.

pub mod attime;
pub mod eval;
pub mod functions;
pub mod glob;
pub mod index;
pub mod naming;
pub mod parallel;
pub mod parser;
pub mod series;
pub mod tags;

use crate::QueryEngine;
use index::SeriesIndex;
use std::sync::Arc;
use tsgate_core::config::Config;
use tsgate_core::graphite::names::NameRules;
use tsgate_core::series::SeriesResolver;

/// What graphite-web's evaluation and browsing read: the shared query engine, the series
/// resolver (whose generation tells the index it may be stale), the name rules that turn a
/// stored series into a Graphite path, and the index of those paths.
pub struct Engine {
    pub query: Arc<QueryEngine>,
    pub resolver: Arc<SeriesResolver>,
    /// Graphite path ↔ metric + tags, the same rules carbon ingest maps with.
    pub names: Arc<NameRules>,
    /// Graphite paths of the stored series, for browsing and path expressions.
    pub graphite_index: Arc<SeriesIndex>,
    pub settings: Settings,
}

/// The configuration the render language reads, taken from the config once at start.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `query.max_cells`: values one request may read and grid; 0 = no limit.
    pub max_cells: u64,
    /// `write.flush_interval_ms`: how long a new series' first points may take to reach the
    /// store (the index waits that long before it trusts a quiet store).
    pub flush_interval_ms: u64,
    /// Whether this process is the store's only writer (the embedded backend): a snapshot of
    /// a quiet store then lives past the index's TTL.
    pub sole_writer: bool,
    /// How long raw data is kept (`storage.retention`, seconds, 0 = for ever): a window
    /// reaching further back reads a rollup, as graphite-web reads a coarser archive.
    pub raw_retention_s: u64,
    /// Each rollup interval's retention (`rollups.retention`), seconds, 0 = for ever.
    pub rollup_retention_s: Vec<(String, u64)>,
}

impl Settings {
    pub fn from_config(c: &Config) -> Settings {
        Settings {
            max_cells: c.query.max_cells,
            flush_interval_ms: c.write.flush_interval_ms,
            sole_writer: c.storage.backend == "embedded",
            raw_retention_s: tsgate_core::config::parse_duration_s(&c.storage.retention)
                .unwrap_or(0),
            rollup_retention_s: c
                .rollups
                .compiled
                .iter()
                .flat_map(|r| r.intervals.iter())
                .map(|i| (i.interval.clone(), c.rollups.retention_s(&i.interval)))
                .collect(),
        }
    }

    /// The retention of raw data (None) or of a rollup interval, seconds (0 = for ever).
    pub fn retention_s(&self, iv: Option<&tsgate_schema::rollup::RollupInterval>) -> u64 {
        match iv {
            None => self.raw_retention_s,
            Some(iv) => self
                .rollup_retention_s
                .iter()
                .find(|(n, _)| *n == iv.interval)
                .map_or(0, |(_, s)| *s),
        }
    }
}
