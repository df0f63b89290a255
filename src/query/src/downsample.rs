//! Downsampling and rate, applied to one series as its points stream in (time order), so a
//! query holds one value per bucket per series rather than every raw point.

use super::aggregate::Num;
use super::spec::{CalUnit, Downsample, FillPolicy, RateOptions};
use chrono::{Datelike, TimeZone};

/// A downsample specifier OpenTSDB would refuse, in its words (`DownsamplingSpecification`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DownsampleError {
    #[error("Invalid downsampling specifier '{0}': must provide at least interval and function")]
    TooFewParts(String),
    #[error("Invalid downsampling specifier '{0}': must consist of interval, function, and optional fill policy")]
    TooManyParts(String),
    #[error("No such downsampling function: {0}")]
    Function(String),
    #[error("cannot use the NONE aggregator for downsampling")]
    NoneAggregator,
    #[error("Unrecognized fill policy: {0}")]
    Fill(String),
    /// The interval, refused by OpenTSDB's duration parser (its message).
    #[error(transparent)]
    Interval(#[from] super::time::TimeError),
    /// Longer than the whole time line OpenTSDB stores (10^13 ms): the bucket arithmetic
    /// would overflow.
    #[error("Invalid interval: {0}")]
    TooLong(String),
}

/// Parses `<interval><unit>[c]-<agg>[-<fill>]` (and `0all-<agg>`), checking the interval,
/// then the function, then the fill policy, as OpenTSDB does. The interval goes through
/// OpenTSDB's duration parser, whose unit is the last character (`1xm` is a minute there too).
pub fn parse_downsample(spec: &str) -> Result<Downsample, DownsampleError> {
    let mut parts: Vec<&str> = spec.split('-').collect();
    // Java's `String.split` drops trailing empty strings (`1m-` has one part).
    while parts.last() == Some(&"") {
        parts.pop();
    }
    if parts.len() < 2 {
        return Err(DownsampleError::TooFewParts(spec.to_string()));
    }
    if parts.len() > 3 {
        return Err(DownsampleError::TooManyParts(spec.to_string()));
    }
    let iv = parts[0];
    let all = iv.contains("all");
    let (iv, cal) = match iv.strip_suffix('c') {
        Some(x) if !all => (x, true),
        _ => (iv, false),
    };
    let interval = if all {
        None
    } else {
        let ms = super::time::parse_duration_ms(iv)?;
        if ms > 10_000_000_000_000 {
            return Err(DownsampleError::TooLong(iv.to_string()));
        }
        Some(ms)
    };
    let aggregator = super::aggregate::Aggregator::parse(parts[1])
        .ok_or_else(|| DownsampleError::Function(parts[1].to_string()))?;
    if aggregator == super::aggregate::Aggregator::None {
        return Err(DownsampleError::NoneAggregator);
    }
    let fill = match parts.get(2) {
        Some(f) => FillPolicy::parse(f).ok_or_else(|| DownsampleError::Fill(f.to_string()))?,
        None => FillPolicy::None,
    };
    let Some(interval_ms) = interval else {
        return Ok(Downsample {
            spec: spec.into(),
            interval_ms: 0,
            all: true,
            calendar: None,
            step: (0, CalUnit::Ms),
            aggregator,
            fill,
        });
    };
    // The duration parser has checked the digits and the unit.
    let digits = iv.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = iv[..digits].parse().unwrap_or(1);
    let cu = match interval_ms / n.max(1) {
        1 => CalUnit::Ms,
        1000 => CalUnit::Sec,
        60_000 => CalUnit::Min,
        3_600_000 => CalUnit::Hour,
        86_400_000 => CalUnit::Day,
        604_800_000 => CalUnit::Week,
        2_592_000_000 => CalUnit::Month,
        _ => CalUnit::Year,
    };
    Ok(Downsample {
        spec: spec.into(),
        interval_ms,
        all: false,
        calendar: cal.then_some((n, cu)),
        step: (n, cu),
        aggregator,
        fill,
    })
}

