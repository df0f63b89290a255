//! Graphite 1.1 tagged series: `name;k=v;…` (and the OpenMetrics-style `name{k="v",…}`),
//! normalised as carbon's `TaggedSeries` does: the `name` tag is the metric name (leading `~`
//! removed), duplicate keys keep the last value, and the canonical path is the name followed
//! by the `;k=v` strings sorted as whole strings.

use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    #[error("tagged series {0:?}: empty metric name")]
    EmptyName(String),
    #[error("tagged series {0:?}: a tag is not of the form key=value with both non-empty")]
    Malformed(String),
    #[error("tagged series {0:?}: tag key {1:?} contains one of ;!^=")]
    BadKey(String, String),
    #[error("tagged series {0:?}: tag value {1:?} starts with ~ or contains ;")]
    BadValue(String, String),
}

/// A parsed tagged series; keys are unique and sorted in canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaggedSeries<'a> {
    pub name: Cow<'a, str>,
    /// (key, value), without `name`, in the order of the canonical path.
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl TaggedSeries<'_> {
    /// The canonical path: `name;k=v;…` with the `;k=v` strings sorted (code-point order).
    pub fn canonical(&self) -> String {
        let mut s = String::with_capacity(
            self.name.len()
                + self
                    .tags
                    .iter()
                    .map(|(k, v)| k.len() + v.len() + 2)
                    .sum::<usize>(),
        );
        s.push_str(&self.name);
        for (k, v) in &self.tags {
            s.push(';');
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }
}

/// True when the path carries tags (either syntax); a plain dotted path does not.
pub fn is_tagged(path: &str) -> bool {
    path.contains(';') || (path.ends_with("\"}") && path.contains('{'))
}

fn check_key(path: &str, k: &str) -> Result<(), TagError> {
    if k.is_empty() {
        return Err(TagError::Malformed(path.into()));
    }
    if k.contains([';', '!', '^', '=']) {
        return Err(TagError::BadKey(path.into(), k.into()));
    }
    Ok(())
}

fn check_value(path: &str, v: &str) -> Result<(), TagError> {
    if v.is_empty() {
        return Err(TagError::Malformed(path.into()));
    }
    if v.starts_with('~') || v.contains(';') {
        return Err(TagError::BadValue(path.into(), v.into()));
    }
    Ok(())
}

/// Sorts by the `;k=v` string (not by key alone: `a-b=2` sorts before `a=1` because `-` < `=`)
/// and keeps the last value of a repeated key.
fn finish<'a>(
    path: &str,
    name: &'a str,
    mut tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
) -> Result<TaggedSeries<'a>, TagError> {
    let name = name.trim_start_matches('~');
    if name.is_empty() {
        return Err(TagError::EmptyName(path.into()));
    }
    // Last one wins: drop earlier duplicates (tag lists are short).
    let mut i = 0;
    while i < tags.len() {
        if tags[i].0 == "name" || tags[i + 1..].iter().any(|(k, _)| *k == tags[i].0) {
            tags.remove(i);
        } else {
            i += 1;
        }
    }
    tags.sort_by(|(k1, v1), (k2, v2)| {
        let a = k1.bytes().chain(std::iter::once(b'=')).chain(v1.bytes());
        let b = k2.bytes().chain(std::iter::once(b'=')).chain(v2.bytes());
        a.cmp(b)
    });
    let ts = TaggedSeries {
        name: Cow::Borrowed(name),
        tags,
    };
    // The canonical path must read back as this very series: not with a `;` in the name (the
    // OpenMetrics form allows one), nor shaped like the OpenMetrics form itself (which is how
    // `parse` tells the two forms apart, whether a tag value or the name makes it so).
    let c = ts.canonical();
    if name.contains(';') || (c.ends_with("\"}") && c.contains('{')) {
        return Err(TagError::Malformed(path.into()));
    }
    Ok(ts)
}

