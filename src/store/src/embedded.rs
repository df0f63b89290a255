//! The embedded backend: HBase's data model on fjall, a maintained LSM engine.
//! One engine keyspace per table:family; keys keep HBase's order of rows (see `keycodec`; a
//! long qualifier is cut short in the key and kept whole in the value, and readers restore the
//! order of a row's cells); every value carries its 8-byte cell timestamp in front.

use super::keycodec::Qualifiers;
use super::{
    keycodec, Cell, Mutation, Reclaim, Reclaimed, Row, RowMutations, RowSeek, RowStream, Scan,
    Store, StoreError, StoreResult, TableSpec,
};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use parking_lot::RwLock;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub mod cellcodec;
mod health;
mod writeback;
pub use health::free_bytes;

pub struct EmbeddedStore {
    /// The open engine. Taken out (None) only while a failed one is opened again, and left
    /// so if that fails (the next operation tries again).
    engine: RwLock<Option<Arc<Engine>>>,
    /// Read-modify-write operations (increment, check-and-put, timestamped mutations) hold it
    /// exclusively, plain batches shared: a put can't slip between an operation's read and write.
    /// Inside it (so `close` can take it exclusively): set by `close`, after which writes fail.
    rmw: RwLock<bool>,
    clock: AtomicU64,
    dir: std::path::PathBuf,
    /// Cells deleted since the last `tidy`.
    deletes: AtomicU64,
    /// When a cell was last deleted (ms since the epoch), for `tidy`.
    last_delete_ms: AtomicU64,
    /// How long no cell must have been deleted before `tidy` rewrites (`TIDY_QUIET_MS`).
    tidy_quiet_ms: AtomicU64,
    /// How long a scan reads from one engine snapshot before it reopens its range at the next
    /// row (`SNAPSHOT_MAX_AGE_MS`).
    snapshot_max_age_ms: AtomicU64,
    /// How keys end: [`Qualifiers::Cut`] for stores made since, whole for older ones.
    form: Qualifiers,
    /// Whether compacted columns are written encoded ([`cellcodec`], `storage.encode_columns`);
    /// encoded ones are read either way.
    encode_columns: std::sync::atomic::AtomicBool,
    /// Retention judges by table, read by the engine's compaction filters ([`Store::expire_rows`]).
    expiry: Expiries,
    /// What the engine is opened with again after it failed.
    tables: Vec<TableSpec>,
    cache_bytes: u64,
    /// Free space and engine failures: whether writes are taken.
    health: health::Health,
    /// One reopening at a time.
    healing: parking_lot::Mutex<()>,
    /// The writeback pacer runs while this lives ([`writeback`]).
    _pacing: Arc<()>,
}

/// One opening of the engine: the database and every table's families in it.
struct Engine {
    db: Database,
    /// table -> [(family, keyspace)] in family order.
    tables: HashMap<String, Vec<(Vec<u8>, Keyspace)>>,
    /// Holds no data: written to after a `reclaim`, see [`EmbeddedStore::release_replaced`].
    settle: Keyspace,
}

/// The keyspace behind [`EmbeddedStore::release_replaced`] (named apart from every table's).
const SETTLE_KEYSPACE: &str = "tsgate#settle";

/// How long a `reclaim` waits for the engine to delete the files its rewrite replaced: a read
/// under way when the rewrite ended holds them (a query, at most `query.timeout_ms`); past
/// this they go at the engine's next flush or compaction after that read ends.
const RELEASE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// The `reclaim` pass under way on this thread: the engine runs a major compaction on the
/// thread that asks for it, so the compaction filter finds here the rate limit and the row
/// observer of that pass, while the engine's own compactions (on its worker threads) find none.
struct Pass {
    throttle: crate::throttle::Throttle,
    on_row: Option<super::RowObserver>,
}

thread_local! {
    static PASS: std::cell::RefCell<Option<Pass>> = const { std::cell::RefCell::new(None) };
}

/// Clears this thread's [`Pass`] when dropped (also if the rewrite panics).
struct PassGuard;

impl PassGuard {
    fn start(pass: Pass) -> PassGuard {
        PASS.with(|p| *p.borrow_mut() = Some(pass));
        PassGuard
    }

    fn finish(self) -> Option<Pass> {
        PASS.with(|p| p.borrow_mut().take())
    }
}

impl Drop for PassGuard {
    fn drop(&mut self) {
        PASS.with(|p| p.borrow_mut().take());
    }
}

type Expiries = std::sync::Arc<RwLock<HashMap<String, super::RowExpiry>>>;

/// Retention in the engine: a compaction filter on every keyspace that drops the cells of rows
/// its table's judge names expired, by key alone (values are never read). Each compaction asks
/// the judge once per row.
struct ExpiryFactory {
    table: String,
    /// A judge that panics leaves the map as it was (only `expire_rows` writes it).
    expiry: std::panic::AssertUnwindSafe<Expiries>,
}

impl fjall::compaction::filter::Factory for ExpiryFactory {
    fn name(&self) -> &str {
        "tsgate-retention"
    }

    fn make_filter(
        &self,
        _ctx: &fjall::compaction::filter::Context,
    ) -> Box<dyn fjall::compaction::filter::CompactionFilter> {
        Box::new(ExpiryFilter {
            judge: self.expiry.read().get(&self.table).cloned(),
            last: Vec::new(),
            expired: false,
            row: Vec::new(),
        })
    }
}

struct ExpiryFilter {
    judge: Option<super::RowExpiry>,
    /// The last row judged, as encoded in its keys, and the verdict.
    last: Vec<u8>,
    expired: bool,
    row: Vec<u8>,
}

impl fjall::compaction::filter::CompactionFilter for ExpiryFilter {
    fn filter_item(
        &mut self,
        item: fjall::compaction::filter::ItemAccessor<'_>,
        ctx: &fjall::compaction::filter::Context,
    ) -> fjall::compaction::filter::CompactionFilterResult {
        use fjall::compaction::filter::Verdict;
        let Some(judge) = &self.judge else {
            return Ok(Verdict::Keep);
        };
        let key = item.key();
        let Some(end) = keycodec::row_end(key) else {
            return Ok(Verdict::Keep);
        };
        let new_row = self.last.as_slice() != &key[..end] || self.last.is_empty();
        if new_row {
            self.last.clear();
            self.last.extend_from_slice(&key[..end]);
            keycodec::unescape_row(&key[..end], &mut self.row);
            self.expired = judge(&self.row);
        }
        PASS.with(|p| {
            if let Some(p) = p.borrow_mut().as_mut() {
                if new_row {
                    if let Some(f) = &mut p.on_row {
                        f(&self.row, self.expired);
                    }
                }
                let value = item.value().map_or(0, |v| v.len());
                p.throttle.take((key.len() + value) as u64);
            }
        });
        Ok(match (self.expired, ctx.is_last_level) {
            (false, _) => Verdict::Keep,
            // Nothing older lies below the last level, so no tombstone is needed there; above
            // it one hides the older versions until they are compacted away in turn.
            (true, true) => Verdict::Destroy,
            (true, false) => Verdict::Remove,
        })
    }
}

/// The table a keyspace holds (its name is `table:family`, see [`keyspace_name`]).
fn table_of_keyspace(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(t, _)| t)
}

/// Every level's data blocks are LZ4-compressed (the engine's default leaves the first two
/// levels raw, which is where a small or freshly written database keeps all its data); this is
/// the embedded counterpart of HBase's column-family compression.
/// Data blocks of 32 KiB in the deeper levels, where data settles: a compacted hour of one
/// series is 1–4 KiB, so blocks of several rows compress far better than the engine's 4 KiB
/// default (5.2 vs 7.3 bytes/point on the bench set), and reads there are scans. Fresh data in
/// the first levels keeps 4 KiB blocks: the compactor reads those rows back one by one.
const BLOCK_SIZE: u32 = 32 * 1024;
const SMALL_BLOCK: u32 = 4 * 1024;

/// The engine's 32 MiB default holds well under one hour of 10,000 series once decompressed,
/// so every dashboard refresh read its blocks again (a profile showed two thirds of a query's
/// time in copying blocks from the page cache and checksumming them).
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

/// `tidy` rewrites tables up to this size once this many cells were deleted since it last did:
/// a compaction pass over closed hours deletes every partial column it merged, and until the
/// engine's own compaction reaches the last level every scan steps over those tombstones
/// (10–35 % of a scan's time on the bench set). Larger tables are left to the engine.
const TIDY_MAX: u64 = 64 << 20;
const TIDY_MIN_DELETES: u64 = 10_000;
/// ... and once no cell was deleted for this long (see `tidy`): twice the default flush tick,
/// at each of which every flusher compacts for at most 300 ms. (With a much longer
/// `write.flush_interval_ms` a tidy may come between two flushers' passes, as it always could
/// before: the later deletes then wait for the next tidy or the engine's compaction.)
const TIDY_QUIET_MS: u64 = 1_000;

/// Milliseconds on a monotonic clock (a wall clock stepped back would hold a tidy back).
fn now_ms() -> u64 {
    static START: std::sync::LazyLock<std::time::Instant> =
        std::sync::LazyLock::new(std::time::Instant::now);
    // Plus one: a store that never deleted (0) is quiet from the start.
    START.elapsed().as_millis() as u64 + TIDY_QUIET_MS + 1
}

/// A scan reopens its range at a row boundary once it has read this long from one snapshot.
/// An open engine iterator pins its snapshot, and with it every memtable sealed and every
/// table version replaced while it lives, in memory: `tsgate rollup` reading a year of one
/// metric (1,000 series) in one scan for 25 minutes, writing rollup cells meanwhile, grew to
/// 3.4 GB. Each row is still read from one snapshot; rows after a reopen see later writes, as
/// an HBase scan crossing regions may.
const SNAPSHOT_MAX_AGE_MS: u64 = 1_000;

/// Tables up to this size are rewritten into one sorted run at a clean shutdown.
const MAJOR_COMPACT_ON_CLOSE_MAX: u64 = 1 << 30;

fn keyspace_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default()
        .data_block_compression_policy(fjall::config::CompressionPolicy::all(
            fjall::CompressionType::Lz4,
        ))
        .data_block_size_policy(fjall::config::BlockSizePolicy::new([
            SMALL_BLOCK,
            SMALL_BLOCK,
            SMALL_BLOCK,
            BLOCK_SIZE,
        ]))
}

/// Writes after `close` are refused: `close` may have emptied the engine's journal.
fn open_for_writes(closed: bool, table: &str) -> StoreResult<()> {
    if closed {
        return Err(StoreError::Engine {
            op: "write",
            table: table.to_string(),
            msg: "the store is closed".into(),
        });
    }
    Ok(())
}

fn engine_err<'a>(op: &'static str, table: &'a str) -> impl Fn(fjall::Error) -> StoreError + 'a {
    move |e| StoreError::Engine {
        op,
        table: table.to_string(),
        msg: e.to_string(),
    }
}

