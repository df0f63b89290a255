//! The store contract and the UID algorithm, run against every backend: the embedded engine,
//! and HBase through its Thrift gateway (the in-process Thrift test double, over real sockets).

use std::sync::Arc;
use tsgate::schema::uid_table::UidKind;
use tsgate::store::hbase::double::TestDouble;
use tsgate::store::hbase::{tables, HBaseConfig, HBaseStore};
use tsgate::store::{conformance, SharedStore, TableNames};
use tsgate::uid::UidCore;

/// Whatever must live as long as the store (temp dirs, the double).
type Guard = Box<dyn std::any::Any>;

fn embedded() -> (Guard, SharedStore) {
    let d = tempfile::tempdir().unwrap();
    let s = Arc::new(tsgate::store::embedded::EmbeddedStore::open(d.path(), &TableNames::default().specs()).unwrap());
    (Box::new(d), s)
}

/// A double with tsgate's tables, and a client with small scan batches (so that scans span
/// several `scannerGetList` calls and rows arrive in pieces).
fn hbase() -> (Guard, SharedStore) {
    let d = tempfile::tempdir().unwrap();
    let double = TestDouble::start(d.path(), "127.0.0.1:0").unwrap();
    let cfg = HBaseConfig { thrift: double.addr(), scan_caching: 2, scan_batch: 2, ..Default::default() };
    let names = TableNames::default();
    tables::create_tables(HBaseStore::new(&cfg, &names.specs()).pool(), &names, "NONE").unwrap();
    let s = Arc::new(HBaseStore::open(&cfg, &names.specs()).unwrap());
    (Box::new((double, d)), s)
}

macro_rules! store_suite {
    ($($backend:ident),*) => {$(
        mod $backend {
            use super::*;
            #[test] fn ordering_and_scans() { let (_g, s) = super::$backend(); conformance::ordering_and_scans(&s); }
            #[test] fn deletes() { let (_g, s) = super::$backend(); conformance::deletes(&s); }
            #[test] fn atomics() { let (_g, s) = super::$backend(); conformance::atomics(&s); }
            #[test] fn timestamped_mutations() { let (_g, s) = super::$backend(); conformance::timestamped_mutations(&s); }
            #[test] fn multi_get() { let (_g, s) = super::$backend(); conformance::multi_get(&s); }
            #[test] fn uid_assignment_is_unique_across_nodes() { let (_g, s) = super::$backend(); super::uids_across_nodes(s); }
        }
    )*};
}

store_suite!(embedded, hbase);

/// Four UID cores with separate caches (four "nodes") race to name the same 200 things:
/// every name ends with one id, no id names two things, and losers only leak ids.
fn uids_across_nodes(store: SharedStore) {
    let nodes: Vec<Arc<UidCore>> =
        (0..4).map(|_| Arc::new(UidCore::new(store.clone(), "tsdb-uid".into(), [3, 3, 3], [true, true, true]))).collect();
    let results: Vec<Vec<(String, Vec<u8>)>> = nodes
        .iter()
        .map(|n| {
            let n = n.clone();
            std::thread::spawn(move || {
                (0..200).map(|i| {
                    let name = format!("host{}", (i * 7) % 200);
                    (name.clone(), n.get_or_create(UidKind::Tagv, &name).unwrap().to_vec())
                }).collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let mut by_name = std::collections::HashMap::new();
    for r in results.iter().flatten() {
        let prev = by_name.insert(r.0.clone(), r.1.clone());
        assert!(prev.is_none() || prev.as_ref() == Some(&r.1), "{} got two ids", r.0);
    }
    let ids: std::collections::HashSet<_> = by_name.values().collect();
    assert_eq!(ids.len(), 200, "no id names two things");
    let fresh = UidCore::new(store.clone(), "tsdb-uid".into(), [3, 3, 3], [false, false, false]);
    for (name, id) in &by_name {
        assert_eq!(fresh.require_id(UidKind::Tagv, name).unwrap().to_vec(), *id);
        assert_eq!(&*fresh.get_name(UidKind::Tagv, id).unwrap(), name.as_str());
    }
    // Auto-create off: an unknown name is OpenTSDB's error.
    assert_eq!(fresh.get_or_create(UidKind::Metric, "nope").unwrap_err().to_string(), "No such name for 'metrics': 'nope'");
}
