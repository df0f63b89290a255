//! `tsgate hbase create-tables` (through Thrift, or `--print` the HBase shell script) and
//! `tsgate hbase test-double` (the in-process Thrift test double as a server, for development).

use super::Common;
use crate::store::hbase::tables::{create_tables_ttl, shell_script_ttl, Created};
use crate::store::hbase::HBaseStore;
use clap::{Subcommand, ValueEnum};
#[cfg(feature = "test-double")]
use tsgate_testkit::hbase_double::TestDouble;

#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum Compression {
    None,
    Gz,
    Lzo,
    Snappy,
    Lz4,
}

impl Compression {
    fn name(self) -> &'static str {
        match self {
            Compression::None => "NONE",
            Compression::Gz => "GZ",
            Compression::Lzo => "LZO",
            Compression::Snappy => "SNAPPY",
            Compression::Lz4 => "LZ4",
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum HBaseAction {
    /// Create tsdb, tsdb-uid, tsdb-meta and tsdb-tree (names from storage.tables) through the
    /// Thrift gateway; existing tables are left alone.
    CreateTables {
        /// Compression of every family.
        #[arg(long, value_enum, default_value = "NONE")]
        compression: Compression,
        /// Print the equivalent HBase shell script instead (`hbase shell script.txt`).
        #[arg(long)]
        print: bool,
        /// A TTL on the data table's family (HBase drops cells that long after they were
        /// written): a duration such as `90d`, or `retention` for `storage.retention`.
        #[arg(long)]
        ttl: Option<String>,
    },
    /// Serve the in-process HBase Thrift test double (tables kept under --data-dir) until
    /// SIGINT/SIGTERM. A development aid: it is not HBase. Built only with the `test-double`
    /// feature (`cargo build --release --features test-double`).
    #[cfg(feature = "test-double")]
    TestDouble {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9090")]
        listen: String,
        /// Create tsgate's tables at start.
        #[arg(long)]
        create_tables: bool,
    },
}

pub fn run(common: &Common, action: HBaseAction) -> anyhow::Result<i32> {
    let mut cfg = common.load()?;
    match action {
        HBaseAction::CreateTables {
            compression,
            print,
            ttl,
        } => {
            let ttl = match ttl.as_deref() {
                None => None,
                Some(t) => {
                    let text = if t == "retention" {
                        cfg.storage.retention.as_str()
                    } else {
                        t
                    };
                    let s = crate::config::parse_duration_s(text)
                        .map_err(|e| anyhow::anyhow!("--ttl: {e}"))?;
                    if s == 0 || s > i32::MAX as u64 {
                        anyhow::bail!("--ttl: {t:?} must be between 1s and 68 years (storage.retention = {:?})", cfg.storage.retention);
                    }
                    Some(s as u32)
                }
            };
            if print {
                print!(
                    "{}",
                    shell_script_ttl(&cfg.storage.tables, compression.name(), ttl)
                );
                return Ok(0);
            }
            cfg.storage.backend = "hbase".into();
            let store = HBaseStore::new(&cfg.storage.hbase, &cfg.storage.tables.specs());
            for c in create_tables_ttl(store.pool(), &cfg.storage.tables, compression.name(), ttl)?
            {
                match c {
                    Created::Created(t) => println!("created {t}"),
                    Created::Existed(t) => println!("exists {t}"),
                }
            }
            Ok(0)
        }
        #[cfg(feature = "test-double")]
        HBaseAction::TestDouble {
            listen,
            create_tables: create,
        } => {
            let dir = cfg.data_dir.join("hbase-double");
            let double = TestDouble::start(&dir, &listen)?;
            if create {
                cfg.storage.hbase.thrift = double.addr();
                let store = HBaseStore::new(&cfg.storage.hbase, &cfg.storage.tables.specs());
                create_tables_ttl(store.pool(), &cfg.storage.tables, "NONE", None)?;
            }
            println!(
                "HBase Thrift test double listening on {} (tables in {})",
                double.addr(),
                dir.display()
            );
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(crate::app::shutdown_signal());
            println!("served {} Thrift calls", double.calls());
            double.stop();
            Ok(0)
        }
    }
}
