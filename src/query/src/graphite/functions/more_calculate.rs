//! Calculate functions of graphite-web 1.1.10 beyond the first set: `aggregateLine`,
//! `exponentialMovingAverage`, the Holt-Winters family and `linearRegression`. Those that
//! look back (a bootstrap, a source window) re-evaluate their argument over the wider
//! window, as graphite-web does.

use super::super::attime::{parse_attime, parse_offset};
use super::super::eval::{err, Args, Ctx, EvalError, R};
use super::super::parser::Expr;
use super::super::series::{aggregate, py_float, py_g, Series};
use super::combine::agg_name;
use super::more_spec::{py_round6, validate};

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let known = matches!(
        name,
        "aggregateLine"
            | "exponentialMovingAverage"
            | "holtWintersForecast"
            | "holtWintersConfidenceBands"
            | "holtWintersConfidenceArea"
            | "holtWintersAberration"
            | "linearRegression"
    );
    if !known {
        return None;
    }
    Some((|| {
        validate(a)?;
        match name {
            "aggregateLine" => aggregate_line(ctx, a),
            "exponentialMovingAverage" => ema(ctx, a),
            "holtWintersForecast" => {
                let boot = interval_arg(a, 1, "bootstrapInterval", "7d")?;
                let season = interval_arg(a, 2, "seasonality", "1d")?;
                hw_forecast(ctx, a, boot, season)
            }
            "holtWintersConfidenceBands" => {
                let (delta, boot, season) = hw_args(a)?;
                hw_bands(ctx, a, delta, boot, season)
            }
            "holtWintersConfidenceArea" => {
                let (delta, boot, season) = hw_args(a)?;
                hw_area(ctx, a, delta, boot, season)
            }
            "holtWintersAberration" => {
                let (delta, boot, season) = hw_args(a)?;
                hw_aberration(ctx, a, delta, boot, season)
            }
            "linearRegression" => linear_regression(ctx, a),
            _ => unreachable!(),
        }
    })())
}

fn interval_arg(a: &Args, i: usize, name: &str, default: &str) -> R<i64> {
    let s = a.opt_str(i, name)?.unwrap_or_else(|| default.into());
    parse_offset(&s).map_err(EvalError::from)
}

/// `delta`, `bootstrapInterval`, `seasonality` (seconds).
fn hw_args(a: &Args) -> R<(f64, i64, i64)> {
    Ok((
        a.num_or(1, "delta", 3.0)?,
        interval_arg(a, 2, "bootstrapInterval", "7d")?,
        interval_arg(a, 3, "seasonality", "1d")?,
    ))
}

fn inner<'c>(a: &Args<'c>) -> R<&'c Expr> {
    a.get(0, "seriesList")
        .ok_or_else(|| EvalError::Invalid(format!("{}: missing seriesList", a.call.name)))
}

fn aggregate_line(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let raw = a.opt_str(1, "func")?.unwrap_or_else(|| "average".into());
    let func = agg_name(&raw)?;
    let keep = a.boolean(2, "keepStep", false)?;
    Ok(a.series(ctx, 0, "seriesList")?
        .into_iter()
        .map(|s| {
            let v = aggregate(&func, &s.values);
            let name = match v {
                Some(v) => format!("aggregateLine({}, {})", s.name, py_g(v)),
                None => format!("aggregateLine({}, None)", s.name),
            };
            if keep {
                let mut out = s.clone();
                out.values = vec![v; s.values.len()];
                out.rename(name);
                out
            } else {
                // constantLine(value): three points over the window, its name tag the value.
                let step = ((ctx.until - ctx.from) / 2).max(1);
                let shown = match v {
                    Some(x) if func == "count" => format!("{}", x as i64),
                    Some(x) => py_float(x),
                    None => "None".into(),
                };
                let mut out = Series::new(shown, ctx.from, step, vec![v; 3]);
                out.rename(name);
                out.xff = ctx.xff();
                out
            }
        })
        .collect())
}

