//! The commonest dashboard shapes, one range function over one selector (`rate(x[5m])`,
//! `avg_over_time(x[1d])`), alone or under an aggregation (`sum(rate(x[5m]))`,
//! `avg by (dc) (avg_over_time(x[1m]))`), evaluated one metric at a time: as soon as a
//! metric's series are read, each is reduced to the function's value at every step and its
//! points are dropped. The steps are read in slices sized by the data's density, so memory
//! holds one slice's points (`Settings::slice_points`) and one value per series and step, instead
//! of every point of every series (a year of 10-second data over 1,000 series is 3.15 G
//! points). The answer is the step evaluator's, bit for bit: the function is evaluated by the
//! same code, and each step's values are aggregated in the same order, by labels.

use super::aggregate;
use super::eval::{unwrap_parens, window_from, Sample};
use super::functions::{avg_over_time_each, range_value};
use super::selectors::{self, at_ms, dur_ms, key, offset_ms};
use super::{selector_matchers, LabelSet, PromError, Settings};
use crate::QueryEngine;
use promql_parser::parser::{AggregateExpr, Call, Expr, MatrixSelector};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tsgate_prometheus::is_stale_nan;

/// Range functions of one argument whose value depends only on the window's points.
const FUNCTIONS: &[&str] = &[
    "rate",
    "increase",
    "delta",
    "irate",
    "idelta",
    "deriv",
    "changes",
    "resets",
    "avg_over_time",
    "min_over_time",
    "max_over_time",
    "sum_over_time",
    "count_over_time",
    "stddev_over_time",
    "stdvar_over_time",
    "last_over_time",
    "present_over_time",
];

/// Aggregations without a parameter.
const OPERATORS: &[&str] = &[
    "sum", "avg", "count", "min", "max", "group", "stddev", "stdvar",
];

/// The forms this module evaluates: an aggregation of one range function over one selector,
/// and the range function alone.
#[derive(Clone, Copy)]
enum Form<'e> {
    Aggregate(&'e AggregateExpr, &'e Call, &'e MatrixSelector),
    Bare(&'e Call, &'e MatrixSelector),
}

impl<'e> Form<'e> {
    fn call(self) -> (&'e Call, &'e MatrixSelector) {
        match self {
            Form::Aggregate(_, c, ms) | Form::Bare(c, ms) => (c, ms),
        }
    }
}

fn range_call(e: &Expr) -> Option<(&Call, &MatrixSelector)> {
    let Expr::Call(c) = unwrap_parens(e) else {
        return None;
    };
    if !FUNCTIONS.contains(&c.func.name) || c.args.args.len() != 1 {
        return None;
    }
    let Expr::MatrixSelector(ms) = unwrap_parens(&c.args.args[0]) else {
        return None;
    };
    Some((c, ms))
}

fn shape(expr: &Expr) -> Option<Form<'_>> {
    if let Some((c, ms)) = range_call(expr) {
        return Some(Form::Bare(c, ms));
    }
    let Expr::Aggregate(a) = unwrap_parens(expr) else {
        return None;
    };
    if a.param.is_some() || !OPERATORS.contains(&a.op.to_string().as_str()) {
        return None;
    }
    let (c, ms) = range_call(&a.expr)?;
    Some(Form::Aggregate(a, c, ms))
}

/// One series reduced: its labels (the sort key) and its value at each step where it has one,
/// as (step index, value).
struct Reduced {
    labels: LabelSet,
    values: Vec<(u32, f64)>,
}

/// The aggregation's vector at each step: (ms, its samples).
pub type StepVectors = Vec<(i64, Vec<Sample>)>;

/// The aggregation's value at each step (`start`, `start + step`, … ≤ `end`, ms), when `expr`
/// has the shape this module evaluates; `None` otherwise.
pub fn eval(
    store: &QueryEngine,
    expr: &Expr,
    start: i64,
    end: i64,
    step: i64,
    settings: Settings,
) -> Option<Result<StepVectors, PromError>> {
    let form = shape(expr)?;
    Some(run(store, expr, form, start, end, step, settings))
}

