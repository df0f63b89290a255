//! A `Store` decorator that times every operation by kind (both backends, one place).

use super::metrics::StoreOp;
use std::sync::Arc;
use std::time::Instant;
use tsgate_store::{Cell, RowMutations, RowStream, Scan, SharedStore, Store, StoreResult};

pub struct InstrumentedStore {
    inner: SharedStore,
}

/// Wraps a store so that its operations are timed into `tsgate_store_operation_seconds`.
pub fn instrument(inner: SharedStore) -> SharedStore {
    Arc::new(InstrumentedStore { inner })
}

fn timed<T>(op: StoreOp, f: impl FnOnce() -> StoreResult<T>) -> StoreResult<T> {
    let start = Instant::now();
    let r = f();
    let m = super::metrics();
    m.store[op as usize].since(start);
    if r.is_err() {
        m.store_errors[op as usize].inc();
    }
    r
}

/// Times a scan from its start until its rows are consumed (or it is dropped).
struct TimedRows {
    inner: RowStream,
    start: Instant,
    failed: bool,
}

impl Iterator for TimedRows {
    type Item = StoreResult<tsgate_store::Row>;
    fn next(&mut self) -> Option<Self::Item> {
        let r = self.inner.next();
        if matches!(r, Some(Err(_))) {
            self.failed = true;
        }
        r
    }
}

impl Drop for TimedRows {
    fn drop(&mut self) {
        let m = super::metrics();
        m.store[StoreOp::Scan as usize].since(self.start);
        if self.failed {
            m.store_errors[StoreOp::Scan as usize].inc();
        }
    }
}

impl Store for InstrumentedStore {
    fn get(&self, table: &str, row: &[u8], families: &[&[u8]]) -> StoreResult<Vec<Cell>> {
        timed(StoreOp::Get, || self.inner.get(table, row, families))
    }

    fn mutate(&self, table: &str, batch: Vec<RowMutations>) -> StoreResult<()> {
        timed(StoreOp::Put, || self.inner.mutate(table, batch))
    }

    fn scan(&self, table: &str, scan: &Scan) -> StoreResult<RowStream> {
        let start = Instant::now();
        match self.inner.scan(table, scan) {
            Ok(rows) => Ok(Box::new(TimedRows {
                inner: rows,
                start,
                failed: false,
            })),
            Err(e) => {
                let m = super::metrics();
                m.store[StoreOp::Scan as usize].since(start);
                m.store_errors[StoreOp::Scan as usize].inc();
                Err(e)
            }
        }
    }

    fn scan_rows(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut tsgate_store::RowVisitor<'_>,
    ) -> StoreResult<()> {
        timed(StoreOp::Scan, || self.inner.scan_rows(table, scan, visit))
    }

    fn scan_points(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut tsgate_store::PointsVisitor<'_>,
    ) -> StoreResult<()> {
        timed(StoreOp::Scan, || self.inner.scan_points(table, scan, visit))
    }

    fn scan_keys(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut tsgate_store::KeyVisitor<'_>,
    ) -> StoreResult<()> {
        timed(StoreOp::Scan, || self.inner.scan_keys(table, scan, visit))
    }

    fn increment(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> StoreResult<i64> {
        timed(StoreOp::Increment, || {
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
        timed(StoreOp::Cas, || {
            self.inner
                .check_and_put(table, row, family, qualifier, expected, value)
        })
    }

    fn flush(&self) -> StoreResult<()> {
        timed(StoreOp::Flush, || self.inner.flush())
    }

    fn close(&self) -> StoreResult<()> {
        self.inner.close()
    }

    fn mutate_at(&self, table: &str, batch: Vec<RowMutations>, ts: u64) -> StoreResult<()> {
        timed(StoreOp::Put, || self.inner.mutate_at(table, batch, ts))
    }

    fn get_rows(
        &self,
        table: &str,
        rows: &[Vec<u8>],
        families: &[&[u8]],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        timed(StoreOp::Get, || self.inner.get_rows(table, rows, families))
    }

    fn shared(&self) -> bool {
        self.inner.shared()
    }

    fn atomic_batches(&self) -> bool {
        self.inner.atomic_batches()
    }

    fn seeks(&self) -> bool {
        self.inner.seeks()
    }

    fn tidy(&self) -> StoreResult<()> {
        self.inner.tidy()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }

    fn expire_rows(&self, table: &str, expired: Option<tsgate_store::RowExpiry>) -> bool {
        self.inner.expire_rows(table, expired)
    }

    fn reclaim(
        &self,
        table: &str,
        how: tsgate_store::Reclaim,
    ) -> StoreResult<tsgate_store::Reclaimed> {
        self.inner.reclaim(table, how)
    }

    fn disk_bytes(&self, table: &str) -> Option<u64> {
        self.inner.disk_bytes(table)
    }

    fn refusing_writes(&self) -> Option<tsgate_store::Refusal> {
        self.inner.refusing_writes()
    }

    fn snapshot_to(&self, dir: &std::path::Path) -> StoreResult<Option<u64>> {
        self.inner.snapshot_to(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_store::embedded::EmbeddedStore;
    use tsgate_store::TableNames;

    #[test]
    fn operations_are_timed_and_delegated() {
        let dir = tempfile::tempdir().unwrap();
        let specs = TableNames::default().specs();
        let s = instrument(Arc::new(EmbeddedStore::open(dir.path(), &specs).unwrap()));
        let m = crate::observe::metrics();
        let (g0, p0, i0, c0, s0) = (
            m.store[StoreOp::Get as usize].count(),
            m.store[StoreOp::Put as usize].count(),
            m.store[StoreOp::Increment as usize].count(),
            m.store[StoreOp::Cas as usize].count(),
            m.store[StoreOp::Scan as usize].count(),
        );
        s.mutate(
            "tsdb",
            vec![RowMutations::put(
                b"r".to_vec(),
                tsgate_schema::DATA_FAMILY,
                b"q".to_vec(),
                b"v".to_vec(),
            )],
        )
        .unwrap();
        assert_eq!(s.get("tsdb", b"r", &[]).unwrap().len(), 1);
        assert_eq!(
            s.increment("tsdb-uid", b"\0", b"id", b"metrics", 1)
                .unwrap(),
            1
        );
        assert!(s
            .check_and_put("tsdb-uid", b"n", b"id", b"metrics", None, b"x")
            .unwrap());
        assert_eq!(s.scan("tsdb", &Scan::default()).unwrap().count(), 1);
        // Other tests in this binary use the same counters: they can only have grown more.
        assert!(m.store[StoreOp::Get as usize].count() > g0);
        assert!(m.store[StoreOp::Put as usize].count() > p0);
        assert!(m.store[StoreOp::Increment as usize].count() > i0);
        assert!(m.store[StoreOp::Cas as usize].count() > c0);
        assert!(m.store[StoreOp::Scan as usize].count() > s0);
    }
}
