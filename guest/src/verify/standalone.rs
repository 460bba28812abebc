//! Bundle verification outside admission (`ivpol sigstore verify-bundle`,
//! the sigstore-conformance client): the same verifier the engine uses for
//! cosign v3 bundles, with the signer and trust root given directly.

use super::keys::PublicKey;
use super::sigstore_bundle::{self, Artifact, Options, Policy};
use super::trust::TrustMaterial;
use super::x509::fulcio::IdentityRule;

/// Who must have signed.
pub enum Signer {
    /// A keyless signer: SAN and OIDC issuer, matched exactly.
    Identity { subject: String, issuer: String },
    /// A PEM public key.
    Key(String),
}

/// Verifies `bundle` for the artifact with SHA-256 `artifact_sha256`, at
/// time `now` (Unix seconds); `trusted_root` defaults to public good.
pub fn verify_bundle(
    bundle: &[u8],
    artifact_sha256: &[u8],
    signer: Signer,
    trusted_root: Option<&str>,
    now: i64,
) -> Result<(), String> {
    let digest: [u8; 32] = artifact_sha256.try_into().map_err(|_| {
        format!(
            "an artifact digest is 32 bytes, not {}",
            artifact_sha256.len()
        )
    })?;
    let trust = match trusted_root {
        Some(json) => TrustMaterial::from_trusted_root_json(json),
        None => TrustMaterial::public_good(),
    }
    .map_err(|e| format!("trusted root: {e}"))?;
    let policy = match signer {
        Signer::Identity { subject, issuer } => Policy::Identities(vec![IdentityRule {
            issuer: Some(issuer),
            subject: Some(subject),
            ..Default::default()
        }]),
        Signer::Key(pem) => {
            Policy::Key(PublicKey::from_pem(&pem).map_err(|e| format!("key: {e}"))?)
        }
    };
    let opts = Options {
        ignore_tlog: false,
        ignore_sct: false,
        now,
    };
    sigstore_bundle::verify(bundle, Artifact::Sha256(digest), &policy, &trust, &opts)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
