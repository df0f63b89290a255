//! Parsed Graphite points → names mapped by the rules → encoded points → the writer (and its
//! WAL). Shared by the plaintext and pickle listeners.

use crate::graphite::names::{Mapped, PLACEHOLDER_TAG};
use crate::ingest::{Ack, Batch, EncodedPoint, Incoming, Points, Written};
use crate::server::state::Carbon;

/// One point as a listener parsed it.
pub struct GPoint<'a> {
    pub path: &'a str,
    pub value: f64,
    pub ts_ms: u64,
}

/// What became of a batch: points stored, points refused (unmappable name, unstorable
/// timestamp, UID failure), points a rule dropped on purpose.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub stored: u64,
    pub refused: u64,
    pub dropped: u64,
}

/// Maps and writes a batch, waiting until it is durable in the WAL (that wait is the
/// listeners' backpressure). Problems are logged at debug level: carbon answers nothing.
pub async fn write_batch(
    state: &Carbon,
    proto: crate::observe::Protocol,
    points: &[GPoint<'_>],
) -> Outcome {
    let mut out = Outcome::default();
    if points.is_empty() {
        return out;
    }
    // A path seen before names its series directly (its mapping and names were accepted);
    // other paths are mapped by the rules, their owned names kept here, then borrowed views
    // go to the writer with the path text to remember.
    enum Item<'p> {
        Known(crate::write::shard::StoredPoint),
        Mapped(&'p GPoint<'p>, Mapped<'p>, Vec<u8>),
    }
    // Points whose paths are all known go to the writer as they are (the common case once
    // the senders' series are known); the first other point turns the batch into items.
    let mut known: Vec<crate::write::shard::StoredPoint> = Vec::with_capacity(points.len());
    let mut items: Vec<Item<'_>> = Vec::new();
    let mut key = Vec::with_capacity(128);
    {
        let memo = state.resolver.raw_reader();
        for p in points {
            crate::series::TextKind::Graphite.begin(&mut key);
            key.extend_from_slice(p.path.as_bytes());
            if let Some(series) = memo.get(&key) {
                // An unstorable sample takes the general path for its outcome.
                if let Ok((base, point)) =
                    crate::ingest::encode::encode_sample(p.ts_ms as i64, p.value)
                {
                    let sp = crate::write::shard::StoredPoint {
                        series,
                        base,
                        point,
                    };
                    if items.is_empty() {
                        known.push(sp);
                    } else {
                        items.push(Item::Known(sp));
                    }
                    continue;
                }
            }
            let item = match state.names.map(p.path) {
                Ok(Mapped::Drop) => {
                    out.dropped += 1;
                    continue;
                }
                Ok(m) => Item::Mapped(p, m, key.clone()),
                Err(e) => {
                    tracing::debug!(path = p.path, error = %e, "graphite path refused");
                    out.refused += 1;
                    continue;
                }
            };
            if items.is_empty() {
                items.extend(known.drain(..).map(Item::Known));
            }
            items.push(item);
        }
    }
    if items.is_empty() {
        let n = known.len() as u64;
        let res = state.ingest.write(Batch::known(proto, known)).await.durable;
        crate::ingest::counts::rejected(proto, crate::observe::Reason::Unmapped, out.refused);
        crate::ingest::counts::rejected(proto, crate::observe::Reason::Dropped, out.dropped);
        match res {
            Ok(()) => out.stored = n,
            Err(e) => {
                tracing::warn!(error = %e, "graphite batch not written");
                out.refused += n;
            }
        }
        return out;
    }
    let tag_refs: Vec<Vec<(&str, &str)>> = items
        .iter()
        .map(|i| match i {
            Item::Mapped(_, Mapped::Series(_, t), _) => {
                t.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let encoded: Vec<Incoming<'_>> = items
        .iter()
        .zip(&tag_refs)
        .map(|(item, owned_tags)| match item {
            Item::Known(sp) => Incoming::Known(sp.clone()),
            Item::Mapped(p, m, text) => {
                let (metric, tags): (&str, &[(&str, &str)]) = match m {
                    Mapped::Whole(w) => (w, &PLACEHOLDER_TAG),
                    Mapped::Series(name, _) => (name, owned_tags),
                    Mapped::Drop => unreachable!("dropped above"),
                };
                Incoming::Names(EncodedPoint {
                    metric,
                    tags,
                    raw: crate::ingest::encode::encode_sample(p.ts_ms as i64, p.value),
                    text: Some(text),
                })
            }
        })
        .collect();
    let Written {
        outcomes,
        durable: res,
        ..
    } = state
        .ingest
        .write(Batch {
            points: Points::Encoded {
                known: Vec::new(),
                points: encoded,
            },
            counted: Some(proto),
            ack: Ack::Durable,
        })
        .await;
    crate::ingest::counts::rejected(proto, crate::observe::Reason::Unmapped, out.refused);
    crate::ingest::counts::rejected(proto, crate::observe::Reason::Dropped, out.dropped);
    for o in &outcomes {
        match o {
            Ok(()) => out.stored += 1,
            Err(e) => {
                tracing::debug!(error = %e, "graphite point refused");
                out.refused += 1;
            }
        }
    }
    if let Err(e) = res {
        tracing::warn!(error = %e, "graphite batch not written");
        out.refused += out.stored;
        out.stored = 0;
    }
    out
}
