//! Deleting series by label selectors (Prometheus' `delete_series`, graphite-web's
//! `delSeries`): every row of a matching series in the window goes, whole rows as one delete
//! (annotations included), the edge hours rewritten without the deleted points.

use super::select::{labels_match, Matcher};
use super::{QueryEngine, QueryError};
use std::collections::HashMap;
use tsgate_core::prometheus::labels::from_stored;
use tsgate_schema::rowkey::{base_time, ROW_SPAN};
use tsgate_schema::uid_table::UidKind;
use tsgate_store::{Mutation, RowMutations, Scan};

/// What a deletion removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// TSUIDs of the series that had rows in the window.
    pub series: Vec<Vec<u8>>,
    /// Rows deleted whole, and rows rewritten without some of their points.
    pub rows: u64,
    pub partial_rows: u64,
}

impl Deleted {
    fn add(&mut self, o: Deleted) {
        self.series.extend(o.series);
        self.rows += o.rows;
        self.partial_rows += o.partial_rows;
    }
}

impl QueryEngine {
    /// Deletes the points in `[start_ms, end_ms]` of every series any selector matches.
    pub fn delete_series(
        &self,
        selectors: &[Vec<Matcher>],
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Deleted, QueryError> {
        let mut out = Deleted::default();
        for matchers in selectors {
            let metrics = self.candidate_metrics(matchers)?;
            let d = self.delete_where(&metrics, start_ms, end_ms, |metric, tags| {
                let labels =
                    from_stored(metric, tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                labels_match(&labels, matchers)
            })?;
            out.add(d);
        }
        out.series.sort();
        out.series.dedup();
        Ok(out)
    }

    /// Deletes every point of the series of `metric` whose tags (stored names) are `tags`.
    pub fn delete_exact(
        &self,
        metric: &str,
        tags: &[(String, String)],
    ) -> Result<Deleted, QueryError> {
        let mut want: Vec<&(String, String)> = tags.iter().collect();
        want.sort();
        self.delete_where(&[metric.to_string()], 0, i64::MAX, |_, t| {
            let mut have: Vec<&(String, String)> = t.iter().collect();
            have.sort();
            have == want
        })
    }

    /// Deletes the points in the window of the series of `metrics` that `hit` accepts (by their
    /// metric and stored tag names).
    fn delete_where(
        &self,
        metrics: &[String],
        start_ms: i64,
        end_ms: i64,
        hit: impl Fn(&str, &[(String, String)]) -> bool,
    ) -> Result<Deleted, QueryError> {
        let start_s = (start_ms.max(0) / 1000) as u64;
        let end_s = (end_ms.max(0) as u64 / 1000).min(u32::MAX as u64);
        let first = base_time(start_s);
        let last = base_time(end_s);
        let mut out = Deleted::default();
        let mut names: HashMap<(UidKind, Vec<u8>), String> = HashMap::new();
        let mut name = |kind: UidKind, uid: &[u8]| -> Result<String, QueryError> {
            if let Some(n) = names.get(&(kind, uid.to_vec())) {
                return Ok(n.clone());
            }
            let n = self.uids.get_name(kind, uid)?.to_string();
            names.insert((kind, uid.to_vec()), n.clone());
            Ok(n)
        };
        let mut whole = Vec::new();
        let mut partial = Vec::new();
        {
            for metric in metrics {
                let Some(muid) = self.uids.get_id(UidKind::Metric, metric)? else {
                    continue;
                };
                let mut verdicts: HashMap<Vec<u8>, bool> = HashMap::new();
                for salt in self.layout.salt_prefixes() {
                    let scan = Scan {
                        start: self.layout.metric_start(&salt, &muid, first),
                        stop: self.layout.metric_start(&salt, &muid, u32::MAX),
                        families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                        ..Default::default()
                    };
                    for row in self.store.scan(&self.table, &scan)? {
                        let row = row?;
                        let Ok(rk) = self.layout.parse(&row.key) else {
                            continue;
                        };
                        if rk.base > last {
                            continue;
                        }
                        let tsuid = rk.tsuid();
                        let hit = match verdicts.get(&tsuid) {
                            Some(v) => *v,
                            None => {
                                let mut tags = Vec::new();
                                for (k, v) in rk.tag_pairs() {
                                    tags.push((name(UidKind::Tagk, k)?, name(UidKind::Tagv, v)?));
                                }
                                let hit = hit(metric, &tags);
                                verdicts.insert(tsuid.clone(), hit);
                                if hit && !out.series.contains(&tsuid) {
                                    out.series.push(tsuid);
                                }
                                hit
                            }
                        };
                        if !hit {
                            continue;
                        }
                        let (base, row_base) = (rk.base as u64, rk.base);
                        if base >= start_s && base + ROW_SPAN - 1 <= end_s {
                            whole.push(RowMutations {
                                row: row.key,
                                mutations: vec![Mutation::DeleteRow],
                            });
                        } else {
                            partial.push((row.key, row_base));
                        }
                    }
                }
            }
        }
        out.rows = whole.len() as u64;
        out.partial_rows = partial.len() as u64;
        for chunk in whole.chunks(1000) {
            self.store.mutate(&self.table, chunk.to_vec())?;
        }
        self.delete_range(
            &self.table,
            &partial,
            start_ms.max(0) as u64,
            end_ms.max(0) as u64,
        )?;
        Ok(out)
    }
}
