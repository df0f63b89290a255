//! 401 and 403 answers in the convention of the route's family (`server::routes`):
//! Prometheus' `{"status":"error",…}` on its `/api/v1/*` endpoints, graphite-web's on its own,
//! OpenTSDB's error JSON everywhere else.

use super::{Denied, Right};
use crate::server::http::{error_reply, json_reply, Reply};
use crate::server::routes::Family;
use http::{HeaderValue, StatusCode};

pub fn unauthorized(family: Family, path: &str, d: Denied) -> Reply {
    let msg = match d {
        Denied::Missing => "Authentication required: send HTTP Basic credentials or a bearer token",
        Denied::Invalid => "Authentication failed: unknown user, wrong password or unknown token",
    };
    let mut r = family_reply(family, path, StatusCode::UNAUTHORIZED, "unauthorized", msg);
    let h = r.headers_mut();
    h.append(
        http::header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"tsgate\""),
    );
    h.append(
        http::header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"tsgate\""),
    );
    r
}

pub fn forbidden(family: Family, path: &str, who: &str, need: Right) -> Reply {
    let right = need.as_str();
    family_reply(
        family,
        path,
        StatusCode::FORBIDDEN,
        "forbidden",
        &format!("{who:?} does not have the {right} right this request needs"),
    )
}

fn family_reply(family: Family, path: &str, status: StatusCode, kind: &str, msg: &str) -> Reply {
    match family {
        Family::Prometheus => json_reply(
            status,
            serde_json::json!({"status": "error", "errorType": kind, "error": msg}).to_string(),
        ),
        Family::GraphiteWeb => {
            let p = path.trim_end_matches('/');
            // graphite-web's tag and function endpoints answer errors in JSON, the rest in text.
            if p == "/tags"
                || p.starts_with("/tags/")
                || p == "/functions"
                || p.starts_with("/functions/")
            {
                crate::server::graphite_web::json_error(status, msg)
            } else {
                crate::server::graphite_web::text_reply(status, msg)
            }
        }
        Family::OpenTsdb | Family::Admin => error_reply(status, msg, ""),
        Family::Influx => {
            crate::server::influx::error(crate::server::influx::Api::of_path(path), status, msg)
        }
        Family::Otlp => crate::server::otlp::text(status, msg),
    }
}
