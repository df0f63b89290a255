//! The commonest dashboard shape, an aggregation of one range function over one selector
//! (`sum(rate(x[5m]))`, `avg by (dc) (avg_over_time(x[1m]))`), evaluated one metric at a
//! time: as soon as a metric's series are read, each is reduced to the function's value at
//! every step and its points are dropped. Memory then holds one value per series and step
//! instead of every point of every series (a count over 3.6 M points needed ~125 MiB the
//! other way). The answer is the step evaluator's, bit for bit: the function is evaluated by
//! the same code, and each step's values are aggregated in the same order, by labels.

use super::aggregate;
use super::eval::{drop_name, unwrap_parens, Evaluator, Sample, Value};
use super::selectors::{self, key, Data, SeriesData};
use super::{selector_matchers, LabelSet, PromError, Settings};
use crate::query::QueryEngine;
use promql_parser::parser::{AggregateExpr, Call, Expr, MatrixSelector};
use std::collections::HashMap;
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
const OPERATORS: &[&str] = &["sum", "avg", "count", "min", "max", "group", "stddev", "stdvar"];

fn shape(expr: &Expr) -> Option<(&AggregateExpr, &Call, &MatrixSelector)> {
    let Expr::Aggregate(a) = unwrap_parens(expr) else { return None };
    if a.param.is_some() || !OPERATORS.contains(&a.op.to_string().as_str()) {
        return None;
    }
    let Expr::Call(c) = unwrap_parens(&a.expr) else { return None };
    if !FUNCTIONS.contains(&c.func.name) || c.args.args.len() != 1 {
        return None;
    }
    let Expr::MatrixSelector(ms) = unwrap_parens(&c.args.args[0]) else { return None };
    Some((a, c, ms))
}

/// One series reduced: its labels (the sort key), the function's labels, and its value at
/// each step where it has one, as (step index, value).
struct Reduced {
    labels: LabelSet,
    out: LabelSet,
    values: Vec<(u32, f64)>,
}

/// The aggregation's value at each step (`start`, `start + step`, … ≤ `end`, ms), when `expr`
/// has the shape this module evaluates; `None` otherwise.
pub fn eval(store: &QueryEngine, expr: &Expr, start: i64, end: i64, step: i64, settings: Settings) -> Option<Result<Vec<(i64, Vec<Sample>)>, PromError>> {
    let (a, c, ms) = shape(expr)?;
    Some(run(store, expr, (a, c, ms), start, end, step, settings))
}

fn run(
    store: &QueryEngine,
    expr: &Expr,
    (a, c, ms): (&AggregateExpr, &Call, &MatrixSelector),
    start: i64,
    end: i64,
    step: i64,
    settings: Settings,
) -> Result<Vec<(i64, Vec<Sample>)>, PromError> {
    let mut need = HashMap::new();
    selectors::spans(expr, start, end, (start, end), &settings, &mut need);
    let Some(&(lo, hi, _)) = need.get(&key(&ms.vs)) else { return Ok(Vec::new()) };
    let matchers = selector_matchers(&ms.vs)?;
    let steps: Vec<i64> = (0..).map(|i| start + i * step.max(1)).take_while(|&t| t <= end).collect();
    let mut reduced: Vec<Reduced> = Vec::new();
    let mut loaded = 0usize;
    settings.check_deadline("query preparation")?;
    store.select_each(&matchers, lo, hi, &mut |batch| -> Result<(), PromError> {
        for f in batch {
            loaded += f.points.len();
            if loaded > settings.max_samples {
                return Err(PromError::Execution("query processing would load too many samples into memory in query execution".into()));
            }
            let nostale = f.points.iter().any(|p| is_stale_nan(p.1)).then(|| f.points.iter().copied().filter(|p| !is_stale_nan(p.1)).collect());
            let labels = Arc::new(f.labels);
            let series = SeriesData { no_name: drop_name(&labels), labels: labels.clone(), all: f.points, nostale };
            let data: Data = HashMap::from([(key(&ms.vs), vec![series])]);
            let ev = Evaluator::new(&data, start, end, settings);
            let mut r = Reduced { labels, out: Arc::new(Vec::new()), values: Vec::new() };
            for (i, &t) in steps.iter().enumerate() {
                if let Value::Vector(v) = super::functions::eval(&ev, c, t)? {
                    if let Some(s) = v.into_iter().next() {
                        r.out = s.labels;
                        r.values.push((i as u32, s.v));
                    }
                }
            }
            if !r.values.is_empty() {
                reduced.push(r);
            }
        }
        settings.check_deadline("query preparation")
    })?;
    // The step evaluator meets series in label order: aggregate in that order too.
    reduced.sort_by(|x, y| x.labels.cmp(&y.labels));
    let empty = Data::new();
    let ev = Evaluator::new(&empty, start, end, settings);
    let mut next = vec![0usize; reduced.len()];
    let mut out = Vec::with_capacity(steps.len());
    for (i, &t) in steps.iter().enumerate() {
        settings.check_deadline("expression evaluation")?;
        let input: Vec<Sample> = reduced
            .iter()
            .zip(next.iter_mut())
            .filter_map(|(r, n)| {
                let &(at, v) = r.values.get(*n)?;
                (at == i as u32).then(|| {
                    *n += 1;
                    Sample { labels: r.out.clone(), v }
                })
            })
            .collect();
        match aggregate::aggregate(&ev, a, input, t)? {
            Value::Vector(v) => out.push((t, v)),
            other => return Err(PromError::Execution(format!("aggregation yielded a {}", other.type_name()))),
        }
    }
    Ok(out)
}
