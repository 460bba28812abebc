//! Cosign attestors against one image digest.
//!
//! Discovery follows Kyverno: Sigstore bundles attached as OCI referrers
//! (cosign v3) when there are any, otherwise the legacy `.sig` / `.att`
//! tags in the image repository (or `source.repository`, with `tagPrefix`).
//! The trust options come from the attestor; the checks themselves are in
//! `verify::cosign` and `verify::sigstore_bundle`.
//!
//! Kyverno's documentation: <https://kyverno.io/docs/policy-types/image-validating-policy>

use super::attestor_error::AttestorError;
use super::failure::Failure;
use super::referrers::{
    bounded, bounded_reason, check_shape, descriptor, first_success, single_layer,
};
use crate::images::reference::{self, ImageRef};
use crate::oci::transport::HttpRequest;
use crate::oci::{Client, OciError, Transport, MAX_REFERRERS, MAX_REFERRER_LAYER_BYTES};
use crate::policy::attestor::{CompiledCosign, StringSource, Tuf};
use crate::verify::cosign::{self as layers, Layer, Options, Verifier};
use crate::verify::keys::{HashAlgorithm, PublicKey};
use crate::verify::sigstore_bundle::{self as bundles, Artifact, Policy};
use crate::verify::standalone::{Signer, StandaloneError};
use crate::verify::trust::{CertificateAuthority, LogKey, TrustMaterial, Validity};
use crate::verify::tuf::TufError;
use crate::verify::x509::fulcio::IdentityRule;
use crate::verify::x509::Certificate;
use crate::verify::{tuf, Reason, VerifyError};
use serde_json::Value;

/// Media type prefix of Sigstore bundles (v0.1 to v0.3, old and new spellings).
const BUNDLE_MEDIA_TYPE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The artifactType cosign v3 gives bundle referrers.
const BUNDLE_ARTIFACT_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The predicate of the statement `cosign sign` puts in a bundle.
const SIGN_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// The image being verified, pinned to one manifest digest.
pub(super) struct Subject<'a> {
    pub image: &'a ImageRef,
    pub digest: &'a str,
}

/// A cosign attestor ready to verify: its checks and where signatures live.
pub(super) struct ResolvedCosign {
    options: Options,
    trust: TrustMaterial,
    policy: Policy,
    /// `source.repository`, when signatures live elsewhere.
    repository: Option<ImageRef>,
    tag_prefix: String,
}

/// Builds the attestor's trust options; `string` evaluates its expressions
/// and `transport` reaches the `tuf` mirror. The trust root is, as in
/// Kyverno, `trustedRoot` when given, else the `tuf` repository's
/// `trusted_root.json`, else the public-good root built in.
pub(super) fn resolve(
    c: &CompiledCosign,
    string: impl Fn(&StringSource) -> Result<String, AttestorError>,
    now: i64,
    transport: &dyn Transport,
) -> Result<ResolvedCosign, AttestorError> {
    let mut trust = match (&c.trusted_root, &c.spec.tuf) {
        (Some(s), _) => TrustMaterial::from_trusted_root_json(&string(s)?)?,
        (None, Some(t)) => tuf_trust(t, transport, now)?,
        (None, None) => TrustMaterial::public_good()?,
    };
    let hash = c
        .spec
        .key
        .as_ref()
        .and_then(|k| k.hash_algorithm.as_deref())
        .map(HashAlgorithm::from_kyverno)
        .transpose()?;
    let (verifier, policy) = verifier(c, &string, &trust)?;
    let ctlog = c.spec.ctlog.clone().unwrap_or_default();
    if c.spec.ctlog.is_some() && !ctlog.insecure_ignore_tlog && ctlog.url.is_none() {
        return Err(AttestorError::NoRekorUrl);
    }
    // Keys given in the policy replace the trust root's, for bundles too.
    if let Some(pem) = &ctlog.rekor_pub_key {
        trust.tlogs = vec![log_key(pem, ctlog.url.as_deref())?];
    }
    if let Some(pem) = &ctlog.ct_log_pub_key {
        trust.ctlogs = vec![log_key(pem, None)?];
    }
    if let Verifier::Keyless { roots, .. } = &verifier {
        if c.spec.keyless.as_ref().is_some_and(|k| k.roots.is_some()) {
            trust.cas = anchors(roots);
        }
    }
    let source = c.spec.source.clone().unwrap_or_default();
    let repository = match &source.repository {
        Some(r) => Some(
            reference::parse(r)
                .map_err(|e| AttestorError::Spec(e.to_string()).at("source.repository"))?,
        ),
        None => None,
    };
    Ok(ResolvedCosign {
        options: Options {
            verifier,
            hash,
            tlogs: trust.tlogs.clone(),
            ctlogs: trust.ctlogs.clone(),
            ignore_tlog: ctlog.insecure_ignore_tlog,
            ignore_sct: ctlog.insecure_ignore_sct,
            annotations: c.spec.annotations.clone(),
            now,
        },
        trust,
        policy,
        repository,
        tag_prefix: source.tag_prefix.unwrap_or_default(),
    })
}

