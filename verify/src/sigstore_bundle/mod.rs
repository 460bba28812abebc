//! Sigstore bundles (v0.1, v0.2, v0.3), verified fully offline.
//!
//! [`verify`] takes the bundle JSON, the artifact (its bytes or its
//! SHA-256), a policy (certificate identities for keyless bundles, or a
//! public key) and the trust material, and either says what was wrong or
//! returns what was verified: the in-toto statement of a DSSE bundle, the
//! verified signing times and the signer's certificate identity.
//!
//! - `bundle.rs`: JSON parsing and the checks that need no trust material;
//! - `merkle.rs`: RFC 6962 inclusion proofs;
//! - `checkpoint.rs`: C2SP signed-note checkpoints;
//! - `timestamp.rs`: RFC 3161 timestamp tokens;
//! - `verify.rs`: the verification itself.

pub mod bundle;
pub mod checkpoint;
pub mod merkle;
/// RFC 3161 timestamps live in `verify::timestamp` (Notary uses them too).
pub use crate::timestamp;
mod verify;

pub use verify::{CheckError, EntryError, Inconsistency};

#[cfg(test)]
mod conformance_tests;

use crate::keys::PublicKey;
use crate::trust::TrustMaterial;
use crate::x509::fulcio::{Identity, IdentityRule};
use crate::Result;

/// What the bundle is said to sign.
#[derive(Debug, Clone, Copy)]
pub enum Artifact<'a> {
    /// The artifact itself (hashed here).
    Bytes(&'a [u8]),
    /// The artifact's SHA-256 digest. For a DSSE bundle, the digest of a
    /// subject of its in-toto statement.
    Sha256([u8; 32]),
}

/// Who may have signed.
#[derive(Debug, Clone)]
pub enum Policy {
    /// Keyless: the Fulcio certificate must match one of these identities.
    Identities(Vec<IdentityRule>),
    /// Key-based: the bundle's `publicKey` hint is ignored and this key used.
    Key(PublicKey),
}

/// Switches of the verification.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Skip the transparency log entries (no time comes from them then).
    pub ignore_tlog: bool,
    /// Skip the certificate's embedded SCT.
    pub ignore_sct: bool,
    /// Require a verified RFC 3161 timestamp (cosign's
    /// `UseSignedTimestamps`, set by Kyverno's `ctlog.tsaCertChain`).
    pub require_timestamp: bool,
    /// The current time, in Unix seconds (integrated times after it fail).
    pub now: i64,
}

/// What a successful verification established.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The in-toto statement of a DSSE bundle.
    pub statement: Option<serde_json::Value>,
    /// Verified signing times, Unix seconds: RFC 3161 `genTime`s first, then
    /// the integrated times of log entries with a verified inclusion promise.
    pub times: Vec<i64>,
    /// The signing certificate's identity (keyless bundles).
    pub identity: Option<Identity>,
}

/// Verifies a Sigstore bundle for `artifact` under `policy`.
pub fn verify(
    bundle_json: &[u8],
    artifact: Artifact<'_>,
    policy: &Policy,
    trust: &TrustMaterial,
    opts: &Options,
) -> Result<Verified> {
    let bundle = bundle::Bundle::parse(bundle_json)?;
    verify::verify_bundle(&bundle, artifact, policy, trust, opts)
}
