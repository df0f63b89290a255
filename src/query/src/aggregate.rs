//! OpenTSDB's aggregators and group-by interpolation. Output timestamps are the union of the
//! inputs'; a series contributes only between its first and last point; a series without a
//! point at T is interpolated per aggregator (linear, zero, max, min or previous). The result
//! at T is computed on the integer path when every value involved is an integer.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Estimation {
    /// Apache Commons Math's default (`LEGACY`).
    Legacy,
    R3,
    R7,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregator {
    Sum,
    Zimsum,
    Pfsum,
    Avg,
    Min,
    Max,
    Mimmin,
    Mimmax,
    Dev,
    Median,
    Mult,
    Diff,
    Count,
    First,
    Last,
    SquareSum,
    /// No aggregation: each series stands alone.
    None,
    /// Percentile in tenths (500 = p50, 999 = p99.9) with its estimation.
    Pct(u16, Estimation),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interp {
    Lerp,
    Zero,
    Max,
    Min,
    Prev,
}

const PCTS: [(&str, u16); 6] = [
    ("50", 500),
    ("75", 750),
    ("90", 900),
    ("95", 950),
    ("99", 990),
    ("999", 999),
];

impl Aggregator {
    pub fn parse(s: &str) -> Option<Aggregator> {
        use Aggregator::*;
        Some(match s {
            "sum" => Sum,
            "zimsum" => Zimsum,
            "pfsum" => Pfsum,
            "avg" => Avg,
            "min" => Min,
            "max" => Max,
            "mimmin" => Mimmin,
            "mimmax" => Mimmax,
            "dev" => Dev,
            "median" => Median,
            "mult" => Mult,
            "diff" => Diff,
            "count" => Count,
            "first" => First,
            "last" => Last,
            "squareSum" => SquareSum,
            "none" => None,
            _ => {
                let (rest, est) = if let Some(r) = s.strip_prefix("ep") {
                    if let Some(r) = r.strip_suffix("r3") {
                        (r, Estimation::R3)
                    } else {
                        (r.strip_suffix("r7")?, Estimation::R7)
                    }
                } else {
                    (s.strip_prefix('p')?, Estimation::Legacy)
                };
                let p = PCTS.iter().find(|(n, _)| *n == rest)?.1;
                Pct(p, est)
            }
        })
    }

    /// Every registered name (what `/api/aggregators` lists).
    pub fn names() -> Vec<String> {
        let mut v: Vec<String> = [
            "sum",
            "zimsum",
            "pfsum",
            "avg",
            "min",
            "max",
            "mimmin",
            "mimmax",
            "dev",
            "median",
            "mult",
            "diff",
            "count",
            "first",
            "last",
            "squareSum",
            "none",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for (n, _) in PCTS {
            v.push(format!("p{n}"));
            v.push(format!("ep{n}r3"));
            v.push(format!("ep{n}r7"));
        }
        v
    }

    pub fn name(self) -> String {
        Aggregator::names()
            .into_iter()
            .find(|n| Aggregator::parse(n) == Some(self))
            .unwrap_or_default()
    }

    fn interp(self) -> Interp {
        use Aggregator::*;
        match self {
            Zimsum | Count | First | Last | SquareSum | None => Interp::Zero,
            Mimmin => Interp::Max,
            Mimmax => Interp::Min,
            Pfsum => Interp::Prev,
            _ => Interp::Lerp,
        }
    }

    /// Integer path (OpenTSDB's long aggregators). `vals` is non-empty.
    pub fn reduce_i64(self, vals: &[i64]) -> i64 {
        use Aggregator::*;
        let n = vals.len() as i64;
        match self {
            Sum | Zimsum | Pfsum | None => vals.iter().fold(0i64, |a, &b| a.wrapping_add(b)),
            Avg => vals.iter().fold(0i64, |a, &b| a.wrapping_add(b)) / n,
            Min | Mimmin => *vals.iter().min().expect("non-empty"),
            Max | Mimmax => *vals.iter().max().expect("non-empty"),
            Dev => dev(&vals.iter().map(|&v| v as f64).collect::<Vec<_>>()) as i64,
            Median => {
                let mut s = vals.to_vec();
                s.sort_unstable();
                s[s.len() / 2]
            }
            Mult => vals.iter().fold(1i64, |a, &b| a.wrapping_mul(b)),
            Diff => vals[vals.len() - 1].wrapping_sub(vals[0]),
            Count => n,
            First => vals[0],
            Last => vals[vals.len() - 1],
            SquareSum => vals
                .iter()
                .fold(0i64, |a, &b| a.wrapping_add(b.wrapping_mul(b))),
            Pct(p, est) => {
                percentile(&vals.iter().map(|&v| v as f64).collect::<Vec<_>>(), p, est) as i64
            }
        }
    }

    /// Double path: NaN values are skipped; nothing left gives NaN (count gives 0).
    pub fn reduce_f64(self, vals: &[f64]) -> f64 {
        use Aggregator::*;
        // Without NaNs (the common case) the values are used as they are, not copied.
        let filtered: Vec<f64>;
        let v: &[f64] = if vals.iter().any(|x| x.is_nan()) {
            filtered = vals.iter().copied().filter(|x| !x.is_nan()).collect();
            &filtered
        } else {
            vals
        };
        if v.is_empty() {
            return if self == Count { 0.0 } else { f64::NAN };
        }
        match self {
            Sum | Zimsum | Pfsum | None => v.iter().sum(),
            Avg => v.iter().sum::<f64>() / v.len() as f64,
            Min | Mimmin => v.iter().copied().fold(f64::INFINITY, f64::min),
            Max | Mimmax => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Dev => dev(v),
            Median => {
                let mut s = v.to_vec();
                s.sort_by(f64::total_cmp);
                s[s.len() / 2]
            }
            Mult => v.iter().product(),
            Diff => v[v.len() - 1] - v[0],
            Count => v.len() as f64,
            First => v[0],
            Last => v[v.len() - 1],
            SquareSum => v.iter().map(|x| x * x).sum(),
            // OpenTSDB's double path ignores the estimation (a quirk of its code).
            Pct(p, _) => percentile(v, p, Estimation::Legacy),
        }
    }
}

/// Population standard deviation (Welford), 0 for one value.
fn dev(v: &[f64]) -> f64 {
    let (mut mean, mut m2) = (0.0, 0.0);
    for (i, x) in v.iter().enumerate() {
        let d = x - mean;
        mean += d / (i + 1) as f64;
        m2 += d * (x - mean);
    }
    (m2 / v.len() as f64).sqrt()
}

/// Apache Commons Math's `Percentile` with the given estimation; `p` in tenths of a percent.
pub fn percentile(v: &[f64], p_tenths: u16, est: Estimation) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let p = p_tenths as f64 / 1000.0;
    if s.len() == 1 {
        return s[0];
    }
    match est {
        Estimation::Legacy => {
            let pos = p * (n + 1.0);
            if pos < 1.0 {
                s[0]
            } else if pos >= n {
                s[s.len() - 1]
            } else {
                let f = pos.floor();
                let lo = s[f as usize - 1];
                lo + (pos - f) * (s[f as usize] - lo)
            }
        }
        Estimation::R3 => {
            let h = n * p;
            let i = (h.round_ties_even() as i64).clamp(1, s.len() as i64);
            if h <= 0.5 {
                s[0]
            } else {
                s[i as usize - 1]
            }
        }
        Estimation::R7 => {
            let h = ((n - 1.0) * p + 1.0).clamp(1.0, n);
            let f = h.floor();
            let lo = s[f as usize - 1];
            if f as usize >= s.len() {
                lo
            } else {
                lo + (h - f) * (s[f as usize] - lo)
            }
        }
    }
}

/// A value on the integer or the double path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

impl From<tsgate_schema::DataValue> for Num {
    fn from(v: tsgate_schema::DataValue) -> Num {
        match v {
            tsgate_schema::DataValue::Int(i) => Num::Int(i),
            other => Num::Float(other.as_f64()),
        }
    }
}

/// Aggregates several series (each sorted by time) into one.
pub fn aggregate(agg: Aggregator, inputs: &[&[(u64, Num)]]) -> Vec<(u64, Num)> {
    aggregate_inner(agg, inputs, None)
}

/// [`aggregate`] for series of rates, as OpenTSDB's `AggregationIterator` does with `rate`:
/// a series without a rate at a timestamp takes its previous rate (no interpolation, whatever
/// the aggregator), and before its first emitted rate it takes `leads[i]`, the rate of its
/// first point against time zero (`rate_lead` in the downsampler module), so it counts from the
/// group's first timestamp on. It stops counting after its last rate.
pub fn aggregate_rates(
    agg: Aggregator,
    inputs: &[&[(u64, Num)]],
    leads: &[Option<Num>],
) -> Vec<(u64, Num)> {
    aggregate_inner(agg, inputs, Some(leads))
}

fn aggregate_inner(
    agg: Aggregator,
    inputs: &[&[(u64, Num)]],
    leads: Option<&[Option<Num>]>,
) -> Vec<(u64, Num)> {
    // A lone series has a value at each of its own timestamps and no others (rates too).
    if inputs.len() == 1 && (agg == Aggregator::None || agg.interp() == Interp::Lerp) {
        // One series, an aggregator that is the identity on one value: skip the merge.
        let one = inputs[0];
        if !matches!(agg, Aggregator::Dev | Aggregator::Diff) {
            return one.to_vec();
        }
    }
    let times = union_times(inputs);
    let mut cursors = vec![0usize; inputs.len()];
    let mut out = Vec::with_capacity(times.len());
    let mut vals: Vec<Num> = Vec::with_capacity(inputs.len());
    // Each timestamp's values on one path, in buffers reused across timestamps.
    let (mut ints, mut fl): (Vec<i64>, Vec<f64>) = (Vec::new(), Vec::new());
    let interp = agg.interp();
    for &t in &times {
        vals.clear();
        for (i, (s, cur)) in inputs.iter().zip(cursors.iter_mut()).enumerate() {
            while *cur < s.len() && s[*cur].0 < t {
                *cur += 1;
            }
            if *cur == s.len() {
                continue; // already ended
            }
            let (t1, v1) = s[*cur];
            if t1 == t {
                vals.push(v1);
                continue;
            }
            if let Some(leads) = leads {
                // Rates: the previous rate, or the lead before the first one.
                let prev = match *cur {
                    0 => leads.get(i).copied().flatten(),
                    c => Some(s[c - 1].1),
                };
                vals.extend(prev);
                continue;
            }
            if *cur == 0 {
                continue; // not started yet
            }
            let (t0, v0) = s[*cur - 1];
            vals.push(match interp {
                Interp::Zero => Num::Int(0),
                Interp::Prev => v0,
                Interp::Max => match (v0, v1) {
                    (Num::Int(_), Num::Int(_)) => Num::Int(i64::MAX),
                    _ => Num::Float(f64::MAX),
                },
                Interp::Min => match (v0, v1) {
                    (Num::Int(_), Num::Int(_)) => Num::Int(i64::MIN),
                    _ => Num::Float(-f64::MAX),
                },
                Interp::Lerp => lerp(t, (t0, v0), (t1, v1)),
            });
        }
        if vals.is_empty() {
            continue;
        }
        let v = if vals.iter().all(|v| matches!(v, Num::Int(_))) {
            ints.clear();
            ints.extend(
                vals.iter()
                    .map(|v| if let Num::Int(i) = v { *i } else { 0 }),
            );
            Num::Int(agg.reduce_i64(&ints))
        } else {
            fl.clear();
            fl.extend(vals.iter().map(|v| v.as_f64()));
            Num::Float(agg.reduce_f64(&fl))
        };
        out.push((t, v));
    }
    out
}

/// Every input's timestamps, sorted and distinct. Series downsampled alike share theirs,
/// which is checked in one pass instead of sorting them all.
fn union_times(inputs: &[&[(u64, Num)]]) -> Vec<u64> {
    let first = inputs
        .iter()
        .max_by_key(|s| s.len())
        .copied()
        .unwrap_or(&[]);
    let strictly_increasing = first.windows(2).all(|w| w[0].0 < w[1].0);
    let shared = strictly_increasing
        && inputs
            .iter()
            .all(|s| s.len() == first.len() && s.iter().zip(first).all(|(a, b)| a.0 == b.0));
    if shared {
        return first.iter().map(|p| p.0).collect();
    }
    let mut times: Vec<u64> = inputs.iter().flat_map(|s| s.iter().map(|p| p.0)).collect();
    times.sort_unstable();
    times.dedup();
    times
}

fn lerp(t: u64, (t0, v0): (u64, Num), (t1, v1): (u64, Num)) -> Num {
    match (v0, v1) {
        (Num::Int(a), Num::Int(b)) => {
            let num = (t - t0) as i128 * (b as i128 - a as i128);
            Num::Int(a + (num / (t1 - t0) as i128) as i64)
        }
        _ => {
            let (a, b) = (v0.as_f64(), v1.as_f64());
            Num::Float(a + (t - t0) as f64 * (b - a) / (t1 - t0) as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(pts: &[(u64, i64)]) -> Vec<(u64, Num)> {
        pts.iter().map(|&(t, v)| (t, Num::Int(v))).collect()
    }

    fn ints(out: &[(u64, Num)]) -> Vec<i64> {
        out.iter()
            .map(|(_, v)| match v {
                Num::Int(i) => *i,
                Num::Float(f) => panic!("float {f}"),
            })
            .collect()
    }

    /// The aggregators page of OpenTSDB's user guide: A every 20 s from 10, B every 20 s from 0.
    /// (Our spec's table prints 25 at t=30, but its own terms, 15+15, make 30.)
    #[test]
    fn opentsdb_docs_example() {
        let a = series(&[(10, 5), (30, 15), (50, 5)]);
        let b = series(&[(0, 10), (20, 20), (40, 10), (60, 20)]);
        let inputs = [a.as_slice(), b.as_slice()];
        assert_eq!(
            ints(&aggregate(Aggregator::Sum, &inputs)),
            vec![10, 20, 30, 30, 20, 20, 20]
        );
        assert_eq!(
            ints(&aggregate(Aggregator::Zimsum, &inputs)),
            vec![10, 5, 20, 15, 10, 5, 20]
        );
        assert_eq!(
            ints(&aggregate(Aggregator::Mimmax, &inputs)),
            vec![10, 5, 20, 15, 10, 5, 20]
        );
        assert_eq!(
            ints(&aggregate(Aggregator::Count, &inputs)),
            vec![1, 2, 2, 2, 2, 2, 1]
        );
        assert_eq!(
            ints(&aggregate(Aggregator::Pfsum, &inputs)),
            vec![10, 15, 25, 35, 25, 15, 20]
        );
    }

    /// TestTsdbQueryQueries.runInterpolationSeconds: 1..300 and 300..1 offset by 15 s.
    #[test]
    fn integer_interpolation_truncates() {
        let t0 = 1356998430u64 * 1000;
        let a: Vec<_> = (0..300)
            .map(|i| (t0 + i * 30_000, Num::Int(i as i64 + 1)))
            .collect();
        let b: Vec<_> = (0..300)
            .map(|i| (t0 + 15_000 + i * 30_000, Num::Int(300 - i as i64)))
            .collect();
        let out = aggregate(Aggregator::Sum, &[a.as_slice(), b.as_slice()]);
        assert_eq!(out.len(), 600);
        let v = ints(&out);
        assert_eq!((v[0], v[599]), (1, 1));
        assert_eq!(out[598].0, 1357007400000);
        for (i, x) in v.iter().enumerate().take(599).skip(1) {
            assert_eq!(*x, if i % 2 == 1 { 301 } else { 302 }, "at {i}");
        }
    }

    /// OpenTSDB's AggregationIterator with `rate` (nextDoubleValue: "No LERP for the rate"):
    /// a series missing a timestamp takes its previous rate, and before its first emitted rate
    /// the rate of its first point against time zero, which the iterator's constructor loads
    /// as the series' current value; after its last rate it stops.
    #[test]
    fn rates_take_the_previous_rate_not_an_interpolation() {
        let f = |pts: &[(u64, f64)]| -> Vec<(u64, Num)> {
            pts.iter().map(|&(t, v)| (t, Num::Float(v))).collect()
        };
        let a = f(&[(60, 1.0), (120, 2.0), (180, 3.0)]);
        let b = f(&[(90, 10.0), (150, 20.0)]);
        let leads = [Some(Num::Float(0.5)), Some(Num::Float(0.25))];
        let inputs = [a.as_slice(), b.as_slice()];
        let sum: Vec<f64> = aggregate_rates(Aggregator::Sum, &inputs, &leads)
            .iter()
            .map(|p| p.1.as_f64())
            .collect();
        // 60: A + B's lead; 90: A's previous 1.0 (a lerp would give 1.5) + 10; 180: B ended.
        assert_eq!(sum, vec![1.25, 11.0, 12.0, 22.0, 3.0]);
        let count: Vec<f64> = aggregate_rates(Aggregator::Count, &inputs, &leads)
            .iter()
            .map(|p| p.1.as_f64())
            .collect();
        assert_eq!(count, vec![2.0, 2.0, 2.0, 2.0, 1.0]);
        // zimsum takes the previous rate too, not a zero.
        let zim: Vec<f64> = aggregate_rates(Aggregator::Zimsum, &inputs, &leads)
            .iter()
            .map(|p| p.1.as_f64())
            .collect();
        assert_eq!(zim, sum);
        // Without a lead a series counts from its first rate on.
        let late: Vec<f64> = aggregate_rates(Aggregator::Count, &inputs, &[None, None])
            .iter()
            .map(|p| p.1.as_f64())
            .collect();
        assert_eq!(late, vec![1.0, 2.0, 2.0, 2.0, 1.0]);
    }

    proptest::proptest! {
        /// The union of timestamps is the sorted, distinct set however the inputs overlap
        /// (all alike, shifted, different lengths, repeated timestamps).
        #[test]
        fn union_times_is_sorted_and_distinct(base in proptest::collection::vec(0u64..50, 0..20), shifts in proptest::collection::vec(0u64..3, 1..5), cut in proptest::collection::vec(0usize..20, 1..5)) {
            let mut base = base;
            base.sort_unstable();
            let inputs: Vec<Vec<(u64, Num)>> = shifts.iter().zip(cut.iter().cycle()).map(|(&d, &c)| {
                base.iter().take(if d == 0 { base.len() } else { c }).map(|&t| (t + d, Num::Int(1))).collect()
            }).collect();
            let refs: Vec<&[(u64, Num)]> = inputs.iter().map(Vec::as_slice).collect();
            let mut want: Vec<u64> = refs.iter().flat_map(|s| s.iter().map(|p| p.0)).collect();
            want.sort_unstable();
            want.dedup();
            proptest::prop_assert_eq!(union_times(&refs), want);
        }
    }

    #[test]
    fn reducers() {
        use Aggregator::*;
        assert_eq!(Avg.reduce_i64(&[1, 2]), 1, "integer division");
        assert_eq!(Avg.reduce_f64(&[1.0, 2.0, f64::NAN]), 1.5);
        assert_eq!(Median.reduce_i64(&[4, 1, 3, 2]), 3, "upper median");
        assert_eq!(
            Dev.reduce_f64(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
            2.0
        );
        assert_eq!(Dev.reduce_i64(&[5]), 0);
        assert_eq!(Diff.reduce_i64(&[3, 10, 7]), 4);
        assert_eq!(Mult.reduce_i64(&[2, 3, 4]), 24);
        assert_eq!(SquareSum.reduce_f64(&[1.0, 2.0]), 5.0);
        assert!(Sum.reduce_f64(&[f64::NAN]).is_nan());
        assert_eq!(Count.reduce_f64(&[f64::NAN, 1.0]), 1.0);
        let v: Vec<f64> = (1..=10).map(|x| x as f64).collect();
        assert_eq!(percentile(&v, 500, Estimation::Legacy), 5.5);
        assert_eq!(percentile(&v, 990, Estimation::Legacy), 10.0);
        assert_eq!(percentile(&v, 500, Estimation::R7), 5.5);
        assert_eq!(percentile(&v, 900, Estimation::R7), 9.1);
        assert_eq!(percentile(&v, 500, Estimation::R3), 5.0);
        assert_eq!(Aggregator::parse("ep999r7"), Some(Pct(999, Estimation::R7)));
        assert_eq!(Aggregator::parse("p75"), Some(Pct(750, Estimation::Legacy)));
        assert_eq!(Aggregator::parse("p42"), Option::None);
        assert_eq!(Aggregator::names().len(), 35);
        assert!(Aggregator::names()
            .iter()
            .all(|n| Aggregator::parse(n).is_some()));
    }
}
