//! The 2.42 function library over float samples.

use super::eval::{check_unique, drop_name, unwrap_parens, Evaluator, Sample, Value};
use super::{LabelSet, PromError};
use promql_parser::parser::{Call, Expr};
use std::sync::Arc;

/// Go's `strconv.FormatFloat(v, 'f', -1, 64)` (label values written by count_values).
pub fn fmt_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        tsgate_common::numfmt::plain(v)
    }
}

pub fn valid_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Linear interpolation quantile; NaN sorts lowest; φ outside [0, 1] gives ±Inf.
pub fn quantile(q: f64, mut values: Vec<f64>) -> f64 {
    if values.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    values.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.partial_cmp(b).unwrap(),
    });
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let w = rank - rank.floor();
    values[lower as usize] * (1.0 - w) + values[upper as usize] * w
}

fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = if t.is_infinite() {
        0.0
    } else if sum.abs() >= inc.abs() {
        c + ((sum - t) + inc)
    } else {
        c + ((inc - t) + sum)
    };
    (t, c)
}

/// `1 / n` when `n` is a power of two (then exact), for `n` ≥ 1.
#[inline(always)]
fn pow2_reciprocal(n: f64) -> Option<f64> {
    const MANTISSA: u64 = (1 << 52) - 1;
    let bits = n.to_bits();
    let exp = bits >> 52;
    // A normal positive power of two up to 2^1022, whose reciprocal is normal too.
    (bits & MANTISSA == 0 && (1023..=2045).contains(&exp))
        .then(|| f64::from_bits((2046 - exp) << 52))
}

/// `avg_over_time`'s running mean (Prometheus' incremental mean with Kahan compensation).
#[derive(Default, Clone, Copy)]
struct RunningMean {
    mean: f64,
    comp: f64,
    n: f64,
}

impl RunningMean {
    #[inline(always)]
    fn add(&mut self, v: f64) {
        self.n += 1.0;
        if self.mean.is_infinite() {
            if v.is_infinite() && (self.mean > 0.0) == (v > 0.0) {
                return;
            }
            if !v.is_infinite() && !v.is_nan() {
                return;
            }
        }
        // Dividing by a power of two is multiplying by its exact reciprocal (both round the
        // same real quotient), which spares the divider on counts 1, 2, 4, 8, …: half the
        // divisions of a one-minute window of 10 s points.
        let (a, b) = match pow2_reciprocal(self.n) {
            Some(r) => (v * r, self.mean * r),
            None => (v / self.n, self.mean / self.n),
        };
        (self.mean, self.comp) = kahan_inc(a - b, self.mean, self.comp);
    }

    fn value(&self) -> f64 {
        if self.mean.is_infinite() {
            self.mean
        } else {
            self.mean + self.comp
        }
    }
}

/// `avg_over_time` of each window, as `range_value` computes it, four windows at a time: a
/// window's running mean is one long chain of dependent divisions, and advancing four
/// independent chains together lets the CPU overlap their latencies.
pub fn avg_over_time_each(windows: &[&[(i64, f64)]]) -> Vec<f64> {
    let mut out = Vec::with_capacity(windows.len());
    for group in windows.chunks(4) {
        let mut lanes = [RunningMean::default(); 4];
        let longest = group.iter().map(|w| w.len()).max().unwrap_or(0);
        for i in 0..longest {
            for (lane, w) in lanes.iter_mut().zip(group) {
                if let Some(&(_, v)) = w.get(i) {
                    lane.add(v);
                }
            }
        }
        out.extend(lanes.iter().take(group.len()).map(RunningMean::value));
    }
    out
}

