//! Prometheus' admin API (`delete_series`) and the TSDB status page (`/api/v1/status/tsdb`).
//! The admin endpoints answer only with `admin.enabled = true`, as Prometheus' only with
//! `--web.enable-admin-api`.

use super::format::{error, ErrorType};
use super::params::{parse_time, Params, MAX_TIME_MS, MIN_TIME_MS};
use crate::server::http::{Reply, Request};
use crate::server::AppState;
use http::StatusCode;
use std::sync::Arc;

/// Prometheus' answer while the admin API is off.
pub fn disabled() -> Reply {
    error(
        ErrorType::Unavailable,
        "admin APIs disabled (admin.enabled = false)",
    )
}

/// `POST|PUT /api/v1/admin/tsdb/delete_series?match[]=…&start=…&end=…`: 204 once deleted.
pub async fn delete_series(state: &Arc<AppState>, req: Request) -> Reply {
    if !state.config.admin.enabled {
        return disabled();
    }
    let p = Params::of(&req);
    let bad = |m: String| error(ErrorType::BadData, &m);
    let time = |k: &str, dflt: i64| -> Result<i64, Reply> {
        match p.get(k) {
            Some(s) if !s.is_empty() => {
                parse_time(s).map_err(|e| bad(format!("invalid parameter \"{k}\": {e}")))
            }
            _ => Ok(dflt),
        }
    };
    let (start, end) = match (time("start", MIN_TIME_MS), time("end", MAX_TIME_MS)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let mut selectors = Vec::new();
    for m in p.all("match[]") {
        match crate::promql::parse_match(m) {
            Ok(s) => selectors.push(s),
            Err(e) => return bad(format!("invalid parameter \"match[]\": {e}")),
        }
    }
    if selectors.is_empty() {
        return bad("no match[] parameter provided".into());
    }
    let st = state.clone();
    let res =
        tokio::task::spawn_blocking(move || st.query.delete_series(&selectors, start, end)).await;
    match res {
        Ok(Ok(d)) => {
            tracing::info!(
                series = d.series.len(),
                rows = d.rows,
                partial_rows = d.partial_rows,
                "delete_series"
            );
            state.graphite_index.invalidate();
            http::Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(Vec::new())
                .expect("valid")
        }
        Ok(Err(e)) => error(ErrorType::Internal, &e.to_string()),
        Err(e) => error(ErrorType::Internal, &e.to_string()),
    }
}

/// `GET /api/v1/status/tsdb?limit=N` (placeholder until the cardinality counts land).
pub async fn status_tsdb(_state: &Arc<AppState>, _req: Request) -> Reply {
    error(ErrorType::Unavailable, "not yet")
}
