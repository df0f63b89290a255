//! Reading OpenTSDB 2.4's rollup tables for `/api/query`: which interval a downsampling
//! sub-query may read (`TsdbQuery.transformDownSamplerToRollupQuery`), and the points of a
//! rollup row for its aggregator (`avg` as sum and count).
//!
//! A downsample of N seconds reads the longest configured interval that divides N (the equal
//! one first); its cells are then downsampled like raw points: sums of sums, sums of counts,
//! minima of minima, maxima of maxima, sums over counts for `avg`. These equal the raw answers
//! when the query's start is on a downsample boundary and its end just before one.

use crate::aggregate::Aggregator;
use crate::spec::{Query, RollupUsage, SubQuery};
use tsgate_schema::rollup::{decode_cell, RollupInterval, Rollups};
use tsgate_schema::DataValue;
use tsgate_store::CellRef;

/// Which cells make a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The cells of this aggregator id, downsampled with the query's function.
    Same(u8),
    /// Count cells, downsampled by summing them.
    Count(u8),
    /// Sum and count cells: the bucket's sum of sums over its sum of counts.
    Avg { sum: u8, count: u8 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RollupRead {
    pub interval: RollupInterval,
    pub mode: Mode,
}

/// A point of a rollup row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell {
    Value(DataValue),
    Weighted { sum: f64, count: f64 },
}

/// The rollups a sub-query may read, best first (empty: raw data). With
/// `ROLLUP_NOFALLBACK` only the first is read; with `ROLLUP_FALLBACK` the next ones in turn
/// while the answer is empty, then raw; with `ROLLUP_FALLBACK_RAW` raw after the first.
pub fn plan(rollups: &Rollups, q: &Query, sq: &SubQuery, utc: bool) -> Vec<RollupRead> {
    let Some(ds) = &sq.downsample else {
        return Vec::new();
    };
    if sq.rollup_usage == RollupUsage::Raw
        || q.flags.delete
        || ds.all
        || ds.interval_ms == 0
        || !ds.interval_ms.is_multiple_of(1000)
        // Calendar buckets line up with rollup intervals only in UTC.
        || ((ds.calendar.is_some() || q.use_calendar) && !utc)
    {
        return Vec::new();
    }
    use Aggregator as A;
    let id = |n: &str| rollups.id_for(n).ok();
    let mode = match ds.aggregator {
        A::Sum | A::Zimsum => id("sum").map(Mode::Same),
        A::Min | A::Mimmin => id("min").map(Mode::Same),
        A::Max | A::Mimmax => id("max").map(Mode::Same),
        A::First => id("first").map(Mode::Same),
        A::Last => id("last").map(Mode::Same),
        A::Count => id("count").map(Mode::Count),
        A::Avg => match (id("sum"), id("count")) {
            (Some(sum), Some(count)) => Some(Mode::Avg { sum, count }),
            _ => None,
        },
        // Others (dev, percentiles, …) do not compose from stored aggregates.
        _ => None,
    };
    let Some(mode) = mode else {
        return Vec::new();
    };
    rollups
        .best_matches(ds.interval_ms / 1000)
        .into_iter()
        // The default interval is the raw data: from there on, raw.
        .take_while(|i| !i.default)
        .map(|i| RollupRead {
            interval: i.clone(),
            mode,
        })
        .collect()
}

/// Whether a sub-query reads pre-aggregated series, as OpenTSDB 2.4's `TsdbQuery` decides:
/// when asked (`preAggregate` in JSON, a `pre-agg` part of `m=`), or, with rollups
/// configured, when a `literal_or` (or `iliteral_or`, or a plain `tag=value`) filter on the
/// aggregate tag (`rollups.agg_tag_key`, `_aggregate`) has a text other than the raw value
/// (`rollups.raw_agg_tag_value`, `RAW`), compared as typed: `SUM`, `SUM|MAX` and `raw` all
/// read pre-aggregates, `RAW` does not.
pub fn reads_pre_aggregates(rollups: Option<&Rollups>, sq: &SubQuery) -> bool {
    use crate::filter::FilterType;
    sq.pre_aggregate
        || rollups.is_some_and(|r| {
            sq.tsuids.is_empty()
                && sq.filters.iter().any(|f| {
                    matches!(f.kind, FilterType::LiteralOr | FilterType::IliteralOr)
                        && f.tagk == r.agg_tag_key
                        && f.expr != r.raw_agg_tag_value
                })
        })
}

/// Whether OpenTSDB 2.4 plans a sub-query's downsample as a rollup query
/// (`transformDownSamplerToRollupQuery`): rollups allowed and some configured interval, the
/// default one included, divides the downsample. There it turns a `count` group-by into
/// `sum`; tsgate does so for pre-aggregates, where each value of a `COUNT` series is a number
/// of series and the group adds them up, whichever table the read falls back to.
pub fn rolls_up(rollups: &Rollups, sq: &SubQuery) -> bool {
    sq.rollup_usage != RollupUsage::Raw
        && sq.downsample.as_ref().is_some_and(|d| {
            !d.all
                && d.interval_ms >= 1000
                && !rollups.best_matches(d.interval_ms / 1000).is_empty()
        })
}

