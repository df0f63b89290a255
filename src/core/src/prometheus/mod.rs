//! Prometheus on top of the OpenTSDB model: label sets ↔ metric + tags (reversible escaping),
//! remote-write normalisation, and the metadata Prometheus sends alongside samples.
//! Protocol bytes live in `protocols/prometheus`; HTTP handlers in `server::prometheus`.

pub mod labels;
pub mod metadata;
pub mod write;

/// What the Prometheus endpoints keep between requests.
pub struct PromState {
    pub metadata: metadata::MetadataStore,
}

impl PromState {
    pub fn open(data_dir: &std::path::Path) -> PromState {
        PromState {
            metadata: metadata::MetadataStore::open(Some(
                data_dir.join("prometheus-metadata.json"),
            )),
        }
    }
}
