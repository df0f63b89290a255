//! Every HTTP route of the OpenTSDB port in one table: its methods, its path (or prefix), the
//! API family whose conventions its answers follow (error envelope included), the right a
//! principal needs for it, and its handler. Authentication, authorization, the error envelope
//! and dispatch all read this table; nothing else decides which family a path belongs to.
//!
//! A route's right is judged on the *logical* request, parsed as its handler parses it: an
//! OpenTSDB metadata `GET …&method_override=delete` is a DELETE, and a `POST /api/query`
//! whose JSON body says `"delete": true` (however it is spelled) is a DELETE.

use super::auth::Right;
use super::graphite_web;
use super::http::{error_reply, Reply, Request};
use super::opentsdb_query as tsdb_query;
use super::prometheus as prom;
use super::AppState;
use futures_util::future::BoxFuture;
use http::{Method, StatusCode};
use serde_json::json;
use std::sync::Arc;
use Family::{
    Admin as ADM, GraphiteWeb as GW, Influx as INFLUX, OpenTsdb as TSDB, Otlp as OTLP,
    Prometheus as PROM,
};
use Path::{Api, ApiPrefix, Exact, Trimmed, TrimmedPrefix};

/// Whose conventions a route's answers (and its 401/403/404/405) follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    OpenTsdb,
    Prometheus,
    GraphiteWeb,
    /// The server itself: version, config, stats, `/metrics`, caches. OpenTSDB's error JSON.
    Admin,
    /// InfluxDB's write API: 1.x `{"error":…}`, 2.x `{"code":…,"message":…}` (by path).
    Influx,
    /// OTLP/HTTP metrics: errors as plain text, as Prometheus' OTLP receiver answers them.
    Otlp,
}

/// What a principal must hold for a route when `[auth]` is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Answered without credentials (liveness checks: it reveals the version, nothing stored).
    Open,
    Read,
    Write,
    Assign,
    Admin,
}

impl Need {
    pub fn right(self) -> Option<Right> {
        match self {
            Need::Open => None,
            Need::Read => Some(Right::Read),
            Need::Write => Some(Right::Write),
            Need::Assign => Some(Right::Assign),
            Need::Admin => Some(Right::Admin),
        }
    }
}

/// A set of HTTP methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Methods(u8);

pub const GET: Methods = Methods(1);
pub const POST: Methods = Methods(2);
pub const PUT: Methods = Methods(4);
pub const DELETE: Methods = Methods(8);
/// Every method, those above and any other (the handler decides what it answers).
pub const ANY: Methods = Methods(0xff);
const OTHER: u8 = 16;

impl Methods {
    pub const fn or(self, o: Methods) -> Methods {
        Methods(self.0 | o.0)
    }

    fn bit(m: &Method) -> u8 {
        match *m {
            Method::GET => GET.0,
            Method::POST => POST.0,
            Method::PUT => PUT.0,
            Method::DELETE => DELETE.0,
            _ => OTHER,
        }
    }

    pub fn contains(self, m: &Method) -> bool {
        self.0 & Self::bit(m) != 0
    }

    /// One method of the set (GET first), for tests.
    pub fn example(self) -> Method {
        [Method::GET, Method::POST, Method::PUT, Method::DELETE]
            .into_iter()
            .find(|m| self.contains(m))
            .unwrap_or(Method::PATCH)
    }
}

