//! Retention: `storage.retention` and `storage.retention_rules` decide how long each series
//! keeps its data, and the sweep drops the `tsdb` rows whose hour has wholly expired.
//!
//! A row expires as a whole once its last second is older than the retention (so data lives
//! up to an hour longer than the retention, never shorter). The rules name metrics and tag
//! values by name; each sweep resolves them to the UIDs known at that moment, and a row that
//! holds a UID assigned since (it may match a rule the sweep could not see) is kept until the
//! next sweep decides it. Annotations of a series live in its rows and go with them.
//!
//! Where the store drops rows itself ([`Store::expire_rows`], the embedded engine) the sweep
//! installs the judge and has the store rewrite the table once (`reclaim`), which frees the
//! disk; no point is read. Elsewhere (HBase) it scans each metric's expired key range and
//! deletes the rows, at most `storage.retention_sweep_rows_per_s`. Either way a sweep cut
//! short (a crash) left nothing half-done that matters: the engine's rewrite replaces its
//! files only once complete, deletes are idempotent, and the next start sweeps again.

use super::glob_match;
use crate::config::{parse_duration_s, StorageConfig};
use crate::uid::{UidCore, UidError};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tsgate_schema::rowkey::{KeyLayout, ROW_SPAN};
use tsgate_schema::uid_table::UidKind;
use tsgate_store::throttle::Throttle;
use tsgate_store::{Mutation, RowMutations, Scan, SharedStore, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("retention sweep: {0}")]
    Store(#[from] StoreError),
    #[error("retention sweep: {0}")]
    Uid(#[from] UidError),
    #[error("retention sweep: stopped before its end (the process is stopping)")]
    Stopped,
}

/// A retention rule, durations in seconds (0 = for ever).
#[derive(Debug, Clone)]
struct Rule {
    metric: String,
    tags: Vec<(String, String)>,
    secs: u64,
}

/// The configured retentions, by name.
#[derive(Debug, Clone)]
pub struct Policy {
    default_s: u64,
    rules: Vec<Rule>,
    /// Each rollup interval with a retention (`rollups.retention`), in seconds (not 0).
    rollups: Vec<(tsgate_schema::rollup::RollupInterval, u64)>,
}

impl Policy {
    /// From `storage.retention` and `storage.retention_rules` (already validated).
    pub fn from_config(s: &StorageConfig) -> Result<Policy, crate::config::DurationError> {
        let mut rules = Vec::new();
        for r in &s.retention_rules {
            rules.push(Rule {
                metric: r.metric.clone(),
                tags: r.tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                secs: parse_duration_s(&r.retention)?,
            });
        }
        Ok(Policy {
            default_s: parse_duration_s(&s.retention)?,
            rules,
            rollups: Vec::new(),
        })
    }

    /// The policy with the retentions of the rollup intervals (`rollups.retention`, when
    /// rollups are on): each interval's table keeps its rows that long, whatever the series.
    pub fn with_rollups(mut self, r: &crate::config::rollup::RollupsConfig) -> Policy {
        if let Some(compiled) = &r.compiled {
            self.rollups = compiled
                .intervals
                .iter()
                .filter(|i| !i.default)
                .map(|i| (i.clone(), r.retention_s(&i.interval)))
                .filter(|(_, secs)| *secs > 0)
                .collect();
        }
        self
    }

    /// Whether nothing ever expires, raw data or rollups.
    pub fn keeps_all(&self) -> bool {
        self.keeps_raw() && self.rollups.is_empty()
    }

    /// Whether no raw data ever expires.
    fn keeps_raw(&self) -> bool {
        self.default_s == 0 && self.rules.iter().all(|r| r.secs == 0)
    }

    /// The retention of a series (seconds, 0 = for ever): the first rule it matches decides.
    pub fn for_series(&self, metric: &str, tags: &[(&str, &str)]) -> u64 {
        for r in &self.rules {
            if glob_match(&r.metric, metric)
                && r.tags
                    .iter()
                    .all(|(k, g)| tags.iter().any(|(tk, tv)| tk == k && glob_match(g, tv)))
            {
                return r.secs;
            }
        }
        self.default_s
    }

    /// The policy resolved against the UIDs known now, with its cutoffs at `now_s`.
    pub fn judge(&self, uids: &UidCore, layout: KeyLayout, now_s: u64) -> Result<Judge, UidError> {
        let cutoff = |secs: u64| {
            if secs == 0 {
                0
            } else {
                now_s.saturating_sub(secs)
            }
        };
        let tagks = uids.list(UidKind::Tagk)?;
        let tagvs = uids.list(UidKind::Tagv)?;
        let max = |l: &[(String, Box<[u8]>)]| l.iter().map(|(_, u)| u.to_vec()).max();
        let mut metrics = HashMap::new();
        for (name, uid) in uids.list(UidKind::Metric)? {
            let mut plan = MetricPlan {
                rules: Vec::new(),
                default_cutoff: cutoff(self.default_s),
            };
            for r in self.rules.iter().filter(|r| glob_match(&r.metric, &name)) {
                if r.tags.is_empty() {
                    plan.default_cutoff = cutoff(r.secs);
                    break;
                }
                let mut conds = Vec::new();
                for (k, g) in &r.tags {
                    let k_uid = tagks.iter().find(|(n, _)| n == k).map(|(_, u)| u.to_vec());
                    let vals: HashSet<Vec<u8>> = tagvs
                        .iter()
                        .filter(|(n, _)| glob_match(g, n))
                        .map(|(_, u)| u.to_vec())
                        .collect();
                    conds.push((k_uid, vals));
                }
                plan.rules.push((conds, cutoff(r.secs)));
            }
            metrics.insert(uid.to_vec(), plan);
        }
        Ok(Judge {
            layout,
            metrics,
            max_tagk: max(&tagks).unwrap_or_default(),
            max_tagv: max(&tagvs).unwrap_or_default(),
        })
    }
}

/// A rule's tag key (None: no UID yet, so no row has it) and the UIDs of the values it accepts.
type TagCondition = (Option<Vec<u8>>, HashSet<Vec<u8>>);

/// One metric's retentions as cutoffs (a row whose hour ends at or before its cutoff has
/// expired; 0 = never): the tag rules that may apply, in order, then the rest.
#[derive(Debug)]
struct MetricPlan {
    rules: Vec<(Vec<TagCondition>, u64)>,
    default_cutoff: u64,
}

/// Says of `tsdb` row keys whether they expired, from the policy as resolved at one moment.
#[derive(Debug)]
pub struct Judge {
    layout: KeyLayout,
    metrics: HashMap<Vec<u8>, MetricPlan>,
    max_tagk: Vec<u8>,
    max_tagv: Vec<u8>,
}

impl Judge {
    /// The cutoff of a row (0 = keep), or None if it cannot be told yet.
    fn cutoff(&self, row: &[u8]) -> u64 {
        let Ok(rk) = self.layout.parse(row) else {
            return 0;
        };
        // A metric named since the judge was made: its rules were not resolved.
        let Some(plan) = self.metrics.get(rk.metric) else {
            return 0;
        };
        if !plan.rules.is_empty()
            && rk
                .tag_pairs()
                .any(|(k, v)| *k > *self.max_tagk || *v > *self.max_tagv)
        {
            return 0;
        }
        for (conds, cutoff) in &plan.rules {
            let all = conds.iter().all(|(k, vals)| {
                k.as_ref().is_some_and(|k| {
                    rk.tag_pairs()
                        .any(|(rk_k, rk_v)| rk_k == k.as_slice() && vals.contains(rk_v))
                })
            });
            if all {
                return *cutoff;
            }
        }
        plan.default_cutoff
    }

    /// Whether the row `row` (a `tsdb` row key) has wholly expired.
    pub fn expired(&self, row: &[u8]) -> bool {
        let cutoff = self.cutoff(row);
        cutoff > 0
            && self
                .layout
                .parse(row)
                .is_ok_and(|rk| rk.base as u64 + ROW_SPAN <= cutoff)
    }

    /// Metric UIDs with something that may expire, with the latest cutoff among their rules.
    fn expiring(&self) -> Vec<(&[u8], u64)> {
        let mut out: Vec<(&[u8], u64)> = self
            .metrics
            .iter()
            .filter_map(|(m, p)| {
                let c = p
                    .rules
                    .iter()
                    .map(|(_, c)| *c)
                    .chain([p.default_cutoff])
                    .max()
                    .unwrap_or(0);
                (c >= ROW_SPAN).then_some((m.as_slice(), c))
            })
            .collect();
        out.sort();
        out
    }
}

/// What one sweep did.
#[derive(Debug, Default, Clone)]
pub struct SweepReport {
    pub rows: u64,
    pub bytes: u64,
    pub took: Duration,
    /// Bytes of cells read, and the time waited to stay under the rates.
    pub read: u64,
    pub waited: Duration,
    /// TSUIDs of the series that have no row left.
    pub series: Vec<Vec<u8>>,
}

/// Told the TSUIDs of the series a sweep left without a row (the cardinality counts forget
/// them, the series caches drop them).
pub type ExpiredSeriesHook = Box<dyn Fn(&[Vec<u8>]) + Send>;

thread_local! {
    /// Set on the sweep's thread while the store rewrites the table for it: the judge, also
    /// called by the engine's own compactions on other threads, tells them apart by it.
    static IN_SWEEP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Which series lost all their rows in one pass over a table in key order. Within a salt
/// bucket a series' rows sort by hour (after the metric, before the tags), and one series'
/// rows all have the same cutoff, so its expired rows all come before its kept ones: a series
/// is a candidate from its first expired row until one of its rows is kept. At most the
/// series of one metric are candidates at once.
#[derive(Default)]
struct Orphans {
    candidates: HashSet<Vec<u8>>,
    /// Series whose rows the engine's own compactions dropped since the last sweep: orphans
    /// unless this pass meets a row of theirs.
    elsewhere: HashSet<Vec<u8>>,
}

impl Orphans {
    fn row(&mut self, tsuid: Vec<u8>, expired: bool) {
        if expired {
            self.candidates.insert(tsuid);
        } else {
            self.candidates.remove(&tsuid);
            self.elsewhere.remove(&tsuid);
        }
    }

    fn finish(self) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = self.candidates.into_iter().chain(self.elsewhere).collect();
        all.sort();
        all.dedup();
        all
    }
}

pub struct Sweeper {
    pub store: SharedStore,
    pub uids: Arc<UidCore>,
    pub layout: KeyLayout,
    pub table: String,
    pub policy: Policy,
    pub rows_per_s: u64,
    pub bytes_per_s: u64,
    /// See [`ExpiredSeriesHook`].
    pub on_expired_series: Option<ExpiredSeriesHook>,
    /// Series of rows the engine's compactions dropped outside a sweep (see [`Orphans`]).
    elsewhere: Arc<parking_lot::Mutex<HashSet<Vec<u8>>>>,
    /// Set when the process stops: a sweep under way stops keeping to its rates (embedded:
    /// its rewrite, which cannot be cut short, finishes at full speed; HBase: it stops, and
    /// the next start sweeps again).
    hurry: Arc<AtomicBool>,
}

impl Sweeper {
    pub fn new(
        cfg: &crate::config::Config,
        store: SharedStore,
        uids: Arc<UidCore>,
    ) -> Result<Sweeper, crate::config::DurationError> {
        Ok(Sweeper {
            store,
            uids,
            layout: cfg.layout(),
            table: cfg.storage.tables.data.clone(),
            policy: Policy::from_config(&cfg.storage)?.with_rollups(&cfg.rollups),
            rows_per_s: cfg.storage.retention_sweep_rows_per_s.max(1),
            bytes_per_s: cfg.storage.retention_sweep_bytes_per_s,
            on_expired_series: None,
            elsewhere: Default::default(),
            hurry: Default::default(),
        })
    }

    /// One sweep as of `now_s`, counted in `/metrics`.
    pub fn run(&self, now_s: u64) -> Result<SweepReport, SweepError> {
        let m = &crate::observe::metrics().retention;
        let start = Instant::now();
        let r = self.sweep(now_s);
        let took = start.elapsed();
        m.runs.inc();
        m.last_duration_ms.set(took.as_millis() as i64);
        m.last_run_s.set(tsgate_common::clock::now_s() as i64);
        match r {
            Ok(mut rep) => {
                rep.took = took;
                m.bytes_dropped.add(rep.bytes);
                m.bytes_read.add(rep.read);
                m.throttled_ms.add(rep.waited.as_millis() as u64);
                m.series_expired.add(rep.series.len() as u64);
                if !rep.series.is_empty() {
                    if let Some(hook) = &self.on_expired_series {
                        hook(&rep.series);
                    }
                }
                if rep.rows > 0 || rep.bytes > 0 {
                    tracing::info!(
                        rows = rep.rows,
                        bytes = rep.bytes,
                        series = rep.series.len(),
                        read = rep.read,
                        throttled_ms = rep.waited.as_millis() as u64,
                        took_ms = took.as_millis() as u64,
                        "retention sweep dropped expired data"
                    );
                }
                Ok(rep)
            }
            Err(e) => {
                m.failures.inc();
                Err(e)
            }
        }
    }

    fn sweep(&self, now_s: u64) -> Result<SweepReport, SweepError> {
        let mut rep = self.sweep_raw(now_s)?;
        for (iv, secs) in &self.policy.rollups {
            let r = self.sweep_rollup(iv, now_s.saturating_sub(*secs))?;
            rep.rows += r.rows;
            rep.bytes += r.bytes;
            rep.read += r.read;
            rep.waited += r.waited;
        }
        Ok(rep)
    }

    /// Drops the rows of one rollup interval's table whose whole row span ended at or before
    /// `cutoff` (seconds): on the embedded store by its judge and a rewrite of the table, as
    /// for raw data; elsewhere by a scan of the table (rollup tables hold few rows: a series
    /// has one a day for `1h`, one a year for `1d`) that deletes them.
    fn sweep_rollup(
        &self,
        iv: &tsgate_schema::rollup::RollupInterval,
        cutoff: u64,
    ) -> Result<SweepReport, SweepError> {
        let layout = self.layout;
        let span = iv.clone();
        let expired = move |row: &[u8]| {
            layout
                .parse(row)
                .is_ok_and(|rk| span.next_base(rk.base) <= cutoff)
        };
        let table = iv.table.as_str();
        let judge: tsgate_store::RowExpiry = Arc::new(expired.clone());
        if self.store.expire_rows(table, Some(judge)) {
            let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let d = dropped.clone();
            let r = self.store.reclaim(
                table,
                tsgate_store::Reclaim {
                    bytes_per_s: self.bytes_per_s,
                    on_row: Some(Box::new(move |_: &[u8], e: bool| {
                        if e {
                            d.fetch_add(1, Ordering::Relaxed);
                        }
                    })),
                    hurry: Some(self.hurry.clone()),
                },
            )?;
            let rows = dropped.load(Ordering::Relaxed);
            crate::observe::metrics().retention.rows_dropped.add(rows);
            return Ok(SweepReport {
                rows,
                bytes: r.freed,
                read: r.read,
                waited: r.waited,
                ..Default::default()
            });
        }
        let hurry = Some(self.hurry.clone());
        let mut rate = Rates {
            rows: Throttle::new(self.rows_per_s).hurried_by(hurry.clone()),
            bytes: Throttle::new(self.bytes_per_s).hurried_by(hurry),
        };
        let mut rep = SweepReport::default();
        let mut deletes = Deletes::new(&self.store, table);
        let scan = Scan {
            families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
            ..Default::default()
        };
        for row in self.store.scan(table, &scan)? {
            if self.hurry.load(Ordering::Relaxed) {
                return Err(SweepError::Stopped);
            }
            let row = row?;
            let size = row_bytes(&row);
            rate.bytes.take(size);
            if !expired(&row.key) {
                continue;
            }
            rep.bytes += size;
            deletes.row(row.key, &mut rate)?;
        }
        Ok(deletes.finish(rep, &mut rate)?)
    }

    /// The raw data's part of a sweep (`tsdb`).
    fn sweep_raw(&self, now_s: u64) -> Result<SweepReport, SweepError> {
        if self.policy.keeps_raw() {
            self.store.expire_rows(&self.table, None);
            return Ok(SweepReport::default());
        }
        let judge = Arc::new(self.policy.judge(&self.uids, self.layout, now_s)?);
        let rows = &crate::observe::metrics().retention.rows_dropped;
        let before = rows.get();
        let j = judge.clone();
        let layout = self.layout;
        let elsewhere = self.elsewhere.clone();
        let counted: tsgate_store::RowExpiry = Arc::new(move |row: &[u8]| {
            let e = j.expired(row);
            if e {
                crate::observe::metrics().retention.rows_dropped.inc();
                if !IN_SWEEP.with(|s| s.get()) {
                    if let Ok(rk) = layout.parse(row) {
                        elsewhere.lock().insert(rk.tsuid());
                    }
                }
            }
            e
        });
        if self.store.expire_rows(&self.table, Some(counted)) {
            let orphans = Arc::new(parking_lot::Mutex::new(Orphans {
                candidates: HashSet::new(),
                elsewhere: std::mem::take(&mut *self.elsewhere.lock()),
            }));
            let o = orphans.clone();
            let on_row = move |row: &[u8], expired: bool| {
                if let Ok(rk) = layout.parse(row) {
                    o.lock().row(rk.tsuid(), expired);
                }
            };
            IN_SWEEP.with(|s| s.set(true));
            let r = self.store.reclaim(
                &self.table,
                tsgate_store::Reclaim {
                    bytes_per_s: self.bytes_per_s,
                    on_row: Some(Box::new(on_row)),
                    hurry: Some(self.hurry.clone()),
                },
            );
            IN_SWEEP.with(|s| s.set(false));
            let series = std::mem::take(&mut *orphans.lock()).finish();
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    // Not judged after all: the next sweep looks at them again.
                    self.elsewhere.lock().extend(series);
                    return Err(e.into());
                }
            };
            if !r.released {
                tracing::info!(
                    "retention sweep: the replaced files are still in use by a read; the engine deletes them once it ends"
                );
            }
            return Ok(SweepReport {
                rows: rows.get() - before,
                bytes: r.freed,
                took: Duration::ZERO,
                read: r.read,
                waited: r.waited,
                series,
            });
        }
        self.delete_expired(&judge)
    }

    /// Scans each expiring metric's key range below its cutoff and deletes what expired, then
    /// finds which of the series it deleted rows of have none left.
    fn delete_expired(&self, judge: &Judge) -> Result<SweepReport, SweepError> {
        let mut rep = SweepReport::default();
        let hurry = Some(self.hurry.clone());
        let mut rate = Rates {
            rows: Throttle::new(self.rows_per_s).hurried_by(hurry.clone()),
            bytes: Throttle::new(self.bytes_per_s).hurried_by(hurry),
        };
        let mut deletes = Deletes::new(&self.store, &self.table);
        for (metric, cutoff) in judge.expiring() {
            // Rows of hours ending at or before the cutoff: base <= cutoff - ROW_SPAN.
            let stop_base = (cutoff - ROW_SPAN + 1).min(u32::MAX as u64) as u32;
            for salt in self.layout.salt_prefixes() {
                let scan = Scan {
                    start: self.layout.metric_start(&salt, metric, 0),
                    stop: self.layout.metric_start(&salt, metric, stop_base),
                    families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                    ..Default::default()
                };
                let mut orphans = Orphans::default();
                for row in self.store.scan(&self.table, &scan)? {
                    if self.hurry.load(Ordering::Relaxed) {
                        break;
                    }
                    let row = row?;
                    let size = row_bytes(&row);
                    rate.bytes.take(size);
                    let expired = judge.expired(&row.key);
                    if let Ok(rk) = self.layout.parse(&row.key) {
                        orphans.row(rk.tsuid(), expired);
                    }
                    if !expired {
                        continue;
                    }
                    rep.bytes += size;
                    deletes.row(row.key, &mut rate)?;
                }
                if self.hurry.load(Ordering::Relaxed) {
                    // Not recorded as done: the next start sweeps again (deletes are
                    // idempotent).
                    deletes.flush(&mut rate)?;
                    return Err(SweepError::Stopped);
                }
                let orphans = orphans.finish();
                if !orphans.is_empty() {
                    rep.series
                        .extend(self.without_rows(&salt, metric, stop_base, orphans, &mut rate)?);
                }
            }
        }
        Ok(deletes.finish(rep, &mut rate)?)
    }

    /// Of `series` (of `metric`, in bucket `salt`, whose rows before `from_base` expired), the
    /// ones without a row from `from_base` on. Each series' first kept row is usually the
    /// first hour after the cutoff, so the scan (of those series' rows only) ends there unless
    /// some series really has none left.
    fn without_rows(
        &self,
        salt: &[u8],
        metric: &[u8],
        from_base: u32,
        series: Vec<Vec<u8>>,
        rate: &mut Rates,
    ) -> Result<Vec<Vec<u8>>, SweepError> {
        let mw = self.layout.metric_width;
        let hex = |b: &[u8]| b.iter().map(|x| format!("\\x{x:02X}")).collect::<String>();
        let mut orphans = Vec::new();
        // A bounded regex per scan (the store evaluates it on every row key).
        for group in series.chunks(256) {
            let tags: Vec<String> = group.iter().map(|t| hex(&t[mw..])).collect();
            let scan = Scan {
                start: self.layout.metric_start(salt, metric, from_base),
                stop: self.layout.metric_start(salt, metric, u32::MAX),
                families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                row_regex: Some(format!(
                    "^.{{{}}}{}.{{4}}(?:{})$",
                    salt.len(),
                    hex(metric),
                    tags.join("|")
                )),
                ..Default::default()
            };
            let mut left: HashSet<&[u8]> = group.iter().map(|t| t.as_slice()).collect();
            for row in self.store.scan(&self.table, &scan)? {
                let row = row?;
                rate.bytes.take(row_bytes(&row));
                if let Ok(rk) = self.layout.parse(&row.key) {
                    left.remove(rk.tsuid().as_slice());
                }
                if left.is_empty() {
                    break;
                }
            }
            orphans.extend(left.into_iter().map(|t| t.to_vec()));
        }
        Ok(orphans)
    }
}

