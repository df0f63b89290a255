//! The OpenTSDB write and admin endpoints: `/api/put`, `/api/version`, `/api/uid/assign`,
//! `/api/dropcaches`, `/api/aggregators`. Queries and look-ups live in `opentsdb_query`; which
//! path reaches which is `routes`.

use super::http::{error_reply, json_reply, Reply, Request};
use crate::ingest::{Ack, Batch, Points};
use crate::schema::uid_table::UidKind;
use crate::server::state::OpenTsdb;
use http::{Method, StatusCode};
use serde_json::{json, Map, Value as Json};
use std::io::Read;
use std::sync::Arc;
use tsgate_opentsdb::put_json::parse_body;

/// `/api/dropcaches`.
pub(super) fn drop_caches(state: &OpenTsdb) -> Reply {
    state.resolver.drop_caches();
    json_reply(
        StatusCode::OK,
        json!({"status":"200","message":"Caches dropped"}).to_string(),
    )
}

/// `/api/aggregators`.
pub(super) fn aggregators() -> Reply {
    json_reply(
        StatusCode::OK,
        json!(crate::query::aggregate::Aggregator::names()).to_string(),
    )
}

/// `/`.
pub(super) fn root() -> Reply {
    json_reply(
        StatusCode::OK,
        json!({"name":"tsgate","version":env!("CARGO_PKG_VERSION")}).to_string(),
    )
}

/// A 503 for a write the client should send again: `Retry-After` says when.
pub fn retry_later(mut r: Reply) -> Reply {
    r.headers_mut()
        .insert("retry-after", http::HeaderValue::from_static("1"));
    r
}

pub fn method_not_allowed(m: &Method) -> Reply {
    error_reply(
        StatusCode::METHOD_NOT_ALLOWED,
        "Method not allowed",
        &format!("The HTTP method [{m}] is not permitted for this endpoint"),
    )
}

/// 413 when a request carries more than `limits.max_points_per_request` points.
pub fn too_many_points(state: &OpenTsdb, n: usize) -> Option<Reply> {
    let max = state.settings.max_points_per_request;
    (n > max).then(|| {
        error_reply(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Too many data points in one request",
            &format!("{n} data points; the limit is limits.max_points_per_request = {max}"),
        )
    })
}

/// The body of an OpenTSDB write (`/api/put`, `/api/rollup`, `/api/histogram`), decompressed
/// within `limits.http_body_max` when `Content-Encoding` is `gzip` or `deflate` (zlib-wrapped
/// or raw, as Netty's decompressor in OpenTSDB's pipeline takes it). The raw body was already
/// held to that limit and to the in-flight budget by the HTTP layer. (The error reply is
/// boxed: it is large.)
pub(super) fn body_text(state: &OpenTsdb, req: &Request) -> Result<Vec<u8>, Box<Reply>> {
    let enc = req
        .headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let limit = state.settings.http_body_max;
    let raw = &req.body[..];
    let dec: Box<dyn Read + '_> = match enc.as_str() {
        "gzip" | "x-gzip" => Box::new(flate2::read::GzDecoder::new(raw)),
        // RFC 9110's deflate is zlib-wrapped; some senders send the bare stream.
        "deflate" | "x-deflate" if zlib_header(raw) => {
            Box::new(flate2::read::ZlibDecoder::new(raw))
        }
        "deflate" | "x-deflate" => Box::new(flate2::read::DeflateDecoder::new(raw)),
        _ => return Ok(raw.to_vec()),
    };
    let mut out = Vec::new();
    dec.take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| {
            error_reply(
                StatusCode::BAD_REQUEST,
                "Unable to decompress the request body",
                &e.to_string(),
            )
        })?;
    if out.len() > limit {
        return Err(Box::new(error_reply(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request body too large",
            &format!("the decompressed body exceeds limits.http_body_max = {limit} bytes"),
        )));
    }
    Ok(out)
}

/// Whether `b` starts with a zlib header (RFC 1950: method 8, check bits).
fn zlib_header(b: &[u8]) -> bool {
    matches!(b, [cmf, flg, ..] if cmf & 0x0F == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0)
}

