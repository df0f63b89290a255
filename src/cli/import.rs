//! `tsgate import`: data from elsewhere through the same durable write path as the server
//! (the server must be stopped; with HBase or Bigtable it may run). `--from` says what:
//! OpenTSDB import files (`metric ts value tag=v …` per line), VictoriaMetrics' JSON lines
//! (what `tsgate export` and `/api/v1/export` write), a tree of carbon's whisper files, or a
//! Prometheus server's remote-read API. Files of the first two are told apart by their first
//! line when `--from` is not given; `.gz` files are read as gzip. Re-running an import writes
//! the same cells again, which changes nothing, so an interrupted one is simply run again.

use super::Common;
use crate::migrate::write::{write_reporting, StoredImport, Tally};
use clap::{Args, ValueEnum};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use tsgate_opentsdb::telnet::parse_import_line;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum From {
    /// OpenTSDB's import format: `metric timestamp value tag=v …` per line.
    Opentsdb,
    /// VictoriaMetrics' JSON lines (`tsgate export`, `/api/v1/export`).
    Vm,
    /// A tree of carbon's whisper files (one directory argument).
    Whisper,
    /// A Prometheus server's remote-read API (`--url`).
    Prometheus,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    pub common: Common,
    /// What to read; without it each file's first line decides between opentsdb and vm.
    #[arg(long, value_enum)]
    pub from: Option<From>,
    /// Files to import (`.gz` decompressed), or the whisper tree's directory.
    pub files: Vec<PathBuf>,
    /// Prometheus' base URL, e.g. http://127.0.0.1:9090 (`--from prometheus`).
    #[arg(long)]
    pub url: Option<String>,
    /// Series selectors (`--from prometheus`; repeatable). Default: every series.
    #[arg(long = "match")]
    pub matches: Vec<String>,
    /// Start of the range to read (`--from prometheus`; OpenTSDB time grammar). Default 1d-ago.
    #[arg(long)]
    pub start: Option<String>,
    /// End of the range (`--from prometheus`). Default now.
    #[arg(long)]
    pub end: Option<String>,
    /// Hours per remote-read request (`--from prometheus`).
    #[arg(long, default_value_t = 2)]
    pub chunk_hours: u32,
    /// Hide the progress bar.
    #[arg(long)]
    pub quiet: bool,
}

const BATCH: usize = 20_000;

/// Points of JSON lines written per batch.
const VM_BATCH_POINTS: usize = 50_000;

pub fn run(args: &ImportArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    let from = args.from;
    match from {
        Some(From::Prometheus) => {
            if args.url.is_none() {
                anyhow::bail!("--from prometheus needs --url (e.g. http://127.0.0.1:9090)");
            }
        }
        Some(From::Whisper) => {
            let [dir] = args.files.as_slice() else {
                anyhow::bail!("--from whisper takes one directory (a carbon storage/whisper tree)");
            };
            if !dir.is_dir() && !dir.is_file() {
                anyhow::bail!("{}: no such directory", dir.display());
            }
        }
        _ => {
            if args.files.is_empty() {
                anyhow::bail!("no files to import");
            }
            // Every file readable before the store is opened (or made) for them.
            for f in &args.files {
                std::fs::File::open(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
            }
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(0)
    };
    let tally = rt.block_on(async {
        let node = crate::app::Node::start(cfg)?;
        let res = match from {
            Some(From::Whisper) => {
                let s = &node.state;
                crate::migrate::whisper::import_tree(
                    &s.ingest,
                    &s.graphite_web.engine.names,
                    &args.files[0],
                    &bar,
                )
                .await
            }
            Some(From::Prometheus) => {
                let opts = crate::migrate::remote_read::Options {
                    url: args.url.clone().unwrap_or_default(),
                    matches: args.matches.clone(),
                    start: args.start.clone(),
                    end: args.end.clone(),
                    chunk_hours: args.chunk_hours,
                };
                let s = &node.state;
                crate::migrate::remote_read::import(
                    &s.ingest,
                    s.prometheus.settings.max_tags,
                    &opts,
                    &bar,
                )
                .await
            }
            _ => import_files(&node, args, &bar).await,
        };
        let crate::app::Node {
            state,
            threads,
            wal_lock,
        } = node;
        state.ingest.writer.close();
        let store = state.query.store.clone();
        drop(state);
        tokio::task::spawn_blocking(move || {
            threads.join();
            // As a server does at shutdown: the store left in its compact form. The cells the
            // import rewrote (partial columns compacted, each closed hour's rollup cells and
            // its day's recomputed) would otherwise stay as versions and tombstones that every
            // read steps over until the engine's own compaction reached them (the larger part of
            // a rollup read's time: compat/bench/README.md, Rollups).
            if store.refusing_writes().is_none() {
                if let Err(e) = store.close() {
                    tracing::warn!(error = %e, "closing the store after the import failed (the next start recovers it)");
                }
            }
        })
        .await?;
        drop(wal_lock);
        res
    })?;
    bar.finish_and_clear();
    println!("imported {} points, {} rejected", tally.ok, tally.bad);
    Ok(if tally.bad > 0 { 1 } else { 0 })
}

/// Whether a file holds JSON lines: its first non-blank byte is `{`.
fn looks_like_json(f: &Path) -> anyhow::Result<bool> {
    let mut r = open(f, None)?;
    let mut buf = [0u8; 512];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(false);
        }
        if let Some(b) = buf[..n].iter().find(|b| !b.is_ascii_whitespace()) {
            return Ok(*b == b'{');
        }
    }
}

