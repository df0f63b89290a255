//! Selectors: which series each selector needs over which time span (offset, `@` and
//! subqueries widen it), one fetch per selector, and per-step access: the instant sample
//! within the lookback (a stale marker hides the series) and range windows (stale markers
//! dropped). 2.42 closes both ends of lookback and range windows.

use super::{selector_matchers, LabelSet, PromError, Settings};
use crate::QueryEngine;
use promql_parser::parser::{AtModifier, Expr, Offset, VectorSelector};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use tsgate_prometheus::is_stale_nan;

/// One fetched series.
pub struct SeriesData {
    pub labels: LabelSet,
    /// Every point, stale markers included.
    pub all: Vec<(i64, f64)>,
    /// The points without stale markers, when there were any.
    pub nostale: Option<Vec<(i64, f64)>>,
    /// `labels` without `__name__` (what most functions return), made once per query.
    pub no_name: LabelSet,
}

impl SeriesData {
    pub fn ranged(&self) -> &[(i64, f64)] {
        self.nostale.as_deref().unwrap_or(&self.all)
    }
}

/// Selector identity: its address in the (immutable) parsed expression.
pub fn key(vs: &VectorSelector) -> usize {
    vs as *const VectorSelector as usize
}

pub type Data = HashMap<usize, Vec<SeriesData>>;

pub fn dur_ms(d: &Duration) -> i64 {
    d.as_millis() as i64
}

pub fn offset_ms(o: &Option<Offset>) -> i64 {
    match o {
        None => 0,
        Some(Offset::Pos(d)) => dur_ms(d),
        Some(Offset::Neg(d)) => -dur_ms(d),
    }
}

/// The `@` time in ms, given the query's start and end.
pub fn at_ms(at: &Option<AtModifier>, start: i64, end: i64) -> Option<i64> {
    match at {
        None => None,
        Some(AtModifier::Start) => Some(start),
        Some(AtModifier::End) => Some(end),
        Some(AtModifier::At(t)) => Some(match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            Err(e) => -(e.duration().as_millis() as i64),
        }),
    }
}

