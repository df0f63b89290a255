//! Grafana's Graphite datasource, replayed: the exact requests it sends (spec graphite.md §5
//! and grafana-and-peers.md §A2) — Save & test, segment browsing, tag editor autocomplete, the
//! function editor's `/functions`, panel queries wrapped in the refId `aliasSub`, Graphite
//! events annotations — asserting the fields Grafana reads. Data is written through OpenTSDB's
//! `/api/put`, so this also shows series from another API browsed under their Graphite paths.

#[path = "../tests/common/mod.rs"]
mod common;
use common::*;
use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

/// `demo.<host>.<metric>` ⇄ metric `demo.<metric>` + host tag; everything else is stored whole
/// (tagged series keep their tags).
const RULES: &str = r#"
[[graphite.rules]]
name = "demo"
match = "demo.{host}.{metric}"
metric = "demo.{metric}"
tags = { host = "{host}" }
"#;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// 180 points every 10 s up to now: demo.cpu web01 = 1, web02 = 2; disk.used dc1/web01 = 10,
/// dc2/web02 = 20.
fn start() -> (tempfile::TempDir, Server, u64) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, RULES).unwrap();
    let data = dir.path().join("data");
    let s = Server::start_with(&data, Some(&cfg));
    let end = now() - now() % 10;
    let mut pts = Vec::new();
    for i in 0..180u64 {
        let ts = end - i * 10;
        pts.push(
            json!({"metric": "demo.cpu", "timestamp": ts, "value": 1, "tags": {"host": "web01"}}),
        );
        pts.push(
            json!({"metric": "demo.cpu", "timestamp": ts, "value": 2, "tags": {"host": "web02"}}),
        );
        pts.push(
            json!({"metric": "demo.mem", "timestamp": ts, "value": 5, "tags": {"host": "web01"}}),
        );
        pts.push(json!({"metric": "disk.used", "timestamp": ts, "value": 10, "tags": {"datacenter": "dc1", "server": "web01"}}));
        pts.push(json!({"metric": "disk.used", "timestamp": ts, "value": 20, "tags": {"datacenter": "dc2", "server": "web02"}}));
    }
    let (code, body) = s.http("POST", "/api/put?sync", &Value::Array(pts).to_string());
    assert_eq!(code, 204, "{body}");
    (dir, s, end)
}

fn get(s: &Server, path: &str) -> Value {
    let (code, body) = http(&s.addr, "GET", path, "", &[]);
    assert_eq!(code, 200, "GET {path}: {body}");
    serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("GET {path}: not strict JSON ({e}): {body}"))
}

fn post_form(s: &Server, path: &str, body: &str) -> Value {
    let (code, resp) = http(&s.addr, "POST", path, body, &[FORM]);
    assert_eq!(code, 200, "POST {path} {body}: {resp}");
    serde_json::from_str(&resp)
        .unwrap_or_else(|e| panic!("POST {path}: not strict JSON ({e}): {resp}"))
}

