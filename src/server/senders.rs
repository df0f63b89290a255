//! What the InfluxDB and OTLP write endpoints share once their bodies are decoded: series as
//! Prometheus label sets (stored as remote write stores them, so PromQL reads them under the
//! same names, OpenTSDB under the escaped metric and tags), gzip bodies within the body limit,
//! and one write whose outcome each endpoint words in its own convention.

use crate::ingest::encode::encode_ms;
use crate::ingest::{EncodedPoint, Ingest, PointError};
use crate::observe::{Protocol, Reason};
use crate::prometheus::labels::{to_stored, LabelError};
use crate::prometheus::write::ERRORS_KEPT;
use crate::schema::DataValue;
use std::io::Read;

/// One series as a label set (`__name__` among them) and its samples (ms, value).
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesIn {
    pub labels: Vec<(String, String)>,
    pub samples: Vec<(i64, DataValue)>,
}

/// What became of a request's points.
#[derive(Debug, Default)]
pub struct Outcome {
    pub written: usize,
    /// Points not stored, each with why (the first [`ERRORS_KEPT`] messages).
    pub errors: Vec<String>,
    /// Errors past those kept.
    pub more: usize,
}

impl Outcome {
    pub fn error(&mut self, m: impl FnOnce() -> String) {
        if self.errors.len() < ERRORS_KEPT {
            self.errors.push(m());
        } else {
            self.more += 1;
        }
    }

    /// The first five errors and a count of the rest, for an answer's body.
    pub fn summary(&self) -> String {
        let shown: Vec<&str> = self.errors.iter().take(5).map(String::as_str).collect();
        let rest = self.more + self.errors.len() - shown.len();
        let mut s = shown.join("; ");
        if rest > 0 {
            s.push_str(&format!(" (and {rest} more)"));
        }
        s
    }
}

/// Why nothing of a request was stored.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// More points than `limits.max_points_per_request` (413, never worth a retry).
    #[error("{0} points in one request; the limit is limits.max_points_per_request = {1}")]
    TooMany(usize, usize),
    /// The store or UID assignment failed: 503, worth a retry.
    #[error("{0}")]
    Retry(String),
}

/// A gzip body (when `Content-Encoding` says so) decompressed within `limit` bytes.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("unsupported Content-Encoding {0:?}; accepted: gzip, identity")]
    Encoding(String),
    #[error("cannot decompress the gzip body: {0}")]
    Gzip(String),
    #[error("the decompressed body exceeds limits.http_body_max = {0} bytes")]
    TooLarge(usize),
}

pub fn body<'a>(
    req: &'a crate::server::http::Request,
    limit: usize,
) -> Result<std::borrow::Cow<'a, [u8]>, BodyError> {
    let enc = req
        .headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .unwrap_or("");
    if enc.is_empty() || enc.eq_ignore_ascii_case("identity") {
        return Ok(std::borrow::Cow::Borrowed(&req.body[..]));
    }
    if !enc.eq_ignore_ascii_case("gzip") {
        return Err(BodyError::Encoding(enc.to_string()));
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&req.body[..])
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| BodyError::Gzip(e.to_string()))?;
    if out.len() > limit {
        return Err(BodyError::TooLarge(limit));
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// Writes the series; `Ok` once every accepted point is in the write-ahead log. `outcome`
/// already holds the decoder's own errors (its refused points, counted by the caller).
pub async fn write(
    ingest: &Ingest,
    proto: Protocol,
    max_tags: usize,
    max_points: usize,
    series: &[SeriesIn],
    mut outcome: Outcome,
) -> Result<Outcome, Refused> {
    let n: usize = series.iter().map(|s| s.samples.len()).sum();
    if n > max_points {
        crate::ingest::counts::batch_rejected(proto, &"too many points");
        return Err(Refused::TooMany(n, max_points));
    }
    let labels: Vec<Vec<(&str, &str)>> = series
        .iter()
        .map(|s| s.labels.iter().map(|(k, v)| (&**k, &**v)).collect())
        .collect();
    let mut stored = Vec::with_capacity(series.len());
    let (mut tags_refused, mut labels_refused) = (0, 0);
    for (s, l) in series.iter().zip(&labels) {
        match to_stored(l, max_tags) {
            Ok(st) => stored.push(Some(st)),
            Err(e) => {
                match e {
                    LabelError::TooMany { .. } => tags_refused += s.samples.len(),
                    _ => labels_refused += s.samples.len(),
                }
                outcome.error(|| e.to_string());
                stored.push(None);
            }
        }
    }
    crate::ingest::counts::rejected(proto, Reason::Tags, tags_refused as u64);
    crate::ingest::counts::rejected(proto, Reason::Parse, labels_refused as u64);
    let tags: Vec<Vec<(&str, &str)>> = stored
        .iter()
        .map(|st| match st {
            Some(st) => st.tags.iter().map(|(k, v)| (&**k, &**v)).collect(),
            None => Vec::new(),
        })
        .collect();
    let mut points = Vec::with_capacity(n);
    // Per point: the series it belongs to, to name it in an error.
    let mut of = Vec::with_capacity(n);
    for (i, s) in series.iter().enumerate() {
        let Some(st) = &stored[i] else { continue };
        for &(ts, v) in &s.samples {
            points.push(EncodedPoint {
                metric: &st.metric,
                tags: &tags[i],
                raw: encode_ms(ts, v),
                text: None,
            });
            of.push(i);
        }
    }
    let written = ingest
        .write(crate::ingest::Batch {
            points: crate::ingest::Points::Encoded {
                known: Vec::new(),
                points: points
                    .into_iter()
                    .map(crate::ingest::Incoming::Names)
                    .collect(),
            },
            counted: Some(proto),
            ack: crate::ingest::Ack::Durable,
        })
        .await;
    let (outcomes, durable) = (written.outcomes, written.durable);
    if let Err(e) = durable {
        return Err(Refused::Retry(format!(
            "cannot store the points, retry: {e}"
        )));
    }
    for (o, i) in outcomes.into_iter().zip(of) {
        match o {
            Ok(()) => outcome.written += 1,
            // A store failure while assigning UIDs is worth a retry; a refused name is not.
            Err(PointError::Uid(e)) => {
                return Err(Refused::Retry(format!("cannot assign UIDs, retry: {e}")))
            }
            Err(e) => {
                outcome.error(|| format!("{}: {e}", crate::prometheus::labels::display(&labels[i])))
            }
        }
    }
    Ok(outcome)
}
