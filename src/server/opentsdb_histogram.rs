//! OpenTSDB 2.4 histogram points: `POST /api/histogram` and the telnet `histogram` command.
//! Each point becomes one cell in the series' `tsdb` row: qualifier `0x06` + offset (2 bytes
//! of seconds or 4 of milliseconds, `Internal.getQualifier`), value = codec id byte + the
//! codec's encoding, exactly as OpenTSDB's `addHistogramPoint` writes it. Cells are written
//! straight to the store (like annotations), never merged into compacted columns, and answered
//! once a store sync made them as durable as a WAL record (`write::direct`).
//!
//! tsgate knows one codec, `SimpleHistogram`, under id [`SIMPLE_ID`] (the id OpenTSDB's
//! documented `tsd.core.histograms.config` gives `SimpleHistogramDecoder`).

use super::http::{error_reply, Reply, Request};
use crate::schema::rowkey::base_time;
use crate::server::state::OpenTsdb;
use base64::Engine;
use http::{Method, StatusCode};
use serde_json::Value as Json;
use std::sync::Arc;
use tsgate_opentsdb::histogram::SimpleHistogram;

/// The codec id of `SimpleHistogram`.
pub const SIMPLE_ID: u8 = 0;

/// Why a histogram point was refused or not stored; `Display` is OpenTSDB's message where it
/// has one (the `error` of a `details` entry, the telnet `illegal argument` text).
#[derive(Debug, thiserror::Error)]
pub enum HistogramPutError {
    #[error("Metric name was empty")]
    EmptyMetric,
    #[error("Invalid timestamp")]
    InvalidTimestamp,
    #[error("Missing tags")]
    MissingTags,
    #[error("Invalid type. Must be from 0 to 255.")]
    InvalidType,
    #[error("Invalid base64 value: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("Histogram buckets cannot be null or empty if 'value' is empty.")]
    NoBuckets,
    #[error("Unable to parse bucket bounds: {0}")]
    BucketBounds(String),
    #[error("No codec found for ID: {0}")]
    NoCodec(i64),
    #[error(transparent)]
    Codec(#[from] tsgate_opentsdb::histogram::HistogramError),
    #[error("not enough arguments (need least 5, got {0})")]
    TooFewArguments(usize),
    /// A telnet timestamp that is not a positive integer (the word as sent).
    #[error("invalid timestamp: {0}")]
    TelnetTimestamp(String),
    #[error("invalid tag: {0}")]
    InvalidTag(String),
    #[error(transparent)]
    Name(#[from] tsgate_opentsdb::NameError),
    #[error(transparent)]
    Uid(#[from] crate::uid::UidError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Panicked(#[from] crate::server::blocking::Panicked),
}

/// A histogram point ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPoint {
    pub metric: String,
    pub timestamp: u64,
    pub tags: Vec<(String, String)>,
    /// Codec id byte + encoding.
    pub cell: Vec<u8>,
}

/// OpenTSDB's `Const.SECOND_MASK` test: a timestamp above 32 bits is in milliseconds.
fn is_ms(ts: u64) -> bool {
    ts & 0xFFFF_FFFF_0000_0000 != 0
}

/// The qualifier of a histogram cell at `ts` (s or ms).
pub fn qualifier(ts: u64) -> Vec<u8> {
    let mut q = vec![crate::schema::column::HISTOGRAM_PREFIX];
    if is_ms(ts) {
        let base = (ts / 1000) - (ts / 1000) % 3600;
        q.extend_from_slice(&((ts - base * 1000) as u32).to_be_bytes());
    } else {
        q.extend_from_slice(&((ts % 3600) as u16).to_be_bytes());
    }
    q
}

/// The cell of a binary histogram given with its codec id: decoded and encoded again with the
/// id byte, as OpenTSDB's codec manager does (so the stored bytes are the codec's own).
fn binary_cell(id: i64, raw: &[u8]) -> Result<Vec<u8>, HistogramPutError> {
    if id != i64::from(SIMPLE_ID) {
        return Err(HistogramPutError::NoCodec(id));
    }
    let h = SimpleHistogram::decode(raw, false)?;
    Ok(h.encode(Some(SIMPLE_ID)))
}

/// One element of `/api/histogram`'s body (OpenTSDB's `HistogramPojo`): `metric`,
/// `timestamp`, `tags`, and either `value` (base64 of a codec's encoding, with `id`) or
/// `buckets` (`{"lo,hi": count}`) with `underflow`/`overflow`.
pub fn from_json(dp: &Json) -> Result<HistogramPoint, HistogramPutError> {
    let metric = dp["metric"].as_str().unwrap_or_default().to_string();
    if metric.is_empty() {
        return Err(HistogramPutError::EmptyMetric);
    }
    let timestamp = dp["timestamp"].as_i64().unwrap_or(0);
    if timestamp <= 0 {
        return Err(HistogramPutError::InvalidTimestamp);
    }
    let tags: Vec<(String, String)> = dp["tags"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    if tags.is_empty() {
        return Err(HistogramPutError::MissingTags);
    }
    let cell = match dp["value"].as_str().filter(|v| !v.is_empty()) {
        Some(v) => {
            let id = dp["id"].as_i64().unwrap_or(0);
            if !(0..=255).contains(&id) {
                return Err(HistogramPutError::InvalidType);
            }
            let raw = base64::engine::general_purpose::STANDARD.decode(v)?;
            binary_cell(id, &raw)?
        }
        None => {
            let buckets = dp["buckets"]
                .as_object()
                .filter(|b| !b.is_empty())
                .ok_or(HistogramPutError::NoBuckets)?;
            let mut h = SimpleHistogram {
                underflow: dp["underflow"].as_u64().unwrap_or(0),
                overflow: dp["overflow"].as_u64().unwrap_or(0),
                ..Default::default()
            };
            for (k, n) in buckets {
                h.add_bucket(k, n.as_i64().unwrap_or(0))
                    .map_err(|_| HistogramPutError::BucketBounds(k.clone()))?;
            }
            h.encode(Some(SIMPLE_ID))
        }
    };
    Ok(HistogramPoint {
        metric,
        timestamp: timestamp as u64,
        tags,
        cell,
    })
}

/// `histogram <metric> <timestamp> [<id>] <value> <tagk=tagv> ...`: with an id the value is
/// base64 of that codec's encoding; without, the telnet bucket form
/// `lo,hi=count:...:u=N:o=N` of `SimpleHistogram`.
pub fn from_telnet(line: &str) -> Result<HistogramPoint, HistogramPutError> {
    let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
    if words.len() < 5 {
        return Err(HistogramPutError::TooFewArguments(words.len() - 1));
    }
    let metric = words[1].to_string();
    let ts: i64 = words[2]
        .replace('.', "")
        .parse()
        .map_err(|_| HistogramPutError::TelnetTimestamp(words[2].into()))?;
    if ts <= 0 {
        return Err(HistogramPutError::TelnetTimestamp(ts.to_string()));
    }
    let id: Option<i64> = words[3].parse().ok();
    let (value, first_tag) = match id {
        Some(_) => (words[4], 5),
        None => (words[3], 4),
    };
    let mut tags = Vec::new();
    for w in &words[first_tag..] {
        let (k, v) = w
            .split_once('=')
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .ok_or_else(|| HistogramPutError::InvalidTag(w.to_string()))?;
        tags.push((k.to_string(), v.to_string()));
    }
    let cell = match id {
        Some(id) => {
            let raw = base64::engine::general_purpose::STANDARD.decode(value)?;
            binary_cell(id, &raw)?
        }
        None => SimpleHistogram::parse_telnet(value)?.encode(Some(SIMPLE_ID)),
    };
    Ok(HistogramPoint {
        metric,
        timestamp: ts as u64,
        tags,
        cell,
    })
}

/// Validates the names, resolves the series (assigning UIDs) and writes the cell. Blocking.
pub fn store(st: &OpenTsdb, p: &HistogramPoint) -> Result<(), HistogramPutError> {
    let allow = &st.limits.allow_special;
    tsgate_opentsdb::names::validate_metric(&p.metric, allow)?;
    for (k, v) in &p.tags {
        tsgate_opentsdb::names::validate_tagk(k, v, allow)?;
        tsgate_opentsdb::names::validate_tagv(v, k, allow)?;
    }
    let tags: Vec<(&str, &str)> = p
        .tags
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let series = st.resolver.resolve(&p.metric, &tags)?;
    st.resolver.sync_if_dirty()?;
    let secs = if is_ms(p.timestamp) {
        p.timestamp / 1000
    } else {
        p.timestamp
    };
    let e = &st.query;
    let row = e.layout.row_key(series.tsuid, base_time(secs));
    e.store.mutate(
        &e.table,
        vec![crate::store::RowMutations::put(
            row,
            crate::schema::DATA_FAMILY,
            qualifier(p.timestamp),
            p.cell.clone(),
        )],
    )?;
    Ok(())
}

/// `POST /api/histogram`: one object or an array; 204 when all were stored, else 400 with
/// OpenTSDB's put error (or, with `summary`/`details`, the counts and the failures).
pub(super) async fn put(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    if req.method != Method::POST {
        return super::api::method_not_allowed(&req.method);
    }
    // /api/put's body path: Content-Encoding within limits.http_body_max.
    let raw = match super::api::body_text(state, &req) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let body: Json = match serde_json::from_slice(&raw) {
        Ok(b) => b,
        Err(e) => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                "Unable to parse the given JSON",
                &e.to_string(),
            )
        }
    };
    let dps: Vec<Json> = match body {
        Json::Array(a) => a,
        o => vec![o],
    };
    if let Some(r) = super::api::too_many_points(state, dps.len()) {
        return r;
    }
    let (details, summary) = (
        req.flag("details"),
        req.flag("summary") || req.flag("details"),
    );
    let st = state.clone();
    let res = crate::server::blocking::run(move || {
        let mut errors = Vec::new();
        for dp in &dps {
            if let Err(e) = from_json(dp).and_then(|p| store(&st, &p)) {
                errors.push(serde_json::json!({"datapoint": dp, "error": e.to_string()}));
            }
        }
        // One (shared) sync for the request before any of it is acknowledged.
        let synced = if errors.len() < dps.len() {
            st.ingest.direct.sync()
        } else {
            Ok(())
        };
        (dps.len(), errors, synced)
    })
    .await;
    let (n, errors) = match res {
        Ok((_, _, Err(e))) => {
            return super::api::retry_later(error_reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "Unable to store the histograms, please retry",
                &e.to_string(),
            ))
        }
        Ok((n, errors, Ok(()))) => (n, errors),
        Err(e) => {
            return error_reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Unable to store the histograms",
                &e.to_string(),
            )
        }
    };
    let failed = errors.len();
    if !summary {
        if failed == 0 {
            return super::opentsdb_meta::status_only(StatusCode::NO_CONTENT);
        }
        return error_reply(
            StatusCode::BAD_REQUEST,
            "One or more data points had errors",
            "Please see the TSD logs or append \"details\" to the put request",
        );
    }
    let mut body = format!("{{\"success\":{},\"failed\":{failed}", n - failed);
    if details {
        body.push_str(&format!(",\"errors\":{}", Json::Array(errors)));
    }
    body.push('}');
    let status = if failed == 0 {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    super::http::json_reply(status, body)
}

