//! InfluxDB line protocol and OTLP/HTTP metrics into a real server, read back through PromQL,
//! OpenTSDB's `/api/query` and graphite-web's `/render` under the documented names; bad
//! payloads answered in each API's shape while the good part of a request is kept.

mod common;
use common::*;
use prost::Message;
use serde_json::Value;
use std::io::Write;
use std::time::{Duration, Instant};
use tsgate_otlp::proto::*;

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// A whole second a minute ago (inside PromQL's lookback, on a 2-byte qualifier).
fn t0() -> i64 {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 60) as i64
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// PromQL instant value of `q` at `t`, waiting for the flush.
fn promql(s: &Server, q: &str, t: i64) -> Vec<Value> {
    let path = format!(
        "/api/v1/query?query={}&time={t}",
        form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, body) = s.http("GET", &path, "");
        assert_eq!(code, 200, "{body}");
        let r = json(&body)["data"]["result"].as_array().unwrap().clone();
        if !r.is_empty() || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn config(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("tsgate.toml");
    std::fs::write(&p, format!("[write]\nflush_interval_ms = 100\n{extra}")).unwrap();
    p
}

#[test]
fn influx_lines_read_back_through_all_three_apis() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "");
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let t = t0();
    // 1.x with gzip, seconds, a db, one bad line among good ones.
    let body = format!(
        "cpu,host=web01,region=us\\ west usage_user=1.5,usage_system=2i,up=true,msg=\"hi\" {t}\n\
         this line is bad\n\
         mem,host=web01 value=42 {t}\n"
    );
    let (code, resp) = http_bytes(
        &s.addr,
        "POST",
        "/write?db=telegraf&precision=s",
        &gzip(body.as_bytes()),
        &[("Content-Encoding", "gzip")],
    );
    let resp = String::from_utf8_lossy(&resp).to_string();
    assert_eq!(code, 400, "{resp}");
    let err = json(&resp)["error"].as_str().unwrap().to_string();
    assert!(
        err.starts_with("partial write: unable to parse 'this line is bad' (line 2): "),
        "{err}"
    );

    // PromQL: measurement_field, tags as labels, the db label; the string field is not stored.
    let r = promql(&s, "cpu_usage_user", t);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        r[0]["metric"],
        serde_json::json!({"__name__":"cpu_usage_user","db":"telegraf","host":"web01","region":"us west"})
    );
    assert_eq!(r[0]["value"][1], "1.5");
    assert_eq!(promql(&s, "cpu_usage_system", t)[0]["value"][1], "2");
    assert_eq!(promql(&s, "cpu_up", t)[0]["value"][1], "1");
    assert_eq!(promql(&s, "mem_value", t)[0]["value"][1], "42");
    let (_, names) = s.http("GET", "/api/v1/label/__name__/values", "");
    assert!(!names.contains("cpu_msg"), "{names}");

    // OpenTSDB: the same metric and tags (the space escaped as Prometheus labels are).
    let v = s.wait_points(
        &format!(
            "/api/query?start={}&end={}&m=sum:cpu_usage_user%7Bhost=web01%7D",
            t - 1,
            t + 1
        ),
        1,
    );
    assert_eq!(v[0]["dps"][t.to_string()], 1.5, "{v}");
    assert_eq!(v[0]["tags"]["region"], "us_.20west", "{v}");

    // graphite-web: the tagged series through seriesByTag.
    let (code, body) = s.http(
        "GET",
        &format!(
            "/render?target=seriesByTag(%27name=mem_value%27)&from={}&until={}&format=json",
            t - 600,
            t + 60
        ),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let v = json(&body);
    let dps = v[0]["datapoints"].as_array().unwrap();
    assert_eq!(v[0]["target"], "mem_value;db=telegraf;host=web01");
    assert!(dps.iter().any(|p| p[0] == 42.0), "{v}");

    // 2.x: nanoseconds by default, 204, no db label (as VictoriaMetrics).
    let (code, body) = s.http(
        "POST",
        "/api/v2/write?org=o&bucket=b",
        &format!("disk,host=web02 free=3u {}000000000", t),
    );
    assert_eq!((code, body.as_str()), (204, ""));
    let r = promql(&s, "disk_free", t);
    assert_eq!(
        r[0]["metric"],
        serde_json::json!({"__name__":"disk_free","host":"web02"})
    );
    // The 2.x error shape, and a precision only 1.x has.
    let (code, body) = s.http("POST", "/api/v2/write?precision=h", "m f=1 1");
    assert_eq!(code, 400);
    assert_eq!(json(&body)["code"], "invalid", "{body}");
    let (code, body) = s.http("POST", "/api/v2/write", "only bad lines");
    assert_eq!(code, 400);
    assert!(
        json(&body)["message"]
            .as_str()
            .unwrap()
            .starts_with("unable to parse"),
        "{body}"
    );
    assert_eq!(s.http("GET", "/ping", "").0, 204);
    // Counted: 5 points stored, 2 lines refused, one request refused as a whole (precision).
    let (_, stats) = s.http("GET", "/api/stats", "");
    let stat = |name: &str| {
        json(&stats)
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == name && r["tags"]["type"] == "influx")
            .map(|r| r["value"].as_str().unwrap().parse::<u64>().unwrap())
    };
    assert_eq!(stat("tsd.http.write.received"), Some(7), "{stats}");
    assert_eq!(stat("tsd.http.write.errors"), Some(2), "{stats}");
    assert_eq!(stat("tsd.http.write.bad_requests"), Some(1), "{stats}");
}

