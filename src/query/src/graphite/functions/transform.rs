//! Transform: point-wise math, derivatives, null handling, time shifting and re-bucketing
//! (summarize, smartSummarize, hitcount). Filter Data's removeBelow/AboveValue live here too.

use super::super::attime::{parse_offset, time_unit, TimeUnit};
use super::super::eval::{err, Args, Ctx, EvalError, PerSeries, R};
use super::super::series::{aggregate, py_d, py_float, py_g, Series};
use super::combine::agg_name;
use super::{finite, map_values, round_half_away};

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let list = || a.series(ctx, 0, "seriesList");
    Some(match name {
        "scale" => (|| {
            let f = a.num(1, "factor")?;
            Ok(tagged(
                map_values(
                    list()?,
                    |s| format!("scale({},{})", s.name, py_g(f)),
                    |v| v.map(|v| v * f),
                ),
                "scale",
                &py_float(f),
            ))
        })(),
        "offset" => (|| {
            let f = a.num(1, "factor")?;
            Ok(tagged(
                map_values(
                    list()?,
                    |s| format!("offset({},{})", s.name, py_g(f)),
                    |v| v.map(|v| v + f),
                ),
                "offset",
                &py_float(f),
            ))
        })(),
        "absolute" => list().map(|l| {
            tagged(
                map_values(l, |s| format!("absolute({})", s.name), |v| v.map(f64::abs)),
                "absolute",
                "1",
            )
        }),
        "invert" => list().map(|l| {
            tagged(
                map_values(
                    l,
                    |s| format!("invert({})", s.name),
                    |v| v.and_then(|v| finite(1.0 / v).filter(|_| v != 0.0)),
                ),
                "invert",
                "1",
            )
        }),
        "pow" => (|| {
            let f = a.num(1, "factor")?;
            Ok(tagged(
                map_values(
                    list()?,
                    |s| format!("pow({},{})", s.name, py_g(f)),
                    |v| v.and_then(|v| finite(v.powf(f))),
                ),
                "pow",
                &py_float(f),
            ))
        })(),
        "log" => (|| {
            let base = a.num_or(1, "base", 10.0)?;
            // The tag holds the argument as given (an integer stays one).
            let log_base = match a.get(1, "base") {
                Some(super::super::parser::Expr::Num(n)) if n.fract() != 0.0 => py_float(*n),
                _ => py_d(base),
            };
            Ok(tagged(
                map_values(
                    list()?,
                    |s| format!("log({}, {log_base})", s.name),
                    |v| v.filter(|v| *v > 0.0).and_then(|v| finite(v.log(base))),
                ),
                "log",
                &log_base,
            ))
        })(),
        "removeBelowValue" => (|| {
            let n = a.num(1, "n")?;
            Ok(map_values(
                list()?,
                |s| format!("removeBelowValue({}, {})", s.name, py_g(n)),
                |v| v.filter(|v| *v >= n),
            ))
        })(),
        "removeAboveValue" => (|| {
            let n = a.num(1, "n")?;
            Ok(map_values(
                list()?,
                |s| format!("removeAboveValue({}, {})", s.name, py_g(n)),
                |v| v.filter(|v| *v <= n),
            ))
        })(),
        "transformNull" => transform_null(ctx, a),
        "derivative" => list().map(|l| {
            let l = l
                .into_iter()
                .map(|mut s| {
                    let mut prev: Option<f64> = None;
                    s.values = s
                        .values
                        .iter()
                        .map(|v| {
                            let out = match (prev, *v) {
                                (Some(p), Some(x)) => Some(x - p),
                                _ => None,
                            };
                            prev = *v;
                            out
                        })
                        .collect();
                    let n = format!("derivative({})", s.name);
                    s.rename(n);
                    s
                })
                .collect();
            tagged(l, "derivative", "1")
        }),
        "nonNegativeDerivative" | "perSecond" => (|| {
            let each = per_series(name, a).expect("a per-series function")?;
            a.series_each(ctx, each.arg, each.arg_name, &*each.f)
        })(),
        "integral" => list().map(|l| {
            let l = l
                .into_iter()
                .map(|mut s| {
                    let mut acc = 0.0;
                    s.values = s
                        .values
                        .iter()
                        .map(|v| {
                            v.map(|v| {
                                acc += v;
                                acc
                            })
                        })
                        .collect();
                    let n = format!("integral({})", s.name);
                    s.rename(n);
                    s
                })
                .collect();
            tagged(l, "integral", "1")
        }),
        "keepLastValue" => (|| {
            let limit = a.num_or(1, "limit", f64::INFINITY)?;
            Ok(list()?
                .into_iter()
                .map(|mut s| {
                    keep_last(&mut s.values, limit);
                    let n = format!("keepLastValue({})", s.name);
                    s.rename(n);
                    s
                })
                .collect())
        })(),
        "delay" => (|| {
            let steps = a.num(1, "steps")? as i64;
            Ok(list()?
                .into_iter()
                .map(|mut s| {
                    let n = s.values.len() as i64;
                    s.values = (0..n)
                        .map(|i| {
                            let j = i - steps;
                            if j >= 0 && j < n {
                                s.values[j as usize]
                            } else {
                                None
                            }
                        })
                        .collect();
                    let name = format!("delay({},{steps})", s.name);
                    s.rename(name);
                    s.set_tag("delay", steps.to_string());
                    s
                })
                .collect())
        })(),
        "add" => (|| {
            let c = a.num(1, "constant")?;
            Ok(tagged(
                map_values(
                    list()?,
                    |s| format!("add({},{})", s.name, py_d(c)),
                    |v| v.map(|v| v + c),
                ),
                "add",
                &py_float(c),
            ))
        })(),
        "squareRoot" => list().map(|l| {
            tagged(
                map_values(
                    l,
                    |s| format!("squareRoot({})", s.name),
                    |v| v.filter(|v| *v >= 0.0).map(f64::sqrt),
                ),
                "squareRoot",
                "1",
            )
        }),
        "exp" => list().map(|l| {
            tagged(
                map_values(
                    l,
                    |s| format!("exp({})", s.name),
                    |v| v.and_then(|v| finite(v.exp())),
                ),
                "exp",
                "e",
            )
        }),
        "round" => (|| {
            let p = a.opt_num(1, "precision")?;
            let digits = p.unwrap_or(0.0) as i32;
            Ok(tagged(
                map_values(
                    list()?,
                    |s| match p {
                        Some(p) => format!("round({},{})", s.name, p as i64),
                        None => format!("round({})", s.name),
                    },
                    |v| v.map(|v| py_round(v, digits)),
                ),
                "round",
                &digits.to_string(),
            ))
        })(),
        "isNonNull" => list().map(|l| {
            tagged(
                map_values(
                    l,
                    |s| format!("isNonNull({})", s.name),
                    |v| Some(if v.is_some() { 1.0 } else { 0.0 }),
                ),
                "isNonNull",
                "1",
            )
        }),
        "changed" => list().map(|l| {
            l.into_iter()
                .map(|mut s| {
                    let mut prev: Option<f64> = None;
                    s.values = s
                        .values
                        .iter()
                        .map(|v| {
                            let out = match (*v, prev) {
                                (Some(x), Some(p)) if x != p => 1.0,
                                _ => 0.0,
                            };
                            if v.is_some() {
                                prev = *v;
                            }
                            Some(out)
                        })
                        .collect();
                    let n = format!("changed({})", s.name);
                    s.rename(n);
                    s
                })
                .collect()
        }),
        "offsetToZero" => list().map(|l| {
            l.into_iter()
                .map(|s| {
                    let min = s
                        .values
                        .iter()
                        .flatten()
                        .copied()
                        .fold(f64::INFINITY, f64::min);
                    let n = format!("offsetToZero({})", s.name);
                    let mut s =
                        map_values(vec![s], |_| n.clone(), |v| v.map(|v| v - min)).remove(0);
                    // Python's str of the minimum (None for a series without values).
                    let tag = if min.is_finite() {
                        py_float(min)
                    } else {
                        "None".into()
                    };
                    s.set_tag("offsetToZero", tag);
                    s
                })
                .collect()
        }),
        "minMax" => list().map(|l| {
            l.into_iter()
                .map(|s| {
                    let min = s
                        .values
                        .iter()
                        .flatten()
                        .copied()
                        .fold(f64::INFINITY, f64::min);
                    let max = s
                        .values
                        .iter()
                        .flatten()
                        .copied()
                        .fold(f64::NEG_INFINITY, f64::max);
                    let n = format!("minMax({})", s.name);
                    map_values(
                        vec![s],
                        |_| n.clone(),
                        |v| {
                            v.map(|v| {
                                if max > min {
                                    (v - min) / (max - min)
                                } else {
                                    0.0
                                }
                            })
                        },
                    )
                    .remove(0)
                })
                .collect()
        }),
        "interpolate" => (|| {
            let limit = a.num_or(1, "limit", f64::INFINITY)?;
            Ok(list()?
                .into_iter()
                .map(|mut s| {
                    interpolate(&mut s.values, limit);
                    let n = format!("interpolate({})", s.name);
                    s.rename(n);
                    s
                })
                .collect())
        })(),
        "scaleToSeconds" => (|| {
            let secs = a.num(1, "seconds")?;
            Ok(list()?
                .into_iter()
                .map(|s| {
                    let f = secs / s.step as f64;
                    let n = format!("scaleToSeconds({},{})", s.name, py_d(secs));
                    let mut s = map_values(
                        vec![s],
                        |_| n.clone(),
                        |v| v.map(|v| (v * f * 1e6).round() / 1e6),
                    )
                    .remove(0);
                    s.set_tag("scaleToSeconds", py_float(secs));
                    s
                })
                .collect())
        })(),
        "timeShift" => time_shift(ctx, a),
        "summarize" => summarize(ctx, a),
        "smartSummarize" => smart_summarize(ctx, a),
        "hitcount" => hitcount(ctx, a),
        _ => return None,
    })
}