/// The trust material in the `tuf` repository's `trusted_root.json`,
/// verified from `tuf.root.data` and fetched from the mirror through
/// `transport` (so the host's allow-list decides whether it is reachable).
fn tuf_trust(t: &Tuf, transport: &dyn Transport, now: i64) -> Result<TrustMaterial, AttestorError> {
    let root = t.root_json().map_err(AttestorError::Spec)?;
    let mirror = t.mirror_url().map_err(AttestorError::Spec)?;
    let fetch = |path: &str, max: usize| -> crate::verify::Result<Option<Vec<u8>>> {
        let url = format!("{mirror}/{path}");
        let request = HttpRequest::get(url.clone(), Vec::new());
        let response = transport.send(&request, max).map_err(|e| TufError::Fetch {
            url: url.clone(),
            detail: e.to_string(),
        })?;
        match response.status {
            200 => Ok(Some(response.body)),
            // go-tuf ends the root chain at a 403 as at a 404 (object
            // stores answer 403 for files that do not exist).
            403 | 404 => Ok(None),
            status => Err(TufError::FetchStatus { url, status }.into()),
        }
    };
    let json = tuf::trusted_root(&root, &fetch, now).map_err(|e| AttestorError::Tuf {
        mirror: mirror.to_string(),
        source: Box::new(e),
    })?;
    TrustMaterial::from_trusted_root_json(&json).map_err(|e| AttestorError::TufTrustedRoot {
        mirror: mirror.to_string(),
        source: Box::new(e),
    })
}

/// The legacy-layer verifier and the bundle policy for one attestor.
fn verifier(
    c: &CompiledCosign,
    string: &impl Fn(&StringSource) -> Result<String, AttestorError>,
    trust: &TrustMaterial,
) -> Result<(Verifier, Policy), AttestorError> {
    if let Some(k) = &c.key {
        let key = PublicKey::from_pem(&string(k)?)?;
        return Ok((Verifier::Keys(vec![key.clone()]), Policy::Key(key)));
    }
    if let Some(cert) = &c.cert {
        let mut certs = Certificate::parse_pem(&string(cert)?)?;
        if certs.is_empty() {
            return Err(AttestorError::NoCertificate("certificate.cert"));
        }
        let cert = certs.remove(0);
        let chain = match &c.cert_chain {
            Some(s) => Certificate::parse_pem(&string(s)?)?,
            None => Vec::new(),
        };
        let key = cert.public_key()?;
        return Ok((Verifier::Certificate { cert, chain }, Policy::Key(key)));
    }
    let Some(keyless) = &c.spec.keyless else {
        return Err(AttestorError::NoKind);
    };
    // --- sec-fields: additionalExtensions and subjectExpression ---
    // Every rule carries the attestor's extensions, and a rule of its own
    // holds them when there are no identities, so no path skips them.
    let extensions = keyless.extensions().map_err(AttestorError::Spec)?;
    let mut identities = Vec::new();
    for (i, id) in keyless.identities.iter().enumerate() {
        let subject_expression = match c.subject_expressions.get(i).and_then(Option::as_ref) {
            Some(s) => Some(
                string(s)
                    .map_err(|e| e.at(format!("keyless.identities[{i}].subjectExpression")))?,
            ),
            None => None,
        };
        identities.push(IdentityRule {
            issuer: id.issuer.clone(),
            subject: id.subject.clone(),
            issuer_regexp: id.issuer_reg_exp.clone(),
            subject_regexp: id.subject_reg_exp.clone(),
            subject_expression,
            extensions: extensions.clone(),
        });
    }
    if identities.is_empty() && !extensions.is_empty() {
        identities.push(IdentityRule {
            extensions,
            ..IdentityRule::default()
        });
    }
    // --- end sec-fields ---
    let roots = match &keyless.roots {
        Some(pem) => Certificate::parse_pem(pem)?,
        None => trust
            .cas
            .iter()
            .flat_map(|ca| ca.certs.iter().cloned())
            .collect(),
    };
    Ok((
        Verifier::Keyless {
            identities: identities.clone(),
            roots,
        },
        Policy::Identities(identities),
    ))
}

