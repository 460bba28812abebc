//! Key pairs for every key kind cosign signs or verifies with, derived
//! deterministically from a seed string, with SPKI PEM public keys.

use chacha20::rand_core::SeedableRng;
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey};
use sha2::{Digest, Sha256, Sha384, Sha512};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A key kind and the signature scheme it signs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// ECDSA P-256 (cosign's default); ASN.1 DER signatures.
    P256,
    /// ECDSA P-384; ASN.1 DER signatures.
    P384,
    /// RSA-2048, PKCS#1 v1.5.
    Rsa2048,
    /// RSA-2048, PSS (MGF1 with the same hash, salt length = hash length).
    Rsa2048Pss,
    /// Ed25519, pure (older cosign signatures).
    Ed25519,
    /// Ed25519ph: Ed25519 over SHA-512(message), empty context (cosign's default for Ed25519).
    Ed25519ph,
}

impl KeyKind {
    pub const ALL: [KeyKind; 6] = [
        KeyKind::P256,
        KeyKind::P384,
        KeyKind::Rsa2048,
        KeyKind::Rsa2048Pss,
        KeyKind::Ed25519,
        KeyKind::Ed25519ph,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KeyKind::P256 => "p256",
            KeyKind::P384 => "p384",
            KeyKind::Rsa2048 => "rsa2048",
            KeyKind::Rsa2048Pss => "rsa2048-pss",
            KeyKind::Ed25519 => "ed25519",
            KeyKind::Ed25519ph => "ed25519ph",
        }
    }
}

/// The message hash of a signature. cosign hashes with SHA-256 for every key
/// type unless told otherwise, so that is the default everywhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SigHash {
    #[default]
    Sha256,
    Sha384,
    Sha512,
}

impl SigHash {
    pub fn digest(self, msg: &[u8]) -> Vec<u8> {
        match self {
            SigHash::Sha256 => Sha256::digest(msg).to_vec(),
            SigHash::Sha384 => Sha384::digest(msg).to_vec(),
            SigHash::Sha512 => Sha512::digest(msg).to_vec(),
        }
    }

    /// The name openssl's `dgst` takes.
    pub fn openssl(self) -> &'static str {
        match self {
            SigHash::Sha256 => "-sha256",
            SigHash::Sha384 => "-sha384",
            SigHash::Sha512 => "-sha512",
        }
    }
}

#[derive(Clone)]
enum Secret {
    P256(p256::ecdsa::SigningKey),
    P384(p384::ecdsa::SigningKey),
    Rsa(Box<rsa::PrivateKey>),
    Ed(ed25519_dalek::SigningKey),
}

/// A private key and its kind. Same kind + seed = same key, every run.
#[derive(Clone)]
pub struct KeyPair {
    pub kind: KeyKind,
    secret: Secret,
    /// The hash [`KeyPair::sign`] uses (ignored by Ed25519 kinds).
    pub hash: SigHash,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyPair({}, {})", self.kind.name(), self.key_id_hex())
    }
}

fn seed_bytes(label: &str, seed: &str, counter: u32) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"ivpol-test-key\0");
    h.update(label.as_bytes());
    h.update([0]);
    h.update(seed.as_bytes());
    h.update(counter.to_be_bytes());
    h.finalize().into()
}

fn rsa_key(seed: &str) -> rsa::PrivateKey {
    static CACHE: OnceLock<Mutex<HashMap<String, rsa::PrivateKey>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(k) = cache.lock().expect("rsa cache").get(seed) {
        return k.clone();
    }
    let mut rng = chacha20::ChaCha20Rng::from_seed(seed_bytes("rsa", seed, 0));
    let key = rsa::PrivateKey::new(&mut rng, 2048).expect("RSA-2048 key generation");
    cache
        .lock()
        .expect("rsa cache")
        .insert(seed.to_string(), key.clone());
    key
}

impl KeyPair {
    /// The default key of this kind (seed = the kind's name).
    pub fn new(kind: KeyKind) -> KeyPair {
        KeyPair::from_seed(kind, kind.name())
    }

