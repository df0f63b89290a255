//! Axis arithmetic after graphite-web's `glyph.py`: the y axis' step and limits (linear, with
//! divisors 4, 5, 6 and the least slop, or logarithmic), its labels with SI/binary prefixes,
//! and the x axis' grid and label spacing by seconds per pixel.

use super::GraphError;
use chrono::{DateTime, TimeZone, Timelike};

/// Values this close to a limit count as on it (rounding must not add a step).
const EPSILON: f64 = 0.0001;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    Si,
    Binary,
    Sec,
    Msec,
    None,
}

impl Units {
    pub fn parse(s: &str) -> Units {
        match s.to_ascii_lowercase().as_str() {
            "binary" => Units::Binary,
            "sec" => Units::Sec,
            "msec" => Units::Msec,
            "none" => Units::None,
            _ => Units::Si,
        }
    }

    fn table(self) -> &'static [(&'static str, f64)] {
        const K: f64 = 1024.0;
        match self {
            Units::Si => &[("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)],
            Units::Binary => &[
                ("Pi", K * K * K * K * K),
                ("Ti", K * K * K * K),
                ("Gi", K * K * K),
                ("Mi", K * K),
                ("Ki", K),
            ],
            Units::Sec => &[
                ("Y", 31_536_000.0),
                ("M", 2_592_000.0),
                ("D", 86_400.0),
                ("H", 3_600.0),
                ("m", 60.0),
            ],
            Units::Msec => &[
                ("Y", 31_536_000_000.0),
                ("M", 2_592_000_000.0),
                ("D", 86_400_000.0),
                ("H", 3_600_000.0),
                ("m", 60_000.0),
                ("s", 1_000.0),
            ],
            Units::None => &[],
        }
    }
}

/// `v` in the largest unit it (and `step`, when given) reaches, and that unit's prefix.
pub fn format_units(v: f64, step: Option<f64>, units: Units) -> (f64, &'static str) {
    for (prefix, size) in units.table() {
        if v.abs() >= *size && step.is_none_or(|s| s >= *size) {
            let mut v2 = v / size;
            if v2 - v2.floor() < 1e-11 && v > 1.0 {
                v2 = v2.floor();
            }
            return (v2, prefix);
        }
    }
    let mut v = v;
    if v - v.floor() < 1e-11 && v > 1.0 {
        v = v.floor();
    }
    (v, "")
}

/// Python's `%g`: six significant digits, trailing zeros dropped, exponent form outside
/// 1e-4..1e6.
pub fn fmt_g(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let e = format!("{v:.5e}");
    let (mant, exp) = e.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let mant = trim_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Source {
    Data,
    Min,
    Max,
    Extremum,
    Limit,
}

/// One y axis: from the data's extremes and the user's bounds to a bottom, top, step and labels.
#[derive(Debug, Clone)]
pub struct Tics {
    pub min: f64,
    pub max: f64,
    min_src: Source,
    max_src: Source,
    limit: Option<f64>,
    pub units: Units,
    /// `None` for a logarithmic axis.
    pub log_base: Option<f64>,
    pub step: Option<f64>,
    pub bottom: f64,
    pub top: f64,
    pub span: f64,
}

/// What the user asked of an axis (`yMin`, `yMax` (a number or `max`), `yLimit`, `yStep`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bounds {
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// `yMax=max`: the data's maximum, not rounded up to a step.
    pub max_extremum: bool,
    pub limit: Option<f64>,
    pub step: Option<f64>,
}

impl Tics {
    pub fn new(
        min: f64,
        max: f64,
        units: Units,
        log_base: Option<f64>,
        b: &Bounds,
    ) -> Result<Tics, GraphError> {
        let finite = |v: f64, what: &'static str| -> Result<f64, GraphError> {
            if v.is_nan() {
                Err(GraphError::NaN(what))
            } else if v.is_infinite() {
                Err(GraphError::Infinite(what))
            } else {
                Ok(v)
            }
        };
        let mut t = Tics {
            min: finite(min, "data value")?,
            max: finite(max, "data value")?,
            min_src: Source::Data,
            max_src: Source::Data,
            limit: None,
            units,
            log_base,
            step: None,
            bottom: 0.0,
            top: 0.0,
            span: 0.0,
        };
        if let Some(m) = b.min.filter(|m| !m.is_nan()) {
            t.min_src = Source::Min;
            t.min = finite(m, "axis min")?;
        }
        if b.max_extremum {
            t.max_src = Source::Extremum;
        } else if let Some(m) = b.max.filter(|m| !m.is_nan()) {
            t.max_src = Source::Max;
            t.max = finite(m, "axis max")?;
        }
        match b.limit.filter(|l| !l.is_nan()) {
            Some(l) if l < t.max => {
                t.max = finite(l, "axis limit")?;
                t.max_src = Source::Limit;
            }
            Some(l) if l.is_infinite() => {}
            l => t.limit = l,
        }
        t.reconcile()?;
        match (log_base, b.step) {
            (Some(_), _) => {}
            (None, Some(s)) => t.step = Some(finite(s, "axis step")?),
            (None, None) => t.choose_step(&[4, 5, 6], units == Units::Binary),
        }
        t.choose_limits()?;
        Ok(t)
    }

    fn reconcile(&mut self) -> Result<(), GraphError> {
        if self.min < self.max {
            return Ok(());
        }
        let delta = |x: f64| if x.abs() < 1e-9 { 1.0 } else { 0.1 * x.abs() };
        let min_fixed = self.min_src == Source::Min;
        let max_fixed = matches!(self.max_src, Source::Max | Source::Limit);
        match (min_fixed, max_fixed) {
            (true, true) => {
                return Err(GraphError::MinNotBelow(if self.max_src == Source::Max {
                    "max"
                } else {
                    "limit"
                }))
            }
            (true, false) => self.max = self.min + delta(self.min),
            (false, true) => self.min = self.max - delta(self.max),
            (false, false) => {
                let d = delta(self.min.abs().max(self.max.abs()));
                let avg = (self.min + self.max) / 2.0;
                self.min = avg - d;
                self.max = avg + d;
            }
        }
        Ok(())
    }

    fn slop(&self, step: f64, divisor: u32) -> Option<f64> {
        let bottom = step * (self.min / step + EPSILON).floor();
        let top = bottom + step * divisor as f64;
        (top >= self.max - EPSILON * step).then(|| (top - self.max).max(self.min - bottom))
    }

    fn choose_step(&mut self, divisors: &[u32], binary: bool) {
        if self.min == self.max {
            if self.min == 0.0 {
                self.max = 1.0;
            } else if self.min < 0.0 {
                self.min *= 1.1;
                self.max *= 0.9;
            } else {
                self.min *= 0.9;
                self.max *= 1.1;
            }
        }
        let variance = self.max - self.min;
        let (dmin, dmax) = (
            *divisors.iter().min().unwrap_or(&4) as f64,
            *divisors.iter().max().unwrap_or(&6) as f64,
        );
        let min_step = variance / dmax;
        let (base, mantissas): (f64, &[f64]) = if binary {
            (2.0, &[1.0])
        } else {
            (10.0, &[1.0, 2.0, 5.0])
        };
        let mut exponent = (min_step.log(base) - EPSILON).floor();
        let mut best: Option<(f64, f64)> = None;
        // A step too large for the best slop found ends the search; 200 exponents is far past
        // any f64 range.
        'outer: for _ in 0..200 {
            let mult = base.powf(exponent);
            for m in mantissas {
                let step = m * mult;
                if step < min_step * (1.0 - EPSILON) {
                    continue;
                }
                if let Some((slop, _)) = best {
                    if step * dmin >= 2.0 * slop + variance {
                        break 'outer;
                    }
                }
                for d in divisors {
                    if let Some(s) = self.slop(step, *d) {
                        if best.is_none_or(|(b, _)| s < b) {
                            best = Some((s, step));
                        }
                    }
                }
            }
            exponent += 1.0;
        }
        self.step = best.map(|b| b.1).or(Some(variance.max(1.0)));
    }

    fn choose_limits(&mut self) -> Result<(), GraphError> {
        if let Some(base) = self.log_base {
            if self.min <= 0.0 {
                return Err(GraphError::LogOfNonPositive);
            }
            self.bottom = base.powf(self.min.log(base).floor());
            self.top = base.powf(self.max.log(base).ceil());
            self.span = self.top - self.bottom;
            if self.span == 0.0 {
                self.top *= base;
                self.span = self.top - self.bottom;
            }
            return Ok(());
        }
        let step = self.step.unwrap_or(1.0);
        if step <= 0.0 {
            return Err(GraphError::Step);
        }
        self.bottom = if self.min_src == Source::Data {
            step * (self.min / step + EPSILON).floor()
        } else {
            self.min
        };
        self.top = if self.max_src == Source::Data {
            let mut top = step * (self.max / step - EPSILON).ceil();
            if let Some(l) = self.limit {
                if top > l + EPSILON * step {
                    top = l;
                }
            }
            top
        } else {
            self.max
        };
        self.span = self.top - self.bottom;
        if self.span == 0.0 {
            self.top += 1.0;
            self.span += 1.0;
        }
        Ok(())
    }

    /// The values that get a label and a major grid line.
    pub fn label_values(&mut self) -> Vec<f64> {
        let mut out = Vec::new();
        if let Some(base) = self.log_base {
            let mut v = base.powf((self.bottom.log(base) - EPSILON).ceil());
            while v < self.top * (1.0 + EPSILON) && out.len() < 1000 {
                out.push(v);
                v *= base;
            }
            return out;
        }
        let mut step = self.step.unwrap_or(1.0);
        if self.span > 1000.0 * step {
            self.choose_step(&[4, 5, 6], false);
            step = self.step.unwrap_or(1.0);
        }
        let start = step * (self.bottom / step - EPSILON).ceil();
        for i in 0..1000 {
            let v = start + i as f64 * step;
            if v > self.top + EPSILON * step {
                break;
            }
            out.push(v);
        }
        out
    }

    /// A label as graphite-web's `makeLabel` writes it (trailing space and all).
    pub fn label(&self, value: f64) -> String {
        let (v, prefix) = format_units(value, self.step, self.units);
        let (span, span_prefix) = format_units(self.span, self.step, self.units);
        let prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix} ")
        };
        if v < 0.1 {
            format!("{} {prefix}", fmt_g(v))
        } else if v < 1.0 {
            format!("{v:.2} {prefix}")
        } else if span > 3.0 || span_prefix != prefix {
            // graphite-web's `%.1f` for a wide span or another prefix (its values are floats,
            // so its `%d` branch is never taken), and for a span over 3.
            format!("{v:.1} {prefix}")
        } else if span > 0.1 {
            format!("{v:.2} {prefix}")
        } else {
            format!("{} {prefix}", fmt_g(v))
        }
    }
}

