//! Public keys and signature checks: ECDSA P-256/P-384/P-521, RSA (≥ 2048
//! bits, PKCS#1 v1.5 and PSS) and Ed25519 (pure and Ed25519ph), as cosign
//! and Sigstore use them (<https://github.com/sigstore/cosign/blob/main/specs/SIGNATURE_SPEC.md>).

use std::fmt;

use der::{Decode, Encode};
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::traits::PublicKeyParts;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};
use spki::{DecodePublicKey, EncodePublicKey};

use super::encoding::{pem_blocks, EncodingError};
use super::{Reason, Result};

/// Largest PEM text accepted for one key.
const MAX_KEY_PEM: usize = 64 * 1024;
/// RSA moduli outside [2048, 16384] bits are refused.
const MIN_RSA_BITS: usize = 2048;
const MAX_RSA_BITS: usize = 16384;

crate::debug_as_display!(KeyError);
/// Why a public key was refused or a signature did not verify with it.
/// Every failure is [`Reason::Malformed`] here: the stage that checked the
/// signature gives it its class (`Classify::class`).
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A hash name other than the four supported.
    #[error("unsupported hash algorithm {0:?} (expected sha224, sha256, sha384 or sha512)")]
    UnsupportedHash(String),
    /// The PEM text is over 64 KiB.
    #[error("public key PEM larger than 64 KiB")]
    PemTooLarge,
    /// The PEM text holds no public key block.
    #[error("no PUBLIC KEY or RSA PUBLIC KEY PEM block found")]
    NoKeyBlock,
    /// PEM text that cannot be decoded.
    #[error(transparent)]
    Pem(#[from] EncodingError),
    /// An `RSA PUBLIC KEY` block that is not PKCS#1.
    #[error("invalid PKCS#1 RSA public key: {0}")]
    Pkcs1(#[source] rsa::pkcs1::Error),
    /// A PKCS#1 RSA key that could not be encoded as a SubjectPublicKeyInfo.
    #[error("re-encoding RSA key: {0}")]
    RsaReencoding(#[source] spki::Error),
    /// A parsed SubjectPublicKeyInfo that could not be encoded again.
    #[error("re-encoding public key: {0}")]
    Reencoding(#[source] der::Error),
    /// DER that is not a SubjectPublicKeyInfo.
    #[error("invalid SubjectPublicKeyInfo: {0}")]
    Spki(#[source] der::Error),
    /// A key of a known algorithm that does not parse.
    #[error("invalid {algorithm} public key: {source}")]
    InvalidKey {
        /// The key's algorithm.
        algorithm: der::asn1::ObjectIdentifier,
        /// The parser's error.
        source: Box<spki::Error>,
    },
    /// An elliptic-curve key on a curve (its OID) other than the three.
    #[error("unsupported elliptic curve {0:?} (expected P-256, P-384 or P-521)")]
    UnsupportedCurve(String),
    /// An RSA modulus outside the accepted sizes.
    #[error("RSA key of {0} bits refused (must be {MIN_RSA_BITS}..{MAX_RSA_BITS})")]
    RsaSize(usize),
    /// A key algorithm that is not supported.
    #[error("unsupported public key algorithm {0}")]
    UnsupportedAlgorithm(der::asn1::ObjectIdentifier),
    /// The signature does not verify with the key (its type named).
    #[error("{0} signature does not verify")]
    BadSignature(KeySpec),
    /// A digest of the wrong length for its hash.
    #[error("{hash} digest must be {expected} bytes, got {got}")]
    DigestLength {
        /// The hash's name.
        hash: &'static str,
        /// Its output length.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The signature over a digest does not verify with the key.
    #[error("{algorithm} signature over {hash} digest does not verify")]
    BadDigestSignature {
        /// The key's type.
        algorithm: KeySpec,
        /// The digest's hash.
        hash: &'static str,
    },
    /// An Ed25519 signature that is not 64 bytes.
    #[error("Ed25519 signature must be 64 bytes, got {0}")]
    Ed25519Length(usize),
    /// The Ed25519 signature does not verify.
    #[error("Ed25519 signature does not verify")]
    Ed25519,
}

impl KeyError {
    /// The class of this failure: [`Reason::Malformed`] until a stage
    /// classes it.
    pub fn reason(&self) -> Reason {
        match self {
            KeyError::Pem(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

/// The message digest of a signature scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl HashAlgorithm {
    /// Kyverno's `key.hashAlgorithm`: `""` and `sha256` are SHA-256; also
    /// `sha224`, `sha384`, `sha512`.
    pub fn from_kyverno(name: &str) -> Result<HashAlgorithm> {
        match name {
            "" | "sha256" => Ok(HashAlgorithm::Sha256),
            "sha224" => Ok(HashAlgorithm::Sha224),
            "sha384" => Ok(HashAlgorithm::Sha384),
            "sha512" => Ok(HashAlgorithm::Sha512),
            other => Err(KeyError::UnsupportedHash(other.to_string()).into()),
        }
    }

    /// The digest of `message`.
    pub fn digest(self, message: &[u8]) -> Vec<u8> {
        match self {
            HashAlgorithm::Sha224 => Sha224::digest(message).to_vec(),
            HashAlgorithm::Sha256 => Sha256::digest(message).to_vec(),
            HashAlgorithm::Sha384 => Sha384::digest(message).to_vec(),
            HashAlgorithm::Sha512 => Sha512::digest(message).to_vec(),
        }
    }

    /// Digest length in bytes.
    pub fn output_len(self) -> usize {
        match self {
            HashAlgorithm::Sha224 => 28,
            HashAlgorithm::Sha256 => 32,
            HashAlgorithm::Sha384 => 48,
            HashAlgorithm::Sha512 => 64,
        }
    }

    /// Kyverno's name for it (`sha256`, ...).
    pub fn name(self) -> &'static str {
        match self {
            HashAlgorithm::Sha224 => "sha224",
            HashAlgorithm::Sha256 => "sha256",
            HashAlgorithm::Sha384 => "sha384",
            HashAlgorithm::Sha512 => "sha512",
        }
    }
}

#[derive(Clone)]
enum Kind {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
    P521(p521::ecdsa::VerifyingKey),
    Rsa(rsa::PublicKey),
    Ed25519(ed25519_dalek::VerifyingKey),
}

/// A public key that verifies signatures, with its SPKI DER encoding.
#[derive(Clone)]
pub struct PublicKey {
    kind: Kind,
    spki: Vec<u8>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.algorithm())
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &PublicKey) -> bool {
        self.spki == other.spki
    }
}
impl Eq for PublicKey {}

const OID_EC: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_P384: &str = "1.3.132.0.34";
const OID_P521: &str = "1.3.132.0.35";
const OID_RSA: &str = "1.2.840.113549.1.1.1";
const OID_ED25519: &str = "1.3.101.112";

impl PublicKey {
    /// A key from PEM: `PUBLIC KEY` (SPKI) or `RSA PUBLIC KEY` (PKCS#1).
    /// The first key block is used; other blocks are ignored. The
    /// attestors' entry point; [`PublicKey::read_pem`] says why as a
    /// [`KeyError`].
    pub fn from_pem(pem: &str) -> Result<PublicKey> {
        Ok(PublicKey::read_pem(pem)?)
    }

    /// As [`PublicKey::from_pem`].
    pub fn read_pem(pem: &str) -> Result<PublicKey, KeyError> {
        if pem.len() > MAX_KEY_PEM {
            return Err(KeyError::PemTooLarge);
        }
        let blocks = pem_blocks(pem, 16, MAX_KEY_PEM)?;
        for block in blocks {
            match block.label.as_str() {
                "PUBLIC KEY" => return PublicKey::from_spki_der(&block.der),
                "RSA PUBLIC KEY" => return PublicKey::from_pkcs1_der(&block.der),
                _ => continue,
            }
        }
        Err(KeyError::NoKeyBlock)
    }

    /// An RSA key from PKCS#1 `RSAPublicKey` DER.
    pub fn from_pkcs1_der(der: &[u8]) -> Result<PublicKey, KeyError> {
        let key = rsa::PublicKey::from_pkcs1_der(der).map_err(KeyError::Pkcs1)?;
        let spki = key.to_public_key_der().map_err(KeyError::RsaReencoding)?;
        PublicKey::from_spki_der(spki.as_bytes())
    }

    /// A key from SubjectPublicKeyInfo DER.
    pub fn from_spki_der(der: &[u8]) -> Result<PublicKey, KeyError> {
        let info = spki::SubjectPublicKeyInfoRef::from_der(der).map_err(KeyError::Spki)?;
        let algorithm = info.algorithm.oid;
        let bad = |source| KeyError::InvalidKey {
            algorithm,
            source: Box::new(source),
        };
        let alg = algorithm.to_string();
        let kind = match alg.as_str() {
            OID_EC => {
                let curve = info
                    .algorithm
                    .parameters
                    .as_ref()
                    .and_then(|p| p.decode_as::<der::asn1::ObjectIdentifier>().ok())
                    .map(|o| o.to_string())
                    .unwrap_or_default();
                match curve.as_str() {
                    OID_P256 => Kind::P256(
                        p256::ecdsa::VerifyingKey::from_public_key_der(der).map_err(bad)?,
                    ),
                    OID_P384 => Kind::P384(
                        p384::ecdsa::VerifyingKey::from_public_key_der(der).map_err(bad)?,
                    ),
                    OID_P521 => Kind::P521(
                        p521::ecdsa::VerifyingKey::from_public_key_der(der).map_err(bad)?,
                    ),
                    other => return Err(KeyError::UnsupportedCurve(other.to_string())),
                }
            }
            OID_RSA => {
                let key = rsa::PublicKey::from_public_key_der(der).map_err(bad)?;
                let bits = key.n().bit_width() as usize;
                if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
                    return Err(KeyError::RsaSize(bits));
                }
                Kind::Rsa(key)
            }
            OID_ED25519 => {
                Kind::Ed25519(ed25519_dalek::VerifyingKey::from_public_key_der(der).map_err(bad)?)
            }
            _ => return Err(KeyError::UnsupportedAlgorithm(algorithm)),
        };
        // Keep a canonical DER encoding (the input may carry trailing data
        // that the parser above rejected, so it is exact already).
        let spki = info.to_der().map_err(KeyError::Reencoding)?;
        Ok(PublicKey { kind, spki })
    }

    /// The SubjectPublicKeyInfo DER.
    pub fn spki_der(&self) -> &[u8] {
        &self.spki
    }

    /// SHA-256 of the SPKI DER: Sigstore's log id / key id.
    pub fn key_id(&self) -> [u8; 32] {
        Sha256::digest(&self.spki).into()
    }

    /// Short description, e.g. `ECDSA P-256`.
    pub fn algorithm(&self) -> String {
        self.key_spec().to_string()
    }

    /// Whether this is an ECDSA key (Rekor SETs are ECDSA).
    pub fn is_ecdsa(&self) -> bool {
        matches!(self.kind, Kind::P256(_) | Kind::P384(_) | Kind::P521(_))
    }

    /// Verifies `signature` over `message`.
    ///
    /// - ECDSA: DER or raw fixed-size `r‖s` signature; with `hash` None,
    ///   SHA-256 is tried first, then the curve's own hash (cosign defaults to
    ///   SHA-256 for every key).
    /// - RSA: PKCS#1 v1.5, then PSS (any salt length); `hash` None is SHA-256.
    /// - Ed25519: pure Ed25519, then Ed25519ph (SHA-512, empty context);
    ///   `hash` is ignored.
    pub fn verify(
        &self,
        message: &[u8],
        signature: &[u8],
        hash: Option<HashAlgorithm>,
    ) -> Result<(), KeyError> {
        let hashes: Vec<HashAlgorithm> = match (hash, &self.kind) {
            (Some(h), _) => vec![h],
            (None, Kind::P384(_)) => vec![HashAlgorithm::Sha256, HashAlgorithm::Sha384],
            (None, Kind::P521(_)) => vec![HashAlgorithm::Sha256, HashAlgorithm::Sha512],
            (None, _) => vec![HashAlgorithm::Sha256],
        };
        if let Kind::Ed25519(key) = &self.kind {
            return ed25519_verify(key, message, signature);
        }
        for h in hashes {
            if self.verify_digest(&h.digest(message), h, signature).is_ok() {
                return Ok(());
            }
        }
        Err(KeyError::BadSignature(self.key_spec()))
    }

    /// Verifies `signature` over a message whose `hash` digest is `digest`
    /// (Sigstore bundles' `messageSignature`). Ed25519 accepts only a
    /// SHA-512 digest, checked as Ed25519ph.
    pub fn verify_digest(
        &self,
        digest: &[u8],
        hash: HashAlgorithm,
        signature: &[u8],
    ) -> Result<(), KeyError> {
        if digest.len() != hash.output_len() {
            return Err(KeyError::DigestLength {
                hash: hash.name(),
                expected: hash.output_len(),
                got: digest.len(),
            });
        }
        let ok = match &self.kind {
            Kind::P256(key) => ecdsa_p256(&self.spki, key, digest, signature),
            Kind::P384(key) => ecdsa_p384(key, digest, signature),
            Kind::P521(key) => ecdsa_p521(key, digest, signature),
            Kind::Rsa(key) => rsa_verify(key, digest, hash, signature),
            Kind::Ed25519(key) => {
                hash == HashAlgorithm::Sha512 && ed25519ph_digest(key, digest, signature)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(KeyError::BadDigestSignature {
                algorithm: self.key_spec(),
                hash: hash.name(),
            })
        }
    }
}

/// One exact signature scheme (for X.509 signatures, whose algorithm
/// identifier fixes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// ECDSA over the hash, ASN.1 DER signature.
    Ecdsa(HashAlgorithm),
    /// RSA PKCS#1 v1.5 over the hash.
    RsaPkcs1(HashAlgorithm),
    /// RSASSA-PSS over the hash (any salt length).
    RsaPss(HashAlgorithm),
    /// Ed25519 (pure).
    Ed25519,
    /// ECDSA with only the fixed-size raw `r‖s` encoding (JWS/COSE).
    EcdsaRaw(HashAlgorithm),
    /// RSASSA-PSS, MGF1 with the same hash, salt length = hash length.
    RsaPssSaltHashLen(HashAlgorithm),
}

/// A key's type and size (bits). Its text is the key's short
/// description ([`PublicKey::algorithm`]): `ECDSA P-256`, `RSA-2048`,
/// `Ed25519`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySpec {
    /// An elliptic curve key, by the curve's bit size.
    Ec(usize),
    /// An RSA key, by its modulus size.
    Rsa(usize),
    /// An Ed25519 key.
    Ed25519,
}

impl fmt::Display for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySpec::Ec(bits) => write!(f, "ECDSA P-{bits}"),
            KeySpec::Rsa(bits) => write!(f, "RSA-{bits}"),
            KeySpec::Ed25519 => f.write_str("Ed25519"),
        }
    }
}

