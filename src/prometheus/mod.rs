//! Prometheus on top of the OpenTSDB model: label sets ↔ metric + tags (reversible escaping),
//! remote-write normalisation, and the metadata Prometheus sends alongside samples.
//! Protocol bytes live in `protocols/prometheus`; HTTP handlers in `server::prometheus`.

pub mod labels;
pub mod metadata;
pub mod write;
