//! Evaluation of target expressions: path expressions are fetched from the store onto a regular
//! grid, calls are dispatched to `functions`. The context keeps the request window so functions
//! that need other windows (timeShift, moving*, smartSummarize) re-evaluate their argument.

use super::attime::{TimeError, TimeUnit};
use super::index::{self, Entry, ResolveError};
use super::parallel;
use super::parser::{Call, Expr, ParseError};
use super::series::Series;
use super::tags::TagExprError;
use super::Engine;
use crate::rollup_read::{Fit, GraphiteWant};
use crate::row_cache::Fill;
use crate::select::{Stamps, StoredRead};
use crate::QueryError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Why a target could not be evaluated. graphite-web answers every kind with 400, in its
/// `Invalid parameters (…)` words (the server maps them in one place).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A call graphite-web refuses: an unknown function, a missing or wrong argument.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Time(#[from] TimeError),
    /// A path expression that names no series.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Tags(#[from] TagExprError),
    /// The request would pass `query.max_cells`.
    #[error("the request would hold {cells} values (series x steps, and points read), more than {limit} (query.max_cells): match fewer series, shorten the window or consolidate with summarize()")]
    TooManyCells { cells: u64, limit: u64 },
    /// Reading the store failed.
    #[error(transparent)]
    Query(#[from] QueryError),
}

pub type R<T> = Result<T, EvalError>;

pub fn err<T>(msg: impl Into<String>) -> R<T> {
    Err(EvalError::Invalid(msg.into()))
}

/// Step used when a series has fewer than two points to derive one from.
pub const DEFAULT_STEP: i64 = 60;

/// How far back a short request looks to learn the step.
pub const STEP_LOOKBACK: i64 = 3600;

/// Where series come from: the store (requests) or a fixed set (unit tests).
pub trait Source: Sync {
    /// Every series, sorted by path.
    fn entries(&self) -> R<Arc<Vec<Entry>>>;
    /// Raw points `(seconds, value)` in `(from, until]` of each entry, in `entries`' order
    /// (empty when an entry has none), and the gaps between them.
    fn points(&self, entries: &[&Entry], from: i64, until: i64) -> R<Points>;
    /// Whether each of `entries` is read on its own, so that reading them in parts costs no
    /// more than reading them at once: the caller may then read a part, grid it and drop its
    /// points while they are in cache, on every core ([`Ctx::read_fold`]).
    fn reads_apart(&self, _entries: &[&Entry]) -> bool {
        false
    }
    /// [`Source::points`] of a part of entries that [`Source::reads_apart`] accepted, read on
    /// the calling thread (the caller spreads the parts over the cores).
    fn points_apart(&self, entries: &[&Entry], from: i64, until: i64) -> R<Points> {
        self.points(entries, from, until)
    }
    /// Told before `entries` are read in parts through [`Source::points_apart`].
    fn reading(&self, _entries: &[&Entry], _from: i64, _until: i64) {}
    /// The request's budget of values (`query.max_cells`): raw points read and grid steps
    /// made, over every expression of the request. `None`: unbounded.
    fn cell_limit(&self) -> Option<u64> {
        None
    }
    /// Takes `cells` from the budget; an error once the request has spent more than its limit.
    fn charge(&self, _cells: u64) -> R<()> {
        Ok(())
    }
    /// Graphite events (global annotations) starting in `[from, until]` seconds: each one's
    /// time and tags, for `events()`. None by default.
    fn events(&self, _from: i64, _until: i64) -> R<Vec<(i64, Vec<String>)>> {
        Ok(Vec::new())
    }

    /// The points of `entries` in `(from, until]` from a coarser copy of the data (a rollup,
    /// one point per interval at its start), with that interval as the step, when one is the
    /// right source for `want` or for the window's age (see
    /// [`crate::rollup_read::graphite_plan`]); None: raw points are read.
    fn rollup_points(
        &self,
        _entries: &[&Entry],
        _from: i64,
        _until: i64,
        _want: Option<&GraphiteWant>,
    ) -> R<Option<(i64, Points)>> {
        Ok(None)
    }
}

thread_local! {
    /// What the path expressions evaluated now on this thread are consolidated with, when a
    /// rollup could serve them (see [`want_of`]): set by [`Ctx::call`] around each call, by
    /// `/render` around each target for `maxDataPoints`, read by [`Ctx::fetch`].
    static WANT: std::cell::RefCell<Option<GraphiteWant>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `want` as what path expressions are consolidated with (see [`WANT`]).
pub fn with_want<T>(want: Option<GraphiteWant>, f: impl FnOnce() -> T) -> T {
    let outer = WANT.with(|w| w.replace(want));
    let r = f();
    WANT.with(|w| *w.borrow_mut() = outer);
    r
}

/// What a call over a path expression asks of the points read for it, when a rollup could
/// give the same answer: `summarize` (no `alignToFrom`) with `sum`/`total`, `min`, `max`
/// (intervals dividing its own) or `average` (its interval exactly), `hitcount` (the average
/// over its interval, which it multiplies back by the interval's seconds), `consolidateBy`
/// (its function, under what the caller asked). With an xFilesFactor (which counts the raw
/// values of a bucket) and for anything else, None.
fn want_of(ctx: &Ctx, c: &Call, outer: Option<&GraphiteWant>) -> Option<GraphiteWant> {
    let a = Args { call: c };
    if !matches!(a.get(0, "seriesList"), Some(Expr::Path(_))) {
        return None;
    }
    let secs = |i: usize| -> Option<u64> {
        let s = a.opt_str(i, "intervalString").ok()??;
        let n = super::attime::parse_offset(&s).ok()?.unsigned_abs();
        (n > 0).then_some(n)
    };
    match c.name.as_str() {
        "summarize" if ctx.xff() == 0.0 => {
            if a.boolean(3, "alignToFrom", false).ok()? {
                return None;
            }
            let func = a.opt_str(2, "func").ok()?.unwrap_or_else(|| "sum".into());
            let fit = match func.as_str() {
                "sum" | "total" | "min" | "max" => Fit::Divides(secs(1)?),
                "average" | "avg" => Fit::Equals(secs(1)?),
                _ => return None,
            };
            Some(GraphiteWant { func, fit })
        }
        "hitcount" if ctx.xff() == 0.0 => Some(GraphiteWant {
            func: "average".into(),
            fit: Fit::Equals(secs(1)?),
        }),
        "consolidateBy" => {
            let func = a.opt_str(1, "consolidationFunc").ok()??;
            Some(GraphiteWant {
                func,
                fit: outer.map_or(Fit::Any, |w| w.fit),
            })
        }
        _ => None,
    }
}

/// The error for a request past `query.max_cells`.
pub fn too_many_cells(cells: u64, limit: u64) -> EvalError {
    EvalError::TooManyCells { cells, limit }
}

/// What a [`Source`] read: each entry's points, and how often each gap between consecutive
/// points occurs over them all (counted as each series is read, while it is in cache; the
/// commonest is the step, see [`commonest_gap`]).
#[derive(Default)]
pub struct Points {
    pub series: Vec<Vec<(i64, f64)>>,
    pub gaps: Gaps,
}

/// How often each gap between consecutive points occurs.
pub type Gaps = HashMap<i64, usize, ahash::RandomState>;

/// What one read task found: the points of entries (by position) and their gaps.
type ReadPart = (Vec<(usize, Vec<(i64, f64)>)>, Gaps);

/// An entry's position by its stored tags, among the entries of one metric.
type EntryByTags<'a> = HashMap<&'a [(String, String)], usize, ahash::RandomState>;

pub struct StoreSource<'a> {
    pub state: &'a Engine,
    /// Values this request has read and gridded so far (see [`Source::charge`]).
    cells: std::sync::atomic::AtomicU64,
    /// This request's allowance for filling the row cache (none without one).
    fill: Option<Fill>,
    /// Set once the request reads more rows than its allowance covers: it then reads past
    /// the cache, which could not keep its rows until its next turn anyway.
    uncached: AtomicBool,
}

