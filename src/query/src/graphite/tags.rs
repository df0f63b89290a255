//! `seriesByTag` expressions (spec §2.8) over the series index: every series' Graphite tags
//! (its path's `;k=v` tags plus `name`).

use super::index::Entry;
use regex::Regex;
use std::collections::BTreeMap;

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
    pub fn parse(s: &str) -> Result<TagExpr, String> {
        let re = Regex::new(r"^([^;!=]+)(!?=~?)([^;]*)$").expect("valid");
        let c = re
            .captures(s)
            .ok_or_else(|| format!("Invalid tag expression: {s}"))?;
        let (tag, op, spec) = (c[1].to_string(), &c[2], c[3].to_string());
        // Python `re.match`: anchored at the start only.
        let compile = |p: &str| {
            let p = if p.starts_with('^') {
                p.to_string()
            } else {
                format!("^(?:{p})")
            };
            Regex::new(&p).map_err(|e| format!("Invalid regular expression in {s}: {e}"))
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

pub fn parse_all(exprs: &[String]) -> Result<Vec<TagExpr>, String> {
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
pub fn find_series<'a>(entries: &'a [Entry], exprs: &[String]) -> Result<Vec<&'a Entry>, String> {
    if exprs.is_empty() {
        return Err("no tag expressions specified".into());
    }
    let parsed = parse_all(exprs)?;
    if parsed.iter().all(|x| x.matches("")) {
        return Err("At least one tagspec must not match the empty string".into());
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
