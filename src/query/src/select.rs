//! Series selection for the Prometheus side: every series whose labels (metric name as
//! `__name__`, tags unescaped) satisfy a list of matchers (EQ, NEQ, RE, NRE with fully anchored
//! regexes), with its points in a time range decoded to `(ms, f64)`. A missing label counts as
//! the empty string, as in Prometheus.

use super::collect::Collector;
pub use super::collect::{KeepSeries, Stamps, StoredSelected};
use super::decode::append_row;
use super::row_cache::{row_weight, Fill, RowPoints};
use super::seek::{RequiredPairs, RowFilter};
use super::{QueryEngine, QueryError};
use regex::Regex;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tsgate_core::prometheus::labels::{
    escape, from_stored, Labels, METRIC_NAME, PLACEHOLDER_TAGK, PLACEHOLDER_TAGV,
};
use tsgate_schema::rowkey::{base_time, ROW_SPAN};
use tsgate_schema::uid_table::UidKind;
use tsgate_store::{CellRef, LentRow, RowSeek, RowSeeker, Scan, StoreResult};

#[derive(Debug, Clone)]
pub enum MatchOp {
    Eq,
    Neq,
    Re(Regex),
    Nre(Regex),
}

#[derive(Debug, Clone)]
pub struct Matcher {
    pub name: String,
    pub value: String,
    pub op: MatchOp,
}

/// Go RE2 classes are ASCII-only where Rust's are Unicode-aware: spell them out.
fn go_to_rust_regex(re: &str) -> String {
    let mut out = String::with_capacity(re.len() + 8);
    let mut it = re.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some('s') => out.push_str("[\\t\\n\\f\\r ]"),
            Some('S') => out.push_str("[^\\t\\n\\f\\r ]"),
            Some('b') => out.push_str("(?-u:\\b)"),
            Some('B') => out.push_str("(?-u:\\B)"),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A remote-read label matcher that cannot be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MatcherError {
    #[error("invalid regular expression {value:?}: {source}")]
    Regex { value: String, source: regex::Error },
    #[error("unknown matcher type {0}")]
    Kind(i32),
}

impl Matcher {
    pub fn eq(name: &str, value: &str) -> Matcher {
        Matcher {
            name: name.into(),
            value: value.into(),
            op: MatchOp::Eq,
        }
    }

    /// `kind`: 0 EQ, 1 NEQ, 2 RE, 3 NRE (remote read's numbering).
    pub fn new(kind: i32, name: &str, value: &str) -> Result<Matcher, MatcherError> {
        let compile = || {
            Regex::new(&format!("^(?:{})$", go_to_rust_regex(value))).map_err(|source| {
                MatcherError::Regex {
                    value: value.to_string(),
                    source,
                }
            })
        };
        let op = match kind {
            0 => MatchOp::Eq,
            1 => MatchOp::Neq,
            2 => MatchOp::Re(compile()?),
            3 => MatchOp::Nre(compile()?),
            k => return Err(MatcherError::Kind(k)),
        };
        Ok(Matcher {
            name: name.into(),
            value: value.into(),
            op,
        })
    }

    pub fn matches(&self, v: &str) -> bool {
        match &self.op {
            MatchOp::Eq => v == self.value,
            MatchOp::Neq => v != self.value,
            MatchOp::Re(r) => r.is_match(v),
            MatchOp::Nre(r) => !r.is_match(v),
        }
    }

    /// Whether the matcher selects series lacking the label.
    pub fn matches_empty(&self) -> bool {
        self.matches("")
    }
}

/// Whether a sorted label set passes every matcher.
pub fn labels_match(labels: &Labels, matchers: &[Matcher]) -> bool {
    matchers.iter().all(|m| {
        let v = labels
            .iter()
            .find(|(k, _)| *k == m.name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        m.matches(v)
    })
}

/// One selected series: sorted labels and time-ordered points.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    pub labels: Labels,
    pub points: Vec<(i64, f64)>,
}

/// Takes each series [`QueryEngine::select_metric_each`] selects, its points borrowed; an
/// error ends the selection.
pub type SeriesSink<'a, E> = dyn FnMut(Labels, &[(i64, f64)]) -> Result<(), E> + 'a;

/// How [`QueryEngine::select_stored`] reads each metric: the rows `row_filter` passes, the
/// series `keep` accepts, points in `[start_ms, end_ms]` timed as `stamps` says, and the row
/// cache's allowance `fill` (see [`super::row_cache::RowCache::fill`]).
pub struct StoredRead<'a> {
    pub start_ms: i64,
    pub end_ms: i64,
    pub stamps: Stamps,
    pub row_filter: &'a RowFilter,
    pub fill: Option<&'a Fill>,
    pub keep: &'a KeepSeries<'a>,
}

