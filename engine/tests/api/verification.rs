//! The verification functions' semantics that need no signature: image
//! matching, unknown names, `extractPayload` ordering, errors versus
//! counted failures, and `required` fed by them. Every test runs with the
//! `Offline` transport, so any registry call shows up as an error.
//! Verifying real signatures is covered end to end and in `verify::`.

use super::*;

/// A real trust-store certificate (notation's test root): trust material
/// must parse at load, even where nothing is verified with it.
const NOTARY_ROOT: &str =
    include_str!("../../../conformance/notary/notation/internal/testdata/NotationTestRoot.pem");

pub(super) const KEY_ATTESTOR: &str = r#"
attestors:
  - name: cosign
    cosign:
      key:
        data: |
          -----BEGIN PUBLIC KEY-----
          MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+lmmxGvQwZYNU1scQBJ4FiWWgOWU
          9xE+0y7rYzP/31bDkonjc08sMX1Qxz7SQev9+mREk+3y03toB/gjxLYQSQ==
          -----END PUBLIC KEY-----
      ctlog:
        insecureIgnoreTlog: true
attestations:
  - name: slsa
    intoto:
      type: https://slsa.dev/provenance/v1
"#;

/// A pods policy verifying with the key attestor; `required` as given.
fn verifying(name: &str, required: bool, extra: &str) -> String {
    let config = format!(
        "validationConfigurations:\n  mutateDigest: false\n  verifyDigest: false\n  required: {required}\n"
    );
    ivp(name, &spec(&[PODS, &config, KEY_ATTESTOR, extra]))
}

fn validation(expression: &str) -> String {
    format!("validations:\n  - expression: >-\n      {expression}\n    message: not verified\n")
}

#[test]
fn images_outside_match_image_references_count_zero_without_a_registry_call() {
    let extra = format!(
        "matchImageReferences:\n  - glob: 'registry.example.com/*'\n{}",
        validation(
            "verifyImageSignatures('ghcr.io/other/image:1', [attestors.cosign]) == 0 && verifyAttestationSignatures('ghcr.io/other/image:1', attestations.slsa, [attestors.cosign]) == 0"
        )
    );
    let set = load(&[verifying("outside", false, &extra)]);
    let v = validate(&set, &create(&pod("p", &["registry.example.com/app:1"])));
    assert_eq!(outcomes(&v), one("outside", Status::Pass, "success"));
}

#[test]
fn an_unknown_attestation_is_an_error() {
    let extra = validation(
        "images.containers.all(i, verifyAttestationSignatures(i, 'nope', [attestors.cosign]) > 0)",
    );
    let set = load(&[verifying("unknown", false, &extra)]);
    let v = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).contains("attestation not found in policy: nope"),
        "{}",
        only_message(&v)
    );
}

#[test]
fn extract_payload_before_verification_is_kyvernos_error() {
    let extra = validation(
        "images.containers.all(i, extractPayload(i, attestations.slsa).predicateType != '')",
    );
    let set = load(&[verifying("early", false, &extra)]);
    let v = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).contains(
            "failed to get payload: intoto attestation payload cannot be fetch before verifying intoto attestation"
        ),
        "{}",
        only_message(&v)
    );
}

#[test]
fn an_image_that_cannot_be_resolved_is_an_error() {
    let extra =
        validation("images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) > 0)");
    let set = load(&[verifying("resolve", false, &extra)]);
    let v = validate(&set, &create(&pod("p", &[SIGNED])));
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        only_message(&v).contains("failed to get imagedata:"),
        "{}",
        only_message(&v)
    );
}

/// A digest needs no resolution; the signature lookup then fails (offline),
/// which is a counted failure, not an error, and `required` sees it.
#[test]
fn failed_verifications_are_counted_and_fail_required() {
    let image = pinned();
    let extra = validation(&format!(
        "verifyImageSignatures('{image}', [attestors.cosign]) == 0"
    ));
    let set = load(&[verifying("counted", true, &extra)]);
    let v = validate(&set, &create(&pod("p", &[&image])));
    assert_eq!(
        outcomes(&v),
        one(
            "counted",
            Status::Fail,
            &format!("image {image} failed signature or attestation verification")
        )
    );
}