/// The table a sub-query's read scans (`TsdbQuery.tableToBeScanned`): a rollup's temporal
/// table, or its pre-aggregate table when `pre_aggregate`; without a rollup, the data table,
/// or the default interval's pre-aggregate table (`tsdb-preagg`, raw cells) when
/// `pre_aggregate`. None: pre-aggregates asked for with no rollups configured.
pub fn table_for<'a>(
    rollups: Option<&'a Rollups>,
    read: Option<&'a RollupRead>,
    pre_aggregate: bool,
    data_table: &'a str,
) -> Option<&'a str> {
    match (read, pre_aggregate) {
        (Some(r), false) => Some(&r.interval.table),
        (Some(r), true) => Some(&r.interval.preagg_table),
        (None, false) => Some(data_table),
        (None, true) => rollups?.default_interval().map(|i| i.preagg_table.as_str()),
    }
}

impl Mode {
    /// The aggregator ids whose cells make the points.
    pub fn agg_ids(self) -> Vec<u8> {
        match self {
            Mode::Same(a) | Mode::Count(a) => vec![a],
            Mode::Avg { sum, count } => vec![sum, count],
        }
    }
}

impl RollupRead {
    /// The qualifier prefixes of the cells [`RollupRead::points`] reads ([`Scan`]'s
    /// `qualifier_prefixes`): each aggregator's id byte, as OpenTSDB 2.4's rollup scans filter
    /// on it (`QualifierFilter` with a `BinaryPrefixComparator`). A year's `1d` row holds every
    /// aggregator's 365 cells; a store then reads only those of the one or two wanted. (Cells of
    /// the legacy text form, `sum:` and the offset, are not read: `points` skips them.)
    ///
    /// [`Scan`]: tsgate_store::Scan
    pub fn qualifier_prefixes(&self) -> Vec<Vec<u8>> {
        self.mode.agg_ids().into_iter().map(|id| vec![id]).collect()
    }

    /// The points of one row (base time `base`) within `[start_ms, end_ms]`, in time order.
    pub fn points(
        &self,
        base: u32,
        cells: &[CellRef],
        start_ms: u64,
        end_ms: u64,
        mut f: impl FnMut(u64, Cell),
    ) {
        // Sum and count cells for avg, paired by index below.
        let mut sums: Vec<(u32, f64)> = Vec::new();
        let mut counts: Vec<(u32, f64)> = Vec::new();
        let mut plain: Vec<(u32, DataValue)> = Vec::new();
        for c in cells {
            let Some(cell) = decode_cell(c.qualifier, c.value, |_| None) else {
                continue;
            };
            let Some(id) = cell.agg_id else { continue };
            match self.mode {
                Mode::Same(a) | Mode::Count(a) if a == id => plain.push((cell.index, cell.value)),
                Mode::Avg { sum, .. } if id == sum => sums.push((cell.index, cell.value.as_f64())),
                Mode::Avg { count, .. } if id == count => {
                    counts.push((cell.index, cell.value.as_f64()))
                }
                _ => {}
            }
        }
        let in_range = |index: u32| {
            let ts = self.interval.timestamp_s(base, index) * 1000;
            (start_ms..=end_ms).contains(&ts).then_some(ts)
        };
        plain.sort_by_key(|p| p.0);
        for (index, v) in plain {
            if let Some(ts) = in_range(index) {
                f(ts, Cell::Value(v));
            }
        }
        // Cells come in qualifier order (aggregator id, then index), so both lists are sorted
        // already (the stable sort is then linear) and a merge pairs them: a year's `1d` row
        // holds 365 of each, which a search per cell made quadratic. Of two cells of one index
        // (the binary and the legacy text qualifier) the later one counts.
        let last_of_each = |v: &mut Vec<(u32, f64)>| {
            v.sort_by_key(|p| p.0);
            v.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    *kept = *later;
                }
                same
            });
        };
        last_of_each(&mut sums);
        last_of_each(&mut counts);
        let mut counts = counts.into_iter().peekable();
        for (index, sum) in sums {
            while counts.next_if(|c| c.0 < index).is_some() {}
            if let Some(&(i, count)) = counts.peek() {
                if let (true, Some(ts)) = (i == index, in_range(index)) {
                    f(ts, Cell::Weighted { sum, count });
                }
            }
        }
    }
}

/// How [`QueryEngine::select_rollup`] stamps the points it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// At the interval's start, in seconds (graphite-web: a coarse whisper archive's point).
    StartSeconds,
    /// At the interval's last millisecond (PromQL: a window `[t - r, t]` with `t` and `r`
    /// multiples of the interval then holds exactly the `r / interval` intervals before `t`).
    LastMs,
}

impl RollupRead {
    /// A read of `interval`'s cells for one of graphite-web's consolidation functions
    /// (`sum`/`total`, `min`, `max`, `average`/`avg`) or `count`; None when the aggregators
    /// it needs are not in `aggregationIds`.
    pub fn for_function(rollups: &Rollups, interval: &RollupInterval, func: &str) -> Option<Self> {
        let id = |n: &str| rollups.id_for(n).ok();
        let mode = match func {
            "sum" | "total" => Mode::Same(id("sum")?),
            "min" => Mode::Same(id("min")?),
            "max" => Mode::Same(id("max")?),
            "count" => Mode::Count(id("count")?),
            "average" | "avg" => Mode::Avg {
                sum: id("sum")?,
                count: id("count")?,
            },
            _ => return None,
        };
        Some(RollupRead {
            interval: interval.clone(),
            mode,
        })
    }
}