/// The bytes a sweep reads of a row (its key once per cell, qualifiers and values).
fn row_bytes(row: &tsgate_store::Row) -> u64 {
    row.cells
        .iter()
        .map(|c| (row.key.len() + c.qualifier.len() + c.value.len()) as u64)
        .sum()
}

/// A sweep's row deletes in one table, sent in batches of 500, each followed by as long a wait
/// as keeps the sweep under its row rate.
struct Deletes<'a> {
    store: &'a SharedStore,
    table: &'a str,
    batch: Vec<RowMutations>,
    /// Rows deleted so far.
    done: u64,
}

impl<'a> Deletes<'a> {
    const BATCH: usize = 500;

    fn new(store: &'a SharedStore, table: &'a str) -> Deletes<'a> {
        Deletes {
            store,
            table,
            batch: Vec::new(),
            done: 0,
        }
    }

    /// Deletes the row `key` (with the batch it completes).
    fn row(&mut self, key: Vec<u8>, rate: &mut Rates) -> Result<(), StoreError> {
        self.batch.push(RowMutations {
            row: key,
            mutations: vec![Mutation::DeleteRow],
        });
        if self.batch.len() >= Self::BATCH {
            self.flush(rate)?;
        }
        Ok(())
    }

    /// Deletes the rows still waiting, and completes the sweep's report with the rows deleted
    /// (counted in `/metrics` too), the bytes read and the time waited.
    fn finish(mut self, mut rep: SweepReport, rate: &mut Rates) -> Result<SweepReport, StoreError> {
        self.flush(rate)?;
        rep.rows = self.done;
        rep.read = rate.bytes.done();
        rep.waited = rate.rows.waited() + rate.bytes.waited();
        crate::observe::metrics()
            .retention
            .rows_dropped
            .add(rep.rows);
        Ok(rep)
    }

    /// Deletes the rows still waiting in the batch.
    fn flush(&mut self, rate: &mut Rates) -> Result<(), StoreError> {
        let n = self.batch.len() as u64;
        if n == 0 {
            return Ok(());
        }
        self.store
            .mutate(self.table, std::mem::take(&mut self.batch))?;
        self.done += n;
        rate.rows.take(n);
        Ok(())
    }
}

