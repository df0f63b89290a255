//! OTLP/HTTP metrics: `POST /api/v1/otlp/v1/metrics` (Prometheus' path) and `POST /v1/metrics`
//! (the collector's), protobuf (`application/x-protobuf`) or JSON (`application/json`), gzip or
//! not. Series are named as Prometheus' OTLP receiver names them (`tsgate_otlp::translate`).
//!
//! 200 with an `ExportMetricsServiceResponse` (in the request's encoding) once every stored
//! point is in the write-ahead log; what was not stored (delta temporality, exponential
//! histograms, refused series) is counted and named in its `partial_success`, as OTLP wants for
//! a request accepted in part. A body that cannot be decoded is 400 with the reason, in text as
//! Prometheus answers it; 413 past the limits, 503 when the store refuses writes.

use super::http::{Reply, Request};
use super::senders::{self, Outcome, Refused, SeriesIn};
use crate::observe::{Protocol, Reason};
use crate::schema::DataValue;
use crate::server::state::Prometheus;
use http::StatusCode;
use prost::Message;
use std::sync::Arc;
use tsgate_otlp::proto::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use tsgate_otlp::translate::{self, Value};

const P: Protocol = Protocol::Otlp;

pub fn text(status: StatusCode, msg: &str) -> Reply {
    http::Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(format!("{msg}\n").into_bytes())
        .expect("valid")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

/// A request body in a media type OTLP/HTTP does not define (415).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported Content-Type {0:?}; accepted: application/x-protobuf, application/json")]
struct UnsupportedMedia(String);

fn encoding(content_type: Option<&str>) -> Result<Encoding, UnsupportedMedia> {
    let media = content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/x-protobuf" | "application/protobuf" => Ok(Encoding::Protobuf),
        "application/json" => Ok(Encoding::Json),
        _ => Err(UnsupportedMedia(content_type.unwrap_or("").into())),
    }
}

fn answer(enc: Encoding, rejected: i64, message: String) -> Reply {
    let partial = (rejected > 0 || !message.is_empty()).then_some(ExportMetricsPartialSuccess {
        rejected_data_points: rejected,
        error_message: message,
    });
    let (ct, body) = match enc {
        Encoding::Protobuf => (
            "application/x-protobuf",
            ExportMetricsServiceResponse {
                partial_success: partial,
            }
            .encode_to_vec(),
        ),
        Encoding::Json => {
            let v = match partial {
                // int64 as a string, as the JSON mapping writes it.
                Some(p) => serde_json::json!({"partialSuccess": {
                    "rejectedDataPoints": p.rejected_data_points.to_string(),
                    "errorMessage": p.error_message,
                }}),
                None => serde_json::json!({}),
            };
            ("application/json", v.to_string().into_bytes())
        }
    };
    http::Response::builder()
        .status(StatusCode::OK)
        .header("content-type", ct)
        .body(body)
        .expect("valid")
}

fn value(v: Value) -> DataValue {
    match v {
        Value::F64(f) => crate::ingest::encode::data_value(f),
        Value::I64(i) => DataValue::Int(i),
    }
}

pub async fn write(state: &Arc<Prometheus>, req: Request) -> Reply {
    let ct = req
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok());
    let enc = match encoding(ct) {
        Ok(e) => e,
        Err(e) => {
            let e = e.to_string();
            crate::ingest::counts::batch_rejected(P, &e);
            return text(StatusCode::UNSUPPORTED_MEDIA_TYPE, &e);
        }
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
            return text(status, &e.to_string());
        }
    };
    let decoded = match enc {
        Encoding::Protobuf => ExportMetricsServiceRequest::decode(&body[..])
            .map_err(|e| format!("cannot decode the protobuf ExportMetricsServiceRequest: {e}")),
        Encoding::Json => tsgate_otlp::json::decode(&body)
            .map_err(|e| format!("cannot decode the JSON ExportMetricsServiceRequest: {e}")),
    };
    let request = match decoded {
        Ok(r) => r,
        Err(e) => {
            crate::ingest::counts::batch_rejected(P, &e);
            return text(StatusCode::BAD_REQUEST, &e);
        }
    };
    if !state.ingest.writer.store_available() {
        return crate::server::api::retry_later(text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the store refuses writes, retry",
        ));
    }
    let t = translate::translate(&request);
    drop(request);
    crate::ingest::counts::rejected(P, Reason::Unsupported, t.rejected);
    if !t.metadata.is_empty() {
        let meta: Vec<_> = t
            .metadata
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    crate::prometheus::metadata::Meta {
                        kind: m.kind.into(),
                        help: m.help.clone(),
                        unit: m.unit.clone(),
                    },
                )
            })
            .collect();
        let st = state.clone();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || st.prom.metadata.update(meta)).await
        {
            tracing::warn!(error = %e, "cannot save OTLP metadata");
        }
    }
    let series: Vec<SeriesIn> = t
        .series
        .into_iter()
        .map(|s| SeriesIn {
            labels: s.labels,
            samples: s
                .samples
                .into_iter()
                .map(|(ts, v)| (ts, value(v)))
                .collect(),
        })
        .collect();
    let mut outcome = Outcome::default();
    for e in t.errors {
        outcome.error(|| e);
    }
    let res = senders::write(
        &state.ingest,
        P,
        state.settings.max_tags,
        state.settings.max_points_per_request,
        &series,
        outcome,
    )
    .await;
    match res {
        Err(e @ Refused::TooMany(..)) => text(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string()),
        Err(e @ Refused::Retry(_)) => {
            crate::server::api::retry_later(text(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()))
        }
        Ok(o) => {
            let total: usize = series.iter().map(|s| s.samples.len()).sum();
            let refused_here = total - o.written;
            let rejected = t.rejected as i64 + refused_here as i64;
            answer(enc, rejected, o.summary())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(
            encoding(Some("application/x-protobuf")),
            Ok(Encoding::Protobuf)
        );
        assert_eq!(
            encoding(Some("application/json; charset=utf-8")),
            Ok(Encoding::Json)
        );
        assert!(encoding(Some("text/plain")).is_err());
        assert!(encoding(None).is_err());
    }

    #[test]
    fn partial_success_in_both_encodings() {
        let r = answer(
            Encoding::Json,
            2,
            "metric \"d\" has delta temporality".into(),
        );
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(r.body()).unwrap(),
            serde_json::json!({"partialSuccess":{"rejectedDataPoints":"2","errorMessage":"metric \"d\" has delta temporality"}})
        );
        let r = answer(Encoding::Protobuf, 0, String::new());
        assert!(r.body().is_empty());
        let r = answer(Encoding::Protobuf, 3, "x".into());
        let back = ExportMetricsServiceResponse::decode(&r.body()[..]).unwrap();
        assert_eq!(back.partial_success.unwrap().rejected_data_points, 3);
    }
}
