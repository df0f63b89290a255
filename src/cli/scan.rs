//! `tsgate scan`: one line per cell, `<table> <row hex> <family>:<qualifier hex> <value hex>`.

use super::{hex_lower, Common};
use crate::schema::uid_table::UidKind;
use crate::store::Scan;
use clap::Args;
use std::io::Write;

#[derive(Args, Debug)]
pub struct ScanArgs {
    #[command(flatten)]
    pub common: Common,
    /// Table: data, uid, meta, tree (the configured names) or a table name. Default: data.
    #[arg(long, default_value = "data")]
    pub table: String,
    /// Only rows of this metric (data table).
    #[arg(long)]
    pub metric: Option<String>,
    /// Only rows from this time on (OpenTSDB time grammar; needs --metric).
    #[arg(long)]
    pub start: Option<String>,
    /// Only rows up to this time (needs --metric).
    #[arg(long)]
    pub end: Option<String>,
}

pub fn run(args: &ScanArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    let store = crate::app::open_existing_store(&cfg)?;
    let t = &cfg.storage.tables;
    let table = match args.table.as_str() {
        "data" => t.data.clone(),
        "uid" => t.uid.clone(),
        "meta" => t.meta.clone(),
        "tree" => t.tree.clone(),
        other => other.to_string(),
    };
    let layout = cfg.layout();
    let now = tsgate_common::clock::now_ms();
    let mut scans = vec![Scan::default()];
    if let Some(m) = &args.metric {
        let uids = crate::app::uid_core(&cfg, store.clone())?;
        let Some(mid) = uids.get_id(UidKind::Metric, m)? else {
            anyhow::bail!("No such name for 'metrics': '{m}'");
        };
        let parse = |s: &Option<String>, dflt: u64| -> anyhow::Result<u64> {
            Ok(match s {
                Some(s) => {
                    crate::query::time::parse_time(s, now).map_err(anyhow::Error::msg)? / 1000
                }
                None => dflt,
            })
        };
        let start = crate::schema::rowkey::base_time(parse(&args.start, 0)?);
        let end = parse(&args.end, u32::MAX as u64)?;
        let stop =
            (crate::schema::rowkey::base_time(end) as u64 + 3600).min(u32::MAX as u64) as u32;
        scans = layout
            .salt_prefixes()
            .into_iter()
            .map(|salt| Scan {
                start: layout.metric_start(&salt, &mid, start),
                stop: layout.metric_start(&salt, &mid, stop),
                ..Default::default()
            })
            .collect();
    }
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    for scan in scans {
        for row in store.scan(&table, &scan)? {
            let row = row?;
            for c in &row.cells {
                writeln!(
                    out,
                    "{table} {} {}:{} {}",
                    hex_lower(&row.key),
                    String::from_utf8_lossy(&c.family),
                    hex_lower(&c.qualifier),
                    hex_lower(&c.value)
                )?;
            }
        }
    }
    out.flush()?;
    Ok(0)
}
