//! HTTP accounting: requests by endpoint family and status code, and query latency by API.

use crate::observe::metrics::{status_slot, Endpoint, QueryApi};
use crate::server::routes::{family, Family};
use std::time::Instant;

/// The family of a request (a bounded label, unlike the path itself). `/metrics` is the
/// exposition only for a GET without `query`, as the router decides.
pub fn endpoint_of(method: &http::Method, path: &str, query_string: &str) -> Endpoint {
    let e = endpoint(path);
    let graphite_find = method != http::Method::GET
        || form_urlencoded::parse(query_string.as_bytes()).any(|(k, _)| k == "query");
    if e == Endpoint::Metrics && graphite_find {
        return Endpoint::GraphiteMeta;
    }
    e
}

/// The family a request path belongs to.
pub fn endpoint(path: &str) -> Endpoint {
    let p = path.trim_end_matches('/').to_ascii_lowercase();
    match p.as_str() {
        "/api/put" | "/api/v1/put" => Endpoint::Put,
        "/api/query" | "/api/v1/query/last" | "/api/query/last" | "/api/query/exp"
        | "/api/query/gexp" => Endpoint::Query,
        "/api/v1/write" => Endpoint::RemoteWrite,
        "/api/v1/read" => Endpoint::RemoteRead,
        "/api/v1/query" => Endpoint::PromqlInstant,
        "/api/v1/query_range" => Endpoint::PromqlRange,
        "/render" => Endpoint::GraphiteRender,
        "/metrics" => Endpoint::Metrics,
        x if x.starts_with("/api/stats") || x.starts_with("/api/v1/stats") => Endpoint::Stats,
        x if x.starts_with("/api/uid") || x.starts_with("/api/v1/uid") => Endpoint::Uid,
        x if x.starts_with("/api/v1/") && family(x) == Some(Family::Prometheus) => {
            Endpoint::PromMeta
        }
        x if family(x) == Some(Family::GraphiteWeb) => Endpoint::GraphiteMeta,
        x if x.starts_with("/api/annotation")
            || x.starts_with("/api/tree")
            || x.starts_with("/api/search")
            || x.starts_with("/api/suggest") =>
        {
            Endpoint::Meta
        }
        _ => Endpoint::Other,
    }
}

/// The query API an endpoint serves, if it is one whose latency is recorded.
pub fn query_api(e: Endpoint) -> Option<QueryApi> {
    Some(match e {
        Endpoint::Query => QueryApi::OpenTsdb,
        Endpoint::PromqlInstant => QueryApi::PromqlInstant,
        Endpoint::PromqlRange => QueryApi::PromqlRange,
        Endpoint::GraphiteRender => QueryApi::GraphiteRender,
        Endpoint::RemoteRead => QueryApi::RemoteRead,
        _ => return None,
    })
}

/// Counts one answered request; query endpoints also get their latency recorded.
pub fn record(e: Endpoint, status: u16, started: Instant) {
    let m = crate::observe::metrics();
    m.http[e as usize][status_slot(status)].inc();
    if let Some(api) = query_api(e) {
        m.query[api as usize].since(started);
    }
}

/// A query request listed by `/api/stats/query` while it runs; [`QueryTrack::finish`] moves it
/// to the completed list (dropped unfinished — the client went away — it is listed as 499).
pub struct QueryTrack(Option<u64>);

pub fn track_query(
    e: Endpoint,
    path: &str,
    query_string: &str,
    body: &[u8],
    remote: &str,
) -> QueryTrack {
    QueryTrack(query_api(e).map(|_| {
        crate::observe::queries::start(
            crate::observe::queries::describe(e.as_str(), path, query_string, body),
            remote.to_string(),
        )
    }))
}

impl QueryTrack {
    pub fn finish(mut self, status: http::StatusCode) {
        if let Some(id) = self.0.take() {
            crate::observe::queries::finish(id, status);
        }
    }
}

impl Drop for QueryTrack {
    fn drop(&mut self) {
        if let Some(id) = self.0.take() {
            crate::observe::queries::finish(
                id,
                http::StatusCode::from_u16(499).unwrap_or(http::StatusCode::BAD_REQUEST),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(endpoint("/api/put"), Endpoint::Put);
        assert_eq!(endpoint("/api/query/"), Endpoint::Query);
        assert_eq!(endpoint("/api/v1/query"), Endpoint::PromqlInstant);
        assert_eq!(endpoint("/api/v1/query_range"), Endpoint::PromqlRange);
        assert_eq!(endpoint("/api/v1/labels"), Endpoint::PromMeta);
        assert_eq!(endpoint("/api/v1/label/job/values"), Endpoint::PromMeta);
        assert_eq!(endpoint("/metrics/find"), Endpoint::GraphiteMeta);
        assert_eq!(endpoint("/metrics"), Endpoint::Metrics);
        assert_eq!(
            endpoint_of(&http::Method::GET, "/metrics", ""),
            Endpoint::Metrics
        );
        assert_eq!(
            endpoint_of(&http::Method::GET, "/metrics", "query=a.*"),
            Endpoint::GraphiteMeta
        );
        assert_eq!(
            endpoint_of(&http::Method::POST, "/metrics", ""),
            Endpoint::GraphiteMeta
        );
        assert_eq!(endpoint("/api/stats/jvm"), Endpoint::Stats);
        assert_eq!(endpoint("/nope"), Endpoint::Other);
    }
}
