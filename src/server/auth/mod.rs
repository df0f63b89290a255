//! Optional authentication on the HTTP endpoints: HTTP Basic (argon2 password hashes) and
//! bearer tokens (kept as SHA-256 digests), each with `read`, `write`, `assign` and/or `admin`
//! rights.
//!
//! Checking happens in two steps so an unauthenticated client never gets its body read:
//! [`Authenticator::authenticate`] looks at the headers only (401 when missing or wrong), then
//! after the body is in, [`authorize`] compares the principal's rights with what the request's
//! route needs (`server::routes`, judged on the parsed request; 403 when short).

pub mod config;
mod reply;

pub use config::{AuthConfig, AuthError, Right, Rights};

use super::http::Reply;
use super::routes::Lookup;
use argon2::password_hash::{PasswordHash, PasswordVerifier};
use base64::Engine;
use http::HeaderMap;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Who a request was authenticated as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The user name, or the token's `name` (for logs).
    pub name: String,
    pub rights: Rights,
}

/// Why a request was refused before its body was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// No `Authorization` header.
    Missing,
    /// A header that names no known user/password or token, or a scheme we do not take.
    Invalid,
}

struct User {
    /// Parsed once at start; a PHC string (`$argon2id$v=19$…`).
    hash: String,
    rights: Rights,
}

struct Token {
    name: String,
    sha256: [u8; 32],
    rights: Rights,
}

/// Verified Basic credentials are cached by the SHA-256 of `user:password` so that argon2 —
/// deliberately slow — runs once per credential, not once per remote-write request.
const CACHE_MAX: usize = 4096;

pub struct Authenticator {
    users: HashMap<String, User>,
    tokens: Vec<Token>,
    cache: parking_lot::Mutex<HashMap<[u8; 32], Principal>>,
    /// Unknown user names are checked against this hash too, so their answer takes as long
    /// as a wrong password's and does not reveal which names exist.
    dummy_hash: String,
    /// Bounds concurrent argon2 runs (each takes ~19 MiB and a core for tens of ms): a flood of
    /// wrong passwords waits here instead of exhausting memory or the blocking pool.
    verify_slots: Arc<tokio::sync::Semaphore>,
}

impl Authenticator {
    /// `None` when `auth.enabled` is false. Reads `token_file`s and checks every hash.
    pub fn from_config(cfg: &AuthConfig) -> Result<Option<Arc<Authenticator>>, AuthError> {
        if !cfg.enabled {
            return Ok(None);
        }
        let (users, tokens) = config::load(cfg)?;
        let users = users
            .into_iter()
            .map(|(name, hash, rights)| (name, User { hash, rights }))
            .collect();
        let tokens = tokens
            .into_iter()
            .map(|(name, sha256, rights)| Token {
                name,
                sha256,
                rights,
            })
            .collect();
        let slots = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Ok(Some(Arc::new(Authenticator {
            users,
            tokens,
            cache: Default::default(),
            dummy_hash: config::hash_password("tsgate-dummy-password")
                .map_err(AuthError::Hashing)?,
            verify_slots: Arc::new(tokio::sync::Semaphore::new(slots)),
        })))
    }

    /// Who the `Authorization` header says the client is.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Denied> {
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return Err(Denied::Missing);
        };
        let value = value.to_str().map_err(|_| Denied::Invalid)?.trim();
        let (scheme, rest) = value.split_once(' ').ok_or(Denied::Invalid)?;
        let rest = rest.trim();
        // `Token` is InfluxDB 2.x's name for the same thing (its clients and Telegraf send it).
        if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token") {
            return self.bearer(rest).ok_or(Denied::Invalid);
        }
        if scheme.eq_ignore_ascii_case("basic") {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .map_err(|_| Denied::Invalid)?;
            return self.basic(raw).await.ok_or(Denied::Invalid);
        }
        Err(Denied::Invalid)
    }

    /// Compares the token's digest with every configured one in constant time (no early exit,
    /// so the time taken does not say how many tokens were tried or which one matched).
    fn bearer(&self, token: &str) -> Option<Principal> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for t in &self.tokens {
            if bool::from(t.sha256.ct_eq(&digest)) {
                found = Some(Principal {
                    name: t.name.clone(),
                    rights: t.rights,
                });
            }
        }
        found
    }

    async fn basic(&self, raw: Vec<u8>) -> Option<Principal> {
        let key: [u8; 32] = Sha256::digest(&raw).into();
        if let Some(p) = self.cache.lock().get(&key) {
            return Some(p.clone());
        }
        let text = String::from_utf8(raw).ok()?;
        let (name, password) = text.split_once(':')?;
        let (hash, rights, known) = match self.users.get(name) {
            Some(u) => (u.hash.clone(), u.rights, true),
            None => (self.dummy_hash.clone(), Rights::NONE, false),
        };
        let password = password.to_string();
        let _slot = self.verify_slots.acquire().await.ok()?;
        let ok = tokio::task::spawn_blocking(move || {
            PasswordHash::new(&hash).is_ok_and(|h| {
                argon2::Argon2::default()
                    .verify_password(password.as_bytes(), &h)
                    .is_ok()
            })
        })
        .await
        .unwrap_or(false);
        if !ok || !known {
            return None;
        }
        let p = Principal {
            name: name.to_string(),
            rights,
        };
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        cache.insert(key, p.clone());
        Some(p)
    }
}

