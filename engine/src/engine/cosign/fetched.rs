//! Verification of signatures the host fetched beforehand, outside
//! admission: `ivpol sigstore verify-artifact` and the check of a pulled
//! component's own signature. The checks are an attestor's, run over every
//! candidate the host fetched rather than over what discovery finds.

use super::{sha256_bytes, signature_bundle, signature_layer, ResolvedCosign};
use crate::engine::referrers::{bounded_reason, check_shape, descriptor, ShapeError};
use crate::oci::{Client, TransportError, MAX_REFERRERS};
use crate::verify::cosign::{Layer, Options};
use crate::verify::standalone::{Signer, StandaloneError};
use crate::verify::trust::TrustMaterial;
use crate::verify::{Reason, VerifyError};
use serde_json::Value;

/// The signatures of one OCI artifact, fetched beforehand by the host
/// (`sigstore.verify-artifact`): nothing is read from a registry here,
/// and nothing in it is trusted until it verifies.
pub struct Fetched<'a> {
    /// The manifest of the legacy `sha256-<hex>.sig` image, if there is one.
    pub sig_manifest: Option<&'a [u8]>,
    /// The layer blobs that manifest names, by digest.
    pub sig_layers: &'a [(String, Vec<u8>)],
    /// Sigstore bundles attached to the artifact as referrers.
    pub bundles: &'a [Vec<u8>],
}

impl ResolvedCosign {
    /// The attestor a signer given directly stands for: `signer`'s key or
    /// identity, `trust`, the transparency log required unless
    /// `ignore_tlog`, SCTs required, no annotations.
    fn for_signer(
        signer: &Signer,
        trust: TrustMaterial,
        ignore_tlog: bool,
        now: i64,
    ) -> Result<ResolvedCosign, VerifyError> {
        Ok(ResolvedCosign {
            options: Options {
                verifier: signer.layer_verifier(&trust)?,
                hash: None,
                tlogs: trust.tlogs.clone(),
                ctlogs: trust.ctlogs.clone(),
                ignore_tlog,
                ignore_sct: false,
                tsa: Vec::new(),
                annotations: Default::default(),
                now,
            },
            policy: signer.bundle_policy()?,
            trust,
            repository: None,
            tag_prefix: String::new(),
        })
    }
}

/// Verifies, without a registry, that `fetched` holds a cosign signature
/// of the manifest `digest` (`sha256:<hex>`) by `signer`, at time `now`:
/// see [`verify_fetched`]. `trusted_root` (TrustedRoot JSON) defaults to
/// the public-good root built in.
pub fn verify_artifact(
    digest: &str,
    fetched: &Fetched,
    signer: &Signer,
    trusted_root: Option<&str>,
    ignore_tlog: bool,
    now: i64,
) -> Result<(), VerifyError> {
    let trust = crate::verify::standalone::trust(trusted_root)?;
    let attestor = ResolvedCosign::for_signer(signer, trust, ignore_tlog, now)?;
    verify_fetched(digest, fetched, &attestor)
}

