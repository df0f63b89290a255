//! OpenTSDB's metadata endpoints: `/api/annotation(s)`, `/api/annotation/bulk`,
//! `/api/uid/uidmeta`, `/api/uid/tsmeta`, `/api/uid/rename`, `/api/search/*` (but `lookup`)
//! and the `/api/tree*` family, with OpenTSDB's verb
//! rules (`method_override`), JSON shapes and error codes. Every handler runs on the blocking
//! pool: they all touch the store.

mod annotations;
mod metas;
mod search;
mod trees;

use super::http::{error_reply, json_reply, Reply, Request};
use crate::meta::MetaError;
use crate::server::state::OpenTsdb;
use http::{Method, StatusCode};
use serde::de::DeserializeOwned;
use std::io::Read;
use std::sync::Arc;

pub async fn route(state: &Arc<OpenTsdb>, req: Request, path: &str) -> Reply {
    let st = state.clone();
    let path = path.to_string();
    match tokio::task::spawn_blocking(move || dispatch(&st, &req, &path)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => e.reply(),
        Err(e) => error_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "An unknown exception occurred",
            &e.to_string(),
        ),
    }
}

fn dispatch(st: &OpenTsdb, req: &Request, path: &str) -> HResult {
    if path.ends_with("/bulk")
        && (path.starts_with("/api/annotation/") || path.starts_with("/api/annotations/"))
    {
        return annotations::bulk(st, req);
    }
    match path {
        "/api/annotation" => annotations::single(st, req, false),
        "/api/annotations" => annotations::single(st, req, true),
        "/api/uid/uidmeta" => metas::uidmeta(st, req),
        "/api/uid/tsmeta" => metas::tsmeta(st, req),
        "/api/uid/rename" => metas::rename(st, req),
        p if p.starts_with("/api/search/") => search::route(st, req, p),
        p if p == "/api/tree" || p.starts_with("/api/tree/") => trees::route(st, req, p),
        _ => Err(HttpError::new(StatusCode::NOT_FOUND, "Endpoint not found")),
    }
}

/// An HTTP failure in OpenTSDB's error JSON (304 is an empty answer).
#[derive(Debug)]
pub struct HttpError {
    pub status: StatusCode,
    pub message: String,
    pub details: String,
}

pub type HResult = Result<Reply, HttpError>;

impl HttpError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> HttpError {
        HttpError {
            status,
            message: message.into(),
            details: String::new(),
        }
    }

    pub fn bad(message: impl Into<String>) -> HttpError {
        HttpError::new(StatusCode::BAD_REQUEST, message)
    }

    fn reply(self) -> Reply {
        if self.status == StatusCode::NOT_MODIFIED {
            return status_only(StatusCode::NOT_MODIFIED);
        }
        error_reply(self.status, &self.message, &self.details)
    }
}

impl From<MetaError> for HttpError {
    fn from(e: MetaError) -> HttpError {
        match e {
            MetaError::BadRequest { message, details } => HttpError {
                status: StatusCode::BAD_REQUEST,
                message,
                details,
            },
            MetaError::NotFound(m) => HttpError::new(StatusCode::NOT_FOUND, m),
            MetaError::NotModified => HttpError::new(StatusCode::NOT_MODIFIED, ""),
            MetaError::CasFailed(m) => HttpError {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                message: m,
                details: "This may be caused by another process modifying storage data".into(),
            },
            MetaError::Uid(crate::uid::UidError::NoSuchName { kind, name }) => HttpError::new(
                StatusCode::NOT_FOUND,
                format!("No such name for '{kind}': '{name}'"),
            ),
            e => HttpError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
}

pub fn status_only(status: StatusCode) -> Reply {
    http::Response::builder()
        .status(status)
        .body(Vec::new())
        .expect("valid response")
}

pub fn ok_json(body: String) -> HResult {
    Ok(json_reply(StatusCode::OK, body))
}

pub fn method_not_allowed(m: &Method) -> HttpError {
    HttpError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        message: "Method not allowed".into(),
        details: format!("The HTTP method [{m}] is not permitted for this endpoint"),
    }
}

/// The logical verb: the physical one, or for a GET the `method_override` parameter.
pub fn api_method(req: &Request) -> Result<Method, HttpError> {
    if req.method != Method::GET {
        return Ok(req.method.clone());
    }
    match req.param("method_override") {
        None => Ok(Method::GET),
        Some(m) => match m.to_ascii_lowercase().as_str() {
            "get" => Ok(Method::GET),
            "post" => Ok(Method::POST),
            "put" => Ok(Method::PUT),
            "delete" => Ok(Method::DELETE),
            _ => Err(HttpError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "Unknown or unsupported method override value",
            )),
        },
    }
}

