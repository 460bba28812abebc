//! The verification cache as the engine sees it (the host implements it,
//! WIT `verification-cache`), and the keys the engine stores under.
//!
//! A key binds everything a verdict depends on: the policy's content hash
//! (so any edit misses), the function, the attestation name, each
//! attestor's name with the fingerprint of its evaluated trust material
//! (keys, certificates, roots and identities that CEL computed for this
//! request: a key taken from the namespace is part of the key), the image
//! repository and the resolved digest, never a tag (a re-pushed tag must
//! not hit an entry of the old image). The host completes the key with the
//! identity of the registry credentials ([`Credentials`]). Only full
//! successes are stored, with the verified payload, so `extractPayload`
//! works on a hit.

use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The registry credentials an entry depends on (WIT `credential-scope`):
/// the registries the evidence comes from and the policy's secret names.
/// The host mixes in the identity of the credential it presents to each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// `host[:port]` as the registry's API is reached, sorted, deduplicated.
    pub registries: Vec<String>,
    /// The policy's `credentials.secrets` names.
    pub secrets: Vec<String>,
    /// The namespace of a namespaced policy (WIT `credential-scope.tenant`).
    pub tenant: Option<String>,
}

impl Credentials {
    /// The scope of `registries` (deduplicated and sorted, so equal scopes
    /// compare equal), `secrets` and `tenant`.
    pub fn new(
        registries: impl IntoIterator<Item = String>,
        secrets: &[String],
        tenant: Option<&str>,
    ) -> Credentials {
        let mut registries: Vec<String> = registries.into_iter().collect();
        ivpol_refs::sort::sort(&mut registries);
        registries.dedup();
        Credentials {
            registries,
            secrets: secrets.to_vec(),
            tenant: tenant.map(str::to_string),
        }
    }
}

/// What the engine needs of the host's cache.
pub trait VerificationCache: Send + Sync {
    /// The stored value, if any. A miss claims the key (see the WIT docs).
    fn get(&self, key: &str, credentials: &Credentials) -> Option<Vec<u8>>;
    /// Stores a full success and releases the claim.
    fn put(&self, key: &str, credentials: &Credentials, value: &[u8]);
    /// The digest a tag reference recently resolved to.
    fn get_digest(&self, image: &str, credentials: &Credentials) -> Option<String>;
    /// Records the digest a tag reference resolved to.
    fn put_digest(&self, image: &str, credentials: &Credentials, digest: &str);
}

/// The cache an evaluation shares with its verifiers.
pub type SharedCache = Arc<dyn VerificationCache>;

/// No cache: every verification runs (native tests, JSON evaluation, and
/// `--no-cache`, where the host answers misses itself).
pub struct NoCache;

impl VerificationCache for NoCache {
    fn get(&self, _: &str, _: &Credentials) -> Option<Vec<u8>> {
        None
    }
    fn put(&self, _: &str, _: &Credentials, _: &[u8]) {}
    fn get_digest(&self, _: &str, _: &Credentials) -> Option<String> {
        None
    }
    fn put_digest(&self, _: &str, _: &Credentials, _: &str) {}
}

/// A cache that keeps nothing.
pub fn none() -> SharedCache {
    Arc::new(NoCache)
}

/// The functions whose results are cached.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `verifyImageSignatures`.
    ImageSignatures,
    /// `verifyAttestationSignatures`.
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

/// One verification's subject and trust, as its cache key binds them.
pub struct KeyParts<'a> {
    /// The hash of the policy's content, so a changed policy keys anew.
    pub policy_hash: &'a str,
    /// The function verified.
    pub function: Function,
    /// The attestation's name; empty for signatures.
    pub attestation: &'a str,
    /// Each attestor's name and the fingerprint of its evaluated material.
    pub attestors: Vec<(&'a str, &'a str)>,
    /// `registry/repository` of the image.
    pub repository: &'a str,
    /// The image's manifest digest.
    pub digest: &'a str,
}

/// The key of one verification: SHA-256 over the length-prefixed shared
/// parts (as Kyverno's `attestorCacheRule`, so no two part lists share a
/// key), then the image's repository, length-prefixed, and digest.
/// Attestor order does not matter.
pub fn key(parts: &KeyParts<'_>) -> String {
    KeyPrefix::new(
        parts.policy_hash,
        parts.function,
        parts.attestation,
        &parts.attestors,
    )
    .key(&[parts.repository], parts.digest)
}

/// The parts of a key that one policy's verifications share (policy,
/// function, attestation, attestors), hashed once: an evaluation checks
/// every image of a pod against the same attestors, and each image then
/// only appends its repository and digest. The host hashes every key it is
/// given (with the identity of the credentials), so the image's part need
/// not be hashed here too: that was a SHA-256 in wasm per image and policy,
/// the largest step of a cache hit (docs/performance.md).
#[derive(Clone)]
pub struct KeyPrefix(String);

impl KeyPrefix {
    /// The hash of the shared parts, attestors sorted and deduplicated.
    pub fn new(
        policy_hash: &str,
        function: Function,
        attestation: &str,
        attestors: &[(&str, &str)],
    ) -> KeyPrefix {
        let mut attestors = attestors.to_vec();
        ivpol_refs::sort::sort(&mut attestors);
        attestors.dedup();
        let mut h = Sha256::new();
        part(&mut h, &[policy_hash]);
        part(&mut h, &[function.name()]);
        part(&mut h, &[attestation]);
        part(&mut h, &[&attestors.len().to_string()]);
        for (name, fingerprint) in &attestors {
            part(&mut h, &[name]);
            part(&mut h, &[fingerprint]);
        }
        KeyPrefix(["v3:", &crate::verify::encoding::hex(&h.finalize())].concat())
    }

