//! Imported series into the write path: named as stored (escaped metric and tags), each point
//! encoded as its type says, written with the writer's acknowledgement (in the WAL when the
//! call returns). Writing the same points again stores the same cells (OpenTSDB's schema keys a
//! cell by series, hour and offset), so an interrupted import can simply be run again.

use crate::ingest::encode::encode_ms;
use crate::ingest::{Ack, Batch, EncodedPoint, Incoming, Ingest, PointError, Points};
use crate::prometheus::labels::to_stored;
use crate::write::WriteError;
use tsgate_schema::DataValue;

/// A series to write, named as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredImport {
    pub metric: String,
    pub tags: Vec<(String, String)>,
    /// (ms, value)
    pub points: Vec<(i64, DataValue)>,
}

impl StoredImport {
    /// A Prometheus label set's stored form (`prometheus.max_tags` applies).
    pub fn from_labels(
        labels: &[(String, String)],
        points: Vec<(i64, DataValue)>,
        max_tags: usize,
    ) -> Result<StoredImport, crate::prometheus::labels::LabelError> {
        let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (&**k, &**v)).collect();
        let s = to_stored(&l, max_tags)?;
        Ok(StoredImport {
            metric: s.metric.into_owned(),
            tags: s
                .tags
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            points,
        })
    }
}

/// What [`write`] did.
#[derive(Debug, Default)]
pub struct Written {
    pub points: u64,
    /// Points refused (a timestamp outside what the schema stores, a name too long, an
    /// unknown name with auto-creation off, a cardinality limit).
    pub refused: u64,
    /// The first few refusals, each with its series.
    pub errors: Vec<String>,
    /// A UID could not be assigned (the store failed): worth a retry, unlike a refusal.
    pub uid_failure: Option<String>,
}

/// Refusals named in [`Written::errors`].
pub const ERRORS_KEPT: usize = 10;

/// Writes `batch`, waiting until its points are in the WAL.
pub async fn write(ingest: &Ingest, batch: &[StoredImport]) -> Result<Written, WriteError> {
    let tags: Vec<Vec<(&str, &str)>> = batch
        .iter()
        .map(|s| s.tags.iter().map(|(k, v)| (&**k, &**v)).collect())
        .collect();
    let mut points = Vec::new();
    let mut owner = Vec::new();
    for (i, s) in batch.iter().enumerate() {
        for &(ts, v) in &s.points {
            points.push(EncodedPoint {
                metric: &s.metric,
                tags: &tags[i],
                raw: encode_ms(ts, v),
                text: None,
            });
            owner.push(i);
        }
    }
    // Not counted: imports are not a served protocol's traffic.
    let written = ingest
        .write(Batch {
            points: Points::Encoded {
                known: Vec::new(),
                points: points.into_iter().map(Incoming::Names).collect(),
            },
            counted: None,
            ack: Ack::Durable,
        })
        .await;
    written.durable?;
    let outcomes = written.outcomes;
    let mut w = Written::default();
    for (o, i) in outcomes.into_iter().zip(owner) {
        match o {
            Ok(()) => w.points += 1,
            Err(PointError::Uid(e)) => {
                w.refused += 1;
                w.uid_failure.get_or_insert(e);
            }
            Err(e) => {
                w.refused += 1;
                if w.errors.len() < ERRORS_KEPT {
                    let s = &batch[i];
                    let tags: Vec<String> =
                        s.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    w.errors
                        .push(format!("{} {}: {e}", s.metric, tags.join(" ")));
                }
            }
        }
    }
    Ok(w)
}

/// Counts of an import, printed at its end.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub ok: u64,
    pub bad: u64,
}

/// [`write`], counting into `t` and naming on stderr (above the progress bar) what was
/// refused. A UID that could not be assigned ends the import (the store failed).
pub async fn write_reporting(
    ingest: &Ingest,
    batch: &[StoredImport],
    bar: &indicatif::ProgressBar,
    t: &mut Tally,
) -> anyhow::Result<()> {
    let w = write(ingest, batch).await?;
    if let Some(e) = w.uid_failure {
        anyhow::bail!("cannot assign UIDs: {e}");
    }
    t.ok += w.points;
    t.bad += w.refused;
    for e in &w.errors {
        bar.suspend(|| eprintln!("{e}"));
    }
    bar.set_message(format!("{} points", t.ok));
    Ok(())
}