/// Opens the engine under `dir` with `tables`' keyspaces, the key form being the one found
/// there (`new` for an empty store).
fn open_engine(
    dir: &Path,
    tables: &[TableSpec],
    cache_bytes: u64,
    new: Qualifiers,
    expiry: &Expiries,
) -> StoreResult<(Engine, Qualifiers)> {
    let assign = expiry.clone();
    let db = Database::builder(dir)
        .cache_size(cache_bytes)
        .with_compaction_filter_factories(Arc::new(move |keyspace: &str| {
            let f: Arc<dyn fjall::compaction::filter::Factory> = Arc::new(ExpiryFactory {
                table: table_of_keyspace(keyspace).to_string(),
                expiry: std::panic::AssertUnwindSafe(assign.clone()),
            });
            Some(f)
        }))
        .open()
        .map_err(|e| match e {
            fjall::Error::Locked => StoreError::Locked(dir.display().to_string()),
            // The I/O error's own text ("Permission denied (os error 13)"), not its Debug.
            fjall::Error::Io(io) => StoreError::Engine {
                op: "open",
                table: dir.display().to_string(),
                msg: io.to_string(),
            },
            e => StoreError::Engine {
                op: "open",
                table: dir.display().to_string(),
                msg: e.to_string(),
            },
        })?;
    let form = key_form(&db, tables, new);
    let settle = db
        .keyspace(SETTLE_KEYSPACE, KeyspaceCreateOptions::default)
        .map_err(engine_err("open", SETTLE_KEYSPACE))?;
    let mut map = HashMap::new();
    for t in tables {
        let mut fams = Vec::new();
        for f in &t.families {
            let name = keyspace_name(&t.name, f, form);
            let ks = db
                .keyspace(&name, keyspace_options)
                .map_err(engine_err("open", &t.name))?;
            fams.push((f.to_vec(), ks));
        }
        fams.sort_by(|a, b| a.0.cmp(&b.0));
        map.insert(t.name.clone(), fams);
    }
    Ok((
        Engine {
            db,
            tables: map,
            settle,
        },
        form,
    ))
}

impl Engine {
    /// Every table's every family.
    fn keyspaces(&self) -> impl Iterator<Item = &Keyspace> {
        self.tables
            .values()
            .flat_map(|f| f.iter().map(|(_, ks)| ks))
    }

    /// Waits until the engine has deleted `old` (the table files a rewrite replaced), at most
    /// `patience` (with none, it still makes the one write below); whether it did.
    ///
    /// The engine keeps each replaced version of a keyspace (and so its files) in a list until
    /// its snapshot watermark passes the version that replaced it, and it moves that watermark
    /// and prunes the list only when it seals a memtable (or after 10,000 reads). A rewrite
    /// publishes its version at the newest sequence number, so on a quiet store nothing ever
    /// did, and the old files stayed beside the new ones until a restart. One write here
    /// takes a sequence number past the rewrite's, and sealing that memtable moves the
    /// watermark and prunes every keyspace's list. A read that was open meanwhile holds the
    /// watermark back until it ends, hence the retries.
    fn release_replaced(
        &self,
        old: &[std::path::PathBuf],
        patience: std::time::Duration,
    ) -> StoreResult<bool> {
        let deadline = std::time::Instant::now() + patience;
        let mut pause = std::time::Duration::from_millis(20);
        loop {
            self.settle
                .insert(b"settle", now_ms().to_be_bytes())
                .map_err(engine_err("reclaim", SETTLE_KEYSPACE))?;
            self.settle
                .rotate_memtable()
                .map_err(engine_err("reclaim", SETTLE_KEYSPACE))?;
            if old.iter().all(|p| !p.exists()) {
                return Ok(true);
            }
            if std::time::Instant::now() + pause > deadline {
                return Ok(false);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_secs(1));
        }
    }

    fn families(&self, table: &str) -> StoreResult<&Vec<(Vec<u8>, Keyspace)>> {
        self.tables
            .get(table)
            .ok_or_else(|| StoreError::NoSuchTable(table.to_string()))
    }

    fn family(&self, table: &str, family: &[u8]) -> StoreResult<&Keyspace> {
        self.families(table)?
            .iter()
            .find(|(f, _)| f == family)
            .map(|(_, k)| k)
            .ok_or_else(|| StoreError::NoSuchFamily {
                table: table.to_string(),
                family: String::from_utf8_lossy(family).into(),
            })
    }