fn ema(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let e = inner(a)?;
    let list = ctx.eval(e)?;
    if list.is_empty() {
        return Ok(list);
    }
    let window = a
        .get(1, "windowSize")
        .ok_or_else(|| EvalError::Invalid("exponentialMovingAverage: missing windowSize".into()))?;
    // An integer counts points; text is an interval (whose constant graphite-web derives from
    // the seconds, not the points).
    let (label, shown, preview, constant, points) = match window {
        Expr::Num(n) => {
            let n = *n as i64;
            let max_step = list.iter().map(|s| s.step).max().unwrap_or(60);
            (
                n.to_string(),
                n.to_string(),
                max_step.saturating_mul(n),
                2.0 / (n as f64 + 1.0),
                Some(n),
            )
        }
        Expr::Str(s) => {
            let secs = parse_offset(s).map_err(EvalError::from)?.abs();
            (
                s.clone(),
                format!("\"{s}\""),
                secs,
                2.0 / (secs as f64 + 1.0),
                None,
            )
        }
        other => {
            return err(format!(
                "exponentialMovingAverage: bad windowSize {other:?}"
            ))
        }
    };
    let preview_list = ctx
        .shifted(ctx.from.saturating_sub(preview), ctx.until)
        .eval(e)?;
    Ok(preview_list
        .into_iter()
        .map(|mut s| {
            let wp = points.unwrap_or(preview / s.step.max(1)).max(0) as usize;
            s.set_tag("exponentialMovingAverage", label.clone());
            let head = &s.values[..wp.min(s.values.len())];
            let nn: Vec<f64> = head.iter().flatten().copied().collect();
            let mut cur = if nn.is_empty() {
                0.0
            } else {
                nn.iter().sum::<f64>() / nn.len() as f64
            };
            let mut values = vec![Some(py_round6(cur))];
            for v in s.values.iter().skip(wp) {
                values.push(v.map(|v| {
                    cur = constant * v + (1.0 - constant) * cur;
                    py_round6(cur)
                }));
            }
            let name = format!("exponentialMovingAverage({},{shown})", s.name);
            s.start += preview;
            s.values = values;
            s.end = s.start + s.step * s.values.len() as i64;
            s.rename(name);
            s
        })
        .collect())
}

/// graphite-web's `holtWintersAnalysis`: the predictions and deviations of a series
/// (alpha = gamma = 0.1, beta = 0.0035, one season of `season` seconds).
pub fn hw_analysis(values: &[Option<f64>], step: i64, season: i64) -> (Vec<Option<f64>>, Vec<f64>) {
    let (alpha, gamma, beta) = (0.1, 0.1, 0.0035);
    let season_len = season.div_euclid(step.max(1));
    let mut intercepts: Vec<Option<f64>> = Vec::new();
    let mut slopes: Vec<f64> = Vec::new();
    let mut seasonals: Vec<f64> = Vec::new();
    let mut predictions: Vec<Option<f64>> = Vec::new();
    let mut deviations: Vec<f64> = Vec::new();
    // A season under two steps reads a value not computed yet (graphite-web's IndexError;
    // `analysed` refuses it): 0 here.
    let last = |v: &[f64], i: i64| -> f64 {
        let j = i - season_len;
        if j >= 0 {
            v.get(j as usize).copied().unwrap_or(0.0)
        } else {
            0.0
        }
    };
    let mut next_pred: Option<f64> = None;
    for (i, actual) in values.iter().enumerate() {
        let Some(actual) = *actual else {
            intercepts.push(None);
            slopes.push(0.0);
            seasonals.push(0.0);
            predictions.push(next_pred);
            deviations.push(0.0);
            next_pred = None;
            continue;
        };
        let (last_intercept, last_slope, prediction) = if i == 0 {
            (actual, 0.0, Some(actual))
        } else {
            (
                intercepts[i - 1].unwrap_or(actual),
                slopes[i - 1],
                next_pred,
            )
        };
        let i = i as i64;
        // Python's negative index: j = i - season_length < 0 reads the default 0 only when
        // j < 0; j is never below -len here.
        let last_seasonal = last(&seasonals, i);
        let next_last_seasonal = last(&seasonals, i + 1);
        let last_seasonal_dev = last(&deviations, i);
        let intercept =
            alpha * (actual - last_seasonal) + (1.0 - alpha) * (last_intercept + last_slope);
        let slope = beta * (intercept - last_intercept) + (1.0 - beta) * last_slope;
        let seasonal = gamma * (actual - intercept) + (1.0 - gamma) * last_seasonal;
        next_pred = Some(intercept + slope + next_last_seasonal);
        let deviation =
            gamma * (actual - prediction.unwrap_or(0.0)).abs() + (1.0 - gamma) * last_seasonal_dev;
        intercepts.push(Some(intercept));
        slopes.push(slope);
        seasonals.push(seasonal);
        predictions.push(prediction);
        deviations.push(deviation);
    }
    (predictions, deviations)
}