impl<'a> StoreSource<'a> {
    pub fn new(state: &'a Engine) -> StoreSource<'a> {
        StoreSource {
            state,
            cells: Default::default(),
            fill: state.query.rows.as_ref().map(|c| c.fill()),
            uncached: AtomicBool::new(false),
        }
    }

    fn fill(&self) -> Option<&Fill> {
        self.fill
            .as_ref()
            .filter(|_| !self.uncached.load(Ordering::Relaxed))
    }

    /// Reads past the cache from now on when `paths` paths over `(from, until]` are more
    /// rows than the allowance covers.
    fn expect(&self, paths: usize, from: i64, until: i64) {
        let hours = crate::QueryEngine::row_hours((from + 1) * 1000, until * 1000 + 999);
        if self
            .fill
            .as_ref()
            .is_some_and(|f| !f.covers(paths as u64 * hours))
        {
            self.uncached.store(true, Ordering::Relaxed);
        }
    }
}

/// Most paths stored whole read in one run (see `StoreSource::points`).
const WHOLE_RUN_MAX: usize = 64;

/// Most series read at once before they are gridded and folded (see `Ctx::read_fold`): their
/// points stay in cache until then.
const READ_RUN_MAX: usize = 64;

/// Metrics with more wanted series than this look them up by hash rather than one by one.
const LINEAR_LOOKUP_MAX: usize = 8;

/// A path stored whole: a metric holding that one series (see `StoreSource::points`).
fn is_whole(e: &Entry) -> bool {
    e.tags.len() == 1
        && (e.tags[0].0.as_str(), e.tags[0].1.as_str())
            == tsgate_core::graphite::names::PLACEHOLDER_TAG[0]
}

impl StoreSource<'_> {
    /// The points of a run of paths stored whole, `(metric UID, position in entries)` sorted by
    /// UID: one scan that seeks from one to the next (see `select_whole`).
    fn read_whole(&self, run: &[(Vec<u8>, usize)], from: i64, until: i64) -> R<ReadPart> {
        let uids: Vec<Vec<u8>> = run.iter().map(|(uid, _)| uid.clone()).collect();
        let got = self
            .state
            .query
            .select_whole(uids, (from + 1) * 1000, until * 1000 + 999, self.fill())
            .map_err(EvalError::from)?;
        // Charged as each run is read: a request past its budget stops at the next run.
        self.charge(got.iter().map(|p| p.len() as u64).sum())?;
        let mut gaps = Gaps::default();
        let got = run
            .iter()
            .zip(got)
            .filter(|(_, points)| !points.is_empty())
            .map(|((_, i), points)| (*i, counted(points, &mut gaps)))
            .collect();
        Ok((got, gaps))
    }

    /// The row filter of one metric's scan: a few series (`wanted`, at most
    /// `LINEAR_LOOKUP_MAX`) are sought to their rows instead of reading the whole metric; more
    /// read it all (`keep` picks them out either way).
    fn seek_filter(&self, entries: &[&Entry], wanted: &[usize]) -> R<crate::seek::RowFilter> {
        if wanted.len() > LINEAR_LOOKUP_MAX {
            return Ok(Default::default());
        }
        let tags: Vec<&[(String, String)]> = wanted.iter().map(|&i| &entries[i].tags[..]).collect();
        self.state
            .query
            .series_filter(&tags)
            .map_err(EvalError::from)
    }
}

