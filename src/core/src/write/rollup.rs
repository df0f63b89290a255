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
        let mut ivs: Vec<&RollupInterval> = rollups.intervals.iter().filter(|i| !i.default).collect();
        ivs.sort_by_key(|i| i.interval_s);
        let mut targets: Vec<Target> = Vec::new();
        for iv in ivs {
            let source = if 3600 % iv.interval_s == 0 {
                Some(Source::Raw)
            } else if iv.interval_s % 3600 == 0 {
                targets
                    .iter()
                    .rposition(|t| iv.interval_s % t.interval.interval_s == 0)
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
                    if !coarse.iter().any(|(i, s, b)| *i == ti && *s == tsuid && *b == start) {
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
                batches.entry(iv.table.as_str()).or_default().push(RowMutations {
                    row: key,
                    mutations: muts,
                });
            }
        }
        for (table, batch) in batches {
            store.mutate(table, batch)?;
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
        Ok(Some(RowMutations {
            row: self.layout.row_key(tsuid, base),
            mutations: self.cells(iv, base, &accs),
        }))
    }
}

/// The start of `iv`'s interval holding `ts` (seconds).
fn interval_start(iv: &RollupInterval, ts: u64) -> u64 {
    let base = iv.base_time(ts) as u64;
    base + (ts - base) / iv.interval_s as u64 * iv.interval_s as u64
}