/// A log key given as PEM in the policy: valid at all times, as Kyverno
/// treats `rekorPubKey` and `ctLogPubKey`. `url` names the log, whose host
/// its checkpoints are signed as.
fn log_key(pem: &str, url: Option<&str>) -> Result<LogKey, AttestorError> {
    let key = PublicKey::from_pem(pem)?;
    Ok(LogKey {
        id: key.key_id(),
        key,
        validity: Validity::default(),
        base_url: url.unwrap_or_default().to_string(),
    })
}

/// `keyless.roots` as bundle trust: each certificate an anchor, the others
/// candidate intermediates, valid at all times (as for legacy signatures).
fn anchors(roots: &[Certificate]) -> Vec<CertificateAuthority> {
    roots
        .iter()
        .enumerate()
        .map(|(i, anchor)| {
            let mut certs: Vec<Certificate> = roots
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, c)| c.clone())
                .collect();
            certs.push(anchor.clone());
            CertificateAuthority {
                certs,
                validity: Validity::default(),
                uri: String::new(),
            }
        })
        .collect()
}

/// Verifies that some signature of `subject` passes the attestor.
pub(super) fn verify_signatures(
    client: &Client,
    subject: &Subject,
    attestor: &ResolvedCosign,
) -> Result<(), Failure> {
    prefetch(client, subject, attestor, "sig");
    let bundles = for_each_bundle(client, subject, attestor, |b| {
        signature_bundle(subject.digest, attestor, b)
    })?;
    if let Some(outcome) = bundles {
        return outcome;
    }
    for_each_legacy_layer(client, subject, attestor, "sig", |l| {
        signature_layer(subject.digest, attestor, l)
    })
}

/// Whether `bundle` is a signature (a message signature, or cosign v3's
/// sign statement) of `digest` that passes the attestor.
fn signature_bundle(digest: &str, attestor: &ResolvedCosign, bundle: &[u8]) -> Result<(), Failure> {
    let v = verify_bundle(digest, attestor, bundle)?;
    match v.statement {
        None => Ok(()),
        Some(s) if predicate_of(&s) == SIGN_PREDICATE => Ok(()),
        Some(s) => Err(Failure::new(
            Reason::PayloadMismatch,
            format!(
                "bundle holds a {} attestation, not a signature",
                predicate_of(&s)
            ),
        )),
    }
}

/// Whether the `.sig` layer `layer` signs `digest` and passes the attestor.
fn signature_layer(digest: &str, attestor: &ResolvedCosign, layer: &Layer) -> Result<(), Failure> {
    layers::verify_signature(layer, digest, &attestor.options)
        .map(|_| ())
        .map_err(Failure::from)
}

/// The first verified in-toto statement of `predicate_type` for `subject`.
pub(super) fn verify_attestation(
    client: &Client,
    subject: &Subject,
    attestor: &ResolvedCosign,
    predicate_type: &str,
) -> Result<Value, Failure> {
    // Predicate types of statements that verified but are not the one
    // asked for, for the error (bounded: one per candidate).
    let seen = std::cell::RefCell::new(Vec::new());
    let wanted = |statement: Value| {
        if predicate_of(&statement) == predicate_type {
            return Ok(statement);
        }
        seen.borrow_mut()
            .push(crate::oci::clip(predicate_of(&statement)));
        Err(Failure::new(Reason::AttestationMissing, String::new()))
    };
    prefetch(client, subject, attestor, "att");
    let bundles = for_each_bundle(client, subject, attestor, |b| {
        let statement = verify_bundle(subject.digest, attestor, b)?
            .statement
            .ok_or_else(|| {
                Failure::new(
                    Reason::AttestationMissing,
                    "bundle holds a message signature, not an attestation",
                )
            })?;
        wanted(statement)
    })?;
    let found = match bundles {
        Some(outcome) => outcome,
        None => for_each_legacy_layer(client, subject, attestor, "att", |l| {
            let statement = layers::verify_attestation(l, subject.digest, &attestor.options)?;
            wanted(statement)
        }),
    };
    // Kyverno's wording whatever failed; the class says what did.
    found.map_err(|f| {
        let reason = match f.reason {
            Reason::NotFound => Reason::AttestationMissing,
            other => other,
        };
        let message = format!(
            "required predicate type {predicate_type} not found, found {:?}",
            seen.into_inner()
        );
        Failure {
            reason,
            message,
            ..f
        }
    })
}

