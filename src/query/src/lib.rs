//! The OpenTSDB query engine: bounded scans of `tsdb` (metric and hour range, literal tag
//! filters pushed into the scan as a row-key regex), rows decoded as OpenTSDB merges them
//! (compacted, single and append columns; newest duplicate wins), each series streamed through
//! its downsampler as its rows arrive, then rate, then group-by aggregation.

pub mod aggregate;
mod collect;
pub mod decode;
pub mod delete;
pub mod downsample;
pub mod export;
pub mod filter;
pub mod graphite;
mod hour_read;
mod label_values;
pub mod parse;
pub mod promql;
pub mod render;
pub mod rollup_read;
pub mod row_cache;
pub mod seek;
pub mod select;
pub mod spec;
pub mod time;

use aggregate::{Aggregator, Num};
use downsample::{Buckets, Downsampler};
use spec::{Query, SubQuery};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tsgate_core::uid::{UidCore, UidError};
use tsgate_schema::compaction::merge_columns;
use tsgate_schema::rowkey::{base_time, ROW_SPAN};
use tsgate_schema::uid_table::UidKind;
use tsgate_schema::KeyLayout;
use tsgate_store::{LentRow, Scan, SharedStore, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    BadRequest(String),
    /// An `/api/query` request that does not parse (400).
    #[error(transparent)]
    Parse(#[from] parse::ParseError),
    /// A tag filter that cannot be built (400).
    #[error(transparent)]
    Filter(#[from] filter::FilterError),
    #[error(transparent)]
    Uid(#[from] UidError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Corrupt(String),
    /// `query.timeout_ms` passed while the query ran.
    #[error("{0}")]
    Timeout(String),
    /// `query.max_series` / `query.max_points` / `query.max_cells` exceeded.
    #[error("{0}")]
    TooLarge(String),
}

/// Bounds on one query's work (`query.*`); zero means unbounded.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueryLimits {
    pub timeout: Option<std::time::Duration>,
    pub max_series: usize,
    pub max_points: u64,
    /// Values a query may make: a fill policy's buckets over all its series.
    pub max_cells: u64,
}

/// One output series: a group of input series aggregated into one.
#[derive(Debug, Clone)]
pub struct ResultSeries {
    pub index: usize,
    pub metric: String,
    pub tags: BTreeMap<String, String>,
    pub aggregate_tags: Vec<String>,
    pub tsuids: Vec<String>,
    pub dps: Vec<(u64, Num)>,
    /// Fill policy `null`: NaN is written as JSON null.
    pub nan_as_null: bool,
    /// The notes stored in the rows of the group's series, in time order.
    pub annotations: Vec<tsgate_core::meta::annotation::Annotation>,
}

/// Counts for `showSummary`.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub raw_datapoints: u64,
    pub rows: u64,
    pub series: u64,
    pub emitted: u64,
}

impl Summary {
    fn add(&mut self, o: &Summary) {
        self.raw_datapoints += o.raw_datapoints;
        self.rows += o.rows;
        self.series += o.series;
        self.emitted += o.emitted;
    }
}

/// One sub-query's answer: its groups and the counts of reading them.
type SubqueryResult = Result<(Vec<ResultSeries>, Summary), QueryError>;

/// What a query may still spend, shared by its sub-queries (which may run on several
/// threads): its deadline and the points read so far, against `query.*` limits.
struct Budget {
    deadline: Option<std::time::Instant>,
    points: AtomicU64,
    /// Buckets the matched series' fill policies will emit (allocated only at the end).
    cells: AtomicU64,
}

impl Budget {
    fn new(deadline: Option<std::time::Instant>) -> Budget {
        Budget {
            deadline,
            points: AtomicU64::new(0),
            cells: AtomicU64::new(0),
        }
    }
}

/// The last second whose row a sub-query reads: the end's, or with a downsampling interval
/// the end of the interval holding the end (OpenTSDB's `getScanEndTimeSeconds` aligns the
/// scan to the next interval, so the last bucket has all its points).
fn scan_end_s(sq: &SubQuery, end_ms: u64) -> u64 {
    match &sq.downsample {
        Some(d) if !d.all && d.interval_ms > 0 => {
            let next = (end_ms - end_ms % d.interval_ms).saturating_add(d.interval_ms);
            (next / 1000).saturating_sub(1).max(end_ms / 1000)
        }
        _ => end_ms / 1000,
    }
}

/// How many buckets a fill policy emits for one series over `[start_ms, end_ms]` (every
/// bucket, data or not); 0 without a fill policy or with `0all`, whose output is bounded by
/// the points read. Calendar buckets are counted at their nominal width.
fn fill_buckets(sq: &SubQuery, start_ms: u64, end_ms: u64) -> u64 {
    match &sq.downsample {
        Some(d) if d.fill != spec::FillPolicy::None && !d.all => {
            end_ms.saturating_sub(start_ms) / d.interval_ms.max(1) + 1
        }
        _ => 0,
    }
}

pub struct QueryEngine {
    pub store: SharedStore,
    pub uids: Arc<UidCore>,
    pub layout: KeyLayout,
    pub table: String,
    /// `tsd.http.query.allow_delete`.
    pub allow_delete: bool,
    pub limits: QueryLimits,
    /// Decoded rows of Graphite paths stored whole, for a store only this process writes
    /// (`storage.row_cache_mb`; see [`row_cache`]).
    pub rows: Option<Arc<row_cache::RowCache>>,
    /// OpenTSDB 2.4's rollup tables, which downsampling sub-queries may read (`[rollups]`).
    pub rollups: Option<Arc<tsgate_schema::rollup::Rollups>>,
}

/// A matched series while it streams in.
struct SeriesState {
    tsuid: Vec<u8>,
    tags: BTreeMap<String, String>,
    tagk_uids: BTreeMap<String, Vec<u8>>,
    raw: Vec<(u64, Num)>,
    ds: Option<Downsampler>,
    notes: Vec<tsgate_core::meta::annotation::Annotation>,
    /// Rollup cells read in range: a series whose rollup rows (a year long, say) hold none
    /// there is left out, as a raw read would not have found it.
    cells_read: u64,
}

impl QueryEngine {
    pub fn run(&self, q: &Query) -> Result<(Vec<ResultSeries>, Summary), QueryError> {
        // TsdbQuery.setStartTime/setEndTime: past OpenTSDB's last millisecond timestamp.
        if let Some(t) = [q.start_ms, q.end_ms]
            .into_iter()
            .find(|&t| t > 9_999_999_999_999)
        {
            return Err(QueryError::BadRequest(format!("Invalid timestamp: {t}")));
        }
        if q.end_ms < q.start_ms {
            return Err(QueryError::BadRequest(format!(
                "End time [{}] must be greater than or equal to the start time [{}]",
                q.end_ms, q.start_ms
            )));
        }
        if q.flags.delete && !self.allow_delete {
            return Err(QueryError::BadRequest(
                "Deleting data is not enabled (query.allow_delete = false)".into(),
            ));
        }
        // TSQuery.validateAndSetQuery: an unknown zone is an error only for a downsample.
        let tz: chrono_tz::Tz = match q.timezone.as_deref().filter(|z| !z.is_empty()) {
            Some(z) => match z.parse() {
                Ok(tz) => tz,
                Err(_) if q.queries.iter().any(|s| s.downsample.is_some()) => {
                    return Err(QueryError::BadRequest(
                        "The timezone specification could not be found".into(),
                    ))
                }
                Err(_) => chrono_tz::UTC,
            },
            None => chrono_tz::UTC,
        };
        let budget = Budget::new(self.limits.timeout.map(|t| std::time::Instant::now() + t));
        let mut out = Vec::new();
        let mut summary = Summary::default();
        for r in self.run_subqueries(q, tz, &budget) {
            let (groups, s) = r?;
            summary.add(&s);
            out.extend(groups);
        }
        Ok((out, summary))
    }

    /// Every sub-query's groups and counts, in request order. Sub-queries read different
    /// metrics, so they run on every core; a deleting query stays on one thread. After a
    /// failure no further sub-query starts: the first error in request order is the one a
    /// sequential run would report (all earlier ones were started before it).
    fn run_subqueries(&self, q: &Query, tz: chrono_tz::Tz, budget: &Budget) -> Vec<SubqueryResult> {
        let cores = tsgate_common::cores();
        // One sub-query (the commonest request) reads its metric as shares on every core.
        let parts = if q.queries.len() == 1 && !q.flags.delete {
            self.shares(cores)
        } else {
            1
        };
        let one = |sq: &SubQuery| -> SubqueryResult {
            let mut summary = Summary::default();
            let plan = match &self.rollups {
                Some(r) => rollup_read::plan(r, q, sq, tz == chrono_tz::UTC),
                None => Vec::new(),
            };
            // The rollups to try in turn (rollupUsage), then raw data (None).
            let tries: Vec<Option<&rollup_read::RollupRead>> = match (plan.first(), sq.rollup_usage)
            {
                (None, _) => vec![None],
                (Some(best), spec::RollupUsage::NoFallback) => vec![Some(best)],
                (Some(best), spec::RollupUsage::FallbackRaw) => vec![Some(best), None],
                _ => plan.iter().map(Some).chain([None]).collect(),
            };
            let pre_aggregate = rollup_read::reads_pre_aggregates(self.rollups.as_deref(), sq);
            if pre_aggregate && self.rollups.is_none() {
                return Err(QueryError::BadRequest(
                    "Pre-aggregates asked for, but no rollups are configured ([rollups] enabled = false)"
                        .into(),
                ));
            }
            let mut series = Vec::new();
            for r in tries {
                // A rollup read is one share: a share steps over the other shares' rows cell by
                // cell, and walking a rollup row's cells is most of what its read costs (perf:
                // the engine's iterators, not the decoding), so more shares only repeat it.
                let parts = if r.is_some() { 1 } else { parts };
                series = self.fetch_shares(q, sq, tz, &mut summary, budget, parts, r)?;
                if !series.is_empty() {
                    break;
                }
            }
            summary.series = series.len() as u64;
            let counted;
            let sq = if pre_aggregate
                && sq.aggregator == Aggregator::Count
                && self
                    .rollups
                    .as_deref()
                    .is_some_and(|r| rollup_read::rolls_up(r, sq))
            {
                counted = SubQuery {
                    aggregator: Aggregator::Sum,
                    ..sq.clone()
                };
                &counted
            } else {
                sq
            };
            let groups = group_and_aggregate(sq, series, q.start_ms, q.end_ms);
            summary.emitted = groups.iter().map(|g| g.dps.len() as u64).sum::<u64>();
            Ok((groups, summary))
        };
        let workers = cores.min(q.queries.len());
        if workers <= 1 || q.flags.delete {
            let mut out = Vec::new();
            for sq in &q.queries {
                let r = one(sq);
                let failed = r.is_err();
                out.push(r);
                if failed {
                    break;
                }
            }
            return out;
        }
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let mut done: Vec<(usize, SubqueryResult)> =
            tsgate_common::pool::on_workers(workers, |_| {
                let mut mine = Vec::new();
                while !failed.load(Ordering::SeqCst) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(sq) = q.queries.get(i) else { break };
                    let r = one(sq);
                    if r.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    mine.push((i, r));
                }
                mine
            })
            .into_iter()
            .flatten()
            .collect();
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r).collect()
    }

    /// [`QueryEngine::fetch`] as `parts` shares read on as many threads, in TSUID order either
    /// way (so a group's members are aggregated in the same order however many cores read).
    #[allow(clippy::too_many_arguments)]
    fn fetch_shares(
        &self,
        q: &Query,
        sq: &SubQuery,
        tz: chrono_tz::Tz,
        summary: &mut Summary,
        budget: &Budget,
        parts: usize,
        rollup: Option<&rollup_read::RollupRead>,
    ) -> Result<Vec<Series>, QueryError> {
        // A failing pushdown (an unknown tag) takes the one-thread path, which reports it in
        // OpenTSDB's order (an unknown metric first).
        let parts = if parts > 1 && self.pushdown(sq).map_or(true, |f| f.narrow) {
            1
        } else {
            parts
        };
        // Series matched so far, across the shares: `query.max_series` holds for their sum.
        let matched = AtomicUsize::new(0);
        let matched = &matched;
        let mut series = if parts <= 1 {
            self.fetch(q, sq, tz, summary, budget, 0, 1, matched, rollup)?
        } else {
            let read: Vec<Result<(Vec<Series>, Summary), QueryError>> =
                tsgate_common::pool::on_workers(parts, |part| {
                    let mut s = Summary::default();
                    self.fetch(q, sq, tz, &mut s, budget, part, parts, matched, rollup)
                        .map(|v| (v, s))
                });
            let mut all = Vec::new();
            for r in read {
                let (v, s) = r?;
                summary.add(&s);
                all.extend(v);
            }
            all
        };
        series.sort_by(|a, b| a.tsuid.cmp(&b.tsuid));
        Ok(series)
    }

    /// Streams the matching rows of one sub-query (share `part` of `parts` of its series)
    /// into per-series pipelines.
    #[allow(clippy::too_many_arguments)]
    fn fetch(
        &self,
        q: &Query,
        sq: &SubQuery,
        tz: chrono_tz::Tz,
        summary: &mut Summary,
        budget: &Budget,
        part: usize,
        parts: usize,
        matched: &AtomicUsize,
        rollup: Option<&rollup_read::RollupRead>,
    ) -> Result<Vec<Series>, QueryError> {
        let (metric_uid, tsuid_set) = if sq.tsuids.is_empty() {
            (
                self.uids
                    .require_id(UidKind::Metric, &sq.metric)?
                    .into_vec(),
                None,
            )
        } else {
            let mut set = std::collections::HashSet::new();
            for t in &sq.tsuids {
                let b = tsgate_schema::parse_hex(t)
                    .ok_or_else(|| QueryError::BadRequest(format!("Invalid TSUID: {t}")))?;
                if b.len() <= self.layout.metric_width {
                    return Err(QueryError::BadRequest(format!("Invalid TSUID: {t}")));
                }
                set.insert(b);
            }
            let m = set.iter().next().expect("non-empty")[..self.layout.metric_width].to_vec();
            if set.iter().any(|t| t[..self.layout.metric_width] != m[..]) {
                return Err(QueryError::BadRequest(
                    "All TSUIDs must belong to the same metric".into(),
                ));
            }
            (m, Some(set))
        };
        // A fill policy emits every bucket of the range for each series: refused before the
        // scan when one series alone would pass `query.max_cells`, and charged per series.
        let per_series = fill_buckets(sq, q.start_ms, q.end_ms);
        if self.limits.max_cells > 0 && per_series > self.limits.max_cells {
            return Err(self.too_many_cells(per_series));
        }
        let row_filter = self.pushdown(sq)?.share(&self.layout, part, parts);
        let (first, last) = match rollup {
            // Rollup rows start at their span's base: every row up to the end's.
            Some(r) => (
                r.interval.base_time(q.start_ms / 1000),
                (r.interval.base_time(q.end_ms / 1000) as u64 + 1).min(u32::MAX as u64),
            ),
            None => (
                base_time(q.start_ms / 1000),
                (base_time(scan_end_s(sq, q.end_ms)) as u64 + ROW_SPAN).min(u32::MAX as u64),
            ),
        };
        // OpenTSDB reads whole rows (hours) around the range and only its serializer keeps
        // [start, end] (`group_and_aggregate`): the points just outside still anchor the
        // interpolation, the rates and the last bucket at the edges. `0all` alone takes
        // [start, end), its downsampler's own bounds.
        let (read_lo, read_hi) = match &sq.downsample {
            Some(d) if d.all => (q.start_ms, q.end_ms.saturating_sub(1)),
            _ if rollup.is_some() => (q.start_ms, q.end_ms),
            _ => (0, u64::MAX),
        };
        let pre_aggregate = rollup_read::reads_pre_aggregates(self.rollups.as_deref(), sq);
        let table =
            rollup_read::table_for(self.rollups.as_deref(), rollup, pre_aggregate, &self.table)
                .ok_or_else(|| {
                    QueryError::BadRequest(
                        "Pre-aggregates asked for, but no rollups are configured".into(),
                    )
                })?;
        let mut states: Vec<SeriesState> = Vec::new();
        // TSUID → index in `states`, or None when its tags fail the filters.
        let mut seen: HashMap<Vec<u8>, Option<usize>, ahash::RandomState> = HashMap::default();
        let mut deletes = Vec::new();
        let filter_keys: Vec<&str> = sq.filters.iter().map(|f| f.tagk.as_str()).collect();
        // One row's points on their way into a downsampler (reused: no allocation per row).
        let mut scratch: Vec<(u64, Num)> = Vec::new();
        for salt in self.layout.salt_prefixes() {
            let scan = Scan {
                start: self.layout.metric_start(&salt, &metric_uid, first),
                stop: self.layout.metric_start(&salt, &metric_uid, last as u32),
                families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                row_regex: row_filter.regex.clone(),
                // A rollup row holds every aggregator's cells: only the wanted ones are read.
                qualifier_prefixes: rollup
                    .map(rollup_read::RollupRead::qualifier_prefixes)
                    .unwrap_or_default(),
                limit: None,
                seek: row_filter.seek.clone(),
            };
            // What went wrong inside the visitor, which can only stop the scan.
            let mut failed: Option<QueryError> = None;
            let mut row_body = |key: &[u8], row: LentRow| -> Result<(), QueryError> {
                summary.rows += 1;
                self.check_limits(budget, matched.load(Ordering::Relaxed))?;
                let Ok(rk) = self.layout.parse(key) else {
                    return Ok(());
                };
                let tsuid = rk.tsuid();
                if tsuid_set.as_ref().is_some_and(|s| !s.contains(&tsuid)) {
                    return Ok(());
                }
                let idx = match seen.get(&tsuid) {
                    Some(i) => *i,
                    None => {
                        let mut tags: BTreeMap<String, String> = BTreeMap::new();
                        let mut tagk_uids: BTreeMap<String, Vec<u8>> = BTreeMap::new();
                        for (k, v) in rk.tag_pairs() {
                            let name: String = self.uids.get_name(UidKind::Tagk, k)?.into();
                            tagk_uids.insert(name.clone(), k.to_vec());
                            tags.insert(name, self.uids.get_name(UidKind::Tagv, v)?.into());
                        }
                        let pass = sq
                            .filters
                            .iter()
                            .all(|f| f.matches(tags.get(&f.tagk).map(|s| s.as_str())))
                            && (!sq.explicit_tags
                                || (tags.len() == count_distinct(&filter_keys)
                                    && tags.keys().all(|k| filter_keys.contains(&k.as_str()))));
                        let i = pass.then(|| {
                            states.push(SeriesState {
                                tsuid: tsuid.clone(),
                                tags,
                                tagk_uids,
                                raw: Vec::new(),
                                notes: Vec::new(),
                                cells_read: 0,
                                ds: sq.downsample.clone().map(|mut d| {
                                    // `useCalendar` (JSON) turns any interval into calendar boundaries.
                                    if q.use_calendar && !d.all {
                                        d.calendar = Some(d.step);
                                    }
                                    // Counts from rollups add up.
                                    if rollup.is_some_and(|r| {
                                        matches!(r.mode, rollup_read::Mode::Count(_))
                                    }) {
                                        d.aggregator = Aggregator::Sum;
                                    }
                                    Downsampler::new(Buckets::new(d, tz, q.start_ms))
                                }),
                            });
                            matched.fetch_add(1, Ordering::Relaxed);
                            budget.cells.fetch_add(per_series, Ordering::Relaxed);
                            states.len() - 1
                        });
                        seen.insert(tsuid, i);
                        i
                    }
                };
                let Some(idx) = idx else { return Ok(()) };
                let st = &mut states[idx];
                if let (Some(r), Some(d), LentRow::Cells(cells)) = (rollup, st.ds.as_mut(), row) {
                    // A rollup is read for a downsample only: its cells go to the downsampler
                    // (read from `scan_rows`: lent as cells).
                    let mut read = 0u64;
                    r.points(rk.base, cells, q.start_ms, q.end_ms, |ts, c| {
                        read += 1;
                        match c {
                            rollup_read::Cell::Weighted { sum, count } => {
                                d.push_weighted(ts, sum, count)
                            }
                            rollup_read::Cell::Value(v) => d.push(ts, Num::from(v)),
                        }
                    });
                    st.cells_read += read;
                    summary.raw_datapoints += read;
                    budget.points.fetch_add(read, Ordering::Relaxed);
                    return Ok(());
                }
                // A series without a downsampler takes its points directly.
                let sink = if st.ds.is_some() {
                    scratch.clear();
                    &mut scratch
                } else {
                    &mut st.raw
                };
                let mark = sink.len();
                let notes = &mut st.notes;
                decode::append_lent(
                    key,
                    row,
                    rk.base,
                    read_lo,
                    read_hi,
                    sink,
                    |ts, v| (ts, Num::from(v)),
                    // Annotations live in the same rows: read them on the way (OpenTSDB
                    // does too).
                    |v| {
                        if let Ok(a) = tsgate_core::meta::annotation::Annotation::from_storage(v) {
                            if (q.start_ms..=q.end_ms).contains(&a.start_ms()) {
                                notes.push(a);
                            }
                        }
                    },
                )?;
                let read = (sink.len() - mark) as u64;
                // The points of [start, end] (what a delete removes and counts).
                let in_range = sink[mark..]
                    .iter()
                    .filter(|(t, _)| (q.start_ms..=q.end_ms).contains(t))
                    .count() as u64;
                if let Some(d) = &mut st.ds {
                    for &(ts, v) in scratch.iter() {
                        d.push(ts, v);
                    }
                }
                summary.raw_datapoints += in_range;
                budget.points.fetch_add(read, Ordering::Relaxed);
                if q.flags.delete && in_range > 0 {
                    deletes.push((key.to_vec(), rk.base));
                }
                Ok(())
            };
            {
                let mut visit = select::stop_on_error_lent(&mut row_body, &mut failed);
                if rollup.is_some() {
                    // A rollup row's cells are not a data row's points: lent as they are.
                    self.store.scan_rows(table, &scan, &mut |key, cells| {
                        visit(key, LentRow::Cells(cells))
                    })?;
                } else {
                    self.store.scan_points(table, &scan, &mut visit)?;
                }
            }
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        // The last row's points and series count too.
        self.check_limits(budget, matched.load(Ordering::Relaxed))?;
        if q.flags.delete {
            self.delete_range(table, &deletes, q.start_ms, q.end_ms)?;
        }
        Ok(states
            .into_iter()
            .filter(|s| rollup.is_none() || s.cells_read > 0)
            .map(|s| {
                let mut points = match s.ds {
                    Some(d) => d.finish(q.start_ms, q.end_ms),
                    None => s.raw,
                };
                // A series read keeps its place in the answer even when its rate has no
                // point (one point in the range): OpenTSDB answers it with empty `dps`.
                let read = !points.is_empty();
                let mut rate_lead = None;
                if sq.rate {
                    let opts = sq.rate_options.clone().unwrap_or_default();
                    rate_lead = downsample::rate_lead(&points, &opts);
                    points = downsample::rate(&points, &opts);
                }
                let series = Series {
                    tsuid: s.tsuid,
                    tags: s.tags,
                    tagk_uids: s.tagk_uids,
                    points,
                    rate_lead,
                    notes: s.notes,
                };
                (read, series)
            })
            .filter(|(read, s)| *read || !s.notes.is_empty())
            .map(|(_, s)| s)
            .collect())
    }

    fn too_many_cells(&self, cells: u64) -> QueryError {
        QueryError::TooLarge(format!(
            "The query would make {cells} values, more than {} (query.max_cells): a fill policy emits every bucket of the range for each series; use a longer downsampling interval, a shorter range or no fill policy",
            self.limits.max_cells
        ))
    }

    /// Checked once per row read: the query's deadline, the sub-query's series and the
    /// query's points so far.
    fn check_limits(&self, budget: &Budget, series: usize) -> Result<(), QueryError> {
        let l = &self.limits;
        if l.max_series > 0 && series > l.max_series {
            return Err(QueryError::TooLarge(format!(
                "The query matches more than {} series (query.max_series); filter on more tags",
                l.max_series
            )));
        }
        if l.max_points > 0 && budget.points.load(Ordering::Relaxed) > l.max_points {
            return Err(QueryError::TooLarge(format!(
                "The query would read more than {} data points (query.max_points); filter on more tags or shorten the time range",
                l.max_points
            )));
        }
        let cells = budget.cells.load(Ordering::Relaxed);
        if l.max_cells > 0 && cells > l.max_cells {
            return Err(self.too_many_cells(cells));
        }
        if budget
            .deadline
            .is_some_and(|d| std::time::Instant::now() > d)
        {
            return Err(QueryError::Timeout(format!(
                "Query timeout exceeded ({} ms, query.timeout_ms)",
                l.timeout.map(|t| t.as_millis()).unwrap_or(0)
            )));
        }
        Ok(())
    }

    /// Row filters that keep only rows carrying the literal tag values asked for (and the tag
    /// keys other filters need), so non-matching rows are skipped by the scan itself.
    fn pushdown(&self, sq: &SubQuery) -> Result<seek::RowFilter, QueryError> {
        let mut per_key = seek::RequiredPairs::new();
        for f in &sq.filters {
            if f.kind == filter::FilterType::NotKey {
                continue;
            }
            let k = self.uids.require_id(UidKind::Tagk, &f.tagk)?.into_vec();
            let vals = match f.literal_values() {
                Some(lits) => {
                    let mut ids = Vec::new();
                    for l in lits {
                        if let Some(id) = self.uids.get_id(UidKind::Tagv, l)? {
                            ids.push(id.into_vec());
                        }
                    }
                    if ids.is_empty() {
                        return Err(UidError::NoSuchName {
                            kind: "tagv",
                            name: lits[0].clone(),
                        }
                        .into());
                    }
                    Some(ids)
                }
                None => None,
            };
            let entry = per_key.entry(k).or_insert(None);
            if let Some(v) = vals {
                *entry = Some(match entry.take() {
                    None => v,
                    Some(prev) => prev.into_iter().filter(|x| v.contains(x)).collect(),
                });
            }
        }
        Ok(seek::RowFilter::for_pairs(&self.layout, per_key))
    }

    /// Removes the points of `[start, end]` from the given rows of `table` (`delete: true`
    /// queries: the data table, or the raw pre-aggregates).
    fn delete_range(
        &self,
        table: &str,
        rows: &[(Vec<u8>, u32)],
        start_ms: u64,
        end_ms: u64,
    ) -> Result<(), QueryError> {
        use tsgate_store::{Mutation, RowMutations};
        for (row, base) in rows {
            let cells = self.store.get(table, row, &[tsgate_schema::DATA_FAMILY])?;
            let cols = tsgate_store::columns(&cells);
            let merged = merge_columns(&cols);
            let keep: Vec<_> = merged
                .points
                .into_iter()
                .filter(|p| !(start_ms..=end_ms).contains(&p.timestamp_ms(*base)))
                .collect();
            let mut muts: Vec<Mutation> = cells
                .iter()
                .filter(|c| c.qualifier.len() % 2 == 0)
                .map(|c| Mutation::Delete {
                    family: tsgate_schema::DATA_FAMILY.to_vec(),
                    qualifier: c.qualifier.clone(),
                })
                .collect();
            if !keep.is_empty() {
                let (q, v) = tsgate_schema::column::build_column(&keep);
                muts.retain(
                    |m| !matches!(m, Mutation::Delete { qualifier, .. } if *qualifier == q),
                );
                muts.push(Mutation::Put {
                    family: tsgate_schema::DATA_FAMILY.to_vec(),
                    qualifier: q,
                    value: v,
                });
            }
            self.store.mutate(
                table,
                vec![RowMutations {
                    row: row.clone(),
                    mutations: muts,
                }],
            )?;
        }
        Ok(())
    }

    /// The last point of each matching series at or before `now`, looking back `back_hours`
    /// hours (0 = all time).
    pub fn last_points(
        &self,
        metric: Option<&str>,
        tags: &[(String, String)],
        tsuid: Option<&[u8]>,
        back_hours: u64,
        now_ms: u64,
    ) -> Result<Vec<(Vec<u8>, u64, Num)>, QueryError> {
        let mut filters = Vec::new();
        for (k, v) in tags {
            filters.push(filter::TagFilter::from_tag_value(k, v)?);
        }
        let metric_name = match (metric, tsuid) {
            (Some(m), _) => m.to_string(),
            (None, Some(t)) => self
                .uids
                .get_name(UidKind::Metric, &t[..self.layout.metric_width])?
                .into(),
            _ => return Err(QueryError::BadRequest("Missing metric or tsuid".into())),
        };
        let start_ms = if back_hours == 0 {
            0
        } else {
            now_ms.saturating_sub(back_hours * 3_600_000)
        };
        let sq = SubQuery {
            index: 0,
            aggregator: Aggregator::None,
            metric: metric_name,
            tsuids: tsuid
                .map(|t| vec![tsgate_schema::hex_upper(t)])
                .unwrap_or_default(),
            filters,
            downsample: None,
            rate: false,
            rate_options: None,
            explicit_tags: false,
            rollup_usage: spec::RollupUsage::Raw,
            pre_aggregate: false,
        };
        let q = Query {
            start_ms,
            end_ms: now_ms,
            queries: vec![],
            flags: Default::default(),
            timezone: None,
            use_calendar: false,
        };
        let budget = Budget::new(self.limits.timeout.map(|t| std::time::Instant::now() + t));
        let series = self.fetch(
            &q,
            &sq,
            chrono_tz::UTC,
            &mut Summary::default(),
            &budget,
            0,
            1,
            &AtomicUsize::new(0),
            None,
        )?;
        Ok(series
            .into_iter()
            // `fetch` reads whole rows: the last point of the window.
            .filter_map(|s| {
                s.points
                    .iter()
                    .rev()
                    .find(|(t, _)| (q.start_ms..=q.end_ms).contains(t))
                    .map(|&(t, v)| (s.tsuid.clone(), t, v))
            })
            .collect())
    }
}

