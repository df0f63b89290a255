//! Rollup cells built by tsgate itself, in OpenTSDB 2.4's rollup tables: when the compactor
//! rewrites a row of a closed hour it hands this module the row's points, and every
//! configured interval gets its cells for that hour in the same pass.
//!
//! - An interval that divides an hour (`1m`, `10m`, `1h`) is computed from the raw points of
//!   the hour, which hold all of its intervals there.
//! - A longer one (`1d`) is computed from the finer rollup that divides it (the longest such,
//!   e.g. `1h`), read back after the hour's own cells were written: one row read per series
//!   instead of 24 raw hours. An interval that fits neither is not built (said at start).
//!
//! Cells are always recomputed from their whole source and overwritten, never added to: a late
//! point makes its row due for compaction again, which recomputes the hour's cells from all of
//! the row's raw points and then the day's from all of its hours, so nothing is counted twice.
//! Aggregators built: `sum`, `count`, `min` and `max` (those `aggregationIds` maps); `avg` is
//! read as sum / count. The raw (default) interval is the data table itself.

use std::collections::BTreeMap;
use std::sync::Arc;
use tsgate_schema::column::encode_value;
use tsgate_schema::rollup::{decode_cell, RollupInterval, Rollups};
use tsgate_schema::{DataValue, KeyLayout, RawPoint, DATA_FAMILY};
use tsgate_store::{RowMutations, SharedStore, StoreError};

/// The aggregators tsgate computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agg {
    Sum,
    Count,
    Min,
    Max,
}

impl Agg {
    fn parse(name: &str) -> Option<Agg> {
        Some(match name {
            "sum" => Agg::Sum,
            "count" => Agg::Count,
            "min" => Agg::Min,
            "max" => Agg::Max,
            _ => return None,
        })
    }
}

/// Where an interval's cells come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The raw points of one hour.
    Raw,
    /// The cells of the target at this index (a finer interval dividing this one).
    Finer(usize),
}

#[derive(Debug, Clone)]
struct Target {
    interval: RollupInterval,
    source: Source,
}

/// What one interval of one series holds, for each aggregator.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    sum: Option<DataValue>,
    count: i64,
    min: Option<DataValue>,
    max: Option<DataValue>,
}

fn add(a: Option<DataValue>, b: DataValue) -> DataValue {
    match (a, b) {
        (None, b) => b,
        (Some(DataValue::Int(x)), DataValue::Int(y)) => match x.checked_add(y) {
            Some(s) => DataValue::Int(s),
            None => DataValue::F64(x as f64 + y as f64),
        },
        (Some(x), y) => DataValue::F64(x.as_f64() + y.as_f64()),
    }
}

fn pick(a: Option<DataValue>, b: DataValue, less: bool) -> DataValue {
    match a {
        // Ties keep the first value seen (its encoding too).
        Some(x) if (less && x.as_f64() <= b.as_f64()) || (!less && x.as_f64() >= b.as_f64()) => x,
        _ => b,
    }
}

impl Acc {
    fn raw(&mut self, v: DataValue) {
        self.sum = Some(add(self.sum, v));
        self.count += 1;
        self.min = Some(pick(self.min, v, true));
        self.max = Some(pick(self.max, v, false));
    }

    /// Folds in a finer interval's cell of aggregator `agg`.
    fn cell(&mut self, agg: Agg, v: DataValue) {
        match agg {
            Agg::Sum => self.sum = Some(add(self.sum, v)),
            Agg::Count => self.count += v.as_f64() as i64,
            Agg::Min => self.min = Some(pick(self.min, v, true)),
            Agg::Max => self.max = Some(pick(self.max, v, false)),
        }
    }

    fn value(&self, agg: Agg) -> Option<DataValue> {
        match agg {
            Agg::Sum => self.sum,
            Agg::Count => (self.count > 0).then_some(DataValue::Int(self.count)),
            Agg::Min => self.min,
            Agg::Max => self.max,
        }
    }
}

/// The rollup building of one configuration.
#[derive(Debug)]
pub struct RollupBuild {
    layout: KeyLayout,
    targets: Vec<Target>,
    aggs: Vec<(Agg, u8)>,
}

