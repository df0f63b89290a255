//! OpenTSDB 2.4's `/api/query/gexp`: Graphite-style functions over `m`-style sub-queries, in
//! the query string (`exp=scale(sum:sys.cpu{host=*},10)&start=1h-ago`), answered in
//! `/api/query`'s JSON with the functions' series in place of the queries' own.
//!
//! Mirrors 2.4's `QueryRpc.parseQuery`, its JavaCC expression grammar (`parser.jj`) and the
//! functions of `net.opentsdb.query.expression` (`ExpressionFactory`), quirks included where a
//! client would see them: `alias` also takes absolute values; the series functions
//! (`sumSeries`, `diffSeries`, `multiplySeries`, `divideSeries`) join their arguments by tags
//! (union, a missing side is 0), walk each joined set's points by position, and divide by
//! zero to 0 as lenient JEXL does; `timeShift`'s unit keeps the closing quote and so never
//! parses. A syntax error or an unknown function is a 500 (2.4 throws them outside its
//! request errors); a function's own error is a 400 whose details repeat the message.

use super::http::{error_reply, json_reply, Reply, Request};
use crate::query::aggregate::Num;
use crate::query::parse::{self, ParseError};
use crate::query::spec::{FillPolicy, Query, SubQuery};
use crate::query::{QueryError, ResultSeries};
use crate::schema::uid_table::UidKind;
use crate::server::state::OpenTsdb;
use http::{Method, StatusCode};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub(super) async fn query(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    if req.method == Method::POST {
        // 2.4 reads a POST body as a plain `/api/query` and then fails on its missing
        // expressions; say what it takes instead.
        return error_reply(
            StatusCode::BAD_REQUEST,
            "Expressions go in the query string",
            "/api/query/gexp takes exp=, start= and end= as URL parameters",
        );
    }
    if req.method != Method::GET {
        return super::api::method_not_allowed(&req.method);
    }
    let params = req.params();
    let st = state.clone();
    let started = std::time::Instant::now();
    match crate::server::blocking::run(move || run(&st, &params, started)).await {
        Ok(Ok(body)) => json_reply(StatusCode::OK, body),
        Ok(Err(GexpError::Request(m))) => error_reply(StatusCode::BAD_REQUEST, &m, ""),
        Ok(Err(GexpError::Function(m))) => error_reply(StatusCode::BAD_REQUEST, &m, &m),
        Ok(Err(GexpError::Internal(m))) => error_reply(StatusCode::INTERNAL_SERVER_ERROR, &m, ""),
        Ok(Err(GexpError::Query(e))) => super::opentsdb_query::query_error(e),
        Err(e) => error_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "query task failed",
            &e.to_string(),
        ),
    }
}

/// How 2.4 answers what goes wrong, by where it is thrown.
#[derive(Debug)]
enum GexpError {
    /// A `BadRequestException` while the URL is read (400, no details).
    Request(String),
    /// Thrown while a function evaluates: 400 with the message as its details too.
    Function(String),
    /// Thrown by the parser outside OpenTSDB's request errors: 500.
    Internal(String),
    Query(QueryError),
}

impl From<ParseError> for GexpError {
    fn from(e: ParseError) -> GexpError {
        GexpError::Request(e.to_string())
    }
}

impl From<QueryError> for GexpError {
    fn from(e: QueryError) -> GexpError {
        GexpError::Query(e)
    }
}

fn fail<T>(m: impl Into<String>) -> Result<T, GexpError> {
    Err(GexpError::Function(m.into()))
}

// ---------------------------------------------------------------------------------------
// The grammar: EXPRESSION := NAME "(" PARAM ("," PARAM)* ")";
// PARAM := EXPRESSION | METRIC | NAME; METRIC := NAME ":" [NAME ":"] [NAME ":"] NAME
// ["{" NAME "=" NAME ("," NAME "=" NAME)* "}"]. Whitespace is skipped between tokens.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Alias,
    Scale,
    Absolute,
    MovingAverage,
    HighestCurrent,
    HighestMax,
    TimeShift,
    Divide,
    Sum,
    Diff,
    Multiply,
}

impl Func {
    fn by_name(name: &str) -> Option<Func> {
        Some(match name {
            "alias" => Func::Alias,
            "scale" => Func::Scale,
            "absolute" => Func::Absolute,
            "movingAverage" => Func::MovingAverage,
            "highestCurrent" => Func::HighestCurrent,
            "highestMax" => Func::HighestMax,
            "shift" | "timeShift" => Func::TimeShift,
            "divideSeries" | "divide" => Func::Divide,
            "sumSeries" | "sum" => Func::Sum,
            "diffSeries" | "difference" => Func::Diff,
            "multiplySeries" | "multiply" => Func::Multiply,
            _ => return None,
        })
    }

    /// The name `writeStringField` gives it (error texts quote the tree with it).
    fn written(self) -> &'static str {
        match self {
            Func::Alias => "alias",
            Func::Scale => "scale",
            Func::Absolute => "absolute",
            Func::MovingAverage => "movingAverage",
            Func::HighestCurrent => "highestCurrent",
            Func::HighestMax => "highestMax",
            Func::TimeShift => "timeshift",
            Func::Divide => "divideSeries",
            Func::Sum => "sumSeries",
            Func::Diff => "diffSeries",
            Func::Multiply => "multiplySeries",
        }
    }
}

