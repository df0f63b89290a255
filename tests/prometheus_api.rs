//! Prometheus endpoints end to end over real sockets: remote write 1.0/2.0 into a real
//! server, read back through the query API (values bit for bit, labels unescaped).

mod common;
use common::*;
use prost::Message;
use serde_json::Value;
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, MetricMetadata, Sample, TimeSeries, WriteRequest};
use tsgate_prometheus::{snappy, v2};

/// (status, lowercase headers, body)
fn request(
    addr: &str,
    method: &str,
    path: &str,
    body: &[u8],
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let split = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response head");
    let head = String::from_utf8_lossy(&resp[..split]).to_string();
    let mut lines = head.lines();
    let code = lines
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let hdrs = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (code, hdrs, resp[split + 4..].to_vec())
}

fn ts(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
    TimeSeries {
        labels: labels
            .iter()
            .map(|(k, v)| Label {
                name: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
        samples: samples
            .iter()
            .map(|&(timestamp, value)| Sample { value, timestamp })
            .collect(),
        ..Default::default()
    }
}

fn write_v1(addr: &str, req: &WriteRequest) -> (u16, Vec<(String, String)>, String) {
    let body = snappy::compress(&req.encode_to_vec());
    let (c, h, b) = request(
        addr,
        "POST",
        "/api/v1/write",
        &body,
        &[
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
    );
    (c, h, String::from_utf8_lossy(&b).into_owned())
}

fn get_json(addr: &str, path_and_query: &str) -> Value {
    let (c, _, b) = request(addr, "GET", path_and_query, b"", &[]);
    let v: Value = serde_json::from_slice(&b)
        .unwrap_or_else(|e| panic!("{path_and_query}: {c} {e}: {}", String::from_utf8_lossy(&b)));
    v
}

fn post_form(addr: &str, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let (c, _, b) = request(
        addr,
        "POST",
        path,
        body.as_bytes(),
        &[("Content-Type", "application/x-www-form-urlencoded")],
    );
    (c, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// Waits until an instant query returns `n` series.
fn wait_series(addr: &str, query: &str, time: &str, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (c, v) = post_form(addr, "/api/v1/query", &[("query", query), ("time", time)]);
        if c == 200 && v["data"]["result"].as_array().is_some_and(|r| r.len() >= n)
            || Instant::now() > deadline
        {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

const T0: i64 = 1_700_000_000_000;

#[test]
fn remote_write_v1_round_trips_labels_and_special_values() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    let req = WriteRequest {
        timeseries: vec![
            ts(
                &[
                    ("__name__", "job:requests:rate5m"),
                    ("job", "api"),
                    ("path", "/a b"),
                    ("empty", ""),
                ],
                &[(T0, 1.5), (T0 + 15_000, 2.0)],
            ),
            ts(&[("__name__", "lonely")], &[(T0 + 7, 42.0)]),
            ts(
                &[("__name__", "gone"), ("instance", "x:9100")],
                &[(T0, 3.0), (T0 + 15_000, stale)],
            ),
            ts(
                &[("__name__", "weird"), ("k", "v")],
                &[
                    (T0, f64::NAN),
                    (T0 + 1000, f64::INFINITY),
                    (T0 + 2000, -2.5e-7),
                ],
            ),
        ],
        metadata: vec![MetricMetadata {
            r#type: 1,
            metric_family_name: "job:requests:rate5m".into(),
            help: "Requests.".into(),
            unit: "".into(),
        }],
    };
    let (code, hdrs, body) = write_v1(&s.addr, &req);
    assert_eq!(code, 204, "{body}");
    assert!(
        !hdrs
            .iter()
            .any(|(k, _)| k.starts_with("x-prometheus-remote-write")),
        "no v2 headers for v1: {hdrs:?}"
    );

    let v = wait_series(&s.addr, "job:requests:rate5m", "1700000015", 1);
    assert_eq!(v["status"], "success");
    let r = &v["data"]["result"][0];
    assert_eq!(
        r["metric"],
        serde_json::json!({"__name__": "job:requests:rate5m", "job": "api", "path": "/a b"})
    );
    assert_eq!(r["value"], serde_json::json!([1700000015, "2"]));

    let v = wait_series(&s.addr, "lonely", "1700000000.007", 1);
    assert_eq!(
        v["data"]["result"][0]["metric"],
        serde_json::json!({"__name__": "lonely"})
    );
    assert_eq!(
        v["data"]["result"][0]["value"],
        serde_json::json!([1700000000.007, "42"])
    );

    // The stale marker hides the series right away; before it the value is there.
    let v = wait_series(&s.addr, "gone", "1700000010", 1);
    assert_eq!(v["data"]["result"][0]["metric"]["instance"], "x:9100");
    let (_, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[("query", "gone"), ("time", "1700000016")],
    );
    assert_eq!(v["data"]["result"], serde_json::json!([]));
    // …but it is stored: the range vector drops it, count_over_time counts only the real sample.
    let (_, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[
            ("query", "count_over_time(gone[1m])"),
            ("time", "1700000016"),
        ],
    );
    assert_eq!(v["data"]["result"][0]["value"][1], "1");

    let v = wait_series(&s.addr, "weird[5s]", "1700000002", 1);
    let vals: Vec<&str> = v["data"]["result"][0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_str().unwrap())
        .collect();
    assert_eq!(vals, ["NaN", "+Inf", "-2.5e-07"]);

    // Label APIs.
    let v = get_json(&s.addr, "/api/v1/label/__name__/values");
    assert_eq!(
        v["data"],
        serde_json::json!(["gone", "job:requests:rate5m", "lonely", "weird"])
    );
    let v = get_json(&s.addr, "/api/v1/labels");
    for l in ["__name__", "instance", "job", "k", "path"] {
        assert!(
            v["data"].as_array().unwrap().iter().any(|x| x == l),
            "{l} in {v}"
        );
    }
    assert!(
        !v["data"].to_string().contains("_."),
        "escapes never leak: {v}"
    );
    let v = get_json(
        &s.addr,
        "/api/v1/series?match[]=%7B__name__%3D~%22j.%2A%22%7D&start=1699999000&end=1700001000",
    );
    assert_eq!(
        v["data"],
        serde_json::json!([{"__name__": "job:requests:rate5m", "job": "api", "path": "/a b"}])
    );
    let v = get_json(
        &s.addr,
        "/api/v1/label/job/values?match[]=%7Bjob%21%3D%22%22%7D",
    );
    assert_eq!(v["data"], serde_json::json!(["api"]));
    let v = get_json(&s.addr, "/api/v1/metadata");
    assert_eq!(
        v["data"]["job:requests:rate5m"],
        serde_json::json!([{"type": "counter", "help": "Requests.", "unit": ""}])
    );
    s.stop();
}

#[test]
fn remote_write_errors_and_v2() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    // Too many labels: 400 naming the series and the limit, nothing dropped silently.
    let many: Vec<(String, String)> = (0..33)
        .map(|i| (format!("l{i:02}"), "v".into()))
        .chain([("__name__".to_string(), "wide".to_string())])
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (code, _, body) = write_v1(
        &s.addr,
        &WriteRequest {
            timeseries: vec![ts(&many, &[(T0, 1.0)])],
            metadata: vec![],
        },
    );
    assert_eq!(code, 400);
    assert!(
        body.contains("wide{") && body.contains("prometheus.max_tags = 32"),
        "{body}"
    );
    // Corrupt snappy: 400; unknown content type: 415.
    let (code, _, _) = request(
        &s.addr,
        "POST",
        "/api/v1/write",
        b"\x05\xff\xff",
        &[("Content-Encoding", "snappy")],
    );
    assert_eq!(code, 400);
    let (code, _, _) = request(
        &s.addr,
        "POST",
        "/api/v1/write",
        b"{}",
        &[("Content-Type", "application/json")],
    );
    assert_eq!(code, 415);
    let (code, _, _) = request(
        &s.addr,
        "POST",
        "/api/v1/write",
        b"",
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 415);

    // 2.0: symbols table, written-count headers.
    let req = v2::Request {
        symbols: ["", "__name__", "resource.cpu.usage", "job name", "a\nb"]
            .map(String::from)
            .to_vec(),
        timeseries: vec![v2::TimeSeries {
            labels_refs: vec![1, 2, 3, 4],
            samples: vec![
                v2::Sample {
                    value: 7.25,
                    timestamp: T0,
                    start_timestamp: 0,
                },
                v2::Sample {
                    value: 8.0,
                    timestamp: T0 + 1000,
                    start_timestamp: 0,
                },
            ],
            metadata: Some(v2::Metadata {
                r#type: 2,
                help_ref: 0,
                unit_ref: 0,
            }),
            ..Default::default()
        }],
    };
    let body = snappy::compress(&req.encode_to_vec());
    let ct = [
        ("Content-Encoding", "snappy"),
        (
            "Content-Type",
            "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        ),
        ("X-Prometheus-Remote-Write-Version", "2.0.0"),
    ];
    let (code, hdrs, _) = request(&s.addr, "POST", "/api/v1/write", &body, &ct);
    assert_eq!(code, 204);
    let h = |n: &str| hdrs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    assert_eq!(
        h("x-prometheus-remote-write-samples-written").as_deref(),
        Some("2")
    );
    assert_eq!(
        h("x-prometheus-remote-write-histograms-written").as_deref(),
        Some("0")
    );
    assert_eq!(
        h("x-prometheus-remote-write-exemplars-written").as_deref(),
        Some("0")
    );
    let v = wait_series(
        &s.addr,
        "{__name__=\"resource.cpu.usage\"}",
        "1700000001",
        1,
    );
    assert_eq!(
        v["data"]["result"][0]["metric"],
        serde_json::json!({"__name__": "resource.cpu.usage", "job name": "a\nb"})
    );
    assert_eq!(v["data"]["result"][0]["value"][1], "8");
    // A bad symbol reference is a 400 with the headers still present.
    let bad = v2::Request {
        symbols: vec!["".into(), "__name__".into()],
        timeseries: vec![v2::TimeSeries {
            labels_refs: vec![1, 9],
            samples: vec![v2::Sample {
                value: 1.0,
                timestamp: T0,
                start_timestamp: 0,
            }],
            ..Default::default()
        }],
    };
    let (code, hdrs, _) = request(
        &s.addr,
        "POST",
        "/api/v1/write",
        &snappy::compress(&bad.encode_to_vec()),
        &ct,
    );
    assert_eq!(code, 400);
    assert!(hdrs
        .iter()
        .any(|(k, v)| k == "x-prometheus-remote-write-samples-written" && v == "0"));
    s.stop();
}

#[test]
fn promql_over_opentsdb_data_and_grafana_probes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    // Counter points written through OpenTSDB's /api/put, every 15 s: 0, 10, …, 80.
    let pts: Vec<Value> = (0..9)
        .flat_map(|i| {
            ["a", "b"].map(|h| serde_json::json!({"metric": "cpu.usage_user", "timestamp": 1_700_000_000 + i * 15, "value": i * 10, "tags": {"host": h}}))
        })
        .collect();
    let (code, body) = s.http("POST", "/api/put?sync", &Value::Array(pts).to_string());
    assert_eq!(code, 204, "{body}");
    let v = wait_series(&s.addr, "{__name__=\"cpu.usage_user\"}", "1700000120", 2);
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 2);
    // rate with 2.42's extrapolation: 0.6667 at +67 s.
    let (_, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[
            (
                "query",
                "sum by (host) (rate({__name__=\"cpu.usage_user\"}[1m]))",
            ),
            ("time", "1700000067"),
        ],
    );
    let r = &v["data"]["result"];
    assert_eq!(r.as_array().unwrap().len(), 2, "{v}");
    let x: f64 = r[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!((x - 0.6666666666666666).abs() < 1e-9, "{v}");
    // The bench's point count.
    let (_, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[
            ("query", "sum(count_over_time({__name__=~\".+\"}[2h]))"),
            ("time", "1700000200"),
        ],
    );
    assert_eq!(v["data"]["result"][0]["value"][1], "18");
    // Range query: sorted matrix, 3-digit ms timestamps only when needed.
    let (code, v) = post_form(
        &s.addr,
        "/api/v1/query_range",
        &[
            ("query", "{__name__=\"cpu.usage_user\"} * 2"),
            ("start", "1700000000"),
            ("end", "1700000030"),
            ("step", "15"),
        ],
    );
    assert_eq!(code, 200);
    assert_eq!(
        v["data"]["result"][0]["metric"],
        serde_json::json!({"host": "a"})
    );
    assert_eq!(
        v["data"]["result"][0]["values"],
        serde_json::json!([[1700000000, "0"], [1700000015, "20"], [1700000030, "40"]])
    );

    // Grafana: health check, exemplars probe with ms times, buildinfo, rules, errors.
    let (code, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[("query", "1+1"), ("time", "4"), ("timeout", "2m")],
    );
    assert_eq!(
        (code, v),
        (
            200,
            serde_json::json!({"status": "success", "data": {"resultType": "scalar", "result": [4, "2"]}})
        )
    );
    let v = get_json(
        &s.addr,
        "/api/v1/query_exemplars?query=test&start=1700000000000&end=1700000060000",
    );
    assert_eq!(v, serde_json::json!({"status": "success", "data": []}));
    let v = get_json(&s.addr, "/api/v1/status/buildinfo");
    assert!(v["data"]["version"].is_string() && v["data"].get("features").is_none());
    assert_eq!(
        get_json(&s.addr, "/api/v1/rules")["data"],
        serde_json::json!({"groups": []})
    );
    let (code, v) = post_form(&s.addr, "/api/v1/query", &[("query", "sum(")]);
    assert_eq!((code, v["errorType"].as_str()), (400, Some("bad_data")));
    let (code, v) = post_form(
        &s.addr,
        "/api/v1/query_range",
        &[
            ("query", "up[5m]"),
            ("start", "1"),
            ("end", "2"),
            ("step", "1"),
        ],
    );
    assert_eq!(code, 400);
    assert!(v["error"].as_str().unwrap().contains("range vector"));
    let (code, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[
            (
                "query",
                "{__name__=\"cpu.usage_user\"} + on() group_left {__name__=\"cpu.usage_user\"}",
            ),
            ("time", "1700000030"),
        ],
    );
    assert_eq!(
        (code, v["errorType"].as_str()),
        (422, Some("execution")),
        "{v}"
    );
    // A query past its timeout: 503 with errorType timeout.
    let (code, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[
            ("query", "{__name__=\"cpu.usage_user\"}"),
            ("time", "1700000030"),
            ("timeout", "0.0001"),
        ],
    );
    assert_eq!(
        (code, v["errorType"].as_str()),
        (503, Some("timeout")),
        "{v}"
    );
    // OpenTSDB's own /api/v1/ aliases still work.
    let (code, _) = s.http("GET", "/api/v1/version", "");
    assert_eq!(code, 200);
    s.stop();
}

#[test]
fn remote_read_samples_and_streamed_chunks() {
    use tsgate_prometheus::proto::{
        ChunkedReadResponse, LabelMatcher, Query, ReadHints, ReadRequest, ReadResponse,
    };
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    let samples: Vec<(i64, f64)> = (0..300)
        .map(|i| (T0 + i * 1000 + 5, i as f64 * 0.5))
        .chain([(T0 + 300_005, stale)])
        .collect();
    let req = WriteRequest {
        timeseries: vec![
            ts(&[("__name__", "rr_metric"), ("job", "a:b")], &samples),
            ts(&[("__name__", "rr_metric"), ("job", "other")], &[(T0, 1.0)]),
        ],
        metadata: vec![],
    };
    assert_eq!(write_v1(&s.addr, &req).0, 204);
    wait_series(&s.addr, "rr_metric", "1700000300", 2);
    let read = |accepted: Vec<i32>, hints: Option<ReadHints>| {
        let rr = ReadRequest {
            queries: vec![Query {
                start_timestamp_ms: T0,
                end_timestamp_ms: T0 + 400_000,
                matchers: vec![
                    LabelMatcher {
                        r#type: 0,
                        name: "__name__".into(),
                        value: "rr_metric".into(),
                    },
                    LabelMatcher {
                        r#type: 2,
                        name: "job".into(),
                        value: "a:.".into(),
                    },
                ],
                hints,
            }],
            accepted_response_types: accepted,
        };
        request(
            &s.addr,
            "POST",
            "/api/v1/read",
            &snappy::compress(&rr.encode_to_vec()),
            &[
                ("Content-Encoding", "snappy"),
                ("Content-Type", "application/x-protobuf"),
            ],
        )
    };
    let (code, hdrs, body) = read(vec![], None);
    assert_eq!(code, 200);
    assert!(hdrs
        .iter()
        .any(|(k, v)| k == "content-encoding" && v == "snappy"));
    let resp =
        ReadResponse::decode(snappy::decompress(&body, 1 << 30).unwrap().as_slice()).unwrap();
    assert_eq!(resp.results.len(), 1);
    let got = &resp.results[0].timeseries;
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0]
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect::<Vec<_>>(),
        [("__name__", "rr_metric"), ("job", "a:b")]
    );
    let back: Vec<(i64, u64)> = got[0]
        .samples
        .iter()
        .map(|x| (x.timestamp, x.value.to_bits()))
        .collect();
    assert_eq!(
        back,
        samples
            .iter()
            .map(|x| (x.0, x.1.to_bits()))
            .collect::<Vec<_>>(),
        "stale marker included, bit for bit"
    );

    let (code, hdrs, body) = read(vec![1, 0], None);
    assert_eq!(code, 200);
    assert!(hdrs
        .iter()
        .any(|(k, v)| k == "content-type" && v.starts_with("application/x-streamed-protobuf")));
    let frames = tsgate_prometheus::frame::read_frames(&body).unwrap();
    assert_eq!(frames.len(), 1);
    let msg = ChunkedReadResponse::decode(frames[0]).unwrap();
    let chunks = &msg.chunked_series[0].chunks;
    assert_eq!(chunks.len(), 3, "301 samples in chunks of 120");
    let decoded: Vec<(i64, u64)> = chunks
        .iter()
        .flat_map(|c| tsgate_prometheus::chunk::decode_xor(&c.data).unwrap())
        .map(|(t, v)| (t, v.to_bits()))
        .collect();
    assert_eq!(
        decoded,
        samples
            .iter()
            .map(|x| (x.0, x.1.to_bits()))
            .collect::<Vec<_>>()
    );

    let (_, _, body) = read(
        vec![],
        Some(ReadHints {
            func: "series".into(),
            ..Default::default()
        }),
    );
    let resp =
        ReadResponse::decode(snappy::decompress(&body, 1 << 30).unwrap().as_slice()).unwrap();
    assert!(
        resp.results[0].timeseries[0].samples.is_empty(),
        "series hint: labels only"
    );
    assert_eq!(read(vec![7], None).0, 400);
    s.stop();
}

/// `agg(fn(x[r]))` is evaluated metric by metric (src/promql/streamed.rs); `agg(fn(x[r]) * 1)`
/// takes the step evaluator. Multiplying by one changes no value, so both must answer the same,
/// bit for bit, over data with several metrics, hours, counter resets, stale markers, a gap,
/// and a label that sorts before `__name__`.
#[test]
fn streamed_aggregations_equal_the_step_evaluator() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let stale = f64::from_bits(0x7ff0_0000_0000_0002);
    let mut series = Vec::new();
    for (m, metric) in ["req_total", "err_total", "lat_seconds"].iter().enumerate() {
        for h in 0..5 {
            for zone in ["a", "b"] {
                let samples: Vec<(i64, f64)> = (0..150)
                    .filter(|i| (i + h) % 17 != 0) // gaps
                    .map(|i| {
                        let v = if i == 70 + h {
                            stale
                        } else {
                            ((i * (m as i64 + 1) + h * 7) % 53) as f64 * 1.37 + (i as f64).sqrt()
                        };
                        (T0 + i * 30_000 + h * 1000, v)
                    })
                    .collect();
                let host = format!("h{h}");
                // `kind` keeps series of different metrics apart once functions drop the name
                // (the `* 1` form would refuse colliding label sets, as Prometheus does).
                let kind = m.to_string();
                series.push(ts(
                    &[
                        ("__name__", metric),
                        ("host", &host),
                        ("Zone", zone),
                        ("job", if h % 2 == 0 { "x" } else { "y" }),
                        ("kind", &kind),
                    ],
                    &samples,
                ));
            }
        }
    }
    let (code, _, body) = write_v1(
        &s.addr,
        &WriteRequest {
            timeseries: series,
            ..Default::default()
        },
    );
    assert_eq!(code, 204, "{body}");
    let t_end = (T0 + 149 * 30_000) / 1000;
    wait_series(&s.addr, "{job=~\"x|y\"}", &t_end.to_string(), 30);
    let (start, end) = ((T0 / 1000 + 100).to_string(), (t_end + 200).to_string());
    let mut compared = 0;
    for agg in [
        "sum",
        "avg",
        "count",
        "min",
        "max",
        "group",
        "stddev",
        "sum by (job)",
        "avg without (host)",
        "max by (Zone, job)",
    ] {
        for f in [
            "rate",
            "increase",
            "delta",
            "irate",
            "deriv",
            "changes",
            "resets",
            "avg_over_time",
            "sum_over_time",
            "count_over_time",
            "last_over_time",
            "stdvar_over_time",
            "present_over_time",
        ] {
            for sel in [
                "{job=~\"x|y\"}[5m]",
                "req_total{host=\"h1\"}[3m] offset 2m",
                "{__name__=~\".+_total\", Zone=\"a\"}[10m]",
            ] {
                let fast = format!("{agg} ({f}({sel}))");
                let slow = format!("{agg} ({f}({sel}) * 1)");
                let (c1, a) = post_form(
                    &s.addr,
                    "/api/v1/query_range",
                    &[
                        ("query", &fast),
                        ("start", &start),
                        ("end", &end),
                        ("step", "97"),
                    ],
                );
                let (c2, b) = post_form(
                    &s.addr,
                    "/api/v1/query_range",
                    &[
                        ("query", &slow),
                        ("start", &start),
                        ("end", &end),
                        ("step", "97"),
                    ],
                );
                assert_eq!((c1, c2), (200, 200), "{fast}: {a} / {b}");
                assert_eq!(a["data"], b["data"], "{fast}");
                let (_, a) = post_form(
                    &s.addr,
                    "/api/v1/query",
                    &[("query", &fast), ("time", &end)],
                );
                let (_, b) = post_form(
                    &s.addr,
                    "/api/v1/query",
                    &[("query", &slow), ("time", &end)],
                );
                assert_eq!(a["data"], b["data"], "{fast} (instant)");
                compared += a["data"]["result"].as_array().map_or(0, |r| r.len());
            }
        }
    }
    assert!(
        compared > 300,
        "too few non-empty answers compared: {compared}"
    );
    // Functions drop `__name__` even where a label (`Zone`) sorts before it.
    let (_, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[
            ("query", "rate(req_total{host=\"h1\",Zone=\"a\"}[5m])"),
            ("time", &end),
        ],
    );
    assert_eq!(
        v["data"]["result"][0]["metric"],
        serde_json::json!({"Zone": "a", "host": "h1", "job": "y", "kind": "0"}),
        "{v}"
    );
    s.stop();
}

/// `label="v"` is pushed into the scan only for values stored as written: a value that
/// needs escaping may have been stored raw through OpenTSDB's APIs and must still match.
#[test]
fn equality_matchers_find_names_stored_raw() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let pts = serde_json::json!([
        {"metric": "sys.cpu", "timestamp": 1_700_000_000, "value": 1, "tags": {"host": "web_.1"}},
        {"metric": "sys.cpu", "timestamp": 1_700_000_000, "value": 2, "tags": {"host": "web2"}},
    ]);
    let (code, body) = s.http("POST", "/api/put?sync", &pts.to_string());
    assert_eq!(code, 204, "{body}");
    let v = wait_series(&s.addr, "{__name__=\"sys.cpu\"}", "1700000010", 2);
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 2, "{v}");
    for (host, want) in [("web_.1", "1"), ("web2", "2")] {
        let (_, v) = post_form(
            &s.addr,
            "/api/v1/query",
            &[
                (
                    "query",
                    &format!("{{__name__=\"sys.cpu\",host=\"{host}\"}}"),
                ),
                ("time", "1700000010"),
            ],
        );
        assert_eq!(v["data"]["result"][0]["value"][1], want, "{host}: {v}");
    }
    let (_, v) = post_form(
        &s.addr,
        "/api/v1/query",
        &[
            ("query", "{__name__=\"sys.cpu\",host=\"nosuch\"}"),
            ("time", "1700000010"),
        ],
    );
    assert_eq!(v["data"]["result"], serde_json::json!([]), "{v}");
    s.stop();
}

