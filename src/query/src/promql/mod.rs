//! A PromQL engine with Prometheus 2.42's semantics over tsgate's store. Queries are parsed by
//! the `promql-parser` crate; every selector's series are fetched once (for the whole time
//! range the query needs), then the expression is evaluated step by step in memory.
//!
//! One module per concern: `selectors` (fetching, lookback and staleness, range windows),
//! `eval` (the step evaluator: offset, `@`, subqueries), `functions`, `aggregate`, `binary`.

pub mod aggregate;
pub mod binary;
pub mod eval;
pub mod functions;
mod go_errors;
pub mod rollups;
pub mod selectors;
pub mod streamed;
#[cfg(test)]
mod tests;

use crate::select::Matcher;
use crate::QueryEngine;
use promql_parser::label::MatchOp as PMatchOp;
use promql_parser::parser::value::ValueType;
use promql_parser::parser::{self, Expr};
use std::sync::Arc;

/// A label set, sorted by name; shared between steps.
pub type LabelSet = Arc<Vec<(String, String)>>;

#[derive(Debug, thiserror::Error)]
pub enum PromError {
    /// The query or a parameter is malformed (400 bad_data).
    #[error("{0}")]
    BadData(String),
    /// Evaluation failed (422 execution).
    #[error("{0}")]
    Execution(String),
    /// Reading the store failed (500 internal).
    #[error("{0}")]
    Internal(String),
    /// The query ran past its `timeout` (503 timeout).
    #[error("query timed out in {0}")]
    Timeout(&'static str),
}

impl PromError {
    /// Prometheus' refusal when a query would hold more than `max_samples` points; `during` is
    /// "query execution" or "subquery evaluation", as Prometheus words the two.
    pub(crate) fn too_many_samples(during: &str) -> Self {
        PromError::Execution(format!(
            "query processing would load too many samples into memory in {during}"
        ))
    }
}

impl From<crate::QueryError> for PromError {
    fn from(e: crate::QueryError) -> Self {
        PromError::Internal(e.to_string())
    }
}

/// Evaluation settings (Prometheus' flags).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub lookback_ms: i64,
    /// Step of a subquery written without one (`evaluation_interval`, 1 m by default).
    pub default_subquery_step_ms: i64,
    pub max_samples: usize,
    /// When the query must have finished (the API's `timeout`).
    pub deadline: Option<std::time::Instant>,
    /// The coarsest rollup interval `*_over_time` functions may read (Thanos'
    /// `max_source_resolution`), ms; 0 = raw data unless it has expired (see [`rollups`]).
    pub max_source_resolution_ms: i64,
    /// How long raw data is kept (`storage.retention`), ms; 0 = for ever.
    pub raw_retention_ms: i64,
    /// Points a range function over a selector reads at once (see [`streamed`]): its steps
    /// are read in slices of about this many points.
    pub slice_points: usize,
}

impl Settings {
    pub fn check_deadline(&self, stage: &'static str) -> Result<(), PromError> {
        match self.deadline {
            Some(d) if std::time::Instant::now() > d => Err(PromError::Timeout(stage)),
            _ => Ok(()),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            lookback_ms: 300_000,
            default_subquery_step_ms: 60_000,
            max_samples: 50_000_000,
            deadline: None,
            max_source_resolution_ms: 0,
            raw_retention_ms: 0,
            slice_points: 16 << 20,
        }
    }
}

/// A query result.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryResult {
    Scalar(i64, f64),
    Str(i64, String),
    /// (labels, ts, value)
    Vector(Vec<(LabelSet, i64, f64)>),
    Matrix(Vec<StepSeries>),
}

/// One series of a range result: its labels and its values at the steps it has one (ms).
pub type StepSeries = (LabelSet, Vec<(i64, f64)>);

/// Expressions parsed lately, by their text: dashboards send the same few expressions on every
/// refresh, and cloning a parsed tree costs far less than parsing it again.
static PARSED: std::sync::LazyLock<
    parking_lot::Mutex<std::collections::HashMap<String, std::sync::Arc<Expr>>>,
