//! The verification cache as the engine sees it (the host implements it,
//! WIT `verification-cache`), and the keys the engine stores under.
//!
//! A key binds everything a verdict depends on: the policy's content hash
//! (so any edit misses), the function, the attestation name, the sorted
//! attestor names and the resolved image digest, never a tag (a re-pushed
//! tag must not hit an entry of the old image). Only full successes are
//! stored, with the verified payload, so `extractPayload` works on a hit.

use sha2::{Digest, Sha256};
use std::sync::Arc;

/// What the engine needs of the host's cache.
pub trait VerificationCache: Send + Sync {
    /// The stored value, if any. A miss claims the key (see the WIT docs).
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Stores a full success and releases the claim.
    fn put(&self, key: &str, value: &[u8]);
    /// The digest a tag reference recently resolved to.
    fn get_digest(&self, image: &str) -> Option<String>;
    fn put_digest(&self, image: &str, digest: &str);
}

pub type SharedCache = Arc<dyn VerificationCache>;

/// No cache: every verification runs (native tests, JSON evaluation, and
/// `--no-cache`, where the host answers misses itself).
pub struct NoCache;

impl VerificationCache for NoCache {
    fn get(&self, _: &str) -> Option<Vec<u8>> {
        None
    }
    fn put(&self, _: &str, _: &[u8]) {}
    fn get_digest(&self, _: &str) -> Option<String> {
        None
    }
    fn put_digest(&self, _: &str, _: &str) {}
}

pub fn none() -> SharedCache {
    Arc::new(NoCache)
}

/// The functions whose results are cached.
#[derive(Clone, Copy)]
pub enum Function {
    ImageSignatures,
    AttestationSignatures,
}

impl Function {
    fn name(self) -> &'static str {
        match self {
            Function::ImageSignatures => "verifyImageSignatures",
            Function::AttestationSignatures => "verifyAttestationSignatures",
        }
    }
}

/// The key of one verification: SHA-256 over the length-prefixed parts
/// (as Kyverno's `attestorCacheRule`, so no two part lists share a key).
pub fn key(
    policy_hash: &str,
    function: Function,
    attestation: &str,
    attestors: &[String],
    digest: &str,
) -> String {
    let mut sorted: Vec<&str> = attestors.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut h = Sha256::new();
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_be_bytes());
        h.update(s.as_bytes());
    };
    part(policy_hash);
    part(function.name());
    part(attestation);
    part(&sorted.len().to_string());
    for a in &sorted {
        part(a);
    }
    part(digest);
    format!("v1:{}", crate::verify::encoding::hex(&h.finalize()))
}

/// An in-memory cache for the engine's own tests: it remembers every put
/// and counts lookups.
#[cfg(test)]
#[derive(Default)]
pub struct MemoryCache {
    pub entries: std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>,
    pub digests: std::sync::Mutex<std::collections::HashMap<String, String>>,
    pub gets: std::sync::atomic::AtomicUsize,
}

#[cfg(test)]
impl VerificationCache for MemoryCache {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.entries.lock().ok()?.get(key).cloned()
    }
    fn put(&self, key: &str, value: &[u8]) {
        if let Ok(mut m) = self.entries.lock() {
            m.insert(key.to_string(), value.to_vec());
        }
    }
    fn get_digest(&self, image: &str) -> Option<String> {
        self.digests.lock().ok()?.get(image).cloned()
    }
    fn put_digest(&self, image: &str, digest: &str) {
        if let Ok(mut m) = self.digests.lock() {
            m.insert(image.to_string(), digest.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keys_bind_every_part_and_ignore_attestor_order() {
        let base = key(
            "p",
            Function::ImageSignatures,
            "",
            &names(&["a", "b"]),
            "sha256:1",
        );
        assert_eq!(
            base,
            key(
                "p",
                Function::ImageSignatures,
                "",
                &names(&["b", "a"]),
                "sha256:1"
            )
        );
        for other in [
            key(
                "q",
                Function::ImageSignatures,
                "",
                &names(&["a", "b"]),
                "sha256:1",
            ),
            key(
                "p",
                Function::AttestationSignatures,
                "",
                &names(&["a", "b"]),
                "sha256:1",
            ),
            key(
                "p",
                Function::ImageSignatures,
                "x",
                &names(&["a", "b"]),
                "sha256:1",
            ),
            key(
                "p",
                Function::ImageSignatures,
                "",
                &names(&["a"]),
                "sha256:1",
            ),
            key(
                "p",
                Function::ImageSignatures,
                "",
                &names(&["ab"]),
                "sha256:1",
            ),
            key(
                "p",
                Function::ImageSignatures,
                "",
                &names(&["a", "b"]),
                "sha256:2",
            ),
        ] {
            assert_ne!(base, other);
        }
    }
}
