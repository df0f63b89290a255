//! Normalised points → resolved, encoded points handed to the writer. Protocol handlers call
//! this; it is the one place where names meet UIDs on the write side.

pub mod counts;
pub mod encode;
pub mod rollup;

use crate::series::{Series, SeriesResolver};
use crate::uid::UidError;
use crate::write::shard::StoredPoint;
use crate::write::{WriteError, Writer};
use std::sync::Arc;
use tsgate_opentsdb::put_json::JsonPoint;
use tsgate_opentsdb::{DataPoint, Limits, Value};
use tsgate_schema::rowkey::base_time;
use tsgate_schema::uid_table::UidKind;
use tsgate_schema::{DataValue, RawPoint};

/// Why one point of a batch was not written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PointError {
    /// A value or timestamp storage cannot hold (OpenTSDB's IllegalArgumentException).
    #[error("{0}")]
    Invalid(String),
    /// A name that has no UID while auto-creation is off.
    #[error("{0}")]
    UnknownName(String),
    /// UID assignment failed (ids exhausted, store error).
    #[error("{0}")]
    Uid(String),
    /// A new series over a cardinality limit.
    #[error("{0}")]
    Limit(String),
}

pub fn to_data_value(v: Value) -> DataValue {
    match v {
        Value::Int(i) => DataValue::Int(i),
        Value::F32(f) => DataValue::F32(f),
        Value::F64(f) => DataValue::F64(f),
    }
}

/// A point ready for UID resolution: its names, and its row base and encoded cell (or why it
/// cannot be stored).
pub struct EncodedPoint<'a> {
    pub metric: &'a str,
    pub tags: &'a [(&'a str, &'a str)],
    pub raw: Result<(u32, RawPoint), PointError>,
    /// The protocol's own text for this series (see `SeriesResolver::raw_reader`), remembered
    /// once the point is accepted so the next point with the same text skips its names.
    pub text: Option<&'a [u8]>,
}

/// One point of a batch: names still to resolve, or a series its raw text already named.
pub enum Incoming<'a> {
    Names(EncodedPoint<'a>),
    Known(StoredPoint),
}

/// What [`Ingest::write_json`] did with a batch.
pub struct JsonWrite {
    /// Points refused by validation: position in the batch, `JsonPoint::validate`'s text.
    pub invalid: Vec<(usize, String)>,
    /// The other points: position in the batch, write outcome.
    pub written: Vec<(usize, Result<(), PointError>)>,
    pub durable: Result<(), WriteError>,
}

/// Points looked up in the raw-text memo under one hold of its lock (see `Ingest::write`).
const MEMO_BATCH: usize = 4096;

pub struct Ingest {
    pub resolver: Arc<SeriesResolver>,
    pub writer: Writer,
    /// `limits.max_name_length`: longest metric, tag key or tag value, in bytes.
    pub max_name_length: usize,
    /// Telnet and plaintext input read but not yet with the writer.
    pub received: Arc<tsgate_common::received::Received>,
}

/// The first name of a point longer than `max` bytes, as an error naming the limit.
fn check_name_lengths(metric: &str, tags: &[(&str, &str)], max: usize) -> Result<(), PointError> {
    let too_long = std::iter::once(metric)
        .chain(tags.iter().flat_map(|(k, v)| [*k, *v]))
        .find(|n| n.len() > max);
    match too_long {
        Some(n) => Err(PointError::Invalid(format!(
            "name too long ({} bytes, limits.max_name_length = {max}): {}...",
            n.len(),
            n.chars().take(40).collect::<String>()
        ))),
        None => Ok(()),
    }
}

/// The memo texts of a batch's points, one after another in one buffer.
struct Texts {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Texts {
    fn with_capacity(points: usize, bytes_each: usize) -> Texts {
        Texts {
            buf: Vec::with_capacity(points * bytes_each),
            ends: Vec::with_capacity(points),
        }
    }

