//! The command line: `uid`, `import`, `scan` filters and `fsck`.

mod common;
use common::*;
use std::io::Write;
use std::sync::Arc;

fn d(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn uid_assign_grep_rename() {
    let dir = tempfile::tempdir().unwrap();
    let o = tsgate(&["uid", "--data-dir", d(dir.path()), "assign", "metrics", "sys.cpu.user", "sys.cpu.idle"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), "metrics sys.cpu.user: 000001\nmetrics sys.cpu.idle: 000002\n");
    let o = tsgate(&["uid", "--data-dir", d(dir.path()), "assign", "metrics", "sys.cpu.user", "bad name"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Name already exists with UID: 000001"), "{err}");
    assert!(err.contains("illegal character"), "{err}");
    let o = tsgate(&["uid", "--data-dir", d(dir.path()), "grep", "metrics", "idle$"]);
    assert_eq!(stdout(&o), "metrics sys.cpu.idle: 000002\n");
    let o = tsgate(&["uid", "--data-dir", d(dir.path()), "rename", "metrics", "sys.cpu.idle", "sys.cpu.rest"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tsgate(&["uid", "--data-dir", d(dir.path()), "grep", "cpu"]);
    assert_eq!(stdout(&o), "metrics sys.cpu.rest: 000002\nmetrics sys.cpu.user: 000001\n");
}

#[test]
fn import_plain_and_gzip_then_scan_by_metric_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plain = dir.path().join("a.txt");
    std::fs::write(&plain, "sys.cpu.user 1356998400 42 host=web01\nsys.cpu.user 1356998410 43 host=web01\nnot a line\nsys.mem 1357002000 1.5 host=web01\n").unwrap();
    let gz = dir.path().join("b.txt.gz");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::default());
    writeln!(enc, "sys.cpu.user 1357002000 7 host=web02").unwrap();
    enc.finish().unwrap();
    let o = tsgate(&["import", "--quiet", "--data-dir", d(&data), d(&plain), d(&gz)]);
    assert_eq!(o.status.code(), Some(1), "a rejected line makes the exit status 1");
    assert!(stdout(&o).contains("imported 4 points, 1 rejected"), "{}", stdout(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("a.txt:3"), "the bad line is named");

    let rows = |args: &[&str]| {
        let mut a = vec!["scan", "--data-dir", d(&data)];
        a.extend_from_slice(args);
        stdout(&tsgate(&a)).lines().count()
    };
    assert_eq!(rows(&[]), 3, "two hours of sys.cpu.user (two hosts), one of sys.mem");
    assert_eq!(rows(&["--metric", "sys.cpu.user"]), 2);
    assert_eq!(rows(&["--metric", "sys.cpu.user", "--start", "1357002000"]), 1);
    assert_eq!(rows(&["--metric", "sys.cpu.user", "--end", "1356998500"]), 1);
    let s = Server::start(&data);
    let v = s.wait_points("/api/query?start=1356998400&end=1357002000&m=sum:sys.cpu.user", 3);
    assert_eq!(v[0]["dps"]["1356998410"], 43);
}

#[test]
fn fsck_finds_and_fixes_bad_and_duplicate_cells() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let mut t = s.telnet();
    t.send("put fsck.m 1356998400 1 host=a\nput fsck.m 1356998410 2 host=a\n");
    t.sync();
    s.stop();
    let clean = tsgate(&["fsck", "--data-dir", d(dir.path())]);
    assert!(clean.status.success(), "{}", stdout(&clean));
    {
        let store: tsgate::store::SharedStore = Arc::new(
            tsgate::store::embedded::EmbeddedStore::open(&dir.path().join("store"), &tsgate::store::TableNames::default().specs()).unwrap(),
        );
        let row = hex("00000150e22700000001000001");
        let put = |q: &str, v: &str| {
            store
                .mutate("tsdb", vec![tsgate::store::RowMutations::put(row.clone(), b"t", hex(q), hex(v))])
                .unwrap()
        };
        put("00070017", "00"); // a compacted column whose values are missing
        put("0000", "05"); // same second as the compacted point, another value
        store.flush().unwrap();
    }
    let o = tsgate(&["fsck", "--data-dir", d(dir.path())]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("column 00070017: Corrupted value"), "{out}");
    assert!(out.contains("duplicate timestamps"), "{out}");
    let o = tsgate(&["fsck", "--fix", "--data-dir", d(dir.path())]);
    assert!(o.status.success(), "{}", stdout(&o));
    let o = tsgate(&["fsck", "--data-dir", d(dir.path())]);
    assert!(o.status.success(), "{}", stdout(&o));
    // The newest write of the duplicated second won; the other point is intact.
    assert_eq!(scan(dir.path(), "data"), vec!["tsdb 00000150e22700000001000001 t:000000a0 050200"]);
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn query_verb_prints_lines_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let mut t = s.telnet();
    t.send("put q.m 1356998400 1 host=a\nput q.m 1356998400 2 host=b\nput q.m 1356998460 4 host=a\n");
    t.sync();
    s.stop();
    let o = tsgate(&["query", "--data-dir", d(dir.path()), "--start", "1356998400", "--end", "1356998500", "sum:q.m"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), "q.m 1356998400 3\nq.m 1356998460 4\n");
    let o = tsgate(&["query", "--data-dir", d(dir.path()), "--start", "1356998400", "--end", "1356998500", "none:q.m{host=b}"]);
    assert_eq!(stdout(&o), "q.m 1356998400 2 host=b\n");
    let o = tsgate(&["query", "--data-dir", d(dir.path()), "--start", "2013/01/01-00:00:00", "--end", "1356998500", "--json", "sum:1m-sum:q.m{host=a}"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["dps"], serde_json::json!({"1356998400": 1.0, "1356998460": 4.0}));
    let o = tsgate(&["query", "--data-dir", d(dir.path()), "--start", "1356998400", "sum:nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("No such name for 'metrics': 'nope'"));
}
