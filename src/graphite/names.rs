//! Graphite paths ↔ OpenTSDB metric + tags.
//!
//! * A dotted path no rule matches is stored whole as the metric, with the placeholder tag
//!   `_.labels=none` (OpenTSDB needs a tag; it is the Prometheus path's placeholder, so the
//!   series reads back as `{__name__="a.b.c"}` there, and no escaped name can produce it).
//! * A tagged path `name;k=v;…` (normalised as Graphite 1.1 does) keeps its tags.
//! * A path a rule matches becomes the rule's metric + tags (see [`Rule`]).
//!
//! Characters OpenTSDB disallows are escaped reversibly as `_.HH` with the Prometheus path's
//! escaping, so every stored name decodes back to what was sent.

use crate::prometheus::labels::{escape, unescape, PLACEHOLDER_TAGK, PLACEHOLDER_TAGV};

/// The compiled, validated rule set.
#[derive(Debug, Default)]
pub struct NameRules {
    max_tags: usize,
}

impl NameRules {
    pub fn from_config(cfg: &crate::config::Config) -> Result<NameRules, String> {
        if !cfg.graphite.rules.is_empty() {
            return Err("graphite.rules are not supported yet".into());
        }
        Ok(NameRules { max_tags: cfg.graphite.max_tags })
    }

    /// dotted (or tagged `name;k=v`) path → OpenTSDB metric + tags (owned, ready for DataPoint)
    pub fn to_series(&self, path: &str) -> Result<(String, Vec<(String, String)>), String> {
        if path.is_empty() {
            return Err("empty path".into());
        }
        if tsgate_graphite::tags::is_tagged(path) {
            let t = tsgate_graphite::tags::parse(path).map_err(|e| e.to_string())?;
            let max = if self.max_tags == 0 { 32 } else { self.max_tags };
            if t.tags.len() > max {
                return Err(format!("{path}: {} tags, more than graphite.max_tags = {max}", t.tags.len()));
            }
            let mut tags: Vec<(String, String)> = t.tags.iter().map(|(k, v)| (escape(k).into_owned(), escape(v).into_owned())).collect();
            if tags.is_empty() {
                tags.push(placeholder());
            }
            tags.sort();
            return Ok((escape(&t.name).into_owned(), tags));
        }
        Ok((escape(path).into_owned(), vec![placeholder()]))
    }

    /// metric + tags (as stored) → the Graphite path (dotted, or `name;k=v;…` for tagged series)
    pub fn to_path(&self, metric: &str, tags: &[(String, String)]) -> String {
        let real: Vec<(String, String)> = tags.iter().filter(|(k, _)| k != PLACEHOLDER_TAGK).map(|(k, v)| (unescape(k).into_owned(), unescape(v).into_owned())).collect();
        let name = unescape(metric);
        if real.is_empty() {
            return name.into_owned();
        }
        let mut parts: Vec<String> = real.iter().map(|(k, v)| format!(";{k}={v}")).collect();
        parts.sort();
        let mut s = name.into_owned();
        for p in parts {
            s.push_str(&p);
        }
        s
    }
}

fn placeholder() -> (String, String) {
    (PLACEHOLDER_TAGK.to_string(), PLACEHOLDER_TAGV.to_string())
}
