//! Which right a request needs. Writes: `/api/put`, Prometheus remote write, `/api/uid/assign`,
//! `/api/dropcaches`, annotation/UIDMeta/TSMeta/tree mutations (by their logical verb, so a
//! GET with `method_override=delete` is a write), deleting queries, and graphite's tag
//! mutations. Everything else reads.

use super::Right;
use crate::server::http::Request;
use http::Method;

/// Paths answered without credentials: the version, so load balancers and monitoring can
/// check liveness without holding a secret (it reveals the version and nothing stored).
pub fn is_open(path: &str) -> bool {
    let p = path.trim_end_matches('/').to_ascii_lowercase();
    matches!(
        p.as_str(),
        "" | "/api/version" | "/api/v1/version" | "/version"
    )
}

pub fn required(req: &Request) -> Right {
    if is_write(req) {
        Right::Write
    } else {
        Right::Read
    }
}

fn is_write(req: &Request) -> bool {
    // Routed as `server::api::route` does: Prometheus and graphite-web paths are exact.
    if crate::server::prometheus::handles(&req.path) {
        // The admin API deletes: at least the write right (the admin right, once rights have one).
        return matches!(
            req.path.as_str(),
            "/api/v1/write" | "/api/v1/admin/tsdb/delete_series"
        );
    }
    if crate::server::graphite_web::handles(&req.path) {
        let p = req.path.trim_end_matches('/');
        return matches!(
            p,
            "/tags/tagSeries" | "/tags/tagMultiSeries" | "/tags/delSeries"
        );
    }
    let path = req.path.trim_end_matches('/').to_ascii_lowercase();
    let path = match path.strip_prefix("/api/v1/") {
        Some(rest) => format!("/api/{rest}"),
        None => path,
    };
    match path.as_str() {
        "/api/put" | "/api/uid/assign" | "/api/dropcaches" => true,
        "/api/query" => {
            req.method == Method::DELETE
                || (req.method == Method::POST && body_asks_delete(&req.body))
        }
        // Reads even when POSTed: they only test or list.
        "/api/tree/branch" | "/api/tree/test" | "/api/tree/collisions" | "/api/tree/notmatched" => {
            false
        }
        p if crate::server::opentsdb_meta::handles(p) => logical_method(req) != Method::GET,
        _ => false,
    }
}

/// OpenTSDB's `method_override` on a GET, as the metadata endpoints apply it. An unknown
/// override counts as a write: the endpoint refuses it anyway, and a reader gains nothing.
fn logical_method(req: &Request) -> Method {
    if req.method != Method::GET {
        return req.method.clone();
    }
    match req.param("method_override").map(|m| m.to_ascii_lowercase()) {
        None => Method::GET,
        Some(m) if m == "get" => Method::GET,
        Some(_) => Method::POST,
    }
}

/// `{"delete": true, …}` in a `/api/query` body. A body that does not parse is a read: the
/// query endpoint rejects it with 400 before anything is deleted.
fn body_asks_delete(body: &[u8]) -> bool {
    if !body.windows(6).any(|w| w.eq_ignore_ascii_case(b"delete")) {
        return false;
    }
    // The same reading as the query parser's flags: `true` or `"true"`.
    match serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("delete").cloned())
    {
        Some(serde_json::Value::Bool(b)) => b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: Method, path: &str, query: &str, body: &str) -> Request {
        Request {
            method,
            path: path.into(),
            query: query.into(),
            headers: Default::default(),
            body: body.to_string().into(),
        }
    }

    #[test]
    fn writes_and_reads() {
        let w = |m: Method, p: &str, q: &str, b: &str| required(&req(m, p, q, b));
        assert_eq!(w(Method::POST, "/api/put", "", "[]"), Right::Write);
        assert_eq!(w(Method::POST, "/api/v1/put/", "", "[]"), Right::Write);
        assert_eq!(w(Method::POST, "/api/v1/write", "", ""), Right::Write);
        assert_eq!(w(Method::POST, "/api/v1/read", "", ""), Right::Read);
        assert_eq!(w(Method::POST, "/api/v1/query", "", ""), Right::Read);
        assert_eq!(w(Method::GET, "/api/query", "m=sum:x", ""), Right::Read);
        assert_eq!(
            w(
                Method::POST,
                "/api/query",
                "",
                r#"{"start":1,"queries":[]}"#
            ),
            Right::Read
        );
        assert_eq!(
            w(
                Method::POST,
                "/api/query",
                "",
                r#"{"start":1,"delete":true,"queries":[]}"#
            ),
            Right::Write
        );
        assert_eq!(
            w(
                Method::POST,
                "/api/query",
                "",
                r#"{"start":1,"delete":"True","queries":[]}"#
            ),
            Right::Write
        );
        assert_eq!(w(Method::DELETE, "/api/query", "", "{}"), Right::Write);
        assert_eq!(
            w(Method::GET, "/api/annotation", "start_time=1", ""),
            Right::Read
        );
        assert_eq!(
            w(Method::GET, "/api/annotation", "method_override=delete", ""),
            Right::Write
        );
        assert_eq!(
            w(Method::DELETE, "/api/annotation/bulk", "", ""),
            Right::Write
        );
        assert_eq!(w(Method::POST, "/api/uid/uidmeta", "", ""), Right::Write);
        assert_eq!(w(Method::POST, "/api/tree/rule", "", ""), Right::Write);
        assert_eq!(w(Method::POST, "/api/tree/test", "", ""), Right::Read);
        assert_eq!(
            w(Method::GET, "/api/uid/assign", "metric=a", ""),
            Right::Write
        );
        assert_eq!(w(Method::GET, "/api/dropcaches", "", ""), Right::Write);
        assert_eq!(
            w(Method::POST, "/tags/tagSeries", "", "path=a;b=c"),
            Right::Write
        );
        assert_eq!(
            w(Method::GET, "/tags/autoComplete/tags", "", ""),
            Right::Read
        );
        assert_eq!(w(Method::POST, "/render", "", "target=a"), Right::Read);
        assert_eq!(w(Method::GET, "/api/stats", "", ""), Right::Read);
    }

    #[test]
    fn open_paths() {
        assert!(
            is_open("/api/version")
                && is_open("/")
                && is_open("/version")
                && is_open("/API/Version/")
        );
        assert!(
            !is_open("/api/put")
                && !is_open("/api/versions")
                && !is_open("/api/v1/status/buildinfo")
        );
    }
}