fn predicate_of(statement: &Value) -> &str {
    statement
        .get("predicateType")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Asks, at once, for everything discovery reads first: the bundle
/// referrers (with the tag-schema fallback) and the legacy
/// `sha256-<hex>.<suffix>` manifest. They are independent, so the cold
/// path waits for one round trip instead of three. Only when the legacy
/// image is in the image's own repository (no `cosign.source`).
fn prefetch(client: &Client, subject: &Subject, attestor: &ResolvedCosign, suffix: &str) {
    if attestor.repository.is_some() {
        return;
    }
    client.prefetch_discovery(
        subject.image,
        subject.digest,
        BUNDLE_ARTIFACT_TYPE,
        &[legacy_tag(attestor, subject.digest, suffix)],
    );
}

/// `<prefix>sha256-<hex>.<suffix>`: where cosign's legacy layout keeps
/// the signatures (`sig`) or attestations (`att`) of `digest`.
fn legacy_tag(attestor: &ResolvedCosign, digest: &str, suffix: &str) -> String {
    format!(
        "{}{}.{suffix}",
        attestor.tag_prefix,
        digest.replacen(':', "-", 1)
    )
}

/// Runs `verify` on the bundles attached to `subject` as referrers, one at
/// a time (each fetched, checked and dropped before the next is read),
/// until one passes. `None` when there is no bundle referrer, in which case
/// the legacy layout is searched instead. Signatures kept in another
/// repository are only looked up in the legacy layout.
fn for_each_bundle<T>(
    client: &Client,
    subject: &Subject,
    attestor: &ResolvedCosign,
    mut verify: impl FnMut(&[u8]) -> Result<T, Failure>,
) -> Result<Option<Result<T, Failure>>, Failure> {
    if attestor.repository.is_some() {
        return Ok(None);
    }
    let image = subject.image;
    // At most MAX_REFERRERS, or the client refuses the listing.
    let descriptors = client.referrers(image, subject.digest, Some(BUNDLE_ARTIFACT_TYPE))?;
    let mut any = false;
    let mut errors = Vec::new();
    for d in descriptors.iter().take(MAX_REFERRERS) {
        let manifest = client.referrer_manifest(image, subject.digest, d)?;
        let layer = single_layer(&manifest.json)?;
        if !layer.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX) {
            continue;
        }
        any = true;
        let bundle = client.blob(image, &layer.digest, MAX_REFERRER_LAYER_BYTES)?;
        let outcome = check_shape(client, &bundle, "/dsseEnvelope/payload")
            .map_err(|e| Failure::from(format!("bundle {}: {e}", layer.digest)))
            .and_then(|()| verify(&bundle));
        match outcome {
            Ok(v) => return Ok(Some(Ok(v))),
            Err(e) => errors.push(bounded(e)),
        }
    }
    Ok(any.then(|| first_success(errors.into_iter().map(Err))))
}

fn verify_bundle(
    digest: &str,
    attestor: &ResolvedCosign,
    bundle: &[u8],
) -> Result<bundles::Verified, Failure> {
    let artifact = Artifact::Sha256(sha256_bytes(digest)?);
    let opts = bundles::Options {
        ignore_tlog: attestor.options.ignore_tlog,
        ignore_sct: attestor.options.ignore_sct,
        now: attestor.options.now,
    };
    let verified = bundles::verify(bundle, artifact, &attestor.policy, &attestor.trust, &opts)?;
    // --- sec-fields: `cosign.annotations` on bundles ---
    // cosign v3 keeps `sign -a` annotations on the statement's subject and
    // checks them there; a message-signature bundle has nowhere to hold
    // them, so it cannot satisfy a policy that requires some.
    let wanted = &attestor.options.annotations;
    match &verified.statement {
        Some(s) => layers::check_subject_annotations(s, digest, wanted)?,
        None if !wanted.is_empty() => {
            return Err(Failure::new(
                Reason::PayloadMismatch,
                "bundle holds a message signature, which carries no annotations to check",
            ))
        }
        None => {}
    }
    // --- end sec-fields ---
    Ok(verified)
}

