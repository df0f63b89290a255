//! Transform, Alias and Special functions of graphite-web 1.1.10 beyond the first set:
//! `compressPeriodicGaps`, `integralByInterval`, `logit`, `sigmoid`, `timeSlice`, `timeStack`,
//! the generators (`sin`, `time`, `randomWalk`, `identity`), name rewriting (`upper`, `lower`,
//! `substr`, `aliasQuery`), each with graphite-web's names and tags.

use super::super::attime::{parse_attime, parse_offset};
use super::super::eval::{err, Args, Ctx, EvalError, GRID_STEPS_MAX, R};
use super::super::parser::{parse, Expr};
use super::super::series::Series;
use super::alias::python_replacement;
use super::filter::python_regex;
use super::more_spec::validate;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let known = matches!(
        name,
        "compressPeriodicGaps"
            | "integralByInterval"
            | "logit"
            | "sigmoid"
            | "timeSlice"
            | "timeStack"
            | "sin"
            | "sinFunction"
            | "time"
            | "timeFunction"
            | "randomWalk"
            | "randomWalkFunction"
            | "identity"
            | "upper"
            | "lower"
            | "substr"
            | "aliasQuery"
    );
    if !known {
        return None;
    }
    Some((|| {
        validate(a)?;
        match name {
            "compressPeriodicGaps" => Ok(a
                .series(ctx, 0, "seriesList")?
                .into_iter()
                .map(|mut s| {
                    let n = format!("compressPeriodicGaps({})", s.name);
                    s.rename(n);
                    compress_periodic_gaps(s)
                })
                .collect()),
            "integralByInterval" => integral_by_interval(ctx, a),
            "logit" => Ok(each_value(a.series(ctx, 0, "seriesList")?, "logit", |v| {
                let r = (v / (1.0 - v)).ln();
                // ZeroDivisionError and ValueError (log of 0 or less) become nulls.
                (v != 1.0 && r.is_finite()).then_some(r)
            })),
            "sigmoid" => {
                let list = a.series(ctx, 0, "seriesList")?;
                // math.exp raises OverflowError past ~709.78, which graphite-web lets through.
                if list
                    .iter()
                    .flat_map(|s| s.values.iter().flatten())
                    .any(|v| (-v).exp().is_infinite())
                {
                    return err("sigmoid: math range error (exp overflow)");
                }
                Ok(each_value(list, "sigmoid", |v| {
                    Some(1.0 / (1.0 + (-v).exp()))
                }))
            }
            "timeSlice" => time_slice(ctx, a),
            "timeStack" => time_stack(ctx, a),
            "sin" | "sinFunction" => {
                let n = a.string(0, "name")?;
                let amp = a.num_or(1, "amplitude", 1.0)?;
                let step = step_arg(ctx, a, 2)?;
                // The sine of each step's wall-clock time (the start's offset throughout, as
                // Python's `when += delta` keeps it).
                let off = ctx.wall(ctx.from) - ctx.from;
                Ok(vec![generated(ctx, &n, step, |t, _| {
                    Some(((t + off) as f64).sin() * amp)
                })])
            }
            "time" | "timeFunction" => {
                let n = a.string(0, "name")?;
                let step = step_arg(ctx, a, 1)?;
                // Each step's wall-clock time, and the series starts there too (graphite-web
                // times both with `Ctx::wall`'s reading).
                let off = ctx.wall(ctx.from) - ctx.from;
                let mut s = generated(ctx, &n, step, |t, _| Some((t + off) as f64));
                s.start += off;
                s.end += off;
                Ok(vec![s])
            }
            "randomWalk" | "randomWalkFunction" => {
                let n = a.string(0, "name")?;
                let step = step_arg(ctx, a, 1)?;
                // Python's random.random() differs on every run anyway: any uniform source.
                let mut x = (ctx.now as u64 ^ 0x9E37_79B9_7F4A_7C15).max(1);
                let mut cur = 0.0;
                Ok(vec![generated(ctx, &n, step, |_, _| {
                    let v = cur;
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    cur += (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                    Some(v)
                })])
            }
            "identity" => {
                let n = a.string(0, "name")?;
                check_steps(ctx, 60)?;
                let mut s = generated(ctx, &n, 60, |t, _| Some(t as f64));
                s.path_expr = format!("identity(\"{n}\")");
                Ok(vec![s])
            }
            "upper" | "lower" => {
                let pos: Vec<i64> = (1..a.call.args.len())
                    .map(|i| a.num(i, "pos").map(|n| n as i64))
                    .collect::<R<_>>()?;
                let up = name == "upper";
                Ok(a.series(ctx, 0, "seriesList")?
                    .into_iter()
                    .map(|mut s| {
                        s.name = change_case(&s.name, &pos, up);
                        s
                    })
                    .collect())
            }
            "substr" => {
                let start = a.num_or(1, "start", 0.0)? as i64;
                let stop = a.num_or(2, "stop", 0.0)? as i64;
                Ok(a.series(ctx, 0, "seriesList")?
                    .into_iter()
                    .map(|mut s| {
                        s.name = substr(&s.name, start, stop);
                        s
                    })
                    .collect())
            }
            "aliasQuery" => alias_query(ctx, a),
            _ => unreachable!(),
        }
    })())
}

