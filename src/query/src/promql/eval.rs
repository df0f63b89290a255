//! The step evaluator: one expression at one time, over the fetched data. Offset and `@`
//! shift the time a selector or subquery sees; subqueries evaluate their inner expression at
//! absolute multiples of their step.

use super::selectors::{at_ms, dur_ms, instant_at, key, offset_ms, window, Data};
use super::{LabelSet, PromError, Settings, StepSeries};
use promql_parser::parser::{Expr, VectorSelector};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Sample {
    pub labels: LabelSet,
    pub v: f64,
}

/// A range vector series: its window of points, borrowed from the fetched data when possible.
#[derive(Debug, Clone)]
pub struct RangeSeries<'a> {
    pub labels: LabelSet,
    /// `labels` without `__name__`.
    pub no_name: LabelSet,
    pub points: Cow<'a, [(i64, f64)]>,
}

#[derive(Debug, Clone)]
pub enum Value<'a> {
    Scalar(f64),
    Str(String),
    Vector(Vec<Sample>),
    /// With the window it was taken over: (range start, range end, range length) in ms.
    Matrix(Vec<RangeSeries<'a>>),
}

impl Value<'_> {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Scalar(_) => "scalar",
            Value::Str(_) => "string",
            Value::Vector(_) => "instant vector",
            Value::Matrix(_) => "range vector",
        }
    }
}

pub struct Evaluator<'a> {
    pub data: &'a Data,
    pub start: i64,
    pub end: i64,
    pub settings: Settings,
    memo: Memo,
}

/// What a range query would otherwise recompute at every step for every series. Keyed by
/// the address of a label set's allocation, kept alive in the entry so the address is not
/// reused; the labels of fetched series are the same allocation at every step.
#[derive(Default)]
struct Memo {
    /// (aggregation, labels) → the group's labels, one allocation per distinct group.
    groups: RefCell<GroupMemo>,
    interned: RefCell<InternedLabels>,
    /// (selector, series) → its last window's bounds: steps move forward, so the next window
    /// is found by stepping on from there rather than searching the whole series again.
    cursors: RefCell<WindowCursors>,
}

/// (aggregation, address of a label set) → that label set (kept alive) and its group's labels.
type GroupMemo = HashMap<(usize, usize), (LabelSet, LabelSet), ahash::RandomState>;

/// Group labels → their one shared allocation.
type InternedLabels = HashMap<Vec<(String, String)>, LabelSet, ahash::RandomState>;

/// Selector (by address) → per series, its last window's bounds.
type WindowCursors = HashMap<usize, Vec<(usize, usize)>, ahash::RandomState>;

/// Past this many entries a memo starts over: it only saves work, and its entries keep label
/// sets alive (per-step ones too, when an expression makes new ones at every step).
const MEMO_MAX: usize = 1 << 16;

fn ptr(l: &LabelSet) -> usize {
    Arc::as_ptr(l) as *const u8 as usize
}

/// `window` continued from the previous window's bounds, valid when time moved forward.
pub(super) fn window_from<'p>(
    points: &'p [(i64, f64)],
    lo: i64,
    hi: i64,
    cur: &mut (usize, usize),
) -> &'p [(i64, f64)] {
    let (mut a, mut b) = *cur;
    let n = points.len();
    if a > n || b > n || (a > 0 && points[a - 1].0 >= lo) || (b > 0 && points[b - 1].0 > hi) {
        let w = window(points, lo, hi);
        let a = w.as_ptr() as usize - points.as_ptr() as usize;
        let a = a / std::mem::size_of::<(i64, f64)>();
        *cur = (a, a + w.len());
        return w;
    }
    while a < n && points[a].0 < lo {
        a += 1;
    }
    b = b.max(a);
    while b < n && points[b].0 <= hi {
        b += 1;
    }
    *cur = (a, b);
    &points[a..b]
}

/// A range vector with the window it covers, as range functions need it.
pub struct Ranged<'a> {
    pub series: Vec<RangeSeries<'a>>,
    /// Window end (the shifted evaluation time) and length, ms.
    pub end: i64,
    pub range: i64,
}

