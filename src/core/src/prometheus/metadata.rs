//! Metric metadata (type, help, unit) as remote write sends it, for `/api/v1/metadata`.
//! Kept in memory and in `data_dir/prometheus-metadata.json`, rewritten only when it changes.

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Meta {
    #[serde(rename = "type")]
    pub kind: String,
    pub help: String,
    pub unit: String,
}

pub struct MetadataStore {
    path: Option<PathBuf>,
    map: RwLock<BTreeMap<String, Meta>>,
}

impl MetadataStore {
    /// Loads what an earlier run saved (a missing or unreadable file is an empty store).
    pub fn open(path: Option<PathBuf>) -> MetadataStore {
        let map = path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        MetadataStore {
            path,
            map: RwLock::new(map),
        }
    }

    /// Records metadata; returns whether anything changed. Blocking file I/O when it did.
    pub fn update(&self, items: Vec<(String, Meta)>) -> std::io::Result<bool> {
        let mut changed = false;
        {
            let mut m = self.map.write();
            for (name, meta) in items {
                if m.get(&name) != Some(&meta) {
                    m.insert(name, meta);
                    changed = true;
                }
            }
        }
        if changed {
            if let Some(p) = &self.path {
                let body = serde_json::to_vec(&*self.map.read()).map_err(std::io::Error::other)?;
                let tmp = p.with_extension("tmp");
                std::fs::write(&tmp, body)?;
                std::fs::rename(&tmp, p)?;
            }
        }
        Ok(changed)
    }

    pub fn snapshot(&self) -> BTreeMap<String, Meta> {
        self.map.read().clone()
    }
}
