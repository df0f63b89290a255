//! OTLP metrics → Prometheus series, following Prometheus' OTLP receiver
//! (`storage/remote/otlptranslator`, its default translation `UnderscoreEscapingWithSuffixes`):
//!
//! * names: the metric name split into tokens at every character but `[a-zA-Z0-9:]`, the unit's
//!   suffix appended unless a token already is it (`s` → `seconds`, `By` → `bytes`, `1` → none,
//!   `m/s` → `meters_per_second`, units in `{}` ignored), `_total` for monotonic sums, `_ratio`
//!   for gauges of unit `1`, joined with `_`, `_` first if it starts with a digit;
//! * labels: data point attributes with every character but `[a-zA-Z0-9_]` made `_` (`key_`
//!   first for a leading digit, `key` for one leading `_`), values of names that collide joined
//!   with `;`; `job` = `service.namespace/service.name` (or `service.name`), `instance` =
//!   `service.instance.id`; every other resource attribute on one `target_info` series per
//!   resource (value 1, at its latest point's time);
//! * gauges and sums one series each; histograms `_bucket{le}` (cumulative, `+Inf` = count),
//!   `_sum`, `_count`; summaries `{quantile}`, `_sum`, `_count`; a point flagged "no recorded
//!   value" is a staleness marker;
//! * refused (counted, named in the answer's partial success): sums and histograms that are not
//!   cumulative (delta temporality, as Prometheus without its delta conversion), exponential
//!   histograms (native histograms are not stored), metrics with no data or no name.

use crate::proto::*;
use std::collections::HashMap;

/// Prometheus' staleness marker (a NaN with this bit pattern).
pub const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// A sample's value: integers as sent stay integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    F64(f64),
    I64(i64),
}

/// One series: its labels (`__name__` among them, sorted) and samples (ms, value).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: Vec<(String, String)>,
    pub samples: Vec<(i64, Value)>,
}

/// A metric family's type, help and unit, as Prometheus keeps metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    pub name: String,
    pub kind: &'static str,
    pub help: String,
    pub unit: String,
}

#[derive(Debug, Default)]
pub struct Translated {
    pub series: Vec<Series>,
    pub metadata: Vec<Metadata>,
    /// Data points not translated.
    pub rejected: u64,
    /// Why, one message per refused metric (the first [`ERRORS_KEPT`]).
    pub errors: Vec<String>,
}

pub const ERRORS_KEPT: usize = 10;

impl Translated {
    fn refuse(&mut self, points: usize, why: impl FnOnce() -> String) {
        self.rejected += points as u64;
        if self.errors.len() < ERRORS_KEPT {
            self.errors.push(why());
        }
    }
}

const UNITS: &[(&str, &str)] = &[
    ("d", "days"),
    ("h", "hours"),
    ("min", "minutes"),
    ("s", "seconds"),
    ("ms", "milliseconds"),
    ("us", "microseconds"),
    ("ns", "nanoseconds"),
    ("By", "bytes"),
    ("KiBy", "kibibytes"),
    ("MiBy", "mebibytes"),
    ("GiBy", "gibibytes"),
    ("TiBy", "tibibytes"),
    ("KBy", "kilobytes"),
    ("MBy", "megabytes"),
    ("GBy", "gigabytes"),
    ("TBy", "terabytes"),
    ("m", "meters"),
    ("V", "volts"),
    ("A", "amperes"),
    ("J", "joules"),
    ("W", "watts"),
    ("g", "grams"),
    ("Cel", "celsius"),
    ("Hz", "hertz"),
    ("1", ""),
    ("%", "percent"),
];

const PER_UNITS: &[(&str, &str)] = &[
    ("s", "second"),
    ("m", "minute"),
    ("h", "hour"),
    ("d", "day"),
    ("w", "week"),
    ("mo", "month"),
    ("y", "year"),
];

fn lookup<'a>(table: &[(&str, &'a str)], k: &'a str) -> &'a str {
    table.iter().find(|(u, _)| *u == k).map_or(k, |(_, p)| p)
}