/// A series whose label bytes were accepted before skips its label conversion
/// (src/prometheus/write.rs `Memo`): later samples land on it, and a bad sample is still
/// answered by name.
#[test]
fn remembered_label_bytes_keep_series_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let labels = [("__name__", "mem_bytes"), ("host", "a"), ("Zone", "z")];
    let (code, _, body) = write_v1(
        &s.addr,
        &WriteRequest {
            timeseries: vec![ts(&labels, &[(T0, 1.0)])],
            ..Default::default()
        },
    );
    assert_eq!(code, 204, "{body}");
    wait_series(&s.addr, "mem_bytes", &(T0 / 1000).to_string(), 1);
    let (code, _, body) = write_v1(
        &s.addr,
        &WriteRequest {
            timeseries: vec![ts(&labels, &[(T0 + 15_000, 2.5), (-1, 3.0)])],
            ..Default::default()
        },
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains("mem_bytes") && body.contains("host=\"a\""),
        "{body}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, v) = post_form(
            &s.addr,
            "/api/v1/query",
            &[
                ("query", "mem_bytes[1m]"),
                ("time", &((T0 + 20_000) / 1000).to_string()),
            ],
        );
        let r = &v["data"]["result"];
        if r[0]["values"].as_array().is_some_and(|a| a.len() == 2) {
            assert_eq!(r.as_array().unwrap().len(), 1, "{v}");
            assert_eq!(
                r[0]["metric"],
                serde_json::json!({"__name__": "mem_bytes", "host": "a", "Zone": "z"})
            );
            assert_eq!(r[0]["values"][1][1], "2.5");
            break;
        }
        assert!(Instant::now() < deadline, "{v}");
        std::thread::sleep(Duration::from_millis(100));
    }
    s.stop();
}