/// `required` is shared by the request's policies: a policy that verifies
/// nothing itself is failed by another policy's failed verification.
#[test]
fn required_sees_verifications_made_by_other_policies() {
    let image = pinned();
    let verifier = verifying(
        "a-verifier",
        false,
        &validation("images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) == 0)"),
    );
    let catch_all = verifying("b-catch-all", true, &validation("true"));
    let set = load(&[verifier, catch_all]);
    let v = validate(&set, &create(&pod("p", &[&image])));
    assert_eq!(
        outcomes(&v),
        vec![
            (
                "a-verifier".to_string(),
                Status::Pass,
                "success".to_string()
            ),
            (
                "b-catch-all".to_string(),
                Status::Fail,
                format!("image {image} failed signature or attestation verification")
            ),
        ]
    );
}

/// A policy with a cosign and a Notary attestor, an in-toto and a
/// referrer attestation. Nothing is verified with their trust material
/// here (the tests run offline), but it must parse to load.
fn mixed(name: &str, expression: &str) -> String {
    let root = NOTARY_ROOT.trim_end().replace('\n', "\n          ");
    let attestors = format!(
        r#"
attestors:
  - name: cosign
    cosign:
      key:
        data: |
          -----BEGIN PUBLIC KEY-----
          MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+lmmxGvQwZYNU1scQBJ4FiWWgOWU
          9xE+0y7rYzP/31bDkonjc08sMX1Qxz7SQev9+mREk+3y03toB/gjxLYQSQ==
          -----END PUBLIC KEY-----
  - name: notary
    notary:
      certs:
        value: |
          {root}
attestations:
  - name: slsa
    intoto:
      type: https://slsa.dev/provenance/v1
  - name: sbom
    referrer:
      type: application/vnd.cyclonedx+json
"#
    );
    let config = "validationConfigurations:\n  mutateDigest: false\n  verifyDigest: false\n  required: false\n";
    ivp(
        name,
        &spec(&[PODS, config, &attestors, &validation(expression)]),
    )
}

fn error_of(expression: &str) -> String {
    let set = load(&[mixed("kinds", expression)]);
    let v = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(v.results[0].status, Status::Error, "{v:?}");
    only_message(&v).to_string()
}

#[test]
fn notary_attestors_only_verify_referrer_attestations() {
    let message = error_of(
        "images.containers.all(i, verifyAttestationSignatures(i, attestations.slsa, [attestors.notary]) > 0)",
    );
    assert!(
        message.contains("notary verifier only supports oci 1.1 referrers as attestations"),
        "{message}"
    );
}

#[test]
fn cosign_attestors_only_verify_intoto_attestations() {
    let message = error_of(
        "images.containers.all(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.notary, attestors.cosign]) > 0)",
    );
    assert!(
        message.contains("cosign verifier only supports intoto attestations"),
        "{message}"
    );
}

/// Kyverno falls back to the first referrer, unverified (#17130); ivpol
/// never hands out a payload that did not verify in this evaluation.
#[test]
fn a_referrer_payload_is_never_extracted_unverified() {
    let message =
        error_of("images.containers.all(i, extractPayload(i, attestations.sbom).bomFormat != '')");
    assert!(
        message.contains(
            "failed to get payload: no verified referrer of type application/vnd.cyclonedx+json"
        ),
        "{message}"
    );
    let after_failure = error_of(
        "images.containers.all(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.notary]) == 0 && extractPayload(i, attestations.sbom).bomFormat != '')",
    );
    assert!(
        after_failure.contains("failed to get payload: no verified referrer"),
        "{after_failure}"
    );
}

/// A Notary trust store that does not parse, like an unreachable registry,
/// is a counted failure: the attestor simply verifies nothing.
#[test]
fn notary_failures_are_counted() {
    let set = load(&[mixed(
        "counted",
        "images.containers.all(i, verifyImageSignatures(i, [attestors.notary]) == 0 && verifyAttestationSignatures(i, attestations.sbom, [attestors.notary]) == 0)",
    )]);
    let v = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(outcomes(&v), one("counted", Status::Pass, "success"));
}

