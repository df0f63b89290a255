//! Property tests of the schema codec: row keys, qualifiers and values round-trip, and
//! compaction merges any set of cells into the column that decodes back to the same points.

use super::column::{
    build_column, decode_compacted, decode_single, walk_compacted, walk_compacted_where, DataValue,
    RawPoint,
};
use super::compaction::{
    append_merged_by, append_ordered, append_ordered_by, merge_columns, plan_compaction,
    StoredColumn,
};
use super::rowkey::{base_time, is_ms, millis, KeyLayout, MAX_TIMESTAMP_MS};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn layout() -> impl Strategy<Value = KeyLayout> {
    (1usize..=8, 1usize..=8, 1usize..=8, 0usize..=3, 1u32..=40).prop_map(|(m, k, v, s, b)| {
        KeyLayout {
            metric_width: m,
            tagk_width: k,
            tagv_width: v,
            salt_width: s,
            salt_buckets: b,
        }
    })
}

fn value() -> impl Strategy<Value = DataValue> {
    prop_oneof![
        any::<i64>().prop_map(DataValue::Int),
        // Each integer width's edges, where the encoder picks its length.
        prop_oneof![
            Just(0i64),
            Just(127),
            Just(-128),
            Just(128),
            Just(32767),
            Just(-32769),
            Just(i32::MAX as i64 + 1),
            Just(i64::MIN)
        ]
        .prop_map(DataValue::Int),
        any::<f32>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(DataValue::F32),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(DataValue::F64),
    ]
}

/// Seconds (below 2^32) or milliseconds (OpenTSDB's rule: any upper bit set), up to the max.
fn timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..=u32::MAX as u64, (1u64 << 32)..=MAX_TIMESTAMP_MS]
}

fn same_value(a: DataValue, b: DataValue) -> bool {
    match (a, b) {
        (DataValue::Int(x), DataValue::Int(y)) => x == y,
        (DataValue::F32(x), DataValue::F32(y)) => x.to_bits() == y.to_bits(),
        (DataValue::F64(x), DataValue::F64(y)) => x.to_bits() == y.to_bits(),
        _ => false,
    }
}

/// One point of an hour's row: offset in ms (whole seconds when `secs`), and its value.
fn row_point() -> impl Strategy<Value = (bool, u32, DataValue)> {
    (any::<bool>(), 0u32..3_600_000, value())
        .prop_map(|(secs, off, v)| (secs, if secs { off / 1000 * 1000 } else { off }, v))
}

const BASE: u32 = 1_356_998_400;

/// Encodes a row point as its own single cell, seconds or ms qualifier.
fn single(secs: bool, off_ms: u32, v: DataValue) -> RawPoint {
    let ts = if secs {
        BASE as u64 + (off_ms / 1000) as u64
    } else {
        BASE as u64 * 1000 + off_ms as u64
    };
    RawPoint::encode(ts, BASE, v).unwrap()
}

/// `cells` (in write order) cut at `cuts` into flushes, each stored as a flusher does: the last
/// write of an offset wins, sorted, one column (or a single cell); with each flush's number.
fn flush_columns(cells: &[RawPoint], cuts: &[u8]) -> Vec<(Vec<u8>, Vec<u8>, usize)> {
    let mut bounds: Vec<usize> = cuts
        .iter()
        .map(|&c| c as usize % (cells.len() + 1))
        .collect();
    bounds.extend([0, cells.len()]);
    bounds.sort_unstable();
    bounds.dedup();
    let mut out = Vec::new();
    for (n, w) in bounds.windows(2).enumerate() {
        let mut part: Vec<RawPoint> = cells[w[0]..w[1]].to_vec();
        if part.is_empty() {
            continue;
        }
        part.reverse();
        part.sort_by_key(|p| p.offset_ms());
        part.dedup_by_key(|p| p.offset_ms());
        let (q, v) = if part.len() == 1 {
            (part[0].qualifier().to_vec(), part[0].value_bytes().to_vec())
        } else {
            build_column(&part)
        };
        out.push((q, v, n));
    }
    out
}

