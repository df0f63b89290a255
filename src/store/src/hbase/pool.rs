//! A fixed-size pool of Thrift connections (binary protocol over a buffered transport, the
//! defaults of HBase's `hbase thrift start`), with timeouts, retries on transport errors with
//! exponential backoff, and a counter of calls per Thrift method.

use super::error::HBaseError;
use super::HBaseConfig;
use hbase_thrift::hbase::HbaseSyncClient;
use parking_lot::{Condvar, Mutex};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};
use thrift::transport::{
    ReadHalf, TBufferedReadTransport, TBufferedWriteTransport, TIoChannel, TTcpChannel, WriteHalf,
};

pub type Client = HbaseSyncClient<
    TBinaryInputProtocol<TBufferedReadTransport<ReadHalf<TTcpChannel>>>,
    TBinaryOutputProtocol<TBufferedWriteTransport<WriteHalf<TTcpChannel>>>,
>;

/// The Thrift methods tsgate calls, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    MutateRows,
    MutateRowsTs,
    GetRowWithColumns,
    GetRowsWithColumns,
    ScannerOpenWithScan,
    ScannerGetList,
    ScannerClose,
    AtomicIncrement,
    CheckAndPut,
    GetTableNames,
    CreateTable,
}

impl Method {
    pub const ALL: [Method; 11] = [
        Method::MutateRows,
        Method::MutateRowsTs,
        Method::GetRowWithColumns,
        Method::GetRowsWithColumns,
        Method::ScannerOpenWithScan,
        Method::ScannerGetList,
        Method::ScannerClose,
        Method::AtomicIncrement,
        Method::CheckAndPut,
        Method::GetTableNames,
        Method::CreateTable,
    ];

    /// The method's name in Hbase.thrift.
    pub fn name(self) -> &'static str {
        match self {
            Method::MutateRows => "mutateRows",
            Method::MutateRowsTs => "mutateRowsTs",
            Method::GetRowWithColumns => "getRowWithColumns",
            Method::GetRowsWithColumns => "getRowsWithColumns",
            Method::ScannerOpenWithScan => "scannerOpenWithScan",
            Method::ScannerGetList => "scannerGetList",
            Method::ScannerClose => "scannerClose",
            Method::AtomicIncrement => "atomicIncrement",
            Method::CheckAndPut => "checkAndPut",
            Method::GetTableNames => "getTableNames",
            Method::CreateTable => "createTable",
        }
    }
}

/// Calls made, by method (retries count as calls: they are round trips).
#[derive(Default)]
pub struct CallStats {
    counts: [AtomicU64; 11],
}

impl CallStats {
    pub fn count(&self, m: Method) {
        self.counts[m as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        Method::ALL
            .iter()
            .map(|m| (m.name(), self.counts[*m as usize].load(Ordering::Relaxed)))
            .collect()
    }
}

struct State {
    idle: Vec<Client>,
    /// Connections in existence: idle plus checked out.
    open: usize,
}

pub struct Pool {
    addr: String,
    size: usize,
    connect_timeout: Duration,
    io_timeout: Duration,
    retries: u32,
    backoff: Duration,
    state: Mutex<State>,
    freed: Condvar,
    pub stats: CallStats,
}

/// A checked-out connection; goes back to the pool on drop unless it was broken.
pub struct Conn {
    pool: Arc<Pool>,
    client: Option<Client>,
}

impl Conn {
    pub fn client(&mut self) -> &mut Client {
        self.client
            .as_mut()
            .expect("connection present until dropped")
    }

    /// Drops a connection whose stream may be out of step with the server.
    pub fn discard(mut self) {
        self.client = None;
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let mut st = self.pool.state.lock();
        match self.client.take() {
            Some(c) => st.idle.push(c),
            None => st.open -= 1,
        }
        drop(st);
        self.pool.freed.notify_one();
    }
}

impl Pool {
    pub fn new(cfg: &HBaseConfig) -> Pool {
        Pool {
            addr: cfg.thrift.clone(),
            size: cfg.pool_size.max(1),
            connect_timeout: Duration::from_millis(cfg.connect_timeout_ms.max(1)),
            io_timeout: Duration::from_millis(cfg.timeout_ms.max(1)),
            retries: cfg.retries,
            backoff: Duration::from_millis(cfg.retry_backoff_ms),
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
            stats: CallStats::default(),
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn connect(&self) -> Result<Client, HBaseError> {
        let err = |source: std::io::Error| HBaseError::Connect {
            addr: self.addr.clone(),
            source,
        };
        let mut last = None;
        let mut stream = None;
        for a in self.addr.to_socket_addrs().map_err(err)? {
            match TcpStream::connect_timeout(&a, self.connect_timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            err(last.unwrap_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "address resolved to nothing")
            }))
        })?;
        stream.set_nodelay(true).map_err(err)?;
        stream
            .set_read_timeout(Some(self.io_timeout))
            .map_err(err)?;
        stream
            .set_write_timeout(Some(self.io_timeout))
            .map_err(err)?;
        let (r, w) = TTcpChannel::with_stream(stream)
            .split()
            .map_err(|e| err(std::io::Error::other(e.to_string())))?;
        let input =
            TBinaryInputProtocol::new(TBufferedReadTransport::with_capacity(64 << 10, r), true);
        let output =
            TBinaryOutputProtocol::new(TBufferedWriteTransport::with_capacity(64 << 10, w), true);
        Ok(HbaseSyncClient::new(input, output))
    }

    /// A connection: an idle one, a new one while below the pool size, or the next one freed.
    pub fn checkout(self: &Arc<Self>) -> Result<Conn, HBaseError> {
        let deadline = Instant::now() + self.io_timeout;
        let mut st = self.state.lock();
        loop {
            if let Some(c) = st.idle.pop() {
                return Ok(Conn {
                    pool: self.clone(),
                    client: Some(c),
                });
            }
            if st.open < self.size {
                st.open += 1;
                drop(st);
                return match self.connect() {
                    Ok(c) => Ok(Conn {
                        pool: self.clone(),
                        client: Some(c),
                    }),
                    Err(e) => {
                        self.state.lock().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            if self.freed.wait_until(&mut st, deadline).timed_out() {
                return Err(HBaseError::PoolExhausted(self.io_timeout));
            }
        }
    }

    /// Runs one Thrift call on a pooled connection; transport failures (including failing to
    /// connect) are retried with a fresh connection after an exponential backoff.
    pub fn call<T>(
        self: &Arc<Self>,
        method: Method,
        mut f: impl FnMut(&mut Client) -> thrift::Result<T>,
    ) -> Result<T, HBaseError> {
        let mut attempt = 0;
        let mut delay = self.backoff;
        loop {
            attempt += 1;
            let result = self.checkout().and_then(|mut conn| {
                self.stats.count(method);
                match f(conn.client()) {
                    Ok(v) => Ok(v),
                    Err(e) => {
                        let e = HBaseError::from_thrift(e, &self.addr);
                        if !e.keeps_connection() {
                            conn.discard();
                        }
                        Err(e)
                    }
                }
            });
            match result {
                Err(e) if e.is_transient() && attempt <= self.retries => {
                    tracing::warn!(method = method.name(), attempt, error = %e, "HBase Thrift call failed; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(HBaseError::Transport { addr, message, .. }) => {
                    return Err(HBaseError::Transport {
                        addr,
                        attempts: attempt,
                        message,
                    })
                }
                other => return other,
            }
        }
    }

    pub fn retries(&self) -> u32 {
        self.retries
    }
}
