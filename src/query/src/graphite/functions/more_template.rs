//! graphite-web's `template()` grammar: `template(<call or path>, <literals>)` with positional
//! (`$1`, `$2`, …) or keyword (`$name`) literals, substituted into the path expressions of the
//! inner expression (not into strings, nor into a `seriesByTag` call, nor into a nested
//! `template`), the request's `template[name]=value` parameters overriding them. A path that is
//! exactly `$name` becomes the value itself (a number when it looks like one), so a template
//! variable can be a function's argument.

use super::super::eval::{err, Args, Ctx, R};
use super::super::parser::{Call, Expr};
use super::super::series::{fmt_g, Series};
use std::cell::RefCell;

thread_local! {
    /// The request's `template[name]=value` parameters (graphite-web keeps them in the
    /// request context), set around the evaluation of its targets.
    static REQUEST: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
}

/// The `template[…]` parameters of one request, for the targets evaluated on this thread
/// while it lives (as `graph::StackScope` keeps `stacked`'s totals).
pub struct TemplateScope(());

impl TemplateScope {
    /// `params`: the request's parameters; those named `template[name]` are kept, the last of
    /// a name winning (Django's `QueryDict.items()`).
    pub fn new<'p>(params: impl IntoIterator<Item = (&'p str, &'p str)>) -> TemplateScope {
        let mut kept: Vec<(String, String)> = Vec::new();
        for (k, v) in params {
            let Some(name) = k
                .strip_prefix("template[")
                .and_then(|r| r.strip_suffix(']'))
            else {
                continue;
            };
            match kept.iter_mut().find(|(n, _)| n == name) {
                Some(e) => e.1 = v.to_string(),
                None => kept.push((name.to_string(), v.to_string())),
            }
        }
        REQUEST.with(|r| *r.borrow_mut() = kept);
        TemplateScope(())
    }
}

impl Drop for TemplateScope {
    fn drop(&mut self) {
        REQUEST.with(|r| r.borrow_mut().clear());
    }
}

/// A template variable's value: a literal of the call, or a request parameter (text).
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Num(f64),
    Str(String),
    Param(String),
}

impl Value {
    /// Python's `str(value)` as spliced into a path.
    fn text(&self) -> String {
        match self {
            Value::Num(n) => fmt_g(*n),
            Value::Str(s) | Value::Param(s) => s.clone(),
        }
    }

    /// The value standing for a whole `$name` argument: numbers stay numbers, text that
    /// looks like one (`^-?[\d.]+$`) becomes a float, other text a string.
    fn expr(&self) -> R<Expr> {
        match self {
            Value::Num(n) => Ok(Expr::Num(*n)),
            Value::Str(s) | Value::Param(s) => {
                let body = s.strip_prefix('-').unwrap_or(s);
                let numeric =
                    !body.is_empty() && body.chars().all(|c| c.is_ascii_digit() || c == '.');
                if numeric {
                    return s
                        .parse()
                        .map(Expr::Num)
                        .or_else(|_| err(format!("could not convert string to float: '{s}'")));
                }
                Ok(Expr::Str(s.clone()))
            }
        }
    }
}

const BAD_SYNTAX: &str = "invalid template() syntax, only string/numeric arguments are allowed";

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    (name == "template").then(|| {
        let expanded = expand(a.call)?;
        ctx.eval(&expanded)
    })
}

/// The inner expression of a `template(…)` call with its variables substituted.
pub fn expand(c: &Call) -> R<Expr> {
    let Some(inner @ (Expr::Path(_) | Expr::Call(_))) = c.args.first() else {
        return err(BAD_SYNTAX);
    };
    // Literal arguments only, positional or keyword but not both (graphite-web's grammar).
    if c.args.len() > 1 && !c.kwargs.is_empty() {
        return err(BAD_SYNTAX);
    }
    let lit = |e: &Expr| match e {
        Expr::Num(n) => Ok(Value::Num(*n)),
        Expr::Str(s) => Ok(Value::Str(s.clone())),
        _ => err(BAD_SYNTAX),
    };
    let mut vars: Vec<(String, Value)> = Vec::new();
    for (k, v) in &c.kwargs {
        vars.push((k.clone(), lit(v)?));
    }
    for (i, v) in c.args.iter().enumerate().skip(1) {
        vars.push((i.to_string(), lit(v)?));
    }
    REQUEST.with(|r| {
        for (k, v) in r.borrow().iter() {
            match vars.iter_mut().find(|(n, _)| n == k) {
                Some(e) => e.1 = Value::Param(v.clone()),
                None => vars.push((k.clone(), Value::Param(v.clone()))),
            }
        }
    });
    substitute(inner, &vars)
}

