//! OpenTSDB's read side over HTTP: `/api/query` (GET, POST, DELETE), `/api/query/last`,
//! `/api/suggest`, `/api/search/lookup`, `/api/config`, `/api/config/filters`.

use super::api::method_not_allowed;
use super::http::{error_reply, json_reply, Reply, Request};
use crate::query::aggregate::Num;
use crate::query::filter::FilterType;
use crate::query::parse::{self, ParseError};
use crate::query::render::{render, Extras};
use crate::query::spec::Query;
use crate::query::{QueryError, ResultSeries, Summary};
use crate::schema::uid_table::UidKind;
use crate::schema::{hex_upper, parse_hex};
use crate::server::state::OpenTsdb;
use crate::store::Scan;
use http::{Method, StatusCode};
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;
use std::time::Instant;
use tsgate_common::numfmt::java_double;

pub(super) fn query_error(e: QueryError) -> Reply {
    match e {
        QueryError::BadRequest(m) => error_reply(StatusCode::BAD_REQUEST, &m, ""),
        e @ (QueryError::Parse(_) | QueryError::Filter(_)) => {
            error_reply(StatusCode::BAD_REQUEST, &e.to_string(), "")
        }
        QueryError::Uid(e) => error_reply(StatusCode::BAD_REQUEST, &e.to_string(), ""),
        e @ QueryError::Store(_) => error_reply(StatusCode::FAILED_DEPENDENCY, &e.to_string(), ""),
        QueryError::Timeout(m) => error_reply(StatusCode::SERVICE_UNAVAILABLE, &m, ""),
        QueryError::TooLarge(m) => error_reply(StatusCode::PAYLOAD_TOO_LARGE, &m, ""),
        e => error_reply(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), ""),
    }
}

fn answer_too_large(bytes: usize, max: usize) -> QueryError {
    QueryError::TooLarge(format!(
        "The answer would take {bytes} bytes or more, more than {max} (query.max_answer_bytes); filter on more tags, downsample or shorten the time range"
    ))
}

/// `/api/query`'s answer (`/api/query/gexp`'s too): the series as rendered, with the global
/// annotations when the query asks for them, refused when past `query.max_answer_bytes`.
pub(super) fn answer(
    st: &OpenTsdb,
    q: &Query,
    series: &[ResultSeries],
    summary: &Summary,
    started: Instant,
) -> Result<String, QueryError> {
    let mut extras = Extras::default();
    if q.flags.global_annotations {
        let e = &st.query;
        extras.global = crate::meta::annotation::scan_global(
            e.store.as_ref(),
            &e.layout,
            &e.table,
            q.start_ms,
            q.end_ms,
        )?
        .into_iter()
        .map(|a| serde_json::to_value(a).unwrap_or_default())
        .collect();
    }
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    let body = render(q, series, summary, &extras, elapsed);
    let max = st.settings.max_answer_bytes;
    if max > 0 && body.len() > max {
        return Err(answer_too_large(body.len(), max));
    }
    Ok(body)
}

/// Runs blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, QueryError> + Send + 'static,
) -> Result<T, Reply> {
    match crate::server::blocking::run(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(query_error(e)),
        Err(e) => Err(error_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "query task failed",
            &e.to_string(),
        )),
    }
}

