//! The HBase backend: the `Store` trait over HBase's Thrift (v1) gateway, table creation, and
//! an in-process Thrift test double (HBase cannot be installed here; see `double`).

pub mod client;
pub mod codec;
pub mod error;
pub mod filter;
pub mod pool;
pub mod scanner;
pub mod tables;

pub use client::HBaseStore;
pub use error::HBaseError;

/// `[storage.hbase]`: where the Thrift gateway is and how to talk to it.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct HBaseConfig {
    /// `host:port` of an HBase Thrift (v1) server (`hbase thrift start -p 9090`).
    pub thrift: String,
    /// Connections kept to the gateway (shards, queries and UID assignment share them).
    pub pool_size: usize,
    pub connect_timeout_ms: u64,
    /// Read/write timeout of one call; also how long to wait for a free pooled connection.
    pub timeout_ms: u64,
    /// Retries of a call that failed in transport (never of an answer from HBase).
    pub retries: u32,
    /// First retry delay; doubles each retry, at most 5 s.
    pub retry_backoff_ms: u64,
    /// Results per `scannerGetList` (and the scan's `caching`).
    pub scan_caching: u32,
    /// Cells per result (`batchSize`): wider rows arrive in pieces and are joined. 0 = whole rows.
    pub scan_batch: u32,
}

impl Default for HBaseConfig {
    fn default() -> Self {
        HBaseConfig {
            thrift: "127.0.0.1:9090".into(),
            pool_size: 8,
            connect_timeout_ms: 5_000,
            timeout_ms: 30_000,
            retries: 3,
            retry_backoff_ms: 100,
            scan_caching: 1024,
            scan_batch: 4096,
        }
    }
}
