//! Reading series back: bounded scans of `tsdb`, row decoding (compacted, single and append
//! columns merged as OpenTSDB merges them), tag filtering and group-by aggregation.
//! The full OpenTSDB query language is built on this in its own module.

pub mod aggregate;
pub mod numfmt;
pub mod select;
pub mod time;

use crate::schema::compaction::{merge_columns, StoredColumn};
use crate::schema::rowkey::{base_time, ROW_SPAN};
use crate::schema::uid_table::UidKind;
use crate::schema::{DataValue, KeyLayout};
use crate::store::{Scan, SharedStore, StoreError};
use crate::uid::{UidCore, UidError};
use aggregate::Aggregator;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    BadRequest(String),
    #[error(transparent)]
    Uid(#[from] UidError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Corrupt(String),
}

/// Which values of a tag key a series must have.
#[derive(Debug, Clone, PartialEq)]
pub enum TagFilter {
    /// One of these values (OpenTSDB's `literal_or`, `a|b`); grouped when `group_by`.
    Literal { values: Vec<String>, group_by: bool },
    /// Any value, grouped by it (`*`).
    Any,
}

#[derive(Debug, Clone)]
pub struct SubQuery {
    pub metric: String,
    pub aggregator: Aggregator,
    pub filters: Vec<(String, TagFilter)>,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub start_ms: u64,
    pub end_ms: u64,
    pub queries: Vec<SubQuery>,
}

/// One decoded series within the query range.
#[derive(Debug, Clone)]
pub struct Series {
    pub tsuid: Vec<u8>,
    pub tags: BTreeMap<String, String>,
    pub points: Vec<(u64, DataValue)>,
}

/// One output series: a group of input series aggregated into one.
#[derive(Debug, Clone)]
pub struct ResultSeries {
    pub metric: String,
    pub tags: BTreeMap<String, String>,
    pub aggregate_tags: Vec<String>,
    pub tsuids: Vec<String>,
    pub dps: Vec<(u64, aggregate::Num)>,
}

pub struct QueryEngine {
    pub store: SharedStore,
    pub uids: Arc<UidCore>,
    pub layout: KeyLayout,
    pub table: String,
}

impl QueryEngine {
    /// Every series of `metric` with points in `[start_ms, end_ms]` passing the filters.
    pub fn fetch(&self, metric: &str, filters: &[(String, TagFilter)], start_ms: u64, end_ms: u64) -> Result<Vec<Series>, QueryError> {
        let m = self.uids.require_id(UidKind::Metric, metric)?;
        // Resolve filters to UIDs up front; an unknown name is OpenTSDB's 400.
        let mut uid_filters: Vec<(Vec<u8>, Option<Vec<Vec<u8>>>)> = Vec::new();
        for (k, f) in filters {
            let kid = self.uids.require_id(UidKind::Tagk, k)?.into_vec();
            let vals = match f {
                TagFilter::Any => None,
                TagFilter::Literal { values, .. } => {
                    let mut v = Vec::new();
                    for x in values {
                        v.push(self.uids.require_id(UidKind::Tagv, x)?.into_vec());
                    }
                    Some(v)
                }
            };
            uid_filters.push((kid, vals));
        }
        let first = base_time(start_ms / 1000);
        let last = base_time(end_ms / 1000) as u64 + ROW_SPAN;
        let mut series: HashMap<Vec<u8>, Series> = HashMap::new();
        for salt in self.layout.salt_prefixes() {
            let scan = Scan {
                start: self.layout.metric_start(&salt, &m, first),
                stop: self.layout.metric_start(&salt, &m, last.min(u32::MAX as u64) as u32),
                families: vec![b"t".to_vec()],
                ..Default::default()
            };
            let scan = if last > u32::MAX as u64 {
                let mut stop = salt.clone();
                let mut next = m.to_vec();
                increment_bytes(&mut next);
                stop.extend_from_slice(&next);
                Scan { stop, ..scan }
            } else {
                scan
            };
            for row in self.store.scan(&self.table, &scan)? {
                let row = row?;
                let Ok(rk) = self.layout.parse(&row.key) else { continue };
                let pairs: Vec<(&[u8], &[u8])> = rk.tag_pairs().collect();
                let pass = uid_filters.iter().all(|(k, vals)| {
                    pairs.iter().any(|(pk, pv)| *pk == k.as_slice() && vals.as_ref().is_none_or(|vs| vs.iter().any(|v| v.as_slice() == *pv)))
                });
                if !pass {
                    continue;
                }
                let cols: Vec<StoredColumn> = row
                    .cells
                    .iter()
                    .map(|c| StoredColumn { qualifier: &c.qualifier, value: &c.value, ts: c.timestamp })
                    .collect();
                let merged = merge_columns(&cols);
                if let Some((q, e)) = merged.errors.first() {
                    return Err(QueryError::Corrupt(format!(
                        "row {} column {}: {e}",
                        crate::schema::hex_upper(&row.key),
                        crate::schema::hex_upper(q)
                    )));
                }
                let tsuid = rk.tsuid();
                let entry = match series.get_mut(&tsuid) {
                    Some(s) => s,
                    None => {
                        let mut tags = BTreeMap::new();
                        for (k, v) in &pairs {
                            tags.insert(
                                self.uids.get_name(UidKind::Tagk, k)?.into(),
                                self.uids.get_name(UidKind::Tagv, v)?.into(),
                            );
                        }
                        series.entry(tsuid.clone()).or_insert(Series { tsuid, tags, points: Vec::new() })
                    }
                };
                for p in merged.points {
                    let ts = p.timestamp_ms(rk.base);
                    if ts >= start_ms && ts <= end_ms {
                        let v = p.value().map_err(|e| QueryError::Corrupt(e.to_string()))?;
                        entry.points.push((ts, v));
                    }
                }
            }
        }
        let mut out: Vec<Series> = series.into_values().filter(|s| !s.points.is_empty()).collect();
        for s in &mut out {
            s.points.sort_by_key(|p| p.0);
        }
        out.sort_by(|a, b| a.tsuid.cmp(&b.tsuid));
        Ok(out)
    }

