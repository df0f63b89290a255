//! A small gRPC client over hyper's HTTP/2 connections: enough for Bigtable's unary and
//! server-streaming calls (each request is one message; a streamed answer is collected whole,
//! which the callers keep bounded with row limits). Plain-text HTTP/2 to an emulator, TLS with
//! ALPN `h2` and a bearer token to the real service; `channels` connections used in turn.

use super::auth::TokenSource;
use super::error::{BigtableError, Code};
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls;

/// Where the channel connects.
#[derive(Clone)]
pub enum Endpoint {
    /// An emulator: plain-text HTTP/2, no credentials.
    Plain { addr: String },
    /// The service: TLS to `host:port`.
    Tls {
        host: String,
        port: u16,
        config: Arc<rustls::ClientConfig>,
    },
}

impl Endpoint {
    fn authority(&self) -> String {
        match self {
            Endpoint::Plain { addr } => addr.clone(),
            Endpoint::Tls { host, port, .. } => format!("{host}:{port}"),
        }
    }

    fn scheme(&self) -> &'static str {
        match self {
            Endpoint::Plain { .. } => "http",
            Endpoint::Tls { .. } => "https",
        }
    }
}

/// A TLS client configuration trusting the PEM roots in `ca_file`, offering HTTP/2 only.
pub fn tls_config(ca_file: &str) -> Result<Arc<rustls::ClientConfig>, BigtableError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let bad = |m: String| BigtableError::Config(format!("storage.bigtable.ca_file {ca_file}: {m}"));
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca_file).map_err(|e| bad(e.to_string()))?;
    for cert in certs {
        let cert = cert.map_err(|e| bad(e.to_string()))?;
        // One certificate the TLS library cannot use does not spoil the others.
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(bad("no usable root certificate".into()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

type Sender = SendRequest<Full<Bytes>>;

pub struct Channel {
    endpoint: Endpoint,
    conns: Vec<Mutex<Option<Sender>>>,
    next: AtomicUsize,
    auth: Option<Arc<dyn TokenSource>>,
    connect_timeout: Duration,
    /// gRPC calls made (attempts, retries included).
    pub calls: AtomicU64,
}

impl Channel {
    pub fn new(
        endpoint: Endpoint,
        channels: usize,
        auth: Option<Arc<dyn TokenSource>>,
        connect_timeout: Duration,
    ) -> Channel {
        Channel {
            endpoint,
            conns: (0..channels.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            auth,
            connect_timeout,
            calls: AtomicU64::new(0),
        }
    }

    async fn connect(&self) -> Result<Sender, BigtableError> {
        let authority = self.endpoint.authority();
        let unreachable = |m: String| BigtableError::Connect {
            addr: authority.clone(),
            message: m,
        };
        let tcp = tokio::time::timeout(
            self.connect_timeout,
            tokio::net::TcpStream::connect(&authority),
        )
        .await
        .map_err(|_| unreachable("connect timed out".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
        // Scans answer in large messages: a wide window keeps them streaming.
        builder
            .initial_stream_window_size(4 << 20)
            .initial_connection_window_size(16 << 20)
            .keep_alive_interval(Duration::from_secs(30))
            .timer(hyper_util::rt::TokioTimer::new());
        let sender = match &self.endpoint {
            Endpoint::Plain { .. } => {
                let (sender, conn) = builder
                    .handshake(TokioIo::new(tcp))
                    .await
                    .map_err(|e| unreachable(e.to_string()))?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                sender
            }
            Endpoint::Tls { host, config, .. } => {
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| unreachable(e.to_string()))?;
                let tls = tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| unreachable(e.to_string()))?;
                let (sender, conn) = builder
                    .handshake(TokioIo::new(tls))
                    .await
                    .map_err(|e| unreachable(e.to_string()))?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                sender
            }
        };
        Ok(sender)
    }

    /// A ready connection, the next in turn (reconnecting one that closed).
    async fn sender(&self) -> Result<Sender, BigtableError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        let cached = self.conns[i].lock().clone();
        if let Some(mut s) = cached {
            if !s.is_closed() && s.ready().await.is_ok() {
                return Ok(s);
            }
        }
        let mut s = self.connect().await?;
        s.ready().await.map_err(|e| BigtableError::Connect {
            addr: self.endpoint.authority(),
            message: e.to_string(),
        })?;
        *self.conns[i].lock() = Some(s.clone());
        Ok(s)
    }

    /// One call: `request` sent to `path`, the answer's messages returned (one for a unary
    /// call, any number for a streamed one). `routing` is the `x-goog-request-params` value
    /// the service routes by (`table_name=…&app_profile_id=…`, URL-encoded).
    pub async fn call<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        path: &str,
        routing: &str,
        request: &Req,
        timeout: Duration,
    ) -> Result<Vec<Resp>, BigtableError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut body = BytesMut::with_capacity(5 + request.encoded_len());
        body.extend_from_slice(&[0]);
        body.extend_from_slice(&(request.encoded_len() as u32).to_be_bytes());
        request
            .encode(&mut body)
            .map_err(|e| BigtableError::Protocol(e.to_string()))?;
        let body = body.freeze();
        // The deadline covers waiting for a connection (a full one queues calls) and the token.
        let deadline = tokio::time::Instant::now() + timeout;
        let sender = tokio::time::timeout_at(deadline, self.sender())
            .await
            .map_err(|_| BigtableError::Connect {
                addr: self.endpoint.authority(),
                message: format!("no connection ready within {timeout:?}"),
            })??;
        let token = match &self.auth {
            Some(a) => Some(a.token().await?),
            None => None,
        };
        let uri = format!(
            "{}://{}{path}",
            self.endpoint.scheme(),
            self.endpoint.authority()
        );
        let mut req = hyper::Request::post(uri)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("user-agent", "tsgate")
            .header("grpc-timeout", format!("{}m", timeout.as_millis().max(1)))
            .header("x-goog-request-params", routing);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| BigtableError::Protocol(e.to_string()))?;
        match tokio::time::timeout_at(deadline, exchange::<Resp>(sender, req)).await {
            Ok(r) => r,
            Err(_) => Err(BigtableError::Status {
                code: Code::DEADLINE_EXCEEDED,
                message: format!("no answer within {timeout:?} (storage.bigtable.timeout_ms)"),
            }),
        }
    }
}