    fn selected<'a>(
        &'a self,
        table: &str,
        families: &[impl AsRef<[u8]>],
    ) -> StoreResult<Vec<(&'a [u8], &'a Keyspace)>> {
        let all = self.families(table)?;
        if families.is_empty() {
            return Ok(all.iter().map(|(f, k)| (f.as_slice(), k)).collect());
        }
        let mut out = Vec::new();
        for (f, k) in all {
            if families.iter().any(|x| x.as_ref() == f.as_slice()) {
                out.push((f.as_slice(), k));
            }
        }
        if out.len() != families.len() {
            let missing = families
                .iter()
                .find(|x| !all.iter().any(|(f, _)| f.as_slice() == x.as_ref()));
            return Err(StoreError::NoSuchFamily {
                table: table.into(),
                family: missing
                    .map(|m| String::from_utf8_lossy(m.as_ref()).into_owned())
                    .unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// Writes the memtables of `keyspaces` out (waiting up to `patience`), then rewrites each
    /// whose tables then hold at most `max_bytes` into a single sorted run: the row rewrites of
    /// compaction (partial columns replaced by compacted ones) leave their old versions and
    /// tombstones in the engine until then, and the newest tombstones are in the memtable.
    fn write_out_and_rewrite(
        &self,
        keyspaces: &[&Keyspace],
        patience: std::time::Duration,
        max_bytes: u64,
        err: &dyn Fn(fjall::Error) -> StoreError,
    ) -> StoreResult<()> {
        for ks in keyspaces {
            ks.rotate_memtable().map_err(err)?;
        }
        let deadline = std::time::Instant::now() + patience;
        let settled = || {
            self.db.outstanding_flushes() == 0
                && keyspaces.iter().all(|k| k.sealed_memtable_count() == 0)
        };
        while !settled() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for ks in keyspaces.iter().filter(|k| k.disk_space() <= max_bytes) {
            ks.major_compact().map_err(err)?;
        }
        Ok(())
    }
}

impl EmbeddedStore {
    /// Opens (creating if needed) the store under `dir` with the given tables. Fails if another
    /// process holds the directory.
    pub fn open(dir: &Path, tables: &[TableSpec]) -> StoreResult<EmbeddedStore> {
        Self::open_with_cache(dir, tables, DEFAULT_CACHE_BYTES)
    }

    /// As [`EmbeddedStore::open`], with a block cache of `cache_bytes` (`storage.cache_mb`).
    pub fn open_with_cache(
        dir: &Path,
        tables: &[TableSpec],
        cache_bytes: u64,
    ) -> StoreResult<EmbeddedStore> {
        Self::open_in_form(dir, tables, cache_bytes, Qualifiers::Cut)
    }

    /// As [`EmbeddedStore::open_with_cache`], making a new store in the key form `new`; an
    /// existing store keeps its own. (Tests make stores of the earlier, whole form with it.)
    pub fn open_in_form(
        dir: &Path,
        tables: &[TableSpec],
        cache_bytes: u64,
        new: Qualifiers,
    ) -> StoreResult<EmbeddedStore> {
        let expiry: Expiries = Default::default();
        let (engine, form) = open_engine(dir, tables, cache_bytes, new, &expiry)?;
        let pacing = Arc::new(());
        writeback::start(dir.to_path_buf(), Arc::downgrade(&pacing));
        Ok(EmbeddedStore {
            engine: RwLock::new(Some(Arc::new(engine))),
            rmw: RwLock::new(false),
            clock: AtomicU64::new(0),
            dir: dir.to_path_buf(),
            deletes: AtomicU64::new(0),
            last_delete_ms: AtomicU64::new(0),
            tidy_quiet_ms: AtomicU64::new(TIDY_QUIET_MS),
            snapshot_max_age_ms: AtomicU64::new(SNAPSHOT_MAX_AGE_MS),
            form,
            encode_columns: std::sync::atomic::AtomicBool::new(true),
            expiry,
            tables: tables.to_vec(),
            cache_bytes,
            health: health::Health::new(dir),
            healing: parking_lot::Mutex::new(()),
            _pacing: pacing,
        })
    }

    /// Refuses writes while less than `bytes` is free in the store's directory
    /// (`storage.min_free_mb`; 0: only when the engine itself runs out of space).
    pub fn set_min_free_bytes(&self, bytes: u64) {
        self.health.set_min_free(bytes);
    }

    /// Whether compacted columns are written encoded (`storage.encode_columns`, on by
    /// default); cells already written read the same either way.
    pub fn set_encode_columns(&self, on: bool) {
        self.encode_columns.store(on, Ordering::Relaxed);
    }

    /// Times the engine was opened again after it failed.
    pub fn reopen_count(&self) -> u64 {
        self.health.reopened.load(Ordering::Relaxed)
    }

    /// The engine to read from. Only while a failed engine could not be opened again is there
    /// none (this call tries again first).
    fn engine(&self) -> StoreResult<Arc<Engine>> {
        if let Some(e) = self.engine.read().as_ref() {
            return Ok(e.clone());
        }
        self.heal();
        self.engine
            .read()
            .clone()
            .ok_or_else(|| StoreError::Refusing(self.refusal()))
    }

    /// The engine, unless it failed and could not be opened again yet (free space aside).
    fn healthy(&self) -> StoreResult<Arc<Engine>> {
        if self.health.failed() {
            self.heal();
            if self.health.failed() {
                return Err(StoreError::Refusing(self.refusal()));
            }
        }
        self.engine()
    }

    fn refusal(&self) -> super::Refusal {
        self.health.refusal().unwrap_or_else(|| super::Refusal {
            reason: "engine_failed",
            detail: format!(
                "the storage engine in {} is being reopened",
                self.dir.display()
            ),
        })
    }

    /// The engine to write to, if writes are taken now: the engine is healthy (a failed one is
    /// opened again first, when there is room) and free space is above `storage.min_free_mb`.
    fn writable(&self) -> StoreResult<Arc<Engine>> {
        let e = self.healthy()?;
        self.health.check_space().map_err(StoreError::Refusing)?;
        self.health.taking_writes();
        Ok(e)
    }

    /// An engine error of a write, noting a poisoned engine (see [`health`]).
    fn write_err<'a>(
        &'a self,
        op: &'static str,
        table: &'a str,
    ) -> impl Fn(fjall::Error) -> StoreError + 'a {
        move |e| {
            if health::poisons(&e) {
                self.health
                    .engine_failed(&e.to_string(), health::is_disk_full(&e));
            }
            engine_err(op, table)(e)
        }
    }

    /// Opens a failed engine again, when there is room and nothing uses the failed one: fjall
    /// cannot unpoison a database, only a new opening recovers. Everything whose write was
    /// answered is in the engine's journal (batches are handed to the OS before they are
    /// applied, see `mutate`), and the opening replays it; a batch whose write failed was
    /// never applied, and a torn one at the journal's end is dropped by that replay. Whoever
    /// writes goes on retrying (the flusher's points wait in the write-ahead log).
    fn heal(&self) {
        let Some(_one) = self.healing.try_lock() else {
            return;
        };
        let Some(free) = self.health.may_reopen() else {
            return;
        };
        let mut slot = self.engine.write();
        // Operations and scans under way hold the engine (a scan's rows are read lazily):
        // the database is only closed once it is free, its directory lock with it.
        if slot.as_ref().is_some_and(|e| Arc::strong_count(e) > 1) {
            return;
        }
        drop(slot.take());
        // The engine's worker threads let go of its journal just after they are counted out.
        std::thread::sleep(std::time::Duration::from_millis(50));
        match open_engine(
            &self.dir,
            &self.tables,
            self.cache_bytes,
            self.form,
            &self.expiry,
        ) {
            Ok((engine, _)) => {
                *slot = Some(Arc::new(engine));
                self.health.reopened();
                tracing::warn!(dir = %self.dir.display(), free = %health::mib(free), "storage engine reopened after it failed");
            }
            Err(e) => {
                tracing::error!(dir = %self.dir.display(), error = %e, "reopening the storage engine failed; trying again");
            }
        }
    }

    /// A strictly increasing ms clock: cell timestamps order writes made by this process.
    fn now(&self) -> u64 {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut prev = self.clock.load(Ordering::Relaxed);
        loop {
            let next = wall.max(prev + 1);
            match self
                .clock
                .compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(p) => prev = p,
            }
        }
    }

    /// Copies every keyspace as the engine's cross-keyspace snapshot sees it (one sequence
    /// number: writes after it are not in the copy, writes before it all are) into a new
    /// engine under `dir`, each keyspace bulk-loaded in key order (the engine's ingestion
    /// writes sorted tables directly, no journal). fjall has no checkpoint to a directory;
    /// hard links of its table files would need the file set pinned against compaction, which
    /// its API does not offer. Keyspace names are copied as they are, so the copy keeps this
    /// store's key form. Returns the entries copied.
    pub fn snapshot_into(&self, dir: &Path) -> StoreResult<u64> {
        let err = |e: fjall::Error| StoreError::Engine {
            op: "snapshot",
            table: dir.display().to_string(),
            msg: e.to_string(),
        };
        if dir.join("current").exists() || dir.read_dir().is_ok_and(|mut d| d.next().is_some()) {
            return Err(StoreError::Engine {
                op: "snapshot",
                table: dir.display().to_string(),
                msg: "the directory exists and is not empty".into(),
            });
        }
        let engine = self.engine()?;
        let snap = engine.db.snapshot();
        let target = Database::builder(dir).open().map_err(err)?;
        let mut copied = 0u64;
        let mut names: Vec<String> = engine
            .db
            .list_keyspace_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        names.sort();
        for name in names {
            let src = engine.db.keyspace(&name, keyspace_options).map_err(err)?;
            let dst = target.keyspace(&name, keyspace_options).map_err(err)?;
            let mut load = dst.start_ingestion().map_err(err)?;
            for item in fjall::Readable::iter(&snap, &src) {
                let (k, v) = item.into_inner().map_err(err)?;
                load.write(k, v).map_err(err)?;
                copied += 1;
            }
            load.finish().map_err(err)?;
        }
        target.persist(PersistMode::SyncAll).map_err(err)?;
        Ok(copied)
    }

    /// How long no cell must have been deleted before [`Store::tidy`] rewrites (1 s unless
    /// set). Tests lengthen it: a tidy then certainly comes within it, however slowly a loaded
    /// machine runs the test.
    pub fn set_tidy_quiet(&self, quiet: std::time::Duration) {
        self.tidy_quiet_ms
            .store(quiet.as_millis() as u64, Ordering::Relaxed);
    }

    /// How long a scan reads from one snapshot of the engine (1 s unless set); tests set 0
    /// to make every row a scan returns come from a snapshot of its own.
    pub fn set_snapshot_max_age(&self, age: std::time::Duration) {
        self.snapshot_max_age_ms
            .store(age.as_millis() as u64, Ordering::Relaxed);
    }

    /// Whether this store's keys cut long qualifiers ([`Qualifiers::Cut`]).
    pub fn cuts_qualifiers(&self) -> bool {
        self.form == Qualifiers::Cut
    }

    /// How many engine tables hold `table`'s families now (diagnostics and tests: a `tidy`
    /// leaves one per family).
    pub fn engine_tables(&self, table: &str) -> StoreResult<usize> {
        Ok(self
            .engine()?
            .families(table)?
            .iter()
            .map(|(_, ks)| ks.table_count())
            .sum())
    }

    fn empty_journal(&self) -> std::io::Result<()> {
        let journals: Vec<_> = std::fs::read_dir(&self.dir)?
            .map(|e| e.map(|e| e.path()))
            .filter(|p| {
                p.as_ref()
                    .map_or(true, |p| p.extension().is_some_and(|x| x == "jnl"))
            })
            .collect::<Result<_, _>>()?;
        if let [active] = journals.as_slice() {
            let f = std::fs::OpenOptions::new().write(true).open(active)?;
            f.set_len(0)?;
            f.sync_all()?;
        }
        Ok(())
    }

    fn read_cell(
        &self,
        table: &str,
        ks: &Keyspace,
        row: &[u8],
        q: &[u8],
    ) -> StoreResult<Option<Vec<u8>>> {
        let key = self.key(row, q);
        let Some(v) = ks.get(&key).map_err(engine_err("get", table))? else {
            return Ok(None);
        };
        let (_, stored_q, value) =
            self.unstored(&key[key.len() - self.form.in_key_len(q.len())..], &v);
        // A cut key names its qualifier by hash: the whole one it holds must be this one.
        Ok((*stored_q == *q).then(|| value.into_owned()))
    }

    /// The cell timestamp of every key of `row` in `ks`: one range read.
    fn row_versions(
        &self,
        table: &str,
        ks: &Keyspace,
        row: &[u8],
    ) -> StoreResult<HashMap<Vec<u8>, u64>> {
        let mut cells = HashMap::new();
        for g in ks.prefix(keycodec::row_prefix(row)) {
            let (k, v) = g.into_inner().map_err(engine_err("mutate_at", table))?;
            cells.insert(k.to_vec(), split_stamp(&v).0);
        }
        Ok(cells)
    }

    fn key(&self, row: &[u8], q: &[u8]) -> Vec<u8> {
        keycodec::encode(row, q, self.form)
    }

    fn stored(&self, ts: u64, q: &[u8], value: &[u8]) -> Vec<u8> {
        let encode = self.encode_columns.load(Ordering::Relaxed);
        stored(ts, q, value, self.form, encode)
    }

    fn unstored<'a>(&self, in_key: &'a [u8], v: &'a [u8]) -> Unstored<'a> {
        unstored(in_key, v, self.form)
    }

    /// A scan's cell stream in each family it reads.
    /// [`Store::scan_rows`], and with `points` [`Store::scan_points`]: a row of one encoded
    /// column is lent as its points when they decode so, without making its bytes.
    fn lend_rows(
        &self,
        table: &str,
        scan: &Scan,
        points: bool,
        visit: &mut super::PointsVisitor<'_>,
    ) -> StoreResult<()> {
        let engine = self.engine()?;
        if engine.selected(table, &scan.families)?.len() != 1 {
            // Rows spread over several families are merged (and copied) by `scan`.
            return super::visit_rows(self.scan(table, scan)?, &mut |key, cells| {
                visit(key, super::LentRow::Cells(cells))
            });
        }
        let (family, mut cells) = self
            .family_cells(&engine, table, scan)?
            .pop()
            .expect("one family");
        let family = family.as_slice();
        let mut left = scan.limit.unwrap_or(usize::MAX);
        // The row being gathered: its key and its cells, lent to `visit` once it is complete.
        let mut row: Vec<u8> = Vec::new();
        let mut raw: Vec<RawCell> = Vec::new();
        let mut decoded_points = Vec::new();
        while left > 0 {
            let next = cells.next_cell();
            if !matches!(next, Some(Ok((_, false)))) && !raw.is_empty() {
                decoded_points.clear();
                let go_on =
                    if points && raw.len() == 1 && raw[0].points(self.form, &mut decoded_points) {
                        visit(&row, super::LentRow::Points(&decoded_points))?
                    } else {
                        for c in &mut raw {
                            c.decode(self.form);
                        }
                        let mut lent: Vec<super::CellRef> =
                            raw.iter().map(|c| c.lend(family, self.form)).collect();
                        in_qualifier_order(&mut lent, |c| c.qualifier);
                        visit(&row, super::LentRow::Cells(&lent))?
                    };
                if !go_on {
                    return Ok(());
                }
                raw.clear();
                left -= 1;
                if left == 0 {
                    break;
                }
            }
            match next {
                None => break,
                Some(Err(e)) => return Err(e),
                Some(Ok((c, first))) => {
                    if first {
                        row.clone_from(&cells.row);
                    }
                    raw.push(c);
                }
            }
        }
        Ok(())
    }

    fn family_cells(
        &self,
        engine: &Arc<Engine>,
        table: &str,
        scan: &Scan,
    ) -> StoreResult<Vec<(Vec<u8>, FamilyCells)>> {
        let start = keycodec::row_bound(&scan.start);
        let stop = (!scan.stop.is_empty()).then(|| keycodec::row_bound(&scan.stop));
        // A seeker takes exactly the rows the regex accepts: with one, the regex (and its
        // compilation, per scan) is not needed.
        let filter = match scan.seek {
            Some(_) => None,
            None => scan
                .row_regex
                .as_deref()
                .map(compile_row_regex)
                .transpose()?,
        };
        Ok(engine
            .selected(table, &scan.families)?
            .into_iter()
            .map(|(f, ks)| {
                (
                    f.to_vec(),
                    FamilyCells::new(
                        engine,
                        ks,
                        table,
                        &start,
                        stop.clone(),
                        filter.clone(),
                        scan.seek.clone(),
                        QualifierSeek::new(&scan.qualifier_prefixes),
                        self.form,
                        std::time::Duration::from_millis(
                            self.snapshot_max_age_ms.load(Ordering::Relaxed),
                        ),
                    ),
                )
            })
            .collect())
    }
}

/// Every file under `dir`.
fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        // A keyspace that never flushed has no folder of tables yet.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for e in entries {
        let e = e?;
        if e.file_type()?.is_dir() {
            files_under(&e.path(), out)?;
        } else {
            out.push(e.path());
        }
    }
    Ok(())
}

/// What the engine calls the keyspace of a table's family. A store whose keys cut long
/// qualifiers names its keyspaces with a suffix, so that the form is told by the engine's own
/// records (no file beside them to lose or mismatch), and a tsgate from before the cut form
/// opening such a store finds no data rather than misreading it.
fn keyspace_name(table: &str, family: &[u8], form: Qualifiers) -> String {
    let name = format!("{table}:{}", String::from_utf8_lossy(family));
    match form {
        Qualifiers::Whole => name,
        Qualifiers::Cut => name + CUT_SUFFIX,
    }
}

