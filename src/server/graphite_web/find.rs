//! `/metrics/find`, `/metrics/expand`, `/metrics/index.json` over the series index (spec §2.5,
//! §2.6). Only the dotted tree is browsed: tagged series are reached with `seriesByTag`.

use super::error::Error;
use super::{json_or_jsonp, Params};
use crate::query::graphite::glob::{split_elements, GlobError, PathGlob};
use crate::query::graphite::index::Entry;
use crate::server::http::Reply;
use crate::server::state::GraphiteWeb;
use http::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Node name → is it a leaf / a branch (a name can be both).
fn children(entries: &[Entry], query: &str) -> Result<BTreeMap<String, (bool, bool)>, GlobError> {
    let glob = PathGlob::new(query)?;
    let depth = glob.elements.len();
    let mut out: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for e in entries.iter().filter(|e| !e.is_tagged()) {
        let nodes: Vec<&str> = e.path.split('.').collect();
        if !glob.matches_prefix(&nodes) {
            continue;
        }
        let slot = out.entry(nodes[depth - 1].to_string()).or_default();
        if nodes.len() == depth {
            slot.0 = true;
        } else {
            slot.1 = true;
        }
    }
    Ok(out)
}

pub fn find(state: &GraphiteWeb, p: &Params) -> Result<Reply, Error> {
    let Some(query) = p.get("query").map(str::to_string) else {
        return Err(Error::Param("Missing required parameter 'query'".into()));
    };
    let format = p.get("format").unwrap_or("treejson");
    if !matches!(format, "treejson" | "completer" | "json" | "nodelist") {
        return Err(Error::Param(format!(
            "Invalid value for 'format': {format}"
        )));
    }
    let entries = state_entries(state)?;
    // The completer appends `*` to what was typed; `..` means "any node".
    let query = if format == "completer" {
        format!("{}*", query.replace("..", "*."))
    } else {
        query
    };
    let nodes = children(&entries, &query)?;
    let elems = split_elements(&query);
    let prefix = if elems.len() > 1 {
        format!("{}.", elems[..elems.len() - 1].join("."))
    } else {
        String::new()
    };
    let jsonp = p.get("jsonp");
    let body = match format {
        "completer" => {
            let metrics: Vec<Value> = nodes
                .iter()
                .flat_map(|(name, (leaf, branch))| {
                    let mut v = Vec::new();
                    if *branch {
                        v.push(json!({"path": format!("{prefix}{name}."), "name": name, "is_leaf": "0"}));
                    }
                    if *leaf {
                        v.push(json!({"path": format!("{prefix}{name}"), "name": name, "is_leaf": "1"}));
                    }
                    v
                })
                .collect();
            json!({ "metrics": metrics })
        }
        "json" => {
            let mut v: Vec<(String, bool)> = nodes
                .iter()
                .flat_map(|(n, (leaf, branch))| {
                    let mut v = Vec::new();
                    if *branch {
                        v.push((format!("{prefix}{n}"), false));
                    }
                    if *leaf {
                        v.push((format!("{prefix}{n}"), true));
                    }
                    v
                })
                .collect();
            v.sort();
            Value::Array(
                v.into_iter()
                    .map(|(path, leaf)| json!({"path": path, "is_leaf": leaf}))
                    .collect(),
            )
        }
        "nodelist" => {
            let pos: usize = p
                .get("position")
                .and_then(|x| x.parse().ok())
                .unwrap_or(elems.len() - 1);
            let mut set: Vec<String> = nodes
                .keys()
                .map(|n| format!("{prefix}{n}"))
                .filter_map(|path| path.split('.').nth(pos).map(str::to_string))
                .collect();
            set.sort();
            set.dedup();
            json!({ "nodes": set })
        }
        _ => {
            // treejson: branches first, then leaves, each by name; a name that is both shows
            // once, as a branch (graphite-web de-duplicates by name).
            let mut out: Vec<Value> = Vec::new();
            let node = |name: &str, leaf: bool| {
                let b = if leaf { 0 } else { 1 };
                json!({"text": name, "id": format!("{prefix}{name}"), "allowChildren": b, "expandable": b, "leaf": 1 - b})
            };
            if p.truthy("wildcards") && nodes.len() > 1 {
                let any_branch = nodes.values().any(|(_, b)| *b);
                out.push(node("*", !any_branch));
            }
            out.extend(
                nodes
                    .iter()
                    .filter(|(_, (_, b))| *b)
                    .map(|(n, _)| node(n, false)),
            );
            out.extend(
                nodes
                    .iter()
                    .filter(|(_, (l, b))| *l && !*b)
                    .map(|(n, _)| node(n, true)),
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
    if queries.is_empty() {
        return Err(Error::Param("Missing required parameter 'query'".into()));
    }
    let entries = state_entries(state)?;
    let leaves_only = p.truthy("leavesOnly");
    let mut grouped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for q in &queries {
        let nodes = children(&entries, q)?;
        let elems = split_elements(q);
        // Full paths: the matched prefix of each series, not the query text.
        let glob = PathGlob::new(q).expect("compiled above");
        let mut paths: Vec<String> = entries
            .iter()
            .filter(|e| !e.is_tagged())
            .filter_map(|e| {
                let n: Vec<&str> = e.path.split('.').collect();
                (glob.matches_prefix(&n) && (!leaves_only || n.len() == elems.len()))
                    .then(|| n[..elems.len()].join("."))
            })
            .collect();
        let _ = nodes;
        paths.sort();
        paths.dedup();
        grouped.insert(q.to_string(), paths);
    }
    let body = if p.truthy("groupByExpr") {
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
    fn children_mark_leaves_and_branches() {
        let es = vec![
            e("demo.web01.cpu"),
            e("demo.web02.cpu"),
            e("demo.db01.cpu"),
            e("demo.aleaf"),
            e("demo.aleaf.x"),
            e("t;a=1"),
        ];
        let c = children(&es, "demo.*").unwrap();
        assert_eq!(
            c.keys().collect::<Vec<_>>(),
            vec!["aleaf", "db01", "web01", "web02"]
        );
        assert_eq!(c["aleaf"], (true, true));
        assert_eq!(c["web01"], (false, true));
        let c = children(&es, "demo.{web01,db01}.cpu").unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(
            children(&es, "*").unwrap().keys().collect::<Vec<_>>(),
            vec!["demo"]
        );
    }
}