/// A compacted column (`q`, `v`) with its point `at` (modulo their count) given three value
/// bytes, a length no value has; None for a single cell.
fn with_bad_value(q: &[u8], v: &[u8], at: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut quals = Vec::new();
    let mut i = 0;
    while i < q.len() {
        let ql = crate::column::qualifier_len_at(q[i]);
        quals.push(&q[i..i + ql]);
        i += ql;
    }
    if quals.len() < 2 {
        return None;
    }
    let k = at % quals.len();
    let (mut q2, mut v2, mut vi) = (Vec::new(), Vec::new(), 0);
    for (n, qq) in quals.iter().enumerate() {
        let flags = qq[qq.len() - 1] & 0xF;
        let vl = (flags & 0x7) as usize + 1;
        if n == k {
            q2.extend_from_slice(&qq[..qq.len() - 1]);
            q2.push((qq[qq.len() - 1] & 0xF8) | 2);
            v2.extend_from_slice(&[1, 2, 3]);
        } else {
            q2.extend_from_slice(qq);
            v2.extend_from_slice(&v[vi..vi + vl]);
        }
        vi += vl;
    }
    v2.push(*v.last()?);
    Some((q2, v2))
}

proptest! {
    #[test]
    fn row_keys_round_trip(l in layout(), metric in prop::collection::vec(any::<u8>(), 8), tags in prop::collection::vec(any::<u8>(), 1..64), npairs in 1usize..5, ts in timestamp()) {
        let mut tsuid = metric[..l.metric_width].to_vec();
        for _ in 0..npairs {
            tsuid.extend(tags.iter().cycle().take(l.tag_width()));
        }
        let base = base_time(ts);
        let key = l.row_key(&tsuid, base);
        prop_assert_eq!(key.len(), l.salt_width + tsuid.len() + 4);
        let rk = l.parse(&key).unwrap();
        let salt = l.salt(&tsuid);
        prop_assert_eq!(rk.salt, salt.as_slice());
        prop_assert_eq!(rk.base, base);
        prop_assert_eq!(rk.tsuid(), tsuid.clone());
        prop_assert_eq!(rk.tag_pairs().count(), npairs);
        // Any key that is not whole tag pairs is refused, never misread.
        let cut = key.len() - 1;
        prop_assert!(l.parse(&key[..cut]).is_err());
    }

    #[test]
    fn qualifiers_and_values_round_trip(ts in timestamp(), v in value()) {
        let base = base_time(ts);
        let p = RawPoint::encode(ts, base, v).unwrap();
        prop_assert_eq!(p.is_ms(), is_ms(ts));
        prop_assert_eq!(p.qualifier().len(), if is_ms(ts) { 4 } else { 2 });
        // Offsets within the hour; the wrapped base of late ms times is OpenTSDB's too.
        prop_assert_eq!(p.offset_ms() as u64, millis(ts) % 3_600_000);
        if crate::rowkey::seconds(ts) < 1u64 << 32 {
            prop_assert_eq!(p.timestamp_ms(base), millis(ts));
        }
        prop_assert!(same_value(p.value().unwrap(), v), "{:?} != {:?}", p.value(), v);
        let width = p.value_bytes().len();
        match v {
            DataValue::Int(i) => {
                prop_assert_eq!(p.flags() & 0x8, 0);
                let smallest = [1usize, 2, 4, 8].into_iter().find(|&n| n == 8 || (i >= -(1i64 << (8 * n - 1)) && i < 1i64 << (8 * n - 1))).unwrap();
                prop_assert_eq!(width, smallest);
            }
            DataValue::F32(_) => prop_assert_eq!((p.flags(), width), (0xB, 4)),
            DataValue::F64(_) => prop_assert_eq!((p.flags(), width), (0xF, 8)),
        }
        // The stored bytes decode back to the same point, with no repair needed.
        let (back, fixed) = decode_single(p.qualifier(), p.value_bytes()).unwrap();
        prop_assert_eq!(back, p);
        prop_assert!(!fixed);
    }

    #[test]
    fn compaction_merge_equals_last_write_per_offset(points in prop::collection::vec(row_point(), 1..40), order in prop::collection::vec(any::<u32>(), 40)) {
        // Cells written in `points` order (cell timestamps 1, 2, …), handed over in any order.
        let cells: Vec<RawPoint> = points.iter().map(|&(s, off, v)| single(s, off, v)).collect();
        let mut idx: Vec<usize> = (0..cells.len()).collect();
        idx.sort_by_key(|&i| order[i]);
        let owned: Vec<(Vec<u8>, Vec<u8>, u64)> = idx.iter().map(|&i| (cells[i].qualifier().to_vec(), cells[i].value_bytes().to_vec(), i as u64 + 1)).collect();
        let cols: Vec<StoredColumn> = owned.iter().map(|(q, v, ts)| StoredColumn { qualifier: q, value: v, ts: *ts }).collect();

        // What OpenTSDB keeps: per offset (ms), the newest cell.
        let mut want: BTreeMap<u32, RawPoint> = BTreeMap::new();
        for p in &cells {
            want.insert(p.offset_ms(), *p);
        }
        let merged = merge_columns(&cols);
        prop_assert!(merged.errors.is_empty());
        prop_assert_eq!(&merged.points, &want.values().copied().collect::<Vec<_>>());
        prop_assert_eq!(merged.duplicates, cells.len() - want.len());

        // The planned column (or the lone cell left in place) decodes back to the same points.
        let plan = plan_compaction(&cols).unwrap();
        let (q, v) = match plan.and_then(|p| p.put) {
            Some(put) => put,
            None => build_column(&merged.points),
        };
        let mut back = Vec::new();
        if merged.points.len() == 1 {
            back.push(decode_single(&q, &v).unwrap().0);
        } else {
            decode_compacted(&q, &v, &mut back).unwrap();
            let mixed = merged.points.iter().any(|p| p.is_ms()) && merged.points.iter().any(|p| !p.is_ms());
            prop_assert_eq!(*v.last().unwrap(), mixed as u8);
        }
        prop_assert_eq!(&back, &merged.points);

        // Compacting again, with newer single cells on top, equals merging everything at once.
        let extra: Vec<RawPoint> = points.iter().take(3).map(|&(s, off, _)| single(s, off, DataValue::Int(7))).collect();
        let mut cols2 = vec![StoredColumn { qualifier: &q, value: &v, ts: 1000 }];
        let extra_owned: Vec<(Vec<u8>, Vec<u8>)> = extra.iter().map(|p| (p.qualifier().to_vec(), p.value_bytes().to_vec())).collect();
        cols2.extend(extra_owned.iter().enumerate().map(|(i, (q, v))| StoredColumn { qualifier: q, value: v, ts: 2000 + i as u64 }));
        let mut all = cols.clone();
        all.extend_from_slice(&cols2[1..]);
        prop_assert_eq!(merge_columns(&cols2).points, merge_columns(&all).points);
    }

    #[test]
    fn merged_read_lane_equals_the_merge(points in prop::collection::vec(row_point(), 1..80), cuts in prop::collection::vec(any::<u8>(), 0..10), stamps in prop::collection::vec(0u64..3, 12), lo in 0u32..3_600_000, span in 0u32..4_000_000) {
        // Columns as flushers write them, each sorted, overlapping in time (the points'
        // offsets are random), with cell timestamps that often tie.
        let cells: Vec<RawPoint> = points.iter().map(|&(s, off, v)| single(s, off, v)).collect();
        let mut owned: Vec<(Vec<u8>, Vec<u8>, u64)> =
            flush_columns(&cells, &cuts).into_iter().map(|(q, v, n)| (q, v, stamps[n % stamps.len()])).collect();
        owned.sort_by(|a, b| a.0.cmp(&b.0));
        let cols: Vec<StoredColumn> = owned.iter().map(|(q, v, ts)| StoredColumn { qualifier: q, value: v, ts: *ts }).collect();
        let (start, end) = (BASE as u64 * 1000 + lo as u64, BASE as u64 * 1000 + lo as u64 + span as u64);
        let want: Vec<(i64, u64)> = merge_columns(&cols).points.iter()
            .map(|p| (p.timestamp_ms(BASE), p.value().unwrap().as_f64()))
            .filter(|&(t, _)| t >= start && t <= end)
            .map(|(t, v)| (t as i64, v.to_bits()))
            .collect();
        let mut out = vec![(-1i64, 0u64)];
        prop_assert!(append_merged_by(&cols, BASE, start, end, &mut out, |t, v| (t as i64, v.as_f64().to_bits())));
        prop_assert_eq!(out[0].0, -1);
        prop_assert_eq!(&out[1..], &want[..]);
    }

    #[test]
    fn ordered_read_lane_equals_the_merge(points in prop::collection::vec(row_point(), 1..60), cuts in prop::collection::vec(any::<u8>(), 0..6), shuffle in any::<bool>(), lo in 0u32..3_600_000, span in 0u32..4_000_000) {
        // Columns as a flusher writes them: the points of each flush compacted into one column.
        let cells: Vec<RawPoint> = points.iter().map(|&(s, off, v)| single(s, off, v)).collect();
        let mut owned: Vec<(Vec<u8>, Vec<u8>, u64)> = flush_columns(&cells, &cuts).into_iter().map(|(q, v, n)| (q, v, n as u64 + 1)).collect();
        if shuffle { owned.reverse(); }
        // The store hands cells over in qualifier order.
        owned.sort_by(|a, b| a.0.cmp(&b.0));
        let cols: Vec<StoredColumn> = owned.iter().map(|(q, v, ts)| StoredColumn { qualifier: q, value: v, ts: *ts }).collect();
        let (start, end) = (BASE as u64 * 1000 + lo as u64, BASE as u64 * 1000 + lo as u64 + span as u64);
        let want: Vec<(i64, f64)> = merge_columns(&cols).points.iter()
            .map(|p| (p.timestamp_ms(BASE), p.value().unwrap().as_f64()))
            .filter(|&(t, _)| t >= start && t <= end)
            .map(|(t, v)| (t as i64, v))
            .collect();
        let mut out = vec![(-1i64, 0.5f64)];
        if append_ordered(&cols, BASE, start, end, &mut out) {
            prop_assert_eq!(out[0].0, -1);
            prop_assert_eq!(out[1..].iter().map(|p| (p.0, p.1.to_bits())).collect::<Vec<_>>(), want.iter().map(|p| (p.0, p.1.to_bits())).collect::<Vec<_>>());
        } else {
            prop_assert_eq!(out.len(), 1);
        }
        // Points written in time order, seconds only, always take the lane.
        let mut sorted: Vec<(u32, DataValue)> = points.iter().map(|&(_, off, v)| (off / 1000 * 1000, v)).collect();
        sorted.sort_by_key(|p| p.0);
        sorted.dedup_by_key(|p| p.0);
        let cells: Vec<RawPoint> = sorted.iter().map(|&(off, v)| single(true, off, v)).collect();
        let parts: Vec<(Vec<u8>, Vec<u8>)> = cells.chunks(1 + cuts.len()).map(|c| if c.len() == 1 { (c[0].qualifier().to_vec(), c[0].value_bytes().to_vec()) } else { build_column(c) }).collect();
        let cols: Vec<StoredColumn> = parts.iter().map(|(q, v)| StoredColumn { qualifier: q, value: v, ts: 1 }).collect();
        out.clear();
        prop_assert!(append_ordered(&cols, BASE, 0, u64::MAX, &mut out));
        prop_assert_eq!(out.len(), cells.len());
    }

    #[test]
    fn walking_a_column_agrees_with_decoding_it(points in prop::collection::vec(row_point(), 0..20), noise in prop::collection::vec(any::<u8>(), 0..12), at in any::<usize>(), in_q in any::<bool>()) {
        let mut cells: Vec<RawPoint> = points.iter().map(|&(s, off, v)| single(s, off, v)).collect();
        cells.sort_by_key(|p| p.offset_ms());
        cells.dedup_by_key(|p| p.offset_ms());
        let (mut q, mut v) = build_column(&cells);
        // Valid columns, and the same with bytes spliced in somewhere.
        let target = if in_q { &mut q } else { &mut v };
        if !noise.is_empty() {
            let i = at % (target.len() + 1);
            target.splice(i..i, noise.iter().copied());
        }
        let mut want = Vec::new();
        let decoded = decode_compacted(&q, &v, &mut want).is_ok();
        let mut got = Vec::new();
        let walked = walk_compacted(&q, &v, |off, x| { got.push((off, x.as_f64().to_bits())); true });
        prop_assert_eq!(walked, decoded);
        if decoded {
            prop_assert_eq!(got, want.iter().map(|p| (p.offset_ms(), p.value().unwrap().as_f64().to_bits())).collect::<Vec<_>>());
        }
    }

    #[test]
    fn reading_a_window_agrees_with_reading_the_whole_row(points in prop::collection::vec(row_point(), 0..40), cuts in prop::collection::vec(any::<u8>(), 0..6), noise in prop::collection::vec(any::<u8>(), 0..6), at in any::<usize>(), col in any::<usize>(), in_q in any::<bool>(), spoil in any::<bool>(), dense in any::<bool>(), lo in 0u32..3_600_000, span in 0u32..4_000_000) {
        // The lanes decode only the window's values: a window must be read as the whole row
        // read and then cut to it, and a row the whole read refuses (a value that does not
        // decode, wherever it is) must be refused for any window. Dense rows (40 offsets) repeat
        // offsets across columns, whose ties the merge breaks by place in the column.
        let (points, lo, span) = if dense {
            (points.iter().map(|&(_, off, v)| (true, off % 40 * 1000, v)).collect(), lo % 40_000, span % 40_000)
        } else {
            (points, lo, span)
        };
        let cells: Vec<RawPoint> = points.iter().map(|&(s, off, v)| single(s, off, v)).collect();
        let mut owned: Vec<(Vec<u8>, Vec<u8>, u64)> =
            flush_columns(&cells, &cuts).into_iter().map(|(q, v, n)| (q, v, n as u64 % 2)).collect();
        owned.sort_by(|a, b| a.0.cmp(&b.0));
        if !owned.is_empty() && spoil {
            // A value whose length its flags refuse, in a column otherwise whole.
            let n = col % owned.len();
            if let Some((q, v)) = with_bad_value(&owned[n].0, &owned[n].1, at) {
                owned[n].0 = q;
                owned[n].1 = v;
            }
        } else if !owned.is_empty() && !noise.is_empty() {
            let n = col % owned.len();
            let target = if in_q { &mut owned[n].0 } else { &mut owned[n].1 };
            let i = at % (target.len() + 1);
            target.splice(i..i, noise.iter().copied());
        }
        let (start, end) = (BASE as u64 * 1000 + lo as u64, BASE as u64 * 1000 + lo as u64 + span as u64);
        let in_window = |t: u64| t >= start && t <= end;
        for (q, v, _) in &owned {
            let mut whole = Vec::new();
            let walked = walk_compacted(q, v, |off, x| { whole.push((off, x.as_f64().to_bits())); true });
            let (mut part, mut asked) = (Vec::new(), Vec::new());
            let wanted = |off: u32| in_window(BASE as u64 * 1000 + off as u64);
            let walked_part = walk_compacted_where(q, v, wanted, |off, x| {
                asked.push((off, x.is_some()));
                part.extend(x.map(|x| (off, x.as_f64().to_bits())));
                true
            });
            // A value comes with every wanted offset and with no other.
            prop_assert!(asked.iter().all(|&(off, some)| some == wanted(off)));
            prop_assert_eq!(walked_part, walked);
            if walked {
                whole.retain(|&(off, _)| wanted(off));
                prop_assert_eq!(part, whole);
            }
        }
        let cols: Vec<StoredColumn> = owned.iter().map(|(q, v, ts)| StoredColumn { qualifier: q, value: v, ts: *ts }).collect();
        let bits = |t: u64, v: DataValue| (t as i64, v.as_f64().to_bits());
        for merged in [false, true] {
            let lane = |start, end, out: &mut Vec<(i64, u64)>| match merged {
                false => append_ordered_by(&cols, BASE, start, end, out, bits),
                true => append_merged_by(&cols, BASE, start, end, out, bits),
            };
            let (mut whole, mut part) = (vec![(-1i64, 0u64)], vec![(-1i64, 0u64)]);
            let took_whole = lane(0, u64::MAX, &mut whole);
            let took_part = lane(start, end, &mut part);
            prop_assert_eq!(took_part, took_whole);
            whole.retain(|p| p.0 == -1 || in_window(p.0 as u64));
            prop_assert_eq!(part, whole);
        }
    }
}