fn substitute(e: &Expr, vars: &[(String, Value)]) -> R<Expr> {
    match e {
        Expr::Path(p) => {
            let mut path = p.clone();
            for (name, v) in vars {
                let var = format!("${name}");
                if path == var {
                    return v.expr();
                }
                path = path.replace(&var, &v.text());
            }
            Ok(Expr::Path(path))
        }
        // A nested template takes its own variables; `seriesByTag` reads its raw text.
        Expr::Call(c) if c.name == "template" || c.name == "seriesByTag" => Ok(e.clone()),
        Expr::Call(c) => Ok(Expr::Call(Call {
            name: c.name.clone(),
            args: c
                .args
                .iter()
                .map(|a| substitute(a, vars))
                .collect::<R<_>>()?,
            kwargs: c
                .kwargs
                .iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, vars)?)))
                .collect::<R<_>>()?,
            text: c.text.clone(),
        })),
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn src() -> crate::graphite::eval::MemSource {
        mem(&[
            ("h.web1.cpu", &[Some(1.0), Some(2.0)]),
            ("h.web2.cpu", &[Some(3.0), Some(4.0)]),
        ])
    }

    fn names(v: &[Series]) -> Vec<&str> {
        v.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn positional_keyword_and_request_variables() {
        let s = src();
        assert_eq!(
            names(&eval(&s, "template(h.$1.cpu, 'web1')", 2)),
            vec!["h.web1.cpu"]
        );
        assert_eq!(
            names(&eval(&s, "template(sumSeries(h.$host.cpu), host='*')", 2)),
            vec!["sumSeries(h.*.cpu)"]
        );
        // A whole argument becomes the value: scale by 10.
        let r = eval(&s, "template(scale(h.web2.cpu, $f), f=10)", 2);
        assert_eq!(vals(&r[0]), vec![Some(30.0), Some(40.0)]);
        // The request's template[host] overrides the default; a numeric text is a float.
        {
            let _t = TemplateScope::new([
                ("template[host]", "web2"),
                ("template[f]", "0.5"),
                ("x", "y"),
            ]);
            let r = eval(&s, "template(scale(h.$host.cpu, $f), host='web1', f=10)", 2);
            assert_eq!(r[0].name, "scale(h.web2.cpu,0.5)");
            assert_eq!(vals(&r[0]), vec![Some(1.5), Some(2.0)]);
        }
        // Gone with its scope.
        assert_eq!(
            names(&eval(&s, "template(h.$host.cpu, host='web1')", 2)),
            vec!["h.web1.cpu"]
        );
    }

    #[test]
    fn strings_and_nested_templates_are_left_alone() {
        let s = src();
        let r = eval(&s, "template(alias(h.$1.cpu, '$1'), 'web1')", 2);
        assert_eq!(r[0].name, "$1");
        let r = eval(
            &s,
            "template(group(h.$1.cpu, template(h.$1.cpu, 'web2')), 'web1')",
            2,
        );
        assert_eq!(names(&r), vec!["h.web1.cpu", "h.web2.cpu"]);
    }

    #[test]
    fn syntax_errors() {
        let s = src();
        let ctx = crate::graphite::eval::Ctx {
            source: &s,
            from: 0,
            until: 120,
            now: 120,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        for t in [
            "template(h.$1.cpu, h.web1.cpu)",
            "template('x')",
            "template(h.$1.cpu, 'a', b='c')",
        ] {
            let e = crate::graphite::parser::parse(t).unwrap();
            assert_eq!(ctx.eval(&e).unwrap_err().to_string(), BAD_SYNTAX, "{t}");
        }
    }
}
