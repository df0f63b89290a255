//! Graph: the functions that mostly matter to images (`color`, `alpha`, `dashed`, `lineWidth`,
//! `secondYAxis`, `stacked`, `drawAsInfinite`, `areaBetween`, `threshold`, `verticalLine`) and
//! the legend-text ones (`legendValue`, `cactiStyle`), with graphite-web 1.1's effects on the
//! names, tags and values that JSON shows too. Drawing options live in [`Style`].

use super::super::attime::parse_attime;
use super::super::eval::{err, Args, Ctx, R};
use super::super::series::{aggregate, fmt_g, is_agg_func, py_float, py_g, Series, Style};
use std::cell::RefCell;
use std::collections::HashMap;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let each = |f: &dyn Fn(&mut Series)| -> R<Vec<Series>> {
        let mut l = a.series(ctx, 0, "seriesList")?;
        l.iter_mut().for_each(f);
        Ok(l)
    };
    Some(match name {
        "color" => (|| {
            let c = a.string(1, "theColor")?;
            each(&|s| s.style.color = Some(c.clone()))
        })(),
        "alpha" => (|| {
            let v = a.num(1, "alpha")?;
            each(&|s| s.style.alpha = Some(v))
        })(),
        "lineWidth" => (|| {
            let w = a.num(1, "width")?;
            each(&|s| s.style.line_width = Some(w))
        })(),
        "dashed" => (|| {
            let d = a.num_or(1, "dashLength", 5.0)?;
            each(&|s| {
                s.set_tag("dashed", fmt_g(d));
                s.name = format!("dashed({}, {})", s.name, py_g(d));
                s.style.dashed = Some(d);
            })
        })(),
        "secondYAxis" => each(&|s| {
            s.style.second_y_axis = true;
            s.set_tag("secondYAxis", "1");
            s.name = format!("secondYAxis({})", s.name);
        }),
        "drawAsInfinite" => each(&|s| {
            s.style.draw_as_infinite = true;
            s.set_tag("drawAsInfinite", "1");
            s.name = format!("drawAsInfinite({})", s.name);
        }),
        "stacked" => stacked(ctx, a),
        "areaBetween" => (|| {
            let mut l = a.series(ctx, 0, "seriesList")?;
            if l.len() != 2 {
                return err("areaBetween series argument must reference *exactly* 2 series");
            }
            l[1].set_tag("areaBetween", "1");
            let name = format!("areaBetween({})", l[1].path_expr);
            let tags = l[1].tags.clone();
            for s in &mut l {
                s.style.stacked = true;
                s.tags = tags.clone();
                s.name = name.clone();
            }
            l[0].style.invisible = true;
            Ok(l)
        })(),
        "threshold" => (|| {
            let v = a.num(0, "value")?;
            let mut s = super::special::constant_line(ctx, v);
            if let Some(label) = a.opt_str(1, "label")?.filter(|l| !l.is_empty()) {
                s.name = label;
            }
            s.style.color = a.opt_str(2, "color")?.filter(|c| !c.is_empty());
            Ok(vec![s])
        })(),
        "verticalLine" => vertical_line(ctx, a),
        "legendValue" => legend_value(ctx, a),
        "cactiStyle" => cacti_style(ctx, a),
        _ => return None,
    })
}

thread_local! {
    /// `stacked`'s running totals per stack name, shared by all the targets of one request
    /// (graphite-web keeps them in the request context).
    static STACKS: RefCell<HashMap<String, Vec<f64>>> = RefCell::new(HashMap::new());
}

/// The running totals of `stacked` for one request: made before its targets are evaluated
/// (on the thread that evaluates them), and forgotten when dropped.
pub struct StackScope(());

impl StackScope {
    #[allow(clippy::new_without_default)]
    pub fn new() -> StackScope {
        STACKS.with(|s| s.borrow_mut().clear());
        StackScope(())
    }
}

