//! graphite-web's data model (spec §3.1): a named regular grid of optional values, plus the
//! aggregation functions (`aggfuncs.py`), consolidation and the LCM normalisation of §3.2.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// The expression that produced the series (combiners name themselves from it).
    pub path_expr: String,
    pub tags: BTreeMap<String, String>,
    pub start: i64,
    /// Exclusive.
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
    /// Used by maxDataPoints and normalisation (`consolidateBy`).
    pub consolidation: String,
    pub xff: f64,
    /// How an image draws it (graphite-web's `series.color` and `series.options`).
    pub style: Style,
}

impl Series {
    pub fn new(name: impl Into<String>, start: i64, step: i64, values: Vec<Option<f64>>) -> Series {
        let name = name.into();
        let end = start + step * values.len() as i64;
        let mut tags = BTreeMap::new();
        tags.insert("name".to_string(), name.clone());
        Series {
            path_expr: name.clone(),
            name,
            tags,
            start,
            end,
            step,
            values,
            consolidation: "average".into(),
            xff: 0.0,
            style: Style::default(),
        }
    }

    /// Renames as transforms do: the new name becomes the path expression too.
    pub fn rename(&mut self, name: String) {
        self.path_expr = name.clone();
        self.name = name;
    }

    pub fn with_name(mut self, name: String) -> Series {
        self.rename(name);
        self
    }

    pub fn timestamps(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.values.len()).map(move |i| self.start + i as i64 * self.step)
    }

    pub fn set_tag(&mut self, k: &str, v: impl Into<String>) {
        self.tags.insert(k.to_string(), v.into());
    }

    /// Consolidates groups of `n` values (starting at `start`) with the series' function.
    pub fn consolidate(&self, n: usize) -> Series {
        if n <= 1 {
            return self.clone();
        }
        let values: Vec<Option<f64>> = self
            .values
            .chunks(n)
            .map(|c| consolidate_with(&self.consolidation, c, n, self.xff))
            .collect();
        let step = self.step * n as i64;
        let mut s = self.clone();
        s.values = values;
        s.step = step;
        s.end = s.start + step * s.values.len() as i64;
        s
    }
}

/// One consolidated bucket: null unless at least one value and `nonNull/n >= xff`.
pub fn consolidate_with(func: &str, vals: &[Option<f64>], n: usize, xff: f64) -> Option<f64> {
    let non_null = vals.iter().filter(|v| v.is_some()).count();
    if non_null == 0 || (non_null as f64) / (n as f64) < xff {
        return None;
    }
    match func {
        "first" => vals.iter().flatten().next().copied(),
        "last" => vals.iter().flatten().last().copied(),
        "avg_zero" => Some(vals.iter().map(|v| v.unwrap_or(0.0)).sum::<f64>() / vals.len() as f64),
        f => aggregate(f, vals),
    }
}

/// The names `aggFunc` parameters accept (spec §3.1).
pub const AGG_FUNCS: &[&str] = &[
    "average", "avg", "avg_zero", "count", "current", "diff", "last", "max", "median", "min",
    "multiply", "range", "rangeOf", "stddev", "sum", "total",
];

pub fn is_agg_func(f: &str) -> bool {
    AGG_FUNCS.contains(&f) || f == "first"
}

/// graphite-web's aggregation functions: nulls ignored, all-null → null, except `avg_zero`
/// (nulls as 0), `count` (0) and `multiply` (null if any null).
pub fn aggregate(func: &str, vals: &[Option<f64>]) -> Option<f64> {
    let nn: Vec<f64> = vals.iter().flatten().copied().collect();
    match func {
        "count" => return Some(nn.len() as f64),
        "avg_zero" => {
            return if vals.is_empty() {
                None
            } else {
                Some(vals.iter().map(|v| v.unwrap_or(0.0)).sum::<f64>() / vals.len() as f64)
            };
        }
        "multiply" => {
            if vals.is_empty() || vals.iter().any(|v| v.is_none()) {
                return None;
            }
            return Some(nn.iter().product());
        }
        _ => {}
    }
    if nn.is_empty() {
        return None;
    }
    Some(match func {
        "average" | "avg" => nn.iter().sum::<f64>() / nn.len() as f64,
        "sum" | "total" => nn.iter().sum(),
        "min" => nn.iter().copied().fold(f64::INFINITY, first_min),
        "max" => nn.iter().copied().fold(f64::NEG_INFINITY, first_max),
        "median" => {
            // graphite's safeMedian: the middle value, or the mean of the two middle ones.
            let mut v = nn.clone();
            v.sort_by(|a, b| a.total_cmp(b));
            let mid = v.len() / 2;
            if v.len().is_multiple_of(2) {
                (v[mid - 1] + v[mid]) / 2.0
            } else {
                v[mid]
            }
        }
        "diff" => nn[0] - nn[1..].iter().sum::<f64>(),
        "stddev" => {
            let mean = nn.iter().sum::<f64>() / nn.len() as f64;
            (nn.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / nn.len() as f64).sqrt()
        }
        "range" | "rangeOf" => {
            nn.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                - nn.iter().copied().fold(f64::INFINITY, f64::min)
        }
        "last" | "current" => *nn.last()?,
        "first" => nn[0],
        _ => return None,
    })
}