impl PublicKey {
    /// Type and size of the key.
    pub fn key_spec(&self) -> KeySpec {
        match &self.kind {
            Kind::P256(_) => KeySpec::Ec(256),
            Kind::P384(_) => KeySpec::Ec(384),
            Kind::P521(_) => KeySpec::Ec(521),
            Kind::Rsa(k) => KeySpec::Rsa(k.n().bit_width() as usize),
            Kind::Ed25519(_) => KeySpec::Ed25519,
        }
    }

    /// Verifies `signature` over `message` with exactly `scheme`; a key of
    /// another type never verifies.
    pub fn verify_scheme(&self, scheme: Scheme, message: &[u8], signature: &[u8]) -> bool {
        match (scheme, &self.kind) {
            (Scheme::Ecdsa(h), Kind::P256(k)) => {
                ecdsa_p256(&self.spki, k, &h.digest(message), signature)
            }
            (Scheme::Ecdsa(h), Kind::P384(k)) => ecdsa_p384(k, &h.digest(message), signature),
            (Scheme::Ecdsa(h), Kind::P521(k)) => ecdsa_p521(k, &h.digest(message), signature),
            (Scheme::RsaPkcs1(h), Kind::Rsa(k)) => rsa_pkcs1(k, &h.digest(message), h, signature),
            (Scheme::RsaPss(h), Kind::Rsa(k)) => rsa_pss(k, &h.digest(message), h, signature),
            (Scheme::EcdsaRaw(h), Kind::P256(k)) => {
                signature.len() == 64 && ecdsa_p256(&self.spki, k, &h.digest(message), signature)
            }
            (Scheme::EcdsaRaw(h), Kind::P384(k)) => {
                signature.len() == 96 && ecdsa_p384(k, &h.digest(message), signature)
            }
            (Scheme::EcdsaRaw(h), Kind::P521(k)) => {
                signature.len() == 132 && ecdsa_p521(k, &h.digest(message), signature)
            }
            (Scheme::RsaPssSaltHashLen(h), Kind::Rsa(k)) => {
                rsa_pss_salt(k, &h.digest(message), h, signature, Some(h.output_len()))
            }
            (Scheme::Ed25519, Kind::Ed25519(k)) => {
                use ed25519_dalek::Verifier;
                ed25519_dalek::Signature::from_slice(signature)
                    .is_ok_and(|sig| k.verify(message, &sig).is_ok())
            }
            _ => false,
        }
    }
}