/// Each series of the argument re-evaluated from `boot` seconds earlier, with its
/// predictions and deviations from the request's start on (graphite-web's slicing).
struct Analysed {
    series: Series,
    start: i64,
    predictions: Vec<Option<f64>>,
    deviations: Vec<Option<f64>>,
}

fn analysed(ctx: &Ctx, a: &Args, boot: i64, season: i64) -> R<Vec<Analysed>> {
    let preview = ctx
        .shifted(ctx.from.saturating_sub(boot), ctx.until)
        .eval(inner(a)?)?;
    if let Some(s) = preview.iter().find(|s| season / s.step.max(1) < 2) {
        // graphite-web fails with an IndexError (a 500) there.
        return err(format!(
            "{}: the seasonality ({season} s) must span at least two steps of {} ({} s)",
            a.call.name, s.name, s.step
        ));
    }
    Ok(preview
        .into_iter()
        .map(|mut s| {
            let (p, d) = hw_analysis(&s.values, s.step, season);
            let wp = boot.div_euclid(s.step.max(1)).max(0) as usize;
            // The analysis tags the series it read (graphite-web shares the tag dict).
            s.set_tag("holtWintersForecast", "1");
            s.set_tag("holtWintersDeviation", "1");
            Analysed {
                start: s.start + boot,
                predictions: p.into_iter().skip(wp).collect(),
                deviations: d.into_iter().skip(wp).map(Some).collect(),
                series: s,
            }
        })
        .collect())
}

fn hw_forecast(ctx: &Ctx, a: &Args, boot: i64, season: i64) -> R<Vec<Series>> {
    Ok(analysed(ctx, a, boot, season)?
        .into_iter()
        .map(|an| {
            let mut s = Series::new(
                format!("holtWintersForecast({})", an.series.name),
                an.start,
                an.series.step,
                an.predictions,
            );
            s.tags = an.series.tags.clone();
            s.xff = an.series.xff;
            s
        })
        .collect())
}

/// Lower and upper band of each series, in that order.
fn bands(ctx: &Ctx, a: &Args, delta: f64, boot: i64, season: i64) -> R<Vec<(Series, Series)>> {
    Ok(analysed(ctx, a, boot, season)?
        .into_iter()
        .map(|an| {
            let (upper, lower): (Vec<Option<f64>>, Vec<Option<f64>>) = an
                .predictions
                .iter()
                .zip(&an.deviations)
                .map(|(f, d)| match (f, d) {
                    (Some(f), Some(d)) => (Some(f + delta * d), Some(f - delta * d)),
                    _ => (None, None),
                })
                .unzip();
            let mut tags = an.series.tags.clone();
            tags.insert("holtWintersConfidenceUpper".into(), "1".into());
            tags.insert("holtWintersConfidenceLower".into(), "1".into());
            let make = |name: String, values: Vec<Option<f64>>| {
                let mut s = Series::new(name, an.start, an.series.step, values);
                s.tags = tags.clone();
                s.xff = an.series.xff;
                s.path_expr = an.series.path_expr.clone();
                s
            };
            (
                make(
                    format!("holtWintersConfidenceLower({})", an.series.name),
                    lower,
                ),
                make(
                    format!("holtWintersConfidenceUpper({})", an.series.name),
                    upper,
                ),
            )
        })
        .collect())
}

fn hw_bands(ctx: &Ctx, a: &Args, delta: f64, boot: i64, season: i64) -> R<Vec<Series>> {
    Ok(bands(ctx, a, delta, boot, season)?
        .into_iter()
        .flat_map(|(l, u)| [l, u])
        .collect())
}

fn hw_area(ctx: &Ctx, a: &Args, delta: f64, boot: i64, season: i64) -> R<Vec<Series>> {
    let mut b = hw_bands(ctx, a, delta, boot, season)?;
    // areaBetween over the bands: exactly one series' pair.
    if b.len() != 2 {
        return err("areaBetween series argument must reference *exactly* 2 series");
    }
    let name = format!("holtWintersConfidenceArea({})", b[1].path_expr);
    let mut tags = b[1].tags.clone();
    tags.insert("holtWintersConfidenceArea".into(), "1".into());
    for s in b.iter_mut() {
        s.style.stacked = true;
        s.tags = tags.clone();
        s.rename(name.clone());
    }
    b[0].style.invisible = true;
    Ok(b)
}

