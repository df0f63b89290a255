//! Series resolution: metric + tags → TSUID, cached so that a series seen before costs one
//! hash look-up and no UID work at all.

use crate::uid::{UidCore, UidError};
use dashmap::DashMap;
use std::cell::RefCell;
use std::sync::Arc;
use tsgate_schema::uid_table::UidKind;

pub type Tsuid = Arc<[u8]>;

/// A resolved series as the write path carries it: its TSUID and a hash of it computed once,
/// so buffers and shard routing never rehash or compare the bytes on the hot path.
#[derive(Debug)]
pub struct SeriesKey {
    pub hash: u64,
    pub tsuid: &'static [u8],
    /// Where its row last was in its shard's buffer: a hint (see `write::shard::Buffer::insert`).
    pub slot: std::sync::atomic::AtomicU32,
}

/// Series keys live as long as the process (one per TSUID, see `SeriesKey::new`): a plain
/// reference is copied per point without the shared reference count an `Arc` would bounce
/// between the cores that parse and the cores that buffer.
pub type Series = &'static SeriesKey;

/// Every series key this process made, by TSUID: resolving a series again (after
/// `drop_caches`, in WAL replay) finds the same key instead of leaking another.
static INTERNED: std::sync::LazyLock<parking_lot::Mutex<Interned>> =
    std::sync::LazyLock::new(Default::default);

#[derive(Default)]
struct Interned {
    table: hashbrown::HashTable<Series>,
    /// The current chunks keys and TSUIDs are carved from, in creation order: the write path
    /// reads a point's key and TSUID (shard routing, the WAL, the buffer) in the order its
    /// sender repeats its series, which is mostly the order they were made, so it walks these
    /// in memory order (one allocation each scattered them: a cache miss per point in the
    /// shards). Never grown past their capacity, so never moved; full ones are leaked.
    keys: Vec<SeriesKey>,
    bytes: Vec<u8>,
}

const KEYS_PER_CHUNK: usize = 4096;
const BYTES_PER_CHUNK: usize = 64 << 10;

impl Interned {
    fn make(&mut self, hash: u64, tsuid: &[u8]) -> Series {
        if self.bytes.capacity() - self.bytes.len() < tsuid.len() {
            let full = std::mem::replace(
                &mut self.bytes,
                Vec::with_capacity(tsuid.len().max(BYTES_PER_CHUNK)),
            );
            std::mem::forget(full);
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(tsuid);
        // SAFETY: these bytes are never written again, moved (the chunk stays within its
        // capacity) or freed (full chunks are leaked).
        let tsuid: &'static [u8] =
            unsafe { std::slice::from_raw_parts(self.bytes.as_ptr().add(at), tsuid.len()) };
        if self.keys.len() == self.keys.capacity() {
            let full = std::mem::replace(&mut self.keys, Vec::with_capacity(KEYS_PER_CHUNK));
            std::mem::forget(full);
        }
        let at = self.keys.len();
        self.keys.push(SeriesKey {
            hash,
            tsuid,
            slot: Default::default(),
        });
        // SAFETY: as for the bytes: the key is never written again, moved or freed.
        unsafe { &*self.keys.as_ptr().add(at) }
    }
}

impl SeriesKey {
    /// The process's one key for these TSUID bytes (made on first use, never freed: bounded
    /// by the series the process has seen, like the caches in front of it).
    pub fn new(tsuid: &[u8]) -> Series {
        // FNV-1a: stable across processes, so routing by it is too.
        let hash = tsuid.iter().fold(0xcbf29ce484222325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        });
        let mut interned = INTERNED.lock();
        if let Some(k) = interned.table.find(hash, |k| k.tsuid == tsuid) {
            return k;
        }
        let key = interned.make(hash, tsuid);
        interned.table.insert_unique(hash, key, |k| k.hash);
        key
    }
}

impl std::hash::Hash for SeriesKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for SeriesKey {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other) || (self.hash == other.hash && self.tsuid == other.tsuid)
    }
}

