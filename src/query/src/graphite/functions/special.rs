//! Special: generated series (constantLine), consolidation settings, tag queries.

use super::super::eval::{err, Args, Ctx, EvalError, R};
use super::super::parser::Expr;
use super::super::series::Series;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    Some(match name {
        "constantLine" => a.num(0, "value").map(|v| vec![constant_line(ctx, v)]),
        "consolidateBy" => (|| {
            let f = a.string(1, "consolidationFunc")?;
            if !matches!(
                f.as_str(),
                "average" | "avg" | "avg_zero" | "first" | "last" | "max" | "min" | "sum"
            ) {
                return err(format!("Invalid consolidation function: {f}"));
            }
            let f2 = if f == "avg" {
                "average".to_string()
            } else {
                f.clone()
            };
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .map(|mut s| {
                    s.consolidation = f2.clone();
                    let n = format!("consolidateBy({},\"{f}\")", s.name);
                    s.rename(n);
                    s.set_tag("consolidateBy", f.clone());
                    s
                })
                .collect())
        })(),
        "seriesByTag" => series_by_tag(ctx, a),
        "cumulative" => a.series(ctx, 0, "seriesList").map(|l| {
            l.into_iter()
                .map(|mut s| {
                    s.consolidation = "sum".into();
                    let n = format!("consolidateBy({},\"sum\")", s.name);
                    s.rename(n);
                    s.set_tag("consolidateBy", "sum");
                    s
                })
                .collect()
        }),
        "setXFilesFactor" | "xFilesFactor" => (|| {
            let x = a.num(1, "xFilesFactor")?;
            if !(0.0..=1.0).contains(&x) {
                return err("xFilesFactor must be between 0 and 1");
            }
            let list = a.series(ctx, 0, "seriesList")?;
            // graphite-web also stores it in the request context: every aggregation after
            // this call uses it.
            ctx.xff_set.set(x);
            Ok(list
                .into_iter()
                .map(|mut s| {
                    s.xff = x;
                    s.set_tag("xFilesFactor", super::super::series::py_float(x));
                    s
                })
                .collect())
        })(),
        _ => return None,
    })
}

/// Three points (start, middle, end of the window) named by the value (Python's `str` of
/// the float its parameter is: `42.0`).
pub fn constant_line(ctx: &Ctx, v: f64) -> Series {
    let step = ((ctx.until - ctx.from) / 2).max(1);
    let name = super::super::series::py_float(v);
    let mut s = Series::new(name.clone(), ctx.from, step, vec![Some(v); 3]);
    s.path_expr = format!("constantLine({name})");
    s
}

fn series_by_tag(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let mut exprs = Vec::new();
    for e in &a.call.args {
        match e {
            Expr::Str(s) => exprs.push(s.clone()),
            other => {
                return err(format!(
                    "seriesByTag: tag expressions must be strings, got {other:?}"
                ))
            }
        }
    }
    let entries = ctx.source.entries()?;
    let matched = super::super::tags::find_series(&entries, &exprs).map_err(EvalError::from)?;
    ctx.fetch_entries(&matched, &a.call.text)
}
