//! Decoded `tsdb` rows of Graphite paths stored whole, kept between queries
//! (`storage.row_cache_mb`): a dashboard redrawing the same panel reads a thousand such paths
//! again each time, and a seek per path into the engine, then decoding its compacted columns,
//! was most of `/render`'s work. A row's entry holds its points, or none for a row that does
//! not exist, with the row's version when it was read (see [`RowVersions`]): any write to the
//! row since makes the entry stale. Only for a store this process alone writes.

use crate::store::versions::RowVersions;
use std::sync::Arc;

/// A row's points: (ms, value), in time order.
pub type RowPoints = Arc<[(i64, f64)]>;

#[derive(Clone)]
struct Entry {
    version: u64,
    points: RowPoints,
}

/// What an entry costs beyond its points: the key's allocation, the cache's slot, the Arc.
const ENTRY_OVERHEAD: u64 = 96;

/// The rows one read may fill, as a share of the cache: a read of more would only evict what
/// the next one needs (a read of every path over days), so it goes to the store uncached.
const FILL_SHARE: u64 = 2;

/// An hour of points every 10 s, the commonest Graphite resolution, and its key: the weight
/// of a typical row, for telling how many rows fit.
const TYPICAL_ROW: u64 = 360 * 16 + ENTRY_OVERHEAD + 20;

#[derive(Clone)]
struct Weight;

impl quick_cache::Weighter<Vec<u8>, Entry> for Weight {
    fn weight(&self, key: &Vec<u8>, e: &Entry) -> u64 {
        key.len() as u64 + e.points.len() as u64 * std::mem::size_of::<(i64, f64)>() as u64 + ENTRY_OVERHEAD
    }
}

pub struct RowCache {
    cache: quick_cache::sync::Cache<Vec<u8>, Entry, Weight>,
    versions: Arc<RowVersions>,
    bytes: u64,
}

impl RowCache {
    /// A cache of at most `bytes` (None for 0), kept fresh by `versions`.
    pub fn new(bytes: u64, versions: Arc<RowVersions>) -> Option<RowCache> {
        (bytes > 0).then(|| RowCache {
            cache: quick_cache::sync::Cache::with_weighter((bytes / TYPICAL_ROW).max(16) as usize, bytes, Weight),
            versions,
            bytes,
        })
    }

    /// Whether a read of `rows` rows should go through the cache.
    pub fn fits(&self, rows: u64) -> bool {
        rows.saturating_mul(TYPICAL_ROW) <= self.bytes / FILL_SHARE
    }

    /// The row's points as last read, unless it was written since.
    pub fn get(&self, row: &[u8]) -> Option<RowPoints> {
        // The version first: an entry put after a newer write carries an older version.
        let now = self.versions.of(row);
        self.cache.get(row).filter(|e| e.version == now).map(|e| e.points)
    }

    /// The row's version, to be taken before the row is read and given back to [`Self::put`].
    pub fn version(&self, row: &[u8]) -> u64 {
        self.versions.of(row)
    }

    /// Keeps the row's points as read after `version` was taken.
    pub fn put(&self, row: Vec<u8>, version: u64, points: RowPoints) {
        self.cache.insert(row, Entry { version, points });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::versions::versioned;
    use crate::store::{RowMutations, TableNames};

    #[test]
    fn an_entry_goes_stale_when_its_row_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (store, versions) = versioned(Arc::new(EmbeddedStore::open(dir.path(), &TableNames::default().specs()).unwrap()));
        let cache = RowCache::new(1 << 20, versions).unwrap();
        let (row, other) = (b"row-a".to_vec(), b"row-b".to_vec());
        let v = cache.version(&row);
        cache.put(row.clone(), v, Arc::from(vec![(1000, 1.5)]));
        cache.put(other.clone(), cache.version(&other), Arc::from(Vec::new()));
        assert_eq!(cache.get(&row).as_deref(), Some(&[(1000, 1.5)][..]));
        store.mutate("tsdb", vec![RowMutations::put(row.clone(), b"t", vec![0, 0], vec![1])]).unwrap();
        assert!(cache.get(&row).is_none(), "a written row's entry is stale");
        // Unless it shares the written row's stripe, the other row stays cached (empty).
        assert_eq!(cache.get(&other).as_deref(), Some(&[][..]));
    }

    #[test]
    fn an_entry_read_before_a_write_is_stale_however_late_it_is_put() {
        let dir = tempfile::tempdir().unwrap();
        let (store, versions) = versioned(Arc::new(EmbeddedStore::open(dir.path(), &TableNames::default().specs()).unwrap()));
        let cache = RowCache::new(1 << 20, versions).unwrap();
        let row = b"row-a".to_vec();
        // A reader takes the version and reads the row (empty); a write lands before it puts.
        let v = cache.version(&row);
        store.mutate("tsdb", vec![RowMutations::put(row.clone(), b"t", vec![0, 0], vec![1])]).unwrap();
        cache.put(row.clone(), v, Arc::from(Vec::new()));
        assert!(cache.get(&row).is_none());
    }

    #[test]
    fn the_cache_holds_its_budget_and_refuses_reads_too_big_for_it() {
        let versions = Arc::new(RowVersions::default());
        let cache = RowCache::new(64 << 10, versions).unwrap();
        for i in 0..200u32 {
            let row = i.to_be_bytes().to_vec();
            cache.put(row.clone(), cache.version(&row), Arc::from(vec![(0, 0.0); 360]));
        }
        assert!(cache.cache.weight() <= 64 << 10, "{} bytes held", cache.cache.weight());
        assert!(cache.fits(5));
        assert!(!cache.fits(6), "six typical rows are more than half of 64 KiB");
    }
}
