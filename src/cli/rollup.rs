//! `tsgate rollup`: builds the rollup cells of data already stored (written before rollups were
//! turned on, imported, or from another writer), as the compactor builds them for each hour it
//! compacts: every configured interval and aggregator, recomputed from the raw points and
//! overwritten, so running it twice (or over hours the compactor already built) changes
//! nothing. Offline, on the data directory (the server must be stopped), like `fsck`.

use super::Common;
use crate::schema::compaction::merge_columns;
use crate::schema::uid_table::UidKind;
use crate::store::{Scan, SharedStore};
use crate::write::rollup::{RawRow, RollupBuild};
use clap::Args;
use tsgate_schema::rowkey::{base_time, ROW_SPAN};
use tsgate_schema::DATA_FAMILY;

#[derive(Args, Debug)]
pub struct RollupArgs {
    #[command(flatten)]
    pub common: Common,
    /// First hour to build (OpenTSDB time grammar: seconds, ms, `30d-ago`,
    /// `yyyy/MM/dd-HH:mm:ss`). Default: the beginning.
    #[arg(long)]
    pub start: Option<String>,
    /// End (its hour is built too). Default: now.
    #[arg(long)]
    pub end: Option<String>,
    /// Hide the progress bar (it is drawn only on a terminal anyway).
    #[arg(long)]
    pub quiet: bool,
}

/// What a backfill did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Backfill {
    pub metrics: u64,
    pub rows: u64,
    pub points: u64,
}

/// Raw rows handed to the builder at once: the coarse intervals (`1d`) of a series are
/// recomputed once per batch from its finer cells.
const BATCH_ROWS: usize = 2048;

pub fn run(args: &RollupArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    let Some(build) = crate::app::rollup_build(&cfg) else {
        anyhow::bail!(
            "no rollups to build: set [rollups] enabled = true (and build = true), with at least one interval tsgate builds"
        );
    };
    let now = tsgate_common::clock::now_ms();
    let time = |s: &Option<String>, dflt: u64| -> anyhow::Result<u64> {
        Ok(match s {
            Some(s) => crate::query::time::parse_time(s, now).map_err(anyhow::Error::msg)?,
            None => dflt,
        })
    };
    let (start_ms, end_ms) = (time(&args.start, 0)?, time(&args.end, now)?);
    if end_ms < start_ms {
        anyhow::bail!("--end is before --start");
    }
    let store = crate::app::open_existing_store(&cfg)?;
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(0)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} metrics {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let done = backfill(&store, &cfg, &build, start_ms / 1000, end_ms / 1000, &bar)?;
    bar.finish_and_clear();
    // Closed, not only flushed: every `1d` cell was recomputed from its day's `1h` cells once
    // per batch of rows, and its older versions (and the deletes of cells whose width changed)
    // would stay in the engine, stepped over by every read, until its own compaction reached
    // them; closing rewrites the tables into one sorted run (as a server's shutdown does).
    store.close()?;
    println!(
        "rollups built: metrics={} rows={} points={}",
        done.metrics, done.rows, done.points
    );
    Ok(0)
}

/// Builds the rollup cells of every raw row whose hour is in `[start_s, end_s]`, metric by
/// metric (one scan per metric and salt bucket over those hours).
pub fn backfill(
    store: &SharedStore,
    cfg: &crate::config::Config,
    build: &RollupBuild,
    start_s: u64,
    end_s: u64,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Backfill> {
    let layout = cfg.layout();
    let table = &cfg.storage.tables.data;
    let uids = crate::app::uid_core(cfg, store.clone())?;
    let metrics = uids.list(UidKind::Metric)?;
    bar.set_length(metrics.len() as u64);
    let first = base_time(start_s);
    let last = (base_time(end_s) as u64 + ROW_SPAN).min(u32::MAX as u64) as u32;
    let mut done = Backfill::default();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut points: Vec<Vec<tsgate_schema::RawPoint>> = Vec::new();
    let flush = |keys: &mut Vec<Vec<u8>>,
                 points: &mut Vec<Vec<tsgate_schema::RawPoint>>|
     -> anyhow::Result<()> {
        let rows: Vec<RawRow> = keys
            .iter()
            .zip(points.iter())
            .map(|(key, points)| RawRow { key, points })
            .collect();
        build.build(store, &rows)?;
        keys.clear();
        points.clear();
        Ok(())
    };
    for (_, metric) in &metrics {
        for salt in layout.salt_prefixes() {
            let scan = Scan {
                start: layout.metric_start(&salt, metric, first),
                stop: layout.metric_start(&salt, metric, last),
                families: vec![DATA_FAMILY.to_vec()],
                ..Default::default()
            };
            for row in store.scan(table, &scan)? {
                let row = row?;
                let cols = crate::store::columns(&row.cells);
                let merged = merge_columns(&cols).points;
                if merged.is_empty() {
                    continue;
                }
                done.rows += 1;
                done.points += merged.len() as u64;
                keys.push(row.key);
                points.push(merged);
                if keys.len() >= BATCH_ROWS {
                    flush(&mut keys, &mut points)?;
                    bar.set_message(format!("{} rows", done.rows));
                }
            }
        }
        flush(&mut keys, &mut points)?;
        done.metrics += 1;
        bar.inc(1);
    }
    Ok(done)
}
