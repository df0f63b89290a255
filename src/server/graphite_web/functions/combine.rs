//! Combine: functions that merge several series into one per timestamp (after LCM step
//! normalisation), and the grouping functions built on them.

use super::super::eval::{err, Args, Ctx, EvalError, NodeOrTag, R};
use super::super::parser::{parse, Expr};
use super::super::series::{aggregate, fmt_g, fold_rows, is_agg_func, is_foldable, normalize, percentile, Grid, Series};
use super::alias::node_or_tag_value;
use super::map_values;
use std::collections::BTreeMap;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let simple = |func: &str, fname: &str| -> R<Vec<Series>> {
        let list = a.series_rest(ctx, 0)?;
        Ok(combine(&list, func, fname, ctx.xff).into_iter().collect())
    };
    Some(match name {
        "sumSeries" | "sum" => simple("sum", "sumSeries"),
        "averageSeries" | "avg" => simple("average", "averageSeries"),
        "maxSeries" => simple("max", "maxSeries"),
        "minSeries" => simple("min", "minSeries"),
        "diffSeries" => simple("diff", "diffSeries"),
        "multiplySeries" => simple("multiply", "multiplySeries"),
        "rangeOfSeries" => simple("range", "rangeOfSeries"),
        "stddevSeries" => simple("stddev", "stddevSeries"),
        "countSeries" => count_series(ctx, a),
        "aggregate" => (|| {
            let list = a.series(ctx, 0, "seriesList")?;
            let func = agg_name(&a.string(1, "func")?)?;
            let xff = a.opt_num(2, "xFilesFactor")?.unwrap_or(ctx.xff);
            Ok(combine(&list, &func, &format!("{func}Series"), xff).into_iter().collect())
        })(),
        "group" => a.series_rest(ctx, 0),
        "divideSeries" => divide_series(ctx, a),
        "asPercent" | "pct" => as_percent(ctx, a),
        "groupByNode" => (|| {
            let list = a.series(ctx, 0, "seriesList")?;
            let node = a.get(1, "nodeNum").map(Args::node_or_tag).ok_or_else(|| EvalError("groupByNode: missing nodeNum".into()))?;
            let cb = a.opt_str(2, "callback")?.unwrap_or_else(|| "average".into());
            group_by(ctx, list, &[node], &cb)
        })(),
        "groupByNodes" => (|| {
            let list = a.series(ctx, 0, "seriesList")?;
            let cb = a.string(1, "callback")?;
            let nodes: Vec<NodeOrTag> = a.call.args.iter().skip(2).map(Args::node_or_tag).collect();
            group_by(ctx, list, &nodes, &cb)
        })(),
        "groupByTags" => group_by_tags(ctx, a),
        "applyByNode" => apply_by_node(ctx, a),
        "percentileOfSeries" => (|| {
            let list = a.series(ctx, 0, "seriesList")?;
            let n = a.num(1, "n")?;
            let interp = a.boolean(2, "interpolate", false)?;
            let Some(first) = list.first() else { return Ok(vec![]) };
            let name = format!("percentileOfSeries({},{})", first.path_expr, fmt_g(n));
            let Some(norm) = normalize(&list) else { return Ok(vec![]) };
            let values = norm.rows.iter().map(|r| percentile(&r.iter().flatten().copied().collect::<Vec<_>>(), n, interp)).collect();
            Ok(vec![Series::new(name, norm.start, norm.step, values)])
        })(),
        _ => return None,
    })
}

/// `sumSeries` → `sum` etc.: callbacks may name a combining function or an aggregation.
pub fn agg_name(cb: &str) -> R<String> {
    let base = cb.strip_suffix("Series").unwrap_or(cb);
    let f = match base {
        "avg" | "averageSeries" => "average",
        "rangeOf" => "range",
        "total" => "sum",
        "current" => "last",
        b => b,
    };
    if is_agg_func(f) || f == "average" {
        Ok(f.to_string())
    } else {
        err(format!("Unsupported aggregation function: {cb}"))
    }
}

/// The combiners' name: `func(<sorted unique path expressions>)`.
fn combined_name(fname: &str, list: &[Series]) -> String {
    let mut exprs: Vec<&str> = list.iter().map(|s| s.path_expr.as_str()).collect();
    exprs.sort();
    exprs.dedup();
    format!("{fname}({})", exprs.join(","))
}

/// Tags shared by all inputs (plus `aggregatedBy`); `name` is the result's name when the
/// inputs disagree on it.
fn common_tags(list: &[Series], name: &str, func: &str) -> BTreeMap<String, String> {
    let mut tags = list.first().map(|s| s.tags.clone()).unwrap_or_default();
    tags.retain(|k, v| list.iter().all(|s| s.tags.get(k) == Some(v)));
    tags.entry("name".into()).or_insert_with(|| name.to_string());
    tags.insert("aggregatedBy".into(), func.to_string());
    tags
}

