//! Merging a row's columns into OpenTSDB's compacted form (what its compaction writes).

use super::column::{
    build_column, column_kind, decode_append, decode_compacted, decode_single, qualifier_len_at,
    walk_compacted_where, ColumnKind, DataValue, RawPoint,
};
use super::SchemaError;

/// One stored cell of family `t`, with its cell timestamp (newest wins on duplicates).
#[derive(Debug, Clone, Copy)]
pub struct StoredColumn<'a> {
    pub qualifier: &'a [u8],
    pub value: &'a [u8],
    pub ts: u64,
}

/// A row's points, merged: sorted by offset, duplicates resolved last-write-wins.
#[derive(Debug, Default)]
pub struct MergedRow {
    pub points: Vec<RawPoint>,
    /// Annotation columns (qualifier, JSON value), returned apart from the points.
    pub annotations: Vec<(Vec<u8>, Vec<u8>)>,
    /// Columns that could not be decoded, with why.
    pub errors: Vec<(Vec<u8>, SchemaError)>,
    pub data_columns: usize,
    pub has_append: bool,
    /// A single cell needed a historic-encoding repair.
    pub repaired: bool,
    /// Points dropped because a newer one had the same offset; and how many of those differed.
    pub duplicates: usize,
    pub conflicting_duplicates: usize,
}

