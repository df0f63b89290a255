//! OpenTSDB's four tables on HBase: created through Thrift `createTable`, or printed as the
//! HBase shell script that creates them (what OpenTSDB's create_table.sh does).

use super::error::HBaseError;
use super::pool::{Method, Pool};
use crate::TableNames;
use hbase_thrift::hbase::{ColumnDescriptor, THbaseSyncClient};
use std::sync::Arc;

/// HBase's compression codecs offered by `tsgate hbase create-tables --compression`.
pub const COMPRESSIONS: [&str; 5] = ["NONE", "GZ", "LZO", "SNAPPY", "LZ4"];

/// One family: its name and how many versions it keeps (`None` = HBase's default).
struct Family {
    name: &'static str,
    versions: Option<i32>,
}

/// The tables with their families: data and tree keep one version of a cell (OpenTSDB's
/// `VERSIONS => 1`), the UID and meta families HBase's default.
fn layout(names: &TableNames) -> Vec<(String, Vec<Family>)> {
    let one = |name| Family {
        name,
        versions: Some(1),
    };
    let dflt = |name| Family {
        name,
        versions: None,
    };
    vec![
        (names.uid.clone(), vec![dflt("id"), dflt("name")]),
        (names.data.clone(), vec![one("t")]),
        (names.tree.clone(), vec![one("t")]),
        (names.meta.clone(), vec![dflt("name")]),
    ]
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The HBase shell script that creates the tables (`hbase shell ./script`).
pub fn shell_script(names: &TableNames, compression: &str) -> String {
    let mut out = format!("# OpenTSDB's tables for tsgate (compression {compression}); run with: hbase shell <this file>\n");
    for (table, families) in layout(names) {
        let fams: Vec<String> = families
            .iter()
            .map(|f| {
                let versions = f
                    .versions
                    .map(|v| format!(", VERSIONS => {v}"))
                    .unwrap_or_default();
                format!(
                    "{{NAME => {}{versions}, COMPRESSION => {}, BLOOMFILTER => 'ROW'}}",
                    quote(f.name),
                    quote(compression)
                )
            })
            .collect();
        out.push_str(&format!(
            "create {},\n  {}\n\n",
            quote(&table),
            fams.join(",\n  ")
        ));
    }
    out.push_str("exit\n");
    out
}

/// What happened to each table.
#[derive(Debug, PartialEq, Eq)]
pub enum Created {
    Created(String),
    Existed(String),
}

/// Creates the tables that do not exist yet; existing ones are left alone.
pub fn create_tables(
    pool: &Arc<Pool>,
    names: &TableNames,
    compression: &str,
) -> Result<Vec<Created>, HBaseError> {
    let mut out = Vec::new();
    for (table, families) in layout(names) {
        let descriptors: Vec<ColumnDescriptor> = families
            .iter()
            .map(|f| ColumnDescriptor {
                name: Some(format!("{}:", f.name).into_bytes()),
                // Thrift's own default is 3; HBase's (what the shell gives) is 1.
                max_versions: Some(f.versions.unwrap_or(1)),
                compression: Some(compression.to_string()),
                in_memory: Some(false),
                bloom_filter_type: Some("ROW".into()),
                bloom_filter_vector_size: Some(0),
                bloom_filter_nb_hashes: Some(0),
                block_cache_enabled: Some(true),
                time_to_live: Some(i32::MAX),
            })
            .collect();
        match pool.call(Method::CreateTable, |c| {
            c.create_table(table.clone().into_bytes(), descriptors.clone())
        }) {
            Ok(()) => out.push(Created::Created(table)),
            Err(HBaseError::AlreadyExists(_)) => out.push(Created::Existed(table)),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_names_every_table_and_family() {
        let s = shell_script(&TableNames::default(), "SNAPPY");
        assert!(s.contains("create 'tsdb',\n  {NAME => 't', VERSIONS => 1, COMPRESSION => 'SNAPPY', BLOOMFILTER => 'ROW'}\n"), "{s}");
        assert!(s.contains("create 'tsdb-uid',\n  {NAME => 'id', COMPRESSION => 'SNAPPY', BLOOMFILTER => 'ROW'},\n  {NAME => 'name'"), "{s}");
        assert!(s.contains("create 'tsdb-tree'") && s.contains("create 'tsdb-meta'"));
        assert!(s.ends_with("exit\n"));
    }
}
