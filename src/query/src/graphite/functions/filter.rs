//! Filter Series: keep or drop whole series by an aggregate of their values, by position, or by
//! a regex on their name (Python `re.search` semantics through the `regex` crate: no
//! look-around or back-references in patterns).

use super::super::eval::{err, Args, Ctx, R};
use super::super::series::{aggregate, Series};
use regex::Regex;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let top = |func: &'static str, highest: bool| -> R<Vec<Series>> {
        let n = a.num_or(1, "n", 1.0)? as usize;
        let func = match a.opt_str(2, "func")? {
            Some(f) if name == "highest" || name == "lowest" => super::combine::agg_name(&f)?,
            _ => func.to_string(),
        };
        let mut l: Vec<(f64, Series)> = a
            .series(ctx, 0, "seriesList")?
            .into_iter()
            .map(|s| (agg_or_neg_inf(&func, &s), s))
            .collect();
        // Stable sorts: ties keep their input order.
        if highest {
            l.sort_by(|x, y| y.0.total_cmp(&x.0));
        } else {
            l.sort_by(|x, y| x.0.total_cmp(&y.0));
        }
        Ok(l.into_iter().take(n).map(|(_, s)| s).collect())
    };
    let keep = |func: &'static str, above: bool| -> R<Vec<Series>> {
        let n = a.num(1, "n")?;
        Ok(a.series(ctx, 0, "seriesList")?
            .into_iter()
            .filter(|s| match aggregate(func, &s.values) {
                Some(v) => {
                    if above {
                        v > n
                    } else {
                        v <= n
                    }
                }
                // A null aggregate passes every *Below filter.
                None => !above,
            })
            .collect())
    };
    Some(match name {
        "highest" => top("average", true),
        "lowest" => top("average", false),
        "highestCurrent" => top("last", true),
        "highestAverage" => top("average", true),
        "highestMax" => top("max", true),
        "lowestCurrent" => top("last", false),
        "lowestAverage" => top("average", false),
        "currentAbove" => keep("last", true),
        "currentBelow" => keep("last", false),
        "averageAbove" => keep("average", true),
        "averageBelow" => keep("average", false),
        "maximumAbove" => keep("max", true),
        "maximumBelow" => keep("max", false),
        "minimumAbove" => keep("min", true),
        "minimumBelow" => keep("min", false),
        "limit" => (|| {
            let n = a.num(1, "n")? as usize;
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .take(n)
                .collect())
        })(),
        "exclude" | "grep" => (|| {
            let re = python_regex(&a.string(1, "pattern")?)?;
            let want = name == "grep";
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .filter(|s| re.is_match(&s.name) == want)
                .collect())
        })(),
        "unique" => (|| {
            let mut seen = std::collections::HashSet::new();
            Ok(a.series_rest(ctx, 0)?
                .into_iter()
                .filter(|s| seen.insert(s.name.clone()))
                .collect())
        })(),
        "fallbackSeries" => (|| {
            let l = a.series(ctx, 0, "seriesList")?;
            if l.is_empty() {
                a.series(ctx, 1, "fallback")
            } else {
                Ok(l)
            }
        })(),
        "mostDeviant" => (|| {
            let n = a.num(1, "n")? as usize;
            let mut l: Vec<(f64, Series)> = a
                .series(ctx, 0, "seriesList")?
                .into_iter()
                // A series without values has no deviation and is left out.
                .filter(|s| s.values.iter().any(Option::is_some))
                .map(|s| (agg_or_neg_inf("stddev", &s), s))
                .collect();
            l.sort_by(|x, y| y.0.total_cmp(&x.0));
            Ok(l.into_iter().take(n).map(|(_, s)| s).collect())
        })(),
        "removeBelowPercentile" | "removeAbovePercentile" => (|| {
            let n = a.num(1, "n")?;
            let below = name == "removeBelowPercentile";
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .map(|mut s| {
                    let nn: Vec<f64> = s.values.iter().flatten().copied().collect();
                    if let Some(p) = super::super::series::percentile(&nn, n, false) {
                        s.values = s
                            .values
                            .iter()
                            .map(|v| v.filter(|v| if below { *v >= p } else { *v <= p }))
                            .collect();
                        // graphite-web's nPercentile tags the series it reads the rank of.
                        s.set_tag("nPercentile", super::super::series::py_float(n));
                    }
                    let nm = format!("{name}({}, {})", s.name, super::super::series::py_g(n));
                    s.rename(nm);
                    s
                })
                .collect())
        })(),
        "removeEmptySeries" => (|| {
            let xff = a.num_or(1, "xFilesFactor", 0.0)?;
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .filter(|s| {
                    let nn = s.values.iter().filter(|v| v.is_some()).count();
                    nn > 0 && (nn as f64) / (s.values.len().max(1) as f64) >= xff
                })
                .collect())
        })(),
        _ => return None,
    })
}