const SEC: i64 = 1;
const MIN: i64 = 60;
const HOUR: i64 = 3600;
const DAY: i64 = 86400;

/// One row of graphite-web's `xAxisConfigs`: minor and major grid spacing and label spacing,
/// each a unit and a count of it, for graphs with at least `seconds` per pixel.
#[derive(Debug, Clone, Copy)]
pub struct XConf {
    pub seconds: f64,
    pub minor: (i64, f64),
    pub major: (i64, f64),
    pub label: (i64, f64),
    pub format: &'static str,
    pub max_interval: Option<i64>,
}

const fn x(
    seconds: f64,
    minor: (i64, f64),
    major: (i64, f64),
    label: (i64, f64),
    format: &'static str,
    max_interval: Option<i64>,
) -> XConf {
    XConf {
        seconds,
        minor,
        major,
        label,
        format,
        max_interval,
    }
}

/// `DATE_FORMAT` is graphite-web's default, `%m/%d`.
#[rustfmt::skip]
pub const X_CONFIGS: &[XConf] = &[
    x(0.0, (SEC, 5.0), (MIN, 1.0), (SEC, 5.0), "%H:%M:%S", Some(10 * MIN)),
    x(0.07, (SEC, 10.0), (MIN, 1.0), (SEC, 10.0), "%H:%M:%S", Some(20 * MIN)),
    x(0.14, (SEC, 15.0), (MIN, 1.0), (SEC, 15.0), "%H:%M:%S", Some(30 * MIN)),
    x(0.27, (SEC, 30.0), (MIN, 2.0), (MIN, 1.0), "%H:%M", Some(2 * HOUR)),
    x(0.5, (MIN, 1.0), (MIN, 2.0), (MIN, 1.0), "%H:%M", Some(2 * HOUR)),
    x(1.2, (MIN, 1.0), (MIN, 4.0), (MIN, 2.0), "%H:%M", Some(3 * HOUR)),
    x(2.0, (MIN, 1.0), (MIN, 10.0), (MIN, 5.0), "%H:%M", Some(6 * HOUR)),
    x(5.0, (MIN, 2.0), (MIN, 10.0), (MIN, 10.0), "%H:%M", Some(12 * HOUR)),
    x(10.0, (MIN, 5.0), (MIN, 20.0), (MIN, 20.0), "%H:%M", Some(DAY)),
    x(30.0, (MIN, 10.0), (HOUR, 1.0), (HOUR, 1.0), "%H:%M", Some(2 * DAY)),
    x(60.0, (MIN, 30.0), (HOUR, 2.0), (HOUR, 2.0), "%H:%M", Some(2 * DAY)),
    x(100.0, (HOUR, 2.0), (HOUR, 4.0), (HOUR, 4.0), "%a %H:%M", Some(6 * DAY)),
    x(255.0, (HOUR, 6.0), (HOUR, 12.0), (HOUR, 12.0), "%m/%d %H:%M", Some(10 * DAY)),
    x(600.0, (HOUR, 6.0), (DAY, 1.0), (DAY, 1.0), "%m/%d", Some(14 * DAY)),
    x(1000.0, (HOUR, 12.0), (DAY, 1.0), (DAY, 1.0), "%m/%d", Some(365 * DAY)),
    x(2000.0, (DAY, 1.0), (DAY, 2.0), (DAY, 2.0), "%m/%d", Some(365 * DAY)),
    x(4000.0, (DAY, 2.0), (DAY, 4.0), (DAY, 4.0), "%m/%d", Some(365 * DAY)),
    x(8000.0, (DAY, 3.5), (DAY, 7.0), (DAY, 7.0), "%m/%d", Some(365 * DAY)),
    x(16000.0, (DAY, 7.0), (DAY, 14.0), (DAY, 14.0), "%m/%d", Some(365 * DAY)),
    x(32000.0, (DAY, 15.0), (DAY, 30.0), (DAY, 30.0), "%m/%d", Some(365 * DAY)),
    x(64000.0, (DAY, 30.0), (DAY, 60.0), (DAY, 60.0), "%m/%d %Y", None),
    x(100000.0, (DAY, 60.0), (DAY, 120.0), (DAY, 120.0), "%m/%d %Y", None),
    x(120000.0, (DAY, 120.0), (DAY, 240.0), (DAY, 240.0), "%m/%d %Y", None),
];