fn count_distinct(keys: &[&str]) -> usize {
    let mut k = keys.to_vec();
    k.sort_unstable();
    k.dedup();
    k.len()
}

/// One decoded (and downsampled / rated) series.
#[derive(Debug, Clone)]
pub struct Series {
    pub tsuid: Vec<u8>,
    pub tags: BTreeMap<String, String>,
    /// Each tag key's UID: OpenTSDB lists `aggregateTags` in UID order.
    pub tagk_uids: BTreeMap<String, Vec<u8>>,
    pub points: Vec<(u64, Num)>,
    /// With `rate`: the rate of the first point against time zero, never emitted but used by
    /// the group-by aggregation before the first rate ([`aggregate::aggregate_rates`]).
    pub rate_lead: Option<Num>,
    pub notes: Vec<tsgate_core::meta::annotation::Annotation>,
}

/// Groups series by the values of their group-by tag keys and aggregates each group.
pub fn group_and_aggregate(
    sq: &SubQuery,
    series: Vec<Series>,
    start_ms: u64,
    end_ms: u64,
) -> Vec<ResultSeries> {
    let mut group_keys: Vec<&str> = sq
        .filters
        .iter()
        .filter(|f| f.group_by)
        .map(|f| f.tagk.as_str())
        .collect();
    group_keys.sort_unstable();
    group_keys.dedup();
    let mut groups: BTreeMap<Vec<String>, Vec<Series>> = BTreeMap::new();
    for s in series {
        let key = if sq.aggregator == Aggregator::None {
            vec![tsgate_schema::hex_upper(&s.tsuid)]
        } else {
            group_keys
                .iter()
                .map(|k| s.tags.get(*k).cloned().unwrap_or_default())
                .collect()
        };
        groups.entry(key).or_default().push(s);
    }
    let nan_as_null = sq
        .downsample
        .as_ref()
        .is_some_and(|d| d.fill == spec::FillPolicy::Null);
    let all = sq.downsample.as_ref().is_some_and(|d| d.all);
    groups
        .into_values()
        .map(|members| {
            let (tags, aggregate_tags) = common_tags(&members);
            let mut tsuids: Vec<String> = members
                .iter()
                .map(|s| tsgate_schema::hex_upper(&s.tsuid))
                .collect();
            tsuids.sort();
            let inputs: Vec<&[(u64, Num)]> = members.iter().map(|s| s.points.as_slice()).collect();
            let mut dps = if sq.rate {
                let leads: Vec<Option<Num>> = members.iter().map(|s| s.rate_lead).collect();
                aggregate::aggregate_rates(sq.aggregator, &inputs, &leads)
            } else {
                aggregate::aggregate(sq.aggregator, &inputs)
            };
            // OpenTSDB's serializer writes only points inside [start, end], downsampled ones
            // too: the bucket holding a start that is not on a bucket boundary begins before
            // it and is left out (`0all`'s one point sits at the start).
            if !all {
                dps.retain(|(t, _)| *t >= start_ms && *t <= end_ms);
            }
            let mut annotations: Vec<_> = members
                .iter()
                .flat_map(|s| s.notes.iter().cloned())
                .collect();
            annotations.sort_by_key(|a| a.start_ms());
            ResultSeries {
                index: sq.index,
                metric: sq.metric.clone(),
                tags,
                aggregate_tags,
                tsuids,
                dps,
                nan_as_null,
                annotations,
            }
        })
        .collect()
}

