//! Decoded `tsdb` rows kept between queries (`storage.row_cache_mb`): a dashboard redraws
//! its panels over the same series every few seconds, and reading them from the engine, then
//! decoding their compacted columns, was most of a query's work. Two kinds of entry:
//! - a row of a Graphite path stored whole, with its points, or none for a row that does not
//!   exist (`/render` looks its paths up one by one);
//! - every row of one metric in one hour and salt bucket (an "hour"), each with its tags and
//!   points, or none: what a scan of that metric's hour reads, for PromQL and graphite-web
//!   reads of tagged series, which filter the rows in memory as the scan would have.
//!
//! Only closed hours are kept (an open hour's rows change at every flush), once they have
//! gone [`QUIET`] (unwritten for a while: an hour being backfilled would be dropped again at
//! the next flush). Quiet is judged per hour, for every metric at once.
//!
//! Kept fresh by the store: every write through it drops the rows it wrote (see
//! [`tsgate_store::watch`]), so only for a store this process alone writes. A read that
//! raced a write is not kept: see [`RowCache::put`].

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use tsgate_store::watch::RowWatcher;

/// A row's points: (ms, value), in time order.
pub type RowPoints = Arc<[(i64, f64)]>;

/// The rows of one metric's hour under one salt, in key order: each row's tag bytes and points.
pub type HourRows = Arc<[(Box<[u8]>, RowPoints)]>;

/// The series of one metric's hour under one salt, in key order: each row's tag bytes, without
/// points. What a look-up of series or label values reads of an hour (Grafana's variable
/// queries, repeated at every dashboard load).
#[derive(Clone, Default)]
pub struct HourTags {
    bytes: Arc<[u8]>,
    /// Where each row's tags end in `bytes`.
    ends: Arc<[u32]>,
}

impl HourTags {
    /// Each row's tag bytes, in key order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(a, b)| &self.bytes[a as usize..b as usize])
    }

    /// The entry's weight in the cache's budget, under a key `key_len` bytes long.
    pub fn weight(&self, key_len: usize) -> u64 {
        hour_key_weight(key_len) + (self.bytes.len() + self.ends.len() * 4) as u64
    }
}