/// graphite-web's `_getPercentile` (NIST's rank: `n/100 * (len + 1)`, 1-based, rounded up, or
/// interpolated towards the next value when `interpolate`) of `vals` (nulls already left out).
/// `None` when there is nothing to rank, or where Python's indexing raises (`n` past 100, or so
/// far below 0 that its negative index runs off the front); a negative index within the list
/// counts from the end, as in Python.
pub fn percentile(vals: &[f64], n: f64, interpolate: bool) -> Option<f64> {
    let mut s: Vec<f64> = vals.to_vec();
    if s.is_empty() {
        return None;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let fractional = n / 100.0 * (s.len() + 1) as f64;
    let mut rank = fractional.trunc() as i64;
    let frac = fractional - rank as f64;
    if !interpolate {
        rank += frac.ceil() as i64;
    }
    let len = s.len() as i64;
    let at = |i: i64| {
        s.get(usize::try_from(if i < 0 { len + i } else { i }).ok()?)
            .copied()
    };
    let mut p = if rank == 0 {
        s[0]
    } else if rank - 1 == len {
        s[s.len() - 1]
    } else {
        at(rank - 1)?
    };
    if interpolate && rank != len {
        if let Some(next) = usize::try_from(rank).ok().and_then(|r| s.get(r)) {
            p += frac * (next - p);
        }
    }
    Some(p)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub fn lcm(a: i64, b: i64) -> i64 {
    if a == 0 || b == 0 {
        return a.max(b);
    }
    a / gcd(a, b) * b
}

/// Rows of values across series on one grid: step = LCM of the steps (each series consolidated
/// by its own function), start = earliest start, end trimmed to whole steps. Row `i` holds each
/// series' `i`-th value, whatever its start: graphite-web zips the consolidated series by
/// position, so a 10 s series starting 10 s after a 60 s one (`identity`, `time`) still
/// contributes to every row.
pub struct Normalized {
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub rows: Vec<Vec<Option<f64>>>,
}

pub fn normalize(series: &[Series]) -> Option<Normalized> {
    let g = Grid::new(series)?;
    let n = g.len();
    let rows = (0..n)
        .map(|i| {
            g.cons
                .iter()
                .map(|s| s.values.get(i).copied().flatten())
                .collect()
        })
        .collect();
    Some(Normalized {
        start: g.start,
        end: g.end,
        step: g.step,
        rows,
    })
}

/// [`normalize`]'s grid without its rows: the series consolidated to the common step (borrowed
/// when already on it, which is the usual case) and the rows' span.
pub struct Grid<'a> {
    pub start: i64,
    pub end: i64,
    pub step: i64,
    pub cons: Vec<std::borrow::Cow<'a, Series>>,
}

impl<'a> Grid<'a> {
    pub fn new(series: &'a [Series]) -> Option<Grid<'a>> {
        let step = series.iter().map(|s| s.step).fold(0, lcm);
        if series.is_empty() || step <= 0 {
            return None;
        }
        let cons: Vec<std::borrow::Cow<Series>> = series
            .iter()
            .map(|s| match (step / s.step) as usize {
                n if n <= 1 => std::borrow::Cow::Borrowed(s),
                n => std::borrow::Cow::Owned(s.consolidate(n)),
            })
            .collect();
        let start = cons.iter().map(|s| s.start).min()?;
        let mut end = cons.iter().map(|s| s.end).max()?;
        end -= (end - start) % step;
        Some(Grid {
            start,
            end,
            step,
            cons,
        })
    }

    pub fn len(&self) -> usize {
        ((self.end - self.start) / self.step).max(0) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where a series on the grid's step falls in rows `rows`: the first row and the values
    /// from it (row = index + offset).
    fn aligned<'s>(&self, s: &'s Series, rows: &std::ops::Range<usize>) -> Aligned<'s> {
        if s.step != self.step {
            return Aligned::No;
        }
        // By position, as `normalize`.
        let (a, b) = (rows.start, self.len().min(rows.end).min(s.values.len()));
        if b <= a {
            return Aligned::Outside;
        }
        Aligned::Slice(a, &s.values[a..b])
    }

    /// Calls `f(row, value)` for every non-null value in rows `rows` of one series off the
    /// grid's step.
    fn each_value_of(
        &self,
        s: &Series,
        rows: &std::ops::Range<usize>,
        f: &mut impl FnMut(usize, f64),
    ) {
        let n = self.len().min(rows.end);
        for (i, v) in s.values.iter().enumerate() {
            let Some(v) = *v else { continue };
            if i >= rows.start && i < n {
                f(i, v);
            }
        }
    }
}

/// A series against a grid's rows (see [`Grid::aligned`]).
enum Aligned<'s> {
    /// On the step: its values for rows `first..first + len`.
    Slice(usize, &'s [Option<f64>]),
    /// On the step, with no value within the rows: nothing to visit.
    Outside,
    /// On another step (never once consolidated): visited value by value.
    No,
}

/// The aggregation functions whose value can be built up one series at a time, in input
/// order, giving what [`aggregate`] gives on the row.
pub fn is_foldable(func: &str) -> bool {
    matches!(
        func,
        "sum" | "total" | "average" | "avg" | "min" | "max" | "count"
    )
}

/// [`aggregate`] of every row of the grid for a foldable function, with graphite's
/// xFilesFactor (a row with fewer than `xff` of its series non-null is null), without building
/// the rows: sums add in the same order as `Iterator::sum` does over a row.
pub fn fold_rows(g: &Grid, func: &str, xff: f64) -> Vec<Option<f64>> {
    let n = g.len();
    // Wide grids split their rows over the cores; each row still adds its series in order.
    let parts = if n * g.cons.len() >= 100_000 {
        super::parallel::cores()
    } else {
        1
    };
    let per = n.div_ceil(parts.max(1)).max(1);
    let ranges: Vec<std::ops::Range<usize>> = (0..n)
        .step_by(per)
        .map(|lo| lo..(lo + per).min(n))
        .collect();
    super::parallel::map_from(ranges, 2, |r| fold_range(g, func, xff, r))
        .into_iter()
        .flatten()
        .collect()
}

/// `f64::min` with the earlier value kept on a tie, as Python's `min` does: `f64::min` may
/// return either zero for `-0.0` and `0.0`, and did differently in two code paths.
fn first_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b < a {
        b
    } else {
        a
    }
}

