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
    if op == "count_values" {
        return count_values(ev, a, input, t);
    }
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
    if matches!(op.as_str(), "topk" | "bottomk") {
        let k = ev.eval_scalar(
            a.param
                .as_deref()
                .ok_or_else(|| PromError::BadData(format!("{op} needs a parameter")))?,
            t,
        )?;
        // 2.42 refuses a k that does not convert to an int64 (NaN too), whatever the input.
        // ±2^63: Go's math.MinInt64 and math.MaxInt64 as the float64s they compare as.
        if !(i64::MIN as f64..=-(i64::MIN as f64)).contains(&k) {
            return Err(PromError::Execution(format!(
                "Scalar value {} overflows int64",
                go_v(k)
            )));
        }
        if k < 1.0 {
            return Ok(Value::Vector(out));
        }
        let k = k as usize;
        for (_, members) in groups {
            out.extend(go_heap_k(members, k, op == "topk"));
        }
        return Ok(Value::Vector(out));
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

/// `count_values` as 2.42 groups it: each sample's labels get the value label first (set to
/// its value, replacing a label of that name), then are grouped by the modifier, with the
/// value label added to `by` (or to no modifier) but not to `without`: a `without` naming the
/// value label counts every value of a group together, under labels without it.
fn count_values<'a>(
    ev: &Evaluator<'a>,
    a: &AggregateExpr,
    input: Vec<Sample>,
    t: i64,
) -> Result<Value<'a>, PromError> {
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
    for s in input {
        // The sample's labels with the value label set, then grouped.
        let set = s
            .labels
            .iter()
            .filter(|(k, _)| *k != name)
            .cloned()
            .chain(std::iter::once((name.clone(), fmt_float(s.v))));
        let mut l: Vec<(String, String)> = match &a.modifier {
            None => set.filter(|(k, _)| *k == name).collect(),
            Some(LabelModifier::Include(ls)) => set
                .filter(|(k, _)| *k == name || ls.labels.iter().any(|n| n == k))
                .collect(),
            Some(LabelModifier::Exclude(ls)) => set
                .filter(|(k, _)| k != "__name__" && !ls.labels.iter().any(|n| n == k))
                .collect(),
        };
        l.sort();
        let i = *at.entry(l.clone()).or_insert_with(|| {
            counts.push((l, 0.0));
            counts.len() - 1
        });
        counts[i].1 += 1.0;
    }
    Ok(Value::Vector(
        counts
            .into_iter()
            .map(|(l, v)| Sample {
                labels: Arc::new(l),
                v,
            })
            .collect(),
    ))
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(v, 'g', -1, 64)`): `NaN`, `+Inf`, `1e+19`,
/// `123456`, `1.234567e+06`.
fn go_v(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return tsgate_common::numfmt::plain(v);
    }
    let s = tsgate_common::numfmt::Shortest::of(v);
    if (-4..6).contains(&s.exp()) {
        s.plain()
    } else {
        s.exp_form()
    }
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
            // 2.42 starts a group at its first value with nothing accumulated: a lone ±Inf or
            // NaN has a deviation of 0, not the NaN of Inf - Inf.
            let (mut n, mut mean, mut acc) = (1.0, vals[0], 0.0);
            for &v in &vals[1..] {
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

/// `topk`/`bottomk` of one group as 2.42's engine leaves them, ties included: samples in input
/// order go through a Go `container/heap` (min-heap by value for topk, max-heap for bottomk; a
/// NaN is "less" than anything), a full heap of k > 1 pops its top before pushing, and the heap
/// is finally sorted with `sort.Sort(sort.Reverse(heap))`, which for up to 12 elements is Go's
/// insertion sort over the heap's array order (longer results may order ties differently).
fn go_heap_k(members: Vec<Sample>, k: usize, top: bool) -> Vec<Sample> {
    let less = |h: &[Sample], i: usize, j: usize| {
        if h[i].v.is_nan() {
            return true;
        }
        if top {
            h[i].v < h[j].v
        } else {
            h[i].v > h[j].v
        }
    };
    let up = |h: &mut Vec<Sample>, mut j: usize| {
        while j > 0 {
            let i = (j - 1) / 2;
            if !less(h, j, i) {
                break;
            }
            h.swap(i, j);
            j = i;
        }
    };
    let down = |h: &mut Vec<Sample>, mut i: usize, n: usize| loop {
        let j1 = 2 * i + 1;
        if j1 >= n {
            break;
        }
        let mut j = j1;
        if j1 + 1 < n && less(h, j1 + 1, j1) {
            j = j1 + 1;
        }
        if !less(h, j, i) {
            break;
        }
        h.swap(i, j);
        i = j;
    };
    let mut heap: Vec<Sample> = Vec::with_capacity(k.min(members.len()));
    for s in members {
        if heap.is_empty() {
            heap.push(s);
            continue;
        }
        let beats = if top {
            heap[0].v < s.v
        } else {
            heap[0].v > s.v
        };
        if heap.len() < k || beats || heap[0].v.is_nan() {
            if heap.len() == k {
                if k == 1 {
                    heap[0] = s;
                    continue;
                }
                let n = heap.len() - 1;
                heap.swap(0, n);
                down(&mut heap, 0, n);
                heap.pop();
            }
            heap.push(s);
            let last = heap.len() - 1;
            up(&mut heap, last);
        }
    }
    // sort.Reverse: less(j, i); insertion sort as Go's pdqsort does for short slices.
    for i in 1..heap.len() {
        let mut j = i;
        while j > 0 && less(&heap, j - 1, j) {
            heap.swap(j, j - 1);
            j -= 1;
        }
    }
    heap
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(out: &[Sample]) -> String {
        out.iter().map(|s| s.labels[0].1.as_str()).collect()
    }

    fn samples(vals: &[(&str, f64)]) -> Vec<Sample> {
        vals.iter()
            .map(|(n, v)| Sample {
                labels: Arc::new(vec![("i".to_string(), n.to_string())]),
                v: *v,
            })
            .collect()
    }

    /// Ties as 2.42's heap leaves them (traced by hand through Go's container/heap and the
    /// insertion sort of sort.Reverse): not the input order a stable sort would keep.
    #[test]
    fn ties_as_the_go_heap_leaves_them() {
        let s = samples(&[("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 2.0)]);
        assert_eq!(names(&go_heap_k(s, 3, true)), "dcb");
        let s = samples(&[("a", 2.0), ("b", 2.0), ("c", 2.0), ("d", 1.0)]);
        assert_eq!(names(&go_heap_k(s, 3, false)), "dcb");
        // Equal values never displace the heap's top: the first ones stay.
        let s = samples(&[("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 1.0)]);
        assert_eq!(names(&go_heap_k(s, 2, true)), "ab");
        // k = 1 replaces in place; a NaN on top is replaced by anything, even a NaN.
        let s = samples(&[("a", f64::NAN), ("b", f64::NAN), ("c", 0.5), ("d", 0.5)]);
        assert_eq!(names(&go_heap_k(s, 1, true)), "c");
        let s = samples(&[("a", 3.0), ("b", f64::NAN), ("c", 5.0)]);
        assert_eq!(names(&go_heap_k(s, 5, true)), "cab");
        assert_eq!(
            names(&go_heap_k(
                samples(&[("a", 3.0), ("b", f64::NAN), ("c", 5.0)]),
                5,
                false
            )),
            "acb"
        );
    }
}
