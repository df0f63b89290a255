//! Combine: functions that merge several series into one per timestamp (after LCM step
//! normalisation), and the grouping functions built on them.

use super::super::eval::{err, Args, Ctx, EvalError, NodeOrTag, R};
use super::super::parser::{parse, Expr};
use super::super::series::{
    aggregate, fold_rows, is_agg_func, is_foldable, normalize, percentile, py_g, Grid, RowFold,
    Series,
};
use super::alias::node_or_tag_value;
use super::map_values;
use std::collections::BTreeMap;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let simple = |func: &str, fname: &str| -> R<Vec<Series>> {
        if let Some(r) = folded(ctx, a, func, fname) {
            return r;
        }
        let list = a.series_rest(ctx, 0)?;
        Ok(combine(&list, func, fname, ctx.xff()).into_iter().collect())
    };
    Some(match name {
        "sumSeries" | "sum" => simple("sum", "sumSeries"),
        "averageSeries" | "avg" => simple("average", "averageSeries"),
        "maxSeries" => simple("max", "maxSeries"),
        "minSeries" => simple("min", "minSeries"),
        "diffSeries" => simple("diff", "diffSeries"),
        "multiplySeries" => (|| {
            // One series alone comes back as it is, unnamed and untagged by the call.
            if let [only] = &a.call.args[..] {
                let l = ctx.eval(only)?;
                if l.len() == 1 {
                    return Ok(l);
                }
            }
            simple("multiply", "multiplySeries")
        })(),
        "rangeOfSeries" => simple("range", "rangeOfSeries"),
        "stddevSeries" => simple("stddev", "stddevSeries"),
        "countSeries" => count_series(ctx, a),
        "aggregate" => (|| {
            let list = a.series(ctx, 0, "seriesList")?;
            let raw = a.string(1, "func")?;
            let func = agg_name(&raw)?;
            let xff = a.opt_num(2, "xFilesFactor")?.unwrap_or(ctx.xff());
            // Named (and tagged) by the function as the caller wrote it: `avgSeries`,
            // `currentSeries`, `totalSeries`.
            let raw = raw.strip_suffix("Series").unwrap_or(&raw);
            Ok(combine(&list, &func, &format!("{raw}Series"), xff)
                .into_iter()
                .collect())
        })(),
        "group" => a.series_rest(ctx, 0),
        "divideSeries" => divide_series(ctx, a),
        "asPercent" | "pct" => as_percent(ctx, a),
        "groupByNode" => (|| {
            if let (Some(node), Ok(cb)) = (
                a.get(1, "nodeNum").map(Args::node_or_tag),
                a.opt_str(2, "callback"),
            ) {
                let cb = cb.unwrap_or_else(|| "average".into());
                if let Some(r) = group_folded(
                    ctx,
                    a.get(0, "seriesList"),
                    std::slice::from_ref(&node),
                    &cb,
                ) {
                    return r;
                }
            }
            let list = a.series(ctx, 0, "seriesList")?;
            let node = a
                .get(1, "nodeNum")
                .map(Args::node_or_tag)
                .ok_or_else(|| EvalError::Invalid("groupByNode: missing nodeNum".into()))?;
            let cb = a
                .opt_str(2, "callback")?
                .unwrap_or_else(|| "average".into());
            group_by(ctx, list, &[node], &cb)
        })(),
        "groupByNodes" => (|| {
            if let Ok(cb) = a.string(1, "callback") {
                let nodes: Vec<NodeOrTag> =
                    a.call.args.iter().skip(2).map(Args::node_or_tag).collect();
                if let Some(r) = group_folded(ctx, a.get(0, "seriesList"), &nodes, &cb) {
                    return r;
                }
            }
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
            // graphite-web's InputParameterError, whatever the list (its answer: 400).
            if n <= 0.0 {
                return err("The requested percent is required to be greater than 0");
            }
            let Some(first) = list.first() else {
                return Ok(vec![]);
            };
            let name = format!("percentileOfSeries({},{})", first.path_expr, py_g(n));
            let Some(norm) = normalize(&list) else {
                return Ok(vec![]);
            };
            let values = norm
                .rows
                .iter()
                .map(|r| percentile(&r.iter().flatten().copied().collect::<Vec<_>>(), n, interp))
                .collect();
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
    // `first` consolidates (consolidateBy) but is no aggregation function in graphite-web.
    if (is_agg_func(f) && f != "first") || f == "average" {
        Ok(f.to_string())
    } else {
        err(format!("Unsupported aggregation function: {cb}"))
    }
}

/// The combiners' name: `func(<path expressions, each once, in the order they come>)`.
fn combined_name(fname: &str, list: &[Series]) -> String {
    format!(
        "{fname}({})",
        unique_in_order(list.iter().map(|s| s.path_expr.as_str())).join(",")
    )
}

/// A number argument as Python's `str` writes it: the parser keeps no int/float distinction,
/// so an integral value is taken as written as an integer.
fn total_text(t: f64) -> String {
    if t.fract() == 0.0 && t.abs() < 1e16 {
        format!("{}", t as i64)
    } else {
        super::super::series::py_float(t)
    }
}

/// Each string once, where it first comes (graphite-web's formatPathExpressions).
fn unique_in_order<'s>(all: impl Iterator<Item = &'s str>) -> Vec<&'s str> {
    let mut seen = std::collections::HashSet::new();
    all.filter(|e| seen.insert(*e)).collect()
}

/// The `aggregatedBy` tag of a combiner named `fname`: its name without `Series`
/// (`rangeOfSeries` → `rangeOf`, `aggregate(…, 'avg')`'s `avgSeries` → `avg`).
fn aggregated_by(fname: &str) -> &str {
    fname.strip_suffix("Series").unwrap_or(fname)
}

/// Tags shared by all inputs (plus `aggregatedBy`); `name` is the result's name when the
/// inputs disagree on it.
fn common_tags(list: &[Series], name: &str, fname: &str) -> BTreeMap<String, String> {
    let mut tags = list.first().map(|s| s.tags.clone()).unwrap_or_default();
    tags.retain(|k, v| list.iter().all(|s| s.tags.get(k) == Some(v)));
    tags.entry("name".into())
        .or_insert_with(|| name.to_string());
    tags.insert("aggregatedBy".into(), aggregated_by(fname).to_string());
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
                // A row without values is null whatever the function (`count` included).
                if nn == 0 || (nn as f64) / (r.len() as f64) < xff {
                    return None;
                }
                aggregate(func, r)
            })
            .collect();
        (norm.start, norm.step, values)
    };
    let name = combined_name(fname, list);
    let mut s = Series::new(name.clone(), start, step, values);
    s.tags = common_tags(list, &name, fname);
    s.consolidation = list[0].consolidation.clone();
    // The factor it was combined with (graphite-web's `TimeSeries(…, xFilesFactor=…)`).
    s.xff = xff;
    Some(s)
}

