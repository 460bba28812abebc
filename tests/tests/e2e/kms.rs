//! `cosign.key.kms`: keys the host reads from a KMS and hands the component
//! as PEM. AWS KMS is moto's server (the key made and the payload signed
//! with KMS `Sign`, as `cosign sign --key awskms://…` does); Vault, Cloud
//! KMS and Key Vault are doubles of their REST APIs (tests/src); `k8s://`
//! is in kubernetes/kms_keys.rs.

use ivpol_tests::cli::{ivpol_in_env, pod_yaml};
use ivpol_tests::moto::Moto;
use ivpol_tests::policy::{kms_attestor, verifying_policy};
use ivpol_tests::review::message;
use ivpol_tests::sign::{KeyKind, KeyPair, SignOpts, Signer};
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
    apply_admits_only(&setup, &policies[0].1, [&signed, &local], &[], moto.env());
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

/// A P-256 signer of its own (`Signer::keyed` keys are all one key).
fn seeded(seed: &str) -> Signer {
    Signer::with_key(KeyPair::from_seed(KeyKind::P256, seed))
}

const GCP_KEY: &str = "projects/p/locations/global/keyRings/ring/cryptoKeys/cosign";

/// `gcpkms://`: the newest enabled version's public key, read from Cloud
/// KMS with Application Default Credentials (here the metadata server's
/// token), unless the URI names a version.
#[test]
fn gcpkms_keys_are_the_newest_enabled_version_unless_one_is_named() {
    use ivpol_tests::gcp::{CloudKms, Metadata};
    const TOKEN: &str = "ya29.kms-reader";
    let (metadata, kms) = (Metadata::start(TOKEN), CloudKms::start(TOKEN));
    let (old, signer, newer) = (
        seeded("gcp-old"),
        seeded("gcp-signer"),
        Signer::keyed(KeyKind::P384),
    );
    kms.add_version(GCP_KEY, &old.public_pem(), true);
    kms.add_version(GCP_KEY, &signer.public_pem(), true);
    kms.add_version(GCP_KEY, &newer.public_pem(), false);
    let setup = Setup::new();
    let (signed, digest) = setup.image("gcp/signed");
    signer.sign_image(&setup.pusher(), "gcp/signed", &digest, &SignOpts::default());
    let uri = |tail: &str| format!("gcpkms://{GCP_KEY}{tail}");
    let policies = [
        ("newest".to_string(), kms_policy("newest", &uri(""))),
        (
            "first".to_string(),
            kms_policy("first", &uri("/cryptoKeyVersions/1")),
        ),
        (
            "missing".to_string(),
            kms_policy(
                "missing",
                "gcpkms://projects/p/locations/global/keyRings/ring/cryptoKeys/nobody",
            ),
        ),
    ];
    let home = tempfile::tempdir().expect("home");
    let env = [metadata.env(home.path()), kms.env()].concat();
    let s = setup.serve_with_env(&policies, &[], env.clone());
    assert_admitted(&s, "newest", &signed);
    let r = validate(&s, "first", &signed);
    assert!(message(&r).contains("not signed by the KMS key"), "{r}");
    let r = validate(&s, "missing", &signed);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("cryptoKeys/nobody"), "{r}");
    assert!(message(&r).contains("HTTP 404"), "{r}");
    drop(s);
    // A token Cloud KMS refuses (another metadata server's).
    let stranger = Metadata::start("ya29.someone-else");
    let env = [stranger.env(home.path()), kms.env()].concat();
    let s = setup.serve_with_env(&policies[..1], &[], env);
    let r = validate(&s, "newest", &signed);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(
        message(&r).contains("UNAUTHENTICATED") || message(&r).contains("HTTP 401"),
        "{r}"
    );
}

/// `azurekms://`: Key Vault's key (a JWK, turned into PEM by the host),
/// read with the host's Entra identity (workload identity here), and only
/// from Azure's vault hosts, so no policy can collect the host's token.
#[test]
fn azurekms_keys_are_read_from_key_vault_with_the_hosts_entra_identity() {
    use ivpol_tests::azure::{Azure, VAULT};
    let setup = Setup::new();
    let azure = Azure::start(&setup.reg.addr);
    let signer = Signer::keyed(KeyKind::P256);
    azure.add_p256_key("cosign", &signer.public_pem());
    let (signed, digest) = setup.image("azure/signed");
    signer.sign_image(
        &setup.pusher(),
        "azure/signed",
        &digest,
        &SignOpts::default(),
    );
    let (local, digest) = setup.image("azure/local");
    seeded("azure-local").sign_image(
        &setup.pusher(),
        "azure/local",
        &digest,
        &SignOpts::default(),
    );
    let vault = azure.named(VAULT);
    let policies = [
        (
            "vault".to_string(),
            kms_policy("vault", &format!("azurekms://{vault}/cosign")),
        ),
        (
            "missing".to_string(),
            kms_policy("missing", &format!("azurekms://{vault}/nobody")),
        ),
        (
            "elsewhere".to_string(),
            kms_policy("elsewhere", &format!("azurekms://{}/cosign", azure.addr)),
        ),
    ];
    let resolve = azure.resolve(VAULT);
    let ca = azure.crt.display().to_string();
    let flags = [resolve[0].as_str(), &resolve[1], "--registry-ca", &ca];
    let s = setup.serve_with_env(&policies, &flags, azure.env());
    assert_admitted(&s, "vault", &signed);
    let r = validate(&s, "vault", &local);
    assert!(message(&r).contains("not signed by the KMS key"), "{r}");
    let r = validate(&s, "missing", &signed);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(
        message(&r).contains("KeyNotFound") || message(&r).contains("was not found"),
        "{r}"
    );
    // The double at its address is not a Key Vault host: refused before any
    // token is asked for.
    let r = validate(&s, "elsewhere", &signed);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(message(&r).contains("is not a Key Vault"), "{r}");
    let metrics = s.metrics_text();
    assert!(
        metrics.contains("ivpol_cloud_fetches_total{source=\"azurekms\",result=\"ok\"}"),
        "{metrics}"
    );
    drop(s);

    // `ivpol apply` reads the key the same way.
    apply_admits_only(
        &setup,
        &policies[0].1,
        [&signed, &local],
        &flags,
        azure.env(),
    );
}

/// `ivpol apply` of `policy` (with `flags` and `env`) passes the first of
/// `images` and fails the second.
fn apply_admits_only(
    setup: &Setup,
    policy: &str,
    [good, bad]: [&str; 2],
    flags: &[&str],
    env: Vec<(String, String)>,
) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("policy.yaml"), policy).expect("policy");
    let pods = format!(
        "{}---\n{}",
        pod_yaml("good", "default", good),
        pod_yaml("bad", "default", bad)
    );
    std::fs::write(dir.path().join("pods.yaml"), pods).expect("pods");
    let mut args = vec![
        "apply",
        "policy.yaml",
        "--resource",
        "pods.yaml",
        "--insecure-registry",
        &setup.reg.addr,
    ];
    args.extend(flags);
    let run = ivpol_in_env(dir.path(), &args, &env);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout.contains("pass: 1, fail: 1, warn: 0, error: 0"),
        "{run}"
    );
    assert!(run.stdout.contains("default/Pod/bad failed"), "{run}");
}
