//! A TUF client (The Update Framework, specification 1.0, §5 "Detailed
//! client workflow") for one target of one repository, as Kyverno's `tuf`
//! attestor option uses it to read Sigstore's `trusted_root.json`.
//!
//! Pure: the trusted root's bytes, a [`Repository`] that hands out the
//! mirror's files, and the time in; the verified target out. Nothing is
//! kept between calls, so rollback is checked within one update: each
//! root is exactly one version after the last, and the snapshot and
//! targets versions are the ones the timestamp and snapshot name.
//!
//! Supported: `ed25519` keys (hex) and `ecdsa` / `ecdsa-sha2-nistp256`
//! keys (PEM or hex SEC1 point) with their schemes; signatures over the
//! OLPC canonical JSON of `signed` (securesystemslib's encoding); consistent
//! snapshots or not. Delegated targets are not followed: a target that is
//! only reachable through delegations is an error.
//!
//! It owns the TUF client alone and builds on ivpol-verify for the pieces
//! every verifier shares: keys, encodings, RFC 3339 times and
//! [`VerifyError`](ivpol_verify::VerifyError), which carries its errors. It
//! may import ivpol-verify and ivpol-refs only, never a crate above them
//! (no policies, no Kubernetes, no network: the mirror's files come in
//! through [`Repository`]), and ivpol-verify may not import it. It is its
//! own crate so that the verifier stays small and a change to TUF rebuilds
//! only what uses it.

// Nothing here needs unsafe code.
#![forbid(unsafe_code)]
// Every public item says what it is: the engine and the guest read this
// crate's API from its docs.
#![deny(missing_docs)]
// Public items are the ones the engine and the tests reach; the rest is
// `pub(crate)`, and the lint keeps it that way.
#![warn(unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};

pub use error::{KeyProblem, SignatureProblem, TufError};
use ivpol_verify::encoding::unhex;
use ivpol_verify::keys::{HashAlgorithm, KeySpec, PublicKey, Scheme};
use ivpol_verify::trust::parse_rfc3339;
use ivpol_verify::Result;

mod error;

/// Largest metadata file read (each of root, timestamp, snapshot, targets).
pub const MAX_METADATA: usize = 1 << 20;
/// Largest target read.
pub const MAX_TARGET: usize = 1 << 20;
/// Most root versions walked past the trusted one in one update.
pub const MAX_ROOT_ROTATIONS: u64 = 32;
/// The Sigstore trusted root's target name.
pub const TRUSTED_ROOT_TARGET: &str = "trusted_root.json";

/// Where the repository's files come from: `fetch(path, max)` returns the
/// file at `path` (relative to the mirror: `2.root.json`,
/// `timestamp.json`, `targets/<sha256>.trusted_root.json`), at most `max`
/// bytes, or `None` when the mirror does not have it (HTTP 404).
pub trait Repository {
    /// The file at `path`, at most `max` bytes, or `None` if the mirror has none.
    fn fetch(&self, path: &str, max: usize) -> Result<Option<Vec<u8>>>;
}

impl<F> Repository for F
where
    F: Fn(&str, usize) -> Result<Option<Vec<u8>>>,
{
    fn fetch(&self, path: &str, max: usize) -> Result<Option<Vec<u8>>> {
        self(path, max)
    }
}

/// The verified text of the repository's `trusted_root.json`, starting
/// from the trusted `root_json`, checked at unix time `now`.
pub fn trusted_root(root_json: &[u8], repo: &impl Repository, now: i64) -> Result<String> {
    let bytes = target(root_json, repo, TRUSTED_ROOT_TARGET, now)?;
    Ok(String::from_utf8(bytes).map_err(TufError::TrustedRootNotUtf8)?)
}

/// The verified bytes of top-level target `name`.
pub fn target(root_json: &[u8], repo: &impl Repository, name: &str, now: i64) -> Result<Vec<u8>> {
    verified_target(root_json, repo, name, now).map_err(|e| match e {
        // The repository's own failure, handed back as it came.
        TufError::Repository(e) => *e,
        e => e.into(),
    })
}

/// As [`target`].
fn verified_target(
    root_json: &[u8],
    repo: &impl Repository,
    name: &str,
    now: i64,
) -> Result<Vec<u8>, TufError> {
    let root = update_root(root_json, repo, now)?;
    let timestamp = timestamp(&root, repo, now)?;
    let snapshot = snapshot(&root, &timestamp, repo, now)?;
    let targets = targets(&root, &snapshot, repo, now)?;
    fetch_target(&root, &targets, repo, name)
}

// ------------------------------------------------------------ metadata