impl QueryEngine {
    /// Metric names (stored form) the `__name__` matchers allow.
    pub(crate) fn candidate_metrics(
        &self,
        matchers: &[Matcher],
    ) -> Result<Vec<String>, QueryError> {
        let name_ms: Vec<&Matcher> = matchers.iter().filter(|m| m.name == METRIC_NAME).collect();
        if let Some(eq) = name_ms
            .iter()
            .find(|m| matches!(m.op, MatchOp::Eq) && !m.value.is_empty())
        {
            let ok = name_ms.iter().all(|m| m.matches(&eq.value));
            return Ok(if ok {
                vec![escape(&eq.value).into_owned()]
            } else {
                Vec::new()
            });
        }
        let all = self.uids.list(UidKind::Metric)?;
        Ok(all
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| {
                let name = tsgate_core::prometheus::labels::unescape(n);
                name_ms.iter().all(|m| m.matches(&name))
            })
            .collect())
    }

    /// The scan filter for the label matchers that name one value (`label="v"`, `v` not
    /// empty and stored as written): rows without those tag pairs are skipped by the store
    /// before their cells are read. `Ok(None)` when such a label or value has no UID, so no
    /// series can match.
    fn required_pairs(&self, label_ms: &[Matcher]) -> Result<Option<RowFilter>, QueryError> {
        let mut per_key = RequiredPairs::new();
        for m in label_ms {
            if !matches!(m.op, MatchOp::Eq) || m.value.is_empty() {
                continue;
            }
            // Only names stored as written: a name that needs escaping may also have been
            // stored raw (telnet, /api/put), which the label comparison would still match.
            let (Cow::Borrowed(k), Cow::Borrowed(v)) = (escape(&m.name), escape(&m.value)) else {
                continue;
            };
            let Some(k) = self.uids.get_id(UidKind::Tagk, k)? else {
                return Ok(None);
            };
            let Some(v) = self.uids.get_id(UidKind::Tagv, v)? else {
                return Ok(None);
            };
            match per_key.entry(k.into_vec()) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(Some(vec![v.into_vec()]));
                }
                // Two different values required for one label: nothing matches.
                std::collections::btree_map::Entry::Occupied(e) => {
                    if e.get().as_ref().is_some_and(|vs| !vs.contains(&v.to_vec())) {
                        return Ok(None);
                    }
                }
            }
        }
        Ok(Some(RowFilter::for_pairs(&self.layout, per_key)))
    }

    /// The scan filter for reading a few known series of one metric (their stored tags): the
    /// tag keys all of them carry, each with the values they have. A superset of those series
    /// passes; the caller still picks its own.
    pub fn series_filter(&self, series: &[&[(String, String)]]) -> Result<RowFilter, QueryError> {
        let Some((first, rest)) = series.split_first() else {
            return Ok(RowFilter::default());
        };
        let mut per_key = RequiredPairs::new();
        for (k, _) in first.iter() {
            if !rest.iter().all(|s| s.iter().any(|(k2, _)| k2 == k)) {
                continue;
            }
            let Some(kid) = self.uids.get_id(UidKind::Tagk, k)? else {
                return Ok(RowFilter::default());
            };
            let mut vals = Vec::new();
            for s in series {
                let v = &s
                    .iter()
                    .find(|(k2, _)| k2 == k)
                    .expect("every series has the key")
                    .1;
                let Some(vid) = self.uids.get_id(UidKind::Tagv, v)? else {
                    return Ok(RowFilter::default());
                };
                vals.push(vid.into_vec());
            }
            per_key.insert(kid.into_vec(), Some(vals));
        }
        Ok(RowFilter::for_pairs(&self.layout, per_key))
    }

    /// Every series matching `matchers` with points in `[start_ms, end_ms]`. Without
    /// `with_points`, series are those with a row (one hour) overlapping the range, and their
    /// points are left empty (label APIs).
    pub fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        with_points: bool,
    ) -> Result<Vec<Selected>, QueryError> {
        let label_ms: Vec<Matcher> = matchers
            .iter()
            .filter(|m| m.name != METRIC_NAME)
            .cloned()
            .collect();
        let metrics = self.candidate_metrics(matchers)?;
        let Some(row_filter) = self.required_pairs(&label_ms)? else {
            return Ok(Vec::new());
        };
        // One call per selector of a request: its allowance for the row cache.
        let shape = Self::read_shape(&metrics, start_ms, end_ms);
        let fill = self.rows.as_ref().map(|c| c.fill_for(shape));
        // Without label matchers every series is kept: its labels are then made once, below.
        let keep = |metric: &str, tags: &[(String, String)]| {
            label_ms.is_empty()
                || labels_match(
                    &from_stored(metric, tags.iter().map(|(k, v)| (&**k, &**v))),
                    &label_ms,
                )
        };
        let ids = self.ids_of(&metrics)?;
        let read = |share: (usize, usize)| {
            let read = StoredRead {
                start_ms,
                end_ms,
                stamps: if with_points {
                    Stamps::Ms
                } else {
                    Stamps::None
                },
                row_filter: &row_filter,
                fill: fill.as_ref(),
                keep: &keep,
            };
            self.select_ids(&ids, &read, share)
        };
        // Fewer metrics than cores (a selector usually names one): each metric is read as
        // disjoint shares of its series on every core, as the streamed evaluator reads them.
        // `sum(x)` over 2,000 series of millisecond data decoded them on one core.
        let cores = tsgate_common::cores();
        let parts = if ids.len() < cores && !row_filter.narrow {
            self.shares(cores.div_ceil(ids.len().max(1)))
        } else {
            1
        };
        let stored = if parts <= 1 {
            read((0, 1))?
        } else {
            let mut all = Vec::new();
            for got in tsgate_common::pool::on_workers(parts, |part| read((part, parts))) {
                all.extend(got?);
            }
            all
        };
        let mut out: Vec<Selected> = stored
            .into_iter()
            .map(|s| Selected {
                labels: from_stored(&s.metric, s.tags.iter().map(|(k, v)| (&**k, &**v))),
                points: s.points,
            })
            .collect();
        if let (Some(cache), Some(fill)) = (&self.rows, &fill) {
            cache.done(shape, fill);
        }
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok(out)
    }

    /// The shape of a read of `metrics` over `[start_ms, end_ms]` for the row cache (see
    /// [`super::row_cache::RowCache::fill_for`]): a read of the same metrics over as many hours
    /// has the same one, wherever its window is.
    pub fn read_shape(metrics: &[String], start_ms: i64, end_ms: i64) -> u64 {
        let mut shape = (end_ms.saturating_sub(start_ms) / 3_600_000)
            .to_be_bytes()
            .to_vec();
        for m in metrics {
            shape.extend_from_slice(m.as_bytes());
            shape.push(0);
        }
        super::seek::fnv1a(&shape)
    }

    /// [`QueryEngine::select`] one metric name at a time, for callers that reduce series as
    /// they go and so hold the points of one metric at most: the candidate metric names, then
    /// [`QueryEngine::select_metric_each`] for each (from any thread).
    pub fn select_plan(&self, matchers: &[Matcher]) -> Result<Option<MetricPlan>, QueryError> {
        let label_ms: Vec<Matcher> = matchers
            .iter()
            .filter(|m| m.name != METRIC_NAME)
            .cloned()
            .collect();
        let metrics = self.candidate_metrics(matchers)?;
        let Some(row_filter) = self.required_pairs(&label_ms)? else {
            return Ok(None);
        };
        Ok(Some(MetricPlan {
            metrics,
            label_ms,
            row_filter,
        }))
    }

    /// How many disjoint shares readers on `cores` cores should split one metric into (1 when
    /// the store can't seek, which a share needs).
    pub fn shares(&self, cores: usize) -> usize {
        if self.store.seeks() {
            cores.max(1)
        } else {
            1
        }
    }

    /// [`QueryEngine::shares`] for a plan: 1 when it names a few series.
    pub fn plan_shares(&self, plan: &MetricPlan, cores: usize) -> usize {
        if plan.row_filter.narrow {
            1
        } else {
            self.shares(cores)
        }
    }

    /// The matching series of one metric of `plan`, share `part` of `parts` of them (see
    /// [`QueryEngine::shares`]: the shares together hold each series exactly once), each to `f`
    /// in turn (in no order), its points borrowed: from the row cache when one kept row holds
    /// them all, so that a reducer reads them where they are. With `fill` (the request's
    /// allowance, see [`super::row_cache::RowCache::fill`]), closed hours read are kept.
    #[allow(clippy::too_many_arguments)]
    pub fn select_metric_each<E: From<QueryError>>(
        &self,
        plan: &MetricPlan,
        metric: &str,
        start_ms: i64,
        end_ms: i64,
        (part, parts): (usize, usize),
        fill: Option<&Fill>,
        f: &mut SeriesSink<'_, E>,
    ) -> Result<(), E> {
        // Without label matchers every series is kept: its labels are then made once, below.
        let keep = |metric: &str, tags: &[(String, String)]| {
            plan.label_ms.is_empty()
                || labels_match(
                    &from_stored(metric, tags.iter().map(|(k, v)| (&**k, &**v))),
                    &plan.label_ms,
                )
        };
        let Some(w) = Window::new(start_ms, end_ms) else {
            return Ok(());
        };
        for MetricId { uid, name } in self.ids_of(&[metric.to_string()])? {
            let mut c = Collector::lending(self, w.start, w.end, &keep);
            self.collect_metric(
                &uid,
                &name,
                &w,
                &plan.row_filter,
                (part, parts),
                fill,
                &mut c,
            )?;
            c.each(|s, lent| {
                f(
                    from_stored(&s.metric, s.tags.iter().map(|(k, v)| (&**k, &**v))),
                    lent.unwrap_or(&s.points),
                )
            })?;
        }
        Ok(())
    }

    /// The series of the given stored metric names (as stored: no label unescaping) that
    /// `read.keep` accepts, with their stored tags in row-key order and, unless `read.stamps` is
    /// [`Stamps::None`], their points in `[read.start_ms, read.end_ms]` (series without points
    /// are then left out), timed as `read.stamps` says. Shared by the Prometheus
    /// selection above and the graphite-web API, which names series by the stored form.
    pub fn select_stored(
        &self,
        metrics: &[String],
        read: StoredRead,
    ) -> Result<Vec<StoredSelected>, QueryError> {
        let ids = self.ids_of(metrics)?;
        self.select_ids(&ids, &read, (0, 1))
    }

    /// The metrics of `metrics` that exist, with their UIDs, in that order.
    pub(super) fn ids_of(&self, metrics: &[String]) -> Result<Vec<MetricId>, QueryError> {
        let mut ids = Vec::with_capacity(metrics.len());
        for metric in metrics {
            if let Some(uid) = self.uids.get_id(UidKind::Metric, metric)? {
                ids.push(MetricId {
                    uid: uid.into_vec(),
                    name: metric.clone(),
                });
            }
        }
        Ok(ids)
    }

    /// [`QueryEngine::select_stored`] of metrics whose UIDs are known, share `part` of `parts`
    /// of their series, metric by metric (see [`QueryEngine::collect_metric`]).
    fn select_ids(
        &self,
        metrics: &[MetricId],
        read: &StoredRead,
        share: (usize, usize),
    ) -> Result<Vec<StoredSelected>, QueryError> {
        let mut out = Vec::new();
        let Some(w) = Window::new(read.start_ms, read.end_ms) else {
            return Ok(out);
        };
        for MetricId { uid, name } in metrics {
            let mut c = Collector::new(self, w.start, w.end, read.stamps, read.keep);
            self.collect_metric(uid, name, &w, read.row_filter, share, read.fill, &mut c)?;
            c.finish(&mut out);
        }
        Ok(out)
    }

    /// One scan per salt bucket over one metric's rows in `[first, last)` hours, filtered by
    /// `row_filter`.
    pub(super) fn metric_scans(
        &self,
        uid: &[u8],
        first: u32,
        last: u32,
        row_filter: &RowFilter,
    ) -> Vec<Scan> {
        self.layout
            .salt_prefixes()
            .into_iter()
            .map(|salt| self.metric_scan(&salt, uid, first, last, row_filter))
            .collect()
    }

    /// A scan over one metric's rows under `salt` in `[first, last)` hours, filtered by
    /// `row_filter`.
    pub(super) fn metric_scan(
        &self,
        salt: &[u8],
        uid: &[u8],
        first: u32,
        last: u32,
        row_filter: &RowFilter,
    ) -> Scan {
        Scan {
            start: self.layout.metric_start(salt, uid, first),
            stop: self.layout.metric_start(salt, uid, last),
            families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
            row_regex: row_filter.regex.clone(),
            seek: row_filter.seek.clone(),
            ..Default::default()
        }
    }

    /// The metrics of `names` that exist, with their UIDs, sorted by UID (so by row key): the
    /// order [`QueryEngine::select_whole`] reads them in.
    pub fn metric_ids(&self, names: &[String]) -> Result<Vec<MetricId>, QueryError> {
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            if let Some(uid) = self.uids.get_id(UidKind::Metric, name)? {
                out.push(MetricId {
                    uid: uid.into_vec(),
                    name: name.clone(),
                });
            }
        }
        Ok(by_uid(out))
    }

    /// One scan per salt bucket over the span of `uids`' rows (two or more UIDs, sorted), its
    /// seeker hopping from each metric's rows in `[firsts[i], last)` hours to the next one's.
    fn span_scans(&self, uids: &Arc<Vec<Vec<u8>>>, firsts: &Arc<Vec<u32>>, last: u32) -> Vec<Scan> {
        let layout = self.layout;
        layout
            .salt_prefixes()
            .into_iter()
            .map(|salt| {
                let (uids, firsts) = (uids.clone(), firsts.clone());
                let key = move |metric: &[u8], base: u32| layout.metric_start(&salt, metric, base);
                let start = key(&uids[0], firsts[0]);
                let stop = key(uids.last().expect("two or more"), last);
                let seek = move |row: &[u8]| {
                    let Ok(rk) = layout.parse(row) else {
                        return RowSeek::Skip;
                    };
                    let next = match position(&uids, rk.metric) {
                        Ok(i) if rk.base < firsts[i] => {
                            return RowSeek::SeekTo(key(&uids[i], firsts[i]))
                        }
                        Ok(i) if rk.base >= last => i + 1,
                        Ok(_) => return RowSeek::Take,
                        Err(i) => i,
                    };
                    match uids.get(next) {
                        Some(m) => RowSeek::SeekTo(key(m, firsts[next])),
                        None => RowSeek::Done,
                    }
                };
                Scan {
                    start,
                    stop,
                    families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                    seek: Some(RowSeeker(Arc::new(seek))),
                    ..Default::default()
                }
            })
            .collect()
    }

    /// How many hours' rows a read of `[start_ms, end_ms]` touches per series.
    pub fn row_hours(start_ms: i64, end_ms: i64) -> u64 {
        Window::new(start_ms, end_ms).map_or(0, |w| (w.last as u64 - w.first as u64) / ROW_SPAN)
    }

    /// The points in `[start_ms, end_ms]`, timed in seconds, of Graphite paths stored whole:
    /// each metric of `uids` (sorted) holds its path's one series, tagged
    /// [`PLACEHOLDER_TAGK`]=[`PLACEHOLDER_TAGV`]. One list per metric, in `uids`' order
    /// (empty where there are none).
    ///
    /// One scan per salt bucket over the span of their keys: a seeker hops from each metric's
    /// first row past the window to the next wanted metric, wherever it is
    /// (`*.*.cpu.usage_user` is every tenth metric of the bench set, and a scan of its own for
    /// each took 10–15 % more of `/render`'s time than one seek each in a shared scan). A store
    /// that cannot seek reads metric by metric. A row's key alone says whose it is: the
    /// general path's work per series ([`QueryEngine::select_stored`]: its tags looked up by
    /// name, a map of the series seen, the caller's test of those names) was a fifth of
    /// `/render`'s CPU over a thousand paths.
    ///
    /// With `fill` (a request's allowance, see [`super::row_cache::RowCache::fill`]) and a row cache, each path's
    /// rows of closed hours are looked up first; a path is read from its first row not cached
    /// on, and the closed hours' rows read are kept, while the allowance lasts.
    pub fn select_whole(
        &self,
        uids: Vec<Vec<u8>>,
        start_ms: i64,
        end_ms: i64,
        fill: Option<&Fill>,
    ) -> Result<Vec<Vec<(i64, f64)>>, QueryError> {
        let mut out = vec![Vec::new(); uids.len()];
        let Some(w) = Window::new(start_ms, end_ms) else {
            return Ok(out);
        };
        let (Some(k), Some(v)) = (
            self.uids.get_id(UidKind::Tagk, PLACEHOLDER_TAGK)?,
            self.uids.get_id(UidKind::Tagv, PLACEHOLDER_TAGV)?,
        ) else {
            return Ok(out);
        };
        let tags = [&k[..], &v[..]].concat();
        let (Some(cache), Some(fill)) = (self.rows.as_deref(), fill) else {
            let firsts = vec![w.first; uids.len()];
            return Ok(self.read_whole(uids, firsts, &tags, &w, None)?.series);
        };
        // Hours before the open one (whose row changes at every flush) are kept.
        let open = base_time(tsgate_common::clock::now_ms() / 1000) as u64;
        let hours = |from: u64| (from..(w.last as u64).min(open)).step_by(ROW_SPAN as usize);
        // Per path: the cached rows before its first one to read.
        let mut cached: Vec<Vec<RowPoints>> = vec![Vec::new(); uids.len()];
        // The paths to read, where each is in `out`, the hour to read it from, and whether its
        // closed hours' rows are kept.
        let (mut read, mut at, mut firsts, mut keeps) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // The closed hours' rows to read, each with its ticket (taken before the read).
        let mut tickets: Vec<(Vec<u8>, u64)> = Vec::new();
        for (i, uid) in uids.into_iter().enumerate() {
            let tsuid = [&uid[..], &tags[..]].concat();
            let key = |base: u64| self.layout.row_key(&tsuid, base as u32);
            let mut from = w.first as u64;
            for base in hours(from) {
                let Some(points) = cache.get(&key(base)) else {
                    break;
                };
                cached[i].push(points);
                from = base + ROW_SPAN;
            }
            if from >= w.last as u64 {
                continue;
            }
            // Kept while the allowance lasts, for windows of at most KEPT_HOURS_MAX, and once
            // the hours have gone quiet (see `row_cache::QUIET`).
            let closed = (w.last as u64)
                .min(open)
                .saturating_sub(from)
                .div_ceil(ROW_SPAN);
            let keep = closed <= KEPT_HOURS_MAX
                && fill.covers(tickets.len() as u64 + closed)
                && hours(from).all(|b| cache.quiet_hour(b as u32));
            if keep {
                tickets.extend(hours(from).map(|base| {
                    let k = key(base);
                    let t = cache.ticket(&k);
                    (k, t)
                }));
            }
            read.push(uid);
            at.push(i);
            firsts.push(from as u32);
            keeps.push(keep);
        }
        let got = if read.is_empty() {
            None
        } else {
            Some(self.read_whole(read, firsts, &tags, &w, Some((fill, open, keeps)))?)
        };
        for (i, rows) in cached.iter().enumerate() {
            out[i] = in_window(rows, w.start, w.end);
        }
        let Some(got) = got else { return Ok(out) };
        for (i, points) in at.into_iter().zip(got.series) {
            if out[i].is_empty() {
                out[i] = points;
            } else {
                out[i].extend(points);
                if !out[i].is_sorted_by_key(|p| p.0) {
                    out[i].sort_by_key(|p| p.0);
                }
            }
        }
        let (mut rows, odd) = (got.rows, got.odd);
        for (key, ticket) in tickets {
            if !odd.is_empty()
                && self
                    .layout
                    .parse(&key)
                    .is_ok_and(|rk| odd.contains(rk.metric))
            {
                continue;
            }
            let (points, weight): (RowPoints, u64) = match rows.remove(&key) {
                Some(points) => {
                    let weight = row_weight(key.len(), points.len());
                    (points, weight)
                }
                // No such row: kept as empty, unless the read stopped keeping rows (it may then
                // have passed over this one).
                None if !got.full && fill.take(row_weight(key.len(), 0)) => {
                    (Arc::from(Vec::new()), row_weight(key.len(), 0))
                }
                None => continue,
            };
            // What a refused put took from the allowance goes back.
            if !cache.put(key, ticket, points) {
                fill.give(weight);
            }
        }
        Ok(out)
    }

    /// [`QueryEngine::select_whole`]'s read from the store, each path of `uids` from hour
    /// `firsts[i]`; with `keep` (allowance, open hour's base in s, per path), also each row of a
    /// kept path's hour before the open one whole (points in ms), while the allowance covers it.
    fn read_whole(
        &self,
        uids: Vec<Vec<u8>>,
        firsts: Vec<u32>,
        tags: &[u8],
        w: &Window,
        keep: Option<(&Fill, u64, Vec<bool>)>,
    ) -> Result<WholeRead, QueryError> {
        let Window {
            start, end, last, ..
        } = *w;
        let mut out = vec![Vec::new(); uids.len()];
        let mut rows: HashMap<Vec<u8>, RowPoints> = HashMap::new();
        let mut odd: HashSet<Vec<u8>> = HashSet::new();
        let mut full = false;
        let (uids, firsts) = (Arc::new(uids), Arc::new(firsts));
        let scans = if self.store.seeks() && uids.len() > 1 {
            self.span_scans(&uids, &firsts, last)
        } else {
            uids.iter()
                .zip(firsts.iter())
                .flat_map(|(uid, &first)| {
                    self.metric_scans(uid, first, last, &RowFilter::default())
                })
                .collect()
        };
        let mut failed = None;
        let mut unsorted = vec![false; uids.len()];
        let mut row_body = |key: &[u8], row: LentRow| -> Result<(), QueryError> {
            let Ok(rk) = self.layout.parse(key) else {
                return Ok(());
            };
            let Ok(i) = position(&uids, rk.metric) else {
                return Ok(());
            };
            if rk.tags != tags {
                return Ok(());
            }
            // A row under a salt other than its series' (data salted otherwise) would not be
            // found under the key computed for it: its path is not kept.
            if keep.is_some()
                && self.layout.salt_width > 0
                && rk.salt != self.layout.salt(&[rk.metric, rk.tags].concat()).as_slice()
            {
                odd.insert(rk.metric.to_vec());
            }
            let kept = keep.as_ref().and_then(|(fill, open, keeps)| {
                (!full && keeps[i] && (rk.base as u64) < *open).then_some(*fill)
            });
            // The whole row, to keep (a row that does not decode whole is read for the window
            // alone, as without the cache, and not kept).
            let all = kept.and_then(|_| {
                let mut all = Vec::new();
                append_row(key, row, rk.base, 0, u64::MAX, &mut all, |ts| ts as i64)
                    .ok()
                    .map(|_| all)
            });
            if kept.is_some() && all.is_none() {
                // Not kept, so its hour must not be kept as absent either: the path is left out.
                odd.insert(rk.metric.to_vec());
            }
            let (Some(fill), Some(all)) = (kept, all) else {
                unsorted[i] |= append_row(key, row, rk.base, start, end, &mut out[i], |ts| {
                    (ts / 1000) as i64
                })?;
                return Ok(());
            };
            let pts = &mut out[i];
            let mark = pts.len();
            pts.extend(seconds_in(&all, start, end));
            unsorted[i] |= mark > 0 && pts.get(mark).is_some_and(|p| p.0 < pts[mark - 1].0);
            if fill.take(row_weight(key.len(), all.len())) {
                rows.insert(key.to_vec(), Arc::from(all));
            } else {
                full = true;
            }
            Ok(())
        };
        for scan in &scans {
            self.store.scan_points(
                &self.table,
                scan,
                &mut stop_on_error_lent(&mut row_body, &mut failed),
            )?;
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        for (pts, unsorted) in out.iter_mut().zip(unsorted) {
            if unsorted {
                pts.sort_by_key(|p| p.0);
            }
        }
        Ok(WholeRead {
            series: out,
            rows,
            odd,
            full,
        })
    }

    /// The rows of `scans` (of metric `name`) onto `c`.
    pub(super) fn scan_into(
        &self,
        scans: &[Scan],
        name: &str,
        c: &mut Collector,
    ) -> Result<(), QueryError> {
        // What went wrong inside the visitor, which can only stop the scan.
        let mut failed: Option<QueryError> = None;
        if c.stamps() == Stamps::None {
            // Which series have rows, not their points: the keys alone.
            for scan in scans {
                let mut key_body = |key: &[u8]| -> Result<(), QueryError> {
                    let Ok(rk) = self.layout.parse(key) else {
                        return Ok(());
                    };
                    c.series_of(name, &rk)
                };
                self.store.scan_keys(&self.table, scan, &mut |key| {
                    Ok(go_on(key_body(key), &mut failed))
                })?;
                if let Some(e) = failed.take() {
                    return Err(e);
                }
            }
            return Ok(());
        }
        for scan in scans {
            let mut row_body = |key: &[u8], row: LentRow| -> Result<(), QueryError> {
                let Ok(rk) = self.layout.parse(key) else {
                    return Ok(());
                };
                c.cells(name, key, &rk, row)
            };
            self.store.scan_points(
                &self.table,
                scan,
                &mut stop_on_error_lent(&mut row_body, &mut failed),
            )?;
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// The longest window (in closed hours) whose rows a path keeps in the row cache: a path read
/// over days would take a ticket per hour for rows the cache could not hold anyway.
pub(super) const KEPT_HOURS_MAX: u64 = 48;

/// What [`QueryEngine::read_whole`] read: each path's points in the window (seconds), and
/// for the cache each row's points whole (ms).
struct WholeRead {
    series: Vec<Vec<(i64, f64)>>,
    rows: HashMap<Vec<u8>, RowPoints>,
    /// Metrics of paths not to be kept: a row under a salt other than their series', or one
    /// that does not decode whole.
    odd: HashSet<Vec<u8>>,
    /// The allowance ran out: rows read after were not kept.
    full: bool,
}

/// A whole row's points (ms) in `[start, end]` ms, timed in seconds as `append_row` times them.
fn seconds_in(
    points: &[(i64, f64)],
    start: u64,
    end: u64,
) -> impl Iterator<Item = (i64, f64)> + '_ {
    points
        .iter()
        .filter(move |p| p.0 as u64 >= start && p.0 as u64 <= end)
        .map(|&(ms, v)| (ms / 1000, v))
}

/// Cached rows of one path (in hour order) as its points in `[start, end]` ms, in seconds.
fn in_window(rows: &[RowPoints], start: u64, end: u64) -> Vec<(i64, f64)> {
    let mut pts: Vec<(i64, f64)> = Vec::with_capacity(rows.iter().map(|r| r.len()).sum());
    for r in rows {
        pts.extend(seconds_in(r, start, end));
    }
    // A row holding offsets past its hour (which OpenTSDB's decoders accept) breaks the order.
    if !pts.is_sorted_by_key(|p| p.0) {
        pts.sort_by_key(|p| p.0);
    }
    pts
}

/// Where `metric` is in `uids` (sorted).
fn position(uids: &[Vec<u8>], metric: &[u8]) -> Result<usize, usize> {
    uids.binary_search_by(|u| u.as_slice().cmp(metric))
}

/// Whether a store visitor goes on after `step`: a failure goes to `failed` (a visitor can only
/// stop the scan) for the caller to return once the scan is over.
pub(crate) fn go_on(step: Result<(), QueryError>, failed: &mut Option<QueryError>) -> bool {
    match step {
        Ok(()) => true,
        Err(e) => {
            *failed = Some(e);
            false
        }
    }
}

/// A store visitor running `body` on each row until it fails (see [`go_on`]).
pub(crate) fn stop_on_error<'a>(
    body: &'a mut impl FnMut(&[u8], &[CellRef]) -> Result<(), QueryError>,
    failed: &'a mut Option<QueryError>,
) -> impl FnMut(&[u8], &[CellRef]) -> StoreResult<bool> + 'a {
    move |key, cells| Ok(go_on(body(key, cells), failed))
}

