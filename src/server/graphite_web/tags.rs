//! The tags API (spec §2.7) over the series index: every series' Graphite tags (its path's
//! `;k=v` tags plus `name`), matched by `seriesByTag` expressions (`query::graphite::tags`).
//! The index is the store itself, so `tagSeries`/`tagMultiSeries` only normalise, and
//! `delSeries` deletes the series' data (with `admin.enabled = true`).

use super::error::Error;
use super::{json_or_jsonp, Params};
use crate::query::graphite::naming;
use crate::query::graphite::tags::{find_series, matching, parse_all, TagExpr, TagExprError};
use crate::server::http::Reply;
use crate::server::state::GraphiteWeb;
use http::{Method, StatusCode};
use regex::Regex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The `limit` parameter: `default` when absent; 0 (or less) means no limit, as Grafana sends
/// it for "unset"; anything but an integer is graphite-web's 400 (`int()` fails).
fn limit(p: &Params, default: Option<usize>) -> Result<Option<usize>, Error> {
    match p.get("limit").filter(|l| !l.is_empty()) {
        None => Ok(default),
        Some(l) => match l.trim().parse::<i64>() {
            Ok(n) if n > 0 => Ok(Some(n as usize)),
            Ok(_) => Ok(None),
            Err(_) => Err(Error::Param(format!(
                "invalid literal for int() with base 10: '{l}'"
            ))),
        },
    }
}

/// graphite-web's autocomplete default (`TAGDB_AUTOCOMPLETE_LIMIT`); `/tags` and
/// `/tags/<tag>` have none.
const AUTOCOMPLETE_LIMIT: Option<usize> = Some(100);

pub fn route(state: &GraphiteWeb, method: &Method, path: &str, p: &Params) -> Result<Reply, Error> {
    let post_only = matches!(
        path,
        "/tags/tagSeries" | "/tags/tagMultiSeries" | "/tags/delSeries"
    );
    if post_only && method != Method::POST {
        return Err(Error::PostOnly);
    }
    let jsonp = p.get("jsonp");
    match path {
        "/tags/tagSeries" => {
            let Some(path) = p.get("path") else {
                return Err(Error::Param("no path specified".into()));
            };
            let (n, t) = naming::parse_tagged(path)?;
            Ok(json_or_jsonp(
                StatusCode::OK,
                json!(naming::canonical(&n, &t)).to_string(),
                jsonp,
            ))
        }
        "/tags/tagMultiSeries" => {
            let mut out = Vec::new();
            for path in p.all("path") {
                let (n, t) = naming::parse_tagged(path).map_err(Error::BatchPath)?;
                out.push(naming::canonical(&n, &t));
            }
            Ok(json_or_jsonp(StatusCode::OK, json!(out).to_string(), jsonp))
        }
        "/tags/delSeries" => del_series(state, p),
        _ => read_only(state, path, p),
    }
}

/// `/tags/delSeries`: deletes every point of each `path` (dotted or tagged), with
/// `admin.enabled = true`; `true` once done, as graphite-web answers.
fn del_series(state: &GraphiteWeb, p: &Params) -> Result<Reply, Error> {
    if !state.settings.admin {
        return Err(Error::DeleteDisabled);
    }
    let paths = p.all("path");
    if paths.is_empty() {
        return Err(Error::Param("no path specified".into()));
    }
    // Points acknowledged before the request are in the store first, so they are deleted too
    // (this runs on a blocking thread of the runtime).
    tokio::runtime::Handle::current().block_on(state.ingest.writer.publish())?;
    let entries = state.engine.graphite_index.snapshot(&state.engine)?;
    for path in paths {
        // Tagged paths are matched in their canonical form (tags sorted), as they are indexed.
        let want = match naming::parse_tagged(path) {
            Ok((n, t)) if path.contains(';') => naming::canonical(&n, &t),
            _ => path.to_string(),
        };
        for e in entries.iter().filter(|e| e.path == want) {
            let d = state.engine.query.delete_exact(&e.metric, &e.tags)?;
            state.cardinality.forget(&d.series);
        }
    }
    state.engine.graphite_index.invalidate();
    Ok(json_or_jsonp(StatusCode::OK, "true".into(), p.get("jsonp")))
}