/// Parses a tagged path in either syntax.
pub fn parse(path: &str) -> Result<TaggedSeries<'_>, TagError> {
    if path.ends_with("\"}") {
        if let Some(open) = path.find('{') {
            return parse_openmetrics(path, open);
        }
    }
    let mut parts = path.split(';');
    let name = parts.next().unwrap_or("");
    let mut tags = Vec::new();
    for seg in parts {
        let (k, v) = seg
            .split_once('=')
            .ok_or_else(|| TagError::Malformed(path.into()))?;
        check_key(path, k)?;
        check_value(path, v)?;
        tags.push((Cow::Borrowed(k), Cow::Borrowed(v)));
    }
    finish(path, name, tags)
}

/// `name{k="v",k2="v\"2"}`: values are quoted, `\"` and `\\` escaped.
fn parse_openmetrics(path: &str, open: usize) -> Result<TaggedSeries<'_>, TagError> {
    let name = &path[..open];
    let body = &path[open + 1..path.len() - 1];
    let mut tags = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| TagError::Malformed(path.into()))?;
        let k = rest[..eq].trim();
        check_key(path, k)?;
        let after = &rest[eq + 1..];
        let mut chars = after.char_indices();
        if chars.next().map(|(_, c)| c) != Some('"') {
            return Err(TagError::Malformed(path.into()));
        }
        let mut v = String::new();
        let mut end = None;
        let mut escaped = false;
        for (i, c) in chars {
            if escaped {
                v.push(c);
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                end = Some(i);
                break;
            } else {
                v.push(c);
            }
        }
        let end = end.ok_or_else(|| TagError::Malformed(path.into()))?;
        check_value(path, &v)?;
        tags.push((Cow::Borrowed(k), Cow::Owned(v)));
        rest = after[end + 1..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.is_empty() {
            return Err(TagError::Malformed(path.into()));
        }
    }
    finish(path, name, tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(p: &str) -> Result<String, TagError> {
        parse(p).map(|t| t.canonical())
    }

    #[test]
    fn spec_examples() {
        assert_eq!(canon("m;b=2;a=1").unwrap(), "m;a=1;b=2");
        assert_eq!(canon("m;a=1;a-b=2").unwrap(), "m;a-b=2;a=1");
        assert_eq!(canon("m;Z=1;a=2").unwrap(), "m;Z=1;a=2");
        assert_eq!(canon("m;a=2;a=1").unwrap(), "m;a=1");
        assert_eq!(canon("m;name=foo;x=1").unwrap(), "m;x=1");
        assert_eq!(canon("~~m;x=y").unwrap(), "m;x=y");
        assert_eq!(canon("t.tagged;b=2;a=1").unwrap(), "t.tagged;a=1;b=2");
        assert_eq!(canon("m{b=\"2\",a=\"1\"}").unwrap(), "m;a=1;b=2");
        assert_eq!(canon("m{a=\"x\\\"y\"}").unwrap(), "m;a=x\"y");
        assert_eq!(canon("m;k=v=w").unwrap(), "m;k=v=w");
        for bad in [
            "m;tagvalue",
            "m;=x",
            "m;t=",
            "m;ta!g=v",
            "m;t=~v",
            "~~~~",
            "~~~~;a=b",
            ";a=b",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tagged_detection() {
        assert!(is_tagged("a;b=c"));
        assert!(is_tagged("a{b=\"c\"}"));
        assert!(!is_tagged("a.b.c"));
    }

    /// Fuzz finding (tests/fuzz, graphite_tags): an OpenMetrics-form name holding `;` gave a
    /// canonical path that read back as another series.
    #[test]
    fn canonical_path_reads_back_as_the_same_series() {
        assert!(matches!(
            parse("a;x=1{k=\"v\"}"),
            Err(TagError::Malformed(_))
        ));
        // Canonical `a;k{=v"}` would read back in the OpenMetrics form.
        assert!(matches!(
            parse(r#"a{k{="v\"}"}"#),
            Err(TagError::Malformed(_))
        ));
        // Second finding: a name shaped like the OpenMetrics form, its only tag being `name`.
        assert!(matches!(
            parse("e{r=\"};name=ss{1"),
            Err(TagError::Malformed(_))
        ));
        for p in ["a{k=\"v\"}", "a;b=c", "x{b=\"1\",a=\"2\"}"] {
            let c = parse(p).unwrap().canonical();
            assert_eq!(parse(&c).unwrap().canonical(), c, "{p}");
        }
    }
}
