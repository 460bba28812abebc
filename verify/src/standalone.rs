//! Verification outside admission, with the signer and trust root given
//! directly instead of by a policy's attestor: `ivpol sigstore
//! verify-bundle` (the sigstore-conformance client) and the check of a
//! pulled component's own signature (`engine::cosign::verify_fetched`).
//! The same verifiers the engine uses for cosign signatures and bundles.

use super::cosign::Verifier;
use super::keys::PublicKey;
use super::sigstore_bundle::{self, Artifact, Options, Policy};
use super::trust::TrustMaterial;
use super::x509::fulcio::IdentityRule;
use super::VerifyError;

/// Who must have signed.
pub enum Signer {
    /// A keyless signer: SAN and OIDC issuer, matched exactly.
    Identity { subject: String, issuer: String },
    /// A PEM public key.
    Key(String),
}

impl Signer {
    fn identity_rule(subject: &str, issuer: &str) -> IdentityRule {
        IdentityRule {
            issuer: Some(issuer.to_string()),
            subject: Some(subject.to_string()),
            ..Default::default()
        }
    }

    fn key(pem: &str) -> Result<PublicKey, String> {
        PublicKey::from_pem(pem).map_err(|e| format!("key: {e}"))
    }

    /// What a Sigstore bundle must be signed by.
    pub fn bundle_policy(&self) -> Result<Policy, String> {
        Ok(match self {
            Signer::Identity { subject, issuer } => {
                Policy::Identities(vec![Signer::identity_rule(subject, issuer)])
            }
            Signer::Key(pem) => Policy::Key(Signer::key(pem)?),
        })
    }

    /// What a cosign `.sig` layer must be signed by: the key, or a
    /// certificate for the identity chaining to `trust`'s CAs (as a
    /// Kyverno `keyless` attestor without `roots`).
    pub fn layer_verifier(&self, trust: &TrustMaterial) -> Result<Verifier, String> {
        Ok(match self {
            Signer::Identity { subject, issuer } => Verifier::Keyless {
                identities: vec![Signer::identity_rule(subject, issuer)],
                roots: trust.ca_certificates(),
            },
            Signer::Key(pem) => Verifier::Keys(vec![Signer::key(pem)?]),
        })
    }
}

/// `trusted_root` (TrustedRoot JSON), or the public-good root built in.
pub fn trust(trusted_root: Option<&str>) -> Result<TrustMaterial, String> {
    match trusted_root {
        Some(json) => TrustMaterial::from_trusted_root_json(json),
        None => TrustMaterial::public_good(),
    }
    .map_err(|e| format!("trusted root: {e}"))
}

/// Verifies `bundle` for the artifact with SHA-256 `artifact_sha256`, at
/// time `now` (Unix seconds); `trusted_root` defaults to public good.
pub fn verify_bundle(
    bundle: &[u8],
    artifact_sha256: &[u8],
    signer: Signer,
    trusted_root: Option<&str>,
    now: i64,
) -> Result<(), VerifyError> {
    let digest: [u8; 32] = artifact_sha256.try_into().map_err(|_| {
        VerifyError::new(format!(
            "an artifact digest is 32 bytes, not {}",
            artifact_sha256.len()
        ))
    })?;
    let trust = trust(trusted_root).map_err(VerifyError::new)?;
    let policy = signer.bundle_policy().map_err(VerifyError::new)?;
    let opts = Options {
        ignore_tlog: false,
        ignore_sct: false,
        now,
    };
    sigstore_bundle::verify(bundle, Artifact::Sha256(digest), &policy, &trust, &opts).map(|_| ())
}
