//! `POST /api/v1/read`: remote read. SAMPLES (one snappy-compressed `ReadResponse`) unless the
//! client lists STREAMED_XOR_CHUNKS first among the types it accepts; then one CRC32C frame per
//! series, its points cut into XOR chunks of 120 samples. Hints: `func: "series"` reads labels
//! only (as Prometheus' own server does).

use crate::query::select::{Matcher, Selected};
use crate::server::http::{Reply, Request};
use crate::server::state::Prometheus;
use http::StatusCode;
use prost::Message;
use std::sync::Arc;
use tsgate_prometheus::chunk::{encode_xor, SAMPLES_PER_CHUNK};
use tsgate_prometheus::frame::write_frame;
use tsgate_prometheus::proto::{
    Chunk, ChunkEncoding, ChunkedReadResponse, ChunkedSeries, Label, QueryResult, ReadRequest,
    ReadResponse, ResponseType, Sample, TimeSeries,
};
use tsgate_prometheus::snappy;

/// Largest chunk payload per frame before a series is split (Prometheus' default 1 MiB).
const MAX_BYTES_IN_FRAME: usize = 1 << 20;

fn text(status: StatusCode, msg: &str) -> Reply {
    http::Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(format!("{msg}\n").into_bytes())
        .expect("valid")
}

/// The first accepted type tsgate supports; none listed means SAMPLES.
pub fn negotiate(accepted: &[i32]) -> Option<ResponseType> {
    if accepted.is_empty() {
        return Some(ResponseType::Samples);
    }
    accepted
        .iter()
        .find_map(|&t| ResponseType::try_from(t).ok())
}

fn labels_of(s: &Selected) -> Vec<Label> {
    s.labels
        .iter()
        .map(|(k, v)| Label {
            name: k.clone(),
            value: v.clone(),
        })
        .collect()
}

pub async fn handle(state: &Arc<Prometheus>, req: Request) -> Reply {
    let raw = match snappy::decompress(&req.body, state.settings.max_decompressed_bytes) {
        Ok(r) => r,
        Err(e) => return text(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let rr = match ReadRequest::decode(raw.as_slice()) {
        Ok(r) => r,
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                &format!("cannot decode prometheus.ReadRequest: {e}"),
            )
        }
    };
    let Some(kind) = negotiate(&rr.accepted_response_types) else {
        return text(
            StatusCode::BAD_REQUEST,
            &format!(
                "server does not support any of the requested response types: {:?}",
                rr.accepted_response_types
            ),
        );
    };
    let mut queries = Vec::with_capacity(rr.queries.len());
    for q in &rr.queries {
        let mut ms = Vec::with_capacity(q.matchers.len());
        for m in &q.matchers {
            match Matcher::new(m.r#type, &m.name, &m.value) {
                Ok(m) => ms.push(m),
                Err(e) => return text(StatusCode::BAD_REQUEST, &e.to_string()),
            }
        }
        let labels_only = q.hints.as_ref().is_some_and(|h| h.func == "series");
        queries.push((ms, q.start_timestamp_ms, q.end_timestamp_ms, labels_only));
    }
    let st = state.clone();
    let res = tokio::task::spawn_blocking(
        move || -> Result<Vec<Vec<Selected>>, crate::query::QueryError> {
            queries
                .iter()
                .map(|(ms, start, end, labels_only)| {
                    st.query.select(ms, *start, *end, !labels_only)
                })
                .collect()
        },
    )
    .await;
    let results = match res {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    match kind {
        ResponseType::Samples => {
            let resp = ReadResponse {
                results: results
                    .iter()
                    .map(|series| QueryResult {
                        timeseries: series
                            .iter()
                            .map(|s| TimeSeries {
                                labels: labels_of(s),
                                samples: s
                                    .points
                                    .iter()
                                    .map(|&(timestamp, value)| Sample { value, timestamp })
                                    .collect(),
                                ..Default::default()
                            })
                            .collect(),
                    })
                    .collect(),
            };
            http::Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "application/x-protobuf")
                .header("content-encoding", "snappy")
                .body(snappy::compress(&resp.encode_to_vec()))
                .expect("valid")
        }
        ResponseType::StreamedXorChunks => {
            let mut body = Vec::new();
            for (qi, series) in results.iter().enumerate() {
                for s in series {
                    let mut chunks: Vec<Chunk> = Vec::new();
                    let mut bytes = 0usize;
                    let flush = |chunks: &mut Vec<Chunk>, body: &mut Vec<u8>| {
                        let msg = ChunkedReadResponse {
                            chunked_series: vec![ChunkedSeries {
                                labels: labels_of(s),
                                chunks: std::mem::take(chunks),
                            }],
                            query_index: qi as i64,
                        };
                        write_frame(body, &msg.encode_to_vec());
                    };
                    for part in s.points.chunks(SAMPLES_PER_CHUNK) {
                        let data = encode_xor(part);
                        bytes += data.len();
                        chunks.push(Chunk {
                            min_time_ms: part[0].0,
                            max_time_ms: part[part.len() - 1].0,
                            r#type: ChunkEncoding::Xor as i32,
                            data,
                        });
                        if bytes >= MAX_BYTES_IN_FRAME {
                            flush(&mut chunks, &mut body);
                            bytes = 0;
                        }
                    }
                    if !chunks.is_empty() || s.points.is_empty() {
                        flush(&mut chunks, &mut body);
                    }
                }
            }
            http::Response::builder()
                .status(StatusCode::OK)
                .header(
                    "content-type",
                    "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse",
                )
                .body(body)
                .expect("valid")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_type_negotiation() {
        assert_eq!(negotiate(&[]), Some(ResponseType::Samples));
        assert_eq!(negotiate(&[1, 0]), Some(ResponseType::StreamedXorChunks));
        assert_eq!(negotiate(&[5, 0]), Some(ResponseType::Samples));
        assert_eq!(negotiate(&[5]), None);
    }
}
