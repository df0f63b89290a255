//! Decoded `tsdb` rows of Graphite paths stored whole, kept between queries
//! (`storage.row_cache_mb`): a dashboard redrawing a panel over a thousand such paths reads
//! them all again each time, and a seek per path into the engine, then decoding its compacted
//! columns, was most of `/render`'s work. Only rows of closed hours are kept (an open hour's row
//! changes at every flush), with their points, or none for a row that does not exist.
//!
//! Kept fresh by the store: every write through it drops the rows it wrote (see
//! [`crate::store::watch`]), so only for a store this process alone writes. A read that
//! raced a write is not kept: see [`RowCache::put`].

use crate::store::watch::RowWatcher;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// A row's points: (ms, value), in time order.
pub type RowPoints = Arc<[(i64, f64)]>;

/// What an entry costs beyond its points: the key's allocation, the cache's slot, the Arc.
const ENTRY_OVERHEAD: u64 = 96;

/// One request fills at most this share of the cache (see [`RowCache::fill`]).
const FILL_SHARE: u64 = 2;

/// An hour of points every 10 s, the commonest Graphite resolution, and its key: a typical
/// row's weight, for the cache's estimate of how many it holds.
const TYPICAL_ROW: u64 = 360 * 16 + ENTRY_OVERHEAD + 20;

/// Stripes of row keys, each counting the writes heard to its rows: a read that raced a write
/// is told by its count.
const STRIPES: usize = 16384;

#[derive(Clone)]
struct Weight;

impl quick_cache::Weighter<Vec<u8>, RowPoints> for Weight {
    fn weight(&self, key: &Vec<u8>, points: &RowPoints) -> u64 {
        row_weight(key.len(), points.len())
    }
}

/// An entry's weight in the cache's budget.
pub fn row_weight(key_len: usize, points: usize) -> u64 {
    (key_len + points * std::mem::size_of::<(i64, f64)>()) as u64 + ENTRY_OVERHEAD
}

pub struct RowCache {
    cache: quick_cache::sync::Cache<Vec<u8>, RowPoints, Weight>,
    /// The table whose rows are kept (`storage.tables.data`).
    table: String,
    /// Writes heard per stripe of row keys; held while a write's rows are dropped, and while
    /// a read's rows are put.
    writes: Box<[Mutex<u64>]>,
    bytes: u64,
    /// Whether anything was ever put: until then a write has nothing to drop (ingest alone
    /// skips the cache's locks).
    used: AtomicBool,
    /// Look-ups answered, and not, for `/api/stats`.
    hits: AtomicU64,
    misses: AtomicU64,
}

impl RowCache {
    /// A cache of at most `bytes` (None for 0) of rows of `table`.
    pub fn new(bytes: u64, table: &str) -> Option<RowCache> {
        (bytes > 0).then(|| RowCache {
            cache: quick_cache::sync::Cache::with_weighter((bytes / TYPICAL_ROW).max(16) as usize, bytes, Weight),
            table: table.to_string(),
            writes: (0..STRIPES).map(|_| Mutex::new(0)).collect(),
            bytes,
            used: AtomicBool::new(false),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        })
    }

    fn stripe(&self, row: &[u8]) -> &Mutex<u64> {
        &self.writes[(super::seek::fnv1a(row) % STRIPES as u64) as usize]
    }

    /// What one request may put in the cache, in its weight: a request reading more (every
    /// path over days) would only evict what the next one needs.
    pub fn fill(&self) -> Fill {
        Fill { left: AtomicI64::new((self.bytes / FILL_SHARE) as i64) }
    }

    /// The row's points as last read, unless it was written since.
    pub fn get(&self, row: &[u8]) -> Option<RowPoints> {
        let got = self.cache.get(row);
        let n = if got.is_some() { &self.hits } else { &self.misses };
        n.fetch_add(1, Ordering::Relaxed);
        got
    }

    /// For `/api/stats`: look-ups answered, look-ups not, and the weight held (bytes).
    pub fn stats(&self) -> (u64, u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed), self.cache.weight())
    }

    /// To be taken before the row is read and given back to [`RowCache::put`].
    pub fn ticket(&self, row: &[u8]) -> u64 {
        *self.stripe(row).lock()
    }

    /// Keeps the row's points as read after `ticket` was taken, unless a write to a row of its
    /// stripe was heard since (the read may predate it); a write heard after drops the entry.
    /// The stripe is held meanwhile, so no write comes between the check and the insert.
    pub fn put(&self, row: Vec<u8>, ticket: u64, points: RowPoints) {
        let writes = self.stripe(&row).lock();
        if *writes == ticket {
            self.used.store(true, Ordering::Relaxed);
            self.cache.insert(row, points);
        }
    }
}

