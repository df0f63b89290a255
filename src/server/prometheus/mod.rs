//! Prometheus' HTTP endpoints on the OpenTSDB port: remote write and read, and the query API
//! as Grafana uses it. Routed by `server::routes` ahead of OpenTSDB's `/api/v1/<x>` aliases.

pub mod admin;
pub mod api;
pub mod format;
pub mod params;
pub mod query;
pub mod read;
pub mod transfer;
pub mod write;

/// A label name from the path of `/api/v1/label/<name>/values`, percent-decoded.
pub fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
