//! Combine functions of graphite-web 1.1.10 beyond the first set: pairwise list combiners
//! (`sumSeriesLists`…, `divideSeriesLists`), the `*WithWildcards` family, `mapSeries` /
//! `reduceSeries`, `powSeries` and `weightedAverage`, with graphite-web's names and tags.

use super::super::eval::{err, Args, Ctx, EvalError, NodeOrTag, R};
use super::super::parser::{Call, Expr};
use super::super::series::{normalize, Series};
use super::alias::node_or_tag_value;
use super::combine::{agg_name, combine};
use super::finite;
use super::more_spec::{fixed_ctx, validate, Fixed};

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let run = || -> R<Vec<Series>> {
        validate(a)?;
        match name {
            "aggregateSeriesLists" => {
                let func = a.string(2, "func")?;
                let xff = a.opt_num(3, "xFilesFactor")?;
                series_lists(ctx, a, &func, xff)
            }
            "sumSeriesLists" => series_lists(ctx, a, "sum", None),
            "diffSeriesLists" => series_lists(ctx, a, "diff", None),
            "multiplySeriesLists" => series_lists(ctx, a, "multiply", None),
            "divideSeriesLists" => divide_series_lists(ctx, a),
            "aggregateWithWildcards" => {
                let func = a.string(1, "func")?;
                with_wildcards(ctx, a, &func, 2)
            }
            "sumSeriesWithWildcards" => with_wildcards(ctx, a, "sum", 1),
            "averageSeriesWithWildcards" => with_wildcards(ctx, a, "average", 1),
            "multiplySeriesWithWildcards" => with_wildcards(ctx, a, "multiply", 1),
            "mapSeries" | "map" => map_series(ctx, a),
            "reduceSeries" | "reduce" => reduce_series(ctx, a),
            "powSeries" => pow_series(ctx, a),
            "weightedAverage" => weighted_average(ctx, a),
            _ => unreachable!(),
        }
    };
    match name {
        "aggregateSeriesLists"
        | "sumSeriesLists"
        | "diffSeriesLists"
        | "multiplySeriesLists"
        | "divideSeriesLists"
        | "aggregateWithWildcards"
        | "sumSeriesWithWildcards"
        | "averageSeriesWithWildcards"
        | "multiplySeriesWithWildcards"
        | "mapSeries"
        | "map"
        | "reduceSeries"
        | "reduce"
        | "powSeries"
        | "weightedAverage" => Some(run()),
        _ => None,
    }
}

/// graphite-web's `aggregate(requestContext, seriesList, func, xFilesFactor)`: the result is
/// named `<func>Series(<sorted path expressions>)` with the function as given (a `…Series`
/// suffix dropped), tagged with the inputs' common tags and `aggregatedBy`.
pub fn aggregate_as(list: &[Series], raw: &str, xff: f64) -> R<Option<Series>> {
    let func = raw.strip_suffix("Series").unwrap_or(raw);
    let f = agg_name(func)?;
    let Some(mut s) = combine(list, &f, &format!("{func}Series"), xff) else {
        return Ok(None);
    };
    s.tags.insert("aggregatedBy".into(), func.to_string());
    // graphite-web's `xff()` refuses a row without a value whatever the function: `count`
    // and `avg_zero` of nothing are null, not 0.
    if matches!(f.as_str(), "count" | "avg_zero") {
        if let Some(norm) = normalize(list) {
            for (v, row) in s.values.iter_mut().zip(&norm.rows) {
                if row.iter().all(Option::is_none) {
                    *v = None;
                }
            }
        }
    }
    Ok(Some(s))
}

/// `aggregateSeriesLists` and its `sum`/`diff`/`multiply` forms: list1[i] with list2[i].
fn series_lists(ctx: &Ctx, a: &Args, func: &str, xff: Option<f64>) -> R<Vec<Series>> {
    let first = a.series(ctx, 0, "seriesListFirstPos")?;
    let second = a.series(ctx, 1, "seriesListSecondPos")?;
    if first.len() != second.len() {
        return err("seriesListFirstPos and seriesListSecondPos argument must have equal length");
    }
    let mut out = Vec::new();
    for (x, y) in first.iter().zip(&second) {
        let Some(mut s) = aggregate_as(&[x.clone(), y.clone()], func, xff.unwrap_or(ctx.xff()))?
        else {
            continue;
        };
        // The combined name, with the two series' names in their order.
        let prefix = s.name[..s.name.find("Series(").unwrap_or(0)].to_string();
        s.name = format!("{prefix}Series({},{})", x.name, y.name);
        out.push(s);
    }
    Ok(out)
}