/// Java's `Float.toString` for the plain range: the shortest text that reads back, with `.0`
/// on whole numbers (the `_pct_` suffix of percentile series names).
fn java_float(p: f32) -> String {
    let t = format!("{p}");
    if t.contains('.') || t.contains('e') || !p.is_finite() {
        t
    } else {
        format!("{t}.0")
    }
}

/// `POST /api/query` whose sub-queries carry `percentiles`: `None` when none does (the
/// ordinary engine answers). Histogram cells of the matching series are merged by summing
/// buckets per group and timestamp (or downsample bucket), and each percentile becomes a series
/// `<metric>_pct_<p>` with `SimpleHistogram.percentile`'s values. Only `sum` aggregates
/// histograms (as 2.4's `HistogramAggregation`).
pub(super) async fn maybe_percentiles(state: &Arc<OpenTsdb>, req: &Request) -> Option<Reply> {
    if req.method != Method::POST {
        return None;
    }
    let body: Json = serde_json::from_slice(&req.body).ok()?;
    let queries = body.get("queries")?.as_array()?;
    let wanted: Vec<Option<Vec<f32>>> = queries
        .iter()
        .map(|q| {
            q.get("percentiles").and_then(|p| p.as_array()).map(|a| {
                a.iter()
                    .filter_map(|x| x.as_f64())
                    .map(|x| x as f32)
                    .collect()
            })
        })
        .collect();
    if wanted.iter().all(Option::is_none) {
        return None;
    }
    let bad = |m: &str| Some(error_reply(StatusCode::BAD_REQUEST, m, ""));
    if wanted.iter().any(Option::is_none) {
        return bad("Every sub-query of a histogram query needs percentiles");
    }
    let mut plain = body.clone();
    for q in plain["queries"].as_array_mut()? {
        if let Some(o) = q.as_object_mut() {
            o.remove("percentiles");
            o.remove("showHistogramBuckets");
        }
    }
    let now = tsgate_common::clock::now_ms();
    let q = match crate::query::parse::from_json(plain.to_string().as_bytes(), now) {
        Ok(q) => q,
        Err(e) => return bad(&e.to_string()),
    };
    if q.queries
        .iter()
        .any(|sq| sq.aggregator != crate::query::aggregate::Aggregator::Sum)
    {
        return bad("Histograms aggregate with sum only");
    }
    let st = state.clone();
    let res = crate::server::blocking::run(move || {
        let mut out = Vec::new();
        for (sq, pcts) in q.queries.iter().zip(wanted.iter().flatten()) {
            out.extend(percentile_series(&st, &q, sq, pcts)?);
        }
        Ok::<_, PercentileError>(format!("[{}]", out.join(",")))
    })
    .await;
    Some(match res {
        Ok(Ok(body)) => super::http::json_reply(StatusCode::OK, body),
        Ok(Err(e)) => error_reply(StatusCode::BAD_REQUEST, &e.to_string(), ""),
        Err(e) => error_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "query task failed",
            &e.to_string(),
        ),
    })
}