macro_rules! ecdsa_check {
    ($name:ident, $parse:ident, $curve:ident, $len:expr) => {
        ecdsa_check!($parse, $curve, $len);

        fn $name(key: &$curve::ecdsa::VerifyingKey, digest: &[u8], signature: &[u8]) -> bool {
            use $curve::ecdsa::signature::hazmat::PrehashVerifier;
            $parse(signature).is_some_and(|sig| key.verify_prehash(digest, &sig).is_ok())
        }
    };
    ($parse:ident, $curve:ident, $len:expr) => {
        /// The signature, DER or `r || s`, with a low `s`.
        fn $parse(signature: &[u8]) -> Option<$curve::ecdsa::Signature> {
            let sig = match $curve::ecdsa::Signature::from_der(signature) {
                Ok(sig) => sig,
                Err(_) if signature.len() == $len => {
                    $curve::ecdsa::Signature::from_slice(signature).ok()?
                }
                Err(_) => return None,
            };
            // Go accepts high-S signatures; normalising keeps that behaviour
            // whatever the curve's default.
            Some(sig.normalize_s())
        }
    };
}

ecdsa_check!(p256_signature, p256, 64);
ecdsa_check!(ecdsa_p384, p384_signature, p384, 96);
ecdsa_check!(ecdsa_p521, p521_signature, p521, 132);