impl Eq for SeriesKey {}

/// Told the TSUID of every series this process resolves for the first time (realtime
/// metadata and tree processing listen here; a cache hit never calls it).
pub type NewSeriesHook = Box<dyn Fn(&[u8]) + Send + Sync>;

/// Asked before a series this process has not resolved yet gets its TSUID: the cardinality
/// limits (`lifecycle::cardinality`). A refusal is the point's error.
pub trait SeriesGate: Send + Sync {
    fn admit(&self, tsuid: &[u8]) -> Result<(), SeriesRefused>;
    /// Makes every admission so far durable (one sync for all of them); cheap when there were
    /// none since the last. Called before points of newly admitted series are acknowledged.
    fn sync(&self) -> Result<(), SeriesRefused> {
        Ok(())
    }
    /// Whether admissions wait for [`SeriesGate::sync`] (an atomic read; no I/O).
    fn unsynced(&self) -> bool {
        false
    }
}

pub use crate::uid::SeriesRefused;

pub struct SeriesResolver {
    uids: Arc<UidCore>,
    /// Canonical series text (metric, then tags sorted by key) → series.
    cache: DashMap<Box<[u8]>, Series, ahash::RandomState>,
    /// A protocol's own text for a series it sent before (a telnet line's metric and tag
    /// words, a Graphite path) → series: a hit skips splitting, checking, mapping and
    /// canonicalising the names. Only texts whose names were accepted are entered.
    raw: RawMemo,
    new_series: std::sync::OnceLock<NewSeriesHook>,
    gate: std::sync::OnceLock<Arc<dyn SeriesGate>>,
    /// Bumped whenever a series enters the cache (new, or first seen since the cache was
    /// emptied): views built over the stored series (the graphite path index) are current
    /// while it is unchanged, as far as this process's writes go.
    generation: std::sync::atomic::AtomicU64,
    /// When `generation` last changed (ms since the epoch).
    changed_ms: std::sync::atomic::AtomicU64,
}

/// The raw-text memo. A hit reads a 16-byte table slot and one entry holding the series and
/// the text together (a separate text allocation was a second cache miss per point, a tenth of
/// the ingest CPU). Entries are laid end to end in insertion order: senders repeat their series
/// in the same order each interval, so a burst's look-ups walk the entries in memory order and
/// the hardware prefetches them (one allocation per entry scattered them by size class, and the
/// comparison's first load missed the cache: 14 % of the Graphite ingest's CPU).
#[derive(Default)]
struct RawMemo {
    hasher: ahash::RandomState,
    table: parking_lot::RwLock<RawTable>,
}

#[derive(Default)]
struct RawTable {
    slots: hashbrown::HashTable<RawEntry>,
    /// Where the entries live: chunks that are never grown past their capacity (so never
    /// moved) and only freed by `clear`, under the write lock like every change of `slots`.
    arena: Vec<Vec<u8>>,
}

/// Arena chunk size; an entry longer than this gets a chunk of its own.
const CHUNK: usize = 64 << 10;

impl RawTable {
    fn insert(&mut self, hash: u64, series: Series, text: &[u8], hasher: &ahash::RandomState) {
        let need = HEAD + text.len();
        // Room for the entry and the end mark after it.
        if self
            .arena
            .last()
            .is_none_or(|c| c.capacity() - c.len() < need + END)
        {
            self.arena.push(Vec::with_capacity((need + END).max(CHUNK)));
        }
        let chunk = self.arena.last_mut().expect("pushed above");
        // The previous end mark (if any) becomes this entry's text length.
        chunk.truncate(chunk.len().saturating_sub(END));
        let at = chunk.len();
        chunk.extend_from_slice(
            &u32::try_from(text.len())
                .expect("memo texts are short (RAW_TEXT_MAX)")
                .to_ne_bytes(),
        );
        chunk.extend_from_slice(&(series as *const SeriesKey as usize).to_ne_bytes());
        chunk.extend_from_slice(text);
        chunk.extend_from_slice(&0u32.to_ne_bytes());
        // Within capacity: the chunk's buffer stays where it is. The pointer is taken from the
        // whole buffer (not a slice of this entry), so readers may step from it to the next
        // entry, written later through the same buffer.
        // SAFETY: `at` is within the chunk's initialised bytes.
        let entry = RawEntry {
            at: unsafe { chunk.as_ptr().add(at) },
            len: need,
        };
        self.slots
            .insert_unique(hash, entry, |e| hasher.hash_one(e.text()));
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.arena.clear();
    }
}

