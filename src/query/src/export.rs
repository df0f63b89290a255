//! Raw points of the series some selectors match, for export (VictoriaMetrics' JSON lines,
//! OpenTSDB's import format): each value as stored, an integer an integer and a float a float,
//! so that an export imported again stores the same values. A metric is read one window of
//! hours at a time and its series handed out per window, so memory holds one metric's window,
//! never its whole history (a series spanning several windows comes out once per window, as
//! VictoriaMetrics' export repeats a series once per block).

use super::decode::{append_points, with_columns};
use super::seek::RowFilter;
use super::select::{labels_match, stop_on_error, Matcher, MetricPlan, Window};
use super::{QueryEngine, QueryError};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tsgate_core::prometheus::labels::from_stored;
use tsgate_schema::rowkey::ROW_SPAN;
use tsgate_schema::uid_table::UidKind;
use tsgate_schema::DataValue;
use tsgate_store::CellRef;

/// Hours of one metric read (and held) at once: a UTC day.
pub const WINDOW_HOURS: u32 = 24;

/// One series' points in one window, names as stored (escaped, placeholder tag included).
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub metric: String,
    pub tags: Arc<Vec<(String, String)>>,
    /// (ms, value), in time order.
    pub points: Vec<(u64, DataValue)>,
}

/// What an export read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ExportCount {
    pub series_windows: u64,
    pub points: u64,
}

type Tags = Arc<Vec<(String, String)>>;
/// A window's series by TSUID: tags and points.
type WindowSeries = HashMap<Vec<u8>, (Tags, Vec<(u64, DataValue)>)>;

impl QueryEngine {
    /// Every series at least one of `selectors` matches (each a Prometheus selector's
    /// matchers; a series two of them match comes out once) with points in
    /// `[start_ms, end_ms]`, to `f`: metric by metric in name order, window by window, the
    /// series of a window in the order of their stored tags.
    pub fn export_each(
        &self,
        selectors: &[Vec<Matcher>],
        start_ms: i64,
        end_ms: i64,
        f: &mut dyn FnMut(Exported) -> Result<(), QueryError>,
    ) -> Result<ExportCount, QueryError> {
        let mut count = ExportCount::default();
        let Some(w) = Window::new(start_ms, end_ms) else {
            return Ok(count);
        };
        let mut plans: Vec<MetricPlan> = Vec::new();
        for ms in selectors {
            if let Some(p) = self.select_plan(ms)? {
                plans.push(p);
            }
        }
        let mut by_metric: BTreeMap<&str, Vec<&MetricPlan>> = BTreeMap::new();
        for p in &plans {
            for m in &p.metrics {
                by_metric.entry(m.as_str()).or_default().push(p);
            }
        }
        let step = WINDOW_HOURS * ROW_SPAN as u32;
        for (metric, plans) in by_metric {
            let Some(uid) = self.uids.get_id(UidKind::Metric, metric)? else {
                continue;
            };
            // One selector's row filter narrows the scan; several would each need their own.
            let filter = match plans.as_slice() {
                [one] => one.row_filter.clone(),
                _ => RowFilter::default(),
            };
            let keep = |tags: &[(String, String)]| {
                plans.iter().any(|p| {
                    p.label_ms.is_empty()
                        || labels_match(
                            &from_stored(metric, tags.iter().map(|(k, v)| (&**k, &**v))),
                            &p.label_ms,
                        )
                })
            };
            // Per TSUID, across windows: its tags if kept.
            let mut seen: HashMap<Vec<u8>, Option<Tags>> = HashMap::new();
            let mut first = w.first;
            while first < w.last {
                // Windows end on UTC days, whatever the start: the same lines for any range.
                let last = ((first / step + 1) as u64 * step as u64).min(w.last as u64) as u32;
                let mut window: WindowSeries = HashMap::new();
                let mut failed = None;
                for scan in self.metric_scans(&uid, first, last, &filter) {
                    let mut body = |key: &[u8], cells: &[CellRef]| -> Result<(), QueryError> {
                        let Ok(rk) = self.layout.parse(key) else {
                            return Ok(());
                        };
                        let tsuid = rk.tsuid();
                        let tags = match seen.get(&tsuid) {
                            Some(t) => t.clone(),
                            None => {
                                let mut named = Vec::new();
                                for pair in rk.tags.chunks_exact(self.layout.tag_width()) {
                                    let (k, v) = pair.split_at(self.layout.tagk_width);
                                    named.push((
                                        self.uids.get_name(UidKind::Tagk, k)?.to_string(),
                                        self.uids.get_name(UidKind::Tagv, v)?.to_string(),
                                    ));
                                }
                                let t = keep(&named).then(|| Arc::new(named));
                                seen.insert(tsuid.clone(), t.clone());
                                t
                            }
                        };
                        let Some(tags) = tags else {
                            return Ok(());
                        };
                        let entry = window.entry(tsuid).or_insert_with(|| (tags, Vec::new()));
                        with_columns(cells, |cols| {
                            append_points(
                                key,
                                cols,
                                rk.base,
                                w.start,
                                w.end,
                                &mut entry.1,
                                |ts, v| (ts, v),
                                |_| {},
                            )
                        })
                    };
                    self.store.scan_rows(
                        &self.table,
                        &scan,
                        &mut stop_on_error(&mut body, &mut failed),
                    )?;
                    if let Some(e) = failed.take() {
                        return Err(e);
                    }
                }
                let mut series: Vec<(Tags, Vec<(u64, DataValue)>)> = window
                    .into_values()
                    .filter(|(_, p)| !p.is_empty())
                    .collect();
                series.sort_by(|a, b| a.0.cmp(&b.0));
                for (tags, mut points) in series {
                    // Rows of one series come in hour order within a salt bucket, not across.
                    if !points.windows(2).all(|p| p[0].0 <= p[1].0) {
                        points.sort_by_key(|p| p.0);
                    }
                    count.series_windows += 1;
                    count.points += points.len() as u64;
                    f(Exported {
                        metric: metric.to_string(),
                        tags,
                        points,
                    })?;
                }
                first = last;
            }
        }
        Ok(count)
    }
}
