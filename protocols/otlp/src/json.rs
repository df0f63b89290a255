//! OTLP/JSON (the protobuf JSON mapping as OTLP fixes it): lowerCamelCase field names (the
//! proto's snake_case names are read too), 64-bit integers as strings or numbers, enums as
//! integers, doubles as numbers or `"NaN"`/`"Infinity"`/`"-Infinity"`.

use crate::proto::*;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {what}")]
pub struct JsonError {
    pub path: String,
    pub what: String,
}

fn err(path: &str, what: impl Into<String>) -> JsonError {
    JsonError {
        path: path.to_string(),
        what: what.into(),
    }
}

type R<T> = Result<T, JsonError>;

/// Decodes an `ExportMetricsServiceRequest` in OTLP/JSON.
pub fn decode(body: &[u8]) -> R<ExportMetricsServiceRequest> {
    let v: Value = serde_json::from_slice(body).map_err(|e| err("body", e.to_string()))?;
    let o = obj(&v, "body")?;
    Ok(ExportMetricsServiceRequest {
        resource_metrics: list(
            o,
            "resourceMetrics",
            "resource_metrics",
            "",
            resource_metrics,
        )?,
    })
}

fn obj<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| err(path, "not an object"))
}

/// A field by its JSON name or its proto name; `null` counts as absent.
fn field<'a>(o: &'a Map<String, Value>, json: &str, proto: &str) -> Option<&'a Value> {
    o.get(json)
        .or_else(|| o.get(proto))
        .filter(|v| !v.is_null())
}

fn list<T>(
    o: &Map<String, Value>,
    json: &str,
    proto: &str,
    at: &str,
    each: impl Fn(&Value, &str) -> R<T>,
) -> R<Vec<T>> {
    let path = if at.is_empty() {
        json.to_string()
    } else {
        format!("{at}.{json}")
    };
    match field(o, json, proto) {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| each(v, &format!("{path}[{i}]")))
            .collect(),
        Some(_) => Err(err(&path, "not an array")),
    }
}

fn string(o: &Map<String, Value>, json: &str, proto: &str, at: &str) -> R<String> {
    match field(o, json, proto) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(err(&format!("{at}.{json}"), "not a string")),
    }
}

fn u64_of(v: &Value, path: &str) -> R<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| err(path, "not an unsigned 64-bit integer"))
}

fn i64_of(v: &Value, path: &str) -> R<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| err(path, "not a 64-bit integer"))
}

fn f64_of(v: &Value, path: &str) -> R<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            s => s.parse().ok(),
        },
        _ => None,
    }
    .ok_or_else(|| err(path, "not a number"))
}

fn opt<T>(
    o: &Map<String, Value>,
    json: &str,
    proto: &str,
    at: &str,
    f: impl Fn(&Value, &str) -> R<T>,
) -> R<Option<T>> {
    field(o, json, proto)
        .map(|v| f(v, &format!("{at}.{json}")))
        .transpose()
}

fn resource_metrics(v: &Value, at: &str) -> R<ResourceMetrics> {
    let o = obj(v, at)?;
    Ok(ResourceMetrics {
        resource: opt(o, "resource", "resource", at, |v, p| {
            Ok(Resource {
                attributes: list(obj(v, p)?, "attributes", "attributes", p, key_value)?,
            })
        })?,
        scope_metrics: list(o, "scopeMetrics", "scope_metrics", at, scope_metrics)?,
    })
}

fn scope_metrics(v: &Value, at: &str) -> R<ScopeMetrics> {
    let o = obj(v, at)?;
    Ok(ScopeMetrics {
        scope: opt(o, "scope", "scope", at, |v, p| {
            let s = obj(v, p)?;
            Ok(InstrumentationScope {
                name: string(s, "name", "name", p)?,
                version: string(s, "version", "version", p)?,
            })
        })?,
        metrics: list(o, "metrics", "metrics", at, metric)?,
    })
}

