//! `POST /api/v1/write`: remote write 1.0 and 2.0. 204 only once every accepted sample is in
//! the write-ahead log; 400 for data that can never be stored (named in the body); 415 for an
//! unknown message type or encoding; 503 when tsgate must push back (Prometheus retries 5xx,
//! while 2.42 drops a batch on 429 by default).

use crate::ingest::{self, Ack, EncodedPoint, Incoming, PointError, Points};
use crate::observe::Reason;
use crate::prometheus::write::{from_v1, from_v2, Batch, Memo};
use crate::server::http::{Reply, Request};
use crate::server::state::Prometheus;
use http::StatusCode;
use prost::Message;
use std::sync::Arc;
use tsgate_prometheus::{snappy, v2};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// A remote-write body this receiver cannot read (415), in Prometheus' words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MediaError {
    #[error("unsupported Content-Encoding {0:?}; only snappy is accepted")]
    Encoding(String),
    #[error("unsupported Content-Type {0:?}; expected application/x-protobuf")]
    ContentType(String),
    #[error(
        "unsupported proto={0}; accepted: prometheus.WriteRequest, io.prometheus.write.v2.Request"
    )]
    Proto(String),
}

/// Chooses the message from `Content-Type` (a missing one means 1.0, as Prometheus 3 reads it).
pub fn negotiate(
    content_type: Option<&str>,
    encoding: Option<&str>,
) -> Result<Version, MediaError> {
    if let Some(enc) = encoding {
        if !enc.trim().eq_ignore_ascii_case("snappy") {
            return Err(MediaError::Encoding(enc.to_string()));
        }
    }
    let Some(ct) = content_type else {
        return Ok(Version::V1);
    };
    let mut parts = ct.split(';').map(str::trim);
    let media = parts.next().unwrap_or_default();
    if !media.eq_ignore_ascii_case("application/x-protobuf") {
        return Err(MediaError::ContentType(ct.to_string()));
    }
    for p in parts {
        if let Some((k, v)) = p.split_once('=') {
            if k.trim().eq_ignore_ascii_case("proto") {
                return match v.trim().trim_matches('"') {
                    "prometheus.WriteRequest" => Ok(Version::V1),
                    "io.prometheus.write.v2.Request" => Ok(Version::V2),
                    other => Err(MediaError::Proto(other.to_string())),
                };
            }
        }
    }
    Ok(Version::V1)
}

struct Written {
    samples: usize,
    histograms: usize,
    exemplars: usize,
}

fn reply(status: StatusCode, version: Version, written: &Written, msg: &str) -> Reply {
    let mut b = http::Response::builder().status(status);
    if version == Version::V2 {
        // 2.0 receivers always send these, on success and on errors alike.
        b = b
            .header(
                "X-Prometheus-Remote-Write-Samples-Written",
                written.samples.to_string(),
            )
            .header(
                "X-Prometheus-Remote-Write-Histograms-Written",
                written.histograms.to_string(),
            )
            .header(
                "X-Prometheus-Remote-Write-Exemplars-Written",
                written.exemplars.to_string(),
            );
    }
    if msg.is_empty() {
        return b.body(Vec::new()).expect("valid");
    }
    b.header("content-type", "text/plain; charset=utf-8")
        .body(format!("{msg}\n").into_bytes())
        .expect("valid")
}

const RW: crate::observe::Protocol = crate::observe::Protocol::RemoteWrite;

/// Counts a request refused as a whole, and passes its answer on.
fn rejected(r: Reply) -> Reply {
    crate::ingest::counts::batch_rejected(RW, &r.status());
    r
}

