//! Sorting: by name (optionally natural), by maxima or total (descending).

use super::super::eval::{Args, Ctx, R};
use super::super::series::{aggregate, Series};

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    let by = |func: &'static str| -> R<Vec<Series>> {
        let mut l = a.series(ctx, 0, "seriesList")?;
        l.sort_by(|x, y| key(func, y).total_cmp(&key(func, x)));
        Ok(l)
    };
    Some(match name {
        "sortByName" => (|| {
            let natural = a.boolean(1, "natural", false)?;
            let reverse = a.boolean(2, "reverse", false)?;
            let mut l = a.series(ctx, 0, "seriesList")?;
            // Stable either way, as Python's sorted(…, reverse=True): equal names keep their order.
            if natural {
                l.sort_by_cached_key(|s| natural_key(&s.name));
            } else {
                l.sort_by(|x, y| x.name.cmp(&y.name));
            }
            if reverse {
                l.sort_by(|x, y| {
                    if natural {
                        natural_key(&y.name).cmp(&natural_key(&x.name))
                    } else {
                        y.name.cmp(&x.name)
                    }
                });
            }
            Ok(l)
        })(),
        "sortByMaxima" => by("max"),
        "sortByMinima" => (|| {
            // graphite drops series whose maximum is not positive, then sorts by minimum.
            let mut l: Vec<Series> = a
                .series(ctx, 0, "seriesList")?
                .into_iter()
                .filter(|s| key("max", s) > 0.0)
                .collect();
            l.sort_by(|x, y| key("min", x).total_cmp(&key("min", y)));
            Ok(l)
        })(),
        "sortBy" => (|| {
            let f = super::combine::agg_name(
                &a.opt_str(1, "func")?.unwrap_or_else(|| "average".into()),
            )?;
            let reverse = a.boolean(2, "reverse", false)?;
            let mut l = a.series(ctx, 0, "seriesList")?;
            // Stable either way, as Python's sorted(…, reverse=True): ties keep their order.
            if reverse {
                l.sort_by(|x, y| key(&f, y).total_cmp(&key(&f, x)));
            } else {
                l.sort_by(|x, y| key(&f, x).total_cmp(&key(&f, y)));
            }
            Ok(l)
        })(),
        "sortByTotal" => by("sum"),
        _ => return None,
    })
}

fn key(func: &str, s: &Series) -> f64 {
    aggregate(func, &s.values).unwrap_or(f64::NEG_INFINITY)
}

/// graphite pads digit runs so `a2` sorts before `a10`.
fn natural_key(s: &str) -> String {
    let mut out = String::new();
    let mut digits = String::new();
    for c in s.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            out.push_str(&format!("{digits:0>20}"));
            digits.clear();
        }
        if c != '\0' {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn sorts() {
        let src = mem(&[
            ("s.a10", &[Some(1.0), Some(1.0)]),
            ("s.a2", &[Some(5.0), None]),
            ("s.b", &[Some(3.0), Some(4.0)]),
        ]);
        let n = |t: &str| {
            eval(&src, t, 2)
                .into_iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(n("sortByName(s.*)"), vec!["s.a10", "s.a2", "s.b"]);
        assert_eq!(n("sortByName(s.*, true)"), vec!["s.a2", "s.a10", "s.b"]);
        assert_eq!(
            n("sortByName(s.*, false, true)"),
            vec!["s.b", "s.a2", "s.a10"]
        );
        assert_eq!(n("sortByMaxima(s.*)"), vec!["s.a2", "s.b", "s.a10"]);
        assert_eq!(n("sortByTotal(s.*)"), vec!["s.b", "s.a2", "s.a10"]);
        assert_eq!(n("sortByMinima(s.*)"), vec!["s.a10", "s.b", "s.a2"]);
        assert_eq!(n("sortBy(s.*, 'max', true)"), vec!["s.a2", "s.b", "s.a10"]);
    }
}