/// What a graphite-web fetch asks of the data it reads (see [`graphite_plan`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphiteWant {
    /// The consolidation function the points go through (`average` unless a `consolidateBy`
    /// or `summarize` says otherwise).
    pub func: String,
    pub fit: Fit,
}

/// Which rollup intervals can serve a fetch and give the raw answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Any: only the age of the window chooses (raw data expired).
    Any,
    /// Those dividing these seconds (`summarize` with `sum`, `min`, `max`).
    Divides(u64),
    /// This one exactly (`summarize` with `average`, `hitcount`: one value per bucket).
    Equals(u64),
    /// Those no longer than these seconds (`maxDataPoints`: the window still holds at least
    /// that many points, so the answer's own consolidation decides its resolution).
    AtMost(u64),
}

impl Fit {
    fn accepts(self, interval_s: u64) -> bool {
        match self {
            Fit::Any => true,
            Fit::Divides(n) => n > 0 && n.is_multiple_of(interval_s),
            Fit::Equals(n) => n == interval_s,
            Fit::AtMost(n) => interval_s <= n,
        }
    }
}

/// Which rollup a graphite-web fetch of `(from, until]` reads, as graphite-web picks a whisper
/// archive: `retention_s(None)` is the raw data's retention and `retention_s(Some(iv))` each
/// interval's (seconds, 0 = for ever).
///
/// - With a `want` that fits an interval (`summarize`, `hitcount`, `maxDataPoints`), the
///   longest interval that fits it and still holds the window's start, when it has the
///   aggregators `want.func` needs.
/// - Otherwise, when the raw data no longer reaches back to `from`, the finest interval that
///   does (whisper's rule: the first archive whose retention covers the window).
/// - Otherwise (raw data covers the window) None: raw data.
pub fn graphite_plan(
    rollups: &Rollups,
    want: Option<&GraphiteWant>,
    from: i64,
    now: i64,
    retention_s: &dyn Fn(Option<&RollupInterval>) -> u64,
) -> Option<RollupRead> {
    let covers = |secs: u64| secs == 0 || from >= now.saturating_sub(secs as i64);
    let mut ivs: Vec<&RollupInterval> = rollups
        .intervals
        .iter()
        .filter(|i| !i.default && covers(retention_s(Some(i))))
        .collect();
    ivs.sort_by_key(|i| i.interval_s);
    let func = want.map_or("average", |w| w.func.as_str());
    if let Some(w) = want.filter(|w| w.fit != Fit::Any) {
        let best = ivs
            .iter()
            .rev()
            .filter(|i| w.fit.accepts(i.interval_s as u64))
            .find_map(|i| RollupRead::for_function(rollups, i, func));
        if best.is_some() {
            return best;
        }
    }
    if covers(retention_s(None)) {
        return None;
    }
    ivs.iter()
        .find_map(|i| RollupRead::for_function(rollups, i, func))
}