    /// The next point's text, as `write` appends it (nothing: the point has none).
    fn push(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.buf);
        self.ends.push(self.buf.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> Option<&[u8]> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        (self.ends[i] > start).then(|| &self.buf[start..self.ends[i]])
    }
}

/// A point's row base hour and encoded cell.
fn encode_point(ts: u64, v: Value) -> Result<(u32, RawPoint), PointError> {
    let base = base_time(ts);
    RawPoint::encode(ts, base, to_data_value(v))
        .map(|r| (base, r))
        .map_err(|e| PointError::Invalid(e.to_string()))
}

fn uid_error(e: UidError) -> PointError {
    match e {
        UidError::NoSuchName { .. } => PointError::UnknownName(e.to_string()),
        UidError::SeriesLimit(m) => PointError::Limit(m),
        e => PointError::Uid(e.to_string()),
    }
}

impl Ingest {
    /// Writes a batch of validated points. Returns one outcome per point, and the batch's
    /// durability result (with `wait`, `Ok` means the accepted points are in the WAL).
    pub async fn write(
        &self,
        points: &[DataPoint<'_>],
        wait: bool,
    ) -> (Vec<Result<(), PointError>>, Result<(), WriteError>) {
        // Each point's names as one memo text (`names_text`): a series seen before is then
        // found under the memo's lock taken once per few thousand points, rather than by a
        // look-up in the shared name cache per point.
        let mut texts = Texts::with_capacity(points.len(), 64);
        for p in points {
            texts.push(|buf| crate::series::names_text(p.metric, &p.tags, buf));
        }
        let known = self.remembered(&texts);
        let incoming = points
            .iter()
            .zip(known)
            .enumerate()
            .map(
                |(i, (p, series))| match (encode_point(p.timestamp, p.value), series) {
                    // Remembered only once accepted, so its names passed every check.
                    (Ok((base, point)), Some(series)) => Incoming::Known(StoredPoint {
                        series,
                        base,
                        point,
                    }),
                    (raw, _) => Incoming::Names(EncodedPoint {
                        metric: p.metric,
                        tags: &p.tags,
                        raw,
                        text: texts.get(i),
                    }),
                },
            )
            .collect();
        self.write_incoming(incoming, wait).await
    }

    /// Validates and writes `/api/put` points. A point whose metric and tags object (as sent)
    /// the raw-text memo knows (`series::json_text`) only has its timestamp and value checked
    /// (`JsonPoint::validate_known`), and skips its names' checks and canonical text; any
    /// other is validated in full and written as [`Ingest::write`] would, and remembered by
    /// that text once accepted. Returns each point's validation error (`Err` text, as
    /// `JsonPoint::validate` gives it) or, for the points written, its position in `jps` and
    /// write outcome; and the batch's durability result.
    pub async fn write_json(
        &self,
        jps: &[JsonPoint<'_>],
        limits: &Limits,
        wait: bool,
    ) -> JsonWrite {
        let mut texts = Texts::with_capacity(jps.len(), 96);
        for jp in jps {
            texts.push(|buf| {
                if let (Some(m), Some(t)) = (jp.metric.as_deref(), jp.tags_raw) {
                    crate::series::json_text(m, t, buf);
                }
            });
        }
        let mut invalid = Vec::new();
        // Per point: known (its series and encoded cell), else validated in full.
        let mut known: Vec<Option<StoredPoint>> = Vec::with_capacity(jps.len());
        let mut valid: Vec<Option<DataPoint<'_>>> = Vec::with_capacity(jps.len());
        for (i, (jp, series)) in jps.iter().zip(self.remembered(&texts)).enumerate() {
            let k = series.and_then(|series| {
                let (ts, v) = jp.validate_known()?;
                let (base, point) = encode_point(ts, v).ok()?;
                Some(StoredPoint {
                    series,
                    base,
                    point,
                })
            });
            valid.push(match k {
                Some(_) => None,
                None => match jp.validate(limits) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        invalid.push((i, e));
                        None
                    }
                },
            });
            known.push(k);
        }
        // In the order of `jps`: the known points, and the valid ones by name.
        let mut incoming = Vec::with_capacity(jps.len() - invalid.len());
        let mut index = Vec::with_capacity(incoming.capacity());
        for (i, (k, p)) in known.into_iter().zip(&valid).enumerate() {
            incoming.push(match (k, p) {
                (Some(sp), _) => Incoming::Known(sp),
                (None, Some(p)) => Incoming::Names(EncodedPoint {
                    metric: p.metric,
                    tags: &p.tags,
                    raw: encode_point(p.timestamp, p.value),
                    text: texts.get(i),
                }),
                (None, None) => continue,
            });
            index.push(i);
        }
        let (outcomes, durable) = self.write_incoming(incoming, wait).await;
        JsonWrite {
            invalid,
            written: index.into_iter().zip(outcomes).collect(),
            durable,
        }
    }