/// An entry in the arena: the text's length (4 bytes), the series' address (8 bytes), both in
/// native order, then the text. A chunk's last entry is followed by a length of 0, so a reader
/// can tell from an entry whether another follows it (see [`RawReader::get`]).
struct RawEntry {
    at: *const u8,
    len: usize,
}

// SAFETY: an entry points into its table's arena, which is only changed (appended to, or
// cleared together with the entries) under the table's write lock; readers hold the read lock.
unsafe impl Send for RawEntry {}
unsafe impl Sync for RawEntry {}

const ADDR: usize = std::mem::size_of::<usize>();
const LEN: usize = 4;
const HEAD: usize = LEN + ADDR;
const END: usize = LEN;

impl RawEntry {
    fn bytes(&self) -> &[u8] {
        // SAFETY: see the Send/Sync impls: the arena bytes outlive every borrow of the table.
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }

    fn text(&self) -> &[u8] {
        &self.bytes()[HEAD..]
    }

    fn series(&self) -> Series {
        let addr =
            usize::from_ne_bytes(self.bytes()[LEN..HEAD].try_into().expect("address prefix"));
        // SAFETY: written by `RawTable::insert` from a `&'static SeriesKey`; series keys are
        // never freed.
        unsafe { &*(addr as *const SeriesKey) }
    }
}

/// The raw-text memo held for reading (see `SeriesResolver::raw_reader`).
pub struct RawReader<'a> {
    hasher: &'a ahash::RandomState,
    table: parking_lot::RwLockReadGuard<'a, RawTable>,
    /// The entry after the last one found (its start in the arena), if there is one.
    next: std::cell::Cell<Option<*const u8>>,
    /// Look-ups answered by that entry.
    #[cfg(test)]
    guessed: std::cell::Cell<usize>,
}

impl RawReader<'_> {
    /// The series `text` named before. Senders repeat their series in the order they first
    /// sent them, which is the arena's order: the entry after the last one found is tried
    /// first, by its text alone, before hashing `text` and probing the table (a probe that
    /// missed the cache, 7 % of the remote-write ingest's CPU, and the hash another 2 %).
    pub fn get(&self, text: &[u8]) -> Option<Series> {
        if let Some(at) = self.next.get() {
            // SAFETY: `at` is the start of an entry in this table's arena (never an end mark:
            // see `found`), which cannot change while `self.table` is held.
            let entry = unsafe {
                let n =
                    u32::from_ne_bytes(std::ptr::read_unaligned(at as *const [u8; LEN])) as usize;
                (n == text.len()).then(|| RawEntry { at, len: HEAD + n })
            };
            if let Some(e) = entry.filter(|e| e.text() == text) {
                #[cfg(test)]
                self.guessed.set(self.guessed.get() + 1);
                return Some(self.found(&e));
            }
        }
        let hash = self.hasher.hash_one(text);
        let e = self.table.slots.find(hash, |e| e.text() == text)?;
        Some(self.found(e))
    }

    fn found(&self, e: &RawEntry) -> Series {
        // SAFETY: an entry is followed within its chunk by the next entry or the end mark.
        let after = unsafe { e.at.add(e.len) };
        // SAFETY: as above; the end mark is a length of 0.
        let more = unsafe { std::ptr::read_unaligned(after as *const [u8; LEN]) } != [0; LEN];
        self.next.set(more.then_some(after));
        e.series()
    }
}