// ------------------------------------------------------ verification cache

use ivpol_engine::engine::cache::{self, Credentials, Function, KeyParts};
use ivpol_policy::policy::attestor::StringSource;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// An in-memory cache for the engine's own tests: it remembers every put
/// and counts lookups.
#[derive(Default)]
pub struct MemoryCache {
    /// Every stored value, by key.
    pub entries: std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>,
    /// Every recorded tag digest, by image.
    pub digests: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// How many `get`s were made.
    pub gets: std::sync::atomic::AtomicUsize,
}

impl MemoryCache {
    /// What the host does: the key completed with the credential scope
    /// (here the scope itself stands in for the credentials' identity).
    fn scoped(key: &str, credentials: &Credentials) -> String {
        format!("{key}|{credentials:?}")
    }

    /// Stores an entry as a `put` within `credentials` would.
    pub fn insert(&self, key: &str, credentials: &Credentials, value: Vec<u8>) {
        if let Ok(mut m) = self.entries.lock() {
            m.insert(Self::scoped(key, credentials), value);
        }
    }

    /// Records a tag's digest as a `put_digest` within `credentials` would.
    pub fn insert_digest(&self, image: &str, credentials: &Credentials, digest: &str) {
        if let Ok(mut m) = self.digests.lock() {
            m.insert(Self::scoped(image, credentials), digest.to_string());
        }
    }
}

impl cache::VerificationCache for MemoryCache {
    fn get(&self, key: &str, credentials: &Credentials) -> Option<Vec<u8>> {
        self.gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let key = Self::scoped(key, credentials);
        self.entries.lock().ok()?.get(&key).cloned()
    }
    fn put(&self, key: &str, credentials: &Credentials, value: &[u8]) {
        if let Ok(mut m) = self.entries.lock() {
            m.insert(Self::scoped(key, credentials), value.to_vec());
        }
    }
    fn get_digest(&self, image: &str, credentials: &Credentials) -> Option<String> {
        let key = Self::scoped(image, credentials);
        self.digests.lock().ok()?.get(&key).cloned()
    }
    fn put_digest(&self, image: &str, credentials: &Credentials, digest: &str) {
        if let Ok(mut m) = self.digests.lock() {
            m.insert(Self::scoped(image, credentials), digest.to_string());
        }
    }
}

/// The fingerprint of the `cosign` attestor's inline material, as the
/// engine computes it (its values are inline, so no request is needed).
fn inline_fingerprint(set: &PolicySet) -> String {
    let policy = set.policies().next().expect("a policy");
    let attestor = policy
        .attestors
        .iter()
        .find(|a| a.name == "cosign")
        .expect("the cosign attestor");
    let values: Vec<(String, String)> = attestor
        .sources()
        .into_iter()
        .map(|(label, source)| match source {
            StringSource::Value(v) => (label, v.clone()),
            StringSource::Expression(e) => panic!("{label} is an expression: {}", e.source),
            StringSource::Kms(uri) => panic!("{label} is a KMS key: {uri}"),
            StringSource::File(path) => panic!("{label} is a file: {path}"),
        })
        .collect();
    cache::fingerprint(values.iter().map(|(l, v)| (l.as_str(), v.as_str())))
}

/// The credentials a policy without secrets reads ghcr.io with.
fn ghcr() -> Credentials {
    Credentials::new(["ghcr.io".to_string()], &[], None)
}

/// `set` with an in-memory cache holding a full success for the key
/// attestor on `pinned()` (and, for the attestation, `statement`).
fn cached(set: PolicySet, statement: &Value) -> (PolicySet, Arc<MemoryCache>) {
    let hash = set
        .policies()
        .next()
        .expect("a policy")
        .content_hash
        .clone();
    let fingerprint = inline_fingerprint(&set);
    let memory = Arc::new(MemoryCache::default());
    let parts = |function, attestation| KeyParts {
        policy_hash: &hash,
        function,
        attestation,
        attestors: vec![("cosign", fingerprint.as_str())],
        repository: "ghcr.io/kyverno/test-verify-image",
        digest: DIGEST,
    };
    let sig = cache::key(&parts(Function::ImageSignatures, ""));
    let att = cache::key(&parts(Function::AttestationSignatures, "slsa"));
    memory.insert(&sig, &ghcr(), Vec::new());
    let payload = serde_json::to_vec(statement).expect("json");
    memory.insert(&att, &ghcr(), payload);
    (set.with_cache(memory.clone()), memory)
}

