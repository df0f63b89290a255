//! The double's tables: one embedded store per table under the double's directory, and a small
//! descriptor file per table so a restarted double finds its tables again.

use hbase_thrift::hbase::ColumnDescriptor;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tsgate_store::embedded::EmbeddedStore;
use tsgate_store::{StoreError, TableSpec};

pub struct Table {
    pub store: EmbeddedStore,
    /// family -> (max versions, compression)
    pub families: BTreeMap<Vec<u8>, (i32, String)>,
}

pub struct Catalog {
    dir: PathBuf,
    tables: RwLock<BTreeMap<String, Arc<Table>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("table {0} already exists")]
    Exists(String),
    #[error("invalid table definition: {0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn hex(s: &[u8]) -> String {
    s.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    tsgate_schema::parse_hex(s)
}

impl Catalog {
    pub fn open(dir: &Path) -> Result<Catalog, CatalogError> {
        std::fs::create_dir_all(dir)?;
        let mut tables = BTreeMap::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "families") {
                let name = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(unhex)
                    .and_then(|b| String::from_utf8(b).ok());
                let Some(name) = name else { continue };
                let mut families = BTreeMap::new();
                for line in std::fs::read_to_string(&path)?.lines() {
                    let parts: Vec<&str> = line.split(' ').collect();
                    if let [f, v, c] = parts.as_slice() {
                        let f = unhex(f).ok_or_else(|| {
                            CatalogError::Invalid(format!("{}: bad family", path.display()))
                        })?;
                        families.insert(f, (v.parse().unwrap_or(1), c.to_string()));
                    }
                }
                let table = Self::open_table(dir, &name, families)?;
                tables.insert(name, Arc::new(table));
            }
        }
        Ok(Catalog {
            dir: dir.to_path_buf(),
            tables: RwLock::new(tables),
        })
    }

    fn open_table(
        dir: &Path,
        name: &str,
        families: BTreeMap<Vec<u8>, (i32, String)>,
    ) -> Result<Table, CatalogError> {
        let spec = TableSpec {
            name: name.to_string(),
            families: families.keys().cloned().collect(),
        };
        let store = EmbeddedStore::open(&dir.join(hex(name.as_bytes())), &[spec])?;
        Ok(Table { store, families })
    }

    pub fn get(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.read().get(name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        self.tables.read().keys().cloned().collect()
    }

    /// Creates a table; family names may end in a colon, as Thrift clients send them.
    pub fn create(&self, name: &str, families: &[ColumnDescriptor]) -> Result<(), CatalogError> {
        if name.is_empty() || families.is_empty() {
            return Err(CatalogError::Invalid(
                "a table needs a name and at least one family".into(),
            ));
        }
        let mut fams = BTreeMap::new();
        for cd in families {
            let raw = cd.name.clone().unwrap_or_default();
            let fam = raw.strip_suffix(b":").unwrap_or(&raw).to_vec();
            if fam.is_empty() || fam.contains(&b':') {
                return Err(CatalogError::Invalid(format!(
                    "bad family name {:?}",
                    String::from_utf8_lossy(&raw)
                )));
            }
            fams.insert(
                fam,
                (
                    cd.max_versions.unwrap_or(3),
                    cd.compression.clone().unwrap_or_else(|| "NONE".into()),
                ),
            );
        }
        let mut tables = self.tables.write();
        if tables.contains_key(name) {
            return Err(CatalogError::Exists(name.to_string()));
        }
        let desc: String = fams
            .iter()
            .map(|(f, (v, c))| format!("{} {v} {c}\n", hex(f)))
            .collect();
        let table = Self::open_table(&self.dir, name, fams)?;
        std::fs::write(
            self.dir.join(format!("{}.families", hex(name.as_bytes()))),
            desc,
        )?;
        tables.insert(name.to_string(), Arc::new(table));
        Ok(())
    }
}