impl Drop for StackScope {
    fn drop(&mut self) {
        STACKS.with(|s| s.borrow_mut().clear());
    }
}

const DEFAULT_STACK: &str = "__DEFAULT__";

fn stacked(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let list = a.series(ctx, 0, "seriesLists")?;
    let stack = a
        .opt_str(1, "stack")?
        .unwrap_or_else(|| DEFAULT_STACK.to_string());
    STACKS.with(|stacks| {
        let mut stacks = stacks.borrow_mut();
        let total = stacks.entry(stack.clone()).or_default();
        let mut out = Vec::with_capacity(list.len());
        for mut s in list {
            for (i, v) in s.values.iter_mut().enumerate() {
                if total.len() <= i {
                    total.push(0.0);
                }
                if let Some(x) = v {
                    total[i] += *x;
                    *x = total[i];
                }
            }
            if stack == DEFAULT_STACK {
                s.set_tag("stacked", DEFAULT_STACK);
                s.name = format!("stacked({})", s.name);
            }
            // graphite-web's `series.copy(name=…)` makes the name the path expression too.
            s.path_expr = s.name.clone();
            s.style.stacked = true;
            out.push(s);
        }
        Ok(out)
    })
}

fn vertical_line(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let ts = a.string(0, "ts")?;
    let t = parse_attime(&ts, ctx.now).map_err(super::super::eval::EvalError::from)?;
    if t < ctx.from {
        return err(format!(
            "verticalLine(): timestamp {t} exists before start of range"
        ));
    }
    if t > ctx.until {
        return err(format!(
            "verticalLine(): timestamp {t} exists after end of range"
        ));
    }
    let label = a.opt_str(1, "label")?.unwrap_or_default();
    // A start and end both at `ts` with two values, as graphite-web makes it.
    let mut s = Series::new(label, t, 1, vec![Some(1.0), Some(1.0)]);
    s.end = t;
    s.xff = ctx.xff();
    s.style = Style {
        draw_as_infinite: true,
        color: a.opt_str(2, "color")?.filter(|c| !c.is_empty()),
        ..Style::default()
    };
    Ok(vec![s])
}

