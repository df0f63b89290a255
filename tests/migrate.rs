//! Moving data in and out: VictoriaMetrics' JSON-lines export and import (HTTP and the
//! `export`/`import` commands), snapshots of a running store, and imports from carbon's whisper
//! files (written by Debian's python3-whisper) and from a Prometheus server (Debian's
//! prometheus) through remote read.

mod common;

use common::{free_port, http, tsgate, Server};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn d(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn export(s: &Server, selector: &str, extra: &str) -> String {
    let (code, body) = s.http(
        "GET",
        &format!("/api/v1/export?match[]={}{extra}", enc(selector)),
        "",
    );
    assert_eq!(code, 200, "{body}");
    body
}

const ALL: &str = "{__name__=~\".+\"}";

fn admin_config(dir: &Path) -> std::path::PathBuf {
    let c = dir.join("tsgate.toml");
    std::fs::write(&c, "[admin]\nenabled = true\n").unwrap();
    c
}

/// A missing peer fails the test under CI, and is skipped loudly elsewhere.
fn have(bin: &str) -> bool {
    if Path::new(bin).exists() {
        return true;
    }
    assert!(std::env::var("CI").is_err(), "{bin} is missing");
    eprintln!("SKIPPED: {bin} is not installed");
    false
}

/// Points of every kind: integers and floats (an integral float stays a float), second and
/// millisecond timestamps over three days (several export windows), non-finite values, label
/// values that need escaping, a series with only a name, and one with ten labels.
fn fill(s: &Server, t0: u64) {
    let mut put = Vec::new();
    for i in 0..300u64 {
        let ts = t0 + i * 900; // every 15 min over ~3 days
        put.push(
            serde_json::json!({"metric": "sys.cpu.user", "timestamp": ts,
            "value": i as i64, "tags": {"host": "web01"}}),
        );
        put.push(
            serde_json::json!({"metric": "sys.cpu.user", "timestamp": ts * 1000 + 250,
            "value": i as f64 + 0.5, "tags": {"host": "web02"}}),
        );
    }
    put.push(serde_json::json!({"metric": "sys.mem", "timestamp": t0,
        "value": 42.0, "tags": {"host": "web01"}}));
    let (code, body) = s.http("POST", "/api/put", &serde_json::to_string(&put).unwrap());
    assert_eq!(code, 204, "{body}");
    let ms = t0 * 1000;
    let lines = format!(
        "{{\"metric\":{{\"__name__\":\"http_requests_total\",\"le\":\"+Inf\",\"path\":\"/a b\"}},\"values\":[1,NaN,+Inf,-Inf,1e300],\"timestamps\":[{},{},{},{},{}]}}\n\
         {{\"metric\":{{\"__name__\":\"alone\"}},\"values\":[7],\"timestamps\":[{}]}}\n\
         {{\"metric\":{{\"__name__\":\"wide\",\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"e\":\"5\",\"f\":\"6\",\"g\":\"7\",\"h\":\"8\",\"i\":\"9\",\"j\":\"10\"}},\"values\":[0.25],\"timestamps\":[{}]}}\n",
        ms,
        ms + 1000,
        ms + 2000,
        ms + 3000,
        ms + 4000,
        ms,
        ms
    );
    let (code, body) = s.http("POST", "/api/v1/import", &lines);
    assert_eq!(code, 204, "{body}");
}

#[test]
fn export_then_import_into_an_empty_store_gives_identical_series_and_points() {
    let dir = tempfile::tempdir().unwrap();
    let a = Server::start(&dir.path().join("a"));
    let t0 = (now_s() - 4 * 86_400) / 3600 * 3600;
    fill(&a, t0);
    let e1 = export(&a, ALL, "");
    let lines: Vec<&str> = e1.lines().collect();
    // Values as stored: integers plain, floats with a fraction; non-finite as VictoriaMetrics
    // writes them; escaped names shown as sent.
    assert!(
        lines.contains(&format!(
            "{{\"metric\":{{\"__name__\":\"http_requests_total\",\"le\":\"+Inf\",\"path\":\"/a b\"}},\"values\":[1,NaN,+Inf,-Inf,1e300],\"timestamps\":[{},{},{},{},{}]}}",
            t0 * 1000, t0 * 1000 + 1000, t0 * 1000 + 2000, t0 * 1000 + 3000, t0 * 1000 + 4000
        ).as_str()),
        "{e1}"
    );
    assert!(lines.contains(&format!(
        "{{\"metric\":{{\"__name__\":\"sys.mem\",\"host\":\"web01\"}},\"values\":[42.0],\"timestamps\":[{}]}}",
        t0 * 1000
    ).as_str()), "{e1}");
    assert!(lines
        .iter()
        .any(|l| l.starts_with("{\"metric\":{\"__name__\":\"alone\"},\"values\":[7]")));
    // Three days of points: the series comes out once per day it spans.
    let web01: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("\"host\":\"web01\"") && l.contains("sys.cpu.user"))
        .collect();
    assert!(web01.len() >= 3, "{web01:?}");
    let points = |l: &str| -> usize {
        let v: serde_json::Value = serde_json::from_str(
            &l.replace("NaN", "0")
                .replace("+Inf", "0")
                .replace("-Inf", "0"),
        )
        .unwrap();
        v["values"].as_array().unwrap().len()
    };
    assert_eq!(web01.iter().map(|l| points(l)).sum::<usize>(), 300);
    assert!(
        e1.contains("\"values\":[0,1,2,3,"),
        "integers stay integers: {e1}"
    );
    assert!(e1.contains("\"values\":[0.5,1.5,2.5,"), "{e1}");

    // Over HTTP into an empty server: the same export, byte for byte.
    let b = Server::start(&dir.path().join("b"));
    let (code, body) = b.http("POST", "/api/v1/import", &e1);
    assert_eq!(code, 204, "{body}");
    assert_eq!(export(&b, ALL, ""), e1);
    // And PromQL reads the same on both.
    let q = format!(
        "/api/v1/query_range?query={}&start={}&end={}&step=3600",
        enc("sum(sys.cpu.user)"),
        t0,
        t0 + 86_400
    );
    assert_eq!(a.http("GET", &q, "").1, b.http("GET", &q, "").1);
    b.stop();
    a.stop();

    // Offline: `tsgate export` of the stopped store says the same; its output imported
    // (format told from the first line) into an empty data dir exports the same again; a
    // second import of it changes nothing.
    let file = dir.path().join("e1.jsonl");
    let o = tsgate(&[
        "export",
        "--data-dir",
        d(&dir.path().join("a")),
        "-o",
        d(&file),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), e1);
    let c = dir.path().join("c");
    for _ in 0..2 {
        let o = tsgate(&["import", "--quiet", "--data-dir", d(&c), d(&file)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = tsgate(&["export", "--data-dir", d(&c)]);
        assert_eq!(String::from_utf8_lossy(&o.stdout), e1);
    }

    // OpenTSDB's import format: names as stored, non-finite values left out (and said so).
    let o = tsgate(&[
        "export",
        "--format",
        "opentsdb",
        "--data-dir",
        d(&dir.path().join("a")),
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains(&format!(
            "sys.cpu.user {} 0.5 host=web02\n",
            t0 * 1000 + 250
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("alone {t0} 7 _.labels=none\n")),
        "{text}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("3 non-finite values left out"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let tsdb = dir.path().join("o.txt");
    std::fs::write(&tsdb, &text).unwrap();
    let e = dir.path().join("e");
    // OpenTSDB's rules apply to its format: 8 tags at most unless limits.max_tags says more.
    let o = tsgate(&[
        "import",
        "--quiet",
        "--from",
        "opentsdb",
        "--data-dir",
        d(&e),
        d(&tsdb),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Too many tags: 10"));
    let wide = dir.path().join("wide.toml");
    std::fs::write(&wide, "[limits]\nmax_tags = 12\n").unwrap();
    let o = tsgate(&[
        "import",
        "--quiet",
        "--config",
        d(&wide),
        "--data-dir",
        d(&e),
        d(&tsdb),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tsgate(&["export", "--format", "opentsdb", "--data-dir", d(&e)]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), text);
}

#[test]
fn import_stores_the_valid_lines_and_names_the_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("data"));
    let ms = (now_s() - 600) * 1000;
    let body = format!(
        "{{\"metric\":{{\"__name__\":\"good\",\"job\":\"a\"}},\"values\":[1,2],\"timestamps\":[{ms},{}]}}\n\
         {{\"metric\":{{\"__name__\":\"x\"}},\"values\":[1,2],\"timestamps\":[{ms}]}}\n\
         not json\n\
         \n\
         {{\"metric\":{{}},\"values\":[1],\"timestamps\":[{ms}]}}\n\
         {{\"metric\":{{\"job\":\"noname\"}},\"values\":[1],\"timestamps\":[{ms}]}}\n\
         {{\"metric\":{{\"__name__\":\"good2\"}},\"values\":[3.5],\"timestamps\":[{ms}]}}\n",
        ms + 1000
    );
    let (code, text) = s.http("POST", "/api/v1/import", &body);
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("4 lines skipped"), "{text}");
    assert!(
        text.contains(
            "line 2: `timestamps` array size must match `values` array size; got 1; want 2"
        ),
        "{text}"
    );
    assert!(text.contains("line 3: cannot parse json line"), "{text}");
    assert!(text.contains("line 5: missing tags"), "{text}");
    assert!(
        text.contains("line 6: series {job=\"noname\"} has no __name__ label"),
        "{text}"
    );
    assert_eq!(
        export(&s, "{__name__=~\"good.*\"}", ""),
        format!(
            "{{\"metric\":{{\"__name__\":\"good\",\"job\":\"a\"}},\"values\":[1,2],\"timestamps\":[{ms},{}]}}\n\
             {{\"metric\":{{\"__name__\":\"good2\"}},\"values\":[3.5],\"timestamps\":[{ms}]}}\n",
            ms + 1000
        )
    );
    // gzip, as VictoriaMetrics takes it.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(
        &mut gz,
        format!(
            "{{\"metric\":{{\"__name__\":\"zipped\"}},\"values\":[5],\"timestamps\":[{ms}]}}\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let (code, _) = common::http_bytes(
        &s.addr,
        "POST",
        "/api/v1/import",
        &gz.finish().unwrap(),
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 204);
    assert!(export(&s, "zipped", "").contains("\"values\":[5]"));
}

#[test]
fn export_takes_selectors_and_a_time_range() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("data"));
    let t0 = now_s() - 3600;
    let put: Vec<serde_json::Value> = (0..10)
        .flat_map(|i| {
            ["a", "b"].map(|h| {
                serde_json::json!({"metric": "m", "timestamp": t0 + i * 10,
                "value": i, "tags": {"host": h}})
            })
        })
        .collect();
    assert_eq!(
        s.http("POST", "/api/put", &serde_json::to_string(&put).unwrap())
            .0,
        204
    );
    let (code, body) = s.http("GET", "/api/v1/export", "");
    assert_eq!(code, 400);
    assert!(body.contains("missing `match[]` arg"), "{body}");
    let (code, body) = s.http("GET", "/api/v1/export?match[]=m%7B", "");
    assert_eq!(code, 400, "{body}");
    // Two selectors that both match host=a: it comes out once.
    let both = export(
        &s,
        "m{host=\"a\"}",
        &format!(
            "&match[]={}&start={}&end={}",
            enc("{__name__=\"m\"}"),
            t0 + 20,
            t0 + 40
        ),
    );
    let t = |i: u64| (t0 + i) * 1000;
    assert_eq!(
        both,
        format!(
            "{{\"metric\":{{\"__name__\":\"m\",\"host\":\"a\"}},\"values\":[2,3,4],\"timestamps\":[{},{},{}]}}\n\
             {{\"metric\":{{\"__name__\":\"m\",\"host\":\"b\"}},\"values\":[2,3,4],\"timestamps\":[{},{},{}]}}\n",
            t(20), t(30), t(40), t(20), t(30), t(40)
        )
    );
    // POST form, as VictoriaMetrics takes it too.
    let (code, body) = http(
        &s.addr,
        "POST",
        "/api/v1/export",
        &format!("match[]={}", enc("m{host=\"b\"}")),
        &[("Content-Type", "application/x-www-form-urlencoded")],
    );
    assert_eq!(code, 200);
    assert_eq!(body.lines().count(), 1);
    // Read-only: an export of a directory with no store makes none.
    let none = dir.path().join("none");
    let o = tsgate(&["export", "--data-dir", d(&none)]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no store in"));
    assert!(!none.exists());
}

#[test]
fn snapshot_taken_under_ingest_holds_every_point_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Off by default, as Prometheus' admin API.
    let plain = Server::start(&dir.path().join("plain"));
    let (code, body) = plain.http("POST", "/api/v1/admin/tsdb/snapshot", "");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("admin APIs disabled"), "{body}");
    plain.stop();

    let cfg = admin_config(dir.path());
    let s = Server::start_with(&data, Some(&cfg));
    let t0 = now_s() - 1800;
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acked, stop, addr) = (acked.clone(), stop.clone(), s.addr.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let batch: Vec<serde_json::Value> = (i..i + 50)
                    .map(|j| {
                        serde_json::json!({"metric": "ingest", "timestamp": t0 * 1000 + j,
                        "value": j, "tags": {"w": "1"}})
                    })
                    .collect();
                let (code, _) = http(
                    &addr,
                    "POST",
                    "/api/put",
                    &serde_json::to_string(&batch).unwrap(),
                    &[],
                );
                assert_eq!(code, 204);
                i += 50;
                acked.store(i, Ordering::SeqCst);
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.load(Ordering::SeqCst) < 2000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = acked.load(Ordering::SeqCst);
    let (code, body) = s.http("POST", "/api/v1/admin/tsdb/snapshot", "");
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success");
    let name = v["data"]["name"].as_str().unwrap().to_string();
    // Prometheus' form: 20060102T150405Z-<16 hex digits>.
    assert_eq!(name.len(), 33, "{name}");
    assert_eq!(&name[8..9], "T");
    assert_eq!(&name[15..17], "Z-");
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let after = acked.load(Ordering::SeqCst);
    s.stop();

    let copy = data.join("snapshots").join(&name);
    let c = Server::start(&copy);
    let got = export(&c, "ingest", "");
    let mut seen = std::collections::HashSet::new();
    for l in got.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        for (t, x) in v["timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .zip(v["values"].as_array().unwrap())
        {
            assert_eq!(t.as_u64().unwrap() - t0 * 1000, x.as_u64().unwrap());
            seen.insert(x.as_u64().unwrap());
        }
    }
    let missing: Vec<u64> = (0..before).filter(|j| !seen.contains(j)).collect();
    assert!(
        missing.is_empty(),
        "{} of {before} acknowledged points missing",
        missing.len()
    );
    assert!(seen.len() as u64 <= after);
    c.stop();

    // Offline: `tsgate snapshot DIR` of the stopped store; it refuses a directory in use.
    let off = dir.path().join("off");
    let o = tsgate(&["snapshot", "--data-dir", d(&data), d(&off)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o1 = tsgate(&["export", "--data-dir", d(&data)]);
    let o2 = tsgate(&["export", "--data-dir", d(&off)]);
    assert_eq!(o1.stdout, o2.stdout);
    assert!(!o1.stdout.is_empty());
    let o = tsgate(&["snapshot", "--data-dir", d(&data), d(&off)]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
}

/// Runs a python3-whisper tool.
fn whisper(tool: &str, args: &[&str]) -> String {
    let o = Command::new(tool).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn whisper_files_import_with_every_archive_finest_first() {
    if !have("/usr/bin/whisper-create") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("whisper");
    std::fs::create_dir_all(tree.join("servers/web01")).unwrap();
    let load = tree.join("servers/web01/load.wsp");
    let other = tree.join("other.wsp");
    whisper("whisper-create", &[d(&load), "10s:1h", "1m:1d"]);
    whisper("whisper-create", &[d(&other), "1m:1d"]);
    let now = now_s();
    // Last half hour every 10 s (the fine archive, propagated to the coarse one), and points
    // from 3 to 5 hours ago (only the coarse archive holds those).
    let mut recent: Vec<String> = Vec::new();
    for i in 0..180u64 {
        let ts = (now - 1800 + i * 10) / 10 * 10;
        recent.push(format!("{ts}:{}", i as f64 * 0.5));
    }
    for chunk in recent.chunks(50) {
        let mut a = vec![d(&load)];
        a.extend(chunk.iter().map(|s| s.as_str()));
        whisper("whisper-update", &a);
    }
    let mut old = vec![d(&load).to_string()];
    for i in 0..120u64 {
        old.push(format!("{}:{}", now - 5 * 3600 + i * 60, 1000 + i));
    }
    whisper(
        "whisper-update",
        &old.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    );
    whisper("whisper-update", &[d(&other), &format!("{}:7", now - 120)]);

    let data = dir.path().join("data");
    let o = tsgate(&[
        "import",
        "--from",
        "whisper",
        "--quiet",
        "--data-dir",
        d(&data),
        d(&tree),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Twice: the same cells, nothing more.
    let o = tsgate(&[
        "import",
        "--from",
        "whisper",
        "--quiet",
        "--data-dir",
        d(&data),
        d(&tree),
    ]);
    assert!(o.status.success());

    // What whisper's own reader gives: the fine archive over its hour, the coarse one before.
    let fetch = |from: u64, until: u64| -> Vec<(u64, f64)> {
        let out = whisper(
            "whisper-fetch",
            &[
                "--json",
                "--from",
                &from.to_string(),
                "--until",
                &until.to_string(),
                d(&load),
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let (start, step) = (v["start"].as_u64().unwrap(), v["step"].as_u64().unwrap());
        v["values"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .filter_map(|(i, x)| Some((start + i as u64 * step, x.as_f64()?)))
            .collect()
    };
    let fine = fetch(now - 3590, now);
    let coarse: Vec<(u64, f64)> = fetch(now - 86_000, now)
        .into_iter()
        .filter(|(t, _)| *t <= now - 3600)
        .collect();
    assert!(fine.len() >= 170, "{fine:?}");
    assert!(coarse.len() >= 100, "{coarse:?}");
    let mut want: Vec<(u64, f64)> = coarse;
    want.extend(fine);

    let o = tsgate(&["export", "--format", "opentsdb", "--data-dir", d(&data)]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let got: Vec<(u64, f64)> = text
        .lines()
        .filter(|l| l.starts_with("servers.web01.load "))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(got, want);
    assert!(
        text.contains(&format!(
            "other {} 7 _.labels=none\n",
            (now - 120) / 60 * 60
        )),
        "{text}"
    );

    // graphite-web's API reads it under its path.
    let s = Server::start(&data);
    let (code, body) = s.http(
        "GET",
        &format!(
            "/render?target=servers.web01.load&from={}&until={now}&format=json",
            now - 1700
        ),
        "",
    );
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let dps = v[0]["datapoints"].as_array().unwrap();
    let rendered: Vec<(u64, f64)> = dps
        .iter()
        .filter(|p| !p[0].is_null())
        .map(|p| (p[1].as_u64().unwrap(), p[0].as_f64().unwrap()))
        .collect();
    let fine_want: Vec<(u64, f64)> = want
        .iter()
        .copied()
        .filter(|(t, _)| *t > now - 1700)
        .collect();
    assert_eq!(rendered, fine_want);
    s.stop();
}

#[test]
fn prometheus_import_through_remote_read_holds_its_raw_samples() {
    if !have("/usr/bin/prometheus") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global: {{scrape_interval: 1s, scrape_timeout: 1s}}\nscrape_configs:\n  - job_name: prometheus\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        ),
    )
    .unwrap();
    let mut prom = Command::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Scraped for a while: `up` has a few samples.
    let count = |q: &str| -> usize {
        let (code, body) = http(
            &addr,
            "GET",
            &format!("/api/v1/query?query={}", enc(q)),
            "",
            &[],
        );
        if code != 200 {
            return 0;
        }
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        v["data"]["result"][0]["values"]
            .as_array()
            .map_or(0, |a| a.len())
    };
    while count("up[1h]") < 6 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
    }
    let end = now_s();
    let data = dir.path().join("data");
    let o = tsgate(&[
        "import",
        "--from",
        "prometheus",
        "--quiet",
        "--url",
        &format!("http://{addr}"),
        "--match",
        "up",
        "--match",
        "{__name__=~\"prometheus_tsdb_head_series|up\"}",
        "--start",
        "1h-ago",
        "--end",
        &end.to_string(),
        "--data-dir",
        d(&data),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Prometheus' raw samples of each series up to `end`, as its API shows them.
    let raw = |q: &str| -> Vec<(String, Vec<(i64, f64)>)> {
        let (_, body) = http(
            &addr,
            "GET",
            &format!(
                "/api/v1/query?query={}&time={end}",
                enc(&format!("{q}[1h]"))
            ),
            "",
            &[],
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let mut out: Vec<(String, Vec<(i64, f64)>)> = v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let pts = r["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        (
                            (p[0].as_f64().unwrap() * 1000.0).round() as i64,
                            p[1].as_str().unwrap().parse().unwrap(),
                        )
                    })
                    .collect();
                (r["metric"].to_string(), pts)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    };
    let want_up = raw("up");
    let want_head = raw("prometheus_tsdb_head_series");
    let _ = prom.kill();
    let _ = prom.wait();
    assert!(!want_up.is_empty() && !want_up[0].1.is_empty());

    let s = Server::start(&data);
    let read = |q: &str| -> Vec<(String, Vec<(i64, f64)>)> {
        let mut out: Vec<(String, Vec<(i64, f64)>)> = export(&s, q, &format!("&end={end}"))
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let pts = v["timestamps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(v["values"].as_array().unwrap())
                    .map(|(t, x)| (t.as_i64().unwrap(), x.as_f64().unwrap()))
                    .collect();
                (v["metric"].to_string(), pts)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    };
    // Same labels (in the same JSON key order: Prometheus sorts them, as does the export
    // after `__name__`), same samples.
    assert_eq!(read("up"), want_up);
    assert_eq!(read("prometheus_tsdb_head_series"), want_head);
    s.stop();
}

/// An export's lines as a map from label set to points, merged over lines (VictoriaMetrics
/// orders labels and splits series its own way).
type Series = std::collections::BTreeMap<Vec<(String, String)>, Vec<(i64, f64)>>;

fn parse_export(text: &str) -> Series {
    let mut out = Series::new();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let mut labels: Vec<(String, String)> = v["metric"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        labels.sort();
        let pts = out.entry(labels).or_default();
        for (t, x) in v["timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .zip(v["values"].as_array().unwrap())
        {
            pts.push((t.as_i64().unwrap(), x.as_f64().unwrap()));
        }
        pts.sort_by_key(|p| p.0);
    }
    out
}

#[test]
fn victoriametrics_imports_our_export_and_we_import_its() {
    if !have("/usr/bin/victoria-metrics") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let vm_addr = format!("127.0.0.1:{port}");
    let mut vm = Command::new("victoria-metrics")
        .arg(format!(
            "-storageDataPath={}",
            dir.path().join("vm").display()
        ))
        .arg(format!("-httpListenAddr={vm_addr}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let s = Server::start(&dir.path().join("a"));
    let t0 = (now_s() - 3600) * 1000;
    let mut lines = String::new();
    for (job, k) in [("api", 1.0), ("db", 0.25)] {
        let vals: Vec<String> = (0..20)
            .map(|i| {
                let v = i as f64 * k;
                if v.fract() == 0.0 {
                    format!("{}", v as i64)
                } else {
                    format!("{v}")
                }
            })
            .collect();
        let ts: Vec<String> = (0..20).map(|i| (t0 + i * 15_000).to_string()).collect();
        lines.push_str(&format!(
            "{{\"metric\":{{\"__name__\":\"requests\",\"job\":\"{job}\",\"instance\":\"h:9100\"}},\"values\":[{}],\"timestamps\":[{}]}}\n",
            vals.join(","), ts.join(",")
        ));
    }
    assert_eq!(s.http("POST", "/api/v1/import", &lines).0, 204);
    let ours = export(&s, "requests", "");
    let deadline = Instant::now() + Duration::from_secs(30);
    while http(&vm_addr, "GET", "/health", "", &[]).0 != 200 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    // VictoriaMetrics takes our lines as they are…
    let (code, body) = http(&vm_addr, "POST", "/api/v1/import", &ours, &[]);
    assert_eq!(code, 204, "{body}");
    let mut theirs = String::new();
    while Instant::now() < deadline {
        http(&vm_addr, "GET", "/internal/force_flush", "", &[]);
        let (code, body) = http(&vm_addr, "GET", "/api/v1/export?match[]=requests", "", &[]);
        assert_eq!(code, 200, "{body}");
        theirs = body;
        if parse_export(&theirs).values().map(Vec::len).sum::<usize>() == 40 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = vm.kill();
    let _ = vm.wait();
    // …and exports the same series and points in the same shape…
    assert_eq!(parse_export(&theirs), parse_export(&ours), "{theirs}");
    // …which an empty tsgate takes back: the same export as the first.
    let b = Server::start(&dir.path().join("b"));
    let (code, body) = b.http("POST", "/api/v1/import", &theirs);
    assert_eq!(code, 204, "{body}");
    assert_eq!(export(&b, "requests", ""), ours);
}
