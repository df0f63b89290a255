//! `/api/search/{tsmeta,tsmeta_summary,tsuids,uidmeta,annotation}` with OpenTSDB's
//! `SearchQuery` in and out (`/api/search/lookup` is `opentsdb_query::lookup`). The matching
//! itself is `meta::search`.

use super::{json_body, method_not_allowed, ok_json, required, HResult, HttpError};
use crate::meta::json::esc;
use crate::meta::search::{self, Query};
use crate::server::http::Request;
use crate::server::state::OpenTsdb;
use http::Method;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    TsMeta,
    TsMetaSummary,
    Tsuids,
    UidMeta,
    Annotation,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "tsmeta" => Kind::TsMeta,
            "tsmeta_summary" => Kind::TsMetaSummary,
            "tsuids" => Kind::Tsuids,
            "uidmeta" => Kind::UidMeta,
            "annotation" => Kind::Annotation,
            _ => return None,
        })
    }

    /// OpenTSDB's `SearchType` enum name, the answer's `type`.
    fn name(self) -> &'static str {
        match self {
            Kind::TsMeta => "TSMETA",
            Kind::TsMetaSummary => "TSMETA_SUMMARY",
            Kind::Tsuids => "TSUIDS",
            Kind::UidMeta => "UIDMETA",
            Kind::Annotation => "ANNOTATION",
        }
    }
}

/// The request part of OpenTSDB's `SearchQuery` (`metric`, `tags` and `useMeta` only matter
/// to lookups and are ignored here).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    #[serde(default)]
    query: Option<String>,
    #[serde(default = "default_limit")]
    limit: i64,
    #[serde(default)]
    start_index: i64,
}

fn default_limit() -> i64 {
    25
}

fn qs_number(req: &Request, name: &str, default: i64) -> Result<i64, HttpError> {
    match req.param(name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| HttpError::bad(format!("Unable to convert '{name}' to a valid number"))),
    }
}

/// `path` is the normalised `/api/search/<type>`.
pub fn route(st: &OpenTsdb, req: &Request, path: &str) -> HResult {
    if req.method != Method::GET && req.method != Method::POST {
        return Err(method_not_allowed(&req.method));
    }
    let kind = Kind::parse(path.trim_start_matches("/api/search/"))
        .ok_or_else(|| HttpError::bad("Invalid search query type supplied"))?;
    let body = if super::has_content(req) {
        json_body::<Body>(req)?
    } else {
        Body {
            query: Some(required(req, "query")?),
            limit: qs_number(req, "limit", 25)?,
            start_index: qs_number(req, "start_index", 0)?,
        }
    };
    let started = std::time::Instant::now();
    let q = search::parse(body.query.as_deref().unwrap_or(""))?;
    let (results, total) = run(st, kind, &q, body.start_index, body.limit)?;
    // `SearchQuery`'s Jackson order: fields first (type, query, metric, limit, time, results),
    // then the getter-only properties (startIndex, totalResults); null `query` left out.
    let mut o = format!("{{\"type\":\"{}\"", kind.name());
    if let Some(q) = &body.query {
        o.push_str(&format!(",\"query\":{}", esc(q)));
    }
    o.push_str(&format!(
        ",\"metric\":\"*\",\"limit\":{},\"time\":{},\"results\":[{}],\"startIndex\":{},\"totalResults\":{}}}",
        body.limit,
        started.elapsed().as_secs_f64() * 1000.0,
        results.join(","),
        body.start_index,
        total
    ));
    ok_json(o)
}

/// The page `[start, start + limit)` of the matches, each as JSON text, and the match count.
fn run(
    st: &OpenTsdb,
    kind: Kind,
    q: &Query,
    start: i64,
    limit: i64,
) -> Result<(Vec<String>, usize), HttpError> {
    let ctx = &st.meta.ctx;
    let (start, end) = (
        start.max(0) as usize,
        start.max(0).saturating_add(limit.max(0)) as usize,
    );
    let mut total = 0usize;
    let mut page = Vec::new();
    let mut keep = |json: &dyn Fn() -> String| {
        if total >= start && total < end {
            page.push(json());
        }
        total += 1;
    };
    match kind {
        Kind::TsMeta | Kind::TsMetaSummary | Kind::Tsuids => {
            search::every_tsmeta(ctx, |m| {
                if !q.matches(&search::tsmeta_fields(&m)) {
                    return;
                }
                keep(&|| match kind {
                    Kind::TsMeta => m.api_json(),
                    Kind::Tsuids => esc(&m.tsuid),
                    _ => summary(&m),
                })
            })?;
        }
        Kind::UidMeta => search::every_uidmeta(ctx, |m| {
            if q.matches(&search::uidmeta_fields(&m)) {
                keep(&|| m.api_json())
            }
        })?,
        Kind::Annotation => search::every_annotation(ctx, |a| {
            if q.matches(&search::annotation_fields(&a)) {
                keep(&|| serde_json::to_string(&a).unwrap_or_default())
            }
        })?,
    }
    Ok((page, total))
}

/// `{"tsuid":..,"metric":..,"tags":{..}}`: a TSMETA_SUMMARY result.
fn summary(m: &crate::meta::tsmeta::TsMeta) -> String {
    let tags: Vec<String> = m
        .tag_pairs()
        .map(|(k, v)| format!("{}:{}", esc(&k.name), esc(&v.name)))
        .collect();
    format!(
        "{{\"tsuid\":{},\"metric\":{},\"tags\":{{{}}}}}",
        esc(&m.tsuid),
        esc(m.metric.as_ref().map(|x| x.name.as_str()).unwrap_or("")),
        tags.join(",")
    )
}
