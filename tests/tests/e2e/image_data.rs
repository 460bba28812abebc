//! `getImageData` and `image.GetMetadata` against the real registry: Kyverno's
//! fields, multi-arch aware, and digest checks on what comes back.

use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::Registry;
use ivpol_tests::review::create_pod;
use ivpol_tests::{Options, Server};

fn policy(name: &str, body: &str) -> String {
    let tail = format!(
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n{body}"
    );
    pod_policy(name, "\"CREATE\"", &tail)
}

/// Kyverno's `context/imagedata/image-data-arch` case, on local images.
const ARCH: &str = r#"  variables:
    - name: image
      expression: image.GetMetadata(object.spec.containers[0].image)
  validations:
    - expression: variables.image.config.architecture == "amd64"
      messageExpression: "'image architecture is not supported: ' + variables.image.config.architecture"
"#;

/// Fails on purpose, printing the fields under test.
const FIELDS: &str = r#"  validations:
    - expression: "false"
      messageExpression: >-
        [getImageData(object.spec.containers[0].image)].map(d,
          d.registry + ' ' + d.repository + ' ' + d.identifier + ' ' + d.tag + ' ' + d.digest + ' '
          + d.resolvedImage + ' ' + d.manifest.config.digest + ' ' + string(has(d.imageIndex.manifests))
          + ' ' + d.config.architecture)[0]
"#;

fn server(reg: &str, policies: &[(&str, &str)]) -> Server {
    let extra_args = vec!["--insecure-registry".into(), reg.into()];
    Server::start_with(
        policies,
        Options {
            extra_args,
            ..Options::default()
        },
    )
}

#[test]
fn architecture_check_as_in_kyvernos_test() {
    let reg = Registry::start();
    let push = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    push.image("busybox", "amd64", OCI_MANIFEST, "amd64");
    push.image("busybox", "arm64", OCI_MANIFEST, "arm64");
    let s = server(
        &reg.addr,
        &[("arch.yaml", &policy("ivpol-image-data-arch-sample", ARCH))],
    );
    let good = s.review(
        "/ivpol/validate",
        &create_pod(&[&format!("{}/busybox:amd64", reg.addr)]),
    );
    assert_eq!(good["allowed"], true, "{good}");
    let bad = s.review(
        "/ivpol/validate",
        &create_pod(&[&format!("{}/busybox:arm64", reg.addr)]),
    );
    assert_eq!(
        bad["status"]["message"],
        "Policy ivpol-image-data-arch-sample failed: image architecture is not supported: arm64"
    );
}

#[test]
fn fields_follow_kyverno_and_indexes_resolve_to_linux_amd64() {
    let reg = Registry::start();
    let push = Pusher {
        addr: &reg.addr,
        auth: None,
    };
    let (index, amd64) = push.index("multi", "v1");
    let s = server(&reg.addr, &[("fields.yaml", &policy("fields", FIELDS))]);
    let image = format!("{}/multi:v1", reg.addr);
    let r = s.review("/ivpol/validate", &create_pod(&[&image]));
    let msg = r["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let amd64_manifest: serde_json::Value = serde_json::from_slice(
        &ureq::get(&reg.url(&format!("/v2/multi/manifests/{amd64}")))
            .set("Accept", OCI_MANIFEST)
            .call()
            .expect("manifest")
            .into_string()
            .expect("body")
            .into_bytes(),
    )
    .expect("json");
    let config = amd64_manifest["config"]["digest"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        msg,
        format!(
            "Policy fields failed: {} multi v1 v1 {index} {image}@{index} {config} true amd64",
            reg.addr
        )
    );
}

#[test]
fn bytes_that_do_not_match_their_digest_are_an_error() {
    let faulty = Faulty::start();
    let claimed = format!("sha256:{}", "e".repeat(64));
    faulty.on(
        &format!("/v2/app/manifests/{claimed}"),
        Answer::Bytes {
            content_type: OCI_MANIFEST.into(),
            body: br#"{"schemaVersion":2,"config":{}}"#.to_vec(),
        },
    );
    let check = "  validations:\n    - expression: \"getImageData(object.spec.containers[0].image).digest != ''\"\n";
    let s = server(&faulty.addr, &[("fields.yaml", &policy("fields", check))]);
    let image = format!("{}/app@{claimed}", faulty.addr);
    let r = s.review("/ivpol/validate", &create_pod(&[&image]));
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with("Policy fields error: "), "{msg}");
    assert!(
        msg.contains(&format!("failed to get image data for {image}"))
            && msg.contains("does not match"),
        "{msg}"
    );
}