/// One series' function values at every step (`None` when it has none): what the step
/// evaluator computes for it (the window at the shifted time, then the function), without
/// building its per-step vectors.
fn reduce_series(
    labels: tsgate_core::prometheus::labels::Labels,
    points: &[(i64, f64)],
    name: &str,
    ms: &MatrixSelector,
    steps: &[i64],
    start: i64,
    end: i64,
) -> Option<Reduced> {
    let nostale: Option<Vec<(i64, f64)>> = points.iter().any(|p| is_stale_nan(p.1)).then(|| {
        points
            .iter()
            .copied()
            .filter(|p| !is_stale_nan(p.1))
            .collect()
    });
    let points = nostale.as_deref().unwrap_or(points);
    let labels = Arc::new(labels);
    let range = dur_ms(&ms.range);
    let (at, offset) = (at_ms(&ms.vs.at, start, end), offset_ms(&ms.vs.offset));
    // The windows first (step index, window end, step time), then the function over them.
    let mut cursor = (0, 0);
    let mut at_steps: Vec<(u32, i64, i64)> = Vec::new();
    let mut windows: Vec<&[(i64, f64)]> = Vec::new();
    for (i, &t) in steps.iter().enumerate() {
        let te = at.unwrap_or(t) - offset;
        let w = window_from(points, te - range, te, &mut cursor);
        if !w.is_empty() {
            at_steps.push((i as u32, te, t));
            windows.push(w);
        }
    }
    let values: Vec<(u32, f64)> = if name == "avg_over_time" {
        // Several windows' means at once (see `avg_over_time_each`).
        at_steps
            .iter()
            .map(|s| s.0)
            .zip(avg_over_time_each(&windows))
            .collect()
    } else {
        at_steps
            .iter()
            .zip(&windows)
            .filter_map(|(&(i, te, t), w)| {
                Some((i, range_value(name, w, te - range, te, range, t, &[])?))
            })
            .collect()
    };
    (!values.is_empty()).then_some(Reduced { labels, values })
}

/// The first slice's steps: those within a day of the start, so that a dashboard's day is
/// read in one pass, as before slicing.
const FIRST_SLICE_MS: i64 = 86_400_000;

fn run(
    store: &QueryEngine,
    expr: &Expr,
    form: Form<'_>,
    start: i64,
    end: i64,
    step: i64,
    settings: Settings,
) -> Result<StepVectors, PromError> {
    let (c, ms) = form.call();
    let mut need = HashMap::new();
    selectors::spans(expr, start, end, (start, end), &settings, &mut need);
    let Some(&(lo, hi, _)) = need.get(&key(&ms.vs)) else {
        return Ok(Vec::new());
    };
    let matchers = selector_matchers(&ms.vs)?;
    let steps: Vec<i64> = (0..)
        .map(|i| start + i * step.max(1))
        .take_while(|&t| t <= end)
        .collect();
    let Some(plan) = store.select_plan(&matchers)? else {
        return Ok(Vec::new());
    };
    settings.check_deadline("query preparation")?;
    // The steps are evaluated in slices, each reading only the windows of its steps: a year
    // of 10-second data is then never in memory at once. A slice's length follows the
    // density the previous one found; with `@` every step has the same window: one slice.
    let fixed = at_ms(&ms.vs.at, start, end).is_some();
    let slice = Slicer {
        store,
        plan: &plan,
        name: c.func.name,
        ms,
        steps: &steps,
        start,
        end,
        settings,
    };
    let kept = AtomicUsize::new(0);
    let mut reduced: Vec<Reduced> = Vec::new();
    let mut at: HashMap<(LabelSet, u32), usize, ahash::RandomState> = HashMap::default();
    let mut i0 = 0;
    let mut k = if fixed {
        steps.len()
    } else {
        (steps.partition_point(|&t| t <= start + FIRST_SLICE_MS)).max(1)
    };
    while i0 < steps.len() {
        let i1 = (i0 + k).min(steps.len());
        let (slo, shi) = if fixed {
            (lo, hi)
        } else {
            (lo + (steps[i0] - start), hi - (end - steps[i1 - 1]))
        };
        let (part, loaded) = slice.read(i0..i1, slo, shi, &kept)?;
        if i0 == 0 && i1 == steps.len() {
            reduced = part;
        } else {
            // Each series' values join those of its earlier slices (a label set read twice
            // in one slice stays two series: the n-th joins the n-th).
            let mut nth: HashMap<LabelSet, u32, ahash::RandomState> = HashMap::default();
            for r in part {
                let n = nth.entry(r.labels.clone()).or_default();
                let key = (r.labels.clone(), *n);
                *n += 1;
                match at.get(&key) {
                    Some(&j) => reduced[j].values.extend(r.values),
                    None => {
                        at.insert(key, reduced.len());
                        reduced.push(r);
                    }
                }
            }
        }
        let done = i1 - i0;
        k = (done.saturating_mul(settings.slice_points) / loaded.max(1))
            .clamp(1, done.saturating_mul(8));
        i0 = i1;
    }
    drop(at);
    match form {
        Form::Aggregate(a, c, _) => aggregate_steps(a, c, reduced, &steps, settings),
        Form::Bare(c, _) => bare_steps(c, reduced, &steps, settings),
    }
}

