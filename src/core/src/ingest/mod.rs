//! Normalised points → resolved, encoded points handed to the writer. Protocol handlers call
//! this; it is the one place where names meet UIDs on the write side.

pub mod counts;
pub mod encode;
pub mod rollup;

use crate::observe::Protocol;
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

/// What every protocol adapter hands to [`Ingest::write`]: its points in the form it has them,
/// the protocol they are counted under, and when the call returns.
pub struct Batch<'a> {
    pub points: Points<'a>,
    /// The protocol whose ingest counters the outcomes go to (`None`: not counted, as for
    /// `tsgate import`).
    pub counted: Option<Protocol>,
    pub ack: Ack,
}

/// The forms points arrive in.
pub enum Points<'a> {
    /// Validated points whose values are still to encode (import files).
    Decoded(&'a [DataPoint<'a>]),
    /// `/api/put` points as sent: a point whose metric and tags object (as sent) the raw-text
    /// memo knows (`series::json_text`) only has its timestamp and value checked
    /// (`JsonPoint::validate_known`); any other is validated in full against `limits`, and
    /// remembered by that text once accepted.
    Json {
        points: &'a [JsonPoint<'a>],
        limits: &'a Limits,
    },
    /// Points with encoded values (protocols with their own value rules, such as Prometheus'
    /// non-finite floats), named either way; after `known`, points whose series their
    /// protocol's raw-text memo named (no outcome each: they cannot fail apart from the batch).
    /// Carbon and telnet lines whose series are all known are `known` alone.
    Encoded {
        known: Vec<StoredPoint>,
        points: Vec<Incoming<'a>>,
    },
}

/// When [`Ingest::write`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ack {
    /// Once the write-ahead log holds the points (fsynced under `write.wal_fsync = always`):
    /// what every protocol waits for today, for its acknowledgement or backpressure.
    Durable,
    /// Once the points are queued to their shards.
    Queued,
}

impl<'a> Batch<'a> {
    /// Points of known series only, counted for `proto`, acknowledged once durable.
    pub fn known(proto: Protocol, known: Vec<StoredPoint>) -> Batch<'a> {
        Batch {
            points: Points::Encoded {
                known,
                points: Vec::new(),
            },
            counted: Some(proto),
            ack: Ack::Durable,
        }
    }
}

/// What [`Ingest::write`] did with a batch.
pub struct Written {
    /// `Points::Json` points refused by validation: position in the batch,
    /// `JsonPoint::validate`'s text. Empty for the other forms.
    pub invalid: Vec<(usize, String)>,
    /// One outcome per point that reached name resolution (`Points::Encoded`: per point of
    /// `points`, not of `known`).
    pub outcomes: Vec<Result<(), PointError>>,
    /// Where each of `outcomes` sits in the batch, when some points were refused before
    /// (`Points::Json`); empty when outcome `i` is point `i`.
    pub positions: Vec<usize>,
    /// The batch's durability result (with `Ack::Durable`, `Ok` means the accepted points are
    /// in the WAL).
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
    /// Makes rollup and histogram points, which go straight to the store, as durable as a
    /// WAL record before they are acknowledged.
    pub direct: Arc<crate::write::direct::DirectSync>,
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
        UidError::SeriesLimit(m) => PointError::Limit(m.to_string()),
        e => PointError::Uid(e.to_string()),
    }
}

impl Ingest {
    /// The one entry of the write side: resolves the batch's names to series (assigning UIDs
    /// as configured), hands the points to the writer, and counts the outcomes for the batch's
    /// protocol.
    pub async fn write(&self, batch: Batch<'_>) -> Written {
        let wait = batch.ack == Ack::Durable;
        let (written, ready) = match batch.points {
            Points::Decoded(points) => {
                let (outcomes, durable) = self.write_decoded(points, wait).await;
                (
                    Written {
                        invalid: Vec::new(),
                        outcomes,
                        positions: Vec::new(),
                        durable,
                    },
                    0,
                )
            }
            Points::Json { points, limits } => (self.write_json(points, limits, wait).await, 0),
            Points::Encoded { known, points } => {
                let ready = known.len() as u64;
                let (outcomes, durable) = self.write_known_then(known, points, wait).await;
                (
                    Written {
                        invalid: Vec::new(),
                        outcomes,
                        positions: Vec::new(),
                        durable,
                    },
                    ready,
                )
            }
        };
        if let Some(proto) = batch.counted {
            for (_, e) in &written.invalid {
                counts::rejected(proto, crate::observe::metrics::message_reason(e), 1);
            }
            counts::outcomes_and(proto, ready, &written.outcomes, &written.durable);
        }
        written
    }

    /// Writes a batch of validated points: one outcome per point, and the batch's durability.
    async fn write_decoded(
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
        self.write_known_then(Vec::new(), incoming, wait).await
    }

    /// `/api/put` points (see [`Points::Json`]).
    async fn write_json(&self, jps: &[JsonPoint<'_>], limits: &Limits, wait: bool) -> Written {
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
                        invalid.push((i, e.to_string()));
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
        let (outcomes, durable) = self.write_known_then(Vec::new(), incoming, wait).await;
        Written {
            invalid,
            outcomes,
            positions: index,
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

    /// Writes `known` (points whose series their raw text named: no outcome each, they cannot
    /// fail apart from the batch), then `points`, named either way, in order; the outcomes are
    /// `points`' own.
    async fn write_known_then(
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
                // New UIDs and series must be durable before a WAL record refers to them.
                let synced = resolver.sync_if_dirty();
                (out, synced)
            })
            .await;
            let (out, synced) = match resolved {
                Ok(r) => r,
                Err(e) => return (outcomes, Err(WriteError::task("UID resolution", e))),
            };
            if let Err(e) = synced {
                return (outcomes, Err(e.into()));
            }
            for (i, r) in out {
                match r {
                    Ok(sp) => stored[i] = Some(sp),
                    Err(e) => outcomes[i] = Err(uid_error(e)),
                }
            }
        } else if self.resolver.unsynced() {
            // A series another batch admitted, found here in the cache before that batch
            // synced its record: this batch's acknowledgement waits for the record too.
            let resolver = self.resolver.clone();
            let synced = tokio::task::spawn_blocking(move || resolver.sync_if_dirty()).await;
            match synced {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return (outcomes, Err(e.into())),
                Err(e) => return (outcomes, Err(WriteError::task("series sync", e))),
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
