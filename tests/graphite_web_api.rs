//! graphite-web 1.1.8's answers where tsgate's once differed (found by
//! `compat/graphite_web_compare`'s random and endpoint comparison): `/metrics/find`'s formats
//! and parameters, `/metrics/expand`, the tags API's limits, filters and errors, and `/render`'s
//! `tz`, `maxDataPoints` and formats. Carbon plaintext in, HTTP out, against a real server.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// 2023-11-14 22:00:00 UTC (23:00 in Berlin).
const T0: i64 = 1_700_000_000 - 1_700_000_000 % 3600;

struct Graphite {
    server: Server,
    _dir: tempfile::TempDir,
}

const PATHS: [&str; 5] = ["a.b.c1", "a.b.c2", "a.x.c1", "a.leaf", "a.leaf.x"];

/// The dotted series above and 104 tagged ones (tags `k000`…`k103`), six points each, every
/// 60 s from T0.
fn start() -> Graphite {
    let mut lines = String::new();
    for i in 0..6i64 {
        for (n, p) in PATHS.iter().enumerate() {
            lines.push_str(&format!("{p} {} {}\n", i + n as i64, T0 + i * 60));
        }
        for k in 0..104 {
            lines.push_str(&format!("t;k{k:03}=v;host=h{} 1 {}\n", k % 3, T0 + i * 60));
        }
    }
    let (server, dir) = start_carbon_with(&lines);
    let g = Graphite { server, _dir: dir };
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (code, body) = get(
            &g,
            &format!(
                "/render?target=a.*.*&format=json&from={}&until={}",
                T0 - 60,
                T0 + 300
            ),
        );
        let n = serde_json::from_str::<Value>(&body).ok().map_or(0, |v| {
            v.as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["datapoints"].as_array().unwrap().clone())
                .filter(|p| !p[0].is_null())
                .count()
        });
        let tagged = get(&g, "/tags/findSeries?expr=name%3Dt").1;
        if code == 200
            && n == 24
            && serde_json::from_str::<Value>(&tagged)
                .is_ok_and(|v| v.as_array().is_some_and(|a| a.len() == 104))
        {
            break;
        }
        assert!(Instant::now() < deadline, "points never arrived");
        std::thread::sleep(Duration::from_millis(100));
    }
    g
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn get(g: &Graphite, path: &str) -> (u16, String) {
    http(&g.server.addr, "GET", path, "", &[])
}