/// The functions of this family that make each output series from one input series alone,
/// keeping its grid: what a combiner may apply to each series as it is read (see
/// [`Ctx::stream`]). `None` for any other function.
pub fn per_series(name: &str, a: &Args) -> Option<R<PerSeries>> {
    let per_second = match name {
        "perSecond" => true,
        "nonNegativeDerivative" => false,
        _ => return None,
    };
    Some((|| {
        let (max, min) = (a.opt_num(1, "maxValue")?, a.opt_num(2, "minValue")?);
        let f = move |s| {
            let mut s = non_negative(s, max, min, per_second);
            s.set_tag(
                if per_second {
                    "perSecond"
                } else {
                    "nonNegativeDerivative"
                },
                "1",
            );
            s
        };
        Ok(PerSeries {
            arg: 0,
            arg_name: "seriesList",
            f: Box::new(f),
        })
    })())
}

/// Python's `round(v, digits)`: the decimal nearest the binary value, halves to even
/// (`round(2.675, 2)` is 2.67, `round(10.05, 1)` 10.1).
fn py_round(v: f64, digits: i32) -> f64 {
    if !v.is_finite() {
        return v;
    }
    if digits >= 0 {
        // Rust's fixed-precision formatting rounds the exact binary value, halves to even,
        // as CPython's does; the text reads back to the nearest float.
        format!("{v:.*}", digits as usize).parse().unwrap_or(v)
    } else {
        let m = 10f64.powi(-digits);
        (v / m).round_ties_even() * m
    }
}

