//! Prometheus' HTTP endpoints on the OpenTSDB port: remote write and read, and the query API
//! as Grafana uses it. Dispatched from `server::api::route` before OpenTSDB's `/api/v1/<x>`
//! aliases.

pub mod admin;
pub mod api;
pub mod format;
pub mod params;
pub mod query;
pub mod read;
pub mod write;

use super::http::{Reply, Request};
use super::AppState;
use http::{Method, StatusCode};
use std::sync::Arc;

const PATHS: &[&str] = &[
    "/api/v1/write",
    "/api/v1/read",
    "/api/v1/query",
    "/api/v1/query_range",
    "/api/v1/series",
    "/api/v1/labels",
    "/api/v1/metadata",
    "/api/v1/status/buildinfo",
    "/api/v1/query_exemplars",
    "/api/v1/rules",
    "/api/v1/alerts",
    "/api/v1/format_query",
    "/api/v1/targets/metadata",
    "/api/v1/admin/tsdb/delete_series",
    "/api/v1/status/tsdb",
];

/// Whether a path is one of Prometheus' endpoints (exact, as Prometheus routes them).
pub fn handles(path: &str) -> bool {
    PATHS.contains(&path) || (path.starts_with("/api/v1/label/") && path.ends_with("/values"))
}

pub async fn route(state: &Arc<AppState>, req: Request) -> Reply {
    let path = req.path.clone();
    let get_or_post = matches!(req.method, Method::GET | Method::POST);
    match path.as_str() {
        "/api/v1/write" if req.method == Method::POST => write::handle(state, req).await,
        "/api/v1/read" if req.method == Method::POST => read::handle(state, req).await,
        "/api/v1/query" if get_or_post => query::instant(state, req).await,
        "/api/v1/query_range" if get_or_post => query::range(state, req).await,
        "/api/v1/format_query" if get_or_post => query::format(req),
        "/api/v1/series" if get_or_post => api::series(state, req).await,
        "/api/v1/labels" if get_or_post => api::labels(state, req).await,
        "/api/v1/metadata" if req.method == Method::GET => api::metadata(state, req),
        "/api/v1/status/buildinfo" if req.method == Method::GET => api::buildinfo(),
        "/api/v1/admin/tsdb/delete_series" if matches!(req.method, Method::POST | Method::PUT) => {
            admin::delete_series(state, req).await
        }
        "/api/v1/status/tsdb" if req.method == Method::GET => admin::status_tsdb(state, req).await,
        "/api/v1/query_exemplars" if get_or_post => api::ok(serde_json::json!([])),
        "/api/v1/rules" if req.method == Method::GET => api::ok(serde_json::json!({"groups": []})),
        "/api/v1/alerts" if req.method == Method::GET => api::ok(serde_json::json!({"alerts": []})),
        "/api/v1/targets/metadata" if req.method == Method::GET => api::ok(serde_json::json!([])),
        p if p.starts_with("/api/v1/label/") && req.method == Method::GET => {
            let name = &p["/api/v1/label/".len()..p.len() - "/values".len()];
            let name = percent_decode(name);
            api::label_values(state, req, name).await
        }
        _ => http::Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header("content-type", "text/plain; charset=utf-8")
            .body(b"Method Not Allowed\n".to_vec())
            .expect("valid"),
    }
}

fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
