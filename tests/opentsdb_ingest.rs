//! OpenTSDB ingest end to end: telnet and /api/put into a real server, checked through
//! `tsgate scan` (exact bytes), `/api/query`, restarts and `kill -9`. The tests that touch
//! storage run on both backends (`embedded::…` and `hbase::…`, the latter against the
//! in-process HBase Thrift test double); protocol-only ones on the embedded engine.

mod common;
use common::*;
use std::io::Write;

on_both_backends!(
    telnet_put_writes_opentsdb_cells_byte_for_byte,
    points_of_a_closed_hour_become_one_compacted_column,
    the_last_write_of_a_timestamp_wins,
    api_put_answers_like_opentsdb,
    kill_dash_nine_after_a_2xx_loses_nothing,
    uid_assign_endpoint,
    telnet_commands_and_small_endpoints,
    a_query_reads_every_acknowledged_point,
);

const ROW: &str = "00000150e22700000001000001";

fn telnet_put_writes_opentsdb_cells_byte_for_byte(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let mut t = s.telnet();
    t.send("put sys.cpu.user 1356998400 42 host=web01\n");
    assert_eq!(t.sync(), Vec::<String>::new(), "a good put is silent");
    s.stop();

    assert_eq!(
        scan_on(b, dir.path(), "data"),
        vec![format!("tsdb {ROW} t:0000 2a")]
    );
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let mut want = vec![
        "tsdb-uid 00 id:6d657472696373 0000000000000001".to_string(),
        "tsdb-uid 00 id:7461676b 0000000000000001".to_string(),
        "tsdb-uid 00 id:74616776 0000000000000001".to_string(),
        format!(
            "tsdb-uid 000001 name:6d657472696373 {}",
            hex("sys.cpu.user")
        ),
        format!("tsdb-uid 000001 name:7461676b {}", hex("host")),
        format!("tsdb-uid 000001 name:74616776 {}", hex("web01")),
        format!("tsdb-uid {} id:7461676b 000001", hex("host")),
        format!("tsdb-uid {} id:6d657472696373 000001", hex("sys.cpu.user")),
        format!("tsdb-uid {} id:74616776 000001", hex("web01")),
    ];
    want.sort();
    let mut got = scan_on(b, dir.path(), "uid");
    got.sort();
    assert_eq!(got, want);
}

