//! `/metrics/find`, `/metrics/expand`, `/metrics/index.json` over the series index (spec §2.5,
//! §2.6). Only the dotted tree is browsed: tagged series are reached with `seriesByTag`.

use super::error::Error;
use super::{json_or_jsonp, now_s, Params};
use crate::query::graphite::attime::parse_attime;
use crate::query::graphite::glob::{GlobError, PathGlob};
use crate::query::graphite::index::Entry;
use crate::server::http::Reply;
use crate::server::state::GraphiteWeb;
use http::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One node a query matches, as graphite-web's finder yields it: the full path (the matched
/// prefix of a series' path, not the query text) and whether it is a leaf (a series ends
/// there) or a branch (series go on below). A path that is both is two nodes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Node {
    name: String,
    path: String,
    leaf: bool,
}

/// The nodes a query matches in graphite-web's order: by name, then (where graphite-web's
/// order is random) by path, a branch before the leaf of the same path.
fn matches(entries: &[Entry], query: &str, leaves_only: bool) -> Result<Vec<Node>, GlobError> {
    let glob = PathGlob::new(query)?;
    let depth = glob.elements.len();
    let mut seen: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for e in entries.iter().filter(|e| !e.is_tagged()) {
        let nodes: Vec<&str> = e.path.split('.').collect();
        if !glob.matches_prefix(&nodes) {
            continue;
        }
        let slot = seen.entry(nodes[..depth].join(".")).or_default();
        if nodes.len() == depth {
            slot.0 = true;
        } else {
            slot.1 = true;
        }
    }
    let mut out = Vec::new();
    for (path, (leaf, branch)) in seen {
        let name = path.rsplit('.').next().unwrap_or_default().to_string();
        if branch && !leaves_only {
            out.push(Node {
                name: name.clone(),
                path: path.clone(),
                leaf: false,
            });
        }
        if leaf {
            out.push(Node { name, path, leaf });
        }
    }
    out.sort_by(|a, b| (&a.name, &a.path, a.leaf).cmp(&(&b.name, &b.path, b.leaf)));
    Ok(out)
}

/// graphite-web's integer parameters of the find view (`int()` of the value; else a 400).
fn int_param(p: &Params, k: &str, default: i64) -> Result<i64, Error> {
    match p.get(k) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| {
            Error::Param(format!(
                "Invalid int value '{v}' for param {k}: invalid literal for int() with base 10"
            ))
        }),
    }
}