fn hw_aberration(ctx: &Ctx, a: &Args, delta: f64, boot: i64, season: i64) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let bands = bands(ctx, a, delta, boot, season)?;
    list.into_iter()
        .map(|s| {
            let lname = format!("holtWintersConfidenceLower({})", s.name);
            let Some((lower, upper)) = bands.iter().find(|(l, _)| l.name == lname) else {
                return err(format!("holtWintersAberration: no bands for {}", s.name));
            };
            let values = s
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let Some(v) = *v else { return Some(0.0) };
                    let up = upper.values.get(i).copied().flatten();
                    let lo = lower.values.get(i).copied().flatten();
                    Some(match (up, lo) {
                        (Some(u), _) if v > u => v - u,
                        (_, Some(l)) if v < l => v - l,
                        _ => 0.0,
                    })
                })
                .collect();
            let mut out = Series::new(
                format!("holtWintersAberration({})", s.name),
                s.start,
                s.step,
                values,
            );
            out.tags = s.tags.clone();
            out.tags.insert("holtWintersAberration".into(), "1".into());
            out.xff = s.xff;
            Ok(out)
        })
        .collect()
}

/// graphite-web's `_linearRegressionAnalysis`: least squares over (index, value), in its
/// order of operations; `None` when the points do not determine a line.
pub fn regression(s: &Series) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = s
        .values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i as f64, v)))
        .collect();
    let n = pts.len() as f64;
    let sum_i: f64 = pts.iter().map(|p| p.0).sum();
    let sum_v: f64 = pts.iter().map(|p| p.1).sum();
    let sum_ii: f64 = pts.iter().map(|p| p.0 * p.0).sum();
    let sum_iv: f64 = pts.iter().map(|p| p.0 * p.1).sum();
    let den = n * sum_ii - sum_i * sum_i;
    if den == 0.0 {
        return None;
    }
    let factor = (n * sum_iv - sum_i * sum_v) / den / s.step as f64;
    let offset = (sum_ii * sum_v - sum_iv * sum_i) / den - factor * s.start as f64;
    Some((factor, offset))
}

