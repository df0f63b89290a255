//! Hostile input on every port and endpoint, mixed with valid writers on other connections:
//! the server stays up, each bad input gets its protocol's error (or, where the protocol has
//! none, a closed or unaffected connection), the valid data lands, and memory stays bounded.
//! Also one test per limit of `[limits]` and `[query]` (README, "Durability and limits").

mod common;
use common::*;
use prost::Message;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};
use tsgate_prometheus::snappy;

const T0: u64 = 1356998400;

struct Ports {
    graphite: String,
    pickle: String,
}

fn start(dir: &Path, extra: &str) -> (Server, Ports) {
    let ports = Ports {
        graphite: format!("127.0.0.1:{}", free_port()),
        pickle: format!("127.0.0.1:{}", free_port()),
    };
    let cfg = dir.join("tsgate.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\ngraphite_listen = \"{}\"\npickle_listen = \"{}\"\n[write]\nflush_interval_ms = 100\n\
             [limits]\nmax_points_per_request = 100\nmax_name_length = 64\nmax_connections = 64\nidle_timeout_ms = 3000\n\
             read_timeout_ms = 1500\nhttp_body_max = 1048576\n[prometheus]\nmax_decompressed_bytes = 1048576\n{extra}",
            ports.graphite, ports.pickle
        ),
    )
    .unwrap();
    (Server::start_with(&dir.join("data"), Some(&cfg)), ports)
}

fn pid(s: &Server) -> u32 {
    s.child.as_ref().unwrap().id()
}

/// VmHWM (peak resident set) of a process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    st.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

