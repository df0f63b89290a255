//! VictoriaMetrics' JSON-lines export and import (`GET|POST /api/v1/export`,
//! `POST /api/v1/import`), and Prometheus' snapshot admin endpoint
//! (`POST /api/v1/admin/tsdb/snapshot`).

use super::format::{error, ErrorType};
use super::params::{parse_time, ParamError, Params};
use crate::migrate::vmjson;
use crate::migrate::write::{write, StoredImport};
use crate::server::http::{Reply, Request};
use crate::server::state::Prometheus;
use http::StatusCode;
use std::io::Read;
use std::sync::Arc;

fn text(status: StatusCode, msg: &str) -> Reply {
    http::Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(format!("{msg}\n").into_bytes())
        .expect("valid")
}

/// `GET|POST /api/v1/export?match[]=…&start=…&end=…`: one line per series and window of a
/// day (see `query::export`), values as stored. Points acknowledged before the request are in
/// it. The answer is built whole: at most `prometheus.max_samples` points (422 beyond; export
/// bigger sets with `tsgate export` or several time ranges).
pub async fn export(state: &Arc<Prometheus>, req: Request) -> Reply {
    let p = Params::of(&req);
    let bad = |m: String| error(ErrorType::BadData, &m);
    let time = |k: &'static str, dflt: i64| -> Result<i64, (&'static str, ParamError)> {
        match p.get(k) {
            Some(s) if !s.is_empty() => parse_time(s).map_err(|e| (k, e)),
            _ => Ok(dflt),
        }
    };
    let now = tsgate_common::clock::now_ms() as i64;
    let (start, end) = match (time("start", 0), time("end", now)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err((k, e)), _) | (_, Err((k, e))) => {
            return bad(format!("invalid parameter \"{k}\": {e}"))
        }
    };
    let mut selectors = Vec::new();
    for m in p.all("match[]") {
        match crate::promql::parse_match(m) {
            Ok(s) => selectors.push(s),
            Err(e) => return bad(format!("invalid parameter \"match[]\": {e}")),
        }
    }
    if selectors.is_empty() {
        return bad("missing `match[]` arg".into());
    }
    if let Err(e) = state.ingest.writer.publish().await {
        return error(
            ErrorType::Unavailable,
            &format!("cannot reach the store: {e}"),
        );
    }
    let st = state.clone();
    let max = state.settings.max_samples;
    let res = tokio::task::spawn_blocking(move || {
        let mut out = String::new();
        let mut points = 0usize;
        st.query
            .export_each(&selectors, start, end, &mut |s| {
                points += s.points.len();
                if max > 0 && points > max {
                    return Err(crate::query::QueryError::TooLarge(format!(
                        "export of more than prometheus.max_samples = {max} points; \
                         narrow match[] or the time range, or use `tsgate export`"
                    )));
                }
                let labels = crate::prometheus::labels::from_stored(
                    &s.metric,
                    s.tags.iter().map(|(k, v)| (&**k, &**v)),
                );
                vmjson::push_line(&mut out, &labels, &s.points);
                Ok(())
            })
            .map(|_| out)
    })
    .await;
    match res {
        Ok(Ok(body)) => http::Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/stream+json; charset=utf-8")
            .body(body.into_bytes())
            .expect("valid"),
        Ok(Err(crate::query::QueryError::TooLarge(m))) => error(ErrorType::Execution, &m),
        Ok(Err(e)) => error(ErrorType::Internal, &e.to_string()),
        Err(e) => error(ErrorType::Internal, &e.to_string()),
    }
}

/// Points written per batch of an import.
const IMPORT_BATCH_POINTS: usize = 50_000;