pub fn combine(list: &[Series], func: &str, fname: &str, xff: f64) -> Option<Series> {
    let (start, step, values) = if is_foldable(func) {
        // Sums, means and extremes build up series by series: no row vectors.
        let g = Grid::new(list)?;
        (g.start, g.step, fold_rows(&g, func, xff))
    } else {
        let norm = normalize(list)?;
        let values = norm
            .rows
            .iter()
            .map(|r| {
                let nn = r.iter().filter(|v| v.is_some()).count();
                if !r.is_empty() && (nn as f64) / (r.len() as f64) < xff {
                    return None;
                }
                aggregate(func, r)
            })
            .collect();
        (norm.start, norm.step, values)
    };
    let name = combined_name(fname, list);
    let mut s = Series::new(name.clone(), start, step, values);
    s.tags = common_tags(list, &name, func);
    s.consolidation = list[0].consolidation.clone();
    Some(s)
}

fn count_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series_rest(ctx, 0)?;
    if list.is_empty() {
        let mut s = super::special::constant_line(ctx, 0.0);
        s.rename("countSeries()".into());
        return Ok(vec![s]);
    }
    let mut s = combine(&list, "count", "countSeries", 0.0).expect("non-empty");
    let n = list.len() as f64;
    s.values = s.values.iter().map(|_| Some(n)).collect();
    Ok(vec![s])
}

fn divide_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let dividends = a.series(ctx, 0, "dividendSeriesList")?;
    let divisors = a.series(ctx, 1, "divisorSeries")?;
    if divisors.len() > 1 {
        return err("divideSeries second argument must reference exactly 1 series (got ".to_string() + &divisors.len().to_string() + ")");
    }
    let Some(divisor) = divisors.into_iter().next() else {
        return Ok(dividends
            .into_iter()
            .map(|mut s| {
                s.values = vec![None; s.values.len()];
                let n = format!("divideSeries({},MISSING)", s.name);
                s.rename(n);
                s
            })
            .collect());
    };
    Ok(dividends.into_iter().map(|s| pairwise(&s, &divisor, format!("divideSeries({},{})", s.name, divisor.name), |a, b| (b != 0.0).then(|| a / b))).collect())
}

/// `a op b` per timestamp on the normalised grid; null when either side is.
fn pairwise(a: &Series, b: &Series, name: String, f: impl Fn(f64, f64) -> Option<f64>) -> Series {
    let norm = normalize(&[a.clone(), b.clone()]).expect("two series");
    let values = norm.rows.iter().map(|r| match (r[0], r[1]) {
        (Some(x), Some(y)) => f(x, y),
        _ => None,
    });
    let mut s = Series::new(name.clone(), norm.start, norm.step, values.collect());
    s.tags = a.tags.clone();
    s.consolidation = a.consolidation.clone();
    s
}

fn as_percent(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    if list.is_empty() {
        return Ok(list);
    }
    let pct = |x: f64, t: f64| (t != 0.0).then(|| x * 100.0 / t);
    // With nodes, series and totals are grouped by the key those nodes (or tags) form, and
    // each series is divided by its own group's total.
    let nodes: Vec<NodeOrTag> = a.call.args.iter().skip(2).map(Args::node_or_tag).collect();
    if !nodes.is_empty() {
        let key = |s: &Series| nodes.iter().map(|n| node_or_tag_value(s, n)).collect::<Vec<_>>().join(".");
        let totals_src = match a.get(1, "total") {
            None | Some(Expr::None) => list.clone(),
            Some(e) => ctx.eval(e)?,
        };
        let mut groups: BTreeMap<String, Vec<Series>> = BTreeMap::new();
        for t in totals_src {
            groups.entry(key(&t)).or_default().push(t);
        }
        let totals: BTreeMap<String, Series> = groups.into_iter().filter_map(|(k, g)| combine(&g, "sum", "sumSeries", 0.0).map(|t| (k, t))).collect();
        return Ok(list
            .iter()
            .map(|s| match totals.get(&key(s)) {
                Some(t) => pairwise(s, t, format!("asPercent({},{})", s.name, t.name), pct),
                None => {
                    let mut m = s.clone();
                    m.values = vec![None; m.values.len()];
                    m.rename(format!("asPercent({},MISSING)", s.name));
                    m
                }
            })
            .collect());
    }
    match a.get(1, "total") {
        None | Some(Expr::None) => {
            let total = combine(&list, "sum", "sumSeries", 0.0).expect("non-empty");
            Ok(list.iter().map(|s| pairwise(s, &total, format!("asPercent({},{})", s.name, total.name), pct)).collect())
        }
        Some(Expr::Num(t)) => {
            let t = *t;
            Ok(map_values(list, |s| format!("asPercent({},{})", s.name, fmt_g(t)), move |v| v.and_then(|v| pct(v, t))))
        }
        Some(e) => {
            let mut totals = ctx.eval(e)?;
            if totals.len() == 1 {
                let t = &totals[0];
                return Ok(list.iter().map(|s| pairwise(s, t, format!("asPercent({},{})", s.name, t.name), pct)).collect());
            }
            if totals.len() != list.len() {
                return err("asPercent second argument must be missing, a single digit, reference exactly 1 series or reference the same number of series as the first argument");
            }
            // Pairs matched by sorted name.
            let mut list = list;
            list.sort_by(|x, y| x.name.cmp(&y.name));
            totals.sort_by(|x, y| x.name.cmp(&y.name));
            Ok(list.iter().zip(&totals).map(|(s, t)| pairwise(s, t, format!("asPercent({},{})", s.name, t.name), pct)).collect())
        }
    }
}

