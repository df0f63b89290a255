//! OpenTSDB 2.4's `/api/query/exp`: metrics queried through the ordinary `/api/query` engine
//! (one sub-query each, with the shared `time` and a named filter), expressions over them with
//! JEXL-style arithmetic (`+ - * / %`, parentheses, numbers, unary minus) whose series are joined
//! by tags (`intersection` or `union`), and outputs as OpenTSDB's `QueryExecutor` writes them:
//! rows of `[timestamp_ms, value per series]` with `dpsMeta` and per-series `meta`. 2.4 has no
//! functions in `exp` expressions (those are `/api/query/gexp`'s).

use super::http::{error_reply, json_reply, Reply, Request};
use crate::meta::json::esc;
use crate::query::{parse, QueryError, ResultSeries};
use crate::server::state::OpenTsdb;
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tsgate_common::numfmt::java_double;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExpQuery {
    time: Time,
    #[serde(default)]
    filters: Vec<Filter>,
    #[serde(default)]
    metrics: Vec<Metric>,
    #[serde(default)]
    expressions: Vec<Expression>,
    #[serde(default)]
    outputs: Vec<Output>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Time {
    start: Json,
    #[serde(default)]
    end: Option<Json>,
    aggregator: String,
    #[serde(default)]
    downsampler: Option<Downsampler>,
    #[serde(default)]
    rate: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Downsampler {
    interval: String,
    aggregator: String,
    #[serde(default)]
    fill_policy: Option<FillPolicy>,
}

#[derive(Debug, Clone, Deserialize)]
struct FillPolicy {
    policy: String,
    #[serde(default)]
    value: Option<f64>,
}

impl FillPolicy {
    /// The value a missing point takes when series are synchronised.
    fn value(&self) -> f64 {
        match self.policy.to_ascii_lowercase().as_str() {
            "nan" | "null" => f64::NAN,
            "scalar" => self.value.unwrap_or(0.0),
            _ => 0.0,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Filter {
    id: String,
    #[serde(default)]
    tags: Vec<Json>,
    #[serde(default)]
    explicit_tags: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metric {
    id: String,
    metric: String,
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    aggregator: Option<String>,
    #[serde(default)]
    fill_policy: Option<FillPolicy>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Expression {
    id: String,
    expr: String,
    #[serde(default)]
    join: Option<Join>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Join {
    #[serde(default = "intersection")]
    operator: String,
    #[serde(default)]
    use_query_tags: bool,
    #[serde(default = "yes")]
    include_agg_tags: bool,
}

fn intersection() -> String {
    "intersection".into()
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
struct Output {
    id: String,
    #[serde(default)]
    alias: Option<String>,
}

pub(super) async fn query(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    if req.method != Method::POST {
        return super::api::method_not_allowed(&req.method);
    }
    let echo: Json = match serde_json::from_slice(&req.body) {
        Ok(j) => j,
        Err(e) => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                "Unable to parse the given JSON",
                &e.to_string(),
            )
        }
    };
    let q: ExpQuery = match serde_json::from_value(echo.clone()) {
        Ok(q) => q,
        Err(e) => {
            return error_reply(
                StatusCode::BAD_REQUEST,
                "Invalid expression query",
                &e.to_string(),
            )
        }
    };
    let st = state.clone();
    let res = crate::server::blocking::run(move || run(&st, &q, &echo)).await;
    match res {
        Ok(Ok(body)) => json_reply(StatusCode::OK, body),
        Ok(Err(ExpError::Bad(m))) => error_reply(StatusCode::BAD_REQUEST, &m, ""),
        Ok(Err(ExpError::Query(e))) => error_reply(StatusCode::BAD_REQUEST, &e.to_string(), ""),
        Err(e) => error_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "query task failed",
            &e.to_string(),
        ),
    }
}

#[derive(Debug)]
enum ExpError {
    Bad(String),
    Query(QueryError),
}

impl From<QueryError> for ExpError {
    fn from(e: QueryError) -> ExpError {
        match e {
            QueryError::BadRequest(m) => ExpError::Bad(m),
            e => ExpError::Query(e),
        }
    }
}

/// One metric's result: its series and how they were asked for.
struct Var<'a> {
    metric: &'a Metric,
    series: Vec<ResultSeries>,
    /// Tag keys of the metric's filter (`useQueryTags` joins on these only).
    filter_keys: BTreeSet<String>,
}

fn run(st: &OpenTsdb, q: &ExpQuery, echo: &Json) -> Result<String, ExpError> {
    if q.metrics.is_empty() {
        return Err(ExpError::Bad("Missing metrics".into()));
    }
    let now = tsgate_common::clock::now_ms();
    let mut vars: BTreeMap<&str, Var> = BTreeMap::new();
    let (mut start_ms, mut end_ms) = (0, 0);
    for m in &q.metrics {
        let filter = match &m.filter {
            Some(id) => Some(
                q.filters
                    .iter()
                    .find(|f| &f.id == id)
                    .ok_or_else(|| ExpError::Bad(format!("No filter defined: {id}")))?,
            ),
            None => None,
        };
        let mut sub = json!({
            "aggregator": m.aggregator.as_deref().unwrap_or(&q.time.aggregator),
            "metric": m.metric,
            "rate": q.time.rate,
            "filters": filter.map(|f| f.tags.clone()).unwrap_or_default(),
            "explicitTags": filter.is_some_and(|f| f.explicit_tags),
        });
        if let Some(ds) = &q.time.downsampler {
            let mut spec = format!("{}-{}", ds.interval, ds.aggregator);
            if let Some(fp) = &ds.fill_policy {
                if matches!(fp.policy.as_str(), "nan" | "null" | "zero") {
                    spec = format!("{spec}-{}", fp.policy);
                }
            }
            sub["downsample"] = json!(spec);
        }
        let mut body = json!({"start": q.time.start, "queries": [sub]});
        if let Some(e) = &q.time.end {
            body["end"] = e.clone();
        }
        let parsed = parse::from_json(body.to_string().as_bytes(), now)
            .map_err(|e| ExpError::Bad(e.to_string()))?;
        (start_ms, end_ms) = (parsed.start_ms, parsed.end_ms);
        let (series, _) = st.query.run(&parsed)?;
        let filter_keys = filter
            .map(|f| {
                f.tags
                    .iter()
                    .filter_map(|t| t.get("tagk").and_then(|k| k.as_str()).map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        vars.insert(
            m.id.as_str(),
            Var {
                metric: m,
                series,
                filter_keys,
            },
        );
    }
    let outputs: Vec<Output> = if !q.outputs.is_empty() {
        q.outputs
            .iter()
            .map(|o| Output {
                id: o.id.clone(),
                alias: o.alias.clone(),
            })
            .collect()
    } else if !q.expressions.is_empty() {
        q.expressions
            .iter()
            .map(|e| Output {
                id: e.id.clone(),
                alias: None,
            })
            .collect()
    } else {
        q.metrics
            .iter()
            .map(|m| Output {
                id: m.id.clone(),
                alias: None,
            })
            .collect()
    };
    let mut out = Vec::new();
    for o in &outputs {
        if let Some(e) = q.expressions.iter().find(|e| e.id == o.id) {
            out.push(expression_output(
                o,
                e,
                &vars,
                start_ms,
                end_ms,
                st.settings.max_depth,
            )?);
        } else if let Some(v) = vars.get(o.id.as_str()) {
            out.push(metric_output(o, v));
        }
    }
    Ok(format!(
        "{{\"outputs\":[{}],\"query\":{}}}",
        out.join(","),
        echo
    ))
}

/// A joined row source: per output series, the input series of each variable (or none) and
/// the tags the inputs share.
struct Joined<'a> {
    inputs: Vec<Option<&'a ResultSeries>>,
}

fn join_key(s: &ResultSeries, v: &Var, join: &Join) -> String {
    let mut key: Vec<String> = s
        .tags
        .iter()
        .filter(|(k, _)| !join.use_query_tags || v.filter_keys.contains(*k))
        .map(|(k, val)| format!("{k}={val}"))
        .collect();
    if join.include_agg_tags {
        key.extend(s.aggregate_tags.iter().map(|k| format!("{k}=*")));
    }
    key.sort();
    key.join(",")
}

fn expression_output(
    o: &Output,
    e: &Expression,
    vars: &BTreeMap<&str, Var>,
    start_ms: u64,
    end_ms: u64,
    max_depth: usize,
) -> Result<String, ExpError> {
    let ast = parse_expr(&e.expr, max_depth)
        .map_err(|m| ExpError::Bad(format!("Unable to parse expression [{}]: {m}", e.expr)))?;
    let mut names = Vec::new();
    ast.variables(&mut names);
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(ExpError::Bad(format!(
            "Expression [{}] has no variables",
            e.expr
        )));
    }
    let used: Vec<(&str, &Var)> = names
        .iter()
        .map(|n| {
            vars.get(n.as_str())
                .map(|v| (n.as_str(), v))
                .ok_or_else(|| {
                    ExpError::Bad(format!("No metric or expression found for variable: {n}"))
                })
        })
        .collect::<Result<_, _>>()?;
    let default_join = Join {
        operator: intersection(),
        use_query_tags: false,
        include_agg_tags: true,
    };
    let join = e.join.as_ref().unwrap_or(&default_join);
    let union = match join.operator.to_ascii_lowercase().as_str() {
        "intersection" => false,
        "union" => true,
        other => return Err(ExpError::Bad(format!("Unknown join operator: {other}"))),
    };
    // key → the series of each variable.
    let mut sets: BTreeMap<String, Joined> = BTreeMap::new();
    for (i, (_, v)) in used.iter().enumerate() {
        for s in &v.series {
            let j = sets.entry(join_key(s, v, join)).or_insert_with(|| Joined {
                inputs: vec![None; used.len()],
            });
            j.inputs[i] = Some(s);
        }
    }
    if !union {
        sets.retain(|_, j| j.inputs.iter().all(Option::is_some));
    }
    let sets: Vec<Joined> = sets.into_values().collect();
    let mut stamps = BTreeSet::new();
    for j in &sets {
        for s in j.inputs.iter().flatten() {
            stamps.extend(s.dps.iter().map(|p| p.0));
        }
    }
    let fills: Vec<f64> = used
        .iter()
        .map(|(_, v)| {
            v.metric
                .fill_policy
                .as_ref()
                .map(FillPolicy::value)
                .unwrap_or(0.0)
        })
        .collect();
    // Per series and variable: timestamp → value.
    let lookup: Vec<Vec<BTreeMap<u64, f64>>> = sets
        .iter()
        .map(|j| {
            j.inputs
                .iter()
                .map(|s| {
                    s.map(|s| s.dps.iter().map(|(t, v)| (*t, v.as_f64())).collect())
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect();
    let mut rows = Vec::new();
    let (mut first, mut last, mut count) = (i64::MIN, 0u64, 0u64);
    for &ts in stamps.iter().filter(|&&t| t >= start_ms && t <= end_ms) {
        let mut row = vec![ts.to_string()];
        for per_var in &lookup {
            let env: BTreeMap<&str, f64> = used
                .iter()
                .enumerate()
                .map(|(i, (n, _))| (*n, per_var[i].get(&ts).copied().unwrap_or(fills[i])))
                .collect();
            row.push(number(ast.eval(&env)));
        }
        // OpenTSDB's serializer sets the last timestamp only from the second row on.
        if first == i64::MIN {
            first = ts as i64;
        } else {
            last = ts;
        }
        count += 1;
        rows.push(format!("[{}]", row.join(",")));
    }
    let metas: Vec<SeriesMeta> = sets
        .iter()
        .map(|j| SeriesMeta::of(j.inputs.iter().flatten().copied()))
        .collect();
    Ok(write_output(
        o,
        &rows,
        first.max(0) as u64,
        last,
        count,
        &metas,
    ))
}

fn metric_output(o: &Output, v: &Var) -> String {
    let mut stamps = BTreeSet::new();
    for s in &v.series {
        stamps.extend(s.dps.iter().map(|p| p.0));
    }
    let fill = v
        .metric
        .fill_policy
        .as_ref()
        .map(FillPolicy::value)
        .unwrap_or(0.0);
    let maps: Vec<BTreeMap<u64, f64>> = v
        .series
        .iter()
        .map(|s| s.dps.iter().map(|(t, x)| (*t, x.as_f64())).collect())
        .collect();
    let rows: Vec<String> = stamps
        .iter()
        .map(|ts| {
            let mut row = vec![ts.to_string()];
            row.extend(
                maps.iter()
                    .map(|m| number(m.get(ts).copied().unwrap_or(fill))),
            );
            format!("[{}]", row.join(","))
        })
        .collect();
    let first = stamps.first().copied().unwrap_or(0);
    let last = stamps.last().copied().unwrap_or(0);
    let metas: Vec<SeriesMeta> = v.series.iter().map(|s| SeriesMeta::of([s])).collect();
    write_output(o, &rows, first, last, rows.len() as u64, &metas)
}

/// Jackson's `writeNumber(double)`: Java's double text, NaN and infinities quoted.
fn number(v: f64) -> String {
    if v.is_finite() {
        java_double(v)
    } else {
        format!("\"{}\"", java_double(v))
    }
}

struct SeriesMeta {
    metrics: Vec<String>,
    common: BTreeMap<String, String>,
    aggregated: Vec<String>,
}

impl SeriesMeta {
    /// Metrics of the inputs (sorted), the tags they all share with one value, and the rest of
    /// their tag keys as aggregated.
    fn of<'a>(inputs: impl IntoIterator<Item = &'a ResultSeries>) -> SeriesMeta {
        let inputs: Vec<&ResultSeries> = inputs.into_iter().collect();
        let mut metrics: Vec<String> = inputs.iter().map(|s| s.metric.clone()).collect();
        metrics.sort();
        metrics.dedup();
        let mut common = inputs.first().map(|s| s.tags.clone()).unwrap_or_default();
        let mut aggregated: BTreeSet<String> = BTreeSet::new();
        for s in &inputs {
            aggregated.extend(s.aggregate_tags.iter().cloned());
            for k in s.tags.keys() {
                if common.get(k) != s.tags.get(k) {
                    aggregated.insert(k.clone());
                }
            }
            common.retain(|k, v| s.tags.get(k) == Some(v));
        }
        for k in common.keys() {
            aggregated.remove(k);
        }
        SeriesMeta {
            metrics,
            common,
            aggregated: aggregated.into_iter().collect(),
        }
    }
}

fn write_output(
    o: &Output,
    rows: &[String],
    first: u64,
    last: u64,
    count: u64,
    metas: &[SeriesMeta],
) -> String {
    let mut s = format!("{{\"id\":{}", esc(&o.id));
    if let Some(a) = &o.alias {
        s.push_str(&format!(",\"alias\":{}", esc(a)));
    }
    s.push_str(&format!(
        ",\"dps\":[{}],\"dpsMeta\":{{\"firstTimestamp\":{first},\"lastTimestamp\":{last},\"setCount\":{count},\"series\":{}}}",
        rows.join(","),
        metas.len()
    ));
    if !metas.is_empty() {
        let mut m = vec![r#"{"index":0,"metrics":["timestamp"]}"#.to_string()];
        for (i, x) in metas.iter().enumerate() {
            m.push(
                json!({"index": i + 1, "metrics": x.metrics, "commonTags": x.common, "aggregatedTags": x.aggregated})
                    .to_string(),
            );
        }
        s.push_str(&format!(",\"meta\":[{}]", m.join(",")));
    }
    s.push('}');
    s
}

/// An arithmetic expression over variables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ast {
    Num(f64),
    Var(String),
    Neg(Box<Ast>),
    Bin(char, Box<Ast>, Box<Ast>),
}

impl Ast {
    pub(crate) fn variables(&self, out: &mut Vec<String>) {
        match self {
            Ast::Num(_) => {}
            Ast::Var(v) => out.push(v.clone()),
            Ast::Neg(a) => a.variables(out),
            Ast::Bin(_, a, b) => {
                a.variables(out);
                b.variables(out);
            }
        }
    }

    pub(crate) fn eval(&self, env: &BTreeMap<&str, f64>) -> f64 {
        match self {
            Ast::Num(n) => *n,
            Ast::Var(v) => env.get(v.as_str()).copied().unwrap_or(f64::NAN),
            Ast::Neg(a) => -a.eval(env),
            Ast::Bin(op, a, b) => {
                let (x, y) = (a.eval(env), b.eval(env));
                match op {
                    '+' => x + y,
                    '-' => x - y,
                    '*' => x * y,
                    // 2.4's JEXL 2.1 engine is lenient (its default): dividing by zero (or
                    // -0) throws inside its arithmetic and the interpreter answers 0.0
                    // instead, whatever the dividend (NaN and infinities too).
                    '/' | '%' if y == 0.0 => 0.0,
                    '/' => x / y,
                    _ => x % y,
                }
            }
        }
    }
}

/// Why an expression's text does not parse (the detail of `Unable to parse expression`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ExprError {
    #[error("unexpected '{0}' at {1}")]
    Unexpected(char, usize),
    #[error("missing ')'")]
    MissingParen,
    #[error("bad number '{0}'")]
    Number(String),
    #[error("the expression ends too early")]
    Truncated,
    #[error("expression nested deeper than {max} levels (query.max_depth) at {at}")]
    TooDeep { max: usize, at: usize },
}

/// Parses an expression nested at most `max_depth` levels (`query.max_depth`): each bracket,
/// sign and operator adds one, so neither the recursive parser nor the recursive evaluation
/// and drop of the tree (`a+a+…+a` is as deep as it is long) can overflow a thread's stack.
pub(crate) fn parse_expr(s: &str, max_depth: usize) -> Result<Ast, ExprError> {
    let chars: Vec<char> = s.chars().collect();
    let mut p = ExprParser {
        c: chars,
        i: 0,
        depth: 0,
        max_depth,
    };
    let (a, _) = p.sum()?;
    p.ws();
    if p.i < p.c.len() {
        return Err(ExprError::Unexpected(p.c[p.i], p.i));
    }
    Ok(a)
}

struct ExprParser {
    c: Vec<char>,
    i: usize,
    /// Brackets and signs open around the current position.
    depth: usize,
    max_depth: usize,
}

/// A parsed node and the height of its tree.
type Node = (Ast, usize);

impl ExprParser {
    fn ws(&mut self) {
        while self.i < self.c.len() && self.c[self.i].is_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.ws();
        self.c.get(self.i).copied()
    }

    fn too_deep(&self, levels: usize) -> Result<(), ExprError> {
        if levels > self.max_depth {
            return Err(ExprError::TooDeep {
                max: self.max_depth,
                at: self.i,
            });
        }
        Ok(())
    }

    fn bin(&self, op: char, (a, ha): Node, (b, hb): Node) -> Result<Node, ExprError> {
        let h = ha.max(hb) + 1;
        self.too_deep(h.max(self.depth))?;
        Ok((Ast::Bin(op, Box::new(a), Box::new(b)), h))
    }

    fn sum(&mut self) -> Result<Node, ExprError> {
        let mut a = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.i += 1;
            let b = self.product()?;
            a = self.bin(op, a, b)?;
        }
        Ok(a)
    }

    fn product(&mut self) -> Result<Node, ExprError> {
        let mut a = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.i += 1;
            let b = self.unary()?;
            a = self.bin(op, a, b)?;
        }
        Ok(a)
    }

    /// `f` one level deeper (a bracket or a sign).
    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Node, ExprError>,
    ) -> Result<Node, ExprError> {
        self.depth += 1;
        // The operand inside is one more level.
        self.too_deep(self.depth + 1)?;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        match self.peek() {
            Some('-') => {
                self.i += 1;
                self.nested(|p| {
                    let (a, h) = p.unary()?;
                    Ok((Ast::Neg(Box::new(a)), h + 1))
                })
            }
            Some('+') => {
                self.i += 1;
                self.nested(|p| p.unary())
            }
            Some('(') => {
                self.i += 1;
                self.nested(|p| {
                    let a = p.sum()?;
                    if p.peek() != Some(')') {
                        return Err(ExprError::MissingParen);
                    }
                    p.i += 1;
                    Ok(a)
                })
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                let st = self.i;
                while self.i < self.c.len()
                    && (self.c[self.i].is_ascii_alphanumeric() || self.c[self.i] == '.')
                {
                    self.i += 1;
                }
                let t: String = self.c[st..self.i].iter().collect();
                t.trim_end_matches(['d', 'D', 'f', 'F', 'l', 'L'])
                    .parse()
                    .map(|n| (Ast::Num(n), 1))
                    .map_err(|_| ExprError::Number(t.clone()))
            }
            Some(c) if c.is_alphabetic() || c == '_' => {
                let st = self.i;
                while self.i < self.c.len()
                    && (self.c[self.i].is_alphanumeric() || self.c[self.i] == '_')
                {
                    self.i += 1;
                }
                Ok((Ast::Var(self.c[st..self.i].iter().collect()), 1))
            }
            Some(c) => Err(ExprError::Unexpected(c, self.i)),
            None => Err(ExprError::Truncated),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str, vars: &[(&str, f64)]) -> f64 {
        let env: BTreeMap<&str, f64> = vars.iter().copied().collect();
        parse_expr(s, 64).unwrap().eval(&env)
    }

    #[test]
    fn arithmetic_precedence_and_variables() {
        assert_eq!(ev("a + b * 2", &[("a", 1.0), ("b", 3.0)]), 7.0);
        assert_eq!(ev("(a + b) * 2", &[("a", 1.0), ("b", 3.0)]), 8.0);
        assert_eq!(ev("a - b - c", &[("a", 10.0), ("b", 3.0), ("c", 2.0)]), 5.0);
        assert_eq!(ev("a % 4 / 2", &[("a", 7.0)]), 1.5);
        assert_eq!(ev("-a * -2", &[("a", 3.0)]), 6.0);
        assert!(ev("a / b", &[("a", 1.0), ("b", f64::NAN)]).is_nan());
        // Lenient JEXL: a zero divisor gives 0.0, not an infinity or NaN.
        for (e, a) in [
            ("a / 0", 5.0),
            ("a / b", -5.0),
            ("a % b", 5.0),
            ("a / -b", 5.0),
            ("a / b", 0.0),
            ("a / b", f64::NAN),
            ("a / b", f64::INFINITY),
        ] {
            let got = ev(e, &[("a", a), ("b", 0.0)]);
            assert_eq!((got, got.is_sign_positive()), (0.0, true), "{e} with a={a}");
        }
        assert_eq!(ev("(a / b) + 1", &[("a", 5.0), ("b", 0.0)]), 1.0);
        assert_eq!(ev("a / b", &[("a", 5.0), ("b", 0.5)]), 10.0);
        let mut v = Vec::new();
        parse_expr("sys_cpu + b*(sys_cpu - c)", 64)
            .unwrap()
            .variables(&mut v);
        assert_eq!(v, ["sys_cpu", "b", "sys_cpu", "c"]);
        for bad in ["a +", "(a", "a b", "a # b", ""] {
            assert!(parse_expr(bad, 64).is_err(), "{bad}");
        }
    }

    #[test]
    fn nesting_past_max_depth_is_refused_before_it_can_overflow_the_stack() {
        // Brackets, signs and operator chains each count; 64 levels pass, 65 do not.
        let ok = [
            format!("{}a{}", "(".repeat(63), ")".repeat(63)),
            format!("{}a", "-".repeat(63)),
            format!("a{}", "+a".repeat(63)),
        ];
        for e in &ok {
            assert!(parse_expr(e, 64).is_ok(), "{e}");
        }
        assert_eq!(ev(&ok[1], &[("a", 2.0)]), -2.0);
        assert_eq!(ev(&ok[2], &[("a", 2.0)]), 128.0);
        for e in [
            format!("{}a{}", "(".repeat(64), ")".repeat(64)),
            format!("{}a", "-".repeat(64)),
            format!("a{}", "+a".repeat(64)),
            format!("a{}", "*a".repeat(100_000)),
            format!("{}a", "(".repeat(1_000_000)),
        ] {
            let err = parse_expr(&e, 64).unwrap_err().to_string();
            assert!(
                err.contains("nested deeper than 64 levels (query.max_depth)"),
                "{err}"
            );
        }
    }

    #[test]
    fn numbers_as_jackson_writes_doubles() {
        assert_eq!(number(1.0), "1.0");
        assert_eq!(number(f64::NAN), "\"NaN\"");
        assert_eq!(number(0.5), "0.5");
    }
}
