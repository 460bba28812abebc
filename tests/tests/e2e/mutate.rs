//! The mutate phase against a real registry (Debian's docker-registry) and a
//! misbehaving one: digest pinning, and every registry failure as a clear
//! error result while the server keeps serving.

use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::fixtures::{Pusher, DOCKER_MANIFEST, OCI_MANIFEST};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::{free_port, Registry};
use ivpol_tests::review::message;
use ivpol_tests::review::{create_pod, deployment, patch, review};
use ivpol_tests::{Options, Server};
use serde_json::json;
use std::time::Duration;

fn pin_policy(name: &str, actions: &str, extra: &str) -> String {
    let tail = format!(
        "  validationActions: {actions}\n{extra}  attestors: []\n  validations:\n    - expression: \"true\"\n"
    );
    pod_policy(name, "\"CREATE\", \"UPDATE\"", &tail)
}

fn server(policies: &[(&str, &str)], insecure: &[&str]) -> Server {
    let extra_args = insecure
        .iter()
        .flat_map(|h| ["--insecure-registry".to_string(), h.to_string()])
        .collect();
    Server::start_with(
        policies,
        Options {
            extra_args,
            ..Options::default()
        },
    )
}

#[test]
fn pins_tags_to_the_digests_the_registry_holds() {
    let reg = Registry::start();
    let push = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    let oci = push.image("team/app", "v1", OCI_MANIFEST, "amd64");
    let docker = push.image("team/legacy", "v2", DOCKER_MANIFEST, "amd64");
    let (index, _amd64) = push.index("team/multi", "v3");
    let s = server(
        &[("pin.yaml", &pin_policy("pin", "[Deny]", ""))],
        &[&reg.addr],
    );
    let a = format!("{}/team/app:v1", reg.addr);
    let b = format!("{}/team/legacy:v2", reg.addr);
    let c = format!("{}/team/multi:v3", reg.addr);
    let pinned = format!("{}/team/app@{oci}", reg.addr);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&a, &b, &c, &pinned]));
    assert_eq!(r["allowed"], true, "{r}");
    assert_eq!(
        patch(&r),
        json!([
            {"op": "replace", "path": "/spec/containers/0/image", "value": format!("{a}@{oci}")},
            {"op": "replace", "path": "/spec/containers/1/image", "value": format!("{b}@{docker}")},
            {"op": "replace", "path": "/spec/containers/2/image", "value": format!("{c}@{index}")},
        ])
    );
    // The digest is the registry's own, as it reports it.
    let head = ureq::head(&reg.url("/v2/team/app/manifests/v1"))
        .set("Accept", OCI_MANIFEST)
        .call()
        .expect("HEAD");
    assert_eq!(head.header("Docker-Content-Digest"), Some(oci.as_str()));
    // Pod templates too, through autogen.
    let dep = review(
        "CREATE",
        "default",
        &deployment("web", json!({"app": "web"}), &[&a]),
    );
    let r = s.review("/ivpol/mutate/pin", &dep);
    assert_eq!(
        patch(&r)[0]["path"],
        "/spec/template/spec/containers/0/image",
        "{r}"
    );
}

#[test]
fn untouched_when_pinned_disabled_or_unmatched_and_pinned_for_verify_digest() {
    let reg = Registry::start();
    let push = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    let digest = push.image("app", "v1", OCI_MANIFEST, "amd64");
    let off = pin_policy(
        "pin-off",
        "[Deny]",
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n",
    );
    // verifyDigest alone pins too: validate's digest check needs it.
    let verify_only = pin_policy(
        "verify-only",
        "[Deny]",
        "  validationConfigurations:\n    mutateDigest: false\n",
    );
    let elsewhere = pin_policy(
        "pin-elsewhere",
        "[Deny]",
        "  matchImageReferences:\n    - glob: \"ghcr.io/*\"\n",
    );
    let s = server(
        &[
            ("pin.yaml", &pin_policy("pin", "[Deny]", "")),
            ("off.yaml", &off),
            ("verify.yaml", &verify_only),
            ("else.yaml", &elsewhere),
        ],
        &[&reg.addr],
    );
    let pinned = format!("{}/app:v1@{digest}", reg.addr);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&pinned]));
    assert!(r.get("patch").is_none() && r["allowed"] == true, "{r}");
    let tagged = format!("{}/app:v1", reg.addr);
    let r = s.review("/ivpol/mutate/pin-off", &create_pod(&[&tagged]));
    assert!(r.get("patch").is_none() && r["allowed"] == true, "{r}");
    let r = s.review("/ivpol/mutate/verify-only", &create_pod(&[&tagged]));
    assert!(r["patch"].is_string(), "{r}");
    // Not matched by matchImageReferences: never resolved, so even a dead registry is fine.
    let dead = format!("127.0.0.1:{}/app:v1", free_port());
    let r = s.review("/ivpol/mutate/pin-elsewhere", &create_pod(&[&dead]));
    assert!(r.get("patch").is_none() && r["allowed"] == true, "{r}");
}