/// Where `drop_name` takes the metric name out of sorted labels (one of two, should a tag be
/// called `__name__` too).
pub fn name_index(l: &[(String, String)]) -> Option<usize> {
    // Labels are sorted by name, and names such as `Zone` sort before `__name__`.
    l.binary_search_by(|(k, _)| k.as_str().cmp("__name__")).ok()
}

pub fn drop_name(l: &LabelSet) -> LabelSet {
    match name_index(l) {
        Some(i) => {
            let mut out = Vec::with_capacity(l.len() - 1);
            out.extend_from_slice(&l[..i]);
            out.extend_from_slice(&l[i + 1..]);
            Arc::new(out)
        }
        None => l.clone(),
    }
}

/// Errors when two samples share a label set.
pub fn check_unique(v: &[Sample]) -> Result<(), PromError> {
    if v.len() < 2 {
        return Ok(());
    }
    let mut seen = std::collections::HashSet::with_capacity(v.len());
    for s in v {
        if !seen.insert(&s.labels) {
            return Err(PromError::Execution(
                "vector cannot contain metrics with the same labelset".into(),
            ));
        }
    }
    Ok(())
}

pub fn unwrap_parens(mut e: &Expr) -> &Expr {
    while let Expr::Paren(p) = e {
        e = &p.expr;
    }
    e
}