fn tagged(mut l: Vec<Series>, k: &str, v: &str) -> Vec<Series> {
    for s in &mut l {
        s.set_tag(k, v);
    }
    l
}

/// graphite's `_nonNegativeDelta`: values above max / below min reset; a decrease is a wrap
/// (with maxValue: `max + 1 + v - prev - min`; with only minValue: `v - min`) or a null.
fn delta(
    v: Option<f64>,
    prev: Option<f64>,
    max: Option<f64>,
    min: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    let Some(x) = v else { return (None, None) };
    if max.is_some_and(|m| x > m) || min.is_some_and(|m| x < m) {
        return (None, None);
    }
    let Some(p) = prev else {
        return (None, Some(x));
    };
    if x >= p {
        return (Some(x - p), Some(x));
    }
    if let Some(m) = max {
        return (Some(m + 1.0 + x - p - min.unwrap_or(0.0)), Some(x));
    }
    if let Some(m) = min {
        return (Some(x - m), Some(x));
    }
    (None, Some(x))
}

/// One series of `nonNegativeDerivative` or `perSecond` (thousands of them, as with
/// `perSecond(*.*.cpu.*)`, share the cores: see [`Args::series_each`]).
fn non_negative(mut s: Series, max: Option<f64>, min: Option<f64>, per_second: bool) -> Series {
    let mut prev = None;
    let step = s.step as f64;
    let scaled = |d: f64| {
        if per_second {
            round_half_away((d / step) * 1e6) / 1e6
        } else {
            d
        }
    };
    if max.is_none() && min.is_none() {
        // `delta` without bounds, with no branch on whether a value went down (for a gauge,
        // as random as the data): the value is worked out either way, then kept or not.
        for v in &mut s.values {
            let cur = *v;
            *v = match (cur, prev) {
                (Some(x), Some(p)) => (x >= p).then_some(scaled(x - p)),
                _ => None,
            };
            prev = cur;
        }
    } else {
        for v in &mut s.values {
            let (d, p) = delta(*v, prev, max, min);
            prev = p;
            *v = d.map(scaled);
        }
    }
    let n = format!(
        "{}({})",
        if per_second {
            "perSecond"
        } else {
            "nonNegativeDerivative"
        },
        s.name
    );
    s.rename(n);
    s
}

