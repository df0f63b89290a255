//! Carbon's pickle port: 4-byte big-endian length + pickle, repeated. Frames are decoded by the
//! safe decoder in `tsgate_graphite::pickle`; a frame with a forbidden opcode or broken bytes is
//! rejected as a whole (counted, logged) and the connection reads on. A frame over
//! `graphite.pickle_max_frame` closes the connection, as carbon does: its length may be
//! garbage, so there is nothing reliable to skip.

use super::write::{write_batch, GPoint};
use crate::ingest::counts::rejected;
use crate::observe::{Protocol, Reason};
use crate::server::state::Carbon;
use bytes::BytesMut;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tsgate_common::clock::now_ms;
use tsgate_graphite::{frame, pickle, plaintext};

pub async fn serve(state: Arc<Carbon>, listener: TcpListener, shutdown: watch::Receiver<bool>) {
    let (limits, idle) = (state.settings.admission.clone(), state.settings.idle);
    crate::server::accept_loop(
        "pickle", state, limits, idle, listener, shutdown, connection,
    )
    .await
}

async fn connection(
    state: Arc<Carbon>,
    mut stream: TcpStream,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let max = state.settings.pickle_max_frame;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let idle = state.settings.idle;
    loop {
        // Every whole frame in the buffer, in order; each awaits the writer (backpressure).
        loop {
            match frame::next_frame(&buf, max) {
                Ok(Some((used, range))) => {
                    let f = buf.split_to(used).freeze();
                    handle_frame(&state, &f[range]).await;
                }
                Ok(None) => break,
                Err(e) => {
                    crate::ingest::counts::batch_rejected(Protocol::GraphitePickle, &e);
                    tracing::warn!(error = %e, "pickle frame too large: closing the connection");
                    return Ok(());
                }
            }
        }
        let n = tokio::select! {
            r = crate::server::limits::read_idle(&mut stream, &mut buf, idle, &state.ingest.writer) => r?,
            _ = shutdown.changed() => 0,
        };
        if n == 0 {
            return Ok(());
        }
    }
}

async fn handle_frame(state: &Carbon, data: &[u8]) {
    let payload = match pickle::decode(data) {
        Ok(p) => p,
        Err(e) => {
            crate::ingest::counts::batch_rejected(Protocol::GraphitePickle, &e);
            tracing::warn!(error = %e, "pickle frame rejected");
            return;
        }
    };
    let now = now_ms();
    rejected(
        Protocol::GraphitePickle,
        Reason::Parse,
        payload.bad_items as u64,
    );
    let mut errors = 0;
    let mut points = Vec::with_capacity(payload.items.len());
    for it in &payload.items {
        // Same value and timestamp rules as plaintext lines: NaN dropped, -1 = now.
        if it.value.is_nan() {
            continue;
        }
        match plaintext::timestamp_ms(it.timestamp, now) {
            Ok(ts_ms) => points.push(GPoint {
                path: &it.path,
                value: it.value,
                ts_ms,
            }),
            Err(e) => {
                errors += 1;
                tracing::debug!(path = %it.path, error = %e, "pickle item refused");
            }
        }
    }
    rejected(Protocol::GraphitePickle, Reason::Value, errors);
    write_batch(state, Protocol::GraphitePickle, &points).await;
}
