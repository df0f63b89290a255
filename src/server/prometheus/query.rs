//! `/api/v1/query` and `/api/v1/query_range`: PromQL evaluated off the async threads,
//! answered in Prometheus' JSON with its number formatting.

use super::format::{error, point, push_point, scalar_value, success_raw, ErrorType};
use super::params::{parse_duration, parse_time, Params};
use crate::promql::{self, PromError, QueryResult, Settings};
use crate::server::http::{Reply, Request};
use crate::server::state::Prometheus;
use std::fmt::Write;
use std::sync::Arc;

/// Prometheus' `--query.timeout` default; a request's `timeout` may only shorten it.
const MAX_TIMEOUT_MS: i64 = 120_000;

/// The evaluation settings, or the 400 to answer (boxed: a reply is large).
fn settings(state: &Prometheus, p: &Params) -> Result<Settings, Box<Reply>> {
    let c = &state.settings;
    let timeout = match p.get("timeout").filter(|t| !t.is_empty()) {
        Some(t) => parse_duration(t)
            .map_err(|e| {
                error(
                    ErrorType::BadData,
                    &format!("invalid parameter \"timeout\": {e}"),
                )
            })?
            .clamp(0, MAX_TIMEOUT_MS),
        None => MAX_TIMEOUT_MS,
    };
    // `query.timeout_ms` caps every query (0 = Prometheus' own 2 minutes).
    let cap = state.settings.query_timeout_ms as i64;
    let timeout = if cap > 0 { timeout.min(cap) } else { timeout };
    let deadline =
        Some(std::time::Instant::now() + std::time::Duration::from_millis(timeout as u64));
    // Thanos' `max_source_resolution`: `raw` (or 0), a duration, or `auto` (a fifth of the
    // step, as Thanos takes it).
    let max_source_resolution_ms = match p.get("max_source_resolution").unwrap_or("raw") {
        "" | "raw" => 0,
        "auto" => p
            .get("step")
            .and_then(|s| parse_duration(s).ok())
            .map_or(0, |s| s / 5),
        r => parse_duration(r).map_err(|e| {
            error(
                ErrorType::BadData,
                &format!("invalid parameter \"max_source_resolution\": {e}"),
            )
        })?,
    };
    let raw_retention_ms = state.settings.raw_retention_ms;
    Ok(Settings {
        lookback_ms: c.lookback_delta_ms as i64,
        max_samples: c.max_samples,
        deadline,
        max_source_resolution_ms,
        raw_retention_ms,
        ..Settings::default()
    })
}

fn labels_json(l: &[(String, String)]) -> String {
    let m: serde_json::Map<String, serde_json::Value> = l
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    serde_json::Value::Object(m).to_string()
}

/// Renders a result as Prometheus' `data` object.
pub fn render(r: &QueryResult) -> String {
    let mut s = String::new();
    match r {
        QueryResult::Scalar(t, v) => {
            let _ = write!(
                s,
                "{{\"resultType\":\"scalar\",\"result\":[{},\"{}\"]}}",
                *t as f64 / 1000.0,
                scalar_value(*v)
            );
        }
        QueryResult::Str(t, v) => {
            let _ = write!(
                s,
                "{{\"resultType\":\"string\",\"result\":[{},{}]}}",
                *t as f64 / 1000.0,
                serde_json::Value::String(v.clone())
            );
        }
        QueryResult::Vector(v) => {
            s.push_str("{\"resultType\":\"vector\",\"result\":[");
            for (i, (l, t, val)) in v.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                let _ = write!(
                    s,
                    "{{\"metric\":{},\"value\":{}}}",
                    labels_json(l),
                    point(*t, *val)
                );
            }
            s.push_str("]}");
        }
        QueryResult::Matrix(m) => {
            s.push_str("{\"resultType\":\"matrix\",\"result\":[");
            for (i, (l, pts)) in m.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                let _ = write!(s, "{{\"metric\":{},\"values\":[", labels_json(l));
                for (j, (t, v)) in pts.iter().enumerate() {
                    if j > 0 {
                        s.push(',');
                    }
                    push_point(&mut s, *t, *v);
                }
                s.push_str("]}");
            }
            s.push_str("]}");
        }
    }
    s
}

