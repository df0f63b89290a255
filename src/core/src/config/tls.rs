//! `[server.tls]` as data; the server builds its acceptor from it (`server::tls`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[server.tls]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain (leaf first). Empty = TLS off.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Also answer plain HTTP on the port. Off: a plain HTTP request gets 400 and is closed.
    pub allow_plaintext: bool,
}

impl TlsConfig {
    pub fn enabled(&self) -> bool {
        !self.cert.as_os_str().is_empty() || !self.key.as_os_str().is_empty()
    }
}
