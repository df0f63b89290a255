//! HTTP on the OpenTSDB port: warp turns requests into one call of our router, which
//! answers in OpenTSDB's conventions (its error JSON, its status codes).

use super::AppState;
use bytes::{Buf, Bytes};
use futures_util::StreamExt;
use http::{HeaderMap, Method, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use warp::Filter;

/// A request as our router sees it: the body already read (within the size limit).
pub struct Request {
    pub method: Method,
    pub path: String,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Request {
    /// Query-string parameters; repeated keys keep every value, in order.
    pub fn params(&self) -> Vec<(String, String)> {
        form_urlencoded::parse(self.query.as_bytes())
            .into_owned()
            .collect()
    }

    /// The last value of a parameter (OpenTSDB: the last one wins).
    pub fn param(&self, name: &str) -> Option<String> {
        self.params()
            .into_iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    /// "Present" flags are true merely by being there.
    pub fn flag(&self, name: &str) -> bool {
        self.params().iter().any(|(k, _)| k == name)
    }
}

pub type Reply = Response<Vec<u8>>;

pub fn json_reply(status: StatusCode, body: String) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=UTF-8")
        .body(body.into_bytes())
        .expect("valid response")
}

/// OpenTSDB's error body: `{"error":{"code":N,"message":"…"[,"details":"…"]}}`.
pub fn error_reply(status: StatusCode, message: &str, details: &str) -> Reply {
    let mut err = serde_json::json!({"code": status.as_u16(), "message": message});
    if !details.is_empty() {
        err["details"] = details.into();
    }
    json_reply(status, serde_json::json!({ "error": err }).to_string())
}

/// The most of a declared body length allocated before any of it arrives (a client that
/// declares a length and stalls holds no more than this).
const BODY_PRESIZE_MAX: usize = 1 << 20;

/// The body, up to `limit` bytes; `declared` (its Content-Length) sizes the buffer up front, so
/// that a body of many chunks is not copied again each time the buffer doubles.
async fn read_body(
    body: impl futures_util::Stream<Item = Result<impl Buf, warp::Error>> + Unpin,
    limit: usize,
    declared: Option<u64>,
    budget: &super::body_budget::BodyBudget,
    held: &mut super::body_budget::Reservation,
) -> Result<Bytes, Reply> {
    let mut body = body;
    let mut out = bytes::BytesMut::with_capacity(
        declared
            .unwrap_or(0)
            .min(limit.min(BODY_PRESIZE_MAX) as u64) as usize,
    );
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|e| {
            error_reply(
                StatusCode::BAD_REQUEST,
                "Unable to read the request body",
                &e.to_string(),
            )
        })?;
        if out.len() + chunk.remaining() > limit {
            return Err(error_reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Request body too large",
                &format!("the limit is limits.http_body_max = {limit} bytes"),
            ));
        }
        // A body without a declared length (or longer than declared) reserves as it grows.
        budget
            .grow(held, (out.len() + chunk.remaining()) as u64)
            .await
            .map_err(budget_exhausted)?;
        while chunk.has_remaining() {
            let c = chunk.chunk();
            out.extend_from_slice(c);
            let n = c.len();
            chunk.advance(n);
        }
    }
    Ok(out.freeze())
}

/// The answer to a request that got no share of `limits.max_body_bytes_in_flight`.
fn budget_exhausted(e: super::body_budget::Exhausted) -> Reply {
    crate::observe::metrics().body_budget_refusals.inc();
    super::api::retry_later(error_reply(
        StatusCode::SERVICE_UNAVAILABLE,
        "Too many request bodies in flight",
        &format!(
            "the bodies of requests being handled fill limits.max_body_bytes_in_flight = {} bytes; retry",
            e.budget
        ),
    ))
}