/// P-256 (`p256_tables`), with the key's precomputed table from its
/// second verification on; `spki` names the key.
fn ecdsa_p256(spki: &[u8], key: &p256::ecdsa::VerifyingKey, digest: &[u8], sig: &[u8]) -> bool {
    let Some(sig) = p256_signature(sig) else {
        return false;
    };
    match p256_tables::table_for(spki, key.as_affine()) {
        Some(table) => p256_tables::verify(&table, digest, &sig),
        None => p256_tables::verify_once(key.as_affine(), digest, &sig),
    }
}

fn rsa_verify(key: &rsa::PublicKey, digest: &[u8], hash: HashAlgorithm, sig: &[u8]) -> bool {
    rsa_pkcs1(key, digest, hash, sig) || rsa_pss(key, digest, hash, sig)
}

fn rsa_pkcs1(key: &rsa::PublicKey, digest: &[u8], hash: HashAlgorithm, sig: &[u8]) -> bool {
    use rsa::Pkcs1v15Sign;
    let pkcs1 = match hash {
        HashAlgorithm::Sha224 => Pkcs1v15Sign::new::<Sha224>(),
        HashAlgorithm::Sha256 => Pkcs1v15Sign::new::<Sha256>(),
        HashAlgorithm::Sha384 => Pkcs1v15Sign::new::<Sha384>(),
        HashAlgorithm::Sha512 => Pkcs1v15Sign::new::<Sha512>(),
    };
    key.verify(pkcs1, digest, sig).is_ok()
}

