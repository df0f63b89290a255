//! The UID core: names ↔ fixed-width ids in `tsdb-uid`, assigned with OpenTSDB 2.x's
//! algorithm (increment the kind's counter, CAS the reverse map, CAS the forward map), so
//! several processes sharing one store never hand out one id twice. Cached both ways.

use crate::uid_journal::UidJournal;
use dashmap::DashMap;
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use tsgate_schema::uid_table::{
    decode_counter, id_bytes, id_from_bytes, UidKind, ID_FAMILY, MAXID_ROW, NAME_FAMILY,
};
use tsgate_store::{Mutation, RowMutations, Scan, SharedStore, StoreError};

pub type Uid = Box<[u8]>;

/// Why the series gate (`series::SeriesGate`, the cardinality limits) refused a new series.
#[derive(Debug, thiserror::Error)]
pub enum SeriesRefused {
    #[error("new series refused: limits.max_series = {0} reached")]
    MaxSeries(u64),
    #[error("new series refused: limits.max_series_per_metric = {0} reached for this metric")]
    MaxSeriesPerMetric(u64),
    #[error("new series refused: limits.max_new_series_per_minute = {0} reached")]
    MaxNewSeriesPerMinute(u64),
    /// The series log could not record it (it would be forgotten after a crash).
    #[error("new series not recorded in {path}: {source}")]
    NotRecorded {
        path: String,
        source: std::io::Error,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum UidError {
    /// A new series over a cardinality limit (`limits.max_series*`): it gets no TSUID.
    #[error(transparent)]
    SeriesLimit(#[from] SeriesRefused),
    #[error("No such name for '{kind}': '{name}'")]
    NoSuchName { kind: &'static str, name: String },
    #[error("No such unique ID for '{kind}': {id}")]
    NoSuchId { kind: &'static str, id: String },
    #[error("All Unique IDs for {kind} on {width} bytes are already assigned!")]
    Exhausted { kind: &'static str, width: usize },
    #[error("Found id.length = {len} which is != {width} required for '{kind}'")]
    WrongWidth {
        kind: &'static str,
        len: usize,
        width: usize,
    },
    #[error("Name already exists with UID: {0}")]
    Exists(String),
    #[error("Failed to assign an ID for kind='{kind}' name='{name}' after {attempts} attempts")]
    Failed {
        kind: &'static str,
        name: String,
        attempts: usize,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Journal(#[from] crate::uid_journal::JournalError),
}

pub struct UidCore {
    store: SharedStore,
    table: String,
    widths: [usize; 3],
    auto_create: [bool; 3],
    forward: [DashMap<Box<str>, Uid>; 3],
    reverse: [DashMap<Uid, Box<str>>; 3],
    /// One assignment at a time per kind inside this process (the CAS protects across processes).
    assigning: [Mutex<()>; 3],
    /// Changes written since the store was last made durable (every new mapping, without a
    /// journal; renames).
    dirty: AtomicBool,
    /// Where new mappings are made durable instead of syncing the whole store (embedded).
    journal: Option<UidJournal>,
    /// Each kind's names as last listed (see [`UidCore::list`]).
    listed: [Mutex<Listed>; 3],
}

/// A kind's names as last listed, with its counter then: every PromQL selector without a
/// metric name lists the metrics, and a scan of every name of every kind (a million tag values
/// at high cardinality) was half of a label look-up's time.
#[derive(Default)]
struct Listed {
    /// Moved by every change to the kind's names here: a listing that began before one is
    /// not kept.
    changes: u64,
    kept: Option<Kept>,
}

/// A listing kept: the kind's counter when it was read, when, and the names.
struct Kept {
    counter: i64,
    at: std::time::Instant,
    names: std::sync::Arc<[(String, Uid)]>,
}

/// How long a kind's listing is used while its counter stands still: names another process
/// renames or removes (no counter moves) are seen this late at worst.
const LISTED_FOR: std::time::Duration = std::time::Duration::from_secs(30);

fn idx(k: UidKind) -> usize {
    k as usize
}

const MAX_ATTEMPTS: usize = 3;

impl UidCore {
    pub fn new(
        store: SharedStore,
        table: String,
        widths: [usize; 3],
        auto_create: [bool; 3],
    ) -> UidCore {
        UidCore {
            store,
            table,
            widths,
            auto_create,
            forward: Default::default(),
            reverse: Default::default(),
            assigning: Default::default(),
            dirty: AtomicBool::new(false),
            journal: None,
            listed: Default::default(),
        }
    }

    /// Keeps new mappings durable in the journal at `path` rather than by syncing the store.
    /// First puts back what the journal an earlier run left holds: an id without a name
    /// in the store (a crash took both of its cells) gets its name again, and each kind's
    /// counter is raised past every id the journal holds; then the store is synced and the
    /// journal starts empty.
    pub fn with_journal(mut self, path: &Path) -> Result<UidCore, UidError> {
        let found = UidJournal::read(path)?;
        let mut restored = 0;
        let mut highest = [0u64; 3];
        for a in &found {
            let q = a.kind.qualifier();
            let id = id_from_bytes(&a.uid);
            highest[idx(a.kind)] = highest[idx(a.kind)].max(id);
            let named = self.store.get(&self.table, &a.uid, &[NAME_FAMILY])?;
            if named.iter().any(|c| c.qualifier == q) {
                continue; // still there, renamed since, or never lost
            }
            if self.read_forward(a.kind, &a.name)?.is_some() {
                continue; // the name has another id now
            }
            self.store.mutate(
                &self.table,
                vec![
                    RowMutations::put(
                        a.uid.clone(),
                        NAME_FAMILY,
                        q.to_vec(),
                        a.name.as_bytes().to_vec(),
                    ),
                    RowMutations::put(
                        a.name.as_bytes().to_vec(),
                        ID_FAMILY,
                        q.to_vec(),
                        a.uid.clone(),
                    ),
                ],
            )?;
            restored += 1;
        }
        for kind in UidKind::ALL {
            let want = highest[idx(kind)] as i64;
            if want == 0 {
                continue;
            }
            let now =
                self.store
                    .increment(&self.table, MAXID_ROW, ID_FAMILY, kind.qualifier(), 0)?;
            if now < want {
                self.store.increment(
                    &self.table,
                    MAXID_ROW,
                    ID_FAMILY,
                    kind.qualifier(),
                    want - now,
                )?;
            }
        }
        if !found.is_empty() {
            self.store.flush()?;
            tracing::info!(records = found.len(), restored, "UID journal replayed");
        }
        self.journal = Some(UidJournal::open_empty(path)?);
        Ok(self)
    }

    /// Notes a new mapping (already in the store) as needing to be made durable.
    fn assigned(&self, kind: UidKind, name: &str, uid: &[u8]) {
        self.unlist(kind);
        match &self.journal {
            Some(j) => j.record(kind, uid, name),
            None => self.dirty.store(true, Ordering::Release),
        }
    }

    /// Whether a mapping another batch made (and may already find in the cache) is not yet
    /// durable: a batch referring to it must sync before its acknowledgement.
    pub fn unsynced(&self) -> bool {
        self.dirty.load(Ordering::Acquire) || self.journal.as_ref().is_some_and(|j| j.unsynced())
    }

    pub fn width(&self, kind: UidKind) -> usize {
        self.widths[idx(kind)]
    }

    /// Cache-only lookup: never touches the store.
    pub fn cached_id(&self, kind: UidKind, name: &str) -> Option<Uid> {
        self.forward[idx(kind)].get(name).map(|v| v.clone())
    }

    fn remember(&self, kind: UidKind, name: &str, uid: &[u8]) {
        self.forward[idx(kind)].insert(name.into(), uid.into());
        self.reverse[idx(kind)].insert(uid.into(), name.into());
    }

    fn read_forward(&self, kind: UidKind, name: &str) -> Result<Option<Uid>, UidError> {
        let cells = self.store.get(&self.table, name.as_bytes(), &[ID_FAMILY])?;
        let Some(c) = cells.iter().find(|c| c.qualifier == kind.qualifier()) else {
            return Ok(None);
        };
        let w = self.width(kind);
        if c.value.len() != w {
            return Err(UidError::WrongWidth {
                kind: kind.as_str(),
                len: c.value.len(),
                width: w,
            });
        }
        Ok(Some(c.value.clone().into_boxed_slice()))
    }

    /// The id of `name`, from the cache or the store; `None` if it has none.
    pub fn get_id(&self, kind: UidKind, name: &str) -> Result<Option<Uid>, UidError> {
        if let Some(u) = self.cached_id(kind, name) {
            crate::observe::metrics().uid(kind).hits.inc();
            return Ok(Some(u));
        }
        crate::observe::metrics().uid(kind).misses.inc();
        let found = self.read_forward(kind, name)?;
        if let Some(u) = &found {
            self.remember(kind, name, u);
        }
        Ok(found)
    }

    /// The id of `name`, or an error naming it as OpenTSDB does.
    pub fn require_id(&self, kind: UidKind, name: &str) -> Result<Uid, UidError> {
        self.get_id(kind, name)?
            .ok_or_else(|| UidError::NoSuchName {
                kind: kind.as_str(),
                name: name.into(),
            })
    }

    /// The id of `name`, creating it when this kind auto-creates.
    pub fn get_or_create(&self, kind: UidKind, name: &str) -> Result<Uid, UidError> {
        if let Some(u) = self.get_id(kind, name)? {
            return Ok(u);
        }
        if !self.auto_create[idx(kind)] {
            return Err(UidError::NoSuchName {
                kind: kind.as_str(),
                name: name.into(),
            });
        }
        self.create(kind, name).map(|(u, _)| u)
    }

    /// Makes sure every name of `names` has an id (when this kind auto-creates), with one
    /// counter increment for all those that need one: a burst of new series (a fleet's first
    /// report, Graphite paths stored whole) otherwise costs an increment and a turn of the
    /// assignment lock per name. Afterwards `get_or_create` finds them cached. A name this
    /// cannot settle (a lost CAS) is left to `get_or_create`, which retries it on its own.
    pub fn create_many(&self, kind: UidKind, names: &[&str]) -> Result<(), UidError> {
        if !self.auto_create[idx(kind)] {
            return Ok(());
        }
        let mut seen = std::collections::HashSet::new();
        let missing: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| self.cached_id(kind, n).is_none() && seen.insert(*n))
            .collect();
        if missing.len() < 2 {
            return Ok(());
        }
        let _one = self.assigning[idx(kind)].lock();
        let mut new = Vec::with_capacity(missing.len());
        for name in missing {
            match self.read_forward(kind, name)? {
                Some(u) => self.remember(kind, name, &u),
                None => new.push(name),
            }
        }
        if new.is_empty() {
            return Ok(());
        }
        let q = kind.qualifier();
        let width = self.width(kind);
        let last = self
            .store
            .increment(&self.table, MAXID_ROW, ID_FAMILY, q, new.len() as i64)?;
        let first = last - new.len() as i64 + 1;
        if first <= 0 {
            return Ok(()); // a counter gone wrong: each name takes the one-at-a-time path
        }
        for (i, name) in new.into_iter().enumerate() {
            let uid = id_bytes((first + i as i64) as u64, width).ok_or(UidError::Exhausted {
                kind: kind.as_str(),
                width,
            })?;
            // As in `create`: reverse first, then forward; a lost race leaves the id unused.
            if !self.store.check_and_put(
                &self.table,
                &uid,
                NAME_FAMILY,
                q,
                None,
                name.as_bytes(),
            )? {
                continue;
            }
            if self
                .store
                .check_and_put(&self.table, name.as_bytes(), ID_FAMILY, q, None, &uid)?
            {
                self.assigned(kind, name, &uid);
                self.remember(kind, name, &uid);
                crate::observe::metrics().uid(kind).assigned.inc();
            } else if let Some(winner) = self.read_forward(kind, name)? {
                self.remember(kind, name, &winner);
            }
        }
        Ok(())
    }

    /// Assigns a new id (for `/api/uid/assign` and `tsgate uid assign`): an existing name is an error.
    pub fn assign(&self, kind: UidKind, name: &str) -> Result<Uid, UidError> {
        if let Some(u) = self.get_id(kind, name)? {
            return Err(UidError::Exists(tsgate_schema::hex_upper(&u)));
        }
        match self.create(kind, name)? {
            (u, true) => Ok(u),
            (u, false) => Err(UidError::Exists(tsgate_schema::hex_upper(&u))),
        }
    }

    /// OpenTSDB 2.x's allocation; returns the id and whether this call created it.
    fn create(&self, kind: UidKind, name: &str) -> Result<(Uid, bool), UidError> {
        let _one = self.assigning[idx(kind)].lock();
        if let Some(u) = self.read_forward(kind, name)? {
            self.remember(kind, name, &u);
            return Ok((u, false));
        }
        let q = kind.qualifier();
        let width = self.width(kind);
        for _ in 0..MAX_ATTEMPTS {
            let id = self
                .store
                .increment(&self.table, MAXID_ROW, ID_FAMILY, q, 1)?;
            if id <= 0 {
                continue;
            }
            let uid = id_bytes(id as u64, width).ok_or(UidError::Exhausted {
                kind: kind.as_str(),
                width,
            })?;
            // Reverse first: a dangling reverse mapping is harmless, a dangling forward one is not.
            if !self.store.check_and_put(
                &self.table,
                &uid,
                NAME_FAMILY,
                q,
                None,
                name.as_bytes(),
            )? {
                tracing::warn!(
                    kind = kind.as_str(),
                    name,
                    "failed to CAS reverse mapping, retrying with a new id"
                );
                continue;
            }
            if !self
                .store
                .check_and_put(&self.table, name.as_bytes(), ID_FAMILY, q, None, &uid)?
            {
                // Another writer won the race: its id stands, ours is leaked.
                let winner = self
                    .read_forward(kind, name)?
                    .ok_or_else(|| UidError::Failed {
                        kind: kind.as_str(),
                        name: name.into(),
                        attempts: MAX_ATTEMPTS,
                    })?;
                self.remember(kind, name, &winner);
                return Ok((winner, false));
            }
            self.assigned(kind, name, &uid);
            self.remember(kind, name, &uid);
            crate::observe::metrics().uid(kind).assigned.inc();
            return Ok((uid.into_boxed_slice(), true));
        }
        Err(UidError::Failed {
            kind: kind.as_str(),
            name: name.into(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Makes new mappings durable before anything referring to them is acknowledged: new
    /// ones through the journal when there is one, anything else by syncing the store.
    pub fn sync_if_dirty(&self) -> Result<(), UidError> {
        if let Some(j) = &self.journal {
            j.sync(|| self.store.flush())?;
        }
        if self.dirty.swap(false, Ordering::AcqRel) {
            let start = std::time::Instant::now();
            if let Err(e) = self.store.flush() {
                self.dirty.store(true, Ordering::Release);
                return Err(e.into());
            }
            crate::observe::write::uid_sync(start);
        }
        Ok(())
    }

    pub fn get_name(&self, kind: UidKind, uid: &[u8]) -> Result<Box<str>, UidError> {
        if let Some(n) = self.reverse[idx(kind)].get(uid) {
            return Ok(n.clone());
        }
        let cells = self.store.get(&self.table, uid, &[NAME_FAMILY])?;
        let c = cells
            .iter()
            .find(|c| c.qualifier == kind.qualifier())
            .ok_or_else(|| UidError::NoSuchId {
                kind: kind.as_str(),
                id: format!("{:?}", uid.iter().map(|&b| b as i8).collect::<Vec<_>>()),
            })?;
        let name: Box<str> = String::from_utf8_lossy(&c.value).into();
        self.reverse[idx(kind)].insert(uid.into(), name.clone());
        Ok(name)
    }

    /// Renames a UID: new reverse value, new forward row, old forward row deleted.
    pub fn rename(&self, kind: UidKind, old: &str, new: &str) -> Result<Uid, UidError> {
        let uid = self.require_id(kind, old)?;
        if let Some(u) = self.get_id(kind, new)? {
            return Err(UidError::Exists(tsgate_schema::hex_upper(&u)));
        }
        let q = kind.qualifier().to_vec();
        self.store.mutate(
            &self.table,
            vec![RowMutations::put(
                uid.to_vec(),
                NAME_FAMILY,
                q.clone(),
                new.as_bytes().to_vec(),
            )],
        )?;
        self.store.mutate(
            &self.table,
            vec![RowMutations::put(
                new.as_bytes().to_vec(),
                ID_FAMILY,
                q.clone(),
                uid.to_vec(),
            )],
        )?;
        self.store.mutate(
            &self.table,
            vec![RowMutations {
                row: old.as_bytes().to_vec(),
                mutations: vec![Mutation::Delete {
                    family: ID_FAMILY.to_vec(),
                    qualifier: q,
                }],
            }],
        )?;
        self.forward[idx(kind)].remove(old);
        self.remember(kind, new, &uid);
        self.unlist(kind);
        self.dirty.store(true, Ordering::Release);
        Ok(uid)
    }

    /// Every (name, uid) of a kind, in name byte order (forward rows). Metrics and tag keys
    /// are listed again only once the kind's counter has moved (a name assigned here or by
    /// another process), a name was renamed here, or [`LISTED_FOR`] has passed; tag values
    /// (as many as the series, and listed only by maintenance) are scanned each time.
    pub fn list(&self, kind: UidKind) -> Result<Vec<(String, Uid)>, UidError> {
        if kind == UidKind::Tagv {
            return self.scan_names(kind);
        }
        let counter = self
            .store
            .get(&self.table, MAXID_ROW, &[ID_FAMILY])?
            .iter()
            .find(|c| c.qualifier == kind.qualifier())
            .and_then(|c| decode_counter(&c.value))
            .unwrap_or(0);
        let changes = {
            let listed = self.listed[idx(kind)].lock();
            if let Some(k) = &listed.kept {
                if k.counter == counter && k.at.elapsed() < LISTED_FOR {
                    return Ok(k.names.to_vec());
                }
            }
            listed.changes
        };
        let names = self.scan_names(kind)?;
        let mut listed = self.listed[idx(kind)].lock();
        if listed.changes == changes {
            listed.kept = Some(Kept {
                counter,
                at: std::time::Instant::now(),
                names: names.as_slice().into(),
            });
        }
        Ok(names)
    }

    /// Forgets the kind's listing (its names changed here).
    fn unlist(&self, kind: UidKind) {
        let mut listed = self.listed[idx(kind)].lock();
        listed.changes += 1;
        listed.kept = None;
    }

    /// Every (name, uid) of a kind, read from the forward rows.
    fn scan_names(&self, kind: UidKind) -> Result<Vec<(String, Uid)>, UidError> {
        let scan = Scan {
            families: vec![ID_FAMILY.to_vec()],
            ..Default::default()
        };
        let mut out = Vec::new();
        for row in self.store.scan(&self.table, &scan)? {
            let row = row?;
            if row.key == MAXID_ROW {
                continue;
            }
            if let Some(c) = row.cells.iter().find(|c| c.qualifier == kind.qualifier()) {
                out.push((
                    String::from_utf8_lossy(&row.key).into_owned(),
                    c.value.clone().into_boxed_slice(),
                ));
            }
        }
        Ok(out)
    }

    /// Names of a kind starting with `prefix`, in byte order, at most `max` (`/api/suggest`).
    pub fn suggest(
        &self,
        kind: UidKind,
        prefix: &str,
        max: usize,
    ) -> Result<Vec<String>, UidError> {
        let start = prefix.as_bytes().to_vec();
        let mut stop = start.clone();
        // The smallest key after every name with this prefix.
        while let Some(last) = stop.pop() {
            if last < 0xFF {
                stop.push(last + 1);
                break;
            }
        }
        let scan = Scan {
            start,
            stop,
            families: vec![ID_FAMILY.to_vec()],
            ..Default::default()
        };
        let mut out = Vec::new();
        for row in self.store.scan(&self.table, &scan)? {
            let row = row?;
            if row.key == MAXID_ROW || !row.cells.iter().any(|c| c.qualifier == kind.qualifier()) {
                continue;
            }
            out.push(String::from_utf8_lossy(&row.key).into_owned());
            if out.len() >= max {
                break;
            }
        }
        Ok(out)
    }

    pub fn drop_caches(&self) {
        for kind in UidKind::ALL {
            self.unlist(kind);
        }
        for m in &self.forward {
            m.clear();
        }
        for m in &self.reverse {
            m.clear();
        }
    }

    pub fn cache_len(&self) -> usize {
        self.forward.iter().map(|m| m.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An embedded store with the default tables under `dir`.
    fn embedded(dir: &Path) -> SharedStore {
        std::sync::Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(
                dir,
                &tsgate_store::TableNames::default().specs(),
            )
            .unwrap(),
        )
    }

    /// A kept listing answers as a scan of the forward rows does: after names assigned here,
    /// by another process sharing the store (its counter moves), renamed here, and without
    /// any change.
    #[test]
    fn a_kept_listing_follows_every_change_to_the_names() {
        let d = tempfile::tempdir().unwrap();
        let store = embedded(d.path());
        let here = UidCore::new(store.clone(), "tsdb-uid".into(), [3, 3, 3], [true; 3]);
        let there = UidCore::new(store, "tsdb-uid".into(), [3, 3, 3], [true; 3]);
        let names = |u: &UidCore, kind| -> Vec<String> {
            u.list(kind).unwrap().into_iter().map(|(n, _)| n).collect()
        };
        let check = |kind, want: &[&str]| {
            assert_eq!(names(&here, kind), want);
            assert_eq!(here.list(kind).unwrap(), here.scan_names(kind).unwrap());
        };
        check(UidKind::Metric, &[]);
        here.get_or_create(UidKind::Metric, "b").unwrap();
        here.get_or_create(UidKind::Tagv, "v").unwrap();
        check(UidKind::Metric, &["b"]);
        check(UidKind::Metric, &["b"]);
        there.get_or_create(UidKind::Metric, "a").unwrap();
        check(UidKind::Metric, &["a", "b"]);
        there.create_many(UidKind::Tagk, &["k1", "k2"]).unwrap();
        check(UidKind::Tagk, &["k1", "k2"]);
        here.rename(UidKind::Metric, "b", "c").unwrap();
        check(UidKind::Metric, &["a", "c"]);
        here.assign(UidKind::Metric, "d").unwrap();
        check(UidKind::Metric, &["a", "c", "d"]);
        check(UidKind::Tagv, &["v"]);
    }

    /// New names in one batch take consecutive ids in first-seen order, with the counter
    /// moved once by their number; names already cached or repeated take none.
    #[test]
    fn bulk_assignment_takes_one_run_of_ids() {
        let d = tempfile::tempdir().unwrap();
        let store = embedded(d.path());
        let uids = UidCore::new(store, "tsdb-uid".into(), [3, 3, 3], [true, false, true]);
        assert_eq!(
            &*uids.get_or_create(UidKind::Metric, "known").unwrap(),
            &[0, 0, 1]
        );
        uids.create_many(UidKind::Metric, &["b", "known", "a", "b", "c"])
            .unwrap();
        for (name, id) in [("b", 2u8), ("a", 3), ("c", 4)] {
            assert_eq!(
                uids.cached_id(UidKind::Metric, name).as_deref(),
                Some(&[0, 0, id][..]),
                "{name}"
            );
        }
        assert_eq!(
            &*uids.get_or_create(UidKind::Metric, "d").unwrap(),
            &[0, 0, 5]
        );
        // A kind that does not auto-create gets nothing.
        uids.create_many(UidKind::Tagk, &["x", "y"]).unwrap();
        assert!(uids.get_id(UidKind::Tagk, "x").unwrap().is_none());
    }

    fn journaled(store: &SharedStore, journal: &Path) -> UidCore {
        UidCore::new(
            store.clone(),
            "tsdb-uid".into(),
            [3, 3, 3],
            [true, true, true],
        )
        .with_journal(journal)
        .unwrap()
    }

    /// What a crash takes from the store's unsynced tail (both cells of a new id and the
    /// counter's last moves) comes back from the journal; a rename is not undone.
    #[test]
    fn the_journal_puts_back_assignments_a_crash_took_from_the_store() {
        let d = tempfile::tempdir().unwrap();
        let store = embedded(&d.path().join("store"));
        let journal = d.path().join("uid.journal");
        let uids = journaled(&store, &journal);
        uids.get_or_create(UidKind::Metric, "cpu").unwrap();
        uids.create_many(UidKind::Tagv, &["web01", "web02", "web03"])
            .unwrap();
        assert!(uids.unsynced(), "new ids wait for a sync");
        uids.sync_if_dirty().unwrap();
        assert!(!uids.unsynced());
        uids.rename(UidKind::Tagv, "web03", "db03").unwrap();
        uids.sync_if_dirty().unwrap();
        drop(uids);
        // The crash: web02's cells and the counter's moves never reached the disk.
        let q = UidKind::Tagv.qualifier().to_vec();
        store
            .mutate(
                "tsdb-uid",
                vec![
                    RowMutations {
                        row: vec![0, 0, 2],
                        mutations: vec![Mutation::Delete {
                            family: NAME_FAMILY.to_vec(),
                            qualifier: q.clone(),
                        }],
                    },
                    RowMutations {
                        row: b"web02".to_vec(),
                        mutations: vec![Mutation::Delete {
                            family: ID_FAMILY.to_vec(),
                            qualifier: q.clone(),
                        }],
                    },
                ],
            )
            .unwrap();
        store
            .increment("tsdb-uid", MAXID_ROW, ID_FAMILY, &q, -3)
            .unwrap();
        let again = journaled(&store, &journal);
        assert_eq!(
            again.get_id(UidKind::Tagv, "web02").unwrap().as_deref(),
            Some(&[0, 0, 2][..])
        );
        assert_eq!(
            &*again.get_name(UidKind::Tagv, &[0, 0, 2]).unwrap(),
            "web02"
        );
        // Renamed stays renamed: the journal's older name is not put back.
        assert!(again.get_id(UidKind::Tagv, "web03").unwrap().is_none());
        assert_eq!(&*again.get_name(UidKind::Tagv, &[0, 0, 3]).unwrap(), "db03");
        // The counter is past every id the journal held: the next name takes a new one.
        assert_eq!(
            &*again.get_or_create(UidKind::Tagv, "web04").unwrap(),
            &[0, 0, 4]
        );
        assert_eq!(
            &*again.get_id(UidKind::Metric, "cpu").unwrap().unwrap(),
            &[0, 0, 1]
        );
    }
}