    /// The series the raw-text memo remembers for each text (`None` where a point has none).
    /// The memo's lock is held for a few thousand points at a time, so that a writer to it (a
    /// new series) does not wait behind a request of a million.
    fn remembered(&self, texts: &Texts) -> Vec<Option<Series>> {
        let mut out = Vec::with_capacity(texts.len());
        for start in (0..texts.len()).step_by(MEMO_BATCH) {
            let memo = self.resolver.raw_reader();
            out.extend(
                (start..texts.len().min(start + MEMO_BATCH))
                    .map(|i| texts.get(i).and_then(|t| memo.get(t))),
            );
        }
        out
    }

    /// Writes points whose values are already encoded (protocols with their own value rules,
    /// such as Prometheus' non-finite floats). Same outcomes as [`Ingest::write`].
    pub async fn write_encoded(
        &self,
        points: Vec<EncodedPoint<'_>>,
        wait: bool,
    ) -> (Vec<Result<(), PointError>>, Result<(), WriteError>) {
        self.write_incoming(points.into_iter().map(Incoming::Names).collect(), wait)
            .await
    }

    /// Writes points whose series are all known (a protocol's raw-text memo named them) and
    /// counts them for `proto`: the batch's durability result is every point's outcome.
    pub async fn write_known(
        &self,
        proto: crate::observe::Protocol,
        points: Vec<StoredPoint>,
    ) -> Result<(), WriteError> {
        let n = points.len() as u64;
        let res = self.writer.write(points, true).await;
        crate::ingest::counts::stored(proto, n, &res);
        res
    }

    /// Writes a batch of points named either way, in order. Same outcomes as [`Ingest::write`].
    pub async fn write_incoming(
        &self,
        points: Vec<Incoming<'_>>,
        wait: bool,
    ) -> (Vec<Result<(), PointError>>, Result<(), WriteError>) {
        self.write_known_then(Vec::new(), points, wait).await
    }

