//! Queries running now and the last completed ones, for OpenTSDB's `/api/stats/query`.
//! A query endpoint's request takes one short lock when it starts and one when it ends;
//! ingest never touches this.

use parking_lot::Mutex;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Instant;

/// Completed queries kept (OpenTSDB keeps 256).
pub const KEEP: usize = 256;

struct Running {
    query: Json,
    started_ms: u64,
    started: Instant,
    remote: String,
}

#[derive(Default)]
struct Tracker {
    running: BTreeMap<u64, Running>,
    completed: VecDeque<Json>,
}

static TRACKER: LazyLock<Mutex<Tracker>> = LazyLock::new(Default::default);
static NEXT: AtomicU64 = AtomicU64::new(1);

use tsgate_common::clock::now_ms;

/// The query as the client sent it: a JSON body as JSON, otherwise the path and parameters.
pub fn describe(endpoint: &str, path: &str, query_string: &str, body: &[u8]) -> Json {
    if let Ok(j @ Json::Object(_)) = serde_json::from_slice::<Json>(body) {
        return json!({"endpoint": endpoint, "path": path, "body": j});
    }
    let mut params: Vec<(String, String)> = form_urlencoded::parse(query_string.as_bytes())
        .into_owned()
        .collect();
    // Form-encoded POST bodies (PromQL, graphite render) carry the parameters there.
    if !body.is_empty() && std::str::from_utf8(body).is_ok() {
        params.extend(form_urlencoded::parse(body).into_owned());
    }
    let params: Vec<Json> = params.into_iter().map(|(k, v)| json!([k, v])).collect();
    json!({"endpoint": endpoint, "path": path, "params": params})
}

/// A query started; pass the id to [`finish`].
pub fn start(query: Json, remote: String) -> u64 {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    TRACKER.lock().running.insert(
        id,
        Running {
            query,
            started_ms: now_ms(),
            started: Instant::now(),
            remote,
        },
    );
    id
}

/// A query ended with this HTTP status.
pub fn finish(id: u64, status: http::StatusCode) {
    let mut t = TRACKER.lock();
    let Some(r) = t.running.remove(&id) else {
        return;
    };
    let elapsed = r.started.elapsed();
    let mut entry = json!({
        "query": r.query,
        "remote": r.remote,
        "queryStartTimestamp": r.started_ms,
        "elapsed": elapsed.as_secs_f64() * 1000.0,
        "httpResponse": {"code": status.as_u16(), "reasonPhrase": status.canonical_reason().unwrap_or("")},
        "executed": 1,
    });
    if !status.is_success() {
        entry["exception"] = Json::String(format!("HTTP {}", status.as_u16()));
    }
    if t.completed.len() == KEEP {
        t.completed.pop_back();
    }
    t.completed.push_front(entry);
}

/// `{"running":[…],"completed":[…]}`, newest completed first.
pub fn snapshot() -> Json {
    let t = TRACKER.lock();
    let running: Vec<Json> = t
        .running
        .values()
        .map(|r| json!({"query": r.query, "remote": r.remote, "queryStartTimestamp": r.started_ms, "elapsed": r.started.elapsed().as_secs_f64() * 1000.0}))
        .collect();
    json!({"running": running, "completed": t.completed.iter().cloned().collect::<Vec<_>>()})
}
