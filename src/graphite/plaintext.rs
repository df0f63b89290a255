//! Carbon's plaintext port: TCP (lines) and UDP (datagrams of lines) on one address.
//!
//! TCP input is read in chunks of whole lines; each chunk is parsed and written by its own
//! task, a few in flight per connection, each awaiting the writer (backpressure). Nothing is
//! ever written back (carbon sends no replies); bad lines are counted and logged at debug
//! level and never affect the good ones. A line over 16 KiB is skipped up to its newline;
//! the connection stays open (carbon closes it). A last line without a newline is accepted
//! at end of stream (carbon discards it).

use super::write::{now_ms, write_batch, GPoint};
use crate::server::AppState;
use crate::observe::{ingest::rejected, Protocol, Reason};
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tsgate_graphite::plaintext::{parse_line, MAX_LINE};

const READ_CHUNK: usize = 256 * 1024;
const IN_FLIGHT: usize = 8;

/// Accepts plaintext TCP connections until shutdown.
pub async fn serve_tcp(state: Arc<AppState>, listener: TcpListener, shutdown: watch::Receiver<bool>) {
    crate::server::accept_loop("graphite", state, listener, shutdown, connection).await
}

async fn connection(state: Arc<AppState>, mut stream: TcpStream, mut shutdown: watch::Receiver<bool>) -> std::io::Result<()> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK * 2);
    let idle = std::time::Duration::from_millis(state.config.limits.idle_timeout_ms);
    let mut tasks: VecDeque<JoinHandle<()>> = VecDeque::new();
    // While a line is longer than the cap, bytes are dropped until its newline.
    let mut skipping = false;
    loop {
        let n = tokio::select! {
            r = crate::server::limits::read_idle(&mut stream, &mut buf, idle, &state.ingest.writer) => r?,
            _ = shutdown.changed() => 0,
        };
        // A failed read after data arrived (a reset) ends the input once that data is handled.
        let failed = if n > 0 { crate::server::limits::read_ready(&mut buf, READ_CHUNK, |b| stream.try_read_buf(b)) } else { None };
        let eof = n == 0 || failed.is_some();
        if skipping {
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let _ = buf.split_to(i + 1);
                    skipping = false;
                }
                None => buf.clear(),
            }
        }
        let end = match buf.iter().rposition(|&b| b == b'\n') {
            Some(i) => Some(i + 1),
            None if eof && !buf.is_empty() => Some(buf.len()),
            None => None,
        };
        if let Some(e) = end {
            let chunk = buf.split_to(e).freeze();
            let receipt = state.ingest.received.receipt();
            let st = state.clone();
            tasks.push_back(tokio::spawn(async move {
                process_chunk(st, chunk).await;
                drop(receipt);
            }));
        }
        if !skipping && buf.len() > MAX_LINE {
            buf.clear();
            skipping = true;
            rejected(Protocol::GraphitePlaintext, Reason::Limit, 1);
            tracing::debug!("graphite line longer than {MAX_LINE} bytes skipped");
        }
        while tasks.len() > IN_FLIGHT || (eof && !tasks.is_empty()) {
            let _ = tasks.pop_front().expect("non-empty").await;
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if eof {
            return Ok(());
        }
    }
}

/// Parses the lines of one chunk and writes the good ones.
fn parse_lines<'a>(lines: impl Iterator<Item = &'a [u8]>, now: u64, points: &mut Vec<GPoint<'a>>, proto: Protocol) {
    for raw in lines {
        let Ok(line) = std::str::from_utf8(raw) else {
            rejected(proto, Reason::Parse, 1);
            tracing::debug!("graphite line is not UTF-8");
            continue;
        };
        match parse_line(line, now) {
            Ok(Some(p)) => points.push(GPoint { path: p.path, value: p.value, ts_ms: p.ts_ms }),
            Ok(None) => {} // NaN: dropped silently, as carbon does
            Err(e) => {
                // Blank lines are harmless keep-alives.
                if !line.trim().is_empty() {
                    rejected(proto, crate::observe::ingest::graphite_line_reason(&e), 1);
                    tracing::debug!(line = %line.chars().take(200).collect::<String>(), error = %e, "invalid graphite line");
                }
            }
        }
    }
}

async fn process_chunk(state: Arc<AppState>, chunk: Bytes) {
    let mut points = Vec::new();
    parse_lines(chunk.split(|&b| b == b'\n'), now_ms(), &mut points, Protocol::GraphitePlaintext);
    write_batch(&state, Protocol::GraphitePlaintext, &points).await;
}

/// Receives plaintext datagrams until shutdown; each is one or more lines.
pub async fn serve_udp(state: Arc<AppState>, socket: UdpSocket, mut shutdown: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 65_536];
    loop {
        let n = tokio::select! {
            r = socket.recv_from(&mut buf) => match r {
                Ok((n, _)) => n,
                Err(e) => {
                    tracing::debug!(error = %e, "graphite UDP receive failed");
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        let mut points = Vec::new();
        parse_lines(tsgate_graphite::plaintext::datagram_lines(&buf[..n]), now_ms(), &mut points, Protocol::GraphiteUdp);
        write_batch(&state, Protocol::GraphiteUdp, &points).await;
    }
}