/// Entries the raw-text memo stops growing at: it only saves work (the canonical cache still
/// answers for every series), and each entry holds the text again (~100 bytes), so past this
/// many series the rest take the longer path rather than the memory.
const RAW_MAX: usize = 1 << 18;

/// Longest text the memo remembers. Texts are bounded by the protocols' limits on lines and
/// names, but `/api/put`'s is a tags object as sent, whose whitespace and repeated keys only a
/// request's size bounds: past this, a series takes the longer path every time.
const RAW_TEXT_MAX: usize = 512;

thread_local! {
    static KEY: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(256));
}

/// Writes the canonical key of a series; validated names never contain `\0`, the separator.
fn canonical(metric: &str, tags: &[(&str, &str)], out: &mut Vec<u8>) {
    out.clear();
    append_canonical(metric, tags, out);
}

/// Whose text a raw-text memo key holds: each protocol names a series in its own words, and
/// the first byte of every key keeps those vocabularies apart (a telnet line's words could
/// otherwise spell a Graphite path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum TextKind {
    /// Metric and tags, canonical ([`names_text`]).
    Names = b'c',
    /// An `/api/put` point's metric and `tags` object as sent ([`json_text`]).
    Json = b'j',
    /// A telnet `put` line's metric and tag words as written.
    Telnet = b't',
    /// A Graphite path as sent.
    Graphite = b'g',
    /// A remote-write series' labels as encoded.
    Prometheus = b'p',
}

impl TextKind {
    /// Starts a key of this kind in `out` (cleared first).
    pub fn begin(self, out: &mut Vec<u8>) {
        out.clear();
        out.push(self as u8);
    }
}

/// The raw-text memo's key for a series named by metric and tags (protocols whose points come
/// as names, not as text of their own: `/api/put` JSON): `c` and the canonical key, appended.
pub fn names_text(metric: &str, tags: &[(&str, &str)], out: &mut Vec<u8>) {
    out.push(TextKind::Names as u8);
    append_canonical(metric, tags, out);
}

/// The raw-text memo's key for an `/api/put` point by its metric and its `tags` object as
/// sent (`JsonPoint::tags_raw`): `j`, the metric's length, the metric, the object's text,
/// appended. Equal keys are equal series without decoding or checking the tags again.
pub fn json_text(metric: &str, tags_raw: &str, out: &mut Vec<u8>) {
    out.push(TextKind::Json as u8);
    out.extend_from_slice(&(metric.len() as u32).to_le_bytes());
    out.extend_from_slice(metric.as_bytes());
    out.extend_from_slice(tags_raw.as_bytes());
}

fn append_canonical(metric: &str, tags: &[(&str, &str)], out: &mut Vec<u8>) {
    out.extend_from_slice(metric.as_bytes());
    let mut order: [usize; 32] = [0; 32];
    let n = tags.len();
    if n <= 32 {
        for (i, o) in order.iter_mut().enumerate().take(n) {
            *o = i;
        }
        order[..n].sort_unstable_by(|&a, &b| tags[a].0.cmp(tags[b].0));
        for &i in &order[..n] {
            push_tag(out, tags[i]);
        }
    } else {
        let mut sorted: Vec<_> = tags.to_vec();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for t in sorted {
            push_tag(out, t);
        }
    }
}

fn push_tag(out: &mut Vec<u8>, (k, v): (&str, &str)) {
    out.push(0);
    out.extend_from_slice(k.as_bytes());
    out.push(0);
    out.extend_from_slice(v.as_bytes());
}

