//! The web UI at `/`: one HTML page and its scripts, compiled into the binary (nothing is
//! fetched from elsewhere at run time). The page itself only calls the query and status APIs
//! the route table already serves, with the browser's credentials, so it adds no data path.

use super::http::Reply;
use http::{HeaderMap, Method, Response, StatusCode};

/// One embedded file: its path under `/ui/`, its media type and its bytes.
struct Asset {
    path: &'static str,
    mime: &'static str,
    body: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// Every file under `/ui/`. The front end is plain ES modules, so what is here is what runs.
static ASSETS: &[Asset] = &[
    Asset {
        path: "app.js",
        mime: JS,
        body: include_bytes!("assets/app.js"),
    },
    Asset {
        path: "query.js",
        mime: JS,
        body: include_bytes!("assets/query.js"),
    },
    Asset {
        path: "explore.js",
        mime: JS,
        body: include_bytes!("assets/explore.js"),
    },
    Asset {
        path: "status.js",
        mime: JS,
        body: include_bytes!("assets/status.js"),
    },
    Asset {
        path: "util.js",
        mime: JS,
        body: include_bytes!("assets/util.js"),
    },
    Asset {
        path: "style.css",
        mime: CSS,
        body: include_bytes!("assets/style.css"),
    },
    Asset {
        path: "vendor/uPlot.iife.min.js",
        mime: JS,
        body: include_bytes!("assets/vendor/uPlot.iife.min.js"),
    },
    Asset {
        path: "vendor/uPlot.min.css",
        mime: CSS,
        body: include_bytes!("assets/vendor/uPlot.min.css"),
    },
    Asset {
        path: "vendor/uPlot.LICENSE",
        mime: "text/plain; charset=utf-8",
        body: include_bytes!("assets/vendor/uPlot.LICENSE"),
    },
];

const INDEX: &[u8] = include_bytes!("assets/index.html");

/// Whether the client asked for JSON rather than a page: `Accept` names `application/json`
/// and not `text/html` (a browser's navigation always names `text/html`).
fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .to_ascii_lowercase();
    accept.contains("application/json") && !accept.contains("text/html")
}

/// `/`: the UI's page for a browser; the server's name and version (as before the UI) for a
/// client that asks for JSON or uses a method other than GET or HEAD.
pub fn index(method: &Method, headers: &HeaderMap) -> Reply {
    if wants_json(headers) || !(method == Method::GET || method == Method::HEAD) {
        return super::api::root();
    }
    file("text/html; charset=utf-8", INDEX)
}

/// `/ui/<path>`: an embedded file, or a 404.
pub fn asset(path: &str) -> Reply {
    let rel = path.trim_start_matches("/ui/");
    match ASSETS.iter().find(|a| a.path == rel) {
        Some(a) => file(a.mime, a.body),
        None => super::http::error_reply(StatusCode::NOT_FOUND, "Endpoint not found", ""),
    }
}

fn file(mime: &'static str, body: &'static [u8]) -> Reply {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", mime)
        // Revalidated on each load: a new binary's UI is never mixed with an old cached script.
        .header("cache-control", "no-cache")
        .header("x-content-type-options", "nosniff")
        .body(body.to_vec())
        .expect("valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, v.parse().unwrap());
        h
    }

    #[test]
    fn browsers_get_the_page_json_clients_the_version() {
        let html = index(
            &Method::GET,
            &accept("text/html,application/xhtml+xml,*/*;q=0.8"),
        );
        assert!(html.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        assert!(String::from_utf8_lossy(html.body()).contains("ui/app.js"));
        // curl's default `*/*` is not a request for JSON: the page.
        let any = index(&Method::GET, &HeaderMap::new());
        assert!(any.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        for r in [
            index(&Method::GET, &accept("application/json")),
            index(&Method::POST, &HeaderMap::new()),
        ] {
            let v: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
            assert_eq!(v["name"], "tsgate");
        }
    }

    #[test]
    fn every_asset_the_page_names_is_served() {
        let page = String::from_utf8_lossy(INDEX);
        let mut named = 0;
        for a in ASSETS {
            let r = asset(&format!("/ui/{}", a.path));
            assert_eq!(r.status(), StatusCode::OK, "{}", a.path);
            assert!(!r.body().is_empty());
            if page.contains(&format!("ui/{}", a.path)) {
                named += 1;
            }
        }
        // The page loads the app, its stylesheet and uPlot's script and stylesheet.
        assert!(named >= 4, "{named}");
        // Every module the app imports (`… from './x.js';`, the only form the pages use) is
        // embedded.
        let mut imports = 0;
        for a in ASSETS.iter().filter(|a| !a.path.starts_with("vendor/")) {
            let text = String::from_utf8_lossy(a.body);
            for rest in text.split("from './").skip(1) {
                let m = rest.split('\'').next().unwrap();
                assert!(ASSETS.iter().any(|x| x.path == m), "{m} in {}", a.path);
                imports += 1;
            }
        }
        assert!(imports >= 4, "{imports}");
        assert_eq!(asset("/ui/nope.js").status(), StatusCode::NOT_FOUND);
        assert_eq!(asset("/ui/../mod.rs").status(), StatusCode::NOT_FOUND);
    }
}
