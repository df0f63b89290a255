//! Grafana's OpenTSDB datasource, replayed: the exact requests it sends (backend mode with
//! `tsdbVersion` 4, and the legacy frontend), asserting the fields Grafana reads.
//! Source of the request shapes: shared/spec/grafana-and-peers.md, section A3.

#[path = "../tests/common/mod.rs"]
mod common;
use common::*;
use serde_json::{json, Value};

const B: u64 = 1356998400;

fn seed(s: &Server) {
    let mut pts = Vec::new();
    for (h, host) in ["web01", "web02", "web03"].iter().enumerate() {
        for i in 0..120u64 {
            // A counter per host, growing 10/s, with one reset on web02.
            let v = if *host == "web02" && i >= 60 {
                (i - 60) * 600
            } else {
                i * 600 + h as u64
            };
            pts.push(
                json!({"metric": "cpu.usage_user", "timestamp": B + i * 60, "value": v,
                            "tags": {"host": host, "dc": if h < 2 { "lga" } else { "sjc" }}}),
            );
        }
    }
    let (code, body) = s.http("POST", "/api/put?sync", &Value::Array(pts).to_string());
    assert_eq!(code, 204, "{body}");
}

fn ok(s: &Server, method: &str, path: &str, body: &str) -> Value {
    let (code, resp) = s.http(method, path, body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {resp}");
    serde_json::from_str(&resp).unwrap()
}

#[test]
fn health_check_and_editor_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    seed(&s);
    // "Save & test": any 2xx passes.
    assert_eq!(
        ok(&s, "GET", "/api/suggest?type=metrics&q=cpu&max=1000", ""),
        json!(["cpu.usage_user"])
    );
    let aggs = ok(&s, "GET", "/api/aggregators", "");
    assert!(
        aggs.as_array().unwrap().iter().all(|a| a.is_string())
            && aggs.as_array().unwrap().contains(&json!("avg"))
    );
    let filters = ok(&s, "GET", "/api/config/filters", "");
    for k in [
        "literal_or",
        "iliteral_or",
        "not_literal_or",
        "not_iliteral_or",
        "wildcard",
        "iwildcard",
        "regexp",
    ] {
        assert!(filters.get(k).is_some(), "{k}");
    }
    // Template variables: metrics(prefix), suggest_tagk, suggest_tagv, tag_names, tag_values.
    assert_eq!(
        ok(&s, "GET", "/api/suggest?type=tagk&q=&max=1000", ""),
        json!(["dc", "host"])
    );
    assert_eq!(
        ok(&s, "GET", "/api/suggest?type=tagv&q=web&max=1000", ""),
        json!(["web01", "web02", "web03"])
    );
    let names = ok(
        &s,
        "GET",
        "/api/search/lookup?m=cpu.usage_user&limit=1000",
        "",
    );
    let mut keys: Vec<String> = names["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["tags"].as_object().unwrap().keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys, ["dc", "host"]);
    let vals = ok(
        &s,
        "GET",
        "/api/search/lookup?m=cpu.usage_user%7Bhost%3D*,dc%3Dlga%7D&limit=1000",
        "",
    );
    let mut hosts: Vec<&str> = vals["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tags"]["host"].as_str().unwrap())
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["web01", "web02"]);
}

/// Every value Grafana's Go backend decodes must be a finite number.
fn assert_finite_arrays(v: &Value) {
    for s in v.as_array().unwrap() {
        assert!(
            s["metric"].is_string() && s["tags"].is_object() && s["aggregateTags"].is_array(),
            "{s}"
        );
        for p in s["dps"].as_array().unwrap() {
            let p = p.as_array().unwrap();
            assert!(p[0].is_u64(), "{p:?}");
            assert!(p[1].as_f64().is_some_and(f64::is_finite), "{p:?}");
        }
    }
}

#[test]
fn backend_mode_queries_with_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    seed(&s);
    let (start, end) = (B * 1000, (B + 7200) * 1000);
    // Panel: avg with downsampling, tags map with `*` (grouped per host), millisecond inputs.
    let r = ok(&s, "POST", "/api/query?arrays=true", &json!({"start": start, "end": end, "queries": [
        {"metric": "cpu.usage_user", "aggregator": "avg", "downsample": "5m-avg", "tags": {"host": "*"}}]}).to_string());
    assert_finite_arrays(&r);
    assert_eq!(r.as_array().unwrap().len(), 3);
    assert_eq!(
        r[0]["dps"].as_array().unwrap().len(),
        24,
        "two hours of 5 m buckets"
    );
    assert_eq!(
        r[0]["dps"][0],
        json!([B, 1200.0]),
        "avg of 0, 600, …, 2400 at +0..+4 min"
    );
    // Rate with counter options and filters (2.2+ editor), grouped by dc.
    let r = ok(&s, "POST", "/api/query?arrays=true", &json!({"start": start, "end": end, "queries": [
        {"metric": "cpu.usage_user", "aggregator": "sum", "rate": true,
         "rateOptions": {"counter": true, "counterMax": 100000, "resetValue": 1000, "dropResets": false},
         "filters": [{"type": "wildcard", "tagk": "dc", "filter": "*", "groupBy": true},
                     {"type": "literal_or", "tagk": "host", "filter": "web01|web02", "groupBy": false}]}]}).to_string());
    assert_finite_arrays(&r);
    assert_eq!(
        r.as_array().unwrap().len(),
        1,
        "only lga hosts pass the filter"
    );
    assert_eq!(r[0]["tags"], json!({"dc": "lga"}));
    assert_eq!(r[0]["aggregateTags"], json!(["host"]));
    let rates: Vec<f64> = r[0]["dps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_f64().unwrap())
        .collect();
    assert_eq!(rates[0], 20.0, "10/s on each of two hosts");
    assert!(
        rates.iter().all(|&x| x <= 20.0),
        "the reset is zeroed by resetValue, not a spike"
    );
}

#[test]
fn legacy_frontend_query_with_object_dps() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    seed(&s);
    // An annotation panel reads `description` and `startTime` of global and series notes.
    ok(
        &s,
        "POST",
        "/api/annotation",
        &json!({"startTime": B + 600, "description": "release 1.2"}).to_string(),
    );
    // The legacy frontend omits `end` for "now" and asks for global annotations.
    let r = ok(&s, "POST", "/api/query", &json!({"start": B * 1000, "queries": [
        {"metric": "cpu.usage_user", "aggregator": "sum", "downsample": "10m-max", "tags": {"dc": "sjc"}}],
        "msResolution": false, "globalAnnotations": true}).to_string());
    let dps = r[0]["dps"].as_object().unwrap();
    assert_eq!(dps.len(), 12);
    let lens: Vec<usize> = dps.keys().map(|k| k.len()).collect();
    assert!(
        lens.iter().all(|&l| l == 10),
        "second keys of one width sort right as strings"
    );
    assert!(dps.values().all(|v| v.as_f64().is_some_and(f64::is_finite)));
    assert_eq!(r[0]["globalAnnotations"][0]["description"], "release 1.2");
    assert_eq!(r[0]["globalAnnotations"][0]["startTime"], B + 600);
    // Unknown metric: OpenTSDB's 400 and message, which Grafana shows.
    let (code, body) = s.http(
        "POST",
        "/api/query",
        &json!({"start": B, "queries": [{"metric": "nope", "aggregator": "sum"}]}).to_string(),
    );
    assert_eq!(code, 400);
    let e: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(e["error"]["message"], "No such name for 'metrics': 'nope'");
}