/// The densest configuration whose labels still fit: the last with `seconds` at most the
/// graph's seconds per pixel whose interval covers the range.
pub fn x_conf(seconds_per_pixel: f64, time_range: i64) -> XConf {
    X_CONFIGS
        .iter()
        .rev()
        .find(|c| c.seconds <= seconds_per_pixel && c.max_interval.is_none_or(|m| m >= time_range))
        .copied()
        .unwrap_or(X_CONFIGS[X_CONFIGS.len() - 1])
}

/// The instants from `start` (exclusive of earlier ones) to `end` (exclusive) on a grid of
/// `count` `unit`s, aligned in the time zone as graphite-web's `find_x_times` aligns them.
pub fn x_times<Tz: TimeZone>(start: &DateTime<Tz>, end: i64, unit: i64, count: f64) -> Vec<i64> {
    let s = start.timestamp();
    let (h, m, sec) = (
        start.hour() as i64,
        start.minute() as i64,
        start.second() as i64,
    );
    let c = count as i64;
    let first = match unit {
        SEC => s - sec % c.max(1),
        MIN => s - sec - 60 * (m % c.max(1)),
        HOUR => s - sec - 60 * m - 3600 * (h % c.max(1)),
        _ => s - sec - 60 * m - 3600 * h,
    };
    let delta = ((unit as f64 * count) as i64).max(1);
    let mut t = first;
    while t < s {
        t += delta;
    }
    let mut out = Vec::new();
    while t < end && out.len() < 10_000 {
        out.push(t);
        t += delta;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_g() {
        assert_eq!(fmt_g(0.05), "0.05");
        assert_eq!(fmt_g(0.00001), "1e-05");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(100.0), "100");
        assert_eq!(fmt_g(0.0), "0");
    }

    #[test]
    fn linear_steps_and_labels() {
        // Data 0..95: divisor 5 of 20 covers it with the least slop → 0, 20, … 100.
        let mut t = Tics::new(0.0, 95.0, Units::Si, None, &Bounds::default()).unwrap();
        assert_eq!(t.step, Some(20.0));
        assert_eq!((t.bottom, t.top), (0.0, 100.0));
        assert_eq!(t.label_values(), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(t.label(0.0), "0 ");
        assert_eq!(t.label(40.0), "40.0 ");
        // Thousands get a prefix.
        let t = Tics::new(0.0, 9000.0, Units::Si, None, &Bounds::default()).unwrap();
        assert_eq!(t.label(4000.0), "4.0 k ");
        // A user minimum and maximum are kept as given.
        let b = Bounds {
            min: Some(-5.0),
            max: Some(12.0),
            ..Bounds::default()
        };
        let t = Tics::new(0.0, 95.0, Units::Si, None, &b).unwrap();
        assert_eq!((t.bottom, t.top), (-5.0, 12.0));
        // A flat line gets room around it.
        let t = Tics::new(5.0, 5.0, Units::Si, None, &Bounds::default()).unwrap();
        assert!(t.bottom < 5.0 && t.top > 5.0);
        let b = Bounds {
            min: Some(10.0),
            max: Some(1.0),
            ..Bounds::default()
        };
        assert!(Tics::new(0.0, 5.0, Units::Si, None, &b).is_err());
    }

    #[test]
    fn log_axis() {
        let mut t = Tics::new(3.0, 4000.0, Units::Si, Some(10.0), &Bounds::default()).unwrap();
        assert_eq!((t.bottom, t.top), (1.0, 10000.0));
        assert_eq!(t.label_values().len(), 5);
        assert!(Tics::new(0.0, 10.0, Units::Si, Some(10.0), &Bounds::default()).is_err());
    }

    #[test]
    fn x_grid() {
        // 800 px over a day: 108 s a pixel → labels every 4 h.
        let c = x_conf(86400.0 / 800.0, 86400);
        assert_eq!(c.label, (HOUR, 4.0));
        let start = chrono::Utc.timestamp_opt(1_700_000_123, 0).unwrap();
        let ts = x_times(&start, 1_700_000_123 + 86400, HOUR, 4.0);
        assert_eq!(ts.len(), 6);
        assert!(ts
            .iter()
            .all(|t| t % (4 * 3600) == 0 && *t >= 1_700_000_123));
    }
}
