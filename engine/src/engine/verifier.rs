//! The engine side of `verifyImageSignatures`, `verifyAttestationSignatures`
//! and `extractPayload` for one policy evaluation (`docs/cel.md`).
//!
//! Each image is resolved to its manifest digest once per evaluation, and
//! every attestor verifies against that digest, so a tag re-pushed in the
//! middle of a request cannot mix two images. What verified is recorded for
//! `required` (shared by every policy of the request) and, for
//! attestations, kept so that `extractPayload` returns only verified
//! statements.
//!
//! Full successes go to the host's verification cache (`cache.rs`) under
//! the policy's content hash, each attestor's name and evaluated trust
//! material, the repository and that digest, within the registry
//! credentials the evidence was fetched with; a hit counts every attestor
//! and restores the payload. A tag's digest may come from the host's
//! short-lived digest cache (bound to the same credentials) instead of the
//! registry.

use super::attestor_error::AttestorError;
use super::cache::{self, Credentials, Function, KeyPrefix, SharedCache};
use super::cosign::{self, ResolvedCosign};
use super::failure::Failure;
use super::images::matches_image_references;
use super::notary::{self, ResolvedNotary};
use super::required::Verifications;
use super::results::{CacheUse, Verification, VerifierKind, MAX_VERIFICATIONS};
use super::revocation::RevocationFetch;
use super::FastMap;
use crate::cel::verify_lib::{ImageVerifier, VerifierError};
use crate::cel::{Bindings, BindingsBuilder};
use crate::images::reference::{self, ImageRef};
use crate::notary::Target;
use crate::oci::{Client, Transport};
use crate::policy::attestor::{AttestorKind, CompiledAttestor, StringSource};
use crate::policy::spec::Attestation;
use cel::Value;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

pub(super) use super::verifier_policy::VerifierPolicy;
use super::verifier_policy::{PrefixMemo, PrefixScope};

pub(super) type SharedVerifications = Arc<Mutex<Verifications>>;

/// What each attestor concluded in one policy's evaluation, in order.
pub(super) type DecisionLog = Arc<Mutex<Vec<Verification>>>;

/// Empties `log` (at most [`MAX_VERIFICATIONS`] entries).
pub(super) fn take(log: &DecisionLog) -> Vec<Verification> {
    std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner()))
}

pub(super) struct PolicyVerifier {
    policy: Arc<VerifierPolicy>,
    /// Bindings for attestor expressions and `ref` matching (without the
    /// verification functions themselves), built on first use: a cache
    /// hit of fixed attestors, matched by no expression, never reads them.
    bindings: OnceLock<Bindings>,
    builder: BindingsBuilder,
    transport: Arc<dyn Transport + Send + Sync>,
    cache: SharedCache,
    /// Where `cosign.key.kms` keys come from.
    keys: super::keys::SharedKeys,
    record: SharedVerifications,
    log: DecisionLog,
    /// The time certificates are checked at, read on first use: a cache
    /// hit never needs it, and reading the clock is a host call.
    now: OnceLock<i64>,
    state: Mutex<State>,
}

/// An image reference and the manifest digest it resolved to, shared by
/// every verification of the image in the evaluation.
type ResolvedImage = Arc<(Arc<ImageRef>, String)>;

/// An attestor with its expressions evaluated and its trust parsed.
enum Resolved {
    Cosign(Box<ResolvedCosign>),
    Notary(ResolvedNotary),
}

#[derive(Default)]
struct State {
    digests: FastMap<String, Result<ResolvedImage, Failure>>,
    /// The manifest descriptor of each resolved image (Notary signs it).
    targets: FastMap<String, Result<Target, Failure>>,
    attestors: FastMap<String, Result<Arc<Resolved>, AttestorError>>,
    /// The fingerprint of each attestor's evaluated trust material.
    fingerprints: FastMap<String, Result<String, AttestorError>>,
    /// Verified in-toto statements and referrer payloads, by (image,
    /// attestation name).
    payloads: FastMap<(String, String), serde_json::Value>,
    /// The key prefix of the last verification's attestors, which the
    /// next image usually shares.
    prefix: Option<PrefixMemo>,
}