/// [`HourTags`] in the making.
#[derive(Default)]
pub struct HourTagsBuilder {
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl HourTagsBuilder {
    /// Adds a row's tags; false (nothing added) past what an entry can hold.
    pub fn push(&mut self, tags: &[u8]) -> bool {
        let Ok(end) = u32::try_from(self.bytes.len() + tags.len()) else {
            return false;
        };
        self.bytes.extend_from_slice(tags);
        self.ends.push(end);
        true
    }

    pub fn finish(self) -> HourTags {
        HourTags {
            bytes: Arc::from(self.bytes),
            ends: Arc::from(self.ends),
        }
    }
}

/// What an hour entry holds, for a reader of series alone: its rows with their points, or the
/// rows' tags alone.
pub enum HourSeries {
    Rows(HourRows),
    Tags(HourTags),
}

impl HourSeries {
    /// `f` on each row's tag bytes, in key order, until it fails.
    pub fn each_tags<E>(&self, mut f: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        match self {
            HourSeries::Rows(rows) => rows.iter().try_for_each(|(tags, _)| f(tags)),
            HourSeries::Tags(tags) => tags.iter().try_for_each(f),
        }
    }
}

/// What an entry holds.
#[derive(Clone)]
enum Kept {
    Row(RowPoints),
    /// With its weight: the cache weighs an entry again whenever it moves one.
    Hour(HourRows, u64),
    /// An hour's tags alone, under the hour's key (a write to the hour drops it as it drops
    /// the rows), with its weight.
    Tags(HourTags, u64),
}

/// Appended to a row key's head (salt, metric, hour) to name the hour's entry. A row key with
/// these bytes as its tags would share the entry's key: each kind then reads the other as a
/// miss, and a write to either drops both, so the two only cost each other hits.
const HOUR_MARK: [u8; 2] = [0xFF, b'h'];

/// What a row of an hour entry costs beyond its points and tags.
const HOUR_ROW_OVERHEAD: u64 = 48;

/// What an entry costs beyond its points: the key's allocation, the cache's slot, the Arc.
const ENTRY_OVERHEAD: u64 = 96;

/// One request fills at most this share of the cache (see [`RowCache::fill`]).
const FILL_SHARE: u64 = 2;

/// An hour of points every 10 s, the commonest Graphite resolution, and its key: a typical
/// row's weight, for the cache's estimate of how many it holds.
const TYPICAL_ROW: u64 = 360 * 16 + ENTRY_OVERHEAD + 20;

/// An hour written within this long is not kept: it is being written (a backfill, a burst of
/// late points, the ingest of an archive), and what a query keeps would be dropped by the
/// next flush, or by the compaction after it. A bench query polled during an ingest of
/// history kept 16 MiB that way, all of it dropped before it was read again.
pub const QUIET: std::time::Duration = std::time::Duration::from_secs(2);

/// A ticket that keeps nothing: no stripe ever counts that many writes.
const NOT_KEPT: u64 = u64::MAX;

/// Hours remembered as written, past which those written before [`QUIET`] are forgotten.
const RECENT_MAX: usize = 64;

/// How long a request shape that ran out of allowance fills nothing (see
/// [`RowCache::fill_for`]).
const SHAPE_BAR: std::time::Duration = std::time::Duration::from_secs(60);

/// Request shapes remembered as running out of allowance, at most.
const SHAPES_MAX: usize = 1024;

/// The cache's shards (see [`RowCache::new`]).
const SHARDS: usize = 2;

/// Stripes of row keys, each counting the writes heard to its rows: a read that raced a write
/// is told by its count.
const STRIPES: usize = 16384;

#[derive(Clone)]
struct Weight;

impl quick_cache::Weighter<Vec<u8>, Kept> for Weight {
    fn weight(&self, key: &Vec<u8>, kept: &Kept) -> u64 {
        match kept {
            Kept::Row(points) => row_weight(key.len(), points.len()),
            Kept::Hour(_, weight) | Kept::Tags(_, weight) => *weight,
        }
    }
}

/// An entry's weight in the cache's budget.
pub fn row_weight(key_len: usize, points: usize) -> u64 {
    (key_len + points * std::mem::size_of::<(i64, f64)>()) as u64 + ENTRY_OVERHEAD
}

/// An hour entry's weight in the cache's budget: its key's part, and its rows'.
pub fn hour_weight(key_len: usize, rows: &[(Box<[u8]>, RowPoints)]) -> u64 {
    hour_key_weight(key_len)
        + rows
            .iter()
            .map(|(tags, p)| hour_row_weight(tags.len(), p.len()))
            .sum::<u64>()
}

/// The part of an hour entry's weight its key and slot make.
pub fn hour_key_weight(key_len: usize) -> u64 {
    key_len as u64 + ENTRY_OVERHEAD
}

/// The part of an hour entry's weight one of its rows makes.
pub fn hour_row_weight(tags_len: usize, points: usize) -> u64 {
    (tags_len + points * std::mem::size_of::<(i64, f64)>()) as u64 + HOUR_ROW_OVERHEAD
}

/// The key of the hour entry whose rows start with `head` (salt, metric UID, base time).
pub fn hour_key(head: &[u8]) -> Vec<u8> {
    [head, &HOUR_MARK].concat()
}

pub struct RowCache {
    cache: quick_cache::sync::Cache<Vec<u8>, Kept, Weight>,
    /// The table whose rows are kept (`storage.tables.data`).
    table: String,
    /// The width of a row key's head (salt, metric UID, base time): a written row's hour entry
    /// is named by it.
    head: usize,
    /// Writes heard per stripe of row keys; held while a write's rows are dropped, and while
    /// a read's rows are put.
    writes: Box<[Mutex<u64>]>,
    bytes: u64,
    /// Whether anything was ever put: until then a write has nothing to drop (ingest alone
    /// only counts its writes per stripe and notes the hours it wrote).
    used: AtomicBool,
    /// When each hour was last written (hours written within `quiet_for`, and some older).
    /// With when it was last pruned of hours gone quiet.
    recent: Mutex<(
        std::collections::HashMap<u32, std::time::Instant>,
        std::time::Instant,
    )>,
    /// How long an hour must go unwritten before its rows are kept ([`QUIET`]).
    pub quiet_for: std::time::Duration,
    /// Shapes of requests that ran out of allowance (see [`RowCache::fill_for`]).
    overflowing: Mutex<std::collections::HashMap<u64, std::time::Instant>>,
    /// Look-ups answered, and not, for `/api/stats`.
    hits: AtomicU64,
    misses: AtomicU64,
}

impl RowCache {
    /// A cache of at most `bytes` (None for 0) of rows of `table`, whose row keys' heads are
    /// `head` bytes wide.
    pub fn new(bytes: u64, table: &str, head: usize) -> Option<RowCache> {
        (bytes > 0).then(|| RowCache {
            cache: quick_cache::sync::Cache::with_options(
                quick_cache::OptionsBuilder::new()
                    .estimated_items_capacity((bytes / TYPICAL_ROW).max(16) as usize)
                    .weight_capacity(bytes)
                    // Each shard holds its share of the budget and refuses an entry heavier
                    // than 97 % of that: an hour of a thousand series every 10 s weighs ~6 MB.
                    .shards(SHARDS)
                    .build()
                    .expect("capacities set"),
                Weight,
                Default::default(),
                Default::default(),
            ),
            table: table.to_string(),
            head,
            writes: (0..STRIPES).map(|_| Mutex::new(0)).collect(),
            bytes,
            used: AtomicBool::new(false),
            recent: Mutex::new((Default::default(), std::time::Instant::now())),
            quiet_for: QUIET,
            overflowing: Mutex::new(Default::default()),
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
        Fill {
            left: AtomicI64::new((self.bytes / FILL_SHARE) as i64),
            ran_out: AtomicBool::new(false),
            barred: false,
        }
    }

    /// [`RowCache::fill`] for a request of a given shape (a hash of what it reads), nothing
    /// for [`SHAPE_BAR`] after a request of that shape ran out of allowance: each would
    /// otherwise put in what the last one put in, evicting it before it was read again (a
    /// `sum(rate(…))` over ten metrics of a thousand series each took 18 % longer so). What
    /// is kept still serves it meanwhile; then it fills again (newly closed hours, for a
    /// dashboard's moving window). Give the allowance back to [`RowCache::done`].
    pub fn fill_for(&self, shape: u64) -> Fill {
        let mut fill = self.fill();
        if self
            .overflowing
            .lock()
            .get(&shape)
            .is_some_and(|at| at.elapsed() < SHAPE_BAR)
        {
            fill.left.store(0, Ordering::Relaxed);
            fill.barred = true;
        }
        fill
    }

    /// Notes the shape of a request whose allowance ran out (see [`RowCache::fill_for`]).
    pub fn done(&self, shape: u64, fill: &Fill) {
        if fill.ran_out.load(Ordering::Relaxed) {
            let now = std::time::Instant::now();
            let mut shapes = self.overflowing.lock();
            if shapes.len() >= SHAPES_MAX {
                shapes.retain(|_, at| now.duration_since(*at) < SHAPE_BAR);
                if shapes.len() >= SHAPES_MAX {
                    shapes.clear();
                }
            }
            shapes.insert(shape, now);
        }
    }

    /// The row's points as last read, unless it was written since.
    pub fn get(&self, row: &[u8]) -> Option<RowPoints> {
        let got = match self.cache.get(row) {
            Some(Kept::Row(points)) => Some(points),
            _ => None,
        };
        self.count(got.is_some());
        got
    }

    /// The rows of the hour entry `key` ([`hour_key`]) as last read, unless one was written since.
    pub fn get_hour(&self, key: &[u8]) -> Option<HourRows> {
        let got = match self.cache.get(key) {
            Some(Kept::Hour(rows, _)) => Some(rows),
            _ => None,
        };
        self.count(got.is_some());
        got
    }

    /// The series of the hour entry `key` ([`hour_key`]) as last read, whether kept with
    /// their points or alone, unless one was written since.
    pub fn get_hour_series(&self, key: &[u8]) -> Option<HourSeries> {
        let got = match self.cache.get(key) {
            Some(Kept::Hour(rows, _)) => Some(HourSeries::Rows(rows)),
            Some(Kept::Tags(tags, _)) => Some(HourSeries::Tags(tags)),
            _ => None,
        };
        self.count(got.is_some());
        got
    }

    fn count(&self, hit: bool) {
        let n = if hit { &self.hits } else { &self.misses };
        n.fetch_add(1, Ordering::Relaxed);
    }

    /// For `/api/stats`: look-ups answered, look-ups not, and the weight held (bytes).
    pub fn stats(&self) -> (u64, u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
            self.cache.weight(),
        )
    }

    /// To be taken before the row (or hour) is read and given back to [`RowCache::put`] (or
    /// [`RowCache::put_hour`]). One that keeps nothing when its hour was written lately.
    pub fn ticket(&self, row: &[u8]) -> u64 {
        let written = self.stripe(row).lock();
        match self.hour_of(row) {
            Some(h) if !self.quiet(h) => NOT_KEPT,
            _ => *written,
        }
    }

    /// The base hour of a row key, or of an hour entry's key.
    fn hour_of(&self, key: &[u8]) -> Option<u32> {
        let at = self.head.checked_sub(4)?;
        key.get(at..self.head)
            .map(|b| u32::from_be_bytes(b.try_into().expect("four bytes")))
    }

    /// Whether no write to hour `h` was heard for [`QUIET`].
    fn quiet(&self, h: u32) -> bool {
        self.recent
            .lock()
            .0
            .get(&h)
            .is_none_or(|at| at.elapsed() >= self.quiet_for)
    }

    /// Keeps the row's points as read after `ticket` was taken, unless a write to a row of its
    /// stripe was heard since (the read may predate it); a write heard after drops the entry.
    /// The stripe is held meanwhile, so no write comes between the check and the insert.
    /// Whether they were put.
    pub fn put(&self, row: Vec<u8>, ticket: u64, points: RowPoints) -> bool {
        self.put_kept(row, ticket, Kept::Row(points))
    }

    /// [`RowCache::put`] for an hour entry: `rows` as read after `ticket` was taken on `key`.
    /// Whether they were put.
    pub fn put_hour(&self, key: Vec<u8>, ticket: u64, rows: HourRows) -> bool {
        let weight = hour_weight(key.len(), &rows);
        self.put_kept(key, ticket, Kept::Hour(rows, weight))
    }

    /// [`RowCache::put`] for an hour's series alone: `tags` as read after `ticket` was taken on
    /// `key`, unless the hour is kept with its points already (which serve series readers
    /// too). Whether they were put.
    pub fn put_hour_tags(&self, key: Vec<u8>, ticket: u64, tags: HourTags) -> bool {
        let weight = tags.weight(key.len());
        self.put_kept(key, ticket, Kept::Tags(tags, weight))
    }

    fn put_kept(&self, key: Vec<u8>, ticket: u64, kept: Kept) -> bool {
        let writes = self.stripe(&key).lock();
        if *writes != ticket {
            return false;
        }
        if matches!(kept, Kept::Tags(..)) && matches!(self.cache.peek(&key), Some(Kept::Hour(..))) {
            return false;
        }
        self.used.store(true, Ordering::Relaxed);
        self.cache.insert(key, kept);
        true
    }

    /// Whether what is read of `key`'s hour now may be kept (its hour has gone quiet).
    pub fn keeps(&self, key: &[u8]) -> bool {
        self.hour_of(key).is_none_or(|h| self.quiet(h))
    }

    /// Whether what is read of hour `h` (a row's base time) now may be kept.
    pub fn quiet_hour(&self, h: u32) -> bool {
        self.quiet(h)
    }

    /// The heaviest entry the cache takes: each shard refuses one heavier than about its share.
    pub fn max_entry(&self) -> u64 {
        self.bytes / SHARDS as u64 * 9 / 10
    }

    /// Heard a write to `key` (a row, or the hour entry of one): a read that took its ticket
    /// before is not kept, and what was kept is dropped.
    fn drop_written(&self, key: &[u8]) {
        let mut writes = self.stripe(key).lock();
        *writes += 1;
        // Under the stripe's lock: a put of this key before it set `used` (same lock); one
        // after sees the count moved and puts nothing.
        if self.used.load(Ordering::Relaxed) {
            self.cache.remove(key);
        }
    }
}

/// A request's allowance for filling the cache (shared by its reading threads).
pub struct Fill {
    left: AtomicI64,
    /// Something read was not kept for want of allowance.
    ran_out: AtomicBool,
    /// No allowance, for a request of a shape that ran out lately (see [`RowCache::fill_for`]).
    barred: bool,
}

impl Fill {
    /// Whether the allowance left covers `rows` typical rows (an hour every 10 s).
    pub fn covers(&self, rows: u64) -> bool {
        rows.saturating_mul(TYPICAL_ROW) <= self.left.load(Ordering::Relaxed).max(0) as u64
    }