/// One request: its route (by the headers), credentials (before the body is read, so an
/// unauthenticated client is not read further), the body within its limit, the route again on
/// the parsed request and the right it needs, then its handler.
#[allow(clippy::too_many_arguments)]
async fn answer(
    st: &Arc<AppState>,
    peer: &str,
    endpoint: crate::observe::metrics::Endpoint,
    method: Method,
    path: &str,
    query: String,
    headers: HeaderMap,
    body: impl futures_util::Stream<Item = Result<impl bytes::Buf, warp::Error>> + Send + 'static,
) -> Reply {
    let head = super::routes::find(&method, path, &query, None);
    let principal = match &st.auth {
        Some(a) => match super::auth::admit(a, &head, path, &headers).await {
            Ok(p) => p,
            Err(r) => return r,
        },
        None => None,
    };
    // The connection has proven itself (see `admission`): an authenticated principal, or any
    // request when auth is off. An open route asked without credentials proves nothing.
    if st.auth.is_none() || principal.is_some() {
        super::admission::promote();
    }
    let limit = st.config.limits.http_body_max;
    let read_timeout = std::time::Duration::from_millis(st.config.limits.read_timeout_ms);
    // A declared length over the limit is refused before any of the body is read.
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return error_reply(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request body too large",
            &format!("the limit is limits.http_body_max = {limit} bytes"),
        );
    }
    // Held until the answer is made (the body and what is parsed from it live that long), or
    // the connection dropped.
    let mut held = super::body_budget::Reservation::default();
    if let Some(n) = declared.filter(|n| *n > 0) {
        if let Err(e) = st.bodies.reserve(&mut held, n).await {
            return budget_exhausted(e);
        }
    }
    // A trickled body is bounded like slow headers: `limits.read_timeout_ms`.
    let read = read_body(Box::pin(body), limit, declared, &st.bodies, &mut held);
    let body = match tokio::time::timeout(read_timeout, read).await {
        Ok(Ok(b)) => b,
        Ok(Err(r)) => return r,
        Err(_) => {
            return error_reply(
                StatusCode::REQUEST_TIMEOUT,
                "Request body not received in time",
                &format!(
                    "the limit is limits.read_timeout_ms = {} ms",
                    read_timeout.as_millis()
                ),
            )
        }
    };
    let track = crate::server::accounting::track_query(endpoint, path, &query, &body, peer);
    let route = super::routes::find(&method, path, &query, Some(&body));
    if let Err(r) = super::auth::authorize(principal.as_ref(), &route, path) {
        return *r;
    }
    let req = Request {
        method,
        path: path.to_string(),
        query,
        headers,
        body,
    };
    if reads_data(endpoint) {
        read_your_writes(st).await;
    }
    let r = super::routes::dispatch(st, route, req).await;
    track.finish(r.status());
    drop(held);
    r
}

/// Endpoints that read stored points or series: a query, remote read, Prometheus' series and
/// labels.
fn reads_data(e: crate::observe::metrics::Endpoint) -> bool {
    crate::server::accounting::query_api(e).is_some()
        || e == crate::observe::metrics::Endpoint::PromMeta
}

/// Before a query reads: waits until the points taken in so far can be read (see
/// `Writer::publish`), at most `write.flush_interval_ms` (by then a flush tick would have made
/// them readable anyway). Not while the store refuses writes: the query reads what it can.
async fn read_your_writes(st: &AppState) {
    let writer = &st.ingest.writer;
    if !writer.store_available() {
        return;
    }
    let patience = std::time::Duration::from_millis(st.config.write.flush_interval_ms.max(1));
    // Telnet and plaintext input that arrived before the query is handed to the writer first.
    let handed_then_published = async {
        st.ingest.received.handed_over().await;
        writer.publish().await
    };
    match tokio::time::timeout(patience, handed_then_published).await {
        Ok(Ok(())) => {}
        // The shards log their own failures; a query only reads without the latest points.
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "a query reads without waiting for the latest writes")
        }
        Err(_) => tracing::debug!("a query reads without waiting longer for the latest writes"),
    }
}

/// Serves HTTP/1.1 with keep-alive on a plain TCP stream or a TLS session.
pub async fn serve_connection<S>(
    state: Arc<AppState>,
    stream: S,
    peer: String,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let st = state.clone();
    let filter = warp::any()
        .and(warp::method())
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .then(
            move |method: Method,
                  path: warp::path::FullPath,
                  query: String,
                  headers: HeaderMap,
                  body| {
                let (st, peer) = (st.clone(), peer.clone());
                async move {
                    let (started, endpoint) = (
                        std::time::Instant::now(),
                        crate::server::accounting::endpoint_of(&method, path.as_str(), &query),
                    );
                    let reply = answer(
                        &st,
                        &peer,
                        endpoint,
                        method,
                        path.as_str(),
                        query,
                        headers,
                        body,
                    )
                    .await;
                    crate::server::accounting::record(endpoint, reply.status().as_u16(), started);
                    reply
                }
            },
        );
    let svc = hyper_util::service::TowerToHyperService::new(warp::service(filter));
    let l = &state.config.limits;
    let stream =
        super::limits::IdleStream::new(stream, std::time::Duration::from_millis(l.idle_timeout_ms));
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        // Slowloris: the whole header must arrive within `limits.read_timeout_ms`.
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(std::time::Duration::from_millis(l.read_timeout_ms))
        .serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => r.map_err(std::io::Error::other),
        _ = shutdown.changed() => {
            conn.as_mut().graceful_shutdown();
            conn.await.map_err(std::io::Error::other)
        }
    }
}