fn agg_or_neg_inf(func: &str, s: &Series) -> f64 {
    aggregate(func, &s.values).unwrap_or(f64::NEG_INFINITY)
}

/// A Python `re` pattern for the `regex` crate: `(?P<n>…)` is shared syntax; what differs
/// (look-around, back-references) fails to compile and is reported as a 400.
pub fn python_regex(p: &str) -> R<Regex> {
    Regex::new(p).or_else(|e| err(format!("invalid regular expression {p:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    fn names(v: &[super::Series]) -> Vec<&str> {
        v.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn filters() {
        let src = mem(&[
            ("f.a", &[Some(1.0), Some(9.0)]),
            ("f.b", &[Some(5.0), Some(5.0)]),
            ("f.c", &[Some(3.0), None]),
            ("f.d", &[None, None]),
        ]);
        assert_eq!(
            names(&eval(&src, "highestCurrent(f.*, 2)", 2)),
            vec!["f.a", "f.b"]
        );
        assert_eq!(names(&eval(&src, "highestMax(f.*)", 2)), vec!["f.a"]);
        assert_eq!(names(&eval(&src, "highestAverage(f.*, 1)", 2)), vec!["f.a"]);
        assert_eq!(
            names(&eval(&src, "lowestAverage(f.*, 2)", 2)),
            vec!["f.d", "f.c"]
        );
        assert_eq!(names(&eval(&src, "lowestCurrent(f.*, 1)", 2)), vec!["f.d"]);
        assert_eq!(
            names(&eval(&src, "currentAbove(f.*, 4)", 2)),
            vec!["f.a", "f.b"]
        );
        assert_eq!(
            names(&eval(&src, "currentBelow(f.*, 4)", 2)),
            vec!["f.c", "f.d"]
        );
        assert_eq!(
            names(&eval(&src, "averageAbove(f.*, 4)", 2)),
            vec!["f.a", "f.b"]
        );
        assert_eq!(names(&eval(&src, "maximumAbove(f.*, 5)", 2)), vec!["f.a"]);
        assert_eq!(names(&eval(&src, "limit(f.*, 2)", 2)), vec!["f.a", "f.b"]);
        assert_eq!(
            names(&eval(&src, "exclude(f.*, '[ab]$')", 2)),
            vec!["f.c", "f.d"]
        );
        assert_eq!(
            names(&eval(&src, "grep(f.*, 'b|c')", 2)),
            vec!["f.b", "f.c"]
        );
        assert_eq!(
            names(&eval(&src, "unique(f.a, f.*)", 2)),
            vec!["f.a", "f.b", "f.c", "f.d"]
        );
        assert_eq!(
            names(&eval(&src, "fallbackSeries(f.nothing, f.b)", 2)),
            vec!["f.b"]
        );
        assert_eq!(names(&eval(&src, "mostDeviant(f.*, 1)", 2)), vec!["f.a"]);
        assert_eq!(
            names(&eval(&src, "removeEmptySeries(f.*)", 2)),
            vec!["f.a", "f.b", "f.c"]
        );
    }
}