fn sha256_bytes(digest: &str) -> Result<[u8; 32], String> {
    let not_sha256 = || format!("{digest} is not a sha256 digest");
    let hex = digest.strip_prefix("sha256:").ok_or_else(not_sha256)?;
    crate::verify::encoding::unhex("image digest", hex)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(not_sha256)
}

/// Runs `verify` on the layers of the legacy
/// `<prefix>sha256-<hex>.<suffix>` image, one at a time (each payload
/// fetched, checked and dropped before the next is read), until one
/// passes. A missing tag means no signatures.
fn for_each_legacy_layer<T>(
    client: &Client,
    subject: &Subject,
    attestor: &ResolvedCosign,
    suffix: &str,
    mut verify: impl FnMut(&Layer) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let repo = attestor.repository.as_ref().unwrap_or(subject.image);
    let tag = legacy_tag(attestor, subject.digest, suffix);
    let manifest = match client.manifest(repo, &tag) {
        Ok(m) => m,
        Err(OciError::Status { status: 404, .. }) => {
            return Err(Failure::new(Reason::NotFound, "signatures not found"))
        }
        Err(e) => return Err(e.into()),
    };
    let descriptors = manifest
        .json
        .get("layers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if descriptors.len() > MAX_REFERRERS {
        return Err(Failure::from(format!(
            "{tag} has {} layers, more than the {MAX_REFERRERS} ivpol reads",
            descriptors.len()
        )));
    }
    let mut errors = Vec::new();
    for d in descriptors {
        let d = descriptor(d);
        let payload = client.blob(repo, &d.digest, MAX_REFERRER_LAYER_BYTES)?;
        let layer = Layer {
            media_type: d.media_type,
            payload,
            annotations: d.annotations,
        };
        let outcome = check_shape(client, &layer.payload, "/payload")
            .map_err(|e| Failure::from(format!("layer {}: {e}", d.digest)))
            .and_then(|()| verify(&layer));
        match outcome {
            Ok(v) => return Ok(v),
            Err(e) => errors.push(bounded(e)),
        }
    }
    first_success(errors.into_iter().map(Err))
}

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
        let tag = digest.replacen(':', "-", 1) + ".sig";
        let layers = fetched_layers(&client, manifest, fetched.sig_layers).map_err(|detail| {
            StandaloneError::SigManifest {
                tag: tag.clone(),
                detail,
            }
        })?;
        for (d, outcome) in layers {
            let verified = outcome
                .map_err(|e| (Reason::Malformed, e))
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
        },
        Some(reason) => StandaloneError::NoneVerified {
            reason,
            failures: errors,
        },
    }
    .into())
}

/// A layer a fetched `.sig` manifest names (its digest, for messages),
/// with its blob, or why it cannot be used.
type FetchedLayer = (String, Result<Layer, String>);

/// The layers a fetched `.sig` manifest names, each with its blob checked
/// against the descriptor's digest.
fn fetched_layers(
    client: &Client,
    manifest: &[u8],
    blobs: &[(String, Vec<u8>)],
) -> Result<Vec<FetchedLayer>, String> {
    let values = crate::oci::json_shape::check(manifest, &crate::oci::json_shape::MANIFEST)
        .map_err(|e| format!("manifest refused: {e}"))?;
    client.charge_parsed(values).map_err(|e| e.to_string())?;
    let manifest: Value =
        serde_json::from_slice(manifest).map_err(|e| format!("manifest is not JSON: {e}"))?;
    let descriptors = manifest
        .get("layers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if descriptors.len() > MAX_REFERRERS {
        return Err(format!(
            "{} layers, more than the {MAX_REFERRERS} ivpol reads",
            descriptors.len()
        ));
    }
    Ok(descriptors
        .iter()
        .map(|d| {
            let d = descriptor(d);
            let blob = blobs.iter().find(|(digest, _)| *digest == d.digest);
            let layer = match blob {
                None => Err("its blob was not fetched".to_string()),
                Some((_, bytes)) if crate::oci::digest::sha256(bytes) != d.digest => {
                    Err("its blob does not match its digest".to_string())
                }
                Some((_, bytes)) => check_shape(client, bytes, "/payload")
                    .map(|()| Layer {
                        media_type: d.media_type,
                        payload: bytes.clone(),
                        annotations: d.annotations,
                    })
                    .map_err(|e| e.to_string()),
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
