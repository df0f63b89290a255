//! Metric primitives on plain atomics (no locks, no allocation when updated) and a writer for
//! Prometheus' text exposition format 0.0.4.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// A monotonically increasing count.
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn add(&self, n: u64) {
        if n > 0 {
            self.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down (queue depths, open connections).
#[derive(Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed)
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds (seconds) of the latency buckets: 50 µs to 10 s, roughly ×2.5 apart.
pub const LATENCY_BUCKETS: [f64; 16] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 10.0,
];

/// A latency histogram: one atomic per bucket (non-cumulative; summed when rendered) and the
/// sum kept in whole nanoseconds so that it is a plain atomic add.
pub struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = LATENCY_BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos
            .fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// Observes the time since `start`.
    pub fn since(&self, start: std::time::Instant) {
        self.observe(start.elapsed())
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    /// (upper bound, cumulative count) per bucket, `+Inf` last; then the sum in seconds.
    pub fn snapshot(&self) -> (Vec<(f64, u64)>, f64) {
        let mut acc = 0;
        let mut out = Vec::with_capacity(self.buckets.len());
        for (i, b) in self.buckets.iter().enumerate() {
            acc += b.load(Ordering::Relaxed);
            out.push((
                LATENCY_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY),
                acc,
            ));
        }
        (out, self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Builds an exposition: each family's `# HELP` and `# TYPE` once, then its samples.
#[derive(Default)]
pub struct Exposition {
    out: String,
}

/// A label value with `\`, `"` and newlines escaped as the format requires.
fn escape_label(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Float values as the format spells them (`+Inf`, `-Inf`, `NaN`).
pub fn format_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

impl Exposition {
    pub fn family(&mut self, name: &str, help: &str, kind: Kind) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(
            self.out,
            "# HELP {name} {help}\n# TYPE {name} {}",
            kind.as_str()
        );
    }

    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                escape_label(v, &mut self.out);
                self.out.push('"');
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// A single unlabelled sample with its family header.
    pub fn single(&mut self, name: &str, help: &str, kind: Kind, value: impl std::fmt::Display) {
        self.family(name, help, kind);
        self.sample(name, &[], value);
    }

    /// The `_bucket`/`_sum`/`_count` samples of one labelled histogram.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let (buckets, sum) = h.snapshot();
        let bucket = format!("{name}_bucket");
        for (le, n) in &buckets {
            let le = format_float(*le);
            let mut with_le: Vec<(&str, &str)> = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&bucket, &with_le, n);
        }
        self.sample(&format!("{name}_sum"), labels, format_float(sum));
        self.sample(
            &format!("{name}_count"),
            labels,
            buckets.last().map(|b| b.1).unwrap_or(0),
        );
    }

    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut e = Exposition::default();
        e.family("x_total", "a \\ help\nline", Kind::Counter);
        e.sample("x_total", &[("a", "q\"b\\s\nn")], 3);
        assert_eq!(e.finish(), "# HELP x_total a \\\\ help\\nline\n# TYPE x_total counter\nx_total{a=\"q\\\"b\\\\s\\nn\"} 3\n");
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_in_inf() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(10));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(60));
        let (b, sum) = h.snapshot();
        assert_eq!(b.first().unwrap(), &(0.00005, 1));
        assert_eq!(b.last().unwrap(), &(f64::INFINITY, 3));
        assert!(b.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!((sum - 60.00301).abs() < 1e-9, "{sum}");
        let mut e = Exposition::default();
        e.histogram("lat_seconds", &[("op", "get")], &h);
        let text = e.finish();
        assert!(
            text.contains("lat_seconds_bucket{op=\"get\",le=\"0.005\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("lat_seconds_bucket{op=\"get\",le=\"+Inf\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("lat_seconds_count{op=\"get\"} 3\n"), "{text}");
    }
}
