//! `tsgate query`: the query engine from the command line (`m=` syntax), printing one line per
//! point (`metric timestamp value tag=v …`) or OpenTSDB's JSON. The server must be stopped.

use super::Common;
use crate::query::aggregate::Num;
use crate::query::spec::{Flags, Query};
use clap::Args;
use std::io::Write;
use tsgate_common::numfmt::java_double;

#[derive(Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    pub common: Common,
    /// Start time (OpenTSDB grammar: seconds, ms, `1h-ago`, `yyyy/MM/dd-HH:mm:ss`).
    #[arg(long)]
    pub start: String,
    /// End time; default now.
    #[arg(long)]
    pub end: Option<String>,
    /// Print OpenTSDB's `/api/query` JSON instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Millisecond timestamps in the output.
    #[arg(long)]
    pub ms: bool,
    /// Sub-queries in `/api/query`'s `m=` syntax, e.g. `sum:1m-avg:sys.cpu.user{host=*}`.
    #[arg(required = true)]
    pub queries: Vec<String>,
}

pub fn run(args: &QueryArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    let now = tsgate_common::clock::now_ms();
    let start_ms = crate::query::time::parse_time(&args.start, now).map_err(anyhow::Error::msg)?;
    let end_ms = match &args.end {
        Some(e) => crate::query::time::parse_time(e, now).map_err(anyhow::Error::msg)?,
        None => now,
    };
    let mut queries = Vec::new();
    for (i, m) in args.queries.iter().enumerate() {
        queries.push(crate::query::parse::parse_m(m, i).map_err(anyhow::Error::msg)?);
    }
    let q = Query {
        start_ms,
        end_ms,
        queries,
        flags: Flags {
            ms_resolution: args.ms,
            ..Default::default()
        },
        timezone: None,
        use_calendar: false,
    };
    let store = crate::app::open_existing_store(&cfg)?;
    let engine = crate::query::QueryEngine {
        store: store.clone(),
        uids: crate::app::uid_core(&cfg, store)?,
        layout: cfg.layout(),
        table: cfg.storage.tables.data.clone(),
        allow_delete: false,
        limits: Default::default(),
        rows: None,
        rollups: cfg.rollups.compiled.clone(),
    };
    let started = std::time::Instant::now();
    let (series, summary) = engine.run(&q)?;
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    if args.json {
        let extras = crate::query::render::Extras::default();
        writeln!(
            out,
            "{}",
            crate::query::render::render(
                &q,
                &series,
                &summary,
                &extras,
                started.elapsed().as_secs_f64() * 1000.0
            )
        )?;
    } else {
        for r in &series {
            let tags: String = r.tags.iter().map(|(k, v)| format!(" {k}={v}")).collect();
            for (t, v) in &r.dps {
                let ts = if args.ms { *t } else { t / 1000 };
                let v = match v {
                    Num::Int(i) => i.to_string(),
                    Num::Float(f) => java_double(*f),
                };
                writeln!(out, "{} {ts} {v}{tags}", r.metric)?;
            }
        }
    }
    out.flush()?;
    Ok(0)
}