/// `func` of a call's one list argument, when that is a stream ([`Ctx::stream`]) and `func`
/// builds up series by series ([`is_foldable`]): each series is folded into its core's rows as
/// soon as it is gridded, so `sumSeries(perSecond(*.*.cpu.*))` never holds its thousands of
/// grids at once. `None` when the call is not of that shape. The answer is `combine`'s, except that
/// from `parallel::MIN_PARALLEL` series on, sums add in groups of series (one per chunk of
/// work), which may change the last bit of a sum.
fn folded(ctx: &Ctx, a: &Args, func: &str, fname: &str) -> Option<R<Vec<Series>>> {
    let [arg] = &a.call.args[..] else { return None };
    if !a.call.kwargs.is_empty() || !is_foldable(func) {
        return None;
    }
    let stream = match ctx.stream(arg).transpose()? {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    Some((|| {
        let parts = ctx.fold_stream(&stream, Combined::default, |p, s| p.add(func, s))?;
        let all = parts.into_iter().fold(Combined::default(), |mut all, p| {
            all.merge(p);
            all
        });
        Ok(all.finish(func, fname, ctx.xff())?.into_iter().collect())
    })())
}

/// `groupByNode(s)` of a list argument that is a stream ([`Ctx::stream`]) with a foldable
/// callback: each series is folded into its group's rows on the core that gridded it (see
/// [`folded`]). Groups come in the order of their first series, as `group_by` gives them.
/// `None` when the call is not of that shape.
fn group_folded(
    ctx: &Ctx,
    arg: Option<&Expr>,
    nodes: &[NodeOrTag],
    cb: &str,
) -> Option<R<Vec<Series>>> {
    // countSeries as a callback is the function (see `group_by`), not the `count` fold.
    let func = agg_name(cb)
        .ok()
        .filter(|f| is_foldable(f) && cb != "countSeries")?;
    let stream = match ctx.stream(arg?).transpose()? {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let fname = group_fname(cb);
    Some((|| {
        let key = |s: &Series| {
            nodes
                .iter()
                .map(|n| node_or_tag_value(s, n))
                .collect::<Vec<_>>()
                .join(".")
        };
        let parts = ctx.fold_stream(&stream, Groups::default, |g, s| g.add(&func, key(&s), s))?;
        let all = parts.into_iter().fold(Groups::default(), |mut all, p| {
            all.merge(p);
            all
        });
        let mut out = Vec::with_capacity(all.groups.len());
        for (key, c) in all.groups {
            if let Some(mut s) = c.finish(&func, &fname, ctx.xff())? {
                s.name = key;
                out.push(s);
            }
        }
        Ok(out)
    })())
}

/// Combiners' states by group key, in the order of each group's first series.
#[derive(Default)]
struct Groups {
    groups: Vec<(String, Combined)>,
    at: std::collections::HashMap<String, usize>,
}

impl Groups {
    fn group(&mut self, key: String) -> &mut Combined {
        let i = *self.at.entry(key.clone()).or_insert_with(|| {
            self.groups.push((key, Combined::default()));
            self.groups.len() - 1
        });
        &mut self.groups[i].1
    }

    fn add(&mut self, func: &str, key: String, s: Series) {
        self.group(key).add(func, s);
    }

    /// Folds in the groups of the series that come after this one's.
    fn merge(&mut self, later: Groups) {
        for (key, c) in later.groups {
            self.group(key).merge(c);
        }
    }
}

/// A combiner's state over the series folded so far (see [`folded`]): what `combine` reads
/// from its whole list.
#[derive(Default)]
struct Combined {
    /// The grid's start and step, and its rows so far.
    rows: Option<(i64, i64, RowFold)>,
    /// How many series were folded.
    width: usize,
    /// Their path expressions, consecutive repeats left out.
    exprs: Vec<String>,
    /// The tags all of them share.
    tags: Option<BTreeMap<String, String>>,
    /// The first one's consolidation.
    consolidation: Option<String>,
    /// A series was off the first one's grid (never for one path expression's series).
    off_grid: bool,
}

impl Combined {
    fn add(&mut self, func: &str, mut s: Series) {
        self.width += 1;
        match &mut self.rows {
            None => {
                let mut f = RowFold::new(func, s.values.len());
                f.add_slice(0, &s.values);
                self.rows = Some((s.start, s.step, f));
            }
            Some((start, step, f))
                if (*start, *step, f.rows()) == (s.start, s.step, s.values.len()) =>
            {
                f.add_slice(0, &s.values)
            }
            Some(_) => self.off_grid = true,
        }
        if self.exprs.last() != Some(&s.path_expr) {
            self.exprs.push(std::mem::take(&mut s.path_expr));
        }
        match &mut self.tags {
            None => self.tags = Some(std::mem::take(&mut s.tags)),
            Some(t) => t.retain(|k, v| s.tags.get(k) == Some(v)),
        }
        if self.consolidation.is_none() {
            self.consolidation = Some(std::mem::take(&mut s.consolidation));
        }
    }

    /// Folds in the state of the series that come after this one's.
    fn merge(&mut self, later: Combined) {
        self.width += later.width;
        self.off_grid |= later.off_grid;
        match (&mut self.rows, later.rows) {
            (_, None) => {}
            (None, r) => self.rows = r,
            (Some((start, step, f)), Some((s, st, g)))
                if (*start, *step, f.rows()) == (s, st, g.rows()) =>
            {
                f.merge(&g)
            }
            (Some(_), Some(_)) => self.off_grid = true,
        }
        self.exprs.extend(later.exprs);
        match (&mut self.tags, later.tags) {
            (_, None) => {}
            (None, t) => self.tags = t,
            (Some(t), Some(u)) => t.retain(|k, v| u.get(k) == Some(v)),
        }
        if self.consolidation.is_none() {
            self.consolidation = later.consolidation;
        }
    }

    fn finish(self, func: &str, fname: &str, xff: f64) -> R<Option<Series>> {
        if self.off_grid {
            return err(format!(
                "{fname}: series of one path expression on different grids"
            ));
        }
        let Some((start, step, rows)) = self.rows else {
            return Ok(None);
        };
        let name = format!(
            "{fname}({})",
            unique_in_order(self.exprs.iter().map(String::as_str)).join(",")
        );
        let mut s = Series::new(
            name.clone(),
            start,
            step,
            rows.finish(func, self.width, xff),
        );
        let mut tags = self.tags.unwrap_or_default();
        tags.entry("name".into()).or_insert(name);
        tags.insert("aggregatedBy".into(), aggregated_by(fname).to_string());
        s.tags = tags;
        s.xff = xff;
        s.consolidation = self.consolidation.unwrap_or_default();
        Ok(Some(s))
    }
}

fn count_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series_rest(ctx, 0)?;
    if list.is_empty() {
        // No argument at all: graphite-web's constantLine(0); arguments that match nothing:
        // nothing.
        if a.call.args.is_empty() {
            let mut s = super::special::constant_line(ctx, 0.0);
            // graphite-web calls constantLine with the integer 0.
            s.rename("0".into());
            s.tags = BTreeMap::from([("name".to_string(), "0".to_string())]);
            s.path_expr = "countSeries()".into();
            return Ok(vec![s]);
        }
        return Ok(vec![]);
    }
    Ok(count_of(&list).into_iter().collect())
}

/// countSeries of a non-empty list: the number of series at every step (nulls included).
fn count_of(list: &[Series]) -> Option<Series> {
    let mut s = combine(list, "count", "countSeries", 0.0)?;
    let n = list.len() as f64;
    s.values = s.values.iter().map(|_| Some(n)).collect();
    // countSeries counts, it does not aggregate: a new series tagged with its name alone.
    let name = s.name.clone();
    s.tags = BTreeMap::from([("name".to_string(), name)]);
    Some(s)
}

fn divide_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let dividends = a.series(ctx, 0, "dividendSeriesList")?;
    let divisors = a.series(ctx, 1, "divisorSeries")?;
    if divisors.len() > 1 {
        return err(
            "divideSeries second argument must reference exactly 1 series (got ".to_string()
                + &divisors.len().to_string()
                + ")",
        );
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
    Ok(dividends
        .into_iter()
        .map(|s| {
            pairwise(
                &s,
                &divisor,
                format!("divideSeries({},{})", s.name, divisor.name),
                |a, b| (b != 0.0).then(|| a / b),
            )
        })
        .collect())
}

/// `a op b` per timestamp on the normalised grid; null when either side is.
fn pairwise(a: &Series, b: &Series, name: String, f: impl Fn(f64, f64) -> Option<f64>) -> Series {
    let norm = normalize(&[a.clone(), b.clone()]).expect("two series");
    let values = norm.rows.iter().map(|r| match (r[0], r[1]) {
        (Some(x), Some(y)) => f(x, y),
        _ => None,
    });
    let mut s = Series::new(name.clone(), norm.start, norm.step, values.collect());
    // A new series: graphite-web tags it with its (function-shaped) name alone.
    s.tags = BTreeMap::from([("name".to_string(), name)]);
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
        let key = |s: &Series| {
            nodes
                .iter()
                .map(|n| node_or_tag_value(s, n))
                .collect::<Vec<_>>()
                .join(".")
        };
        // Groups in the order their first series comes (the series', then the totals').
        let mut keys: Vec<String> = Vec::new();
        let mut meta: std::collections::HashMap<String, Vec<Series>> = Default::default();
        for s in list {
            let k = key(&s);
            if !meta.contains_key(&k) {
                keys.push(k.clone());
            }
            meta.entry(k).or_default().push(s);
        }
        // A group of one is its own total; larger ones are summed.
        let total_of = |g: &[Series]| -> Option<Series> {
            match g {
                [one] => Some(one.clone()),
                _ => combine(g, "sum", "sumSeries", 0.0),
            }
        };
        let mut totals: std::collections::HashMap<String, Series> = Default::default();
        match a.get(1, "total") {
            None | Some(Expr::None) => {
                for k in &keys {
                    if let Some(t) = total_of(&meta[k]) {
                        totals.insert(k.clone(), t);
                    }
                }
            }
            Some(e) => {
                let mut groups: Vec<(String, Vec<Series>)> = Vec::new();
                for t in ctx.eval(e)? {
                    let k = key(&t);
                    match groups.iter_mut().find(|(g, _)| *g == k) {
                        Some((_, g)) => g.push(t),
                        None => {
                            if !keys.contains(&k) {
                                keys.push(k.clone());
                            }
                            groups.push((k, vec![t]));
                        }
                    }
                }
                for (k, g) in groups {
                    if let Some(t) = total_of(&g) {
                        totals.insert(k, t);
                    }
                }
            }
        }
        let missing = |mut m: Series, name: String| {
            m.values = vec![None; m.values.len()];
            m.tags = BTreeMap::from([("name".to_string(), name.clone())]);
            m.rename(name);
            m
        };
        let mut out = Vec::new();
        for k in &keys {
            let Some(members) = meta.get(k) else {
                let t = totals[k].clone();
                let name = format!("asPercent(MISSING,{})", t.name);
                out.push(missing(t, name));
                continue;
            };
            for s in members {
                out.push(match totals.get(k) {
                    Some(t) => pairwise(s, t, format!("asPercent({},{})", s.name, t.name), pct),
                    None => missing(s.clone(), format!("asPercent({},MISSING)", s.name)),
                });
            }
        }
        return Ok(out);
    }
    match a.get(1, "total") {
        None | Some(Expr::None) => {
            let total = combine(&list, "sum", "sumSeries", 0.0).expect("non-empty");
            Ok(list
                .iter()
                .map(|s| {
                    pairwise(
                        s,
                        &total,
                        format!("asPercent({},{})", s.name, total.name),
                        pct,
                    )
                })
                .collect())
        }
        Some(Expr::Num(t)) => {
            let t = *t;
            let mut l = map_values(
                list,
                |s| format!("asPercent({},{})", s.name, total_text(t)),
                move |v| v.and_then(|v| pct(v, t)),
            );
            for s in &mut l {
                s.tags = BTreeMap::from([("name".to_string(), s.name.clone())]);
            }
            Ok(l)
        }
        Some(e) => {
            let mut totals = ctx.eval(e)?;
            if totals.len() == 1 {
                let t = &totals[0];
                return Ok(list
                    .iter()
                    .map(|s| pairwise(s, t, format!("asPercent({},{})", s.name, t.name), pct))
                    .collect());
            }
            if totals.len() != list.len() {
                return err("asPercent second argument must be missing, a single digit, reference exactly 1 series or reference the same number of series as the first argument");
            }
            // Pairs matched by sorted name.
            let mut list = list;
            list.sort_by(|x, y| x.name.cmp(&y.name));
            totals.sort_by(|x, y| x.name.cmp(&y.name));
            Ok(list
                .iter()
                .zip(&totals)
                .map(|(s, t)| pairwise(s, t, format!("asPercent({},{})", s.name, t.name), pct))
                .collect())
        }
    }
}