/// Applies `f` to each non-null value (nulls stay), renaming `fname(name)` and tagging
/// `fname=fname`, as `logit` and `sigmoid` do.
fn each_value(list: Vec<Series>, fname: &str, f: impl Fn(f64) -> Option<f64>) -> Vec<Series> {
    list.into_iter()
        .map(|mut s| {
            s.set_tag(fname, fname);
            let n = format!("{fname}({})", s.name);
            s.rename(n);
            s.values = s.values.iter().map(|v| v.and_then(&f)).collect();
            s
        })
        .collect()
}

fn step_arg(ctx: &Ctx, a: &Args, i: usize) -> R<i64> {
    let step = a.num_or(i, "step", 60.0)? as i64;
    if step <= 0 {
        // Python's timedelta loop would never end (0) or run backwards.
        return err(format!("{}: step must be positive", a.call.name));
    }
    check_steps(ctx, step)?;
    Ok(step)
}

/// A generated series holds at most [`GRID_STEPS_MAX`] values, as fetched ones do.
pub fn check_steps(ctx: &Ctx, step: i64) -> R<()> {
    let n = (ctx.until - ctx.from) / step.max(1);
    if n > GRID_STEPS_MAX {
        return err(format!(
            "the window from {} to {} holds {n} steps of {step} s, more than {GRID_STEPS_MAX}: shorten it",
            ctx.from, ctx.until
        ));
    }
    Ok(())
}

/// A series over `[from, until)` every `step` seconds from `from` itself (graphite-web starts
/// its generators at the request's start time, not on a step boundary), `f(t, i)` each value.
fn generated(
    ctx: &Ctx,
    name: &str,
    step: i64,
    mut f: impl FnMut(i64, usize) -> Option<f64>,
) -> Series {
    let mut values = Vec::new();
    let mut t = ctx.from;
    while t < ctx.until {
        values.push(f(t, values.len()));
        t += step;
    }
    let mut s = Series::new(name, ctx.from, step, values);
    s.xff = ctx.xff();
    s
}

/// graphite-web's `_compressPeriodicGaps`: when the first values (truthy ones) come every
/// k > 1 steps with nulls between, the series is summarized to that interval with `last`.
pub fn compress_periodic_gaps(s: Series) -> Series {
    let truthy = |v: &Option<f64>| v.is_some_and(|x| x != 0.0);
    let (mut first, mut second) = (0usize, 0usize);
    for (i, v) in s.values.iter().enumerate() {
        if truthy(v) {
            if first > 0 {
                second = i;
                break;
            }
            first = i;
        }
    }
    let guess = second as i64 - first as i64;
    let third = second as i64 + guess;
    let len = s.values.len() as i64;
    if !(guess > 1 && third <= len - 2) {
        return s;
    }
    let t = third as usize;
    if !(truthy(&s.values[t]) && s.values[t - 1].is_none() && s.values[t + 1].is_none()) {
        return s;
    }
    let interval = guess * s.step;
    let new_start = s.start + first as i64 * s.step;
    let values = summarize_last(&s, interval, new_start, s.end);
    let mut out = s.clone();
    out.start = new_start;
    out.step = interval;
    out.values = values;
    out.end = out.start + out.step * out.values.len() as i64;
    out
}

