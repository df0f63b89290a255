//! PromQL over rollups, as Thanos reads its downsampled blocks: a `*_over_time` function
//! over a plain range selector (no `offset`, no `@`, not inside a subquery) reads a rollup
//! interval's aggregates instead of raw samples when the request allows a coarser resolution
//! (`max_source_resolution`, Thanos' parameter) or when raw data no longer reaches back to the
//! window (`storage.retention`). Everything else reads raw samples, so that where raw data
//! exists answers are exactly as before unless a coarser resolution is asked for.
//!
//! | function | reads | computed as |
//! |---|---|---|
//! | `sum_over_time` | `sum` cells | their sum |
//! | `count_over_time` | `count` cells | their sum |
//! | `min_over_time`, `max_over_time` | `min`, `max` cells | their min, max |
//! | `avg_over_time` | `sum` and `count` cells | the mean of each interval's sum / count (Thanos' answer: the raw one when the intervals hold as many samples each) |
//!
//! A rollup interval serves a range only when it divides it. Each interval's value is a sample
//! at the interval's last millisecond, so a window `[t - r, t]` whose `t` and `r` are
//! multiples of the interval holds exactly its `r / interval` whole intervals (raw data would
//! also count a sample at exactly `t - r`, which belongs to the interval before). Other
//! windows count the intervals that end inside them. `rate`, `increase`, `irate`, `delta`,
//! `changes`, `resets`, quantiles, `last_over_time`, `stddev_over_time` and instant selectors
//! stay raw: the aggregates tsgate keeps (sum, count, min, max) cannot give them.
//!
//! The choice is made by rewriting the expression: a selector to be read from a rollup gets a
//! matcher on the reserved label [`MARK`] naming the aggregator and interval, which
//! [`super::selectors::fetch`] takes off before it reads.

use super::{PromError, Settings};
use crate::rollup_read::{RollupRead, Stamp};
use crate::select::{labels_match, Matcher, Selected};
use crate::QueryEngine;
use promql_parser::label::{MatchOp, Matcher as PMatcher};
use promql_parser::parser::{Expr, MatrixSelector};
use tsgate_core::prometheus::labels::{from_stored, METRIC_NAME};
use tsgate_schema::rollup::Rollups;

/// The reserved label of a selector that reads a rollup: `"<aggregator>:<interval seconds>"`.
pub const MARK: &str = "__tsgate_rollup__";

/// The functions that read rollups, with the aggregators each needs.
const FUNCTIONS: &[(&str, &[&str])] = &[
    ("sum_over_time", &["sum"]),
    ("count_over_time", &["count"]),
    ("min_over_time", &["min"]),
    ("max_over_time", &["max"]),
    ("avg_over_time", &["sum", "count"]),
];

/// `expr` rewritten so that the selectors rollups serve read them, or None when none does
/// (then the query runs exactly as without rollups). `start` is the first evaluation time
/// (ms) and `now_ms` the wall clock, which retention counts from.
pub fn plan(
    rollups: Option<&Rollups>,
    expr: &Expr,
    start: i64,
    now_ms: i64,
    s: &Settings,
) -> Option<Expr> {
    let rollups = rollups?;
    if s.max_source_resolution_ms <= 0 && s.raw_retention_ms <= 0 {
        return None;
    }
    let mut e = expr.clone();
    let mut changed = false;
    rewrite(&mut e, rollups, start, now_ms, s, &mut changed);
    changed.then_some(e)
}

fn rewrite(
    e: &mut Expr,
    rollups: &Rollups,
    start: i64,
    now_ms: i64,
    s: &Settings,
    changed: &mut bool,
) {
    match e {
        Expr::Call(c) => {
            if let Some(new) = rewrite_call(c, rollups, start, now_ms, s) {
                *e = new;
                *changed = true;
                return;
            }
            for a in c.args.args.iter_mut() {
                rewrite(a, rollups, start, now_ms, s, changed);
            }
        }
        Expr::Aggregate(a) => {
            rewrite(&mut a.expr, rollups, start, now_ms, s, changed);
            if let Some(p) = a.param.as_mut() {
                rewrite(p, rollups, start, now_ms, s, changed);
            }
        }
        Expr::Unary(u) => rewrite(&mut u.expr, rollups, start, now_ms, s, changed),
        Expr::Binary(b) => {
            rewrite(&mut b.lhs, rollups, start, now_ms, s, changed);
            rewrite(&mut b.rhs, rollups, start, now_ms, s, changed);
        }
        Expr::Paren(p) => rewrite(&mut p.expr, rollups, start, now_ms, s, changed),
        // A subquery evaluates its inner expression at its own steps and offsets: raw.
        _ => {}
    }
}

