//! Verification outside admission, with the signer and trust root given
//! directly instead of by a policy's attestor: `ivpol sigstore
//! verify-bundle` (the sigstore-conformance client) and the check of a
//! pulled component's own signature (`engine::cosign::verify_fetched`).
//! The same verifiers the engine uses for cosign attestors; Notary's
//! counterpart, `ivpol notary verify`, is `ivpol_notary::standalone`.

use super::cosign::Verifier;
use super::keys::{KeyError, PublicKey};
use super::sigstore_bundle::{self, Artifact, Options, Policy};
use super::trust::TrustMaterial;
use super::x509::fulcio::IdentityRule;
use super::x509::X509Error;
use super::{Reason, VerifyError};

crate::debug_as_display!(StandaloneError);
/// Why a signature given outside admission was not accepted, where the
/// verifiers' own errors do not say it.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum StandaloneError {
    /// An artifact digest of another length than SHA-256's.
    #[error("an artifact digest is 32 bytes, not {0}")]
    DigestLength(usize),
    /// A manifest digest that is not `sha256:<64 hex digits>` (also raised
    /// in admission, where the digest comes from the engine's resolution).
    #[error("{0} is not a sha256 digest")]
    NotSha256(String),
    /// The cosign `.sig` manifest cannot be used.
    #[error("{tag}: {detail}")]
    SigManifest {
        /// The `.sig` tag.
        tag: String,
        /// What is wrong with its manifest.
        detail: String,
    },
    /// Nothing was fetched to verify.
    #[error("no signature found for {digest}: no Sigstore bundle referrer and no layer in a cosign {tag} image")]
    NoSignature {
        /// The artifact's digest.
        digest: String,
        /// The tag of its legacy `.sig` image (`sha256-<hex>.sig`).
        tag: String,
    },
    /// Every candidate failed: each one's failure, in order, and the
    /// first one's class.
    #[error("{}", .failures.join("; "))]
    NoneVerified {
        /// The first candidate's class.
        reason: Reason,
        /// `<candidate>: <failure>`, each bounded.
        failures: Vec<String>,
    },
    /// The signer's PEM public key is refused.
    #[error("key: {0}")]
    Key(#[source] KeyError),
    /// The `certs` trust store cannot be read (`ivpol_notary::standalone`).
    #[error("certs: {0}")]
    Certs(#[source] X509Error),
    /// The `tsa certs` trust store cannot be read (`ivpol_notary::standalone`).
    #[error("tsa certs: {0}")]
    TsaCerts(#[source] X509Error),
}

impl StandaloneError {
    /// The class of this failure.
    pub fn reason(&self) -> Reason {
        match self {
            StandaloneError::NoSignature { .. } => Reason::NotFound,
            StandaloneError::NoneVerified { reason, .. } => *reason,
            StandaloneError::Key(e) => e.reason(),
            StandaloneError::Certs(e) | StandaloneError::TsaCerts(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

/// Who must have signed.
pub enum Signer {
    /// A keyless signer: SAN and OIDC issuer, matched exactly.
    Identity {
        /// The certificate's SAN.
        subject: String,
        /// The OIDC issuer.
        issuer: String,
    },
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

    fn key(pem: &str) -> Result<PublicKey, StandaloneError> {
        PublicKey::read_pem(pem).map_err(StandaloneError::Key)
    }

    /// What a Sigstore bundle must be signed by.
    pub fn bundle_policy(&self) -> Result<Policy, VerifyError> {
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
    pub fn layer_verifier(&self, trust: &TrustMaterial) -> Result<Verifier, VerifyError> {
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
pub fn trust(trusted_root: Option<&str>) -> Result<TrustMaterial, VerifyError> {
    match trusted_root {
        Some(json) => TrustMaterial::from_trusted_root_json(json),
        None => TrustMaterial::public_good(),
    }
    .map_err(|e| e.context("trusted root"))
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
    let digest: [u8; 32] = artifact_sha256
        .try_into()
        .map_err(|_| StandaloneError::DigestLength(artifact_sha256.len()))?;
    let trust = trust(trusted_root)?;
    let policy = signer.bundle_policy()?;
    let opts = Options {
        ignore_tlog: false,
        ignore_sct: false,
        require_timestamp: false,
        now,
    };
    sigstore_bundle::verify(bundle, Artifact::Sha256(digest), &policy, &trust, &opts).map(|_| ())
}
