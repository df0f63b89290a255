//! Stored `tsdb` cells as a read or a compaction meets them (corrupt ones included): row keys
//! under any layout, single/compacted/append columns, merging and compaction planning. A
//! planned compacted column must decode back to exactly the merged points.
#![no_main]
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use tsgate::schema::compaction::{merge_columns, plan_compaction, StoredColumn};
use tsgate::schema::KeyLayout;

#[derive(Arbitrary, Debug)]
struct Input {
    widths: (u8, u8, u8, u8),
    key: Vec<u8>,
    cells: Vec<(Vec<u8>, Vec<u8>, u8)>,
}

fuzz_target!(|input: Input| {
    let w = |b: u8| 1 + (b % 8) as usize;
    let layout = KeyLayout {
        metric_width: w(input.widths.0),
        tagk_width: w(input.widths.1),
        tagv_width: w(input.widths.2),
        salt_width: (input.widths.3 % 3) as usize,
        salt_buckets: 1 + input.widths.3 as u32 % 20,
    };
    if let Ok(rk) = layout.parse(&input.key) {
        let tsuid = rk.tsuid();
        let _ = rk.tag_pairs().count();
        if layout.salt_width == 0 {
            assert_eq!(layout.row_key(&tsuid, rk.base), input.key, "row key does not round-trip");
        }
    }
    let cols: Vec<StoredColumn> = input.cells.iter().map(|(q, v, ts)| StoredColumn { qualifier: q, value: v, ts: *ts as u64 }).collect();
    let merged = merge_columns(&cols);
    if let Ok(Some(plan)) = plan_compaction(&cols) {
        let (q, v) = match plan.put {
            Some(put) => put,
            // Already in place: the kept column is the only data column not deleted.
            None => return,
        };
        let back = merge_columns(&[StoredColumn { qualifier: &q, value: &v, ts: 0 }]);
        assert!(back.errors.is_empty(), "planned column does not decode: {:?}", back.errors);
        assert_eq!(back.points, merged.points, "compaction changed the points");
    }
});