impl Source for StoreSource<'_> {
    fn cell_limit(&self) -> Option<u64> {
        Some(self.state.settings.max_cells).filter(|&l| l > 0)
    }

    fn charge(&self, cells: u64) -> R<()> {
        let Some(limit) = self.cell_limit() else {
            return Ok(());
        };
        let spent = self.cells.fetch_add(cells, Ordering::Relaxed) + cells;
        if spent > limit {
            return Err(too_many_cells(spent, limit));
        }
        Ok(())
    }

    fn events(&self, from: i64, until: i64) -> R<Vec<(i64, Vec<String>)>> {
        super::functions::more_special::stored_events(self.state, from, until)
    }

    fn rollup_points(
        &self,
        entries: &[&Entry],
        from: i64,
        until: i64,
        want: Option<&GraphiteWant>,
    ) -> R<Option<(i64, Points)>> {
        let Some(rollups) = &self.state.query.rollups else {
            return Ok(None);
        };
        let settings = &self.state.settings;
        let now = tsgate_common::clock::now_s() as i64;
        let Some(plan) = crate::rollup_read::graphite_plan(rollups, want, from, now, &|iv| {
            settings.retention_s(iv)
        }) else {
            return Ok(None);
        };
        let mut by_metric: HashMap<&str, Vec<usize>, ahash::RandomState> = HashMap::default();
        for (i, e) in entries.iter().enumerate() {
            by_metric.entry(&e.metric).or_default().push(i);
        }
        let metrics: Vec<(&str, Vec<usize>)> = by_metric.into_iter().collect();
        let min = if entries.len() >= parallel::MIN_PARALLEL {
            2
        } else {
            usize::MAX
        };
        let read = parallel::map_from(metrics, min, |(metric, wanted)| -> R<ReadPart> {
            let by_tags: EntryByTags = wanted.iter().map(|&i| (&entries[i].tags[..], i)).collect();
            let keep = |_: &str, tags: &[(String, String)]| by_tags.contains_key(tags);
            let filter = self.seek_filter(entries, &wanted)?;
            let got = self
                .state
                .query
                .select_rollup(
                    &[metric.to_string()],
                    &plan,
                    ((from + 1) * 1000, until * 1000 + 999),
                    crate::rollup_read::Stamp::StartSeconds,
                    &filter,
                    &keep,
                )
                .map_err(EvalError::from)?;
            self.charge(got.iter().map(|s| s.points.len() as u64).sum())?;
            let got = got
                .into_iter()
                .filter_map(|s| Some((*by_tags.get(&s.tags[..])?, s.points)))
                .collect();
            Ok((got, Gaps::default()))
        });
        let points = gathered(entries.len(), read)?;
        Ok(Some((plan.interval.interval_s as i64, points)))
    }

    fn entries(&self) -> R<Arc<Vec<Entry>>> {
        self.state
            .graphite_index
            .snapshot(self.state)
            .map_err(EvalError::from)
    }

    fn points(&self, entries: &[&Entry], from: i64, until: i64) -> R<Points> {
        // A path stored whole is a metric holding that one series: those are read together,
        // in runs of their UIDs, one scan per run that seeks from one to the next (see
        // `select_whole`). A store that cannot seek (HBase) reads every metric on its own, on
        // every core, as below.
        let seeks = self.state.query.store.seeks();
        // (UID, position in `entries`) of the whole paths; the other entries by metric.
        let mut whole: Vec<(Vec<u8>, usize)> = Vec::new();
        let mut unknown: Vec<usize> = Vec::new();
        let mut by_metric: HashMap<&str, Vec<usize>, ahash::RandomState> = HashMap::default();
        for (i, e) in entries.iter().enumerate() {
            match &e.metric_uid {
                Some(uid) if seeks && is_whole(e) => whole.push((uid.to_vec(), i)),
                // A name without a UID in the snapshot is looked up.
                None if seeks && is_whole(e) => unknown.push(i),
                _ => by_metric.entry(&e.metric).or_default().push(i),
            }
        }
        if !unknown.is_empty() {
            let names: Vec<String> = unknown.iter().map(|&i| entries[i].metric.clone()).collect();
            let at: HashMap<&str, usize> = unknown
                .iter()
                .map(|&i| (entries[i].metric.as_str(), i))
                .collect();
            for id in self
                .state
                .query
                .metric_ids(&names)
                .map_err(EvalError::from)?
            {
                whole.push((id.uid, at[id.name.as_str()]));
            }
        }
        whole.sort_unstable();
        self.expect(whole.len(), from, until);
        // Runs of about eight per core (an uneven run does not hold the others up), and of at
        // most 64 paths: a run's points are still in cache when its gaps are counted.
        let run = whole
            .len()
            .div_ceil(parallel::cores() * 8)
            .clamp(1, WHOLE_RUN_MAX);
        let runs: Vec<&[(Vec<u8>, usize)]> = whole.chunks(run).collect();
        let read_whole = parallel::map_from(runs, 2, |run| self.read_whole(run, from, until));
        let metrics: Vec<(&str, Vec<usize>)> = by_metric.into_iter().collect();
        // One scan per other metric. The work is in the series, not the metrics: name rules put
        // thousands of paths in a few metrics (`cpu.usage_*{dc,host}`), each then worth a core
        // of its own.
        let series: usize = metrics.iter().map(|(_, wanted)| wanted.len()).sum();
        let min = if series >= parallel::MIN_PARALLEL {
            2
        } else {
            usize::MAX
        };
        let read = parallel::map_from(metrics, min, |(metric, wanted)| -> R<ReadPart> {
            let by_tags: Option<EntryByTags> = (wanted.len() > LINEAR_LOOKUP_MAX)
                .then(|| wanted.iter().map(|&i| (&entries[i].tags[..], i)).collect());
            let find = |tags: &[(String, String)]| match &by_tags {
                Some(m) => m.get(tags).copied(),
                None => wanted
                    .iter()
                    .copied()
                    .find(|&i| entries[i].tags[..] == *tags),
            };
            let keep = |_: &str, tags: &[(String, String)]| find(tags).is_some();
            // A few series of a metric: the scan seeks to their rows instead of reading all.
            // Not for a path stored whole (read here when the store cannot seek): its metric
            // holds that one series (`keep` still checks), and a filter would only cost its UID
            // look-ups and set-up per metric.
            let filter = if wanted.len() == 1 && is_whole(entries[wanted[0]]) {
                Default::default()
            } else {
                self.seek_filter(entries, &wanted)?
            };
            let got = self
                .state
                .query
                .select_stored(
                    &[metric.to_string()],
                    StoredRead {
                        start_ms: (from + 1) * 1000,
                        end_ms: until * 1000 + 999,
                        stamps: Stamps::Seconds,
                        row_filter: &filter,
                        fill: self.fill(),
                        keep: &keep,
                    },
                )
                .map_err(EvalError::from)?;
            self.charge(got.iter().map(|s| s.points.len() as u64).sum())?;
            let mut gaps = Gaps::default();
            let got = got
                .into_iter()
                .filter_map(|s| Some((find(&s.tags)?, counted(s.points, &mut gaps))))
                .collect();
            Ok((got, gaps))
        });
        gathered(entries.len(), read_whole.into_iter().chain(read))
    }

    /// Paths stored whole, each with its UID in the snapshot, on a store that seeks: each is
    /// one seek, whichever others are read with it.
    fn reads_apart(&self, entries: &[&Entry]) -> bool {
        self.state.query.store.seeks()
            && entries
                .iter()
                .all(|e| e.metric_uid.is_some() && is_whole(e))
    }

    fn reading(&self, entries: &[&Entry], from: i64, until: i64) {
        self.expect(entries.len(), from, until);
    }

    fn points_apart(&self, entries: &[&Entry], from: i64, until: i64) -> R<Points> {
        let mut whole: Vec<(Vec<u8>, usize)> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((e.metric_uid.as_ref()?.to_vec(), i)))
            .collect();
        whole.sort_unstable();
        gathered(
            entries.len(),
            whole
                .chunks(WHOLE_RUN_MAX)
                .map(|run| self.read_whole(run, from, until)),
        )
    }
}

/// What read tasks found, put together as the points of `n` entries.
fn gathered(n: usize, parts: impl IntoIterator<Item = R<ReadPart>>) -> R<Points> {
    let mut out = Points {
        series: vec![Vec::new(); n],
        gaps: Gaps::default(),
    };
    for r in parts {
        let (got, gaps) = r?;
        for (i, points) in got {
            out.series[i] = points;
        }
        for (g, n) in gaps {
            *out.gaps.entry(g).or_default() += n;
        }
    }
    Ok(out)
}

/// `points`, with the gaps between them counted into `gaps`.
fn counted(points: Vec<(i64, f64)>, gaps: &mut Gaps) -> Vec<(i64, f64)> {
    count_gaps(&points, gaps);
    points
}

/// What a per-series function does to each series, and which of its arguments is the list.
pub struct PerSeries {
    pub arg: usize,
    pub arg_name: &'static str,
    pub f: Box<dyn Fn(Series) -> Series + Send + Sync>,
}

/// A path expression and the per-series functions over it, composed (see [`Ctx::stream`]).
pub struct Stream<'e> {
    pub path: &'e str,
    pub each: Box<dyn Fn(Series) -> Series + Send + Sync + 'e>,
}

#[derive(Clone)]
pub struct Ctx<'a> {
    pub source: &'a dyn Source,
    pub from: i64,
    pub until: i64,
    pub now: i64,
    pub xff: f64,
    /// The request's zone (`tz`), on whose clock graphite-web's request times are read.
    pub tz: chrono_tz::Tz,
    /// The factor `setXFilesFactor` set for the rest of the request (see [`Ctx::xff`]).
    pub xff_set: XffCell,
}

