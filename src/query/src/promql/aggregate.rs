//! Aggregation operators with `by`/`without`: sum, avg, min, max, count, group, stddev,
//! stdvar, topk, bottomk, count_values, quantile.

use super::eval::{Evaluator, Sample, Value};
use super::functions::{fmt_float, quantile};
use super::{LabelSet, PromError};
use promql_parser::parser::{AggregateExpr, LabelModifier};
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) fn group_labels(
    l: &[(String, String)],
    m: &Option<LabelModifier>,
) -> Vec<(String, String)> {
    match m {
        None => Vec::new(),
        Some(LabelModifier::Include(ls)) => l
            .iter()
            .filter(|(k, _)| ls.labels.iter().any(|n| n == k))
            .cloned()
            .collect(),
        Some(LabelModifier::Exclude(ls)) => l
            .iter()
            .filter(|(k, _)| k != "__name__" && !ls.labels.iter().any(|n| n == k))
            .cloned()
            .collect(),
    }
}

/// [`group_labels`] of `l` without its metric name, unless `keep_name`: what a function's
/// output (which drops the name) would group as, without building that output.
pub(crate) fn group_labels_of(
    l: &[(String, String)],
    m: &Option<LabelModifier>,
    keep_name: bool,
) -> Vec<(String, String)> {
    match m {
        Some(LabelModifier::Include(ls)) => {
            // The label `drop_name` leaves out (one of two, should a tag be called `__name__`).
            let dropped = if keep_name {
                None
            } else {
                crate::promql::eval::name_index(l)
            };
            let kept = l
                .iter()
                .enumerate()
                .filter(|&(i, _)| Some(i) != dropped)
                .map(|(_, p)| p);
            kept.filter(|(k, _)| ls.labels.iter().any(|n| n == k))
                .cloned()
                .collect()
        }
        // `without` drops the name either way.
        _ => group_labels(l, m),
    }
}

/// NaN sorts lowest, as Prometheus' value heaps order it.
fn nan_low(a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.partial_cmp(&b).unwrap(),
    }
}

pub fn eval<'a>(ev: &Evaluator<'a>, a: &AggregateExpr, t: i64) -> Result<Value<'a>, PromError> {
    let input = ev.eval_for_aggregation(&a.expr, t)?;
    aggregate(ev, a, input, t)
}

/// Aggregates `input`, the value of `a`'s inner expression at `t`.
pub fn aggregate<'a>(
    ev: &Evaluator<'a>,
    a: &AggregateExpr,
    input: Vec<Sample>,
    t: i64,
) -> Result<Value<'a>, PromError> {
    let op = a.op.to_string();
    let mut groups: Vec<(LabelSet, Vec<Sample>)> = Vec::new();
    // Group label sets are shared per distinct group (see `Evaluator::group_of`).
    let mut index: HashMap<usize, usize, ahash::RandomState> = HashMap::default();
    let agg = a as *const AggregateExpr as usize;
    for s in input {
        let g = ev.group_of(agg, &s.labels, |l| group_labels(l, &a.modifier));
        let i = *index
            .entry(Arc::as_ptr(&g) as *const u8 as usize)
            .or_insert_with(|| {
                groups.push((g, Vec::new()));
                groups.len() - 1
            });
        groups[i].1.push(s);
    }
    let mut out = Vec::with_capacity(groups.len());
    match op.as_str() {
        "topk" | "bottomk" => {
            let k = ev.eval_scalar(
                a.param
                    .as_deref()
                    .ok_or_else(|| PromError::BadData(format!("{op} needs a parameter")))?,
                t,
            )?;
            let k = if k.is_nan() || k < 1.0 {
                0
            } else if k > 1e18 {
                usize::MAX
            } else {
                k as usize
            };
            for (_, mut members) in groups {
                if op == "topk" {
                    members.sort_by(|x, y| nan_low(y.v, x.v));
                } else {
                    members.sort_by(|x, y| match (x.v.is_nan(), y.v.is_nan()) {
                        (false, false) => x.v.partial_cmp(&y.v).unwrap(),
                        _ => nan_low(y.v, x.v),
                    });
                }
                out.extend(members.into_iter().take(k));
            }
            return Ok(Value::Vector(out));
        }
        "count_values" => {
            let name = match ev.eval(
                a.param
                    .as_deref()
                    .ok_or_else(|| PromError::BadData("count_values needs a label name".into()))?,
                t,
            )? {
                Value::Str(s) => s,
                other => {
                    return Err(PromError::Execution(format!(
                        "count_values: expected a string, got {}",
                        other.type_name()
                    )))
                }
            };
            if !crate::promql::functions::valid_label_name(&name) {
                return Err(PromError::Execution(format!("invalid label name {name:?}")));
            }
            let mut counts: Vec<(Vec<(String, String)>, f64)> = Vec::new();
            let mut at: HashMap<Vec<(String, String)>, usize> = HashMap::new();
            for (g, members) in groups {
                for s in members {
                    let mut l = g.to_vec();
                    l.retain(|(k, _)| *k != name);
                    l.push((name.clone(), fmt_float(s.v)));
                    l.sort();
                    let i = *at.entry(l.clone()).or_insert_with(|| {
                        counts.push((l, 0.0));
                        counts.len() - 1
                    });
                    counts[i].1 += 1.0;
                }
            }
            return Ok(Value::Vector(
                counts
                    .into_iter()
                    .map(|(l, v)| Sample {
                        labels: Arc::new(l),
                        v,
                    })
                    .collect(),
            ));
        }
        _ => {}
    }
    let param = match op.as_str() {
        "quantile" => Some(
            ev.eval_scalar(
                a.param
                    .as_deref()
                    .ok_or_else(|| PromError::BadData("quantile needs a parameter".into()))?,
                t,
            )?,
        ),
        _ => None,
    };
    for (g, members) in groups {
        let vals: Vec<f64> = members.iter().map(|s| s.v).collect();
        let v = combine(&op, &vals, param)?;
        out.push(Sample { labels: g, v });
    }
    Ok(Value::Vector(out))
}