/// The request body, gunzipped when sent with `Content-Encoding: gzip`.
fn body(req: &Request) -> Result<Vec<u8>, HttpError> {
    let gz = req
        .headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    if !gz {
        return Ok(req.body.to_vec());
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&req.body[..])
        .take(64 << 20)
        .read_to_end(&mut out)
        .map_err(|e| HttpError {
            details: e.to_string(),
            ..HttpError::bad("Unable to decompress the request body")
        })?;
    Ok(out)
}

pub fn has_content(req: &Request) -> bool {
    !req.body.is_empty()
}

/// Parses the JSON body, with OpenTSDB's messages for an empty or broken one.
pub fn json_body<T: DeserializeOwned>(req: &Request) -> Result<T, HttpError> {
    let b = body(req)?;
    if b.iter().all(|c| c.is_ascii_whitespace()) {
        return Err(HttpError {
            details: "Supply valid JSON formatted data in the body of your request".into(),
            ..HttpError::bad("Missing message content")
        });
    }
    serde_json::from_slice(&b).map_err(|e| HttpError {
        details: e.to_string(),
        ..HttpError::bad("Unable to parse the given JSON")
    })
}

/// OpenTSDB's query-string booleans: `true`, `1` or `yes`.
pub fn qs_bool(req: &Request, name: &str) -> Option<bool> {
    req.param(name)
        .map(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
}

pub fn qs_int<T: std::str::FromStr>(req: &Request, name: &str) -> Result<Option<T>, HttpError> {
    match req.param(name) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| HttpError::bad(format!("Unable to parse '{name}' value"))),
    }
}

pub fn required(req: &Request, name: &str) -> Result<String, HttpError> {
    req.param(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| HttpError::bad(format!("Missing parameter <code>{name}</code>")))
}

/// A comma-separated list of hex TSUIDs.
pub fn tsuid_list(s: &str) -> Result<Vec<Vec<u8>>, HttpError> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            crate::schema::parse_hex(t).ok_or_else(|| HttpError::bad(format!("Invalid TSUID: {t}")))
        })
        .collect()
}

/// `metric{k=v,k2=*}` → metric and tag pairs (`None` value = any).
/// Tag key and value (`None` = `*`).
pub type TagSpec = (String, Option<String>);

pub fn parse_m(s: &str) -> Result<(String, Vec<TagSpec>), HttpError> {
    let Some(open) = s.find('{') else {
        return Ok((s.trim().to_string(), Vec::new()));
    };
    let close = s
        .rfind('}')
        .filter(|&c| c > open)
        .ok_or_else(|| HttpError::bad(format!("Missing '}}' at the end of: {s}")))?;
    let mut tags = Vec::new();
    for part in s[open + 1..close]
        .split(',')
        .filter(|p| !p.trim().is_empty())
    {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| HttpError::bad(format!("invalid tag: {part}")))?;
        let v = v.trim();
        tags.push((k.trim().to_string(), (v != "*").then(|| v.to_string())));
    }
    Ok((s[..open].trim().to_string(), tags))
}