/// Step one, before the body is read: the principal, or the 401 reply in the route family's
/// error format. An open route is answered whatever the credentials; when it carries valid ones
/// the principal is still returned (the connection has then proven itself, see `admission`).
pub async fn admit(
    auth: &Authenticator,
    route: &Lookup,
    path: &str,
    headers: &HeaderMap,
) -> Result<Option<Principal>, Reply> {
    if route.is_open() {
        if !headers.contains_key(http::header::AUTHORIZATION) {
            return Ok(None);
        }
        return Ok(auth.authenticate(headers).await.ok());
    }
    match auth.authenticate(headers).await {
        Ok(p) => Ok(Some(p)),
        Err(d) => {
            tracing::debug!(path, denied = ?d, "HTTP request refused: not authenticated");
            Err(reply::unauthorized(route.family(), path, d))
        }
    }
}

/// Step two, with the body in hand and the route found on the parsed request: 403 when the
/// principal lacks the right the route needs. (Boxed: a reply is large, and nearly every
/// request passes.)
pub fn authorize(
    principal: Option<&Principal>,
    route: &Lookup,
    path: &str,
) -> Result<(), Box<Reply>> {
    let Some(p) = principal else { return Ok(()) };
    let Some(need) = route.need().and_then(|n| n.right()) else {
        return Ok(());
    };
    if p.rights.has(need) {
        return Ok(());
    }
    tracing::debug!(path, principal = %p.name, ?need, "HTTP request refused: missing right");
    Err(Box::new(reply::forbidden(
        route.family(),
        path,
        &p.name,
        need,
    )))
}

/// With auth on, the listeners that cannot authenticate (telnet, Graphite) are what's left
/// open: say so at start when they face more than loopback.
pub fn warn_unprotected(cfg: &crate::config::Config) {
    if !cfg.auth.enabled {
        return;
    }
    let public = |addr: &str| !addr.trim().is_empty() && !is_loopback(addr);
    if cfg.telnet_enabled() && public(&cfg.server.listen) {
        tracing::warn!(addr = %cfg.server.listen, "auth is on but server.telnet = true: telnet `put` on this port is not authenticated");
    }
    for (key, addr) in [
        ("server.graphite_listen", &cfg.server.graphite_listen),
        ("server.pickle_listen", &cfg.server.pickle_listen),
    ] {
        if public(addr) {
            tracing::warn!(key, addr = %addr, "auth is on but this Graphite listener is not authenticated: bind it to 127.0.0.1 or set it to \"\"");
        }
    }
}

fn is_loopback(addr: &str) -> bool {
    let host = addr
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(addr)
        .trim_matches(|c| c == '[' || c == ']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, v.parse().unwrap());
        h
    }

    fn basic(user_pass: &str) -> HeaderMap {
        header(&format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_pass)
        ))
    }

    #[tokio::test]
    async fn basic_bearer_and_the_cache() {
        let cfg = AuthConfig {
            enabled: true,
            users: vec![config::UserConfig {
                name: "u".into(),
                password_hash: config::hash_password("pw").unwrap(),
                rights: vec![Right::Read],
            }],
            tokens: vec![config::TokenConfig {
                name: "t".into(),
                token_sha256: config::hex(&config::token_sha256("tok")),
                rights: vec![Right::Write],
                ..Default::default()
            }],
        };
        let a = Authenticator::from_config(&cfg).unwrap().unwrap();
        assert_eq!(
            a.authenticate(&HeaderMap::new()).await,
            Err(Denied::Missing)
        );
        assert_eq!(
            a.authenticate(&basic("u:wrong")).await,
            Err(Denied::Invalid)
        );
        assert_eq!(
            a.authenticate(&basic("nobody:pw")).await,
            Err(Denied::Invalid)
        );
        assert!(a.cache.lock().is_empty(), "failures are not cached");
        let p = a.authenticate(&basic("u:pw")).await.unwrap();
        assert_eq!(
            p,
            Principal {
                name: "u".into(),
                rights: Rights {
                    read: true,
                    ..Rights::NONE
                }
            }
        );
        assert_eq!(a.cache.lock().len(), 1);
        // Served from the cache now; still only for the exact credentials.
        assert_eq!(a.authenticate(&basic("u:pw")).await.unwrap(), p);
        assert_eq!(a.authenticate(&basic("u:pw2")).await, Err(Denied::Invalid));
        let t = a.authenticate(&header("bearer  tok")).await.unwrap();
        assert_eq!(
            t.rights,
            Rights {
                write: true,
                ..Rights::NONE
            }
        );
        assert_eq!(
            a.authenticate(&header("Bearer tok2")).await,
            Err(Denied::Invalid)
        );
        assert_eq!(
            a.authenticate(&header("Digest x")).await,
            Err(Denied::Invalid)
        );
        assert_eq!(
            a.authenticate(&header("Basic !!!")).await,
            Err(Denied::Invalid)
        );
        assert!(Authenticator::from_config(&AuthConfig::default())
            .unwrap()
            .is_none());
    }

    #[test]
    fn loopback_addresses() {
        assert!(
            is_loopback("127.0.0.1:2003")
                && is_loopback("[::1]:2003")
                && is_loopback("localhost:2003")
        );
        assert!(!is_loopback("0.0.0.0:2003") && !is_loopback("10.0.0.5:2003"));
    }
}
