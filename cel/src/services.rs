//! The registry- and cluster-backed functions' per-evaluation state.
//!
//! Every function is registered once, in one table shared by all
//! evaluations (`super::functions`). What differs per evaluation (the
//! policy's verifier, its image data source, its granted resources) is
//! bound to the hidden variable [`SERVICES`], which no CEL expression can
//! name (`@` is not an identifier character), and each function looks it
//! up when it is called.
//!
//! The seams themselves live here too ([`ImageDataSource`],
//! [`ImageVerifier`], [`ResourceSource`]): the engine implements them, the
//! libraries call them through this module, which names no library, so the
//! libraries depend on it and never the other way round.

use cel::objects::Opaque;
use cel::{ExecutionError, FunctionContext, Value};
use std::sync::Arc;

/// Fetches the image data map for one image reference.
pub trait ImageDataSource: Send + Sync {
    /// The map for `image`, or why it could not be had.
    fn image_data(&self, image: &str) -> Result<serde_json::Value, ImageDataError>;
}

/// Why an image's data could not be had: the source's own error, shared
/// so that a per-request cache can hand it out again.
#[derive(Debug, Clone, thiserror::Error)]
#[error("failed to get image data for {image}: {source}")]
pub struct ImageDataError {
    /// The image asked for.
    pub image: String,
    /// The source's error.
    pub source: Arc<dyn std::error::Error + Send + Sync>,
}

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

/// Reads cluster objects for the `resource` library.
pub trait ResourceSource: Send + Sync {
    /// The resources that may be read (`configmaps`, `deployments.apps`).
    fn granted(&self) -> Vec<String>;
    /// One object; none when it does not exist.
    fn get(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, String>;
    /// A `List` of the objects in `namespace`.
    fn list(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<serde_json::Value, String>;
}

/// What a policy may read: the source, and the namespace a namespaced
/// policy is confined to.
#[derive(Clone)]
pub struct Scoped {
    /// Where the objects are read from.
    pub source: Arc<dyn ResourceSource>,
    /// The namespace a namespaced policy is confined to; `None` for a cluster
    /// policy.
    pub namespace: Option<String>,
}

/// The name of the hidden binding.
pub(super) const SERVICES: &str = "@services";

/// The services one evaluation may call; an absent one makes its
/// functions fail with a CEL error.
#[derive(Clone, Default)]
pub(super) struct Services {
    pub image_data: Option<Arc<dyn ImageDataSource>>,
    pub verifier: Option<Arc<dyn ImageVerifier>>,
    pub resources: Option<Scoped>,
}

/// [`Services`] as a CEL value, for the hidden binding.
#[derive(Clone)]
pub(super) struct Handle(pub Arc<Services>);

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("services")
    }
}

impl PartialEq for Handle {
    fn eq(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Handle {}

impl Opaque for Handle {
    fn runtime_type_name(&self) -> &str {
        "ivpol.services"
    }
}

impl Services {
    /// The value bound to [`SERVICES`].
    pub(super) fn value(self) -> Value {
        Value::Opaque(Arc::new(Handle(Arc::new(self))))
    }
}

/// The services of the evaluation `ftx` runs in.
fn of(ftx: &FunctionContext, function: &str) -> Result<Arc<Services>, ExecutionError> {
    let found = ftx
        .ptx
        .get_variable(SERVICES)
        .and_then(|v| Value::try_from(&*v).ok());
    match found {
        Some(Value::Opaque(o)) => match o.downcast_ref::<Handle>() {
            Some(h) => Ok(h.0.clone()),
            None => Err(unavailable(function)),
        },
        _ => Err(unavailable(function)),
    }
}

fn unavailable(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "is not available in this expression")
}

/// The image data source, or an error naming `function`.
pub(super) fn image_data(
    ftx: &FunctionContext,
    function: &str,
) -> Result<Arc<dyn ImageDataSource>, ExecutionError> {
    of(ftx, function)?
        .image_data
        .clone()
        .ok_or_else(|| unavailable(function))
}

/// The verifier, or an error naming `function`.
pub(super) fn verifier(
    ftx: &FunctionContext,
    function: &str,
) -> Result<Arc<dyn ImageVerifier>, ExecutionError> {
    of(ftx, function)?
        .verifier
        .clone()
        .ok_or_else(|| unavailable(function))
}

/// The granted resources, or an error naming `function`.
pub(super) fn resources(ftx: &FunctionContext, function: &str) -> Result<Scoped, ExecutionError> {
    of(ftx, function)?
        .resources
        .clone()
        .ok_or_else(|| unavailable(function))
}
