//! The `tsgate` command line: `serve`, `scan`, `uid`, `import`, `export`, `snapshot`, `fsck`,
//! `rollup`, `hbase`, `auth`.

pub mod auth;
pub mod bigtable;
pub mod export;
pub mod fsck;
pub mod hbase;
pub mod import;
pub mod query;
pub mod rollup;
pub mod scan;
pub mod snapshot;
pub mod uid;

use crate::config::Config;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "tsgate",
    version,
    about = "Time-series gateway and database on OpenTSDB's HBase schema"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command shares: where the config and the data are.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// TOML config file (every key has a default; flags override it).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Data directory (store and write-ahead log). Default ./data
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// Log level: error, warn, info, debug, trace.
    #[arg(long, global = true, default_value = "info")]
    pub log_level: String,
    /// Log format: text or json, one object per line (log.format).
    #[arg(long, global = true)]
    pub log_format: Option<String>,
    /// Storage backend: embedded, hbase or bigtable (storage.backend).
    #[arg(long, global = true)]
    pub backend: Option<String>,
    /// HBase Thrift gateway host:port (storage.hbase.thrift); implies --backend hbase.
    #[arg(long, global = true)]
    pub hbase_thrift: Option<String>,
    /// Cloud Bigtable project (storage.bigtable.project); implies --backend bigtable.
    #[arg(long, global = true)]
    pub bigtable_project: Option<String>,
    /// Cloud Bigtable instance (storage.bigtable.instance); implies --backend bigtable.
    #[arg(long, global = true)]
    pub bigtable_instance: Option<String>,
}

impl Common {
    pub fn load(&self) -> anyhow::Result<Config> {
        let mut cfg = match &self.config {
            Some(p) => Config::load(p)?,
            None => Config::default(),
        };
        if let Some(d) = &self.data_dir {
            cfg.data_dir = d.clone();
        }
        if let Some(t) = &self.hbase_thrift {
            cfg.storage.hbase.thrift = t.clone();
            cfg.storage.backend = "hbase".into();
        }
        if let Some(p) = &self.bigtable_project {
            cfg.storage.bigtable.project = p.clone();
            cfg.storage.backend = "bigtable".into();
        }
        if let Some(i) = &self.bigtable_instance {
            cfg.storage.bigtable.instance = i.clone();
            cfg.storage.backend = "bigtable".into();
        }
        if let Some(b) = &self.backend {
            cfg.storage.backend = b.clone();
        }
        cfg.validate()?;
        cfg.resolve_rollups()?;
        Ok(cfg)
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the server (OpenTSDB telnet + HTTP on --listen).
    Serve {
        #[command(flatten)]
        common: Common,
        /// OpenTSDB telnet and HTTP address. Default 0.0.0.0:4242
        #[arg(long)]
        listen: Option<String>,
        /// Graphite plaintext address, TCP and UDP ("" = off). Default 0.0.0.0:2003
        #[arg(long)]
        graphite_listen: Option<String>,
        /// Graphite pickle address ("" = off). Default 0.0.0.0:2004
        #[arg(long)]
        pickle_listen: Option<String>,
    },
    /// Print the cells of a table (server must be stopped): `<table> <row> <family>:<qualifier> <value>`.
    Scan(scan::ScanArgs),
    /// Look up, assign and rename UIDs (server must be stopped).
    Uid {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        action: uid::UidAction,
    },
    /// Import data: OpenTSDB import files, VictoriaMetrics JSON lines, whisper files, or a
    /// Prometheus server through remote read (`--from`).
    Import(import::ImportArgs),
    /// Export series as VictoriaMetrics JSON lines or OpenTSDB import lines (server stopped).
    Export(export::ExportArgs),
    /// Copy the embedded store into a new data directory (server stopped; a running server
    /// takes one with POST /api/v1/admin/tsdb/snapshot).
    Snapshot(snapshot::SnapshotArgs),
    /// Check the tables for bad or duplicate cells; repair with --fix.
    Fsck(fsck::FsckArgs),
    /// Run a query (`m=` syntax) against the data directory (server must be stopped).
    Query(query::QueryArgs),
    /// Build the rollup cells of data already stored (`[rollups]`; server must be stopped).
    Rollup(rollup::RollupArgs),
    /// HBase: create OpenTSDB's tables, or run the Thrift test double.
    Hbase {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        action: hbase::HBaseAction,
    },
    /// Cloud Bigtable: create OpenTSDB's tables (or print the `cbt` commands).
    Bigtable {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        action: bigtable::BigtableAction,
    },
    /// Secrets for `[auth]`: password hashes and bearer tokens.
    Auth {
        #[command(subcommand)]
        action: auth::AuthAction,
    },
}

/// Logging as `--log-level` and `--log-format` (or the config's `log.format`) ask.
fn init_logging(common: &Common) -> anyhow::Result<()> {
    let format = match &common.log_format {
        Some(f) => f.clone(),
        // The config is loaded again (and reported) by the command itself.
        None => common
            .config
            .as_ref()
            .and_then(|p| Config::load(p).ok())
            .map(|c| c.log.format)
            .unwrap_or_else(|| "text".into()),
    };
    crate::observe::logging::init(&common.log_level, format.parse()?);
    Ok(())
}

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Serve {
            common,
            listen,
            graphite_listen,
            pickle_listen,
        } => {
            init_logging(&common)?;
            let mut cfg = common.load()?;
            if let Some(l) = listen {
                cfg.server.listen = l;
            }
            if let Some(g) = graphite_listen {
                cfg.server.graphite_listen = g;
            }
            if let Some(p) = pickle_listen {
                cfg.server.pickle_listen = p;
            }
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(crate::app::serve(cfg))?;
            Ok(0)
        }
        Command::Scan(args) => {
            init_logging(&args.common)?;
            scan::run(&args)
        }
        Command::Uid { common, action } => {
            init_logging(&common)?;
            uid::run(&common, action)
        }
        Command::Import(args) => {
            init_logging(&args.common)?;
            import::run(&args)
        }
        Command::Export(args) => {
            init_logging(&args.common)?;
            export::run(&args)
        }
        Command::Snapshot(args) => {
            init_logging(&args.common)?;
            snapshot::run(&args)
        }
        Command::Fsck(args) => {
            init_logging(&args.common)?;
            fsck::run(&args)
        }
        Command::Query(args) => {
            init_logging(&args.common)?;
            query::run(&args)
        }
        Command::Rollup(args) => {
            init_logging(&args.common)?;
            rollup::run(&args)
        }
        Command::Hbase { common, action } => {
            init_logging(&common)?;
            hbase::run(&common, action)
        }
        Command::Bigtable { common, action } => {
            init_logging(&common)?;
            bigtable::run(&common, action)
        }
        Command::Auth { action } => auth::run(action),
    }
}

/// An error and its causes on one line, each said once: many of our errors already quote their
/// source in their own text (`cannot listen on A: Address already in use`), which `{:#}` would
/// then repeat.
pub fn error_report(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Lowercase hex, as `tsgate scan` prints cells.
pub fn hex_lower(b: &[u8]) -> String {
    crate::schema::hex_upper(b).to_ascii_lowercase()
}