fn json_ok(g: &Graphite, path: &str) -> Value {
    let (code, body) = get(g, path);
    assert_eq!(code, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

fn find(g: &Graphite, q: &str, extra: &str) -> Value {
    json_ok(g, &format!("/metrics/find?query={}{extra}", enc(q)))
}

#[test]
fn find_answers_node_paths_positions_leaves_and_wildcards() {
    let g = start();
    // completer and json list every node under its own path (not the query's text).
    assert_eq!(
        find(&g, "a.*.c1", "&format=completer"),
        json!({"metrics": [
            {"path": "a.b.c1", "name": "c1", "is_leaf": "1"},
            {"path": "a.x.c1", "name": "c1", "is_leaf": "1"}]})
    );
    assert_eq!(
        find(&g, "a.*.c1", "&format=json"),
        json!([{"path": "a.b.c1", "is_leaf": true}, {"path": "a.x.c1", "is_leaf": true}])
    );
    // A path that is a leaf and a branch is two nodes, the branch first.
    assert_eq!(
        find(&g, "a.l*", "&format=json"),
        json!([{"path": "a.leaf", "is_leaf": false}, {"path": "a.leaf", "is_leaf": true}])
    );
    // nodelist: element `position` (Python indexing, -1 by default) of each node's path.
    assert_eq!(
        find(&g, "a.*.c1", "&format=nodelist"),
        json!({"nodes": ["c1"]})
    );
    for pos in ["1", "-2"] {
        assert_eq!(
            find(&g, "a.*.c1", &format!("&format=nodelist&position={pos}")),
            json!({"nodes": ["b", "x"]})
        );
    }
    assert_eq!(
        get(&g, "/metrics/find?query=a.*&format=nodelist&position=5").0,
        400
    );
    // treejson: one entry per name, its id the query's head; `wildcards` counts nodes.
    assert_eq!(
        find(&g, "a.*.c1", "&wildcards=1"),
        json!([
            {"text": "*", "id": "a.*.*", "allowChildren": 0, "expandable": 0, "leaf": 1},
            {"text": "c1", "id": "a.*.c1", "allowChildren": 0, "expandable": 0, "leaf": 1}])
    );
    let c = find(&g, "a.", "&format=completer&wildcards=1");
    let m = c["metrics"].as_array().unwrap();
    assert_eq!(m.last(), Some(&json!({"name": "*"})));
    assert_eq!(
        m.iter()
            .map(|x| x["path"].as_str().unwrap_or(""))
            .collect::<Vec<_>>(),
        vec!["a.b.", "a.leaf.", "a.leaf", "a.x.", ""]
    );
    // leavesOnly drops branches.
    assert_eq!(
        find(&g, "a.*", "&leavesOnly=1"),
        json!([{"text": "leaf", "id": "a.leaf", "allowChildren": 0, "expandable": 0, "leaf": 1}])
    );
    // graphite-web's int() parameters, an empty query and a bad time are 400s.
    for bad in [
        "/metrics/find?query=a.*&wildcards=true",
        "/metrics/find?query=",
        "/metrics/find?query=a.*&from=bogus",
        "/metrics/find?query=a.*&format=nosuch",
    ] {
        assert_eq!(get(&g, bad).0, 400, "{bad}");
    }
}

#[test]
fn expand_without_a_query_is_empty() {
    let g = start();
    assert_eq!(json_ok(&g, "/metrics/expand"), json!({"results": []}));
    assert_eq!(
        json_ok(&g, "/metrics/expand?groupByExpr=1"),
        json!({"results": {}})
    );
    assert_eq!(
        json_ok(&g, "/metrics/expand?query=a.*&leavesOnly=1"),
        json!({"results": ["a.leaf"]})
    );
}

#[test]
fn tags_limits_filters_and_errors() {
    let g = start();
    // `/tags` has no default limit (106 tags: host, name, k000…k103); autocomplete's is 100.
    assert_eq!(json_ok(&g, "/tags").as_array().unwrap().len(), 106);
    assert_eq!(
        json_ok(&g, "/tags/autoComplete/tags")
            .as_array()
            .unwrap()
            .len(),
        100
    );
    assert_eq!(
        json_ok(&g, "/tags?limit=2"),
        json!([{"tag": "host"}, {"tag": "k000"}])
    );
    assert_eq!(get(&g, "/tags?limit=x").0, 400);
    // A filter is anchored at the start unless it starts with `^` itself (then searched as
    // written: `^h|e` also finds the `e` in `name`).
    assert_eq!(json_ok(&g, "/tags?filter=h|e"), json!([{"tag": "host"}]));
    assert_eq!(
        json_ok(&g, "/tags?filter=%5Eh%7Ce"),
        json!([{"tag": "host"}, {"tag": "name"}])
    );
    assert_eq!(
        json_ok(&g, "/tags/host?filter=%5Eh%7C2"),
        json!({"tag": "host", "values": [
            {"value": "h0", "count": 35}, {"value": "h1", "count": 35}, {"value": "h2", "count": 34}]})
    );
    // Expressions that all match the empty string are findSeries' 400, in autocomplete too.
    let (code, body) = get(
        &g,
        &format!("/tags/autoComplete/tags?expr={}", enc("host=")),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains("At least one tagspec must not match the empty string"),
        "{body}"
    );
}

#[test]
fn render_tz_max_data_points_and_formats() {
    let g = start();
    let path = |extra: &str| {
        format!(
            "/render?target=a.b.c1&from={}&until={}{extra}",
            T0 - 60,
            T0 + 300
        )
    };
    // maxDataPoints that is not all digits is ignored, as graphite-web does.
    let v = json_ok(&g, &path("&format=json&maxDataPoints=-5"));
    assert_eq!(v[0]["datapoints"].as_array().unwrap().len(), 6);
    // `tz`: 23:00 on 2023-11-14 in Berlin is T0; CSV writes Berlin's clock.
    let (code, body) = get(
        &g,
        "/render?target=a.b.c1&from=23:00_20231114&until=23:02_20231114&tz=Europe/Berlin&format=csv",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        "a.b.c1,2023-11-14 23:01:00,1.0\r\na.b.c1,2023-11-14 23:02:00,2.0\r\n"
    );
    let (code, body) = get(&g, &path("&format=dygraph"));
    assert_eq!(code, 200, "{body}");
    assert!(
        body.starts_with(r#"{"labels" : ["Time", "a.b.c1"], "data" : [["#),
        "{body}"
    );
    let (code, body) = get(&g, &path("&format=rickshaw"));
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v[0]["datapoints"][1], json!({"x": T0 + 60, "y": 1.0}));
    let (code, body) = http_bytes(&g.server.addr, "GET", &path("&format=msgpack"), b"", &[]);
    assert_eq!(code, 200);
    assert_eq!(&body[..2], &[0x91, 0x89]);
}
