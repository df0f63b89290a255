//! Calculate: moving windows (1.1.10 alignment: the window ends at and includes t, and the
//! argument is re-fetched from `from - window` so the first points are complete), stdev,
//! nPercentile.

use super::super::attime::parse_offset;
use super::super::eval::{Args, Ctx, EvalError, R};
use super::super::parser::Expr;
use super::super::series::{aggregate, fmt_g, percentile, py_float, py_g, Series};

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    Some(match name {
        "movingAverage" => moving(ctx, a, "average", "average", 2),
        "movingSum" => moving(ctx, a, "sum", "sum", 2),
        "movingMin" => moving(ctx, a, "min", "min", 2),
        "movingMax" => moving(ctx, a, "max", "max", 2),
        "movingMedian" => moving(ctx, a, "median", "median", 2),
        "movingWindow" => (|| {
            let raw = a.opt_str(2, "func")?.unwrap_or_else(|| "average".into());
            let f = super::combine::agg_name(&raw)?;
            moving(ctx, a, &f, &raw, 3)
        })(),
        "stdev" => stdev(ctx, a),
        "nPercentile" => (|| {
            let n = a.num(1, "n")?;
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .filter_map(|mut s| {
                    let nn: Vec<f64> = s.values.iter().flatten().copied().collect();
                    // A series without values gives no line at all.
                    let p = percentile(&nn, n, false)?;
                    s.values = vec![Some(p); s.values.len()];
                    let name = format!("nPercentile({}, {})", s.name, py_g(n));
                    s.rename(name);
                    s.set_tag("nPercentile", py_float(n));
                    Some(s)
                })
                .collect())
        })(),
        _ => return None,
    })
}

