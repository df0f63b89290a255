//! A store that tells a watcher which rows each write touched, once the write has returned
//! (whether or not it failed: a failed batch may have landed in part). `query::row_cache`
//! drops what it kept of those rows. Only complete where this process is the store's only
//! writer ([`Store::shared`] false): another node's writes to HBase reach no watcher.

use crate::{Cell, RowMutations, RowStream, RowVisitor, Scan, SharedStore, Store, StoreResult};
use std::sync::Arc;

pub trait RowWatcher: Send + Sync {
    /// Whether writes to `table` are of interest (their row keys are then kept for
    /// [`RowWatcher::written`]).
    fn watches(&self, table: &str) -> bool;
    /// `rows` of `table` were written; called after the write returned.
    fn written(&self, table: &str, rows: &[&[u8]]);
    /// Rows of `table` may have gone without a write naming them (retention dropped them).
    fn cleared(&self, _table: &str) {}
}

pub struct WatchedStore {
    inner: SharedStore,
    watcher: Arc<dyn RowWatcher>,
}

/// Wraps `inner` so that `watcher` hears of every write through the result.
pub fn watched(inner: SharedStore, watcher: Arc<dyn RowWatcher>) -> SharedStore {
    Arc::new(WatchedStore { inner, watcher })
}

impl WatchedStore {
    fn one<T>(
        &self,
        table: &str,
        row: &[u8],
        write: impl FnOnce() -> StoreResult<T>,
    ) -> StoreResult<T> {
        let r = write();
        if self.watcher.watches(table) {
            self.watcher.written(table, &[row]);
        }
        r
    }

    fn batch(
        &self,
        table: &str,
        batch: Vec<RowMutations>,
        write: impl FnOnce(Vec<RowMutations>) -> StoreResult<()>,
    ) -> StoreResult<()> {
        // The keys are copied: the batch moves into the store.
        let rows: Option<Vec<Vec<u8>>> = self
            .watcher
            .watches(table)
            .then(|| batch.iter().map(|m| m.row.clone()).collect());
        let r = write(batch);
        if let Some(rows) = rows {
            self.watcher
                .written(table, &rows.iter().map(Vec::as_slice).collect::<Vec<_>>());
        }
        r
    }
}

impl Store for WatchedStore {
    fn get(&self, table: &str, row: &[u8], families: &[&[u8]]) -> StoreResult<Vec<Cell>> {
        self.inner.get(table, row, families)
    }

    fn mutate(&self, table: &str, batch: Vec<RowMutations>) -> StoreResult<()> {
        self.batch(table, batch, |b| self.inner.mutate(table, b))
    }

    fn scan(&self, table: &str, scan: &Scan) -> StoreResult<RowStream> {
        self.inner.scan(table, scan)
    }

    fn scan_rows(&self, table: &str, scan: &Scan, visit: &mut RowVisitor<'_>) -> StoreResult<()> {
        self.inner.scan_rows(table, scan, visit)
    }

    fn scan_points(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut crate::PointsVisitor<'_>,
    ) -> StoreResult<()> {
        self.inner.scan_points(table, scan, visit)
    }

    fn scan_keys(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut crate::KeyVisitor<'_>,
    ) -> StoreResult<()> {
        self.inner.scan_keys(table, scan, visit)
    }

