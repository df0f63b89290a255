//! tsgate: a time-series gateway and database that stores OpenTSDB's HBase schema byte for byte.
//!
//! Data flows one way: protocol codec (`protocols/*`) → normalise/validate → UID resolve
//! (`series`, `uid`) → write buffer and WAL (`write`) → store (`store`).

pub mod app;
pub mod cli;
#[doc(hidden)]
pub mod fuzz_api;
pub mod migrate;
pub mod server;
pub mod stats;

pub use tsgate_common::cores;
pub use tsgate_core::{
    config, graphite, ingest, lifecycle, meta, observe, prometheus, series, uid, write,
};
pub use tsgate_query as query;
pub use tsgate_query::promql;
pub use tsgate_schema as schema;
pub use tsgate_store as store;