fn divide_series_lists(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let dividends = a.series(ctx, 0, "dividendSeriesList")?;
    let divisors = a.series(ctx, 1, "divisorSeriesList")?;
    if dividends.len() != divisors.len() {
        return err("dividendSeriesList and divisorSeriesList argument must have equal length");
    }
    Ok(dividends
        .iter()
        .zip(&divisors)
        .filter_map(|(x, y)| {
            let name = format!("divideSeries({},{})", x.name, y.name);
            let norm = normalize(&[x.clone(), y.clone()])?;
            let values = norm
                .rows
                .iter()
                .map(|r| match (r[0], r[1]) {
                    (Some(p), Some(q)) if q != 0.0 => Some(p / q),
                    _ => None,
                })
                .collect();
            // A new TimeSeries: its only tag is its name.
            let mut s = Series::new(name, norm.start, norm.step, values);
            s.xff = ctx.xff();
            Some(s)
        })
        .collect())
}

/// Node indices of the arguments from `from` on.
fn positions(a: &Args, from: usize) -> R<Vec<i64>> {
    a.call
        .args
        .iter()
        .skip(from)
        .map(|e| match e {
            Expr::Num(n) => Ok(*n as i64),
            Expr::Str(s) => s
                .trim()
                .parse()
                .map_err(|_| EvalError::Invalid(format!("{}: bad position {s:?}", a.call.name))),
            other => err(format!("{}: bad position {other:?}", a.call.name)),
        })
        .collect()
}

/// `aggregateWithWildcards`: series grouped by their name without the nodes at `positions`
/// (first-seen order), each group aggregated and named by that key.
fn with_wildcards(ctx: &Ctx, a: &Args, func: &str, from: usize) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let pos = positions(a, from)?;
    let mut groups: Vec<(String, Vec<Series>)> = Vec::new();
    for s in list {
        let key = s
            .name
            .split('.')
            .enumerate()
            .filter(|(i, _)| !pos.contains(&(*i as i64)))
            .map(|(_, n)| n)
            .collect::<Vec<_>>()
            .join(".");
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(s),
            None => groups.push((key, vec![s])),
        }
    }
    let mut out = Vec::new();
    for (key, g) in groups {
        if let Some(mut s) = aggregate_as(&g, func, ctx.xff())? {
            s.name = key;
            out.push(s);
        }
    }
    Ok(out)
}

fn nodes_of(a: &Args, from: usize) -> Vec<NodeOrTag> {
    a.call
        .args
        .iter()
        .skip(from)
        .map(Args::node_or_tag)
        .collect()
}

/// graphite-web's `aggKey`: the nodes' (or tags') values joined with dots.
fn agg_key(s: &Series, nodes: &[NodeOrTag]) -> String {
    nodes
        .iter()
        .map(|n| node_or_tag_value(s, n))
        .collect::<Vec<_>>()
        .join(".")
}

/// `mapSeries`: the series grouped by the key their map nodes form, groups in first-seen
/// order. graphite-web returns a list of lists (for `reduceSeries`); flattened, as tsgate's
/// lists are, it is the series in group order.
fn map_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let nodes = nodes_of(a, 1);
    let mut groups: Vec<(String, Vec<Series>)> = Vec::new();
    for s in list {
        let key = agg_key(&s, &nodes);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(s),
            None => groups.push((key, vec![s])),
        }
    }
    Ok(groups.into_iter().flat_map(|(_, g)| g).collect())
}

/// Python's `list[i]` for a possibly negative index.
fn py_index<T>(v: &[T], i: i64) -> Option<&T> {
    let j = if i < 0 { v.len() as i64 + i } else { i };
    (j >= 0).then(|| v.get(j as usize)).flatten()
}