fn tcp(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Everything the peer sends until it closes (or the read timeout), as text.
fn read_all(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends raw bytes as one HTTP request and returns (status, body) of the answer.
fn raw_http(addr: &str, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = tcp(addr);
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(body);
    let text = read_all(&mut s);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

fn remote_write(addr: &str, body: &[u8]) -> (u16, String) {
    let (c, b) = http_bytes(
        addr,
        "POST",
        "/api/v1/write",
        body,
        &[
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
        ],
    );
    (c, String::from_utf8_lossy(&b).into_owned())
}

fn prom_req(metric: &str, n: usize) -> Vec<u8> {
    let req = WriteRequest {
        timeseries: vec![TimeSeries {
            labels: vec![
                Label {
                    name: "__name__".into(),
                    value: metric.into(),
                },
                Label {
                    name: "k".into(),
                    value: "v".into(),
                },
            ],
            samples: (0..n)
                .map(|i| Sample {
                    value: i as f64,
                    timestamp: (T0 as i64 + i as i64) * 1000,
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    snappy::compress(&req.encode_to_vec())
}

/// Number of points `m` holds in [T0, T0+1d].
fn count(s: &Server, m: &str) -> usize {
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={T0}&end={}&m=sum:{m}", T0 + 86400),
        "",
    );
    if code != 200 {
        return 0;
    }
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s["dps"].as_object().unwrap().len())
        .sum()
}

fn wait_count(s: &Server, m: &str, want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = count(s, m);
        if n >= want || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Valid telnet puts on their own connections, all through the test; returns how many were
/// acknowledged (a `version` round trip after each batch).
fn valid_writer(addr: String, stop: Arc<AtomicBool>, acked: Arc<Mutex<u64>>) {
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect(&addr) else {
            continue;
        };
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&format!(
                "put hostile.valid {} {} h=a\n",
                T0 + seq + i,
                seq + i
            ));
        }
        text.push_str("version\n");
        if s.write_all(text.as_bytes()).is_err() {
            continue;
        }
        let mut got = String::new();
        let mut buf = [0u8; 4096];
        while !got.contains("net.opentsdb") && !got.contains("too many connections") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        if got.contains("too many connections") {
            std::thread::sleep(Duration::from_millis(50));
            continue; // refused at the connection cap: nothing was taken, send it again
        }
        if got.is_empty() {
            continue; // closed (the server is stopping): not acknowledged
        }
        assert!(
            got.starts_with("net.opentsdb"),
            "valid puts answered {got:?}"
        );
        seq += 50;
        *acked.lock().unwrap() = seq;
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hostile_input_on_every_port_leaves_the_server_up_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ports) = start(dir.path(), "");
    let a = s.addr.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(0u64));
    let writer = {
        let (a, stop, acked) = (a.clone(), stop.clone(), acked.clone());
        std::thread::spawn(move || valid_writer(a, stop, acked))
    };

    // --- telnet ---
    let mut t = s.telnet();
    t.send(&format!(
        "put hostile.t {T0} 1 h={}\n",
        "x".repeat(2_000_000)
    ));
    assert!(t.read_line().contains("line too long"), "huge telnet line");
    let mut garbage: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    garbage.push(b'\n');
    t.send_bytes(&garbage);
    t.send_bytes(b"put hostile.t 1356998400 \xff\xfe 1 h=a\n");
    t.send(&format!("put hostile.t {T0} NaN h=a\nput hostile.t {T0} inf h=a\nput hostile.t 99999999999999999999 1 h=a\n"));
    t.send(&format!("put hostile.t {T0} 1 h={}\n", "y".repeat(100)));
    t.send(&format!("put hostile.t {} 2 h=a\n", T0 + 1));
    let lines = t.sync();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("name too long") && l.contains("limits.max_name_length")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .filter(|l| l.starts_with("put: illegal argument") || l.starts_with("unknown command"))
            .count()
            >= 4,
        "{lines:?}"
    );

    // --- /api/put ---
    let (code, body) = s.http("POST", "/api/put", &"[".repeat(200_000));
    assert_eq!(code, 400, "deeply nested JSON: {body}");
    assert!(body.contains("\"error\""), "{body}");
    let (code, body) = s.http(
        "POST",
        "/api/put",
        &format!(
            "[{}]",
            vec![
                r#"{"metric":"hostile.many","timestamp":1356998400,"value":1,"tags":{"h":"a"}}"#;
                101
            ]
            .join(",")
        ),
    );
    assert_eq!(code, 413, "{body}");
    assert!(body.contains("limits.max_points_per_request"), "{body}");
    // Answered on the declared length, before the body is sent.
    let (code, body) = raw_http(
        &a,
        "POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n",
        b"",
    );
    assert_eq!(code, 413, "body over http_body_max: {body}");
    assert!(body.contains("limits.http_body_max"), "{body}");
    let bomb = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..64 {
            e.write_all(&zeros).unwrap();
        }
        e.finish().unwrap()
    };
    assert!(bomb.len() < 1 << 20);
    let (code, body) = http_bytes(
        &a,
        "POST",
        "/api/put",
        &bomb,
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 413, "gzip bomb: {}", String::from_utf8_lossy(&body));
    let small = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(
            format!(r#"{{"metric":"hostile.p","timestamp":{T0},"value":1,"tags":{{"h":"a"}}}}"#)
                .as_bytes(),
        )
        .unwrap();
        e.finish().unwrap()
    };
    let (code, _) = http_bytes(
        &a,
        "POST",
        "/api/put",
        &small[..small.len() / 2],
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 400, "truncated gzip");
    let (code, body) = s.http(
        "POST",
        "/api/put",
        r#"{"metric":"hostile.p","timestamp":99999999999999999999999,"value":1,"tags":{"h":"a"}}"#,
    );
    assert_eq!(code, 400, "{body}");
    let (code, body) = s.http(
        "POST",
        "/api/put",
        &format!(
            r#"{{"metric":"hostile.p","timestamp":{T0},"value":1,"tags":{{"h":"{}"}}}}"#,
            "z".repeat(65)
        ),
    );
    assert_eq!(code, 400, "{body}");
    let (code, body) = s.http(
        "POST",
        "/api/put",
        &format!(r#"{{"metric":"hostile.p","timestamp":{T0},"value":5,"tags":{{"h":"a"}}}}"#),
    );
    assert_eq!(code, 204, "{body}");

    // --- remote write ---
    let mut huge_len = vec![0xff, 0xff, 0xff, 0xff, 0x0f]; // snappy: declared length 4 GiB
    huge_len.extend_from_slice(&[0u8; 16]);
    let (code, body) = remote_write(&a, &huge_len);
    assert_eq!(code, 413, "snappy bomb: {body}");
    let ok = prom_req("hostile_prom", 10);
    let (code, body) = remote_write(
        &a,
        &snappy::compress(&snappy::decompress(&ok, 1 << 20).unwrap()[..30]),
    );
    assert_eq!(code, 400, "truncated protobuf: {body}");
    let (code, body) = remote_write(&a, b"\x05\xff\xff");
    assert_eq!(code, 400, "broken snappy: {body}");
    let (code, body) = remote_write(&a, &snappy::compress(&garbage));
    assert_eq!(code, 400, "garbage protobuf: {body}");
    let (code, body) = remote_write(&a, &prom_req("hostile_prom_many", 101));
    assert_eq!(code, 413, "{body}");
    assert!(body.contains("limits.max_points_per_request"), "{body}");
    assert_eq!(remote_write(&a, &ok).0, 204);

    // --- HTTP framing: endless headers, slowloris, trickled body, huge declared length ---
    let mut h = tcp(&a);
    h.write_all(b"GET /api/version HTTP/1.1\r\n").unwrap();
    let endless = std::thread::spawn(move || {
        for i in 0..200_000 {
            if h.write_all(format!("X-H{i}: {}\r\n", "v".repeat(100)).as_bytes())
                .is_err()
            {
                return true; // the server closed on us
            }
        }
        false
    });
    assert!(
        endless.join().unwrap(),
        "endless headers were never cut off"
    );
    let started = Instant::now();
    let mut slow = tcp(&a);
    slow.write_all(b"GET /api/version HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut closed = false;
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        if slow.write_all(b"X").is_err() {
            closed = true;
            break;
        }
    }
    assert!(
        closed,
        "slowloris connection kept for {:?}",
        started.elapsed()
    );
    let mut trickle = tcp(&a);
    trickle
        .write_all(b"POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n[")
        .unwrap();
    let t0 = Instant::now();
    let trickler = std::thread::spawn({
        let mut w = trickle.try_clone().unwrap();
        move || {
            for _ in 0..30 {
                std::thread::sleep(Duration::from_millis(100));
                if w.write_all(b" ").is_err() {
                    break;
                }
            }
        }
    });
    let answer = read_all(&mut trickle);
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "trickled body: {answer}"
    );
    assert!(answer.contains("limits.read_timeout_ms"), "{answer}");
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "408 after {:?}",
        t0.elapsed()
    );
    trickler.join().unwrap();
    let (code, _) = raw_http(
        &a,
        "POST /api/put HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999\r\n\r\n",
        b"[]",
    );
    assert_eq!(code, 413, "huge Content-Length");

    // --- Graphite plaintext ---
    let mut g = tcp(&ports.graphite);
    g.write_all(format!("hostile.g.long {} {T0}\n", "1".repeat(100_000)).as_bytes())
        .unwrap();
    g.write_all(&garbage).unwrap();
    g.write_all(b"hostile.g.bad \xff\xfe 1356998400\nhostile.g.nan nan 1356998400\nhostile.g.ts 1 99999999999999999999\n").unwrap();
    g.write_all(format!("hostile.g;h={} 1 {T0}\n", "q".repeat(100)).as_bytes())
        .unwrap();
    g.write_all(format!("hostile.g;h=a 7 {T0}\n").as_bytes())
        .unwrap();
    g.shutdown(Shutdown::Write).unwrap();
    read_all(&mut g);

    // --- pickle ---
    let mut p = tcp(&ports.pickle);
    // GLOBAL opcode (`cos\nsystem\n`): refused as a whole, the connection reads on.
    p.write_all(&tsgate_graphite::frame::encode(
        b"cos\nsystem\n(S'echo pwned'\ntR.",
    ))
    .unwrap();
    p.write_all(&tsgate_graphite::frame::encode(
        b"\x80\x02]X\xff\xff\xff\x7fabc",
    ))
    .unwrap(); // string length past the frame
    let mut good = b"\x80\x02]X\x0a\x00\x00\x00hostile.pkJ".to_vec();
    good.extend_from_slice(&(T0 as i32).to_le_bytes());
    good.extend_from_slice(b"K\x09\x86\x86a.");
    p.write_all(&tsgate_graphite::frame::encode(&good)).unwrap();
    p.shutdown(Shutdown::Write).unwrap();
    read_all(&mut p);
    let mut p = tcp(&ports.pickle);
    p.write_all(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]).unwrap(); // declared frame length 4 GiB
    let t0 = Instant::now();
    read_all(&mut p);
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "oversized pickle frame did not close the connection"
    );

    // --- idle and half-open peers are closed after limits.idle_timeout_ms (3 s) ---
    let t0 = Instant::now();
    let mut idle_t = tcp(&a);
    idle_t.write_all(b"put hostile.half").unwrap(); // half a line, then silence
    let mut idle_g = tcp(&ports.graphite);
    let mut silent = tcp(&a); // connects and never sends a byte
    let mut idle_h = tcp(&a);
    idle_h
        .write_all(b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    for c in [&mut idle_t, &mut idle_g, &mut idle_h, &mut silent] {
        read_all(c);
    }
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(2500) && took < Duration::from_secs(10),
        "idle connections closed after {took:?}"
    );

    // The valid writer stops here so that it does not compete for connection slots.
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    drop(t);

    // --- connections up to the limit (64); the ones beyond are refused in the protocol's way ---
    let mut conns: Vec<TcpStream> = (0..80).map(|_| tcp(&a)).collect();
    for c in &mut conns {
        c.write_all(b"\n").unwrap(); // telnet (an empty line is ignored when accepted)
    }
    // Quick: held connections are closed after limits.idle_timeout_ms (3 s) of silence.
    std::thread::sleep(Duration::from_millis(500));
    let (mut held, mut refused) = (0, Vec::new());
    for c in &mut conns {
        c.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        let mut buf = [0u8; 256];
        match c.read(&mut buf) {
            Ok(n) if n > 0 => refused.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
            _ => held += 1,
        }
    }
    assert!(
        (60..=64).contains(&held),
        "{held} connections held, {} refused",
        refused.len()
    );
    assert_eq!(held + refused.len(), 80);
    assert!(
        refused
            .iter()
            .all(|r| r == "error: too many connections (limits.max_connections = 64)\n"),
        "{refused:?}"
    );
    // Slots that idle reaping (3 s) or a lingering earlier connection freed meanwhile — on a
    // loaded machine the checks above can take that long — are taken up again until the server
    // refuses one, and only then is HTTP asked.
    let mut extra = Vec::new();
    let (mut code, mut body) = (0, String::new());
    for _ in 0..200 {
        let mut c = tcp(&a);
        c.write_all(b"\n").unwrap();
        c.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 256];
        let full = matches!(c.read(&mut buf), Ok(n) if n > 0);
        extra.push(c);
        if !full {
            continue;
        }
        (code, body) = raw_http(&a, "GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n", b"");
        if code == 503 {
            break;
        }
    }
    assert_eq!(code, 503, "HTTP over the connection limit: {body}");
    assert!(body.contains("limits.max_connections"), "{body}");
    drop(conns);
    drop(extra);
    std::thread::sleep(Duration::from_millis(300));

    // The server is up, the valid data landed, memory stayed bounded.
    let sent = *acked.lock().unwrap() as usize;
    assert!(
        sent >= 500,
        "the valid writer got only {sent} points through"
    );
    assert_eq!(wait_count(&s, "hostile.valid", sent), sent);
    assert_eq!(wait_count(&s, "hostile.t", 1), 1);
    assert_eq!(wait_count(&s, "hostile.p", 1), 1);
    assert_eq!(wait_count(&s, "hostile_prom", 10), 10);
    assert_eq!(wait_count(&s, "hostile.g", 1), 1);
    assert_eq!(wait_count(&s, "hostile.pk", 1), 1);
    for m in [
        "hostile.many",
        "hostile_prom_many",
        "hostile.g.long",
        "hostile.g.bad",
        "hostile.g.ts",
    ] {
        assert_eq!(count(&s, m), 0, "{m} must not be stored");
    }
    let peak = peak_rss_kib(pid(&s));
    eprintln!("server peak RSS {peak} KiB");
    assert!(
        peak < 256 * 1024,
        "server peak RSS {peak} KiB over the 256 MiB cap"
    );
    s.stop();
}

