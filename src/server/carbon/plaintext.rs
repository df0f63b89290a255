//! Carbon's plaintext port: TCP (lines) and UDP (datagrams of lines) on one address.
//!
//! TCP input is read in chunks of whole lines; each chunk is parsed and written by its own
//! task, a few in flight per connection, each awaiting the writer (backpressure). Nothing is
//! ever written back (carbon sends no replies); bad lines are counted and logged at debug
//! level and never affect the good ones. A line over 16 KiB is skipped up to its newline;
//! the connection stays open (carbon closes it). A last line without a newline is accepted
//! at end of stream (carbon discards it).

use super::write::{write_batch, GPoint};
use crate::ingest::counts::rejected;
use crate::observe::{Protocol, Reason};
use crate::server::state::Carbon;
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tsgate_common::clock::now_ms;
use tsgate_graphite::plaintext::{parse_line, MAX_LINE};

const READ_CHUNK: usize = 256 * 1024;
const IN_FLIGHT: usize = 8;

/// Accepts plaintext TCP connections until shutdown.
pub async fn serve_tcp(state: Arc<Carbon>, listener: TcpListener, shutdown: watch::Receiver<bool>) {
    let (limits, idle) = (state.settings.admission.clone(), state.settings.idle);
    crate::server::accept_loop(
        "graphite", state, limits, idle, listener, shutdown, connection,
    )
    .await
}

async fn connection(
    state: Arc<Carbon>,
    mut stream: TcpStream,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut buf = BytesMut::with_capacity(READ_CHUNK * 2);
    let idle = state.settings.idle;
    let mut tasks: VecDeque<JoinHandle<()>> = VecDeque::new();
    // While a line is longer than the cap, bytes are dropped until its newline.
    let mut skipping = false;
    loop {
        let n = tokio::select! {
            r = crate::server::limits::read_idle(&mut stream, &mut buf, idle, &state.ingest.writer) => r?,
            _ = shutdown.changed() => 0,
        };
        // A failed read after data arrived (a reset) ends the input once that data is handled.
        let failed = if n > 0 {
            crate::server::limits::read_ready(&mut buf, READ_CHUNK, |b| stream.try_read_buf(b))
        } else {
            None
        };
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

/// Parses the lines of one chunk (`\n`-separated) into `points`. A chunk of ASCII (nearly
/// every one) is checked once and cut at each `\n` found by `memchr`, instead of each line
/// being scanned for its end, then for UTF-8, then for ASCII.
fn parse_chunk<'a>(chunk: &'a [u8], now: u64, points: &mut Vec<GPoint<'a>>, proto: Protocol) {
    if !chunk.is_ascii() {
        return parse_lines(chunk.split(|&b| b == b'\n'), now, points, proto);
    }
    let text = std::str::from_utf8(chunk).expect("ASCII is UTF-8");
    for line in text.split('\n') {
        keep(
            tsgate_graphite::plaintext::parse_ascii_line(line, now),
            line,
            points,
            proto,
        );
    }
}

/// One line's outcome: its point into `points`, or its error counted.
fn keep<'a>(
    parsed: Result<
        Option<tsgate_graphite::plaintext::Point<'a>>,
        tsgate_graphite::plaintext::LineError,
    >,
    line: &str,
    points: &mut Vec<GPoint<'a>>,
    proto: Protocol,
) {
    match parsed {
        Ok(Some(p)) => points.push(GPoint {
            path: p.path,
            value: p.value,
            ts_ms: p.ts_ms,
        }),
        Ok(None) => {} // NaN: dropped silently, as carbon does
        Err(e) => {
            // Blank lines are harmless keep-alives.
            if !line.trim().is_empty() {
                rejected(proto, crate::ingest::counts::graphite_line_reason(&e), 1);
                tracing::debug!(line = %line.chars().take(200).collect::<String>(), error = %e, "invalid graphite line");
            }
        }
    }
}

/// Parses lines one by one and writes the good ones.
fn parse_lines<'a>(
    lines: impl Iterator<Item = &'a [u8]>,
    now: u64,
    points: &mut Vec<GPoint<'a>>,
    proto: Protocol,
) {
    for raw in lines {
        let Ok(line) = std::str::from_utf8(raw) else {
            rejected(proto, Reason::Parse, 1);
            tracing::debug!("graphite line is not UTF-8");
            continue;
        };
        keep(parse_line(line, now), line, points, proto);
    }
}

async fn process_chunk(state: Arc<Carbon>, chunk: Bytes) {
    // Lines are rarely shorter than this (`a.b.c 1 1700000000`): sized once, not doubled.
    let mut points = Vec::with_capacity(chunk.len() / 24);
    parse_chunk(&chunk, now_ms(), &mut points, Protocol::GraphitePlaintext);
    write_batch(&state, Protocol::GraphitePlaintext, &points).await;
}

/// Receives plaintext datagrams until shutdown; each is one or more lines.
pub async fn serve_udp(state: Arc<Carbon>, socket: UdpSocket, mut shutdown: watch::Receiver<bool>) {
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
        parse_lines(
            tsgate_graphite::plaintext::datagram_lines(&buf[..n]),
            now_ms(),
            &mut points,
            Protocol::GraphiteUdp,
        );
        write_batch(&state, Protocol::GraphiteUdp, &points).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A chunk read whole (ASCII, cut by `memchr`) gives the points that reading it line by
        /// line does, in order: good lines, bad ones, blank ones, `\r\n` endings, NaNs.
        #[test]
        fn chunk_reads_as_its_lines(lines in proptest::collection::vec(proptest::sample::select(vec![
            "a.b 1.5 1700000000", "a.c -2 1700000060\r", "  a.d\t3e2   1700000120 ", "", " ", "a.e nan 1700000000",
            "a.f 1 2 3", "a.g x 1700000000", "a.h 7 -1", "a.i 1_0 1700000000.5", "a.j 8 1700000000123", "é.k 1 1700000000",
        ]), 0..20)) {
            let chunk = lines.join("\n");
            let (mut whole, mut one_by_one) = (Vec::new(), Vec::new());
            parse_chunk(chunk.as_bytes(), 5, &mut whole, Protocol::GraphitePlaintext);
            parse_lines(chunk.as_bytes().split(|&b| b == b'\n'), 5, &mut one_by_one, Protocol::GraphitePlaintext);
            let key = |v: &[GPoint]| v.iter().map(|p| (p.path.to_string(), p.value.to_bits(), p.ts_ms)).collect::<Vec<_>>();
            proptest::prop_assert_eq!(key(&whole), key(&one_by_one));
        }
    }
}