/// A metadata file: its `signed` part, the canonical bytes signed, and the
/// signatures.
struct Envelope {
    /// The file name, for errors.
    file: String,
    signed: Value,
    canonical: Vec<u8>,
    signatures: Vec<SignatureJson>,
}

#[derive(Deserialize)]
struct SignatureJson {
    keyid: String,
    sig: String,
}

#[derive(Deserialize)]
struct EnvelopeJson {
    signatures: Vec<SignatureJson>,
    signed: Value,
}

/// What every role's `signed` has.
#[derive(Deserialize)]
struct Common {
    #[serde(rename = "_type")]
    kind: String,
    spec_version: String,
    version: u64,
    expires: String,
}

#[derive(Deserialize)]
struct RootJson {
    keys: BTreeMap<String, KeyJson>,
    roles: BTreeMap<String, RoleJson>,
    #[serde(default)]
    consistent_snapshot: bool,
}

#[derive(Deserialize)]
struct KeyJson {
    keytype: String,
    scheme: String,
    keyval: KeyValJson,
}

#[derive(Deserialize)]
struct KeyValJson {
    public: String,
}

#[derive(Deserialize, Clone)]
struct RoleJson {
    keyids: Vec<String>,
    threshold: u64,
}

#[derive(Deserialize)]
struct MetaJson {
    meta: BTreeMap<String, MetaFile>,
}

#[derive(Deserialize, Clone)]
struct MetaFile {
    version: u64,
    length: Option<u64>,
    hashes: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct TargetsJson {
    targets: BTreeMap<String, TargetFile>,
    delegations: Option<DelegationsJson>,
}

#[derive(Deserialize)]
struct TargetFile {
    length: u64,
    hashes: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct DelegationsJson {
    #[serde(default)]
    roles: Vec<Value>,
}

impl Envelope {
    fn parse(file: &str, bytes: &[u8]) -> Result<Envelope, TufError> {
        if bytes.len() > MAX_METADATA {
            return Err(TufError::TooLarge {
                file: file.to_string(),
                size: bytes.len(),
                max: MAX_METADATA,
            });
        }
        let json: EnvelopeJson =
            serde_json::from_slice(bytes).map_err(|e| TufError::NotMetadata {
                file: file.to_string(),
                source: e.into(),
            })?;
        if !json.signed.is_object() {
            return Err(TufError::SignedNotObject(file.to_string()));
        }
        let mut canonical = Vec::new();
        canonical_json(&json.signed, &mut canonical).map_err(|number| TufError::NotCanonical {
            file: file.to_string(),
            number,
        })?;
        Ok(Envelope {
            file: file.to_string(),
            signed: json.signed,
            canonical,
            signatures: json.signatures,
        })
    }

    /// `signed` as `T`.
    fn decode<T: DeserializeOwned>(&self) -> Result<T, TufError> {
        T::deserialize(&self.signed).map_err(|e| TufError::InvalidSigned {
            file: self.file.clone(),
            source: e.into(),
        })
    }

