//! Notary attestors against one image.
//!
//! As in Kyverno, signatures are the image's OCI referrers of artifactType
//! `application/vnd.cncf.notary.signature` (referrers API, else the
//! `sha256-<hex>` tag schema), at most [`MAX_SIGNATURE_ATTEMPTS`] of them
//! tried, each checked by ivpol-notary under Kyverno's strict trust
//! policy, then the revocation of its timestamping and signing chains
//! (`revocation.rs`). A `referrer` attestation is a referrer of the attestation's type
//! whose own Notary signature verifies; its payload is the JSON of its one
//! layer, read from the very manifest whose digest that signature covers.
//!
//! Kyverno's documentation: <https://kyverno.io/docs/policy-types/image-validating-policy>

use super::attestor_error::AttestorError;
use super::failure::Failure;
use super::referrers::{check_shape, first_success, single_layer};
use crate::images::reference::ImageRef;
use crate::notary::revocation::Fetch;
use crate::notary::{self, Target, Trust};
use crate::oci::{json_shape, Client, Manifest, MAX_REFERRER_LAYER_BYTES};
use crate::policy::attestor::{CompiledNotary, StringSource};
use crate::verify::x509::Certificate;
use crate::verify::Reason;
use serde_json::Value;

/// The artifactType of Notary signatures (notation-go's `ArtifactTypeNotation`).
pub(super) const SIGNATURE_ARTIFACT_TYPE: &str = "application/vnd.cncf.notary.signature";
/// Kyverno calls `notation.Verify` with `MaxSignatureAttempts: 10`.
pub(super) const MAX_SIGNATURE_ATTEMPTS: usize = 10;

/// A Notary attestor ready to verify: its trust store and the time.
pub(super) struct ResolvedNotary {
    trust: Trust,
    now: i64,
}

/// Parses the attestor's `certs` (the `ca` trust store) and `tsaCerts`;
/// `string` evaluates their expressions.
pub(super) fn resolve(
    n: &CompiledNotary,
    string: impl Fn(&StringSource) -> Result<String, AttestorError>,
    now: i64,
) -> Result<ResolvedNotary, AttestorError> {
    let certs = |source: &Option<StringSource>, field: &'static str| match source {
        None => Ok(Vec::new()),
        Some(s) => {
            let certs = Certificate::parse_pem(&string(s)?)
                .map_err(|e| AttestorError::from(e).at(field))?;
            match certs.is_empty() {
                true => Err(AttestorError::NoCertificate(field)),
                false => Ok(certs),
            }
        }
    };
    let roots = certs(&n.certs, "notary.certs")?;
    if roots.is_empty() {
        return Err(AttestorError::NoCertificate("notary.certs"));
    }
    Ok(ResolvedNotary {
        trust: Trust {
            roots,
            tsa_roots: certs(&n.tsa_certs, "notary.tsaCerts")?,
            signing_authority_roots: Vec::new(),
        },
        now,
    })
}

/// The descriptor a signature must name: a manifest as fetched, with the
/// digest computed from its bytes.
pub(super) fn target_of(manifest: &Manifest) -> Target {
    Target {
        digest: manifest.digest.clone(),
        media_type: manifest.media_type.clone(),
        size: manifest.bytes.len() as u64,
    }
}

/// Verifies that one of the first signatures of `target` (an artifact in
/// `image`'s repository) passes the attestor.
pub(super) fn verify_signatures(
    client: &Client,
    image: &ImageRef,
    target: &Target,
    attestor: &ResolvedNotary,
    revocation: &dyn Fetch,
) -> Result<(), Failure> {
    let found = client.referrers(image, &target.digest, Some(SIGNATURE_ARTIFACT_TYPE))?;
    if found.is_empty() {
        // notation's wording.
        return Err(Failure::new(
            Reason::NotFound,
            format!(
                "no signature is associated with \"{}@{}\", make sure the artifact was signed successfully",
                image.repository(),
                target.digest
            ),
        ));
    }
    first_success(
        found
            .iter()
            .take(MAX_SIGNATURE_ATTEMPTS)
            .map(|d| verify_signature(client, image, target, d, attestor, revocation)),
    )
}

fn verify_signature(
    client: &Client,
    image: &ImageRef,
    target: &Target,
    descriptor: &Value,
    attestor: &ResolvedNotary,
    revocation: &dyn Fetch,
) -> Result<(), Failure> {
    let manifest = client.referrer_manifest(image, &target.digest, descriptor)?;
    let layer = single_layer(&manifest.json)?;
    let envelope = client.blob(image, &layer.digest, notary::MAX_ENVELOPE_BYTES)?;
    // A JWS envelope is JSON: bound its shape before the verifier parses it
    // (COSE envelopes are CBOR, bounded by their byte limit).
    if layer.media_type == notary::MEDIA_TYPE_JWS {
        check_shape(client, &envelope, "/payload")
            .map_err(|e| format!("signature {}: {e}", manifest.digest))?;
    }
    notary::verify(
        &envelope,
        &layer.media_type,
        target,
        &attestor.trust,
        attestor.now,
    )
    .and_then(|verified| notary::check_revocation(&verified, attestor.now, revocation))
    .map_err(|e| Failure::from(e).context(format!("signature {}", manifest.digest)))
}

/// The payload of the first referrer of `artifact_type` attached to
/// `subject` whose own Notary signature passes the attestor: the JSON of
/// its single layer. An unsigned or badly signed referrer is never read.
pub(super) fn verify_referrer(
    client: &Client,
    image: &ImageRef,
    subject: &str,
    artifact_type: &str,
    attestor: &ResolvedNotary,
    revocation: &dyn Fetch,
) -> Result<Value, Failure> {
    let found = client.referrers(image, subject, Some(artifact_type))?;
    if found.is_empty() {
        // Kyverno's wording.
        return Err(Failure::new(
            Reason::AttestationMissing,
            format!(
                "attestation verification failed, no attestations found for type: {artifact_type}"
            ),
        ));
    }
    first_success(found.iter().map(|d| {
        let manifest = client.referrer_manifest(image, subject, d)?;
        verify_signatures(client, image, &target_of(&manifest), attestor, revocation)?;
        referrer_payload(client, image, &manifest)
    }))
}

/// The JSON of a (verified) referrer's one layer, checked against the
/// layer digest its manifest names.
fn referrer_payload(
    client: &Client,
    image: &ImageRef,
    manifest: &Manifest,
) -> Result<Value, Failure> {
    let layer = single_layer(&manifest.json)
        .map_err(|_| format!("referrer {} must have exactly one layer", manifest.digest))?;
    let bytes = client.blob(image, &layer.digest, MAX_REFERRER_LAYER_BYTES)?;
    let values = json_shape::check(&bytes, &json_shape::PAYLOAD)
        .map_err(|e| format!("referrer {}: its layer is refused: {e}", manifest.digest))?;
    client.charge_parsed(values).map_err(|e| e.to_string())?;
    ivpol_refs::json::from_slice(&bytes).map_err(|e| {
        Failure::from(format!(
            "referrer {}: its layer is not JSON: {e}",
            manifest.digest
        ))
    })
}
