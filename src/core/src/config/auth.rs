//! The `[auth]` section as data. Its checks and the hashing live with the authenticator
//! (`server::auth`), which turns this into its own state once at start.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One right a user or token can hold. Which route needs which is in the server's route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Right {
    /// Queries, look-ups, listings, stats.
    Read,
    /// Storing points (`/api/put`, remote write), annotations, metadata and trees.
    Write,
    /// `/api/uid/assign`: its answer says which names exist, so writing alone does not grant it.
    Assign,
    /// Deleting data and dropping caches; holds every other right too.
    Admin,
}

impl Right {
    pub fn as_str(self) -> &'static str {
        match self {
            Right::Read => "read",
            Right::Write => "write",
            Right::Assign => "assign",
            Right::Admin => "admin",
        }
    }
}

/// The set of rights a principal holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rights {
    pub read: bool,
    pub write: bool,
    pub assign: bool,
    pub admin: bool,
}

impl Rights {
    pub const NONE: Rights = Rights {
        read: false,
        write: false,
        assign: false,
        admin: false,
    };

    pub fn from_list(list: &[Right]) -> Rights {
        Rights {
            read: list.contains(&Right::Read),
            write: list.contains(&Right::Write),
            assign: list.contains(&Right::Assign),
            admin: list.contains(&Right::Admin),
        }
    }

    /// `admin` implies every right, so an operator's principal needs one word.
    pub fn has(self, r: Right) -> bool {
        self.admin
            || match r {
                Right::Read => self.read,
                Right::Write => self.write,
                Right::Assign => self.assign,
                Right::Admin => false,
            }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Off by default: every HTTP endpoint is open, as in OpenTSDB.
    pub enabled: bool,
    /// `[[auth.users]]`: HTTP Basic.
    pub users: Vec<UserConfig>,
    /// `[[auth.tokens]]`: `Authorization: Bearer <token>`.
    pub tokens: Vec<TokenConfig>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UserConfig {
    pub name: String,
    /// An argon2 PHC string, as `tsgate auth hash-password` prints it.
    pub password_hash: String,
    pub rights: Vec<Right>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TokenConfig {
    /// A label for logs (defaults to `token-<n>`).
    pub name: String,
    /// Lower-case hex SHA-256 of the token (`tsgate auth hash-token`, or `sha256sum`).
    pub token_sha256: String,
    /// Or a file holding the token itself (surrounding whitespace ignored), so the secret can
    /// live in a mounted secret rather than the config.
    pub token_file: PathBuf,
    pub rights: Vec<Right>,
}
