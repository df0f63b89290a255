//! Annotations, UID/TS metadata and trees over real sockets, checked through the API and
//! through `tsgate scan` (the exact cells OpenTSDB would hold).

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn j(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// Polls until `f` yields something (the realtime worker runs in the background).
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn config(dir: &Path, text: &str) -> std::path::PathBuf {
    let p = dir.join("tsgate.toml");
    std::fs::write(&p, text).unwrap();
    p
}

const TSUID: &str = "000001000001000001";

#[test]
fn annotations_round_trip_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    // Data in the note's row: compaction must leave the annotation cell alone.
    let mut t = s.telnet();
    t.send("put sys.cpu.user 1388450562 1 host=web01\nput sys.cpu.user 1388450570 2 host=web01\n");
    assert!(t.sync().is_empty());

    let note = json!({"tsuid": TSUID, "startTime": 1388450562, "endTime": 1419984000,
                      "description": "Hello!", "notes": "My Notes", "custom": {"owner": "jdoe", "dept": "ops"}});
    let (code, body) = s.http("POST", "/api/annotation", &note.to_string());
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        r#"{"tsuid":"000001000001000001","description":"Hello!","notes":"My Notes","custom":{"dept":"ops","owner":"jdoe"},"endTime":1419984000,"startTime":1388450562}"#
    );
    let (code, got) = s.http(
        "GET",
        &format!("/api/annotation?tsuid={TSUID}&start_time=1388450562"),
        "",
    );
    assert_eq!((code, got.as_str()), (200, body.as_str()));

    // Nothing set beyond the address: 304. POST merges, PUT replaces.
    let (code, empty) = s.http(
        "POST",
        "/api/annotation",
        &json!({"tsuid": TSUID, "startTime": 1388450562}).to_string(),
    );
    assert_eq!((code, empty.as_str()), (304, ""));
    let (code, body) = s.http(
        "POST",
        "/api/annotation",
        &json!({"tsuid": TSUID, "startTime": 1388450562, "notes": "merged"}).to_string(),
    );
    assert_eq!(code, 200);
    let v = j(&body);
    assert_eq!(
        (
            v["description"].as_str(),
            v["notes"].as_str(),
            v["custom"]["owner"].as_str()
        ),
        (Some("Hello!"), Some("merged"), Some("jdoe"))
    );
    // Query-string form: times go through the date parser and end up in seconds.
    let (code, body) = s.http(
        "PUT",
        &format!("/api/annotation?tsuid={TSUID}&start_time=1388450562000&description=replaced"),
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        r#"{"tsuid":"000001000001000001","description":"replaced","notes":"","endTime":0,"startTime":1388450562}"#
    );

    // Globals, the plural listing, and method_override on a GET.
    let (code, _) = s.http(
        "GET",
        "/api/annotation?method_override=post&start_time=1328140800&description=Global",
        "",
    );
    assert_eq!(code, 200);
    let (code, body) = s.http(
        "GET",
        "/api/annotations?start_time=1328140000&end_time=1328150000",
        "",
    );
    assert_eq!(code, 200);
    assert_eq!(
        body,
        r#"[{"tsuid":"","description":"Global","notes":"","endTime":0,"startTime":1328140800}]"#
    );
    let (code, _) = s.http(
        "GET",
        "/api/annotation?method_override=patch&start_time=1",
        "",
    );
    assert_eq!(code, 405);
    let (code, body) = s.http(
        "POST",
        "/api/annotation",
        r#"{"tsuid":"000001000001000001"}"#,
    );
    assert_eq!(code, 400);
    assert!(
        body.contains("The start timestamp has not been set"),
        "{body}"
    );

    // Bulk store, then bulk delete by range.
    let bulk = json!([{"tsuid": "000001000001000002", "startTime": 1388450600, "description": "a"},
                      {"tsuid": "000001000001000002", "startTime": 1388450700500u64, "description": "b"}]);
    let (code, body) = s.http("POST", "/api/annotation/bulk", &bulk.to_string());
    assert_eq!(code, 200, "{body}");
    assert_eq!(j(&body).as_array().unwrap().len(), 2);
    let (code, body) = s.http("GET", "/api/annotation/bulk", "");
    assert_eq!(code, 405, "bulk checks the physical verb: {body}");
    let (code, body) = s.http(
        "DELETE",
        "/api/annotation/bulk",
        &json!({"tsuids": ["000001000001000002"], "startTime": 1388450000, "endTime": 1388460000})
            .to_string(),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(j(&body)["totalDeleted"], 2);
    assert_eq!(j(&body)["startTime"], 1388450000000u64);

    let (code, _) = s.http(
        "GET",
        "/api/annotation?start_time=1328140800&method_override=delete",
        "",
    );
    assert_eq!(code, 204);
    let (code, body) = s.http("GET", "/api/annotation?start_time=1328140800", "");
    assert_eq!(code, 404);
    assert!(body.contains("Unable to locate annotation in storage"));
    let v = s.wait_points(
        "/api/query?start=1388448000&end=1388451600&m=sum:sys.cpu.user",
        2,
    );
    assert_eq!(v[0]["dps"], json!({"1388450562": 1, "1388450570": 2}));
    s.stop();

    // The cells: data row of the note's hour, qualifier 01 0A02, OpenTSDB's JSON field order.
    let stored = r#"{"tsuid":"000001000001000001","startTime":1388450562,"endTime":0,"description":"replaced","notes":"","custom":null}"#;
    assert_eq!(
        scan(dir.path(), "data"),
        vec![
            format!("tsdb 00000152c20900000001000001 t:010a02 {}", hex(stored)),
            "tsdb 00000152c20900000001000001 t:a020a0a0 010200".to_string(),
        ]
    );
    let o = tsgate(&["fsck", "--data-dir", dir.path().to_str().unwrap()]);
    assert!(
        o.status.success() && stdout(&o).contains("problems=0"),
        "fsck: {}",
        stdout(&o)
    );
}