/// Fills runs of nulls no longer than `limit` with the value before them (graphite's rules:
/// nothing before the first value; a trailing run is filled too).
pub fn keep_last(v: &mut [Option<f64>], limit: f64) {
    let mut nones = 0usize;
    for i in 0..v.len() {
        if i == 0 {
            continue;
        }
        if v[i].is_none() {
            nones += 1;
        } else {
            if nones > 0 && (nones as f64) <= limit {
                let fill = v[i - nones - 1];
                for x in &mut v[i - nones..i] {
                    *x = fill;
                }
            }
            nones = 0;
        }
    }
    let n = v.len();
    if nones > 0 && (nones as f64) <= limit && n > nones {
        let fill = v[n - nones - 1];
        for x in &mut v[n - nones..] {
            *x = fill;
        }
    }
}

/// Linear interpolation across interior null runs no longer than `limit`.
pub fn interpolate(v: &mut [Option<f64>], limit: f64) {
    let mut last: Option<usize> = None;
    for i in 0..v.len() {
        let Some(x) = v[i] else { continue };
        if let Some(j) = last {
            let gap = i - j - 1;
            if gap > 0 && (gap as f64) <= limit {
                let y0 = v[j].expect("non-null");
                for (k, slot) in v.iter_mut().enumerate().take(i).skip(j + 1) {
                    *slot = Some(y0 + (x - y0) * (k - j) as f64 / (i - j) as f64);
                }
            }
        }
        last = Some(i);
    }
}

fn transform_null(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let d = a.num_or(1, "default", 0.0)?;
    let refs = match a.get(2, "referenceSeries") {
        Some(e) => Some(ctx.eval(e)?),
        None => None,
    };
    Ok(list
        .into_iter()
        .map(|mut s| {
            s.values = s
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| match (v, &refs) {
                    (Some(x), _) => Some(*x),
                    (None, None) => Some(d),
                    (None, Some(r)) => r
                        .iter()
                        .any(|r| r.values.get(i).copied().flatten().is_some())
                        .then_some(d),
                })
                .collect();
            let n = if refs.is_some() {
                format!("transformNull({},{},referenceSeries)", s.name, py_g(d))
            } else {
                format!("transformNull({},{})", s.name, py_g(d))
            };
            s.rename(n);
            // The default (the integer 0) as written, a given one as the float it is read as.
            let tag = if a.get(1, "default").is_some() {
                py_float(d)
            } else {
                "0".into()
            };
            s.set_tag("transformNull", tag);
            if refs.is_some() {
                s.set_tag("referenceSeries", "1");
            }
            s
        })
        .collect())
}

fn time_shift(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let mut shift = a.string(1, "timeShift")?;
    let reset_end = a.boolean(2, "resetEnd", true)?;
    // Unsigned means into the past.
    if !shift.starts_with(['+', '-']) {
        shift = format!("-{shift}");
    }
    let d = parse_offset(&shift).map_err(EvalError::from)?;
    let inner = a
        .get(0, "seriesList")
        .ok_or_else(|| EvalError::Invalid("timeShift: missing seriesList".into()))?;
    let shifted = ctx.shifted(ctx.from + d, ctx.until + d).eval(inner)?;
    // graphite-web starts every shifted series where the unshifted first series starts (the
    // grid of the request's window at its step), whatever the shift; with resetEnd it also
    // ends where that one ends, and the values past that end are dropped.
    let step = shifted.first().map(|s| s.step.max(1)).unwrap_or(1);
    let start = ctx.from - ctx.from.rem_euclid(step) + step;
    let end = ctx.until - ctx.until.rem_euclid(step) + step;
    Ok(shifted
        .into_iter()
        .map(|mut s| {
            s.start = start;
            if reset_end {
                let keep = ((end - start) / s.step.max(1) + 1).max(0) as usize;
                s.values.truncate(keep);
            }
            s.end = s.start + s.step * s.values.len() as i64;
            // Only the name: graphite-web leaves the shifted series' pathExpression as the
            // inner one's, so a combiner above names it by that (`sumSeries(a.b)`).
            s.name = format!("timeShift({}, \"{shift}\")", s.name);
            s.set_tag("timeShift", shift.clone());
            s
        })
        .collect())
}