/// The rollup interval (seconds) a function over a range of `range_ms` reads, if any: with
/// `max_source_resolution`, the longest dividing the range and no longer than it; else, when
/// raw data no longer reaches back to the window, the finest dividing the range.
pub fn interval_for(
    rollups: &Rollups,
    aggs: &[&str],
    range_ms: i64,
    lo_ms: i64,
    now_ms: i64,
    s: &Settings,
) -> Option<u32> {
    if aggs.iter().any(|a| rollups.id_for(a).is_err()) {
        return None;
    }
    let mut ivs: Vec<u32> = rollups
        .intervals
        .iter()
        .filter(|i| !i.default && range_ms > 0 && range_ms % (i.interval_s as i64 * 1000) == 0)
        .map(|i| i.interval_s)
        .collect();
    ivs.sort_unstable();
    if s.max_source_resolution_ms > 0 {
        if let Some(&i) = ivs
            .iter()
            .rev()
            .find(|&&i| i as i64 * 1000 <= s.max_source_resolution_ms)
        {
            return Some(i);
        }
    }
    let raw_expired = s.raw_retention_ms > 0 && lo_ms < now_ms - s.raw_retention_ms;
    if raw_expired {
        return ivs.first().copied();
    }
    None
}

fn rewrite_call(
    c: &promql_parser::parser::Call,
    rollups: &Rollups,
    start: i64,
    now_ms: i64,
    s: &Settings,
) -> Option<Expr> {
    let (name, aggs) = FUNCTIONS.iter().find(|(n, _)| *n == c.func.name)?;
    if c.args.args.len() != 1 {
        return None;
    }
    let Expr::MatrixSelector(ms) = &*c.args.args[0] else {
        return None;
    };
    if ms.vs.offset.is_some() || ms.vs.at.is_some() {
        return None;
    }
    let range_ms = ms.range.as_millis() as i64;
    let iv = interval_for(rollups, aggs, range_ms, start - range_ms, now_ms, s)?;
    let marked = |mark: &str| -> Expr {
        let mut m: MatrixSelector = ms.clone();
        m.vs.matchers
            .matchers
            .push(PMatcher::new(MatchOp::Equal, MARK, &format!("{mark}:{iv}")));
        Expr::MatrixSelector(m)
    };
    // The same function's call with another argument: the parser's own node, so that its
    // evaluation is the usual one.
    let call = |func: &str, arg: Expr| -> Option<Expr> {
        let mut e = super::parse(&format!("{func}(x[1s])")).ok()?;
        if let Expr::Call(c) = &mut e {
            *c.args.args[0] = arg;
        }
        Some(e)
    };
    Some(match *name {
        "sum_over_time" => call("sum_over_time", marked("sum"))?,
        "count_over_time" => call("sum_over_time", marked("count"))?,
        "min_over_time" => call("min_over_time", marked("min"))?,
        "max_over_time" => call("max_over_time", marked("max"))?,
        // Thanos' answer: each interval's average (its sum over its count), averaged.
        _ => call("avg_over_time", marked("avg"))?,
    })
}

/// The rollup a selector's matchers mark, and the matchers without the mark; None for a
/// selector of raw data.
pub fn marked(
    rollups: Option<&Rollups>,
    matchers: &[Matcher],
) -> Result<Option<(RollupRead, Vec<Matcher>)>, PromError> {
    let Some(at) = matchers.iter().position(|m| m.name == MARK) else {
        return Ok(None);
    };
    let bad = || PromError::BadData(format!("the label {MARK} is reserved"));
    let rollups = rollups.ok_or_else(bad)?;
    let (agg, secs) = matchers[at].value.split_once(':').ok_or_else(bad)?;
    let secs: u32 = secs.parse().map_err(|_| bad())?;
    let iv = rollups
        .intervals
        .iter()
        .find(|i| !i.default && i.interval_s == secs)
        .ok_or_else(bad)?;
    let read = RollupRead::for_function(rollups, iv, agg).ok_or_else(bad)?;
    let mut rest = matchers.to_vec();
    rest.remove(at);
    Ok(Some((read, rest)))
}