/// [`stop_on_error`] for a points scan ([`tsgate_store::Store::scan_points`]).
pub(crate) fn stop_on_error_lent<'a>(
    body: &'a mut impl FnMut(&[u8], LentRow) -> Result<(), QueryError>,
    failed: &'a mut Option<QueryError>,
) -> impl FnMut(&[u8], LentRow) -> StoreResult<bool> + 'a {
    move |key, row| Ok(go_on(body(key, row), failed))
}

/// A read's time window: points in `[start, end]` ms, rows from hour `first` to before `last`.
#[derive(Clone, Copy)]
pub(super) struct Window {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) first: u32,
    pub(super) last: u32,
}

impl Window {
    /// None for an empty window.
    pub(super) fn new(start_ms: i64, end_ms: i64) -> Option<Window> {
        if end_ms < 0 || end_ms < start_ms {
            return None;
        }
        let start = start_ms.max(0) as u64;
        // Row base times are 32-bit seconds: clamp "forever" to the last representable hour.
        let end = (end_ms as u64).min(u32::MAX as u64 * 1000);
        let first = base_time(start / 1000);
        let last = (base_time(end / 1000) as u64 + ROW_SPAN).min(u32::MAX as u64) as u32;
        Some(Window {
            start,
            end,
            first,
            last,
        })
    }
}