/// Calendar-aware bucket starts in a time zone.
#[derive(Debug, Clone)]
pub struct Buckets {
    ds: Downsample,
    tz: chrono_tz::Tz,
    start_ms: u64,
}

impl Buckets {
    pub fn new(ds: Downsample, tz: chrono_tz::Tz, start_ms: u64) -> Buckets {
        Buckets { ds, tz, start_ms }
    }

    /// The start of the bucket holding `ts`.
    pub fn bucket(&self, ts: u64) -> u64 {
        if self.ds.all {
            return self.start_ms;
        }
        let Some((n, unit)) = self.ds.calendar else {
            return ts - ts % self.ds.interval_ms;
        };
        let dt = self
            .tz
            .timestamp_millis_opt(ts as i64)
            .single()
            .expect("valid ms timestamp");
        let local = dt.naive_local();
        let day0 = local.date().and_hms_opt(0, 0, 0).expect("midnight");
        let floor_local = match unit {
            CalUnit::Ms | CalUnit::Sec | CalUnit::Min | CalUnit::Hour => {
                let since = local.signed_duration_since(day0).num_milliseconds() as u64;
                let w = self.ds.interval_ms;
                day0 + chrono::Duration::milliseconds((since - since % w) as i64)
            }
            CalUnit::Day => {
                let days = local.date().num_days_from_ce() as i64;
                day0 - chrono::Duration::days(days.rem_euclid(n as i64))
            }
            CalUnit::Week => {
                // Weeks start on Sunday (Java's default calendar).
                let back = local.weekday().num_days_from_sunday() as i64;
                day0 - chrono::Duration::days(back)
            }
            CalUnit::Month => {
                let m = (local.year() as i64 * 12 + local.month0() as i64) / n as i64 * n as i64;
                chrono::NaiveDate::from_ymd_opt((m / 12) as i32, (m % 12) as u32 + 1, 1)
                    .expect("valid month")
                    .and_hms_opt(0, 0, 0)
                    .expect("midnight")
            }
            CalUnit::Year => {
                let y = local.year() as i64 / n as i64 * n as i64;
                chrono::NaiveDate::from_ymd_opt(y as i32, 1, 1)
                    .expect("valid year")
                    .and_hms_opt(0, 0, 0)
                    .expect("midnight")
            }
        };
        match self.tz.from_local_datetime(&floor_local).earliest() {
            Some(d) => d.timestamp_millis().max(0) as u64,
            None => ts - ts % self.ds.interval_ms.max(1),
        }
    }

    /// The bucket after `b` (for fill policies).
    pub fn next(&self, b: u64) -> u64 {
        if self.ds.calendar.is_none() {
            return b + self.ds.interval_ms;
        }
        // Step past this bucket and snap to the next boundary (months and DST vary in length).
        let mut probe = b + self.ds.interval_ms / 2;
        loop {
            let nb = self.bucket(probe);
            if nb > b {
                return nb;
            }
            probe += self.ds.interval_ms / 4 + 1;
        }
    }
}

/// Streams one series through its downsampler.
pub struct Downsampler {
    buckets: Buckets,
    /// Buckets are `interval_ms` wide from multiples of it (no calendar, not `all`).
    fixed_width: bool,
    cur: Option<u64>,
    vals: Vec<f64>,
    /// Counts beside sums, when an `avg` is read from rollup cells (see `push_weighted`).
    weights: Vec<f64>,
    out: Vec<(u64, Num)>,
}

impl Downsampler {
    pub fn new(buckets: Buckets) -> Downsampler {
        let fixed_width =
            !buckets.ds.all && buckets.ds.calendar.is_none() && buckets.ds.interval_ms > 0;
        Downsampler {
            buckets,
            fixed_width,
            cur: None,
            vals: Vec::new(),
            weights: Vec::new(),
            out: Vec::new(),
        }
    }

    /// A rollup interval's sum and count: the bucket's value is then the sum of the sums over
    /// the sum of the counts (`avg` from rollups; 0 when the counts are 0, as OpenTSDB).
    pub fn push_weighted(&mut self, ts: u64, sum: f64, count: f64) {
        self.push(ts, Num::Float(sum));
        self.weights.push(count);
    }