/// Keys with one value across the group (present in some members is enough), and the keys
/// whose values differ.
fn common_tags(members: &[Series]) -> (BTreeMap<String, String>, Vec<String>) {
    let mut tags: BTreeMap<String, String> = BTreeMap::new();
    let mut agg: Vec<String> = Vec::new();
    for s in members {
        for (k, v) in &s.tags {
            if agg.contains(k) {
                continue;
            }
            match tags.get(k) {
                Some(existing) if existing != v => {
                    tags.remove(k);
                    agg.push(k.clone());
                }
                Some(_) => {}
                None => {
                    tags.insert(k.clone(), v.clone());
                }
            }
        }
    }
    // In tag key UID order, as OpenTSDB's SpanGroup keeps them (a map sorted by UID bytes).
    let uid = |k: &String| members.iter().find_map(|s| s.tagk_uids.get(k));
    agg.sort_by(|a, b| uid(a).cmp(&uid(b)).then_with(|| a.cmp(b)));
    (tags, agg)
}

/// A row-key regex (HBase's, over bytes) keeping rows whose tags include, for each tag key
/// UID, one of the given value UIDs (`None`: any value). OpenTSDB pushes its tag filters into
/// the scan the same way. `None` when nothing is required.
pub(crate) fn tag_pair_regex(layout: &KeyLayout, per_key: seek::RequiredPairs) -> Option<String> {
    if per_key.is_empty() {
        return None;
    }
    let esc = |b: &[u8]| b.iter().map(|x| format!("\\x{x:02X}")).collect::<String>();
    let head = layout.head_width();
    let pair = layout.tag_width();
    let vw = layout.tagv_width;
    let mut re = format!("^.{{{head}}}");
    for (k, vals) in per_key {
        re.push_str(&format!("(?:.{{{pair}}})*?{}", esc(&k)));
        match vals {
            Some(v) => re.push_str(&format!(
                "(?:{})",
                v.iter().map(|x| esc(x)).collect::<Vec<_>>().join("|")
            )),
            None => re.push_str(&format!(".{{{vw}}}")),
        }
    }
    re.push_str(&format!("(?:.{{{pair}}})*$"));
    Some(re)
}
