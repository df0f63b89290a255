//! The graphite-web HTTP API Grafana's Graphite datasource uses (spec graphite.md §2): render,
//! metrics browsing, tags, function metadata, version and events. Everything runs against the
//! same store as the OpenTSDB and Prometheus APIs; series are named by `naming::to_path`.

pub mod error;
pub mod find;
pub mod image;
pub mod meta;
pub mod pie;
pub mod render;
pub mod tags;

use super::http::Reply;
use crate::server::state::GraphiteWeb;
use error::{Envelope, Error};
use http::{Response, StatusCode};
use std::sync::Arc;

pub async fn route(state: &Arc<GraphiteWeb>, req: super::http::Request) -> Reply {
    let params = Params::from_request(&req);
    let path = req.path.trim_end_matches('/').to_string();
    let st = state.clone();
    let method = req.method.clone();
    // Everything below may scan the store: keep it off the async threads.
    let task = tokio::task::spawn_blocking(move || dispatch(&st, &method, &path, &params));
    // `query.timeout_ms` bounds the answer; the scan itself runs on to its end in the background.
    let res = match state.settings.timeout_ms {
        0 => task.await,
        ms => match tokio::time::timeout(std::time::Duration::from_millis(ms), task).await {
            Ok(r) => r,
            Err(_) => return Error::Timeout(ms).reply(Envelope::Text),
        },
    };
    res.unwrap_or_else(|e| Error::Internal(e.to_string()).reply(Envelope::Text))
}

/// Each endpoint's answer, or its failure in the endpoint's envelope (`error.rs`).
fn dispatch(state: &GraphiteWeb, method: &http::Method, path: &str, p: &Params) -> Reply {
    let (res, envelope) = match path {
        "/render" => (render::render(state, p), Envelope::Text),
        "/metrics" | "/metrics/find" => (find::find(state, p), Envelope::Text),
        "/metrics/expand" => (find::expand(state, p), Envelope::Text),
        "/metrics/index.json" => (find::index_json(state, p), Envelope::Text),
        "/version" => (
            Ok(Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "text/html; charset=utf-8")
                .body(b"1.1.10".to_vec())
                .expect("valid")),
            Envelope::Text,
        ),
        "/events/get_data" => (meta::events(state, p), Envelope::Text),
        "/functions" => (meta::functions(p, None), Envelope::Json),
        p2 if p2.starts_with("/functions/") => (
            meta::functions(p, Some(&p2["/functions/".len()..])),
            Envelope::Json,
        ),
        _ => (tags::route(state, method, path, p), Envelope::Json),
    };
    res.unwrap_or_else(|e| e.reply(envelope))
}

/// Query-string and form-body parameters merged (query string first, body appended), with
/// jQuery-style `name[]` keys folded into `name`, as graphite-web reads them.
#[derive(Debug, Clone, Default)]
pub struct Params(pub Vec<(String, String)>);

impl Params {
    pub fn from_request(req: &super::http::Request) -> Params {
        let mut v: Vec<(String, String)> = req.params();
        let ct = req
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        // Grafana's `/metrics/find` POSTs a raw, unencoded `query=…` body; form decoding reads
        // it the same way graphite-web does (`+` is a space).
        if req.method == http::Method::POST
            && !ct.starts_with("application/json")
            && !req.body.is_empty()
        {
            v.extend(form_urlencoded::parse(&req.body).into_owned());
        }
        Params(
            v.into_iter()
                .map(|(k, val)| (k.strip_suffix("[]").map(str::to_string).unwrap_or(k), val))
                .collect(),
        )
    }

    pub fn from_pairs(p: &[(&str, &str)]) -> Params {
        Params(
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// The last value (the body beats the query string).
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, k: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn has(&self, k: &str) -> bool {
        self.0.iter().any(|(n, _)| n == k)
    }

    /// graphite's boolean parameters: `1`, `true`, `on`, `yes`.
    pub fn truthy(&self, k: &str) -> bool {
        self.get(k)
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "on" | "yes"))
    }
}

pub fn text_reply(status: StatusCode, body: &str) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(body.as_bytes().to_vec())
        .expect("valid")
}

/// The tags and functions endpoints' JSON error.
pub fn json_error(status: StatusCode, msg: &str) -> Reply {
    json_or_jsonp(
        status,
        serde_json::json!({ "error": msg }).to_string(),
        None,
    )
}

pub fn json_or_jsonp(status: StatusCode, body: String, jsonp: Option<&str>) -> Reply {
    match jsonp {
        Some(cb) if !cb.is_empty() => Response::builder()
            .status(status)
            .header("content-type", "text/javascript")
            .body(format!("{cb}({body})").into_bytes())
            .expect("valid"),
        _ => Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(body.into_bytes())
            .expect("valid"),
    }
}

/// graphite-web counts in signed seconds.
pub fn now_s() -> i64 {
    tsgate_common::clock::now_s() as i64
}
