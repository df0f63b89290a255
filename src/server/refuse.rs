//! Polite refusals on the OpenTSDB port: a plain HTTP request when TLS is required, a telnet
//! command when telnet is off. Each gets one answer in its protocol, then the connection closes.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Answers a plain HTTP request on a TLS-only port with 400 (in OpenTSDB's error JSON) and
/// closes: the client learns why rather than seeing a reset.
pub async fn refuse_plaintext(stream: TcpStream) -> std::io::Result<()> {
    let body = serde_json::json!({"error": {"code": 400, "message": "This port requires TLS: use https://",
        "details": "plain HTTP is off (server.tls.allow_plaintext = false)"}})
    .to_string();
    let resp = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    close_with(stream, resp.as_bytes()).await
}

/// Writes `msg`, then reads and discards what the client already sent (briefly) before
/// closing: closing with unread input would reset the connection and could lose `msg`.
pub async fn close_with(mut stream: TcpStream, msg: &[u8]) -> std::io::Result<()> {
    stream.write_all(msg).await?;
    stream.shutdown().await?;
    let mut sink = [0u8; 4096];
    let mut total = 0usize;
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while total < (1 << 20) {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    })
    .await;
    Ok(())
}

/// Telnet is off (`server.telnet = false`, the default when auth is on): one error line in the
/// telnet protocol's style, then close, so `put` cannot get around HTTP authentication.
pub async fn refuse_telnet(stream: TcpStream) -> std::io::Result<()> {
    close_with(stream, b"error: telnet is off on this port (server.telnet, off by default when auth.enabled); use HTTP /api/put\n").await
}