/// A metric's name and UID (see [`QueryEngine::metric_ids`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricId {
    pub uid: Vec<u8>,
    pub name: String,
}

/// `ids` sorted by UID, as [`QueryEngine::select_whole`] reads them. Two names for one
/// UID only come from a damaged UID table: the first is read.
pub fn by_uid(mut ids: Vec<MetricId>) -> Vec<MetricId> {
    ids.sort_by(|a, b| a.uid.cmp(&b.uid));
    ids.dedup_by(|a, b| a.uid == b.uid);
    ids
}

/// What [`QueryEngine::select_plan`] found: the metric names to read, and how to filter them.
pub struct MetricPlan {
    pub metrics: Vec<String>,
    pub(crate) label_ms: Vec<Matcher>,
    pub(crate) row_filter: RowFilter,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tsgate_schema::column::DataValue;

    /// An engine over a fresh embedded store (salted: one byte, four buckets) holding metrics
    /// m00…m19 (UIDs in that order), each with a series stored as a Graphite path is (the
    /// placeholder tag), and every third one a second series (tag `t=v`, negated values), one
    /// point every 2 minutes over four hours: two of them compacted rows, the others single
    /// columns (each row read in one of the two ways).
    /// With a row cache of `cache_bytes` (none for 0).
    fn engine_with_cache(dir: &std::path::Path, salted: bool, cache_bytes: u64) -> QueryEngine {
        use tsgate_schema::column::{build_column, DataValue, RawPoint};
        use tsgate_store::RowMutations;
        let q = empty_engine(dir, salted, cache_bytes);
        let (uids, layout) = (&q.uids, q.layout);
        let tag = |k: &str, v: &str| {
            [
                uids.assign(UidKind::Tagk, k).unwrap().into_vec(),
                uids.assign(UidKind::Tagv, v).unwrap().into_vec(),
            ]
            .concat()
        };
        let (whole, other) = (tag(PLACEHOLDER_TAGK, PLACEHOLDER_TAGV), tag("t", "v"));
        let mut rows = Vec::new();
        for m in 0..20 {
            let metric = uids
                .assign(UidKind::Metric, &format!("m{m:02}"))
                .unwrap()
                .into_vec();
            let series = if m % 3 == 0 {
                vec![(&whole, 1), (&other, -1)]
            } else {
                vec![(&whole, 1)]
            };
            for (hour, (tags, sign)) in (0..4u32).flat_map(|h| series.iter().map(move |s| (h, *s)))
            {
                let tsuid = [&metric[..], &tags[..]].concat();
                let base = 3600 * (1000 + hour);
                // 30 points: a compacted column's qualifier (60 bytes) is long enough to be cut
                // in the embedded store's keys.
                let pts: Vec<RawPoint> = (0..30u64)
                    .map(|i| {
                        RawPoint::encode(
                            base as u64 + i * 120,
                            base,
                            DataValue::Int(sign * (m * 10_000 + hour as i64 * 100 + i as i64)),
                        )
                        .unwrap()
                    })
                    .collect();
                if hour % 2 == 0 {
                    let (q, val) = build_column(&pts);
                    rows.push(RowMutations::put(
                        layout.row_key(&tsuid, base),
                        tsgate_schema::DATA_FAMILY,
                        q,
                        val,
                    ));
                } else {
                    for p in &pts {
                        rows.push(RowMutations::put(
                            layout.row_key(&tsuid, base),
                            tsgate_schema::DATA_FAMILY,
                            p.qualifier().to_vec(),
                            p.value_bytes().to_vec(),
                        ));
                    }
                }
            }
        }
        q.store.mutate("tsdb", rows).unwrap();
        q
    }