    /// A key derived from `seed`: different seeds give unrelated keys.
    pub fn from_seed(kind: KeyKind, seed: &str) -> KeyPair {
        let secret = match kind {
            KeyKind::P256 => Secret::P256(
                (0..)
                    .find_map(|i| {
                        p256::ecdsa::SigningKey::from_slice(&seed_bytes("p256", seed, i)).ok()
                    })
                    .expect("a P-256 scalar"),
            ),
            KeyKind::P384 => Secret::P384(
                (0..)
                    .find_map(|i| {
                        let mut b = seed_bytes("p384", seed, i).to_vec();
                        b.extend_from_slice(&seed_bytes("p384b", seed, i)[..16]);
                        p384::ecdsa::SigningKey::from_slice(&b).ok()
                    })
                    .expect("a P-384 scalar"),
            ),
            KeyKind::Rsa2048 | KeyKind::Rsa2048Pss => Secret::Rsa(Box::new(rsa_key(seed))),
            KeyKind::Ed25519 | KeyKind::Ed25519ph => Secret::Ed(
                ed25519_dalek::SigningKey::from_bytes(&seed_bytes("ed25519", seed, 0)),
            ),
        };
        KeyPair {
            kind,
            secret,
            hash: SigHash::Sha256,
        }
    }

    /// The same key signing with another hash (e.g. P-384 with SHA-384).
    pub fn with_hash(mut self, hash: SigHash) -> KeyPair {
        self.hash = hash;
        self
    }

    /// SubjectPublicKeyInfo, DER.
    pub fn spki_der(&self) -> Vec<u8> {
        let doc = match &self.secret {
            Secret::P256(k) => k.verifying_key().to_public_key_der(),
            Secret::P384(k) => k.verifying_key().to_public_key_der(),
            Secret::Rsa(k) => k.to_public_key().to_public_key_der(),
            Secret::Ed(k) => k.verifying_key().to_public_key_der(),
        };
        doc.expect("SPKI encoding").as_bytes().to_vec()
    }

    /// `-----BEGIN PUBLIC KEY-----` (what `cosign.pub` and Kyverno's `publicKeys` hold).
    pub fn public_pem(&self) -> String {
        super::der::pem("PUBLIC KEY", &self.spki_der())
    }

    /// PKCS#8 DER of the private key.
    pub fn pkcs8_der(&self) -> Vec<u8> {
        let doc = match &self.secret {
            Secret::P256(k) => k.to_pkcs8_der(),
            Secret::P384(k) => k.to_pkcs8_der(),
            Secret::Rsa(k) => k.to_pkcs8_der(),
            Secret::Ed(k) => k.to_pkcs8_der(),
        };
        doc.expect("PKCS#8 encoding").as_bytes().to_vec()
    }

    /// `-----BEGIN PRIVATE KEY-----` (PKCS#8; `cosign import-key-pair` takes it).
    pub fn private_pem(&self) -> String {
        super::der::pem("PRIVATE KEY", &self.pkcs8_der())
    }

    /// SHA-256 of the SPKI DER: a Rekor or CT log ID, a bundle key hint.
    pub fn key_id(&self) -> [u8; 32] {
        Sha256::digest(self.spki_der()).into()
    }

    pub fn key_id_hex(&self) -> String {
        super::hex(&self.key_id())
    }