fn linear_regression(p: &[(i64, f64)], intercept_time: i64) -> (f64, f64) {
    let (mut n, mut sx, mut cx, mut sy, mut cy, mut sxy, mut cxy, mut sx2, mut cx2) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let init_y = p[0].1;
    let mut const_y = true;
    for (i, &(t, v)) in p.iter().enumerate() {
        if const_y && i > 0 && v != init_y {
            const_y = false;
        }
        n += 1.0;
        let x = (t - intercept_time) as f64 / 1e3;
        (sx, cx) = kahan_inc(x, sx, cx);
        (sy, cy) = kahan_inc(v, sy, cy);
        (sxy, cxy) = kahan_inc(x * v, sxy, cxy);
        (sx2, cx2) = kahan_inc(x * x, sx2, cx2);
    }
    if const_y {
        if init_y.is_infinite() {
            return (f64::NAN, f64::NAN);
        }
        return (0.0, init_y);
    }
    let (sx, sy, sxy, sx2) = (sx + cx, sy + cy, sxy + cxy, sx2 + cx2);
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

/// 2.42's `extrapolatedRate` (clamp to zero first, then the threshold rule).
fn extrapolated(
    p: &[(i64, f64)],
    range_start: i64,
    range_end: i64,
    range_ms: i64,
    counter: bool,
    rate: bool,
) -> Option<f64> {
    if p.len() < 2 {
        return None;
    }
    let (first, last) = (p[0], p[p.len() - 1]);
    let mut result = last.1 - first.1;
    if counter {
        let mut prev = 0.0;
        for &(_, v) in p {
            if v < prev {
                result += prev;
            }
            prev = v;
        }
    }
    let mut to_start = (first.0 - range_start) as f64 / 1000.0;
    let to_end = (range_end - last.0) as f64 / 1000.0;
    let sampled = (last.0 - first.0) as f64 / 1000.0;
    let avg = sampled / (p.len() - 1) as f64;
    if counter && result > 0.0 && first.1 >= 0.0 {
        let to_zero = sampled * (first.1 / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    let threshold = avg * 1.1;
    let mut interval = sampled;
    interval += if to_start < threshold {
        to_start
    } else {
        avg / 2.0
    };
    interval += if to_end < threshold {
        to_end
    } else {
        avg / 2.0
    };
    // 2.42's order: the factor is divided by the range before it scales the result (the last
    // bit differs from scaling first in a sixth of rates, enough to move a histogram_quantile
    // into another bucket).
    let mut factor = interval / sampled;
    if rate {
        factor /= go_seconds(range_ms);
    }
    Some(result * factor)
}

/// Go's `time.Duration.Seconds()` of a millisecond range: whole seconds plus the nanosecond
/// remainder over 1e9.
fn go_seconds(range_ms: i64) -> f64 {
    let ns = range_ms * 1_000_000;
    (ns / 1_000_000_000) as f64 + (ns % 1_000_000_000) as f64 / 1e9
}

/// Go's `int64(v)` on amd64: truncation toward zero, and the "integer indefinite"
/// (`math.MinInt64`) for NaN, ±Inf and anything out of range.
fn go_int64(v: f64) -> i64 {
    if (i64::MIN as f64..-(i64::MIN as f64)).contains(&v) {
        v as i64
    } else {
        i64::MIN
    }
}

/// Go's `time` (as 2.42 was built with it) on a Unix second, wrapping where Go wraps: the
/// calendar fields the date functions read from `time.Unix(sec, 0).UTC()`.
mod go_time {
    const DAY: u64 = 86_400;
    const ABSOLUTE_ZERO_YEAR: i64 = -292_277_022_399;
    /// `unixToInternal + internalToAbsolute`: Unix seconds to Go's "absolute" seconds.
    const UNIX_TO_ABSOLUTE: i64 = 9_223_372_028_715_321_600;
    const DAYS_BEFORE: [u64; 13] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];

    pub fn abs(unix: i64) -> u64 {
        unix.wrapping_add(UNIX_TO_ABSOLUTE) as u64
    }

    fn is_leap(y: i64) -> bool {
        y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
    }

    /// (year, month 1-12, day of month, day of year from 0) of an absolute time.
    pub fn date(abs: u64) -> (i64, u64, u64, u64) {
        let mut d = abs / DAY;
        let mut n = d / 146_097;
        let mut y = 400 * n;
        d -= 146_097 * n;
        n = d / 36_524;
        n -= n >> 2;
        y = y.wrapping_add(100 * n);
        d -= 36_524 * n;
        n = d / 1_461;
        y = y.wrapping_add(4 * n);
        d -= 1_461 * n;
        n = d / 365;
        n -= n >> 2;
        y = y.wrapping_add(n);
        d -= 365 * n;
        let year = (y as i64).wrapping_add(ABSOLUTE_ZERO_YEAR);
        let yday = d;
        let mut day = yday;
        if is_leap(year) {
            if day == 31 + 29 - 1 {
                return (year, 2, 29, yday);
            }
            if day > 31 + 29 - 1 {
                day -= 1;
            }
        }
        let mut month = (day / 31) as usize;
        let end = DAYS_BEFORE[month + 1];
        let begin = if day >= end {
            month += 1;
            end
        } else {
            DAYS_BEFORE[month]
        };
        (year, month as u64 + 1, day - begin + 1, yday)
    }

    /// Go's `daysSinceEpoch`: days from the absolute epoch to January 1st of `year`.
    fn days_since_epoch(year: i64) -> u64 {
        let mut y = year.wrapping_sub(ABSOLUTE_ZERO_YEAR) as u64;
        let mut n = y / 400;
        y -= 400 * n;
        let mut d = 146_097u64.wrapping_mul(n);
        n = y / 100;
        y -= 100 * n;
        d = d.wrapping_add(36_524 * n);
        n = y / 4;
        y -= 4 * n;
        d = d.wrapping_add(1_461 * n);
        d.wrapping_add(365 * y)
    }

    /// `32 - time.Date(year, month, 32, 0, 0, 0, 0, time.UTC).Day()`, as 2.42 counts days.
    pub fn days_in_month(year: i64, month: u64) -> u64 {
        let mut d = days_since_epoch(year).wrapping_add(DAYS_BEFORE[month as usize - 1]);
        if is_leap(year) && month >= 3 {
            d = d.wrapping_add(1);
        }
        d = d.wrapping_add(31);
        32 - date(d.wrapping_mul(DAY)).2
    }
}

/// A date function of Unix second `unix`, as 2.42 computes it through Go's `time`.
fn date_part(name: &str, unix: i64) -> f64 {
    let abs = go_time::abs(unix);
    let (year, month, day, yday) = go_time::date(abs);
    (match name {
        "day_of_month" => day,
        // Go's absolute epoch starts on a Monday.
        "day_of_week" => abs.wrapping_add(86_400) % 604_800 / 86_400,
        "day_of_year" => yday + 1,
        "days_in_month" => go_time::days_in_month(year, month),
        "hour" => abs % 86_400 / 3_600,
        "minute" => abs % 3_600 / 60,
        "month" => month,
        "year" => return year as f64,
        _ => 0,
    }) as f64
}

fn math_fn(name: &str) -> Option<fn(f64) -> f64> {
    Some(match name {
        "abs" => f64::abs,
        "ceil" => f64::ceil,
        "floor" => f64::floor,
        "exp" => f64::exp,
        "sqrt" => f64::sqrt,
        "ln" => f64::ln,
        "log2" => f64::log2,
        "log10" => f64::log10,
        "sgn" => |v: f64| {
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        },
        "acos" => f64::acos,
        "acosh" => f64::acosh,
        "asin" => f64::asin,
        "asinh" => f64::asinh,
        "atan" => f64::atan,
        "atanh" => f64::atanh,
        "cos" => f64::cos,
        "cosh" => f64::cosh,
        "sin" => f64::sin,
        "sinh" => f64::sinh,
        "tan" => f64::tan,
        "tanh" => f64::tanh,
        "deg" => |v: f64| v * 180.0 / std::f64::consts::PI,
        "rad" => |v: f64| v * std::f64::consts::PI / 180.0,
        _ => return None,
    })
}

fn map_vector(v: Vec<Sample>, f: impl Fn(f64) -> f64) -> Vec<Sample> {
    v.into_iter()
        .map(|s| Sample {
            labels: drop_name(&s.labels),
            v: f(s.v),
        })
        .collect()
}

/// Labels for `absent()`: the selector's equality matchers, in order, as 2.42 builds them:
/// the first `=` of a name sets it, and any later matcher of that name (another `=`, or a
/// `!=`, `=~`, `!~`) deletes it again; a non-equality matcher before any `=` deletes nothing.
/// An empty value sets no label.
fn absent_labels(e: &Expr) -> LabelSet {
    let vs = match unwrap_parens(e) {
        Expr::VectorSelector(vs) => vs,
        Expr::MatrixSelector(ms) => &ms.vs,
        _ => return Arc::new(Vec::new()),
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut has: Vec<&str> = Vec::new();
    for m in &vs.matchers.matchers {
        if m.name == "__name__" {
            continue;
        }
        out.retain(|(k, _)| *k != m.name);
        if matches!(m.op, promql_parser::label::MatchOp::Equal) && !has.contains(&m.name.as_str()) {
            // An empty value is no label (`absent(x{job=""})` has no `job`).
            if !m.value.is_empty() {
                out.push((m.name.clone(), m.value.clone()));
            }
            has.push(&m.name);
        }
    }
    out.sort();
    Arc::new(out)
}

/// A classic histogram's buckets: (upper bound `le`, cumulative count).
type Buckets = Vec<(f64, f64)>;

fn bucket_quantile(q: f64, mut buckets: Buckets) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    buckets.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    if !buckets.last().is_some_and(|b| b.0 == f64::INFINITY) {
        return f64::NAN;
    }
    // Coalesce equal bounds, then make counts monotonic.
    let mut c: Vec<(f64, f64)> = Vec::with_capacity(buckets.len());
    for b in buckets {
        match c.last_mut() {
            Some(l) if l.0 == b.0 => l.1 += b.1,
            _ => c.push(b),
        }
    }
    let mut max = f64::NEG_INFINITY;
    for b in c.iter_mut() {
        if b.1 > max {
            max = b.1;
        } else if b.1 < max {
            b.1 = max;
        }
    }
    if c.len() < 2 {
        return f64::NAN;
    }
    let obs = c[c.len() - 1].1;
    if obs == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * obs;
    let b = c[..c.len() - 1].partition_point(|x| x.1 < rank);
    if b == c.len() - 1 {
        return c[c.len() - 2].0;
    }
    if b == 0 && c[0].0 <= 0.0 {
        return c[0].0;
    }
    let (mut start, end, mut count) = (0.0, c[b].0, c[b].1);
    if b > 0 {
        start = c[b - 1].0;
        count -= c[b - 1].1;
        rank -= c[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

fn arg(c: &Call, i: usize) -> Result<&Expr, PromError> {
    c.args
        .args
        .get(i)
        .map(|b| b.as_ref())
        .ok_or_else(|| PromError::BadData(format!("{}: missing argument {}", c.func.name, i + 1)))
}

pub fn eval<'a>(ev: &Evaluator<'a>, c: &Call, t: i64) -> Result<Value<'a>, PromError> {
    let name = c.func.name;
    let out: Vec<Sample> = match name {
        "time" => return Ok(Value::Scalar(t as f64 / 1000.0)),
        "pi" => return Ok(Value::Scalar(std::f64::consts::PI)),
        "scalar" => {
            let v = ev.eval_vector(arg(c, 0)?, t)?;
            return Ok(Value::Scalar(if v.len() == 1 { v[0].v } else { f64::NAN }));
        }
        "vector" => vec![Sample {
            labels: Arc::new(Vec::new()),
            v: ev.eval_scalar(arg(c, 0)?, t)?,
        }],
        n if math_fn(n).is_some() => {
            map_vector(ev.eval_vector(arg(c, 0)?, t)?, math_fn(n).unwrap())
        }
        "round" => {
            let to = if c.args.args.len() > 1 {
                ev.eval_scalar(arg(c, 1)?, t)?
            } else {
                1.0
            };
            let inv = 1.0 / to;
            map_vector(ev.eval_vector(arg(c, 0)?, t)?, |v| {
                (v * inv + 0.5).floor() / inv
            })
        }
        "clamp" | "clamp_min" | "clamp_max" => {
            let v = ev.eval_vector(arg(c, 0)?, t)?;
            // Go's math.Max/Min, which propagate a NaN bound too.
            match name {
                "clamp" => {
                    let lo = ev.eval_scalar(arg(c, 1)?, t)?;
                    let hi = ev.eval_scalar(arg(c, 2)?, t)?;
                    if hi < lo {
                        Vec::new()
                    } else {
                        map_vector(v, |x| go_max(lo, go_min(hi, x)))
                    }
                }
                "clamp_min" => {
                    let lo = ev.eval_scalar(arg(c, 1)?, t)?;
                    map_vector(v, |x| go_max(lo, x))
                }
                _ => {
                    let hi = ev.eval_scalar(arg(c, 1)?, t)?;
                    map_vector(v, |x| go_min(hi, x))
                }
            }
        }
        "timestamp" => {
            let a = unwrap_parens(arg(c, 0)?);
            match a {
                Expr::VectorSelector(vs) => ev
                    .select_instant(vs, t, true)
                    .into_iter()
                    .map(|s| Sample {
                        labels: drop_name(&s.labels),
                        v: s.v,
                    })
                    .collect(),
                _ => map_vector(ev.eval_vector(a, t)?, |_| t as f64 / 1000.0),
            }
        }
        "day_of_month" | "day_of_week" | "day_of_year" | "days_in_month" | "hour" | "minute"
        | "month" | "year" => {
            if c.args.args.is_empty() {
                vec![Sample {
                    labels: Arc::new(Vec::new()),
                    v: date_part(name, t / 1000),
                }]
            } else {
                map_vector(ev.eval_vector(arg(c, 0)?, t)?, |v| {
                    date_part(name, go_int64(v))
                })
            }
        }
        "absent" => {
            let v = ev.eval_vector(arg(c, 0)?, t)?;
            if v.is_empty() {
                vec![Sample {
                    labels: absent_labels(arg(c, 0)?),
                    v: 1.0,
                }]
            } else {
                Vec::new()
            }
        }
        "sort" | "sort_desc" => {
            let mut v = ev.eval_vector(arg(c, 0)?, t)?;
            go_sort(&mut v, name == "sort_desc");
            return Ok(Value::Vector(v));
        }
        "label_replace" => {
            let v = ev.eval_vector(arg(c, 0)?, t)?;
            let s = |i| -> Result<String, PromError> {
                match ev.eval(arg(c, i)?, t)? {
                    Value::Str(s) => Ok(s),
                    o => Err(PromError::Execution(format!(
                        "label_replace: expected a string, got {}",
                        o.type_name()
                    ))),
                }
            };
            let (dst, repl, src, re) = (s(1)?, s(2)?, s(3)?, s(4)?);
            let regex = regex::Regex::new(&format!("^(?:{re})$")).map_err(|_| {
                // 2.42 names the pattern only, not the compiler's complaint.
                PromError::Execution(format!(
                    "invalid regular expression in label_replace(): {re}"
                ))
            })?;
            if !valid_label_name(&dst) {
                return Err(PromError::Execution(format!(
                    "invalid destination label name in label_replace(): {dst}"
                )));
            }
            let mut out = Vec::with_capacity(v.len());
            for smp in v {
                let sv = smp
                    .labels
                    .iter()
                    .find(|(k, _)| *k == src)
                    .map(|(_, v)| v.as_str())
                    .unwrap_or("");
                let labels = match regex.captures(sv) {
                    Some(caps) => {
                        let mut res = String::new();
                        caps.expand(&repl, &mut res);
                        let mut l: Vec<(String, String)> = smp
                            .labels
                            .iter()
                            .filter(|(k, _)| *k != dst)
                            .cloned()
                            .collect();
                        if !res.is_empty() {
                            l.push((dst.clone(), res));
                            l.sort();
                        }
                        Arc::new(l)
                    }
                    None => smp.labels,
                };
                out.push(Sample { labels, v: smp.v });
            }
            check_unique(&out)?;
            return Ok(Value::Vector(out));
        }
        "label_join" => {
            let v = ev.eval_vector(arg(c, 0)?, t)?;
            let mut strs = Vec::new();
            for i in 1..c.args.args.len() {
                match ev.eval(arg(c, i)?, t)? {
                    Value::Str(s) => strs.push(s),
                    o => {
                        return Err(PromError::Execution(format!(
                            "label_join: expected a string, got {}",
                            o.type_name()
                        )))
                    }
                }
            }
            if strs.len() < 2 {
                return Err(PromError::BadData(
                    "label_join needs a destination label and a separator".into(),
                ));
            }
            let (dst, sep, srcs) = (&strs[0], &strs[1], &strs[2..]);
            if let Some(bad) = srcs.iter().find(|s| !valid_label_name(s)) {
                return Err(PromError::Execution(format!(
                    "invalid source label name in label_join(): {bad}"
                )));
            }
            if !valid_label_name(dst) {
                return Err(PromError::Execution(format!(
                    "invalid destination label name in label_join(): {dst}"
                )));
            }
            let mut out = Vec::with_capacity(v.len());
            for smp in v {
                let vals: Vec<&str> = srcs
                    .iter()
                    .map(|s| {
                        smp.labels
                            .iter()
                            .find(|(k, _)| k == s)
                            .map(|(_, v)| v.as_str())
                            .unwrap_or("")
                    })
                    .collect();
                let joined = vals.join(sep);
                let mut l: Vec<(String, String)> = smp
                    .labels
                    .iter()
                    .filter(|(k, _)| k != dst)
                    .cloned()
                    .collect();
                if !joined.is_empty() {
                    l.push((dst.clone(), joined));
                    l.sort();
                }
                out.push(Sample {
                    labels: Arc::new(l),
                    v: smp.v,
                });
            }
            check_unique(&out)?;
            return Ok(Value::Vector(out));
        }
        "histogram_quantile" => {
            let q = ev.eval_scalar(arg(c, 0)?, t)?;
            let v = ev.eval_vector(arg(c, 1)?, t)?;
            let mut groups: Vec<(Vec<(String, String)>, Buckets)> = Vec::new();
            let mut at: std::collections::HashMap<Vec<(String, String)>, usize> =
                std::collections::HashMap::new();
            for s in v {
                let Some(le) = s
                    .labels
                    .iter()
                    .find(|(k, _)| k == "le")
                    .map(|(_, v)| v.as_str())
                else {
                    continue;
                };
                let Some(bound) = parse_go_float(le) else {
                    continue;
                };
                // Buckets group by every label but `le`, the metric name too (2.42): two
                // histograms apart only by name stay apart, and collide once it is dropped.
                let key: Vec<(String, String)> = s
                    .labels
                    .iter()
                    .filter(|(k, _)| k != "le")
                    .cloned()
                    .collect();
                let i = *at.entry(key.clone()).or_insert_with(|| {
                    let out = key
                        .iter()
                        .filter(|(k, _)| k != "__name__")
                        .cloned()
                        .collect();
                    groups.push((out, Vec::new()));
                    groups.len() - 1
                });
                groups[i].1.push((bound, s.v));
            }
            groups
                .into_iter()
                .map(|(l, b)| Sample {
                    labels: Arc::new(l),
                    v: bucket_quantile(q, b),
                })
                .collect()
        }
        "histogram_count" | "histogram_sum" | "histogram_fraction" => {
            // Native histograms only; float series give nothing (as in 2.42).
            Vec::new()
        }
        _ => return range_fn(ev, c, t),
    };
    Ok(Value::Vector(out))
}

/// `sort`/`sort_desc` as 2.42 orders: NaN last in both (its "less" puts an element before a
/// NaN). Up to 12 elements Go's `sort.Sort` is an insertion sort, whose swaps with that "less"
/// also reverse the NaNs among themselves; longer vectors are sorted stably, NaNs last.
fn go_sort(v: &mut [Sample], desc: bool) {
    // Whether `a` goes before `b`: 2.42's Less(j, i) under sort.Reverse.
    let before = |a: f64, b: f64| b.is_nan() || if desc { a > b } else { a < b };
    if v.len() <= 12 {
        for i in 1..v.len() {
            let mut j = i;
            while j > 0 && before(v[j].v, v[j - 1].v) {
                v.swap(j, j - 1);
                j -= 1;
            }
        }
        return;
    }
    v.sort_by(|a, b| match (a.v.is_nan(), b.v.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ if desc => b.v.partial_cmp(&a.v).expect("not NaN"),
        _ => a.v.partial_cmp(&b.v).expect("not NaN"),
    });
}

/// Go's `math.Max`: +Inf wins even over NaN, then NaN wins, and +0 over -0.
fn go_max(a: f64, b: f64) -> f64 {
    if a == f64::INFINITY || b == f64::INFINITY {
        f64::INFINITY
    } else if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() {
            b
        } else {
            a
        }
    } else if a > b {
        a
    } else {
        b
    }
}

/// Go's `math.Min`: -Inf wins even over NaN, then NaN wins, and -0 over +0.
fn go_min(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY || b == f64::NEG_INFINITY {
        f64::NEG_INFINITY
    } else if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else if a < b {
        a
    } else {
        b
    }
}

/// Go's ParseFloat as used for `le` (accepts `+Inf`, `Inf`, `NaN`).
pub fn parse_go_float(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "+inf" | "inf" | "+infinity" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// Functions over a range vector.
fn range_fn<'a>(ev: &Evaluator<'a>, c: &Call, t: i64) -> Result<Value<'a>, PromError> {
    let name = c.func.name;
    let (marg, scalar_args): (usize, Vec<f64>) = match name {
        "quantile_over_time" => (1, vec![ev.eval_scalar(arg(c, 0)?, t)?]),
        "predict_linear" => (0, vec![ev.eval_scalar(arg(c, 1)?, t)?]),
        "double_exponential_smoothing" => (
            0,
            vec![
                ev.eval_scalar(arg(c, 1)?, t)?,
                ev.eval_scalar(arg(c, 2)?, t)?,
            ],
        ),
        "rate" | "increase" | "delta" | "irate" | "idelta" | "deriv" | "changes" | "resets"
        | "avg_over_time" | "min_over_time" | "max_over_time" | "sum_over_time"
        | "count_over_time" | "stddev_over_time" | "stdvar_over_time" | "last_over_time"
        | "present_over_time" | "absent_over_time" => (0, Vec::new()),
        other => {
            return Err(PromError::Execution(format!(
                "function {other}() is not supported by tsgate (PromQL 2.42 subset)"
            )))
        }
    };
    // 2.42 keeps predict_linear (its result depends on the step's time) out of its
    // step-invariant evaluation, yet sets an `@` on its range argument as an offset from the
    // query's start: in a range query that window moves on with the steps, over the data
    // fetched for the `@` time alone (as here: the selector's span is not widened).
    let r = if name == "predict_linear" {
        ev.eval_range_drifting(arg(c, marg)?, t, t - ev.start)?
    } else {
        ev.eval_range(arg(c, marg)?, t)?
    };
    if name == "absent_over_time" {
        let out = if r.series.is_empty() {
            vec![Sample {
                labels: absent_labels(arg(c, 0)?),
                v: 1.0,
            }]
        } else {
            Vec::new()
        };
        return Ok(Value::Vector(out));
    }
    // 2.42 checks the factors inside the function, which runs only for a series with points
    // in its window: without one, bad factors are no error.
    if name == "double_exponential_smoothing" && r.series.iter().any(|s| !s.points.is_empty()) {
        let (sf, tf) = (scalar_args[0], scalar_args[1]);
        if sf <= 0.0 || sf >= 1.0 {
            return Err(PromError::Execution(format!(
                "invalid smoothing factor. Expected: 0 < sf < 1, got: {sf:.6}"
            )));
        }
        if tf <= 0.0 || tf >= 1.0 {
            return Err(PromError::Execution(format!(
                "invalid trend factor. Expected: 0 < tf < 1, got: {tf:.6}"
            )));
        }
    }
    let (rstart, rend) = (r.end - r.range, r.end);
    let mut out = Vec::with_capacity(r.series.len());
    for s in &r.series {
        let v = range_value(name, &s.points, rstart, rend, r.range, t, &scalar_args);
        if let Some(v) = v {
            let labels = if name == "last_over_time" {
                s.labels.clone()
            } else {
                s.no_name.clone()
            };
            out.push(Sample { labels, v });
        }
    }
    Ok(Value::Vector(out))
}

/// A range function's value over one series' window `p` of `[rstart, rend]` (`range` long),
/// at evaluation time `t`; `None` when it has none.
pub fn range_value(
    name: &str,
    p: &[(i64, f64)],
    rstart: i64,
    rend: i64,
    range: i64,
    t: i64,
    scalar_args: &[f64],
) -> Option<f64> {
    let vals = || p.iter().map(|x| x.1);
    match name {
        "rate" => extrapolated(p, rstart, rend, range, true, true),
        "increase" => extrapolated(p, rstart, rend, range, true, false),
        "delta" => extrapolated(p, rstart, rend, range, false, false),
        "irate" | "idelta" => {
            if p.len() < 2 {
                None
            } else {
                let (prev, last) = (p[p.len() - 2], p[p.len() - 1]);
                let dv = if name == "irate" && last.1 < prev.1 {
                    last.1
                } else {
                    last.1 - prev.1
                };
                let dt = last.0 - prev.0;
                if name == "irate" {
                    if dt == 0 {
                        None
                    } else {
                        Some(dv / (dt as f64 / 1000.0))
                    }
                } else {
                    Some(dv)
                }
            }
        }
        "deriv" => (p.len() >= 2).then(|| linear_regression(p, p[0].0).0),
        "predict_linear" => (p.len() >= 2).then(|| {
            let (slope, icpt) = linear_regression(p, t);
            slope * scalar_args[0] + icpt
        }),
        "double_exponential_smoothing" => (p.len() >= 2).then(|| {
            let (sf, tf) = (scalar_args[0], scalar_args[1]);
            let (mut s0, mut s1, mut b) = (0.0, p[0].1, p[1].1 - p[0].1);
            for (i, x) in p.iter().enumerate().skip(1) {
                let xs = sf * x.1;
                if i > 1 {
                    b = tf * (s1 - s0) + (1.0 - tf) * b;
                }
                let y = (1.0 - sf) * (s1 + b);
                s0 = s1;
                s1 = xs + y;
            }
            s1
        }),
        "changes" => Some(
            p.windows(2)
                .filter(|w| w[0].1 != w[1].1 && !(w[0].1.is_nan() && w[1].1.is_nan()))
                .count() as f64,
        ),
        "resets" => Some(p.windows(2).filter(|w| w[1].1 < w[0].1).count() as f64),
        "avg_over_time" => {
            let mut m = RunningMean::default();
            for v in vals() {
                m.add(v);
            }
            Some(m.value())
        }
        "sum_over_time" => {
            let (mut s, mut comp) = (0.0, 0.0);
            for v in vals() {
                (s, comp) = kahan_inc(v, s, comp);
            }
            Some(if s.is_infinite() { s } else { s + comp })
        }
        "min_over_time" => {
            Some(
                vals()
                    .skip(1)
                    .fold(p[0].1, |m, v| if v < m || m.is_nan() { v } else { m }),
            )
        }
        "max_over_time" => {
            Some(
                vals()
                    .skip(1)
                    .fold(p[0].1, |m, v| if v > m || m.is_nan() { v } else { m }),
            )
        }
        "count_over_time" => Some(p.len() as f64),
        "present_over_time" => Some(1.0),
        "last_over_time" => Some(p[p.len() - 1].1),
        "quantile_over_time" => Some(quantile(scalar_args[0], vals().collect())),
        "stddev_over_time" | "stdvar_over_time" => {
            let (mut n, mut mean, mut cm, mut aux, mut ca) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for v in vals() {
                n += 1.0;
                let d = v - (mean + cm);
                (mean, cm) = kahan_inc(d / n, mean, cm);
                (aux, ca) = kahan_inc(d * (v - (mean + cm)), aux, ca);
            }
            let var = (aux + ca) / n;
            Some(if name == "stddev_over_time" {
                var.sqrt()
            } else {
                var
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod lanes_tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            -1e6f64..1e6,
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            Just(0.1),
            Just(1e300),
            Just(-1e300),
        ]
    }

    proptest! {
        /// The running mean's step, with powers of two multiplied by their reciprocal, is bit
        /// for bit Prometheus' two divisions (any NaN for a NaN).
        #[test]
        fn running_mean_divides_as_prometheus(vals in proptest::collection::vec(prop_oneof![value(), proptest::num::f64::ANY], 1..40)) {
            let mut m = RunningMean::default();
            let (mut mean, mut comp, mut n) = (0.0f64, 0.0f64, 0.0f64);
            for &v in &vals {
                m.add(v);
                n += 1.0;
                if mean.is_infinite() && ((v.is_infinite() && (mean > 0.0) == (v > 0.0)) || (!v.is_infinite() && !v.is_nan())) {
                    continue;
                }
                (mean, comp) = kahan_inc(v / n - mean / n, mean, comp);
                // A NaN's payload is not kept by arithmetic (nor shown: it answers "NaN").
                let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
                prop_assert!(same(m.mean, mean) && same(m.comp, comp), "after {} values: {:?} vs {:?}", n, (m.mean, m.comp), (mean, comp));
            }
        }

        /// Bit for bit what `range_value` gives window by window.
        #[test]
        fn avg_over_time_each_is_range_value(windows in proptest::collection::vec(proptest::collection::vec(value(), 1..12), 0..11)) {
            let pts: Vec<Vec<(i64, f64)>> = windows.iter().map(|w| w.iter().enumerate().map(|(i, &v)| (i as i64 * 1000, v)).collect()).collect();
            let refs: Vec<&[(i64, f64)]> = pts.iter().map(Vec::as_slice).collect();
            let got = avg_over_time_each(&refs);
            prop_assert_eq!(got.len(), refs.len());
            for (w, g) in refs.iter().zip(&got) {
                let want = range_value("avg_over_time", w, 0, 60_000, 60_000, 60_000, &[]).unwrap();
                prop_assert_eq!(want.to_bits(), g.to_bits(), "window {:?}", w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rates over buckets with few events: 2.42 divides the extrapolation factor by the range
    /// before scaling (`factor := interval/sampled; factor /= range; v *= factor`). Scaling
    /// first and dividing after gives another last bit for some of these windows; the rate must
    /// be the factor-first value in every one of them, and the two orders must really differ
    /// somewhere here (else this test would not catch the old order).
    #[test]
    fn rate_divides_the_factor_by_the_range_first() {
        let mut differs = 0;
        for events in 1..40u32 {
            for offset in [1_000i64, 3_000, 7_000, 11_000] {
                // A counter of `events` increments spread over a 5 m window sampled every 15 s.
                let pts: Vec<(i64, f64)> = (0..20)
                    .map(|i| (offset + i * 15_000, f64::from(events * i as u32 / 19)))
                    .collect();
                let (start, end, range) = (0, 300_000, 300_000);
                let got = extrapolated(&pts, start, end, range, true, true).unwrap();
                let result = pts[19].1 - pts[0].1;
                let sampled = (pts[19].0 - pts[0].0) as f64 / 1000.0;
                let avg = sampled / 19.0;
                let to_start = (pts[0].0 - start) as f64 / 1000.0;
                let to_start = if result > 0.0 {
                    to_start.min(sampled * (pts[0].1 / result))
                } else {
                    to_start
                };
                let to_end = (end - pts[19].0) as f64 / 1000.0;
                let mut interval = sampled;
                interval += if to_start < avg * 1.1 {
                    to_start
                } else {
                    avg / 2.0
                };
                interval += if to_end < avg * 1.1 {
                    to_end
                } else {
                    avg / 2.0
                };
                let factor_first = result * (interval / sampled / 300.0);
                let scale_first = result * (interval / sampled) / 300.0;
                assert_eq!(
                    got.to_bits(),
                    factor_first.to_bits(),
                    "events {events} offset {offset}"
                );
                differs += usize::from(factor_first.to_bits() != scale_first.to_bits());
            }
        }
        assert!(differs > 0, "no window tells the two orders apart");
    }

    #[test]
    fn go_duration_seconds() {
        assert_eq!(go_seconds(60_000), 60.0);
        assert_eq!(go_seconds(1_500), 1.5);
        assert_eq!(go_seconds(90_123), 90.123);
    }

    #[test]
    fn rate_matches_242_numbers() {
        // Counter 0,10,…,80 every 15 s from t=0: rate[1m] at +67 s = 0.6667, increase[1m] = 40,
        // increase[2m] at +125 s = 80 (values verified against Prometheus 2.42).
        let pts: Vec<(i64, f64)> = (0..9).map(|i| (i * 15_000, i as f64 * 10.0)).collect();
        let w = |lo: i64, hi: i64| {
            pts.iter()
                .copied()
                .filter(|p| p.0 >= lo && p.0 <= hi)
                .collect::<Vec<_>>()
        };
        let r = extrapolated(&w(7_000, 67_000), 7_000, 67_000, 60_000, true, true).unwrap();
        assert!((r - 0.666_666_666).abs() < 1e-6, "{r}");
        let inc = extrapolated(&w(7_000, 67_000), 7_000, 67_000, 60_000, true, false).unwrap();
        assert!((inc - 40.0).abs() < 1e-9, "{inc}");
        let inc2 = extrapolated(&w(5_000, 125_000), 5_000, 125_000, 120_000, true, false).unwrap();
        assert!((inc2 - 80.0).abs() < 1e-9, "{inc2}");
    }

    #[test]
    fn quantiles_and_buckets() {
        assert_eq!(quantile(0.5, vec![1.0, 2.0, 3.0, 4.0]), 2.5);
        assert_eq!(quantile(-0.5, vec![1.0]), f64::NEG_INFINITY);
        assert_eq!(quantile(1.5, vec![1.0]), f64::INFINITY);
        let b = vec![
            (0.1, 10.0),
            (0.5, 50.0),
            (1.0, 90.0),
            (f64::INFINITY, 100.0),
        ];
        assert!((bucket_quantile(0.5, b.clone()) - 0.5).abs() < 1e-12);
        assert!((bucket_quantile(0.95, b.clone()) - 1.0).abs() < 1e-12);
        assert!(bucket_quantile(0.5, vec![(1.0, 1.0)]).is_nan());
    }

    #[test]
    fn dates() {
        // 2023-11-14T22:13:20Z is a Tuesday, day 318.
        let t = 1_700_000_000;
        assert_eq!(
            [
                "year",
                "month",
                "day_of_month",
                "hour",
                "minute",
                "day_of_week",
                "day_of_year",
                "days_in_month"
            ]
            .map(|n| date_part(n, t)),
            [2023.0, 11.0, 14.0, 22.0, 13.0, 2.0, 318.0, 30.0]
        );
        assert_eq!(date_part("month", 951_782_400), 2.0); // 2000-02-29
        assert_eq!(date_part("days_in_month", 951_782_400), 29.0);
    }
}