/// Groups by the key the nodes/tags form (first-seen order), and applies the callback (an
/// aggregation or a combining function's name) to each group, named by its key.
/// The combiner name a grouping's callback gives its groups (`average` → `averageSeries`).
/// What a grouping names (and tags) its series by: a series function by itself, an
/// aggregation as written (`current` gives `currentSeries`, as graphite-web's `aggregate` names it).
/// `avg` and `sum` are series functions too (averageSeries', sumSeries' other names), and
/// graphite-web calls those.
fn group_fname(cb: &str) -> String {
    match cb {
        "avg" => "averageSeries".into(),
        "sum" => "sumSeries".into(),
        cb if cb.ends_with("Series") => cb.to_string(),
        cb => format!("{cb}Series"),
    }
}

fn group_by(ctx: &Ctx, list: Vec<Series>, nodes: &[NodeOrTag], cb: &str) -> R<Vec<Series>> {
    // graphite-web calls a callback that is a series function itself: countSeries counts each
    // group's series at every step (not its values), tagged with its own name alone.
    let count_fn = cb == "countSeries";
    // Series functions graphite-web marks as aggregators whose work is no aggregation of ours:
    // called on each group as they are, their first series kept.
    let series_fn = matches!(cb, "powSeries" | "asPercent");
    let func = if series_fn {
        String::new()
    } else {
        agg_name(cb)?
    };
    let mut groups: Vec<(String, Vec<Series>)> = Vec::new();
    for s in list {
        let key = nodes
            .iter()
            .map(|n| node_or_tag_value(&s, n))
            .collect::<Vec<_>>()
            .join(".");
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(s),
            None => groups.push((key, vec![s])),
        }
    }
    let fname = group_fname(cb);
    let mut out = Vec::with_capacity(groups.len());
    for (key, g) in groups {
        let s = if count_fn {
            count_of(&g)
        } else if series_fn {
            first_of_call(ctx, cb, g)?
        } else if cb == "multiplySeries" && g.len() == 1 {
            // multiplySeries hands a lone series back as it is (untagged by the call).
            g.into_iter().next()
        } else {
            combine(&g, &func, &fname, ctx.xff())
        };
        if let Some(mut s) = s {
            s.name = key;
            out.push(s);
        }
    }
    Ok(out)
}

