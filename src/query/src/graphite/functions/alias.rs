//! Alias: renaming. Node-based names come from the first path expression inside a
//! function-wrapped name (graphite's `_getFirstPathExpression`), tags stripped.

use super::super::eval::{err, Args, Ctx, EvalError, NodeOrTag, R};
use super::super::parser::{parse, Expr};
use super::super::series::Series;
use super::filter::python_regex;

pub fn call(ctx: &Ctx, name: &str, a: &Args) -> Option<R<Vec<Series>>> {
    Some(match name {
        "alias" => (|| {
            let n = a.string(1, "newName")?;
            // Only the display name changes: combiners still see the path expression.
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .map(|mut s| {
                    s.name = n.clone();
                    s
                })
                .collect())
        })(),
        "aliasByNode" | "aliasByTags" => (|| {
            let nodes: Vec<NodeOrTag> = a.call.args.iter().skip(1).map(Args::node_or_tag).collect();
            if nodes.is_empty() {
                return err(format!("{name}: at least one node is required"));
            }
            Ok(a.series(ctx, 0, "seriesList")?
                .into_iter()
                .map(|mut s| {
                    // graphite-web's aggKey, as groupByNodes keys its groups.
                    s.name = nodes
                        .iter()
                        .map(|n| node_or_tag_value(&s, n))
                        .collect::<Vec<_>>()
                        .join(".");
                    s
                })
                .collect())
        })(),
        "aliasByMetric" => a.series(ctx, 0, "seriesList").map(|l| {
            l.into_iter()
                .map(|mut s| {
                    // graphite-web's `substr(seriesList, -1)`: the last dotted node between the
                    // innermost brackets, tags and all (`used;dc=east` of `disk.used;dc=east`), up to
                    // a comma (`c2` of `sumSeries(a.b.c1,a.b.c2)`).
                    s.name = super::more_transform::substr(&s.name, -1, 0);
                    s
                })
                .collect()
        }),
        "aliasSub" => (|| {
            let re = python_regex(&a.string(1, "search")?)?;
            let raw = a.string(2, "replace")?;
            let (rep, refs) = parse_replacement(&raw);
            let list = a.series(ctx, 0, "seriesList")?;
            // Python compiles the template on its first `re.sub`: a reference past the
            // pattern's groups fails the request once there is a series to rename.
            if !list.is_empty() {
                if let Some((n, at)) = missing_group(&refs, re.captures_len() - 1) {
                    return err(format!("invalid group reference {n} at position {at}"));
                }
            }
            Ok(list
                .into_iter()
                .map(|mut s| {
                    s.name = re.replace_all(&s.name, rep.as_str()).into_owned();
                    s
                })
                .collect())
        })(),
        _ => return None,
    })
}

/// The first numbered reference of a Python replacement past `groups`, with where Python
/// reports it (see `parse_replacement`).
fn missing_group(refs: &[(usize, usize)], groups: usize) -> Option<(usize, usize)> {
    refs.iter().copied().find(|&(n, _)| n > groups)
}

/// Python `re.sub` replacement → `regex` syntax: `\1` and `\g<1>`/`\g<name>` become `${…}`,
/// a literal `$` is doubled, `\\` is a backslash.
pub fn python_replacement(r: &str) -> String {
    parse_replacement(r).0
}

