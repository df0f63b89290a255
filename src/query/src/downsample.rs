//! Downsampling and rate, applied to one series as its points stream in (time order), so a
//! query holds one value per bucket per series rather than every raw point.

use super::aggregate::Num;
use super::spec::{CalUnit, Downsample, FillPolicy, RateOptions};
use chrono::{Datelike, TimeZone, Timelike};

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
    /// Calendar buckets: the first one, at or before the start (ms); the others are whole
    /// steps of the interval from it, as OpenTSDB's downsamplers step their `Calendar`.
    anchor: i64,
}

impl Buckets {
    pub fn new(ds: Downsample, tz: chrono_tz::Tz, start_ms: u64) -> Buckets {
        let anchor = match ds.calendar {
            Some((n, unit)) if !ds.all => previous_interval(start_ms as i64, n.max(1), unit, tz),
            _ => 0,
        };
        Buckets {
            ds,
            tz,
            start_ms,
            anchor,
        }
    }

    /// The start of the bucket holding `ts`.
    pub fn bucket(&self, ts: u64) -> u64 {
        if self.ds.all {
            return self.start_ms;
        }
        let Some((n, unit)) = self.ds.calendar else {
            return ts - ts % self.ds.interval_ms;
        };
        let (a, t, n) = (self.anchor, ts as i64, n.max(1) as i64);
        let b = match unit {
            // Java adds these units as milliseconds.
            CalUnit::Ms | CalUnit::Sec | CalUnit::Min | CalUnit::Hour => {
                let w = self.ds.interval_ms as i64;
                a + (t - a).div_euclid(w) * w
            }
            // Days and weeks are local days (a DST day is 23 or 25 hours).
            CalUnit::Day | CalUnit::Week => {
                let step = if unit == CalUnit::Week { 7 * n } else { n };
                let (ad, td) = (local(self.tz, a).date(), local(self.tz, t).date());
                let k = (td - ad).num_days().div_euclid(step) * step;
                midnight(self.tz, ad + chrono::Duration::days(k))
            }
            CalUnit::Month | CalUnit::Year => {
                let months = |ms: i64| {
                    let d = local(self.tz, ms);
                    d.year() as i64 * 12 + d.month0() as i64
                };
                let step = if unit == CalUnit::Year { 12 * n } else { n };
                let m = months(a) + (months(t) - months(a)).div_euclid(step) * step;
                first_of_month(self.tz, m)
            }
        };
        b.max(0) as u64
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

fn local(tz: chrono_tz::Tz, ms: i64) -> chrono::NaiveDateTime {
    tz.timestamp_millis_opt(ms)
        .single()
        .map(|d| d.naive_local())
        .unwrap_or_default()
}

/// A local time as ms; in a DST gap, the first instant after it.
fn local_ms(tz: chrono_tz::Tz, t: chrono::NaiveDateTime) -> i64 {
    match tz.from_local_datetime(&t).earliest() {
        Some(d) => d.timestamp_millis(),
        None => tz
            .from_local_datetime(&(t + chrono::Duration::hours(1)))
            .earliest()
            .map(|d| d.timestamp_millis() - 3_600_000)
            .unwrap_or_else(|| t.and_utc().timestamp_millis()),
    }
}

fn midnight(tz: chrono_tz::Tz, d: chrono::NaiveDate) -> i64 {
    local_ms(tz, d.and_hms_opt(0, 0, 0).expect("midnight"))
}

/// Midnight of the first day of month `m` (counted as year * 12 + month0).
fn first_of_month(tz: chrono_tz::Tz, m: i64) -> i64 {
    chrono::NaiveDate::from_ymd_opt(m.div_euclid(12) as i32, m.rem_euclid(12) as u32 + 1, 1)
        .map(|d| midnight(tz, d))
        .unwrap_or(0)
}

/// OpenTSDB's `DateTime.previousInterval`: the start of the `n`-unit interval holding `ts`,
/// counted in steps of `n` from the top of a larger unit: ms from the second (or the minute
/// when `n` does not divide 1000), seconds from the minute (hour), minutes from the hour
/// (day), hours from the day (month), days from the month when `n` is 1 (else from January
/// 1st), weeks from this week's Sunday, months and years from January 1st of `ts`'s year.
pub fn previous_interval(ts: i64, n: u64, unit: CalUnit, tz: chrono_tz::Tz) -> i64 {
    let t = local(tz, ts);
    let day = t.date();
    let at = |d: chrono::NaiveDate, h: u32, m: u32, s: u32| {
        local_ms(tz, d.and_hms_opt(h, m, s).expect("valid time"))
    };
    let jan1 = chrono::NaiveDate::from_ymd_opt(day.year(), 1, 1).expect("January 1st");
    let step = |top: i64, w: i64| top + (ts - top).div_euclid(w) * w;
    let n_i = n as i64;
    let divides = |whole: u64| whole.is_multiple_of(n);
    match unit {
        CalUnit::Ms => {
            let top = if divides(1000) {
                at(day, t.hour(), t.minute(), t.second())
            } else {
                at(day, t.hour(), t.minute(), 0)
            };
            step(top, n_i)
        }
        CalUnit::Sec => {
            let top = if divides(60) {
                at(day, t.hour(), t.minute(), 0)
            } else {
                at(day, t.hour(), 0, 0)
            };
            step(top, n_i * 1000)
        }
        CalUnit::Min => {
            let top = if divides(60) {
                at(day, t.hour(), 0, 0)
            } else {
                at(day, 0, 0, 0)
            };
            step(top, n_i * 60_000)
        }
        CalUnit::Hour => {
            let top = if divides(24) {
                at(day, 0, 0, 0)
            } else {
                at(day.with_day(1).expect("first of month"), 0, 0, 0)
            };
            step(top, n_i * 3_600_000)
        }
        CalUnit::Day if n == 1 => midnight(tz, day),
        CalUnit::Day => {
            let k = (day - jan1).num_days().div_euclid(n_i) * n_i;
            midnight(tz, jan1 + chrono::Duration::days(k))
        }
        // Java's week starts on Sunday (US locale); it then steps whole weeks.
        CalUnit::Week => midnight(
            tz,
            day - chrono::Duration::days(day.weekday().num_days_from_sunday() as i64),
        ),
        CalUnit::Month => first_of_month(
            tz,
            day.year() as i64 * 12 + (day.month0() as i64 / n_i) * n_i,
        ),
        CalUnit::Year => midnight(tz, jan1),
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
    /// Calendar buckets are anchored at the series' first point (see `push`).
    anchored: bool,
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
            anchored: false,
        }
    }

    /// A rollup interval's sum and count: the bucket's value is then the sum of the sums over
    /// the sum of the counts (`avg` from rollups; 0 when the counts are 0, as OpenTSDB).
    pub fn push_weighted(&mut self, ts: u64, sum: f64, count: f64) {
        self.push(ts, Num::Float(sum));
        self.weights.push(count);
    }

    pub fn push(&mut self, ts: u64, v: Num) {
        // OpenTSDB's Downsampler starts its calendar at `previousInterval` of the series' first
        // point and steps the interval from there: an interval that does not divide its
        // parent unit (29s, 15h, 7d, 24n) lines up with that point, not with the query's start.
        if !self.anchored {
            self.anchored = true;
            if let (Some((n, unit)), false) = (self.buckets.ds.calendar, self.buckets.ds.all) {
                self.buckets.anchor = previous_interval(ts as i64, n.max(1), unit, self.buckets.tz);
            }
        }
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
            // Buckets before the first one of the range (points read ahead of the start).
            while have.next_if(|(t, _)| *t < b).is_some() {}
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

    /// TestDateTime.previousInterval through a query starting long before the point: the
    /// calendar starts at the series' first point, as OpenTSDB's Downsampler starts it, not at
    /// the query's start (intervals that do not divide their parent unit, or pass it).
    #[test]
    fn calendar_buckets_start_at_the_first_point() {
        const NON_DST_TS: u64 = 1431699673432;
        const DST_TS: u64 = 1450152145123;
        for (spec, tz, ts, want) in [
            ("29sc-sum", "UTC", NON_DST_TS, 1431699647000),
            ("799msc-sum", "UTC", DST_TS, 1450152144769),
            ("60000sc-sum", "UTC", DST_TS, 1450152000000),
            ("15hc-sum", "UTC", NON_DST_TS, 1431680400000),
            ("7dc-sum", "UTC", DST_TS, 1449705600000),
            ("104wc-sum", "UTC", DST_TS, 1449964800000),
            ("24nc-sum", "UTC", DST_TS, 1420070400000),
            ("12hc-sum", "Pacific/Chatham", NON_DST_TS, 1431688500000),
        ] {
            let tz: chrono_tz::Tz = tz.parse().unwrap();
            let mut d = Downsampler::new(Buckets::new(
                parse_downsample(spec).unwrap(),
                tz,
                1_262_304_000_000,
            ));
            d.push(ts, Num::Int(1));
            let out = d.finish(1_262_304_000_000, 1_460_000_000_000);
            assert_eq!(
                out.iter().map(|p| p.0).collect::<Vec<_>>(),
                vec![want],
                "{spec}"
            );
        }
    }

    /// TestDownsampler.testDownsampler_calendarDay and _calendarWeek (DST_TS =
    /// 1450137600000): calendar buckets step from OpenTSDB's previousInterval, so `3dc`
    /// counts days from January 1st (one bucket from 2015-12-15 in Asia/Kabul, where days from
    /// the year 1 made two) and `2wc` two weeks from the Sunday (where it made weekly buckets).
    #[test]
    fn opentsdb_calendar_vectors() {
        let run = |spec: &str, tz: &str, pts: &[(u64, i64)]| -> Vec<(u64, f64)> {
            let tz: chrono_tz::Tz = tz.parse().unwrap();
            let mut d =
                Downsampler::new(Buckets::new(parse_downsample(spec).unwrap(), tz, pts[0].0));
            pts.iter().for_each(|&(t, v)| d.push(t, Num::Int(v)));
            d.finish(0, u64::MAX)
                .into_iter()
                .map(|(t, v)| (t, v.as_f64()))
                .collect()
        };
        let dst = 1450137600000u64;
        let day_pts = [
            (dst, 1),
            (dst + 86399000, 2),
            (dst + 126001000, 3),
            (dst + 172799000, 4),
            (dst + 172800000, 5),
            (dst + 242999000, 6),
        ];
        assert_eq!(
            run("3dc-sum", "Asia/Kabul", &day_pts),
            vec![(1450121400000, 21.0)]
        );
        assert_eq!(
            run("1dc-sum", "Pacific/Funafuti", &day_pts),
            vec![
                (1450094400000, 1.0),
                (1450180800000, 5.0),
                (1450267200000, 9.0),
                (1450353600000, 6.0)
            ]
        );
        assert_eq!(
            run("1dc-sum", "UTC", &day_pts),
            vec![(dst, 3.0), (dst + 86400000, 7.0), (dst + 172800000, 11.0)]
        );
        let week_pts = [
            (dst, 1),
            (dst + 86400000 * 7, 2),
            (1451129400000, 3),
            (dst + 86400000 * 21, 4),
            (1452367799000, 5),
        ];
        assert_eq!(
            run("2wc-sum", "Asia/Kabul", &week_pts),
            vec![(1449948600000, 6.0), (1451158200000, 9.0)]
        );
        assert_eq!(
            run("1wc-sum", "Asia/Kabul", &week_pts),
            vec![
                (1449948600000, 1.0),
                (1450553400000, 5.0),
                (1451763000000, 9.0)
            ]
        );
    }

    /// TestDateTime.previousInterval{Hours,Days,Minutes} (DST_TS there is 1450152145123,
    /// NON_DST_TS 1431699673432).
    #[test]
    fn opentsdb_previous_interval_vectors() {
        let (dst, non) = (1450152145123i64, 1431699673432i64);
        let utc = chrono_tz::UTC;
        let af: chrono_tz::Tz = "Asia/Kabul".parse().unwrap();
        let nz: chrono_tz::Tz = "Pacific/Chatham".parse().unwrap();
        assert_eq!(
            previous_interval(dst, 12, CalUnit::Hour, utc),
            1450137600000
        );
        assert_eq!(
            previous_interval(non, 15, CalUnit::Hour, utc),
            1431680400000
        );
        assert_eq!(
            previous_interval(dst, 15, CalUnit::Hour, utc),
            1450116000000
        );
        assert_eq!(previous_interval(dst, 12, CalUnit::Hour, af), 1450121400000);
        assert_eq!(previous_interval(non, 12, CalUnit::Hour, nz), 1431688500000);
        assert_eq!(
            previous_interval(dst, 36, CalUnit::Hour, utc),
            1450094400000
        );
        assert_eq!(previous_interval(non, 29, CalUnit::Min, utc), 1431698460000);
        assert_eq!(previous_interval(dst, 7, CalUnit::Day, utc), 1449705600000);
        assert_eq!(previous_interval(non, 7, CalUnit::Day, utc), 1431561600000);
        assert_eq!(previous_interval(dst, 60, CalUnit::Day, utc), 1445990400000);
        assert_eq!(
            previous_interval(1330516800000, 1, CalUnit::Day, utc),
            1330473600000
        );
        assert_eq!(previous_interval(dst, 1, CalUnit::Day, nz), 1450088100000);
        assert_eq!(previous_interval(dst, 100, CalUnit::Ms, utc), 1450152145100);
        assert_eq!(previous_interval(dst, 799, CalUnit::Ms, utc), 1450152144769);
        assert_eq!(previous_interval(non, 29, CalUnit::Sec, utc), 1431699647000);
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
        assert_eq!(
            msg("1m-none"),
            "cannot use the NONE aggregator for downsampling"
        );
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