/// What one slice's reads share.
struct Slicer<'a> {
    store: &'a QueryEngine,
    plan: &'a crate::select::MetricPlan,
    name: &'a str,
    ms: &'a MatrixSelector,
    steps: &'a [i64],
    start: i64,
    end: i64,
    settings: Settings,
}

impl Slicer<'_> {
    /// Reads `[lo, hi]` and reduces each series to its values at `steps[idx]`: the series
    /// reduced (step indices counted from the first step of all) and the points read.
    fn read(
        &self,
        idx: std::ops::Range<usize>,
        lo: i64,
        hi: i64,
        kept: &AtomicUsize,
    ) -> Result<(Vec<Reduced>, usize), PromError> {
        let (store, plan, settings) = (self.store, self.plan, self.settings);
        let first = idx.start as u32;
        let steps = &self.steps[idx];
        // Metrics are read and reduced on every core; each series' values wait, tagged by its
        // labels, for the caller.
        let next_metric = AtomicUsize::new(0);
        // Points held at once: the slice's, as the reader gathers a metric's series before
        // handing them over.
        let loaded = AtomicUsize::new(0);
        let cores = tsgate_common::cores();
        // Fewer metrics than cores: each metric is read as several shares of its series.
        let parts = if plan.metrics.len() < cores {
            store.plan_shares(plan, cores.div_ceil(plan.metrics.len().max(1)))
        } else {
            1
        };
        let units = plan.metrics.len() * parts;
        let workers = cores.min(units).max(1);
        // What this request may put in the row cache, shared by its readers.
        let shape = QueryEngine::read_shape(&plan.metrics, lo, hi);
        let fill = store.rows.as_ref().map(|c| c.fill_for(shape));
        // Set by the first worker to fail, so the others stop instead of reading on.
        let failed = AtomicBool::new(false);
        let too_many = || PromError::too_many_samples("query execution");
        let work = || -> Result<Vec<Reduced>, PromError> {
            let mut mine = Vec::new();
            while !failed.load(Ordering::Relaxed) {
                let i = next_metric.fetch_add(1, Ordering::Relaxed);
                let Some(metric) = plan.metrics.get(i / parts) else {
                    break;
                };
                // Each series of the share reduced once gathered, its points read where they
                // are (in the row cache, when one kept row holds them all).
                store.select_metric_each(
                    plan,
                    metric,
                    lo,
                    hi,
                    (i % parts, parts),
                    fill.as_ref(),
                    &mut |labels, points| {
                        if loaded.fetch_add(points.len(), Ordering::Relaxed) + points.len()
                            > settings.max_samples
                        {
                            return Err(too_many());
                        }
                        if let Some(mut r) = reduce_series(
                            labels, points, self.name, self.ms, steps, self.start, self.end,
                        ) {
                            // The values kept per series and step are held to the same limit as
                            // loaded points: with many more steps than points they could otherwise
                            // outgrow what the step evaluator holds.
                            if kept.fetch_add(r.values.len(), Ordering::Relaxed) + r.values.len()
                                > settings.max_samples
                            {
                                return Err(too_many());
                            }
                            for v in &mut r.values {
                                v.0 += first;
                            }
                            mine.push(r);
                        }
                        Ok(())
                    },
                )?;
                settings.check_deadline("query preparation")?;
            }
            Ok(mine)
        };
        let reduce = || {
            let r = work();
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        };
        let mut reduced: Vec<Reduced> = Vec::new();
        if workers == 1 {
            reduced = reduce()?;
        } else {
            let parts: Vec<Result<Vec<Reduced>, PromError>> =
                tsgate_common::pool::on_workers(workers, |_| reduce());
            for p in parts {
                reduced.extend(p?);
            }
        }
        if let (Some(cache), Some(fill)) = (&store.rows, &fill) {
            cache.done(shape, fill);
        }
        Ok((reduced, loaded.into_inner()))
    }
}

