//! Carbon ingest over real sockets: plaintext TCP and UDP, pickle from a Python sender, and
//! name rules; data read back through /api/query and the Prometheus API.

mod common;

use common::*;
use serde_json::Value;
use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

struct Graphite {
    server: Server,
    plain: String,
    pickle: String,
    _dir: tempfile::TempDir,
}

fn start(extra: &str) -> Graphite {
    let dir = tempfile::tempdir().unwrap();
    let plain = format!("127.0.0.1:{}", free_port());
    let pickle = format!("127.0.0.1:{}", free_port());
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, format!("[server]\ngraphite_listen = \"{plain}\"\npickle_listen = \"{pickle}\"\n[write]\nflush_interval_ms = 100\n{extra}")).unwrap();
    let server = Server::start_with(&dir.path().join("data"), Some(&cfg));
    Graphite {
        server,
        plain,
        pickle,
        _dir: dir,
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Polls an instant PromQL query until it returns `n` series.
fn prom(addr: &str, q: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (code, body) = http(
            addr,
            "GET",
            &format!("/api/v1/query?query={}", enc(q)),
            "",
            &[],
        );
        assert_eq!(code, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let r = v["data"]["result"].as_array().unwrap().clone();
        if r.len() >= n || Instant::now() > deadline {
            assert_eq!(r.len(), n, "{q}: {body}");
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn value(r: &Value) -> String {
    r["value"][1].as_str().unwrap().to_string()
}

#[test]
fn plaintext_tcp_good_and_bad_lines() {
    let g = start("");
    let t = now();
    let long = format!("long.{} 1 {t}\n", "x".repeat(17 * 1024));
    let mut s = TcpStream::connect(&g.plain).unwrap();
    let text = format!(
        "gr.basic 1.5 {t}\r\nbad line\ngr.tabs\t3\t{t}\n{long}gr.after.long 4 {t}\ngr.nan nan {t}\ngr.minus1 6 -1\n\
         gr.hex 0x10 {t}\ngr.tagged;b=2;a=1 9 {t}\ngr.badtag;=x 1 {t}\ngr.ms 11 {}\ngr.colon:x 12 {t}.75\nBADUTF8\ngr.last 13 {t}",
        t * 1000 + 250
    );
    let (head, tail) = text.split_once("BADUTF8").unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(b"\xff bad").unwrap();
    s.write_all(tail.as_bytes()).unwrap();
    drop(s);
    let a = &g.server.addr;
    assert_eq!(value(&prom(a, "{__name__=\"gr.basic\"}", 1)[0]), "1.5");
    assert_eq!(value(&prom(a, "{__name__=\"gr.tabs\"}", 1)[0]), "3");
    assert_eq!(value(&prom(a, "{__name__=\"gr.after.long\"}", 1)[0]), "4");
    assert_eq!(value(&prom(a, "{__name__=\"gr.minus1\"}", 1)[0]), "6");
    assert_eq!(value(&prom(a, "{__name__=\"gr.colon:x\"}", 1)[0]), "12");
    assert_eq!(value(&prom(a, "{__name__=\"gr.last\"}", 1)[0]), "13");
    let tagged = prom(a, "{__name__=\"gr.tagged\"}", 1);
    assert_eq!(
        tagged[0]["metric"],
        serde_json::json!({"__name__": "gr.tagged", "a": "1", "b": "2"})
    );
    // 13-digit timestamps are milliseconds, kept to the millisecond.
    // (an explicit end: the point lies up to 250 ms after "now" when the test runs fast)
    let (_, body) = g.server.http(
        "GET",
        &format!(
            "/api/query?start={}&end={}&m=sum:gr.ms&ms=true",
            t - 10,
            t + 10
        ),
        "",
    );
    assert!(
        body.contains(&format!("\"{}\":11", t * 1000 + 250)),
        "{body}"
    );
    prom(a, "{__name__=~\"gr.(nan|hex|badtag.*)\"}", 0);
    assert_eq!(prom(a, "{__name__=~\"gr.*\"}", 8).len(), 8);
    // bad line, long line, hex, bad tag, bad UTF-8
    assert_eq!(stat(a, "tsd.graphite.errors", "plaintext"), 5);
    assert_eq!(stat(a, "tsd.graphite.received", "plaintext"), 8);
    g.server.stop();
}

#[test]
fn plaintext_udp_datagrams() {
    let g = start("");
    let t = now();
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.send_to(
        format!("udp.a 1 {t}\r\nnot a line\nudp.b 2 -1\rudp.c nan {t}\nudp.d 4 {t}").as_bytes(),
        &g.plain,
    )
    .unwrap();
    let a = &g.server.addr;
    let r = prom(a, "{__name__=~\"udp.*\"}", 3);
    let names: Vec<&str> = r
        .iter()
        .map(|x| x["metric"]["__name__"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["udp.a", "udp.b", "udp.d"]);
    assert_eq!(stat(a, "tsd.graphite.errors", "udp"), 1);
    g.server.stop();
}

#[test]
fn pickle_from_python_with_a_malicious_frame() {
    let g = start("");
    let _ = std::fs::remove_file("/tmp/tsgate-pickle-pwned");
    let (host, port) = g.pickle.split_once(':').unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/graphite/pickle_sender.py"
    );
    let t = now();
    let out = std::process::Command::new("python3")
        .args([script, host, port, &t.to_string()])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = &g.server.addr;
    let r = prom(a, "{__name__=~\"pk.*\"}", 5);
    let names: Vec<&str> = r
        .iter()
        .map(|x| x["metric"]["__name__"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "pk.after",
            "pk.carbon.a",
            "pk.lists",
            "pk.proto0",
            "pk.tagged"
        ]
    );
    let (_, body) = g.server.http(
        "GET",
        &format!(
            "/api/query?start={}&end={}&m=sum:pk.carbon.a",
            t - 10,
            t + 10
        ),
        "",
    );
    assert!(
        body.contains(&format!("\"{t}\":1.5")) && body.contains(&format!("\"{}\":2", t + 1)),
        "{body}"
    );
    assert!(!std::path::Path::new("/tmp/tsgate-pickle-pwned").exists());
    assert_eq!(stat(a, "tsd.graphite.bad_frames", "pickle"), 1);
    assert_eq!(stat(a, "tsd.graphite.errors", "pickle"), 1); // pk.short
                                                             // The server still takes frames on a new connection.
    let mut s = TcpStream::connect(&g.pickle).unwrap();
    let mut p = b"\x80\x02]X\x07\x00\x00\x00pk.rawsJ".to_vec();
    p.extend_from_slice(&(t as i32).to_le_bytes());
    p.extend_from_slice(b"K\x07\x86\x86a.");
    s.write_all(&tsgate_graphite::frame::encode(&p)).unwrap();
    drop(s);
    assert_eq!(value(&prom(a, "{__name__=\"pk.raws\"}", 1)[0]), "7");
    // A frame over graphite.pickle_max_frame (1 MiB) closes that connection, as in carbon.
    let mut s = TcpStream::connect(&g.pickle).unwrap();
    s.write_all(&(2u32 << 20).to_be_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(
        std::io::Read::read(&mut s, &mut buf).unwrap(),
        0,
        "connection closed"
    );
    assert_eq!(stat(a, "tsd.graphite.bad_frames", "pickle"), 2);
    g.server.stop();
}

/// collectd's write_graphite names mapped to metric + tags.
const COLLECTD_RULE: &str = r#"
[[graphite.rules]]
name = "collectd"
match = "collectd.{host}.{plugin}-{instance}.{type}-{type_instance}"
metric = "collectd.{plugin}.{type}"
tags = { host = "{host}", instance = "{instance}", type_instance = "{type_instance}" }
"#;

#[test]
fn rules_map_to_metric_and_tags_and_back() {
    let g = start(COLLECTD_RULE);
    let t = now();
    let mut s = TcpStream::connect(&g.plain).unwrap();
    s.write_all(
        format!(
            "collectd.web01.cpu-0.cpu-idle 97 {t}\ncollectd.web01.load.load.shortterm 0.5 {t}\n"
        )
        .as_bytes(),
    )
    .unwrap();
    drop(s);
    let a = &g.server.addr;
    let r = prom(a, "{__name__=\"collectd.cpu.cpu\"}", 1);
    assert_eq!(
        r[0]["metric"],
        serde_json::json!({"__name__": "collectd.cpu.cpu", "host": "web01", "instance": "0", "type_instance": "idle"})
    );
    // No rule matched: the whole path.
    prom(a, "{__name__=\"collectd.web01.load.load.shortterm\"}", 1);
    let (_, body) = g.server.http(
        "GET",
        &format!(
            "/api/query?start={}&m=sum:collectd.cpu.cpu%7Bhost=web01%7D",
            t - 10
        ),
        "",
    );
    assert!(body.contains("97"), "{body}");
    g.server.stop();
}

/// A path accepted once names its series directly afterwards (src/graphite/write.rs): later
/// points of the same path keep the rule's mapping, NaN is still dropped, and an unstorable
/// timestamp is still refused.
#[test]
fn remembered_paths_keep_their_mapping() {
    let g = start(COLLECTD_RULE);
    let t = now() - 100;
    let a = &g.server.addr;
    let send = |text: String| {
        let mut s = TcpStream::connect(&g.plain).unwrap();
        s.write_all(text.as_bytes()).unwrap();
    };
    send(format!(
        "collectd.web02.cpu-1.cpu-user 1 {t}\nplain.path 1 {t}\n"
    ));
    prom(a, "{__name__=\"collectd.cpu.cpu\", host=\"web02\"}", 1);
    prom(a, "{__name__=\"plain.path\"}", 1);
    send(format!(
        "collectd.web02.cpu-1.cpu-user 2 {}\ncollectd.web02.cpu-1.cpu-user nan {}\ncollectd.web02.cpu-1.cpu-user 4 99999999999\nplain.path 3 {}\n",
        t + 10,
        t + 20,
        t + 10
    ));
    let q = |m: &str| {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let (_, body) = g.server.http(
                "GET",
                &format!("/api/query?start={}&end={}&m=sum:{m}", t - 10, t + 60),
                "",
            );
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let n = v[0]["dps"].as_object().map_or(0, |d| d.len());
            if n >= 2 || Instant::now() > deadline {
                return v;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let v = q("collectd.cpu.cpu%7Bhost=web02,type_instance=user%7D");
    assert_eq!(
        v[0]["dps"],
        serde_json::json!({t.to_string(): 1, (t + 10).to_string(): 2}),
        "{v}"
    );
    let v = q("plain.path");
    assert_eq!(
        v[0]["dps"],
        serde_json::json!({t.to_string(): 1, (t + 10).to_string(): 3}),
        "{v}"
    );
    g.server.stop();
}

#[test]
fn bad_rules_stop_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        "[[graphite.rules]]\nmatch = \"a.{x}.{y}\"\nmetric = \"m\"\ntags = { x = \"{x}\" }\n",
    )
    .unwrap();
    let out = tsgate(&[
        "serve",
        "--data-dir",
        dir.path().join("d").to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--graphite-listen",
        "",
        "--pickle-listen",
        "",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("used nowhere"), "{err}");
}

/// Polls `/render` of `target` until `ok` accepts its JSON (or 15 s pass).
fn render_until(
    addr: &str,
    target: &str,
    from: i64,
    until: i64,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let path = format!(
            "/render?target={}&from={from}&until={until}&format=json",
            enc(target)
        );
        let (code, body) = http(addr, "GET", &path, "", &[]);
        assert_eq!(code, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        if ok(&v) || Instant::now() > deadline {
            assert!(ok(&v), "{target}: {body}");
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The points of a one-series answer that are not null, as (time, value); none for no series.
fn points(v: &Value) -> Vec<(i64, f64)> {
    v[0]["datapoints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| !p[0].is_null())
        .map(|p| (p[1].as_i64().unwrap(), p[0].as_f64().unwrap()))
        .collect()
}

#[test]
fn render_sees_points_written_after_its_rows_were_cached() {
    // Paths stored whole are read through the row cache, which keeps rows of closed hours: a
    // second read of the same rows comes from it, and points written since must still show.
    // (Compaction is held off: it would rewrite the rows between the reads.)
    let g = start("compaction_delay_ms = 600000\n");
    // Two minutes before the end of an hour closed an hour ago: the window covers it and the
    // next one, also closed, which holds no row at first.
    let t = (now() / 3600 - 1) * 3600 - 120;
    let send = |text: String| {
        TcpStream::connect(&g.plain)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap()
    };
    send(format!("rc.a.x 1 {t}\nrc.b.x 2 {t}\n"));
    let a = &g.server.addr;
    let (from, until) = (t - 60, t + 300);
    let sum = "sumSeries(rc.*.x)";
    render_until(a, sum, from, until, |v| points(v) == [(t, 3.0)]);
    // Read again (from the cache), then more points: one in a row already cached, one in the
    // next hour's row, cached as absent.
    // Rows are kept once their hour has gone unwritten for 2 s (the next hour's, absent and
    // never written, at once): read until one read finds all it looks up in the cache.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (hits, misses) = (
            stat(a, "tsd.rowcache.lookups", "hit"),
            stat(a, "tsd.rowcache.lookups", "miss"),
        );
        render_until(a, sum, from, until, |v| points(v) == [(t, 3.0)]);
        if stat(a, "tsd.rowcache.lookups", "hit") > hits
            && stat(a, "tsd.rowcache.lookups", "miss") == misses
        {
            break;
        }
        assert!(Instant::now() < deadline, "the rows were not kept");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(stat(a, "tsd.rowcache.bytes", "") > 0);
    send(format!("rc.a.x 10 {}\nrc.b.x 20 {}\n", t + 60, t + 240));
    let v = render_until(a, sum, from, until, |v| points(v).len() == 3);
    assert_eq!(points(&v), [(t, 3.0), (t + 60, 10.0), (t + 240, 20.0)]);
    g.server.stop();
}