const CUT_SUFFIX: &str = "#cut";

/// How an opened database's store ends its keys: cut if it has a keyspace of the cut form,
/// whole if it has only keyspaces of the earlier form, `new` for an empty one.
fn key_form(db: &Database, tables: &[TableSpec], new: Qualifiers) -> Qualifiers {
    let has = |form| {
        tables.iter().any(|t| {
            t.families
                .iter()
                .any(|f| db.keyspace_exists(&keyspace_name(&t.name, f, form)))
        })
    };
    if has(Qualifiers::Cut) {
        Qualifiers::Cut
    } else if has(Qualifiers::Whole) {
        Qualifiers::Whole
    } else {
        new
    }
}

/// A cell as the engine stores it: the cell's timestamp (8 bytes, big-endian), then, when its
/// key holds a cut qualifier, either its column encoded (with `encode`, when [`cellcodec`]
/// makes it smaller; it starts with [`cellcodec::MARKER`]) or the whole qualifier's length
/// (4 bytes) and bytes, then its value. Short qualifiers are whole in the key, and their
/// columns (at most 16 points) are left as they are.
fn stored(ts: u64, q: &[u8], value: &[u8], form: Qualifiers, encode: bool) -> Vec<u8> {
    let cut = form.cuts(q.len());
    let mut v = Vec::with_capacity(8 + if cut { 4 + q.len() } else { 0 } + value.len());
    v.extend_from_slice(&ts.to_be_bytes());
    if cut {
        if encode && cellcodec::encode(q, value, &mut v) {
            return v;
        }
        v.extend_from_slice(&(q.len() as u32).to_be_bytes());
        v.extend_from_slice(q);
    }
    v.extend_from_slice(value);
    v
}

/// A stored cell's (timestamp, qualifier, value): borrowed from the engine's bytes, or decoded
/// from an encoded column.
type Unstored<'a> = (u64, Cow<'a, [u8]>, Cow<'a, [u8]>);

/// A stored cell's parts, its key ending in `in_key` (see [`stored`]).
enum Parts<'a> {
    Plain(u64, &'a [u8], &'a [u8]),
    /// An encoded column, from its marker on.
    Encoded(u64, &'a [u8]),
}

impl Parts<'_> {
    fn timestamp(&self) -> u64 {
        match self {
            Parts::Plain(ts, ..) | Parts::Encoded(ts, _) => *ts,
        }
    }
}

fn parts<'a>(in_key: &'a [u8], v: &'a [u8], form: Qualifiers) -> Parts<'a> {
    let (ts, rest) = split_stamp(v);
    if !form.cuts(in_key.len()) {
        return Parts::Plain(ts, in_key, rest);
    }
    if rest.first() == Some(&cellcodec::MARKER) {
        return Parts::Encoded(ts, rest);
    }
    match rest.split_first_chunk::<4>() {
        Some((n, tail)) if tail.len() >= u32::from_be_bytes(*n) as usize => {
            let (q, value) = tail.split_at(u32::from_be_bytes(*n) as usize);
            Parts::Plain(ts, q, value)
        }
        // Not what this store writes: shown as it is rather than dropped.
        _ => Parts::Plain(ts, in_key, rest),
    }
}

/// A stored cell's (timestamp, qualifier, value), its key ending in `in_key` (see [`stored`]).
fn unstored<'a>(in_key: &'a [u8], v: &'a [u8], form: Qualifiers) -> Unstored<'a> {
    match parts(in_key, v, form) {
        Parts::Plain(ts, q, value) => (ts, q.into(), value.into()),
        Parts::Encoded(ts, body) => match decoded(body) {
            Some((q, value)) => (ts, q.into(), value.into()),
            // Not what this store writes: shown as it is rather than dropped.
            None => (ts, in_key.into(), body.into()),
        },
    }
}

fn decoded(body: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (mut q, mut value) = (Vec::new(), Vec::new());
    cellcodec::decode(body, &mut q, &mut value).map(|()| (q, value))
}

/// Puts a row's cells (of one family) in qualifier order when cut keys left them out of it.
fn in_qualifier_order<T>(cells: &mut [T], q: impl Fn(&T) -> &[u8]) {
    if !cells.is_sorted_by(|a, b| q(a) <= q(b)) {
        cells.sort_by(|a, b| q(a).cmp(q(b)));
    }
}

/// A stored value's cell timestamp and value (a value too short to carry a stamp is all value).
fn split_stamp(v: &[u8]) -> (u64, &[u8]) {
    match v.split_first_chunk::<8>() {
        Some((ts, value)) => (u64::from_be_bytes(*ts), value),
        None => (0, v),
    }
}

/// The keys from `from` on. The scan's stop is checked by the caller, key by key: an upper
/// bound here would make the engine seek it in every table when the range opens, which costs
/// as much as the lower seek, while a short scan usually ends inside a block already read.
fn range(ks: &Keyspace, from: Vec<u8>) -> fjall::Iter {
    ks.range(from..)
}

/// A scan's qualifier prefixes as the engine's keys hold them: cut to [`keycodec::CUT_AT`]
/// bytes (a key ends in at most that many bytes of its qualifier before a cut one's hash), sorted,
/// and without those another one starts (they pass nothing more). A key whose in-key
/// qualifier starts with none of them holds no cell that passes; one that does is checked
/// exactly against the scan's own prefixes when they or its qualifier were cut.
struct QualifierSeek {
    /// The scan's prefixes, for the exact check.
    exact: Vec<Vec<u8>>,
    cut: Vec<Vec<u8>>,
    /// Whether some prefix is longer than the cut, so a passing key needs the exact check.
    long: bool,
}

/// Keys of a kept row stepped over one by one before a miss seeks instead: reopening the range
/// is a seek in every engine table, which costs about as much as stepping over a handful of
/// keys, while a year's `1d` rollup row holds 365 keys of each aggregator a query may skip.
const STEP_BEFORE_SEEK: u32 = 8;

/// What a [`QualifierSeek`] says of one key of a kept row.
enum CellVerdict<'a> {
    Pass,
    /// No cell from here to the next key starting with this (cut) prefix passes; None: none
    /// in the rest of the row.
    MissUntil(Option<&'a [u8]>),
    /// This cell fails (a cut qualifier checked whole), later ones may pass.
    Miss,
}

impl QualifierSeek {
    /// None when every cell passes.
    fn new(prefixes: &[Vec<u8>]) -> Option<QualifierSeek> {
        if prefixes.is_empty() || prefixes.iter().any(|p| p.is_empty()) {
            return None;
        }
        let mut cut: Vec<Vec<u8>> = prefixes
            .iter()
            .map(|p| p[..p.len().min(keycodec::CUT_AT)].to_vec())
            .collect();
        cut.sort();
        cut.dedup();
        // Sorted, a prefix that another starts with follows it directly (or after others that
        // start with it too).
        let mut minimal: Vec<Vec<u8>> = Vec::with_capacity(cut.len());
        for p in cut {
            if !minimal.last().is_some_and(|m| p.starts_with(m)) {
                minimal.push(p);
            }
        }
        Some(QualifierSeek {
            exact: prefixes.to_vec(),
            cut: minimal,
            long: prefixes.iter().any(|p| p.len() > keycodec::CUT_AT),
        })
    }

    /// The verdict on a key whose qualifier ends the key as `in_key`; `whole` gives its whole
    /// qualifier when the key holds a cut one.
    fn judge<'a>(
        &'a self,
        in_key: &[u8],
        cut_key: bool,
        whole: impl FnOnce() -> bool,
    ) -> CellVerdict<'a> {
        // The first prefix after the in-key qualifier; the one before it is the only one it
        // may start with.
        let at = self.cut.partition_point(|p| p.as_slice() <= in_key);
        if at > 0 && in_key.starts_with(&self.cut[at - 1]) {
            // A prefix longer than the cut was checked on its first bytes only: the whole
            // qualifier is in the key, or (cut) in the value.
            let exact = || {
                if cut_key {
                    whole()
                } else {
                    super::qualifier_passes(&self.exact, in_key)
                }
            };
            if self.long && !exact() {
                return CellVerdict::Miss;
            }
            return CellVerdict::Pass;
        }
        CellVerdict::MissUntil(self.cut.get(at).map(Vec::as_slice))
    }
}

/// One family's cells in key order, with the scan's row filters applied to each key before its
/// value is copied out, once per row: a query that keeps one series in a thousand copies one
/// row, not all. A row seeker's `SeekTo` reopens the range further on, and so does a run of
/// cells the qualifier prefixes reject (see [`STEP_BEFORE_SEEK`]).
struct FamilyCells {
    /// None once a seeker said no later row can match.
    it: Option<fjall::Iter>,
    /// Held so that a failed engine is not closed (and opened again) under a scan.
    _engine: Arc<Engine>,
    ks: Keyspace,
    stop: Option<Vec<u8>>,
    filter: Option<regex::bytes::Regex>,
    seek: Option<super::RowSeeker>,
    qualifiers: Option<QualifierSeek>,
    /// The last row judged (if `judged_any`): as encoded in its keys, decoded, and whether it
    /// is kept. Its later keys are told by their encoded prefix, without decoding them.
    judged: Vec<u8>,
    judged_any: bool,
    row: Vec<u8>,
    keep: bool,
    /// Whether a cell of the kept row was returned yet (the next one is then not its first).
    emitted: bool,
    /// Keys of the kept row the qualifier prefixes rejected in a row since the last that passed.
    misses: u32,
    table: String,
    form: Qualifiers,
    /// When `it` was opened, and how long it may live (see [`SNAPSHOT_MAX_AGE_MS`]); `fresh`
    /// until its first row is judged (that row is read from it, however old it is by then).
    opened: std::time::Instant,
    max_age: std::time::Duration,
    fresh: bool,
}

/// A cell as the engine holds it: its key (encoded row, terminator, qualifier) and its stamped
/// value, both in the engine's own buffers, and an encoded column's qualifier and value once
/// decoded ([`RawCell::decode`]).
struct RawCell {
    key: fjall::Slice,
    value: fjall::Slice,
    /// Where the qualifier (or its cut form) starts in `key`.
    qualifier_at: usize,
    decoded: Option<Box<(Vec<u8>, Vec<u8>)>>,
}

impl RawCell {
    /// The cell as read; an encoded column is decoded by [`RawCell::decode`] (a points scan may
    /// not need its bytes).
    fn new(key: fjall::Slice, value: fjall::Slice, qualifier_at: usize) -> Self {
        RawCell {
            key,
            value,
            qualifier_at,
            decoded: None,
        }
    }

    /// Decodes an encoded column's bytes, for [`RawCell::lend`].
    fn decode(&mut self, form: Qualifiers) {
        if self.decoded.is_none() {
            if let Parts::Encoded(_, body) =
                parts(&self.key[self.qualifier_at..], &self.value, form)
            {
                self.decoded = decoded(body).map(Box::new);
            }
        }
    }

