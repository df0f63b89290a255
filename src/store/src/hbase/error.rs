//! Errors of the HBase Thrift backend, told apart by whether retrying can help.

use hbase_thrift::hbase::{AlreadyExists, IOError, IllegalArgument};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum HBaseError {
    #[error("cannot connect to the HBase Thrift gateway at {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no connection to the HBase Thrift gateway came free within {0:?} (storage.hbase.pool_size)")]
    PoolExhausted(Duration),
    #[error("transport error talking to the HBase Thrift gateway at {addr} (after {attempts} attempts): {message}")]
    Transport {
        addr: String,
        attempts: u32,
        message: String,
    },
    #[error("protocol error from the HBase Thrift gateway: {0}")]
    Protocol(String),
    #[error("HBase IOError: {0}")]
    Io(String),
    #[error("HBase IllegalArgument: {0}")]
    IllegalArgument(String),
    #[error("HBase AlreadyExists: {0}")]
    AlreadyExists(String),
    #[error("application error from the HBase Thrift gateway: {0}")]
    Application(String),
    #[error("tables missing in HBase: {0} (create them with `tsgate hbase create-tables`)")]
    MissingTables(String),
}

impl HBaseError {
    /// Only failures to reach the gateway are retried: a declared HBase exception is an answer.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            HBaseError::Connect { .. } | HBaseError::Transport { .. }
        )
    }

    /// Whether the connection that saw this error is still in step with the server.
    pub fn keeps_connection(&self) -> bool {
        matches!(
            self,
            HBaseError::Io(_) | HBaseError::IllegalArgument(_) | HBaseError::AlreadyExists(_)
        )
    }

    pub fn from_thrift(e: thrift::Error, addr: &str) -> HBaseError {
        match e {
            thrift::Error::Transport(t) => HBaseError::Transport {
                addr: addr.to_string(),
                attempts: 1,
                message: t.to_string(),
            },
            thrift::Error::Protocol(p) => HBaseError::Protocol(p.to_string()),
            thrift::Error::Application(a) => HBaseError::Application(a.to_string()),
            thrift::Error::User(u) => {
                if let Some(io) = u.downcast_ref::<IOError>() {
                    HBaseError::Io(io.message.clone().unwrap_or_default())
                } else if let Some(ia) = u.downcast_ref::<IllegalArgument>() {
                    HBaseError::IllegalArgument(ia.message.clone().unwrap_or_default())
                } else if let Some(ae) = u.downcast_ref::<AlreadyExists>() {
                    HBaseError::AlreadyExists(ae.message.clone().unwrap_or_default())
                } else {
                    HBaseError::Application(u.to_string())
                }
            }
        }
    }
}