pub(super) async fn query(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    // Sub-queries with `percentiles` read histogram cells (`opentsdb_histogram`).
    if let Some(r) = super::opentsdb_histogram::maybe_percentiles(state, &req).await {
        return r;
    }
    let now = tsgate_common::clock::now_ms();
    let parsed = match req.method {
        Method::GET => parse::from_params(&req.params(), now),
        Method::POST => parse::from_json(&req.body, now),
        // QueryRpc: a DELETE is refused before anything is read unless deletes are allowed;
        // its query comes from the URI as a GET's does (or from a JSON body, as a POST's).
        Method::DELETE if !state.query.allow_delete => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                "Bad request",
                "Deleting data is not enabled (query.allow_delete=false)",
            )
        }
        Method::DELETE => if req.body.is_empty() {
            parse::from_params(&req.params(), now)
        } else {
            parse::from_json(&req.body, now)
        }
        .map(|mut q| {
            q.flags.delete = true;
            q
        }),
        ref m => return method_not_allowed(m),
    };
    let mut q = match parsed {
        Ok(q) => q,
        Err(e) => return query_error(e.into()),
    };
    q.flags.arrays = req.param("arrays").is_some_and(|v| v != "false");
    let st = state.clone();
    let started = Instant::now();
    let res = blocking(move || {
        let (series, summary) = st.query.run(&q)?;
        if q.flags.delete {
            // Deleted series must leave the graphite index now, not when it next expires.
            st.graphite_index.invalidate();
            // Counts only: a delete never answers with the points it removed (they would be a
            // read that the delete's right does not stand for).
            return Ok(json!({"deleted": {
                "series": summary.series,
                "datapoints": summary.raw_datapoints,
            }})
            .to_string());
        }
        // Every data point takes at least `"1356998400":1,` in the answer: refused before
        // the answer is built when that alone is past `query.max_answer_bytes`.
        let max = st.settings.max_answer_bytes;
        let least = series.iter().map(|s| s.dps.len()).sum::<usize>() * 14;
        if max > 0 && least > max {
            return Err(answer_too_large(least, max));
        }
        let body = answer(&st, &q, &series, &summary, started)?;
        Ok(body)
    })
    .await;
    match res {
        Ok(body) => json_reply(StatusCode::OK, body),
        Err(r) => r,
    }
}

fn value_string(v: Num) -> String {
    match v {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => java_double(f),
    }
}

/// `metric{k=v,…}` as used by `/api/query/last` and `/api/search/lookup`.
pub(crate) fn metric_and_tags(s: &str) -> Result<(String, Vec<(String, String)>), ParseError> {
    let Some(open) = s.find('{') else {
        return Ok((s.to_string(), vec![]));
    };
    let close = s
        .rfind('}')
        .filter(|c| *c > open)
        .ok_or_else(|| ParseError::Unclosed(s.to_string()))?;
    let mut tags = Vec::new();
    for part in s[open + 1..close].split(',').filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| ParseError::Tag("tag", part.to_string()))?;
        tags.push((k.to_string(), v.to_string()));
    }
    Ok((s[..open].to_string(), tags))
}

/// A series `/api/query/last` asks for, as `last_points` takes it: (metric, tags, None) or
/// (None, no tags, its TSUID).
type LastWanted = (Option<String>, Vec<(String, String)>, Option<Vec<u8>>);