    fn increment(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> StoreResult<i64> {
        self.one(table, row, || {
            self.inner.increment(table, row, family, qualifier, delta)
        })
    }

    fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> StoreResult<bool> {
        self.one(table, row, || {
            self.inner
                .check_and_put(table, row, family, qualifier, expected, value)
        })
    }

    fn flush(&self) -> StoreResult<()> {
        self.inner.flush()
    }

    fn close(&self) -> StoreResult<()> {
        self.inner.close()
    }

    fn mutate_at(&self, table: &str, batch: Vec<RowMutations>, ts: u64) -> StoreResult<()> {
        self.batch(table, batch, |b| self.inner.mutate_at(table, b, ts))
    }

    fn get_rows(
        &self,
        table: &str,
        rows: &[Vec<u8>],
        families: &[&[u8]],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        self.inner.get_rows(table, rows, families)
    }

    fn shared(&self) -> bool {
        self.inner.shared()
    }

    fn tidy(&self) -> StoreResult<()> {
        self.inner.tidy()
    }

    fn seeks(&self) -> bool {
        self.inner.seeks()
    }

    fn atomic_batches(&self) -> bool {
        self.inner.atomic_batches()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }

    fn expire_rows(&self, table: &str, expired: Option<super::RowExpiry>) -> bool {
        self.inner.expire_rows(table, expired)
    }

    fn reclaim(&self, table: &str, how: super::Reclaim) -> StoreResult<super::Reclaimed> {
        let freed = self.inner.reclaim(table, how)?;
        if self.watcher.watches(table) {
            self.watcher.cleared(table);
        }
        Ok(freed)
    }

    fn disk_bytes(&self, table: &str) -> Option<u64> {
        self.inner.disk_bytes(table)
    }

    fn refusing_writes(&self) -> Option<super::Refusal> {
        self.inner.refusing_writes()
    }

    fn snapshot_to(&self, dir: &std::path::Path) -> StoreResult<Option<u64>> {
        self.inner.snapshot_to(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::EmbeddedStore;
    use crate::TableNames;
    use std::sync::Mutex;

    /// Hears `tsdb` and `tsdb-uid`; notes each row heard, and whether the write had landed.
    struct Log {
        store: Mutex<Option<SharedStore>>,
        heard: Mutex<Vec<(String, Vec<u8>, bool)>>,
    }

    impl RowWatcher for Log {
        fn watches(&self, table: &str) -> bool {
            table != "tsdb-meta"
        }
        fn written(&self, table: &str, rows: &[&[u8]]) {
            let store = self.store.lock().unwrap().clone().unwrap();
            for r in rows {
                let landed = !store.get(table, r, &[]).unwrap().is_empty();
                self.heard
                    .lock()
                    .unwrap()
                    .push((table.to_string(), r.to_vec(), landed));
            }
        }
    }

    #[test]
    fn every_kind_of_write_is_heard_after_it_landed_and_reads_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let inner: SharedStore =
            Arc::new(EmbeddedStore::open(dir.path(), &TableNames::default().specs()).unwrap());
        let log = Arc::new(Log {
            store: Mutex::new(Some(inner.clone())),
            heard: Mutex::new(Vec::new()),
        });
        let s = watched(inner, log.clone());
        let row = |i: u8| vec![b'r', i];
        s.mutate(
            "tsdb",
            (0..3)
                .map(|i| RowMutations::put(row(i), tsgate_schema::DATA_FAMILY, vec![0, 0], vec![1]))
                .collect(),
        )
        .unwrap();
        s.mutate_at(
            "tsdb",
            vec![RowMutations::put(
                row(3),
                tsgate_schema::DATA_FAMILY,
                vec![0, 16],
                vec![2],
            )],
            5,
        )
        .unwrap();
        s.increment("tsdb-uid", &row(4), b"id", b"metrics", 1)
            .unwrap();
        s.check_and_put("tsdb-uid", &row(5), b"id", b"x", None, b"1")
            .unwrap();
        s.mutate(
            "tsdb-meta",
            vec![RowMutations::put(row(6), b"name", vec![1], vec![1])],
        )
        .unwrap();
        s.get("tsdb", &row(0), &[]).unwrap();
        s.scan_rows("tsdb", &Scan::default(), &mut |_, _| Ok(true))
            .unwrap();
        s.flush().unwrap();
        let heard = log.heard.lock().unwrap().clone();
        let want: Vec<(String, Vec<u8>, bool)> = [
            ("tsdb", 0),
            ("tsdb", 1),
            ("tsdb", 2),
            ("tsdb", 3),
            ("tsdb-uid", 4),
            ("tsdb-uid", 5),
        ]
        .into_iter()
        .map(|(t, i)| (t.to_string(), row(i), true))
        .collect();
        assert_eq!(heard, want, "each write heard once, after it landed; reads, flushes and unwatched tables not at all");
    }
}
