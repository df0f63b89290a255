//! The OpenTSDB query API over HTTP, on the worked examples of OpenTSDB's docs and tests,
//! on both storage backends.

mod common;
use common::*;
use serde_json::{json, Value};

const B: u64 = 1356998400;

on_both_backends!(
    aggregation_grouping_and_filters,
    downsampling_rate_and_output_forms,
    suggest_lookup_last_and_listings,
    delete_only_when_allowed,
    annotations_come_back_with_query_results,
    calendar_downsampling_in_a_time_zone,
    many_series_read_in_shares_come_back_once,
);

/// A point to put: (metric, timestamp in s, value as written, tags).
type Put<'a> = (&'a str, u64, &'a str, &'a [(&'a str, &'a str)]);

fn put(s: &Server, pts: &[Put]) {
    let body: Vec<Value> = pts
        .iter()
        .map(|(m, t, v, tags)| {
            let tags: serde_json::Map<String, Value> = tags
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            json!({"metric": m, "timestamp": t, "value": v, "tags": tags})
        })
        .collect();
    let (code, resp) = s.http("POST", "/api/put?sync", &Value::Array(body).to_string());
    assert_eq!(code, 204, "{resp}");
}

fn get(s: &Server, path: &str) -> Value {
    let (code, body) = s.http("GET", path, "");
    assert_eq!(code, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn post(s: &Server, body: Value) -> Value {
    let (code, resp) = s.http("POST", "/api/query", &body.to_string());
    assert_eq!(code, 200, "{body}: {resp}");
    serde_json::from_str(&resp).unwrap()
}

/// The aggregators page's two series: A every 20 s from +10, B every 20 s from +0.
fn docs_data(s: &Server) {
    let a: &[(&str, &str)] = &[("host", "a"), ("dc", "lga")];
    let b: &[(&str, &str)] = &[("host", "b"), ("dc", "lga")];
    let c: &[(&str, &str)] = &[("host", "c"), ("dc", "sjc"), ("extra", "x")];
    put(
        s,
        &[
            ("m", B + 10, "5", a),
            ("m", B + 30, "15", a),
            ("m", B + 50, "5", a),
            ("m", B, "10", b),
            ("m", B + 20, "20", b),
            ("m", B + 40, "10", b),
            ("m", B + 60, "20", b),
            ("m", B + 3600, "1.5", c),
        ],
    );
}

fn dps(v: &Value) -> Vec<(String, Value)> {
    v["dps"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn aggregation_grouping_and_filters(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    docs_data(&s);
    let q = |m: &str| get(&s, &format!("/api/query?start={B}&end={}&m={m}", B + 100));

    let sum = q("sum:m{dc=lga}");
    assert_eq!(sum.as_array().unwrap().len(), 1);
    assert_eq!(sum[0]["tags"], json!({"dc": "lga"}));
    assert_eq!(sum[0]["aggregateTags"], json!(["host"]));
    let vals: Vec<i64> = dps(&sum[0])
        .iter()
        .map(|(_, v)| v.as_i64().unwrap())
        .collect();
    assert_eq!(vals, vec![10, 20, 30, 30, 20, 20, 20]);
    let zim: Vec<i64> = dps(&q("zimsum:m{dc=lga}")[0])
        .iter()
        .map(|(_, v)| v.as_i64().unwrap())
        .collect();
    assert_eq!(zim, vec![10, 5, 20, 15, 10, 5, 20]);
    // OpenTSDB reads whole hours and keeps [start, end] only when writing the answer: at 20
    // a is interpolated from its point at 10 (before the start), at 40 from its point at 50
    // (after the end), as in TestTsdbQueryQueries' interpolation over the scanned rows.
    let inner: Vec<i64> = dps(&get(
        &s,
        &format!(
            "/api/query?start={}&end={}&m=sum:m{{dc=lga}}",
            B + 15,
            B + 45
        ),
    )[0])
    .iter()
    .map(|(_, v)| v.as_i64().unwrap())
    .collect();
    assert_eq!(inner, vec![30, 30, 20]);
    // aggregateTags come in tag key UID order (OpenTSDB's SpanGroup), not by name.
    for k in ["zzk", "aak"] {
        let (code, body) = s.http("GET", &format!("/api/uid/assign?tagk={k}"), "");
        assert_eq!(code, 200, "{body}");
    }
    put(
        &s,
        &[
            ("uidorder", B, "1", &[("zzk", "1"), ("aak", "1")]),
            ("uidorder", B, "2", &[("zzk", "2"), ("aak", "2")]),
        ],
    );
    let u = get(
        &s,
        &format!("/api/query?start={B}&end={}&m=sum:uidorder", B + 10),
    );
    assert_eq!(u[0]["aggregateTags"], json!(["zzk", "aak"]));

    let by_host = q("sum:m{host=*}");
    assert_eq!(
        by_host.as_array().unwrap().len(),
        2,
        "c has no point in range"
    );
    assert_eq!(by_host[0]["tags"], json!({"dc": "lga", "host": "a"}));
    assert_eq!(dps(&by_host[0]).len(), 3);

    for (filter, hosts) in [
        ("host=literal_or(a)", vec!["a"]),
        ("host=iliteral_or(A|B)", vec!["a", "b"]),
        ("host=not_literal_or(a)", vec!["b"]),
        ("host=wildcard(*)", vec!["a", "b"]),
        ("host=regexp(^[b-z])", vec!["b"]),
    ] {
        let r = q(&format!("none:m{{{filter}}}"));
        let got: Vec<&str> = r
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["tags"]["host"].as_str().unwrap())
            .collect();
        assert_eq!(got, hosts, "{filter}");
    }
    // Second braces: filter without grouping.
    let r = q("sum:m{}{host=literal_or(a|b)}");
    assert_eq!(r.as_array().unwrap().len(), 1);
    assert_eq!(r[0]["aggregateTags"], json!(["host"]));

    // explicitTags: the series with an extra tag key is left out.
    let wide = get(
        &s,
        &format!("/api/query?start={B}&end={}&m=sum:m{{host=*}}", B + 7200),
    );
    assert_eq!(wide.as_array().unwrap().len(), 3);
    let explicit = post(
        &s,
        json!({"start": B, "end": B + 7200, "queries": [{"aggregator": "sum", "metric": "m", "explicitTags": true,
               "filters": [{"type": "wildcard", "tagk": "host", "filter": "*", "groupBy": true},
                           {"type": "wildcard", "tagk": "dc", "filter": "*", "groupBy": false}]}]}),
    );
    assert_eq!(explicit.as_array().unwrap().len(), 2);

    // Errors as OpenTSDB words them.
    let (code, body) = s.http("GET", &format!("/api/query?start={B}&m=sum:nope"), "");
    assert_eq!(code, 400);
    assert!(
        body.contains("No such name for 'metrics': 'nope'"),
        "{body}"
    );
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={B}&m=sum:m{{host=zz}}"),
        "",
    );
    assert_eq!(code, 400);
    assert!(body.contains("No such name for 'tagv': 'zz'"), "{body}");
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={B}&m=sum:m{{nokey=a}}"),
        "",
    );
    assert_eq!(code, 400);
    assert!(body.contains("No such name for 'tagk': 'nokey'"), "{body}");
    assert_eq!(s.http("GET", "/api/query?m=sum:m", "").0, 400);
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={}&end={B}&m=sum:m", B + 10),
        "",
    );
    assert_eq!(code, 400);
    assert!(
        body.contains("must be greater than or equal to the start time"),
        "{body}"
    );
}

