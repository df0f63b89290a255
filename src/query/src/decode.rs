//! The one row decoder of every query path: a `tsdb` row's cells as columns, and its points
//! in a window as OpenTSDB merges them (compacted, single and append columns; the newest of
//! duplicate offsets wins), with corrupt columns reported as errors naming row and column.

use crate::QueryError;
use tsgate_schema::compaction::{append_merged_by, append_ordered_by, merge_columns, StoredColumn};
use tsgate_schema::DataValue;
use tsgate_store::CellRef;

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

/// One row's points in `[start, end]` ms onto `pts`, in time order, each time given by `time`
/// (of its milliseconds): its columns in order through the fast lanes, else merged.
/// Returns whether the row's points begin before the last one already in `pts`: rows of one
/// series come in time order within a salt bucket, and each row's points are in order, so
/// this is the only place order can break (salting, or a row holding offsets past its hour,
/// which no OpenTSDB writes but its decoders accept).
pub fn append_row(
    key: &[u8],
    cols: &[StoredColumn],
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
    append_points(key, cols, base, start, end, pts, point, |_| {})?;
    Ok(out_of_order(pts))
}