/// Python's `str.capitalize`: the first character upper case, the rest lower case.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f
            .to_uppercase()
            .chain(c.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

/// A moving window of `func` (`func_arg`: the function as the caller named it, which names
/// the result).
fn moving(ctx: &Ctx, a: &Args, func: &str, func_arg: &str, xff_pos: usize) -> R<Vec<Series>> {
    let fname = "movingWindow";
    let inner = a
        .get(0, "seriesList")
        .ok_or_else(|| EvalError::Invalid(format!("{fname}: missing seriesList")))?;
    let window = a
        .get(1, "windowSize")
        .ok_or_else(|| EvalError::Invalid(format!("{fname}: missing windowSize")))?;
    let xff = a.opt_num(xff_pos, "xFilesFactor")?.unwrap_or(ctx.xff());
    // An integer (possibly quoted by Grafana) counts points; other text is a time interval.
    let (label, seconds, points) = match window {
        Expr::Num(n) => (fmt_g(*n), None, Some(*n as i64)),
        Expr::Str(s) if s.trim().parse::<i64>().is_ok() => {
            (s.trim().to_string(), None, s.trim().parse().ok())
        }
        Expr::Str(s) => (
            format!("\"{s}\""),
            Some(parse_offset(s).map_err(EvalError::from)?.abs()),
            None,
        ),
        other => {
            return Err(EvalError::Invalid(format!(
                "{fname}: bad windowSize {other:?}"
            )))
        }
    };
    let series = ctx.eval(inner)?;
    if series.is_empty() {
        return Ok(series);
    }
    let max_step = series.iter().map(|s| s.step).max().unwrap_or(60);
    let preview = seconds.unwrap_or_else(|| max_step * points.unwrap_or(1));
    // graphite-web 1.1.10: the argument is fetched again from `preview` seconds earlier; the
    // result starts `preview` seconds after that fetch's start, and its value at j is of the
    // window of points that ends at and includes the fetched point j + window.
    let boot = ctx.shifted(ctx.from - preview, ctx.until).eval(inner)?;
    Ok(boot
        .into_iter()
        .map(|b| {
            let wp = points.unwrap_or_else(|| preview / b.step.max(1)).max(0) as usize;
            let n = b.values.len().saturating_sub(wp);
            let values = (0..n)
                .map(|j| {
                    let nn: Vec<Option<f64>> = b.values[j + 1..j + 1 + wp]
                        .iter()
                        .filter(|v| v.is_some())
                        .copied()
                        .collect();
                    if nn.is_empty() || (nn.len() as f64) / (wp as f64) < xff {
                        None
                    } else {
                        // The function sees the window's values only (avg_zero too).
                        aggregate(func, &nn)
                    }
                })
                .collect();
            // graphite-web names (and tags) every moving window by its function, movingWindow
            // included: `moving` + the function's name capitalised (`movingAvg_zero`).
            let tag = format!("moving{}", capitalize(func_arg));
            let mut out = Series::new(
                format!("{tag}({},{label})", b.name),
                b.start + preview,
                b.step,
                values,
            );
            out.tags = b.tags.clone();
            out.set_tag(&tag, label.trim_matches('"'));
            out.consolidation = b.consolidation.clone();
            out.xff = b.xff;
            out.style = b.style.clone();
            out
        })
        .collect())
}

fn stdev(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let points = a.num(1, "points")? as usize;
    let tol = a.num_or(2, "windowTolerance", 0.1)?;
    Ok(a.series(ctx, 0, "seriesList")?
        .into_iter()
        .map(|mut s| {
            let (mut valid, mut sum, mut sq) = (0usize, 0.0, 0.0);
            let src = s.values.clone();
            s.values = (0..src.len())
                .map(|i| {
                    if i >= points {
                        if let Some(d) = src[i - points] {
                            valid -= 1;
                            sum -= d;
                            sq -= d * d;
                        }
                    }
                    if let Some(v) = src[i] {
                        valid += 1;
                        sum += v;
                        sq += v * v;
                    }
                    if valid > 0 && valid as f64 / points as f64 >= tol {
                        let var = valid as f64 * sq - sum * sum;
                        (var >= 0.0).then(|| var.sqrt() / valid as f64)
                    } else {
                        None
                    }
                })
                .collect();
            let name = format!("stdev({},{points})", s.name);
            s.rename(name);
            s.set_tag("stdev", points.to_string());
            s
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn a_window_reaching_centuries_back_is_refused_not_allocated() {
        // Found by the fuzzer: the bootstrap of a 6,333,333,333-minute window asked for a grid
        // of 6.3 billion steps (101 GB).
        let src = mem(&[("m", &[Some(1.0), Some(2.0), Some(3.0)])]);
        let ctx = super::super::super::eval::Ctx {
            source: &src,
            from: 1_700_000_000 - 3600,
            until: 1_700_000_000,
            now: 1_700_000_000,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        let e = ctx
            .eval(
                &super::super::super::parser::parse(
                    "alias(movingAverage(m, '6333333333min'), 'x')",
                )
                .unwrap(),
            )
            .unwrap_err();
        assert!(e.to_string().contains("more than 10000000"), "{e}");
        // A year's bootstrap is fine.
        assert!(ctx
            .eval(&super::super::super::parser::parse("movingAverage(m, '365d')").unwrap())
            .is_ok());
    }

    #[test]
    fn moving_windows_include_t_and_bootstrap() {
        let src = mem(&[(
            "m",
            &[
                Some(1.0),
                Some(2.0),
                Some(3.0),
                Some(4.0),
                Some(5.0),
                Some(6.0),
            ],
        )]);
        let ctx = super::super::super::eval::Ctx {
            source: &src,
            from: 180,
            until: 360,
            now: 360,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        let p = |t: &str| {
            ctx.eval(&super::super::super::parser::parse(t).unwrap())
                .unwrap()
        };
        // Window = the 2 points ending at t; the point before `from` comes from the bootstrap.
        let r = p("movingAverage(m, 2)");
        assert_eq!(r[0].name, "movingAverage(m,2)");
        assert_eq!(vals(&r[0]), vec![Some(3.5), Some(4.5), Some(5.5)]);
        let r = p("movingSum(m, '2min')");
        assert_eq!(r[0].name, "movingSum(m,\"2min\")");
        assert_eq!(vals(&r[0]), vec![Some(7.0), Some(9.0), Some(11.0)]);
        assert_eq!(
            vals(&p("movingMax(m, '2')")[0]),
            vec![Some(4.0), Some(5.0), Some(6.0)]
        );
        assert_eq!(
            vals(&p("movingMin(m, 3)")[0]),
            vec![Some(2.0), Some(3.0), Some(4.0)]
        );
    }

    #[test]
    fn stdev_and_percentile() {
        let src = mem(&[("s", &[Some(1.0), Some(3.0), None, Some(5.0)])]);
        let r = eval(&src, "stdev(s, 2)", 4);
        assert_eq!(r[0].name, "stdev(s,2)");
        assert_eq!(
            vals(&r[0]),
            vec![Some(0.0), Some(1.0), Some(0.0), Some(0.0)]
        );
        let r = eval(&src, "nPercentile(s, 50)", 4);
        assert_eq!(vals(&r[0]), vec![Some(3.0); 4]);
    }
}