/// The interval of summarize-like functions, in seconds (positive).
fn interval(a: &Args, i: usize) -> R<(String, i64)> {
    let s = a.string(i, "intervalString")?;
    let secs = parse_offset(&s).map_err(EvalError::from)?.abs();
    if secs == 0 {
        return err(format!("{}: interval must be positive", a.call.name));
    }
    Ok((s, secs))
}

/// Buckets `s` into `width`-second intervals starting at `new_start` (up to `new_end`); a bucket
/// holds the points whose timestamps fall in it. Null unless xff holds of the points a whole
/// bucket would hold (`width / step`), so a last bucket cut short by the window's end counts
/// its missing points as nulls (graphite-web's `_summarizeValues`).
fn bucketize(
    s: &Series,
    new_start: i64,
    new_end: i64,
    width: i64,
    func: &str,
    xff: f64,
) -> Vec<Option<f64>> {
    let n = ((new_end - new_start + width - 1) / width).max(0) as usize;
    let mut buckets: Vec<Vec<Option<f64>>> = vec![Vec::new(); n];
    for (t, v) in s.timestamps().zip(&s.values) {
        let d = t - new_start;
        if d >= 0 && ((d / width) as usize) < n {
            buckets[(d / width) as usize].push(*v);
        }
    }
    let whole = width as f64 / s.step.max(1) as f64;
    buckets
        .iter()
        .map(|b| {
            let nn = b.iter().filter(|v| v.is_some()).count();
            if nn == 0 || (nn as f64) / whole < xff {
                None
            } else {
                aggregate(func, b)
            }
        })
        .collect()
}

fn summarize(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesList")?;
    let (istr, width) = interval(a, 1)?;
    let func_s = a.opt_str(2, "func")?.unwrap_or_else(|| "sum".into());
    let func = agg_name(&func_s)?;
    let align = a.boolean(3, "alignToFrom", false)?;
    Ok(list
        .into_iter()
        .map(|s| {
            // Default buckets are aligned to epoch multiples of the interval.
            let (ns, ne) = if align {
                (s.start, s.end)
            } else {
                (
                    s.start - s.start.rem_euclid(width),
                    s.end - s.end.rem_euclid(width) + width,
                )
            };
            let values = bucketize(&s, ns, ne, width, &func, s.xff);
            let name = if align {
                format!("summarize({}, \"{istr}\", \"{func_s}\", true)", s.name)
            } else {
                format!("summarize({}, \"{istr}\", \"{func_s}\")", s.name)
            };
            let mut out = Series::new(name.clone(), ns, width, values);
            out.tags = s.tags.clone();
            out.tags.insert("summarize".into(), istr.clone());
            out.tags.insert("summarizeFunction".into(), func_s.clone());
            out.xff = s.xff;
            out
        })
        .collect())
}

fn smart_summarize(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let (istr, width) = interval(a, 1)?;
    let func_s = a.opt_str(2, "func")?.unwrap_or_else(|| "sum".into());
    let func = agg_name(&func_s)?;
    // `alignTo` rounds the request start down to that unit and re-fetches from there. A
    // boolean there is the old `alignToFrom`, which graphite-web ignores.
    let mut c = ctx.clone();
    let align = match a.get(3, "alignTo") {
        Some(super::super::parser::Expr::Bool(_)) => None,
        _ => a.opt_str(3, "alignTo")?,
    };
    if let Some(unit) = align {
        // graphite-web's getUnitString names the unit (`days`, `hours`, `weeks4` for
        // Thursdays, weeks otherwise from Monday); anything else fails there.
        let to = time_unit(&unit).map_err(EvalError::from)?;
        let week_day = unit
            .chars()
            .last()
            .and_then(|c| c.to_digit(10))
            .map_or(1, i64::from);
        c = ctx.shifted(ctx.aligned_start(to, week_day), ctx.until);
    }
    let list = c.eval(
        a.get(0, "seriesList")
            .ok_or_else(|| EvalError::Invalid("smartSummarize: missing seriesList".into()))?,
    )?;
    Ok(list
        .into_iter()
        .map(|s| {
            // Buckets start at the series' own first timestamp.
            let values = bucketize(&s, s.start, s.end, width, &func, s.xff);
            let name = format!("smartSummarize({}, \"{istr}\", \"{func_s}\")", s.name);
            let mut out = Series::new(name, s.start, width, values);
            out.tags = s.tags.clone();
            out.tags.insert("smartSummarize".into(), istr.clone());
            out.tags
                .insert("smartSummarizeFunction".into(), func_s.clone());
            out
        })
        .collect())
}

