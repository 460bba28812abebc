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
use super::referrers::{bounded, check_shape, descriptor, first_success, single_layer};
use crate::images::reference::{self, ImageRef};
use crate::oci::transport::HttpRequest;
use crate::oci::{Client, Transport, MAX_REFERRERS, MAX_REFERRER_LAYER_BYTES};
use crate::policy::attestor::{CompiledCosign, StringSource, Tuf};
use crate::tuf::{self, TufError};
use crate::verify::cosign::{self as layers, Layer, Options, Verifier};
use crate::verify::keys::{HashAlgorithm, PublicKey};
use crate::verify::sigstore_bundle::{self as bundles, Artifact, Policy};
use crate::verify::standalone::StandaloneError;
use crate::verify::trust::{CertificateAuthority, LogKey, TrustMaterial, Validity};
use crate::verify::x509::fulcio::IdentityRule;
use crate::verify::x509::Certificate;
use crate::verify::{Reason, VerifyError};
use serde_json::Value;

mod fetched;

pub use fetched::{verify_artifact, Fetched};

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
        (None, Some(t)) => {
            let root = match &c.tuf_root_file {
                Some(file) => string(file)?.into_bytes(),
                None => t.root_json().map_err(AttestorError::Spec)?,
            };
            tuf_trust(t, &root, transport, now)?
        }
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
    // `tsaCertChain`: one more timestamp authority for bundles, and the
    // one that must have stamped legacy signatures (`UseSignedTimestamps`).
    let tsa = match &ctlog.tsa_cert_chain {
        Some(pem) => vec![tsa_authority(pem)?],
        None => Vec::new(),
    };
    trust.tsas.extend(tsa.iter().cloned());
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
            tsa,
            now,
        },
        trust,
        policy,
        repository,
        tag_prefix: source.tag_prefix.unwrap_or_default(),
    })
}

/// The trust material in the `tuf` repository's `trusted_root.json`,
/// verified from `root` (`tuf.root.data` or `tuf.root.path`) and fetched
/// from the mirror through `transport` (so the host's allow-list decides
/// whether it is reachable).
fn tuf_trust(
    t: &Tuf,
    root: &[u8],
    transport: &dyn Transport,
    now: i64,
) -> Result<TrustMaterial, AttestorError> {
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
    let json = tuf::trusted_root(root, &fetch, now).map_err(|e| AttestorError::Tuf {
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

/// `ctlog.tsaCertChain` (leaf first, root last) as a timestamp authority,
/// valid at all times.
fn tsa_authority(pem: &str) -> Result<CertificateAuthority, AttestorError> {
    let certs = Certificate::parse_pem(pem)
        .map_err(|e| AttestorError::Spec(format!("ctlog.tsaCertChain: {e}")))?;
    Ok(CertificateAuthority {
        certs,
        validity: Validity::default(),
        uri: String::new(),
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
        ivpol_refs::digest_tag(digest)
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
    let artifact = Artifact::Sha256(sha256_bytes(digest).map_err(VerifyError::from)?);
    let opts = bundles::Options {
        ignore_tlog: attestor.options.ignore_tlog,
        ignore_sct: attestor.options.ignore_sct,
        require_timestamp: !attestor.options.tsa.is_empty(),
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

/// The 32 bytes of a `sha256:<hex>` digest.
fn sha256_bytes(digest: &str) -> Result<[u8; 32], StandaloneError> {
    let not_sha256 = || StandaloneError::NotSha256(digest.to_string());
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
        Err(e) if e.is_not_found() => {
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