/// See [`first_min`].
fn first_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b > a {
        b
    } else {
        a
    }
}

#[derive(Clone, Copy, Debug)]
enum Fold {
    Add,
    Min,
    Max,
}

fn fold_range(g: &Grid, func: &str, xff: f64, rows: std::ops::Range<usize>) -> Vec<Option<f64>> {
    let lo = rows.start;
    let mut f = RowFold::new(func, rows.len());
    for s in &g.cons {
        match g.aligned(s, &rows) {
            Aligned::Slice(first, values) => f.add_slice(first - lo, values),
            Aligned::Outside => {}
            Aligned::No => g.each_value_of(s, &rows, &mut |i, v| f.add(i - lo, v)),
        }
    }
    f.finish(func, g.cons.len(), xff)
}

/// Rows of a foldable function ([`is_foldable`]) built up series by series: each row's value
/// so far and how many non-null values made it.
#[derive(Clone, Debug)]
pub struct RowFold {
    op: Fold,
    acc: Vec<f64>,
    count: Vec<usize>,
}

impl RowFold {
    pub fn new(func: &str, rows: usize) -> RowFold {
        // What `Iterator::sum` starts from, so an all-null row sums as a row of no values does.
        let zero: f64 = std::iter::empty::<f64>().sum();
        let (op, init) = match func {
            "min" => (Fold::Min, f64::INFINITY),
            "max" => (Fold::Max, f64::NEG_INFINITY),
            _ => (Fold::Add, zero),
        };
        RowFold {
            op,
            acc: vec![init; rows],
            count: vec![0; rows],
        }
    }