impl PolicyVerifier {
    pub(super) fn new(
        policy: Arc<VerifierPolicy>,
        builder: BindingsBuilder,
        transport: Arc<dyn Transport + Send + Sync>,
        host: super::keys::HostServices,
        record: SharedVerifications,
        log: DecisionLog,
    ) -> PolicyVerifier {
        PolicyVerifier {
            policy,
            bindings: OnceLock::new(),
            builder,
            transport,
            cache: host.cache,
            keys: host.keys,
            record,
            log,
            now: OnceLock::new(),
            state: Mutex::new(State::default()),
        }
    }

    /// Where Notary chains' revocation answers come from.
    fn revocation(&self) -> RevocationFetch<'_> {
        RevocationFetch {
            transport: &*self.transport,
            cache: &*self.cache,
        }
    }

    fn now(&self) -> i64 {
        *self.now.get_or_init(crate::verify::unix_now)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bindings(&self) -> &Bindings {
        self.bindings.get_or_init(|| self.builder.clone().build())
    }

    fn matches(&self, image: &str) -> Result<bool, VerifierError> {
        // `matches_image_references` admits every image without matchers
        // too; asked here first, so that no bindings are built for it.
        if self.policy.matchers.is_empty() {
            return Ok(true);
        }
        matches_image_references(&self.policy.matchers, image, self.bindings())
            .map_err(|e| VerifierError::MatchImageReferences(e.to_string()))
    }

    /// The image and the manifest digest it resolves to, once per evaluation.
    fn resolve(&self, image: &str) -> Result<ResolvedImage, Failure> {
        if let Some(hit) = self.state().digests.get(image) {
            return hit.clone();
        }
        let resolved = crate::images::parsed::parse(image)
            .map_err(|e| Failure::from(e.to_string()))
            .and_then(|r| match r.digest().map(str::to_string) {
                Some(d) => Ok(Arc::new((r, d))),
                None => self.resolve_tag(image, &r).map(|d| Arc::new((r, d))),
            })
            .map_err(|e| e.context("failed to get imagedata"));
        self.state()
            .digests
            .insert(image.to_string(), resolved.clone());
        resolved
    }

    /// A tag's digest: from the host's short-lived digest cache, else from
    /// the registry (and then recorded there), within the policy's
    /// registry credentials.
    fn resolve_tag(&self, image: &str, r: &ImageRef) -> Result<String, Failure> {
        let name = format!("{}/{}:{}", r.registry(), r.repository(), r.identifier());
        let credentials = Credentials::new(
            [Client::api_host(r.registry()).to_string()],
            &self.policy.secrets,
            self.policy.tenant.as_deref(),
        );
        if let Some(digest) = self.cache.get_digest(&name, &credentials) {
            return Ok(digest);
        }
        let m = Client::new(&*self.transport).manifest(r, r.identifier())?;
        self.cache.put_digest(&name, &credentials, &m.digest);
        // The tag's manifest is at hand: keep its descriptor.
        self.state()
            .targets
            .insert(image.to_string(), Ok(notary::target_of(&m)));
        Ok(m.digest)
    }

    /// The cache key of a verification of `resolved` by `attestors`, and
    /// the credentials it was fetched with; none when an attestor's
    /// material cannot be evaluated (the verification then reports why).
    fn cache_key(
        &self,
        function: Function,
        attestation: &str,
        attestors: &[String],
        resolved: &(Arc<ImageRef>, String),
    ) -> Option<(String, Arc<Credentials>)> {
        let (image_ref, digest) = resolved;
        let prefix = self.key_prefix(function, attestation, attestors)?;
        let repository = [image_ref.registry(), "/", image_ref.repository()];
        let key = prefix.key(&repository, digest);
        Some((key, self.credentials(image_ref, attestors)))
    }

    /// The key prefix of `attestors` verifying `function` (and
    /// `attestation`), kept for the next image with the same ones, and
    /// across requests when every attestor is fixed.
    fn key_prefix(
        &self,
        function: Function,
        attestation: &str,
        attestors: &[String],
    ) -> Option<KeyPrefix> {
        let scope = PrefixScope {
            function,
            attestation,
            attestors,
        };
        if let Some(memo) = self.state().prefix.as_ref().filter(|m| m.is(&scope)) {
            return memo.prefix.clone();
        }
        let fixed = attestors.iter().all(|a| self.policy.is_fixed(a));
        if let Some(kept) = fixed.then(|| self.policy.kept_prefix(&scope)).flatten() {
            // Found as fast again for the next image: not copied here.
            return Some(kept);
        }
        let prefix = self.new_prefix(&scope);
        let memo = PrefixMemo {
            function,
            attestation: attestation.to_string(),
            attestors: attestors.to_vec(),
            prefix: prefix.clone(),
        };
        if fixed && prefix.is_some() {
            self.policy.keep_prefix(memo.clone());
        }
        self.state().prefix = Some(memo);
        prefix
    }

    /// A key prefix made from the attestors' fingerprints.
    fn new_prefix(&self, scope: &PrefixScope<'_>) -> Option<KeyPrefix> {
        let PrefixScope {
            function,
            attestation,
            attestors,
        } = *scope;
        attestors
            .iter()
            .map(|name| self.fingerprint(name).map(|f| (name.as_str(), f)))
            .collect::<Result<Vec<_>, _>>()
            .ok()
            .map(|fingerprints| {
                let fingerprints: Vec<(&str, &str)> =
                    fingerprints.iter().map(|(n, f)| (*n, f.as_str())).collect();
                let hash = &self.policy.content_hash;
                KeyPrefix::new(hash, function, attestation, &fingerprints)
            })
    }

    /// The registries a verification reads (the image's, and any
    /// `source.repository` of its attestors) with the policy's secrets,
    /// kept with the policy for its next image of the same registry and
    /// attestors.
    fn credentials(&self, image_ref: &ImageRef, attestors: &[String]) -> Arc<Credentials> {
        self.policy.scope(image_ref.registry(), attestors, || {
            let elsewhere = attestors
                .iter()
                .filter_map(|n| self.compiled(n)?.signature_repository())
                .filter_map(|r| reference::parse(r).ok())
                .map(|r| Client::api_host(r.registry()).to_string());
            let own = Client::api_host(image_ref.registry()).to_string();
            Credentials::new(
                std::iter::once(own).chain(elsewhere),
                &self.policy.secrets,
                self.policy.tenant.as_deref(),
            )
        })
    }

    /// The fingerprint of what the attestor's expressions evaluate to for
    /// this request, once per evaluation. An unknown attestor has none.
    fn fingerprint(&self, name: &str) -> Result<String, AttestorError> {
        if let Some(hit) = self.state().fingerprints.get(name) {
            return hit.clone();
        }
        let computed = match self.compiled(name) {
            None => Err(AttestorError::Unknown(name.to_string())),
            Some(a) if self.policy.is_fixed(name) => match a.fixed_fingerprint.get() {
                Some(kept) => Ok(kept.clone()),
                None => self
                    .evaluated_fingerprint(a)
                    .map(|f| a.fixed_fingerprint.get_or_init(|| f).clone()),
            },
            Some(a) => self.evaluated_fingerprint(a),
        };
        self.state()
            .fingerprints
            .insert(name.to_string(), computed.clone());
        computed
    }

    /// An error when one of `attestors` has a KMS key or a trust file the
    /// host could not read (the fingerprint reads every one, once per
    /// evaluation).
    fn keys_readable(&self, attestors: &[String]) -> Result<(), VerifierError> {
        for name in attestors {
            // A fixed attestor names its material in the policy: no key or
            // file the host reads, so nothing to find unreadable.
            if self.policy.is_fixed(name) {
                continue;
            }
            // Every image after the first finds the fingerprint made:
            // looked at in place, not copied.
            let known = self.state().fingerprints.get(name).map(unreadable);
            let why = match known {
                Some(why) => why,
                None => unreadable(&self.fingerprint(name)),
            };
            if let Some(e) = why {
                return Err(VerifierError::KeyUnavailable(format!(
                    "attestor {name}: {e}"
                )));
            }
        }
        Ok(())
    }

    fn evaluated_fingerprint(&self, attestor: &CompiledAttestor) -> Result<String, AttestorError> {
        attestor
            .sources()
            .into_iter()
            .map(|(label, source)| self.string(source).map(|v| (label, v)))
            .collect::<Result<Vec<_>, _>>()
            .map(|values| cache::fingerprint(values.iter().map(|(l, v)| (l.as_str(), v.as_str()))))
    }

    /// The resolved image's manifest descriptor (media type and size too),
    /// fetched by digest when the image named one.
    fn target(&self, image: &str, image_ref: &ImageRef, digest: &str) -> Result<Target, Failure> {
        if let Some(hit) = self.state().targets.get(image) {
            return hit.clone();
        }
        let target = Client::new(&*self.transport)
            .manifest(image_ref, digest)
            .map(|m| notary::target_of(&m))
            .map_err(Failure::from);
        self.state()
            .targets
            .insert(image.to_string(), target.clone());
        target
    }

    /// The attestor's trust options, its expressions evaluated on first use.
    fn attestor(&self, name: &str) -> Result<Arc<Resolved>, AttestorError> {
        if let Some(hit) = self.state().attestors.get(name) {
            return hit.clone();
        }
        let resolved = match self.compiled(name) {
            None => Err(AttestorError::Unknown(name.to_string())),
            Some(a) => match &a.kind {
                AttestorKind::Cosign(c) => {
                    cosign::resolve(c, |s| self.string(s), self.now(), &*self.transport)
                        .map(|c| Resolved::Cosign(Box::new(c)))
                }
                AttestorKind::Notary(n) => {
                    notary::resolve(n, |s| self.string(s), self.now()).map(Resolved::Notary)
                }
            }
            .map(Arc::new),
        };
        self.state()
            .attestors
            .insert(name.to_string(), resolved.clone());
        resolved
    }

    fn compiled(&self, name: &str) -> Option<&CompiledAttestor> {
        self.policy.attestors.iter().find(|a| a.name == name)
    }

    /// Kyverno's errors for an attestation an attestor cannot verify:
    /// cosign verifies in-toto statements, Notary verifies referrers.
    fn check_kinds(&self, spec: &Attestation, attestors: &[String]) -> Result<(), VerifierError> {
        for kind in attestors
            .iter()
            .filter_map(|n| self.compiled(n))
            .map(|a| &a.kind)
        {
            match kind {
                AttestorKind::Cosign(_) if spec.intoto.is_none() => {
                    return Err(VerifierError::CosignNeedsIntoto)
                }
                AttestorKind::Notary(_) if spec.referrer.is_none() => {
                    return Err(VerifierError::NotaryNeedsReferrer)
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// One attestor's verdict on the image's signatures.
    fn verify_signature(
        &self,
        image: &str,
        resolved: &(Arc<ImageRef>, String),
        name: &str,
    ) -> Result<(), Failure> {
        let (image_ref, digest) = resolved;
        let client = Client::new(&*self.transport);
        let attestor = self.attestor(name).map_err(Failure::from)?;
        match &*attestor {
            Resolved::Cosign(c) => {
                let subject = cosign::Subject {
                    image: image_ref,
                    digest,
                };
                cosign::verify_signatures(&client, &subject, c)
            }
            Resolved::Notary(n) => {
                let target = self.target(image, image_ref, digest)?;
                notary::verify_signatures(&client, image_ref, &target, n, &self.revocation())
            }
        }
    }

    /// One attestor's verified payload for the attestation, if any.
    fn verify_attestation(
        &self,
        resolved: &(Arc<ImageRef>, String),
        spec: &Attestation,
        name: &str,
    ) -> Result<serde_json::Value, Failure> {
        let (image_ref, digest) = resolved;
        let client = Client::new(&*self.transport);
        let attestor = self.attestor(name).map_err(Failure::from)?;
        match (&*attestor, &spec.intoto, &spec.referrer) {
            (Resolved::Cosign(c), Some(intoto), _) => {
                let subject = cosign::Subject {
                    image: image_ref,
                    digest,
                };
                cosign::verify_attestation(&client, &subject, c, &intoto.kind)
            }
            (Resolved::Notary(n), _, Some(referrer)) => notary::verify_referrer(
                &client,
                image_ref,
                digest,
                &referrer.kind,
                n,
                &self.revocation(),
            ),
            // `check_kinds` turned these into errors already.
            _ => Err("the attestor cannot verify this attestation".into()),
        }
    }

    /// The image resolved to its digest; when it does not resolve, every
    /// attestor is noted as failing for that reason (Kyverno's text), as
    /// taking the time since `started`.
    fn resolved(
        &self,
        image: &str,
        attestation: Option<&str>,
        attestors: &[String],
        started: Instant,
    ) -> Result<ResolvedImage, VerifierError> {
        self.resolve(image).map_err(|failure| {
            let checked = Checked {
                image,
                digest: None,
                attestation,
            };
            for name in attestors {
                let outcome = Err(failure.clone());
                self.note(&checked, name, CacheUse::Unkeyed, started, outcome);
            }
            VerifierError::Unresolved(failure.message)
        })
    }

    /// A cache hit: every attestor verified earlier.
    fn hit(&self, checked: &Checked<'_>, attestors: &[String], started: Instant) -> i64 {
        for name in attestors {
            self.note(checked, name, CacheUse::Hit, started, Ok(()));
        }
        self.record(checked.image, true);
        attestors.len() as i64
    }

    /// Notes what `attestor` concluded about `checked` since `started`
    /// (bounded).
    fn note(
        &self,
        checked: &Checked<'_>,
        attestor: &str,
        cache: CacheUse,
        started: Instant,
        outcome: Result<(), Failure>,
    ) {
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let attestor_kind = match self.compiled(attestor).map(|a| &a.kind) {
            Some(AttestorKind::Notary(_)) => VerifierKind::Notary,
            _ => VerifierKind::Cosign,
        };
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() >= MAX_VERIFICATIONS {
            return;
        }
        log.push(
            Verification {
                image: crate::oci::clip(checked.image),
                digest: checked.digest.map(String::from),
                attestor: attestor.to_string(),
                attestor_kind,
                micros,
                attestation: checked.attestation.map(String::from),
                cache,
                failure: outcome.err().map(super::referrers::bounded),
                summary: String::new(),
            }
            .summarised(),
        );
    }

    fn string(&self, source: &StringSource) -> Result<String, AttestorError> {
        match source {
            StringSource::Value(v) => Ok(v.clone()),
            StringSource::Kms(uri) => self
                .keys
                .public_key(uri, self.policy.tenant.as_deref())
                .map_err(|why| AttestorError::Kms {
                    uri: uri.clone(),
                    why,
                }),
            StringSource::File(path) => self
                .keys
                .trust_file(path, self.policy.tenant.as_deref())
                .map_err(|why| AttestorError::TrustFile {
                    path: path.clone(),
                    why,
                }),
            StringSource::Expression(e) => match e.eval(self.bindings())? {
                Value::String(s) => Ok(s.to_string()),
                other => Err(AttestorError::NotAString {
                    expression: e.source.clone(),
                    got: crate::cel::convert::type_name(&other).to_string(),
                }),
            },
        }
    }

    fn record(&self, image: &str, verified: bool) {
        self.record
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(image, verified);
    }

    fn attestation(&self, name: &str) -> Result<&Attestation, VerifierError> {
        self.policy
            .attestations
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| VerifierError::UnknownAttestation(name.to_string()))
    }
}

/// What a verification was of, for its [`Verification`] record.
struct Checked<'a> {
    image: &'a str,
    /// None when the image did not resolve.
    digest: Option<&'a str>,
    attestation: Option<&'a str>,
}

/// How a verification that was not a cache hit used the cache.
fn miss_or_unkeyed(keyed: bool) -> CacheUse {
    match keyed {
        true => CacheUse::Miss,
        false => CacheUse::Unkeyed,
    }
}

/// Why a fingerprint could not be made, when it is a key or trust file
/// the host could not read.
fn unreadable(fingerprint: &Result<String, AttestorError>) -> Option<AttestorError> {
    match fingerprint {
        Err(e @ (AttestorError::Kms { .. } | AttestorError::TrustFile { .. })) => Some(e.clone()),
        _ => None,
    }
}

impl ImageVerifier for PolicyVerifier {
    fn verify_image_signatures(
        &self,
        image: &str,
        attestors: &[String],
    ) -> Result<i64, VerifierError> {
        if !self.matches(image)? {
            return Ok(0);
        }
        // A verification's time includes resolving its image.
        let started = Instant::now();
        let resolved = self.resolved(image, None, attestors, started)?;
        if attestors.is_empty() {
            return Ok(0);
        }
        self.keys_readable(attestors)?;
        let checked = Checked {
            image,
            digest: Some(&resolved.1),
            attestation: None,
        };
        let key = self.cache_key(Function::ImageSignatures, "", attestors, &resolved);
        // A hit is a full success recorded earlier: every attestor verified.
        if let Some((key, credentials)) = &key {
            if self.cache.get(key, credentials).is_some() {
                return Ok(self.hit(&checked, attestors, started));
            }
        }
        let cache = miss_or_unkeyed(key.is_some());
        let mut verified = 0;
        for name in attestors {
            let started = Instant::now();
            let outcome = self.verify_signature(image, &resolved, name);
            verified += usize::from(outcome.is_ok());
            self.note(&checked, name, cache, started, outcome);
        }
        if let (true, Some((key, credentials))) = (verified == attestors.len(), &key) {
            self.cache.put(key, credentials, &[]);
        }
        self.record(image, verified > 0);
        Ok(verified as i64)
    }

    fn verify_attestation_signatures(
        &self,
        image: &str,
        attestation: &str,
        attestors: &[String],
    ) -> Result<i64, VerifierError> {
        if !self.matches(image)? {
            return Ok(0);
        }
        let spec = self.attestation(attestation)?;
        self.check_kinds(spec, attestors)?;
        let started = Instant::now();
        let resolved = self.resolved(image, Some(attestation), attestors, started)?;
        if attestors.is_empty() {
            return Ok(0);
        }
        self.keys_readable(attestors)?;
        let checked = Checked {
            image,
            digest: Some(&resolved.1),
            attestation: Some(attestation),
        };
        let slot = (image.to_string(), attestation.to_string());
        let key = self.cache_key(
            Function::AttestationSignatures,
            attestation,
            attestors,
            &resolved,
        );
        // A hit carries the payload that verified, for `extractPayload`.
        let cached = key.as_ref().and_then(|(k, c)| self.cache.get(k, c));
        if let Some(payload) = cached.and_then(|v| ivpol_refs::json::from_slice(&v).ok()) {
            self.state().payloads.entry(slot).or_insert(payload);
            return Ok(self.hit(&checked, attestors, started));
        }
        let cache = miss_or_unkeyed(key.is_some());
        let mut verified = 0;
        for name in attestors {
            let started = Instant::now();
            let outcome = match self.verify_attestation(&resolved, spec, name) {
                Ok(payload) => {
                    verified += 1;
                    self.state().payloads.entry(slot.clone()).or_insert(payload);
                    Ok(())
                }
                Err(e) => Err(e),
            };
            self.note(&checked, name, cache, started, outcome);
        }
        if let (true, Some((key, credentials))) = (verified == attestors.len(), &key) {
            let payload = self.state().payloads.get(&slot).map(serde_json::to_vec);
            if let Some(Ok(bytes)) = payload {
                self.cache.put(key, credentials, &bytes);
            }
        }
        self.record(image, verified > 0);
        Ok(verified as i64)
    }

    fn extract_payload(
        &self,
        image: &str,
        attestation: &str,
    ) -> Result<serde_json::Value, VerifierError> {
        let spec = self.attestation(attestation)?;
        let key = (image.to_string(), attestation.to_string());
        if let Some(statement) = self.state().payloads.get(&key) {
            return Ok(statement.clone());
        }
        // Kyverno's wording, typo included, for an in-toto attestation.
        Err(match &spec.referrer {
            None => VerifierError::NotVerified,
            Some(r) => VerifierError::NoVerifiedReferrer {
                kind: r.kind.clone(),
                image: image.to_string(),
            },
        })
    }
}