/// graphite-web's `format_units` without a step: the value in the largest unit of `system`
/// (`si`, `binary`, `sec`, `msec`) it reaches, and that unit's prefix.
fn format_units(v: f64, system: &str) -> (f64, &'static str) {
    const K: f64 = 1024.0;
    let table: &[(&str, f64)] = match system {
        "binary" => &[
            ("Pi", K * K * K * K * K),
            ("Ti", K * K * K * K),
            ("Gi", K * K * K),
            ("Mi", K * K),
            ("Ki", K),
        ],
        "sec" => &[
            ("Y", 31_536_000.0),
            ("M", 2_592_000.0),
            ("D", 86_400.0),
            ("H", 3_600.0),
            ("m", 60.0),
        ],
        "msec" => &[
            ("Y", 31_536_000_000.0),
            ("M", 2_592_000_000.0),
            ("D", 86_400_000.0),
            ("H", 3_600_000.0),
            ("m", 60_000.0),
            ("s", 1_000.0),
        ],
        "none" => &[],
        _ => &[("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)],
    };
    let whole = |x: f64| {
        if x - x.floor() < 1e-11 && v > 1.0 {
            x.floor()
        } else {
            x
        }
    };
    for (prefix, size) in table {
        if v.abs() >= *size {
            return (whole(v / size), prefix);
        }
    }
    (whole(v), "")
}

fn legend_value(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let mut list = a.series(ctx, 0, "seriesList")?;
    let mut types: Vec<String> = Vec::new();
    for i in 1..a.call.args.len() {
        types.push(a.string(i, "valuesTypes")?);
    }
    let system = match types.last().map(String::as_str) {
        Some(s @ ("si" | "binary")) => {
            let s = s.to_string();
            types.pop();
            Some(s)
        }
        _ => None,
    };
    for t in &types {
        let known = is_agg_func(t) && t != "first";
        for s in &mut list {
            let v = if known { aggregate(t, &s.values) } else { None };
            // Python's str() of the value: an int for count, `None` when there is none.
            let text = match (known, v) {
                (false, _) => "(?)".to_string(),
                (true, None) => "None".to_string(),
                (true, Some(x)) if t == "count" => format!("{}", x as i64),
                (true, Some(x)) => py_float(x),
            };
            match &system {
                None => s.name = format!("{} ({t}: {text})", s.name),
                Some(sys) => {
                    let formatted = match (known, v) {
                        (true, Some(x)) => {
                            let (v, p) = format_units(x, sys);
                            format!("{v:.2}{p}")
                        }
                        (true, None) => "None".into(),
                        (false, _) => "(?)".into(),
                    };
                    s.name = format!("{:<20}{:<5}{:<10}", s.name, t, formatted);
                }
            }
        }
    }
    Ok(list)
}

fn cacti_style(ctx: &Ctx, a: &Args) -> R<Vec<Series>> {
    let mut list = a.series(ctx, 0, "seriesList")?;
    if list.is_empty() {
        return Ok(list);
    }
    let system = a.opt_str(1, "system")?.filter(|s| !s.is_empty());
    let units = a.opt_str(2, "units")?.filter(|s| !s.is_empty());
    let fmt = |x: f64| -> String {
        match (&system, &units) {
            (Some(sys), Some(u)) => {
                let (v, p) = format_units(x, sys);
                format!("{v:.2} {p}{u}")
            }
            (Some(sys), None) => {
                let (v, p) = format_units(x, sys);
                format!("{v:.2}{p}")
            }
            (None, Some(u)) => format!("{x:.2} {u}"),
            (None, None) => format!("{x:.2}"),
        }
    };
    let last = |s: &Series| aggregate("last", &s.values);
    let max = |s: &Series| aggregate("max", &s.values);
    let min = |s: &Series| aggregate("min", &s.values);
    // Column widths as graphite-web measures them: the integer part, 3 when none (or zero).
    let width = |f: &dyn Fn(&Series) -> Option<f64>| {
        list.iter()
            .map(|s| {
                let v = f(s).filter(|v| *v != 0.0).unwrap_or(3.0).trunc();
                fmt(v).chars().count()
            })
            .max()
            .unwrap_or(0)
            + 3
    };
    let name_len = list
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    let (wl, wx, wn) = (width(&last), width(&max), width(&min));
    let text = |v: Option<f64>| v.map(&fmt).unwrap_or_else(|| "nan".into());
    for s in &mut list {
        let (l, x, n) = (text(last(s)), text(max(s)), text(min(s)));
        s.name = format!(
            "{:<name_len$} Current:{l:<wl$} Max:{x:<wx$} Min:{n:<wn$} ",
            s.name
        );
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{eval, mem};
    use super::StackScope;

    #[test]
    fn styles_names_and_tags() {
        let src = mem(&[
            ("a.b", &[Some(1.0), Some(2.0)]),
            ("a.c", &[Some(3.0), None]),
        ]);
        let l = eval(&src, "color(a.b,'red')", 2);
        assert_eq!(
            (l[0].name.as_str(), l[0].style.color.as_deref()),
            ("a.b", Some("red"))
        );
        assert_eq!(super::format_units(2048.0, "binary"), (2.0, "Ki"));
        let l = eval(&src, "dashed(lineWidth(alpha(a.b,0.5),3))", 2);
        assert_eq!(l[0].name, "dashed(a.b, 5)");
        // The dash length as Python's %g writes it.
        assert_eq!(
            eval(&src, "dashed(a.b,1e7)", 2)[0].name,
            "dashed(a.b, 1e+07)"
        );
        assert_eq!(eval(&src, "dashed(a.b,2.5)", 2)[0].name, "dashed(a.b, 2.5)");
        assert_eq!(l[0].tags["dashed"], "5");
        assert_eq!(
            (l[0].style.alpha, l[0].style.line_width, l[0].style.dashed),
            (Some(0.5), Some(3.0), Some(5.0))
        );
        let l = eval(&src, "secondYAxis(drawAsInfinite(a.b))", 2);
        assert_eq!(l[0].name, "secondYAxis(drawAsInfinite(a.b))");
        assert!(l[0].style.second_y_axis && l[0].style.draw_as_infinite);
        assert_eq!(l[0].tags["secondYAxis"], "1");
    }

    #[test]
    fn stacked_adds_up_across_calls_of_one_request() {
        let src = mem(&[
            ("a.b", &[Some(1.0), Some(2.0)]),
            ("a.c", &[Some(3.0), None]),
        ]);
        let _scope = StackScope::new();
        let l = eval(&src, "stacked(a.*)", 2);
        assert_eq!(l[0].name, "stacked(a.b)");
        assert_eq!(l[1].values, vec![Some(4.0), None]);
        assert_eq!(l[1].tags["stacked"], "__DEFAULT__");
        // A later target stacks on the same totals; a named stack keeps the name.
        let l = eval(&src, "stacked(a.b,'tx')", 2);
        assert_eq!(
            (l[0].name.as_str(), l[0].values.clone()),
            ("a.b", vec![Some(1.0), Some(2.0)])
        );
        let l = eval(&src, "stacked(a.b)", 2);
        assert_eq!(l[0].values, vec![Some(5.0), Some(4.0)]);
        drop(_scope);
        let _scope = StackScope::new();
        assert_eq!(
            eval(&src, "stacked(a.b)", 2)[0].values,
            vec![Some(1.0), Some(2.0)]
        );
    }

    #[test]
    fn area_between_threshold_vertical_line() {
        let src = mem(&[
            ("a.min", &[Some(1.0), Some(2.0)]),
            ("a.max", &[Some(3.0), Some(4.0)]),
        ]);
        let l = eval(&src, "areaBetween(a.{min,max})", 2);
        // Named by the upper series' path expression: the pattern that fetched it.
        assert_eq!(l[0].name, "areaBetween(a.{min,max})");
        assert_eq!(l[1].name, l[0].name);
        assert!(l[0].style.invisible && l[0].style.stacked && l[1].style.stacked);
        assert_eq!(l[0].tags["areaBetween"], "1");
        let t = eval(&src, "threshold(7,'limit','red')", 2);
        assert_eq!(t[0].name, "limit");
        assert_eq!(t[0].values, vec![Some(7.0); 3]);
        assert_eq!(t[0].style.color.as_deref(), Some("red"));
        let v = eval(&src, "verticalLine('60','deploy','blue')", 2);
        assert_eq!(
            (v[0].start, v[0].end, v[0].name.as_str()),
            (60, 60, "deploy")
        );
        assert!(v[0].style.draw_as_infinite);
    }

    #[test]
    fn legend_text() {
        let src = mem(&[
            ("a.b", &[Some(1.0), Some(2000.0), None]),
            ("a.long", &[Some(3.0), None, None]),
        ]);
        let l = eval(&src, "legendValue(a.b,'avg','count','nope')", 3);
        assert_eq!(l[0].name, "a.b (avg: 1000.5) (count: 2) (nope: (?))");
        let l = eval(&src, "legendValue(a.b,'max','si')", 3);
        assert_eq!(l[0].name, "a.b                 max  2.00k     ");
        let l = eval(&src, "cactiStyle(a.*)", 3);
        assert_eq!(
            l[0].name,
            "a.b    Current:2000.00    Max:2000.00    Min:1.00    "
        );
        assert_eq!(
            l[1].name,
            "a.long Current:3.00       Max:3.00       Min:3.00    "
        );
    }
}
