//! Graphite globs, one pattern per path element (never across dots): `*`, `?`, `[a-z]`, `[!a]`,
//! `{a,b}` (nesting allowed), compiled to anchored regexes.

use regex::Regex;

/// Splits a query on the dots that are outside `{…}` and `[…]`.
pub fn split_elements(q: &str) -> Vec<String> {
    let (mut out, mut cur, mut brace, mut bracket) = (Vec::new(), String::new(), 0usize, false);
    for c in q.chars() {
        match c {
            '{' if !bracket => brace += 1,
            '}' if !bracket && brace > 0 => brace -= 1,
            '[' => bracket = true,
            ']' => bracket = false,
            '.' if brace == 0 && !bracket => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

pub fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// A path element whose glob makes no valid regex (an inverted class range, say).
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid glob {pattern:?}: {source}")]
pub struct GlobError {
    pub pattern: String,
    pub source: regex::Error,
}

/// One element's pattern as an anchored regex.
pub fn element_regex(pat: &str) -> Result<Regex, GlobError> {
    let mut re = String::from("^(?:");
    let chars: Vec<char> = pat.chars().collect();
    let mut i = 0;
    let mut brace = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let Some(close) = chars[i + 1..]
                    .iter()
                    .position(|&c| c == ']')
                    .map(|p| p + i + 1)
                else {
                    re.push_str("\\[");
                    i += 1;
                    continue;
                };
                let mut body: String = chars[i + 1..close].iter().collect();
                if let Some(rest) = body.strip_prefix('!') {
                    body = format!("^{rest}");
                }
                re.push('[');
                re.push_str(&body.replace('\\', "\\\\").replace('[', "\\["));
                re.push(']');
                i = close;
            }
            '{' => {
                brace += 1;
                re.push_str("(?:");
            }
            '}' if brace > 0 => {
                brace -= 1;
                re.push(')');
            }
            ',' if brace > 0 => re.push('|'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push_str(")$");
    Regex::new(&re).map_err(|source| GlobError {
        pattern: pat.to_string(),
        source,
    })
}

/// One element's matcher. An expression such as `*.*.cpu.usage_user` is matched against
/// every series' path, so its plain shapes skip the regex.
pub enum Element {
    /// `*`: what `^(?:.*)$` matches, any node without a line break.
    Any,
    /// No glob character: the node itself.
    Literal(String),
    Pattern(Regex),
}

impl Element {
    pub fn new(pat: &str) -> Result<Element, GlobError> {
        Ok(if pat == "*" {
            Element::Any
        } else if !has_glob(pat) {
            Element::Literal(pat.to_string())
        } else {
            Element::Pattern(element_regex(pat)?)
        })
    }

    pub fn is_match(&self, node: &str) -> bool {
        match self {
            Element::Any => !node.contains('\n'),
            Element::Literal(l) => node == l,
            Element::Pattern(r) => r.is_match(node),
        }
    }
}

/// A compiled multi-element pattern.
pub struct PathGlob {
    pub elements: Vec<Element>,
}

impl PathGlob {
    pub fn new(q: &str) -> Result<PathGlob, GlobError> {
        Ok(PathGlob {
            elements: split_elements(q)
                .iter()
                .map(|e| Element::new(e))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether the first `elements.len()` nodes of `nodes` match.
    pub fn matches_prefix(&self, nodes: &[&str]) -> bool {
        nodes.len() >= self.elements.len()
            && self.elements.iter().zip(nodes).all(|(r, n)| r.is_match(n))
    }

    /// What every matching path starts with: the leading literal elements, each followed by
    /// its dot when more elements follow (the whole path when all are literal).
    pub fn literal_prefix(&self) -> String {
        let mut out = String::new();
        for (i, e) in self.elements.iter().enumerate() {
            let Element::Literal(l) = e else { break };
            out.push_str(l);
            if i + 1 < self.elements.len() {
                out.push('.');
            }
        }
        out
    }

    /// What every matching path ends with: the trailing literal elements, each preceded by
    /// its dot when elements come before (empty when the last element is a pattern).
    pub fn literal_suffix(&self) -> String {
        let tail: Vec<&str> = self
            .elements
            .iter()
            .rev()
            .map_while(|e| {
                if let Element::Literal(l) = e {
                    Some(l.as_str())
                } else {
                    None
                }
            })
            .collect();
        let mut out = String::new();
        for (i, l) in tail.iter().rev().enumerate() {
            if i > 0 || tail.len() < self.elements.len() {
                out.push('.');
            }
            out.push_str(l);
        }
        out
    }

    /// Whether a dotted path has exactly one node per element, each matching.
    pub fn matches_path(&self, path: &str) -> bool {
        let mut nodes = path.split('.');
        self.elements
            .iter()
            .all(|e| nodes.next().is_some_and(|n| e.is_match(n)))
            && nodes.next().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_ends() {
        let ends = |q: &str| {
            let g = PathGlob::new(q).unwrap();
            (g.literal_prefix(), g.literal_suffix())
        };
        assert_eq!(
            ends("*.*.cpu.usage_user"),
            ("".into(), ".cpu.usage_user".into())
        );
        assert_eq!(ends("a.b"), ("a.b".into(), "a.b".into()));
        assert_eq!(ends("a.*.c"), ("a.".into(), ".c".into()));
        assert_eq!(ends("a.*"), ("a.".into(), "".into()));
        assert_eq!(ends("{x,y}"), ("".into(), "".into()));
    }

    #[test]
    fn globs() {
        let m = |p: &str, s: &str| element_regex(p).unwrap().is_match(s);
        assert!(m("w*", "web01") && m("*", "") && !m("w*", "db"));
        assert!(m("web0?", "web01") && !m("web0?", "web011"));
        assert!(m("web0[12]", "web02") && !m("web0[12]", "web03"));
        assert!(m("[!a]*", "zleaf") && !m("[!a]*", "aleaf"));
        assert!(m("{web01,db01}", "db01") && !m("{web01,db01}", "web02"));
        assert!(m("{a,b{c,d}}", "bd"));
        assert!(m("a.b", "a.b") && !m("a.b", "axb"));
        assert_eq!(
            split_elements("demo.{a.b,c}.x[.]"),
            vec!["demo", "{a.b,c}", "x[.]"]
        );
    }

    #[test]
    fn plain_elements_match_as_their_regex_does() {
        let nodes = [
            "", "a", "ab", "a\nb", "\n", "x]", "a,b", "}", "web01", "a\\b",
        ];
        for pat in ["*", "a", "ab", "x]", "a,b", "}", "web01", "a\\b"] {
            let (e, r) = (Element::new(pat).unwrap(), element_regex(pat).unwrap());
            assert!(!matches!(e, Element::Pattern(_)), "{pat}");
            for n in nodes {
                assert_eq!(e.is_match(n), r.is_match(n), "{pat:?} on {n:?}");
            }
        }
        let g = PathGlob::new("a.*.c").unwrap();
        assert!(
            g.matches_path("a.b.c")
                && !g.matches_path("a.b.c.d")
                && !g.matches_path("a.b")
                && !g.matches_path("a.b.d")
        );
        assert_eq!(g.literal_prefix(), "a.");
        assert_eq!(PathGlob::new("a.b.c").unwrap().literal_prefix(), "a.b.c");
        assert_eq!(PathGlob::new("*.b").unwrap().literal_prefix(), "");
        assert_eq!(PathGlob::new("a.b{1,2}.c").unwrap().literal_prefix(), "a.");
    }
}