    pub fn run(&self, q: &Query) -> Result<Vec<ResultSeries>, QueryError> {
        if q.end_ms < q.start_ms {
            return Err(QueryError::BadRequest(format!(
                "End time [{}] must be greater than or equal to the start time [{}]",
                q.end_ms, q.start_ms
            )));
        }
        let mut out = Vec::new();
        for sq in &q.queries {
            let series = self.fetch(&sq.metric, &sq.filters, q.start_ms, q.end_ms)?;
            out.extend(group_and_aggregate(sq, series));
        }
        Ok(out)
    }
}

fn increment_bytes(b: &mut Vec<u8>) {
    for i in (0..b.len()).rev() {
        if b[i] < 0xFF {
            b[i] += 1;
            b.truncate(i + 1);
            return;
        }
    }
}

/// Groups series by the values of their group-by tag keys and aggregates each group.
pub fn group_and_aggregate(sq: &SubQuery, series: Vec<Series>) -> Vec<ResultSeries> {
    let group_keys: Vec<&str> = sq
        .filters
        .iter()
        .filter(|(_, f)| matches!(f, TagFilter::Any | TagFilter::Literal { group_by: true, .. }))
        .map(|(k, _)| k.as_str())
        .collect();
    let mut groups: BTreeMap<Vec<String>, Vec<Series>> = BTreeMap::new();
    if sq.aggregator == Aggregator::None {
        // No aggregation: every series is its own group.
        for s in series {
            groups.insert(vec![crate::schema::hex_upper(&s.tsuid)], vec![s]);
        }
    } else {
        for s in series {
            let key = group_keys.iter().map(|k| s.tags.get(*k).cloned().unwrap_or_default()).collect();
            groups.entry(key).or_default().push(s);
        }
    }
    groups
        .into_values()
        .map(|members| {
            let mut tags: BTreeMap<String, String> = BTreeMap::new();
            let mut agg_tags: Vec<String> = Vec::new();
            for s in &members {
                for (k, v) in &s.tags {
                    if agg_tags.contains(k) {
                        continue;
                    }
                    match tags.get(k) {
                        Some(existing) if existing != v => {
                            tags.remove(k);
                            agg_tags.push(k.clone());
                        }
                        Some(_) => {}
                        None => {
                            tags.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            agg_tags.sort();
            let tsuids = members.iter().map(|s| crate::schema::hex_upper(&s.tsuid)).collect();
            let inputs: Vec<&[(u64, DataValue)]> = members.iter().map(|s| s.points.as_slice()).collect();
            ResultSeries { metric: sq.metric.clone(), tags, aggregate_tags: agg_tags, tsuids, dps: aggregate::aggregate(sq.aggregator, &inputs) }
        })
        .collect()
}