impl SeriesResolver {
    pub fn new(uids: Arc<UidCore>) -> SeriesResolver {
        SeriesResolver {
            uids,
            cache: DashMap::with_hasher(ahash::RandomState::new()),
            raw: RawMemo::default(),
            new_series: std::sync::OnceLock::new(),
            gate: std::sync::OnceLock::new(),
            generation: std::sync::atomic::AtomicU64::new(0),
            changed_ms: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Installs the new-series hook (once).
    pub fn set_new_series_hook(&self, hook: NewSeriesHook) {
        let _ = self.new_series.set(hook);
    }

    /// Makes new UIDs and the gate's admissions durable: a WAL record must not name a series
    /// or a UID a crash could forget.
    pub fn sync_if_dirty(&self) -> Result<(), UidError> {
        self.uids.sync_if_dirty()?;
        if let Some(g) = self.gate.get() {
            g.sync()?;
        }
        Ok(())
    }

    /// Whether [`SeriesResolver::sync_if_dirty`] has work: a batch whose series were all
    /// cached may still hold one another batch admitted but has not yet synced.
    pub fn unsynced(&self) -> bool {
        self.uids.unsynced() || self.gate.get().is_some_and(|g| g.unsynced())
    }

    /// Installs the gate new series pass (once).
    pub fn set_gate(&self, gate: Arc<dyn SeriesGate>) {
        let _ = self.gate.set(gate);
    }

    pub fn uids(&self) -> &Arc<UidCore> {
        &self.uids
    }

    /// The TSUID when the series is cached; never touches the store.
    pub fn cached(&self, metric: &str, tags: &[(&str, &str)]) -> Option<Series> {
        KEY.with(|k| {
            let mut k = k.borrow_mut();
            canonical(metric, tags, &mut k);
            self.cache.get(k.as_slice()).map(|t| *t)
        })
    }

    /// Reads the raw-text memo (the series a protocol's raw text named before, see `raw`) for
    /// a whole batch under one lock: one shared-counter update per batch, not per point. Drop
    /// it before awaiting, and take no other reader or `remember_raw` while holding it.
    pub fn raw_reader(&self) -> RawReader<'_> {
        RawReader {
            hasher: &self.raw.hasher,
            table: self.raw.table.read(),
            next: std::cell::Cell::new(None),
            #[cfg(test)]
            guessed: Default::default(),
        }
    }

    /// Remembers that `text` names `series` (its names were accepted).
    pub fn remember_raw(&self, text: &[u8], series: Series) {
        if text.len() > RAW_TEXT_MAX {
            return;
        }
        let hasher = &self.raw.hasher;
        let hash = hasher.hash_one(text);
        {
            // Full, or already there: no write lock (readers hold the lock a batch at a time).
            let table = self.raw.table.read();
            if table.slots.len() >= RAW_MAX
                || table.slots.find(hash, |e| e.text() == text).is_some()
            {
                return;
            }
        }
        let mut table = self.raw.table.write();
        if table.slots.len() < RAW_MAX && table.slots.find(hash, |e| e.text() == text).is_none() {
            table.insert(hash, series, text, hasher);
        }
    }

    /// Resolves (and if allowed creates) every UID of the series. May do store I/O: call it
    /// off the async threads.
    pub fn resolve(&self, metric: &str, tags: &[(&str, &str)]) -> Result<Series, UidError> {
        if let Some(t) = self.cached(metric, tags) {
            return Ok(t);
        }
        let m = self.uids.get_or_create(UidKind::Metric, metric)?;
        let mut pairs: Vec<Vec<u8>> = Vec::with_capacity(tags.len());
        for (k, v) in tags {
            let mut p = self.uids.get_or_create(UidKind::Tagk, k)?.into_vec();
            p.extend_from_slice(&self.uids.get_or_create(UidKind::Tagv, v)?);
            pairs.push(p);
        }
        tsgate_schema::rowkey::sort_tag_pairs(&mut pairs);
        let mut tsuid = m.into_vec();
        for p in pairs {
            tsuid.extend_from_slice(&p);
        }
        if let Some(g) = self.gate.get() {
            g.admit(&tsuid).map_err(UidError::SeriesLimit)?;
        }
        let series = SeriesKey::new(&tsuid);
        let mut key = Vec::new();
        canonical(metric, tags, &mut key);
        self.cache.insert(key.into_boxed_slice(), series);
        self.bump();
        if let Some(hook) = self.new_series.get() {
            hook(series.tsuid);
        }
        Ok(series)
    }

    /// Resolves without creating anything (queries).
    pub fn lookup(&self, metric: &str, tags: &[(&str, &str)]) -> Result<Tsuid, UidError> {
        if let Some(t) = self.cached(metric, tags) {
            return Ok(Tsuid::from(t.tsuid));
        }
        let mut tsuid = self.uids.require_id(UidKind::Metric, metric)?.into_vec();
        let mut pairs = Vec::new();
        for (k, v) in tags {
            let mut p = self.uids.require_id(UidKind::Tagk, k)?.into_vec();
            p.extend_from_slice(&self.uids.require_id(UidKind::Tagv, v)?);
            pairs.push(p);
        }
        pairs.sort_unstable();
        for p in pairs {
            tsuid.extend_from_slice(&p);
        }
        Ok(tsuid.into())
    }

    fn bump(&self) {
        self.changed_ms.store(
            tsgate_common::clock::now_ms(),
            std::sync::atomic::Ordering::Release,
        );
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// See `generation`: its value, and when it last changed (ms since the epoch).
    pub fn generation(&self) -> (u64, u64) {
        let g = self.generation.load(std::sync::atomic::Ordering::Acquire);
        (
            g,
            self.changed_ms.load(std::sync::atomic::Ordering::Acquire),
        )
    }

    /// Drops `tsuids` from the caches (retention dropped all their rows and the cardinality
    /// counts forgot them): a later point of one is admitted, and counted, anew. The raw-text
    /// memo cannot drop single entries and is emptied (it only saves parsing).
    pub fn forget(&self, tsuids: &[Vec<u8>]) {
        let gone: std::collections::HashSet<&[u8]> = tsuids.iter().map(|t| t.as_slice()).collect();
        let before = self.cache.len();
        self.cache.retain(|_, s| !gone.contains(s.tsuid));
        if self.cache.len() != before {
            self.raw.table.write().clear();
            self.bump();
        }
    }

    pub fn drop_caches(&self) {
        self.cache.clear();
        self.raw.table.write().clear();
        self.bump();
        self.uids.drop_caches();
    }

    pub fn len(&self) -> usize {
        self.cache.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_key_ignores_tag_order() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        canonical("m", &[("host", "a"), ("dc", "x")], &mut a);
        canonical("m", &[("dc", "x"), ("host", "a")], &mut b);
        assert_eq!(a, b);
        canonical("m", &[("dc", "xhost")], &mut b);
        assert_ne!(a, b);
    }

    /// A series forgotten (retention dropped all its rows) passes the gate again at its next
    /// point, however it was named before; the others stay cached.
    #[test]
    fn a_forgotten_series_is_admitted_anew() {
        struct Count(parking_lot::Mutex<Vec<Vec<u8>>>);
        impl SeriesGate for Count {
            fn admit(&self, tsuid: &[u8]) -> Result<(), SeriesRefused> {
                self.0.lock().push(tsuid.to_vec());
                Ok(())
            }
        }
        let d = tempfile::tempdir().unwrap();
        let store = Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(
                d.path(),
                &tsgate_store::TableNames::default().specs(),
            )
            .unwrap(),
        );
        let r = SeriesResolver::new(Arc::new(UidCore::new(
            store,
            "tsdb-uid".into(),
            [3, 3, 3],
            [true, true, true],
        )));
        let gate = Arc::new(Count(Default::default()));
        r.set_gate(gate.clone());
        let a = r.resolve("m", &[("host", "a")]).unwrap();
        let b = r.resolve("m", &[("host", "b")]).unwrap();
        r.remember_raw(b"ta", a);
        r.resolve("m", &[("host", "a")]).unwrap();
        assert_eq!(gate.0.lock().len(), 2);
        r.forget(&[a.tsuid.to_vec()]);
        assert!(r.raw_reader().get(b"ta").is_none());
        r.resolve("m", &[("host", "b")]).unwrap();
        assert_eq!(gate.0.lock().len(), 2);
        r.resolve("m", &[("host", "a")]).unwrap();
        assert_eq!(
            *gate.0.lock(),
            vec![a.tsuid.to_vec(), b.tsuid.to_vec(), a.tsuid.to_vec()]
        );
        // The new UIDs (no journal here) wait for a sync of the store, which `sync_if_dirty`
        // makes; the gate has none of its own.
        assert!(r.unsynced());
        r.sync_if_dirty().unwrap();
        assert!(!r.unsynced());
    }

    #[test]
    fn the_memo_keeps_no_text_longer_than_its_cap() {
        let d = tempfile::tempdir().unwrap();
        let store = Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(
                d.path(),
                &tsgate_store::TableNames::default().specs(),
            )
            .unwrap(),
        );
        let r = SeriesResolver::new(Arc::new(UidCore::new(
            store,
            "tsdb-uid".into(),
            [3, 3, 3],
            [true, true, true],
        )));
        let series = SeriesKey::new(b"memo-cap-test");
        let (short, long) = (vec![b'j'; RAW_TEXT_MAX], vec![b'j'; RAW_TEXT_MAX + 1]);
        r.remember_raw(&short, series);
        r.remember_raw(&long, series);
        let memo = r.raw_reader();
        assert!(memo.get(&short).is_some_and(|s| std::ptr::eq(s, series)));
        assert!(memo.get(&long).is_none());
    }

