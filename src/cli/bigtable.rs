//! `tsgate bigtable create-tables`: OpenTSDB's tables in a Cloud Bigtable instance (or the
//! emulator's), through the admin API, or `--print` the `cbt` commands that make them.

use super::Common;
use crate::store::bigtable::tables::{cbt_script, create_tables, Created};
use crate::store::bigtable::BigtableStore;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum BigtableAction {
    /// Create tsdb, tsdb-uid, tsdb-meta and tsdb-tree (names from storage.tables) in
    /// storage.bigtable's instance, each family keeping one version; existing tables are left
    /// alone.
    CreateTables {
        /// Also drop data cells older than this many days (a GC rule on tsdb's family).
        #[arg(long, conflicts_with = "ttl")]
        max_age_days: Option<u32>,
        /// The same as a duration (`90d`; whole days, rounded up), or `retention` for
        /// `storage.retention`, as `hbase create-tables --ttl` takes it.
        #[arg(long)]
        ttl: Option<String>,
        /// Print the equivalent `cbt` commands instead.
        #[arg(long)]
        print: bool,
    },
}

pub fn run(common: &Common, action: BigtableAction) -> anyhow::Result<i32> {
    let mut cfg = common.load()?;
    match action {
        BigtableAction::CreateTables {
            max_age_days,
            ttl,
            print,
        } => {
            let max_age_days = match ttl.as_deref() {
                None => max_age_days,
                Some(t) => Some(ttl_days(t, &cfg.storage.retention)?),
            };
            let bt = &cfg.storage.bigtable;
            if bt.project.is_empty() || bt.instance.is_empty() {
                anyhow::bail!(
                    "storage.bigtable.project and storage.bigtable.instance must be set (in --config)"
                );
            }
            if print {
                print!("{}", cbt_script(bt, &cfg.storage.tables, max_age_days));
                return Ok(0);
            }
            cfg.storage.backend = "bigtable".into();
            let store = BigtableStore::new(&cfg.storage.bigtable)?;
            for c in create_tables(&store, &cfg.storage.tables, max_age_days)? {
                match c {
                    Created::Created(t) => println!("created {t}"),
                    Created::Existed(t) => println!("exists {t}"),
                }
            }
            Ok(0)
        }
    }
}

/// `--ttl` in whole days (Bigtable's GC rule is kept in days here), rounded up so that nothing
/// retention keeps is collected early.
fn ttl_days(t: &str, retention: &str) -> anyhow::Result<u32> {
    let text = if t == "retention" { retention } else { t };
    let s = crate::config::parse_duration_s(text).map_err(|e| anyhow::anyhow!("--ttl: {e}"))?;
    if s == 0 {
        anyhow::bail!(
            "--ttl: {t:?} keeps data forever (storage.retention = {retention:?}): leave it out"
        );
    }
    u32::try_from(s.div_ceil(86_400)).map_err(|_| anyhow::anyhow!("--ttl: {t:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::ttl_days;

    #[test]
    fn ttl_in_whole_days_rounded_up() {
        assert_eq!(ttl_days("90d", "").unwrap(), 90);
        assert_eq!(ttl_days("36h", "").unwrap(), 2);
        assert_eq!(ttl_days("retention", "30d").unwrap(), 30);
        assert!(ttl_days("retention", "").is_err());
        assert!(ttl_days("soon", "").is_err());
    }
}