    pub fn push(&mut self, ts: u64, v: Num) {
        // Points come in time order: one still inside the current fixed-width bucket needs no
        // bucket arithmetic (calendar buckets always take it: their widths vary).
        let same = self
            .cur
            .is_some_and(|b| self.fixed_width && ts >= b && ts - b < self.buckets.ds.interval_ms);
        if !same {
            let b = self.buckets.bucket(ts);
            if self.cur != Some(b) {
                self.close();
                self.cur = Some(b);
            }
        }
        self.vals.push(v.as_f64());
    }

    fn close(&mut self) {
        if let Some(b) = self.cur.take() {
            if !self.vals.is_empty() {
                let v = if self.weights.is_empty() {
                    self.buckets.ds.aggregator.reduce_f64(&self.vals)
                } else {
                    let n: f64 = self.weights.iter().sum();
                    if n == 0.0 {
                        0.0
                    } else {
                        self.vals.iter().sum::<f64>() / n
                    }
                };
                self.out.push((b, Num::Float(v)));
            }
            self.vals.clear();
            self.weights.clear();
        }
    }

    /// The downsampled series; with a fill policy every bucket of `[start, end]` is present.
    pub fn finish(mut self, start_ms: u64, end_ms: u64) -> Vec<(u64, Num)> {
        self.close();
        let fill = match self.buckets.ds.fill {
            FillPolicy::None => return self.out,
            FillPolicy::Nan | FillPolicy::Null => f64::NAN,
            FillPolicy::Zero => 0.0,
        };
        if self.buckets.ds.all {
            if self.out.is_empty() {
                self.out.push((start_ms, Num::Float(fill)));
            }
            return self.out;
        }
        let mut full = Vec::new();
        let mut have = self.out.into_iter().peekable();
        let mut b = self.buckets.bucket(start_ms);
        while b <= end_ms {
            match have.peek() {
                Some((t, _)) if *t == b => full.push(have.next().expect("peeked")),
                _ => full.push((b, Num::Float(fill))),
            }
            b = self.buckets.next(b);
        }
        full
    }
}

/// Per-second rate, first point dropped; counters wrap at `counter_max`.
pub fn rate(points: &[(u64, Num)], opts: &RateOptions) -> Vec<(u64, Num)> {
    let mut out = Vec::with_capacity(points.len().saturating_sub(1));
    for w in points.windows(2) {
        let ((t0, v0), (t1, v1)) = (w[0], w[1]);
        if let Some(r) = one_rate((t0, v0), (t1, v1), opts) {
            out.push((t1, Num::Float(r)));
        }
    }
    out
}

/// The rate OpenTSDB computes for a series' first point, against a value of 0 at time zero
/// (its `RateSpan`). It is never emitted, but group-by aggregation uses it for the series at
/// timestamps before the series' first emitted rate (see [`crate::aggregate::aggregate_rates`]).
pub fn rate_lead(points: &[(u64, Num)], opts: &RateOptions) -> Option<Num> {
    let &(t, v) = points.first()?;
    one_rate((0, Num::Int(0)), (t, v), opts).map(Num::Float)
}