/// A hit counts every attestor, needs no registry (the transport is
/// offline), restores the payload for `extractPayload`, and feeds
/// `required`.
#[test]
fn a_cache_hit_counts_every_attestor_and_restores_the_payload() {
    let statement = json!({"predicateType": "https://slsa.dev/provenance/v1", "predicate": {"builder": {"id": "ci"}}});
    let extra = validation(
        "images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) == 1 && verifyAttestationSignatures(i, attestations.slsa, [attestors.cosign]) == 1 && extractPayload(i, attestations.slsa).predicate.builder.id == 'ci')",
    );
    let (set, memory) = cached(load(&[verifying("hit", true, &extra)]), &statement);
    let v = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(outcomes(&v), one("hit", Status::Pass, "success"));
    assert_eq!(memory.gets.load(Ordering::SeqCst), 2);
    // The inline attestor's fingerprint is kept, and the next request's
    // keys, made from the kept one, hit too.
    let kept = set.policies().next().expect("policy").attestors[0]
        .fixed_fingerprint
        .get()
        .cloned();
    assert_eq!(kept, Some(inline_fingerprint(&set)));
    let again = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(outcomes(&again), one("hit", Status::Pass, "success"));
    assert_eq!(memory.gets.load(Ordering::SeqCst), 4);
}

/// Another policy (another content hash) and another digest miss; the miss
/// verifies (here: fails offline) and nothing is stored for a failure.
#[test]
fn a_cache_entry_is_bound_to_the_policy_and_the_digest() {
    let extra =
        validation("images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) == 1)");
    let (set, memory) = cached(load(&[verifying("bound", false, &extra)]), &json!({}));
    let other = "ghcr.io/kyverno/test-verify-image@sha256:1111111111111111111111111111111111111111111111111111111111111111";
    let v = validate(&set, &create(&pod("p", &[other])));
    assert_eq!(v.results[0].status, Status::Fail, "{v:?}");
    let edited = verifying("bound", false, &extra.replace("not verified", "edited"));
    let (edited_set, _) = cached(load(&[edited]), &json!({}));
    let edited_hash = edited_set
        .policies()
        .next()
        .expect("policy")
        .content_hash
        .clone();
    let original_hash = set.policies().next().expect("policy").content_hash.clone();
    assert_ne!(
        edited_hash, original_hash,
        "an edit changes the content hash"
    );
    assert_eq!(
        memory.entries.lock().expect("lock").len(),
        2,
        "a failure is not stored"
    );
}

/// A tag resolved within the digest TTL needs no registry: the digest
/// cache gives the digest, the verification cache the verdict for it.
#[test]
fn a_recently_resolved_tag_is_verified_from_the_caches() {
    let extra =
        validation("images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) == 1)");
    let (set, memory) = cached(load(&[verifying("tagged", true, &extra)]), &json!({}));
    let tag = "ghcr.io/kyverno/test-verify-image:signed";
    let v = validate(&set, &create(&pod("p", &[tag])));
    assert_eq!(
        v.results[0].status,
        Status::Error,
        "unresolvable offline: {v:?}"
    );
    memory.insert_digest(tag, &ghcr(), DIGEST);
    let v = validate(&set, &create(&pod("p", &[tag])));
    assert_eq!(outcomes(&v), one("tagged", Status::Pass, "success"));
}

