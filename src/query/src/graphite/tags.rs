//! `seriesByTag` expressions (spec §2.8) over the series index: every series' Graphite tags
//! (its path's `;k=v` tags plus `name`).

use super::index::Entry;
use regex::Regex;
use std::collections::BTreeMap;

/// A `seriesByTag` expression list graphite-web refuses.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TagExprError {
    #[error("Invalid tag expression: {0}")]
    Syntax(String),
    #[error("Invalid regular expression in {expr}: {source}")]
    Regex { expr: String, source: regex::Error },
    #[error("no tag expressions specified")]
    Empty,
    /// Every expression matches the empty string: graphite refuses to list "everything".
    #[error("At least one tagspec must not match the empty string")]
    MatchesEverything,
}

#[derive(Debug)]
pub struct TagExpr {
    pub tag: String,
    op: Op,
}

#[derive(Debug)]
enum Op {
    Eq(String),
    Ne(String),
    Re(Regex),
    Nre(Regex),
}

impl TagExpr {
    pub fn parse(s: &str) -> Result<TagExpr, TagExprError> {
        let re = Regex::new(r"^([^;!=]+)(!?=~?)([^;]*)$").expect("valid");
        let c = re
            .captures(s)
            .ok_or_else(|| TagExprError::Syntax(s.to_string()))?;
        let (tag, op, spec) = (c[1].to_string(), &c[2], c[3].to_string());
        // Python `re.match`: anchored at the start only.
        let compile = |p: &str| {
            let p = if p.starts_with('^') {
                p.to_string()
            } else {
                format!("^(?:{p})")
            };
            Regex::new(&p).map_err(|source| TagExprError::Regex {
                expr: s.to_string(),
                source,
            })
        };
        let op = match op {
            "=" => Op::Eq(spec),
            "!=" => Op::Ne(spec),
            "=~" => Op::Re(compile(&spec)?),
            _ => Op::Nre(compile(&spec)?),
        };
        Ok(TagExpr { tag, op })
    }

    /// A missing tag reads as the empty string.
    pub fn matches(&self, v: &str) -> bool {
        match &self.op {
            Op::Eq(x) => v == x,
            Op::Ne(x) => v != x,
            Op::Re(r) => r.is_match(v),
            Op::Nre(r) => !r.is_match(v),
        }
    }
}

pub fn parse_all(exprs: &[String]) -> Result<Vec<TagExpr>, TagExprError> {
    exprs.iter().map(|e| TagExpr::parse(e)).collect()
}

pub fn matching<'a>(
    entries: &'a [Entry],
    exprs: &[TagExpr],
) -> Vec<(&'a Entry, BTreeMap<String, String>)> {
    entries
        .iter()
        .filter_map(|e| {
            let tags = e.graphite_tags();
            exprs
                .iter()
                .all(|x| x.matches(tags.get(&x.tag).map(String::as_str).unwrap_or("")))
                .then_some((e, tags))
        })
        .collect()
}

/// Series matching every expression, sorted by path. At least one expression must be unable to
/// match the empty string (graphite refuses to list "everything").
pub fn find_series<'a>(
    entries: &'a [Entry],
    exprs: &[String],
) -> Result<Vec<&'a Entry>, TagExprError> {
    if exprs.is_empty() {
        return Err(TagExprError::Empty);
    }
    let parsed = parse_all(exprs)?;
    if parsed.iter().all(|x| x.matches("")) {
        return Err(TagExprError::MatchesEverything);
    }
    Ok(matching(entries, &parsed)
        .into_iter()
        .map(|(e, _)| e)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(p: &str) -> Entry {
        Entry {
            path: p.into(),
            metric: p.into(),
            tags: vec![],
            metric_uid: None,
        }
    }

    #[test]
    fn series_by_tag_semantics() {
        let es = vec![
            e("disk.used;datacenter=dc1;rack=a1;server=web01"),
            e("disk.used;datacenter=dc2;rack=b1;server=web02"),
            e("cpu.load;server=web01"),
            e("plain.path"),
        ];
        let f = |x: &[&str]| {
            find_series(&es, &x.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map(|v| v.iter().map(|e| e.path.clone()).collect::<Vec<_>>())
        };
        assert_eq!(
            f(&["name=disk.used", "datacenter=dc1"]).unwrap(),
            vec!["disk.used;datacenter=dc1;rack=a1;server=web01"]
        );
        assert_eq!(
            f(&["server=web01", "datacenter!=dc1"]).unwrap(),
            vec!["cpu.load;server=web01"]
        );
        // `=~` is anchored at the start only.
        assert_eq!(f(&["name=~disk"]).unwrap().len(), 2);
        assert_eq!(f(&["name=~used"]).unwrap().len(), 0);
        assert_eq!(f(&["name=~plain", "rack="]).unwrap(), vec!["plain.path"]);
        assert_eq!(f(&["name=~[a-z]", "datacenter!=~dc1"]).unwrap().len(), 3);
        assert!(f(&["rack="]).is_err());
        assert!(f(&[]).is_err());
    }
}
