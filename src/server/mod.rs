//! The OpenTSDB port: one listener, telnet and HTTP told apart by the first byte of a
//! connection (an upper-case letter starts an HTTP request), as OpenTSDB's TSD does; 0x16 (a
//! TLS ClientHello) starts HTTPS when `[server.tls]` is configured.

pub mod accounting;
pub mod api;
pub mod auth;
pub mod blocking;
pub mod carbon;
pub mod graphite_web;
pub mod http;
pub mod limits;
pub mod opentsdb_meta;
pub mod opentsdb_query;
pub mod prometheus;
pub mod refuse;
pub mod stats_api;
pub mod telnet;
pub mod tls;

use crate::ingest::Ingest;
use crate::query::QueryEngine;
use crate::series::SeriesResolver;
use crate::stats::Stats;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tsgate_opentsdb::Limits;

/// What every connection handler shares.
pub struct AppState {
    pub ingest: Ingest,
    pub query: QueryEngine,
    pub resolver: Arc<SeriesResolver>,
    /// Annotations, UID/TS metadata and trees.
    pub meta: Arc<crate::meta::MetaService>,
    pub limits: Limits,
    pub config: crate::config::Config,
    pub stats: Stats,
    pub started: Instant,
    /// State of the Prometheus endpoints (metadata from remote write).
    pub prom: crate::prometheus::PromState,
    /// Graphite paths of the stored series, for graphite-web browsing and path expressions.
    pub graphite_index: graphite_web::index::SeriesIndex,
    /// Graphite path ↔ metric + tags (ingest and the graphite-web API).
    pub names: Arc<crate::graphite::names::NameRules>,
    /// Open connections over every listener (`limits.max_connections` permits).
    pub connections: Arc<tokio::sync::Semaphore>,
    /// HTTP authentication (`[auth]`); `None` = every endpoint open.
    pub auth: Option<Arc<auth::Authenticator>>,
    /// HTTPS on the port (`[server.tls]`).
    pub tls: Option<Arc<tls::Tls>>,
    /// The series counted by metric, and the cardinality limits.
    pub cardinality: Arc<crate::lifecycle::cardinality::Cardinality>,
}

impl AppState {
    /// The counters `stats` and `/api/stats` report, the store's included (with HBase, Thrift
    /// calls by method as `tsd.hbase.rpcs type=<method>`).
    pub fn stats_snapshot(&self) -> Vec<crate::stats::StatRow> {
        let mut v = self
            .stats
            .snapshot(self.resolver.uids().cache_len(), self.resolver.len());
        for (method, n) in self.query.store.counters() {
            v.push(("tsd.hbase.rpcs", n, Some(("type", method))));
        }
        if let Some(rows) = &self.query.rows {
            let (hits, misses, bytes) = rows.stats();
            v.push(("tsd.rowcache.lookups", hits, Some(("type", "hit"))));
            v.push(("tsd.rowcache.lookups", misses, Some(("type", "miss"))));
            v.push(("tsd.rowcache.bytes", bytes, None));
        }
        v
    }
}

/// Accepts connections until `shutdown` turns true, handing each to `conn` on its own task;
/// then returns (open connections finish their current request and see the writer close).
/// Every listener (OpenTSDB, Graphite plaintext, pickle) runs this loop.
pub async fn accept_loop<F, Fut>(
    what: &'static str,
    state: Arc<AppState>,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
    conn: F,
) where
    F: Fn(Arc<AppState>, TcpStream, watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
{
    let label = crate::observe::Listener::named(what);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, listener = what, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let Ok(permit) = state.connections.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, listener = what, "connection refused: limits.max_connections reached");
                    tokio::spawn(limits::refuse(what, stream, state.config.limits.max_connections));
                    continue;
                };
                let fut = conn(state.clone(), stream, shutdown.clone());
                let open = crate::observe::ConnectionGuard::open(label);
                tokio::spawn(async move {
                    let _open = open;
                    let _permit = permit; // held until the connection ends
                    if let Err(e) = fut.await {
                        tracing::debug!(%peer, error = %e, listener = what, "connection ended with an error");
                    }
                });
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// The OpenTSDB port (telnet and HTTP).
pub async fn serve(state: Arc<AppState>, listener: TcpListener, shutdown: watch::Receiver<bool>) {
    accept_loop("opentsdb", state, listener, shutdown, handle).await
}

fn peer_of(stream: &TcpStream) -> String {
    stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default()
}

async fn handle(
    state: Arc<AppState>,
    stream: TcpStream,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut first = [0u8; 1];
    // A peer that connects and stays silent is closed like any idle connection.
    let idle = std::time::Duration::from_millis(state.config.limits.idle_timeout_ms);
    let n = match tokio::time::timeout(idle, stream.peek(&mut first)).await {
        Ok(r) => r?,
        Err(_) => return Ok(()),
    };
    if n == 0 {
        return Ok(());
    }
    const TLS_HANDSHAKE: u8 = 0x16;
    match (&state.tls, first[0]) {
        (Some(tls), TLS_HANDSHAKE) => tls.clone().serve(state, stream, shutdown).await,
        (Some(tls), b) if b.is_ascii_uppercase() && !tls.allow_plaintext => {
            refuse::refuse_plaintext(stream).await
        }
        (_, b) if b.is_ascii_uppercase() => {
            let peer = peer_of(&stream);
            http::serve_connection(state, stream, peer, shutdown).await
        }
        _ if !state.config.telnet_enabled() => refuse::refuse_telnet(stream).await,
        _ => telnet::serve_connection(state, stream, shutdown).await,
    }
}
