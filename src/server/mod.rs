//! The OpenTSDB port: one listener, telnet and HTTP told apart by the first byte of a
//! connection (an upper-case letter starts an HTTP request), as OpenTSDB's TSD does; 0x16 (a
//! TLS ClientHello) starts HTTPS when `[server.tls]` is configured.

pub mod accounting;
pub mod admission;
pub mod api;
pub mod auth;
pub mod blocking;
pub mod body_budget;
pub mod carbon;
pub mod graph;
pub mod graphite_web;
pub mod http;
pub mod influx;
pub mod limits;
pub mod opentsdb_exp;
pub mod opentsdb_gexp;
pub mod opentsdb_graph;
pub mod opentsdb_histogram;
pub mod opentsdb_meta;
pub mod opentsdb_query;
pub mod otlp;
pub mod prometheus;
pub mod refuse;
pub mod routes;
pub mod senders;
pub mod state;
pub mod stats_api;
pub mod telnet;
pub mod tls;
pub mod ui;

use crate::ingest::Ingest;
use crate::query::QueryEngine;
use crate::series::SeriesResolver;
use crate::stats::Stats;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The node as the listeners see it: each API family's state, and what the port itself needs
/// (admission, authentication, TLS). Handlers take their family's part ([`state`]).
pub struct AppState {
    pub opentsdb: Arc<state::OpenTsdb>,
    pub prometheus: Arc<state::Prometheus>,
    pub graphite_web: Arc<state::GraphiteWeb>,
    pub carbon: Arc<state::Carbon>,
    /// The parts `/metrics`, `/api/stats` and the shutdown read.
    pub ingest: Arc<Ingest>,
    pub query: Arc<QueryEngine>,
    pub resolver: Arc<SeriesResolver>,
    pub config: Arc<crate::config::Config>,
    pub started: Instant,
    /// HTTP authentication (`[auth]`); `None` = every endpoint open.
    pub auth: Option<Arc<auth::Authenticator>>,
    /// HTTPS on the port (`[server.tls]`).
    pub tls: Option<Arc<tls::Tls>>,
    /// `limits.max_body_bytes_in_flight`, shared by every HTTP request.
    pub bodies: Arc<body_budget::BodyBudget>,
}

/// The counters `stats` and `/api/stats` report, the store's included (with HBase, Thrift
/// calls by method as `tsd.hbase.rpcs type=<method>`).
pub fn stats_snapshot(
    resolver: &SeriesResolver,
    query: &QueryEngine,
) -> Vec<crate::stats::StatRow> {
    let mut v = Stats.snapshot(resolver.uids().cache_len(), resolver.len());
    for (method, n) in query.store.counters() {
        v.push(("tsd.hbase.rpcs", n, Some(("type", method))));
    }
    // 1 while the store refuses writes, by reason (the log says why in words).
    let refusal = query.store.refusing_writes();
    for reason in crate::store::REFUSAL_REASONS {
        let on = refusal.as_ref().is_some_and(|r| r.reason == reason);
        v.push((
            "tsd.storage.refusing_writes",
            u64::from(on),
            Some(("reason", reason)),
        ));
    }
    if let Some(rows) = &query.rows {
        let (hits, misses, bytes) = rows.stats();
        v.push(("tsd.rowcache.lookups", hits, Some(("type", "hit"))));
        v.push(("tsd.rowcache.lookups", misses, Some(("type", "miss"))));
        v.push(("tsd.rowcache.bytes", bytes, None));
    }
    v
}

/// Accepts connections until `shutdown` turns true, handing each to `conn` on its own task;
/// then returns (open connections finish their current request and see the writer close).
/// Every listener (OpenTSDB, Graphite plaintext, pickle) runs this loop, each with its own
/// slots (`admission`): the carbon listeners' (`limits.carbon_max_connections`) apart from the
/// OpenTSDB port's (`limits.max_connections`).
pub async fn accept_loop<S, F, Fut>(
    what: &'static str,
    state: Arc<S>,
    limits: admission::Limits,
    idle: std::time::Duration,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
    conn: F,
) where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, TcpStream, watch::Receiver<bool>) -> Fut + Copy + Send + 'static,
    Fut: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
{
    let label = crate::observe::Listener::named(what);
    // Carbon senders cannot authenticate: their first bytes are all they can prove.
    let carbon = what != "opentsdb";
    let admission = admission::Admission::new(limits);
    // Refusals since the last warning, and when it was.
    let (mut refused, mut last_warned) = (0u64, None::<std::time::Instant>);
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
                let ticket = match admission.admit(peer.ip()) {
                    Ok(t) => t,
                    Err(why) => {
                        // A flood must not become a flood of log lines: one a second.
                        refused += 1;
                        if last_warned.is_none_or(|t| t.elapsed().as_secs() >= 1) {
                            tracing::warn!(%peer, listener = what, refused, "connection refused: {why}");
                            (last_warned, refused) = (Some(std::time::Instant::now()), 0);
                        }
                        tokio::spawn(limits::refuse(what, stream, why.to_string()));
                        continue;
                    }
                };
                let (state, shutdown) = (state.clone(), shutdown.clone());
                let open = crate::observe::ConnectionGuard::open(label);
                tokio::spawn(async move {
                    let _open = open;
                    let standing = ticket.conn();
                    let run = async move {
                        if carbon {
                            // Silence is closed after `limits.idle_timeout_ms` if that is
                            // sooner than the handshake deadline.
                            let mut first = [0u8; 1];
                            match tokio::time::timeout(idle, stream.peek(&mut first)).await {
                                Ok(Ok(n)) if n > 0 => admission::promote(),
                                Ok(Err(e)) => return Err(e),
                                _ => return Ok(()),
                            }
                        }
                        conn(state, stream, shutdown).await
                    };
                    tokio::select! {
                        r = admission::scope(standing.clone(), run) => {
                            if let Err(e) = r {
                                tracing::debug!(%peer, error = %e, listener = what, "connection ended with an error");
                            }
                        }
                        _ = standing.doomed() => {}
                    }
                    drop(ticket); // the slot is held until the connection ends
                });
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// The OpenTSDB port (telnet and HTTP).
pub async fn serve(state: Arc<AppState>, listener: TcpListener, shutdown: watch::Receiver<bool>) {
    let limits = admission::Limits::of(&state.config.limits, false);
    let idle = std::time::Duration::from_millis(state.config.limits.idle_timeout_ms);
    accept_loop("opentsdb", state, limits, idle, listener, shutdown, handle).await
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
        _ => {
            // Telnet has no credentials: a line-protocol client proves itself by speaking.
            admission::promote();
            telnet::serve_connection(state.opentsdb.clone(), stream, shutdown).await
        }
    }
}