/// `query.max_series`, `query.max_points` and `query.timeout_ms` answer in OpenTSDB's and
/// Prometheus' error formats; a query within the limits still answers.
#[test]
fn query_limits_answer_in_each_api_format() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = start(dir.path(), "[query]\nmax_series = 5\nmax_points = 1000\n");
    load(&s, 10, 50, 10);
    let (code, body) = s.http("GET", &format!("/api/query?start={T0}&m=sum:ql_m"), "");
    assert_eq!(code, 413, "{body}");
    assert!(
        body.contains("\"error\"") && body.contains("query.max_series"),
        "{body}"
    );
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={T0}&m=sum:ql_m{{h=1|2|3}}"),
        "",
    );
    assert_eq!(code, 200, "three series are within the limit: {body}");
    drop(s);

    // Points: 2 series × 50 = 100 points are within 120, 3 × 50 are not.
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = start(dir.path(), "[query]\nmax_points = 120\n");
    load(&s, 3, 50, 10);
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={T0}&m=sum:ql_m{{h=0|1}}"),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = s.http("GET", &format!("/api/query?start={T0}&m=sum:ql_m"), "");
    assert_eq!(code, 413, "{body}");
    assert!(
        body.contains("\"error\"") && body.contains("query.max_points"),
        "{body}"
    );
    drop(s);

    // Time: 1 ms is far too little for 100 series of 400 points, in either API.
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = start(dir.path(), "[query]\ntimeout_ms = 1\n");
    load(&s, 100, 400, 60);
    std::thread::sleep(Duration::from_millis(500));
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={T0}&end={}&m=sum:ql_m", T0 + 86400),
        "",
    );
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("\"error\"") && body.contains("query.timeout_ms"),
        "{body}"
    );
    let (code, body) = s.http(
        "GET",
        &format!(
            "/api/v1/query_range?query=sum(rate(ql_m[5m]))&start={T0}&end={}&step=10",
            T0 + 86400
        ),
        "",
    );
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("\"errorType\":\"timeout\""), "{body}");
}

/// `series` series `ql_m{h=…}` of `points` points `step` seconds apart, acknowledged.
fn load(s: &Server, series: u64, points: u64, step: u64) {
    let mut t = s.telnet();
    let mut text = String::new();
    for h in 0..series {
        for i in 0..points {
            text.push_str(&format!("put ql_m {} {i} h={h}\n", T0 + i * step));
        }
    }
    t.send(&text);
    assert!(t.sync().is_empty());
    // `?sync` answers once everything written before it is in the store (every shard).
    let (code, body) = s.http(
        "POST",
        "/api/put?sync",
        &format!(r#"{{"metric":"ql.sync","timestamp":{T0},"value":1,"tags":{{"h":"a"}}}}"#),
    );
    assert_eq!(code, 204, "{body}");
}