pub fn merge_columns(cols: &[StoredColumn<'_>]) -> MergedRow {
    let mut row = MergedRow::default();
    if let Some(points) = single_sorted_column(cols) {
        row.data_columns = 1;
        row.points = points;
        return row;
    }
    // (point, cell ts, position): position breaks ties inside one append column (later wins).
    let mut all: Vec<(RawPoint, u64, u32)> = Vec::new();
    let mut buf = Vec::new();
    for c in cols {
        buf.clear();
        let res = match column_kind(c.qualifier) {
            ColumnKind::Single => decode_single(c.qualifier, c.value).map(|(p, fixed)| {
                row.repaired |= fixed;
                buf.push(p);
            }),
            ColumnKind::Compacted => decode_compacted(c.qualifier, c.value, &mut buf),
            ColumnKind::Append => {
                row.has_append = true;
                decode_append(c.value, &mut buf)
            }
            ColumnKind::Annotation => {
                row.annotations
                    .push((c.qualifier.to_vec(), c.value.to_vec()));
                continue;
            }
            ColumnKind::Histogram | ColumnKind::Unknown => continue,
        };
        match res {
            Ok(()) => {
                row.data_columns += 1;
                all.extend(buf.iter().enumerate().map(|(i, p)| (*p, c.ts, i as u32)));
            }
            Err(e) => row.errors.push((c.qualifier.to_vec(), e)),
        }
    }
    all.sort_by(|a, b| {
        a.0.offset_ms()
            .cmp(&b.0.offset_ms())
            .then(b.1.cmp(&a.1))
            .then(b.2.cmp(&a.2))
    });
    let mut last: Option<u32> = None;
    for (p, _, _) in all {
        let off = p.offset_ms();
        if last == Some(off) {
            row.duplicates += 1;
            let kept = row.points.last().expect("a point was kept for this offset");
            if kept.value_bytes() != p.value_bytes() || kept.flags() != p.flags() {
                row.conflicting_duplicates += 1;
            }
            continue;
        }
        last = Some(off);
        row.points.push(p);
    }
    row
}

/// The common case on reads: the row is compacted, so its one data column already holds its
/// points in order without duplicates, and the general merge (tagging, sorting) is skipped.
fn single_sorted_column(cols: &[StoredColumn<'_>]) -> Option<Vec<RawPoint>> {
    let [c] = cols else { return None };
    let mut points = Vec::new();
    match column_kind(c.qualifier) {
        ColumnKind::Compacted => decode_compacted(c.qualifier, c.value, &mut points).ok()?,
        _ => return None,
    }
    points
        .windows(2)
        .all(|w| w[0].offset_ms() < w[1].offset_ms())
        .then_some(points)
}

/// The read path's fast lane: appends the row's points inside `[start_ms, end_ms]` as
/// (ms, value) straight from its columns, when every column holds data points in order and
/// each starts after the previous one ends. That is a compacted row, and also a row of
/// in-order ingest not yet compacted (one partial column per flush), so no sort and no
/// duplicate resolution is needed. Returns false, with `out` as it was, for anything else
/// (overlaps, appends, annotations, undecodable cells): the caller then takes
/// [`merge_columns`], which also reports the errors.
pub fn append_ordered(
    cols: &[StoredColumn<'_>],
    base: u32,
    start_ms: u64,
    end_ms: u64,
    out: &mut Vec<(i64, f64)>,
) -> bool {
    append_ordered_by(cols, base, start_ms, end_ms, out, |ts, v| {
        (ts as i64, v.as_f64())
    })
}

/// Most columns [`append_merged_by`] merges; a row with more takes [`merge_columns`].
const MERGE_WAYS_MAX: usize = 16;

thread_local! {
    /// [`append_merged_by`]'s decoded points, kept between rows.
    static MERGE_SCRATCH: std::cell::RefCell<Vec<(u32, DataValue)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The read path's second lane, for rows whose columns are each in order but overlap in time:
/// partial columns of flushes whose inputs interleaved (several connections each sending a
/// share of the series, or batches handed to the store out of order). A merge of the sorted
/// columns, offset by offset, keeping at a repeated offset what [`merge_columns`] keeps: the
/// newest cell's point (on equal cell timestamps the one later in its column, then the
/// earlier column). Returns false, with `out` as it was, for a column out of order, one that
/// is no data column, or more than [`MERGE_WAYS_MAX`] columns.
pub fn append_merged_by<P>(
    cols: &[StoredColumn<'_>],
    base: u32,
    start_ms: u64,
    end_ms: u64,
    out: &mut Vec<P>,
    point: impl Fn(u64, DataValue) -> P,
) -> bool {
    if cols.len() > MERGE_WAYS_MAX {
        return false;
    }
    let base_ms = base as u64 * 1000;
    let wanted = in_window(base_ms, start_ms, end_ms);
    MERGE_SCRATCH.with_borrow_mut(|pts| {
        pts.clear();
        // Per column: its points' range in `pts` (those in the window: every column is checked
        // whole, but only the window's values are decoded and merged), its cell timestamp, and
        // its next point; and how many of its points come before the window, so that a point's
        // place in its column (which breaks ties) is counted as in the whole column.
        let mut runs = [(0usize, 0usize, 0u64); MERGE_WAYS_MAX];
        let mut heads = [0usize; MERGE_WAYS_MAX];
        let mut before = [0usize; MERGE_WAYS_MAX];
        for (n, c) in cols.iter().enumerate() {
            let from = pts.len();
            let mut last: Option<u32> = None;
            let mut skipped = 0;
            let mut take = |off: u32, v: Option<DataValue>| {
                if last.is_some_and(|l| off <= l) {
                    return false;
                }
                last = Some(off);
                match v {
                    Some(v) => pts.push((off, v)),
                    // Offsets rise within the column: those before its first in the window.
                    None if pts.len() == from => skipped += 1,
                    None => {}
                }
                true
            };
            if !walk_data_column(c, &wanted, &mut take) {
                return false;
            }
            runs[n] = (from, pts.len(), c.ts);
            heads[n] = from;
            before[n] = skipped;
        }
        let (runs, heads) = (&runs[..cols.len()], &mut heads[..cols.len()]);
        out.reserve(pts.len());
        let mut emit = |off: u32, v: DataValue| out.push(point(base_ms + off as u64, v));
        loop {
            // The column whose next point comes first; at a shared offset, the one that wins.
            let mut best: Option<usize> = None;
            for (i, &(from, to, ts)) in runs.iter().enumerate() {
                if heads[i] == to {
                    continue;
                }
                let Some(b) = best else {
                    best = Some(i);
                    continue;
                };
                let (off, off_b) = (pts[heads[i]].0, pts[heads[b]].0);
                let later_in_column =
                    heads[i] - from + before[i] > heads[b] - runs[b].0 + before[b];
                if off < off_b
                    || (off == off_b && (ts > runs[b].2 || (ts == runs[b].2 && later_in_column)))
                {
                    best = Some(i);
                }
            }
            let Some(b) = best else { break };
            // Up to the next offset another column holds, its points are nobody else's: taken
            // in a run (flushes overlap at their edges, so this is most of a row).
            let limit = (0..runs.len())
                .filter(|&i| i != b && heads[i] < runs[i].1)
                .map(|i| pts[heads[i]].0)
                .min()
                .unwrap_or(u32::MAX);
            let (off, v) = pts[heads[b]];
            if off < limit {
                while heads[b] < runs[b].1 && pts[heads[b]].0 < limit {
                    let (off, v) = pts[heads[b]];
                    emit(off, v);
                    heads[b] += 1;
                }
                continue;
            }
            // A repeated offset: the winner's point, and every column moves past it.
            emit(off, v);
            for (i, r) in runs.iter().enumerate() {
                if heads[i] < r.1 && pts[heads[i]].0 == off {
                    heads[i] += 1;
                }
            }
        }
        true
    })
}

/// [`append_ordered`] for any point shape: `point` turns (ms, stored value) into what `out`
/// holds (OpenTSDB queries keep integers apart from floats).
pub fn append_ordered_by<P>(
    cols: &[StoredColumn<'_>],
    base: u32,
    start_ms: u64,
    end_ms: u64,
    out: &mut Vec<P>,
    point: impl Fn(u64, DataValue) -> P,
) -> bool {
    let mark = out.len();
    let base_ms = base as u64 * 1000;
    // Reserving the row's point count in the window up front spares a series the copies of a
    // vector grown point by point (the whole row's count, reserved for a window of minutes of
    // an open hour, was the memory of the whole hour for every series read).
    let count = cols.iter().map(|c| qualifier_count(c.qualifier)).sum();
    out.reserve(window_share(count, base_ms, start_ms, end_ms));
    let wanted = in_window(base_ms, start_ms, end_ms);
    let mut last: Option<u32> = None;
    // Every offset is checked for order, but only the window's values are decoded.
    let mut take = |off: u32, v: Option<DataValue>| {
        if last.is_some_and(|l| off <= l) {
            return false;
        }
        last = Some(off);
        if let Some(v) = v {
            out.push(point(base_ms + off as u64, v));
        }
        true
    };
    for c in cols {
        if !walk_data_column(c, &wanted, &mut take) {
            out.truncate(mark);
            return false;
        }
    }
    true
}

/// A data column's points in stored order to `take` (offset ms, and the value when `wanted`
/// takes the offset), a compacted column's or a single cell's; false for any other column, an
/// undecodable one (whether or not its value is wanted), or when `take` stops.
fn walk_data_column(
    c: &StoredColumn<'_>,
    wanted: &impl Fn(u32) -> bool,
    take: &mut impl FnMut(u32, Option<DataValue>) -> bool,
) -> bool {
    match column_kind(c.qualifier) {
        ColumnKind::Compacted => walk_compacted_where(c.qualifier, c.value, wanted, take),
        ColumnKind::Single => match decode_single(c.qualifier, c.value) {
            Ok((p, _)) => p.value().is_ok_and(|v| {
                let off = p.offset_ms();
                take(off, wanted(off).then_some(v))
            }),
            Err(_) => false,
        },
        _ => false,
    }
}

/// Whether a point at offset `off` (ms) of the row based at `base_ms` lies in
/// `[start_ms, end_ms]`.
fn in_window(base_ms: u64, start_ms: u64, end_ms: u64) -> impl Fn(u32) -> bool {
    move |off| (start_ms..=end_ms).contains(&(base_ms + off as u64))
}

/// About how many of a row's `count` points lie in `[start_ms, end_ms]`, taking them as spread
/// evenly over the row's hour (all of them when the window covers the hour).
fn window_share(count: usize, base_ms: u64, start_ms: u64, end_ms: u64) -> usize {
    const HOUR_MS: u64 = crate::rowkey::ROW_SPAN * 1000;
    let over = end_ms
        .saturating_add(1)
        .min(base_ms + HOUR_MS)
        .saturating_sub(start_ms.max(base_ms));
    if over >= HOUR_MS {
        count
    } else {
        (count as u64 * over / HOUR_MS) as usize + 1
    }
}

/// About how many points a data column's qualifier holds (0 for other columns).
fn qualifier_count(q: &[u8]) -> usize {
    match column_kind(q) {
        ColumnKind::Single => 1,
        // From the first qualifier's width, without walking them all: exact for a row of one
        // resolution (what a row usually is); a row mixing them grows as it is read.
        ColumnKind::Compacted => q.first().map_or(0, |&b| q.len() / qualifier_len_at(b)),
        _ => 0,
    }
}

/// What to write so that a row holds one compacted column.
#[derive(Debug, PartialEq, Eq)]
pub struct CompactionPlan {
    pub put: Option<(Vec<u8>, Vec<u8>)>,
    pub delete: Vec<Vec<u8>>,
}

/// Plans the compaction of one row, or `None` when it is already compact (or holds appends,
/// which OpenTSDB's compaction never rewrites). Undecodable cells make the row an error: they
/// are `fsck`'s business, never silently dropped here.
pub fn plan_compaction(cols: &[StoredColumn<'_>]) -> Result<Option<CompactionPlan>, SchemaError> {
    let merged = merge_columns(cols);
    if let Some((_, e)) = merged.errors.into_iter().next() {
        return Err(e);
    }
    if merged.has_append || merged.points.is_empty() {
        return Ok(None);
    }
    if merged.data_columns == 1 && !merged.repaired && merged.duplicates == 0 {
        return Ok(None);
    }
    let (q, v) = build_column(&merged.points);
    let is_data = |c: &&StoredColumn| {
        matches!(
            column_kind(c.qualifier),
            ColumnKind::Single | ColumnKind::Compacted
        )
    };
    let existing = cols
        .iter()
        .filter(is_data)
        .find(|c| c.qualifier == q.as_slice());
    let put = match existing {
        Some(c) if c.value == v.as_slice() => None,
        _ => Some((q.clone(), v)),
    };
    let delete = cols
        .iter()
        .filter(is_data)
        .filter(|c| c.qualifier != q.as_slice())
        .map(|c| c.qualifier.to_vec())
        .collect();
    Ok(Some(CompactionPlan { put, delete }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_hex;

    fn h(s: &str) -> Vec<u8> {
        parse_hex(&s.replace(' ', "")).unwrap()
    }

    /// Runs a compaction over cells given in write order (later cells are newer).
    fn compact(cells: &[(&str, &str)]) -> Option<CompactionPlan> {
        let owned: Vec<(Vec<u8>, Vec<u8>)> = cells.iter().map(|(q, v)| (h(q), h(v))).collect();
        let cols: Vec<StoredColumn> = owned
            .iter()
            .enumerate()
            .map(|(i, (q, v))| StoredColumn {
                qualifier: q,
                value: v,
                ts: i as u64 + 1,
            })
            .collect();
        plan_compaction(&cols).unwrap()
    }

    const FOUR: &str = "0000000000000004";
    const FIVE: &str = "0000000000000005";
    const SIX: &str = "0000000000000006";

    #[test]
    fn opentsdb_compaction_queue_examples() {
        let p = compact(&[("0007", FOUR), ("0017", FIVE)]).unwrap();
        assert_eq!(p.put, Some((h("00070017"), h(&format!("{FOUR}{FIVE}00")))));
        assert_eq!(p.delete, vec![h("0007"), h("0017")]);

        let p = compact(&[("0007", FOUR), ("F0000007", FIVE)]).unwrap();
        assert_eq!(
            p,
            CompactionPlan {
                put: None,
                delete: vec![h("0007")]
            }
        );

        let p = compact(&[("0007", FOUR), ("0003", "00000004")]).unwrap();
        assert_eq!(
            p,
            CompactionPlan {
                put: None,
                delete: vec![h("0007")]
            }
        );

        let p = compact(&[("00070027", &format!("{FOUR}{FIVE}00")), ("0007", SIX)]).unwrap();
        assert_eq!(p.put, Some((h("00070027"), h(&format!("{SIX}{FIVE}00")))));
        assert_eq!(p.delete, vec![h("0007")]);

        let p = compact(&[("00070027", &format!("{FOUR}{FIVE}00")), ("0017", SIX)]).unwrap();
        assert_eq!(
            p.put,
            Some((h("000700170027"), h(&format!("{FOUR}{SIX}{FIVE}00"))))
        );
        assert_eq!(p.delete, vec![h("00070027"), h("0017")]);

        let p = compact(&[("0207", FOUR), ("0007", FIVE), ("0107", SIX)]).unwrap();
        assert_eq!(
            p.put,
            Some((h("000701070207"), h(&format!("{FIVE}{SIX}{FOUR}00"))))
        );

        let p = compact(&[("0003", FOUR)]).unwrap();
        assert_eq!(
            p,
            CompactionPlan {
                put: Some((h("0007"), h(FOUR))),
                delete: vec![h("0003")]
            }
        );

        let p = compact(&[("0007", FOUR), ("001B", "00000000 40866666")]).unwrap();
        assert_eq!(
            p.put,
            Some((h("0007001B"), h(&format!("{FOUR}4086666600"))))
        );

        assert_eq!(compact(&[("010000", "7B7D"), ("0007", FOUR)]), None);
        assert_eq!(compact(&[("00070017", &format!("{FOUR}{FIVE}00"))]), None);
    }

    #[test]
    fn appends_resolve_later_occurrence_and_are_never_rewritten() {
        let owned = h("00002A 01E018 01E001");
        let cols = [StoredColumn {
            qualifier: &[5, 0, 0],
            value: &owned,
            ts: 1,
        }];
        let m = merge_columns(&cols);
        assert_eq!(m.points.len(), 2);
        assert_eq!(m.points[1].value_bytes(), [1]);
        assert_eq!(plan_compaction(&cols).unwrap(), None);
    }

    #[test]
    fn corrupt_cells_are_reported_not_dropped() {
        let q = h("00070017");
        let v = h("00");
        let cols = [StoredColumn {
            qualifier: &q,
            value: &v,
            ts: 1,
        }];
        assert!(plan_compaction(&cols).is_err());
        assert_eq!(merge_columns(&cols).errors.len(), 1);
    }

    #[test]
    fn the_merged_lane_breaks_ties_by_place_in_the_whole_column() {
        // Both hold 5 s in cells of one timestamp: the later in its column wins (the first
        // column's fourth point over the second's third), as `merge_columns` keeps it, also for
        // a window that leaves out more of the first column's points than of the second's.
        let (q1, v1) = (h("0000 0010 0020 0050"), h("01 01 01 0A 00"));
        let (q2, v2) = (h("0010 0040 0050"), h("02 02 14 00"));
        let cols = [
            StoredColumn {
                qualifier: &q1,
                value: &v1,
                ts: 1,
            },
            StoredColumn {
                qualifier: &q2,
                value: &v2,
                ts: 1,
            },
        ];
        let merged = merge_columns(&cols);
        assert_eq!(merged.points.last().unwrap().value_bytes(), [10]);
        for start in [0, 3_000] {
            let mut out = Vec::new();
            assert!(append_merged_by(
                &cols,
                0,
                start,
                u64::MAX,
                &mut out,
                |t, v| (t, v.as_f64())
            ));
            assert_eq!(out.last(), Some(&(5_000, 10.0)), "from {start} ms");
        }
    }

    #[test]
    fn the_merged_lane_leaves_what_it_cannot_merge_to_merge_columns() {
        // Two overlapping columns (0 s, 20 s) and (10 s, 30 s), integers 1..4: merged in order.
        let (q1, v1) = (h("0000 0140"), h("01 03 00"));
        let (q2, v2) = (h("00A0 01E0"), h("02 04 00"));
        let cols = [
            StoredColumn {
                qualifier: &q1,
                value: &v1,
                ts: 1,
            },
            StoredColumn {
                qualifier: &q2,
                value: &v2,
                ts: 2,
            },
        ];
        let mut out = Vec::new();
        assert!(append_merged_by(&cols, 0, 0, u64::MAX, &mut out, |t, v| (
            t,
            v.as_f64()
        )));
        assert_eq!(
            out,
            vec![(0, 1.0), (10_000, 2.0), (20_000, 3.0), (30_000, 4.0)]
        );
        // A column out of order, an annotation, a corrupt column: `out` is left as it was.
        let (qd, vd) = (h("0140 0000"), h("03 01 00"));
        let (qa, va) = (h("01 0000"), b"{}".to_vec());
        for bad in [
            StoredColumn {
                qualifier: &qd,
                value: &vd,
                ts: 3,
            },
            StoredColumn {
                qualifier: &qa,
                value: &va,
                ts: 3,
            },
            StoredColumn {
                qualifier: &q1,
                value: &v1[..2],
                ts: 3,
            },
        ] {
            let mut out = vec![(7, 7.0)];
            assert!(!append_merged_by(
                &[cols[0], bad],
                0,
                0,
                u64::MAX,
                &mut out,
                |t, v| (t, v.as_f64())
            ));
            assert_eq!(out, vec![(7, 7.0)]);
        }
    }
}