async fn exchange<Resp: prost::Message + Default>(
    mut sender: Sender,
    req: hyper::Request<Full<Bytes>>,
) -> Result<Vec<Resp>, BigtableError> {
    // Failures before an answer arrived may or may not have reached the server.
    let lost = |e: hyper::Error| BigtableError::Transport(e.to_string());
    let resp = sender.send_request(req).await.map_err(lost)?;
    if resp.status() != hyper::StatusCode::OK {
        return Err(BigtableError::Status {
            code: Code::UNAVAILABLE,
            message: format!("HTTP status {}", resp.status()),
        });
    }
    // A "trailers-only" answer (no message: an empty stream, or an error) carries its status
    // in the headers.
    if resp.headers().contains_key("grpc-status") {
        return match grpc_status(resp.headers())? {
            Some(status) => Err(status),
            None => Ok(Vec::new()),
        };
    }
    let mut body = resp.into_body();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut trailers_seen = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(lost)?;
        match frame.into_data() {
            Ok(data) => {
                buf.extend_from_slice(&data);
                while buf.len() >= 5 {
                    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
                    if buf[0] != 0 {
                        return Err(BigtableError::Protocol(
                            "compressed gRPC message (none was asked for)".into(),
                        ));
                    }
                    if buf.len() < 5 + len {
                        break;
                    }
                    buf.advance(5);
                    let msg = buf.split_to(len);
                    out.push(
                        Resp::decode(msg.freeze())
                            .map_err(|e| BigtableError::Protocol(e.to_string()))?,
                    );
                }
            }
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    trailers_seen = true;
                    match grpc_status(&trailers)? {
                        Some(status) => return Err(status),
                        None => {
                            if !trailers.contains_key("grpc-status") {
                                return Err(BigtableError::Protocol(
                                    "trailers without grpc-status".into(),
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    if !trailers_seen {
        return Err(BigtableError::Transport(
            "the answer ended without a gRPC status".into(),
        ));
    }
    if !buf.is_empty() {
        return Err(BigtableError::Protocol("a truncated gRPC message".into()));
    }
    Ok(out)
}

/// `Some(error)` for a non-OK `grpc-status`, `None` for OK or none.
fn grpc_status(headers: &hyper::HeaderMap) -> Result<Option<BigtableError>, BigtableError> {
    let Some(code) = headers.get("grpc-status") else {
        return Ok(None);
    };
    let code: i32 = code
        .to_str()
        .ok()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| BigtableError::Protocol("unreadable grpc-status".into()))?;
    if code == 0 {
        return Ok(None);
    }
    let message = headers
        .get("grpc-message")
        .map(|m| percent_decode(m.as_bytes()))
        .unwrap_or_default();
    Ok(Some(BigtableError::Status {
        code: Code(code),
        message,
    }))
}

fn percent_decode(b: &[u8]) -> String {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&String::from_utf8_lossy(&b[i + 1..i + 3]), 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes a routing parameter value (what `x-goog-request-params` wants).
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_messages_are_percent_decoded() {
        assert_eq!(percent_decode(b"table%20not%20found"), "table not found");
        assert_eq!(percent_decode(b"100%"), "100%");
        assert_eq!(
            url_encode("projects/p/tables/t"),
            "projects%2Fp%2Ftables%2Ft"
        );
    }
}