/// The range function's own vector at each step, for the bare form: each series under its
/// output labels (the name dropped but by `last_over_time`), in label order; two series
/// that end with the same labels and both have a value at one step are an error, as in the
/// step evaluator.
fn bare_steps(
    c: &Call,
    reduced: Vec<Reduced>,
    steps: &[i64],
    settings: Settings,
) -> Result<StepVectors, PromError> {
    let keep_name = c.func.name == "last_over_time";
    let mut out_series: Vec<Reduced> = reduced
        .into_iter()
        .map(|r| Reduced {
            labels: if keep_name {
                r.labels
            } else {
                super::eval::drop_name(&r.labels)
            },
            values: r.values,
        })
        .collect();
    out_series.sort_by(|x, y| x.labels.cmp(&y.labels));
    for w in out_series.windows(2) {
        if w[0].labels == w[1].labels && shares_a_step(&w[0].values, &w[1].values) {
            return Err(PromError::Execution(
                "vector cannot contain metrics with the same labelset".into(),
            ));
        }
    }
    let mut next = vec![0usize; out_series.len()];
    let mut out = Vec::with_capacity(steps.len());
    for (i, &t) in steps.iter().enumerate() {
        settings.check_deadline("expression evaluation")?;
        let mut samples = Vec::new();
        for (r, n) in out_series.iter().zip(next.iter_mut()) {
            if let Some(&(at, v)) = r.values.get(*n) {
                if at == i as u32 {
                    *n += 1;
                    samples.push(Sample {
                        labels: r.labels.clone(),
                        v,
                    });
                }
            }
        }
        out.push((t, samples));
    }
    Ok(out)
}