/// PromQL reads closed hours through the row cache's hour entries: the second read of an hour
/// comes from the cache, and points written since (in a row kept, and in a series new to the
/// hour) still show.
#[test]
fn promql_sees_points_written_after_its_hours_were_kept() {
    let dir = tempfile::tempdir().unwrap();
    // Compaction is held off: it would rewrite the rows between the reads.
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        "[write]\nflush_interval_ms = 100\ncompaction_delay_ms = 600000\n",
    )
    .unwrap();
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let base = T0 / 3_600_000 * 3_600_000;
    let minutes = |v: f64| (0..60).map(|i| (base + i * 60_000, v)).collect::<Vec<_>>();
    let req = WriteRequest {
        timeseries: vec![
            ts(&[("__name__", "kept"), ("host", "a")], &minutes(1.0)),
            ts(&[("__name__", "kept"), ("host", "b")], &minutes(2.0)),
        ],
        ..Default::default()
    };
    assert_eq!(write_v1(&s.addr, &req).0, 204);
    let at = (base / 1000 + 3599).to_string();
    let sum = |want: &str| -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (c, v) = post_form(
                &s.addr,
                "/api/v1/query_range",
                &[
                    ("query", "sum(sum_over_time(kept[1h]))"),
                    ("start", &at),
                    ("end", &at),
                    ("step", "60"),
                ],
            );
            assert_eq!(c, 200, "{v}");
            if v["data"]["result"][0]["values"][0][1] == want || Instant::now() > deadline {
                assert_eq!(v["data"]["result"][0]["values"][0][1], want, "{v}");
                return v;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    sum("180");
    // An hour is kept once it has gone unwritten for 2 s: read until it is (the hour before,
    // empty and never written, is kept at once).
    let deadline = Instant::now() + Duration::from_secs(20);
    while stat(&s.addr, "tsd.rowcache.bytes", "") < 2 * 60 * 16 {
        assert!(Instant::now() < deadline, "the hour was not kept");
        std::thread::sleep(Duration::from_millis(200));
        sum("180");
    }
    let hits = stat(&s.addr, "tsd.rowcache.lookups", "hit");
    sum("180");
    assert!(
        stat(&s.addr, "tsd.rowcache.lookups", "hit") > hits,
        "the next read came from the cache"
    );
    let req = WriteRequest {
        timeseries: vec![
            ts(
                &[("__name__", "kept"), ("host", "a")],
                &[(base + 30_000, 100.0)],
            ),
            ts(
                &[("__name__", "kept"), ("host", "c")],
                &[(base + 90_000, 5.0)],
            ),
        ],
        ..Default::default()
    };
    assert_eq!(write_v1(&s.addr, &req).0, 204);
    sum("285");
    s.stop();
}