pub(super) async fn put(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    if req.method != Method::POST {
        return method_not_allowed(&req.method);
    }
    if !state.ingest.writer.store_available() {
        let why = match state.query.store.refusing_writes() {
            Some(r) => format!("the store refuses writes ({}): {}", r.reason, r.detail),
            None => "the store refuses writes".into(),
        };
        return retry_later(error_reply(
            StatusCode::SERVICE_UNAVAILABLE,
            "Storage unavailable, please retry",
            &format!("{why}; nothing was stored"),
        ));
    }
    let body = match body_text(state, &req) {
        Ok(b) => b,
        Err(r) => {
            crate::ingest::counts::batch_rejected(crate::observe::Protocol::HttpPut, &r.status());
            return *r;
        }
    };
    let jps = match parse_body(&body) {
        Ok(p) => p,
        Err(e) => {
            crate::ingest::counts::batch_rejected(crate::observe::Protocol::HttpPut, &e.message());
            return error_reply(
                StatusCode::BAD_REQUEST,
                e.message(),
                e.details().unwrap_or_default(),
            );
        }
    };
    if let Some(r) = too_many_points(state, jps.len()) {
        return r;
    }
    let (details, summary) = (
        req.flag("details"),
        req.flag("summary") || req.flag("details"),
    );
    let crate::ingest::Written {
        invalid: mut errors,
        outcomes,
        positions: index,
        durable,
    } = state
        .ingest
        .write(Batch {
            points: Points::Json {
                points: &jps,
                limits: &state.limits,
            },
            counted: Some(crate::observe::Protocol::HttpPut),
            ack: Ack::Durable,
        })
        .await;
    if let Err(e) = durable {
        // Nothing of this request may count as stored: the client must retry.
        return retry_later(error_reply(
            StatusCode::SERVICE_UNAVAILABLE,
            "Unable to store the data points, please retry",
            &e.to_string(),
        ));
    }
    if let Some(Err(e)) = outcomes
        .iter()
        .find(|o| matches!(o, Err(crate::ingest::PointError::Uid(_))))
    {
        // UID assignment failed in the store: worth a retry, unlike a refused point.
        return retry_later(error_reply(
            StatusCode::SERVICE_UNAVAILABLE,
            "Unable to assign UIDs, please retry",
            &e.to_string(),
        ));
    }
    for (o, &i) in outcomes.iter().zip(&index) {
        if let Err(e) = o {
            let msg = match e {
                crate::ingest::PointError::UnknownName(_) => "Unknown metric".to_string(),
                other => other.to_string(),
            };
            errors.push((i, msg));
        }
    }
    let timeout = req
        .param("sync_timeout")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(0);
    let mut timed_out = false;
    if req.flag("sync") {
        let flushed = state.ingest.writer.flush();
        let res = if timeout > 0 {
            tokio::time::timeout(std::time::Duration::from_millis(timeout), flushed)
                .await
                .ok()
        } else {
            Some(flushed.await)
        };
        match res {
            // Not known durable in time: every accepted point counts as timed out.
            None => timed_out = true,
            Some(Err(e)) => {
                return error_reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Unable to store the data points",
                    &e.to_string(),
                )
            }
            Some(Ok(())) => {}
        }
    }
    let failed = errors.len();
    let success = jps.len() - failed;
    // The `errors` field of an answer with `details`, in request order.
    let errors_field = details.then(|| {
        errors.sort_by_key(|e| e.0);
        let list: Vec<String> = errors
            .iter()
            .map(|(i, e)| serde_json::to_string(&jps[*i].error_detail(e)).unwrap_or_default())
            .collect();
        format!(",\"errors\":[{}]", list.join(","))
    });
    // A sync_timeout that ran out: every accepted point counts as timed out, none as written
    // (OpenTSDB's PutDataPointRpc).
    let (written, timeouts) = if timed_out {
        (0, success)
    } else {
        (success, 0)
    };
    if !summary {
        if timed_out {
            return error_reply(
                StatusCode::BAD_REQUEST,
                &format!(
                    "The put call has timedout with 0 successful writes, {failed} failed writes and {timeouts} timed out writes."
                ),
                "Please see the TSD logs or append \"details\" to the put request",
            );
        }
        if failed == 0 {
            return http::Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(Vec::new())
                .expect("valid");
        }
        return error_reply(
            StatusCode::BAD_REQUEST,
            "One or more data points had errors",
            "Please see the TSD logs or append \"details\" to the put request",
        );
    }
    // Field order as OpenTSDB's HashMap writes it: success, timeouts (with a sync_timeout),
    // failed, errors.
    let mut body = format!("{{\"success\":{written}");
    if timeout > 0 {
        body.push_str(&format!(",\"timeouts\":{timeouts}"));
    }
    body.push_str(&format!(",\"failed\":{failed}"));
    body.push_str(errors_field.as_deref().unwrap_or_default());
    body.push('}');
    let status = if failed == 0 && !timed_out {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    json_reply(status, body)
}