/// An xFilesFactor set while a request is evaluated, shared by its contexts.
#[derive(Clone, Debug)]
pub struct XffCell(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Default for XffCell {
    fn default() -> Self {
        XffCell(std::sync::Arc::new(std::sync::atomic::AtomicU64::new(
            XFF_UNSET,
        )))
    }
}

/// No factor set: a NaN no `f64` arithmetic produces.
const XFF_UNSET: u64 = 0x7ff8_dead_beef_0001;

impl XffCell {
    pub fn get(&self) -> Option<f64> {
        let bits = self.0.load(std::sync::atomic::Ordering::Relaxed);
        (bits != XFF_UNSET).then(|| f64::from_bits(bits))
    }

    pub fn set(&self, x: f64) {
        self.0
            .store(x.to_bits(), std::sync::atomic::Ordering::Relaxed);
    }
}

/// How often each gap between consecutive points occurs over several series (those of one
/// path expression): pooled, so that a sparse series gets its siblings' resolution rather than
/// the width of its gaps (see [`commonest_gap`]).
pub fn gaps_in<'s>(series: impl IntoIterator<Item = &'s [(i64, f64)]>) -> Gaps {
    let mut gaps = Gaps::default();
    for points in series {
        count_gaps(points, &mut gaps);
    }
    gaps
}

/// The commonest gap counted, the stored data's resolution (the shared bench data is every
/// 10 s; irregular data gets its commonest interval): the smaller on a tie, or
/// [`DEFAULT_STEP`] for none.
pub fn commonest_gap(gaps: &Gaps) -> i64 {
    gaps.iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(d, _)| *d)
        .unwrap_or(DEFAULT_STEP)
}

/// Counts each gap between consecutive points of one series into `gaps`.
fn count_gaps(points: &[(i64, f64)], gaps: &mut Gaps) {
    // Runs of one gap (regular data is one run per series) are counted before they touch the
    // map, which then holds one entry per distinct gap.
    let mut run: Option<(i64, usize)> = None;
    for w in points.windows(2) {
        let d = w[1].0 - w[0].0;
        if d <= 0 {
            continue;
        }
        match &mut run {
            Some((g, n)) if *g == d => *n += 1,
            _ => {
                if let Some((g, n)) = run.replace((d, 1)) {
                    *gaps.entry(g).or_default() += n;
                }
            }
        }
    }
    if let Some((g, n)) = run {
        *gaps.entry(g).or_default() += n;
    }
}

/// The most steps a series' grid may hold (see [`Ctx::grid_step`]): ten years at a minute.
pub const GRID_STEPS_MAX: i64 = 10_000_000;

/// Puts raw points on whisper's grid for the window `(from, until]`: `start` is the first step
/// multiple after `from`, `end` the first after `until` (exclusive). A point lands in the bucket
/// its timestamp rounds down to; the last one wins, as whisper overwrites.
pub fn to_grid(name: &str, points: &[(i64, f64)], step: i64, from: i64, until: i64) -> Series {
    let start = from - from.rem_euclid(step) + step;
    let mut end = until - until.rem_euclid(step) + step;
    if end <= start {
        end = start + step;
    }
    let n = ((end - start) / step) as usize;
    let mut values = vec![None; n];
    // `start` is a step multiple, so a point's bucket is at or after it exactly when the
    // point is. Points come in time order, usually one per step: the bucket is the last
    // point's or the next, found without dividing (a division per point cost a tenth of
    // `sumSeries(perSecond(*.*.cpu.*))`); anything else divides.
    let (mut at, mut lo) = (0usize, start);
    for &(t, v) in points {
        if t < start {
            continue;
        }
        let d = t - lo;
        if d >= step && d < 2 * step {
            at += 1;
            lo += step;
        } else if !(0..step).contains(&d) {
            at = ((t - start) / step) as usize;
            lo = start + at as i64 * step;
        }
        if let Some(slot) = values.get_mut(at) {
            *slot = if v.is_nan() { None } else { Some(v) };
        }
    }
    Series::new(name, start, step, values)
}