pub async fn handle(state: &Arc<Prometheus>, req: Request) -> Reply {
    let header = |n: &str| {
        req.headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let nothing = Written {
        samples: 0,
        histograms: 0,
        exemplars: 0,
    };
    let version = match negotiate(
        header("content-type").as_deref(),
        header("content-encoding").as_deref(),
    ) {
        Ok(v) => v,
        Err(e) => {
            return reply(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Version::V1,
                &nothing,
                &e.to_string(),
            )
        }
    };
    if !state.ingest.writer.store_available() {
        return crate::server::api::retry_later(reply(
            StatusCode::SERVICE_UNAVAILABLE,
            version,
            &nothing,
            "the store refuses writes, retry",
        ));
    }
    let raw = match snappy::decompress(&req.body, state.settings.max_decompressed_bytes) {
        Ok(r) => r,
        Err(e @ snappy::SnappyError::TooLarge { .. }) => {
            return rejected(reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                version,
                &nothing,
                &e.to_string(),
            ))
        }
        Err(e) => {
            return rejected(reply(
                StatusCode::BAD_REQUEST,
                version,
                &nothing,
                &e.to_string(),
            ))
        }
    };
    let max_tags = state.settings.max_tags;
    // Decoded up front so that the batch may borrow its strings.
    let v2_req = if version == Version::V2 {
        v2::Request::decode(raw.as_slice())
    } else {
        Ok(v2::Request::default())
    };
    let batch: Batch = match version {
        Version::V1 => {
            // The memo read for the whole request under one lock, released before any await.
            let decoded = {
                let memo = state.resolver.raw_reader();
                from_v1(&raw, max_tags, &|key| memo.get(key))
            };
            match decoded {
                Ok(b) => b,
                Err(e) => {
                    return rejected(reply(
                        StatusCode::BAD_REQUEST,
                        version,
                        &nothing,
                        &e.to_string(),
                    ))
                }
            }
        }
        Version::V2 => match &v2_req {
            Ok(r) => from_v2(r, max_tags),
            Err(e) => {
                return rejected(reply(
                    StatusCode::BAD_REQUEST,
                    version,
                    &nothing,
                    &format!("cannot decode io.prometheus.write.v2.Request: {e}"),
                ))
            }
        },
    };
    // Exemplars are accepted and not stored (the 2.0 header reports 0 written).
    let Batch {
        series,
        memo,
        samples,
        known,
        metadata,
        mut errors,
        errors_more,
        histograms,
        exemplars: _,
        refused,
    } = batch;
    crate::ingest::counts::rejected(RW, Reason::Tags, refused.tags as u64);
    crate::ingest::counts::rejected(RW, Reason::Parse, refused.labels as u64);
    crate::ingest::counts::rejected(RW, Reason::Unsupported, histograms as u64);
    crate::ingest::counts::rejected(
        RW,
        Reason::Value,
        samples.iter().filter(|(_, r)| r.is_err()).count() as u64,
    );
    let max_points = state.settings.max_points_per_request;
    if samples.len() + known.len() > max_points {
        // Never storable as sent: a 4xx, which Prometheus does not retry.
        let msg = format!(
            "{} samples in one request; the limit is limits.max_points_per_request = {max_points}",
            samples.len() + known.len()
        );
        return reply(StatusCode::PAYLOAD_TOO_LARGE, version, &nothing, &msg);
    }
    let mut more = errors_more;
    if histograms > 0 {
        errors.push(format!(
            "{histograms} native histogram samples are not supported and were not stored"
        ));
    }
    if !metadata.is_empty() {
        let st = state.clone();
        if let Ok(Err(e)) =
            tokio::task::spawn_blocking(move || st.prom.metadata.update(metadata)).await
        {
            tracing::warn!(error = %e, "cannot save Prometheus metadata");
        }
    }
    let tags: Vec<Vec<(&str, &str)>> = series
        .iter()
        .map(|s| s.tags.iter().map(|(k, v)| (&**k, &**v)).collect())
        .collect();
    let points: Vec<Incoming<'_>> = samples
        .into_iter()
        .filter_map(|(i, raw)| {
            // A known series' valid samples are in `known`: here it has only errors, dropped.
            let raw = raw.ok()?;
            let text = if let Memo::Remember(k) = &memo[i] {
                Some(k.as_slice())
            } else {
                None
            };
            Some(Incoming::Names(EncodedPoint {
                metric: &series[i].metric,
                tags: &tags[i],
                raw: Ok(raw),
                text,
            }))
        })
        .collect();
    let n = known.len() + points.len();
    let ingest::Written {
        outcomes, durable, ..
    } = state
        .ingest
        .write(ingest::Batch {
            points: Points::Encoded { known, points },
            counted: Some(RW),
            ack: Ack::Durable,
        })
        .await;
    if let Err(e) = durable {
        return crate::server::api::retry_later(reply(
            StatusCode::SERVICE_UNAVAILABLE,
            version,
            &nothing,
            &format!("cannot store the samples, retry: {e}"),
        ));
    }
    let mut failed = 0;
    for o in outcomes {
        match o {
            Ok(()) => {}
            // A store failure while assigning UIDs is worth a retry; a refused name is not.
            Err(PointError::Uid(e)) => {
                return crate::server::api::retry_later(reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    version,
                    &nothing,
                    &format!("cannot assign UIDs, retry: {e}"),
                ))
            }
            Err(e) => {
                failed += 1;
                if errors.len() < crate::prometheus::write::ERRORS_KEPT {
                    errors.push(e.to_string());
                } else {
                    more += 1;
                }
            }
        }
    }
    let written = Written {
        samples: n - failed,
        histograms: 0,
        exemplars: 0,
    };
    if errors.is_empty() {
        return reply(StatusCode::NO_CONTENT, version, &written, "");
    }
    let shown: Vec<&str> = errors.iter().take(5).map(|s| s.as_str()).collect();
    let more = more + errors.len() - shown.len();
    let more = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    reply(
        StatusCode::BAD_REQUEST,
        version,
        &written,
        &format!("{}{more}", shown.join("; ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_negotiation() {
        assert_eq!(negotiate(None, None), Ok(Version::V1));
        assert_eq!(
            negotiate(Some("application/x-protobuf"), Some("snappy")),
            Ok(Version::V1)
        );
        assert_eq!(
            negotiate(
                Some("application/x-protobuf;proto=prometheus.WriteRequest"),
                None
            ),
            Ok(Version::V1)
        );
        assert_eq!(
            negotiate(
                Some("application/x-protobuf; proto=io.prometheus.write.v2.Request"),
                Some("snappy")
            ),
            Ok(Version::V2)
        );
        assert!(negotiate(Some("application/json"), None).is_err());
        assert!(negotiate(Some("application/x-protobuf;proto=foo.Bar"), None).is_err());
        assert!(negotiate(None, Some("gzip")).is_err());
    }
}