/// graphite-web's `_summarizeValues(series, 'last', interval, start, end)`: a bucket takes the
/// last non-null value from the last point at or before its start up to its end, when it
/// holds a non-null point and the series' xFilesFactor allows.
fn summarize_last(s: &Series, interval: i64, new_start: i64, new_end: i64) -> Vec<Option<f64>> {
    let stamps: Vec<i64> = s.timestamps().collect();
    let per = interval as f64 / s.step as f64;
    let (mut i, mut out, mut t) = (0usize, Vec::new(), new_start);
    while t < new_end {
        let mut from = i;
        let mut non_null = 0usize;
        while i < stamps.len() && stamps[i] < t + interval {
            if stamps[i] <= t {
                from = i;
            }
            if stamps[i] >= t && s.values[i].is_some() {
                non_null += 1;
            }
            i += 1;
        }
        let ok = non_null > 0 && per > 0.0 && non_null as f64 / per >= s.xff;
        out.push(if ok {
            s.values[from..i].iter().rev().flatten().next().copied()
        } else {
            None
        });
        t += interval;
    }
    out
}

fn integral_by_interval(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let unit = a.string(1, "intervalUnit")?;
    let d = parse_offset(&unit).map_err(EvalError::from)?.abs();
    if d == 0 {
        return err("integralByInterval: integer division or modulo by zero");
    }
    let start = ctx.from;
    Ok(a.series(ctx, 0, "seriesList")?
        .into_iter()
        .map(|mut s| {
            let mut cur = 0.0;
            let mut t = s.start;
            s.values = s
                .values
                .iter()
                .map(|v| {
                    // Reset on crossing an interval boundary counted from the request's start.
                    if (t - start).div_euclid(d) != (t - start - s.step).div_euclid(d) {
                        cur = 0.0;
                    }
                    if let Some(v) = v {
                        cur += v;
                    }
                    t += s.step;
                    Some(cur)
                })
                .collect();
            s.set_tag("integralByInterval", unit.clone());
            // `series.copy(name=…)`: a new path expression, the name tag kept.
            let n = format!("integralByInterval({},'{unit}')", s.name);
            s.rename(n);
            s
        })
        .collect())
}

/// An at-time argument: text, or a number taken as epoch seconds.
fn date_arg(ctx: &Ctx, a: &Args, i: usize, name: &str, default: &str) -> R<i64> {
    let text = match a.get(i, name) {
        None | Some(Expr::None) => default.to_string(),
        Some(Expr::Num(n)) => format!("{}", *n as i64),
        _ => a.string(i, name)?,
    };
    parse_attime(&text, ctx.now).map_err(EvalError::from)
}

fn time_slice(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let start = date_arg(ctx, a, 1, "startSliceAt", "now")?;
    let end = date_arg(ctx, a, 2, "endSliceAt", "now")?;
    Ok(a.series(ctx, 0, "seriesList")?
        .into_iter()
        .map(|mut s| {
            s.set_tag("timeSliceStart", start.to_string());
            s.set_tag("timeSliceEnd", end.to_string());
            s.name = format!("timeSlice({}, {start}, {end})", s.name);
            // graphite-web walks from the request's start (on its zone's clock, see
            // `Ctx::wall`), not the series' first step.
            let mut cur = ctx.wall(ctx.from);
            for v in s.values.iter_mut() {
                if cur < start || cur > end {
                    *v = None;
                }
                cur += s.step;
            }
            s
        })
        .collect())
}

/// Most windows one `timeStack` evaluates (each one its argument again).
const TIME_STACK_MAX: i64 = 10_000;

fn time_stack(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let mut unit = a
        .opt_str(1, "timeShiftUnit")?
        .unwrap_or_else(|| "1d".into());
    if unit.starts_with(|c: char| c.is_ascii_digit()) {
        unit = format!("-{unit}");
    }
    let delta = parse_offset(&unit).map_err(EvalError::from)?;
    let from = a.num_or(2, "timeShiftStart", 0.0)? as i64;
    let to = a.num_or(3, "timeShiftEnd", 7.0)? as i64;
    let list = a.series(ctx, 0, "seriesList")?;
    let Some(first) = list.first() else {
        return Ok(vec![]);
    };
    let inner = a
        .get(0, "seriesList")
        .ok_or_else(|| EvalError::Invalid("timeStack: missing seriesList".into()))?;
    if to.saturating_sub(from) > TIME_STACK_MAX {
        return err(format!(
            "timeStack: {} shifts, more than {TIME_STACK_MAX}",
            to.saturating_sub(from)
        ));
    }
    let mut out = Vec::new();
    for shift in from..to {
        let Some(d) = delta
            .checked_mul(shift)
            .filter(|d| ctx.from.checked_add(*d).is_some())
        else {
            return err(format!(
                "timeStack: a shift of {shift} x {unit} is out of range"
            ));
        };
        for mut s in ctx.shifted(ctx.from + d, ctx.until + d).eval(inner)? {
            s.set_tag("timeShiftUnit", unit.clone());
            s.set_tag("timeShift", shift.to_string());
            let n = format!("timeShift({}, {unit}, {shift})", s.name);
            s.rename(n);
            // The first series' window, the values as fetched (a JSON answer zips them with
            // that window's timestamps).
            s.start = first.start;
            s.end = first.end;
            let fits = ((s.end - s.start) / s.step.max(1)).max(0) as usize + 1;
            s.values.truncate(fits);
            s.end = s.start + s.step * s.values.len() as i64;
            out.push(s);
        }
    }
    Ok(out)
}