> = std::sync::LazyLock::new(Default::default);
const PARSED_MAX: usize = 512;
/// Longer texts are parsed every time rather than kept.
const PARSED_TEXT_MAX: usize = 4096;

/// Deepest expression [`parse`] accepts (`query.max_depth`'s default).
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// Parses a query as Prometheus 2.42 would. `holt_winters` is 2.42's name of what the parser
/// calls `double_exponential_smoothing` (3.x's name, unknown to 2.42).
pub fn parse(q: &str) -> Result<Expr, PromError> {
    parse_bounded(q, DEFAULT_MAX_DEPTH)
}

/// [`parse`] refusing an expression deeper than `max_depth` before the parser sees it.
pub fn parse_bounded(q: &str, max_depth: usize) -> Result<Expr, PromError> {
    check_depth(q, max_depth)?;
    // The tree is copied outside the lock: queries on other threads only wait for a look-up.
    let hit = PARSED.lock().get(q).cloned();
    if let Some(e) = hit {
        return Ok((*e).clone());
    }
    let e = parse_text(q)?;
    if q.len() <= PARSED_TEXT_MAX {
        let shared = std::sync::Arc::new(e.clone());
        let mut m = PARSED.lock();
        if m.len() >= PARSED_MAX {
            m.clear();
        }
        m.insert(q.to_string(), shared);
    }
    Ok(e)
}

fn parse_text(q: &str) -> Result<Expr, PromError> {
    static HW: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static DEXP: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let dexp =
        DEXP.get_or_init(|| regex::Regex::new(r"\bdouble_exponential_smoothing\s*\(").unwrap());
    if dexp.is_match(q) {
        return Err(PromError::BadData(
            "1:1: parse error: unknown function with name \"double_exponential_smoothing\"".into(),
        ));
    }
    let hw = HW.get_or_init(|| regex::Regex::new(r"\bholt_winters(\s*\()").unwrap());
    let q = hw.replace_all(q, "double_exponential_smoothing$1");
    let q = octal_exponents(&q);
    check_number_durations(&q)?;
    check_unary_plus_string(&q)?;
    let e = parser::parse(&q).map_err(|e| PromError::BadData(go_errors::parse_error(&q, &e)))?;
    if let Some(msg) = refused_by_2_42(&e) {
        return Err(PromError::BadData(go_errors::parse_error(&q, &msg)));
    }
    check_unary_plus_type(&q)?;
    Ok(e)
}

/// Refuses a unary `+` before a range vector (`+x[5m]`, `rate(+x[5m])`), as 2.42 does: the
/// parser here drops a unary plus. The same text with each such `+` made a `-` (which it
/// keeps and type-checks) is parsed again; only its unary type error is taken, placed (by
/// `go_errors`) at the operator.
fn check_unary_plus_type(q: &str) -> Result<(), PromError> {
    for i in unary_pluses(q) {
        let mut minus = q.as_bytes().to_vec();
        minus[i] = b'-';
        let minus = String::from_utf8(minus).expect("one ASCII byte replaced by another");
        if let Err(e) = parser::parse(&minus) {
            if e.contains("unary expression only allowed") {
                return Err(PromError::BadData(go_errors::parse_error(&minus, &e)));
            }
        }
    }
    Ok(())
}

/// Where a `+` stands as a unary operator at the start or after `(` or `,` (strings and
/// comments skipped).
fn unary_pluses(q: &str) -> Vec<usize> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#""(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?|#[^\n]*|(?:^|[(,])\s*(\+)"#,
        )
        .unwrap()
    });
    re.captures_iter(q)
        .filter_map(|c| c.get(1).map(|m| m.start()))
        .collect()
}