    /// An engine over a fresh embedded store, salted (one byte, four buckets) or not, with a
    /// row cache of `cache_bytes` (none for 0) that keeps rows as soon as they are read.
    pub(crate) fn empty_engine(
        dir: &std::path::Path,
        salted: bool,
        cache_bytes: u64,
    ) -> QueryEngine {
        use tsgate_store::{embedded::EmbeddedStore, TableNames};
        let mut layout = tsgate_schema::rowkey::KeyLayout::default();
        if salted {
            (layout.salt_width, layout.salt_buckets) = (1, 4);
        }
        // Rows are read right after they are written here: kept without waiting for quiet.
        let cache =
            super::super::row_cache::RowCache::new(cache_bytes, "tsdb", layout.head_width()).map(
                |mut c| {
                    c.quiet_for = std::time::Duration::ZERO;
                    Arc::new(c)
                },
            );
        let store: tsgate_store::SharedStore =
            Arc::new(EmbeddedStore::open(dir, &TableNames::default().specs()).unwrap());
        let store = match &cache {
            Some(c) => tsgate_store::watch::watched(store, c.clone()),
            None => store,
        };
        let uids = Arc::new(tsgate_core::uid::UidCore::new(
            store.clone(),
            "tsdb-uid".into(),
            [3, 3, 3],
            [true; 3],
        ));
        QueryEngine {
            store,
            uids,
            layout,
            table: "tsdb".into(),
            allow_delete: false,
            limits: Default::default(),
            rows: cache,
            rollups: None,
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Whole paths read over a span of metrics give what reading them one by one through
        /// the general path gives (the placeholder series only, in seconds), for any subset
        /// (runs and gaps alike, metrics that do not exist among them), any window (cutting
        /// rows or not), salted or not.
        #[test]
        fn whole_paths_read_what_metric_by_metric_reads(
            wanted in proptest::collection::btree_set(0u32..22, 0..22),
            from in 0i64..(4 * 3600 + 600),
            len in 1i64..(4 * 3600),
            salted: bool,
            cache in proptest::prop_oneof![proptest::strategy::Just(0u64), 1_000u64..200_000, proptest::strategy::Just(1u64 << 20)],
            warm in proptest::prelude::any::<u32>(),
            warm_len in 1i64..(4 * 3600),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let q = engine_with_cache(dir.path(), salted, cache);
            let names: Vec<String> = wanted.iter().map(|m| format!("m{m:02}")).collect();
            let start = (3600 * 1000 + from) * 1000;
            let end = start + len * 1000;
            let ids = q.metric_ids(&names).unwrap();
            proptest::prop_assert!(ids.windows(2).all(|w| w[0].uid < w[1].uid));
            // Each run a request of its own, with its own allowance.
            let read = |ids: &[MetricId], run: usize, start: i64, end: i64| -> Vec<Vec<(i64, f64)>> {
                let mut got = Vec::new();
                for r in ids.chunks(run) {
                    let fill = q.rows.as_ref().map(|c| c.fill());
                    got.extend(q.select_whole(r.iter().map(|id| id.uid.clone()).collect(), start, end, fill.as_ref()).unwrap());
                }
                got
            };
            // With a cache: some paths read first over another window (caching some of their
            // hours), so that the reads below mix paths cached whole, in part and not at all;
            // then all of them again, from the cache.
            let some: Vec<MetricId> = ids.iter().enumerate().filter(|(i, _)| warm >> (i % 32) & 1 == 1).map(|(_, id)| id.clone()).collect();
            read(&some, 4, start, start + warm_len * 1000);
            let got = read(&ids, 5, start, end);
            let again = read(&ids, 3, start, end);
            proptest::prop_assert_eq!(&again, &got);
            let placeholder = [(PLACEHOLDER_TAGK.to_string(), PLACEHOLDER_TAGV.to_string())];
            let keep = |_: &str, tags: &[(String, String)]| tags == placeholder;
            let stored = q.select_stored(&names, StoredRead { start_ms: start, end_ms: end, stamps: Stamps::Seconds, row_filter: &RowFilter::default(), fill: None, keep: &keep }).unwrap();
            let want: Vec<Vec<(i64, f64)>> = ids.iter().map(|id| stored.iter().find(|s| s.metric == id.name).map(|s| s.points.clone()).unwrap_or_default()).collect();
            // Every point is the one written at its time (the other series' are negative).
            for (id, points) in ids.iter().zip(&want) {
                let m: i64 = id.name[1..].parse().unwrap();
                for &(t, v) in points {
                    let (hour, i) = ((t - 3600 * 1000) / 3600, (t % 3600) / 120);
                    proptest::prop_assert_eq!(v, (m * 10_000 + hour * 100 + i) as f64);
                }
            }
            // An hour's window inside the data holds points of every metric.
            if len >= 3600 && from + len <= 4 * 3600 {
                proptest::prop_assert!(want.iter().all(|p| p.len() >= 29));
            }
            proptest::prop_assert_eq!(got, want);
        }
    }

    /// Writes after a cached read are seen by the next read: a point added to a cached row,
    /// and a row made in an hour cached as empty.
    #[test]
    fn whole_paths_read_from_the_cache_see_later_writes() {
        use tsgate_schema::column::{DataValue, RawPoint};
        use tsgate_store::RowMutations;
        let dir = tempfile::tempdir().unwrap();
        let q = engine_with_cache(dir.path(), false, 1 << 20);
        let ids = q
            .metric_ids(&["m01".to_string(), "m02".to_string()])
            .unwrap();
        let uids: Vec<Vec<u8>> = ids.iter().map(|id| id.uid.clone()).collect();
        let hour = |h: u32| 3600 * (1000 + h);
        // Hours 3 and 4: a row of single columns, then no row at all.
        let (start, end) = (hour(3) as i64 * 1000, (hour(5) as i64 - 1) * 1000);
        let select = |uids: Vec<Vec<u8>>| {
            q.select_whole(uids, start, end, Some(&q.rows.as_ref().unwrap().fill()))
                .unwrap()
        };
        let first = select(uids.clone());
        assert_eq!(first.iter().map(Vec::len).collect::<Vec<_>>(), [30, 30]);
        let tsuid = |uid: &[u8]| {
            let k = q
                .uids
                .get_id(UidKind::Tagk, PLACEHOLDER_TAGK)
                .unwrap()
                .unwrap();
            let v = q
                .uids
                .get_id(UidKind::Tagv, PLACEHOLDER_TAGV)
                .unwrap()
                .unwrap();
            [uid, &k[..], &v[..]].concat()
        };
        let cached = |uid: &[u8], base: u32| {
            q.rows
                .as_ref()
                .unwrap()
                .get(&q.layout.row_key(&tsuid(uid), base))
        };
        assert_eq!(cached(&uids[0], hour(3)).map(|r| r.len()), Some(30));
        assert_eq!(
            cached(&uids[1], hour(4)).map(|r| r.len()),
            Some(0),
            "an hour without a row is kept empty"
        );
        assert_eq!(select(uids.clone()), first, "the same again from the cache");
        let put = |uid: &[u8], base: u32, at: u64, value: i64| {
            let p = RawPoint::encode(base as u64 + at, base, DataValue::Int(value)).unwrap();
            let key = q.layout.row_key(&tsuid(uid), base);
            q.store
                .mutate(
                    "tsdb",
                    vec![RowMutations::put(
                        key,
                        tsgate_schema::DATA_FAMILY,
                        p.qualifier().to_vec(),
                        p.value_bytes().to_vec(),
                    )],
                )
                .unwrap();
        };
        put(&uids[0], hour(3), 61, -7);
        put(&uids[1], hour(4), 5, -8);
        let after = select(uids.clone());
        assert_eq!(after[0].len(), 31);
        assert!(after[0].contains(&(hour(3) as i64 + 61, -7.0)));
        assert_eq!(after[1].len(), 31);
        assert_eq!(after[1].last(), Some(&(hour(4) as i64 + 5, -8.0)));
        // The open hour's row is read but not kept: it changes at every flush.
        let now = base_time(tsgate_common::clock::now_ms() / 1000);
        put(&uids[0], now, 1, 42);
        let (start, end) = (now as i64 * 1000, (now as i64 + 3599) * 1000);
        let got = q
            .select_whole(
                uids[..1].to_vec(),
                start,
                end,
                Some(&q.rows.as_ref().unwrap().fill()),
            )
            .unwrap();
        assert_eq!(got, [vec![(now as i64 + 1, 42.0)]]);
        // (unless the hour closed meanwhile)
        if base_time(tsgate_common::clock::now_ms() / 1000) == now {
            assert!(cached(&uids[0], now).is_none());
        }
    }

    /// A request whose rows outweigh its allowance keeps those read before it ran out; the
    /// next read takes those from the cache and reads the rest, and both answer as the store.
    #[test]
    fn a_read_past_its_allowance_keeps_a_prefix_and_answers_the_same() {
        use tsgate_schema::column::{build_column, DataValue, RawPoint};
        use tsgate_store::RowMutations;
        let dir = tempfile::tempdir().unwrap();
        // A request may fill half of the cache: 80 KB.
        let q = engine_with_cache(dir.path(), false, 160_000);
        let uid = q.uids.assign(UidKind::Metric, "big").unwrap().into_vec();
        let k = q
            .uids
            .get_id(UidKind::Tagk, PLACEHOLDER_TAGK)
            .unwrap()
            .unwrap();
        let v = q
            .uids
            .get_id(UidKind::Tagv, PLACEHOLDER_TAGV)
            .unwrap()
            .unwrap();
        let tsuid = [&uid[..], &k[..], &v[..]].concat();
        // Four hours of a point a second: each row weighs about 58 KB, so a read keeps one.
        let hour = |h: u32| 3600 * (1000 + h);
        let rows = (0..4)
            .map(|h| {
                let pts: Vec<RawPoint> = (0..3600u64)
                    .map(|i| {
                        RawPoint::encode(
                            hour(h) as u64 + i,
                            hour(h),
                            DataValue::Int(i as i64 + h as i64),
                        )
                        .unwrap()
                    })
                    .collect();
                let (qual, val) = build_column(&pts);
                RowMutations::put(
                    q.layout.row_key(&tsuid, hour(h)),
                    tsgate_schema::DATA_FAMILY,
                    qual,
                    val,
                )
            })
            .collect();
        q.store.mutate("tsdb", rows).unwrap();
        let (start, end) = (
            hour(0) as i64 * 1000 + 500_000,
            hour(3) as i64 * 1000 + 100_000,
        );
        let select = || {
            q.select_whole(
                vec![uid.clone()],
                start,
                end,
                Some(&q.rows.as_ref().unwrap().fill()),
            )
            .unwrap()
        };
        let first = select();
        let cached = |h: u32| {
            q.rows
                .as_ref()
                .unwrap()
                .get(&q.layout.row_key(&tsuid, hour(h)))
                .map(|r| r.len())
        };
        assert_eq!((cached(0), cached(1), cached(2)), (Some(3600), None, None));
        // The next reads from the second hour on, and keeps that one.
        let second = select();
        assert_eq!(
            (cached(0), cached(1), cached(2)),
            (Some(3600), Some(3600), None)
        );
        let keep = |_: &str, _: &[(String, String)]| true;
        let stored = q
            .select_stored(
                &["big".to_string()],
                StoredRead {
                    start_ms: start,
                    end_ms: end,
                    stamps: Stamps::Seconds,
                    row_filter: &RowFilter::default(),
                    fill: None,
                    keep: &keep,
                },
            )
            .unwrap();
        assert_eq!(first[0], stored[0].points);
        assert_eq!(second, first);
        assert_eq!(first[0].len(), 3 * 3600 - 500 + 101);
    }

    /// An engine over a fresh embedded store (salted or not) holding tagged metrics: `cpu`
    /// with twelve hosts (tags `host`, `dc` of three values, and `rack` on every fourth) and
    /// `mem` with four, one point every 2 minutes over hours 1000…1003 since the epoch, some
    /// hours missing for some hosts, rows compacted or single columns in turn; with a row cache
    /// of `cache_bytes`.
    fn tagged_engine(dir: &std::path::Path, salted: bool, cache_bytes: u64) -> QueryEngine {
        use tsgate_schema::column::{build_column, RawPoint};
        use tsgate_store::RowMutations;
        let q = empty_engine(dir, salted, cache_bytes);
        let mut rows = Vec::new();
        for (metric, hosts) in [("cpu", 12i64), ("mem", 4)] {
            for hour in 0..4i64 {
                for host in (0..hosts).filter(|h| (h + hour) % 5 != 0) {
                    let base = (3600 * (1000 + hour)) as u32;
                    let key = q.layout.row_key(&tagged_tsuid(&q, metric, host), base);
                    let pts: Vec<RawPoint> = (0..30i64)
                        .map(|i| {
                            RawPoint::encode(
                                base as u64 + i as u64 * 120,
                                base,
                                DataValue::Int(host * 1000 + hour * 100 + i),
                            )
                            .unwrap()
                        })
                        .collect();
                    if (host + hour) % 2 == 0 {
                        let (qual, val) = build_column(&pts);
                        rows.push(RowMutations::put(
                            key,
                            tsgate_schema::DATA_FAMILY,
                            qual,
                            val,
                        ));
                    } else {
                        rows.extend(pts.iter().map(|p| {
                            RowMutations::put(
                                key.clone(),
                                tsgate_schema::DATA_FAMILY,
                                p.qualifier().to_vec(),
                                p.value_bytes().to_vec(),
                            )
                        }));
                    }
                }
            }
        }
        q.store.mutate("tsdb", rows).unwrap();
        q
    }

    /// The TSUID of `metric`'s series on host `host` (UIDs assigned as needed).
    fn tagged_tsuid(q: &QueryEngine, metric: &str, host: i64) -> Vec<u8> {
        let id = |kind, name: &str| q.uids.get_or_create(kind, name).unwrap().into_vec();
        let mut pairs = vec![
            [
                id(UidKind::Tagk, "host"),
                id(UidKind::Tagv, &format!("h{host}")),
            ]
            .concat(),
            [
                id(UidKind::Tagk, "dc"),
                id(UidKind::Tagv, &format!("d{}", host % 3)),
            ]
            .concat(),
        ];
        if host % 4 == 0 {
            pairs.push([id(UidKind::Tagk, "rack"), id(UidKind::Tagv, "r1")].concat());
        }
        pairs.sort();
        [vec![id(UidKind::Metric, metric)], pairs].concat().concat()
    }

    /// `q`'s selection of `metrics`, share by share, merged and sorted by series.
    fn select_shares(
        q: &QueryEngine,
        metrics: &[&str],
        start: i64,
        end: i64,
        stamps: Stamps,
        filter: &RowFilter,
        parts: usize,
    ) -> Vec<StoredSelected> {
        let names: Vec<String> = metrics.iter().map(|m| m.to_string()).collect();
        let ids = q.ids_of(&names).unwrap();
        let fill = q.rows.as_ref().map(|c| c.fill());
        let keep = |_: &str, _: &[(String, String)]| true;
        let mut all: Vec<StoredSelected> = (0..parts)
            .flat_map(|part| {
                let read = StoredRead {
                    start_ms: start,
                    end_ms: end,
                    stamps,
                    row_filter: filter,
                    fill: fill.as_ref(),
                    keep: &keep,
                };
                q.select_ids(&ids, &read, (part, parts)).unwrap()
            })
            .collect();
        all.sort_by(|a, b| (&a.metric, &a.tags).cmp(&(&b.metric, &b.tags)));
        all
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// Tagged series read through the row cache's hour entries answer as the store does
        /// without a cache: for any window, salting, cache size (hours kept whole, in part or
        /// not at all), share count, filter (none; a tag required, filtered in memory; a value
        /// required, read past the cache) and unit (or series alone, through entries of their
        /// tags); with hours cached before by another window, of points or of series alone;
        /// and after writes to cached hours (a point in a cached row, a series new to an hour).
        /// Label values gathered from the same entries answer as the series' labels do.
        #[test]
        fn tagged_reads_through_hour_entries_answer_as_the_store(
            from in 0i64..(4 * 3600 + 600),
            len in 1i64..(4 * 3600),
            salted: bool,
            cache in proptest::prop_oneof![proptest::strategy::Just(0u64), 1_000u64..400_000, proptest::strategy::Just(4u64 << 20)],
            parts in 1usize..4,
            filter_kind in 0u8..3,
            unit in 0u8..3,
            warm_unit in 0u8..3,
            warm_from in 0i64..(4 * 3600),
            warm_len in 1i64..(4 * 3600),
            write_hour in 0i64..4,
            write_host in 0i64..14,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let q = tagged_engine(dir.path(), salted, cache);
            let plain = QueryEngine { store: q.store.clone(), uids: q.uids.clone(), layout: q.layout, table: q.table.clone(), allow_delete: false, limits: Default::default(), rows: None, rollups: None };
            let id = |kind, name: &str| q.uids.get_id(kind, name).unwrap().unwrap().into_vec();
            let filter = match filter_kind {
                0 => RowFilter::default(),
                1 => RowFilter::for_pairs(&q.layout, [(id(UidKind::Tagk, "rack"), None)].into_iter().collect()),
                _ => RowFilter::for_pairs(&q.layout, [(id(UidKind::Tagk, "dc"), Some(vec![id(UidKind::Tagv, "d1")]))].into_iter().collect()),
            };
            let stamps_of = |u: u8| [Stamps::Seconds, Stamps::Ms, Stamps::None][u as usize];
            let stamps = stamps_of(unit);
            let ms = |s: i64| (3600 * 1000 + s) * 1000;
            let (start, end) = (ms(from), ms(from) + len * 1000);
            let metrics = ["cpu", "mem"];
            select_shares(&q, &metrics, ms(warm_from), ms(warm_from) + warm_len * 1000, stamps_of(warm_unit), &RowFilter::default(), parts);
            let want = select_shares(&plain, &metrics, start, end, stamps, &filter, 1);
            proptest::prop_assert_eq!(&select_shares(&q, &metrics, start, end, stamps, &filter, parts), &want);
            proptest::prop_assert_eq!(&select_shares(&q, &metrics, start, end, stamps, &filter, parts), &want, "again, from what the first kept");
            let label_values = |q: &QueryEngine, label: &str| q.label_values(label, start, end).unwrap();
            let labelled = |label: &str| {
                let all = select_shares(&plain, &metrics, start, end, Stamps::None, &RowFilter::default(), 1);
                let vals: std::collections::BTreeSet<String> = all.iter().flat_map(|s| s.tags.iter().filter(|(k, _)| k == label).map(|(_, v)| v.clone())).collect();
                vals.into_iter().collect::<Vec<_>>()
            };
            for label in ["host", "dc", "rack", "none"] {
                proptest::prop_assert_eq!(label_values(&q, label), labelled(label), "values of {}", label);
            }
            if stamps == Stamps::Ms {
                // Lent from the cache where one kept row holds a series' points.
                let plan = MetricPlan { metrics: metrics.iter().map(|m| m.to_string()).collect(), label_ms: Vec::new(), row_filter: filter.clone() };
                let mut lent: Vec<Selected> = Vec::new();
                for m in metrics {
                    for part in 0..parts {
                        q.select_metric_each(&plan, m, start, end, (part, parts), None, &mut |labels, points| {
                            lent.push(Selected { labels, points: points.to_vec() });
                            Ok::<(), QueryError>(())
                        }).unwrap();
                    }
                }
                lent.sort_by(|a, b| a.labels.cmp(&b.labels));
                let mut owned: Vec<Selected> = want.iter().map(|s| Selected { labels: from_stored(&s.metric, s.tags.iter().map(|(k, v)| (&**k, &**v))), points: s.points.clone() }).collect();
                owned.sort_by(|a, b| a.labels.cmp(&b.labels));
                proptest::prop_assert_eq!(lent, owned, "lent");
            }
            // A point into a row (existing or not: hosts 12 and 13 are new to cpu).
            let base = (3600 * (1000 + write_hour)) as u32;
            let p = tsgate_schema::column::RawPoint::encode(base as u64 + 61, base, DataValue::Int(-5)).unwrap();
            let key = q.layout.row_key(&tagged_tsuid(&q, "cpu", write_host), base);
            q.store.mutate("tsdb", vec![tsgate_store::RowMutations::put(key, tsgate_schema::DATA_FAMILY, p.qualifier().to_vec(), p.value_bytes().to_vec())]).unwrap();
            let want = select_shares(&plain, &metrics, start, end, stamps, &filter, 1);
            proptest::prop_assert_eq!(select_shares(&q, &metrics, start, end, stamps, &filter, parts), want, "after a write");
            proptest::prop_assert_eq!(label_values(&q, "host"), labelled("host"), "values of host after a write");
        }
    }

    /// A tagged read keeps its closed hours whole, one entry per hour and salt, and the next
    /// read takes them from there; a write to an hour drops that hour's entry alone.
    #[test]
    fn tagged_hours_are_kept_whole_and_dropped_on_write() {
        use super::super::row_cache::hour_key;
        let dir = tempfile::tempdir().unwrap();
        let q = tagged_engine(dir.path(), false, 4 << 20);
        let cache = q.rows.clone().unwrap();
        let uid = q
            .uids
            .get_id(UidKind::Metric, "cpu")
            .unwrap()
            .unwrap()
            .into_vec();
        let hour = |h: u32| 3600 * (1000 + h);
        let entry = |h: u32| {
            cache
                .get_hour(&hour_key(&q.layout.metric_start(&[], &uid, hour(h))))
                .map(|rows| rows.len())
        };
        // Hours 1 and 2, a few minutes of each.
        let (start, end) = (
            (hour(1) as i64 + 3000) * 1000,
            (hour(2) as i64 + 300) * 1000,
        );
        let first = select_shares(
            &q,
            &["cpu"],
            start,
            end,
            Stamps::Ms,
            &RowFilter::default(),
            1,
        );
        assert_eq!(
            (entry(0), entry(1), entry(2), entry(3)),
            (None, Some(10), Some(10), None),
            "every row of the hours read, none else"
        );
        assert_eq!(
            first.len(),
            12,
            "each host has a row in one of the two hours"
        );
        let (hits, _, bytes) = cache.stats();
        assert!(bytes > 20 * 30 * 16);
        assert_eq!(
            select_shares(
                &q,
                &["cpu"],
                start,
                end,
                Stamps::Ms,
                &RowFilter::default(),
                1
            ),
            first
        );
        assert_eq!(cache.stats().0, hits + 2, "both hours from the cache");
        // Lent where one row holds a series' points in the window, copied where two do.
        let plan = MetricPlan {
            metrics: vec!["cpu".into()],
            label_ms: Vec::new(),
            row_filter: RowFilter::default(),
        };
        let mut lent = Vec::new();
        q.select_metric_each(
            &plan,
            "cpu",
            start,
            end,
            (0, 1),
            None,
            &mut |labels, points| {
                lent.push((labels, points.to_vec()));
                Ok::<(), QueryError>(())
            },
        )
        .unwrap();
        lent.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want: Vec<_> = first
            .iter()
            .map(|s| {
                (
                    from_stored(&s.metric, s.tags.iter().map(|(k, v)| (&**k, &**v))),
                    s.points.clone(),
                )
            })
            .collect();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(lent, want);
        assert!(
            want.iter().filter(|(_, p)| p.len() > 5).count() >= 8,
            "most hosts have points in both hours"
        );
        let p = tsgate_schema::column::RawPoint::encode(
            hour(2) as u64 + 5,
            hour(2),
            DataValue::Int(-5),
        )
        .unwrap();
        // Host 3 has no row in hour 2: the write makes one.
        let key = q.layout.row_key(&tagged_tsuid(&q, "cpu", 3), hour(2));
        q.store
            .mutate(
                "tsdb",
                vec![tsgate_store::RowMutations::put(
                    key,
                    tsgate_schema::DATA_FAMILY,
                    p.qualifier().to_vec(),
                    p.value_bytes().to_vec(),
                )],
            )
            .unwrap();
        assert_eq!(
            (entry(1), entry(2)),
            (Some(10), None),
            "the written hour alone is dropped"
        );
        let after = select_shares(
            &q,
            &["cpu"],
            start,
            end,
            Stamps::Ms,
            &RowFilter::default(),
            1,
        );
        let h3 = after
            .iter()
            .find(|s| s.tags.contains(&("host".to_string(), "h3".to_string())))
            .unwrap();
        assert_eq!(
            h3.points.last(),
            Some(&((hour(2) as i64 + 5) * 1000, -5.0)),
            "{h3:?}"
        );
        assert_eq!(entry(2), Some(11), "kept again, with the new row");
        // The open hour is read, not kept.
        let now = base_time(tsgate_common::clock::now_ms() / 1000);
        let p = tsgate_schema::column::RawPoint::encode(now as u64 + 1, now, DataValue::Int(7))
            .unwrap();
        let key = q.layout.row_key(&tagged_tsuid(&q, "cpu", 1), now);
        q.store
            .mutate(
                "tsdb",
                vec![tsgate_store::RowMutations::put(
                    key,
                    tsgate_schema::DATA_FAMILY,
                    p.qualifier().to_vec(),
                    p.value_bytes().to_vec(),
                )],
            )
            .unwrap();
        let got = select_shares(
            &q,
            &["cpu"],
            now as i64 * 1000,
            (now as i64 + 3599) * 1000,
            Stamps::Ms,
            &RowFilter::default(),
            1,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].points, [((now as i64 + 1) * 1000, 7.0)]);
        if base_time(tsgate_common::clock::now_ms() / 1000) == now {
            assert!(cache
                .get_hour(&hour_key(&q.layout.metric_start(&[], &uid, now)))
                .is_none());
        }
    }