/// `POST /api/v1/import`: VictoriaMetrics' JSON lines (gzip with `Content-Encoding: gzip`).
/// Every valid line is stored, as VictoriaMetrics stores them; where VictoriaMetrics answers
/// 204 and only logs the lines it skipped, this answers 400 naming them (line number and
/// reason), so a sender learns what was lost. 204 = every line stored and durable.
pub async fn import(state: &Arc<Prometheus>, req: Request) -> Reply {
    if !state.ingest.writer.store_available() {
        return crate::server::api::retry_later(text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the store refuses writes, retry",
        ));
    }
    let limit = state.settings.http_body_max;
    let gz = req
        .headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    let body: Vec<u8> = if gz {
        let mut out = Vec::new();
        let mut dec = flate2::read::GzDecoder::new(&req.body[..]).take(limit as u64 + 1);
        if let Err(e) = dec.read_to_end(&mut out) {
            return text(StatusCode::BAD_REQUEST, &format!("cannot decompress: {e}"));
        }
        if out.len() > limit {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the decompressed body exceeds limits.http_body_max = {limit} bytes"),
            );
        }
        out
    } else {
        req.body.to_vec()
    };
    let max_tags = state.settings.max_tags;
    let mut errors: Vec<String> = Vec::new();
    let mut bad = 0usize;
    let mut batch: Vec<StoredImport> = Vec::new();
    let mut batch_points = 0;
    let mut refused = 0u64;
    let lines = body.split(|&b| b == b'\n').enumerate();
    let mut lines = lines.peekable();
    while let Some((n, line)) = lines.next() {
        let parsed = match std::str::from_utf8(line) {
            Ok(l) if l.trim().is_empty() => None,
            Ok(l) => Some(
                vmjson::parse_line(l)
                    .and_then(|s| Ok(StoredImport::from_labels(&s.labels, s.points, max_tags)?)),
            ),
            Err(e) => Some(Err(e.into())),
        };
        match parsed {
            None => {}
            Some(Ok(s)) => {
                batch_points += s.points.len();
                batch.push(s);
            }
            Some(Err(e)) => {
                bad += 1;
                if errors.len() < 5 {
                    errors.push(format!("line {}: {e}", n + 1));
                }
            }
        }
        let last = lines.peek().is_none();
        if batch_points >= IMPORT_BATCH_POINTS || (last && !batch.is_empty()) {
            batch_points = 0;
            let w = match write(&state.ingest, &std::mem::take(&mut batch)).await {
                Ok(w) => w,
                Err(e) => {
                    return crate::server::api::retry_later(text(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &format!("cannot store the points, retry: {e}"),
                    ))
                }
            };
            if let Some(e) = w.uid_failure {
                return crate::server::api::retry_later(text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!("cannot assign UIDs, retry: {e}"),
                ));
            }
            refused += w.refused;
            errors.extend(
                w.errors
                    .into_iter()
                    .take(5usize.saturating_sub(errors.len())),
            );
        }
    }
    if bad == 0 && refused == 0 {
        return http::Response::builder()
            .status(StatusCode::NO_CONTENT)
            .body(Vec::new())
            .expect("valid");
    }
    let shown = errors.len();
    let total = bad + refused as usize;
    let more = if total > shown {
        format!(" (and {} more)", total - shown)
    } else {
        String::new()
    };
    text(
        StatusCode::BAD_REQUEST,
        &format!(
            "{bad} lines skipped, {refused} points refused; the other lines were stored: {}{more}",
            errors.join("; ")
        ),
    )
}

/// `POST|PUT /api/v1/admin/tsdb/snapshot`: a consistent copy of the embedded store in
/// `data_dir/snapshots/<name>` (a data directory `tsgate serve --data-dir` opens), holding
/// every point acknowledged before the request. Prometheus' answer:
/// `{"status":"success","data":{"name":"20260101T000000Z-0123456789abcdef"}}`.
pub async fn snapshot(state: &Arc<Prometheus>, _req: Request) -> Reply {
    if !state.settings.admin {
        return super::admin::disabled();
    }
    if let Err(e) = state.ingest.writer.publish().await {
        return error(
            ErrorType::Unavailable,
            &format!("cannot reach the store: {e}"),
        );
    }
    let name = snapshot_name();
    let dir = state.settings.snapshots_dir.join(&name);
    let store = state.query.store.clone();
    let target = dir.clone();
    let res = tokio::task::spawn_blocking(move || take_snapshot(&store, &target)).await;
    match res {
        Ok(Ok(cells)) => {
            tracing::info!(dir = %dir.display(), cells, "snapshot taken");
            super::api::ok(serde_json::json!({ "name": name }))
        }
        Ok(Err(e)) => error(ErrorType::Internal, &e.to_string()),
        Err(e) => error(ErrorType::Internal, &e.to_string()),
    }
}

/// Prometheus' snapshot names: UTC time and 16 random hex digits.
pub fn snapshot_name() -> String {
    use password_hash::rand_core::{OsRng, RngCore};
    format!(
        "{}-{:016x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        OsRng.next_u64()
    )
}

/// A snapshot of `store` as a data directory `dir` (its `store/` made here). Returns the
/// cells copied.
pub fn take_snapshot(
    store: &tsgate_store::SharedStore,
    dir: &std::path::Path,
) -> Result<u64, SnapshotError> {
    let at = dir.join("store");
    std::fs::create_dir_all(&at).map_err(|source| SnapshotError::Create {
        path: at.display().to_string(),
        source,
    })?;
    match store.snapshot_to(&at) {
        Ok(Some(cells)) => Ok(cells),
        Ok(None) => {
            let _ = std::fs::remove_dir_all(dir);
            Err(SnapshotError::NotEmbedded)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(dir);
            Err(e.into())
        }
    }
}

/// Why a snapshot was not taken.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("snapshots copy the embedded store; HBase and Bigtable have their own snapshots")]
    NotEmbedded,
    #[error(transparent)]
    Store(#[from] tsgate_store::StoreError),
}