/// `reduceSeries`: series grouped by their name up to `reduceNode` (the key
/// `<prefix>.reduce.<function>`); in each group, the series whose `reduceNode` node is each
/// matcher become the arguments of `reduceFunction`, in the matchers' order.
fn reduce_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesLists")?;
    let func = a.string(1, "reduceFunction")?;
    let node = a.num(2, "reduceNode")? as i64;
    let matchers: Vec<String> = (3..a.call.args.len())
        .map(|i| a.string(i, "reduceMatchers"))
        .collect::<R<_>>()?;
    let mut groups: Vec<(String, Vec<Option<Series>>)> = Vec::new();
    for s in list {
        let nodes: Vec<&str> = s.name.split('.').collect();
        let Some(n) = py_index(&nodes, node) else {
            return err(format!("reduceSeries: {} has no node {node}", s.name));
        };
        let Some(i) = matchers.iter().position(|m| m == n) else {
            continue;
        };
        let upto = if node < 0 {
            (nodes.len() as i64 + node).max(0) as usize
        } else {
            (node as usize).min(nodes.len())
        };
        let key = format!("{}.reduce.{func}", nodes[..upto].join("."));
        let slot = match groups.iter().position(|(k, _)| *k == key) {
            Some(p) => p,
            None => {
                groups.push((key, vec![None; matchers.len()]));
                groups.len() - 1
            }
        };
        groups[slot].1[i] = Some(s);
    }
    let mut out = Vec::new();
    for (key, members) in groups {
        let Some(members) = members.into_iter().collect::<Option<Vec<Series>>>() else {
            return err(format!(
                "reduceSeries: {key} lacks a series for one of the matchers {matchers:?}"
            ));
        };
        // A combiner names its result by its inputs' path expressions (graphite-web passes
        // it the series themselves): combined here, on the series as they are.
        if let Some((func_agg, fname)) = simple_combiner(&func) {
            if let Some(mut s) = combine(&members, func_agg, fname, ctx.xff()) {
                s.name = key;
                out.push(s);
            }
            continue;
        }
        let n = members.len();
        let src = Fixed::new(members);
        let args: Vec<Expr> = (0..n).map(|i| Expr::Path(Fixed::path(i))).collect();
        let text = format!(
            "{func}({})",
            (0..n).map(Fixed::path).collect::<Vec<_>>().join(",")
        );
        let c = Call {
            name: func.clone(),
            args,
            kwargs: vec![],
            text,
        };
        let got = fixed_ctx(ctx, &src).call(&c)?;
        if let Some(first) = got.into_iter().next() {
            let mut s = src.restore(first);
            s.name = key;
            out.push(s);
        }
    }
    Ok(out)
}

/// The combiners `reduceSeries` applies to its series directly: `(aggregation, name)`.
fn simple_combiner(f: &str) -> Option<(&'static str, &'static str)> {
    Some(match f {
        "sumSeries" | "sum" => ("sum", "sumSeries"),
        "averageSeries" | "avg" => ("average", "averageSeries"),
        "maxSeries" => ("max", "maxSeries"),
        "minSeries" => ("min", "minSeries"),
        "diffSeries" => ("diff", "diffSeries"),
        "multiplySeries" => ("multiply", "multiplySeries"),
        "rangeOfSeries" => ("range", "rangeOfSeries"),
        "stddevSeries" => ("stddev", "stddevSeries"),
        _ => return None,
    })
}

fn pow_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series_rest(ctx, 0)?;
    let Some(norm) = normalize(&list) else {
        return Ok(vec![]);
    };
    let name = format!(
        "powSeries({})",
        list.iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    let values = norm
        .rows
        .iter()
        .map(|r| {
            let mut it = r.iter();
            let first = *it.next()?;
            it.fold(first, |acc, e| match (acc, e) {
                (Some(x), Some(y)) => finite(x.powf(*y)),
                _ => None,
            })
        })
        .collect();
    let mut s = Series::new(name, norm.start, norm.step, values);
    s.xff = ctx.xff();
    Ok(vec![s])
}