/// One raw row's part: its series, hour and points.
pub struct RawRow<'a> {
    pub key: &'a [u8],
    pub points: &'a [RawPoint],
}

impl RollupBuild {
    /// The plan for `rollups`; None when nothing is to be built.
    pub fn new(rollups: &Rollups, layout: KeyLayout) -> Option<Arc<RollupBuild>> {
        let aggs: Vec<(Agg, u8)> = rollups
            .agg_ids
            .iter()
            .filter_map(|(n, id)| Agg::parse(n).map(|a| (a, *id)))
            .collect();
        let mut ivs: Vec<&RollupInterval> =
            rollups.intervals.iter().filter(|i| !i.default).collect();
        ivs.sort_by_key(|i| i.interval_s);
        let mut targets: Vec<Target> = Vec::new();
        for iv in ivs {
            let source = if 3600u32.is_multiple_of(iv.interval_s) {
                Some(Source::Raw)
            } else if iv.interval_s.is_multiple_of(3600) {
                targets
                    .iter()
                    .rposition(|t| iv.interval_s.is_multiple_of(t.interval.interval_s))
                    .map(Source::Finer)
            } else {
                None
            };
            match source {
                Some(source) => targets.push(Target {
                    interval: iv.clone(),
                    source,
                }),
                None => tracing::warn!(
                    interval = %iv.interval,
                    "rollup interval not built by tsgate: it neither divides an hour nor is a multiple of a finer configured interval (write it with /api/rollup)"
                ),
            }
        }
        if targets.is_empty() || aggs.is_empty() {
            return None;
        }
        Some(Arc::new(RollupBuild {
            layout,
            targets,
            aggs,
        }))
    }

