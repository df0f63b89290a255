//! Observability over real sockets: points written on every protocol (some refused) move
//! `/metrics` by exactly the expected amounts; the exposition is checked line by line;
//! `/api/stats`, its sub-endpoints and telnet `stats` report the same counters;
//! `--log-format json` writes JSON lines, including the WAL replay after a `kill -9`.

mod common;

use common::*;
use prost::Message;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};
use tsgate_prometheus::snappy;

/// Samples by `name{labels}` (labels in exposition order), checked strictly while parsed:
/// every line is a HELP, a TYPE or a sample; each family is typed once, before its samples;
/// sample names belong to their family (`_bucket`/`_sum`/`_count` for histograms); label
/// values are properly quoted and escaped; values are numbers; histogram buckets are
/// cumulative, their `le` increasing, ending in `+Inf` equal to `_count`.
fn parse_exposition(text: &str) -> BTreeMap<String, f64> {
    let name_re = regex::Regex::new(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$").unwrap();
    let sample_re =
        regex::Regex::new(r#"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*",?)*)\})? (\S+)$"#).unwrap();
    let label_re =
        regex::Regex::new(r#"([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)""#).unwrap();
    assert!(text.ends_with('\n'), "exposition ends with a newline");
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helped = HashSet::new();
    let mut current: Option<(String, String)> = None;
    let mut samples = BTreeMap::new();
    // Histogram series (family + labels without le) -> [(le, count)], and their _count.
    let mut buckets: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut counts: BTreeMap<String, f64> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(name_re.is_match(name), "{line}");
            assert!(helped.insert(name.to_string()), "HELP twice: {line}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(name_re.is_match(name), "{line}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            assert!(
                types.insert(name.to_string(), kind.to_string()).is_none(),
                "TYPE twice: {line}"
            );
            current = Some((name.to_string(), kind.to_string()));
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment: {line}");
        let c = sample_re
            .captures(line)
            .unwrap_or_else(|| panic!("not a sample line: {line:?}"));
        let name = &c[1];
        let (family, kind) = current
            .clone()
            .unwrap_or_else(|| panic!("sample before any TYPE: {line}"));
        let ok_name = match kind.as_str() {
            "histogram" => [
                format!("{family}_bucket"),
                format!("{family}_sum"),
                format!("{family}_count"),
            ]
            .contains(&name.to_string()),
            _ => name == family,
        };
        assert!(ok_name, "sample {name} outside its family {family}");
        let value: f64 = match &c[4] {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in {line}")),
        };
        let labels: Vec<(String, String)> = c
            .get(3)
            .map(|l| {
                label_re
                    .captures_iter(l.as_str())
                    .map(|x| (x[1].to_string(), x[2].to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let key_of = |ls: &[(String, String)]| {
            let inner: Vec<String> = ls.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            if inner.is_empty() {
                String::new()
            } else {
                format!("{{{}}}", inner.join(","))
            }
        };
        let key = format!("{name}{}", key_of(&labels));
        assert!(
            samples.insert(key.clone(), value).is_none(),
            "duplicate sample {key}"
        );
        if kind == "histogram" {
            let base: Vec<(String, String)> =
                labels.iter().filter(|(k, _)| k != "le").cloned().collect();
            let series = format!("{family}{}", key_of(&base));
            if name.ends_with("_bucket") {
                let le = labels
                    .iter()
                    .find(|(k, _)| k == "le")
                    .map(|(_, v)| v.clone())
                    .expect("bucket has le");
                let le: f64 = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                buckets.entry(series).or_default().push((le, value));
            } else if name.ends_with("_count") {
                counts.insert(series, value);
            }
        }
    }
    for (series, b) in &buckets {
        assert!(
            b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "buckets of {series} not monotone: {b:?}"
        );
        assert_eq!(b.last().unwrap().0, f64::INFINITY, "{series} ends in +Inf");
        assert_eq!(
            Some(&b.last().unwrap().1),
            counts.get(series),
            "{series}: +Inf bucket == _count"
        );
    }
    assert_eq!(
        buckets.len(),
        counts.len(),
        "every histogram series has buckets and a count"
    );
    samples
}

fn scrape(addr: &str) -> BTreeMap<String, f64> {
    let (code, body) = http(addr, "GET", "/metrics", "", &[]);
    assert_eq!(code, 200, "{body}");
    parse_exposition(&body)
}

fn get(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    *m.get(key).unwrap_or_else(|| panic!("no sample {key}"))
}

fn rejected(m: &BTreeMap<String, f64>, proto: &str, reason: &str) -> f64 {
    get(
        m,
        &format!("tsgate_points_rejected_total{{protocol=\"{proto}\",reason=\"{reason}\"}}"),
    )
}

fn stored(m: &BTreeMap<String, f64>, proto: &str) -> f64 {
    get(
        m,
        &format!("tsgate_points_stored_total{{protocol=\"{proto}\"}}"),
    )
}

/// Scrapes until `done` holds (UDP and graphite TCP answer nothing to wait on).
fn scrape_until(
    addr: &str,
    what: &str,
    done: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, f64> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m = scrape(addr);
        if done(&m) {
            return m;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A protocol-2 pickle of `[(path, (ts, value)), …]`, as carbon-relay frames it.
fn pickle_frame(points: &[(&str, i32, i32)]) -> Vec<u8> {
    let mut p = b"\x80\x02]".to_vec();
    for (path, ts, v) in points {
        p.push(b'X');
        p.extend_from_slice(&(path.len() as u32).to_le_bytes());
        p.extend_from_slice(path.as_bytes());
        p.push(b'J');
        p.extend_from_slice(&ts.to_le_bytes());
        p.push(b'J');
        p.extend_from_slice(&v.to_le_bytes());
        p.extend_from_slice(b"\x86\x86a");
    }
    p.push(b'.');
    tsgate_graphite::frame::encode(&p)
}

fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
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

fn remote_write(addr: &str, body: &[u8]) -> u16 {
    http_bytes(
        addr,
        "POST",
        "/api/v1/write",
        body,
        &[
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
        ],
    )
    .0
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

struct Node {
    server: Server,
    plain: String,
    pickle: String,
    _dir: tempfile::TempDir,
}

fn start() -> Node {
    let dir = tempfile::tempdir().unwrap();
    let plain = format!("127.0.0.1:{}", free_port());
    let pickle = format!("127.0.0.1:{}", free_port());
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, format!("[server]\ngraphite_listen = \"{plain}\"\npickle_listen = \"{pickle}\"\n[write]\nflush_interval_ms = 100\n")).unwrap();
    let server = Server::start_with(&dir.path().join("data"), Some(&cfg));
    Node {
        server,
        plain,
        pickle,
        _dir: dir,
    }
}

#[test]
fn every_protocol_moves_its_counters_by_exact_amounts() {
    let n = start();
    let a = n.server.addr.clone();
    let before = scrape(&a);
    let t = now();

    // Telnet: 3 stored; refused: 1 parse, 1 tags (9 > limits.max_tags), 1 value.
    let mut tn = n.server.telnet();
    let many: String = (0..9).map(|i| format!(" k{i}=v")).collect();
    tn.send(&format!(
        "put obs.tn {t} 1 host=a\nput bad\nput obs.tn {} 2 host=a\nput obs.tn {t} 3{many}\nput obs.tn {t} abc host=a\nput obs.tn2 {t} 4 host=b\n",
        t + 1
    ));
    let answers = tn.sync();
    assert_eq!(answers.len(), 3, "{answers:?}");

    // /api/put: 2 stored, 1 bad value, 1 with too many tags; then a body that is not JSON.
    let tags9: serde_json::Map<String, Value> = (0..9)
        .map(|i| (format!("k{i}"), Value::from("v")))
        .collect();
    let body = serde_json::json!([
        {"metric": "obs.put", "timestamp": t, "value": 1, "tags": {"host": "a"}},
        {"metric": "obs.put", "timestamp": t + 1, "value": 2, "tags": {"host": "a"}},
        {"metric": "obs.put", "timestamp": t, "value": "x", "tags": {"host": "a"}},
        {"metric": "obs.put", "timestamp": t, "value": 3, "tags": tags9},
    ]);
    assert_eq!(n.server.http("POST", "/api/put", &body.to_string()).0, 400);
    assert_eq!(n.server.http("POST", "/api/put", "{not json").0, 400);
    assert_eq!(n.server.http("POST", "/api/put", &serde_json::json!({"metric": "obs.put", "timestamp": t + 2, "value": 5, "tags": {"host": "a"}}).to_string()).0, 204);

    // Remote write: 2 stored; refused: 1 without __name__, 1 over prometheus.max_tags (32),
    // 1 with a negative timestamp; then a body that is not snappy.
    let labels33: Vec<(String, String)> = (0..33)
        .map(|i| (format!("l{i}"), "v".to_string()))
        .chain([("__name__".to_string(), "obs_rw_many".to_string())])
        .collect();
    let labels33: Vec<(&str, &str)> = labels33
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let ms = t * 1000;
    let req = WriteRequest {
        timeseries: vec![
            series(
                &[("__name__", "obs_rw"), ("job", "x")],
                &[(ms, 1.0), (ms + 1000, 2.0)],
            ),
            series(&[("job", "nameless")], &[(ms, 1.0)]),
            series(&labels33, &[(ms, 1.0)]),
            series(&[("__name__", "obs_rw_neg"), ("job", "x")], &[(-5, 1.0)]),
        ],
        metadata: vec![],
    };
    assert_eq!(
        remote_write(&a, &snappy::compress(&req.encode_to_vec())),
        400
    );
    // The same series again, spelled byte for byte as before (the raw-label memo knows it, so
    // its samples skip the per-sample path): 1 stored, 1 refused for its timestamp.
    let again = WriteRequest {
        timeseries: vec![series(
            &[("__name__", "obs_rw"), ("job", "x")],
            &[(ms + 2000, 3.0), (-5, 1.0)],
        )],
        metadata: vec![],
    };
    assert_eq!(
        remote_write(&a, &snappy::compress(&again.encode_to_vec())),
        400
    );
    assert_eq!(remote_write(&a, b"\x05\xff\xff"), 400);

    // Graphite plaintext over TCP: 2 stored, 1 unparsable line, 1 line over 16 KiB.
    let mut g = TcpStream::connect(&n.plain).unwrap();
    let long = "x".repeat(20_000);
    g.write_all(format!("obs.gp.a 1 {t}\nnot-a-line\n{long} 1 {t}\nobs.gp.b 2 {t}\n").as_bytes())
        .unwrap();
    drop(g);
    // Graphite over UDP: 1 stored, 1 unparsable.
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(format!("obs.gu 1 {t}\nbroken\n").as_bytes(), &n.plain)
        .unwrap();
    // Pickle: a frame of 2 points, then a frame with a forbidden opcode (GLOBAL).
    let mut p = TcpStream::connect(&n.pickle).unwrap();
    p.write_all(&pickle_frame(&[
        ("obs.pk.a", t as i32, 1),
        ("obs.pk.b", t as i32, 2),
    ]))
    .unwrap();
    p.write_all(&tsgate_graphite::frame::encode(b"\x80\x02cos\nsystem\n."))
        .unwrap();
    drop(p);

    let m = scrape_until(&a, "graphite counters", |m| {
        stored(m, "graphite_plaintext") >= 2.0
            && stored(m, "graphite_udp") >= 1.0
            && stored(m, "graphite_pickle") >= 2.0
            && get(
                m,
                "tsgate_ingest_batches_rejected_total{protocol=\"graphite_pickle\"}",
            ) >= 1.0
    });
    let d = |k: &str| get(&m, k) - before.get(k).copied().unwrap_or(0.0);
    let rej = |p: &str, r: &str| rejected(&m, p, r) - rejected(&before, p, r);
    let st = |p: &str| stored(&m, p) - stored(&before, p);

    assert_eq!(st("telnet"), 3.0);
    assert_eq!(
        (
            rej("telnet", "parse"),
            rej("telnet", "tags"),
            rej("telnet", "value")
        ),
        (1.0, 1.0, 1.0)
    );
    assert_eq!(d("tsgate_points_received_total{protocol=\"telnet\"}"), 6.0);

    assert_eq!(st("http_put"), 3.0);
    assert_eq!(
        (rej("http_put", "value"), rej("http_put", "tags")),
        (1.0, 1.0)
    );
    assert_eq!(
        d("tsgate_points_received_total{protocol=\"http_put\"}"),
        5.0
    );
    assert_eq!(
        d("tsgate_ingest_batches_rejected_total{protocol=\"http_put\"}"),
        1.0
    );

    assert_eq!(st("remote_write"), 3.0);
    assert_eq!(
        (
            rej("remote_write", "parse"),
            rej("remote_write", "tags"),
            rej("remote_write", "value")
        ),
        (1.0, 1.0, 2.0)
    );
    assert_eq!(
        d("tsgate_ingest_batches_rejected_total{protocol=\"remote_write\"}"),
        1.0
    );

    assert_eq!(st("graphite_plaintext"), 2.0);
    assert_eq!(
        (
            rej("graphite_plaintext", "parse"),
            rej("graphite_plaintext", "limit")
        ),
        (1.0, 1.0)
    );
    assert_eq!(
        (st("graphite_udp"), rej("graphite_udp", "parse")),
        (1.0, 1.0)
    );
    assert_eq!(st("graphite_pickle"), 2.0);
    assert_eq!(
        d("tsgate_ingest_batches_rejected_total{protocol=\"graphite_pickle\"}"),
        1.0
    );

    // Nothing else was refused anywhere.
    let total_rejected = |m: &BTreeMap<String, f64>| {
        m.iter()
            .filter(|(k, _)| k.starts_with("tsgate_points_rejected_total"))
            .map(|(_, v)| v)
            .sum::<f64>()
    };
    assert_eq!(
        total_rejected(&m) - total_rejected(&before),
        12.0,
        "3 telnet + 2 put + 4 remote write + 2 plaintext + 1 udp"
    );

    // HTTP requests by family and status; connections by listener.
    assert_eq!(
        d("tsgate_http_requests_total{endpoint=\"put\",code=\"400\"}"),
        2.0
    );
    assert_eq!(
        d("tsgate_http_requests_total{endpoint=\"put\",code=\"204\"}"),
        1.0
    );
    assert_eq!(
        d("tsgate_http_requests_total{endpoint=\"remote_write\",code=\"400\"}"),
        3.0
    );
    assert!(d("tsgate_connections_total{listener=\"pickle\"}") >= 1.0);
    assert!(d("tsgate_connections_total{listener=\"graphite\"}") >= 1.0);
    assert!(
        get(&m, "tsgate_connections_open{listener=\"opentsdb\"}") >= 1.0,
        "the telnet connection is still open"
    );

    // WAL and UIDs: 13 points stored in all; one fsync timing per group commit.
    assert!(d("tsgate_wal_bytes_written_total") > 0.0);
    assert_eq!(
        get(&m, "tsgate_wal_commits_total"),
        get(&m, "tsgate_wal_fsync_duration_seconds_count")
    );
    // obs.tn obs.tn2 obs.put obs_rw obs.gp.a obs.gp.b obs.gu obs.pk.a obs.pk.b (+ nothing refused got one)
    assert_eq!(d("tsgate_uid_assigned_total{kind=\"metrics\"}"), 9.0);
    assert!(get(&m, "tsgate_series_cache_size") >= 9.0);
    assert!(
        get(
            &m,
            "tsgate_store_operation_duration_seconds_count{op=\"increment\"}"
        ) >= 9.0
    );
    assert!(
        get(
            &m,
            "tsgate_store_operation_duration_seconds_count{op=\"cas\"}"
        ) >= 18.0
    );
    assert!(get(&m, "process_resident_memory_bytes") > 1e6);
    assert!(get(&m, "process_open_fds") > 3.0);

    // One query on each API adds exactly one observation to its latency histogram.
    let v = n
        .server
        .wait_points(&format!("/api/query?start={}&m=sum:obs.tn", t - 10), 2);
    assert_eq!(v[0]["dps"].as_object().unwrap().len(), 2);
    let q = |p: &str| {
        let (code, body) = n.server.http("GET", p, "");
        assert_eq!(code, 200, "{p}: {body}");
    };
    q(&format!("/api/v1/query?query=obs_rw&time={}", t + 1));
    q(&format!(
        "/api/v1/query_range?query=obs_rw&start={}&end={}&step=1",
        t - 5,
        t + 5
    ));
    q(&format!(
        "/render?target=obs.gp.a&from={}&until={}&format=json",
        t - 60,
        t + 60
    ));
    let m2 = scrape(&a);
    for api in ["promql_instant", "promql_range", "graphite_render"] {
        let k = format!("tsgate_query_duration_seconds_count{{api=\"{api}\"}}");
        assert_eq!(get(&m2, &k) - get(&m, &k), 1.0, "{k}");
    }
    assert!(get(&m2, "tsgate_query_duration_seconds_count{api=\"opentsdb\"}") >= 1.0);

    // /api/stats: OpenTSDB's shape, the same numbers.
    let (code, body) = n.server.http("GET", "/api/stats", "");
    assert_eq!(code, 200);
    let rows: Vec<Value> = serde_json::from_str(&body).unwrap();
    let host = rows[0]["tags"]["host"].as_str().unwrap().to_string();
    for r in &rows {
        assert!(r["metric"].as_str().unwrap().starts_with("tsd."), "{r}");
        assert!((r["timestamp"].as_i64().unwrap() - now()).abs() < 60, "{r}");
        r["value"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("value is a numeric string: {r}"));
        assert_eq!(r["tags"]["host"], host.as_str(), "{r}");
    }
    let stat = |metric: &str, tag: Option<(&str, &str)>| -> u64 {
        rows.iter()
            .find(|r| r["metric"] == metric && tag.is_none_or(|(k, v)| r["tags"][k] == v))
            .unwrap_or_else(|| panic!("no {metric} in {body}"))["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let m3 = scrape(&a);
    assert_eq!(
        stat("tsd.rpc.received", Some(("type", "put"))) as f64,
        get(&m3, "tsgate_points_received_total{protocol=\"telnet\"}")
    );
    assert_eq!(stat("tsd.rpc.errors", Some(("type", "put"))), 3);
    assert_eq!(stat("tsd.http.put.received", None), 5);
    assert_eq!(stat("tsd.http.put.errors", None), 2);
    assert_eq!(stat("tsd.graphite.received", Some(("type", "pickle"))), 2);
    assert_eq!(stat("tsd.graphite.bad_frames", Some(("type", "pickle"))), 1);
    assert_eq!(stat("tsd.graphite.errors", Some(("type", "plaintext"))), 2);
    assert_eq!(
        stat("tsd.uid.ids-assigned", Some(("kind", "metrics"))) as f64,
        get(&m3, "tsgate_uid_assigned_total{kind=\"metrics\"}")
    );

    // Telnet `stats`: OpenTSDB's put-style lines, the same counters.
    tn.send("stats\n");
    let lines = tn.sync();
    assert_eq!(lines.len(), rows.len());
    let line_re =
        regex::Regex::new(r"^(tsd\.[a-z._-]+) (\d+) (\d+) host=\S+( [a-z]+=\S+)?\n$").unwrap();
    for l in &lines {
        assert!(line_re.is_match(l), "{l:?}");
    }
    assert!(
        lines.iter().any(|l| l.starts_with("tsd.rpc.errors ")
            && l.contains(" 3 host=")
            && l.ends_with(" type=put\n")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tsd.http.put.received ") && l.contains(" 5 host=")),
        "{lines:?}"
    );

    // Sub-endpoints.
    let (code, body) = n.server.http("GET", "/api/stats/query", "");
    assert_eq!(code, 200);
    let sq: Value = serde_json::from_str(&body).unwrap();
    let completed = sq["completed"].as_array().unwrap();
    assert!(
        completed
            .iter()
            .any(|c| c["query"]["path"] == "/render" && c["httpResponse"]["code"] == 200),
        "{body}"
    );
    assert!(
        completed
            .iter()
            .any(|c| c["query"]["path"] == "/api/v1/query_range"),
        "{body}"
    );
    assert!(sq["running"].as_array().unwrap().is_empty());
    let (_, body) = n.server.http("GET", "/api/stats/jvm", "");
    let jvm: Value = serde_json::from_str(&body).unwrap();
    assert!(
        jvm["runtime"]["startTime"].as_u64().unwrap() / 1000 <= now() as u64,
        "{body}"
    );
    assert!(
        jvm["memory"]["residentBytes"].as_u64().unwrap() > 0,
        "{body}"
    );
    let (_, body) = n.server.http("GET", "/api/stats/threads", "");
    let threads: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert!(
        threads
            .iter()
            .any(|t| t["name"].as_str().unwrap().starts_with("shard-")),
        "{body}"
    );
    assert_eq!(
        n.server.http("GET", "/api/stats/region_clients", "").1,
        "[]"
    );

    // graphite-web's `/metrics?query=` still finds paths.
    let (code, body) = n
        .server
        .http("GET", "/metrics?query=obs.gp.*&format=treejson", "");
    assert_eq!(code, 200);
    assert!(body.contains("obs.gp.a"), "{body}");
    let m4 = scrape(&a);
    assert_eq!(
        get(
            &m4,
            "tsgate_http_requests_total{endpoint=\"graphite_meta\",code=\"200\"}"
        ),
        1.0
    );
    // A scrape is answered before it counts itself: between m3 and m4, m3 alone was counted.
    let scrapes = "tsgate_http_requests_total{endpoint=\"metrics\",code=\"200\"}";
    assert_eq!(get(&m4, scrapes) - get(&m3, scrapes), 1.0);
    n.server.stop();
}

/// Starts `tsgate serve` with stderr captured to a file.
fn spawn_logged(
    data: &std::path::Path,
    addr: &str,
    cfg: &std::path::Path,
    log: &std::path::Path,
    extra: &[&str],
) -> std::process::Child {
    let child = Command::new(bin())
        .args(["serve", "--data-dir"])
        .arg(data)
        .args([
            "--listen",
            addr,
            "--graphite-listen",
            "",
            "--pickle-listen",
            "",
            "--config",
        ])
        .arg(cfg)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while http(addr, "GET", "/api/version", "", &[]).0 != 200 {
        assert!(Instant::now() < deadline, "tsgate did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn json_lines(log: &std::path::Path) -> Vec<Value> {
    let f = std::fs::File::open(log).unwrap();
    std::io::BufReader::new(f)
        .lines()
        .map(|l| l.unwrap())
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

#[test]
fn json_logs_and_the_wal_replay_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let addr = format!("127.0.0.1:{}", free_port());
    // No flush for a minute: acknowledged points stay in the write-ahead log only. The
    // config asks for JSON logs the first time; the flag does the second time.
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        "[write]\nflush_interval_ms = 60000\n[log]\nformat = \"json\"\n",
    )
    .unwrap();
    let log1 = dir.path().join("first.log");
    let mut child = spawn_logged(&data, &addr, &cfg, &log1, &["--log-level", "debug"]);
    let mut t = Telnet::connect(&addr);
    t.send("put obs.replay 1700000000 1 host=a\nput obs.replay 1700000001 2 host=a\nput obs.replay 1700000002 3 host=a\nput broken\n");
    assert_eq!(t.sync().len(), 1);
    let m = scrape(&addr);
    assert_eq!(
        get(&m, "tsgate_write_buffered_points"),
        3.0,
        "acknowledged and not flushed"
    );
    assert_eq!(get(&m, "tsgate_wal_replayed_points_total"), 0.0);
    child.kill().unwrap();
    child.wait().unwrap();

    let lines = json_lines(&log1);
    let listening = lines
        .iter()
        .find(|l| l["message"].as_str().unwrap_or("").contains("listening"))
        .expect("listening line");
    assert_eq!(listening["addr"], addr.as_str());
    assert_eq!(listening["backend"], "embedded");
    assert_eq!(listening["level"], "INFO");
    // The refused line is logged at debug level with its reason.
    assert!(
        lines
            .iter()
            .any(|l| l["level"] == "DEBUG" && l["reason"] == "parse" && l["protocol"] == "telnet"),
        "{lines:?}"
    );

    std::fs::write(&cfg, "[write]\nflush_interval_ms = 100\n").unwrap();
    let log2 = dir.path().join("second.log");
    let mut child = spawn_logged(&data, &addr, &cfg, &log2, &["--log-format", "json"]);
    let m = scrape(&addr);
    assert_eq!(get(&m, "tsgate_wal_replayed_points_total"), 3.0);
    let (_, body) = http(
        &addr,
        "GET",
        "/api/query?start=1699999000&end=1700000100&m=sum:obs.replay",
        "",
        &[],
    );
    assert!(body.contains("\"1700000002\":3"), "{body}");
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    assert!(child.wait().unwrap().success());
    let lines = json_lines(&log2);
    let replay = lines
        .iter()
        .find(|l| l["message"] == "write-ahead log replayed")
        .expect("replay line");
    assert_eq!(replay["points"], 3);
    assert!(lines.iter().any(|l| l["message"]
        .as_str()
        .unwrap_or("")
        .starts_with("shutting down")));
    assert!(lines.iter().any(|l| l["message"] == "stopped cleanly"));
    // Text stays the default, and a bad format is refused up front.
    let out = Command::new(bin())
        .args(["serve", "--log-format", "xml", "--data-dir"])
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid log format \"xml\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn hbase_backend_is_timed_and_its_thrift_calls_exposed() {
    let b = Backend::hbase();
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(&b, &dir.path().join("data"), None);
    let mut t = s.telnet();
    t.send("put obs.hb 1700000000 1 host=a\nput obs.hb 1700000001 2 host=a\n");
    assert!(t.sync().is_empty());
    s.wait_points("/api/query?start=1699999000&end=1700000100&m=sum:obs.hb", 2);
    let m = scrape(&s.addr);
    assert_eq!(
        get(
            &m,
            &format!(
                "tsgate_build_info{{version=\"{}\",backend=\"hbase\"}}",
                env!("CARGO_PKG_VERSION")
            )
        ),
        1.0
    );
    assert_eq!(stored(&m, "telnet"), 2.0);
    // The Thrift calls the pool counted, one series per method, and the store's own timings.
    let rpcs: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("tsgate_hbase_rpcs_total{method="))
        .map(|(_, v)| v)
        .sum();
    assert!(rpcs > 0.0, "{m:?}");
    for op in ["get", "put", "scan", "increment", "cas"] {
        assert!(
            get(
                &m,
                &format!("tsgate_store_operation_duration_seconds_count{{op=\"{op}\"}}")
            ) >= 1.0,
            "{op}"
        );
    }
    assert_eq!(get(&m, "tsgate_store_errors_total{op=\"put\"}"), 0.0);
    let (code, body) = s.http("GET", "/api/stats/region_clients", "");
    assert_eq!(code, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v[0]["endpoint"],
        b.thrift_addr().unwrap().as_str(),
        "{body}"
    );
    assert!(v[0]["rpcsSent"].as_u64().unwrap() > 0, "{body}");
    s.stop();
}