    /// What is left of the allowance; running out is noted (see [`RowCache::fill_for`]).
    pub fn left(&self) -> u64 {
        let left = self.left.load(Ordering::Relaxed).max(0) as u64;
        if left == 0 {
            self.ran_out();
        }
        left
    }

    /// Notes that something read was not kept for want of allowance, or for outweighing what
    /// the cache takes (not for a barred request,
    /// which was given none).
    pub fn ran_out(&self) {
        if !self.barred {
            self.ran_out.store(true, Ordering::Relaxed);
        }
    }

    /// Gives back what was taken for what was not kept after all.
    pub fn give(&self, weight: u64) {
        self.left.fetch_add(weight as i64, Ordering::Relaxed);
    }

    /// Takes `weight` from the allowance; false (and nothing taken, running out noted) once it
    /// does not cover it.
    pub fn take(&self, weight: u64) -> bool {
        let w = weight as i64;
        if self.left.fetch_sub(w, Ordering::Relaxed) >= w {
            return true;
        }
        self.left.fetch_add(w, Ordering::Relaxed);
        self.ran_out();
        false
    }
}

impl RowWatcher for RowCache {
    fn watches(&self, table: &str) -> bool {
        table == self.table
    }

    fn cleared(&self, _table: &str) {
        // Every stripe moved first: a read that took its ticket before puts nothing after.
        for w in self.writes.iter() {
            *w.lock() += 1;
        }
        self.cache.clear();
    }

