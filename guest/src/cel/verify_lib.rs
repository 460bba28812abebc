//! Kyverno's `imageverify` library (`docs/cel.md`):
//! `verifyImageSignatures(image, attestors) -> int`,
//! `verifyAttestationSignatures(image, attestation, attestors) -> int` and
//! `extractPayload(image, attestation) -> dyn`.
//!
//! The CEL side only unpacks arguments; what a verification means lives in
//! the engine's [`ImageVerifier`], which knows the policy's attestors, the
//! registry and what was verified earlier in the same evaluation.

use super::{convert, services};
use cel::objects::Key;
use cel::{Context, ExecutionError, FunctionContext, Value};
use std::sync::Arc;

/// The name `verifyImageSignatures` is called by.
pub const VERIFY_IMAGE_SIGNATURES: &str = "verifyImageSignatures";

/// The engine side of the three functions. Counts are of attestors that
/// verified; failures are counted, not raised. An `Err` is a CEL error.
pub trait ImageVerifier: Send + Sync {
    /// How many of `attestors` verified `image`'s signatures.
    fn verify_image_signatures(
        &self,
        image: &str,
        attestors: &[String],
    ) -> Result<i64, VerifierError>;
    /// How many of `attestors` verified `image`'s `attestation`.
    fn verify_attestation_signatures(
        &self,
        image: &str,
        attestation: &str,
        attestors: &[String],
    ) -> Result<i64, VerifierError>;
    /// The payload of `image`'s `attestation` that verified earlier in
    /// this evaluation.
    fn extract_payload(
        &self,
        image: &str,
        attestation: &str,
    ) -> Result<serde_json::Value, VerifierError>;
}

/// Why a verification function raises a CEL error instead of counting an
/// attestor that did not verify. The texts are Kyverno's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifierError {
    /// An attestor name the policy does not declare.
    #[error("attestor not found in policy: {0}")]
    UnknownAttestor(String),
    /// An attestation name the policy does not declare.
    #[error("attestation not found in policy: {0}")]
    UnknownAttestation(String),
    /// A cosign attestor asked for an attestation that is not in-toto.
    #[error("cosign verifier only supports intoto attestations")]
    CosignNeedsIntoto,
    /// A Notary attestor asked for an attestation that is not a referrer.
    #[error("notary verifier only supports oci 1.1 referrers as attestations")]
    NotaryNeedsReferrer,
    /// The image did not resolve to a digest: the failure's message
    /// (`failed to get imagedata: …`); the failure itself is in the
    /// decision log with its class.
    #[error("{0}")]
    Unresolved(String),
    /// A `matchImageReferences` expression failed: CEL's message.
    #[error("{0}")]
    MatchImageReferences(String),
    /// A `cosign.key.kms` key the host could not read: the attestor cannot
    /// judge, so the policy's result is an error (like an image that did
    /// not resolve), never a verification that merely failed.
    #[error("{0}")]
    KeyUnavailable(String),
    /// `extractPayload` of an in-toto attestation that did not verify.
    #[error("failed to get payload: intoto attestation payload cannot be fetch before verifying intoto attestation")]
    NotVerified,
    /// `extractPayload` of a referrer attestation that did not verify.
    #[error("failed to get payload: no verified referrer of type {kind} for {image}")]
    NoVerifiedReferrer {
        /// The referrer's artifact type.
        kind: String,
        /// The image.
        image: String,
    },
}

/// Registers the three functions; each calls the verifier of the
/// evaluation it runs in (`super::services`).
pub fn register(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function(
        VERIFY_IMAGE_SIGNATURES,
        |ftx: &FunctionContext, image: Value, attestors: Value| {
            const NAME: &str = VERIFY_IMAGE_SIGNATURES;
            let v = services::verifier(ftx, NAME)?;
            let image = string_arg(NAME, &image)?;
            let names = attestor_names(NAME, &attestors)?;
            v.verify_image_signatures(&image, &names)
                .map_err(|e| ExecutionError::function_error(NAME, e))
        },
    );
    let _ = ctx.add_function(
        "verifyAttestationSignatures",
        |ftx: &FunctionContext, image: Value, attestation: Value, attestors: Value| {
            const NAME: &str = "verifyAttestationSignatures";
            let v = services::verifier(ftx, NAME)?;
            let image = string_arg(NAME, &image)?;
            let attestation = string_arg(NAME, &attestation)?;
            let names = attestor_names(NAME, &attestors)?;
            v.verify_attestation_signatures(&image, &attestation, &names)
                .map_err(|e| ExecutionError::function_error(NAME, e))
        },
    );
    let _ = ctx.add_function(
        "extractPayload",
        |ftx: &FunctionContext, image: Value, attestation: Value| {
            const NAME: &str = "extractPayload";
            let v = services::verifier(ftx, NAME)?;
            let image = string_arg(NAME, &image)?;
            let attestation = string_arg(NAME, &attestation)?;
            v.extract_payload(&image, &attestation)
                .map(|json| convert::to_cel(&json))
                .map_err(|e| ExecutionError::function_error(NAME, e))
        },
    );
}

fn string_arg(function: &str, value: &Value) -> Result<String, ExecutionError> {
    match value {
        Value::String(s) => Ok(s.to_string()),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a string, got {}", convert::type_name(other)),
        )),
    }
}

/// The names of the attestor objects in `list` (values of `attestors.<name>`).
fn attestor_names(function: &str, list: &Value) -> Result<Vec<String>, ExecutionError> {
    let Value::List(items) = list else {
        return Err(ExecutionError::function_error(
            function,
            format!(
                "expected a list of attestors, got {}",
                convert::type_name(list)
            ),
        ));
    };
    items
        .iter()
        .map(|item| {
            let name = match item {
                Value::Map(m) => m.map.get(&Key::String(Arc::new("name".into()))),
                _ => None,
            };
            match name {
                Some(Value::String(s)) => Ok(s.to_string()),
                _ => Err(ExecutionError::function_error(
                    function,
                    format!(
                        "expected an attestor from the attestors variable, got {}",
                        convert::type_name(item)
                    ),
                )),
            }
        })
        .collect()
}
