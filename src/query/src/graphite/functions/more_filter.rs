//! Filter Series functions of graphite-web 1.1.10 beyond the first set:
//! `averageOutsidePercentile`, `filterSeries`, `removeBetweenPercentile`, `useSeriesAbove`.

use super::super::eval::{err, Args, Ctx, R};
use super::super::parser::parse;
use super::super::series::{aggregate, percentile, Series};
use super::alias::python_replacement;
use super::combine::agg_name;
use super::filter::python_regex;
use super::more_spec::{validate, OPERATORS};

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let known = matches!(
        name,
        "averageOutsidePercentile" | "filterSeries" | "removeBetweenPercentile" | "useSeriesAbove"
    );
    if !known {
        return None;
    }
    Some((|| {
        validate(a)?;
        match name {
            "averageOutsidePercentile" => average_outside(ctx, a),
            "filterSeries" => filter_series(ctx, a),
            "removeBetweenPercentile" => remove_between(ctx, a),
            "useSeriesAbove" => use_series_above(ctx, a),
            _ => unreachable!(),
        }
    })())
}

/// graphite-web's `_getPercentile` of values with nulls (left out).
fn gw_percentile(points: &[Option<f64>], n: f64) -> Option<f64> {
    let vals: Vec<f64> = points.iter().flatten().copied().collect();
    percentile(&vals, n, false)
}

fn avg(s: &Series) -> Option<f64> {
    aggregate("average", &s.values)
}

fn average_outside(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let mut n = a.num(1, "n")?;
    if n < 50.0 {
        n = 100.0 - n;
    }
    let avgs: Vec<Option<f64>> = list.iter().map(avg).collect();
    let (Some(low), Some(high)) = (gw_percentile(&avgs, 100.0 - n), gw_percentile(&avgs, n)) else {
        return Ok(vec![]);
    };
    let mut out = Vec::new();
    for (s, v) in list.into_iter().zip(avgs) {
        // Python 3 cannot order None against a number: graphite-web fails there.
        let Some(v) = v else {
            return err(format!(
                "averageOutsidePercentile: {} has no values to average",
                s.name
            ));
        };
        if !(low < v && v < high) {
            out.push(s);
        }
    }
    Ok(out)
}

fn filter_series(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let func = agg_name(&a.string(1, "func")?)?;
    let op = a.string(2, "operator")?;
    if !OPERATORS.contains(&op.as_str()) {
        return err(format!("Unsupported operator: {op}"));
    }
    let t = a.num(3, "threshold")?;
    let list = a.series(ctx, 0, "seriesList")?;
    Ok(list
        .into_iter()
        .filter(|s| {
            let v = aggregate(&func, &s.values);
            match op.as_str() {
                "=" => v == Some(t),
                "!=" => v != Some(t),
                ">" => v.is_some_and(|v| v > t),
                ">=" => v.is_some_and(|v| v >= t),
                "<" => v.is_none_or(|v| v < t),
                _ => v.is_none_or(|v| v <= t),
            }
        })
        .collect())
}

fn remove_between(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let mut n = a.num(1, "n")?;
    if n < 50.0 {
        n = 100.0 - n;
    }
    // Columns as `zip(*seriesList)` makes them: as long as the shortest series.
    let width = list.iter().map(|s| s.values.len()).min().unwrap_or(0);
    let cols: Vec<(Option<f64>, Option<f64>)> = (0..width)
        .map(|i| {
            let col: Vec<Option<f64>> = list.iter().map(|s| s.values[i]).collect();
            (gw_percentile(&col, 100.0 - n), gw_percentile(&col, n))
        })
        .collect();
    // A value counts when it is not strictly between its column's percentiles. A null (or a
    // null percentile) orders as Python 2 ordered None, below every number; under Python 3
    // graphite-web fails on it instead.
    let lt = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => x < y,
        (None, Some(_)) => true,
        _ => false,
    };
    Ok(list
        .into_iter()
        .filter(|s| {
            s.values
                .iter()
                .take(width)
                .enumerate()
                .any(|(i, v)| !(lt(cols[i].0, *v) && lt(*v, cols[i].1)))
        })
        .collect())
}

fn use_series_above(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let value = a.num(1, "value")?;
    let re = python_regex(&a.string(2, "search")?)?;
    let rep = python_replacement(&a.string(3, "replace")?);
    let names: Vec<String> = list
        .iter()
        .filter(|s| aggregate("max", &s.values).is_some_and(|m| m > value))
        .map(|s| re.replace_all(&s.name, rep.as_str()).into_owned())
        .collect();
    if names.is_empty() {
        return Ok(vec![]);
    }
    let target = format!("group({})", names.join(","));
    Ok(ctx
        .eval(&parse(&target)?)?
        .into_iter()
        .filter(|s| !s.values.is_empty())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn names(v: &[Series]) -> Vec<&str> {
        v.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn percentile_leaves_nulls_out() {
        let v = [
            Some(5.0),
            None,
            Some(1.0),
            Some(4.0),
            None,
            Some(2.0),
            Some(3.0),
        ];
        assert_eq!(gw_percentile(&v, 50.0), Some(3.0));
        assert_eq!(gw_percentile(&v, 90.0), Some(5.0));
        assert_eq!(gw_percentile(&[None], 50.0), None);
    }

    #[test]
    fn filters() {
        let src = mem(&[
            ("f.a", &[Some(1.0), Some(9.0)]),
            ("f.b", &[Some(5.0), Some(5.0)]),
            ("f.c", &[Some(3.0), None]),
            ("f.d", &[None, None]),
            ("g.a", &[Some(7.0), Some(7.0)]),
        ]);
        assert_eq!(
            names(&eval(&src, "filterSeries(f.*,'max','>',4)", 2)),
            vec!["f.a", "f.b"]
        );
        assert_eq!(
            names(&eval(&src, "filterSeries(f.*,'sum','<',6)", 2)),
            vec!["f.c", "f.d"]
        );
        assert_eq!(
            names(&eval(&src, "filterSeries(f.*,'last','=',5)", 2)),
            vec!["f.b"]
        );
        assert_eq!(
            names(&eval(&src, "filterSeries(f.*,'last','!=',5)", 2)),
            vec!["f.a", "f.c", "f.d"]
        );
        // Averages 5, 5, 3: both percentiles (n=50) are 5: none strictly between.
        assert_eq!(
            names(&eval(&src, "averageOutsidePercentile(f.{a,b,c},50)", 2)),
            vec!["f.a", "f.b", "f.c"]
        );
        // useSeriesAbove: f.a's max 9 > 8: g.a is drawn instead.
        assert_eq!(
            names(&eval(&src, "useSeriesAbove(f.*,8,'f','g')", 2)),
            vec!["g.a"]
        );
    }

    #[test]
    fn remove_between_percentile() {
        let src = mem(&[
            ("p.a", &[Some(1.0), Some(2.0)]),
            ("p.b", &[Some(2.0), Some(3.0)]),
            ("p.c", &[Some(3.0), Some(4.0)]),
            ("p.d", &[Some(4.0), Some(5.0)]),
            ("p.e", &[Some(5.0), Some(6.0)]),
        ]);
        // n=70: columns' 30th percentiles (rank 1.8 → 2nd) 2, 3 and 70th (rank 4.2 → 5th)
        // 5, 6: p.a (1 < 2) and p.b (2 is not > 2), p.e (5 not < 5) are kept.
        assert_eq!(
            names(&eval(&src, "removeBetweenPercentile(p.*,30)", 2)),
            vec!["p.a", "p.b", "p.e"]
        );
    }
}