/// The HBase sweep's two limits: rows deleted and bytes read, a second.
struct Rates {
    rows: Throttle,
    bytes: Throttle,
}

/// The sweep's thread: runs at start, then every interval, until dropped.
pub struct SweepThread {
    stop: Option<std::sync::mpsc::Sender<()>>,
    hurry: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl SweepThread {
    /// Starts the thread. `record` (a file) remembers when the last sweep completed and under
    /// which policy: a start within `interval` of a completed sweep under the same policy waits
    /// for the rest of the interval instead of rewriting the store again (restarts stay cheap);
    /// a changed policy, or a sweep a crash cut short, sweeps at once.
    pub fn start(
        sweeper: Sweeper,
        interval: Duration,
        record: Option<std::path::PathBuf>,
    ) -> std::io::Result<SweepThread> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let hurry = sweeper.hurry.clone();
        let policy = format!("{:?}", sweeper.policy);
        let mut wait = record
            .as_deref()
            .and_then(|r| std::fs::read_to_string(r).ok())
            .and_then(|t| {
                let (last, p) = t.split_once('\n')?;
                let last: u64 = last.parse().ok()?;
                let since = tsgate_common::clock::now_s().checked_sub(last)?;
                (p == policy).then(|| interval.checked_sub(Duration::from_secs(since)))?
            })
            .unwrap_or(Duration::ZERO);
        let handle = std::thread::Builder::new()
            .name("retention".into())
            .spawn(move || loop {
                if !wait.is_zero() {
                    match rx.recv_timeout(wait) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
                match sweeper.run(tsgate_common::clock::now_s()) {
                    Ok(_) => {
                        if let Some(r) = &record {
                            let text = format!("{}\n{policy}", tsgate_common::clock::now_s());
                            let tmp = r.with_extension("tmp");
                            if let Err(e) = std::fs::write(&tmp, text)
                                .and_then(|_| std::fs::rename(&tmp, r))
                            {
                                tracing::warn!(path = %r.display(), error = %e, "retention sweep not recorded");
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "retention sweep failed; retried at the next interval")
                    }
                }
                wait = interval;
            })?;
        Ok(SweepThread {
            stop: Some(tx),
            hurry,
            handle: Some(handle),
        })
    }
}

impl Drop for SweepThread {
    fn drop(&mut self) {
        // Stops it between sweeps; a sweep under way finishes first, no longer held to its
        // rates (the store's rewrite cannot be cut short; HBase's deletes stop at once and
        // the next start sweeps again).
        self.hurry.store(true, Ordering::Relaxed);
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows queued past a batch's 500 go out at once, the rest with `flush`; every deleted
    /// row is counted once and paid for at the row rate.
    #[test]
    fn deletes_go_out_in_batches_and_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let store: SharedStore = Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(
                dir.path(),
                &tsgate_store::TableNames::default().specs(),
            )
            .unwrap(),
        );
        let key = |i: u32| format!("row{i:05}").into_bytes();
        let rows: Vec<RowMutations> = (0..1201)
            .map(|i| RowMutations {
                row: key(i),
                mutations: vec![Mutation::Put {
                    family: tsgate_schema::DATA_FAMILY.to_vec(),
                    qualifier: vec![0, 0],
                    value: vec![1],
                }],
            })
            .collect();
        store.mutate("tsdb", rows).unwrap();
        let left = |store: &SharedStore| store.scan("tsdb", &Scan::default()).unwrap().count();
        let mut rate = Rates {
            rows: Throttle::new(0),
            bytes: Throttle::new(0),
        };
        let mut deletes = Deletes::new(&store, "tsdb");
        for i in 0..1001 {
            deletes.row(key(i), &mut rate).unwrap();
        }
        // Two whole batches are gone; the 1001st row waits for the next batch or the flush.
        assert_eq!((deletes.done, rate.rows.done()), (1000, 1000));
        assert_eq!(left(&store), 201);
        deletes.flush(&mut rate).unwrap();
        deletes.flush(&mut rate).unwrap();
        assert_eq!((deletes.done, rate.rows.done()), (1001, 1001));
        assert_eq!(left(&store), 200);
    }

    #[test]
    fn first_matching_rule_decides() {
        let cfg: crate::config::Config = toml::from_str(
            r#"
[storage]
retention = "30d"
[[storage.retention_rules]]
metric = "debug.*"
tags = { env = "prod*" }
retention = "7d"
[[storage.retention_rules]]
metric = "debug.*"
retention = "1d"
[[storage.retention_rules]]
metric = "keep.*"
retention = ""
"#,
        )
        .unwrap();
        let p = Policy::from_config(&cfg.storage).unwrap();
        assert_eq!(p.for_series("debug.x", &[("env", "prod-1")]), 7 * 86_400);
        assert_eq!(p.for_series("debug.x", &[("env", "test")]), 86_400);
        assert_eq!(p.for_series("keep.me", &[]), 0);
        assert_eq!(p.for_series("other", &[]), 30 * 86_400);
        assert!(!p.keeps_all());
    }

    /// In key order (hour, then tags) a series is an orphan if its rows expired and none was
    /// kept; one the engine dropped rows of earlier is one unless the pass meets a row of it.
    #[test]
    fn orphans_are_series_whose_every_row_expired() {
        let mut o = Orphans {
            candidates: HashSet::new(),
            elsewhere: [b"e1".to_vec(), b"e2".to_vec()].into(),
        };
        // Hour 1: a, b and c expire (c under a shorter rule); hour 2: a and b kept, c expired;
        // hour 3: a kept, e1 kept.
        for (t, expired) in [
            ("a", true),
            ("b", true),
            ("c", true),
            ("a", false),
            ("b", false),
            ("c", true),
            ("a", false),
            ("e1", false),
            ("d", true),
        ] {
            o.row(t.as_bytes().to_vec(), expired);
        }
        assert_eq!(
            o.finish(),
            vec![b"c".to_vec(), b"d".to_vec(), b"e2".to_vec()]
        );
    }
}