#[test]
fn influx_limits_and_auth() {
    let dir = tempfile::tempdir().unwrap();
    let token = "influx-writer-token";
    let cfg = config(
        dir.path(),
        &format!(
            "[limits]\nmax_points_per_request = 2\n[auth]\nenabled = true\n[[auth.tokens]]\nname = \"w\"\ntoken_sha256 = \"{}\"\nrights = [\"write\"]\n",
            tsgate::server::auth::config::hex(&tsgate::server::auth::config::token_sha256(token))
        ),
    );
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let (code, body) = http(&s.addr, "POST", "/write", "m f=1", &[]);
    assert_eq!(code, 401);
    assert!(json(&body)["error"]
        .as_str()
        .unwrap()
        .contains("Authentication required"));
    let (code, body) = http(&s.addr, "POST", "/api/v2/write", "m f=1", &[]);
    assert_eq!(
        (code, json(&body)["code"].clone()),
        (401, "unauthorized".into())
    );
    let bearer = format!("Bearer {token}");
    let auth = [("Authorization", bearer.as_str())];
    assert_eq!(http(&s.addr, "POST", "/write", "m f=1,g=2", &auth).0, 204);
    // InfluxDB 2.x's scheme for the same token.
    let influx_token = format!("Token {token}");
    let (code, body) = http(
        &s.addr,
        "POST",
        "/api/v2/write",
        "m f=3",
        &[("Authorization", influx_token.as_str())],
    );
    assert_eq!((code, body.as_str()), (204, ""));
    // Three fields are three points: past the limit, nothing stored.
    let (code, body) = http(&s.addr, "POST", "/write", "m f=1,g=2,h=3", &auth);
    assert_eq!(code, 413, "{body}");
    assert!(body.contains("limits.max_points_per_request = 2"), "{body}");
}

fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(Any::String(v.into())),
        }),
    }
}