fn rsa_pss(key: &rsa::PublicKey, digest: &[u8], hash: HashAlgorithm, sig: &[u8]) -> bool {
    // Any salt length, as Go's rsa.PSSSaltLengthAuto when verifying.
    rsa_pss_salt(key, digest, hash, sig, None)
}

fn rsa_pss_salt(
    key: &rsa::PublicKey,
    digest: &[u8],
    hash: HashAlgorithm,
    sig: &[u8],
    salt_len: Option<usize>,
) -> bool {
    use rsa::Pss;
    fn pss<D: Digest + sha2::digest::FixedOutputReset>(salt_len: Option<usize>) -> Pss<D> {
        Pss {
            blinded: false,
            digest: D::new(),
            salt_len,
        }
    }
    match hash {
        HashAlgorithm::Sha224 => key.verify(pss::<Sha224>(salt_len), digest, sig).is_ok(),
        HashAlgorithm::Sha256 => key.verify(pss::<Sha256>(salt_len), digest, sig).is_ok(),
        HashAlgorithm::Sha384 => key.verify(pss::<Sha384>(salt_len), digest, sig).is_ok(),
        HashAlgorithm::Sha512 => key.verify(pss::<Sha512>(salt_len), digest, sig).is_ok(),
    }
}

fn ed25519_verify(
    key: &ed25519_dalek::VerifyingKey,
    message: &[u8],
    sig: &[u8],
) -> Result<(), KeyError> {
    use ed25519_dalek::Verifier;
    let Ok(signature) = ed25519_dalek::Signature::from_slice(sig) else {
        return Err(KeyError::Ed25519Length(sig.len()));
    };
    if key.verify(message, &signature).is_ok() {
        return Ok(());
    }
    let prehashed = Sha512::new().chain_update(message);
    if key
        .verify_prehashed(prehashed, Some(b""), &signature)
        .is_ok()
    {
        return Ok(());
    }
    Err(KeyError::Ed25519)
}