/// `python_replacement`'s template, with the numbered references it holds (`\N` other than
/// `\0`, `\g<N>`): each group number and where Python reports it (the character after the
/// backslash, or after `\g<`).
fn parse_replacement(r: &str) -> (String, Vec<(usize, usize)>) {
    let mut out = String::new();
    let mut refs = Vec::new();
    let c: Vec<char> = r.chars().collect();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '$' => out.push_str("$$"),
            '\\' if i + 1 < c.len() && c[i + 1].is_ascii_digit() => {
                let mut j = i + 1;
                while j < c.len() && j < i + 3 && c[j].is_ascii_digit() {
                    j += 1;
                }
                let digits: String = c[i + 1..j].iter().collect();
                if c[i + 1] != '0' {
                    refs.extend(digits.parse().ok().map(|n| (n, i + 1)));
                }
                out.push_str(&format!("${{{digits}}}"));
                i = j;
                continue;
            }
            '\\' if c.get(i + 1) == Some(&'g') && c.get(i + 2) == Some(&'<') => {
                if let Some(end) = c[i + 3..].iter().position(|&x| x == '>') {
                    let group: String = c[i + 3..i + 3 + end].iter().collect();
                    refs.extend(group.parse().ok().map(|n| (n, i + 3)));
                    out.push_str(&format!("${{{group}}}"));
                    i += 4 + end;
                    continue;
                }
                out.push('\\');
            }
            '\\' if c.get(i + 1) == Some(&'\\') => {
                out.push('\\');
                i += 2;
                continue;
            }
            '\\' if c.get(i + 1) == Some(&'n') => {
                out.push('\n');
                i += 2;
                continue;
            }
            ch => out.push(ch),
        }
        i += 1;
    }
    (out, refs)
}

/// The first path expression in a (possibly function-wrapped) series name, as graphite-web's
/// `_getFirstPathExpression` finds it: down the first argument of each call only, so none when
/// that argument is a number or a string (`invert(3.0)`, `seriesByTag('name=a')`).
pub fn first_path_expression(name: &str) -> Option<String> {
    fn down_first(e: &Expr) -> Option<String> {
        match e {
            Expr::Path(p) => Some(p.clone()),
            Expr::Call(c) => c.args.first().and_then(down_first),
            _ => None,
        }
    }
    // A call with positional arguments goes down its first one; anything else (a call with
    // none, which graphite-web's grammar does not read as a call) is left to the prefix rules.
    let call_first = |e: Result<Expr, _>| match e {
        Ok(Expr::Call(c)) if !c.args.is_empty() => Some(down_first(&c.args[0])),
        _ => None,
    };
    let whole = parse(name);
    if let Ok(Expr::Path(p)) = whole {
        return Some(p);
    }
    if let Some(first) = call_first(whole) {
        return first;
    }
    // graphite-web's pyparsing reads the longest prefix it can: a call whose parentheses
    // close (`sumSeries(a.b) Current:1.00`), else the path before the first symbol
    // (`transformNull(a.b Current:1.00 ,-1)` gives `transformNull`, `3.0` itself).
    if let Some(first) = first_call_end(name).and_then(|close| call_first(parse(&name[..=close]))) {
        return first;
    }
    let end = name
        .find(|c: char| "(){},'\"\\|".contains(c) || c.is_whitespace())
        .unwrap_or(name.len());
    Some(name[..end].trim_end_matches('.').to_string())
}