    /// The key of the image whose repository is `repository`'s pieces
    /// joined (`[registry, "/", path]` saves formatting the whole), at
    /// `digest`: the prefix, the repository's length, the repository and
    /// the digest. The length makes the split unambiguous whatever the
    /// pieces hold; the prefix is of fixed length.
    pub fn key(&self, repository: &[&str], digest: &str) -> String {
        let len: usize = repository.iter().map(|p| p.len()).sum();
        let mut key = String::with_capacity(self.0.len() + 8 + len + digest.len());
        key.push_str(&self.0);
        key.push(':');
        key.push_str(&len.to_string());
        key.push(':');
        for piece in repository {
            key.push_str(piece);
        }
        key.push_str(digest);
        key
    }
}

/// One length-prefixed part, given as pieces that are hashed as one.
fn part(h: &mut Sha256, pieces: &[&str]) {
    let len: usize = pieces.iter().map(|p| p.len()).sum();
    h.update((len as u64).to_be_bytes());
    for p in pieces {
        h.update(p.as_bytes());
    }
}

/// A fingerprint of evaluated values: SHA-256 over the length-prefixed
/// labels and values, in order.
pub fn fingerprint<'a>(values: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut h = Sha256::new();
    for (label, value) in values {
        for s in [label, value] {
            h.update((s.len() as u64).to_be_bytes());
            h.update(s.as_bytes());
        }
    }
    crate::verify::encoding::hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(attestors: Vec<(&'a str, &'a str)>) -> KeyParts<'a> {
        KeyParts {
            policy_hash: "p",
            function: Function::ImageSignatures,
            attestation: "",
            attestors,
            repository: "r.io/app",
            digest: "sha256:1",
        }
    }

    #[test]
    fn keys_bind_every_part_and_ignore_attestor_order() {
        let base = key(&parts(vec![("a", "1"), ("b", "2")]));
        assert_eq!(base, key(&parts(vec![("b", "2"), ("a", "1")])));
        let variants: Vec<fn(&mut KeyParts<'_>)> = vec![
            |k| k.policy_hash = "q",
            |k| k.function = Function::AttestationSignatures,
            |k| k.attestation = "x",
            |k| k.attestors = vec![("a", "1")],
            |k| k.attestors = vec![("ab", "1"), ("b", "2")],
            // The same names with other evaluated trust material.
            |k| k.attestors = vec![("a", "other key"), ("b", "2")],
            |k| k.repository = "r.io/other",
            |k| k.digest = "sha256:2",
        ];
        for change in variants {
            let mut p = parts(vec![("a", "1"), ("b", "2")]);
            change(&mut p);
            assert_ne!(base, key(&p));
        }
    }

    /// A prefix kept across images gives each the key it would get alone,
    /// whether its repository comes whole or in pieces, and keys have the
    /// layout the host's keys are hashed from (prefix hash, lowercase).
    #[test]
    fn a_kept_prefix_keys_each_image_as_alone() {
        let attestors = [("b", "2"), ("a", "1")];
        let prefix = KeyPrefix::new("p", Function::ImageSignatures, "", &attestors);
        for (repository, digest) in [("r.io/app", "sha256:1"), ("q.io/x/y", "sha256:2")] {
            let alone = key(&KeyParts {
                repository,
                digest,
                ..parts(attestors.to_vec())
            });
            let (registry, path) = repository.split_once('/').unwrap();
            assert_eq!(prefix.key(&[registry, "/", path], digest), alone);
            assert_eq!(prefix.key(&[repository], digest), alone);
        }
        let mut h = Sha256::new();
        for s in ["p", "verifyImageSignatures", "", "2", "a", "1", "b", "2"] {
            h.update((s.len() as u64).to_be_bytes());
            h.update(s.as_bytes());
        }
        let prefix = crate::verify::encoding::hex(&h.finalize());
        let want = format!("v3:{prefix}:8:r.io/appsha256:1");
        assert_eq!(key(&parts(attestors.to_vec())), want);
    }

    /// A repository that ends like a digest begins, or a digest that begins
    /// like a repository ends, still gives its own key.
    #[test]
    fn the_repository_and_digest_never_run_together() {
        let a = key(&KeyParts {
            repository: "r.io/appsha256",
            digest: ":1",
            ..parts(vec![])
        });
        let b = key(&KeyParts {
            repository: "r.io/app",
            digest: "sha256:1",
            ..parts(vec![])
        });
        assert_ne!(a, b);
    }

    #[test]
    fn fingerprints_bind_labels_values_and_order() {
        let base = fingerprint([("key", "A"), ("cert", "")]);
        assert_ne!(base, fingerprint([("key", "B"), ("cert", "")]));
        assert_ne!(base, fingerprint([("cert", "A"), ("key", "")]));
        assert_ne!(base, fingerprint([("key", ""), ("cert", "A")]));
        assert_ne!(fingerprint([("k", "ab")]), fingerprint([("ka", "b")]));
    }
}