/// A "hasher" whose output is the digest fed to it: lets ed25519-dalek's
/// `verify_prehashed` take a digest computed elsewhere.
#[derive(Default, Clone)]
struct Precomputed(Vec<u8>);

impl sha2::digest::HashMarker for Precomputed {}
impl sha2::digest::Update for Precomputed {
    fn update(&mut self, data: &[u8]) {
        self.0.extend_from_slice(data);
    }
}
impl sha2::digest::OutputSizeUser for Precomputed {
    type OutputSize = sha2::digest::consts::U64;
}
impl sha2::digest::FixedOutput for Precomputed {
    fn finalize_into(self, out: &mut sha2::digest::Output<Self>) {
        for (o, b) in out.iter_mut().zip(self.0.iter()) {
            *o = *b;
        }
    }
}

fn ed25519ph_digest(key: &ed25519_dalek::VerifyingKey, digest: &[u8], sig: &[u8]) -> bool {
    let Ok(signature) = ed25519_dalek::Signature::from_slice(sig) else {
        return false;
    };
    if digest.len() != 64 {
        return false;
    }
    let mut pre = Precomputed::default();
    sha2::digest::Update::update(&mut pre, digest);
    key.verify_prehashed(pre, Some(b""), &signature).is_ok()
}

mod p256_tables;

#[cfg(test)]
pub(crate) mod tests;