/// Whether two ascending lists of step values have a step in common.
fn shares_a_step(a: &[(u32, f64)], b: &[(u32, f64)]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// The aggregation's vector at each step, from every series' values.
fn aggregate_steps(
    a: &AggregateExpr,
    c: &Call,
    mut reduced: Vec<Reduced>,
    steps: &[i64],
    settings: Settings,
) -> Result<StepVectors, PromError> {
    // The step evaluator meets series in label order: aggregate in that order too.
    reduced.sort_by(|x, y| x.labels.cmp(&y.labels));
    // Each series' group is found once; then every step adds its members' values to their
    // groups in series order and combines each group as `aggregate` would, in the order the
    // groups first appear at that step.
    let op = a.op.to_string();
    let mut groups: Vec<LabelSet> = Vec::new();
    let mut group_at: HashMap<Vec<(String, String)>, usize, ahash::RandomState> =
        HashMap::default();
    // The function's output labels are the series' without its name (`last_over_time` keeps
    // it): only the group key is made of them, not each series' output label set.
    let keep_name = c.func.name == "last_over_time";
    let gid: Vec<usize> = reduced
        .iter()
        .map(|r| {
            let key = aggregate::group_labels_of(&r.labels, &a.modifier, keep_name);
            *group_at.entry(key).or_insert_with_key(|k| {
                groups.push(Arc::new(k.clone()));
                groups.len() - 1
            })
        })
        .collect();
    // The steps in blocks: a block's values are bucketed by step, each series' in turn (read in
    // memory order, where taking one value of every series at every step missed the cache at
    // each), then each step combines its bucket, which holds its values in series order as
    // before. Contiguous runs of blocks go to the workers (this ran on one core after the
    // reads: a quarter of a 24-hour `sum by (dc) (rate(x[5m]))` over 10,000 series).
    let cells = reduced.len().saturating_mul(steps.len());
    let parts = if cells < PARALLEL_CELLS {
        1
    } else {
        tsgate_common::cores().min(steps.len().div_ceil(STEP_BLOCK))
    };
    let per = steps.len().div_ceil(parts.max(1));
    let run = |part: usize| -> Result<StepVectors, PromError> {
        let (lo, hi) = (
            (part * per).min(steps.len()),
            ((part + 1) * per).min(steps.len()),
        );
        let mut next: Vec<usize> = reduced
            .iter()
            .map(|r| r.values.partition_point(|&(at, _)| (at as usize) < lo))
            .collect();
        let mut members: Vec<Vec<f64>> = vec![Vec::new(); groups.len()];
        let mut order: Vec<usize> = Vec::with_capacity(groups.len());
        let mut buckets: Vec<Vec<(u32, f64)>> = vec![Vec::new(); STEP_BLOCK];
        let mut out = Vec::with_capacity(hi - lo);
        let mut b0 = lo;
        while b0 < hi {
            settings.check_deadline("expression evaluation")?;
            let b1 = (b0 + STEP_BLOCK).min(hi);
            for b in &mut buckets {
                b.clear();
            }
            for ((r, n), &g) in reduced.iter().zip(next.iter_mut()).zip(&gid) {
                while let Some(&(at, v)) = r.values.get(*n) {
                    if at as usize >= b1 {
                        break;
                    }
                    *n += 1;
                    // (A series' values rise, one per step: none is before the block.)
                    if let Some(b) = (at as usize).checked_sub(b0) {
                        buckets[b].push((g as u32, v));
                    }
                }
            }
            for (k, bucket) in buckets[..b1 - b0].iter().enumerate() {
                order.clear();
                for &(g, v) in bucket {
                    let g = g as usize;
                    if members[g].is_empty() {
                        order.push(g);
                    }
                    members[g].push(v);
                }
                let mut samples = Vec::with_capacity(order.len());
                for &g in &order {
                    samples.push(Sample {
                        labels: groups[g].clone(),
                        v: aggregate::combine(&op, &members[g], None)?,
                    });
                    members[g].clear();
                }
                out.push((steps[b0 + k], samples));
            }
            b0 = b1;
        }
        Ok(out)
    };
    let mut out = Vec::with_capacity(steps.len());
    for part in tsgate_common::pool::on_workers(parts, run) {
        out.extend(part?);
    }
    Ok(out)
}

/// Steps combined per block (see `aggregate_steps`); small in tests, whose data is.
const STEP_BLOCK: usize = if cfg!(test) { 3 } else { 64 };
/// Series × steps past which an aggregation's steps are combined on every core.
const PARALLEL_CELLS: usize = if cfg!(test) { 16 } else { 1 << 20 };

#[cfg(test)]
mod tests {
    use super::super::selectors::{data_from, MemSeries};
    use super::super::{parse, range_eval, range_query, QueryResult};
    use super::*;
    use proptest::prelude::*;
    use tsgate_schema::column::{DataValue, RawPoint};
    use tsgate_schema::uid_table::UidKind;
    use tsgate_store::RowMutations;

    const T0: i64 = 1_700_000_000_000;

    /// Writes `series` (labels without escapes) as single columns of the `tsdb` table.
    fn store(q: &QueryEngine, series: &[MemSeries]) {
        let mut rows = Vec::new();
        for (labels, points) in series {
            let name = &labels.iter().find(|l| l.0 == "__name__").unwrap().1;
            let mut tsuid = q
                .uids
                .get_or_create(UidKind::Metric, name)
                .unwrap()
                .into_vec();
            let mut tags: Vec<Vec<u8>> = labels
                .iter()
                .filter(|l| l.0 != "__name__")
                .map(|(k, v)| {
                    let mut t = q.uids.get_or_create(UidKind::Tagk, k).unwrap().into_vec();
                    t.extend(q.uids.get_or_create(UidKind::Tagv, v).unwrap().into_vec());
                    t
                })
                .collect();
            tags.sort();
            tsuid.extend(tags.concat());
            for &(t, v) in points {
                let base = (t / 1000 / 3600 * 3600) as u32;
                let p =
                    RawPoint::encode_allow_non_finite(t as u64, base, DataValue::F64(v)).unwrap();
                rows.push(RowMutations::put(
                    q.layout.row_key(&tsuid, base),
                    tsgate_schema::DATA_FAMILY,
                    p.qualifier().to_vec(),
                    p.value_bytes().to_vec(),
                ));
            }
        }
        q.store.mutate("tsdb", rows).unwrap();
    }

    /// Each series' labels and its points with values as bits.
    type Bits = Vec<(LabelSet, Vec<(i64, u64)>)>;

    /// A result with its values as bits (NaN equals NaN), or the error's text.
    fn bits(r: Result<QueryResult, PromError>) -> Result<Bits, String> {
        match r.map_err(|e| e.to_string())? {
            QueryResult::Matrix(m) => Ok(m
                .into_iter()
                .map(|(l, p)| (l, p.into_iter().map(|(t, v)| (t, v.to_bits())).collect()))
                .collect()),
            other => Err(format!("not a matrix: {other:?}")),
        }
    }

    /// Four days of series of metrics `a` and `b` (hosts h0–h2), each its own spacing, gaps and
    /// a stale marker now and then.
    fn series() -> impl Strategy<Value = Vec<MemSeries>> {
        let one = (0usize..2, 0usize..3, 1i64..240, 0i64..3_600, any::<u64>());
        proptest::collection::vec(one, 1..6).prop_map(|specs| {
            let mut out: Vec<MemSeries> = Vec::new();
            for (m, h, every_min, phase_s, seed) in specs {
                let mut labels = vec![
                    ("__name__".to_string(), ["a", "b"][m].to_string()),
                    ("host".to_string(), format!("h{h}")),
                ];
                labels.sort();
                if out.iter().any(|s| s.0 == labels) {
                    continue;
                }
                let mut x = seed | 1;
                let mut pts = Vec::new();
                let mut t = T0 + phase_s * 1000;
                while t < T0 + 4 * 86_400_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match x % 41 {
                        0..=2 => {} // a gap
                        3 => pts.push((t, f64::from_bits(0x7ff0_0000_0000_0002))),
                        r => pts.push((t, (r as f64) * 1.5 + (x % 7) as f64)),
                    }
                    t += every_min * 60_000;
                }
                out.push((labels, pts));
            }
            // In label order, as a store hands series over (the order aggregations meet them).
            out.sort_by(|a, b| a.0.cmp(&b.0));
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// A range function over a selector, alone or aggregated, read in slices of any size
        /// (down to a point per slice) answers what the step evaluator answers over every
        /// point in memory, bit for bit, errors included.
        #[test]
        fn sliced_reads_equal_the_step_evaluator(
            data in series(),
            f in proptest::sample::select(FUNCTIONS),
            agg in proptest::sample::select(vec!["", "sum", "max by (host)", "count", "avg without (host)"]),
            sel in proptest::sample::select(vec!["a", "{__name__=~\"a|b\"}", "b{host=\"h1\"}"]),
            range in proptest::sample::select(vec!["5m", "1h", "6h", "1d", "2d"]),
            offset in proptest::sample::select(vec!["", " offset 1h", " @ 1700100000"]),
            step_s in proptest::sample::select(vec![600i64, 3_600, 25_200, 86_400]),
            from_h in 0i64..72,
            span_h in 0i64..100,
            slice_points in 1usize..3_000,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let q = crate::select::tests::empty_engine(dir.path(), false, 0);
            store(&q, &data);
            let call = format!("{f}({sel}[{range}]{offset})");
            let text = if agg.is_empty() { call } else { format!("{agg} ({call})") };
            let expr = parse(&text).unwrap();
            let (start, step) = (T0 + from_h * 3_600_000, step_s * 1000);
            let end = start + span_h * 3_600_000;
            let settings = Settings { slice_points, ..Settings::default() };
            let fast = bits(range_query(&q, &expr, start, end, step, settings));
            let slow = bits(
                data_from(&expr, &data, start, end, settings)
                    .and_then(|d| range_eval(&d, &expr, start, end, step, settings)),
            );
            prop_assert_eq!(fast, slow, "{}", text);
        }
    }
}