/// Groups by the key the nodes/tags form (first-seen order), and applies the callback (an
/// aggregation or a combining function's name) to each group, named by its key.
fn group_by(ctx: &Ctx, list: Vec<Series>, nodes: &[NodeOrTag], cb: &str) -> R<Vec<Series>> {
    let func = agg_name(cb)?;
    let mut groups: Vec<(String, Vec<Series>)> = Vec::new();
    for s in list {
        let key = nodes.iter().map(|n| node_or_tag_value(&s, n)).collect::<Vec<_>>().join(".");
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(s),
            None => groups.push((key, vec![s])),
        }
    }
    let fname = if cb.ends_with("Series") { cb.to_string() } else { format!("{func}Series") };
    Ok(groups
        .into_iter()
        .filter_map(|(key, g)| {
            let mut s = combine(&g, &func, &fname, ctx.xff)?;
            s.name = key;
            Some(s)
        })
        .collect())
}

fn group_by_tags(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let cb = a.string(1, "callback")?;
    let func = agg_name(&cb)?;
    let mut tags: Vec<String> = (2..a.call.args.len()).map(|i| a.string(i, "tags")).collect::<R<_>>()?;
    if tags.is_empty() {
        return err("groupByTags: at least one tag is required");
    }
    tags.sort();
    let names: std::collections::BTreeSet<&str> = list.iter().map(|s| s.tags.get("name").map(String::as_str).unwrap_or("")).collect();
    let mut groups: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    for s in &list {
        let base = if names.len() == 1 { names.iter().next().copied().unwrap_or("").to_string() } else { cb.clone() };
        let key = tags.iter().fold(base, |mut k, t| {
            if t != "name" {
                k.push_str(&format!(";{t}={}", s.tags.get(t).map(String::as_str).unwrap_or("")));
            }
            k
        });
        groups.entry(key).or_default().push(s.clone());
    }
    let fname = if cb.ends_with("Series") { cb.clone() } else { format!("{func}Series") };
    Ok(groups
        .into_iter()
        .filter_map(|(key, g)| {
            let mut s = combine(&g, &func, &fname, ctx.xff)?;
            let (n, t) = super::super::naming::parse_tagged(&key).unwrap_or((key.clone(), vec![]));
            s.tags = t.into_iter().collect();
            s.tags.insert("name".into(), n);
            s.rename(key);
            Some(s)
        })
        .collect())
}