/// A parsed call: its function, its series arguments by parameter position, its plain
/// parameters in order.
#[derive(Debug, Clone)]
struct Tree {
    func: Func,
    /// Parameter position → a sub-expression or a metric query (its index among all the
    /// metric queries of the request's expressions).
    series: BTreeMap<usize, Arg>,
    params: Vec<String>,
    /// The metric queries' text, for the tree's string form.
    metric_texts: Vec<String>,
}

#[derive(Debug, Clone)]
enum Arg {
    Sub(Box<Tree>),
    Metric(usize),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Sym(char),
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '*' | '-' | '_' | '#' | '/' | '$' | '@' | '|' | '.' | '\'' | ']' | '['
        )
}

/// Tokens up to the first character no token takes (the parser stops there or before).
fn lex(s: &str) -> Result<Vec<Tok>, ()> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    while let Some(&c) = it.peek() {
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            it.next();
        } else if matches!(c, '(' | ')' | ',' | ':' | '{' | '}' | '=') {
            out.push(Tok::Sym(c));
            it.next();
        } else if is_name_char(c) {
            let mut n = String::new();
            while let Some(&c) = it.peek().filter(|c| is_name_char(**c)) {
                n.push(c);
                it.next();
            }
            out.push(Tok::Name(n));
        } else {
            return Err(());
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    metric_queries: &'a mut Vec<String>,
}

/// Why parsing stopped: a syntax error, or a function 2.4 does not have.
enum Stop {
    Syntax,
    Unknown(String),
}

impl Parser<'_> {
    fn peek(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.i + k)
    }

    fn name(&mut self) -> Result<String, Stop> {
        match self.toks.get(self.i) {
            Some(Tok::Name(n)) => {
                self.i += 1;
                Ok(n.clone())
            }
            _ => Err(Stop::Syntax),
        }
    }

    fn sym(&mut self, c: char) -> Result<(), Stop> {
        if self.toks.get(self.i) == Some(&Tok::Sym(c)) {
            self.i += 1;
            Ok(())
        } else {
            Err(Stop::Syntax)
        }
    }

    fn expression(&mut self) -> Result<Tree, Stop> {
        let name = self.name()?;
        // The tree (and so the function lookup) is made before the parenthesis is read.
        let func = Func::by_name(&name).ok_or(Stop::Unknown(name))?;
        let mut tree = Tree {
            func,
            series: BTreeMap::new(),
            params: Vec::new(),
            metric_texts: Vec::new(),
        };
        self.sym('(')?;
        let mut index = 0;
        loop {
            self.parameter(&mut tree, index)?;
            index += 1;
            match self.peek(0) {
                Some(Tok::Sym(',')) => self.i += 1,
                _ => break,
            }
        }
        self.sym(')')?;
        Ok(tree)
    }

    fn parameter(&mut self, tree: &mut Tree, index: usize) -> Result<(), Stop> {
        match self.peek(1) {
            Some(Tok::Sym('(')) => {
                let sub = self.expression()?;
                tree.series.insert(index, Arg::Sub(Box::new(sub)));
            }
            Some(Tok::Sym(':')) => {
                let m = self.metric()?;
                self.metric_queries.push(m.clone());
                tree.metric_texts.push(m);
                tree.series
                    .insert(index, Arg::Metric(self.metric_queries.len() - 1));
            }
            _ => {
                let p = self.name()?;
                tree.params.push(p);
            }
        }
        Ok(())
    }

    fn metric(&mut self) -> Result<String, Stop> {
        let mut out = self.name()?;
        self.sym(':')?;
        out.push(':');
        // Up to two middle parts (interval-aggregator, rate), each a NAME then ':'.
        for _ in 0..2 {
            if matches!(self.peek(0), Some(Tok::Name(_))) && self.peek(1) == Some(&Tok::Sym(':')) {
                out.push_str(&self.name()?);
                self.i += 1;
                out.push(':');
            }
        }
        out.push_str(&self.name()?);
        if self.peek(0) == Some(&Tok::Sym('{')) {
            self.i += 1;
            let mut pairs = Vec::new();
            loop {
                let k = self.name()?;
                self.sym('=')?;
                let v = self.name()?;
                pairs.push(format!("{k}={v}"));
                match self.peek(0) {
                    Some(Tok::Sym(',')) => self.i += 1,
                    _ => break,
                }
            }
            self.sym('}')?;
            out.push('{');
            out.push_str(&pairs.join(","));
            out.push('}');
        }
        Ok(out)
    }
}

/// One `exp=` into its tree, adding its metric queries to `metric_queries`.
fn parse_expression(expr: &str, metric_queries: &mut Vec<String>) -> Result<Tree, GexpError> {
    let syntax = || GexpError::Internal(format!("Failed to parse {expr}"));
    let toks = lex(expr).map_err(|_| syntax())?;
    let mut p = Parser {
        toks,
        i: 0,
        metric_queries,
    };
    // Like the generated parser, what follows the closing parenthesis is not looked at.
    p.expression().map_err(|e| match e {
        Stop::Syntax => syntax(),
        Stop::Unknown(f) => GexpError::Internal(format!("Function {f} has not been implemented")),
    })
}

