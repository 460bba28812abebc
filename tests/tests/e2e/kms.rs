//! `cosign.key.kms`: keys the host reads from a KMS and hands the component
//! as PEM. AWS KMS is moto's server (the key made and the payload signed
//! with KMS `Sign`, as `cosign sign --key awskms://…` does); Vault is a
//! double of its transit API; `k8s://` is in kubernetes/kms_keys.rs.

use ivpol_tests::cli::{ivpol_in_env, pod_yaml};
use ivpol_tests::moto::Moto;
use ivpol_tests::policy::{kms_attestor, verifying_policy};
use ivpol_tests::review::message;
use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
use ivpol_tests::vault::Vault;
use ivpol_tests::verifying::{assert_admitted, validate, Setup};

const VERIFIED: &str =
    "images.containers.map(i, verifyImageSignatures(i, [attestors.kms])).all(n, n > 0)";

/// A policy whose one attestor's key is `kms`.
fn kms_policy(name: &str, kms: &str) -> String {
    let attestor = kms_attestor("kms", kms);
    verifying_policy(name, &attestor, "", VERIFIED, "not signed by the KMS key")
}

#[test]
fn awskms_keys_verify_what_kms_signed_and_nothing_else() {
    let moto = Moto::start();
    moto.kms_key("cosign");
    let setup = Setup::new();
    let p = setup.pusher();
    let (signed, digest) = setup.image("kms/signed");
    let kms_sign = |payload: &[u8]| moto.kms_sign("cosign", payload);
    let opts = SignOpts::default();
    Signer::keyed(KeyKind::P256).sign_image_by(&p, "kms/signed", &digest, &opts, &kms_sign);
    // Signed by a local key, not the KMS one.
    let (local, digest) = setup.image("kms/local");
    Signer::keyed(KeyKind::P256).sign_image(&p, "kms/local", &digest, &opts);
    let policies = [
        (
            "by-alias".to_string(),
            kms_policy("by-alias", "awskms:///alias/cosign"),
        ),
        (
            "missing".to_string(),
            kms_policy("missing", "awskms:///alias/nobody"),
        ),
    ];
    let s = setup.serve_with_env(&policies, &[], moto.env());
    assert_admitted(&s, "by-alias", &signed);
    let r = validate(&s, "by-alias", &local);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("not signed by the KMS key"), "{r}");
    // A key KMS does not have: an error naming the URI, which denies.
    let r = validate(&s, "missing", &signed);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("awskms:///alias/nobody"), "{r}");
    assert!(message(&r).contains("NotFoundException"), "{r}");
    let metrics = s.metrics_text();
    assert!(
        metrics.contains("ivpol_cloud_fetches_total{source=\"awskms\",result=\"ok\"}"),
        "{metrics}"
    );
    drop(s);

    // KMS unreachable: an error that names the URI and denies.
    let mut down = moto.env();
    down[0].1 = format!("http://127.0.0.1:{}", ivpol_tests::registry::free_port());
    let s = setup.serve_with_env(&policies[..1], &[], down);
    let r = validate(&s, "by-alias", &signed);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("awskms:///alias/cosign"), "{r}");
    drop(s);

    // `ivpol apply` reads the key the same way.
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("policy.yaml"), &policies[0].1).expect("policy");
    let pods = format!(
        "{}---\n{}",
        pod_yaml("good", "default", &signed),
        pod_yaml("bad", "default", &local)
    );
    std::fs::write(dir.path().join("pods.yaml"), pods).expect("pods");
    let args = [
        "apply",
        "policy.yaml",
        "--resource",
        "pods.yaml",
        "--insecure-registry",
        &setup.reg.addr,
    ];
    let run = ivpol_in_env(dir.path(), &args, &moto.env());
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout.contains("pass: 1, fail: 1, warn: 0, error: 0"),
        "{run}"
    );
    assert!(run.stdout.contains("default/Pod/bad failed"), "{run}");
}

#[test]
fn hashivault_keys_are_the_newest_version_of_a_transit_key() {
    let vault = Vault::start("s.test-token");
    let signer = Signer::keyed(KeyKind::P256);
    let old = Signer::keyed(KeyKind::P384);
    vault.add_version("cosign", &old.public_pem());
    vault.add_version("cosign", &signer.public_pem());
    let setup = Setup::new();
    let (signed, digest) = setup.image("vault/signed");
    signer.sign_image(
        &setup.pusher(),
        "vault/signed",
        &digest,
        &SignOpts::default(),
    );
    let (by_old, digest) = setup.image("vault/old");
    old.sign_image(&setup.pusher(), "vault/old", &digest, &SignOpts::default());
    let policies = [
        (
            "vault".to_string(),
            kms_policy("vault", "hashivault://cosign"),
        ),
        (
            "unknown".to_string(),
            kms_policy("unknown", "hashivault://nobody"),
        ),
    ];
    let s = setup.serve_with_env(&policies, &[], vault.env());
    assert_admitted(&s, "vault", &signed);
    let r = validate(&s, "vault", &by_old);
    assert!(message(&r).contains("not signed by the KMS key"), "{r}");
    let r = validate(&s, "unknown", &signed);
    assert!(message(&r).contains("hashivault://nobody"), "{r}");
    assert!(message(&r).contains("HTTP 404"), "{r}");
    drop(s);
    // A token Vault refuses.
    let mut wrong = vault.env();
    wrong[1].1 = "s.wrong".into();
    let s = setup.serve_with_env(&policies[..1], &[], wrong);
    let r = validate(&s, "vault", &signed);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("HTTP 403"), "{r}");
}