/// A unit as a name part: every character but `[a-zA-Z0-9:]` made `_`, runs of `_` made one,
/// no leading `_`.
fn clean_unit(u: &str) -> String {
    let mut out = String::with_capacity(u.len());
    for c in u.chars() {
        let c = if c.is_ascii_alphanumeric() || c == ':' {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.trim_start_matches('_').to_string()
}

/// The unit's main and per suffixes (`m/s` → `meters`, `per_second`).
fn unit_suffixes(unit: &str) -> (String, String) {
    let mut parts = unit.splitn(2, '/');
    let main = parts.next().unwrap_or("").trim();
    let per = parts.next().map(str::trim).unwrap_or("");
    let mut main_s = String::new();
    if !main.is_empty() && !main.contains(['{', '}']) {
        main_s = clean_unit(lookup(UNITS, main));
    }
    let mut per_s = String::new();
    if !per.is_empty() && !per.contains(['{', '}']) {
        per_s = lookup(PER_UNITS, per).to_string();
    }
    if !per_s.is_empty() {
        per_s = format!("per_{per_s}");
        main_s = main_s.trim_end_matches('_').to_string();
    }
    (main_s, per_s)
}

/// How a metric's type shows in its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// A monotonic sum.
    Counter,
    /// Non-monotonic sums, histograms, summaries.
    Other,
}

/// The Prometheus name of an OTLP metric.
pub fn metric_name(name: &str, unit: &str, kind: Kind) -> String {
    let mut tokens: Vec<&str> = name
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == ':'))
        .filter(|t| !t.is_empty())
        .collect();
    let (main, per) = unit_suffixes(unit);
    if !main.is_empty() && !tokens.contains(&main.as_str()) {
        tokens.push(&main);
    }
    if !per.is_empty() && !tokens.contains(&per.as_str()) {
        tokens.push(&per);
    }
    if kind == Kind::Counter {
        tokens.retain(|t| *t != "total");
        tokens.push("total");
    }
    if unit == "1" && kind == Kind::Gauge {
        tokens.retain(|t| *t != "ratio");
        tokens.push("ratio");
    }
    let mut out = tokens.join("_");
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A label name as Prometheus' OTLP receiver writes it.
pub fn label_name(k: &str) -> String {
    if k.is_empty() {
        return String::new();
    }
    let mut s: String = k
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "key_");
    } else if s.starts_with('_') && !s.starts_with("__") {
        s.insert_str(0, "key");
    }
    s
}

/// An attribute value as text (as the collector's `AsString`).
pub fn value_text(v: &AnyValue) -> String {
    match &v.value {
        None => String::new(),
        Some(Any::String(s)) => s.clone(),
        Some(Any::Bool(b)) => b.to_string(),
        Some(Any::Int(i)) => i.to_string(),
        Some(Any::Double(d)) => float_text(*d),
        Some(Any::Bytes(b)) => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(b)
        }
        Some(Any::Array(a)) => {
            serde_json::Value::Array(a.values.iter().map(json_of).collect()).to_string()
        }
        Some(Any::KvList(_)) => json_of(v).to_string(),
    }
}

fn json_of(v: &AnyValue) -> serde_json::Value {
    use serde_json::Value as J;
    match &v.value {
        None => J::Null,
        Some(Any::String(s)) => J::String(s.clone()),
        Some(Any::Bool(b)) => J::Bool(*b),
        Some(Any::Int(i)) => J::from(*i),
        Some(Any::Double(d)) => serde_json::Number::from_f64(*d).map_or(J::Null, J::Number),
        Some(Any::Bytes(_)) => J::String(value_text(v)),
        Some(Any::Array(a)) => J::Array(a.values.iter().map(json_of).collect()),
        Some(Any::KvList(l)) => J::Object(
            l.values
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(J::Null, json_of)))
                .collect(),
        ),
    }
}

/// A float as Prometheus writes `le` and `quantile` (Go's `FormatFloat(f, 'f', -1, 64)`).
pub fn float_text(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f.is_nan() {
        return "NaN".to_string();
    }
    format!("{f}")
}

fn ms(ns: u64) -> i64 {
    (ns / 1_000_000) as i64
}

/// Series of one request, each label set once.
#[derive(Default)]
struct Builder {
    out: Translated,
    index: HashMap<Vec<(String, String)>, usize>,
}

impl Builder {
    fn add(&mut self, mut labels: Vec<(String, String)>, ts: i64, v: Value) {
        labels.sort_unstable();
        let i = match self.index.get(&labels) {
            Some(&i) => i,
            None => {
                self.out.series.push(Series {
                    labels: labels.clone(),
                    samples: Vec::new(),
                });
                self.index.insert(labels, self.out.series.len() - 1);
                self.out.series.len() - 1
            }
        };
        self.out.series[i].samples.push((ts, v));
    }
}

