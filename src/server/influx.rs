//! InfluxDB line protocol over HTTP: `POST /write` (the 1.x API, Telegraf's `outputs.influxdb`)
//! and `POST /api/v2/write` (the 2.x API, `outputs.influxdb_v2` and the client libraries), and
//! `GET /ping`. Each numeric field of a line is one series named `measurement_field`, as
//! VictoriaMetrics names it, with the line's tags as labels; string fields are skipped.
//!
//! 204 once every stored point is in the write-ahead log. A line that cannot be parsed is
//! skipped and the others are stored, as InfluxDB 1.x and VictoriaMetrics do; the answer is
//! then 400 naming the lines (`partial write: …`), in the API's error shape: 1.x
//! `{"error":"…"}`, 2.x `{"code":"invalid","message":"…"}`.

use super::http::{Reply, Request};
use super::senders::{self, Outcome, Refused, SeriesIn};
use crate::observe::{Protocol, Reason};
use crate::schema::DataValue;
use crate::server::state::Prometheus;
use http::StatusCode;
use std::collections::HashMap;
use std::sync::Arc;
use tsgate_influx::{FieldValue, Line, Precision};

const P: Protocol = Protocol::Influx;

/// Which API a request came in through: its parameters and its error shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    V1,
    V2,
}

impl Api {
    pub fn of_path(path: &str) -> Api {
        if path.starts_with("/api/v2/") {
            Api::V2
        } else {
            Api::V1
        }
    }
}

/// An error answer in the API's shape (also used for 401/403 on these routes).
pub fn error(api: Api, status: StatusCode, msg: &str) -> Reply {
    let body = match api {
        Api::V1 => serde_json::json!({ "error": msg }),
        Api::V2 => {
            let code = match status {
                StatusCode::UNAUTHORIZED => "unauthorized",
                StatusCode::FORBIDDEN => "forbidden",
                StatusCode::NOT_FOUND => "not found",
                StatusCode::METHOD_NOT_ALLOWED => "method not allowed",
                StatusCode::PAYLOAD_TOO_LARGE => "request too large",
                StatusCode::SERVICE_UNAVAILABLE => "unavailable",
                StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported media type",
                s if s.is_server_error() => "internal error",
                _ => "invalid",
            };
            serde_json::json!({ "code": code, "message": msg })
        }
    };
    let mut b = http::Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8")
        .header("x-influxdb-version", VERSION);
    if api == Api::V1 {
        // InfluxDB 1.x repeats the message in a header.
        if let Ok(v) = http::HeaderValue::from_str(&msg.replace(['\r', '\n'], " ")) {
            b = b.header("x-influxdb-error", v);
        }
    }
    b.body(body.to_string().into_bytes()).expect("valid")
}

const VERSION: &str = concat!("tsgate-", env!("CARGO_PKG_VERSION"));

fn no_content() -> Reply {
    http::Response::builder()
        .status(StatusCode::NO_CONTENT)
        .header("x-influxdb-version", VERSION)
        .body(Vec::new())
        .expect("valid")
}

/// `GET /ping`: 204, as InfluxDB answers it (clients probe it before writing).
pub fn ping() -> Reply {
    no_content()
}

pub async fn write_v1(state: &Arc<Prometheus>, req: Request) -> Reply {
    write(state, req, Api::V1).await
}

pub async fn write_v2(state: &Arc<Prometheus>, req: Request) -> Reply {
    write(state, req, Api::V2).await
}

/// A line as quoted in an error (cut: a line may be a whole body long).
fn quote(line: &[u8]) -> String {
    const MAX: usize = 200;
    let s = String::from_utf8_lossy(&line[..line.len().min(MAX)]);
    if line.len() > MAX {
        format!("{s}…")
    } else {
        s.into_owned()
    }
}

/// Decoded lines as series: one per (metric, tags), samples in line order.
#[derive(Debug, Default)]
pub struct Decoded {
    pub series: Vec<SeriesIn>,
    pub outcome: Outcome,
    /// Lines refused by the parser (or for a timestamp out of range).
    pub bad_lines: usize,
    /// String fields, not stored.
    pub strings: usize,
}

