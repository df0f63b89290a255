//! Credentials for the real service: a service account's key (a self-signed JWT, as Google's
//! own clients send for Bigtable, so no token exchange is needed) or, on Google Cloud, the
//! metadata server's token. The emulator takes none.

use super::error::BigtableError;
use base64::Engine;
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = Result<String, BigtableError>> + Send + 'a>>;

/// Gives the bearer token of each call (cached until shortly before it expires).
pub trait TokenSource: Send + Sync {
    fn token(&self) -> TokenFuture<'_>;
}

/// A token is renewed this long before it expires.
const RENEW_EARLY: Duration = Duration::from_secs(300);

/// Picks the credentials as Google's clients do: the configured key file, else
/// `GOOGLE_APPLICATION_CREDENTIALS`, else the metadata server (on Google Cloud).
pub fn default_source(
    credentials_file: &str,
    audience: &str,
) -> Result<Box<dyn TokenSource>, BigtableError> {
    let file = if credentials_file.is_empty() {
        std::env::var("GOOGLE_APPLICATION_CREDENTIALS").unwrap_or_default()
    } else {
        credentials_file.to_string()
    };
    if file.is_empty() {
        return Ok(Box::new(Metadata {
            cached: Mutex::new(None),
        }));
    }
    let text = std::fs::read_to_string(&file)
        .map_err(|e| BigtableError::Auth(format!("cannot read {file}: {e}")))?;
    Ok(Box::new(
        ServiceAccount::from_json(&text, audience).map_err(|source| {
            BigtableError::Credentials {
                file: file.to_string(),
                source,
            }
        })?,
    ))
}

pub struct ServiceAccount {
    email: String,
    key_id: String,
    key: ring::signature::RsaKeyPair,
    audience: String,
    cached: Mutex<Option<(String, Instant)>>,
}

/// Why a credentials file is not a usable service account key.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error(
        "credentials of type {0:?}: only a service account's JSON key (type \"service_account\") \
         is supported; on Google Cloud leave credentials_file empty to use the metadata server"
    )]
    NotServiceAccount(String),
    #[error("private_key: {0}")]
    Pem(tokio_rustls::rustls::pki_types::pem::Error),
    #[error("private_key: {0}")]
    Key(ring::error::KeyRejected),
}

impl ServiceAccount {
    pub fn from_json(text: &str, audience: &str) -> Result<ServiceAccount, CredentialsError> {
        use tokio_rustls::rustls::pki_types::{pem::PemObject, PrivatePkcs8KeyDer};
        let v: serde_json::Value = serde_json::from_str(text)?;
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or_default();
        if field("type") != "service_account" {
            return Err(CredentialsError::NotServiceAccount(field("type").into()));
        }
        let der = PrivatePkcs8KeyDer::from_pem_slice(field("private_key").as_bytes())
            .map_err(CredentialsError::Pem)?;
        let key = ring::signature::RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
            .map_err(CredentialsError::Key)?;
        Ok(ServiceAccount {
            email: field("client_email").to_string(),
            key_id: field("private_key_id").to_string(),
            key,
            audience: audience.to_string(),
            cached: Mutex::new(None),
        })
    }

    /// A JWT signed with the account's key, valid for an hour from `now` (seconds).
    pub fn jwt(&self, now: u64) -> Result<String, BigtableError> {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": self.key_id});
        let claims = serde_json::json!({
            "iss": self.email, "sub": self.email, "aud": self.audience,
            "iat": now, "exp": now + 3600,
        });
        let signing_input = format!(
            "{}.{}",
            b64.encode(header.to_string()),
            b64.encode(claims.to_string())
        );
        let mut sig = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &ring::rand::SystemRandom::new(),
                signing_input.as_bytes(),
                &mut sig,
            )
            .map_err(|_| BigtableError::Auth("signing the JWT failed".into()))?;
        Ok(format!("{signing_input}.{}", b64.encode(sig)))
    }
}

impl TokenSource for ServiceAccount {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(async move {
            if let Some((t, until)) = self.cached.lock().clone() {
                if Instant::now() < until {
                    return Ok(t);
                }
            }
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            let t = self.jwt(now)?;
            *self.cached.lock() = Some((
                t.clone(),
                Instant::now() + Duration::from_secs(3600) - RENEW_EARLY,
            ));
            Ok(t)
        })
    }
}

/// The token of the VM's service account, from the metadata server.
pub struct Metadata {
    cached: Mutex<Option<(String, Instant)>>,
}

impl Metadata {
    async fn fetch(&self) -> Result<(String, u64), BigtableError> {
        let fail = |m: String| {
            BigtableError::Auth(format!(
                "no credentials_file, no GOOGLE_APPLICATION_CREDENTIALS, and the metadata server (off Google Cloud there is none) failed: {m}"
            ))
        };
        let mut s = tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::TcpStream::connect("169.254.169.254:80"),
        )
        .await
        .map_err(|_| fail("connect timed out".into()))?
        .map_err(|e| fail(e.to_string()))?;
        // HTTP/1.0: the answer ends when the server closes, never chunked.
        s.write_all(b"GET /computeMetadata/v1/instance/service-accounts/default/token HTTP/1.0\r\nHost: metadata.google.internal\r\nMetadata-Flavor: Google\r\n\r\n")
            .await
            .map_err(|e| fail(e.to_string()))?;
        let mut buf = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
            .await
            .map_err(|_| fail("read timed out".into()))?
            .map_err(|e| fail(e.to_string()))?;
        let text = String::from_utf8_lossy(&buf);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| fail("no HTTP answer".into()))?;
        if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
            return Err(fail(head.lines().next().unwrap_or_default().to_string()));
        }
        let v: serde_json::Value = serde_json::from_str(body).map_err(|e| fail(e.to_string()))?;
        let token = v["access_token"]
            .as_str()
            .ok_or_else(|| fail("no access_token".into()))?;
        Ok((token.to_string(), v["expires_in"].as_u64().unwrap_or(300)))
    }
}

impl TokenSource for Metadata {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(async move {
            if let Some((t, until)) = self.cached.lock().clone() {
                if Instant::now() < until {
                    return Ok(t);
                }
            }
            let (t, secs) = self.fetch().await?;
            let life = Duration::from_secs(secs).saturating_sub(RENEW_EARLY / 5);
            *self.cached.lock() = Some((t.clone(), Instant::now() + life));
            Ok(t)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_credential_types_are_named() {
        let e = ServiceAccount::from_json(r#"{"type":"authorized_user"}"#, "a")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("\"authorized_user\""), "{e}");
        assert!(ServiceAccount::from_json("not json", "a").is_err());
    }
}