/// How a route's path is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Exactly this path, as sent (Prometheus routes paths exactly).
    Exact(&'static str),
    /// This path, trailing slashes ignored (graphite-web).
    Trimmed(&'static str),
    /// Any path under this prefix, trailing slashes ignored.
    TrimmedPrefix(&'static str),
    /// OpenTSDB's API: lower-cased, trailing slashes ignored, `/api/v1/x` the same as `/api/x`.
    Api(&'static str),
    /// Any OpenTSDB API path under this prefix (normalised as for `Api`).
    ApiPrefix(&'static str),
    /// Prometheus' `/api/v1/label/<name>/values`.
    LabelValues,
}

const LABEL_PREFIX: &str = "/api/v1/label/";
const LABEL_SUFFIX: &str = "/values";

/// OpenTSDB's reading of a path: lower case, no trailing `/`, `/api/v1/x` = `/api/x`.
fn api_path(path: &str) -> String {
    let p = path.trim_end_matches('/').to_ascii_lowercase();
    match p.strip_prefix("/api/v1/") {
        Some(rest) => format!("/api/{rest}"),
        None => p,
    }
}

impl Path {
    /// A path this matches (for tests and the route listing).
    pub fn example(self) -> String {
        match self {
            Path::Exact(s) | Path::Trimmed(s) | Path::Api(s) if s.is_empty() => "/".into(),
            Path::Exact(s) | Path::Trimmed(s) | Path::Api(s) => s.into(),
            Path::TrimmedPrefix(s) | Path::ApiPrefix(s) => format!("{s}x"),
            Path::LabelValues => "/api/v1/label/job/values".into(),
        }
    }

    /// Whether a request path matches; `api` is its OpenTSDB reading ([`api_path`]).
    fn hits(self, path: &str, api: &str) -> bool {
        let trimmed = path.trim_end_matches('/');
        match self {
            Path::Exact(p) => path == p,
            Path::Trimmed(p) => trimmed == p,
            Path::TrimmedPrefix(p) => trimmed.starts_with(p),
            Path::LabelValues => {
                path.len() > LABEL_PREFIX.len() + LABEL_SUFFIX.len()
                    && path.starts_with(LABEL_PREFIX)
                    && path.ends_with(LABEL_SUFFIX)
            }
            Path::Api(p) => api == p,
            Path::ApiPrefix(p) => api.starts_with(p),
        }
    }

    /// The path as the handler reads it.
    fn handler_path(self, path: &str, api: &str) -> String {
        match self {
            Path::Api(_) | Path::ApiPrefix(_) => api.to_string(),
            _ => path.trim_end_matches('/').to_string(),
        }
    }
}

/// How the logical method is read from a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// The HTTP method as sent.
    Sent,
    /// OpenTSDB's metadata endpoints: a GET's `method_override` parameter.
    Override,
    /// `/api/query`: DELETE, or a POST whose parsed JSON body sets `delete`.
    QueryDelete,
}

/// An extra condition on the request, for one path shared by two routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// A GET without this query parameter (`/metrics`: the exposition; otherwise graphite-web's
    /// find).
    GetWithout(&'static str),
}

/// A handler: the state, the request, and the path as the route matched it (normalised).
pub type Handler = fn(Arc<AppState>, Request, String) -> BoxFuture<'static, Reply>;

pub struct Route {
    pub methods: Methods,
    pub path: Path,
    pub family: Family,
    pub need: Need,
    pub verb: Verb,
    pub when: When,
    pub handler: Handler,
}

const fn route(
    methods: Methods,
    path: Path,
    family: Family,
    need: Need,
    handler: Handler,
) -> Route {
    Route {
        methods,
        path,
        family,
        need,
        verb: Verb::Sent,
        when: When::Always,
        handler,
    }
}

impl Route {
    const fn verb(mut self, v: Verb) -> Route {
        self.verb = v;
        self
    }

    const fn when(mut self, w: When) -> Route {
        self.when = w;
        self
    }

    fn applies(&self, method: &Method, query: &str) -> bool {
        match self.when {
            When::Always => true,
            When::GetWithout(p) => {
                *method == Method::GET
                    && !form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == p)
            }
        }
    }
}

/// An `async fn(&Arc<FamilyState>, Request) -> Reply` as a [`Handler`], given the family's part
/// of the node's state (`opentsdb`, `prometheus`, `graphite_web`).
macro_rules! h {
    ($family:ident, $f:path) => {
        |st: Arc<AppState>, req: Request, _path: String| -> BoxFuture<'static, Reply> {
            Box::pin(async move { $f(&st.$family, req).await })
        }
    };
}

/// A function answering without awaiting (the closure computes the reply).
macro_rules! now {
    (|$st:ident, $req:ident, $path:ident| $body:expr) => {
        |$st: Arc<AppState>, $req: Request, $path: String| -> BoxFuture<'static, Reply> {
            let r = $body;
            Box::pin(async move { r })
        }
    };
}

