//! `tsgate export`: every point of the series some selectors match, as VictoriaMetrics' JSON
//! lines (`--format vm`, the default; `/api/v1/export` writes the same) or OpenTSDB's import
//! format (`--format opentsdb`), read from the data directory (the server must be stopped: a
//! running server answers `GET /api/v1/export` instead). It only reads: pointed at a directory
//! with no store it says so rather than make one. `tsgate import` reads either format back.

use super::Common;
use crate::migrate::vmjson;
use clap::{Args, ValueEnum};
use std::io::Write;
use tsgate_schema::DataValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// VictoriaMetrics' JSON lines: labels as the Prometheus API shows them.
    Vm,
    /// OpenTSDB's import format: `metric timestamp value tag=v …`, names as stored.
    Opentsdb,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum, default_value = "vm")]
    pub format: Format,
    /// Series selector (Prometheus syntax; repeatable). Default: every series.
    #[arg(long = "match")]
    pub matches: Vec<String>,
    /// Start (OpenTSDB time grammar: seconds, ms, `1h-ago`, `yyyy/MM/dd-HH:mm:ss`). Default: 0.
    #[arg(long)]
    pub start: Option<String>,
    /// End; default now.
    #[arg(long)]
    pub end: Option<String>,
    /// Write here instead of stdout.
    #[arg(long, short)]
    pub output: Option<std::path::PathBuf>,
}

/// One OpenTSDB import line per point; non-finite values (which the format cannot hold) are
/// left out and counted.
fn push_opentsdb(out: &mut String, metric: &str, tags: &str, points: &[(u64, DataValue)]) -> u64 {
    let mut skipped = 0;
    for &(ms, v) in points {
        if let DataValue::F32(_) | DataValue::F64(_) = v {
            if !v.as_f64().is_finite() {
                skipped += 1;
                continue;
            }
        }
        out.push_str(metric);
        out.push(' ');
        if ms.is_multiple_of(1000) {
            out.push_str(itoa::Buffer::new().format(ms / 1000));
        } else {
            out.push_str(itoa::Buffer::new().format(ms));
        }
        out.push(' ');
        vmjson::push_value(out, v);
        out.push_str(tags);
        out.push('\n');
    }
    skipped
}

pub fn run(args: &ExportArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    let now = tsgate_common::clock::now_ms();
    let time = |s: &Option<String>, dflt: u64| -> anyhow::Result<i64> {
        Ok(match s {
            Some(s) => crate::query::time::parse_time(s, now).map_err(anyhow::Error::msg)?,
            None => dflt,
        } as i64)
    };
    let (start, end) = (time(&args.start, 0)?, time(&args.end, now)?);
    let default = ["{__name__=~\".+\"}".to_string()];
    let matches = if args.matches.is_empty() {
        &default[..]
    } else {
        &args.matches[..]
    };
    let mut selectors = Vec::new();
    for m in matches {
        selectors
            .push(crate::promql::parse_match(m).map_err(|e| anyhow::anyhow!("--match {m}: {e}"))?);
    }
    let store = crate::app::open_existing_store(&cfg)?;
    let engine = crate::query::QueryEngine {
        store: store.clone(),
        uids: crate::app::uid_core(&cfg, store)?,
        layout: cfg.layout(),
        table: cfg.storage.tables.data.clone(),
        allow_delete: false,
        limits: Default::default(),
        rows: None,
        // An export is of the raw points; rollups are derived from them on import.
        rollups: None,
    };
    let sink: Box<dyn Write> = match &args.output {
        Some(p) => {
            Box::new(std::fs::File::create(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, sink);
    let mut line = String::new();
    let mut skipped = 0u64;
    let mut io_err = None;
    let count = engine.export_each(&selectors, start, end, &mut |s| {
        line.clear();
        match args.format {
            Format::Vm => {
                let labels = crate::prometheus::labels::from_stored(
                    &s.metric,
                    s.tags.iter().map(|(k, v)| (&**k, &**v)),
                );
                vmjson::push_line(&mut line, &labels, &s.points);
            }
            Format::Opentsdb => {
                let tags: String = s.tags.iter().map(|(k, v)| format!(" {k}={v}")).collect();
                skipped += push_opentsdb(&mut line, &s.metric, &tags, &s.points);
            }
        }
        out.write_all(line.as_bytes()).map_err(|e| {
            let msg = e.to_string();
            io_err = Some(e);
            crate::query::QueryError::BadRequest(msg)
        })
    });
    if let Some(e) = io_err {
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return Ok(0);
        }
        anyhow::bail!("writing the export: {e}");
    }
    let count = count?;
    out.flush()?;
    eprintln!(
        "exported {} points ({} series-days){}",
        count.points,
        count.series_windows,
        if skipped > 0 {
            format!(", {skipped} non-finite values left out (OpenTSDB's format has none)")
        } else {
            String::new()
        }
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opentsdb_lines_keep_seconds_and_types() {
        let mut out = String::new();
        let skipped = push_opentsdb(
            &mut out,
            "sys.cpu",
            " host=a",
            &[
                (1_356_998_400_000, DataValue::Int(42)),
                (1_356_998_400_500, DataValue::F64(0.5)),
                (1_356_998_401_000, DataValue::F64(f64::NAN)),
            ],
        );
        assert_eq!(
            out,
            "sys.cpu 1356998400 42 host=a\nsys.cpu 1356998400500 0.5 host=a\n"
        );
        assert_eq!(skipped, 1);
    }
}