/// A request's allowance for filling the cache (shared by its reading threads).
pub struct Fill {
    left: AtomicI64,
}

impl Fill {
    /// Whether the allowance left covers `rows` typical rows (an hour every 10 s).
    pub fn covers(&self, rows: u64) -> bool {
        rows.saturating_mul(TYPICAL_ROW) <= self.left.load(Ordering::Relaxed).max(0) as u64
    }

    /// Takes `weight` from the allowance; false (and nothing taken) once it does not cover it.
    pub fn take(&self, weight: u64) -> bool {
        let w = weight as i64;
        if self.left.fetch_sub(w, Ordering::Relaxed) >= w {
            return true;
        }
        self.left.fetch_add(w, Ordering::Relaxed);
        false
    }
}

impl RowWatcher for RowCache {
    fn watches(&self, table: &str) -> bool {
        table == self.table
    }

    fn written(&self, _table: &str, rows: &[&[u8]]) {
        for row in rows {
            let mut writes = self.stripe(row).lock();
            *writes += 1;
            // Under the stripe's lock: a put of this row before it set `used` (same lock); one
            // after sees the count moved and puts nothing.
            if self.used.load(Ordering::Relaxed) {
                self.cache.remove(*row);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::watch::watched;
    use crate::store::{RowMutations, TableNames};

    fn store(cache: &Arc<RowCache>) -> (tempfile::TempDir, crate::store::SharedStore) {
        let dir = tempfile::tempdir().unwrap();
        let inner = Arc::new(EmbeddedStore::open(dir.path(), &TableNames::default().specs()).unwrap());
        let s = watched(inner, cache.clone());
        (dir, s)
    }

    #[test]
    fn a_write_drops_its_rows_and_only_those() {
        let cache = Arc::new(RowCache::new(1 << 20, "tsdb").unwrap());
        let (_dir, store) = store(&cache);
        let (row, other) = (b"row-a".to_vec(), b"row-b".to_vec());
        cache.put(row.clone(), cache.ticket(&row), Arc::from(vec![(1000, 1.5)]));
        cache.put(other.clone(), cache.ticket(&other), Arc::from(Vec::new()));
        assert_eq!(cache.get(&row).as_deref(), Some(&[(1000, 1.5)][..]));
        store.mutate("tsdb", vec![RowMutations::put(row.clone(), b"t", vec![0, 0], vec![1])]).unwrap();
        assert!(cache.get(&row).is_none(), "a written row is dropped");
        assert_eq!(cache.get(&other).as_deref(), Some(&[][..]), "another row stays");
        // Another table's row of the same key is not this cache's.
        store.mutate("tsdb-tree", vec![RowMutations::put(other.clone(), b"t", vec![0], vec![1])]).unwrap();
        assert!(cache.get(&other).is_some());
    }

    #[test]
    fn a_read_that_raced_a_write_is_not_kept() {
        let cache = Arc::new(RowCache::new(1 << 20, "tsdb").unwrap());
        let (_dir, store) = store(&cache);
        let row = b"row-a".to_vec();
        // A reader takes its ticket and reads the row (empty); a write lands before it puts.
        let ticket = cache.ticket(&row);
        store.mutate("tsdb", vec![RowMutations::put(row.clone(), b"t", vec![0, 0], vec![1])]).unwrap();
        cache.put(row.clone(), ticket, Arc::from(Vec::new()));
        assert!(cache.get(&row).is_none());
        // A read after the write is kept.
        cache.put(row.clone(), cache.ticket(&row), Arc::from(vec![(0, 1.0)]));
        assert!(cache.get(&row).is_some());
    }

    #[test]
    fn the_cache_holds_its_budget_and_a_request_fills_half_of_it() {
        let cache = RowCache::new(64 << 10, "tsdb").unwrap();
        for i in 0..200u32 {
            let row = i.to_be_bytes().to_vec();
            cache.put(row.clone(), cache.ticket(&row), Arc::from(vec![(0, 0.0); 360]));
        }
        assert!(cache.cache.weight() <= 64 << 10, "{} bytes held", cache.cache.weight());
        let fill = cache.fill();
        let row = row_weight(20, 360);
        assert_eq!((0..10).filter(|_| fill.take(row)).count() as u64, (32 << 10) / row, "a request fills half of it");
        assert!(fill.take(1), "what is left still covers a smaller row");
    }
}