/// `func(list)`'s first series, `list` given as one series list (as graphite-web calls a
/// callback: `SeriesFunctions[callback](requestContext, group)[0]`).
fn first_of_call(ctx: &Ctx, func: &str, list: Vec<Series>) -> R<Option<Series>> {
    let src = super::more_spec::Fixed::new(list);
    let glob = super::more_spec::Fixed::glob();
    let call = super::super::parser::Call {
        name: func.to_string(),
        args: vec![Expr::Path(glob.to_string())],
        kwargs: vec![],
        text: format!("{func}({glob})"),
    };
    let got = super::more_spec::fixed_ctx(ctx, &src).call(&call)?;
    Ok(got.into_iter().next().map(|s| src.restore(s)))
}

fn group_by_tags(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let cb = a.string(1, "callback")?;
    let func = agg_name(&cb)?;
    let tags: Vec<String> = (2..a.call.args.len())
        .map(|i| a.string(i, "tags"))
        .collect::<R<_>>()?;
    if tags.is_empty() {
        return err("groupByTags: at least one tag is required");
    }
    let by_name = tags.iter().any(|t| t == "name");
    // Without `name` among the tags, every group is named by the series' one shared name, or
    // else by the callback.
    let names: std::collections::BTreeSet<&str> = list
        .iter()
        .map(|s| s.tags.get("name").map(String::as_str).unwrap_or(""))
        .collect();
    let shared = if names.len() == 1 {
        names.iter().next().copied().unwrap_or("").to_string()
    } else {
        cb.clone()
    };
    // Groups in the order of their first series; a key's `tag=value` parts sorted as text.
    let mut groups: Vec<(String, Vec<Series>)> = Vec::new();
    for s in &list {
        let base = if by_name {
            s.tags.get("name").cloned().unwrap_or_default()
        } else {
            shared.clone()
        };
        let mut parts: Vec<String> = tags
            .iter()
            .filter(|t| *t != "name")
            .map(|t| format!("{t}={}", s.tags.get(t).map(String::as_str).unwrap_or("")))
            .collect();
        parts.sort();
        let key = std::iter::once(base)
            .chain(parts)
            .collect::<Vec<_>>()
            .join(";");
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(s.clone()),
            None => groups.push((key, vec![s.clone()])),
        }
    }
    let fname = group_fname(&cb);
    Ok(groups
        .into_iter()
        .filter_map(|(key, g)| {
            let mut s = combine(&g, &func, &fname, ctx.xff())?;
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
    let node = a.num(1, "nodeNum")? as i64;
    let template = a.string(2, "templateFunction")?;
    let new_name = a.opt_str(3, "newName")?;
    // graphite-web: `'.'.join(name.split('.')[:nodeNum + 1])` (a Python slice: a name with
    // fewer nodes gives all of them), each prefix once, in sorted order.
    let prefixes: std::collections::BTreeSet<String> = list
        .iter()
        .map(|s| {
            let nodes: Vec<&str> = s.name.split('.').collect();
            nodes[..super::py_slice_bound(node + 1, nodes.len())].join(".")
        })
        .collect();
    let mut out = Vec::new();
    for p in prefixes {
        let expr = parse(&template.replace('%', &p)).map_err(EvalError::from)?;
        for mut s in ctx.eval(&expr)? {
            if let Some(n) = &new_name {
                s.name = n.replace('%', &p);
            }
            // graphite-web names the result's path expression by the prefix.
            s.path_expr = p.clone();
            out.push(s);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::super::eval::{Ctx, MemSource};
    use super::super::super::parser::parse;
    use super::super::testutil::*;

    /// `target` over `(0, 60*n]` with graphite's xFilesFactor `xff`.
    fn eval_xff(src: &MemSource, target: &str, n: i64, xff: f64) -> Vec<super::Series> {
        let ctx = Ctx {
            source: src,
            from: 0,
            until: 60 * n,
            now: 60 * n,
            xff,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        ctx.eval(&parse(target).unwrap()).unwrap()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// A combiner (or a grouping by node) over a path, or per-series functions of one, folds
        /// each series as it is read; over `group(…)` of the same it combines the whole list. Same series, names,
        /// tags and grid; the same values, sums up to their grouping (a few series, and
        /// extremes, exactly).
        #[test]
        fn folding_as_read_is_combining_the_list(
            series in proptest::collection::vec(proptest::collection::vec(proptest::option::weighted(0.8, -1e3f64..1e3), 6), 0..150),
            func in proptest::sample::select(vec!["sumSeries", "averageSeries", "maxSeries", "minSeries"]),
            wrap in proptest::sample::select(vec!["{}", "perSecond({})", "nonNegativeDerivative({}, 500)", "perSecond(nonNegativeDerivative({}))"]),
            xff in proptest::sample::select(vec![0.0, 0.5, 1.0]),
            groups in 0usize..4,
        ) {
            let names: Vec<String> = (0..series.len()).map(|i| format!("h.g{}.n{i:03}.cpu", i % groups.max(1))).collect();
            let src = mem(&names.iter().map(String::as_str).zip(series.iter().map(Vec::as_slice)).collect::<Vec<_>>());
            let inner = wrap.replace("{}", "h.*.*.cpu");
            // With groups, by node 1 (`groupByNode`, or `groupByNodes` over nodes 0 and 1).
            let target = |list: &str| match groups {
                0 => format!("{func}({list})"),
                1 => format!("groupByNodes({list}, '{func}', 0, 1)"),
                _ => format!("groupByNode({list}, 1, '{func}')"),
            };
            let folded = eval_xff(&src, &target(&inner), 6, xff);
            let listed = eval_xff(&src, &target(&format!("group({inner})")), 6, xff);
            proptest::prop_assert_eq!(folded.len(), listed.len());
            for (f, l) in folded.iter().zip(&listed) {
                proptest::prop_assert_eq!(&f.name, &l.name);
                proptest::prop_assert_eq!(&f.tags, &l.tags);
                proptest::prop_assert_eq!((f.start, f.step, f.end), (l.start, l.step, l.end));
                proptest::prop_assert_eq!(&f.consolidation, &l.consolidation);
                let exact = func == "maxSeries" || func == "minSeries" || series.len() < super::super::super::parallel::MIN_PARALLEL;
                for (a, b) in f.values.iter().zip(&l.values) {
                    match (a, b) {
                        (Some(a), Some(b)) if exact => proptest::prop_assert_eq!(a.to_bits(), b.to_bits()),
                        (Some(a), Some(b)) => proptest::prop_assert!((a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0), "{} vs {}", a, b),
                        (a, b) => proptest::prop_assert_eq!(a, b),
                    }
                }
            }
        }
    }

    /// setXFilesFactor stores its factor in the request context (graphite-web's
    /// `requestContext['xFilesFactor']`): the aggregations after it use it, and their series
    /// carry it.
    #[test]
    fn set_xfiles_factor_holds_for_the_aggregations_after_it() {
        let src = mem(&[
            ("g.a", &[Some(1.0), None]),
            ("g.b", &[Some(2.0), Some(3.0)]),
        ]);
        let r = eval(&src, "sumSeries(g.*)", 2);
        assert_eq!((vals(&r[0]), r[0].xff), (vec![Some(3.0), Some(3.0)], 0.0));
        let r = eval(&src, "sumSeries(setXFilesFactor(g.*, 1))", 2);
        assert_eq!((vals(&r[0]), r[0].xff), (vec![Some(3.0), None], 1.0));
        let r = eval(&src, "aggregate(g.*, 'sum', 0.5)", 2);
        assert_eq!((vals(&r[0]), r[0].xff), (vec![Some(3.0), Some(3.0)], 0.5));
    }

    /// applyByNode's prefixes are Python slices (a short name is its own prefix), each once,
    /// sorted.
    #[test]
    fn apply_by_node_prefixes_are_python_slices() {
        let src = mem(&[
            ("s.z", &[Some(1.0)]),
            ("s.a", &[Some(2.0)]),
            ("s.a.x", &[Some(5.0)]),
        ]);
        let r = eval(&src, "applyByNode(s.*, 2, 'maxSeries(%)', 'n.%')", 1);
        let names: Vec<&str> = r.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["n.s.a", "n.s.z"]);
        assert_eq!(vals(&r[0]), vec![Some(2.0)]);
    }

    #[test]
    fn callbacks_that_are_series_functions() {
        // groupByNode(s) calls a series function marked as an aggregator on each group and
        // keeps its first series: powSeries raises row by row, multiplySeries hands a lone
        // series back untagged.
        let src = mem(&[
            ("g.a.x", &[Some(2.0), Some(3.0), None]),
            ("g.a.y", &[Some(3.0), Some(2.0), Some(1.0)]),
            ("g.b.x", &[Some(5.0), None, Some(1.0)]),
        ]);
        let r = eval(&src, "groupByNode(g.*.*, 1, 'powSeries')", 3);
        assert_eq!(
            r.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            vec!["a", "b"]
        );
        assert_eq!(vals(&r[0]), vec![Some(8.0), Some(9.0), None]);
        assert_eq!(vals(&r[1]), vec![Some(5.0), None, Some(1.0)]);
        // Their path expressions are the calls' own names, as in graphite-web.
        let r = eval(&src, "sumSeries(groupByNode(g.*.*, 1, 'powSeries'))", 3);
        assert_eq!(
            r[0].name,
            "sumSeries(powSeries(g.a.x,g.a.y),powSeries(g.b.x))"
        );
        let r = eval(&src, "groupByNodes(g.*.*, 'multiplySeries', 1)", 3);
        assert_eq!(vals(&r[0]), vec![Some(6.0), Some(6.0), None]);
        assert_eq!(r[0].tags.get("aggregatedBy").unwrap(), "multiply");
        assert_eq!(r[1].name, "b");
        assert_eq!(vals(&r[1]), vec![Some(5.0), None, Some(1.0)]);
        assert_eq!(r[1].tags.get("aggregatedBy"), None);
        // asPercent of the group: its first series as a share of the group's sum.
        let r = eval(&src, "groupByNode(g.*.*, 1, 'asPercent')", 3);
        assert_eq!(vals(&r[0]), vec![Some(40.0), Some(60.0), None]);
    }

    #[test]
    fn sum_average_and_names() {
        // graphite-web test_functions: sumSeries / averageSeries over collection with nulls.
        // A sparse series takes its resolution from its siblings (the step is derived per
        // path expression); nulls are ignored by every combiner but multiplySeries.
        let src = mem(&[
            ("demo.a.cpu", &[Some(1.0), Some(2.0), None, Some(4.0)]),
            ("demo.b.cpu", &[Some(3.0), None, Some(1.0), Some(4.0)]),
        ]);
        let r = eval(&src, "sumSeries(demo.*.cpu)", 4);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "sumSeries(demo.*.cpu)");
        assert_eq!(
            vals(&r[0]),
            vec![Some(4.0), Some(2.0), Some(1.0), Some(8.0)]
        );
        assert_eq!(r[0].tags.get("aggregatedBy").unwrap(), "sum");
        assert_eq!(
            vals(&eval(&src, "averageSeries(demo.*.cpu)", 4)[0]),
            vec![Some(2.0), Some(2.0), Some(1.0), Some(4.0)]
        );
        // safeDiff: nulls dropped first, so a null minuend makes the next value the minuend.
        assert_eq!(
            vals(&eval(&src, "diffSeries(demo.a.cpu, demo.b.cpu)", 4)[0]),
            vec![Some(-2.0), Some(2.0), Some(1.0), Some(0.0)]
        );
        assert_eq!(
            vals(&eval(&src, "multiplySeries(demo.*.cpu)", 4)[0]),
            vec![Some(3.0), None, None, Some(16.0)]
        );
        assert_eq!(
            vals(&eval(&src, "countSeries(demo.*.cpu)", 4)[0]),
            vec![Some(2.0); 4]
        );
        assert_eq!(
            vals(&eval(&src, "maxSeries(demo.*.cpu)", 4)[0]),
            vec![Some(3.0), Some(2.0), Some(1.0), Some(4.0)]
        );
        assert_eq!(
            vals(&eval(&src, "minSeries(demo.*.cpu)", 4)[0]),
            vec![Some(1.0), Some(2.0), Some(1.0), Some(4.0)]
        );
        assert_eq!(
            eval(&src, "sum(demo.a.cpu, demo.b.cpu)", 4)[0].name,
            "sumSeries(demo.a.cpu,demo.b.cpu)"
        );
    }

    #[test]
    fn divide_and_percent() {
        let src = mem(&[
            ("a.x", &[Some(1.0), Some(2.0), Some(3.0)]),
            ("a.y", &[Some(2.0), Some(0.0), None]),
        ]);
        let r = eval(&src, "divideSeries(a.x, a.y)", 3);
        assert_eq!(r[0].name, "divideSeries(a.x,a.y)");
        assert_eq!(vals(&r[0]), vec![Some(0.5), None, None]);
        let r = eval(&src, "asPercent(a.*)", 3);
        assert_eq!(r[0].name, "asPercent(a.x,sumSeries(a.*))");
        assert_eq!(
            vals(&r[0]),
            vec![Some(100.0 / 3.0), Some(100.0), Some(100.0)]
        );
        assert_eq!(
            vals(&eval(&src, "asPercent(a.x, 4)", 3)[0]),
            vec![Some(25.0), Some(50.0), Some(75.0)]
        );
        // Grouped by node 1: each host's share of its own total.
        let src = mem(&[
            ("h.a.x", &[Some(1.0)]),
            ("h.a.y", &[Some(3.0)]),
            ("h.b.x", &[Some(2.0)]),
        ]);
        let r = eval(&src, "asPercent(h.*.*, None, 1)", 1);
        assert_eq!(
            r.iter().map(|s| s.values[0]).collect::<Vec<_>>(),
            vec![Some(25.0), Some(75.0), Some(100.0)]
        );
        assert_eq!(r[0].name, "asPercent(h.a.x,sumSeries(h.*.*))");
    }

    #[test]
    fn grouping() {
        let src = mem(&[
            ("d.web01.cpu", &[Some(1.0)]),
            ("d.web02.cpu", &[Some(2.0)]),
            ("d.web01.mem", &[Some(5.0)]),
        ]);
        let r = eval(&src, "groupByNode(d.*.*, 2, 'sum')", 1);
        assert_eq!(
            r.iter()
                .map(|s| (s.name.as_str(), s.values[0]))
                .collect::<Vec<_>>(),
            vec![("cpu", Some(3.0)), ("mem", Some(5.0))]
        );
        let r = eval(&src, "groupByNodes(d.*.*, 'sumSeries', 1)", 1);
        assert_eq!(
            r.iter()
                .map(|s| (s.name.as_str(), s.values[0]))
                .collect::<Vec<_>>(),
            vec![("web01", Some(6.0)), ("web02", Some(2.0))]
        );
        let r = eval(
            &src,
            "applyByNode(d.*.*, 1, 'sumSeries(%.*)', '%.total')",
            1,
        );
        assert_eq!(
            r.iter()
                .map(|s| (s.name.as_str(), s.values[0]))
                .collect::<Vec<_>>(),
            vec![("d.web01.total", Some(6.0)), ("d.web02.total", Some(2.0))]
        );
        let r = eval(&src, "percentileOfSeries(d.*.*, 50)", 1);
        assert_eq!(r[0].values, vec![Some(2.0)]);
    }

    /// graphite-web runs countSeries as a groupByNode(s) callback: the group's series count at
    /// every step (nulls too), tagged with countSeries' own name only (named, like any
    /// combiner, by the inputs' path expressions).
    #[test]
    fn group_by_count_series_callback_is_the_function() {
        let src = mem(&[
            ("m.a", &[Some(1.0), Some(2.0), Some(3.0), Some(4.0)]),
            ("m.b", &[None, Some(5.0), None, Some(6.0)]),
        ]);
        for t in [
            "groupByNode(m.*,0,'countSeries')",
            "groupByNodes(m.*,'countSeries',0)",
        ] {
            let r = eval(&src, t, 4);
            assert_eq!(r.len(), 1, "{t}");
            assert_eq!(r[0].name, "m");
            assert_eq!(vals(&r[0]), vec![Some(2.0); 4], "{t}");
            assert_eq!(
                r[0].tags,
                std::collections::BTreeMap::from([(
                    "name".to_string(),
                    "countSeries(m.*)".to_string()
                )])
            );
        }
    }
}