impl crate::QueryEngine {
    /// The series of `metrics` (stored names) that `row_filter` and `keep` pass, with one
    /// point per interval of `read` whose start is in `[start_ms, end_ms]`, read from its
    /// rollup table: the aggregator's value, `avg` as sum / count. Series with no cell in the
    /// window are left out; the rest come in TSUID order.
    pub fn select_rollup(
        &self,
        metrics: &[String],
        read: &RollupRead,
        (start_ms, end_ms): (i64, i64),
        stamp: Stamp,
        row_filter: &crate::seek::RowFilter,
        keep: &crate::select::KeepSeries,
    ) -> Result<Vec<crate::select::StoredSelected>, crate::QueryError> {
        use std::collections::HashMap;
        use tsgate_schema::uid_table::UidKind;
        let mut out = Vec::new();
        if end_ms < start_ms || end_ms < 0 {
            return Ok(out);
        }
        let (start_ms, end_ms) = (start_ms.max(0) as u64, end_ms as u64);
        let iv = &read.interval;
        let first = iv.base_time(start_ms / 1000);
        let last = (iv.base_time(end_ms / 1000) as u64 + 1).min(u32::MAX as u64) as u32;
        let step_ms = iv.interval_s as u64 * 1000;
        for id in self.metric_ids(metrics)? {
            // TSUID → index in `found`, None when `keep` refused it.
            let mut seen: HashMap<Vec<u8>, Option<usize>> = HashMap::new();
            let mut found: Vec<(Vec<u8>, crate::select::StoredSelected)> = Vec::new();
            for salt in self.layout.salt_prefixes() {
                let scan = tsgate_store::Scan {
                    qualifier_prefixes: read.qualifier_prefixes(),
                    ..self.metric_scan(&salt, &id.uid, first, last, row_filter)
                };
                // Rows lent, not copied: the visitor cannot return a query error, so one is
                // kept here and ends the scan.
                let mut failed: Option<crate::QueryError> = None;
                let mut row_body =
                    |key: &[u8], cells: &[CellRef]| -> Result<(), crate::QueryError> {
                        let Ok(rk) = self.layout.parse(key) else {
                            return Ok(());
                        };
                        let tsuid = rk.tsuid();
                        let at = match seen.get(&tsuid) {
                            Some(at) => *at,
                            None => {
                                let mut tags = Vec::new();
                                for (k, v) in rk.tag_pairs() {
                                    tags.push((
                                        self.uids.get_name(UidKind::Tagk, k)?.into(),
                                        self.uids.get_name(UidKind::Tagv, v)?.into(),
                                    ));
                                }
                                let at = keep(&id.name, &tags).then(|| {
                                    found.push((
                                        tsuid.clone(),
                                        crate::select::StoredSelected {
                                            metric: id.name.clone(),
                                            tags,
                                            points: Vec::new(),
                                        },
                                    ));
                                    found.len() - 1
                                });
                                seen.insert(tsuid, at);
                                at
                            }
                        };
                        let Some(at) = at else { return Ok(()) };
                        let points = &mut found[at].1.points;
                        read.points(rk.base, cells, start_ms, end_ms, |ts, c| {
                            let v = match c {
                                Cell::Value(v) => v.as_f64(),
                                Cell::Weighted { count: 0.0, .. } => return,
                                Cell::Weighted { sum, count } => sum / count,
                            };
                            let t = match stamp {
                                Stamp::StartSeconds => (ts / 1000) as i64,
                                Stamp::LastMs => (ts + step_ms - 1) as i64,
                            };
                            points.push((t, v));
                        });
                        Ok(())
                    };
                self.store.scan_rows(
                    &iv.table,
                    &scan,
                    &mut crate::select::stop_on_error(&mut row_body, &mut failed),
                )?;
                if let Some(e) = failed.take() {
                    return Err(e);
                }
            }
            found.sort_by(|a, b| a.0.cmp(&b.0));
            for (_, mut s) in found {
                if s.points.is_empty() {
                    continue;
                }
                // Salt buckets each hold their own rows: the points of a salted series
                // arrive in bucket order.
                s.points.sort_by_key(|p| p.0);
                out.push(s);
            }
        }
        Ok(out)
    }
}

