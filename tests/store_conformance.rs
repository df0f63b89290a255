//! The store contract and the UID algorithm, run against every backend (the embedded engine
//! now; the HBase gateway joins the list with its issue).

use std::sync::Arc;
use tsgate::schema::uid_table::UidKind;
use tsgate::store::{conformance, SharedStore, TableNames};
use tsgate::uid::UidCore;

fn embedded(dir: &std::path::Path) -> SharedStore {
    Arc::new(tsgate::store::embedded::EmbeddedStore::open(dir, &TableNames::default().specs()).unwrap())
}

macro_rules! store_suite {
    ($($backend:ident),*) => {$(
        mod $backend {
            use super::*;
            fn open() -> (tempfile::TempDir, SharedStore) {
                let d = tempfile::tempdir().unwrap();
                let s = super::$backend(d.path());
                (d, s)
            }
            #[test] fn ordering_and_scans() { let (_d, s) = open(); conformance::ordering_and_scans(&s); }
            #[test] fn deletes() { let (_d, s) = open(); conformance::deletes(&s); }
            #[test] fn atomics() { let (_d, s) = open(); conformance::atomics(&s); }
            #[test] fn uid_assignment_is_unique_across_nodes() { let (_d, s) = open(); super::uids_across_nodes(s); }
        }
    )*};
}

store_suite!(embedded);

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