fn downsampling_rate_and_output_forms(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    // TestTsdbQueryDownsample: 1..300 every 30 s from 1356998430.
    let pts: Vec<(u64, String)> = (0..300)
        .map(|i| (B + 30 + 30 * i, (i + 1).to_string()))
        .collect();
    let tags: &[(&str, &str)] = &[("host", "web01")];
    let batch: Vec<Put> = pts
        .iter()
        .map(|(t, v)| ("ds", *t, v.as_str(), tags))
        .collect();
    put(&s, &batch);
    let end = B + 43200;
    let r = post(
        &s,
        json!({"start": B, "end": end, "queries": [{"aggregator": "sum", "metric": "ds", "downsample": "1m-avg"}]}),
    );
    let d = dps(&r[0]);
    assert_eq!(d.len(), 151);
    assert_eq!(d[0], (B.to_string(), json!(1.0)));
    assert_eq!(d[1].1, json!(2.5));
    assert_eq!(d[150].1, json!(300.0));
    let all = post(
        &s,
        json!({"start": B, "end": end, "queries": [{"aggregator": "sum", "metric": "ds", "downsample": "0all-sum"}]}),
    );
    assert_eq!(dps(&all[0]), vec![(B.to_string(), json!(45150.0))]);
    // OpenTSDB's serializer writes only points in [start, end]: with a start inside the
    // first minute, that minute's bucket (stamped before the start) is left out, filled or not.
    for ds in ["1m-avg", "1m-avg-zero"] {
        let late = post(
            &s,
            json!({"start": B + 15, "end": B + 150, "queries": [{"aggregator": "sum", "metric": "ds", "downsample": ds}]}),
        );
        assert_eq!(
            dps(&late[0]),
            vec![
                ((B + 60).to_string(), json!(2.5)),
                ((B + 120).to_string(), json!(4.5))
            ],
            "{ds}"
        );
    }
    let rate = get(&s, &format!("/api/query?start={B}&end={end}&m=sum:rate:ds"));
    let rd = dps(&rate[0]);
    assert_eq!(rd.len(), 299);
    assert_eq!(rd[0].0, (B + 60).to_string());
    assert!((rd[0].1.as_f64().unwrap() - 1.0 / 30.0).abs() < 1e-12);
    // A series of one point has no rate, yet OpenTSDB answers it (its span was read), with
    // empty `dps`, alone or in a group with others.
    put(&s, &[("lone", B + 90, "4", tags)]);
    let lone = get(
        &s,
        &format!("/api/query?start={B}&end={end}&m=sum:rate:lone"),
    );
    assert_eq!(
        lone,
        json!([{"metric": "lone", "tags": {"host": "web01"}, "aggregateTags": [], "dps": {}}])
    );
    let lone = get(
        &s,
        &format!("/api/query?start={B}&end={end}&m=sum:1m-avg:rate:lone"),
    );
    assert_eq!(lone[0]["dps"], json!({}), "{lone}");
    // OpenTSDB reads from the start's hour: a start in the next hour reads none of it.
    let none = get(
        &s,
        &format!("/api/query?start={}&end={end}&m=sum:rate:lone", B + 3600),
    );
    assert_eq!(none, json!([]), "no point of it read");

    // Fill policies over an empty stretch: null (arrays form) and zero.
    let filled = get(
        &s,
        &format!(
            "/api/query?start={B}&end={}&m=sum:2m-sum-null:ds&arrays=true",
            B + 11000
        ),
    );
    let arr = filled[0]["dps"].as_array().unwrap();
    assert!(
        arr.iter().any(|p| p[1].is_null()),
        "buckets after the data are null"
    );
    assert_eq!(arr[0], json!([B, 6.0]), "1+2+3 in the first two minutes");
    let ms = get(
        &s,
        &format!(
            "/api/query?start={B}&end={}&m=sum:ds&ms&show_tsuids&show_query",
            B + 60
        ),
    );
    assert_eq!(dps(&ms[0])[0].0, ((B + 30) * 1000).to_string());
    assert_eq!(ms[0]["tsuids"], json!(["000001000001000001"]));
    assert_eq!(ms[0]["query"]["index"], 0);
    let by_tsuid = get(
        &s,
        &format!(
            "/api/query?start={B}&end={}&tsuid=sum:000001000001000001",
            B + 60
        ),
    );
    assert_eq!(dps(&by_tsuid[0]).len(), 2);
    let summary = post(
        &s,
        json!({"start": B, "end": B + 60, "showSummary": true, "queries": [{"aggregator": "sum", "metric": "ds"}]}),
    );
    assert!(summary.as_array().unwrap().last().unwrap()["statsSummary"].is_object());
}