/// One rate step as OpenTSDB's `RateSpan` computes it: integer pairs subtract as Java longs
/// (wrapping), a counter that went down wraps at `counter_max` (in integer arithmetic for
/// integers: `counter_max` near `i64::MAX` would lose the delta as a double) or, with
/// `drop_resets`, is dropped (`None`); `reset_value` only zeroes a wrapped step's rate.
fn one_rate((t0, v0): (u64, Num), (t1, v1): (u64, Num), opts: &RateOptions) -> Option<f64> {
    if t1 <= t0 {
        return None;
    }
    let secs = (t1 - t0) as f64 / 1000.0;
    let delta = match (v0, v1) {
        (Num::Int(a), Num::Int(b)) => b.wrapping_sub(a) as f64,
        _ => v1.as_f64() - v0.as_f64(),
    };
    if !(opts.counter && delta < 0.0) {
        return Some(delta / secs);
    }
    if opts.drop_resets {
        return None;
    }
    let wrapped = match (v0, v1) {
        (Num::Int(a), Num::Int(b)) => opts.counter_max.wrapping_sub(a).wrapping_add(b) as f64,
        _ => opts.counter_max as f64 - v0.as_f64() + v1.as_f64(),
    };
    let r = wrapped / secs;
    Some(if opts.reset_value > 0 && r > opts.reset_value as f64 {
        0.0
    } else {
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(spec: &str, start: u64) -> Downsampler {
        Downsampler::new(Buckets::new(
            parse_downsample(spec).unwrap(),
            chrono_tz::UTC,
            start,
        ))
    }

    fn floats(v: &[(u64, Num)]) -> Vec<f64> {
        v.iter().map(|p| p.1.as_f64()).collect()
    }

    /// TestTsdbQueryDownsample.runLongSingleTSDownsample: 1..300 every 30 s from 1356998430.
    #[test]
    fn opentsdb_downsample_examples() {
        let pts: Vec<(u64, Num)> = (0..300)
            .map(|i| ((1356998430 + 30 * i) * 1000, Num::Int(i as i64 + 1)))
            .collect();
        let mut d = ds("1m-avg", 1356998400000);
        pts.iter().for_each(|&(t, v)| d.push(t, v));
        let out = d.finish(1356998400000, 1357041600000);
        assert_eq!(out.len(), 151);
        assert_eq!(out[0], (1356998400000, Num::Float(1.0)));
        assert_eq!(out[1].1, Num::Float(2.5));
        assert_eq!(out[2].1, Num::Float(4.5));
        assert_eq!(out[150].1, Num::Float(300.0));
        let mut c = ds("1m-count", 1356998400000);
        pts.iter().for_each(|&(t, v)| c.push(t, v));
        let cv = floats(&c.finish(0, u64::MAX));
        assert_eq!((cv[0], cv[1], cv[150]), (1.0, 2.0, 1.0));
        let mut all = ds("0all-sum", 1356998400000);
        pts.iter().for_each(|&(t, v)| all.push(t, v));
        assert_eq!(
            all.finish(1356998400000, 1357041600000),
            vec![(1356998400000, Num::Float(45150.0))]
        );
        let mut part = ds("0all-sum", 1356998500000);
        pts.iter()
            .filter(|p| (1356998500000..=1356998600000).contains(&p.0))
            .for_each(|&(t, v)| part.push(t, v));
        assert_eq!(
            part.finish(1356998500000, 1356998600000),
            vec![(1356998500000, Num::Float(15.0))]
        );
    }

    proptest::proptest! {
        /// Points in time order land in the bucket `bucket()` names, whether or not the
        /// same-bucket shortcut was taken.
        #[test]
        fn fixed_buckets_match_their_arithmetic(gaps in proptest::collection::vec(0u64..40_000, 1..80), spec in proptest::prop_oneof![proptest::strategy::Just("1m-avg"), proptest::strategy::Just("7s-sum"), proptest::strategy::Just("1ms-count"), proptest::strategy::Just("1h-max")]) {
            let mut t = 1_700_000_000_000u64;
            let pts: Vec<(u64, Num)> = gaps.iter().enumerate().map(|(i, g)| { t += g; (t, Num::Float(i as f64 * 0.7)) }).collect();
            let mut d = ds(spec, 0);
            pts.iter().for_each(|&(t, v)| d.push(t, v));
            let b = Buckets::new(parse_downsample(spec).unwrap(), chrono_tz::UTC, 0);
            let mut want: Vec<(u64, Vec<f64>)> = Vec::new();
            for &(t, v) in &pts {
                let k = b.bucket(t);
                match want.last_mut() {
                    Some((w, vals)) if *w == k => vals.push(v.as_f64()),
                    _ => want.push((k, vec![v.as_f64()])),
                }
            }
            let agg = parse_downsample(spec).unwrap().aggregator;
            let want: Vec<(u64, Num)> = want.into_iter().map(|(k, vals)| (k, Num::Float(agg.reduce_f64(&vals)))).collect();
            proptest::prop_assert_eq!(d.finish(0, u64::MAX), want);
        }
    }

    #[test]
    fn fill_policies_cover_every_bucket() {
        let mut d = ds("1m-sum-zero", 0);
        d.push(60_000, Num::Int(1));
        d.push(180_000, Num::Int(2));
        assert_eq!(floats(&d.finish(0, 240_000)), vec![0.0, 1.0, 0.0, 2.0, 0.0]);
        let mut n = ds("1m-sum-nan", 0);
        n.push(60_000, Num::Int(1));
        let v = floats(&n.finish(0, 120_000));
        assert!(v[0].is_nan() && v[1] == 1.0 && v[2].is_nan());
        assert!(parse_downsample("1m-none").is_err());
        assert!(parse_downsample("1x-avg").is_err());
        assert!(parse_downsample("1m-avg-bogus").is_err());
    }

    #[test]
    fn calendar_buckets() {
        let b = Buckets::new(
            parse_downsample("1dc-sum").unwrap(),
            "America/New_York".parse().unwrap(),
            0,
        );
        // 2013-01-01T12:00Z is 07:00 in New York: the day starts at 05:00Z.
        assert_eq!(b.bucket(1357041600000), 1357016400000);
        let m = Buckets::new(parse_downsample("1nc-sum").unwrap(), chrono_tz::UTC, 0);
        assert_eq!(m.bucket(1357041600000), 1356998400000);
        assert_eq!(m.next(1356998400000), 1359676800000, "February 1st");
    }

    /// TestTsdbQueryQueries' counter vectors.
    #[test]
    fn rates() {
        let s = |v: &[i64]| -> Vec<(u64, Num)> {
            v.iter()
                .enumerate()
                .map(|(i, &x)| ((i as u64 + 1) * 30_000, Num::Int(x)))
                .collect()
        };
        let c = RateOptions {
            counter: true,
            counter_max: 100,
            ..Default::default()
        };
        assert_eq!(floats(&rate(&s(&[45, 75, 5]), &c)), vec![1.0, 1.0]);
        let r = RateOptions {
            counter: true,
            counter_max: 10000,
            reset_value: 35,
            ..Default::default()
        };
        assert_eq!(floats(&rate(&s(&[45, 75, 25]), &r)), vec![1.0, 0.0]);
        let d = RateOptions {
            counter: true,
            drop_resets: true,
            ..Default::default()
        };
        let out = rate(&s(&[45, 75, 25, 55]), &d);
        assert_eq!(
            out,
            vec![(60_000, Num::Float(1.0)), (120_000, Num::Float(1.0))]
        );
        let plain: Vec<(u64, Num)> = (0..300)
            .map(|i| ((1356998430 + 30 * i) * 1000, Num::Int(i as i64 + 1)))
            .collect();
        let r = rate(&plain, &RateOptions::default());
        assert_eq!(r.len(), 299);
        assert_eq!(r[0].0, 1356998460000);
        assert!((r[0].1.as_f64() - 1.0 / 30.0).abs() < 1e-12);
    }

    /// TestRateSpan.testNext_counterLongMax and TestTsdbQueryQueries.runRateCounterDefault:
    /// Long.MAX_VALUE-55, Long.MAX_VALUE-25, 5 every 30 s with counterMax Long.MAX_VALUE are
    /// rates of 1.0 and 1.0 (the wrap computed on longs; as doubles it was 5/30).
    #[test]
    fn counter_wrap_near_i64_max_is_exact() {
        let pts = vec![
            (1356998430000, Num::Int(i64::MAX - 55)),
            (1356998460000, Num::Int(i64::MAX - 25)),
            (1356998490000, Num::Int(5)),
        ];
        let o = RateOptions {
            counter: true,
            ..Default::default()
        };
        assert_eq!(
            rate(&pts, &o),
            vec![
                (1356998460000, Num::Float(1.0)),
                (1356998490000, Num::Float(1.0))
            ]
        );
        // TestRateSpan.testCalculateDelta_bigLongValues: MAX-100 -> MAX-20 over 100 s = 0.8.
        let big = vec![
            (1356998400000, Num::Int(i64::MAX - 100)),
            (1356998500000, Num::Int(i64::MAX - 20)),
        ];
        assert_eq!(rate(&big, &RateOptions::default())[0].1, Num::Float(0.8));
        // The first rate is against a 0 at time zero (testNext_counterLongMax's first rate).
        assert_eq!(
            rate_lead(&pts, &o),
            Some(Num::Float((i64::MAX - 55) as f64 / 1356998430.0))
        );
    }

    /// TestRateSpan.testNext_counterWithResetValue: 40, 50, 40 a second apart with counterMax
    /// 70 and resetValue 1 give 10 (a rise above the reset value is no reset: only a wrapped
    /// step is compared with it) and then 0 (the wrap, 60/s, is above it).
    #[test]
    fn reset_value_only_zeroes_wrapped_steps() {
        let pts = vec![
            (1356998400000, Num::Int(40)),
            (1356998401000, Num::Int(50)),
            (1356998402000, Num::Int(40)),
        ];
        let o = RateOptions {
            counter: true,
            counter_max: 70,
            reset_value: 1,
            drop_resets: false,
        };
        assert_eq!(floats(&rate(&pts, &o)), vec![10.0, 0.0]);
        assert_eq!(rate_lead(&pts, &o), Some(Num::Float(40.0 / 1356998400.0)));
        // testNext_counterDroResets: the drop skips the step, the next one is against 40.
        let mut more = pts.clone();
        more.push((1356998403000, Num::Int(50)));
        let d = RateOptions {
            drop_resets: true,
            ..o
        };
        assert_eq!(
            rate(&more, &d),
            vec![
                (1356998401000, Num::Float(10.0)),
                (1356998403000, Num::Float(10.0))
            ]
        );
    }

    /// TestDownsamplingSpecification and TestQueryRpc.executeWithBadDSFill: what is refused,
    /// in OpenTSDB's order (interval, function, fill) and words.
    #[test]
    fn opentsdb_downsampling_specification_vectors() {
        let d = parse_downsample("15m-avg-nan").unwrap();
        assert_eq!(
            (d.interval_ms, d.aggregator, d.fill),
            (900_000, crate::aggregate::Aggregator::Avg, FillPolicy::Nan)
        );
        for bad in [
            "blah-avg-lerp",
            "1m-hurp-lerp",
            "10m-avg-max",
            "1m-none-lerp",
            "",
            "0m-avg-lerp",
            "-60m-avg-lerp",
            "1j-avg-lerp",
            "1-avg-lerp",
            "1m",
        ] {
            assert!(parse_downsample(bad).is_err(), "{bad}");
        }
        let msg = |s: &str| parse_downsample(s).unwrap_err().to_string();
        assert!(msg("10m-avg-badbadbad").starts_with("Unrecognized fill policy: badbadbad"));
        assert_eq!(msg("1j-hurp"), "Invalid duration (suffix): 1j");
        assert_eq!(msg("0m-avg"), "Zero or negative duration: 0m");
        assert_eq!(msg("1m-hurp"), "No such downsampling function: hurp");
        assert_eq!(msg("1m-none"), "cannot use the NONE aggregator for downsampling");
        assert_eq!(
            msg("1m"),
            "Invalid downsampling specifier '1m': must provide at least interval and function"
        );
        // Calendar: the unit of `1dc` is a day.
        let c = parse_downsample("1dc-sum").unwrap();
        assert_eq!(c.calendar, Some((1, CalUnit::Day)));
        assert_eq!(parse_downsample("0all-sum").unwrap().interval_ms, 0);
    }

    /// Fuzz finding (tests/fuzz, opentsdb_query_string): `1999999999999999999m-avg` overflowed
    /// the interval in ms.
    #[test]
    fn huge_intervals_are_invalid() {
        assert!(parse_downsample("1999999999999999999m-avg").is_err());
        assert!(parse_downsample("400y-avg").is_err());
        assert_eq!(
            parse_downsample("300y-avg").unwrap().interval_ms,
            300 * 365 * 86_400_000
        );
    }
}