/// Functions Prometheus 2.42 knows (its parser's function table; `holt_winters` is the
/// parser's `double_exponential_smoothing` here).
const FUNCTIONS_2_42: &[&str] = &[
    "abs",
    "absent",
    "absent_over_time",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "avg_over_time",
    "ceil",
    "changes",
    "clamp",
    "clamp_max",
    "clamp_min",
    "cos",
    "cosh",
    "count_over_time",
    "days_in_month",
    "day_of_month",
    "day_of_week",
    "day_of_year",
    "deg",
    "delta",
    "deriv",
    "exp",
    "floor",
    "histogram_count",
    "histogram_sum",
    "histogram_fraction",
    "histogram_quantile",
    "double_exponential_smoothing",
    "hour",
    "idelta",
    "increase",
    "irate",
    "label_replace",
    "label_join",
    "last_over_time",
    "ln",
    "log10",
    "log2",
    "max_over_time",
    "min_over_time",
    "minute",
    "month",
    "pi",
    "predict_linear",
    "present_over_time",
    "quantile_over_time",
    "rad",
    "rate",
    "resets",
    "round",
    "scalar",
    "sgn",
    "sin",
    "sinh",
    "sort",
    "sort_desc",
    "sqrt",
    "stddev_over_time",
    "stdvar_over_time",
    "sum_over_time",
    "tan",
    "tanh",
    "time",
    "timestamp",
    "vector",
    "year",
];

/// What 2.42's parser refuses in a tree this parser accepts, worded as this parser words it
/// (for `go_errors` to reword and place): a function (or aggregation: 2.42's lexer has no
/// `limitk`, so `limitk(…)` is a call to it) 2.42 does not have, and a scalar argument to
/// `exp`, `ln`, `log2` or `log10`, which this parser lets through when it is a NaN, an
/// infinity or (for the logarithms) not positive.
fn refused_by_2_42(e: &Expr) -> Option<String> {
    match e {
        Expr::Call(c) => {
            let name = c.func.name;
            if !FUNCTIONS_2_42.contains(&name) {
                return Some(format!("unknown function with name '{name}'"));
            }
            if matches!(name, "exp" | "ln" | "log2" | "log10") {
                if let Some(t) = c.args.args.first().map(|a| a.value_type()) {
                    if t != ValueType::Vector {
                        return Some(format!(
                            "expected type vector in call to function '{name}', got {t}"
                        ));
                    }
                }
            }
            c.args.args.iter().find_map(|a| refused_by_2_42(a))
        }
        Expr::Aggregate(a) => {
            let op = a.op.to_string();
            if matches!(op.as_str(), "limitk" | "limit_ratio") {
                return Some(format!("unknown function with name '{op}'"));
            }
            a.param
                .as_deref()
                .and_then(refused_by_2_42)
                .or_else(|| refused_by_2_42(&a.expr))
        }
        Expr::Unary(u) => refused_by_2_42(&u.expr),
        Expr::Binary(b) => refused_by_2_42(&b.lhs).or_else(|| refused_by_2_42(&b.rhs)),
        Expr::Paren(p) => refused_by_2_42(&p.expr),
        Expr::Subquery(s) => refused_by_2_42(&s.expr),
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::VectorSelector(_)
        | Expr::MatrixSelector(_)
        | Expr::Extension(_) => None,
    }
}

