//! Stored series ↔ Graphite path. STAND-IN until the `g-ingest` branch's
//! `crate::graphite::names::NameRules` is merged: then these delegate to `state.names`.
//! Without rules: an untagged series is its metric name; a tagged one the canonical tagged
//! path `metric;k=v;…` (tag strings sorted as whole strings, as Graphite 1.1 normalises).

use crate::server::AppState;

pub fn to_path(_state: &AppState, metric: &str, tags: &[(String, String)]) -> String {
    canonical(metric, tags)
}

pub fn to_series(_state: &AppState, path: &str) -> Result<(String, Vec<(String, String)>), String> {
    let (name, tags) = parse_tagged(path)?;
    Ok((name, tags))
}

/// `name;k=v;…` with the `;k=v` strings sorted lexicographically (code-point order).
pub fn canonical(name: &str, tags: &[(String, String)]) -> String {
    let mut parts: Vec<String> = tags.iter().filter(|(k, _)| k != "name").map(|(k, v)| format!(";{k}={v}")).collect();
    parts.sort();
    parts.dedup();
    let mut s = name.to_string();
    for p in parts {
        s.push_str(&p);
    }
    s
}

/// graphite's `TaggedSeries.parse` for the `;` form (and plain dotted names: no tags).
/// Duplicate keys: the last wins; a user `name=` tag is replaced by the name.
pub fn parse_tagged(path: &str) -> Result<(String, Vec<(String, String)>), String> {
    let mut it = path.split(';');
    let raw_name = it.next().unwrap_or("");
    let name = raw_name.trim_start_matches('~');
    if name.is_empty() {
        return Err(format!("Cannot parse path {path}, no metric found"));
    }
    let mut tags: std::collections::BTreeMap<String, String> = Default::default();
    for seg in it {
        let Some((k, v)) = seg.split_once('=') else { return Err(format!("Cannot parse path {path}, invalid segment {seg}")) };
        if k.is_empty() || v.is_empty() || k.contains(['!', '^', '=']) || v.starts_with('~') {
            return Err(format!("Cannot parse path {path}, invalid segment {seg}"));
        }
        tags.insert(k.to_string(), v.to_string());
    }
    tags.remove("name");
    Ok((name.to_string(), tags.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carbon_normalisation_table() {
        let c = |p: &str| parse_tagged(p).map(|(n, t)| canonical(&n, &t));
        assert_eq!(c("m;b=2;a=1").unwrap(), "m;a=1;b=2");
        assert_eq!(c("m;a=2;a=1").unwrap(), "m;a=1");
        assert_eq!(c("m;name=foo;x=1").unwrap(), "m;x=1");
        assert_eq!(c("~~m;x=y").unwrap(), "m;x=y");
        assert_eq!(c("m;a=1;a-b=2").unwrap(), "m;a-b=2;a=1");
        assert_eq!(c("m;Z=1;a=2").unwrap(), "m;Z=1;a=2");
        for bad in ["m;tagvalue", "m;=x", "m;t=", "m;ta!g=v", "m;t=~v", "~~~~"] {
            assert!(c(bad).is_err(), "{bad}");
        }
    }
}