pub(super) async fn last(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    let mut wanted: Vec<LastWanted> = Vec::new();
    let (resolve, back) = match req.method {
        Method::GET => {
            for (k, v) in req.params() {
                if k == "timeseries" {
                    match metric_and_tags(&v) {
                        Ok((m, t)) => wanted.push((Some(m), t, None)),
                        Err(e) => return query_error(e.into()),
                    }
                } else if k == "tsuids" {
                    for t in v.split(',').filter(|t| !t.is_empty()) {
                        match parse_hex(t) {
                            Some(b) => wanted.push((None, vec![], Some(b))),
                            None => {
                                return error_reply(
                                    StatusCode::BAD_REQUEST,
                                    &format!("Invalid TSUID: {t}"),
                                    "",
                                )
                            }
                        }
                    }
                }
            }
            // A Java int, as OpenTSDB parses it; zero or less scans no hour back.
            let back = match req.param("back_scan").map(|b| b.parse::<i32>()) {
                None => 0,
                Some(Ok(b)) => b.max(0) as u64,
                Some(Err(_)) => {
                    return error_reply(
                        StatusCode::BAD_REQUEST,
                        "Unable to parse back_scan parameter",
                        "",
                    )
                }
            };
            (req.flag("resolve"), back)
        }
        // TestSuggestRpc.missingContent.
        Method::POST if req.body.is_empty() => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                "Missing message content",
                "Supply valid JSON formatted data in the body of your request",
            )
        }
        Method::POST => {
            let j: Json = match serde_json::from_slice(&req.body) {
                Ok(j) => j,
                Err(e) => {
                    return error_reply(
                        StatusCode::BAD_REQUEST,
                        "Unable to parse the given JSON",
                        &e.to_string(),
                    )
                }
            };
            for q in j
                .get("queries")
                .and_then(|q| q.as_array())
                .cloned()
                .unwrap_or_default()
            {
                if let Some(m) = q.get("metric").and_then(|m| m.as_str()) {
                    let tags = q
                        .get("tags")
                        .and_then(|t| t.as_object())
                        .map(|o| {
                            o.iter()
                                .map(|(k, v)| {
                                    (k.clone(), v.as_str().unwrap_or_default().to_string())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    wanted.push((Some(m.to_string()), tags, None));
                }
                for t in q
                    .get("tsuids")
                    .and_then(|t| t.as_array())
                    .cloned()
                    .unwrap_or_default()
                {
                    if let Some(b) = t.as_str().and_then(parse_hex) {
                        wanted.push((None, vec![], Some(b)));
                    }
                }
            }
            (
                j.get("resolveNames")
                    .and_then(|r| r.as_bool())
                    .unwrap_or(false),
                j.get("backScan").and_then(|b| b.as_u64()).unwrap_or(0),
            )
        }
        ref m => return method_not_allowed(m),
    };
    if wanted.is_empty() {
        return error_reply(StatusCode::BAD_REQUEST, "Missing sub queries", "");
    }
    let st = state.clone();
    let res = blocking(move || {
        let now = tsgate_common::clock::now_ms();
        let mut out = Vec::new();
        for (metric, tags, tsuid) in wanted {
            for (tsuid, ts, v) in
                st.query
                    .last_points(metric.as_deref(), &tags, tsuid.as_deref(), back, now)?
            {
                let mut o = Map::new();
                if resolve {
                    let w = st.query.layout.metric_width;
                    o.insert(
                        "metric".into(),
                        json!(&*st.query.uids.get_name(UidKind::Metric, &tsuid[..w])?),
                    );
                    let mut tagmap = Map::new();
                    let pair = st.query.layout.tag_width();
                    for c in tsuid[w..].chunks_exact(pair) {
                        let (k, v) = c.split_at(st.query.layout.tagk_width);
                        tagmap.insert(
                            st.query.uids.get_name(UidKind::Tagk, k)?.into(),
                            json!(&*st.query.uids.get_name(UidKind::Tagv, v)?),
                        );
                    }
                    o.insert("tags".into(), Json::Object(tagmap));
                }
                o.insert("timestamp".into(), json!(ts));
                o.insert("value".into(), json!(value_string(v)));
                o.insert("tsuid".into(), json!(hex_upper(&tsuid)));
                out.push(Json::Object(o));
            }
        }
        Ok(Json::Array(out).to_string())
    })
    .await;
    match res {
        Ok(b) => json_reply(StatusCode::OK, b),
        Err(r) => r,
    }
}

pub(super) async fn suggest(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    let (ty, q, max) = match req.method {
        Method::GET => (
            req.param("type"),
            req.param("q").unwrap_or_default(),
            req.param("max"),
        ),
        // TestSuggestRpc.missingContent.
        Method::POST if req.body.is_empty() => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                "Missing message content",
                "Supply valid JSON formatted data in the body of your request",
            )
        }
        Method::POST => {
            let j: Json = match serde_json::from_slice(&req.body) {
                Ok(j) => j,
                Err(e) => {
                    return error_reply(
                        StatusCode::BAD_REQUEST,
                        "Unable to parse the given JSON",
                        &e.to_string(),
                    )
                }
            };
            (
                j.get("type").and_then(|t| t.as_str()).map(String::from),
                j.get("q")
                    .and_then(|t| t.as_str())
                    .unwrap_or_default()
                    .to_string(),
                j.get("max")
                    .map(|m| m.to_string().trim_matches('"').to_string()),
            )
        }
        ref m => return method_not_allowed(m),
    };
    let Some(ty) = ty.filter(|t| !t.is_empty()) else {
        // The GET form's type is a required query string parameter (TestSuggestRpc
        // .missingType), the POST body's its own check.
        let msg = if req.method == Method::GET {
            "Missing parameter <code>type</code>"
        } else {
            "Missing 'type' parameter"
        };
        return error_reply(StatusCode::BAD_REQUEST, msg, "");
    };
    let kind = match ty.as_str() {
        "metrics" => UidKind::Metric,
        "tagk" => UidKind::Tagk,
        "tagv" => UidKind::Tagv,
        other => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                &format!("Invalid 'type' parameter:{other}"),
                "",
            )
        }
    };
    // OpenTSDB parses `max` as a Java int; empty, zero or negative mean its default of 25.
    let max = match max.filter(|m| !m.is_empty()) {
        None => 25,
        Some(m) => match m.parse::<i32>() {
            Ok(m) if m > 0 => m as usize,
            Ok(_) => 25,
            Err(_) => {
                return error_reply(
                    StatusCode::BAD_REQUEST,
                    "Unable to parse 'max' as a number",
                    "",
                )
            }
        },
    };
    let st = state.clone();
    match blocking(move || Ok(st.query.uids.suggest(kind, &q, max)?)).await {
        Ok(names) => json_reply(StatusCode::OK, json!(names).to_string()),
        Err(r) => r,
    }
}