/// Refuses a query whose syntax tree could be deeper than `max`, from its text alone: the
/// parser, the tree's drop, the planner and the evaluator all recurse once per level, and a
/// few thousand levels (`abs(` 2,000 times, or `1+1+…+1`, which nests without a bracket)
/// overflow a thread's stack, which aborts the process. A bracket group is one level more
/// than what it holds, and within one group each operator (binary or unary) can nest its
/// operands one level deeper: a group is at most as deep as its operators plus its deepest
/// inner group plus one. Counting every operator character over-counts (`>=`, `1e-3`), never
/// under-counts.
fn check_depth(q: &str, max: usize) -> Result<(), PromError> {
    let too_deep = || {
        PromError::BadData(format!(
            "1:1: parse error: expression nested deeper than {max} levels (query.max_depth)"
        ))
    };
    /// One open bracket: operators seen in it, its deepest inner group, whether it is `{…}`.
    struct Group {
        ops: usize,
        inner: usize,
        braces: bool,
    }
    let depth = |g: &Group| g.ops + g.inner + 1;
    let mut open = vec![Group {
        ops: 0,
        inner: 0,
        braces: false,
    }];
    let b = q.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let (nested, top) = (
            open.len() > 1,
            open.last_mut()
                .expect("the outermost group is never closed"),
        );
        match c {
            b'"' | b'\'' | b'`' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' && c != b'`' { 2 } else { 1 };
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                open.push(Group {
                    ops: 0,
                    inner: 0,
                    braces: c == b'{',
                });
                if open.len() > max {
                    return Err(too_deep());
                }
            }
            b')' | b']' | b'}' if nested => {
                let g = open.pop().expect("more than one");
                let d = depth(&g);
                let parent = open.last_mut().expect("the outermost group");
                parent.inner = parent.inner.max(d);
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'=' | b'!' | b'<' | b'>' if !top.braces => {
                top.ops += 1;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':')
                {
                    i += 1;
                }
                let w = &q[start..i];
                if !top.braces
                    && ["and", "or", "unless", "atan2"]
                        .iter()
                        .any(|op| w.eq_ignore_ascii_case(op))
                {
                    top.ops += 1;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // Brackets left open are the parser's error to report; their depth still counts.
    while open.len() > 1 {
        let g = open.pop().expect("more than one");
        let d = depth(&g);
        let parent = open.last_mut().expect("the outermost group");
        parent.inner = parent.inner.max(d);
    }
    if depth(&open[0]) > max {
        return Err(too_deep());
    }
    Ok(())
}

/// Refuses a unary `+` before a string (`+"a"`, `f(x, +"a")`), as 2.42 does: the parser here
/// drops a unary plus and so accepts the string alone.
fn check_unary_plus_string(q: &str) -> Result<(), PromError> {
    for i in unary_pluses(q) {
        if q[i + 1..].trim_start().starts_with(['"', '\'', '`']) {
            let (line, col) = go_errors::line_col(q, i);
            return Err(PromError::BadData(format!(
                "{line}:{col}: parse error: unary expression only allowed on expressions of type scalar or instant vector, got \"string\""
            )));
        }
    }
    Ok(())
}

/// `0e3`, `07e1`: a number with a leading zero and an exponent but no point, which Go reads
/// as a float (`ParseInt` fails, `ParseFloat` takes it) and the parser here as a malformed
/// octal. A point before the exponent (`0.e3`) makes it the float 2.42 reads.
fn octal_exponents(q: &str) -> std::borrow::Cow<'_, str> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    // Strings and comments first, so that what they hold is kept as it is.
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#""(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?|#[^\n]*|(^|[^0-9A-Za-z_.:])(0[0-9]*)([eE][+-]?[0-9]*)\b"#,
        )
        .unwrap()
    });
    re.replace_all(q, |c: &regex::Captures| {
        match (c.get(1), c.get(2), c.get(3)) {
            (Some(before), Some(m), Some(e)) => {
                format!("{}{}.{}", before.as_str(), m.as_str(), e.as_str())
            }
            _ => c[0].to_string(),
        }
    })
}