    /// An encoded column's points onto `out` (see [`cellcodec::decode_points`]); false, with
    /// `out` as it was, for any other cell or one whose points do not decode so.
    fn points(&self, form: Qualifiers, out: &mut Vec<(u32, tsgate_schema::DataValue)>) -> bool {
        match parts(&self.key[self.qualifier_at..], &self.value, form) {
            Parts::Encoded(_, body) => cellcodec::decode_points(body, out).is_some(),
            Parts::Plain(..) => false,
        }
    }

    fn lend<'a>(&'a self, family: &'a [u8], form: Qualifiers) -> super::CellRef<'a> {
        let in_key = &self.key[self.qualifier_at..];
        let (timestamp, qualifier, value) = match (&self.decoded, parts(in_key, &self.value, form))
        {
            (Some(d), p) => (p.timestamp(), d.0.as_slice(), d.1.as_slice()),
            (None, Parts::Plain(ts, q, v)) => (ts, q, v),
            // Not what this store writes: shown as it is rather than dropped.
            (None, Parts::Encoded(ts, body)) => (ts, in_key, body),
        };
        super::CellRef {
            family,
            qualifier,
            value,
            timestamp,
        }
    }

    fn into_cell(mut self, family: &[u8], form: Qualifiers) -> Cell {
        self.decode(form);
        self.lend(family, form).into()
    }
}

impl FamilyCells {
    #[allow(clippy::too_many_arguments)]
    fn new(
        engine: &Arc<Engine>,
        ks: &Keyspace,
        table: &str,
        start: &[u8],
        stop: Option<Vec<u8>>,
        filter: Option<regex::bytes::Regex>,
        seek: Option<super::RowSeeker>,
        qualifiers: Option<QualifierSeek>,
        form: Qualifiers,
        max_age: std::time::Duration,
    ) -> FamilyCells {
        FamilyCells {
            it: Some(range(ks, start.to_vec())),
            opened: std::time::Instant::now(),
            max_age,
            fresh: true,
            _engine: engine.clone(),
            ks: ks.clone(),
            stop,
            filter,
            seek,
            qualifiers,
            judged: Vec::new(),
            judged_any: false,
            row: Vec::new(),
            keep: false,
            emitted: false,
            misses: 0,
            table: table.to_string(),
            form,
        }
    }

    /// Reopens the range at `from` (an engine key); false when that is at or past the stop
    /// (the scan is then over).
    fn reopen(&mut self, from: Vec<u8>) -> bool {
        if self.stop.as_ref().is_some_and(|s| from >= *s) {
            self.it = None;
            return false;
        }
        self.it = Some(range(&self.ks, from));
        self.opened = std::time::Instant::now();
        self.fresh = true;
        true
    }

    /// A key of the kept row (its row encoded in `k[..end]`): the cell, whether it is the
    /// first returned of its row, or None when the qualifier prefixes reject it (after
    /// reopening the range further on when a run of rejected keys is long enough).
    fn kept_cell(
        &mut self,
        k: fjall::Slice,
        v: fjall::Slice,
        end: usize,
    ) -> Option<(RawCell, bool)> {
        let form = self.form;
        let at = end + 2;
        let Some(qs) = &self.qualifiers else {
            let first = !std::mem::replace(&mut self.emitted, true);
            return Some((RawCell::new(k, v, at), first));
        };
        let in_key = &k[at..];
        let cut_key = form.cuts(in_key.len());
        let whole = || {
            let (_, q, _) = unstored(in_key, &v, form);
            super::qualifier_passes(&qs.exact, &q)
        };
        let target = match qs.judge(in_key, cut_key, whole) {
            CellVerdict::Pass => {
                self.misses = 0;
                let first = !std::mem::replace(&mut self.emitted, true);
                return Some((RawCell::new(k, v, at), first));
            }
            CellVerdict::Miss => return None,
            CellVerdict::MissUntil(p) => p.map(<[u8]>::to_vec),
        };
        self.misses += 1;
        if self.misses < STEP_BEFORE_SEEK {
            return None;
        }
        self.misses = 0;
        // The row's keys are `row 00 01 qualifier`: `row 00 01 prefix` is where the next
        // passing one may be, and `row 00 02` sorts after them all and before the next row's
        // (whose escaped bytes never put `02` after a `00`).
        let mut from = k[..end].to_vec();
        match target {
            Some(p) => {
                from.extend_from_slice(&[0, 1]);
                from.extend_from_slice(&p);
            }
            None => from.extend_from_slice(&[0, 2]),
        }
        self.reopen(from);
        None
    }

    fn err(&self, msg: String) -> StoreError {
        StoreError::Engine {
            op: "scan",
            table: self.table.clone(),
            msg,
        }
    }

    /// The next cell of a kept row, and whether it is the first of its row (`self.row` is then
    /// that row).
    fn next_cell(&mut self) -> Option<StoreResult<(RawCell, bool)>> {
        loop {
            let (k, v) = match self.it.as_mut()?.next()?.into_inner() {
                Ok(kv) => kv,
                Err(e) => return Some(Err(self.err(e.to_string()))),
            };
            if self.stop.as_ref().is_some_and(|s| *k >= **s) {
                self.it = None;
                return None;
            }
            let Some(end) = keycodec::row_end(&k) else {
                return Some(Err(self.err("undecodable engine key".into())));
            };
            if self.judged_any && k[..end] == self.judged[..] {
                if self.keep {
                    if let Some(c) = self.kept_cell(k, v, end) {
                        return Some(Ok(c));
                    }
                }
                continue;
            }
            // A new row: past the snapshot's age, read it (and on) from a fresh one.
            if !std::mem::take(&mut self.fresh) && self.opened.elapsed() >= self.max_age {
                if !self.reopen(k.to_vec()) {
                    return None;
                }
                continue;
            }
            keycodec::unescape_row(&k[..end], &mut self.row);
            let verdict = self
                .seek
                .as_ref()
                .map_or(RowSeek::Take, |s| (s.0)(&self.row));
            self.keep = match verdict {
                RowSeek::Take => self.filter.as_ref().is_none_or(|f| f.is_match(&self.row)),
                RowSeek::Skip => false,
                RowSeek::Done => {
                    self.it = None;
                    return None;
                }
                // A target at or before this row would loop: read on instead. Reopening the
                // range is a seek in every engine table; with keys cut short (no 720-byte
                // qualifiers) it cost less than stepping over even a few rows' keys to reach a
                // target nine rows on (`/render` over every tenth whole-path metric: 7.5 ms
                // reopening, 8.0 ms stepping up to 16 keys first, 9.5 ms stepping up to 4).
                RowSeek::SeekTo(to) if to.as_slice() > self.row.as_slice() => {
                    if !self.reopen(keycodec::row_bound(&to)) {
                        return None;
                    }
                    self.judged_any = false;
                    continue;
                }
                RowSeek::SeekTo(_) => false,
            };
            self.judged.clear();
            self.judged.extend_from_slice(&k[..end]);
            self.judged_any = true;
            self.emitted = false;
            self.misses = 0;
            if self.keep {
                if let Some(c) = self.kept_cell(k, v, end) {
                    return Some(Ok(c));
                }
            }
        }
    }
}

/// Groups one family's cells into rows.
struct FamilyRows {
    family: Vec<u8>,
    cells: FamilyCells,
    /// The first cell of the next row (with its row), read while ending the previous one.
    next: Option<(Vec<u8>, RawCell)>,
    /// An error met while ending the previous row: the next row's turn reports it.
    failed: Option<StoreError>,
}

impl FamilyRows {
    fn next_row(&mut self) -> Option<StoreResult<Row>> {
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        let (key, first) = match self.next.take() {
            Some(n) => n,
            None => match self.cells.next_cell()? {
                Ok((c, _)) => (self.cells.row.clone(), c),
                Err(e) => return Some(Err(e)),
            },
        };
        let form = self.cells.form;
        let mut cells = vec![first.into_cell(&self.family, form)];
        loop {
            match self.cells.next_cell() {
                None => break,
                Some(Ok((c, false))) => cells.push(c.into_cell(&self.family, form)),
                Some(Ok((c, true))) => {
                    self.next = Some((self.cells.row.clone(), c));
                    break;
                }
                Some(Err(e)) => {
                    self.failed = Some(e);
                    break;
                }
            }
        }
        in_qualifier_order(&mut cells, |c| &c.qualifier);
        Some(Ok(Row { key, cells }))
    }
}

/// Merges the row streams of several families by row key.
struct MergedRows {
    sources: Vec<FamilyRows>,
    heads: Vec<Option<Row>>,
    remaining: usize,
    primed: bool,
}

impl MergedRows {
    fn fill(&mut self, i: usize) -> StoreResult<()> {
        self.heads[i] = match self.sources[i].next_row() {
            Some(r) => Some(r?),
            None => None,
        };
        Ok(())
    }
}

impl Iterator for MergedRows {
    type Item = StoreResult<Row>;
    fn next(&mut self) -> Option<Self::Item> {
        if !self.primed {
            self.primed = true;
            for i in 0..self.sources.len() {
                if let Err(e) = self.fill(i) {
                    return Some(Err(e));
                }
            }
        }
        if self.remaining == 0 {
            return None;
        }
        let min = self.heads.iter().flatten().map(|r| r.key.clone()).min()?;
        let mut out = Row {
            key: min.clone(),
            cells: Vec::new(),
        };
        for i in 0..self.heads.len() {
            if self.heads[i].as_ref().is_some_and(|r| r.key == min) {
                let r = self.heads[i].take().expect("checked");
                out.cells.extend(r.cells);
                if let Err(e) = self.fill(i) {
                    return Some(Err(e));
                }
            }
        }
        self.remaining -= 1;
        Some(Ok(out))
    }
}

/// Compiles a row regex the way HBase applies it: over bytes, `.` matching any byte.
pub fn compile_row_regex(re: &str) -> StoreResult<regex::bytes::Regex> {
    regex::bytes::RegexBuilder::new(re)
        .unicode(false)
        .dot_matches_new_line(true)
        .build()
        .map_err(|e| StoreError::BadFilter(e.to_string()))
}

impl Store for EmbeddedStore {
    fn get(&self, table: &str, row: &[u8], families: &[&[u8]]) -> StoreResult<Vec<Cell>> {
        let prefix = keycodec::row_prefix(row);
        let mut cells = Vec::new();
        let engine = self.engine()?;
        for (f, ks) in engine.selected(table, families)? {
            let first = cells.len();
            for g in ks.prefix(&prefix) {
                let (k, v) = g.into_inner().map_err(engine_err("get", table))?;
                let (ts, qualifier, value) = self.unstored(&k[prefix.len()..], &v);
                cells.push(Cell {
                    family: f.to_vec(),
                    qualifier: qualifier.into_owned(),
                    value: value.into_owned(),
                    timestamp: ts,
                });
            }
            in_qualifier_order(&mut cells[first..], |c| &c.qualifier);
        }
        Ok(cells)
    }