    /// The common fields, checked: `_type` is `kind`, the spec version is
    /// 1.x, the version positive and `expires` a time.
    fn common(&self, kind: &'static str) -> Result<(Common, i64), TufError> {
        let c: Common = self.decode()?;
        if c.kind != kind {
            return Err(TufError::WrongType {
                file: self.file.clone(),
                found: c.kind,
                expected: kind,
            });
        }
        if c.spec_version.split('.').next() != Some("1") {
            return Err(TufError::SpecVersion {
                file: self.file.clone(),
                version: c.spec_version,
            });
        }
        if c.version == 0 {
            return Err(TufError::ZeroVersion(self.file.clone()));
        }
        let expires = parse_rfc3339(&c.expires).ok_or_else(|| TufError::ExpiresNotTime {
            file: self.file.clone(),
            value: c.expires.clone(),
        })?;
        Ok((c, expires))
    }
}

/// Fails when metadata expiring at `expires` is expired at `now` (an
/// expiry equal to now is expired, as in the specification).
fn check_expiry(
    file: &str,
    version: u64,
    expires: i64,
    text: &str,
    now: i64,
) -> Result<(), TufError> {
    if expires <= now {
        return Err(TufError::Expired {
            file: file.to_string(),
            version,
            at: text.to_string(),
        });
    }
    Ok(())
}

/// OLPC canonical JSON as securesystemslib writes it: objects with keys
/// sorted by their UTF-8 bytes, no whitespace, strings with only `"` and
/// `\` escaped, integers only: a number that is not an integer is the
/// error.
fn canonical_json(v: &Value, out: &mut Vec<u8>) -> Result<(), serde_json::Number> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                out.extend_from_slice(n.to_string().as_bytes());
            } else {
                return Err(n.clone());
            }
        }
        Value::String(s) => canonical_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_string(k, out);
                out.push(b':');
                canonical_json(v, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn canonical_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for b in s.bytes() {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}

// ---------------------------------------------------------------- keys

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
struct Root {
    version: u64,
    expires: i64,
    expires_text: String,
    keys: BTreeMap<String, Result<Key, KeyProblem>>,
    roles: BTreeMap<String, RoleJson>,
    consistent_snapshot: bool,
}

impl Root {
    fn from_envelope(env: &Envelope) -> Result<Root, TufError> {
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
            keys: json
                .keys
                .iter()
                .map(|(id, k)| (id.clone(), Key::parse(k)))
                .collect(),
            roles: json.roles,
            consistent_snapshot: json.consistent_snapshot,
        })
    }

    /// Checks that `env` carries signatures of at least the threshold of
    /// distinct keys of `role`.
    fn verify(&self, role: &'static str, env: &Envelope) -> Result<(), TufError> {
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

// ----------------------------------------------------------- the workflow

/// The file at `path` from `repo`, the repository's own failure kept.
fn fetch(repo: &impl Repository, path: &str, max: usize) -> Result<Option<Vec<u8>>, TufError> {
    repo.fetch(path, max)
        .map_err(|e| TufError::Repository(Box::new(e)))
}

fn fetch_required(repo: &impl Repository, path: &str, max: usize) -> Result<Vec<u8>, TufError> {
    match fetch(repo, path, max)? {
        Some(bytes) if bytes.len() > max => Err(TufError::TooLarge {
            file: path.to_string(),
            size: bytes.len(),
            max,
        }),
        Some(bytes) => Ok(bytes),
        None => Err(TufError::NotOnMirror(path.to_string())),
    }
}

/// §5.3: the trusted root, then each newer root until the mirror has none.
fn update_root(root_json: &[u8], repo: &impl Repository, now: i64) -> Result<Root, TufError> {
    let env = Envelope::parse("the trusted root.json", root_json)?;
    let mut root = Root::from_envelope(&env)?;
    root.verify("root", &env)?;
    let mut rotations = 0;
    loop {
        let next = root
            .version
            .checked_add(1)
            .ok_or(TufError::RootVersionOverflow)?;
        let path = format!("{next}.root.json");
        let Some(bytes) = fetch(repo, &path, MAX_METADATA)? else {
            break;
        };
        if rotations == MAX_ROOT_ROTATIONS {
            return Err(TufError::TooManyRotations(next));
        }
        rotations += 1;
        let env = Envelope::parse(&path, &bytes)?;
        // Signed by the trusted root's keys, and by its own.
        root.verify("root", &env)
            .map_err(|e| TufError::OldRootRefuses {
                source: Box::new(e),
                version: root.version,
            })?;
        let new = Root::from_envelope(&env)?;
        new.verify("root", &env)
            .map_err(|e| TufError::NewRootRefuses(Box::new(e)))?;
        if new.version != next {
            return Err(TufError::RootVersion {
                found: new.version,
                expected: next,
            });
        }
        root = new;
    }
    check_expiry(
        "root.json",
        root.version,
        root.expires,
        &root.expires_text,
        now,
    )?;
    Ok(root)
}

/// The timestamp's record of the snapshot.
fn timestamp(root: &Root, repo: &impl Repository, now: i64) -> Result<MetaFile, TufError> {
    let path = "timestamp.json";
    let env = Envelope::parse(path, &fetch_required(repo, path, MAX_METADATA)?)?;
    root.verify("timestamp", &env)?;
    let (common, expires) = env.common("timestamp")?;
    check_expiry(path, common.version, expires, &common.expires, now)?;
    let meta: MetaJson = env.decode()?;
    let snapshot = meta
        .meta
        .get("snapshot.json")
        .cloned()
        .ok_or(TufError::NoSnapshot)?;
    if snapshot.version == 0 {
        return Err(TufError::ZeroSnapshotVersion);
    }
    Ok(snapshot)
}

/// The snapshot's record of the targets.
fn snapshot(
    root: &Root,
    named: &MetaFile,
    repo: &impl Repository,
    now: i64,
) -> Result<MetaFile, TufError> {
    let path = match root.consistent_snapshot {
        true => format!("{}.snapshot.json", named.version),
        false => "snapshot.json".to_string(),
    };
    let env = fetch_meta(repo, &path, named, "timestamp.json")?;
    root.verify("snapshot", &env)?;
    let (common, expires) = env.common("snapshot")?;
    if common.version != named.version {
        return Err(TufError::Rollback {
            path,
            found: common.version,
            by: "timestamp.json",
            named: named.version,
        });
    }
    check_expiry(&path, common.version, expires, &common.expires, now)?;
    let meta: MetaJson = env.decode()?;
    let targets = meta
        .meta
        .get("targets.json")
        .cloned()
        .ok_or_else(|| TufError::NoTargets(path.clone()))?;
    if targets.version == 0 {
        return Err(TufError::ZeroTargetsVersion(path));
    }
    Ok(targets)
}

fn targets(
    root: &Root,
    named: &MetaFile,
    repo: &impl Repository,
    now: i64,
) -> Result<TargetsJson, TufError> {
    let path = match root.consistent_snapshot {
        true => format!("{}.targets.json", named.version),
        false => "targets.json".to_string(),
    };
    let env = fetch_meta(repo, &path, named, "snapshot.json")?;
    root.verify("targets", &env)?;
    let (common, expires) = env.common("targets")?;
    if common.version != named.version {
        return Err(TufError::Rollback {
            path,
            found: common.version,
            by: "snapshot.json",
            named: named.version,
        });
    }
    check_expiry(&path, common.version, expires, &common.expires, now)?;
    env.decode()
}

/// Fetches metadata `path` as `by` describes it (length and hashes when
/// given) and parses it.
fn fetch_meta(
    repo: &impl Repository,
    path: &str,
    named: &MetaFile,
    by: &'static str,
) -> Result<Envelope, TufError> {
    let max = match named.length {
        Some(n) if n > MAX_METADATA as u64 => {
            return Err(TufError::NamedTooLarge {
                by,
                path: path.to_string(),
                length: n,
            })
        }
        Some(n) => n as usize,
        None => MAX_METADATA,
    };
    let bytes = fetch_required(repo, path, max)?;
    if let Some(n) = named.length {
        if bytes.len() as u64 != n {
            return Err(TufError::Length {
                path: path.to_string(),
                size: bytes.len(),
                by,
                length: n,
            });
        }
    }
    if let Some(hashes) = &named.hashes {
        check_hashes(path, by, &bytes, hashes)?;
    }
    Envelope::parse(path, &bytes)
}

fn check_hashes(
    path: &str,
    by: &'static str,
    bytes: &[u8],
    hashes: &BTreeMap<String, String>,
) -> Result<(), TufError> {
    for (alg, want) in hashes {
        let got = match alg.as_str() {
            "sha256" => Sha256::digest(bytes).to_vec(),
            "sha512" => Sha512::digest(bytes).to_vec(),
            other => {
                return Err(TufError::HashAlgorithm {
                    by,
                    path: path.to_string(),
                    algorithm: other.to_string(),
                })
            }
        };
        let want_bytes =
            unhex(&format!("{by}: {alg} of {path}"), want).map_err(TufError::HashNotHex)?;
        if got != want_bytes {
            return Err(TufError::Hash {
                path: path.to_string(),
                algorithm: alg.clone(),
                found: ivpol_verify::encoding::hex(&got),
                by,
                named: want.clone(),
            });
        }
    }
    Ok(())
}

fn fetch_target(
    root: &Root,
    targets: &TargetsJson,
    repo: &impl Repository,
    name: &str,
) -> Result<Vec<u8>, TufError> {
    let Some(file) = targets.targets.get(name) else {
        if targets
            .delegations
            .as_ref()
            .is_some_and(|d| !d.roles.is_empty())
        {
            return Err(TufError::Delegated(name.to_string()));
        }
        return Err(TufError::NoTarget(name.to_string()));
    };
    if file.length > MAX_TARGET as u64 {
        return Err(TufError::TargetTooLarge {
            name: name.to_string(),
            length: file.length,
        });
    }
    let Some(sha256) = file.hashes.get("sha256") else {
        return Err(TufError::NoSha256(name.to_string()));
    };
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(TufError::Sha256NotHex(name.to_string()));
    }
    let path = match root.consistent_snapshot {
        true => match name.rsplit_once('/') {
            Some((dir, base)) => format!("targets/{dir}/{sha256}.{base}"),
            None => format!("targets/{sha256}.{name}"),
        },
        false => format!("targets/{name}"),
    };
    let bytes = fetch_required(repo, &path, file.length as usize)?;
    if bytes.len() as u64 != file.length {
        return Err(TufError::Length {
            path,
            size: bytes.len(),
            by: "targets.json",
            length: file.length,
        });
    }
    check_hashes(&path, "targets.json", &bytes, &file.hashes)?;
    Ok(bytes)
}

/// Generated repositories, for this crate's tests and (with the
/// `test-support` feature) the guest's.
#[cfg(any(test, feature = "test-support"))]
pub mod fixture;
#[cfg(test)]
mod tests;