/// Verifies that `fetched` holds a cosign signature of the manifest
/// `digest` by `attestor`: a Sigstore bundle (message signature, or cosign
/// v3's sign statement) or a `.sig` layer, checked exactly as an
/// attestor's signatures are in admission.
///
/// Unlike admission's discovery, which reads the legacy layout only when
/// there is no bundle referrer, every candidate is tried, bundles first:
/// the host fetched both, and an artifact signed by cosign v2 and attested
/// by cosign v3 (whose attestations are bundle referrers too) would
/// otherwise never verify. Any one signature by the signer is enough.
///
/// The error's message names every candidate's failure; its class is the
/// first candidate's, or [`Reason::NotFound`] when there was none.
fn verify_fetched(
    digest: &str,
    fetched: &Fetched,
    attestor: &ResolvedCosign,
) -> Result<(), VerifyError> {
    sha256_bytes(digest).map_err(|_| StandaloneError::NotSha256(digest.to_string()))?;
    let offline = crate::oci::transport::Offline;
    let client = Client::new(&offline);
    let mut errors = Vec::new();
    let mut first = None;
    let mut failed = |candidate: String, reason: Reason, e: &str| {
        first.get_or_insert(reason);
        errors.push(bounded_reason(format!("{candidate}: {e}")));
    };
    for (i, bundle) in fetched.bundles.iter().take(MAX_REFERRERS).enumerate() {
        let outcome = check_shape(&client, bundle, "/dsseEnvelope/payload")
            .map_err(|e| (Reason::Malformed, e.to_string()))
            .and_then(|()| {
                signature_bundle(digest, attestor, bundle).map_err(|f| (f.reason, f.message))
            });
        match outcome {
            Ok(()) => return Ok(()),
            Err((reason, e)) => failed(format!("bundle {}", i + 1), reason, &e),
        }
    }
    if fetched.bundles.len() > MAX_REFERRERS {
        let unread = fetched.bundles.len() - MAX_REFERRERS;
        let e = format!("{unread} more bundles not read (at most {MAX_REFERRERS})");
        failed("bundles".into(), Reason::Malformed, &e);
    }
    if let Some(manifest) = fetched.sig_manifest {
        let tag = sig_tag(digest);
        let layers = fetched_layers(&client, manifest, fetched.sig_layers).map_err(|e| {
            // The verifier's error cannot name the component's types: the
            // text is what it carries.
            StandaloneError::SigManifest {
                tag: tag.clone(),
                detail: e.to_string(),
            }
        })?;
        for (d, outcome) in layers {
            let verified = outcome
                .map_err(|e| (Reason::Malformed, e.to_string()))
                .and_then(|layer| {
                    signature_layer(digest, attestor, &layer).map_err(|f| (f.reason, f.message))
                });
            match verified {
                Ok(()) => return Ok(()),
                Err((reason, e)) => failed(format!("{tag} layer {d}"), reason, &e),
            }
        }
    }
    Err(match first {
        None => StandaloneError::NoSignature {
            digest: digest.to_string(),
            tag: sig_tag(digest),
        },
        Some(reason) => StandaloneError::NoneVerified {
            reason,
            failures: errors,
        },
    }
    .into())
}

/// `sha256-<hex>.sig`: the tag of `digest`'s legacy signature image.
fn sig_tag(digest: &str) -> String {
    ivpol_refs::digest_tag(digest) + ".sig"
}

