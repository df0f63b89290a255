//! The metadata side of the HTTP API: series, label names and values, metric metadata,
//! build info, and the valid empty answers Grafana probes for.

use super::format::{error, json_reply, success_raw, ErrorType};
use super::params::{parse_time, Params, MAX_TIME_MS, MIN_TIME_MS};
use crate::query::select::{Matcher, Selected};
use crate::schema::uid_table::UidKind;
use crate::server::http::{Reply, Request};
use crate::server::state::Prometheus;
use http::StatusCode;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeSet;
use std::sync::Arc;

pub fn ok(data: Json) -> Reply {
    success_raw(&data.to_string(), &[])
}

pub fn buildinfo() -> Reply {
    ok(json!({
        "version": "2.42.0",
        "revision": format!("tsgate-{}", env!("CARGO_PKG_VERSION")),
        "branch": "tsgate",
        "buildUser": "tsgate",
        "buildDate": "",
        "goVersion": "n/a (tsgate is written in Rust)"
    }))
}

struct Window {
    start: i64,
    end: i64,
    limit: usize,
    matchers: Vec<Vec<Matcher>>,
}

/// The request's window and selectors, or the 400 to answer (boxed: a reply is large).
fn window(p: &Params, need_match: bool) -> Result<Window, Box<Reply>> {
    let bad = |m: String| Box::new(error(ErrorType::BadData, &m));
    let start = match p.get("start") {
        Some(s) if !s.is_empty() => {
            parse_time(s).map_err(|e| bad(format!("invalid parameter \"start\": {e}")))?
        }
        _ => MIN_TIME_MS,
    };
    let end = match p.get("end") {
        Some(s) if !s.is_empty() => {
            parse_time(s).map_err(|e| bad(format!("invalid parameter \"end\": {e}")))?
        }
        _ => MAX_TIME_MS,
    };
    let limit = match p.get("limit") {
        Some(s) if !s.is_empty() => s
            .parse::<usize>()
            .map_err(|_| bad(format!("invalid parameter \"limit\": cannot parse {s:?}")))?,
        _ => 0,
    };
    let mut matchers = Vec::new();
    for m in p.all("match[]") {
        matchers.push(
            crate::promql::parse_match(m)
                .map_err(|e| bad(format!("invalid parameter \"match[]\": {e}")))?,
        );
    }
    if need_match && matchers.is_empty() {
        return Err(bad("no match[] parameter provided".into()));
    }
    Ok(Window {
        start,
        end,
        limit,
        matchers,
    })
}

/// Every series matching any of the selectors (label sets only).
async fn select_union(state: &Arc<Prometheus>, w: &Window) -> Result<Vec<Selected>, Reply> {
    let st = state.clone();
    let (ms, start, end) = (w.matchers.clone(), w.start, w.end);
    let res = crate::server::blocking::run(move || {
        let mut out: Vec<Selected> = Vec::new();
        for m in &ms {
            out.extend(st.query.select(m, start, end, false)?);
        }
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        out.dedup_by(|a, b| a.labels == b.labels);
        Ok::<_, crate::query::QueryError>(out)
    })
    .await;
    match res {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(error(ErrorType::Internal, &e.to_string())),
        Err(e) => Err(error(ErrorType::Internal, &e.to_string())),
    }
}

fn truncated(limit: usize, n: usize) -> Vec<String> {
    if limit > 0 && n > limit {
        vec!["results truncated due to limit".to_string()]
    } else {
        Vec::new()
    }
}

pub async fn series(state: &Arc<Prometheus>, req: Request) -> Reply {
    let w = match window(&Params::of(&req), true) {
        Ok(w) => w,
        Err(r) => return *r,
    };
    let found = match select_union(state, &w).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let warnings = truncated(w.limit, found.len());
    let take = if w.limit > 0 { w.limit } else { usize::MAX };
    success_raw(&label_sets_json(&found[..take.min(found.len())]), &warnings)
}

/// Label sets as a JSON array of objects, written straight out: a tree of JSON values per
/// series cost more than the look-up. Each set is sorted by name already, as an object's
/// keys are written.
fn label_sets_json(found: &[Selected]) -> String {
    let mut out = Vec::with_capacity(found.len() * 96 + 2);
    out.push(b'[');
    for (i, s) in found.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'{');
        for (j, (k, v)) in s.labels.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, k).expect("a Vec takes every write");
            out.push(b':');
            serde_json::to_writer(&mut out, v).expect("a Vec takes every write");
        }
        out.push(b'}');
    }
    out.push(b']');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn list_reply(mut items: Vec<String>, limit: usize) -> Reply {
    items.sort();
    items.dedup();
    let warnings = truncated(limit, items.len());
    if limit > 0 {
        items.truncate(limit);
    }
    success_raw(&json!(items).to_string(), &warnings)
}