/// `upper`/`lower`: the whole name, or only the characters at `pos` (Python indices; out of
/// range ones ignored).
fn change_case(name: &str, pos: &[i64], up: bool) -> String {
    let conv = |c: &str| {
        if up {
            c.to_uppercase()
        } else {
            c.to_lowercase()
        }
    };
    if pos.is_empty() {
        return conv(name);
    }
    let mut chars: Vec<String> = name.chars().map(String::from).collect();
    let n = chars.len() as i64;
    for &p in pos {
        let j = if p < 0 { n + p } else { p };
        if (0..n).contains(&j) {
            chars[j as usize] = conv(&chars[j as usize]);
        }
    }
    chars.concat()
}

/// Python's `list[start:stop]` (or `list[start:]` when `stop` is 0) on dotted nodes.
pub(crate) fn substr(name: &str, start: i64, stop: i64) -> String {
    let left = name.rfind('(').map(|i| i + 1).unwrap_or(0);
    let right = name.find(')').unwrap_or(name.len());
    let clean = if left <= right {
        &name[left..right]
    } else {
        ""
    };
    let nodes: Vec<&str> = clean.split('.').collect();
    let bound = |i: i64| super::py_slice_bound(i, nodes.len());
    let (lo, hi) = (
        bound(start),
        if stop == 0 { nodes.len() } else { bound(stop) },
    );
    let joined = if lo < hi {
        nodes[lo..hi].join(".")
    } else {
        String::new()
    };
    // `substr(func(a.b,'c'),1)` becomes `b`, not `b,'c'`.
    match joined.find(',') {
        Some(i) => joined[..i].to_string(),
        None => joined,
    }
}

fn alias_query(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let re = python_regex(&a.string(1, "search")?)?;
    let rep = python_replacement(&a.string(2, "replace")?);
    let fmt = a.string(3, "newName")?;
    let mut list = a.series(ctx, 0, "seriesList")?;
    for s in list.iter_mut() {
        let q = re.replace_all(&s.name, rep.as_str()).into_owned();
        let found = ctx.eval(&parse(&q)?)?;
        let Some(first) = found.first() else {
            return err(format!("No series found with query: {q}"));
        };
        let Some(cur) = first.values.iter().rev().flatten().next().copied() else {
            return err(format!("Cannot get last value of series: {}", first.name));
        };
        s.name = py_percent(&fmt, cur)?;
    }
    Ok(list)
}