const GET_POST: Methods = GET.or(POST);
const WRITES: Methods = POST.or(PUT).or(DELETE);

/// The table, in precedence order: the first route whose path (and `When`) matches decides the
/// family; among the routes of that same path, the one whose methods hold the logical method is
/// taken. A path that matches but a method that does not gets the family's 405.
#[rustfmt::skip]
pub static ROUTES: &[Route] = &[
    // Prometheus, exact paths as Prometheus routes them (ahead of OpenTSDB's `/api/v1/x`).
    route(POST, Exact("/api/v1/write"), PROM, Need::Write, h!(prometheus, prom::write::handle)),
    route(POST, Exact("/api/v1/read"), PROM, Need::Read, h!(prometheus, prom::read::handle)),
    route(GET_POST, Exact("/api/v1/query"), PROM, Need::Read, h!(prometheus, prom::query::instant)),
    route(GET_POST, Exact("/api/v1/query_range"), PROM, Need::Read, h!(prometheus, prom::query::range)),
    route(GET_POST, Exact("/api/v1/format_query"), PROM, Need::Read,
        now!(|_s, r, _p| prom::query::format(r))),
    route(GET_POST, Exact("/api/v1/series"), PROM, Need::Read, h!(prometheus, prom::api::series)),
    route(GET_POST, Exact("/api/v1/labels"), PROM, Need::Read, h!(prometheus, prom::api::labels)),
    route(GET, Exact("/api/v1/metadata"), PROM, Need::Read,
        now!(|s, r, _p| prom::api::metadata(&s.prometheus, r))),
    route(GET, Exact("/api/v1/status/buildinfo"), PROM, Need::Read,
        now!(|_s, _r, _p| prom::api::buildinfo())),
    route(GET_POST, Exact("/api/v1/query_exemplars"), PROM, Need::Read,
        now!(|_s, _r, _p| prom::api::ok(json!([])))),
    route(GET, Exact("/api/v1/rules"), PROM, Need::Read,
        now!(|_s, _r, _p| prom::api::ok(json!({"groups": []})))),
    route(GET, Exact("/api/v1/alerts"), PROM, Need::Read,
        now!(|_s, _r, _p| prom::api::ok(json!({"alerts": []})))),
    route(GET, Exact("/api/v1/targets/metadata"), PROM, Need::Read,
        now!(|_s, _r, _p| prom::api::ok(json!([])))),
    // The admin API (off unless admin.enabled, as Prometheus' --web.enable-admin-api).
    route(POST.or(PUT), Exact("/api/v1/admin/tsdb/delete_series"), PROM, Need::Admin,
        h!(prometheus, prom::admin::delete_series)),
    route(POST.or(PUT), Exact("/api/v1/admin/tsdb/snapshot"), PROM, Need::Admin,
        h!(prometheus, prom::transfer::snapshot)),
    route(GET, Exact("/api/v1/status/tsdb"), PROM, Need::Read, h!(prometheus, prom::admin::status_tsdb)),
    // VictoriaMetrics' JSON-lines export and import.
    route(GET_POST, Exact("/api/v1/export"), PROM, Need::Read, h!(prometheus, prom::transfer::export)),
    route(POST, Exact("/api/v1/import"), PROM, Need::Write, h!(prometheus, prom::transfer::import)),
    route(GET, Path::LabelValues, PROM, Need::Read, label_values),
    // The Prometheus text exposition: exactly `/metrics`, a GET without `query`.
    route(GET, Exact("/metrics"), ADM, Need::Read, now!(|s, _r, _p| super::stats_api::metrics(&s)))
        .when(When::GetWithout("query")),
    // InfluxDB line protocol (1.x and 2.x write APIs) and OTLP/HTTP metrics.
    route(POST, Exact("/write"), INFLUX, Need::Write, h!(prometheus, super::influx::write_v1)),
    route(POST, Exact("/api/v2/write"), INFLUX, Need::Write, h!(prometheus, super::influx::write_v2)),
    route(GET, Exact("/ping"), INFLUX, Need::Open, now!(|_s, _r, _p| super::influx::ping())),
    route(POST, Exact("/api/v1/otlp/v1/metrics"), OTLP, Need::Write, h!(prometheus, super::otlp::write)),
    route(POST, Exact("/v1/metrics"), OTLP, Need::Write, h!(prometheus, super::otlp::write)),
    // graphite-web.
    route(ANY, Trimmed("/render"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/metrics"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/metrics/find"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/metrics/expand"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/metrics/index.json"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/version"), GW, Need::Open, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/events/get_data"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/functions"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, TrimmedPrefix("/functions/"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    // tsgate's tag index is derived from the store: these only normalise or forget an index.
    route(POST, Trimmed("/tags/tagSeries"), GW, Need::Write, h!(graphite_web, graphite_web::route)),
    route(POST, Trimmed("/tags/tagMultiSeries"), GW, Need::Write, h!(graphite_web, graphite_web::route)),
    // Deletes stored series (admin.enabled): the admin right, as the other deletes.
    route(POST, Trimmed("/tags/delSeries"), GW, Need::Admin, h!(graphite_web, graphite_web::route)),
    route(ANY, Trimmed("/tags"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    route(ANY, TrimmedPrefix("/tags/"), GW, Need::Read, h!(graphite_web, graphite_web::route)),
    // OpenTSDB.
    route(POST, Api("/api/put"), TSDB, Need::Write, h!(opentsdb, super::api::put)),
    // Rolled-up and pre-aggregated points (OpenTSDB 2.4), into the `[rollups]` tables.
    route(POST, Api("/api/rollup"), TSDB, Need::Write, h!(opentsdb, super::api::rollup)),
    route(ANY, Api("/api/histogram"), TSDB, Need::Write, h!(opentsdb, super::opentsdb_histogram::put)),
    route(GET_POST, Api("/api/query"), TSDB, Need::Read, h!(opentsdb, tsdb_query::query))
        .verb(Verb::QueryDelete),
    // A delete answers with counts only, never the points it removed.
    route(DELETE, Api("/api/query"), TSDB, Need::Admin, h!(opentsdb, tsdb_query::query))
        .verb(Verb::QueryDelete),
    route(GET_POST, Api("/api/query/last"), TSDB, Need::Read, h!(opentsdb, tsdb_query::last)),
    // The graph endpoint: png, ascii and json answers of `m=` queries.
    route(GET, Api("/q"), TSDB, Need::Read, h!(opentsdb, super::opentsdb_graph::q)),
    route(ANY, Api("/api/query/exp"), TSDB, Need::Read, h!(opentsdb, super::opentsdb_exp::query)),
    // Graphite-style functions over m-style sub-queries, in the query string.
    route(ANY, Api("/api/query/gexp"), TSDB, Need::Read, h!(opentsdb, super::opentsdb_gexp::query)),
    route(GET_POST, Api("/api/suggest"), TSDB, Need::Read, h!(opentsdb, tsdb_query::suggest)),
    route(GET_POST, Api("/api/search/lookup"), TSDB, Need::Read, h!(opentsdb, tsdb_query::lookup)),
    // tsmeta, tsmeta_summary, tsuids, uidmeta, annotation: answered from tsgate's own tables.
    route(GET_POST, ApiPrefix("/api/search/"), TSDB, Need::Read, meta),
    route(ANY, Api("/api/config/filters"), TSDB, Need::Read,
        now!(|_s, _r, _p| tsdb_query::filters())),
    route(ANY, Api("/api/aggregators"), TSDB, Need::Read,
        now!(|_s, _r, _p| super::api::aggregators())),
    // Its answer says which names exist: not for every writer.
    route(ANY, Api("/api/uid/assign"), TSDB, Need::Assign, h!(opentsdb, super::api::uid_assign)),
    // Renaming changes what every reader sees of stored data: the admin right, as deletes.
    route(GET_POST, Api("/api/uid/rename"), TSDB, Need::Admin, meta),
    // Metadata: reads by GET, everything else (by `method_override` too) writes.
    route(GET, Api("/api/annotation"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, Api("/api/annotation"), TSDB, Need::Write, meta).verb(Verb::Override),
    route(GET, Api("/api/annotations"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, Api("/api/annotations"), TSDB, Need::Write, meta).verb(Verb::Override),
    route(GET, ApiPrefix("/api/annotation/"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, ApiPrefix("/api/annotation/"), TSDB, Need::Write, meta).verb(Verb::Override),
    route(GET, ApiPrefix("/api/annotations/"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, ApiPrefix("/api/annotations/"), TSDB, Need::Write, meta).verb(Verb::Override),
    route(GET, Api("/api/uid/uidmeta"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, Api("/api/uid/uidmeta"), TSDB, Need::Write, meta).verb(Verb::Override),
    route(GET, Api("/api/uid/tsmeta"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, Api("/api/uid/tsmeta"), TSDB, Need::Write, meta).verb(Verb::Override),
    route(GET, Api("/api/tree"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, Api("/api/tree"), TSDB, Need::Write, meta).verb(Verb::Override),
    // These only test or list, whatever the method.
    route(ANY, Api("/api/tree/branch"), TSDB, Need::Read, meta),
    route(ANY, Api("/api/tree/test"), TSDB, Need::Read, meta),
    route(ANY, Api("/api/tree/collisions"), TSDB, Need::Read, meta),
    route(ANY, Api("/api/tree/notmatched"), TSDB, Need::Read, meta),
    route(GET, ApiPrefix("/api/tree/"), TSDB, Need::Read, meta).verb(Verb::Override),
    route(WRITES, ApiPrefix("/api/tree/"), TSDB, Need::Write, meta).verb(Verb::Override),
    // The server itself.
    // The web UI (`server/ui`): the page at `/` (the name and version as JSON for a client that
    // asks for JSON), its embedded files under `/ui/`. It shows stored data: the read right.
    route(ANY, Api(""), ADM, Need::Read,
        now!(|_s, req, _p| super::ui::index(&req.method, &req.headers))),
    route(GET, TrimmedPrefix("/ui/"), ADM, Need::Read, now!(|_s, _req, p| super::ui::asset(&p))),
    route(ANY, Api("/api/version"), ADM, Need::Open, now!(|_s, _r, _p| super::api::version())),
    // Redacted: no password hash or token digest leaves the process.
    route(ANY, Api("/api/config"), ADM, Need::Read, now!(|s, _r, _p| tsdb_query::config(&s.opentsdb))),
    route(ANY, Api("/api/stats"), ADM, Need::Read,
        now!(|s, _r, p| super::stats_api::route(&s, &p))),
    route(ANY, ApiPrefix("/api/stats/"), ADM, Need::Read,
        now!(|s, _r, p| super::stats_api::route(&s, &p))),
    route(ANY, Api("/api/dropcaches"), ADM, Need::Admin,
        now!(|s, _r, _p| super::api::drop_caches(&s.opentsdb))),
];

fn label_values(st: Arc<AppState>, req: Request, path: String) -> BoxFuture<'static, Reply> {
    Box::pin(async move {
        let name = &path[LABEL_PREFIX.len()..path.len() - LABEL_SUFFIX.len()];
        let name = prom::percent_decode(name);
        prom::api::label_values(&st.prometheus, req, name).await
    })
}

fn meta(st: Arc<AppState>, req: Request, path: String) -> BoxFuture<'static, Reply> {
    Box::pin(async move { super::opentsdb_meta::route(&st.opentsdb, req, &path).await })
}

/// What the table says about one request.
pub enum Lookup {
    /// A route, and the path as its handler reads it.
    Route(&'static Route, String),
    /// The path is a route's, the (logical) method none of its routes'.
    MethodNotAllowed(Family, Method),
    /// `method_override` names no method.
    BadOverride,
    NotFound,
}

impl Lookup {
    /// The family whose conventions the answer follows (OpenTSDB's when no route matched).
    pub fn family(&self) -> Family {
        match self {
            Lookup::Route(r, _) => r.family,
            Lookup::MethodNotAllowed(f, _) => *f,
            Lookup::BadOverride | Lookup::NotFound => Family::OpenTsdb,
        }
    }

    /// The right needed: `None` for an open route, the route's right otherwise. Requests no
    /// route serves (404, 405) reach nothing; they still need a valid principal, so that only
    /// a client with credentials learns which paths exist.
    pub fn need(&self) -> Option<Need> {
        match self {
            Lookup::Route(r, _) => Some(r.need),
            _ => None,
        }
    }

    pub fn is_open(&self) -> bool {
        self.need() == Some(Need::Open)
    }
}

/// The logical method of a request for a route's verb; `None` for an unknown override.
/// `body` is `None` before the body is read (only `/api/query` looks at it, and it is never
/// open, so what is open does not depend on the body).
fn logical(verb: Verb, method: &Method, query: &str, body: Option<&[u8]>) -> Option<Method> {
    match verb {
        Verb::Sent => Some(method.clone()),
        Verb::Override => {
            if *method != Method::GET {
                return Some(method.clone());
            }
            let o = form_urlencoded::parse(query.as_bytes())
                .filter(|(k, _)| k == "method_override")
                .last()
                .map(|(_, v)| v.to_ascii_lowercase());
            match o.as_deref() {
                None | Some("get") => Some(Method::GET),
                Some("post") => Some(Method::POST),
                Some("put") => Some(Method::PUT),
                Some("delete") => Some(Method::DELETE),
                Some(_) => None,
            }
        }
        Verb::QueryDelete => {
            // The same parse the query endpoint runs: what it would delete is what needs the
            // right, never a byte pattern (`"d\u0065lete"` is `delete` once parsed).
            let deletes = *method == Method::POST
                && body.is_some_and(|b| {
                    crate::query::parse::from_json(b, 0).is_ok_and(|q| q.flags.delete)
                });
            Some(if deletes {
                Method::DELETE
            } else {
                method.clone()
            })
        }
    }
}

/// Finds the route of a request.
pub fn find(method: &Method, path: &str, query: &str, body: Option<&[u8]>) -> Lookup {
    let api = api_path(path);
    let Some(first) = ROUTES
        .iter()
        .find(|r| r.applies(method, query) && r.path.hits(path, &api))
    else {
        return Lookup::NotFound;
    };
    // The rows of one path share their verb (a unit test checks it): read the request once.
    let Some(m) = logical(first.verb, method, query, body) else {
        return Lookup::BadOverride;
    };
    match ROUTES
        .iter()
        .filter(|r| r.path == first.path && r.when == first.when)
        .find(|r| r.methods.contains(&m))
    {
        Some(r) => Lookup::Route(r, r.path.handler_path(path, &api)),
        None => Lookup::MethodNotAllowed(first.family, m),
    }
}

/// The family a path belongs to, whatever the method (for accounting).
pub fn family(path: &str) -> Option<Family> {
    let api = api_path(path);
    ROUTES
        .iter()
        .find(|r| r.when == When::Always && r.path.hits(path, &api))
        .map(|r| r.family)
}

/// Answers a request the table has looked up.
pub async fn dispatch(state: &Arc<AppState>, found: Lookup, req: Request) -> Reply {
    match found {
        Lookup::Route(r, path) => {
            // OpenTSDB's JSON serializer wraps every answer, errors too, in `<f>(…)` when the
            // query string has `jsonp=<f>` (TestHttpJsonSerializer.formatSuggestV1JSONP).
            let jsonp = matches!(r.family, Family::OpenTsdb | Family::Admin)
                .then(|| req.param("jsonp"))
                .flatten()
                .filter(|f| !f.is_empty());
            let reply = (r.handler)(state.clone(), req, path).await;
            match jsonp {
                Some(f) => wrap_jsonp(reply, &f),
                None => reply,
            }
        }
        Lookup::MethodNotAllowed(family, m) => method_not_allowed(family, &req.path, &m),
        Lookup::BadOverride => error_reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "Unknown or unsupported method override value",
            "",
        ),
        Lookup::NotFound => error_reply(StatusCode::NOT_FOUND, "Endpoint not found", ""),
    }
}

/// A JSON answer as `<f>(<json>)` (other answers, like `/q`'s PNG, as they are).
fn wrap_jsonp(mut reply: Reply, f: &str) -> Reply {
    let json = reply
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        let body = std::mem::take(reply.body_mut());
        let mut wrapped = Vec::with_capacity(body.len() + f.len() + 2);
        wrapped.extend_from_slice(f.as_bytes());
        wrapped.push(b'(');
        wrapped.extend_from_slice(&body);
        wrapped.push(b')');
        *reply.body_mut() = wrapped;
        reply.headers_mut().remove(http::header::CONTENT_LENGTH);
    }
    reply
}

/// A 405 in the family's words.
fn method_not_allowed(family: Family, path: &str, m: &Method) -> Reply {
    match family {
        Family::Prometheus => http::Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header("content-type", "text/plain; charset=utf-8")
            .body(b"Method Not Allowed\n".to_vec())
            .expect("valid"),
        // Only the tag-mutating endpoints restrict the method.
        Family::GraphiteWeb => super::graphite_web::json_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "This endpoint only accepts POST",
        ),
        Family::OpenTsdb | Family::Admin => super::api::method_not_allowed(m),
        Family::Influx => super::influx::error(
            super::influx::Api::of_path(path),
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("method {m} not allowed"),
        ),
        Family::Otlp => super::otlp::text(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("method {m} not allowed"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(m: Method, path: &str, query: &str, body: &str) -> Option<Need> {
        find(&m, path, query, Some(body.as_bytes())).need()
    }

    #[test]
    fn every_route_path_is_reached_by_every_method_it_lists() {
        for (i, r) in ROUTES.iter().enumerate() {
            let path = r.path.example();
            for m in [Method::GET, Method::POST, Method::PUT, Method::DELETE] {
                if !r.methods.contains(&m) {
                    continue;
                }
                // `query` steers a GET of `/metrics` to graphite-web's find.
                let q = match r.when {
                    When::Always => "query=x",
                    When::GetWithout(_) => "",
                };
                match find(&m, &path, q, Some(b"")) {
                    Lookup::Route(found, _) => {
                        assert!(std::ptr::eq(found, r), "route {i} ({m} {path}) shadowed")
                    }
                    _ => panic!("route {i} ({m} {path}) not found"),
                }
            }
        }
    }

    #[test]
    fn rows_of_one_path_share_family_and_verb() {
        for a in ROUTES {
            for b in ROUTES
                .iter()
                .filter(|b| b.path == a.path && b.when == a.when)
            {
                assert_eq!((a.family, a.verb), (b.family, b.verb), "{:?}", a.path);
            }
        }
    }

    #[test]
    fn rights_on_the_parsed_request() {
        let q = r#"{"start":1,"queries":[{"aggregator":"sum","metric":"m"}]"#;
        assert_eq!(
            need(Method::POST, "/api/query", "", &format!("{q}}}")),
            Some(Need::Read)
        );
        for del in [
            r#""delete":true"#,
            r#""d\u0065lete":true"#,
            r#""delete":"True""#,
        ] {
            assert_eq!(
                need(Method::POST, "/api/query", "", &format!("{q},{del}}}")),
                Some(Need::Admin),
                "{del}"
            );
        }
        // A body the query parser refuses deletes nothing: it is judged a read (and gets 400).
        assert_eq!(
            need(Method::POST, "/api/query", "", r#"{"delete":true}"#),
            Some(Need::Read)
        );
        assert_eq!(
            need(Method::DELETE, "/API/V1/Query/", "", "{}"),
            Some(Need::Admin)
        );
        assert_eq!(
            need(Method::GET, "/api/query", "delete=true", ""),
            Some(Need::Read)
        );
        assert_eq!(
            need(Method::GET, "/api/annotation", "method_override=DELETE", ""),
            Some(Need::Write)
        );
        assert!(matches!(
            find(&Method::GET, "/api/annotation", "method_override=zap", None),
            Lookup::BadOverride
        ));
        assert_eq!(
            need(Method::POST, "/api/tree/test", "", ""),
            Some(Need::Read)
        );
        assert_eq!(
            need(Method::POST, "/api/tree/rule", "", ""),
            Some(Need::Write)
        );
        assert_eq!(
            need(Method::GET, "/api/v1/uid/assign", "metric=a", ""),
            Some(Need::Assign)
        );
        assert_eq!(
            need(Method::GET, "/api/dropcaches", "", ""),
            Some(Need::Admin)
        );
        assert_eq!(need(Method::GET, "/api/version", "", ""), Some(Need::Open));
        assert_eq!(need(Method::GET, "/", "", ""), Some(Need::Read));
        assert_eq!(need(Method::GET, "/ui/app.js", "", ""), Some(Need::Read));
        assert_eq!(
            need(Method::GET, "/api/v1/status/buildinfo", "", ""),
            Some(Need::Read)
        );
    }

    #[test]
    fn families_and_precedence() {
        let fam = |m: Method, p: &str, q: &str| find(&m, p, q, None).family();
        assert_eq!(fam(Method::GET, "/api/v1/query", ""), Family::Prometheus);
        // Not Prometheus' (exact) path: OpenTSDB's `/api/v1/` alias of `/api/query`.
        assert_eq!(fam(Method::GET, "/api/v1/query/", ""), Family::OpenTsdb);
        assert_eq!(fam(Method::GET, "/metrics", ""), Family::Admin);
        assert_eq!(fam(Method::GET, "/metrics", "query=*"), Family::GraphiteWeb);
        assert_eq!(fam(Method::POST, "/metrics", ""), Family::GraphiteWeb);
        assert_eq!(
            fam(Method::GET, "/tags/autoComplete/tags", ""),
            Family::GraphiteWeb
        );
        assert_eq!(fam(Method::GET, "/api/stats/query", ""), Family::Admin);
        // A Prometheus path with a method Prometheus does not serve is its 405, not OpenTSDB's
        // `/api/query` DELETE.
        assert!(matches!(
            find(&Method::DELETE, "/api/v1/query", "", Some(b"{}")),
            Lookup::MethodNotAllowed(Family::Prometheus, _)
        ));
        assert!(matches!(
            find(&Method::GET, "/tags/tagSeries", "", None),
            Lookup::MethodNotAllowed(Family::GraphiteWeb, _)
        ));
        assert!(matches!(
            find(&Method::GET, "/nope", "", None),
            Lookup::NotFound
        ));
        // Too short to hold a label name.
        assert!(matches!(
            find(&Method::GET, "/api/v1/label/values", "", None),
            Lookup::NotFound
        ));
        assert_eq!(family("/api/v1/label/job/values"), Some(Family::Prometheus));
        assert_eq!(family("/render/"), Some(Family::GraphiteWeb));
        assert_eq!(family("/api/v1/put"), Some(Family::OpenTsdb));
        assert_eq!(family("/nope"), None);
        assert_eq!(family("/write"), Some(Family::Influx));
        assert_eq!(family("/api/v2/write"), Some(Family::Influx));
        assert_eq!(family("/api/v1/otlp/v1/metrics"), Some(Family::Otlp));
        assert_eq!(family("/v1/metrics"), Some(Family::Otlp));
        // Not graphite-web's `/metrics`, nor an OpenTSDB `/api/v1/` alias.
        assert!(matches!(
            find(&Method::GET, "/v1/metrics", "", None),
            Lookup::MethodNotAllowed(Family::Otlp, _)
        ));
        let r = method_not_allowed(Family::Influx, "/api/v2/write", &Method::GET);
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(r.body()).unwrap()["code"],
            "method not allowed"
        );
    }
}