fn read_only(state: &GraphiteWeb, path: &str, p: &Params) -> Result<Reply, Error> {
    let jsonp = p.get("jsonp");
    let entries = state.engine.graphite_index.snapshot(&state.engine)?;
    let exprs: Vec<String> = p.all("expr").into_iter().map(str::to_string).collect();
    let selected = |exprs: &[String]| -> Result<Vec<BTreeMap<String, String>>, Error> {
        if exprs.is_empty() {
            return Ok(entries.iter().map(|e| e.graphite_tags()).collect());
        }
        let parsed = parse_all(exprs)?;
        Ok(matching(&entries, &parsed)
            .into_iter()
            .map(|(_, t)| t)
            .collect())
    };
    // Anchored at the start unless it already is (graphite-web's `^(…)`); a filter that
    // starts with `^` is searched as written, so `^a|b` also matches a `b` anywhere.
    let filter = |p: &Params| -> Result<Option<Regex>, Error> {
        Ok(p.get("filter")
            .filter(|f| !f.is_empty())
            .map(|f| {
                if f.starts_with('^') {
                    Regex::new(f)
                } else {
                    Regex::new(&format!("^(?:{f})"))
                }
            })
            .transpose()?)
    };
    let reply = |v: Value| Ok(json_or_jsonp(StatusCode::OK, v.to_string(), jsonp));
    match path {
        "/tags" => {
            let f = filter(p)?;
            let all: BTreeSet<String> = entries
                .iter()
                .flat_map(|e| e.graphite_tags().into_keys())
                .collect();
            let v: Vec<Value> = all
                .into_iter()
                .filter(|t| f.as_ref().is_none_or(|r| r.is_match(t)))
                .take(limit(p, None)?.unwrap_or(usize::MAX))
                .map(|t| json!({"tag": t}))
                .collect();
            reply(Value::Array(v))
        }
        "/tags/findSeries" => {
            let v = find_series(&entries, &exprs)?;
            reply(json!(v.iter().map(|e| e.path.as_str()).collect::<Vec<_>>()))
        }
        "/tags/autoComplete/tags" => {
            let named: BTreeSet<String> = exprs
                .iter()
                .filter_map(|x| TagExpr::parse(x).ok())
                .map(|x| x.tag)
                .collect();
            let prefix = p.get("tagPrefix").unwrap_or("");
            // With expressions, graphite-web's findSeries runs first: a list that only
            // matches the empty string is its 400.
            if !exprs.is_empty() && parse_all(&exprs)?.iter().all(|x| x.matches("")) {
                return Err(TagExprError::MatchesEverything.into());
            }
            let all: BTreeSet<String> = selected(&exprs)?
                .into_iter()
                .flat_map(|t| t.into_keys())
                .filter(|t| t.starts_with(prefix) && !named.contains(t))
                .collect();
            reply(json!(all
                .into_iter()
                .take(limit(p, AUTOCOMPLETE_LIMIT)?.unwrap_or(usize::MAX))
                .collect::<Vec<_>>()))
        }
        "/tags/autoComplete/values" => {
            let Some(tag) = p.get("tag") else {
                return Err(Error::Param("no tag specified".into()));
            };
            let prefix = p.get("valuePrefix").unwrap_or("");
            let all: BTreeSet<String> = selected(&exprs)?
                .into_iter()
                .filter_map(|mut t| t.remove(tag))
                .filter(|v| v.starts_with(prefix))
                .collect();
            reply(json!(all
                .into_iter()
                .take(limit(p, AUTOCOMPLETE_LIMIT)?.unwrap_or(usize::MAX))
                .collect::<Vec<_>>()))
        }
        t if t.starts_with("/tags/") => {
            let tag = &t["/tags/".len()..];
            let f = filter(p)?;
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for mut tags in entries.iter().map(|e| e.graphite_tags()) {
                if let Some(v) = tags.remove(tag) {
                    *counts.entry(v).or_default() += 1;
                }
            }
            if counts.is_empty() {
                return reply(Value::Null);
            }
            let values: Vec<Value> = counts
                .into_iter()
                .filter(|(v, _)| f.as_ref().is_none_or(|r| r.is_match(v)))
                .take(limit(p, None)?.unwrap_or(usize::MAX))
                .map(|(v, c)| json!({"value": v, "count": c}))
                .collect();
            reply(json!({"tag": tag, "values": values}))
        }
        _ => Err(Error::NotFound),
    }
}