/// A point's labels without `__name__`: its attributes, then `job` and `instance`.
fn point_labels(attrs: &[KeyValue], promoted: &[(String, String)]) -> Vec<(String, String)> {
    // Attributes by their sent name, so that colliding names join their values in that order.
    let mut sorted: Vec<&KeyValue> = attrs.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    let mut labels: Vec<(String, String)> = Vec::with_capacity(attrs.len() + promoted.len() + 2);
    for kv in sorted {
        let name = label_name(&kv.key);
        let value = kv.value.as_ref().map(value_text).unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        match labels.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => {
                v.push(';');
                v.push_str(&value);
            }
            None => labels.push((name, value)),
        }
    }
    for (k, v) in promoted {
        labels.retain(|(l, _)| l != k);
        labels.push((k.clone(), v.clone()));
    }
    labels
}

fn with(labels: &[(String, String)], extra: &[(&str, String)]) -> Vec<(String, String)> {
    let mut l: Vec<(String, String)> = labels
        .iter()
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .cloned()
        .collect();
    l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    l
}

fn stale_or(flags: u32, v: Value) -> Value {
    if flags & FLAG_NO_RECORDED_VALUE != 0 {
        Value::F64(f64::from_bits(STALE_NAN))
    } else {
        v
    }
}

const SERVICE_NAME: &str = "service.name";
const SERVICE_NAMESPACE: &str = "service.namespace";
const SERVICE_INSTANCE: &str = "service.instance.id";

/// Translates a request. Nothing here fails: what cannot be translated is counted in
/// `rejected` and named in `errors`.
pub fn translate(req: &ExportMetricsServiceRequest) -> Translated {
    let mut b = Builder::default();
    for rm in &req.resource_metrics {
        let attrs: &[KeyValue] = rm.resource.as_ref().map_or(&[], |r| &r.attributes);
        let get = |k: &str| {
            attrs
                .iter()
                .find(|kv| kv.key == k)
                .and_then(|kv| kv.value.as_ref())
                .map(value_text)
                .filter(|v| !v.is_empty())
        };
        let mut promoted = Vec::new();
        if let Some(name) = get(SERVICE_NAME) {
            let job = match get(SERVICE_NAMESPACE) {
                Some(ns) => format!("{ns}/{name}"),
                None => name,
            };
            promoted.push(("job".to_string(), job));
        }
        if let Some(instance) = get(SERVICE_INSTANCE) {
            promoted.push(("instance".to_string(), instance));
        }
        let mut latest: Option<i64> = None;
        for sm in &rm.scope_metrics {
            for m in &sm.metrics {
                translate_metric(&mut b, m, &promoted, &mut latest);
            }
        }
        // target_info: the resource's other attributes, when it has any and sent a point.
        let others: Vec<&KeyValue> = attrs
            .iter()
            .filter(|kv| {
                ![SERVICE_NAME, SERVICE_NAMESPACE, SERVICE_INSTANCE].contains(&kv.key.as_str())
            })
            .collect();
        if let (Some(ts), false) = (latest, others.is_empty()) {
            let others: Vec<KeyValue> = others.into_iter().cloned().collect();
            let mut labels = point_labels(&others, &promoted);
            labels.retain(|(_, v)| !v.is_empty());
            labels.push(("__name__".into(), "target_info".into()));
            b.add(labels, ts, Value::I64(1));
        }
    }
    b.out
}