/// Turns a body into series. `db`: the 1.x `db` parameter, added as a `db` label to lines that
/// have none (VictoriaMetrics' `-influxDBLabel`); `now_ms`: the time of lines without one.
pub fn decode(body: &[u8], precision: Precision, db: Option<&str>, now_ms: i64) -> Decoded {
    let mut d = Decoded::default();
    let mut index: HashMap<Vec<(String, String)>, usize> = HashMap::new();
    let mut line = Line::default();
    // Reused for every field's label set; cloned only for a series not seen before.
    let mut labels: Vec<(String, String)> = Vec::new();
    for (no, raw) in tsgate_influx::lines(body) {
        if let Err(e) = tsgate_influx::parse_into(raw, &mut line) {
            d.bad_lines += 1;
            d.outcome
                .error(|| format!("unable to parse '{}' (line {no}): {e}", quote(raw)));
            continue;
        }
        let ts = match line.timestamp {
            Some(t) => precision.to_millis(t),
            None => Some(now_ms),
        };
        let Some(ts) = ts else {
            d.bad_lines += 1;
            d.outcome.error(|| {
                format!(
                    "unable to parse '{}' (line {no}): timestamp out of range",
                    quote(raw)
                )
            });
            continue;
        };
        labels.clear();
        labels.push((String::new(), String::new()));
        for (k, v) in &line.tags {
            labels.push((k.to_string(), v.to_string()));
        }
        if let Some(db) = db.filter(|db| !db.is_empty()) {
            if !line.tags.iter().any(|(k, _)| k == "db") {
                labels.push(("db".into(), db.into()));
            }
        }
        for (field, value) in &line.fields {
            let v = match *value {
                FieldValue::Float(f) => crate::ingest::encode::data_value(f),
                FieldValue::Int(i) => DataValue::Int(i),
                FieldValue::UInt(u) => match i64::try_from(u) {
                    Ok(i) => DataValue::Int(i),
                    Err(_) => DataValue::F64(u as f64),
                },
                FieldValue::Bool(b) => DataValue::Int(b as i64),
                FieldValue::Str(_) => {
                    d.strings += 1;
                    continue;
                }
            };
            labels[0] = (
                crate::prometheus::labels::METRIC_NAME.to_string(),
                tsgate_influx::metric_name(&line.measurement, field),
            );
            let i = match index.get(&labels) {
                Some(&i) => i,
                None => {
                    index.insert(labels.clone(), d.series.len());
                    d.series.push(SeriesIn {
                        labels: labels.clone(),
                        samples: Vec::new(),
                    });
                    d.series.len() - 1
                }
            };
            d.series[i].samples.push((ts, v));
        }
    }
    d
}

