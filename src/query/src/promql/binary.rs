//! Binary operators: scalar/scalar, vector/scalar, vector/vector with one-to-one and
//! many-to-one matching (`on`, `ignoring`, `group_left/right`), comparisons with and without
//! `bool`, and the set operators `and`, `or`, `unless`.

use super::eval::{check_unique, drop_name, Evaluator, Sample, Value};
use super::{LabelSet, PromError};
use promql_parser::parser::{BinaryExpr, LabelModifier, VectorMatchCardinality};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

fn is_comparison(op: &str) -> bool {
    matches!(op, "==" | "!=" | ">" | "<" | ">=" | "<=")
}

/// Whether the result loses the metric name (2.42's `shouldDropMetricName`): arithmetic
/// does, except `atan2`, which keeps it like the comparisons.
fn drops_name(op: &str) -> bool {
    matches!(op, "+" | "-" | "*" | "/" | "%" | "^")
}

fn is_set(op: &str) -> bool {
    matches!(op, "and" | "or" | "unless")
}

/// `(value, keep)` as Prometheus' `vectorElemBinop`.
pub fn elem(op: &str, l: f64, r: f64) -> Result<(f64, bool), PromError> {
    Ok(match op {
        "+" => (l + r, true),
        "-" => (l - r, true),
        "*" => (l * r, true),
        "/" => (l / r, true),
        "%" => (l % r, true),
        "^" => (l.powf(r), true),
        "atan2" => (l.atan2(r), true),
        "==" => (l, l == r),
        "!=" => (l, l != r),
        ">" => (l, l > r),
        "<" => (l, l < r),
        ">=" => (l, l >= r),
        "<=" => (l, l <= r),
        other => {
            return Err(PromError::Execution(format!(
                "operator {other:?} not allowed here"
            )))
        }
    })
}

fn scalar_op(op: &str, l: f64, r: f64) -> Result<f64, PromError> {
    let (v, keep) = elem(op, l, r)?;
    Ok(if is_comparison(op) {
        if keep {
            1.0
        } else {
            0.0
        }
    } else {
        v
    })
}

/// The matching signature of a label set.
fn signature(l: &LabelSet, on: bool, names: &[String]) -> Vec<(String, String)> {
    if on {
        l.iter()
            .filter(|(k, _)| names.iter().any(|n| n == k))
            .cloned()
            .collect()
    } else {
        l.iter()
            .filter(|(k, _)| k != "__name__" && !names.iter().any(|n| n == k))
            .cloned()
            .collect()
    }
}

fn render(l: &[(String, String)]) -> String {
    let parts: Vec<String> = l.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", parts.join(", "))
}

pub fn eval<'a>(ev: &Evaluator<'a>, b: &BinaryExpr, t: i64) -> Result<Value<'a>, PromError> {
    let op = b.op.to_string();
    let op = op.as_str();
    let return_bool = b.return_bool();
    let lhs = ev.eval(&b.lhs, t)?;
    let rhs = ev.eval(&b.rhs, t)?;
    let (on, names): (bool, Vec<String>) =
        match b.modifier.as_ref().and_then(|m| m.matching.as_ref()) {
            Some(LabelModifier::Include(l)) => (true, l.labels.clone()),
            Some(LabelModifier::Exclude(l)) => (false, l.labels.clone()),
            None => (false, Vec::new()),
        };
    let card = b
        .modifier
        .as_ref()
        .map(|m| m.card.clone())
        .unwrap_or(VectorMatchCardinality::OneToOne);
    match (lhs, rhs) {
        (Value::Scalar(l), Value::Scalar(r)) => Ok(Value::Scalar(scalar_op(op, l, r)?)),
        (Value::Vector(v), Value::Scalar(s)) => vector_scalar(op, v, s, false, return_bool),
        (Value::Scalar(s), Value::Vector(v)) => vector_scalar(op, v, s, true, return_bool),
        (Value::Vector(l), Value::Vector(r)) => {
            if is_set(op) {
                return Ok(Value::Vector(set_op(op, l, r, on, &names)));
            }
            vector_vector(op, l, r, on, &names, &card, return_bool)
        }
        (l, r) => Err(PromError::Execution(format!(
            "binary operator {op} between {} and {}",
            l.type_name(),
            r.type_name()
        ))),
    }
}

fn vector_scalar<'a>(
    op: &str,
    v: Vec<Sample>,
    s: f64,
    swap: bool,
    return_bool: bool,
) -> Result<Value<'a>, PromError> {
    let cmp = is_comparison(op);
    let mut out = Vec::with_capacity(v.len());
    for smp in v {
        let (l, r) = if swap { (s, smp.v) } else { (smp.v, s) };
        let (mut value, keep) = elem(op, l, r)?;
        // A comparison keeps the vector's value, whichever side it is on.
        if cmp && swap {
            value = smp.v;
        }
        if return_bool {
            value = if keep { 1.0 } else { 0.0 };
        } else if !keep {
            continue;
        }
        let labels = if drops_name(op) || return_bool {
            drop_name(&smp.labels)
        } else {
            smp.labels
        };
        out.push(Sample { labels, v: value });
    }
    check_unique(&out)?;
    Ok(Value::Vector(out))
}

