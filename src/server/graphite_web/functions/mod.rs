//! The render function library, one module per family (graphite-web's groups). `call` finds a
//! function by name; `NAMES` is what `/functions` describes (see `meta`).

pub mod alias;
pub mod calculate;
pub mod combine;
pub mod filter;
pub mod sort;
pub mod special;
pub mod transform;

use super::eval::{err, Args, Ctx, R};
use super::parser::Call;
use super::series::Series;

/// A family's dispatcher: `None` when the name is not one of its functions.
type Family = fn(&Ctx, &str, &Args) -> Option<R<Vec<Series>>>;

const FAMILIES: &[Family] = &[combine::call, transform::call, calculate::call, filter::call, sort::call, alias::call, special::call];

pub fn call(ctx: &Ctx, c: &Call) -> R<Vec<Series>> {
    let args = Args { call: c };
    for f in FAMILIES {
        if let Some(r) = f(ctx, &c.name, &args) {
            return r;
        }
    }
    err(format!("Received request for unknown function: {}", c.name))
}

/// Applies `f` to every value, renaming each series with `name(series_name)`.
pub fn map_values(list: Vec<Series>, name: impl Fn(&Series) -> String, f: impl Fn(Option<f64>) -> Option<f64>) -> Vec<Series> {
    list.into_iter()
        .map(|mut s| {
            let n = name(&s);
            s.values = s.values.iter().map(|v| f(*v)).collect();
            s.rename(n);
            s
        })
        .collect()
}

/// A value that is a real number (graphite turns NaN/inf results of math into nulls).
pub fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

#[cfg(test)]
pub mod testutil {
    use super::super::eval::{Ctx, MemSource};
    use super::super::parser::parse;
    use super::super::series::Series;

    /// Series `name` with one point per 60 s from t=60: values in order (None = missing).
    pub fn mem(series: &[(&str, &[Option<f64>])]) -> MemSource {
        MemSource(
            series
                .iter()
                .map(|(n, vals)| (n.to_string(), vals.iter().enumerate().filter_map(|(i, v)| v.map(|v| (60 + i as i64 * 60, v))).collect()))
                .collect(),
        )
    }

    /// Evaluates `target` over `(0, 60*n]` (so the grid starts at 60).
    pub fn eval(src: &MemSource, target: &str, n: i64) -> Vec<Series> {
        let ctx = Ctx { source: src, from: 0, until: 60 * n, now: 60 * n, xff: 0.0 };
        ctx.eval(&parse(target).unwrap()).unwrap()
    }

    pub fn vals(s: &Series) -> Vec<Option<f64>> {
        s.values.clone()
    }
}