/// Values are per-second rates: each contributes value × the seconds of its step inside a
/// bucket; buckets end at the series end.
fn hitcount(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let (istr, width) = interval(a, 1)?;
    let align = a.boolean(2, "alignToInterval", false)?;
    let list = if align {
        // The window's start cut down to the day, hour or minute (by the interval's size;
        // as graphite-web cuts it, see `Ctx::aligned_start`) and the argument fetched again
        // from there; each series then ends one interval after its last whole interval.
        let from = match width {
            w if w >= 86_400 => ctx.aligned_start(TimeUnit::Day, 1),
            w if w >= 3_600 => ctx.aligned_start(TimeUnit::Hour, 1),
            w if w >= 60 => ctx.aligned_start(TimeUnit::Minute, 1),
            _ => ctx.from,
        };
        let inner = a
            .get(0, "seriesList")
            .ok_or_else(|| EvalError::Invalid("hitcount: missing seriesList".into()))?;
        let mut l = ctx.shifted(from, ctx.until).eval(inner)?;
        for s in &mut l {
            s.end = s.start + (s.end - s.start).div_euclid(width) * width + width;
        }
        l
    } else {
        a.series(ctx, 0, "seriesList")?
    };
    list.into_iter()
        .map(|s| {
            let count = ((s.end - s.start) as f64 / width as f64).ceil() as i64;
            let new_start = s.end - count * width;
            let mut buckets: Vec<Vec<f64>> = vec![Vec::new(); count.max(0) as usize];
            for (i, v) in s.values.iter().enumerate() {
                let Some(v) = v else { continue };
                let st = s.start + i as i64 * s.step;
                let (sb, sm) = (
                    (st - new_start).div_euclid(width),
                    (st - new_start).rem_euclid(width),
                );
                let et = st + s.step;
                let (mut eb, mut em) = (
                    (et - new_start).div_euclid(width),
                    (et - new_start).rem_euclid(width),
                );
                if eb >= count {
                    eb = count - 1;
                    em = width;
                }
                // Python's list indexing: from the end when negative; out of range (a value
                // past the series' end, whose `end` stops short of its values as constantLine's
                // does) is graphite-web's IndexError.
                let at = |b: i64| -> R<usize> {
                    let k = if b < 0 { count + b } else { b };
                    if (0..count).contains(&k) {
                        Ok(k as usize)
                    } else {
                        err("hitcount: list index out of range (a value past the series end)")
                    }
                };
                if sb == eb {
                    if sb >= 0 {
                        buckets[at(sb)?].push(v * (em - sm) as f64);
                    }
                } else {
                    if sb >= 0 {
                        buckets[at(sb)?].push(v * (width - sm) as f64);
                    }
                    for j in sb + 1..eb {
                        buckets[at(j)?].push(v * width as f64);
                    }
                    if em > 0 {
                        buckets[at(eb)?].push(v * em as f64);
                    }
                }
            }
            let values = buckets
                .iter()
                .map(|b| (!b.is_empty()).then(|| b.iter().sum()))
                .collect();
            let name = format!(
                "hitcount({}, \"{istr}\"{})",
                s.name,
                if align { ", true" } else { "" }
            );
            let mut out = Series::new(name, new_start, width, values);
            out.tags = s.tags.clone();
            out.tags.insert("hitcount".into(), istr.clone());
            Ok(out)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::keep_last;

    proptest::proptest! {
        /// Without bounds, `non_negative`'s branch-free loop gives what `delta` gives, point by
        /// point (gaps, decreases, equal values, infinities).
        #[test]
        fn unbounded_non_negative_is_delta(
            vals in proptest::collection::vec(proptest::option::weighted(0.8, proptest::prop_oneof![-1e3f64..1e3, proptest::strategy::Just(f64::INFINITY), proptest::strategy::Just(0.0)]), 0..40),
            per_second: bool,
        ) {
            let s = super::super::super::series::Series::new("x", 0, 10, vals.clone());
            let got = super::non_negative(s, None, None, per_second).values;
            let mut prev = None;
            let want: Vec<Option<f64>> = vals
                .iter()
                .map(|v| {
                    let (d, p) = super::delta(*v, prev, None, None);
                    prev = p;
                    if per_second { d.map(|d| ((d / 10.0) * 1e6).round() / 1e6) } else { d }
                })
                .collect();
            let bits = |v: &[Option<f64>]| v.iter().map(|x| x.map(f64::to_bits)).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&got), bits(&want));
        }
    }

    #[test]
    fn point_wise() {
        let src = mem(&[("a.b", &[Some(1.0), None, Some(-3.0), Some(0.0)])]);
        let r = eval(&src, "scale(a.b, 0.5)", 4);
        assert_eq!(r[0].name, "scale(a.b,0.5)");
        assert_eq!(r[0].tags["scale"], "0.5");
        assert_eq!(vals(&r[0]), vec![Some(0.5), None, Some(-1.5), Some(0.0)]);
        assert_eq!(
            vals(&eval(&src, "scale(a.b, '2')", 4)[0]),
            vec![Some(2.0), None, Some(-6.0), Some(0.0)]
        );
        assert_eq!(
            vals(&eval(&src, "offset(a.b, 1)", 4)[0]),
            vec![Some(2.0), None, Some(-2.0), Some(1.0)]
        );
        assert_eq!(
            vals(&eval(&src, "absolute(a.b)", 4)[0]),
            vec![Some(1.0), None, Some(3.0), Some(0.0)]
        );
        assert_eq!(
            vals(&eval(&src, "invert(a.b)", 4)[0]),
            vec![Some(1.0), None, Some(-1.0 / 3.0), None]
        );
        assert_eq!(
            vals(&eval(&src, "transformNull(a.b)", 4)[0]),
            vec![Some(1.0), Some(0.0), Some(-3.0), Some(0.0)]
        );
        assert_eq!(
            eval(&src, "removeBelowValue(a.b, 0)", 4)[0].name,
            "removeBelowValue(a.b, 0)"
        );
        assert_eq!(
            vals(&eval(&src, "removeBelowValue(a.b, 0)", 4)[0]),
            vec![Some(1.0), None, None, Some(0.0)]
        );
        assert_eq!(
            vals(&eval(&src, "removeAboveValue(a.b, 0)", 4)[0]),
            vec![None, None, Some(-3.0), Some(0.0)]
        );
        assert_eq!(
            vals(&eval(&src, "integral(a.b)", 4)[0]),
            vec![Some(1.0), None, Some(-2.0), Some(-2.0)]
        );
        assert_eq!(
            vals(&eval(&src, "delay(a.b, 1)", 4)[0]),
            vec![None, Some(1.0), None, Some(-3.0)]
        );
        assert_eq!(
            vals(&eval(&src, "pow(a.b, 2)", 4)[0]),
            vec![Some(1.0), None, Some(9.0), Some(0.0)]
        );
        // Python's math.log(x, base) is ln(x)/ln(base): log(1000, 10) = 2.9999999999999996.
        let l = eval(
            &mem(&[("a.b", &[Some(100.0), Some(1000.0), Some(0.5)])]),
            "log(a.b)",
            3,
        );
        assert_eq!(l[0].name, "log(a.b, 10)");
        assert_eq!(
            vals(&l[0]),
            vec![
                Some(2.0),
                Some(2.9999999999999996),
                Some(0.5f64.ln() / 10f64.ln())
            ]
        );
    }

    #[test]
    fn math_and_null_helpers() {
        let src = mem(&[("a", &[Some(4.0), None, Some(2.5), Some(-1.0), Some(3.5)])]);
        assert_eq!(
            vals(&eval(&src, "squareRoot(a)", 5)[0]),
            vec![
                Some(2.0),
                None,
                Some(2.5f64.sqrt()),
                None,
                Some(3.5f64.sqrt())
            ]
        );
        assert_eq!(
            vals(&eval(&src, "round(a)", 5)[0]),
            vec![Some(4.0), None, Some(2.0), Some(-1.0), Some(4.0)]
        );
        assert_eq!(
            vals(&eval(&src, "isNonNull(a)", 5)[0]),
            vec![Some(1.0), Some(0.0), Some(1.0), Some(1.0), Some(1.0)]
        );
        assert_eq!(
            vals(&eval(&src, "changed(a)", 5)[0]),
            vec![Some(0.0), Some(0.0), Some(1.0), Some(1.0), Some(1.0)]
        );
        assert_eq!(
            vals(&eval(&src, "offsetToZero(a)", 5)[0]),
            vec![Some(5.0), None, Some(3.5), Some(0.0), Some(4.5)]
        );
        assert_eq!(
            vals(&eval(&src, "minMax(a)", 5)[0]),
            vec![Some(1.0), None, Some(0.7), Some(0.0), Some(0.9)]
        );
        assert_eq!(
            vals(&eval(&src, "interpolate(a)", 5)[0]),
            vec![Some(4.0), Some(3.25), Some(2.5), Some(-1.0), Some(3.5)]
        );
        assert_eq!(
            vals(&eval(&src, "scaleToSeconds(a, 30)", 5)[0]),
            vec![Some(2.0), None, Some(1.25), Some(-0.5), Some(1.75)]
        );
        assert_eq!(eval(&src, "add(a, 1)", 5)[0].values[0], Some(5.0));
    }

    #[test]
    fn derivatives() {
        let src = mem(&[(
            "c",
            &[Some(1.0), Some(3.0), None, Some(6.0), Some(2.0), Some(8.0)],
        )]);
        assert_eq!(
            vals(&eval(&src, "derivative(c)", 6)[0]),
            vec![None, Some(2.0), None, None, Some(-4.0), Some(6.0)]
        );
        assert_eq!(
            vals(&eval(&src, "nonNegativeDerivative(c)", 6)[0]),
            vec![None, Some(2.0), None, None, None, Some(6.0)]
        );
        // A wrap at maxValue 10: 10 + 1 + 2 - 6 = 7.
        assert_eq!(
            vals(&eval(&src, "nonNegativeDerivative(c, 10)", 6)[0]),
            vec![None, Some(2.0), None, None, Some(7.0), Some(6.0)]
        );
        let r = eval(&src, "perSecond(c)", 6);
        assert_eq!(r[0].name, "perSecond(c)");
        assert_eq!(
            vals(&r[0]),
            vec![None, Some(0.033333), None, None, None, Some(0.1)]
        );
    }

    #[test]
    fn keep_last_value_limits() {
        let mut v = vec![None, Some(1.0), None, None, Some(4.0), None, None, None];
        keep_last(&mut v, 2.0);
        assert_eq!(
            v,
            vec![
                None,
                Some(1.0),
                Some(1.0),
                Some(1.0),
                Some(4.0),
                None,
                None,
                None
            ]
        );
        let mut v = vec![Some(1.0), None, None, None];
        keep_last(&mut v, f64::INFINITY);
        assert_eq!(v, vec![Some(1.0); 4]);
    }

    #[test]
    fn summarize_and_hitcount() {
        let src = mem(&[(
            "s",
            &[Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0), None],
        )]);
        // Points at 60..360, buckets of 120 s aligned to epoch: [0,120) [120,240) [240,360) [360,480).
        let r = eval(&src, "summarize(s, '2min')", 6);
        assert_eq!(r[0].name, "summarize(s, \"2min\", \"sum\")");
        assert_eq!((r[0].start, r[0].step), (0, 120));
        assert_eq!(vals(&r[0]), vec![Some(1.0), Some(5.0), Some(9.0), None]);
        let r = eval(&src, "summarize(s, '2min', 'max', true)", 6);
        assert_eq!(vals(&r[0]), vec![Some(2.0), Some(4.0), Some(5.0)]);
        // hitcount: rate × seconds. Series 60..420, 3 buckets of 120 s ending at 420.
        let r = eval(&src, "hitcount(s, '2min')", 6);
        assert_eq!((r[0].start, r[0].step), (60, 120));
        assert_eq!(vals(&r[0]), vec![Some(180.0), Some(420.0), Some(300.0)]);
    }

    #[test]
    fn time_shift_refetches() {
        let src = mem(&[("t", &[Some(1.0), Some(2.0), Some(3.0), Some(4.0)])]);
        let ctx = super::super::super::eval::Ctx {
            source: &src,
            from: 120,
            until: 240,
            now: 240,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        let r = ctx
            .eval(&super::super::super::parser::parse("timeShift(t, '1min')").unwrap())
            .unwrap();
        assert_eq!(r[0].name, "timeShift(t, \"-1min\")");
        assert_eq!(r[0].start, 180);
        assert_eq!(vals(&r[0]), vec![Some(2.0), Some(3.0)]);
        // graphite-web renames the shifted series but keeps the inner pathExpression: a
        // combiner above is named by that.
        let r = ctx
            .eval(&super::super::super::parser::parse("sumSeries(timeShift(t, '1min'))").unwrap())
            .unwrap();
        assert_eq!(r[0].name, "sumSeries(t)");
    }
}
