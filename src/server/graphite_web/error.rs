//! Every way a graphite-web request fails, and the one place each becomes graphite-web's
//! answer: plain text from `/render`, `/metrics/*` and `/events` (a 400 reads `Invalid
//! parameters (…)`, which Grafana displays), `{"error": …}` JSON from `/tags/*` and
//! `/functions`.

use super::{json_error, text_reply};
use crate::query::graphite::attime::TimeError;
use crate::query::graphite::eval::EvalError;
use crate::query::graphite::glob::GlobError;
use crate::query::graphite::naming::PathError;
use crate::query::graphite::parser::ParseError;
use crate::query::graphite::tags::TagExprError;
use crate::query::QueryError;
use crate::server::http::Reply;
use crate::store::StoreError;
use crate::write::WriteError;
use http::StatusCode;

/// How an endpoint answers a failure.
#[derive(Debug, Clone, Copy)]
pub enum Envelope {
    Text,
    Json,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter missing or out of its domain (400).
    #[error("{0}")]
    Param(String),
    /// A graph parameter of `/render?format=png|svg` (400).
    #[error(transparent)]
    ImageOption(#[from] super::image::OptionError),
    /// An image that cannot be drawn as asked (400).
    #[error(transparent)]
    Graph(#[from] crate::server::graph::GraphError),
    #[error(transparent)]
    Time(#[from] TimeError),
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error(transparent)]
    Glob(#[from] GlobError),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Tags(#[from] TagExprError),
    /// A `filter` parameter that is no regex (400).
    #[error("{0}")]
    Filter(#[from] regex::Error),
    /// One bad path of `tagMultiSeries` fails the whole call with 500, as in graphite-web.
    #[error(transparent)]
    BatchPath(PathError),
    /// A write-only endpoint called without POST (405).
    #[error("This endpoint only accepts POST")]
    PostOnly,
    #[error("Endpoint not found")]
    NotFound,
    #[error("Function not found: {0}")]
    UnknownFunction(String),
    /// `/tags/delSeries` while `admin.enabled` is off: 503, as Prometheus' admin API answers
    /// (no right would let it through, so not 403).
    #[error("deleting series is disabled (admin.enabled = false)")]
    DeleteDisabled,
    /// Buffered points could not be written out before a delete (503).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Reading the series index or deleting failed (500).
    #[error(transparent)]
    Query(#[from] QueryError),
    /// Reading annotations for `/events` failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `query.max_answer_bytes` exceeded (413).
    #[error("The answer would take {bytes} bytes or more, more than {max} (query.max_answer_bytes): ask for fewer series or a shorter window, or set maxDataPoints")]
    TooLarge { bytes: usize, max: usize },
    /// `query.timeout_ms` passed (503).
    #[error("query timed out after {0} ms (query.timeout_ms)")]
    Timeout(u64),
    /// The request's task failed (500).
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn status(&self) -> StatusCode {
        match self {
            Error::Param(_)
            | Error::ImageOption(_)
            | Error::Graph(_)
            | Error::Time(_)
            | Error::Parse(_)
            | Error::Eval(_)
            | Error::Glob(_)
            | Error::Path(_)
            | Error::Tags(_)
            | Error::Filter(_) => StatusCode::BAD_REQUEST,
            Error::PostOnly => StatusCode::METHOD_NOT_ALLOWED,
            Error::NotFound | Error::UnknownFunction(_) => StatusCode::NOT_FOUND,
            Error::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::DeleteDisabled | Error::Write(_) | Error::Timeout(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Error::BatchPath(_) | Error::Query(_) | Error::Store(_) | Error::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    pub fn reply(&self, envelope: Envelope) -> Reply {
        let status = self.status();
        match envelope {
            Envelope::Json => json_error(status, &self.to_string()),
            Envelope::Text if status == StatusCode::BAD_REQUEST => {
                text_reply(status, &format!("Invalid parameters ({self})"))
            }
            Envelope::Text => text_reply(status, &self.to_string()),
        }
    }
}