#[test]
fn unresolvable_images_deny_under_deny_and_warn_under_warn() {
    let reg = Registry::start();
    let s = server(
        &[
            ("deny.yaml", &pin_policy("pin", "[Deny]", "")),
            ("warn.yaml", &pin_policy("pin-warn", "[Warn]", "")),
        ],
        &[&reg.addr],
    );
    let missing = format!("{}/nope:v1", reg.addr);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&missing]));
    assert_eq!(r["allowed"], false);
    assert_eq!(
        message(&r),
        format!(
            "Policy pin error: failed to update digest: failed to resolve digest for image {missing}: {}/nope:v1: registry answered HTTP 404: MANIFEST_UNKNOWN manifest unknown",
            reg.addr
        )
    );
    let r = s.review("/ivpol/mutate/pin-warn", &create_pod(&[&missing]));
    assert_eq!(r["allowed"], true);
    assert!(
        r["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .starts_with("Policy pin-warn error: failed to update digest:"),
        "{r}"
    );
}

#[test]
fn registry_failures_are_clear_errors_and_the_server_keeps_serving() {
    let faulty = Faulty::start();
    let big = vec![b' '; 5 << 20];
    let good = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{},"layers":[]}"#.to_vec();
    faulty
        .on(
            "/v2/err/manifests/v1",
            Answer::Status(
                500,
                r#"{"errors":[{"code":"UNKNOWN","message":"boom"}]}"#.into(),
            ),
        )
        .on(
            "/v2/slow/manifests/v1",
            Answer::Slow(Duration::from_secs(4)),
        )
        .on(
            "/v2/huge/manifests/v1",
            Answer::Bytes {
                content_type: OCI_MANIFEST.into(),
                body: big,
            },
        )
        .on(
            "/v2/away/manifests/v1",
            Answer::Redirect("http://169.254.169.254/v2/x/manifests/v1".into()),
        )
        .on(
            "/v2/ok/manifests/v1",
            Answer::Bytes {
                content_type: OCI_MANIFEST.into(),
                body: good,
            },
        );
    let fast = pin_policy(
        "pin",
        "[Deny]",
        "  webhookConfiguration:\n    timeoutSeconds: 2\n",
    );
    let mut s = server(&[("pin.yaml", &fast)], &[&faulty.addr]);
    let image = |repo: &str| format!("{}/{repo}:v1", faulty.addr);
    let cases = [
        (
            "err",
            "registry answered HTTP 500: UNKNOWN boom".to_string(),
        ),
        ("slow", "timed out".to_string()),
        ("huge", "larger than 4194304 bytes".to_string()),
        (
            "away",
            "request to 169.254.169.254 denied by the host's network policy".to_string(),
        ),
    ];
    for (repo, needle) in cases {
        let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image(repo)]));
        let msg = message(&r);
        assert_eq!(r["allowed"], false, "{repo}: {r}");
        assert!(msg.starts_with(&format!("Policy pin error: failed to update digest: failed to resolve digest for image {}: ", image(repo))), "{msg}");
        assert!(msg.contains(&needle), "{repo}: {msg:?} lacks {needle:?}");
    }
    // Registry down.
    let down = format!("127.0.0.1:{}", free_port());
    let s2 = server(&[("pin.yaml", &pin_policy("pin", "[Deny]", ""))], &[&down]);
    let r = s2.review(
        "/ivpol/mutate/pin",
        &create_pod(&[&format!("{down}/app:v1")]),
    );
    assert!(
        message(&r).contains(&format!("request to {down} failed")),
        "{r}"
    );
    // Still serving, and a good image still pins.
    assert!(s.alive());
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image("ok")]));
    assert_eq!(r["allowed"], true, "{r}");
    assert!(patch(&r)[0]["value"]
        .as_str()
        .unwrap_or_default()
        .contains("@sha256:"));
}

#[test]
fn registries_outside_the_policy_are_refused() {
    let reg = Registry::start();
    let push = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    push.image("app", "v1", OCI_MANIFEST, "amd64");
    // Loopback is not public: without --insecure-registry or --allow-registry it is refused.
    let s = server(&[("pin.yaml", &pin_policy("pin", "[Deny]", ""))], &[]);
    let image = format!("{}/app:v1", reg.addr);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    let host = reg.addr.split(':').next().unwrap_or_default();
    assert!(
        message(&r).contains(&format!("request to {host}"))
            && message(&r).contains("denied by the host's network policy"),
        "{r}"
    );
    // With an allow-list that names another registry, it is refused too.
    let s = Server::start_with(
        &[("pin.yaml", &pin_policy("pin", "[Deny]", ""))],
        Options {
            extra_args: vec!["--allow-registry".into(), "ghcr.io".into()],
            ..Options::default()
        },
    );
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert!(
        message(&r).contains("denied by the host's network policy"),
        "{r}"
    );
}

/// The README's local-registry example, with the registry on a free port.
#[test]
fn readme_example_pins_against_a_local_registry() {
    let reg = Registry::start();
    let digest = Pusher {
        addr: &reg.addr,
        auth: None,
    }
    .image("app", "v1", OCI_MANIFEST, "amd64");
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let policy =
        std::fs::read_to_string(examples.join("pin/pin-local.yaml")).expect("example policy");
    let review = std::fs::read_to_string(examples.join("pod-review.json")).expect("example review");
    let (policy, review) = (
        policy.replace("127.0.0.1:5000", &reg.addr),
        review.replace("127.0.0.1:5000", &reg.addr),
    );
    let s = server(&[("pin-local.yaml", &policy)], &[&reg.addr]);
    let r = s.review(
        "/ivpol/mutate",
        &serde_json::from_str(&review).expect("json"),
    );
    assert_eq!(
        patch(&r),
        json!([{"op": "replace", "path": "/spec/containers/0/image", "value": format!("{}/app:v1@{digest}", reg.addr)}])
    );
}