impl<'a> Evaluator<'a> {
    pub fn new(data: &'a Data, start: i64, end: i64, settings: Settings) -> Evaluator<'a> {
        Evaluator {
            data,
            start,
            end,
            settings,
            memo: Memo::default(),
        }
    }

    /// The labels `group` makes of `l` for aggregation `agg`, computed once per label set and
    /// shared by every member of the group, so groups can be told apart by address.
    pub fn group_of(
        &self,
        agg: usize,
        l: &LabelSet,
        group: impl FnOnce(&LabelSet) -> Vec<(String, String)>,
    ) -> LabelSet {
        let mut m = self.memo.groups.borrow_mut();
        if let Some((_, g)) = m.get(&(agg, ptr(l))) {
            return g.clone();
        }
        if m.len() > MEMO_MAX {
            m.clear();
        }
        let mut interned = self.memo.interned.borrow_mut();
        let key = group(l);
        let g = match interned.get(&key) {
            Some(g) => g.clone(),
            None => {
                let g: LabelSet = Arc::new(key.clone());
                interned.insert(key, g.clone());
                g
            }
        };
        m.insert((agg, ptr(l)), (l.clone(), g.clone()));
        g
    }

    fn series(&self, vs: &VectorSelector) -> &'a [super::selectors::SeriesData] {
        self.data.get(&key(vs)).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// The time a selector or subquery with these modifiers looks at, for step time `t`.
    fn shifted(
        &self,
        t: i64,
        at: &Option<promql_parser::parser::AtModifier>,
        off: &Option<promql_parser::parser::Offset>,
    ) -> i64 {
        at_ms(at, self.start, self.end).unwrap_or(t) - offset_ms(off)
    }

    /// A range query of a bare instant selector: each series' value at every step, walked
    /// once per series instead of a vector built per step. `None` when two series share a
    /// label set (the step path's merging then decides what the answer is).
    pub fn selector_steps(&self, vs: &VectorSelector, step: i64) -> Option<Vec<StepSeries>> {
        let lb = self.settings.lookback_ms;
        let mut out: Vec<StepSeries> = Vec::new();
        for s in self.series(vs) {
            let mut pts = Vec::new();
            let mut t = self.start;
            while t <= self.end {
                if let Some((_, v)) = instant_at(&s.all, self.shifted(t, &vs.at, &vs.offset), lb) {
                    pts.push((t, v));
                }
                t += step;
            }
            if !pts.is_empty() {
                out.push((s.labels.clone(), pts));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        if out.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        Some(out)
    }

    /// An instant selector; with `own_ts`, values are the samples' timestamps in seconds
    /// (what `timestamp()` of a selector returns).
    pub fn select_instant(&self, vs: &VectorSelector, t: i64, own_ts: bool) -> Vec<Sample> {
        let te = self.shifted(t, &vs.at, &vs.offset);
        let lb = self.settings.lookback_ms;
        self.series(vs)
            .iter()
            .filter_map(|s| {
                instant_at(&s.all, te, lb).map(|(ts, v)| Sample {
                    labels: s.labels.clone(),
                    v: if own_ts { ts as f64 / 1000.0 } else { v },
                })
            })
            .collect()
    }

    /// Evaluates a range-vector argument: a matrix selector or a subquery.
    pub fn eval_range(&self, e: &Expr, t: i64) -> Result<Ranged<'a>, PromError> {
        self.eval_range_drifting(e, t, 0)
    }

    /// [`Self::eval_range`] with an `@` time that moves on with the steps by `drift` ms: how
    /// 2.42 evaluates predict_linear's range argument in a range query (see functions.rs).
    pub fn eval_range_drifting(
        &self,
        e: &Expr,
        t: i64,
        drift: i64,
    ) -> Result<Ranged<'a>, PromError> {
        match unwrap_parens(e) {
            Expr::MatrixSelector(ms) => {
                let te = self.shifted(t, &ms.vs.at, &ms.vs.offset)
                    + if ms.vs.at.is_some() { drift } else { 0 };
                let r = dur_ms(&ms.range);
                let all = self.series(&ms.vs);
                let mut cursors = self.memo.cursors.borrow_mut();
                let cursors = cursors
                    .entry(key(&ms.vs))
                    .or_insert_with(|| vec![(0, 0); all.len()]);
                let series = all
                    .iter()
                    .zip(cursors.iter_mut())
                    .filter_map(|(s, cur)| {
                        let w = window_from(s.ranged(), te - r, te, cur);
                        (!w.is_empty()).then(|| RangeSeries {
                            labels: s.labels.clone(),
                            no_name: s.no_name.clone(),
                            points: Cow::Borrowed(w),
                        })
                    })
                    .collect();
                Ok(Ranged {
                    series,
                    end: te,
                    range: r,
                })
            }
            Expr::Subquery(sq) => {
                let te =
                    self.shifted(t, &sq.at, &sq.offset) + if sq.at.is_some() { drift } else { 0 };
                let r = dur_ms(&sq.range);
                let step = sq
                    .step
                    .as_ref()
                    .map(dur_ms)
                    .unwrap_or(self.settings.default_subquery_step_ms)
                    .max(1);
                // First inner step: the smallest multiple of the step ≥ te − r (2.42).
                let lo = te - r;
                let mut ti = lo.div_euclid(step) * step;
                if ti < lo {
                    ti += step;
                }
                // Each inner step keeps at least one sample per series: the steps alone may
                // already be past `max_samples` (`vector(1)[1d:1ms]` is 86.4 million).
                let too_many = || PromError::too_many_samples("subquery evaluation");
                if ti <= te && ((te - ti) / step) as u64 >= self.settings.max_samples as u64 {
                    return Err(too_many());
                }
                let mut kept = 0usize;
                let mut acc: HashMap<LabelSet, Vec<(i64, f64)>> = HashMap::new();
                let mut order: Vec<LabelSet> = Vec::new();
                while ti <= te {
                    self.settings.check_deadline("subquery evaluation")?;
                    let pts: Vec<Sample> = match self.eval(&sq.expr, ti)? {
                        Value::Scalar(v) => vec![Sample {
                            labels: Arc::new(Vec::new()),
                            v,
                        }],
                        Value::Vector(v) => v,
                        other => {
                            return Err(PromError::Execution(format!(
                                "subquery over a {} is not allowed",
                                other.type_name()
                            )))
                        }
                    };
                    kept += pts.len();
                    if kept > self.settings.max_samples {
                        return Err(too_many());
                    }
                    for s in pts {
                        let e = acc.entry(s.labels.clone()).or_insert_with(|| {
                            order.push(s.labels.clone());
                            Vec::new()
                        });
                        e.push((ti, s.v));
                    }
                    ti += step;
                }
                let series = order.into_iter().map(|l| {
                    let p = acc.remove(&l).unwrap_or_default();
                    RangeSeries {
                        no_name: drop_name(&l),
                        labels: l,
                        points: Cow::Owned(p),
                    }
                });
                Ok(Ranged {
                    series: series.collect(),
                    end: te,
                    range: r,
                })
            }
            other => Err(PromError::Execution(format!(
                "expected a range vector, got {}",
                other.value_type()
            ))),
        }
    }

    pub fn eval(&self, e: &Expr, t: i64) -> Result<Value<'a>, PromError> {
        match e {
            Expr::NumberLiteral(n) => Ok(Value::Scalar(n.val)),
            Expr::StringLiteral(s) => Ok(Value::Str(s.val.clone())),
            Expr::Paren(p) => self.eval(&p.expr, t),
            Expr::VectorSelector(vs) => Ok(Value::Vector(self.select_instant(vs, t, false))),
            Expr::MatrixSelector(_) | Expr::Subquery(_) => {
                Ok(Value::Matrix(self.eval_range(e, t)?.series))
            }
            Expr::Unary(u) => match self.eval(&u.expr, t)? {
                Value::Scalar(v) => Ok(Value::Scalar(-v)),
                Value::Vector(v) => {
                    let out: Vec<Sample> = v
                        .into_iter()
                        .map(|s| Sample {
                            labels: drop_name(&s.labels),
                            v: -s.v,
                        })
                        .collect();
                    check_unique(&out)?;
                    Ok(Value::Vector(out))
                }
                other => Err(PromError::Execution(format!(
                    "unary minus of a {}",
                    other.type_name()
                ))),
            },
            Expr::Binary(b) => super::binary::eval(self, b, t),
            Expr::Aggregate(a) => super::aggregate::eval(self, a, t),
            Expr::Call(c) => {
                let v = super::functions::eval(self, c, t)?;
                if let Value::Vector(out) = &v {
                    check_unique(out)?;
                }
                Ok(v)
            }
            Expr::Extension(_) => Err(PromError::Execution(
                "extension expressions are not supported".into(),
            )),
        }
    }