/// Widens `spans` with what `e` needs when evaluated at times in `[tmin, tmax]`.
pub(crate) fn spans(
    e: &Expr,
    tmin: i64,
    tmax: i64,
    q: (i64, i64),
    s: &Settings,
    out: &mut HashMap<usize, (i64, i64, *const VectorSelector)>,
) {
    let mut add = |vs: &VectorSelector, back: i64| {
        let o = offset_ms(&vs.offset);
        let (lo, hi) = match at_ms(&vs.at, q.0, q.1) {
            Some(a) => (a - o, a - o),
            None => (tmin - o, tmax - o),
        };
        let entry = out
            .entry(key(vs))
            .or_insert((i64::MAX, i64::MIN, vs as *const _));
        entry.0 = entry.0.min(lo - back);
        entry.1 = entry.1.max(hi);
    };
    match e {
        Expr::VectorSelector(vs) => add(vs, s.lookback_ms),
        Expr::MatrixSelector(ms) => add(&ms.vs, dur_ms(&ms.range)),
        Expr::Subquery(sq) => {
            let o = offset_ms(&sq.offset);
            let (lo, hi) = match at_ms(&sq.at, q.0, q.1) {
                Some(a) => (a - o, a - o),
                None => (tmin - o, tmax - o),
            };
            spans(&sq.expr, lo - dur_ms(&sq.range), hi, q, s, out);
        }
        Expr::Aggregate(a) => {
            spans(&a.expr, tmin, tmax, q, s, out);
            if let Some(p) = &a.param {
                spans(p, tmin, tmax, q, s, out);
            }
        }
        Expr::Unary(u) => spans(&u.expr, tmin, tmax, q, s, out),
        Expr::Binary(b) => {
            spans(&b.lhs, tmin, tmax, q, s, out);
            spans(&b.rhs, tmin, tmax, q, s, out);
        }
        Expr::Paren(p) => spans(&p.expr, tmin, tmax, q, s, out),
        Expr::Call(c) => {
            for a in &c.args.args {
                spans(a, tmin, tmax, q, s, out);
            }
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

/// A series given in memory: its labels, sorted by name, and its points (ms, value).
pub type MemSeries = (Vec<(String, String)>, Vec<(i64, f64)>);

/// Builds the fetched data from series given in memory (tests and the fuzz targets).
pub fn data_from(
    expr: &Expr,
    series: &[MemSeries],
    start: i64,
    end: i64,
    s: Settings,
) -> Result<Data, PromError> {
    let mut need = HashMap::new();
    spans(expr, start, end, (start, end), &s, &mut need);
    let mut data = Data::new();
    for (k, (lo, hi, vs)) in need {
        // SAFETY: the pointer was taken from `expr`, which outlives this call and is not mutated.
        let vs: &VectorSelector = unsafe { &*vs };
        let ms = selector_matchers(vs)?;
        let found = series
            .iter()
            .filter(|(l, _)| crate::select::labels_match(l, &ms))
            .map(|(l, p)| {
                let all: Vec<(i64, f64)> = p
                    .iter()
                    .copied()
                    .filter(|x| x.0 >= lo && x.0 <= hi)
                    .collect();
                let nostale = all
                    .iter()
                    .any(|p| is_stale_nan(p.1))
                    .then(|| all.iter().copied().filter(|p| !is_stale_nan(p.1)).collect());
                let labels = Arc::new(l.clone());
                SeriesData {
                    no_name: super::eval::drop_name(&labels),
                    labels,
                    all,
                    nostale,
                }
            })
            .collect();
        data.insert(k, found);
    }
    Ok(data)
}

/// Fetches every selector of `expr` once, for evaluation times `[start, end]`.
pub fn fetch(
    store: &QueryEngine,
    expr: &Expr,
    start: i64,
    end: i64,
    s: Settings,
) -> Result<Data, PromError> {
    let mut need = HashMap::new();
    spans(expr, start, end, (start, end), &s, &mut need);
    let mut data = Data::new();
    let mut loaded = 0usize;
    for (k, (lo, hi, vs)) in need {
        // SAFETY: the pointer was taken from `expr`, which outlives this call and is not mutated.
        let vs: &VectorSelector = unsafe { &*vs };
        let matchers = selector_matchers(vs)?;
        s.check_deadline("query preparation")?;
        let found = match super::rollups::marked(store.rollups.as_deref(), &matchers)? {
            Some((read, rest)) => super::rollups::select(store, &rest, &read, lo, hi)?,
            None => store.select(&matchers, lo, hi, true)?,
        };
        let mut series = Vec::with_capacity(found.len());
        for f in found {
            loaded += f.points.len();
            if loaded > s.max_samples {
                return Err(PromError::too_many_samples("query execution"));
            }
            let nostale = f.points.iter().any(|p| is_stale_nan(p.1)).then(|| {
                f.points
                    .iter()
                    .copied()
                    .filter(|p| !is_stale_nan(p.1))
                    .collect()
            });
            let labels = Arc::new(f.labels);
            series.push(SeriesData {
                no_name: super::eval::drop_name(&labels),
                labels,
                all: f.points,
                nostale,
            });
        }
        data.insert(k, series);
    }
    Ok(data)
}

/// The newest sample at or before `t` and no older than the lookback; none if it is stale.
pub fn instant_at(points: &[(i64, f64)], t: i64, lookback: i64) -> Option<(i64, f64)> {
    let idx = points.partition_point(|p| p.0 <= t);
    if idx == 0 {
        return None;
    }
    let p = points[idx - 1];
    if p.0 < t - lookback || is_stale_nan(p.1) {
        return None;
    }
    Some(p)
}

/// Points with `lo ≤ ts ≤ hi`.
pub fn window(points: &[(i64, f64)], lo: i64, hi: i64) -> &[(i64, f64)] {
    let a = points.partition_point(|p| p.0 < lo);
    let b = points.partition_point(|p| p.0 <= hi);
    &points[a..b.max(a)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookback_is_closed_and_stale_hides() {
        let stale = f64::from_bits(tsgate_prometheus::STALE_NAN_BITS);
        let pts = [(0, 1.0), (10_000, 2.0), (20_000, stale)];
        assert_eq!(instant_at(&pts, 5_000, 300_000), Some((0, 1.0)));
        assert_eq!(
            instant_at(&pts, 300_000 + 10_000, 300_000),
            None,
            "stale marker is newest"
        );
        assert_eq!(
            instant_at(&pts[..2], 310_000, 300_000),
            Some((10_000, 2.0)),
            "closed lower bound"
        );
        assert_eq!(instant_at(&pts[..2], 310_001, 300_000), None);
        assert_eq!(instant_at(&pts, -1, 300_000), None);
        assert_eq!(window(&pts, 0, 10_000), &pts[..2]);
        assert_eq!(window(&pts, 1, 9_999), &[]);
    }
}