fn open(f: &Path, bar: Option<&indicatif::ProgressBar>) -> anyhow::Result<Box<dyn Read>> {
    let file = std::fs::File::open(f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
    let counted: Box<dyn Read> = match bar {
        Some(b) => Box::new(b.wrap_read(file)),
        None => Box::new(file),
    };
    Ok(if f.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(counted))
    } else {
        counted
    })
}

async fn import_files(
    node: &crate::app::Node,
    args: &ImportArgs,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Tally> {
    let total: u64 = args
        .files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    bar.set_length(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut t = Tally::default();
    for f in &args.files {
        let vm = match args.from {
            Some(From::Vm) => true,
            Some(_) => false,
            None => looks_like_json(f)?,
        };
        let reader = open(f, Some(bar))?;
        let lines = BufReader::with_capacity(1 << 20, reader).lines();
        if vm {
            import_vm_lines(node, f, lines, bar, &mut t).await?;
        } else {
            import_opentsdb_lines(node, f, lines, bar, &mut t).await?;
        }
    }
    Ok(t)
}

async fn import_opentsdb_lines(
    node: &crate::app::Node,
    f: &Path,
    mut lines: std::io::Lines<BufReader<Box<dyn Read>>>,
    bar: &indicatif::ProgressBar,
    t: &mut Tally,
) -> anyhow::Result<()> {
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
                    t.bad += 1;
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
        let (outcomes, res) = (written.outcomes, written.durable);
        res?;
        for o in outcomes {
            match o {
                Ok(()) => t.ok += 1,
                Err(e) => {
                    t.bad += 1;
                    bar.suspend(|| eprintln!("{}: {e}", f.display()));
                }
            }
        }
        bar.set_message(format!("{} points", t.ok));
    }
    Ok(())
}

async fn import_vm_lines(
    node: &crate::app::Node,
    f: &Path,
    lines: std::io::Lines<BufReader<Box<dyn Read>>>,
    bar: &indicatif::ProgressBar,
    t: &mut Tally,
) -> anyhow::Result<()> {
    let max_tags = node.state.prometheus.settings.max_tags;
    let mut batch: Vec<StoredImport> = Vec::new();
    let mut points = 0usize;
    let mut lines = lines.enumerate().peekable();
    while let Some((n, l)) = lines.next() {
        let l = l?;
        if !l.trim().is_empty() {
            match crate::migrate::vmjson::parse_line(&l)
                .and_then(|s| Ok(StoredImport::from_labels(&s.labels, s.points, max_tags)?))
            {
                Ok(s) => {
                    points += s.points.len();
                    batch.push(s);
                }
                Err(e) => {
                    t.bad += 1;
                    bar.suspend(|| eprintln!("{}:{}: {e}", f.display(), n + 1));
                }
            }
        }
        if points >= VM_BATCH_POINTS || (lines.peek().is_none() && !batch.is_empty()) {
            points = 0;
            write_reporting(&node.state.ingest, &std::mem::take(&mut batch), bar, t).await?;
        }
    }
    Ok(())
}