    /// Builds and writes the cells of every target for these rows of closed hours (an error:
    /// the caller compacts the rows again later, which rebuilds them).
    pub fn build(&self, store: &SharedStore, rows: &[RawRow<'_>]) -> Result<(), StoreError> {
        // Cells per table, then coarser intervals from what was just written.
        let mut batches: BTreeMap<&str, Vec<RowMutations>> = BTreeMap::new();
        // (target, tsuid, interval start) of the coarse cells to recompute.
        let mut coarse: Vec<(usize, Vec<u8>, u64)> = Vec::new();
        for row in rows {
            let Ok(rk) = self.layout.parse(row.key) else {
                continue;
            };
            let tsuid = rk.tsuid();
            for (ti, t) in self.targets.iter().enumerate() {
                let iv = &t.interval;
                if t.source != Source::Raw {
                    let start = interval_start(iv, rk.base as u64);
                    if !coarse
                        .iter()
                        .any(|(i, s, b)| *i == ti && *s == tsuid && *b == start)
                    {
                        coarse.push((ti, tsuid.clone(), start));
                    }
                    continue;
                }
                let base = iv.base_time(rk.base as u64);
                let mut accs: BTreeMap<u32, Acc> = BTreeMap::new();
                for p in row.points {
                    let Ok(v) = p.value() else { continue };
                    let ts = p.timestamp_ms(rk.base) / 1000;
                    let index = ((ts - base as u64) / iv.interval_s as u64) as u32;
                    accs.entry(index).or_default().raw(v);
                }
                if accs.is_empty() {
                    continue;
                }
                let key = self.layout.row_key(&tsuid, base);
                let muts = self.cells(iv, base, &accs);
                batches
                    .entry(iv.table.as_str())
                    .or_default()
                    .push(RowMutations {
                        row: key,
                        mutations: muts,
                    });
            }
        }
        for (table, mut batch) in batches {
            let keys: Vec<Vec<u8>> = batch.iter().map(|m| m.row.clone()).collect();
            let existing = store.get_rows(table, &keys, &[DATA_FAMILY])?;
            for (m, cells) in batch.iter_mut().zip(existing) {
                drop_stale(m, &cells);
            }
            batch.retain(|m| !m.mutations.is_empty());
            if !batch.is_empty() {
                store.mutate(table, batch)?;
            }
        }
        // Finer first: a target's sources were all written before it is read.
        coarse.sort_by_key(|(ti, _, _)| *ti);
        let mut i = 0;
        while i < coarse.len() {
            let ti = coarse[i].0;
            let mut batch = Vec::new();
            while i < coarse.len() && coarse[i].0 == ti {
                let (_, tsuid, start) = &coarse[i];
                if let Some(m) = self.coarse_cells(store, ti, tsuid, *start)? {
                    batch.push(m);
                }
                i += 1;
            }
            if !batch.is_empty() {
                store.mutate(&self.targets[ti].interval.table, batch)?;
            }
        }
        Ok(())
    }

    /// The put of every aggregator's cell for each interval in `accs`.
    fn cells(
        &self,
        iv: &RollupInterval,
        base: u32,
        accs: &BTreeMap<u32, Acc>,
    ) -> Vec<tsgate_store::Mutation> {
        let mut out = Vec::new();
        for (&index, acc) in accs {
            for &(agg, id) in &self.aggs {
                let Some(v) = acc.value(agg) else { continue };
                let Ok((flags, bytes, len)) = encode_value(v) else {
                    continue;
                };
                let ts = iv.timestamp_s(base, index);
                let Ok(q) = iv.qualifier(id, ts, base, flags) else {
                    continue;
                };
                out.push(tsgate_store::Mutation::Put {
                    family: DATA_FAMILY.to_vec(),
                    qualifier: q.to_vec(),
                    value: bytes[..len as usize].to_vec(),
                });
            }
        }
        out
    }

    /// Recomputes one coarse interval of a series from its finer source's cells.
    fn coarse_cells(
        &self,
        store: &SharedStore,
        ti: usize,
        tsuid: &[u8],
        start: u64,
    ) -> Result<Option<RowMutations>, StoreError> {
        let t = &self.targets[ti];
        let Source::Finer(si) = t.source else {
            return Ok(None);
        };
        let src = &self.targets[si].interval;
        let end = start + t.interval.interval_s as u64;
        let mut acc = Acc::default();
        let mut any = false;
        let mut b = src.base_time(start);
        while (b as u64) < end {
            let key = self.layout.row_key(tsuid, b);
            for c in store.get(&src.table, &key, &[DATA_FAMILY])? {
                let Some(cell) = decode_cell(&c.qualifier, &c.value, |_| None) else {
                    continue;
                };
                let ts = src.timestamp_s(b, cell.index);
                if ts < start || ts >= end {
                    continue;
                }
                let Some(&(agg, _)) = self.aggs.iter().find(|(_, id)| Some(*id) == cell.agg_id)
                else {
                    continue;
                };
                acc.cell(agg, cell.value);
                any = true;
            }
            let next = src.next_base(b);
            if next > u32::MAX as u64 {
                break;
            }
            b = next as u32;
        }
        if !any {
            return Ok(None);
        }
        let iv = &t.interval;
        let base = iv.base_time(start);
        let index = ((start - base as u64) / iv.interval_s as u64) as u32;
        let accs = BTreeMap::from([(index, acc)]);
        let mut m = RowMutations {
            row: self.layout.row_key(tsuid, base),
            mutations: self.cells(iv, base, &accs),
        };
        let existing = store.get(&iv.table, &m.row, &[DATA_FAMILY])?;
        drop_stale(&mut m, &existing);
        Ok((!m.mutations.is_empty()).then_some(m))
    }
}

/// Deletes the cells a recomputed value replaces under another qualifier: the qualifier
/// holds the value's width, so a sum that grew from one byte to two is a new cell, and the
/// old one must go (else readers would see both). And leaves out the puts of cells stored
/// already with the same value: each hour's compaction recomputes its day's `1d` cells (and
/// a late point its hour's), and a put of an unchanged cell would only add a version that
/// every read of the row steps over until the engine merges it away.
fn drop_stale(m: &mut RowMutations, existing: &[tsgate_store::Cell]) {
    m.mutations.retain(|put| match put {
        tsgate_store::Mutation::Put {
            family,
            qualifier,
            value,
        } => !existing
            .iter()
            .any(|c| c.family == *family && c.qualifier == *qualifier && c.value == *value),
        _ => true,
    });
    let mut dels = Vec::new();
    for put in &m.mutations {
        let tsgate_store::Mutation::Put { qualifier: q, .. } = put else {
            continue;
        };
        for c in existing {
            let e = &c.qualifier;
            if e.len() == 3
                && q.len() == 3
                && e[0] == q[0]
                && e[1] == q[1]
                && e[2] >> 4 == q[2] >> 4
                && e != q
            {
                dels.push(tsgate_store::Mutation::Delete {
                    family: DATA_FAMILY.to_vec(),
                    qualifier: e.clone(),
                });
            }
        }
    }
    m.mutations.extend(dels);
}

/// The start of `iv`'s interval holding `ts` (seconds).
fn interval_start(iv: &RollupInterval, ts: u64) -> u64 {
    let base = iv.base_time(ts) as u64;
    base + (ts - base) / iv.interval_s as u64 * iv.interval_s as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::rollup::RollupsConfig;
    use crate::write::compactor::Compactor;
    use tsgate_store::embedded::EmbeddedStore;
    use tsgate_store::{Scan, TableNames};

    const HOUR: u32 = 1356998400; // 2013-01-01 00:00 UTC
    const TSUID: [u8; 9] = [0, 0, 1, 0, 0, 1, 0, 0, 1];

    fn setup(dir: &std::path::Path) -> (SharedStore, Arc<RollupBuild>) {
        let mut c = RollupsConfig {
            enabled: true,
            ..Default::default()
        };
        let r = c.compile("tsdb").unwrap().unwrap();
        let names = TableNames {
            rollups: r.tables("tsdb"),
            ..Default::default()
        };
        c.compiled = Some(Arc::new(r));
        let store: SharedStore =
            Arc::new(EmbeddedStore::open(&dir.join("store"), &names.specs()).unwrap());
        let b = RollupBuild::new(c.compiled.as_deref().unwrap(), KeyLayout::default()).unwrap();
        (store, b)
    }

    /// One partial column per point, as flushes leave them.
    fn put(store: &SharedStore, base: u32, offset: u64, v: i64) -> Vec<u8> {
        let row = KeyLayout::default().row_key(&TSUID, base);
        let p = RawPoint::encode(base as u64 + offset, base, DataValue::Int(v)).unwrap();
        store
            .mutate(
                "tsdb",
                vec![RowMutations::put(
                    row.clone(),
                    DATA_FAMILY,
                    p.qualifier().to_vec(),
                    p.value_bytes().to_vec(),
                )],
            )
            .unwrap();
        row
    }

    /// A store whose first hour holds 10 (at :10) and 20 (at :20), compacted once with
    /// rollups on: the compactor and the hour's row, for more of the same.
    fn compacted_hour(dir: &std::path::Path) -> (SharedStore, Compactor, Vec<u8>) {
        let (store, b) = setup(dir);
        let row = put(&store, HOUR, 10, 10);
        put(&store, HOUR, 20, 20);
        let compactor = Compactor::new(store.clone(), "tsdb").with_rollups(Some(b));
        assert!(compactor.compact(std::slice::from_ref(&row)).is_empty());
        (store, compactor, row)
    }

    fn cells(store: &SharedStore, table: &str) -> Vec<String> {
        let mut out = Vec::new();
        for row in store.scan(table, &Scan::default()).unwrap() {
            let row = row.unwrap();
            for c in &row.cells {
                let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
                out.push(format!(
                    "{} {} {}",
                    hex(&row.key),
                    hex(&c.qualifier),
                    hex(&c.value)
                ));
            }
        }
        out
    }

    #[test]
    fn compaction_builds_the_hour_and_the_day_and_a_late_point_recomputes() {
        let dir = tempfile::tempdir().unwrap();
        let (store, compactor, row) = compacted_hour(dir.path());
        let day_row = "00000150e22700000001000001";
        assert_eq!(
            cells(&store, "tsdb-rollup-1h"),
            [
                format!("{day_row} 000000 1e"),
                format!("{day_row} 010000 02"),
                format!("{day_row} 020000 0a"),
                format!("{day_row} 030000 14"),
            ]
        );
        // 1d in a one-year row: 2013's row, day 0; from the 1h cells.
        assert_eq!(
            cells(&store, "tsdb-rollup-1d"),
            [
                format!("{day_row} 000000 1e"),
                format!("{day_row} 010000 02"),
                format!("{day_row} 020000 0a"),
                format!("{day_row} 030000 14"),
            ]
        );
        // A late point into the closed hour, and a point in the day's 13th hour.
        put(&store, HOUR, 3599, 5);
        let other = put(&store, HOUR + 13 * 3600, 0, 100);
        assert!(compactor.compact(&[row.clone(), other]).is_empty());
        let h = cells(&store, "tsdb-rollup-1h");
        assert!(h.contains(&format!("{day_row} 000000 23")), "{h:?}"); // 35
        assert!(h.contains(&format!("{day_row} 010000 03")), "{h:?}");
        assert!(h.contains(&format!("{day_row} 020000 05")), "{h:?}");
        assert!(h.contains(&format!("{day_row} 0000d0 64")), "{h:?}"); // 13:00, 100
        assert_eq!(h.len(), 8, "{h:?}");
        assert_eq!(
            cells(&store, "tsdb-rollup-1d"),
            [
                format!("{day_row} 000001 0087"), // 135 on two bytes (flags 1)
                format!("{day_row} 010000 04"),
                format!("{day_row} 020000 05"),
                format!("{day_row} 030000 64"),
            ]
        );
        // Compacting again (already compact) changes nothing: cells are recomputed, not added.
        assert!(compactor.compact(std::slice::from_ref(&row)).is_empty());
        assert_eq!(
            cells(&store, "tsdb-rollup-1d")[0],
            format!("{day_row} 000001 0087")
        );
    }

    /// The cell timestamps of a table's cells, by qualifier (hex).
    fn stamps(store: &SharedStore, table: &str) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for row in store.scan(table, &Scan::default()).unwrap() {
            for c in row.unwrap().cells {
                let q: String = c.qualifier.iter().map(|x| format!("{x:02x}")).collect();
                out.push((q, c.timestamp));
            }
        }
        out
    }