fn weighted_average(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let avgs = a.series(ctx, 0, "seriesListAvg")?;
    let weights = a.series(ctx, 1, "seriesListWeight")?;
    if avgs.len() != weights.len() {
        return err(format!("weightedAverage must receive the same number of series for seriesListAvg and seriesListWeight but received respectively {} and {}", avgs.len(), weights.len()));
    }
    let nodes = nodes_of(a, 2);
    // Keyed pairs, keys in first-seen order; a later series of a key replaces an earlier one.
    let mut keyed: Vec<(String, Option<usize>, Option<usize>)> = Vec::new();
    let mut put = |key: String, avg: Option<usize>, weight: Option<usize>| match keyed
        .iter_mut()
        .find(|(k, _, _)| *k == key)
    {
        Some(e) => {
            if avg.is_some() {
                e.1 = avg;
            }
            if weight.is_some() {
                e.2 = weight;
            }
        }
        None => keyed.push((key, avg, weight)),
    };
    for i in 0..avgs.len() {
        put(agg_key(&avgs[i], &nodes), Some(i), None);
        put(agg_key(&weights[i], &nodes), None, Some(i));
    }
    let products: Vec<Series> = keyed
        .iter()
        .filter_map(|(_, av, w)| {
            let (av, w) = (&avgs[(*av)?], &weights[(*w)?]);
            let n = av.values.len().max(w.values.len());
            let values = (0..n)
                .map(|i| {
                    match (
                        av.values.get(i).copied().flatten(),
                        w.values.get(i).copied().flatten(),
                    ) {
                        (Some(x), Some(y)) => Some(x * y),
                        _ => None,
                    }
                })
                .collect();
            let mut p = Series::new(
                format!("product({},{})", w.name, av.name),
                av.start,
                av.step,
                values,
            );
            p.xff = ctx.xff();
            Some(p)
        })
        .collect();
    if products.is_empty() {
        return Ok(vec![]);
    }
    let (Some(sum_p), Some(sum_w)) = (
        combine(&products, "sum", "sumSeries", ctx.xff()),
        combine(&weights, "sum", "sumSeries", ctx.xff()),
    ) else {
        return Ok(vec![]);
    };
    let n = sum_p.values.len().max(sum_w.values.len());
    let values = (0..n)
        .map(|i| {
            match (
                sum_p.values.get(i).copied().flatten(),
                sum_w.values.get(i).copied().flatten(),
            ) {
                (Some(p), Some(w)) if w != 0.0 => Some(p / w),
                _ => None,
            }
        })
        .collect();
    let exprs = |l: &[Series]| {
        let mut v: Vec<&str> = l.iter().map(|s| s.path_expr.as_str()).collect();
        v.sort();
        v.dedup();
        v.join(",")
    };
    let node_text: Vec<String> = nodes
        .iter()
        .map(|n| match n {
            NodeOrTag::Node(i) => i.to_string(),
            NodeOrTag::Tag(t) => t.clone(),
        })
        .collect();
    let name = format!(
        "weightedAverage({}, {}, {})",
        exprs(&avgs),
        exprs(&weights),
        node_text.join(",")
    );
    let mut s = Series::new(name, sum_p.start, sum_p.step, values);
    s.xff = ctx.xff();
    Ok(vec![s])
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    const A: &[Option<f64>] = &[Some(1.0), Some(2.0), None, Some(4.0)];
    const B: &[Option<f64>] = &[Some(10.0), None, Some(30.0), Some(40.0)];
    const C: &[Option<f64>] = &[Some(2.0), Some(2.0), Some(0.0), Some(0.5)];

    fn src() -> crate::graphite::eval::MemSource {
        mem(&[
            ("x.a.one", A),
            ("x.b.one", B),
            ("y.a.one", C),
            ("y.b.one", B),
        ])
    }

    #[test]
    fn lists_pair_by_position() {
        let r = eval(&src(), "sumSeriesLists(x.*.one,y.*.one)", 4);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].name, "sumSeries(x.a.one,y.a.one)");
        assert_eq!(
            vals(&r[0]),
            vec![Some(3.0), Some(4.0), Some(0.0), Some(4.5)]
        );
        assert_eq!(r[0].tags["aggregatedBy"], "sum");
        let r = eval(&src(), "divideSeriesLists(x.*.one,y.*.one)", 4);
        assert_eq!(r[0].name, "divideSeries(x.a.one,y.a.one)");
        assert_eq!(vals(&r[0]), vec![Some(0.5), Some(1.0), None, Some(8.0)]);
        assert_eq!(r[0].tags.len(), 1);
        let r = eval(
            &src(),
            "aggregateSeriesLists(x.*.one,y.*.one,'maxSeries')",
            4,
        );
        assert_eq!(r[1].name, "maxSeries(x.b.one,y.b.one)");
        assert_eq!(r[1].tags["aggregatedBy"], "max");
        let e = crate::graphite::parser::parse("diffSeriesLists(x.*.one,y.a.one)").unwrap();
        let s = src();
        let ctx = crate::graphite::eval::Ctx {
            source: &s,
            from: 0,
            until: 240,
            now: 240,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        assert!(ctx
            .eval(&e)
            .unwrap_err()
            .to_string()
            .contains("must have equal length"));
    }

    #[test]
    fn wildcards_group_by_the_other_nodes() {
        let r = eval(&src(), "sumSeriesWithWildcards(*.*.one,1)", 4);
        let names: Vec<&str> = r.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["x.one", "y.one"]);
        assert_eq!(
            vals(&r[0]),
            vec![Some(11.0), Some(2.0), Some(30.0), Some(44.0)]
        );
        // The path expression stays the aggregate's (what an outer combiner names).
        assert_eq!(r[0].path_expr, "sumSeries(*.*.one)");
        let r = eval(&src(), "multiplySeriesWithWildcards(*.*.one,0,1)", 4);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "one");
        assert_eq!(vals(&r[0])[0], Some(200.0));
        assert_eq!(vals(&r[0])[1], None);
        let r = eval(&src(), "aggregateWithWildcards(*.*.one,'avg',0)", 4);
        assert_eq!(r[0].name, "a.one");
        assert_eq!(r[0].tags["aggregatedBy"], "avg");
        assert_eq!(
            vals(&r[0]),
            vec![Some(1.5), Some(2.0), Some(0.0), Some(2.25)]
        );
    }

    #[test]
    fn map_and_reduce() {
        let r = eval(&src(), "mapSeries(*.*.one,1)", 4);
        let names: Vec<&str> = r.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["x.a.one", "y.a.one", "x.b.one", "y.b.one"]);
        let r = eval(
            &src(),
            "reduceSeries(mapSeries(*.*.one,1),'divideSeries',0,'x','y')",
            4,
        );
        // Every series has the key ".reduce.divideSeries" (nothing before node 0): one group,
        // whose x and y slots the last such series fill (x.b.one and y.b.one).
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, ".reduce.divideSeries");
        assert_eq!(vals(&r[0]), vec![Some(1.0), None, Some(1.0), Some(1.0)]);
        let r = eval(&src(), "reduce(*.*.one,'asPercent',1,'a','b')", 4);
        assert_eq!(r[0].name, "x.reduce.asPercent");
        assert_eq!(vals(&r[0]), vec![Some(10.0), None, None, Some(10.0)]);
        assert!(r[0].path_expr.contains("x.a.one"), "{}", r[0].path_expr);
    }

    #[test]
    fn pow_and_weighted_average() {
        let r = eval(&src(), "powSeries(y.a.one,x.a.one)", 4);
        assert_eq!(r[0].name, "powSeries(y.a.one,x.a.one)");
        assert_eq!(vals(&r[0]), vec![Some(2.0), Some(4.0), None, Some(0.0625)]);
        // Keyed by node 1: a pairs x.a.one (1,2,-,4) with weight y.a.one (2,2,0,.5), b pairs
        // x.b.one with weight y.b.one (both 10,-,30,40).
        let r = eval(&src(), "weightedAverage(x.*.one,y.*.one,1)", 4);
        assert_eq!(r[0].name, "weightedAverage(x.*.one, y.*.one, 1)");
        // a: 1*2 + 10*10 over 2+10; b: 2*2 + - over 2; c: -*0 + 30*30 over 0+30; d: 4*.5+40*40 over 40.5
        assert_eq!(
            vals(&r[0]),
            vec![
                Some(102.0 / 12.0),
                Some(2.0),
                Some(30.0),
                Some(1602.0 / 40.5)
            ]
        );
    }
}
