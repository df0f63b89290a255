//! Stored series ↔ Graphite path, through the configured name rules (`GraphiteWeb.names`, from
//! the Graphite ingest side), so every stored series — whichever API wrote it — is browsed and
//! rendered under the same path carbon ingest would have accepted for it. Plus graphite's
//! tagged-path normalisation (`name;k=v`, shared with ingest's `tsgate_graphite::tags`).

use super::Engine;

pub fn to_path(state: &Engine, metric: &str, tags: &[(String, String)]) -> String {
    state.names.to_path(metric, tags)
}

pub fn to_series(
    state: &Engine,
    path: &str,
) -> Result<(String, Vec<(String, String)>), tsgate_core::graphite::names::MapError> {
    state.names.to_series(path)
}

/// A path graphite's `TaggedSeries.parse` refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PathError {
    #[error("Cannot parse path {0}, no metric found")]
    NoMetric(String),
    #[error("Cannot parse path {path}: {reason}")]
    Tags { path: String, reason: String },
}

/// `name;k=v;…` with the `;k=v` strings sorted lexicographically (code-point order).
pub fn canonical(name: &str, tags: &[(String, String)]) -> String {
    let mut parts: Vec<String> = tags
        .iter()
        .filter(|(k, _)| k != "name")
        .map(|(k, v)| format!(";{k}={v}"))
        .collect();
    parts.sort();
    parts.dedup();
    let mut s = name.to_string();
    for p in parts {
        s.push_str(&p);
    }
    s
}

/// graphite's `TaggedSeries.parse` (both the `;` and the OpenMetrics form); a plain dotted
/// name has no tags. Duplicate keys: the last wins; a user `name=` tag is replaced by the name.
pub fn parse_tagged(path: &str) -> Result<(String, Vec<(String, String)>), PathError> {
    if !tsgate_graphite::tags::is_tagged(path) {
        let name = path.trim_start_matches('~');
        if name.is_empty() {
            return Err(PathError::NoMetric(path.to_string()));
        }
        return Ok((name.to_string(), Vec::new()));
    }
    let t = tsgate_graphite::tags::parse(path).map_err(|e| PathError::Tags {
        path: path.to_string(),
        reason: e.to_string(),
    })?;
    Ok((
        t.name.into_owned(),
        t.tags
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
    ))
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
