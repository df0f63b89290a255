//! Rollups end to end (embedded store): `/api/rollup` and telnet `rollup` down to the stored
//! bytes (the issue's vector), cells tsgate builds when an hour is compacted, a late point, and
//! `/api/query` reading them.

mod common;
use common::*;
use std::time::{Duration, Instant};

const ROW: &str = "00000150e22700000001000001";

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("tsgate.toml");
    std::fs::write(
        &p,
        "[write]\ncompaction_delay_ms = 200\n\n[rollups]\nenabled = true\n",
    )
    .unwrap();
    p
}

fn scan_table(data: &std::path::Path, config: &std::path::Path, table: &str) -> Vec<String> {
    let o = tsgate(&[
        "scan",
        "--data-dir",
        data.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--table",
        table,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout(&o).lines().map(String::from).collect()
}

#[test]
fn api_rollup_and_telnet_rollup_write_opentsdb_cells() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let data = dir.path().join("data");
    let s = Server::start_with(&data, Some(&cfg));
    let (code, body) = s.http(
        "POST",
        "/api/rollup",
        r#"{"metric":"sys.cpu.user","timestamp":1356998400,"value":30,"tags":{"host":"web01"},"interval":"1h","aggregator":"SUM"}"#,
    );
    assert_eq!((code, body.as_str()), (204, ""));
    let (code, body) = s.http(
        "POST",
        "/api/rollup?details",
        r#"[{"metric":"sys.cpu.user","timestamp":1356998400,"value":1,"tags":{"host":"web01"},"interval":"5m","aggregator":"sum"},{"metric":"sys.cpu.user","timestamp":1356998400,"value":1,"tags":{"host":"web01"},"aggregator":"sum"}]"#,
    );
    assert_eq!(code, 400, "{body}");
    // Answered after a store sync: one for the first request's point. The second stored
    // nothing and needed none.
    let (_, metrics) = s.http("GET", "/metrics", "");
    assert!(
        metrics.lines().any(|l| l == "tsgate_direct_syncs_total 1"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("direct_sync"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        body.contains(r#""error":"No rollups configured for the interval: 5m""#),
        "{body}"
    );
    assert!(body.contains(r#""error":"Missing interval""#), "{body}");
    let mut t = s.telnet();
    t.send("rollup 1h-max sys.cpu.user 1356998400 42 host=web01\n");
    t.send("rollup 1h-sum:max sys.cpu.user 1356998400 7 host=web01\n");
    t.send("rollup 1h-sum sys.cpu.user 1356998400 7\n");
    t.send("rollup 1h-dev sys.cpu.user 1356998400 7 host=web01\n");
    assert_eq!(
        t.sync(),
        [
            "rollup: illegal argument: not enough arguments (need least 7, got 4)\n",
            "rollup: illegal argument: No ID found mapping to aggregator: dev\n",
        ]
    );
    let (_, q) = s.http(
        "GET",
        "/api/query?start=1356998400&end=1357001999&m=sum:1h-max:sys.cpu.user",
        "",
    );
    assert!(q.contains(r#""dps":{"1356998400":42.0}"#), "{q}");
    s.stop();
    assert_eq!(
        scan_table(&data, &cfg, "tsdb-rollup-1h"),
        [
            format!("tsdb-rollup-1h {ROW} t:000000 1e"),
            format!("tsdb-rollup-1h {ROW} t:030000 2a"),
        ]
    );
    // The pre-aggregate carries _aggregate=MAX (tag key and value UIDs 2).
    assert_eq!(
        scan_table(&data, &cfg, "tsdb-rollup-preagg-1h"),
        [format!(
            "tsdb-rollup-preagg-1h {ROW}000002000002 t:000000 07"
        )]
    );
}

/// Polls `/api/query` until it answers something other than `[]`.
fn wait_answer(s: &Server, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = s.http("GET", path, "");
        assert_eq!(code, 200, "{body}");
        if body != "[]" {
            return body;
        }
        assert!(Instant::now() < deadline, "no answer to {path}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_compacted_hour_gets_its_rollups_and_queries_read_them() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let data = dir.path().join("data");
    let s = Server::start_with(&data, Some(&cfg));
    let (code, _) = s.http(
        "POST",
        "/api/put",
        r#"[{"metric":"sys.cpu.user","timestamp":1356998410,"value":10,"tags":{"host":"web01"}},
            {"metric":"sys.cpu.user","timestamp":1356998420,"value":20,"tags":{"host":"web01"}}]"#,
    );
    assert_eq!(code, 204);
    let q =
        |ds: &str| format!("/api/query?start=1356998400&end=1357084799&m=sum:{ds}:sys.cpu.user");
    for (ds, want) in [
        ("1h-sum", "30.0"),
        ("1h-count", "2.0"),
        ("1h-min", "10.0"),
        ("1h-max", "20.0"),
        ("1d-avg", "15.0"),
    ] {
        let body = wait_answer(&s, &q(ds));
        assert!(
            body.contains(&format!(r#""dps":{{"1356998400":{want}}}"#)),
            "{ds}: {body}"
        );
    }
    // A late point into the closed hour: the cells are recomputed, not added to.
    let (code, _) = s.http(
        "POST",
        "/api/put",
        r#"{"metric":"sys.cpu.user","timestamp":1357001999,"value":5,"tags":{"host":"web01"}}"#,
    );
    assert_eq!(code, 204);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = s.http("GET", &q("1d-count"), "");
        if body.contains(r#""dps":{"1356998400":3.0}"#) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "late point not rolled up: {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, rolled) = s.http("GET", &q("1h-avg"), "");
    let (_, raw) = s.http("GET", &q("1h-avg:rollup_raw"), "");
    assert_eq!(rolled, raw);
    assert!(
        raw.contains(r#""dps":{"1356998400":11.666666666666666}"#),
        "{raw}"
    );
    s.stop();
    assert_eq!(
        scan_table(&data, &cfg, "tsdb-rollup-1h"),
        [
            format!("tsdb-rollup-1h {ROW} t:000000 23"),
            format!("tsdb-rollup-1h {ROW} t:010000 03"),
            format!("tsdb-rollup-1h {ROW} t:020000 05"),
            format!("tsdb-rollup-1h {ROW} t:030000 14"),
        ]
    );
    assert_eq!(scan_table(&data, &cfg, "tsdb-rollup-1d").len(), 4);
}