    /// A recomputed cell whose value did not change is not written again: each hour's
    /// compaction recomputes its day's `1d` cells, and every put would leave a version that
    /// reads step over until the engine merges it.
    #[test]
    fn unchanged_cells_are_not_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let (store, compactor, row) = compacted_hour(dir.path());
        let (h, d) = (
            stamps(&store, "tsdb-rollup-1h"),
            stamps(&store, "tsdb-rollup-1d"),
        );
        assert_eq!(d.len(), 4);
        // The store stamps writes in milliseconds: a rewrite now would carry a later stamp.
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(compactor.compact(std::slice::from_ref(&row)).is_empty());
        assert_eq!(stamps(&store, "tsdb-rollup-1h"), h);
        assert_eq!(stamps(&store, "tsdb-rollup-1d"), d);
        // A late point of 15 changes the sum and the count, not the minimum nor the maximum.
        std::thread::sleep(std::time::Duration::from_millis(20));
        put(&store, HOUR, 30, 15);
        assert!(compactor.compact(std::slice::from_ref(&row)).is_empty());
        for (table, before) in [("tsdb-rollup-1h", &h), ("tsdb-rollup-1d", &d)] {
            let after = stamps(&store, table);
            assert_eq!(after.len(), 4, "{table}: {after:?}");
            for ((q, t0), (q1, t1)) in before.iter().zip(&after) {
                assert_eq!(q, q1, "{table}");
                // Aggregator ids: sum 0, count 1, min 2, max 3.
                if q.starts_with("00") || q.starts_with("01") {
                    assert!(t1 > t0, "{table} {q} was rewritten");
                } else {
                    assert_eq!(t1, t0, "{table} {q} was left as it was");
                }
            }
        }
        assert_eq!(
            cells(&store, "tsdb-rollup-1d"),
            [
                "00000150e22700000001000001 000000 2d",
                "00000150e22700000001000001 010000 03",
                "00000150e22700000001000001 020000 0a",
                "00000150e22700000001000001 030000 14",
            ]
        );
    }
}