fn translate_metric(
    b: &mut Builder,
    m: &Metric,
    promoted: &[(String, String)],
    latest: &mut Option<i64>,
) {
    let mut seen = |ts: i64| *latest = Some(latest.map_or(ts, |l| l.max(ts)));
    let Some(data) = &m.data else {
        b.out
            .refuse(0, || format!("metric {:?} has no data", m.name));
        return;
    };
    let (kind, points) = match data {
        Data::Gauge(g) => (Kind::Gauge, g.data_points.len()),
        Data::Sum(s) if s.is_monotonic => (Kind::Counter, s.data_points.len()),
        Data::Sum(s) => (Kind::Other, s.data_points.len()),
        Data::Histogram(h) => (Kind::Other, h.data_points.len()),
        Data::Summary(s) => (Kind::Other, s.data_points.len()),
        Data::ExponentialHistogram(h) => {
            b.out.refuse(h.data_points.len(), || {
                format!(
                    "metric {:?}: exponential histograms are not supported (tsgate stores no native histograms)",
                    m.name
                )
            });
            return;
        }
    };
    let temporality = match data {
        Data::Sum(s) => Some(s.aggregation_temporality),
        Data::Histogram(h) => Some(h.aggregation_temporality),
        _ => None,
    };
    if let Some(t) = temporality.filter(|&t| t != TEMPORALITY_CUMULATIVE) {
        let what = if t == TEMPORALITY_DELTA {
            "delta"
        } else {
            "unspecified"
        };
        b.out.refuse(points, || {
            format!(
                "metric {:?} has {what} temporality; only cumulative sums and histograms are accepted",
                m.name
            )
        });
        return;
    }
    let name = metric_name(&m.name, &m.unit, kind);
    if name.is_empty() {
        b.out
            .refuse(points, || format!("metric {:?} has no usable name", m.name));
        return;
    }
    let named = |labels: &[(String, String)], n: &str, extra: &[(&str, String)]| {
        let mut l = with(labels, extra);
        l.push(("__name__".to_string(), n.to_string()));
        l
    };
    let kind_name = match data {
        Data::Gauge(_) => "gauge",
        Data::Sum(_) if kind == Kind::Counter => "counter",
        Data::Sum(_) => "gauge",
        Data::Histogram(_) => "histogram",
        _ => "summary",
    };
    b.out.metadata.push(Metadata {
        name: name.clone(),
        kind: kind_name,
        help: m.description.clone(),
        unit: m.unit.clone(),
    });
    match data {
        Data::Gauge(Gauge { data_points }) | Data::Sum(Sum { data_points, .. }) => {
            for p in data_points {
                let ts = ms(p.time_unix_nano);
                seen(ts);
                let v = match p.value {
                    Some(NumberValue::AsDouble(d)) => Value::F64(d),
                    Some(NumberValue::AsInt(i)) => Value::I64(i),
                    None => Value::F64(0.0),
                };
                let labels = point_labels(&p.attributes, promoted);
                b.add(named(&labels, &name, &[]), ts, stale_or(p.flags, v));
            }
        }
        Data::Histogram(h) => {
            for p in &h.data_points {
                let ts = ms(p.time_unix_nano);
                seen(ts);
                let labels = point_labels(&p.attributes, promoted);
                let f = |v: Value| stale_or(p.flags, v);
                if let Some(sum) = p.sum {
                    b.add(
                        named(&labels, &format!("{name}_sum"), &[]),
                        ts,
                        f(Value::F64(sum)),
                    );
                }
                b.add(
                    named(&labels, &format!("{name}_count"), &[]),
                    ts,
                    f(Value::F64(p.count as f64)),
                );
                let bucket = format!("{name}_bucket");
                let mut cumulative = 0u64;
                for (i, bound) in p.explicit_bounds.iter().enumerate() {
                    cumulative += p.bucket_counts.get(i).copied().unwrap_or(0);
                    b.add(
                        named(&labels, &bucket, &[("le", float_text(*bound))]),
                        ts,
                        f(Value::F64(cumulative as f64)),
                    );
                }
                b.add(
                    named(&labels, &bucket, &[("le", "+Inf".to_string())]),
                    ts,
                    f(Value::F64(p.count as f64)),
                );
            }
        }
        Data::Summary(s) => {
            for p in &s.data_points {
                let ts = ms(p.time_unix_nano);
                seen(ts);
                let labels = point_labels(&p.attributes, promoted);
                let f = |v: Value| stale_or(p.flags, v);
                b.add(
                    named(&labels, &format!("{name}_sum"), &[]),
                    ts,
                    f(Value::F64(p.sum)),
                );
                b.add(
                    named(&labels, &format!("{name}_count"), &[]),
                    ts,
                    f(Value::F64(p.count as f64)),
                );
                for q in &p.quantile_values {
                    b.add(
                        named(&labels, &name, &[("quantile", float_text(q.quantile))]),
                        ts,
                        f(Value::F64(q.value)),
                    );
                }
            }
        }
        Data::ExponentialHistogram(_) => unreachable!("refused above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: &str) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue {
                value: Some(Any::String(v.into())),
            }),
        }
    }

    #[test]
    fn names_follow_prometheus() {
        let n = metric_name;
        assert_eq!(
            n("http.server.duration", "ms", Kind::Other),
            "http_server_duration_milliseconds"
        );
        assert_eq!(n("requests", "1", Kind::Counter), "requests_total");
        assert_eq!(n("requests.total", "", Kind::Counter), "requests_total");
        assert_eq!(
            n("cpu.utilization", "1", Kind::Gauge),
            "cpu_utilization_ratio"
        );
        assert_eq!(n("queue.size", "{items}", Kind::Gauge), "queue_size");
        assert_eq!(n("speed", "m/s", Kind::Gauge), "speed_meters_per_second");
        assert_eq!(n("io", "By", Kind::Counter), "io_bytes_total");
        assert_eq!(n("latency.seconds", "s", Kind::Gauge), "latency_seconds");
        assert_eq!(n("2xx.count", "", Kind::Gauge), "_2xx_count");
        assert_eq!(n("job:rate", "", Kind::Gauge), "job:rate");
        assert_eq!(n("x", "custom unit", Kind::Gauge), "x_custom_unit");
        assert_eq!(label_name("http.method"), "http_method");
        assert_eq!(label_name("0day"), "key_0day");
        assert_eq!(label_name("_x"), "key_x");
        assert_eq!(label_name("__x"), "__x");
        assert_eq!(float_text(0.5), "0.5");
        assert_eq!(float_text(1000.0), "1000");
        assert_eq!(float_text(f64::INFINITY), "+Inf");
    }

    fn request(metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: vec![
                        kv("service.name", "api"),
                        kv("service.namespace", "shop"),
                        kv("service.instance.id", "i-1"),
                        kv("host.name", "web01"),
                    ],
                }),
                scope_metrics: vec![ScopeMetrics {
                    scope: None,
                    metrics,
                }],
            }],
        }
    }

    fn find<'a>(t: &'a Translated, name: &str, extra: &[(&str, &str)]) -> &'a Series {
        t.series
            .iter()
            .find(|s| {
                s.labels.iter().any(|(k, v)| k == "__name__" && v == name)
                    && extra
                        .iter()
                        .all(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v))
            })
            .unwrap_or_else(|| panic!("no {name} {extra:?} in {:#?}", t.series))
    }

    #[test]
    fn sums_histograms_summaries_and_target_info() {
        let t0 = 1_700_000_000_000_000_000u64;
        let req = request(vec![
            Metric {
                name: "http.requests".into(),
                unit: "1".into(),
                description: "Requests".into(),
                data: Some(Data::Sum(Sum {
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                    is_monotonic: true,
                    data_points: vec![NumberDataPoint {
                        attributes: vec![
                            kv("http.method", "GET"),
                            kv("http_method", "x"),
                            kv("job", "mine"),
                        ],
                        time_unix_nano: t0,
                        value: Some(NumberValue::AsInt(7)),
                        ..Default::default()
                    }],
                })),
            },
            Metric {
                name: "rpc.duration".into(),
                unit: "ms".into(),
                description: String::new(),
                data: Some(Data::Histogram(Histogram {
                    aggregation_temporality: TEMPORALITY_CUMULATIVE,
                    data_points: vec![HistogramDataPoint {
                        time_unix_nano: t0 + 5_000_000,
                        count: 6,
                        sum: Some(12.5),
                        bucket_counts: vec![1, 2, 3],
                        explicit_bounds: vec![0.5, 10.0],
                        ..Default::default()
                    }],
                })),
            },
            Metric {
                name: "gc".into(),
                unit: "s".into(),
                description: String::new(),
                data: Some(Data::Summary(Summary {
                    data_points: vec![SummaryDataPoint {
                        time_unix_nano: t0,
                        count: 3,
                        sum: 1.5,
                        quantile_values: vec![ValueAtQuantile {
                            quantile: 0.99,
                            value: 0.9,
                        }],
                        flags: FLAG_NO_RECORDED_VALUE,
                        ..Default::default()
                    }],
                })),
            },
            Metric {
                name: "delta.count".into(),
                unit: String::new(),
                description: String::new(),
                data: Some(Data::Sum(Sum {
                    aggregation_temporality: TEMPORALITY_DELTA,
                    is_monotonic: true,
                    data_points: vec![NumberDataPoint::default(), NumberDataPoint::default()],
                })),
            },
        ]);
        let t = translate(&req);
        let c = find(&t, "http_requests_total", &[]);
        // Colliding names joined in the order of their sent names; the resource's job wins.
        assert_eq!(
            c.labels,
            vec![
                ("__name__".into(), "http_requests_total".into()),
                ("http_method".into(), "GET;x".into()),
                ("instance".into(), "i-1".into()),
                ("job".into(), "shop/api".into()),
            ]
        );
        assert_eq!(c.samples, vec![(1_700_000_000_000, Value::I64(7))]);
        let ts = 1_700_000_000_005;
        assert_eq!(
            find(&t, "rpc_duration_milliseconds_bucket", &[("le", "0.5")]).samples,
            vec![(ts, Value::F64(1.0))]
        );
        assert_eq!(
            find(&t, "rpc_duration_milliseconds_bucket", &[("le", "10")]).samples,
            vec![(ts, Value::F64(3.0))]
        );
        assert_eq!(
            find(&t, "rpc_duration_milliseconds_bucket", &[("le", "+Inf")]).samples,
            vec![(ts, Value::F64(6.0))]
        );
        assert_eq!(
            find(&t, "rpc_duration_milliseconds_sum", &[]).samples,
            vec![(ts, Value::F64(12.5))]
        );
        assert_eq!(
            find(&t, "rpc_duration_milliseconds_count", &[]).samples,
            vec![(ts, Value::F64(6.0))]
        );
        let q = find(&t, "gc_seconds", &[("quantile", "0.99")]);
        assert!(matches!(q.samples[0].1, Value::F64(f) if f.to_bits() == STALE_NAN));
        find(&t, "gc_seconds_sum", &[]);
        let ti = find(
            &t,
            "target_info",
            &[
                ("host_name", "web01"),
                ("job", "shop/api"),
                ("instance", "i-1"),
            ],
        );
        assert_eq!(ti.samples, vec![(ts, Value::I64(1))]);
        assert_eq!(t.rejected, 2);
        assert!(
            t.errors[0].contains("\"delta.count\" has delta temporality"),
            "{:?}",
            t.errors
        );
        assert!(t
            .series
            .iter()
            .all(|s| !s.labels.iter().any(|(_, v)| v.contains("delta"))));
        assert_eq!(
            t.metadata[0],
            Metadata {
                name: "http_requests_total".into(),
                kind: "counter",
                help: "Requests".into(),
                unit: "1".into()
            }
        );
    }

    #[test]
    fn json_and_protobuf_decode_alike() {
        use prost::Message;
        let req = request(vec![Metric {
            name: "temp".into(),
            unit: "Cel".into(),
            description: "d".into(),
            data: Some(Data::Gauge(Gauge {
                data_points: vec![NumberDataPoint {
                    attributes: vec![kv("room", "a")],
                    time_unix_nano: 1_700_000_000_000_000_000,
                    value: Some(NumberValue::AsDouble(21.5)),
                    ..Default::default()
                }],
            })),
        }]);
        let json = r#"{"resourceMetrics":[{"resource":{"attributes":[
            {"key":"service.name","value":{"stringValue":"api"}},
            {"key":"service.namespace","value":{"stringValue":"shop"}},
            {"key":"service.instance.id","value":{"stringValue":"i-1"}},
            {"key":"host.name","value":{"stringValue":"web01"}}]},
          "scopeMetrics":[{"metrics":[{"name":"temp","unit":"Cel","description":"d",
            "gauge":{"dataPoints":[{"attributes":[{"key":"room","value":{"stringValue":"a"}}],
              "timeUnixNano":"1700000000000000000","asDouble":21.5}]}}]}]}]}"#;
        let from_json = crate::json::decode(json.as_bytes()).unwrap();
        assert_eq!(from_json, req);
        let from_pb = ExportMetricsServiceRequest::decode(req.encode_to_vec().as_slice()).unwrap();
        assert_eq!(from_pb, req);
        let t = translate(&from_json);
        assert_eq!(
            find(&t, "temp_celsius", &[("room", "a")]).samples,
            vec![(1_700_000_000_000, Value::F64(21.5))]
        );

        let e = crate::json::decode(br#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"x","gauge":{"dataPoints":[{"timeUnixNano":"soon"}]}}]}]}]}"#).unwrap_err();
        assert_eq!(
            e.path,
            "resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0].timeUnixNano"
        );
        assert!(crate::json::decode(b"[1]").is_err());
    }
}