fn points_of_a_closed_hour_become_one_compacted_column(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let mut t = s.telnet();
    // Out of order, mixed second/ms, ints of several widths, a float and a double.
    t.send("put sys.cpu.user 1356998430 12.3 host=web01\n");
    t.send("put sys.cpu.user 1356998410 257 host=web01\n");
    t.send("put sys.cpu.user 1356998400 42 host=web01\n");
    assert!(t.sync().is_empty());
    // A later flush adds more columns to the same row before compaction.
    std::thread::sleep(std::time::Duration::from_millis(1300));
    t.send("put sys.cpu.user 1356998420 42.5 host=web01\nput sys.cpu.user 1356998400500 42 host=web01\n");
    assert!(t.sync().is_empty());
    s.stop();
    assert_eq!(
        scan_on(b, dir.path(), "data"),
        vec![format!(
            "tsdb {ROW} t:0000f0007d0000a1014b01ef 2a2a0101422a0000402899999999999a01"
        )]
    );
    // And fsck agrees nothing is wrong.
    let o = tsgate_on(b, &["fsck", "--data-dir", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("problems=0"));
}

fn the_last_write_of_a_timestamp_wins(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let mut t = s.telnet();
    t.send("put m.lww 1356998400 1 host=a\n");
    assert!(t.sync().is_empty());
    std::thread::sleep(std::time::Duration::from_millis(1300));
    t.send("put m.lww 1356998400 2 host=a\n");
    assert!(t.sync().is_empty());
    let v = s.wait_points("/api/query?start=1356998400&end=1356998500&m=sum:m.lww", 1);
    s.stop();
    assert_eq!(scan_on(b, dir.path(), "data").len(), 1);
    let s = Server::start_on(b, dir.path(), None);
    let v2 = s.wait_points("/api/query?start=1356998400&end=1356998500&m=sum:m.lww", 1);
    assert_eq!(
        v2[0]["dps"]["1356998400"], 2,
        "before stop: {v}, after: {v2}"
    );
}

/// After a series' line is accepted, later lines with the same metric and tag words take a
/// shorter path (src/server/telnet.rs): they must still get OpenTSDB's answers for their own
/// bad timestamps and values, and their good points must land.
#[test]
fn remembered_series_text_keeps_every_answer() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let mut t = s.telnet();
    t.send("put sys.cpu 1356998400 1 host=a dc=x\n");
    assert!(t.sync().is_empty());
    t.send("put sys.cpu notatime 42 host=a dc=x\n");
    t.send("put sys.cpu 1356998400 NaN host=a dc=x\n");
    t.send("put sys.cpu 1356998400 1e400 host=a dc=x\n");
    t.send("put sys.cpu 0 1 host=a dc=x\n");
    t.send("put sys.cpu 99999999999999 1 host=a dc=x\n");
    t.send("put sys.cpu 1356998410 2 host=a dc=x\n");
    t.send("put sys.cpu 1356998420.500 3.5 host=a dc=x\n");
    t.send("put sys.cpu 1356998430 4 dc=x host=a\n");
    t.send("put sys.cpu 1356998440 5 host=a  dc=x\n");
    let lines = t.sync();
    assert_eq!(
        lines,
        vec![
            "put: invalid value: Invalid character 'n' in notatime\n",
            "put: invalid value: Invalid character 'N' in NaN\n",
            "put: illegal argument: value is NaN or Infinite: Infinity for metric=sys.cpu timestamp=1356998400\n",
            "put: illegal argument: invalid timestamp: 0\n",
        ]
        .into_iter()
        .chain(lines.get(4).map(|l| l.as_str()).filter(|l| l.starts_with("put: illegal argument: bad timestamp=99999999999999")))
        .collect::<Vec<_>>(),
        "{lines:?}"
    );
    assert_eq!(lines.len(), 5, "{lines:?}");
    // 1 + 2 + 3.5 (ms) + 4 (tags in another order) + 5 (two spaces): all one series.
    let v = s.wait_points(
        "/api/query?start=1356998400&end=1356998500&m=sum:sys.cpu{host=a}&ms=true",
        5,
    );
    let dps = v[0]["dps"].as_object().unwrap();
    assert_eq!(dps.len(), 5, "{v}");
    assert_eq!(dps["1356998420500"], 3.5, "{v}");
    assert_eq!(dps["1356998440000"], 5);
}