    fn mutate(&self, table: &str, batch: Vec<RowMutations>) -> StoreResult<()> {
        let shared = self.rmw.read();
        open_for_writes(*shared, table)?;
        let engine = self.writable()?;
        // One timestamp for the whole batch, as HBase's mutateRows gives (a clock ticking per
        // cell would run ahead of the wall clock on large batches).
        let ts = self.now();
        // Handed to the OS before it is applied: a write answered is in the engine's journal
        // file even if the engine fails before its next sync, and reopening it replays it.
        let mut wb = engine.db.batch().durability(Some(PersistMode::Buffer));
        for rm in &batch {
            // Puts first, then deletes: HBase's order within a batch.
            for m in rm
                .mutations
                .iter()
                .filter(|m| matches!(m, Mutation::Put { .. }))
            {
                if let Mutation::Put {
                    family,
                    qualifier,
                    value,
                } = m
                {
                    let ks = engine.family(table, family)?;
                    wb.insert(
                        ks,
                        self.key(&rm.row, qualifier),
                        self.stored(ts, qualifier, value),
                    );
                }
            }
            for m in rm
                .mutations
                .iter()
                .filter(|m| !matches!(m, Mutation::Put { .. }))
            {
                match m {
                    Mutation::Put { .. } => {}
                    Mutation::Delete { family, qualifier } => {
                        let ks = engine.family(table, family)?;
                        wb.remove(ks, self.key(&rm.row, qualifier));
                    }
                    Mutation::DeleteOnce { family, qualifier } => {
                        let ks = engine.family(table, family)?;
                        wb.remove_weak(ks, self.key(&rm.row, qualifier));
                    }
                    Mutation::DeleteRow => {
                        let prefix = keycodec::row_prefix(&rm.row);
                        for (_, ks) in engine.families(table)? {
                            for g in ks.prefix(&prefix) {
                                wb.remove(ks, g.key().map_err(engine_err("delete", table))?);
                            }
                        }
                    }
                }
            }
        }
        wb.commit().map_err(self.write_err("mutate", table))
    }

    fn scan(&self, table: &str, scan: &Scan) -> StoreResult<RowStream> {
        let engine = self.engine()?;
        let sources: Vec<FamilyRows> = self
            .family_cells(&engine, table, scan)?
            .into_iter()
            .map(|(f, cells)| FamilyRows {
                family: f,
                cells,
                next: None,
                failed: None,
            })
            .collect();
        let n = sources.len();
        Ok(Box::new(MergedRows {
            sources,
            heads: (0..n).map(|_| None).collect(),
            remaining: scan.limit.unwrap_or(usize::MAX),
            primed: false,
        }))
    }

    fn scan_rows(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut super::RowVisitor<'_>,
    ) -> StoreResult<()> {
        self.lend_rows(table, scan, false, &mut |key, row| match row {
            super::LentRow::Cells(cells) => visit(key, cells),
            super::LentRow::Points(_) => unreachable!("points are lent only when asked for"),
        })
    }

    fn scan_points(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut super::PointsVisitor<'_>,
    ) -> StoreResult<()> {
        self.lend_rows(table, scan, true, visit)
    }