#[test]
fn save_and_test_version_and_functions() {
    let (_d, s, _) = start();
    // Frontend "Save & test".
    let t = enc(r#"aliasSub(constantLine(100), "(^.*$)", "\1 A")"#);
    let r = get(
        &s,
        &format!("/render?target={t}&from=-1h&until=now&format=json&maxDataPoints=300"),
    );
    let series = r.as_array().unwrap();
    assert_eq!(series.len(), 1);
    // graphite-web 1.1.8 validates constantLine's `value` as a float: `str(100.0)`.
    assert_eq!(series[0]["target"], "100.0 A");
    let dps = series[0]["datapoints"].as_array().unwrap();
    assert_eq!(dps.len(), 3);
    assert!(dps.iter().all(|p| p[0] == 100.0 && p[1].is_u64()));
    // Backend mode (Go url.Values: keys sorted) health check.
    let (f, u) = (now() - 3600, now());
    let r = post_form(
        &s,
        "/render",
        &format!("format=json&from={f}&maxDataPoints=100&target=constantLine%28100%29&until={u}"),
    );
    assert_eq!(r[0]["datapoints"][0][0], 100.0);
    // `/version` must be a 1.1.x semver.
    let (code, v) = http(&s.addr, "GET", "/version", "", &[]);
    assert_eq!((code, v.as_str()), (200, "1.1.10"));
    // The function editor: strict JSON, params typed, seriesList first.
    let f = get(&s, "/functions");
    let a = &f["aliasSub"];
    assert_eq!(a["group"], "Alias");
    assert_eq!(a["params"][0]["type"], "seriesList");
    assert_eq!(
        a["params"][1],
        json!({"name": "search", "type": "string", "required": true})
    );
    assert_eq!(f["keepLastValue"]["params"][1]["default"], "inf");
    assert_eq!(get(&s, "/functions/sumSeries")["name"], "sumSeries");
}

#[test]
fn segment_browsing_and_expand() {
    let (_d, s, end) = start();
    let (f, u) = (end - 3600, end + 10);
    // Level 0: the raw body `query=*`; series from OpenTSDB appear under their Graphite paths,
    // tagged ones stay out of the tree.
    let r = post_form(&s, &format!("/metrics/find?from={f}&until={u}"), "query=*");
    assert_eq!(
        r,
        json!([{"text": "demo", "id": "demo", "allowChildren": 1, "expandable": 1, "leaf": 0}])
    );
    let r = post_form(
        &s,
        &format!("/metrics/find?from={f}&until={u}"),
        "query=demo.*",
    );
    let texts: Vec<(&str, i64)> = r
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["text"].as_str().unwrap(),
                n["expandable"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(texts, vec![("web01", 1), ("web02", 1)]);
    // Unencoded braces and commas in the body, as Grafana sends them.
    let r = post_form(&s, "/metrics/find", "query=demo.{web01,web02}.*");
    assert_eq!(
        r,
        json!([{"text": "cpu", "id": "demo.{web01,web02}.cpu", "allowChildren": 0, "expandable": 0, "leaf": 1},
               {"text": "mem", "id": "demo.{web01,web02}.mem", "allowChildren": 0, "expandable": 0, "leaf": 1}])
    );
    // The Go backend encodes the body properly; `leaf`/`expandable` must be integers.
    let r = post_form(
        &s,
        "/metrics/find",
        &format!("query={}", enc("demo.web0[1].*")),
    );
    assert_eq!(
        r.as_array()
            .unwrap()
            .iter()
            .map(|n| (n["id"].as_str().unwrap(), n["leaf"].as_u64().unwrap()))
            .collect::<Vec<_>>(),
        vec![("demo.web0[1].cpu", 1), ("demo.web0[1].mem", 1)]
    );
    // Typed text: `…*<typed>*`.
    let r = get(&s, "/metrics/find?query=demo.*02*");
    assert_eq!(r[0]["text"], "web02");
    let r = get(&s, "/metrics/find?query=demo.web0&format=completer");
    assert_eq!(
        r["metrics"][0],
        json!({"path": "demo.web01.", "name": "web01", "is_leaf": "0"})
    );
    // Template variable `expand(...)`.
    let r = get(
        &s,
        &format!(
            "/metrics/expand?query={}&from={f}&until={u}",
            enc("demo.*.cpu")
        ),
    );
    assert_eq!(r, json!({"results": ["demo.web01.cpu", "demo.web02.cpu"]}));
    assert_eq!(
        get(&s, "/metrics/index.json"),
        json!(["demo.web01.cpu", "demo.web01.mem", "demo.web02.cpu"])
    );
    // A missing query is graphite's 400.
    assert_eq!(http(&s.addr, "GET", "/metrics/find", "", &[]).0, 400);
}

#[test]
fn tag_editor_autocomplete() {
    let (_d, s, _) = start();
    let r = get(
        &s,
        &format!(
            "/tags/autoComplete/tags?expr={}&tagPrefix=&limit=5000",
            enc("name=disk.used")
        ),
    );
    assert_eq!(r, json!(["datacenter", "server"]));
    let r = get(
        &s,
        &format!(
            "/tags/autoComplete/values?tag=server&expr={}&valuePrefix=web&limit=5000",
            enc("name=disk.used")
        ),
    );
    assert_eq!(r, json!(["web01", "web02"]));
    let r = get(
        &s,
        &format!(
            "/tags/autoComplete/values?tag=datacenter&expr={}&expr={}&limit=0",
            enc("name=disk.used"),
            enc("server!=web01")
        ),
    );
    assert_eq!(r, json!(["dc2"]));
    // Backend mode forwards no `expr`, and unset values as `undefined` / `limit=0`.
    let r = get(
        &s,
        "/tags/autoComplete/tags?from=undefined&until=undefined&limit=0&tagPrefix=",
    );
    assert_eq!(r, json!(["datacenter", "name", "server"]));
    // Level 0 of the tag editor lists tag names too.
    let r = get(&s, "/tags/autoComplete/tags?tagPrefix=da&limit=5000");
    assert_eq!(r, json!(["datacenter"]));
    let r = get(
        &s,
        &format!("/tags/findSeries?expr={}", enc("datacenter=~dc")),
    );
    assert_eq!(
        r,
        json!([
            "disk.used;datacenter=dc1;server=web01",
            "disk.used;datacenter=dc2;server=web02"
        ])
    );
    let r = get(&s, "/tags/server");
    assert_eq!(
        r["values"],
        json!([{"value": "web01", "count": 1}, {"value": "web02", "count": 1}])
    );
    let r = post_form(
        &s,
        "/tags/tagMultiSeries",
        "path=a.b%3Bz%3D1%3Bb%3D2&path=c",
    );
    assert_eq!(r, json!(["a.b;b=2;z=1", "c"]));
}

#[test]
fn panel_queries_with_ref_id_wrapper() {
    let (_d, s, end) = start();
    let wrap = |t: &str, r: &str| enc(&format!(r#"aliasSub({t}, "(^.*$)", "\1 {r}")"#));
    let body = format!(
        "target={}&target={}&target={}&from=-30min&until=now&format=json&maxDataPoints=50",
        wrap("sumSeries(demo.*.cpu)", "A"),
        wrap("aliasByTags(seriesByTag('name=disk.used'), 'server')", "B"),
        wrap("scale(demo.web02.cpu, '0.5')", "C"),
    );
    let r = post_form(&s, "/render", &body);
    let series = r.as_array().unwrap();
    let names: Vec<&str> = series
        .iter()
        .map(|x| x["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "sumSeries(demo.*.cpu) A",
            "web01 B",
            "web02 B",
            "scale(demo.web02.cpu,0.5) C"
        ]
    );
    for x in series {
        let dps = x["datapoints"].as_array().unwrap();
        // maxDataPoints caps the points; timestamps are integers Grafana multiplies by 1000.
        assert!(!dps.is_empty() && dps.len() <= 50, "{} points", dps.len());
        assert!(dps
            .iter()
            .all(|p| p[1].is_u64() && (p[1].as_u64().unwrap() as i64 - end as i64).abs() <= 1800));
        assert!(x["tags"]["name"].is_string());
    }
    let nonnull = |i: usize| {
        series[i]["datapoints"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p[0].as_f64())
            .collect::<Vec<_>>()
    };
    assert!(nonnull(0).iter().all(|v| *v == 3.0) && nonnull(0).len() >= 40);
    assert!(nonnull(1).iter().all(|v| *v == 10.0));
    assert!(nonnull(2).iter().all(|v| *v == 20.0));
    assert!(nonnull(3).iter().all(|v| *v == 1.0));
    assert_eq!(
        series[1]["tags"],
        json!({"name": "disk.used", "datacenter": "dc1", "server": "web01"})
    );
    // Raw points at 10 s, `from` exclusive and `until` inclusive on the grid.
    let r = get(
        &s,
        &format!(
            "/render?target=demo.web01.cpu&from={}&until={end}&format=json",
            end - 60
        ),
    );
    let ts: Vec<u64> = r[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_u64().unwrap())
        .collect();
    assert_eq!(
        ts,
        vec![end - 50, end - 40, end - 30, end - 20, end - 10, end]
    );
    // Other formats.
    let (code, raw) = http(
        &s.addr,
        "GET",
        &format!(
            "/render?target=demo.web01.cpu&from={}&until={end}&format=raw",
            end - 20
        ),
        "",
        &[],
    );
    assert_eq!(
        (code, raw.as_str()),
        (
            200,
            format!("demo.web01.cpu,{},{},10|1.0,1.0\n", end - 10, end + 10).as_str()
        )
    );
    let (code, csv) = http(
        &s.addr,
        "GET",
        &format!(
            "/render?target=demo.web01.cpu&from={}&until={end}&format=csv",
            end - 10
        ),
        "",
        &[],
    );
    assert_eq!(code, 200);
    assert!(
        csv.starts_with("demo.web01.cpu,") && csv.ends_with(",1.0\r\n"),
        "{csv}"
    );
    // Unknown functions and bad times are graphite's 400 with a readable message.
    let (code, msg) = http(
        &s.addr,
        "GET",
        "/render?target=nope(demo.web01.cpu)&format=json",
        "",
        &[],
    );
    assert_eq!(code, 400);
    assert!(msg.contains("nope"), "{msg}");
    assert_eq!(
        http(
            &s.addr,
            "GET",
            "/render?target=demo.web01.cpu&from=-5m",
            "",
            &[]
        )
        .0,
        400
    );
}

#[test]
fn graphite_events_from_annotations() {
    let (_d, s, end) = start();
    let note = json!({"startTime": end - 100, "description": "deploy", "notes": "v2", "custom": {"tags": "deploy prod"}});
    let (code, body) = s.http("POST", "/api/annotation", &note.to_string());
    assert_eq!(code, 200, "{body}");
    let r = get(
        &s,
        &format!(
            "/events/get_data?from={}&until={}&tags=deploy",
            end - 3600,
            end
        ),
    );
    assert_eq!(
        r,
        json!([{"when": end - 100, "what": "deploy", "data": "v2", "tags": ["deploy", "prod"], "id": 1}])
    );
    assert_eq!(
        get(
            &s,
            &format!(
                "/events/get_data?from={}&until={}&tags=other",
                end - 3600,
                end
            )
        ),
        json!([])
    );
}

/// Carbon plaintext in, graphite-web out: both halves of the Graphite issue on one server.
#[test]
fn carbon_lines_are_browsed_and_rendered() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let plain = format!("127.0.0.1:{}", free_port());
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, format!("[server]\ngraphite_listen = \"{plain}\"\npickle_listen = \"\"\n[write]\nflush_interval_ms = 100\n{RULES}")).unwrap();
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let end = now() - now() % 10;
    let mut c = std::net::TcpStream::connect(&plain).unwrap();
    let mut lines = String::new();
    for i in 0..6u64 {
        let ts = end - 50 + i * 10;
        lines.push_str(&format!(
            "demo.web09.load {i} {ts}\ncarbon.agents.a.cpu 1.5 {ts}\ndisk.free;dc=x 5 {ts}\n"
        ));
    }
    c.write_all(lines.as_bytes()).unwrap();
    drop(c);
    // The index refreshes at most every 5 s: poll a little longer than that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let want = json!(["carbon.agents.a.cpu", "demo.web09.load"]);
    loop {
        let got = get(&s, "/metrics/index.json");
        if got == want {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "index: {got}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let r = get(
        &s,
        &format!(
            "/render?target=demo.web09.load&target={}&from={}&until={end}&format=json",
            enc("seriesByTag('dc=x')"),
            end - 60
        ),
    );
    let vals: Vec<Value> = r[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].clone())
        .collect();
    assert_eq!(
        vals,
        vec![
            json!(0.0),
            json!(1.0),
            json!(2.0),
            json!(3.0),
            json!(4.0),
            json!(5.0)
        ]
    );
    assert_eq!(r[1]["target"], "disk.free;dc=x");
    assert_eq!(r[1]["tags"], json!({"name": "disk.free", "dc": "x"}));
}
