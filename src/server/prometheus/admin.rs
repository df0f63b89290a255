//! Prometheus' admin API (`delete_series`) and the TSDB status page (`/api/v1/status/tsdb`).
//! The admin endpoints answer only with `admin.enabled = true`, as Prometheus' only with
//! `--web.enable-admin-api`.

use super::format::{error, ErrorType};
use super::params::{parse_time, Params, MAX_TIME_MS, MIN_TIME_MS};
use crate::server::http::{Reply, Request};
use crate::server::state::Prometheus;
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
pub async fn delete_series(state: &Arc<Prometheus>, req: Request) -> Reply {
    if !state.settings.admin {
        return disabled();
    }
    let p = Params::of(&req);
    let bad = |m: String| error(ErrorType::BadData, &m);
    let time = |k: &'static str, dflt: i64| match p.get(k) {
        Some(s) if !s.is_empty() => parse_time(s).map_err(|e| (k, e)),
        _ => Ok(dflt),
    };
    let (start, end) = match (time("start", MIN_TIME_MS), time("end", MAX_TIME_MS)) {
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
        return bad("no match[] parameter provided".into());
    }
    // Points acknowledged before the request are in the store first, so they are deleted too.
    if let Err(e) = state.ingest.writer.publish().await {
        return error(
            ErrorType::Unavailable,
            &format!("cannot reach the store: {e}"),
        );
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
            // Deleted over all time: the series no longer counts (a window leaves it).
            if start <= 0 && end >= tsgate_common::clock::now_ms() as i64 {
                state.cardinality.forget(&d.series);
            }
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

/// `GET /api/v1/status/tsdb?limit=N`: series counts in Prometheus' shape, over every series
/// the store holds (`names=stored` gives metric and tag names as stored, the OpenTSDB and
/// Graphite view, instead of Prometheus' label names).
pub async fn status_tsdb(state: &Arc<Prometheus>, req: Request) -> Reply {
    let p = Params::of(&req);
    let limit = match p.get("limit") {
        Some(s) if !s.is_empty() => match s.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                return error(
                    ErrorType::BadData,
                    &format!("invalid parameter \"limit\": {s:?} is not a positive integer"),
                )
            }
        },
        _ => 10,
    };
    let stored = p.get("names") == Some("stored");
    let st = state.clone();
    let res = tokio::task::spawn_blocking(move || status(&st, limit, stored)).await;
    match res {
        Ok(Ok(v)) => super::api::ok(v),
        Ok(Err(e)) => error(ErrorType::Internal, &e.to_string()),
        Err(e) => error(ErrorType::Internal, &e.to_string()),
    }
}

fn status(
    st: &Prometheus,
    limit: usize,
    stored: bool,
) -> Result<serde_json::Value, crate::uid::UidError> {
    use crate::prometheus::labels::{from_stored, unescape};
    use crate::schema::uid_table::UidKind;
    use std::collections::{HashMap, HashSet};
    let uids = st.resolver.uids();
    let layout = st.query.layout;
    let mut names: HashMap<(UidKind, Vec<u8>), String> = HashMap::new();
    let mut name = |kind: UidKind, uid: &[u8]| -> Result<String, crate::uid::UidError> {
        if let Some(n) = names.get(&(kind, uid.to_vec())) {
            return Ok(n.clone());
        }
        let n = uids.get_name(kind, uid)?.to_string();
        names.insert((kind, uid.to_vec()), n.clone());
        Ok(n)
    };
    let mut by_metric: HashMap<String, u64> = HashMap::new();
    let mut values: HashMap<String, HashSet<String>> = HashMap::new();
    let mut pairs: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    for (metric, series) in st.cardinality.snapshot() {
        let Ok(m) = name(UidKind::Metric, &metric) else {
            continue;
        };
        for tsuid in series {
            let mut tags = Vec::new();
            for pair in tsuid[layout.metric_width..].chunks_exact(layout.tag_width()) {
                let (k, v) = pair.split_at(layout.tagk_width);
                tags.push((name(UidKind::Tagk, k)?, name(UidKind::Tagv, v)?));
            }
            let labels = if stored {
                let mut l = vec![("metric".to_string(), m.clone())];
                l.extend(tags);
                l
            } else {
                from_stored(&m, tags.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            };
            total += 1;
            let shown = if stored {
                m.clone()
            } else {
                unescape(&m).into_owned()
            };
            *by_metric.entry(shown).or_default() += 1;
            for (k, v) in labels {
                *pairs.entry(format!("{k}={v}")).or_default() += 1;
                values.entry(k).or_default().insert(v);
            }
        }
    }
    let top = |m: HashMap<String, u64>| -> Vec<serde_json::Value> {
        let mut v: Vec<(String, u64)> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.into_iter()
            .take(limit)
            .map(|(name, value)| serde_json::json!({"name": name, "value": value}))
            .collect()
    };
    let num_pairs = pairs.len() as u64;
    let value_counts: HashMap<String, u64> = values
        .into_iter()
        .map(|(k, v)| (k, v.len() as u64))
        .collect();
    Ok(serde_json::json!({
        "headStats": {"numSeries": total, "numLabelPairs": num_pairs},
        "seriesCountByMetricName": top(by_metric),
        "labelValueCountByLabelName": top(value_counts),
        "seriesCountByLabelValuePair": top(pairs),
    }))
}
