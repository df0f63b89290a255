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
    let mut out = vec![
        (names.uid.clone(), vec![dflt("id"), dflt("name")]),
        (names.data.clone(), vec![one("t")]),
        (names.tree.clone(), vec![one("t")]),
        (names.meta.clone(), vec![dflt("name")]),
    ];
    // Rollup tables: one version, as OpenTSDB's rollup documentation creates them.
    out.extend(names.rollups.iter().map(|t| (t.clone(), vec![one("t")])));
    out
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The HBase shell script that creates the tables (`hbase shell ./script`).
pub fn shell_script(names: &TableNames, compression: &str) -> String {
    shell_script_ttl(names, compression, None)
}

/// As [`shell_script`], the data table's family with a TTL of `ttl_s` seconds (HBase counts it
/// from each cell's timestamp, which is when tsgate wrote it).
pub fn shell_script_ttl(names: &TableNames, compression: &str, ttl_s: Option<u32>) -> String {
    let mut out = format!("# OpenTSDB's tables for tsgate (compression {compression}); run with: hbase shell <this file>\n");
    for (table, families) in layout(names) {
        let fams: Vec<String> = families
            .iter()
            .map(|f| {
                let mut versions = f
                    .versions
                    .map(|v| format!(", VERSIONS => {v}"))
                    .unwrap_or_default();
                if let (Some(t), true) = (ttl_s, table == names.data) {
                    versions.push_str(&format!(", TTL => {t}"));
                }
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
    create_tables_ttl(pool, names, compression, None)
}

/// As [`create_tables`], the data table's family with a TTL of `ttl_s` seconds.
pub fn create_tables_ttl(
    pool: &Arc<Pool>,
    names: &TableNames,
    compression: &str,
    ttl_s: Option<u32>,
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
                time_to_live: Some(match ttl_s {
                    Some(t) if table == names.data => t.min(i32::MAX as u32) as i32,
                    _ => i32::MAX,
                }),
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
    fn rollup_tables_are_data_tables_without_ttl() {
        let names = TableNames {
            rollups: vec!["tsdb-rollup-1h".into()],
            ..Default::default()
        };
        let s = shell_script_ttl(&names, "NONE", Some(86_400));
        assert!(s.contains("create 'tsdb-rollup-1h',\n  {NAME => 't', VERSIONS => 1, COMPRESSION => 'NONE', BLOOMFILTER => 'ROW'}\n"), "{s}");
        assert!(
            s.contains("create 'tsdb',\n  {NAME => 't', VERSIONS => 1, TTL => 86400,"),
            "{s}"
        );
    }

    #[test]
    fn script_names_every_table_and_family() {
        let s = shell_script(&TableNames::default(), "SNAPPY");
        assert!(s.contains("create 'tsdb',\n  {NAME => 't', VERSIONS => 1, COMPRESSION => 'SNAPPY', BLOOMFILTER => 'ROW'}\n"), "{s}");
        assert!(s.contains("create 'tsdb-uid',\n  {NAME => 'id', COMPRESSION => 'SNAPPY', BLOOMFILTER => 'ROW'},\n  {NAME => 'name'"), "{s}");
        assert!(s.contains("create 'tsdb-tree'") && s.contains("create 'tsdb-meta'"));
        assert!(s.ends_with("exit\n"));
        let t = shell_script_ttl(&TableNames::default(), "NONE", Some(604_800));
        assert!(
            t.contains("create 'tsdb',\n  {NAME => 't', VERSIONS => 1, TTL => 604800,"),
            "{t}"
        );
        assert!(
            !t.contains("'tsdb-tree',\n  {NAME => 't', VERSIONS => 1, TTL"),
            "{t}"
        );
    }
}