    /// Look-ups in the order of insertion (the next entry guessed), out of it, of texts that
    /// are not there, and across arena chunks all find what the table holds.
    #[test]
    fn the_memo_finds_each_text_in_any_order() {
        let d = tempfile::tempdir().unwrap();
        let store = Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(
                d.path(),
                &tsgate_store::TableNames::default().specs(),
            )
            .unwrap(),
        );
        let r = SeriesResolver::new(Arc::new(UidCore::new(
            store,
            "tsdb-uid".into(),
            [3, 3, 3],
            [true, true, true],
        )));
        // Texts of equal and varying lengths, enough to fill several 64 KiB chunks; one empty.
        let texts: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| format!("p{i:05}{}", "x".repeat((i % 97) as usize)).into_bytes())
            .chain([Vec::new()])
            .collect();
        let keys: Vec<Series> = texts
            .iter()
            .map(|t| SeriesKey::new(&[b"memo-order:".as_slice(), t].concat()))
            .collect();
        for (t, k) in texts.iter().zip(&keys) {
            r.remember_raw(t, k);
        }
        assert!(
            r.raw.table.read().arena.len() > 2,
            "the texts span several chunks"
        );
        let memo = r.raw_reader();
        let check = |order: &mut dyn Iterator<Item = usize>| {
            for i in order {
                assert!(
                    memo.get(&texts[i])
                        .is_some_and(|s| std::ptr::eq(s, keys[i])),
                    "text {i}"
                );
                // A text one byte off the next one's, and one never remembered.
                let mut near = texts[(i + 1) % texts.len()].clone();
                if let Some(b) = near.last_mut() {
                    *b ^= 1;
                    assert!(memo.get(&near).is_none_or(|s| texts
                        .iter()
                        .position(|t| *t == near)
                        .is_some_and(|j| std::ptr::eq(s, keys[j]))));
                }
            }
        };
        check(&mut (0..texts.len()));
        // In order, every text but the first of each chunk (and the empty one, which reads as
        // an end mark) is found without the table.
        let chunks = r.raw.table.read().arena.len();
        assert!(
            memo.guessed.get() >= texts.len() - chunks - 1,
            "{} guessed",
            memo.guessed.get()
        );
        check(&mut (0..texts.len()).rev());
        check(&mut (0..texts.len()).map(|i| i * 7919 % texts.len()));
        assert!(memo.get(b"never").is_none());
    }
}
