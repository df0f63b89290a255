//! The one row decoder of every query path: a `tsdb` row's cells as columns, and its points
//! in a window as OpenTSDB merges them (compacted, single and append columns; the newest of
//! duplicate offsets wins), with corrupt columns reported as errors naming row and column.

use crate::QueryError;
use tsgate_schema::compaction::{append_merged_by, append_ordered_by, merge_columns, StoredColumn};
use tsgate_schema::DataValue;
use tsgate_store::{CellRef, LentRow};

/// `f` of a row's cells as stored columns; a compacted row's one cell without allocating.
pub fn with_columns<'c, T>(cells: &[CellRef<'c>], f: impl FnOnce(&[StoredColumn<'c>]) -> T) -> T {
    match cells {
        [one] => f(&[one.column()]),
        _ => f(&cells.iter().map(|c| c.column()).collect::<Vec<_>>()),
    }
}

/// One row's points in `[start, end]` ms onto `out`, each made by `point` of its time (ms) and
/// value, in time order within the row. Rows of ordered columns (compacted, or in-order
/// ingest) and rows of few columns take the fast lanes; anything else takes the general merge,
/// which also reports corrupt columns and hands each annotation the row holds to `note`.
#[allow(clippy::too_many_arguments)]
pub fn append_points<P>(
    key: &[u8],
    cols: &[StoredColumn],
    base: u32,
    start: u64,
    end: u64,
    out: &mut Vec<P>,
    point: impl Fn(u64, DataValue) -> P,
    mut note: impl FnMut(&[u8]),
) -> Result<(), QueryError> {
    if append_ordered_by(cols, base, start, end, out, &point)
        || append_merged_by(cols, base, start, end, out, &point)
    {
        return Ok(());
    }
    let merged = merge_columns(cols);
    if let Some((q, e)) = merged.errors.first() {
        return Err(QueryError::Corrupt(format!(
            "row {} column {}: {e}",
            tsgate_schema::hex_upper(key),
            tsgate_schema::hex_upper(q)
        )));
    }
    for (_, v) in &merged.annotations {
        note(v);
    }
    for p in merged.points {
        let ts = p.timestamp_ms(base);
        if ts >= start && ts <= end {
            let v = p.value().map_err(|e| QueryError::Corrupt(e.to_string()))?;
            out.push(point(ts, v));
        }
    }
    Ok(())
}

/// [`append_points`] of a row as a points scan lends it: its cells so, or its points as the
/// store decoded them (offsets strictly rising, as the ordered lane takes a compacted column's
/// bytes), those in the window.
#[allow(clippy::too_many_arguments)]
pub fn append_lent<P>(
    key: &[u8],
    row: LentRow,
    base: u32,
    start: u64,
    end: u64,
    out: &mut Vec<P>,
    point: impl Fn(u64, DataValue) -> P,
    note: impl FnMut(&[u8]),
) -> Result<(), QueryError> {
    match row {
        LentRow::Cells(cells) => with_columns(cells, |cols| {
            append_points(key, cols, base, start, end, out, point, note)
        }),
        LentRow::Points(pts) => {
            let base_ms = base as u64 * 1000;
            let at = |p: &(u32, DataValue)| base_ms + p.0 as u64;
            // In time order: the window is one run of them.
            let from = pts.partition_point(|p| at(p) < start);
            let to = pts.partition_point(|p| at(p) <= end).max(from);
            out.extend(pts[from..to].iter().map(|p| point(at(p), p.1)));
            Ok(())
        }
    }
}

/// One row's points in `[start, end]` ms onto `pts`, in time order, each time given by `time`
/// (of its milliseconds): its columns in order through the fast lanes, else merged.
/// Returns whether the row's points begin before the last one already in `pts`: rows of one
/// series come in time order within a salt bucket, and each row's points are in order, so
/// this is the only place order can break (salting, or a row holding offsets past its hour,
/// which no OpenTSDB writes but its decoders accept).
pub fn append_row(
    key: &[u8],
    row: LentRow,
    base: u32,
    start: u64,
    end: u64,
    pts: &mut Vec<(i64, f64)>,
    time: impl Fn(u64) -> i64,
) -> Result<bool, QueryError> {
    let (mark, before) = (pts.len(), pts.last().map(|p| p.0));
    let out_of_order =
        |pts: &[(i64, f64)]| before.is_some_and(|b| pts.get(mark).is_some_and(|p| p.0 < b));
    let point = |ts: u64, v: DataValue| (time(ts), v.as_f64());
    append_lent(key, row, base, start, end, pts, point, |_| {})?;
    Ok(out_of_order(pts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tsgate_schema::column::build_column;
    use tsgate_schema::RawPoint;

    const BASE: u32 = 1_700_000_000 / 3600 * 3600;

    /// Strictly rising offsets (ms) in the hour, some on whole seconds stored as seconds.
    fn rising_points() -> impl Strategy<Value = Vec<(u32, DataValue, bool)>> {
        let value = prop_oneof![
            any::<i64>().prop_map(DataValue::Int),
            (-1e9f64..1e9).prop_map(DataValue::F64),
            (-1e6f32..1e6).prop_map(DataValue::F32),
        ];
        proptest::collection::vec((1u32..5000, value, any::<bool>()), 2..100).prop_map(|ps| {
            let mut off = 0u32;
            ps.into_iter()
                .map(|(step, v, secs)| {
                    off = (off + step).min(3_599_999);
                    (off, v, secs)
                })
                .take_while(|p| p.0 < 3_599_999)
                .collect()
        })
    }

    proptest! {
        /// A row lent as points (what the store decodes from an encoded column) reads as the
        /// same row lent as its compacted column's bytes, in any window.
        #[test]
        fn points_read_as_their_column(pts in rising_points(), a in 0u64..3_700_000, len in 0u64..4_000_000) {
            // Seconds where the offset is whole and the point asks for it, else milliseconds;
            // offsets kept rising after seconds are rounded down.
            let mut raw = Vec::new();
            let mut lent: Vec<(u32, DataValue)> = Vec::new();
            for &(off, v, secs) in &pts {
                let (ts, off) = if secs {
                    (BASE as u64 + off as u64 / 1000, off / 1000 * 1000)
                } else {
                    (BASE as u64 * 1000 + off as u64, off)
                };
                if lent.last().is_some_and(|l| l.0 >= off) {
                    continue;
                }
                raw.push(RawPoint::encode(ts, BASE, v).unwrap());
                lent.push((off, v));
            }
            let (q, v) = build_column(&raw);
            let cell = CellRef { family: b"t", qualifier: &q, value: &v, timestamp: 1 };
            let (start, end) = (BASE as u64 * 1000 + a, BASE as u64 * 1000 + a + len);
            let read = |row: LentRow| {
                let mut out = Vec::new();
                append_lent(b"row", row, BASE, start, end, &mut out, |ts, v| (ts, v), |_| {})
                    .unwrap();
                out
            };
            let want = read(LentRow::Cells(&[cell]));
            prop_assert_eq!(read(LentRow::Points(&lent)), want);
        }
    }
}