fn linear_regression(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let at = |i: usize, name: &str| -> R<Option<i64>> {
        let text = match a.get(i, name) {
            None | Some(Expr::None) => return Ok(None),
            Some(Expr::Num(n)) => format!("{}", *n as i64),
            _ => a.string(i, name)?,
        };
        parse_attime(&text, ctx.now)
            .map(Some)
            .map_err(EvalError::from)
    };
    let (start_at, end_at) = (at(1, "startSourceAt")?, at(2, "endSourceAt")?);
    let from = start_at.unwrap_or(ctx.from);
    let until = end_at.unwrap_or(ctx.until);
    // Named by the window's wall-clock times (`Ctx::wall`): the request's own bounds are on its
    // zone's clock, the arguments on UTC's.
    let (from_name, until_name) = (
        start_at.unwrap_or_else(|| ctx.wall(ctx.from)),
        end_at.unwrap_or_else(|| ctx.wall(ctx.until)),
    );
    let sources = ctx.shifted(from, until).eval(inner(a)?)?;
    Ok(sources
        .iter()
        .zip(list)
        .filter_map(|(src, mut s)| {
            s.set_tag("linearRegressions", format!("{from_name}, {until_name}"));
            let name = format!("linearRegression({}, {from_name}, {until_name})", s.name);
            let (factor, offset) = regression(src)?;
            s.values = (0..s.values.len())
                .map(|i| Some(offset + (s.start + i as i64 * s.step) as f64 * factor))
                .collect();
            s.rename(name);
            Some(s)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn aggregate_line_names_and_values() {
        let src = mem(&[("m.a", &[Some(1.0), Some(2.0), None, Some(6.0)])]);
        let r = eval(&src, "aggregateLine(m.a)", 4);
        assert_eq!(r[0].name, "aggregateLine(m.a, 3)");
        assert_eq!(r[0].tags["name"], "3.0");
        assert_eq!(vals(&r[0]), vec![Some(3.0); 3]);
        assert_eq!((r[0].start, r[0].step), (0, 120));
        let r = eval(&src, "aggregateLine(m.a,'max',true)", 4);
        assert_eq!(r[0].name, "aggregateLine(m.a, 6)");
        assert_eq!(r[0].tags["name"], "m.a");
        assert_eq!(vals(&r[0]), vec![Some(6.0); 4]);
    }

    #[test]
    fn ema_by_points() {
        // Window 2: constant 2/3; the bootstrap reaches 120 s before 0 (nothing there), so
        // the seed is the average of no points, 0, then each value folds in.
        let src = mem(&[("m.a", &[Some(3.0), Some(6.0), None, Some(9.0)])]);
        let r = eval(&src, "exponentialMovingAverage(m.a,2)", 4);
        assert_eq!(r[0].name, "exponentialMovingAverage(m.a,2)");
        let c = 2.0 / 3.0;
        let e1 = c * 3.0;
        let e2 = c * 6.0 + (1.0 - c) * e1;
        let e3 = c * 9.0 + (1.0 - c) * e2;
        assert_eq!(
            vals(&r[0]),
            vec![
                Some(0.0),
                Some(py_round6(e1)),
                Some(py_round6(e2)),
                None,
                Some(py_round6(e3))
            ]
        );
        assert_eq!(r[0].tags["exponentialMovingAverage"], "2");
    }

    #[test]
    fn holt_winters_by_hand() {
        // Season of 2 steps. i=0: prediction = 10, intercept = 0.1*10 + 0.9*10 = 10, slope 0,
        // seasonal 0, next = 10; deviation = 0.
        let (p, d) = hw_analysis(&[Some(10.0), Some(12.0), None, Some(11.0)], 60, 120);
        assert_eq!(p[0], Some(10.0));
        assert_eq!(d[0], 0.0);
        // i=1: prediction 10; intercept = 0.1*12 + 0.9*10 = 10.2; slope = 0.0035*0.2;
        // deviation = 0.1*|12-10| = 0.2.
        assert_eq!(p[1], Some(10.0));
        assert!((d[1] - 0.2).abs() < 1e-15);
        // i=2 null: prediction is the pending next_pred, then reset.
        let intercept: f64 = 0.1 * 12.0 + 0.9 * 10.0;
        let slope = 0.0035 * (intercept - 10.0);
        let seasonal0 = 0.1 * (10.0 - 10.0);
        assert_eq!(p[2], Some(intercept + slope + seasonal0));
        // i=3: prediction None (reset), deviation compares with 0.
        assert_eq!(p[3], None);
        assert!(d[3] > 1.0);
    }

    #[test]
    fn short_seasons_and_huge_windows_are_errors_not_panics() {
        let src = mem(&[("m.a", &[Some(1.0), Some(2.0), Some(3.0)])]);
        let ctx = Ctx {
            source: &src,
            from: 0,
            until: 180,
            now: 180,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        for t in [
            "holtWintersForecast(m.a,'1min','1min')",
            "holtWintersAberration(m.a,3,'1min','30s')",
            "exponentialMovingAverage(m.a,9223372036854775807)",
            "timeStack(m.a,'1d',0,100000)",
            "timeStack(m.a,'1d',1000000000000000,1000000000000001)",
        ] {
            let e = crate::graphite::parser::parse(t).unwrap();
            assert!(ctx.eval(&e).is_err(), "{t}");
        }
        let wide = Ctx {
            source: &src,
            from: 0,
            until: 1 << 40,
            now: 1 << 40,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        for t in [
            "sin('s',1,1)",
            "identity('i')",
            "events('*')",
            "time('t',1)",
        ] {
            let e = crate::graphite::parser::parse(t).unwrap();
            assert!(wide.eval(&e).is_err(), "{t}");
        }
        assert!(hw_analysis(&[Some(1.0), Some(2.0)], 60, 30).0.len() == 2);
    }

    #[test]
    fn linear_regression_of_a_line() {
        // v = 2 + i on a 60 s grid from 60: factor 1/60 per second, offset so t=60 gives 2.
        let src = mem(&[("m.a", &[Some(2.0), Some(3.0), None, Some(5.0)])]);
        let r = eval(&src, "linearRegression(m.a)", 4);
        assert_eq!(r[0].name, "linearRegression(m.a, 0, 240)");
        let v = vals(&r[0]);
        for (i, want) in [2.0, 3.0, 4.0, 5.0].iter().enumerate() {
            assert!((v[i].unwrap() - want).abs() < 1e-9, "{v:?}");
        }
    }
}
