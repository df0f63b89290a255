//! TLS for HTTP on the OpenTSDB port (rustls with the `ring` provider). The port already tells
//! telnet from HTTP by the first byte; a TLS ClientHello starts with 0x16 (a handshake record),
//! which neither a telnet command nor an HTTP method does, so HTTPS shares the port too.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

pub use crate::config::tls::TlsConfig;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("server.tls needs both cert and key")]
    Incomplete,
    #[error("cannot read server.tls.{what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("server.tls.cert {0} holds no certificate")]
    NoCert(PathBuf),
    #[error("server.tls: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The TLS side of the port: the acceptor and whether plain HTTP is still served.
pub struct Tls {
    pub acceptor: TlsAcceptor,
    pub allow_plaintext: bool,
}

/// A ClientHello that has not finished in this time is dropped: a silent client must not hold a
/// task (and a socket) forever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

impl Tls {
    /// `None` when no certificate is configured. Reads and checks the PEM files.
    pub fn from_config(cfg: &TlsConfig) -> Result<Option<Arc<Tls>>, TlsError> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        if !cfg.enabled() {
            return Ok(None);
        }
        if cfg.cert.as_os_str().is_empty() || cfg.key.as_os_str().is_empty() {
            return Err(TlsError::Incomplete);
        }
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cfg.cert)
            .and_then(|it| it.collect::<Result<_, _>>())
            .map_err(|source| TlsError::Read {
                what: "cert",
                path: cfg.cert.clone(),
                source,
            })?;
        if certs.is_empty() {
            return Err(TlsError::NoCert(cfg.cert.clone()));
        }
        let key = PrivateKeyDer::from_pem_file(&cfg.key).map_err(|source| TlsError::Read {
            what: "key",
            path: cfg.key.clone(),
            source,
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut sc = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        // hyper serves HTTP/1.1 only.
        sc.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Some(Arc::new(Tls {
            acceptor: TlsAcceptor::from(Arc::new(sc)),
            allow_plaintext: cfg.allow_plaintext,
        })))
    }

    /// Completes the handshake, then serves HTTP (with keep-alive) inside the session.
    pub async fn serve(
        &self,
        state: Arc<super::AppState>,
        stream: TcpStream,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> std::io::Result<()> {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream))
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake timed out")
            })??;
        super::http::serve_connection(state, tls, peer, shutdown).await
    }
}