#[test]
fn uid_and_ts_meta_with_realtime_creation_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "[meta]\nenable_realtime_uid = true\nenable_realtime_ts = true\nenable_tsuid_tracking = true\nenable_tsuid_incrementing = true\n",
    );
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let put = json!([{"metric":"sys.cpu.user","timestamp":1356998400,"value":1,"tags":{"host":"web01"}},
                     {"metric":"sys.cpu.user","timestamp":1356998410,"value":2,"tags":{"host":"web01"}},
                     {"metric":"sys.cpu.user","timestamp":1356998420,"value":3,"tags":{"host":"web01"}}]);
    assert_eq!(s.http("POST", "/api/put?sync", &put.to_string()).0, 204);

    // Realtime TSMeta and UIDMeta, and ts_ctr counting the three points (one increment per flush).
    let meta = eventually("the TSMeta", || {
        let (code, body) = s.http("GET", &format!("/api/uid/tsmeta?tsuid={TSUID}"), "");
        (code == 200).then(|| j(&body))
    });
    assert_eq!(meta["tsuid"], TSUID);
    assert_eq!(meta["metric"]["name"], "sys.cpu.user");
    assert_eq!(meta["tags"][0]["name"], "host");
    assert_eq!(meta["tags"][1]["type"], "TAGV");
    assert_eq!(meta["totalDatapoints"], 3);
    assert!(meta["lastReceived"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(meta["max"], "NaN");
    let created = eventually("the UIDMeta", || {
        let (code, body) = s.http("GET", "/api/uid/uidmeta?uid=000001&type=metric", "");
        assert_eq!(code, 200, "{body}");
        let v = j(&body);
        (v["created"].as_u64().unwrap_or(0) > 0).then_some(v)
    });
    assert_eq!(created["name"], "sys.cpu.user");
    assert_eq!(created["type"], "METRIC");

    // UIDMeta: POST merges, nothing set → 304, PUT replaces, unknown UID → 404.
    let (code, body) = s.http(
        "POST",
        "/api/uid/uidmeta",
        r#"{"uid":"000001","type":"metric","description":"CPU","custom":{"owner":"ops"}}"#,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(j(&body)["description"], "CPU");
    assert_eq!(
        s.http(
            "POST",
            "/api/uid/uidmeta",
            r#"{"uid":"000001","type":"metric"}"#
        )
        .0,
        304
    );
    let (code, body) = s.http("PUT", "/api/uid/uidmeta?uid=000001&type=metric&notes=n", "");
    assert_eq!(code, 200);
    let v = j(&body);
    assert_eq!(
        (v["description"].as_str(), v["notes"].as_str(), &v["custom"]),
        (Some(""), Some("n"), &Value::Null)
    );
    let (code, body) = s.http("GET", "/api/uid/uidmeta?uid=0000FF&type=tagk", "");
    assert_eq!(code, 404);
    assert!(body.contains("Could not find the requested UID"), "{body}");
    assert_eq!(
        s.http(
            "GET",
            "/api/uid/uidmeta?uid=000001&type=tagv&method_override=delete",
            ""
        )
        .0,
        204
    );
    let (_, body) = s.http("GET", "/api/uid/uidmeta?uid=000001&type=tagv", "");
    assert_eq!(
        j(&body)["created"],
        0,
        "deleted meta reads back blank: {body}"
    );

    // TSMeta updates and the m= lookup.
    let (code, body) = s.http(
        "POST",
        "/api/uid/tsmeta",
        &json!({"tsuid": TSUID, "units": "%", "max": 100}).to_string(),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        (j(&body)["units"].as_str(), j(&body)["max"].as_f64()),
        (Some("%"), Some(100.0))
    );
    assert_eq!(
        s.http(
            "POST",
            "/api/uid/tsmeta",
            &json!({"tsuid": TSUID}).to_string()
        )
        .0,
        304
    );
    let (code, body) = s.http("GET", "/api/uid/tsmeta?m=sys.cpu.user%7Bhost=web01%7D", "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(j(&body).as_array().unwrap().len(), 1);
    let (code, body) = s.http("GET", "/api/uid/tsmeta?tsuid=000001000001000002", "");
    assert_eq!(code, 404);
    assert!(body.contains("Could not find Timeseries meta data"));
    s.stop();

    let uid_rows = scan(&dir.path().join("data"), "uid");
    let want = format!(
        "tsdb-uid 000001 name:{} {}",
        hex("metric_meta"),
        hex(&format!(
            r#"{{"type":"METRIC","displayName":"","description":"","notes":"n","created":{},"custom":null}}"#,
            created["created"]
        ))
    );
    assert!(uid_rows.contains(&want), "{want} not in {uid_rows:#?}");
    let meta_rows = scan(&dir.path().join("data"), "meta");
    assert!(
        meta_rows.contains(&format!(
            "tsdb-meta {TSUID} name:{} 0000000000000003",
            hex("ts_ctr")
        )),
        "{meta_rows:#?}"
    );
}

#[test]
fn trees_file_new_series_and_record_collisions() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "[tree]\nenable_processing = true\n");
    let data = dir.path().join("data");
    let s = Server::start_with(&data, Some(&cfg));

    let (code, body) = s.http(
        "POST",
        "/api/tree",
        r#"{"name":"Hosts","description":"by dc"}"#,
    );
    assert_eq!(code, 200, "{body}");
    let t = j(&body);
    assert_eq!(
        (t["treeId"].as_u64(), t["enabled"].as_bool(), &t["rules"]),
        (Some(1), Some(false), &Value::Null)
    );
    let rules = json!([
        {"treeId":1,"level":0,"order":0,"type":"TAGK","field":"dc"},
        {"treeId":1,"level":1,"order":0,"type":"TAGK","field":"host"},
        {"treeId":1,"level":2,"order":0,"type":"METRIC","separator":"\\."}
    ]);
    assert_eq!(s.http("POST", "/api/tree/rules", &rules.to_string()).0, 204);
    let (code, body) = s.http(
        "POST",
        "/api/tree/rule",
        r#"{"treeId":1,"level":3,"order":0,"type":"TAGK_CUSTOM"}"#,
    );
    assert_eq!(code, 400);
    assert!(
        body.contains("Missing field name required for TAGK_CUSTOM rule"),
        "{body}"
    );
    let (code, body) = s.http("GET", "/api/tree/rule?treeid=1&level=2&order=0", "");
    assert_eq!(code, 200);
    assert_eq!(
        body,
        r#"{"type":"METRIC","field":"","regex":"","separator":"\\.","description":"","notes":"","level":2,"order":0,"treeId":1,"customField":"","regexGroupIdx":0,"displayFormat":""}"#
    );
    // A second tree, storing failures: metric path only, so hosts collide on the same leaf.
    let (code, body) = s.http(
        "POST",
        "/api/tree?name=Metrics&store_failures=true&enabled=true",
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(j(&body)["treeId"], 2);
    assert_eq!(
        s.http(
            "POST",
            "/api/tree/rule?treeid=2&level=0&order=0&type=metric&separator=%5C.",
            ""
        )
        .0,
        200
    );
    // Physical PUT is refused on /api/tree*: it is spelled GET + method_override.
    assert_eq!(
        s.http("PUT", "/api/tree", r#"{"treeId":1,"enabled":true}"#)
            .0,
        405
    );
    let (code, body) = s.http(
        "GET",
        "/api/tree?treeid=1&enabled=true&method_override=post",
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(j(&body)["enabled"], true);
    assert_eq!(j(&body)["rules"]["2"]["0"]["separator"], "\\.");
    assert_eq!(
        s.http(
            "GET",
            "/api/tree?treeid=1&enabled=true&method_override=post",
            ""
        )
        .0,
        200
    );
    assert_eq!(
        s.http("GET", "/api/tree?treeid=1&method_override=post", "")
            .0,
        304
    );

    let put = |metric: &str, host: &str| {
        let p = json!({"metric": metric, "timestamp": 1356998400, "value": 1, "tags": {"dc": "dal", "host": host}});
        assert_eq!(s.http("POST", "/api/put", &p.to_string()).0, 204);
    };
    put("sys.cpu.user", "web01");
    put("sys.cpu.system", "web01");
    // ROOT → dal → web01 → sys → cpu, leaves user and system.
    let cpu = "00010001838F06BC4C550001BECD000181A8";
    let branch = eventually("both leaves", || {
        let (code, body) = s.http("GET", &format!("/api/tree/branch?branch={cpu}"), "");
        let v = (code == 200).then(|| j(&body))?;
        (v["leaves"].as_array().map(|l| l.len()) == Some(2)).then_some(v)
    });
    assert_eq!(branch["displayName"], "cpu");
    assert_eq!(branch["depth"], 4);
    assert_eq!(
        branch["path"],
        json!({"0":"ROOT","1":"dal","2":"web01","3":"sys","4":"cpu"})
    );
    let leaves = branch["leaves"].as_array().unwrap();
    assert_eq!(leaves[0]["displayName"], "system");
    assert_eq!(leaves[1]["displayName"], "user");
    assert_eq!(leaves[1]["metric"], "sys.cpu.user");
    assert_eq!(leaves[1]["tags"], json!({"dc":"dal","host":"web01"}));
    let (_, root) = s.http("GET", "/api/tree/branch?treeid=1", "");
    let root = j(&root);
    assert_eq!(root["branchId"], "0001");
    assert_eq!(root["branches"][0]["displayName"], "dal");
    assert_eq!(root["branches"][0]["branchId"], "00010001838F");
    assert_eq!(root["leaves"], Value::Null);
    let (code, body) = s.http("GET", "/api/tree/branch?branch=0001DEADBEEF", "");
    assert_eq!(code, 404);
    assert!(
        body.contains("Unable to locate branch '0001DEADBEEF' for tree '1'"),
        "{body}"
    );

    // web02's sys.cpu.user lands on tree 2's existing `user` leaf: a collision.
    eventually("tree 2 filed web01", || {
        let (code, body) = s.http("GET", "/api/tree/branch?branch=00020001BECD000181A8", "");
        (code == 200 && j(&body)["leaves"].as_array().map(|l| l.len()) == Some(2)).then_some(())
    });
    put("sys.cpu.user", "web02");
    let user_web01 = leaves[1]["tsuid"].as_str().unwrap().to_string();
    let collisions = eventually("the collision", || {
        let (_, body) = s.http("GET", "/api/tree/collisions?treeid=2", "");
        let v = j(&body);
        (!v.as_object().unwrap().is_empty()).then_some(v)
    });
    let (loser, winner) = collisions.as_object().unwrap().iter().next().unwrap();
    assert_eq!(winner.as_str(), Some(user_web01.as_str()));
    assert_ne!(loser, &user_web01);
    assert_eq!(s.http("GET", "/api/tree/notmatched?treeid=2", "").1, "{}");

    // The test endpoint runs a series through the rules without storing anything.
    let (code, body) = s.http(
        "GET",
        &format!("/api/tree/test?treeid=1&tsuids={loser}"),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let t = &j(&body)[loser.as_str()];
    assert_eq!(t["meta"]["metric"]["name"], "sys.cpu.user");
    assert!(
        t["messages"][0]
            .as_str()
            .unwrap()
            .starts_with("Processing rule: [1:0:0:TAGK]"),
        "{body}"
    );
    assert_eq!(
        t["branch"]["branches"][0]["branches"][0]["displayName"],
        "web02"
    );

    // Deleting tree 2's results keeps its definition; with definition=true it is gone.
    assert_eq!(
        s.http("GET", "/api/tree?treeid=2&method_override=delete", "")
            .0,
        204
    );
    assert_eq!(s.http("GET", "/api/tree/collisions?treeid=2", "").1, "{}");
    assert_eq!(s.http("GET", "/api/tree?treeid=2", "").0, 200);
    assert_eq!(
        s.http(
            "GET",
            "/api/tree?treeid=2&definition=true&method_override=delete",
            ""
        )
        .0,
        204
    );
    assert_eq!(s.http("GET", "/api/tree?treeid=2", "").0, 404);
    s.stop();

    // Stored cells: tree row, the root branch, rules, a branch row and a leaf column.
    let rows = scan(&data, "tree");
    let has = |line: String| assert!(rows.contains(&line), "{line} not in {rows:#?}");
    has(format!(
        "tsdb-tree 0001 t:{} {}",
        hex("branch"),
        hex(r#"{"path":{"0":"ROOT"},"displayName":"ROOT"}"#)
    ));
    has(format!(
        "tsdb-tree 00010001838f t:{} {}",
        hex("branch"),
        hex(r#"{"path":{"0":"ROOT","1":"dal"},"displayName":"dal"}"#)
    ));
    has(format!(
        "tsdb-tree {} t:{}0036ebcb {}",
        cpu.to_lowercase(),
        hex("leaf:"),
        hex(&format!(
            r#"{{"displayName":"user","tsuid":"{user_web01}"}}"#
        ))
    ));
    assert!(rows
        .iter()
        .any(|r| r.starts_with(&format!("tsdb-tree 0001 t:{} ", hex("tree_rule:2:0")))));
    assert!(
        !rows.iter().any(|r| r.starts_with("tsdb-tree 0002")),
        "tree 2 fully deleted: {rows:#?}"
    );
}

/// `/api/search/*` (OpenTSDB answers these through a search plugin; tsgate from its tables)
/// and `/api/uid/rename`, with the answers of OpenTSDB's `SearchRpc`/`UniqueIdRpc` tests.
#[test]
fn search_types_and_uid_rename() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "[meta]\nenable_realtime_uid = true\nenable_realtime_ts = true\nenable_tsuid_tracking = true\n",
    );
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    let put = json!([{"metric":"sys.cpu.user","timestamp":1356998400,"value":1,"tags":{"host":"web01"}},
                     {"metric":"sys.cpu.user","timestamp":1356998400,"value":2,"tags":{"host":"web02"}},
                     {"metric":"sys.mem.free","timestamp":1356998400,"value":3,"tags":{"host":"web01"}}]);
    assert_eq!(s.http("POST", "/api/put?sync", &put.to_string()).0, 204);
    let search = |path: &str| {
        let (code, body) = s.http("GET", path, "");
        assert_eq!(code, 200, "{path}: {body}");
        j(&body)
    };
    let all = eventually("three TSMetas", || {
        let v = search("/api/search/tsmeta?query=*");
        (v["totalResults"] == 3).then_some(v)
    });
    assert_eq!(all["type"], "TSMETA");
    assert_eq!(all["query"], "*");
    assert_eq!(
        (all["limit"].as_i64(), all["startIndex"].as_i64()),
        (Some(25), Some(0))
    );
    assert_eq!(all["results"][0]["tsuid"], TSUID);
    assert_eq!(all["results"][0]["metric"]["name"], "sys.cpu.user");
    assert!(all["time"].is_number());

    // The docs' example query, paged.
    let v = search("/api/search/tsmeta_summary?query=name:sys.cpu.*&limit=1&start_index=1");
    assert_eq!(
        (
            v["totalResults"].as_u64(),
            v["results"].as_array().unwrap().len()
        ),
        (Some(2), 1)
    );
    assert_eq!(
        v["results"][0],
        json!({"tsuid":"000001000001000002","metric":"sys.cpu.user","tags":{"host":"web02"}})
    );
    let v = search("/api/search/tsuids?query=tags.host:web01");
    assert_eq!(
        v["results"],
        json!(["000001000001000001", "000002000001000001"])
    );
    let v = search("/api/search/tsuids?query=tagv:web01%20AND%20NOT%20name:sys.mem.*");
    assert_eq!(v["results"], json!(["000001000001000001"]));

    // UIDMeta: every assigned UID; a described one found by its description.
    let (code, _) = s.http(
        "POST",
        "/api/uid/uidmeta",
        r#"{"uid":"000002","type":"metric","description":"Free memory"}"#,
    );
    assert_eq!(code, 200);
    let v = search("/api/search/uidmeta?query=type:tagv");
    assert_eq!(v["type"], "UIDMETA");
    assert_eq!(v["totalResults"], 2);
    assert_eq!(v["results"][1]["name"], "web02");
    let (code, body) = s.http(
        "POST",
        "/api/search/uidmeta",
        r#"{"query":"description:\"free memory\"","limit":5}"#,
    );
    assert_eq!(code, 200, "{body}");
    let v = j(&body);
    assert_eq!(
        (v["limit"].as_i64(), v["totalResults"].as_i64()),
        (Some(5), Some(1))
    );
    assert_eq!(v["results"][0]["name"], "sys.mem.free");

    // Annotations: local and global, found by their text.
    for note in [
        json!({"tsuid": TSUID, "startTime": 1356998400, "description": "deploy v2"}),
        json!({"startTime": 1356998460, "description": "datacenter maintenance"}),
    ] {
        assert_eq!(s.http("POST", "/api/annotation", &note.to_string()).0, 200);
    }
    let v = search("/api/search/annotation?query=description:deploy*");
    assert_eq!(v["type"], "ANNOTATION");
    assert_eq!(v["results"][0]["tsuid"], TSUID);
    assert_eq!(v["totalResults"], 1);
    assert_eq!(search("/api/search/annotation?query=*")["totalResults"], 2);

    // Errors: unknown type, missing query, bad number, broken syntax.
    assert_eq!(s.http("GET", "/api/search/nope?query=*", "").0, 400);
    let (code, body) = s.http("GET", "/api/search/tsmeta", "");
    assert_eq!(code, 400);
    assert_eq!(
        j(&body)["error"]["message"],
        "Missing parameter <code>query</code>"
    );
    let (code, body) = s.http("GET", "/api/search/tsmeta?query=*&limit=x", "");
    assert_eq!(code, 400);
    assert_eq!(
        j(&body)["error"]["message"],
        "Unable to convert 'limit' to a valid number"
    );
    assert_eq!(s.http("GET", "/api/search/tsmeta?query=(name:a", "").0, 400);

    // Rename (TestUniqueIdRpc's cases): POST and GET, then the new name reads the old data.
    let (code, body) = s.http(
        "POST",
        "/api/uid/rename",
        r#"{"metric":"sys.cpu.user","name":"sys.cpu.usr"}"#,
    );
    assert_eq!((code, body.as_str()), (200, r#"{"result":"true"}"#));
    let (code, body) = s.http("GET", "/api/uid/rename?tagv=web02&name=web03&drop=db", "");
    assert_eq!((code, body.as_str()), (200, r#"{"result":"true"}"#));
    let (code, body) = s.http(
        "GET",
        "/api/query?start=1356998000&end=1356999000&m=sum:sys.cpu.usr{host=web03}",
        "",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(j(&body)[0]["dps"]["1356998400"], 2);
    let (code, body) = s.http(
        "GET",
        "/api/uid/rename?metric=sys.cpu.usr&name=sys.mem.free",
        "",
    );
    assert_eq!(code, 400);
    let v = j(&body);
    assert_eq!(v["result"], "false");
    assert_eq!(
        v["error"],
        "When trying rename(\"sys.cpu.usr\", \"sys.mem.free\") on UniqueId(tsdb-uid, metrics, 3): new name already assigned ID=[0, 0, 2]"
    );
    let (code, body) = s.http("GET", "/api/uid/rename?tagk=nope&name=other", "");
    assert_eq!(code, 400);
    assert_eq!(j(&body)["error"], "Name(\"nope\") does not exist");
    for bad in [
        "/api/uid/rename?name=x",
        "/api/uid/rename?metric=a",
        "/api/uid/rename?metric=&name=b",
    ] {
        let (code, body) = s.http("GET", bad, "");
        assert_eq!(code, 400, "{bad}");
        assert_eq!(
            j(&body)["error"]["message"],
            "Missing necessary values to rename UID"
        );
    }
    assert_eq!(s.http("POST", "/api/uid/rename", "Not JSON").0, 400);
    assert_eq!(s.http("DELETE", "/api/uid/rename", "").0, 405);
}

/// Histogram points (2.4): `/api/histogram` and telnet `histogram` store one cell each in the
/// series' row, byte for byte as OpenTSDB writes them; queries without percentiles skip them.
#[test]
fn histograms_stored_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let mut t = s.telnet();
    t.send("put sys.lat 1356998400 7 host=web01\n");
    assert!(t.sync().is_empty());
    let h = json!({"metric":"sys.lat","timestamp":1356998410,"tags":{"host":"web01"},
                   "buckets":{"1,2":5,"0,1":3},"underflow":1,"overflow":2});
    let (code, body) = s.http("POST", "/api/histogram", &h.to_string());
    assert_eq!((code, body.as_str()), (204, ""));
    t.send("histogram sys.lat 1356998420 0,1=3:1,2=5:u=1:o=2 host=web01\n");
    assert!(t.sync().is_empty());
    // The binary form: base64 of the encoding, with the SimpleHistogram id 0.
    t.send("histogram sys.lat 1356998430 0 AAI/gAAAQAAAAAVAAAAAQEAAAAYAAA== host=web01\n");
    assert!(t.sync().is_empty());
    t.send("histogram sys.lat 1356998440 0,1 host=web01\n");
    let answer = t.sync();
    assert!(
        answer
            .iter()
            .any(|l| l.starts_with("histogram: illegal argument: Improperly formatted bucket")),
        "{answer:?}"
    );
    let (code, body) = s.http(
        "POST",
        "/api/histogram?details",
        r#"[{"metric":"sys.lat","timestamp":1356998450,"tags":{"host":"web01"},"id":9,"value":"AAE="}]"#,
    );
    assert_eq!(code, 400);
    assert_eq!(j(&body)["errors"][0]["error"], "No codec found for ID: 9");
    assert_eq!(s.http("GET", "/api/histogram", "").0, 405);

    // A query without percentiles reads only the number.
    let v = s.wait_points(
        "/api/query?start=1356998000&end=1357000000&m=sum:sys.lat",
        1,
    );
    assert_eq!(v[0]["dps"], json!({"1356998400": 7}));

    // Percentiles: SimpleHistogram.percentile (the middle of the bucket that reaches p) over
    // the bucket sums of each group.
    let web02 = json!({"metric":"sys.lat","timestamp":1356998410,"tags":{"host":"web02"},
                       "buckets":{"2,3":4}});
    assert_eq!(s.http("POST", "/api/histogram", &web02.to_string()).0, 204);
    let pq = |sub: Value| {
        let body = json!({"start": 1356998000, "end": 1357000000, "queries": [sub]});
        let (code, resp) = s.http("POST", "/api/query", &body.to_string());
        assert_eq!(code, 200, "{resp}");
        j(&resp)
    };
    let v = pq(
        json!({"aggregator":"sum","metric":"sys.lat","percentiles":[50,75],"tags":{"host":"web01"}}),
    );
    assert_eq!(
        v,
        json!([
            {"metric":"sys.lat_pct_50.0","tags":{"host":"web01"},"aggregateTags":[],
             "dps":{"1356998410":1.5,"1356998420":1.5,"1356998430":2.5}},
            {"metric":"sys.lat_pct_75.0","tags":{"host":"web01"},"aggregateTags":[],
             "dps":{"1356998410":1.5,"1356998420":1.5,"1356998430":2.5}}
        ])
    );
    // Both hosts in one group: at +10 the buckets add up to 3, 5, 4 (p75 falls in [2,3)).
    let v = pq(json!({"aggregator":"sum","metric":"sys.lat","percentiles":[75]}));
    assert_eq!(
        (v[0]["tags"].clone(), v[0]["aggregateTags"].clone()),
        (json!({}), json!(["host"]))
    );
    assert_eq!(
        v[0]["dps"],
        json!({"1356998410":2.5,"1356998420":1.5,"1356998430":2.5})
    );
    // Downsampled: the minute's three histograms merged.
    let v = pq(
        json!({"aggregator":"sum","metric":"sys.lat","percentiles":[50],
                      "downsample":"1m-sum","tags":{"host":"web01"}}),
    );
    assert_eq!(v[0]["dps"], json!({"1356998400":1.5}));
    let body = json!({"start": 1356998000, "queries": [{"aggregator":"avg","metric":"sys.lat","percentiles":[50]}]});
    assert_eq!(s.http("POST", "/api/query", &body.to_string()).0, 400);
    s.stop();

    // id 00, 2 buckets, [0,1)=3, [1,2)=5, underflow 1, overflow 2.
    let simple = "00000200000000".to_string() + "3f80000003" + "3f80000040000000" + "05" + "0102";
    // [1,2)=5, [2,3)=6, no under/overflow.
    let binary = "0000023f8000004000000005400000004040000006".to_string() + "0000";
    let cells: Vec<String> = scan(dir.path(), "data")
        .into_iter()
        .filter(|l| l.contains(" t:06"))
        .collect();
    let row = "tsdb 00000150e22700000001000001";
    assert_eq!(
        cells,
        vec![
            format!("{row} t:06000a {simple}"),
            format!("{row} t:060014 {simple}"),
            format!("{row} t:06001e {binary}"),
            // web02's: one bucket [2,3)=4.
            format!(
                "tsdb 00000150e22700000001000002 t:06000a {}",
                "000001".to_string() + "4000000040400000" + "04" + "0000"
            ),
        ]
    );
}

/// `/api/histogram` keeps `limits.max_points_per_request` as `/api/put` does: 413 with the key,
/// and nothing of the request stored.
#[test]
fn histograms_over_the_points_limit_are_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, "[limits]\nmax_points_per_request = 1\n").unwrap();
    let s = Server::start_with(dir.path(), Some(&cfg));
    let h = |ts: u64| json!({"metric":"sys.lat","timestamp":ts,"tags":{"host":"web01"},"buckets":{"0,1":3}});
    let (code, body) = s.http(
        "POST",
        "/api/histogram",
        &json!([h(1356998410), h(1356998420)]).to_string(),
    );
    assert_eq!(code, 413, "{body}");
    assert!(body.contains("limits.max_points_per_request = 1"), "{body}");
    let (code, body) = s.http("POST", "/api/histogram", &h(1356998430).to_string());
    assert_eq!((code, body.as_str()), (204, ""));
    // Only the accepted point is there: the refused request stored nothing.
    let q = json!({"start":1356998400,"end":1356998500,
                   "queries":[{"aggregator":"sum","metric":"sys.lat","percentiles":[50]}]});
    let (code, body) = s.http("POST", "/api/query", &q.to_string());
    assert_eq!(code, 200, "{body}");
    let got: serde_json::Value = serde_json::from_str(&body).unwrap();
    let dps = got[0]["dps"].as_object().expect("one series with dps");
    assert_eq!(dps.keys().collect::<Vec<_>>(), vec!["1356998430"], "{body}");
}

/// The value of an unlabelled counter in `/metrics`.
fn counter(s: &Server, name: &str) -> u64 {
    let (_, text) = s.http("GET", "/metrics", "");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

/// `/api/histogram` reads its body as `/api/put` does (it used to parse the raw bytes):
/// `Content-Encoding` gzip or deflate (zlib-wrapped or bare), the inflated size held to
/// `limits.http_body_max`; and each 204 comes only after a store sync made the cells durable.
#[test]
fn histogram_bodies_take_the_put_body_path_and_are_synced_before_the_answer() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(&cfg, "[limits]\nhttp_body_max = 4000\n").unwrap();
    let data = dir.path().join("data");
    let s = Server::start_with(&data, Some(&cfg));
    let h = |ts: u64| {
        json!({"metric":"sys.lat","timestamp":ts,"tags":{"host":"web01"},"buckets":{"0,1":3}})
            .to_string()
    };
    let gzip = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    };
    let zlib = |b: &[u8]| {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    };
    let bare = |b: &[u8]| {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    };
    let syncs = counter(&s, "tsgate_direct_syncs_total");
    for (ts, enc, body) in [
        (1356998410, "gzip", gzip(h(1356998410).as_bytes())),
        (1356998420, "deflate", zlib(h(1356998420).as_bytes())),
        (1356998430, "deflate", bare(h(1356998430).as_bytes())),
        (1356998440, "identity", h(1356998440).into_bytes()),
    ] {
        let (code, text) = http_bytes(
            &s.addr,
            "POST",
            "/api/histogram",
            &body,
            &[("Content-Encoding", enc)],
        );
        assert_eq!(code, 204, "{ts} {enc}: {}", String::from_utf8_lossy(&text));
    }
    // One sync per request, each before its answer (no other writer to share one with).
    assert_eq!(counter(&s, "tsgate_direct_syncs_total"), syncs + 4);

    // A gzip bomb: small on the wire, over the limit once inflated; a body that is not gzip.
    let bomb = gzip(&vec![b' '; 1 << 20]);
    assert!(bomb.len() < 4000);
    let (code, text) = http_bytes(
        &s.addr,
        "POST",
        "/api/histogram",
        &bomb,
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 413, "{}", String::from_utf8_lossy(&text));
    assert!(String::from_utf8_lossy(&text).contains("limits.http_body_max = 4000"));
    let (code, text) = http_bytes(
        &s.addr,
        "POST",
        "/api/histogram",
        b"not gzip at all",
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&text));
    assert_eq!(
        j(&String::from_utf8_lossy(&text))["error"]["message"],
        "Unable to decompress the request body"
    );
    // Over the limit on the wire: refused before the handler.
    let big = format!("[{}]", vec![h(1356998450); 60].join(","));
    assert!(big.len() > 4000);
    assert_eq!(s.http("POST", "/api/histogram", &big).0, 413);
    assert_eq!(counter(&s, "tsgate_direct_syncs_total"), syncs + 4);
    s.stop();

    let cells: Vec<String> = scan(&data, "data")
        .into_iter()
        .filter(|l| l.contains(" t:06"))
        .map(|l| l.split(' ').nth(2).unwrap().to_string())
        .collect();
    assert_eq!(cells, ["t:06000a", "t:060014", "t:06001e", "t:060028"]);
}
