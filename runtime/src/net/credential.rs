//! A registry username and password, whichever source gave it (a docker
//! config, a Secret, a cloud provider): below both the keychain that
//! looks credentials up and the providers that make them.

use base64::Engine;
use sha2::{Digest, Sha256};

/// A username and password for a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub username: String,
    pub password: String,
}

impl Credential {
    pub fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }

    /// What identifies this credential in cache keys: a SHA-256 of the
    /// username and the password (length-prefixed, so no two pairs share
    /// a preimage). Two secrets with one username never share a token.
    pub(crate) fn id(&self) -> String {
        let mut h = Sha256::new();
        for part in [&self.username, &self.password] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        ivpol_refs::encoding::hex(&h.finalize())
    }
}