/// `/api/put` remembers a series by its metric and tags object as sent: the same request
/// sent again (every series then known) gets the same answer, point for point.
#[test]
fn remembered_json_tags_keep_every_answer() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let tags = r#"{"host":"a","dc":"x"}"#;
    let body = format!(
        "[{}]",
        [
            format!(r#"{{"metric":"sys.mem","timestamp":1356998400,"value":1,"tags":{tags}}}"#),
            format!(r#"{{"metric":"sys.mem","timestamp":0,"value":1,"tags":{tags}}}"#),
            format!(r#"{{"metric":"sys.mem","timestamp":1356998410,"value":"NaN","tags":{tags}}}"#),
            format!(r#"{{"metric":"sys.mem","timestamp":1356998420,"value":"","tags":{tags}}}"#),
            format!(r#"{{"metric":"sys.mem","timestamp":1356998430,"value":"x1","tags":{tags}}}"#),
            format!(r#"{{"metric":"sys.mem","timestamp":99999999999999,"value":1,"tags":{tags}}}"#),
            format!(r#"{{"metric":"sys.mem","timestamp":1356998440500,"value":2.5,"tags":{tags}}}"#),
            r#"{"metric":"sys.mem","timestamp":1356998450,"value":3,"tags":{"host":"a","dc":"x","bad tag":"v"}}"#.to_string(),
            format!(r#"{{"metric":"sys mem","timestamp":1356998450,"value":3,"tags":{tags}}}"#),
            r#"{"metric":"sys.mem","timestamp":1356998460,"value":4,"tags":{"dc":"x","host":"a"}}"#.to_string(),
        ]
        .join(",")
    );
    let first = s.http("POST", "/api/put?details", &body);
    assert_eq!(first.0, 400, "{first:?}");
    let answer: serde_json::Value = serde_json::from_str(&first.1).unwrap();
    assert_eq!(
        (answer["success"].as_u64(), answer["failed"].as_u64()),
        (Some(3), Some(7)),
        "{answer}"
    );
    for _ in 0..2 {
        assert_eq!(s.http("POST", "/api/put?details", &body), first);
    }
    let v = s.wait_points(
        "/api/query?start=1356998400&end=1356998500&m=sum:sys.mem{host=a}&ms=true",
        3,
    );
    let dps = v[0]["dps"].as_object().unwrap();
    assert_eq!(dps.len(), 3, "{v}");
    assert_eq!(
        (
            &dps["1356998400000"],
            &dps["1356998440500"],
            &dps["1356998460000"]
        ),
        (&1.into(), &2.5.into(), &4.into()),
        "{v}"
    );
}

#[test]
fn telnet_errors_use_opentsdb_lines_and_keep_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let mut t = s.telnet();
    t.send("put\n");
    t.send("put metric.foo notatime 42 host=web01\n");
    t.send("put sys.cpu 1356998400 42 host\n");
    t.send("put sys.cpu 1356998400 42 ho!st=a\n");
    t.send("put sys.cpu 1356998400 NaN host=a\n");
    t.send("put sys.cpu 1356998400 1e400 host=a\n");
    t.send("bogus\n");
    t.send(&format!(
        "put sys.cpu 1356998400 1 host={}\n",
        "x".repeat(3000)
    ));
    t.send("put sys.cpu 1356998460 7 host=a\r\n");
    let lines = t.sync();
    assert_eq!(
        lines,
        vec![
            "put: illegal argument: not enough arguments (need least 4, got 0)\n",
            "put: invalid value: Invalid character 'n' in notatime\n",
            "put: illegal argument: invalid tag: host\n",
            "put: illegal argument: Invalid tag name with value [a] (\"ho!st\"): illegal character: !\n",
            "put: invalid value: Invalid character 'N' in NaN\n",
            "put: illegal argument: value is NaN or Infinite: Infinity for metric=sys.cpu timestamp=1356998400\n",
            "unknown command: bogus.  Try `help'.\n",
            "put: illegal argument: line too long (limits.telnet_line_max = 1024 bytes)\n",
        ]
    );
    // The good line after all that landed.
    let v = s.wait_points(
        "/api/query?start=1356998400&end=1356998500&m=sum:sys.cpu{host=a}",
        1,
    );
    assert_eq!(v[0]["dps"]["1356998460"], 7);
}

/// A query sees every point taken in before it, from whichever protocol, though no flush
/// tick has come (the interval is a minute and a shard's quiet-input flush comes at most every
/// quarter of it): the query has the shards write out what they hold first.
fn a_query_reads_every_acknowledged_point(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, "[write]\nflush_interval_ms = 60000\n").unwrap();
    let s = Server::start_on(b, &dir.path().join("data"), Some(&cfg));
    let mut t = s.telnet();
    t.send("put ryw.telnet 1356998400 1 host=a\n");
    assert!(t.sync().is_empty());
    let (code, _) = s.http(
        "POST",
        "/api/put",
        r#"{"metric":"ryw.http","timestamp":1356998400,"value":2,"tags":{"host":"a"}}"#,
    );
    assert_eq!(code, 204);
    for (metric, want) in [("ryw.telnet", 1.0), ("ryw.http", 2.0)] {
        let (code, body) = s.http(
            "GET",
            &format!("/api/query?start=1356998000&end=1356999000&m=sum:{metric}"),
            "",
        );
        assert_eq!(code, 200, "{body}");
        let j: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(j[0]["dps"]["1356998400"], want, "{metric}: {body}");
    }
    let (code, body) = s.http(
        "GET",
        "/api/v1/query?query=%7B__name__%3D%22ryw.http%22%7D&time=1356998401",
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(r#""value":[1356998401,"2"]"#), "{body}");
    let (code, body) = s.http(
        "GET",
        "/api/v1/series?match[]=%7B__name__%3D~%22ryw%5C%5C..*%22%7D",
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("ryw.telnet") && body.contains("ryw.http"),
        "{body}"
    );
    s.stop();
}

fn api_put_answers_like_opentsdb(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let one = r#"{"metric":"sys.cpu.nice","timestamp":1356998400,"value":18,"tags":{"host":"web01","dc":"lga"}}"#;
    assert_eq!(s.http("POST", "/api/put", one), (204, String::new()));
    let batch = r#"[{"metric":"sys.cpu.nice","timestamp":1356998410,"value":"19.5","tags":{"host":"web01","dc":"lga"}},
                    {"metric":"sys.cpu.nice","timestamp":1356998420,"value":"abc","tags":{"host":"web01"}},
                    {"metric":"","timestamp":1356998420,"value":1,"tags":{"host":"web01"}},
                    {"metric":"sys.cpu.nice","timestamp":1356998430,"value":1,"tags":{}}]"#;
    let (code, body) = s.http("POST", "/api/put?details", batch);
    assert_eq!(code, 400);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["success"], 1);
    assert_eq!(v["failed"], 3);
    let errs: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["error"].as_str().unwrap())
        .collect();
    assert_eq!(
        errs,
        vec![
            "Unable to parse value to a number",
            "Metric name was empty",
            "Missing tags"
        ]
    );
    assert_eq!(v["errors"][0]["datapoint"]["value"], "abc");

    let (code, body) = s.http("POST", "/api/put?summary", one);
    assert_eq!((code, body.as_str()), (200, r#"{"success":1,"failed":0}"#));
    // TestPutRpc.syncOKTimeoutSummary: with a sync_timeout, a `timeouts` count (in the
    // order OpenTSDB's HashMap writes the keys).
    let (code, body) = s.http("POST", "/api/put?summary&sync&sync_timeout=30000", one);
    assert_eq!(
        (code, body.as_str()),
        (200, r#"{"success":1,"timeouts":0,"failed":0}"#)
    );
    let (code, body) = s.http("POST", "/api/put", batch);
    assert_eq!(code, 400);
    assert!(
        body.contains("One or more data points had errors"),
        "{body}"
    );
    for (bad, msg) in [
        ("", "Missing request content"),
        ("42", "The JSON must start as an object or an array"),
        ("[]", "No datapoints found in content"),
        ("[{\"metric\":", "Unable to parse the given JSON"),
    ] {
        let (code, body) = s.http("POST", "/api/put", bad);
        assert_eq!(code, 400, "{bad}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["code"], 400);
        assert_eq!(v["error"]["message"], msg, "{bad}");
    }
    assert_eq!(s.http("GET", "/api/put", "").0, 405);
    assert_eq!(s.http("GET", "/api/nope", "").0, 404);

    // gzip bodies.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(br#"{"metric":"sys.cpu.nice","timestamp":1356998440,"value":20,"tags":{"host":"web01","dc":"lga"}}"#).unwrap();
    let (code, _) = http_bytes(
        &s.addr,
        "POST",
        "/api/put",
        &gz.finish().unwrap(),
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 204);

    // With `sync` the points are queryable as soon as the answer comes.
    assert_eq!(s.http("POST", "/api/put?sync", r#"{"metric":"sys.cpu.nice","timestamp":1356998450,"value":21,"tags":{"host":"web01","dc":"lga"}}"#).0, 204);
    let (code, body) = s.http(
        "GET",
        "/api/query?start=1356998400&end=1356998460&m=sum:sys.cpu.nice&arrays",
        "",
    );
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v[0]["tags"], serde_json::json!({"dc":"lga","host":"web01"}));
    assert_eq!(
        v[0]["dps"],
        serde_json::json!([
            [1356998400, 18],
            [1356998410, 19.5],
            [1356998440, 20],
            [1356998450, 21]
        ])
    );
    let (code, body) = s.http(
        "GET",
        "/api/query?start=1356998400&m=sum:no.such.metric",
        "",
    );
    assert_eq!(code, 400);
    assert!(
        body.contains("No such name for 'metrics': 'no.such.metric'"),
        "{body}"
    );
}

#[test]
fn oversized_bodies_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, "[limits]\nhttp_body_max = 4000\n").unwrap();
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let big = format!(
        "[{}]",
        vec![r#"{"metric":"m","timestamp":1356998400,"value":1,"tags":{"h":"a"}}"#; 100].join(",")
    );
    let (code, body) = s.http("POST", "/api/put", &big);
    assert_eq!(code, 413);
    assert!(body.contains("limits.http_body_max"), "{body}");
    // A gzip bomb: small on the wire, large once inflated.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![b' '; 1 << 20]).unwrap();
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 4000);
    let (code, body) = http_bytes(
        &s.addr,
        "POST",
        "/api/put",
        &bomb,
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 413, "{}", String::from_utf8_lossy(&body));
    // The server still takes good writes.
    assert_eq!(
        s.http(
            "POST",
            "/api/put",
            r#"{"metric":"m","timestamp":1356998400,"value":1,"tags":{"h":"a"}}"#
        )
        .0,
        204
    );
}

fn kill_dash_nine_after_a_2xx_loses_nothing(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    // A long flush interval: acknowledged points live only in the write-ahead log.
    std::fs::write(&cfg, "[write]\nflush_interval_ms = 600000\n").unwrap();
    let data = dir.path().join("data");
    let s = Server::start_on(b, &data, Some(&cfg));
    let mut expected = 0;
    for batch in 0..5 {
        let pts: Vec<String> = (0..200)
            .map(|i| {
                let ts = 1356998400 + batch * 200 + i;
                format!(r#"{{"metric":"crash.test","timestamp":{ts},"value":{i},"tags":{{"host":"h{}"}}}}"#, i % 4)
            })
            .collect();
        assert_eq!(
            s.http("POST", "/api/put", &format!("[{}]", pts.join(",")))
                .0,
            204
        );
        expected += 200;
    }
    s.kill9();
    assert!(std::fs::read_dir(data.join("wal")).is_ok());
    let s = Server::start_on(b, &data, Some(&cfg));
    let v = s.wait_points(
        "/api/query?start=1356998400&end=1357002000&m=none:crash.test",
        expected,
    );
    let n: usize = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["dps"].as_object().unwrap().len())
        .sum();
    assert_eq!(n, expected);
    assert_eq!(v.as_array().unwrap().len(), 4);
    s.stop();
    assert_eq!(
        scan_on(b, &data, "data").len(),
        4,
        "one compacted column per series-hour"
    );
    let o = tsgate_on(b, &["fsck", "--data-dir", data.to_str().unwrap()]);
    assert!(
        o.status.success() && stdout(&o).contains("problems=0"),
        "{}",
        stdout(&o)
    );
}

fn uid_assign_endpoint(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let (code, body) = s.http(
        "GET",
        "/api/uid/assign?metric=sys.cpu.0,sys.cpu.1&tagk=host",
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        r#"{"metric":{"sys.cpu.0":"000001","sys.cpu.1":"000002"},"tagk":{"host":"000001"}}"#
    );
    let (code, body) = s.http(
        "POST",
        "/api/uid/assign",
        r#"{"metric":["sys.cpu.0","illegal!character"]}"#,
    );
    assert_eq!(code, 400);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["metric_errors"]["sys.cpu.0"],
        "Name already exists with UID: 000001"
    );
    assert_eq!(
        v["metric_errors"]["illegal!character"],
        "Invalid metric (\"illegal!character\"): illegal character: !"
    );
    assert_eq!(s.http("GET", "/api/uid/assign", "").0, 400);
    // TestUniqueIdRpc.assignPostNoContent and TestSuggestRpc.missingContent.
    for path in ["/api/uid/assign", "/api/suggest"] {
        let (code, body) = s.http("POST", path, "");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (code, v["error"]["message"].as_str()),
            (400, Some("Missing message content")),
            "{path}"
        );
    }
}

fn telnet_commands_and_small_endpoints(b: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_on(b, dir.path(), None);
    let mut t = s.telnet();
    t.send("help\n");
    assert_eq!(
        t.read_line(),
        "available commands: stats dropcaches version exit help put rollup histogram \n"
    );
    t.send("put cmd.m 1356998400 1 host=a\nstats\n");
    let stats: Vec<String> = t.sync();
    assert!(
        stats.iter().any(|l| l.starts_with("tsd.rpc.received ")
            && l.contains(" 1 host=")
            && l.ends_with("type=put\n")),
        "{stats:?}"
    );
    t.send("dropcaches\n");
    assert_eq!(t.read_line(), "Caches dropped.\n");
    // After dropping caches the same series resolves from the store to the same UIDs.
    t.send("put cmd.m 1356998410 2 host=a\n");
    assert!(t.sync().is_empty());
    t.send("exit\n");
    assert_eq!(t.read_line(), "", "exit closes the connection");

    let (code, body) = s.http("GET", "/api/version", "");
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(v["version"].as_str().unwrap().starts_with("2.4"));
    let (code, body) = s.http("GET", "/api/stats", "");
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .any(|m| m["metric"] == "tsd.rpc.received" && m["value"] == "2"),
        "{body}"
    );
    assert_eq!(
        s.http("GET", "/api/dropcaches", "").1,
        r#"{"message":"Caches dropped","status":"200"}"#
    );
    let v = s.wait_points("/api/query?start=1356998400&end=1356998500&m=sum:cmd.m", 2);
    assert_eq!(
        v[0]["dps"],
        serde_json::json!({"1356998400": 1, "1356998410": 2})
    );
    // SIGTERM is a clean stop too.
    s.stop_with("-TERM");
    assert_eq!(
        scan_on(b, dir.path(), "data"),
        vec!["tsdb 00000150e22700000001000001 t:000000a0 010200"]
    );
}
