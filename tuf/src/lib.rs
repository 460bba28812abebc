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
//! The files as read, and the canonical JSON their signatures cover, are
//! `metadata`'s; the trusted root's keys and thresholds are `root`'s; the
//! workflow that walks them is here.
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

use std::collections::BTreeMap;

use sha2::{Digest, Sha256, Sha512};

pub use error::{KeyProblem, SignatureProblem, TufError};
use ivpol_verify::encoding::unhex;
use ivpol_verify::Result;
use metadata::{check_expiry, Envelope, MetaFile, MetaJson, TargetsJson};
use root::Root;

mod error;
mod metadata;
mod root;

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