fn apply_by_node(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let node = a.num(1, "nodeNum")? as usize;
    let template = a.string(2, "templateFunction")?;
    let new_name = a.opt_str(3, "newName")?;
    let mut prefixes: Vec<String> = Vec::new();
    for s in &list {
        let nodes: Vec<&str> = s.name.split('.').collect();
        if nodes.len() > node {
            let p = nodes[..=node].join(".");
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for p in prefixes {
        let expr = parse(&template.replace('%', &p)).map_err(EvalError)?;
        for mut s in ctx.eval(&expr)? {
            if let Some(n) = &new_name {
                s.rename(n.replace('%', &p));
            }
            out.push(s);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn sum_average_and_names() {
        // graphite-web test_functions: sumSeries / averageSeries over collection with nulls.
        // A sparse series takes its resolution from its siblings (the step is derived per
        // path expression); nulls are ignored by every combiner but multiplySeries.
        let src = mem(&[("demo.a.cpu", &[Some(1.0), Some(2.0), None, Some(4.0)]), ("demo.b.cpu", &[Some(3.0), None, Some(1.0), Some(4.0)])]);
        let r = eval(&src, "sumSeries(demo.*.cpu)", 4);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "sumSeries(demo.*.cpu)");
        assert_eq!(vals(&r[0]), vec![Some(4.0), Some(2.0), Some(1.0), Some(8.0)]);
        assert_eq!(r[0].tags.get("aggregatedBy").unwrap(), "sum");
        assert_eq!(vals(&eval(&src, "averageSeries(demo.*.cpu)", 4)[0]), vec![Some(2.0), Some(2.0), Some(1.0), Some(4.0)]);
        // safeDiff: nulls dropped first, so a null minuend makes the next value the minuend.
        assert_eq!(vals(&eval(&src, "diffSeries(demo.a.cpu, demo.b.cpu)", 4)[0]), vec![Some(-2.0), Some(2.0), Some(1.0), Some(0.0)]);
        assert_eq!(vals(&eval(&src, "multiplySeries(demo.*.cpu)", 4)[0]), vec![Some(3.0), None, None, Some(16.0)]);
        assert_eq!(vals(&eval(&src, "countSeries(demo.*.cpu)", 4)[0]), vec![Some(2.0); 4]);
        assert_eq!(vals(&eval(&src, "maxSeries(demo.*.cpu)", 4)[0]), vec![Some(3.0), Some(2.0), Some(1.0), Some(4.0)]);
        assert_eq!(vals(&eval(&src, "minSeries(demo.*.cpu)", 4)[0]), vec![Some(1.0), Some(2.0), Some(1.0), Some(4.0)]);
        assert_eq!(eval(&src, "sum(demo.a.cpu, demo.b.cpu)", 4)[0].name, "sumSeries(demo.a.cpu,demo.b.cpu)");
    }

    #[test]
    fn divide_and_percent() {
        let src = mem(&[("a.x", &[Some(1.0), Some(2.0), Some(3.0)]), ("a.y", &[Some(2.0), Some(0.0), None])]);
        let r = eval(&src, "divideSeries(a.x, a.y)", 3);
        assert_eq!(r[0].name, "divideSeries(a.x,a.y)");
        assert_eq!(vals(&r[0]), vec![Some(0.5), None, None]);
        let r = eval(&src, "asPercent(a.*)", 3);
        assert_eq!(r[0].name, "asPercent(a.x,sumSeries(a.*))");
        assert_eq!(vals(&r[0]), vec![Some(100.0 / 3.0), Some(100.0), Some(100.0)]);
        assert_eq!(vals(&eval(&src, "asPercent(a.x, 4)", 3)[0]), vec![Some(25.0), Some(50.0), Some(75.0)]);
        // Grouped by node 1: each host's share of its own total.
        let src = mem(&[("h.a.x", &[Some(1.0)]), ("h.a.y", &[Some(3.0)]), ("h.b.x", &[Some(2.0)])]);
        let r = eval(&src, "asPercent(h.*.*, None, 1)", 1);
        assert_eq!(r.iter().map(|s| s.values[0]).collect::<Vec<_>>(), vec![Some(25.0), Some(75.0), Some(100.0)]);
        assert_eq!(r[0].name, "asPercent(h.a.x,sumSeries(h.*.*))");
    }

    #[test]
    fn grouping() {
        let src = mem(&[("d.web01.cpu", &[Some(1.0)]), ("d.web02.cpu", &[Some(2.0)]), ("d.web01.mem", &[Some(5.0)])]);
        let r = eval(&src, "groupByNode(d.*.*, 2, 'sum')", 1);
        assert_eq!(r.iter().map(|s| (s.name.as_str(), s.values[0])).collect::<Vec<_>>(), vec![("cpu", Some(3.0)), ("mem", Some(5.0))]);
        let r = eval(&src, "groupByNodes(d.*.*, 'sumSeries', 1)", 1);
        assert_eq!(r.iter().map(|s| (s.name.as_str(), s.values[0])).collect::<Vec<_>>(), vec![("web01", Some(6.0)), ("web02", Some(2.0))]);
        let r = eval(&src, "applyByNode(d.*.*, 1, 'sumSeries(%.*)', '%.total')", 1);
        assert_eq!(r.iter().map(|s| (s.name.as_str(), s.values[0])).collect::<Vec<_>>(), vec![("d.web01.total", Some(6.0)), ("d.web02.total", Some(2.0))]);
        let r = eval(&src, "percentileOfSeries(d.*.*, 50)", 1);
        assert_eq!(r[0].values, vec![Some(2.0)]);
    }
}
