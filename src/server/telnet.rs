//! The telnet-style line protocol: `put` (silent on success), `version`, `stats`, `help`,
//! `dropcaches`, `exit`. Input is read in chunks of whole lines; each chunk is parsed and
//! written by its own task, a few in flight at once, and their answers go out in order.

use crate::ingest::{
    to_data_value, Ack, Batch, EncodedPoint, Incoming, PointError, Points, Written,
};
use crate::schema::rowkey::base_time;
use crate::schema::RawPoint;
use crate::server::state::OpenTsdb;
use crate::write::shard::StoredPoint;
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tsgate_opentsdb::telnet::{parse_line, split_put, Command, PutParts};
use tsgate_opentsdb::DataPoint;

const READ_CHUNK: usize = 256 * 1024;
const IN_FLIGHT: usize = 8;

struct ChunkResult {
    output: Vec<u8>,
    exit: bool,
}

pub const COMMANDS: &[&str] = &[
    "stats",
    "dropcaches",
    "version",
    "exit",
    "help",
    "put",
    "rollup",
    "histogram",
];

pub async fn serve_connection(
    state: Arc<OpenTsdb>,
    stream: TcpStream,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let (mut rd, mut wr) = stream.into_split();
    let max = state.settings.telnet_line_max;
    let idle = state.settings.idle;
    let mut buf = BytesMut::with_capacity(READ_CHUNK * 2);
    let mut tasks: VecDeque<JoinHandle<ChunkResult>> = VecDeque::new();
    // While a line is longer than the limit we drop bytes until its end.
    let mut skipping = false;
    let mut eof = false;
    // A read that failed after data arrived (a reset): raised once that data is answered.
    let mut failed = None;
    while !eof {
        // Read more input, or answer the oldest chunk as soon as it is done.
        let n = tokio::select! {
            r = super::limits::read_idle(&mut rd, &mut buf, idle, &state.ingest.writer) => r?,
            done = async { tasks.front_mut().expect("guarded").await }, if !tasks.is_empty() => {
                tasks.pop_front();
                let r = done.map_err(std::io::Error::other)?;
                wr.write_all(&r.output).await?;
                if r.exit {
                    return Ok(());
                }
                continue;
            }
            _ = shutdown.changed() => 0,
        };
        if n > 0 {
            failed = super::limits::read_ready(&mut buf, READ_CHUNK, |b| rd.try_read_buf(b));
        }
        if n == 0 || failed.is_some() {
            eof = true;
        }
        let mut chunk_end = None;
        if skipping {
            match memchr(&buf) {
                Some(i) => {
                    let _ = buf.split_to(i + 1);
                    skipping = false;
                }
                None => buf.clear(),
            }
        }
        if let Some(i) = memrchr(&buf) {
            chunk_end = Some(i + 1);
        } else if eof && !buf.is_empty() {
            chunk_end = Some(buf.len()); // a last line without newline still counts
        }
        let chunk = chunk_end.map(|e| buf.split_to(e).freeze());
        if let Some(chunk) = chunk {
            let st = state.clone();
            let receipt = state.ingest.received.receipt();
            tasks.push_back(tokio::spawn(async move {
                let r = process_chunk(st, chunk, max).await;
                drop(receipt);
                r
            }));
        }
        if !skipping && buf.len() > max {
            // Too long without a newline: answer, drop it, keep the connection.
            buf.clear();
            skipping = true;
            crate::ingest::counts::rejected(
                crate::observe::Protocol::Telnet,
                crate::observe::Reason::Limit,
                1,
            );
            let msg = too_long(max).into_bytes();
            tasks.push_back(tokio::spawn(async move {
                ChunkResult {
                    output: msg,
                    exit: false,
                }
            }));
        }
        // Bounded pipelining: at most IN_FLIGHT chunks parsed and written at once.
        while tasks.len() > IN_FLIGHT || (eof && !tasks.is_empty()) {
            let r = tasks
                .pop_front()
                .expect("non-empty")
                .await
                .map_err(std::io::Error::other)?;
            wr.write_all(&r.output).await?;
            if r.exit {
                return Ok(());
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn too_long(max: usize) -> String {
    format!("put: illegal argument: line too long (limits.telnet_line_max = {max} bytes)\n")
}

fn memchr(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

fn memrchr(b: &[u8]) -> Option<usize> {
    b.iter().rposition(|&c| c == b'\n')
}

/// Lines are UTF-8; bytes that are not are read as ISO-8859-1 (what OpenTSDB reads).
fn decode(line: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(line) {
        Ok(s) => s.into(),
        Err(_) => line.iter().map(|&b| b as char).collect::<String>().into(),
    }
}

/// A `put` of a chunk, in line order: its series already known by the line's own metric and
/// tag words, or parsed (with those words, to remember once it is accepted).
enum Put<'a> {
    Known(StoredPoint),
    Parsed(DataPoint<'a>, Option<Vec<u8>>),
}

/// The memo key of a `put` line's series: its metric and tag words exactly as written.
fn series_text(key: &mut Vec<u8>, parts: &PutParts<'_>) {
    crate::series::TextKind::Telnet.begin(key);
    key.extend_from_slice(parts.metric.as_bytes());
    key.push(b' ');
    key.extend_from_slice(parts.tags.as_bytes());
}

/// The points of a chunk whose every line is a `put` with a series text the memo knows (a
/// steady sender's usual chunk), in line order, each line read once and nothing collected in
/// between. `None` at the first line that is anything else: the chunk then takes the full path
/// of [`process_chunk`], which answers it line by line.
fn known_puts(state: &OpenTsdb, chunk: &[u8], max: usize) -> Option<Vec<StoredPoint>> {
    let memo = state.resolver.raw_reader();
    let mut key = Vec::with_capacity(128);
    let mut batch = Vec::with_capacity(chunk.len() / 48);
    // Checked once for the chunk instead of per line; a chunk that is not UTF-8 takes the
    // full path, which reads such a line as ISO-8859-1 (see `decode`).
    let text = std::str::from_utf8(chunk).ok()?;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if line.len() > max {
            return None;
        }
        let parts = split_put(line)?;
        series_text(&mut key, &parts);
        let series = memo.get(&key)?;
        let base = base_time(parts.timestamp);
        let point = RawPoint::encode(parts.timestamp, base, to_data_value(parts.value)).ok()?;
        batch.push(StoredPoint {
            series,
            base,
            point,
        });
    }
    Some(batch)
}

async fn process_chunk(state: Arc<OpenTsdb>, chunk: Bytes, max: usize) -> ChunkResult {
    let mut out = Vec::new();
    if let Some(batch) = known_puts(&state, &chunk, max) {
        if !batch.is_empty() {
            if let Err(e) = state
                .ingest
                .write(Batch::known(crate::observe::Protocol::Telnet, batch))
                .await
                .durable
            {
                out.extend_from_slice(format!("put: HBase error: {e}\n").as_bytes());
            }
        }
        return ChunkResult {
            output: out,
            exit: false,
        };
    }
    let lines: Vec<std::borrow::Cow<str>> = chunk
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(decode)
        .collect();
    let mut points: Vec<Put<'_>> = Vec::with_capacity(lines.len());
    let mut exit = false;
    let mut key = Vec::with_capacity(128);
    // A line whose series text was accepted before needs only its sample read. The memo is
    // read for the whole chunk at once, before any await.
    let mut known: Vec<Option<StoredPoint>> = {
        let memo = state.resolver.raw_reader();
        // Lines after a command (a `dropcaches` may come) are not read from the memo.
        let mut commands = false;
        lines
            .iter()
            .map(|line| {
                if commands {
                    return None;
                }
                let Some(parts) = split_put(line) else {
                    commands |= !line.starts_with("put ");
                    return None;
                };
                if line.len() > max {
                    return None;
                }
                series_text(&mut key, &parts);
                let series = memo.get(&key)?;
                let base = base_time(parts.timestamp);
                let point =
                    RawPoint::encode(parts.timestamp, base, to_data_value(parts.value)).ok()?;
                Some(StoredPoint {
                    series,
                    base,
                    point,
                })
            })
            .collect()
    };
    // Consecutive `rollup` lines, written together: one store sync for the run of them.
    let mut rollups = Vec::new();
    for (line, known) in lines.iter().zip(known.iter_mut()) {
        let is_rollup = line.starts_with("rollup ") || *line == "rollup";
        if !is_rollup || line.len() > max {
            // In line order: the rollups before this line are written (or refused) first.
            write_rollups(&state, &mut rollups, &mut out).await;
        }
        if let Some(sp) = known.take() {
            points.push(Put::Known(sp));
            continue;
        }
        if line.len() > max {
            crate::ingest::counts::rejected(
                crate::observe::Protocol::Telnet,
                crate::observe::Reason::Limit,
                1,
            );
            out.extend_from_slice(too_long(max).as_bytes());
            continue;
        }
        if is_rollup {
            // In line order: what came before is written first.
            flush_points(&state, &mut points, &mut out).await;
            match tsgate_opentsdb::rollup::parse_telnet(line, &state.limits) {
                Ok((spec, p)) => rollups.push((spec, p.to_owned_point())),
                Err(e) => {
                    write_rollups(&state, &mut rollups, &mut out).await;
                    out.extend_from_slice(tsgate_opentsdb::rollup::error_line(&e).as_bytes());
                    out.push(b'\n');
                }
            }
            continue;
        }
        let text = split_put(line).map(|parts| {
            series_text(&mut key, &parts);
            key.clone()
        });
        match parse_line(line, &state.limits) {
            Ok(Command::Put(p)) => points.push(Put::Parsed(p, text)),
            Ok(cmd) => {
                // Keep answers in line order: write what came before first.
                flush_points(&state, &mut points, &mut out).await;
                match cmd {
                    Command::Version => out.extend_from_slice(version_lines().as_bytes()),
                    Command::Help => out
                        .extend_from_slice(tsgate_opentsdb::telnet::help_line(COMMANDS).as_bytes()),
                    Command::Stats => out.extend_from_slice(stats_lines(&state).as_bytes()),
                    Command::DropCaches => {
                        state.resolver.drop_caches();
                        out.extend_from_slice(b"Caches dropped.\n");
                    }
                    Command::Exit => {
                        exit = true;
                        break;
                    }
                    Command::Status => out.extend_from_slice(b"ok\n"),
                    // Shutting the server down from any client is not offered.
                    Command::Diediedie => {
                        out.extend_from_slice(b"unknown command: diediedie.  Try `help'.\n")
                    }
                    // 2.4's `histogram` (see `opentsdb_histogram`): nothing answered when stored.
                    Command::Unknown("histogram") => {
                        let (st, l) = (state.clone(), line.to_string());
                        let r = crate::server::blocking::run(move || {
                            super::opentsdb_histogram::from_telnet(&l)
                                .and_then(|p| super::opentsdb_histogram::store(&st, &p))
                                .and_then(|()| Ok(st.ingest.direct.sync()?))
                        })
                        .await
                        .unwrap_or_else(|e| Err(e.into()));
                        if let Err(e) = r {
                            out.extend_from_slice(
                                format!("histogram: illegal argument: {e}\n").as_bytes(),
                            );
                        }
                    }
                    Command::Unknown(w) => out.extend_from_slice(
                        format!("unknown command: {w}.  Try `help'.\n").as_bytes(),
                    ),
                    Command::Put(_) => unreachable!("handled above"),
                }
            }
            Err(e) => {
                crate::ingest::counts::rejected(
                    crate::observe::Protocol::Telnet,
                    crate::observe::metrics::message_reason(&e.to_string()),
                    1,
                );
                out.extend_from_slice(e.to_string().as_bytes());
                out.push(b'\n');
            }
        }
    }
    flush_points(&state, &mut points, &mut out).await;
    write_rollups(&state, &mut rollups, &mut out).await;
    ChunkResult { output: out, exit }
}

/// Writes the pending `rollup` lines (durably, before the connection's next answer) and
/// answers the refused ones, in line order.
async fn write_rollups(
    state: &Arc<OpenTsdb>,
    rollups: &mut Vec<(
        tsgate_opentsdb::rollup::RollupSpec,
        tsgate_opentsdb::OwnedDataPoint,
    )>,
    out: &mut Vec<u8>,
) {
    if rollups.is_empty() {
        return;
    }
    for r in super::api::write_rollups(state, std::mem::take(rollups)).await {
        if let Err(e) = r {
            out.extend_from_slice(e.telnet_line().as_bytes());
            out.push(b'\n');
        }
    }
}

async fn flush_points(state: &OpenTsdb, points: &mut Vec<Put<'_>>, out: &mut Vec<u8>) {
    if points.is_empty() {
        return;
    }
    if points.iter().all(|p| matches!(p, Put::Known(_))) {
        // Every series known: straight to the writer, with nothing to answer but a failure.
        let batch: Vec<StoredPoint> = points
            .drain(..)
            .filter_map(|p| match p {
                Put::Known(sp) => Some(sp),
                Put::Parsed(..) => None,
            })
            .collect();
        if let Err(e) = state
            .ingest
            .write(Batch::known(crate::observe::Protocol::Telnet, batch))
            .await
            .durable
        {
            out.extend_from_slice(format!("put: HBase error: {e}\n").as_bytes());
        }
        return;
    }
    let incoming: Vec<Incoming<'_>> = points
        .iter_mut()
        .map(|p| match p {
            Put::Known(sp) => Incoming::Known(sp.clone()),
            Put::Parsed(p, text) => {
                let raw =
                    RawPoint::encode(p.timestamp, base_time(p.timestamp), to_data_value(p.value))
                        .map(|r| (base_time(p.timestamp), r))
                        .map_err(|e| PointError::Invalid(e.to_string()));
                Incoming::Names(EncodedPoint {
                    metric: p.metric,
                    tags: &p.tags,
                    raw,
                    text: text.as_deref(),
                })
            }
        })
        .collect();
    let Written {
        outcomes,
        durable: res,
        ..
    } = state
        .ingest
        .write(Batch {
            points: Points::Encoded {
                known: Vec::new(),
                points: incoming,
            },
            counted: Some(crate::observe::Protocol::Telnet),
            ack: Ack::Durable,
        })
        .await;
    for o in outcomes {
        if let Err(e) = o {
            let line = match e {
                PointError::Invalid(m) => format!("put: illegal argument: {m}\n"),
                PointError::UnknownName(m) => format!("put: unknown metric: {m}\n"),
                PointError::Uid(m) => format!("put: HBase error: {m}\n"),
                PointError::Limit(m) => format!("put: illegal argument: {m}\n"),
            };
            out.extend_from_slice(line.as_bytes());
        }
    }
    if let Err(e) = res {
        out.extend_from_slice(format!("put: HBase error: {e}\n").as_bytes());
    }
    points.clear();
}

pub fn version_lines() -> String {
    format!(
        "net.opentsdb.tools BuildData built at revision {} (tsgate {})\nBuilt on {} by tsgate (2.4.0-compatible)\n",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_VERSION"),
        "tsgate"
    )
}

fn stats_lines(state: &OpenTsdb) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let host = hostname();
    let mut s = String::new();
    for (m, v, tag) in crate::server::stats_snapshot(&state.resolver, &state.query) {
        s.push_str(&format!("{m} {now} {v} host={host}"));
        if let Some((k, val)) = tag {
            s.push_str(&format!(" {k}={val}"));
        }
        s.push('\n');
    }
    s
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