pub async fn labels(state: &Arc<Prometheus>, req: Request) -> Reply {
    let w = match window(&Params::of(&req), false) {
        Ok(w) => w,
        Err(r) => return *r,
    };
    if w.matchers.is_empty() {
        // Without a selector: every tag key ever stored (the UID table; time range ignored).
        let st = state.clone();
        let names =
            crate::server::blocking::run(move || st.resolver.uids().list(UidKind::Tagk)).await;
        return match names {
            Ok(Ok(n)) => {
                let mut v: Vec<String> = n
                    .into_iter()
                    .filter(|(k, _)| k != crate::prometheus::labels::PLACEHOLDER_TAGK)
                    .map(|(k, _)| crate::prometheus::labels::unescape(&k).into_owned())
                    .collect();
                v.push("__name__".into());
                list_reply(v, w.limit)
            }
            Ok(Err(e)) => error(ErrorType::Internal, &e.to_string()),
            Err(e) => error(ErrorType::Internal, &e.to_string()),
        };
    }
    let found = match select_union(state, &w).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let set: BTreeSet<String> = found
        .iter()
        .flat_map(|s| s.labels.iter().map(|(k, _)| k.clone()))
        .collect();
    list_reply(set.into_iter().collect(), w.limit)
}

pub async fn label_values(state: &Arc<Prometheus>, req: Request, name: String) -> Reply {
    let w = match window(&Params::of(&req), false) {
        Ok(w) => w,
        Err(r) => return *r,
    };
    // Grafana escapes names that are not legacy-valid as `U__…`.
    let name = decode_u_escape(&name).unwrap_or(name);
    if name == "__name__" && w.matchers.is_empty() {
        let st = state.clone();
        let names =
            crate::server::blocking::run(move || st.resolver.uids().list(UidKind::Metric)).await;
        return match names {
            Ok(Ok(n)) => list_reply(
                n.into_iter()
                    .map(|(k, _)| crate::prometheus::labels::unescape(&k).into_owned())
                    .collect(),
                w.limit,
            ),
            Ok(Err(e)) => error(ErrorType::Internal, &e.to_string()),
            Err(e) => error(ErrorType::Internal, &e.to_string()),
        };
    }
    if w.matchers.is_empty() {
        // Every series that has the label: its values from the rows' tags alone.
        let (st, start, end) = (state.clone(), w.start, w.end);
        let vals =
            crate::server::blocking::run(move || st.query.label_values(&name, start, end)).await;
        return match vals {
            Ok(Ok(v)) => list_reply(v, w.limit),
            Ok(Err(e)) => error(ErrorType::Internal, &e.to_string()),
            Err(e) => error(ErrorType::Internal, &e.to_string()),
        };
    }
    let found = match select_union(state, &w).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let vals: BTreeSet<String> = found
        .iter()
        .filter_map(|s| {
            s.labels
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        })
        .collect();
    list_reply(vals.into_iter().collect(), w.limit)
}

/// Prometheus' UTF-8 name escaping as Grafana sends it: `U__` then `_` for `__`, `_<hex>_` for
/// other code points.
fn decode_u_escape(s: &str) -> Option<String> {
    let rest = s.strip_prefix("U__")?;
    let mut out = String::new();
    let mut it = rest.chars().peekable();
    while let Some(c) = it.next() {
        if c != '_' {
            out.push(c);
            continue;
        }
        if it.peek() == Some(&'_') {
            it.next();
            out.push('_');
            continue;
        }
        let hex: String = it.by_ref().take_while(|&x| x != '_').collect();
        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
    }
    Some(out)
}

pub fn metadata(state: &Arc<Prometheus>, req: Request) -> Reply {
    let p = Params::of(&req);
    let limit: i64 = p.get("limit").and_then(|l| l.parse().ok()).unwrap_or(-1);
    let metric = p.get("metric").filter(|m| !m.is_empty());
    let mut out = Map::new();
    for (name, m) in state.prom.metadata.snapshot() {
        if metric.is_some_and(|want| want != name) {
            continue;
        }
        if limit >= 0 && out.len() as i64 >= limit {
            break;
        }
        out.insert(
            name,
            json!([{"type": m.kind, "help": m.help, "unit": m.unit}]),
        );
    }
    json_reply(
        StatusCode::OK,
        json!({"status": "success", "data": out}).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grafana_u_escape() {
        assert_eq!(
            decode_u_escape("U__my_2e_metric").as_deref(),
            Some("my.metric")
        );
        assert_eq!(decode_u_escape("U__a__b").as_deref(), Some("a_b"));
        assert_eq!(decode_u_escape("job"), None);
    }
}