fn set_op(op: &str, l: Vec<Sample>, r: Vec<Sample>, on: bool, names: &[String]) -> Vec<Sample> {
    match op {
        "and" => {
            let rs: HashSet<_> = r.iter().map(|s| signature(&s.labels, on, names)).collect();
            l.into_iter()
                .filter(|s| rs.contains(&signature(&s.labels, on, names)))
                .collect()
        }
        "unless" => {
            let rs: HashSet<_> = r.iter().map(|s| signature(&s.labels, on, names)).collect();
            l.into_iter()
                .filter(|s| !rs.contains(&signature(&s.labels, on, names)))
                .collect()
        }
        _ => {
            let ls: HashSet<_> = l.iter().map(|s| signature(&s.labels, on, names)).collect();
            let mut out = l;
            out.extend(
                r.into_iter()
                    .filter(|s| !ls.contains(&signature(&s.labels, on, names))),
            );
            out
        }
    }
}

fn vector_vector<'a>(
    op: &str,
    lhs: Vec<Sample>,
    rhs: Vec<Sample>,
    on: bool,
    names: &[String],
    card: &VectorMatchCardinality,
    return_bool: bool,
) -> Result<Value<'a>, PromError> {
    if lhs.is_empty() || rhs.is_empty() {
        return Ok(Value::Vector(Vec::new()));
    }
    let one_to_many = matches!(card, VectorMatchCardinality::OneToMany(_));
    let include: Vec<String> = card.labels().map(|l| l.labels.clone()).unwrap_or_default();
    let (many, one) = if one_to_many { (rhs, lhs) } else { (lhs, rhs) };
    let mut one_sigs: HashMap<Vec<(String, String)>, &Sample> = HashMap::new();
    for s in &one {
        let sig = signature(&s.labels, on, names);
        if let Some(dup) = one_sigs.get(&sig) {
            let side = if one_to_many { "left" } else { "right" };
            // 2.42 names the match group by the signature's labels (`MatchLabels`): the
            // `on` labels, or all but the `ignoring` ones and the metric name.
            return Err(PromError::Execution(format!(
                "found duplicate series for the match group {} on the {side} hand-side of the operation: [{}, {}];many-to-many matching not allowed: matching labels must be unique on one side",
                render(&sig),
                render(&s.labels),
                render(&dup.labels)
            )));
        }
        one_sigs.insert(sig, s);
    }
    let one_to_one = matches!(card, VectorMatchCardinality::OneToOne);
    let mut matched: HashMap<Vec<(String, String)>, HashSet<LabelSet>> = HashMap::new();
    let mut out = Vec::new();
    for s in &many {
        let sig = signature(&s.labels, on, names);
        let Some(o) = one_sigs.get(&sig) else {
            continue;
        };
        let (vl, vr) = if one_to_many { (o.v, s.v) } else { (s.v, o.v) };
        let (mut value, keep) = elem(op, vl, vr)?;
        if return_bool {
            value = if keep { 1.0 } else { 0.0 };
        } else if !keep {
            continue;
        }
        // Result labels (Prometheus' resultMetric).
        let mut labels: Vec<(String, String)> = s.labels.as_ref().clone();
        if drops_name(op) || return_bool {
            labels.retain(|(k, _)| k != "__name__");
        }
        if one_to_one {
            if on {
                labels.retain(|(k, _)| names.iter().any(|n| n == k));
            } else {
                labels.retain(|(k, _)| !names.iter().any(|n| n == k));
            }
        } else {
            for n in &include {
                labels.retain(|(k, _)| k != n);
                if let Some((_, v)) = o.labels.iter().find(|(k, _)| k == n) {
                    if !v.is_empty() {
                        labels.push((n.clone(), v.clone()));
                    }
                }
            }
            labels.sort();
        }
        let labels: LabelSet = Arc::new(labels);
        let exists = matched.contains_key(&sig);
        if one_to_one {
            if exists {
                return Err(PromError::Execution("multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)".into()));
            }
            matched.insert(sig, HashSet::new());
        } else {
            let set = matched.entry(sig).or_default();
            if !set.insert(labels.clone()) {
                return Err(PromError::Execution(
                    "multiple matches for labels: grouping labels must ensure unique matches"
                        .into(),
                ));
            }
        }
        out.push(Sample { labels, v: value });
    }
    check_unique(&out)?;
    Ok(Value::Vector(out))
}
