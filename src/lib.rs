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
pub mod memory;
pub mod meta;
pub mod observe;
pub mod pool;
pub mod prometheus;
pub mod promql;
pub mod query;
pub mod received;
pub mod schema;
pub mod series;
pub mod server;
pub mod stats;
pub mod store;
pub mod tree;
pub mod uid;
pub mod write;

/// The cores this process may run on, read once: the standard library reads the affinity
/// mask and the cgroup's CPU quota files on every call, tens of microseconds a query paid
/// several times over.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
