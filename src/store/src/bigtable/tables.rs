//! OpenTSDB's four tables on Bigtable: created through the admin API, or printed as the `cbt`
//! commands that create them. Every family keeps one version of a cell (OpenTSDB's
//! `VERSIONS => 1`; HBase's default for the others), and the data table's may also drop cells
//! older than a given age.

use super::error::BigtableError;
use super::proto::{gc_rule::Rule, Duration, GcRule, GcUnion};
use super::{BigtableConfig, BigtableStore};
use crate::TableNames;

/// The tables and their families; `data` marks the data table (whose family an age may bound).
fn layout(names: &TableNames) -> Vec<(String, Vec<&'static str>, bool)> {
    let mut out = vec![
        (names.uid.clone(), vec!["id", "name"], false),
        (names.data.clone(), vec!["t"], true),
        (names.tree.clone(), vec!["t"], false),
        (names.meta.clone(), vec!["name"], false),
    ];
    out.extend(names.rollups.iter().map(|t| (t.clone(), vec!["t"], false)));
    out
}

fn gc_rule(max_age_days: Option<u32>) -> GcRule {
    let one = GcRule {
        rule: Some(Rule::MaxNumVersions(1)),
    };
    match max_age_days {
        None => one,
        Some(days) => GcRule {
            rule: Some(Rule::Union(GcUnion {
                rules: vec![
                    GcRule {
                        rule: Some(Rule::MaxAge(Duration {
                            seconds: days as i64 * 86_400,
                            nanos: 0,
                        })),
                    },
                    one,
                ],
            })),
        },
    }
}

/// The `cbt` commands that create the tables (`sh` this).
pub fn cbt_script(cfg: &BigtableConfig, names: &TableNames, max_age_days: Option<u32>) -> String {
    let mut out = String::from(
        "# OpenTSDB's tables for tsgate on Cloud Bigtable; run with: sh <this file>\n",
    );
    for (table, families, data) in layout(names) {
        let policy = match (data, max_age_days) {
            (true, Some(d)) => format!("maxage={d}d||maxversions=1"),
            _ => "maxversions=1".to_string(),
        };
        let fams: Vec<String> = families.iter().map(|f| format!("{f}:{policy}")).collect();
        out.push_str(&format!(
            "cbt -project {} -instance {} createtable {} \"families={}\"\n",
            sh_quote(&cfg.project),
            sh_quote(&cfg.instance),
            sh_quote(&table),
            fams.join(",")
        ));
    }
    out
}

fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// What happened to each table.
#[derive(Debug, PartialEq, Eq)]
pub enum Created {
    Created(String),
    Existed(String),
}

/// Creates the tables that do not exist yet; existing ones are left alone.
pub fn create_tables(
    store: &BigtableStore,
    names: &TableNames,
    max_age_days: Option<u32>,
) -> Result<Vec<Created>, BigtableError> {
    let mut out = Vec::new();
    for (table, families, data) in layout(names) {
        let fams = families
            .iter()
            .map(|f| (f.to_string(), gc_rule(max_age_days.filter(|_| data))))
            .collect();
        if store.create_table(&table, fams)? {
            out.push(Created::Created(table));
        } else {
            out.push(Created::Existed(table));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollup_tables_keep_one_version_without_max_age() {
        let names = TableNames {
            rollups: vec!["tsdb-rollup-1d".into()],
            ..Default::default()
        };
        let s = cbt_script(&BigtableConfig::default(), &names, Some(30));
        assert!(
            s.contains("createtable tsdb-rollup-1d \"families=t:maxversions=1\"\n"),
            "{s}"
        );
    }

    #[test]
    fn script_names_every_table_and_family() {
        let cfg = BigtableConfig {
            project: "my-proj".into(),
            instance: "tsdb inst".into(),
            ..Default::default()
        };
        let s = cbt_script(&cfg, &TableNames::default(), None);
        assert!(s.contains("cbt -project my-proj -instance 'tsdb inst' createtable tsdb-uid \"families=id:maxversions=1,name:maxversions=1\"\n"), "{s}");
        assert!(
            s.contains("createtable tsdb \"families=t:maxversions=1\"\n"),
            "{s}"
        );
        assert!(s.contains("createtable tsdb-tree ") && s.contains("createtable tsdb-meta "));
        let s = cbt_script(&cfg, &TableNames::default(), Some(30));
        assert!(
            s.contains("createtable tsdb \"families=t:maxage=30d||maxversions=1\"\n"),
            "{s}"
        );
        assert!(
            s.contains("createtable tsdb-tree \"families=t:maxversions=1\"\n"),
            "{s}"
        );
    }
}
