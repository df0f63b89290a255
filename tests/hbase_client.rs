//! The HBase client's failure handling against the Thrift test double: transport failures are
//! retried on a fresh connection, answers from HBase are not, errors say what failed.

use std::time::{Duration, Instant};
use tsgate::store::hbase::{tables, HBaseConfig, HBaseStore};
use tsgate::store::{Store, TableNames};
use tsgate_testkit::hbase_double::TestDouble;

fn double_with_tables(dir: &std::path::Path, listen: &str) -> TestDouble {
    let d = TestDouble::start(dir, listen).unwrap();
    let cfg = HBaseConfig {
        thrift: d.addr(),
        ..Default::default()
    };
    let names = TableNames::default();
    tables::create_tables(HBaseStore::new(&cfg, &names.specs()).pool(), &names, "NONE").unwrap();
    d
}

fn total_calls(s: &HBaseStore) -> u64 {
    s.counters().iter().map(|(_, n)| n).sum()
}

#[test]
fn answers_from_hbase_are_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let d = double_with_tables(dir.path(), "127.0.0.1:0");
    let cfg = HBaseConfig {
        thrift: d.addr(),
        ..Default::default()
    };
    let s = HBaseStore::open(&cfg, &TableNames::default().specs()).unwrap();
    let before = total_calls(&s);
    let e = s.get("no-such-table", b"r", &[]).unwrap_err().to_string();
    assert!(e.contains("TableNotFoundException"), "{e}");
    assert_eq!(total_calls(&s) - before, 1, "one call, no retry");
    let e = s
        .increment("tsdb-uid", b"r", b"nofamily", b"q", 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("NoSuchColumnFamilyException"), "{e}");
}

#[test]
fn transport_failures_are_retried_on_a_new_connection() {
    let dir = tempfile::tempdir().unwrap();
    let a = double_with_tables(&dir.path().join("a"), "127.0.0.1:0");
    let addr = a.addr();
    let cfg = HBaseConfig {
        thrift: addr.clone(),
        retries: 4,
        retry_backoff_ms: 100,
        ..Default::default()
    };
    let s = HBaseStore::open(&cfg, &TableNames::default().specs()).unwrap();
    assert!(s.get("tsdb", b"r", &[]).unwrap().is_empty());
    // The gateway goes away (the pooled connection breaks) and comes back on the same address.
    a.stop();
    let b_dir = dir.path().join("b");
    let back = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(250));
        TestDouble::start_with_tables(&b_dir, &addr, &TableNames::default().specs()).unwrap()
    });
    let t = Instant::now();
    assert!(
        s.get("tsdb", b"r", &[]).unwrap().is_empty(),
        "the call went through after retries"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(100),
        "it waited for the gateway"
    );
    let b = back.join().unwrap();
    drop(b);
    // Nobody there at all: the error names the gateway and the attempts.
    let e = s.get("tsdb", b"r", &[]).unwrap_err().to_string();
    assert!(e.contains(&cfg.thrift), "{e}");
    let dead = HBaseConfig {
        thrift: cfg.thrift.clone(),
        retries: 1,
        retry_backoff_ms: 10,
        ..Default::default()
    };
    let e = HBaseStore::open(&dead, &TableNames::default().specs())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("cannot connect to the HBase Thrift gateway"),
        "{e}"
    );
}

#[test]
fn scans_join_rows_cut_into_pieces_and_close_their_scanners() {
    let dir = tempfile::tempdir().unwrap();
    let d = double_with_tables(dir.path(), "127.0.0.1:0");
    let cfg = HBaseConfig {
        thrift: d.addr(),
        scan_caching: 3,
        scan_batch: 2,
        ..Default::default()
    };
    let s = HBaseStore::open(&cfg, &TableNames::default().specs()).unwrap();
    let rows: Vec<tsgate::store::RowMutations> = (0u8..10)
        .flat_map(|r| {
            (0u8..5)
                .map(move |q| tsgate::store::RowMutations::put(vec![r], b"t", vec![q], vec![r, q]))
        })
        .collect();
    s.mutate("tsdb", rows).unwrap();
    let got: Vec<(Vec<u8>, usize)> = s
        .scan("tsdb", &Default::default())
        .unwrap()
        .map(|r| r.unwrap())
        .map(|r| (r.key, r.cells.len()))
        .collect();
    assert_eq!(got, (0u8..10).map(|r| (vec![r], 5)).collect::<Vec<_>>());
    // Stopping early closes the scanner too.
    let mut it = s.scan("tsdb", &Default::default()).unwrap();
    it.next().unwrap().unwrap();
    drop(it);
    let limited = s
        .scan(
            "tsdb",
            &tsgate::store::Scan {
                limit: Some(4),
                ..Default::default()
            },
        )
        .unwrap()
        .count();
    assert_eq!(limited, 4);
    assert_eq!(d.open_scanners(), 0);
    let scan_calls: Vec<(&str, u64)> = s
        .counters()
        .into_iter()
        .filter(|(m, _)| m.starts_with("scanner"))
        .collect();
    assert!(scan_calls.iter().all(|(_, n)| *n > 0), "{scan_calls:?}");
}
