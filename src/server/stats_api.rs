//! OpenTSDB's `/api/stats` family and `GET /metrics`: the same counters in three shapes
//! (OpenTSDB JSON, telnet `stats` lines, Prometheus text).

use super::http::{error_reply, json_reply, Reply};
use super::AppState;
use http::StatusCode;
use serde_json::{json, Map, Value as Json};

pub fn route(state: &AppState, path: &str) -> Reply {
    match path {
        "/api/stats" => stats(state),
        "/api/stats/query" => json_reply(
            StatusCode::OK,
            crate::observe::queries::snapshot().to_string(),
        ),
        "/api/stats/jvm" => jvm(),
        "/api/stats/threads" => threads(),
        "/api/stats/region_clients" => region_clients(state),
        _ => error_reply(StatusCode::NOT_FOUND, "Endpoint not found", ""),
    }
}

/// `GET /metrics`: Prometheus text exposition.
pub fn metrics(state: &AppState) -> Reply {
    let live = live(state);
    let body = crate::observe::expose::render(crate::observe::metrics(), &live);
    http::Response::builder()
        .status(StatusCode::OK)
        .header("content-type", crate::observe::expose::CONTENT_TYPE)
        .body(body.into_bytes())
        .expect("valid response")
}

fn stats(state: &AppState) -> Reply {
    let now = tsgate_common::clock::now_ms() / 1000;
    let host = super::telnet::hostname();
    let rows: Vec<Json> = super::stats_snapshot(&state.resolver, &state.query)
        .into_iter()
        .map(|(m, v, tag)| {
            let mut tags = Map::new();
            tags.insert("host".into(), host.clone().into());
            if let Some((k, val)) = tag {
                tags.insert(k.into(), val.into());
            }
            json!({"metric": m, "timestamp": now, "value": v.to_string(), "tags": tags})
        })
        .collect();
    json_reply(StatusCode::OK, Json::Array(rows).to_string())
}

/// OpenTSDB reports the JVM here; tsgate has no JVM, so it reports the process under the
/// same top-level keys (`runtime`, `memory`, `os`).
fn jvm() -> Reply {
    let p = crate::observe::process::read();
    let start_ms = (p.start_time_seconds * 1000.0) as u64;
    let now = tsgate_common::clock::now_ms();
    let load = std::fs::read_to_string("/proc/loadavg").ok().and_then(|l| {
        l.split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
    });
    let cpus = tsgate_common::cores();
    let body = json!({
        "runtime": {"startTime": start_ms, "uptime": now.saturating_sub(start_ms), "vmName": "tsgate", "vmVendor": "tsgate", "vmVersion": env!("CARGO_PKG_VERSION")},
        "memory": {"residentBytes": p.resident_bytes, "virtualBytes": p.virtual_bytes},
        "os": {"systemLoadAverage": load, "availableProcessors": cpus, "openFileDescriptorCount": p.open_fds, "maxFileDescriptorCount": p.max_fds, "processCpuTime": p.cpu_seconds},
        "threads": {"count": p.threads},
    });
    json_reply(StatusCode::OK, body.to_string())
}

/// The process's OS threads: id, name and state (no stacks: those are a JVM feature).
fn threads() -> Reply {
    let list: Vec<Json> = crate::observe::process::threads()
        .into_iter()
        .map(|(id, name, state)| json!({"threadID": id, "name": name, "state": state}))
        .collect();
    json_reply(StatusCode::OK, Json::Array(list).to_string())
}

/// OpenTSDB lists its HBase region-server clients. tsgate reaches HBase through one Thrift
/// gateway, so with the HBase backend that gateway is the one "client"; the embedded store has none.
fn region_clients(state: &AppState) -> Reply {
    if state.config.storage.backend != "hbase" {
        return json_reply(StatusCode::OK, "[]".into());
    }
    let rpcs: u64 = state.query.store.counters().iter().map(|(_, n)| n).sum();
    let body =
        json!([{"endpoint": state.config.storage.hbase.thrift, "rpcsSent": rpcs, "dead": false}]);
    json_reply(StatusCode::OK, body.to_string())
}

/// The values `/metrics` reads at scrape time, from the node's parts.
pub fn live(state: &AppState) -> crate::observe::expose::Live {
    crate::observe::expose::Live {
        backend: state.config.storage.backend.clone(),
        uid_cache: state.resolver.uids().cache_len(),
        series_cache: state.resolver.len(),
        queued_batches: state.ingest.writer.queued(),
        store_rpcs: state.query.store.counters(),
        process: crate::observe::process::read(),
        store_refusal: state.query.store.refusing_writes(),
        body_bytes_in_flight: state.bodies.in_flight(),
    }
}