impl Ctx<'_> {
    pub fn eval(&self, e: &Expr) -> R<Vec<Series>> {
        match e {
            Expr::Path(p) => self.fetch(p),
            Expr::Call(c) => self.call(c),
            other => err(format!("expected a series list, got {other:?}")),
        }
    }

    pub fn call(&self, c: &Call) -> R<Vec<Series>> {
        let outer = WANT.with(|w| w.borrow().clone());
        with_want(want_of(self, c, outer.as_ref()), || {
            super::functions::call(self, c)
        })
    }

    /// Every series of a path expression, sorted by name.
    pub fn fetch(&self, expr: &str) -> R<Vec<Series>> {
        self.fetch_mapped(expr, &|s| s)
    }

    /// [`Ctx::fetch`] with `then` applied to each series as soon as it is gridded, on the
    /// core that gridded it: a transform over thousands of series (`perSecond(*.*.cpu.*)`)
    /// then finds each in cache rather than making one more pass over them all.
    pub fn fetch_mapped(
        &self,
        expr: &str,
        then: &(dyn Fn(Series) -> Series + Sync),
    ) -> R<Vec<Series>> {
        let entries = self.source.entries()?;
        let matched = index::resolve(&entries, expr).map_err(EvalError::from)?;
        self.fetch_entries_mapped(&matched, expr, then)
    }

    pub fn fetch_entries(&self, matched: &[&Entry], path_expr: &str) -> R<Vec<Series>> {
        self.fetch_entries_mapped(matched, path_expr, &|s| s)
    }

    fn fetch_entries_mapped(
        &self,
        matched: &[&Entry],
        path_expr: &str,
        then: &(dyn Fn(Series) -> Series + Sync),
    ) -> R<Vec<Series>> {
        if let Some(parts) =
            self.rollup_fold(matched, path_expr, then, Vec::new, |part, s| part.push(s))?
        {
            return Ok(parts.concat());
        }
        let parts = self.read_fold(matched, path_expr, then, Vec::new, |part, s| part.push(s))?;
        Ok(parts.concat())
    }

    /// The series of a list expression that [`Ctx::stream`] accepted, folded as they are made:
    /// once all raw points are read, each series is gridded, put through the stream's
    /// functions and handed to `add` on the core that gridded it, so that thousands of grids
    /// are never all held at once. Returns the parts (see [`parallel::fold`]) in the order of
    /// the series' names.
    pub fn fold_stream<P: Send>(
        &self,
        stream: &Stream,
        new: impl Fn() -> P + Sync,
        add: impl Fn(&mut P, Series) + Sync,
    ) -> R<Vec<P>> {
        let entries = self.source.entries()?;
        let matched = index::resolve(&entries, stream.path).map_err(EvalError::from)?;
        if let Some(parts) = self.rollup_fold(&matched, stream.path, &stream.each, &new, &add)? {
            return Ok(parts);
        }
        self.read_fold(&matched, stream.path, &stream.each, new, add)
    }

    /// [`Ctx::read_fold`] from a rollup, when the source has one that is the right source for
    /// what the evaluation asks now ([`WANT`]) or for the window's age: each series gridded on
    /// the rollup's interval (whisper's rule for a coarser archive: an interval is in when
    /// its start is in `(from, until]`), in one part. None: read raw points.
    fn rollup_fold<P: Send>(
        &self,
        matched: &[&Entry],
        path_expr: &str,
        each: &(dyn Fn(Series) -> Series + Sync),
        new: impl Fn() -> P + Sync,
        add: impl Fn(&mut P, Series) + Sync,
    ) -> R<Option<Vec<P>>> {
        let want = WANT.with(|w| w.borrow().clone());
        let mut sorted = matched.to_vec();
        if !sorted.is_sorted_by(|a, b| a.path <= b.path) {
            sorted.sort_by(|a, b| a.path.cmp(&b.path));
        }
        let Some((step, pts)) =
            self.source
                .rollup_points(&sorted, self.from, self.until, want.as_ref())?
        else {
            return Ok(None);
        };
        let step = self.grid_step(step)?;
        self.charge_grids(sorted.len(), step)?;
        let mut part = new();
        for (e, p) in sorted.into_iter().zip(pts.series) {
            add(&mut part, each(self.grid(e, p, step, path_expr)));
        }
        Ok(Some(vec![part]))
    }

    /// `matched`'s series in the order of their paths, each gridded on the step of them all,
    /// put through `each` and folded by `add` into the part of its chunk ([`parallel::fold`]'s
    /// chunks). Where the source reads entries apart, each chunk is read a run of at most
    /// [`READ_RUN_MAX`] series at a time, each run gridded and folded on one core while its
    /// points are in cache, on the step its chunk's first gaps show: a chunk whose step turns
    /// out not to be that of them all (mixed resolutions) is read again. Otherwise all points
    /// are read before any is gridded.
    fn read_fold<P: Send>(
        &self,
        matched: &[&Entry],
        path_expr: &str,
        each: &(dyn Fn(Series) -> Series + Sync),
        new: impl Fn() -> P + Sync,
        add: impl Fn(&mut P, Series) + Sync,
    ) -> R<Vec<P>> {
        // Sorted by name (the path) before any function renames them; a path expression's
        // entries come sorted already.
        let mut sorted = matched.to_vec();
        if !sorted.is_sorted_by(|a, b| a.path <= b.path) {
            sorted.sort_by(|a, b| a.path.cmp(&b.path));
        }
        self.precheck(&sorted)?;
        let fold_in = |part: &mut P, chunk: &[&Entry], pts: Vec<Vec<(i64, f64)>>, step: i64| {
            for (e, p) in chunk.iter().zip(pts) {
                add(part, each(self.grid(e, p, step, path_expr)));
            }
        };
        if !self.source.reads_apart(&sorted) {
            let (step, pts) = self.read(&sorted)?;
            self.charge_grids(sorted.len(), step)?;
            let items: Vec<(&Entry, Vec<(i64, f64)>)> = sorted.into_iter().zip(pts).collect();
            return Ok(parallel::fold(items, new, |part, (e, p)| {
                add(part, each(self.grid(e, p, step, path_expr)))
            }));
        }
        /// What a chunk's first read made: its part, on the step of its own gaps, or (no gaps
        /// to tell one) its points.
        enum Read<P> {
            Folded(i64, P),
            Points(Vec<Vec<(i64, f64)>>),
        }
        // `parallel::fold`'s chunks, so that the parts (and a sum's grouping) are those of
        // reading them all at once; each read a run of at most READ_RUN_MAX at a time.
        self.source.reading(&sorted, self.from, self.until);
        let chunks = parallel::fold_chunks(sorted);
        let read = parallel::map_from(
            chunks,
            2,
            |chunk| -> R<(Vec<&Entry>, Read<P>, Gaps, bool)> {
                let (mut gaps, mut long) = (Gaps::default(), false);
                // The points of the first runs, while none has a gap to tell a step by.
                let mut held: Vec<Vec<(i64, f64)>> = Vec::new();
                let mut folded: Option<(i64, P)> = None;
                for (at, run) in chunk.chunks(READ_RUN_MAX).enumerate() {
                    let Points {
                        series: pts,
                        gaps: run_gaps,
                    } = self.source.points_apart(run, self.from, self.until)?;
                    long |= pts.iter().any(|p| p.len() >= 2);
                    for (g, n) in &run_gaps {
                        *gaps.entry(*g).or_default() += n;
                    }
                    match &mut folded {
                        Some((step, part)) => {
                            self.charge_grids(run.len(), *step)?;
                            fold_in(part, run, pts, *step)
                        }
                        None if run_gaps.is_empty() => held.extend(pts),
                        None => {
                            let step = self.grid_step(commonest_gap(&run_gaps))?;
                            self.charge_grids(at * READ_RUN_MAX + run.len(), step)?;
                            let mut part = new();
                            fold_in(
                                &mut part,
                                &chunk[..at * READ_RUN_MAX],
                                std::mem::take(&mut held),
                                step,
                            );
                            fold_in(&mut part, run, pts, step);
                            folded = Some((step, part));
                        }
                    }
                }
                let r = match folded {
                    Some((step, part)) => Read::Folded(step, part),
                    None => Read::Points(held),
                };
                Ok((chunk, r, gaps, long))
            },
        );
        let read = read.into_iter().collect::<R<Vec<_>>>()?;
        let mut gaps = Gaps::default();
        for (g, n) in read.iter().flat_map(|r| &r.2) {
            *gaps.entry(*g).or_default() += n;
        }
        let step = if !read.iter().any(|r| r.3) && read.iter().any(|r| !r.0.is_empty()) {
            self.lookback_step(
                &read
                    .iter()
                    .flat_map(|r| r.0.iter().copied())
                    .collect::<Vec<_>>(),
            )?
        } else {
            commonest_gap(&gaps)
        };
        let step = self.grid_step(step)?;
        parallel::map_from(read, 2, |(chunk, r, _, _)| -> R<P> {
            let pts = match r {
                Read::Folded(s, part) if s == step => return Ok(part),
                Read::Folded(..) => {
                    self.source
                        .points_apart(&chunk, self.from, self.until)?
                        .series
                }
                Read::Points(pts) => pts,
            };
            self.charge_grids(chunk.len(), step)?;
            let mut part = new();
            fold_in(&mut part, &chunk, pts, step);
            Ok(part)
        })
        .into_iter()
        .collect()
    }

    /// Refuses, before anything is read, a request whose `entries` could not be gridded within
    /// `query.max_cells`. Only when they could not fit even at one step a second is the step
    /// learnt first, from the first entry's last hour (one short read): the request is then
    /// judged at that step. The points actually read and the grids actually made are charged
    /// as they come ([`Source::charge`]), so a step guessed too long is caught there.
    fn precheck(&self, entries: &[&Entry]) -> R<()> {
        let Some(limit) = self.source.cell_limit() else {
            return Ok(());
        };
        let window = (self.until - self.from).max(1) as u64;
        let n = entries.len() as u64;
        if entries.is_empty() || n.saturating_mul(window) <= limit {
            return Ok(());
        }
        let probe = self.source.points(
            &entries[..1],
            self.until - STEP_LOOKBACK.min(window as i64),
            self.until,
        )?;
        let step = commonest_gap(&probe.gaps).max(1) as u64;
        let cells = n.saturating_mul(window / step + 1);
        if cells > limit {
            return Err(too_many_cells(cells, limit));
        }
        Ok(())
    }

    /// Charges the grids of `series` series at `step` before they are made.
    fn charge_grids(&self, series: usize, step: i64) -> R<()> {
        let steps = (self.until - self.from).max(0) as u64 / step.max(1) as u64 + 1;
        self.source.charge((series as u64).saturating_mul(steps))
    }

    /// A list expression whose series can each be made on their own: a path expression, or a
    /// function that makes each output series from one input series ([`functions::per_series`])
    /// over such an expression. `None` for anything else (a filter, a sort, a combiner).
    pub fn stream<'e>(&self, e: &'e Expr) -> R<Option<Stream<'e>>> {
        match e {
            Expr::Path(p) => Ok(Some(Stream {
                path: p,
                each: Box::new(|s| s),
            })),
            Expr::Call(c) => {
                let Some(step) = super::functions::per_series(c) else {
                    return Ok(None);
                };
                let step = step?;
                let Some(inner) = (Args { call: c }).get(step.arg, step.arg_name) else {
                    return Ok(None);
                };
                let Some(inner) = self.stream(inner)? else {
                    return Ok(None);
                };
                let (first, then) = (inner.each, step.f);
                Ok(Some(Stream {
                    path: inner.path,
                    each: Box::new(move |s| then(first(s))),
                }))
            }
            _ => Ok(None),
        }
    }

    /// Each entry's raw points, in `entries`' order, and the step they are gridded on.
    #[allow(clippy::type_complexity)]
    fn read(&self, entries: &[&Entry]) -> R<(i64, Vec<Vec<(i64, f64)>>)> {
        let Points { series: pts, gaps } = self.source.points(entries, self.from, self.until)?;
        let step = if !entries.is_empty() && pts.iter().all(|p| p.len() < 2) {
            self.lookback_step(entries)?
        } else {
            commonest_gap(&gaps)
        };
        Ok((self.grid_step(step)?, pts))
    }

    /// `step`, when the window's grid at that step holds at most [`GRID_STEPS_MAX`] steps per
    /// series; an error otherwise. Whisper's retention bounds what graphite-web grids; here a
    /// window reaching centuries back (`movingAverage(x, '6333333333min')` bootstraps that far)
    /// would otherwise allocate its grid whole.
    fn grid_step(&self, step: i64) -> R<i64> {
        let steps = (self.until as i128 - self.from as i128) / step.max(1) as i128;
        if steps > GRID_STEPS_MAX as i128 {
            return err(format!("the window from {} to {} holds {steps} steps of {step} s per series, more than {GRID_STEPS_MAX}: shorten it", self.from, self.until));
        }
        Ok(step)
    }

    /// The step of series with too few points in a short window to see their resolution,
    /// learnt from the hour before (one more bounded scan, only in this case), else from the
    /// hour after (a window that ends as the data starts): whisper's archive step, which
    /// graphite-web grids on, is the series' own, wherever the window falls.
    fn lookback_step(&self, entries: &[&Entry]) -> R<i64> {
        let before = self
            .source
            .points(entries, self.from - STEP_LOOKBACK, self.until)?
            .gaps;
        if !before.is_empty() {
            return Ok(commonest_gap(&before));
        }
        Ok(commonest_gap(
            &self
                .source
                .points(entries, self.from, self.until + STEP_LOOKBACK)?
                .gaps,
        ))
    }

    /// One entry's points on the grid, named, tagged and marked with the expression that
    /// fetched it. The points are dropped once gridded.
    fn grid(&self, e: &Entry, points: Vec<(i64, f64)>, step: i64, path_expr: &str) -> Series {
        let mut s = to_grid(&e.path, &points, step, self.from, self.until);
        drop(points);
        s.tags = e.graphite_tags();
        s.path_expr = path_expr.to_string();
        s.xff = self.xff();
        s
    }

    /// The same context over another window.
    /// The request's xFilesFactor, or the one `setXFilesFactor` set since: graphite-web's
    /// function stores it in the request context, for every aggregation after it.
    pub fn xff(&self) -> f64 {
        self.xff_set.get().unwrap_or(self.xff)
    }

    pub fn shifted(&self, from: i64, until: i64) -> Self {
        Ctx {
            from,
            until,
            ..self.clone()
        }
    }

    /// `t`'s wall-clock reading in the request's zone, read back as UTC: what graphite-web's
    /// `time.mktime(dt.timetuple())` gives for a request time on a server whose clock is UTC
    /// (timeFunction, sinFunction, timeSlice and linearRegression use it).
    pub fn wall(&self, t: i64) -> i64 {
        use chrono::Offset;
        use chrono::TimeZone;
        let off = self
            .tz
            .offset_from_utc_datetime(
                &chrono::DateTime::from_timestamp(t, 0)
                    .unwrap_or_default()
                    .naive_utc(),
            )
            .fix()
            .local_minus_utc();
        t + off as i64
    }

    /// graphite-web's `datetime(s.year, …, tzinfo=s.tzinfo)` of the request's start `s`:
    /// its wall-clock fields in the request's zone, cut down to `unit`, read back with the
    /// offset in force at `s` (pytz's localized zone is a fixed offset), even where the cut
    /// falls on the other side of a daylight-saving change; weeks go back to ISO weekday
    /// `week_day` (Monday is 1). hitcount and smartSummarize align with it.
    pub fn aligned_start(&self, unit: TimeUnit, week_day: i64) -> i64 {
        use chrono::{Datelike, NaiveDate, Timelike};
        let wall = chrono::DateTime::from_timestamp(self.from, 0)
            .unwrap_or_default()
            .with_timezone(&self.tz)
            .naive_local();
        let (d, t) = (wall.date(), wall.time());
        let day = |date: NaiveDate| date.and_hms_opt(0, 0, 0).unwrap_or(wall);
        let cut = match unit {
            TimeUnit::Year => day(NaiveDate::from_ymd_opt(d.year(), 1, 1).unwrap_or(d)),
            TimeUnit::Month => day(NaiveDate::from_ymd_opt(d.year(), d.month(), 1).unwrap_or(d)),
            TimeUnit::Week => {
                let mut back = d.weekday().number_from_monday() as i64 - week_day;
                if back < 0 {
                    back += 7;
                }
                day(d) - chrono::Duration::days(back)
            }
            TimeUnit::Day => day(d),
            TimeUnit::Hour => d.and_hms_opt(t.hour(), 0, 0).unwrap_or(wall),
            TimeUnit::Minute => d.and_hms_opt(t.hour(), t.minute(), 0).unwrap_or(wall),
            TimeUnit::Second => wall,
        };
        cut.and_utc().timestamp() - (self.wall(self.from) - self.from)
    }
}