    fn written(&self, _table: &str, rows: &[&[u8]]) {
        // The hours written, noted first: a reader that finds its hour quiet after this takes
        // a ticket the drops below will outdate, or reads what was written.
        let mut hours: Vec<u32> = rows.iter().filter_map(|r| self.hour_of(r)).collect();
        hours.sort_unstable();
        hours.dedup();
        if !hours.is_empty() {
            let now = std::time::Instant::now();
            let mut recent = self.recent.lock();
            let (recent, pruned) = &mut *recent;
            // Pruned at most once per quiet period: an ingest of history keeps thousands of
            // hours recent, and going through them at every write would cost more than it frees.
            if recent.len() > RECENT_MAX && now.duration_since(*pruned) >= self.quiet_for {
                recent.retain(|_, at| now.duration_since(*at) < self.quiet_for);
                *pruned = now;
            }
            for h in hours {
                recent.insert(h, now);
            }
        }
        let mut hour = Vec::with_capacity(self.head + HOUR_MARK.len());
        for row in rows {
            self.drop_written(row);
            if let Some(head) = row.get(..self.head) {
                hour.clear();
                hour.extend_from_slice(head);
                hour.extend_from_slice(&HOUR_MARK);
                self.drop_written(&hour);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_store::embedded::EmbeddedStore;
    use tsgate_store::watch::watched;
    use tsgate_store::{RowMutations, TableNames};

    fn store(cache: &Arc<RowCache>) -> (tempfile::TempDir, tsgate_store::SharedStore) {
        let dir = tempfile::tempdir().unwrap();
        let inner =
            Arc::new(EmbeddedStore::open(dir.path(), &TableNames::default().specs()).unwrap());
        let s = watched(inner, cache.clone());
        (dir, s)
    }

    #[test]
    fn a_write_drops_its_rows_and_only_those() {
        let cache = Arc::new(RowCache::new(1 << 20, "tsdb", 3).unwrap());
        let (_dir, store) = store(&cache);
        let (row, other) = (b"row-a".to_vec(), b"row-b".to_vec());
        cache.put(
            row.clone(),
            cache.ticket(&row),
            Arc::from(vec![(1000, 1.5)]),
        );
        cache.put(other.clone(), cache.ticket(&other), Arc::from(Vec::new()));
        assert_eq!(cache.get(&row).as_deref(), Some(&[(1000, 1.5)][..]));
        store
            .mutate(
                "tsdb",
                vec![RowMutations::put(
                    row.clone(),
                    tsgate_schema::DATA_FAMILY,
                    vec![0, 0],
                    vec![1],
                )],
            )
            .unwrap();
        assert!(cache.get(&row).is_none(), "a written row is dropped");
        assert_eq!(
            cache.get(&other).as_deref(),
            Some(&[][..]),
            "another row stays"
        );
        // Another table's row of the same key is not this cache's.
        store
            .mutate(
                "tsdb-tree",
                vec![RowMutations::put(
                    other.clone(),
                    tsgate_schema::DATA_FAMILY,
                    vec![0],
                    vec![1],
                )],
            )
            .unwrap();
        assert!(cache.get(&other).is_some());
    }

    #[test]
    fn a_read_that_raced_a_write_is_not_kept() {
        let cache = Arc::new(RowCache::new(1 << 20, "tsdb", 3).unwrap());
        let (_dir, store) = store(&cache);
        let row = b"row-a".to_vec();
        // A reader takes its ticket and reads the row (empty); a write lands before it puts.
        let ticket = cache.ticket(&row);
        store
            .mutate(
                "tsdb",
                vec![RowMutations::put(
                    row.clone(),
                    tsgate_schema::DATA_FAMILY,
                    vec![0, 0],
                    vec![1],
                )],
            )
            .unwrap();
        cache.put(row.clone(), ticket, Arc::from(Vec::new()));
        assert!(cache.get(&row).is_none());
        // A read after the write is kept.
        cache.put(row.clone(), cache.ticket(&row), Arc::from(vec![(0, 1.0)]));
        assert!(cache.get(&row).is_some());
    }

    #[test]
    fn the_cache_holds_its_budget_and_a_request_fills_half_of_it() {
        let cache = RowCache::new(64 << 10, "tsdb", 3).unwrap();
        for i in 0..200u32 {
            let row = i.to_be_bytes().to_vec();
            cache.put(
                row.clone(),
                cache.ticket(&row),
                Arc::from(vec![(0, 0.0); 360]),
            );
        }
        assert!(
            cache.cache.weight() <= 64 << 10,
            "{} bytes held",
            cache.cache.weight()
        );
        let fill = cache.fill();
        let row = row_weight(20, 360);
        assert_eq!(
            (0..10).filter(|_| fill.take(row)).count() as u64,
            (32 << 10) / row,
            "a request fills half of it"
        );
        assert!(fill.take(1), "what is left still covers a smaller row");
    }

    #[test]
    fn a_request_shape_that_ran_out_fills_no_more() {
        let cache = RowCache::new(64 << 10, "tsdb", 3).unwrap();
        let fill = cache.fill_for(7);
        assert!(fill.take(1000));
        cache.done(7, &fill);
        assert!(cache.fill_for(7).left() > 0, "it did not run out");
        let fill = cache.fill_for(7);
        assert!(!fill.take(1 << 20));
        cache.done(7, &fill);
        let barred = cache.fill_for(7);
        assert_eq!(barred.left(), 0);
        cache.done(7, &barred);
        assert!(cache.fill_for(8).left() > 0, "another shape still fills");
        // Barred for a while, then filling again.
        cache
            .overflowing
            .lock()
            .insert(7, std::time::Instant::now() - SHAPE_BAR);
        assert!(
            cache.fill_for(7).left() > 0,
            "it fills again once barred for SHAPE_BAR"
        );
    }

    #[test]
    fn an_hour_written_lately_is_not_kept() {
        let cache = Arc::new(RowCache::new(1 << 20, "tsdb", 7).unwrap());
        let (_dir, store) = store(&cache);
        // Keys: a 3-byte metric, then the hour (4 bytes), then tags.
        let key = |hour: u32, tags: &[u8]| [&b"met"[..], &hour.to_be_bytes(), tags].concat();
        let (row, other) = (key(7200, b"ab"), key(3600, b"ab"));
        store
            .mutate(
                "tsdb",
                vec![RowMutations::put(
                    row.clone(),
                    tsgate_schema::DATA_FAMILY,
                    vec![0, 0],
                    vec![1],
                )],
            )
            .unwrap();
        let hour = hour_key(&row[..7]);
        assert!(!cache.keeps(&hour));
        assert!(!cache.put_hour(hour.clone(), cache.ticket(&hour), Arc::from(Vec::new())));
        cache.put(row.clone(), cache.ticket(&row), Arc::from(vec![(0, 1.0)]));
        assert!(
            cache.get_hour(&hour).is_none() && cache.get(&row).is_none(),
            "the hour was just written"
        );
        cache.put(
            other.clone(),
            cache.ticket(&other),
            Arc::from(vec![(0, 1.0)]),
        );
        assert!(cache.get(&other).is_some(), "another hour is quiet");
        // As if written a quiet period ago.
        let long_ago = std::time::Instant::now()
            .checked_sub(QUIET)
            .expect("the clock has run that long");
        cache.recent.lock().0.insert(7200, long_ago);
        assert!(cache.keeps(&hour));
        assert!(cache.put_hour(hour.clone(), cache.ticket(&hour), Arc::from(Vec::new())));
        assert!(cache.get_hour(&hour).is_some(), "quiet by now");
    }
}