fn suggest_lookup_last_and_listings(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    docs_data(&s);
    put(
        &s,
        &[
            ("mem.free", B, "7", &[("host", "a")]),
            ("mem.used", B, "8", &[("host", "a")]),
        ],
    );
    assert_eq!(
        get(&s, "/api/suggest?type=metrics&q=mem"),
        json!(["mem.free", "mem.used"])
    );
    assert_eq!(
        get(&s, "/api/suggest?type=metrics&q=mem&max=1"),
        json!(["mem.free"])
    );
    assert_eq!(
        get(&s, "/api/suggest?type=tagk&q="),
        json!(["dc", "extra", "host"])
    );
    assert_eq!(get(&s, "/api/suggest?type=tagv&q=s"), json!(["sjc"]));
    // TestHttpJsonSerializer.formatSuggestV1JSONP: `jsonp=func` wraps the answer.
    let (code, body) = s.http("GET", "/api/suggest?type=tagv&q=s&jsonp=func", "");
    assert_eq!((code, body.as_str()), (200, r#"func(["sjc"])"#));
    let (code, body) = s.http("GET", "/api/suggest?type=bogus", "");
    assert_eq!(code, 400);
    assert!(body.contains("Invalid 'type' parameter:bogus"));
    let (code, _) = s.http("POST", "/api/suggest", r#"{"type":"metrics","q":"m"}"#);
    assert_eq!(code, 200);
    // TestSuggestRpc.missingType: the GET form's type is a required parameter; a max of 0,
    // below 0 or empty is OpenTSDB's default of 25, a non-number is refused (badMaxQS).
    let (code, body) = s.http("GET", "/api/suggest?q=h", "");
    assert_eq!(code, 400);
    assert!(
        body.contains("Missing parameter <code>type</code>"),
        "{body}"
    );
    for max in ["0", "-3", ""] {
        assert_eq!(
            get(&s, &format!("/api/suggest?type=metrics&q=mem&max={max}")),
            json!(["mem.free", "mem.used"]),
            "max={max}"
        );
    }
    let (code, body) = s.http("GET", "/api/suggest?type=tagv&q=w&max=foo", "");
    assert_eq!(code, 400);
    assert!(body.contains("Unable to parse 'max' as a number"), "{body}");

    let l = get(&s, "/api/search/lookup?m=m{host=*}&limit=1000");
    assert_eq!(l["type"], "LOOKUP");
    assert_eq!(l["totalResults"], 3);
    let hosts: Vec<&str> = l["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tags"]["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts.len(), 3);
    let l = get(&s, "/api/search/lookup?m=m{dc=sjc}");
    assert_eq!(
        l["results"][0]["tags"],
        json!({"dc": "sjc", "extra": "x", "host": "c"})
    );

    let last = get(&s, "/api/query/last?timeseries=m{host=a}&resolve");
    assert_eq!(last[0]["timestamp"], json!((B + 50) * 1000));
    assert_eq!(last[0]["value"], "5");
    assert_eq!(last[0]["metric"], "m");
    assert_eq!(last[0]["tags"]["host"], "a");
    let last = get(&s, "/api/query/last?timeseries=m{host=c}");
    assert_eq!(last[0]["value"], "1.5");
    assert!(last[0].get("metric").is_none());
    // QueryRpc's own words for a request with no sub-query and a back_scan not an int.
    for (path, msg) in [
        ("/api/query/last", "Missing sub queries"),
        (
            "/api/query/last?timeseries=m&back_scan=x",
            "Unable to parse back_scan parameter",
        ),
        (
            "/api/query/last?timeseries=m&back_scan=9999999999",
            "Unable to parse back_scan parameter",
        ),
    ] {
        let (code, body) = s.http("GET", path, "");
        assert_eq!(code, 400, "{path}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["message"], msg, "{path}");
    }
    let last = get(&s, "/api/query/last?timeseries=m{host=c}&back_scan=-1");
    assert_eq!(last[0]["value"], "1.5");

    let aggs = get(&s, "/api/aggregators");
    for a in [
        "sum",
        "zimsum",
        "avg",
        "dev",
        "none",
        "p99",
        "ep999r7",
        "mult",
        "squareSum",
    ] {
        assert!(aggs.as_array().unwrap().contains(&json!(a)), "{a}");
    }
    let f = get(&s, "/api/config/filters");
    let mut keys: Vec<&String> = f.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "iliteral_or",
            "iwildcard",
            "literal_or",
            "not_iliteral_or",
            "not_key",
            "not_literal_or",
            "regexp",
            "wildcard"
        ]
    );
    let c = get(&s, "/api/config");
    assert_eq!(c["tsd.storage.hbase.data_table"], "tsdb");
}

fn delete_only_when_allowed(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let body = json!({"start": B, "end": B + 25, "delete": true, "queries": [{"aggregator": "sum", "metric": "m", "tags": {"host": "b"}}]});
    let s = Server::start_on(b, &dir.path().join("d1"), None);
    docs_data(&s);
    let (code, resp) = s.http("POST", "/api/query", &body.to_string());
    assert_eq!(code, 400);
    assert!(resp.contains("allow_delete"), "{resp}");
    // TestQueryRpc.deleteDatapointsBadRequest: a DELETE is refused before it is read.
    let (code, resp) = s.http("DELETE", &format!("/api/query?start={B}&m=sum:m"), "");
    let v: serde_json::Value = serde_json::from_str(&resp).unwrap();
    assert_eq!(code, 400);
    assert_eq!(v["error"]["message"], "Bad request");
    assert!(
        v["error"]["details"]
            .as_str()
            .unwrap()
            .contains("Deleting data is not enabled"),
        "{resp}"
    );
    drop(s);
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[query]\nallow_delete = true\n").unwrap();
    let s = Server::start_on(b, &dir.path().join("d2"), Some(&cfg));
    docs_data(&s);
    // A delete answers with counts, never with the points it removed.
    let deleted = post(&s, body);
    assert_eq!(deleted, json!({"deleted": {"series": 1, "datapoints": 2}}));
    // A DELETE reads its query from the URI, as OpenTSDB's QueryRpc does.
    let (code, resp) = s.http(
        "DELETE",
        &format!(
            "/api/query?start={}&end={}&m=sum:m{{host=b}}",
            B + 30,
            B + 45
        ),
        "",
    );
    assert_eq!(code, 200, "{resp}");
    let v: serde_json::Value = serde_json::from_str(&resp).unwrap();
    assert_eq!(v, json!({"deleted": {"series": 1, "datapoints": 1}}));
    let left = get(
        &s,
        &format!("/api/query?start={B}&end={}&m=sum:m{{host=b}}", B + 100),
    );
    assert_eq!(
        dps(&left[0])
            .iter()
            .map(|(k, _)| k.clone())
            .collect::<Vec<_>>(),
        vec![(B + 60).to_string()]
    );
}

fn annotations_come_back_with_query_results(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    docs_data(&s);
    let tsuid = get(
        &s,
        &format!(
            "/api/query?start={B}&end={}&m=sum:m{{host=a}}&show_tsuids",
            B + 100
        ),
    )[0]["tsuids"][0]
        .clone();
    let (code, body) = s.http(
        "POST",
        "/api/annotation",
        &json!({"tsuid": tsuid, "startTime": B + 15, "description": "deploy"}).to_string(),
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = s.http(
        "POST",
        "/api/annotation",
        &json!({"startTime": B + 20, "description": "outage"}).to_string(),
    );
    assert_eq!(code, 200, "{body}");
    let r = post(
        &s,
        json!({"start": B, "end": B + 100, "globalAnnotations": true,
                            "queries": [{"aggregator": "sum", "metric": "m", "tags": {"host": "*"}}]}),
    );
    let a = r
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["tags"]["host"] == "a")
        .unwrap();
    assert_eq!(a["annotations"][0]["description"], "deploy");
    assert_eq!(a["annotations"][0]["startTime"], B + 15);
    assert_eq!(a["globalAnnotations"][0]["description"], "outage");
    let b = r
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["tags"]["host"] == "b")
        .unwrap();
    assert!(b.get("annotations").is_none());
    let quiet = post(
        &s,
        json!({"start": B, "end": B + 100, "noAnnotations": true,
                                "queries": [{"aggregator": "sum", "metric": "m", "tags": {"host": "a"}}]}),
    );
    assert!(quiet[0].get("annotations").is_none() && quiet[0].get("globalAnnotations").is_none());
}

fn calendar_downsampling_in_a_time_zone(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    // One point an hour for two days, from 2013-01-01T00:00Z.
    let pts: Vec<(u64, String)> = (0..48).map(|i| (B + 3600 * i, "1".to_string())).collect();
    let tags: &[(&str, &str)] = &[("host", "a")];
    let batch: Vec<Put> = pts
        .iter()
        .map(|(t, v)| ("cal", *t, v.as_str(), tags))
        .collect();
    put(&s, &batch);
    let q = |extra: Value| {
        let mut body = json!({"start": B, "end": B + 48 * 3600, "queries": [{"aggregator": "sum", "metric": "cal", "downsample": "1d-count"}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        dps(&post(&s, body)[0])
    };
    // UTC days: 24 + 24.
    assert_eq!(
        q(json!({}))
            .iter()
            .map(|(_, v)| v.as_f64().unwrap())
            .collect::<Vec<_>>(),
        vec![24.0, 24.0]
    );
    // New York days start at 05:00Z: 24 points on January 1st, then 19. Dec 31st's bucket
    // (5 points) begins before the start, and OpenTSDB's serializer leaves it out.
    let ny = q(json!({"useCalendar": true, "timezone": "America/New_York"}));
    assert_eq!(
        ny.iter()
            .map(|(_, v)| v.as_f64().unwrap())
            .collect::<Vec<_>>(),
        vec![24.0, 19.0]
    );
    assert_eq!(ny[0].0, (B + 5 * 3600).to_string());
    let (code, body) = s.http(
        "POST",
        "/api/query",
        &json!({"start": B, "timezone": "Mars/Olympus", "useCalendar": true,
        "queries": [{"aggregator": "sum", "metric": "cal", "downsample": "1d-count"}]})
        .to_string(),
    );
    assert_eq!(code, 400, "{body}");
}

/// A metric of many series over two hours (read on several cores in shares of its series
/// where the store seeks): every series comes back once, with all its points, and group
/// sums are exact, through /api/query and PromQL alike.
fn many_series_read_in_shares_come_back_once(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let hosts: Vec<String> = (0..60).map(|i| format!("h{i:02}")).collect();
    let dcs = ["d0", "d1", "d2"];
    // What `Put` borrows: (metric, timestamp, value, tags).
    type Owned<'a> = (&'a str, u64, String, Vec<(&'a str, &'a str)>);
    let mut pts: Vec<Owned> = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        for t in [B + 10, B + 3610] {
            // Some hosts only start in the second hour.
            if i % 7 == 0 && t == B + 10 {
                continue;
            }
            pts.push((
                "sh",
                t,
                (i + 1).to_string(),
                vec![("host", h.as_str()), ("dc", dcs[i % 3])],
            ));
        }
    }
    let borrowed: Vec<Put> = pts
        .iter()
        .map(|(m, t, v, tags)| (*m, *t, v.as_str(), &tags[..]))
        .collect();
    put(&s, &borrowed);
    let none = post(
        &s,
        json!({"start": B, "end": B + 7200, "queries": [{"metric": "sh", "aggregator": "none"}]}),
    );
    let mut seen: Vec<String> = none
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tags"]["host"].as_str().unwrap().to_string())
        .collect();
    let points: usize = none
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dps"].as_object().unwrap().len())
        .sum();
    seen.sort();
    assert_eq!(seen, hosts, "every series once");
    assert_eq!(points, pts.len());
    let by_dc = post(
        &s,
        json!({"start": B, "end": B + 7200, "queries": [{"metric": "sh", "aggregator": "sum", "tags": {"dc": "*"}}]}),
    );
    for r in by_dc.as_array().unwrap() {
        let d = dcs.iter().position(|d| r["tags"]["dc"] == *d).unwrap();
        let want: u64 = (0..60).filter(|i| i % 3 == d).map(|i| i as u64 + 1).sum();
        assert_eq!(
            r["dps"][(B + 3610).to_string()].as_f64().unwrap() as u64,
            want,
            "dc {d} at the second hour"
        );
    }
    let q = format!(
        "/api/v1/query?query=count(last_over_time(sh[2h]))&time={}",
        B + 3700
    );
    assert_eq!(get(&s, &q)["data"]["result"][0]["value"][1], "60");
    let q = format!(
        "/api/v1/query?query=sum%20by%20(dc)%20(sum_over_time(sh[2h]))&time={}",
        B + 3700
    );
    let r = get(&s, &q);
    let total: f64 = r["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["value"][1].as_str().unwrap().parse::<f64>().unwrap())
        .sum();
    let want: u64 = pts.iter().map(|p| p.2.parse::<u64>().unwrap()).sum();
    assert_eq!(total as u64, want);
}

/// `/api/query/exp` on its docs' example: `a + b` grouped by host where `b` lacks web03 —
/// intersection skips web03, union substitutes b's fill value; outputs as `QueryExecutor`
/// writes them.
#[test]
fn query_exp_intersection_union_and_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let mut pts = Vec::new();
    for (h, base) in [("web01", 1.0), ("web02", 2.0), ("web03", 3.0)] {
        for i in 0..3u64 {
            pts.push(json!({"metric":"sys.a","timestamp":B + 60 * i,"value":base + i as f64,"tags":{"host":h}}));
            if h != "web03" {
                pts.push(json!({"metric":"sys.b","timestamp":B + 60 * i,"value":10 * (i + 1),"tags":{"host":h}}));
            }
        }
    }
    let (code, resp) = s.http("POST", "/api/put?sync", &Value::Array(pts).to_string());
    assert_eq!(code, 204, "{resp}");
    let query = |operator: &str| {
        json!({
            "time": {"start": B, "end": B + 600, "aggregator": "sum",
                     "downsampler": {"interval": "1m", "aggregator": "avg"}},
            "filters": [{"id": "f1", "tags": [{"type": "wildcard", "tagk": "host", "filter": "*", "groupBy": true}]}],
            "metrics": [{"id": "a", "metric": "sys.a", "filter": "f1"},
                        {"id": "b", "metric": "sys.b", "filter": "f1", "fillPolicy": {"policy": "scalar", "value": 100}}],
            "expressions": [{"id": "e", "expr": "a + b * 2", "join": {"operator": operator}}],
            "outputs": [{"id": "e", "alias": "a plus 2b"}, {"id": "b"}]
        })
    };
    let run = |body: Value| {
        let (code, resp) = s.http("POST", "/api/query/exp", &body.to_string());
        assert_eq!(code, 200, "{resp}");
        serde_json::from_str::<Value>(&resp).unwrap()
    };
    let v = run(query("intersection"));
    let e = &v["outputs"][0];
    assert_eq!(
        (e["id"].as_str(), e["alias"].as_str()),
        (Some("e"), Some("a plus 2b"))
    );
    let t0 = B * 1000;
    assert_eq!(
        e["dps"],
        json!([
            [t0, 21.0, 22.0],
            [t0 + 60_000, 42.0, 43.0],
            [t0 + 120_000, 63.0, 64.0]
        ])
    );
    assert_eq!(
        e["dpsMeta"],
        json!({"firstTimestamp": t0, "lastTimestamp": t0 + 120_000, "setCount": 3, "series": 2})
    );
    assert_eq!(e["meta"][0], json!({"index": 0, "metrics": ["timestamp"]}));
    assert_eq!(
        e["meta"][2],
        json!({"index": 2, "metrics": ["sys.a", "sys.b"], "commonTags": {"host": "web02"}, "aggregatedTags": []})
    );
    // The metric output: its own series, unjoined.
    let b = &v["outputs"][1];
    assert_eq!(b["id"], "b");
    assert_eq!(b["dpsMeta"]["series"], 2);
    assert_eq!(b["dps"][0], json!([t0, 10.0, 10.0]));
    assert!(v["query"]["expressions"].is_array(), "the query is echoed");

    // Union: web03 joins with b's fill value (100).
    let v = run(query("union"));
    let e = &v["outputs"][0];
    assert_eq!(e["dpsMeta"]["series"], 3);
    assert_eq!(e["dps"][0], json!([t0, 21.0, 22.0, 203.0]));
    assert_eq!(e["meta"][3]["commonTags"], json!({"host": "web03"}));
    assert_eq!(e["meta"][3]["metrics"], json!(["sys.a"]));

    // Dividing by zero gives 0.0, as 2.4's lenient JEXL answers it (no Infinity or NaN).
    let mut q = query("intersection");
    q["expressions"][0]["expr"] = json!("a / (b - b) + a % (b * 0)");
    let v = run(q);
    assert_eq!(
        v["outputs"][0]["dps"],
        json!([
            [t0, 0.0, 0.0],
            [t0 + 60_000, 0.0, 0.0],
            [t0 + 120_000, 0.0, 0.0]
        ])
    );

    // No outputs: every expression; errors in OpenTSDB's envelope.
    let mut q = query("intersection");
    q.as_object_mut().unwrap().remove("outputs");
    let v = run(q);
    assert_eq!(v["outputs"].as_array().unwrap().len(), 1);
    assert_eq!(v["outputs"][0]["id"], "e");
    let mut bad = query("intersection");
    bad["expressions"][0]["expr"] = json!("a + nope");
    let (code, resp) = s.http("POST", "/api/query/exp", &bad.to_string());
    assert_eq!(code, 400, "{resp}");
    assert!(resp.contains("nope"), "{resp}");
    bad["expressions"][0]["expr"] = json!("a +");
    assert_eq!(s.http("POST", "/api/query/exp", &bad.to_string()).0, 400);
    assert_eq!(s.http("GET", "/api/query/exp", "").0, 405);
}