/// Where the parenthesis closing a leading `name(` stands, quotes skipped.
fn first_call_end(s: &str) -> Option<usize> {
    let open = s.find('(')?;
    if open == 0 || !s[..open].chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let (mut depth, mut quote) = (0usize, None);
    for (i, c) in s.char_indices().skip_while(|&(i, _)| i < open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn node_value(s: &Series, path: &str, n: &NodeOrTag) -> String {
    match n {
        NodeOrTag::Node(i) => {
            let nodes: Vec<&str> = path.split(';').next().unwrap_or("").split('.').collect();
            let idx = if *i < 0 { nodes.len() as i64 + i } else { *i };
            match nodes.get(idx.max(0) as usize).filter(|_| idx >= 0) {
                Some(v) => v.to_string(),
                None => s.tags.get(&i.to_string()).cloned().unwrap_or_default(),
            }
        }
        NodeOrTag::Tag(t) => s.tags.get(t).cloned().unwrap_or_default(),
    }
}

/// A grouping key part (graphite-web's `aggKey`): node of the name, or of its first path
/// expression when the name ends in a call (`…)`), or a tag value.
pub fn node_or_tag_value(s: &Series, n: &NodeOrTag) -> String {
    if s.name.ends_with(')') {
        let first = first_path_expression(&s.name);
        node_value(s, first.as_deref().unwrap_or(&s.name), n)
    } else {
        node_value(s, &s.name, n)
    }
}

#[allow(dead_code)]
fn _unused(_: EvalError) {}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn first_path_expressions_as_graphite_web_finds_them() {
        // Each as graphite-web 1.1.8's `_getFirstPathExpression` answers it.
        for (name, want) in [
            ("sumSeries(a.b.c1,x.y)", Some("a.b.c1")),
            (
                "transformNull(a.b.c1 Current:87.50 Max:nan ,-1)",
                Some("transformNull"),
            ),
            ("sumSeries(a.b.c1) Current:1.00", Some("a.b.c1")),
            ("a.b.c1 Current:87.50", Some("a.b.c1")),
            ("disk.used;dc=east", Some("disk.used;dc=east")),
            ("invert(3.0)", None),
            ("sumSeries(3,a.b)", None),
            ("seriesByTag('name=a')", None),
            ("scale(sumSeries(a.b),2)", Some("a.b")),
            ("f(g(1),a.b)", None),
            ("alias(a.b,'x')", Some("a.b")),
            ("3.0", Some("3.0")),
            ("f(x=a.b)", Some("f")),
            ("f(a.b, x=c.d)", Some("a.b")),
            ("f(\"str\",a.b)", None),
            ("f(true, a.b)", None),
        ] {
            assert_eq!(first_path_expression(name).as_deref(), want, "{name}");
        }
    }

    #[test]
    fn grouping_keys_of_names_without_a_first_path_take_the_name() {
        // aliasByNode(invert(constantLine(3)), 0): graphite-web splits `invert(3.0)` itself.
        let src = mem(&[("a.b", &[Some(2.0)])]);
        let r = eval(&src, "aliasByNode(invert(constantLine(3)), 0, 'name')", 1);
        assert_eq!(r[0].name, "invert(3.3.0");
        let r = eval(&src, "aliasByMetric(sumSeries(a.b, a.b))", 1);
        assert_eq!(r[0].name, "b");
    }

    #[test]
    fn group_references_past_the_pattern_are_found_where_python_reports_them() {
        assert_eq!(missing_group(&parse_replacement(r"\2").1, 0), Some((2, 1)));
        assert_eq!(missing_group(&parse_replacement(r"n\1").1, 0), Some((1, 2)));
        assert_eq!(
            missing_group(&parse_replacement(r"x\g<3>").1, 2),
            Some((3, 4))
        );
        assert_eq!(missing_group(&parse_replacement(r"\1-\2").1, 2), None);
        assert_eq!(missing_group(&parse_replacement(r"\\2 \0").1, 0), None);
    }

    #[test]
    fn replacement_translation() {
        assert_eq!(python_replacement(r"\1 A"), "${1} A");
        assert_eq!(python_replacement(r"\g<1>-\g<host>$"), "${1}-${host}$$");
    }

    #[test]
    fn aliases() {
        let src = mem(&[
            ("demo.web01.cpu", &[Some(1.0)]),
            ("demo.db01.cpu", &[Some(2.0)]),
        ]);
        let n = |t: &str| {
            eval(&src, t, 1)
                .into_iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(n("aliasByNode(demo.*.cpu, 1)"), vec!["db01", "web01"]);
        assert_eq!(
            n("aliasByNode(scale(demo.*.cpu, 2), 1, -1)"),
            vec!["db01.cpu", "web01.cpu"]
        );
        assert_eq!(n("aliasByMetric(demo.web01.cpu)"), vec!["cpu"]);
        assert_eq!(n("alias(demo.*.cpu, 'x')"), vec!["x", "x"]);
        assert_eq!(
            n(r#"aliasSub(demo.web01.cpu, "(^.*$)", "\1 A")"#),
            vec!["demo.web01.cpu A"]
        );
        assert_eq!(
            n(r#"aliasSub(demo.web01.cpu, "web(\d+)", "host-\1")"#),
            vec!["demo.host-01.cpu"]
        );
        // Tags as nodes.
        let s = eval(&src, "demo.web01.cpu", 1);
        assert_eq!(
            node_or_tag_value(&s[0], &NodeOrTag::Tag("name".into())),
            "demo.web01.cpu"
        );
    }
}