async fn write(state: &Arc<Prometheus>, req: Request, api: Api) -> Reply {
    let params = req.params();
    let param = |name: &str| {
        params
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let precision = match api {
        Api::V1 => Precision::v1(param("precision")),
        Api::V2 => Precision::v2(param("precision")),
    };
    let Some(precision) = precision else {
        crate::ingest::counts::batch_rejected(P, &"bad precision");
        let accepted = match api {
            Api::V1 => "n, u, ms, s, m, h",
            Api::V2 => "ns, us, ms, s",
        };
        return error(
            api,
            StatusCode::BAD_REQUEST,
            &format!(
                "invalid precision {:?}; accepted: {accepted}",
                param("precision").unwrap_or("")
            ),
        );
    };
    let body = match senders::body(&req, state.settings.http_body_max) {
        Ok(b) => b,
        Err(e) => {
            crate::ingest::counts::batch_rejected(P, &e);
            let status = match e {
                senders::BodyError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
                senders::BodyError::Encoding(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
                senders::BodyError::Gzip(_) => StatusCode::BAD_REQUEST,
            };
            return error(api, status, &e.to_string());
        }
    };
    if !state.ingest.writer.store_available() {
        return crate::server::api::retry_later(error(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            "the store refuses writes, retry",
        ));
    }
    // The time of lines without one: the request's arrival, in the request's precision.
    let now = tsgate_common::clock::now_ms() as i64;
    let unit = precision.to_millis(1).unwrap_or(1).max(1);
    let now = now - now % unit;
    let db = match api {
        Api::V1 => param("db"),
        Api::V2 => None,
    };
    let d = decode(&body, precision, db, now);
    crate::ingest::counts::rejected(P, Reason::Parse, d.bad_lines as u64);
    let res = senders::write(
        &state.ingest,
        P,
        state.settings.max_tags,
        state.settings.max_points_per_request,
        &d.series,
        d.outcome,
    )
    .await;
    match res {
        Err(e @ Refused::TooMany(..)) => error(api, StatusCode::PAYLOAD_TOO_LARGE, &e.to_string()),
        Err(e @ Refused::Retry(_)) => crate::server::api::retry_later(error(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            &e.to_string(),
        )),
        Ok(o) if o.errors.is_empty() => no_content(),
        Ok(o) => {
            let dropped = o.errors.len() + o.more;
            let msg = if o.written > 0 {
                format!("partial write: {} dropped={dropped}", o.summary())
            } else {
                o.summary()
            };
            error(api, StatusCode::BAD_REQUEST, &msg)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(s: &SeriesIn) -> Vec<(&str, &str)> {
        s.labels.iter().map(|(k, v)| (&**k, &**v)).collect()
    }

    #[test]
    fn fields_become_series_named_as_victoriametrics_names_them() {
        let body = b"cpu,host=a,region=us\\ west usage_user=1.5,usage_system=2i,ok=true,msg=\"x\" 1700000000000000000\n\
                     mem,host=a value=42 1700000000000000000\n\
                     cpu,host=a,region=us\\ west usage_user=2.5 1700000010000000000\n\
                     bad line\n\
                     disk free=3u\n";
        let d = decode(body, Precision::Nanos, Some("telegraf"), 1_800_000_000_000);
        assert_eq!(d.bad_lines, 1);
        assert_eq!(d.strings, 1);
        assert!(
            d.outcome.errors[0].starts_with("unable to parse 'bad line' (line 4): "),
            "{:?}",
            d.outcome.errors
        );
        let got: Vec<_> = d
            .series
            .iter()
            .map(|s| (labels(s), s.samples.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    vec![
                        ("__name__", "cpu_usage_user"),
                        ("host", "a"),
                        ("region", "us west"),
                        ("db", "telegraf")
                    ],
                    vec![
                        (1_700_000_000_000, DataValue::F64(1.5)),
                        (1_700_000_010_000, DataValue::F64(2.5))
                    ]
                ),
                (
                    vec![
                        ("__name__", "cpu_usage_system"),
                        ("host", "a"),
                        ("region", "us west"),
                        ("db", "telegraf")
                    ],
                    vec![(1_700_000_000_000, DataValue::Int(2))]
                ),
                (
                    vec![
                        ("__name__", "cpu_ok"),
                        ("host", "a"),
                        ("region", "us west"),
                        ("db", "telegraf")
                    ],
                    vec![(1_700_000_000_000, DataValue::Int(1))]
                ),
                (
                    vec![("__name__", "mem_value"), ("host", "a"), ("db", "telegraf")],
                    vec![(1_700_000_000_000, DataValue::Int(42))]
                ),
                (
                    vec![("__name__", "disk_free"), ("db", "telegraf")],
                    vec![(1_800_000_000_000, DataValue::Int(3))]
                ),
            ]
        );
    }

    #[test]
    fn a_db_tag_of_the_line_wins_and_precision_applies() {
        let d = decode(
            b"m,db=mine f=1 1700000000",
            Precision::Seconds,
            Some("x"),
            0,
        );
        assert_eq!(labels(&d.series[0])[1], ("db", "mine"));
        assert_eq!(d.series[0].samples[0].0, 1_700_000_000_000);
        assert_eq!(d.series[0].labels.len(), 2);
        let d = decode(b"m f=1 1", Precision::Hours, None, 0);
        assert_eq!(d.series[0].samples[0].0, 3_600_000);
        let d = decode(b"m f=1 9223372036854775807", Precision::Hours, None, 0);
        assert_eq!(d.bad_lines, 1);
    }

    #[test]
    fn error_shapes() {
        let r = error(Api::V1, StatusCode::BAD_REQUEST, "partial write: x");
        assert_eq!(r.body(), br#"{"error":"partial write: x"}"#);
        assert_eq!(r.headers()["x-influxdb-error"], "partial write: x");
        let r = error(Api::V2, StatusCode::PAYLOAD_TOO_LARGE, "big");
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(r.body()).unwrap(),
            serde_json::json!({"code":"request too large","message":"big"})
        );
    }
}
