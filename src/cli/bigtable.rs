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
        #[arg(long)]
        max_age_days: Option<u32>,
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
            print,
        } => {
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
