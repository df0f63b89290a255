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

/// 2013-01-01 00:00 UTC: long past any retention measured from now.
const DAY: i64 = 1356998400;

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Two days of two Graphite paths (`m.a`, `m.b`) every 10 s, 5 s past each step (so no
/// sample sits on an interval boundary, where PromQL's closed windows would count it twice),
/// integer values.
fn history(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("history.txt");
    let mut s = String::new();
    for (i, m) in ["m.a", "m.b"].iter().enumerate() {
        for k in 0..2 * 8640i64 {
            let v = (k * 7 + i as i64 * 3) % 100;
            s.push_str(&format!("{m} {} {v} _.labels=none\n", DAY + 5 + k * 10));
        }
    }
    std::fs::write(&p, s).unwrap();
    p
}

fn write_config(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The graphite-web and PromQL requests compared: graphite `summarize` (sum, max, min,
/// average) over whole hours and days, and `*_over_time` at steps of their range.
fn requests() -> Vec<String> {
    let (from, until) = (DAY - 1, DAY + 2 * 86400 - 1);
    let mut out = Vec::new();
    for (iv, func) in [
        ("1h", "sum"),
        ("1h", "max"),
        ("1h", "average"),
        ("1d", "sum"),
        ("1d", "min"),
        ("2h", "sum"),
    ] {
        let t = format!("summarize(m.*,'{iv}','{func}')");
        out.push(format!(
            "/render?format=json&from={from}&until={until}&target={}",
            enc(&t)
        ));
    }
    for (f, range) in [
        ("sum_over_time", "1h"),
        ("count_over_time", "1h"),
        ("avg_over_time", "1h"),
        ("max_over_time", "1d"),
        ("min_over_time", "1d"),
    ] {
        let step = if range == "1h" { 3600 } else { 86400 };
        let q = format!("sum by (__name__) ({f}({{__name__=~\"m.a|m.b\"}}[{range}]))");
        out.push(format!(
            "/api/v1/query_range?start={}&end={}&step={step}&query={}",
            DAY + step,
            DAY + 2 * 86400,
            enc(&q)
        ));
    }
    out
}

/// Every number in a JSON answer, in order (the answers compared within float rounding).
fn numbers(body: &str) -> Vec<f64> {
    fn walk(v: &serde_json::Value, out: &mut Vec<f64>) {
        match v {
            serde_json::Value::Number(n) => out.push(n.as_f64().unwrap()),
            serde_json::Value::String(s) => {
                if let Ok(x) = s.parse::<f64>() {
                    out.push(x)
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&serde_json::from_str(body).unwrap(), &mut out);
    out
}

fn same_numbers(a: &str, b: &str) -> bool {
    let (x, y) = (numbers(a), numbers(b));
    x.len() == y.len()
        && x.iter()
            .zip(&y)
            .all(|(p, q)| (p - q).abs() <= 1e-9 * p.abs().max(q.abs()).max(1.0))
}

/// `tsgate rollup` backfills data stored without rollups (twice: nothing changes); raw data
/// past `storage.retention` is then swept, and graphite-web `/render` and PromQL answer the
/// same from the rollups as they did from raw data; `rollups.retention` then sweeps the `1h`
/// table and keeps the `1d` one.
#[test]
fn backfilled_rollups_answer_graphite_and_promql_as_raw_data_did() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let plain = write_config(dir.path(), "plain.toml", "");
    let hist = history(dir.path());
    let o = tsgate(&["import", "--quiet", "--data-dir", &d(&data), &d(&hist)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Raw answers, from a server without rollups.
    let s = Server::start_with(&data, Some(&plain));
    let raw: Vec<String> = requests()
        .iter()
        .map(|r| {
            let (code, body) = s.http("GET", r, "");
            assert_eq!(code, 200, "{r}: {body}");
            assert!(numbers(&body).len() >= 4, "{r}: {body}");
            body
        })
        .collect();
    s.stop();
    let rolled = write_config(dir.path(), "rolled.toml", "[rollups]\nenabled = true\n");
    assert!(scan_table(&data, &rolled, "tsdb-rollup-1h").is_empty());
    let backfill = || {
        let o = tsgate(&[
            "rollup",
            "--quiet",
            "--data-dir",
            &d(&data),
            "--config",
            &d(&rolled),
            "--start",
            &DAY.to_string(),
            "--end",
            &(DAY + 2 * 86400).to_string(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };
    assert_eq!(
        backfill().trim(),
        "rollups built: metrics=2 rows=96 points=34560"
    );
    let h1 = scan_table(&data, &rolled, "tsdb-rollup-1h");
    let d1 = scan_table(&data, &rolled, "tsdb-rollup-1d");
    // Two series, two days, 24 hours, four aggregators; the 1d table two days.
    assert_eq!(h1.len(), 2 * 2 * 24 * 4, "{h1:?}");
    assert_eq!(d1.len(), 2 * 2 * 4, "{d1:?}");
    backfill();
    assert_eq!(scan_table(&data, &rolled, "tsdb-rollup-1h"), h1);
    assert_eq!(scan_table(&data, &rolled, "tsdb-rollup-1d"), d1);
    // With rollups on and raw data still there, graphite's summarize reads the rollups and
    // answers as raw data did (whole intervals); PromQL stays raw unless asked.
    let s = Server::start_with(&data, Some(&rolled));
    for (r, want) in requests().iter().zip(&raw) {
        let (code, body) = s.http("GET", r, "");
        assert_eq!(code, 200, "{r}: {body}");
        assert!(
            same_numbers(&body, want),
            "{r}\nrollups {body}\nraw     {want}"
        );
    }
    // Asked for a coarser resolution (Thanos' parameter), PromQL reads them too.
    for (r, want) in requests().iter().zip(&raw) {
        if r.starts_with("/api/v1") {
            let (_, body) = s.http("GET", &format!("{r}&max_source_resolution=1d"), "");
            assert!(
                same_numbers(&body, want),
                "{r}\nrollups {body}\nraw     {want}"
            );
        }
    }
    // maxDataPoints 20 over two days: the 1h rollup (at most 8,640 s a point), consolidated
    // 3 to a point as graphite-web consolidates a coarser archive (raw 10 s data would be
    // 864 to a point, 8,640 s apart).
    let (_, body) = s.http(
        "GET",
        &format!(
            "/render?format=json&maxDataPoints=20&from={}&until={}&target=m.a",
            DAY - 1,
            DAY + 2 * 86400 - 1
        ),
        "",
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let dps = v[0]["datapoints"].as_array().unwrap();
    assert!(dps.len() <= 20 && dps.len() >= 16, "{body}");
    assert_eq!(
        dps[1][1].as_i64().unwrap() - dps[0][1].as_i64().unwrap(),
        10_800,
        "{body}"
    );
    s.stop();
    // Raw data kept 30 days: the start's sweep drops all of it; the rollups answer.
    let expiring = write_config(
        dir.path(),
        "expiring.toml",
        "[storage]\nretention = \"30d\"\n\n[rollups]\nenabled = true\n",
    );
    let s = Server::start_with(&data, Some(&expiring));
    let raw_q = format!(
        "/api/query?start={DAY}&end={}&m=sum:1h-sum:rollup_raw:m.a",
        DAY + 86399
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.http("GET", &raw_q, "").1 != "[]" {
        assert!(Instant::now() < deadline, "raw data not swept");
        std::thread::sleep(Duration::from_millis(200));
    }
    for (r, want) in requests().iter().zip(&raw) {
        let (code, body) = s.http("GET", r, "");
        assert_eq!(code, 200, "{r}: {body}");
        assert!(
            same_numbers(&body, want),
            "{r}\nafter the sweep {body}\nraw {want}"
        );
    }
    // What only raw data answers is gone with it.
    let (_, rate) = s.http(
        "GET",
        &format!(
            "/api/v1/query?time={}&query={}",
            DAY + 3600,
            enc("rate({__name__=\"m.a\"}[1h])")
        ),
        "",
    );
    assert!(rate.contains(r#""result":[]"#), "{rate}");
    s.stop();
    // The 1h rollups kept 30 days too: swept; the 1d ones stay.
    let short = write_config(
        dir.path(),
        "short.toml",
        "[storage]\nretention = \"30d\"\n\n[rollups]\nenabled = true\nretention = { \"1h\" = \"30d\" }\n",
    );
    let s = Server::start_with(&data, Some(&short));
    let q1h = format!(
        "/api/query?start={DAY}&end={}&m=sum:1h-sum:m.a",
        DAY + 86399
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.http("GET", &q1h, "").1 != "[]" {
        assert!(Instant::now() < deadline, "1h rollups not swept");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, day) = s.http(
        "GET",
        &format!(
            "/api/query?start={DAY}&end={}&m=sum:1d-sum:m.a",
            DAY + 86399
        ),
        "",
    );
    assert!(day.contains(&format!("\"{DAY}\":")), "{day}");
    s.stop();
    assert!(scan_table(&data, &short, "tsdb-rollup-1h").is_empty());
    assert_eq!(scan_table(&data, &short, "tsdb-rollup-1d"), d1);
}

#[test]
fn hbase_create_tables_makes_the_rollup_tables() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let o = tsgate(&[
        "hbase",
        "create-tables",
        "--print",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    for t in [
        "tsdb-rollup-1h",
        "tsdb-rollup-1d",
        "tsdb-rollup-preagg-1h",
        "tsdb-rollup-preagg-1d",
        "tsdb-preagg",
    ] {
        assert!(out.contains(&format!("create '{t}'")), "{t}: {out}");
    }
}

/// The `dps` object of a one-series `/api/query` answer.
fn dps(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    let a = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {body}"));
    assert_eq!(a.len(), 1, "{body}");
    a[0]["dps"].to_string()
}

#[test]
fn pre_aggregates_from_api_rollup_answer_as_the_raw_group_by() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let data = dir.path().join("data");
    let s = Server::start_with(&data, Some(&cfg));
    // Two hosts' raw points, and what a pre-aggregating agent sends for them: their sum and
    // max at each timestamp (group-by aggregator only: the raw pre-aggregate table), and the
    // hour of each (`1h` rollups of the pre-aggregates).
    let (code, body) = s.http(
        "POST",
        "/api/put",
        r#"[{"metric":"sys.cpu.user","timestamp":1356998410,"value":10,"tags":{"host":"web01","dc":"lga"}},
            {"metric":"sys.cpu.user","timestamp":1356998420,"value":20,"tags":{"host":"web01","dc":"lga"}},
            {"metric":"sys.cpu.user","timestamp":1356998410,"value":30,"tags":{"host":"web02","dc":"lga"}},
            {"metric":"sys.cpu.user","timestamp":1356998420,"value":5,"tags":{"host":"web02","dc":"lga"}}]"#,
    );
    assert_eq!(code, 204, "{body}");
    let pre = |ts: i64, v: i64, extra: &str| {
        format!(
            r#"{{"metric":"sys.cpu.user","timestamp":{ts},"value":{v},"tags":{{"dc":"lga"}},{extra}}}"#
        )
    };
    let body = [
        pre(1356998410, 40, r#""groupByAggregator":"sum""#),
        pre(1356998420, 25, r#""groupByAggregator":"sum""#),
        pre(1356998410, 30, r#""groupByAggregator":"max""#),
        pre(1356998420, 20, r#""groupByAggregator":"max""#),
        pre(
            DAY,
            65,
            r#""interval":"1h","aggregator":"sum","groupByAggregator":"sum""#,
        ),
        pre(
            DAY,
            30,
            r#""interval":"1h","aggregator":"max","groupByAggregator":"max""#,
        ),
    ]
    .join(",");
    let (code, answer) = s.http("POST", "/api/rollup", &format!("[{body}]"));
    assert_eq!(code, 204, "{answer}");
    // As OpenTSDB 2.4: an empty group-by aggregator is a group-by without its function.
    let (code, answer) = s.http(
        "POST",
        "/api/rollup?details",
        &pre(
            DAY,
            1,
            r#""interval":"1h","aggregator":"sum","groupByAggregator":"""#,
        ),
    );
    assert_eq!(code, 400, "{answer}");
    assert!(
        answer.contains("Cannot write a group by data point without specifying the aggregation function. Metric=sys.cpu.user"),
        "{answer}"
    );
    let q = |m: &str| {
        let (code, body) = s.http(
            "GET",
            &format!("/api/query?start={DAY}&end={}&m={m}", DAY + 3599),
            "",
        );
        assert_eq!(code, 200, "{m}: {body}");
        body
    };
    // Raw group-bys, and the same from the pre-aggregates (the `_aggregate` filter, or
    // `pre-agg` with it), then downsampled from the pre-aggregates' rollup table.
    let sum = dps(&q("sum:sys.cpu.user"));
    assert_eq!(sum, r#"{"1356998410":40,"1356998420":25}"#);
    assert_eq!(dps(&q("sum:sys.cpu.user{_aggregate=SUM}")), sum);
    assert_eq!(dps(&q("sum:pre-agg:sys.cpu.user{_aggregate=SUM}")), sum);
    let max = dps(&q("max:sys.cpu.user"));
    assert_eq!(dps(&q("max:sys.cpu.user{_aggregate=MAX}")), max);
    for (raw, pre) in [
        (
            "sum:1h-sum:rollup_raw:sys.cpu.user",
            "sum:1h-sum:sys.cpu.user{_aggregate=SUM}",
        ),
        (
            "max:1h-max:rollup_raw:sys.cpu.user",
            "max:1h-max:sys.cpu.user{_aggregate=MAX}",
        ),
    ] {
        let raw = dps(&q(raw));
        assert_eq!(dps(&q(pre)), raw, "{pre}");
    }
    assert_eq!(
        dps(&q("sum:1h-sum:rollup_raw:sys.cpu.user")),
        r#"{"1356998400":65.0}"#
    );
    // `1h-count` has no pre-aggregate rollup: empty, unless falling back to the raw
    // pre-aggregates.
    assert_eq!(q("sum:1h-count:sys.cpu.user{_aggregate=SUM}"), "[]");
    assert_eq!(
        dps(&q(
            "sum:1h-count:rollup_fallback_raw:sys.cpu.user{_aggregate=SUM}"
        )),
        r#"{"1356998400":2.0}"#
    );
    // preAggregate alone reads every pre-aggregated series.
    let (code, body) = s.http(
        "POST",
        "/api/query",
        &format!(
            r#"{{"start":{DAY},"end":{},"queries":[{{"aggregator":"none","metric":"sys.cpu.user","preAggregate":true}}]}}"#,
            DAY + 3599
        ),
    );
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut aggs: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tags"]["_aggregate"].as_str().unwrap())
        .collect();
    aggs.sort();
    assert_eq!(aggs, ["MAX", "SUM"]);
    s.stop();
    // The raw pre-aggregates are in the default interval's pre-aggregate table, with raw
    // qualifiers (offsets 10 and 20 s, one-byte integers).
    let rows = scan_table(&data, &cfg, "tsdb-preagg");
    let cells: Vec<&str> = rows
        .iter()
        .map(|l| l.split_once(" t:").unwrap().1)
        .collect();
    assert_eq!(
        cells,
        ["00a0 28", "0140 19", "00a0 1e", "0140 14"],
        "{rows:?}"
    );
}