    pub fn rows(&self) -> usize {
        self.acc.len()
    }

    /// One non-null value into row `k`.
    pub fn add(&mut self, k: usize, v: f64) {
        self.count[k] += 1;
        self.acc[k] = match self.op {
            Fold::Min => first_min(self.acc[k], v),
            Fold::Max => first_max(self.acc[k], v),
            Fold::Add => self.acc[k] + v,
        };
    }

    /// A series' values into rows `k..k + values.len()`: the usual case, a slice against a
    /// slice, one loop per operation and no index checks.
    pub fn add_slice(&mut self, k: usize, values: &[Option<f64>]) {
        let (acc, count) = (
            &mut self.acc[k..k + values.len()],
            &mut self.count[k..k + values.len()],
        );
        let cells = acc.iter_mut().zip(count.iter_mut()).zip(values);
        match self.op {
            // Without a branch: a null adds -0.0, which leaves every sum as it was (-0.0 + 0.0
            // is 0.0, -0.0 + -0.0 is -0.0), and counts nothing.
            Fold::Add => cells.for_each(|((a, c), v)| {
                *a += v.unwrap_or(-0.0);
                *c += v.is_some() as usize;
            }),
            Fold::Min => cells.for_each(|((a, c), v)| {
                if let Some(v) = *v {
                    *a = first_min(*a, v);
                    *c += 1;
                }
            }),
            Fold::Max => cells.for_each(|((a, c), v)| {
                if let Some(v) = *v {
                    *a = first_max(*a, v);
                    *c += 1;
                }
            }),
        }
    }

    /// Folds in the rows of series that come after this fold's (same function, same rows).
    /// Sums then add in two groups rather than one by one, which may differ in the last bit.
    pub fn merge(&mut self, later: &RowFold) {
        for (((a, c), b), n) in self
            .acc
            .iter_mut()
            .zip(self.count.iter_mut())
            .zip(&later.acc)
            .zip(&later.count)
        {
            if *n == 0 {
                continue;
            }
            *a = if *c == 0 {
                *b
            } else {
                match self.op {
                    Fold::Min => first_min(*a, *b),
                    Fold::Max => first_max(*a, *b),
                    Fold::Add => *a + *b,
                }
            };
            *c += n;
        }
    }

    /// The rows' values, for `width` series in all: null where fewer than `xff` of them had
    /// a value.
    pub fn finish(self, func: &str, width: usize, xff: f64) -> Vec<Option<f64>> {
        let mean = matches!(func, "average" | "avg");
        let counting = func == "count";
        self.acc
            .into_iter()
            .zip(self.count)
            .map(|(a, nn)| {
                if width > 0 && (nn as f64) / (width as f64) < xff {
                    return None;
                }
                // A row without values is null, a count too (graphite-web's xffValues).
                if nn == 0 {
                    None
                } else if counting {
                    Some(nn as f64)
                } else if mean {
                    Some(a / nn as f64)
                } else {
                    Some(a)
                }
            })
            .collect()
    }
}

/// Python's `%g`-like short rendering used in generated names (`scale(x,0.5)`, `100.0` for
/// constantLine keeps Python's float repr instead).
pub fn fmt_g(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        tsgate_common::numfmt::plain(v)
    }
}

/// Python's `repr(float)` (`str` too): the shortest text that reads back, `100.0`, `0.5`,
/// `1e-06`, `1e+20` (exponent form below 1e-4 and from 1e16 on).
pub fn py_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let short = tsgate_common::numfmt::Shortest::of(v);
    if (-4..16).contains(&short.exp()) {
        let s = short.plain();
        if s.contains('.') {
            s
        } else {
            s + ".0"
        }
    } else {
        short.exp_form()
    }
}