    /// An hour heavier than the cache takes is read for the window alone, and what was taken
    /// from the request's allowance for it goes back; one that fits takes its weight.
    #[test]
    fn an_hour_too_heavy_to_keep_gives_its_allowance_back() {
        // 1 KB: each shard takes entries of at most 450 bytes; a row of 30 points is heavier.
        let dir = tempfile::tempdir().unwrap();
        let q = tagged_engine(dir.path(), false, 1000);
        let cache = q.rows.clone().unwrap();
        let ids = q.ids_of(&["cpu".to_string()]).unwrap();
        let keep = |_: &str, _: &[(String, String)]| true;
        let ms = |h: i64| 3600 * (1000 + h) * 1000;
        let read = |start: i64, end: i64| {
            let fill = cache.fill();
            let before = fill.left();
            let got = q
                .select_ids(
                    &ids,
                    &StoredRead {
                        start_ms: start,
                        end_ms: end,
                        stamps: Stamps::Ms,
                        row_filter: &RowFilter::default(),
                        fill: Some(&fill),
                        keep: &keep,
                    },
                    (0, 1),
                )
                .unwrap();
            (got, before - fill.left())
        };
        let (got, taken) = read(ms(1), ms(3) - 1);
        assert_eq!(taken, 0, "nothing kept, nothing taken");
        assert_eq!(got.iter().map(|s| s.points.len()).sum::<usize>(), 20 * 30);
        assert_eq!(cache.stats().2, 0);
        // Hours with no row at all fit: taken, and kept.
        let (got, taken) = read(ms(10), ms(12) - 1);
        assert!(got.is_empty());
        assert_eq!(taken, cache.stats().2, "taken is what is kept");
        assert!(taken > 0);
    }