/// One group's value for an operator without a vector result: `vals` are its members' values
/// in input order (the order decides the float result, as in Prometheus).
pub(crate) fn combine(op: &str, vals: &[f64], param: Option<f64>) -> Result<f64, PromError> {
    Ok(match op {
        "sum" => vals.iter().sum(),
        "avg" => {
            let mut mean = vals[0];
            let mut n = 1.0;
            for &v in &vals[1..] {
                n += 1.0;
                if mean.is_infinite() {
                    if v.is_infinite() && (mean > 0.0) == (v > 0.0) {
                        continue;
                    }
                    if !v.is_infinite() && !v.is_nan() {
                        continue;
                    }
                }
                mean += v / n - mean / n;
            }
            mean
        }
        "count" => vals.len() as f64,
        "group" => 1.0,
        "min" => vals[1..]
            .iter()
            .fold(vals[0], |m, &v| if m > v || m.is_nan() { v } else { m }),
        "max" => vals[1..]
            .iter()
            .fold(vals[0], |m, &v| if m < v || m.is_nan() { v } else { m }),
        "stddev" | "stdvar" => {
            let (mut n, mut mean, mut acc) = (0.0, 0.0, 0.0);
            for &v in vals {
                n += 1.0;
                let d = v - mean;
                mean += d / n;
                acc += d * (v - mean);
            }
            if op == "stddev" {
                (acc / n).sqrt()
            } else {
                acc / n
            }
        }
        "quantile" => quantile(param.unwrap_or(f64::NAN), vals.to_vec()),
        other => {
            return Err(PromError::Execution(format!(
                "aggregation {other} is not supported"
            )))
        }
    })
}

#[cfg(test)]
mod group_tests {
    use super::*;
    use crate::promql::eval::drop_name;
    use promql_parser::parser::Expr;
    use std::sync::Arc;

    fn modifier(q: &str) -> Option<LabelModifier> {
        match promql_parser::parser::parse(q).unwrap() {
            Expr::Aggregate(a) => a.modifier,
            e => panic!("not an aggregation: {e:?}"),
        }
    }

    #[test]
    fn group_key_of_labels_is_that_of_the_output_without_name() {
        let l: Vec<(String, String)> = [("__name__", "m"), ("dc", "dc1"), ("host", "h")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let l = Arc::new(l);
        for q in [
            "sum(x)",
            "sum by (dc) (x)",
            "sum by (__name__, dc) (x)",
            "sum without (host) (x)",
            "sum without (__name__) (x)",
            "sum by () (x)",
        ] {
            let m = modifier(q);
            assert_eq!(
                group_labels_of(&l, &m, false),
                group_labels(&drop_name(&l), &m),
                "{q}"
            );
            assert_eq!(
                group_labels_of(&l, &m, true),
                group_labels(&l, &m),
                "{q} keeping the name"
            );
        }
        assert_eq!(
            group_labels_of(&l, &modifier("sum by (__name__, dc) (x)"), false),
            vec![("dc".to_string(), "dc1".to_string())]
        );
        // A tag named `__name__` beside the metric's name: one of the two stays, as in the output.
        let mut two = (*l).clone();
        two.push(("__name__".into(), "tag".into()));
        two.sort();
        let two = Arc::new(two);
        for q in ["sum by (__name__, dc) (x)", "sum without (host) (x)"] {
            let m = modifier(q);
            assert_eq!(
                group_labels_of(&two, &m, false),
                group_labels(&drop_name(&two), &m),
                "{q}"
            );
        }
    }
}