/// Python's `%g`: six significant digits, trailing zeros dropped, the exponent form below
/// 1e-4 and from 1e6 on (`1e-06`, `1e+20`, `1.23457e+06`).
pub fn py_g(v: f64) -> String {
    if !v.is_finite() {
        return py_float(v);
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{v:.5e}");
    let (mant, exp) = e.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if (-4..6).contains(&exp) {
        trim(format!("{v:.*}", (5 - exp) as usize))
    } else {
        format!(
            "{}e{}{:02}",
            trim(mant.to_string()),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

/// Python's `%d` of a float: the integer part (towards zero).
pub fn py_d(v: f64) -> String {
    format!("{}", v.trunc() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates() {
        let v = [Some(1.0), None, Some(3.0), Some(2.0)];
        assert_eq!(aggregate("average", &v), Some(2.0));
        assert_eq!(aggregate("sum", &v), Some(6.0));
        assert_eq!(aggregate("diff", &v), Some(-4.0));
        assert_eq!(aggregate("count", &v), Some(3.0));
        assert_eq!(aggregate("multiply", &v), None);
        assert_eq!(aggregate("avg_zero", &v), Some(1.5));
        assert_eq!(aggregate("median", &v), Some(2.0));
        assert_eq!(aggregate("range", &v), Some(2.0));
        assert_eq!(aggregate("last", &v), Some(2.0));
        assert_eq!(aggregate("sum", &[None, None]), None);
        assert_eq!(aggregate("count", &[None]), Some(0.0));
    }

    #[test]
    fn lcm_normalisation() {
        // Spec §3.2: a 10 s series of 1s and a 60 s series of 100s sum to 101 at step 60.
        let a = Series::new("a", 0, 10, vec![Some(1.0); 12]);
        let b = Series::new("b", 0, 60, vec![Some(100.0); 2]);
        let n = normalize(&[a, b]).unwrap();
        assert_eq!(n.step, 60);
        let sums: Vec<f64> = n
            .rows
            .iter()
            .map(|r| aggregate("sum", r).unwrap())
            .collect();
        assert_eq!(sums, vec![101.0, 101.0]);
        // graphite-web zips by position: a 10 s series whose first point is 10 s after the
        // 60 s series' (whisper's first step past `from`) still adds to each row.
        let a = Series::new("a", 10, 10, (1..=12).map(|v| Some(v as f64)).collect());
        let b = Series::new("b", 0, 60, vec![Some(100.0); 2]);
        let n = normalize(&[a, b]).unwrap();
        let sums: Vec<f64> = n
            .rows
            .iter()
            .map(|r| aggregate("sum", r).unwrap())
            .collect();
        assert_eq!((n.start, sums), (0, vec![103.5, 109.5]));
    }

    #[test]
    fn python_number_text() {
        // repr/str of a float
        for (v, want) in [
            (100.0, "100.0"),
            (0.5, "0.5"),
            (1e-6, "1e-06"),
            (1e20, "1e+20"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (0.0001, "0.0001"),
            (-3.0, "-3.0"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            assert_eq!(py_float(v), want, "{v:e}");
        }
        // %g
        for (v, want) in [
            (2.0, "2"),
            (1.5, "1.5"),
            (1e-6, "1e-06"),
            (1e20, "1e+20"),
            (1234567.0, "1.23457e+06"),
            (123456.0, "123456"),
            (0.0001, "0.0001"),
            (-0.001, "-0.001"),
            (99.9, "99.9"),
            (0.5, "0.5"),
            (100.0, "100"),
            (0.00001, "1e-05"),
            (-3.333333333, "-3.33333"),
            (-0.0, "-0"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(py_g(v), want, "{v:e}");
        }
        assert_eq!(py_d(1.5), "1");
        assert_eq!(py_d(-2.7), "-2");
    }

    #[test]
    fn graphite_percentile_rank() {
        // graphite-web's _getPercentile on [1, 2, 3, 4]: rank n% of 5, rounded up.
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&v, 25.0, false), Some(2.0)); // 1.25 → 2
        assert_eq!(percentile(&v, 50.0, false), Some(3.0)); // 2.5 → 3
        assert_eq!(percentile(&v, 10.0, false), Some(1.0)); // 0.5 → 1
        assert_eq!(percentile(&v, 99.0, false), Some(4.0)); // 4.95 → 5: the last
        assert_eq!(percentile(&v, 100.0, false), Some(4.0)); // 5 = len + 1: the last
        assert_eq!(percentile(&v, 0.0, false), Some(1.0));
        // Interpolated: 2.5 → between the 2nd and 3rd values.
        assert_eq!(percentile(&v, 50.0, true), Some(2.5));
        assert_eq!(percentile(&v, 90.0, true), Some(4.0)); // 4.5: rank 4 is the last
        assert_eq!(percentile(&v, 100.0, true), Some(4.0)); // no next value to go towards
        assert_eq!(percentile(&[], 50.0, false), None);
        // Out of range as Python indexes: rank -2 → index -3 (the 2nd of 4); rank 10 raises.
        assert_eq!(percentile(&v, -40.0, false), Some(2.0));
        assert_eq!(percentile(&v, -200.0, false), None);
        assert_eq!(percentile(&v, 200.0, false), None);
        // 5 values: 0.25 * 6 = 1.5 interpolated between the first and second.
        assert_eq!(
            percentile(&[5.0, 1.0, 4.0, 2.0, 3.0], 25.0, true),
            Some(1.5)
        );
    }

    #[test]
    fn consolidation_respects_xff() {
        let mut s = Series::new("a", 0, 10, vec![Some(1.0), None, None, Some(3.0)]);
        assert_eq!(s.consolidate(2).values, vec![Some(1.0), Some(3.0)]);
        s.xff = 0.6;
        assert_eq!(s.consolidate(2).values, vec![None, None]);
    }

    proptest::proptest! {
        /// The combiners' column-wise fold gives, bit for bit, what aggregating each row of
        /// the normalised grid gives (steps, alignments, nulls, signed zeros, xFilesFactor).
        #[test]
        fn folded_rows_equal_the_rows_aggregated(
            series in proptest::collection::vec((0i64..7, proptest::prop_oneof![proptest::strategy::Just(10i64), proptest::strategy::Just(20), proptest::strategy::Just(30)],
                proptest::collection::vec(proptest::option::of(proptest::prop_oneof![-1e3f64..1e3, proptest::strategy::Just(-0.0), proptest::strategy::Just(0.0)]), 0..14)), 1..6),
            xff in proptest::prop_oneof![proptest::strategy::Just(0.0), proptest::strategy::Just(0.5), proptest::strategy::Just(1.0)],
        ) {
            let list: Vec<Series> = series.iter().enumerate().map(|(i, (start, step, vals))| Series::new(format!("s{i}"), start * 10, *step, vals.clone())).collect();
            let (Some(norm), Some(grid)) = (normalize(&list), Grid::new(&list)) else { return Ok(()) };
            for f in ["sum", "total", "average", "avg", "min", "max", "count"] {
                let want: Vec<Option<u64>> = norm.rows.iter().map(|r| {
                    let nn = r.iter().filter(|v| v.is_some()).count();
                    // A row without values is null, a count too (what `combine` does).
                    if nn == 0 || (nn as f64) / (r.len() as f64) < xff { None } else { aggregate(f, r) }
                }.map(f64::to_bits)).collect();
                let got: Vec<Option<u64>> = fold_rows(&grid, f, xff).into_iter().map(|v| v.map(f64::to_bits)).collect();
                proptest::prop_assert_eq!(&got, &want, "{}", f);
                // Rows split in parts (as wide grids are, over the cores) give the same.
                let n = grid.len();
                for per in 1..=3 {
                    let parts: Vec<Option<u64>> = (0..n).step_by(per).flat_map(|lo| fold_range(&grid, f, xff, lo..(lo + per).min(n))).map(|v| v.map(f64::to_bits)).collect();
                    proptest::prop_assert_eq!(&parts, &want, "{} by {}", f, per);
                }
            }
        }
    }

    #[test]
    fn percentiles() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&v, 50.0, false), Some(3.0));
        assert_eq!(percentile(&v, 90.0, false), Some(5.0));
        assert_eq!(percentile(&v, 0.0, false), Some(1.0));
    }
}

/// What graphite-web keeps on a series for images only (`series.color`, `series.options`):
/// set by the Graph functions (`color`, `alpha`, `dashed`, …), read by `/render?format=png|svg`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Style {
    pub color: Option<String>,
    pub alpha: Option<f64>,
    pub dashed: Option<f64>,
    pub line_width: Option<f64>,
    pub second_y_axis: bool,
    pub stacked: bool,
    pub draw_as_infinite: bool,
    /// `areaBetween`'s lower series: its area is cut out, never painted.
    pub invisible: bool,
}
