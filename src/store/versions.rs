//! Row versions: a counter per stripe of row keys, bumped after every write this process makes
//! to a row, so that whoever keeps something read from a row can tell whether the row may have
//! changed since (see `query::row_cache`). Only meaningful where this process is the store's
//! only writer ([`Store::shared`] false): another node's writes to HBase bump nothing.

use crate::store::{Cell, RowMutations, RowStream, RowVisitor, Scan, SharedStore, Store, StoreResult};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Stripes of row keys: rows sharing a stripe invalidate each other's cached reads, which
/// costs a re-read, never a stale answer.
const STRIPES: usize = 4096;

pub struct RowVersions {
    stripes: Box<[AtomicU64]>,
}

impl Default for RowVersions {
    fn default() -> Self {
        RowVersions { stripes: (0..STRIPES).map(|_| AtomicU64::new(0)).collect() }
    }
}

impl RowVersions {
    fn stripe(&self, row: &[u8]) -> &AtomicU64 {
        // FNV-1a: row keys are short, and any spread will do.
        let h = row.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
        &self.stripes[(h % STRIPES as u64) as usize]
    }

    /// The row's version now. Read it before reading the row: a write that lands meanwhile
    /// bumps it after, so what was read is then told apart as old.
    pub fn of(&self, row: &[u8]) -> u64 {
        // Acquire pairs with the writer's Release: a version seen bumped means its write is
        // visible to reads that follow.
        self.stripe(row).load(Ordering::Acquire)
    }

    fn bump(&self, row: &[u8]) {
        self.stripe(row).fetch_add(1, Ordering::Release);
    }
}

/// A store whose writes bump their rows' versions once they return (whether or not they
/// failed: a failed batch may have landed in part).
pub struct VersionedStore {
    inner: SharedStore,
    versions: Arc<RowVersions>,
}

/// Wraps `inner` so that every write through the result bumps the versions returned.
pub fn versioned(inner: SharedStore) -> (SharedStore, Arc<RowVersions>) {
    let versions = Arc::new(RowVersions::default());
    (Arc::new(VersionedStore { inner, versions: versions.clone() }), versions)
}

impl VersionedStore {
    fn after<T>(&self, rows: &[&[u8]], r: StoreResult<T>) -> StoreResult<T> {
        for row in rows {
            self.versions.bump(row);
        }
        r
    }

    fn after_batch<T>(&self, stripes: Vec<&AtomicU64>, r: StoreResult<T>) -> StoreResult<T> {
        for s in stripes {
            s.fetch_add(1, Ordering::Release);
        }
        r
    }
}

impl Store for VersionedStore {
    fn get(&self, table: &str, row: &[u8], families: &[&[u8]]) -> StoreResult<Vec<Cell>> {
        self.inner.get(table, row, families)
    }

    fn mutate(&self, table: &str, batch: Vec<RowMutations>) -> StoreResult<()> {
        // The stripes, not the keys: the batch moves into the store.
        let stripes = batch.iter().map(|m| self.versions.stripe(&m.row)).collect();
        self.after_batch(stripes, self.inner.mutate(table, batch))
    }

    fn scan(&self, table: &str, scan: &Scan) -> StoreResult<RowStream> {
        self.inner.scan(table, scan)
    }

    fn scan_rows(&self, table: &str, scan: &Scan, visit: &mut RowVisitor<'_>) -> StoreResult<()> {
        self.inner.scan_rows(table, scan, visit)
    }

    fn increment(&self, table: &str, row: &[u8], family: &[u8], qualifier: &[u8], delta: i64) -> StoreResult<i64> {
        self.after(&[row], self.inner.increment(table, row, family, qualifier, delta))
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
        self.after(&[row], self.inner.check_and_put(table, row, family, qualifier, expected, value))
    }

    fn flush(&self) -> StoreResult<()> {
        self.inner.flush()
    }

    fn close(&self) -> StoreResult<()> {
        self.inner.close()
    }

    fn mutate_at(&self, table: &str, batch: Vec<RowMutations>, ts: u64) -> StoreResult<()> {
        let stripes = batch.iter().map(|m| self.versions.stripe(&m.row)).collect();
        self.after_batch(stripes, self.inner.mutate_at(table, batch, ts))
    }

    fn get_rows(&self, table: &str, rows: &[Vec<u8>], families: &[&[u8]]) -> StoreResult<Vec<Vec<Cell>>> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::TableNames;

    fn store(dir: &std::path::Path) -> (SharedStore, Arc<RowVersions>) {
        versioned(Arc::new(EmbeddedStore::open(dir, &TableNames::default().specs()).unwrap()))
    }

    #[test]
    fn every_kind_of_write_bumps_its_row_and_reads_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let (s, v) = store(dir.path());
        let row = b"row-1".as_slice();
        let mut seen = v.of(row);
        let mut bumped = |what: &str| {
            let now = v.of(row);
            assert!(now > seen, "{what} did not bump the row's version");
            seen = now;
        };
        s.mutate("tsdb", vec![RowMutations::put(row.to_vec(), b"t", vec![0, 0], vec![1])]).unwrap();
        bumped("mutate");
        s.mutate_at("tsdb", vec![RowMutations::put(row.to_vec(), b"t", vec![0, 16], vec![2])], 5).unwrap();
        bumped("mutate_at");
        s.increment("tsdb-uid", row, b"id", b"metrics", 1).unwrap();
        bumped("increment");
        s.check_and_put("tsdb-uid", row, b"id", b"x", None, b"1").unwrap();
        bumped("check_and_put");
        // A compare-and-set that does not put still counts: versions only need to grow.
        assert!(!s.check_and_put("tsdb-uid", row, b"id", b"x", None, b"2").unwrap());
        bumped("a refused check_and_put");
        s.get("tsdb", row, &[]).unwrap();
        s.scan_rows("tsdb", &Scan::default(), &mut |_, _| Ok(true)).unwrap();
        s.flush().unwrap();
        assert_eq!(v.of(row), seen, "reads and flushes leave versions alone");
    }

    #[test]
    fn a_batch_bumps_each_of_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (s, v) = store(dir.path());
        let rows: Vec<Vec<u8>> = (0..50u8).map(|i| vec![b'r', i]).collect();
        let before: Vec<u64> = rows.iter().map(|r| v.of(r)).collect();
        s.mutate("tsdb", rows.iter().map(|r| RowMutations::put(r.clone(), b"t", vec![0, 0], vec![1])).collect()).unwrap();
        for (r, b) in rows.iter().zip(before) {
            assert!(v.of(r) > b, "row {r:?} not bumped");
        }
    }
}