/// `query_param`: 2.42 words a bad instant query as its `query` parameter's fault
/// (`invalid parameter "query": …`) and a bad range query bare.
fn prom_error(e: PromError, query_param: bool) -> Reply {
    match e {
        PromError::BadData(m) if query_param => error(
            ErrorType::BadData,
            &format!("invalid parameter \"query\": {m}"),
        ),
        PromError::BadData(m) => error(ErrorType::BadData, &m),
        PromError::Execution(m) => error(ErrorType::Execution, &m),
        PromError::Internal(m) => error(ErrorType::Internal, &m),
        e @ PromError::Timeout(_) => error(ErrorType::Timeout, &e.to_string()),
    }
}

async fn run(
    state: &Arc<Prometheus>,
    s: Settings,
    query: String,
    query_param: bool,
    f: impl FnOnce(
            &crate::query::QueryEngine,
            &promql_parser::parser::Expr,
            Settings,
        ) -> Result<QueryResult, PromError>
        + Send
        + 'static,
) -> Reply {
    let expr = match promql::parse_bounded(&query, state.settings.max_depth) {
        Ok(e) => e,
        Err(e) => return prom_error(e, query_param),
    };
    let st = state.clone();
    match crate::server::blocking::run(move || f(&st.query, &expr, s)).await {
        Ok(Ok(r)) => success_raw(&render(&r), &[]),
        Ok(Err(e)) => prom_error(e, query_param),
        Err(e) => error(ErrorType::Internal, &format!("query task failed: {e}")),
    }
}

pub async fn instant(state: &Arc<Prometheus>, req: Request) -> Reply {
    let p = Params::of(&req);
    let Some(q) = p.get("query").map(str::to_string) else {
        return error(
            ErrorType::BadData,
            "invalid parameter \"query\": query is empty",
        );
    };
    let t = match p.get("time").filter(|t| !t.is_empty()) {
        Some(t) => match parse_time(t) {
            Ok(t) => t,
            Err(e) => {
                return error(
                    ErrorType::BadData,
                    &format!("invalid parameter \"time\": {e}"),
                )
            }
        },
        None => tsgate_common::clock::now_ms() as i64,
    };
    let s = match settings(state, &p) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    run(state, s, q, true, move |qe, e, s| {
        promql::instant_query(qe, e, t, s)
    })
    .await
}

pub async fn range(state: &Arc<Prometheus>, req: Request) -> Reply {
    let p = Params::of(&req);
    let bad = |m: String| error(ErrorType::BadData, &m);
    let get_time = |k: &str| -> Result<i64, Box<Reply>> {
        let v = p.get(k).ok_or_else(|| {
            bad(format!(
                "invalid parameter \"{k}\": cannot parse \"\" to a valid timestamp"
            ))
        })?;
        parse_time(v).map_err(|e| Box::new(bad(format!("invalid parameter \"{k}\": {e}"))))
    };
    let (start, end) = match (get_time("start"), get_time("end")) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(r), _) | (_, Err(r)) => return *r,
    };
    if end < start {
        return bad(
            "invalid parameter \"end\": end timestamp must not be before start time".into(),
        );
    }
    let step = match p.get("step").map(parse_duration) {
        Some(Ok(s)) => s,
        Some(Err(e)) => return bad(format!("invalid parameter \"step\": {e}")),
        None => {
            return bad("invalid parameter \"step\": cannot parse \"\" to a valid duration".into())
        }
    };
    if step <= 0 {
        return bad("invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer".into());
    }
    if (end - start) / step > 11000 {
        return bad("exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into());
    }
    let Some(q) = p.get("query").map(str::to_string) else {
        return bad("invalid parameter \"query\": query is empty".into());
    };
    let s = match settings(state, &p) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    run(state, s, q, false, move |qe, e, s| {
        promql::range_query(qe, e, start, end, step, s)
    })
    .await
}

pub fn format(req: Request) -> Reply {
    let p = Params::of(&req);
    match promql::parse(p.get("query").unwrap_or("")) {
        Ok(e) => success_raw(&serde_json::Value::String(e.prettify()).to_string(), &[]),
        Err(e) => prom_error(e, true),
    }
}
