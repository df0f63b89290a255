//! `tsgate import FILE…`: OpenTSDB's import format (`metric ts value tag=v …` per line, plain
//! or gzip), through the same durable write path as the server. The server must be stopped.

use super::Common;
use clap::Args;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use tsgate_opentsdb::telnet::parse_import_line;

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    pub common: Common,
    /// Files to import; names ending in .gz are decompressed.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Hide the progress bar.
    #[arg(long)]
    pub quiet: bool,
}

const BATCH: usize = 20_000;

pub fn run(args: &ImportArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    // Every file readable before the store is opened (or made) for them.
    for f in &args.files {
        std::fs::File::open(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let total: u64 = args
        .files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(total)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (ok, bad) = rt.block_on(async {
        let node = crate::app::Node::start(cfg)?;
        let mut ok = 0u64;
        let mut bad = 0u64;
        for f in &args.files {
            let file =
                std::fs::File::open(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
            let counted = bar.wrap_read(file);
            let reader: Box<dyn Read> = if f.extension().is_some_and(|e| e == "gz") {
                Box::new(flate2::read::MultiGzDecoder::new(counted))
            } else {
                Box::new(counted)
            };
            let mut lines = BufReader::with_capacity(1 << 20, reader).lines();
            let mut lineno = 0u64;
            loop {
                let mut chunk = Vec::with_capacity(BATCH);
                for l in lines.by_ref().take(BATCH) {
                    chunk.push(l?);
                }
                if chunk.is_empty() {
                    break;
                }
                let mut points = Vec::with_capacity(chunk.len());
                for l in &chunk {
                    lineno += 1;
                    if l.trim().is_empty() {
                        continue;
                    }
                    match parse_import_line(l, &node.state.opentsdb.limits) {
                        Ok(p) => points.push(p),
                        Err(e) => {
                            bad += 1;
                            bar.suspend(|| eprintln!("{}:{lineno}: {e}", f.display()));
                        }
                    }
                }
                // Not counted: the metrics of an offline command are never served.
                let written = node
                    .state
                    .ingest
                    .write(crate::ingest::Batch {
                        points: crate::ingest::Points::Decoded(&points),
                        counted: None,
                        ack: crate::ingest::Ack::Durable,
                    })
                    .await;
                let outcomes = written.outcomes;
                written.durable?;
                for o in outcomes {
                    match o {
                        Ok(()) => ok += 1,
                        Err(e) => {
                            bad += 1;
                            bar.suspend(|| eprintln!("{}: {e}", f.display()));
                        }
                    }
                }
                bar.set_message(format!("{ok} points"));
            }
        }
        let crate::app::Node {
            state,
            threads,
            wal_lock,
        } = node;
        state.ingest.writer.close();
        drop(state);
        tokio::task::spawn_blocking(move || threads.join()).await?;
        drop(wal_lock);
        anyhow::Ok((ok, bad))
    })?;
    bar.finish_and_clear();
    println!("imported {ok} points, {bad} rejected");
    Ok(if bad > 0 { 1 } else { 0 })
}