ivpol_verify::debug_as_display!(SigImageError);
/// Why a fetched `.sig` manifest, or one layer it names, cannot be used.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SigImageError {
    /// The manifest is over the JSON limits (which one).
    #[error("manifest refused: {0}")]
    ManifestShape(String),
    /// The evaluation's parsed-values budget is spent.
    #[error(transparent)]
    Budget(#[from] TransportError),
    /// The manifest does not parse (serde's message).
    #[error("manifest is not JSON: {0}")]
    ManifestJson(String),
    /// More layers than ivpol reads (how many).
    #[error("{0} layers, more than the {MAX_REFERRERS} ivpol reads")]
    TooManyLayers(usize),
    /// The host did not fetch the blob a layer names.
    #[error("its blob was not fetched")]
    BlobMissing,
    /// The fetched blob is not the one the layer names.
    #[error("its blob does not match its digest")]
    BlobMismatch,
    /// The layer's payload is refused before verification.
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

/// A layer a fetched `.sig` manifest names (its digest, for messages),
/// with its blob, or why it cannot be used.
type FetchedLayer = (String, Result<Layer, SigImageError>);

/// The layers a fetched `.sig` manifest names, each with its blob checked
/// against the descriptor's digest.
fn fetched_layers(
    client: &Client,
    manifest: &[u8],
    blobs: &[(String, Vec<u8>)],
) -> Result<Vec<FetchedLayer>, SigImageError> {
    let values = crate::oci::json_shape::check(manifest, &crate::oci::json_shape::MANIFEST)
        .map_err(SigImageError::ManifestShape)?;
    client.charge_parsed(values)?;
    let manifest: Value = ivpol_refs::json::from_slice(manifest)
        .map_err(|e| SigImageError::ManifestJson(e.to_string()))?;
    let descriptors = manifest
        .get("layers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if descriptors.len() > MAX_REFERRERS {
        return Err(SigImageError::TooManyLayers(descriptors.len()));
    }
    Ok(descriptors
        .iter()
        .map(|d| {
            let d = descriptor(d);
            let blob = blobs.iter().find(|(digest, _)| *digest == d.digest);
            let layer = match blob {
                None => Err(SigImageError::BlobMissing),
                Some((_, bytes)) if crate::oci::digest::sha256(bytes) != d.digest => {
                    Err(SigImageError::BlobMismatch)
                }
                Some((_, bytes)) => check_shape(client, bytes, "/payload")
                    .map(|()| Layer {
                        media_type: d.media_type,
                        payload: bytes.clone(),
                        annotations: d.annotations,
                    })
                    .map_err(SigImageError::from),
            };
            (crate::oci::clip(&d.digest), layer)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::testdata::{read, DERIVED, FIXTURES};

    /// containers/image's `dir-img-cosign-valid`: one `.sig` layer, key
    /// `cosign.pub`, no Rekor bundle.
    const DIGEST: &str = "sha256:634a8f35b5f16dcf4aaa0822adc0b1964bb786fca12f6831de8ddc45e5986a00";
    const NOW: i64 = 1_796_169_600;

    fn sig_image() -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
        let case = format!("{DERIVED}dir-img-cosign-valid/");
        let descriptor: Value =
            serde_json::from_str(&read(&format!("{case}sig-layer-descriptor.json"))).unwrap();
        let layer = std::fs::read(format!("{case}simplesigning-layer.json")).unwrap();
        let digest = descriptor["digest"].as_str().unwrap().to_string();
        let manifest = serde_json::json!({"schemaVersion": 2, "layers": [descriptor]});
        (manifest.to_string().into_bytes(), vec![(digest, layer)])
    }

    fn verify(fetched: &Fetched, pem: &str, ignore_tlog: bool) -> Result<(), VerifyError> {
        let signer = Signer::Key(pem.to_string());
        verify_artifact(DIGEST, fetched, &signer, None, ignore_tlog, NOW)
    }

    #[test]
    fn fetched_signatures_are_verified_as_in_admission() {
        let key = read(&format!("{FIXTURES}cosign.pub"));
        let other = read(&format!("{FIXTURES}cosign2.pub"));
        let (manifest, layers) = sig_image();
        let fetched = Fetched {
            sig_manifest: Some(&manifest),
            sig_layers: &layers,
            bundles: &[],
        };
        verify(&fetched, &key, true).expect("signed by cosign.pub");
        let err = verify(&fetched, &other, true).unwrap_err();
        assert_eq!(err.reason(), Reason::BadSignature, "{err}");
        assert!(
            err.to_string().contains("signature does not verify"),
            "{err}"
        );
        let err = verify(&fetched, &key, false).unwrap_err();
        assert_eq!(err.reason(), Reason::TransparencyLog, "{err}");
        assert!(err.to_string().contains("no Rekor bundle"), "{err}");
        let signer = Signer::Key(key.clone());
        let err = verify_artifact(
            &format!("{}1", &DIGEST[..DIGEST.len() - 1]),
            &fetched,
            &signer,
            None,
            true,
            NOW,
        )
        .unwrap_err();
        assert_eq!(err.reason(), Reason::PayloadMismatch, "{err}");
        assert!(
            err.to_string().contains("signature is for image digest"),
            "{err}"
        );

        // A blob that is not the one the manifest names, or none.
        let mut swapped = layers.clone();
        swapped[0].1.push(b' ');
        let err = verify(
            &Fetched {
                sig_layers: &swapped,
                ..fetched
            },
            &key,
            true,
        )
        .unwrap_err();
        assert_eq!(err.reason(), Reason::Malformed, "{err}");
        assert!(
            err.to_string().contains("does not match its digest"),
            "{err}"
        );
        let err = verify(
            &Fetched {
                sig_layers: &[],
                ..fetched
            },
            &key,
            true,
        )
        .unwrap_err();
        assert_eq!(err.reason(), Reason::Malformed, "{err}");
        assert!(
            err.to_string().contains("its blob was not fetched"),
            "{err}"
        );

        // Nothing at all, and a bundle that is not one.
        let none = Fetched {
            sig_manifest: None,
            sig_layers: &[],
            bundles: &[],
        };
        let err = verify(&none, &key, true).unwrap_err();
        assert_eq!(err.reason(), Reason::NotFound, "{err}");
        assert!(
            err.to_string()
                .starts_with("no signature found for sha256:"),
            "{err}"
        );
        // A bad bundle does not hide a good `.sig` layer.
        let junk = [b"{}".to_vec()];
        verify(
            &Fetched {
                bundles: &junk,
                ..fetched
            },
            &key,
            true,
        )
        .expect("the .sig layer verifies");
        let err = verify(
            &Fetched {
                bundles: &junk,
                ..none
            },
            &key,
            true,
        )
        .unwrap_err();
        assert_eq!(err.reason(), Reason::Malformed, "{err}");
        assert!(err.to_string().starts_with("bundle 1: "), "{err}");
    }
}
