//! Reading OpenTSDB 2.4's rollup tables for `/api/query`: which interval a downsampling
//! sub-query may read (`TsdbQuery.transformDownSamplerToRollupQuery`), and the points of a
//! rollup row for its aggregator (`avg` as sum and count).
//!
//! A downsample of N seconds reads the longest configured interval that divides N (the equal
//! one first); its cells are then downsampled like raw points: sums of sums, sums of counts,
//! minima of minima, maxima of maxima, sums over counts for `avg`. These equal the raw answers
//! when the query's start is on a downsample boundary and its end just before one.

use crate::aggregate::Aggregator;
use crate::spec::{Query, RollupUsage, SubQuery};
use tsgate_schema::rollup::{decode_cell, RollupInterval, Rollups};
use tsgate_schema::DataValue;
use tsgate_store::CellRef;

/// Which cells make a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The cells of this aggregator id, downsampled with the query's function.
    Same(u8),
    /// Count cells, downsampled by summing them.
    Count(u8),
    /// Sum and count cells: the bucket's sum of sums over its sum of counts.
    Avg { sum: u8, count: u8 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RollupRead {
    pub interval: RollupInterval,
    pub mode: Mode,
}

/// A point of a rollup row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell {
    Value(DataValue),
    Weighted { sum: f64, count: f64 },
}

/// The rollups a sub-query may read, best first (empty: raw data). With
/// `ROLLUP_NOFALLBACK` only the first is read; with `ROLLUP_FALLBACK` the next ones in turn
/// while the answer is empty, then raw; with `ROLLUP_FALLBACK_RAW` raw after the first.
pub fn plan(rollups: &Rollups, q: &Query, sq: &SubQuery, utc: bool) -> Vec<RollupRead> {
    let Some(ds) = &sq.downsample else {
        return Vec::new();
    };
    if sq.rollup_usage == RollupUsage::Raw
        || q.flags.delete
        || ds.all
        || ds.interval_ms == 0
        || ds.interval_ms % 1000 != 0
        // Calendar buckets line up with rollup intervals only in UTC.
        || ((ds.calendar.is_some() || q.use_calendar) && !utc)
    {
        return Vec::new();
    }
    use Aggregator as A;
    let id = |n: &str| rollups.id_for(n).ok();
    let mode = match ds.aggregator {
        A::Sum | A::Zimsum => id("sum").map(Mode::Same),
        A::Min | A::Mimmin => id("min").map(Mode::Same),
        A::Max | A::Mimmax => id("max").map(Mode::Same),
        A::First => id("first").map(Mode::Same),
        A::Last => id("last").map(Mode::Same),
        A::Count => id("count").map(Mode::Count),
        A::Avg => match (id("sum"), id("count")) {
            (Some(sum), Some(count)) => Some(Mode::Avg { sum, count }),
            _ => None,
        },
        // Others (dev, percentiles, …) do not compose from stored aggregates.
        _ => None,
    };
    let Some(mode) = mode else {
        return Vec::new();
    };
    rollups
        .best_matches(ds.interval_ms / 1000)
        .into_iter()
        // The default interval is the raw data: from there on, raw.
        .take_while(|i| !i.default)
        .map(|i| RollupRead {
            interval: i.clone(),
            mode,
        })
        .collect()
}

impl RollupRead {
    /// The points of one row (base time `base`) within `[start_ms, end_ms]`, in time order.
    pub fn points(
        &self,
        base: u32,
        cells: &[CellRef],
        start_ms: u64,
        end_ms: u64,
        mut f: impl FnMut(u64, Cell),
    ) {
        // (index, sum, count) for avg; cells come in qualifier order (aggregator id first).
        let mut pairs: Vec<(u32, Option<f64>, Option<f64>)> = Vec::new();
        let mut plain: Vec<(u32, DataValue)> = Vec::new();
        for c in cells {
            let Some(cell) = decode_cell(c.qualifier, c.value, |_| None) else {
                continue;
            };
            let Some(id) = cell.agg_id else { continue };
            match self.mode {
                Mode::Same(a) | Mode::Count(a) if a == id => plain.push((cell.index, cell.value)),
                Mode::Avg { sum, count } if id == sum || id == count => {
                    let at = match pairs.iter().position(|p| p.0 == cell.index) {
                        Some(at) => at,
                        None => {
                            pairs.push((cell.index, None, None));
                            pairs.len() - 1
                        }
                    };
                    if id == sum {
                        pairs[at].1 = Some(cell.value.as_f64());
                    } else {
                        pairs[at].2 = Some(cell.value.as_f64());
                    }
                }
                _ => {}
            }
        }
        let in_range = |index: u32| {
            let ts = self.interval.timestamp_s(base, index) * 1000;
            (start_ms..=end_ms).contains(&ts).then_some(ts)
        };
        plain.sort_by_key(|p| p.0);
        for (index, v) in plain {
            if let Some(ts) = in_range(index) {
                f(ts, Cell::Value(v));
            }
        }
        pairs.sort_by_key(|p| p.0);
        for (index, sum, count) in pairs {
            if let (Some(ts), Some(sum), Some(count)) = (in_range(index), sum, count) {
                f(ts, Cell::Weighted { sum, count });
            }
        }
    }
}