/// The series `matchers` select from `read`'s rollup table, each interval a sample at its
/// last millisecond, those in `[lo, hi]`.
pub fn select(
    store: &QueryEngine,
    matchers: &[Matcher],
    read: &RollupRead,
    lo: i64,
    hi: i64,
) -> Result<Vec<Selected>, PromError> {
    let label_ms: Vec<Matcher> = matchers
        .iter()
        .filter(|m| m.name != METRIC_NAME)
        .cloned()
        .collect();
    let metrics = store.candidate_metrics(matchers)?;
    let keep = |metric: &str, tags: &[(String, String)]| {
        label_ms.is_empty()
            || labels_match(
                &from_stored(metric, tags.iter().map(|(k, v)| (&**k, &**v))),
                &label_ms,
            )
    };
    let step = read.interval.interval_s as i64 * 1000;
    let mut out: Vec<Selected> = store
        .select_rollup(
            &metrics,
            read,
            (lo - step + 1, hi - step + 1),
            Stamp::LastMs,
            &Default::default(),
            &keep,
        )?
        .into_iter()
        .map(|s| Selected {
            labels: from_stored(&s.metric, s.tags.iter().map(|(k, v)| (&**k, &**v))),
            points: s.points,
        })
        .collect();
    out.sort_by(|a, b| a.labels.cmp(&b.labels));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollups() -> Rollups {
        let mut c = tsgate_core::config::rollup::RollupsConfig {
            enabled: true,
            ..Default::default()
        };
        c.build = true;
        c.compile("tsdb").unwrap().unwrap()
    }

    #[test]
    fn over_time_functions_read_rollups_only_when_allowed() {
        let r = rollups();
        let now = 1_700_000_000_000i64;
        let s = |msr: i64, ret: i64| Settings {
            max_source_resolution_ms: msr,
            raw_retention_ms: ret,
            ..Settings::default()
        };
        let h = 3_600_000;
        let iv = |aggs: &[&str], range: i64, lo: i64, st: Settings| {
            interval_for(&r, aggs, range, lo, now, &st)
        };
        // Raw data there and no coarser resolution asked: raw.
        assert_eq!(iv(&["sum"], 24 * h, now - 25 * h, s(0, 0)), None);
        // Asked: the longest interval dividing the range, no longer than asked.
        assert_eq!(iv(&["sum"], 24 * h, now, s(24 * h, 0)), Some(86_400));
        assert_eq!(iv(&["sum"], 24 * h, now, s(h, 0)), Some(3600));
        assert_eq!(iv(&["sum"], 90 * 60_000, now, s(24 * h, 0)), None);
        // Raw data expired before the window: the finest interval dividing the range.
        assert_eq!(iv(&["max"], 24 * h, now - 48 * h, s(0, 24 * h)), Some(3600));
        // An aggregator aggregationIds lacks: raw.
        assert_eq!(iv(&["first"], 24 * h, now - 48 * h, s(0, 24 * h)), None);
        // The rewrite: count_over_time sums count cells; rate stays raw.
        let e = crate::promql::parse("sum(count_over_time(m[1d])) + rate(m[1d])").unwrap();
        let p = plan(Some(&r), &e, now, now, &s(24 * h, 0))
            .unwrap()
            .to_string();
        assert!(
            p.contains("sum_over_time(m{__tsgate_rollup__=\"count:86400\"}[1d])"),
            "{p}"
        );
        assert!(p.contains("rate(m[1d])"), "{p}");
        assert!(plan(Some(&r), &e, now, now, &s(0, 0)).is_none());
        assert!(plan(None, &e, now, now, &s(24 * h, 0)).is_none());
    }
}