pub(super) fn version() -> Reply {
    let v = env!("CARGO_PKG_VERSION");
    json_reply(
        StatusCode::OK,
        json!({
            "version": format!("2.4.0 (tsgate {v})"),
            "short_revision": v, "full_revision": v, "timestamp": "0",
            "repo_status": "MODIFIED", "user": "tsgate", "host": "tsgate",
            "repo": "tsgate", "branch": "main"
        })
        .to_string(),
    )
}

pub(super) async fn uid_assign(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    // HttpJsonSerializer.parseUidAssignV1 (TestUniqueIdRpc.assignPostNoContent).
    if req.method == Method::POST && req.body.is_empty() {
        return error_reply(
            StatusCode::BAD_REQUEST,
            "Missing message content",
            "Supply valid JSON formatted data in the body of your request",
        );
    }
    let mut wanted: Vec<(UidKind, &'static str, Vec<String>)> = Vec::new();
    let json_body: Option<Json> = if req.method == Method::POST && !req.body.is_empty() {
        match serde_json::from_slice(&req.body) {
            Ok(j) => Some(j),
            Err(e) => {
                return error_reply(
                    StatusCode::BAD_REQUEST,
                    "Unable to parse the given JSON",
                    &e.to_string(),
                )
            }
        }
    } else {
        None
    };
    for (kind, key) in [
        (UidKind::Metric, "metric"),
        (UidKind::Tagk, "tagk"),
        (UidKind::Tagv, "tagv"),
    ] {
        let names: Vec<String> = match &json_body {
            Some(j) => j
                .get(key)
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            None => req
                .param(key)
                .map(|v| {
                    v.split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
        };
        if !names.is_empty() {
            wanted.push((kind, key, names));
        }
    }
    if wanted.is_empty() {
        return error_reply(StatusCode::BAD_REQUEST, "Missing values to assign UIDs", "");
    }
    let st = state.clone();
    let allow = state.limits.allow_special.clone();
    let result = tokio::task::spawn_blocking(move || {
        let mut body = Map::new();
        let mut any_error = false;
        for (kind, key, names) in wanted {
            let mut ok = std::collections::BTreeMap::new();
            let mut bad = std::collections::BTreeMap::new();
            for n in names {
                if let Err(e) = tsgate_opentsdb::names::validate(&n, key, &allow) {
                    bad.insert(n, e.to_string());
                    continue;
                }
                match st.resolver.uids().assign(kind, &n) {
                    Ok(u) => {
                        ok.insert(n, crate::schema::hex_upper(&u));
                    }
                    Err(e) => {
                        bad.insert(n, e.to_string());
                    }
                }
            }
            body.insert(key.into(), json!(ok));
            if !bad.is_empty() {
                any_error = true;
                body.insert(format!("{key}_errors"), json!(bad));
            }
        }
        if let Err(e) = st.resolver.sync_if_dirty() {
            any_error = true;
            body.insert("error".into(), e.to_string().into());
        }
        (body, any_error)
    })
    .await;
    match result {
        Ok((body, err)) => json_reply(
            if err {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            },
            Json::Object(body).to_string(),
        ),
        Err(e) => error_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "UID assignment failed",
            &e.to_string(),
        ),
    }
}

/// Writes rollup points on a blocking thread, durably (see `write::direct`); one outcome per
/// point.
pub(super) async fn write_rollups(
    state: &Arc<OpenTsdb>,
    points: Vec<(
        tsgate_opentsdb::rollup::RollupSpec,
        tsgate_opentsdb::OwnedDataPoint,
    )>,
) -> Vec<Result<(), crate::ingest::rollup::RollupWriteError>> {
    let s = state.clone();
    let n = points.len();
    super::blocking::run(move || {
        let writer = crate::ingest::rollup::RollupWriter {
            store: &s.query.store,
            layout: s.query.layout,
            config: &s.settings.rollups,
            resolver: &s.resolver,
        };
        let mut outcomes: Vec<_> = points
            .iter()
            .map(|(spec, p)| writer.write(spec, &p.as_ref()))
            .collect();
        // Acknowledged only once durable, as a WAL record would be: one (shared) store sync
        // for the request; if it fails, nothing written counts as stored.
        if outcomes.iter().any(|o| o.is_ok()) {
            if let Err(e) = s.ingest.direct.sync() {
                for o in outcomes.iter_mut().filter(|o| o.is_ok()) {
                    *o = Err(crate::ingest::rollup::RollupWriteError::Store(
                        e.to_string(),
                    ));
                }
            }
        }
        outcomes
    })
    .await
    .unwrap_or_else(|_| {
        (0..n)
            .map(|_| {
                Err(crate::ingest::rollup::RollupWriteError::Store(
                    "the rollup writer panicked".into(),
                ))
            })
            .collect()
    })
}

/// `/api/rollup` (OpenTSDB 2.4's `RollupDataPointRpc`): `/api/put`'s body with `interval`,
/// `aggregator` and `groupByAggregator`, and its answers (204, or `summary`/`details`).
pub(super) async fn rollup(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    use crate::ingest::rollup::RollupWriteError;
    if req.method != Method::POST {
        return method_not_allowed(&req.method);
    }
    let body = match body_text(state, &req) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let text = String::from_utf8_lossy(&body);
    let jps = match tsgate_opentsdb::rollup::parse_body(&text) {
        Ok(p) => p,
        Err(e) => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                e.message(),
                e.details().unwrap_or_default(),
            )
        }
    };
    if let Some(r) = too_many_points(state, jps.len()) {
        return r;
    }
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut valid = Vec::new();
    let mut index = Vec::new();
    for (i, jp) in jps.iter().enumerate() {
        // The `error` text of the point's `details` entry.
        let checked = match jp.point.validate(&state.limits) {
            Ok(p) => jp.spec.validate().map(|()| p).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match checked {
            Ok(p) => {
                valid.push((jp.spec.clone(), p.to_owned_point()));
                index.push(i);
            }
            Err(e) => errors.push((i, e)),
        }
    }
    let outcomes = write_rollups(state, valid).await;
    if let Some(Err(e)) = outcomes
        .iter()
        .find(|o| matches!(o, Err(RollupWriteError::Store(_))))
    {
        return retry_later(error_reply(
            StatusCode::SERVICE_UNAVAILABLE,
            "Unable to store the data points, please retry",
            &e.to_string(),
        ));
    }
    for (o, &i) in outcomes.iter().zip(&index) {
        if let Err(e) = o {
            let msg = match e {
                RollupWriteError::UnknownName(_) => "Unknown metric".to_string(),
                other => other.to_string(),
            };
            errors.push((i, msg));
        }
    }
    let (details, summary) = (
        req.flag("details"),
        req.flag("summary") || req.flag("details"),
    );
    let failed = errors.len();
    if !summary {
        if failed == 0 {
            return http::Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(Vec::new())
                .expect("valid");
        }
        return error_reply(
            StatusCode::BAD_REQUEST,
            "One or more data points had errors",
            "Please see the TSD logs or append \"details\" to the put request",
        );
    }
    let mut body = format!("{{\"success\":{},\"failed\":{failed}", jps.len() - failed);
    if details {
        errors.sort_by_key(|e| e.0);
        let list: Vec<String> = errors
            .iter()
            .map(|(i, e)| serde_json::to_string(&jps[*i].point.error_detail(e)).unwrap_or_default())
            .collect();
        body.push_str(&format!(",\"errors\":[{}]", list.join(",")));
    }
    body.push('}');
    let status = if failed == 0 {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    json_reply(status, body)
}
