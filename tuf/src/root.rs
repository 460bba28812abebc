//! A trusted root: its keys, each usable for exactly one signature scheme,
//! and the thresholds of distinct keys each role's metadata must be signed
//! by.

use std::collections::{BTreeMap, BTreeSet};

use super::metadata::{Envelope, KeyJson, RoleJson, RootJson};
use super::{KeyProblem, SignatureProblem, TufError};
use ivpol_verify::encoding::unhex;
use ivpol_verify::keys::{HashAlgorithm, KeySpec, PublicKey, Scheme};

/// A key usable for exactly one signature scheme.
struct Key {
    key: PublicKey,
    scheme: Scheme,
}

/// SPKI DER prefixes for raw keys given in hex.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

impl Key {
    fn parse(k: &KeyJson) -> Result<Key, KeyProblem> {
        let public = k.keyval.public.trim();
        match (k.keytype.as_str(), k.scheme.as_str()) {
            ("ed25519", "ed25519") => {
                let raw = unhex("ed25519 key", public).map_err(KeyProblem::Hex)?;
                if raw.len() != 32 {
                    return Err(KeyProblem::Ed25519Length(raw.len()));
                }
                let der = [ED25519_SPKI_PREFIX.as_slice(), &raw].concat();
                let key = PublicKey::from_spki_der(&der).map_err(KeyProblem::Key)?;
                Ok(Key {
                    key,
                    scheme: Scheme::Ed25519,
                })
            }
            ("ecdsa" | "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256") => {
                let key = if public.starts_with("-----BEGIN") {
                    PublicKey::read_pem(public)
                } else {
                    let raw = unhex("ecdsa key", public).map_err(KeyProblem::Hex)?;
                    PublicKey::from_spki_der(&[P256_SPKI_PREFIX.as_slice(), &raw].concat())
                }
                .map_err(KeyProblem::Key)?;
                if key.key_spec() != KeySpec::Ec(256) {
                    return Err(KeyProblem::NotP256(key.key_spec()));
                }
                Ok(Key {
                    key,
                    scheme: Scheme::Ecdsa(HashAlgorithm::Sha256),
                })
            }
            (keytype, scheme) => Err(KeyProblem::Unsupported {
                keytype: keytype.to_string(),
                scheme: scheme.to_string(),
            }),
        }
    }
}

/// A verified root: its keys (those that parse) and roles.
pub(crate) struct Root {
    pub(crate) version: u64,
    pub(crate) expires: i64,
    pub(crate) expires_text: String,
    keys: BTreeMap<String, Result<Key, KeyProblem>>,
    roles: BTreeMap<String, RoleJson>,
    pub(crate) consistent_snapshot: bool,
}

impl Root {
    pub(crate) fn from_envelope(env: &Envelope) -> Result<Root, TufError> {
        let (common, expires) = env.common("root")?;
        let json: RootJson = env.decode()?;
        for role in ["root", "timestamp", "snapshot", "targets"] {
            let Some(r) = json.roles.get(role) else {
                return Err(TufError::NoRole {
                    file: env.file.clone(),
                    role,
                });
            };
            if r.threshold == 0 {
                return Err(TufError::ZeroThreshold {
                    file: env.file.clone(),
                    role,
                });
            }
        }
        Ok(Root {
            version: common.version,
            expires,
            expires_text: common.expires,
            keys: ivpol_refs::sort::map(
                json.keys.iter().map(|(id, k)| (id.clone(), Key::parse(k))),
            ),
            roles: json.roles,
            consistent_snapshot: json.consistent_snapshot,
        })
    }

    /// Checks that `env` carries signatures of at least the threshold of
    /// distinct keys of `role`.
    pub(crate) fn verify(&self, role: &'static str, env: &Envelope) -> Result<(), TufError> {
        let Some(r) = self.roles.get(role) else {
            return Err(TufError::RootLacksRole(role));
        };
        let mut tried = BTreeSet::new();
        let mut signed_by = BTreeSet::new();
        let mut problems = Vec::new();
        for s in &env.signatures {
            if signed_by.len() as u64 >= r.threshold {
                break;
            }
            if !r.keyids.contains(&s.keyid) || !tried.insert(s.keyid.as_str()) {
                continue;
            }
            let short = s.keyid.get(..8).unwrap_or(&s.keyid);
            let key = match self.keys.get(&s.keyid) {
                None => {
                    problems.push(SignatureProblem::NotInRoot(short.to_string()));
                    continue;
                }
                Some(Err(problem)) => {
                    problems.push(SignatureProblem::Key {
                        key: short.to_string(),
                        problem: problem.clone(),
                    });
                    continue;
                }
                Some(Ok(k)) => k,
            };
            let ok = unhex("signature", &s.sig)
                .is_ok_and(|sig| key.key.verify_scheme(key.scheme, &env.canonical, &sig));
            if !ok {
                problems.push(SignatureProblem::DoesNotVerify(short.to_string()));
                continue;
            }
            // The same key listed under two ids counts once.
            signed_by.insert(key.key.spki_der().to_vec());
        }
        let n = signed_by.len() as u64;
        if n >= r.threshold {
            return Ok(());
        }
        Err(TufError::Threshold {
            file: env.file.clone(),
            role,
            valid: n,
            required: r.threshold,
            problems,
        })
    }
}
