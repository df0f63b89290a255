//! `tsgate auth …`: make the secrets `[auth]` holds, without putting them in shell history.

use crate::server::auth::config::{hash_password, hex, new_token, token_sha256};
use clap::Subcommand;
use std::io::{BufRead, IsTerminal, Write};

#[derive(Subcommand, Debug)]
pub enum AuthAction {
    /// Read a password from stdin (one line) and print its argon2id hash for `[[auth.users]] password_hash`.
    HashPassword,
    /// Read a token from stdin (one line) and print its SHA-256 for `[[auth.tokens]] token_sha256`.
    HashToken,
    /// Print a new random token and the `[[auth.tokens]]` entry for it.
    NewToken,
}

pub fn run(action: AuthAction) -> anyhow::Result<i32> {
    match action {
        AuthAction::HashPassword => {
            let pw = read_secret("Password: ")?;
            let h = hash_password(&pw).map_err(|e| anyhow::anyhow!("hashing failed: {e}"))?;
            println!("{h}");
        }
        AuthAction::HashToken => {
            let t = read_secret("Token: ")?;
            println!("{}", hex(&token_sha256(&t)));
        }
        AuthAction::NewToken => {
            let t = new_token();
            println!("token: {t}");
            println!("token_sha256 = \"{}\"", hex(&token_sha256(&t)));
        }
    }
    Ok(0)
}

/// One line from stdin without its line ending; an empty secret is refused.
fn read_secret(prompt: &str) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("{prompt}");
        std::io::stderr().flush()?;
    }
    let mut line = String::new();
    stdin.lock().read_line(&mut line)?;
    let s = line.trim_end_matches(['\n', '\r']).to_string();
    anyhow::ensure!(
        !s.is_empty(),
        "empty input: give the secret on stdin, e.g. `printf '%s\\n' \"$SECRET\" | tsgate auth …`"
    );
    Ok(s)
}
