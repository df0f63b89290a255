//! The data lifecycle against real servers: retention (and its rules) dropping expired rows on
//! every query API, in `tsgate scan` and on disk; deletion through the admin APIs; the
//! cardinality limits on every protocol.

mod common;
use common::*;
use prost::Message;
use std::path::Path;
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};

on_both_backends!(
    retention_drops_expired_rows_everywhere,
    delete_series_removes_exactly_its_points
);

const DAY: u64 = 86_400;
/// One point every this many seconds in the generated history.
const STEP: u64 = 120;

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn d(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Bytes under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        n += if m.is_dir() {
            dir_bytes(&e.path())
        } else {
            m.len()
        };
    }
    n
}

/// A value of `/metrics` (a sample without labels).
fn metric(addr: &str, name: &str) -> f64 {
    let (_, body) = http(addr, "GET", "/metrics", "", &[]);
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

/// Waits until `/metrics` shows `n` retention sweeps.
fn wait_sweeps(addr: &str, n: f64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(addr, "tsgate_retention_sweeps_total") < n {
        assert!(Instant::now() < deadline, "no retention sweep within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Points `/api/query` returns for `m` in `[start, end]` (seconds).
fn opentsdb_points(addr: &str, m: &str, start: u64, end: u64) -> usize {
    let (code, body) = http(
        addr,
        "GET",
        &format!("/api/query?start={start}&end={end}&m={m}"),
        "",
        &[],
    );
    if code == 404 || body.trim() == "[]" {
        return 0;
    }
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s["dps"].as_object().unwrap().len())
        .sum()
}

/// Samples a PromQL range query of `sel` over `[start, end]` returns, one an hour.
fn promql_samples(addr: &str, sel: &str, start: u64, end: u64) -> usize {
    let q: String = form_urlencoded::byte_serialize(sel.as_bytes()).collect();
    let (code, body) = http(
        addr,
        "GET",
        &format!("/api/v1/query_range?query={q}&start={start}&end={end}&step=3600"),
        "",
        &[],
    );
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["values"].as_array().unwrap().len())
        .sum()
}

/// Non-null datapoints graphite-web's `/render` returns for `target` over `[from, until]`.
fn graphite_points(addr: &str, target: &str, from: u64, until: u64) -> usize {
    let t: String = form_urlencoded::byte_serialize(target.as_bytes()).collect();
    let (code, body) = http(
        addr,
        "GET",
        &format!("/render?target={t}&from={from}&until={until}&format=json&maxDataPoints=100000"),
        "",
        &[],
    );
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["datapoints"].as_array().unwrap().iter())
        .filter(|p| !p[0].is_null())
        .count()
}

/// Base hours of the `tsdb` rows `tsgate scan` shows (no salt, 3-byte metric UIDs).
fn scanned_bases(b: &Backend, data: &Path) -> Vec<u64> {
    scan_on(b, data, "data")
        .iter()
        .filter_map(|l| {
            let row = l.split_whitespace().nth(1)?;
            u64::from_str_radix(row.get(6..14)?, 16).ok()
        })
        .collect()
}

/// Imports 30 days of history (5 `app.cpu` and 2 `debug.trace` series, a point every `STEP`
/// seconds) ending at the returned hour, and 2 `old.gone` series whose points stop 20 days
/// before it.
fn import_history(b: &Backend, dir: &Path, data: &Path) -> u64 {
    let t0 = now_s() / 3600 * 3600;
    let first = t0 - 30 * DAY;
    let mut lines = String::new();
    let mut ts = first;
    while ts < t0 {
        for h in 0..5 {
            // Values that do not compress to nothing, as real ones do not.
            let v = (ts.wrapping_mul(2_654_435_761) ^ h) % 1_000_003;
            lines.push_str(&format!("app.cpu {ts} {v}.{h} host=h{h}\n"));
        }
        for h in 0..2 {
            lines.push_str(&format!("debug.trace {ts} 1 host=h{h}\n"));
            if ts < t0 - 20 * DAY {
                lines.push_str(&format!("old.gone {ts} 2 host=g{h}\n"));
            }
        }
        ts += STEP;
    }
    let file = dir.join("history.txt");
    std::fs::write(&file, lines).unwrap();
    let o = tsgate_on(b, &["import", "--quiet", "--data-dir", d(data), d(&file)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    t0
}

/// A `kill -9` in the middle of a sweep loses no point retention keeps: the recent history
/// and points acknowledged just before the kill are all there after the next start's sweep.
#[test]
fn a_crash_during_a_sweep_loses_no_kept_point() {
    let b = Backend::embedded();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let t0 = import_history(&b, dir.path(), &data);
    let recent = (t0 - 6 * DAY, t0 + 3600);
    let s = Server::start_on(&b, &data, None);
    let before = opentsdb_points(&s.addr, "none:app.cpu", recent.0, recent.1);
    s.stop();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, "[storage]\nretention = \"7d\"\n").unwrap();
    let mut acked = 0;
    for (round, delay_ms) in [0u64, 20, 80].into_iter().enumerate() {
        let s = Server::start_on(&b, &data, Some(&cfg));
        // Acknowledged points (in the WAL), then the kill while the start's sweep may run.
        let body = serde_json::json!([{"metric": "app.cpu", "timestamp": t0 + 1 + round as u64, "value": 1, "tags": {"host": "late"}}]);
        let (code, _) = s.http("POST", "/api/put?sync", &body.to_string());
        assert_eq!(code, 204);
        acked += 1;
        std::thread::sleep(Duration::from_millis(delay_ms));
        s.kill9();
    }
    let s = Server::start_on(&b, &data, Some(&cfg));
    // Swept at this start, or by a sweep that completed before a kill (then recorded, and not
    // due again for an interval).
    let deadline = Instant::now() + Duration::from_secs(60);
    while opentsdb_points(&s.addr, "none:app.cpu", t0 - 30 * DAY, t0 - 8 * DAY) > 0 {
        assert!(Instant::now() < deadline, "expired rows still there");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        opentsdb_points(&s.addr, "none:app.cpu", recent.0, recent.1),
        before + acked
    );
    s.stop();
}

/// Retention 7 days over 30 days of history, and `debug.*` kept 1 day: after the sweep the
/// expired part is gone from `/api/query`, PromQL, `/render` and `tsgate scan`, the data
/// directory shrank (embedded: while the server runs), the recent part is intact, and the
/// series retention emptied no longer count (explorer, `limits.max_series_per_metric`).
fn retention_drops_expired_rows_everywhere(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let t0 = import_history(b, dir.path(), &data);
    let first = t0 - 30 * DAY;
    // The windows, fixed before anything runs: expired (older than 7 d plus the hour a row
    // spans), recent (the last 6 days), and debug's (older than 1 day plus an hour / last 23 h).
    let expired = (first, t0 - 7 * DAY - 3600);
    let recent = (t0 - 6 * DAY, t0);
    let debug_old = (t0 - 3 * DAY, t0 - DAY - 3600);
    let debug_recent = (t0 - 23 * 3600, t0);
    let counts = |addr: &str| {
        [
            opentsdb_points(addr, "none:app.cpu", expired.0, expired.1),
            promql_samples(addr, "{__name__=\"app.cpu\"}", expired.0, expired.1),
            graphite_points(addr, "seriesByTag('name=app.cpu')", expired.0, expired.1),
            opentsdb_points(addr, "none:app.cpu", recent.0, recent.1),
            opentsdb_points(addr, "none:debug.trace", debug_old.0, debug_old.1),
            opentsdb_points(addr, "none:debug.trace", debug_recent.0, debug_recent.1),
            opentsdb_points(addr, "none:debug.trace", recent.0, recent.1),
        ]
    };

    let s = Server::start_on(b, &data, None);
    let before = counts(&s.addr);
    assert_eq!(series_of(&s.addr, "old.gone"), 2);
    s.stop();
    for (i, n) in before.iter().enumerate() {
        assert!(*n > 0, "count {i} is 0 before retention: {before:?}");
    }
    assert!(scanned_bases(b, &data).iter().any(|&b| b < expired.1));
    // The engine's files: what retention frees. (The data directory also holds files of fixed
    // size, the 1 MiB UID journal and the WAL's reused segments, which it does not.)
    let store_dir = data.join("store");
    let bytes_before = if b.is_shared() {
        0
    } else {
        dir_bytes(&store_dir)
    };

    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        "[limits]\nmax_series_per_metric = 2\n\n[storage]\nretention = \"7d\"\nretention_sweep_bytes_per_s = 1048576\n\n[[storage.retention_rules]]\nmetric = \"debug.*\"\nretention = \"1d\"\n",
    )
    .unwrap();
    let s = Server::start_on(b, &data, Some(&cfg));
    let started = Instant::now();
    wait_sweeps(&s.addr, 1.0);
    assert!(metric(&s.addr, "tsgate_retention_rows_dropped_total") > 0.0);
    // The sweep read no faster than retention_sweep_bytes_per_s, but for its burst (a tenth
    // of a second's worth) and the bytes between two looks at the clock (a hundredth).
    let read = metric(&s.addr, "tsgate_retention_sweep_read_bytes_total");
    let took = metric(&s.addr, "tsgate_retention_last_sweep_duration_seconds");
    let rate = 1_048_576.0;
    eprintln!("retention: sweep read {read} bytes in {took} s");
    // (Enough to read that the limit shows: unbounded, this takes a fraction of a second.)
    assert!(read > rate / 2.0, "{read}");
    assert!(read <= rate * (took + 0.11), "{read} bytes in {took} s");
    // The embedded store gives the disk back while it runs: the sweep waits (up to 10 s, for
    // reads still using them) until the engine has deleted the files its rewrite replaced.
    // Polled for at most 30 s after the sweep is counted; measured at once.
    if !b.is_shared() {
        let swept = Instant::now();
        let deadline = swept + Duration::from_secs(30);
        loop {
            let now = dir_bytes(&store_dir);
            // 40 %: the engine's fixed files (journal, manifests) are a larger share since
            // encoded columns made the data itself ~3x smaller (35.6 % measured after).
            if now * 100 <= bytes_before * 40 {
                eprintln!(
                    "retention: store {bytes_before} -> {now} bytes ({:.1} %) while running, {} ms after the sweep was counted ({} ms after start)",
                    now as f64 * 100.0 / bytes_before as f64,
                    swept.elapsed().as_millis(),
                    started.elapsed().as_millis()
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "store {bytes_before} -> {now} bytes 30 s after the sweep, server running"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // old.gone's two series have no row left: the explorer no longer shows them, and two new
    // series of it fit under max_series_per_metric = 2 (a third does not).
    assert_eq!(series_of(&s.addr, "old.gone"), 0);
    assert_eq!(series_of(&s.addr, "app.cpu"), 5);
    assert_eq!(series_of(&s.addr, "debug.trace"), 2);
    assert_eq!(
        metric(&s.addr, "tsgate_retention_series_expired_total"),
        2.0
    );
    let fresh = |h: &str| {
        let body = serde_json::json!([{"metric": "old.gone", "timestamp": t0, "value": 1, "tags": {"host": h}}]);
        s.http("POST", "/api/put?details", &body.to_string())
    };
    assert_eq!(fresh("n0").0, 200);
    assert_eq!(fresh("n1").0, 200);
    let (code, answer) = fresh("n2");
    assert_eq!(code, 400, "{answer}");
    assert!(
        answer.contains("limits.max_series_per_metric = 2"),
        "{answer}"
    );
    assert_eq!(series_of(&s.addr, "old.gone"), 2);
    let after = counts(&s.addr);
    assert_eq!(
        after[..3],
        [0, 0, 0],
        "expired part still answered: {after:?}"
    );
    assert_eq!(after[3], before[3], "recent app.cpu points changed");
    assert_eq!(after[4], 0, "debug.* older than 1 day still answered");
    assert_eq!(after[5], before[5], "recent debug.* points changed");
    assert!(after[6] < before[6], "debug.* kept 6 days");
    s.stop();

    let cutoff = t0 - 7 * DAY;
    let bases = scanned_bases(b, &data);
    assert!(!bases.is_empty());
    let old: Vec<_> = bases.iter().filter(|&&b| b + 3600 <= cutoff).collect();
    assert!(
        old.is_empty(),
        "tsgate scan shows {} expired rows",
        old.len()
    );
    let o = tsgate_on(b, &["fsck", "--data-dir", d(&data)]);
    assert!(
        o.status.success(),
        "fsck: {}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    // A restart within the interval, same policy: no second rewrite at start.
    let s = Server::start_on(b, &data, Some(&cfg));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(metric(&s.addr, "tsgate_retention_sweeps_total"), 0.0);
    s.stop();
    // The embedded store's files; HBase and Bigtable keep theirs elsewhere.
    if !b.is_shared() {
        let bytes_after = dir_bytes(&store_dir);
        eprintln!(
            "retention: store {bytes_before} -> {bytes_after} bytes ({:.1} %)",
            bytes_after as f64 * 100.0 / bytes_before as f64
        );
        assert!(
            bytes_after * 100 <= bytes_before * 40, // see the 40 % above
            "store {bytes_before} -> {bytes_after} bytes"
        );
    }
}

/// `/api/put` of `per` points (one a minute, ending at `end`) for each host of `hosts`, in
/// requests of about 1,000 points. (Each new series costs its tag value's UID three store round
/// trips before the answer: 500 of them in one request, on the Bigtable emulator under a
/// loaded CI, outlasted the client's 60 s read timeout.)
fn put_series(addr: &str, metric: &str, hosts: std::ops::Range<usize>, per: u64, end: u64) {
    let mut batch = Vec::new();
    for h in hosts {
        for i in 0..per {
            batch.push(serde_json::json!({
                "metric": metric, "timestamp": end - i * 600, "value": i, "tags": {"host": format!("h{h}")}
            }));
        }
        if batch.len() >= 1000 {
            let (code, body) = http(
                addr,
                "POST",
                "/api/put",
                &serde_json::Value::Array(std::mem::take(&mut batch)).to_string(),
                &[],
            );
            assert_eq!(code, 204, "{body}");
        }
    }
    if !batch.is_empty() {
        let (code, body) = http(
            addr,
            "POST",
            "/api/put",
            &serde_json::Value::Array(batch).to_string(),
            &[],
        );
        assert_eq!(code, 204, "{body}");
    }
}

fn post_form(addr: &str, path: &str, form: &[(&str, &str)]) -> (u16, String) {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    http(
        addr,
        "POST",
        path,
        &body,
        &[("Content-Type", "application/x-www-form-urlencoded")],
    )
}

/// `delete_series` of one series out of 1,000 removes exactly its points (and a window of
/// another's exactly the points in it); `/tags/delSeries` deletes a tagged path's series; both
/// refuse while `admin.enabled` is off.
fn delete_series_removes_exactly_its_points(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let end = now_s() / 60 * 60;
    let start = end - 12 * 3600;
    let q = |addr: &str, m: &str| opentsdb_points(addr, m, start, end);

    let s = Server::start_on(b, &data, None);
    put_series(&s.addr, "del.m", 0..1000, 10, end);
    s.wait_points(
        &format!("/api/query?start={start}&end={end}&m=none:del.m"),
        10_000,
    );
    let sel = [("match[]", "{__name__=\"del.m\",host=\"h7\"}")];
    let (code, body) = post_form(&s.addr, "/api/v1/admin/tsdb/delete_series", &sel);
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("admin APIs disabled"), "{body}");
    let (code, body) = post_form(&s.addr, "/tags/delSeries", &[("path", "del.m;host=h8")]);
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("admin.enabled = false"), "{body}");
    assert_eq!(q(&s.addr, "none:del.m"), 10_000);
    s.stop();

    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, "[admin]\nenabled = true\n").unwrap();
    let s = Server::start_on(b, &data, Some(&cfg));
    let (code, body) = post_form(&s.addr, "/api/v1/admin/tsdb/delete_series", &sel);
    assert_eq!(code, 204, "{body}");
    assert_eq!(q(&s.addr, "none:del.m{host=h7}"), 0);
    assert_eq!(q(&s.addr, "none:del.m"), 9_990);
    // Deleted over all time: no longer counted.
    assert_eq!(series_of(&s.addr, "del.m"), 999);
    // A window: h5's points in the middle three (one every 10 minutes: end-50m … end-30m).
    let (w0, w1) = ((end - 3000).to_string(), (end - 1800).to_string());
    let (code, body) = post_form(
        &s.addr,
        "/api/v1/admin/tsdb/delete_series",
        &[
            ("match[]", "{__name__=\"del.m\",host=\"h5\"}"),
            ("start", &w0),
            ("end", &w1),
        ],
    );
    assert_eq!(code, 204, "{body}");
    assert_eq!(q(&s.addr, "none:del.m{host=h5}"), 7);
    assert_eq!(q(&s.addr, "none:del.m"), 9_987);
    // graphite-web's delSeries, by the series' tagged path.
    let (code, body) = post_form(&s.addr, "/tags/delSeries", &[("path", "del.m;host=h8")]);
    assert_eq!((code, body.trim()), (200, "true"));
    assert_eq!(q(&s.addr, "none:del.m{host=h8}"), 0);
    assert_eq!(q(&s.addr, "none:del.m"), 9_977);
    assert_eq!(series_of(&s.addr, "del.m"), 998);
    s.stop();

    // uid gc: the tag values of the two series deleted whole, and nothing else (UIDs assigned
    // within --min-age are spared: none by default, as these are minutes old).
    let gc = |args: &[&str]| {
        let mut a = vec!["uid", "--data-dir", d(&data), "gc"];
        a.extend_from_slice(args);
        let o = tsgate_on(b, &a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };
    assert_eq!(gc(&["--dry-run"]), "0 UIDs unused\n");
    let out = gc(&["--min-age", "0s"]);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0], "2 UIDs removed");
    assert!(
        lines[1].starts_with("removed tagv h7: ") && lines[2].starts_with("removed tagv h8: "),
        "{out}"
    );
    assert_eq!(gc(&["--min-age", "0s"]), "0 UIDs removed\n");
    let o = tsgate_on(
        b,
        &["uid", "--data-dir", d(&data), "grep", "tagv", "^h[0-9]+$"],
    );
    assert_eq!(stdout(&o).lines().count(), 998);
    let o = tsgate_on(b, &["fsck", "--data-dir", d(&data)]);
    assert!(
        o.status.success(),
        "fsck: {}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A remote-write body of one sample at `t_ms` for each `host` of metric `metric`.
fn rw_body(metric: &str, hosts: &[usize], t_ms: i64) -> Vec<u8> {
    let req = WriteRequest {
        timeseries: hosts
            .iter()
            .map(|h| TimeSeries {
                labels: vec![
                    Label {
                        name: "__name__".into(),
                        value: metric.into(),
                    },
                    Label {
                        name: "host".into(),
                        value: format!("h{h}"),
                    },
                ],
                samples: vec![Sample {
                    value: 1.0,
                    timestamp: t_ms,
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    tsgate_prometheus::snappy::compress(&req.encode_to_vec())
}

fn remote_write(addr: &str, body: &[u8]) -> (u16, String) {
    let (code, body) = http_bytes(
        addr,
        "POST",
        "/api/v1/write",
        body,
        &[
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
        ],
    );
    (code, String::from_utf8_lossy(&body).into_owned())
}

/// A labelled sample of `/metrics` (`name{labels} value`).
fn metric_with(addr: &str, name_and_labels: &str) -> f64 {
    let (_, body) = http(addr, "GET", "/metrics", "", &[]);
    body.lines()
        .find_map(|l| {
            l.strip_prefix(name_and_labels)?
                .strip_prefix(' ')?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{name_and_labels} not in /metrics"))
}

/// `seriesCountByMetricName` of `/api/v1/status/tsdb` for `metric`.
fn series_of(addr: &str, metric: &str) -> u64 {
    let (code, body) = http(addr, "GET", "/api/v1/status/tsdb?limit=100", "", &[]);
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["seriesCountByMetricName"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == metric)
        .map_or(0, |e| e["value"].as_u64().unwrap())
}

/// `limits.max_series_per_metric = 100`: the 101st series of a metric is refused on telnet,
/// `/api/put`, remote write and carbon, each in its own way, while points of the first 100
/// keep landing; refusals are counted by limit; counts survive a restart.
#[test]
fn max_series_per_metric_refuses_the_101st_on_every_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let graphite = format!("127.0.0.1:{}", free_port());
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        format!("[server]\ngraphite_listen = \"{graphite}\"\npickle_listen = \"\"\n[write]\nflush_interval_ms = 100\n[limits]\nmax_series_per_metric = 100\n"),
    )
    .unwrap();
    let end = now_s() / 60 * 60;
    let start = end - 3600;
    let s = Server::start_on(&Backend::embedded(), &data, Some(&cfg));
    let first: Vec<usize> = (0..100).collect();

    // /api/put?details: a per-point error.
    put_series(&s.addr, "card.put", 0..100, 1, end - 60);
    let body = serde_json::json!([
        {"metric": "card.put", "timestamp": end, "value": 1, "tags": {"host": "h100"}},
        {"metric": "card.put", "timestamp": end, "value": 1, "tags": {"host": "h0"}},
    ]);
    let (code, answer) = s.http("POST", "/api/put?details", &body.to_string());
    assert_eq!(code, 400, "{answer}");
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        (v["success"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(1)),
        "{answer}"
    );
    assert!(
        v["errors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("limits.max_series_per_metric = 100"),
        "{answer}"
    );

    // Telnet: an error line.
    let mut t = s.telnet();
    for h in 0..100 {
        t.send(&format!("put card.tel {} 1 host=h{h}\n", end - 60));
    }
    assert_eq!(t.sync(), Vec::<String>::new());
    t.send(&format!(
        "put card.tel {end} 1 host=h100\nput card.tel {end} 2 host=h0\n"
    ));
    let lines = t.sync();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(
            "put: illegal argument: new series refused: limits.max_series_per_metric = 100"
        ),
        "{lines:?}"
    );

    // Remote write: 400 with the reason.
    let (code, answer) = remote_write(
        &s.addr,
        &rw_body("card_rw", &first, (end as i64 - 60) * 1000),
    );
    assert_eq!(code, 204, "{answer}");
    let (code, answer) = remote_write(&s.addr, &rw_body("card_rw", &[100, 0], end as i64 * 1000));
    assert_eq!(code, 400, "{answer}");
    assert!(
        answer.contains("limits.max_series_per_metric = 100"),
        "{answer}"
    );

    // Carbon: a counted, logged drop.
    let mut g = std::net::TcpStream::connect(&graphite).unwrap();
    let mut lines = String::new();
    for h in 0..100 {
        lines.push_str(&format!("card.gr;host=h{h} 1 {}\n", end - 60));
    }
    std::io::Write::write_all(&mut g, lines.as_bytes()).unwrap();
    // Chunks of one connection may be taken in concurrently: the first 100 land first.
    s.wait_points(
        &format!("/api/query?start={start}&end={end}&m=none:card.gr"),
        100,
    );
    std::io::Write::write_all(
        &mut g,
        format!("card.gr;host=h100 1 {end}\ncard.gr;host=h0 2 {end}\n").as_bytes(),
    )
    .unwrap();
    drop(g);

    let deadline = Instant::now() + Duration::from_secs(20);
    while metric_with(
        &s.addr,
        "tsgate_points_rejected_total{protocol=\"graphite_plaintext\",reason=\"limit\"}",
    ) < 1.0
    {
        assert!(Instant::now() < deadline, "carbon refusal not counted");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        metric_with(
            &s.addr,
            "tsgate_series_refused_total{limit=\"max_series_per_metric\"}"
        ),
        4.0
    );
    for m in ["card.put", "card.tel", "card_rw", "card.gr"] {
        // The first 100 series' 100 points, plus the second point of h0.
        s.wait_points(
            &format!("/api/query?start={start}&end={end}&m=none:{m}"),
            101,
        );
        assert_eq!(
            opentsdb_points(&s.addr, &format!("none:{m}"), start, end),
            101,
            "{m}"
        );
        assert_eq!(
            opentsdb_points(&s.addr, &format!("none:{m}{{host=h100}}"), start, end),
            0,
            "{m}"
        );
        assert_eq!(series_of(&s.addr, m), 100, "{m}");
    }
    s.stop();

    // After a restart: the same counts, the 101st still refused, the known series accepted.
    let s = Server::start_on(&Backend::embedded(), &data, Some(&cfg));
    assert_eq!(series_of(&s.addr, "card.put"), 100);
    let mut t = s.telnet();
    t.send(&format!(
        "put card.tel {} 3 host=h100\nput card.tel {} 3 host=h1\n",
        end - 1,
        end - 1
    ));
    let lines = t.sync();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("max_series_per_metric"), "{lines:?}");
    s.wait_points(
        &format!("/api/query?start={start}&end={end}&m=none:card.tel"),
        102,
    );
    assert_eq!(opentsdb_points(&s.addr, "none:card.tel", start, end), 102);
}
