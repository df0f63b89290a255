//! tsgate: a time-series gateway and database that stores OpenTSDB's HBase schema byte for byte.
//!
//! Data flows one way: protocol codec (`protocols/*`) → normalise/validate → UID resolve
//! (`series`, `uid`) → write buffer and WAL (`write`) → store (`store`).

pub mod app;
pub mod cli;
pub mod config;
#[doc(hidden)]
pub mod fuzz_api;
pub mod graphite;
pub mod ingest;
pub mod meta;
pub mod observe;
pub mod prometheus;
pub mod promql;
pub mod query;
pub use tsgate_schema as schema;
pub mod series;
pub mod server;
pub mod stats;
pub use tsgate_store as store;
pub mod uid;
pub mod write;

pub use tsgate_common::cores;