    /// Writes `known` (points whose series their raw text named: no outcome each, they cannot
    /// fail apart from the batch), then `points` as [`Ingest::write_incoming`] does; the
    /// outcomes are `points`' own.
    pub async fn write_known_then(
        &self,
        known: Vec<StoredPoint>,
        points: Vec<Incoming<'_>>,
        wait: bool,
    ) -> (Vec<Result<(), PointError>>, Result<(), WriteError>) {
        let mut outcomes: Vec<Result<(), PointError>> = Vec::with_capacity(points.len());
        let mut stored: Vec<Option<StoredPoint>> = Vec::with_capacity(points.len());
        let mut misses = Vec::new();
        for (i, p) in points.into_iter().enumerate() {
            let p = match p {
                Incoming::Known(sp) => {
                    outcomes.push(Ok(()));
                    stored.push(Some(sp));
                    continue;
                }
                Incoming::Names(p) => p,
            };
            let raw = p.raw.and_then(|r| {
                check_name_lengths(p.metric, p.tags, self.max_name_length).map(|_| r)
            });
            let (base, raw) = match raw {
                Ok(r) => r,
                Err(e) => {
                    outcomes.push(Err(e));
                    stored.push(None);
                    continue;
                }
            };
            outcomes.push(Ok(()));
            match self.resolver.cached(p.metric, p.tags) {
                Some(series) => {
                    if let Some(t) = p.text {
                        self.resolver.remember_raw(t, series);
                    }
                    stored.push(Some(StoredPoint {
                        series,
                        base,
                        point: raw,
                    }))
                }
                None => {
                    let owned = (
                        p.metric.to_string(),
                        p.tags
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect::<Vec<_>>(),
                    );
                    misses.push((i, owned, base, raw, p.text.map(<[u8]>::to_vec)));
                    stored.push(None);
                }
            }
        }
        if !misses.is_empty() {
            let resolver = self.resolver.clone();
            // UID work touches the store: keep it off the async threads.
            let resolved = tokio::task::spawn_blocking(move || {
                // New names in bulk first (one id counter increment per kind), in `resolve`'s
                // order: tag names only of series whose metric has an id, tag values only of
                // those whose tag names all have one (a series refused for an unknown metric
                // must not use up tag ids). A failure here shows again, per point, below.
                let uids = resolver.uids();
                let known = |kind, name: &str| uids.cached_id(kind, name).is_some();
                let bulk = |kind: UidKind, names: Vec<&str>| {
                    if let Err(e) = uids.create_many(kind, &names) {
                        tracing::debug!(error = %e, kind = kind.as_str(), "bulk UID assignment failed");
                    }
                };
                bulk(UidKind::Metric, misses.iter().map(|m| m.1 .0.as_str()).collect());
                let named: Vec<_> = misses.iter().map(|m| &m.1).filter(|(metric, _)| known(UidKind::Metric, metric)).collect();
                bulk(UidKind::Tagk, named.iter().flat_map(|(_, tags)| tags.iter().map(|(k, _)| k.as_str())).collect());
                let keyed = named.iter().filter(|(_, tags)| tags.iter().all(|(k, _)| known(UidKind::Tagk, k)));
                bulk(UidKind::Tagv, keyed.flat_map(|(_, tags)| tags.iter().map(|(_, v)| v.as_str())).collect());
                let out: Vec<_> = misses
                    .into_iter()
                    .map(|(i, (m, tags), base, raw, text)| {
                        let t: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                        let series = resolver.resolve(&m, &t);
                        if let (Ok(s), Some(text)) = (&series, text) {
                            resolver.remember_raw(&text, s);
                        }
                        (i, series.map(|series| StoredPoint { series, base, point: raw }))
                    })
                    .collect();
                // New UIDs must be durable before a WAL record refers to them.
                let synced = resolver.uids().sync_if_dirty();
                (out, synced)
            })
            .await;
            let (out, synced) = match resolved {
                Ok(r) => r,
                Err(e) => {
                    return (
                        outcomes,
                        Err(WriteError::Store(format!(
                            "UID resolution task failed: {e}"
                        ))),
                    )
                }
            };
            if let Err(e) = synced {
                return (outcomes, Err(WriteError::Store(e.to_string())));
            }
            for (i, r) in out {
                match r {
                    Ok(sp) => stored[i] = Some(sp),
                    Err(e) => outcomes[i] = Err(uid_error(e)),
                }
            }
        }
        // `known` goes first. Within a series order is kept: a series' points are all known or
        // all not, unless one request spells the same series in two ways (labels in another
        // order, say), where a duplicate timestamp's last write could then differ from the
        // request's order. Prometheus sends a series once per request, and refuses a second
        // value for a timestamp anyway.
        let mut batch = known;
        batch.extend(stored.into_iter().flatten());
        let res = self.writer.write(batch, wait).await;
        (outcomes, res)
    }
}