fn int32(o: &Map<String, Value>, json: &str, proto: &str, at: &str) -> R<i32> {
    opt(o, json, proto, at, |v, p| {
        i64_of(v, p).and_then(|i| i32::try_from(i).map_err(|_| err(p, "out of range")))
    })
    .map(Option::unwrap_or_default)
}

fn metric(v: &Value, at: &str) -> R<Metric> {
    let o = obj(v, at)?;
    let temporality = |m: &Map<String, Value>, p: &str| {
        int32(m, "aggregationTemporality", "aggregation_temporality", p)
    };
    let data = if let Some(g) = field(o, "gauge", "gauge") {
        let p = format!("{at}.gauge");
        let g = obj(g, &p)?;
        Some(Data::Gauge(Gauge {
            data_points: list(g, "dataPoints", "data_points", &p, number_point)?,
        }))
    } else if let Some(s) = field(o, "sum", "sum") {
        let p = format!("{at}.sum");
        let s = obj(s, &p)?;
        Some(Data::Sum(Sum {
            data_points: list(s, "dataPoints", "data_points", &p, number_point)?,
            aggregation_temporality: temporality(s, &p)?,
            is_monotonic: opt(s, "isMonotonic", "is_monotonic", &p, |v, p| {
                v.as_bool().ok_or_else(|| err(p, "not a boolean"))
            })?
            .unwrap_or(false),
        }))
    } else if let Some(h) = field(o, "histogram", "histogram") {
        let p = format!("{at}.histogram");
        let h = obj(h, &p)?;
        Some(Data::Histogram(Histogram {
            data_points: list(h, "dataPoints", "data_points", &p, histogram_point)?,
            aggregation_temporality: temporality(h, &p)?,
        }))
    } else if let Some(h) = field(o, "exponentialHistogram", "exponential_histogram") {
        let p = format!("{at}.exponentialHistogram");
        let h = obj(h, &p)?;
        Some(Data::ExponentialHistogram(ExponentialHistogram {
            data_points: list(h, "dataPoints", "data_points", &p, |v, p| {
                Ok(ExponentialHistogramDataPoint {
                    time_unix_nano: time(obj(v, p)?, p)?,
                })
            })?,
            aggregation_temporality: temporality(h, &p)?,
        }))
    } else if let Some(s) = field(o, "summary", "summary") {
        let p = format!("{at}.summary");
        let s = obj(s, &p)?;
        Some(Data::Summary(Summary {
            data_points: list(s, "dataPoints", "data_points", &p, summary_point)?,
        }))
    } else {
        None
    };
    Ok(Metric {
        name: string(o, "name", "name", at)?,
        description: string(o, "description", "description", at)?,
        unit: string(o, "unit", "unit", at)?,
        data,
    })
}

fn time(o: &Map<String, Value>, at: &str) -> R<u64> {
    opt(o, "timeUnixNano", "time_unix_nano", at, u64_of).map(Option::unwrap_or_default)
}

fn start(o: &Map<String, Value>, at: &str) -> R<u64> {
    opt(o, "startTimeUnixNano", "start_time_unix_nano", at, u64_of).map(Option::unwrap_or_default)
}

fn flags(o: &Map<String, Value>, at: &str) -> R<u32> {
    opt(o, "flags", "flags", at, |v, p| {
        u64_of(v, p).and_then(|f| u32::try_from(f).map_err(|_| err(p, "out of range")))
    })
    .map(Option::unwrap_or_default)
}

fn attributes(o: &Map<String, Value>, at: &str) -> R<Vec<KeyValue>> {
    list(o, "attributes", "attributes", at, key_value)
}

fn number_point(v: &Value, at: &str) -> R<NumberDataPoint> {
    let o = obj(v, at)?;
    let value = if let Some(d) = field(o, "asDouble", "as_double") {
        Some(NumberValue::AsDouble(f64_of(d, &format!("{at}.asDouble"))?))
    } else if let Some(i) = field(o, "asInt", "as_int") {
        Some(NumberValue::AsInt(i64_of(i, &format!("{at}.asInt"))?))
    } else {
        None
    };
    Ok(NumberDataPoint {
        attributes: attributes(o, at)?,
        start_time_unix_nano: start(o, at)?,
        time_unix_nano: time(o, at)?,
        value,
        flags: flags(o, at)?,
    })
}

