//! `/api/annotation`, `/api/annotations` and `/api/annotation/bulk`.

use super::{
    api_method, has_content, json_body, method_not_allowed, ok_json, qs_bool, status_only,
    tsuid_list, HResult, HttpError,
};
use crate::meta::annotation::{self, Annotation, AnnotationUpdate};
use crate::query::time::parse_time;
use crate::server::http::Request;
use crate::server::state::OpenTsdb;
use http::{Method, StatusCode};
use tsgate_common::clock::now_ms;

/// A query-string time through the date parser, in ms.
fn qs_time_ms(req: &Request, name: &str) -> Result<Option<u64>, HttpError> {
    match req.param(name) {
        None => Ok(None),
        Some(v) => parse_time(&v, now_ms())
            .map(Some)
            .map_err(|e| HttpError::bad(e.to_string())),
    }
}

/// A note from the JSON body, or from the query string (times parsed, then divided by 1000
/// as OpenTSDB does: stored in seconds).
fn parse_note(req: &Request) -> Result<AnnotationUpdate, HttpError> {
    if has_content(req) {
        return json_body(req);
    }
    let start = qs_time_ms(req, "start_time")?
        .filter(|&t| t >= 1)
        .ok_or_else(|| HttpError::bad("Missing start time"))?;
    Ok(AnnotationUpdate {
        tsuid: req.param("tsuid"),
        start_time: Some(start / 1000),
        end_time: qs_time_ms(req, "end_time")?.map(|t| t / 1000),
        description: req.param("description"),
        notes: req.param("notes"),
        custom: None,
    })
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// `/api/annotation` (and `/api/annotations`, whose GET lists global notes).
pub fn single(st: &OpenTsdb, req: &Request, plural: bool) -> HResult {
    let method = api_method(req)?;
    let ctx = &st.meta.ctx;
    let (store, layout, table) = (&*ctx.store, &ctx.layout, ctx.tables.data.as_str());
    if plural && method == Method::GET {
        let start =
            qs_time_ms(req, "start_time")?.ok_or_else(|| HttpError::bad("Missing start time"))?;
        let end = qs_time_ms(req, "end_time")?.unwrap_or_else(now_ms);
        let notes = annotation::scan_global(store, layout, table, start, end)
            .map_err(crate::meta::MetaError::from)?;
        return ok_json(json(&notes));
    }
    let note = parse_note(req)?;
    match method {
        Method::GET => {
            let tsuid = note.tsuid_bytes()?;
            match annotation::get(store, layout, table, &tsuid, note.start())? {
                Some((n, _)) => ok_json(json(&n)),
                None => Err(HttpError::new(
                    StatusCode::NOT_FOUND,
                    "Unable to locate annotation in storage",
                )),
            }
        }
        Method::POST | Method::PUT => {
            let stored = annotation::sync(store, layout, table, &note, method == Method::PUT)?;
            ok_json(json(&stored))
        }
        Method::DELETE => {
            annotation::delete(store, layout, table, &note.tsuid_bytes()?, note.start())?;
            Ok(status_only(StatusCode::NO_CONTENT))
        }
        m => Err(method_not_allowed(&m)),
    }
}

/// The bulk delete request (and its echo with `totalDeleted`).
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BulkDelete {
    #[serde(default)]
    tsuids: Option<Vec<String>>,
    #[serde(default)]
    global: bool,
    #[serde(default)]
    start_time: Option<serde_json::Value>,
    #[serde(default)]
    end_time: Option<serde_json::Value>,
}

fn json_time(v: &Option<serde_json::Value>) -> Result<Option<u64>, HttpError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => parse_time(&n.to_string(), now_ms())
            .map(Some)
            .map_err(|e| HttpError::bad(e.to_string())),
        Some(serde_json::Value::String(s)) => parse_time(s, now_ms())
            .map(Some)
            .map_err(|e| HttpError::bad(e.to_string())),
        Some(other) => Err(HttpError::bad(format!("Invalid time: {other}"))),
    }
}

/// `/api/annotation/bulk`: the physical verb decides (POST/PUT store, DELETE removes a range).
pub fn bulk(st: &OpenTsdb, req: &Request) -> HResult {
    let ctx = &st.meta.ctx;
    let (store, layout, table) = (&*ctx.store, &ctx.layout, ctx.tables.data.as_str());
    match req.method {
        Method::POST | Method::PUT => {
            let notes: Vec<AnnotationUpdate> = json_body(req)?;
            if notes.is_empty() {
                return Err(HttpError::bad("Missing annotations"));
            }
            let mut out: Vec<Annotation> = Vec::with_capacity(notes.len());
            for n in &notes {
                match annotation::sync(store, layout, table, n, req.method == Method::PUT) {
                    Ok(a) => out.push(a),
                    // Nothing to change: answer with what is stored.
                    Err(crate::meta::MetaError::NotModified) => {
                        if let Some((a, _)) =
                            annotation::get(store, layout, table, &n.tsuid_bytes()?, n.start())?
                        {
                            out.push(a);
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            ok_json(json(&out))
        }
        Method::DELETE => {
            let (tsuids, global, start, end) = if has_content(req) {
                let d: BulkDelete = json_body(req)?;
                (
                    d.tsuids.unwrap_or_default(),
                    d.global,
                    json_time(&d.start_time)?,
                    json_time(&d.end_time)?,
                )
            } else {
                let tsuids = req
                    .param("tsuids")
                    .map(|s| {
                        s.split(',')
                            .map(|t| t.trim().to_string())
                            .filter(|t| !t.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                (
                    tsuids,
                    qs_bool(req, "global").unwrap_or(false),
                    qs_time_ms(req, "start_time")?,
                    qs_time_ms(req, "end_time")?,
                )
            };
            let start = start
                .filter(|&t| t >= 1)
                .ok_or_else(|| HttpError::bad("Missing start time"))?;
            let end = end.unwrap_or_else(now_ms);
            if tsuids.is_empty() && !global {
                return Err(HttpError::bad(
                    "Missing the TSUIDs or global annotations flag",
                ));
            }
            let bytes = tsuid_list(&tsuids.join(","))?;
            let n = annotation::delete_range(store, layout, table, &bytes, global, start, end)
                .map_err(crate::meta::MetaError::from)?;
            let tsuids_json = if tsuids.is_empty() {
                "null".to_string()
            } else {
                json(&tsuids)
            };
            ok_json(format!(
                "{{\"tsuids\":{tsuids_json},\"global\":{global},\"startTime\":{start},\"endTime\":{end},\"totalDeleted\":{n}}}"
            ))
        }
        ref m => Err(method_not_allowed(m)),
    }
}