impl crate::QueryEngine {
    /// The series of `metrics` (stored names) found in the coarsest rollup table, with no
    /// points: those whose raw data expired are still there (the graphite-web index lists
    /// them). Empty without rollups.
    pub fn rollup_series(
        &self,
        metrics: &[String],
    ) -> Result<Vec<crate::select::StoredSelected>, crate::QueryError> {
        use tsgate_schema::uid_table::UidKind;
        let Some(iv) = self.rollups.as_ref().and_then(|r| {
            r.intervals
                .iter()
                .filter(|i| !i.default)
                .max_by_key(|i| i.interval_s)
        }) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for id in self.metric_ids(metrics)? {
            let mut seen = std::collections::HashSet::new();
            for salt in self.layout.salt_prefixes() {
                let scan = self.metric_scan(&salt, &id.uid, 0, u32::MAX, &Default::default());
                for row in self.store.scan(&iv.table, &scan)? {
                    let row = row?;
                    let Ok(rk) = self.layout.parse(&row.key) else {
                        continue;
                    };
                    if !seen.insert(rk.tsuid()) {
                        continue;
                    }
                    let mut tags = Vec::new();
                    for (k, v) in rk.tag_pairs() {
                        tags.push((
                            self.uids.get_name(UidKind::Tagk, k)?.into(),
                            self.uids.get_name(UidKind::Tagv, v)?.into(),
                        ));
                    }
                    out.push(crate::select::StoredSelected {
                        metric: id.name.clone(),
                        tags,
                        points: Vec::new(),
                    });
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::aggregate::Num;
    use crate::QueryEngine;
    use proptest::prelude::*;
    use std::sync::Arc;
    use tsgate_core::config::rollup::RollupsConfig;
    use tsgate_core::write::compactor::Compactor;
    use tsgate_core::write::rollup::RollupBuild;
    use tsgate_schema::uid_table::UidKind;
    use tsgate_schema::{DataValue, KeyLayout, RawPoint, DATA_FAMILY};
    use tsgate_store::{embedded::EmbeddedStore, RowMutations, TableNames};

    /// 2013-01-01 00:00 UTC, a multiple of two days since the epoch.
    const DAY: u64 = 1356998400;

    struct Fixture {
        _dir: tempfile::TempDir,
        engine: QueryEngine,
        compactor: Compactor,
        tsuids: Vec<Vec<u8>>,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut c = RollupsConfig {
            enabled: true,
            ..Default::default()
        };
        let r = Arc::new(c.compile("tsdb").unwrap().unwrap());
        c.compiled = Some(r.clone());
        let names = TableNames {
            rollups: r.tables("tsdb"),
            ..Default::default()
        };
        let store: tsgate_store::SharedStore =
            Arc::new(EmbeddedStore::open(dir.path(), &names.specs()).unwrap());
        let uids = Arc::new(tsgate_core::uid::UidCore::new(
            store.clone(),
            "tsdb-uid".into(),
            [3, 3, 3],
            [true; 3],
        ));
        let id = |kind, name: &str| uids.get_or_create(kind, name).unwrap().into_vec();
        let tsuids = ["web01", "web02"]
            .iter()
            .map(|h| {
                [
                    id(UidKind::Metric, "m"),
                    id(UidKind::Tagk, "host"),
                    id(UidKind::Tagv, h),
                ]
                .concat()
            })
            .collect();
        let layout = KeyLayout::default();
        let compactor =
            Compactor::new(store.clone(), "tsdb").with_rollups(RollupBuild::new(&r, layout));
        Fixture {
            _dir: dir,
            engine: QueryEngine {
                store,
                uids,
                layout,
                table: "tsdb".into(),
                allow_delete: false,
                limits: Default::default(),
                rows: None,
                rollups: Some(r),
            },
            compactor,
            tsuids,
        }
    }

    impl Fixture {
        /// Writes points (series, seconds since DAY, value) as one column each, then compacts
        /// their rows (building the rollups).
        fn write(&self, points: &[(usize, u64, i64)]) {
            let layout = KeyLayout::default();
            let mut rows = Vec::new();
            let mut batch = Vec::new();
            for &(s, off, v) in points {
                let ts = DAY + off;
                let base = tsgate_schema::rowkey::base_time(ts);
                let row = layout.row_key(&self.tsuids[s], base);
                let p = RawPoint::encode(ts, base, DataValue::Int(v)).unwrap();
                batch.push(RowMutations::put(
                    row.clone(),
                    DATA_FAMILY,
                    p.qualifier().to_vec(),
                    p.value_bytes().to_vec(),
                ));
                if !rows.contains(&row) {
                    rows.push(row);
                }
            }
            self.engine.store.mutate("tsdb", batch).unwrap();
            assert!(self.compactor.compact(&rows).is_empty());
        }

        /// Writes points without compacting them: no rollup cells.
        fn write_raw(&self, points: &[(usize, u64, i64)]) {
            let layout = KeyLayout::default();
            let batch = points
                .iter()
                .map(|&(s, off, v)| {
                    let ts = DAY + off;
                    let base = tsgate_schema::rowkey::base_time(ts);
                    let p = RawPoint::encode(ts, base, DataValue::Int(v)).unwrap();
                    RowMutations::put(
                        layout.row_key(&self.tsuids[s], base),
                        DATA_FAMILY,
                        p.qualifier().to_vec(),
                        p.value_bytes().to_vec(),
                    )
                })
                .collect();
            self.engine.store.mutate("tsdb", batch).unwrap();
        }

        fn run(&self, body: &str) -> Vec<(usize, Vec<(u64, f64)>)> {
            let q = crate::parse::from_json(body.as_bytes(), 0).unwrap();
            let (series, _) = self.engine.run(&q).unwrap();
            series
                .into_iter()
                .map(|s| {
                    let dps = s
                        .dps
                        .iter()
                        .map(|(t, v)| {
                            (
                                *t,
                                match v {
                                    Num::Int(i) => *i as f64,
                                    Num::Float(f) => *f,
                                },
                            )
                        })
                        .collect();
                    (s.index, dps)
                })
                .collect()
        }
    }

    impl Fixture {
        /// Series 0 and 1 get `a` and `b` at each offset (raw, uncompacted); their
        /// pre-aggregates go in as `/api/rollup` places them (`ingest::rollup::place`): series
        /// `m{_aggregate=SUM|MIN|MAX|COUNT}` in `tsdb-preagg` (group-by aggregator only) and,
        /// with `hourly`, the `sum`/`count`/`min`/`max` of each hour of them in
        /// `tsdb-rollup-preagg-1h` (`1h-<agg>:<group-by agg>`).
        fn write_preaggs(&self, points: &[(u64, i64, i64)], hourly: bool) {
            use tsgate_core::ingest::rollup::place;
            use tsgate_opentsdb::rollup::RollupSpec;
            use tsgate_opentsdb::{DataPoint, Value};
            let raw: Vec<(usize, u64, i64)> = points
                .iter()
                .flat_map(|&(off, a, b)| [(0, off, a), (1, off, b)])
                .collect();
            self.write_raw(&raw);
            let mut cfg = RollupsConfig {
                enabled: true,
                ..Default::default()
            };
            cfg.compiled = self.engine.rollups.clone();
            let uids = &self.engine.uids;
            let put = |spec: &str, ts: u64, v: i64| {
                let p = DataPoint {
                    metric: "m",
                    timestamp: ts,
                    value: Value::Int(v),
                    tags: vec![],
                };
                let placed =
                    place(&cfg, cfg.compiled.as_deref(), &RollupSpec::parse(spec), &p).unwrap();
                let mut tsuid = uids.get_or_create(UidKind::Metric, "m").unwrap().into_vec();
                for (k, v) in &placed.tags {
                    tsuid.extend(uids.get_or_create(UidKind::Tagk, k).unwrap().into_vec());
                    tsuid.extend(uids.get_or_create(UidKind::Tagv, v).unwrap().into_vec());
                }
                let row = KeyLayout::default().row_key(&tsuid, placed.base);
                let m = RowMutations::put(row, DATA_FAMILY, placed.qualifier, placed.value);
                self.engine.store.mutate(&placed.table, vec![m]).unwrap();
            };
            let group = |a: i64, b: i64| {
                [
                    ("sum", a + b),
                    ("min", a.min(b)),
                    ("max", a.max(b)),
                    ("count", 2),
                ]
            };
            let mut hours: std::collections::BTreeMap<(u64, &str), Vec<i64>> = Default::default();
            for &(off, a, b) in points {
                for (agg, v) in group(a, b) {
                    put(agg, DAY + off, v);
                    hours.entry((off / 3600, agg)).or_default().push(v);
                }
            }
            if !hourly {
                return;
            }
            for ((hour, agg), vs) in hours {
                let ts = DAY + hour * 3600;
                put(&format!("1h-sum:{agg}"), ts, vs.iter().sum());
                put(&format!("1h-count:{agg}"), ts, vs.len() as i64);
                put(&format!("1h-min:{agg}"), ts, *vs.iter().min().unwrap());
                put(&format!("1h-max:{agg}"), ts, *vs.iter().max().unwrap());
            }
        }
    }

    fn body(start: u64, end: u64, sub: &str) -> String {
        format!(r#"{{"start":{start},"end":{end},"queries":[{{"metric":"m",{sub}}}]}}"#)
    }

    #[test]
    fn pre_aggregates_are_read_when_opentsdb_reads_them() {
        use super::reads_pre_aggregates;
        let f = fixture();
        let r = f.engine.rollups.as_deref();
        let m = |m: &str| crate::parse::parse_m(m, 0).unwrap();
        // A literal filter on _aggregate other than the raw value, as typed.
        assert!(reads_pre_aggregates(r, &m("sum:m{_aggregate=SUM}")));
        assert!(reads_pre_aggregates(r, &m("sum:m{_aggregate=SUM|MAX}")));
        assert!(reads_pre_aggregates(
            r,
            &m("sum:m{_aggregate=iliteral_or(raw)}")
        ));
        assert!(!reads_pre_aggregates(r, &m("sum:m{_aggregate=RAW}")));
        assert!(!reads_pre_aggregates(r, &m("sum:m{_aggregate=*}")));
        assert!(!reads_pre_aggregates(
            r,
            &m("sum:m{_aggregate=regexp(SUM)}")
        ));
        assert!(!reads_pre_aggregates(r, &m("sum:m{host=SUM}")));
        // Asked for, with or without rollups; the tag alone only with rollups configured.
        assert!(reads_pre_aggregates(r, &m("sum:pre-agg:m")));
        assert!(reads_pre_aggregates(None, &m("sum:PRE-AGG:m")));
        assert!(!reads_pre_aggregates(None, &m("sum:m{_aggregate=SUM}")));

        f.write_preaggs(&[(10, 4, 6), (20, 1, 9)], false);
        let dps = |a: i64, b: i64| {
            vec![(
                0,
                vec![((DAY + 10) * 1000, a as f64), ((DAY + 20) * 1000, b as f64)],
            )]
        };
        let (s, e) = (DAY, DAY + 3599);
        let agg = |a: &str, tag: &str| {
            format!(
                r#""aggregator":"{a}","filters":[{{"type":"literal_or","tagk":"_aggregate","filter":"{tag}","groupBy":false}}]"#
            )
        };
        assert_eq!(f.run(&body(s, e, &agg("sum", "SUM"))), dps(10, 10));
        assert_eq!(f.run(&body(s, e, &agg("max", "MAX"))), dps(6, 9));
        // The raw data's own group-by, for comparison.
        assert_eq!(f.run(&body(s, e, r#""aggregator":"max""#)), dps(6, 9));
        // `RAW` reads the data table, where no series carries the tag (a known name, else the
        // filter is refused before any read).
        f.engine.uids.get_or_create(UidKind::Tagv, "RAW").unwrap();
        assert_eq!(f.run(&body(s, e, &agg("sum", "RAW"))), vec![]);
        // preAggregate alone: every pre-aggregated series.
        let all = f.run(&body(s, e, r#""aggregator":"none","preAggregate":true"#));
        assert_eq!(all.len(), 4, "{all:?}");
        // And without rollups configured, a request for them is refused.
        let g = &f.engine;
        let plain = QueryEngine {
            store: g.store.clone(),
            uids: g.uids.clone(),
            layout: g.layout,
            table: g.table.clone(),
            allow_delete: false,
            limits: Default::default(),
            rows: None,
            rollups: None,
        };
        let q = crate::parse::from_json(
            body(s, e, r#""aggregator":"sum","preAggregate":true"#).as_bytes(),
            0,
        )
        .unwrap();
        assert!(matches!(
            plain.run(&q),
            Err(crate::QueryError::BadRequest(_))
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]
        /// A pre-aggregated series read instead of its raw group-by gives the raw group-by's
        /// answer where equal by construction: raw points at shared timestamps, `sum`, `min`,
        /// `max` group-bys against `_aggregate=SUM|MIN|MAX`, `count` against the `COUNT`
        /// series summed; downsampled, from the pre-aggregate rollup table (and, for `1d`,
        /// which has none, the raw pre-aggregates on `ROLLUP_FALLBACK_RAW`).
        #[test]
        fn pre_aggregate_answers_equal_the_raw_group_by(
            points in prop::collection::btree_map(0u64..2 * 86_400, (-1000i64..1000, -1000i64..1000), 1..80),
            queries in prop::collection::vec((0usize..4, 0usize..4, 0u64..3, 1u64..4), 1..6),
        ) {
            let f = fixture();
            let points: Vec<(u64, i64, i64)> = points.into_iter().map(|(o, (a, b))| (o, a, b)).collect();
            f.write_preaggs(&points, true);
            let tag = |g: &str| format!(r#""filters":[{{"type":"literal_or","tagk":"_aggregate","filter":"{g}","groupBy":false}}]"#);
            for &(iv, agg, k, n) in &queries {
                let iv_s = [3600u64, 7200, 21_600, 86_400][iv];
                let (start, end) = (DAY + k * iv_s, DAY + (k + n) * iv_s - 1);
                // (raw group-by, raw downsample, pre-aggregate series, its group-by)
                let (g, d, series, pg) = [("sum", "sum", "SUM", "sum"), ("min", "min", "MIN", "min"), ("max", "max", "MAX", "max"), ("sum", "count", "COUNT", "count")][agg];
                let pd = if d == "count" { "sum" } else { d };
                // Undownsampled: the raw pre-aggregates (a `count` group-by of the COUNT series
                // counts one series, so the raw `count` pairs with its `sum`).
                let raw = f.run(&body(start, end, &format!(r#""aggregator":"{}""#, if d == "count" { "count" } else { g }))) ;
                let pre = f.run(&body(start, end, &format!(r#""aggregator":"{}",{}"#, if d == "count" { "sum" } else { pg }, tag(series))));
                prop_assert!(same(&raw, &pre), "raw {raw:?}\npre {pre:?}");
                // Downsampled: from the 1h pre-aggregate rollups (1d has none: fall back).
                let raw = f.run(&body(start, end, &format!(r#""aggregator":"{g}","downsample":"{iv_s}s-{d}","rollupUsage":"ROLLUP_RAW""#)));
                // The 1h pre-aggregate table alone answers below a day; a day reads the 1d
                // one (empty), then the 1h one or the raw pre-aggregates.
                let first = if iv_s < 86_400 { "ROLLUP_NOFALLBACK" } else { "ROLLUP_FALLBACK" };
                for usage in [first, "ROLLUP_FALLBACK_RAW"] {
                    let pre = f.run(&body(start, end, &format!(r#""aggregator":"{pg}","downsample":"{iv_s}s-{pd}","rollupUsage":"{usage}",{}"#, tag(series))));
                    prop_assert!(same(&raw, &pre), "{iv_s}s-{d} {series} {usage} [{start}, {end}]\nraw {raw:?}\npre {pre:?}");
                }
            }
        }
    }

    fn same(a: &[(usize, Vec<(u64, f64)>)], b: &[(usize, Vec<(u64, f64)>)]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.0 == y.0
                    && x.1.len() == y.1.len()
                    && x.1
                        .iter()
                        .zip(&y.1)
                        .all(|(p, q)| p.0 == q.0 && (p.1 == q.1 || (p.1.is_nan() && q.1.is_nan())))
            })
    }

    #[test]
    fn plans_as_opentsdb() {
        let f = fixture();
        let r = f.engine.rollups.as_deref().unwrap();
        let plan = |body: &str| {
            let q = crate::parse::from_json(body.as_bytes(), 0).unwrap();
            super::plan(r, &q, &q.queries[0], true)
                .iter()
                .map(|p| p.interval.interval.clone())
                .collect::<Vec<_>>()
        };
        let b = |ds: &str, extra: &str| {
            format!(
                r#"{{"start":1356998400,"end":1357084799,"queries":[{{"aggregator":"sum","metric":"m","downsample":"{ds}"{extra}}}]}}"#
            )
        };
        assert_eq!(plan(&b("1d-sum", "")), ["1d", "1h"]);
        assert_eq!(plan(&b("2h-avg", "")), ["1h"]);
        assert!(plan(&b("30m-sum", "")).is_empty()); // only the raw 1m divides it
        assert!(plan(&b("1d-dev", "")).is_empty());
        assert!(plan(&b("1d-sum", r#","rollupUsage":"ROLLUP_RAW""#)).is_empty());
        assert!(plan(&b("0all-sum", "")).is_empty());
    }

    #[test]
    fn graphite_picks_as_whisper_picks_an_archive() {
        use super::{graphite_plan, Fit, GraphiteWant, Mode};
        let f = fixture();
        let r = f.engine.rollups.as_deref().unwrap();
        let now = 1_700_000_000i64;
        let want = |func: &str, fit| GraphiteWant {
            func: func.into(),
            fit,
        };
        let plan = |w: Option<&GraphiteWant>, from: i64, raw: u64, hour: u64| {
            graphite_plan(r, w, from, now, &|iv| match iv {
                None => raw,
                Some(iv) if iv.interval == "1h" => hour,
                Some(_) => 0,
            })
            .map(|p| (p.interval.interval.clone(), p.mode))
        };
        let (sum, count, min, max) = (0, 1, 2, 3);
        let day = Some(("1d".to_string(), Mode::Same(sum)));
        // summarize(x, '1d', 'sum'): the longest interval dividing a day; '2h': the hour.
        assert_eq!(
            plan(Some(&want("sum", Fit::Divides(86_400))), now - 10, 0, 0),
            day
        );
        assert_eq!(
            plan(Some(&want("max", Fit::Divides(7200))), now - 10, 0, 0),
            Some(("1h".into(), Mode::Same(max)))
        );
        // average only from its own interval; '2h' has none: raw data.
        assert_eq!(
            plan(Some(&want("average", Fit::Equals(3600))), now - 10, 0, 0),
            Some(("1h".into(), Mode::Avg { sum, count }))
        );
        assert_eq!(
            plan(Some(&want("average", Fit::Equals(7200))), now - 10, 0, 0),
            None
        );
        // Functions no stored aggregate gives (last, median): raw data.
        assert_eq!(
            plan(Some(&want("last", Fit::Divides(86_400))), now - 10, 0, 0),
            None
        );
        // maxDataPoints: the longest interval still giving that many points.
        assert_eq!(
            plan(Some(&want("min", Fit::AtMost(5000))), now - 10, 0, 0),
            Some(("1h".into(), Mode::Same(min)))
        );
        // No want: raw while raw data reaches back to `from`; else the finest interval that
        // does (the hour's kept 30 days here).
        assert_eq!(plan(None, now - 86_400, 7 * 86_400, 0), None);
        assert_eq!(
            plan(None, now - 8 * 86_400, 7 * 86_400, 30 * 86_400),
            Some(("1h".into(), Mode::Avg { sum, count }))
        );
        assert_eq!(
            plan(None, now - 40 * 86_400, 7 * 86_400, 30 * 86_400),
            Some(("1d".into(), Mode::Avg { sum, count }))
        );
        // A want no interval fits, past raw retention: the age decides.
        assert_eq!(
            plan(
                Some(&want("sum", Fit::Divides(60))),
                now - 8 * 86_400,
                86_400,
                0
            ),
            Some(("1h".into(), Mode::Same(sum)))
        );
    }

    #[test]
    fn rollup_usage_falls_back_as_opentsdb() {
        let f = fixture();
        f.write_raw(&[(0, 10, 4), (0, 7200, 6)]);
        let body = |usage: &str| {
            format!(
                r#"{{"start":{DAY},"end":{},"queries":[{{"aggregator":"sum","metric":"m","downsample":"1d-sum","rollupUsage":"{usage}"}}]}}"#,
                DAY + 86_399
            )
        };
        let want = vec![(0, vec![(DAY * 1000, 10.0)])];
        assert_eq!(f.run(&body("ROLLUP_RAW")), want);
        // No rollup cells yet: the default reads the 1d table only, and finds nothing.
        assert_eq!(f.run(&body("ROLLUP_NOFALLBACK")), vec![]);
        assert_eq!(f.run(&body("ROLLUP_FALLBACK_RAW")), want);
        assert_eq!(f.run(&body("ROLLUP_FALLBACK")), want);
        // Once built (a compaction of both rows), the rollup answers.
        f.write(&[(0, 10, 4), (0, 7200, 6)]);
        assert_eq!(f.run(&body("ROLLUP_NOFALLBACK")), want);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// For random data and random aligned downsamples, the rollup answer is the raw one;
        /// and again after a late point into a compacted hour.
        #[test]
        fn rollup_answers_equal_raw(
            points in prop::collection::vec((0usize..2, 0u64..3 * 86_400, -1000i64..1000), 1..120),
            late in (0usize..2, 0u64..3 * 86_400, -1000i64..1000),
            queries in prop::collection::vec((0usize..5, 0usize..7, 0u64..3, 1u64..4, any::<bool>(), any::<bool>()), 1..6),
        ) {
            let f = fixture();
            f.write(&points);
            let ask = |f: &Fixture| {
                for &(iv, agg, k, n, fill, group) in &queries {
                    let iv_s = [3600u64, 7200, 21_600, 86_400, 172_800][iv];
                    let agg = ["sum", "count", "min", "max", "avg", "zimsum", "mimmax"][agg];
                    let start = DAY + k * iv_s;
                    let end = start + n * iv_s - 1;
                    let ds = format!("{}s-{agg}{}", iv_s, if fill { "-zero" } else { "" });
                    let body = |usage: &str| format!(
                        r#"{{"start":{start},"end":{end},"queries":[{{"aggregator":"{}","metric":"m","downsample":"{ds}","rollupUsage":"{usage}"}}]}}"#,
                        if group { "sum" } else { "none" }
                    );
                    let raw = f.run(&body("ROLLUP_RAW"));
                    let rolled = f.run(&body("ROLLUP_NOFALLBACK"));
                    prop_assert!(same(&raw, &rolled), "{ds} [{start}, {end}] group={group}\nraw    {raw:?}\nrollup {rolled:?}");
                }
                Ok(())
            };
            ask(&f)?;
            f.write(&[late]);
            ask(&f)?;
        }
    }
}
