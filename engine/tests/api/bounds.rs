//! No registry can exhaust an evaluation: candidates are fetched and
//! verified one at a time, and every body read during one call is charged
//! to one budget (`oci::budget`). Running out is the policy's error result,
//! naming the budget, whatever the expression made of the failed
//! verification.

use super::*;
use ivpol_oci::digest::sha256;
use ivpol_oci::transport::{host_of, HttpRequest, HttpResponse, Transport, TransportError};
use ivpol_oci::MAX_REGISTRY_BYTES_PER_EVALUATION;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const REGISTRY: &str = "registry.example.test";
const BUNDLE_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// A registry holding `app@SUBJECT` with `count` fake bundle referrers of
/// `size` bytes each, listed under the `sha256-<hex>` tag (no referrers
/// API). Records how many bytes it served.
struct Hostile {
    objects: BTreeMap<String, Vec<u8>>,
    served: Mutex<usize>,
}

fn subject() -> String {
    format!("sha256:{}", "7".repeat(64))
}

impl Hostile {
    fn new(count: usize, size: usize) -> Arc<Hostile> {
        Hostile::padded(count, size, 0)
    }

    /// The same, with `pad` extra JSON values in the referrers index.
    fn padded(count: usize, size: usize, pad: usize) -> Arc<Hostile> {
        let base = format!("https://{REGISTRY}/v2/app");
        let mut objects = BTreeMap::new();
        let mut descriptors = Vec::new();
        for i in 0..count {
            // Distinct blobs, so nothing can be shared between candidates.
            let mut blob = vec![b' '; size];
            blob[..8].copy_from_slice(format!("{{\"{i:04}\":").as_bytes());
            blob[size - 2..].copy_from_slice(b"1}");
            let blob_digest = sha256(&blob);
            let manifest = json!({
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": BUNDLE_TYPE,
                "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                           "digest": sha256(b"{}"), "size": 2},
                "layers": [{"mediaType": BUNDLE_TYPE, "digest": blob_digest, "size": size}],
                "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                            "digest": subject(), "size": 100},
            })
            .to_string()
            .into_bytes();
            let manifest_digest = sha256(&manifest);
            descriptors.push(json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": BUNDLE_TYPE,
                "digest": manifest_digest,
                "size": manifest.len(),
            }));
            objects.insert(format!("{base}/manifests/{manifest_digest}"), manifest);
            objects.insert(format!("{base}/blobs/{blob_digest}"), blob);
        }
        let index = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": descriptors,
            "pad": vec![0; pad],
        });
        let tag = subject().replacen(':', "-", 1);
        objects.insert(
            format!("{base}/manifests/{tag}"),
            index.to_string().into_bytes(),
        );
        Arc::new(Hostile {
            objects,
            served: Mutex::new(0),
        })
    }

    fn served(&self) -> usize {
        *self.served.lock().unwrap()
    }
}

impl Transport for Hostile {
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
        let Some(body) = self.objects.get(&request.url) else {
            return Ok(HttpResponse {
                status: 404,
                headers: vec![],
                body: vec![],
            });
        };
        if body.len() > max_body {
            // A real transport reads up to the limit before it gives up.
            *self.served.lock().unwrap() += max_body;
            return Err(TransportError::TooLarge {
                host: host_of(&request.url),
                limit: max_body,
            });
        }
        *self.served.lock().unwrap() += body.len();
        Ok(HttpResponse {
            status: 200,
            headers: vec![],
            body: body.clone(),
        })
    }
}

fn policy(expression: &str) -> String {
    ivp(
        "bounded",
        &spec(&[
            PODS,
            RELAXED,
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
                  ctlog:
                    insecureIgnoreTlog: true
            "#,
            &format!(
                "validations:\n  - expression: >-\n      {expression}\n    message: not verified\n"
            ),
        ]),
    )
}

fn run(set: &PolicySet, registry: Arc<Hostile>) -> Verdict {
    let image = format!("{REGISTRY}/app@{}", subject());
    let request = create(&pod("p", &[&image]));
    set.admit(
        Phase::Validate,
        &Scope::Cluster,
        &[],
        &request.to_string(),
        None,
        registry,
    )
    .expect("request parses")
}

#[test]
fn many_large_referrers_run_out_the_budget_as_an_error() {
    // 30 distinct 3 MiB bundles: 90 MiB, more than the 64 MiB budget.
    let registry = Hostile::new(30, 3 << 20);
    for expression in [
        "images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) > 0)",
        // An expression that swallows the failed verification still errors.
        "images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) >= 0)",
    ] {
        let set = load(&[policy(expression)]);
        let v = run(&set, registry.clone());
        assert!(!v.allowed, "{v:?}");
        assert_eq!(
            outcomes(&v),
            one(
                "bounded",
                Status::Error,
                &format!(
                    "failed to evaluate policy: registry data budget of {MAX_REGISTRY_BYTES_PER_EVALUATION} bytes exceeded"
                )
            )
        );
    }
    // Two evaluations, each stopped at its own budget.
    assert!(
        registry.served() <= 2 * MAX_REGISTRY_BYTES_PER_EVALUATION,
        "{} bytes served",
        registry.served()
    );
}

#[test]
fn referrers_within_the_budget_are_each_tried_and_fail_verification() {
    // 5 small fake bundles: every one is fetched and tried, none verifies.
    let registry = Hostile::new(5, 64 << 10);
    let set = load(&[policy(
        "images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) > 0)",
    )]);
    let v = run(&set, registry.clone());
    assert_eq!(outcomes(&v), one("bounded", Status::Fail, "not verified"));
    assert!(registry.served() >= 5 * (64 << 10), "{}", registry.served());
}

#[test]
fn more_referrers_than_the_bound_are_never_read() {
    let registry = Hostile::new(ivpol_oci::MAX_REFERRERS + 1, 64);
    let set = load(&[policy(
        "images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) == 0)",
    )]);
    let v = run(&set, registry.clone());
    // The listing is refused before any referrer is read; the verification
    // is a counted failure (0), as every failed lookup is.
    assert_eq!(outcomes(&v), one("bounded", Status::Pass, "success"));
    assert!(registry.served() < 64 << 10, "{}", registry.served());
}

#[test]
fn dense_registry_json_runs_out_the_parsed_values_budget() {
    // Each attestor reads the 90,000-value index again: the fourth read
    // goes over the 300,000 values one evaluation may parse.
    let registry = Hostile::padded(1, 64, 90_000);
    let attestor = |name: &str| {
        format!(
            "  - name: {name}\n    cosign:\n      key:\n        data: |\n          -----BEGIN PUBLIC KEY-----\n          MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+lmmxGvQwZYNU1scQBJ4FiWWgOWU\n          9xE+0y7rYzP/31bDkonjc08sMX1Qxz7SQev9+mREk+3y03toB/gjxLYQSQ==\n          -----END PUBLIC KEY-----\n      ctlog:\n        insecureIgnoreTlog: true\n"
        )
    };
    let policy = ivp(
        "bounded",
        &spec(&[
            PODS,
            RELAXED,
            &format!("attestors:\n{}{}{}{}", attestor("a"), attestor("b"), attestor("c"), attestor("d")),
            "validations:\n  - expression: >-\n      images.containers.all(i, verifyImageSignatures(i, [attestors.a, attestors.b, attestors.c, attestors.d]) >= 0)\n",
        ]),
    );
    let v = run(&load(&[policy]), registry);
    assert_eq!(
        outcomes(&v),
        one(
            "bounded",
            Status::Error,
            "failed to evaluate policy: registry data budget of 300000 parsed JSON values exceeded"
        )
    );
}