#[test]
fn otlp_protobuf_and_json_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "");
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let t = t0();
    let ns = t as u64 * 1_000_000_000;
    let req = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![
                    kv("service.name", "checkout"),
                    kv("service.instance.id", "pod-1"),
                    kv("k8s.namespace.name", "prod"),
                ],
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: None,
                metrics: vec![
                    Metric {
                        name: "http.server.requests".into(),
                        unit: "1".into(),
                        description: "requests".into(),
                        data: Some(Data::Sum(Sum {
                            aggregation_temporality: TEMPORALITY_CUMULATIVE,
                            is_monotonic: true,
                            data_points: vec![NumberDataPoint {
                                attributes: vec![kv("http.method", "GET")],
                                time_unix_nano: ns,
                                value: Some(NumberValue::AsInt(17)),
                                ..Default::default()
                            }],
                        })),
                    },
                    Metric {
                        name: "queue.delta".into(),
                        unit: String::new(),
                        description: String::new(),
                        data: Some(Data::Sum(Sum {
                            aggregation_temporality: TEMPORALITY_DELTA,
                            is_monotonic: true,
                            data_points: vec![NumberDataPoint {
                                time_unix_nano: ns,
                                value: Some(NumberValue::AsInt(1)),
                                ..Default::default()
                            }],
                        })),
                    },
                ],
            }],
        }],
    };
    let (code, body) = http_bytes(
        &s.addr,
        "POST",
        "/v1/metrics",
        &req.encode_to_vec(),
        &[("Content-Type", "application/x-protobuf")],
    );
    assert_eq!(code, 200);
    let resp = ExportMetricsServiceResponse::decode(&body[..]).unwrap();
    let partial = resp.partial_success.unwrap();
    assert_eq!(partial.rejected_data_points, 1);
    assert!(
        partial.error_message.contains("delta temporality"),
        "{}",
        partial.error_message
    );

    let r = promql(&s, "http_server_requests_total", t);
    assert_eq!(
        r[0]["metric"],
        serde_json::json!({"__name__":"http_server_requests_total","http_method":"GET","instance":"pod-1","job":"checkout"})
    );
    assert_eq!(r[0]["value"][1], "17");
    let r = promql(&s, "target_info", t);
    assert_eq!(
        r[0]["metric"],
        serde_json::json!({"__name__":"target_info","instance":"pod-1","job":"checkout","k8s_namespace_name":"prod"})
    );
    assert!(promql(&s, "{__name__=~\"queue.*\"}", t).is_empty());
    let v = s.wait_points(
        &format!(
            "/api/query?start={}&end={}&m=sum:http_server_requests_total%7Bjob=checkout%7D",
            t - 1,
            t + 1
        ),
        1,
    );
    assert_eq!(v[0]["dps"][t.to_string()], 17, "{v}");
    let (code, body) = s.http(
        "GET",
        &format!(
            "/render?target=seriesByTag(%27name=target_info%27)&from={}&until={}&format=json",
            t - 600,
            t + 60
        ),
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert!(json(&body)[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p[0] == 1.0));

    // OTLP/JSON, gzip, on Prometheus' path: a histogram.
    let body = format!(
        r#"{{"resourceMetrics":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"checkout"}}}}]}},
        "scopeMetrics":[{{"metrics":[{{"name":"rpc.duration","unit":"ms","histogram":{{"aggregationTemporality":2,
        "dataPoints":[{{"timeUnixNano":"{ns}","count":"5","sum":12.5,"bucketCounts":["2","3"],"explicitBounds":[10]}}]}}}}]}}]}}]}}"#
    );
    let (code, resp) = http_bytes(
        &s.addr,
        "POST",
        "/api/v1/otlp/v1/metrics",
        &gzip(body.as_bytes()),
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
    );
    assert_eq!((code, String::from_utf8_lossy(&resp).as_ref()), (200, "{}"));
    let r = promql(&s, "rpc_duration_milliseconds_bucket", t);
    let mut got: Vec<(String, String)> = r
        .iter()
        .map(|s| {
            (
                s["metric"]["le"].as_str().unwrap().to_string(),
                s["value"][1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![("+Inf".into(), "5".into()), ("10".into(), "2".into())]
    );
    assert_eq!(
        promql(&s, "rpc_duration_milliseconds_sum", t)[0]["value"][1],
        "12.5"
    );

    // Bad payloads: 400 with the reason; nothing else lost.
    let (code, body) = http(
        &s.addr,
        "POST",
        "/v1/metrics",
        "\u{1}garbage",
        &[("Content-Type", "application/x-protobuf")],
    );
    assert_eq!(code, 400);
    assert!(body.contains("cannot decode the protobuf"), "{body}");
    let (code, body) = http(
        &s.addr,
        "POST",
        "/v1/metrics",
        r#"{"resourceMetrics":{}}"#,
        &[("Content-Type", "application/json")],
    );
    assert_eq!(code, 400);
    assert!(body.contains("resourceMetrics: not an array"), "{body}");
    let (code, _) = http(
        &s.addr,
        "POST",
        "/v1/metrics",
        "x",
        &[("Content-Type", "text/plain")],
    );
    assert_eq!(code, 415);
    assert_eq!(
        promql(&s, "http_server_requests_total", t)[0]["value"][1],
        "17"
    );
}
