//! Per-batch accounting of ingest outcomes: tallied locally, then one atomic add per counter
//! that moved, so the cost per point is a branch, not an atomic.

use crate::ingest::PointError;
use crate::observe::metrics::{Protocol, Reason};
use crate::write::WriteError;

/// Counts `n` points refused for `reason` before they reached the writer.
pub fn rejected(p: Protocol, reason: Reason, n: u64) {
    crate::observe::metrics().ingest(p).reject(reason, n);
    if n > 0 {
        tracing::debug!(
            protocol = p.as_str(),
            reason = reason.as_str(),
            points = n,
            "points rejected"
        );
    }
}

/// The reason for a refused carbon plaintext line.
pub fn graphite_line_reason(e: &tsgate_graphite::plaintext::LineError) -> Reason {
    use tsgate_graphite::plaintext::LineError;
    match e {
        LineError::TooLong => Reason::Limit,
        LineError::Value(_) | LineError::Timestamp(_) | LineError::TimestampRange(_) => {
            Reason::Value
        }
        LineError::Fields(_) | LineError::Utf8 => Reason::Parse,
    }
}

/// Counts a body or frame refused as a whole.
pub fn batch_rejected(p: Protocol, error: &dyn std::fmt::Display) {
    crate::observe::metrics().ingest(p).batches_rejected.inc();
    tracing::debug!(protocol = p.as_str(), error = %error, "batch rejected");
}

/// Counts what the writer made of a batch: stored points, refused ones by reason, and — when
/// the batch was not durable — every otherwise good point as a store failure. `ready` points
/// had no outcome of their own (`Points::Encoded`'s `known`): stored with the batch, or not.
pub fn outcomes_and(
    p: Protocol,
    ready: u64,
    outcomes: &[Result<(), PointError>],
    durable: &Result<(), WriteError>,
) {
    let mut by_reason = [0u64; Reason::COUNT];
    let mut ok = ready;
    for o in outcomes {
        match o {
            Ok(()) => ok += 1,
            Err(e) => by_reason[point_reason(e) as usize] += 1,
        }
    }
    if let Err(e) = durable {
        by_reason[Reason::Store as usize] += ok;
        if ok > 0 {
            tracing::debug!(protocol = p.as_str(), points = ok, error = %e, "batch not stored");
        }
        ok = 0;
    }
    let c = crate::observe::metrics().ingest(p);
    c.stored.add(ok);
    for r in Reason::ALL {
        let n = by_reason[*r as usize];
        if n > 0 {
            c.reject(*r, n);
            tracing::debug!(
                protocol = p.as_str(),
                reason = r.as_str(),
                points = n,
                "points rejected"
            );
        }
    }
}

/// The reason for a point the writer refused.
pub fn point_reason(e: &PointError) -> Reason {
    match e {
        PointError::Invalid(_) => Reason::Value,
        PointError::UnknownName(_) => Reason::UnknownName,
        PointError::Uid(_) => Reason::Uid,
        PointError::Limit(_) => Reason::Limit,
    }
}
