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
    pub config: Arc<Config>,
}