/// Typed access to a call's arguments (positional index or keyword name). Quoted numbers and
/// booleans are accepted where numbers are expected, because Grafana quotes many of them.
pub struct Args<'c> {
    pub call: &'c Call,
}

impl<'c> Args<'c> {
    pub fn get(&self, i: usize, name: &str) -> Option<&'c Expr> {
        self.call.args.get(i).or_else(|| {
            self.call
                .kwargs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v)
        })
    }

    pub fn series(&self, ctx: &Ctx, i: usize, name: &str) -> R<Vec<Series>> {
        match self.get(i, name) {
            Some(e) => ctx.eval(e),
            None => err(format!("{}: missing argument {name}", self.call.name)),
        }
    }

    /// [`Args::series`] with `f` applied to each series on every core; a path expression's
    /// series each as it is read (see [`Ctx::fetch_mapped`]).
    pub fn series_each(
        &self,
        ctx: &Ctx,
        i: usize,
        name: &str,
        f: &(dyn Fn(Series) -> Series + Sync),
    ) -> R<Vec<Series>> {
        match self.get(i, name) {
            Some(Expr::Path(p)) => ctx.fetch_mapped(p, f),
            Some(e) => Ok(parallel::map(ctx.eval(e)?, f)),
            None => err(format!("{}: missing argument {name}", self.call.name)),
        }
    }

    /// All positional arguments from `i` on, as series lists concatenated.
    pub fn series_rest(&self, ctx: &Ctx, i: usize) -> R<Vec<Series>> {
        let mut out = Vec::new();
        for e in self.call.args.iter().skip(i) {
            out.extend(ctx.eval(e)?);
        }
        Ok(out)
    }

    pub fn opt_num(&self, i: usize, name: &str) -> R<Option<f64>> {
        match self.get(i, name) {
            None | Some(Expr::None) => Ok(None),
            Some(Expr::Num(n)) => Ok(Some(*n)),
            Some(Expr::Bool(b)) => Ok(Some(*b as i64 as f64)),
            Some(Expr::Str(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "inf" => Ok(Some(f64::INFINITY)),
                t => t.parse().map(Some).map_err(|_| {
                    EvalError::Invalid(format!(
                        "{}: {name} must be a number, got {s:?}",
                        self.call.name
                    ))
                }),
            },
            Some(other) => err(format!(
                "{}: {name} must be a number, got {other:?}",
                self.call.name
            )),
        }
    }

    pub fn num(&self, i: usize, name: &str) -> R<f64> {
        self.opt_num(i, name)?.ok_or_else(|| {
            EvalError::Invalid(format!("{}: missing argument {name}", self.call.name))
        })
    }

    pub fn num_or(&self, i: usize, name: &str, d: f64) -> R<f64> {
        Ok(self.opt_num(i, name)?.unwrap_or(d))
    }

    pub fn opt_str(&self, i: usize, name: &str) -> R<Option<String>> {
        match self.get(i, name) {
            None | Some(Expr::None) => Ok(None),
            Some(Expr::Str(s)) => Ok(Some(s.clone())),
            Some(Expr::Num(n)) => Ok(Some(super::series::fmt_g(*n))),
            Some(Expr::Bool(b)) => Ok(Some(if *b { "True" } else { "False" }.into())),
            // A bare word where a string is expected (`consolidateBy(x, max)`) reads as text.
            Some(Expr::Path(p)) => Ok(Some(p.clone())),
            Some(other) => err(format!(
                "{}: {name} must be a string, got {other:?}",
                self.call.name
            )),
        }
    }

    pub fn string(&self, i: usize, name: &str) -> R<String> {
        self.opt_str(i, name)?.ok_or_else(|| {
            EvalError::Invalid(format!("{}: missing argument {name}", self.call.name))
        })
    }

    pub fn boolean(&self, i: usize, name: &str, d: bool) -> R<bool> {
        Ok(match self.get(i, name) {
            None | Some(Expr::None) => d,
            Some(Expr::Bool(b)) => *b,
            Some(Expr::Num(n)) => *n != 0.0,
            Some(Expr::Str(s)) | Some(Expr::Path(s)) => {
                matches!(s.to_ascii_lowercase().as_str(), "true" | "1")
            }
            Some(other) => {
                return err(format!(
                    "{}: {name} must be a boolean, got {other:?}",
                    self.call.name
                ))
            }
        })
    }

    /// A node index or a tag name (`nodeOrTag`).
    pub fn node_or_tag(e: &Expr) -> NodeOrTag {
        match e {
            Expr::Num(n) => NodeOrTag::Node(*n as i64),
            Expr::Str(s) | Expr::Path(s) => match s.parse::<i64>() {
                Ok(n) => NodeOrTag::Node(n),
                Err(_) => NodeOrTag::Tag(s.clone()),
            },
            _ => NodeOrTag::Tag(String::new()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeOrTag {
    Node(i64),
    Tag(String),
}

/// A fixed set of series (unit tests, fuzz targets).
pub struct MemSource(pub Vec<(String, Vec<(i64, f64)>)>);

impl Source for MemSource {
    fn entries(&self) -> R<Arc<Vec<Entry>>> {
        let mut v: Vec<Entry> = self
            .0
            .iter()
            .map(|(p, _)| Entry {
                path: p.clone(),
                metric: p.clone(),
                tags: vec![],
                metric_uid: None,
            })
            .collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Arc::new(v))
    }
    fn points(&self, entries: &[&Entry], from: i64, until: i64) -> R<Points> {
        let series: Vec<Vec<(i64, f64)>> = entries
            .iter()
            .map(|e| match self.0.iter().find(|(p, _)| *p == e.path) {
                Some((_, pts)) => pts
                    .iter()
                    .filter(|(t, _)| *t > from && *t <= until)
                    .copied()
                    .collect(),
                None => Vec::new(),
            })
            .collect();
        let gaps = gaps_in(series.iter().map(Vec::as_slice));
        Ok(Points { series, gaps })
    }
    /// Each entry is found on its own.
    fn reads_apart(&self, _entries: &[&Entry]) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts aligned as graphite-web 1.1.8 aligns 1795856650 (Python's answers, pytz 2024).
    #[test]
    fn aligned_starts_as_graphite_web_cuts_them() {
        let src = MemSource(vec![]);
        for (zone, want) in [
            (
                "Europe/Berlin",
                [
                    1767222000, 1793487600, 1795647600, 1795820400, 1795856400, 1795856640,
                    1795856650,
                ],
            ),
            (
                "Asia/Kolkata",
                [
                    1767205800, 1793471400, 1795631400, 1795804200, 1795854600, 1795856640,
                    1795856650,
                ],
            ),
            (
                "America/New_York",
                [
                    1767243600, 1793509200, 1795669200, 1795842000, 1795856400, 1795856640,
                    1795856650,
                ],
            ),
            (
                "UTC",
                [
                    1767225600, 1793491200, 1795651200, 1795824000, 1795856400, 1795856640,
                    1795856650,
                ],
            ),
        ] {
            let ctx = Ctx {
                source: &src,
                from: 1_795_856_650,
                until: 1_795_860_000,
                now: 1_795_860_000,
                xff: 0.0,
                tz: zone.parse().unwrap(),
                xff_set: Default::default(),
            };
            let units = [
                TimeUnit::Year,
                TimeUnit::Month,
                TimeUnit::Week,
                TimeUnit::Day,
                TimeUnit::Hour,
                TimeUnit::Minute,
                TimeUnit::Second,
            ];
            // Weeks back to Thursday.
            let got: Vec<i64> = units.iter().map(|u| ctx.aligned_start(*u, 4)).collect();
            assert_eq!(got, want, "{zone}");
        }
    }

    proptest::proptest! {
        /// Each point lands in the bucket its timestamp rounds down to (whisper's rule), the
        /// last one winning, NaN as a gap.
        #[test]
        fn points_land_in_their_bucket(mut ts in proptest::collection::vec(-100i64..400, 0..40), step in proptest::prop_oneof![proptest::strategy::Just(1i64), proptest::strategy::Just(7), proptest::strategy::Just(10), proptest::strategy::Just(60)], from in -50i64..200, span in 1i64..300, sorted: bool) {
            // In time order (as stored series come, a bucket walk) or not (a division each).
            if sorted {
                ts.sort();
            }
            let pts: Vec<(i64, f64)> = ts.iter().enumerate().map(|(i, &t)| (t, if i % 5 == 4 { f64::NAN } else { i as f64 })).collect();
            let s = to_grid("x", &pts, step, from, from + span);
            let mut want = vec![None; s.values.len()];
            for &(t, v) in &pts {
                let b = t - t.rem_euclid(step);
                if b >= s.start && b < s.end {
                    want[((b - s.start) / step) as usize] = if v.is_nan() { None } else { Some(v) };
                }
            }
            proptest::prop_assert_eq!(s.values, want);
        }
    }

    /// A source that reads all its entries at once ([`Source::reads_apart`] false).
    struct Together<'a>(&'a MemSource);

    impl Source for Together<'_> {
        fn entries(&self) -> R<Arc<Vec<Entry>>> {
            self.0.entries()
        }
        fn points(&self, entries: &[&Entry], from: i64, until: i64) -> R<Points> {
            self.0.points(entries, from, until)
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// Reading entries apart, a run at a time on the step its chunk's first gaps show,
        /// grids and folds every series as reading them all at once does: series of two
        /// resolutions in alternating blocks (a chunk whose step is not that of them all is
        /// read again), sparse ones (runs with no gap held until one shows the step, or a
        /// chunk with none), and windows too short to show any gap (the step learnt from the
        /// hour before).
        #[test]
        fn chunks_read_apart_grid_as_all_at_once(
            mut shapes in proptest::collection::vec((0usize..60, 0i64..60), 0..1500),
            // Few series (one chunk, one run) as often as many.
            few in proptest::prop_oneof![0usize..200, proptest::strategy::Just(usize::MAX)],
            block in 1usize..400,
            steps in (1i64..7, 1i64..7),
            from in 0i64..400,
            span in proptest::prop_oneof![1i64..30, 30i64..1200],
        ) {
            shapes.truncate(few);
            let src = MemSource(
                shapes
                    .iter()
                    .enumerate()
                    .map(|(i, &(n, skew))| (i, n, skew, if (i / block) % 2 == 0 { steps.0 * 10 } else { steps.1 * 10 }))
                    .map(|(i, n, skew, step)| (format!("s.{i:03}"), (0..n as i64).map(|k| (skew + k * step * (1 + (k % 7 == 6) as i64), (i * 100 + k as usize) as f64)).collect()))
                    .collect(),
            );
            fn ctx(source: &dyn Source, from: i64, until: i64) -> Ctx<'_> {
                Ctx { source, from, until, now: until, xff: 0.0, tz: chrono_tz::UTC, xff_set: Default::default() }
            }
            let together = Together(&src);
            let ctx = |source| ctx(source, from, from + span);
            let apart = ctx(&src).fetch("s.*").unwrap();
            proptest::prop_assert_eq!(&apart, &ctx(&together).fetch("s.*").unwrap());
            // Folded in order, into the parts reading them all at once folds them into (a
            // sum's grouping is theirs); chunks of more than READ_RUN_MAX read in runs.
            let stream = Stream { path: "s.*", each: Box::new(|s| s) };
            let parts = |c: Ctx| c.fold_stream(&stream, Vec::new, |p: &mut Vec<Series>, s| p.push(s)).unwrap();
            proptest::prop_assert_eq!(parts(ctx(&src)), parts(ctx(&together)));
        }
    }

    /// A window holding one point of 120 s data, with nothing in the hour before: the step is
    /// learnt from the hour after, as whisper's archive step would give it.
    #[test]
    fn a_window_ending_as_the_data_starts_takes_the_step_of_the_hour_after() {
        let src = MemSource(vec![(
            "w.slow".to_string(),
            (0..5).map(|k| (7200 + k * 120, k as f64)).collect(),
        )]);
        let ctx = Ctx {
            source: &src,
            from: 3600,
            until: 7260,
            now: 7260,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        let s = ctx.fetch("w.slow").unwrap();
        assert_eq!((s[0].step, s[0].values.last()), (120, Some(&Some(0.0))));
    }

    #[test]
    fn grid_is_from_exclusive_until_inclusive() {
        // Spec §2.3.2: with 60 s data at T0, T0+60…, from=T0 starts at T0+60; from=T0-1 at T0.
        let pts: Vec<(i64, f64)> = (0..10).map(|i| (600 + i * 60, i as f64)).collect();
        let s = to_grid("x", &pts, 60, 600, 900);
        assert_eq!(s.start, 660);
        assert_eq!(s.end, 960);
        assert_eq!(
            s.values,
            vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0)]
        );
        let s = to_grid("x", &pts, 60, 599, 900);
        assert_eq!(s.start, 600);
        let step = |series: &[&[(i64, f64)]]| commonest_gap(&gaps_in(series.iter().copied()));
        assert_eq!(step(&[&pts]), 60);
        assert_eq!(step(&[&[]]), DEFAULT_STEP);
        // Counted over runs and series alike; ties go to the smaller gap.
        let a: Vec<(i64, f64)> = [0, 10, 20, 30, 35, 40].iter().map(|&t| (t, 0.0)).collect();
        let b: Vec<(i64, f64)> = [0, 5, 10, 15, 15, 25].iter().map(|&t| (t, 0.0)).collect();
        assert_eq!(step(&[&a]), 10);
        assert_eq!(step(&[&a, &b]), 5);
        assert_eq!(step(&[&a[..4], &b[..3]]), 10);
    }
}