/// A key computed per request (here from the namespace's annotation) is
/// part of the key: an entry verified with namespace A's key is a hit for
/// A only, and B, whose key differs, verifies on its own (and fails
/// offline), in either order.
#[test]
fn a_cache_entry_is_bound_to_the_evaluated_key() {
    let attestor = r#"
attestors:
  - name: cosign
    cosign:
      key:
        expression: "namespaceObject.metadata.annotations['team-key']"
      ctlog:
        insecureIgnoreTlog: true
"#;
    let config =
        "validationConfigurations:\n  mutateDigest: false\n  verifyDigest: false\n  required: false\n";
    let check =
        validation("images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) == 1)");
    let set = load(&[ivp("per-ns", &spec(&[PODS, config, attestor, &check]))]);
    let hash = set.policies().next().expect("policy").content_hash.clone();
    let namespace = |name: &str, key: &str| {
        let mut ns: Value = serde_json::from_str(&namespace_object(name, json!({}))).expect("ns");
        ns["metadata"]["annotations"] = json!({ "team-key": key });
        ns.to_string()
    };
    let memory = Arc::new(MemoryCache::default());
    let fingerprint = cache::fingerprint([("key", "KEY-A")]);
    let key = cache::key(&KeyParts {
        policy_hash: &hash,
        function: Function::ImageSignatures,
        attestation: "",
        attestors: vec![("cosign", fingerprint.as_str())],
        repository: "ghcr.io/kyverno/test-verify-image",
        digest: DIGEST,
    });
    memory.insert(&key, &ghcr(), Vec::new());
    let set = set.with_cache(memory);
    let in_ns = |name: &str, key: &str| {
        let mut request = create(&pod("p", &[&pinned()]));
        request["namespace"] = json!(name);
        let ns = namespace(name, key);
        admit_with(
            &set,
            Phase::Validate,
            &Scope::Cluster,
            &[],
            &request,
            Some(&ns),
        )
    };
    for _ in 0..2 {
        let b = in_ns("team-b", "KEY-B");
        assert_eq!(b.results[0].status, Status::Fail, "{b:?}");
        let a = in_ns("team-a", "KEY-A");
        assert_eq!(outcomes(&a), one("per-ns", Status::Pass, "success"));
    }
}

/// Every expression an attestor evaluates per request is listed for the
/// cache key, subject expressions of keyless identities included.
#[test]
fn every_attestor_expression_is_bound_by_the_cache_key() {
    let attestor = r#"
attestors:
  - name: cosign
    cosign:
      keyless:
        identities:
          - issuer: https://issuer.example
            subject: fixed@example.com
          - issuer: https://issuer.example
            subjectExpression: "'^' + namespaceObject.metadata.name + '@example.com$'"
      trustedRoot:
        expression: "namespaceObject.metadata.annotations['root']"
      ctlog:
        insecureIgnoreTlog: true
"#;
    let set = load(&[ivp(
        "keyless-exprs",
        &spec(&[PODS, attestor, &validation("true")]),
    )]);
    let policy = set.policies().next().expect("policy");
    let labels: Vec<String> = policy.attestors[0]
        .sources()
        .into_iter()
        .map(|(label, _)| label)
        .collect();
    assert_eq!(
        labels,
        ["trustedRoot", "keyless.identities[1].subjectExpression"]
    );
}

/// The idiomatic check runs without the interpreter (`cel::all_signed`)
/// and answers as it would: a cache hit passes. Naming an attestor the
/// policy lacks leaves it to the interpreter, whose error it is.
#[test]
fn the_idiomatic_check_runs_natively_only_over_declared_attestors() {
    let idiom = |attestor: &str| {
        validation(&format!(
            "images.containers.map(i, verifyImageSignatures(i, [attestors.{attestor}])).all(n, n > 0)"
        ))
    };
    let (set, memory) = cached(
        load(&[verifying("idiom", false, &idiom("cosign"))]),
        &json!({}),
    );
    let policy = set.policies().next().expect("policy");
    assert!(policy.validations[0].all_signed.is_some());
    let v = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(outcomes(&v), one("idiom", Status::Pass, "success"));
    assert_eq!(memory.gets.load(Ordering::SeqCst), 1);

    let set = load(&[verifying("undeclared", false, &idiom("missing"))]);
    let policy = set.policies().next().expect("policy");
    assert!(policy.validations[0].all_signed.is_none());
    let v = validate(&set, &create(&pod("p", &[&pinned()])));
    assert_eq!(v.results[0].status, Status::Error, "{v:?}");
    assert!(v.results[0].message.contains("missing"), "{v:?}");
}
