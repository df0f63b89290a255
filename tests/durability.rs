//! Store failures (HBase down, simulated by stopping the Thrift test double): HTTP writes get
//! 503 with Retry-After, TCP listeners stop reading, nothing acknowledged is lost, and
//! everything lands once the store is back. Shutdown stays bounded by
//! `server.shutdown_timeout_ms` even when the store cannot take the last flush.

mod common;
use common::*;
use prost::Message;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};
use tsgate_testkit::hbase_double::TestDouble;

const T0: u64 = 1356998400;

fn start_double(dir: &Path, listen: &str) -> TestDouble {
    use tsgate::store::hbase::{tables, HBaseConfig, HBaseStore};
    // The port may still be held by the previous double for a moment.
    let deadline = Instant::now() + Duration::from_secs(20);
    let d = loop {
        match TestDouble::start(dir, listen) {
            Ok(d) => break d,
            Err(e) if Instant::now() < deadline => {
                eprintln!("restarting the double: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("{e}"),
        }
    };
    let cfg = HBaseConfig {
        thrift: d.addr(),
        ..Default::default()
    };
    let names = tsgate::store::TableNames::default();
    tables::create_tables(HBaseStore::new(&cfg, &names.specs()).pool(), &names, "NONE").unwrap();
    d
}

fn config(dir: &Path, thrift: &str, extra: &str) -> std::path::PathBuf {
    let cfg = dir.join("tsgate.toml");
    std::fs::write(
        &cfg,
        format!(
            "[storage]\nbackend = \"hbase\"\n[storage.hbase]\nthrift = \"{thrift}\"\nretries = 0\ntimeout_ms = 1000\nconnect_timeout_ms = 500\n\
             [write]\nflush_interval_ms = 100\n{extra}"
        ),
    )
    .unwrap();
    cfg
}

/// (status, head, body) of one request over a raw socket.
fn request(addr: &str, path: &str, body: &[u8], headers: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n{headers}\r\n", body.len());
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_ascii_lowercase(), body.to_string())
}

fn put(addr: &str, ts: u64, v: u64) -> (u16, String, String) {
    request(
        addr,
        "/api/put",
        format!(r#"{{"metric":"dur.m","timestamp":{ts},"value":{v},"tags":{{"h":"a"}}}}"#)
            .as_bytes(),
        "",
    )
}

fn stored(s: &Server) -> Vec<(u64, f64)> {
    let (code, body) = s.http(
        "GET",
        &format!("/api/query?start={T0}&end={}&m=sum:dur.m", T0 + 7200),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut out: Vec<(u64, f64)> = v
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["dps"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(t, v)| (t.parse().unwrap(), v.as_f64().unwrap()))
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort_by_key(|a| a.0);
    out
}

fn wait_stored(s: &Server, want: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = stored(s);
        if want.iter().all(|w| got.contains(w)) || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn store_down_answers_503_pauses_tcp_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ddir = dir.path().join("double");
    let d = start_double(&ddir, "127.0.0.1:0");
    let thrift = d.addr();
    let cfg = config(dir.path(), &thrift, "");
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let mut acked: Vec<(u64, f64)> = Vec::new();
    assert_eq!(put(&s.addr, T0, 1).0, 204);
    acked.push((T0, 1.0));
    assert_eq!(wait_stored(&s, &acked), acked);

    // HBase goes away. Writes already in flight are logged and acknowledged.
    d.stop();
    // The put and `version` in one write: once the flusher sees HBase gone, TCP listeners stop
    // reading, and a `version` sent apart could wait behind that.
    let mut t = s.telnet();
    assert!(t
        .send_and_sync(&format!("put dur.m {} 2 h=a\n", T0 + 1))
        .is_empty());
    acked.push((T0 + 1, 2.0));
    std::thread::sleep(Duration::from_millis(500));
    // Once the flusher has seen the failure, HTTP writes are refused with 503 + Retry-After.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut ts = T0 + 2;
    loop {
        let (code, head, body) = put(&s.addr, ts, ts - T0 + 1);
        match code {
            204 => acked.push((ts, (ts - T0 + 1) as f64)),
            503 => {
                assert!(head.contains("retry-after: 1"), "{head}");
                assert!(body.contains("\"error\""), "{body}");
                break;
            }
            other => panic!("/api/put with HBase down answered {other}: {body}"),
        }
        assert!(
            Instant::now() < deadline,
            "/api/put never answered 503 with HBase down"
        );
        ts += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let rw = WriteRequest {
        timeseries: vec![TimeSeries {
            labels: vec![Label {
                name: "__name__".into(),
                value: "dur_prom".into(),
            }],
            samples: vec![Sample {
                value: 1.0,
                timestamp: T0 as i64 * 1000,
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let body = tsgate_prometheus::snappy::compress(&rw.encode_to_vec());
    let (code, head, _) = request(
        &s.addr,
        "/api/v1/write",
        &body,
        "Content-Encoding: snappy\r\nContent-Type: application/x-protobuf\r\n",
    );
    assert_eq!(code, 503, "remote write with HBase down");
    assert!(head.contains("retry-after"), "{head}");

    // A telnet client is not read from while the store is down: no answer to its `version`.
    let mut paused = TcpStream::connect(&s.addr).unwrap();
    paused
        .write_all(format!("put dur.m {} 100 h=a\nversion\n", T0 + 100).as_bytes())
        .unwrap();
    paused
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut buf = [0u8; 256];
    let r = paused.read(&mut buf);
    assert!(
        r.is_err(),
        "a telnet connection was served while HBase was down: {r:?}"
    );

    // HBase comes back: the paused connection is served, HTTP takes writes again, and every
    // acknowledged point is stored.
    let d = start_double(&ddir, &thrift);
    paused
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let n = paused.read(&mut buf).unwrap();
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("net.opentsdb"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    acked.push((T0 + 100, 100.0));
    let deadline = Instant::now() + Duration::from_secs(30);
    while put(&s.addr, T0 + 200, 200).0 != 204 {
        assert!(
            Instant::now() < deadline,
            "/api/put still refused after HBase came back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    acked.push((T0 + 200, 200.0));
    acked.sort_by_key(|a| a.0);
    let got = wait_stored(&s, &acked);
    for a in &acked {
        assert!(
            got.contains(a),
            "acknowledged point {a:?} missing; stored {got:?}"
        );
    }
    s.stop();
    d.stop();
}

#[test]
fn shutdown_is_bounded_when_the_store_is_down_and_the_wal_replays() {
    let dir = tempfile::tempdir().unwrap();
    let ddir = dir.path().join("double");
    let d = start_double(&ddir, "127.0.0.1:0");
    let thrift = d.addr();
    let cfg = config(
        dir.path(),
        &thrift,
        "[server]\nshutdown_timeout_ms = 2000\n",
    );
    let data = dir.path().join("data");
    let mut s = Server::start_with(&data, Some(&cfg));
    assert_eq!(put(&s.addr, T0, 1).0, 204);
    // Stored before HBase goes: a flush of it failing would pause TCP before the put below.
    assert_eq!(wait_stored(&s, &[(T0, 1.0)]), vec![(T0, 1.0)]);
    d.stop();
    // The put and `version` in one write: once the flusher sees HBase gone, TCP listeners stop
    // reading, and a `version` sent apart could wait behind that.
    let mut t = s.telnet();
    assert!(t
        .send_and_sync(&format!("put dur.m {} 2 h=a\n", T0 + 1))
        .is_empty());
    drop(t);
    std::thread::sleep(Duration::from_millis(300));
    let mut child = s.child.take().unwrap();
    let started = Instant::now();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    let took = started.elapsed();
    assert_eq!(
        status.code(),
        Some(3),
        "a shutdown that gave up exits with 3"
    );
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(10),
        "shutdown took {took:?}"
    );

    // Both points were acknowledged: the next start replays the WAL into HBase.
    let d = start_double(&ddir, &thrift);
    let s = Server::start_with(&data, Some(&cfg));
    assert_eq!(
        wait_stored(&s, &[(T0, 1.0), (T0 + 1, 2.0)]),
        vec![(T0, 1.0), (T0 + 1, 2.0)]
    );
    s.stop();
    d.stop();
}