pub fn find(state: &GraphiteWeb, p: &Params) -> Result<Reply, Error> {
    let Some(query) = p.get("query").map(str::to_string) else {
        return Err(Error::Param("Missing required parameter 'query'".into()));
    };
    let format = p.get("format").unwrap_or("treejson");
    let leaves_only = int_param(p, "leavesOnly", 0)? != 0;
    let wildcards = int_param(p, "wildcards", 0)? != 0;
    let position = int_param(p, "position", -1)?;
    let variants = int_param(p, "automatic_variants", 0)? != 0;
    // The window only checks its words: every series is listed whatever its points' times
    // (graphite-web's whisper finder too); `-1` means unset.
    let now = match p.get("now") {
        Some(n) => parse_attime(n, now_s())?,
        None => now_s(),
    };
    for k in ["from", "until"] {
        if let Some(v) = p.get(k).filter(|v| *v != "-1") {
            parse_attime(v, now)?;
        }
    }
    if query.is_empty() {
        return Err(Error::Param("Required parameter 'query' is empty".into()));
    }
    if !matches!(format, "treejson" | "completer" | "json" | "nodelist") {
        return Err(Error::Param("Invalid value for 'format' parameter".into()));
    }
    // treejson's ids: the query up to its last dot, whatever the globs before it.
    let base_path = match query.rsplit_once('.') {
        Some((head, _)) => format!("{head}."),
        None => String::new(),
    };
    // The completer appends `*` to what was typed; `..` means "any node".
    let query = if format == "completer" {
        let mut q = query.replace("..", "*.");
        if !q.ends_with('*') {
            q.push('*');
        }
        if variants {
            // `a,b` typed in a node means `{a,b}`.
            q = q
                .split('.')
                .map(|n| {
                    if n.contains(',') && !n.contains('{') {
                        format!("{{{n}}}")
                    } else {
                        n.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(".");
        }
        q
    } else {
        query
    };
    let entries = state_entries(state)?;
    let nodes = matches(&entries, &query, leaves_only)?;
    let jsonp = p.get("jsonp");
    let body = match format {
        "completer" => {
            let mut metrics: Vec<Value> = nodes
                .iter()
                .map(|n| {
                    let path = if n.leaf {
                        n.path.clone()
                    } else {
                        format!("{}.", n.path)
                    };
                    json!({"path": path, "name": n.name, "is_leaf": if n.leaf { "1" } else { "0" }})
                })
                .collect();
            if wildcards && metrics.len() > 1 {
                metrics.push(json!({"name": "*"}));
            }
            json!({ "metrics": metrics })
        }
        "json" => {
            let mut v: Vec<&Node> = nodes.iter().collect();
            // By path; a path that is a branch and a leaf lists the branch first.
            v.sort_by(|a, b| (&a.path, a.leaf).cmp(&(&b.path, b.leaf)));
            Value::Array(
                v.into_iter()
                    .map(|n| json!({"path": n.path, "is_leaf": n.leaf}))
                    .collect(),
            )
        }
        "nodelist" => {
            let mut set: Vec<String> = Vec::new();
            for n in &nodes {
                let parts: Vec<&str> = n.path.split('.').collect();
                let len = parts.len() as i64;
                let at = if position < 0 {
                    len + position
                } else {
                    position
                };
                // Python's `nodes[position]`: out of range fails the request.
                if !(0..len).contains(&at) {
                    return Err(Error::Param(format!(
                        "position {position} is out of range for {}",
                        n.path
                    )));
                }
                set.push(parts[at as usize].to_string());
            }
            set.sort();
            set.dedup();
            json!({ "nodes": set })
        }
        _ => {
            // treejson: branches, then leaves, each by name, one entry per name (the first
            // node of that name: a branch before the leaf of one path); with `wildcards` and
            // more than one node, a `*` entry first (a branch if any node is one).
            let node = |text: &str, leaf: bool| {
                let b = if leaf { 0 } else { 1 };
                json!({"text": text, "id": format!("{base_path}{text}"), "allowChildren": b, "expandable": b, "leaf": 1 - b})
            };
            let mut out: Vec<Value> = Vec::new();
            if wildcards && nodes.len() > 1 {
                out.push(node("*", nodes.iter().all(|n| n.leaf)));
            }
            let mut names = std::collections::BTreeSet::new();
            let firsts: Vec<&Node> = nodes.iter().filter(|n| names.insert(&n.name)).collect();
            out.extend(
                firsts
                    .iter()
                    .filter(|n| !n.leaf)
                    .map(|n| node(&n.name, false)),
            );
            out.extend(
                firsts
                    .iter()
                    .filter(|n| n.leaf)
                    .map(|n| node(&n.name, true)),
            );
            Value::Array(out)
        }
    };
    Ok(json_or_jsonp(StatusCode::OK, body.to_string(), jsonp))
}

fn state_entries(state: &GraphiteWeb) -> Result<std::sync::Arc<Vec<Entry>>, Error> {
    Ok(state.engine.graphite_index.snapshot(&state.engine)?)
}

pub fn expand(state: &GraphiteWeb, p: &Params) -> Result<Reply, Error> {
    let queries = p.all("query");
    let leaves_only = int_param(p, "leavesOnly", 0)? != 0;
    let group = int_param(p, "groupByExpr", 0)? != 0;
    // No query is no result (graphite-web answers `{"results": []}`), not an error.
    let entries = if queries.is_empty() {
        Default::default()
    } else {
        state_entries(state)?
    };
    let mut grouped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for q in &queries {
        let mut paths: Vec<String> = matches(&entries, q, leaves_only)?
            .into_iter()
            .map(|n| n.path)
            .collect();
        paths.sort();
        paths.dedup();
        grouped.insert(q.to_string(), paths);
    }
    let body = if group {
        json!({ "results": grouped })
    } else {
        let mut all: Vec<String> = grouped.into_values().flatten().collect();
        all.sort();
        all.dedup();
        json!({ "results": all })
    };
    Ok(json_or_jsonp(
        StatusCode::OK,
        body.to_string(),
        p.get("jsonp"),
    ))
}

pub fn index_json(state: &GraphiteWeb, p: &Params) -> Result<Reply, Error> {
    let entries = state_entries(state)?;
    let leaves: Vec<&str> = entries
        .iter()
        .filter(|e| !e.is_tagged())
        .map(|e| e.path.as_str())
        .collect();
    Ok(json_or_jsonp(
        StatusCode::OK,
        json!(leaves).to_string(),
        p.get("jsonp"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(p: &str) -> Entry {
        Entry {
            path: p.into(),
            metric: p.into(),
            tags: vec![],
            metric_uid: None,
        }
    }

    #[test]
    fn nodes_are_full_paths_in_graphite_web_order() {
        let es = vec![
            e("demo.web01.cpu"),
            e("demo.web02.cpu"),
            e("demo.db01.cpu"),
            e("demo.aleaf"),
            e("demo.aleaf.x"),
            e("t;a=1"),
        ];
        let m = |q: &str, leaves_only: bool| {
            matches(&es, q, leaves_only)
                .unwrap()
                .into_iter()
                .map(|n| (n.path, n.leaf))
                .collect::<Vec<_>>()
        };
        // A path that is a leaf and a branch is two nodes, the branch first; by name.
        assert_eq!(
            m("demo.*", false),
            vec![
                ("demo.aleaf".to_string(), false),
                ("demo.aleaf".to_string(), true),
                ("demo.db01".to_string(), false),
                ("demo.web01".to_string(), false),
                ("demo.web02".to_string(), false),
            ]
        );
        assert_eq!(m("demo.*", true), vec![("demo.aleaf".to_string(), true)]);
        // A glob before the last node: each match keeps its own path (graphite-web's
        // completer, json and nodelist answers show them), all named `cpu`.
        assert_eq!(
            m("demo.{web01,db01}.cpu", false),
            vec![
                ("demo.db01.cpu".to_string(), true),
                ("demo.web01.cpu".to_string(), true),
            ]
        );
        assert_eq!(m("*", false), vec![("demo".to_string(), false)]);
    }
}