pub(super) async fn lookup(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    let (metric, tags, limit) = match req.method {
        Method::GET => {
            let Some(m) = req.param("m") else {
                return error_reply(
                    StatusCode::BAD_REQUEST,
                    "Missing parameter <code>m</code>",
                    "",
                );
            };
            match metric_and_tags(&m) {
                Ok((metric, tags)) => (
                    metric,
                    tags,
                    req.param("limit")
                        .and_then(|l| l.parse().ok())
                        .unwrap_or(25usize),
                ),
                Err(e) => return query_error(e.into()),
            }
        }
        // TestSuggestRpc.missingContent.
        Method::POST if req.body.is_empty() => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                "Missing message content",
                "Supply valid JSON formatted data in the body of your request",
            )
        }
        Method::POST => {
            let j: Json = match serde_json::from_slice(&req.body) {
                Ok(j) => j,
                Err(e) => {
                    return error_reply(
                        StatusCode::BAD_REQUEST,
                        "Unable to parse the given JSON",
                        &e.to_string(),
                    )
                }
            };
            let tags = j
                .get("tags")
                .and_then(|t| t.as_array())
                .map(|a| {
                    a.iter()
                        .map(|t| {
                            let g = |k: &str| {
                                t.get(k).and_then(|v| v.as_str()).unwrap_or("*").to_string()
                            };
                            (g("key"), g("value"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            (
                j.get("metric")
                    .and_then(|m| m.as_str())
                    .unwrap_or_default()
                    .to_string(),
                tags,
                j.get("limit").and_then(|l| l.as_u64()).unwrap_or(25) as usize,
            )
        }
        ref m => return method_not_allowed(m),
    };
    let st = state.clone();
    let started = Instant::now();
    let (m2, t2) = (metric.clone(), tags.clone());
    let res = blocking(move || lookup_series(&st, &m2, &t2, limit)).await;
    match res {
        Ok((results, total)) => json_reply(
            StatusCode::OK,
            json!({
                "type": "LOOKUP",
                "metric": if metric.is_empty() { "*".to_string() } else { metric },
                "tags": tags.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
                "limit": limit,
                "time": started.elapsed().as_secs_f64() * 1000.0,
                "results": results,
                "startIndex": 0,
                "totalResults": total,
            })
            .to_string(),
        ),
        Err(r) => r,
    }
}

/// Distinct series of a metric (every hour) whose tags match `k=v` pairs (`*` on either side;
/// pairs with the same key are ORed).
fn lookup_series(
    st: &OpenTsdb,
    metric: &str,
    tags: &[(String, String)],
    limit: usize,
) -> Result<(Vec<Json>, usize), QueryError> {
    let e = &st.query;
    let layout = e.layout;
    let m = if metric.is_empty() || metric == "*" {
        None
    } else {
        Some(e.uids.require_id(UidKind::Metric, metric)?.into_vec())
    };
    let mut seen = std::collections::HashSet::new();
    let mut results = Vec::new();
    let mut total = 0;
    for salt in layout.salt_prefixes() {
        let scan = match &m {
            Some(m) => Scan {
                start: layout.metric_start(&salt, m, 0),
                stop: layout.metric_start(&salt, m, u32::MAX),
                families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                ..Default::default()
            },
            None => Scan {
                start: salt.clone(),
                families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                ..Default::default()
            },
        };
        for row in e.store.scan(&e.table, &scan)? {
            let row = row?;
            let Ok(rk) = layout.parse(&row.key) else {
                continue;
            };
            if rk.metric.iter().all(|&b| b == 0) {
                continue; // global annotations
            }
            let tsuid = rk.tsuid();
            if !seen.insert(tsuid.clone()) {
                continue;
            }
            let mut named = Map::new();
            let mut pairs = Vec::new();
            for (k, v) in rk.tag_pairs() {
                let (k, v): (String, String) = (
                    e.uids.get_name(UidKind::Tagk, k)?.into(),
                    e.uids.get_name(UidKind::Tagv, v)?.into(),
                );
                pairs.push((k.clone(), v.clone()));
                named.insert(k, json!(v));
            }
            let mut by_key: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
            for (k, v) in tags {
                by_key.entry(k.as_str()).or_default().push(v.as_str());
            }
            let ok = by_key.iter().all(|(k, vals)| {
                vals.iter().any(|v| {
                    pairs
                        .iter()
                        .any(|(pk, pv)| (*k == "*" || pk == k) && (*v == "*" || pv == v))
                })
            });
            if !ok {
                continue;
            }
            total += 1;
            if results.len() < limit {
                let metric_name: String = e.uids.get_name(UidKind::Metric, rk.metric)?.into();
                results.push(
                    json!({"tsuid": hex_upper(&tsuid), "metric": metric_name, "tags": named}),
                );
            }
        }
    }
    Ok((results, total))
}

pub(super) fn config(state: &OpenTsdb) -> Reply {
    json_reply(
        StatusCode::OK,
        json!(*state.settings.config_view).to_string(),
    )
}

/// `/api/config`'s answer, built once at start (`state::OpenTsdbSettings`).
pub(crate) fn config_view(c: &crate::config::Config) -> std::collections::BTreeMap<String, String> {
    let s = &c.storage;
    let mut m: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut put = |k: &str, v: String| {
        m.insert(k.to_string(), v);
    };
    put("tsd.network.bind", c.server.listen.clone());
    put("tsd.storage.hbase.data_table", s.tables.data.clone());
    put("tsd.storage.hbase.uid_table", s.tables.uid.clone());
    put("tsd.storage.hbase.meta_table", s.tables.meta.clone());
    put("tsd.storage.hbase.tree_table", s.tables.tree.clone());
    put(
        "tsd.storage.uid.width.metric",
        s.uid_width_metric.to_string(),
    );
    put("tsd.storage.uid.width.tagk", s.uid_width_tagk.to_string());
    put("tsd.storage.uid.width.tagv", s.uid_width_tagv.to_string());
    put("tsd.storage.salt.width", s.salt_width.to_string());
    put("tsd.storage.salt.buckets", s.salt_buckets.to_string());
    put("tsd.storage.max_tags", c.limits.max_tags.to_string());
    put("tsd.storage.fix_duplicates", "true".into());
    put("tsd.storage.enable_compaction", "true".into());
    put(
        "tsd.core.auto_create_metrics",
        c.uid.auto_create_metrics.to_string(),
    );
    put(
        "tsd.core.auto_create_tagks",
        c.uid.auto_create_tagks.to_string(),
    );
    put(
        "tsd.core.auto_create_tagvs",
        c.uid.auto_create_tagvs.to_string(),
    );
    put(
        "tsd.core.tag.allow_specialchars",
        c.limits.allow_special_chars.clone(),
    );
    put(
        "tsd.http.query.allow_delete",
        c.query.allow_delete.to_string(),
    );
    put("tsd.mode", "rw".into());
    if let Ok(mut v @ toml::Value::Table(_)) = toml::Value::try_from(c) {
        redact(&mut v);
        flatten("tsgate", &v, &mut m);
    }
    m
}

/// Config keys whose values are secrets (or digests of them, which a word list cracks):
/// replaced wherever they occur, so no response carries them.
const SECRET_KEYS: &[&str] = &["password_hash", "token_sha256", "password", "token"];

pub(crate) fn redact(v: &mut toml::Value) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t.iter_mut() {
                if SECRET_KEYS.contains(&k.as_str()) && !v.as_str().is_some_and(str::is_empty) {
                    *v = toml::Value::String("<redacted>".into());
                } else {
                    redact(v);
                }
            }
        }
        toml::Value::Array(a) => a.iter_mut().for_each(redact),
        _ => {}
    }
}

fn flatten(prefix: &str, v: &toml::Value, out: &mut std::collections::BTreeMap<String, String>) {
    match v {
        toml::Value::Table(t) => t
            .iter()
            .for_each(|(k, v)| flatten(&format!("{prefix}.{k}"), v, out)),
        toml::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

pub(super) fn filters() -> Reply {
    let mut m = Map::new();
    for f in FilterType::ALL {
        let (d, e) = f.describe();
        m.insert(f.name().into(), json!({"description": d, "examples": e}));
    }
    json_reply(StatusCode::OK, Json::Object(m).to_string())
}