/// Python's `fmt % value` for one float value: `%d`/`%i`/`%u`, `%s`/`%r`, `%f`/`%F`, `%e`,
/// `%g`, `%x`, `%%`, with flags, width and precision as printf reads them.
pub fn py_percent(fmt: &str, v: f64) -> R<String> {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut used = false;
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        let conv = loop {
            match it.next() {
                Some(ch) if "-+ #0123456789.".contains(ch) => spec.push(ch),
                Some(ch) => break ch,
                None => return err("aliasQuery: incomplete format"),
            }
        };
        if conv == '%' {
            out.push('%');
            continue;
        }
        if used {
            return err("aliasQuery: not enough arguments for format string");
        }
        used = true;
        let left = spec.contains('-');
        let plus = spec.contains('+');
        let zero = spec
            .trim_start_matches(['-', '+', ' ', '#'])
            .starts_with('0');
        let digits: String = spec.chars().filter(|c| !"-+ #".contains(*c)).collect();
        let (width, prec) = match digits.split_once('.') {
            Some((w, p)) => (
                w.parse::<usize>().unwrap_or(0),
                Some(p.parse::<usize>().unwrap_or(0)),
            ),
            None => (digits.parse::<usize>().unwrap_or(0), None),
        };
        let mut body = match conv {
            'd' | 'i' | 'u' => format!("{}", v.trunc() as i64),
            's' | 'r' => super::super::series::py_float(v),
            'f' | 'F' => format!("{v:.*}", prec.unwrap_or(6)),
            'e' | 'E' => {
                let s = format!("{v:.*e}", prec.unwrap_or(6));
                let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                let e: i32 = e.parse().unwrap_or(0);
                let s = format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
                if conv == 'E' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            'g' | 'G' => super::super::series::py_g(v),
            'x' => format!("{:x}", v.trunc() as i64),
            other => {
                return err(format!(
                    "aliasQuery: unsupported format character '{other}'"
                ))
            }
        };
        if plus && v >= 0.0 && conv != 's' {
            body.insert(0, '+');
        }
        if body.len() < width {
            let pad = width - body.len();
            if left {
                body.push_str(&" ".repeat(pad));
            } else if zero && conv != 's' {
                let at = usize::from(body.starts_with(['-', '+']));
                body.insert_str(at, &"0".repeat(pad));
            } else {
                body.insert_str(0, &" ".repeat(pad));
            }
        }
        out.push_str(&body);
    }
    if !used {
        return err("aliasQuery: not all arguments converted during string formatting");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    /// graphite-web times these on the request zone's wall clock read back as UTC
    /// (`time.mktime(dt.timetuple())` on a UTC server): with `tz=Asia/Kolkata` (+05:30)
    /// `time()` is 19,800 s ahead, starting there, and `timeSlice` walks from there.
    #[test]
    fn wall_clock_times_in_the_request_zone() {
        let src = mem(&[("m.a", &[Some(1.0), Some(2.0), Some(3.0), Some(4.0)])]);
        let at = |tz: chrono_tz::Tz, target: &str| {
            let ctx = Ctx {
                source: &src,
                from: 0,
                until: 240,
                now: 240,
                xff: 0.0,
                tz,
                xff_set: Default::default(),
            };
            ctx.eval(&crate::graphite::parser::parse(target).unwrap())
                .unwrap()
        };
        let kolkata: chrono_tz::Tz = "Asia/Kolkata".parse().unwrap();
        let r = at(kolkata, "time('t', 60)");
        assert_eq!((r[0].start, r[0].end), (19_800, 20_040));
        assert_eq!(vals(&r[0])[..2], [Some(19_800.0), Some(19_860.0)]);
        let r = at(chrono_tz::UTC, "time('t', 60)");
        assert_eq!((r[0].start, vals(&r[0])[1]), (0, Some(60.0)));
        let r = at(kolkata, "sin('s', 2, 60)");
        assert_eq!(r[0].start, 0);
        assert_eq!(vals(&r[0])[1], Some(19_860f64.sin() * 2.0));
        // The walk starts at 19,800, past the slice's end: every value goes.
        let r = at(kolkata, "timeSlice(m.a, '60', '180')");
        assert!(vals(&r[0]).iter().all(Option::is_none));
        let r = at(chrono_tz::UTC, "timeSlice(m.a, '60', '180')");
        assert_eq!(vals(&r[0]), vec![None, Some(2.0), Some(3.0), Some(4.0)]);
        let r = at(kolkata, "linearRegression(m.a)");
        assert_eq!(r[0].name, "linearRegression(m.a, 19800, 20040)");
        let r = at(kolkata, "linearRegression(m.a, '60')");
        assert_eq!(r[0].name, "linearRegression(m.a, 60, 20040)");
    }

    #[test]
    fn logit_and_sigmoid() {
        let src = mem(&[("m.a", &[Some(0.5), Some(1.0), Some(0.0), None, Some(0.75)])]);
        let r = eval(&src, "logit(m.a)", 5);
        assert_eq!(r[0].name, "logit(m.a)");
        assert_eq!(r[0].tags["logit"], "logit");
        assert_eq!(
            vals(&r[0]),
            vec![Some(0.0), None, None, None, Some(3f64.ln())]
        );
        let r = eval(&src, "sigmoid(m.a)", 5);
        assert_eq!(r[0].values[2], Some(0.5));
        assert_eq!(r[0].values[1], Some(1.0 / (1.0 + (-1f64).exp())));
        assert_eq!(r[0].values[3], None);
    }

    #[test]
    fn integral_by_interval_resets_on_boundaries() {
        // Points at 60..300 every 60 s; the request starts at 0; '2min' resets at 120, 240.
        let src = mem(&[("m.a", &[Some(1.0), Some(2.0), None, Some(4.0), Some(5.0)])]);
        let r = eval(&src, "integralByInterval(m.a,'2min')", 5);
        assert_eq!(r[0].name, "integralByInterval(m.a,'2min')");
        assert_eq!(r[0].tags["name"], "m.a");
        assert_eq!(
            vals(&r[0]),
            vec![Some(1.0), Some(2.0), Some(2.0), Some(4.0), Some(9.0)]
        );
    }

    #[test]
    fn compress_periodic_gaps_finds_the_period() {
        let v = vec![
            Some(1.0),
            None,
            None,
            Some(2.0),
            None,
            None,
            Some(3.0),
            None,
            None,
            Some(4.0),
            None,
        ];
        // The first value at 0 is passed over (graphite-web's `firstSeen > 0` test): the
        // period is read from indices 3 and 6.
        let s = Series::new("x", 60, 60, v);
        let c = compress_periodic_gaps(s);
        assert_eq!(c.step, 180);
        assert_eq!(c.start, 60 + 3 * 60);
        assert_eq!(c.values, vec![Some(2.0), Some(3.0), Some(4.0)]);
        let dense = Series::new("y", 60, 60, vec![Some(1.0); 6]);
        assert_eq!(compress_periodic_gaps(dense.clone()), dense);
    }

    #[test]
    fn names() {
        assert_eq!(change_case("abc.def", &[], true), "ABC.DEF");
        assert_eq!(change_case("abc.def", &[0, -1, 40], true), "Abc.deF");
        assert_eq!(substr("sumSeries(a.b.c,'x')", 1, 0), "b.c");
        assert_eq!(substr("func(a.b,'c')", 1, 0), "b");
        assert_eq!(substr("a.b.c.d", 1, 3), "b.c");
        assert_eq!(substr("a.b.c.d", -2, 0), "c.d");
        assert_eq!(
            py_percent("Channel %d MHz", 2412.7).unwrap(),
            "Channel 2412 MHz"
        );
        assert_eq!(py_percent("%.2f%%", 1.23456).unwrap(), "1.23%");
        assert_eq!(py_percent("%s", 5.0).unwrap(), "5.0");
        assert_eq!(py_percent("%05.1f", 1.23456).unwrap(), "001.2");
        assert!(py_percent("none", 1.0).is_err());
    }

    #[test]
    fn generators_start_at_the_request_start() {
        let src = mem(&[]);
        let r = eval(&src, "time('t', 120)", 5);
        assert_eq!(r[0].name, "t");
        assert_eq!(r[0].start, 0);
        assert_eq!(vals(&r[0]), vec![Some(0.0), Some(120.0), Some(240.0)]);
        let r = eval(&src, "identity('i')", 2);
        assert_eq!(r[0].path_expr, "identity(\"i\")");
        assert_eq!(vals(&r[0]), vec![Some(0.0), Some(60.0)]);
        let r = eval(&src, "sin('s', 2)", 2);
        assert_eq!(vals(&r[0]), vec![Some(0.0), Some(60f64.sin() * 2.0)]);
        let r = eval(&src, "randomWalk('w')", 3);
        assert_eq!(r[0].values[0], Some(0.0));
        assert!(r[0].values.iter().flatten().all(|v| v.abs() < 1.5));
    }

    #[test]
    fn time_slice_and_stack() {
        let src = mem(&[("m.a", &[Some(1.0), Some(2.0), Some(3.0), Some(4.0)])]);
        // The walk starts at the request's start (0), one step before the first point.
        let r = eval(&src, "timeSlice(m.a,'120','180')", 4);
        assert_eq!(r[0].name, "timeSlice(m.a, 120, 180)");
        assert_eq!(vals(&r[0]), vec![None, None, Some(3.0), Some(4.0)]);
        let r = eval(&src, "timeStack(m.a,'1min',0,2)", 4);
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].name, "timeShift(m.a, -1min, 1)");
        assert_eq!(r[1].start, 60);
        assert_eq!(vals(&r[1]), vec![None, Some(1.0), Some(2.0), Some(3.0)]);
        assert_eq!(r[1].tags["timeShift"], "1");
    }

    #[test]
    fn alias_query_formats_the_last_value() {
        let src = mem(&[
            ("chan.power.1", &[Some(1.0)]),
            ("chan.freq.1", &[Some(2400.0), Some(2412.0)]),
        ]);
        let r = eval(
            &src,
            "aliasQuery(chan.power.*,'power','freq','Channel %d MHz')",
            2,
        );
        assert_eq!(r[0].name, "Channel 2412 MHz");
    }
}
