//! The commonest dashboard shape, an aggregation of one range function over one selector
//! (`sum(rate(x[5m]))`, `avg by (dc) (avg_over_time(x[1m]))`), evaluated one metric at a
//! time: as soon as a metric's series are read, each is reduced to the function's value at
//! every step and its points are dropped. Memory then holds one value per series and step
//! instead of every point of every series (a count over 3.6 M points needed ~125 MiB the
//! other way). The answer is the step evaluator's, bit for bit: the function is evaluated by
//! the same code, and each step's values are aggregated in the same order, by labels.

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

fn shape(expr: &Expr) -> Option<(&AggregateExpr, &Call, &MatrixSelector)> {
    let Expr::Aggregate(a) = unwrap_parens(expr) else {
        return None;
    };
    if a.param.is_some() || !OPERATORS.contains(&a.op.to_string().as_str()) {
        return None;
    }
    let Expr::Call(c) = unwrap_parens(&a.expr) else {
        return None;
    };
    if !FUNCTIONS.contains(&c.func.name) || c.args.args.len() != 1 {
        return None;
    }
    let Expr::MatrixSelector(ms) = unwrap_parens(&c.args.args[0]) else {
        return None;
    };
    Some((a, c, ms))
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
    let (a, c, ms) = shape(expr)?;
    Some(run(store, expr, (a, c, ms), start, end, step, settings))
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

fn run(
    store: &QueryEngine,
    expr: &Expr,
    (a, c, ms): (&AggregateExpr, &Call, &MatrixSelector),
    start: i64,
    end: i64,
    step: i64,
    settings: Settings,
) -> Result<StepVectors, PromError> {
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
    // Metrics are read and reduced on every core; each series' values wait, tagged by its
    // labels, for the aggregation below.
    let next_metric = AtomicUsize::new(0);
    let loaded = AtomicUsize::new(0);
    // The values kept per series and step are held to the same limit as loaded points: with
    // many more steps than points they could otherwise outgrow what the step evaluator holds.
    let kept = AtomicUsize::new(0);
    let cores = tsgate_common::cores();
    // Fewer metrics than cores: each metric is read as several shares of its series.
    let parts = if plan.metrics.len() < cores {
        store.plan_shares(&plan, cores.div_ceil(plan.metrics.len().max(1)))
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
    let work = || -> Result<Vec<Reduced>, PromError> {
        let mut mine = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next_metric.fetch_add(1, Ordering::Relaxed);
            let Some(metric) = plan.metrics.get(i / parts) else {
                break;
            };
            // Each series of the share reduced once gathered, its points read where they are
            // (in the row cache, when one kept row holds them all).
            store.select_metric_each(&plan, metric, lo, hi, (i % parts, parts), fill.as_ref(), &mut |labels, points| {
                if loaded.fetch_add(points.len(), Ordering::Relaxed) + points.len() > settings.max_samples {
                    return Err(PromError::Execution("query processing would load too many samples into memory in query execution".into()));
                }
                if let Some(r) = reduce_series(labels, points, c.func.name, ms, &steps, start, end) {
                    if kept.fetch_add(r.values.len(), Ordering::Relaxed) + r.values.len() > settings.max_samples {
                        return Err(PromError::Execution("query processing would load too many samples into memory in query execution".into()));
                    }
                    mine.push(r);
                }
                Ok(())
            })?;
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
    let mut members: Vec<Vec<f64>> = vec![Vec::new(); groups.len()];
    let mut order: Vec<usize> = Vec::with_capacity(groups.len());
    let mut next = vec![0usize; reduced.len()];
    let mut out = Vec::with_capacity(steps.len());
    for (i, &t) in steps.iter().enumerate() {
        settings.check_deadline("expression evaluation")?;
        order.clear();
        for ((r, n), &g) in reduced.iter().zip(next.iter_mut()).zip(&gid) {
            if let Some(&(at, v)) = r.values.get(*n) {
                if at == i as u32 {
                    *n += 1;
                    if members[g].is_empty() {
                        order.push(g);
                    }
                    members[g].push(v);
                }
            }
        }
        let mut samples = Vec::with_capacity(order.len());
        for &g in &order {
            samples.push(Sample {
                labels: groups[g].clone(),
                v: aggregate::combine(&op, &members[g], None)?,
            });
            members[g].clear();
        }
        out.push((t, samples));
    }
    Ok(out)
}