impl Tree {
    /// `ExpressionTree.writeStringField`: sub-trees, then the metrics without their tags and
    /// aggregators, inside the function's own form.
    fn written(&self) -> String {
        let mut inner: Vec<String> = self
            .series
            .values()
            .filter_map(|a| match a {
                Arg::Sub(t) => Some(t.written()),
                Arg::Metric(_) => None,
            })
            .collect();
        let metrics: Vec<String> = self
            .metric_texts
            .iter()
            .map(|m| {
                let bare = match (m.find('{'), m.rfind('}')) {
                    (Some(a), Some(b)) if b > a => format!("{}{}", &m[..a], &m[b + 1..]),
                    _ => m.clone(),
                };
                bare.rsplit(':').next().unwrap_or_default().to_string()
            })
            .collect();
        if !metrics.is_empty() {
            inner.push(metrics.join(","));
        }
        let inner = inner.join(",");
        match self.func {
            Func::Alias if !self.params.is_empty() => {
                format!("alias({inner},{})", self.params.join(","))
            }
            f => format!("{}({inner})", f.written()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Series as the functions pass them on: what the serializer shows (metric, tags, aggregated
// tags) and what the joins read (`getTagUids`, `metricUID`), which differ once aliased.

#[derive(Debug, Clone)]
struct GSeries {
    metric: String,
    /// The metric's name behind `metricUID()` (none once aliased).
    metric_uid_name: Option<String>,
    tags: BTreeMap<String, String>,
    /// `getTagUids()`: the query's tags even under an alias.
    uid_tags: BTreeMap<String, String>,
    aggregate_tags: Vec<String>,
    /// `getAggregatedTagUids()` (none once aliased).
    uid_aggregate_tags: Vec<String>,
    tsuids: Vec<String>,
    annotations: Vec<tsgate_core::meta::annotation::Annotation>,
    index: usize,
    dps: Vec<(u64, Num)>,
}

impl GSeries {
    fn from_result(r: ResultSeries) -> GSeries {
        GSeries {
            metric_uid_name: Some(r.metric.clone()),
            metric: r.metric,
            uid_tags: r.tags.clone(),
            tags: r.tags,
            uid_aggregate_tags: r.aggregate_tags.clone(),
            aggregate_tags: r.aggregate_tags,
            tsuids: r.tsuids,
            annotations: r.annotations,
            index: r.index,
            dps: r.dps,
        }
    }

    fn with_points(&self, dps: Vec<(u64, Num)>) -> GSeries {
        GSeries {
            dps,
            ..self.clone()
        }
    }
}

/// UID bytes by name, for the orders 2.4 keeps in UID order (joined sets, their metric,
/// aggregated tags). A name without a UID sorts first.
trait Uids {
    fn uid(&self, kind: UidKind, name: &str) -> Vec<u8>;
}

impl Uids for crate::query::QueryEngine {
    fn uid(&self, kind: UidKind, name: &str) -> Vec<u8> {
        self.uids
            .get_id(kind, name)
            .ok()
            .flatten()
            .map(|u| u.to_vec())
            .unwrap_or_default()
    }
}

struct Ctx<'a> {
    start_ms: u64,
    end_ms: u64,
    uids: &'a dyn Uids,
}

fn evaluate(tree: &Tree, results: &[Vec<GSeries>], ctx: &Ctx) -> Result<Vec<GSeries>, GexpError> {
    // `ExpressionTree.evaluate`: series arguments by position 0.., each a metric's result or
    // a sub-tree's; a plain parameter in that run of positions is an unknown parameter type.
    let mut inputs = Vec::new();
    for i in 0..tree.series.len() {
        match tree.series.get(&i) {
            Some(Arg::Metric(ix)) => inputs.push(results.get(*ix).cloned().ok_or_else(|| {
                GexpError::Function(format!("Index: {ix}, Size: {}", results.len()))
            })?),
            Some(Arg::Sub(t)) => inputs.push(evaluate(t, results, ctx)?),
            None => {
                return fail(format!(
                    "Unknown parameter type: null in tree: {}",
                    tree.written()
                ))
            }
        }
    }
    apply(tree.func, &inputs, &tree.params, ctx)
}

fn apply(
    func: Func,
    inputs: &[Vec<GSeries>],
    params: &[String],
    ctx: &Ctx,
) -> Result<Vec<GSeries>, GexpError> {
    if inputs.is_empty() {
        return Ok(Vec::new());
    }
    let all = || inputs.iter().flatten();
    match func {
        Func::Absolute => Ok(all().map(|s| s.with_points(abs_points(&s.dps))).collect()),
        Func::Alias => {
            if params.is_empty() {
                return fail("Missing the alias");
            }
            let template = params.join(",");
            Ok(all()
                .map(|s| {
                    let mut name = template.clone();
                    if name.contains('@') && !s.uid_tags.is_empty() {
                        for (k, v) in &s.tags {
                            name = name.replace(&format!("@{k}"), v);
                        }
                    }
                    GSeries {
                        metric: name,
                        metric_uid_name: None,
                        tags: BTreeMap::new(),
                        aggregate_tags: Vec::new(),
                        uid_aggregate_tags: Vec::new(),
                        dps: abs_points(&s.dps),
                        ..s.clone()
                    }
                })
                .collect())
        }
        Func::Scale => {
            let Some(f) = params.first() else {
                return fail("Missing scaling factor");
            };
            if f.is_empty()
                || !f
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '-' || c == '.')
            {
                return fail("Unparseable scale factor value: 0.0");
            }
            let factor: f64 = f.parse().map_err(|_| {
                GexpError::Function(
                    "Invalid parameter, must be an integer or floating point".into(),
                )
            })?;
            let int = factor == factor.floor() && factor.is_finite();
            Ok(all()
                .map(|s| {
                    s.with_points(
                        s.dps
                            .iter()
                            .map(|&(t, v)| match v {
                                Num::Int(i) if int => {
                                    (t, Num::Int((factor as i64).wrapping_mul(i)))
                                }
                                v => (t, Num::Float(factor * v.as_f64())),
                            })
                            .collect(),
                    )
                })
                .collect())
        }
        Func::MovingAverage => {
            let (window, timed) = moving_window(params)?;
            Ok(all()
                .map(|s| s.with_points(moving_average(&s.dps, window, timed, ctx)))
                .collect())
        }
        Func::HighestMax | Func::HighestCurrent => {
            let n = top_n(params)?;
            let mut series: Vec<&GSeries> = all().collect();
            if func == Func::HighestCurrent {
                // Series without points are left out before ranking.
                series.retain(|s| !s.dps.is_empty());
            }
            let ranks = rank(&series, func == Func::HighestCurrent, ctx);
            let Some(mut ranks) = ranks else {
                return Ok(Vec::new());
            };
            // Arrays.sort on objects is stable: ties keep their input order.
            ranks.sort_by(|a, b| java_double_compare(b.0, a.0));
            Ok(ranks
                .into_iter()
                .take(n)
                .map(|(_, i)| series[i].clone())
                .collect())
        }
        Func::TimeShift => {
            let Some(p) = params.first() else {
                return fail("Need amount of timeshift to perform timeshift");
            };
            let p = p.trim();
            if !(p.starts_with('\'') && p.ends_with('\'')) {
                return fail("Invalid timeshift parameter: eg '10min'");
            }
            let shift = time_shift_ms(p)?;
            Ok(inputs[0]
                .iter()
                .map(|s| s.with_points(s.dps.iter().map(|&(t, v)| (t + shift, v)).collect()))
                .collect())
        }
        Func::Sum | Func::Diff | Func::Multiply | Func::Divide => {
            if inputs.len() < 2 || inputs.len() > 26 {
                return fail(format!(
                    "Must have 2 to 26 series, got {} instead",
                    inputs.len()
                ));
            }
            combine(func, inputs, ctx)
        }
    }
}

fn abs_points(dps: &[(u64, Num)]) -> Vec<(u64, Num)> {
    dps.iter()
        .map(|&(t, v)| match v {
            Num::Int(i) => (t, Num::Int(i.wrapping_abs())),
            Num::Float(f) => (t, Num::Float(f.abs())),
        })
        .collect()
}

/// Java's `Double.compare`: -0.0 below 0.0, every NaN above everything.
fn java_double_compare(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Equal,
        (true, false) => Greater,
        (false, true) => Less,
        _ => a.total_cmp(&b),
    }
}

/// Java's `Math.max(double, double)`: NaN if either is.
fn jmax(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Java's `Integer.parseInt` on digits: its overflow is a `NumberFormatException`.
fn parse_int(digits: &str) -> Result<i64, GexpError> {
    digits
        .parse::<i32>()
        .map(i64::from)
        .map_err(|_| GexpError::Function(format!("For input string: \"{digits}\"")))
}

/// `movingAverage`'s window: a count of points, or a quoted time (`'5min'`) in ms.
fn moving_window(params: &[String]) -> Result<(u64, bool), GexpError> {
    let Some(p) = params.first().filter(|p| !p.is_empty()) else {
        return fail("Missing moving average window size");
    };
    let p = p.trim();
    let (window, timed) = if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) {
        let n = p
            .parse::<i32>()
            .map_err(|_| GexpError::Function("Invalid parameter, must be an integer".into()))?;
        (i64::from(n), false)
    } else if p.starts_with('\'') && p.ends_with('\'') {
        let digits = p[1..].chars().take_while(|c| c.is_ascii_digit()).count();
        if digits < 1 {
            return fail(format!("Invalid moving window parameter: {p}"));
        }
        let time = p[1..1 + digits].parse::<i32>().map_err(|_| {
            GexpError::Function(format!("Unable to parse moving window parameter: {p}"))
        })?;
        let unit = &p[1 + digits..p.len() - 1];
        let ms = match unit {
            "day" | "d" => 86_400_000,
            "hr" | "hour" | "h" => 3_600_000,
            "min" | "m" => 60_000,
            "sec" | "s" => 1_000,
            _ => return fail(format!("Unknown time unit={unit} in window={p}")),
        };
        (i64::from(time) * ms, true)
    } else {
        return fail(format!("Unparseable window size: {p}"));
    };
    if window <= 0 {
        return fail("Moving average window must be an integer greater than zero");
    }
    Ok((window as u64, timed))
}

/// `MovingAverageAggregator` over one series' points in the query range: the mean of the
/// last `window` points, or of the points less than `window` ms older than the current
/// one; 0 until the window is full (and for a timed window's first point). NaNs are skipped.
fn moving_average(dps: &[(u64, Num)], window: u64, timed: bool, ctx: &Ctx) -> Vec<(u64, Num)> {
    let mut out = Vec::new();
    let mut acc: Vec<(u64, f64)> = Vec::new(); // oldest first
    let mut started = false;
    for &(t, v) in dps
        .iter()
        .filter(|p| p.0 >= ctx.start_ms && p.0 <= ctx.end_ms)
    {
        acc.push((t, v.as_f64()));
        if timed && !started {
            started = true;
            out.push((t, Num::Float(0.0)));
            continue;
        }
        let (mut sum, mut count, mut met) = (0.0, 0u64, false);
        let (mut span, mut last) = (0u64, None::<u64>);
        let mut keep_from = 0;
        for (i, &(pt, pv)) in acc.iter().enumerate().rev() {
            if timed {
                if let Some(l) = last {
                    span += l - pt;
                    if span >= window {
                        met = true;
                        keep_from = i;
                        break;
                    }
                }
                last = Some(pt);
            }
            if !pv.is_nan() {
                sum += pv;
                count += 1;
            }
            if !timed && count >= window {
                met = true;
                keep_from = i;
                break;
            }
        }
        // What lies past the point the walk stopped at is dropped.
        acc.drain(..keep_from);
        let avg = if met && count > 0 {
            sum / count as f64
        } else {
            0.0
        };
        out.push((t, Num::Float(avg)));
    }
    out
}

fn top_n(params: &[String]) -> Result<usize, GexpError> {
    let Some(p) = params.first() else {
        return fail("Need aggregation window for moving average");
    };
    if p.is_empty() {
        return fail("Missing top n value (number of series to return)");
    }
    if !p.chars().all(|c| c.is_ascii_digit()) {
        return fail(format!("Unparseable top n value: {p}"));
    }
    let n = p
        .parse::<i32>()
        .map_err(|_| GexpError::Function("Invalid parameter, must be an integer".into()))?;
    if n < 1 {
        return fail(format!("Top n value must be greater than zero: {n}"));
    }
    Ok(n as usize)
}

/// A series' value at `t` as `AggregationIterator` gives it: its own point, or linear
/// interpolation between its neighbours; none outside its first..last points.
fn value_at(dps: &[(u64, Num)], t: u64) -> Option<Num> {
    let i = dps.partition_point(|p| p.0 < t);
    if let Some(&(pt, v)) = dps.get(i) {
        if pt == t {
            return Some(v);
        }
    }
    if i == 0 || i >= dps.len() {
        return None;
    }
    let ((x0, y0), (x1, y1)) = (dps[i - 1], dps[i]);
    Some(match (y0, y1) {
        (Num::Int(a), Num::Int(b)) => Num::Int(
            a.wrapping_add(((t - x0) as i64).wrapping_mul(b.wrapping_sub(a)) / (x1 - x0) as i64),
        ),
        (a, b) => {
            let (a, b) = (a.as_f64(), b.as_f64());
            Num::Float(a + (t - x0) as f64 * (b - a) / (x1 - x0) as f64)
        }
    })
}

/// `highestMax`'s `MaxCacheAggregator` or `highestCurrent`'s `MaxLatestAggregator` over
/// the series together: per timestamp in range, the values of the series that have one are
/// packed from slot 0 (the rest 0) and folded into per-slot maxima (or taken whole, for
/// "current"), on the integer or the double path; then one rank value per series.
fn rank(series: &[&GSeries], current: bool, ctx: &Ctx) -> Option<Vec<(f64, usize)>> {
    let n = series.len();
    let mut max_longs = vec![i64::MIN; n];
    // Java's Double.MIN_VALUE, the smallest positive double.
    let mut max_doubles = vec![f64::from_bits(1); n];
    let (mut has_longs, mut has_doubles) = (false, false);
    let stamps: BTreeSet<u64> = series
        .iter()
        .flat_map(|s| s.dps.iter().map(|p| p.0))
        .filter(|t| *t >= ctx.start_ms && *t <= ctx.end_ms)
        .collect();
    for t in stamps {
        let vals: Vec<Num> = series.iter().filter_map(|s| value_at(&s.dps, t)).collect();
        if vals.iter().all(|v| matches!(v, Num::Int(_))) {
            has_longs = true;
            let mut packed = vec![0i64; n];
            for (slot, v) in vals.iter().enumerate() {
                if let Num::Int(i) = v {
                    packed[slot] = *i;
                }
            }
            for i in 0..n {
                max_longs[i] = if current {
                    packed[i]
                } else {
                    max_longs[i].max(packed[i])
                };
            }
        } else {
            has_doubles = true;
            let mut packed = vec![0f64; n];
            for (slot, v) in vals.iter().enumerate() {
                packed[slot] = v.as_f64();
            }
            for i in 0..n {
                max_doubles[i] = if current {
                    packed[i]
                } else {
                    jmax(max_doubles[i], packed[i])
                };
            }
        }
    }
    let value = |i: usize| match (has_longs, has_doubles) {
        (true, true) => Some(jmax(max_longs[i] as f64, max_doubles[i])),
        (true, false) => Some(max_longs[i] as f64),
        (false, true) => Some(max_doubles[i]),
        (false, false) => None,
    };
    (0..n).map(|i| value(i).map(|v| (v, i))).collect()
}

/// `TimeShift.parseParam` on a quoted parameter: the unit is what follows the digits up to
/// the end, closing quote included, so none of its units match.
fn time_shift_ms(p: &str) -> Result<u64, GexpError> {
    let digits = p[1..].chars().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return fail(format!("Invalid Parameter: {p}"));
    }
    let time = parse_int(&p[1..1 + digits])? as u64;
    let unit = p[1 + digits..].trim();
    let ms = match unit {
        "sec" => 1_000,
        "min" => 60_000,
        "hr" => 3_600_000,
        "day" | "days" => 86_400_000,
        "week" | "weeks" => 7 * 86_400_000,
        _ => return fail(format!("unknown time unit={unit}")),
    };
    Ok(time * ms)
}

/// The series functions: `ExpressionIterator` over `a + b`, `a - b`, `a * b` or `a / b`
/// (one variable per argument) with a union join on the series' tags.
fn combine(func: Func, inputs: &[Vec<GSeries>], ctx: &Ctx) -> Result<Vec<GSeries>, GexpError> {
    let n = inputs.len();
    let key = |s: &GSeries| -> Vec<u8> {
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = s
            .uid_tags
            .iter()
            .map(|(k, v)| {
                (
                    ctx.uids.uid(UidKind::Tagk, k),
                    ctx.uids.uid(UidKind::Tagv, v),
                )
            })
            .collect();
        pairs.sort();
        pairs
            .into_iter()
            .flat_map(|(k, v)| k.into_iter().chain(v))
            .collect()
    };
    // Joined sets in the order of their keys' bytes; within one argument the last series
    // of a key wins.
    let mut sets: BTreeMap<Vec<u8>, Vec<Option<&GSeries>>> = BTreeMap::new();
    for (v, series) in inputs.iter().enumerate() {
        // A series without points has no current value to join on (2.4 fails on it).
        for s in series.iter().filter(|s| !s.dps.is_empty()) {
            sets.entry(key(s)).or_insert_with(|| vec![None; n])[v] = Some(s);
        }
    }
    let mut out = Vec::new();
    for members in sets.values() {
        let present: Vec<&GSeries> = members.iter().flatten().copied().collect();
        let metric = present
            .iter()
            .filter_map(|s| s.metric_uid_name.as_ref())
            .min_by_key(|m| ctx.uids.uid(UidKind::Metric, m))
            .cloned()
            .unwrap_or_else(|| present[0].metric.clone());
        let mut agg: Vec<&String> = present
            .iter()
            .flat_map(|s| s.uid_aggregate_tags.iter())
            .collect();
        agg.sort_by_key(|k| ctx.uids.uid(UidKind::Tagk, k));
        agg.dedup();
        let tags = members[0].map(|s| s.uid_tags.clone()).unwrap_or_default();
        // Each member's points are walked by position, together; a member that runs out
        // while another goes on is `TimeSyncedIterator`'s "No more elements".
        let longest = present.iter().map(|s| s.dps.len()).max().unwrap_or(0);
        let mut dps = Vec::with_capacity(longest);
        for k in 0..longest {
            if present.iter().any(|s| k >= s.dps.len()) {
                return fail("No more elements");
            }
            let ts = present.iter().map(|s| s.dps[k].0).min().unwrap_or(u64::MAX);
            let vals = members.iter().map(|m| match m {
                Some(s) => {
                    let v = s.dps[k].1.as_f64();
                    if v.is_nan() {
                        0.0
                    } else {
                        v
                    }
                }
                None => 0.0,
            });
            let r = vals
                .reduce(|a, b| match func {
                    Func::Sum => a + b,
                    Func::Diff => a - b,
                    Func::Multiply => a * b,
                    // Lenient JEXL: dividing by zero gives 0.
                    _ if b == 0.0 => 0.0,
                    _ => a / b,
                })
                .unwrap_or(0.0);
            dps.push((ts, Num::Float(r)));
        }
        out.push(GSeries {
            metric_uid_name: Some(metric.clone()),
            metric,
            uid_tags: tags.clone(),
            tags,
            aggregate_tags: agg.iter().map(|s| s.to_string()).collect(),
            uid_aggregate_tags: agg.iter().map(|s| s.to_string()).collect(),
            tsuids: Vec::new(),
            annotations: Vec::new(),
            index: 0,
            dps,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------

fn run(
    st: &OpenTsdb,
    params: &[(String, String)],
    started: std::time::Instant,
) -> Result<String, GexpError> {
    if !params.iter().any(|(k, v)| k == "start" && !v.is_empty()) {
        return Err(ParseError::MissingStartParam.into());
    }
    let mut metric_queries = Vec::new();
    let mut trees = Vec::new();
    for (_, e) in params.iter().filter(|(k, _)| k == "exp") {
        if e.is_empty() {
            return Err(GexpError::Internal(format!("Failed to parse {e}")));
        }
        trees.push(parse_expression(e, &mut metric_queries)?);
    }
    // 2.4's order: tsuid= sub-queries, then m=, then the expressions' metrics; equal
    // sub-queries are kept once, and the expressions index into that list.
    let mut ordered: Vec<(String, String)> = params
        .iter()
        .filter(|(k, _)| k != "m" && k != "tsuid")
        .cloned()
        .collect();
    ordered.extend(params.iter().filter(|(k, _)| k == "tsuid").cloned());
    ordered.extend(params.iter().filter(|(k, _)| k == "m").cloned());
    ordered.extend(metric_queries.iter().map(|m| ("m".to_string(), m.clone())));
    let now = tsgate_common::clock::now_ms();
    let mut q = parse::from_params(&ordered, now)?;
    q.flags.arrays = params.iter().any(|(k, _)| k == "arrays");
    dedup_queries(&mut q);
    let (series, summary) = st.query.run(&q)?;
    let mut results: Vec<Vec<GSeries>> = vec![Vec::new(); q.queries.len()];
    for s in series {
        if let Some(r) = results.get_mut(s.index) {
            r.push(GSeries::from_result(s));
        }
    }
    let ctx = Ctx {
        start_ms: q.start_ms,
        end_ms: q.end_ms,
        uids: st.query.as_ref(),
    };
    let mut out = Vec::new();
    for t in &trees {
        out.extend(evaluate(t, &results, &ctx)?);
    }
    let series: Vec<ResultSeries> = out
        .into_iter()
        .map(|s| ResultSeries {
            nan_as_null: q.queries.get(s.index).is_some_and(|sq| {
                sq.downsample
                    .as_ref()
                    .is_some_and(|d| d.fill == FillPolicy::Null)
            }),
            index: s.index.min(q.queries.len().saturating_sub(1)),
            metric: s.metric,
            tags: s.tags,
            aggregate_tags: s.aggregate_tags,
            tsuids: s.tsuids,
            // The serializer writes the points in the query's range only.
            dps: s
                .dps
                .into_iter()
                .filter(|p| p.0 >= q.start_ms && p.0 <= q.end_ms)
                .collect(),
            annotations: s.annotations,
        })
        .collect();
    Ok(super::opentsdb_query::answer(
        st, &q, &series, &summary, started,
    )?)
}

/// `TSQuery`'s sub-queries through a `LinkedHashSet`: the first of equal ones stays.
fn dedup_queries(q: &mut Query) {
    let mut seen: Vec<SubQuery> = Vec::new();
    for sq in q.queries.drain(..) {
        let same = |o: &SubQuery| SubQuery {
            index: 0,
            ..o.clone()
        };
        if !seen
            .iter()
            .any(|s| format!("{:?}", same(s)) == format!("{:?}", same(&sq)))
        {
            seen.push(sq);
        }
    }
    for (i, sq) in seen.iter_mut().enumerate() {
        sq.index = i;
    }
    q.queries = seen;
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: u64 = 1356998400000;
    const STEP: u64 = 60000;

    /// `SeekableViewsForTest.generator(START, 60000, 5, true, 1, 1)`: 1..5, a minute apart.
    fn ramp() -> Vec<(u64, Num)> {
        (0..5)
            .map(|i| (START + i * STEP, Num::Int(1 + i as i64)))
            .collect()
    }

    struct NoUids;
    impl Uids for NoUids {
        fn uid(&self, _: UidKind, name: &str) -> Vec<u8> {
            name.as_bytes().to_vec()
        }
    }

    fn ctx() -> Ctx<'static> {
        Ctx {
            start_ms: START,
            end_ms: START + 5 * STEP,
            uids: &NoUids,
        }
    }

    fn floats(v: &[(u64, Num)]) -> Vec<f64> {
        v.iter().map(|p| p.1.as_f64()).collect()
    }

    #[test]
    fn grammar_metrics_and_parameters() {
        let mut mq = Vec::new();
        let t = parse_expression(
            " alias( scale(sum:1m-avg:rate:sys.cpu{host=web*,dc=a|b}, 2) ,, x)",
            &mut mq,
        );
        // ",," is not the grammar's separator.
        assert!(matches!(t, Err(GexpError::Internal(m)) if m.starts_with("Failed to parse")));
        mq.clear();
        let t = parse_expression(
            "alias(scale(sum:1m-avg:rate:sys.cpu{host=web*, dc=a|b},2),cpu.@host)",
            &mut mq,
        )
        .ok()
        .unwrap();
        assert_eq!(mq, ["sum:1m-avg:rate:sys.cpu{host=web*,dc=a|b}"]);
        assert_eq!(t.func, Func::Alias);
        assert_eq!(t.params, ["cpu.@host"]);
        assert_eq!(t.written(), "alias(scale(sys.cpu),cpu.@host)");
        for bad in [
            "scale(sum:m",
            "scale(sum:m{host}, 2)",
            "scale(sum:m + 2)",
            "scale()",
            "",
        ] {
            assert!(
                matches!(parse_expression(bad, &mut mq), Err(GexpError::Internal(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_expression("sumSeries(sum:a,foo(sum:b))", &mut mq),
            Err(GexpError::Internal(m)) if m == "Function foo has not been implemented"
        ));
        // Aliases of the series functions.
        for (name, f) in [
            ("sum", Func::Sum),
            ("difference", Func::Diff),
            ("divide", Func::Divide),
            ("multiply", Func::Multiply),
            ("shift", Func::TimeShift),
        ] {
            assert_eq!(Func::by_name(name), Some(f));
        }
    }

    /// TestMovingAverage's expectations over 1..5.
    #[test]
    fn moving_average_windows_as_2_4_tests_them() {
        let cases: [(&str, [f64; 5]); 9] = [
            ("1", [1.0, 2.0, 3.0, 4.0, 5.0]),
            ("2", [0.0, 1.5, 2.5, 3.5, 4.5]),
            ("5", [0.0, 0.0, 0.0, 0.0, 3.0]),
            ("6", [0.0; 5]),
            ("'1min'", [0.0, 2.0, 3.0, 4.0, 5.0]),
            ("'2min'", [0.0, 0.0, 2.5, 3.5, 4.5]),
            ("'3min'", [0.0, 0.0, 0.0, 3.0, 4.0]),
            ("'4min'", [0.0, 0.0, 0.0, 0.0, 3.5]),
            ("'5min'", [0.0; 5]),
        ];
        for (p, want) in cases {
            let (w, timed) = moving_window(&[p.to_string()]).ok().unwrap();
            assert_eq!(
                floats(&moving_average(&ramp(), w, timed, &ctx())),
                want,
                "{p}"
            );
        }
        for (p, msg) in [
            (
                "0",
                "Moving average window must be an integer greater than zero",
            ),
            ("x", "Unparseable window size: x"),
            ("'5y'", "Unknown time unit=y in window='5y'"),
            ("'m'", "Invalid moving window parameter: 'm'"),
        ] {
            assert!(
                matches!(moving_window(&[p.into()]), Err(GexpError::Function(m)) if m == msg),
                "{p}"
            );
        }
    }

    fn series(metric: &str, tags: &[(&str, &str)], dps: Vec<(u64, Num)>) -> GSeries {
        let tags: BTreeMap<String, String> = tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        GSeries::from_result(ResultSeries {
            index: 0,
            metric: metric.into(),
            tags,
            aggregate_tags: vec![],
            tsuids: vec![],
            dps,
            nan_as_null: false,
            annotations: vec![],
        })
    }

    /// TestHighestCurrent / TestHighestMax: 1..5 against 10..14 (and 10, 11.5, … doubles).
    #[test]
    fn highest_current_and_max_rank_series() {
        let a = series("sys.cpu", &[], ramp());
        let b = series(
            "sys.mem",
            &[],
            ramp()
                .iter()
                .map(|&(t, v)| (t, Num::Int(v.as_f64() as i64 + 9)))
                .collect(),
        );
        for f in [Func::HighestCurrent, Func::HighestMax] {
            let out = apply(f, &[vec![a.clone(), b.clone()]], &["1".into()], &ctx())
                .ok()
                .unwrap();
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].metric, "sys.mem");
            assert_eq!(out[0].dps[0].1, Num::Int(10));
            let out = apply(
                f,
                &[vec![a.clone()], vec![b.clone()]],
                &["100".into()],
                &ctx(),
            )
            .ok()
            .unwrap();
            assert_eq!(
                out.iter().map(|s| s.metric.as_str()).collect::<Vec<_>>(),
                ["sys.mem", "sys.cpu"]
            );
        }
        let d = series(
            "sys.mem",
            &[],
            (0..5)
                .map(|i| (START + i * STEP, Num::Float(10.0 + 1.5 * i as f64)))
                .collect(),
        );
        let out = apply(
            Func::HighestMax,
            &[vec![a.clone(), d]],
            &["2".into()],
            &ctx(),
        )
        .ok()
        .unwrap();
        assert_eq!(out[0].metric, "sys.mem");
        assert_eq!(out[1].metric, "sys.cpu");
        assert!(
            matches!(top_n(&["0".into()]), Err(GexpError::Function(m)) if m == "Top n value must be greater than zero: 0")
        );
        assert!(
            matches!(top_n(&["x".into()]), Err(GexpError::Function(m)) if m == "Unparseable top n value: x")
        );
        assert_eq!(
            java_double_compare(f64::NAN, f64::INFINITY),
            std::cmp::Ordering::Greater
        );
        assert_eq!(java_double_compare(-0.0, 0.0), std::cmp::Ordering::Less);
    }

    /// TestSumSeries.sumOneSeriesEach: 1.. plus 10.. is 11, 13, …; positions walk together
    /// and a member that runs out first is an error.
    #[test]
    fn series_functions_walk_positions() {
        let a = series("sys.cpu", &[], ramp());
        let b = series(
            "sys.mem",
            &[],
            (0..5)
                .map(|i| (START + i * STEP, Num::Int(10 + i as i64)))
                .collect(),
        );
        let out = apply(Func::Sum, &[vec![a.clone()], vec![b.clone()]], &[], &ctx())
            .ok()
            .unwrap();
        assert_eq!(out[0].metric, "sys.cpu");
        assert_eq!(floats(&out[0].dps), [11.0, 13.0, 15.0, 17.0, 19.0]);
        let out = apply(
            Func::Divide,
            &[vec![a.clone()], vec![b.clone()]],
            &[],
            &ctx(),
        )
        .ok()
        .unwrap();
        let want = [0.1, 2.0 / 11.0, 0.25, 4.0 / 13.0, 5.0 / 14.0];
        assert_eq!(floats(&out[0].dps), want);
        let mut short = b.clone();
        short.dps.pop();
        assert!(matches!(
            apply(Func::Sum, &[vec![a.clone()], vec![short]], &[], &ctx()),
            Err(GexpError::Function(m)) if m == "No more elements"
        ));
        assert!(matches!(
            apply(Func::Diff, &[vec![a.clone()]], &[], &ctx()),
            Err(GexpError::Function(m)) if m == "Must have 2 to 26 series, got 1 instead"
        ));
    }

    #[test]
    fn scale_absolute_and_alias_keep_integers() {
        let a = series(
            "m",
            &[("host", "web01")],
            vec![(START, Num::Int(-3)), (START + STEP, Num::Float(-1.5))],
        );
        let out = apply(Func::Scale, &[vec![a.clone()]], &["2".into()], &ctx())
            .ok()
            .unwrap();
        assert_eq!(
            out[0].dps,
            [(START, Num::Int(-6)), (START + STEP, Num::Float(-3.0))]
        );
        let out = apply(Func::Scale, &[vec![a.clone()]], &["0.5".into()], &ctx())
            .ok()
            .unwrap();
        assert_eq!(out[0].dps[0].1, Num::Float(-1.5));
        let out = apply(Func::Absolute, &[vec![a.clone()]], &[], &ctx())
            .ok()
            .unwrap();
        assert_eq!(
            out[0].dps,
            [(START, Num::Int(3)), (START + STEP, Num::Float(1.5))]
        );
        let out = apply(
            Func::Alias,
            &[vec![a]],
            &["x".into(), "@host".into()],
            &ctx(),
        )
        .ok()
        .unwrap();
        assert_eq!(out[0].metric, "x,web01");
        assert!(out[0].tags.is_empty());
        assert_eq!(out[0].dps[0].1, Num::Int(3));
        assert!(
            matches!(time_shift_ms("'1'"), Err(GexpError::Function(m)) if m == "unknown time unit='")
        );
        assert!(
            matches!(time_shift_ms("''"), Err(GexpError::Function(m)) if m == "Invalid Parameter: ''")
        );
    }
}