/// Refuses a plain number where a duration goes (a range `[…]`, a subquery's `[…:…]`, after
/// `offset`), as 2.42's lexer and parser do (3.x, and the parser here, take it as seconds):
/// `missing unit character in duration` where a range starts, `unexpected number "5" in
/// subquery selector, …` after its colon, `unexpected number "5" in offset, …` after
/// `offset`. A NaN or an infinity there, which the parser would convert with
/// `Duration::from_secs_f64` and panic on (`up[5m:Inf]`), is refused too.
fn check_number_durations(q: &str) -> Result<(), PromError> {
    static NUMBER: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    // What 2.42's `scanNumber` takes for a number: hex, or digits, a point, an exponent.
    let number = NUMBER.get_or_init(|| {
        regex::Regex::new(r"^(?:0[xX][0-9a-fA-F]*|[0-9.][0-9]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)$")
            .unwrap()
    });
    let refuse = |at: usize, msg: String| {
        let (line, col) = go_errors::line_col(q, at);
        Err(PromError::BadData(format!(
            "{line}:{col}: parse error: {msg}"
        )))
    };
    let b = q.as_bytes();
    let (mut i, mut depth, mut after_offset, mut after_colon) = (0, 0usize, false, false);
    while i < b.len() {
        let c = b[i];
        match c {
            // Strings and comments hold no durations.
            b'"' | b'\'' | b'`' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' && c != b'`' { 2 } else { 1 };
                }
                i += 1;
                after_offset = false;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'[' => {
                depth += 1;
                after_colon = false;
            }
            b']' => depth = depth.saturating_sub(1),
            b':' if depth > 0 => after_colon = true,
            _ if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'.'
                        || b[i] == b'_'
                        || (matches!(b[i], b'+' | b'-') && matches!(b[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
                let word = &q[start..i];
                if depth > 0 || after_offset {
                    if number.is_match(word) {
                        // Go's item description: the token quoted, cut to 10 bytes.
                        let desc = if word.len() > 10 {
                            format!("{:?}...", &word[..10])
                        } else {
                            format!("{word:?}")
                        };
                        return refuse(
                            start,
                            if after_offset {
                                format!("unexpected number {desc} in offset, expected duration")
                            } else if after_colon {
                                format!("unexpected number {desc} in subquery selector, expected duration or \"]\"")
                            } else {
                                "missing unit character in duration".into()
                            },
                        );
                    }
                    if let Ok(n) = word.parse::<f64>() {
                        if std::time::Duration::try_from_secs_f64(n).is_err() {
                            return refuse(start, format!("duration out of range: {word:?}"));
                        }
                    }
                }
                after_offset = word.eq_ignore_ascii_case("offset");
                continue;
            }
            // `offset -5m`: the sign is not part of the duration.
            b'-' | b'+' if after_offset => {}
            c if c.is_ascii_whitespace() => {}
            _ => after_offset = false,
        }
        i += 1;
    }
    Ok(())
}

/// The matchers of a selector as the store understands them.
pub fn selector_matchers(vs: &parser::VectorSelector) -> Result<Vec<Matcher>, PromError> {
    if !vs.matchers.or_matchers.is_empty() {
        return Err(PromError::BadData(
            "`or` inside a selector is not PromQL 2.42".into(),
        ));
    }
    let mut out = Vec::new();
    if let Some(n) = &vs.name {
        out.push(Matcher::eq(tsgate_core::prometheus::labels::METRIC_NAME, n));
    }
    for m in &vs.matchers.matchers {
        let kind = match m.op {
            PMatchOp::Equal => 0,
            PMatchOp::NotEqual => 1,
            PMatchOp::Re(_) => 2,
            PMatchOp::NotRe(_) => 3,
        };
        out.push(
            Matcher::new(kind, &m.name, &m.value).map_err(|e| PromError::BadData(e.to_string()))?,
        );
    }
    Ok(out)
}

/// Parses one `match[]` selector of the series/labels APIs.
pub fn parse_match(s: &str) -> Result<Vec<Matcher>, PromError> {
    match parse(s)? {
        Expr::VectorSelector(vs) => {
            let ms = selector_matchers(&vs)?;
            if ms.iter().all(|m| m.matches_empty()) {
                return Err(PromError::BadData("match[] must contain at least one non-empty matcher".into()));
            }
            Ok(ms)
        }
        _ => Err(PromError::BadData(format!("invalid parameter \"match[]\": 1:1: parse error: expected a series selector, got {s:?}"))),
    }
}

/// Evaluates `expr` at one time (ms).
pub fn instant_query(
    store: &QueryEngine,
    expr: &Expr,
    t: i64,
    settings: Settings,
) -> Result<QueryResult, PromError> {
    let now = tsgate_common::clock::now_ms() as i64;
    if let Some(e) = rollups::plan(store.rollups.as_deref(), expr, t, now, &settings) {
        let data = selectors::fetch(store, &e, t, t, settings)?;
        return instant_eval(&data, &e, t, settings);
    }
    if let Some(steps) = streamed::eval(store, expr, t, t, 1, settings) {
        let v = steps?
            .into_iter()
            .flat_map(|(t, v)| v.into_iter().map(move |s| (s.labels, t, s.v)))
            .collect();
        return Ok(QueryResult::Vector(v));
    }
    let data = selectors::fetch(store, expr, t, t, settings)?;
    instant_eval(&data, expr, t, settings)
}

/// Evaluates `expr` at one time (ms) over data already fetched for it.
pub fn instant_eval(
    data: &selectors::Data,
    expr: &Expr,
    t: i64,
    settings: Settings,
) -> Result<QueryResult, PromError> {
    let ev = eval::Evaluator::new(data, t, t, settings);
    Ok(match ev.eval(expr, t)? {
        eval::Value::Scalar(v) => QueryResult::Scalar(t, v),
        eval::Value::Str(s) => QueryResult::Str(t, s),
        eval::Value::Vector(v) => {
            QueryResult::Vector(v.into_iter().map(|s| (s.labels, t, s.v)).collect())
        }
        eval::Value::Matrix(m) => {
            let mut out: Vec<(LabelSet, Vec<(i64, f64)>)> = m
                .into_iter()
                .map(|s| (s.labels, s.points.into_owned()))
                .collect();
            out.sort_by(|a, b| a.0.cmp(&b.0));
            QueryResult::Matrix(out)
        }
    })
}

/// Evaluates `expr` at `start, start+step, … ≤ end` (ms); the result is sorted by labels.
pub fn range_query(
    store: &QueryEngine,
    expr: &Expr,
    start: i64,
    end: i64,
    step: i64,
    settings: Settings,
) -> Result<QueryResult, PromError> {
    check_range_type(expr)?;
    let now = tsgate_common::clock::now_ms() as i64;
    if let Some(e) = rollups::plan(store.rollups.as_deref(), expr, start, now, &settings) {
        let data = selectors::fetch(store, &e, start, end, settings)?;
        return range_eval(&data, &e, start, end, step, settings);
    }
    if let Some(steps) = streamed::eval(store, expr, start, end, step, settings) {
        let mut m = Matrix::default();
        for (t, v) in steps? {
            m.add(t, v);
        }
        return Ok(m.sorted());
    }
    let data = selectors::fetch(store, expr, start, end, settings)?;
    range_eval(&data, expr, start, end, step, settings)
}

/// A range query must yield an instant vector or a scalar.
pub fn check_range_type(expr: &Expr) -> Result<(), PromError> {
    match expr.value_type() {
        ValueType::Vector | ValueType::Scalar => {}
        other => {
            let name = match other {
                ValueType::Matrix => "range vector",
                ValueType::String => "string",
                _ => "unknown",
            };
            return Err(PromError::BadData(format!("invalid expression type \"{name}\" for range query, must be Scalar or instant Vector")));
        }
    }
    Ok(())
}

/// The steps of a range query over data already fetched for it.
pub fn range_eval(
    data: &selectors::Data,
    expr: &Expr,
    start: i64,
    end: i64,
    step: i64,
    settings: Settings,
) -> Result<QueryResult, PromError> {
    let ev = eval::Evaluator::new(data, start, end, settings);
    if let Expr::VectorSelector(vs) = eval::unwrap_parens(expr) {
        if let Some(m) = ev.selector_steps(vs, step.max(1)) {
            return Ok(QueryResult::Matrix(m));
        }
    }
    let mut m = Matrix::default();
    let mut t = start;
    while t <= end {
        settings.check_deadline("expression evaluation")?;
        match ev.eval(expr, t)? {
            eval::Value::Scalar(v) => m.add(
                t,
                vec![eval::Sample {
                    labels: Arc::new(Vec::new()),
                    v,
                }],
            ),
            eval::Value::Vector(v) => m.add(t, v),
            _ => {
                return Err(PromError::Execution(
                    "range query step did not yield a vector or scalar".into(),
                ))
            }
        }
        t += step;
    }
    Ok(m.sorted())
}

/// A range query's answer built step by step: each label set's (time, value) points.
#[derive(Default)]
struct Matrix(std::collections::HashMap<LabelSet, Vec<(i64, f64)>>);

impl Matrix {
    fn add(&mut self, t: i64, step: Vec<eval::Sample>) {
        for s in step {
            self.0.entry(s.labels).or_default().push((t, s.v));
        }
    }

    /// The series sorted by labels.
    fn sorted(self) -> QueryResult {
        let mut out: Vec<(LabelSet, Vec<(i64, f64)>)> = self.0.into_iter().collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        QueryResult::Matrix(out)
    }
}
