//! The `[auth]` config section, its checks, and the hashing the CLI offers
//! (`tsgate auth hash-password`, `tsgate auth hash-token`, `tsgate auth new-token`).

use argon2::password_hash::{
    rand_core::OsRng, rand_core::RngCore, PasswordHash, PasswordHasher, SaltString,
};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

pub use crate::config::auth::{AuthConfig, Right, Rights, TokenConfig, UserConfig};

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("auth.enabled is true but no [[auth.users]] or [[auth.tokens]] are configured")]
    NoPrincipals,
    #[error("auth.users[{index}] ({name:?}): {problem}")]
    User {
        index: usize,
        name: String,
        problem: String,
    },
    #[error("auth.tokens[{index}] ({name:?}): {problem}")]
    Token {
        index: usize,
        name: String,
        problem: String,
    },
    #[error("cannot read auth.tokens[{index}].token_file {path}: {source}")]
    TokenFile {
        index: usize,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("password hashing failed: {0}")]
    Hashing(argon2::password_hash::Error),
}

/// What [`AuthConfig::load`] returns: users (name, PHC hash, rights) and tokens (name,
/// digest, rights).
pub type Loaded = (
    Vec<(String, String, Rights)>,
    Vec<(String, [u8; 32], Rights)>,
);

/// Checks every entry of `[auth]` and reads the token files. Errors name the entry.
pub fn load(cfg: &AuthConfig) -> Result<Loaded, AuthError> {
    if cfg.users.is_empty() && cfg.tokens.is_empty() {
        return Err(AuthError::NoPrincipals);
    }
    let mut users = Vec::new();
    for (index, u) in cfg.users.iter().enumerate() {
        let bad = |problem: &str| AuthError::User {
            index,
            name: u.name.clone(),
            problem: problem.into(),
        };
        if u.name.is_empty() || u.name.contains(':') {
            return Err(bad("name must be non-empty and contain no ':'"));
        }
        if users
            .iter()
            .any(|(n, _, _): &(String, String, Rights)| n == &u.name)
        {
            return Err(bad("duplicate user name"));
        }
        match PasswordHash::new(&u.password_hash) {
            Ok(h) if h.algorithm.as_str().starts_with("argon2") => {}
            _ => {
                return Err(bad(
                    "password_hash must be an argon2 hash from `tsgate auth hash-password`",
                ))
            }
        }
        users.push((
            u.name.clone(),
            u.password_hash.clone(),
            rights(&u.rights).map_err(bad)?,
        ));
    }
    let mut tokens = Vec::new();
    for (index, t) in cfg.tokens.iter().enumerate() {
        let name = if t.name.is_empty() {
            format!("token-{index}")
        } else {
            t.name.clone()
        };
        let bad = |problem: &str| AuthError::Token {
            index,
            name: name.clone(),
            problem: problem.into(),
        };
        let has_file = !t.token_file.as_os_str().is_empty();
        let digest = match (t.token_sha256.is_empty(), has_file) {
            (false, false) => parse_hex32(&t.token_sha256)
                .ok_or_else(|| bad("token_sha256 must be 64 hex digits"))?,
            (true, true) => {
                let text = std::fs::read_to_string(&t.token_file).map_err(|source| {
                    AuthError::TokenFile {
                        index,
                        path: t.token_file.clone(),
                        source,
                    }
                })?;
                let token = text.trim();
                if token.is_empty() {
                    return Err(bad("token_file is empty"));
                }
                token_sha256(token)
            }
            _ => return Err(bad("set exactly one of token_sha256 and token_file")),
        };
        tokens.push((name.clone(), digest, rights(&t.rights).map_err(bad)?));
    }
    Ok((users, tokens))
}

fn rights(list: &[Right]) -> Result<Rights, &'static str> {
    if list.is_empty() {
        return Err("rights must list one or more of \"read\", \"write\", \"assign\", \"admin\"");
    }
    Ok(Rights::from_list(list))
}

fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.trim();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The argon2id PHC string of a password, with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
}

pub fn token_sha256(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A new random token: 32 bytes from the OS, as 64 hex digits.
pub fn new_token() -> String {
    let mut b = [0u8; 32];
    OsRng.fill_bytes(&mut b);
    hex(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_tokens_digest() {
        use argon2::password_hash::PasswordVerifier;
        let h = hash_password("s3cret").unwrap();
        assert!(h.starts_with("$argon2id$"));
        let parsed = PasswordHash::new(&h).unwrap();
        assert!(argon2::Argon2::default()
            .verify_password(b"s3cret", &parsed)
            .is_ok());
        assert!(argon2::Argon2::default()
            .verify_password(b"s3cret ", &parsed)
            .is_err());
        // sha256("abc"), the FIPS 180-2 example.
        assert_eq!(
            hex(&token_sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            parse_hex32(&hex(&token_sha256("abc"))),
            Some(token_sha256("abc"))
        );
        assert_eq!(new_token().len(), 64);
        assert_ne!(new_token(), new_token());
    }

    #[test]
    fn bad_entries_are_named() {
        let cfg: AuthConfig = toml::from_str("enabled = true\n[[tokens]]\nname = \"ci\"\ntoken_sha256 = \"zz\"\nrights = [\"read\"]\n").unwrap();
        assert!(load(&cfg)
            .unwrap_err()
            .to_string()
            .contains("auth.tokens[0] (\"ci\"): token_sha256"));
        let cfg: AuthConfig = toml::from_str("enabled = true\n[[users]]\nname = \"a\"\npassword_hash = \"plain\"\nrights = [\"read\"]\n").unwrap();
        assert!(load(&cfg).unwrap_err().to_string().contains("argon2"));
        assert!(
            toml::from_str::<AuthConfig>("[[users]]\nname = \"a\"\nrights = [\"root\"]\n").is_err()
        );
        let admin: AuthConfig =
            toml::from_str("[[users]]\nname = \"a\"\nrights = [\"admin\"]\n").unwrap();
        let r = Rights::from_list(&admin.users[0].rights);
        assert!([Right::Read, Right::Write, Right::Assign, Right::Admin]
            .iter()
            .all(|&x| r.has(x)));
        let rw = Rights::from_list(&[Right::Read, Right::Write]);
        assert!(rw.has(Right::Write) && !rw.has(Right::Assign) && !rw.has(Right::Admin));
        assert!(matches!(
            load(&AuthConfig {
                enabled: true,
                ..Default::default()
            }),
            Err(AuthError::NoPrincipals)
        ));
    }
}
