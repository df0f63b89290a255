//! A Prometheus server's remote-read API (`POST /api/v1/read`, SAMPLES responses) as an import
//! source: the range is read in chunks of `--chunk-hours`, each chunk's series written before
//! the next is asked for, so memory holds one chunk. Samples are stored as remote write stores
//! them (integral values as integers, labels escaped as in `prometheus::labels`). A failed run
//! says where to resume; re-reading a chunk already written changes nothing.

use crate::migrate::write::{write_reporting, StoredImport, Tally};
use crate::query::select::MatchOp;
use http_body_util::{BodyExt, Full};
use prost::Message;
use tsgate_prometheus::proto::{LabelMatcher, Query, ReadRequest, ReadResponse, ResponseType};
use tsgate_prometheus::snappy;

/// Largest decompressed answer taken (Prometheus' own remote-read limit is 50M samples).
const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// A `host:port` and path prefix from an `http://` URL.
fn split_url(url: &str) -> anyhow::Result<(String, String)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow::anyhow!("{url}: only http:// URLs are supported"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let host = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    Ok((host, path.to_string()))
}

/// Selectors as remote-read matchers.
pub fn matchers(selectors: &[String]) -> anyhow::Result<Vec<Vec<LabelMatcher>>> {
    let default = ["{__name__=~\".+\"}".to_string()];
    let selectors = if selectors.is_empty() {
        &default[..]
    } else {
        selectors
    };
    let mut out = Vec::new();
    for s in selectors {
        let ms = crate::promql::parse_match(s).map_err(|e| anyhow::anyhow!("--match {s}: {e}"))?;
        out.push(
            ms.into_iter()
                .map(|m| LabelMatcher {
                    r#type: match m.op {
                        MatchOp::Eq => 0,
                        MatchOp::Neq => 1,
                        MatchOp::Re(_) => 2,
                        MatchOp::Nre(_) => 3,
                    },
                    name: m.name,
                    value: m.value,
                })
                .collect(),
        );
    }
    Ok(out)
}

/// One remote-read call.
async fn read(host: &str, path: &str, req: &ReadRequest) -> anyhow::Result<ReadResponse> {
    let stream = tokio::net::TcpStream::connect(host)
        .await
        .map_err(|e| anyhow::anyhow!("{host}: {e}"))?;
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let body = snappy::compress(&req.encode_to_vec());
    let r = http::Request::builder()
        .method("POST")
        .uri(format!("{path}/api/v1/read"))
        .header("host", host)
        .header("content-type", "application/x-protobuf")
        .header("content-encoding", "snappy")
        .header("x-prometheus-remote-read-version", "0.1.0")
        .header("user-agent", concat!("tsgate/", env!("CARGO_PKG_VERSION")))
        .body(Full::new(bytes::Bytes::from(body)))?;
    let resp = send.send_request(r).await?;
    let status = resp.status();
    let bytes = resp.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        anyhow::bail!(
            "http://{host}{path}/api/v1/read answered {status}: {}",
            String::from_utf8_lossy(&bytes).trim()
        );
    }
    let raw = snappy::decompress(&bytes, MAX_RESPONSE_BYTES)?;
    Ok(ReadResponse::decode(raw.as_slice())?)
}

/// What to read.
#[derive(Debug, Clone)]
pub struct Options {
    /// Prometheus' base URL (`http://host:port[/prefix]`).
    pub url: String,
    /// Series selectors; none = every series.
    pub matches: Vec<String>,
    /// OpenTSDB time grammar; default `1d-ago` and `now`.
    pub start: Option<String>,
    pub end: Option<String>,
    pub chunk_hours: u32,
}

/// `tsgate import --from prometheus --url URL [--match S]… [--start T] [--end T]`.
pub async fn import(
    ingest: &crate::ingest::Ingest,
    max_tags: usize,
    args: &Options,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Tally> {
    let (host, path) = split_url(&args.url)?;
    let now = tsgate_common::clock::now_ms();
    let time = |s: &Option<String>, dflt: &str| -> anyhow::Result<i64> {
        let s = s.as_deref().unwrap_or(dflt);
        Ok(crate::query::time::parse_time(s, now).map_err(anyhow::Error::msg)? as i64)
    };
    let (start, end) = (time(&args.start, "1d-ago")?, time(&args.end, "now")?);
    if end < start {
        anyhow::bail!("--end is before --start");
    }
    let selectors = matchers(&args.matches)?;
    let chunk = args.chunk_hours.max(1) as i64 * 3_600_000;
    let chunks = ((end - start) / chunk + 1) as u64;
    bar.set_length(chunks);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} chunks {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut t = Tally::default();
    let mut from = start;
    while from <= end {
        // Remote read's range is inclusive at both ends: chunks end a millisecond short.
        let to = (from + chunk - 1).min(end);
        let req = ReadRequest {
            queries: selectors
                .iter()
                .map(|ms| Query {
                    start_timestamp_ms: from,
                    end_timestamp_ms: to,
                    matchers: ms.clone(),
                    hints: None,
                })
                .collect(),
            accepted_response_types: vec![ResponseType::Samples as i32],
        };
        let resp = read(&host, &path, &req).await.map_err(|e| {
            anyhow::anyhow!(
                "{e} (chunk from {from} ms; resume with --start {})",
                from / 1000
            )
        })?;
        let mut batch = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for ts in resp.results.into_iter().flat_map(|r| r.timeseries) {
            let labels: Vec<(String, String)> =
                ts.labels.into_iter().map(|l| (l.name, l.value)).collect();
            // Two selectors may both match a series.
            if !seen.insert(labels.clone()) {
                continue;
            }
            let points = ts
                .samples
                .iter()
                .map(|s| (s.timestamp, crate::ingest::encode::data_value(s.value)))
                .collect();
            match StoredImport::from_labels(&labels, points, max_tags) {
                Ok(s) => batch.push(s),
                Err(e) => {
                    t.bad += ts.samples.len() as u64;
                    bar.suspend(|| eprintln!("{e}"));
                }
            }
        }
        write_reporting(ingest, &batch, bar, &mut t).await?;
        bar.inc(1);
        from = to + 1;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_matchers() {
        assert_eq!(
            split_url("http://127.0.0.1:9090").unwrap(),
            ("127.0.0.1:9090".into(), "".into())
        );
        assert_eq!(
            split_url("http://prom/sub/").unwrap(),
            ("prom:80".into(), "/sub".into())
        );
        assert!(split_url("https://x").is_err());
        let m = matchers(&["up{job!=\"a\",instance=~\"b.*\"}".into()]).unwrap();
        let got: Vec<(i32, &str, &str)> = m[0]
            .iter()
            .map(|m| (m.r#type, m.name.as_str(), m.value.as_str()))
            .collect();
        assert!(got.contains(&(1, "job", "a")), "{got:?}");
        assert!(got.contains(&(2, "instance", "b.*")), "{got:?}");
        assert!(got.contains(&(0, "__name__", "up")), "{got:?}");
    }
}