/// Why a percentile query failed (answered 400 with this message).
#[derive(Debug, thiserror::Error)]
enum PercentileError {
    #[error(transparent)]
    Uid(#[from] crate::uid::UidError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// One group of series: merged histograms by time, and the tags of its members.
#[derive(Default)]
struct Group {
    by_time: std::collections::BTreeMap<u64, SimpleHistogram>,
    members: Vec<std::collections::BTreeMap<String, String>>,
}

fn merge(into: &mut SimpleHistogram, h: SimpleHistogram) {
    for (b, n) in h.buckets {
        *into.buckets.entry(b).or_insert(0) += n;
    }
    into.underflow += h.underflow;
    into.overflow += h.overflow;
}

fn percentile_series(
    st: &OpenTsdb,
    q: &crate::query::spec::Query,
    sq: &crate::query::spec::SubQuery,
    pcts: &[f32],
) -> Result<Vec<String>, PercentileError> {
    use std::collections::BTreeMap;
    let e = &st.query;
    let layout = e.layout;
    let mid = e
        .uids
        .require_id(crate::schema::uid_table::UidKind::Metric, &sq.metric)?;
    let (start_s, end_s) = (q.start_ms / 1000, q.end_ms / 1000);
    let mut groups: BTreeMap<Vec<String>, Group> = BTreeMap::new();
    for salt in layout.salt_prefixes() {
        let scan = crate::store::Scan {
            start: layout.metric_start(&salt, &mid, base_time(start_s)),
            stop: layout.metric_start(&salt, &mid, base_time(end_s).saturating_add(3600)),
            families: vec![crate::schema::DATA_FAMILY.to_vec()],
            ..Default::default()
        };
        for row in e.store.scan(&e.table, &scan)? {
            let row = row?;
            let Ok(rk) = layout.parse(&row.key) else {
                continue;
            };
            let mut tags = BTreeMap::new();
            for (k, v) in rk.tag_pairs() {
                let k = e.uids.get_name(crate::schema::uid_table::UidKind::Tagk, k);
                let v = e.uids.get_name(crate::schema::uid_table::UidKind::Tagv, v);
                if let (Ok(k), Ok(v)) = (k, v) {
                    tags.insert(k.to_string(), v.to_string());
                }
            }
            if !sq
                .filters
                .iter()
                .all(|f| f.matches(tags.get(&f.tagk).map(String::as_str)))
            {
                continue;
            }
            let key: Vec<String> = sq
                .filters
                .iter()
                .filter(|f| f.group_by)
                .map(|f| tags.get(&f.tagk).cloned().unwrap_or_default())
                .collect();
            let g = groups.entry(key).or_default();
            if !g.members.contains(&tags) {
                g.members.push(tags.clone());
            }
            let base_ms = u64::from(rk.base) * 1000;
            for c in &row.cells {
                let ts = match (c.qualifier.first(), c.qualifier.len()) {
                    (Some(&crate::schema::column::HISTOGRAM_PREFIX), 3) => {
                        base_ms
                            + u64::from(u16::from_be_bytes([c.qualifier[1], c.qualifier[2]])) * 1000
                    }
                    (Some(&crate::schema::column::HISTOGRAM_PREFIX), 5) => {
                        base_ms
                            + u64::from(u32::from_be_bytes([
                                c.qualifier[1],
                                c.qualifier[2],
                                c.qualifier[3],
                                c.qualifier[4],
                            ]))
                    }
                    _ => continue,
                };
                if ts < q.start_ms || ts > q.end_ms || c.value.first() != Some(&SIMPLE_ID) {
                    continue;
                }
                let Ok(h) = SimpleHistogram::decode(&c.value, true) else {
                    continue;
                };
                let slot = match &sq.downsample {
                    Some(d) if d.all => q.start_ms,
                    Some(d) if d.interval_ms > 0 => ts - ts % d.interval_ms,
                    _ => ts,
                };
                merge(g.by_time.entry(slot).or_default(), h);
            }
        }
    }
    let mut out = Vec::new();
    for g in groups.values().filter(|g| !g.by_time.is_empty()) {
        let mut common = g.members[0].clone();
        common.retain(|k, v| g.members.iter().all(|m| m.get(k) == Some(v)));
        let agg: std::collections::BTreeSet<&String> = g
            .members
            .iter()
            .flat_map(|m| m.keys())
            .filter(|k| !common.contains_key(*k))
            .collect();
        for &p in pcts {
            let dps: Vec<String> = g
                .by_time
                .iter()
                .map(|(t, h)| {
                    let key = if q.flags.ms_resolution { *t } else { t / 1000 };
                    let v = h.percentile(f64::from(p));
                    format!("\"{key}\":{}", tsgate_common::numfmt::java_double(v))
                })
                .collect();
            out.push(format!(
                "{{\"metric\":{},\"tags\":{},\"aggregateTags\":{},\"dps\":{{{}}}}}",
                crate::meta::json::esc(&format!("{}_pct_{}", sq.metric, java_float(p))),
                serde_json::to_string(&common).unwrap_or_default(),
                serde_json::to_string(&agg).unwrap_or_default(),
                dps.join(",")
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn qualifiers_as_internal_getqualifier() {
        // 1356998400 + 10 s → offset 10; ms 1356998400500 → 4-byte offset 500.
        assert_eq!(qualifier(1356998410), [0x06, 0x00, 0x0A]);
        assert_eq!(qualifier(1356998400500), [0x06, 0, 0, 0x01, 0xF4]);
        // No divide-by-1000 quirk here (annotations have it): 1356998000 is seconds.
        assert_eq!(qualifier(1356998000), [0x06, 0x0C, 0x80]);
    }

    #[test]
    fn json_and_telnet_forms_give_the_same_cell() {
        let j = from_json(
            &json!({"metric":"m","timestamp":1356998400,"tags":{"host":"a"},
            "buckets":{"0,1":3,"1,2":5},"underflow":1,"overflow":2}),
        )
        .unwrap();
        let t = from_telnet("histogram m 1356998400 0,1=3:1,2=5:u=1:o=2 host=a").unwrap();
        assert_eq!(j, t);
        assert_eq!(j.cell[0], SIMPLE_ID);
        // The binary form: base64 of the encoding without the id byte, with id 0.
        let b64 = base64::engine::general_purpose::STANDARD.encode(&j.cell[1..]);
        let bin = from_telnet(&format!("histogram m 1356998400 0 {b64} host=a")).unwrap();
        assert_eq!(bin.cell, j.cell);
        let bj = from_json(
            &json!({"metric":"m","timestamp":1356998400,"tags":{"host":"a"},
            "id":0,"value":b64}),
        )
        .unwrap();
        assert_eq!(bj.cell, j.cell);
    }

    #[test]
    fn refusals_worded_as_opentsdb() {
        let e = |v: Json| from_json(&v).unwrap_err().to_string();
        assert_eq!(
            e(json!({"timestamp":1,"tags":{"a":"b"},"buckets":{"0,1":1}})),
            "Metric name was empty"
        );
        assert_eq!(
            e(json!({"metric":"m","tags":{"a":"b"},"buckets":{"0,1":1}})),
            "Invalid timestamp"
        );
        assert_eq!(
            e(json!({"metric":"m","timestamp":1,"buckets":{"0,1":1}})),
            "Missing tags"
        );
        assert_eq!(
            e(json!({"metric":"m","timestamp":1,"tags":{"a":"b"}})),
            "Histogram buckets cannot be null or empty if 'value' is empty."
        );
        assert_eq!(
            e(json!({"metric":"m","timestamp":1,"tags":{"a":"b"},"buckets":{"0;1":1}})),
            "Unable to parse bucket bounds: 0;1"
        );
        assert_eq!(
            e(json!({"metric":"m","timestamp":1,"tags":{"a":"b"},"id":7,"value":"AAE="})),
            "No codec found for ID: 7"
        );
        assert!(from_telnet("histogram m 1 0,1=1")
            .unwrap_err()
            .to_string()
            .starts_with("not enough arguments"));
        assert!(from_telnet("histogram m -5 0,1=1 a=b").is_err());
        assert!(from_telnet("histogram m 1 0,1 a=b").is_err());
    }
}