    /// The trusted_root `keyDetails` name of this key and scheme.
    pub fn key_details(&self) -> &'static str {
        match (self.kind, self.hash) {
            (KeyKind::P256, _) => "PKIX_ECDSA_P256_SHA_256",
            (KeyKind::P384, _) => "PKIX_ECDSA_P384_SHA_384",
            (KeyKind::Rsa2048, _) => "PKIX_RSA_PKCS1V15_2048_SHA256",
            (KeyKind::Rsa2048Pss, _) => "PKIX_RSA_PSS_2048_SHA256",
            (KeyKind::Ed25519, _) => "PKIX_ED25519",
            (KeyKind::Ed25519ph, _) => "PKIX_ED25519_PH",
        }
    }

    /// Signs `msg` with this kind's scheme and [`KeyPair::hash`]. ECDSA
    /// signatures are ASN.1 DER; RSA and Ed25519 are raw.
    pub fn sign(&self, msg: &[u8]) -> Vec<u8> {
        self.sign_with(msg, self.hash)
    }

    pub fn sign_with(&self, msg: &[u8], hash: SigHash) -> Vec<u8> {
        use p256::ecdsa::signature::hazmat::PrehashSigner;
        use rsa::signature::{RandomizedSigner, SignatureEncoding, Signer};
        let digest = hash.digest(msg);
        match &self.secret {
            Secret::P256(k) => {
                let sig: p256::ecdsa::Signature = k.sign_prehash(&digest).expect("ECDSA P-256");
                sig.to_der().as_bytes().to_vec()
            }
            Secret::P384(k) => {
                let sig: p384::ecdsa::Signature = k.sign_prehash(&digest).expect("ECDSA P-384");
                sig.to_der().as_bytes().to_vec()
            }
            Secret::Rsa(k) => {
                let k = (**k).clone();
                // PSS salts come from a generator seeded by the message: deterministic.
                let mut rng = chacha20::ChaCha20Rng::from_seed(Sha256::digest(msg).into());
                match (self.kind, hash) {
                    (KeyKind::Rsa2048Pss, SigHash::Sha256) => {
                        rsa::pss::SigningKey::<Sha256>::new(k)
                            .sign_with_rng(&mut rng, msg)
                            .to_vec()
                    }
                    (KeyKind::Rsa2048Pss, SigHash::Sha384) => {
                        rsa::pss::SigningKey::<Sha384>::new(k)
                            .sign_with_rng(&mut rng, msg)
                            .to_vec()
                    }
                    (KeyKind::Rsa2048Pss, SigHash::Sha512) => {
                        rsa::pss::SigningKey::<Sha512>::new(k)
                            .sign_with_rng(&mut rng, msg)
                            .to_vec()
                    }
                    (_, SigHash::Sha256) => rsa::pkcs1v15::SigningKey::<Sha256>::new(k)
                        .sign(msg)
                        .to_vec(),
                    (_, SigHash::Sha384) => rsa::pkcs1v15::SigningKey::<Sha384>::new(k)
                        .sign(msg)
                        .to_vec(),
                    (_, SigHash::Sha512) => rsa::pkcs1v15::SigningKey::<Sha512>::new(k)
                        .sign(msg)
                        .to_vec(),
                }
            }
            Secret::Ed(k) => {
                if self.kind == KeyKind::Ed25519ph {
                    k.sign_prehashed(Sha512::new().chain_update(msg), None)
                        .expect("Ed25519ph")
                        .to_bytes()
                        .to_vec()
                } else {
                    ed25519_dalek::Signer::sign(k, msg).to_bytes().to_vec()
                }
            }
        }
    }

    /// Checks a signature of this key (a self-check; the cross-checks use openssl).
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        use p256::ecdsa::signature::hazmat::PrehashVerifier;
        use rsa::signature::Verifier;
        let digest = self.hash.digest(msg);
        match &self.secret {
            Secret::P256(k) => p256::ecdsa::Signature::from_der(sig)
                .map(|s| k.verifying_key().verify_prehash(&digest, &s).is_ok())
                .unwrap_or(false),
            Secret::P384(k) => p384::ecdsa::Signature::from_der(sig)
                .map(|s| k.verifying_key().verify_prehash(&digest, &s).is_ok())
                .unwrap_or(false),
            Secret::Rsa(k) => {
                let pk = k.to_public_key();
                let Ok(s) = rsa::pkcs1v15::Signature::try_from(sig) else {
                    return false;
                };
                match (self.kind, self.hash) {
                    (KeyKind::Rsa2048Pss, _) => {
                        let Ok(s) = rsa::pss::Signature::try_from(sig) else {
                            return false;
                        };
                        match self.hash {
                            SigHash::Sha256 => {
                                rsa::pss::VerifyingKey::<Sha256>::new(pk).verify(msg, &s)
                            }
                            SigHash::Sha384 => {
                                rsa::pss::VerifyingKey::<Sha384>::new(pk).verify(msg, &s)
                            }
                            SigHash::Sha512 => {
                                rsa::pss::VerifyingKey::<Sha512>::new(pk).verify(msg, &s)
                            }
                        }
                        .is_ok()
                    }
                    (_, SigHash::Sha256) => rsa::pkcs1v15::VerifyingKey::<Sha256>::new(pk)
                        .verify(msg, &s)
                        .is_ok(),
                    (_, SigHash::Sha384) => rsa::pkcs1v15::VerifyingKey::<Sha384>::new(pk)
                        .verify(msg, &s)
                        .is_ok(),
                    (_, SigHash::Sha512) => rsa::pkcs1v15::VerifyingKey::<Sha512>::new(pk)
                        .verify(msg, &s)
                        .is_ok(),
                }
            }
            Secret::Ed(k) => {
                let Ok(s) = ed25519_dalek::Signature::from_slice(sig) else {
                    return false;
                };
                if self.kind == KeyKind::Ed25519ph {
                    k.verifying_key()
                        .verify_prehashed(Sha512::new().chain_update(msg), None, &s)
                        .is_ok()
                } else {
                    k.verifying_key().verify_strict(msg, &s).is_ok()
                }
            }
        }
    }
}
