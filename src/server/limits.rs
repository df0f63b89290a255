//! Connection limits shared by every listener: idle timeouts (`limits.idle_timeout_ms`) and
//! the answer to a connection refused for lack of slots (see `admission`). Slow HTTP clients are bounded in `http.rs`
//! (`limits.read_timeout_ms` for headers and for the body).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

fn idle_error(idle: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "no data for {} ms (limits.idle_timeout_ms)",
            idle.as_millis()
        ),
    )
}

/// One read of a line-protocol connection that fails with `TimedOut` after `idle` without data.
/// (While the server does not read — backpressure — no time is counted.)
///
/// While the store refuses writes nothing is read at all, so TCP backpressure reaches the
/// sender instead of points piling up in memory.
pub async fn read_idle<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut bytes::BytesMut,
    idle: Duration,
    writer: &crate::write::Writer,
) -> io::Result<usize> {
    writer.wait_store_available().await;
    match tokio::time::timeout(idle, rd.read_buf(buf)).await {
        Ok(r) => r,
        Err(_) => Err(idle_error(idle)),
    }
}

/// After a read: what else the socket holds already, without waiting, until `buf` holds at
/// least `upto` bytes (a read may fill all of `buf`'s spare capacity). A fast sender's stream is
/// then cut into a few large chunks (each a task, a write and a WAL group commit) instead of
/// one per 64 KB read. End of input is left for the next read. An error (a reset) is returned
/// rather than raised, for the caller to raise once what `buf` already holds is handled.
pub fn read_ready(
    buf: &mut bytes::BytesMut,
    upto: usize,
    mut try_read: impl FnMut(&mut bytes::BytesMut) -> io::Result<usize>,
) -> Option<io::Error> {
    while buf.len() < upto {
        buf.reserve(upto - buf.len());
        match try_read(buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Some(e),
        }
    }
    None
}

/// A stream whose reads fail with `TimedOut` once a read has waited `idle` for data: closes
/// idle HTTP keep-alive connections and half-open peers. Writes pass through.
pub struct IdleStream<S> {
    inner: S,
    idle: Duration,
    /// Armed when a read starts waiting, dropped when data (or EOF) arrives.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<S> IdleStream<S> {
    pub fn new(inner: S, idle: Duration) -> Self {
        IdleStream {
            inner,
            idle,
            timer: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for IdleStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.timer = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let idle = this.idle;
                let t = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match t.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.timer = None;
                        Poll::Ready(Err(idle_error(idle)))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for IdleStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Answers a connection refused for lack of slots (`msg` names the limit) in its protocol's
/// way, then closes it: on the OpenTSDB port a 503 (HTTP) or an error line (telnet); Graphite
/// has no answers, so its ports just close.
pub async fn refuse(what: &'static str, mut stream: TcpStream, msg: String) {
    if what == "opentsdb" {
        let mut first = [0u8; 1];
        // A client that sends nothing gets the telnet line after a moment.
        let http = matches!(tokio::time::timeout(Duration::from_millis(500), stream.peek(&mut first)).await, Ok(Ok(1)) if first[0].is_ascii_uppercase());
        let answer = if http {
            let body = serde_json::json!({"error": {"code": 503, "message": msg}}).to_string();
            format!(
                "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        } else {
            format!("error: {msg}\n")
        };
        let _ = stream.write_all(answer.as_bytes()).await;
    }
    let _ = stream.shutdown().await;
    // Read what the client sent so that closing does not reset the answer away.
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut sink)).await;
}

#[cfg(test)]
mod tests {
    use super::read_ready;
    use std::io;

    /// Reads a script of results into `buf`: each `Ok(n)` appends n bytes.
    fn scripted(
        mut script: Vec<io::Result<usize>>,
    ) -> impl FnMut(&mut bytes::BytesMut) -> io::Result<usize> {
        script.reverse();
        move |buf| {
            let r = script
                .pop()
                .unwrap_or(Err(io::ErrorKind::WouldBlock.into()));
            if let Ok(n) = r {
                buf.extend(std::iter::repeat_n(b'x', n));
            }
            r
        }
    }

    #[test]
    fn drains_until_would_block_or_enough() {
        let mut buf = bytes::BytesMut::new();
        assert!(read_ready(&mut buf, 100, scripted(vec![Ok(10), Ok(20)])).is_none());
        assert_eq!(buf.len(), 30, "stops at WouldBlock");
        let mut buf = bytes::BytesMut::new();
        assert!(read_ready(&mut buf, 25, scripted(vec![Ok(10), Ok(20), Ok(40)])).is_none());
        assert_eq!(buf.len(), 30, "stops once `upto` bytes are held");
        let mut buf = bytes::BytesMut::new();
        assert!(read_ready(&mut buf, 100, scripted(vec![Ok(10), Ok(0), Ok(40)])).is_none());
        assert_eq!(buf.len(), 10, "end of input is left for the next read");
    }

    #[test]
    fn a_reset_keeps_what_was_read() {
        let mut buf = bytes::BytesMut::from(&b"put a 1 1 h=x\n"[..]);
        let e = read_ready(
            &mut buf,
            1000,
            scripted(vec![Ok(5), Err(io::ErrorKind::ConnectionReset.into())]),
        );
        assert_eq!(e.map(|e| e.kind()), Some(io::ErrorKind::ConnectionReset));
        assert_eq!(
            buf.len(),
            14 + 5,
            "the bytes before the error are still there to be handled"
        );
    }
}