    #[test]
    fn row_hours_count_the_hours_a_window_touches() {
        assert_eq!(QueryEngine::row_hours(0, 3_599_999), 1);
        assert_eq!(QueryEngine::row_hours(1_000, 3_600_999), 2);
        assert_eq!(QueryEngine::row_hours(3_600_000, 3 * 3_600_000 + 1), 3);
        assert_eq!(QueryEngine::row_hours(5, 4), 0);
    }

    #[test]
    fn regexes_are_anchored_and_ascii_classed() {
        let m = Matcher::new(2, "x", "host").unwrap();
        assert!(m.matches("host") && !m.matches("myhost") && !m.matches("host1"));
        let d = Matcher::new(2, "x", "\\d+").unwrap();
        assert!(d.matches("123") && !d.matches("١٢٣"));
        let a = Matcher::new(2, "x", "a|b").unwrap();
        assert!(a.matches("a") && a.matches("b") && !a.matches("ab"));
        let n = Matcher::new(3, "x", ".+").unwrap();
        assert!(n.matches_empty() && !n.matches("v"));
        assert!(Matcher::new(2, "x", "(").is_err());
    }

    #[test]
    fn missing_labels_are_empty() {
        let labels: Labels = vec![("__name__".into(), "up".into()), ("job".into(), "a".into())];
        assert!(labels_match(&labels, &[Matcher::eq("foo", "")]));
        assert!(!labels_match(
            &labels,
            &[Matcher::new(1, "foo", "").unwrap()]
        ));
        assert!(labels_match(
            &labels,
            &[
                Matcher::new(1, "job", "").unwrap(),
                Matcher::eq("__name__", "up")
            ]
        ));
    }
}
