//! Issue 35's findings replayed against a real server run under an address-space cap
//! (`prlimit --as`), while a valid writer sends points alongside: deep nesting on every query
//! API, the fill-policy bomb, render's series × steps bombs, a PromQL subquery bomb, answers
//! past `query.max_answer_bytes`, the remote-write error bomb and 16 parallel 60 MiB bodies
//! (`limits.max_body_bytes_in_flight`). Each answers its API's error,
//! the server stays up, its peak resident memory stays under a bound, and the writer loses
//! nothing.

mod common;
use common::*;
use prost::Message;
use serde_json::Value;
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};
use tsgate_prometheus::snappy;

/// The server's address space: every bomb replayed here reached 2 to 23 GB before.
const AS_CAP: u64 = 4 << 30;
/// Peak resident memory allowed over the whole run (a debug build, default limits).
const RSS_BOUND_KB: u64 = 512 * 1024;
/// Set low here so that an answer can pass it without passing `query.max_cells` first.
const ANSWER_MAX: usize = 1 << 20;

/// A server under `prlimit --as`, its Graphite plaintext port on.
fn start(dir: &Path) -> (Server, String) {
    for _ in 0..5 {
        let graphite = format!("127.0.0.1:{}", free_port());
        let addr = format!("127.0.0.1:{}", free_port());
        let cfg = dir.join("tsgate.toml");
        std::fs::write(
            &cfg,
            format!(
                "[server]\ngraphite_listen = \"{graphite}\"\npickle_listen = \"\"\n\
                 [write]\nflush_interval_ms = 100\n[query]\nmax_answer_bytes = {ANSWER_MAX}\n"
            ),
        )
        .unwrap();
        let child = Command::new("prlimit")
            .arg(format!("--as={AS_CAP}"))
            .arg("--")
            .arg(bin())
            .args(["serve", "--data-dir"])
            .arg(dir.join("data"))
            .args(["--listen", &addr, "--log-level", "warn", "--config"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn prlimit tsgate");
        let mut s = Server {
            child: Some(child),
            addr,
            data: dir.join("data"),
            config: Some(cfg),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if s.child.as_mut().unwrap().try_wait().unwrap().is_some() {
                s.child = None;
                break;
            }
            if s.http("GET", "/api/version", "").0 == 200 {
                std::thread::sleep(Duration::from_millis(100));
                if s.child.as_mut().unwrap().try_wait().unwrap().is_none() {
                    return (s, graphite);
                }
                s.child = None;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("tsgate did not start under prlimit on five ports");
}

/// The server process is still running and answering.
fn assert_up(s: &mut Server, after: &str) {
    let exited = s.child.as_mut().unwrap().try_wait().unwrap();
    assert!(
        exited.is_none(),
        "the server died after {after}: {exited:?}"
    );
    assert_eq!(
        s.http("GET", "/api/version", "").0,
        200,
        "no answer after {after}"
    );
}

fn peak_rss_kb(s: &Server) -> u64 {
    let pid = s.child.as_ref().unwrap().id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn post_form(s: &Server, path: &str, form: &[(&str, &str)]) -> (u16, String) {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    http(
        &s.addr,
        "POST",
        path,
        &body,
        &[("Content-Type", "application/x-www-form-urlencoded")],
    )
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {}", &body[..body.len().min(300)]))
}

/// Prometheus' error envelope: `status` error with this `errorType`, naming `needle`.
fn assert_prom_error(r: (u16, String), code: u16, kind: &str, needle: &str) {
    assert_eq!(r.0, code, "{}", r.1);
    let v = json(&r.1);
    assert_eq!(
        (v["status"].as_str(), v["errorType"].as_str()),
        (Some("error"), Some(kind))
    );
    assert!(v["error"].as_str().unwrap().contains(needle), "{}", r.1);
}

/// OpenTSDB's error envelope: `{"error":{"code":…,"message":…}}` naming `needle`.
fn assert_tsdb_error(r: (u16, String), code: u16, needle: &str) {
    assert_eq!(r.0, code, "{}", &r.1[..r.1.len().min(300)]);
    let v = json(&r.1);
    assert_eq!(v["error"]["code"].as_u64(), Some(code as u64));
    let m = v["error"]["message"].as_str().unwrap();
    assert!(m.contains(needle), "{m}");
}

/// graphite-web's plain-text error naming `needle`.
fn assert_graphite_error(r: (u16, String), code: u16, needle: &str) {
    assert_eq!(r.0, code, "{}", &r.1[..r.1.len().min(300)]);
    assert!(r.1.contains(needle), "{}", &r.1[..r.1.len().min(300)]);
    assert!(r.1.len() < 4096, "an error of {} bytes", r.1.len());
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A v1 remote-write body: `series` series, each labelled with a `label_bytes` value and
/// carrying `samples` samples with negative (invalid) timestamps.
fn error_bomb(series: usize, label_bytes: usize, samples: usize) -> Vec<u8> {
    let big = "\"x\\".repeat(label_bytes / 3);
    let req = WriteRequest {
        timeseries: (0..series)
            .map(|i| TimeSeries {
                labels: vec![
                    Label {
                        name: "__name__".into(),
                        value: "bomb".into(),
                    },
                    Label {
                        name: "big".into(),
                        value: format!("{i}{big}"),
                    },
                ],
                samples: (0..samples)
                    .map(|j| Sample {
                        value: 1.0,
                        timestamp: -1 - j as i64,
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        metadata: vec![],
    };
    snappy::compress(&req.encode_to_vec())
}

fn remote_write(s: &Server, body: &[u8]) -> (u16, String) {
    let (code, b) = http_bytes(
        &s.addr,
        "POST",
        "/api/v1/write",
        body,
        &[
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
    );
    (code, String::from_utf8_lossy(&b).into_owned())
}

/// POSTs a large body over a raw socket, tolerating a server that answers (and closes)
/// before reading all of it: (status, answer body); status 0 if no answer came.
fn post_big(addr: &str, path: &str, body: &[u8], headers: &str) -> (u16, String) {
    use std::io::Read;
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n{headers}\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes()).and_then(|_| s.write_all(body));
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, body.to_string())
}

#[test]
fn every_finding_answers_its_error_while_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, graphite) = start(dir.path());
    let now = now_s();

    // One OpenTSDB series, 3,125 Graphite paths a minute apart, 200 tagged Graphite series.
    let put = format!(
        "[{{\"metric\":\"load.m\",\"timestamp\":{},\"value\":1,\"tags\":{{\"host\":\"h1\"}}}},\
         {{\"metric\":\"load.m\",\"timestamp\":{},\"value\":2,\"tags\":{{\"host\":\"h1\"}}}}]",
        now - 120,
        now - 60
    );
    assert_eq!(s.http("POST", "/api/put?sync", &put).0, 204);
    let mut lines = String::new();
    for i in 0..3125 {
        let n = |k: u32| (i / 5u32.pow(k)) % 5;
        let path = format!("p{}.q{}.r{}.s{}.t{}", n(4), n(3), n(2), n(1), n(0));
        for t in [now - 120, now - 60] {
            lines.push_str(&format!("{path} {i} {t}\n"));
        }
    }
    for h in 0..200 {
        for t in [now - 120, now - 60] {
            lines.push_str(&format!("load;host=h{h} {h} {t}\n"));
        }
    }
    let mut g = TcpStream::connect(&graphite).unwrap();
    g.write_all(lines.as_bytes()).unwrap();
    drop(g);
    let count = |target: &str| -> f64 {
        let (c, b) = s.http(
            "GET",
            &format!("/render?target={}&from=-10min&format=json", enc(target)),
            "",
        );
        if c != 200 {
            return 0.0;
        }
        json(&b)
            .as_array()
            .and_then(|a| a.first().cloned())
            .and_then(|v| {
                v["datapoints"]
                    .as_array()?
                    .iter()
                    .filter_map(|p| p[0].as_f64())
                    .reduce(f64::max)
            })
            .unwrap_or(0.0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while count("countSeries(*.*.*.*.*)") < 3125.0
        || count("countSeries(seriesByTag('name=load'))") < 200.0
    {
        assert!(
            Instant::now() < deadline,
            "the Graphite series never all showed"
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    // A valid writer alongside everything below: every acknowledged point must be there after.
    let stop = Arc::new(AtomicBool::new(false));
    let base = now - 3000;
    let writer = {
        let (stop, addr) = (stop.clone(), s.addr.clone());
        std::thread::spawn(move || {
            let mut acked = 0u64;
            let mut refused = Vec::new();
            while !stop.load(Ordering::Relaxed) && acked < 2500 {
                let body = format!(
                    "{{\"metric\":\"steady.m\",\"timestamp\":{},\"value\":{acked},\"tags\":{{\"host\":\"w\"}}}}",
                    base + acked
                );
                match http(&addr, "POST", "/api/put?sync", &body, &[]) {
                    (204, _) => acked += 1,
                    other => refused.push(other),
                }
            }
            (acked, refused)
        })
    };

    // §1 depth: PromQL, bracketed and operator chains (2,000 deep overflowed the stack).
    let deep_abs = format!("{}up{}", "abs(".repeat(2000), ")".repeat(2000));
    let r = s.http(
        "GET",
        &format!("/api/v1/query?query={}", enc(&deep_abs)),
        "",
    );
    assert_prom_error(r, 400, "bad_data", "query.max_depth");
    assert_up(&mut s, "PromQL abs( x 2,000");
    let chain = format!("1{}", "+1".repeat(50_000));
    let r = post_form(&s, "/api/v1/query", &[("query", &chain)]);
    assert_prom_error(r, 400, "bad_data", "query.max_depth");
    let r = post_form(
        &s,
        "/api/v1/query_range",
        &[
            ("query", &format!("{}1", "-".repeat(50_000))),
            ("start", &(now - 600).to_string()),
            ("end", &now.to_string()),
            ("step", "60"),
        ],
    );
    assert_prom_error(r, 400, "bad_data", "query.max_depth");
    assert_up(&mut s, "PromQL operator chains");

    // graphite-web targets: calls and pipes.
    let deep = format!(
        "{}p0.q0.r0.s0.t0{}",
        "absolute(".repeat(2000),
        ")".repeat(2000)
    );
    let r = s.http(
        "GET",
        &format!("/render?target={}&format=json", enc(&deep)),
        "",
    );
    assert_graphite_error(r, 400, "query.max_depth");
    let piped = format!("p0.q0.r0.s0.t0{}", "|absolute()".repeat(50_000));
    let r = post_form(&s, "/render", &[("target", &piped), ("format", "json")]);
    assert_graphite_error(r, 400, "query.max_depth");
    assert_up(&mut s, "graphite absolute( x 2,000 and a 50,000-pipe chain");

    // OpenTSDB: JSON nested past serde_json's 128 levels, and a deep regexp filter.
    let arrays = "[".repeat(100_000);
    assert_tsdb_error(s.http("POST", "/api/query", &arrays), 400, "");
    assert_tsdb_error(s.http("POST", "/api/put", &arrays), 400, "");
    let objects = format!(
        "{{\"start\":\"1h-ago\",\"queries\":{}",
        "{\"a\":".repeat(100_000)
    );
    assert_tsdb_error(s.http("POST", "/api/query", &objects), 400, "");
    let regexp = format!("{}h1{}", "(".repeat(10_000), ")".repeat(10_000));
    let q = serde_json::json!({"start": "1h-ago", "queries": [{"aggregator": "sum",
        "metric": "load.m", "filters": [{"type": "regexp", "tagk": "host",
        "filter": regexp, "groupBy": false}]}]});
    assert_tsdb_error(s.http("POST", "/api/query", &q.to_string()), 400, "");
    assert_up(&mut s, "deep OpenTSDB JSON and regexp");

    // §2 the fill-policy bomb: 86,400,001 buckets for one series-day (2 GB before).
    let r = s.http(
        "GET",
        &format!(
            "/api/query?start=1d-ago&m={}",
            enc("sum:1ms-avg-zero:load.m{host=h1}")
        ),
        "",
    );
    assert_tsdb_error(r, 413, "query.max_cells");
    // 86,401 buckets fit the cells but not the answer's bytes.
    let r = s.http(
        "GET",
        &format!(
            "/api/query?start=1d-ago&m={}",
            enc("sum:1s-avg-zero:load.m{host=h1}")
        ),
        "",
    );
    assert_tsdb_error(r, 413, "query.max_answer_bytes");
    assert_up(&mut s, "the fill-policy bombs");

    // Render over 3,125 (then 625) series for ten years (killed at 23 GB before), and
    // seriesByTag over 200 series.
    for target in ["*.*.*.*.*", "p0.*.*.*.*", "seriesByTag('name=load')"] {
        let r = s.http(
            "GET",
            &format!("/render?target={}&from=-10y&format=json", enc(target)),
            "",
        );
        assert_graphite_error(r, 400, "query.max_cells");
        assert_up(&mut s, target);
    }
    // 3,125 series x 1,441 steps fit the cells but not the answer's bytes, in every format.
    for format in ["json", "csv", "raw"] {
        let r = s.http(
            "GET",
            &format!("/render?target=*.*.*.*.*&from=-1d&format={format}"),
            "",
        );
        assert_graphite_error(r, 413, "query.max_answer_bytes");
    }
    assert_up(&mut s, "render past the answer's bytes");

    // PromQL: a subquery of 86.4 million steps (2 GB for two minutes before).
    let r = s.http(
        "GET",
        &format!(
            "/api/v1/query?query={}",
            enc("count_over_time(vector(1)[1d:1ms])")
        ),
        "",
    );
    assert_prom_error(r, 422, "execution", "too many samples");
    assert_up(&mut s, "the subquery bomb");

    // Remote write: one message per invalid sample, each with the whole escaped label set
    // (a 171 KiB request took 1.9 GB before). The answer names five and counts the rest.
    for (series, label, samples) in [(1, 60_000, 20_000), (40, 16_000, 1_000)] {
        let body = error_bomb(series, label, samples);
        let (code, msg) = remote_write(&s, &body);
        assert_eq!(code, 400, "{}", &msg[..msg.len().min(300)]);
        assert!(msg.len() < 8192, "an answer of {} bytes", msg.len());
        let more = series * samples - 5;
        assert!(
            msg.contains(&format!("(and {more} more)")),
            "{}",
            &msg[..300]
        );
        assert_up(&mut s, "the remote-write error bomb");
    }

    // §2 bodies × connections: 16 parallel 60 MiB bodies (1 GB resident before), half to
    // `/api/put`, half to remote write. `limits.max_body_bytes_in_flight` (128 MiB) lets two
    // be held at once; the others wait for a share or are answered 503.
    let big = 60usize << 20;
    let senders: Vec<_> = (0..16)
        .map(|i| {
            let addr = s.addr.clone();
            std::thread::spawn(move || {
                let (path, body, headers) = if i % 2 == 0 {
                    // Valid JSON, nothing in it: cheap to parse, so the body is what costs.
                    let mut b = vec![b' '; big];
                    b[0] = b'[';
                    b[big - 1] = b']';
                    (
                        "/api/put",
                        b,
                        "Content-Type: application/json\r\n".to_string(),
                    )
                } else {
                    (
                        "/api/v1/write",
                        vec![0xffu8; big],
                        "Content-Encoding: snappy\r\nContent-Type: application/x-protobuf\r\n"
                            .to_string(),
                    )
                };
                post_big(&addr, path, &body, &headers)
            })
        })
        .collect();
    let answers: Vec<(u16, String)> = senders.into_iter().map(|t| t.join().unwrap()).collect();
    let waited_out = answers.iter().filter(|(c, _)| *c == 503).count();
    for (code, body) in &answers {
        assert!(
            matches!(code, 200 | 204 | 400 | 503),
            "a 60 MiB body was answered {code}: {}",
            &body[..body.len().min(300)]
        );
        if *code == 503 {
            assert!(body.contains("limits.max_body_bytes_in_flight"), "{body}");
        }
    }
    eprintln!("16 x 60 MiB bodies: {waited_out} answered 503 for want of body budget");
    assert_up(&mut s, "16 parallel 60 MiB bodies");
    let (c, m) = s.http("GET", "/metrics", "");
    assert_eq!(c, 200);
    let held: u64 = m
        .lines()
        .find_map(|l| l.strip_prefix("tsgate_http_body_bytes_in_flight "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    // Only the writer's small puts may hold some: every 60 MiB reservation was given back.
    assert!(held < 1 << 20, "{held} bytes of bodies still held");

    // Valid requests still answer as before.
    let (c, b) = s.http(
        "GET",
        "/render?target=p0.q0.r0.s1.t2&from=-10min&format=json",
        "",
    );
    assert_eq!(c, 200, "{b}");
    let pts: Vec<f64> = json(&b)[0]["datapoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p[0].as_f64())
        .collect();
    assert_eq!(pts, vec![7.0, 7.0]);
    let (c, b) = s.http(
        "GET",
        "/api/query?start=1h-ago&m=sum:load.m%7Bhost=h1%7D",
        "",
    );
    assert_eq!(c, 200, "{b}");
    assert_eq!(json(&b)[0]["dps"].as_object().unwrap().len(), 2);
    let r = s.http("GET", "/api/v1/query?query=abs(abs(vector(-2)))", "");
    assert_eq!(r.0, 200, "{}", r.1);

    stop.store(true, Ordering::Relaxed);
    let (acked, refused) = writer.join().unwrap();
    assert!(
        refused.is_empty(),
        "the valid writer was refused: {refused:?}"
    );
    assert!(acked > 0);
    let path = format!(
        "/api/query?start={}&end={}&m=sum:steady.m%7Bhost=w%7D",
        base,
        base + acked
    );
    let v = s.wait_points(&path, acked as usize);
    assert_eq!(v[0]["dps"].as_object().unwrap().len() as u64, acked);

    let peak = peak_rss_kb(&s);
    eprintln!(
        "attack: {acked} points written alongside; peak RSS {} MiB",
        peak / 1024
    );
    assert!(peak < RSS_BOUND_KB, "peak RSS {peak} kB");
    assert_up(&mut s, "everything");
    s.stop();
}
