//! tsgate's core: what every protocol and query API shares, between the store and the APIs.
//!
//! Inside, the modules point one way too (checked by `.ci/layers.py`): `config` (plain data) →
//! `observe` (the node's metrics) → `uid` (names ↔ UIDs) → `series` (series keys and their
//! cache) → `meta` (UID/TS meta, annotations, OpenTSDB trees) → `write` (WAL, buffers, flush,
//! compaction) → `ingest` (the one entry every protocol adapter hands points to) →
//! `prometheus` (labels ↔ tags, remote-write batches) → `graphite` (name rules).

pub mod config;
pub mod graphite;
pub mod ingest;
pub mod lifecycle;
pub mod meta;
pub mod observe;
pub mod prometheus;
pub mod series;
pub mod uid;
pub mod uid_journal;
pub mod write;