fn histogram_point(v: &Value, at: &str) -> R<HistogramDataPoint> {
    let o = obj(v, at)?;
    Ok(HistogramDataPoint {
        attributes: attributes(o, at)?,
        start_time_unix_nano: start(o, at)?,
        time_unix_nano: time(o, at)?,
        count: opt(o, "count", "count", at, u64_of)?.unwrap_or_default(),
        sum: opt(o, "sum", "sum", at, f64_of)?,
        bucket_counts: list(o, "bucketCounts", "bucket_counts", at, u64_of)?,
        explicit_bounds: list(o, "explicitBounds", "explicit_bounds", at, f64_of)?,
        flags: flags(o, at)?,
    })
}

fn summary_point(v: &Value, at: &str) -> R<SummaryDataPoint> {
    let o = obj(v, at)?;
    Ok(SummaryDataPoint {
        attributes: attributes(o, at)?,
        start_time_unix_nano: start(o, at)?,
        time_unix_nano: time(o, at)?,
        count: opt(o, "count", "count", at, u64_of)?.unwrap_or_default(),
        sum: opt(o, "sum", "sum", at, f64_of)?.unwrap_or_default(),
        quantile_values: list(o, "quantileValues", "quantile_values", at, |v, p| {
            let q = obj(v, p)?;
            Ok(ValueAtQuantile {
                quantile: opt(q, "quantile", "quantile", p, f64_of)?.unwrap_or_default(),
                value: opt(q, "value", "value", p, f64_of)?.unwrap_or_default(),
            })
        })?,
        flags: flags(o, at)?,
    })
}

fn key_value(v: &Value, at: &str) -> R<KeyValue> {
    let o = obj(v, at)?;
    Ok(KeyValue {
        key: string(o, "key", "key", at)?,
        value: opt(o, "value", "value", at, any_value)?,
    })
}

fn any_value(v: &Value, at: &str) -> R<AnyValue> {
    let o = obj(v, at)?;
    let p = |n: &str| format!("{at}.{n}");
    let value = if let Some(s) = field(o, "stringValue", "string_value") {
        Some(Any::String(
            s.as_str()
                .ok_or_else(|| err(&p("stringValue"), "not a string"))?
                .to_string(),
        ))
    } else if let Some(b) = field(o, "boolValue", "bool_value") {
        Some(Any::Bool(
            b.as_bool()
                .ok_or_else(|| err(&p("boolValue"), "not a boolean"))?,
        ))
    } else if let Some(i) = field(o, "intValue", "int_value") {
        Some(Any::Int(i64_of(i, &p("intValue"))?))
    } else if let Some(d) = field(o, "doubleValue", "double_value") {
        Some(Any::Double(f64_of(d, &p("doubleValue"))?))
    } else if let Some(a) = field(o, "arrayValue", "array_value") {
        let ap = p("arrayValue");
        Some(Any::Array(ArrayValue {
            values: list(obj(a, &ap)?, "values", "values", &ap, any_value)?,
        }))
    } else if let Some(k) = field(o, "kvlistValue", "kvlist_value") {
        let kp = p("kvlistValue");
        Some(Any::KvList(KeyValueList {
            values: list(obj(k, &kp)?, "values", "values", &kp, key_value)?,
        }))
    } else if let Some(b) = field(o, "bytesValue", "bytes_value") {
        use base64::Engine;
        let text = b
            .as_str()
            .ok_or_else(|| err(&p("bytesValue"), "not a string"))?;
        Some(Any::Bytes(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| err(&p("bytesValue"), format!("not base64: {e}")))?,
        ))
    } else {
        None
    };
    Ok(AnyValue { value })
}