    fn scan_keys(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut super::KeyVisitor<'_>,
    ) -> StoreResult<()> {
        let engine = self.engine()?;
        if engine.selected(table, &scan.families)?.len() != 1 {
            return self.scan_rows(table, scan, &mut |key, _| visit(key));
        }
        let (_, mut cells) = self
            .family_cells(&engine, table, scan)?
            .pop()
            .expect("one family");
        let mut left = scan.limit.unwrap_or(usize::MAX);
        // A row's first cell names it; no cell is decoded.
        while left > 0 {
            match cells.next_cell() {
                None => break,
                Some(Err(e)) => return Err(e),
                Some(Ok((_, first))) => {
                    if first {
                        if !visit(&cells.row)? {
                            break;
                        }
                        left -= 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn increment(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> StoreResult<i64> {
        let g = self.rmw.write();
        open_for_writes(*g, table)?;
        let engine = self.writable()?;
        let ks = engine.family(table, family)?;
        let cur = match self.read_cell(table, ks, row, qualifier)? {
            None => 0,
            Some(v) => tsgate_schema::uid_table::decode_counter(&v).ok_or_else(|| {
                StoreError::NotACounter(format!("{table}/{}", tsgate_schema::hex_upper(row)))
            })?,
        };
        let next = cur.wrapping_add(delta);
        ks.insert(
            self.key(row, qualifier),
            self.stored(self.now(), qualifier, &next.to_be_bytes()),
        )
        .map_err(self.write_err("increment", table))?;
        Ok(next)
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
        let g = self.rmw.write();
        open_for_writes(*g, table)?;
        let engine = self.writable()?;
        let ks = engine.family(table, family)?;
        let cur = self.read_cell(table, ks, row, qualifier)?;
        if cur.as_deref() != expected {
            return Ok(false);
        }
        ks.insert(
            self.key(row, qualifier),
            self.stored(self.now(), qualifier, value),
        )
        .map_err(self.write_err("check_and_put", table))?;
        Ok(true)
    }

    fn flush(&self) -> StoreResult<()> {
        // Low space does not stop a sync (it writes nothing new); a failed engine does.
        self.healthy()?
            .db
            .persist(PersistMode::SyncAll)
            .map_err(self.write_err("flush", "*"))
    }

    fn close(&self) -> StoreResult<()> {
        self.flush()?;
        // Memtables to tables: the engine's journal is then dropped instead of being kept (and
        // replayed) as a second copy of everything written since the last memtable flush.
        let engine = self.writable()?;
        let keyspaces: Vec<&Keyspace> = engine.keyspaces().collect();
        // Bounded by size so that shutdown stays quick on a large store, where the engine's own
        // leveled compaction does this work as data ages.
        engine.write_out_and_rewrite(
            &keyspaces,
            std::time::Duration::from_secs(30),
            MAJOR_COMPACT_ON_CLOSE_MAX,
            &self.write_err("close", "*"),
        )?;
        // Journals are released by the engine's flush workers just after their last flush.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while engine.db.journal_count() > 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.flush()?;
        let mut closed = self.rmw.write();
        *closed = true;
        // The engine keeps its active journal until it grows past 64 MB, whatever it holds; once
        // every memtable is written out it holds nothing the tables don't, and would stay on
        // disk as a second copy of everything ingested since. Emptied, not removed: the engine
        // recovers its sequence numbers from the tables only when it finds a journal to replay
        // (without one, new writes would sort below the old ones).
        if engine.db.write_buffer_size() == 0
            && engine.db.outstanding_flushes() == 0
            && engine.db.journal_count() == 1
        {
            self.empty_journal().map_err(|e| StoreError::Engine {
                op: "close",
                table: "*".into(),
                msg: e.to_string(),
            })?;
        }
        Ok(())
    }

    fn atomic_batches(&self) -> bool {
        true
    }

    fn seeks(&self) -> bool {
        true
    }

    fn tidy(&self) -> StoreResult<()> {
        // Several flushers compact at once and each asks as it catches up: the first to ask
        // would rewrite the tables while the others still delete. Only once no delete has come
        // for a while is the work over, and one rewrite then covers it all.
        let quiet = now_ms().saturating_sub(self.last_delete_ms.load(Ordering::Relaxed))
            >= self.tidy_quiet_ms.load(Ordering::Relaxed);
        if !quiet || self.deletes.load(Ordering::Relaxed) < TIDY_MIN_DELETES {
            return Ok(());
        }
        // Claimed by one caller (several flushers may ask at once); one that loses the race, or
        // sees deletes arrive meanwhile, leaves the count for the next tick.
        let n = self.deletes.load(Ordering::Relaxed);
        if n < TIDY_MIN_DELETES
            || self
                .deletes
                .compare_exchange(n, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return Ok(());
        }
        // Rewriting needs room: while writes are refused the tidy waits (the deletes stay
        // counted for the next one).
        let Ok(engine) = self.writable() else {
            self.deletes.fetch_add(n, Ordering::Relaxed);
            return Ok(());
        };
        let small: Vec<&Keyspace> = engine
            .keyspaces()
            .filter(|k| k.disk_space() <= TIDY_MAX)
            .collect();
        engine.write_out_and_rewrite(
            &small,
            std::time::Duration::from_secs(10),
            u64::MAX,
            &self.write_err("tidy", "*"),
        )
    }

    fn expire_rows(&self, table: &str, expired: Option<super::RowExpiry>) -> bool {
        let mut map = self.expiry.write();
        match expired {
            Some(j) => map.insert(table.to_string(), j),
            None => map.remove(table),
        };
        true
    }

    fn reclaim(&self, table: &str, how: Reclaim) -> StoreResult<Reclaimed> {
        let engine = self.writable()?;
        let keyspaces: Vec<&Keyspace> = engine.families(table)?.iter().map(|(_, k)| k).collect();
        let before: u64 = keyspaces.iter().map(|k| k.disk_space()).sum();
        // The table files there now: the rewrite replaces them all.
        let mut old = Vec::new();
        for k in &keyspaces {
            files_under(&k.path().join("tables"), &mut old).map_err(|e| StoreError::Engine {
                op: "reclaim",
                table: table.to_string(),
                msg: e.to_string(),
            })?;
        }
        // Every table of the keyspace goes through the filter in one rewrite: one pass of
        // sequential I/O, done by this (the caller's) thread, at the pace `how` sets.
        let guard = PassGuard::start(Pass {
            throttle: crate::throttle::Throttle::new(how.bytes_per_s).hurried_by(how.hurry.clone()),
            on_row: how.on_row,
        });
        engine.write_out_and_rewrite(
            &keyspaces,
            std::time::Duration::from_secs(30),
            u64::MAX,
            &self.write_err("reclaim", table),
        )?;
        let pass = guard.finish();
        let hurried = how.hurry.is_some_and(|h| h.load(Ordering::Relaxed));
        let patience = if hurried {
            std::time::Duration::ZERO
        } else {
            RELEASE_PATIENCE
        };
        let released = engine.release_replaced(&old, patience)?;
        let after: u64 = keyspaces.iter().map(|k| k.disk_space()).sum();
        Ok(Reclaimed {
            freed: before.saturating_sub(after),
            read: pass.as_ref().map_or(0, |p| p.throttle.done()),
            waited: pass
                .as_ref()
                .map_or(Default::default(), |p| p.throttle.waited()),
            released,
        })
    }

    fn refusing_writes(&self) -> Option<super::Refusal> {
        if self.health.failed() {
            return Some(self.refusal());
        }
        // Judged now, not when the last write was tried: a gauge must fall once space is back.
        match self.health.check_space() {
            Err(r) => Some(r),
            Ok(()) => self
                .health
                .refusal()
                .filter(|_| self.engine.read().is_none()),
        }
    }

    fn disk_bytes(&self, table: &str) -> Option<u64> {
        let engine = self.engine().ok()?;
        let fams = engine.families(table).ok()?;
        Some(fams.iter().map(|(_, k)| k.disk_space()).sum())
    }

    fn snapshot_to(&self, dir: &Path) -> StoreResult<Option<u64>> {
        self.snapshot_into(dir).map(Some)
    }

    fn mutate_at(&self, table: &str, batch: Vec<RowMutations>, ts: u64) -> StoreResult<()> {
        let g = self.rmw.write();
        open_for_writes(*g, table)?;
        let engine = self.writable()?;
        // Handed to the OS before it is applied, as in `mutate`.
        let mut wb = engine.db.batch().durability(Some(PersistMode::Buffer));
        for RowMutations { row, mutations } in &batch {
            // The row's versions, read once per family it touches: a compaction deletes nearly
            // every cell of a row, and a point read per cell (a seek through every table
            // of the engine, a block read for each) was what the compactor spent its time on.
            let mut versions: HashMap<Vec<u8>, HashMap<Vec<u8>, u64>> = HashMap::new();
            let mut version = |family: &[u8], ks: &Keyspace, key: &[u8]| -> StoreResult<_> {
                let cells = match versions.entry(family.to_vec()) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(self.row_versions(table, ks, row)?)
                    }
                };
                Ok(cells.get(key).copied())
            };
            for m in mutations {
                match m {
                    Mutation::Put {
                        family,
                        qualifier,
                        value,
                    } => {
                        let ks = engine.family(table, family)?;
                        let key = self.key(row, qualifier);
                        if version(family, ks, &key)?.is_none_or(|cur| cur <= ts) {
                            wb.insert(ks, key, self.stored(ts, qualifier, value));
                        }
                    }
                    Mutation::Delete { family, qualifier }
                    | Mutation::DeleteOnce { family, qualifier } => {
                        let ks = engine.family(table, family)?;
                        let key = self.key(row, qualifier);
                        if version(family, ks, &key)?.is_some_and(|cur| cur <= ts) {
                            wb.remove(ks, key);
                            self.deletes.fetch_add(1, Ordering::Relaxed);
                            self.last_delete_ms.store(now_ms(), Ordering::Relaxed);
                        }
                    }
                    Mutation::DeleteRow => {
                        let prefix = keycodec::row_prefix(row);
                        for (_, ks) in engine.families(table)? {
                            for g in ks.prefix(&prefix) {
                                let (k, v) =
                                    g.into_inner().map_err(engine_err("mutate_at", table))?;
                                if split_stamp(&v).0 <= ts {
                                    wb.remove(ks, k);
                                }
                            }
                        }
                    }
                }
            }
        }
        wb.commit().map_err(self.write_err("mutate_at", table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Below `storage.min_free_mb` every write is refused with the reason, reads go on, and
    /// writes are taken again as soon as there is room (here: once the bound is lowered).
    #[test]
    fn low_free_space_refuses_writes_until_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let specs = crate::TableNames::default().specs();
        let s = EmbeddedStore::open(dir.path(), &specs).unwrap();
        let put = |v: &[u8]| {
            s.mutate(
                "tsdb",
                vec![RowMutations::put(
                    b"r".to_vec(),
                    tsgate_schema::DATA_FAMILY,
                    b"q".to_vec(),
                    v.to_vec(),
                )],
            )
        };
        put(b"1").unwrap();
        assert_eq!(s.refusing_writes(), None);
        s.set_min_free_bytes(u64::MAX / 2);
        match put(b"2") {
            Err(StoreError::Refusing(r)) => {
                assert_eq!(r.reason, "disk_full");
                assert!(r.detail.contains("storage.min_free_mb"), "{}", r.detail);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.increment("tsdb-uid", b"\0", b"id", b"metrics", 1),
            Err(StoreError::Refusing(_))
        ));
        assert_eq!(s.refusing_writes().map(|r| r.reason), Some("disk_full"));
        // A sync writes nothing new: it goes on, as reads do.
        s.flush().unwrap();
        assert_eq!(s.get("tsdb", b"r", &[]).unwrap()[0].value, b"1");
        s.set_min_free_bytes(0);
        assert_eq!(s.refusing_writes(), None);
        put(b"3").unwrap();
        assert_eq!(s.get("tsdb", b"r", &[]).unwrap()[0].value, b"3");
        assert_eq!(s.reopen_count(), 0);
    }

    /// A store written by a tsgate from before the cut form (keyspaces named `table:family`,
    /// qualifiers whole in the keys) opens in its own form and reads as it did.
    #[test]
    fn a_store_of_the_earlier_form_opens_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let specs = crate::TableNames::default().specs();
        let q = vec![3u8; 100];
        {
            let db = Database::builder(dir.path()).open().unwrap();
            let ks = db.keyspace("tsdb:t", keyspace_options).unwrap();
            ks.insert(
                keycodec::encode(b"row", &q, Qualifiers::Whole),
                stored(7, &q, b"value", Qualifiers::Whole, true),
            )
            .unwrap();
            db.persist(PersistMode::SyncAll).unwrap();
        }
        let s = EmbeddedStore::open(dir.path(), &specs).unwrap();
        assert!(!s.cuts_qualifiers());
        let cells = s.get("tsdb", b"row", &[]).unwrap();
        assert_eq!(
            cells,
            vec![Cell {
                family: tsgate_schema::DATA_FAMILY.to_vec(),
                qualifier: q,
                value: b"value".to_vec(),
                timestamp: 7
            }]
        );
        assert_eq!(keyspace_name("tsdb", b"t", Qualifiers::Cut), "tsdb:t#cut");
    }

    /// A scan older than the snapshot age reads its next rows from a fresh snapshot (so it no
    /// longer pins what the engine wrote since in memory); a young one reads its own.
    #[test]
    fn a_long_scan_reads_later_rows_from_a_fresh_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let specs = crate::TableNames::default().specs();
        let s = EmbeddedStore::open(dir.path(), &specs).unwrap();
        let put = |row: &[u8], q: &[u8]| {
            s.mutate(
                "tsdb",
                vec![RowMutations::put(
                    row.to_vec(),
                    tsgate_schema::DATA_FAMILY,
                    q.to_vec(),
                    b"v".to_vec(),
                )],
            )
            .unwrap()
        };
        for r in [b"r1", b"r2", b"r3", b"r4"] {
            put(r, b"a");
        }
        let cells_of_r4 = |age: std::time::Duration, later: &[u8]| {
            s.set_snapshot_max_age(age);
            let mut rows = s.scan("tsdb", &Scan::default()).unwrap();
            assert_eq!(rows.next().unwrap().unwrap().key, b"r1");
            put(b"r4", later);
            let rest: Vec<Row> = rows.map(Result::unwrap).collect();
            let keys: Vec<&[u8]> = rest.iter().map(|r| r.key.as_slice()).collect();
            assert_eq!(keys, [&b"r2"[..], b"r3", b"r4"]);
            rest[2].cells.len()
        };
        assert_eq!(cells_of_r4(std::time::Duration::from_secs(3600), b"b"), 1);
        assert_eq!(cells_of_r4(std::time::Duration::ZERO, b"c"), 3);
    }

    /// Reopening at every row (age 0) returns exactly what one snapshot does, for scans with
    /// windows, several families, qualifier prefixes, a row regex and limits.
    #[test]
    fn reopening_scans_return_what_one_snapshot_does() {
        let dir = tempfile::tempdir().unwrap();
        let specs = crate::TableNames::default().specs();
        let s = EmbeddedStore::open(dir.path(), &specs).unwrap();
        let mut batch = Vec::new();
        for r in 0u32..300 {
            let row = format!("row{:03}", r * 7 % 300).into_bytes();
            for q in 0..(r % 5) {
                let fam: &[u8] = if q % 2 == 0 { b"id" } else { b"name" };
                batch.push(RowMutations::put(
                    row.clone(),
                    fam,
                    vec![(q * 37 % 11) as u8, q as u8],
                    r.to_be_bytes().to_vec(),
                ));
            }
        }
        s.mutate("tsdb-uid", batch).unwrap();
        s.flush().unwrap();
        let scans = [
            Scan::default(),
            Scan {
                start: b"row050".to_vec(),
                stop: b"row250".to_vec(),
                ..Default::default()
            },
            Scan {
                families: vec![b"name".to_vec()],
                ..Default::default()
            },
            Scan {
                qualifier_prefixes: vec![vec![4], vec![8]],
                ..Default::default()
            },
            Scan {
                row_regex: Some("^row[0-9]*[27]$".into()),
                limit: Some(17),
                ..Default::default()
            },
            Scan {
                limit: Some(1),
                ..Default::default()
            },
        ];
        for scan in &scans {
            let read = |age| {
                s.set_snapshot_max_age(age);
                let rows: Vec<Row> = s
                    .scan("tsdb-uid", scan)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let mut lent = Vec::new();
                s.scan_rows("tsdb-uid", scan, &mut |key, cells| {
                    lent.push((key.to_vec(), cells.len()));
                    Ok(true)
                })
                .unwrap();
                (rows, lent)
            };
            let one = read(std::time::Duration::from_secs(3600));
            assert!(!one.0.is_empty(), "{scan:?}");
            assert_eq!(read(std::time::Duration::ZERO), one, "{scan:?}");
        }
    }

    /// A snapshot holds every cell written before it, none written after, in every table, and
    /// opens as a store of the same form; a directory in use is refused.
    #[test]
    fn a_snapshot_holds_what_was_written_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let specs = crate::TableNames::default().specs();
        let s = EmbeddedStore::open(&dir.path().join("a"), &specs).unwrap();
        let put = |table: &str, row: &[u8], v: &[u8]| {
            s.mutate(
                table,
                vec![RowMutations::put(
                    row.to_vec(),
                    b"t",
                    vec![0, 0],
                    v.to_vec(),
                )],
            )
            .unwrap()
        };
        let q = vec![9u8; 200]; // a long qualifier: cut in the key, whole in the value
        for i in 0..1000u32 {
            put("tsdb", &i.to_be_bytes(), b"before");
        }
        s.mutate(
            "tsdb",
            vec![RowMutations::put(
                b"long".to_vec(),
                b"t",
                q.clone(),
                b"v".to_vec(),
            )],
        )
        .unwrap();
        s.mutate(
            "tsdb-uid",
            vec![RowMutations::put(
                b"m".to_vec(),
                b"id",
                b"metrics".to_vec(),
                vec![0, 0, 1],
            )],
        )
        .unwrap();
        s.mutate(
            "tsdb",
            vec![RowMutations {
                row: 7u32.to_be_bytes().to_vec(),
                mutations: vec![Mutation::DeleteRow],
            }],
        )
        .unwrap();
        let copy = dir.path().join("copy");
        assert_eq!(s.snapshot_into(&copy).unwrap(), 1000 + 1);
        put("tsdb", b"after", b"after");
        assert!(s.snapshot_into(&copy).is_err(), "a store is there already");
        drop(s);
        let c = EmbeddedStore::open(&copy, &specs).unwrap();
        assert!(c.cuts_qualifiers());
        let rows: Vec<Row> = c
            .scan("tsdb", &Scan::default())
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(rows.len(), 1000);
        assert!(rows
            .iter()
            .all(|r| r.key != b"after" && r.key != 7u32.to_be_bytes()));
        assert_eq!(c.get("tsdb", b"long", &[]).unwrap()[0].qualifier, q);
        assert_eq!(
            c.get("tsdb-uid", b"m", &[]).unwrap()[0].value,
            vec![0, 0, 1]
        );
    }

    /// Compacted columns are written encoded and read back byte for byte through every read
    /// (get, scan, scan_rows, a compare-and-set's read of its cell), beside cells written as
    /// they were before (`storage.encode_columns = false`, or an earlier tsgate) and columns
    /// that are no run of OpenTSDB points; the table takes a fraction of the raw one's disk.
    #[test]
    fn compacted_columns_are_encoded_and_read_back_exactly() {
        use tsgate_schema::column::{build_column, RawPoint};
        let names = crate::TableNames::default();
        let fam = tsgate_schema::DATA_FAMILY;
        let base = 1_699_999_200u32;
        let mut seed = 42u64;
        // Per row: an hour at 10 s of a random walk rounded to 2 decimals, as the bench set's.
        let rows: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = (0..2_000u32)
            .map(|r| {
                let mut x = 50.0f64;
                let pts: Vec<RawPoint> = (0..360u64)
                    .map(|i| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let step = (seed >> 33) as f64 / (1u64 << 31) as f64 * 4.0 - 2.0;
                        x = (x + step).clamp(0.0, 100.0);
                        let v = tsgate_schema::DataValue::F64((x * 100.0).round() / 100.0);
                        RawPoint::encode(base as u64 + i * 10, base, v).unwrap()
                    })
                    .collect();
                let (q, v) = build_column(&pts);
                let mut row = vec![0, 0, 1];
                row.extend_from_slice(&base.to_be_bytes());
                row.extend_from_slice(&[0, 0, 1, 0, 0]);
                row.extend_from_slice(&r.to_be_bytes()[1..]);
                (row, q, v)
            })
            .collect();
        // Not a run of points (an odd length): kept as it is.
        let odd_q = vec![0x17u8; 41];
        let put = |s: &EmbeddedStore, rows: &[(Vec<u8>, Vec<u8>, Vec<u8>)]| {
            let batch = rows
                .iter()
                .map(|(row, q, v)| RowMutations::put(row.clone(), fam, q.clone(), v.clone()))
                .collect();
            s.mutate(&names.data, batch).unwrap();
        };
        let raw_dir = tempfile::tempdir().unwrap();
        let raw = EmbeddedStore::open(raw_dir.path(), &names.specs()).unwrap();
        raw.set_encode_columns(false);
        put(&raw, &rows);
        raw.close().unwrap();
        let dir = tempfile::tempdir().unwrap();
        {
            let s = EmbeddedStore::open(dir.path(), &names.specs()).unwrap();
            s.set_encode_columns(false);
            put(&s, &rows[..10]);
            s.set_encode_columns(true);
            put(&s, &rows[10..]);
            put(&s, &[(rows[0].0.clone(), odd_q.clone(), b"odd".to_vec())]);
            // Written encoded, but for the first ten rows and the odd column.
            let engine = s.engine().unwrap();
            let ks = engine.family(&names.data, fam).unwrap();
            let first_byte = |row: &[u8], q: &[u8]| ks.get(s.key(row, q)).unwrap().unwrap()[8];
            assert_ne!(first_byte(&rows[0].0, &rows[0].1), cellcodec::MARKER);
            assert_eq!(first_byte(&rows[10].0, &rows[10].1), cellcodec::MARKER);
            assert_ne!(first_byte(&rows[0].0, &odd_q), cellcodec::MARKER);
            drop(engine);
            s.close().unwrap();
        }
        let (raw_bytes, bytes) = (dir_bytes(raw_dir.path()), dir_bytes(dir.path()));
        assert!(
            bytes * 100 <= raw_bytes * 25,
            "{bytes} bytes against {raw_bytes} raw"
        );
        let s = EmbeddedStore::open(dir.path(), &names.specs()).unwrap();
        type Cells = Vec<(Vec<u8>, Vec<u8>)>;
        let mut want: Vec<(Vec<u8>, Cells)> = rows
            .iter()
            .map(|(row, q, v)| (row.clone(), vec![(q.clone(), v.clone())]))
            .collect();
        want[0].1.push((odd_q.clone(), b"odd".to_vec()));
        want[0].1.sort();
        let scanned: Vec<_> = s
            .scan(&names.data, &Scan::default())
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                let cells = r.cells.into_iter().map(|c| (c.qualifier, c.value));
                (r.key, cells.collect::<Vec<_>>())
            })
            .collect();
        assert!(scanned == want, "scan");
        let mut lent = Vec::new();
        s.scan_rows(&names.data, &Scan::default(), &mut |row, cells| {
            let cells = cells
                .iter()
                .map(|c| (c.qualifier.to_vec(), c.value.to_vec()));
            lent.push((row.to_vec(), cells.collect::<Vec<_>>()));
            Ok(true)
        })
        .unwrap();
        assert!(lent == want, "scan_rows");
        // A points scan lends each encoded row (of one cell) as its points, those the walk of
        // its bytes reads; the others as their cells.
        let (mut as_points, mut as_cells) = (0, 0);
        let mut i = 0;
        s.scan_points(&names.data, &Scan::default(), &mut |row, lent| {
            let (key, cells) = &want[i];
            i += 1;
            assert_eq!(row, key.as_slice());
            match lent {
                crate::LentRow::Points(pts) => {
                    as_points += 1;
                    let mut walked = Vec::new();
                    let (q, v) = &cells[0];
                    assert!(tsgate_schema::column::walk_compacted(q, v, |off, val| {
                        walked.push((off, val));
                        true
                    }));
                    assert!(
                        cells.len() == 1 && pts == walked.as_slice(),
                        "row {}",
                        i - 1
                    );
                }
                crate::LentRow::Cells(lent) => {
                    as_cells += 1;
                    let got: Cells = lent
                        .iter()
                        .map(|c| (c.qualifier.to_vec(), c.value.to_vec()))
                        .collect();
                    assert!(got == *cells, "row {}", i - 1);
                }
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!((as_points, as_cells, i), (1_990, 10, 2_000));
        for (row, cells) in [&want[0], &want[10], &want[1_999]] {
            let got: Vec<_> = s.get(&names.data, row, &[]).unwrap();
            let got: Vec<_> = got.into_iter().map(|c| (c.qualifier, c.value)).collect();
            assert!(got == *cells, "get");
        }
        // A compare-and-set reads the encoded cell as the bytes written.
        let (row, q, v) = &rows[20];
        assert!(!s
            .check_and_put(&names.data, row, fam, q, Some(b"other"), b"x")
            .unwrap());
        assert!(s
            .check_and_put(&names.data, row, fam, q, Some(v), b"x")
            .unwrap());
        assert_eq!(s.get(&names.data, row, &[]).unwrap()[0].value, b"x");
    }

    /// Bytes of every file under `dir`.
    fn dir_bytes(dir: &Path) -> u64 {
        let mut files = Vec::new();
        files_under(dir, &mut files).unwrap();
        files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum()
    }

    /// A `reclaim` of a store left open gives the disk back before it returns (the engine
    /// used to keep the replaced files until a restart), tells its observer of every row with
    /// the judge's verdict, and reads no faster than its rate.
    #[test]
    fn reclaim_gives_disk_back_while_open_at_its_rate() {
        let dir = tempfile::tempdir().unwrap();
        let names = crate::TableNames::default();
        let row = |i: u32| i.to_be_bytes().to_vec();
        let write = |s: &EmbeddedStore| {
            for chunk in 0..20u32 {
                let mut batch = Vec::new();
                for r in 0..500u32 {
                    let i = chunk * 500 + r;
                    // Values that compress about as real ones do (not to nothing).
                    let value = (0..400u32)
                        .map(|j| (j.wrapping_mul(2_654_435_761u32.wrapping_add(i)) >> 13) as u8)
                        .collect();
                    batch.push(RowMutations {
                        row: row(i),
                        mutations: vec![Mutation::Put {
                            family: tsgate_schema::DATA_FAMILY.to_vec(),
                            qualifier: vec![0, 1],
                            value,
                        }],
                    });
                }
                s.mutate(&names.data, batch).unwrap();
            }
        };
        {
            let s = EmbeddedStore::open(dir.path(), &names.specs()).unwrap();
            write(&s);
            s.close().unwrap();
        }
        let s = EmbeddedStore::open(dir.path(), &names.specs()).unwrap();
        let before = dir_bytes(dir.path());
        // Three rows in four expire.
        let judge: crate::RowExpiry =
            std::sync::Arc::new(|r: &[u8]| u32::from_be_bytes(r[..4].try_into().unwrap()) < 7_500);
        s.expire_rows(&names.data, Some(judge));
        let seen = std::sync::Arc::new(parking_lot::Mutex::new((0u32, 0u32)));
        let tally = seen.clone();
        let rate = 2 << 20;
        let started = std::time::Instant::now();
        let r = s
            .reclaim(
                &names.data,
                Reclaim {
                    bytes_per_s: rate,
                    on_row: Some(Box::new(move |_, expired| {
                        let mut t = tally.lock();
                        if expired {
                            t.0 += 1
                        } else {
                            t.1 += 1
                        }
                    })),
                    ..Default::default()
                },
            )
            .unwrap();
        let took = started.elapsed();
        assert!(r.released, "{r:?}");
        let after = dir_bytes(dir.path());
        assert!(
            after * 100 <= before * 35,
            "{before} -> {after} bytes: {r:?}"
        );
        assert_eq!(*seen.lock(), (7_500, 2_500));
        // Every cell passed through the rewrite once: 10,000 values of 400 bytes and more.
        assert!(r.read >= 10_000 * 400, "{r:?}");
        // No faster than the rate, but for its burst (a tenth of a second's worth) and the
        // bytes between two looks at the clock (a hundredth).
        let floor = (r.read - rate / 10 - rate / 100) as f64 / rate as f64;
        assert!(took.as_secs_f64() >= floor, "{r:?} in {took:?}");
        // The rows kept read as before.
        let kept = s.scan(&names.data, &Scan::default()).unwrap().count();
        assert_eq!(kept, 2_500);
        // The observer was this pass's only; a pass told to hurry (the process is stopping)
        // no longer keeps to its rate: at 1 KiB/s this one would wait over ten minutes.
        let r = s
            .reclaim(
                &names.data,
                Reclaim {
                    bytes_per_s: 1024,
                    hurry: Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
                        true,
                    ))),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(r.read > 2_500 * 400, "{r:?}");
        assert_eq!(r.waited, std::time::Duration::ZERO);
        assert_eq!(*seen.lock(), (7_500, 2_500));
    }
}