    /// Like `eval`, but a function result whose label sets collide once `__name__` is dropped is
    /// passed on rather than refused: an aggregation over it is well defined. (Prometheus 2.42
    /// refuses it; tsgate accepts `sum(count_over_time({__name__=~".+"}[1h]))`, which the
    /// shared ingest bench counts points with.)
    pub fn eval_for_aggregation(&self, e: &Expr, t: i64) -> Result<Vec<Sample>, PromError> {
        match unwrap_parens(e) {
            Expr::Call(c) => match super::functions::eval(self, c, t)? {
                Value::Vector(v) => Ok(v),
                other => Err(PromError::Execution(format!(
                    "expected an instant vector, got {}",
                    other.type_name()
                ))),
            },
            other => self.eval_vector(other, t),
        }
    }

    pub fn eval_scalar(&self, e: &Expr, t: i64) -> Result<f64, PromError> {
        match self.eval(e, t)? {
            Value::Scalar(v) => Ok(v),
            other => Err(PromError::Execution(format!(
                "expected a scalar, got {}",
                other.type_name()
            ))),
        }
    }

    pub fn eval_vector(&self, e: &Expr, t: i64) -> Result<Vec<Sample>, PromError> {
        match self.eval(e, t)? {
            Value::Vector(v) => Ok(v),
            other => Err(PromError::Execution(format!(
                "expected an instant vector, got {}",
                other.type_name()
            ))),
        }
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn continued_windows_equal_searched_ones(mut ts in prop::collection::vec(-50i64..500, 0..40), asks in prop::collection::vec((-60i64..520, 0i64..80), 1..30)) {
            ts.sort_unstable();
            ts.dedup();
            let points: Vec<(i64, f64)> = ts.iter().map(|&t| (t, t as f64)).collect();
            let mut cur = (0, 0);
            // Mostly forward, as steps go, with jumps back (subqueries, offsets) mixed in.
            for (lo, len) in asks {
                let hi = lo + len;
                prop_assert_eq!(window_from(&points, lo, hi, &mut cur), window(&points, lo, hi));
            }
        }
    }
}
